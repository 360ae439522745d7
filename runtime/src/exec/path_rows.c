/*
 * Band paths for stages that are not spatial stripes (docs/execution.md#row-band-path):
 *
 *  - rows:      bands of every banded tensor of the stage along one band axis (stage_band);
 *               operands a product reads whole are counted when the band is sized but read in
 *               place from slow memory. A single in/out stage whose input dies here writes its
 *               output over the input's slow buffer.
 *  - transpose: one Transpose that swaps two adjacent axis groups, banded along one of them;
 *               one side of each band is a strided gather or scatter.
 *  - reshape:   one Reshape/Flatten band stage: rows move slow -> fast -> slow unchanged.
 */
#include "exec/exec.h"
#include "memory/pools.h"
#include "ops/ops.h"
#include "ops/ops_registry.h"

/* ---- shared -------------------------------------------------------------------------------- */

static uint32_t tile_record_u16(const tgr_plan *p, uint32_t stage, uint32_t v9_offset, uint32_t v10_offset)
{
    const uint8_t *r = stage_tile_rec(p, stage);
    if (r == NULL) {
        return 0u;
    }
    return p->version >= 10u ? rd_u32(r + v10_offset) : rd_u16(r + v9_offset);
}

/* Bytes of one step along `axis` of t, over all of its outer (preceding) axes. */
static uint32_t row_bytes(const tgr_plan *p, uint32_t t, uint32_t axis)
{
    return tensor_bytes(p, t) / (uint32_t)tensor_dim(p, t, axis);
}

/* Bytes of one step along `axis` under a single outer index: the length of one contiguous run
 * of a band, which has one run per outer index. */
static uint32_t run_step(const tgr_plan *p, uint32_t t, uint32_t axis)
{
    uint32_t k, outer = 1u;
    for (k = 0; k < axis; ++k) {
        outer *= (uint32_t)tensor_dim(p, t, k);
    }
    return row_bytes(p, t, axis) / outer;
}

/* Copy `count` runs of `run` bytes: run q goes from src + q * src_step to dst + q * dst_step. */
static void copy_runs(uint8_t *dst, uint64_t dst_step, const uint8_t *src, uint64_t src_step, uint32_t count,
                      uint32_t run)
{
    uint32_t q;
    for (q = 0; q < count; ++q) {
        memcpy(dst + q * dst_step, src + q * src_step, run);
    }
}

static void emit_rows(tgr_session *s, uint8_t kind, uint8_t pool, uint32_t stage, uint32_t t, uint32_t offset,
                      uint32_t src, uint32_t bytes, int32_t r0, int32_t r1)
{
    const int32_t rows[2] = {r0, r1};
    tgr_emit_region(s, kind, pool, stage, t, NONE16, offset, src, bytes, rows, NULL);
}

/* ---- rows ---------------------------------------------------------------------------------- */

/* The reductions, and CumSum and ArgMax/ArgMin, banded like them along an axis they do not run
 * along. */
static int is_reduction(uint32_t type)
{
    return type == OP_REDUCE_MEAN || type == OP_REDUCE_MAX || type == OP_REDUCE_MIN || type == OP_REDUCE_SUM ||
           type == OP_CUMSUM || type == OP_ARG_MAX || type == OP_ARG_MIN || type == OP_REDUCE_ALL;
}

/* A stage of one op that the compiler bands along an axis of its choosing (an independent band):
 * its region names that axis explicitly (TGR_REGION_ALONG), so any axis will do. */
static int lone_free_axis_op(const tgr_plan *p, uint32_t stage)
{
    uint32_t type = op_type(p, stage_op(p, stage, 0));
    return stage_ops_count(p, stage) == 1u && (type == OP_TRANSPOSE || type == OP_CONCAT || type == OP_SPLIT ||
                                               type == OP_PAD || is_reduction(type) || tgr_index_bandable_op(type));
}

/* Where tensor t of lone op o has the band that runs along `axis` of o's input. An indexing op
 * banded along its input's last axis bands every tensor along its own last axis (a Gather or
 * GatherND may change the rank); an ArgMax/ArgMin dropping its axis shifts the axes after it;
 * everything else bands the same axis of every tensor. */
static uint32_t tensor_axis(const tgr_plan *p, uint32_t o, uint32_t t, uint32_t axis)
{
    if (tgr_index_table_op(p, o)) {
        return axis; /* the index axes lead the output */
    }
    if (tgr_index_bandable_op(op_type(p, o)) && axis + 1u == tensor_ndim(p, op_input(p, o, 0))) {
        return tensor_ndim(p, t) - 1u;
    }
    if (tgr_drops_reduced_axis(p, o) && t == op_output(p, o, 0) && axis > tgr_attr_find(p, o, ATTR_AXES, NULL)[0]) {
        return axis - 1u;
    }
    return axis;
}

/* The band axis of tensor t in the stage (tensor_axis for a lone op). */
static uint32_t axis_of(const tgr_plan *p, uint32_t stage, uint32_t t, uint32_t axis)
{
    return lone_free_axis_op(p, stage) ? tensor_axis(p, stage_op(p, stage, 0), t, axis) : axis;
}

static uint32_t extent_product(const tgr_plan *p, uint32_t t, uint32_t from, uint32_t to)
{
    uint32_t total = 1u;
    for (; from < to; ++from) {
        total *= (uint32_t)tensor_dim(p, t, from);
    }
    return total;
}

/* Whether every input and output of op o has `rows` steps (more than one) along its band axis
 * (tensor_axis), with `outer` (when not 0) as the product of the extents before it, and the op
 * may be banded there. Tensors keep the rank of the first input, except where tensor_axis moves
 * the band: an ArgMax/ArgMin dropping its axis, an indexing op banded along its last axis. */
static int op_bands_along(const tgr_plan *p, uint32_t o, uint32_t axis, int32_t rows, uint32_t outer)
{
    uint32_t rank = tensor_ndim(p, op_input(p, o, 0));
    int other_ranks = tgr_drops_reduced_axis(p, o) || tgr_index_table_op(p, o) ||
                      (tgr_index_bandable_op(op_type(p, o)) && axis + 1u == rank);
    uint32_t k;
    if (rows <= 1 || axis >= rank || tgr_built_in_band_problem(p, o, axis) != NULL) {
        return 0;
    }
    for (k = 0; k < op_num_inputs(p, o) + op_num_outputs(p, o); ++k) {
        uint32_t t = k < op_num_inputs(p, o) ? op_input(p, o, k) : op_output(p, o, k - op_num_inputs(p, o));
        uint32_t along = tensor_axis(p, o, t, axis);
        if (k < op_num_inputs(p, o) && tgr_index_operand(p, o, k)) {
            continue; /* read whole */
        }
        if ((tensor_ndim(p, t) != rank && !other_ranks) || along >= tensor_ndim(p, t) ||
            tensor_dim(p, t, along) != rows || (outer != 0u && extent_product(p, t, 0u, along) != outer)) {
            return 0;
        }
    }
    return 1;
}

/* The axis the compiler bands a lone op along (partition_spatial's independent bands): for a
 * reduction the first that works of the matrix row axis (model axis order), axis 1, the outermost
 * axis longer than 1 and the last axis; for the movement ops the longest axis that works, the
 * first such on a tie. Returns 0 when there is none. */
static int free_band_axis(const tgr_plan *p, uint32_t o, uint32_t *axis, int32_t *rows)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t k;
    *rows = 0;
    if (is_reduction(op_type(p, o))) {
        /* The compiler's order: the matrix rows (same batch before them), the height (same extent
         * before it), the leading axis (nothing before it), the last axis. The first two keep the
         * output's rank, so an ArgMax/ArgMin dropping its axis skips them. */
        uint32_t candidates[4], outer[4];
        const int keeps_rank = !tgr_drops_reduced_axis(p, o);
        candidates[0] = keeps_rank && (rank == 2u || (rank >= 3u && tgr_model_order(p, in))) ? rank - 2u : rank;
        candidates[1] = keeps_rank && (rank == 3u || rank == 4u) ? 1u : rank;
        candidates[2] = tgr_band_axis(p, in);
        candidates[3] = rank - 1u;
        for (k = 0; k < 4u; ++k) {
            outer[k] = k == 2u ? 1u : (k < 2u && candidates[k] < rank ? extent_product(p, in, 0u, candidates[k]) : 0u);
        }
        for (k = 0; k < 4u; ++k) {
            if (candidates[k] < rank &&
                op_bands_along(p, o, candidates[k], tensor_dim(p, in, candidates[k]), outer[k])) {
                *axis = candidates[k];
                *rows = tensor_dim(p, in, *axis);
                return 1;
            }
        }
        return 0;
    }
    for (k = 0; k < rank; ++k) {
        if (tensor_dim(p, in, k) > *rows && op_bands_along(p, o, k, tensor_dim(p, in, k), 0u)) {
            *axis = k;
            *rows = tensor_dim(p, in, k);
        }
    }
    return *rows > 1;
}

/* A batch of matrices to a row band: rank 2, or higher in the model's own axis order. */
static int matrix_view(const tgr_plan *p, uint32_t t)
{
    return tensor_ndim(p, t) == 2u || (tensor_ndim(p, t) > 2u && (tensor_flags(p, t) & TF_LINEAR) != 0u);
}

/* The axis a lone indexing op is banded along, in the compiler's order (partition_spatial): the
 * matrix row axis when every tensor is a batch of matrices; none when its height (axis 1 of rank
 * 3 or 4) can be banded, since such stages run as spatial stripes (path_tiles.c); else its
 * leading axis (the first longer than 1), else its last axis. Returns 0 without a row band. */
static int indexing_band_axis(const tgr_plan *p, uint32_t o, uint32_t *axis, int32_t *rows)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t k, leading = tgr_band_axis(p, in);
    int matrices = rank >= 2u;
    int run_time_indices = tgr_index_table_op(p, o); /* a table lookup reads no data tensor to stripe */
    for (k = 0; k < op_num_inputs(p, o) + 1u; ++k) {
        if (k < op_num_inputs(p, o) && tgr_index_operand(p, o, k)) {
            run_time_indices = 1; /* read whole */
            continue;
        }
        matrices &= matrix_view(p, k < op_num_inputs(p, o) ? op_input(p, o, k) : op_output(p, o, 0));
    }
    /* The matrix rows and the height keep their batch (the product of the axes before them),
     * the leading axis has none before it, the last axis may have any. With run-time indices
     * the height is a row band too: such an op does not stripe. */
    if (matrices &&
        op_bands_along(p, o, rank - 2u, tensor_dim(p, in, rank - 2u), extent_product(p, in, 0u, rank - 2u))) {
        *axis = rank - 2u;
    } else if ((rank == 3u || rank == 4u) &&
               op_bands_along(p, o, 1u, tensor_dim(p, in, 1), (uint32_t)tensor_dim(p, in, 0))) {
        if (!run_time_indices) {
            return 0;
        }
        *axis = 1u;
    } else if (rank > 0u && op_bands_along(p, o, leading, tensor_dim(p, in, leading), 1u)) {
        *axis = leading;
    } else if (rank > 0u && op_bands_along(p, o, rank - 1u, tensor_dim(p, in, rank - 1u), 0u)) {
        *axis = rank - 1u;
    } else {
        return 0;
    }
    *rows = tensor_dim(p, in, *axis);
    return 1;
}

/* What one step along `axis` of binary op o costs the compiler when it ranks band axes: the
 * bytes of each distinct tensor per step (a whole operand where it is 1 long), aligned as the
 * compiler aligns (32, whatever TGR_TENSOR_ALIGN is). */
static uint32_t step_cost(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    uint32_t out = op_output(p, o, 0);
    uint32_t total = align_up(tensor_bytes(p, out) / (uint32_t)tensor_dim(p, out, axis), 32u);
    uint32_t k;
    for (k = 0; k < op_num_inputs(p, o); ++k) {
        uint32_t t = op_input(p, o, k);
        uint32_t extent = tensor_ndim(p, t) == tensor_ndim(p, out) ? (uint32_t)tensor_dim(p, t, axis) : 1u;
        if (t != out && (k == 0u || t != op_input(p, o, 0))) {
            total += align_up(tensor_bytes(p, t) / extent, 32u);
        }
    }
    return total;
}

/* A lone binary op (or Where) whose operands differ in shape, or that touches a channels-last
 * tensor: the compiler bands it along the axis of least step cost, then the longest, then the
 * first. */
static int broadcast_band_axis(const tgr_plan *p, uint32_t o, uint32_t *axis, int32_t *rows)
{
    uint32_t out = op_output(p, o, 0);
    uint32_t k, best_cost = 0;
    int uneven = !tgr_model_order(p, out);
    for (k = 0; k < op_num_inputs(p, o); ++k) {
        uneven |= !tgr_same_shape(p, op_input(p, o, k), out);
    }
    if ((!tgr_binary_elementwise(op_type(p, o)) && op_type(p, o) != OP_WHERE) || !uneven) {
        return 0;
    }
    *rows = 0;
    for (k = 0; k < tensor_ndim(p, out); ++k) {
        uint32_t cost = step_cost(p, o, k);
        if (tensor_dim(p, out, k) > 1 &&
            (*rows == 0 || cost < best_cost || (cost == best_cost && tensor_dim(p, out, k) > *rows))) {
            *axis = k;
            *rows = tensor_dim(p, out, k);
            best_cost = cost;
        }
    }
    return *rows > 1;
}

/* The stage's band axis and its extent: a lone op's independent axis (free_band_axis,
 * broadcast_band_axis), else the row axis of a matrix pipeline: the second last axis of the first
 * op's output (the last two axes are the matrix, everything before them batch). */
static void stage_band(const tgr_plan *p, uint32_t stage, uint32_t *axis, int32_t *rows)
{
    uint32_t o = stage_op(p, stage, 0);
    uint32_t out = op_output(p, o, 0);
    if (lone_free_axis_op(p, stage) && tgr_index_bandable_op(op_type(p, o))) {
        if (!indexing_band_axis(p, o, axis, rows)) {
            *axis = 0u;
            *rows = 0;
        }
        return;
    }
    if (lone_free_axis_op(p, stage) && free_band_axis(p, o, axis, rows)) {
        return;
    }
    if (stage_ops_count(p, stage) == 1u && broadcast_band_axis(p, o, axis, rows)) {
        return;
    }
    *axis = tensor_ndim(p, out) >= 2u ? tensor_ndim(p, out) - 2u : 0u;
    *rows = tensor_dim(p, out, *axis);
}

/* Operands read whole, in place from slow memory, and counted at full size when the band is
 * sized: MatMul's second operand, run-time indices and starts, and an operand that broadcasts
 * along the band axis. */
static int whole_operand(const tgr_plan *p, uint32_t o, uint32_t k, uint32_t axis, int32_t rows)
{
    uint32_t t = op_input(p, o, k);
    if (op_type(p, o) == OP_MATMUL) {
        return k == 1u;
    }
    if (tgr_index_operand(p, o, k)) {
        return 1;
    }
    return rows > 1 && axis < tensor_ndim(p, t) && tensor_dim(p, t, axis) == 1 &&
           tgr_op_tiling(op_type(p, o)) == TILING_POINTWISE;
}

/* A region names a band of rank-4 tensor along H (rows) or W (cols), and of any other tensor only
 * along its outermost axis longer than 1 (tgr_row_axis), unless it names its axis (a lone op). */
static int bandable(const tgr_plan *p, uint32_t stage, uint32_t t, uint32_t axis, int32_t rows)
{
    axis = axis_of(p, stage, t, axis);
    return rows > 1 && axis < tensor_ndim(p, t) && tensor_dim(p, t, axis) == rows &&
           (lone_free_axis_op(p, stage) ||
            (tensor_ndim(p, t) == 4u ? axis == 1u || axis == 2u : tgr_band_axis(p, t) == axis));
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

static int rows_fit(const tgr_plan *p, uint32_t stage, uint32_t last, const char **why)
{
    uint32_t first = stage_op(p, stage, 0);
    uint32_t end = first + stage_ops_count(p, stage);
    uint32_t axis, o, k;
    int32_t rows;
    (void)last; /* one stage */
    stage_band(p, stage, &axis, &rows);
    if (rows <= 1) {
        *why = TGR_TEXT("the stage has no axis to band");
        return 0;
    }
    for (o = first; o < end; ++o) {
        const char *problem;
        /* several outputs: a Split's pieces, an SVDF's output and next state */
        if (!tgr_op_rows(op_type(p, o)) ||
            (op_num_outputs(p, o) != 1u && op_type(p, o) != OP_SPLIT && op_type(p, o) != OP_SVDF)) {
            *why = TGR_TEXT("an op of this kind cannot run in row bands");
            return 0;
        }
        problem = tgr_built_in_band_problem(p, o, axis);
        if (problem != NULL) {
            *why = problem;
            return 0;
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t t = op_input(p, o, k);
            if (whole_operand(p, o, k, axis, rows) ? produced_in(p, t, first, end) : !bandable(p, stage, t, axis, rows)) {
                *why = TGR_TEXT("the stage's tensors do not share one row axis");
                return 0;
            }
        }
        for (k = 0; k < op_num_outputs(p, o); ++k) {
            if (!bandable(p, stage, op_output(p, o, k), axis, rows)) {
                *why = TGR_TEXT("the stage's tensors do not share one row axis");
                return 0;
            }
        }
    }
    return 1;
}

/* Whether tensor t of the stage is read whole (not banded) in bands along `axis`. */
static int read_whole(const tgr_plan *p, uint32_t stage, uint32_t t, uint32_t axis, int32_t rows)
{
    uint32_t i, k;
    for (i = 0; i < stage_ops_count(p, stage); ++i) {
        uint32_t o = stage_op(p, stage, i);
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            if (op_input(p, o, k) == t && whole_operand(p, o, k, axis, rows)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Fast bytes of a band of `band` of the stage's `rows` steps along `axis`: every banded tensor's
 * steps plus every whole operand. */
static uint32_t rows_footprint(const tgr_plan *p, uint32_t stage, uint32_t axis, int32_t rows, int32_t band)
{
    uint32_t i, total = 0;
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        uint32_t t = stage_input(p, stage, i);
        total += align_up(read_whole(p, stage, t, axis, rows) ? tensor_bytes(p, t)
                                                              : (uint32_t)band * row_bytes(p, t, axis_of(p, stage, t, axis)),
                          TGR_TENSOR_ALIGN);
    }
    for (i = 0; i < stage_ops_count(p, stage); ++i) {
        uint32_t o = stage_op(p, stage, i);
        uint32_t k;
        for (k = 0; k < op_num_outputs(p, o); ++k) {
            uint32_t y = op_output(p, o, k);
            total += align_up((uint32_t)band * row_bytes(p, y, axis_of(p, stage, y, axis)), TGR_TENSOR_ALIGN);
        }
    }
    return total;
}

/* A single in/out stage whose input dies here may write its output over the input. */
static int output_over_input(const tgr_plan *p, uint32_t stage, uint32_t axis, int32_t rows)
{
    uint32_t in, out, later, k;
    /* Of the lone ops, like the reference, only one banded as a batch of matrices (not a
     * Transpose, which may reorder the axes around its band). */
    if (stage_in_count(p, stage) != 1u || stage_out_count(p, stage) != 1u ||
        (lone_free_axis_op(p, stage) && (op_type(p, stage_op(p, stage, 0)) == OP_TRANSPOSE ||
                                         !matrix_view(p, stage_input(p, stage, 0)) ||
                                         axis + 2u != tensor_ndim(p, stage_input(p, stage, 0))))) {
        return 0;
    }
    in = stage_input(p, stage, 0);
    out = stage_output(p, stage, 0);
    if (tensor_bytes(p, in) != tensor_bytes(p, out) || run_step(p, in, axis) != run_step(p, out, axis) ||
        (tensor_flags(p, in) & (TF_MODEL_INPUT | TF_MODEL_OUTPUT)) || read_whole(p, stage, in, axis, rows)) {
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

/* Region of t for the band [r0, r1) along `axis` (see bandable), or the whole tensor for an
 * operand read whole. */
static void set_band(const tgr_plan *p, uint32_t stage, int32_t *region, uint32_t t, uint32_t axis, int whole,
                     int32_t r0, int32_t r1)
{
    int32_t *r = region + 4u * t;
    if (lone_free_axis_op(p, stage)) {
        axis = axis_of(p, stage, t, axis);
        r[0] = whole ? 0 : r0;
        r[1] = whole ? tensor_dim(p, t, axis) : r1;
        r[2] = (int32_t)axis;
        r[3] = TGR_REGION_ALONG;
        return;
    }
    r[0] = 0;
    r[1] = tensor_dim(p, t, tgr_row_axis(p, t));
    r[2] = 0;
    r[3] = tensor_ndim(p, t) == 4u ? tensor_dim(p, t, 2) : 1;
    if (whole) {
        return;
    }
    if (tensor_ndim(p, t) == 4u && axis == 2u) {
        r[2] = r0;
        r[3] = r1;
    } else {
        r[0] = r0;
        r[1] = r1;
    }
}

static tgr_status run_rows(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                           const uint8_t *const *weights, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t first = stage_op(p, stage, 0);
    const uint32_t count = stage_ops_count(p, stage);
    const uint32_t ceiling = s->fast.floor + limit;
    tgr_slot in[TGR_MAX_STAGE_IO], out[TGR_MAX_STAGE_IO];
    uint32_t axis;
    int32_t rows, band = 0, low = 1, high, r0;
    uint32_t i, tile = 0;
    (void)path;
    stage_band(p, stage, &axis, &rows);
    /* The largest band that fits: the footprint grows with the band. */
    for (high = rows; low <= high;) {
        const int32_t mid = low + (high - low) / 2;
        if (rows_footprint(p, stage, axis, rows, mid) <= limit) {
            band = mid;
            low = mid + 1;
        } else {
            high = mid - 1;
        }
    }
    if (band == 0) {
        return tgr_fail(err, TGR_ERR_ARENA, "stage %u: no row band fits its %u fast bytes", stage, limit);
    }
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        in[i] = tgr_slot_of(s, stage_input(p, stage, i));
    }
    for (i = 0; i < stage_out_count(p, stage); ++i) {
        uint32_t t = stage_output(p, stage, i);
        if (output_over_input(p, stage, axis, rows)) {
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
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile, 0u, 0u, 0u, range, NULL);
        ++tile;
        s->counters.tiles += 1u;
        for (i = 0; i < stage_in_count(p, stage); ++i) {
            uint32_t t = stage_input(p, stage, i);
            uint32_t along = axis_of(p, stage, t, axis);
            uint32_t step = run_step(p, t, along);
            uint32_t bytes = (uint32_t)(r1 - r0) * row_bytes(p, t, along);
            int whole = read_whole(p, stage, t, axis, rows);
            set_band(p, stage, s->region, t, axis, whole, r0, r1);
            if (whole) {
                continue; /* read in place from slow memory */
            }
            if (!tgr_place_bytes(s, TGR_POOL_FAST, t, bytes, ceiling, stage)) {
                return tgr_fail(err, TGR_ERR_ARENA, "stage %u: row band does not fit", stage);
            }
            copy_runs(s->tensor_ptr[t], (uint32_t)(r1 - r0) * step, in[i].ptr + (uint32_t)r0 * step,
                      (uint64_t)tensor_dim(p, t, along) * step, row_bytes(p, t, along) / step, (uint32_t)(r1 - r0) * step);
            s->counters.load_bytes += bytes;
            emit_rows(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, t, (uint32_t)(s->tensor_ptr[t] - s->fast.base),
                      (uint32_t)(in[i].ptr - s->slow.base) + (uint32_t)r0 * step, bytes, r0, r1);
        }
        for (i = 0; i < count; ++i) {
            uint32_t o = first + i;
            uint32_t k;
            for (k = 0; k < op_num_outputs(p, o); ++k) {
                uint32_t y = op_output(p, o, k);
                set_band(p, stage, s->region, y, axis, 0, r0, r1);
                if (!tgr_place_bytes(s, TGR_POOL_FAST, y, (uint32_t)(r1 - r0) * row_bytes(p, y, axis_of(p, stage, y, axis)),
                                     ceiling, stage)) {
                    return tgr_fail(err, TGR_ERR_ARENA, "stage %u: row band does not fit", stage);
                }
            }
            {
                const tgr_status st = tgr_run_op(s, o, s->region, weights[0], err);
                if (st != TGR_OK) {
                    return st;
                }
            }
            tgr_emit(s, TGR_EV_OP, TGR_POOL_NONE, stage, NONE16, o, 0u, 0u, 0u);
        }
        for (i = 0; i < stage_out_count(p, stage); ++i) {
            uint32_t t = stage_output(p, stage, i);
            uint32_t along = axis_of(p, stage, t, axis);
            uint32_t step = run_step(p, t, along);
            uint32_t bytes = (uint32_t)(r1 - r0) * row_bytes(p, t, along);
            copy_runs(out[i].ptr + (uint32_t)r0 * step, (uint64_t)tensor_dim(p, t, along) * step, s->tensor_ptr[t],
                      (uint32_t)(r1 - r0) * step, row_bytes(p, t, along) / step, (uint32_t)(r1 - r0) * step);
            s->counters.spill_bytes += bytes;
            emit_rows(s, TGR_EV_SPILL, TGR_POOL_SLOW, stage, t,
                      (uint32_t)(out[i].ptr - s->slow.base) + (uint32_t)r0 * step,
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

/* A single Transpose whose stored permutation is [prefix][A][B][suffix] -> [prefix][B][A][suffix]:
 * its extents as the prefix count, rows (A), cols (B) and the suffix block. */
static int transpose_shape(const tgr_plan *p, uint32_t stage, uint32_t *prefix, uint32_t *rows, uint32_t *cols,
                           uint32_t *block)
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
    *prefix = 1u;
    *rows = 1u;
    *cols = 1u;
    *block = 1u;
    for (k = 0; k < rank; ++k) {
        uint32_t extent = (uint32_t)tensor_dim(p, in, k);
        if (k < lead) {
            *prefix *= extent;
        } else if (k < split) {
            *rows *= extent;
        } else if (k >= split && k < b_end) {
            *cols *= extent;
        } else if (k >= b_end) {
            *block *= extent;
        }
    }
    return 1;
}

/* Swap the middle axes of a [prefix][n][m][block] buffer into [prefix][m][n][block]. */
static void swap_axes(const int8_t *in, uint32_t prefix, uint32_t n, uint32_t m, uint32_t block, int8_t *out)
{
    uint32_t q, i, j;
    for (q = 0; q < prefix; ++q) {
        const int8_t *src = in + (uint64_t)q * n * m * block;
        int8_t *dst = out + (uint64_t)q * n * m * block;
        for (i = 0; i < n; ++i) {
            for (j = 0; j < m; ++j) {
                memcpy(dst + ((uint64_t)j * n + i) * block, src + ((uint64_t)i * m + j) * block, block);
            }
        }
    }
}

/* The tensor is [prefix][rows][cols][block]; a band takes a range of rows (or of cols) across
 * the whole prefix, so one side of each copy is contiguous per prefix element and the other a
 * gather or scatter. */
static tgr_status run_transpose(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                                const uint8_t *const *weights, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t o = stage_op(p, stage, 0);
    const uint32_t x = op_input(p, o, 0);
    const uint32_t y = op_output(p, o, 0);
    const uint32_t ceiling = s->fast.floor + limit;
    uint32_t prefix, rows, cols, block, extent, unit, band, b0, tile = 0;
    const tgr_slot slow_x = tgr_slot_of(s, x);
    tgr_slot slow_y;
    int on_cols;
    tgr_status st;
    (void)path;
    (void)weights; /* a transpose has none */
    transpose_shape(p, stage, &prefix, &rows, &cols, &block);
    on_cols = p->version >= 9u ? (int)(tile_record_u16(p, stage, 22u, 2u) & 1u) : cols >= rows;
    extent = on_cols ? cols : rows;
    unit = prefix * (on_cols ? rows : cols) * block;
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
        const uint64_t plane = (uint64_t)rows * cols * block; /* one prefix element */
        /* The band as input rows x cols, and as the output's (transposed) rows x cols. */
        const int32_t in_rows[2] = {on_cols ? 0 : (int32_t)b0, on_cols ? (int32_t)rows : (int32_t)(b0 + n)};
        const int32_t in_cols[2] = {on_cols ? (int32_t)b0 : 0, on_cols ? (int32_t)(b0 + n) : (int32_t)cols};
        const uint32_t in_offset = on_cols ? b0 * block : b0 * cols * block;
        const uint32_t out_offset = on_cols ? b0 * rows * block : b0 * block;
        int8_t *in_band, *out_band;
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile, 0u, 0u, 0u, in_rows, in_cols);
        ++tile;
        s->counters.tiles += 1u;
        if (!tgr_place_bytes(s, TGR_POOL_FAST, x, bytes, ceiling, stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: transpose band does not fit", stage);
        }
        in_band = (int8_t *)s->tensor_ptr[x];
        if (on_cols) { /* gather the band's columns of every row */
            copy_runs((uint8_t *)in_band, (uint64_t)n * block, slow_x.ptr + in_offset, (uint64_t)cols * block,
                      prefix * rows, n * block);
        } else {
            copy_runs((uint8_t *)in_band, (uint64_t)n * cols * block, slow_x.ptr + in_offset, plane, prefix,
                      n * cols * block);
        }
        s->counters.load_bytes += bytes;
        tgr_emit_region(s, TGR_EV_LOAD, TGR_POOL_FAST, stage, x, NONE16, (uint32_t)((uint8_t *)in_band - s->fast.base),
                        (uint32_t)(slow_x.ptr - s->slow.base) + in_offset, bytes, in_rows, in_cols);
        if (!tgr_place_bytes(s, TGR_POOL_FAST, y, bytes, ceiling, stage)) {
            return tgr_fail(err, TGR_ERR_ARENA, "stage %u: transpose band does not fit", stage);
        }
        out_band = (int8_t *)s->tensor_ptr[y];
        if (on_cols) {
            swap_axes(in_band, prefix, rows, n, block, out_band);
            copy_runs(slow_y.ptr + out_offset, plane, (const uint8_t *)out_band, (uint64_t)n * rows * block, prefix,
                      n * rows * block);
        } else { /* scatter the band into every output row */
            swap_axes(in_band, prefix, n, cols, block, out_band);
            copy_runs(slow_y.ptr + out_offset, (uint64_t)rows * block, (const uint8_t *)out_band, (uint64_t)n * block,
                      prefix * cols, n * block);
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

static int reshape_fit(const tgr_plan *p, uint32_t stage, uint32_t last, const char **why)
{
    uint32_t o, in, out;
    (void)last; /* one stage */
    (void)why;
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
           tensor_dim(p, in, tgr_band_axis(p, in)) > 1;
}

static tgr_status run_reshape(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                              const uint8_t *const *weights, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t o = stage_op(p, stage, 0);
    const uint32_t x = op_input(p, o, 0);
    const uint32_t y = op_output(p, o, 0);
    const uint32_t ceiling = s->fast.floor + limit;
    const uint32_t rows = (uint32_t)tensor_dim(p, x, tgr_band_axis(p, x));
    const uint32_t band = tile_record_u16(p, stage, 2u, 4u);
    const uint32_t in_row = row_bytes(p, x, tgr_band_axis(p, x));
    const uint32_t out_row = row_bytes(p, y, tgr_band_axis(p, y));
    const tgr_slot slow_x = tgr_slot_of(s, x);
    tgr_slot slow_y;
    uint32_t r0, tile = 0;
    tgr_status st = tgr_place_slow(s, y, stage, err);
    (void)path;
    (void)weights;
    if (st != TGR_OK) {
        return st;
    }
    slow_y = tgr_slot_of(s, y);
    for (r0 = 0; r0 < rows; r0 += band) {
        const uint32_t r1 = r0 + band < rows ? r0 + band : rows;
        const uint32_t bytes = (r1 - r0) * in_row;
        const int32_t range[2] = {(int32_t)r0, (int32_t)r1};
        tgr_emit_region(s, TGR_EV_TILE_BEGIN, TGR_POOL_NONE, stage, NONE16, tile, 0u, 0u, 0u, range, NULL);
        ++tile;
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

static int transpose_fit(const tgr_plan *p, uint32_t stage, uint32_t last, const char **why)
{
    uint32_t prefix, rows, cols, block;
    (void)last; /* one stage */
    if (tensor_dtype(p, stage_input(p, stage, 0)) == TGR_DTYPE_INT32) {
        /* its gathers and scatters move single bytes; int32 values run whole or in row bands */
        *why = TGR_TEXT("int32 values (run-time indices) run only on the normal and rows paths");
        return 0;
    }
    return transpose_shape(p, stage, &prefix, &rows, &cols, &block);
}

TGR_PATH_IMPL(TGR_PATH_ROWS, run_rows, rows_fit);
TGR_PATH_IMPL(TGR_PATH_TRANSPOSE, run_transpose, transpose_fit);
TGR_PATH_IMPL(TGR_PATH_RESHAPE, run_reshape, reshape_fit);
