/* Submission (docs/block-layer.md, "bios" and "splitting"): checking a bio,
 * splitting one larger than max_sectors_kb, queueing it (merge into a queued
 * request, or allocate a request, plug, hand it to the elevator, unplug on
 * the thresholds), and waiting for groups of bios. Locking: see
 * blk_internal.h.
 */
#include "util/stalltrace.h"
#include "blk.h"
#include "blk_internal.h"
#include "../util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

/* Non-rotational devices that queue commands need no plugging to merge
 * (patch 007); the 2.6.29 rule never plugged any non-rotational device. */
static bool queue_should_plug(const struct blk_queue *q)
{
	if (!q->geo.rotational) {
		if (!q->t.ssd_plug)
			return false;
		return q->geo.queue_depth <= 1;
	}
	return true;
}

/* The kernel's __make_request for one bio that fits max_sectors. */
static void make_request(struct blk_queue *q, struct bio *bio)
{
	struct blk_ioc *ioc = blk_ioc_current();
	pthread_mutex_lock(&q->lock);
	while (q->elv_switching)
		pthread_cond_wait(&q->switch_cond, &q->lock);
	q->st.bios++;
	blk_elv_sync_state(q);
	bool unplug = bio->rw & BLK_REQ_UNPLUG;
	if (blk_bio_try_merge(q, bio, ioc))
		goto out;

	/* Writeback throttling: a background write waits here while the
	 * queue holds its limit of them (blk_wbt.c). */
	bool wbt_tracked = blk_wbt_throttle_locked(q, bio->rw);
	struct request *rq = blk_rq_alloc_wait(q, bio->rw, ioc);
	blk_elv_sync_state(q);
	rq->sector = bio->sector;
	rq->nr_sectors = bio->size >> DEV_SECTOR_SHIFT;
	rq->bio = rq->biotail = bio;
	rq->wbt_tracked = wbt_tracked;
	/* A request into an empty elevator plugs the queue (2.6.30: unless
	 * the device is non-rotational and queuing). The dispatcher is woken
	 * to arm the plug timer only if the plug outlives this call: an
	 * UNPLUG bio (WRITE_SYNC) unplugs below, under the same lock, and
	 * waking it for that cost a context switch per sync bio. */
	if (!q->queued && !q->ord_len && queue_should_plug(q))
		blk_queue_plug_locked(q, q->elv.now_ns, !unplug);
	rq->insert_ns = q->elv.now_ns;
	rq->in_elv = true;
	q->elv.ops->add_request(&q->elv, rq);
	q->queued++;
	if (blk_barrier_bio(q, bio->rw))
		blk_barrier_queue_locked(q, rq); /* drains the elevator ahead of it */
	else if (rq->nr_sectors)
		blk_rq_hash_add(q, rq);
	/* Enough pending behind the plug: unplug (unplug_thresh). */
	if (q->plugged) {
		int nrq = q->pool[0].count + q->pool[1].count - (int)q->in_flight;
		if (nrq >= (int)q->t.unplug_thresh)
			blk_queue_unplug_locked(q, &q->st.unplugs_thresh);
	}
	/* Elevators may want to run at once, plugged or not (cfq: a request
	 * for the queue it idles on). */
	if (q->elv.kick_ns && q->elv.kick_ns <= q->elv.now_ns) {
		q->elv.kick_ns = 0;
		blk_queue_unplug_locked(q, NULL);
	}
out:
	if (unplug)
		blk_queue_unplug_locked(q, &q->st.unplugs_flag);
	else if (!queue_should_plug(q))
		blk_queue_unplug_locked(q, NULL);
	else
		blk_timer_kick_locked(q); /* the request may wait for a timer */
	pthread_mutex_unlock(&q->lock);
}

int blk_submit_bio(struct blk_queue *q, struct bio *bio)
{
	if (!bio || !bio->end_io)
		return err_set(-EINVAL, "bio without end_io");
	if (bio->size % DEV_SECTOR_SIZE)
		return err_set(-EINVAL, "bio size %" PRIu32 " is not a multiple of 512", bio->size);
	if (!bio->size && !(bio->rw & BLK_REQ_FLUSH))
		return err_set(-EINVAL, "empty bio without FLUSH");
	if (bio->size && !bio->data)
		return err_set(-EINVAL, "bio without data");
	uint64_t ns = bio->size >> DEV_SECTOR_SHIFT;
	uint64_t dev_sectors = q->geo.size_bytes >> DEV_SECTOR_SHIFT;
	if (bio->sector > dev_sectors || ns > dev_sectors - bio->sector)
		return err_set(-EIO, "bio at sector %" PRIu64 " +%" PRIu64 " is past the end of the device (%" PRIu64 " sectors)",
			       bio->sector, ns, dev_sectors);
	if (__atomic_load_n(&q->dying, __ATOMIC_ACQUIRE))
		return err_set(-ENODEV, "queue is being destroyed");
	bio->bi_next = NULL;
	bio->bi_parent = NULL;
	bio->bi_error = 0;
	bio->bi_submit_ns = clock_now_ns();

	uint64_t maxs = __atomic_load_n(&q->t.max_sectors_kb, __ATOMIC_RELAXED) * 2;
	if (ns <= maxs) {
		make_request(q, bio);
		return 0;
	}
	/* Split into children of at most max_sectors each; the parent completes
	 * when the last child does. Flags apply to every piece except FLUSH
	 * (only the first needs the cache flushed before it) and FUA (only the
	 * last... every piece must be durable, so FUA stays on all). */
	uint64_t pieces = (ns + maxs - 1) / maxs;
	struct bio **kids = calloc(pieces, sizeof *kids);
	if (!kids)
		return -ENOMEM;
	for (uint64_t i = 0; i < pieces; i++) {
		kids[i] = calloc(1, sizeof **kids);
		if (!kids[i]) {
			for (uint64_t j = 0; j < i; j++)
				free(kids[j]);
			free(kids);
			return -ENOMEM;
		}
	}
	bio->bi_remaining = (int)pieces;
	for (uint64_t i = 0; i < pieces; i++) {
		struct bio *k = kids[i];
		uint64_t off = i * maxs;
		uint64_t len = ns - off < maxs ? ns - off : maxs;
		k->sector = bio->sector + off;
		k->size = (uint32_t)(len << DEV_SECTOR_SHIFT);
		k->data = (char *)bio->data + (off << DEV_SECTOR_SHIFT);
		k->rw = bio->rw;
		if (i)
			k->rw &= ~BLK_REQ_FLUSH;
		/* Only the last piece unplugs: the pieces should merge/queue
		 * together first. */
		if (i + 1 < pieces)
			k->rw &= ~BLK_REQ_UNPLUG;
		k->end_io = bio->end_io; /* not used: bio_complete goes to the parent */
		k->bi_parent = bio;
		k->bi_submit_ns = bio->bi_submit_ns;
	}
	pthread_mutex_lock(&q->lock);
	q->st.splits++;
	pthread_mutex_unlock(&q->lock);
	for (uint64_t i = 0; i < pieces; i++)
		make_request(q, kids[i]);
	free(kids);
	return 0;
}

/* ------------------------------------------------- waiting helpers */

void blk_batch_init(struct blk_batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->pending = 0;
	b->err = 0;
	b->bio_done = NULL;
	b->bio_done_ctx = NULL;
}

void blk_batch_destroy(struct blk_batch *b)
{
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

static void batch_done(struct blk_batch *b, int err)
{
	pthread_mutex_lock(&b->lock);
	if (err && !b->err)
		b->err = err;
	if (--b->pending == 0)
		pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void batch_end_io(struct bio *bio, int err)
{
	struct blk_batch *b = bio->private;
	if (b->bio_done)
		b->bio_done(bio, err, b->bio_done_ctx);
	batch_done(b, err);
}

int blk_batch_submit(struct blk_queue *q, struct blk_batch *b, struct bio *bio)
{
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	bio->end_io = batch_end_io;
	bio->private = b;
	int rc = blk_submit_bio(q, bio);
	if (rc < 0) {
		if (b->bio_done)
			b->bio_done(bio, rc, b->bio_done_ctx);
		batch_done(b, rc);
	}
	return rc;
}

int blk_batch_wait(struct blk_queue *q, struct blk_batch *b)
{
	pthread_mutex_lock(&b->lock);
	bool need = b->pending > 0;
	pthread_mutex_unlock(&b->lock);
	/* A waiter unplugs: whatever it waits for must reach the device now. */
	if (need)
		blk_queue_unplug(q);
	uint64_t w0 = stalltrace_t0();
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
	stalltrace_wait("blk batch wait", w0, 0);
	int err = b->err;
	pthread_mutex_unlock(&b->lock);
	return err;
}

int blk_submit_bio_wait(struct blk_queue *q, struct bio *bio)
{
	struct blk_batch b;
	blk_batch_init(&b);
	int rc = blk_batch_submit(q, &b, bio);
	int err = blk_batch_wait(q, &b);
	blk_batch_destroy(&b);
	return rc < 0 ? rc : err;
}

int blk_rw(struct blk_queue *q, unsigned rw, uint64_t off, void *buf, uint32_t len)
{
	if (off % DEV_SECTOR_SIZE)
		return err_set(-EINVAL, "offset %" PRIu64 " is not a multiple of 512", off);
	struct bio bio = { .sector = off >> DEV_SECTOR_SHIFT, .size = len, .data = buf, .rw = rw };
	return blk_submit_bio_wait(q, &bio);
}
