/* Private to src/buf: the buffer head, the cache, and what the cache
 * (buf.c), submit/wait/sync (buf_io.c) and the writeback thread
 * (buf_writeback.c) share.
 *
 * Locking
 * - c->lock (the cache mutex) protects: the hash chains, the LRU list, the
 *   dirty list, every bh->count, bh->dirty_ns, the BH_DIRTY bit (it is only
 *   set or cleared with c->lock held, so "dirty" and "on the dirty list" are
 *   the same thing), the readahead stream state and the writeback thread's
 *   control fields. It is never held while calling into the block layer
 *   (which may complete bios in the calling thread) nor while taking a
 *   buffer's wait lock.
 * - bh->wlock protects the BH_LOCK bit transitions and is the mutex of
 *   bh->wcond, on which lock waiters sleep.
 * - the other state bits are atomic; stats counters are atomic.
 * - a buffer with count == 0 is on the LRU list; only such buffers are ever
 *   reclaimed or reused, and only under c->lock. I/O in flight holds a
 *   reference (taken by buf_submit, dropped by the completion after it
 *   unlocked the buffer), so a buffer is never freed under its own bio.
 */
#ifndef NOSTALL_BUF_INT_H
#define NOSTALL_BUF_INT_H

#include "buf/buf.h"

#include "blk/blk.h"
#include "util/list.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	BH_UPTODATE = 1u << 0,
	BH_DIRTY = 1u << 1,
	BH_LOCK = 1u << 2,
	BH_MAPPED = 1u << 3,
	BH_NEW = 1u << 4,
	BH_REQ = 1u << 5,
	BH_WRITE_EIO = 1u << 6,
	BH_JBD = 1u << 7,
	BH_VERIFIED = 1u << 8, /* buf_set_verified: contents checked since read */
	BH_CSUM_STALE = 1u << 9, /* buf_csum_defer: csum_fn must run before the data leaves */
};

#define BUF_DATA_ALIGN 4096u
/* buf_write_run: at most this many blocks per bio, and run buffers kept
 * (BUF_RUN_BUFS * BUF_RUN_MAX blocks: 4 MiB at 4 KiB blocks). */
#define BUF_RUN_BUFS 8u
#define NO_BLOCK UINT64_MAX

struct buffer_head {
	struct buf_cache *cache;
	uint64_t blocknr;          /* c->lock (changes only on reuse, count 0) */
	void *data;
	atomic_uint state;
	int count;                 /* c->lock */
	uint64_t dirty_ns;         /* c->lock: when it became dirty */
	struct buffer_head *hash_next; /* c->lock */
	struct list_node lru;      /* c->lock: on c->lru iff count == 0 */
	struct list_node dirty;    /* c->lock: on c->dirty iff BH_DIRTY */
	_Atomic(void *) private;
	/* buf_csum_defer: written by the buffer's owner before BH_CSUM_STALE
	 * is set (release), read by buf_csum_settle after it saw the bit
	 * (acquire). */
	buf_csum_fn csum_fn;
	uint32_t csum_seed;
	pthread_mutex_t wlock;
	pthread_cond_t wcond;
	unsigned waiters;          /* wlock */
	struct bio bio;            /* the buffer's one bio; owned by the lock holder */
};

struct buf_cache {
	struct blk_queue *q;
	unsigned block_size;
	unsigned sectors_per_block;
	uint64_t nr_blocks;
	struct buf_params p;
	size_t max_buffers;
	size_t bg_dirty_buffers;   /* 0: no background threshold */

	pthread_mutex_t lock;
	struct buffer_head **hash;
	size_t hash_mask;
	struct list_node lru;      /* unreferenced buffers, least recently used first */
	struct list_node dirty;    /* dirty buffers, oldest first */
	size_t nr_cached, nr_dirty;
	/* Freed buffers kept for reuse (linked through hash_next, data
	 * resident), at most max_buffers / 4: not in the hash nor counted in
	 * nr_cached. */
	struct buffer_head *spare;
	size_t nr_spare;
	uint64_t inflight;         /* I/O references outstanding */
	pthread_cond_t idle;       /* inflight reached 0 */

	/* readahead stream (c->lock) */
	uint64_t last_miss;
	uint64_t ra_marker;        /* reading this block starts the next window */
	uint64_t ra_end;           /* first block after the last window */

	/* writeback thread (c->lock) */
	pthread_t wb_thread;
	bool wb_running, wb_stop, wb_kick, wb_pressure;
	pthread_cond_t wb_cond;

	atomic_int write_err;      /* first async write error since the last sync */
	/* buf_cache_set_fua_block: every write of this block carries FUA (set
	 * once after create, before any write). */
	bool fua_block_set;
	uint64_t fua_block;

	/* Run buffers kept for the next buf_write_run (c->lock): each
	 * BUF_RUN_MAX blocks long; freed by buf_cache_destroy. */
	void *run_bufs[BUF_RUN_BUFS];
	/* The first BUF_RUN_BUFS run buffers: slices of one allocation in
	 * transparent huge pages (blockmem_huge_alloc), always kept; NULL
	 * until the first run. Freed by buf_run_bufs_drop. */
	char *run_arena;
	unsigned nr_run_bufs;

	struct {
		atomic_uint_fast64_t hits, misses, reads, readahead, writes, reclaimed,
			writeback_writes, pressure, read_errors, write_errors, run_writes, run_blocks;
	} st;
};

#define STAT_INC(c, f) atomic_fetch_add_explicit(&(c)->st.f, 1, memory_order_relaxed)
#define STAT_GET(c, f) atomic_load_explicit(&(c)->st.f, memory_order_relaxed)

/* State bits (atomic). */
static inline unsigned bh_state(const struct buffer_head *bh)
{
	return atomic_load_explicit(&((struct buffer_head *)bh)->state, memory_order_acquire);
}
static inline void bh_set(struct buffer_head *bh, unsigned bits)
{
	atomic_fetch_or_explicit(&bh->state, bits, memory_order_acq_rel);
}
static inline void bh_clear(struct buffer_head *bh, unsigned bits)
{
	atomic_fetch_and_explicit(&bh->state, ~bits, memory_order_acq_rel);
}

/* ---- buf.c: references and reclaim ---- */

/* Take / drop a reference with c->lock held (an unreferenced buffer is on
 * the LRU list). Dropping a reference of an unreferenced buffer is a
 * bug and aborts. */
void buf_hold_locked(struct buffer_head *bh);
void buf_put_locked(struct buf_cache *c, struct buffer_head *bh);
/* Free reclaimable buffers while the cache is above its bound (at most
 * `max`). c->lock held; returns them linked through hash_next, to be freed
 * with buf_chain_free() after the lock is dropped. */
struct buffer_head *buf_shrink_locked(struct buf_cache *c, size_t max);
void buf_chain_free(struct buffer_head *chain);

/* ---- buf_io.c: collecting dirty buffers ---- */

/* Referenced dirty (non-jbd) buffers: all of them (`all`), or those dirty
 * since before `expired_before`, or the oldest until at most `keep` remain
 * dirty; with `locked_too`, also clean buffers under I/O. *out is a malloc'd
 * array (NULL when empty or out of memory); the caller puts each buffer. */
size_t buf_collect(struct buf_cache *c, struct buffer_head ***out, bool all, uint64_t expired_before,
		   size_t keep, bool locked_too);
/* qsort comparator of buffer pointers by block number. */
int buf_cmp_block(const void *a, const void *b);

/* ---- buf_run.c ---- */

/* Free the kept run buffers (buf_cache_destroy, no I/O in flight). */
void buf_run_bufs_drop(struct buf_cache *c);

/* ---- buf_writeback.c: the writeback thread ---- */

/* Start the thread if p.writeback_interval_ms is not 0 (wb_running says
 * whether it runs). Returns 0 or a negative errno. */
int buf_wb_start(struct buf_cache *c);
/* Stop and join it (no-op if it does not run). c->lock not held. */
void buf_wb_stop(struct buf_cache *c);
/* Wake it for a background pass (`pressure`: write every dirty buffer).
 * c->lock held; no-op if the thread does not run or is already kicked. */
void buf_wb_wake_locked(struct buf_cache *c, bool pressure);

#endif
