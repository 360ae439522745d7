/*
 * Op implementations, grouped by family in ops_*.c, one TGR_OP_IMPL per opcode (and a
 * TGR_OP_BANDS for an op that runs in row bands). The build generates the registry's dispatch
 * from these definitions (site_scons/tigris_scons/builtin.py); an opcode without one is refused
 * at load time by name. Every place an op touches: docs/adding-an-op.md.
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
    /* `run` also works on row bands (path_rows.c): see tgr_band_axis for the region encodings.
     * Which axes is the op's band rule (TGR_OP_BANDS); without one it is never banded. */
    TILING_ROWS = 4,
    /* The spatial mode holds only for the op alone in a single stage, in 1-D stripes: the
     * reference refuses chains and multi-op stripes holding it (Gelu, the indexing ops). */
    TILING_ALONE = 8,
    /* The spatial mode holds only in 2-D tiles (ConvTranspose: the compiler keeps it out of
     * stripes and chains). */
    TILING_2D_ONLY = 16
};

/* One op implementation: `check` at load time (everything the executor relies on, so `run` can
 * trust the plan) and `run` at run time (`region`, 4 per tensor: rows [0],[1), cols [2],[3), is
 * NULL for whole tensors). The macro gives them the external names tgr_check_OP_CONV and
 * tgr_run_OP_CONV, which only the build's generated dispatch (ops_registry.h) calls: a firmware
 * calls and links the ops of its plan, every call is direct, and the linker drops the rest. The
 * build reads each macro's opcode and tiling mode from this source (tigris_scons/builtin.py).
 * The last line only re-declares, so each use ends with a semicolon. */
#define TGR_OP_IMPL(code, tiling, check, run)                                                   \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err);                \
    uint32_t tgr_run_##code(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region); \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err) { return check(p, op, err); } \
    uint32_t tgr_run_##code(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region) \
    {                                                                                           \
        run(p, op, tensor_ptr, region);                                                         \
        return TGR_FAULT_NONE;                                                                  \
    }                                                                                           \
    uint32_t tgr_run_##code(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region)

/* An op whose run can fail on the data, where the reference fails the inference (a negative
 * Rsqrt input, a row sum past int32): `run` returns a TGR_FAULT_* code, TGR_FAULT_NONE when it
 * ran. The executor stops the run there with TGR_ERR_EXEC naming the op; the session stays usable
 * (every run starts from empty pools). Whatever depends only on the plan is refused at load. */
#define TGR_OP_FALLIBLE(code, tiling, check, run)                                               \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err);                \
    uint32_t tgr_run_##code(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region); \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err) { return check(p, op, err); } \
    uint32_t tgr_run_##code(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region) \
    {                                                                                           \
        return run(p, op, tensor_ptr, region);                                                  \
    }                                                                                           \
    uint32_t tgr_run_##code(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region)

/* Why a run stopped in an op (TGR_OP_FALLIBLE); tgr_fault_text (ops_registry.c) says it. */
enum {
    TGR_FAULT_NONE = 0,
    TGR_FAULT_BELOW_ZERO_POINT = 1, /* Rsqrt: an input below its zero point (a negative value) */
    TGR_FAULT_SUM_OVERFLOW = 2,     /* LogSoftmax, L2Normalization: a row's sum passes int32 */
    TGR_FAULT_ZERO_DIVISOR = 3,     /* Div: a divisor code equal to its zero point */
    TGR_FAULT_INDEX_RANGE = 4       /* Gather, GatherND: a run-time index outside the input */
};

/* The axes the rows path (exec/path_rows.c) may band op `code` along: `rule(p, op, axis)` returns
 * NULL when bands along `axis` of the op's output give exactly its whole result, else why not
 * (a TGR_TEXT reason). Declared next to the op's TGR_OP_IMPL, for an op whose tiling holds
 * TILING_ROWS (the build refuses a rule for any other op: nothing would ask it). The path asks
 * through the generated tgr_built_in_band_problem (ops_registry.h), which refuses an op that
 * declares no rule: banding is allowed op by op, never assumed. */
#define TGR_OP_BANDS(code, rule)                                                                \
    const char *tgr_band_problem_##code(const tgr_plan *p, uint32_t op, uint32_t axis);         \
    const char *tgr_band_problem_##code(const tgr_plan *p, uint32_t op, uint32_t axis) { return rule(p, op, axis); } \
    const char *tgr_band_problem_##code(const tgr_plan *p, uint32_t op, uint32_t axis)

/* An opcode whose check refuses every plan: listed so the refusal names why; it never runs. */
#define TGR_OP_REFUSED(code, check)                                                             \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err);                \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err) { return check(p, op, err); } \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err)

/* An op the executor runs itself (If, While: exec/path_control.c copies operands and runs their
 * graphs): only its load-time check is here, and the op dispatch never runs it. */
#define TGR_OP_CONTROL(code, check) TGR_OP_REFUSED(code, check)

/* An op whose arithmetic takes one of several methods, chosen from the plan at load time (the
 * reference picks Softmax's integer or float method from its output quantization): `method_of`
 * names the method op `op` takes, and each method is its own TGR_OP_METHOD run, so a firmware
 * links only the methods its plan takes (the generated check refuses the others by name). The
 * build reads the op of each method from the macro's first argument. */
#define TGR_OP_METHODS(code, tiling, check, method_of)                                          \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err);                \
    uint32_t tgr_method_of_##code(const tgr_plan *p, uint32_t op);                              \
    tgr_status tgr_check_##code(const tgr_plan *p, uint32_t op, tgr_error *err) { return check(p, op, err); } \
    uint32_t tgr_method_of_##code(const tgr_plan *p, uint32_t op) { return method_of(p, op); } \
    uint32_t tgr_method_of_##code(const tgr_plan *p, uint32_t op)

#define TGR_OP_METHOD(code, method, run)                                                        \
    uint32_t tgr_run_##method(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region); \
    uint32_t tgr_run_##method(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region) \
    {                                                                                           \
        run(p, op, tensor_ptr, region);                                                         \
        return TGR_FAULT_NONE;                                                                  \
    }                                                                                           \
    uint32_t tgr_run_##method(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region)

/* The methods (codes 1..31, one bit each in the generated masks). The convolution family's are
 * its kernel variants, chosen by the predicates of kernels.h in ops_conv.c's dispatchers; which
 * variant each method runs in which build is the table there. */
enum {
    METHOD_SOFTMAX_INTEGER = 1,        /* output scale 1/256, zero point -128: fixed-point exp, Q12 sum */
    METHOD_SOFTMAX_FLOAT = 2,          /* any other output quantization: float32 expf/sum/divide */
    /* 3: unused (the narrow pointwise method, now part of METHOD_CONV_POINTWISE) */
    METHOD_CONV_UNPADDED = 4,          /* tgr_conv_is_unpadded, not pointwise */
    METHOD_CONV_PADDED = 5,            /* padding, tgr_conv_window_fits_patch, not _gather */
    METHOD_CONV_PADDED_WIDE = 6,       /* padding, a window larger than the patch */
    METHOD_CONV_PLAIN = 7,             /* an input zero point that does not pack in 16 bits */
    METHOD_DEPTHWISE = 8,              /* tgr_depthwise_is_multiplier_1 */
    METHOD_DEPTHWISE_PLAIN = 9,        /* channel multiplier above 1, or the zero point as above */
    METHOD_FULLY_CONNECTED = 10,       /* Gemm */
    METHOD_FULLY_CONNECTED_PLAIN = 11, /* Gemm, the zero point as above */
    METHOD_CONV_POINTWISE = 12,        /* tgr_conv_is_pointwise */
    METHOD_DEPTHWISE_3X3 = 18,         /* tgr_depthwise_is_3x3 */
    METHOD_CONV_GATHER = 24            /* padding, tgr_conv_window_fits_gather */
};

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
/* Add, Sub, Mul, Max, Min, SquaredDifference, PRelu, the comparisons, And, Or: two operands
 * that broadcast. */
int tgr_binary_elementwise(uint32_t opcode);

/* Input rows [*first, *end) Resize op o reads for its output rows [r0, r1). */
void tgr_resize_input_rows(const tgr_plan *p, uint32_t o, int32_t r0, int32_t r1, int32_t *first, int32_t *end);
/* Input rows a stripe of `rows` output rows of Resize op o is budgeted (the compiler's bound,
 * which the tile height is chosen by): taps + ceil((rows - 1) x scale) (+ 1 for nearest). */
int32_t tgr_resize_band_rows(const tgr_plan *p, uint32_t o, int32_t rows);

/* Band rule (TGR_OP_BANDS) of the ops that compute each output element from the input elements
 * at its own position (elementwise, the table ops, Quantize, Dequantize, Where): any axis. The
 * path only offers axes along which every tensor of the stage is banded alike. */
const char *tgr_band_any_axis(const tgr_plan *p, uint32_t o, uint32_t axis);
/* Band rule of the reductions, CumSum and ArgMax/ArgMin (ops_reduce.c), and ReduceAll: not along
 * an axis they reduce, and not when the output drops axes (but an ArgMax/ArgMin's own). */
const char *tgr_reduction_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis);
/* Whether op o is an ArgMax/ArgMin whose output drops the reduced axis (ops_reduce.c): the axes
 * after it move one place forward. */
int tgr_drops_reduced_axis(const tgr_plan *p, uint32_t o);

/* Indexing ops that run in bands along an axis they map onto itself (ops_index.c): Gather,
 * GatherND, StridedSlice, MirrorPad, ReverseV2, DynamicUpdateSlice. */
int tgr_index_bandable_op(uint32_t opcode);
/* Whether input k of indexing op o holds run-time indices or starts (int32): a band reads it
 * whole, in place. */
int tgr_index_operand(const tgr_plan *p, uint32_t o, uint32_t k);
/* Whether op o is a Gather/GatherND into a constant table: its only input, the indices, and its
 * output share their leading axes, which a band cuts alike. */
int tgr_index_table_op(const tgr_plan *p, uint32_t o);
/* Why indexing op o (ops_index.c) cannot run in row bands along `axis`, or NULL: their band rule,
 * which the stripes of path_tiles.c also ask about axis 1. */
const char *tgr_index_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis);

/* Quantize of a float32 input (ops_float.c), for Quantize's own check and run. */
tgr_status tgr_check_quantize_float(const tgr_plan *p, uint32_t o, tgr_error *err);
void tgr_run_quantize_float(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region);

#if TGR_MESSAGES
/* "op N (Name): what" as a TGR_ERR_OP failure. */
tgr_status tgr_bad_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what);
/* "op N (Name): what is not supported by this runtime" as a TGR_ERR_UNSUPPORTED failure. */
tgr_status tgr_unsupported_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what);
#else
/* Without messages the reason is never compiled, so its text does not reach the image. */
#define tgr_bad_op(err, p, o, what) ((void)sizeof tgr_unevaluated((p), (o), (what)), tgr_fail_status((err), TGR_ERR_OP))
#define tgr_unsupported_op(err, p, o, what) \
    ((void)sizeof tgr_unevaluated((p), (o), (what)), tgr_fail_status((err), TGR_ERR_UNSUPPORTED))
#endif
/* No fused activation: the encoding ops without an activation of their own must carry. */
int tgr_neutral_activation(const op_spatial *sp);

/* True when op `o` is a Reshape/Flatten whose output can share its input's buffer (ops_shape.c). */
int tgr_is_pure_reinterpretation(const tgr_plan *p, uint32_t o);

/* Requantization of a GlobalAveragePool op, for whole-tensor and banded execution (ops_pool.c). */
void tgr_mean_of(const tgr_plan *p, uint32_t op, tgr_mean *m);

#endif /* TGR_OPS_H */
