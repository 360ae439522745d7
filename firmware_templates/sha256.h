/*
 * SHA-256 (FIPS 180-4) over one buffer: what binds a validate=digest firmware to the plan the
 * build validated. A checksum such as FNV-1a can be matched by a plan built to collide with it;
 * finding a second plan with the same SHA-256 is not feasible, so a plan that passes is the plan.
 */
#ifndef FW_SHA256_H
#define FW_SHA256_H

#include <stdint.h>

/* The 32-byte digest of data[0, size), big-endian words as the standard writes it. */
void fw_sha256(const uint8_t *data, uint32_t size, uint8_t digest[32]);

#endif
