/* Writeback throttling, the queue tunable wbt_lat_usec (docs/block-layer.md,
 * "Writeback throttling"): Linus' 2009 suggestion to cap the amount of
 * outstanding write data instead of the size of each request, as Linux
 * 4.10 shipped it (blk-wbt). Written from its documented behaviour, not its
 * code; where nostall differs, the docs say why.
 *
 * Contract (the hooks are declared in blk_internal.h, the tunable and the
 * state snapshot in blk.h; all run with q->lock held):
 * - Throttled: writes that carry data and none of SYNC, FLUSH, FUA (the
 *   page cache's background writeback, checkpoint writes). Never throttled:
 *   reads, sync writes, flushes, FUA writes; they are the "sync" side whose
 *   latency is watched.
 * - A throttled bio that does not merge into a queued request waits before
 *   it allocates one while the queue holds `limit` throttled requests
 *   (allocated, queued or at the device); the count drops when such a
 *   request is freed (completed or merged away). The waiter unplugs first,
 *   so what it waits for is on its way to the device.
 * - The limit follows a scale step, re-evaluated once per window (100 ms,
 *   shorter while scaled down: 100 / sqrt(step + 1) ms) at the first
 *   completion after the window's end (which opens the next window; the
 *   whole windows in between saw no completion):
 *     sync latency too high -> step + 1 (the limit halves, down to 1);
 *     sync requests served in time -> step - 1 (the limit doubles);
 *     only async writes completed -> step - 1, past the default up to 3/4
 *       of the device's queue depth (nothing to protect: throughput);
 *     nothing completed for 3 windows -> one step back toward 0.
 *   The limit is 1 + (base - 1) >> step for step > 0 (base: 16 or the
 *   device's queue depth if smaller), 1 + (base - 1) << -step below 0;
 *   never under 1, so async writes always progress. A device without
 *   command queuing keeps 2 at step <= 0 (one waiting while one is served).
 * - "Too high": in the window, at least a quarter of the sync requests
 *   that completed spent longer than wbt_lat_usec at the device (dispatch
 *   to completion), or the oldest sync request still at the device has.
 *   (Linux compares the window's minimum read latency; an fsync's chain is
 *   a mix of a slow request behind the stream and fast ones after it, so
 *   the minimum would nearly always look fine.)
 * - wbt_lat_usec=0 switches it off: no limit, waiters released.
 */
#include "blk.h"
#include "blk_internal.h"

#include <math.h>

#define WBT_WIN_NS (100 * NS_PER_MS) /* the monitoring window at step <= 0 */
#define WBT_BASE_DEPTH 16u           /* the limit at step 0 (Linux's default depth) */
#define WBT_UNKNOWN_WINDOWS 3        /* idle windows before drifting back to step 0 */

/* Is a request with flags rw throttled (a background write)? */
static bool wbt_throttled_rw(unsigned rw)
{
	return (rw & BLK_RW_WRITE) && !(rw & (BLK_REQ_SYNC | BLK_REQ_FLUSH | BLK_REQ_FUA));
}

static bool wbt_sync_rq(const struct request *rq)
{
	return !wbt_throttled_rw(rq->flags);
}

static unsigned wbt_base(const struct blk_queue *q)
{
	unsigned qd = q->geo.queue_depth ? q->geo.queue_depth : 1;
	return qd < WBT_BASE_DEPTH ? qd : WBT_BASE_DEPTH;
}

/* The most the limit opens (step < 0): 3/4 of the queue depth, never
 * under the base. */
static unsigned wbt_top(const struct blk_queue *q)
{
	unsigned qd = q->geo.queue_depth ? q->geo.queue_depth : 1;
	unsigned top = 3 * qd / 4;
	return top > wbt_base(q) ? top : wbt_base(q);
}

static unsigned wbt_depth_at(const struct blk_queue *q, int step)
{
	unsigned qd = q->geo.queue_depth ? q->geo.queue_depth : 1;
	if (qd <= 1)
		return step > 0 ? 1 : 2;
	unsigned base = wbt_base(q);
	if (step > 0)
		return step >= 31 ? 1 : 1 + ((base - 1) >> step);
	uint64_t d = 1 + ((uint64_t)(base - 1) << (-step > 31 ? 31 : -step));
	return d > wbt_top(q) ? wbt_top(q) : (unsigned)d;
}

static uint64_t wbt_window_ns(const struct blk_wbt *w)
{
	if (w->step <= 0)
		return WBT_WIN_NS;
	return (uint64_t)((double)WBT_WIN_NS / sqrt((double)w->step + 1));
}

static void wbt_window_reset(struct blk_wbt *w, uint64_t now)
{
	w->win_start_ns = now;
	w->win_sync = w->win_slow = w->win_async = 0;
}

/* Move to `step` if it changes the limit; wake waiters that now fit. */
static bool wbt_step_to(struct blk_queue *q, int step)
{
	struct blk_wbt *w = &q->wbt;
	unsigned d = wbt_depth_at(q, step);
	if (d == w->limit && step != 0)
		return false;
	bool up = d > w->limit;
	w->step = step;
	w->limit = d;
	if (up)
		pthread_cond_broadcast(&w->cond);
	return true;
}

void blk_wbt_init(struct blk_queue *q)
{
	struct blk_wbt *w = &q->wbt;
	pthread_cond_init(&w->cond, NULL);
	w->step = 0;
	w->limit = wbt_depth_at(q, 0);
	wbt_window_reset(w, clock_now_ns());
}

void blk_wbt_exit(struct blk_queue *q)
{
	pthread_cond_destroy(&q->wbt.cond);
}

uint64_t blk_wbt_default_usec(const struct blk_queue *q)
{
	return q->geo.rotational ? BLK_WBT_DEFAULT_ROT_USEC : BLK_WBT_DEFAULT_NONROT_USEC;
}

void blk_wbt_changed_locked(struct blk_queue *q)
{
	struct blk_wbt *w = &q->wbt;
	w->step = 0;
	w->limit = wbt_depth_at(q, 0);
	w->unknown = 0;
	w->sync_issue_rq = NULL;
	wbt_window_reset(w, clock_now_ns());
	pthread_cond_broadcast(&w->cond);
}

bool blk_wbt_throttle_locked(struct blk_queue *q, unsigned rw)
{
	struct blk_wbt *w = &q->wbt;
	if (!q->t.wbt_lat_usec || !wbt_throttled_rw(rw))
		return false;
	if (w->inflight >= w->limit && !q->dying) {
		uint64_t t0 = clock_now_ns();
		q->st.wbt_waits++;
		w->waiters++;
		while (q->t.wbt_lat_usec && w->inflight >= w->limit && !q->dying) {
			/* What we wait for must be moving toward the device. */
			blk_queue_unplug_locked(q, NULL);
			if (!(q->t.wbt_lat_usec && w->inflight >= w->limit && !q->dying))
				break;
			pthread_cond_wait(&w->cond, &q->lock);
		}
		w->waiters--;
		hist_add(&q->st.wbt_wait, clock_now_ns() - t0);
		if (!q->t.wbt_lat_usec)
			return false; /* switched off meanwhile */
	}
	/* Counted now, under the lock that checked the limit: the request
	 * allocation below may sleep, and others must see this slot taken. */
	w->inflight++;
	return true;
}

void blk_wbt_issue_locked(struct blk_queue *q, struct request *rq)
{
	struct blk_wbt *w = &q->wbt;
	if (q->t.wbt_lat_usec && wbt_sync_rq(rq) && !w->sync_issue_rq) {
		w->sync_issue_rq = rq;
		w->sync_issue_ns = rq->dispatch_ns;
	}
}

/* The end of a window that saw completions: one scale decision (the
 * contract above). */
static void wbt_window_end(struct blk_queue *q, uint64_t now)
{
	struct blk_wbt *w = &q->wbt;
	uint64_t lat = q->t.wbt_lat_usec * NS_PER_US;
	bool stuck = w->sync_issue_rq && now - w->sync_issue_ns > lat;
	q->st.wbt_windows++;
	w->unknown = 0;
	if (stuck || (w->win_sync && 4 * w->win_slow >= w->win_sync)) {
		if (wbt_step_to(q, w->step + 1))
			q->st.wbt_scale_down++;
	} else if (w->limit < wbt_top(q) && wbt_step_to(q, w->step - 1)) {
		q->st.wbt_scale_up++; /* sync in time, or only background writes */
	}
}

/* n whole windows passed with no completion at all: every
 * WBT_UNKNOWN_WINDOWS of them, one step back toward 0. */
static void wbt_idle_windows(struct blk_queue *q, uint64_t n)
{
	struct blk_wbt *w = &q->wbt;
	q->st.wbt_windows += n;
	for (w->unknown += n > 1000 ? 1000 : (int)n; w->unknown >= WBT_UNKNOWN_WINDOWS && w->step;
	     w->unknown -= WBT_UNKNOWN_WINDOWS)
		wbt_step_to(q, w->step > 0 ? w->step - 1 : w->step + 1);
}

void blk_wbt_done_locked(struct blk_queue *q, struct request *rq, uint64_t now)
{
	struct blk_wbt *w = &q->wbt;
	if (rq == w->sync_issue_rq)
		w->sync_issue_rq = NULL;
	if (!q->t.wbt_lat_usec)
		return;
	/* Windows end at the first completion past their end (no timer):
	 * the window that ended is judged, the whole windows after it saw
	 * nothing, and this completion opens the next one. */
	uint64_t win = wbt_window_ns(w);
	if (now - w->win_start_ns >= win) {
		uint64_t n = (now - w->win_start_ns) / win;
		if (w->win_sync || w->win_async) {
			wbt_window_end(q, now);
			n--;
		}
		wbt_idle_windows(q, n);
		wbt_window_reset(w, now);
	}
	if (wbt_sync_rq(rq)) {
		w->win_sync++;
		if (now - rq->dispatch_ns > q->t.wbt_lat_usec * NS_PER_US)
			w->win_slow++;
	} else {
		w->win_async++;
	}
}

void blk_wbt_free_locked(struct blk_queue *q, struct request *rq)
{
	struct blk_wbt *w = &q->wbt;
	if (rq == w->sync_issue_rq)
		w->sync_issue_rq = NULL;
	if (!rq->wbt_tracked)
		return;
	rq->wbt_tracked = false;
	w->inflight--;
	if (w->waiters && w->inflight < w->limit)
		pthread_cond_signal(&w->cond);
}

void blk_queue_wbt_state(struct blk_queue *q, struct blk_wbt_state *out)
{
	pthread_mutex_lock(&q->lock);
	*out = (struct blk_wbt_state){
		.lat_usec = q->t.wbt_lat_usec, .step = q->wbt.step, .limit = q->t.wbt_lat_usec ? q->wbt.limit : 0,
		.inflight = q->wbt.inflight, .waiters = q->wbt.waiters,
	};
	pthread_mutex_unlock(&q->lock);
}
