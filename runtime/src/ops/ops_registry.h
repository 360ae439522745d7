/*
 * The op registry (ops_registry.c): what the loader and the execution paths ask of ops without
 * knowing their families.
 */
#ifndef TGR_OPS_REGISTRY_H
#define TGR_OPS_REGISTRY_H

#include "ops/ops.h"

/* The implementation of an opcode, or NULL. */
const tgr_op_impl *tgr_op_impl_of(uint32_t opcode);

/* Load time: every op has an implementation here, its operand dtypes are ones this runtime
 * executes, and its family's check accepts its tensors, weights and parameters. */
tgr_status tgr_check_kernels(const tgr_plan *p, tgr_error *err);

/* Run op `op` of a loaded plan on the buffers in `tensor_ptr`; `region` (plan_tensors.h) says
 * which part of each tensor a buffer holds, NULL for whole tensors. `weights` is where the
 * op's stage's weights are: the plan's blob, or a decompressed block. */
void tgr_dispatch(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region,
                  const uint8_t *weights);

/* Spatial TILING_* mode of an opcode (ops.h), and whether it runs on row bands. */
uint32_t tgr_op_tiling(uint32_t opcode);
int tgr_op_rows(uint32_t opcode);
/* Stripes only alone in a single stage, 1-D (TILING_ALONE). */
int tgr_op_alone(uint32_t opcode);
/* Spatial tiling in 2-D tiles only (TILING_2D_ONLY). */
int tgr_op_two_d_only(uint32_t opcode);

#endif /* TGR_OPS_REGISTRY_H */
