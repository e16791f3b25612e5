/* Private to src/page: the page, the mapping, the cache, and what the cache
 * core (page_cache.c), the read/write paths (page_rw.c) and writeback
 * (page_writeback.c) share.
 *
 * Locking
 * - pc->lock (one mutex per cache) protects every field below marked "pc",
 *   including all page flags, reference counts, page->block, the hash, the
 *   LRU, the dirty lists, the counters and statistics, the worker queue and
 *   the flusher's control. It is never held while calling into the block
 *   layer (which may complete a bio in the calling thread), nor while
 *   calling the map or io_done ops, nor while copying page data.
 * - Waiting: one condition variable (pc->cond) with a generation counter
 *   (pc->gen, bumped with a broadcast on every change a waiter may wait for:
 *   page unlock, end of writeback, read completion, page freed, io_done
 *   returned). A waiter unplugs the queue before sleeping (what it waits for
 *   may be behind the plug) and sleeps only if gen did not move meanwhile.
 * - Page data is read and written only by the page lock holder (PG_LOCKED),
 *   or by the device for a read bio while the reader holds the lock.
 * - A page with count 0 is on pc->lru; only such pages are evicted. A page
 *   under writeback is referenced by its run. A detached page (truncated
 *   while referenced) is in no index and no list; the last put frees it.
 * - A mapping lives while it has pages (m->nr_alive, detached ones included)
 *   or runs (m->io_pending: from run creation until io_done returned);
 *   page_mapping_destroy waits for both to reach 0.
 */
#ifndef NOSTALL_PAGE_INT_H
#define NOSTALL_PAGE_INT_H

#include "page/page.h"

#include "blk/blk.h"
#include "util/list.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	PG_UPTODATE = 1u << 0,
	PG_DIRTY = 1u << 1,     /* on m->dirty and pc->dirty */
	PG_LOCKED = 1u << 2,
	PG_WRITEBACK = 1u << 3, /* on m->wb; in a run's bio */
	PG_DETACHED = 1u << 4,  /* truncated while referenced */
	PG_WBSHARED = 1u << 5,  /* under writeback, the run reads pg->data itself:
				 * whoever takes the page lock gives the page a
				 * fresh copy of its buffer before changing it
				 * (page_unshare_locked); the run frees the old one */
};

struct page {
	struct page_cache *pc;   /* fixed */
	struct page_mapping *m;  /* fixed while the page belongs to m */
	uint64_t index;          /* pc (changes only on reuse, count 0) */
	uint64_t block;          /* pc; PAGE_NO_BLOCK until mapped */
	void *data;              /* page lock; blockmem of data_size bytes */
	unsigned data_size;      /* fixed at allocation */
	unsigned flags;          /* pc */
	int count;               /* pc */
	uint64_t dirty_ns;       /* pc: when it became dirty */
	uint64_t wb_seq;         /* pc: m->wb_seq when it last went under writeback */
	uint64_t wb_dirty_ns;    /* pc: its dirty_ns when it last went under writeback */
	struct page *hash_next;  /* pc */
	struct list_node lru;    /* pc: on pc->lru iff count == 0 */
	struct list_node mlink;  /* pc: on m->pages unless detached */
	struct list_node dirty;  /* pc: on pc->dirty iff PG_DIRTY (oldest first) */
	struct list_node mdirty; /* pc: on m->dirty iff PG_DIRTY */
	struct list_node wb;     /* pc: on m->wb iff PG_WRITEBACK */
};

struct page_mapping {
	struct page_cache *pc;
	const struct page_mapping_ops *ops;
	void *ctx;
	struct list_node link;   /* pc: on pc->mappings */
	struct list_node pages;  /* pc */
	struct list_node dirty;  /* pc: dirty pages, oldest first */
	struct list_node wb;     /* pc: pages under writeback, by ascending wb_seq */
	uint64_t wb_seq;         /* pc: writeback starts so far (page->wb_seq) */
	uint64_t nr_pages, nr_dirty; /* pc: indexed pages, dirty pages */
	uint64_t nr_alive;       /* pc: pages pointing at m, detached included */
	uint64_t io_pending;     /* pc: runs not yet finished (io_done returned) */
	int err;                 /* pc: first write error since the last wait */
	uint64_t removals;       /* pc: pages taken out of the index (evicted,
				  * invalidated, truncated) plus truncate calls:
				  * page_mapping_overlay's staleness check */
};

/* A writeback run: one bio over consecutive pages and blocks. */
/* Run buffers kept for reuse (at most PAGE_RUN_BUFS x max_run_kb). */
#define PAGE_RUN_BUFS 8

struct page_run {
	struct bio bio;
	struct page_mapping *m;
	uint64_t first, block;   /* first page index and its block */
	size_t n, cap;
	int err;
	struct list_node link;   /* pc: on pc->done, waiting for the worker */
	struct page_cache *pc;
	void *buf;               /* NULL, or buf_bytes (>= n pages), 4 KiB
				  * aligned: the copy, when the pages' buffers
				  * are not one contiguous range */
	size_t buf_bytes;
	struct page_run_ent {
		struct page *pg;  /* referenced by the run */
		void *data;       /* pg->data when it went under writeback */
	} e[];
};

struct page_cache {
	struct blk_queue *q;
	unsigned page_size, sectors_per_page;
	uint64_t nr_blocks;
	struct page_params p;    /* pc (tunables change at run time) */
	uint64_t max_pages, dirty_limit, bg_limit, max_run;
	uint64_t kick_limit;     /* dirty pages that wake the flusher (0: never) */
	uint64_t dirtied;        /* pages made dirty, ever (the writers' proportions) */
	uint64_t id;             /* unique per cache ever created (a thread's
				  * proportion state names its cache by it) */

	pthread_mutex_t lock;
	pthread_cond_t cond;     /* see "Waiting" above */
	uint64_t gen;            /* pc */
	uint64_t wb_gen;         /* pc: bumped when a run completes */
	struct page **hash;
	size_t hash_mask;
	struct list_node lru;     /* pc: unreferenced pages, least recently used first */
	struct list_node dirty;   /* pc: dirty pages of every mapping, oldest first */
	struct list_node mappings; /* pc */
	uint64_t nr_pages, nr_dirty, nr_writeback; /* pc (nr_pages: allocated, detached included) */

	/* worker (io_done) */
	pthread_t worker;
	bool worker_running, stop;
	struct list_node done;    /* pc: finished runs waiting for io_done */
	pthread_cond_t worker_cond;
	uint64_t done_queued, done_finished; /* pc: runs queued to / finished by the worker */

	/* flusher */
	pthread_t flusher;
	bool flusher_running, flusher_kick;
	pthread_cond_t flusher_cond;

	struct page_stats st;     /* pc: counters (the "now" fields are filled on read) */

	/* Page buffers: an arena of max_pages slots reserved at creation
	 * (touched as used), handed out in ascending order, so the buffers of
	 * pages allocated or recycled (LRU order) in a row are contiguous and a
	 * writeback run of them is one bio without a copy. Freed slots go to a
	 * FIFO list through the slots themselves. Buffers past the arena (a
	 * page's copy while its old buffer is under writeback, or no arena)
	 * come from blockmem. arena_lock is a leaf lock. */
	pthread_mutex_t arena_lock;
	char *arena;              /* NULL: no arena */
	size_t arena_bytes, arena_next;
	void *arena_head, *arena_tail;
	/* pc: the indexed page whose buffer each slot is (NULL: free, or the
	 * old buffer of a page under writeback), so that a sequential writer's
	 * next page can take the slot after its previous page's (evicting the
	 * clean page there): the LRU order alone drifts (runs complete out of
	 * order) and the buffers of a run stop being contiguous. */
	struct page **slot_page;

	/* pc: freed run buffers kept for the next runs (fresh 512 KiB buffers
	 * cost page faults and zeroing on every run). */
	struct { void *buf; size_t bytes; } run_bufs[PAGE_RUN_BUFS];
	unsigned nr_run_bufs;
	unsigned fail_run_bufs;   /* pc->lock: copy buffers to refuse (tests) */
};

/* ---- page_cache.c ---- */

/* Sleep on pc->cond until something changes (gen moves), unplugging the
 * queue first. pc->lock held on entry and on return (dropped meanwhile). */
void page_wait_locked(struct page_cache *pc);
/* Wake every waiter (bump gen). pc->lock held. */
void page_wake_locked(struct page_cache *pc);
void page_hold_locked(struct page *pg);
/* Drop a reference; returns the page if it must be freed (detached, last
 * reference) for page_free() after unlocking. pc->lock held. */
struct page *page_put_locked(struct page_cache *pc, struct page *pg);
void page_free(struct page *pg);
/* A page buffer (arena slot or blockmem) / give one back. NULL if none. */
void *page_data_alloc(struct page_cache *pc);
void page_data_free(struct page_cache *pc, void *p);
/* Record (pg) or clear (NULL) which page buffer p belongs to, if it is an
 * arena slot. pc->lock held. */
void page_slot_set(struct page_cache *pc, const void *p, struct page *pg);
/* Take the page lock, waiting as needed. pc->lock held. */
void page_lock_locked(struct page_cache *pc, struct page *pg);
void page_unlock_locked(struct page_cache *pc, struct page *pg);
/* page_grab, also returning (when not NULL) whether the page is uptodate
 * and its block as they were when it was locked: both change only under
 * the page lock, so they stay valid while the caller holds it. */
int page_grab_snap(struct page_mapping *m, uint64_t index, struct page **out, bool *uptodate, uint64_t *block);
/* Extend a page_grab of page `index` (out[0], its block in block[0]) to
 * pages index+1.. (at most n in all) that can be had without waiting:
 * cached, unlocked, clean and not read by a writeback bio, or new (below
 * the budget, or in an LRU victim at it). None if
 * out[0] is dirty. Returns how many pages out[] holds (>= 1), locked and
 * referenced, with their blocks. Ascending order, never waiting: safe with
 * the page lock rules. */
size_t page_grab_batch(struct page_mapping *m, uint64_t index, size_t n, struct page **out, uint64_t *block);
/* Before the page lock holder changes the data of a page the writeback
 * reads directly (PG_WBSHARED): give the page a copy of its buffer. May drop
 * pc->lock meanwhile. pc->lock held, the page locked by the caller. */
void page_unshare_locked(struct page_cache *pc, struct page *pg);
/* Set / clear PG_DIRTY with the lists and counters. pc->lock held. */
void page_set_dirty_locked(struct page_cache *pc, struct page *pg, uint64_t now);
/* The calling thread dirtied a page (its share of the dirtying sets its
 * dirty limit: page_cache_balance_dirty). pc->lock held. */
void page_task_dirtied_locked(struct page_cache *pc);
void page_clear_dirty_locked(struct page_cache *pc, struct page *pg);
/* Take pg out of its mapping's index (and the LRU if unreferenced): freed
 * now (returned for page_free) if unreferenced, else marked detached.
 * Dirty state is dropped. pc->lock held; pg is neither locked by another
 * thread nor under writeback. */
struct page *page_detach_locked(struct page_cache *pc, struct page *pg);
/* Recompute the limits after a tunable change. pc->lock held. */
void page_limits_locked(struct page_cache *pc);
/* The page buffers' arena (page_cache.c), set up and torn down with the
 * cache (page_setup.c): reserved address space, resident as slots are used. */
void page_arena_init(struct page_cache *pc);
void page_arena_destroy(struct page_cache *pc);
/* The I/O of one page read (READ_SYNC) into its data, the page locked by the
 * caller; waits. Returns 0 or -EIO. */
int page_read_io(struct page_cache *pc, struct page *pg);

/* ---- page_writeback.c ---- */

/* Free the run buffers kept for reuse (destroy, no runs in flight). */
void page_run_bufs_drop(struct page_cache *pc);

/* Write the referenced pages v[0..n) (sorted by mapping, then index), then
 * put them. Returns pages submitted in *submitted; 0 or -ENOMEM. */
int page_write_pages(struct page_cache *pc, struct page **v, size_t n, enum page_wb_sync mode, unsigned rw,
		     size_t *submitted);
/* Collect, referenced and sorted by (mapping, index), the oldest dirty pages
 * of the cache: those dirty since before `expired_before`, then more while
 * over `keep` remain dirty, at most `max`. *n_expired says how many of them
 * were expired. Returns a malloc'd array (NULL if none). */
struct page **page_collect_oldest(struct page_cache *pc, uint64_t expired_before, uint64_t keep, size_t max,
				  size_t *n, size_t *n_expired);
/* Make room for one page: write back the oldest dirty pages (direct reclaim)
 * and wait for writeback. pc->lock held. Returns false if there is nothing
 * to wait for (every page referenced). */
bool page_reclaim_wait_locked(struct page_cache *pc);
/* Start / stop the worker and flusher threads. */
int page_threads_start(struct page_cache *pc);
void page_threads_stop(struct page_cache *pc);
/* Wake the flusher for a background pass. pc->lock held. */
void page_flusher_wake_locked(struct page_cache *pc);
/* Whether the calling thread is the cache's io_done worker. */
bool page_in_worker(struct page_cache *pc);

#endif
