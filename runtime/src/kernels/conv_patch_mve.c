/*
 * Conv, Helium variant for windows cut by padding (METHOD_CONV_PADDED in the mve=1 build: a layer
 * with padding whose window, kernel_h x kernel_w x in_c, fits TGR_CONV_PATCH_BYTES). Contract:
 * kernels.h, tgr_conv_patch_mve_s8. Empty in every other build.
 *
 * Each output pixel's window is gathered into a patch, taps outside the input holding the zero
 * point (so they add (zp - zp) * w = 0, exactly what skipping them adds); then every group of four
 * channels is one raw dot product over the patch, bias - zp * sum(w), and a vector requantization;
 * the last channels one or two at a time from the same patch.
 */
#include "kernels/isa.h"

#if TGR_SIMD_MVE
#include "kernels/mve_common.h"

/* One output row of the call: each pixel's window gathered into the patch, then its channels. The
 * hot pass (kernels/isa.h, TGR_NOINLINE), on its own copies of the structs. */
static TGR_NOINLINE void patch_row_mve(const tgr_window *w_in, const int8_t *image, const int8_t *filter,
                                       const uint8_t *bias, const tgr_requant *rq_in, int32_t oy, int8_t *output)
{
    const tgr_window win = *w_in;
    const tgr_requant q = *rq_in;
    const tgr_window *w = &win;
    const tgr_requant *rq = &q;
    const int32_t in_c = w->in_c;
    const int32_t patch_bytes = w->kernel_h * w->kernel_w * in_c;
    const uint32_t offset = s32_pair(-rq->in_zp);
    int8_t patch[TGR_CONV_PATCH_BYTES];
    int32_t ox, ky, kx, i, oc;
    for (ox = 0; ox < w->out_w; ++ox, output += w->out_c) {
        const int32_t iy0 = oy * w->stride_h - w->pad_top;
        const int32_t ix0 = ox * w->stride_w - w->pad_left;
        int8_t *p = patch;
        for (ky = 0; ky < w->kernel_h; ++ky) {
            const int32_t iy = iy0 + ky * w->dilation_h;
            for (kx = 0; kx < w->kernel_w; ++kx) {
                const int32_t ix = ix0 + kx * w->dilation_w;
                const int inside = iy >= 0 && iy < w->in_h && ix >= 0 && ix < w->in_w;
                const int8_t *src = image + ((int64_t)iy * w->in_w + ix) * in_c;
                for (i = 0; i < in_c; ++i) {
                    *p++ = inside ? src[i] : (int8_t)rq->in_zp;
                }
            }
        }
        for (oc = 0; oc + 4 <= w->out_c; oc += 4) {
            const int8_t *f0 = filter + (int64_t)oc * patch_bytes;
            int32_t acc[4] = {0, 0, 0, 0};
            int32_t sums[4] = {0, 0, 0, 0};
            int32x4_t multiplier, shift, base;
            for (i = 0; i < patch_bytes; i += 16) {
                const mve_pred16_t live = vctp8q((uint32_t)(patch_bytes - i));
                sums[0] = vaddvaq_s8(sums[0], vldrbq_z_s8(f0 + i, live));
                sums[1] = vaddvaq_s8(sums[1], vldrbq_z_s8(f0 + patch_bytes + i, live));
                sums[2] = vaddvaq_s8(sums[2], vldrbq_z_s8(f0 + 2 * patch_bytes + i, live));
                sums[3] = vaddvaq_s8(sums[3], vldrbq_z_s8(f0 + 3 * patch_bytes + i, live));
            }
            dot4_mve_raw(patch, f0, patch_bytes, patch_bytes, acc);
            base = bias != NULL ? mve_load4_i32(bias + 4 * oc, 4) : vdupq_n_s32(0);
            base = vsubq_s32(base, vmulq_n_s32(vldrwq_s32(sums), rq->in_zp));
            mve_channel_pairs(rq, oc, &multiplier, &shift);
            vstrbq_s32(output + oc, mve_requantize4(vaddq_s32(base, vldrwq_s32(acc)), multiplier, shift, rq));
        }
        for (; oc < w->out_c; oc += 2) {
            const int32_t oc1 = oc + 1 < w->out_c ? oc + 1 : oc;
            int32_t acc0 = bias_at(bias, oc);
            int32_t acc1 = bias_at(bias, oc1);
            dot2_s8(patch, filter + (int64_t)oc * patch_bytes, filter + (int64_t)oc1 * patch_bytes, patch_bytes,
                    rq->in_zp, offset, &acc0, &acc1);
            output[oc] = requantize(acc0, rq, oc);
            output[oc1] = requantize(acc1, rq, oc1);
        }
    }
}

static void conv_patch_mve(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output)
{
    const int32_t image_stride = w->in_h * w->in_w * w->in_c;
    int32_t n, oy;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *image = input + (int64_t)n * image_stride;
        for (oy = 0; oy < w->out_h; ++oy, output += (int64_t)w->out_w * w->out_c) {
            patch_row_mve(w, image, filter, bias, rq, oy, output);
        }
    }
}

void tgr_conv_patch_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output)
{
    const tgr_window win = *w; /* local copies, as in tgr_conv_general_s8 */
    const tgr_requant q = *rq;
    conv_patch_mve(&win, input, filter, bias, &q, output);
}

#else
typedef int tgr_conv_patch_mve_not_built; /* a translation unit declares something (C99 6.9) */
#endif
