/*
 * Shape family: Reshape and Flatten (Squeeze/Unsqueeze compile to Reshape). Both keep the bytes
 * in storage order: whenever a reshape would regroup channels-last data, the compiler emits
 * Transposes around it (e.g. NHWC -> model order -> Reshape), so the op itself never permutes.
 * When input and output hold the same bytes with the same quantization and compatible axis
 * orders the output simply shares the input's buffer (docs/execution.md#normal-path);
 * otherwise the bytes are copied, requantized in double when the two quantizations differ (measured on the
 * reference over all 256 codes and tie-prone scale pairs: round half away of
 * (x - zp_in) * s_in / s_out, then + zp_out; the float32 formula of Concat differs).
 */
#include "kernels/kernels_data.h"
#include "ops/ops.h"

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
    op_spatial sp;
    op_decode(p, o, &sp);
    if (tensor_bytes(p, in) != tensor_bytes(p, out)) {
        return tgr_bad_op(err, p, o, "input and output sizes differ");
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return tgr_check_rescale(p, o, in, out, err);
}

static void run_reshape(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, out);
    (void)region;
    tgr_requant_double_s8(tensor_bytes(p, in), (const int8_t *)tensor_ptr[in], &qin, &qout, (int8_t *)tensor_ptr[out]);
}

TGR_OP_IMPL(OP_RESHAPE, TILING_NONE, check_reshape, run_reshape);
TGR_OP_IMPL(OP_FLATTEN, TILING_NONE, check_reshape, run_reshape);
