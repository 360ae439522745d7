/* Op dispatch (dispatch.c): runs one op of a loaded plan on the buffers in `tensor_ptr`.
 * `region` (4 entries per tensor: rows [0],[1) and cols [2],[3)) says which part of each
 * tensor a buffer holds in tiled execution; NULL means whole tensors. */
#ifndef TGR_DISPATCH_H
#define TGR_DISPATCH_H

#include "kernels.h"
#include "tgr_internal.h"

/* `weights` is where the op's stage's weights are: the plan's blob, or a decompressed block. */
void tgr_dispatch(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region,
                  const uint8_t *weights);

/* Requantization of a GlobalAveragePool op, for whole-tensor and banded execution. */
void tgr_mean_of(const tgr_plan *p, uint32_t op, tgr_mean *m);

/* Spatial TILING_* mode of an opcode (ops.h), and whether it runs on row bands. */
uint32_t tgr_op_tiling(uint32_t opcode);
int tgr_op_rows(uint32_t opcode);
/* Stripes only alone in a single stage, 1-D (TILING_ALONE). */
int tgr_op_alone(uint32_t opcode);
/* Spatial tiling in 2-D tiles only (TILING_2D_ONLY). */
int tgr_op_two_d_only(uint32_t opcode);

#endif
