/*
 * Logic family, the bool consumers besides And/Or/Not (ops_elementwise.c) and Cast
 * (ops_activation.c): Where (81) picks int8 codes by a bool condition, also alone in 1-D
 * stripes and in row bands along the axis of least step cost like a broadcasting binary op;
 * ReduceAll (84) reduces bool along one axis, also in row bands.
 *
 * Measured against the reference on the compiler's fixtures: Where copies codes (its operands
 * and output share one quantization; other plans are refused here), ReduceAll is true when every
 * element is.
 */
#include "kernels/kernels_data.h"
#include "ops/ops.h"

/* ---- Where ----------------------------------------------------------------------------------- */

/* Every operand has the output's rank and each extent equals the output's or is 1. */
static int broadcasts_to(const tgr_plan *p, uint32_t t, uint32_t out)
{
    uint32_t k;
    if (tensor_ndim(p, t) != tensor_ndim(p, out)) {
        return 0;
    }
    for (k = 0; k < tensor_ndim(p, out); ++k) {
        if (tensor_dim(p, t, k) != tensor_dim(p, out, k) && tensor_dim(p, t, k) != 1) {
            return 0;
        }
    }
    return 1;
}

static tgr_status check_where(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t out = op_output(p, o, 0);
    uint32_t k;
    op_spatial sp;
    op_decode(p, o, &sp);
    if (op_num_inputs(p, o) != 3u || sp.weight_idx != NONE16) {
        return tgr_unsupported_op(err, p, o, "a constant operand");
    }
    for (k = 0; k < 3u; ++k) {
        if (!broadcasts_to(p, op_input(p, o, k), out) || tgr_model_order(p, op_input(p, o, k)) != tgr_model_order(p, out)) {
            return tgr_bad_op(err, p, o, "an operand does not broadcast to the output");
        }
    }
    if (!tgr_same_qparams(p, op_input(p, o, 1), out) || !tgr_same_qparams(p, op_input(p, o, 2), out)) {
        return tgr_unsupported_op(err, p, o, "requantizing");
    }
    return tgr_neutral_activation(&sp) ? TGR_OK : tgr_unsupported_op(err, p, o, "a fused activation");
}

static void run_where(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    tgr_where_shape w;
    uint32_t out = op_output(p, o, 0);
    uint32_t k;
    /* In a band every buffer holds the output's band, or the whole of an axis it broadcasts. */
    w.rank = tensor_ndim(p, out);
    tgr_band_dims(p, out, region, w.dims);
    for (k = 0; k < 3u; ++k) {
        tgr_band_dims(p, op_input(p, o, k), region, w.extent[k]);
    }
    tgr_where_s8(&w, tensor_ptr[op_input(p, o, 0)], (const int8_t *)tensor_ptr[op_input(p, o, 1)],
                 (const int8_t *)tensor_ptr[op_input(p, o, 2)], (int8_t *)tensor_ptr[out]);
}

/* ---- ReduceAll ------------------------------------------------------------------------------- */

static tgr_status check_reduce_all(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t len = 0, k;
    const uint8_t *axes = tgr_attr_find(p, o, ATTR_AXES, &len);
    if (axes == NULL || len != 1u || axes[0] >= tensor_ndim(p, in) || tensor_ndim(p, out) != tensor_ndim(p, in)) {
        return tgr_unsupported_op(err, p, o, "a reduction other than one axis kept as extent 1");
    }
    for (k = 0; k < tensor_ndim(p, in); ++k) {
        if (tensor_dim(p, out, k) != (k == axes[0] ? 1 : tensor_dim(p, in, k))) {
            return tgr_bad_op(err, p, o, "output extents are not the input's with the axis as 1");
        }
    }
    return TGR_OK;
}

static void run_reduce_all(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t outer, inner;
    uint32_t length = tgr_axis_split(p, in, region, tgr_attr_find(p, o, ATTR_AXES, NULL)[0], &outer, &inner);
    tgr_reduce_all_bool(outer, length, inner, tensor_ptr[in], tensor_ptr[op_output(p, o, 0)]);
}

TGR_OP_IMPL(OP_WHERE, TILING_POINTWISE | TILING_ROWS | TILING_ALONE, check_where, run_where);
TGR_OP_BANDS(OP_WHERE, tgr_band_any_axis); /* an operand of extent 1 along the band is read whole */
TGR_OP_IMPL(OP_REDUCE_ALL, TILING_ROWS, check_reduce_all, run_reduce_all);
TGR_OP_BANDS(OP_REDUCE_ALL, tgr_reduction_band_problem);
