/* Compressed weight blocks (weights.c). */
#ifndef TGR_WEIGHTS_H
#define TGR_WEIGHTS_H

#include "plan/plan.h"

/* Whether this build links the LZ4 block decoder (base/lz4.h), and the decoder (a stub that
 * decodes nothing without it). Defined by a generated unit (weights_built_in.c,
 * site_scons/tigris_scons/builtin.py), so a firmware whose plan has no compressed blocks leaves
 * the decoder out and refuses a plan that has them. */
extern const int tgr_built_in_lz4;
int tgr_built_in_lz4_decode(const uint8_t *src, uint32_t src_len, uint8_t *dst, uint32_t dst_len);

/* Parse and structurally verify SEC_WEIGHT_BLOCKS [start, end) (load time). */
tgr_status tgr_bind_weight_blocks(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err);

/* Every op's weights inside its stage's block; sets plan->weight_reserve (load time). */
tgr_status tgr_check_weight_blocks(tgr_plan *p, tgr_error *err);

/* Fast bytes (rounded) the stage's decompressed block occupies, 0 without one. */
uint32_t tgr_stage_weight_bytes(const tgr_plan *p, uint32_t stage);

/* Decompress the stage's block into the fast arena under a raised floor; `*base` is where its
 * weights are (the plan's blob for stages without a block). */
tgr_status tgr_unpack_stage_weights(tgr_session *s, uint32_t stage, const uint8_t **base, tgr_error *err);

#endif
