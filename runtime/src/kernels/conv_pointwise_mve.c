/*
 * Conv, pointwise Helium variant (METHOD_CONV_POINTWISE in the mve=1 build: a 1x1 kernel, stride
 * 1, no padding). Contract: kernels.h, tgr_conv_pointwise_mve_s8.
 * Empty in every other build.
 *
 * Groups of four output channels: per group, bias - zp * sum(w) (exact modulo 2^32 like the
 * accumulator) and the requantization vectors once, in vector registers for every pixel; per
 * pixel, four raw VMLADAVA dot products of sixteen inputs a step (the last in_c % 16 predicated)
 * straight from the pixel's inputs, the folded biases their starting values, then one vector
 * requantization into the four bytes; up to 16 inputs the four filters stay in vector registers
 * and a pixel is one predicated load. The last out_c % 4 channels take the plain loop
 * (conv_plain.h).
 */
#include "kernels/isa.h"

#if TGR_SIMD_MVE
#include "kernels/conv_plain.h"
#include "kernels/mve_common.h"

/* Output channels oc..oc+3 over `pixels` pixels whose inputs follow each other (in_c bytes each,
 * from x), outputs out_c bytes apart from y: the hot pass (kernels/isa.h, TGR_NOINLINE). */
static TGR_NOINLINE void pointwise_group_mve(const int8_t *x, int32_t pixels, int32_t in_c, int32_t out_c,
                                             const int8_t *f0, int32x4_t base, int32x4_t multiplier, int32x4_t shift,
                                             const tgr_requant *rq_in, int8_t *y)
{
    const tgr_requant q = *rq_in;
    const int8_t *f1 = f0 + in_c;
    const int8_t *f2 = f1 + in_c;
    const int8_t *f3 = f2 + in_c;
    const int32_t whole = in_c & ~15;
    const mve_pred16_t live = vctp8q((uint32_t)(in_c - whole));
    /* the folded biases start the dot products: no vector register and no add for them a pixel */
    const int32_t b0 = vgetq_lane_s32(base, 0), b1 = vgetq_lane_s32(base, 1);
    const int32_t b2 = vgetq_lane_s32(base, 2), b3 = vgetq_lane_s32(base, 3);
    int32_t p, i;
    if (in_c <= 16) { /* one vector a pixel: the four filters stay in registers */
        const mve_pred16_t all = vctp8q((uint32_t)in_c);
        const int8x16_t w0 = vldrbq_z_s8(f0, all), w1 = vldrbq_z_s8(f1, all);
        const int8x16_t w2 = vldrbq_z_s8(f2, all), w3 = vldrbq_z_s8(f3, all);
        for (p = 0; p < pixels; ++p, x += in_c, y += out_c) {
            const int8x16_t xv = vldrbq_z_s8(x, all);
            int32x4_t acc = vsetq_lane_s32(vmladavaq_s8(b1, xv, w1), vdupq_n_s32(vmladavaq_s8(b0, xv, w0)), 1);
            acc = vsetq_lane_s32(vmladavaq_s8(b3, xv, w3), vsetq_lane_s32(vmladavaq_s8(b2, xv, w2), acc, 2), 3);
            vstrbq_s32(y, mve_requantize4(acc, multiplier, shift, &q));
        }
        return;
    }
    for (p = 0; p < pixels; ++p, x += in_c, y += out_c) {
        int32_t a0 = b0, a1 = b1, a2 = b2, a3 = b3;
        for (i = 0; i < whole; i += 16) {
            const int8x16_t xv = vldrbq_s8(x + i);
            a0 = vmladavaq_s8(a0, xv, vldrbq_s8(f0 + i));
            a1 = vmladavaq_s8(a1, xv, vldrbq_s8(f1 + i));
            a2 = vmladavaq_s8(a2, xv, vldrbq_s8(f2 + i));
            a3 = vmladavaq_s8(a3, xv, vldrbq_s8(f3 + i));
        }
        if (whole < in_c) {
            const int8x16_t xv = vldrbq_z_s8(x + whole, live);
            a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(f0 + whole, live));
            a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(f1 + whole, live));
            a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(f2 + whole, live));
            a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(f3 + whole, live));
        }
        {
            int32x4_t acc = vdupq_n_s32(a0);
            acc = vsetq_lane_s32(a1, acc, 1);
            acc = vsetq_lane_s32(a2, acc, 2);
            acc = vsetq_lane_s32(a3, acc, 3);
            vstrbq_s32(y, mve_requantize4(acc, multiplier, shift, &q));
        }
    }
}

/* bias - zp * sum(w) of the four filters from f0 (in_c apart), as a vector. */
static int32x4_t folded_bias4(const int8_t *f0, int32_t in_c, const uint8_t *bias, int32_t oc, int32_t zp)
{
    int32_t sums[4] = {0, 0, 0, 0};
    int32_t k, i;
    for (k = 0; k < 4; ++k) {
        for (i = 0; i < in_c; i += 16) {
            sums[k] = vaddvaq_s8(sums[k], vldrbq_z_s8(f0 + k * in_c + i, vctp8q((uint32_t)(in_c - i))));
        }
    }
    return vsubq_s32(bias != NULL ? mve_load4_i32(bias + 4 * oc, 4) : vdupq_n_s32(0),
                     vmulq_n_s32(vldrwq_s32(sums), zp));
}

void tgr_conv_pointwise_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                               const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = w->in_c, out_c = w->out_c;
    const int64_t image_in = (int64_t)w->in_h * w->in_w * in_c;
    const int64_t image_out = (int64_t)w->out_h * w->out_w * out_c;
    /* the rows follow each other when they are whole: then one run of pixels, else one a row */
    const int32_t runs = w->out_w == w->in_w ? 1 : w->out_h;
    const int32_t run = w->out_w == w->in_w ? w->out_h * w->out_w : w->out_w;
    int32_t n, oc, r;
    for (oc = 0; oc + 4 <= out_c; oc += 4) {
        const int8_t *f0 = filter + (int64_t)oc * in_c;
        const int32x4_t base = folded_bias4(f0, in_c, bias, oc, rq->in_zp);
        int32x4_t multiplier, shift;
        mve_channel_pairs(rq, oc, &multiplier, &shift);
        for (n = 0; n < w->batch; ++n) {
            const int8_t *x = input + n * image_in + ((int64_t)-w->pad_top * w->in_w - w->pad_left) * in_c;
            int8_t *y = output + n * image_out + oc;
            for (r = 0; r < runs; ++r, x += (int64_t)w->in_w * in_c, y += (int64_t)run * out_c) {
                pointwise_group_mve(x, run, in_c, out_c, f0, base, multiplier, shift, rq, y);
            }
        }
    }
    if ((out_c & 3) != 0) { /* the last one to three channels by the plain loop (conv_plain.h) */
        conv_plain_channels(w, input, filter, bias, rq, output, out_c & ~3);
    }
}

#else
typedef int tgr_conv_pointwise_mve_not_built; /* a translation unit declares something (C99 6.9) */
#endif
