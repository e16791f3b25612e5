/* The list of schedulers the block core can find by name (elevator.h):
 * the one place that names them all. */
#include "sched.h"

#include <stddef.h>

const struct elv_ops *const elv_registry[] = {
	&elv_noop_ops,
	&elv_deadline_ops,
	&elv_cfq_ops,
	NULL,
};
