/* Parsing of "name=value,name=value" option strings and of sizes/numbers.
 * All parsers reject trailing garbage and report the offending text through
 * err_set() (see err.h). */
#ifndef NOSTALL_UTIL_OPTS_H
#define NOSTALL_UTIL_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Called once per item of an option string. `value` is NULL for a bare
 * "name" without '='. Return 0 to go on, a negative errno to stop. */
typedef int (*opts_cb)(void *ctx, const char *name, const char *value);

/* Split `s` at commas (no quoting) and call cb for each non-empty item. */
int opts_parse(const char *s, opts_cb cb, void *ctx);

/* "123", "4K", "16M", "2G", "1T" (binary multiples, case-insensitive, optional
 * trailing "iB"/"B"). Fails with -EINVAL on garbage, -ERANGE on overflow. */
int opts_parse_size(const char *s, uint64_t *out);
/* Plain unsigned decimal (or 0x hex). */
int opts_parse_u64(const char *s, uint64_t *out);
int opts_parse_double(const char *s, double *out);
/* "0"/"1"/"on"/"off"/"yes"/"no"/"true"/"false". */
int opts_parse_bool(const char *s, bool *out);

#endif
