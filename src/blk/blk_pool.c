/* Request pools (docs/block-layer.md, "request allocation"): two pools per
 * queue, sync/async (2.6.30) or read/write (2.6.29); congestion thresholds
 * at 7/8 of nr_requests; a full pool lets only batchers and MUST allocate;
 * a hard cap at 3/2 of nr_requests; a pool starved when an allocation failed
 * with nothing allocated; one exclusive waiter woken per freed request.
 * Everything here runs under q->lock (blk_internal.h).
 */
#include "util/stalltrace.h"
#include "blk.h"
#include "blk_internal.h"

#include <stdlib.h>

#define BLK_BATCH_REQ 32               /* requests a batcher may take past a full pool */
#define BLK_BATCH_TIME_NS (20 * NS_PER_MS) /* ... or for this long after waiting */

/* A caller sleeping for a request; lives on its stack. */
struct rq_waiter {
	struct list_node node;
	pthread_cond_t cond;
	bool woken;
};

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

static int hard_cap(const struct blk_queue *q)
{
	return (int)(3 * q->t.nr_requests / 2);
}

/* Which pool a request with flags rw comes from. */
static int pool_index(const struct blk_queue *q, unsigned rw)
{
	if (q->t.sync_async_pools)
		return blk_rw_is_sync(rw) ? 1 : 0;
	return (rw & BLK_RW_WRITE) ? 0 : 1;
}

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
 * caller must sleep. */
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
	if (p->count >= hard_cap(q))
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

/* The kernel's get_request_wait. Sleeping unplugs first so that the
 * requests we wait for actually get to the device. */
struct request *blk_rq_alloc_wait(struct blk_queue *q, unsigned rw, struct blk_ioc *ioc)
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
		blk_queue_unplug_locked(q, &q->st.unplugs_alloc);
		slept = true;
		while (!w.woken)
			pthread_cond_wait(&w.cond, &q->lock);
		pthread_cond_destroy(&w.cond);
		now = clock_now_ns();
		/* A woken waiter gets to batch, so it makes progress. */
		ioc_set_batching(q, ioc, now);
	}
	if (slept) {
		q->st.alloc_sleeps++;
		stalltrace_wait(idx ? "blk rq alloc sleep (pool 1)" : "blk rq alloc sleep (pool 0)", t0, (uint64_t)rw);
	}
	hist_add(&q->st.alloc_wait[blk_rw_is_sync(rw)], now - t0);
	return rq;
}

void blk_rq_free(struct blk_queue *q, struct request *rq)
{
	if (q->elv.ops->put_request)
		q->elv.ops->put_request(&q->elv, rq);
	blk_wbt_free_locked(q, rq);
	int idx = rq->pool_sync;
	blk_ioc_put(rq->ioc);
	free(rq->buf);
	free(rq);
	pool_freed(q, idx);
}

/* Like the kernel's queue_requests_store. */
void blk_pools_reevaluate(struct blk_queue *q)
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

void blk_queue_pool_state(struct blk_queue *q, int pool, struct blk_pool_state *out)
{
	pthread_mutex_lock(&q->lock);
	const struct blk_pool *p = &q->pool[pool & 1];
	*out = (struct blk_pool_state){
		.count = p->count, .full = p->full, .congested = p->congested, .starved = p->starved,
		.waiters = p->nr_waiters, .wakeups = p->wakeups,
		.congestion_on = congestion_on(q), .congestion_off = congestion_off(q),
		.nr_requests = (int)q->t.nr_requests, .hard_cap = hard_cap(q),
	};
	pthread_mutex_unlock(&q->lock);
}
