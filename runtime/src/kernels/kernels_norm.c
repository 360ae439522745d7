/*
 * Integer inverse square roots: L2Normalization and Rsqrt (docs/execution.md#l2normalization-and-rsqrt),
 * as the reference computes them. Both rest on INVSQRT: 1/sqrt(v) of an integer v as a Q0.31
 * multiplier and a non-positive shift, by five Newton steps in Q3.28 from 1.0 (which do not fully
 * converge for small mantissas: that residual is part of the arithmetic), then the two-step
 * requantization of fixedpoint.h.
 */
#include <math.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels.h"

/* 1/sqrt(v) ~ (multiplier / 2^31) * 2^shift, shift <= 0; v <= 1 (0 included) gives (2^31 - 1, 0). */
static void inverse_sqrt(int32_t v, int32_t *multiplier, int32_t *shift)
{
    const int32_t three_halves_q3_28 = 3 * (1 << 27);
    int32_t e = 11, n, half, x, k;
    if (v <= 1) {
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    while (v >= (1 << 29)) {
        v /= 4;
        ++e;
    }
    n = (fp_clz((uint32_t)v) - 1) / 2 - 1;
    e -= n;
    v = (int32_t)((uint32_t)v << (2 * n)); /* now 2^27 <= v < 2^29 */
    half = fp_rdbpot(v >> 1, 1);
    x = 1 << 28;
    for (k = 0; k < 5; ++k) {
        const int32_t cube = fp_saturating_shift_left(fp_srdhm(fp_srdhm(x, x), x), 6);
        x = fp_saturating_shift_left(fp_wrap_sub(fp_srdhm(three_halves_q3_28, x), fp_srdhm(half, cube)), 3);
    }
    x = fp_srdhm(x, 1518500250); /* sqrt(2)/2 */
    if (e < 0) {
        x = (int32_t)((uint32_t)x << -e);
        e = 0;
    }
    *multiplier = x;
    *shift = -e;
}

#define L2_OUTPUT_SHIFT 7 /* the output's fixed 2^-7 scale */

int tgr_l2_normalize_s8(int32_t rows, int32_t depth, const int8_t *input, int32_t in_zp, int8_t *output)
{
    int32_t r, c;
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + (int64_t)r * depth;
        int8_t *y = output + (int64_t)r * depth;
        int64_t squares = 0;
        int32_t multiplier, shift;
        for (c = 0; c < depth; ++c) {
            const int32_t v = (int32_t)x[c] - in_zp;
            squares += (int64_t)v * v;
        }
        if (squares > INT32_MAX) {
            return 0;
        }
        inverse_sqrt((int32_t)squares, &multiplier, &shift);
        for (c = 0; c < depth; ++c) {
            const int32_t v = (int32_t)x[c] - in_zp;
            y[c] = (int8_t)clamp_i32(fp_mul_by_quantized_multiplier(v, multiplier, shift + L2_OUTPUT_SHIFT), -128, 127);
        }
    }
    return 1;
}

#define RSQRT_FRACTION_BITS 20 /* 1/sqrt(v) is formed with 20 fractional bits */

int tgr_rsqrt_output_pair(const tgr_qparams *in, const tgr_qparams *out, int32_t *multiplier, int32_t *shift)
{
    /* sqrt and product rounded to float32, the reciprocal in double: both roundings matter. */
    const float denominator = sqrtf(in->scale) * out->scale;
    fp_quantize_multiplier(1.0 / (double)denominator, multiplier, shift);
    return *shift - RSQRT_FRACTION_BITS >= -31 && *shift - RSQRT_FRACTION_BITS <= 10;
}

void tgr_rsqrt_table(const tgr_qparams *in, const tgr_qparams *out, int32_t multiplier, int32_t shift, int8_t *lut)
{
    int32_t code;
    for (code = -128; code <= 127; ++code) {
        const int32_t v = code - in->zero_point;
        int32_t y = 127; /* v == 0: the reference's value whatever the output quantization */
        if (v < 0) {
            y = 0; /* never read: a run with such an element fails (tgr_rsqrt_fits) */
        } else if (v > 0) {
            int32_t m, s, t;
            inverse_sqrt(v, &m, &s);
            t = fp_mul_by_quantized_multiplier(1, m, s + RSQRT_FRACTION_BITS);
            y = clamp_i32(fp_wrap_add(fp_mul_by_quantized_multiplier(t, multiplier, shift - RSQRT_FRACTION_BITS),
                                      out->zero_point), -128, 127);
        }
        lut[code + 128] = (int8_t)y;
    }
}

int tgr_rsqrt_fits(int32_t count, const int8_t *input, int32_t in_zp)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        if ((int32_t)input[i] < in_zp) {
            return 0;
        }
    }
    return 1;
}
