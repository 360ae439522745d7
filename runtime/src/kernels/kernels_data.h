/*
 * int8 kernels of the data-movement, reduction and matmul families (kernels_movement.c,
 * kernels_reduce.c, kernels_matmul.c). Like kernels.h they are plain functions over raw buffers
 * that trust their arguments: the op checks in ops_movement.c, ops_shape.c, ops_reduce.c and
 * ops_matmul.c have validated every shape and parameter at load time.
 *
 * Shapes are given in stored axis order (the plan's shape pool), as `rank` extents.
 * The arithmetic of every kernel was established against the reference host runtime
 * (tigris-ml 0.12.1) by experiment; each function says which formula it reproduces.
 */
#ifndef TGR_KERNELS_DATA_H
#define TGR_KERNELS_DATA_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "tgr.h" /* TGR_MAX_RANK */

/* ---- element requantization ----------------------------------------------------------------- */

/* Reshape/Flatten, rescaling MaxPool-like ops: y = round_half_away((x - zp_in) * s_in / s_out)
 * + zp_out in double, clamped to int8. Same quantization copies bytes. `in` and `out` may be
 * the same buffer. */
void tgr_requant_double_s8(uint32_t count, const int8_t *in, const tgr_qparams *qin, const tgr_qparams *qout,
                           int8_t *out);

/* Concat inputs: y = roundf(float(s_in / s_out) * float(x - zp_in)) + zp_out in float32. */
void tgr_requant_float_s8(uint32_t count, const int8_t *in, const tgr_qparams *qin, const tgr_qparams *qout,
                          int8_t *out);

/* ---- movement ------------------------------------------------------------------------------- */

/* out[i0..] = in[...] with output stored axis k = input stored axis perm[k]; bytes only. */
void tgr_transpose_s8(uint32_t rank, const int32_t *in_dims, const uint8_t *perm, const int8_t *in, int8_t *out);

/* Constant padding: pads[2k], pads[2k+1] = begin/end of stored axis k (>= 0), `fill` elsewhere. */
void tgr_pad_s8(uint32_t rank, const int32_t *in_dims, const int32_t *pads, int8_t fill, const int8_t *in,
                int8_t *out);

/* Concatenation along stored axis `axis`: `outer` = product of the extents before it, input k
 * contributes `chunk[k]` = (its extent on the axis) x (product of the extents after it)
 * consecutive bytes per outer index, requantized when qin[k] differs from qout. */
void tgr_concat_s8(uint32_t count, const int8_t *const *inputs, const uint32_t *chunk, const tgr_qparams *qin,
                   uint32_t outer, const tgr_qparams *qout, int8_t *out);

/* Split: the inverse of a same-quantization concat; output k receives chunk[k] bytes per outer. */
void tgr_split_s8(uint32_t count, const int8_t *in, uint32_t outer, const uint32_t *chunk, int8_t *const *outputs);

/* The output rows [y0, y1) a resize kernel writes (from the start of its output buffer), reading
 * an input buffer whose first row is input row in_row0: a stripe, or {0, out_h, 0} for all. */
typedef struct tgr_resize_rows {
    int32_t y0, y1, in_row0;
} tgr_resize_rows;

/* Nearest-neighbour resize of NHWC: output pixel (y, x) copies input pixel
 * (tgr_resize_nearest_index(y), tgr_resize_nearest_index(x)), requantized like Reshape (double)
 * when the encodings differ. */
void tgr_resize_nearest_s8(int32_t batch, int32_t in_h, int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                           int32_t convention, float scale_h, float scale_w, const tgr_qparams *qin,
                           const tgr_qparams *qout, const tgr_resize_rows *rows, const int8_t *in, int8_t *out);

/* Source index of output index i along one axis. convention: 1 asymmetric (floor(i * scale)),
 * 2 align_corners (round(i * (in - 1) / (out - 1))), 3 half pixel (floor((i + 0.5) * scale)),
 * all in float32 and clamped to in - 1; `scale` is in/out (or 1 / the plan's explicit scale). */
int32_t tgr_resize_nearest_index(int32_t convention, float scale, int32_t in, int32_t out, int32_t i);

/* Bilinear resize of NHWC with equal in/out quantization, Q10 fixed point: per axis the
 * source position v = i * s10 (asymmetric, align_corners with s10 from (in-1)/(out-1)) or
 * ((2i + 1) * s10 >> 1) - 512 (half pixel, clamped at 0), s10 = round(scale * 1024); the four
 * neighbours are weighted by (1024 - d) / d per axis and the Q20 sum is rounded half away from
 * zero. convention: 0 half pixel, 1 asymmetric, 2 align_corners. */
void tgr_resize_bilinear_s8(int32_t batch, int32_t in_h, int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                            int32_t convention, const tgr_resize_rows *rows, const int8_t *in, int8_t *out);
/* The two input rows i0 <= i1 bilinear output row i interpolates between. */
void tgr_resize_bilinear_source(int32_t convention, int32_t in, int32_t out, int32_t i, int32_t *i0, int32_t *i1);

/* ---- reductions ----------------------------------------------------------------------------- */

enum { TGR_REDUCE_MEAN = 0, TGR_REDUCE_SUM, TGR_REDUCE_MAX, TGR_REDUCE_MIN };

/* Reduction of the stored axes whose bit is set in `axes_mask` (bit k = axis k). The output
 * holds the kept axes in their stored order. Mean: TFLite MEAN requantization (`mean`, prepared
 * with the reduced element count); Sum: MBQM(sum - zp_in * count, multiplier, shift) + zp_out
 * with the pair of s_in / s_out; Max/Min: the extreme input code. Clamped to [act_min, act_max]. */
typedef struct tgr_reduce_params {
    int32_t kind;
    tgr_mean mean;                 /* TGR_REDUCE_MEAN */
    int32_t in_zp, out_zp;         /* TGR_REDUCE_SUM */
    int32_t multiplier, shift;     /* TGR_REDUCE_SUM */
    int32_t act_min, act_max;
} tgr_reduce_params;

void tgr_reduce_s8(uint32_t rank, const int32_t *in_dims, uint32_t axes_mask, const tgr_reduce_params *rp,
                   const int8_t *in, int8_t *out);

/* GlobalMaxPool over NHWC: per (n, c) the maximum over H x W, requantized like a rescaling
 * MaxPool (double formula of tgr_requant_double_s8), clamped to [act_min, act_max]. */
void tgr_global_max_pool_s8(int32_t batch, int32_t positions, int32_t channels, const int8_t *in,
                            const tgr_qparams *qin, const tgr_qparams *qout, int32_t act_min, int32_t act_max,
                            int8_t *out);

/* ---- matmul --------------------------------------------------------------------------------- */

/* `batch` independent products [rows x depth] x [depth x cols] of two activations:
 * y = clamp(MBQM(sum (a - zp_a)(b - zp_b), multiplier, shift) + zp_out, act_min, act_max). */
typedef struct tgr_matmul_params {
    int32_t a_zp, b_zp, out_zp;
    int32_t multiplier, shift;
    int32_t act_min, act_max;
} tgr_matmul_params;

void tgr_matmul_s8(uint32_t batch, uint32_t rows, uint32_t depth, uint32_t cols, const int8_t *a, const int8_t *b,
                   const tgr_matmul_params *q, int8_t *out);

/* CumSum along the middle axis of [outer][length][inner] (kernels_reduce.c): the running sum of
 * (x - in_zp), started at -in_zp, lifted by 2^lift, requantized by MBQM(multiplier, shift) +
 * out_zp; `exclusive` leaves the current element out, `reverse` runs from the end. The op check
 * guarantees the lifted sum stays inside int32. */
typedef struct tgr_cumsum_params {
    int exclusive, reverse;
    int32_t in_zp, out_zp, lift;
    int32_t multiplier, shift;
} tgr_cumsum_params;
void tgr_cumsum_s8(const tgr_cumsum_params *c, uint32_t outer, uint32_t length, uint32_t inner, const int8_t *in,
                   int8_t *out);

/* ArgMax (`smallest` 0) / ArgMin along the middle axis of [outer][length][inner]: the index of
 * the first extreme code, as little-endian int32 at out[4 * (o * inner + i)]. */
void tgr_arg_extreme_s8(int smallest, uint32_t outer, uint32_t length, uint32_t inner, const int8_t *in, uint8_t *out);

/* ---- logic (kernels_logic.c): bool bytes, non-zero is true -------------------------------------- */

/* Where: out = condition ? x : y over the output extents `dims`; each operand's extents are the
 * output's or 1 (broadcast). */
typedef struct tgr_where_shape {
    uint32_t rank;
    int32_t dims[TGR_MAX_RANK];
    int32_t extent[3][TGR_MAX_RANK];   /* condition, x, y */
} tgr_where_shape;
void tgr_where_s8(const tgr_where_shape *w, const uint8_t *condition, const int8_t *x, const int8_t *y, int8_t *out);

/* ReduceAll along the middle axis of [outer][length][inner]: 1 when every element is true. */
void tgr_reduce_all_bool(uint32_t outer, uint32_t length, uint32_t inner, const uint8_t *in, uint8_t *out);

/* ---- indexing (kernels_index.c) --------------------------------------------------------------- */

/* Where output coordinate i of one axis reads its input coordinate: start + i * step, then, for
 * MirrorPad, mirrored back into [0, extent) (reflect: without the edge, symmetric: with it). */
enum { TGR_MIRROR_NONE = 0, TGR_MIRROR_REFLECT = 1, TGR_MIRROR_SYMMETRIC = 2 };
typedef struct tgr_axis_map {
    int32_t start, step;
    int32_t extent;   /* input extent, for the mirror */
    int32_t mirror;   /* TGR_MIRROR_* */
} tgr_axis_map;
int32_t tgr_axis_map_source(const tgr_axis_map *map, int32_t i);

/* StridedSlice, ReverseV2, MirrorPad: out[i0, i1, ...] = in[map0(i0), map1(i1), ...], every
 * mapped coordinate inside in_dims. */
void tgr_axis_map_s8(uint32_t rank, const int32_t *in_dims, const int32_t *out_dims, const tgr_axis_map *maps,
                     const int8_t *in, int8_t *out);

/* Gather with batch dimensions: the input is [batches][outer][extent][inner] (bytes), the
 * indices [batches][count] (little-endian int32), the output [batches][outer][count][inner].
 * Negative indices count from the end where `from_end` (a constant table's lookups); 0 when an
 * index is outside the axis (the reference fails such a run), else 1. */
typedef struct tgr_gather_shape {
    uint32_t batches, outer, extent, count, inner;
    int from_end;
} tgr_gather_shape;
int tgr_gather_s8(const tgr_gather_shape *g, const uint8_t *indices, const int8_t *in, int8_t *out);

/* GatherND: `count` index tuples of `depth` coordinates into the first `depth` axes `dims` of the
 * input, each selecting a block of `inner` bytes; `from_end` and the result as for Gather. */
int tgr_gather_nd_s8(uint32_t count, uint32_t depth, const int32_t *dims, const uint8_t *indices, uint32_t inner,
                     int from_end, const int8_t *in, int8_t *out);

/* DynamicUpdateSlice: out = in (copied unless the same buffer) with the update written at
 * `starts`, every start + update extent inside dims. */
void tgr_update_slice_s8(uint32_t rank, const int32_t *dims, const int32_t *update_dims, const int32_t *starts,
                         const int8_t *in, const int8_t *update, int8_t *out);

#endif /* TGR_KERNELS_DATA_H */
