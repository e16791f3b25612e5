/* util/blockmem: block memory for the caches. Every class hands out blocks
 * aligned to their size that do not overlap, past the point where its
 * chunks become 2 MiB huge pages too (8 MiB per class here, four times that
 * point); freed blocks are handed out again; after blockmem_trim the
 * released blocks are handed out again, usable, and the resident set has
 * fallen, and reusing them sparsely does not fault huge pages back in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/blockmem.h"

#if defined(__SANITIZE_ADDRESS__)
#define PLAIN_ALLOCATOR 1 /* blockmem.c falls back to posix_memalign */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLAIN_ALLOCATOR 1
#endif
#endif

#define SPAN (8u << 20) /* bytes allocated per class */

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

/* n blocks of `size`, each filled with its index; checks alignment. */
static void **alloc_filled(size_t size, size_t n)
{
	void **v = malloc(n * sizeof *v);
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		v[i] = blockmem_alloc(size);
		assert_non_null(v[i]);
		assert_int_equal((uintptr_t)v[i] % (size < 4096 ? size : 4096), 0);
		for (size_t k = 0; k < size / sizeof(size_t); k++)
			((size_t *)v[i])[k] = i ^ k;
	}
	return v;
}

/* Every block still holds its own pattern (an overlap would have had a
 * later block write over it), and sorted they are at least `size` apart. */
static void check_distinct(void **v, size_t size, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < size / sizeof(size_t); k++)
			if (((size_t *)v[i])[k] != (i ^ k))
				fail_msg("block %zu of size %zu overwritten at word %zu", i, size, k);
	void **s = malloc(n * sizeof *s);
	assert_non_null(s);
	memcpy(s, v, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_ptr);
	for (size_t i = 1; i < n; i++)
		assert_true((uintptr_t)s[i] - (uintptr_t)s[i - 1] >= size);
	free(s);
}

#ifndef PLAIN_ALLOCATOR
static bool in_sorted(void **s, size_t n, void *p)
{
	return bsearch(&p, s, n, sizeof *s, cmp_ptr) != NULL;
}
#endif

static void test_classes(void **state)
{
	(void)state;
	const size_t sizes[] = { 512, 1024, 2048, 4096, 8192 };
	for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
		size_t size = sizes[c], n = SPAN / size;
		void **v = alloc_filled(size, n);
		check_distinct(v, size, n);
		for (size_t i = 0; i < n; i++)
			blockmem_free(v[i], size);
#ifndef PLAIN_ALLOCATOR
		if (size <= 4096) {
			/* Freed blocks come back: a cache at its bound recycles. */
			void **old = v;
			qsort(old, n, sizeof *old, cmp_ptr);
			void **w = alloc_filled(size, n);
			for (size_t i = 0; i < n; i++)
				assert_true(in_sorted(old, n, w[i]));
			check_distinct(w, size, n);
			for (size_t i = 0; i < n; i++)
				blockmem_free(w[i], size);
			free(w);
		}
#endif
		free(v);
		blockmem_free(NULL, size); /* a no-op */
	}
	/* Sizes outside the classes still get memory (an odd size was once
	 * passed to posix_memalign as the alignment: NULL). */
	const size_t odd[] = { 3000, 100, 4100, 256, 12288 };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		char *p = blockmem_alloc(odd[i]);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % (odd[i] >= 4096 ? 4096 : sizeof(void *)), 0);
		memset(p, 7, odd[i]);
		blockmem_free(p, odd[i]);
	}
	assert_null(blockmem_alloc(0));
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = -1, res = -1;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = -1;
		fclose(f);
	}
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_trim(void **state)
{
	(void)state;
	size_t n = SPAN / 4096;
	void **v = alloc_filled(4096, n);
	long before = rss_kib();
	for (size_t i = 0; i < n; i++)
		blockmem_free(v[i], 4096);
	blockmem_trim();
	long after = rss_kib();
	print_message("rss %ld KiB before trim, %ld after\n", before, after);
#ifndef PLAIN_ALLOCATOR
	/* All but 4 MiB of the 8 MiB freed goes back to the kernel. */
	if (before > 0 && after > 0)
		assert_true(before - after >= 3 * 1024);
#endif
#ifndef PLAIN_ALLOCATOR
	/* Released blocks reused sparsely fault in 4 KiB each, not the 2 MiB
	 * huge page around them (one touch per 512 blocks: with the huge-page
	 * advice left on them, +2 MiB a touch). */
	void **z = malloc(n * sizeof *z);
	assert_non_null(z);
	long r0 = rss_kib();
	for (size_t i = 0; i < n; i++) {
		z[i] = blockmem_alloc(4096);
		assert_non_null(z[i]);
		if (i % 512 == 0)
			*(volatile char *)z[i] = 1;
	}
	long r1 = rss_kib();
	print_message("rss %ld KiB before sparse reuse, %ld after\n", r0, r1);
	if (r0 > 0 && r1 > 0)
		assert_true(r1 - r0 < 1024);
	for (size_t i = 0; i < n; i++)
		blockmem_free(z[i], 4096);
	free(z);
#endif
	/* Handed out again (released blocks last), usable, and distinct. */
	void **w = alloc_filled(4096, n);
	check_distinct(w, 4096, n);
	for (size_t i = 0; i < n; i++)
		blockmem_free(w[i], 4096);
	blockmem_trim();
	free(w);
	free(v);
}

static void test_huge_buffer(void **state)
{
	(void)state;
	/* Small buffers are page-aligned; from 1 MiB on, 2 MiB-aligned. */
	char *a = blockmem_huge_alloc(64 * 1024);
	char *b = blockmem_huge_alloc(3u << 20);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal((uintptr_t)a % 4096, 0);
	assert_int_equal((uintptr_t)b % (2u << 20), 0);
	memset(a, 1, 64 * 1024);
	memset(b, 2, 3u << 20);
	assert_int_equal(a[64 * 1024 - 1], 1);
	assert_int_equal(b[(3u << 20) - 1], 2);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_huge_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
