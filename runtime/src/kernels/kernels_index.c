/*
 * Indexing int8 kernels: every output element is a copy of one input element, picked by a
 * per-axis coordinate map (StridedSlice, ReverseV2, MirrorPad), by indices (Gather, GatherND:
 * constant, or an int32 tensor computed at run time) or by a window (DynamicUpdateSlice). Bytes
 * move unchanged: the op checks only accept plans whose output is quantized like its inputs.
 */
#include <string.h>

#include "base/bytes.h"
#include "kernels/kernels_data.h"
#include "tgr.h"

/* Index `i` of an index list: little-endian int32, read bytewise (weights are only 4-byte
 * aligned within the plan, and the plan itself may sit at any address). */
static int32_t index_at(const uint8_t *indices, uint32_t i) { return rd_i32(indices + 4u * i); }

/* Index `i` along an axis of `extent`, negative ones counted from the end where `from_end`;
 * -1 when outside the axis. */
static int32_t index_in(const uint8_t *indices, uint32_t i, int32_t extent, int from_end)
{
    int32_t index = index_at(indices, i);
    if (index < 0 && from_end) {
        index += extent; /* no overflow: extent > 0 */
    }
    return index >= 0 && index < extent ? index : -1;
}

int32_t tgr_axis_map_source(const tgr_axis_map *map, int32_t i)
{
    int32_t j = map->start + i * map->step;
    if (map->mirror == TGR_MIRROR_NONE) {
        return j;
    }
    /* Reflect leaves the edge out of the mirror image, symmetric repeats it. */
    if (j < 0) {
        return map->mirror == TGR_MIRROR_REFLECT ? -j : -j - 1;
    }
    if (j >= map->extent) {
        return map->mirror == TGR_MIRROR_REFLECT ? 2 * map->extent - 2 - j : 2 * map->extent - 1 - j;
    }
    return j;
}

void tgr_axis_map_s8(uint32_t rank, const int32_t *in_dims, const int32_t *out_dims, const tgr_axis_map *maps,
                     const int8_t *in, int8_t *out)
{
    uint32_t in_stride[TGR_MAX_RANK];
    int32_t index[TGR_MAX_RANK];
    const uint32_t last = rank - 1u;
    const tgr_axis_map *inner = &maps[last];
    const int identity_rows = inner->mirror == TGR_MIRROR_NONE && inner->start == 0 && inner->step == 1;
    uint32_t stride = 1u, rows = 1u, r, k;
    int32_t i;
    for (k = rank; k-- > 0u;) {
        in_stride[k] = stride;
        stride *= (uint32_t)in_dims[k];
        index[k] = 0;
    }
    for (k = 0; k < last; ++k) {
        rows *= (uint32_t)out_dims[k];
    }
    /* One output row (last axis) at a time, its source row found from the outer coordinates. */
    for (r = 0; r < rows; ++r) {
        uint32_t src = 0u;
        for (k = 0; k < last; ++k) {
            src += (uint32_t)tgr_axis_map_source(&maps[k], index[k]) * in_stride[k];
        }
        if (identity_rows) {
            memcpy(out, in + src, (size_t)out_dims[last]);
        } else {
            for (i = 0; i < out_dims[last]; ++i) {
                out[i] = in[src + (uint32_t)tgr_axis_map_source(inner, i)];
            }
        }
        out += out_dims[last];
        for (k = last; k-- > 0u;) {
            if (++index[k] < out_dims[k]) {
                break;
            }
            index[k] = 0;
        }
    }
}

int tgr_gather_s8(const tgr_gather_shape *g, const uint8_t *indices, const int8_t *in, int8_t *out)
{
    uint32_t b, pre, j;
    for (b = 0; b < g->batches; ++b) {
        const uint8_t *batch_indices = indices + 4u * b * g->count;
        for (j = 0; j < g->count; ++j) {
            if (index_in(batch_indices, j, (int32_t)g->extent, g->from_end) < 0) {
                return 0;
            }
        }
        for (pre = 0; pre < g->outer; ++pre) {
            const int8_t *block = in + ((size_t)b * g->outer + pre) * g->extent * g->inner;
            for (j = 0; j < g->count; ++j) {
                int32_t index = index_in(batch_indices, j, (int32_t)g->extent, g->from_end);
                memcpy(out, block + (size_t)index * g->inner, g->inner);
                out += g->inner;
            }
        }
    }
    return 1;
}

int tgr_gather_nd_s8(uint32_t count, uint32_t depth, const int32_t *dims, const uint8_t *indices, uint32_t inner,
                     int from_end, const int8_t *in, int8_t *out)
{
    uint32_t j, k;
    for (j = 0; j < count; ++j) {
        size_t offset = 0u;
        for (k = 0; k < depth; ++k) {
            int32_t index = index_in(indices, j * depth + k, dims[k], from_end);
            if (index < 0) {
                return 0;
            }
            offset = offset * (size_t)dims[k] + (size_t)index;
        }
        memcpy(out, in + offset * inner, inner);
        out += inner;
    }
    return 1;
}

void tgr_update_slice_s8(uint32_t rank, const int32_t *dims, const int32_t *update_dims, const int32_t *starts,
                         const int8_t *in, const int8_t *update, int8_t *out)
{
    uint32_t stride[TGR_MAX_RANK];
    int32_t index[TGR_MAX_RANK];
    uint32_t total = 1u, rows = 1u, r, k;
    const uint32_t last = rank - 1u;
    for (k = rank; k-- > 0u;) {
        stride[k] = total;
        total *= (uint32_t)dims[k];
        index[k] = 0;
    }
    if (out != in) {
        memcpy(out, in, total);
    }
    for (k = 0; k < last; ++k) {
        rows *= (uint32_t)update_dims[k];
    }
    for (r = 0; r < rows; ++r) {
        uint32_t dst = (uint32_t)starts[last];
        for (k = 0; k < last; ++k) {
            dst += (uint32_t)(starts[k] + index[k]) * stride[k];
        }
        memcpy(out + dst, update, (size_t)update_dims[last]);
        update += update_dims[last];
        for (k = last; k-- > 0u;) {
            if (++index[k] < update_dims[k]) {
                break;
            }
            index[k] = 0;
        }
    }
}
