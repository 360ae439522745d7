/*
 * The normal (untiled) path (docs/execution.md#normal-path): stage inputs are loaded into the
 * fast arena, ops run on whole tensors with outputs allocated under the stage's fast ceiling, and
 * stage outputs are spilled to slow memory. Compaction is lazy (only when an allocation would
 * cross the ceiling), which is what makes the peak equal the compiler's live-set model; what
 * still does not fit overflows into slow memory.
 */
#include "exec/exec.h"
#include "memory/pools.h"
#include "ops/ops_registry.h"

/* Slow memory for tensor t while the stage's inputs are loaded into fast memory. Their slow
 * blocks (`slow_copy`, restored after the stage: later stages read them) are not in the tensor
 * slots then, so a compaction would take them for free space and overwrite them: show them to
 * it in their slots for the duration and keep where it moved them. */
static tgr_status place_slow_keeping_inputs(tgr_session *s, uint32_t t, uint32_t stage, uint8_t **slow_copy,
                                            tgr_error *err)
{
    const tgr_plan *p = s->plan;
    uint8_t *loaded[TGR_MAX_STAGE_IO];
    tgr_status st;
    uint32_t i;
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        loaded[i] = s->tensor_ptr[stage_input(p, stage, i)];
        s->tensor_ptr[stage_input(p, stage, i)] = slow_copy[i];
    }
    st = tgr_place_slow(s, t, stage, err);
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        uint32_t in = stage_input(p, stage, i);
        slow_copy[i] = s->tensor_ptr[in];
        s->tensor_ptr[in] = loaded[i] == NULL || tgr_pool_of(s, loaded[i]) == TGR_POOL_FAST ? loaded[i]
                                                                                              : slow_copy[i];
    }
    return st;
}

/* Fast under the stage ceiling, compacting once if needed; otherwise slow overflow. */
static tgr_status place_output(tgr_session *s, uint32_t t, uint32_t ceiling, uint32_t stage, uint8_t **slow_copy,
                               tgr_error *err)
{
    if (tgr_place(s, TGR_POOL_FAST, t, ceiling, stage)) {
        return TGR_OK;
    }
    tgr_compact(s, TGR_POOL_FAST, stage);
    if (tgr_place(s, TGR_POOL_FAST, t, ceiling, stage)) {
        return TGR_OK;
    }
    return place_slow_keeping_inputs(s, t, stage, slow_copy, err);
}

static tgr_status run_normal(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                             const uint8_t *const *weights, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t ceiling = s->fast.floor + limit;
    const uint32_t count = stage_ops_count(p, stage);
    uint8_t *slow_copy[TGR_MAX_STAGE_IO];
    uint32_t i, j, k;
    tgr_status st;
    (void)path;

    for (i = 0; i < stage_in_count(p, stage); ++i) {
        uint32_t t = stage_input(p, stage, i);
        uint8_t *src = s->tensor_ptr[t];
        slow_copy[i] = src;
        if (tgr_place(s, TGR_POOL_FAST, t, ceiling, stage)) {
            memcpy(s->tensor_ptr[t], src, tensor_bytes(p, t));
            s->counters.load_bytes += tensor_bytes(p, t);
            tgr_emit(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, t, NONE16, (uint32_t)(s->tensor_ptr[t] - s->fast.base),
                     (uint32_t)(src - s->slow.base), tensor_bytes(p, t));
        }
    }
    /* Last reader of each tensor within the stage; an op output nothing reads dies with its op,
     * and stage outputs never die inside the stage. */
    for (j = 0; j < count; ++j) {
        uint32_t o = stage_op(p, stage, j);
        for (k = 0; k < op_num_outputs(p, o); ++k) {
            s->last_use[op_output(p, o, k)] = (uint16_t)j;
        }
    }
    for (j = 0; j < count; ++j) {
        uint32_t o = stage_op(p, stage, j);
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            s->last_use[op_input(p, o, k)] = (uint16_t)j;
        }
    }
    for (i = 0; i < stage_out_count(p, stage); ++i) {
        s->last_use[stage_output(p, stage, i)] = NONE16;
    }
    for (j = 0; j < count; ++j) {
        uint32_t o = stage_op(p, stage, j);
        if (tgr_is_pure_reinterpretation(p, o)) {
            s->tensor_ptr[op_output(p, o, 0)] = s->tensor_ptr[op_input(p, o, 0)];
            s->tensor_alloc[op_output(p, o, 0)] = s->tensor_alloc[op_input(p, o, 0)];
            s->origin[op_output(p, o, 0)] = (uint16_t)(s->origin[op_input(p, o, 0)] < op_output(p, o, 0)
                                                            ? s->origin[op_input(p, o, 0)]
                                                            : op_output(p, o, 0));
        } else {
            for (k = 0; k < op_num_outputs(p, o); ++k) {
                uint32_t t = op_output(p, o, k);
                if (s->tensor_ptr[t] == NULL) {
                    st = place_output(s, t, ceiling, stage, slow_copy, err);
                    if (st != TGR_OK) {
                        return st;
                    }
                }
            }
            st = tgr_run_op(s, o, NULL, weights[0], err);
            if (st != TGR_OK) {
                return st;
            }
            tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t t = op_input(p, o, k);
            if (s->last_use[t] == j) {
                s->tensor_ptr[t] = NULL;
            }
        }
        for (k = 0; k < op_num_outputs(p, o); ++k) {
            uint32_t t = op_output(p, o, k);
            if (s->last_use[t] == j) {
                s->tensor_ptr[t] = NULL;
            }
        }
    }
    for (i = 0; i < stage_out_count(p, stage); ++i) {
        uint32_t t = stage_output(p, stage, i);
        uint8_t *src = s->tensor_ptr[t];
        if (tgr_pool_of(s, src) != TGR_POOL_FAST) {
            continue; /* overflowed into slow memory: already where it must be */
        }
        st = place_slow_keeping_inputs(s, t, stage, slow_copy, err);
        if (st != TGR_OK) {
            return st;
        }
        memcpy(s->tensor_ptr[t], src, tensor_bytes(p, t));
        s->counters.spill_bytes += tensor_bytes(p, t);
        tgr_emit(s, TGR_EV_SPILL, TGR_POOL_SLOW, stage, t, NONE16, (uint32_t)(s->tensor_ptr[t] - s->slow.base),
                 (uint32_t)(src - s->fast.base), tensor_bytes(p, t));
    }
    tgr_fast_reset(s, stage);
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        s->tensor_ptr[stage_input(p, stage, i)] = slow_copy[i];
    }
    return TGR_OK;
}

TGR_PATH_RUNNER(TGR_PATH_NORMAL, run_normal); /* runs anything: never asked */
