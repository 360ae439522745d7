/*
 * Elementwise binary int8 kernels (kernels_act.h; Add/Sub also behind kernels.h).
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

/* One loop per kind, so the kind is decided once per run rather than per element. */
#define BINARY_LOOP(expr)                                                                        \
    for (i = 0; i < count; ++i) {                                                                \
        int32_t x = a[i * a_step];                                                               \
        int32_t z = b[i * b_step];                                                               \
        output[i] = (int8_t)(expr);                                                              \
    }

void tgr_binary_s8(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, const int8_t *b,
                   int32_t b_step, int8_t *output)
{
    int32_t i;
    switch (q->kind) {
    case TGR_BIN_ADD: BINARY_LOOP(add_one(q, x, z, 0)) break;
    case TGR_BIN_SUB: BINARY_LOOP(add_one(q, x, z, 1)) break;
    case TGR_BIN_MUL: BINARY_LOOP(mul_one(q, x, z)) break;
    case TGR_BIN_MAX: BINARY_LOOP(x > z ? x : z) break;
    case TGR_BIN_MIN: BINARY_LOOP(x < z ? x : z) break;
    case TGR_BIN_SQUARED_DIFF: BINARY_LOOP(squared_diff_one(q, x, z)) break;
    case TGR_BIN_PRELU: BINARY_LOOP(prelu_one(q, x, z)) break;
    case TGR_BIN_EQUAL: BINARY_LOOP(compared(q, x, 0) == compared(q, z, 1)) break;
    case TGR_BIN_LESS: BINARY_LOOP(compared(q, x, 0) < compared(q, z, 1)) break;
    case TGR_BIN_LESS_EQUAL: BINARY_LOOP(compared(q, x, 0) <= compared(q, z, 1)) break;
    case TGR_BIN_GREATER: BINARY_LOOP(compared(q, x, 0) > compared(q, z, 1)) break;
    case TGR_BIN_GREATER_EQUAL: BINARY_LOOP(compared(q, x, 0) >= compared(q, z, 1)) break;
    case TGR_BIN_AND: BINARY_LOOP(x != 0 && z != 0) break;
    case TGR_BIN_OR: BINARY_LOOP(x != 0 || z != 0) break;
    }
}

void tgr_add_s8(int32_t count, const int8_t *a, const int8_t *b, const tgr_add_params *q, int subtract,
                int8_t *output)
{
    tgr_binary_params bq;
    bq.kind = subtract ? TGR_BIN_SUB : TGR_BIN_ADD;
    bq.a_zp = q->a_zp;
    bq.b_zp = q->b_zp;
    bq.out_zp = q->out_zp;
    bq.multiplier[0] = q->a_multiplier;
    bq.shift[0] = q->a_shift;
    bq.multiplier[1] = q->b_multiplier;
    bq.shift[1] = q->b_shift;
    bq.multiplier[2] = q->out_multiplier;
    bq.shift[2] = q->out_shift;
    bq.act_min = q->act_min;
    bq.act_max = q->act_max;
    tgr_binary_s8(&bq, count, a, 1, b, 1, output);
}

int8_t tgr_sum_finish(const tgr_qparams *in, const tgr_qparams *out, int32_t sum_of_differences)
{
    double v = round((double)(sum_of_differences - in->zero_point) * (double)in->scale / (double)out->scale);
    v = v > 65536.0 ? 65536.0 : (v < -65536.0 ? -65536.0 : v);
    return (int8_t)clamp_i32((int32_t)v + out->zero_point, -128, 127);
}
