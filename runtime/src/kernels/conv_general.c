/*
 * Conv, general variant (METHOD_CONV_UNPADDED, _PADDED and _PADDED_WIDE in the DSP and portable
 * builds; in the Helium build the calls of a _PADDED_WIDE layer whose windows are cut by padding).
 * Contract: kernels.h, tgr_conv_general_s8.
 *
 * One output pixel at a time (conv_pixel.h): its window's taps inside the input found once, then
 * four output channels per pass over them, then two (an odd last channel is computed twice); with
 * dilation 1 the inside taps of a kernel row are one contiguous run of inputs, taken four at a
 * time as packed 16-bit pairs (SMLAD; Helium dot products for runs of 16 and more in mve=1).
 * Built in every build: the Helium build takes it for windows too large for the patch.
 */
#include "kernels/conv_pixel.h"

void tgr_conv_general_s8(const tgr_window *w, const int8_t *input, const int8_t *filter, const uint8_t *bias,
                         const tgr_requant *rq, int8_t *output)
{
    /* Local copies: the int8 output stores may alias anything the pointers reach, so the
     * compiler would reload every field after each store. */
    const int32_t in_c = w->in_c;
    const tgr_window win = *w;
    const tgr_requant q = *rq;
    int32_t n, oy, ox;
    for (n = 0; n < win.batch; ++n) {
        const int8_t *in_image = input + (int64_t)n * win.in_h * win.in_w * in_c;
        for (oy = 0; oy < win.out_h; ++oy) {
            for (ox = 0; ox < win.out_w; ++ox) {
                conv_pixel_fast(&win, in_image, filter, bias, &q, oy, ox, output, 0);
                output += win.out_c;
            }
        }
    }
}
