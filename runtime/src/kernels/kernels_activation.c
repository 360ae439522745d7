/*
 * Unary int8 activations as 256-entry lookup tables (kernels_act.h). Every unary op maps an
 * input code to an output code independently of its neighbours, so the table is exact: each
 * entry is the op's arithmetic applied to that code, and applying the table is a byte lookup.
 * Tables are built per call on the caller's stack (256 bytes), so nothing is kept between runs.
 *
 * The formulas are the reference runtime's, found by exhaustive experiment; several use float
 * or double on purpose (see each function). Float expressions are written one operation at a
 * time in the order the reference evaluates them; -std=c99 keeps the compiler from contracting
 * them into fused multiply-adds.
 */
#include <math.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels_act.h"

static int8_t saturate_s8(int32_t v) { return (int8_t)clamp_i32(v, -128, 127); }

/* Rounded value as an int32, saturated far beyond any int8 result so the conversion stays
 * defined for extreme scales (a tiny output scale can push a quotient past INT32_MAX). */
static int32_t round_double(double v)
{
    v = round(v);
    return v > 65536.0 ? 65536 : (v < -65536.0 ? -65536 : (int32_t)v);
}

static int32_t round_float(float v) { return round_double((double)roundf(v)); }

/* round_half_away(d * s_in / s_out) in double, as the reference's float requantization. The
 * product is formed first: d * (s_in / s_out) rounds differently for some codes. */
static int32_t requantize_double(int32_t d, const tgr_qparams *in, const tgr_qparams *out)
{
    return round_double((double)d * (double)in->scale / (double)out->scale);
}

void tgr_lut_relu(const tgr_qparams *in, const tgr_qparams *out, int relu6, int8_t *lut)
{
    /* The six-clamp is an input code count: d <= roundf(6 / s_in). It only bites below 256. */
    float six_codes = 6.0f / in->scale;
    int32_t cap = relu6 && six_codes < 256.0f ? (int32_t)roundf(six_codes) : 256;
    int32_t code;
    for (code = -128; code < 128; ++code) {
        int32_t d = clamp_i32(code - in->zero_point, 0, cap);
        lut[code + 128] = saturate_s8(requantize_double(d, in, out) + out->zero_point);
    }
}

void tgr_lut_requantize(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut)
{
    int32_t multiplier, shift, code;
    fp_quantize_multiplier((double)in->scale / (double)out->scale, &multiplier, &shift);
    for (code = -128; code < 128; ++code) {
        int32_t y = fp_mul_by_quantized_multiplier(code - in->zero_point, multiplier, shift);
        lut[code + 128] = saturate_s8(y + out->zero_point);
    }
}

void tgr_lut_abs(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut)
{
    /* The ratio is a float32 division, widened only for QuantizeMultiplier. */
    float ratio = in->scale / out->scale;
    int32_t multiplier, shift, code;
    fp_quantize_multiplier((double)ratio, &multiplier, &shift);
    for (code = -128; code < 128; ++code) {
        int32_t d = code - in->zero_point;
        int32_t y = fp_mul_by_quantized_multiplier(d < 0 ? -d : d, multiplier, shift);
        lut[code + 128] = saturate_s8(y + out->zero_point);
    }
}

/* Dequantized input code in float32: s_in * (code - zp_in). */
static float dequantize_f32(int32_t code, const tgr_qparams *in)
{
    return in->scale * (float)(code - in->zero_point);
}

static int8_t quantize_div_f32(float f, const tgr_qparams *out)
{
    float v = f / out->scale;
    return saturate_s8(round_float(v) + out->zero_point);
}

void tgr_lut_sigmoid(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut)
{
    int32_t code;
    for (code = -128; code < 128; ++code) {
        float real = dequantize_f32(code, in);
        float f = 1.0f / (1.0f + expf(-real));
        lut[code + 128] = quantize_div_f32(f, out);
    }
}

void tgr_lut_tanh(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut)
{
    int32_t code;
    for (code = -128; code < 128; ++code) {
        lut[code + 128] = quantize_div_f32(tanhf(dequantize_f32(code, in)), out);
    }
}

void tgr_lut_gelu(const tgr_qparams *in, const tgr_qparams *out, int tanh_form, int8_t *lut)
{
    /* Every float32 arrangement of either form tried (erf of x / sqrt(2) or x * (1 / sqrt(2)),
     * tanh of k * (x + 0.044715 x^3) in several orders, double, dividing or multiplying by the
     * reciprocal scale) gives the reference's table on 300 random scale sets; this is one. */
    const float sqrt_2_over_pi = 0.7978845608028654f;
    int32_t code;
    for (code = -128; code < 128; ++code) {
        float x = dequantize_f32(code, in);
        float inner = tanh_form ? tanhf(sqrt_2_over_pi * (x + 0.044715f * x * x * x)) : erff(x / sqrtf(2.0f));
        lut[code + 128] = quantize_div_f32(0.5f * x * (1.0f + inner), out);
    }
}

void tgr_lut_not(int8_t *lut)
{
    int32_t code;
    for (code = -128; code < 128; ++code) {
        lut[code + 128] = (int8_t)(code == 0 ? 1 : 0);
    }
}

/* The code Cast writes for true: round(1 / s_out) + zp_out. The reference's rounding of a tie
 * is not known, so scales where float32 and double round 1 / s_out differently are refused. */
static float cast_true_value(const tgr_qparams *out) { return roundf(1.0f / out->scale); }

int tgr_cast_bool_exact(const tgr_qparams *out)
{
    return out->scale > 0.0f && (double)cast_true_value(out) == round(1.0 / (double)out->scale);
}

void tgr_lut_cast_bool(const tgr_qparams *out, int8_t *lut)
{
    int8_t true_code = saturate_s8(round_float(cast_true_value(out)) + out->zero_point);
    int32_t code;
    for (code = -128; code < 128; ++code) {
        lut[code + 128] = code != 0 ? true_code : (int8_t)clamp_i32(out->zero_point, -128, 127);
    }
}

void tgr_lut_elu(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut)
{
    /* Elu quantizes by multiplying with the reciprocal scale (not dividing), and uses
     * expf(x) - 1 (not expm1f): both were told apart by experiment. */
    float inverse = 1.0f / out->scale;
    int32_t code;
    for (code = -128; code < 128; ++code) {
        float real = dequantize_f32(code, in);
        float f = real < 0.0f ? expf(real) - 1.0f : real;
        float v = f * inverse;
        lut[code + 128] = saturate_s8(round_float(v) + out->zero_point);
    }
}

void tgr_lut_leaky_relu(const tgr_qparams *in, const tgr_qparams *out, float alpha, int8_t *lut)
{
    /* Both ratios are float32 products/quotients, (alpha * s_in) / s_out in that order. */
    float identity = in->scale / out->scale;
    float slope_product = alpha * in->scale;
    float slope = slope_product / out->scale;
    int32_t id_multiplier, id_shift, slope_multiplier, slope_shift, code;
    fp_quantize_multiplier((double)identity, &id_multiplier, &id_shift);
    fp_quantize_multiplier(fabs((double)slope), &slope_multiplier, &slope_shift);
    for (code = -128; code < 128; ++code) {
        int32_t d = code - in->zero_point;
        int32_t y;
        if (d >= 0) {
            y = fp_mul_by_quantized_multiplier(d, id_multiplier, id_shift);
        } else {
            /* A negative slope scales by |slope| and negates the result, which rounds exact
             * halves differently from a negative multiplier. */
            y = fp_mul_by_quantized_multiplier(d, slope_multiplier, slope_shift);
            y = slope < 0.0f ? -y : y;
        }
        lut[code + 128] = saturate_s8(y + out->zero_point);
    }
}

/* ---- HardSwish ------------------------------------------------------------------------------
 * int16 fixed point: the input is lifted to a "hires" scale s_in / 128 (x * 128 fits int16),
 * scaled once to the output scale and once to the relu-ish scale 3 / 32768, where it is
 * saturated to [-1, 1) and mapped to [0, 1) as relu6(x + 3) / 6; the two are multiplied and
 * shifted to the output. Multipliers are the Q31 pairs rounded to Q15. The final product
 * truncates (no rounding nudge); every other step rounds. */

#define HARD_SWISH_HIRES_SHIFT 7

static int32_t q15_of_q31(int32_t multiplier)
{
    if (multiplier >= INT32_MAX - (1 << 15)) {
        return INT16_MAX;
    }
    return (multiplier + (1 << 15)) >> 16;
}

static int32_t saturate_s16(int64_t v) { return v > INT16_MAX ? INT16_MAX : (v < INT16_MIN ? INT16_MIN : (int32_t)v); }

/* Rounding doubling high multiply of two int16 values: round(a * b / 2^15). */
static int32_t srdhm_s16(int32_t a, int32_t b)
{
    int32_t product, nudge;
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    product = a * b;
    nudge = product >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (product + nudge) / (1 << 15);
}

/* The same without the rounding nudge (C division truncates toward zero). */
static int32_t sdhm_s16(int32_t a, int32_t b)
{
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    return (a * b) / (1 << 15);
}

static int32_t saturating_shift_s16(int32_t v, int32_t shift)
{
    /* Anything >= 16 saturates every non-zero int16 value; cap it so the shift stays defined. */
    return saturate_s16((int64_t)v * ((int64_t)1 << (shift > 16 ? 16 : shift)));
}

typedef struct hard_swish_params {
    int32_t out_multiplier, out_shift;      /* Q15 and exponent of (s_in / 128) / s_out */
    int32_t relu_multiplier, relu_shift;    /* Q15 and exponent of (s_in / 128) / (3 / 32768) */
} hard_swish_params;

static void hard_swish_prepare(const tgr_qparams *in, const tgr_qparams *out, hard_swish_params *h)
{
    double hires = (double)in->scale / (double)(1 << HARD_SWISH_HIRES_SHIFT);
    int32_t m;
    fp_quantize_multiplier(hires / (double)out->scale, &m, &h->out_shift);
    h->out_multiplier = q15_of_q31(m);
    fp_quantize_multiplier(hires / (3.0 / 32768.0), &m, &h->relu_shift);
    h->relu_multiplier = q15_of_q31(m);
}

int tgr_hard_swish_supported(const tgr_qparams *in, const tgr_qparams *out)
{
    /* The reference fails at run time ("kernel callback error") when the output multiplier
     * needs a left shift, i.e. s_out < s_in / 128. */
    hard_swish_params h;
    hard_swish_prepare(in, out, &h);
    return h.out_shift <= 0;
}

void tgr_lut_hard_swish(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut)
{
    hard_swish_params h;
    int32_t code;
    hard_swish_prepare(in, out, &h);
    for (code = -128; code < 128; ++code) {
        int32_t hires = (code - in->zero_point) * (1 << HARD_SWISH_HIRES_SHIFT);
        int32_t preshift = srdhm_s16(hires, h.out_multiplier);
        int32_t relu = hires;
        int32_t y;
        if (h.relu_shift > 0) {
            relu = saturating_shift_s16(relu, h.relu_shift - 1);
        }
        relu = srdhm_s16(relu, h.relu_multiplier);
        if (h.relu_shift > 0) {
            relu = saturating_shift_s16(relu, 1);
        } else if (h.relu_shift < 0) {
            relu = fp_rdbpot(relu, (int)-h.relu_shift);
        }
        relu = (relu + (1 << 15)) >> 1; /* [-1, 1) -> [0, 1) */
        y = fp_rdbpot(sdhm_s16(relu, preshift), (int)-h.out_shift);
        lut[code + 128] = saturate_s8(y + out->zero_point);
    }
}

void tgr_lut_apply(int32_t count, const int8_t *input, const int8_t *lut, int8_t *output)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        output[i] = lut[(int32_t)input[i] + 128];
    }
}
