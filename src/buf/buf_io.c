/* Buffer cache I/O (docs/buffer-cache.md): the buffer lock and
 * wait_on_buffer (which unplug before sleeping), submit_bh and its
 * completion, ll_rw_block, sync_dirty_buffer, fsync_buffers_list, and the
 * cache-wide sync. Locking rules: buf_int.h.
 */
#include "util/stalltrace.h"
#include "buf/buf_int.h"

#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
	uint64_t w0 = stalltrace_t0();
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
	stalltrace_wait(take ? "buf lock" : "buf wait unlocked", w0, buf_blocknr(bh));
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


/* ------------------------------------------------------------ submit */

/* The end of a buffer's I/O (completed or refused): unlock it (waking
 * waiters), then drop the I/O's reference and in-flight count. */
static void io_finish(struct buf_cache *c, struct buffer_head *bh)
{
	buf_unlock(bh);
	pthread_mutex_lock(&c->lock);
	buf_put_locked(c, bh);
	if (--c->inflight == 0)
		pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->lock);
}

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
	io_finish(c, bh);
}

int buf_submit(struct buffer_head *bh, unsigned rw)
{
	struct buf_cache *c = bh->cache;
	if (!(bh_state(bh) & BH_LOCK))
		return err_set(-EINVAL, "buf_submit: block %" PRIu64 " is not locked", bh->blocknr);
	rw &= ~(unsigned)BLK_REQ_SWRITE;
	bool write = rw & BLK_RW_WRITE;
	if (write && c->fua_block_set && bh->blocknr == c->fua_block)
		rw |= BLK_REQ_FUA;
	bh_set(bh, BH_REQ);
	/* A read replaces the contents: whatever was verified of them is
	 * void (buf_verified). */
	if (!write)
		bh_clear(bh, BH_VERIFIED);
	else
		buf_csum_settle(bh); /* the buffer lock excludes its writers */
	pthread_mutex_lock(&c->lock);
	buf_hold_locked(bh);
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
		io_finish(c, bh);
	}
	return rc;
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

int buf_cmp_block(const void *a, const void *b)
{
	const struct buffer_head *x = *(struct buffer_head *const *)a, *y = *(struct buffer_head *const *)b;
	return x->blocknr < y->blocknr ? -1 : x->blocknr > y->blocknr;
}

size_t buf_collect(struct buf_cache *c, struct buffer_head ***out, bool all, uint64_t expired_before,
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
		buf_hold_locked(bh);
		v[n++] = bh;
		remaining--;
	}
	if (locked_too) {
		for (size_t s = 0; s <= c->hash_mask; s++)
			for (struct buffer_head *bh = c->hash[s]; bh; bh = bh->hash_next)
				if ((bh_state(bh) & (BH_LOCK | BH_DIRTY)) == BH_LOCK) {
					buf_hold_locked(bh);
					v[n++] = bh;
				}
	}
	pthread_mutex_unlock(&c->lock);
	*out = v;
	return n;
}

int buf_cache_writeout(struct buf_cache *c)
{
	struct buffer_head **v;
	size_t n = buf_collect(c, &v, true, 0, 0, true);
	if (n > 1)
		qsort(v, n, sizeof *v, buf_cmp_block);
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
	return err;
}

int buf_cache_sync(struct buf_cache *c)
{
	int err = buf_cache_writeout(c);
	struct bio flush = { .sector = 0, .size = 0, .data = NULL, .rw = BLK_WRITE | BLK_REQ_FLUSH };
	int frc = blk_submit_bio_wait(c->q, &flush);
	if (frc < 0 && !err)
		err = frc;
	return err;
}

