/*
 * Little-endian field reads and alignment, for anything that walks packed bytes: plan records,
 * and the bias and requantization arrays kernels read straight out of the plan.
 *
 * Some u16/u32 fields sit at odd offsets, so every field is read through memcpy rather than a
 * cast: the compiler emits one load where the core loads unaligned words (Armv7-M and Armv8-M
 * mainline, x86) and byte loads where it cannot. Fields are little-endian, read in the host's
 * order: the loader refuses big-endian hosts.
 */
#ifndef TGR_BASE_BYTES_H
#define TGR_BASE_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t rd_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline uint32_t rd_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline int32_t rd_i32(const uint8_t *p) { return (int32_t)rd_u32(p); }
static inline float rd_f32(const uint8_t *p)
{
    uint32_t bits = rd_u32(p);
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* `alignment` must be a power of two. */
static inline uint32_t align_up(uint32_t value, uint32_t alignment)
{
    return (value + alignment - 1u) & ~(alignment - 1u);
}

#endif /* TGR_BASE_BYTES_H */
