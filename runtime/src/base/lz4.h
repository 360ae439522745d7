/* Raw LZ4 block decoding (lz4.c). */
#ifndef TGR_LZ4_H
#define TGR_LZ4_H

#include <stdint.h>

/* Decode `src` into exactly `dst_len` bytes at `dst` (or only validate when `dst` is NULL).
 * Returns 1 on success, 0 when the block is malformed or decodes to any other size. */
int tgr_lz4_decode(const uint8_t *src, uint32_t src_len, uint8_t *dst, uint32_t dst_len);

#endif
