/*
 * int8 kernels of the activation and elementwise families (ops_activation.c, ops_elementwise.c).
 * Kept apart from kernels.h so those families can grow without touching the shared header.
 *
 * The arithmetic of every kernel was determined by running the reference host runtime on every
 * input code (every code pair for binary ops) under many quantizations; where the reference
 * uses float or double, so do these kernels, in the same order of operations, because a
 * reordering or a different rounding moves results across rounding boundaries.
 */
#ifndef TGR_KERNELS_ACT_H
#define TGR_KERNELS_ACT_H

#include <stdint.h>

#include "kernels/kernels.h"

/* ---- unary ops as a 256-entry table: output code = lut[input code + 128] ------------------- */

#define TGR_LUT_SIZE 256

/* Relu: round_half_away(double(max(x - zp_in, 0)) * s_in / s_out) + zp_out. Relu6 additionally
 * caps x - zp_in at roundf(6.0f / s_in) before requantizing (the clamp is in the input domain). */
void tgr_lut_relu(const tgr_qparams *in, const tgr_qparams *out, int relu6, int8_t *lut);

/* Quantize (int8 -> int8): MBQM(x - zp_in, QM(double(s_in) / s_out)) + zp_out. */
void tgr_lut_requantize(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut);

/* Abs: MBQM(|x - zp_in|, QM(double(float(s_in / s_out)))) + zp_out. */
void tgr_lut_abs(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut);

/* Sigmoid / Tanh: float32 on the dequantized value, roundf(f / s_out) + zp_out. */
void tgr_lut_sigmoid(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut);
void tgr_lut_tanh(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut);

/* Gelu: float32 on the dequantized value, 0.5 x (1 + erf(x / sqrt 2)) or, tanh_form,
 * 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))); roundf(f / s_out) + zp_out. */
void tgr_lut_gelu(const tgr_qparams *in, const tgr_qparams *out, int tanh_form, int8_t *lut);

/* Not on bool bytes: 1 for 0, else 0. */
void tgr_lut_not(int8_t *lut);

/* Cast bool -> int8: the output zero point for false, round(1 / s_out) + zp_out for true (only
 * where tgr_cast_bool_exact: float32 and double agree on that rounding). */
int tgr_cast_bool_exact(const tgr_qparams *out);
void tgr_lut_cast_bool(const tgr_qparams *out, int8_t *lut);

/* Elu: f = x < 0 ? expf(x) - 1 : x in float32, roundf(f * (1 / s_out)) + zp_out. */
void tgr_lut_elu(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut);

/* LeakyRelu: MBQM(x - zp_in) with QM(float(s_in / s_out)) for x >= zp_in, else with
 * QM(|float(alpha * s_in / s_out)|), negated for a negative slope. */
void tgr_lut_leaky_relu(const tgr_qparams *in, const tgr_qparams *out, float alpha, int8_t *lut);

/* HardSwish: TFLite-style int16 fixed point (hires input scale s_in / 128, relu-ish scale
 * 3 / 32768). Only valid when tgr_hard_swish_supported(). */
int tgr_hard_swish_supported(const tgr_qparams *in, const tgr_qparams *out);
void tgr_lut_hard_swish(const tgr_qparams *in, const tgr_qparams *out, int8_t *lut);

void tgr_lut_apply(int32_t count, const int8_t *input, const int8_t *lut, int8_t *output);

/* ---- binary ops over strided runs -------------------------------------------------------- */

typedef enum tgr_binary_kind {
    TGR_BIN_ADD = 0,
    TGR_BIN_SUB,
    TGR_BIN_MUL,
    TGR_BIN_MAX,
    TGR_BIN_MIN,
    TGR_BIN_SQUARED_DIFF,
    TGR_BIN_PRELU,
    /* bool (0/1) results: the int8 comparisons and the logical ops on bool operands */
    TGR_BIN_EQUAL,
    TGR_BIN_LESS,
    TGR_BIN_LESS_EQUAL,
    TGR_BIN_GREATER,
    TGR_BIN_GREATER_EQUAL,
    TGR_BIN_AND,
    TGR_BIN_OR,
    TGR_BIN_DIV
} tgr_binary_kind;

/* Everything one binary op needs; which fields matter depends on `kind`:
 *  - ADD/SUB: pairs 0 (a), 1 (b), 2 (out) of OP_ATTR_BINARY_REQUANT, inputs lifted by 2^20;
 *  - MUL: pair 0 = QM(s_a * s_b / s_out);
 *  - MAX/MIN: nothing (identical quantization everywhere, raw codes compared);
 *  - SQUARED_DIFF: pairs as ADD with a lift of 2^7 and the output pair for the squared sum;
 *  - PRELU (a = x, b = alpha): pair 0 = QM(s_x / s_out) for x >= zp, pair 1 = QM(s_x s_alpha / s_out);
 *  - comparisons: MBQM((x - zp) * 2^lift) with pair 0 (a) / pair 1 (b), i.e. QM(s_a), QM(s_b),
 *    compared (OP_ATTR_COMPARISON_REQUANT, verified on all 65 536 code pairs);
 *  - AND/OR: operands are bool bytes, non-zero is true;
 *  - DIV: pair 0 = QM(s_a / (s_b * s_out)) formed in float32; the quotient of the centred codes
 *    by a reciprocal of the divisor (tgr_binary_div_s8). */
typedef struct tgr_binary_params {
    tgr_binary_kind kind;
    int32_t a_zp, b_zp, out_zp;
    int32_t multiplier[3];
    int32_t shift[3];
    int32_t act_min, act_max;
    int32_t lift;                 /* comparisons: the left shift before the pairs */
} tgr_binary_params;

/* y[i] = f(a[i * a_step], b[i * b_step]) for i < count; a step of 0 broadcasts one value. One
 * kernel per kind (tgr_binary_add_s8, ...), each its own loop, so a firmware links only the kinds
 * its ops use. Returns 1, or 0 where the reference fails the run (Div by a divisor code equal to
 * its zero point: the outputs are then not all written). */
typedef int (*tgr_binary_kernel)(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step,
                                 const int8_t *b, int32_t b_step, int8_t *output);
#define TGR_BINARY_KINDS(X) \
    X(add) X(sub) X(mul) X(max) X(min) X(squared_diff) X(prelu) X(equal) X(less) X(less_equal) X(greater) \
    X(greater_equal) X(and) X(or) X(div)
#define TGR_BINARY_DECLARE(name)                                                                 \
    int tgr_binary_##name##_s8(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, \
                               const int8_t *b, int32_t b_step, int8_t *output);
TGR_BINARY_KINDS(TGR_BINARY_DECLARE)

/* The same ops on int32 values (indices and their arithmetic; `q` unused): Add, Sub and Mul wrap
 * modulo 2^32 as the reference's do, the comparisons write bool bytes. The operand steps are in
 * bytes (4 per element); the output is contiguous, 4 bytes per element (1 for a comparison). */
#define TGR_BINARY_INT32_KINDS(X) \
    X(add) X(sub) X(mul) X(equal) X(less) X(less_equal) X(greater) X(greater_equal)
#define TGR_BINARY_INT32_DECLARE(name)                                                           \
    int tgr_binary_##name##_s32(const tgr_binary_params *q, int32_t count, const int8_t *a, int32_t a_step, \
                                const int8_t *b, int32_t b_step, int8_t *output);
TGR_BINARY_INT32_KINDS(TGR_BINARY_INT32_DECLARE)

/* Sum (ADD_N) of inputs sharing one quantization, finished from the sum of (x - zp_in) over the
 * inputs: round_half_away(double(sum - zp_in) * s_in / s_out) + zp_out. The extra - zp_in is the
 * reference's, for every input count tried (2, 3, 4). */
int8_t tgr_sum_finish(const tgr_qparams *in, const tgr_qparams *out, int32_t sum_of_differences);

#endif /* TGR_KERNELS_ACT_H */
