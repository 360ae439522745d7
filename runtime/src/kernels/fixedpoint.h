/*
 * Integer requantization primitives shared by every int8 kernel
 * (docs/execution.md#requantization-primitives).
 *
 * They follow TFLite's two-step rounding (a rounding doubling high multiply, then a rounding
 * right shift). A single exact rounding of acc * M * 2^(shift-31) differs in ~0.4 % of cases,
 * so nothing here may be "simplified" into one multiply or into float.
 */
#ifndef TGR_FIXEDPOINT_H
#define TGR_FIXEDPOINT_H

#include <math.h>
#include <stdint.h>

/* Saturating rounding doubling high multiply: TFLite's (a * b + nudge) / 2^31 with nudge 2^30
 * for a non-negative product and 1 - 2^30 for a negative one, the division truncating. For a
 * negative product that truncation is a ceiling, and ceil((p + 1 - 2^30) / 2^31) equals
 * floor((p + 2^30) / 2^31): one add and one arithmetic shift for every sign, exactly. */
static inline int32_t fp_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

/* Rounding arithmetic right shift by `exponent` (0..62), ties away from zero. */
static inline int32_t fp_rdbpot(int32_t x, int exponent)
{
    int64_t mask = ((int64_t)1 << exponent) - 1;
    int64_t remainder = (int64_t)x & mask;
    int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    int64_t shifted = (int64_t)x >> exponent;
    return (int32_t)(shifted + (remainder > threshold ? 1 : 0));
}

/* fp_rdbpot for `exponent` 0..31, in 32-bit arithmetic (the same values: the remainder and the
 * threshold stay below 2^31). */
static inline int32_t fp_rdbpot31(int32_t x, int exponent)
{
    const uint32_t mask = (1u << exponent) - 1u;
    const uint32_t remainder = (uint32_t)x & mask;
    const uint32_t threshold = (mask >> 1) + (x < 0 ? 1u : 0u);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* x * M * 2^(shift - 31) with TFLite rounding; shift > 0 is a left shift (|shift| <= 31).
 * The left shift wraps like the two's-complement int32 multiply it stands for. */
static inline int32_t fp_mul_by_quantized_multiplier(int32_t x, int32_t multiplier, int32_t shift)
{
    int left = shift > 0 ? (int)shift : 0;
    int right = shift > 0 ? 0 : (int)-shift;
    int32_t scaled = (int32_t)((uint32_t)x << left);
    return fp_rdbpot31(fp_srdhm(scaled, multiplier), right);
}

/* fp_mul_by_quantized_multiplier for a multiplier other than INT32_MIN (every pair the loader
 * validates: 0 or at least 2^30), where fp_srdhm's one saturating case cannot arise: the kernels'
 * per-output requantization, without that test. The _lr form takes the shift split once into its
 * left (shift > 0 ? shift : 0) and right (left - shift) parts, for kernels that keep them per channel. */
static inline int32_t fp_mul_by_valid_multiplier_lr(int32_t x, int32_t multiplier, int left, int right)
{
    const int64_t product = (int64_t)(int32_t)((uint32_t)x << left) * (int64_t)multiplier;
    return fp_rdbpot31((int32_t)((product + ((int64_t)1 << 30)) >> 31), right);
}

static inline int32_t fp_mul_by_valid_multiplier(int32_t x, int32_t multiplier, int32_t shift)
{
    const int left = shift > 0 ? (int)shift : 0;
    return fp_mul_by_valid_multiplier_lr(x, multiplier, left, left - (int)shift);
}

/* 2^e as a double, exactly (no rounding: doubling and halving are exact in range), without the
 * 64-bit integer conversion (double)((int64_t)1 << e) would link from libgcc. */
static inline double fp_pow2(int32_t e)
{
    double p = 1.0;
    for (; e > 0; --e) {
        p *= 2.0;
    }
    for (; e < 0; ++e) {
        p *= 0.5;
    }
    return p;
}

/* Multiplier/shift pair of a positive real scale, exactly as the compiler's (and TFLite's)
 * QuantizeMultiplier: frexp, round half away from zero to Q0.31, (0, 0) when it underflows. */
static inline void fp_quantize_multiplier(double scale, int32_t *multiplier, int32_t *shift)
{
    int exponent = 0;
    double fraction;
    int64_t q;
    if (scale == 0.0 || scale != scale || scale > 1e300 || scale < -1e300) {
        /* Zero, NaN or infinity: no pair; the op checks refuse the plans that would need one. */
        *multiplier = 0;
        *shift = 0;
        return;
    }
    fraction = frexp(scale, &exponent);
    /* |fraction| is in [0.5, 1), so the rounded magnitude fits 32 unsigned bits and converts with
     * one FPU instruction instead of libgcc's 64-bit helpers; round() is symmetric about zero. */
    q = (int64_t)(uint32_t)round(fabs(fraction) * 2147483648.0);
    q = fraction < 0.0 ? -q : q;
    if (q == ((int64_t)1 << 31)) {
        q /= 2;
        ++exponent;
    }
    if (exponent < -31) {
        *multiplier = 0;
        *shift = 0;
        return;
    }
    *multiplier = (int32_t)q;
    *shift = exponent;
}

/* Two's-complement int32 add and subtract (they wrap, as the reference's int32 arithmetic does). */
static inline int32_t fp_wrap_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t fp_wrap_sub(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

/* x * 2^exponent (exponent >= 0) saturated to int32: a raw fixed-point value moved to fewer
 * integer bits. */
static inline int32_t fp_saturating_shift_left(int32_t x, int exponent)
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

/* a + b and a - b saturated to int32. */
static inline int32_t fp_saturating_add(int32_t a, int32_t b)
{
    const int64_t v = (int64_t)a + b;
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

static inline int32_t fp_saturating_sub(int32_t a, int32_t b)
{
    const int64_t v = (int64_t)a - b;
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* (a + b) / 2 rounded half away from zero (gemmlowp's RoundingHalfSum), in 64 bits. */
static inline int32_t fp_rounding_half_sum(int32_t a, int32_t b)
{
    const int64_t sum = (int64_t)a + b;
    return (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/* Leading zero bits of a 32-bit pattern; 32 for 0. Five halvings rather than a bit-by-bit loop:
 * Div asks it per element. */
static inline int fp_clz(uint32_t x)
{
    int n = 0;
    if (x == 0u) {
        return 32;
    }
    if ((x & 0xFFFF0000u) == 0u) { n += 16; x <<= 16; }
    if ((x & 0xFF000000u) == 0u) { n += 8; x <<= 8; }
    if ((x & 0xF0000000u) == 0u) { n += 4; x <<= 4; }
    if ((x & 0xC0000000u) == 0u) { n += 2; x <<= 2; }
    if ((x & 0x80000000u) == 0u) { n += 1; }
    return n;
}

/* 1 / (1 + x) for x in [0, 1), Q0.31 in and out, by three Newton-Raphson steps in Q2.29
 * (gemmlowp's one_over_one_plus_x_for_x_in_0_1): Softmax, LogSoftmax and Div use it. */
static inline int32_t fp_one_over_one_plus_x(int32_t a)
{
    const int32_t constant_48_over_17 = 1515870810;
    const int32_t constant_neg_32_over_17 = -1010580540;
    const int32_t one_q2 = (int32_t)1 << 29;
    int32_t half_denominator = fp_rounding_half_sum(a, INT32_MAX);
    int32_t x = fp_wrap_add(constant_48_over_17, fp_srdhm(half_denominator, constant_neg_32_over_17));
    int i;
    for (i = 0; i < 3; ++i) {
        int32_t half_denominator_times_x = fp_srdhm(half_denominator, x);
        int32_t one_minus = fp_wrap_sub(one_q2, half_denominator_times_x);
        x = fp_wrap_add(x, fp_saturating_shift_left(fp_srdhm(x, one_minus), 2));
    }
    return fp_saturating_shift_left(x, 1);
}

static inline int32_t clamp_i32(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

#endif /* TGR_FIXEDPOINT_H */
