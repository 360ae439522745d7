/*
 * Activation family: Softmax over the last stored axis (integer or float method, chosen by the
 * output quantization inside the kernel).
 */
#include "ops.h"

static tgr_status check_softmax(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, out);
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "a fused activation on Softmax is invalid");
    }
    if (tensor_ndim(p, in) == 0u || !tgr_same_shape(p, in, out)) {
        return tgr_bad_op(err, p, o, "input and output shapes differ");
    }
    if (qout.scale == 1.0f / 256.0f && qout.zero_point == -128 && (double)qin.scale * (double)(1 << 26) < 1.0) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (Softmax): input scale below 2^-26 is not supported", o);
    }
    return TGR_OK;
}

static void run_softmax(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t depth = (uint32_t)tensor_dim(p, in, tensor_ndim(p, in) - 1u);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, op_output(p, o, 0));
    (void)region;
    tgr_softmax_s8((int32_t)(tensor_bytes(p, in) / depth), (int32_t)depth, (const int8_t *)tensor_ptr[in], &qin, &qout,
                   (int8_t *)tensor_ptr[op_output(p, o, 0)]);
}

static const tgr_op_impl activation_family[] = {
    {OP_SOFTMAX, TILING_NONE, check_softmax, run_softmax},
};

const tgr_op_impl *tgr_ops_activation(uint32_t opcode)
{
    return tgr_ops_find(activation_family, sizeof activation_family / sizeof activation_family[0], opcode);
}
