/* Monotonic time in nanoseconds and sleeping helpers. */
#ifndef NOSTALL_UTIL_CLOCK_H
#define NOSTALL_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>
#include <pthread.h>

#define NS_PER_US 1000ULL
#define NS_PER_MS 1000000ULL
#define NS_PER_SEC 1000000000ULL

/* CLOCK_MONOTONIC now, in ns. */
uint64_t clock_now_ns(void);
/* Sleep until the monotonic time `deadline_ns` (returns at once if it has passed). */
void clock_sleep_until_ns(uint64_t deadline_ns);
void clock_sleep_ns(uint64_t ns);
/* A condition variable that uses CLOCK_MONOTONIC for timed waits. */
int clock_cond_init(pthread_cond_t *cond);
/* Wait on cond until signalled or until monotonic deadline_ns (0 = no deadline).
 * Returns 0 when signalled (or spuriously woken), ETIMEDOUT on deadline. */
int clock_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mtx, uint64_t deadline_ns);

#endif
