/* Block layer core: request queue, request pools, plugging, merging,
 * splitting and the dispatcher thread. The rules and their sources are in
 * docs/block-layer.md; the comments here say why and what is locked.
 *
 * Locking: q->lock protects everything in struct blk_queue below it (pools,
 * waiters, elevator, hashes, plug state, counters, statistics). It is never
 * held across dev_submit() or a bio's end_io(): devices may complete inside
 * dev_submit() (mem:) and end_io may submit new bios.
 */
#include "blk.h"
#include "blk_internal.h"
#include "../sched/elevator.h"
#include "../util/clock.h"
#include "../util/err.h"
#include "../util/opts.h"
#include "../util/tunable.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BLK_BATCH_REQ 32               /* requests a batcher may take past a full pool */
#define BLK_BATCH_TIME_NS (20 * NS_PER_MS) /* ... or for this long after waiting */
#define RQ_HASH_BITS 8
#define RQ_HASH_SIZE (1u << RQ_HASH_BITS)

/* Queue tunables (uint64_t so that the generic tunable code can handle
 * them). String-valued ones (scheduler, preset, sync_batch_op) are handled
 * by name in blk_queue_set. */
struct blk_tunables {
	uint64_t nr_requests;
	uint64_t max_sectors_kb;
	uint64_t unplug_thresh;
	uint64_t unplug_delay_ms;
	uint64_t sync_async_pools; /* patch 002: pools by sync/async (1) or read/write (0) */
	uint64_t noidle;           /* patch 008: schedulers honour REQ_NOIDLE */
	uint64_t ssd_plug;         /* patch 007: plug non-rotational devices unless they queue */
};

/* max_sectors_kb's maximum depends on the device; checked in blk_queue_set. */
static const struct tunable_desc queue_tunables[] = {
	{ "nr_requests", TUNABLE_U64, 4, 65536, 128, offsetof(struct blk_tunables, nr_requests), "",
	  "requests per pool (congestion at 7/8, hard cap 3/2)" },
	{ "max_sectors_kb", TUNABLE_U64, 4, 1u << 20, 512, offsetof(struct blk_tunables, max_sectors_kb), "KiB",
	  "largest request (4 KiB .. device maximum)" },
	{ "unplug_thresh", TUNABLE_U64, 1, 1024, 4, offsetof(struct blk_tunables, unplug_thresh), "",
	  "pending requests that unplug a plugged queue" },
	{ "unplug_delay_ms", TUNABLE_U64, 1, 1000, 3, offsetof(struct blk_tunables, unplug_delay_ms), "ms",
	  "plug timer" },
	{ "sync_async_pools", TUNABLE_BOOL, 0, 1, 1, offsetof(struct blk_tunables, sync_async_pools), "",
	  "request pools split sync/async (1, 2.6.30) or read/write (0, 2.6.29)" },
	{ "noidle", TUNABLE_BOOL, 0, 1, 1, offsetof(struct blk_tunables, noidle), "",
	  "schedulers honour NOIDLE: no idling after WRITE_SYNC_PLUG (1, 2.6.30)" },
	{ "ssd_plug", TUNABLE_BOOL, 0, 1, 1, offsetof(struct blk_tunables, ssd_plug), "",
	  "plug non-rotational devices unless they queue (1, 2.6.30) or never (0)" },
	{ NULL, 0, 0, 0, 0, 0, NULL, NULL },
};

struct blk_preset {
	const char *name;
	bool sync_async_pools, noidle, ssd_plug;
	unsigned sync_batch_op;
};

static const struct blk_preset presets[] = {
	{ "2.6.29", false, false, false, BLK_WRITE },
	{ "2.6.30-rc1", false, false, false, BLK_WRITE_SYNC },
	{ "2.6.30", true, true, true, BLK_WRITE_SYNC_PLUG },
};
#define NR_PRESETS (sizeof presets / sizeof presets[0])

struct rq_waiter {
	struct list_node node;
	pthread_cond_t cond;
	bool woken;
};

struct blk_pool {
	int count;
	bool full, congested, starved;
	struct list_node waiters; /* exclusive waiters, FIFO */
	int nr_waiters;
	uint64_t wakeups;
};

struct blk_queue {
	struct dev *dev;
	struct dev_geometry geo;
	pthread_t dispatcher;

	pthread_mutex_t lock;
	pthread_cond_t kick;      /* dispatcher: something to do */
	pthread_cond_t idle_cond; /* requests freed (drain, switch) */
	struct blk_tunables t;
	unsigned sync_batch_op;
	const char *preset;       /* last preset applied, or "custom" */

	struct blk_pool pool[2];
	struct elevator elv;
	bool elv_switching;
	pthread_cond_t switch_cond;
	struct list_node rq_hash_end[RQ_HASH_SIZE];   /* queued requests by end sector */
	struct list_node rq_hash_start[RQ_HASH_SIZE]; /* ... and by start sector */

	bool plugged;
	uint64_t plug_deadline_ns;
	bool running;       /* a thread is in queue_run_locked */
	bool rerun;         /* ... and must make another pass */
	bool stopped;
	bool draining;
	bool dying;
	unsigned queued;    /* requests inside the elevator */
	unsigned in_flight; /* requests at the device */
	unsigned allocated; /* requests allocated, all pools */
	uint64_t idle_base_ns, idle_base_count; /* elevator idle counters at the last reset */
	struct blk_stats st;
};

/* ---------------------------------------------------------------- helpers */

static int congestion_on(const struct blk_queue *q)
{
	int nr = (int)q->t.nr_requests;
	int on = nr - nr / 8 + 1;
	return on > nr ? nr : on;
}

static int congestion_off(const struct blk_queue *q)
{
	int nr = (int)q->t.nr_requests;
	int off = nr - nr / 8 - nr / 16 - 1;
	return off < 1 ? 1 : off;
}

/* Which pool a request with flags rw comes from. */
static int pool_index(const struct blk_queue *q, unsigned rw)
{
	if (q->t.sync_async_pools)
		return blk_rw_is_sync(rw) ? 1 : 0;
	return (rw & BLK_RW_WRITE) ? 0 : 1;
}

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

static unsigned hash_of(uint64_t sector)
{
	return (unsigned)((sector * 0x9E3779B97F4A7C15ull) >> (64 - RQ_HASH_BITS));
}

static void rq_hash_add(struct blk_queue *q, struct request *rq)
{
	list_add_tail(&q->rq_hash_end[hash_of(rq_end(rq))], &rq->hash_end);
	list_add_tail(&q->rq_hash_start[hash_of(rq->sector)], &rq->hash_start);
}

static void rq_hash_del(struct request *rq)
{
	if (list_linked(&rq->hash_end))
		list_del(&rq->hash_end);
	if (list_linked(&rq->hash_start))
		list_del(&rq->hash_start);
}

static uint64_t max_sectors(const struct blk_queue *q)
{
	return q->t.max_sectors_kb * 2;
}

/* Flags that make a request a barrier for merging. */
#define RQ_NOMERGE_FLAGS (BLK_REQ_FLUSH | BLK_REQ_FUA)

/* May a bio with flags rw from ioc join rq? Same direction, never sync into
 * async, nothing with cache-control flags, bounded size, and the elevator
 * agrees (cfq: the same queue). */
static bool rq_merge_ok(struct blk_queue *q, struct request *rq, unsigned rw, struct blk_ioc *ioc,
			uint64_t add_sectors)
{
	if (!rq->in_elv)
		return false;
	if ((rq->flags & BLK_RW_WRITE) != (rw & BLK_RW_WRITE))
		return false;
	if (blk_rw_is_sync(rw) && !rq_is_sync(rq))
		return false;
	if ((rq->flags | rw) & RQ_NOMERGE_FLAGS)
		return false;
	if (rq->nr_sectors + add_sectors > max_sectors(q))
		return false;
	if (q->elv.ops->allow_merge && !q->elv.ops->allow_merge(&q->elv, rq, rw, ioc))
		return false;
	return true;
}

/* Queued requests ending (or starting) at a sector; several may (a read
 * and a write, a sync and an async one), so the first one a bio (flags rw,
 * size add) may join is returned. */
static struct request *rq_hash_find_end(struct blk_queue *q, uint64_t end, unsigned rw, struct blk_ioc *ioc,
					uint64_t add)
{
	struct list_node *n, *h = &q->rq_hash_end[hash_of(end)];
	list_for_each(n, h) {
		struct request *rq = list_entry(n, struct request, hash_end);
		if (rq_end(rq) == end && rq_merge_ok(q, rq, rw, ioc, add))
			return rq;
	}
	return NULL;
}

static struct request *rq_hash_find_start(struct blk_queue *q, uint64_t start, unsigned rw, struct blk_ioc *ioc,
					  uint64_t add)
{
	struct list_node *n, *h = &q->rq_hash_start[hash_of(start)];
	list_for_each(n, h) {
		struct request *rq = list_entry(n, struct request, hash_start);
		if (rq->sector == start && rq_merge_ok(q, rq, rw, ioc, add))
			return rq;
	}
	return NULL;
}

/* ------------------------------------------------------ request pools */

static bool ioc_batching(const struct blk_queue *q, const struct blk_ioc *ioc, uint64_t now)
{
	if (!ioc || ioc->batch_queue != q)
		return false;
	return ioc->nr_batch_requests == BLK_BATCH_REQ ||
	       (ioc->nr_batch_requests > 0 && now < ioc->last_waited_ns + BLK_BATCH_TIME_NS);
}

/* Make ioc a batcher: it may allocate BLK_BATCH_REQ requests (or for
 * BLK_BATCH_TIME) past a full pool, so a woken waiter makes progress in
 * bursts instead of one request per wake-up. */
static void ioc_set_batching(struct blk_queue *q, struct blk_ioc *ioc, uint64_t now)
{
	if (!ioc || ioc_batching(q, ioc, now))
		return;
	ioc->batch_queue = q;
	ioc->nr_batch_requests = BLK_BATCH_REQ;
	ioc->last_waited_ns = now;
}

static void pool_wake_one(struct blk_pool *p)
{
	struct list_node *n = list_first(&p->waiters);
	if (!n)
		return;
	struct rq_waiter *w = list_entry(n, struct rq_waiter, node);
	list_del(&w->node);
	p->nr_waiters--;
	w->woken = true;
	p->wakeups++;
	pthread_cond_signal(&w->cond);
}

static void pool_freed_one(struct blk_queue *q, int idx)
{
	struct blk_pool *p = &q->pool[idx];
	if (p->count < congestion_off(q))
		p->congested = false;
	if (p->count + 1 <= (int)q->t.nr_requests) {
		pool_wake_one(p);
		p->full = false;
	}
}

static void pool_freed(struct blk_queue *q, int idx)
{
	q->pool[idx].count--;
	q->allocated--;
	pool_freed_one(q, idx);
	if (q->pool[idx ^ 1].starved)
		pool_freed_one(q, idx ^ 1);
	if (!q->allocated)
		pthread_cond_broadcast(&q->idle_cond);
}

/* One allocation attempt (the kernel's get_request). Returns NULL when the
 * caller must sleep. Called with q->lock held. */
static struct request *rq_try_alloc(struct blk_queue *q, unsigned rw, struct blk_ioc *ioc, uint64_t now)
{
	int idx = pool_index(q, rw);
	struct blk_pool *p = &q->pool[idx];
	enum elv_may_queue mq = q->elv.ops->may_queue ? q->elv.ops->may_queue(&q->elv, ioc, rw) : ELV_MQUEUE_MAY;
	if (mq == ELV_MQUEUE_NO)
		goto starved;
	if (p->count + 1 >= congestion_on(q)) {
		if (p->count + 1 >= (int)q->t.nr_requests) {
			/* The first allocator to fill the pool becomes a batcher;
			 * everyone else waits unless batching or told MUST. */
			if (!p->full) {
				ioc_set_batching(q, ioc, now);
				p->full = true;
			} else if (mq != ELV_MQUEUE_MUST && !ioc_batching(q, ioc, now)) {
				return NULL;
			}
		}
		p->congested = true;
	}
	/* Hard cap: even batchers and MUST stop at 3/2 of nr_requests. */
	if (p->count >= (int)(3 * q->t.nr_requests / 2))
		return NULL;

	struct request *rq = calloc(1, sizeof *rq);
	if (!rq)
		goto starved;
	p->count++;
	p->starved = false;
	q->allocated++;
	rq->pool_sync = idx;
	rq->queue = q;
	rq->flags = rw & ~(BLK_REQ_UNPLUG | BLK_REQ_SWRITE);
	rq->ioc = ioc;
	blk_ioc_get(ioc);
	rq->alloc_ns = now;
	list_init(&rq->elv_fifo);
	list_init(&rq->elv_sort);
	list_init(&rq->q_node);
	list_init(&rq->hash_end);
	list_init(&rq->hash_start);
	if (q->elv.ops->set_request && q->elv.ops->set_request(&q->elv, rq) < 0) {
		blk_ioc_put(ioc);
		free(rq);
		p->count--;
		q->allocated--;
		pool_freed_one(q, idx);
		goto starved;
	}
	if (ioc_batching(q, ioc, now))
		ioc->nr_batch_requests--;
	q->st.requests++;
	return rq;
starved:
	if (p->count == 0)
		p->starved = true;
	return NULL;
}

static void queue_unplug_locked(struct blk_queue *q, uint64_t *counter);
static void queue_run_locked(struct blk_queue *q);

/* Allocate a request, sleeping while the pool says no (the kernel's
 * get_request_wait). Sleeping unplugs first so that the requests we wait
 * for actually get to the device. */
static struct request *rq_alloc_wait(struct blk_queue *q, unsigned rw, struct blk_ioc *ioc)
{
	uint64_t t0 = clock_now_ns();
	uint64_t now = t0;
	struct request *rq;
	int idx = pool_index(q, rw);
	bool slept = false;
	while (!(rq = rq_try_alloc(q, rw, ioc, now))) {
		struct rq_waiter w = { .woken = false };
		pthread_cond_init(&w.cond, NULL);
		list_add_tail(&q->pool[idx].waiters, &w.node);
		q->pool[idx].nr_waiters++;
		queue_unplug_locked(q, &q->st.unplugs_alloc);
		slept = true;
		while (!w.woken)
			pthread_cond_wait(&w.cond, &q->lock);
		pthread_cond_destroy(&w.cond);
		now = clock_now_ns();
		/* A woken waiter gets to batch, so it makes progress. */
		ioc_set_batching(q, ioc, now);
	}
	if (slept)
		q->st.alloc_sleeps++;
	hist_add(&q->st.alloc_wait[blk_rw_is_sync(rw)], now - t0);
	return rq;
}

/* Free a request that left the elevator (completed or merged away). */
static void rq_free(struct blk_queue *q, struct request *rq)
{
	if (q->elv.ops->put_request)
		q->elv.ops->put_request(&q->elv, rq);
	int idx = rq->pool_sync;
	blk_ioc_put(rq->ioc);
	free(rq->buf);
	free(rq);
	pool_freed(q, idx);
}

/* ----------------------------------------------------------- plugging */

static void queue_plug(struct blk_queue *q, uint64_t now)
{
	if (q->plugged)
		return;
	q->plugged = true;
	q->plug_deadline_ns = now + q->t.unplug_delay_ms * NS_PER_MS;
	q->st.plugs++;
	pthread_cond_signal(&q->kick); /* the dispatcher arms its timer */
}

/* Remove the plug and run the queue in the caller's context, as the
 * kernel's __generic_unplug_device calls the driver directly: a WRITE_SYNC
 * reaches the device before its submitter queues the next bio.
 * counter: which statistic to bump, if any. May drop and retake q->lock. */
static void queue_unplug_locked(struct blk_queue *q, uint64_t *counter)
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
	queue_unplug_locked(q, &q->st.unplugs_wait);
	pthread_mutex_unlock(&q->lock);
}

bool blk_queue_plugged(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	bool p = q->plugged;
	pthread_mutex_unlock(&q->lock);
	return p;
}

void blk_queue_stop(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopped = true;
	pthread_mutex_unlock(&q->lock);
}

void blk_queue_start(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopped = false;
	pthread_cond_signal(&q->kick);
	pthread_mutex_unlock(&q->lock);
}

/* ------------------------------------------------------------ merging */

static void rq_rehash(struct blk_queue *q, struct request *rq)
{
	rq_hash_del(rq);
	rq_hash_add(q, rq);
}

/* Absorb `next` (which starts where rq ends) into rq. */
static void rq_merge_requests(struct blk_queue *q, struct request *rq, struct request *next)
{
	rq->biotail->bi_next = next->bio;
	rq->biotail = next->biotail;
	rq->nr_sectors += next->nr_sectors;
	if (next->alloc_ns < rq->alloc_ns)
		rq->alloc_ns = next->alloc_ns;
	next->bio = next->biotail = NULL;
	rq_hash_del(next);
	next->in_elv = false;
	q->elv.ops->merge_requests(&q->elv, rq, next);
	q->queued--;
	rq_rehash(q, rq);
	q->st.merges_rq++;
	rq_free(q, next);
}

/* After rq grew at the back, it may now touch the next request. */
static void attempt_back_merge(struct blk_queue *q, struct request *rq)
{
	struct list_node *n, *h = &q->rq_hash_start[hash_of(rq_end(rq))];
	list_for_each(n, h) {
		struct request *next = list_entry(n, struct request, hash_start);
		if (next != rq && next->sector == rq_end(rq) && rq_is_sync(next) == rq_is_sync(rq) &&
		    rq_merge_ok(q, rq, next->flags, next->ioc, next->nr_sectors)) {
			rq_merge_requests(q, rq, next);
			return;
		}
	}
}

static void attempt_front_merge(struct blk_queue *q, struct request *rq)
{
	struct list_node *n, *h = &q->rq_hash_end[hash_of(rq->sector)];
	list_for_each(n, h) {
		struct request *prev = list_entry(n, struct request, hash_end);
		if (prev != rq && rq_end(prev) == rq->sector && rq_is_sync(prev) == rq_is_sync(rq) &&
		    rq_merge_ok(q, prev, rq->flags, rq->ioc, rq->nr_sectors)) {
			rq_merge_requests(q, prev, rq);
			return;
		}
	}
}

/* Try to merge bio into a queued request. Returns true if merged. */
static bool bio_try_merge(struct blk_queue *q, struct bio *bio, struct blk_ioc *ioc)
{
	uint64_t ns = bio->size >> DEV_SECTOR_SHIFT;
	if (!q->queued || (bio->rw & RQ_NOMERGE_FLAGS) || !ns)
		return false;
	struct request *rq = rq_hash_find_end(q, bio->sector, bio->rw, ioc, ns);
	if (rq) {
		rq->biotail->bi_next = bio;
		rq->biotail = bio;
		rq->nr_sectors += (uint32_t)ns;
		rq_rehash(q, rq);
		if (q->elv.ops->merged)
			q->elv.ops->merged(&q->elv, rq, ELV_MERGE_BACK);
		q->st.merges_back++;
		attempt_back_merge(q, rq);
		return true;
	}
	rq = rq_hash_find_start(q, bio->sector + ns, bio->rw, ioc, ns);
	if (rq && (!q->elv.ops->allow_front_merge || q->elv.ops->allow_front_merge(&q->elv))) {
		bio->bi_next = rq->bio;
		rq->bio = bio;
		rq->sector = bio->sector;
		rq->nr_sectors += (uint32_t)ns;
		rq_rehash(q, rq);
		if (q->elv.ops->merged)
			q->elv.ops->merged(&q->elv, rq, ELV_MERGE_FRONT);
		q->st.merges_front++;
		attempt_front_merge(q, rq);
		return true;
	}
	return false;
}

/* ------------------------------------------------------- submission */

static void elv_sync_state(struct blk_queue *q)
{
	q->elv.now_ns = clock_now_ns();
	q->elv.honour_noidle = q->t.noidle;
}

/* The kernel's __make_request for one bio that fits max_sectors. */
static void make_request(struct blk_queue *q, struct bio *bio)
{
	struct blk_ioc *ioc = blk_ioc_current();
	pthread_mutex_lock(&q->lock);
	while (q->elv_switching)
		pthread_cond_wait(&q->switch_cond, &q->lock);
	q->st.bios++;
	elv_sync_state(q);
	bool unplug = bio->rw & BLK_REQ_UNPLUG;
	if (bio_try_merge(q, bio, ioc))
		goto out;

	struct request *rq = rq_alloc_wait(q, bio->rw, ioc);
	elv_sync_state(q);
	rq->sector = bio->sector;
	rq->nr_sectors = bio->size >> DEV_SECTOR_SHIFT;
	rq->bio = rq->biotail = bio;
	/* A request into an empty elevator plugs the queue (2.6.30: unless
	 * the device is non-rotational and queuing). */
	if (!q->queued && queue_should_plug(q))
		queue_plug(q, q->elv.now_ns);
	rq->insert_ns = q->elv.now_ns;
	rq->in_elv = true;
	q->elv.ops->add_request(&q->elv, rq);
	q->queued++;
	if (rq->nr_sectors)
		rq_hash_add(q, rq);
	/* Enough pending behind the plug: unplug (unplug_thresh). */
	if (q->plugged) {
		int nrq = q->pool[0].count + q->pool[1].count - (int)q->in_flight;
		if (nrq >= (int)q->t.unplug_thresh)
			queue_unplug_locked(q, &q->st.unplugs_thresh);
	}
	/* Elevators may want to run at once, plugged or not (cfq: a request
	 * for the queue it idles on). */
	if (q->elv.kick_ns && q->elv.kick_ns <= q->elv.now_ns) {
		q->elv.kick_ns = 0;
		queue_unplug_locked(q, NULL);
	}
out:
	if (unplug)
		queue_unplug_locked(q, &q->st.unplugs_flag);
	else if (!queue_should_plug(q))
		queue_unplug_locked(q, NULL);
	pthread_mutex_unlock(&q->lock);
}

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

/* ------------------------------------------------------- completion */

static void rq_done(struct dev_io *io, int err)
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
	elv_sync_state(q);
	if (q->elv.ops->completed)
		q->elv.ops->completed(&q->elv, rq);
	q->st.completed++;
	if (err)
		q->st.errors++;
	q->st.bytes[write] += (uint64_t)rq->nr_sectors << DEV_SECTOR_SHIFT;
	hist_add(&q->st.service_lat[sync], now - rq->dispatch_ns);
	struct bio *bios = rq->bio;
	for (struct bio *b = bios; b; b = b->bi_next)
		hist_add(&q->st.total_lat[sync], now - b->bi_submit_ns);
	rq->bio = NULL;
	rq_free(q, rq);
	pthread_cond_signal(&q->kick);
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
static int rq_prepare_io(struct request *rq)
{
	struct dev_io *io = &rq->io;
	memset(io, 0, sizeof *io);
	io->priv = rq;
	io->done = rq_done;
	if (!rq->nr_sectors) {
		io->op = DEV_OP_FLUSH;
		return 0;
	}
	io->op = rq_is_write(rq) ? DEV_OP_WRITE : DEV_OP_READ;
	if (rq->flags & BLK_REQ_FLUSH)
		io->flags |= DEV_IO_PREFLUSH;
	if (rq->flags & BLK_REQ_FUA)
		io->flags |= DEV_IO_FUA;
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
	rq->buf = malloc((size_t)rq->nr_sectors << DEV_SECTOR_SHIFT);
	if (!rq->buf)
		return -ENOMEM;
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

/* Move requests from the elevator to the device while the queue is not
 * plugged or stopped and the device has room. Called with q->lock held;
 * drops it around dev_submit(). One thread runs the queue at a time, so the
 * device sees requests in dispatch order; a caller that finds it running
 * asks the runner for another pass instead. */
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
		if (!q->plugged && !q->stopped) {
			bool force = q->draining || q->elv_switching;
			while (q->in_flight < depth) {
				elv_sync_state(q);
				struct request *rq = q->elv.ops->dispatch(&q->elv, force);
				if (!rq)
					break;
				bool sync = rq_is_sync(rq);
				rq->in_elv = false;
				rq_hash_del(rq);
				q->queued--;
				q->in_flight++;
				q->elv.in_driver[sync]++;
				rq->dispatch_ns = q->elv.now_ns;
				q->st.dispatched++;
				q->st.device_requests[sync]++;
				q->st.class_requests[blk_ioc_class(rq->ioc) & 3]++;
				hist_add(&q->st.queue_lat[sync], rq->dispatch_ns - rq->insert_ns);
				list_add_tail(&out, &rq->q_node);
				n++;
			}
		}
		if (!n && !q->rerun)
			break;
		if (!n)
			continue;
		pthread_mutex_unlock(&q->lock);
		struct list_node *it, *tmp;
		list_for_each_safe(it, tmp, &out) {
			struct request *rq = list_entry(it, struct request, q_node);
			list_del(&rq->q_node);
			int rc = rq_prepare_io(rq);
			if (!rc)
				rc = dev_submit(q->dev, &rq->io);
			if (rc < 0)
				rq_done(&rq->io, rc);
		}
		pthread_mutex_lock(&q->lock);
	}
	q->running = false;
	/* The elevator may have armed a timer: let the dispatcher see it. */
	if (q->elv.kick_ns)
		pthread_cond_signal(&q->kick);
}

/* One dispatcher thread per queue: runs the queue on the plug timer, on
 * elevator timers (idle window, slice end) and after completions, and
 * sleeps otherwise. */
static void *dispatcher_main(void *arg)
{
	struct blk_queue *q = arg;
	pthread_mutex_lock(&q->lock);
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
		if (q->elv.kick_ns) {
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
		clock_cond_wait_until(&q->kick, &q->lock, deadline);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* ------------------------------------------------ queue life cycle */

static int elv_start(struct blk_queue *q, const struct elv_ops *ops)
{
	struct elevator *e = &q->elv;
	memset(e, 0, sizeof *e);
	e->ops = ops;
	e->rotational = q->geo.rotational;
	e->queuing = q->geo.queue_depth > 1;
	e->honour_noidle = q->t.noidle;
	e->now_ns = clock_now_ns();
	return ops->init ? ops->init(e) : 0;
}

int blk_queue_create(struct dev *dev, const char *opts, struct blk_queue **out)
{
	struct blk_queue *q = calloc(1, sizeof *q);
	if (!q)
		return -ENOMEM;
	q->dev = dev;
	dev_geometry_get(dev, &q->geo);
	tunable_defaults(queue_tunables, &q->t);
	uint64_t hw_kb = q->geo.max_hw_sectors / 2;
	if (hw_kb < 4)
		hw_kb = 4;
	if (q->t.max_sectors_kb > hw_kb)
		q->t.max_sectors_kb = hw_kb;
	q->sync_batch_op = BLK_WRITE_SYNC_PLUG;
	q->preset = "2.6.30";
	pthread_mutex_init(&q->lock, NULL);
	clock_cond_init(&q->kick);
	pthread_cond_init(&q->idle_cond, NULL);
	pthread_cond_init(&q->switch_cond, NULL);
	for (int i = 0; i < 2; i++)
		list_init(&q->pool[i].waiters);
	for (unsigned i = 0; i < RQ_HASH_SIZE; i++) {
		list_init(&q->rq_hash_end[i]);
		list_init(&q->rq_hash_start[i]);
	}
	for (int i = 0; i < 2; i++) {
		hist_init(&q->st.alloc_wait[i]);
		hist_init(&q->st.queue_lat[i]);
		hist_init(&q->st.service_lat[i]);
		hist_init(&q->st.total_lat[i]);
	}
	int rc = elv_start(q, elv_find("cfq"));
	if (rc < 0)
		goto fail_elv;
	rc = -pthread_create(&q->dispatcher, NULL, dispatcher_main, q);
	if (rc < 0) {
		q->elv.ops->exit(&q->elv);
		goto fail_elv;
	}
	rc = blk_queue_set_opts(q, opts);
	if (rc < 0) {
		blk_queue_destroy(q);
		return rc;
	}
	*out = q;
	return 0;
fail_elv:
	pthread_cond_destroy(&q->switch_cond);
	pthread_cond_destroy(&q->idle_cond);
	pthread_cond_destroy(&q->kick);
	pthread_mutex_destroy(&q->lock);
	free(q);
	return rc;
}

void blk_queue_destroy(struct blk_queue *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	__atomic_store_n(&q->dying, true, __ATOMIC_RELEASE);
	q->draining = true;
	q->stopped = false;
	queue_unplug_locked(q, NULL);
	while (q->allocated)
		pthread_cond_wait(&q->idle_cond, &q->lock);
	pthread_cond_signal(&q->kick);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->dispatcher, NULL);
	if (q->elv.ops->exit)
		q->elv.ops->exit(&q->elv);
	pthread_cond_destroy(&q->switch_cond);
	pthread_cond_destroy(&q->idle_cond);
	pthread_cond_destroy(&q->kick);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

struct dev *blk_queue_dev(const struct blk_queue *q)
{
	return q->dev;
}

/* Switch the elevator on a live queue: hold new submissions, drain every
 * request through the old elevator (force dispatch), then swap. */
static int queue_switch_elevator(struct blk_queue *q, const struct elv_ops *ops)
{
	pthread_mutex_lock(&q->lock);
	while (q->elv_switching)
		pthread_cond_wait(&q->switch_cond, &q->lock);
	if (q->elv.ops == ops) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	q->elv_switching = true;
	bool was_stopped = q->stopped;
	q->stopped = false;
	queue_unplug_locked(q, NULL);
	while (q->allocated)
		pthread_cond_wait(&q->idle_cond, &q->lock);
	const struct elv_ops *old = q->elv.ops;
	struct elevator saved = q->elv;
	if (old->exit)
		old->exit(&q->elv);
	int rc = elv_start(q, ops);
	if (rc < 0) {
		/* Keep the old scheduler running. */
		if (elv_start(q, old) < 0)
			elv_start(q, &elv_noop_ops); /* noop cannot fail */
		rc = err_set(rc, "scheduler %s: initialisation failed", ops->name);
	} else {
		/* Idle statistics carry over across the switch. */
		q->elv.idle_ns = saved.idle_ns;
		q->elv.idle_count = saved.idle_count;
	}
	q->stopped = was_stopped;
	q->elv_switching = false;
	pthread_cond_broadcast(&q->switch_cond);
	pthread_cond_signal(&q->kick);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

/* ---------------------------------------------------------- tunables */

static const struct blk_preset *preset_find(const char *name)
{
	for (size_t i = 0; i < NR_PRESETS; i++)
		if (!strcmp(presets[i].name, name))
			return &presets[i];
	return NULL;
}

static int batch_op_parse(const char *v, unsigned *op)
{
	if (v && !strcasecmp(v, "WRITE"))
		*op = BLK_WRITE;
	else if (v && !strcasecmp(v, "WRITE_SYNC"))
		*op = BLK_WRITE_SYNC;
	else if (v && !strcasecmp(v, "WRITE_SYNC_PLUG"))
		*op = BLK_WRITE_SYNC_PLUG;
	else
		return err_set(-EINVAL, "sync_batch_op: '%s' is not WRITE, WRITE_SYNC or WRITE_SYNC_PLUG",
			       v ? v : "");
	return 0;
}

static int scheduler_lookup(const char *v, const struct elv_ops **ops)
{
	*ops = v ? elv_find(v) : NULL;
	if (!*ops)
		return err_set(-EINVAL, "scheduler: '%s' is unknown (noop, deadline, cfq)", v ? v : "");
	return 0;
}

/* Re-evaluate pool flags after nr_requests changed (like the kernel's
 * queue_requests_store) and wake waiters that now fit. */
static void pools_reevaluate(struct blk_queue *q)
{
	for (int i = 0; i < 2; i++) {
		struct blk_pool *p = &q->pool[i];
		p->congested = p->count >= congestion_on(q);
		p->full = p->count >= (int)q->t.nr_requests;
		int room = (int)q->t.nr_requests - p->count;
		while (room-- > 0 && p->nr_waiters)
			pool_wake_one(p);
	}
}

int blk_queue_set(struct blk_queue *q, const char *name, const char *value)
{
	if (!strcmp(name, "scheduler")) {
		const struct elv_ops *ops;
		int rc = scheduler_lookup(value, &ops);
		return rc ? rc : queue_switch_elevator(q, ops);
	}
	if (!strcmp(name, "preset")) {
		const struct blk_preset *p = value ? preset_find(value) : NULL;
		if (!p)
			return err_set(-EINVAL, "preset: '%s' is unknown (2.6.29, 2.6.30-rc1, 2.6.30)", value ? value : "");
		pthread_mutex_lock(&q->lock);
		if (q->allocated && (bool)q->t.sync_async_pools != p->sync_async_pools) {
			pthread_mutex_unlock(&q->lock);
			return err_set(-EBUSY, "preset %s: cannot change the request pools while I/O is queued", p->name);
		}
		q->t.sync_async_pools = p->sync_async_pools;
		q->t.noidle = p->noidle;
		q->t.ssd_plug = p->ssd_plug;
		q->sync_batch_op = p->sync_batch_op;
		q->preset = p->name;
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	if (!strcmp(name, "sync_batch_op")) {
		unsigned op;
		int rc = batch_op_parse(value, &op);
		if (rc)
			return rc;
		pthread_mutex_lock(&q->lock);
		q->sync_batch_op = op;
		q->preset = "custom";
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	const struct tunable_desc *d = tunable_find(queue_tunables, name);
	if (d) {
		uint64_t v;
		int rc = tunable_check(d, value, &v);
		if (rc)
			return rc;
		pthread_mutex_lock(&q->lock);
		if (d->offset == offsetof(struct blk_tunables, max_sectors_kb) && v > q->geo.max_hw_sectors / 2) {
			pthread_mutex_unlock(&q->lock);
			return err_set(-ERANGE, "tunable 'max_sectors_kb': %" PRIu64 " is above the device maximum %u KiB",
				       v, q->geo.max_hw_sectors / 2);
		}
		if (d->offset == offsetof(struct blk_tunables, sync_async_pools) && q->allocated &&
		    v != q->t.sync_async_pools) {
			pthread_mutex_unlock(&q->lock);
			return err_set(-EBUSY, "sync_async_pools: cannot change the request pools while I/O is queued");
		}
		tunable_set(queue_tunables, &q->t, name, value);
		if (d->offset == offsetof(struct blk_tunables, nr_requests))
			pools_reevaluate(q);
		if (d->offset == offsetof(struct blk_tunables, sync_async_pools) ||
		    d->offset == offsetof(struct blk_tunables, noidle) ||
		    d->offset == offsetof(struct blk_tunables, ssd_plug))
			q->preset = "custom";
		q->elv.honour_noidle = q->t.noidle;
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	pthread_mutex_lock(&q->lock);
	int rc;
	if (tunable_find(q->elv.ops->tunables, name))
		rc = tunable_set(q->elv.ops->tunables, q->elv.data, name, value);
	else
		rc = err_set(-ENOENT, "unknown tunable '%s' (not a queue tunable nor one of scheduler %s)", name,
			     q->elv.ops->name);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int blk_queue_get(struct blk_queue *q, const char *name, char *buf, size_t len)
{
	int rc = 0;
	pthread_mutex_lock(&q->lock);
	uint64_t v;
	if (!strcmp(name, "scheduler")) {
		snprintf(buf, len, "%s", q->elv.ops->name);
	} else if (!strcmp(name, "preset")) {
		snprintf(buf, len, "%s", q->preset);
	} else if (!strcmp(name, "sync_batch_op")) {
		blk_rw_name(q->sync_batch_op, buf, len);
	} else if (!tunable_get(queue_tunables, &q->t, name, &v) ||
		   !tunable_get(q->elv.ops->tunables, q->elv.data, name, &v)) {
		snprintf(buf, len, "%" PRIu64, v);
	} else {
		rc = err_set(-ENOENT, "unknown tunable '%s'", name);
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void blk_queue_print_tunables(struct blk_queue *q, FILE *out)
{
	char op[64];
	pthread_mutex_lock(&q->lock);
	fprintf(out, "%-20s %10s\n%-20s %10s\n%-20s %10s\n", "preset", q->preset, "scheduler", q->elv.ops->name,
		"sync_batch_op", blk_rw_name(q->sync_batch_op, op, sizeof op));
	tunable_print(queue_tunables, &q->t, "", out);
	tunable_print(q->elv.ops->tunables, q->elv.data, "", out);
	pthread_mutex_unlock(&q->lock);
}

struct opts_pass {
	struct blk_queue *q;
	int pass; /* 0: scheduler, 1: preset, 2: the rest */
};

static int apply_opt(void *ctx, const char *name, const char *value)
{
	struct opts_pass *p = ctx;
	int pass = !strcmp(name, "scheduler") ? 0 : !strcmp(name, "preset") ? 1 : 2;
	if (pass != p->pass)
		return 0;
	return blk_queue_set(p->q, name, value);
}

int blk_queue_set_opts(struct blk_queue *q, const char *opts)
{
	struct opts_pass p = { .q = q };
	for (p.pass = 0; p.pass < 3; p.pass++) {
		int rc = opts_parse(opts, apply_opt, &p);
		if (rc)
			return rc;
	}
	return 0;
}

static int validate_opt(void *ctx, const char *name, const char *value)
{
	(void)ctx;
	uint64_t v;
	if (!strcmp(name, "scheduler")) {
		const struct elv_ops *ops;
		return scheduler_lookup(value, &ops);
	}
	if (!strcmp(name, "preset"))
		return value && preset_find(value) ? 0
			: err_set(-EINVAL, "preset: '%s' is unknown (2.6.29, 2.6.30-rc1, 2.6.30)", value ? value : "");
	if (!strcmp(name, "sync_batch_op")) {
		unsigned op;
		return batch_op_parse(value, &op);
	}
	const struct tunable_desc *d = tunable_find(queue_tunables, name);
	if (d)
		return tunable_check(d, value, &v);
	for (const struct elv_ops *const *e = elv_all(); *e; e++) {
		d = tunable_find((*e)->tunables, name);
		if (d)
			return tunable_check(d, value, &v);
	}
	return err_set(-ENOENT, "unknown tunable '%s'", name);
}

int blk_opts_validate(const char *opts)
{
	return opts_parse(opts, validate_opt, NULL);
}

unsigned blk_queue_sync_batch_op(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	unsigned op = q->sync_batch_op;
	pthread_mutex_unlock(&q->lock);
	return op;
}

/* ------------------------------------------------- waiting helpers */

void blk_batch_init(struct blk_batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->pending = 0;
	b->err = 0;
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
	batch_done(bio->private, err);
}

int blk_batch_submit(struct blk_queue *q, struct blk_batch *b, struct bio *bio)
{
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	bio->end_io = batch_end_io;
	bio->private = b;
	int rc = blk_submit_bio(q, bio);
	if (rc < 0)
		batch_done(b, rc);
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
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
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

/* ------------------------------------------------------ statistics */

void blk_queue_stats_get(struct blk_queue *q, struct blk_stats *out)
{
	pthread_mutex_lock(&q->lock);
	*out = q->st;
	out->idle_ns = q->elv.idle_ns - q->idle_base_ns;
	out->idle_count = q->elv.idle_count - q->idle_base_count;
	pthread_mutex_unlock(&q->lock);
}

void blk_queue_stats_reset(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	memset(&q->st, 0, sizeof q->st);
	for (int i = 0; i < 2; i++) {
		hist_init(&q->st.alloc_wait[i]);
		hist_init(&q->st.queue_lat[i]);
		hist_init(&q->st.service_lat[i]);
		hist_init(&q->st.total_lat[i]);
	}
	q->idle_base_ns = q->elv.idle_ns;
	q->idle_base_count = q->elv.idle_count;
	pthread_mutex_unlock(&q->lock);
}

void blk_queue_pool_state(struct blk_queue *q, int pool, struct blk_pool_state *out)
{
	pthread_mutex_lock(&q->lock);
	const struct blk_pool *p = &q->pool[pool & 1];
	out->count = p->count;
	out->full = p->full;
	out->congested = p->congested;
	out->starved = p->starved;
	out->waiters = p->nr_waiters;
	out->wakeups = p->wakeups;
	out->congestion_on = congestion_on(q);
	out->congestion_off = congestion_off(q);
	out->nr_requests = (int)q->t.nr_requests;
	out->hard_cap = (int)(3 * q->t.nr_requests / 2);
	pthread_mutex_unlock(&q->lock);
}

void blk_queue_counts(struct blk_queue *q, unsigned *queued, unsigned *in_flight)
{
	pthread_mutex_lock(&q->lock);
	*queued = q->queued;
	*in_flight = q->in_flight;
	pthread_mutex_unlock(&q->lock);
}

static void print_hist(FILE *out, const char *name, const struct hist *h)
{
	if (!h->count)
		return;
	fprintf(out, "  %-12s n=%-8" PRIu64 " p50=%8.3f p99=%8.3f p999=%8.3f max=%8.3f ms\n", name, h->count,
		hist_quantile(h, 0.5) / 1e6, hist_quantile(h, 0.99) / 1e6, hist_quantile(h, 0.999) / 1e6,
		h->max / 1e6);
}

void blk_stats_print(const struct blk_stats *s, FILE *out)
{
	fprintf(out,
		"bios %" PRIu64 " requests %" PRIu64 " merges back/front/rq %" PRIu64 "/%" PRIu64 "/%" PRIu64
		" splits %" PRIu64 "\n",
		s->bios, s->requests, s->merges_back, s->merges_front, s->merges_rq, s->splits);
	fprintf(out,
		"dispatched %" PRIu64 " (async %" PRIu64 ", sync %" PRIu64 ") completed %" PRIu64 " errors %" PRIu64
		"\n",
		s->dispatched, s->device_requests[0], s->device_requests[1], s->completed, s->errors);
	fprintf(out, "by ioprio class: RT %" PRIu64 " BE %" PRIu64 " IDLE %" PRIu64 "\n",
		s->class_requests[BLK_IOPRIO_CLASS_RT], s->class_requests[BLK_IOPRIO_CLASS_BE],
		s->class_requests[BLK_IOPRIO_CLASS_IDLE]);
	fprintf(out,
		"plugs %" PRIu64 " unplugs flag/thresh/timer/wait/alloc %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
		"/%" PRIu64 " alloc sleeps %" PRIu64 " idled %.3f ms in %" PRIu64 " windows\n",
		s->plugs, s->unplugs_flag, s->unplugs_thresh, s->unplugs_timer, s->unplugs_wait, s->unplugs_alloc,
		s->alloc_sleeps, s->idle_ns / 1e6, s->idle_count);
	static const char *const kind[2] = { "async", "sync" };
	for (int i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof name, "alloc/%s", kind[i]);
		print_hist(out, name, &s->alloc_wait[i]);
		snprintf(name, sizeof name, "queue/%s", kind[i]);
		print_hist(out, name, &s->queue_lat[i]);
		snprintf(name, sizeof name, "service/%s", kind[i]);
		print_hist(out, name, &s->service_lat[i]);
		snprintf(name, sizeof name, "total/%s", kind[i]);
		print_hist(out, name, &s->total_lat[i]);
	}
}
