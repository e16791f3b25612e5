/* The checksums of ext4's metadata_csum and jbd2's v2/v3 checksums, and of
 * the older uninit_bg group descriptors.
 *
 * crc32c: CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, no final
 * inversion inside: the caller passes the seed (~0 for a fresh sum, or the
 * filesystem's checksum seed) and keeps the raw remainder, as the kernel's
 * crc32c() and ext4_chksum() do. The standard check value CRC-32C of
 * "123456789" (init ~0, final xor ~0) is 0xE3069283, so
 * crc32c(~0, "123456789", 9) == ~0xE3069283 == 0x1CF96D7C.
 *
 * crc16: CRC-16/ARC, reflected polynomial 0xA001 (0x8005), no inversion
 * inside: the kernel's crc16(), which gdt_csum group descriptor checksums
 * use (seed ~0). Check value crc16(0, "123456789", 9) == 0xBB3D. */
#ifndef NOSTALL_UTIL_CRC32C_H
#define NOSTALL_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* The portable table-driven way alone (tests compare it with the CPU's). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* Whether crc32c uses the CPU's instruction (SSE4.2 on x86-64). */
int crc32c_hw_available(void);

/* crc32c(crc, <n zero bytes>, n), in a time that does not grow with n (a
 * few carry-less products; n beyond 64 KiB adds one per set bit of
 * n / 65536). For incremental checksums: the raw register is linear in
 * (seed, message) jointly, so for equal-length messages
 *   crc32c(s, M ^ D, len) == crc32c(s, M, len) ^ crc32c(0, D, len)
 * and a change confined to a span costs the span alone:
 *   crc32c(0, zeros(a) || X || zeros(b)) == crc32c_zeros(crc32c(0, X, |X|), b)
 * (leading zeros leave a zero register at zero). So when bytes [off,
 * off + n) of a len-byte buffer change by D (old ^ new over the span):
 *   new_crc = old_crc ^ crc32c_zeros(crc32c(0, D, n), len - off - n). */
uint32_t crc32c_zeros(uint32_t crc, size_t n);
/* The portable way alone (a loop over bits instead of PCLMULQDQ; tests). */
uint32_t crc32c_zeros_sw(uint32_t crc, size_t n);

uint16_t crc16(uint16_t crc, const void *buf, size_t len);

#endif
