/*
 * Indexing family: StridedSlice, MirrorPad, ReverseV2, Gather, GatherND and DynamicUpdateSlice
 * on int8 tensors, described by the MOVEMENT attribute over stored axes
 * (docs/plan-format.md#op-attributes).
 *
 * What the reference runtime (tigris-ml 0.12.1) does, measured by editing fixture plans:
 * - It refuses at load a slice whose range leaves the input, a stop outside [-1, extent] (even
 *   when the indices it selects are inside), a DynamicUpdateSlice window that does not fit and a
 *   MirrorPad that does not turn the input extents into the output's; we refuse the same.
 * - It loads a Gather/GatherND whose constant indices leave the input and then fails every run;
 *   we refuse such indices at load. Indices inside LZ4-compressed weights cannot be read before
 *   their stage runs, so those plans are refused too.
 * - Indices computed at run time (an int32 tensor) that leave the input fail that run
 *   (TGR_FAULT_INDEX_RANGE): negative ones too, except into a constant table, where -k is
 *   extent - k (measured down to -extent). Run-time DynamicUpdateSlice starts are clamped so
 *   that the update stays inside, as TFLite's are.
 * Every op copies codes: plans whose output is quantized unlike the input are refused.
 * They also run in bands along an axis they map onto itself, as the compiler plans them
 * (partition_spatial's independent bands): row bands (path_rows.c; a Gather or GatherND that
 * changes the rank along the last axis of each tensor) and, alone in their stage, all but
 * GatherND in 1-D spatial stripes along axis 1 (path_tiles.c).
 */
#include "kernels/kernels_data.h"
#include "ops/ops.h"

/* The MOVEMENT payload as int32s; NULL when absent or not a whole number of them. */
static const uint8_t *movement(const tgr_plan *p, uint32_t o, uint32_t *count)
{
    uint32_t len = 0;
    const uint8_t *data = tgr_attr_find(p, o, ATTR_MOVEMENT, &len);
    *count = len / 4u;
    return data != NULL && len % 4u == 0u ? data : NULL;
}

static int32_t movement_int(const uint8_t *data, uint32_t i) { return rd_i32(data + 4u * i); }

/* What every op here needs: int8 codes copied unchanged into a like-quantized output (int32
 * operands are indices and starts). */
static tgr_status check_copy(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t k;
    op_decode(p, o, &sp);
    for (k = 0; k < op_num_inputs(p, o); ++k) {
        if (tensor_dtype(p, op_input(p, o, k)) == TGR_DTYPE_INT8 && !tgr_same_qparams(p, op_input(p, o, k), op_output(p, o, 0))) {
            return tgr_unsupported_op(err, p, o, "requantizing");
        }
    }
    if (!tgr_neutral_activation(&sp)) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return TGR_OK;
}

/* ---- per-axis maps: StridedSlice, ReverseV2, MirrorPad ------------------------------------- */

/* Selected count of one axis of a (start, stop, step) slice, or -1 when it leaves [0, extent)
 * or its stop is outside [-1, extent]. */
static int64_t slice_count(int32_t start, int32_t stop, int32_t step, int32_t extent)
{
    int64_t span = step > 0 ? (int64_t)stop - start : (int64_t)start - stop;
    int64_t stride = step > 0 ? (int64_t)step : -(int64_t)step;
    int64_t count, last;
    if (step == 0 || span <= 0 || stop < -1 || stop > extent || start < 0 || start >= extent) {
        return -1;
    }
    count = (span + stride - 1) / stride;
    last = (int64_t)start + (count - 1) * step;
    return last >= 0 && last < extent ? count : -1;
}

/* The maps of op o, and the output extents before StridedSlice's shrink (same rank as the input).
 * Returns what is wrong, or NULL. */
static const char *axis_maps(const tgr_plan *p, uint32_t o, tgr_axis_map *maps, int32_t *out_dims)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t n, k;
    const uint8_t *m = movement(p, o, &n);
    if (m == NULL) {
        return TGR_TEXT("its movement attribute is missing");
    }
    for (k = 0; k < rank; ++k) {
        int32_t extent = tensor_dim(p, in, k);
        maps[k].start = 0;
        maps[k].step = 1;
        maps[k].extent = extent;
        maps[k].mirror = TGR_MIRROR_NONE;
        out_dims[k] = extent;
        switch (op_type(p, o)) {
        case OP_STRIDED_SLICE: {
            int64_t count;
            if (n != 3u * rank && n != 3u * rank + 1u) {
                return TGR_TEXT("its slice does not have a (start, stop, step) per axis");
            }
            count = slice_count(movement_int(m, 3u * k), movement_int(m, 3u * k + 1u), movement_int(m, 3u * k + 2u),
                                extent);
            if (count < 0) {
                return TGR_TEXT("a slice range leaves the input");
            }
            maps[k].start = movement_int(m, 3u * k);
            maps[k].step = movement_int(m, 3u * k + 2u);
            out_dims[k] = (int32_t)count;
            break;
        }
        case OP_REVERSE:
            if (n != 1u || (uint32_t)movement_int(m, 0) >> rank != 0u) {
                return TGR_TEXT("its axis mask names axes beyond the tensor rank");
            }
            if ((uint32_t)movement_int(m, 0) & (1u << k)) {
                maps[k].start = extent - 1;
                maps[k].step = -1;
            }
            break;
        default: { /* OP_MIRROR_PAD */
            int32_t begin, end, limit;
            if (n != 1u + 2u * rank || (uint32_t)movement_int(m, 0) > 1u) {
                return TGR_TEXT("its mode and pads do not match the tensor rank");
            }
            begin = movement_int(m, 1u + 2u * k);
            end = movement_int(m, 2u + 2u * k);
            limit = movement_int(m, 0) ? extent : extent - 1; /* one mirror image at most */
            if (begin < 0 || end < 0 || begin > limit || end > limit) {
                return TGR_TEXT("pads are longer than the mirror image of the input");
            }
            maps[k].start = -begin;
            maps[k].mirror = movement_int(m, 0) ? TGR_MIRROR_SYMMETRIC : TGR_MIRROR_REFLECT;
            out_dims[k] = extent + begin + end;
            break;
        }
        }
    }
    return NULL;
}

static tgr_status check_axis_map(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    tgr_axis_map maps[TGR_MAX_RANK];
    int32_t dims[TGR_MAX_RANK];
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t n, k, kept = 0u, shrink = 0u;
    const uint8_t *m;
    const char *problem;
    if (rank == 0u) {
        return tgr_bad_op(err, p, o, "its input has no axes");
    }
    problem = axis_maps(p, o, maps, dims);
    if (problem != NULL) {
        return tgr_bad_op(err, p, o, problem);
    }
    m = movement(p, o, &n);
    if (op_type(p, o) == OP_STRIDED_SLICE && n == 3u * rank + 1u) {
        shrink = (uint32_t)movement_int(m, 3u * rank);
        if (shrink >> rank != 0u) {
            return tgr_bad_op(err, p, o, "its shrink mask names axes beyond the tensor rank");
        }
    }
    /* Shrunk axes select one index and are gone from the output; the bytes are the same. */
    for (k = 0; k < rank; ++k) {
        if (shrink & (1u << k)) {
            if (dims[k] != 1) {
                return tgr_bad_op(err, p, o, "a shrunk axis selects more than one index");
            }
        } else if (kept >= tensor_ndim(p, out) || tensor_dim(p, out, kept++) != dims[k]) {
            return tgr_bad_op(err, p, o, "the output extents are not the ones the op produces");
        }
    }
    if (kept != tensor_ndim(p, out)) {
        return tgr_bad_op(err, p, o, "the output extents are not the ones the op produces");
    }
    return check_copy(p, o, err);
}

static void run_axis_map(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    tgr_axis_map maps[TGR_MAX_RANK];
    int32_t in_dims[TGR_MAX_RANK];
    int32_t out_dims[TGR_MAX_RANK];
    uint32_t in = op_input(p, o, 0);
    uint32_t k;
    (void)axis_maps(p, o, maps, out_dims);
    tgr_band_dims(p, in, region, in_dims);
    if (region != NULL) {
        /* A band runs along an axis the op maps onto itself (tgr_index_band_problem). */
        tgr_band_dims(p, op_output(p, o, 0), region, out_dims);
        for (k = 0; k < tensor_ndim(p, in); ++k) {
            maps[k].extent = in_dims[k];
        }
    }
    tgr_axis_map_s8(tensor_ndim(p, in), in_dims, out_dims, maps, (const int8_t *)tensor_ptr[in],
                    (int8_t *)tensor_ptr[op_output(p, o, 0)]);
}

/* ---- Gather and GatherND ---------------------------------------------------------------------- */

static uint32_t product(const int32_t *dims, uint32_t from, uint32_t to)
{
    uint32_t total = 1u;
    for (; from < to; ++from) {
        total *= (uint32_t)dims[from];
    }
    return total;
}

/* Where a gather's data and indices come from. Three forms: constant indices (the int8 data the
 * only input, the indices a weight), run-time indices (int8 data, then an int32 index tensor) and
 * a constant table (an int32 index tensor the only input, the int8 table a weight whose extents
 * OP_ATTR_TABLE_SHAPE gives). */
typedef struct gather_operands {
    uint32_t data;      /* the data tensor, NONE16 for a table */
    uint32_t indices;   /* the index tensor, NONE16 for constant indices */
    uint32_t rank;      /* the data's */
    int32_t dims[TGR_MAX_RANK];
} gather_operands;

static const char *gather_operands_of(const tgr_plan *p, uint32_t o, gather_operands *g)
{
    uint32_t len = 0, k;
    const uint8_t *table = tgr_attr_find(p, o, ATTR_TABLE_SHAPE, &len);
    op_spatial sp;
    op_decode(p, o, &sp);
    g->data = NONE16;
    g->indices = NONE16;
    if (table != NULL) {
        if (op_num_inputs(p, o) != 1u || sp.weight_idx == NONE16 || len % 4u != 0u || len == 0u ||
            len / 4u > TGR_MAX_RANK) {
            return TGR_TEXT("its constant table does not match its table shape attribute");
        }
        uint64_t elements = 1u;
        g->indices = op_input(p, o, 0);
        g->rank = len / 4u;
        for (k = 0; k < g->rank; ++k) {
            g->dims[k] = rd_i32(table + 4u * k);
            elements *= g->dims[k] > 0 ? (uint64_t)g->dims[k] : 0u;
            if (elements == 0u || elements > weight_size(p, sp.weight_idx)) { /* no 32-bit wrap */
                return TGR_TEXT("its constant table does not match its table shape attribute");
            }
        }
        return weight_size(p, sp.weight_idx) == elements && p->num_blocks == 0u
                   ? NULL
                   : TGR_TEXT("its constant table does not match its table shape attribute");
    }
    g->data = op_input(p, o, 0);
    g->rank = tensor_ndim(p, g->data);
    for (k = 0; k < g->rank; ++k) {
        g->dims[k] = tensor_dim(p, g->data, k);
    }
    if (op_num_inputs(p, o) == 2u && sp.weight_idx == NONE16) {
        g->indices = op_input(p, o, 1);
        return NULL;
    }
    return op_num_inputs(p, o) == 1u && sp.weight_idx != NONE16 ? NULL
                                                                 : TGR_TEXT("its operands are neither data and indices nor a table");
}

/* The indices: `count` int32s, constant ones each in [0, limit[k % depth]) (checked here, as they
 * are known at load), run-time ones checked by the kernel as it reads them. */
static tgr_status check_indices(const tgr_plan *p, uint32_t o, const gather_operands *g, uint64_t count,
                                uint32_t depth, const int32_t *limit, const uint8_t *shape, uint32_t shape_rank,
                                tgr_error *err)
{
    op_spatial sp;
    const uint8_t *data;
    uint64_t i;
    op_decode(p, o, &sp);
    if (g->indices != NONE16) {
        /* exactly the index shape: a table's lookups run in bands of the tensor's own extents */
        int same = tensor_ndim(p, g->indices) == shape_rank && tensor_bytes(p, g->indices) == 4u * count;
        for (i = 0; same && i < shape_rank; ++i) {
            same = tensor_dim(p, g->indices, (uint32_t)i) == movement_int(shape, (uint32_t)i);
        }
        return same ? check_copy(p, o, err) : tgr_bad_op(err, p, o, "its index tensor does not hold the index shape");
    }
    if (p->num_blocks > 0u) {
        return tgr_unsupported_op(err, p, o, "indices inside LZ4-compressed weights");
    }
    if (weight_size(p, sp.weight_idx) != 4u * count) {
        return tgr_bad_op(err, p, o, "its index constant does not hold the index shape");
    }
    data = weight_data(p, sp.weight_idx);
    for (i = 0; i < count; ++i) {
        int32_t index = rd_i32(data + 4u * i);
        if (index < 0 || index >= limit[i % depth]) {
            return tgr_bad_op(err, p, o, "an index is outside the input");
        }
    }
    return check_copy(p, o, err);
}

/* The data and index bytes of a run: tensors, or the op's weight. */
/* A run's operands: the data and index bytes (tensors, or the op's weight) and the data's
 * extents in this region's band. */
static void gather_buffers(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                           gather_operands *g, const int8_t **data, const uint8_t **indices)
{
    op_spatial sp;
    op_decode(p, o, &sp);
    gather_operands_of(p, o, g);
    if (g->data != NONE16) {
        tgr_band_dims(p, g->data, region, g->dims);
    }
    *data = g->data != NONE16 ? (const int8_t *)tensor_ptr[g->data] : (const int8_t *)weight_data(p, sp.weight_idx);
    *indices = g->indices != NONE16 ? tensor_ptr[g->indices] : weight_data(p, sp.weight_idx);
}

/* How many lookups run: the product of index axes [from, to) of the index tensor (in this
 * region's band: a table's lookups are banded, run-time indices are read whole), or of the
 * constant indices' extents, MOVEMENT values shape_at + from.. (the loader made both agree). */
static uint32_t lookups(const tgr_plan *p, const gather_operands *g, const int32_t *region, const uint8_t *m,
                        uint32_t shape_at, uint32_t from, uint32_t to)
{
    int32_t dims[TGR_MAX_RANK];
    uint32_t k;
    if (g->indices != NONE16) {
        tgr_band_dims(p, g->indices, region, dims);
        return product(dims, from, to);
    }
    for (k = from; k < to; ++k) {
        dims[k] = movement_int(m, shape_at + k);
    }
    return product(dims, from, to);
}

/* Gather's MOVEMENT: axis, batch_dims, index_rank, index_shape... */
static tgr_status check_gather(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    int32_t dims[TGR_MAX_RANK];
    int32_t extent;
    gather_operands g;
    uint32_t out = op_output(p, o, 0);
    uint32_t n, k, axis, batch, index_rank, at = 0u;
    uint64_t count = 1u;
    const uint8_t *m = movement(p, o, &n);
    const char *why = gather_operands_of(p, o, &g);
    if (why != NULL) {
        return tgr_bad_op(err, p, o, why);
    }
    if (m == NULL || n < 3u || (uint32_t)movement_int(m, 2) != n - 3u) {
        return tgr_bad_op(err, p, o, "its movement attribute does not hold axis, batch dims and index shape");
    }
    axis = (uint32_t)movement_int(m, 0);
    batch = (uint32_t)movement_int(m, 1);
    index_rank = n - 3u;
    if (axis >= g.rank || batch > axis || batch > index_rank || g.rank - 1u + index_rank - batch != tensor_ndim(p, out)) {
        return tgr_bad_op(err, p, o, "axis, batch dims and index rank do not fit the tensors");
    }
    /* Output: input[:axis] + indices[batch:] + input[axis + 1:]; indices[:batch] = input[:batch]. */
    for (k = 0; k < index_rank; ++k) {
        int32_t index_extent = movement_int(m, 3u + k);
        if (index_extent < 1 || (k < batch && index_extent != g.dims[k])) {
            return tgr_bad_op(err, p, o, "the index shape does not fit the input");
        }
        count *= (uint32_t)index_extent;
    }
    for (k = 0; k < axis; ++k) {
        dims[at++] = g.dims[k];
    }
    for (k = batch; k < index_rank; ++k) {
        dims[at++] = movement_int(m, 3u + k);
    }
    for (k = axis + 1u; k < g.rank; ++k) {
        dims[at++] = g.dims[k];
    }
    for (k = 0; k < at; ++k) {
        if (tensor_dim(p, out, k) != dims[k]) {
            return tgr_bad_op(err, p, o, "the output extents are not the ones the op produces");
        }
    }
    extent = g.dims[axis]; /* every index selects along the gather axis */
    return check_indices(p, o, &g, count, 1u, &extent, m + 12, index_rank, err);
}

static uint32_t run_gather(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    gather_operands g;
    uint32_t n;
    const uint8_t *m = movement(p, o, &n);
    uint32_t axis = (uint32_t)movement_int(m, 0);
    uint32_t batch = (uint32_t)movement_int(m, 1);
    tgr_gather_shape shape;
    const int8_t *data;
    const uint8_t *indices;
    gather_buffers(p, o, tensor_ptr, region, &g, &data, &indices);
    shape.batches = product(g.dims, 0u, batch);
    shape.outer = product(g.dims, batch, axis);
    shape.extent = (uint32_t)g.dims[axis];
    shape.inner = product(g.dims, axis + 1u, g.rank);
    shape.count = lookups(p, &g, region, m, 3u, batch, n - 3u);
    shape.from_end = g.data == NONE16;
    return tgr_gather_s8(&shape, indices, data, (int8_t *)tensor_ptr[op_output(p, o, 0)]) ? TGR_FAULT_NONE
                                                                                          : TGR_FAULT_INDEX_RANGE;
}

/* GatherND's MOVEMENT: index_rank, index_shape...; the last index extent is the tuple depth. */
static tgr_status check_gather_nd(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    gather_operands g;
    uint32_t out = op_output(p, o, 0);
    uint32_t n, k, depth, at = 0u;
    uint64_t count = 1u;
    const uint8_t *m = movement(p, o, &n);
    const char *why = gather_operands_of(p, o, &g);
    if (why != NULL) {
        return tgr_bad_op(err, p, o, why);
    }
    if (m == NULL || n < 2u || (uint32_t)movement_int(m, 0) != n - 1u) {
        return tgr_bad_op(err, p, o, "its movement attribute does not hold the index shape");
    }
    depth = (uint32_t)movement_int(m, n - 1u);
    if (depth < 1u || depth > g.rank || (n - 2u) + (g.rank - depth) != tensor_ndim(p, out)) {
        return tgr_bad_op(err, p, o, "the index tuples do not fit the input");
    }
    /* Output: index_shape[:-1] + input[depth:]. */
    for (k = 1u; k < n; ++k) {
        int32_t extent = movement_int(m, k);
        if (extent < 1 || (k + 1u < n && tensor_dim(p, out, at++) != extent)) {
            return tgr_bad_op(err, p, o, "the output extents are not the ones the op produces");
        }
        count *= (uint32_t)extent;
    }
    for (k = depth; k < g.rank; ++k) {
        if (tensor_dim(p, out, at++) != g.dims[k]) {
            return tgr_bad_op(err, p, o, "the output extents are not the ones the op produces");
        }
    }
    return check_indices(p, o, &g, count, depth, g.dims, m + 4, n - 1u, err);
}

static uint32_t run_gather_nd(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    gather_operands g;
    uint32_t n;
    const uint8_t *m = movement(p, o, &n);
    uint32_t depth = (uint32_t)movement_int(m, n - 1u);
    const int8_t *data;
    const uint8_t *indices;
    uint32_t count;
    gather_buffers(p, o, tensor_ptr, region, &g, &data, &indices);
    count = lookups(p, &g, region, m, 1u, 0u, n - 2u); /* the tuples: every index axis but the last */
    return tgr_gather_nd_s8(count, depth, g.dims, indices, product(g.dims, depth, g.rank), g.data == NONE16, data,
                            (int8_t *)tensor_ptr[op_output(p, o, 0)])
               ? TGR_FAULT_NONE
               : TGR_FAULT_INDEX_RANGE;
}

/* ---- DynamicUpdateSlice ----------------------------------------------------------------------- */

/* MOVEMENT: starts..., update_shape... (constant starts, stored axes), or update_shape... with
 * the starts an int32 tensor of one value per axis, the last input. */
static tgr_status check_update_slice(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t rank = tensor_ndim(p, in);
    uint32_t n, k;
    const uint8_t *m = movement(p, o, &n);
    int run_time_starts = op_num_inputs(p, o) == 3u;
    const uint32_t shape_at = run_time_starts ? 0u : rank;
    op_spatial sp;
    op_decode(p, o, &sp);
    if ((op_num_inputs(p, o) != 2u && !run_time_starts) || sp.weight_idx != NONE16 || m == NULL ||
        n != shape_at + rank) {
        return tgr_unsupported_op(err, p, o, "a constant update");
    }
    if (!tgr_same_shape(p, in, op_output(p, o, 0)) || tensor_ndim(p, op_input(p, o, 1)) != rank || rank == 0u) {
        return tgr_bad_op(err, p, o, "the update, input and output ranks or extents differ");
    }
    if (run_time_starts && tensor_bytes(p, op_input(p, o, 2)) != 4u * rank) {
        return tgr_bad_op(err, p, o, "its start tensor does not hold one start per axis");
    }
    for (k = 0; k < rank; ++k) {
        int32_t start = run_time_starts ? 0 : movement_int(m, k);
        int32_t extent = movement_int(m, shape_at + k);
        if (extent != tensor_dim(p, op_input(p, o, 1), k) || start < 0 ||
            (int64_t)start + extent > tensor_dim(p, in, k)) {
            return tgr_bad_op(err, p, o, "the update window does not fit the input");
        }
    }
    return check_copy(p, o, err);
}

static void run_update_slice(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    int32_t dims[TGR_MAX_RANK];
    int32_t update_dims[TGR_MAX_RANK];
    int32_t starts[TGR_MAX_RANK];
    uint32_t in = op_input(p, o, 0);
    uint32_t update = op_input(p, o, 1);
    uint32_t n, k, rank = tensor_ndim(p, in);
    const uint8_t *m = movement(p, o, &n);
    tgr_band_dims(p, in, region, dims);
    tgr_band_dims(p, update, region, update_dims);
    for (k = 0; k < rank; ++k) {
        if (op_num_inputs(p, o) == 3u) {
            /* Run-time starts are clamped so that the update stays inside, as the reference does. */
            int32_t start = rd_i32(tensor_ptr[op_input(p, o, 2)] + 4u * k);
            int32_t last = dims[k] - update_dims[k];
            starts[k] = start < 0 ? 0 : start > last ? last : start;
        } else {
            starts[k] = movement_int(m, k);
        }
    }
    tgr_update_slice_s8(rank, dims, update_dims, starts, (const int8_t *)tensor_ptr[in],
                        (const int8_t *)tensor_ptr[update], (int8_t *)tensor_ptr[op_output(p, o, 0)]);
}

/* ---- row bands ------------------------------------------------------------------------------ */

int tgr_index_bandable_op(uint32_t opcode)
{
    return (opcode >= OP_GATHER && opcode <= OP_REVERSE) || opcode == OP_UPDATE_SLICE;
}

int tgr_index_operand(const tgr_plan *p, uint32_t o, uint32_t k)
{
    switch (op_type(p, o)) {
    case OP_GATHER:
    case OP_GATHER_ND:
        return k == 1u && op_num_inputs(p, o) == 2u;
    case OP_UPDATE_SLICE:
        return k == 2u;
    default:
        return 0;
    }
}

int tgr_index_table_op(const tgr_plan *p, uint32_t o)
{
    return (op_type(p, o) == OP_GATHER || op_type(p, o) == OP_GATHER_ND) &&
           tgr_attr_find(p, o, ATTR_TABLE_SHAPE, NULL) != NULL;
}

const char *tgr_index_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t n;
    const uint8_t *m = movement(p, o, &n);
    int gathers = op_type(p, o) == OP_GATHER || op_type(p, o) == OP_GATHER_ND;
    if (tgr_index_table_op(p, o)) {
        /* Lookups into a table (gathered along its first axis): the index axes lead the output,
         * GatherND's last index axis (the tuple) excepted. */
        const int nd = op_type(p, o) == OP_GATHER_ND;
        return m != NULL && (nd || (n >= 2u && movement_int(m, 0) == 0 && movement_int(m, 1) == 0)) &&
                       axis + (nd ? 1u : 0u) < tensor_ndim(p, in)
                   ? NULL
                   : "a table lookup can be banded only along its index axes";
    }
    /* A band keeps its axis index where input and output have the same axes; a gather that
     * changes the rank is banded along the last axis of each (path_rows.c). */
    if (m == NULL || axis >= tensor_ndim(p, in) ||
        (tensor_ndim(p, op_output(p, o, 0)) != tensor_ndim(p, in) && !(gathers && axis + 1u == tensor_ndim(p, in)))) {
        return TGR_TEXT("an op that changes the rank cannot run in row bands");
    }
    switch (op_type(p, o)) {
    case OP_STRIDED_SLICE:
        return n > 3u * axis + 2u && movement_int(m, 3u * axis) == 0 && movement_int(m, 3u * axis + 1u) == tensor_dim(p, in, axis) &&
                       movement_int(m, 3u * axis + 2u) == 1
                   ? NULL
                   : "a StridedSlice cannot be banded along an axis it slices";
    case OP_REVERSE:
        return ((uint32_t)movement_int(m, 0) >> axis & 1u) == 0u ? NULL
                                                               : "a ReverseV2 cannot be banded along an axis it reverses";
    case OP_MIRROR_PAD:
        return n > 2u + 2u * axis && movement_int(m, 1u + 2u * axis) == 0 && movement_int(m, 2u + 2u * axis) == 0
                   ? NULL
                   : "a MirrorPad cannot be banded along an axis it pads";
    case OP_GATHER: /* indices depend on the batch axes, and the gather axis is the one indexed */
        return axis >= (uint32_t)movement_int(m, 1) && axis != (uint32_t)movement_int(m, 0)
                   ? NULL
                   : "a Gather cannot be banded along its gather or batch axes";
    case OP_GATHER_ND: /* the index tuples address the leading `depth` axes */
        return axis >= (uint32_t)movement_int(m, n - 1u) ? NULL
                                                         : "a GatherND cannot be banded along an axis it indexes";
    case OP_UPDATE_SLICE: {
        /* MOVEMENT: constant starts then the update shape, or the update shape alone (run-time
         * starts, clamped to 0 on an axis the update covers). */
        const uint32_t rank = tensor_ndim(p, in);
        const uint32_t shape_at = n == 2u * rank ? rank : 0u;
        return (n == 2u * rank || n == rank) && (shape_at == 0u || movement_int(m, axis) == 0) &&
                       movement_int(m, shape_at + axis) == tensor_dim(p, in, axis)
                   ? NULL
                   : "a DynamicUpdateSlice cannot be banded along an axis its update does not cover";
    }
    default:
        return TGR_TEXT("an op of this kind cannot run in row bands");
    }
}

TGR_OP_FALLIBLE(OP_GATHER, TILING_POINTWISE | TILING_ROWS | TILING_ALONE, check_gather, run_gather);
TGR_OP_BANDS(OP_GATHER, tgr_index_band_problem);
TGR_OP_FALLIBLE(OP_GATHER_ND, TILING_ROWS, check_gather_nd, run_gather_nd);
TGR_OP_BANDS(OP_GATHER_ND, tgr_index_band_problem);
TGR_OP_IMPL(OP_STRIDED_SLICE, TILING_POINTWISE | TILING_ROWS | TILING_ALONE, check_axis_map, run_axis_map);
TGR_OP_BANDS(OP_STRIDED_SLICE, tgr_index_band_problem);
TGR_OP_IMPL(OP_MIRROR_PAD, TILING_POINTWISE | TILING_ROWS | TILING_ALONE, check_axis_map, run_axis_map);
TGR_OP_BANDS(OP_MIRROR_PAD, tgr_index_band_problem);
TGR_OP_IMPL(OP_REVERSE, TILING_POINTWISE | TILING_ROWS | TILING_ALONE, check_axis_map, run_axis_map);
TGR_OP_BANDS(OP_REVERSE, tgr_index_band_problem);
TGR_OP_IMPL(OP_UPDATE_SLICE, TILING_POINTWISE | TILING_ROWS | TILING_ALONE, check_update_slice, run_update_slice);
TGR_OP_BANDS(OP_UPDATE_SLICE, tgr_index_band_problem);
