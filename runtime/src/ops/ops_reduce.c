/*
 * Reduce family: ReduceMean (26), ReduceMax (60), ReduceMin (61), ReduceSum (62) over the
 * stored axes listed in OP_ATTR_AXES, GlobalMaxPool (31), CumSum (63), the running sum along
 * one axis, and ArgMax/ArgMin (64/65), int32 indices. Arithmetic in kernels_reduce.c.
 *
 * The output keeps the non-reduced axes in their stored order (with or without the reduced axes
 * kept as extent 1); the check below insists on exactly that, so the kernel can write the
 * output in order. ReduceMax/Min with different in/out quantization never reach a plan (the
 * compiler refuses them) and are refused here too rather than guessed.
 */
#include "kernels/fixedpoint.h"
#include "kernels/kernels_data.h"
#include "ops/ops.h"

/* Bit mask of the reduced stored axes. */
static uint32_t axes_mask(const tgr_plan *p, uint32_t o)
{
    uint32_t len = 0, k, mask = 0;
    const uint8_t *axes = tgr_attr_find(p, o, ATTR_AXES, &len);
    for (k = 0; k < len; ++k) {
        mask |= 1u << axes[k];
    }
    return mask;
}

static tgr_status check_reduce(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t len = 0, k, j = 0, type = op_type(p, o);
    uint64_t count = 1u;
    const uint8_t *axes = tgr_attr_find(p, o, ATTR_AXES, &len);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (axes == NULL || len == 0u) {
        return tgr_bad_op(err, p, o, "no reduction axes");
    }
    for (k = 0; k < len; ++k) {
        if (axes[k] >= rank || (k > 0u && axes[k] <= axes[k - 1u])) {
            return tgr_bad_op(err, p, o, "reduction axes are not ascending stored axes of the input");
        }
    }
    /* Kept input axes, in order, must be the output's axes once extents of 1 are ignored. */
    for (k = 0; k < rank; ++k) {
        if (axes_mask(p, o) & (1u << k)) {
            count *= (uint64_t)tensor_dim(p, in, k);
            continue;
        }
        if (tensor_dim(p, in, k) == 1) {
            continue;
        }
        while (j < tensor_ndim(p, out) && tensor_dim(p, out, j) == 1) {
            ++j;
        }
        if (j >= tensor_ndim(p, out) || tensor_dim(p, out, j) != tensor_dim(p, in, k)) {
            return tgr_bad_op(err, p, o, "output extents are not the kept input extents");
        }
        ++j;
    }
    while (j < tensor_ndim(p, out) && tensor_dim(p, out, j) == 1) {
        ++j;
    }
    if (j != tensor_ndim(p, out) || (uint64_t)tensor_bytes(p, in) != count * tensor_bytes(p, out)) {
        return tgr_bad_op(err, p, o, "output extents are not the kept input extents");
    }
    if (count > 0x7FFFFFu) {
        return tgr_unsupported_op(err, p, o, "a reduction over more than 2^23 elements");
    }
    if ((type == 60u || type == 61u) && !tgr_same_qparams(p, in, out)) {
        return tgr_unsupported_op(err, p, o, "a maximum/minimum with requantization");
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return tgr_check_rescale(p, o, in, out, err);
}

static void run_reduce(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    int32_t dims[TGR_MAX_RANK];
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t mask = axes_mask(p, o);
    uint32_t k, count = 1u;
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, out);
    tgr_reduce_params rp;
    memset(&rp, 0, sizeof rp);
    tgr_band_dims(p, in, region, dims);
    for (k = 0; k < tensor_ndim(p, in); ++k) {
        count *= (mask & (1u << k)) ? (uint32_t)dims[k] : 1u;
    }
    rp.act_min = -128;
    rp.act_max = 127;
    switch (op_type(p, o)) {
    case 26u:
        rp.kind = TGR_REDUCE_MEAN;
        tgr_mean_prepare((int32_t)count, &qin, &qout, -128, 127, 0, &rp.mean);
        break;
    case 62u:
        rp.kind = TGR_REDUCE_SUM;
        rp.in_zp = qin.zero_point;
        rp.out_zp = qout.zero_point;
        fp_quantize_multiplier((double)qin.scale / (double)qout.scale, &rp.multiplier, &rp.shift);
        break;
    case 60u:
        rp.kind = TGR_REDUCE_MAX;
        break;
    default:
        rp.kind = TGR_REDUCE_MIN;
        break;
    }
    tgr_reduce_s8(tensor_ndim(p, in), dims, mask, &rp, (const int8_t *)tensor_ptr[in], (int8_t *)tensor_ptr[out]);
}

static tgr_status check_global_max(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (!tgr_is_nhwc(p, in) || tensor_ndim(p, out) != 4u || tensor_dim(p, out, 1) != 1 || tensor_dim(p, out, 2) != 1 ||
        tensor_dim(p, in, 0) != tensor_dim(p, out, 0) || tensor_dim(p, in, 3) != tensor_dim(p, out, 3)) {
        return tgr_bad_op(err, p, o, "expects [N, H, W, C] -> [N, 1, 1, C]");
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return tgr_check_rescale(p, o, in, out, err);
}

static void run_global_max(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, out);
    (void)region;
    tgr_global_max_pool_s8(tensor_dim(p, in, 0), tensor_dim(p, in, 1) * tensor_dim(p, in, 2), tensor_dim(p, in, 3),
                           (const int8_t *)tensor_ptr[in], &qin, &qout, -128, 127, (int8_t *)tensor_ptr[out]);
}

/* ---- CumSum ---------------------------------------------------------------------------------
 * Measured against the reference on the compiler's four fixtures and on 40 random and tie-prone
 * quantizations: the running sum is taken in Add's 2^20-lifted domain halved (2^19 per code),
 * starts from -zp_in (an extra zero-point term the reference adds; the compiler lets only input
 * zero point 0 through from ONNX, where it vanishes), and is requantized with QM(2 s_in /
 * (2^20 s_out)). The reference fails a run whose lifted sum leaves int32; a run here cannot
 * fail, so plans whose sum could get there are refused. */

#define CUMSUM_LIFT 19

static void cumsum_of(const tgr_plan *p, uint32_t o, uint32_t *axis, int *exclusive, int *reverse)
{
    *axis = tgr_attr_find(p, o, ATTR_AXES, NULL)[0];
    *exclusive = tgr_attr_find(p, o, ATTR_CUMSUM_OPTIONS, NULL)[0] != 0u;
    *reverse = tgr_attr_find(p, o, ATTR_CUMSUM_OPTIONS, NULL)[1] != 0u;
}

static tgr_status check_cumsum(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t len = 0, options_len = 0;
    const uint8_t *axes = tgr_attr_find(p, o, ATTR_AXES, &len);
    const uint8_t *options = tgr_attr_find(p, o, ATTR_CUMSUM_OPTIONS, &options_len);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, out);
    int64_t steps, high, low;
    int32_t m, s;
    op_spatial sp;
    op_decode(p, o, &sp);
    if (axes == NULL || len != 1u || axes[0] >= tensor_ndim(p, in) || options == NULL || options_len != 2u ||
        options[0] > 1u || options[1] > 1u) {
        return tgr_bad_op(err, p, o, "needs one stored axis and exclusive/reverse flags of 0 or 1");
    }
    if (!tgr_same_shape(p, in, out)) {
        return tgr_bad_op(err, p, o, "input and output shapes differ");
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    /* Extremes of (sum of x - zp) - zp over the axis, in the lifted domain. */
    steps = tensor_dim(p, in, axes[0]);
    high = steps * (127 - qin.zero_point) - qin.zero_point;
    low = steps * (-128 - qin.zero_point) - qin.zero_point;
    if (high > (INT32_MAX >> CUMSUM_LIFT) || low < -((int64_t)1 << (31 - CUMSUM_LIFT))) {
        return tgr_unsupported_op(err, p, o, "a sum that can overflow the reference's accumulator");
    }
    fp_quantize_multiplier(2.0 * (double)qin.scale / (1048576.0 * (double)qout.scale), &m, &s);
    if (!tgr_valid_pair(m, s)) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (CumSum): input/output scale ratio out of range", o);
    }
    return TGR_OK;
}

static void run_cumsum(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t axis, outer, inner, length;
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, op_output(p, o, 0));
    tgr_cumsum_params c;
    cumsum_of(p, o, &axis, &c.exclusive, &c.reverse);
    length = tgr_axis_split(p, in, region, axis, &outer, &inner);
    c.in_zp = qin.zero_point;
    c.out_zp = qout.zero_point;
    c.lift = CUMSUM_LIFT;
    fp_quantize_multiplier(2.0 * (double)qin.scale / (1048576.0 * (double)qout.scale), &c.multiplier, &c.shift);
    tgr_cumsum_s8(&c, outer, length, inner, (const int8_t *)tensor_ptr[in],
                  (int8_t *)tensor_ptr[op_output(p, o, 0)]);
}

/* ---- ArgMax / ArgMin -------------------------------------------------------------------------
 * The index (int32, a model output) of the first largest / smallest code along one stored axis;
 * the input's quantization is monotonic, so codes order like the values. The output drops the
 * axis or keeps it as extent 1. */

static tgr_status check_arg(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t len = 0, k, j = 0;
    const uint8_t *axes = tgr_attr_find(p, o, ATTR_AXES, &len);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (axes == NULL || len != 1u || axes[0] >= rank) {
        return tgr_bad_op(err, p, o, "needs one stored axis of the input");
    }
    if (!tgr_neutral_activation(&sp) || quant_scale(p, tensor_quant(p, in)) <= 0.0f) {
        return tgr_bad_op(err, p, o, "a fused activation or a non-positive input scale");
    }
    /* Output: the input's extents without the axis (or with it as 1). */
    for (k = 0; k < rank; ++k) {
        if (k == axes[0]) {
            j += tensor_ndim(p, out) == rank ? 1u : 0u;
            continue;
        }
        if (j >= tensor_ndim(p, out) || tensor_dim(p, out, j) != tensor_dim(p, in, k)) {
            return tgr_bad_op(err, p, o, "output extents are not the input's without the axis");
        }
        ++j;
    }
    if (j != tensor_ndim(p, out) || (tensor_ndim(p, out) == rank && tensor_dim(p, out, axes[0]) != 1)) {
        return tgr_bad_op(err, p, o, "output extents are not the input's without the axis");
    }
    return TGR_OK;
}

static void run_arg(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t outer, inner;
    uint32_t length = tgr_axis_split(p, in, region, tgr_attr_find(p, o, ATTR_AXES, NULL)[0], &outer, &inner);
    tgr_arg_extreme_s8(op_type(p, o) == OP_ARG_MIN, outer, length, inner,
                       (const int8_t *)tensor_ptr[in], tensor_ptr[op_output(p, o, 0)]);
}

/* ---- row bands ------------------------------------------------------------------------------ */

int tgr_drops_reduced_axis(const tgr_plan *p, uint32_t o)
{
    return (op_type(p, o) == OP_ARG_MAX || op_type(p, o) == OP_ARG_MIN) &&
           tensor_ndim(p, op_output(p, o, 0)) + 1u == tensor_ndim(p, op_input(p, o, 0));
}

const char *tgr_reduction_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    uint32_t len = 0, k;
    const uint8_t *axes = tgr_attr_find(p, o, ATTR_AXES, &len);
    for (k = 0; k < len; ++k) {
        if (axes[k] == axis) {
            return TGR_TEXT("a reduction cannot be banded along an axis it reduces");
        }
    }
    /* A band of the other axes is a band of the output only where the output keeps them all in
     * place, or drops exactly the reduced axis (path_rows.c moves the band past it). */
    if (tgr_drops_reduced_axis(p, o)) {
        return NULL;
    }
    return tensor_ndim(p, op_input(p, o, 0)) == tensor_ndim(p, op_output(p, o, 0))
               ? NULL
               : TGR_TEXT("a reduction that drops axes cannot run in row bands");
}

TGR_OP_IMPL(OP_REDUCE_MEAN, TILING_ROWS, check_reduce, run_reduce);
TGR_OP_BANDS(OP_REDUCE_MEAN, tgr_reduction_band_problem);
TGR_OP_IMPL(OP_GLOBAL_MAX, TILING_NONE, check_global_max, run_global_max);
TGR_OP_IMPL(OP_REDUCE_MAX, TILING_ROWS, check_reduce, run_reduce);
TGR_OP_BANDS(OP_REDUCE_MAX, tgr_reduction_band_problem);
TGR_OP_IMPL(OP_REDUCE_MIN, TILING_ROWS, check_reduce, run_reduce);
TGR_OP_BANDS(OP_REDUCE_MIN, tgr_reduction_band_problem);
TGR_OP_IMPL(OP_REDUCE_SUM, TILING_ROWS, check_reduce, run_reduce);
TGR_OP_BANDS(OP_REDUCE_SUM, tgr_reduction_band_problem);
TGR_OP_IMPL(OP_CUMSUM, TILING_ROWS, check_cumsum, run_cumsum);
TGR_OP_BANDS(OP_CUMSUM, tgr_reduction_band_problem);
TGR_OP_IMPL(OP_ARG_MAX, TILING_ROWS, check_arg, run_arg);
TGR_OP_BANDS(OP_ARG_MAX, tgr_reduction_band_problem);
TGR_OP_IMPL(OP_ARG_MIN, TILING_ROWS, check_arg, run_arg);
TGR_OP_BANDS(OP_ARG_MIN, tgr_reduction_band_problem);
