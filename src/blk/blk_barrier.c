/* Barriers as Linux 2.6.30 ran them (docs/block-layer.md, "barriers"):
 * under barrier_mode=drain or drain_fua a write or empty bio carrying FLUSH
 * or FUA is an ordered barrier.
 *
 *   1. On arrival the elevator is drained: every request queued before the
 *      barrier leaves it, in the elevator's forced order, for q->ord_list,
 *      and the barrier goes last (2.6.30 elv_drain_elevator, then the
 *      barrier inserted at the back of the dispatch queue). Requests that
 *      arrive later stay in the elevator, which is not asked while a
 *      barrier is pending.
 *   2. The listed requests go to the device as usual (up to its depth).
 *   3. At the head of the list the barrier waits until nothing is in
 *      flight (QUEUE_ORDSEQ_DRAIN), then runs its steps one at a time:
 *      pre-flush, the write, then a post-flush (drain, 2.6.30's
 *      QUEUE_ORDERED_DRAIN_FLUSH, libata's default with FUA off) or FUA on
 *      the write (drain_fua, QUEUE_ORDERED_DRAIN_FUA). A device without a
 *      write cache gets only the drain and the write (QUEUE_ORDERED_DRAIN);
 *      an empty barrier is a drain and one flush.
 *   4. The barrier's bios complete with the first error of any step, and
 *      the elevator runs again.
 *
 * barrier_mode=modern (Linux 2.6.37+, nostall's default) bypasses all of
 * this: FLUSH/FUA go to the device as flags of one command, nothing drains.
 *
 * Locking: see blk_internal.h. A step completes on a device thread, takes
 * q->lock, records the next step and wakes the dispatcher, which issues it
 * (never from inside a completion: devices may complete inside submit).
 */
#include "blk.h"
#include "blk_internal.h"

#include <string.h>

enum ord_stage {
	ORD_NONE = 0,
	ORD_PREFLUSH,
	ORD_BAR,
	ORD_POSTFLUSH,
	ORD_DONE,
};

bool blk_barrier_bio(const struct blk_queue *q, unsigned rw)
{
	return q->barrier_mode != BLK_BARRIER_MODERN && (rw & (BLK_REQ_FLUSH | BLK_REQ_FUA));
}

/* The step after `stage` for barrier rq on this queue and device. */
static int ord_next(const struct blk_queue *q, const struct request *rq, int stage)
{
	bool cache = q->geo.has_write_cache;
	bool data = rq->nr_sectors != 0;
	switch (stage) {
	case ORD_NONE:
		if (cache || !data)
			return ORD_PREFLUSH;
		/* fall through */
	case ORD_PREFLUSH:
		if (data)
			return ORD_BAR;
		return ORD_DONE;
	case ORD_BAR:
		if (cache && q->barrier_mode == BLK_BARRIER_DRAIN)
			return ORD_POSTFLUSH;
		return ORD_DONE;
	default:
		return ORD_DONE;
	}
}

void blk_barrier_queue_locked(struct blk_queue *q, struct request *rq)
{
	rq->barrier = true;
	rq->ord_stage = ORD_NONE;
	q->st.barriers++;
	/* Everything ahead of it: at the device, already listed, or queued. */
	q->st.barrier_drained += q->in_flight + q->ord_len + (q->queued - 1);
	struct request *r;
	while ((r = q->elv.ops->dispatch(&q->elv, true)) != NULL) {
		r->in_elv = false;
		blk_rq_hash_del(r);
		q->queued--;
		if (r == rq)
			continue;
		list_add_tail(&q->ord_list, &r->q_node);
		q->ord_len++;
	}
	list_add_tail(&q->ord_list, &rq->q_node);
	q->ord_len++;
	q->ord_barriers++;
}

bool blk_barrier_dispatch_locked(struct blk_queue *q, struct list_node *out, unsigned depth, unsigned *n)
{
	if (!q->ord_barriers)
		return false;
	if (q->ord_rq) {
		/* A sequence runs: only its own steps go to the device. */
		if (q->ord_step_ready) {
			q->ord_step_ready = false;
			list_add_tail(out, &q->ord_rq->q_node);
			(*n)++;
		}
		return true;
	}
	if (q->plugged)
		return true;
	while (q->in_flight < depth) {
		struct list_node *first = list_first(&q->ord_list);
		if (!first)
			break;
		struct request *rq = list_entry(first, struct request, q_node);
		if (rq->barrier && q->in_flight)
			break; /* the drain: wait for what is at the device */
		list_del(&rq->q_node);
		q->ord_len--;
		blk_rq_account_dispatch(q, rq);
		if (rq->barrier) {
			hist_add(&q->st.barrier_wait, q->elv.now_ns - rq->insert_ns);
			rq->ord_stage = ord_next(q, rq, ORD_NONE);
			q->ord_rq = rq;
			q->ord_err = 0;
			list_add_tail(out, &rq->q_node);
			(*n)++;
			break;
		}
		list_add_tail(out, &rq->q_node);
		(*n)++;
	}
	return true;
}

/* A barrier step completed (device thread). */
static void ord_step_done(struct dev_io *io, int err)
{
	struct request *rq = io->priv;
	struct blk_queue *q = rq->queue;
	pthread_mutex_lock(&q->lock);
	if (err && !q->ord_err)
		q->ord_err = err;
	int next = q->ord_err ? ORD_DONE : ord_next(q, rq, rq->ord_stage);
	if (next != ORD_DONE) {
		rq->ord_stage = next;
		q->ord_step_ready = true;
		blk_queue_kick_locked(q);
		pthread_mutex_unlock(&q->lock);
		return;
	}
	err = q->ord_err;
	q->ord_rq = NULL;
	q->ord_barriers--;
	pthread_mutex_unlock(&q->lock);
	/* blk_rq_done counts it complete, ends its bios and wakes the
	 * dispatcher, which goes back to the list or the elevator. */
	rq->io.priv = rq;
	blk_rq_done(&rq->io, err);
}

void blk_barrier_submit(struct blk_queue *q, struct request *rq)
{
	int rc;
	if (!rq->barrier) {
		rc = blk_rq_prepare_io(rq);
		if (!rc)
			rc = dev_submit(q->dev, &rq->io);
		if (rc < 0)
			blk_rq_done(&rq->io, rc);
		return;
	}
	/* ord_stage is only written by the previous step's completion, which
	 * happened before this step was listed. */
	struct dev_io *io = &rq->io;
	if (rq->ord_stage == ORD_BAR) {
		rc = blk_rq_prepare_io(rq);
		io->flags &= ~(unsigned)(DEV_IO_PREFLUSH | DEV_IO_FUA);
		if (q->barrier_mode == BLK_BARRIER_DRAIN_FUA && q->geo.has_write_cache)
			io->flags |= DEV_IO_FUA;
	} else {
		memset(io, 0, sizeof *io);
		io->op = DEV_OP_FLUSH;
		io->flags = rq->alone ? DEV_IO_ALONE : 0;
		rc = 0;
	}
	io->priv = rq;
	io->done = ord_step_done;
	if (!rc)
		rc = dev_submit(q->dev, io);
	if (rc < 0)
		ord_step_done(io, rc);
}
