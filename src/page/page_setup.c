/* Page cache setup (docs/page-cache.md): the tunables, creating and
 * destroying the cache, mappings, run-time settings, statistics and
 * accessors. The core (hash, LRU, eviction, page lock, dirty accounting) is
 * page_cache.c. Locking rules: page_int.h.
 */
#include "page/page_int.h"

#include "dev/dev.h"
#include "util/blockmem.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct tunable_desc tunables[] = {
	{ "cache_bytes", TUNABLE_U64, 64u << 10, 1ull << 40, 64u << 20, offsetof(struct page_params, cache_bytes),
	  "B", "page budget (fixed at creation)" },
	{ "dirty_expire_ms", TUNABLE_U64, 0, 86400000, 30000, offsetof(struct page_params, dirty_expire_ms), "ms",
	  "a page dirty for longer is written by the next flusher pass" },
	{ "writeback_interval_ms", TUNABLE_U64, 0, 3600000, 5000,
	  offsetof(struct page_params, writeback_interval_ms), "ms",
	  "flusher period (0 at creation: no flusher thread; later: kicks only)" },
	{ "dirty_background_ratio", TUNABLE_U64, 0, 100, 10, offsetof(struct page_params, dirty_background_ratio),
	  "%", "dirty pages (% of budget) that wake the flusher (0: never)" },
	{ "dirty_ratio", TUNABLE_U64, 1, 100, 20, offsetof(struct page_params, dirty_ratio), "%",
	  "dirty + writeback pages (% of budget) past which writers are throttled" },
	{ "dirty_min_kb", TUNABLE_U64, 0, 1u << 30, 0, offsetof(struct page_params, dirty_min_kb), "KiB",
	  "floor of the dirty limit, at most half the budget (0: the ratio alone)" },
	{ "max_run_kb", TUNABLE_U64, 4, 4096, 512, offsetof(struct page_params, max_run_kb), "KiB",
	  "largest writeback bio" },
	{ "throttle_chunk", TUNABLE_U64, 1, 4096, 48, offsetof(struct page_params, throttle_chunk), "",
	  "pages a throttled writer or direct reclaim writes per round" },
	{ "stream_copy", TUNABLE_U64, 0, 1, 1, offsetof(struct page_params, stream_copy), "",
	  "copy whole pages of a write in with streaming stores (x86-64)" },
	{ NULL, 0, 0, 0, 0, 0, NULL, NULL },
};

const struct tunable_desc *page_tunables(void) { return tunables; }

void page_params_default(struct page_params *p) { tunable_defaults(tunables, p); }

/* ------------------------------------------------------------ mappings */

int page_mapping_create(struct page_cache *pc, const struct page_mapping_ops *ops, void *ctx,
			struct page_mapping **out)
{
	*out = NULL;
	if (!pc || !ops || !ops->map)
		return err_set(-EINVAL, "page: a mapping needs a cache and a map op");
	struct page_mapping *m = calloc(1, sizeof *m);
	if (!m)
		return -ENOMEM;
	m->pc = pc;
	m->ops = ops;
	m->ctx = ctx;
	list_init(&m->pages);
	list_init(&m->dirty);
	list_init(&m->wb);
	pthread_mutex_lock(&pc->lock);
	list_add_tail(&pc->mappings, &m->link);
	pthread_mutex_unlock(&pc->lock);
	*out = m;
	return 0;
}

struct page_cache *page_mapping_cache(const struct page_mapping *m) { return m->pc; }

uint64_t page_mapping_nr_pages(struct page_mapping *m)
{
	pthread_mutex_lock(&m->pc->lock);
	uint64_t n = m->nr_pages;
	pthread_mutex_unlock(&m->pc->lock);
	return n;
}

uint64_t page_mapping_nr_dirty(struct page_mapping *m)
{
	pthread_mutex_lock(&m->pc->lock);
	uint64_t n = m->nr_dirty;
	pthread_mutex_unlock(&m->pc->lock);
	return n;
}

/* ---------------------------------------------------- create, destroy */

int page_cache_create(struct blk_queue *q, unsigned page_size, const struct page_params *p,
		      struct page_cache **out)
{
	*out = NULL;
	if (!q)
		return err_set(-EINVAL, "page: no queue");
	if (page_size != 1024 && page_size != 2048 && page_size != 4096)
		return err_set(-EINVAL, "page: page size %u is not 1024, 2048 or 4096", page_size);
	struct dev_geometry geo;
	dev_geometry_get(blk_queue_dev(q), &geo);
	if (geo.logical_block_size && page_size % geo.logical_block_size)
		return err_set(-EINVAL, "page: page size %u is smaller than the device's logical block size %u",
			       page_size, geo.logical_block_size);
	struct page_params prm;
	page_params_default(&prm);
	if (p) {
		for (const struct tunable_desc *d = tunables; d->name; d++) {
			uint64_t v = *(const uint64_t *)((const char *)p + d->offset);
			if (v < d->min || v > d->max)
				return err_set(-ERANGE, "page: %s %" PRIu64 " is out of range [%" PRIu64 "..%" PRIu64 "]",
					       d->name, v, d->min, d->max);
		}
		prm = *p;
	}
	struct page_cache *pc = calloc(1, sizeof *pc);
	if (!pc)
		return -ENOMEM;
	static atomic_uint_fast64_t next_id = 1;
	pc->id = atomic_fetch_add(&next_id, 1);
	pc->q = q;
	pc->p = prm;
	pc->page_size = page_size;
	pc->sectors_per_page = page_size / DEV_SECTOR_SIZE;
	pc->nr_blocks = geo.size_bytes / page_size;
	pc->max_pages = prm.cache_bytes / page_size;
	page_limits_locked(pc);
	size_t hs = 256;
	while (hs < pc->max_pages && hs < (1u << 22))
		hs <<= 1;
	pc->hash = calloc(hs, sizeof *pc->hash);
	if (!pc->hash) {
		free(pc);
		return -ENOMEM;
	}
	pc->hash_mask = hs - 1;
	page_arena_init(pc);
	/* Adaptive: critical sections are short and the writer, the flusher
	 * and the completions take the lock for every page; spinning a little
	 * before sleeping avoids a futex sleep and wake-up per contention. */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&pc->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	clock_cond_init(&pc->cond);
	clock_cond_init(&pc->worker_cond);
	clock_cond_init(&pc->flusher_cond);
	list_init(&pc->lru);
	list_init(&pc->dirty);
	list_init(&pc->mappings);
	list_init(&pc->done);
	int rc = page_threads_start(pc);
	if (rc < 0) {
		page_cache_destroy(pc);
		return rc;
	}
	*out = pc;
	return 0;
}

void page_cache_destroy(struct page_cache *pc)
{
	if (!pc)
		return;
	page_threads_stop(pc);
	if (!list_empty(&pc->mappings) || pc->nr_pages)
		fprintf(stderr, "nostall: page_cache_destroy: mappings or %" PRIu64 " pages left\n", pc->nr_pages);
	page_run_bufs_drop(pc);
	page_arena_destroy(pc);
	free(pc->hash);
	pthread_cond_destroy(&pc->flusher_cond);
	pthread_cond_destroy(&pc->worker_cond);
	pthread_cond_destroy(&pc->cond);
	pthread_mutex_destroy(&pc->lock);
	free(pc);
	blockmem_trim(); /* its pages' free blocks: the RSS falls with the cache */
}

unsigned page_cache_page_size(const struct page_cache *pc) { return pc->page_size; }

int page_cache_set(struct page_cache *pc, const char *name, const char *value)
{
	if (name && strcmp(name, "cache_bytes") == 0)
		return err_set(-EPERM, "page: cache_bytes is fixed at creation");
	pthread_mutex_lock(&pc->lock);
	int rc = tunable_set(tunables, &pc->p, name, value);
	if (rc == 0) {
		page_limits_locked(pc);
		pthread_cond_signal(&pc->flusher_cond); /* a new period */
	}
	pthread_mutex_unlock(&pc->lock);
	return rc;
}

int page_cache_get(struct page_cache *pc, const char *name, uint64_t *out)
{
	pthread_mutex_lock(&pc->lock);
	int rc = tunable_get(tunables, &pc->p, name, out);
	pthread_mutex_unlock(&pc->lock);
	return rc;
}

void page_cache_fail_run_bufs(struct page_cache *pc, unsigned n)
{
	pthread_mutex_lock(&pc->lock);
	pc->fail_run_bufs = n;
	pthread_mutex_unlock(&pc->lock);
}

void page_cache_stats(struct page_cache *pc, struct page_stats *out)
{
	pthread_mutex_lock(&pc->lock);
	*out = pc->st;
	out->pages = pc->nr_pages;
	out->dirty = pc->nr_dirty;
	out->writeback = pc->nr_writeback;
	out->max_pages = pc->max_pages;
	out->dirty_limit = pc->dirty_limit;
	out->background_limit = pc->bg_limit;
	pthread_mutex_unlock(&pc->lock);
}

/* ----------------------------------------------------------- accessors */

void *page_data(struct page *pg) { return pg->data; }
uint64_t page_index(const struct page *pg) { return pg->index; }

#define PAGE_GETTER(name, type, expr)                      \
	type name(struct page *pg)                         \
	{                                                  \
		struct page_cache *pc = pg->m->pc;         \
		pthread_mutex_lock(&pc->lock);             \
		type v = (expr);                           \
		pthread_mutex_unlock(&pc->lock);           \
		return v;                                  \
	}
PAGE_GETTER(page_block, uint64_t, pg->block)
PAGE_GETTER(page_uptodate, bool, pg->flags & PG_UPTODATE)
PAGE_GETTER(page_dirty, bool, pg->flags & PG_DIRTY)
PAGE_GETTER(page_writeback, bool, pg->flags & PG_WRITEBACK)
