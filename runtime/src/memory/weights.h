/* Compressed weight blocks (weights.c). */
#ifndef TGR_WEIGHTS_H
#define TGR_WEIGHTS_H

#include "plan/plan.h"

/* Compressed weights as this build has them: a generated unit (weights_built_in.c, written by
 * site_scons/tigris_scons/builtin.py) forwards these to the LZ4 implementation below
 * (weights.c, with the decoder) when the plan has blocks or the build is the full runtime, else
 * to the plain one (weights_plain.c), which refuses a plan with blocks at load time. */

/* Parse and structurally verify SEC_WEIGHT_BLOCKS [start, end) (load time). */
tgr_status tgr_bind_weight_blocks(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
/* Every op's weights inside its stage's block; sets plan->weight_reserve (load time). */
tgr_status tgr_check_weight_blocks(tgr_plan *p, tgr_error *err);
/* Fast bytes (rounded) the stage's decompressed block occupies, 0 without one. */
uint32_t tgr_stage_weight_bytes(const tgr_plan *p, uint32_t stage);
/* Decompress the stage's block into the fast arena under a raised floor; `*base` is where its
 * weights are (the plan's blob for stages without a block). */
tgr_status tgr_unpack_stage_weights(tgr_session *s, uint32_t stage, const uint8_t **base, tgr_error *err);

/* The two implementations, same contracts as above. */
tgr_status tgr_lz4_bind_weight_blocks(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
tgr_status tgr_lz4_check_weight_blocks(tgr_plan *p, tgr_error *err);
uint32_t tgr_lz4_stage_weight_bytes(const tgr_plan *p, uint32_t stage);
tgr_status tgr_lz4_unpack_stage_weights(tgr_session *s, uint32_t stage, const uint8_t **base, tgr_error *err);
tgr_status tgr_plain_bind_weight_blocks(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);
tgr_status tgr_plain_check_weight_blocks(tgr_plan *p, tgr_error *err);
uint32_t tgr_plain_stage_weight_bytes(const tgr_plan *p, uint32_t stage);
tgr_status tgr_plain_unpack_stage_weights(tgr_session *s, uint32_t stage, const uint8_t **base, tgr_error *err);

#endif
