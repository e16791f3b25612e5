/* file: devices' options and what they probe of the host at open: the
 * option list and its parser, and the block queue's sysfs attributes of a
 * disk. Split from dev_file.c, which keeps the device itself (io_uring
 * submission, completion, durability). */
#include "dev/dev_impl.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define FILE_DEFAULT_DEPTH 32u
#define FILE_MAX_DEPTH 1024u
#define FILE_DEFAULT_FLUSH_EVERY (64ull << 20)

static int file_opt(void *ctx, const char *name, const char *value)
{
	struct dev_file_opts *o = ctx;
	int rc;
	if (!value)
		return err_set(-EINVAL, "file: option '%s' needs a value", name);
	if (strcmp(name, "depth") == 0) {
		rc = opts_parse_u64(value, &o->depth);
		if (rc || o->depth < 1 || o->depth > FILE_MAX_DEPTH)
			return err_set(-EINVAL, "file: bad depth '%s' (1..%u)", value, FILE_MAX_DEPTH);
	} else if (strcmp(name, "direct") == 0) {
		bool b;
		if (opts_parse_bool(value, &b))
			return err_set(-EINVAL, "file: bad direct '%s' (use 0 or 1)", value);
		o->direct = b;
	} else if (strcmp(name, "size") == 0) {
		if (opts_parse_size(value, &o->size) || o->size < DEV_SECTOR_SIZE)
			return err_set(-EINVAL, "file: bad size '%s'", value);
	} else if (strcmp(name, "inline_io") == 0) {
		bool b;
		if (opts_parse_bool(value, &b))
			return err_set(-EINVAL, "file: bad inline_io '%s' (use 0 or 1)", value);
		o->inline_io = b;
	} else if (strcmp(name, "flush_every") == 0) {
		if (opts_parse_size(value, &o->flush_every) ||
		    (o->flush_every && o->flush_every < (1u << 20)))
			return err_set(-EINVAL, "file: bad flush_every '%s' (0, or at least 1M)", value);
	} else {
		return err_set(-EINVAL, "file: unknown option '%s'", name);
	}
	return 0;
}

static bool read_sysfs_u64(const char *path, uint64_t *out)
{
	FILE *fp = fopen(path, "re");
	if (!fp)
		return false;
	unsigned long long v;
	bool ok = fscanf(fp, "%llu", &v) == 1;
	fclose(fp);
	if (ok)
		*out = v;
	return ok;
}

/* queue/<attr> of the disk holding dev_t `rdev` (a partition looks at its parent). */
bool dev_file_queue_attr(dev_t rdev, const char *attr, uint64_t *out)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", major(rdev), minor(rdev), attr);
	if (read_sysfs_u64(path, out))
		return true;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s", major(rdev), minor(rdev), attr);
	return read_sysfs_u64(path, out);
}

const char *const dev_file_opt_names[] = { "depth", "direct", "size", "flush_every", "inline_io", NULL };

int dev_file_opts_parse(const char *optstr, struct dev_file_opts *o)
{
	*o = (struct dev_file_opts){ .depth = FILE_DEFAULT_DEPTH, .direct = -1, .size = 0,
				     .flush_every = FILE_DEFAULT_FLUSH_EVERY, .inline_io = 1 };
	return opts_parse(optstr, file_opt, o);
}
