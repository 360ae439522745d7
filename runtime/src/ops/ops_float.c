/*
 * Float sections of an int8 plan: Dequantize (91) turns int8 codes into float32 values, and
 * Quantize (90) with a float32 input turns them back (its int8 -> int8 form is a table op in
 * ops_activation.c). The compiler writes them around If/While, whose operands stay float32.
 *
 * Arithmetic, measured against the reference on the compiler's control-flow fixtures:
 * Dequantize is (float)(q - zp) * scale in float32; Quantize is roundf(x / scale) (ties away
 * from zero) + zp, saturated to [-128, 127], a NaN giving the zero point: the model boundary's
 * conversion (docs/execution.md#boundary-conversion).
 */
#include <math.h>

#include "ops/ops.h"

/* Where the op's elements run contiguously: whole tensors, a row band of any rank (one run of
 * rows), or rank-4 stripes and tiles (each output row over the output's columns, the input
 * buffer possibly holding more rows and columns). Offsets and counts are in elements, so both
 * sides may differ in element size. */
typedef struct pointwise_runs {
    uint32_t runs;            /* number of runs */
    uint32_t count;           /* elements per run */
    int64_t x_first, y_first; /* element offset of run 0 */
    int64_t x_step, y_step;   /* elements between runs */
} pointwise_runs;

static uint32_t row_elements(const tgr_plan *p, uint32_t t)
{
    uint32_t axis, n = 1u;
    for (axis = tgr_row_axis(p, t) + 1u; axis < tensor_ndim(p, t); ++axis) {
        n *= (uint32_t)tensor_dim(p, t, axis);
    }
    return n;
}

static void runs_of(const tgr_plan *p, uint32_t o, const int32_t *region, pointwise_runs *r)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    int32_t ex[4], ey[4];
    uint32_t channels;
    r->x_first = r->y_first = r->x_step = r->y_step = 0;
    r->runs = 1u;
    if (region == NULL || tensor_ndim(p, out) != 4u) {
        r->count = region == NULL ? tgr_band_bytes(p, out, NULL)
                                  : (uint32_t)tgr_row_count(p, out, region) * row_elements(p, out);
        if (region != NULL) {
            r->x_first = (int64_t)(region[4u * out] - region[4u * in]) * row_elements(p, in);
        }
        return;
    }
    tgr_extent_of(p, in, region, ex);
    tgr_extent_of(p, out, region, ey);
    channels = (uint32_t)tensor_dim(p, out, 3);
    r->runs = (uint32_t)(ey[1] - ey[0]);
    r->count = (uint32_t)(ey[3] - ey[2]) * channels;
    r->x_first = ((int64_t)(ey[0] - ex[0]) * (ex[3] - ex[2]) + (ey[2] - ex[2])) * channels;
    r->x_step = (int64_t)(ex[3] - ex[2]) * channels;
    r->y_step = r->count;
}

/* Input int8 and output float32 (Dequantize) or the reverse (Quantize), shapes equal. */
static tgr_status check_conversion(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    op_decode(p, o, &sp);
    if (!tgr_same_shape(p, op_input(p, o, 0), op_output(p, o, 0)) || sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "input and output shapes differ, or it carries an activation");
    }
    return TGR_OK;
}

static void run_dequantize(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    const tgr_qparams q = tgr_qparams_of(p, op_input(p, o, 0));
    const int8_t *x = (const int8_t *)tensor_ptr[op_input(p, o, 0)];
    uint8_t *y = tensor_ptr[op_output(p, o, 0)];
    pointwise_runs r;
    uint32_t run, i;
    runs_of(p, o, region, &r);
    for (run = 0; run < r.runs; ++run) {
        const int8_t *xr = x + r.x_first + (int64_t)run * r.x_step;
        uint8_t *yr = y + 4 * (r.y_first + (int64_t)run * r.y_step);
        for (i = 0; i < r.count; ++i) {
            float v = (float)((int32_t)xr[i] - q.zero_point) * q.scale;
            memcpy(yr + 4u * i, &v, sizeof v);
        }
    }
}

static int8_t quantize_value(float x, const tgr_qparams *q)
{
    float v = roundf(x / q->scale);
    if (v != v) {
        return (int8_t)q->zero_point;
    }
    v += (float)q->zero_point;
    return (int8_t)(v < -128.0f ? -128 : v > 127.0f ? 127 : (int32_t)v);
}

/* Quantize of a float32 input; its int8 form is a table op (ops_activation.c). */
void tgr_run_quantize_float(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    const tgr_qparams q = tgr_qparams_of(p, op_output(p, o, 0));
    const uint8_t *x = tensor_ptr[op_input(p, o, 0)];
    int8_t *y = (int8_t *)tensor_ptr[op_output(p, o, 0)];
    pointwise_runs r;
    uint32_t run, i;
    runs_of(p, o, region, &r);
    for (run = 0; run < r.runs; ++run) {
        const uint8_t *xr = x + 4 * (r.x_first + (int64_t)run * r.x_step);
        int8_t *yr = y + r.y_first + (int64_t)run * r.y_step;
        for (i = 0; i < r.count; ++i) {
            float v;
            memcpy(&v, xr + 4u * i, sizeof v);
            yr[i] = quantize_value(v, &q);
        }
    }
}

tgr_status tgr_check_quantize_float(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    return check_conversion(p, o, err);
}

TGR_OP_IMPL(OP_DEQUANTIZE, TILING_POINTWISE | TILING_ROWS, check_conversion, run_dequantize);
TGR_OP_BANDS(OP_DEQUANTIZE, tgr_band_any_axis);
