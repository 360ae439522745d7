/*
 * DepthwiseConv 3x3, channel multiplier 1, dilation 1, any stride and padding, Helium variant
 * (METHOD_DEPTHWISE_3X3 in the mve=1 build). Contract: kernels.h, tgr_depthwise_3x3_mve_s8. Empty
 * in every other build.
 *
 * Groups of four channels, one int32 lane each, each over every output of the call
 * (depthwise_3x3_group_mve): bias - zp * sum(w) and the requantization vectors once a group. A
 * window inside the input sums raw x * w from that base in straight-line code, one cut by padding
 * (x - zp) * w from the bias over its kernel rows and columns inside (the rows inside found once a
 * row); one vector requantization per output (dw3_requantize_mve). The last in_c % 4 channels by
 * the plain loop (conv_plain.h).
 */
#include "kernels/isa.h"

#if TGR_SIMD_MVE
#include "kernels/conv_plain.h"
#include "kernels/mve_common.h"

/* The requantization of one group of four channels, decoded once: fp_mul_by_quantized_multiplier
 * as mve_mul_by_quantized_multiplier forms it, its shifts split beforehand. */
typedef struct dw3_requant_mve {
    int32x4_t multiplier;
    int32x4_t left;       /* max(shift, 0) */
    int32x4_t right;      /* min(shift, 0): VRSHL by it shifts right, rounding ties up */
    int32x4_t negative;   /* all ones in the lanes that shift right: a negative value less one there */
    int32_t out_zp, act_min, act_max;
    int full_range;       /* act_min -128, act_max 127: the clamp is a saturating shift */
} dw3_requant_mve;

/* Four requantized outputs, stored to y: requantize() lane by lane (simd32.h's
 * mve_mul_by_quantized_multiplier, the clamp by a saturating shift by 24 and back where it is the
 * int8 range). */
static inline void dw3_requantize_mve(int32x4_t acc, const dw3_requant_mve *q, int8_t *y)
{
    int32x4_t v = vqrdmulhq_s32(vshlq_s32(acc, q->left), q->multiplier);
    v = vqaddq_s32(v, vandq_s32(vshrq_n_s32(v, 31), q->negative));
    v = vaddq_n_s32(vrshlq_s32(v, q->right), q->out_zp);
    if (q->full_range) {
        v = vshrq_n_s32(vqshlq_n_s32(v, 24), 24);
    } else {
        v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(q->act_min)), vdupq_n_s32(q->act_max));
    }
    vstrbq_s32(y, v);
}

/* Taps [*first, *end) of three from `origin` that land inside [0, extent). */
static inline void dw3_taps_inside_mve(int32_t origin, int32_t extent, int32_t *first, int32_t *end)
{
    const int32_t a = origin < 0 ? (origin < -3 ? 3 : -origin) : 0;
    const int32_t b = extent - origin < 3 ? extent - origin : 3;
    *first = a;
    *end = b > a ? b : a;
}

/* Channels c..c+3 over every output of the call. The hot pass (kernels/isa.h, TGR_NOINLINE), on
 * its own copies of the structs. */
static TGR_NOINLINE void depthwise_3x3_group_mve(const tgr_window *w_in, const int8_t *input, const int8_t *filter,
                                                 const uint8_t *bias, const tgr_requant *rq_in, int8_t *output,
                                                 int32_t c)
{
    const tgr_window w = *w_in;
    const tgr_requant rq = *rq_in;
    const int32_t channels = w.in_c;
    const int32_t row = w.in_w * channels;
    const int8_t *f = filter + c;
    const int32x4_t b = bias != NULL ? mve_load4_i32(bias + 4 * c, 4) : vdupq_n_s32(0);
    int32x4_t weight_sum = vdupq_n_s32(0), shift, base;
    dw3_requant_mve q;
    int32_t n, oy, ox, ox_lo = 0, ox_hi = w.out_w, t;
    int8_t *y = output + c;
    for (t = 0; t < 9; ++t) {
        weight_sum = vaddq_s32(weight_sum, vldrbq_s32(f + t * channels));
    }
    base = vsubq_s32(b, vmulq_n_s32(weight_sum, rq.in_zp));
    mve_channel_pairs(&rq, c, &q.multiplier, &shift);
    q.left = vmaxq_s32(shift, vdupq_n_s32(0));
    q.right = vminq_s32(shift, vdupq_n_s32(0));
    q.negative = vshrq_n_s32(q.right, 31);
    q.out_zp = rq.out_zp;
    q.act_min = rq.act_min;
    q.act_max = rq.act_max;
    q.full_range = rq.act_min == -128 && rq.act_max == 127;
    /* Outputs [ox_lo, ox_hi) of a row have their three columns inside the input. */
    while (ox_lo < w.out_w && ox_lo * w.stride_w - w.pad_left < 0) {
        ++ox_lo;
    }
    while (ox_hi > ox_lo && (ox_hi - 1) * w.stride_w - w.pad_left + 2 >= w.in_w) {
        --ox_hi;
    }
    for (n = 0; n < w.batch; ++n) {
        const int8_t *image = input + (int64_t)n * w.in_h * row + c;
        for (oy = 0; oy < w.out_h; ++oy) {
            const int32_t iy0 = oy * w.stride_h - w.pad_top;
            int32_t ky0, ky1, rows;
            const int8_t *xr;
            dw3_taps_inside_mve(iy0, w.in_h, &ky0, &ky1);
            rows = ky1 - ky0;
            xr = rows > 0 ? image + (int64_t)(iy0 + ky0) * row : image; /* the first kernel row inside */
            for (ox = 0; ox < w.out_w; ++ox, y += channels) {
                const int32_t ix0 = ox * w.stride_w - w.pad_left;
                int32x4_t acc;
                if (rows == 3 && ox >= ox_lo && ox < ox_hi) {
                    const int8_t *x = xr + (int64_t)ix0 * channels;
                    int32_t ky;
                    acc = base;
                    for (ky = 0; ky < 3; ++ky, x += row) {
                        const int8_t *fk = f + 3 * ky * channels;
                        acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(x), vldrbq_s32(fk)));
                        acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(x + channels), vldrbq_s32(fk + channels)));
                        acc = vaddq_s32(acc, vmulq_s32(vldrbq_s32(x + 2 * channels), vldrbq_s32(fk + 2 * channels)));
                    }
                } else {
                    int32_t kx0, kx1, ky, kx;
                    dw3_taps_inside_mve(ix0, w.in_w, &kx0, &kx1);
                    acc = b;
                    for (ky = ky0; ky < ky1; ++ky) {
                        const int8_t *x = xr + ((int64_t)(ky - ky0) * w.in_w + ix0 + kx0) * channels;
                        const int8_t *fk = f + (3 * ky + kx0) * channels;
                        for (kx = kx0; kx < kx1; ++kx, x += channels, fk += channels) {
                            acc = vaddq_s32(acc, vmulq_s32(vsubq_n_s32(vldrbq_s32(x), rq.in_zp), vldrbq_s32(fk)));
                        }
                    }
                }
                dw3_requantize_mve(acc, &q, y);
            }
        }
    }
}

void tgr_depthwise_3x3_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                              const tgr_requant *rq, int8_t *output)
{
    int32_t c;
    for (c = 0; c + 4 <= w->in_c; c += 4) { /* each group copies the structs */
        depthwise_3x3_group_mve(w, input, filter, bias, rq, output, c);
    }
    if ((w->in_c & 3) != 0) { /* the last one to three channels by the plain loop (conv_plain.h) */
        depthwise_plain_channels(w, input, filter, bias, rq, output, w->in_c & ~3);
    }
}

#else
typedef int tgr_depthwise_3x3_mve_not_built; /* a translation unit declares something (C99 6.9) */
#endif
