/*
 * How a tensor is laid out and what part of it a buffer holds: axis order, quantization, and
 * the band and tile regions of tiled execution. Op checks, kernels' callers and the execution
 * paths all ask these questions, so the answers live once, next to the records they read.
 */
#include "plan/plan_tensors.h"

int tgr_model_order(const tgr_plan *p, uint32_t t)
{
    uint32_t rank = tensor_ndim(p, t);
    return (tensor_flags(p, t) & TF_LINEAR) != 0u || rank <= 2u || rank >= 5u;
}

int tgr_is_nhwc(const tgr_plan *p, uint32_t t)
{
    return tensor_ndim(p, t) == 4u && !tgr_model_order(p, t);
}

tgr_qparams tgr_qparams_of(const tgr_plan *p, uint32_t t)
{
    tgr_qparams q;
    if (tensor_dtype(p, t) != TGR_DTYPE_INT8) {
        /* bool / int32 tensors carry no quantization (the loader does not check theirs). */
        q.scale = 1.0f;
        q.zero_point = 0;
        return q;
    }
    q.scale = quant_scale(p, tensor_quant(p, t));
    q.zero_point = quant_zero_point(p, tensor_quant(p, t));
    return q;
}

int tgr_same_qparams(const tgr_plan *p, uint32_t a, uint32_t b)
{
    tgr_qparams qa = tgr_qparams_of(p, a);
    tgr_qparams qb = tgr_qparams_of(p, b);
    return qa.scale == qb.scale && qa.zero_point == qb.zero_point;
}

int tgr_same_shape(const tgr_plan *p, uint32_t a, uint32_t b)
{
    uint32_t axis;
    if (tensor_ndim(p, a) != tensor_ndim(p, b) || tgr_model_order(p, a) != tgr_model_order(p, b)) {
        return 0;
    }
    for (axis = 0; axis < tensor_ndim(p, a); ++axis) {
        if (tensor_dim(p, a, axis) != tensor_dim(p, b, axis)) {
            return 0;
        }
    }
    return 1;
}

void tgr_extent_of(const tgr_plan *p, uint32_t t, const int32_t *region, int32_t out[4])
{
    if (region != NULL) {
        memcpy(out, region + 4u * t, 4u * sizeof out[0]);
    } else {
        out[0] = 0;
        out[1] = tensor_dim(p, t, 1);
        out[2] = 0;
        out[3] = tensor_dim(p, t, 2);
    }
}

uint32_t tgr_band_axis(const tgr_plan *p, uint32_t t)
{
    uint32_t axis;
    for (axis = 0; axis < tensor_ndim(p, t); ++axis) {
        if (tensor_dim(p, t, axis) > 1) {
            return axis;
        }
    }
    return 0u;
}

uint32_t tgr_row_axis(const tgr_plan *p, uint32_t t)
{
    return tensor_ndim(p, t) == 4u ? 1u : tgr_band_axis(p, t);
}

int32_t tgr_row_count(const tgr_plan *p, uint32_t t, const int32_t *region)
{
    return region != NULL ? region[4u * t + 1u] - region[4u * t] : tensor_dim(p, t, tgr_row_axis(p, t));
}

void tgr_band_dims(const tgr_plan *p, uint32_t t, const int32_t *region, int32_t *dims)
{
    uint32_t axis;
    for (axis = 0; axis < tensor_ndim(p, t); ++axis) {
        dims[axis] = tensor_dim(p, t, axis);
    }
    if (region != NULL && region[4u * t + 3u] == TGR_REGION_ALONG) {
        dims[region[4u * t + 2u]] = region[4u * t + 1u] - region[4u * t];
    } else if (region != NULL) {
        dims[tgr_row_axis(p, t)] = region[4u * t + 1u] - region[4u * t];
        if (tensor_ndim(p, t) == 4u) {
            dims[2] = region[4u * t + 3u] - region[4u * t + 2u];
        }
    }
}

uint32_t tgr_axis_split(const tgr_plan *p, uint32_t t, const int32_t *region, uint32_t axis, uint32_t *outer,
                        uint32_t *inner)
{
    int32_t dims[TGR_MAX_RANK];
    uint32_t k;
    tgr_band_dims(p, t, region, dims);
    *outer = 1u;
    *inner = 1u;
    for (k = 0; k < tensor_ndim(p, t); ++k) {
        *outer *= k < axis ? (uint32_t)dims[k] : 1u;
        *inner *= k > axis ? (uint32_t)dims[k] : 1u;
    }
    return (uint32_t)dims[axis];
}

uint32_t tgr_band_bytes(const tgr_plan *p, uint32_t t, const int32_t *region)
{
    int32_t dims[TGR_MAX_RANK];
    uint32_t axis, bytes = 1u;
    tgr_band_dims(p, t, region, dims);
    for (axis = 0; axis < tensor_ndim(p, t); ++axis) {
        bytes *= (uint32_t)dims[axis];
    }
    return bytes;
}
