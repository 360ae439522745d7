/*
 * Convolution-family int8 kernels: Conv (OHWI filter), transposed Conv (OHWI filter), depthwise
 * (HWC filter, channel multiplier) and fully connected ([OC][IC] filter). Arithmetic
 * (docs/execution.md#convolution-gemm-and-matmul): acc = bias + sum over valid taps of (x - in_zp) * w; padding taps are skipped, which equals
 * padding with the input zero point; then per-channel requantization and the int8 clamp.
 *
 * The accumulator is int32 with wrap-around, so its sums are taken modulo 2^32 and may be formed
 * in any order: the fast paths below take the products four at a time as packed 16-bit pairs
 * (simd32.h; SMLAD on the DSP extension), two output channels (Conv, Gemm) or four channels
 * (depthwise) per pass over the inputs, a whole in-bounds kernel row of Conv as one contiguous
 * run, and give exactly the int32 sums the plain loops give. The plain loops stay for what a
 * fast path does not cover: depthwise channel multipliers above 1, transposed convolution, and a
 * zero point whose x - zp does not fit a 16-bit lane (the loader passes only int8 zero points,
 * but the kernels' contract is any int32 the struct holds).
 */
#include "base/bytes.h"
#include "kernels/fixedpoint.h"
#include "kernels/kernels.h"
#include "kernels/simd32.h"

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
    int32_t y = wrap_add(fp_mul_by_valid_multiplier(acc, multiplier, shift), rq->out_zp);
    return (int8_t)clamp_i32(y, rq->act_min, rq->act_max);
}

static inline int32_t bias_at(const uint8_t *bias, int32_t channel)
{
    return bias != NULL ? rd_i32(bias + 4 * channel) : 0;
}

/* Whether every x - zp of an int8 input fits a signed 16-bit lane, as the packed paths need. */
static inline int packs_in_16_bits(int32_t zp)
{
    return zp >= -32000 && zp <= 32000;
}

/* acc0 += sum (x[i] - zp) * f0[i], acc1 += sum (x[i] - zp) * f1[i] over i < n: each input word
 * is widened once for both filters. `offset` is s32_pair(-zp). */
static inline void dot2_pairs(const int8_t *x, const int8_t *f0, const int8_t *f1, int32_t n, int32_t zp,
                           uint32_t offset, int32_t *acc0, int32_t *acc1)
{
    int32_t a0 = *acc0;
    int32_t a1 = *acc1;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32_t xw = s32_load(x + i);
        const uint32_t xe = s32_even_plus(offset, xw);
        const uint32_t xo = s32_odd_plus(offset, xw);
        const uint32_t w0 = s32_load(f0 + i);
        const uint32_t w1 = s32_load(f1 + i);
        a0 = s32_mla_pairs(xe, s32_even(w0), a0);
        a1 = s32_mla_pairs(xe, s32_even(w1), a1);
        a0 = s32_mla_pairs(xo, s32_odd(w0), a0);
        a1 = s32_mla_pairs(xo, s32_odd(w1), a1);
    }
    for (; i < n; ++i) {
        const int32_t xv = (int32_t)x[i] - zp;
        a0 = wrap_add(a0, xv * (int32_t)f0[i]);
        a1 = wrap_add(a1, xv * (int32_t)f1[i]);
    }
    *acc0 = a0;
    *acc1 = a1;
}

/* dot2_pairs for four filters: each input word is widened once for all four. */
static inline void dot4_pairs(const int8_t *x, const int8_t *f0, int32_t filter_stride, int32_t n, int32_t zp,
                           uint32_t offset, int32_t *acc)
{
    const int8_t *f1 = f0 + filter_stride;
    const int8_t *f2 = f1 + filter_stride;
    const int8_t *f3 = f2 + filter_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32_t xw = s32_load(x + i);
        const uint32_t xe = s32_even_plus(offset, xw);
        const uint32_t xo = s32_odd_plus(offset, xw);
        uint32_t fw = s32_load(f0 + i);
        a0 = s32_mla_pairs(xe, s32_even(fw), a0);
        a0 = s32_mla_pairs(xo, s32_odd(fw), a0);
        fw = s32_load(f1 + i);
        a1 = s32_mla_pairs(xe, s32_even(fw), a1);
        a1 = s32_mla_pairs(xo, s32_odd(fw), a1);
        fw = s32_load(f2 + i);
        a2 = s32_mla_pairs(xe, s32_even(fw), a2);
        a2 = s32_mla_pairs(xo, s32_odd(fw), a2);
        fw = s32_load(f3 + i);
        a3 = s32_mla_pairs(xe, s32_even(fw), a3);
        a3 = s32_mla_pairs(xo, s32_odd(fw), a3);
    }
    for (; i < n; ++i) {
        const int32_t xv = (int32_t)x[i] - zp;
        a0 = wrap_add(a0, xv * (int32_t)f0[i]);
        a1 = wrap_add(a1, xv * (int32_t)f1[i]);
        a2 = wrap_add(a2, xv * (int32_t)f2[i]);
        a3 = wrap_add(a3, xv * (int32_t)f3[i]);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

#if TGR_SIMD_MVE

/* Helium forms of dot2_pairs/dot4_pairs: sixteen products per VMLADAVA, the tail predicated. Over
 * raw int8 inputs: sum (x - zp) * w = sum x * w - zp * sum w, modulo 2^32 like the accumulator,
 * so the zero point costs one VADDVA per filter vector instead of a widening. */
static inline int32_t mve_zp_correct(int32_t acc, int32_t dot, int32_t weight_sum, int32_t zp)
{
    return wrap_add(acc, (int32_t)((uint32_t)dot - (uint32_t)zp * (uint32_t)weight_sum));
}

static inline void dot2_mve(const int8_t *x, const int8_t *f0, const int8_t *f1, int32_t n, int32_t zp,
                            int32_t *acc0, int32_t *acc1)
{
    int32_t d0 = 0, d1 = 0, s0 = 0, s1 = 0, i;
    for (i = 0; i < n; i += 16) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - i));
        const int8x16_t xv = vldrbq_z_s8(x + i, live);
        const int8x16_t w0 = vldrbq_z_s8(f0 + i, live);
        const int8x16_t w1 = vldrbq_z_s8(f1 + i, live);
        d0 = vmladavaq_s8(d0, xv, w0);
        s0 = vaddvaq_s8(s0, w0);
        d1 = vmladavaq_s8(d1, xv, w1);
        s1 = vaddvaq_s8(s1, w1);
    }
    *acc0 = mve_zp_correct(*acc0, d0, s0, zp);
    *acc1 = mve_zp_correct(*acc1, d1, s1, zp);
}

static inline void dot4_mve(const int8_t *x, const int8_t *f0, int32_t filter_stride, int32_t n, int32_t zp,
                            int32_t *acc)
{
    const int8_t *f1 = f0 + filter_stride;
    const int8_t *f2 = f1 + filter_stride;
    const int8_t *f3 = f2 + filter_stride;
    int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0, i;
    for (i = 0; i < n; i += 16) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - i));
        const int8x16_t xv = vldrbq_z_s8(x + i, live);
        int8x16_t wv = vldrbq_z_s8(f0 + i, live);
        d0 = vmladavaq_s8(d0, xv, wv);
        s0 = vaddvaq_s8(s0, wv);
        wv = vldrbq_z_s8(f1 + i, live);
        d1 = vmladavaq_s8(d1, xv, wv);
        s1 = vaddvaq_s8(s1, wv);
        wv = vldrbq_z_s8(f2 + i, live);
        d2 = vmladavaq_s8(d2, xv, wv);
        s2 = vaddvaq_s8(s2, wv);
        wv = vldrbq_z_s8(f3 + i, live);
        d3 = vmladavaq_s8(d3, xv, wv);
        s3 = vaddvaq_s8(s3, wv);
    }
    acc[0] = mve_zp_correct(acc[0], d0, s0, zp);
    acc[1] = mve_zp_correct(acc[1], d1, s1, zp);
    acc[2] = mve_zp_correct(acc[2], d2, s2, zp);
    acc[3] = mve_zp_correct(acc[3], d3, s3, zp);
}

/* Four int32 values `step` bytes apart (4: one per channel; 0: one for all) as a vector, read
 * with scalar loads: plan arrays need not be aligned for vector loads. */
static inline int32x4_t mve_load4_i32(const uint8_t *p, int32_t step)
{
    int32x4_t v = vdupq_n_s32(rd_i32(p));
    v = vsetq_lane_s32(rd_i32(p + step), v, 1);
    v = vsetq_lane_s32(rd_i32(p + 2 * step), v, 2);
    return vsetq_lane_s32(rd_i32(p + 3 * step), v, 3);
}

/* requantize() on four lanes (simd32.h: mve_mul_by_quantized_multiplier). */
static inline int32x4_t mve_requantize4(int32x4_t acc, int32x4_t multiplier, int32x4_t shift, const tgr_requant *rq)
{
    const int32x4_t v = vaddq_n_s32(mve_mul_by_quantized_multiplier(acc, multiplier, shift), rq->out_zp);
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(rq->act_min)), vdupq_n_s32(rq->act_max));
}

/* Multiplier and shift vectors of channels c..c+3. */
static inline void mve_channel_pairs(const tgr_requant *rq, int32_t c, int32x4_t *multiplier, int32x4_t *shift)
{
    const int32_t step = rq->per_channel ? 4 : 0;
    *multiplier = mve_load4_i32(rq->multipliers + step * c, step);
    *shift = mve_load4_i32(rq->shifts + step * c, step);
}

#endif /* TGR_SIMD_MVE */

/* The dot products the convolution paths call: Helium for runs of 16 and more in the mve=1
 * build (shorter runs, a first layer's kernel row of a few inputs, cost more in predication
 * than they save), packed pairs otherwise. */
static inline void dot2_s8(const int8_t *x, const int8_t *f0, const int8_t *f1, int32_t n, int32_t zp,
                           uint32_t offset, int32_t *acc0, int32_t *acc1)
{
#if TGR_SIMD_MVE
    if (n >= 16) {
        dot2_mve(x, f0, f1, n, zp, acc0, acc1);
        return;
    }
#endif
    dot2_pairs(x, f0, f1, n, zp, offset, acc0, acc1);
}

static inline void dot4_s8(const int8_t *x, const int8_t *f0, int32_t filter_stride, int32_t n, int32_t zp,
                           uint32_t offset, int32_t *acc)
{
#if TGR_SIMD_MVE
    if (n >= 16) {
        dot4_mve(x, f0, filter_stride, n, zp, acc);
        return;
    }
#endif
    dot4_pairs(x, f0, filter_stride, n, zp, offset, acc);
}


/* Taps [*first, *end) of `count` taps from `origin`, `dilation` apart, that land inside
 * [0, extent): positions grow with the tap, so the taps inside are one run. */
static inline void taps_inside(int32_t origin, int32_t count, int32_t dilation, int32_t extent, int32_t *first,
                               int32_t *end)
{
    int32_t a = 0, b = count;
    while (a < b && origin + a * dilation < 0) {
        ++a;
    }
    while (b > a && origin + (b - 1) * dilation >= extent) {
        --b;
    }
    *first = a;
    *end = b;
}

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

/* Taps of the window at (iy0, ix0) inside the input: rows [taps[0], taps[1]), columns [taps[2], taps[3]). */
static inline void window_taps(const tgr_window *w, int32_t iy0, int32_t ix0, int32_t *taps)
{
    taps_inside(iy0, w->kernel_h, w->dilation_h, w->in_h, &taps[0], &taps[1]);
    taps_inside(ix0, w->kernel_w, w->dilation_w, w->in_w, &taps[2], &taps[3]);
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

#if TGR_SIMD_MVE
/* acc[k] += sum x[i] * fk[i] over i < n for the four filters fk = f0 + k * filter_stride: raw
 * int8 products, sixteen per VMLADAVA, the zero point left to the caller. */
static inline void dot4_mve_raw(const int8_t *x, const int8_t *f0, int32_t filter_stride, int32_t n, int32_t *acc)
{
    const int8_t *f1 = f0 + filter_stride;
    const int8_t *f2 = f1 + filter_stride;
    const int8_t *f3 = f2 + filter_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], i = 0;
    for (; i + 16 <= n; i += 16) {
        const int8x16_t xv = vldrbq_s8(x + i);
        a0 = vmladavaq_s8(a0, xv, vldrbq_s8(f0 + i));
        a1 = vmladavaq_s8(a1, xv, vldrbq_s8(f1 + i));
        a2 = vmladavaq_s8(a2, xv, vldrbq_s8(f2 + i));
        a3 = vmladavaq_s8(a3, xv, vldrbq_s8(f3 + i));
    }
    if (i < n) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - i));
        const int8x16_t xv = vldrbq_z_s8(x + i, live);
        a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(f0 + i, live));
        a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(f1 + i, live));
        a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(f2 + i, live));
        a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(f3 + i, live));
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* Whether every output's window lies wholly inside the input (pointwise layers, valid
 * convolutions, tiles cut with their halo): then sum w over a window is the whole filter's. */
static int windows_inside(const tgr_window *w)
{
    return w->pad_top <= 0 && w->pad_left <= 0 &&
           (int64_t)(w->out_h - 1) * w->stride_h + (int64_t)(w->kernel_h - 1) * w->dilation_h - w->pad_top < w->in_h &&
           (int64_t)(w->out_w - 1) * w->stride_w + (int64_t)(w->kernel_w - 1) * w->dilation_w - w->pad_left < w->in_w;
}

/* The Helium build's convolution when every window is inside, for whole groups of four output
 * channels: per group, bias - zp * sum(w) and the requantization vectors once; per pixel, the
 * four raw dot products and one vector requantization (mve_requantize4) into the four bytes. */
static void conv_groups_mve(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output)
{
    const int32_t run = w->dilation_w == 1 ? w->kernel_w * w->in_c : w->in_c; /* inputs per dot */
    const int32_t runs_per_row = w->dilation_w == 1 ? 1 : w->kernel_w;
    const int32_t filter_stride = w->kernel_h * w->kernel_w * w->in_c;
    const int32_t image_stride = w->in_h * w->in_w * w->in_c;
    int32_t oc, n, oy, ox, ky, r, i;
    for (oc = 0; oc + 4 <= w->out_c; oc += 4) {
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
}
#endif

#if TGR_SIMD_MVE
/* Input bytes a convolution window may gather into a patch on the stack (conv_patch_mve): a
 * first layer's 10x4x1 or 3x3x3, a padded 3x3 over up to 28 channels. */
#define CONV_PATCH_BYTES 256

/* The Helium build's convolution for windows cut by padding: each output pixel's window is
 * gathered into a patch, taps outside the input holding the zero point (so they add
 * (zp - zp) * w = 0, exactly what skipping them adds); then every group of four channels is one
 * raw dot product over the patch, bias - zp * sum(w), and a vector requantization; the last
 * channels one or two at a time from the same patch. */
static void conv_patch_mve(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = w->in_c;
    const int32_t patch_bytes = w->kernel_h * w->kernel_w * in_c;
    const int32_t image_stride = w->in_h * w->in_w * in_c;
    const uint32_t offset = s32_pair(-rq->in_zp);
    int8_t patch[CONV_PATCH_BYTES];
    int32_t n, oy, ox, ky, kx, i, oc;
    for (n = 0; n < w->batch; ++n) {
        const int8_t *image = input + (int64_t)n * image_stride;
        for (oy = 0; oy < w->out_h; ++oy) {
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
    }
}
#endif

#if !TGR_SIMD_MVE /* Helium builds take conv_groups_mve for these */
/* One output channel's requantization, decoded once for many outputs (fp_mul_by_valid_multiplier,
 * then the zero point and the clamp). */
typedef struct channel_requant {
    int32_t multiplier, left, right;
    uint32_t mask;
    int32_t out_zp, act_min, act_max;
} channel_requant;

static inline channel_requant channel_requant_of(const tgr_requant *rq, int32_t channel)
{
    const int32_t pair = rq->per_channel ? channel : 0;
    const int32_t shift = rd_i32(rq->shifts + 4 * pair);
    channel_requant c;
    c.multiplier = rd_i32(rq->multipliers + 4 * pair);
    c.left = shift > 0 ? shift : 0;
    c.right = c.left - shift;
    c.mask = (1u << c.right) - 1u;
    c.out_zp = rq->out_zp;
    c.act_min = rq->act_min;
    c.act_max = rq->act_max;
    return c;
}

/* requantize() with the channel's values at hand: the same arithmetic as fp_mul_by_valid_multiplier
 * and fp_rdbpot31. */
static inline int8_t requantize_channel(int32_t acc, const channel_requant *c)
{
    const int64_t product = (int64_t)(int32_t)((uint32_t)acc << c->left) * (int64_t)c->multiplier;
    const int32_t high = (int32_t)((product + ((int64_t)1 << 30)) >> 31);
    const uint32_t threshold = (c->mask >> 1) + (high < 0 ? 1u : 0u);
    const int32_t y = wrap_add((high >> c->right) + (((uint32_t)high & c->mask) > threshold ? 1 : 0), c->out_zp);
    return (int8_t)clamp_i32(y, c->act_min, c->act_max);
}

/* Pointwise convolution (1x1, stride 1, every output over an input: a matrix product over
 * channels) with few input channels, `words` = in_c / 4 (1 to 4): the expansion layers of
 * inverted residual blocks, where a requantization per few MACs dominates. One output channel at
 * a time over every pixel, so its widened filter row and its requantization stay at hand. A tile
 * or stripe may hand in more input than it reads (a negative pad is an offset into it). */
static inline void pointwise_narrow(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                                    const tgr_requant *rq, int8_t *output, const int32_t words)
{
    const int32_t in_c = 4 * words;
    const int32_t out_c = w->out_c;
    const uint32_t offset = s32_pair(-rq->in_zp);
    int32_t oc, n, oy, ox, i;
    for (oc = 0; oc < out_c; ++oc) {
        const channel_requant c = channel_requant_of(rq, oc);
        const int32_t b = bias_at(bias, oc);
        int8_t *y = output + oc;
        uint32_t fe[4], fo[4];
        for (i = 0; i < words; ++i) {
            const uint32_t fw = s32_load(filter + (int64_t)oc * in_c + 4 * i);
            fe[i] = s32_even(fw);
            fo[i] = s32_odd(fw);
        }
        for (n = 0; n < w->batch; ++n) {
            for (oy = 0; oy < w->out_h; ++oy) {
                const int8_t *x = input + (((int64_t)n * w->in_h + oy - w->pad_top) * w->in_w - w->pad_left) * in_c;
                for (ox = 0; ox < w->out_w; ++ox, x += in_c, y += out_c) {
                    int32_t acc = b;
                    for (i = 0; i < words; ++i) {
                        const uint32_t xw = s32_load(x + 4 * i);
                        acc = s32_mla_pairs(s32_even_plus(offset, xw), fe[i], acc);
                        acc = s32_mla_pairs(s32_odd_plus(offset, xw), fo[i], acc);
                    }
                    *y = requantize_channel(acc, &c);
                }
            }
        }
    }
}

/* Whether tgr_conv_s8 can take pointwise_narrow: a 1x1 kernel, stride 1, every output over an
 * input position, 4 to 16 input channels in whole words. */
static int is_narrow_pointwise(const tgr_window *w)
{
    return w->kernel_h == 1 && w->kernel_w == 1 && w->stride_h == 1 && w->stride_w == 1 && w->pad_top <= 0 &&
           w->pad_left <= 0 && w->out_h - w->pad_top <= w->in_h && w->out_w - w->pad_left <= w->in_w &&
           w->in_c % 4 == 0 && w->in_c >= 4 && w->in_c <= 16;
}
#endif

void tgr_conv_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                 const uint8_t *bias, const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = w->in_c;
    int32_t n, oy, ox, oc, ky, kx, ic;
    if (packs_in_16_bits(rq->in_zp)) {
        /* Local copies: the int8 output stores may alias anything the pointers reach, so the
         * compiler would reload every field after each store. */
        const tgr_window win = *w;
        const tgr_requant q = *rq;
        int32_t oc_first = 0;
#if TGR_SIMD_MVE
        if (windows_inside(&win)) {
            conv_groups_mve(&win, input, filter, bias, &q, output);
            oc_first = win.out_c & ~3;
            if (oc_first == win.out_c) {
                return;
            }
        } else if (win.kernel_h * win.kernel_w * in_c <= CONV_PATCH_BYTES) {
            conv_patch_mve(&win, input, filter, bias, &q, output);
            return;
        }
#else
        if (is_narrow_pointwise(&win)) {
            switch (win.in_c / 4) { /* the word count as a constant: its loops unroll */
            case 1: pointwise_narrow(&win, input, filter, bias, &q, output, 1); return;
            case 2: pointwise_narrow(&win, input, filter, bias, &q, output, 2); return;
            case 3: pointwise_narrow(&win, input, filter, bias, &q, output, 3); return;
            default: pointwise_narrow(&win, input, filter, bias, &q, output, 4); return;
            }
        }
#endif
        for (n = 0; n < win.batch; ++n) {
            const int8_t *in_image = input + (int64_t)n * win.in_h * win.in_w * in_c;
            for (oy = 0; oy < win.out_h; ++oy) {
                for (ox = 0; ox < win.out_w; ++ox) {
                    conv_pixel_fast(&win, in_image, filter, bias, &q, oy, ox, output, oc_first);
                    output += win.out_c;
                }
            }
        }
        return;
    }
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

#if TGR_SIMD_MVE
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

/* The Helium build's depthwise convolution (channel multiplier 1) for whole groups of four
 * channels: per group its bias, bias - zp * sum(w) and requantization vectors once; along each
 * output row, the windows wholly inside the input as x * w from the second bias (a 3x3 in
 * straight-line rows), the others (x - zp) * w over their inside taps; one vector
 * requantization per output. */
static void depthwise_groups_mve(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                                 const tgr_requant *rq, int8_t *output)
{
    const int32_t channels = w->in_c;
    const int32_t row = w->in_w * channels;
    const int32_t x_step = w->stride_w * channels;
    const int32_t reach_h = (w->kernel_h - 1) * w->dilation_h;
    const int32_t reach_w = (w->kernel_w - 1) * w->dilation_w;
    const int straight_3x3 = w->kernel_h == 3 && w->kernel_w == 3 && w->dilation_h == 1 && w->dilation_w == 1;
    int32_t ox_lo = 0, ox_hi = w->out_w;
    int32_t c, n, oy, ox, ky, kx, t;
    /* Outputs [ox_lo, ox_hi) of a row have their windows inside the input's columns. */
    while (ox_lo < w->out_w && ox_lo * w->stride_w - w->pad_left < 0) {
        ++ox_lo;
    }
    while (ox_hi > ox_lo && (ox_hi - 1) * w->stride_w - w->pad_left + reach_w >= w->in_w) {
        --ox_hi;
    }
    for (c = 0; c + 4 <= channels; c += 4) {
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
}
#endif

void tgr_depthwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                      const uint8_t *bias, const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = w->in_c;
    const int32_t multiplier = w->out_c / w->in_c;
    int32_t n, oy, ox, oc, ky, kx;
    if (multiplier == 1 && packs_in_16_bits(rq->in_zp)) {
        const tgr_window win = *w; /* local copies, as in tgr_conv_s8 */
        const tgr_requant q = *rq;
        int32_t c_first = 0;
#if TGR_SIMD_MVE
        depthwise_groups_mve(&win, input, filter, bias, &q, output);
        c_first = in_c & ~3;
        if (c_first == in_c) {
            return;
        }
#endif
        for (n = 0; n < win.batch; ++n) {
            const int8_t *in_image = input + (int64_t)n * win.in_h * win.in_w * in_c;
            for (oy = 0; oy < win.out_h; ++oy) {
                for (ox = 0; ox < win.out_w; ++ox) {
                    depthwise_pixel_fast(&win, in_image, filter, bias, &q, oy, ox, output, c_first);
                    output += in_c;
                }
            }
        }
        return;
    }
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
    if (packs_in_16_bits(rq->in_zp)) {
        const tgr_requant q = *rq; /* a local copy, as in tgr_conv_s8 */
        const uint32_t offset = s32_pair(-q.in_zp);
        for (r = 0; r < rows; ++r) {
            const int8_t *x = input + (int64_t)r * in_features;
            for (oc = 0; oc < out_features; oc += 2) {
                const int32_t oc1 = oc + 1 < out_features ? oc + 1 : oc;
                int32_t acc0 = bias_at(bias, oc);
                int32_t acc1 = bias_at(bias, oc1);
                dot2_s8(x, filter + (int64_t)oc * in_features, filter + (int64_t)oc1 * in_features, in_features,
                        q.in_zp, offset, &acc0, &acc1);
                output[oc] = requantize(acc0, &q, oc);
                output[oc1] = requantize(acc1, &q, oc1);
            }
            output += out_features;
        }
        return;
    }
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
