#include "elevator.h"

#include <string.h>

static const struct elv_ops *const all_elevators[] = {
	&elv_noop_ops,
	&elv_deadline_ops,
	&elv_cfq_ops,
	NULL,
};

const struct elv_ops *elv_find(const char *name)
{
	for (size_t i = 0; all_elevators[i]; i++)
		if (strcmp(all_elevators[i]->name, name) == 0)
			return all_elevators[i];
	return NULL;
}

const struct elv_ops *const *elv_all(void)
{
	return all_elevators;
}
