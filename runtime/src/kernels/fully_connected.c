/*
 * Gemm / fully connected (METHOD_FULLY_CONNECTED, every build). Contract: kernels.h,
 * tgr_fully_connected_s8.
 *
 * Two output features per pass over the row's inputs, each input word widened once for both
 * filters (dot2_s8: packed pairs, Helium dot products for 16 inputs and more in mve=1); an odd
 * last feature is computed twice.
 */
#include "kernels/conv_common.h"

void tgr_fully_connected_s8(int32_t rows, int32_t in_features, int32_t out_features, const int8_t *input,
                            const int8_t *filter, const uint8_t *bias, const tgr_requant *rq, int8_t *output)
{
    int32_t r, oc;
    const tgr_requant q = *rq; /* a local copy, as in tgr_conv_general_s8 */
    const uint32_t offset = s32_pair(-q.in_zp);
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + (int64_t)r * in_features;
        for (oc = 0; oc < out_features; oc += 2) {
            const int32_t oc1 = oc + 1 < out_features ? oc + 1 : oc;
            int32_t acc0 = bias_at(bias, oc);
            int32_t acc1 = bias_at(bias, oc1);
            dot2_s8(x, filter + (int64_t)oc * in_features, filter + (int64_t)oc1 * in_features, in_features, q.in_zp,
                    offset, &acc0, &acc1);
            output[oc] = requantize(acc0, &q, oc);
            output[oc1] = requantize(acc1, &q, oc1);
        }
        output += out_features;
    }
}
