/*
 * The plain loops of Conv and DepthwiseConv over a range of output channels: tap by tap in the
 * filter's order, (x - in_zp) * w over the taps inside the input, each output requantized on its
 * own (docs/execution.md#convolution-gemm-and-matmul); any int32 in_zp. The plain variants
 * (conv_plain.c) take every channel; the Helium variants take their last channels (fewer than four,
 * after whole groups of four) with them, so a Helium firmware links no DSP form for them.
 */
#ifndef TGR_KERNELS_CONV_PLAIN_H
#define TGR_KERNELS_CONV_PLAIN_H

#include "kernels/conv_common.h"

/* Output channels [oc_first, out_c) of every output of a Conv call (OHWI filter). */
static inline void conv_plain_channels(const tgr_window *w, const int8_t *input, const int8_t *filter,
                                       const uint8_t *bias, const tgr_requant *rq, int8_t *output, int32_t oc_first)
{
    const int32_t in_c = w->in_c;
    int32_t n, oy, ox, oc, ky, kx, ic;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * w->in_h * w->in_w * in_c;
        for (oy = 0; oy < w->out_h; ++oy) {
            const int32_t iy0 = oy * w->stride_h - w->pad_top;
            for (ox = 0; ox < w->out_w; ++ox, output += w->out_c) {
                const int32_t ix0 = ox * w->stride_w - w->pad_left;
                for (oc = oc_first; oc < w->out_c; ++oc) {
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
                    output[oc] = requantize(acc, rq, oc);
                }
            }
        }
    }
}

/* Output channels [oc_first, out_c) of every output of a DepthwiseConv call (filter kernel_h x
 * kernel_w x out_c; output channel oc reads input channel oc / multiplier). */
static inline void depthwise_plain_channels(const tgr_window *w, const int8_t *input, const int8_t *filter,
                                            const uint8_t *bias, const tgr_requant *rq, int8_t *output,
                                            int32_t oc_first)
{
    const int32_t in_c = w->in_c;
    const int32_t multiplier = w->out_c / w->in_c;
    int32_t n, oy, ox, oc, ky, kx;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * w->in_h * w->in_w * in_c;
        for (oy = 0; oy < w->out_h; ++oy) {
            const int32_t iy0 = oy * w->stride_h - w->pad_top;
            for (ox = 0; ox < w->out_w; ++ox, output += w->out_c) {
                const int32_t ix0 = ox * w->stride_w - w->pad_left;
                for (oc = oc_first; oc < w->out_c; ++oc) {
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
                    output[oc] = requantize(acc, rq, oc);
                }
            }
        }
    }
}

#endif /* TGR_KERNELS_CONV_PLAIN_H */
