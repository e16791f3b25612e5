/* Named, range-checked tunables (the sysfs model).
 *
 * A table of descriptors maps names to uint64_t fields of an owner struct.
 * Setting an unknown name is -ENOENT, a value outside [min, max] is -ERANGE,
 * garbage is -EINVAL; all three leave a message in err_last() and never
 * change the field. Nothing is silently ignored or clamped.
 */
#ifndef NOSTALL_UTIL_TUNABLE_H
#define NOSTALL_UTIL_TUNABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum tunable_kind {
	TUNABLE_U64 = 0,  /* plain unsigned number */
	TUNABLE_BOOL = 1, /* 0/1/on/off/yes/no */
};

struct tunable_desc {
	const char *name;
	enum tunable_kind kind;
	uint64_t min, max, def;
	size_t offset;    /* offsetof(owner, uint64_t field) */
	const char *unit; /* "ms", "KiB", "" */
	const char *help;
};

/* Tables end with an entry whose name is NULL. */
const struct tunable_desc *tunable_find(const struct tunable_desc *tab, const char *name);
/* Store every default into base. */
void tunable_defaults(const struct tunable_desc *tab, void *base);
int tunable_set(const struct tunable_desc *tab, void *base, const char *name, const char *value);
/* Parse and range-check a value without storing it. */
int tunable_check(const struct tunable_desc *d, const char *value, uint64_t *out);
int tunable_get(const struct tunable_desc *tab, const void *base, const char *name, uint64_t *out);
/* One line per tunable: "name = value unit [min..max] help". */
void tunable_print(const struct tunable_desc *tab, const void *base, const char *prefix, FILE *out);

#endif
