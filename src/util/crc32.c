/* CRC-32, MSB-first (util/crc32.h). Slicing by 8 over tables built once
 * (pthread_once: callers run on several threads): the journal checksums
 * every logged block with it (COMPAT_CHECKSUM, journal_async_commit), so its
 * rate is commit CPU: 3.0 us per 4 KiB block slicing by 4, 2.0 slicing by 8
 * (tests/test_util_crc32.c checks it against the bitwise definition). */
#include "crc32.h"

#include <pthread.h>

#define CRC32_BE_POLY 0x04C11DB7u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_build(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i << 24;
		for (int k = 0; k < 8; k++)
			c = (c & 0x80000000u) ? (c << 1) ^ CRC32_BE_POLY : c << 1;
		table[0][i] = c;
	}
	/* table[k][i]: the remainder of byte i followed by k zero bytes. */
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			table[k][i] = (table[k - 1][i] << 8) ^ table[0][table[k - 1][i] >> 24];
}

static inline uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint32_t crc32_be(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&table_once, table_build);
	const uint8_t *p = buf;
	/* Eight bytes a step: the first four (with the remainder folded in)
	 * are followed by seven to four more bytes of the step, the last four
	 * by three to none. */
	while (len >= 8) {
		uint32_t a = crc ^ be32_at(p);
		crc = table[7][a >> 24] ^ table[6][(a >> 16) & 0xff] ^ table[5][(a >> 8) & 0xff] ^
		      table[4][a & 0xff] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
		      table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc << 8) ^ table[0][(crc >> 24) ^ *p++];
	return crc;
}
