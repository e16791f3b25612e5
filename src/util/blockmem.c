/* Aligned block memory for caches: see blockmem.h. */
#include "util/blockmem.h"

#include <pthread.h>
#include <stdlib.h>

#define BM_CHUNK (256u * 1024)
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

void *blockmem_alloc(size_t size)
{
	int c = bm_class(size);
	if (c < 0) {
		void *p = NULL;
		return posix_memalign(&p, size < 4096 ? size : 4096, size) ? NULL : p;
	}
	pthread_mutex_lock(&bm_lock);
	if (!bm_lists[c]) {
		/* A new chunk, cut into blocks of this class. */
		char *chunk = aligned_alloc(4096, BM_CHUNK);
		if (!chunk) {
			pthread_mutex_unlock(&bm_lock);
			return NULL;
		}
		for (size_t off = BM_CHUNK; off >= size; off -= size) {
			struct bm_free *f = (struct bm_free *)(chunk + off - size);
			f->next = bm_lists[c];
			bm_lists[c] = f;
		}
	}
	struct bm_free *f = bm_lists[c];
	bm_lists[c] = f->next;
	pthread_mutex_unlock(&bm_lock);
	return f;
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
	struct bm_free *f = p;
	pthread_mutex_lock(&bm_lock);
	f->next = bm_lists[c];
	bm_lists[c] = f;
	pthread_mutex_unlock(&bm_lock);
}
