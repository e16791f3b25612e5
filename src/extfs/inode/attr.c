/* ext3 attribute changes for the layer above (ext3_fsops.h, "attributes"):
 * setattr (mode, owner, times; the size through ext3_file_setsize) and
 * extended attribute set/remove, the inode flags (chattr). See
 * docs/write-names.md.
 *
 * Locking: in->lock as writer, then one handle (write.h's order). The size
 * change runs first, on its own (ext3_file_setsize takes the lock and its
 * handles itself), so a truncate's restarted handles never nest in ours. */
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/write.h"
#include "extfs/inode/cred.h"

#include "util/err.h"

#include <errno.h>

#define ATTR_CREDITS 1 /* the inode table block */
#define ATTR_KEEP ((uint32_t)-1)

/* Immutable or append-only inodes refuse attribute changes (Linux:
 * -EPERM), except that setting the times to now (touch: write access is
 * enough) is allowed on an append-only one. Caller holds in->lock. */
static int attr_frozen(const struct ext3_inode *in, unsigned valid)
{
	const unsigned times = EXT3_SET_ATIME | EXT3_SET_MTIME | EXT3_SET_CTIME | EXT3_SET_TIMES_NOW;
	if (!(in->a.flags & EXT3_IMMUTABLE_FL) && (valid & EXT3_SET_TIMES_NOW) && !(valid & ~times))
		return 0;
	if (in->a.flags & (EXT3_IMMUTABLE_FL | EXT3_APPEND_FL))
		return err_set(-EPERM, "ext3: inode %u is immutable or append-only", in->ino);
	return 0;
}

int ext3_may_write_locked(const struct ext3_inode *in, bool append)
{
	if (in->a.flags & EXT3_IMMUTABLE_FL)
		return err_set(-EPERM, "ext3: inode %u is immutable", in->ino);
	if ((in->a.flags & EXT3_APPEND_FL) && !append)
		return err_set(-EPERM, "ext3: inode %u is append-only: writes must append", in->ino);
	return 0;
}

int ext3_may_write(struct ext3_inode *in, bool append)
{
	ext3_inode_rdlock(in);
	int rc = ext3_may_write_locked(in, append);
	ext3_inode_unlock(in);
	return rc;
}

/* Flags a directory keeps; regular files drop the directory-only ones,
 * other inodes keep only nodump and noatime (2.6.30's ext3_mask_flags). */
static uint32_t flags_mask_for(uint16_t mode, uint32_t flags)
{
	uint16_t type = mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFDIR)
		return flags;
	if (type == EXT3_S_IFREG)
		return flags & ~(uint32_t)(EXT3_DIRSYNC_FL | EXT3_TOPDIR_FL);
	return flags & (uint32_t)(EXT3_NODUMP_FL | EXT3_NOATIME_FL);
}

int ext3_setflags(struct ext3_inode *in, uint32_t flags)
{
	if (!ext3_fs_writable(in->fs))
		return err_set(-EROFS, "ext3: read-only filesystem");
	ext3_inode_wrlock(in);
	uint32_t old = in->a.flags;
	flags = flags_mask_for(in->a.mode, flags);
	struct jbd_handle *h = NULL;
	int rc = 0;
	/* Switching a file between journaled and ordered data needs every
	 * block of it out of one path and into the other (2.6.30's
	 * ext3_change_inode_journal_flag): not offered; the mount's data=
	 * mode applies to every file. */
	if ((flags ^ old) & EXT3_JOURNAL_DATA_FL)
		rc = err_set(-EOPNOTSUPP, "ext3: inode %u: per-file data journaling (+j) is not supported; "
					  "mount with -o data=journal",
			     in->ino);
	if (!rc)
		rc = ext3_journal_start(in->fs, ATTR_CREDITS, &h);
	if (!rc) {
		in->a.flags = (flags & EXT3_FL_USER_MODIFIABLE) | (old & ~(uint32_t)EXT3_FL_USER_MODIFIABLE);
		ext3_now(&in->a.ctime, &in->a.ctime_ns);
		if (in->a.flags & EXT3_SYNC_FL)
			ext3_handle_set_sync(h);
		rc = ext3_mark_inode_dirty(h, in);
		int src = ext3_journal_stop(h);
		if (!rc)
			rc = src;
	}
	ext3_inode_unlock(in);
	return rc;
}

/* Apply sa's fields except the size (in->lock held as writer). */
static void attr_apply(struct ext3_inode *in, const struct ext3_setattr *sa)
{
	struct ext3_inode_attr *a = &in->a;
	const struct ext3_creds *c = ext3_cred_current(in->fs);
	if (sa->valid & EXT3_SET_MODE)
		a->mode = (uint16_t)((a->mode & EXT3_S_IFMT) | (sa->mode & 07777));
	if ((sa->valid & EXT3_SET_UID) && sa->uid != ATTR_KEEP)
		a->uid = sa->uid;
	if ((sa->valid & EXT3_SET_GID) && sa->gid != ATTR_KEEP)
		a->gid = sa->gid;
	/* chmod by a caller outside the file's group drops setgid unless it
	 * holds CAP_FSETID (setattr_copy); the older credentials interface
	 * (noperm: its callers apply the rules) is left alone. */
	if ((sa->valid & EXT3_SET_MODE) && (a->mode & 02000u) && !c->noperm &&
	    !ext3_creds_in_group(c, a->gid) && !ext3_creds_capable(c, EXT3_CAP_FSETID))
		a->mode &= (uint16_t)~02000u;
	/* chown(2) of a non-directory drops setuid, and setgid when the group
	 * may execute (setgid without group-exec is mandatory locking), for
	 * every caller; Linux does it for chown(-1, -1) as well. */
	if ((sa->valid & (EXT3_SET_UID | EXT3_SET_GID)) && (a->mode & EXT3_S_IFMT) != EXT3_S_IFDIR) {
		a->mode &= (uint16_t)~04000u;
		if (a->mode & 00010)
			a->mode &= (uint16_t)~02000u;
	}
	/* truncate(2) drops them as a write does (do_truncate's
	 * should_remove_suid), unless CAP_FSETID */
	if ((sa->valid & EXT3_SET_SIZE) && !(sa->valid & EXT3_SET_MODE) && !c->noperm)
		a->mode = ext3_creds_kill_suid(c, a->mode, a->gid);
	if (sa->valid & EXT3_SET_ATIME) {
		a->atime = sa->atime;
		a->atime_ns = sa->atime_ns;
	}
	if (sa->valid & EXT3_SET_MTIME) {
		a->mtime = sa->mtime;
		a->mtime_ns = sa->mtime_ns;
	} else if (sa->valid & EXT3_SET_SIZE) {
		/* truncate(2) / ftruncate(2) set mtime as well (Linux's do_truncate). */
		ext3_now(&a->mtime, &a->mtime_ns);
	}
	if (sa->valid & EXT3_SET_CTIME) {
		a->ctime = sa->ctime;
		a->ctime_ns = sa->ctime_ns;
	} else {
		ext3_now(&a->ctime, &a->ctime_ns);
	}
}

int ext3_setattr(struct ext3_inode *in, const struct ext3_setattr *sa)
{
	if (!sa->valid)
		return 0;
	if (sa->valid & EXT3_SET_SIZE) {
		ext3_inode_rdlock(in);
		uint16_t type = in->a.mode & EXT3_S_IFMT;
		int rc = attr_frozen(in, sa->valid);
		ext3_inode_unlock(in);
		if (rc)
			return rc;
		if (type == EXT3_S_IFDIR)
			return err_set(-EISDIR, "ext3: inode %u: truncate of a directory", in->ino);
		if (type != EXT3_S_IFREG)
			return err_set(-EINVAL, "ext3: inode %u: truncate of a special file", in->ino);
		rc = ext3_file_setsize(in, sa->size);
		if (rc)
			return rc;
	}
	ext3_inode_wrlock(in);
	struct jbd_handle *h = NULL;
	int rc = attr_frozen(in, sa->valid);
	if (!rc)
		rc = ext3_journal_start(in->fs, ATTR_CREDITS, &h);
	if (!rc) {
		attr_apply(in, sa);
		rc = ext3_mark_inode_dirty(h, in);
		int src = ext3_journal_stop(h);
		if (!rc)
			rc = src;
	}
	ext3_inode_unlock(in);
	return rc;
}

int ext3_xattr_change(struct ext3_inode *in, const char *name, const void *value, size_t size,
		      unsigned flags)
{
	ext3_inode_wrlock(in);
	struct jbd_handle *h = NULL;
	int rc = attr_frozen(in, 0);
	if (!rc)
		rc = ext3_journal_start(in->fs, ext3_credits_xattr(in->fs), &h);
	if (!rc) {
		rc = ext3_xattr_set(h, in, name, value, size, flags);
		int src = ext3_journal_stop(h);
		if (!rc)
			rc = src;
	}
	ext3_inode_unlock(in);
	return rc;
}
