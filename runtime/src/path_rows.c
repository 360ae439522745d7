/*
 * Band paths for stages that are not spatial stripes (tgrs-executor.md §2.3):
 *
 *  - rows:      row bands of every banded tensor of the stage (the row axis is axis 0 of a
 *               matrix, else axis 1 under a batch of 1); operands a product reads whole are
 *               counted when the band is sized but read in place from slow memory. A single
 *               in/out stage whose input dies here writes its output over the input's slow buffer.
 *  - transpose: one Transpose that swaps two adjacent axis groups, banded along one of them;
 *               one side of each band is a strided gather or scatter.
 *  - reshape:   one Reshape/Flatten band stage: rows move slow -> fast -> slow unchanged.
 */
#include "dispatch.h"
#include "exec.h"
#include "ops.h"
#include "pools.h"

#define OP_MATMUL 25u
#define OP_TRANSPOSE 29u

/* ---- shared -------------------------------------------------------------------------------- */

static uint32_t tile_record_u16(const tgr_plan *p, uint32_t stage, uint32_t v9_offset, uint32_t v10_offset)
{
    uint32_t tile = stage_tile_plan(p, stage);
    const uint8_t *r;
    if (tile == NONE16) {
        return 0u;
    }
    r = p->tile_plans + tile * (p->version >= 10u ? TILE_SIZE_V10 : TILE_SIZE_V9);
    return p->version >= 10u ? rd_u32(r + v10_offset) : rd_u16(r + v9_offset);
}

static uint32_t row_bytes(const tgr_plan *p, uint32_t t)
{
    return tensor_bytes(p, t) / (uint32_t)tensor_dim(p, t, tgr_row_axis(p, t));
}

static void emit_rows(tgr_session *s, uint8_t kind, uint8_t pool, uint32_t stage, uint32_t t, uint32_t offset,
                      uint32_t src, uint32_t bytes, int32_t r0, int32_t r1)
{
    const int32_t rows[2] = {r0, r1};
    tgr_emit_region(s, kind, pool, stage, t, NONE16, offset, src, bytes, rows, NULL);
}

/* ---- rows ---------------------------------------------------------------------------------- */

/* MatMul's second operand is read whole, in place. */
static int whole_operand(const tgr_plan *p, uint32_t o, uint32_t k)
{
    return op_type(p, o) == OP_MATMUL && k == 1u;
}

static int bandable(const tgr_plan *p, uint32_t t, int32_t rows)
{
    uint32_t axis = tgr_row_axis(p, t);
    return (axis == 0u || tensor_dim(p, t, 0) == 1) && tensor_dim(p, t, axis) == rows;
}

static int produced_in(const tgr_plan *p, uint32_t t, uint32_t first, uint32_t end)
{
    uint32_t o;
    for (o = first; o < end; ++o) {
        if (op_output(p, o, 0) == t) {
            return 1;
        }
    }
    return 0;
}

int tgr_rows_capable(const tgr_plan *p, uint32_t stage, const char **why)
{
    uint32_t first = stage_op(p, stage, 0);
    uint32_t end = first + stage_ops_count(p, stage);
    int32_t rows = tensor_dim(p, op_output(p, first, 0), tgr_row_axis(p, op_output(p, first, 0)));
    uint32_t o, k;
    for (o = first; o < end; ++o) {
        if (!tgr_op_rows(op_type(p, o)) || op_num_outputs(p, o) != 1u) {
            *why = "an op of this kind cannot run in row bands";
            return 0;
        }
        if (op_type(p, o) == OP_TRANSPOSE) {
            const uint8_t *perm = tgr_attr_find(p, o, ATTR_TRANSPOSE_PERM, NULL);
            if (tensor_ndim(p, op_input(p, o, 0)) < 3u || perm[0] != 0u || perm[1] != 1u) {
                *why = "a Transpose that moves the row axis cannot run in row bands";
                return 0;
            }
        }
        if (op_type(p, o) == OP_MATMUL && tensor_ndim(p, op_output(p, o, 0)) > 3u) {
            *why = "a batched matrix product cannot run in row bands";
            return 0;
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t t = op_input(p, o, k);
            if (whole_operand(p, o, k) ? produced_in(p, t, first, end) : !bandable(p, t, rows)) {
                *why = "the stage's tensors do not share one row axis";
                return 0;
            }
        }
        if (!bandable(p, op_output(p, o, 0), rows)) {
            *why = "the stage's tensors do not share one row axis";
            return 0;
        }
    }
    return 1;
}

/* Whether tensor t of the stage is read whole (not banded). */
static int read_whole(const tgr_plan *p, uint32_t stage, uint32_t t)
{
    uint32_t i, k;
    for (i = 0; i < stage_ops_count(p, stage); ++i) {
        uint32_t o = stage_op(p, stage, i);
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            if (op_input(p, o, k) == t && whole_operand(p, o, k)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Fast bytes of a band of `band` rows: every banded tensor's rows plus every whole operand. */
static uint32_t rows_footprint(const tgr_plan *p, uint32_t stage, int32_t band)
{
    uint32_t i, total = 0;
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        uint32_t t = stage_input(p, stage, i);
        total += align_up(read_whole(p, stage, t) ? tensor_bytes(p, t) : (uint32_t)band * row_bytes(p, t),
                          TGR_TENSOR_ALIGN);
    }
    for (i = 0; i < stage_ops_count(p, stage); ++i) {
        uint32_t t = op_output(p, stage_op(p, stage, i), 0);
        total += align_up((uint32_t)band * row_bytes(p, t), TGR_TENSOR_ALIGN);
    }
    return total;
}

/* A single in/out stage whose input dies here may write its output over the input. */
static int output_over_input(const tgr_plan *p, uint32_t stage)
{
    uint32_t in, out, later, k;
    if (stage_in_count(p, stage) != 1u || stage_out_count(p, stage) != 1u) {
        return 0;
    }
    in = stage_input(p, stage, 0);
    out = stage_output(p, stage, 0);
    if (tensor_bytes(p, in) != tensor_bytes(p, out) || row_bytes(p, in) != row_bytes(p, out) ||
        (tensor_flags(p, in) & (TF_MODEL_INPUT | TF_MODEL_OUTPUT)) || read_whole(p, stage, in)) {
        return 0;
    }
    for (later = stage + 1u; later < p->num_stages; ++later) {
        for (k = 0; k < stage_in_count(p, later); ++k) {
            if (stage_input(p, later, k) == in) {
                return 0;
            }
        }
    }
    return 1;
}

static void set_band(const tgr_plan *p, int32_t *region, uint32_t t, int32_t r0, int32_t r1)
{
    int32_t *r = region + 4u * t;
    r[0] = r0;
    r[1] = r1;
    r[2] = 0;
    r[3] = tensor_ndim(p, t) == 4u ? tensor_dim(p, t, 2) : 1;
}

tgr_status tgr_run_rows(tgr_session *s, uint32_t stage, uint32_t limit, const uint8_t *const *weights,
                        tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t first = stage_op(p, stage, 0);
    const uint32_t count = stage_ops_count(p, stage);
    const uint32_t out0 = op_output(p, first, 0);
    const int32_t rows = tensor_dim(p, out0, tgr_row_axis(p, out0));
    const uint32_t ceiling = s->fast.floor + limit;
    tgr_slot in[TGR_MAX_STAGE_IO], out[TGR_MAX_STAGE_IO];
    int32_t band, r0;
    uint32_t i, tile = 0;
    for (band = rows; band > 0 && rows_footprint(p, stage, band) > limit; --band) {
    }
    if (band == 0) {
        return tgr_fail(err, TGR_ERR_ARENA, "stage %u: no row band fits its %u fast bytes", stage, limit);
    }
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        in[i] = tgr_slot_of(s, stage_input(p, stage, i));
    }
    for (i = 0; i < stage_out_count(p, stage); ++i) {
        uint32_t t = stage_output(p, stage, i);
        if (output_over_input(p, stage)) {
            tgr_slot_put(s, t, in[0]);
        } else {
            tgr_status st = tgr_place_slow(s, t, stage, err);
            if (st != TGR_OK) {
                return st;
            }
        }
        out[i] = tgr_slot_of(s, t);
    }
    for (r0 = 0; r0 < rows; r0 += band) {
        const int32_t r1 = r0 + band < rows ? r0 + band : rows;
        const int32_t range[2] = {r0, r1};
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile++, 0u, 0u, 0u, range, NULL);
        s->counters.tiles += 1u;
        for (i = 0; i < stage_in_count(p, stage); ++i) {
            uint32_t t = stage_input(p, stage, i);
            uint32_t bytes = (uint32_t)(r1 - r0) * row_bytes(p, t);
            if (read_whole(p, stage, t)) {
                continue; /* read in place from slow memory */
            }
            set_band(p, s->region, t, r0, r1);
            if (!tgr_place_bytes(s, TGR_POOL_FAST, t, bytes, ceiling, stage)) {
                return tgr_fail(err, TGR_ERR_ARENA, "stage %u: row band does not fit", stage);
            }
            memcpy(s->tensor_ptr[t], in[i].ptr + (uint32_t)r0 * row_bytes(p, t), bytes);
            s->counters.load_bytes += bytes;
            emit_rows(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, t, (uint32_t)(s->tensor_ptr[t] - s->fast.base),
                      (uint32_t)(in[i].ptr - s->slow.base) + (uint32_t)r0 * row_bytes(p, t), bytes, r0, r1);
        }
        for (i = 0; i < count; ++i) {
            uint32_t o = first + i;
            uint32_t y = op_output(p, o, 0);
            set_band(p, s->region, y, r0, r1);
            if (!tgr_place_bytes(s, TGR_POOL_FAST, y, (uint32_t)(r1 - r0) * row_bytes(p, y), ceiling, stage)) {
                return tgr_fail(err, TGR_ERR_ARENA, "stage %u: row band does not fit", stage);
            }
            tgr_dispatch(p, o, s->tensor_ptr, s->region, weights[0]);
            tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
        }
        for (i = 0; i < stage_out_count(p, stage); ++i) {
            uint32_t t = stage_output(p, stage, i);
            uint32_t bytes = (uint32_t)(r1 - r0) * row_bytes(p, t);
            memcpy(out[i].ptr + (uint32_t)r0 * row_bytes(p, t), s->tensor_ptr[t], bytes);
            s->counters.spill_bytes += bytes;
            emit_rows(s, TGR_EV_SPILL, TGR_POOL_SLOW, stage, t,
                      (uint32_t)(out[i].ptr - s->slow.base) + (uint32_t)r0 * row_bytes(p, t),
                      (uint32_t)(s->tensor_ptr[t] - s->fast.base), bytes, r0, r1);
        }
        tgr_fast_reset(s, stage);
    }
    tgr_fast_release(s, stage);
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        tgr_slot_put(s, stage_input(p, stage, i), in[i]);
    }
    for (i = 0; i < stage_out_count(p, stage); ++i) {
        tgr_slot_put(s, stage_output(p, stage, i), out[i]);
    }
    return TGR_OK;
}

/* ---- transpose ----------------------------------------------------------------------------- */

/* A single Transpose whose stored permutation is [prefix][A][B][suffix] -> [prefix][B][A][suffix]
 * with a prefix of one element: its extents as rows (A), cols (B) and the suffix block. */
int tgr_transpose_shape(const tgr_plan *p, uint32_t stage, uint32_t *rows, uint32_t *cols, uint32_t *block)
{
    uint32_t o, in, rank, k, lead = 0, split, b_len = 0, b_end;
    const uint8_t *perm;
    if (stage_ops_count(p, stage) != 1u) {
        return 0;
    }
    o = stage_op(p, stage, 0);
    if (op_type(p, o) != OP_TRANSPOSE) {
        return 0;
    }
    in = op_input(p, o, 0);
    rank = tensor_ndim(p, in);
    perm = tgr_attr_find(p, o, ATTR_TRANSPOSE_PERM, NULL);
    while (lead < rank && perm[lead] == lead) {
        ++lead;
    }
    if (lead == rank || perm[lead] <= lead) {
        return 0; /* identity, or not a swap of two groups */
    }
    /* Output axes from `lead` on: group B = input [split, b_end), then A = [lead, split), then
     * the untouched suffix [b_end, rank). */
    split = perm[lead];
    while (lead + b_len < rank && perm[lead + b_len] == split + b_len) {
        ++b_len;
    }
    b_end = split + b_len;
    for (k = 0; k < split - lead; ++k) {
        if (perm[lead + b_len + k] != lead + k) {
            return 0;
        }
    }
    for (k = b_end; k < rank; ++k) {
        if (perm[k] != k) {
            return 0;
        }
    }
    *rows = 1u;
    *cols = 1u;
    *block = 1u;
    for (k = 0; k < rank; ++k) {
        uint32_t extent = (uint32_t)tensor_dim(p, in, k);
        if (k < lead && extent != 1u) {
            return 0; /* a leading batch would make every band strided */
        }
        if (k >= lead && k < split) {
            *rows *= extent;
        } else if (k >= split && k < b_end) {
            *cols *= extent;
        } else if (k >= b_end) {
            *block *= extent;
        }
    }
    return 1;
}

/* Swap the two leading axes of a [n][m][block] buffer into [m][n][block]. */
static void swap_axes(const int8_t *in, uint32_t n, uint32_t m, uint32_t block, int8_t *out)
{
    uint32_t i, j;
    for (i = 0; i < n; ++i) {
        for (j = 0; j < m; ++j) {
            memcpy(out + ((uint64_t)j * n + i) * block, in + ((uint64_t)i * m + j) * block, block);
        }
    }
}

tgr_status tgr_run_transpose(tgr_session *s, uint32_t stage, uint32_t limit, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t o = stage_op(p, stage, 0);
    const uint32_t x = op_input(p, o, 0);
    const uint32_t y = op_output(p, o, 0);
    const uint32_t ceiling = s->fast.floor + limit;
    uint32_t rows, cols, block, extent, unit, band, b0, tile = 0;
    const tgr_slot slow_x = tgr_slot_of(s, x);
    tgr_slot slow_y;
    int on_cols;
    tgr_status st;
    tgr_transpose_shape(p, stage, &rows, &cols, &block);
    on_cols = p->version >= 9u ? (int)(tile_record_u16(p, stage, 22u, 2u) & 1u) : cols >= rows;
    extent = on_cols ? cols : rows;
    unit = (on_cols ? rows : cols) * block;
    for (band = extent; band > 0u && 2u * align_up(band * unit, TGR_TENSOR_ALIGN) > limit; --band) {
    }
    if (band == 0u) {
        return tgr_fail(err, TGR_ERR_ARENA, "stage %u: no transpose band fits its %u fast bytes", stage, limit);
    }
    st = tgr_place_slow(s, y, stage, err);
    if (st != TGR_OK) {
        return st;
    }
    slow_y = tgr_slot_of(s, y);
    for (b0 = 0; b0 < extent; b0 += band) {
        const uint32_t n = b0 + band < extent ? band : extent - b0;
        const uint32_t bytes = n * unit;
        /* The band as input rows x cols, and as the output's (transposed) rows x cols. */
        const int32_t in_rows[2] = {on_cols ? 0 : (int32_t)b0, on_cols ? (int32_t)rows : (int32_t)(b0 + n)};
        const int32_t in_cols[2] = {on_cols ? (int32_t)b0 : 0, on_cols ? (int32_t)(b0 + n) : (int32_t)cols};
        const uint32_t in_offset = on_cols ? b0 * block : b0 * cols * block;
        const uint32_t out_offset = on_cols ? b0 * rows * block : b0 * block;
        uint32_t i;
        int8_t *in_band, *out_band;
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile++, 0u, 0u, 0u, in_rows, in_cols);
        s->counters.tiles += 1u;
        if (!tgr_place_bytes(s, TGR_POOL_FAST, x, bytes, ceiling, stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: transpose band does not fit", stage);
        }
        in_band = (int8_t *)s->tensor_ptr[x];
        if (on_cols) {
            for (i = 0; i < rows; ++i) { /* gather the band's columns of every row */
                memcpy(in_band + (uint64_t)i * n * block, slow_x.ptr + ((uint64_t)i * cols + b0) * block, n * block);
            }
        } else {
            memcpy(in_band, slow_x.ptr + in_offset, bytes);
        }
        s->counters.load_bytes += bytes;
        tgr_emit_region(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, x, NONE16, (uint32_t)((uint8_t *)in_band - s->fast.base),
                        (uint32_t)(slow_x.ptr - s->slow.base) + in_offset, bytes, in_rows, in_cols);
        if (!tgr_place_bytes(s, TGR_POOL_FAST, y, bytes, ceiling, stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: transpose band does not fit", stage);
        }
        out_band = (int8_t *)s->tensor_ptr[y];
        if (on_cols) {
            swap_axes(in_band, rows, n, block, out_band);
            memcpy(slow_y.ptr + out_offset, out_band, bytes);
        } else {
            swap_axes(in_band, n, cols, block, out_band);
            for (i = 0; i < cols; ++i) { /* scatter the band into every output row */
                memcpy(slow_y.ptr + ((uint64_t)i * rows + b0) * block, out_band + (uint64_t)i * n * block, n * block);
            }
        }
        tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
        s->counters.spill_bytes += bytes;
        tgr_emit_region(s, TGR_EV_SPILL, TGR_POOL_SLOW, stage, y, NONE16, (uint32_t)(slow_y.ptr - s->slow.base) + out_offset,
                        (uint32_t)((uint8_t *)out_band - s->fast.base), bytes, in_cols, in_rows);
        tgr_fast_reset(s, stage);
    }
    tgr_fast_release(s, stage);
    tgr_slot_put(s, x, slow_x);
    tgr_slot_put(s, y, slow_y);
    return TGR_OK;
}

/* ---- reshape ------------------------------------------------------------------------------- */

int tgr_reshape_band_shape(const tgr_plan *p, uint32_t stage)
{
    uint32_t o, in, out;
    if (stage_ops_count(p, stage) != 1u || stage_tile_plan(p, stage) == NONE16) {
        return 0;
    }
    o = stage_op(p, stage, 0);
    if (op_type(p, o) != OP_RESHAPE && op_type(p, o) != OP_FLATTEN) {
        return 0;
    }
    in = op_input(p, o, 0);
    out = op_output(p, o, 0);
    return tgr_same_qparams(p, in, out) && tensor_bytes(p, in) == tensor_bytes(p, out) &&
           stage_input(p, stage, 0) == in && tile_record_u16(p, stage, 2u, 4u) != 0u &&
           (tgr_row_axis(p, in) == 0u || tensor_dim(p, in, 0) == 1);
}

tgr_status tgr_run_reshape(tgr_session *s, uint32_t stage, uint32_t limit, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t o = stage_op(p, stage, 0);
    const uint32_t x = op_input(p, o, 0);
    const uint32_t y = op_output(p, o, 0);
    const uint32_t ceiling = s->fast.floor + limit;
    const uint32_t rows = (uint32_t)tensor_dim(p, x, tgr_row_axis(p, x));
    const uint32_t band = tile_record_u16(p, stage, 2u, 4u);
    const uint32_t in_row = row_bytes(p, x);
    const uint32_t out_row = row_bytes(p, y);
    const tgr_slot slow_x = tgr_slot_of(s, x);
    tgr_slot slow_y;
    uint32_t r0, tile = 0;
    tgr_status st = tgr_place_slow(s, y, stage, err);
    if (st != TGR_OK) {
        return st;
    }
    slow_y = tgr_slot_of(s, y);
    for (r0 = 0; r0 < rows; r0 += band) {
        const uint32_t r1 = r0 + band < rows ? r0 + band : rows;
        const uint32_t bytes = (r1 - r0) * in_row;
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile++, 0u, 0u, 0u, NULL, NULL);
        s->counters.tiles += 1u;
        if (!tgr_place_bytes(s, TGR_POOL_FAST, x, bytes, ceiling, stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: reshape band does not fit", stage);
        }
        memcpy(s->tensor_ptr[x], slow_x.ptr + r0 * in_row, bytes);
        s->counters.load_bytes += bytes;
        emit_rows(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, x, (uint32_t)(s->tensor_ptr[x] - s->fast.base),
                  (uint32_t)(slow_x.ptr - s->slow.base) + r0 * in_row, bytes, (int32_t)r0, (int32_t)r1);
        /* The same bytes, now as rows of the output: no kernel runs. */
        memcpy(slow_y.ptr + r0 * in_row, s->tensor_ptr[x], bytes);
        s->counters.spill_bytes += bytes;
        emit_rows(s, TGR_EV_SPILL, TGR_POOL_SLOW, stage, y, (uint32_t)(slow_y.ptr - s->slow.base) + r0 * in_row,
                  (uint32_t)(s->tensor_ptr[x] - s->fast.base), bytes, (int32_t)(r0 * in_row / out_row),
                  (int32_t)(r1 * in_row / out_row));
        tgr_fast_reset(s, stage);
    }
    tgr_fast_release(s, stage);
    tgr_slot_put(s, x, slow_x);
    return TGR_OK;
}
