/*
 * DepthwiseConv, Helium variant (METHOD_DEPTHWISE in the mve=1 build: channel multiplier 1).
 * Contract: kernels.h, tgr_depthwise_mve_s8. Empty in every other build.
 *
 * Groups of four channels, one int32 lane each (depthwise_group_mve); the last in_c % 4 channels
 * by the plain loop (conv_plain.h).
 */
#include "kernels/isa.h"

#if TGR_SIMD_MVE
#include "kernels/conv_plain.h"
#include "kernels/mve_common.h"

/* One depthwise output of four channels (one int32 lane each) at window origin (iy0, ix0):
 * (x - zp) * w over the taps inside the input, from the bias `b`. */
static inline int32x4_t depthwise_cut_mve(const tgr_window *w, const int8_t *image, const int8_t *filter,
                                          int32x4_t b, int32_t zp, int32_t iy0, int32_t ix0)
{
    const int32_t channels = w->in_c;
    int32_t taps[4], ky, kx;
    int32x4_t acc = b;
    window_taps(w, iy0, ix0, taps);
    for (ky = taps[0]; ky < taps[1]; ++ky) {
        const int8_t *x = image + ((int64_t)(iy0 + ky * w->dilation_h) * w->in_w + ix0) * channels;
        const int8_t *f = filter + (int64_t)ky * w->kernel_w * channels;
        for (kx = taps[2]; kx < taps[3]; ++kx) {
            const int32x4_t xv = vsubq_n_s32(vldrbq_s32(x + (int64_t)kx * w->dilation_w * channels), zp);
            acc = vaddq_s32(acc, vmulq_s32(xv, vldrbq_s32(f + (int64_t)kx * channels)));
        }
    }
    return acc;
}

/* Channels c..c+3 over every output of the call, one int32 lane each: bias - zp * sum(w) and the
 * requantization vectors once; along each output row the windows inside the input ([ox_lo, ox_hi)
 * of a row whose input rows are inside) as x * w from that base (a 3x3 in straight-line rows), the
 * others as (x - zp) * w over their inside taps; one vector requantization per output. The hot
 * pass (kernels/isa.h, TGR_NOINLINE), on its own copies of the structs. */
static TGR_NOINLINE void depthwise_group_mve(const tgr_window *w_in, const int8_t *input, const int8_t *filter,
                                                  const uint8_t *bias, const tgr_requant *rq_in, int8_t *output,
                                                  int32_t c, int32_t ox_lo, int32_t ox_hi)
{
    const tgr_window win = *w_in;
    const tgr_requant q = *rq_in;
    const tgr_window *w = &win;
    const tgr_requant *rq = &q;
    const int32_t channels = w->in_c;
    const int32_t row = w->in_w * channels;
    const int32_t x_step = w->stride_w * channels;
    const int32_t reach_h = (w->kernel_h - 1) * w->dilation_h;
    const int straight_3x3 = w->kernel_h == 3 && w->kernel_w == 3 && w->dilation_h == 1 && w->dilation_w == 1;
    int32_t n, oy, ox, ky, kx, t;
    const int8_t *fc = filter + c;
    const int32x4_t b = bias != NULL ? mve_load4_i32(bias + 4 * c, 4) : vdupq_n_s32(0);
    int32x4_t weight_sum = vdupq_n_s32(0);
    int32x4_t multiplier, shift, base;
    int8_t *y = output + c;
    for (t = 0; t < w->kernel_h * w->kernel_w; ++t) {
        weight_sum = vaddq_s32(weight_sum, vldrbq_s32(fc + (int64_t)t * channels));
    }
    base = vsubq_s32(b, vmulq_n_s32(weight_sum, rq->in_zp));
    mve_channel_pairs(rq, c, &multiplier, &shift);
    for (n = 0; n < w->batch; ++n) {
        const int8_t *image = input + (int64_t)n * w->in_h * row + c;
        for (oy = 0; oy < w->out_h; ++oy) {
            const int32_t iy0 = oy * w->stride_h - w->pad_top;
            const int rows_inside = iy0 >= 0 && iy0 + reach_h < w->in_h;
            for (ox = 0; ox < w->out_w;) {
                if (rows_inside && ox == ox_lo && ox_lo < ox_hi) {
                    const int8_t *x = image + ((int64_t)iy0 * w->in_w + ox * w->stride_w - w->pad_left) * channels;
                    for (; ox < ox_hi; ++ox, x += x_step, y += channels) {
                        const int8_t *xr = x;
                        const int8_t *f = fc;
                        int32x4_t acc = base;
                        if (straight_3x3) {
                            for (ky = 0; ky < 3; ++ky, xr += row, f += 3 * channels) {
                                acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(xr), vldrbq_s32(f)));
                                acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(xr + channels), vldrbq_s32(f + channels)));
                                acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(xr + 2 * channels),
                                                               vldrbq_s32(f + 2 * channels)));
                            }
                        } else {
                            for (ky = 0; ky < w->kernel_h; ++ky, xr += (int64_t)w->dilation_h * row) {
                                for (kx = 0; kx < w->kernel_w; ++kx, f += channels) {
                                    acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(xr + (int64_t)kx * w->dilation_w * channels),
                                                                   vldrbq_s32(f)));
                                }
                            }
                        }
                        vstrbq_s32(y, mve_requantize4(acc, multiplier, shift, rq));
                    }
                    continue;
                }
                vstrbq_s32(y, mve_requantize4(depthwise_cut_mve(w, image, fc, b, rq->in_zp, iy0,
                                                                ox * w->stride_w - w->pad_left),
                                              multiplier, shift, rq));
                ++ox;
                y += channels;
            }
        }
    }
}

/* Every whole group of four channels (depthwise_group_mve). */
static void depthwise_groups_mve(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                                 const tgr_requant *rq, int8_t *output)
{
    const int32_t reach_w = (w->kernel_w - 1) * w->dilation_w;
    int32_t ox_lo = 0, ox_hi = w->out_w;
    int32_t c;
    /* Outputs [ox_lo, ox_hi) of a row have their windows inside the input's columns. */
    while (ox_lo < w->out_w && ox_lo * w->stride_w - w->pad_left < 0) {
        ++ox_lo;
    }
    while (ox_hi > ox_lo && (ox_hi - 1) * w->stride_w - w->pad_left + reach_w >= w->in_w) {
        --ox_hi;
    }
    for (c = 0; c + 4 <= w->in_c; c += 4) {
        depthwise_group_mve(w, input, filter, bias, rq, output, c, ox_lo, ox_hi);
    }
}

void tgr_depthwise_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                          const tgr_requant *rq, int8_t *output)
{
    depthwise_groups_mve(w, input, filter, bias, rq, output); /* each group copies the structs */
    if ((w->in_c & 3) != 0) { /* the last one to three channels by the plain loop (conv_plain.h) */
        depthwise_plain_channels(w, input, filter, bias, rq, output, w->in_c & ~3);
    }
}

#else
typedef int tgr_depthwise_mve_not_built; /* a translation unit declares something (C99 6.9) */
#endif
