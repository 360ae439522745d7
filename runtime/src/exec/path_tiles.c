/*
 * Tiled execution (docs/execution.md#tiled-engine): one engine for the three paths that
 * stream a unit of ops over spatial tiles of its outputs.
 *
 *  - tiled:    one stage, bands of output rows; the band is the largest whose working set
 *              fits the stage's fast limit.
 *  - tiled_2d: one stage, the plan's output tile (rows x cols), row-major over the grid.
 *  - chain:    consecutive stages streamed together; only the head's inputs come from slow
 *              memory and only the last stage's outputs go back. The band is the largest up to
 *              the head's chain_tile_h that fits. A line-buffered chain keeps every op output in
 *              a persistent buffer sized for an interior tile.
 *
 * For every tile the rows (and columns) each tensor must hold are back-propagated from the
 * output tile through the ops' windows and clamped at the tensor edges; the kernels then run on
 * those buffers with the clamps expressed as effective paddings, so the arithmetic is that of
 * the whole tensor and the outputs are byte-identical. A line-buffered chain rolls the rows the
 * previous tile already computed instead of computing them again (roll_and_run).
 */
#include "exec/exec.h"
#include "memory/pools.h"
#include "ops/ops.h"
#include "ops/ops_registry.h"

enum { ROW0 = 0, ROW1 = 1, COL0 = 2, COL1 = 3 };

typedef struct tile_unit {
    uint32_t first_stage;
    uint32_t last_stage;
    uint32_t first_op;
    uint32_t end_op;
    int two_d;
    int chain;
} tile_unit;

static int is_window_op(uint32_t type) { return tgr_op_tiling(type) == TILING_WINDOW; }
static int is_resample_op(uint32_t type) { return tgr_op_tiling(type) == TILING_RESAMPLE; }

/* Stride, window span and leading pad of op o along rows (cols = 0) or columns (cols = 1);
 * elementwise ops map rows 1:1. */
static void op_axis(const tgr_plan *p, uint32_t o, int cols, int32_t *stride, int32_t *span, int32_t *pad)
{
    op_spatial sp;
    if (!is_window_op(op_type(p, o))) {
        *stride = 1;
        *span = 1;
        *pad = 0;
        return;
    }
    op_decode(p, o, &sp);
    if (cols) {
        *stride = (int32_t)sp.stride_w;
        *span = (int32_t)((sp.kernel_w - 1u) * (sp.dilation_w == 0u ? 1u : sp.dilation_w) + 1u);
        *pad = (int32_t)sp.pad_left;
    } else {
        *stride = (int32_t)sp.stride_h;
        *span = (int32_t)((sp.kernel_h - 1u) * (sp.dilation_h == 0u ? 1u : sp.dilation_h) + 1u);
        *pad = (int32_t)sp.pad_top;
    }
}

static void unit_of(const tgr_plan *p, uint32_t stage, uint32_t path, tile_unit *u)
{
    u->first_stage = stage;
    u->last_stage = path == TGR_PATH_CHAIN ? stage + stage_chain_len(p, stage) - 1u : stage;
    u->first_op = stage_op(p, u->first_stage, 0);
    u->end_op = stage_op(p, u->last_stage, stage_ops_count(p, u->last_stage) - 1u) + 1u;
    u->two_d = path == TGR_PATH_TILED_2D;
    u->chain = path == TGR_PATH_CHAIN;
}

/* The member stage of the unit that runs op o. */
static uint32_t op_stage(const tgr_plan *p, const tile_unit *u, uint32_t o)
{
    uint32_t stage = u->first_stage;
    while (stage < u->last_stage && stage_op(p, stage + 1u, 0) <= o) {
        ++stage;
    }
    return stage;
}

/* Stripes see a channels-last tensor as H x W x C: [1, H, W, C], or [1, L, C] with W = 1. */
static int32_t width_of(const tgr_plan *p, uint32_t t) { return tensor_ndim(p, t) == 4u ? tensor_dim(p, t, 2) : 1; }
/* Bytes of one pixel: the channels, 4 bytes each for float32 (the float sections around
 * If/While), 1 for int8 codes. */
static int32_t pixel_bytes(const tgr_plan *p, uint32_t t)
{
    return tensor_dim(p, t, tensor_ndim(p, t) - 1u) * (tensor_dtype(p, t) == TGR_DTYPE_FLOAT32 ? 4 : 1);
}
static int32_t extent(const tgr_plan *p, uint32_t t, int cols) { return cols ? width_of(p, t) : tensor_dim(p, t, 1); }

static uint32_t region_bytes(const tgr_plan *p, uint32_t t, const int32_t *r)
{
    return (uint32_t)(r[ROW1] - r[ROW0]) * (uint32_t)(r[COL1] - r[COL0]) * (uint32_t)pixel_bytes(p, t);
}

static void clear_unit_regions(const tgr_plan *p, const tile_unit *u, int32_t *region)
{
    uint32_t i, o;
    for (i = 0; i < stage_in_count(p, u->first_stage); ++i) {
        memset(region + 4u * stage_input(p, u->first_stage, i), 0, 4u * sizeof(int32_t));
    }
    for (o = u->first_op; o < u->end_op; ++o) {
        memset(region + 4u * op_output(p, o, 0), 0, 4u * sizeof(int32_t));
    }
}

/* ---- sizing -------------------------------------------------------------------------------- */

static int32_t floor_div(int32_t a, int32_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Rows an op's input needs for `out` rows of output. Stripes use the exact window extent;
 * chains size their buffers for an interior tile the way the compiler does. A transposed
 * convolution is sized as the reference sizes its 2-D tiles: (out + span + stride - 1) / stride
 * + 2 (clamped by the caller), whatever the tile's position. */
static int32_t input_length(int32_t out, int32_t stride, int32_t span, int chain, int transposed)
{
    if (out <= 0) {
        return 0;
    }
    if (transposed) {
        return (out + span + stride - 1) / stride + 2;
    }
    if (chain) {
        return out * stride + (span > stride ? span - stride : 0);
    }
    return (out - 1) * stride + span;
}

/* Lengths (in region[ROW1] and region[COL1]) every tensor of the unit holds for an output tile
 * of `rows` x `cols`, and the fast bytes of the tile: every input and op output, each rounded. */
static uint32_t tile_footprint(const tgr_plan *p, const tile_unit *u, int32_t *region, int32_t rows, int32_t cols)
{
    uint32_t i, o, k;
    uint32_t total = 0;
    clear_unit_regions(p, u, region);
    for (i = 0; i < stage_out_count(p, u->last_stage); ++i) {
        uint32_t t = stage_output(p, u->last_stage, i);
        region[4u * t + ROW1] = rows < extent(p, t, 0) ? rows : extent(p, t, 0);
        region[4u * t + COL1] = u->two_d && cols < extent(p, t, 1) ? cols : extent(p, t, 1);
    }
    for (o = u->end_op; o-- > u->first_op;) {
        const int32_t *y = region + 4u * op_output(p, o, 0);
        const int transposed = op_type(p, o) == OP_CONV_TRANSPOSE;
        int32_t stride, span, pad;
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t x = op_input(p, o, k);
            int32_t need;
            op_axis(p, o, 0, &stride, &span, &pad);
            need = is_resample_op(op_type(p, o)) ? tgr_resize_band_rows(p, o, y[ROW1])
                                                 : input_length(y[ROW1], stride, span, u->chain, transposed);
            need = need < extent(p, x, 0) ? need : extent(p, x, 0);
            region[4u * x + ROW1] = need > region[4u * x + ROW1] ? need : region[4u * x + ROW1];
            op_axis(p, o, 1, &stride, &span, &pad);
            need = u->two_d ? input_length(y[COL1], stride, span, u->chain, transposed) : extent(p, x, 1);
            need = need < extent(p, x, 1) ? need : extent(p, x, 1);
            region[4u * x + COL1] = need > region[4u * x + COL1] ? need : region[4u * x + COL1];
        }
    }
    for (i = 0; i < stage_in_count(p, u->first_stage); ++i) {
        uint32_t t = stage_input(p, u->first_stage, i);
        total += align_up(region_bytes(p, t, region + 4u * t), TGR_TENSOR_ALIGN);
    }
    for (o = u->first_op; o < u->end_op; ++o) {
        uint32_t t = op_output(p, o, 0);
        total += align_up(region_bytes(p, t, region + 4u * t), TGR_TENSOR_ALIGN);
    }
    return total;
}

/* The region of every tensor of the unit for the output tile rows [r0, r1) x cols [c0, c1). */
static void tile_regions(const tgr_plan *p, const tile_unit *u, int32_t *region, int32_t r0, int32_t r1, int32_t c0,
                         int32_t c1)
{
    uint32_t i, o, k;
    clear_unit_regions(p, u, region);
    for (i = 0; i < stage_out_count(p, u->last_stage); ++i) {
        int32_t *r = region + 4u * stage_output(p, u->last_stage, i);
        r[ROW0] = r0;
        r[ROW1] = r1;
        r[COL0] = c0;
        r[COL1] = c1;
    }
    for (o = u->end_op; o-- > u->first_op;) {
        const int32_t *y = region + 4u * op_output(p, o, 0);
        if (y[ROW1] <= y[ROW0]) {
            continue;
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t x = op_input(p, o, k);
            int32_t *r = region + 4u * x;
            int32_t need[4];
            int axis;
            for (axis = 0; axis < 2; ++axis) {
                int32_t stride, span, pad;
                int32_t lo = y[2 * axis];
                int32_t hi = y[2 * axis + 1];
                int32_t first, end;
                op_axis(p, o, axis, &stride, &span, &pad);
                if (op_type(p, o) == OP_CONV_TRANSPOSE) {
                    /* The input rows whose taps reach output rows [lo, hi). */
                    first = floor_div(lo + pad - (span - 1), stride);
                    end = floor_div(hi - 1 + pad, stride) + 1;
                } else {
                    first = lo * stride - pad;
                    end = (hi - 1) * stride - pad + span;
                }
                if (axis == 1 && (is_resample_op(op_type(p, o)) || tgr_index_bandable_op(op_type(p, o)))) {
                    /* whole columns: 1-D stripes only (an indexing op maps its rows 1:1) */
                    first = 0;
                    end = extent(p, x, 1);
                } else if (is_resample_op(op_type(p, o))) {
                    tgr_resize_input_rows(p, o, lo, hi, &first, &end);
                }
                need[2 * axis] = first > 0 ? first : 0;
                need[2 * axis + 1] = end < extent(p, x, axis) ? end : extent(p, x, axis);
                if (extent(p, x, axis) == 1) {
                    /* A broadcasting operand: its single row/column serves every tile. */
                    need[2 * axis] = 0;
                    need[2 * axis + 1] = 1;
                }
            }
            if (r[ROW1] <= r[ROW0]) {
                memcpy(r, need, sizeof need);
            } else {
                r[ROW0] = need[ROW0] < r[ROW0] ? need[ROW0] : r[ROW0];
                r[ROW1] = need[ROW1] > r[ROW1] ? need[ROW1] : r[ROW1];
                r[COL0] = need[COL0] < r[COL0] ? need[COL0] : r[COL0];
                r[COL1] = need[COL1] > r[COL1] ? need[COL1] : r[COL1];
            }
        }
    }
}

/* ---- data movement --------------------------------------------------------------------- */

/* Copy a rows x bytes rectangle between buffers with the given row strides. */
static void copy_rect(uint8_t *dst, uint32_t dst_stride, const uint8_t *src, uint32_t src_stride, int32_t rows,
                      uint32_t bytes)
{
    int32_t r;
    for (r = 0; r < rows; ++r) {
        memcpy(dst + (uint32_t)r * dst_stride, src + (uint32_t)r * src_stride, bytes);
    }
}

/* Byte offset of (row, col) in a buffer holding `have` of tensor t. */
static uint32_t offset_in(const tgr_plan *p, uint32_t t, const int32_t *have, int32_t row, int32_t col)
{
    return ((uint32_t)(row - have[ROW0]) * (uint32_t)(have[COL1] - have[COL0]) + (uint32_t)(col - have[COL0])) *
           (uint32_t)pixel_bytes(p, t);
}

/* ---- the engine ---------------------------------------------------------------------------- */

/* The slow homes of the unit's inputs and outputs while tiles borrow their pointer slots. */
typedef struct unit_memory {
    tgr_slot in[TGR_MAX_STAGE_IO];
    tgr_slot out[TGR_MAX_STAGE_IO];
} unit_memory;

/* Whether a window of the member stage reaches past a tensor edge in this tile: such stages
 * recompute their whole tile instead of rolling their line buffers, as the reference does. */
static int stage_clamped(const tgr_plan *p, const tile_unit *u, const int32_t *region, uint32_t stage)
{
    uint32_t o, k;
    for (o = stage_op(p, stage, 0); o < u->end_op && o < stage_op(p, stage, 0) + stage_ops_count(p, stage); ++o) {
        const int32_t *y = region + 4u * op_output(p, o, 0);
        int32_t stride, span, pad;
        if (!is_window_op(op_type(p, o))) {
            continue;
        }
        op_axis(p, o, 0, &stride, &span, &pad);
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            if (y[ROW0] * stride - pad < 0 ||
                (y[ROW1] - 1) * stride - pad + span > extent(p, op_input(p, o, k), 0)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Line-buffer roll (docs/execution.md#chains-and-line-buffers): the rows of op o's output
 * that the previous tile already computed are moved to the front of its persistent buffer and
 * only the new rows are computed. Window kernels keep reading the whole input buffer; the output region and
 * pointer are narrowed to the new rows for the call. The numbers are those of recomputing. */
static tgr_status roll_and_run(tgr_session *s, const tile_unit *u, uint32_t o, const uint8_t *const *weights,
                               tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t y = op_output(p, o, 0);
    int32_t *r = s->region + 4u * y;
    const int32_t r0 = r[ROW0];
    const int32_t r1 = r[ROW1];
    const int32_t kept0 = s->held[2u * y];
    const int32_t kept1 = s->held[2u * y + 1u];
    const uint32_t row = (uint32_t)(r[COL1] - r[COL0]) * (uint32_t)pixel_bytes(p, y);
    const uint32_t stage = op_stage(p, u, o);
    uint8_t *const buffer = s->tensor_ptr[y];
    int32_t overlap = 0;
    if (kept0 <= r0 && r0 < kept1) {
        const int32_t rows[2] = {r0, kept1 < r1 ? kept1 : r1};
        overlap = rows[1] - r0;
        memmove(buffer, buffer + (uint32_t)(r0 - kept0) * row, (uint32_t)overlap * row);
        tgr_emit_region(s, TGR_EV_MOVE, TGR_POOL_FAST, stage, y, NONE16, (uint32_t)(buffer - s->fast.base),
                        (uint32_t)(buffer - s->fast.base) + (uint32_t)(r0 - kept0) * row, (uint32_t)overlap * row,
                        rows, NULL);
    }
    if (r0 + overlap < r1) {
        r[ROW0] = r0 + overlap;
        s->tensor_ptr[y] = buffer + (uint32_t)overlap * row;
        const tgr_status st = tgr_run_op(s, o, s->region, weights[stage - u->first_stage], err);
        s->tensor_ptr[y] = buffer;
        r[ROW0] = r0;
        if (st != TGR_OK) {
            return st;
        }
        tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
    }
    s->held[2u * y] = r0;
    s->held[2u * y + 1u] = r1;
    return TGR_OK;
}

static tgr_status run_tile(tgr_session *s, const tile_unit *u, const unit_memory *m, const int32_t tile[4],
                           uint32_t index, int persistent, const uint8_t *const *weights, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    int32_t *region = s->region;
    uint32_t i, o;
    tile_regions(p, u, region, tile[ROW0], tile[ROW1], tile[COL0], tile[COL1]);
    {
        const int32_t *first = region + 4u * stage_input(p, u->first_stage, 0);
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, u->first_stage, NONE16, index, 0u, 0u, 0u, first,
                        u->two_d ? first + COL0 : NULL);
    }
    s->counters.tiles += 1u;
    for (i = 0; i < stage_in_count(p, u->first_stage); ++i) {
        uint32_t t = stage_input(p, u->first_stage, i);
        const int32_t *r = region + 4u * t;
        uint32_t bytes = region_bytes(p, t, r);
        uint32_t row_stride = (uint32_t)width_of(p, t) * (uint32_t)pixel_bytes(p, t);
        uint32_t src = ((uint32_t)r[ROW0] * (uint32_t)width_of(p, t) + (uint32_t)r[COL0]) * (uint32_t)pixel_bytes(p, t);
        if (!tgr_place_bytes(s, TGR_POOL_FAST, t, bytes, s->fast.size, u->first_stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: tile input does not fit the fast arena", u->first_stage);
        }
        copy_rect(s->tensor_ptr[t], (uint32_t)(r[COL1] - r[COL0]) * (uint32_t)pixel_bytes(p, t),
                  m->in[i].ptr + src, row_stride, r[ROW1] - r[ROW0],
                  (uint32_t)(r[COL1] - r[COL0]) * (uint32_t)pixel_bytes(p, t));
        s->counters.load_bytes += bytes;
        tgr_emit_region(s, TGR_EV_LOAD, TGR_POOL_FAST, u->first_stage, t, NONE16,
                        (uint32_t)(s->tensor_ptr[t] - s->fast.base), (uint32_t)(m->in[i].ptr - s->slow.base) + src,
                        bytes, r, u->two_d ? r + COL0 : NULL);
    }
    for (o = u->first_op; o < u->end_op; ++o) {
        uint32_t y = op_output(p, o, 0);
        uint32_t bytes = region_bytes(p, y, region + 4u * y);
        if (bytes == 0u) {
            continue;
        }
        if (persistent) {
            if (align_up(bytes, TGR_TENSOR_ALIGN) > s->tensor_alloc[y]) {
                return tgr_fail(err, TGR_ERR_EXEC, "stage %u: tile of tensor %u outgrows its line buffer",
                                u->first_stage, y);
            }
            if (index > 0u && !stage_clamped(p, u, region, op_stage(p, u, o))) {
                tgr_status st = roll_and_run(s, u, o, weights, err);
                if (st != TGR_OK) {
                    return st;
                }
                continue;
            }
        } else if (!tgr_place_bytes(s, TGR_POOL_FAST, y, bytes, s->fast.size, op_stage(p, u, o))) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: tile of tensor %u does not fit the fast arena",
                            u->first_stage, y);
        }
        {
            tgr_status st = tgr_run_op(s, o, region, weights[op_stage(p, u, o) - u->first_stage], err);
            if (st != TGR_OK) {
                return st;
            }
        }
        tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, op_stage(p, u, o), NONE16, o, 0u, 0u, 0u);
        s->held[2u * y] = region[4u * y + ROW0];
        s->held[2u * y + 1u] = region[4u * y + ROW1];
    }
    for (i = 0; i < stage_out_count(p, u->last_stage); ++i) {
        uint32_t t = stage_output(p, u->last_stage, i);
        uint32_t channels = (uint32_t)pixel_bytes(p, t);
        uint32_t width = (uint32_t)(tile[COL1] - tile[COL0]) * channels;
        uint32_t dst = ((uint32_t)tile[ROW0] * (uint32_t)width_of(p, t) + (uint32_t)tile[COL0]) * channels;
        const int32_t *have = region + 4u * t;
        uint32_t bytes = width * (uint32_t)(tile[ROW1] - tile[ROW0]);
        copy_rect(m->out[i].ptr + dst, (uint32_t)width_of(p, t) * channels,
                  s->tensor_ptr[t] + offset_in(p, t, have, tile[ROW0], tile[COL0]),
                  (uint32_t)(have[COL1] - have[COL0]) * channels, tile[ROW1] - tile[ROW0], width);
        s->counters.spill_bytes += bytes;
        tgr_emit_region(s, TGR_EV_SPILL, TGR_POOL_SLOW, u->last_stage, t, NONE16,
                        (uint32_t)(m->out[i].ptr - s->slow.base) + dst,
                        (uint32_t)(s->tensor_ptr[t] - s->fast.base), bytes, tile, u->two_d ? tile + COL0 : NULL);
    }
    tgr_fast_reset(s, u->last_stage);
    return TGR_OK;
}

/* Output tile extent: tiled bands and chains search the largest that fits `limit`; 2-D tiles
 * come from the plan. Returns 0 rows when nothing fits. */
static void choose_tile(tgr_session *s, const tile_unit *u, uint32_t limit, int32_t *rows, int32_t *cols)
{
    const tgr_plan *p = s->plan;
    uint32_t out = stage_output(p, u->last_stage, 0);
    int32_t height = extent(p, out, 0);
    int32_t h;
    *cols = extent(p, out, 1);
    if (u->two_d) {
        const uint8_t *r = stage_tile_rec(p, u->first_stage);
        *rows = p->version >= 10u ? (int32_t)rd_u32(r + 8) : (int32_t)rd_u16(r + 2);
        *cols = p->version >= 10u ? (int32_t)rd_u32(r + 12) : (int32_t)rd_u16(r + 20);
        /* The plan's tile is authoritative; like the reference, check it against the arena,
         * not against tiled_peak_bytes. */
        if (tile_footprint(p, u, s->region, *rows, *cols) > s->fast.size - s->fast.floor) {
            *rows = 0;
        }
        return;
    }
    if (u->chain) {
        int32_t cap = (int32_t)rd_u16(stage_rec(p, u->first_stage) + 24);
        for (h = cap < height ? cap : height; h > 0; --h) {
            if (tile_footprint(p, u, s->region, h, *cols) <= limit) {
                break;
            }
        }
        *rows = h;
        return;
    }
    for (h = 1; h <= height && tile_footprint(p, u, s->region, h, *cols) <= limit; ++h) {
    }
    *rows = h - 1;
}

static tgr_status run_tiles(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                            const uint8_t *const *weights, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    tile_unit u;
    unit_memory m;
    int32_t rows, cols, tile[4];
    uint32_t i, o, index = 0;
    int persistent;
    uint32_t out;
    tgr_status st = TGR_OK;
    unit_of(p, stage, path, &u);
    if (u.chain) {
        limit = s->fast.size - s->fast.floor;
    }
    choose_tile(s, &u, limit, &rows, &cols);
    if (rows <= 0 || cols <= 0) {
        return tgr_fail(err, TGR_ERR_ARENA, "stage %u: no tile fits its %u fast bytes", stage, limit);
    }
    for (i = 0; i < stage_in_count(p, u.first_stage); ++i) {
        uint32_t t = stage_input(p, u.first_stage, i);
        m.in[i] = tgr_slot_of(s, t);
    }
    for (i = 0; i < stage_out_count(p, u.last_stage); ++i) {
        uint32_t t = stage_output(p, u.last_stage, i);
        st = tgr_place_slow(s, t, stage, err);
        if (st != TGR_OK) {
            return st;
        }
        m.out[i] = tgr_slot_of(s, t);
    }
    persistent = u.chain && (rd_u16(stage_rec(p, u.first_stage) + 26) & 1u) != 0u;
    if (persistent) {
        /* Line buffers: every op output at its interior tile size, kept across tiles. */
        tile_footprint(p, &u, s->region, rows, cols);
        for (o = u.first_op; o < u.end_op; ++o) {
            uint32_t y = op_output(p, o, 0);
            if (!tgr_place_bytes(s, TGR_POOL_FAST, y, region_bytes(p, y, s->region + 4u * y), s->fast.size, stage)) {
                return tgr_fail(err, TGR_ERR_ARENA, "stage %u: line buffers do not fit the fast arena", stage);
            }
        }
        s->fast.floor = s->fast.used;
    }
    out = stage_output(p, u.last_stage, 0);
    for (tile[ROW0] = 0; tile[ROW0] < extent(p, out, 0) && st == TGR_OK; tile[ROW0] = tile[ROW1]) {
        tile[ROW1] = tile[ROW0] + rows < extent(p, out, 0) ? tile[ROW0] + rows : extent(p, out, 0);
        for (tile[COL0] = 0; tile[COL0] < extent(p, out, 1) && st == TGR_OK; tile[COL0] = tile[COL1]) {
            tile[COL1] = tile[COL0] + cols < extent(p, out, 1) ? tile[COL0] + cols : extent(p, out, 1);
            st = run_tile(s, &u, &m, tile, index++, persistent, weights, err);
        }
    }
    /* Tiles borrowed the boundary tensors' slots; give them back their slow allocations. */
    for (i = 0; i < stage_in_count(p, u.first_stage); ++i) {
        uint32_t t = stage_input(p, u.first_stage, i);
        tgr_slot_put(s, t, m.in[i]);
    }
    for (i = 0; i < stage_out_count(p, u.last_stage); ++i) {
        uint32_t t = stage_output(p, u.last_stage, i);
        tgr_slot_put(s, t, m.out[i]);
    }
    return st;
}

/* ---- load-time checks ------------------------------------------------------------------ */

/* A tensor op o can read or write in stripes: channels-last of batch 1, [1, H, W, C], or
 * [1, L, C] for pointwise ops (no window kernel takes rank 3). An indexing op bands the height
 * (axis 1) of any tensor of rank 3 or 4, which is laid out the same way. */
static int stripe_tensor(const tgr_plan *p, uint32_t o, uint32_t t)
{
    uint32_t rank = tensor_ndim(p, t);
    return (rank == 4u || (rank == 3u && tgr_op_tiling(op_type(p, o)) == TILING_POINTWISE && op_type(p, o) != OP_CONCAT)) &&
           (!(tensor_flags(p, t) & TF_LINEAR) || tgr_index_bandable_op(op_type(p, o))) && tensor_dim(p, t, 0) == 1;
}

static int consumed_outside(const tgr_plan *p, uint32_t t, uint32_t first_op, uint32_t end_op)
{
    uint32_t o, k;
    if (tensor_flags(p, t) & TF_MODEL_OUTPUT) {
        return 1;
    }
    for (o = 0; o < p->num_ops; ++o) {
        if (o >= first_op && o < end_op) {
            continue;
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            if (op_input(p, o, k) == t) {
                return 1;
            }
        }
    }
    return 0;
}

static int stripes_fit(const tgr_plan *p, uint32_t first_stage, uint32_t last_stage, const char **why)
{
    uint32_t first_op = stage_op(p, first_stage, 0);
    uint32_t end_op = stage_op(p, last_stage, stage_ops_count(p, last_stage) - 1u) + 1u;
    uint32_t o, k, i, out0;
    int resampled = 0;
    for (o = first_op; o < end_op; ++o) {
        uint32_t type = op_type(p, o);
        /* As the compiler's Resize bands: one stage, nothing after the Resize that reads a second
         * operand, no stage output before it. */
        if (is_resample_op(type) && (first_stage != last_stage || resampled)) {
            *why = TGR_TEXT("a Resize stripes only as the one spatial op of a single stage");
            return 0;
        }
        for (k = first_op; is_resample_op(type) && k < o; ++k) {
            resampled |= consumed_outside(p, op_output(p, k, 0), first_op, end_op);
        }
        if (resampled && (is_resample_op(type) || op_num_inputs(p, o) > 1u)) {
            *why = TGR_TEXT("a Resize stripes only with pointwise ops that keep to its band");
            return 0;
        }
        resampled |= is_resample_op(type);
        if ((tgr_op_tiling(type) & TILING_SPATIAL) == 0u) {
            *why = TGR_TEXT("an op of this kind cannot run in a tiled stage");
            return 0;
        }
        if (!tgr_stripe_operands(p, o)) {
            *why = TGR_TEXT("an operand broadcasts in a way a stripe cannot offset");
            return 0;
        }
        if (tgr_op_alone(type) && (first_stage != last_stage || stage_ops_count(p, first_stage) != 1u)) {
            *why = TGR_TEXT("an op of this kind stripes only alone in its stage");
            return 0;
        }
        if (tgr_index_bandable_op(type) && tgr_index_band_problem(p, o, 1u) != NULL) {
            *why = TGR_TEXT("an indexing op stripes only along an axis it maps onto itself");
            return 0;
        }
        if (type == OP_CONCAT && op_concat_axis(p, o) != 3u) {
            *why = TGR_TEXT("a Concat runs in stripes only along channels");
            return 0;
        }
        if (op_num_outputs(p, o) != 1u || !stripe_tensor(p, o, op_output(p, o, 0))) {
            *why = TGR_TEXT("tiled stages need single-output ops on channels-last tensors of batch 1");
            return 0;
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            if (tensor_dtype(p, op_input(p, o, k)) == TGR_DTYPE_INT32) {
                /* stripes size and copy one byte per element */
                *why = TGR_TEXT("int32 values (run-time indices) run only on the normal and rows paths");
                return 0;
            }
            if (!stripe_tensor(p, o, op_input(p, o, k))) {
                *why = TGR_TEXT("tiled stages need channels-last tensors of batch 1");
                return 0;
            }
        }
        /* Inside a chain only the last stage's outputs leave the unit. */
        if (o < stage_op(p, last_stage, 0) && consumed_outside(p, op_output(p, o, 0), first_op, end_op)) {
            *why = TGR_TEXT("a chain member's output is needed outside the chain");
            return 0;
        }
    }
    for (i = first_stage + 1u; i <= last_stage; ++i) {
        for (k = 0; k < stage_in_count(p, i); ++k) {
            int32_t producer = -1;
            uint32_t t = stage_input(p, i, k);
            for (o = first_op; o < end_op && producer < 0; ++o) {
                producer = op_output(p, o, 0) == t ? (int32_t)o : -1;
            }
            if (producer < 0) {
                *why = TGR_TEXT("a chain member reads a tensor from outside the chain");
                return 0;
            }
        }
    }
    if (stage_in_count(p, first_stage) == 0u || stage_out_count(p, last_stage) == 0u) {
        *why = TGR_TEXT("a tiled unit needs inputs and outputs");
        return 0;
    }
    out0 = stage_output(p, last_stage, 0);
    for (i = 1; i < stage_out_count(p, last_stage); ++i) {
        uint32_t t = stage_output(p, last_stage, i);
        if (extent(p, t, 0) != extent(p, out0, 0) || extent(p, t, 1) != extent(p, out0, 1)) {
            *why = TGR_TEXT("the outputs of a tiled unit differ in height or width");
            return 0;
        }
    }
    return 1;
}

TGR_PATH_IMPL(TGR_PATH_TILED, run_tiles, stripes_fit);
TGR_PATH_IMPL(TGR_PATH_TILED_2D, run_tiles, stripes_fit);
TGR_PATH_IMPL(TGR_PATH_CHAIN, run_tiles, stripes_fit);
