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

#include "kernels/isa.h"

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

/* ==== Convolution family: Conv, DepthwiseConv, Gemm (fully connected), ConvTranspose ==========
 *
 * Each op has kernel variants, one a file (kernels/README.md lists them). The op's dispatcher
 * (ops/ops_conv.c: conv_method, depthwise_method, gemm_method) picks a layer's method once, from
 * the predicates below over what the plan fixes (tgr_conv_shape); the method's run calls the
 * variant this build has for it (the table in ops_conv.c), so a firmware links the variants of its
 * plan's methods and no other. Every variant gives exactly the int32 sums of the plain loops
 * (the accumulator wraps, so sums may be formed in any order), then the same requantization:
 * docs/execution.md#convolution-gemm-and-matmul.
 *
 * Common to every variant below, unless it says otherwise:
 *  - Operands. `w` describes one call: whole tensors (batch as in the plan), or a tile, stripe or
 *    chain step (batch 1, tile-local extents; a negative pad_top/pad_left is the offset of the
 *    first window into a buffer that holds more rows or columns than the call reads). input holds
 *    batch x in_h x in_w x in_c bytes (NHWC); output batch x out_h x out_w x out_c. Conv and
 *    ConvTranspose filters are OHWI (out_c x kernel_h x kernel_w x in_c), a depthwise filter is
 *    kernel_h x kernel_w x out_c, a Gemm filter out_features x in_features. bias is NULL or
 *    4 x out_c bytes of little-endian int32. rq's arrays hold one Q0.31 pair per output channel
 *    (per_channel) or one for all, each tgr_valid_pair (shift -31..31: ops_common.c).
 *  - Alignment: none assumed. Words of int8 values and the plan's int32 arrays are read through
 *    memcpy or scalar loads (one unaligned LDR on the cores we target); Helium loads are byte
 *    vectors (VLDRB), which need no alignment.
 *  - Values: in_zp with x - in_zp in a signed 16-bit lane for every int8 x (tgr_zp_packs_16_bits)
 *    for every variant but the plain ones, which take any int32; out_zp, act_min and act_max any
 *    int32 (the zero point is added with wrap-around, then the output clamped to [act_min, act_max],
 *    which the loader keeps inside int8).
 *  - No memory but the operands and the stack. Stack per call as stated: the variant and its hot
 *    pass, the larger of the DSP and Helium builds (arm-none-eabi-gcc 12.2 -O2 -fstack-usage,
 *    Cortex-M55); the static stack bound of each firmware counts what it links.
 */

/* What the plan fixes about a Conv, DepthwiseConv or Gemm layer: the same for every call of it
 * (whole tensors, tiles, stripes, chain steps), unlike tgr_window's extents and pads. The method
 * predicates read only this. A Gemm is in_c = in_features, out_c = out_features, a 1x1 kernel. */
typedef struct tgr_conv_shape {
    int32_t in_c, out_c;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left, pad_bottom, pad_right; /* the layer's own padding */
    int32_t in_zp;
} tgr_conv_shape;

/* Input bytes the Helium patch variant gathers one window into, on its stack. */
#define TGR_CONV_PATCH_BYTES 256

/* Window inputs (kernel_h x kernel_w x in_c) the gather variants gather for each of the output
 * pixels they take at once, on their stack. */
#define TGR_CONV_GATHER_INPUTS 128

/* Output channels whose constants the Helium gather variant keeps in tables on its stack at once. */
#define TGR_CONV_GATHER_CHANNELS 64

/* ---- method predicates (static: a layer's shape, never a call's) ---------------------------- */

/* Every x - zp of an int8 input fits a signed 16-bit lane, as the packed pairs need. */
static inline int tgr_zp_packs_16_bits(int32_t zp)
{
    return zp >= -32000 && zp <= 32000;
}

/* A 1x1 kernel, stride 1, no padding: a matrix product over channels. */
static inline int tgr_conv_is_pointwise(const tgr_conv_shape *s)
{
    return s->kernel_h == 1 && s->kernel_w == 1 && s->stride_h == 1 && s->stride_w == 1 && s->pad_top == 0 &&
           s->pad_left == 0 && s->pad_bottom == 0 && s->pad_right == 0;
}

/* No padding on any side: then every window of every call lies inside the input the call is
 * given (tgr_conv_windows_inside holds), since a tile's input holds every row its outputs read. */
static inline int tgr_conv_is_unpadded(const tgr_conv_shape *s)
{
    return s->pad_top == 0 && s->pad_left == 0 && s->pad_bottom == 0 && s->pad_right == 0;
}

/* The window, kernel_h x kernel_w x in_c input bytes, fits the Helium patch. */
static inline int tgr_conv_window_fits_patch(const tgr_conv_shape *s)
{
    return (int64_t)s->kernel_h * s->kernel_w * s->in_c <= TGR_CONV_PATCH_BYTES;
}

/* The window fits the gather variants' buffers and the input zero point is an int8 value (the
 * taps outside the input are gathered as zero-point bytes): a first layer's small window. */
static inline int tgr_conv_window_fits_gather(const tgr_conv_shape *s)
{
    return (int64_t)s->kernel_h * s->kernel_w * s->in_c <= TGR_CONV_GATHER_INPUTS && s->in_zp >= -128 &&
           s->in_zp <= 127;
}

/* A depthwise layer with channel multiplier 1 (as many output channels as input channels). */
static inline int tgr_depthwise_is_multiplier_1(const tgr_conv_shape *s)
{
    return s->out_c == s->in_c;
}

/* A depthwise 3x3 layer with channel multiplier 1 and dilation 1 (any stride, any padding). */
static inline int tgr_depthwise_is_3x3(const tgr_conv_shape *s)
{
    return tgr_depthwise_is_multiplier_1(s) && s->kernel_h == 3 && s->kernel_w == 3 && s->dilation_h == 1 &&
           s->dilation_w == 1;
}

/* ---- call predicate (dynamic: one call's extents and pads) ----------------------------------- */

/* Every output window of this call lies wholly inside its input: always for an unpadded layer,
 * for a padded one only for tiles clear of the padding. */
static inline int tgr_conv_windows_inside(const tgr_window *w)
{
    return w->pad_top <= 0 && w->pad_left <= 0 &&
           (int64_t)(w->out_h - 1) * w->stride_h + (int64_t)(w->kernel_h - 1) * w->dilation_h - w->pad_top < w->in_h &&
           (int64_t)(w->out_w - 1) * w->stride_w + (int64_t)(w->kernel_w - 1) * w->dilation_w - w->pad_left < w->in_w;
}

/* A call with fewer outputs than this takes a depthwise variant that works output by output
 * (tgr_depthwise_s8 rather than tgr_depthwise_3x3_s8): below it the 3x3 variant's decoding of
 * each group of channels, once a call, costs more than it saves (a chain or tile step of a pixel or
 * two, e.g. DS-CNN at a budget of 640 B). */
#define TGR_DEPTHWISE_FEW_OUTPUTS 12

static inline int tgr_depthwise_call_is_small(const tgr_window *w)
{
    return (int64_t)w->batch * w->out_h * w->out_w < TGR_DEPTHWISE_FEW_OUTPUTS;
}

/* ---- Conv ------------------------------------------------------------------------------------ */

/* conv_general.c, every build. Any Conv shape, any call. Per output pixel: the taps inside the
 * input once, then four output channels per pass over them (then two; an odd last channel is
 * computed twice); with dilation 1 a kernel row's inside taps are one run of inputs. Packed pairs
 * (SMLAD) four inputs a step; in mve=1 Helium dot products for runs of 16 inputs and more.
 * Stack: 360 B (DSP), 440 B (mve=1). */
void tgr_conv_general_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                         const tgr_requant *rq, int8_t *output);

/* conv_gather.c, DSP and portable builds. Requires tgr_conv_window_fits_gather; any call (windows
 * cut by padding included). Two output pixels at a time: each window gathered once into a stack
 * buffer (taps outside the input hold in_zp, which adds (zp - zp) * w = 0) and widened once into
 * (x - zp) 16-bit pairs; then two output channels a pass over both windows, eight SMLAD per four
 * inputs (each filter word widened once for two pixels); an odd last channel is computed twice, an
 * odd last pixel likewise. Buffers on the stack: 2 x TGR_CONV_GATHER_INPUTS x 2 B of pairs and
 * TGR_CONV_GATHER_INPUTS B of window bytes. Stack: 904 B. */
void tgr_conv_gather_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                        const tgr_requant *rq, int8_t *output);

/* conv_gather_mve.c, mve=1 only. Requires tgr_conv_window_fits_gather; any call. Output channels
 * in blocks of TGR_CONV_GATHER_CHANNELS: each channel's bias - in_zp * sum(w), multiplier and
 * shift once per block into tables on the stack; then two pixels at a time (an odd last pixel
 * twice) each window gathered once into a patch (taps outside the input hold in_zp, zeros up to a
 * whole vector), and per group of four channels eight raw VMLADAVA dot products, each filter vector
 * loaded once for both patches, and two vector requantizations; a last group of fewer than four
 * channels repeats the last channel in its spare lanes and stores its own only. Filter vectors may
 * run on into the next filter (against zeros in the patch), never past the filter array. Buffers
 * on the stack: 3 x TGR_CONV_GATHER_CHANNELS x 4 B of tables, 2 x TGR_CONV_GATHER_INPUTS B of
 * patches. Stack: 1,624 B. */
void tgr_conv_gather_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output);

/* conv_pointwise.c, DSP and portable builds. Requires tgr_conv_is_pointwise (the 1x1 window and
 * stride are not read from w); serves whole, tiled and striped calls (w's negative pads are offsets
 * into the buffer). Per pair of output channels, bias - in_zp * sum(w) and the requantizations
 * once, and for in_c <= 64 both filters widened to 16-bit pairs once, into 256 B of stack; then
 * two output pixels by the two channels a pass, raw int8 products four inputs a step (each
 * widened weight word serves two pixels, each widened input word two channels); an odd last pixel
 * of a run one at a time, an odd last channel two pixels a pass. Any in_c, out_c.
 * Stack: 664 B, the widened filters included. */
void tgr_conv_pointwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output);

/* conv_pointwise_mve.c, mve=1 only. Requires tgr_conv_is_pointwise; any call, as
 * tgr_conv_pointwise_s8. Groups of four output
 * channels: bias - in_zp * sum(w) and the requantization vectors once per group, then per pixel
 * four raw VMLADAVA dot products (sixteen inputs a step, the last in_c % 16 predicated; up to 16
 * inputs the four filters held in registers) and one vector requantization; the last out_c % 4
 * channels by the plain loop (conv_plain.h). Stack: 456 B. */
void tgr_conv_pointwise_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                               const tgr_requant *rq, int8_t *output);

/* conv_inside_mve.c, mve=1 only. Requires tgr_conv_windows_inside(w): every call of an unpadded
 * layer, the tiles of a padded one that are clear of the padding. Groups of four output channels:
 * bias - in_zp * sum(w) and the requantization vectors once per group, four raw VMLADAVA dot
 * products and one vector requantization per pixel; the last out_c % 4 channels by the plain loop
 * (conv_plain.h). Stack: 504 B. */
void tgr_conv_inside_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output);

/* conv_patch_mve.c, mve=1 only. Requires tgr_conv_window_fits_patch; any call (windows cut by
 * padding included). Each pixel's window gathered into a TGR_CONV_PATCH_BYTES patch on the stack,
 * padding taps holding in_zp (they add (zp - zp) * w = 0, as skipping them does); then per group
 * of four channels one raw dot product over the patch, bias - in_zp * sum(w) and a vector
 * requantization; the last channels two at a time. Stack: 800 B, the patch included. */
void tgr_conv_patch_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                           const tgr_requant *rq, int8_t *output);

/* conv_plain.c, every build. Any Conv shape and call, any int32 in_zp: tap by tap. Stack: 120 B. */
void tgr_conv_plain_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                       const tgr_requant *rq, int8_t *output);

/* conv_plain.c, every build: transposed convolution (no dilation), any int32 in_zp: output
 * (oy, ox) sums the taps (ky, kx) whose input position iy = (oy + pad_top - ky) / stride_h (exact
 * division, inside the input) exists, and likewise for x. Output extents past the last tap (ONNX
 * output_padding) hold the bias only. Stack: 112 B. */
void tgr_conv_transpose_s8(const tgr_window *w, const int8_t *input, const int8_t *filter,
                           const uint8_t *bias, const tgr_requant *rq, int8_t *output);

/* ---- DepthwiseConv (filter kernel_h x kernel_w x out_c, input channel = oc / multiplier) ---- */

/* depthwise.c, DSP and portable builds. Requires tgr_depthwise_is_multiplier_1; any call. Per
 * output pixel four channels per tap (SMLABB/SMLATT), the nine taps of a 3x3 window wholly inside
 * the input as straight-line code, the taps inside the input otherwise; the last channels one by
 * one. Stack: 368 B. */
void tgr_depthwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                      const tgr_requant *rq, int8_t *output);

/* depthwise_mve.c, mve=1 only. Requires tgr_depthwise_is_multiplier_1; any call. Groups of four
 * channels, one int32 lane each: bias - in_zp * sum(w) and the requantization vectors once per
 * group; along each output row the windows inside the input as x * w (a 3x3 in straight-line
 * rows), the others as (x - zp) * w over their inside taps; the last in_c % 4 channels by the
 * plain loop (conv_plain.h). Stack: 504 B. */
void tgr_depthwise_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                          const tgr_requant *rq, int8_t *output);

/* depthwise_3x3.c, DSP and portable builds. Requires tgr_depthwise_is_3x3; any call (the method
 * gives it those that are not tgr_depthwise_call_is_small). Groups of four channels, each over
 * every output of the call: its nine weight words widened once into packed pairs, its bias,
 * bias - in_zp * sum(w) and requantization decoded once; per output four SMLABB/SMLATT a tap, a
 * window inside the input on raw x from bias - in_zp * sum(w) (straight-line code, a run of them
 * along a row), one cut by padding on x - in_zp over its kernel rows and columns inside (the
 * padding adds (zp - zp) * w = 0). The sums of 16 outputs (256 B on the stack) are then
 * requantized together, channel by channel (SMMULR and SSAT where the multiplier is at least 2^30
 * and the clamp the int8 range); the last in_c % 4 channels by the plain loop (conv_plain.h).
 * Stack: 800 B. */
void tgr_depthwise_3x3_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                          const tgr_requant *rq, int8_t *output);

/* depthwise_3x3_mve.c, mve=1 only. Requires tgr_depthwise_is_3x3; any call. Groups of four
 * channels, one int32 lane each, each over every output of the call: bias - in_zp * sum(w) and
 * the requantization vectors decoded once a group; a window inside the input as raw x * w from
 * that base (straight-line code), one cut by padding as (x - in_zp) * w from the bias over its
 * kernel rows and columns inside; one vector requantization per output (the clamp a saturating
 * shift where it is the int8 range); the last in_c % 4 channels by the plain loop (conv_plain.h).
 * Stack: 432 B. */
void tgr_depthwise_3x3_mve_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                              const tgr_requant *rq, int8_t *output);

/* conv_plain.c, every build. Any channel multiplier, any int32 in_zp. Stack: 112 B. */
void tgr_depthwise_plain_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                            const tgr_requant *rq, int8_t *output);

/* ---- Gemm / fully connected: `rows` rows of in_features inputs ------------------------------- */

/* fully_connected.c, every build. Whole calls and row bands (`rows` the band's). Two output
 * features per pass over the row, each input word widened once for both (an odd last feature is
 * computed twice); in mve=1 Helium dot products for 16 inputs and more. Stack: 136 B. */
void tgr_fully_connected_s8(int32_t rows, int32_t in_features, int32_t out_features, const int8_t *input,
                            const int8_t *filter, const uint8_t *bias, const tgr_requant *rq, int8_t *output);

/* conv_plain.c, every build. Any int32 in_zp. Stack: 80 B. */
void tgr_fully_connected_plain_s8(int32_t rows, int32_t in_features, int32_t out_features, const int8_t *input,
                                  const int8_t *filter, const uint8_t *bias, const tgr_requant *rq, int8_t *output);

/* ==== Pooling, reductions, softmax ============================================================== */

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
