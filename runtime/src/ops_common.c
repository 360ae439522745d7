/*
 * The op registry and what every family shares: the loader-time kernel check, the run-time
 * dispatch, and small tensor helpers.
 */
#include "dispatch.h"
#include "loader.h"
#include "ops.h"

const tgr_op_impl *tgr_ops_find(const tgr_op_impl *table, uint32_t count, uint32_t opcode)
{
    uint32_t i;
    for (i = 0; i < count; ++i) {
        if (table[i].opcode == opcode) {
            return &table[i];
        }
    }
    return NULL;
}

const tgr_op_impl *tgr_op_impl_of(uint32_t opcode)
{
    const tgr_op_impl *impl = tgr_ops_conv(opcode);
    if (impl == NULL) impl = tgr_ops_pool(opcode);
    if (impl == NULL) impl = tgr_ops_elementwise(opcode);
    if (impl == NULL) impl = tgr_ops_activation(opcode);
    if (impl == NULL) impl = tgr_ops_shape(opcode);
    if (impl == NULL) impl = tgr_ops_movement(opcode);
    if (impl == NULL) impl = tgr_ops_index(opcode);
    if (impl == NULL) impl = tgr_ops_logic(opcode);
    if (impl == NULL) impl = tgr_ops_reduce(opcode);
    if (impl == NULL) impl = tgr_ops_matmul(opcode);
    return impl;
}

/* The dtypes each op reads and writes. Everything is int8 but: ArgMax/ArgMin write int32 (the
 * loader lets int32 through only as model outputs, so nothing reads one), the comparisons write
 * bool, And/Or/Not/ReduceAll read and write bool, Cast reads bool, Where reads a bool condition,
 * and Reshape/Flatten/Transpose move bool bytes like int8. */
static int dtypes_as_expected(const tgr_plan *p, uint32_t o)
{
    uint32_t type = op_type(p, o);
    uint32_t in_type = DT_INT8, out_type = DT_INT8, k;
    if (type == OP_ARG_MAX || type == OP_ARG_MIN) {
        out_type = DT_INT32;
    } else if (type >= OP_EQUAL && type <= OP_GREATER_EQUAL) {
        out_type = DT_BOOL;
    } else if ((type >= OP_AND && type <= OP_NOT) || type == OP_REDUCE_ALL) {
        in_type = out_type = DT_BOOL;
    } else if (type == OP_CAST) {
        in_type = DT_BOOL;
    } else if (type == OP_WHERE) {
        return op_num_inputs(p, o) == 3u && tensor_dtype(p, op_input(p, o, 0)) == DT_BOOL &&
               tensor_dtype(p, op_input(p, o, 1)) == DT_INT8 && tensor_dtype(p, op_input(p, o, 2)) == DT_INT8 &&
               op_num_outputs(p, o) == 1u && tensor_dtype(p, op_output(p, o, 0)) == DT_INT8;
    } else if ((type == OP_RESHAPE || type == OP_FLATTEN || type == OP_TRANSPOSE) && op_num_inputs(p, o) > 0u &&
               tensor_dtype(p, op_input(p, o, 0)) == DT_BOOL) {
        in_type = out_type = DT_BOOL;
    }
    for (k = 0; k < op_num_inputs(p, o); ++k) {
        if (tensor_dtype(p, op_input(p, o, k)) != in_type) {
            return 0;
        }
    }
    for (k = 0; k < op_num_outputs(p, o); ++k) {
        if (tensor_dtype(p, op_output(p, o, k)) != out_type) {
            return 0;
        }
    }
    return 1;
}

tgr_status tgr_check_kernels(const tgr_plan *p, tgr_error *err)
{
    uint32_t o;
    for (o = 0; o < p->num_ops; ++o) {
        const tgr_op_impl *impl = tgr_op_impl_of(op_type(p, o));
        tgr_status st;
        if (impl == NULL) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s) is not supported by this runtime", o,
                            tgr_op_name(op_type(p, o)));
        }
        if (!dtypes_as_expected(p, o)) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                            "op %u (%s): operand dtypes this runtime does not execute (int32 only as ArgMax/ArgMin "
                            "outputs, bool only around comparisons and logic)", o, tgr_op_name(op_type(p, o)));
        }
        st = impl->check(p, o, err);
        if (st != TGR_OK) {
            return st;
        }
    }
    return TGR_OK;
}

void tgr_dispatch(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                  const uint8_t *weights)
{
    /* The loader refused every op without an implementation. */
    const tgr_op_impl *impl = tgr_op_impl_of(op_type(p, o));
    if (weights != p->weight_blob) {
        /* Decompressed weights: the op sees a view of the plan whose blob is its stage's block,
         * which is exactly what the block-relative weight offsets address. */
        tgr_plan view = *p;
        view.weight_blob = weights;
        impl->run(&view, o, tensor_ptr, region);
        return;
    }
    impl->run(p, o, tensor_ptr, region);
}

uint32_t tgr_op_tiling(uint32_t opcode)
{
    const tgr_op_impl *impl = tgr_op_impl_of(opcode);
    return impl != NULL ? impl->tiling & TILING_SPATIAL : TILING_NONE;
}

int tgr_op_rows(uint32_t opcode)
{
    const tgr_op_impl *impl = tgr_op_impl_of(opcode);
    return impl != NULL && (impl->tiling & TILING_ROWS) != 0u;
}

int tgr_op_alone(uint32_t opcode)
{
    const tgr_op_impl *impl = tgr_op_impl_of(opcode);
    return impl != NULL && (impl->tiling & TILING_ALONE) != 0u;
}

int tgr_op_two_d_only(uint32_t opcode)
{
    const tgr_op_impl *impl = tgr_op_impl_of(opcode);
    return impl != NULL && (impl->tiling & TILING_2D_ONLY) != 0u;
}

/* ---- helpers ------------------------------------------------------------------------------- */

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
    if (tensor_dtype(p, t) != DT_INT8) {
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

int tgr_valid_pair(int32_t multiplier, int32_t shift)
{
    return (multiplier == 0 || multiplier >= 0x40000000) && shift >= -31 && shift <= 31;
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

tgr_status tgr_check_rescale(const tgr_plan *p, uint32_t o, uint32_t in, uint32_t out, tgr_error *err)
{
    double ratio = (double)tgr_qparams_of(p, in).scale / (double)tgr_qparams_of(p, out).scale;
    if (!(ratio < TGR_MAX_RESCALE)) {
        return tgr_fail(err, TGR_ERR_QUANT, "op %u (%s): scale ratio of tensor %u to tensor %u is 2^23 or more", o,
                        tgr_op_name(op_type(p, o)), in, out);
    }
    return TGR_OK;
}

tgr_status tgr_bad_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what)
{
    return tgr_fail(err, TGR_ERR_OP, "op %u (%s): %s", o, tgr_op_name(op_type(p, o)), what);
}

tgr_status tgr_unsupported_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what)
{
    return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): %s is not supported by this runtime", o,
                    tgr_op_name(op_type(p, o)), what);
}

int tgr_neutral_activation(const op_spatial *sp)
{
    return sp->fused_act == ACT_NONE && sp->act_min == -128 && sp->act_max == 127;
}
