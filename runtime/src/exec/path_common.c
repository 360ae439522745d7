/*
 * What every execution path does the same way: give a tensor its slow-memory home, and run an
 * op's kernel unless the session is only rehearsing its allocations.
 */
#include "exec/exec.h"
#include "memory/pools.h"
#include "ops/ops_registry.h"

tgr_status tgr_place_slow(tgr_session *s, uint32_t t, uint32_t stage, tgr_error *err)
{
    if (tgr_place(s, TGR_POOL_SLOW, t, s->slow.size, stage)) {
        return TGR_OK;
    }
    tgr_compact(s, TGR_POOL_SLOW, stage);
    if (tgr_place(s, TGR_POOL_SLOW, t, s->slow.size, stage)) {
        return TGR_OK;
    }
    return tgr_fail(err, TGR_ERR_ARENA, "slow arena too small: tensor %u needs %u more bytes, %u of %u in use",
                    t, align_up(tensor_bytes(s->plan, t), TGR_TENSOR_ALIGN), s->slow.used, s->slow.size);
}

tgr_status tgr_run_op(tgr_session *s, uint32_t o, const int32_t *region, const uint8_t *weights, tgr_error *err)
{
    uint32_t fault;
    if (s->rehearsing) {
        return TGR_OK;
    }
    fault = tgr_dispatch(s->plan, o, s->tensor_ptr, region, weights);
    if (fault != TGR_FAULT_NONE) {
        return tgr_fail(err, TGR_ERR_EXEC, "op %u (%s): %s", o, tgr_op_name(op_type(s->plan, o)),
                        tgr_fault_text(fault));
    }
    return TGR_OK;
}
