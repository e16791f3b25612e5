/* Dispatching and completion (docs/block-layer.md, "plugging" and
 * "dispatch"): the plug, running the queue (elevator -> device), the
 * dispatcher thread with its timers, building the device command and
 * completing requests and their bios. Locking: see blk_internal.h; the queue
 * lock is dropped around dev_submit() and bio end_io().
 */
#include "util/stalltrace.h"
#include "blk.h"
#include "blk_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void queue_run_locked(struct blk_queue *q);

/* ----------------------------------------------------------- plugging */

void blk_queue_plug_locked(struct blk_queue *q, uint64_t now, bool wake)
{
	if (q->plugged)
		return;
	q->plugged = true;
	q->plug_deadline_ns = now + q->t.unplug_delay_ms * NS_PER_MS;
	q->st.plugs++;
	/* The dispatcher arms the plug timer: woken for it only if asleep
	 * without a deadline or with one past the plug's. While the queue is
	 * in use it sleeps at most one unplug delay (its tick, below), never
	 * past the deadline of a plug made meanwhile: an fsync's commit that
	 * plugs and unplugs itself then wakes no other thread. */
	if (wake && q->disp_asleep && (!q->disp_wake_ns || q->disp_wake_ns > q->plug_deadline_ns))
		pthread_cond_signal(&q->kick);
}

/* Remove the plug and run the queue in the caller's context, as the
 * kernel's __generic_unplug_device calls the driver directly: a WRITE_SYNC
 * reaches the device before its submitter queues the next bio.
 * counter: which statistic to bump, if any. May drop and retake q->lock. */
void blk_queue_unplug_locked(struct blk_queue *q, uint64_t *counter)
{
	if (q->plugged) {
		q->plugged = false;
		if (counter)
			(*counter)++;
	}
	queue_run_locked(q);
}

void blk_queue_unplug(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	blk_queue_unplug_locked(q, &q->st.unplugs_wait);
	pthread_mutex_unlock(&q->lock);
}

bool blk_queue_plugged(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	bool p = q->plugged;
	pthread_mutex_unlock(&q->lock);
	return p;
}

/* ------------------------------------------------------- completion */

static void bio_complete(struct bio *bio, int err)
{
	struct bio *parent = bio->bi_parent;
	if (!parent) {
		bio->end_io(bio, err);
		return;
	}
	/* A split child: record the first error on the parent and complete
	 * the parent with the last child. */
	if (err)
		__atomic_compare_exchange_n(&parent->bi_error, &(int){ 0 }, err, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	free(bio);
	if (__atomic_sub_fetch(&parent->bi_remaining, 1, __ATOMIC_ACQ_REL) == 0)
		parent->end_io(parent, __atomic_load_n(&parent->bi_error, __ATOMIC_ACQUIRE));
}

void blk_rq_done(struct dev_io *io, int err)
{
	struct request *rq = io->priv;
	struct blk_queue *q = rq->queue;
	bool sync = rq_is_sync(rq);
	bool write = rq_is_write(rq);
	/* Reads through a bounce buffer: copy out before the bios complete. */
	if (rq->buf && !write && !err) {
		size_t off = 0;
		for (struct bio *b = rq->bio; b; b = b->bi_next) {
			memcpy(b->data, (char *)rq->buf + off, b->size);
			off += b->size;
		}
	}
	uint64_t now = clock_now_ns();
	pthread_mutex_lock(&q->lock);
	q->in_flight--;
	q->elv.in_driver[sync]--;
	blk_elv_sync_state(q);
	uint64_t kick = q->elv.kick_ns;
	if (q->elv.ops->completed)
		q->elv.ops->completed(&q->elv, rq);
	q->st.completed++;
	if (err)
		q->st.errors++;
	q->st.bytes[write] += (uint64_t)rq->nr_sectors << DEV_SECTOR_SHIFT;
	hist_add(&q->st.service_lat[sync], now - rq->dispatch_ns);
	blk_wbt_done_locked(q, rq, now);
	stalltrace_span("blk rq in device (flags|sect<<32)", rq->dispatch_ns, now, 5 * STALLTRACE_MIN_NS,
			rq->flags | (uint64_t)rq->nr_sectors << 32);
	struct bio *bios = rq->bio;
	for (struct bio *b = bios; b; b = b->bi_next)
		hist_add(&q->st.total_lat[sync], now - b->bi_submit_ns);
	rq->bio = NULL;
	blk_rq_free(q, rq);
	/* The dispatcher is woken only when this completion gives it work:
	 * requests waiting in the elevator for a device slot (or for this
	 * completion, as CFQ's do), a barrier sequence, a queue being torn
	 * down or switched. Waking it on every completion cost a cross-CPU
	 * wake-up and a lock hand-off per I/O on an idle queue (two per
	 * fsync) and ran the queue for nothing; so did waking it for an
	 * elevator timer the completion armed (CFQ's idle window after a
	 * sync request) while nothing is queued (blk_timer_kick_locked). */
	if (q->queued || q->ord_barriers || q->dying || q->draining || q->elv_switching)
		blk_queue_kick_locked(q);
	else if (q->elv.kick_ns != kick)
		blk_timer_kick_locked(q);
	pthread_mutex_unlock(&q->lock);
	while (bios) {
		struct bio *next = bios->bi_next;
		bios->bi_next = NULL;
		bio_complete(bios, err);
		bios = next;
	}
}

/* Build the device command for a dispatched request. Requests whose bios
 * are not contiguous in memory go through a bounce buffer. */
int blk_rq_prepare_io(struct request *rq)
{
	struct dev_io *io = &rq->io;
	memset(io, 0, sizeof *io);
	io->priv = rq;
	io->done = blk_rq_done;
	if (!rq->nr_sectors) {
		io->op = DEV_OP_FLUSH;
		return 0;
	}
	io->op = rq_is_write(rq) ? DEV_OP_WRITE : DEV_OP_READ;
	if (rq->flags & BLK_REQ_FLUSH)
		io->flags |= DEV_IO_PREFLUSH;
	if (rq->flags & BLK_REQ_FUA)
		io->flags |= DEV_IO_FUA;
	if (rq->alone)
		io->flags |= DEV_IO_ALONE;
	if (rq->more)
		io->flags |= DEV_IO_MORE;
	io->sector = rq->sector;
	io->nr_sectors = rq->nr_sectors;
	bool contiguous = true;
	for (struct bio *b = rq->bio; b->bi_next; b = b->bi_next)
		if ((char *)b->data + b->size != b->bi_next->data)
			contiguous = false;
	if (contiguous) {
		io->buf = rq->bio->data;
		return 0;
	}
	/* 4 KiB aligned, so an O_DIRECT device does not copy it once more
	 * through a bounce buffer. */
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, (size_t)rq->nr_sectors << DEV_SECTOR_SHIFT))
		return -ENOMEM;
	rq->buf = buf;
	if (rq_is_write(rq)) {
		size_t off = 0;
		for (struct bio *b = rq->bio; b; b = b->bi_next) {
			memcpy((char *)rq->buf + off, b->data, b->size);
			off += b->size;
		}
	}
	io->buf = rq->buf;
	return 0;
}

/* ------------------------------------------------------- dispatcher */

/* A request leaves blk for the device: counters and the queue latency. */
void blk_rq_account_dispatch(struct blk_queue *q, struct request *rq)
{
	bool sync = rq_is_sync(rq);
	q->in_flight++;
	q->elv.in_driver[sync]++;
	rq->dispatch_ns = q->elv.now_ns;
	blk_wbt_issue_locked(q, rq);
	q->st.dispatched++;
	q->st.device_requests[sync]++;
	q->st.class_requests[blk_ioc_class(rq->ioc) & 3]++;
	hist_add(&q->st.queue_lat[sync], rq->dispatch_ns - rq->insert_ns);
	stalltrace_span(sync ? "blk SYNC rq queued (in_flight)" : "blk async rq queued (in_flight)", rq->insert_ns,
			rq->dispatch_ns, sync ? STALLTRACE_MIN_NS : 20 * STALLTRACE_MIN_NS, q->in_flight);
}

/* Move requests from the elevator to the device while the queue is not
 * plugged or stopped and the device has room. Called with q->lock held;
 * drops it around dev_submit(). One thread runs the queue at a time, so the
 * device sees requests in dispatch order; a caller that finds it running
 * asks the runner for another pass instead. While barriers are pending
 * (blk_barrier.c) the ordered list is served instead of the elevator. */
static void queue_run_locked(struct blk_queue *q)
{
	if (q->running) {
		q->rerun = true;
		return;
	}
	q->running = true;
	unsigned depth = q->geo.queue_depth ? q->geo.queue_depth : 1;
	for (;;) {
		q->rerun = false;
		struct list_node out;
		list_init(&out);
		unsigned n = 0;
		blk_elv_sync_state(q);
		if (!q->stopped &&
		    !blk_barrier_dispatch_locked(q, &out, depth, &n) &&
		    !q->plugged) {
			bool force = q->draining || q->elv_switching;
			while (q->in_flight < depth) {
				blk_elv_sync_state(q);
				struct request *rq = q->elv.ops->dispatch(&q->elv, force);
				if (!rq)
					break;
				rq->in_elv = false;
				blk_rq_hash_del(rq);
				q->queued--;
				blk_rq_account_dispatch(q, rq);
				list_add_tail(&out, &rq->q_node);
				n++;
			}
		}
		if (!n && !q->rerun)
			break;
		if (!n)
			continue;
		/* All the queue has, and at most BLK_ALONE_MAX requests (a
		 * commit's data block and log run): the device may serve them
		 * in this thread one after the other (DEV_IO_ALONE), nothing
		 * else waits behind them. */
		bool alone = n <= BLK_ALONE_MAX && q->in_flight == n && q->queued == 0 && q->ord_len == 0;
		pthread_mutex_unlock(&q->lock);
		struct list_node *it, *tmp;
		bool held = false;
		list_for_each_safe(it, tmp, &out) {
			struct request *rq = list_entry(it, struct request, q_node);
			list_del(&rq->q_node);
			rq->alone = alone;
			/* All but the last of the pass may wait for the device's
			 * commit below: one doorbell for the pass (barrier steps
			 * are sequenced by their completions, never held). */
			rq->more = !list_empty(&out) && !rq->barrier;
			held |= rq->more;
			blk_barrier_submit(q, rq);
		}
		if (held)
			dev_commit(q->dev);
		pthread_mutex_lock(&q->lock);
	}
	q->running = false;
	/* The elevator may have armed a timer: the dispatcher must see it
	 * if requests wait for it. */
	if (q->elv.kick_ns)
		blk_timer_kick_locked(q);
}

void blk_queue_kick_locked(struct blk_queue *q)
{
	if (q->running)
		q->rerun = true;
	else
		pthread_cond_signal(&q->kick);
}

void blk_timer_kick_locked(struct blk_queue *q)
{
	if (!q->elv.kick_ns || !q->disp_asleep || (!q->queued && !q->ord_barriers))
		return;
	if (q->disp_wake_ns && q->disp_wake_ns <= q->elv.kick_ns)
		return; /* it wakes before the timer anyway */
	pthread_cond_signal(&q->kick);
}

/* One dispatcher thread per queue: runs the queue on the plug timer, on
 * elevator timers (idle window, slice end) and after completions, and
 * sleeps otherwise. */
void *blk_dispatcher_main(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-blk-disp"); /* top, perf, gdb */
	struct blk_queue *q = arg;
	pthread_mutex_lock(&q->lock);
	/* Plugs made before the last sleep: a tick that saw none since, with
	 * nothing else to wait for, lets the dispatcher sleep until signalled. */
	uint64_t plugs_seen = q->st.plugs;
	bool ticked = false;
	for (;;) {
		uint64_t now = clock_now_ns();
		if (q->plugged && now >= q->plug_deadline_ns)
			q->plugged = false, q->st.unplugs_timer++;
		if (q->elv.kick_ns && q->elv.kick_ns <= now) {
			/* An elevator timer or wake-up: run the queue even if
			 * plugged, as the kernel's kblockd kick does. */
			q->elv.kick_ns = 0;
			q->plugged = false;
		}
		queue_run_locked(q);
		if (q->dying && !q->allocated)
			break;
		now = clock_now_ns();
		uint64_t deadline = 0;
		if (q->plugged && !q->stopped)
			deadline = q->plug_deadline_ns;
		/* While barriers are pending the elevator is not asked; their
		 * steps' completions wake us instead of its timers. */
		if (q->elv.kick_ns && !q->ord_barriers) {
			uint64_t k = q->elv.kick_ns;
			/* An elevator that asks to run "now" yet dispatched
			 * nothing gets a short pause instead of a busy loop. */
			if (k <= now)
				k = now + 100 * NS_PER_US;
			if (!deadline || k < deadline)
				deadline = k;
		}
		if (deadline && deadline <= now)
			continue;
		/* The tick: with nothing to wait for, sleep one unplug delay
		 * while plugs keep coming (blk_queue_plug_locked need not wake
		 * us for theirs), and without a deadline once a tick saw none. */
		if (!deadline && !q->stopped && (q->st.plugs != plugs_seen || !ticked)) {
			deadline = now + q->t.unplug_delay_ms * NS_PER_MS;
			ticked = true;
		} else if (deadline) {
			ticked = false;
		}
		plugs_seen = q->st.plugs;
		q->disp_asleep = true;
		q->disp_wake_ns = deadline;
		clock_cond_wait_until(&q->kick, &q->lock, deadline);
		q->disp_asleep = false;
		q->st.disp_wakeups++;
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}
