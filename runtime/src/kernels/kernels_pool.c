/*
 * Pooling int8 kernels (docs/execution.md#pooling-and-global-reductions): max pool
 * (requantized when its input and output encodings differ), average pool over the valid part of
 * each window (count_include_pad = 0), and global average pool with TFLite MEAN requantization
 * or, for pools the compiler rewrote from a whole-map AveragePool, average-pool rounding.
 */
#include <math.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels.h"

/* Rounded integer average with ties away from zero, as TFLite's AVERAGE_POOL_2D. */
static inline int32_t rounded_average(int32_t sum, int32_t count)
{
    return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

static inline int same_quantization(const tgr_qparams *a, const tgr_qparams *b)
{
    return a->scale == b->scale && a->zero_point == b->zero_point;
}

/* Average of `count` raw samples summing to `sum`, requantized from `in` to `out`. */
static int32_t average_requantized(int32_t sum, int32_t count, const tgr_qparams *in,
                                   const tgr_qparams *out)
{
    double value;
    if (same_quantization(in, out)) {
        return rounded_average(sum, count);
    }
    value = (double)(sum - in->zero_point * count) * (double)in->scale /
            ((double)count * (double)out->scale);
    return (int32_t)round(value) + out->zero_point;
}

void tgr_max_pool_s8(const tgr_window *w, const int8_t *input, const tgr_qparams *in,
                     const tgr_qparams *out, int32_t act_min, int32_t act_max, int8_t *output)
{
    int32_t n, oy, ox, c, ky, kx;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * w->in_h * w->in_w * w->in_c;
        for (oy = 0; oy < w->out_h; ++oy) {
            for (ox = 0; ox < w->out_w; ++ox) {
                for (c = 0; c < w->out_c; ++c) {
                    int32_t best = -128;
                    for (ky = 0; ky < w->kernel_h; ++ky) {
                        const int32_t iy = oy * w->stride_h - w->pad_top + ky * w->dilation_h;
                        if (iy < 0 || iy >= w->in_h) {
                            continue;
                        }
                        for (kx = 0; kx < w->kernel_w; ++kx) {
                            const int32_t ix = ox * w->stride_w - w->pad_left + kx * w->dilation_w;
                            int32_t x;
                            if (ix < 0 || ix >= w->in_w) {
                                continue;
                            }
                            x = in_image[((int64_t)iy * w->in_w + ix) * w->in_c + c];
                            if (x > best) {
                                best = x;
                            }
                        }
                    }
                    /* A rescaling max pool requantizes the maximum like a one-sample average. */
                    *output++ = (int8_t)clamp_i32(average_requantized(best, 1, in, out), act_min, act_max);
                }
            }
        }
    }
}

void tgr_avg_pool_s8(const tgr_window *w, const int8_t *input, const tgr_qparams *in,
                     const tgr_qparams *out, int32_t act_min, int32_t act_max, int8_t *output)
{
    int32_t n, oy, ox, c, ky, kx;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * w->in_h * w->in_w * w->in_c;
        for (oy = 0; oy < w->out_h; ++oy) {
            for (ox = 0; ox < w->out_w; ++ox) {
                for (c = 0; c < w->out_c; ++c) {
                    int32_t sum = 0;
                    int32_t count = 0;
                    for (ky = 0; ky < w->kernel_h; ++ky) {
                        const int32_t iy = oy * w->stride_h - w->pad_top + ky * w->dilation_h;
                        if (iy < 0 || iy >= w->in_h) {
                            continue;
                        }
                        for (kx = 0; kx < w->kernel_w; ++kx) {
                            const int32_t ix = ox * w->stride_w - w->pad_left + kx * w->dilation_w;
                            if (ix < 0 || ix >= w->in_w) {
                                continue;
                            }
                            sum += in_image[((int64_t)iy * w->in_w + ix) * w->in_c + c];
                            ++count;
                        }
                    }
                    /* The loader guarantees every window overlaps the input. */
                    *output++ = (int8_t)clamp_i32(average_requantized(sum, count, in, out),
                                                  act_min, act_max);
                }
            }
        }
    }
}

/* (value << fold) / divisor, truncated toward zero as C's 64-bit division, for fold <= 32 and a
 * positive divisor: by shift and subtract, so the firmware links no 64-bit division routine. */
static int64_t shifted_quotient(int32_t value, int32_t fold, int32_t divisor)
{
    uint64_t n = (uint64_t)(value < 0 ? -(int64_t)value : (int64_t)value) << fold;
    uint64_t q = 0u, r = 0u;
    int bit;
    for (bit = 63; bit >= 0; --bit) {
        r = (r << 1) | ((n >> bit) & 1u);
        if (r >= (uint64_t)divisor) {
            r -= (uint64_t)divisor;
            q |= (uint64_t)1 << bit;
        }
    }
    return value < 0 ? -(int64_t)q : (int64_t)q;
}

void tgr_mean_prepare(int32_t spatial, const tgr_qparams *in, const tgr_qparams *out, int32_t act_min,
                      int32_t act_max, int average_rounding, tgr_mean *m)
{
    m->spatial = spatial;
    m->in = *in;
    m->out = *out;
    m->act_min = act_min;
    m->act_max = act_max;
    m->average_rounding = average_rounding;
    m->multiplier = 0;
    m->shift = 0;
    if (!average_rounding) {
        /* TFLite MEAN: fold 1/spatial into the multiplier, keeping as many bits as fit. */
        int32_t log2_count = 0;
        int32_t fold;
        fp_quantize_multiplier((double)in->scale / (double)out->scale, &m->multiplier, &m->shift);
        while (((int64_t)1 << (log2_count + 1)) <= spatial) {
            ++log2_count;
        }
        fold = log2_count < 32 ? log2_count : 32;
        if (fold > 31 + m->shift) {
            fold = 31 + m->shift > 0 ? 31 + m->shift : 0;
        }
        m->multiplier = (int32_t)shifted_quotient(m->multiplier, fold, spatial);
        m->shift -= fold;
    }
}

int8_t tgr_mean_finish(const tgr_mean *m, int32_t sum)
{
    int32_t y;
    if (m->average_rounding) {
        y = average_requantized(sum, m->spatial, &m->in, &m->out);
    } else {
        /* The zero point is added with int32 wrap-around, as in the conv kernels: a
         * left-shifting pair can take the product near INT32_MAX. */
        y = (int32_t)((uint32_t)fp_mul_by_quantized_multiplier(sum - m->in.zero_point * m->spatial, m->multiplier,
                                                               m->shift) +
                      (uint32_t)m->out.zero_point);
    }
    return (int8_t)clamp_i32(y, m->act_min, m->act_max);
}

void tgr_mean_accumulate(int32_t positions, int32_t channels, const int8_t *input, int32_t *sums)
{
    int32_t i, c;
    for (i = 0; i < positions; ++i) {
        for (c = 0; c < channels; ++c) {
            sums[c] += input[(int64_t)i * channels + c];
        }
    }
}

void tgr_global_avg_pool_s8(int32_t batch, int32_t channels, const int8_t *input, const tgr_mean *m,
                            int8_t *output)
{
    int32_t n, c, i;
    for (n = 0; n < batch; ++n) {
        const int8_t *image = input + (int64_t)n * m->spatial * channels;
        for (c = 0; c < channels; ++c) {
            int32_t sum = 0;
            for (i = 0; i < m->spatial; ++i) {
                sum += image[(int64_t)i * channels + c];
            }
            output[(int64_t)n * channels + c] = tgr_mean_finish(m, sum);
        }
    }
}
