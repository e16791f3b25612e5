/* CFQ mechanics (see cfq.c for the model): cfq queues and their life
 * cycle, the service tree, priorities and slices, the idle window with the
 * per-context history that decides it, and the timers blk is asked to run.
 * Locking: the queue lock (elevator.h).
 */
#include "cfq_int.h"

#include <stdlib.h>

/* ------------------------------------------------- priorities, slices */

int64_t cfq_prio_slice(const struct cfq_data *cd, bool sync, int prio)
{
	int64_t base = (int64_t)ms_ns(sync ? cd->slice_sync : cd->slice_async);
	return base + base / CFQ_SLICE_SCALE * (4 - prio);
}

unsigned cfq_prio_to_maxrq(const struct cfq_data *cd, int prio)
{
	uint64_t base = cd->slice_async_rq;
	return (unsigned)(2 * (base + base * (CFQ_PRIO_LISTS - 1 - (unsigned)prio)));
}

/* Has the active queue's slice run out? Never before it started. */
bool cfq_slice_used(const struct cfq_data *cd, const struct cfq_queue *q)
{
	if (q->slice_new)
		return false;
	return cd->e->now_ns >= q->slice_end;
}

void cfq_set_prio_slice(struct cfq_data *cd, struct cfq_queue *q)
{
	q->slice_end = cd->e->now_ns + (uint64_t)cfq_prio_slice(cd, q->sync, q->ioprio);
}

/* Class and level of a context; NULL behaves as BE/4. */
static void ioc_prio(const struct blk_ioc *ioc, int *cls, int *level)
{
	*cls = ioc ? blk_ioc_class(ioc) : BLK_IOPRIO_CLASS_BE;
	*level = ioc ? blk_ioc_level(ioc) : 4;
	if (*cls == BLK_IOPRIO_CLASS_IDLE)
		*level = CFQ_PRIO_LISTS - 1;
}

/* ------------------------------------------------------ service tree */

/* Should a go before b in the service tree? */
static bool cfqq_before(const struct cfq_queue *a, const struct cfq_queue *b)
{
	if (cfqq_class_rt(a) != cfqq_class_rt(b))
		return cfqq_class_rt(a);
	if (cfqq_class_idle(a) != cfqq_class_idle(b))
		return !cfqq_class_idle(a);
	return a->rb_key < b->rb_key;
}

void cfq_service_tree_add(struct cfq_data *cd, struct cfq_queue *q, bool add_front)
{
	int64_t key;
	if (cfqq_class_idle(q)) {
		key = CFQ_IDLE_DELAY_NS;
		if (!list_empty(&cd->service_tree)) {
			struct cfq_queue *last = list_entry(cd->service_tree.prev, struct cfq_queue, rr_node);
			if (last != q)
				key += last->rb_key;
		}
	} else if (!add_front) {
		/* 2.6.30 cfq_slice_offset: a queue starts later by what its own
		 * slice falls short of the longest sync slice, once per other
		 * busy queue (async BE/4: 140 ms each, sync BE/4: 80 ms). */
		int64_t off = (int64_t)(cd->busy_queues ? cd->busy_queues - 1 : 0) *
			      (cfq_prio_slice(cd, true, 0) - cfq_prio_slice(cd, q->sync, q->ioprio));
		key = off + (int64_t)cd->e->now_ns + q->slice_resid;
		q->slice_resid = 0;
	} else {
		key = 0;
	}
	if (list_linked(&q->rr_node)) {
		if (key == q->rb_key)
			return;
		list_del(&q->rr_node);
	}
	q->rb_key = key;
	struct list_node *pos;
	list_for_each(pos, &cd->service_tree) {
		if (cfqq_before(q, list_entry(pos, struct cfq_queue, rr_node)))
			break;
	}
	list_add_before(pos, &q->rr_node);
}

void cfq_add_cfqq_rr(struct cfq_data *cd, struct cfq_queue *q)
{
	q->on_rr = true;
	cd->busy_queues++;
	cfq_service_tree_add(cd, q, false);
}

void cfq_del_cfqq_rr(struct cfq_data *cd, struct cfq_queue *q)
{
	q->on_rr = false;
	list_del(&q->rr_node);
	cd->busy_queues--;
}

/* ------------------------------------------------- queue life cycle */

static struct cfq_queue *cfq_alloc_queue(struct cfq_data *cd, bool sync, uint64_t ioc_id, int cls, int level)
{
	struct cfq_queue *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->cfqd = cd;
	q->ioc_id = sync ? ioc_id : 0;
	list_init(&q->rr_node);
	list_init(&q->sort_list);
	list_init(&q->fifo);
	q->sync = sync;
	q->ioprio_class = cls;
	q->ioprio = level;
	q->idle_window = sync && cls != BLK_IOPRIO_CLASS_IDLE;
	list_add_tail(&cd->queues, &q->all_node);
	cd->nr_queues++;
	return q;
}

void cfq_free_queue(struct cfq_data *cd, struct cfq_queue *q)
{
	if (q->cic)
		cfq_cic_put(cd, q->cic);
	list_del(&q->all_node);
	cd->nr_queues--;
	free(q);
}

void cfq_put_queue(struct cfq_data *cd, struct cfq_queue *q)
{
	if (--q->ref > 0)
		return;
	/* No requests (each holds a ref), not active (it holds one): not on
	 * the service tree either. */
	cfq_free_queue(cd, q);
}

static struct cfq_queue *cfq_find_sync(struct cfq_data *cd, uint64_t id)
{
	struct list_node *pos;
	list_for_each(pos, &cd->queues) {
		struct cfq_queue *q = list_entry(pos, struct cfq_queue, all_node);
		if (q->sync && q->ioc_id == id)
			return q;
	}
	return NULL;
}

static struct cfq_queue **cfq_async_slot(struct cfq_data *cd, int cls, int level)
{
	if (cls == BLK_IOPRIO_CLASS_IDLE)
		return &cd->async_idle_cfqq;
	return &cd->async_cfqq[cls == BLK_IOPRIO_CLASS_RT ? 0 : 1][level];
}

/* The queue a request or bio of `ioc` with sync-ness `sync` goes to, or
 * NULL if it does not exist yet (create = false) or cannot be allocated. */
struct cfq_queue *cfq_get_queue(struct cfq_data *cd, struct blk_ioc *ioc, bool sync, bool create)
{
	int cls, level;
	ioc_prio(ioc, &cls, &level);
	if (sync) {
		uint64_t id = ioc ? blk_ioc_id(ioc) : 0;
		struct cfq_queue *q = cfq_find_sync(cd, id);
		if (!q && create) {
			struct cfq_cic *cic = cfq_cic_lookup(cd, ioc, true);
			if (!cic)
				return NULL;
			q = cfq_alloc_queue(cd, true, id, cls, level);
			if (!q) {
				cfq_cic_put(cd, cic);
				return NULL;
			}
			cic->refs++;
			q->cic = cic;
			cfq_cic_put(cd, cic); /* drop the lookup's own */
		}
		return q;
	}
	struct cfq_queue **slot = cfq_async_slot(cd, cls, level);
	if (!*slot && create) {
		*slot = cfq_alloc_queue(cd, false, 0, cls, level);
		if (*slot)
			(*slot)->ref = 1; /* pinned until exit */
	}
	return *slot;
}

/* A sync queue follows its context's current priority (a context may change
 * it with blk_ioprio_set); re-sort if it moved. */
void cfq_update_prio(struct cfq_data *cd, struct cfq_queue *q, const struct blk_ioc *ioc)
{
	if (!q->sync)
		return;
	int cls, level;
	ioc_prio(ioc, &cls, &level);
	if (cls == q->ioprio_class && level == q->ioprio)
		return;
	q->ioprio_class = cls;
	q->ioprio = level;
	if (cls == BLK_IOPRIO_CLASS_IDLE)
		q->idle_window = false;
	if (q->on_rr) {
		list_del(&q->rr_node);
		cfq_service_tree_add(cd, q, false);
	}
}

/* ------------------------------------------------------ idle window */

/* The idle window ends (request arrived, timer fired, slice expired). */
void cfq_idle_end(struct cfq_data *cd)
{
	if (!cd->idle_timer_ns)
		return;
	uint64_t end = cd->e->now_ns < cd->idle_timer_ns ? cd->e->now_ns : cd->idle_timer_ns;
	if (end > cd->idle_start_ns)
		cd->e->idle_ns += end - cd->idle_start_ns;
	cd->idle_timer_ns = 0;
	if (cd->active_queue)
		cd->active_queue->wait_request = false;
}

/* 2.6.30 cfq_arm_slice_timer. */
void cfq_arm_slice_timer(struct cfq_data *cd)
{
	struct elevator *e = cd->e;
	struct cfq_queue *q = cd->active_queue;
	/* A seekless device that queues commands gains nothing from waiting;
	 * a non-queuing SSD still does (sync vs async). */
	if (!e->rotational && e->queuing)
		return;
	if (!cd->slice_idle || !q->idle_window)
		return;
	/* Still requests in the driver: their completion comes first. */
	if (e->in_driver[0] + e->in_driver[1])
		return;
	uint64_t sl = ms_ns(cd->slice_idle);
	/* A seeky context gets only a short grace to submit its next request. */
	if (cfq_cic_seeky(q->cic) && sl > CFQ_MIN_TT_NS)
		sl = CFQ_MIN_TT_NS;
	q->wait_request = true;
	cd->idle_start_ns = e->now_ns;
	cd->idle_timer_ns = e->now_ns + sl;
	e->idle_count++;
}

/* Think time and seek distance of a context, updated per request, sync or
 * async (2.6.30 cfq_update_io_thinktime / cfq_update_io_seektime from
 * cfq_rq_enqueued: decaying averages with weight 7/8, fixed point 256). */
void cfq_update_history(struct cfq_data *cd, struct cfq_cic *cic, const struct request *rq)
{
	uint64_t now = cd->e->now_ns;
	uint64_t elapsed = now > cic->last_end_request ? now - cic->last_end_request : 0;
	uint64_t cap = 2 * ms_ns(cd->slice_idle);
	uint64_t ttime = elapsed < cap ? elapsed : cap;
	cic->ttime_samples = (7 * cic->ttime_samples + 256) / 8;
	cic->ttime_total = (7 * cic->ttime_total + 256 * ttime) / 8;
	cic->ttime_mean = (cic->ttime_total + 128) / cic->ttime_samples;

	uint64_t sdist = rq->sector > cic->last_request_pos ? rq->sector - cic->last_request_pos
							    : cic->last_request_pos - rq->sector;
	if (cic->seek_samples == 0) {
		sdist = 0; /* no previous position yet */
	} else {
		uint64_t lim = cic->seek_mean * 4 + (cic->seek_samples <= 60 ? 2 * 1024 * 1024 : 2 * 1024 * 64);
		if (sdist > lim)
			sdist = lim;
	}
	cic->seek_samples = (7 * cic->seek_samples + 256) / 8;
	cic->seek_total = (7 * cic->seek_total + 256 * sdist) / 8;
	cic->seek_mean = (cic->seek_total + cic->seek_samples / 2) / cic->seek_samples;
	cic->last_request_pos = rq_end(rq);
}

bool cfq_cic_seeky(const struct cfq_cic *cic)
{
	return cic && CFQ_SAMPLE_VALID(cic->seek_samples) && cic->seek_mean > CFQ_SEEK_THR;
}

/* 2.6.30 cfq_update_idle_window: idle for a context whose think time is
 * below slice_idle; never for async or IDLE queues, never with slice_idle
 * 0, never for seeky contexts on a queuing device. */
void cfq_update_idle_window(struct cfq_data *cd, struct cfq_queue *q, const struct cfq_cic *cic)
{
	if (!q->sync || cfqq_class_idle(q) || !cic)
		return;
	bool enable = q->idle_window;
	if (!cd->slice_idle || (cd->e->queuing && cfq_cic_seeky(cic)))
		enable = false;
	else if (CFQ_SAMPLE_VALID(cic->ttime_samples))
		enable = cic->ttime_mean <= ms_ns(cd->slice_idle);
	q->idle_window = enable;
}

/* ------------------------------------------------- context histories */

struct cfq_cic *cfq_cic_lookup(struct cfq_data *cd, struct blk_ioc *ioc, bool create)
{
	uint64_t id = ioc ? blk_ioc_id(ioc) : 0;
	struct list_node *pos;
	list_for_each(pos, &cd->cics) {
		struct cfq_cic *c = list_entry(pos, struct cfq_cic, node);
		if (c->ioc_id == id) {
			if (create)
				c->refs++;
			return c;
		}
	}
	if (!create)
		return NULL;
	struct cfq_cic *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->ioc = ioc;
	c->ioc_id = id;
	c->refs = 1;
	c->last_end_request = cd->e->now_ns;
	if (ioc)
		blk_ioc_get(ioc);
	list_add_tail(&cd->cics, &c->node);
	return c;
}

static void cic_free(struct cfq_cic *c)
{
	list_del(&c->node);
	blk_ioc_put(c->ioc);
	free(c);
}

/* A history is worth keeping while its context may submit again. */
static bool cic_dead(const struct cfq_cic *c)
{
	return !c->refs && (!c->ioc || blk_ioc_refcount(c->ioc) == 1);
}

void cfq_cic_put(struct cfq_data *cd, struct cfq_cic *cic)
{
	if (cic && cic->refs)
		cic->refs--;
	struct list_node *pos, *tmp;
	list_for_each_safe(pos, tmp, &cd->cics) {
		struct cfq_cic *c = list_entry(pos, struct cfq_cic, node);
		if (cic_dead(c))
			cic_free(c);
	}
}

void cfq_cic_free_all(struct cfq_data *cd)
{
	struct list_node *pos, *tmp;
	list_for_each_safe(pos, tmp, &cd->cics)
		cic_free(list_entry(pos, struct cfq_cic, node));
}

/* ---------------------------------------------------- slices */

static void cfq_set_active(struct cfq_data *cd, struct cfq_queue *q)
{
	cfq_idle_end(cd);
	if (q) {
		q->slice_end = 0;
		q->slice_dispatch = 0;
		q->wait_request = false;
		q->must_dispatch = false;
		q->must_alloc_slice = false;
		q->fifo_expire = false;
		q->slice_new = true;
		q->ref++;
	}
	cd->active_queue = q;
}

/* End the active queue's slice; with timed_out, remember what was left of
 * it for its next service key. */
void cfq_slice_expired(struct cfq_data *cd, bool timed_out)
{
	struct cfq_queue *q = cd->active_queue;
	if (!q)
		return;
	cfq_idle_end(cd);
	q->must_dispatch = false;
	q->wait_request = false;
	if (timed_out && !q->slice_new)
		q->slice_resid = (int64_t)q->slice_end - (int64_t)cd->e->now_ns;
	if (q->on_rr)
		cfq_service_tree_add(cd, q, false);
	cd->active_queue = NULL;
	cfq_put_queue(cd, q);
}

/* The first queue of the service tree. An IDLE-class queue is served only
 * after CFQ_IDLE_GRACE without completions from other classes. */
static struct cfq_queue *cfq_get_next_queue(struct cfq_data *cd)
{
	struct list_node *n = list_first(&cd->service_tree);
	if (!n)
		return NULL;
	struct cfq_queue *q = list_entry(n, struct cfq_queue, rr_node);
	if (cfqq_class_idle(q) && cd->any_end_request &&
	    cd->e->now_ns < cd->last_end_request + CFQ_IDLE_GRACE_NS)
		return NULL;
	return q;
}

/* 2.6.30 cfq_select_queue: keep the active queue while its slice lasts and
 * it has requests, or while it waits (idle window, or its own requests in
 * the driver with idling on); otherwise move on. */
struct cfq_queue *cfq_select_queue(struct cfq_data *cd)
{
	struct cfq_queue *q = cd->active_queue;
	if (q) {
		if (cfq_slice_used(cd, q) && !q->must_dispatch)
			goto expire;
		if (!list_empty(&q->sort_list))
			return q;
		if (cd->idle_timer_ns || (q->dispatched && q->idle_window))
			return NULL;
expire:
		cfq_slice_expired(cd, false);
	}
	q = cfq_get_next_queue(cd);
	if (q)
		cfq_set_active(cd, q);
	return q;
}

/* The idle timer fired (2.6.30 cfq_idle_slice_timer). */
static void cfq_idle_timer_fired(struct cfq_data *cd)
{
	cfq_idle_end(cd);
	struct cfq_queue *q = cd->active_queue;
	if (q) {
		if (q->must_dispatch)
			return;
		if (!cfq_slice_used(cd, q)) {
			if (!cd->busy_queues)
				return; /* nobody else waits: stay */
			if (!list_empty(&q->sort_list))
				return;
		}
	}
	cfq_slice_expired(cd, false);
}

/* Run timers that are due on the fake or real clock. */
void cfq_tick(struct cfq_data *cd)
{
	if (cd->idle_timer_ns && cd->e->now_ns >= cd->idle_timer_ns)
		cfq_idle_timer_fired(cd);
}

/* When should blk call dispatch() again on its own? The idle timer, the
 * end of a slice others are waiting for, or the end of the IDLE-class
 * grace. */
void cfq_update_kick(struct cfq_data *cd)
{
	struct elevator *e = cd->e;
	struct cfq_queue *q = cd->active_queue;
	uint64_t kick = 0;
	if (cd->idle_timer_ns) {
		kick = cd->idle_timer_ns;
	} else if (q) {
		if (!q->slice_new && q->slice_end > e->now_ns && cd->busy_queues > 1 &&
		    !list_empty(&q->sort_list))
			kick = q->slice_end;
	} else if (cd->busy_queues) {
		struct cfq_queue *first = list_entry(cd->service_tree.next, struct cfq_queue, rr_node);
		uint64_t grace = cd->last_end_request + CFQ_IDLE_GRACE_NS;
		if (cfqq_class_idle(first) && cd->any_end_request && grace > e->now_ns)
			kick = grace;
	}
	e->kick_ns = kick;
}

