/*
 * Elementwise int8 kernels. Add/Sub follow TFLite's quantized add (tgrs-executor.md §3.4):
 * both inputs are lifted by 2^20, scaled to a common scale by their own Q0.31 pairs, summed
 * (or subtracted) and requantized to the output.
 */
#include "kernels.h"

#include "fixedpoint.h"

#define BINARY_LEFT_SHIFT 20

void tgr_add_s8(int32_t count, const int8_t *a, const int8_t *b, const tgr_add_params *q, int subtract,
                int8_t *output)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        int32_t lifted_a = ((int32_t)a[i] - q->a_zp) * (1 << BINARY_LEFT_SHIFT);
        int32_t lifted_b = ((int32_t)b[i] - q->b_zp) * (1 << BINARY_LEFT_SHIFT);
        int32_t scaled_a = fp_mul_by_quantized_multiplier(lifted_a, q->a_multiplier, q->a_shift);
        int32_t scaled_b = fp_mul_by_quantized_multiplier(lifted_b, q->b_multiplier, q->b_shift);
        int32_t sum = subtract ? scaled_a - scaled_b : scaled_a + scaled_b;
        int32_t y = fp_mul_by_quantized_multiplier(sum, q->out_multiplier, q->out_shift) + q->out_zp;
        output[i] = (int8_t)clamp_i32(y, q->act_min, q->act_max);
    }
}
