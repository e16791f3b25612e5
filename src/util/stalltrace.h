/* A debugging trace of waits, off unless NOSTALL_FSYNC_TRACE is set in the
 * environment (read once per process). Wait sites record an event (time,
 * thread, what, a value) in one global ring; a caller that saw a slow
 * operation prints the events of its window, every thread's, to stderr:
 * `bench fs --workload fsync-under-stream` does for each append + fsync of
 * NOSTALL_FSYNC_TRACE ms or more (50 when the value is empty or not a
 * positive number). Waits are recorded when they end, with their duration,
 * if they lasted STALLTRACE_MIN_NS or more (spans: their own minimum);
 * marks always. Off, a site costs one relaxed load of a global flag.
 * docs/bench-fs.md ("Rare long fsync stalls") reads a trace. */
#ifndef NOSTALL_UTIL_STALLTRACE_H
#define NOSTALL_UTIL_STALLTRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define STALLTRACE_MIN_NS 1000000ull

extern atomic_int stalltrace_state; /* 0 not read yet, 1 off, 2 on */
bool stalltrace_init(void);

static inline bool stalltrace_on(void)
{
	int s = atomic_load_explicit(&stalltrace_state, memory_order_acquire);
	return s == 2 || (s == 0 && stalltrace_init());
}

void stalltrace__mark(const char *what, uint64_t a);
void stalltrace__wait(const char *what, uint64_t t0, uint64_t a);
void stalltrace__span(const char *what, uint64_t t0, uint64_t t1, uint64_t min_ns, uint64_t a);
uint64_t stalltrace__now(void);

/* An event now: `what` a static string, `a` a value (a tid, flags). */
static inline void stalltrace_mark(const char *what, uint64_t a)
{
	if (stalltrace_on())
		stalltrace__mark(what, a);
}

/* A wait that started at t0 (stalltrace_t0) ended now. */
static inline void stalltrace_wait(const char *what, uint64_t t0, uint64_t a)
{
	if (stalltrace_on())
		stalltrace__wait(what, t0, a);
}

/* A span [t0, t1] (clock_now_ns) of min_ns or more. */
static inline void stalltrace_span(const char *what, uint64_t t0, uint64_t t1, uint64_t min_ns, uint64_t a)
{
	if (stalltrace_on())
		stalltrace__span(what, t0, t1, min_ns, a);
}

/* The start of a wait: now, or 0 when off (no clock read). */
static inline uint64_t stalltrace_t0(void)
{
	return stalltrace_on() ? stalltrace__now() : 0;
}

/* NOSTALL_FSYNC_TRACE's threshold in ns (0 when off). */
uint64_t stalltrace_threshold_ns(void);
/* Print the events of [t0, t1] to stderr, times relative to t0. */
void stalltrace_dump(const char *title, uint64_t t0, uint64_t t1);

#endif
