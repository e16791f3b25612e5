/* Small helpers of the tools that see only the public API (tools/fs,
 * tools/fuse), in place of the library's internal util/ ones: a monotonic
 * clock and a growing array. libc only. */
#ifndef NOSTALL_TOOLS_TUTIL_H
#define NOSTALL_TOOLS_TUTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOOL_NS_PER_MS 1000000ull

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t tool_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Room for one more element in the growing array *v (the address of the
 * caller's typed pointer) of n elements of elem bytes, capacity *cap,
 * doubled from `first`: 0, or -ENOMEM with the array and *cap unchanged. */
static inline int tool_array_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return 0;
	void *old, *p;
	memcpy(&old, v, sizeof old); /* v points at a typed pointer: no aliasing */
	size_t want = *cap ? *cap * 2 : first;
	p = want > SIZE_MAX / elem ? NULL : realloc(old, want * elem);
	if (!p)
		return -ENOMEM;
	memcpy(v, &p, sizeof p);
	*cap = want;
	return 0;
}

#endif
