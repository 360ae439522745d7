/*
 * Fast and slow arenas as bump allocators over caller memory
 * (docs/execution.md#bump-allocation-and-the-floor).
 *
 * Every allocation is rounded up to TGR_TENSOR_ALIGN; copies move the raw byte count. Freeing
 * is implicit: a tensor whose pointer is dropped stops being live, and its bytes come back only
 * when the pool is compacted (lazily, when the next allocation would not fit) or reset. That
 * laziness is what makes the measured peak equal the compiler's live-set model.
 */
#include "memory/pools.h"

#if TGR_TRACE
void tgr_emit(tgr_session *s, uint8_t kind, uint8_t pool, uint32_t stage, uint32_t tensor, uint32_t op,
              uint32_t offset, uint32_t src_offset, uint32_t bytes)
{
    tgr_emit_region(s, kind, pool, stage, tensor, op, offset, src_offset, bytes, NULL, NULL);
}

void tgr_emit_stage_begin(tgr_session *s, uint32_t stage, uint32_t path)
{
    tgr_trace_event e;
    if (s->trace == NULL) {
        return;
    }
    memset(&e, 0, sizeof e);
    e.kind = TGR_EV_STAGE_BEGIN;
    e.pool = TGR_POOL_NONE;
    e.path = (uint8_t)path;
    e.stage = (uint16_t)stage;
    e.tensor = NONE16;
    e.op = NONE16;
    e.row0 = e.row1 = e.col0 = e.col1 = NO_ROWS;
    e.fast_used = s->fast.used;
    e.slow_used = s->slow.used;
    s->trace(s->trace_user, &e);
}

void tgr_emit_region(tgr_session *s, uint8_t kind, uint8_t pool, uint32_t stage, uint32_t tensor, uint32_t op,
                     uint32_t offset, uint32_t src_offset, uint32_t bytes, const int32_t *rows,
                     const int32_t *cols)
{
    tgr_trace_event e;
    if (s->trace == NULL) {
        return;
    }
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.pool = pool;
    e.stage = (uint16_t)stage;
    e.tensor = (uint16_t)tensor;
    e.op = (uint16_t)op;
    e.offset = offset;
    e.src_offset = src_offset;
    e.bytes = bytes;
    e.row0 = rows != NULL ? rows[0] : NO_ROWS;
    e.row1 = rows != NULL ? rows[1] : NO_ROWS;
    e.col0 = cols != NULL ? cols[0] : NO_ROWS;
    e.col1 = cols != NULL ? cols[1] : NO_ROWS;
    e.fast_used = s->fast.used;
    e.slow_used = s->slow.used;
    s->trace(s->trace_user, &e);
}
#endif

void tgr_pool_bind(tgr_pool *pool, void *memory, uint32_t bytes)
{
    uintptr_t address = (uintptr_t)memory;
    uint32_t skip = (uint32_t)((TGR_TENSOR_ALIGN - (address % TGR_TENSOR_ALIGN)) % TGR_TENSOR_ALIGN);
    pool->base = (uint8_t *)memory + (skip < bytes ? skip : bytes);
    pool->size = skip < bytes ? bytes - skip : 0u;
    tgr_pool_clear(pool);
}

void tgr_pool_clear(tgr_pool *pool)
{
    pool->used = 0u;
    pool->floor = 0u;
    pool->peak = 0u;
}

static tgr_pool *pool_ref(tgr_session *s, uint8_t pool)
{
    return pool == TGR_POOL_FAST ? &s->fast : &s->slow;
}

uint8_t tgr_pool_of(const tgr_session *s, const uint8_t *ptr)
{
    if (ptr != NULL && ptr >= s->fast.base && ptr < s->fast.base + s->fast.size) {
        return TGR_POOL_FAST;
    }
    if (ptr != NULL && ptr >= s->slow.base && ptr < s->slow.base + s->slow.size) {
        return TGR_POOL_SLOW;
    }
    return TGR_POOL_NONE;
}

int tgr_place(tgr_session *s, uint8_t pool, uint32_t t, uint32_t ceiling, uint32_t stage)
{
    return tgr_place_bytes(s, pool, t, tensor_bytes(s->plan, t), ceiling, stage);
}

int32_t tgr_reserve_fast(tgr_session *s, uint32_t bytes, uint32_t ceiling, uint32_t stage)
{
    uint32_t rounded = align_up(bytes, TGR_TENSOR_ALIGN);
    uint32_t limit = ceiling < s->fast.size ? ceiling : s->fast.size;
    uint32_t offset = s->fast.used;
    if (offset > limit || rounded > limit - offset) {
        return -1;
    }
    s->fast.used += rounded;
    s->fast.floor = s->fast.used;
    if (s->fast.used > s->fast.peak) {
        s->fast.peak = s->fast.used;
    }
    tgr_emit(s, TGR_EV_ALLOC, TGR_POOL_FAST, stage, NONE16, NONE16, offset, 0u, rounded);
    return (int32_t)offset;
}

int tgr_place_bytes(tgr_session *s, uint8_t pool, uint32_t t, uint32_t raw_bytes, uint32_t ceiling, uint32_t stage)
{
    tgr_pool *p = pool_ref(s, pool);
    uint32_t bytes = align_up(raw_bytes, TGR_TENSOR_ALIGN);
    uint32_t limit = ceiling < p->size ? ceiling : p->size;
    if (p->used > limit || bytes > limit - p->used) {
        return 0;
    }
    s->tensor_ptr[t] = p->base + p->used;
    s->tensor_alloc[t] = bytes;
    s->origin[t] = (uint16_t)t;
    p->used += bytes;
    if (p->used > p->peak) {
        p->peak = p->used;
    }
    tgr_emit(s, TGR_EV_ALLOC, pool, stage, t, NONE16, p->used - bytes, 0u, bytes);
    return 1;
}

void tgr_compact(tgr_session *s, uint8_t pool, uint32_t stage)
{
    tgr_pool *p = pool_ref(s, pool);
    const uint32_t count = s->plan->num_tensors;
    uint8_t *const low = p->base + p->floor;
    uint8_t *const high = p->base + p->used;
    const uint8_t *done = NULL;
    uint32_t cursor = p->floor;
    for (;;) {
        uint8_t *next = NULL;
        uint32_t owner = 0;
        uint32_t t;
        for (t = 0; t < count; ++t) {
            uint8_t *ptr = s->tensor_ptr[t];
            if (ptr >= low && ptr < high && (done == NULL || ptr > done) && (next == NULL || ptr < next)) {
                next = ptr;
                owner = t;
            }
        }
        if (next == NULL) {
            break;
        }
        done = next;
        if (next != p->base + cursor) {
            uint8_t *target = p->base + cursor;
            memmove(target, next, s->tensor_alloc[owner]);
            for (t = 0; t < count; ++t) {
                if (s->tensor_ptr[t] == next) {
                    s->tensor_ptr[t] = target;
                }
            }
            /* Like the reference, a move names the lowest-numbered tensor that ever shared the
             * allocation (reshape aliases), whether or not that one is still live. */
            tgr_emit(s, TGR_EV_MOVE, pool, stage, s->origin[owner], NONE16, cursor, (uint32_t)(next - p->base),
                     s->tensor_alloc[owner]);
        }
        cursor += s->tensor_alloc[owner];
    }
    p->used = cursor;
    s->counters.compactions += 1u;
}

void tgr_fast_reset(tgr_session *s, uint32_t stage)
{
    uint8_t *const floor = s->fast.base + s->fast.floor;
    uint32_t t;
    for (t = 0; t < s->plan->num_tensors; ++t) {
        if (tgr_pool_of(s, s->tensor_ptr[t]) == TGR_POOL_FAST && s->tensor_ptr[t] >= floor) {
            s->tensor_ptr[t] = NULL;
        }
    }
    s->fast.used = s->fast.floor;
    tgr_emit(s, TGR_EV_RESET, TGR_POOL_FAST, stage, NONE16, NONE16, s->fast.floor, 0u, 0u);
}

void tgr_fast_release(tgr_session *s, uint32_t stage)
{
    s->fast.floor = 0u;
    tgr_fast_reset(s, stage);
}
