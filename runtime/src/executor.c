/*
 * The executor: one inference over the stage table (tgrs-executor.md §1.3). Model inputs are
 * converted into the slow arena, each stage runs with its inputs loaded into the fast arena
 * and its outputs spilled back to slow memory, and model outputs are converted out.
 *
 * Only the untiled ("normal") path exists; the loader refuses plans that need any other, and
 * a run-time re-check turns an unexpected path into an error instead of a different result.
 */
#include <math.h>

#include "dispatch.h"
#include "pools.h"

/* ---- sessions ------------------------------------------------------------------------------ */

tgr_status tgr_session_init(tgr_session *session, const tgr_plan *plan, void *fast, uint32_t fast_bytes,
                            void *slow, uint32_t slow_bytes, void *workspace, uint32_t workspace_bytes,
                            tgr_error *err)
{
    uintptr_t ws = (uintptr_t)workspace;
    uint32_t skip;
    uint32_t need;
    if (session == NULL || plan == NULL || plan->data == NULL || fast == NULL || slow == NULL ||
        workspace == NULL) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "session, loaded plan, arenas and workspace are required");
    }
    memset(session, 0, sizeof *session);
    session->plan = plan;
    tgr_pool_bind(&session->fast, fast, fast_bytes);
    tgr_pool_bind(&session->slow, slow, slow_bytes);
    if ((uint8_t *)fast < (uint8_t *)slow + slow_bytes && (uint8_t *)slow < (uint8_t *)fast + fast_bytes) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "fast and slow arenas overlap");
    }
    need = tgr_fast_arena_required(plan);
    if (session->fast.size < need) {
        return tgr_fail(err, TGR_ERR_ARENA, "fast arena too small: plan needs %u bytes, %u usable of %u given",
                        need, session->fast.size, fast_bytes);
    }
    skip = (uint32_t)((sizeof(uint8_t *) - ws % sizeof(uint8_t *)) % sizeof(uint8_t *));
    need = (uint32_t)(plan->num_tensors * (sizeof(uint8_t *) + sizeof(uint32_t) + sizeof(uint16_t)));
    if (workspace_bytes < skip || workspace_bytes - skip < need) {
        return tgr_fail(err, TGR_ERR_ARENA, "workspace too small: plan needs %u bytes, %u given",
                        tgr_workspace_required(plan), workspace_bytes);
    }
    session->tensor_ptr = (uint8_t **)(ws + skip);
    session->tensor_alloc = (uint32_t *)(session->tensor_ptr + plan->num_tensors);
    session->last_use = (uint16_t *)(session->tensor_alloc + plan->num_tensors);
    session->workspace_bytes = tgr_workspace_required(plan);
    return TGR_OK;
}

void tgr_session_set_trace(tgr_session *session, tgr_trace_fn fn, void *user)
{
    session->trace = fn;
    session->trace_user = user;
}

/* ---- model boundary ------------------------------------------------------------------------- */

static int8_t quantize_boundary(float x, float scale, int32_t zero_point)
{
    float q = roundf(x / scale);
    if (q != q) {
        return (int8_t)zero_point;
    }
    q += (float)zero_point;
    if (q < -128.0f) {
        return -128;
    }
    if (q > 127.0f) {
        return 127;
    }
    return (int8_t)q;
}

static void convert_in(const tgr_plan *p, uint32_t t, const uint8_t *src, int8_t *dst)
{
    uint32_t n = tensor_bytes(p, t);
    uint32_t i;
    switch (tensor_iface(p, t)) {
    case DT_FLOAT: {
        float scale = quant_scale(p, tensor_quant(p, t));
        int32_t zp = quant_zero_point(p, tensor_quant(p, t));
        for (i = 0; i < n; ++i) {
            float x;
            memcpy(&x, src + 4u * i, sizeof x);
            dst[i] = quantize_boundary(x, scale, zp);
        }
        break;
    }
    case DT_UINT8:
        for (i = 0; i < n; ++i) {
            dst[i] = (int8_t)(src[i] ^ 0x80u);
        }
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
}

static void convert_out(const tgr_plan *p, uint32_t t, const int8_t *src, uint8_t *dst)
{
    uint32_t n = tensor_bytes(p, t);
    uint32_t i;
    switch (tensor_iface(p, t)) {
    case DT_FLOAT: {
        float scale = quant_scale(p, tensor_quant(p, t));
        int32_t zp = quant_zero_point(p, tensor_quant(p, t));
        for (i = 0; i < n; ++i) {
            float x = (float)((int32_t)src[i] - zp) * scale;
            memcpy(dst + 4u * i, &x, sizeof x);
        }
        break;
    }
    case DT_UINT8:
        for (i = 0; i < n; ++i) {
            dst[i] = (uint8_t)((uint8_t)src[i] ^ 0x80u);
        }
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
}

/* ---- the normal path -------------------------------------------------------------------- */

static tgr_status place_slow(tgr_session *s, uint32_t t, uint32_t stage, tgr_error *err)
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

/* Fast under the stage ceiling, compacting once if needed; otherwise slow overflow. */
static tgr_status place_output(tgr_session *s, uint32_t t, uint32_t ceiling, uint32_t stage, tgr_error *err)
{
    if (tgr_place(s, TGR_POOL_FAST, t, ceiling, stage)) {
        return TGR_OK;
    }
    tgr_compact(s, TGR_POOL_FAST, stage);
    if (tgr_place(s, TGR_POOL_FAST, t, ceiling, stage)) {
        return TGR_OK;
    }
    return place_slow(s, t, stage, err);
}

static int read_by_later_stage(const tgr_plan *p, uint32_t stage, uint32_t t)
{
    uint32_t s, i;
    for (s = stage + 1u; s < p->num_stages; ++s) {
        for (i = 0; i < stage_in_count(p, s); ++i) {
            if (stage_input(p, s, i) == t) {
                return 1;
            }
        }
    }
    return 0;
}

/* Drop slow tensors no later stage reads (model outputs stay), then compact if any went. */
static void release_slow(tgr_session *s, uint32_t stage)
{
    const tgr_plan *p = s->plan;
    uint32_t t;
    int freed = 0;
    for (t = 0; t < p->num_tensors; ++t) {
        if (tgr_pool_of(s, s->tensor_ptr[t]) == TGR_POOL_SLOW && !(tensor_flags(p, t) & TF_MODEL_OUTPUT) &&
            !read_by_later_stage(p, stage, t)) {
            s->tensor_ptr[t] = NULL;
            freed = 1;
        }
    }
    if (freed) {
        tgr_compact(s, TGR_POOL_SLOW, stage);
    }
}

static tgr_status run_normal(tgr_session *s, uint32_t stage, uint32_t limit, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t ceiling = s->fast.floor + limit;
    const uint32_t count = stage_ops_count(p, stage);
    uint8_t *slow_copy[TGR_MAX_STAGE_IO];
    uint32_t i, j, k;
    tgr_status st;

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
    /* Last reader of each tensor within the stage; stage outputs never die inside it. */
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
        } else {
            for (k = 0; k < op_num_outputs(p, o); ++k) {
                uint32_t t = op_output(p, o, k);
                if (s->tensor_ptr[t] == NULL) {
                    st = place_output(s, t, ceiling, stage, err);
                    if (st != TGR_OK) {
                        return st;
                    }
                }
            }
            tgr_dispatch(p, o, s->tensor_ptr);
            tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t t = op_input(p, o, k);
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
        st = place_slow(s, t, stage, err);
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

/* ---- one inference ------------------------------------------------------------------------- */

static tgr_status check_buffers(const tgr_plan *p, int is_output, const void *const *buffers,
                                const uint32_t *sizes, uint32_t count, tgr_error *err)
{
    uint32_t i;
    if (count != tgr_plan_io_count(p, is_output) || (count > 0u && (buffers == NULL || sizes == NULL))) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "expected %u %s buffers, got %u", tgr_plan_io_count(p, is_output),
                        is_output ? "output" : "input", count);
    }
    for (i = 0; i < count; ++i) {
        tgr_io_info info;
        tgr_plan_io_info(p, is_output, i, &info);
        if (buffers[i] == NULL || sizes[i] != info.bytes) {
            return tgr_fail(err, TGR_ERR_ARGUMENT, "%s %u ('%s') needs %u bytes, got %u",
                            is_output ? "output" : "input", i, info.name, info.bytes, sizes[i]);
        }
    }
    return TGR_OK;
}

tgr_status tgr_run(tgr_session *s, const void *const *inputs, const uint32_t *input_bytes, uint32_t num_inputs,
                   void *const *outputs, const uint32_t *output_bytes, uint32_t num_outputs, tgr_error *err)
{
    const tgr_plan *p;
    uint32_t i, stage;
    tgr_status st;
    if (s == NULL || s->plan == NULL) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "session is not initialised");
    }
    p = s->plan;
    st = check_buffers(p, 0, inputs, input_bytes, num_inputs, err);
    if (st == TGR_OK) {
        st = check_buffers(p, 1, (const void *const *)outputs, output_bytes, num_outputs, err);
    }
    if (st != TGR_OK) {
        return st;
    }
    tgr_pool_clear(&s->fast);
    tgr_pool_clear(&s->slow);
    memset(&s->counters, 0, sizeof s->counters);
    for (i = 0; i < p->num_tensors; ++i) {
        s->tensor_ptr[i] = NULL;
        s->tensor_alloc[i] = 0u;
    }
    for (i = 0; i < num_inputs; ++i) {
        uint32_t t = model_io_tensor(p, i);
        st = place_slow(s, t, NONE16, err);
        if (st != TGR_OK) {
            return st;
        }
        convert_in(p, t, (const uint8_t *)inputs[i], (int8_t *)s->tensor_ptr[t]);
    }
    for (stage = 0; stage < p->num_stages; ++stage) {
        uint32_t limit = tgr_stage_fast_limit(p, stage, s->fast.size - s->fast.floor);
        if (tgr_stage_needs_tiling(p, stage, limit)) {
            return tgr_fail(err, TGR_ERR_EXEC, "stage %u does not fit its %u-byte fast limit untiled", stage, limit);
        }
        tgr_emit(s, TGR_EV_STAGE_BEGIN, TGR_POOL_NONE, stage, NONE16, NONE16, 0u, 0u, 0u);
        st = run_normal(s, stage, limit, err);
        if (st != TGR_OK) {
            return st;
        }
        release_slow(s, stage);
        s->fast.floor = 0u;
        tgr_fast_reset(s, stage);
        tgr_emit(s, TGR_EV_STAGE_END, TGR_POOL_NONE, stage, NONE16, NONE16, 0u, 0u, 0u);
    }
    for (i = 0; i < num_outputs; ++i) {
        uint32_t t = model_io_tensor(p, p->num_inputs + i);
        convert_out(p, t, (const int8_t *)s->tensor_ptr[t], (uint8_t *)outputs[i]);
    }
    tgr_fast_reset(s, NONE16);
    return TGR_OK;
}
