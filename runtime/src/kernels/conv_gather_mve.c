/*
 * Conv, Helium gather variant (METHOD_CONV_GATHER in the mve=1 build: a padded layer whose window,
 * kernel_h x kernel_w x in_c, holds at most TGR_CONV_GATHER_INPUTS inputs). Contract: kernels.h,
 * tgr_conv_gather_mve_s8. Empty in every other build.
 *
 * Output channels in blocks of TGR_CONV_GATHER_CHANNELS: per block, once per call, each channel's
 * bias - zp * sum(w), multiplier and shift into tables on the stack; then per output pixel the
 * window gathered once into a patch (taps outside the input hold the zero point) and, per group of
 * four channels, four raw VMLADAVA dot products over the patch, one vector requantization from the
 * tables and one store. A last group of fewer than four channels repeats the last channel in its
 * other lanes and stores only its own.
 */
#include "kernels/isa.h"

#if TGR_SIMD_MVE
#include "kernels/mve_common.h"

/* One block of channels' constants, each group of four lanes a vector (lanes past the layer's last
 * channel repeat it). */
typedef struct gather_tables {
    int32_t base[TGR_CONV_GATHER_CHANNELS];
    int32_t multiplier[TGR_CONV_GATHER_CHANNELS];
    int32_t shift[TGR_CONV_GATHER_CHANNELS];
} gather_tables;

/* The patches of two pixels, TGR_CONV_GATHER_INPUTS bytes apart. */
#define SECOND TGR_CONV_GATHER_INPUTS

/* Sixteen bytes of a patch (word-aligned: a vector word load reaches the second patch by its
 * immediate offset, which a byte load's range does not). */
static inline int8x16_t patch_load(const int8_t *x)
{
    return vreinterpretq_s8_s32(vldrwq_s32((const int32_t *)(const void *)x));
}

/* acc[4 * p + j] = sum xp[i] * fj[i] over i < k for the patches x0 = x, x1 = x + SECOND and the four
 * filters fj: raw int8 products, sixteen per VMLADAVA, each filter vector loaded once for both
 * patches. The patches hold zero from k to the next multiple of 16, so the filters' bytes there
 * (the next filter's first bytes) add nothing: the loads need no predicate where the filters have
 * them (tail == 0). Where they may not (the layer's last filter among them: tail != 0), the last
 * loads are predicated so as not to read past the filter. */
static inline void dot_2x4(const int8_t *x, const int8_t *f0, const int8_t *f1, const int8_t *f2, const int8_t *f3,
                           int32_t k, int tail, int32_t *acc)
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0, i = 0;
    const int32_t whole = tail ? k & ~15 : k;
    int8x16_t wv;
    for (; i < whole; i += 16) {
        const int8x16_t x0 = patch_load(x + i);
        const int8x16_t x1 = patch_load(x + SECOND + i);
        wv = vldrbq_s8(f0 + i);
        a0 = vmladavaq_s8(a0, x0, wv);
        b0 = vmladavaq_s8(b0, x1, wv);
        wv = vldrbq_s8(f1 + i);
        a1 = vmladavaq_s8(a1, x0, wv);
        b1 = vmladavaq_s8(b1, x1, wv);
        wv = vldrbq_s8(f2 + i);
        a2 = vmladavaq_s8(a2, x0, wv);
        b2 = vmladavaq_s8(b2, x1, wv);
        wv = vldrbq_s8(f3 + i);
        a3 = vmladavaq_s8(a3, x0, wv);
        b3 = vmladavaq_s8(b3, x1, wv);
    }
    if (i < k) { /* the loop's step once more, its filter loads predicated (same shape on purpose:
                  * one more pass of the loop would predicate every load) */
        const mve_pred16_t live = vctp8q((uint32_t)(k - i));
        const int8x16_t x0 = patch_load(x + i);
        const int8x16_t x1 = patch_load(x + SECOND + i);
        wv = vldrbq_z_s8(f0 + i, live);
        a0 = vmladavaq_s8(a0, x0, wv);
        b0 = vmladavaq_s8(b0, x1, wv);
        wv = vldrbq_z_s8(f1 + i, live);
        a1 = vmladavaq_s8(a1, x0, wv);
        b1 = vmladavaq_s8(b1, x1, wv);
        wv = vldrbq_z_s8(f2 + i, live);
        a2 = vmladavaq_s8(a2, x0, wv);
        b2 = vmladavaq_s8(b2, x1, wv);
        wv = vldrbq_z_s8(f3 + i, live);
        a3 = vmladavaq_s8(a3, x0, wv);
        b3 = vmladavaq_s8(b3, x1, wv);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    acc[4] = b0;
    acc[5] = b1;
    acc[6] = b2;
    acc[7] = b3;
}

/* The window of output pixel q of the call (pixels in output order) into patch: the patch first
 * all zero point up to k16 (k rounded up to 16), then the taps inside the input copied over it by
 * predicated vector loads and stores (no byte outside the input or the patch is touched): with
 * dilation 1 a kernel row's inside taps are one run, one vector for runs of up to 16 bytes; then
 * zeros from k to k16 (raw zeros: dot_2x4 multiplies them by the next filter's bytes). Not inline:
 * one function for both pixels, on its own copy of the window. */
static TGR_NOINLINE void gather_pixel(const tgr_window *w_in, const int8_t *image, int32_t q, int32_t k, int32_t k16,
                                      int32_t zp, int8_t *patch)
{
    const tgr_window w = *w_in;
    const int32_t oy = q / w.out_w;
    const int32_t ox = q - oy * w.out_w;
    const int32_t iy0 = oy * w.stride_h - w.pad_top;
    const int32_t ix0 = ox * w.stride_w - w.pad_left;
    const int32_t row = w.kernel_w * w.in_c;
    const int32_t row_step = w.dilation_h * w.in_w * w.in_c; /* input bytes from one kernel row to the next */
    const int8x16_t pad = vdupq_n_s8((int8_t)zp);
    int32_t first, end, ky0, ky1, ky, kx, i;
    for (i = 0; i < k16; i += 16) {
        vstrbq_s8(patch + i, pad);
    }
    taps_inside(ix0, w.kernel_w, w.dilation_w, w.in_w, &first, &end);
    taps_inside(iy0, w.kernel_h, w.dilation_h, w.in_h, &ky0, &ky1);
    if (first < end && ky0 < ky1) {
        const int32_t run = (end - first) * w.in_c;
        const int8_t *x = image + ((iy0 + ky0 * w.dilation_h) * w.in_w + ix0 + first * w.dilation_w) * w.in_c;
        int8_t *b = patch + ky0 * row + first * w.in_c;
        if (w.dilation_w == 1 && run <= 16) {
            const mve_pred16_t live = vctp8q((uint32_t)run);
            for (ky = ky0; ky < ky1; ++ky, x += row_step, b += row) {
                vstrbq_p_s8(b, vldrbq_z_s8(x, live), live);
            }
        } else {
            const int32_t tap_step = w.dilation_w == 1 ? run : w.in_c; /* bytes a copy */
            const int32_t copies = w.dilation_w == 1 ? 1 : end - first;
            for (ky = ky0; ky < ky1; ++ky, x += row_step, b += row) {
                for (kx = 0; kx < copies; ++kx) {
                    for (i = 0; i < tap_step; i += 16) {
                        const mve_pred16_t live = vctp8q((uint32_t)(tap_step - i));
                        vstrbq_p_s8(b + kx * w.in_c + i,
                                    vldrbq_z_s8(x + kx * w.dilation_w * w.in_c + i, live), live);
                    }
                }
            }
        }
    }
    vstrbq_p_s8(patch + k, vdupq_n_s8(0), vctp8q((uint32_t)(k16 - k)));
}

/* Channels oc + j .. oc + j + 3 of the two pixels whose patches are at patch: the dot products
 * (dot_2x4), then two vector requantizations from the tables into out + j and out1 + j, the first
 * `live` (1..4) lanes. */
static inline void gather_group(const int8_t *patch, const int8_t *f0, const int8_t *f1, const int8_t *f2,
                                const int8_t *f3, int32_t k, int tail, const gather_tables *t, int32_t j,
                                const tgr_requant *rq, int8_t *out, int8_t *out1, int32_t live)
{
    const mve_pred16_t store = vctp32q((uint32_t)live);
    const int32x4_t base = vldrwq_s32(t->base + j);
    const int32x4_t multiplier = vldrwq_s32(t->multiplier + j);
    const int32x4_t shift = vldrwq_s32(t->shift + j);
    int32_t acc[8];
    dot_2x4(patch, f0, f1, f2, f3, k, tail, acc);
    vstrbq_p_s32(out + j, mve_requantize4(vaddq_s32(vldrwq_s32(acc), base), multiplier, shift, rq), store);
    vstrbq_p_s32(out1 + j, mve_requantize4(vaddq_s32(vldrwq_s32(acc + 4), base), multiplier, shift, rq), store);
}

/* Channels [oc, oc + count) of every pixel of the call, count <= TGR_CONV_GATHER_CHANNELS: the
 * tables once, then two pixels at a time (an odd last pixel twice) their gathered windows against
 * each group of four channels. The hot pass (kernels/isa.h, TGR_NOINLINE), on its own copies of
 * the structs. */
static TGR_NOINLINE void gather_block_mve(const tgr_window *w_in, const int8_t *input, const int8_t *filter,
                                          const uint8_t *bias, const tgr_requant *rq_in, int8_t *output,
                                          int32_t oc, int32_t count)
{
    const tgr_window win = *w_in;
    const tgr_requant q = *rq_in;
    const int32_t k = win.kernel_h * win.kernel_w * win.in_c;
    const int32_t last = win.out_c - 1;
    const int32_t lanes = (count + 3) & ~3;
    const int32_t step = q.per_channel ? 4 : 0;
    const int32_t pixels = win.out_h * win.out_w;
    const int32_t k16 = (k + 15) & ~15;
    int32_t patch_words[2 * SECOND / 4]; /* the two patches, word-aligned (patch_load) */
    int8_t *patch = (int8_t *)patch_words;
    gather_tables t;
    int32_t easy = 0; /* groups [0, easy) take four channels and read whole vectors of their filters */
    int32_t n, p, j, i;
    while (easy + 4 <= count && (int64_t)(oc + easy + 3) * k + k16 <= (int64_t)win.out_c * k) {
        easy += 4;
    }
    for (j = 0; j < lanes; ++j) {
        const int32_t c = oc + j < last ? oc + j : last;
        const int8_t *f = filter + (int64_t)c * k;
        int32_t sum = 0;
        for (i = 0; i < k; i += 16) {
            sum = vaddvaq_s8(sum, vldrbq_z_s8(f + i, vctp8q((uint32_t)(k - i))));
        }
        t.base[j] = (int32_t)((uint32_t)bias_at(bias, c) - (uint32_t)q.in_zp * (uint32_t)sum);
        t.multiplier[j] = rd_i32(q.multipliers + step * c);
        t.shift[j] = rd_i32(q.shifts + step * c);
    }
    for (n = 0; n < win.batch; ++n) {
        const int8_t *image = input + (int64_t)n * win.in_h * win.in_w * win.in_c;
        int8_t *out = output + (int64_t)n * pixels * win.out_c + oc;
        for (p = 0; p < pixels; p += 2, out += 2 * win.out_c) {
            int8_t *out1 = p + 1 < pixels ? out + win.out_c : out;
            gather_pixel(&win, image, p, k, k16, q.in_zp, patch);
            gather_pixel(&win, image, p + 1 < pixels ? p + 1 : p, k, k16, q.in_zp, patch + SECOND);
            const int8_t *f0 = filter + (int64_t)oc * k;
            for (j = 0; j < easy; j += 4, f0 += 4 * k) {
                gather_group(patch, f0, f0 + k, f0 + 2 * k, f0 + 3 * k, k16, 0, &t, j, &q, out, out1, 4);
            }
            for (; j < count; j += 4, f0 += 4 * k) {
                const int8_t *f3 = oc + j + 3 < last ? f0 + 3 * k : filter + (int64_t)last * k;
                gather_group(patch, f0, oc + j + 1 < last ? f0 + k : f3, oc + j + 2 < last ? f0 + 2 * k : f3, f3, k, 1,
                             &t, j, &q, out, out1, count - j);
            }
        }
    }
}

void tgr_conv_gather_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output)
{
    int32_t oc;
    for (oc = 0; oc < w->out_c; oc += TGR_CONV_GATHER_CHANNELS) {
        const int32_t count = w->out_c - oc < TGR_CONV_GATHER_CHANNELS ? w->out_c - oc : TGR_CONV_GATHER_CHANNELS;
        gather_block_mve(w, input, filter, bias, rq, output, oc, count);
    }
}

#else
typedef int tgr_conv_gather_mve_not_built; /* a translation unit declares something (C99 6.9) */
#endif
