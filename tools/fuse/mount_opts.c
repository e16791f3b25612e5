/* `nostall mount -o OPTS`: one option string, three consumers (fuse_int.h).
 *   - the daemon's own (writeback_cache, noacl, attr_timeout=, ...);
 *   - the kernel mount's (allow_other, allow_root, auto_unmount, nosuid,
 *     nodev, noexec, ...), passed to fuse_session_new/fuse_session_mount;
 *   - mount(8)'s generic ones that mean nothing here (defaults, auto, user,
 *     _netdev, x-*, ...), accepted and dropped so an fstab line works;
 *   - everything else goes to nostall_mount (cache=, data=, commit=, ...),
 *     which rejects an unknown name with -EINVAL before touching the image.
 * "ro" goes to both the library and the kernel mount. */
#include "fuse_int.h"


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing comma-separated list. */
struct olist {
	char *s;
	size_t len, cap;
};

static int olist_add(struct olist *l, const char *name, const char *value)
{
	size_t need = l->len + strlen(name) + (value ? strlen(value) + 1 : 0) + 2;
	if (need > l->cap) {
		size_t cap = need * 2;
		char *s = realloc(l->s, cap);
		if (!s)
			return nostall_errmsg_set(-ENOMEM, "out of memory");
		l->s = s;
		l->cap = cap;
	}
	l->len += (size_t)sprintf(l->s + l->len, "%s%s%s%s", l->len ? "," : "", name,
				  value ? "=" : "", value ? value : "");
	return 0;
}

struct parse_ctx {
	struct nfuse_opts *o;
	struct olist lib, fuse;
	int allow_other; /* -1 not given */
	bool file_readahead; /* the library's file_readahead= given */
};

static bool name_in(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

static int timeout_parse(const char *name, const char *value, double *out)
{
	if (!value || nostall_parse_double(value, out) < 0 || *out < 0)
		return nostall_errmsg_set(-EINVAL, "mount option %s needs a number of seconds >= 0", name);
	return 0;
}

static int daemon_opt(struct parse_ctx *c, const char *name, const char *value, bool *done)
{
	struct nfuse_opts *o = c->o;
	*done = true;
	if (!strcmp(name, "writeback_cache") && !value)
		o->writeback_cache = true;
	else if (!strcmp(name, "nowriteback_cache") && !value)
		o->writeback_cache = false;
	else if (!strcmp(name, "noacl") && !value)
		o->acl = false;
	else if (!strcmp(name, "acl") && !value)
		o->acl = true;
	else if (!strcmp(name, "debug") && !value)
		o->debug = true;
	else if (!strcmp(name, "close_flush") && !value)
		o->close_flush = true;
	else if (!strcmp(name, "fakeroot") && !value)
		o->fakeroot = true;
	else if (!strcmp(name, "noclose_flush") && !value)
		o->close_flush = false;
	else if (!strcmp(name, "attr_timeout"))
		return timeout_parse(name, value, &o->attr_timeout);
	else if (!strcmp(name, "entry_timeout"))
		return timeout_parse(name, value, &o->entry_timeout);
	else if (!strcmp(name, "negative_timeout"))
		return timeout_parse(name, value, &o->negative_timeout);
	else if (!strcmp(name, "threads")) {
		uint64_t n;
		if (!value || nostall_parse_u64(value, &n) < 0 || n < 1 || n > 256)
			return nostall_errmsg_set(-EINVAL, "mount option threads needs a count 1..256");
		o->threads = (unsigned)n;
	} else if (!strcmp(name, "handoff_us")) {
		uint64_t n;
		if (!value || nostall_parse_u64(value, &n) < 0 || n < 10 || n > 1000000)
			return nostall_errmsg_set(-EINVAL, "mount option handoff_us needs microseconds 10..1000000");
		o->handoff_us = (unsigned)n;
	} else if (!strcmp(name, "readahead")) {
		uint64_t n;
		if (!value || nostall_parse_size(value, &n) < 0 || n > (1ull << 30))
			return nostall_errmsg_set(-EINVAL, "mount option readahead needs a size 0..1G");
		o->read_ahead = n;
		o->read_ahead_set = true;
	} else if (!strcmp(name, "uring") || !strcmp(name, "nouring") || !strcmp(name, "uring_idle")) {
		if (value)
			return nostall_errmsg_set(-EINVAL, "mount option %s takes no value", name);
		o->uring = name[0] == 'u';
		o->uring_idle = !strcmp(name, "uring_idle");
	} else if (!strcmp(name, "spin_us")) {
		uint64_t n;
		if (!value || nostall_parse_u64(value, &n) < 0 || n > 1000)
			return nostall_errmsg_set(-EINVAL, "mount option spin_us needs microseconds 0..1000");
		o->spin_us = (unsigned)n;
	} else
		*done = false;
	return 0;
}

static int opt_cb(void *ctx, const char *name, const char *value)
{
	struct parse_ctx *c = ctx;
	/* mount(8)'s and fstab's, meaningless for a FUSE daemon */
	static const char *const ignored[] = { "rw", "defaults", "auto", "noauto", "user",
					       "nouser", "users", "owner", "group", "_netdev",
					       "nofail", "async", "atime", "loop", NULL };
	/* kernel mount flags and fusermount3 options */
	static const char *const kernel[] = { "nosuid", "suid", "nodev", "dev", "noexec",
					      "exec", "sync", "dirsync", "auto_unmount",
					      "allow_root", NULL };
	bool done;
	int rc = daemon_opt(c, name, value, &done);
	if (rc || done)
		return rc;
	if (!strncmp(name, "x-", 2) || !strcmp(name, "comment"))
		return 0;
	if (!value && name_in(name, ignored))
		return 0;
	if (!value && name_in(name, kernel))
		return olist_add(&c->fuse, name, NULL);
	if (!strcmp(name, "allow_other") && !value) {
		c->allow_other = 1;
		return 0;
	}
	if (!strcmp(name, "noallow_other") && !value) {
		c->allow_other = 0;
		return 0;
	}
	if (!strcmp(name, "default_permissions") && !value)
		return 0; /* always on */
	if (!strcmp(name, "fsname") || !strcmp(name, "subtype"))
		return nostall_errmsg_set(-EINVAL, "mount option %s is set by nostall", name);
	if (!strcmp(name, "ro") && !value) {
		c->o->ro = true;
		c->o->mount_flags |= NOSTALL_MOUNT_RDONLY;
		return olist_add(&c->fuse, "ro", NULL);
	}
	if (!strcmp(name, "file_readahead"))
		c->file_readahead = true;
	return olist_add(&c->lib, name, value); /* nostall_mount judges the rest */
}

int nfuse_opts_parse(const char *opts, bool owner_root, const char *fsname,
		     struct nfuse_opts *o)
{
	*o = (struct nfuse_opts){ .acl = true, .threads = 16, .handoff_us = 1000, .spin_us = 50,
				  .read_ahead = NFUSE_READ_AHEAD_DEFAULT,
				  /* one writer (this daemon, fed by one kernel mount):
				   * see docs/fuse.md, "Caching" */
				  .attr_timeout = 86400, .entry_timeout = 86400,
				  .negative_timeout = 86400 };
	struct parse_ctx c = { .o = o, .allow_other = -1 };
	int rc = nostall_opts_each(opts, opt_cb, &c);
	o->allow_other = c.allow_other < 0 ? owner_root : c.allow_other == 1;
	/* The library's per-file reader behind FUSE: the kernel's readahead
	 * sends READs on several daemon threads at once, which a ring sized
	 * for one caller copying 1 MiB at a time (the library's 1M default,
	 * docs/ext3-read-path.md) cannot keep ahead of: 4M read a 1 GiB stream
	 * through the mount at 1108-1235 MiB/s, 1M at 634-732 (alternating
	 * runs of `bench fs --mount --workload stream`). */
	if (!rc && !c.file_readahead)
		rc = olist_add(&c.lib, "file_readahead", NFUSE_FILE_READAHEAD_DEFAULT);
	if (!rc && o->allow_other)
		rc = olist_add(&c.fuse, "allow_other", NULL);
	/* fakeroot: every requester is root inside the image, so the kernel
	 * must not check access against the owners it stores; FUSE_POSIX_ACL
	 * would turn default_permissions on in the kernel (the library still
	 * stores and inherits ACLs) */
	if (o->fakeroot)
		o->acl = false;
	if (!rc && !o->fakeroot)
		rc = olist_add(&c.fuse, "default_permissions", NULL);
	if (!rc)
		rc = olist_add(&c.fuse, "subtype", "nostall");
	if (!rc) {
		/* commas and backslashes in fsname are escaped for libfuse's parser */
		char esc[2 * 4096 + 1];
		size_t n = 0;
		for (const char *p = fsname; *p && n + 2 < sizeof esc; p++) {
			if (*p == ',' || *p == '\\')
				esc[n++] = '\\';
			esc[n++] = *p;
		}
		esc[n] = 0;
		rc = olist_add(&c.fuse, "fsname", esc);
	}
	if (!rc && !c.lib.s && !(c.lib.s = calloc(1, 1)))
		rc = nostall_errmsg_set(-ENOMEM, "out of memory");
	o->lib = c.lib.s;
	o->fuse = c.fuse.s;
	if (rc)
		nfuse_opts_free(o);
	return rc;
}

void nfuse_opts_free(struct nfuse_opts *o)
{
	free(o->lib);
	free(o->fuse);
	o->lib = o->fuse = NULL;
}

/* ---- device specs ---- */

static char *abs_path(const char *p, size_t len)
{
	char buf[4096];
	if (len >= sizeof buf)
		return NULL;
	memcpy(buf, p, len);
	buf[len] = 0;
	char *r = realpath(buf, NULL);
	return r ? r : strdup(buf);
}

char *nfuse_spec_image(const char *spec)
{
	/* the file under any wrapper: IMG of file:IMG,direct=0, of
	 * fault:file:IMG,op=read, of sim:hdd,file=IMG; a bare path itself */
	struct nostall_dev_info di;
	if (nostall_dev_spec_info(spec, &di) < 0 || !di.file)
		return NULL;
	return abs_path(di.file, di.file_len);
}
