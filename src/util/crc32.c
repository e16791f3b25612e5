/* CRC-32, MSB-first (util/crc32.h). Slicing by 4 over a table built once
 * (pthread_once: callers run on several threads). */
#include "crc32.h"

#include <pthread.h>

#define CRC32_BE_POLY 0x04C11DB7u

static uint32_t table[4][256];
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
		for (int k = 1; k < 4; k++)
			table[k][i] = (table[k - 1][i] << 8) ^ table[0][table[k - 1][i] >> 24];
}

uint32_t crc32_be(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&table_once, table_build);
	const uint8_t *p = buf;
	while (len >= 4) {
		crc ^= (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
		crc = table[3][crc >> 24] ^ table[2][(crc >> 16) & 0xff] ^ table[1][(crc >> 8) & 0xff] ^
		      table[0][crc & 0xff];
		p += 4;
		len -= 4;
	}
	while (len--)
		crc = (crc << 8) ^ table[0][(crc >> 24) ^ *p++];
	return crc;
}
