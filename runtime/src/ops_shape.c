/*
 * Shape family: Reshape and Flatten. Both keep the bytes in storage order; when input and
 * output hold the same bytes with the same quantization and compatible axis orders the output
 * simply shares the input's buffer (tgrs-executor.md §1.5).
 */
#include "ops.h"

int tgr_is_pure_reinterpretation(const tgr_plan *p, uint32_t o)
{
    uint32_t in, out;
    uint32_t type = op_type(p, o);
    if (type != OP_RESHAPE && type != OP_FLATTEN) {
        return 0;
    }
    in = op_input(p, o, 0);
    out = op_output(p, o, 0);
    if (tensor_bytes(p, in) != tensor_bytes(p, out) || !tgr_same_qparams(p, in, out)) {
        return 0;
    }
    if (tgr_model_order(p, in) && tgr_model_order(p, out)) {
        return 1;
    }
    return !tgr_model_order(p, in) && !tgr_model_order(p, out) && tensor_dim(p, in, 0) == tensor_dim(p, out, 0) &&
           tensor_dim(p, in, tensor_ndim(p, in) - 1u) == tensor_dim(p, out, tensor_ndim(p, out) - 1u);
}

static tgr_status check_reshape(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    if (tensor_bytes(p, in) != tensor_bytes(p, out)) {
        return tgr_bad_op(err, p, o, "input and output sizes differ");
    }
    if (!tgr_same_qparams(p, in, out)) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): reshape with requantization is not supported by this runtime",
                        o, tgr_op_name(op_type(p, o)));
    }
    if (!tgr_model_order(p, out) && (tgr_model_order(p, in) || !tgr_is_pure_reinterpretation(p, o))) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                        "op %u (%s): reshape into a channels-last layout is not supported by this runtime", o,
                        tgr_op_name(op_type(p, o)));
    }
    return TGR_OK;
}

static void run_reshape(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint8_t *y = tensor_ptr[op_output(p, o, 0)];
    (void)region;
    if (y != tensor_ptr[in]) {
        memmove(y, tensor_ptr[in], tensor_bytes(p, in));
    }
}

static const tgr_op_impl shape_family[] = {
    {OP_RESHAPE, TILING_NONE, check_reshape, run_reshape},
    {OP_FLATTEN, TILING_NONE, check_reshape, run_reshape},
};

const tgr_op_impl *tgr_ops_shape(uint32_t opcode)
{
    return tgr_ops_find(shape_family, sizeof shape_family / sizeof shape_family[0], opcode);
}
