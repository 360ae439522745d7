/*
 * The executor: one inference over the stage table (docs/execution.md#one-inference). Model
 * inputs are converted into the slow arena, each stage runs with its inputs loaded into the
 * fast arena and its outputs spilled back to slow memory, and model outputs are converted out.
 *
 * Each unit takes the path path_select.c picks from the plan and the fast limit, exactly as
 * the loader picked it when it accepted the plan; a unit the runtime cannot run is an error,
 * never a silently different execution.
 */
#include <math.h>

#include "base/profile.h"
#include "exec/exec.h"
#include "memory/pools.h"
#include "memory/weights.h"

/* ---- sessions ------------------------------------------------------------------------------ */

static tgr_status execute(tgr_session *s, const void *const *inputs, void *const *outputs, tgr_error *err);

tgr_status tgr_session_init(tgr_session *session, const tgr_plan *plan, void *fast, uint32_t fast_bytes,
                            void *slow, uint32_t slow_bytes, void *workspace, uint32_t workspace_bytes,
                            tgr_error *err)
{
    uintptr_t ws = (uintptr_t)workspace;
    uint32_t skip;
    uint32_t need;
    tgr_status st;
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
    need = plan->num_tensors * TGR_WORKSPACE_PER_TENSOR;
    if (workspace_bytes < skip || workspace_bytes - skip < need) {
        return tgr_fail(err, TGR_ERR_ARENA, "workspace too small: plan needs %u bytes, %u given",
                        tgr_workspace_required(plan), workspace_bytes);
    }
    session->tensor_ptr = (uint8_t **)(ws + skip);
    session->region = (int32_t *)(void *)(session->tensor_ptr + plan->num_tensors);
    session->held = session->region + 4u * plan->num_tensors;
    session->tensor_alloc = (uint32_t *)(session->held + 2u * plan->num_tensors);
    session->last_use = (uint16_t *)(session->tensor_alloc + plan->num_tensors);
    session->origin = session->last_use + plan->num_tensors;
    session->workspace_bytes = tgr_workspace_required(plan);
    session->rehearsing = 1u;
    st = execute(session, NULL, NULL, err);
    session->rehearsing = 0u;
    memset(&session->counters, 0, sizeof session->counters);
    tgr_pool_clear(&session->fast);
    tgr_pool_clear(&session->slow);
    return st;
}

uint32_t tgr_state_required(const tgr_plan *plan) { return plan->state_bytes; }

tgr_status tgr_session_set_state(tgr_session *session, void *state, uint32_t state_bytes, tgr_error *err)
{
    if (session == NULL || session->plan == NULL || (state == NULL && session->plan->num_state > 0u)) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "an initialised session and a state buffer are required");
    }
    if (state_bytes < session->plan->state_bytes) {
        return tgr_fail(err, TGR_ERR_ARENA, "state buffer too small: plan needs %u bytes, %u given",
                        session->plan->state_bytes, state_bytes);
    }
    session->state = (uint8_t *)state;
    tgr_session_reset_state(session);
    return TGR_OK;
}

void tgr_session_reset_state(tgr_session *session)
{
    const tgr_plan *p = session->plan;
    uint32_t i;
    for (i = 0; session->state != NULL && i < p->num_state; ++i) {
        memcpy(session->state + state_offset(p, i), state_initial(p, i), state_size(p, i));
    }
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

/* 0 when an int64 input holds a value outside int32 (the reference fails such a run). */
static int convert_in(const tgr_plan *p, uint32_t t, const uint8_t *src, int8_t *dst)
{
    uint32_t n = tensor_bytes(p, t);
    uint32_t i;
    switch (tensor_iface(p, t)) {
    case TGR_DTYPE_FLOAT32: {
        float scale = quant_scale(p, tensor_quant(p, t));
        int32_t zp = quant_zero_point(p, tensor_quant(p, t));
        for (i = 0; i < n; ++i) {
            float x;
            memcpy(&x, src + 4u * i, sizeof x);
            dst[i] = quantize_boundary(x, scale, zp);
        }
        break;
    }
    case TGR_DTYPE_UINT8:
        for (i = 0; i < n; ++i) {
            dst[i] = (int8_t)(src[i] ^ 0x80u);
        }
        break;
    case TGR_DTYPE_INT64: /* int32 indices behind an ONNX int64 input: narrowed where they fit */
        for (i = 0; i < n; i += 4u) {
            uint8_t fill = (uint8_t)(src[2u * i + 3u] & 0x80u ? 0xFFu : 0x00u);
            uint32_t k;
            for (k = 4u; k < 8u; ++k) {
                if (src[2u * i + k] != fill) {
                    return 0;
                }
            }
            memcpy(dst + i, src + 2u * i, 4u);
        }
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
    return 1;
}

static void convert_out(const tgr_plan *p, uint32_t t, const int8_t *src, uint8_t *dst)
{
    uint32_t n = tensor_bytes(p, t);
    uint32_t i;
    switch (tensor_iface(p, t)) {
    case TGR_DTYPE_FLOAT32: {
        float scale = quant_scale(p, tensor_quant(p, t));
        int32_t zp = quant_zero_point(p, tensor_quant(p, t));
        for (i = 0; i < n; ++i) {
            float x = (float)((int32_t)src[i] - zp) * scale;
            memcpy(dst + 4u * i, &x, sizeof x);
        }
        break;
    }
    case TGR_DTYPE_UINT8:
        for (i = 0; i < n; ++i) {
            dst[i] = (uint8_t)((uint8_t)src[i] ^ 0x80u);
        }
        break;
    case TGR_DTYPE_INT64: /* int32 indices (ArgMax) behind an ONNX int64 output: sign-extended, little-endian */
        for (i = 0; i < n; i += 4u) {
            uint8_t fill = (uint8_t)(src[i + 3u] < 0 ? 0xFFu : 0x00u);
            memcpy(dst + 2u * i, src + i, 4u);
            memset(dst + 2u * i + 4u, fill, 4u);
        }
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
}

/* ---- slow memory between stages ------------------------------------------------------------ */

/* Read by a later stage of the main graph (the graphs If/While run keep to their own tensors). */
static int read_by_later_stage(const tgr_plan *p, uint32_t stage, uint32_t t)
{
    uint32_t s, i;
    for (s = stage + 1u; s < graph_end_stage(p, 0u); ++s) {
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
            !read_by_later_stage(p, stage, t) && !is_state_output(p, t)) {
            uint8_t *block = s->tensor_ptr[t];
            uint32_t other;
            s->tensor_ptr[t] = NULL;
            /* A block another tensor still points at (an output written over its input) stays. */
            for (other = 0; other < p->num_tensors && s->tensor_ptr[other] != block; ++other) {
            }
            freed |= other == p->num_tensors;
        }
    }
    if (freed) {
        tgr_compact(s, TGR_POOL_SLOW, stage);
    }
}

/* Decompress the weights of the unit's stages (a chain keeps all members' blocks), then run. */
static tgr_status run_unit(tgr_session *s, uint32_t stage, uint32_t last, uint32_t path, uint32_t limit,
                           tgr_error *err)
{
    const uint8_t *weights[MAX_CHAIN_STAGES];
    uint32_t k;
    for (k = 0; stage + k <= last; ++k) {
        tgr_status st = tgr_unpack_stage_weights(s, stage + k, &weights[k], err);
        if (st != TGR_OK) {
            return st;
        }
    }
    /* The loader and session init selected this path on the same plan and refused one this
     * build does not link, so the runner is there. */
    return tgr_path_run(path, s, stage, limit, weights, err);
}

#if TGR_STAGE_MEMORY
/* The unit's high-water marks for tgr_stage_memory (tgr.h): each pool's peak restarts at its
 * current use when the unit begins; when it ends, the unit's peaks are reported and the run's
 * peaks become the larger of the two again. Nested units (a control stage's graphs) nest. Only
 * allocations raise `used`, and what follows the unit in the executor (slow release, fast reset)
 * only lowers it, so the marks equal the reference trace's maxima over the unit's events. */
typedef struct unit_marks {
    uint32_t fast_peak;
    uint32_t slow_peak;
} unit_marks;

static unit_marks unit_marks_begin(tgr_session *s)
{
    unit_marks run;
    run.fast_peak = s->fast.peak;
    run.slow_peak = s->slow.peak;
    s->fast.peak = s->fast.used;
    s->slow.peak = s->slow.used;
    return run;
}

static void unit_marks_end(tgr_session *s, unit_marks run, uint32_t first, uint32_t last, tgr_status st)
{
    if (st == TGR_OK && !s->rehearsing) {
        tgr_stage_memory(first, last, s->fast.peak, s->slow.peak);
    }
    if (run.fast_peak > s->fast.peak) {
        s->fast.peak = run.fast_peak;
    }
    if (run.slow_peak > s->slow.peak) {
        s->slow.peak = run.slow_peak;
    }
}
#endif

tgr_status tgr_run_unit(tgr_session *s, uint32_t stage, uint32_t *last, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    uint32_t limit = tgr_unit_limit(p, stage, s->fast.size, s->fast.floor);
    const char *why;
    uint32_t path = tgr_select_path(p, stage, limit, &why, &s->counters.paths);
    tgr_status st;
    *last = path == TGR_PATH_CHAIN ? stage + stage_chain_len(p, stage) - 1u : stage;
    if (path == PATH_SKIP) {
        *last = PATH_SKIP;
        return TGR_OK;
    }
    if (path == PATH_REFUSED) {
        return tgr_fail(err, TGR_ERR_EXEC, "stage %u cannot run: %s", stage, why);
    }
    st = tgr_check_built_in_path(stage, path, err);
    if (st != TGR_OK) {
        return st;
    }
    tgr_emit_stage_begin(s, stage, path);
    tgr_profile_unit(stage, 0);
#if TGR_STAGE_MEMORY
    {
        const unit_marks run = unit_marks_begin(s);
        st = run_unit(s, stage, *last, path, limit, err);
        unit_marks_end(s, run, stage, *last, st);
    }
#else
    st = run_unit(s, stage, *last, path, limit, err);
#endif
    tgr_profile_unit(stage, 1);
    return st;
}

void tgr_end_unit(tgr_session *s, uint32_t stage, uint32_t last)
{
    const uint32_t type = op_type(s->plan, stage_op(s->plan, stage, 0));
    if (type != OP_IF && type != OP_WHILE) { /* a control stage takes no fast memory of its own */
        tgr_fast_release(s, last);
    }
    tgr_emit(s, TGR_EV_STAGE_END, TGR_POOL_NONE, stage, NONE16, NONE16, 0u, 0u, 0u);
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

/* One pass over the stages; while rehearsing, inputs and outputs are NULL and not converted. */
static tgr_status execute(tgr_session *s, const void *const *inputs, void *const *outputs, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t num_inputs = tgr_plan_io_count(p, 0);
    const uint32_t num_outputs = tgr_plan_io_count(p, 1);
    uint32_t i, stage;
    tgr_status st;
    tgr_pool_clear(&s->fast);
    tgr_pool_clear(&s->slow);
    memset(&s->counters, 0, sizeof s->counters);
    for (i = 0; i < p->num_tensors; ++i) {
        s->tensor_ptr[i] = NULL;
        s->tensor_alloc[i] = 0u;
        s->origin[i] = (uint16_t)i;
    }
    for (i = 0; i < num_inputs; ++i) {
        uint32_t t = model_io_tensor(p, i);
        st = tgr_place_slow(s, t, NONE16, err);
        if (st != TGR_OK) {
            return st;
        }
        if (inputs != NULL && !convert_in(p, t, (const uint8_t *)inputs[i], (int8_t *)s->tensor_ptr[t])) {
            return tgr_fail(err, TGR_ERR_EXEC, "input %u holds an int64 value outside the int32 range it is "
                            "stored in", i);
        }
    }
    st = tgr_state_in(s, err); /* the state variables' previous values, after the inputs */
    if (st != TGR_OK) {
        return st;
    }
    for (stage = 0; stage < graph_end_stage(p, 0u); ++stage) {
        uint32_t last;
        st = tgr_run_unit(s, stage, &last, err);
        if (st != TGR_OK) {
            return st;
        }
        if (last == PATH_SKIP) {
            continue;
        }
        release_slow(s, last);
        tgr_end_unit(s, stage, last);
    }
    for (i = 0; i < num_outputs && outputs != NULL; ++i) {
        uint32_t t = model_io_tensor(p, p->num_inputs + i);
        convert_out(p, t, (const int8_t *)s->tensor_ptr[t], (uint8_t *)outputs[i]);
    }
    tgr_state_out(s); /* the run succeeded: the variables' next values become the state */
    tgr_fast_reset(s, NONE16);
    return TGR_OK;
}

tgr_status tgr_run(tgr_session *s, const void *const *inputs, const uint32_t *input_bytes, uint32_t num_inputs,
                   void *const *outputs, const uint32_t *output_bytes, uint32_t num_outputs, tgr_error *err)
{
    tgr_status st;
    if (s == NULL || s->plan == NULL) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "session is not initialised");
    }
    if (s->plan->num_state > 0u && s->state == NULL) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "the plan keeps state variables: bind a state buffer first "
                        "(tgr_session_set_state)");
    }
    st = check_buffers(s->plan, 0, inputs, input_bytes, num_inputs, err);
    if (st == TGR_OK) {
        st = check_buffers(s->plan, 1, (const void *const *)outputs, output_bytes, num_outputs, err);
    }
    return st == TGR_OK ? execute(s, inputs, outputs, err) : st;
}
