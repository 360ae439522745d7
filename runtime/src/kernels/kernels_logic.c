/*
 * Kernels of the logic family (ops_logic.c): bool bytes, non-zero is true, results 0/1.
 */
#include "kernels/kernels_data.h"
#include "tgr.h"

void tgr_where_s8(const tgr_where_shape *w, const uint8_t *condition, const int8_t *x, const int8_t *y, int8_t *out)
{
    uint32_t stride[3][TGR_MAX_RANK];
    int32_t index[TGR_MAX_RANK];
    uint32_t offset[3] = {0u, 0u, 0u};
    uint32_t total = 1u, i, k, axis;
    for (k = 0; k < 3u; ++k) {
        uint32_t step = 1u;
        for (axis = w->rank; axis-- > 0u;) {
            /* A broadcast axis (extent 1) does not move the operand. */
            stride[k][axis] = w->extent[k][axis] == 1 ? 0u : step;
            step *= (uint32_t)w->extent[k][axis];
        }
    }
    for (axis = 0; axis < w->rank; ++axis) {
        total *= (uint32_t)w->dims[axis];
        index[axis] = 0;
    }
    for (i = 0; i < total; ++i) {
        out[i] = condition[offset[0]] != 0u ? x[offset[1]] : y[offset[2]];
        for (axis = w->rank; axis-- > 0u;) {
            if (++index[axis] < w->dims[axis]) {
                for (k = 0; k < 3u; ++k) {
                    offset[k] += stride[k][axis];
                }
                break;
            }
            for (k = 0; k < 3u; ++k) {
                offset[k] -= stride[k][axis] * (uint32_t)(w->dims[axis] - 1);
            }
            index[axis] = 0;
        }
    }
}

void tgr_reduce_all_bool(uint32_t outer, uint32_t length, uint32_t inner, const uint8_t *in, uint8_t *out)
{
    uint32_t o, i, n;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < inner; ++i) {
            uint8_t all = 1u;
            for (n = 0; n < length && all; ++n) {
                all = in[((size_t)o * length + n) * inner + i] != 0u;
            }
            out[(size_t)o * inner + i] = all;
        }
    }
}
