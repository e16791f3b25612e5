/* util/crc32: the journal's checksum (jbd2 v1, COMPAT_CHECKSUM) against its
 * definition - CRC-32/MPEG-2's check value, and a bit-at-a-time reference
 * over random buffers at every length and alignment the slicing code
 * distinguishes (seeded; the seed is printed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "util/crc32.h"
#include "util/crc32c.h"

/* The definition: MSB first, polynomial 0x04C11DB7, one bit at a time. */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= (uint32_t)*p++ << 24;
		for (int k = 0; k < 8; k++)
			crc = (crc & 0x80000000u) ? (crc << 1) ^ 0x04C11DB7u : crc << 1;
	}
	return crc;
}

static void test_check_value(void **state)
{
	(void)state;
	/* CRC-32/MPEG-2: seed ~0, no reflection, no final xor */
	assert_int_equal(crc32_be(~0u, "123456789", 9), 0x0376E6E7u);
	assert_int_equal(crc32_be(~0u, "", 0), ~0u);
	assert_int_equal(crc32_be(0, "123456789", 9), crc_ref(0, (const uint8_t *)"123456789", 9));
}

/* Seeds rand() (time, or NOSTALL_SEED; printed) and fills buf. */
static void random_fill(uint8_t *buf, size_t n)
{
	unsigned seed = (unsigned)time(NULL);
	const char *env = getenv("NOSTALL_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 0);
	print_message("seed %u (NOSTALL_SEED)\n", seed);
	srand(seed);
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)rand();
}

static void test_random_buffers(void **state)
{
	(void)state;
	static uint8_t buf[4096 + 16];
	random_fill(buf, sizeof buf);
	/* every length up to 64 at every offset 0..7 (the 8-byte steps and
	 * their tails), then whole and odd-sized blocks */
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 64; len++) {
			uint32_t seedcrc = (uint32_t)rand() * 2654435761u;
			assert_int_equal(crc32_be(seedcrc, buf + off, len), crc_ref(seedcrc, buf + off, len));
		}
	size_t lens[] = { 512, 1024, 4096, 4095, 4097 - 8, 1000 };
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
		assert_int_equal(crc32_be(~0u, buf + (i & 7), lens[i]), crc_ref(~0u, buf + (i & 7), lens[i]));
	/* chaining: the checksum of a whole equals that of its pieces in order */
	uint32_t whole = crc32_be(~0u, buf, 4096);
	uint32_t parts = crc32_be(crc32_be(crc32_be(~0u, buf, 13), buf + 13, 1000), buf + 1013, 4096 - 1013);
	assert_int_equal(whole, parts);
}

/* Bitwise definitions of the reflected CRCs (util/crc32c.h). */
static uint32_t crc32c_ref(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
	}
	return crc;
}

static uint16_t crc16_ref(uint16_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (uint16_t)((crc >> 1) ^ 0xA001u) : (uint16_t)(crc >> 1);
	}
	return crc;
}

static void test_crc32c_check_value(void **state)
{
	(void)state;
	/* CRC-32C: init ~0, final xor ~0 -> 0xE3069283; raw remainder is its inverse */
	assert_int_equal(~crc32c(~0u, "123456789", 9), 0xE3069283u);
	assert_int_equal(~crc32c_sw(~0u, "123456789", 9), 0xE3069283u);
	assert_int_equal(crc32c(~0u, "", 0), ~0u);
	/* CRC-16/ARC: init 0, no xor -> 0xBB3D */
	assert_int_equal(crc16(0, "123456789", 9), 0xBB3D);
	print_message("crc32c: %s\n", crc32c_hw_available() ? "the CPU's instruction (SSE4.2)" : "tables");
}

static void test_crc32c_random(void **state)
{
	(void)state;
	static uint8_t buf[4096 + 16];
	random_fill(buf, sizeof buf);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 64; len++) {
			uint32_t s = (uint32_t)rand() * 2654435761u;
			uint32_t ref = crc32c_ref(s, buf + off, len);
			assert_int_equal(crc32c(s, buf + off, len), ref);
			assert_int_equal(crc32c_sw(s, buf + off, len), ref);
			uint16_t s16 = (uint16_t)rand();
			assert_int_equal(crc16(s16, buf + off, len), crc16_ref(s16, buf + off, len));
		}
	assert_int_equal(crc32c(~0u, buf + 3, 4096), crc32c_ref(~0u, buf + 3, 4096));
	uint32_t whole = crc32c(~0u, buf, 4096);
	assert_int_equal(crc32c(crc32c(~0u, buf, 1013), buf + 1013, 4096 - 1013), whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_value),
		cmocka_unit_test(test_random_buffers),
		cmocka_unit_test(test_crc32c_check_value),
		cmocka_unit_test(test_crc32c_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
