/*
 * The op registry (ops_registry.c): what the loader and the execution paths ask of ops without
 * knowing their families.
 */
#ifndef TGR_OPS_REGISTRY_H
#define TGR_OPS_REGISTRY_H

#include "ops/ops.h"

/* The generated dispatch (ops_built_in.c, written by site_scons/tigris_scons/builtin.py from the
 * TGR_OP_* definitions): every op for the host library and `scons host`, only the plan's own
 * for a firmware, so the linker keeps nothing else. It calls the families and nothing here:
 * the registry depends on it, never the other way round. */
#define TGR_OP_BUILT_IN 0x100u /* tgr_built_in_op: the opcode is in this build */
#define TGR_OP_RUNS 0x200u     /* ... and runs (not a TGR_OP_REFUSED entry) */
/* TGR_OP_BUILT_IN | TGR_OP_RUNS | its TILING_* bits, or 0 when this build has no such op. */
uint32_t tgr_built_in_op(uint32_t opcode);
/* The op's check and run; only for ops tgr_built_in_op says this build has (and runs). */
tgr_status tgr_built_in_check(const tgr_plan *p, uint32_t op, tgr_error *err);
/* Returns the op's TGR_FAULT_* (TGR_FAULT_NONE when it ran). */
uint32_t tgr_built_in_run(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region);
/* The method op `op` takes (ops.h TGR_OP_METHODS), 0 for an op without methods; every method of
 * the full runtime in the host library, so tgr_plan_needs can name the plan's. */
uint32_t tgr_built_in_method(const tgr_plan *p, uint32_t op);
/* The method's name (METHOD_SOFTMAX_FLOAT -> "softmax_float"), "?" for an unknown code. */
const char *tgr_method_name(uint32_t method);
/* Bit m for each method m this build runs (tgr_check_kernels refuses an op taking another). */
extern const uint32_t tgr_built_in_methods;
/* Why op `op` cannot run in row bands along `axis` (its family's TGR_OP_BANDS rule), or NULL when
 * it can; an op of this build that declares no rule is refused with a reason. Only for ops
 * tgr_built_in_op says this build has. */
const char *tgr_built_in_band_problem(const tgr_plan *p, uint32_t op, uint32_t axis);
/* Bit n of byte n / 8: every opcode the full runtime implements, so a refusal can tell "not built
 * into this firmware" from "not supported". */
extern const uint8_t tgr_full_runtime_ops[32];

/* Whether the full runtime implements the opcode (it may still be left out of this build). */
int tgr_op_in_full_runtime(uint32_t opcode);

/* Load time: every op has an implementation here, its operand dtypes are ones this runtime
 * executes, its family's check accepts its tensors, weights and parameters, and the method it
 * takes (if it has methods) is built in. */
tgr_status tgr_check_kernels(const tgr_plan *p, tgr_error *err);

/* Run op `op` of a loaded plan on the buffers in `tensor_ptr` (its TGR_FAULT_* back); `region` (plan_tensors.h) says
 * which part of each tensor a buffer holds, NULL for whole tensors. `weights` is where the
 * op's stage's weights are: the plan's blob, or a decompressed block. */
uint32_t tgr_dispatch(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region,
                      const uint8_t *weights);
/* What a TGR_FAULT_* code means, for the run's error message. */
const char *tgr_fault_text(uint32_t fault);

/* Spatial TILING_* mode of an opcode (ops.h), and whether it runs on row bands. */
uint32_t tgr_op_tiling(uint32_t opcode);
int tgr_op_rows(uint32_t opcode);
/* Stripes only alone in a single stage, 1-D (TILING_ALONE). */
int tgr_op_alone(uint32_t opcode);
/* Spatial tiling in 2-D tiles only (TILING_2D_ONLY). */
int tgr_op_two_d_only(uint32_t opcode);

#endif /* TGR_OPS_REGISTRY_H */
