/*
 * Inline helpers every convolution-family variant may take (conv_*.c, depthwise*.c,
 * fully_connected.c), in every build: the int32 accumulator's wrap-around, the per-channel
 * requantization (and one channel's, decoded once for many outputs), the bias, the packed-pair dot products (simd32.h) and the taps of a window
 * that lie inside the input. In the Helium build (mve=1) dot2_s8/dot4_s8 take Helium dot
 * products for runs of 16 inputs and more; everything else is the same code in every build.
 * Helpers only the Helium variants take: mve_common.h.
 *
 * Arithmetic: docs/execution.md#convolution-gemm-and-matmul. The accumulator is int32 with
 * wrap-around, so its sums may be formed in any order: every variant gives exactly the sums of
 * the plain loops (conv_plain.c).
 */
#ifndef TGR_KERNELS_CONV_COMMON_H
#define TGR_KERNELS_CONV_COMMON_H

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

/* requantize() with the channel's multiplier and shift already read (a pass that requantizes
 * several pixels of one channel reads them once). */
static inline int8_t requantize_by(int32_t acc, int32_t multiplier, int32_t shift, const tgr_requant *rq)
{
    int32_t y = wrap_add(fp_mul_by_valid_multiplier(acc, multiplier, shift), rq->out_zp);
    return (int8_t)clamp_i32(y, rq->act_min, rq->act_max);
}

static inline int8_t requantize(int32_t acc, const tgr_requant *rq, int32_t channel)
{
    int32_t pair = rq->per_channel ? channel : 0;
    return requantize_by(acc, rd_i32(rq->multipliers + 4 * pair), rd_i32(rq->shifts + 4 * pair), rq);
}

static inline int32_t bias_at(const uint8_t *bias, int32_t channel)
{
    return bias != NULL ? rd_i32(bias + 4 * channel) : 0;
}

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
    for (; i < (n & ~3); i += 4) {
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

/* Taps of the window at (iy0, ix0) inside the input: rows [taps[0], taps[1]), columns [taps[2], taps[3]). */
static inline void window_taps(const tgr_window *w, int32_t iy0, int32_t ix0, int32_t *taps)
{
    taps_inside(iy0, w->kernel_h, w->dilation_h, w->in_h, &taps[0], &taps[1]);
    taps_inside(ix0, w->kernel_w, w->dilation_w, w->in_w, &taps[2], &taps[3]);
}

#endif /* TGR_KERNELS_CONV_COMMON_H */
