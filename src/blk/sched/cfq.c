/* CFQ, the Completely Fair Queueing scheduler, following the behaviour of
 * Linux 2.6.30 block/cfq-iosched.c (written from its description, see
 * docs/schedulers.md for the rules and for what is simplified).
 *
 * Model:
 * - queues: one sync queue per io context (keyed by blk_ioc_id), created by
 *   set_request and freed when its last reference goes (requests hold one
 *   each, the active queue holds one); async queues shared per (class,
 *   level) for RT and BE plus one for IDLE, pinned until exit;
 * - a service tree (sorted list) of queues with requests: RT before BE
 *   before IDLE, then by key (arrival time + a priority offset + what was
 *   left of the last slice);
 * - one active queue at a time; its slice (base + base/5 * (4 - level))
 *   starts at its first completion; it dispatches up to quantum requests in
 *   flight (4 * quantum when alone), async queues at most 2*slice_async_rq*
 *   (8 - level) requests per slice; async dispatch waits while sync
 *   requests are in the driver; with async_ramp (2.6.32's low_latency, off
 *   in every preset) an async queue may have only 1 + one request per
 *   slice_sync elapsed since the last sync completion in the driver;
 * - requests inside a queue: sorted by sector (elv_sort), chosen by
 *   cfq_choose_req rules (sync, meta, then distance from the head with a
 *   penalised short back seek); a FIFO (elv_fifo, elv_deadline_ns) looked at
 *   once per slice;
 * - idling: after a sync (not NOIDLE, when honoured) completion that empties
 *   the active queue, wait slice_idle for the same context's next request
 *   (idle timer through e->kick_ns);
 * - preemption of the active queue by RT, sync-over-async, meta and "close"
 *   requests.
 *
 * This file: the tunables, choosing requests, requests in and out, the
 * elevator ops and the test hooks; cfq_queue.c: queues, service tree,
 * slices, idling (shared through cfq_int.h).
 *
 * Locking: every op runs under the queue lock (elevator.h); no state is
 * shared between elevators.
 */
#include "cfq_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/* Every cfq tunable is a plain number up to UINT32_MAX. */
#define CFQ_TUNABLE(field, min, def, unit, help) \
	{ #field, TUNABLE_U64, min, UINT32_MAX, def, offsetof(struct cfq_data, field), unit, help }

static const struct tunable_desc cfq_tunables[] = {
	CFQ_TUNABLE(quantum, 1, 4, "", "requests the active queue may have in the driver"),
	CFQ_TUNABLE(fifo_expire_sync, 1, 125, "ms", "sync request age that jumps the sector order"),
	CFQ_TUNABLE(fifo_expire_async, 1, 250, "ms", "async request age that jumps the sector order"),
	CFQ_TUNABLE(back_seek_max, 0, 16384, "KiB", "longest backward seek considered"),
	CFQ_TUNABLE(back_seek_penalty, 1, 2, "", "cost factor of a backward seek"),
	CFQ_TUNABLE(slice_sync, 1, 100, "ms", "base time slice of a sync queue"),
	CFQ_TUNABLE(slice_async, 1, 40, "ms", "base time slice of an async queue"),
	CFQ_TUNABLE(slice_async_rq, 1, 2, "", "base request budget of an async slice"),
	CFQ_TUNABLE(slice_idle, 0, 8, "ms", "idle window after a sync request (0 = never idle)"),
	{ .name = NULL },
};

/* ----------------------------------------------------- request choice */

/* The cost of moving the head from last_position to `sector`: a forward
 * seek its length, a backward one within back_seek_max back_seek_penalty
 * times its length. False (cost 0) for a longer backward seek. */
static bool cfq_seek_cost(const struct cfq_data *cd, uint64_t sector, uint64_t *cost)
{
	uint64_t last = cd->last_position;
	*cost = 0;
	if (sector >= last)
		*cost = sector - last;
	else if (sector + cd->back_seek_max * 2 >= last)
		*cost = (last - sector) * cd->back_seek_penalty;
	else
		return false;
	return true;
}

/* Which of two requests is better to serve next from the head position
 * last_position: sync first, then meta, then the shorter seek where a
 * backward seek within back_seek_max costs back_seek_penalty times its
 * length and a longer one is a last resort. */
static struct request *cfq_choose_req(const struct cfq_data *cd, struct request *r1, struct request *r2)
{
	if (!r1 || r1 == r2)
		return r2;
	if (!r2)
		return r1;
	bool s1 = rq_is_sync(r1), s2 = rq_is_sync(r2);
	if (s1 != s2)
		return s1 ? r1 : r2;
	bool m1 = rq_is_meta(r1), m2 = rq_is_meta(r2);
	if (m1 != m2)
		return m1 ? r1 : r2;

	uint64_t d1, d2;
	bool w1 = !cfq_seek_cost(cd, r1->sector, &d1);
	bool w2 = !cfq_seek_cost(cd, r2->sector, &d2);

	if (!w1 && !w2) {
		if (d1 != d2)
			return d1 < d2 ? r1 : r2;
		return r1->sector >= r2->sector ? r1 : r2;
	}
	if (w1 && w2) /* both far behind: start with the one furthest back */
		return r1->sector <= r2->sector ? r1 : r2;
	return w1 ? r2 : r1;
}

static struct request *sort_entry(struct cfq_queue *q, struct list_node *n)
{
	return n == &q->sort_list ? NULL : list_entry(n, struct request, elv_sort);
}

/* The best request to follow `last` once it leaves the queue: its sector
 * neighbours (wrapping to the first one), compared by cfq_choose_req. */
static struct request *cfq_find_next_rq(struct cfq_data *cd, struct cfq_queue *q, struct request *last)
{
	struct request *prev = sort_entry(q, last->elv_sort.prev);
	struct request *next = sort_entry(q, last->elv_sort.next);
	if (!next) {
		struct request *first = sort_entry(q, q->sort_list.next);
		if (first != last)
			next = first;
	}
	return cfq_choose_req(cd, next, prev);
}

static void cfq_sort_add(struct cfq_queue *q, struct request *rq)
{
	elv_rq_sort_add(&q->sort_list, rq);
}

/* --------------------------------------------------- request in/out */

static void cfq_remove_request(struct cfq_data *cd, struct request *rq)
{
	struct cfq_queue *q = rq->elv_priv;
	if (q->next_rq == rq)
		q->next_rq = cfq_find_next_rq(cd, q, rq);
	list_del(&rq->elv_fifo);
	list_del(&rq->elv_sort);
	q->queued--;
	cd->rq_queued--;
	if (rq_is_meta(rq))
		q->meta_pending--;
	if (q->on_rr && list_empty(&q->sort_list))
		cfq_del_cfqq_rr(cd, q);
}

static struct request *cfq_dispatch_insert(struct cfq_data *cd, struct request *rq)
{
	struct cfq_queue *q = rq->elv_priv;
	cfq_remove_request(cd, rq);
	q->dispatched++;
	cd->last_position = rq_end(rq);
	return rq;
}

/* The FIFO is looked at once per slice: its head if that has expired. */
static struct request *cfq_check_fifo(struct cfq_data *cd, struct cfq_queue *q)
{
	if (q->fifo_expire)
		return NULL;
	q->fifo_expire = true;
	struct list_node *n = list_first(&q->fifo);
	if (!n)
		return NULL;
	struct request *rq = list_entry(n, struct request, elv_fifo);
	return cd->e->now_ns < rq->elv_deadline_ns ? NULL : rq;
}

/* A request "close" to the head, as good as one from the active context
 * (2.6.30 cfq_rq_close): within the active context's mean seek distance.
 * Without enough seek samples nothing is close. */
static bool cfq_rq_close(const struct cfq_data *cd, const struct cfq_queue *active, const struct request *rq)
{
	const struct cfq_cic *cic = active->cic;
	if (!cic || !CFQ_SAMPLE_VALID(cic->seek_samples))
		return false;
	uint64_t d = rq->sector > cd->last_position ? rq->sector - cd->last_position
						    : cd->last_position - rq->sector;
	return d <= cic->seek_mean;
}

/* 2.6.30 cfq_should_preempt (plus the RT rule): may new_q's request rq
 * take the disk from the active queue now? */
static bool cfq_should_preempt(struct cfq_data *cd, struct cfq_queue *new_q, const struct request *rq)
{
	struct cfq_queue *q = cd->active_queue;
	if (!q)
		return false;
	if (cfq_slice_used(cd, q))
		return true;
	if (cfqq_class_idle(new_q))
		return false;
	if (cfqq_class_idle(q))
		return true;
	if (cfqq_class_rt(new_q) && !cfqq_class_rt(q))
		return true;
	if (rq_is_sync(rq) && !q->sync)
		return true;
	if (rq_is_meta(rq) && !q->meta_pending)
		return true;
	if (!q->wait_request)
		return false;
	return cfq_rq_close(cd, q, rq);
}

/* Expire the active queue and put new_q first in line, slice fresh. */
static void cfq_preempt_queue(struct cfq_data *cd, struct cfq_queue *new_q)
{
	cfq_slice_expired(cd, true);
	cfq_service_tree_add(cd, new_q, true);
	new_q->slice_end = 0;
	new_q->slice_new = true;
}

/* ---------------------------------------------------------------- ops */

static int cfq_init(struct elevator *e)
{
	struct cfq_data *cd = elv_data_alloc(e, sizeof *cd);
	if (!cd)
		return -ENOMEM;
	tunable_defaults(cfq_tunables, cd);
	cd->e = e;
	list_init(&cd->queues);
	list_init(&cd->cics);
	list_init(&cd->service_tree);
	return 0;
}

static void cfq_exit(struct elevator *e)
{
	struct cfq_data *cd = e->data;
	cfq_slice_expired(cd, false);
	struct list_node *pos, *tmp;
	list_for_each_safe(pos, tmp, &cd->queues)
		cfq_free_queue(cd, list_entry(pos, struct cfq_queue, all_node));
	cfq_cic_free_all(cd);
	elv_data_free(e);
	e->kick_ns = 0;
}

static int cfq_set_request(struct elevator *e, struct request *rq)
{
	struct cfq_data *cd = e->data;
	struct cfq_cic *cic = cfq_cic_lookup(cd, rq->ioc, true);
	if (!cic)
		return -ENOMEM;
	struct cfq_queue *q = cfq_get_queue(cd, rq->ioc, rq_is_sync(rq), true);
	if (!q) {
		cfq_cic_put(cd, cic);
		return -ENOMEM;
	}
	q->allocated++;
	q->ref++;
	rq->elv_priv = q;
	return 0;
}

static void cfq_put_request(struct elevator *e, struct request *rq)
{
	struct cfq_data *cd = e->data;
	struct cfq_queue *q = rq->elv_priv;
	if (!q)
		return;
	q->allocated--;
	rq->elv_priv = NULL;
	cfq_put_queue(cd, q);
	cfq_cic_put(cd, cfq_cic_lookup(cd, rq->ioc, false));
}

/* 2.6.30 cfq_may_queue: a context the scheduler is idling for may allocate
 * past a full pool, once per slice. (2.6.30's separate must_alloc flag is
 * never set by anyone and is left out.) */
static enum elv_may_queue cfq_may_queue(struct elevator *e, struct blk_ioc *ioc, unsigned rw)
{
	struct cfq_data *cd = e->data;
	cfq_tick(cd);
	struct cfq_queue *q = cfq_get_queue(cd, ioc, blk_rw_is_sync(rw), false);
	if (q && q->wait_request && !q->must_alloc_slice) {
		q->must_alloc_slice = true;
		return ELV_MQUEUE_MUST;
	}
	return ELV_MQUEUE_MAY;
}

static void cfq_add_request(struct elevator *e, struct request *rq)
{
	struct cfq_data *cd = e->data;
	struct cfq_queue *q = rq->elv_priv;
	cfq_tick(cd);
	cfq_update_prio(cd, q, rq->ioc);

	/* sort list, service tree, next request */
	cfq_sort_add(q, rq);
	q->queued++;
	if (!q->on_rr)
		cfq_add_cfqq_rr(cd, q);
	q->next_rq = cfq_choose_req(cd, q->next_rq, rq);

	rq->elv_deadline_ns = e->now_ns + ms_ns(q->sync ? cd->fifo_expire_sync : cd->fifo_expire_async);
	list_add_tail(&q->fifo, &rq->elv_fifo);

	cd->rq_queued++;
	if (rq_is_meta(rq))
		q->meta_pending++;
	/* Every request of a process feeds its context's history (2.6.30
	 * cfq_rq_enqueued); only a sync queue's idle window follows it. */
	struct cfq_cic *cic = cfq_cic_lookup(cd, rq->ioc, false);
	if (cic) {
		cfq_update_history(cd, cic, rq);
		cfq_update_idle_window(cd, q, cic);
	}

	bool kick_now = false;
	if (q == cd->active_queue) {
		/* The request we idled for (2.6.30): remember that it came
		 * (must_dispatch: the slice is not expired under it) but do
		 * not start the queue; plugging and merging decide when it
		 * goes (an UNPLUG bio, the unplug threshold or timer), or the
		 * idle timer, which now kicks instead of expiring. The window
		 * ends when the request is dispatched. */
		if (q->wait_request)
			q->must_dispatch = true;
	} else if (cfq_should_preempt(cd, q, rq)) {
		cfq_preempt_queue(cd, q);
		kick_now = true;
	}
	cfq_update_kick(cd);
	if (kick_now)
		e->kick_ns = e->now_ns;
}

/* 2.6.30 cfq_allow_merge: never a sync bio into an async request, and only
 * into a request of the queue the bio would go to. */
static bool cfq_allow_merge(struct elevator *e, struct request *rq, unsigned rw, struct blk_ioc *ioc)
{
	struct cfq_data *cd = e->data;
	bool sync = blk_rw_is_sync(rw);
	if (sync && !rq_is_sync(rq))
		return false;
	struct cfq_queue *q = cfq_get_queue(cd, ioc, sync, false);
	return q && q == rq->elv_priv;
}

/* A front merge moved rq->sector: re-sort it and redo the next choice. */
static void cfq_merged(struct elevator *e, struct request *rq, enum elv_merge type)
{
	struct cfq_data *cd = e->data;
	struct cfq_queue *q = rq->elv_priv;
	if (type != ELV_MERGE_FRONT)
		return;
	if (q->next_rq == rq)
		q->next_rq = cfq_find_next_rq(cd, q, rq);
	list_del(&rq->elv_sort);
	cfq_sort_add(q, rq);
	q->next_rq = cfq_choose_req(cd, q->next_rq, rq);
}

/* `next` joins rq. If both are in one queue, rq takes the earlier FIFO
 * deadline and that FIFO place (2.6.30 moved rq to next's place by age).
 * next then leaves like a dispatched request, without being counted. */
static void cfq_merge_requests(struct elevator *e, struct request *rq, struct request *next)
{
	struct cfq_data *cd = e->data;
	struct cfq_queue *q = rq->elv_priv;
	if (q == next->elv_priv)
		elv_rq_fifo_inherit(rq, next);
	cfq_remove_request(cd, next);
	/* rq may have absorbed a request in front of it. */
	if (q->next_rq == rq)
		q->next_rq = NULL;
	list_del(&rq->elv_sort);
	cfq_sort_add(q, rq);
	q->next_rq = cfq_choose_req(cd, q->next_rq, rq);
	if (!q->next_rq)
		q->next_rq = rq;
	cfq_update_kick(cd);
}

/* Drain: end the active slice, then empty the queues in service order. */
static struct request *cfq_forced_dispatch(struct cfq_data *cd)
{
	cfq_slice_expired(cd, false);
	struct list_node *n = list_first(&cd->service_tree);
	if (!n)
		return NULL;
	struct cfq_queue *q = list_entry(n, struct cfq_queue, rr_node);
	return cfq_dispatch_insert(cd, q->next_rq);
}

/* async_ramp (2.6.32 cfq_may_dispatch with low_latency): async requests
 * already in the drive are what a sync request dispatched now is served
 * beside (a reordering drive may serve them first), and "no async while
 * sync is in the driver" cannot take back the ones there. For a slice_sync
 * after each sync completion an async queue keeps at most one request in
 * the drive, then one more per slice_sync. Never blocks an async queue with
 * nothing in the drive; its own completions run the queue again. Measured
 * (docs/write-guarded.md): cuts the fsync tail beside a streamer on sim:hdd
 * at no streaming cost, halves the streamer on file: - off by default. */
static bool cfq_async_ramp_allows(const struct cfq_data *cd, const struct cfq_queue *q)
{
	const struct elevator *e = cd->e;
	if (q->sync || !e->async_ramp || !cd->any_end_sync || e->now_ns < cd->last_end_sync)
		return true;
	uint64_t depth = (e->now_ns - cd->last_end_sync) / ms_ns(cd->slice_sync);
	if (!depth && !q->dispatched)
		depth = 1;
	return q->dispatched < depth;
}

/* 2.6.30 cfq_dispatch_requests, one request per call. */
static struct request *cfq_dispatch(struct elevator *e, bool force)
{
	struct cfq_data *cd = e->data;
	struct request *rq = NULL;
	cfq_tick(cd);
	if (!cd->busy_queues)
		goto out;
	if (force) {
		rq = cfq_forced_dispatch(cd);
		goto out;
	}
	struct cfq_queue *q = cfq_select_queue(cd);
	if (!q)
		goto out;
	/* An async queue waits while sync requests are in the driver. */
	if (e->in_driver[1] && !q->sync)
		goto out;
	unsigned max_dispatch = (unsigned)(cd->quantum > UINT32_MAX ? UINT32_MAX : cd->quantum);
	if (cfqq_class_idle(q))
		max_dispatch = 1;
	if (q->dispatched >= max_dispatch) {
		/* IDLE: one at a time; others waiting: no more; alone: up to
		 * four times the quantum. Before 2.6.30's single-request
		 * dispatch (single_dispatch off) a queue alone had no cap:
		 * an async streamer could fill the drive's queue. */
		if (cd->busy_queues > 1)
			goto out;
		if (e->single_dispatch &&
		    (cfqq_class_idle(q) || q->dispatched >= 4 * (uint64_t)max_dispatch))
			goto out;
	}
	if (!cfq_async_ramp_allows(cd, q))
		goto out;
	/* Dispatching ends an idle window the queue's new request left
	 * armed (see cfq_add_request). */
	cfq_idle_end(cd);
	rq = cfq_check_fifo(cd, q);
	if (!rq)
		rq = q->next_rq;
	cfq_dispatch_insert(cd, rq);
	q->slice_dispatch++;
	q->must_dispatch = false;
	/* An async queue that used its request budget, or an IDLE queue after
	 * one request, gives way when others wait. Before single_dispatch the
	 * budget was counted per dispatch round, which moved at most quantum
	 * requests: a budget above quantum (16 at BE/4) never ran out, only
	 * the async slice's time did. */
	uint64_t used = q->slice_dispatch;
	if (!e->single_dispatch && used > max_dispatch)
		used = max_dispatch;
	if (cd->busy_queues > 1 &&
	    ((!q->sync && used >= cfq_prio_to_maxrq(cd, q->ioprio)) || cfqq_class_idle(q))) {
		q->slice_end = e->now_ns + 1;
		cfq_slice_expired(cd, false);
	}
out:
	cfq_update_kick(cd);
	return rq;
}

/* 2.6.30 cfq_completed_request: start the slice on the first completion,
 * expire a used slice, or arm the idle window. */
static void cfq_completed(struct elevator *e, struct request *rq)
{
	struct cfq_data *cd = e->data;
	struct cfq_queue *q = rq->elv_priv;
	if (!q)
		return;
	cfq_tick(cd);
	bool sync = rq_is_sync(rq);
	if (q->dispatched)
		q->dispatched--;
	if (!cfqq_class_idle(q)) {
		cd->last_end_request = e->now_ns;
		cd->any_end_request = true;
	}
	if (sync) {
		cd->last_end_sync = e->now_ns;
		cd->any_end_sync = true;
		struct cfq_cic *cic = cfq_cic_lookup(cd, rq->ioc, false);
		if (cic)
			cic->last_end_request = e->now_ns;
	}
	if (cd->active_queue == q) {
		if (q->slice_new) {
			cfq_set_prio_slice(cd, q);
			q->slice_new = false;
		}
		if (cfq_slice_used(cd, q) || cfqq_class_idle(q))
			cfq_slice_expired(cd, true);
		else if (sync && !(e->honour_noidle && rq_noidle(rq)) && list_empty(&q->sort_list))
			cfq_arm_slice_timer(cd);
	}
	cfq_update_kick(cd);
}

static bool cfq_empty(struct elevator *e)
{
	struct cfq_data *cd = e->data;
	return cd->rq_queued == 0;
}

const struct elv_ops elv_cfq_ops = {
	.name = "cfq",
	.tunables = cfq_tunables,
	.init = cfq_init,
	.exit = cfq_exit,
	.set_request = cfq_set_request,
	.put_request = cfq_put_request,
	.may_queue = cfq_may_queue,
	.add_request = cfq_add_request,
	.allow_merge = cfq_allow_merge,
	.merged = cfq_merged,
	.merge_requests = cfq_merge_requests,
	.dispatch = cfq_dispatch,
	.completed = cfq_completed,
	.empty = cfq_empty,
};

/* ------------------------------------------------------- test hooks */

uint64_t cfq_slice_for(const struct elevator *e, bool sync, int prio)
{
	return (uint64_t)cfq_prio_slice(e->data, sync, prio);
}

unsigned cfq_async_maxrq_for(const struct elevator *e, int prio)
{
	return cfq_prio_to_maxrq(e->data, prio);
}

bool cfq_active_info(const struct elevator *e, uint64_t *ioc_id, bool *sync, uint64_t *slice_end_ns)
{
	const struct cfq_data *cd = e->data;
	const struct cfq_queue *q = cd->active_queue;
	if (!q)
		return false;
	if (ioc_id)
		*ioc_id = q->ioc_id;
	if (sync)
		*sync = q->sync;
	if (slice_end_ns)
		*slice_end_ns = q->slice_new ? 0 : q->slice_end;
	return true;
}

bool cfq_idling(const struct elevator *e)
{
	const struct cfq_data *cd = e->data;
	return cd->idle_timer_ns != 0;
}

unsigned cfq_nr_queues(const struct elevator *e)
{
	const struct cfq_data *cd = e->data;
	return cd->nr_queues;
}

