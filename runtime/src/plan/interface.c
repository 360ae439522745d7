/*
 * What a caller needs to know about a loaded plan before running it: the interface tensors
 * and the memory to provide.
 */
#include "plan/plan.h"

uint32_t tgr_plan_io_count(const tgr_plan *plan, int is_output)
{
    if (plan == NULL || plan->data == NULL) {
        return 0u;
    }
    return is_output ? plan->num_outputs : plan->num_inputs;
}

tgr_status tgr_plan_io_info(const tgr_plan *plan, int is_output, uint32_t index, tgr_io_info *info)
{
    uint32_t t, axis, dtype;
    if (info == NULL || index >= tgr_plan_io_count(plan, is_output)) {
        return TGR_ERR_ARGUMENT;
    }
    t = model_io_tensor(plan, (is_output ? plan->num_inputs : 0u) + index);
    dtype = tensor_iface(plan, t) != 0u ? tensor_iface(plan, t) : tensor_dtype(plan, t);
    memset(info, 0, sizeof *info);
    info->name = plan->strings + rd_u32(tensor_rec(plan, t));
    info->dtype = (uint8_t)dtype;
    info->rank = (uint8_t)tensor_ndim(plan, t);
    info->tensor = (uint16_t)t;
    /* Interface bytes: float32 per int8 code, int64 per int32 index, else the stored bytes (a
     * stored float32 tensor, DetectionPostProcess results, already counts 4 per value). */
    info->bytes = tensor_bytes(plan, t) * (tensor_iface(plan, t) == TGR_DTYPE_FLOAT32 ? 4u
                                           : tensor_iface(plan, t) == TGR_DTYPE_INT64 ? 2u
                                                                                      : 1u);
    for (axis = 0; axis < info->rank; ++axis) {
        info->dims[axis] = tensor_dim(plan, t, axis);
    }
    return TGR_OK;
}

const char *tgr_plan_model_name(const tgr_plan *plan)
{
    return plan->strings + rd_u32(plan->data + 32);
}

uint32_t tgr_fast_arena_required(const tgr_plan *plan)
{
    return plan->budget + plan->weight_reserve;
}

uint32_t tgr_workspace_required(const tgr_plan *plan)
{
    return TGR_WORKSPACE_BYTES(plan->num_tensors);
}
