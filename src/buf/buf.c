/* Buffer cache (docs/buffer-cache.md): buffer heads, state bits, hash
 * lookup, references and LRU reclaim, getblk, dirtying, reads with
 * readahead, create/destroy and statistics. Submitting and waiting, the
 * sync helpers and cache_sync are in buf_io.c; the writeback thread in
 * buf_writeback.c. The locking rules are in buf_int.h.
 */
#include "buf/buf_int.h"

#include "dev/dev.h"
#include "util/clock.h"
#include "util/blockmem.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

bool buf_uptodate(const struct buffer_head *bh) { return bh_state(bh) & BH_UPTODATE; }
void buf_set_uptodate(struct buffer_head *bh) { bh_set(bh, BH_UPTODATE); }
void buf_clear_uptodate(struct buffer_head *bh) { bh_clear(bh, BH_UPTODATE | BH_VERIFIED); }
bool buf_verified(const struct buffer_head *bh) { return bh_state(bh) & BH_VERIFIED; }
void buf_set_verified(struct buffer_head *bh) { bh_set(bh, BH_VERIFIED); }
bool buf_dirty(const struct buffer_head *bh) { return bh_state(bh) & BH_DIRTY; }

void buf_csum_defer(struct buffer_head *bh, buf_csum_fn fn, uint32_t seed)
{
	bh->csum_fn = fn;
	bh->csum_seed = seed;
	/* the owner's contents: a reader's checksum check of them (before
	 * the sum is settled) would fail and is not needed */
	bh_set(bh, BH_CSUM_STALE | BH_VERIFIED);
}

void buf_csum_settle(struct buffer_head *bh)
{
	if (!(bh_state(bh) & BH_CSUM_STALE))
		return;
	unsigned was = atomic_fetch_and_explicit(&bh->state, ~(unsigned)BH_CSUM_STALE, memory_order_acq_rel);
	if (was & BH_CSUM_STALE)
		bh->csum_fn(bh->csum_seed, bh->data, bh->cache->block_size);
}

void buf_csum_cancel(struct buffer_head *bh) { bh_clear(bh, BH_CSUM_STALE); }
bool buf_csum_pending(const struct buffer_head *bh) { return bh_state(bh) & BH_CSUM_STALE; }
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

void buf_cache_set_fua_block(struct buf_cache *c, uint64_t block)
{
	c->fua_block_set = true;
	c->fua_block = block;
}
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
void buf_hold_locked(struct buffer_head *bh)
{
	if (bh->count++ == 0)
		list_del(&bh->lru);
}

/* c->lock held. */
void buf_put_locked(struct buf_cache *c, struct buffer_head *bh)
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
	buf_hold_locked(bh);
	pthread_mutex_unlock(&c->lock);
}

void buf_put(struct buffer_head *bh)
{
	if (!bh)
		return;
	struct buf_cache *c = bh->cache;
	pthread_mutex_lock(&c->lock);
	buf_put_locked(c, bh);
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
	if (bh->cache->block_size >= BUF_DATA_ALIGN)
		blockmem_free(bh->data, bh->cache->block_size);
	else
		free(bh->data);
	free(bh);
}

static struct buffer_head *bh_alloc(struct buf_cache *c)
{
	/* A spare first: its data block is resident (a fresh one faults in,
	 * a page per 4 KiB block). */
	pthread_mutex_lock(&c->lock);
	struct buffer_head *bh = c->spare;
	if (bh) {
		c->spare = bh->hash_next;
		c->nr_spare--;
	}
	pthread_mutex_unlock(&c->lock);
	if (bh) {
		bh->hash_next = NULL;
		bh->waiters = 0;
		atomic_store_explicit(&bh->state, 0, memory_order_relaxed);
		return bh;
	}
	bh = calloc(1, sizeof *bh);
	if (!bh)
		return NULL;
	/* Blocks of at least BUF_DATA_ALIGN come from blockmem (aligned to their
	 * size, without posix_memalign's per-block slack); smaller ones still
	 * need BUF_DATA_ALIGN alignment. */
	if (c->block_size >= BUF_DATA_ALIGN)
		bh->data = blockmem_alloc(c->block_size);
	else if (posix_memalign(&bh->data, BUF_DATA_ALIGN, c->block_size))
		bh->data = NULL;
	if (!bh->data) {
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
struct buffer_head *buf_shrink_locked(struct buf_cache *c, size_t max)
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

void buf_chain_free(struct buffer_head *bh)
{
	while (bh) {
		struct buffer_head *next = bh->hash_next;
		struct buf_cache *c = bh->cache;
		/* Kept as a spare while there are few: a cache whose pinned
		 * (journal) buffers swing around its bound frees and allocates
		 * the same amount over and over (data=journal: a transaction's
		 * worth per commit, issue 8), and every fresh data block faults
		 * in again. */
		pthread_mutex_lock(&c->lock);
		bool keep = c->nr_spare < c->max_buffers / 4;
		if (keep) {
			bh->hash_next = c->spare;
			c->spare = bh;
			c->nr_spare++;
		}
		pthread_mutex_unlock(&c->lock);
		if (!keep)
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
		buf_hold_locked(bh);
		pthread_mutex_unlock(&c->lock);
		return bh;
	}
	if (c->nr_cached >= c->max_buffers) {
		/* Reuse the LRU victim; free one more if we are above the bound
		 * (it was exceeded while nothing was reclaimable). */
		struct buffer_head *extra = c->nr_cached > c->max_buffers ? buf_shrink_locked(c, 1) : NULL;
		bh = reclaim_one(c);
		if (bh) {
			bh_install(c, bh, block);
			pthread_mutex_unlock(&c->lock);
			buf_chain_free(extra);
			return bh;
		}
		pthread_mutex_unlock(&c->lock);
		buf_chain_free(extra);
		if (!may_exceed)
			return NULL;
	} else {
		pthread_mutex_unlock(&c->lock);
	}
	struct buffer_head *nbh = bh_alloc(c);
	pthread_mutex_lock(&c->lock);
	bh = hash_find(c, block);
	if (bh) { /* someone else created it meanwhile */
		buf_hold_locked(bh);
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
		if (c->nr_dirty)
			buf_wb_wake_locked(c, true);
	}
	bh_install(c, nbh, block);
	pthread_mutex_unlock(&c->lock);
	return nbh;
}

struct buffer_head *buf_get(struct buf_cache *c, uint64_t block, int *err)
{
	return getblk(c, block, err, true);
}

bool buf_cached(struct buf_cache *c, uint64_t block)
{
	if (block >= c->nr_blocks)
		return false;
	pthread_mutex_lock(&c->lock);
	struct buffer_head *bh = hash_find(c, block);
	bool yes = bh && buf_uptodate(bh);
	pthread_mutex_unlock(&c->lock);
	return yes;
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
		if (c->bg_dirty_buffers && c->nr_dirty > c->bg_dirty_buffers)
			buf_wb_wake_locked(c, false);
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
	buf_put_locked(c, bh);
	pthread_mutex_unlock(&c->lock);
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
	buf_chain_free(chain);
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
	out->run_writes = STAT_GET(c, run_writes);
	out->run_blocks = STAT_GET(c, run_blocks);
	pthread_mutex_lock(&c->lock);
	out->cached = c->nr_cached;
	out->dirty = c->nr_dirty;
	out->max_cached = c->max_buffers;
	pthread_mutex_unlock(&c->lock);
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
	int rc = buf_wb_start(c);
	if (rc < 0) {
		pthread_cond_destroy(&c->wb_cond);
		pthread_cond_destroy(&c->idle);
		pthread_mutex_destroy(&c->lock);
		free(c->hash);
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void buf_cache_destroy(struct buf_cache *c)
{
	if (!c)
		return;
	buf_wb_stop(c);
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
	while (c->spare) {
		struct buffer_head *bh = c->spare;
		c->spare = bh->hash_next;
		bh_free(bh);
	}
	buf_run_bufs_drop(c);
	free(c->hash);
	pthread_cond_destroy(&c->wb_cond);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c);
	blockmem_trim(); /* its buffers' free blocks: the RSS falls with the cache */
}
