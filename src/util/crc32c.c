/* CRC-32C and CRC-16/ARC (util/crc32c.h). crc32c is on every metadata
 * block an ext4 image with metadata_csum reads or writes, and on every
 * block jbd2 logs with v3 checksums, so it runs on the CPU's instruction
 * where there is one (x86-64 SSE4.2: 8 bytes per instruction) and slices by
 * 8 over tables otherwise. Tables are built once (pthread_once: callers run
 * on several threads). tests/test_util_crc32.c checks both ways against the
 * bitwise definition and the standard check values.
 *
 * The algebra everything below rests on. The raw register r (no inversion
 * inside) is a polynomial over GF(2) of degree < 32, stored reflected: bit
 * 31 is the coefficient of x^0, bit 0 that of x^31. Feeding one bit b makes
 * it (r + b*x^31) * x mod P, P = x^32 + 0x1EDC6F41, so the register after a
 * message is linear in (seed, message) jointly:
 *   R(c, A || B) = R(c, A) * x^(8|B|) + R(0, B)   (mod P)
 * and feeding n zero bytes is the multiplication by x^(8n). Two uses:
 *  - crc32c_hw runs three independent streams over three equal chunks of a
 *    block and joins them with that identity; the multiplication by
 *    x^(8L) for a fixed chunk length L is a linear map of the 32-bit
 *    register, so it is tabulated per byte of the register (4 x 256
 *    entries: four lookups and xors).
 *  - crc32c_zeros multiplies by x^(8n) with powers tabulated in steps of
 *    64 bytes and a general 32 x 32 bit product (PCLMULQDQ where there is
 *    one, a loop over the bits otherwise). */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_X86 1
#include <immintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u /* reflected 0x1EDC6F41 */
#define CRC16_POLY 0xA001u      /* reflected 0x8005 */
#define GF_ONE 0x80000000u      /* x^0, reflected */

static uint32_t t32[8][256];
static uint16_t t16[256];
static int hw;    /* SSE4.2: the crc32 instruction */
static int clmul; /* and PCLMULQDQ: crc32c_zeros's product */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The 3-way hardware path's chunk lengths, largest first (multiples of 8:
 * whole crc32 instructions). A buffer takes as many blocks of 3 x 1360
 * bytes as fit, then of 3 x 336, then of 3 x 80, then the rest one stream:
 * 4096 = 4080 + 16, 1024 = 1008 + 16, 256 = 240 + 16, 64 KiB = 16 x 4080 +
 * 240 + 16 (the sizes ext4 and jbd2 checksum, each with a short single
 * stream tail). Below 240 bytes one stream is about as fast: a block's join
 * costs two dependent table shifts, ~12 cycles, the time of 4 serial
 * instructions. The numbers are the shift tables' indices in crc32c_hw. */
#define SHIFT_LONG 1360
#define SHIFT_MID 336
#define SHIFT_SHORT 80
static const size_t shift_len[3] = { SHIFT_LONG, SHIFT_MID, SHIFT_SHORT };
/* shift_tab[j][k][i]: (i << 8k) * x^(8 shift_len[j]) mod P */
static uint32_t shift_tab[3][4][256];

/* crc32c_zeros's powers. n = 65536 u + 64 q + r (q < 1024, r < 64) and
 * the register becomes c * x^(8 * 65536 u) * x^(512 q) * x^(8 r).
 * zpow_hi holds x^(512 q - 33); the clmul product below multiplies by an
 * extra x^33 each time, so the hardware multiplies by zpow_hi then
 * zpow_lo_hw = x^(8 r - 33), the software by zpow_hi then zpow_lo_sw =
 * x^(8 r + 33). The whole 64 KiB units go by square-and-multiply over
 * zpow_big[k] = x^(8 * 65536 * 2^k) (zpow_big_hw: times x^-33). */
#define ZPOW_HI_N 1024
#define ZPOW_BIG_N (sizeof(size_t) * 8 - 16)
static uint32_t zpow_hi[ZPOW_HI_N];
static uint32_t zpow_lo_hw[64], zpow_lo_sw[64];
static uint32_t zpow_big[ZPOW_BIG_N], zpow_big_hw[ZPOW_BIG_N];

/* a * b mod P, reflected, one bit of a at a time: b steps through b * x^k
 * while the terms x^k of a (bit 31 - k) pick which to add. */
static uint32_t gf_mul_sw(uint32_t a, uint32_t b)
{
	uint32_t p = 0;
	for (int k = 0; k < 32; k++) {
		p ^= b & (0u - ((a >> (31 - k)) & 1));
		b = (b >> 1) ^ (CRC32C_POLY & (0u - (b & 1)));
	}
	return p;
}

/* r * x^8 mod P: the register after one zero byte. */
static inline uint32_t gf_times_x8(uint32_t r)
{
	return (r >> 8) ^ t32[0][r & 0xff];
}

/* x^e mod P for e >= 0 (square and multiply). */
static uint32_t gf_xpow(uint64_t e)
{
	uint32_t result = GF_ONE, sq = GF_ONE >> 1; /* x^1 */
	for (; e; e >>= 1) {
		if (e & 1)
			result = gf_mul_sw(result, sq);
		sq = gf_mul_sw(sq, sq);
	}
	return result;
}

/* x^-1 mod P: P(0) = 1, so x * (P - 1) / x = P - 1 = 1 (mod P). In the
 * reflected form (P - 1) / x is the polynomial's bits 31..1 moved up one
 * place, plus x^31 (bit 0) from x^32. */
#define GF_XINV ((CRC32C_POLY << 1) | 1u)

static uint32_t gf_xinv_pow(unsigned e)
{
	uint32_t r = GF_ONE;
	while (e--)
		r = gf_mul_sw(r, GF_XINV);
	return r;
}

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

	for (int j = 0; j < 3; j++) {
		uint32_t m = gf_xpow(8 * (uint64_t)shift_len[j]);
		for (int k = 0; k < 4; k++)
			for (uint32_t i = 0; i < 256; i++)
				shift_tab[j][k][i] = gf_mul_sw(i << (8 * k), m);
	}

	uint32_t xm33 = gf_xinv_pow(33), x33 = gf_xpow(33);
	uint32_t p = xm33; /* x^(512 q - 33) */
	for (int q = 0; q < ZPOW_HI_N; q++) {
		zpow_hi[q] = p;
		for (int b = 0; b < 64; b++)
			p = gf_times_x8(p);
	}
	p = GF_ONE; /* x^(8 r) */
	for (int r = 0; r < 64; r++) {
		zpow_lo_hw[r] = gf_mul_sw(p, xm33);
		zpow_lo_sw[r] = gf_mul_sw(p, x33);
		p = gf_times_x8(p);
	}
	p = gf_xpow(8 * 65536);
	for (size_t k = 0; k < ZPOW_BIG_N; k++) {
		zpow_big[k] = p;
		zpow_big_hw[k] = gf_mul_sw(p, xm33);
		p = gf_mul_sw(p, p);
	}
#ifdef CRC32C_X86
	__builtin_cpu_init();
	hw = __builtin_cpu_supports("sse4.2");
	clmul = hw && __builtin_cpu_supports("pclmul");
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

/* c * x^(8 shift_len[j]) mod P. */
static inline uint32_t shift_by(int j, uint32_t c)
{
	const uint32_t(*t)[256] = shift_tab[j];
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

#ifdef CRC32C_X86
static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8); /* unaligned; little-endian host */
	return v;
}

/* Blocks of three chunks of len_j bytes (a constant after inlining: the
 * loads' offsets fold into the addressing). The instruction has a latency
 * of 3 cycles and a throughput of 1 a cycle, so three independent streams
 * keep it busy; the first continues the caller's register, the other two
 * start from 0 and are shifted over what follows them. */
__attribute__((target("sse4.2"), always_inline)) static inline uint32_t
crc32c_hw_blocks(uint32_t crc, const uint8_t **pp, size_t *lenp, int j, size_t len_j)
{
	const uint8_t *p = *pp;
	size_t len = *lenp;
	while (len >= 3 * len_j) {
		uint64_t a = crc, b = 0, c = 0;
		const uint8_t *end = p + len_j;
		do {
			a = _mm_crc32_u64(a, load64(p));
			b = _mm_crc32_u64(b, load64(p + len_j));
			c = _mm_crc32_u64(c, load64(p + 2 * len_j));
			p += 8;
		} while (p < end);
		crc = shift_by(j, shift_by(j, (uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
		p += 2 * len_j;
		len -= 3 * len_j;
	}
	*pp = p;
	*lenp = len;
	return crc;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	if (len >= 3 * SHIFT_SHORT) {
		crc = crc32c_hw_blocks(crc, &p, &len, 0, SHIFT_LONG);
		crc = crc32c_hw_blocks(crc, &p, &len, 1, SHIFT_MID);
		crc = crc32c_hw_blocks(crc, &p, &len, 2, SHIFT_SHORT);
	}
	uint64_t c = crc;
	while (len >= 8) {
		c = _mm_crc32_u64(c, load64(p));
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = _mm_crc32_u8(c32, *p++);
	return c32;
}

/* a * b * x^33 mod P: the carry-less product of the reflected operands
 * holds a * b with x^k at bit 62 - k, which the crc32 instruction reads as
 * a 64-bit message with x^k at bit 63 - k (a * b * x) and reduces times
 * x^32. */
__attribute__((target("sse4.2,pclmul"))) static uint32_t gf_mul_x33_hw(uint32_t a, uint32_t b)
{
	__m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);
	return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(prod));
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc32c_zeros_hw(uint32_t crc, size_t n)
{
	size_t units = n >> 16; /* whole 64 KiB */
	for (size_t k = 0; units; k++, units >>= 1)
		if (units & 1)
			crc = gf_mul_x33_hw(crc, zpow_big_hw[k]);
	n &= 0xffff;
	return gf_mul_x33_hw(gf_mul_x33_hw(crc, zpow_hi[n >> 6]), zpow_lo_hw[n & 63]);
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, tables_build);
#ifdef CRC32C_X86
	if (hw)
		return crc32c_hw(crc, buf, len);
#endif
	return crc32c_sw(crc, buf, len);
}

uint32_t crc32c_zeros_sw(uint32_t crc, size_t n)
{
	pthread_once(&once, tables_build);
	size_t units = n >> 16;
	for (size_t k = 0; units; k++, units >>= 1)
		if (units & 1)
			crc = gf_mul_sw(crc, zpow_big[k]);
	n &= 0xffff;
	return gf_mul_sw(gf_mul_sw(crc, zpow_hi[n >> 6]), zpow_lo_sw[n & 63]);
}

uint32_t crc32c_zeros(uint32_t crc, size_t n)
{
	pthread_once(&once, tables_build);
#ifdef CRC32C_X86
	if (clmul)
		return crc32c_zeros_hw(crc, n);
#endif
	return crc32c_zeros_sw(crc, n);
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
