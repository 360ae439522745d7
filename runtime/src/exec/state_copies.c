/*
 * State variables around one run (exec.h, docs/execution.md#state-variables): each
 * variable's previous value is placed in slow memory and copied from the session's state buffer
 * after the inputs (a `copy` event, stage none, its offset in the state buffer as the source);
 * after a successful run each next value is copied back (a `copy` event, no pool, to its offset in
 * the state buffer from its slow offset). A session init rehearsal places
 * them without copying.
 */
#include "exec/exec.h"
#include "memory/pools.h"

tgr_status tgr_full_state_in(tgr_session *s, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    uint32_t i;
    for (i = 0; i < p->num_state; ++i) {
        const uint32_t t = state_input(p, i);
        tgr_status st = tgr_place_slow(s, t, NONE16, err);
        if (st != TGR_OK) {
            return st;
        }
        if (!s->rehearsing) {
            memcpy(s->tensor_ptr[t], s->state + state_offset(p, i), state_size(p, i));
            s->counters.copy_bytes += state_size(p, i);
        }
        tgr_emit(s, TGR_EV_COPY, TGR_POOL_SLOW, NONE16, t, NONE16, (uint32_t)(s->tensor_ptr[t] - s->slow.base),
                 state_offset(p, i), state_size(p, i));
    }
    return TGR_OK;
}

void tgr_full_state_out(tgr_session *s)
{
    const tgr_plan *p = s->plan;
    uint32_t i;
    for (i = 0; i < p->num_state; ++i) {
        const uint32_t t = state_output(p, i);
        if (t == NONE16) {
            continue;
        }
        if (!s->rehearsing) {
            memcpy(s->state + state_offset(p, i), s->tensor_ptr[t], state_size(p, i));
            s->counters.copy_bytes += state_size(p, i);
        }
        tgr_emit(s, TGR_EV_COPY, TGR_POOL_NONE, NONE16, t, NONE16, state_offset(p, i),
                 (uint32_t)(s->tensor_ptr[t] - s->slow.base), state_size(p, i));
    }
}
