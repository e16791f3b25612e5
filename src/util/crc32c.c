/* CRC-32C and CRC-16/ARC (util/crc32c.h). crc32c is on every metadata
 * block an ext4 image with metadata_csum reads or writes, and on every
 * block jbd2 logs with v3 checksums, so it runs on the CPU's instruction
 * where there is one (x86-64 SSE4.2: 8 bytes per instruction) and slices by
 * 8 over tables otherwise. Tables are built once (pthread_once: callers run
 * on several threads). tests/test_util_crc32.c checks both ways against the
 * bitwise definition and the standard check values. */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u /* reflected 0x1EDC6F41 */
#define CRC16_POLY 0xA001u      /* reflected 0x8005 */

static uint32_t t32[8][256];
static uint16_t t16[256];
static int hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void tables_build(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		t32[0][i] = c;
		uint16_t d = (uint16_t)i;
		for (int k = 0; k < 8; k++)
			d = (d & 1) ? (uint16_t)((d >> 1) ^ CRC16_POLY) : (uint16_t)(d >> 1);
		t16[i] = d;
	}
	/* t32[k][i]: byte i followed by k zero bytes (LSB-first order). */
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			t32[k][i] = (t32[k - 1][i] >> 8) ^ t32[0][t32[k - 1][i] & 0xff];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	hw = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, tables_build);
	const uint8_t *p = buf;
	while (len >= 8) {
		uint32_t a = crc ^ le32_at(p);
		crc = t32[7][a & 0xff] ^ t32[6][(a >> 8) & 0xff] ^ t32[5][(a >> 16) & 0xff] ^ t32[4][a >> 24] ^
		      t32[3][p[4]] ^ t32[2][p[5]] ^ t32[1][p[6]] ^ t32[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ t32[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8); /* unaligned; little-endian host */
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return c32;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, tables_build);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (hw)
		return crc32c_hw(crc, buf, len);
#endif
	return crc32c_sw(crc, buf, len);
}

int crc32c_hw_available(void)
{
	pthread_once(&once, tables_build);
	return hw;
}

uint16_t crc16(uint16_t crc, const void *buf, size_t len)
{
	pthread_once(&once, tables_build);
	const uint8_t *p = buf;
	while (len--)
		crc = (uint16_t)((crc >> 8) ^ t16[(crc ^ *p++) & 0xff]);
	return crc;
}
