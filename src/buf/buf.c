/* Buffer cache (docs/buffer-cache.md): buffer heads, hash lookup, LRU
 * reclaim, reads with readahead, submit/wait, sync_dirty_buffer,
 * ll_rw_block, fsync_buffers_list, cache sync and the writeback thread.
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
#include "buf/buf.h"

#include "blk/blk.h"
#include "dev/dev.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/list.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	BH_UPTODATE = 1u << 0,
	BH_DIRTY = 1u << 1,
	BH_LOCK = 1u << 2,
	BH_MAPPED = 1u << 3,
	BH_NEW = 1u << 4,
	BH_REQ = 1u << 5,
	BH_WRITE_EIO = 1u << 6,
	BH_JBD = 1u << 7,
};

#define BUF_DATA_ALIGN 4096u
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

	struct {
		atomic_uint_fast64_t hits, misses, reads, readahead, writes, reclaimed,
			writeback_writes, pressure, read_errors, write_errors;
	} st;
};

#define STAT_INC(c, f) atomic_fetch_add_explicit(&(c)->st.f, 1, memory_order_relaxed)
#define STAT_GET(c, f) atomic_load_explicit(&(c)->st.f, memory_order_relaxed)

static void *writeback_main(void *arg);

/* ------------------------------------------------------------ params */

void buf_params_default(struct buf_params *p)
{
	p->max_bytes = 64u << 20;
	p->readahead_blocks = 32;
	p->dirty_expire_ms = 30000;
	p->writeback_interval_ms = 5000;
	p->dirty_background_pct = 10;
}

/* ---------------------------------------------------------- state bits */

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

bool buf_uptodate(const struct buffer_head *bh) { return bh_state(bh) & BH_UPTODATE; }
void buf_set_uptodate(struct buffer_head *bh) { bh_set(bh, BH_UPTODATE); }
void buf_clear_uptodate(struct buffer_head *bh) { bh_clear(bh, BH_UPTODATE); }
bool buf_dirty(const struct buffer_head *bh) { return bh_state(bh) & BH_DIRTY; }
bool buf_locked(const struct buffer_head *bh) { return bh_state(bh) & BH_LOCK; }
bool buf_mapped(const struct buffer_head *bh) { return bh_state(bh) & BH_MAPPED; }
bool buf_req(const struct buffer_head *bh) { return bh_state(bh) & BH_REQ; }
bool buf_write_io_error(const struct buffer_head *bh) { return bh_state(bh) & BH_WRITE_EIO; }
void buf_clear_write_io_error(struct buffer_head *bh) { bh_clear(bh, BH_WRITE_EIO); }
bool buf_new(const struct buffer_head *bh) { return bh_state(bh) & BH_NEW; }
void buf_set_new(struct buffer_head *bh, bool v)
{
	if (v)
		bh_set(bh, BH_NEW);
	else
		bh_clear(bh, BH_NEW);
}
bool buf_jbd(const struct buffer_head *bh) { return bh_state(bh) & BH_JBD; }
void buf_set_jbd(struct buffer_head *bh, bool v)
{
	if (v)
		bh_set(bh, BH_JBD);
	else
		bh_clear(bh, BH_JBD);
}
void *buf_private(const struct buffer_head *bh)
{
	return atomic_load_explicit(&((struct buffer_head *)bh)->private, memory_order_acquire);
}
void buf_set_private(struct buffer_head *bh, void *p)
{
	atomic_store_explicit(&bh->private, p, memory_order_release);
}

void *buf_data(struct buffer_head *bh) { return bh->data; }
uint64_t buf_blocknr(const struct buffer_head *bh) { return bh->blocknr; }
unsigned buf_size(const struct buffer_head *bh) { return bh->cache->block_size; }
struct buf_cache *buf_cache_of(const struct buffer_head *bh) { return bh->cache; }
struct blk_queue *buf_cache_queue(const struct buf_cache *c) { return c->q; }
unsigned buf_cache_block_size(const struct buf_cache *c) { return c->block_size; }
uint64_t buf_cache_nr_blocks(const struct buf_cache *c) { return c->nr_blocks; }

/* ------------------------------------------------- hash, LRU, references */

static size_t hash_slot(const struct buf_cache *c, uint64_t block)
{
	return (size_t)((block * 0x9E3779B97F4A7C15ull) >> 20) & c->hash_mask;
}

static struct buffer_head *hash_find(struct buf_cache *c, uint64_t block)
{
	for (struct buffer_head *bh = c->hash[hash_slot(c, block)]; bh; bh = bh->hash_next)
		if (bh->blocknr == block)
			return bh;
	return NULL;
}

static void hash_insert(struct buf_cache *c, struct buffer_head *bh)
{
	size_t s = hash_slot(c, bh->blocknr);
	bh->hash_next = c->hash[s];
	c->hash[s] = bh;
}

static void hash_remove(struct buf_cache *c, struct buffer_head *bh)
{
	struct buffer_head **pp = &c->hash[hash_slot(c, bh->blocknr)];
	while (*pp != bh)
		pp = &(*pp)->hash_next;
	*pp = bh->hash_next;
	bh->hash_next = NULL;
}

/* c->lock held. */
static void hold_locked(struct buffer_head *bh)
{
	if (bh->count++ == 0)
		list_del(&bh->lru);
}

/* c->lock held. */
static void put_locked(struct buf_cache *c, struct buffer_head *bh)
{
	if (bh->count <= 0) {
		fprintf(stderr, "nostall: buf_put of an unreferenced buffer (block %" PRIu64 ")\n", bh->blocknr);
		abort();
	}
	if (--bh->count == 0)
		list_add_tail(&c->lru, &bh->lru);
}

void buf_hold(struct buffer_head *bh)
{
	struct buf_cache *c = bh->cache;
	pthread_mutex_lock(&c->lock);
	hold_locked(bh);
	pthread_mutex_unlock(&c->lock);
}

void buf_put(struct buffer_head *bh)
{
	if (!bh)
		return;
	struct buf_cache *c = bh->cache;
	pthread_mutex_lock(&c->lock);
	put_locked(c, bh);
	pthread_mutex_unlock(&c->lock);
}

/* Reclaimable: unreferenced (so not under I/O), clean, unlocked, not the
 * journal's. c->lock held. */
static bool reclaimable(const struct buffer_head *bh)
{
	return bh->count == 0 && !(bh_state(bh) & (BH_DIRTY | BH_LOCK | BH_JBD)) && !buf_private(bh);
}

/* Take the least recently used reclaimable buffer out of the cache (hash and
 * LRU). c->lock held. */
static struct buffer_head *reclaim_one(struct buf_cache *c)
{
	/* Unreclaimable buffers met at the head (dirty, jbd) are rotated to
	 * the tail, as the kernel's LRU scan rotates dirty pages, so that a
	 * run of them is not rescanned by every allocation. */
	size_t budget = c->nr_cached;
	while (budget-- && !list_empty(&c->lru)) {
		struct buffer_head *bh = list_entry(c->lru.next, struct buffer_head, lru);
		if (!reclaimable(bh)) {
			list_del(&bh->lru);
			list_add_tail(&c->lru, &bh->lru);
			continue;
		}
		list_del(&bh->lru);
		hash_remove(c, bh);
		c->nr_cached--;
		STAT_INC(c, reclaimed);
		return bh;
	}
	return NULL;
}

static void bh_free(struct buffer_head *bh)
{
	pthread_cond_destroy(&bh->wcond);
	pthread_mutex_destroy(&bh->wlock);
	free(bh->data);
	free(bh);
}

static struct buffer_head *bh_alloc(struct buf_cache *c)
{
	struct buffer_head *bh = calloc(1, sizeof *bh);
	if (!bh)
		return NULL;
	size_t align = c->block_size > BUF_DATA_ALIGN ? c->block_size : BUF_DATA_ALIGN;
	if (posix_memalign(&bh->data, align, c->block_size)) {
		free(bh);
		return NULL;
	}
	bh->cache = c;
	pthread_mutex_init(&bh->wlock, NULL);
	pthread_cond_init(&bh->wcond, NULL);
	list_init(&bh->lru);
	list_init(&bh->dirty);
	return bh;
}

/* (Re)initialise bh as the buffer of `block` with one reference and insert
 * it. c->lock held. */
static void bh_install(struct buf_cache *c, struct buffer_head *bh, uint64_t block)
{
	bh->blocknr = block;
	atomic_store_explicit(&bh->state, BH_MAPPED, memory_order_release);
	atomic_store_explicit(&bh->private, NULL, memory_order_release);
	bh->count = 1;
	bh->dirty_ns = 0;
	hash_insert(c, bh);
	c->nr_cached++;
}

/* Free reclaimable buffers while the cache is above its bound (at most
 * `max` of them). c->lock held; the buffers are returned on *out (linked
 * through hash_next) to be freed without the lock. */
static struct buffer_head *shrink_locked(struct buf_cache *c, size_t max)
{
	struct buffer_head *out = NULL;
	while (max-- && c->nr_cached > c->max_buffers) {
		struct buffer_head *bh = reclaim_one(c);
		if (!bh)
			break;
		bh->hash_next = out;
		out = bh;
	}
	return out;
}

static void free_chain(struct buffer_head *bh)
{
	while (bh) {
		struct buffer_head *next = bh->hash_next;
		bh_free(bh);
		bh = next;
	}
}

/* getblk; with !may_exceed (readahead) it returns NULL instead of growing
 * the cache past its bound when nothing is reclaimable. */
static struct buffer_head *getblk(struct buf_cache *c, uint64_t block, int *err, bool may_exceed)
{
	if (block >= c->nr_blocks) {
		int rc = err_set(-ERANGE, "buf: block %" PRIu64 " is past the end of the device (%" PRIu64 " blocks)",
				 block, c->nr_blocks);
		if (err)
			*err = rc;
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	struct buffer_head *bh = hash_find(c, block);
	if (bh) {
		hold_locked(bh);
		pthread_mutex_unlock(&c->lock);
		return bh;
	}
	if (c->nr_cached >= c->max_buffers) {
		/* Reuse the LRU victim; free one more if we are above the bound
		 * (it was exceeded while nothing was reclaimable). */
		struct buffer_head *extra = c->nr_cached > c->max_buffers ? shrink_locked(c, 1) : NULL;
		bh = reclaim_one(c);
		if (bh) {
			bh_install(c, bh, block);
			pthread_mutex_unlock(&c->lock);
			free_chain(extra);
			return bh;
		}
		pthread_mutex_unlock(&c->lock);
		free_chain(extra);
		if (!may_exceed)
			return NULL;
	} else {
		pthread_mutex_unlock(&c->lock);
	}
	struct buffer_head *nbh = bh_alloc(c);
	pthread_mutex_lock(&c->lock);
	bh = hash_find(c, block);
	if (bh) { /* someone else created it meanwhile */
		hold_locked(bh);
		pthread_mutex_unlock(&c->lock);
		if (nbh)
			bh_free(nbh);
		return bh;
	}
	if (!nbh) {
		pthread_mutex_unlock(&c->lock);
		int rc = err_set(-ENOMEM, "buf: out of memory for block %" PRIu64, block);
		if (err)
			*err = rc;
		return NULL;
	}
	if (c->nr_cached >= c->max_buffers) {
		/* Over the bound, nothing reclaimable: report it, and have the
		 * writeback thread clean what it may so that reclaim can work. */
		STAT_INC(c, pressure);
		if (c->wb_running && c->nr_dirty && !c->wb_pressure) {
			c->wb_pressure = c->wb_kick = true;
			pthread_cond_signal(&c->wb_cond);
		}
	}
	bh_install(c, nbh, block);
	pthread_mutex_unlock(&c->lock);
	return nbh;
}

struct buffer_head *buf_get(struct buf_cache *c, uint64_t block, int *err)
{
	return getblk(c, block, err, true);
}

/* ----------------------------------------------------- the buffer lock */

bool buf_trylock(struct buffer_head *bh)
{
	pthread_mutex_lock(&bh->wlock);
	bool got = !(bh_state(bh) & BH_LOCK);
	if (got)
		bh_set(bh, BH_LOCK);
	pthread_mutex_unlock(&bh->wlock);
	return got;
}

/* Sleep until BH_LOCK is clear (then take it if `take`). Before each sleep
 * the queue is unplugged (sync_buffer): the I/O we wait for may sit behind
 * the plug. */
static void wait_unlocked(struct buffer_head *bh, bool take)
{
	pthread_mutex_lock(&bh->wlock);
	while (bh_state(bh) & BH_LOCK) {
		pthread_mutex_unlock(&bh->wlock);
		blk_queue_unplug(bh->cache->q);
		pthread_mutex_lock(&bh->wlock);
		if (!(bh_state(bh) & BH_LOCK))
			break;
		bh->waiters++;
		pthread_cond_wait(&bh->wcond, &bh->wlock);
		bh->waiters--;
	}
	if (take)
		bh_set(bh, BH_LOCK);
	pthread_mutex_unlock(&bh->wlock);
}

void buf_lock(struct buffer_head *bh)
{
	if (buf_trylock(bh))
		return;
	wait_unlocked(bh, true);
}

void buf_unlock(struct buffer_head *bh)
{
	pthread_mutex_lock(&bh->wlock);
	bh_clear(bh, BH_LOCK);
	if (bh->waiters)
		pthread_cond_broadcast(&bh->wcond);
	pthread_mutex_unlock(&bh->wlock);
}

void buf_wait(struct buffer_head *bh)
{
	if (!(bh_state(bh) & BH_LOCK))
		return;
	wait_unlocked(bh, false);
}

/* ------------------------------------------------------------ dirty */

void buf_mark_dirty(struct buffer_head *bh)
{
	if (bh_state(bh) & BH_DIRTY)
		return;
	struct buf_cache *c = bh->cache;
	pthread_mutex_lock(&c->lock);
	if (!(bh_state(bh) & BH_DIRTY)) {
		bh_set(bh, BH_DIRTY);
		bh->dirty_ns = clock_now_ns();
		list_add_tail(&c->dirty, &bh->dirty);
		c->nr_dirty++;
		if (c->wb_running && c->bg_dirty_buffers && c->nr_dirty > c->bg_dirty_buffers && !c->wb_kick) {
			c->wb_kick = true;
			pthread_cond_signal(&c->wb_cond);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

static bool test_clear_dirty_locked(struct buf_cache *c, struct buffer_head *bh)
{
	if (!(bh_state(bh) & BH_DIRTY))
		return false;
	bh_clear(bh, BH_DIRTY);
	list_del(&bh->dirty);
	c->nr_dirty--;
	return true;
}

bool buf_test_clear_dirty(struct buffer_head *bh)
{
	if (!(bh_state(bh) & BH_DIRTY))
		return false;
	struct buf_cache *c = bh->cache;
	pthread_mutex_lock(&c->lock);
	bool was = test_clear_dirty_locked(c, bh);
	pthread_mutex_unlock(&c->lock);
	return was;
}

void buf_forget(struct buffer_head *bh)
{
	if (!bh)
		return;
	struct buf_cache *c = bh->cache;
	pthread_mutex_lock(&c->lock);
	test_clear_dirty_locked(c, bh);
	put_locked(c, bh);
	pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------ submit */

static void buf_end_io(struct bio *bio, int err)
{
	struct buffer_head *bh = bio->private;
	struct buf_cache *c = bh->cache;
	bool write = bio->rw & BLK_RW_WRITE;
	/* Everything needed from the bio is read above: once unlocked, the
	 * buffer (and its bio) belongs to the next lock holder. */
	if (!write) {
		if (err) {
			bh_clear(bh, BH_UPTODATE);
			STAT_INC(c, read_errors);
		} else {
			bh_set(bh, BH_UPTODATE);
		}
	} else if (err) {
		/* As end_buffer_write_sync: the write is lost, the buffer is
		 * clean, not uptodate, and carries write_io_error. */
		bh_set(bh, BH_WRITE_EIO);
		bh_clear(bh, BH_UPTODATE);
		STAT_INC(c, write_errors);
		int zero = 0;
		atomic_compare_exchange_strong(&c->write_err, &zero, err < 0 ? err : -EIO);
	}
	buf_unlock(bh);
	pthread_mutex_lock(&c->lock);
	put_locked(c, bh);
	if (--c->inflight == 0)
		pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->lock);
}

int buf_submit(struct buffer_head *bh, unsigned rw)
{
	struct buf_cache *c = bh->cache;
	if (!(bh_state(bh) & BH_LOCK))
		return err_set(-EINVAL, "buf_submit: block %" PRIu64 " is not locked", bh->blocknr);
	rw &= ~(unsigned)BLK_REQ_SWRITE;
	bool write = rw & BLK_RW_WRITE;
	bh_set(bh, BH_REQ);
	pthread_mutex_lock(&c->lock);
	hold_locked(bh);
	c->inflight++;
	pthread_mutex_unlock(&c->lock);
	if (write)
		STAT_INC(c, writes);
	else
		STAT_INC(c, reads);
	struct bio *bio = &bh->bio;
	memset(bio, 0, sizeof *bio);
	bio->sector = bh->blocknr * c->sectors_per_block;
	bio->size = c->block_size;
	bio->data = bh->data;
	bio->rw = rw;
	bio->end_io = buf_end_io;
	bio->private = bh;
	int rc = blk_submit_bio(c->q, bio);
	if (rc < 0) {
		if (write) {
			bh_set(bh, BH_WRITE_EIO);
			STAT_INC(c, write_errors);
		}
		buf_unlock(bh);
		pthread_mutex_lock(&c->lock);
		put_locked(c, bh);
		if (--c->inflight == 0)
			pthread_cond_broadcast(&c->idle);
		pthread_mutex_unlock(&c->lock);
	}
	return rc;
}

/* ------------------------------------------------------------- reads */

/* Start READ of the uncached blocks in [block, block+n); nobody waits.
 * Returns how many were submitted. */
static unsigned readahead_range(struct buf_cache *c, uint64_t block, unsigned n)
{
	unsigned done = 0;
	/* Two windows (the one being read and the next) must fit in the
	 * cache with room to spare, or readahead evicts itself. */
	if (n > c->max_buffers / 4)
		n = (unsigned)(c->max_buffers / 4);
	if (!n)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t b = block + i;
		if (b >= c->nr_blocks || b < block)
			break;
		pthread_mutex_lock(&c->lock);
		struct buffer_head *bh = hash_find(c, b);
		bool skip = bh && (bh_state(bh) & (BH_UPTODATE | BH_LOCK));
		pthread_mutex_unlock(&c->lock);
		if (skip)
			continue;
		/* Never push the cache over its bound for a guess. */
		bh = getblk(c, b, NULL, false);
		if (!bh)
			break;
		if (!buf_uptodate(bh) && buf_trylock(bh)) {
			if (!buf_uptodate(bh)) {
				if (buf_submit(bh, BLK_READ) == 0) {
					STAT_INC(c, readahead);
					done++;
				}
			} else {
				buf_unlock(bh);
			}
		}
		buf_put(bh);
	}
	return done;
}

void buf_readahead(struct buf_cache *c, uint64_t block, unsigned n)
{
	readahead_range(c, block, n);
}

int buf_read(struct buf_cache *c, uint64_t block, struct buffer_head **out)
{
	int err = 0;
	*out = NULL;
	struct buffer_head *bh = getblk(c, block, &err, true);
	if (!bh)
		return err;
	unsigned ra_n = c->p.readahead_blocks;
	if (ra_n > c->max_buffers / 4)
		ra_n = (unsigned)(c->max_buffers / 4);
	/* The reader entered the last readahead window: start the next one
	 * before anything else (asynchronous readahead). */
	if (ra_n) {
		uint64_t async_start = NO_BLOCK;
		pthread_mutex_lock(&c->lock);
		if (block == c->ra_marker) {
			async_start = c->ra_end;
			c->ra_marker = NO_BLOCK; /* claimed */
		}
		pthread_mutex_unlock(&c->lock);
		if (async_start != NO_BLOCK && readahead_range(c, async_start, ra_n)) {
			pthread_mutex_lock(&c->lock);
			c->ra_marker = async_start;
			c->ra_end = async_start + ra_n;
			pthread_mutex_unlock(&c->lock);
		}
	}
	if (buf_uptodate(bh)) {
		STAT_INC(c, hits);
		*out = bh;
		return 0;
	}
	buf_lock(bh);
	if (buf_uptodate(bh)) { /* read by someone else while we waited */
		buf_unlock(bh);
		STAT_INC(c, hits);
		*out = bh;
		return 0;
	}
	STAT_INC(c, misses);
	bool ra = false;
	pthread_mutex_lock(&c->lock);
	if (ra_n && c->last_miss != NO_BLOCK && block == c->last_miss + 1)
		ra = true;
	c->last_miss = block;
	pthread_mutex_unlock(&c->lock);
	int rc;
	if (ra) {
		/* Queue our block and the window behind the plug, so they merge
		 * into one request; our wait unplugs. */
		rc = buf_submit(bh, BLK_READ);
		if (readahead_range(c, block + 1, ra_n)) {
			pthread_mutex_lock(&c->lock);
			c->ra_marker = block + 1;
			c->ra_end = block + 1 + ra_n;
			pthread_mutex_unlock(&c->lock);
		}
	} else {
		rc = buf_submit(bh, BLK_READ_SYNC);
	}
	if (rc < 0) {
		buf_put(bh);
		return rc;
	}
	buf_wait(bh);
	if (!buf_uptodate(bh)) {
		buf_put(bh);
		return err_set(-EIO, "buf: read error at block %" PRIu64, block);
	}
	*out = bh;
	return 0;
}

/* ------------------------------------------------ writes and waiting */

void buf_ll_rw_block(unsigned rw, int n, struct buffer_head **bhs)
{
	bool write = rw & BLK_RW_WRITE;
	bool swrite = rw & BLK_REQ_SWRITE;
	for (int i = 0; i < n; i++) {
		struct buffer_head *bh = bhs[i];
		if (!bh)
			continue;
		if (swrite)
			buf_lock(bh);
		else if (!buf_trylock(bh))
			continue;
		if (write) {
			if (buf_test_clear_dirty(bh)) {
				buf_submit(bh, rw);
				continue;
			}
		} else if (!buf_uptodate(bh)) {
			buf_submit(bh, rw);
			continue;
		}
		buf_unlock(bh);
	}
}

int buf_sync_dirty(struct buffer_head *bh)
{
	struct buf_cache *c = bh->cache;
	buf_lock(bh);
	if (!buf_test_clear_dirty(bh)) {
		buf_unlock(bh);
		return 0;
	}
	unsigned op = blk_queue_sync_batch_op(c->q) == BLK_WRITE ? BLK_WRITE : BLK_WRITE_SYNC;
	int rc = buf_submit(bh, op);
	if (rc < 0)
		return rc;
	buf_wait(bh);
	if (!buf_uptodate(bh))
		return err_set(-EIO, "buf: write error at block %" PRIu64, bh->blocknr);
	return 0;
}

int buf_fsync_list(int n, struct buffer_head **bhs)
{
	if (n <= 0)
		return 0;
	bool *waitfor = calloc((size_t)n, sizeof *waitfor);
	if (!waitfor)
		return -ENOMEM;
	struct blk_queue *prev_q = NULL;
	for (int i = 0; i < n; i++) {
		struct buffer_head *bh = bhs[i];
		if (!bh || buf_jbd(bh))
			continue;
		if (!buf_dirty(bh) && !buf_locked(bh))
			continue;
		struct blk_queue *q = bh->cache->q;
		bool plug = blk_queue_sync_batch_op(q) == BLK_WRITE_SYNC_PLUG;
		buf_ll_rw_block(plug ? BLK_SWRITE_SYNC_PLUG : BLK_SWRITE_SYNC, 1, &bh);
		/* Kick the previous queue; the last one is run by our first
		 * wait below. */
		if (prev_q && prev_q != q)
			blk_queue_unplug(prev_q);
		prev_q = q;
		waitfor[i] = true;
	}
	int err = 0;
	for (int i = 0; i < n; i++) {
		if (!waitfor[i])
			continue;
		buf_wait(bhs[i]);
		if (!buf_uptodate(bhs[i]) && !err)
			err = err_set(-EIO, "buf: write error at block %" PRIu64, bhs[i]->blocknr);
	}
	free(waitfor);
	return err;
}

/* ------------------------------------------------------ cache-wide */

static int cmp_block(const void *a, const void *b)
{
	const struct buffer_head *x = *(struct buffer_head *const *)a, *y = *(struct buffer_head *const *)b;
	return x->blocknr < y->blocknr ? -1 : x->blocknr > y->blocknr;
}

/* Collect referenced dirty (non-jbd) buffers: all of them, or only those
 * dirty since before `expired_before`, or (background) the oldest until at
 * most `keep` remain dirty. With `locked_too`, also buffers under I/O. */
static size_t collect(struct buf_cache *c, struct buffer_head ***out, bool all, uint64_t expired_before,
		      size_t keep, bool locked_too)
{
	pthread_mutex_lock(&c->lock);
	size_t cap = c->nr_dirty + (locked_too ? c->nr_cached : 0);
	struct buffer_head **v = cap ? malloc(cap * sizeof *v) : NULL;
	size_t n = 0;
	if (cap && !v) {
		pthread_mutex_unlock(&c->lock);
		*out = NULL;
		return 0;
	}
	struct list_node *pos;
	size_t remaining = c->nr_dirty;
	list_for_each(pos, &c->dirty) {
		struct buffer_head *bh = list_entry(pos, struct buffer_head, dirty);
		if (bh_state(bh) & BH_JBD)
			continue;
		bool take = all || bh->dirty_ns <= expired_before || remaining > keep;
		if (!take)
			break; /* time-ordered: the rest is younger */
		hold_locked(bh);
		v[n++] = bh;
		remaining--;
	}
	if (locked_too) {
		for (size_t s = 0; s <= c->hash_mask; s++)
			for (struct buffer_head *bh = c->hash[s]; bh; bh = bh->hash_next)
				if ((bh_state(bh) & (BH_LOCK | BH_DIRTY)) == BH_LOCK) {
					hold_locked(bh);
					v[n++] = bh;
				}
	}
	pthread_mutex_unlock(&c->lock);
	*out = v;
	return n;
}

int buf_cache_sync(struct buf_cache *c)
{
	struct buffer_head **v;
	size_t n = collect(c, &v, true, 0, 0, true);
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_block);
	for (size_t i = 0; i < n; i++) {
		struct buffer_head *bh = v[i];
		if (!buf_dirty(bh) || (bh_state(bh) & BH_JBD))
			continue;
		buf_lock(bh);
		if (buf_test_clear_dirty(bh))
			buf_submit(bh, BLK_WRITE);
		else
			buf_unlock(bh);
	}
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		buf_wait(v[i]);
		buf_put(v[i]);
	}
	free(v);
	/* Write errors of this pass and of earlier asynchronous writes. */
	err = atomic_exchange(&c->write_err, 0);
	if (err)
		err_set(err, "buf: write error during writeback or sync");
	struct bio flush = { .sector = 0, .size = 0, .data = NULL, .rw = BLK_WRITE | BLK_REQ_FLUSH };
	int frc = blk_submit_bio_wait(c->q, &flush);
	if (frc < 0 && !err)
		err = frc;
	return err;
}

void buf_cache_drop_clean(struct buf_cache *c)
{
	struct buffer_head *chain = NULL;
	pthread_mutex_lock(&c->lock);
	struct list_node *pos, *tmp;
	list_for_each_safe(pos, tmp, &c->lru) {
		struct buffer_head *bh = list_entry(pos, struct buffer_head, lru);
		if (!reclaimable(bh))
			continue;
		list_del(&bh->lru);
		hash_remove(c, bh);
		c->nr_cached--;
		bh->hash_next = chain;
		chain = bh;
	}
	c->last_miss = c->ra_marker = c->ra_end = NO_BLOCK;
	pthread_mutex_unlock(&c->lock);
	free_chain(chain);
}

void buf_cache_stats(struct buf_cache *c, struct buf_stats *out)
{
	memset(out, 0, sizeof *out);
	out->hits = STAT_GET(c, hits);
	out->misses = STAT_GET(c, misses);
	out->reads = STAT_GET(c, reads);
	out->readahead = STAT_GET(c, readahead);
	out->writes = STAT_GET(c, writes);
	out->reclaimed = STAT_GET(c, reclaimed);
	out->writeback_writes = STAT_GET(c, writeback_writes);
	out->pressure = STAT_GET(c, pressure);
	out->read_errors = STAT_GET(c, read_errors);
	out->write_errors = STAT_GET(c, write_errors);
	pthread_mutex_lock(&c->lock);
	out->cached = c->nr_cached;
	out->dirty = c->nr_dirty;
	out->max_cached = c->max_buffers;
	pthread_mutex_unlock(&c->lock);
}

/* ---------------------------------------------------- writeback thread */

/* One pass: write (WRITE, block order) the expired dirty buffers, or the
 * oldest ones down to the background threshold, or (all: the cache is over
 * its bound with nothing reclaimable) every dirty buffer; skip jbd and
 * locked buffers. Then shrink the cache back under its bound if it grew past it. */
static void writeback_pass(struct buf_cache *c, bool all)
{
	uint64_t now = clock_now_ns();
	uint64_t expire_ns = (uint64_t)c->p.dirty_expire_ms * NS_PER_MS;
	uint64_t before = now > expire_ns ? now - expire_ns : 0;
	size_t keep = c->bg_dirty_buffers ? c->bg_dirty_buffers : SIZE_MAX;
	struct buffer_head **v;
	size_t n = collect(c, &v, all, before, keep, false);
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_block);
	for (size_t i = 0; i < n; i++) {
		struct buffer_head *bh = v[i];
		if (!(bh_state(bh) & BH_JBD) && buf_trylock(bh)) {
			if (!(bh_state(bh) & BH_JBD) && buf_test_clear_dirty(bh)) {
				if (buf_submit(bh, BLK_WRITE) == 0)
					STAT_INC(c, writeback_writes);
			} else {
				buf_unlock(bh);
			}
		}
		buf_put(bh);
	}
	free(v);
	pthread_mutex_lock(&c->lock);
	struct buffer_head *chain = shrink_locked(c, SIZE_MAX);
	pthread_mutex_unlock(&c->lock);
	free_chain(chain);
}

static void *writeback_main(void *arg)
{
	struct buf_cache *c = arg;
	uint64_t interval = (uint64_t)c->p.writeback_interval_ms * NS_PER_MS;
	pthread_mutex_lock(&c->lock);
	uint64_t next = clock_now_ns() + interval;
	while (!c->wb_stop) {
		if (!c->wb_kick && clock_now_ns() < next) {
			clock_cond_wait_until(&c->wb_cond, &c->lock, next);
			continue;
		}
		bool all = c->wb_pressure;
		c->wb_kick = c->wb_pressure = false;
		pthread_mutex_unlock(&c->lock);
		writeback_pass(c, all);
		pthread_mutex_lock(&c->lock);
		next = clock_now_ns() + interval;
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---------------------------------------------------- create, destroy */

int buf_cache_create(struct blk_queue *q, unsigned block_size, const struct buf_params *p,
		     struct buf_cache **out)
{
	*out = NULL;
	if (!q)
		return err_set(-EINVAL, "buf: no queue");
	if (block_size != 1024 && block_size != 2048 && block_size != 4096)
		return err_set(-EINVAL, "buf: block size %u is not 1024, 2048 or 4096", block_size);
	struct dev_geometry geo;
	dev_geometry_get(blk_queue_dev(q), &geo);
	if (geo.logical_block_size && block_size % geo.logical_block_size)
		return err_set(-EINVAL, "buf: block size %u is smaller than the device's logical block size %u",
			       block_size, geo.logical_block_size);
	struct buf_cache *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	buf_params_default(&c->p);
	if (p) {
		c->p = *p;
		if (!c->p.max_bytes)
			c->p.max_bytes = 64u << 20;
	}
	if (c->p.dirty_background_pct > 100)
		c->p.dirty_background_pct = 100;
	c->q = q;
	c->block_size = block_size;
	c->sectors_per_block = block_size / DEV_SECTOR_SIZE;
	c->nr_blocks = geo.size_bytes / block_size;
	c->max_buffers = c->p.max_bytes / block_size;
	if (c->max_buffers < 1)
		c->max_buffers = 1;
	c->bg_dirty_buffers = c->max_buffers * c->p.dirty_background_pct / 100;
	size_t hs = 1024;
	while (hs < c->max_buffers && hs < (1u << 20))
		hs <<= 1;
	c->hash = calloc(hs, sizeof *c->hash);
	if (!c->hash) {
		free(c);
		return -ENOMEM;
	}
	c->hash_mask = hs - 1;
	pthread_mutex_init(&c->lock, NULL);
	clock_cond_init(&c->idle);
	clock_cond_init(&c->wb_cond);
	list_init(&c->lru);
	list_init(&c->dirty);
	c->last_miss = c->ra_marker = c->ra_end = NO_BLOCK;
	if (c->p.writeback_interval_ms) {
		c->wb_running = true;
		int rc = pthread_create(&c->wb_thread, NULL, writeback_main, c);
		if (rc) {
			c->wb_running = false;
			pthread_cond_destroy(&c->wb_cond);
			pthread_cond_destroy(&c->idle);
			pthread_mutex_destroy(&c->lock);
			free(c->hash);
			free(c);
			return err_set(-rc, "buf: cannot start the writeback thread");
		}
	}
	*out = c;
	return 0;
}

void buf_cache_destroy(struct buf_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	bool running = c->wb_running;
	c->wb_stop = true;
	pthread_cond_signal(&c->wb_cond);
	pthread_mutex_unlock(&c->lock);
	if (running)
		pthread_join(c->wb_thread, NULL);
	/* I/O still in flight (writeback, readahead) holds references: let it
	 * finish (the unplug makes sure it is not parked behind the plug). */
	pthread_mutex_lock(&c->lock);
	while (c->inflight) {
		pthread_mutex_unlock(&c->lock);
		blk_queue_unplug(c->q);
		pthread_mutex_lock(&c->lock);
		if (c->inflight)
			clock_cond_wait_until(&c->idle, &c->lock, clock_now_ns() + 10 * NS_PER_MS);
	}
	pthread_mutex_unlock(&c->lock);
	size_t leaked = 0;
	for (size_t s = 0; s <= c->hash_mask; s++) {
		struct buffer_head *bh = c->hash[s];
		while (bh) {
			struct buffer_head *next = bh->hash_next;
			if (bh->count)
				leaked++;
			bh_free(bh);
			bh = next;
		}
	}
	if (leaked)
		fprintf(stderr, "nostall: buf_cache_destroy: %zu buffers still referenced\n", leaked);
	free(c->hash);
	pthread_cond_destroy(&c->wb_cond);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
