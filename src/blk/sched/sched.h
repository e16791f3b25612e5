/* The I/O schedulers (policy only, docs/schedulers.md): noop, deadline and
 * cfq. They sit above the block core and depend on it only through
 * ../elevator.h; the block core never includes this header and finds them
 * through elv_registry[] (registry.c). Tests use the ops directly. */
#ifndef NOSTALL_BLK_SCHED_H
#define NOSTALL_BLK_SCHED_H

#include "../elevator.h"

extern const struct elv_ops elv_noop_ops;
extern const struct elv_ops elv_deadline_ops;
extern const struct elv_ops elv_cfq_ops;

#endif
