/*
 * Activation family: unary int8 ops. Softmax runs over whole rows of the last stored axis
 * (integer or float method, chosen by the output quantization inside the kernel), also in row
 * bands and, over the channels of channels-last tensors, per pixel in spatial tiles (the
 * reference chains Conv -> Softmax). Every other op maps each input code to one output code, so it is applied as a
 * 256-entry table built per call (kernels_activation.c) and runs pointwise in spatial tiles and
 * row bands.
 *
 * LogSoftmax and L2Normalization run along the last stored axis like Softmax; Rsqrt is a table
 * too, but a run with an input below its zero point fails (as the reference's does), and so does
 * a LogSoftmax or L2Normalization row whose sum passes int32 (TGR_OP_FALLIBLE).
 */
#include <math.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels_act.h"
#include "ops/ops.h"

enum {
    OP_SIGMOID = 12, OP_TANH = 20, OP_LEAKY_RELU = 21, OP_HARD_SWISH = 37, OP_ABS = 38, OP_RSQRT = 39, OP_ELU = 56,
    OP_LOG_SOFTMAX = 57, OP_L2_NORMALIZATION = 58, OP_GELU = 92
};

/* The slope OP_ATTR_ALPHA defaults to when a plan leaves it out (docs/plan-format.md#op-attributes). */
#define LEAKY_RELU_DEFAULT_ALPHA 0.01f

/* ---- Softmax ------------------------------------------------------------------------------ */

static tgr_status check_softmax(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, out);
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "a fused activation on Softmax is invalid");
    }
    if (tensor_ndim(p, in) == 0u || !tgr_same_shape(p, in, out)) {
        return tgr_bad_op(err, p, o, "input and output shapes differ");
    }
    if (tgr_softmax_is_integer(&qout) && (double)qin.scale * (double)(1 << 26) < 1.0) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (Softmax): input scale below 2^-26 is not supported", o);
    }
    return TGR_OK;
}

/* Bytes of one row of t's row axis (tgr_row_axis), the unit of row bands. */
static uint32_t row_bytes(const tgr_plan *p, uint32_t t)
{
    return tensor_bytes(p, t) / (uint32_t)tensor_dim(p, t, tgr_row_axis(p, t));
}

/* Softmax (and LogSoftmax, L2Normalization) runs along the last stored axis, so every position
 * of the other axes is one row of the softmax: whole tensors; row bands, whose input and output bands coincide on the row axis
 * (one contiguous run of rows); and for rank 4 (channels-last stripes, chains, 2-D tiles, or
 * row bands of H or W) each output row over the output's columns, the input buffer possibly
 * holding more rows and columns. So a run is `blocks` blocks of `rows` softmax rows, the input
 * and output blocks `x_stride` and `y_stride` bytes apart. */
typedef struct {
    int32_t blocks, rows, depth;
    int64_t x_stride, y_stride;
    const int8_t *x;
    int8_t *y;
    tgr_qparams qin, qout;
} softmax_run;

static softmax_run softmax_run_of(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    softmax_run r;
    int32_t ex[4], ey[4];
    r.depth = tensor_dim(p, in, tensor_ndim(p, in) - 1u);
    r.x = (const int8_t *)tensor_ptr[in];
    r.y = (int8_t *)tensor_ptr[out];
    r.qin = tgr_qparams_of(p, in);
    r.qout = tgr_qparams_of(p, out);
    r.blocks = 1;
    r.x_stride = r.y_stride = 0;
    if (region == NULL) {
        r.rows = (int32_t)(tensor_bytes(p, in) / (uint32_t)r.depth);
    } else if (tensor_ndim(p, out) != 4u) {
        r.x += (int64_t)(region[4u * out] - region[4u * in]) * row_bytes(p, in);
        r.rows = (int32_t)(tgr_band_bytes(p, out, region) / (uint32_t)r.depth);
    } else {
        tgr_extent_of(p, in, region, ex);
        tgr_extent_of(p, out, region, ey);
        r.blocks = ey[1] - ey[0];
        r.rows = ey[3] - ey[2];
        r.x += ((int64_t)(ey[0] - ex[0]) * (ex[3] - ex[2]) + (ey[2] - ex[2])) * r.depth;
        r.x_stride = (int64_t)(ex[3] - ex[2]) * r.depth;
        r.y_stride = (int64_t)r.rows * r.depth;
    }
    return r;
}

static void run_softmax_integer(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    const softmax_run r = softmax_run_of(p, o, tensor_ptr, region);
    int32_t b;
    for (b = 0; b < r.blocks; ++b) {
        tgr_softmax_integer_s8(r.rows, r.depth, r.x + b * r.x_stride, &r.qin, r.y + b * r.y_stride);
    }
}

static void run_softmax_float(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    const softmax_run r = softmax_run_of(p, o, tensor_ptr, region);
    int32_t b;
    for (b = 0; b < r.blocks; ++b) {
        tgr_softmax_float_s8(r.rows, r.depth, r.x + b * r.x_stride, &r.qin, &r.qout, r.y + b * r.y_stride);
    }
}

static uint32_t run_log_softmax(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    const softmax_run r = softmax_run_of(p, o, tensor_ptr, region);
    int32_t b;
    for (b = 0; b < r.blocks; ++b) {
        if (!tgr_log_softmax_s8(r.rows, r.depth, r.x + b * r.x_stride, &r.qin, r.y + b * r.y_stride)) {
            return TGR_FAULT_SUM_OVERFLOW;
        }
    }
    return TGR_FAULT_NONE;
}

static uint32_t run_l2_normalization(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    const softmax_run r = softmax_run_of(p, o, tensor_ptr, region);
    int32_t b;
    for (b = 0; b < r.blocks; ++b) {
        if (!tgr_l2_normalize_s8(r.rows, r.depth, r.x + b * r.x_stride, r.qin.zero_point, r.y + b * r.y_stride)) {
            return TGR_FAULT_SUM_OVERFLOW;
        }
    }
    return TGR_FAULT_NONE;
}

/* Band rule of Softmax, LogSoftmax and L2Normalization: each row along the last axis is one
 * normalization, so bands must hold whole rows. */
static const char *row_wise_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    return axis + 1u < tensor_ndim(p, op_output(p, o, 0))
               ? NULL
               : TGR_TEXT("a Softmax, LogSoftmax or L2Normalization cannot be banded along the axis it normalizes");
}

static uint32_t softmax_method(const tgr_plan *p, uint32_t o)
{
    const tgr_qparams qout = tgr_qparams_of(p, op_output(p, o, 0));
    return tgr_softmax_is_integer(&qout) ? METHOD_SOFTMAX_INTEGER : METHOD_SOFTMAX_FLOAT;
}

/* ---- table ops ---------------------------------------------------------------------------- */

static float leaky_relu_alpha(const tgr_plan *p, uint32_t o)
{
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_ALPHA, NULL);
    return attr != NULL ? rd_f32(attr) : LEAKY_RELU_DEFAULT_ALPHA;
}

/* OP_ATTR_GELU_APPROXIMATE: 1 for the tanh approximation, 0 (or absent) for the exact erf form. */
static int gelu_tanh(const tgr_plan *p, uint32_t o)
{
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_GELU_APPROXIMATE, NULL);
    return attr != NULL && attr[0] == 1u;
}

/* The table of op o (opcode already checked). */
static void build_table(const tgr_plan *p, uint32_t o, int8_t *lut)
{
    tgr_qparams in = tgr_qparams_of(p, op_input(p, o, 0));
    tgr_qparams out = tgr_qparams_of(p, op_output(p, o, 0));
    switch (op_type(p, o)) {
    case OP_RELU: tgr_lut_relu(&in, &out, 0, lut); break;
    case OP_RELU6: tgr_lut_relu(&in, &out, 1, lut); break;
    case OP_SIGMOID: tgr_lut_sigmoid(&in, &out, lut); break;
    case OP_TANH: tgr_lut_tanh(&in, &out, lut); break;
    case OP_LEAKY_RELU: tgr_lut_leaky_relu(&in, &out, leaky_relu_alpha(p, o), lut); break;
    case OP_HARD_SWISH: tgr_lut_hard_swish(&in, &out, lut); break;
    case OP_ABS: tgr_lut_abs(&in, &out, lut); break;
    case OP_ELU: tgr_lut_elu(&in, &out, lut); break;
    case OP_GELU: tgr_lut_gelu(&in, &out, gelu_tanh(p, o), lut); break;
    case OP_NOT: tgr_lut_not(lut); break;
    case OP_CAST: tgr_lut_cast_bool(&out, lut); break;
    default: tgr_lut_requantize(&in, &out, lut); break; /* OP_QUANTIZE */
    }
}

/* Multiplier/shift pairs a table op derives, so the loader can refuse ones the fixed-point
 * helpers cannot apply (only for absurd scale ratios). */
static int table_pairs_valid(const tgr_plan *p, uint32_t o)
{
    tgr_qparams in = tgr_qparams_of(p, op_input(p, o, 0));
    tgr_qparams out = tgr_qparams_of(p, op_output(p, o, 0));
    int32_t m, s, m2 = 0, s2 = 0;
    switch (op_type(p, o)) {
    case OP_QUANTIZE:
        fp_quantize_multiplier((double)in.scale / (double)out.scale, &m, &s);
        break;
    case OP_ABS:
        fp_quantize_multiplier((double)(in.scale / out.scale), &m, &s);
        break;
    case OP_LEAKY_RELU: {
        float slope_product = leaky_relu_alpha(p, o) * in.scale;
        float slope = slope_product / out.scale;
        fp_quantize_multiplier((double)(in.scale / out.scale), &m, &s);
        fp_quantize_multiplier(fabs((double)slope), &m2, &s2);
        break;
    }
    default:
        return 1;
    }
    return tgr_valid_pair(m, s) && tgr_valid_pair(m2, s2);
}

static int cast_exact(const tgr_plan *p, uint32_t out)
{
    tgr_qparams q = tgr_qparams_of(p, out);
    return tgr_cast_bool_exact(&q);
}

static tgr_status check_table_op(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "a fused activation is only valid on Conv, Gemm and Add");
    }
    if (!tgr_same_shape(p, in, out)) {
        return tgr_bad_op(err, p, o, "input and output shapes differ");
    }
    if (op_type(p, o) == OP_HARD_SWISH) {
        tgr_qparams qin = tgr_qparams_of(p, in);
        tgr_qparams qout = tgr_qparams_of(p, out);
        if (!tgr_hard_swish_supported(&qin, &qout)) {
            /* The reference accepts the plan and then fails every run. */
            return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                            "op %u (HardSwish): output scale below input scale / 128 is not executable", o);
        }
    }
    if (op_type(p, o) == OP_LEAKY_RELU && !(fabsf(leaky_relu_alpha(p, o)) <= 3.0e38f)) {
        return tgr_bad_op(err, p, o, "its alpha is not a finite number");
    }
    if (op_type(p, o) == OP_CAST && !cast_exact(p, out)) {
        return tgr_unsupported_op(err, p, o, "an output scale whose 1.0 rounds differently in float32 and double");
    }
    if (op_type(p, o) == OP_GELU) {
        const uint8_t *attr = tgr_attr_find(p, o, ATTR_GELU_APPROXIMATE, NULL);
        if (attr != NULL && attr[0] > 1u) {
            return tgr_bad_op(err, p, o, "its approximation is neither 0 (erf) nor 1 (tanh)");
        }
    }
    if (!table_pairs_valid(p, o)) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): input/output scale ratio out of range", o,
                        tgr_op_name(op_type(p, o)));
    }
    return TGR_OK;
}

/* Whole tensors; or spatial tiles (rank 4): each output row over the output's columns, the
 * input buffer possibly holding more rows and columns; or row bands of another rank: one
 * contiguous run of the output's rows. `lut` applies to each run; with `floor_code` above -128,
 * a run holding a code below it fails the op first (TGR_FAULT_BELOW_ZERO_POINT). */
static uint32_t apply_table(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                            const int8_t *lut, int32_t floor_code)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    const int8_t *x = (const int8_t *)tensor_ptr[in];
    int8_t *y = (int8_t *)tensor_ptr[out];
    int32_t ex[4], ey[4];
    int32_t channels, r, count;
    if (region == NULL || tensor_ndim(p, out) != 4u) {
        if (region == NULL) {
            count = (int32_t)tensor_bytes(p, out);
        } else {
            count = tgr_row_count(p, out, region) * (int32_t)row_bytes(p, out);
            x += (int64_t)(region[4u * out] - region[4u * in]) * row_bytes(p, in);
        }
        if (floor_code > -128 && !tgr_rsqrt_fits(count, x, floor_code)) {
            return TGR_FAULT_BELOW_ZERO_POINT;
        }
        tgr_lut_apply(count, x, lut, y);
        return TGR_FAULT_NONE;
    }
    tgr_extent_of(p, in, region, ex);
    tgr_extent_of(p, out, region, ey);
    channels = tensor_dim(p, out, 3);
    count = (ey[3] - ey[2]) * channels;
    for (r = ey[0]; r < ey[1]; ++r) {
        const int8_t *px = x + ((int64_t)(r - ex[0]) * (ex[3] - ex[2]) + (ey[2] - ex[2])) * channels;
        if (floor_code > -128 && !tgr_rsqrt_fits(count, px, floor_code)) {
            return TGR_FAULT_BELOW_ZERO_POINT;
        }
        tgr_lut_apply(count, px, lut, y + (int64_t)(r - ey[0]) * count);
    }
    return TGR_FAULT_NONE;
}

static void run_table_op(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    int8_t lut[TGR_LUT_SIZE];
    build_table(p, o, lut);
    (void)apply_table(p, o, tensor_ptr, region, lut, -128);
}

/* ---- Rsqrt, LogSoftmax, L2Normalization -------------------------------------------------- */

/* Unary, no fused activation, the output the input's shape: what every op here needs. */
static tgr_status check_unary(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "a fused activation is only valid on Conv, Gemm and Add");
    }
    if (!tgr_same_shape(p, op_input(p, o, 0), op_output(p, o, 0))) {
        return tgr_bad_op(err, p, o, "input and output shapes differ");
    }
    return TGR_OK;
}

static tgr_status check_rsqrt(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    tgr_qparams in = tgr_qparams_of(p, op_input(p, o, 0));
    tgr_qparams out = tgr_qparams_of(p, op_output(p, o, 0));
    int32_t m, s;
    tgr_status st = check_unary(p, o, err);
    if (st == TGR_OK && !tgr_rsqrt_output_pair(&in, &out, &m, &s)) {
        /* The reference accepts the plan and fails every run: refused here, at load. */
        return tgr_unsupported_op(err, p, o, "an output scale pair whose shift the reference does not execute");
    }
    return st;
}

static uint32_t run_rsqrt(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    tgr_qparams in = tgr_qparams_of(p, op_input(p, o, 0));
    tgr_qparams out = tgr_qparams_of(p, op_output(p, o, 0));
    int8_t lut[TGR_LUT_SIZE];
    int32_t m, s;
    (void)tgr_rsqrt_output_pair(&in, &out, &m, &s);
    tgr_rsqrt_table(&in, &out, m, s, lut);
    return apply_table(p, o, tensor_ptr, region, lut, in.zero_point);
}

/* The output quantization the compiler gives the op, which its arithmetic assumes. */
static tgr_status check_fixed_output(const tgr_plan *p, uint32_t o, float scale, int32_t zero_point, tgr_error *err)
{
    tgr_qparams out = tgr_qparams_of(p, op_output(p, o, 0));
    tgr_status st = check_unary(p, o, err);
    if (st == TGR_OK && (out.scale != scale || out.zero_point != zero_point)) {
        return tgr_unsupported_op(err, p, o, "an output quantization other than the compiler's (1/16, 127 or 1/128, 0)");
    }
    return st;
}

static tgr_status check_log_softmax(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    tgr_qparams in = tgr_qparams_of(p, op_input(p, o, 0));
    tgr_status st = check_fixed_output(p, o, 1.0f / 16.0f, 127, err);
    if (st == TGR_OK && (double)in.scale * (double)(1 << 26) < 1.0) {
        return tgr_unsupported_op(err, p, o, "an input scale below 2^-26");
    }
    return st;
}

/* Quantize requantizes int8 codes by a table, or converts float32 values (ops_float.c). */
static tgr_status check_quantize(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    return tensor_dtype(p, op_input(p, o, 0)) == TGR_DTYPE_FLOAT32 ? tgr_check_quantize_float(p, o, err)
                                                          : check_table_op(p, o, err);
}

static void run_quantize(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    if (tensor_dtype(p, op_input(p, o, 0)) == TGR_DTYPE_FLOAT32) {
        tgr_run_quantize_float(p, o, tensor_ptr, region);
    } else {
        run_table_op(p, o, tensor_ptr, region);
    }
}

static tgr_status check_l2_normalization(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    return check_fixed_output(p, o, 1.0f / 128.0f, 0, err);
}


TGR_OP_METHODS(OP_SOFTMAX, TILING_POINTWISE | TILING_ROWS, check_softmax, softmax_method);
TGR_OP_BANDS(OP_SOFTMAX, row_wise_band_problem);
TGR_OP_METHOD(OP_SOFTMAX, METHOD_SOFTMAX_INTEGER, run_softmax_integer);
TGR_OP_METHOD(OP_SOFTMAX, METHOD_SOFTMAX_FLOAT, run_softmax_float);
TGR_OP_IMPL(OP_RELU, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_RELU, tgr_band_any_axis);
TGR_OP_IMPL(OP_RELU6, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_RELU6, tgr_band_any_axis);
TGR_OP_IMPL(OP_SIGMOID, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_SIGMOID, tgr_band_any_axis);
TGR_OP_IMPL(OP_TANH, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_TANH, tgr_band_any_axis);
TGR_OP_IMPL(OP_LEAKY_RELU, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_LEAKY_RELU, tgr_band_any_axis);
TGR_OP_IMPL(OP_HARD_SWISH, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_HARD_SWISH, tgr_band_any_axis);
TGR_OP_IMPL(OP_ABS, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_ABS, tgr_band_any_axis);
TGR_OP_IMPL(OP_ELU, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_ELU, tgr_band_any_axis);
TGR_OP_IMPL(OP_QUANTIZE, TILING_POINTWISE | TILING_ROWS, check_quantize, run_quantize);
TGR_OP_BANDS(OP_QUANTIZE, tgr_band_any_axis);
TGR_OP_IMPL(OP_GELU, TILING_POINTWISE | TILING_ROWS | TILING_ALONE, check_table_op, run_table_op);
TGR_OP_BANDS(OP_GELU, tgr_band_any_axis);
TGR_OP_IMPL(OP_NOT, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_NOT, tgr_band_any_axis);
TGR_OP_IMPL(OP_CAST, TILING_POINTWISE | TILING_ROWS, check_table_op, run_table_op);
TGR_OP_BANDS(OP_CAST, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_RSQRT, TILING_POINTWISE | TILING_ROWS, check_rsqrt, run_rsqrt);
TGR_OP_BANDS(OP_RSQRT, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_LOG_SOFTMAX, TILING_POINTWISE | TILING_ROWS, check_log_softmax, run_log_softmax);
TGR_OP_BANDS(OP_LOG_SOFTMAX, row_wise_band_problem);
TGR_OP_FALLIBLE(OP_L2_NORMALIZATION, TILING_POINTWISE | TILING_ROWS, check_l2_normalization, run_l2_normalization);
TGR_OP_BANDS(OP_L2_NORMALIZATION, row_wise_band_problem);
