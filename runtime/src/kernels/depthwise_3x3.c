/*
 * DepthwiseConv 3x3, channel multiplier 1, dilation 1, any stride and padding
 * (METHOD_DEPTHWISE_3X3 in the DSP and portable builds). Contract: kernels.h,
 * tgr_depthwise_3x3_s8. Empty in the Helium build.
 *
 * Groups of four channels, each over every output of the call (depthwise_3x3_group): the group's
 * nine weight words widened once into packed pairs, its bias and requantization decoded once.
 * Per output four accumulators, one tap four SMLABB/SMLATT: a window inside the input on raw x
 * from bias - zp * sum(w) (dw3_inside_run, a run of them along a row), a window cut by padding on
 * (x - zp) over its kernel rows and columns inside (dw3_cut), which skips the padding's
 * (zp - zp) * w = 0. DW3_RUN outputs' sums are then requantized together, channel by channel
 * (dw3_requantize_run). The last in_c % 4 channels by the plain loop (conv_plain.h).
 */
#include "kernels/isa.h"

#if !TGR_SIMD_MVE
#include "kernels/conv_plain.h"

/* Outputs whose sums are formed before they are requantized together: the accumulators of
 * DW3_RUN outputs, 4 x 4 x DW3_RUN bytes on the stack. */
#define DW3_RUN 16

/* One group of four channels c..c+3, decoded once per call. */
typedef struct dw3_group {
    uint32_t weights[18]; /* tap t (ky * 3 + kx): channels (c, c+2) at 2t, (c+1, c+3) at 2t + 1 */
    int32_t bias[4];
    int32_t base[4]; /* bias - zp * sum(w): a window inside the input then sums raw x * w */
    int32_t multiplier[4];
    int32_t left[4], right[4]; /* each channel's shift split as fp_mul_by_valid_multiplier_lr takes it */
} dw3_group;

static void dw3_group_of(const tgr_window *w, const int8_t *filter, const uint8_t *bias, const tgr_requant *rq,
                         int32_t c, dw3_group *g)
{
    int32_t t, k;
    for (t = 0; t < 9; ++t) {
        const uint32_t word = s32_load(filter + (int64_t)t * w->in_c + c);
        g->weights[2 * t] = s32_even(word);
        g->weights[2 * t + 1] = s32_odd(word);
    }
    for (k = 0; k < 4; ++k) {
        const int32_t pair = rq->per_channel ? c + k : 0;
        const int32_t shift = rd_i32(rq->shifts + 4 * pair);
        uint32_t weight_sum = 0;
        for (t = 0; t < 9; ++t) {
            weight_sum += (uint32_t)(int32_t)filter[(int64_t)t * w->in_c + c + k];
        }
        g->bias[k] = bias_at(bias, c + k);
        g->base[k] = (int32_t)((uint32_t)g->bias[k] - (uint32_t)rq->in_zp * weight_sum);
        g->multiplier[k] = rd_i32(rq->multipliers + 4 * pair);
        g->left[k] = shift > 0 ? shift : 0;
        g->right[k] = g->left[k] - shift;
    }
}

/* One tap on four channels: the input word at x widened into pairs (raw x, or x - zp with `offset`
 * s32_pair(-zp): `raw` is a constant at every call), times the tap's widened weights `wt`. */
static inline void dw3_tap(const int8_t *x, const uint32_t *wt, int raw, uint32_t offset, int32_t *acc)
{
    const uint32_t xw = s32_load(x);
    const uint32_t xe = raw ? s32_even(xw) : s32_even_plus(offset, xw);
    const uint32_t xo = raw ? s32_odd(xw) : s32_odd_plus(offset, xw);
    acc[0] = s32_mla_low(xe, wt[0], acc[0]);
    acc[2] = s32_mla_high(xe, wt[0], acc[2]);
    acc[1] = s32_mla_low(xo, wt[1], acc[1]);
    acc[3] = s32_mla_high(xo, wt[1], acc[3]);
}

/* `count` (0..3) taps of one kernel row, their inputs from x, `channels` apart, their weights from
 * wt: straight-line code for each count. */
static inline void dw3_row(const int8_t *x, int32_t channels, const uint32_t *wt, int32_t count, int raw,
                           uint32_t offset, int32_t *acc)
{
    if (count == 3) {
        dw3_tap(x, wt, raw, offset, acc);
        dw3_tap(x + channels, wt + 2, raw, offset, acc);
        dw3_tap(x + 2 * channels, wt + 4, raw, offset, acc);
    } else if (count == 2) {
        dw3_tap(x, wt, raw, offset, acc);
        dw3_tap(x + channels, wt + 2, raw, offset, acc);
    } else if (count == 1) {
        dw3_tap(x, wt, raw, offset, acc);
    }
}

/* What the sums of one group's outputs read, for one call and one output row: kept together so
 * that the passes below take one pointer. */
typedef struct dw3_pass {
    dw3_group g;
    int32_t channels, row, x_step; /* input bytes between channels' pixels, rows, outputs' windows */
    int32_t in_w, stride_w, pad_left;
    uint32_t offset;               /* s32_pair(-zp) */
    const int8_t *xr;              /* this output row: its first kernel row inside the input, */
    int32_t ky0, rows;             /* which kernel row that is, and how many are inside */
} dw3_pass;

/* The sums of `n` outputs of the row whose windows lie inside the input, the first window's first
 * tap at x, four to an output into acc: raw x * w from bias - zp * sum(w), each window in
 * straight-line code. A function of its own, so that the taps have the registers. */
static TGR_NOINLINE void dw3_inside_run(const dw3_pass *p, const int8_t *x, int32_t n, int32_t *acc)
{
    const int32_t channels = p->channels, row = p->row, x_step = p->x_step;
    const dw3_group *g = &p->g;
    for (; n > 0; --n, x += x_step, acc += 4) {
        int32_t s[4];
        s[0] = g->base[0];
        s[1] = g->base[1];
        s[2] = g->base[2];
        s[3] = g->base[3];
        dw3_row(x, channels, g->weights, 3, 1, 0, s);
        dw3_row(x + row, channels, g->weights + 6, 3, 1, 0, s);
        dw3_row(x + 2 * row, channels, g->weights + 12, 3, 1, 0, s);
        acc[0] = s[0];
        acc[1] = s[1];
        acc[2] = s[2];
        acc[3] = s[3];
    }
}

/* Taps [*first, *end) of three from `origin` that land inside [0, extent). */
static inline void dw3_taps_inside(int32_t origin, int32_t extent, int32_t *first, int32_t *end)
{
    const int32_t a = origin < 0 ? (origin < -3 ? 3 : -origin) : 0;
    const int32_t b = extent - origin < 3 ? extent - origin : 3;
    *first = a;
    *end = b > a ? b : a;
}

/* The four sums of output ox of the row, its window cut by padding, into acc: (x - zp) * w from
 * the bias over the kernel rows and columns inside the input. */
static TGR_NOINLINE void dw3_cut(const dw3_pass *p, int32_t ox, int32_t *acc)
{
    const int32_t ix0 = ox * p->stride_w - p->pad_left;
    int32_t kx0, kx1, rows = p->rows, s[4];
    const int8_t *x;
    const uint32_t *wt;
    dw3_taps_inside(ix0, p->in_w, &kx0, &kx1);
    x = p->xr + (int64_t)(ix0 + kx0) * p->channels;
    wt = p->g.weights + 6 * p->ky0 + 2 * kx0;
    s[0] = p->g.bias[0];
    s[1] = p->g.bias[1];
    s[2] = p->g.bias[2];
    s[3] = p->g.bias[3];
    for (; rows > 0; --rows, x += p->row, wt += 6) {
        dw3_row(x, p->channels, wt, kx1 - kx0, 0, p->offset, s);
    }
    acc[0] = s[0];
    acc[1] = s[1];
    acc[2] = s[2];
    acc[3] = s[3];
}

/* Requantizes `count` outputs of four channels, their sums four apart in acc, to y (`channels`
 * apart: consecutive outputs of the call), channel by channel. Where the multiplier is at least
 * 2^30 (every nonzero one the loader passes) and the clamp is the int8 range: fp_srdhm(v, M) as
 * SMMULR(v, 2M mod 2^32) + v (the product by 2M - 2^32 is 2 v M - 2^32 v: its rounded high word is
 * fp_srdhm's rounding of v M / 2^31, less v, exactly), fp_rdbpot31's test on the remainder, SSAT. */
static void dw3_requantize_run(const int32_t *acc, int32_t count, const dw3_group *g, const tgr_requant *rq,
                               int8_t *y, int32_t channels)
{
    int32_t k, i;
    for (k = 0; k < 4; ++k) {
        const int32_t multiplier = g->multiplier[k];
        const int left = (int)g->left[k], right = (int)g->right[k];
        const int32_t out_zp = rq->out_zp;
        const int32_t *a = acc + k;
        int8_t *out = y + k;
        if (multiplier >= (1 << 30) && rq->act_min == -128 && rq->act_max == 127) {
            const int32_t doubled = (int32_t)((uint32_t)multiplier << 1);
            const uint32_t mask = (1u << right) - 1u;
            const uint32_t half = mask >> 1;
            for (i = 0; i < count; ++i, a += 4, out += channels) {
                const uint32_t v = (uint32_t)*a << left;
                const int32_t high = (int32_t)((uint32_t)s32_mul_high_round((int32_t)v, doubled) + v);
                const int32_t rounded = (high >> right) + (((uint32_t)high & mask) > half + ((uint32_t)high >> 31));
                *out = (int8_t)s32_sat8(wrap_add(rounded, out_zp));
            }
        } else {
            for (i = 0; i < count; ++i, a += 4, out += channels) {
                *out = (int8_t)clamp_i32(wrap_add(fp_mul_by_valid_multiplier_lr(*a, multiplier, left, right), out_zp),
                                         rq->act_min, rq->act_max);
            }
        }
    }
}

/* Channels c..c+3 over every output of the call, in raster order (rows and images following on):
 * the sums of up to DW3_RUN outputs (the kernel rows inside the input found once a row, the
 * outputs whose columns are all inside once a call), then their requantization. The hot pass
 * (kernels/isa.h, TGR_NOINLINE), on its own copies of the structs. */
static TGR_NOINLINE void depthwise_3x3_group(const tgr_window *w_in, const int8_t *input, const int8_t *filter,
                                             const uint8_t *bias, const tgr_requant *rq_in, int8_t *output, int32_t c)
{
    const tgr_window w = *w_in;
    const tgr_requant rq = *rq_in;
    dw3_pass p;
    int32_t acc[4 * DW3_RUN];
    int32_t n, oy, ox, ox_lo = 0, ox_hi = w.out_w, count = 0;
    int8_t *y = output + c;
    dw3_group_of(&w, filter, bias, &rq, c, &p.g);
    p.channels = w.in_c;
    p.row = w.in_w * w.in_c;
    p.x_step = w.stride_w * w.in_c;
    p.in_w = w.in_w;
    p.stride_w = w.stride_w;
    p.pad_left = w.pad_left;
    p.offset = s32_pair(-rq.in_zp);
    /* Outputs [ox_lo, ox_hi) of a row have their three columns inside the input. */
    while (ox_lo < w.out_w && ox_lo * w.stride_w - w.pad_left < 0) {
        ++ox_lo;
    }
    while (ox_hi > ox_lo && (ox_hi - 1) * w.stride_w - w.pad_left + 2 >= w.in_w) {
        --ox_hi;
    }
    for (n = 0; n < w.batch; ++n) {
        const int8_t *image = input + (int64_t)n * w.in_h * p.row + c;
        for (oy = 0; oy < w.out_h; ++oy) {
            const int32_t iy0 = oy * w.stride_h - w.pad_top;
            int32_t ky1;
            dw3_taps_inside(iy0, w.in_h, &p.ky0, &ky1);
            p.rows = ky1 - p.ky0;
            p.xr = p.rows > 0 ? image + (int64_t)(iy0 + p.ky0) * p.row : image;
            for (ox = 0; ox < w.out_w;) {
                int32_t k = 1;
                if (p.rows == 3 && ox >= ox_lo && ox < ox_hi) {
                    k = ox_hi - ox < DW3_RUN - count ? ox_hi - ox : DW3_RUN - count;
                    dw3_inside_run(&p, p.xr + (int64_t)(ox * w.stride_w - w.pad_left) * p.channels, k,
                                   acc + 4 * count);
                } else {
                    dw3_cut(&p, ox, acc + 4 * count);
                }
                ox += k;
                count += k;
                if (count == DW3_RUN) {
                    dw3_requantize_run(acc, count, &p.g, &rq, y, p.channels);
                    y += (int64_t)count * p.channels;
                    count = 0;
                }
            }
        }
    }
    dw3_requantize_run(acc, count, &p.g, &rq, y, p.channels);
}

void tgr_depthwise_3x3_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                          const tgr_requant *rq, int8_t *output)
{
    int32_t c;
    for (c = 0; c + 4 <= w->in_c; c += 4) { /* each group copies the structs */
        depthwise_3x3_group(w, input, filter, bias, rq, output, c);
    }
    if ((w->in_c & 3) != 0) { /* the last one to three channels by the plain loop (conv_plain.h) */
        depthwise_plain_channels(w, input, filter, bias, rq, output, w->in_c & ~3);
    }
}

#else
typedef int tgr_depthwise_3x3_not_built; /* a translation unit declares something (C99 6.9) */
#endif
