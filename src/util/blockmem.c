/* Aligned block memory for caches: see blockmem.h. */
#include "util/blockmem.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define BM_CHUNK (256u * 1024)
/* Past this much in a class, its chunks are 2 MiB transparent huge pages:
 * a cache's fill faults in one page per 2 MiB instead of 512 (on the VMs we
 * measure on a fresh 4 KiB page costs ~14 us and a fresh huge page ~3.4 ms:
 * the first 16 MiB transaction of a data=journal stream spent ~0.2 s
 * faulting its buffers in). Small users stay at 256 KiB chunks. */
#define BM_HUGE_AFTER (2u << 20)
#define BM_HUGE (2u << 20) /* a transparent huge page */
#define BM_MIN_SHIFT 9
#define BM_CLASSES 4 /* 512, 1K, 2K, 4K */

#if defined(__SANITIZE_ADDRESS__)
#define BM_PLAIN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BM_PLAIN 1
#endif
#endif

struct bm_free {
	struct bm_free *next;
};

static pthread_mutex_t bm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bm_free *bm_lists[BM_CLASSES]; /* bm_lock */
static size_t bm_nfree[BM_CLASSES];          /* bm_lock: blocks on each list */
static size_t bm_mapped[BM_CLASSES];         /* bm_lock: bytes of chunks mapped */
/* bm_lock: blocks given back to the kernel, kept apart from bm_lists: a
 * list linked through the blocks themselves would write the link into the
 * page just released and make it resident again (that kept a destroyed
 * cache's RSS: ~80 MiB after a data=journal bench run at cache=64M). */
static void **bm_rel[BM_CLASSES];
static size_t bm_nrel[BM_CLASSES], bm_caprel[BM_CLASSES];

/* Free 4 KiB blocks kept resident by blockmem_trim; past it they are
 * given back to the kernel (MADV_DONTNEED: no longer resident, read as
 * zeroes when reused), so unmounting a full cache lowers the RSS. */
#define BM_KEEP_BYTES (4u << 20)

static int bm_class(size_t size)
{
#ifdef BM_PLAIN
	(void)size;
	return -1;
#else
	for (int c = 0; c < BM_CLASSES; c++)
		if (size == (size_t)1 << (BM_MIN_SHIFT + c))
			return c;
	return -1;
#endif
}

/* bm_lock: the huge chunks' addresses, sorted (blockmem_trim looks them
 * up). */
static char **bm_hchunks;
static size_t bm_nh, bm_caph;

static bool bm_in_huge(const void *p)
{
	uintptr_t base = (uintptr_t)p & ~(uintptr_t)(BM_HUGE - 1);
	size_t lo = 0, hi = bm_nh;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((uintptr_t)bm_hchunks[mid] < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < bm_nh && (uintptr_t)bm_hchunks[lo] == base;
}

/* Room to record one more huge chunk (false: out of memory). */
static bool bm_huge_room(void)
{
	if (bm_nh < bm_caph)
		return true;
	size_t cap = bm_caph ? 2 * bm_caph : 64;
	char **v = realloc(bm_hchunks, cap * sizeof *v);
	if (!v)
		return false;
	bm_hchunks = v;
	bm_caph = cap;
	return true;
}

static void bm_huge_record(char *a)
{
	size_t i = bm_nh;
	while (i && (uintptr_t)bm_hchunks[i - 1] > (uintptr_t)a) {
		bm_hchunks[i] = bm_hchunks[i - 1];
		i--;
	}
	bm_hchunks[i] = a;
	bm_nh++;
}

/* A chunk of `bytes` from mmap; a 2 MiB one is 2 MiB-aligned (a huge
 * page can back it), advised so and recorded; without memory to record
 * it, a plain chunk instead. NULL when out of memory. */
static char *bm_chunk_map(size_t bytes)
{
	if (bytes == BM_HUGE && !bm_huge_room())
		bytes = BM_CHUNK;
	size_t span = bytes == BM_HUGE ? 2 * BM_HUGE : bytes;
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (bytes != BM_HUGE)
		return p;
	char *a = (char *)(((uintptr_t)p + BM_HUGE - 1) & ~(uintptr_t)(BM_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + BM_HUGE < p + span)
		munmap(a + BM_HUGE, (size_t)(p + span - (a + BM_HUGE)));
#ifdef MADV_HUGEPAGE
	(void)madvise(a, BM_HUGE, MADV_HUGEPAGE);
#endif
	bm_huge_record(a);
	return a;
}

void *blockmem_alloc(size_t size)
{
	int c = bm_class(size);
	if (c < 0) {
		/* Aligned to the size when it is a power of two below a page,
		 * else to a page (a larger block) or a pointer (an odd size:
		 * posix_memalign takes only powers of two). */
		size_t align = size >= 4096 ? 4096 : (size & (size - 1)) == 0 && size >= sizeof(void *) ? size : sizeof(void *);
		void *p = NULL;
		return size && posix_memalign(&p, align, size) == 0 ? p : NULL;
	}
	pthread_mutex_lock(&bm_lock);
	if (!bm_lists[c] && bm_nrel[c]) {
		void *p = bm_rel[c][--bm_nrel[c]];
		pthread_mutex_unlock(&bm_lock);
		return p;
	}
	if (!bm_lists[c]) {
		/* A new chunk, cut into blocks of this class. mmap, not malloc:
		 * long-lived blocks in the heap would pin it around the
		 * transient buffers allocated between them (glibc's dynamic
		 * mmap threshold puts even MiB-sized ones there). */
		size_t bytes = bm_mapped[c] >= BM_HUGE_AFTER ? BM_HUGE : BM_CHUNK;
		char *chunk = bm_chunk_map(bytes);
		if (!chunk) {
			pthread_mutex_unlock(&bm_lock);
			return NULL;
		}
		bm_mapped[c] += bytes;
		for (size_t off = bytes; off >= size; off -= size) {
			struct bm_free *f = (struct bm_free *)(chunk + off - size);
			f->next = bm_lists[c];
			bm_lists[c] = f;
			bm_nfree[c]++;
		}
	}
	struct bm_free *f = bm_lists[c];
	bm_lists[c] = f->next;
	bm_nfree[c]--;
	pthread_mutex_unlock(&bm_lock);
	return f;
}

void *blockmem_huge_alloc(size_t bytes)
{
	void *p = NULL;
	if (bytes < BM_HUGE / 2)
		return posix_memalign(&p, 4096, bytes) ? NULL : p;
	size_t b = (bytes + BM_HUGE - 1) / BM_HUGE * BM_HUGE;
	if (posix_memalign(&p, BM_HUGE, b))
		return NULL;
	(void)madvise(p, b, MADV_HUGEPAGE);
	return p;
}

void blockmem_free(void *p, size_t size)
{
	if (!p)
		return;
	int c = bm_class(size);
	if (c < 0) {
		free(p);
		return;
	}
	/* Always kept resident: a cache at its bound frees and allocates the
	 * same blocks over and over, and releasing them one by one cost a
	 * madvise (with a TLB shootdown IPI) per free and a page fault plus
	 * clear_page per reuse (data=journal stream: ~8 % of the writer's
	 * CPU, issue 8). The free list is bounded by the peak of live blocks;
	 * blockmem_trim gives the excess back when a cache goes away. */
	struct bm_free *f = p;
	pthread_mutex_lock(&bm_lock);
	f->next = bm_lists[c];
	bm_lists[c] = f;
	bm_nfree[c]++;
	pthread_mutex_unlock(&bm_lock);
}

static int bm_cmp_addr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

void blockmem_trim(void)
{
	const size_t size = 4096; /* only whole pages can be released */
	const int c = bm_class(size);
	if (c < 0)
		return;
	pthread_mutex_lock(&bm_lock);
	size_t keep = BM_KEEP_BYTES / size;
	size_t n = bm_nfree[c] > keep ? bm_nfree[c] - keep : 0;
	if (n && bm_nrel[c] + n > bm_caprel[c]) {
		/* Room first: a block on neither list would be lost. */
		size_t cap = bm_caprel[c] ? bm_caprel[c] : 1024;
		while (cap < bm_nrel[c] + n)
			cap *= 2;
		void **v = realloc(bm_rel[c], cap * sizeof *v);
		if (!v)
			n = bm_caprel[c] - bm_nrel[c];
		else {
			bm_rel[c] = v;
			bm_caprel[c] = cap;
		}
	}
	void **out = bm_rel[c] + bm_nrel[c];
	for (size_t i = 0; i < n; i++) {
		struct bm_free *f = bm_lists[c];
		bm_lists[c] = f->next;
		out[i] = f;
	}
	bm_nfree[c] -= n;
	/* Released under the lock (the array may move on the next realloc):
	 * trimming runs when a cache is destroyed, not on a hot path. Sorted,
	 * so that neighbouring blocks go back in one call per run. */
	qsort(out, n, sizeof *out, bm_cmp_addr);
	for (size_t i = 0; i < n;) {
		size_t k = i + 1;
		while (k < n && (char *)out[k] == (char *)out[k - 1] + size)
			k++;
#ifdef MADV_NOHUGEPAGE
		/* Released blocks of a huge chunk lose the huge-page advice
		 * first: reused one at a time, a touch would fault in all
		 * 2 MiB around them, and khugepaged collapses a huge-advised
		 * range around even one resident page (the RSS of a bench run
		 * went 84 -> 101 MiB in the modes after data=journal). */
		bool huge = false;
		for (uintptr_t a = (uintptr_t)out[i] & ~(uintptr_t)(BM_HUGE - 1);
		     !huge && a < (uintptr_t)out[k - 1] + size; a += BM_HUGE)
			huge = bm_in_huge((void *)a);
		if (huge)
			(void)madvise(out[i], (k - i) * size, MADV_NOHUGEPAGE);
#endif
		(void)madvise(out[i], (k - i) * size, MADV_DONTNEED);
		i = k;
	}
	bm_nrel[c] += n;
	pthread_mutex_unlock(&bm_lock);
}
