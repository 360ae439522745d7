/*
 * int8 Softmax over the last axis (docs/execution.md#softmax). Two methods, chosen from the
 * output quantization exactly as the reference runtime chooses them (tgr_softmax_is_integer),
 * each its own function so a firmware links only the one its plan takes (the float method is
 * what pulls libm's expf into an image):
 *  - output scale exactly 1/256 and zero point -128: TFLite's integer softmax (fixed-point
 *    exp of the scaled differences, Q12 accumulation, Newton reciprocal);
 *  - anything else: float32 exp/sum/divide/round.
 * The fixed-point pieces are written from the published gemmlowp/TFLite arithmetic.
 */
#include <math.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels.h"

#define SCALED_DIFF_INTEGER_BITS 5
#define ACCUMULATION_INTEGER_BITS 12

/* Saturating multiply by 2^exponent for a raw fixed-point value (exponent >= 0). */
static int32_t saturating_shift_left(int32_t x, int exponent)
{
    const int32_t limit = (int32_t)(INT32_MAX >> exponent);
    if (x > limit) {
        return INT32_MAX;
    }
    if (x < -limit - 1) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

static inline int32_t wrapping_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t wrapping_sub(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

/* exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor expansion around -1/8. */
static int32_t exp_on_interval_quarter(int32_t a)
{
    const int32_t exp_minus_one_eighth = 1895147668;
    const int32_t one_third = 715827883;
    const int32_t x = wrapping_add(a, (int32_t)1 << 28);
    const int32_t x2 = fp_srdhm(x, x);
    const int32_t x3 = fp_srdhm(x2, x);
    const int32_t x4 = fp_srdhm(x2, x2);
    const int32_t x4_over_4 = fp_rdbpot(x4, 2);
    const int32_t poly = fp_rdbpot(wrapping_add(fp_srdhm(wrapping_add(x4_over_4, x3), one_third), x2), 1);
    return wrapping_add(exp_minus_one_eighth, fp_srdhm(exp_minus_one_eighth, wrapping_add(x, poly)));
}

/* exp(a) for a <= 0 given in Q5.26; result in Q0.31. */
static int32_t exp_on_negative_values(int32_t a)
{
    static const int32_t multipliers[7] = {
        1672461947, /* exp(-1/4) */
        1302514674, /* exp(-1/2) */
        790015084,  /* exp(-1) */
        290630308,  /* exp(-2) */
        39332535,   /* exp(-4) */
        720401,     /* exp(-8) */
        242         /* exp(-16) */
    };
    const int fractional_bits = 31 - SCALED_DIFF_INTEGER_BITS;
    const int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
    const int32_t mask = one_quarter - 1;
    const int32_t a_mod_quarter_minus_quarter = wrapping_sub(a & mask, one_quarter);
    int32_t result = exp_on_interval_quarter(
        saturating_shift_left(a_mod_quarter_minus_quarter, SCALED_DIFF_INTEGER_BITS));
    const int32_t remainder = wrapping_sub(a_mod_quarter_minus_quarter, a);
    int k;
    for (k = 0; k < 7; ++k) {
        const int bit = fractional_bits - 2 + k;
        if (remainder & ((int32_t)1 << bit)) {
            result = fp_srdhm(result, multipliers[k]);
        }
    }
    return a == 0 ? INT32_MAX : result;
}

/* 1 / (1 + x) for x in [0, 1), Q0.31 in and out, by three Newton-Raphson steps in Q2.29. */
static int32_t one_over_one_plus_x(int32_t a)
{
    const int32_t constant_48_over_17 = 1515870810;
    const int32_t constant_neg_32_over_17 = -1010580540;
    const int32_t one_q2 = (int32_t)1 << 29;
    int64_t sum = (int64_t)a + INT32_MAX;
    int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t x = wrapping_add(constant_48_over_17, fp_srdhm(half_denominator, constant_neg_32_over_17));
    int i;
    for (i = 0; i < 3; ++i) {
        int32_t half_denominator_times_x = fp_srdhm(half_denominator, x);
        int32_t one_minus = wrapping_sub(one_q2, half_denominator_times_x);
        x = wrapping_add(x, saturating_shift_left(fp_srdhm(x, one_minus), 2));
    }
    return saturating_shift_left(x, 1);
}

static int count_leading_zeros(uint32_t x)
{
    int n = 0;
    if (x == 0u) {
        return 32;
    }
    while ((x & 0x80000000u) == 0u) {
        x <<= 1;
        ++n;
    }
    return n;
}

void tgr_softmax_integer_s8(int32_t rows, int32_t depth, const int8_t *input, const tgr_qparams *in,
                            int8_t *output)
{
    int32_t multiplier;
    int32_t left_shift;
    int32_t diff_min;
    int32_t r, c;
    double real_multiplier = (double)in->scale * (double)(1 << (31 - SCALED_DIFF_INTEGER_BITS));
    if (real_multiplier > 2147483647.0) {
        real_multiplier = 2147483647.0;
    }
    fp_quantize_multiplier(real_multiplier, &multiplier, &left_shift);
    diff_min = -(int32_t)floor(1.0 * ((1 << SCALED_DIFF_INTEGER_BITS) - 1) *
                               fp_pow2(31 - SCALED_DIFF_INTEGER_BITS) / fp_pow2(left_shift));
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + (int64_t)r * depth;
        int8_t *y = output + (int64_t)r * depth;
        int32_t max_value = -128;
        int32_t sum_of_exps = 0;
        int32_t headroom;
        int32_t bits_over_unit;
        int32_t reciprocal;
        for (c = 0; c < depth; ++c) {
            if (x[c] > max_value) {
                max_value = x[c];
            }
        }
        for (c = 0; c < depth; ++c) {
            int32_t diff = (int32_t)x[c] - max_value;
            if (diff >= diff_min) {
                int32_t scaled = fp_srdhm((int32_t)((uint32_t)diff << left_shift), multiplier);
                sum_of_exps = wrapping_add(sum_of_exps,
                                           fp_rdbpot(exp_on_negative_values(scaled),
                                                     ACCUMULATION_INTEGER_BITS));
            }
        }
        headroom = count_leading_zeros((uint32_t)sum_of_exps);
        bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom;
        reciprocal = one_over_one_plus_x(
            (int32_t)(((uint32_t)sum_of_exps << headroom) - 0x80000000u));
        for (c = 0; c < depth; ++c) {
            int32_t diff = (int32_t)x[c] - max_value;
            int32_t value = -128;
            if (diff >= diff_min) {
                int32_t scaled = fp_srdhm((int32_t)((uint32_t)diff << left_shift), multiplier);
                int32_t e = exp_on_negative_values(scaled);
                value = fp_rdbpot(fp_srdhm(reciprocal, e), bits_over_unit + 31 - 8) - 128;
            }
            y[c] = (int8_t)clamp_i32(value, -128, 127);
        }
    }
}

void tgr_softmax_float_s8(int32_t rows, int32_t depth, const int8_t *input, const tgr_qparams *in,
                          const tgr_qparams *out, int8_t *output)
{
    int32_t r, c;
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + (int64_t)r * depth;
        int8_t *y = output + (int64_t)r * depth;
        int32_t max_value = -128;
        float sum = 0.0f;
        for (c = 0; c < depth; ++c) {
            if (x[c] > max_value) {
                max_value = x[c];
            }
        }
        for (c = 0; c < depth; ++c) {
            sum += expf(in->scale * (float)((int32_t)x[c] - max_value));
        }
        for (c = 0; c < depth; ++c) {
            float e = expf(in->scale * (float)((int32_t)x[c] - max_value));
            float q = roundf((e / sum) / out->scale) + (float)out->zero_point;
            if (q < -128.0f) {
                q = -128.0f;
            } else if (q > 127.0f) {
                q = 127.0f;
            }
            y[c] = (int8_t)q;
        }
    }
}

int tgr_softmax_is_integer(const tgr_qparams *out)
{
    return out->scale == 1.0f / 256.0f && out->zero_point == -128;
}
