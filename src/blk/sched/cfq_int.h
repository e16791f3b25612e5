/* CFQ internals shared by cfq.c (requests, the elevator ops) and
 * cfq_queue.c (cfq queues, the service tree, slices, idling). Private to
 * src/blk/sched. Every function runs under the queue lock (elevator.h) with
 * cd->e->now_ns set by blk. */
#ifndef NOSTALL_BLK_SCHED_CFQ_INT_H
#define NOSTALL_BLK_SCHED_CFQ_INT_H

#include "cfq.h"
#include "../../util/clock.h"

#include <stdbool.h>
#include <stdint.h>

#define CFQ_PRIO_LISTS 8
#define CFQ_SLICE_SCALE 5
#define CFQ_IDLE_DELAY_NS (200 * NS_PER_MS) /* service key spacing of IDLE queues */
#define CFQ_IDLE_GRACE_NS (100 * NS_PER_MS) /* IDLE class waits this long after other I/O */
#define CFQ_MIN_TT_NS (2 * NS_PER_MS)       /* idle window for seeky contexts */
#define CFQ_SEEK_THR 8192ULL                /* sectors: beyond this mean seek a context is seeky */
#define CFQ_SAMPLE_VALID(s) ((s) > 80)

struct cfq_data;

/* Per-context history, as 2.6.30's cfq_io_context: one per io context that
 * submitted to this queue, fed by every request of the process (sync and
 * async) and kept while the context lives, so that a process's think time
 * and seek pattern survive its sync queue. It holds a reference on its
 * blk_ioc; requests and the sync queue hold references on it. */
struct cfq_cic {
	struct list_node node;      /* cfqd->cics */
	struct blk_ioc *ioc;        /* NULL for requests without a context */
	uint64_t ioc_id;
	unsigned refs;              /* requests allocated + the sync queue */
	uint64_t last_end_request;  /* last sync completion */
	uint64_t last_request_pos;  /* end of the last queued request */
	uint64_t ttime_samples, ttime_total, ttime_mean; /* think time, ns */
	uint64_t seek_samples, seek_total, seek_mean;    /* sectors */
};

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

	struct cfq_cic *cic;        /* sync queues: the owner's history */
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
	struct list_node cics;         /* every cfq_cic */
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
	uint64_t last_end_sync;     /* last sync completion (async_ramp) */
	bool any_end_sync;
	uint64_t idle_timer_ns;     /* idle window expiry, 0 = not armed */
	uint64_t idle_start_ns;
};

static inline bool cfqq_class_rt(const struct cfq_queue *q) { return q->ioprio_class == BLK_IOPRIO_CLASS_RT; }
static inline bool cfqq_class_idle(const struct cfq_queue *q) { return q->ioprio_class == BLK_IOPRIO_CLASS_IDLE; }
static inline uint64_t ms_ns(uint64_t ms) { return ms * NS_PER_MS; }

/* ---- cfq_queue.c: priorities and slices ---- */
/* Slice length of a sync or async queue at level prio, in ns. */
int64_t cfq_prio_slice(const struct cfq_data *cd, bool sync, int prio);
/* Requests an async queue at level prio may dispatch in one slice. */
unsigned cfq_prio_to_maxrq(const struct cfq_data *cd, int prio);
/* Has the active queue's slice run out? Never before it started. */
bool cfq_slice_used(const struct cfq_data *cd, const struct cfq_queue *q);
/* Start q's slice now. */
void cfq_set_prio_slice(struct cfq_data *cd, struct cfq_queue *q);

/* ---- cfq_queue.c: queues and the service tree ---- */
/* (Re)insert q in the service tree; add_front puts it first in its class. */
void cfq_service_tree_add(struct cfq_data *cd, struct cfq_queue *q, bool add_front);
/* q got (lost) its first (last) queued request: on (off) the service tree. */
void cfq_add_cfqq_rr(struct cfq_data *cd, struct cfq_queue *q);
void cfq_del_cfqq_rr(struct cfq_data *cd, struct cfq_queue *q);
void cfq_free_queue(struct cfq_data *cd, struct cfq_queue *q);
/* Drop a reference (requests and the active slot hold one each). */
void cfq_put_queue(struct cfq_data *cd, struct cfq_queue *q);
/* The queue a request or bio of `ioc` with sync-ness `sync` goes to, or
 * NULL if it does not exist yet (create = false) or cannot be allocated. */
struct cfq_queue *cfq_get_queue(struct cfq_data *cd, struct blk_ioc *ioc, bool sync, bool create);
/* Follow the context's current priority; re-sort q if it moved. */
void cfq_update_prio(struct cfq_data *cd, struct cfq_queue *q, const struct blk_ioc *ioc);

/* ---- cfq_queue.c: idling, slices, timers ---- */
/* The idle window ends (request arrived, timer fired, slice expired). */
void cfq_idle_end(struct cfq_data *cd);
/* Arm the idle window for the active queue if it is worth waiting. */
void cfq_arm_slice_timer(struct cfq_data *cd);
/* Think time and seek distance of a context, per request (sync or async). */
void cfq_update_history(struct cfq_data *cd, struct cfq_cic *cic, const struct request *rq);
/* Decide from its context's history whether sync queue q is worth idling for. */
void cfq_update_idle_window(struct cfq_data *cd, struct cfq_queue *q, const struct cfq_cic *cic);
/* Is the history of cic seeky (enough samples, mean seek beyond CFQ_SEEK_THR)? */
bool cfq_cic_seeky(const struct cfq_cic *cic);

/* ---- cfq_queue.c: per-context history objects ---- */
/* The history of context ioc (created with create), or NULL. A new one
 * takes a reference on ioc. */
struct cfq_cic *cfq_cic_lookup(struct cfq_data *cd, struct blk_ioc *ioc, bool create);
/* Drop a reference; a history nobody references is freed once its context
 * is gone (only the history still holds it), and every such history is
 * pruned here too. */
void cfq_cic_put(struct cfq_data *cd, struct cfq_cic *cic);
/* Free every history (exit). */
void cfq_cic_free_all(struct cfq_data *cd);
/* End the active queue's slice (timed_out: keep what was left of it). */
void cfq_slice_expired(struct cfq_data *cd, bool timed_out);
/* The queue to dispatch from now, or NULL (none, or waiting). */
struct cfq_queue *cfq_select_queue(struct cfq_data *cd);
/* Run the timers that are due. */
void cfq_tick(struct cfq_data *cd);
/* Set e->kick_ns: when blk must call dispatch() again on its own. */
void cfq_update_kick(struct cfq_data *cd);

#endif
