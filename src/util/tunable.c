#include "tunable.h"
#include "err.h"
#include "opts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

static uint64_t *field(void *base, const struct tunable_desc *d)
{
	return (uint64_t *)((char *)base + d->offset);
}

const struct tunable_desc *tunable_find(const struct tunable_desc *tab, const char *name)
{
	for (; tab && tab->name; tab++)
		if (strcmp(tab->name, name) == 0)
			return tab;
	return NULL;
}

void tunable_defaults(const struct tunable_desc *tab, void *base)
{
	for (; tab && tab->name; tab++)
		*field(base, tab) = tab->def;
}

int tunable_set(const struct tunable_desc *tab, void *base, const char *name, const char *value)
{
	const struct tunable_desc *d = tunable_find(tab, name);
	if (!d)
		return err_set(-ENOENT, "unknown tunable '%s'", name);
	uint64_t v;
	int rc = tunable_check(d, value, &v);
	if (rc)
		return rc;
	*field(base, d) = v;
	return 0;
}

int tunable_check(const struct tunable_desc *d, const char *value, uint64_t *out)
{
	const char *name = d->name;
	if (!value)
		return err_set(-EINVAL, "tunable '%s' needs a value (%s=VALUE)", name, name);
	uint64_t v;
	int rc;
	if (d->kind == TUNABLE_BOOL) {
		/* b is read only when the parse succeeded: a failed parse
		 * leaves it unset (reading it would be undefined). */
		bool b = false;
		rc = opts_parse_bool(value, &b);
		v = rc ? 0 : b;
	} else {
		rc = opts_parse_u64(value, &v);
	}
	if (rc)
		return err_set(rc, "tunable '%s': '%s' is not a valid value", name, value);
	if (v < d->min || v > d->max)
		return err_set(-ERANGE, "tunable '%s': %" PRIu64 " is out of range [%" PRIu64 "..%" PRIu64 "]%s%s",
			       name, v, d->min, d->max, d->unit && *d->unit ? " " : "", d->unit ? d->unit : "");
	*out = v;
	return 0;
}

int tunable_get(const struct tunable_desc *tab, const void *base, const char *name, uint64_t *out)
{
	const struct tunable_desc *d = tunable_find(tab, name);
	if (!d)
		return err_set(-ENOENT, "unknown tunable '%s'", name);
	*out = *field((void *)base, d);
	return 0;
}

void tunable_print(const struct tunable_desc *tab, const void *base, const char *prefix, FILE *out)
{
	for (; tab && tab->name; tab++)
		fprintf(out, "%s%-20s %10" PRIu64 " %-4s [%" PRIu64 "..%" PRIu64 "] %s\n", prefix ? prefix : "",
			tab->name, *field((void *)base, tab), tab->unit ? tab->unit : "", tab->min, tab->max,
			tab->help ? tab->help : "");
}
