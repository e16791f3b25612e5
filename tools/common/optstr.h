/* "-o name=value,name,..." option strings and the numbers in them, for the
 * tools that see only the public API (tools/fs, tools/fuse: the FUSE
 * daemon's mount options). libc and nostall.h only: a failure's message
 * is left with nostall_errmsg_set, where nostall_errmsg() reads it. */
#ifndef NOSTALL_TOOLS_OPTSTR_H
#define NOSTALL_TOOLS_OPTSTR_H

#include <stdbool.h>
#include <stdint.h>

/* Called once per item; value is NULL for a bare "name". 0 goes on, a
 * negative errno stops the walk and is returned. */
typedef int (*optstr_cb)(void *ctx, const char *name, const char *value);

/* Split s (NULL: nothing) at commas, without quoting; empty items are
 * skipped, an empty name ("=x") is -EINVAL. */
int optstr_each(const char *s, optstr_cb cb, void *ctx);

/* Whole-string numbers, no sign, no spaces: decimal or 0x hex. */
bool optstr_u64(const char *s, uint64_t *out);
/* Decimal bytes with an optional K, M, G or T (binary; "KiB", "KB" too). */
bool optstr_size(const char *s, uint64_t *out);
bool optstr_double(const char *s, double *out);

#endif
