/*
 * Inline helpers of the Helium variants only (*_mve.c; empty in every other build): raw int8 dot
 * products over four filters, int32 vectors read from plan arrays, and the requantization of four
 * channels at once. Helpers every variant takes, the Helium dot products of dot2_s8/dot4_s8
 * among them: conv_common.h.
 */
#ifndef TGR_KERNELS_MVE_COMMON_H
#define TGR_KERNELS_MVE_COMMON_H

#include "kernels/conv_common.h"

#if TGR_SIMD_MVE

/* acc[k] += sum x[i] * fk[i] over i < n for the four filters fk = f0 + k * filter_stride: raw
 * int8 products, sixteen per VMLADAVA, the zero point left to the caller. */
static inline void dot4_mve_raw(const int8_t *x, const int8_t *f0, int32_t filter_stride, int32_t n, int32_t *acc)
{
    const int8_t *f1 = f0 + filter_stride;
    const int8_t *f2 = f1 + filter_stride;
    const int8_t *f3 = f2 + filter_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], i = 0;
    for (; i + 16 <= n; i += 16) {
        const int8x16_t xv = vldrbq_s8(x + i);
        a0 = vmladavaq_s8(a0, xv, vldrbq_s8(f0 + i));
        a1 = vmladavaq_s8(a1, xv, vldrbq_s8(f1 + i));
        a2 = vmladavaq_s8(a2, xv, vldrbq_s8(f2 + i));
        a3 = vmladavaq_s8(a3, xv, vldrbq_s8(f3 + i));
    }
    if (i < n) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - i));
        const int8x16_t xv = vldrbq_z_s8(x + i, live);
        a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(f0 + i, live));
        a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(f1 + i, live));
        a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(f2 + i, live));
        a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(f3 + i, live));
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* Four int32 values `step` bytes apart (4: one per channel; 0: one for all) as a vector, read
 * with scalar loads: plan arrays need not be aligned for vector loads. */
static inline int32x4_t mve_load4_i32(const uint8_t *p, int32_t step)
{
    int32x4_t v = vdupq_n_s32(rd_i32(p));
    v = vsetq_lane_s32(rd_i32(p + step), v, 1);
    v = vsetq_lane_s32(rd_i32(p + 2 * step), v, 2);
    return vsetq_lane_s32(rd_i32(p + 3 * step), v, 3);
}

/* requantize() on four lanes (simd32.h: mve_mul_by_quantized_multiplier). */
static inline int32x4_t mve_requantize4(int32x4_t acc, int32x4_t multiplier, int32x4_t shift, const tgr_requant *rq)
{
    const int32x4_t v = vaddq_n_s32(mve_mul_by_quantized_multiplier(acc, multiplier, shift), rq->out_zp);
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(rq->act_min)), vdupq_n_s32(rq->act_max));
}

/* Multiplier and shift vectors of channels c..c+3. */
static inline void mve_channel_pairs(const tgr_requant *rq, int32_t c, int32x4_t *multiplier, int32x4_t *shift)
{
    const int32_t step = rq->per_channel ? 4 : 0;
    *multiplier = mve_load4_i32(rq->multipliers + step * c, step);
    *shift = mve_load4_i32(rq->shifts + step * c, step);
}

#endif /* TGR_SIMD_MVE */

#endif /* TGR_KERNELS_MVE_COMMON_H */
