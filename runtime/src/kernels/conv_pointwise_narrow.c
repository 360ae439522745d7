/*
 * Conv, pointwise "narrow" variant (METHOD_CONV_POINTWISE_NARROW in the DSP and portable builds: a
 * 1x1 kernel, stride 1, no padding, 4 to 16 input channels in whole words; the expansion layers of
 * inverted residual blocks, where a requantization per few MACs dominates). Contract: kernels.h,
 * tgr_conv_pointwise_narrow_s8. Empty in the Helium build, which takes tgr_conv_inside_mve_s8.
 */
#include "kernels/isa.h"

#if !TGR_SIMD_MVE
#include "kernels/conv_common.h"

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

/* pointwise_narrow with the word count as a constant (its loops unroll), each a hot pass of its
 * own (kernels/isa.h, TGR_NOINLINE), on its own copies of the structs. */
#define POINTWISE_NARROW(words)                                                                            \
    static TGR_NOINLINE void pointwise_narrow_##words(const tgr_window *w_in, const int8_t *input,          \
                                                      const int8_t *filter, const uint8_t *bias,            \
                                                      const tgr_requant *rq_in, int8_t *output)             \
    {                                                                                                      \
        const tgr_window win = *w_in;                                                                      \
        const tgr_requant q = *rq_in;                                                                      \
        pointwise_narrow(&win, input, filter, bias, &q, output, words);                                    \
    }
POINTWISE_NARROW(1)
POINTWISE_NARROW(2)
POINTWISE_NARROW(3)
POINTWISE_NARROW(4)

void tgr_conv_pointwise_narrow_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                                  const uint8_t *bias, const tgr_requant *rq, int8_t *output)
{
    switch (w->in_c / 4) { /* the word count as a constant: its loops unroll */
    case 1: pointwise_narrow_1(w, input, filter, bias, rq, output); return;
    case 2: pointwise_narrow_2(w, input, filter, bias, rq, output); return;
    case 3: pointwise_narrow_3(w, input, filter, bias, rq, output); return;
    default: pointwise_narrow_4(w, input, filter, bias, rq, output); return;
    }
}

#else
typedef int tgr_conv_pointwise_narrow_not_built; /* a translation unit declares something (C99 6.9) */
#endif
