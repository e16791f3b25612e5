/* The elevator (I/O scheduler) contract of the block layer: struct request,
 * the elevator ops table, the helpers shared by the schedulers and the
 * registry (docs/schedulers.md).
 *
 * Layering (the include arrows point down, never back up):
 *   src/blk/sched/  noop.c, deadline.c, cfq.c: policy only. They include this
 *                   header (through sched/sched.h) and nothing else of blk.
 *   src/blk/        the block core (blk_*.c, elevator.c). It includes no
 *                   scheduler header and names no scheduler: it finds them by
 *                   name through elv_find(), which walks elv_registry[]. That
 *                   table is declared here and defined by the scheduler layer
 *                   (sched/registry.c), the only place that lists them.
 *
 * Rules for every op:
 * - called by blk with the queue lock held; must not sleep, must not call
 *   back into blk or the device;
 * - time is e->now_ns, set by blk before each call (tests set it by hand,
 *   which is how the unit tests drive the schedulers on a fake clock);
 * - an elevator never frees a request: blk owns requests, elevators only link
 *   them through the elv_* fields.
 *
 * Flow of a request: set_request -> add_request -> [merged / merge_requests]
 * -> dispatch (returned, now at the device) -> completed -> put_request.
 * Every added request is either dispatched or merged away (merge_requests)
 * before it is put; dispatch(force=true) never holds anything back (drain).
 */
#ifndef NOSTALL_BLK_ELEVATOR_H
#define NOSTALL_BLK_ELEVATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blk.h"
#include "../util/list.h"
#include "../util/tunable.h"

struct request {
	/* Set by blk; elevators read them. sector/nr_sectors change on merges
	 * (followed by a merged() call). */
	uint64_t sector;
	uint32_t nr_sectors;
	unsigned flags;           /* BLK_* flags of the first bio (direction, SYNC,
				   * NOIDLE, META, ...); UNPLUG is not kept */
	struct blk_ioc *ioc;      /* submitter's context (a reference is held) */
	uint64_t alloc_ns;        /* request allocated */
	uint64_t insert_ns;       /* handed to the elevator */
	uint64_t dispatch_ns;     /* sent to the device */

	/* Owned by the elevator while the request is inside it. */
	struct list_node elv_fifo;  /* e.g. deadline/cfq FIFO */
	struct list_node elv_sort;  /* e.g. sector-sorted list */
	uint64_t elv_deadline_ns;   /* FIFO expiry */
	void *elv_priv;             /* e.g. the cfq queue */

	/* Private to blk. */
	struct blk_queue *queue;
	struct list_node q_node;
	struct list_node hash_end, hash_start;
	struct bio *bio, *biotail;
	struct dev_io io;
	bool pool_sync;             /* which pool it was allocated from */
	void *buf;                  /* bounce buffer when bios are not contiguous */
	bool in_elv;
	bool barrier;               /* runs the ordered sequence (blk_barrier.c) */
	bool alone;                 /* dispatched with nothing else queued or in flight */
	bool more;                  /* not the last of its dispatch pass (DEV_IO_MORE) */
	bool wbt_tracked;           /* counted by writeback throttling (blk_wbt.c) */
	int ord_stage;              /* its current step */
	int err;
};

static inline bool rq_is_sync(const struct request *rq) { return blk_rw_is_sync(rq->flags); }
static inline bool rq_is_write(const struct request *rq) { return rq->flags & BLK_RW_WRITE; }
static inline bool rq_is_meta(const struct request *rq) { return rq->flags & BLK_REQ_META; }
static inline bool rq_noidle(const struct request *rq) { return rq->flags & BLK_REQ_NOIDLE; }
static inline uint64_t rq_end(const struct request *rq) { return rq->sector + rq->nr_sectors; }

enum elv_merge {
	ELV_MERGE_BACK = 1,  /* bio appended: rq end moved */
	ELV_MERGE_FRONT = 2, /* bio prepended: rq->sector moved down */
};

enum elv_may_queue {
	ELV_MQUEUE_MAY = 0,  /* normal allocation rules */
	ELV_MQUEUE_NO = 1,   /* (unused by our schedulers) */
	ELV_MQUEUE_MUST = 2, /* allocate even when the pool is full */
};

struct elevator {
	const struct elv_ops *ops;
	void *data;             /* the scheduler's private state */

	/* Maintained by blk, read-only for schedulers. */
	uint64_t now_ns;
	unsigned in_driver[2];  /* requests at the device: [0] async, [1] sync */
	bool rotational;
	bool queuing;           /* device queue depth > 1 (tagged) */
	bool honour_noidle;     /* era toggle: false = 2.6.29/2.6.30-rc1, idle
				 * after every sync request, NOIDLE ignored */
	bool single_dispatch;   /* era toggle (cfq): false = 2.6.29/2.6.30-rc1,
				 * a queue alone in the scheduler has no cap on
				 * its requests in the driver */
	bool async_ramp;        /* cfq: 2.6.32's async depth ramp after a sync
				 * completion (off in every preset) */

	/* Written by the scheduler. */
	uint64_t kick_ns;       /* 0 = nothing; otherwise blk calls dispatch()
				 * again at this time (a time <= now means at
				 * once, even if the queue is plugged) */
	uint64_t idle_ns;       /* statistics: total time spent idling */
	uint64_t idle_count;    /* statistics: idle windows armed */
};

struct elv_ops {
	const char *name;
	/* Tunables live in the scheduler's data as uint64_t fields. */
	const struct tunable_desc *tunables;

	int (*init)(struct elevator *e);       /* allocate e->data, defaults */
	void (*exit)(struct elevator *e);      /* called only when empty */

	/* Attach scheduler state to a new request (cfq: find/create the queue of
	 * rq->ioc). May fail with -ENOMEM. */
	int (*set_request)(struct elevator *e, struct request *rq);
	/* The request is freed (after completion, or after it was merged away). */
	void (*put_request)(struct elevator *e, struct request *rq);
	/* Should an allocation for `ioc` with flags `rw` bypass the full pool? */
	enum elv_may_queue (*may_queue)(struct elevator *e, struct blk_ioc *ioc, unsigned rw);

	void (*add_request)(struct elevator *e, struct request *rq);
	/* May a bio (flags rw, submitter ioc) merge into queued request rq?
	 * blk has already checked direction, sync vs async and size. NULL = yes. */
	bool (*allow_merge)(struct elevator *e, struct request *rq, unsigned rw, struct blk_ioc *ioc);
	/* May a bio be merged at the FRONT of a queued request (bio end ==
	 * rq->sector)? Asked in addition to allow_merge, only for front merges
	 * (deadline's front_merges tunable). NULL = yes. */
	bool (*allow_front_merge)(struct elevator *e);
	/* rq grew by a bio merge. */
	void (*merged)(struct elevator *e, struct request *rq, enum elv_merge type);
	/* `next` was merged into `rq` and must be removed from the scheduler
	 * (it will then be put). */
	void (*merge_requests)(struct elevator *e, struct request *rq, struct request *next);

	/* Remove and return the next request to send to the device, or NULL
	 * (nothing queued, or holding back: idling, async held while sync is in
	 * the driver...). With force, never hold back (drain). */
	struct request *(*dispatch)(struct elevator *e, bool force);
	/* The device completed rq (in_driver already decremented). */
	void (*completed)(struct elevator *e, struct request *rq);
	/* No request queued inside the scheduler. */
	bool (*empty)(struct elevator *e);
};

/* ---- registry ---- */

/* NULL-terminated list of every scheduler, defined by the scheduler layer
 * (src/blk/sched/registry.c); blk reads it only through the two lookups. */
extern const struct elv_ops *const elv_registry[];
/* The scheduler called `name`, or NULL. */
const struct elv_ops *elv_find(const char *name);
/* NULL-terminated list of all schedulers. */
const struct elv_ops *const *elv_all(void);

/* ---- helpers shared by the schedulers ---- */

/* Insert rq into a list sorted by sector and linked through rq->elv_sort;
 * requests with equal sectors keep their arrival order. O(n), n being
 * bounded by nr_requests. */
void elv_rq_sort_add(struct list_node *head, struct request *rq);
/* `next` is being merged into rq: if next expires earlier, rq takes over its
 * FIFO deadline and its place in the FIFO (rq->elv_fifo), so that merging
 * never delays the older I/O. Both must be on the same FIFO. */
void elv_rq_fifo_inherit(struct request *rq, struct request *next);
/* Allocate zeroed scheduler state of `size` bytes into e->data and clear
 * e->kick_ns (the common part of init); NULL when out of memory. */
void *elv_data_alloc(struct elevator *e, size_t size);
/* Free e->data (the whole of exit for schedulers without sub-objects). */
void elv_data_free(struct elevator *e);

#endif
