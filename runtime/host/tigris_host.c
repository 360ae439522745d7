/*
 * Host ABI 2 shim: exposes the tgr runtime through the `tigris_host_*` interface that
 * tigris-ml 0.12.1's `tigris/runtime.py` loads, so `TIGRIS_HOST_LIBRARY=libtigris_host.so`
 * makes `tigris run`, `tigris analyze --trace` and `tigris.runtime.Session` execute plans with
 * our runtime instead of the bundled reference.
 *
 * This file is host-only: it copies the plan and allocates the arenas with malloc, sized the
 * way the reference host library sizes them (fast = budget + weight reserve; slow = the
 * caller's capacity, or 2 x sum(size_bytes + 32) when given 0).
 */
#define _POSIX_C_SOURCE 200112L

#include "tigris_host.h"

#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define HOST_ABI 2u
#define ARENA_ALIGNMENT 64u

struct tigris_host {
    void *plan_copy;
    tgr_plan plan;
    tgr_session session;
    void *fast;
    void *slow;
    void *workspace;
    void *state;                  /* the state variables between runs (schema 10 LSTM/SVDF) */
    uint32_t fast_capacity;
    uint32_t slow_capacity;
    tgr_trace_event *trace_events;
    uint32_t trace_capacity;
    uint32_t trace_count;
    tgr_error error;
    int arena_refused;            /* session init found the slow arena too small: every run says so */
};

/* create() has no handle to hold its message when it fails; one buffer per thread does. */
static __thread char create_error[sizeof(((tgr_error *)0)->message) + 32];

static const char *fail_create(const char *message)
{
    strncpy(create_error, message, sizeof create_error - 1u);
    create_error[sizeof create_error - 1u] = '\0';
    return create_error;
}

static void *aligned_block(uint32_t bytes)
{
    void *block = NULL;
    if (posix_memalign(&block, ARENA_ALIGNMENT, bytes > 0u ? bytes : 1u) != 0) {
        return NULL;
    }
    return block;
}

uint32_t tigris_host_abi(void) { return HOST_ABI; }

const char *tigris_host_version(void) { return "tigris-scons-" TGR_VERSION; }

void tigris_host_destroy(void *handle)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    if (h == NULL) {
        return;
    }
    free(h->plan_copy);
    free(h->fast);
    free(h->slow);
    free(h->workspace);
    free(h->state);
    free(h);
}

/* The reference library's own choice when the caller passes 0: room for every tensor twice. */
static uint32_t default_slow_capacity(const tgr_plan *plan)
{
    uint64_t total = 0;
    uint32_t t;
    for (t = 0; t < plan->num_tensors; ++t) {
        total += (uint64_t)tensor_bytes(plan, t) + 32u;
    }
    total *= 2u;
    return total > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)total;
}

const char *tigris_host_create(const void *plan, uint32_t plan_size, uint32_t slow_capacity, void **handle)
{
    struct tigris_host *h;
    tgr_error err;
    uint32_t workspace_bytes;
    if (handle == NULL || plan == NULL) {
        return fail_create("plan and handle must not be NULL");
    }
    *handle = NULL;
    h = (struct tigris_host *)calloc(1, sizeof *h);
    if (h == NULL) {
        return fail_create("out of host memory");
    }
    h->plan_copy = aligned_block(plan_size);
    if (h->plan_copy == NULL) {
        tigris_host_destroy(h);
        return fail_create("out of host memory");
    }
    memcpy(h->plan_copy, plan, plan_size);
    if (tgr_plan_load(&h->plan, h->plan_copy, plan_size, &err) != TGR_OK) {
        tigris_host_destroy(h);
        return fail_create(err.message);
    }
    h->fast_capacity = tgr_fast_arena_required(&h->plan);
    h->slow_capacity = slow_capacity != 0u ? slow_capacity : default_slow_capacity(&h->plan);
    workspace_bytes = tgr_workspace_required(&h->plan);
    h->fast = aligned_block(h->fast_capacity);
    h->slow = aligned_block(h->slow_capacity);
    h->workspace = aligned_block(workspace_bytes);
    h->state = aligned_block(tgr_state_required(&h->plan));
    if (h->fast == NULL || h->slow == NULL || h->workspace == NULL || h->state == NULL) {
        tigris_host_destroy(h);
        return fail_create("out of host memory");
    }
    switch (tgr_session_init(&h->session, &h->plan, h->fast, h->fast_capacity, h->slow, h->slow_capacity,
                             h->workspace, workspace_bytes, &h->error)) {
    case TGR_OK:
        break;
    case TGR_ERR_ARENA:
        /* The reference creates the handle and fails each run on a too small slow capacity. */
        h->arena_refused = 1;
        break;
    default:
        tigris_host_destroy(h);
        return fail_create(h->error.message);
    }
    h->session.plan = &h->plan; /* also after an arena refusal, which runs report */
    if (tgr_session_set_state(&h->session, h->state, tgr_state_required(&h->plan), &h->error) != TGR_OK) {
        tigris_host_destroy(h);
        return fail_create(h->error.message);
    }
    *handle = h;
    return NULL;
}

uint32_t tigris_host_tensor_count(void *handle, int is_output)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    return h != NULL ? tgr_plan_io_count(&h->plan, is_output) : 0u;
}

static int io_info(void *handle, int is_output, uint32_t index, tgr_io_info *info)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    return h != NULL && tgr_plan_io_info(&h->plan, is_output, index, info) == TGR_OK;
}

const char *tigris_host_tensor_name(void *handle, int is_output, uint32_t index)
{
    tgr_io_info info;
    return io_info(handle, is_output, index, &info) ? info.name : "";
}

uint32_t tigris_host_tensor_bytes(void *handle, int is_output, uint32_t index)
{
    tgr_io_info info;
    return io_info(handle, is_output, index, &info) ? info.bytes : 0u;
}

uint32_t tigris_host_tensor_dtype(void *handle, int is_output, uint32_t index)
{
    tgr_io_info info;
    return io_info(handle, is_output, index, &info) ? info.dtype : 0u;
}

uint32_t tigris_host_tensor_rank(void *handle, int is_output, uint32_t index)
{
    tgr_io_info info;
    return io_info(handle, is_output, index, &info) ? info.rank : 0u;
}

int32_t tigris_host_tensor_dim(void *handle, int is_output, uint32_t index, uint32_t axis)
{
    tgr_io_info info;
    return io_info(handle, is_output, index, &info) && axis < info.rank ? info.dims[axis] : 0;
}

static void record_event(void *user, const tgr_trace_event *event)
{
    struct tigris_host *h = (struct tigris_host *)user;
    if (h->trace_count < h->trace_capacity) {
        h->trace_events[h->trace_count] = *event;
    }
    h->trace_count += 1u;
}

const char *tigris_host_run(void *handle, void **inputs, uint32_t *input_sizes, uint32_t n_inputs, void **outputs,
                            uint32_t *output_sizes, uint32_t n_outputs)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    if (h == NULL) {
        return "invalid handle";
    }
    h->trace_count = 0u;
    if (h->arena_refused) {
        return h->error.message;
    }
    tgr_session_set_trace(&h->session, h->trace_events != NULL ? record_event : NULL, h);
    if (tgr_run(&h->session, (const void *const *)inputs, input_sizes, n_inputs, (void *const *)outputs,
                output_sizes, n_outputs, &h->error) != TGR_OK) {
        return h->error.message;
    }
    return NULL;
}

uint64_t tigris_host_metric(void *handle, uint32_t index)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    if (h == NULL) {
        return 0u;
    }
    switch (index) {
    case 0: return h->fast_capacity;
    case 1: return h->slow_capacity;
    case 2: return h->session.fast.peak;
    case 3: return h->session.slow.peak;
    case 4: return h->session.workspace_bytes;
    case 5: return h->session.counters.load_bytes;
    case 6: return h->session.counters.spill_bytes;
    case 7: return h->session.counters.weight_bytes;
    case 8: return h->session.counters.copy_bytes;
    case 9: return h->session.counters.compactions;
    case 10: return h->session.counters.tiles;
    case 11: return TGR_TENSOR_ALIGN;
    default: return 0u;
    }
}

const char *tigris_host_reset_state(void *handle)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    if (h == NULL) {
        return "invalid handle";
    }
    tgr_session_reset_state(&h->session);
    return NULL;
}

void tigris_host_trace_buffer(void *handle, void *events, uint32_t capacity)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    if (h == NULL) {
        return;
    }
    h->trace_events = (tgr_trace_event *)events;
    h->trace_capacity = events != NULL ? capacity : 0u;
}

uint32_t tigris_host_trace_count(void *handle)
{
    struct tigris_host *h = (struct tigris_host *)handle;
    return h != NULL ? h->trace_count : 0u;
}
