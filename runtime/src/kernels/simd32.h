/*
 * Two signed 16-bit lanes in one 32-bit word, the form the Armv7E-M/Armv8-M DSP extension
 * multiplies two pairs at a time in (SMLAD). On a target with the extension (__ARM_FEATURE_DSP:
 * the default cortex-m55+nomve firmware) each function is one instruction through ACLE
 * intrinsics; elsewhere (the host library) it is the same arithmetic in portable C, so the fast
 * kernels built on these run, and are compared with the reference, on the host too.
 *
 * Lane 0 is bits 0..15. A word of four int8 values b0..b3 (little-endian, b0 lowest) widens to
 * the even pair (b0, b2) and the odd pair (b1, b3): a dot product pairs them the same way on
 * both operands, so the order of the products changes and, the sums being taken modulo 2^32 as
 * the int32 accumulator of the reference wraps, the result does not.
 */
#ifndef TGR_KERNELS_SIMD32_H
#define TGR_KERNELS_SIMD32_H

#include <stdint.h>
#include <string.h>

#include "kernels/isa.h"

#if TGR_SIMD32_DSP
#include <arm_acle.h>
#endif

/* Helium (M-profile vector extension, integer): the `mve=1` firmware (-mcpu=cortex-m55). The
 * convolution kernels take their Helium variants (*_mve.c) where this is 1. */
#if TGR_SIMD_MVE
#include <arm_mve.h>
#endif

/* Four int8 values from any address (the cores we target load unaligned words in one LDR). */
static inline uint32_t s32_load(const int8_t *p)
{
    uint32_t word;
    memcpy(&word, p, sizeof word);
    return word;
}

/* The same 16-bit value in both lanes. */
static inline uint32_t s32_pair(int32_t v)
{
    return ((uint32_t)v & 0xFFFFu) * 0x10001u;
}

#if TGR_SIMD32_DSP

/* offset + (b0, b2) and offset + (b1, b3), lane by lane. The odd forms rotate the word inside
 * the instruction (SXTB16/SXTAB16 ..., ROR #8), which GCC does not fold from C, hence the asm. */
static inline uint32_t s32_even_plus(uint32_t offset, uint32_t word)
{
    return (uint32_t)__sxtab16((int16x2_t)offset, (int8x4_t)word);
}
static inline uint32_t s32_odd_plus(uint32_t offset, uint32_t word)
{
    uint32_t out;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(out) : "r"(offset), "r"(word));
    return out;
}
/* (b0, b2) and (b1, b3), sign-extended. */
static inline uint32_t s32_even(uint32_t word)
{
    return (uint32_t)__sxtb16((int8x4_t)word);
}
static inline uint32_t s32_odd(uint32_t word)
{
    uint32_t out;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(out) : "r"(word));
    return out;
}
/* acc + a.lane0 * b.lane0 + a.lane1 * b.lane1, modulo 2^32. */
static inline int32_t s32_mla_pairs(uint32_t a, uint32_t b, int32_t acc)
{
    return __smlad((int16x2_t)a, (int16x2_t)b, acc);
}
/* acc + a.lane0 * b.lane0, and acc + a.lane1 * b.lane1, modulo 2^32. */
static inline int32_t s32_mla_low(uint32_t a, uint32_t b, int32_t acc)
{
    return __smlabb((int32_t)a, (int32_t)b, acc);
}
static inline int32_t s32_mla_high(uint32_t a, uint32_t b, int32_t acc)
{
    return __smlatt((int32_t)a, (int32_t)b, acc);
}
/* acc + s * pair.lane1, for a value s in 16 bits (SMLABT). */
static inline int32_t s32_mla_by_high(int32_t s, uint32_t pair, int32_t acc)
{
    return __smlabt(s, (int32_t)pair, acc);
}
/* v clamped to [-128, 127] (SSAT). */
static inline int32_t s32_sat8(int32_t v)
{
    return __ssat(v, 8);
}
/* The high word of a * b + 2^31, a and b signed (SMMULR). */
static inline int32_t s32_mul_high_round(int32_t a, int32_t b)
{
    int32_t out;
    __asm__("smmulr %0, %1, %2" : "=r"(out) : "r"(a), "r"(b));
    return out;
}

#else

static inline int32_t s32_lane(uint32_t word, int lane)
{
    return (int32_t)(int16_t)(uint16_t)(word >> (16 * lane));
}
static inline uint32_t s32_make(int32_t lane0, int32_t lane1)
{
    return ((uint32_t)lane0 & 0xFFFFu) | ((uint32_t)lane1 << 16);
}
static inline uint32_t s32_even(uint32_t word)
{
    return s32_make((int8_t)(uint8_t)word, (int8_t)(uint8_t)(word >> 16));
}
static inline uint32_t s32_odd(uint32_t word)
{
    return s32_make((int8_t)(uint8_t)(word >> 8), (int8_t)(uint8_t)(word >> 24));
}
static inline uint32_t s32_even_plus(uint32_t offset, uint32_t word)
{
    const uint32_t even = s32_even(word);
    return s32_make(s32_lane(offset, 0) + s32_lane(even, 0), s32_lane(offset, 1) + s32_lane(even, 1));
}
static inline uint32_t s32_odd_plus(uint32_t offset, uint32_t word)
{
    const uint32_t odd = s32_odd(word);
    return s32_make(s32_lane(offset, 0) + s32_lane(odd, 0), s32_lane(offset, 1) + s32_lane(odd, 1));
}
static inline int32_t s32_mla_pairs(uint32_t a, uint32_t b, int32_t acc)
{
    const uint32_t sum = (uint32_t)acc + (uint32_t)(s32_lane(a, 0) * s32_lane(b, 0)) +
                         (uint32_t)(s32_lane(a, 1) * s32_lane(b, 1));
    return (int32_t)sum;
}
static inline int32_t s32_mla_low(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(s32_lane(a, 0) * s32_lane(b, 0)));
}
static inline int32_t s32_mla_high(uint32_t a, uint32_t b, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(s32_lane(a, 1) * s32_lane(b, 1)));
}
static inline int32_t s32_mla_by_high(int32_t s, uint32_t pair, int32_t acc)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(s * s32_lane(pair, 1)));
}
static inline int32_t s32_sat8(int32_t v)
{
    return v < -128 ? -128 : v > 127 ? 127 : v;
}
static inline int32_t s32_mul_high_round(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 31)) >> 32);
}

#endif

#if TGR_SIMD_MVE
/* fp_mul_by_quantized_multiplier on four lanes, exactly, for validated pairs (shift -31..31):
 * VSHL wraps like the scalar left shift; VQRDMULH is fp_srdhm (its one saturating case
 * included); VRSHL's rounding right shift rounds ties up, and one less for a negative value
 * (saturating, which leaves INT32_MIN exact) makes that fp_rdbpot's ties away from zero. */
static inline int32x4_t mve_mul_by_quantized_multiplier(int32x4_t x, int32x4_t multiplier, int32x4_t shift)
{
    int32x4_t v = vshlq_s32(x, vmaxq_s32(shift, vdupq_n_s32(0)));
    v = vqrdmulhq_s32(v, multiplier);
    v = vqaddq_s32(v, vandq_s32(vshrq_n_s32(v, 31), vshrq_n_s32(shift, 31)));
    return vrshlq_s32(v, vminq_s32(shift, vdupq_n_s32(0)));
}
#endif

#endif /* TGR_KERNELS_SIMD32_H */
