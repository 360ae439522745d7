/*
 * The by-input path (docs/execution.md#by-input-path): a global average pool too big for its
 * fast limit walks its input in bands of rows, accumulating int32 channel sums in a fast-arena accumulator
 * kept under the floor; the last band finishes the requantization. Schema-10 plans may instead
 * ask for channel groups walked over intervals of the flattened positions. The sums are the
 * same integers the whole-tensor kernel forms, so the result is byte-identical.
 */
#include "exec/exec.h"
#include "memory/pools.h"
#include "ops/ops_registry.h"

static int by_input_shape(const tgr_plan *p, uint32_t stage)
{
    uint32_t o, in, out;
    if (stage_ops_count(p, stage) != 1u || stage_in_count(p, stage) != 1u) {
        return 0;
    }
    o = stage_op(p, stage, 0);
    if (op_type(p, o) != OP_GLOBAL_AVG) {
        return 0;
    }
    in = op_input(p, o, 0);
    out = op_output(p, o, 0);
    return stage_input(p, stage, 0) == in && tensor_dim(p, in, 0) == 1 && tensor_dim(p, out, 1) == 1 &&
           tensor_dim(p, out, 2) == 1;
}

static tgr_status run_banded(tgr_session *s, uint32_t stage, uint32_t limit, tgr_error *err);

/* Schema-10 grouped reduction: channel groups x intervals of the flattened spatial positions,
 * from the stage's v10 tile record (both 0 when the plan asks for plain row bands). */
static void grouping_of(const tgr_plan *p, uint32_t stage, uint32_t *group, uint32_t *interval)
{
    const uint8_t *r = p->version >= 10u ? stage_tile_rec(p, stage) : NULL;
    *group = 0u;
    *interval = 0u;
    if (r != NULL) {
        *group = rd_u32(r + 16);
        *interval = rd_u32(r + 20);
    }
}

/* Walk channel groups; for each, gather interval after interval of positions into the fast
 * arena and accumulate the group's sums; the group's last interval finishes its channels. */
static tgr_status run_grouped(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t group, uint32_t interval,
                              tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t o = stage_op(p, stage, 0);
    const uint32_t x = op_input(p, o, 0);
    const uint32_t y = op_output(p, o, 0);
    const uint32_t ceiling = s->fast.floor + limit;
    const uint32_t positions = (uint32_t)tensor_dim(p, x, 1) * (uint32_t)tensor_dim(p, x, 2);
    const uint32_t channels = (uint32_t)tensor_dim(p, x, 3);
    const tgr_slot slow_x = tgr_slot_of(s, x);
    tgr_slot slow_y;
    int32_t *sums;
    int32_t acc_offset;
    uint32_t c0, p0, i;
    tgr_mean m;
    tgr_status st = tgr_place_slow(s, y, stage, err);
    if (st != TGR_OK) {
        return st;
    }
    slow_y = tgr_slot_of(s, y);
    acc_offset = tgr_reserve_fast(s, 4u * group, ceiling, stage);
    if (acc_offset < 0) {
        return tgr_fail(err, TGR_ERR_ARENA, "stage %u: its reduction accumulator does not fit %u fast bytes", stage,
                        limit);
    }
    sums = (int32_t *)(void *)(s->fast.base + acc_offset);
    tgr_mean_of(p, o, &m);
    for (c0 = 0; c0 < channels; c0 += group) {
        const uint32_t c1 = c0 + group < channels ? c0 + group : channels;
        const uint32_t width = c1 - c0;
        uint32_t tile = 0;
        memset(sums, 0, 4u * width);
        for (p0 = 0; p0 < positions; p0 += interval) {
            const uint32_t p1 = p0 + interval < positions ? p0 + interval : positions;
            const int32_t rows[2] = {(int32_t)p0, (int32_t)p1};
            const int32_t cols[2] = {(int32_t)c0, (int32_t)c1};
            int8_t *chunk;
            tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile, 0u, 0u, 0u, rows, cols);
            ++tile;
            s->counters.tiles += 1u;
            /* The output's fast buffer holds only this group's channels, as the reference's does:
             * at the smallest budgets a whole output would not fit beside the interval. */
            if (!tgr_place_bytes(s, TGR_POOL_FAST, x, (p1 - p0) * width, ceiling, stage) ||
                !tgr_place_bytes(s, TGR_POOL_FAST, y, width, ceiling, stage)) {
                return tgr_fail(err, TGR_ERR_ARENA, "stage %u: a reduction interval does not fit", stage);
            }
            chunk = (int8_t *)s->tensor_ptr[x];
            for (i = p0; i < p1; ++i) {
                memcpy(chunk + (i - p0) * width, slow_x.ptr + i * channels + c0, width);
            }
            s->counters.load_bytes += (p1 - p0) * width;
            /* Traced as the reference traces it: the channel range in the row fields. */
            tgr_emit_region(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, x, NONE16, (uint32_t)(s->tensor_ptr[x] - s->fast.base),
                            (uint32_t)(slow_x.ptr - s->slow.base) + p0 * channels + c0, (p1 - p0) * width, cols, NULL);
            tgr_mean_accumulate((int32_t)(p1 - p0), (int32_t)width, chunk, sums);
            tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
            if (p1 == positions) {
                for (i = 0; i < width; ++i) {
                    ((int8_t *)s->tensor_ptr[y])[i] = tgr_mean_finish(&m, sums[i]);
                }
                memcpy(slow_y.ptr + c0, s->tensor_ptr[y], width);
                s->counters.spill_bytes += width;
                tgr_emit_region(s, TGR_EV_SPILL, TGR_POOL_SLOW, stage, y, NONE16, (uint32_t)(slow_y.ptr - s->slow.base) + c0,
                                (uint32_t)(s->tensor_ptr[y] - s->fast.base), width, cols, NULL);
            }
            tgr_fast_reset(s, stage);
        }
    }
    tgr_fast_release(s, stage); /* the accumulator dies with the reduction */
    tgr_slot_put(s, x, slow_x);
    tgr_slot_put(s, y, slow_y);
    return TGR_OK;
}

static tgr_status run_by_input(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                               const uint8_t *const *weights, tgr_error *err)
{
    uint32_t group, interval;
    (void)path;
    (void)weights; /* a global average pool has none */
    grouping_of(s->plan, stage, &group, &interval);
    if (group != 0u) {
        return run_grouped(s, stage, limit, group, interval, err);
    }
    return run_banded(s, stage, limit, err);
}

int tgr_by_input_grouping_valid(const tgr_plan *p, uint32_t stage)
{
    uint32_t group, interval;
    grouping_of(p, stage, &group, &interval);
    if (group == 0u && interval == 0u) {
        return 1;
    }
    return group != 0u && interval != 0u && by_input_shape(p, stage) &&
           group <= (uint32_t)tensor_dim(p, stage_input(p, stage, 0), 3) &&
           interval <= (uint32_t)(tensor_dim(p, stage_input(p, stage, 0), 1) * tensor_dim(p, stage_input(p, stage, 0), 2));
}

static tgr_status run_banded(tgr_session *s, uint32_t stage, uint32_t limit, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t o = stage_op(p, stage, 0);
    const uint32_t x = op_input(p, o, 0);
    const uint32_t y = op_output(p, o, 0);
    const uint32_t ceiling = s->fast.floor + limit;
    const int32_t rows = tensor_dim(p, x, 1);
    const int32_t width = tensor_dim(p, x, 2);
    const int32_t channels = tensor_dim(p, x, 3);
    const uint32_t row_bytes = (uint32_t)width * (uint32_t)channels;
    const uint32_t acc_bytes = 4u * (uint32_t)channels;
    const tgr_slot slow_x = tgr_slot_of(s, x);
    tgr_slot slow_y;
    int32_t *sums;
    int32_t acc_offset, band, r0, c;
    uint32_t tile = 0;
    tgr_mean m;
    tgr_status st = tgr_place_slow(s, y, stage, err);
    if (st != TGR_OK) {
        return st;
    }
    slow_y = tgr_slot_of(s, y);
    for (band = rows; band > 0; --band) {
        if (align_up(acc_bytes, TGR_TENSOR_ALIGN) + align_up((uint32_t)band * row_bytes, TGR_TENSOR_ALIGN) +
                align_up(tensor_bytes(p, y), TGR_TENSOR_ALIGN) <= limit) {
            break;
        }
    }
    acc_offset = band > 0 ? tgr_reserve_fast(s, acc_bytes, ceiling, stage) : -1;
    if (acc_offset < 0) {
        return tgr_fail(err, TGR_ERR_ARENA, "stage %u: no input band of its global pool fits %u fast bytes", stage,
                        limit);
    }
    sums = (int32_t *)(void *)(s->fast.base + acc_offset);
    memset(sums, 0, acc_bytes);
    tgr_mean_of(p, o, &m);
    for (r0 = 0; r0 < rows; r0 += band) {
        const int32_t r1 = r0 + band < rows ? r0 + band : rows;
        const int32_t range[2] = {r0, r1};
        const uint32_t bytes = (uint32_t)(r1 - r0) * row_bytes;
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile, 0u, 0u, 0u, range, NULL);
        ++tile;
        s->counters.tiles += 1u;
        if (!tgr_place_bytes(s, TGR_POOL_FAST, x, bytes, ceiling, stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: band of %d rows does not fit", stage, (int)(r1 - r0));
        }
        memcpy(s->tensor_ptr[x], slow_x.ptr + (uint32_t)r0 * row_bytes, bytes);
        s->counters.load_bytes += bytes;
        tgr_emit_region(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, x, NONE16, (uint32_t)(s->tensor_ptr[x] - s->fast.base),
                        (uint32_t)(slow_x.ptr - s->slow.base) + (uint32_t)r0 * row_bytes, bytes, range, NULL);
        if (!tgr_place(s, TGR_POOL_FAST, y, ceiling, stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: band of %d rows does not fit", stage, (int)(r1 - r0));
        }
        tgr_mean_accumulate((r1 - r0) * width, channels, (const int8_t *)s->tensor_ptr[x], sums);
        tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
        if (r1 == rows) {
            const int32_t out_rows[2] = {0, 1};
            for (c = 0; c < channels; ++c) {
                ((int8_t *)s->tensor_ptr[y])[c] = tgr_mean_finish(&m, sums[c]);
            }
            memcpy(slow_y.ptr, s->tensor_ptr[y], tensor_bytes(p, y));
            s->counters.spill_bytes += tensor_bytes(p, y);
            tgr_emit_region(s, TGR_EV_SPILL, TGR_POOL_SLOW, stage, y, NONE16, (uint32_t)(slow_y.ptr - s->slow.base),
                            (uint32_t)(s->tensor_ptr[y] - s->fast.base), tensor_bytes(p, y), out_rows, NULL);
        }
        tgr_fast_reset(s, stage);
    }
    tgr_fast_release(s, stage); /* the accumulator dies with the reduction */
    /* Bands borrowed the tensors' slots; give them back their slow allocations. */
    tgr_slot_put(s, x, slow_x);
    tgr_slot_put(s, y, slow_y);
    return TGR_OK;
}

static int by_input_fit(const tgr_plan *p, uint32_t stage, uint32_t last, const char **why)
{
    (void)last; /* one stage */
    (void)why;
    return by_input_shape(p, stage);
}

TGR_PATH_IMPL(TGR_PATH_BY_INPUT, run_by_input, by_input_fit);
