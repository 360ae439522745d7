/*
 * DepthwiseConv, channel multiplier 1 (METHOD_DEPTHWISE in the DSP and portable builds). Contract:
 * kernels.h, tgr_depthwise_s8. Empty in the Helium build, which takes tgr_depthwise_mve_s8.
 *
 * One output pixel at a time (depthwise_pixel.h): four channels per tap, the nine taps of a 3x3
 * window wholly inside the input as straight-line code, the taps inside the input otherwise.
 */
#include "kernels/isa.h"

#if !TGR_SIMD_MVE
#include "kernels/depthwise_pixel.h"

void tgr_depthwise_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                      const tgr_requant *rq, int8_t *output)
{
    const tgr_window win = *w; /* local copies, as in tgr_conv_general_s8 */
    const tgr_requant q = *rq;
    depthwise_pixels(&win, input, filter, bias, &q, output, 0);
}

#else
typedef int tgr_depthwise_not_built; /* a translation unit declares something (C99 6.9) */
#endif
