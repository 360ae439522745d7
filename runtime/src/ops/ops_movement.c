/*
 * Movement family: Transpose, Concat, Split and Pad on int8 tensors, in stored axis order.
 *
 * What the reference runtime (tigris-ml 0.12.1) does, measured with single-op plans:
 * - Transpose moves bytes only. When the compiler gives its output another quantization than
 *   its input, the reference still copies the codes unchanged, and so do we.
 * - Concat copies inputs whose quantization equals the output's and requantizes the others in
 *   float32 (kernels_movement.c).
 * - Split exists only with every output quantized like the input: the reference refuses other
 *   plans ("operator contract is not executable"), and so do we.
 * - Pad fills with its 1-byte constant operand (already in the output encoding) or with the
 *   output zero point; the compiler only emits it with equal in/out quantization.
 * - Resize (nearest) copies the sampled pixel, requantized in double like Reshape when the
 *   encodings differ; the sampling index is computed in float32 (kernels_movement.c).
 * - ResizeLinear interpolates in Q10 fixed point (equal quantization only).
 * Transpose, Concat, Split and Pad also run in row bands along an axis they leave alone
 * (TILING_ROWS, path_rows.c); Resize is the spatial op of 1-D stripes (TILING_RESAMPLE).
 */
#include <math.h>

#include "kernels/kernels_data.h"
#include "ops/ops.h"

/* ---- Transpose ------------------------------------------------------------------------------- */

static tgr_status check_transpose(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t len = 0, k, seen = 0;
    const uint8_t *perm = tgr_attr_find(p, o, ATTR_TRANSPOSE_PERM, &len);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (perm == NULL || len != rank || tensor_ndim(p, out) != rank) {
        return tgr_bad_op(err, p, o, "permutation length differs from the tensor rank");
    }
    for (k = 0; k < rank; ++k) {
        if (perm[k] >= rank || (seen & (1u << perm[k]))) {
            return tgr_bad_op(err, p, o, "attribute is not a permutation of the stored axes");
        }
        seen |= 1u << perm[k];
        if (tensor_dim(p, out, k) != tensor_dim(p, in, perm[k])) {
            return tgr_bad_op(err, p, o, "output extents are not the permuted input extents");
        }
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    if (tensor_dtype(p, in) == TGR_DTYPE_INT32 && rank + 1u > TGR_MAX_RANK) {
        return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: op %u (Transpose) of int32 values at "
                        "rank %u (max %u)", o, rank, TGR_MAX_RANK - 1u);
    }
    return TGR_OK;
}

static void run_transpose(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    int32_t dims[TGR_MAX_RANK];
    uint8_t perm[TGR_MAX_RANK];
    uint32_t in = op_input(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    /* In a row band the permutation keeps the leading axes, so only the band's extents change. */
    tgr_band_dims(p, in, region, dims);
    memcpy(perm, tgr_attr_find(p, o, ATTR_TRANSPOSE_PERM, NULL), rank);
    if (tensor_dtype(p, in) == TGR_DTYPE_INT32) {
        /* An int32 value moves as its four bytes: one more axis, last and left in place. */
        dims[rank] = 4;
        perm[rank] = (uint8_t)rank;
        ++rank;
    }
    tgr_transpose_s8(rank, dims, perm, (const int8_t *)tensor_ptr[in], (int8_t *)tensor_ptr[op_output(p, o, 0)]);
}

/* ---- Concat and Split ------------------------------------------------------------------------ */

/* The pieces (inputs of a Concat, outputs of a Split) must equal the whole on every stored axis
 * but `axis`, where their extents add up; all in the same axis order. */
static tgr_status check_pieces(const tgr_plan *p, uint32_t o, uint32_t whole, uint32_t count, int split,
                               tgr_error *err)
{
    op_spatial sp;
    const uint32_t axis = op_concat_axis(p, o);
    uint32_t rank = tensor_ndim(p, whole);
    uint32_t i, k;
    int64_t along = 0;
    op_decode(p, o, &sp);
    if (axis >= rank) {
        return tgr_bad_op(err, p, o, "axis (kernel_h) is beyond the tensor rank");
    }
    for (i = 0; i < count; ++i) {
        uint32_t t = split ? op_output(p, o, i) : op_input(p, o, i);
        if (tensor_ndim(p, t) != rank || tgr_model_order(p, t) != tgr_model_order(p, whole)) {
            return tgr_bad_op(err, p, o, "pieces differ in rank or axis order");
        }
        for (k = 0; k < rank; ++k) {
            if (k != axis && tensor_dim(p, t, k) != tensor_dim(p, whole, k)) {
                return tgr_bad_op(err, p, o, "pieces differ on an axis other than the concatenation axis");
            }
        }
        along += tensor_dim(p, t, axis);
    }
    if (along != tensor_dim(p, whole, axis)) {
        return tgr_bad_op(err, p, o, "piece extents do not add up along the axis");
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return TGR_OK;
}

/* Bytes per outer index of what t's buffer holds from `axis` on, and the outer count. */
static uint32_t inner_bytes(const tgr_plan *p, uint32_t t, const int32_t *region, uint32_t axis)
{
    int32_t dims[TGR_MAX_RANK];
    uint32_t k, n = 1u;
    tgr_band_dims(p, t, region, dims);
    for (k = axis; k < tensor_ndim(p, t); ++k) {
        n *= (uint32_t)dims[k];
    }
    return n;
}

static uint32_t outer_count(const tgr_plan *p, uint32_t t, const int32_t *region, uint32_t axis)
{
    int32_t dims[TGR_MAX_RANK];
    uint32_t k, n = 1u;
    tgr_band_dims(p, t, region, dims);
    for (k = 0; k < axis; ++k) {
        n *= (uint32_t)dims[k];
    }
    return n;
}

static tgr_status check_concat(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    tgr_status st;
    uint32_t k;
    op_decode(p, o, &sp);
    if (sp.weight_idx != NONE16) {
        return tgr_unsupported_op(err, p, o, "a constant operand");
    }
    if (op_num_inputs(p, o) > TGR_MAX_STAGE_IO) {
        return tgr_unsupported_op(err, p, o, "more than 16 inputs");
    }
    st = check_pieces(p, o, op_output(p, o, 0), op_num_inputs(p, o), 0, err);
    for (k = 0; k < op_num_inputs(p, o) && st == TGR_OK; ++k) {
        st = tgr_check_rescale(p, o, op_input(p, o, k), op_output(p, o, 0), err);
    }
    return st;
}

static void run_concat(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    const int8_t *inputs[TGR_MAX_STAGE_IO];
    uint32_t chunk[TGR_MAX_STAGE_IO];
    tgr_qparams qin[TGR_MAX_STAGE_IO];
    uint32_t out = op_output(p, o, 0);
    uint32_t axis = op_concat_axis(p, o);
    uint32_t k;
    tgr_qparams qout = tgr_qparams_of(p, out);
    for (k = 0; k < op_num_inputs(p, o); ++k) {
        uint32_t t = op_input(p, o, k);
        inputs[k] = (const int8_t *)tensor_ptr[t];
        chunk[k] = inner_bytes(p, t, region, axis);
        qin[k] = tgr_qparams_of(p, t);
    }
    tgr_concat_s8(op_num_inputs(p, o), inputs, chunk, qin, outer_count(p, out, region, axis), &qout,
                  (int8_t *)tensor_ptr[out]);
}

static tgr_status check_split(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t k;
    if (op_num_outputs(p, o) > TGR_MAX_STAGE_IO) {
        return tgr_unsupported_op(err, p, o, "more than 16 outputs");
    }
    for (k = 0; k < op_num_outputs(p, o); ++k) {
        if (!tgr_same_qparams(p, in, op_output(p, o, k))) {
            /* The reference refuses these plans too. */
            return tgr_unsupported_op(err, p, o, "an output quantized differently from the input");
        }
    }
    /* The optional constant operand holds the split sizes (float32); the output shapes say the
     * same thing and are what the kernel uses. */
    return check_pieces(p, o, in, op_num_outputs(p, o), 1, err);
}

static void run_split(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    int8_t *outputs[TGR_MAX_STAGE_IO];
    uint32_t chunk[TGR_MAX_STAGE_IO];
    uint32_t in = op_input(p, o, 0);
    uint32_t axis = op_concat_axis(p, o);
    uint32_t k;
    for (k = 0; k < op_num_outputs(p, o); ++k) {
        uint32_t t = op_output(p, o, k);
        outputs[k] = (int8_t *)tensor_ptr[t];
        chunk[k] = inner_bytes(p, t, region, axis);
    }
    tgr_split_s8(op_num_outputs(p, o), (const int8_t *)tensor_ptr[in], outer_count(p, in, region, axis), chunk,
                 outputs);
}

/* ---- Pad ------------------------------------------------------------------------------------- */

static tgr_status check_pad(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t len = 0, k;
    const uint8_t *pads = tgr_attr_find(p, o, ATTR_PADS, &len);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (pads == NULL || len != 8u * rank || tensor_ndim(p, out) != rank || rank == 0u ||
        tgr_model_order(p, in) != tgr_model_order(p, out)) {
        return tgr_bad_op(err, p, o, "pads do not match the tensor rank");
    }
    for (k = 0; k < rank; ++k) {
        int32_t begin = rd_i32(pads + 8u * k);
        int32_t end = rd_i32(pads + 8u * k + 4u);
        if (begin < 0 || end < 0 || (int64_t)tensor_dim(p, in, k) + begin + end != tensor_dim(p, out, k)) {
            return tgr_bad_op(err, p, o, "pads do not turn the input extents into the output extents");
        }
    }
    if (sp.weight_idx != NONE16 && weight_size(p, sp.weight_idx) != 1u) {
        return tgr_bad_op(err, p, o, "fill value is not one int8 element");
    }
    if (!tgr_same_qparams(p, in, out)) {
        return tgr_unsupported_op(err, p, o, "padding with requantization");
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return TGR_OK;
}

static void run_pad(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    int32_t dims[TGR_MAX_RANK];
    int32_t pads[2u * TGR_MAX_RANK];
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_PADS, NULL);
    uint32_t k, rank = tensor_ndim(p, in);
    op_spatial sp;
    int8_t fill;
    op_decode(p, o, &sp);
    /* Without a constant the op pads with 0.0, i.e. the output zero point. */
    fill = sp.weight_idx != NONE16 ? (int8_t)weight_data(p, sp.weight_idx)[0]
                                   : (int8_t)quant_zero_point(p, tensor_quant(p, out));
    tgr_band_dims(p, in, region, dims);
    for (k = 0; k < 2u * rank; ++k) {
        pads[k] = rd_i32(attr + 4u * k);
    }
    tgr_pad_s8(rank, dims, pads, fill, (const int8_t *)tensor_ptr[in], (int8_t *)tensor_ptr[out]);
}

/* ---- Resize (nearest) -------------------------------------------------------------------------- */

/* Per-axis scale in/out as the reference samples (float32): 1 / the explicit scale when the
 * plan carries OP_ATTR_RESIZE_SCALES (measured: a 1.7x upscale of 7 columns differs from 7/11),
 * else in / out (equal to 1 / the integer factor in stride_h/w when there is one). */
static float resize_scale(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t len = 0;
    const uint8_t *scales = tgr_attr_find(p, o, ATTR_RESIZE_SCALES, &len);
    if (scales != NULL) {
        return 1.0f / rd_f32(scales + 4u * (axis - 1u));
    }
    return (float)tensor_dim(p, in, axis) / (float)tensor_dim(p, out, axis);
}

static tgr_status check_resize_nearest(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t len = 0, k;
    const uint8_t *scales = tgr_attr_find(p, o, ATTR_RESIZE_SCALES, &len);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (!tgr_is_nhwc(p, in) || !tgr_is_nhwc(p, out) || tensor_dim(p, in, 0) != tensor_dim(p, out, 0) ||
        tensor_dim(p, in, 3) != tensor_dim(p, out, 3)) {
        return tgr_unsupported_op(err, p, o, "a resize of anything but the H and W axes of an NHWC tensor");
    }
    if (op_resize_sampling(p, o) < 1u || op_resize_sampling(p, o) > 3u) {
        /* Conventions 1-3 were measured; 0 (half_pixel without the nearest rounding) never
         * appeared for a nearest resize. */
        return tgr_unsupported_op(err, p, o, "this sampling convention");
    }
    for (k = 1; k <= 2u; ++k) {
        uint32_t factor = k == 1u ? sp.stride_h : sp.stride_w;
        if (factor != 0u && (int64_t)tensor_dim(p, out, k) != (int64_t)factor * tensor_dim(p, in, k)) {
            return tgr_bad_op(err, p, o, "integer scale factors disagree with the extents");
        }
        if (scales != NULL && !(rd_f32(scales + 4u * (k - 1u)) > 0.0f)) {
            return tgr_bad_op(err, p, o, "explicit scale is not positive");
        }
        /* As the reference: floor(in x scale) in float32 must give the output extent (it refuses
         * 1.39 and 1.6 for 5 -> 7 and accepts 1.4f, whose float32 product rounds to 7). This
         * also keeps the sampling index finite: 1 / scale is at most the input extent. */
        if (scales != NULL &&
            floorf((float)tensor_dim(p, in, k) * rd_f32(scales + 4u * (k - 1u))) != (float)tensor_dim(p, out, k)) {
            return tgr_bad_op(err, p, o, "explicit scale disagrees with the extents");
        }
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return tgr_check_rescale(p, o, in, out, err);
}

/* The output rows a stripe's region asks of Resize op o, and the input row its buffer starts at
 * (1-D stripes: whole rows of full width). */
static tgr_resize_rows stripe_rows(const tgr_plan *p, uint32_t o, const int32_t *region)
{
    tgr_resize_rows rows;
    uint32_t out = op_output(p, o, 0);
    rows.y0 = region != NULL ? region[4u * out] : 0;
    rows.y1 = region != NULL ? region[4u * out + 1u] : tensor_dim(p, out, 1);
    rows.in_row0 = region != NULL ? region[4u * op_input(p, o, 0)] : 0;
    return rows;
}

void tgr_resize_input_rows(const tgr_plan *p, uint32_t o, int32_t r0, int32_t r1, int32_t *first, int32_t *end)
{
    const int32_t convention = (int32_t)op_resize_sampling(p, o);
    const int32_t in_h = tensor_dim(p, op_input(p, o, 0), 1);
    const int32_t out_h = tensor_dim(p, op_output(p, o, 0), 1);
    int32_t lo, hi;
    if (op_type(p, o) == OP_RESIZE) {
        *first = tgr_resize_nearest_index(convention, resize_scale(p, o, 1), in_h, out_h, r0);
        *end = tgr_resize_nearest_index(convention, resize_scale(p, o, 1), in_h, out_h, r1 - 1) + 1;
        return;
    }
    tgr_resize_bilinear_source(convention, in_h, out_h, r0, first, &hi);
    tgr_resize_bilinear_source(convention, in_h, out_h, r1 - 1, &lo, &hi);
    *end = hi + 1;
}

int32_t tgr_resize_band_rows(const tgr_plan *p, uint32_t o, int32_t rows)
{
    const int32_t in_h = tensor_dim(p, op_input(p, o, 0), 1);
    const int32_t out_h = tensor_dim(p, op_output(p, o, 0), 1);
    const int align = op_resize_sampling(p, o) == 2u && out_h > 1;
    const int64_t ni = align ? in_h - 1 : in_h;
    const int64_t no = align ? out_h - 1 : out_h;
    int64_t span;
    if (op_type(p, o) == OP_RESIZE) {
        /* float32 scale, as the kernel samples, widened to double for the product */
        float scale = align ? (float)ni / (float)no : resize_scale(p, o, 1);
        span = 1 + (rows > 1 ? (int64_t)ceil((double)(rows - 1) * (double)scale) + 1 : 0);
    } else {
        int64_t scale_10 = (1024 * ni + no / 2) / no; /* check_resize_bilinear refuses explicit scales */
        span = 2 + (rows > 1 ? ((rows - 1) * scale_10 + 1023) / 1024 : 0);
    }
    return span < in_h ? (int32_t)span : in_h;
}

static void run_resize_nearest(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, out);
    tgr_resize_rows rows = stripe_rows(p, o, region);
    tgr_resize_nearest_s8(tensor_dim(p, in, 0), tensor_dim(p, in, 1), tensor_dim(p, in, 2), tensor_dim(p, in, 3),
                          tensor_dim(p, out, 1), tensor_dim(p, out, 2), (int32_t)op_resize_sampling(p, o),
                          resize_scale(p, o, 1), resize_scale(p, o, 2), &qin, &qout, &rows,
                          (const int8_t *)tensor_ptr[in], (int8_t *)tensor_ptr[out]);
}

/* ResizeLinear: only what was measured bit-exact (tests/ops/test_ops_movement.py). With
 * different in/out quantization the reference's rounding matched neither the double nor the
 * float32 requantization of the interpolated value on tie-prone scale pairs, and explicit
 * non-integer scales were not probed: both are refused rather than approximated. */
static tgr_status check_resize_bilinear(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t k;
    op_spatial sp;
    op_decode(p, o, &sp);
    if (!tgr_is_nhwc(p, in) || !tgr_is_nhwc(p, out) || tensor_dim(p, in, 0) != tensor_dim(p, out, 0) ||
        tensor_dim(p, in, 3) != tensor_dim(p, out, 3)) {
        return tgr_unsupported_op(err, p, o, "a resize of anything but the H and W axes of an NHWC tensor");
    }
    if (op_resize_sampling(p, o) > 2u) {
        return tgr_unsupported_op(err, p, o, "this sampling convention");
    }
    if (tgr_attr_find(p, o, ATTR_RESIZE_SCALES, NULL) != NULL) {
        return tgr_unsupported_op(err, p, o, "bilinear resizing with explicit non-integer scales");
    }
    if (!tgr_same_qparams(p, in, out)) {
        return tgr_unsupported_op(err, p, o, "bilinear resizing with requantization");
    }
    for (k = 1; k <= 2u; ++k) {
        uint32_t factor = k == 1u ? sp.stride_h : sp.stride_w;
        if (factor != 0u && (int64_t)tensor_dim(p, out, k) != (int64_t)factor * tensor_dim(p, in, k)) {
            return tgr_bad_op(err, p, o, "integer scale factors disagree with the extents");
        }
        if (tensor_dim(p, in, k) > 65535 || tensor_dim(p, out, k) > 65535) {
            return tgr_unsupported_op(err, p, o, "extents above 65535");
        }
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return TGR_OK;
}

static void run_resize_bilinear(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    tgr_resize_rows rows = stripe_rows(p, o, region);
    tgr_resize_bilinear_s8(tensor_dim(p, in, 0), tensor_dim(p, in, 1), tensor_dim(p, in, 2), tensor_dim(p, in, 3),
                           tensor_dim(p, out, 1), tensor_dim(p, out, 2), (int32_t)op_resize_sampling(p, o), &rows,
                           (const int8_t *)tensor_ptr[in], (int8_t *)tensor_ptr[out]);
}

/* ---- row bands: along an axis the op leaves alone -------------------------------------------- */

static const char *transpose_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    return tgr_attr_find(p, o, ATTR_TRANSPOSE_PERM, NULL)[axis] == axis
               ? NULL
               : TGR_TEXT("a Transpose that moves the band axis cannot run in row bands");
}

static const char *pieces_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    return op_concat_axis(p, o) != axis ? NULL : TGR_TEXT("a Concat or Split cannot be banded along the axis it joins or cuts");
}

static const char *pad_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    const uint8_t *pads = tgr_attr_find(p, o, ATTR_PADS, NULL);
    return rd_i32(pads + 8u * axis) == 0 && rd_i32(pads + 8u * axis + 4u) == 0
               ? NULL
               : TGR_TEXT("a Pad cannot be banded along an axis it pads");
}

TGR_OP_IMPL(OP_CONCAT, TILING_POINTWISE | TILING_ROWS, check_concat, run_concat);
TGR_OP_BANDS(OP_CONCAT, pieces_band_problem);
TGR_OP_IMPL(OP_PAD, TILING_ROWS, check_pad, run_pad);
TGR_OP_BANDS(OP_PAD, pad_band_problem);
TGR_OP_IMPL(OP_TRANSPOSE, TILING_ROWS, check_transpose, run_transpose);
TGR_OP_BANDS(OP_TRANSPOSE, transpose_band_problem);
TGR_OP_IMPL(OP_RESIZE, TILING_RESAMPLE, check_resize_nearest, run_resize_nearest);
TGR_OP_IMPL(OP_SPLIT, TILING_ROWS, check_split, run_split);
TGR_OP_BANDS(OP_SPLIT, pieces_band_problem);
TGR_OP_IMPL(OP_RESIZE_LINEAR, TILING_RESAMPLE, check_resize_bilinear, run_resize_bilinear);
