/*
 * DepthwiseConv, channel multiplier 1 (METHOD_DEPTHWISE in the DSP and portable builds). Contract:
 * kernels.h, tgr_depthwise_s8. Empty in the Helium build, which takes tgr_depthwise_mve_s8.
 *
 * One output pixel at a time: four channels per tap, the nine taps of a 3x3
 * window wholly inside the input as straight-line code, the taps inside the input otherwise.
 */
#include "kernels/isa.h"

#if !TGR_SIMD_MVE
#include "kernels/conv_common.h"

/* One depthwise tap on four channels: their four inputs and four weights, one word each, the
 * per-channel products kept apart (SMLABB/SMLATT on the DSP extension). */
static inline void depthwise_tap4(const int8_t *x, const int8_t *f, uint32_t offset, int32_t *acc)
{
    const uint32_t xw = s32_load(x);
    const uint32_t fw = s32_load(f);
    const uint32_t xe = s32_even_plus(offset, xw);
    const uint32_t xo = s32_odd_plus(offset, xw);
    const uint32_t fe = s32_even(fw);
    const uint32_t fo = s32_odd(fw);
    acc[0] = s32_mla_low(xe, fe, acc[0]);
    acc[2] = s32_mla_high(xe, fe, acc[2]);
    acc[1] = s32_mla_low(xo, fo, acc[1]);
    acc[3] = s32_mla_high(xo, fo, acc[3]);
}

/* The nine taps of a 3x3 window wholly inside the input, dilation 1, straight-line code: the
 * common case of MobileNet-style networks, without the tap loops' bookkeeping. */
static inline void depthwise_3x3_inside(const int8_t *x, int32_t row, int32_t channels, const int8_t *f,
                                        uint32_t offset, int32_t *acc)
{
    depthwise_tap4(x, f, offset, acc);
    depthwise_tap4(x + channels, f + channels, offset, acc);
    depthwise_tap4(x + 2 * channels, f + 2 * channels, offset, acc);
    depthwise_tap4(x + row, f + 3 * channels, offset, acc);
    depthwise_tap4(x + row + channels, f + 4 * channels, offset, acc);
    depthwise_tap4(x + row + 2 * channels, f + 5 * channels, offset, acc);
    depthwise_tap4(x + 2 * row, f + 6 * channels, offset, acc);
    depthwise_tap4(x + 2 * row + channels, f + 7 * channels, offset, acc);
    depthwise_tap4(x + 2 * row + 2 * channels, f + 8 * channels, offset, acc);
}

/* Output pixel (oy, ox) of a depthwise convolution with channel multiplier 1, channels from
 * c_first: four at a time (depthwise_tap4), the last ones one by one. Taps outside the input are
 * skipped. */
static void depthwise_pixel_fast(const tgr_window *w, const int8_t *image, const int8_t *filter, const uint8_t *bias,
                                 const tgr_requant *rq, int32_t oy, int32_t ox, int8_t *output, int32_t c_first)
{
    const int32_t channels = w->in_c;
    const int32_t iy0 = oy * w->stride_h - w->pad_top;
    const int32_t ix0 = ox * w->stride_w - w->pad_left;
    const uint32_t offset = s32_pair(-rq->in_zp);
    int32_t ky_first, ky_end, kx_first, kx_end;
    int32_t c, ky, kx;
    taps_inside(iy0, w->kernel_h, w->dilation_h, w->in_h, &ky_first, &ky_end);
    taps_inside(ix0, w->kernel_w, w->dilation_w, w->in_w, &kx_first, &kx_end);
    const int32_t ix_first = ix0 + kx_first * w->dilation_w;
    const int32_t taps_x = kx_end - kx_first;
    const int64_t x_step = (int64_t)w->dilation_w * channels;
    const int whole_3x3 = w->kernel_h == 3 && w->kernel_w == 3 && w->dilation_h == 1 && w->dilation_w == 1 &&
                          ky_end - ky_first == 3 && taps_x == 3;
    const int32_t row = w->in_w * channels;
    for (c = c_first; c + 4 <= channels; c += 4) {
        const int8_t *x0 = image + ((int64_t)(iy0 + ky_first * w->dilation_h) * w->in_w + ix_first) * channels + c;
        int32_t acc[4];
        acc[0] = bias_at(bias, c);
        acc[1] = bias_at(bias, c + 1);
        acc[2] = bias_at(bias, c + 2);
        acc[3] = bias_at(bias, c + 3);
        if (whole_3x3) {
            depthwise_3x3_inside(x0, row, channels, filter + c, offset, acc);
        } else {
            for (ky = ky_first; ky < ky_end; ++ky) {
                const int8_t *x = x0 + (int64_t)(ky - ky_first) * w->dilation_h * row;
                const int8_t *f = filter + ((int64_t)ky * w->kernel_w + kx_first) * channels + c;
                for (kx = 0; kx < taps_x; ++kx) {
                    depthwise_tap4(x + (int64_t)kx * x_step, f + (int64_t)kx * channels, offset, acc);
                }
            }
        }
        output[c] = requantize(acc[0], rq, c);
        output[c + 1] = requantize(acc[1], rq, c + 1);
        output[c + 2] = requantize(acc[2], rq, c + 2);
        output[c + 3] = requantize(acc[3], rq, c + 3);
    }
    for (; c < channels; ++c) {
        int32_t acc = bias_at(bias, c);
        for (ky = ky_first; ky < ky_end; ++ky) {
            const int8_t *x = image + ((int64_t)(iy0 + ky * w->dilation_h) * w->in_w + ix_first) * channels + c;
            const int8_t *f = filter + ((int64_t)ky * w->kernel_w + kx_first) * channels + c;
            for (kx = 0; kx < taps_x; ++kx) {
                acc = wrap_add(acc, ((int32_t)x[(int64_t)kx * x_step] - rq->in_zp) * (int32_t)f[(int64_t)kx * channels]);
            }
        }
        output[c] = requantize(acc, rq, c);
    }
}

/* One output row of the call, channels from c_first: the hot pass (kernels/isa.h, TGR_NOINLINE),
 * on its own copies of the structs. */
static TGR_NOINLINE void depthwise_row(const tgr_window *w_in, const int8_t *in_image, const int8_t *filter, const uint8_t *bias,
                                       const tgr_requant *rq_in, int32_t oy, int8_t *output, int32_t c_first)
{
    const tgr_window win = *w_in;
    const tgr_requant q = *rq_in;
    int32_t ox;
    for (ox = 0; ox < win.out_w; ++ox) {
        depthwise_pixel_fast(&win, in_image, filter, bias, &q, oy, ox, output, c_first);
        output += win.in_c;
    }
}

/* Every output pixel of the call, channels from c_first; `win` and `q` are the caller's local
 * copies. */
static void depthwise_pixels(const tgr_window *win, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                             const tgr_requant *q, int8_t *output, int32_t c_first)
{
    const int32_t in_c = win->in_c;
    int32_t n, oy;
    for (n = 0; n < win->batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * win->in_h * win->in_w * in_c;
        for (oy = 0; oy < win->out_h; ++oy) {
            depthwise_row(win, in_image, filter, bias, q, oy, output, c_first);
            output += (int64_t)win->out_w * in_c;
        }
    }
}

void tgr_depthwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                      const tgr_requant *rq, int8_t *output)
{
    depthwise_pixels(w, input, filter, bias, rq, output, 0); /* each row copies the structs */
}

#else
typedef int tgr_depthwise_not_built; /* a translation unit declares something (C99 6.9) */
#endif
