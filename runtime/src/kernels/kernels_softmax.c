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

/* exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor expansion around -1/8. */
static int32_t exp_on_interval_quarter(int32_t a)
{
    const int32_t exp_minus_one_eighth = 1895147668;
    const int32_t one_third = 715827883;
    const int32_t x = fp_wrap_add(a, (int32_t)1 << 28);
    const int32_t x2 = fp_srdhm(x, x);
    const int32_t x3 = fp_srdhm(x2, x);
    const int32_t x4 = fp_srdhm(x2, x2);
    const int32_t x4_over_4 = fp_rdbpot(x4, 2);
    const int32_t poly = fp_rdbpot(fp_wrap_add(fp_srdhm(fp_wrap_add(x4_over_4, x3), one_third), x2), 1);
    return fp_wrap_add(exp_minus_one_eighth, fp_srdhm(exp_minus_one_eighth, fp_wrap_add(x, poly)));
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
    const int32_t a_mod_quarter_minus_quarter = fp_wrap_sub(a & mask, one_quarter);
    int32_t result = exp_on_interval_quarter(
        fp_saturating_shift_left(a_mod_quarter_minus_quarter, SCALED_DIFF_INTEGER_BITS));
    const int32_t remainder = fp_wrap_sub(a_mod_quarter_minus_quarter, a);
    int k;
    for (k = 0; k < 7; ++k) {
        const int bit = fractional_bits - 2 + k;
        if (remainder & ((int32_t)1 << bit)) {
            result = fp_srdhm(result, multipliers[k]);
        }
    }
    return a == 0 ? INT32_MAX : result;
}

/* The scaling of input differences into Q5.26 shared by Softmax's integer method and
 * LogSoftmax: the multiplier/shift of min(s_in * 2^26, 2^31 - 1) and the smallest difference
 * that still counts (diff_min), in double as the reference derives them. */
static void difference_scaling(float input_scale, int32_t *multiplier, int32_t *left_shift, int32_t *diff_min)
{
    double real_multiplier = (double)input_scale * (double)(1 << (31 - SCALED_DIFF_INTEGER_BITS));
    if (real_multiplier > 2147483647.0) {
        real_multiplier = 2147483647.0;
    }
    fp_quantize_multiplier(real_multiplier, multiplier, left_shift);
    *diff_min = -(int32_t)floor(1.0 * ((1 << SCALED_DIFF_INTEGER_BITS) - 1) *
                                fp_pow2(31 - SCALED_DIFF_INTEGER_BITS) / fp_pow2(*left_shift));
}

void tgr_softmax_integer_s8(int32_t rows, int32_t depth, const int8_t *input, const tgr_qparams *in,
                            int8_t *output)
{
    int32_t multiplier;
    int32_t left_shift;
    int32_t diff_min;
    int32_t r, c;
    difference_scaling(in->scale, &multiplier, &left_shift, &diff_min);
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
                sum_of_exps = fp_wrap_add(sum_of_exps,
                                           fp_rdbpot(exp_on_negative_values(scaled),
                                                     ACCUMULATION_INTEGER_BITS));
            }
        }
        headroom = fp_clz((uint32_t)sum_of_exps);
        bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom;
        reciprocal = fp_one_over_one_plus_x(
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

/* ln(z) for a Q12.19 z >= 1.0, in Q5.26: the reference's fixed-point logarithm (normalise z by
 * a power of two, with and without a factor 2^-1/2, to a mantissa near 2^-1/4; a rational
 * approximation around it; the exponent in Q6.25). Not an exactly rounded logarithm: that one
 * differs on rare rows. Constants in Q0.31. */
static int32_t log_q12_19(int32_t z)
{
    const int32_t ln2 = 1488522236;           /* ln 2 */
    const int32_t rsqrt2 = 1518500250;        /* 2^-1/2 */
    const int32_t fourth_root_half = 1805811301; /* 2^-1/4 */
    const int32_t num_coeff = 117049297;      /* 11/240 * 2^1/4 */
    const int32_t den_coeff = 127690142;      /* 1/20 * 2^1/4 */
    const int32_t den_base = 1057819769;      /* 2 * 2^-1/4 - 2^1/4 */
    const int32_t den_linear = 638450708;     /* 1/4 * 2^1/4 */
    const int32_t quarter_q6_25 = 1 << 23;
    const int shift_a = fp_clz((uint32_t)z);
    const int32_t mant_a = fp_saturating_shift_left(fp_srdhm(fp_saturating_shift_left(z, shift_a - 1), rsqrt2), 1);
    const int32_t exp_a = fp_saturating_add(fp_saturating_shift_left(12 - shift_a, 25), quarter_q6_25);
    const int shift_b = fp_clz((uint32_t)fp_srdhm(z, rsqrt2)) - 1;
    const int32_t mant_b = fp_saturating_shift_left(z, shift_b);
    const int32_t exp_b = fp_saturating_sub(fp_saturating_shift_left(12 - shift_b, 25), quarter_q6_25);
    const int32_t r = mant_a < mant_b ? mant_a : mant_b;
    const int32_t exponent = exp_a > exp_b ? exp_a : exp_b;
    const int32_t half_sum = fp_rounding_half_sum(r, fourth_root_half);
    int32_t q = fp_wrap_sub(r, fourth_root_half);
    int32_t q2, num, den, acc;
    q = fp_wrap_add(q, q);
    q2 = fp_srdhm(q, q);
    num = fp_wrap_add(fp_srdhm(q, r), fp_srdhm(fp_srdhm(q, q2), num_coeff));
    den = fp_wrap_add(fp_srdhm(half_sum, fp_wrap_add(fp_wrap_add(den_base, q), fp_srdhm(den_coeff, q2))),
                      fp_srdhm(den_linear, q));
    acc = fp_wrap_add(fp_srdhm(exponent, ln2), fp_srdhm(fp_rdbpot(num, 6), fp_one_over_one_plus_x(den)));
    return fp_saturating_shift_left(acc, 1);
}

#define LOG_SOFTMAX_OUTPUT_SHIFT 22 /* Q5.26 to the output's 1/16 steps: 31 - 5 - 4 */
#define LOG_SOFTMAX_OUTPUT_ZERO_POINT 127

int tgr_log_softmax_s8(int32_t rows, int32_t depth, const int8_t *input, const tgr_qparams *in, int8_t *output)
{
    int32_t multiplier, left_shift, diff_min, cut_multiplier, cut_shift;
    int32_t r, c;
    difference_scaling(in->scale, &multiplier, &left_shift, &diff_min);
    /* The difference whose scaled value is L - 2^31 (below it, dq - L leaves int32). */
    fp_quantize_multiplier(fp_pow2(31 - left_shift) / (double)multiplier, &cut_multiplier, &cut_shift);
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + (int64_t)r * depth;
        int8_t *y = output + (int64_t)r * depth;
        int32_t max_value = -128;
        int64_t sum = 0;
        int32_t log_sum, cut;
        for (c = 0; c < depth; ++c) {
            max_value = x[c] > max_value ? x[c] : max_value;
        }
        for (c = 0; c < depth; ++c) {
            const int32_t diff = (int32_t)x[c] - max_value;
            if (diff >= diff_min) {
                const int32_t scaled = fp_srdhm((int32_t)((uint32_t)diff << left_shift), multiplier);
                sum += fp_rdbpot(exp_on_negative_values(scaled), ACCUMULATION_INTEGER_BITS);
            }
        }
        if (sum > INT32_MAX) {
            return 0;
        }
        log_sum = log_q12_19((int32_t)sum);
        cut = fp_mul_by_quantized_multiplier(fp_wrap_add(log_sum, INT32_MIN), cut_multiplier, cut_shift);
        cut = cut > diff_min - 1 ? cut : diff_min - 1;
        for (c = 0; c < depth; ++c) {
            const int32_t diff = (int32_t)x[c] - max_value;
            int32_t value = -128;
            if (diff > cut) {
                const int32_t scaled = fp_srdhm((int32_t)((uint32_t)diff << left_shift), multiplier);
                value = fp_rdbpot(fp_wrap_sub(scaled, log_sum), LOG_SOFTMAX_OUTPUT_SHIFT) + LOG_SOFTMAX_OUTPUT_ZERO_POINT;
            }
            y[c] = (int8_t)clamp_i32(value, -128, 127);
        }
    }
    return 1;
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
