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
 *   requests are in the driver;
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
 * Locking: every op runs under the queue lock (elevator.h); no state is
 * shared between elevators.
 */
#include "cfq.h"

#include "../../util/clock.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#define CFQ_PRIO_LISTS 8
#define CFQ_SLICE_SCALE 5
#define CFQ_IDLE_DELAY_NS (200 * NS_PER_MS) /* service key spacing of IDLE queues */
#define CFQ_IDLE_GRACE_NS (100 * NS_PER_MS) /* IDLE class waits this long after other I/O */
#define CFQ_MIN_TT_NS (2 * NS_PER_MS)       /* idle window for seeky contexts */
#define CFQ_SEEK_THR 8192ULL                /* sectors: beyond this mean seek a context is seeky */
#define CFQ_SAMPLE_VALID(s) ((s) > 80)

struct cfq_data;

struct cfq_queue {
	struct cfq_data *cfqd;
	int ref;
	uint64_t ioc_id;          /* sync queues: owner context; async: 0 */
	struct list_node all_node; /* cfqd->queues */
	struct list_node rr_node;  /* service tree, while on_rr */
	int64_t rb_key;
	struct list_node sort_list; /* requests by sector (rq->elv_sort) */
	struct list_node fifo;      /* requests by arrival (rq->elv_fifo) */
	struct request *next_rq;
	unsigned queued;
	unsigned allocated;
	unsigned meta_pending;
	unsigned dispatched;        /* in the driver */
	uint64_t slice_end;
	int64_t slice_resid;
	unsigned slice_dispatch;
	int ioprio_class;
	int ioprio;                 /* level 0..7 */
	bool sync, on_rr, wait_request, must_dispatch, must_alloc_slice;
	bool fifo_expire, idle_window, slice_new;

	/* Per-context history (the kernel keeps it in the cfq_io_context; here
	 * in the sync queue, so it lasts as long as the queue). */
	uint64_t last_end_request;  /* last sync completion */
	uint64_t last_request_pos;  /* end of the last queued request */
	uint64_t ttime_samples, ttime_total, ttime_mean; /* think time, ns */
	uint64_t seek_samples, seek_total, seek_mean;    /* sectors */
};

struct cfq_data {
	/* Tunables (sysfs names and units, see cfq_tunables). */
	uint64_t quantum;
	uint64_t fifo_expire_sync;  /* ms */
	uint64_t fifo_expire_async; /* ms */
	uint64_t back_seek_max;     /* KiB */
	uint64_t back_seek_penalty;
	uint64_t slice_sync;        /* ms */
	uint64_t slice_async;       /* ms */
	uint64_t slice_async_rq;
	uint64_t slice_idle;        /* ms */

	struct elevator *e;
	struct list_node queues;       /* every cfq_queue */
	struct list_node service_tree; /* busy queues, in service order */
	unsigned nr_queues;
	unsigned busy_queues;
	unsigned rq_queued;
	struct cfq_queue *active_queue;
	struct cfq_queue *async_cfqq[2][CFQ_PRIO_LISTS]; /* [RT, BE][level] */
	struct cfq_queue *async_idle_cfqq;
	uint64_t last_position;     /* end of the last dispatched request */
	uint64_t last_end_request;  /* last completion of a non-IDLE queue */
	bool any_end_request;
	uint64_t idle_timer_ns;     /* idle window expiry, 0 = not armed */
	uint64_t idle_start_ns;
};

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

/* ------------------------------------------------------------ helpers */

static inline bool cfqq_class_rt(const struct cfq_queue *q) { return q->ioprio_class == BLK_IOPRIO_CLASS_RT; }
static inline bool cfqq_class_idle(const struct cfq_queue *q) { return q->ioprio_class == BLK_IOPRIO_CLASS_IDLE; }
static inline uint64_t ms_ns(uint64_t ms) { return ms * NS_PER_MS; }

static int64_t cfq_prio_slice(const struct cfq_data *cd, bool sync, int prio)
{
	int64_t base = (int64_t)ms_ns(sync ? cd->slice_sync : cd->slice_async);
	return base + base / CFQ_SLICE_SCALE * (4 - prio);
}

static unsigned cfq_prio_to_maxrq(const struct cfq_data *cd, int prio)
{
	uint64_t base = cd->slice_async_rq;
	return (unsigned)(2 * (base + base * (CFQ_PRIO_LISTS - 1 - (unsigned)prio)));
}

/* Has the active queue's slice run out? Never before it started. */
static bool cfq_slice_used(const struct cfq_data *cd, const struct cfq_queue *q)
{
	if (q->slice_new)
		return false;
	return cd->e->now_ns >= q->slice_end;
}

static void cfq_set_prio_slice(struct cfq_data *cd, struct cfq_queue *q)
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

static void cfq_service_tree_add(struct cfq_data *cd, struct cfq_queue *q, bool add_front)
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
		/* A rough fairness offset: lower priorities start later. */
		int64_t off = (int64_t)(cd->busy_queues ? cd->busy_queues - 1 : 0) *
			      (cfq_prio_slice(cd, true, 0) - cfq_prio_slice(cd, true, q->ioprio));
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

static void cfq_add_cfqq_rr(struct cfq_data *cd, struct cfq_queue *q)
{
	q->on_rr = true;
	cd->busy_queues++;
	cfq_service_tree_add(cd, q, false);
}

static void cfq_del_cfqq_rr(struct cfq_data *cd, struct cfq_queue *q)
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
	q->last_end_request = cd->e->now_ns;
	list_add_tail(&cd->queues, &q->all_node);
	cd->nr_queues++;
	return q;
}

static void cfq_free_queue(struct cfq_data *cd, struct cfq_queue *q)
{
	list_del(&q->all_node);
	cd->nr_queues--;
	free(q);
}

static void cfq_put_queue(struct cfq_data *cd, struct cfq_queue *q)
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
static struct cfq_queue *cfq_get_queue(struct cfq_data *cd, struct blk_ioc *ioc, bool sync, bool create)
{
	int cls, level;
	ioc_prio(ioc, &cls, &level);
	if (sync) {
		uint64_t id = ioc ? blk_ioc_id(ioc) : 0;
		struct cfq_queue *q = cfq_find_sync(cd, id);
		if (!q && create)
			q = cfq_alloc_queue(cd, true, id, cls, level);
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
static void cfq_update_prio(struct cfq_data *cd, struct cfq_queue *q, const struct blk_ioc *ioc)
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
static void cfq_idle_end(struct cfq_data *cd)
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
static void cfq_arm_slice_timer(struct cfq_data *cd)
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
	if (CFQ_SAMPLE_VALID(q->seek_samples) && q->seek_mean > CFQ_SEEK_THR && sl > CFQ_MIN_TT_NS)
		sl = CFQ_MIN_TT_NS;
	q->wait_request = true;
	cd->idle_start_ns = e->now_ns;
	cd->idle_timer_ns = e->now_ns + sl;
	e->idle_count++;
}

/* Think time and seek distance of a context, updated per sync request
 * (2.6.30 cfq_update_io_thinktime / cfq_update_io_seektime: decaying
 * averages with weight 7/8, fixed point 256). */
static void cfq_update_history(struct cfq_data *cd, struct cfq_queue *q, const struct request *rq)
{
	uint64_t now = cd->e->now_ns;
	uint64_t elapsed = now > q->last_end_request ? now - q->last_end_request : 0;
	uint64_t cap = 2 * ms_ns(cd->slice_idle);
	uint64_t ttime = elapsed < cap ? elapsed : cap;
	q->ttime_samples = (7 * q->ttime_samples + 256) / 8;
	q->ttime_total = (7 * q->ttime_total + 256 * ttime) / 8;
	q->ttime_mean = (q->ttime_total + 128) / q->ttime_samples;

	uint64_t sdist = rq->sector > q->last_request_pos ? rq->sector - q->last_request_pos
							   : q->last_request_pos - rq->sector;
	if (q->seek_samples == 0) {
		sdist = 0; /* no previous position yet */
	} else {
		uint64_t lim = q->seek_mean * 4 + (q->seek_samples <= 60 ? 2 * 1024 * 1024 : 2 * 1024 * 64);
		if (sdist > lim)
			sdist = lim;
	}
	q->seek_samples = (7 * q->seek_samples + 256) / 8;
	q->seek_total = (7 * q->seek_total + 256 * sdist) / 8;
	q->seek_mean = (q->seek_total + q->seek_samples / 2) / q->seek_samples;
}

/* 2.6.30 cfq_update_idle_window: idle for a context whose think time is
 * below slice_idle; never for async or IDLE queues, never with slice_idle
 * 0, never for seeky contexts on a queuing device. */
static void cfq_update_idle_window(struct cfq_data *cd, struct cfq_queue *q)
{
	if (!q->sync || cfqq_class_idle(q))
		return;
	bool enable = q->idle_window;
	bool seeky = CFQ_SAMPLE_VALID(q->seek_samples) && q->seek_mean > CFQ_SEEK_THR;
	if (!cd->slice_idle || (cd->e->queuing && seeky))
		enable = false;
	else if (CFQ_SAMPLE_VALID(q->ttime_samples))
		enable = q->ttime_mean <= ms_ns(cd->slice_idle);
	q->idle_window = enable;
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
static void cfq_slice_expired(struct cfq_data *cd, bool timed_out)
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
static struct cfq_queue *cfq_select_queue(struct cfq_data *cd)
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
static void cfq_tick(struct cfq_data *cd)
{
	if (cd->idle_timer_ns && cd->e->now_ns >= cd->idle_timer_ns)
		cfq_idle_timer_fired(cd);
}

/* When should blk call dispatch() again on its own? The idle timer, the
 * end of a slice others are waiting for, or the end of the IDLE-class
 * grace. */
static void cfq_update_kick(struct cfq_data *cd)
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

/* A request "close" to the head, as good as one from the active context. */
static bool cfq_rq_close(const struct cfq_data *cd, const struct cfq_queue *active, const struct request *rq)
{
	uint64_t sdist = CFQ_SEEK_THR;
	if (active->sync && CFQ_SAMPLE_VALID(active->seek_samples))
		sdist = active->seek_mean;
	uint64_t d = rq->sector > cd->last_position ? rq->sector - cd->last_position
						    : cd->last_position - rq->sector;
	return d <= sdist;
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
	elv_data_free(e);
	e->kick_ns = 0;
}

static int cfq_set_request(struct elevator *e, struct request *rq)
{
	struct cfq_data *cd = e->data;
	struct cfq_queue *q = cfq_get_queue(cd, rq->ioc, rq_is_sync(rq), true);
	if (!q)
		return -ENOMEM;
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
	if (q->sync) {
		cfq_update_history(cd, q, rq);
		cfq_update_idle_window(cd, q);
		q->last_request_pos = rq_end(rq);
	}

	bool kick_now = false;
	if (q == cd->active_queue) {
		/* The request we idled for: stop waiting, dispatch at once. */
		if (q->wait_request) {
			cfq_idle_end(cd);
			q->must_dispatch = true;
			kick_now = true;
		}
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
		 * four times the quantum. */
		if (cfqq_class_idle(q) || cd->busy_queues > 1)
			goto out;
		if (q->dispatched >= 4 * (uint64_t)max_dispatch)
			goto out;
	}
	rq = cfq_check_fifo(cd, q);
	if (!rq)
		rq = q->next_rq;
	cfq_dispatch_insert(cd, rq);
	q->slice_dispatch++;
	q->must_dispatch = false;
	/* An async queue that used its request budget, or an IDLE queue after
	 * one request, gives way when others wait. */
	if (cd->busy_queues > 1 &&
	    ((!q->sync && q->slice_dispatch >= cfq_prio_to_maxrq(cd, q->ioprio)) || cfqq_class_idle(q))) {
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
	if (sync)
		q->last_end_request = e->now_ns;
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
