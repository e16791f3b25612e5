/* Block layer: bios, requests, request queues, plugging, merging, io contexts.
 *
 * The semantics follow the Linux 2.6.30 block layer (docs/block-layer.md):
 * - sync/async request pools (or read/write under the 2.6.29 preset),
 *   congestion thresholds, full + batching, the 3/2 hard cap, starvation,
 *   one waiter woken per freed request;
 * - plugging: a request into an empty elevator plugs the queue (3 ms timer,
 *   unplug threshold 4, UNPLUG flag, a waiter unplugs) except on
 *   non-rotational queuing devices;
 * - back/front merging (hash of request ends/starts), sync never into async,
 *   results bounded by max_sectors_kb; bios larger than that are split;
 * - per-thread io contexts with ioprio class and level;
 * - barriers (a write or empty bio with FLUSH or FUA): barrier_mode=modern
 *   passes them to the device as one PREFLUSH+FUA command (Linux 2.6.37+,
 *   nostall's own default); drain / drain_fua run 2.6.30's ordered sequence
 *   (the era presets): everything queued before the barrier is dispatched
 *   and completes, later requests wait, then pre-flush, the write, and a
 *   post-flush (drain) or FUA on the write (drain_fua); without a write
 *   cache only the drain.
 * - writeback throttling (wbt_lat_usec, Linux 4.10's blk-wbt; on in the
 *   nostall preset, off in the eras): while sync requests spend longer
 *   than the target at the device, background writes (no SYNC/FLUSH/FUA)
 *   wait before they get a request, so fewer of them sit in the drive's
 *   queue ahead of the sync ones (blk_wbt.c).
 *
 * Threads: callers submit bios (they may sleep waiting for a request); one
 * dispatcher thread per queue moves requests from the elevator to the device
 * (unplug timer, elevator timers, completions); device threads complete.
 * Locking: one mutex per queue protects pools, elevator, plug state and
 * statistics; it is never held while calling into the device or a bio's
 * end_io callback.
 */
#ifndef NOSTALL_BLK_H
#define NOSTALL_BLK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>

#include "../dev/dev.h"
#include "../util/hist.h"

struct blk_queue;
struct blk_ioc;

/* ---- request/bio flags and the named operations ---- */
enum {
	BLK_RW_WRITE = 1u << 0,   /* direction: set = write, clear = read */
	BLK_REQ_SYNC = 1u << 1,   /* someone waits for it: sync pool, CFQ sync queue */
	BLK_REQ_UNPLUG = 1u << 2, /* unplug the queue right after queueing */
	BLK_REQ_NOIDLE = 1u << 3, /* do not idle (anticipate) after it even if sync */
	BLK_REQ_META = 1u << 4,   /* filesystem metadata */
	BLK_REQ_FLUSH = 1u << 5,  /* flush the device cache before this write */
	BLK_REQ_FUA = 1u << 6,    /* this write is durable on completion */
	BLK_REQ_SWRITE = 1u << 7, /* buffer layer only: wait for a locked buffer
				   * instead of skipping it; ignored below */
};

#define BLK_READ 0u
#define BLK_READ_SYNC (BLK_REQ_SYNC | BLK_REQ_UNPLUG)
#define BLK_WRITE BLK_RW_WRITE
#define BLK_WRITE_SYNC_PLUG (BLK_RW_WRITE | BLK_REQ_SYNC | BLK_REQ_NOIDLE)
#define BLK_WRITE_SYNC (BLK_WRITE_SYNC_PLUG | BLK_REQ_UNPLUG)
#define BLK_WRITE_ODIRECT (BLK_RW_WRITE | BLK_REQ_SYNC | BLK_REQ_UNPLUG)
#define BLK_SWRITE (BLK_WRITE | BLK_REQ_SWRITE)
#define BLK_SWRITE_SYNC_PLUG (BLK_WRITE_SYNC_PLUG | BLK_REQ_SWRITE)
#define BLK_SWRITE_SYNC (BLK_WRITE_SYNC | BLK_REQ_SWRITE)

/* A request is sync when it is a read or carries SYNC. */
static inline bool blk_rw_is_sync(unsigned rw)
{
	return !(rw & BLK_RW_WRITE) || (rw & BLK_REQ_SYNC);
}

/* Name of a flag set ("WRITE_SYNC_PLUG", "READ", or "WRITE|SYNC|META"). */
const char *blk_rw_name(unsigned rw, char *buf, size_t len);

/* ---- bio ----
 * The submitter owns the bio and its data; it must stay valid until end_io.
 * A bio with size 0 and BLK_REQ_FLUSH is a pure cache flush. */
struct bio {
	uint64_t sector;  /* 512-byte sectors */
	uint32_t size;    /* bytes, multiple of 512 */
	void *data;
	unsigned rw;      /* BLK_* flags above */
	void (*end_io)(struct bio *bio, int err); /* called once, no queue lock held */
	void *private;
	/* private to blk */
	struct bio *bi_next;
	struct bio *bi_parent; /* split parent */
	int bi_remaining;      /* split children outstanding (on the parent) */
	int bi_error;
	uint64_t bi_submit_ns;
};

/* ---- io contexts (one per thread, like a task's io_context) ---- */
enum blk_ioprio_class {
	BLK_IOPRIO_CLASS_NONE = 0, /* treated as BE at level derived from nice (4) */
	BLK_IOPRIO_CLASS_RT = 1,
	BLK_IOPRIO_CLASS_BE = 2,
	BLK_IOPRIO_CLASS_IDLE = 3,
};
#define BLK_IOPRIO_LEVELS 8

/* The calling thread's io context, created on first use (never NULL unless
 * out of memory). Valid until the thread exits. */
struct blk_ioc *blk_ioc_current(void);
/* Set the calling thread's I/O priority (class RT/BE/IDLE, level 0..7). */
int blk_ioprio_set(int ioprio_class, int level);
/* Parse "RT/4", "BE/7", "IDLE", "be/0". */
int blk_ioprio_parse(const char *s, int *ioprio_class, int *level);
const char *blk_ioprio_class_name(int ioprio_class);
/* Explicit contexts (tests, simulated tasks): refcounted. */
struct blk_ioc *blk_ioc_create(int ioprio_class, int level);
void blk_ioc_get(struct blk_ioc *ioc);
void blk_ioc_put(struct blk_ioc *ioc);
/* References held on ioc right now (a scheduler that keeps per-context
 * state frees it once it holds the last one: the context is gone). */
int blk_ioc_refcount(const struct blk_ioc *ioc);
uint64_t blk_ioc_id(const struct blk_ioc *ioc);
int blk_ioc_class(const struct blk_ioc *ioc);
int blk_ioc_level(const struct blk_ioc *ioc);
/* Make `ioc` the calling thread's context (takes a reference). */
void blk_ioc_attach(struct blk_ioc *ioc);

/* ---- queue ---- */

/* Create a queue on an open device. `opts` is a tunable string (see
 * blk_queue_set_opts), may be NULL. The queue does not own the device. */
int blk_queue_create(struct dev *dev, const char *opts, struct blk_queue **out);
/* Drains (unplugs and waits for all requests), stops the dispatcher, frees. */
void blk_queue_destroy(struct blk_queue *q);
struct dev *blk_queue_dev(const struct blk_queue *q);

/* Tunables by name, sysfs-like: queue ones (nr_requests, max_sectors_kb,
 * scheduler, preset, rq_pools, noidle, ssd_plug, sync_batch_op, barrier_mode,
 * unplug_thresh, unplug_delay_ms, wbt_lat_usec) and those of the current scheduler
 * (slice_idle, ...). Presets: 2.6.29, 2.6.30-rc1, 2.6.30 (the eras) and
 * nostall (the default: 2.6.30's block layer with modern barriers).
 * Unknown names and out of range values fail with a message (err_last()). */
int blk_queue_set(struct blk_queue *q, const char *name, const char *value);
/* "name=value,name=value"; "scheduler=" and "preset=" are applied first so
 * that later items can refine them. Stops at the first error. */
int blk_queue_set_opts(struct blk_queue *q, const char *opts);
int blk_queue_get(struct blk_queue *q, const char *name, char *buf, size_t len);
/* Print every tunable of the queue and its scheduler. */
void blk_queue_print_tunables(struct blk_queue *q, FILE *out);
/* Check an option string without a queue (for early CLI validation): each
 * name must be a queue tunable or a tunable of some scheduler. */
int blk_opts_validate(const char *opts);
/* Is `name` one of the era presets (2.6.29, 2.6.30-rc1, 2.6.30), whose
 * mount defaults are 2009's (barrier=0)? False for "nostall" and unknown
 * names. */
bool blk_preset_is_era(const char *name);
/* The last preset= of an option string (a queue's or a filesystem's mount
 * options) into name (len bytes): true if there is one. Not validated. */
bool blk_opts_preset(const char *opts, char *name, size_t len);

/* The op that upper layers use for a batch of sync writes a caller will wait
 * for (journal commit, fsync_buffers_list) under the current era:
 * BLK_WRITE (2.6.29), BLK_WRITE_SYNC (2.6.30-rc1), BLK_WRITE_SYNC_PLUG (2.6.30). */
unsigned blk_queue_sync_batch_op(struct blk_queue *q);

/* Queue a bio. May sleep for a free request (unplugging first). Returns 0
 * when the bio was accepted (end_io will be called exactly once, with 0 or a
 * negative errno), or a negative errno for an invalid bio (out of range,
 * misaligned, queue dying), in which case end_io is not called. */
int blk_submit_bio(struct blk_queue *q, struct bio *bio);
/* Submit and wait (unplugging), returning the bio's error. */
int blk_submit_bio_wait(struct blk_queue *q, struct bio *bio);
/* Synchronous helper: read or write `len` bytes at byte offset `off`. */
int blk_rw(struct blk_queue *q, unsigned rw, uint64_t off, void *buf, uint32_t len);

/* Kick the queue: dispatch what is plugged now. */
void blk_queue_unplug(struct blk_queue *q);
bool blk_queue_plugged(struct blk_queue *q);
/* Stop/start dispatching to the device (like the kernel's blk_stop_queue):
 * while stopped, requests accumulate in the elevator. For tests and for
 * quiescing. */
void blk_queue_stop(struct blk_queue *q);
void blk_queue_start(struct blk_queue *q);

/* Request pool state (diagnostics and tests). Pool index: with sync/async
 * pools 1 = sync, 0 = async; with the legacy read/write pools 1 = read,
 * 0 = write. */
struct blk_pool_state {
	int count;      /* requests allocated from this pool */
	bool full, congested, starved;
	int waiters;    /* callers sleeping for a request */
	uint64_t wakeups; /* waiters woken by freed requests, ever */
	int congestion_on, congestion_off, nr_requests, hard_cap;
};
void blk_queue_pool_state(struct blk_queue *q, int pool, struct blk_pool_state *out);
/* Requests queued in the elevator, and requests at the device. */
void blk_queue_counts(struct blk_queue *q, unsigned *queued, unsigned *in_flight);

/* Writeback throttling right now (diagnostics and tests). */
struct blk_wbt_state {
	uint64_t lat_usec; /* the target; 0: off */
	int step;          /* scale step: > 0 scaled down, < 0 opened up, 0 default */
	unsigned limit;    /* background writes allowed in the queue (0 when off) */
	unsigned inflight; /* background writes allocated and not yet completed */
	int waiters;       /* submitters waiting for the limit */
};
void blk_queue_wbt_state(struct blk_queue *q, struct blk_wbt_state *out);

/* Waiting on a group of bios, as upper layers wait on buffers. */
struct blk_batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned pending;
	int err; /* first error */
	/* Optional: called for each bio of the batch as it completes (or is
	 * refused), before the batch counts it done; no lock held. */
	void (*bio_done)(struct bio *bio, int err, void *ctx);
	void *bio_done_ctx;
};
void blk_batch_init(struct blk_batch *b);
void blk_batch_destroy(struct blk_batch *b);
/* Submit `bio` as part of the batch (sets its end_io/private). A bio the
 * queue refuses counts as done with that error. Returns blk_submit_bio's
 * result. */
int blk_batch_submit(struct blk_queue *q, struct blk_batch *b, struct bio *bio);
/* Unplug q (a waiter unplugs), then wait for every bio; returns first error. */
int blk_batch_wait(struct blk_queue *q, struct blk_batch *b);

/* ---- statistics ---- */
struct blk_stats {
	uint64_t bios, requests;              /* bios queued, requests allocated */
	uint64_t merges_back, merges_front, merges_rq;
	uint64_t splits;
	uint64_t dispatched, completed, errors;
	uint64_t device_requests[2];          /* dispatched to the device: [0] async, [1] sync */
	uint64_t class_requests[4];           /* dispatched, by the submitter's ioprio class:
					       * [BLK_IOPRIO_CLASS_RT], [..._BE], [..._IDLE] */
	uint64_t plugs, unplugs_flag, unplugs_thresh, unplugs_timer, unplugs_wait, unplugs_alloc;
	uint64_t alloc_sleeps;                /* callers that slept for a request */
	uint64_t disp_wakeups;                /* the dispatcher thread's sleeps that ended */
	uint64_t idle_ns, idle_count;         /* scheduler idling (anticipation) */
	uint64_t barriers;                    /* barrier_mode=drain*: ordered sequences run */
	uint64_t barrier_drained;             /* requests ahead of a barrier (queued or at the
					       * device when it arrived) that completed first */
	struct hist barrier_wait;             /* barrier arrival -> its pre-flush (the drain) */
	uint64_t wbt_waits;                   /* background writes that waited for the wbt limit */
	uint64_t wbt_windows, wbt_scale_down, wbt_scale_up; /* wbt windows ended, limit changes */
	struct hist wbt_wait;                 /* ... how long they waited */
	uint64_t bytes[2];                    /* completed bytes: [0] read, [1] write */
	/* latencies in ns, per pool kind: [0] async, [1] sync */
	struct hist alloc_wait[2];            /* time to get a request */
	struct hist queue_lat[2];             /* queued -> dispatched to the device */
	struct hist service_lat[2];           /* dispatched -> completed */
	struct hist total_lat[2];             /* bio submitted -> completed */
};
/* Snapshot (copy) of the counters. */
void blk_queue_stats_get(struct blk_queue *q, struct blk_stats *out);
void blk_queue_stats_reset(struct blk_queue *q);
void blk_stats_print(const struct blk_stats *s, FILE *out);

#endif
