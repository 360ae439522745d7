/*
 * Elementwise binary int8 kernels (kernels_act.h), one per kind.
 *
 *  - Add/Sub follow TFLite's quantized add (docs/execution.md#add-and-sub): both inputs are
 *    lifted by 2^20, scaled to a common scale by their own Q0.31 pairs, summed (or subtracted) and
 *    requantized to the output.
 *  - SquaredDifference is the same construction with a lift of 2^7, the difference squared and
 *    requantized by the output pair (2 max(s_a, s_b))^2 / (2^14 s_out).
 *  - Mul requantizes the product of the centred inputs by QM(s_a s_b / s_out)
 *    (docs/execution.md#other-binary-ops).
 *  - Max/Min compare raw codes: the loader only accepts them with one quantization throughout.
 *  - PRelu passes x - zp through QM(s_x / s_out) when non-negative, else scales
 *    (x - zp)(alpha - zp_alpha) by QM(s_x s_alpha / s_out).
 *  - Equal/Less/LessOrEqual/Greater/GreaterOrEqual compare both inputs lifted by 2^8 and scaled
 *    by QM of their own scale, writing bool 0/1; And/Or combine bool bytes.
 *
 * Operands are read with a step of 1 (same shape) or 0 (one broadcast value), so the callers'
 * broadcasting reduces to runs of a single kernel call.
 */
#include "kernels/fixedpoint.h"
#include "kernels/kernels.h"
#include "kernels/kernels_act.h"
#include "kernels/simd32.h"

#define ADD_LEFT_SHIFT 20
#define SQUARED_DIFF_LEFT_SHIFT 7

static int32_t lift_and_scale(int32_t code, int32_t zp, int left_shift, int32_t multiplier, int32_t shift)
{
    return fp_mul_by_quantized_multiplier((code - zp) * (1 << left_shift), multiplier, shift);
}

static int32_t add_one(const tgr_binary_params *q, int32_t a, int32_t b, int subtract)
{
    int32_t sa = lift_and_scale(a, q->a_zp, ADD_LEFT_SHIFT, q->multiplier[0], q->shift[0]);
    int32_t sb = lift_and_scale(b, q->b_zp, ADD_LEFT_SHIFT, q->multiplier[1], q->shift[1]);
    int32_t y = fp_mul_by_quantized_multiplier(subtract ? sa - sb : sa + sb, q->multiplier[2], q->shift[2]);
    return clamp_i32(y + q->out_zp, q->act_min, q->act_max);
}

static int32_t squared_diff_one(const tgr_binary_params *q, int32_t a, int32_t b)
{
    int32_t d = lift_and_scale(a, q->a_zp, SQUARED_DIFF_LEFT_SHIFT, q->multiplier[0], q->shift[0]) -
                lift_and_scale(b, q->b_zp, SQUARED_DIFF_LEFT_SHIFT, q->multiplier[1], q->shift[1]);
    int32_t y = fp_mul_by_quantized_multiplier(d * d, q->multiplier[2], q->shift[2]);
    return clamp_i32(y + q->out_zp, -128, 127);
}

static int32_t mul_one(const tgr_binary_params *q, int32_t a, int32_t b)
{
    int32_t y = fp_mul_by_quantized_multiplier((a - q->a_zp) * (b - q->b_zp), q->multiplier[0], q->shift[0]);
    return clamp_i32(y + q->out_zp, -128, 127);
}

static int32_t prelu_one(const tgr_binary_params *q, int32_t x, int32_t alpha)
{
    int32_t d = x - q->a_zp;
    int32_t y = d >= 0 ? fp_mul_by_quantized_multiplier(d, q->multiplier[0], q->shift[0])
                       : fp_mul_by_quantized_multiplier(d * (alpha - q->b_zp), q->multiplier[1], q->shift[1]);
    return clamp_i32(y + q->out_zp, -128, 127);
}

static int32_t compared(const tgr_binary_params *q, int32_t code, int b_side)
{
    return lift_and_scale(code, b_side ? q->b_zp : q->a_zp, q->lift, q->multiplier[b_side], q->shift[b_side]);
}

/* One function and one loop per kind: the kind is decided once per op, not per element, and a
 * firmware links only the kinds its plan uses. */
#define BINARY_KERNEL(name, expr)                                                                \
    int tgr_binary_##name##_s8(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, \
                               const int8_t *b, int32_t b_step, int8_t *output)                  \
    {                                                                                            \
        int32_t i;                                                                               \
        (void)q;                                                                                 \
        for (i = 0; i < count; ++i) {                                                            \
            int32_t x = a[i * a_step];                                                           \
            int32_t z = b[i * b_step];                                                           \
            output[i] = (int8_t)(expr);                                                          \
        }                                                                                        \
        return 1;                                                                                \
    }

#if TGR_SIMD_MVE
/* Add/Sub four elements at a time in the Helium build, each step of add_one on int32 lanes
 * (the lifted codes stay below 2^28, so no sum wraps where the scalar one would not); returns
 * how many elements it did, a multiple of 4. `a` is read with step 1, `b` with b_step. */
static int32_t add_mve(const tgr_binary_params *q, int32_t count, const int8_t *a, const int8_t *b, int32_t b_step,
                       int8_t *output, int subtract)
{
    const int32x4_t ma = vdupq_n_s32(q->multiplier[0]), sa = vdupq_n_s32(q->shift[0]);
    const int32x4_t mb = vdupq_n_s32(q->multiplier[1]), sb = vdupq_n_s32(q->shift[1]);
    const int32x4_t mo = vdupq_n_s32(q->multiplier[2]), so = vdupq_n_s32(q->shift[2]);
    const int32x4_t lo = vdupq_n_s32(q->act_min), hi = vdupq_n_s32(q->act_max);
    const int32x4_t b_scalar = mve_mul_by_quantized_multiplier(
        vdupq_n_s32(((int32_t)b[0] - q->b_zp) * (1 << ADD_LEFT_SHIFT)), mb, sb);
    int32_t i;
    for (i = 0; i + 4 <= count; i += 4) {
        const int32x4_t x = vshlq_n_s32(vsubq_n_s32(vldrbq_s32(a + i), q->a_zp), ADD_LEFT_SHIFT);
        const int32x4_t xs = mve_mul_by_quantized_multiplier(x, ma, sa);
        const int32x4_t zs = b_step == 0 ? b_scalar
                                         : mve_mul_by_quantized_multiplier(
                                               vshlq_n_s32(vsubq_n_s32(vldrbq_s32(b + i), q->b_zp), ADD_LEFT_SHIFT), mb, sb);
        int32x4_t y = mve_mul_by_quantized_multiplier(subtract ? vsubq_s32(xs, zs) : vaddq_s32(xs, zs), mo, so);
        y = vminq_s32(vmaxq_s32(vaddq_n_s32(y, q->out_zp), lo), hi);
        vstrbq_s32(output + i, y);
    }
    return i;
}
#endif

/* Add and Sub: the Helium build's four-lane loop where `a` is contiguous, then one by one. */
static void add_or_sub(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, const int8_t *b,
                       int32_t b_step, int8_t *output, int subtract)
{
    int32_t i = 0;
#if TGR_SIMD_MVE
    if (a_step == 1) {
        i = add_mve(q, count, a, b, b_step, output, subtract);
    }
#endif
    for (; i < count; ++i) {
        output[i] = (int8_t)add_one(q, a[i * a_step], b[i * b_step], subtract);
    }
}

int tgr_binary_add_s8(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, const int8_t *b,
                      int32_t b_step, int8_t *output)
{
    const tgr_binary_params p = *q; /* a local copy: the int8 stores could alias *q */
    add_or_sub(&p, count, a, a_step, b, b_step, output, 0);
    return 1;
}

int tgr_binary_sub_s8(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, const int8_t *b,
                      int32_t b_step, int8_t *output)
{
    const tgr_binary_params p = *q;
    add_or_sub(&p, count, a, a_step, b, b_step, output, 1);
    return 1;
}

/* One quotient (divisor code b != b_zp), exactly as the reference divides: with the divisor made
 * positive (both centred codes negated when it is negative), its reciprocal as a Q0.31
 * multiplier of 2^-(31 - clz) (one_over_one_plus_x of the normalised divisor), the dividend
 * normalised by its leading sign bits, their rounding doubling high product, then the output
 * pair applied with the summed shift (which can pass 31 to the right: rdbpot's 64-bit form).
 * Verified on every code pair of six quantizations against the reference. */
static int32_t div_one(const tgr_binary_params *q, int32_t a, int32_t b)
{
    int32_t dividend = a - q->a_zp;
    int32_t divisor = b - q->b_zp;
    int32_t divisor_clz, headroom, reciprocal, quotient, total_shift, y;
    if (divisor < 0) {
        dividend = -dividend;
        divisor = -divisor;
    }
    divisor_clz = fp_clz((uint32_t)divisor);
    reciprocal = fp_one_over_one_plus_x((int32_t)(((uint32_t)divisor << divisor_clz) - 0x80000000u));
    headroom = fp_clz(dividend >= 0 ? (uint32_t)dividend : ~(uint32_t)dividend) - 1;
    quotient = fp_srdhm((int32_t)((uint32_t)dividend << headroom), reciprocal);
    total_shift = q->shift[0] - (31 - divisor_clz) - headroom;
    if (total_shift > 0) {
        y = fp_srdhm((int32_t)((uint32_t)quotient << total_shift), q->multiplier[0]);
    } else {
        y = fp_rdbpot(fp_srdhm(quotient, q->multiplier[0]), -total_shift < 62 ? -total_shift : 62);
    }
    return clamp_i32(fp_wrap_add(y, q->out_zp), q->act_min, q->act_max);
}

int tgr_binary_div_s8(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, const int8_t *b,
                      int32_t b_step, int8_t *output)
{
    const tgr_binary_params p = *q;
    int32_t i;
    for (i = 0; i < count; ++i) {
        if (b[i * b_step] == p.b_zp) {
            return 0; /* a zero divisor: the reference fails the run */
        }
        output[i] = (int8_t)div_one(&p, a[i * a_step], b[i * b_step]);
    }
    return 1;
}

BINARY_KERNEL(mul, mul_one(q, x, z))
BINARY_KERNEL(max, x > z ? x : z)
BINARY_KERNEL(min, x < z ? x : z)
BINARY_KERNEL(squared_diff, squared_diff_one(q, x, z))
BINARY_KERNEL(prelu, prelu_one(q, x, z))
BINARY_KERNEL(equal, compared(q, x, 0) == compared(q, z, 1))
BINARY_KERNEL(less, compared(q, x, 0) < compared(q, z, 1))
BINARY_KERNEL(less_equal, compared(q, x, 0) <= compared(q, z, 1))
BINARY_KERNEL(greater, compared(q, x, 0) > compared(q, z, 1))
BINARY_KERNEL(greater_equal, compared(q, x, 0) >= compared(q, z, 1))
BINARY_KERNEL(and, x != 0 && z != 0)
BINARY_KERNEL(or, x != 0 || z != 0)

int8_t tgr_sum_finish(const tgr_qparams *in, const tgr_qparams *out, int32_t sum_of_differences)
{
    double v = round((double)(sum_of_differences - in->zero_point) * (double)in->scale / (double)out->scale);
    v = v > 65536.0 ? 65536.0 : (v < -65536.0 ? -65536.0 : v);
    return (int8_t)clamp_i32((int32_t)v + out->zero_point, -128, 127);
}

/* ---- int32 values ------------------------------------------------------------------------------ */

static int32_t load_s32(const int8_t *at)
{
    int32_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

/* Arithmetic in uint32, where C defines the wrap the reference shows (2 * -2147483647 - 1 = 1). */
#define BINARY_INT32_ARITHMETIC(name, op)                                                         \
    int tgr_binary_##name##_s32(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, \
                                const int8_t *b, int32_t b_step, int8_t *output)                   \
    {                                                                                             \
        int32_t i;                                                                                \
        (void)q;                                                                                  \
        for (i = 0; i < count; ++i) {                                                             \
            uint32_t y = (uint32_t)load_s32(a + i * a_step) op (uint32_t)load_s32(b + i * b_step);  \
            memcpy(output + 4 * i, &y, sizeof y);                                                 \
        }                                                                                         \
        return 1;                                                                                 \
    }
BINARY_INT32_ARITHMETIC(add, +)
BINARY_INT32_ARITHMETIC(sub, -)
BINARY_INT32_ARITHMETIC(mul, *)

#define BINARY_INT32_COMPARISON(name, op)                                                         \
    int tgr_binary_##name##_s32(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, \
                                const int8_t *b, int32_t b_step, int8_t *output)                   \
    {                                                                                             \
        int32_t i;                                                                                \
        (void)q;                                                                                  \
        for (i = 0; i < count; ++i) {                                                             \
            output[i] = (int8_t)(load_s32(a + i * a_step) op load_s32(b + i * b_step));             \
        }                                                                                         \
        return 1;                                                                                 \
    }
BINARY_INT32_COMPARISON(equal, ==)
BINARY_INT32_COMPARISON(less, <)
BINARY_INT32_COMPARISON(less_equal, <=)
BINARY_INT32_COMPARISON(greater, >)
BINARY_INT32_COMPARISON(greater_equal, >=)
