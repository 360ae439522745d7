/*
 * Elementwise binary family: Add and Sub as TFLite's quantized add, on two runtime tensors of
 * the output's shape.
 */
#include "fixedpoint.h"
#include "ops.h"

/* Pairs from OP_ATTR_BINARY_REQUANT when present, else derived from the three scales in double
 * exactly as the compiler derives them (the reference does the same when the attribute is gone). */
static void add_params_of(const tgr_plan *p, uint32_t o, tgr_add_params *q)
{
    op_spatial sp;
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_BINARY_REQUANT, NULL);
    tgr_qparams qa = tgr_qparams_of(p, op_input(p, o, 0));
    tgr_qparams qb = tgr_qparams_of(p, op_input(p, o, 1));
    tgr_qparams qo = tgr_qparams_of(p, op_output(p, o, 0));
    op_decode(p, o, &sp);
    q->a_zp = qa.zero_point;
    q->b_zp = qb.zero_point;
    q->out_zp = qo.zero_point;
    q->act_min = sp.act_min;
    q->act_max = sp.act_max;
    if (attr != NULL) {
        q->a_multiplier = rd_i32(attr);
        q->a_shift = rd_i32(attr + 4);
        q->b_multiplier = rd_i32(attr + 8);
        q->b_shift = rd_i32(attr + 12);
        q->out_multiplier = rd_i32(attr + 16);
        q->out_shift = rd_i32(attr + 20);
    } else {
        double twice_max = 2.0 * ((double)qa.scale > (double)qb.scale ? (double)qa.scale : (double)qb.scale);
        fp_quantize_multiplier((double)qa.scale / twice_max, &q->a_multiplier, &q->a_shift);
        fp_quantize_multiplier((double)qb.scale / twice_max, &q->b_multiplier, &q->b_shift);
        fp_quantize_multiplier(twice_max / ((double)(1 << 20) * (double)qo.scale), &q->out_multiplier,
                               &q->out_shift);
    }
}

static tgr_status check_add(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    tgr_add_params q;
    uint32_t out = op_output(p, o, 0);
    op_decode(p, o, &sp);
    if (op_num_inputs(p, o) != 2u || sp.weight_idx != NONE16) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): a constant operand is not supported by this runtime",
                        o, tgr_op_name(op_type(p, o)));
    }
    if (!tgr_same_shape(p, op_input(p, o, 0), out) || !tgr_same_shape(p, op_input(p, o, 1), out)) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): broadcasting operands are not supported by this runtime",
                        o, tgr_op_name(op_type(p, o)));
    }
    add_params_of(p, o, &q);
    if (!tgr_valid_pair(q.a_multiplier, q.a_shift) || !tgr_valid_pair(q.b_multiplier, q.b_shift) ||
        !tgr_valid_pair(q.out_multiplier, q.out_shift)) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s): binary requantization pairs out of range", o,
                        tgr_op_name(op_type(p, o)));
    }
    return TGR_OK;
}

/* Over the output's extent; in tiles the inputs may hold larger extents. */
static void run_add(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t a = op_input(p, o, 0);
    uint32_t b = op_input(p, o, 1);
    uint32_t out = op_output(p, o, 0);
    const int subtract = op_type(p, o) == OP_SUB;
    int32_t ea[4], eb[4], ey[4];
    int32_t channels, r;
    tgr_add_params q;
    add_params_of(p, o, &q);
    if (region == NULL) {
        tgr_add_s8((int32_t)tensor_bytes(p, out), (const int8_t *)tensor_ptr[a], (const int8_t *)tensor_ptr[b], &q,
                   subtract, (int8_t *)tensor_ptr[out]);
        return;
    }
    tgr_extent_of(p, a, region, ea);
    tgr_extent_of(p, b, region, eb);
    tgr_extent_of(p, out, region, ey);
    channels = tensor_dim(p, out, 3);
    for (r = ey[0]; r < ey[1]; ++r) {
        const int8_t *pa = (const int8_t *)tensor_ptr[a] +
                           ((int64_t)(r - ea[0]) * (ea[3] - ea[2]) + (ey[2] - ea[2])) * channels;
        const int8_t *pb = (const int8_t *)tensor_ptr[b] +
                           ((int64_t)(r - eb[0]) * (eb[3] - eb[2]) + (ey[2] - eb[2])) * channels;
        int8_t *py = (int8_t *)tensor_ptr[out] + (int64_t)(r - ey[0]) * (ey[3] - ey[2]) * channels;
        tgr_add_s8((ey[3] - ey[2]) * channels, pa, pb, &q, subtract, py);
    }
}

static const tgr_op_impl elementwise_family[] = {
    {OP_ADD, TILING_POINTWISE, check_add, run_add},
    {OP_SUB, TILING_POINTWISE, check_add, run_add},
};

const tgr_op_impl *tgr_ops_elementwise(uint32_t opcode)
{
    return tgr_ops_find(elementwise_family, sizeof elementwise_family / sizeof elementwise_family[0], opcode);
}
