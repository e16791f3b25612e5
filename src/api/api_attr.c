/* Public API: attribute changes by path and by inode number (chmod, chown,
 * utimens, truncate, setattr, inode flags, xattrs), fsync of any inode and sync
 * (include/nostall/nostall.h). Each call resolves its inode, holds one
 * reference for the call and hands the change to ext3 (ext3_setattr,
 * ext3_file_setsize, ext3_xattr_change), which locks and journals. */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* One change applied to a referenced inode. */
typedef int (*attr_fn)(struct nostall_fs *fs, struct ext3_inode *in, const void *ctx);

static int path_apply(struct nostall_fs *fs, const char *path, unsigned flags, const char *what,
		      attr_fn fn, const void *ctx)
{
	int rc = api_check_rw(fs, what);
	struct ext3_inode *in = NULL;
	if (!rc)
		rc = api_path_inode(fs, path, flags, &in);
	if (rc)
		return rc;
	rc = fn(fs, in, ctx);
	ext3_iput(in);
	return rc;
}

static int ino_apply(struct nostall_fs *fs, uint64_t ino, const char *what, attr_fn fn,
		     const void *ctx)
{
	int rc = api_check_rw(fs, what);
	struct ext3_inode *in = NULL;
	if (!rc)
		rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	rc = fn(fs, in, ctx);
	ext3_iput(in);
	return rc;
}

static void now(struct nostall_timespec *t)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	t->sec = ts.tv_sec;
	t->nsec = (uint32_t)ts.tv_nsec;
}

/* ---- setattr ---- */

static int size_check(struct ext3_inode *in)
{
	uint16_t t = api_type(in);
	if (t == EXT3_S_IFDIR)
		return err_set(-EISDIR, "truncate: inode %u is a directory", ext3_inode_ino(in));
	if (t != EXT3_S_IFREG)
		return err_set(-EINVAL, "truncate: inode %u is not a regular file", ext3_inode_ino(in));
	return 0;
}

/* Internal setattr bit: a chown, which always passes both ids (the missing
 * one read from the inode): chown_common clears a non-directory's set-id
 * bits even when both ids are -1, and ext3_setattr clears them on an id
 * change. */
#define API_SET_OWNER 0x80000000u

/* setattr_prepare's permission rules with the current credentials. */
static int setattr_may(struct nostall_fs *fs, struct ext3_inode *in, const struct ext3_setattr *sa)
{
	int rc = 0;
	if (sa->valid & EXT3_SET_SIZE)
		rc = ext3_permission(in, EXT3_MAY_WRITE);
	if (!rc && (sa->valid & (EXT3_SET_UID | EXT3_SET_GID)))
		rc = api_may_chown(fs, in, (sa->valid & EXT3_SET_UID) ? sa->uid : (uint32_t)-1,
				   (sa->valid & EXT3_SET_GID) ? sa->gid : (uint32_t)-1);
	bool times = sa->valid & (EXT3_SET_ATIME | EXT3_SET_MTIME);
	bool owner_needed = (sa->valid & (EXT3_SET_MODE | EXT3_SET_CTIME)) ||
			    (times && !(sa->valid & EXT3_SET_TIMES_NOW));
	if (!rc && (owner_needed || times) && !api_owner_or_capable(fs, in)) {
		/* times set to now: the owner, or anyone who may write */
		if (owner_needed)
			rc = err_set(-EPERM, "inode %u: not the owner", ext3_inode_ino(in));
		else
			rc = ext3_permission(in, EXT3_MAY_WRITE);
	}
	return rc;
}

static int setattr_fn(struct nostall_fs *fs, struct ext3_inode *in, const void *ctx)
{
	struct ext3_setattr sa = *(const struct ext3_setattr *)ctx;
	if (sa.valid & EXT3_SET_SIZE) {
		int rc = size_check(in);
		if (rc)
			return rc;
	}
	int rc = setattr_may(fs, in, &sa);
	if (rc)
		return rc;
	if (sa.valid & (API_SET_OWNER | EXT3_SET_UID | EXT3_SET_GID)) {
		struct ext3_inode_attr a;
		ext3_inode_attr_get(in, &a);
		if (!(sa.valid & EXT3_SET_UID))
			sa.uid = a.uid;
		if (!(sa.valid & EXT3_SET_GID))
			sa.gid = a.gid;
		sa.valid = (sa.valid & ~API_SET_OWNER) | EXT3_SET_UID | EXT3_SET_GID;
	}
	rc = ext3_setattr(in, &sa);
	/* chmod rewrites the access ACL's owner, mask and other entries
	 * (ext3_acl_chmod, after the mode as in Linux's ext3_setattr) */
	if (!rc && (sa.valid & EXT3_SET_MODE))
		rc = ext3_acl_chmod(in);
	return rc;
}

int nostall_chmod(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode)
{
	struct ext3_setattr sa = { .valid = EXT3_SET_MODE, .mode = (uint16_t)(mode & 07777) };
	return path_apply(fs, path, flags, "chmod", setattr_fn, &sa);
}

int nostall_chown(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t uid,
		  uint32_t gid)
{
	struct ext3_setattr sa = { .valid = API_SET_OWNER, .uid = uid, .gid = gid };
	if (uid != (uint32_t)-1)
		sa.valid |= EXT3_SET_UID;
	if (gid != (uint32_t)-1)
		sa.valid |= EXT3_SET_GID;
	return path_apply(fs, path, flags, "chown", setattr_fn, &sa);
}

/* One utimensat time into sa: NOW, OMIT or the value. */
static void time_set(const struct nostall_timespec *t, unsigned bit, int64_t *sec, uint32_t *nsec,
		     unsigned *valid)
{
	struct nostall_timespec v = *t;
	if (v.nsec == NOSTALL_UTIME_OMIT)
		return;
	if (v.nsec == NOSTALL_UTIME_NOW)
		now(&v);
	*sec = v.sec;
	*nsec = v.nsec;
	*valid |= bit;
}

int nostall_utimens(struct nostall_fs *fs, const char *path, unsigned flags,
		    const struct nostall_timespec ts[2])
{
	static const struct nostall_timespec both_now[2] = { { 0, NOSTALL_UTIME_NOW },
							     { 0, NOSTALL_UTIME_NOW } };
	if (!ts)
		ts = both_now;
	for (int i = 0; i < 2; i++)
		if (ts[i].nsec >= 1000000000u && ts[i].nsec != NOSTALL_UTIME_NOW &&
		    ts[i].nsec != NOSTALL_UTIME_OMIT)
			return err_set(-EINVAL, "utimens: nanoseconds %u out of range", ts[i].nsec);
	struct ext3_setattr sa = { 0 };
	time_set(&ts[0], EXT3_SET_ATIME, &sa.atime, &sa.atime_ns, &sa.valid);
	time_set(&ts[1], EXT3_SET_MTIME, &sa.mtime, &sa.mtime_ns, &sa.valid);
	if ((ts[0].nsec == NOSTALL_UTIME_NOW || ts[0].nsec == NOSTALL_UTIME_OMIT) &&
	    (ts[1].nsec == NOSTALL_UTIME_NOW || ts[1].nsec == NOSTALL_UTIME_OMIT) && sa.valid)
		sa.valid |= EXT3_SET_TIMES_NOW;
	if (!sa.valid) { /* both omitted: nothing changes, not even ctime */
		struct ext3_inode *in;
		int rc = api_path_inode(fs, path, flags, &in);
		ext3_iput(in);
		return rc;
	}
	return path_apply(fs, path, flags, "utimens", setattr_fn, &sa);
}

int nostall_truncate(struct nostall_fs *fs, const char *path, uint64_t size)
{
	struct ext3_setattr sa = { .valid = EXT3_SET_SIZE, .size = size };
	return path_apply(fs, path, 0, "truncate", setattr_fn, &sa);
}

int nostall_setattr_ino(struct nostall_fs *fs, uint64_t ino, const struct nostall_setattr *s,
			struct nostall_stat *st)
{
	static const struct {
		unsigned ns, e3;
	} bits[] = {
		{ NOSTALL_SET_MODE, EXT3_SET_MODE },   { NOSTALL_SET_UID, EXT3_SET_UID },
		{ NOSTALL_SET_GID, EXT3_SET_GID },     { NOSTALL_SET_SIZE, EXT3_SET_SIZE },
		{ NOSTALL_SET_ATIME, EXT3_SET_ATIME }, { NOSTALL_SET_MTIME, EXT3_SET_MTIME },
		{ NOSTALL_SET_CTIME, EXT3_SET_CTIME },
	};
	struct ext3_setattr sa = { .mode = (uint16_t)(s->mode & 07777), .uid = s->uid,
				   .gid = s->gid, .size = s->size,
				   .atime = s->atime.sec, .atime_ns = s->atime.nsec,
				   .mtime = s->mtime.sec, .mtime_ns = s->mtime.nsec,
				   .ctime = s->ctime.sec, .ctime_ns = s->ctime.nsec };
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (s->valid & bits[i].ns)
			sa.valid |= bits[i].e3;
	struct nostall_timespec t = { 0, NOSTALL_UTIME_NOW };
	if (s->valid & NOSTALL_SET_ATIME_NOW)
		time_set(&t, EXT3_SET_ATIME, &sa.atime, &sa.atime_ns, &sa.valid);
	if (s->valid & NOSTALL_SET_MTIME_NOW)
		time_set(&t, EXT3_SET_MTIME, &sa.mtime, &sa.mtime_ns, &sa.valid);
	if ((s->valid & (NOSTALL_SET_ATIME_NOW | NOSTALL_SET_MTIME_NOW)) &&
	    !(s->valid & (NOSTALL_SET_ATIME | NOSTALL_SET_MTIME)))
		sa.valid |= EXT3_SET_TIMES_NOW;
	int rc = ino_apply(fs, ino, "setattr", setattr_fn, &sa);
	if (!rc && st)
		rc = nostall_stat_ino(fs, ino, st);
	return rc;
}

/* ---- inode flags (chattr) ---- */

static int setflags_fn(struct nostall_fs *fs, struct ext3_inode *in, const void *ctx)
{
	uint32_t v = *(const uint32_t *)ctx;
	/* the owner or CAP_FOWNER; immutable and append-only change only with
	 * CAP_LINUX_IMMUTABLE (ext3_ioctl) */
	if (!api_owner_or_capable(fs, in))
		return err_set(-EPERM, "setflags: inode %u: not the owner", ext3_inode_ino(in));
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	if (((v ^ a.flags) & (NOSTALL_FL_IMMUTABLE | NOSTALL_FL_APPEND)) &&
	    !api_capable(fs, NOSTALL_CAP_LINUX_IMMUTABLE))
		return err_set(-EPERM, "setflags: inode %u: immutable/append-only need CAP_LINUX_IMMUTABLE",
			       ext3_inode_ino(in));
	return ext3_setflags(in, v);
}

int nostall_setflags(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t iflags)
{
	return path_apply(fs, path, flags, "setflags", setflags_fn, &iflags);
}

int nostall_setflags_ino(struct nostall_fs *fs, uint64_t ino, uint32_t iflags, struct nostall_stat *st)
{
	int rc = ino_apply(fs, ino, "setflags", setflags_fn, &iflags);
	if (!rc && st)
		rc = nostall_stat_ino(fs, ino, st);
	return rc;
}

/* ---- extended attributes ---- */

struct xattr_op {
	const char *name;
	const void *value; /* NULL: remove */
	size_t size;
	unsigned flags;    /* EXT3_XATTR_* */
};

int api_xattr_name_check(const char *name, size_t size)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > NOSTALL_NAME_MAX)
		return err_set(-ERANGE, "xattr name of %zu bytes (1-%d)", n, NOSTALL_NAME_MAX);
	if (size > 65536)
		return err_set(-E2BIG, "xattr value of %zu bytes (at most 65536)", size);
	return 0;
}

int api_xattr_ns_check(struct ext3_inode *in, const char *name, bool write)
{
	static const struct {
		const char *prefix;
		bool whole; /* the prefix is the whole name */
	} ns[] = {
		{ "user.", false },  { "trusted.", false }, { "security.", false },
		{ "system.posix_acl_access", true }, { "system.posix_acl_default", true },
	};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		size_t l = strlen(ns[i].prefix);
		if (strncmp(name, ns[i].prefix, l) || (ns[i].whole && name[l]))
			continue;
		if (!ns[i].whole && !name[l])
			return err_set(-EINVAL, "%s: an empty name in the namespace", name);
		uint16_t t = api_type(in);
		if (i == 0 && t != EXT3_S_IFREG && t != EXT3_S_IFDIR) /* xattr_permission() */
			return write ? err_set(-EPERM, "%s: user.* only on files and directories", name)
				     : err_set(-ENODATA, "%s: no such attribute", name);
		return 0;
	}
	return err_set(-EOPNOTSUPP, "%s: unknown attribute namespace", name);
}

static int xattr_fn(struct nostall_fs *fs, struct ext3_inode *in, const void *ctx)
{
	const struct xattr_op *x = ctx;
	int rc = api_xattr_ns_check(in, x->name, true);
	if (rc)
		return rc;
	if (ext3_acl_xattr_name(x->name)) /* the VFS format, the mode kept in step */
		return ext3_acl_xattr_set(in, !strcmp(x->name, EXT3_ACL_DEFAULT), x->value, x->size,
					  x->flags);
	return ext3_xattr_change(in, x->name, x->value, x->size, x->flags);
}

static int xflags_of(unsigned xflags, unsigned *out)
{
	if (xflags & ~(NOSTALL_XATTR_CREATE | NOSTALL_XATTR_REPLACE))
		return err_set(-EINVAL, "setxattr: bad flags 0x%x", xflags);
	*out = ((xflags & NOSTALL_XATTR_CREATE) ? EXT3_XATTR_CREATE : 0) |
	       ((xflags & NOSTALL_XATTR_REPLACE) ? EXT3_XATTR_REPLACE : 0);
	return 0;
}

int nostall_setxattr(struct nostall_fs *fs, const char *path, unsigned flags, const char *name,
		     const void *value, size_t size, unsigned xflags)
{
	struct xattr_op x = { .name = name, .value = value ? value : "", .size = size };
	int rc = xflags_of(xflags, &x.flags);
	if (!rc)
		rc = api_xattr_name_check(name, size);
	return rc ? rc : path_apply(fs, path, flags, "setxattr", xattr_fn, &x);
}

int nostall_removexattr(struct nostall_fs *fs, const char *path, unsigned flags, const char *name)
{
	struct xattr_op x = { .name = name };
	int rc = api_xattr_name_check(name, 0);
	return rc ? rc : path_apply(fs, path, flags, "removexattr", xattr_fn, &x);
}

int nostall_setxattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name, const void *value,
			 size_t size, unsigned xflags)
{
	struct xattr_op x = { .name = name, .value = value ? value : "", .size = size };
	int rc = xflags_of(xflags, &x.flags);
	if (!rc)
		rc = api_xattr_name_check(name, size);
	return rc ? rc : ino_apply(fs, ino, "setxattr", xattr_fn, &x);
}

int nostall_removexattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name)
{
	struct xattr_op x = { .name = name };
	int rc = api_xattr_name_check(name, 0);
	return rc ? rc : ino_apply(fs, ino, "removexattr", xattr_fn, &x);
}

/* ---- durability ---- */

static int fsync_fn(struct nostall_fs *fs, struct ext3_inode *in, const void *ctx)
{
	return ext3_file_fsync(in, *(const int *)ctx != 0);
}

int nostall_fsync_ino(struct nostall_fs *fs, uint64_t ino, int datasync)
{
	if (!fs->rw) {
		struct ext3_inode *in;
		int rc = api_inode_get(fs, ino, &in);
		ext3_iput(in);
		return rc;
	}
	return ino_apply(fs, ino, "fsync", fsync_fn, &datasync);
}

int nostall_sync(struct nostall_fs *fs)
{
	return fs->rw ? ext3_fs_sync(fs->e) : 0;
}
