/*
 * Little-endian field reads and alignment, for anything that walks packed bytes: plan records,
 * and the bias and requantization arrays kernels read straight out of the plan.
 *
 * Some u16/u32 fields sit at odd offsets, so every field is assembled byte by byte rather than
 * loaded through a cast: safe on strict-alignment cores and independent of the compiler's byte
 * order (the loader still refuses big-endian hosts, because tensor data is little-endian).
 */
#ifndef TGR_BASE_BYTES_H
#define TGR_BASE_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
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
