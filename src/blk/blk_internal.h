/* Private to src/blk: the queue structure and what the block core's files
 * share. The core is split by concern:
 *   blk_queue.c     queue life cycle, presets, stop/start
 *   blk_pool.c      request pools: allocation, congestion, batching,
 *                   starvation, waiters
 *   blk_merge.c     merge hashes, bio -> request and request merges
 *   blk_submit.c    bio checks and splitting, queueing a bio, waiting on bios
 *   blk_dispatch.c  plugging, running the queue, the dispatcher thread,
 *                   completion
 *   blk_tunables.c  the tunable table, blk_queue_set/get, option strings
 *   blk_barrier.c   barriers: 2.6.30's drain + pre/post-flush sequence
 *   blk_stats.c     statistics and state snapshots
 *   elevator.c      elevator registry, start/switch, shared sched helpers
 *   blk_ioc.c       io contexts
 * Nothing here may include a scheduler header (see elevator.h).
 *
 * Locking: q->lock protects everything in struct blk_queue below it (pools,
 * waiters, elevator, hashes, plug state, counters, statistics). It is never
 * held across dev_submit() or a bio's end_io(): devices may complete inside
 * dev_submit() (mem:) and end_io may submit new bios. Functions named
 * *_locked, and every blk_rq_* / blk_pool* function below, run with q->lock
 * held.
 */
#ifndef NOSTALL_BLK_INTERNAL_H
#define NOSTALL_BLK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "blk.h"
#include "elevator.h"
#include "../util/clock.h"
#include "../util/list.h"
#include "../util/tunable.h"

struct blk_ioc {
	atomic_int refs;
	uint64_t id;
	atomic_int ioprio_class;
	atomic_int level;
	/* Request allocation batching (protected by the lock of the queue that
	 * made it a batcher; a context batches on one queue at a time). */
	const void *batch_queue;
	int nr_batch_requests;
	uint64_t last_waited_ns;
};

/* barrier_mode (blk.h, "barriers"). */
enum blk_barrier_mode {
	BLK_BARRIER_MODERN = 0,    /* PREFLUSH+FUA in one command, no drain (2.6.37+) */
	BLK_BARRIER_DRAIN = 1,     /* 2.6.30 QUEUE_ORDERED_DRAIN_FLUSH */
	BLK_BARRIER_DRAIN_FUA = 2, /* 2.6.30 QUEUE_ORDERED_DRAIN_FUA */
};

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
	uint64_t single_dispatch;  /* cfq 2.6.30: one request per dispatch, quantum caps a
				    * queue's requests in the driver (4x alone) */
	uint64_t async_ramp;       /* cfq 2.6.32 low_latency async depth ramp (off in
				    * every preset) */
	uint64_t wbt_lat_usec;     /* writeback throttling's sync latency target, 0 = off
				    * (blk_wbt.c; on in the nostall preset only) */
};

/* The table of struct blk_tunables (blk_tunables.c). */
extern const struct tunable_desc blk_queue_tunables[];

/* Writeback throttling's state (blk_wbt.c), under q->lock. */
struct blk_wbt {
	pthread_cond_t cond;      /* throttled submitters wait here */
	int step;                 /* scale step: > 0 scaled down, < 0 opened up */
	unsigned limit;           /* throttled requests allowed in the queue */
	unsigned inflight;        /* throttled requests allocated and not yet freed */
	int waiters;
	uint64_t win_start_ns;    /* the current monitoring window ... */
	unsigned win_sync, win_slow, win_async; /* ... its completions, slow sync ones */
	int unknown;              /* consecutive windows with no completion */
	const struct request *sync_issue_rq; /* a sync request at the device ... */
	uint64_t sync_issue_ns;   /* ... since then (the oldest one tracked) */
};

/* wbt_lat_usec in the nostall preset: the target for rotational and
 * non-rotational devices (docs/block-layer.md, "Writeback throttling"). */
#define BLK_WBT_DEFAULT_ROT_USEC 75000u
#define BLK_WBT_DEFAULT_NONROT_USEC 2000u
#define BLK_WBT_MAX_USEC 10000000u /* 10 s: the tunable's range is 0 .. this */

struct blk_pool {
	int count;
	bool full, congested, starved;
	struct list_node waiters; /* exclusive waiters, FIFO (blk_pool.c) */
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
	unsigned barrier_mode;    /* enum blk_barrier_mode */
	const char *preset;       /* last preset applied, or "custom" */

	struct blk_pool pool[2];
	struct elevator elv;
	bool elv_switching;
	pthread_cond_t switch_cond;
	struct list_node rq_hash_end[RQ_HASH_SIZE];   /* queued requests by end sector */
	struct list_node rq_hash_start[RQ_HASH_SIZE]; /* ... and by start sector */

	bool plugged;
	uint64_t plug_deadline_ns;
	bool disp_asleep;         /* the dispatcher waits on `kick` ... */
	uint64_t disp_wake_ns;    /* ... until then (0: until signalled) */
	bool running;       /* a thread is in blk_queue_run_locked */
	bool rerun;         /* ... and must make another pass */
	bool stopped;
	bool draining;
	bool dying;
	/* Ordered barriers (blk_barrier.c): requests taken out of the
	 * elevator ahead of a barrier, and the barriers, in dispatch order
	 * (linked by q_node); barriers counts those listed or in their
	 * sequence (ord_rq); while it is non-zero the elevator is not asked. */
	struct list_node ord_list;
	unsigned ord_len;
	unsigned ord_barriers;
	struct request *ord_rq;   /* the barrier whose sequence runs */
	bool ord_step_ready;      /* ord_rq's next step may be issued */
	int ord_err;
	unsigned queued;    /* requests inside the elevator */
	unsigned in_flight; /* requests at the device */
	unsigned allocated; /* requests allocated, all pools */
	uint64_t idle_base_ns, idle_base_count; /* elevator idle counters at the last reset */
	struct blk_wbt wbt;
	struct blk_stats st;
};

/* Refresh what the elevator reads from blk before an op is called. */
static inline void blk_elv_sync_state(struct blk_queue *q)
{
	q->elv.now_ns = clock_now_ns();
	q->elv.honour_noidle = q->t.noidle;
	q->elv.single_dispatch = q->t.single_dispatch;
	q->elv.async_ramp = q->t.async_ramp;
}

/* ---- blk_pool.c ---- */
/* Allocate a request for a bio with flags rw, sleeping (and unplugging)
 * while the pool says no. May drop and retake q->lock. */
struct request *blk_rq_alloc_wait(struct blk_queue *q, unsigned rw, struct blk_ioc *ioc);
/* Free a request that left the elevator (completed or merged away). */
void blk_rq_free(struct blk_queue *q, struct request *rq);
/* Re-evaluate pool flags after nr_requests changed; wake waiters that fit. */
void blk_pools_reevaluate(struct blk_queue *q);

/* ---- blk_merge.c ---- */
void blk_rq_hash_add(struct blk_queue *q, struct request *rq);
void blk_rq_hash_del(struct request *rq);
/* Merge bio into a queued request (and that request into its neighbour if
 * they now touch). Returns true if merged. */
bool blk_bio_try_merge(struct blk_queue *q, struct bio *bio, struct blk_ioc *ioc);

/* ---- blk_dispatch.c ---- */
/* Plug the queue (no-op if plugged): dispatching waits for the plug timer,
 * the unplug threshold, an UNPLUG bio or a waiter. wake: tell the
 * dispatcher to arm the plug timer (false when the caller unplugs before
 * it drops q->lock). */
void blk_queue_plug_locked(struct blk_queue *q, uint64_t now, bool wake);
/* Remove the plug (bumping *counter if there was one; counter may be NULL)
 * and run the queue. May drop and retake q->lock. */
void blk_queue_unplug_locked(struct blk_queue *q, uint64_t *counter);
/* A dispatch pass of at most this many requests, with nothing else queued
 * or in flight, marks them DEV_IO_ALONE (queue_run_locked). Two: an
 * ordered commit's data block and log run, which a file: device then
 * writes with two pwrites (2 x ~30 us) instead of two io_uring submissions
 * and their completion hand-offs (~100 us to the next step, perf sched). */
#define BLK_ALONE_MAX 2
/* The queue has work (a completion's): another pass by the thread running
 * it, if one is (a device that completed a command inline, from inside the
 * run, or another thread's run), else the dispatcher is woken. */
void blk_queue_kick_locked(struct blk_queue *q);
/* An elevator timer (elv.kick_ns) is armed: wake the dispatcher if
 * requests wait in the queue and it sleeps past the timer. With nothing
 * queued the timer needs nobody: the next submission or completion runs
 * the elevator's clock (blk_elv_sync_state) and finds it expired. */
void blk_timer_kick_locked(struct blk_queue *q);
/* The dispatcher thread of a queue (started by blk_queue_create). */
void *blk_dispatcher_main(void *arg);

/* Build the device command for a dispatched request (bounce buffer when
 * its bios are not contiguous). Without q->lock. */
int blk_rq_prepare_io(struct request *rq);
/* Count rq as sent to the device (in_flight, statistics). */
void blk_rq_account_dispatch(struct blk_queue *q, struct request *rq);
/* Complete a request at the device (its bios, statistics, the elevator).
 * Without q->lock. */
void blk_rq_done(struct dev_io *io, int err);

/* ---- blk_barrier.c ---- */
/* Is a bio with flags rw a barrier under the queue's barrier_mode? */
bool blk_barrier_bio(const struct blk_queue *q, unsigned rw);
/* rq (just added to the elevator) is a barrier: drain the elevator into
 * q->ord_list ahead of it. */
void blk_barrier_queue_locked(struct blk_queue *q, struct request *rq);
/* Dispatch from the ordered list while barriers are pending: appends to
 * `out` (bumping *n) what may go to the device now: a barrier's next step
 * even when plugged, listed requests unless plugged. Returns true when the
 * elevator must not be asked. */
bool blk_barrier_dispatch_locked(struct blk_queue *q, struct list_node *out, unsigned depth, unsigned *n);
/* Issue rq to the device: its next barrier step, or the request itself.
 * Without q->lock. */
void blk_barrier_submit(struct blk_queue *q, struct request *rq);

/* ---- blk_wbt.c: writeback throttling (the contract is at its top) ---- */
void blk_wbt_init(struct blk_queue *q);
void blk_wbt_exit(struct blk_queue *q);
/* The nostall preset's wbt_lat_usec for this queue's device. */
uint64_t blk_wbt_default_usec(const struct blk_queue *q);
/* wbt_lat_usec changed (or the preset): back to step 0, waiters rechecked. */
void blk_wbt_changed_locked(struct blk_queue *q);
/* Before allocating a request for a bio with flags rw: sleep while the
 * queue holds its limit of throttled requests, then count one more.
 * Returns true when counted: the caller sets rq->wbt_tracked on the
 * request it allocates. May drop and retake q->lock. */
bool blk_wbt_throttle_locked(struct blk_queue *q, unsigned rw);
/* rq went to the device (rq->dispatch_ns set). */
void blk_wbt_issue_locked(struct blk_queue *q, struct request *rq);
/* rq completed at the device at `now` (before it is freed): a latency
 * sample; may end the window and rescale. */
void blk_wbt_done_locked(struct blk_queue *q, struct request *rq, uint64_t now);
/* rq is being freed (completed or merged away): uncount it. */
void blk_wbt_free_locked(struct blk_queue *q, struct request *rq);

/* ---- blk_queue.c ---- */
/* Apply preset `name` (fails on an unknown name, or with -EBUSY when it
 * would change the pools while requests exist). */
int blk_queue_preset_apply(struct blk_queue *q, const char *name);
/* 0 if `name` is a preset, else -EINVAL with a message. */
int blk_preset_check(const char *name);

/* ---- elevator.c ---- */
/* Start `ops` as the queue's elevator (e->data from its init). */
int blk_elv_start(struct blk_queue *q, const struct elv_ops *ops);
/* Drain the queue through the old elevator and switch to `ops`. */
int blk_queue_switch_elevator(struct blk_queue *q, const struct elv_ops *ops);

/* ---- blk_stats.c ---- */
/* Zero the counters and initialise the histograms. */
void blk_stats_clear(struct blk_stats *st);

#endif
