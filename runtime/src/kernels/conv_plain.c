/*
 * The plain loops of the convolution family, in every build: what no fast variant takes.
 *
 *  - tgr_conv_plain_s8, tgr_depthwise_plain_s8, tgr_fully_connected_plain_s8 (METHOD_CONV_PLAIN,
 *    METHOD_DEPTHWISE_PLAIN, METHOD_FULLY_CONNECTED_PLAIN): an input zero point whose x - zp does
 *    not fit a 16-bit lane (the loader passes only int8 zero points, but the kernels' contract is
 *    any int32 the struct holds), and depthwise channel multipliers above 1;
 *  - tgr_conv_transpose_s8: transposed convolution, which has no fast form.
 *
 * Each sums (x - in_zp) * w over the taps inside the input (docs/execution.md#convolution-gemm-and-matmul),
 * tap by tap in the filter's order, and requantizes each output on its own: the reference's
 * arithmetic written out, which every fast variant reproduces exactly (the Conv and DepthwiseConv
 * loops in conv_plain.h, which the Helium variants take for their last channels). Contracts:
 * kernels.h.
 */
#include "kernels/conv_plain.h"

void tgr_conv_plain_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                       const tgr_requant *rq, int8_t *output)
{
    conv_plain_channels(w, input, filter, bias, rq, output, 0);
}

void tgr_depthwise_plain_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output)
{
    depthwise_plain_channels(w, input, filter, bias, rq, output, 0);
}

void tgr_fully_connected_plain_s8(int32_t rows, int32_t in_features, int32_t out_features, const int8_t *input,
                                  const int8_t *filter, const uint8_t *bias, const tgr_requant *rq, int8_t *output)
{
    int32_t r, oc, ic;
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
