/* CFQ: helpers exposed for unit tests and diagnostics (not used by blk).
 * All take an elevator running elv_cfq_ops; times are in ns. */
#ifndef NOSTALL_BLK_SCHED_CFQ_H
#define NOSTALL_BLK_SCHED_CFQ_H

#include <stdbool.h>
#include <stdint.h>

#include "sched.h"

/* Slice length for a sync or async queue at priority level prio (0..7) with
 * the current tunables: base + base/5 * (4 - prio), base = slice_sync or
 * slice_async. */
uint64_t cfq_slice_for(const struct elevator *e, bool sync, int prio);
/* Requests an async queue at level prio may dispatch in one slice (when
 * other queues wait): 2 * (slice_async_rq + slice_async_rq * (7 - prio)). */
unsigned cfq_async_maxrq_for(const struct elevator *e, int prio);

/* The active queue: false if none. Otherwise fills (any pointer may be NULL)
 * its ioc id (0 for shared async queues), whether it is a sync queue, and
 * its slice end (0 while the slice has not started: a slice starts at the
 * queue's first completion, as in 2.6.30). */
bool cfq_active_info(const struct elevator *e, uint64_t *ioc_id, bool *sync, uint64_t *slice_end_ns);
/* Is an idle window (anticipation) armed right now? */
bool cfq_idling(const struct elevator *e);
/* Number of cfq queues that exist (sync + async), for leak tests. */
unsigned cfq_nr_queues(const struct elevator *e);

#endif
