/*
 * Memory pools of a session (pools.c): bump allocation with peak tracking, tensor placement,
 * compaction and the trace events that describe them.
 */
#ifndef TGR_POOLS_H
#define TGR_POOLS_H

#include "tgr_internal.h"

#define NO_ROWS (-1)

/* Report one event to the session's trace sink (no-op without one). */
void tgr_emit(tgr_session *s, uint8_t kind, uint8_t pool, uint32_t stage, uint32_t tensor, uint32_t op,
              uint32_t offset, uint32_t src_offset, uint32_t bytes);

/* Bind a pool to caller memory, aligning its start to TGR_TENSOR_ALIGN. */
void tgr_pool_bind(tgr_pool *pool, void *memory, uint32_t bytes);
void tgr_pool_clear(tgr_pool *pool);

/* Which pool `ptr` lies in: TGR_POOL_FAST, TGR_POOL_SLOW or TGR_POOL_NONE. */
uint8_t tgr_pool_of(const tgr_session *s, const uint8_t *ptr);

/* Give tensor t a buffer of its full size in `pool`, below `ceiling` bytes of that pool.
 * Returns 0 (and changes nothing) when it does not fit. Emits an alloc event. */
int tgr_place(tgr_session *s, uint8_t pool, uint32_t t, uint32_t ceiling, uint32_t stage);

/* Slide the live tensor allocations of a pool down to its floor (one move event per moved
 * block); `used` becomes the end of the last live block. */
void tgr_compact(tgr_session *s, uint8_t pool, uint32_t stage);

/* Forget every tensor pointer into the fast pool and return it to its floor. */
void tgr_fast_reset(tgr_session *s, uint32_t stage);

#endif /* TGR_POOLS_H */
