/* The wait trace (stalltrace.h). One ring under one mutex: the sites are
 * waits of a millisecond or more and marks of rare events, not per-page
 * work, so the lock is cold; the oldest events are overwritten. */
#include "stalltrace.h"

#include "clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING (1u << 16)

struct ev {
	uint64_t ns;
	uint64_t a;
	uint64_t dur;
	const char *what;
	int thread;
};

atomic_int stalltrace_state;
static uint64_t threshold_ns;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ev *ring;
static uint64_t ring_n;
static _Thread_local int thread_id;
static int threads;
static char thread_names[64][16];

bool stalltrace_init(void)
{
	pthread_mutex_lock(&ring_lock);
	if (atomic_load_explicit(&stalltrace_state, memory_order_relaxed) == 0) {
		const char *e = getenv("NOSTALL_FSYNC_TRACE");
		if (e)
			ring = calloc(RING, sizeof *ring); /* no memory: stays off */
		long ms = e ? strtol(e, NULL, 10) : 0;
		threshold_ns = (uint64_t)(ms > 0 ? ms : 50) * 1000000ull;
		atomic_store_explicit(&stalltrace_state, ring ? 2 : 1, memory_order_release);
	}
	pthread_mutex_unlock(&ring_lock);
	return atomic_load_explicit(&stalltrace_state, memory_order_relaxed) == 2;
}

uint64_t stalltrace__now(void)
{
	return clock_now_ns();
}

uint64_t stalltrace_threshold_ns(void)
{
	return stalltrace_on() ? threshold_ns : 0;
}

static void put(const char *what, uint64_t ns, uint64_t dur, uint64_t a)
{
	pthread_mutex_lock(&ring_lock);
	if (!thread_id) {
		thread_id = ++threads;
		if (thread_id < 64)
			pthread_getname_np(pthread_self(), thread_names[thread_id], sizeof thread_names[0]);
	}
	struct ev *e = &ring[ring_n++ % RING];
	e->ns = ns;
	e->dur = dur;
	e->a = a;
	e->what = what;
	e->thread = thread_id;
	pthread_mutex_unlock(&ring_lock);
}

void stalltrace__mark(const char *what, uint64_t a)
{
	put(what, clock_now_ns(), 0, a);
}

void stalltrace__wait(const char *what, uint64_t t0, uint64_t a)
{
	uint64_t now = clock_now_ns();
	if (t0 && now - t0 >= STALLTRACE_MIN_NS)
		put(what, now, now - t0, a);
}

void stalltrace__span(const char *what, uint64_t t0, uint64_t t1, uint64_t min_ns, uint64_t a)
{
	if (t0 && t1 >= t0 && t1 - t0 >= min_ns)
		put(what, t1, t1 - t0, a);
}

void stalltrace_dump(const char *title, uint64_t t0, uint64_t t1)
{
	if (!stalltrace_on())
		return;
	pthread_mutex_lock(&ring_lock);
	fprintf(stderr, "stalltrace: %s: %.2f ms\n", title, (double)(t1 - t0) / 1e6);
	uint64_t first = ring_n > RING ? ring_n - RING : 0;
	for (uint64_t i = first; i < ring_n; i++) {
		const struct ev *e = &ring[i % RING];
		/* Waits that overlap the window (they end in it or after). */
		if (e->ns < t0 || e->ns - e->dur > t1)
			continue;
		const char *tn = e->thread < 64 ? thread_names[e->thread] : "?";
		if (e->dur)
			fprintf(stderr, "  %+9.3f ms  [%2d %-15s] %-28s a=%-8llu waited %.3f ms (from %+.3f)\n",
				(double)(int64_t)(e->ns - t0) / 1e6, e->thread, tn, e->what, (unsigned long long)e->a,
				(double)e->dur / 1e6, (double)(int64_t)(e->ns - e->dur - t0) / 1e6);
		else
			fprintf(stderr, "  %+9.3f ms  [%2d %-15s] %-28s a=%llu\n", (double)(int64_t)(e->ns - t0) / 1e6,
				e->thread, tn, e->what, (unsigned long long)e->a);
	}
	pthread_mutex_unlock(&ring_lock);
}
