/*
 * Activation x activation matrix product (MatMul,
 * docs/execution.md#convolution-gemm-and-matmul): both zero points are subtracted, the int32 accumulator is requantized with the output entry's single stored pair
 * (s_a * s_b / s_out) by the two-step TFLite rounding, as measured on the reference runtime.
 * Four output columns at a time as packed 16-bit pairs (simd32.h), the last columns one by one.
 */
#include <stddef.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels_data.h"
#include "kernels/simd32.h"

static inline int8_t matmul_requantize(int32_t acc, const tgr_matmul_params *q)
{
    /* The sum cannot wrap (check_matmul bounds the depth), but a left-shifting pair can take the
     * product near INT32_MAX: add the zero point with int32 wrap-around, as kernels_conv.c does
     * (measured equal to the reference there), not with signed overflow, which is undefined. */
    acc = (int32_t)((uint32_t)fp_mul_by_valid_multiplier(acc, q->multiplier, q->shift) + (uint32_t)q->out_zp);
    return (int8_t)clamp_i32(acc, q->act_min, q->act_max);
}

/* Output columns j..j+3 of row `a_row`: b's row k gives the four columns in one word, widened to
 * (b - b_zp) pairs (SXTAB16), each multiplied by a[k] - a_zp into its own sum (SMLABB/SMLABT). */
static inline void matmul_columns4(const int8_t *a_row, const int8_t *b_col, uint32_t depth, uint32_t cols,
                                   const tgr_matmul_params *q, int8_t *out)
{
    const uint32_t offset = s32_pair(-q->b_zp);
    int32_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
    uint32_t k;
    for (k = 0; k < depth; ++k) {
        const int32_t x = (int32_t)a_row[k] - q->a_zp;
        const uint32_t word = s32_load(b_col + (size_t)k * cols);
        const uint32_t even = s32_even_plus(offset, word);
        const uint32_t odd = s32_odd_plus(offset, word);
        acc0 = s32_mla_low((uint32_t)x, even, acc0);
        acc2 = s32_mla_by_high(x, even, acc2);
        acc1 = s32_mla_low((uint32_t)x, odd, acc1);
        acc3 = s32_mla_by_high(x, odd, acc3);
    }
    out[0] = matmul_requantize(acc0, q);
    out[1] = matmul_requantize(acc1, q);
    out[2] = matmul_requantize(acc2, q);
    out[3] = matmul_requantize(acc3, q);
}

void tgr_matmul_s8(uint32_t batch, uint32_t rows, uint32_t depth, uint32_t cols, const int8_t *a, const int8_t *b,
                   const tgr_matmul_params *q, int8_t *out)
{
    const tgr_matmul_params params = *q; /* a local copy: the int8 stores could alias *q */
    uint32_t n, i, j, k;
    for (n = 0; n < batch; ++n) {
        const int8_t *a_n = a + (size_t)n * rows * depth;
        const int8_t *b_n = b + (size_t)n * depth * cols;
        for (i = 0; i < rows; ++i) {
            const int8_t *a_row = a_n + (size_t)i * depth;
            for (j = 0; j + 4 <= cols; j += 4, out += 4) {
                matmul_columns4(a_row, b_n + j, depth, cols, &params, out);
            }
            for (; j < cols; ++j) {
                int32_t acc = 0;
                for (k = 0; k < depth; ++k) {
                    acc += ((int32_t)a_row[k] - params.a_zp) * ((int32_t)b_n[(size_t)k * cols + j] - params.b_zp);
                }
                *out++ = matmul_requantize(acc, &params);
            }
        }
    }
}
