/*
 * Op implementations, grouped by family in ops_*.c. Each family exposes a lookup from opcode
 * to its implementation; ops_registry.c chains the lookups, so adding an op touches only its
 * family file (and the chain, for a new family). An opcode no family knows is refused at load
 * time by name.
 */
#ifndef TGR_OPS_H
#define TGR_OPS_H

#include "kernels/kernels.h"
#include "plan/plan_tensors.h"

/* How an op can take part in tiled execution: one spatial mode (path_tiles.c), optionally
 * combined with TILING_ROWS. */
enum {
    TILING_NONE = 0,      /* whole tensors only */
    TILING_POINTWISE = 1, /* output rows/cols map 1:1 onto input rows/cols */
    TILING_WINDOW = 2,    /* a sliding window described by the op's kernel/stride/pad fields */
    TILING_RESAMPLE = 3,  /* Resize: output rows sample input rows (tgr_resize_input_rows); 1-D stripes */
    TILING_SPATIAL = 3,   /* mask of the spatial modes above */
    /* `run` also works on row bands (path_rows.c): see tgr_band_axis for the region encodings. */
    TILING_ROWS = 4,
    /* The spatial mode holds only for the op alone in a single stage, in 1-D stripes: the
     * reference refuses chains and multi-op stripes holding it (Gelu, the indexing ops). */
    TILING_ALONE = 8,
    /* The spatial mode holds only in 2-D tiles (ConvTranspose: the compiler keeps it out of
     * stripes and chains). */
    TILING_2D_ONLY = 16
};

typedef struct tgr_op_impl {
    uint8_t opcode;
    uint8_t tiling;
    /* Load time: everything the executor relies on, so `run` can trust the plan. */
    tgr_status (*check)(const tgr_plan *p, uint32_t op, tgr_error *err);
    /* Run time: `region` (4 per tensor: rows [0],[1), cols [2],[3)) is NULL for whole tensors.
     * NULL for ops whose `check` refuses every plan (listed only to name why). */
    void (*run)(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region);
} tgr_op_impl;

const tgr_op_impl *tgr_ops_conv(uint32_t opcode);
const tgr_op_impl *tgr_ops_pool(uint32_t opcode);
const tgr_op_impl *tgr_ops_elementwise(uint32_t opcode);
const tgr_op_impl *tgr_ops_activation(uint32_t opcode);
const tgr_op_impl *tgr_ops_shape(uint32_t opcode);
const tgr_op_impl *tgr_ops_movement(uint32_t opcode);
const tgr_op_impl *tgr_ops_index(uint32_t opcode);
const tgr_op_impl *tgr_ops_logic(uint32_t opcode);
const tgr_op_impl *tgr_ops_reduce(uint32_t opcode);
const tgr_op_impl *tgr_ops_matmul(uint32_t opcode);

/* Family files find their entry in a small static table (ops_common.c). */
const tgr_op_impl *tgr_ops_find(const tgr_op_impl *table, uint32_t count, uint32_t opcode);

/* ---- helpers shared by the families (ops_common.c) --------------------------------------- */

/* A Q0.31 multiplier with a shift the kernels can apply. */
int tgr_valid_pair(int32_t multiplier, int32_t shift);
/* Ops that requantize form (x - zp_in) * s_in / s_out (|x - zp_in| <= 255) in floating point and
 * convert it to int32, or derive a multiplier/shift pair from s_in / s_out: both are defined
 * only below 2^23. A plan with a larger ratio from `in` to `out` is refused (TGR_ERR_QUANT). */
#define TGR_MAX_RESCALE 8388608.0
tgr_status tgr_check_rescale(const tgr_plan *p, uint32_t o, uint32_t in, uint32_t out, tgr_error *err);

/* Whether a stripe can offset every operand of op o: true for all but the binary elementwise ops,
 * whose operands must be the output's shape, one value per channel as the second operand, or a
 * constant that is a scalar or repeats along the output's trailing axes (partition_spatial's
 * _mark_untileable_broadcasts marks the rest), and Where, whose operands must all be the
 * output's shape. */
int tgr_stripe_operands(const tgr_plan *p, uint32_t o);
/* Add, Sub, Mul, Max, Min, SquaredDifference, PRelu: two operands that broadcast. */
int tgr_binary_elementwise(uint32_t opcode);

/* Input rows [*first, *end) Resize op o reads for its output rows [r0, r1). */
void tgr_resize_input_rows(const tgr_plan *p, uint32_t o, int32_t r0, int32_t r1, int32_t *first, int32_t *end);
/* Input rows a stripe of `rows` output rows of Resize op o is budgeted (the compiler's bound,
 * which the tile height is chosen by): taps + ceil((rows - 1) x scale) (+ 1 for nearest). */
int32_t tgr_resize_band_rows(const tgr_plan *p, uint32_t o, int32_t rows);

/* Indexing ops that run in bands along an axis they map onto itself (ops_index.c): Gather,
 * GatherND, StridedSlice, MirrorPad, ReverseV2, DynamicUpdateSlice. */
int tgr_index_bandable_op(uint32_t opcode);
/* Why indexing op o (ops_index.c) cannot run in row bands along `axis`, or NULL. */
const char *tgr_index_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis);

/* "op N (Name): what" as a TGR_ERR_OP failure. */
tgr_status tgr_bad_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what);
/* "op N (Name): what is not supported by this runtime" as a TGR_ERR_UNSUPPORTED failure. */
tgr_status tgr_unsupported_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what);
/* No fused activation: the encoding ops without an activation of their own must carry. */
int tgr_neutral_activation(const op_spatial *sp);

/* True when op `o` is a Reshape/Flatten whose output can share its input's buffer (ops_shape.c). */
int tgr_is_pure_reinterpretation(const tgr_plan *p, uint32_t o);

/* Requantization of a GlobalAveragePool op, for whole-tensor and banded execution (ops_pool.c). */
void tgr_mean_of(const tgr_plan *p, uint32_t op, tgr_mean *m);

#endif /* TGR_OPS_H */
