/*
 * Convolution-family int8 kernels: Conv (OHWI filter), transposed Conv (OHWI filter), depthwise
 * (HWC filter, channel multiplier) and fully connected ([OC][IC] filter). Arithmetic
 * (docs/execution.md#convolution-gemm-and-matmul): acc = bias + sum over valid taps of (x - in_zp) * w; padding taps are skipped, which equals
 * padding with the input zero point; then per-channel requantization and the int8 clamp.
 */
#include "base/bytes.h"
#include "kernels/fixedpoint.h"
#include "kernels/kernels.h"

/* acc + term with two's-complement wrap-around. A plan's bias and weights can take the int32
 * accumulator past its range; this is the int32 arithmetic the reference performs, without the
 * undefined behaviour of signed overflow in C. */
static inline int32_t wrap_add(int32_t acc, int32_t term)
{
    return (int32_t)((uint32_t)acc + (uint32_t)term);
}

static inline int8_t requantize(int32_t acc, const tgr_requant *rq, int32_t channel)
{
    int32_t pair = rq->per_channel ? channel : 0;
    int32_t multiplier = rd_i32(rq->multipliers + 4 * pair);
    int32_t shift = rd_i32(rq->shifts + 4 * pair);
    int32_t y = wrap_add(fp_mul_by_quantized_multiplier(acc, multiplier, shift), rq->out_zp);
    return (int8_t)clamp_i32(y, rq->act_min, rq->act_max);
}

static inline int32_t bias_at(const uint8_t *bias, int32_t channel)
{
    return bias != NULL ? rd_i32(bias + 4 * channel) : 0;
}

void tgr_conv_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                 const uint8_t *bias, const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = w->in_c;
    int32_t n, oy, ox, oc, ky, kx, ic;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * w->in_h * w->in_w * in_c;
        for (oy = 0; oy < w->out_h; ++oy) {
            const int32_t iy0 = oy * w->stride_h - w->pad_top;
            for (ox = 0; ox < w->out_w; ++ox) {
                const int32_t ix0 = ox * w->stride_w - w->pad_left;
                for (oc = 0; oc < w->out_c; ++oc) {
                    int32_t acc = bias_at(bias, oc);
                    for (ky = 0; ky < w->kernel_h; ++ky) {
                        const int32_t iy = iy0 + ky * w->dilation_h;
                        if (iy < 0 || iy >= w->in_h) {
                            continue;
                        }
                        for (kx = 0; kx < w->kernel_w; ++kx) {
                            const int32_t ix = ix0 + kx * w->dilation_w;
                            const int8_t *x;
                            const int8_t *f;
                            if (ix < 0 || ix >= w->in_w) {
                                continue;
                            }
                            x = in_image + ((int64_t)iy * w->in_w + ix) * in_c;
                            f = filter + (((int64_t)oc * w->kernel_h + ky) * w->kernel_w + kx) * in_c;
                            for (ic = 0; ic < in_c; ++ic) {
                                acc = wrap_add(acc, ((int32_t)x[ic] - rq->in_zp) * (int32_t)f[ic]);
                            }
                        }
                    }
                    *output++ = requantize(acc, rq, oc);
                }
            }
        }
    }
}

/* Input index a transposed convolution tap reads for output index o: the input position whose
 * stride step plus the tap lands on o + pad, or -1 when none does. */
static inline int32_t transposed_source(int32_t o, int32_t pad, int32_t tap, int32_t stride, int32_t extent)
{
    int32_t t = o + pad - tap;
    if (t < 0 || t % stride != 0 || t / stride >= extent) {
        return -1;
    }
    return t / stride;
}

void tgr_conv_transpose_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = w->in_c;
    int32_t n, oy, ox, oc, ky, kx, ic;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * w->in_h * w->in_w * in_c;
        for (oy = 0; oy < w->out_h; ++oy) {
            for (ox = 0; ox < w->out_w; ++ox) {
                for (oc = 0; oc < w->out_c; ++oc) {
                    int32_t acc = bias_at(bias, oc);
                    for (ky = 0; ky < w->kernel_h; ++ky) {
                        const int32_t iy = transposed_source(oy, w->pad_top, ky, w->stride_h, w->in_h);
                        if (iy < 0) {
                            continue;
                        }
                        for (kx = 0; kx < w->kernel_w; ++kx) {
                            const int32_t ix = transposed_source(ox, w->pad_left, kx, w->stride_w, w->in_w);
                            const int8_t *x;
                            const int8_t *f;
                            if (ix < 0) {
                                continue;
                            }
                            x = in_image + ((int64_t)iy * w->in_w + ix) * in_c;
                            f = filter + (((int64_t)oc * w->kernel_h + ky) * w->kernel_w + kx) * in_c;
                            for (ic = 0; ic < in_c; ++ic) {
                                acc = wrap_add(acc, ((int32_t)x[ic] - rq->in_zp) * (int32_t)f[ic]);
                            }
                        }
                    }
                    *output++ = requantize(acc, rq, oc);
                }
            }
        }
    }
}

void tgr_depthwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                      const uint8_t *bias, const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = w->in_c;
    const int32_t multiplier = w->out_c / w->in_c;
    int32_t n, oy, ox, oc, ky, kx;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * w->in_h * w->in_w * in_c;
        for (oy = 0; oy < w->out_h; ++oy) {
            const int32_t iy0 = oy * w->stride_h - w->pad_top;
            for (ox = 0; ox < w->out_w; ++ox) {
                const int32_t ix0 = ox * w->stride_w - w->pad_left;
                for (oc = 0; oc < w->out_c; ++oc) {
                    const int32_t ic = oc / multiplier;
                    int32_t acc = bias_at(bias, oc);
                    for (ky = 0; ky < w->kernel_h; ++ky) {
                        const int32_t iy = iy0 + ky * w->dilation_h;
                        if (iy < 0 || iy >= w->in_h) {
                            continue;
                        }
                        for (kx = 0; kx < w->kernel_w; ++kx) {
                            const int32_t ix = ix0 + kx * w->dilation_w;
                            int32_t x;
                            if (ix < 0 || ix >= w->in_w) {
                                continue;
                            }
                            x = in_image[((int64_t)iy * w->in_w + ix) * in_c + ic];
                            acc = wrap_add(acc, (x - rq->in_zp) *
                                                    (int32_t)filter[((int64_t)ky * w->kernel_w + kx) * w->out_c + oc]);
                        }
                    }
                    *output++ = requantize(acc, rq, oc);
                }
            }
        }
    }
}

void tgr_fully_connected_s8(int32_t rows, int32_t in_features, int32_t out_features,
                            const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output)
{
    int32_t r, oc, ic;
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + (int64_t)r * in_features;
        for (oc = 0; oc < out_features; ++oc) {
            const int8_t *f = filter + (int64_t)oc * in_features;
            int32_t acc = bias_at(bias, oc);
            for (ic = 0; ic < in_features; ++ic) {
                acc = wrap_add(acc, ((int32_t)x[ic] - rq->in_zp) * (int32_t)f[ic]);
            }
            *output++ = requantize(acc, rq, oc);
        }
    }
}
