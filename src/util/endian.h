/* Byte-order helpers for on-disk formats: ext3 is little-endian on disk,
 * the JBD journal big-endian. */
#ifndef NOSTALL_UTIL_ENDIAN_H
#define NOSTALL_UTIL_ENDIAN_H

#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static inline uint16_t le16_to_cpu(uint16_t v) { return __builtin_bswap16(v); }
static inline uint32_t le32_to_cpu(uint32_t v) { return __builtin_bswap32(v); }
static inline uint64_t le64_to_cpu(uint64_t v) { return __builtin_bswap64(v); }
static inline uint16_t be16_to_cpu(uint16_t v) { return v; }
static inline uint32_t be32_to_cpu(uint32_t v) { return v; }
static inline uint64_t be64_to_cpu(uint64_t v) { return v; }
#else
static inline uint16_t le16_to_cpu(uint16_t v) { return v; }
static inline uint32_t le32_to_cpu(uint32_t v) { return v; }
static inline uint64_t le64_to_cpu(uint64_t v) { return v; }
static inline uint16_t be16_to_cpu(uint16_t v) { return __builtin_bswap16(v); }
static inline uint32_t be32_to_cpu(uint32_t v) { return __builtin_bswap32(v); }
static inline uint64_t be64_to_cpu(uint64_t v) { return __builtin_bswap64(v); }
#endif
/* A swap is its own inverse. */
static inline uint16_t cpu_to_le16(uint16_t v) { return le16_to_cpu(v); }
static inline uint32_t cpu_to_le32(uint32_t v) { return le32_to_cpu(v); }
static inline uint64_t cpu_to_le64(uint64_t v) { return le64_to_cpu(v); }
static inline uint16_t cpu_to_be16(uint16_t v) { return be16_to_cpu(v); }
static inline uint32_t cpu_to_be32(uint32_t v) { return be32_to_cpu(v); }
static inline uint64_t cpu_to_be64(uint64_t v) { return be64_to_cpu(v); }

/* Little-endian fields at any byte address (no alignment needed): the
 * on-disk checksum fields and the like, written into raw buffers. */
static inline void put_le16(void *p, uint16_t v)
{
	unsigned char *b = p;
	b[0] = (unsigned char)v;
	b[1] = (unsigned char)(v >> 8);
}
static inline void put_le32(void *p, uint32_t v)
{
	unsigned char *b = p;
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t get_le32(const void *p)
{
	const unsigned char *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

#endif
