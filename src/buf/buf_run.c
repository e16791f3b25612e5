/* Runs: consecutive locked buffers written as one bio (buf_write_run,
 * buf.h). The journal's checkpoint writes a transaction's buffers home
 * this way (issue 8): one bio per BUF_RUN_MAX blocks instead of one per
 * block, copied once into a kept run buffer instead of the block layer's
 * freshly allocated bounce buffer of each merged request.
 *
 * Locking as buf_io.c (buf_int.h): c->lock for references, in-flight
 * count and the kept run buffers; a buffer's lock is taken by the caller
 * and released by the completion.
 */
#include "buf/buf_int.h"

#include "util/blockmem.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct buf_run {
	struct bio bio;
	struct buf_cache *c;
	void *buf; /* BUF_RUN_MAX blocks; back to c->run_bufs at the end */
	int n;
	struct buffer_head *bh[];
};

static size_t run_buf_bytes(const struct buf_cache *c)
{
	return (size_t)BUF_RUN_MAX * c->block_size;
}

static bool in_run_arena(const struct buf_cache *c, const void *p)
{
	return c->run_arena && (const char *)p >= c->run_arena &&
	       (const char *)p < c->run_arena + BUF_RUN_BUFS * run_buf_bytes(c);
}

void buf_run_bufs_drop(struct buf_cache *c)
{
	while (c->nr_run_bufs) {
		void *p = c->run_bufs[--c->nr_run_bufs];
		if (!in_run_arena(c, p))
			free(p);
	}
	free(c->run_arena);
	c->run_arena = NULL;
}

/* A kept run buffer or a new one (NULL: no memory). */
static void *run_buf_get(struct buf_cache *c)
{
	void *p = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->nr_run_bufs) {
		p = c->run_bufs[--c->nr_run_bufs];
	} else if (!c->run_arena) {
		/* The first run: the kept buffers become slices of one arena in
		 * huge pages (a checkpoint writes every journaled block home
		 * from them; blockmem.h says why huge pages). */
		c->run_arena = blockmem_huge_alloc(BUF_RUN_BUFS * run_buf_bytes(c));
		for (unsigned i = 1; c->run_arena && i < BUF_RUN_BUFS; i++)
			c->run_bufs[c->nr_run_bufs++] = c->run_arena + i * run_buf_bytes(c);
		p = c->run_arena;
	}
	pthread_mutex_unlock(&c->lock);
	if (!p && posix_memalign(&p, BUF_DATA_ALIGN, run_buf_bytes(c)))
		p = NULL;
	return p;
}

/* The end of a run's I/O (completed, or refused with err): the run buffer
 * is kept (or freed), every buffer ends as buf_end_io ends a write, then
 * the references and the in-flight count go in one c->lock section. The
 * run buffer is kept before inflight drops: buf_cache_destroy frees the
 * kept ones once nothing is in flight. */
static void run_finish(struct buf_run *r, int err)
{
	struct buf_cache *c = r->c;
	/* The run buffer goes back first: a checkpoint that waits for these
	 * buffers submits its next batch as soon as they are unlocked, and
	 * should find it kept instead of allocating (and faulting in) a new
	 * one. (inflight still counts this run: buf_cache_destroy cannot free
	 * the kept buffers under us.) */
	pthread_mutex_lock(&c->lock);
	if (c->nr_run_bufs < BUF_RUN_BUFS) {
		c->run_bufs[c->nr_run_bufs++] = r->buf;
		r->buf = NULL;
	} else if (in_run_arena(c, r->buf)) {
		/* an arena slice is always kept: it takes the place of a kept
		 * buffer of its own (there is one: the other slices are fewer
		 * than BUF_RUN_BUFS), which is freed instead */
		for (unsigned i = 0; i < c->nr_run_bufs; i++) {
			if (!in_run_arena(c, c->run_bufs[i])) {
				void *own = c->run_bufs[i];
				c->run_bufs[i] = r->buf;
				r->buf = own;
				break;
			}
		}
	}
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < r->n; i++) {
		struct buffer_head *bh = r->bh[i];
		if (err) {
			bh_set(bh, BH_WRITE_EIO);
			bh_clear(bh, BH_UPTODATE);
			STAT_INC(c, write_errors);
		}
		buf_unlock(bh);
	}
	if (err) {
		int zero = 0;
		atomic_compare_exchange_strong(&c->write_err, &zero, err < 0 ? err : -EIO);
	}
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < r->n; i++)
		buf_put_locked(c, r->bh[i]);
	c->inflight -= (uint64_t)r->n;
	if (c->inflight == 0)
		pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->lock);
	free(r->buf);
	free(r);
}

static void run_end_io(struct bio *bio, int err)
{
	run_finish((struct buf_run *)bio->private, err);
}

/* One bio for bhs[0..n), n <= BUF_RUN_MAX, already checked. */
static int run_submit(struct buf_cache *c, int n, struct buffer_head **bhs, unsigned rw)
{
	struct buf_run *r = calloc(1, sizeof *r + (size_t)n * sizeof r->bh[0]);
	void *buf = r ? run_buf_get(c) : NULL;
	if (!buf) {
		/* No memory for the copy: one bio per buffer still works. */
		free(r);
		int rc = 0;
		for (int i = 0; i < n; i++) {
			int s = buf_submit(bhs[i], rw);
			if (s < 0 && !rc)
				rc = s;
		}
		return rc;
	}
	r->c = c;
	r->buf = buf;
	r->n = n;
	for (int i = 0; i < n; i++) {
		r->bh[i] = bhs[i];
		bh_set(bhs[i], BH_REQ);
		buf_csum_settle(bhs[i]); /* locked: its writers are excluded */
		memcpy((char *)buf + (size_t)i * c->block_size, bhs[i]->data, c->block_size);
	}
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < n; i++)
		buf_hold_locked(bhs[i]);
	c->inflight += (uint64_t)n;
	pthread_mutex_unlock(&c->lock);
	STAT_INC(c, writes);
	STAT_INC(c, run_writes);
	atomic_fetch_add_explicit(&c->st.run_blocks, (uint64_t)n, memory_order_relaxed);
	r->bio.sector = bhs[0]->blocknr * c->sectors_per_block;
	r->bio.size = (uint32_t)n * c->block_size;
	r->bio.data = buf;
	r->bio.rw = rw;
	r->bio.end_io = run_end_io;
	r->bio.private = r;
	int rc = blk_submit_bio(c->q, &r->bio);
	if (rc < 0)
		run_finish(r, rc);
	return rc;
}

int buf_write_run(int n, struct buffer_head **bhs, unsigned rw)
{
	if (n <= 0)
		return 0;
	struct buf_cache *c = bhs[0]->cache;
	for (int i = 0; i < n; i++) {
		if (bhs[i]->cache != c || bhs[i]->blocknr != bhs[0]->blocknr + (uint64_t)i ||
		    !(bh_state(bhs[i]) & BH_LOCK))
			return err_set(-EINVAL, "buf_write_run: block %" PRIu64 " (%d of %d) is not the next locked block",
				       bhs[i]->blocknr, i, n);
	}
	rw &= ~(unsigned)BLK_REQ_SWRITE;
	if (!(rw & BLK_RW_WRITE))
		return err_set(-EINVAL, "buf_write_run: not a write");
	int rc = 0;
	for (int i = 0; i < n; i += (int)BUF_RUN_MAX) {
		int k = n - i < (int)BUF_RUN_MAX ? n - i : (int)BUF_RUN_MAX;
		unsigned krw = rw;
		if (c->fua_block_set && c->fua_block >= bhs[i]->blocknr &&
		    c->fua_block < bhs[i]->blocknr + (uint64_t)k)
			krw |= BLK_REQ_FUA; /* buf_cache_set_fua_block */
		int s = run_submit(c, k, bhs + i, krw);
		if (s < 0 && !rc)
			rc = s;
	}
	return rc;
}
