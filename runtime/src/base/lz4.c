/*
 * A bounds-checked decoder for the raw LZ4 block format (no frame, no size prefix, no
 * checksum), written from the published format description: a sequence is a token (literal
 * length in the high nibble, match length - 4 in the low nibble, each extended by 255-runs),
 * the literals, then a 2-byte little-endian match offset; the last sequence stops after its
 * literals.
 *
 * The same walk runs with no output buffer at load time, so a block whose structure is broken
 * or whose size differs from the plan's `uncompressed_size` is refused before anything runs.
 * Corrupted literal bytes cannot be detected: the format carries no checksum.
 */
#include "base/lz4.h"

#include <string.h>

/* Read an LZ4 length extension (255-runs); returns 0 when the input ends first or the length
 * overflows. */
static int read_extension(const uint8_t *src, uint32_t src_len, uint32_t *pos, uint32_t *length)
{
    uint8_t b;
    do {
        if (*pos >= src_len) {
            return 0;
        }
        b = src[(*pos)++];
        if (*length > 0xFFFFFFFFu - b) {
            return 0;
        }
        *length += b;
    } while (b == 255u);
    return 1;
}

int tgr_lz4_decode(const uint8_t *src, uint32_t src_len, uint8_t *dst, uint32_t dst_len)
{
    uint32_t in = 0;
    uint32_t out = 0;
    while (in < src_len) {
        uint8_t token = src[in++];
        uint32_t literals = token >> 4;
        uint32_t match;
        uint32_t offset;
        if (literals == 15u && !read_extension(src, src_len, &in, &literals)) {
            return 0;
        }
        if (literals > src_len - in || literals > dst_len - out) {
            return 0;
        }
        if (dst != NULL) {
            memcpy(dst + out, src + in, literals);
        }
        in += literals;
        out += literals;
        if (in == src_len) {
            break; /* the last sequence has no match */
        }
        if (src_len - in < 2u) {
            return 0;
        }
        offset = (uint32_t)src[in] | ((uint32_t)src[in + 1u] << 8);
        in += 2u;
        if (offset == 0u || offset > out) {
            return 0;
        }
        match = token & 15u;
        if (match == 15u && !read_extension(src, src_len, &in, &match)) {
            return 0;
        }
        match += 4u;
        if (match > dst_len - out) {
            return 0;
        }
        if (dst != NULL) {
            /* Byte by byte: a match may overlap the bytes it produces. */
            uint32_t k;
            for (k = 0; k < match; ++k) {
                dst[out + k] = dst[out + k - offset];
            }
        }
        out += match;
    }
    return out == dst_len;
}
