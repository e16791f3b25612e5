#include "clock.h"

#include <errno.h>

uint64_t clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_ts(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_SEC), .tv_nsec = (long)(ns % NS_PER_SEC) };
	return ts;
}

void clock_sleep_until_ns(uint64_t deadline_ns)
{
	struct timespec ts = ns_to_ts(deadline_ns);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void clock_sleep_ns(uint64_t ns)
{
	clock_sleep_until_ns(clock_now_ns() + ns);
}

int clock_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int rc = pthread_condattr_init(&attr);
	if (rc)
		return -rc;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return -rc;
}

int clock_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mtx, uint64_t deadline_ns)
{
	if (!deadline_ns)
		return pthread_cond_wait(cond, mtx);
	struct timespec ts = ns_to_ts(deadline_ns);
	return pthread_cond_timedwait(cond, mtx, &ts);
}
