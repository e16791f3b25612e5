/* A debugging trace of waits (off unless NOSTALL_FSYNC_TRACE is set in the
 * environment): wait sites record an event (time, thread, what, a value)
 * in one global ring; a caller that saw a slow operation (bench fs's
 * fsync-under-stream: an append + fsync over NOSTALL_FSYNC_TRACE ms, 50 if
 * the variable is empty or not a number) prints the events of its window,
 * every thread's, to stderr. Waits are recorded when they end and lasted
 * at least STALLTRACE_MIN_NS, with their duration; marks (phases) always.
 * The cost when off is one load of a global flag per site. */
#ifndef NOSTALL_UTIL_STALLTRACE_H
#define NOSTALL_UTIL_STALLTRACE_H

#include <stdbool.h>
#include <stdint.h>

#define STALLTRACE_MIN_NS 1000000ull

extern int stalltrace_state; /* 0 unknown, 1 off, 2 on */
bool stalltrace_init(void);

static inline bool stalltrace_on(void)
{
	return stalltrace_state == 2 || (stalltrace_state == 0 && stalltrace_init());
}

/* An event now: `what` a static string, `a` a value (a tid, a count). */
void stalltrace__mark(const char *what, uint64_t a);
/* A wait that started at t0 (clock_now_ns) ended now: recorded when it
 * lasted STALLTRACE_MIN_NS or more, with its duration in us. */
void stalltrace__wait(const char *what, uint64_t t0, uint64_t a);

static inline void stalltrace_mark(const char *what, uint64_t a)
{
	if (stalltrace_on())
		stalltrace__mark(what, a);
}

static inline void stalltrace_wait(const char *what, uint64_t t0, uint64_t a)
{
	if (stalltrace_on())
		stalltrace__wait(what, t0, a);
}

/* A span [t0, t1] (ns) recorded when it lasted min_ns or more. */
void stalltrace__span(const char *what, uint64_t t0, uint64_t t1, uint64_t min_ns, uint64_t a);
static inline void stalltrace_span(const char *what, uint64_t t0, uint64_t t1, uint64_t min_ns, uint64_t a)
{
	if (stalltrace_on())
		stalltrace__span(what, t0, t1, min_ns, a);
}

/* t0 for stalltrace_wait (0 when off: no clock read). */
uint64_t stalltrace__now(void);
static inline uint64_t stalltrace_t0(void)
{
	return stalltrace_on() ? stalltrace__now() : 0;
}

/* The threshold in ns (NOSTALL_FSYNC_TRACE's ms). */
uint64_t stalltrace_threshold_ns(void);
/* Print the events of [t0, t1] to stderr, times relative to t0. */
void stalltrace_dump(const char *title, uint64_t t0, uint64_t t1);

#endif
