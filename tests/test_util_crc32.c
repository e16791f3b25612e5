/* util/crc32: the journal's checksum (jbd2 v1, COMPAT_CHECKSUM) against its
 * definition - CRC-32/MPEG-2's check value, and a bit-at-a-time reference
 * over random buffers at every length and alignment the slicing code
 * distinguishes (seeded; the seed is printed). util/crc32c likewise, plus
 * its 3-way hardware path against the tables at random lengths, offsets and
 * seeds and at every edge of its block ladder, and crc32c_zeros against
 * real zero buffers and as the incremental update it is for. */
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

/* The hardware path's 3-way blocks (3 x 1360, 3 x 336, 3 x 80 bytes, then
 * one stream) against the tables and, for short lengths, the definition. */
static void crc32c_check(uint32_t s, const uint8_t *p, size_t len)
{
	uint32_t sw = crc32c_sw(s, p, len);
	assert_int_equal(crc32c(s, p, len), sw);
	if (len <= 1024)
		assert_int_equal(sw, crc32c_ref(s, p, len));
}

static void test_crc32c_hw_lengths(void **state)
{
	(void)state;
	static uint8_t buf[70000 + 64];
	random_fill(buf, sizeof buf);
	/* random lengths 0..70000 at random misalignments and seeds */
	for (int i = 0; i < 400; i++) {
		size_t len = (size_t)rand() % 70001, off = (size_t)rand() % 64;
		crc32c_check((uint32_t)rand() * 2654435761u, buf + off, len);
	}
	/* every length to 1100 (the short and middle blocks and their tails) */
	for (size_t len = 0; len <= 1100; len++)
		crc32c_check((uint32_t)rand() * 2654435761u, buf + (len % 16), len);
	/* the edges of each block size and of runs of them */
	size_t chunks[] = { 80, 336, 1360 };
	for (size_t c = 0; c < 3; c++)
		for (size_t mult = 1; mult <= 4; mult++)
			for (size_t d = 0; d <= 17; d++) {
				size_t base = 3 * chunks[c] * mult;
				crc32c_check(~0u, buf + (d & 7), base + d);
				crc32c_check(0x12345678u, buf + 1, base - d - 1);
			}
	size_t sizes[] = { 4096, 4092, 4084, 1024, 1020, 256, 64, 65536, 65532, 8192 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		for (size_t off = 0; off < 8; off++)
			crc32c_check((uint32_t)rand(), buf + off, sizes[i]);
	/* chaining across random split points still equals the whole */
	for (int i = 0; i < 100; i++) {
		size_t len = (size_t)rand() % 70001, cut = len ? (size_t)rand() % len : 0;
		uint32_t s = (uint32_t)rand();
		assert_int_equal(crc32c(crc32c(s, buf, cut), buf + cut, len - cut), crc32c(s, buf, len));
	}
}

static void test_crc32c_zeros(void **state)
{
	(void)state;
	static uint8_t zeros[200000 + 64];
	static uint8_t seedbuf[8];
	random_fill(seedbuf, sizeof seedbuf); /* seeds rand() */
	size_t ns[] = { 0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 512, 4095, 4096, 4097, 65535, 65536, 65537,
			65599, 65600, 131072, 131073, 200000 };
	for (size_t i = 0; i < sizeof ns / sizeof ns[0] + 200; i++) {
		size_t n = i < sizeof ns / sizeof ns[0] ? ns[i] : (size_t)rand() % 200001;
		uint32_t s = (uint32_t)rand() * 2654435761u;
		uint32_t want = crc32c(s, zeros, n);
		assert_int_equal(crc32c_zeros(s, n), want);
		assert_int_equal(crc32c_zeros_sw(s, n), want);
	}
	/* a register of 0 stays 0; x^(8n) composes: zeros(a) then zeros(b) is
	 * zeros(a + b), which checks the 64 KiB powers far past any buffer */
	assert_int_equal(crc32c_zeros(0, 123456789), 0);
	size_t big[] = { (size_t)1 << 20, ((size_t)1 << 33) + 4097, ((size_t)1 << 40) - 1, (size_t)3 << 61 };
	for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
		size_t a = big[i], b = (size_t)rand() % 200001;
		uint32_t s = (uint32_t)rand();
		uint32_t ab = crc32c_zeros(s, a + b);
		assert_int_equal(crc32c_zeros(crc32c_zeros(s, a), b), ab);
		assert_int_equal(crc32c_zeros(crc32c_zeros(s, b), a), ab);
		assert_int_equal(crc32c_zeros_sw(s, a + b), ab);
	}
	/* a 1 MiB run against real zeros, 200000 bytes at a time */
	uint32_t s = 0xdeadbeefu, c = s;
	for (size_t done = 0; done < ((size_t)1 << 20); done += 200000)
		c = crc32c(c, zeros, ((size_t)1 << 20) - done < 200000 ? ((size_t)1 << 20) - done : 200000);
	assert_int_equal(crc32c_zeros(s, (size_t)1 << 20), c);
}

/* The incremental update crc32c_zeros is for (util/crc32c.h): flipping a
 * range of bits in a 4 KiB bitmap changes its checksum by the checksum of
 * the flipped bytes alone, shifted over the bytes after them. */
static void test_crc32c_incremental(void **state)
{
	(void)state;
	static uint8_t bitmap[4096], delta[4096];
	random_fill(bitmap, sizeof bitmap);
	uint32_t s = (uint32_t)rand();
	uint32_t crc = crc32c(s, bitmap, sizeof bitmap);
	for (int i = 0; i < 500; i++) {
		size_t nbits = sizeof bitmap * 8;
		size_t first = (size_t)rand() % nbits;
		size_t count = 1 + (size_t)rand() % (i % 4 ? 64 : nbits - first);
		if (count > nbits - first)
			count = nbits - first;
		size_t off = first / 8, end = (first + count + 7) / 8, n = end - off;
		memset(delta, 0, n);
		for (size_t b = first; b < first + count; b++)
			delta[b / 8 - off] ^= (uint8_t)(1u << (b % 8));
		for (size_t k = 0; k < n; k++)
			bitmap[off + k] ^= delta[k];
		crc ^= crc32c_zeros(crc32c(0, delta, n), sizeof bitmap - end);
		assert_int_equal(crc, crc32c(s, bitmap, sizeof bitmap));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_value),
		cmocka_unit_test(test_random_buffers),
		cmocka_unit_test(test_crc32c_check_value),
		cmocka_unit_test(test_crc32c_random),
		cmocka_unit_test(test_crc32c_hw_lengths),
		cmocka_unit_test(test_crc32c_zeros),
		cmocka_unit_test(test_crc32c_incremental),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
