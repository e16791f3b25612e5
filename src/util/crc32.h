/* CRC-32 in the big-endian (MSB-first) bit order: polynomial 0x04C11DB7,
 * no reflection, no inversion inside (the caller passes the seed and
 * keeps the raw remainder). This is the checksum jbd2's v1 journal
 * checksums (COMPAT_CHECKSUM, the commit block's h_chksum[0]) are defined
 * with: seed ~0, chained over each logged block in log order. With seed ~0
 * and no final xor it is CRC-32/MPEG-2 ("123456789" -> 0x0376E6E7). */
#ifndef NOSTALL_UTIL_CRC32_H
#define NOSTALL_UTIL_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32_be(uint32_t crc, const void *buf, size_t len);

#endif
