/* Statistics (struct blk_stats: counters and latency histograms) and state
 * snapshots of a queue. Locking: see blk_internal.h.
 */
#include "blk.h"
#include "blk_internal.h"

#include <inttypes.h>
#include <string.h>

void blk_stats_clear(struct blk_stats *st)
{
	memset(st, 0, sizeof *st);
	for (int i = 0; i < 2; i++) {
		hist_init(&st->alloc_wait[i]);
		hist_init(&st->queue_lat[i]);
		hist_init(&st->service_lat[i]);
		hist_init(&st->total_lat[i]);
	}
	hist_init(&st->barrier_wait);
	hist_init(&st->wbt_wait);
}

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
	blk_stats_clear(&q->st);
	q->idle_base_ns = q->elv.idle_ns;
	q->idle_base_count = q->elv.idle_count;
	pthread_mutex_unlock(&q->lock);
}

void blk_queue_counts(struct blk_queue *q, unsigned *queued, unsigned *in_flight)
{
	pthread_mutex_lock(&q->lock);
	*queued = q->queued + q->ord_len;
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
	if (s->barriers)
		fprintf(out, "barriers %" PRIu64 " (ordered, drain): %" PRIu64 " requests drained ahead of them\n",
			s->barriers, s->barrier_drained);
	if (s->wbt_windows)
		fprintf(out, "wbt: %" PRIu64 " windows, limit down %" PRIu64 " / up %" PRIu64 " times, %" PRIu64
			" background writes waited\n", s->wbt_windows, s->wbt_scale_down, s->wbt_scale_up, s->wbt_waits);
	print_hist(out, "wbt/wait", &s->wbt_wait);
	print_hist(out, "barrier/wait", &s->barrier_wait);
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
