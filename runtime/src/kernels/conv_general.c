/*
 * Conv, general variant (METHOD_CONV_UNPADDED, _PADDED and _PADDED_WIDE in the DSP and portable
 * builds; in the Helium build the calls of a _PADDED_WIDE layer whose windows are cut by padding).
 * Contract: kernels.h, tgr_conv_general_s8.
 *
 * One output pixel at a time: its window's taps inside the input found once, then
 * four output channels per pass over them, then two (an odd last channel is computed twice); with
 * dilation 1 the inside taps of a kernel row are one contiguous run of inputs, taken four at a
 * time as packed 16-bit pairs (SMLAD; Helium dot products for runs of 16 and more in mve=1).
 * Built in every build: the Helium build takes it for windows too large for the patch.
 */
#include "kernels/conv_common.h"

/* The taps of output pixel (iy0, ix0 = its window's origin) that are inside the input, for the
 * four filters from f0, into acc: with dilation 1 the inside taps of a kernel row are one run of
 * inputs against the filters' matching runs. */
static inline void conv_taps4(const tgr_window *w, const int8_t *image, const int8_t *f0, int32_t filter_stride,
                              int32_t iy0, int32_t ix0, const int32_t *taps, int32_t zp, uint32_t offset,
                              int32_t *acc)
{
    const int32_t in_c = w->in_c;
    int32_t ky, kx;
    for (ky = taps[0]; ky < taps[1]; ++ky) {
        const int8_t *x = image + ((int64_t)(iy0 + ky * w->dilation_h) * w->in_w + ix0 + taps[2] * w->dilation_w) * in_c;
        const int32_t tap = (ky * w->kernel_w + taps[2]) * in_c;
        if (w->dilation_w == 1) {
            dot4_s8(x, f0 + tap, filter_stride, (taps[3] - taps[2]) * in_c, zp, offset, acc);
            continue;
        }
        for (kx = 0; kx < taps[3] - taps[2]; ++kx) {
            dot4_s8(x + (int64_t)kx * w->dilation_w * in_c, f0 + tap + kx * in_c, filter_stride, in_c, zp, offset, acc);
        }
    }
}

/* Output pixel (oy, ox) of a convolution, channels from oc_first: four at a time, then two (an
 * odd last channel is computed twice). Taps outside the input are skipped. */
static void conv_pixel_fast(const tgr_window *w, const int8_t *image, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int32_t oy, int32_t ox, int8_t *output, int32_t oc_first)
{
    const int32_t in_c = w->in_c;
    const int32_t iy0 = oy * w->stride_h - w->pad_top;
    const int32_t ix0 = ox * w->stride_w - w->pad_left;
    const int32_t filter_stride = w->kernel_h * w->kernel_w * in_c;
    const uint32_t offset = s32_pair(-rq->in_zp);
    int32_t taps[4];
    int32_t oc, ky, kx;
    window_taps(w, iy0, ix0, taps);
    for (oc = oc_first; oc + 4 <= w->out_c; oc += 4) {
        int32_t acc[4];
        acc[0] = bias_at(bias, oc);
        acc[1] = bias_at(bias, oc + 1);
        acc[2] = bias_at(bias, oc + 2);
        acc[3] = bias_at(bias, oc + 3);
        conv_taps4(w, image, filter + (int64_t)oc * filter_stride, filter_stride, iy0, ix0, taps, rq->in_zp, offset,
                   acc);
        output[oc] = requantize(acc[0], rq, oc);
        output[oc + 1] = requantize(acc[1], rq, oc + 1);
        output[oc + 2] = requantize(acc[2], rq, oc + 2);
        output[oc + 3] = requantize(acc[3], rq, oc + 3);
    }
    for (; oc < w->out_c; oc += 2) {
        const int32_t oc1 = oc + 1 < w->out_c ? oc + 1 : oc;
        const int8_t *f0 = filter + (int64_t)oc * filter_stride;
        const int8_t *f1 = filter + (int64_t)oc1 * filter_stride;
        int32_t acc0 = bias_at(bias, oc);
        int32_t acc1 = bias_at(bias, oc1);
        for (ky = taps[0]; ky < taps[1]; ++ky) {
            const int8_t *x = image + ((int64_t)(iy0 + ky * w->dilation_h) * w->in_w + ix0 + taps[2] * w->dilation_w) * in_c;
            const int32_t tap = (ky * w->kernel_w + taps[2]) * in_c;
            if (w->dilation_w == 1) {
                dot2_s8(x, f0 + tap, f1 + tap, (taps[3] - taps[2]) * in_c, rq->in_zp, offset, &acc0, &acc1);
                continue;
            }
            for (kx = 0; kx < taps[3] - taps[2]; ++kx) {
                dot2_s8(x + (int64_t)kx * w->dilation_w * in_c, f0 + tap + kx * in_c, f1 + tap + kx * in_c, in_c,
                        rq->in_zp, offset, &acc0, &acc1);
            }
        }
        output[oc] = requantize(acc0, rq, oc);
        output[oc1] = requantize(acc1, rq, oc1);
    }
}


void tgr_conv_general_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                         const tgr_requant *rq, int8_t *output)
{
    /* Local copies: the int8 output stores may alias anything the pointers reach, so the
     * compiler would reload every field after each store. */
    const int32_t in_c = w->in_c;
    const tgr_window win = *w;
    const tgr_requant q = *rq;
    int32_t n, oy, ox;
    for (n = 0; n < win.batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * win.in_h * win.in_w * in_c;
        for (oy = 0; oy < win.out_h; ++oy) {
            for (ox = 0; ox < win.out_w; ++ox) {
                conv_pixel_fast(&win, in_image, filter, bias, &q, oy, ox, output, 0);
                output += win.out_c;
            }
        }
    }
}
