/*
 * Conv, gather variant (METHOD_CONV_GATHER in the DSP and portable builds: a padded layer whose
 * window, kernel_h x kernel_w x in_c, holds at most TGR_CONV_GATHER_INPUTS inputs). Contract:
 * kernels.h, tgr_conv_gather_s8. Empty in the Helium build, which has conv_gather_mve.c.
 *
 * Two output pixels at a time: each one's window is gathered once into a contiguous run (taps
 * outside the input hold the zero point, so they add (zp - zp) * w = 0, exactly what skipping them
 * adds) and widened once into 16-bit (x - zp) pairs in the order SMLAD takes them against a filter
 * word: (x0, x2), (x1, x3) for every four inputs. Then two output channels a pass over both
 * windows: each filter word is loaded and widened once for the two pixels, each window pair once
 * for the two channels (eight SMLAD per four inputs). A first layer's short rows (one input
 * channel: four bytes a kernel row) become one run of the whole window this way.
 */
#include "kernels/isa.h"

#if !TGR_SIMD_MVE
#include "kernels/conv_common.h"

/* 16-bit pair words of one gathered window: two per four inputs. */
#define GATHER_WORDS (TGR_CONV_GATHER_INPUTS / 2)

/* The r (1..3) bytes at f, the rest of a filter's last word, as a word whose other bytes are zero,
 * without reading past them: the filter's last four bytes shifted down when the filter has four
 * (k >= 4: f - (4 - r) is still in it), byte by byte otherwise. */
static inline uint32_t tail_word(const int8_t *f, int32_t r, int32_t k)
{
    uint32_t word;
    if (k >= 4) {
        return s32_load(f + r - 4) >> (32 - 8 * r);
    }
    word = (uint8_t)f[0];
    if (r > 1) {
        word |= (uint32_t)(uint8_t)f[1] << 8;
    }
    if (r > 2) {
        word |= (uint32_t)(uint8_t)f[2] << 16;
    }
    return word;
}

/* a0 += window 0 . four inputs of a filter, a1 += window 1 . the same (window 1 GATHER_WORDS
 * words on): the filter word widened once for both. */
static inline void mla_word_2(uint32_t word, const uint32_t *cols, int32_t *a0, int32_t *a1)
{
    const uint32_t we = s32_even(word);
    const uint32_t wo = s32_odd(word);
    *a0 = s32_mla_pairs(cols[1], wo, s32_mla_pairs(cols[0], we, *a0));
    *a1 = s32_mla_pairs(cols[GATHER_WORDS + 1], wo, s32_mla_pairs(cols[GATHER_WORDS], we, *a1));
}

/* acc[2 * p + c] += window p . filter c for the two windows at cols and cols + GATHER_WORDS and
 * the filters f0, f1 (k inputs each). */
static inline void dot_2x2(const uint32_t *cols, const int8_t *f0, const int8_t *f1, int32_t k, int32_t *acc)
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const uint32_t *end = cols + (k >> 2) * 2;
    for (; cols < end; cols += 2, f0 += 4, f1 += 4) {
        mla_word_2(s32_load(f0), cols, &a00, &a10);
        mla_word_2(s32_load(f1), cols, &a01, &a11);
    }
    if ((k & 3) != 0) { /* the windows hold zero past k: the filters' missing bytes read as zero */
        mla_word_2(tail_word(f0, k & 3, k), cols, &a00, &a10);
        mla_word_2(tail_word(f1, k & 3, k), cols, &a01, &a11);
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

/* Every output channel of the two pixels whose windows are gathered at cols (the second at
 * cols + GATHER_WORDS) into out0 and out1 (the same pixel twice when a call's pixel count is odd:
 * out1 == out0), two channels a pass (an odd last channel computed twice). The hot pass
 * (kernels/isa.h, TGR_NOINLINE), on its own copy of the requantization. */
static TGR_NOINLINE void gather_channels(const uint32_t *cols, int32_t k, int32_t out_c, const int8_t *filter,
                                         const uint8_t *bias, const tgr_requant *rq_in, int8_t *out0, int8_t *out1)
{
    const tgr_requant q = *rq_in;
    const int32_t step = q.per_channel ? 4 : 0;
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 2) {
        const int32_t oc1 = oc + 1 < out_c ? oc + 1 : oc;
        const int32_t m0 = rd_i32(q.multipliers + step * oc), s0 = rd_i32(q.shifts + step * oc);
        const int32_t m1 = rd_i32(q.multipliers + step * oc1), s1 = rd_i32(q.shifts + step * oc1);
        int32_t acc[4];
        int8_t y00, y01, y10, y11;
        acc[0] = bias_at(bias, oc);
        acc[1] = bias_at(bias, oc1);
        acc[2] = acc[0];
        acc[3] = acc[1];
        dot_2x2(cols, filter + (int64_t)oc * k, filter + (int64_t)oc1 * k, k, acc);
        y00 = requantize_by(acc[0], m0, s0, &q); /* every value before the first store, which may alias */
        y01 = requantize_by(acc[1], m1, s1, &q);
        y10 = requantize_by(acc[2], m0, s0, &q);
        y11 = requantize_by(acc[3], m1, s1, &q);
        out0[oc] = y00;
        out0[oc1] = y01;
        out1[oc] = y10;
        out1[oc1] = y11;
    }
}

/* n bytes from src to dst, a word at a time while four remain. A loop, not a library call
 * (TGR_OPAQUE): a window row is a few bytes. */
static inline void copy_bytes(int8_t *dst, const int8_t *src, int32_t n)
{
    for (; n >= 4; n -= 4, dst += 4, src += 4) {
        uint32_t word = s32_load(src);
        TGR_OPAQUE(word);
        memcpy(dst, &word, 4);
    }
    for (; n > 0; --n) {
        int8_t v = *src++;
        TGR_OPAQUE(v);
        *dst++ = v;
    }
}

/* The window whose origin is (iy0, ix0) as (x - zp) pairs in cols[0, 2 * ceil(k / 4)), k =
 * kernel_h * kernel_w * in_c: its bytes first, then each word widened into its even and odd pairs.
 * A window inside the input (the most common) is its kernel rows' runs copied, the bytes past k
 * up to a whole word the zero point; one cut by padding starts all zero point and has the taps
 * inside the input copied over it (a kernel row's one run with dilation 1): the taps outside add
 * (zp - zp) * w = 0, exactly what skipping them adds. Not inline: one copy for both pixels. */
static TGR_NOINLINE void gather_window(const tgr_window *w, const int8_t *image, int32_t iy0, int32_t ix0,
                                       int32_t k, int32_t zp, uint32_t *cols)
{
    uint32_t words[(TGR_CONV_GATHER_INPUTS + 3) / 4];
    int8_t *bytes = (int8_t *)words;
    const uint32_t offset = s32_pair(-zp);
    uint32_t pad = (uint8_t)zp * 0x01010101u;
    const int32_t in_c = w->in_c;
    const int32_t row = w->kernel_w * in_c;
    const int32_t row_step = w->dilation_h * w->in_w * in_c; /* input bytes from one kernel row to the next */
    const int32_t k_words = (k + 3) >> 2;
    int32_t first, end, ky0, ky1, ky, kx, i;
    if (w->dilation_w == 1 && ix0 >= 0 && ix0 + w->kernel_w <= w->in_w && iy0 >= 0 &&
        iy0 + (w->kernel_h - 1) * w->dilation_h < w->in_h) {
        const int8_t *x = image + (iy0 * w->in_w + ix0) * in_c;
        words[k_words - 1] = pad; /* the rows overwrite its bytes before k */
        for (ky = 0; ky < w->kernel_h; ++ky, x += row_step) {
            copy_bytes(bytes + ky * row, x, row);
        }
    } else {
        taps_inside(ix0, w->kernel_w, w->dilation_w, w->in_w, &first, &end);
        taps_inside(iy0, w->kernel_h, w->dilation_h, w->in_h, &ky0, &ky1);
        for (i = 0; i < k_words; ++i) {
            TGR_OPAQUE(pad); /* a loop, not a memset call */
            words[i] = pad;
        }
        if (first < end && ky0 < ky1) {
            const int32_t run = w->dilation_w == 1 ? (end - first) * in_c : in_c; /* bytes a copy */
            const int32_t copies = w->dilation_w == 1 ? 1 : end - first;
            const int8_t *x = image + ((iy0 + ky0 * w->dilation_h) * w->in_w + ix0 + first * w->dilation_w) * in_c;
            int8_t *b = bytes + ky0 * row + first * in_c;
            for (ky = ky0; ky < ky1; ++ky, x += row_step, b += row) {
                for (kx = 0; kx < copies; ++kx) {
                    copy_bytes(b + kx * in_c, x + kx * w->dilation_w * in_c, run);
                }
            }
        }
    }
    for (i = 0; i < k_words; ++i) {
        *cols++ = s32_even_plus(offset, words[i]);
        *cols++ = s32_odd_plus(offset, words[i]);
    }
}

void tgr_conv_gather_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                        const tgr_requant *rq, int8_t *output)
{
    const tgr_window win = *w; /* local copies, as in tgr_conv_general_s8 */
    const int32_t k = win.kernel_h * win.kernel_w * win.in_c;
    const int32_t image_stride = win.in_h * win.in_w * win.in_c;
    const int32_t pixels = win.out_h * win.out_w;
    uint32_t cols[2 * GATHER_WORDS];
    int32_t n, p, half;
    for (n = 0; n < win.batch; ++n) {
        const int8_t *image = input + (int64_t)n * image_stride;
        for (p = 0; p < pixels; p += 2, output += 2 * win.out_c) {
            int8_t *out1 = p + 1 < pixels ? output + win.out_c : output;
            for (half = 0; half < 2; ++half) {
                const int32_t q = p + half < pixels ? p + half : p;
                const int32_t oy = q / win.out_w;
                const int32_t ox = q - oy * win.out_w;
                gather_window(&win, image, oy * win.stride_h - win.pad_top, ox * win.stride_w - win.pad_left, k,
                              rq->in_zp, cols + half * GATHER_WORDS);
            }
            gather_channels(cols, k, win.out_c, filter, bias, rq, output, out1);
        }
        output -= (int64_t)(p - pixels) * win.out_c; /* an odd count stepped one pixel too far */
    }
}

#else
typedef int tgr_conv_gather_not_built; /* a translation unit declares something (C99 6.9) */
#endif
