/* Page cache core (docs/page-cache.md): the
 * (mapping, index) hash, references, the LRU and eviction, the page
 * buffers, the page lock, dirty accounting, one-page reads. Creation,
 * tunables, mappings and statistics are in page_setup.c. The read and
 * write paths are in page_rw.c, writeback and the threads in
 * page_writeback.c. Locking rules: page_int.h.
 */
#include "util/stalltrace.h"
#include "page/page_int.h"

#include "dev/dev.h"
#include "util/clock.h"
#include "util/blockmem.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A waiter re-checks at least this often: a safety net, never needed for
 * correctness (every change it waits for broadcasts). */
#define WAIT_RECHECK_NS (100 * NS_PER_MS)

/* 2.6.30's get_dirty_limits: a background ratio at or above the dirty ratio
 * is taken as half of it. Limits are at least one page. */
void page_limits_locked(struct page_cache *pc)
{
	uint64_t bg = pc->p.dirty_background_ratio;
	if (bg >= pc->p.dirty_ratio)
		bg = pc->p.dirty_ratio / 2;
	pc->dirty_limit = pc->max_pages * pc->p.dirty_ratio / 100;
	/* Not 2.6.30's: a floor for small budgets (docs/page-cache.md, "A floor
	 * under the dirty limit"), never above half the budget. */
	uint64_t floor = pc->p.dirty_min_kb * 1024 / pc->page_size;
	if (floor > pc->max_pages / 2)
		floor = pc->max_pages / 2;
	if (pc->dirty_limit < floor)
		pc->dirty_limit = floor;
	if (pc->dirty_limit < 1)
		pc->dirty_limit = 1;
	pc->bg_limit = bg ? pc->max_pages * bg / 100 : 0;
	if (bg && pc->bg_limit < 1)
		pc->bg_limit = 1;
	pc->max_run = pc->p.max_run_kb * 1024 / pc->page_size;
	if (pc->max_run < 1)
		pc->max_run = 1;
	/* The flusher is woken past the background limit by a batch (a
	 * quarter of the gap to the dirty limit, at least one run): woken at
	 * the limit itself, it wrote the one page a streaming writer had just
	 * dirtied, slept, and was woken again (a context switch and a one-page
	 * bio per page). 2.6.30's background writeout goes in 4 MiB chunks. */
	uint64_t batch = pc->dirty_limit > pc->bg_limit ? (pc->dirty_limit - pc->bg_limit) / 4 : 0;
	if (batch < pc->max_run)
		batch = pc->max_run;
	uint64_t top = pc->dirty_limit > pc->bg_limit ? pc->dirty_limit : pc->bg_limit;
	pc->kick_limit = !pc->bg_limit ? 0 : pc->bg_limit + batch < top ? pc->bg_limit + batch : top;
}

/* ------------------------------------------------------------ waiting */

void page_wake_locked(struct page_cache *pc)
{
	pc->gen++;
	pthread_cond_broadcast(&pc->cond);
}

void page_wait_locked(struct page_cache *pc)
{
	uint64_t g = pc->gen;
	pthread_mutex_unlock(&pc->lock);
	blk_queue_unplug(pc->q);
	pthread_mutex_lock(&pc->lock);
	uint64_t w0 = stalltrace_t0();
	if (pc->gen == g)
		clock_cond_wait_until(&pc->cond, &pc->lock, clock_now_ns() + WAIT_RECHECK_NS);
	stalltrace_wait("page wait", w0, 0);
}

/* --------------------------------------------------------------- hash */

static size_t hash_slot(const struct page_cache *pc, const struct page_mapping *m, uint64_t index)
{
	uint64_t k = index ^ ((uint64_t)(uintptr_t)m >> 4) * 0x9E3779B97F4A7C15ull;
	return (size_t)((k * 0xD6E8FEB86659FD93ull) >> 24) & pc->hash_mask;
}

static struct page *hash_find(struct page_cache *pc, struct page_mapping *m, uint64_t index)
{
	for (struct page *pg = pc->hash[hash_slot(pc, m, index)]; pg; pg = pg->hash_next)
		if (pg->m == m && pg->index == index)
			return pg;
	return NULL;
}

static void hash_remove(struct page_cache *pc, struct page *pg)
{
	struct page **pp = &pc->hash[hash_slot(pc, pg->m, pg->index)];
	while (*pp != pg)
		pp = &(*pp)->hash_next;
	*pp = pg->hash_next;
	pg->hash_next = NULL;
}

/* ------------------------------------------------ references, release */

void page_hold_locked(struct page *pg)
{
	if (pg->count++ == 0)
		list_del(&pg->lru);
}

/* The page leaves for good: drop it from the counters. */
static struct page *release_locked(struct page_cache *pc, struct page *pg)
{
	page_slot_set(pc, pg->data, NULL);
	pc->nr_pages--;
	pg->m->nr_alive--;
	page_wake_locked(pc);
	return pg;
}

struct page *page_put_locked(struct page_cache *pc, struct page *pg)
{
	if (pg->count <= 0) {
		fprintf(stderr, "nostall: page_put of an unreferenced page (index %" PRIu64 ")\n", pg->index);
		abort();
	}
	if (--pg->count)
		return NULL;
	if (pg->flags & PG_DETACHED)
		return release_locked(pc, pg);
	list_add_tail(&pc->lru, &pg->lru);
	return NULL;
}

void page_free(struct page *pg)
{
	if (!pg)
		return;
	page_data_free(pg->pc, pg->data);
	free(pg);
}

/* ------------------------------------------------------ page buffers */

void page_arena_init(struct page_cache *pc)
{
	pthread_mutex_init(&pc->arena_lock, NULL);
	size_t bytes = (size_t)pc->max_pages * pc->page_size;
	/* Reserved, not committed: resident only as slots are first used. */
	void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pc->slot_page = calloc(pc->max_pages ? pc->max_pages : 1, sizeof *pc->slot_page);
	if (a != MAP_FAILED && pc->slot_page) {
		/* Transparent huge pages where the system allows them on request:
		 * a slot's first use faults in 2 MiB at a time (the slots are
		 * handed out in ascending order first, so the arena still grows
		 * only as used), and a run's O_DIRECT write pins a few huge pages
		 * instead of a page per 4 KiB. Advice only: failure is harmless. */
#ifdef MADV_HUGEPAGE
		(void)madvise(a, bytes, MADV_HUGEPAGE);
#endif
		pc->arena = a;
		pc->arena_bytes = bytes;
	} else if (a != MAP_FAILED) {
		munmap(a, bytes);
	}
}

void page_arena_destroy(struct page_cache *pc)
{
	if (pc->arena)
		munmap(pc->arena, pc->arena_bytes);
	free(pc->slot_page);
	pthread_mutex_destroy(&pc->arena_lock);
}

static bool in_arena(const struct page_cache *pc, const void *p)
{
	return pc->arena && (const char *)p >= pc->arena && (const char *)p < pc->arena + pc->arena_bytes;
}

/* Record (pg) or clear (NULL) the owner of the slot of buffer p. pc->lock held. */
void page_slot_set(struct page_cache *pc, const void *p, struct page *pg)
{
	if (in_arena(pc, p))
		pc->slot_page[((const char *)p - pc->arena) / pc->page_size] = pg;
}

void *page_data_alloc(struct page_cache *pc)
{
	void *p = NULL;
	pthread_mutex_lock(&pc->arena_lock);
	if (pc->arena_head) {
		p = pc->arena_head;
		pc->arena_head = *(void **)p;
		if (!pc->arena_head)
			pc->arena_tail = NULL;
	} else if (pc->arena && pc->arena_next + pc->page_size <= pc->arena_bytes) {
		p = pc->arena + pc->arena_next;
		pc->arena_next += pc->page_size;
	}
	pthread_mutex_unlock(&pc->arena_lock);
	return p ? p : blockmem_alloc(pc->page_size);
}

void page_data_free(struct page_cache *pc, void *p)
{
	if (!p)
		return;
	if (!in_arena(pc, p)) {
		blockmem_free(p, pc->page_size);
		return;
	}
	*(void **)p = NULL;
	pthread_mutex_lock(&pc->arena_lock);
	if (pc->arena_tail)
		*(void **)pc->arena_tail = p;
	else
		pc->arena_head = p;
	pc->arena_tail = p;
	pthread_mutex_unlock(&pc->arena_lock);
}

/* Out of the hash and the mapping's page list. pc->lock held. */
static void unindex_locked(struct page_cache *pc, struct page *pg)
{
	hash_remove(pc, pg);
	list_del(&pg->mlink);
	pg->m->nr_pages--;
	pg->m->removals++;
}

struct page *page_detach_locked(struct page_cache *pc, struct page *pg)
{
	if (pg->flags & PG_DIRTY)
		pc->st.truncated_dirty++;
	page_clear_dirty_locked(pc, pg);
	unindex_locked(pc, pg);
	if (pg->count == 0) {
		list_del(&pg->lru);
		return release_locked(pc, pg);
	}
	pg->flags |= PG_DETACHED;
	return NULL;
}

/* Take the least recently used clean unreferenced page out of its mapping
 * for reuse. pc->lock held. */
/* Take pg (count 0, on the LRU, clean, unlocked, not under writeback) out
 * of its mapping for reuse. pc->lock held. */
static struct page *evict_locked(struct page_cache *pc, struct page *pg)
{
	list_del(&pg->lru);
	unindex_locked(pc, pg);
	pg->m->nr_alive--;
	page_wake_locked(pc);
	pc->st.evictions++;
	return pg;
}

/* For page `index` of m when page index - 1 is cached: the page in the
 * slot after that page's buffer, if it can be evicted (see slot_page).
 * pc->lock held. */
static struct page *evict_next_slot(struct page_cache *pc, struct page_mapping *m, uint64_t index)
{
	struct page *prev = index ? hash_find(pc, m, index - 1) : NULL;
	if (!prev || !in_arena(pc, prev->data))
		return NULL;
	size_t slot = (size_t)(((char *)prev->data - pc->arena) / pc->page_size) + 1;
	struct page *pg = slot < pc->max_pages ? pc->slot_page[slot] : NULL;
	if (!pg || pg->count || (pg->flags & (PG_DIRTY | PG_WRITEBACK | PG_LOCKED | PG_DETACHED)))
		return NULL;
	return evict_locked(pc, pg);
}

static struct page *evict_one(struct page_cache *pc)
{
	/* Unevictable pages met at the head (dirty) are rotated to the tail,
	 * so that a run of them is not rescanned by every allocation. */
	uint64_t budget = pc->nr_pages;
	while (budget-- && !list_empty(&pc->lru)) {
		struct page *pg = list_entry(pc->lru.next, struct page, lru);
		list_del(&pg->lru);
		list_add_tail(&pc->lru, &pg->lru);
		if (pg->flags & (PG_DIRTY | PG_WRITEBACK | PG_LOCKED))
			continue;
		return evict_locked(pc, pg);
	}
	return NULL;
}

static struct page *page_alloc(struct page_cache *pc)
{
	struct page *pg = calloc(1, sizeof *pg);
	if (!pg)
		return NULL;
	pg->pc = pc;
	pg->data = page_data_alloc(pc);
	if (!pg->data) {
		free(pg);
		return NULL;
	}
	pg->data_size = pc->page_size;
	return pg;
}

/* (Re)initialise pg as page `index` of m, locked, with one reference.
 * pc->lock held. */
static void install_locked(struct page_cache *pc, struct page *pg, struct page_mapping *m, uint64_t index)
{
	pg->m = m;
	pg->index = index;
	pg->block = PAGE_NO_BLOCK;
	pg->flags = PG_LOCKED;
	pg->count = 1;
	pg->dirty_ns = 0;
	list_init(&pg->lru);
	list_init(&pg->dirty);
	list_init(&pg->mdirty);
	list_init(&pg->wb);
	size_t s = hash_slot(pc, m, index);
	pg->hash_next = pc->hash[s];
	pc->hash[s] = pg;
	list_add_tail(&m->pages, &pg->mlink);
	m->nr_pages++;
	m->nr_alive++;
	page_slot_set(pc, pg->data, pg);
}

/* ----------------------------------------------------------- the lock */

void page_lock_locked(struct page_cache *pc, struct page *pg)
{
	while (pg->flags & PG_LOCKED)
		page_wait_locked(pc);
	pg->flags |= PG_LOCKED;
	page_unshare_locked(pc, pg);
}

void page_unshare_locked(struct page_cache *pc, struct page *pg)
{
	if (!(pg->flags & PG_WBSHARED))
		return;
	/* The device only reads the shared buffer and we hold the page lock
	 * (nobody writes it): copy it without the cache lock. */
	void *old = pg->data, *fresh;
	pthread_mutex_unlock(&pc->lock);
	fresh = page_data_alloc(pc);
	if (fresh)
		memcpy(fresh, old, pg->data_size);
	pthread_mutex_lock(&pc->lock);
	/* No memory: wait for the writeback instead (the buffer is ours then). */
	while (!fresh && (pg->flags & PG_WBSHARED))
		page_wait_locked(pc);
	if (fresh && (pg->flags & PG_WBSHARED)) {
		page_slot_set(pc, old, NULL);
		page_slot_set(pc, fresh, pg);
		pg->data = fresh; /* the run frees `old` when it completes */
		pg->flags &= ~(unsigned)PG_WBSHARED;
		pc->st.unshared++;
		fresh = NULL;
	}
	if (fresh) { /* completed meanwhile: the buffer is the page's again */
		pthread_mutex_unlock(&pc->lock);
		page_data_free(pc, fresh);
		pthread_mutex_lock(&pc->lock);
	}
}

void page_unlock_locked(struct page_cache *pc, struct page *pg)
{
	pg->flags &= ~(unsigned)PG_LOCKED;
	page_wake_locked(pc);
}

void page_lock(struct page *pg)
{
	struct page_cache *pc = pg->m->pc;
	pthread_mutex_lock(&pc->lock);
	page_lock_locked(pc, pg);
	pthread_mutex_unlock(&pc->lock);
}

void page_unlock(struct page *pg)
{
	struct page_cache *pc = pg->m->pc;
	pthread_mutex_lock(&pc->lock);
	page_unlock_locked(pc, pg);
	pthread_mutex_unlock(&pc->lock);
}

void page_put(struct page *pg)
{
	if (!pg)
		return;
	struct page_cache *pc = pg->m->pc;
	pthread_mutex_lock(&pc->lock);
	struct page *f = page_put_locked(pc, pg);
	pthread_mutex_unlock(&pc->lock);
	page_free(f);
}

/* -------------------------------------------------------- find, create */

/* The grabber's view of a page it has just locked (optional outputs). */
static void snap_locked(const struct page *pg, bool *uptodate, uint64_t *block)
{
	if (uptodate)
		*uptodate = pg->flags & PG_UPTODATE;
	if (block)
		*block = pg->block;
}

struct page *page_lookup(struct page_mapping *m, uint64_t index)
{
	struct page_cache *pc = m->pc;
	pthread_mutex_lock(&pc->lock);
	struct page *pg = hash_find(pc, m, index);
	if (pg)
		page_hold_locked(pg);
	pthread_mutex_unlock(&pc->lock);
	return pg;
}

uint64_t page_mapping_removals(struct page_mapping *m)
{
	pthread_mutex_lock(&m->pc->lock);
	uint64_t r = m->removals;
	pthread_mutex_unlock(&m->pc->lock);
	return r;
}

/* Pages looked up per cache lock hold by page_mapping_overlay. */
#define OVERLAY_BATCH 64u

/* Copy page pg's part of [off, off + len) into buf. Caller holds its lock. */
static void overlay_copy(struct page *pg, unsigned ps, uint64_t off, void *buf, size_t len)
{
	uint64_t pstart = pg->index * ps; /* fixed while referenced */
	uint64_t from = pstart > off ? pstart : off;
	uint64_t to = pstart + ps < off + len ? pstart + ps : off + len;
	memcpy((char *)buf + (from - off), (const char *)pg->data + (from - pstart), (size_t)(to - from));
}

uint64_t page_mapping_overlay(struct page_mapping *m, uint64_t off, void *buf, size_t len)
{
	struct page_cache *pc = m->pc;
	unsigned ps = pc->page_size;
	uint64_t idx = off / ps, last = len ? (off + len - 1) / ps : 0;
	uint64_t removals;
	for (;;) {
		/* One cache lock hold looks a batch up and locks the pages
		 * nobody holds (never waiting while holding some: the lock
		 * order is ascending index); a second unlocks and releases
		 * them. A page locked by someone else is taken alone after. */
		struct page *v[OVERLAY_BATCH];
		bool mine[OVERLAY_BATCH];
		size_t k = 0;
		pthread_mutex_lock(&pc->lock);
		if (!len || !m->nr_pages)
			idx = last + 1; /* nothing cached: the disk's copy is the file */
		for (; idx <= last && k < OVERLAY_BATCH; idx++) {
			struct page *pg = hash_find(pc, m, idx);
			if (!pg || !(pg->flags & PG_UPTODATE))
				continue;
			page_hold_locked(pg);
			mine[k] = !(pg->flags & PG_LOCKED);
			if (mine[k]) {
				pg->flags |= PG_LOCKED;
				page_unshare_locked(pc, pg); /* may drop pc->lock: idx is ours */
			}
			v[k++] = pg;
		}
		/* Read after every lookup: a page evicted before its lookup
		 * has bumped it by now. */
		removals = m->removals;
		pthread_mutex_unlock(&pc->lock);
		bool any = false;
		for (size_t i = 0; i < k; i++)
			if (mine[i]) {
				overlay_copy(v[i], ps, off, buf, len);
				any = true;
			}
		struct page *chain = NULL;
		if (any) {
			pthread_mutex_lock(&pc->lock);
			for (size_t i = 0; i < k; i++) {
				if (!mine[i])
					continue;
				v[i]->flags &= ~(unsigned)PG_LOCKED;
				struct page *f = page_put_locked(pc, v[i]);
				if (f) {
					f->hash_next = chain;
					chain = f;
				}
			}
			page_wake_locked(pc);
			pthread_mutex_unlock(&pc->lock);
		}
		for (size_t i = 0; i < k; i++) {
			if (mine[i])
				continue;
			page_lock(v[i]);
			if (page_uptodate(v[i]))
				overlay_copy(v[i], ps, off, buf, len);
			page_unlock(v[i]);
			page_put(v[i]);
		}
		while (chain) {
			struct page *next = chain->hash_next;
			page_free(chain);
			chain = next;
		}
		if (idx > last)
			return removals;
	}
}

int page_grab(struct page_mapping *m, uint64_t index, struct page **out)
{
	return page_grab_snap(m, index, out, NULL, NULL);
}

int page_grab_snap(struct page_mapping *m, uint64_t index, struct page **out, bool *uptodate, uint64_t *block)
{
	struct page_cache *pc = m->pc;
	struct page *fresh = NULL;
	*out = NULL;
	pthread_mutex_lock(&pc->lock);
	for (;;) {
		struct page *pg = hash_find(pc, m, index);
		if (pg) {
			page_hold_locked(pg);
			page_lock_locked(pc, pg);
			if (pg->flags & PG_DETACHED) { /* truncated while we waited */
				page_unlock_locked(pc, pg);
				struct page *f = page_put_locked(pc, pg);
				pthread_mutex_unlock(&pc->lock);
				page_free(f);
				pthread_mutex_lock(&pc->lock);
				continue;
			}
			pc->st.hits++;
			snap_locked(pg, uptodate, block);
			pthread_mutex_unlock(&pc->lock);
			page_free(fresh);
			*out = pg;
			return 0;
		}
		if (pc->nr_pages >= pc->max_pages) {
			/* At the budget: reuse the LRU victim (a page allocated
			 * meanwhile is dropped: the budget is never exceeded). */
			pg = evict_next_slot(pc, m, index);
			if (!pg)
				pg = evict_one(pc);
			if (!pg) {
				if (!page_reclaim_wait_locked(pc)) {
					pthread_mutex_unlock(&pc->lock);
					page_free(fresh);
					return err_set(-ENOMEM, "page: all %" PRIu64 " pages of the cache are referenced",
						       pc->max_pages);
				}
				continue;
			}
		} else if (!fresh) {
			pthread_mutex_unlock(&pc->lock);
			fresh = page_alloc(pc);
			pthread_mutex_lock(&pc->lock);
			if (!fresh) {
				pthread_mutex_unlock(&pc->lock);
				return err_set(-ENOMEM, "page: out of memory for page %" PRIu64, index);
			}
			continue; /* look again: someone may have created it */
		} else {
			pg = fresh;
			fresh = NULL;
			pc->nr_pages++;
			if (pc->nr_pages > pc->st.peak_pages)
				pc->st.peak_pages = pc->nr_pages;
		}
		install_locked(pc, pg, m, index);
		pc->st.misses++;
		snap_locked(pg, uptodate, block);
		pthread_mutex_unlock(&pc->lock);
		page_free(fresh);
		*out = pg;
		return 0;
	}
}

size_t page_grab_batch(struct page_mapping *m, uint64_t index, size_t n, struct page **out, uint64_t *block)
{
	struct page_cache *pc = m->pc;
	size_t k = 1;
	pthread_mutex_lock(&pc->lock);
	/* Map may be called for any page of the batch: none of them may be
	 * dirty (an ordered commit's SYNC_ALL writeback waits for the locks of
	 * dirty pages, and map may wait for that commit). */
	if (out[0]->flags & PG_DIRTY)
		n = 1;
	for (; k < n; k++) {
		struct page *pg = hash_find(pc, m, index + k);
		if (pg) {
			if (pg->flags & (PG_LOCKED | PG_DIRTY | PG_DETACHED | PG_WBSHARED))
				break;
			page_hold_locked(pg);
			pg->flags |= PG_LOCKED;
			pc->st.hits++;
		} else {
			/* Below the budget a new page (a small allocation: the
			 * buffer is an arena slot); at it, an LRU victim. */
			if (pc->nr_pages < pc->max_pages) {
				if (!(pg = page_alloc(pc)))
					break;
				if (++pc->nr_pages > pc->st.peak_pages)
					pc->st.peak_pages = pc->nr_pages;
			} else if (!((pg = evict_next_slot(pc, m, index + k)) || (pg = evict_one(pc)))) {
				break;
			}
			install_locked(pc, pg, m, index + k);
			pc->st.misses++;
		}
		out[k] = pg;
		block[k] = pg->block;
	}
	pthread_mutex_unlock(&pc->lock);
	return k;
}

/* ---------------------------------------------------------------- dirty */

void page_set_dirty_locked(struct page_cache *pc, struct page *pg, uint64_t now)
{
	if (pg->flags & PG_DIRTY)
		return;
	pg->flags |= PG_DIRTY;
	pg->dirty_ns = now;
	list_add_tail(&pc->dirty, &pg->dirty);
	list_add_tail(&pg->m->dirty, &pg->mdirty);
	pc->nr_dirty++;
	pg->m->nr_dirty++;
	page_task_dirtied_locked(pc);
	if (pc->kick_limit && pc->nr_dirty > pc->kick_limit)
		page_flusher_wake_locked(pc);
}

void page_clear_dirty_locked(struct page_cache *pc, struct page *pg)
{
	if (!(pg->flags & PG_DIRTY))
		return;
	pg->flags &= ~(unsigned)PG_DIRTY;
	list_del(&pg->dirty);
	list_del(&pg->mdirty);
	pc->nr_dirty--;
	pg->m->nr_dirty--;
}

/* ------------------------------------------------------- one-page read */

struct read_wait {
	struct bio bio;
	struct page_cache *pc;
	bool done;
	int err;
};

static void read_end_io(struct bio *bio, int err)
{
	struct read_wait *w = bio->private;
	struct page_cache *pc = w->pc;
	pthread_mutex_lock(&pc->lock);
	w->done = true; /* the waiter may free w once we unlock */
	w->err = err;
	page_wake_locked(pc);
	pthread_mutex_unlock(&pc->lock);
}

int page_read_io(struct page_cache *pc, struct page *pg)
{
	struct read_wait w = { .pc = pc };
	pthread_mutex_lock(&pc->lock);
	uint64_t block = pg->block;
	pc->st.read_bios++;
	pthread_mutex_unlock(&pc->lock);
	w.bio.sector = block * pc->sectors_per_page;
	w.bio.size = pc->page_size;
	w.bio.data = pg->data;
	w.bio.rw = BLK_READ_SYNC;
	w.bio.end_io = read_end_io;
	w.bio.private = &w;
	int rc = blk_submit_bio(pc->q, &w.bio);
	pthread_mutex_lock(&pc->lock);
	if (rc == 0) {
		while (!w.done)
			page_wait_locked(pc);
		rc = w.err;
	}
	if (rc == 0)
		pg->flags |= PG_UPTODATE;
	else
		pc->st.read_errors++;
	pthread_mutex_unlock(&pc->lock);
	if (rc)
		return err_set(rc < 0 ? rc : -EIO, "page: read error at page %" PRIu64 " (block %" PRIu64 ")",
			       pg->index, block);
	return 0;
}
