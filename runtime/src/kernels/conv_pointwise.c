/*
 * Conv, pointwise variant (METHOD_CONV_POINTWISE in the DSP and portable builds: a 1x1 kernel,
 * stride 1, no padding, any channel counts). Contract: kernels.h, tgr_conv_pointwise_s8. Empty in the Helium build, which has conv_pointwise_mve.c.
 *
 * A 1x1 convolution is a matrix product over channels. Two output pixels by two output channels
 * per pass: each widened weight word serves both pixels and each widened input word both
 * channels, so a step of four inputs takes four loads, eight widenings (SXTB16) and eight SMLADs
 * for sixteen products. The input zero point is folded into a per-channel constant once per
 * channel pair, bias - zp * sum(w) (exact modulo 2^32 like the accumulator), so the passes take
 * raw int8 products; each channel's requantization is decoded once for every pixel.
 */
#include "kernels/isa.h"

#if !TGR_SIMD_MVE
#include "kernels/conv_common.h"

/* bias - zp * sum(f[i]), i < n, modulo 2^32: what the raw products sum x * f lack of sum (x - zp) * f. */
static inline int32_t folded_bias(const int8_t *f, int32_t n, int32_t bias, int32_t zp)
{
    const uint32_t ones = s32_pair(1);
    int32_t sum = 0;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32_t fw = s32_load(f + i);
        sum = s32_mla_pairs(s32_even(fw), ones, sum);
        sum = s32_mla_pairs(s32_odd(fw), ones, sum);
    }
    for (; i < n; ++i) {
        sum += f[i];
    }
    return (int32_t)((uint32_t)bias - (uint32_t)zp * (uint32_t)sum);
}

/* Raw dot products of pixels x, x + n (n inputs each) with filters f, f + n:
 * acc[0] += x . f, acc[1] += x . (f + n), acc[2] += (x + n) . f, acc[3] += (x + n) . (f + n).
 *
 * A step takes four inputs of both pixels and both filters: the two weight words as four pairs
 * (widened from the filters, or read ready-widened from `wide`: POINTWISE_WIDE_INPUTS), then each
 * pixel's word widened and multiplied into its two accumulators. With the DSP extension the loop
 * is one asm block, two steps an iteration, in fourteen registers (the four accumulators, x, the
 * weights' pointer, n, the end and six temporaries) in an order that needs no more; GCC's own
 * schedule of the same code loads the four words first and spills an accumulator every step. */
#if TGR_SIMD32_DSP
#define POINTWISE_WEIGHTS_RAW                                                                            \
    "ldr %[w1o], [%[f], %[n]]\n\t"                                                                       \
    "ldr %[w0o], [%[f]], #4\n\t"                                                                         \
    "sxtb16 %[w1e], %[w1o]\n\t"                                                                          \
    "sxtb16 %[w1o], %[w1o], ror #8\n\t"                                                                  \
    "sxtb16 %[w0e], %[w0o]\n\t"                                                                          \
    "sxtb16 %[w0o], %[w0o], ror #8\n\t"
#define POINTWISE_WEIGHTS_WIDE                                                                           \
    "ldrd %[w0e], %[w0o], [%[f]], #8\n\t"                                                                \
    "ldrd %[w1e], %[w1o], [%[f]], #8\n\t"
#define POINTWISE_PIXELS                                                                                 \
    "ldr %[t], [%[x], %[n]]\n\t"                                                                         \
    "sxtb16 %[u], %[t]\n\t"                                                                              \
    "sxtb16 %[t], %[t], ror #8\n\t"                                                                      \
    "smlad %[a2], %[u], %[w0e], %[a2]\n\t"                                                               \
    "smlad %[a3], %[u], %[w1e], %[a3]\n\t"                                                               \
    "smlad %[a2], %[t], %[w0o], %[a2]\n\t"                                                               \
    "smlad %[a3], %[t], %[w1o], %[a3]\n\t"                                                               \
    "ldr %[t], [%[x]], #4\n\t"                                                                           \
    "sxtb16 %[u], %[t]\n\t"                                                                              \
    "sxtb16 %[t], %[t], ror #8\n\t"                                                                      \
    "smlad %[a0], %[u], %[w0e], %[a0]\n\t"                                                               \
    "smlad %[a1], %[u], %[w1e], %[a1]\n\t"                                                               \
    "smlad %[a0], %[t], %[w0o], %[a0]\n\t"                                                               \
    "smlad %[a1], %[t], %[w1o], %[a1]\n\t"
#define POINTWISE_ASM_OPERANDS(fp)                                                                       \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [f] "+r"(fp),               \
      [w0e] "=&r"(w0e), [w0o] "=&r"(w0o), [w1e] "=&r"(w1e), [w1o] "=&r"(w1o), [t] "=&r"(t), [u] "=&r"(u)
/* The whole steps of dot_2x2 from weights `fp` (W: POINTWISE_WEIGHTS_RAW or _WIDE). */
#define POINTWISE_STEPS(W, fp)                                                                           \
    do {                                                                                                 \
        uint32_t w0e, w0o, w1e, w1o, t, u;                                                               \
        if (x < end8) {                                                                                  \
            __asm__("1:\n\t" W POINTWISE_PIXELS W POINTWISE_PIXELS "cmp %[x], %[end]\n\t"                \
                    "bcc 1b" POINTWISE_ASM_OPERANDS(fp)                                                  \
                    : [n] "r"(n), [end] "r"(end8)                                                        \
                    : "cc", "memory");                                                                   \
        }                                                                                                \
        if ((n & 4) != 0) {                                                                              \
            __asm__(W POINTWISE_PIXELS POINTWISE_ASM_OPERANDS(fp) : [n] "r"(n) : "memory");              \
        }                                                                                                \
    } while (0)
#endif

/* The widened weights of a step from filters f, f + n (portable form). */
static inline void widen_step(const int8_t *f, int32_t n, uint32_t *w)
{
    const uint32_t w0 = s32_load(f), w1 = s32_load(f + n);
    w[0] = s32_even(w0);
    w[1] = s32_odd(w0);
    w[2] = s32_even(w1);
    w[3] = s32_odd(w1);
}

/* dot_2x2 with the weights of its whole steps from `wide` (widen_pair's layout) when it is not
 * NULL, else widened from the filters step by step. */
static inline void dot_2x2(const int8_t *x, const int8_t *f, const uint32_t *wide, int32_t n, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int8_t *const end = x + n;
    const int8_t *const end4 = x + (n & ~3);
#if TGR_SIMD32_DSP
    const int8_t *const end8 = x + (n & ~7);
    if (wide != NULL) {
        POINTWISE_STEPS(POINTWISE_WEIGHTS_WIDE, wide);
        f += n & ~3;
    } else {
        POINTWISE_STEPS(POINTWISE_WEIGHTS_RAW, f);
    }
#else
    for (; x < end4; x += 4, f += 4) {
        uint32_t own[4];
        const uint32_t *w = wide;
        const uint32_t x0 = s32_load(x), x1 = s32_load(x + n);
        if (w != NULL) {
            wide += 4;
        } else {
            widen_step(f, n, own);
            w = own;
        }
        a0 = s32_mla_pairs(s32_odd(x0), w[1], s32_mla_pairs(s32_even(x0), w[0], a0));
        a1 = s32_mla_pairs(s32_odd(x0), w[3], s32_mla_pairs(s32_even(x0), w[2], a1));
        a2 = s32_mla_pairs(s32_odd(x1), w[1], s32_mla_pairs(s32_even(x1), w[0], a2));
        a3 = s32_mla_pairs(s32_odd(x1), w[3], s32_mla_pairs(s32_even(x1), w[2], a3));
    }
#endif
    (void)end4;
    for (; x < end; ++x, ++f) {
        const int32_t x0 = x[0], x1 = x[n], f0 = f[0], f1 = f[n];
        a0 = wrap_add(a0, x0 * f0);
        a1 = wrap_add(a1, x0 * f1);
        a2 = wrap_add(a2, x1 * f0);
        a3 = wrap_add(a3, x1 * f1);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* Input channels up to which a pass widens its two filters once, into 4 * POINTWISE_WIDE_INPUTS
 * bytes of stack (256 B), rather than at every step of every pixel pair: a step then reads its
 * four pairs with two LDRDs. */
#define POINTWISE_WIDE_INPUTS 64

/* Filters f, f + n widened, each whole step's four pairs in a row (widen_step). */
static inline void widen_pair(const int8_t *f, int32_t n, uint32_t *wide)
{
    int32_t i;
    for (i = 0; i + 4 <= n; i += 4, wide += 4) {
        widen_step(f + i, n, wide);
    }
}

/* The geometry of one image of a call: `rows` runs of `cols` pixels, each run's inputs contiguous,
 * runs `row_stride` input bytes apart; the outputs are dense (cols x out_c a run). */
typedef struct pointwise_image {
    const int8_t *x;
    int32_t rows, cols, row_stride;
    int32_t in_c, out_c;
} pointwise_image;

/* Output channels oc, oc + 1 over every pixel of the image: their folded biases and
 * requantizations once, then two pixels a pass (an odd last pixel of a run: one). The hot pass
 * (kernels/isa.h, TGR_NOINLINE), on its own copies of the structs. */
static TGR_NOINLINE void pointwise_pair(const pointwise_image *im_in, const int8_t *filter, const uint8_t *bias,
                                        const tgr_requant *rq_in, int8_t *output, int32_t oc)
{
    const pointwise_image im = *im_in;
    const tgr_requant q = *rq_in;
    const int32_t in_c = im.in_c;
    const int32_t out_c = im.out_c;
    const int8_t *f0 = filter + (int64_t)oc * in_c;
    const int32_t b0 = folded_bias(f0, in_c, bias_at(bias, oc), q.in_zp);
    const int32_t b1 = folded_bias(f0 + in_c, in_c, bias_at(bias, oc + 1), q.in_zp);
    const channel_requant c0 = channel_requant_of(&q, oc);
    const channel_requant c1 = channel_requant_of(&q, oc + 1);
    uint32_t widened[POINTWISE_WIDE_INPUTS];
    const uint32_t *wide = in_c <= POINTWISE_WIDE_INPUTS ? widened : NULL;
    int32_t r, p;
    int8_t *y = output + oc;
    if (wide != NULL) {
        widen_pair(f0, in_c, widened);
    }
    for (r = 0; r < im.rows; ++r) {
        const int8_t *x = im.x + (int64_t)r * im.row_stride;
        for (p = 0; p + 2 <= im.cols; p += 2, x += 2 * in_c, y += 2 * out_c) {
            int32_t acc[4];
            acc[0] = b0;
            acc[1] = b1;
            acc[2] = b0;
            acc[3] = b1;
            dot_2x2(x, f0, wide, in_c, acc);
            y[0] = requantize_channel(acc[0], &c0);
            y[out_c] = requantize_channel(acc[2], &c0);
            y[1] = requantize_channel(acc[1], &c1);
            y[out_c + 1] = requantize_channel(acc[3], &c1);
        }
        if (p < im.cols) {
            int32_t a0 = b0, a1 = b1;
            dot2_pairs(x, f0, f0 + in_c, in_c, 0, 0u, &a0, &a1);
            y[0] = requantize_channel(a0, &c0);
            y[1] = requantize_channel(a1, &c1);
            y += out_c;
        }
    }
}

/* The last output channel of an odd count over every pixel: two pixels a pass against its filter. */
static void pointwise_last(const pointwise_image *im, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output)
{
    const int32_t in_c = im->in_c;
    const int32_t oc = im->out_c - 1;
    const int8_t *f = filter + (int64_t)oc * in_c;
    const int32_t b = folded_bias(f, in_c, bias_at(bias, oc), rq->in_zp);
    const channel_requant c = channel_requant_of(rq, oc);
    int32_t r, p;
    int8_t *y = output + oc;
    for (r = 0; r < im->rows; ++r) {
        const int8_t *x = im->x + (int64_t)r * im->row_stride;
        for (p = 0; p < im->cols; p += 2, x += 2 * in_c) {
            const int8_t *x1 = p + 1 < im->cols ? x + in_c : x;
            int32_t a0 = b, a1 = b;
            dot2_pairs(f, x, x1, in_c, 0, 0u, &a0, &a1); /* raw products: x . f = f . x */
            y[0] = requantize_channel(a0, &c);
            y += im->out_c;
            if (p + 1 < im->cols) {
                y[0] = requantize_channel(a1, &c);
                y += im->out_c;
            }
        }
    }
}

void tgr_conv_pointwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output)
{
    const int64_t image_in = (int64_t)w->in_h * w->in_w * w->in_c;
    const int64_t image_out = (int64_t)w->out_h * w->out_w * w->out_c;
    int32_t n, oc;
    for (n = 0; n < w->batch; ++n) {
        pointwise_image im;
        im.x = input + n * image_in + ((int64_t)-w->pad_top * w->in_w - w->pad_left) * w->in_c;
        im.rows = w->out_h;
        im.cols = w->out_w;
        im.row_stride = w->in_w * w->in_c;
        im.in_c = w->in_c;
        im.out_c = w->out_c;
        if (w->out_w == w->in_w) { /* the rows follow each other: one run */
            im.cols = w->out_h * w->out_w;
            im.rows = 1;
        }
        for (oc = 0; oc + 2 <= w->out_c; oc += 2) {
            pointwise_pair(&im, filter, bias, rq, output + n * image_out, oc);
        }
        if (oc < w->out_c) {
            pointwise_last(&im, filter, bias, rq, output + n * image_out);
        }
    }
}

#else
typedef int tgr_conv_pointwise_not_built; /* a translation unit declares something (C99 6.9) */
#endif
