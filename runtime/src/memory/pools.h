/*
 * Memory pools of a session (pools.c): bump allocation with peak tracking, tensor placement,
 * compaction and the trace events that describe them.
 */
#ifndef TGR_POOLS_H
#define TGR_POOLS_H

#include "plan/plan.h"

#define NO_ROWS (-1)

/* TGR_TRACE=0 builds (firmware: nothing there sets a trace sink) compile every event report
 * away; the default keeps them for the host ABI's trace. Event arguments must not have side
 * effects: a TGR_TRACE=0 build does not evaluate them. */
#ifndef TGR_TRACE
#define TGR_TRACE 1
#endif

#if TGR_TRACE
/* Report one event to the session's trace sink (no-op without one). */
void tgr_emit(tgr_session *s, uint8_t kind, uint8_t pool, uint32_t stage, uint32_t tensor, uint32_t op,
              uint32_t offset, uint32_t src_offset, uint32_t bytes);

/* The same with a row range [rows[0], rows[1]) and, when `cols` is not NULL, a column range. */
void tgr_emit_region(tgr_session *s, uint8_t kind, uint8_t pool, uint32_t stage, uint32_t tensor, uint32_t op,
                     uint32_t offset, uint32_t src_offset, uint32_t bytes, const int32_t *rows,
                     const int32_t *cols);

/* The event that opens an execution unit, carrying its path code. */
void tgr_emit_stage_begin(tgr_session *s, uint32_t stage, uint32_t path);
#else
/* The arguments stay unevaluated (base/error.h); emit arguments have no side effects, by rule. */
#define tgr_emit(...) ((void)sizeof tgr_unevaluated(__VA_ARGS__))
#define tgr_emit_region(...) ((void)sizeof tgr_unevaluated(__VA_ARGS__))
#define tgr_emit_stage_begin(...) ((void)sizeof tgr_unevaluated(__VA_ARGS__))
#endif

/* Where a tensor lives in slow memory while tiles borrow its pointer slot for fast buffers. */
typedef struct tgr_slot {
    uint8_t *ptr;
    uint32_t alloc;
    uint16_t origin;
} tgr_slot;

static inline tgr_slot tgr_slot_of(const tgr_session *s, uint32_t t)
{
    tgr_slot slot;
    slot.ptr = s->tensor_ptr[t];
    slot.alloc = s->tensor_alloc[t];
    slot.origin = s->origin[t];
    return slot;
}

static inline void tgr_slot_put(tgr_session *s, uint32_t t, tgr_slot slot)
{
    s->tensor_ptr[t] = slot.ptr;
    s->tensor_alloc[t] = slot.alloc;
    s->origin[t] = slot.origin;
}

/* Bind a pool to caller memory, aligning its start to TGR_TENSOR_ALIGN. */
void tgr_pool_bind(tgr_pool *pool, void *memory, uint32_t bytes);
void tgr_pool_clear(tgr_pool *pool);

/* Which pool `ptr` lies in: TGR_POOL_FAST, TGR_POOL_SLOW or TGR_POOL_NONE. */
uint8_t tgr_pool_of(const tgr_session *s, const uint8_t *ptr);

/* Give tensor t a buffer of `bytes` (rounded up to the alignment) in `pool`, below `ceiling`
 * bytes of that pool. Returns 0 (and changes nothing) when it does not fit. Emits an alloc
 * event. tgr_place() asks for the tensor's full size. */
int tgr_place_bytes(tgr_session *s, uint8_t pool, uint32_t t, uint32_t bytes, uint32_t ceiling, uint32_t stage);
int tgr_place(tgr_session *s, uint8_t pool, uint32_t t, uint32_t ceiling, uint32_t stage);

/* Reserve `bytes` of the fast pool for a non-tensor block (accumulator, weights) and raise the
 * floor over it so tile resets keep it. Returns its offset, or -1 when it does not fit. */
int32_t tgr_reserve_fast(tgr_session *s, uint32_t bytes, uint32_t ceiling, uint32_t stage);

/* Slide the live tensor allocations of a pool down to its floor (one move event per moved
 * block); `used` becomes the end of the last live block. */
void tgr_compact(tgr_session *s, uint8_t pool, uint32_t stage);

/* Forget every tensor pointer into the fast pool above its floor and return it to the floor. */
void tgr_fast_reset(tgr_session *s, uint32_t stage);

/* Drop the floor to the start of the pool, then reset: what a unit does when it is done with
 * everything it kept under the floor. */
void tgr_fast_release(tgr_session *s, uint32_t stage);

#endif /* TGR_POOLS_H */
