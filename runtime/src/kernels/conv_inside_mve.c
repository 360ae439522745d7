/*
 * Conv, Helium variant for calls whose every window lies inside the input (METHOD_CONV_UNPADDED in
 * the mve=1 build, and the calls of a padded layer whose windows the tile keeps clear of the
 * padding). Contract: kernels.h, tgr_conv_inside_mve_s8. Empty in every other build.
 *
 * Groups of four output channels: per group, bias - zp * sum(w) and the requantization vectors
 * once; per pixel, four raw VMLADAVA dot products over each kernel row's run of inputs and one
 * vector requantization into the four bytes. The last out_c % 4 channels take the plain loop
 * (conv_plain.h): a few bytes of code, where a DSP form would cost every Helium firmware its size.
 */
#include "kernels/isa.h"

#if TGR_SIMD_MVE
#include "kernels/conv_plain.h"
#include "kernels/mve_common.h"

/* Output channels oc..oc+3 over every pixel of a call whose windows are all inside: bias - zp * sum(w)
 * and the requantization vectors once; per pixel, the four raw dot products and one vector
 * requantization (mve_requantize4) into the four bytes. The hot pass (kernels/isa.h, TGR_NOINLINE),
 * on its own copies of the structs. */
static TGR_NOINLINE void conv_group_mve(const tgr_window *w_in, const int8_t *input, const int8_t *filter,
                                        const uint8_t *bias, const tgr_requant *rq_in, int8_t *output, int32_t oc)
{
    const tgr_window win = *w_in;
    const tgr_requant q = *rq_in;
    const tgr_window *w = &win;
    const tgr_requant *rq = &q;
    const int32_t run = w->dilation_w == 1 ? w->kernel_w * w->in_c : w->in_c; /* inputs per dot */
    const int32_t runs_per_row = w->dilation_w == 1 ? 1 : w->kernel_w;
    const int32_t filter_stride = w->kernel_h * w->kernel_w * w->in_c;
    const int32_t image_stride = w->in_h * w->in_w * w->in_c;
    int32_t n, oy, ox, ky, r, i;
    const int8_t *f0 = filter + (int64_t)oc * filter_stride;
    int32_t sums[4] = {0, 0, 0, 0};
    const int32x4_t b = bias != NULL ? mve_load4_i32(bias + 4 * oc, 4) : vdupq_n_s32(0);
    int32x4_t base;
    int32x4_t multiplier, shift;
    int8_t *y = output + oc;
    for (i = 0; i < filter_stride; i += 16) {
        const mve_pred16_t live = vctp8q((uint32_t)(filter_stride - i));
        sums[0] = vaddvaq_s8(sums[0], vldrbq_z_s8(f0 + i, live));
        sums[1] = vaddvaq_s8(sums[1], vldrbq_z_s8(f0 + filter_stride + i, live));
        sums[2] = vaddvaq_s8(sums[2], vldrbq_z_s8(f0 + 2 * filter_stride + i, live));
        sums[3] = vaddvaq_s8(sums[3], vldrbq_z_s8(f0 + 3 * filter_stride + i, live));
    }
    base = vsubq_s32(b, vmulq_n_s32(vldrwq_s32(sums), rq->in_zp));
    mve_channel_pairs(rq, oc, &multiplier, &shift);
    for (n = 0; n < w->batch; ++n) {
        const int8_t *image = input + (int64_t)n * image_stride;
        for (oy = 0; oy < w->out_h; ++oy) {
            const int32_t iy0 = oy * w->stride_h - w->pad_top;
            for (ox = 0; ox < w->out_w; ++ox, y += w->out_c) {
                const int32_t ix0 = ox * w->stride_w - w->pad_left;
                int32_t acc[4] = {0, 0, 0, 0};
                for (ky = 0; ky < w->kernel_h; ++ky) {
                    const int8_t *x = image + ((int64_t)(iy0 + ky * w->dilation_h) * w->in_w + ix0) * w->in_c;
                    for (r = 0; r < runs_per_row; ++r) {
                        dot4_mve_raw(x + (int64_t)r * w->dilation_w * w->in_c,
                                     f0 + (ky * runs_per_row + r) * run, filter_stride, run, acc);
                    }
                }
                vstrbq_s32(y, mve_requantize4(vaddq_s32(base, vldrwq_s32(acc)), multiplier, shift, rq));
            }
        }
    }
}

void tgr_conv_inside_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output)
{
    int32_t oc;
    for (oc = 0; oc + 4 <= w->out_c; oc += 4) {
        conv_group_mve(w, input, filter, bias, rq, output, oc);
    }
    if ((w->out_c & 3) != 0) { /* the last one to three channels by the plain loop (conv_plain.h) */
        conv_plain_channels(w, input, filter, bias, rq, output, w->out_c & ~3);
    }
}

#else
typedef int tgr_conv_inside_mve_not_built; /* a translation unit declares something (C99 6.9) */
#endif
