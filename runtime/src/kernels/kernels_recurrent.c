/*
 * Recurrent kernels (kernels_recurrent.h). SVDF's integer arithmetic, measured against the
 * reference on the compiler's svdf and svdf_batch fixtures over 20 consecutive runs each (the
 * state carried between them): TFLite's integer SVDF with the plan's two requantization pairs.
 */
#include <string.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels_recurrent.h"

static int16_t load_s16(const uint8_t *at)
{
    int16_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static int32_t load_s32(const uint8_t *at)
{
    int32_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static int32_t clamp(int32_t v, int32_t low, int32_t high) { return v < low ? low : v > high ? high : v; }

void tgr_svdf_s8(const tgr_svdf_params *q, const int8_t *x, const uint8_t *state_in, const int8_t *feature_weights,
                 const uint8_t *time_weights, const uint8_t *bias, uint8_t *state_out, int8_t *y)
{
    const uint32_t row = q->filters * q->memory; /* int16 values of one batch row's state */
    const uint32_t units = q->filters / q->rank;
    uint32_t b, f, i, u;
    for (b = 0; b < q->batch; ++b) {
        const int8_t *xb = x + b * q->inputs;
        uint8_t *sb = state_out + 2u * b * row;
        /* one place older: drop each filter's oldest value */
        for (f = 0; f < q->filters; ++f) {
            memmove(sb + 2u * f * q->memory, state_in + 2u * (b * row + f * q->memory + 1u), 2u * (q->memory - 1u));
        }
        for (f = 0; f < q->filters; ++f) {
            uint32_t acc = 0;
            int16_t newest;
            for (i = 0; i < q->inputs; ++i) {
                acc += (uint32_t)(((int32_t)xb[i] - q->input_zp) * feature_weights[f * q->inputs + i]);
            }
            newest = (int16_t)clamp(fp_mul_by_quantized_multiplier((int32_t)acc, q->feature_multiplier, q->feature_shift),
                                    -32768, 32767);
            memcpy(sb + 2u * (f * q->memory + q->memory - 1u), &newest, sizeof newest);
        }
        for (u = 0; u < units; ++u) {
            uint32_t sum = bias != NULL ? (uint32_t)load_s32(bias + 4u * u) : 0u;
            uint32_t r;
            for (r = 0; r < q->rank; ++r) {
                f = u * q->rank + r;
                for (i = 0; i < q->memory; ++i) {
                    sum += (uint32_t)((int32_t)load_s16(sb + 2u * (f * q->memory + i)) *
                                      load_s16(time_weights + 2u * (f * q->memory + i)));
                }
            }
            y[b * units + u] = (int8_t)clamp(
                fp_mul_by_quantized_multiplier((int32_t)sum, q->output_multiplier, q->output_shift) + q->output_zp, -128,
                127);
        }
    }
}
