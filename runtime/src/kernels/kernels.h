/*
 * int8 kernels. They are plain functions over raw buffers and trust their arguments: the
 * loader has already checked every shape, size and parameter they are called with.
 *
 * Activations are channels-last (NHWC; NLC as H = L, W = 1). A window describes the geometry
 * of one call; tiled execution paths call the same kernels with tile-local heights and
 * effective paddings.
 */
#ifndef TGR_KERNELS_H
#define TGR_KERNELS_H

#include <stdint.h>

/* Output requantization of a Conv/Depthwise/Gemm: per-channel (or single) Q0.31 pairs as stored
 * little-endian in the plan's quant data, zero points and the int8 clamp. */
typedef struct tgr_requant {
    const uint8_t *multipliers;
    const uint8_t *shifts;
    int32_t per_channel;          /* 1: pair c for channel c; 0: pair 0 for all channels */
    int32_t in_zp;
    int32_t out_zp;
    int32_t act_min;
    int32_t act_max;
} tgr_requant;

typedef struct tgr_window {
    int32_t batch;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;    /* bottom/right padding is implied by the extents */
} tgr_window;

/* Quantization of one tensor: its own scale and zero point. */
typedef struct tgr_qparams {
    float scale;
    int32_t zero_point;
} tgr_qparams;

void tgr_conv_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                 const uint8_t *bias, const tgr_requant *rq, int8_t *output);

/* Transposed convolution (no dilation): output (oy, ox) sums the taps (ky, kx) whose input
 * position iy = (oy + pad_top - ky) / stride_h (exact division, inside the input) exists, and
 * likewise for x. Output extents past the last tap (ONNX output_padding) hold the bias only. */
void tgr_conv_transpose_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                           const uint8_t *bias, const tgr_requant *rq, int8_t *output);

void tgr_depthwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                      const uint8_t *bias, const tgr_requant *rq, int8_t *output);

void tgr_fully_connected_s8(int32_t rows, int32_t in_features, int32_t out_features,
                            const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output);

void tgr_max_pool_s8(const tgr_window *w, const int8_t *input, const tgr_qparams *in,
                     const tgr_qparams *out, int32_t act_min, int32_t act_max, int8_t *output);

void tgr_avg_pool_s8(const tgr_window *w, const int8_t *input, const tgr_qparams *in,
                     const tgr_qparams *out, int32_t act_min, int32_t act_max, int8_t *output);

/* Global average pool over `spatial` positions per (batch, channel): TFLite MEAN
 * requantization, or AveragePool rounding for pools the compiler rewrote from a whole-map
 * AveragePool (OP_ATTR_POOL_ROUNDING). Prepared once, then finished per channel sum so the
 * by-input path can accumulate the sums band by band. */
typedef struct tgr_mean {
    int32_t spatial;
    tgr_qparams in, out;
    int32_t multiplier, shift;
    int32_t act_min, act_max;
    int average_rounding;
} tgr_mean;

void tgr_mean_prepare(int32_t spatial, const tgr_qparams *in, const tgr_qparams *out, int32_t act_min,
                      int32_t act_max, int average_rounding, tgr_mean *m);
int8_t tgr_mean_finish(const tgr_mean *m, int32_t sum);
void tgr_mean_accumulate(int32_t positions, int32_t channels, const int8_t *input, int32_t *sums);
void tgr_global_avg_pool_s8(int32_t batch, int32_t channels, const int8_t *input, const tgr_mean *m,
                            int8_t *output);

/* Softmax over the last axis of `rows` rows of `depth` elements, by the method the output
 * quantization selects: the integer method when tgr_softmax_is_integer(out), else float. */
int tgr_softmax_is_integer(const tgr_qparams *out);
void tgr_softmax_integer_s8(int32_t rows, int32_t depth, const int8_t *input, const tgr_qparams *in,
                            int8_t *output);
void tgr_softmax_float_s8(int32_t rows, int32_t depth, const int8_t *input, const tgr_qparams *in,
                          const tgr_qparams *out, int8_t *output);

/* LogSoftmax over the last axis (output quantization 1/16, 127): the integer Softmax's Q12 sum of
 * exps, the reference's fixed-point logarithm of it, each scaled difference minus that logarithm
 * in 1/16 steps (kernels_softmax.c). Returns 0 when a row's sum passes int32 (the reference fails
 * the run there), else 1. */
int tgr_log_softmax_s8(int32_t rows, int32_t depth, const int8_t *input, const tgr_qparams *in, int8_t *output);

/* L2Normalization over the last axis (output quantization 1/128, 0; the input scale and epsilon do
 * not enter): v * INVSQRT(sum v^2) per row, v = x - in_zp. Returns 0 when a row's sum of squares
 * passes int32, else 1 (kernels_norm.c). */
int tgr_l2_normalize_s8(int32_t rows, int32_t depth, const int8_t *input, int32_t in_zp, int8_t *output);

/* Rsqrt: the output pair of 1 / (sqrt(s_in) * s_out) (0 when its shift is outside what the
 * reference executes), the 256-entry table of every code at or above the input zero point, and
 * whether a run's inputs are all at or above it (the reference fails the run otherwise). */
int tgr_rsqrt_output_pair(const tgr_qparams *in, const tgr_qparams *out, int32_t *multiplier, int32_t *shift);
void tgr_rsqrt_table(const tgr_qparams *in, const tgr_qparams *out, int32_t multiplier, int32_t shift, int8_t *lut);
int tgr_rsqrt_fits(int32_t count, const int8_t *input, int32_t in_zp);

#endif /* TGR_KERNELS_H */
