/*
 * Activation x activation matrix product (MatMul,
 * docs/execution.md#convolution-gemm-and-matmul): both zero points are subtracted, the int32 accumulator is requantized with the output entry's single stored pair
 * (s_a * s_b / s_out) by the two-step TFLite rounding, as measured on the reference runtime.
 */
#include <stddef.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels_data.h"

void tgr_matmul_s8(uint32_t batch, uint32_t rows, uint32_t depth, uint32_t cols, const int8_t *a, const int8_t *b,
                   const tgr_matmul_params *q, int8_t *out)
{
    uint32_t n, i, j, k;
    for (n = 0; n < batch; ++n) {
        const int8_t *a_n = a + (size_t)n * rows * depth;
        const int8_t *b_n = b + (size_t)n * depth * cols;
        for (i = 0; i < rows; ++i) {
            for (j = 0; j < cols; ++j) {
                int32_t acc = 0;
                for (k = 0; k < depth; ++k) {
                    acc += ((int32_t)a_n[(size_t)i * depth + k] - q->a_zp) * ((int32_t)b_n[(size_t)k * cols + j] - q->b_zp);
                }
                /* The sum cannot wrap (check_matmul bounds the depth), but a left-shifting pair can
                 * take the product near INT32_MAX: add the zero point with int32 wrap-around, as
                 * kernels_conv.c does (measured equal to the reference there), not with signed
                 * overflow, which is undefined behaviour. */
                acc = (int32_t)((uint32_t)fp_mul_by_quantized_multiplier(acc, q->multiplier, q->shift) +
                                (uint32_t)q->out_zp);
                *out++ = (int8_t)clamp_i32(acc, q->act_min, q->act_max);
            }
        }
    }
}
