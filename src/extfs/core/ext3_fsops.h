/* ext3's namespace, attribute and file-data operations for the layer above
 * (src/api), on writable mounts (EXT3_MOUNT_JOURNAL). Each call starts and
 * stops its own journal handle(s) and takes the inode locks it needs (the
 * order is in src/extfs/core/write.h); callers hold no ext3 lock. See
 * docs/write-path.md.
 *
 * Implemented in: namei.c (names), attr.c (setattr, xattr set/remove),
 * file_data.c / file_write.c (data, fsync, sync).
 *
 * Errors: negative errno as nostall.h documents for the write path: -EROFS
 * on a read-only mount or after a journal abort / errors=remount-ro;
 * -ENOSPC, -ENAMETOOLONG (name over 255 bytes), -EMLINK (32000 links),
 * -ENOTEMPTY, -EISDIR, -ENOTDIR, -EEXIST, -ENOENT, -EINVAL (a directory
 * moved into its own subtree, "." or ".." as a name), -EFBIG, -EIO,
 * -EUCLEAN (corruption met; errors= applied).
 */
#ifndef NOSTALL_EXT3_FSOPS_H
#define NOSTALL_EXT3_FSOPS_H

#include "extfs/core/ext3.h"

/* An extended attribute a new inode is created with (ext3_cred). */
struct ext3_xattr_init {
	const char *name;
	const void *value;
	size_t size;
};

/* Who creates: the new inode's owner. gid is the parent's when the parent
 * directory is setgid (and a new directory inherits the setgid bit).
 * xattrs: set on every new inode but a symlink inside the transaction that
 * creates it, as ext3_init_acl sets inherited ACLs, so no crash state has
 * the inode without them; one that cannot be set fails the creation. */
struct ext3_cred {
	uint32_t uid, gid;
	const struct ext3_xattr_init *xattrs;
	unsigned nxattrs;
};

/* Who is asking (extfs/inode/cred.h: how it is chosen and read). */
#define EXT3_CRED_NGROUPS_MAX 64
struct ext3_creds {
	uint32_t uid, gid;  /* the fsuid and fsgid */
	uint64_t caps;      /* 1 << EXT3_CAP_* */
	uint32_t umask;     /* applied to new inodes without a default ACL */
	bool noperm;        /* the caller made the access checks (FUSE
			     * default_permissions): ext3_permission says yes */
	unsigned ngroups;   /* supplementary groups (at most EXT3_CRED_NGROUPS_MAX) */
	uint32_t groups[EXT3_CRED_NGROUPS_MAX];
};

/* The older credentials interface (nostall_cred_set), kept in cred.c:
 * set = this thread's uid, gid and groups from now on, root's
 * capabilities for uid 0, no access checks (the caller's own); reset =
 * the mount's default again (extfs/inode/cred.h has the full set). */
void ext3_cred_thread_set(uint32_t uid, uint32_t gid, const uint32_t *groups, unsigned ngroups);
void ext3_cred_thread_reset(void);
/* The current credentials' uid and gid (for new inodes); no xattrs. */
void ext3_cred_thread_get(const struct ext3_fs *fs, struct ext3_cred *cr);

/* ---- names (namei.c) ----
 * dir must be a directory (-ENOTDIR). New inodes: *out gets a reference
 * (ext3_iput it). mode carries the file type (S_IFREG, S_IFIFO, S_IFSOCK,
 * S_IFCHR, S_IFBLK for ext3_create; the permission bits are taken as they
 * are, no umask). */
int ext3_create(struct ext3_inode *dir, const char *name, size_t len, uint16_t mode, uint64_t rdev,
		const struct ext3_cred *cr, struct ext3_inode **out);
int ext3_mkdir(struct ext3_inode *dir, const char *name, size_t len, uint16_t mode,
	       const struct ext3_cred *cr, struct ext3_inode **out);
/* Fast symlink (target in i_block) when shorter than 60 bytes, else one data
 * block. -ENAMETOOLONG for a target of block size or more. */
int ext3_symlink(struct ext3_inode *dir, const char *name, size_t len, const char *target,
		 const struct ext3_cred *cr, struct ext3_inode **out);
/* A new name for in (not a directory: -EPERM). */
int ext3_link(struct ext3_inode *in, struct ext3_inode *dir, const char *name, size_t len);
/* Remove a non-directory's name (-EISDIR for a directory). The inode is freed
 * when its last link and last reference are gone; while it is still open it
 * sits on the orphan list. */
int ext3_unlink(struct ext3_inode *dir, const char *name, size_t len);
int ext3_rmdir(struct ext3_inode *dir, const char *name, size_t len);
/* flags: EXT3_RENAME_NOREPLACE / EXT3_RENAME_EXCHANGE (the values of
 * NOSTALL_RENAME_*). Replacing an existing file or empty directory is
 * atomic; in writeback and guarded modes the replaced-over file's data is
 * flushed first (the 2.6.30 safeguard). */
#define EXT3_RENAME_NOREPLACE 0x1u
#define EXT3_RENAME_EXCHANGE 0x2u
/* RENAME_WHITEOUT (overlayfs): the old name stays and names a new whiteout
 * (a character device 0:0, mode 0, owned by the calling thread's
 * credentials), in the rename's transaction; not with EXCHANGE. */
#define EXT3_RENAME_WHITEOUT 0x4u
int ext3_rename(struct ext3_inode *olddir, const char *oldname, size_t oldlen,
		struct ext3_inode *newdir, const char *newname, size_t newlen, unsigned flags);

/* ---- attributes (attr.c) ---- */

#define EXT3_SET_MODE 0x1u
#define EXT3_SET_UID 0x2u
#define EXT3_SET_GID 0x4u
#define EXT3_SET_SIZE 0x8u
#define EXT3_SET_ATIME 0x10u
#define EXT3_SET_MTIME 0x20u
#define EXT3_SET_CTIME 0x100u
/* The times given are "now" (utimensat with UTIME_NOW or NULL), which an
 * append-only inode accepts (write access suffices, as in Linux). */
#define EXT3_SET_TIMES_NOW 0x200u
struct ext3_setattr {
	unsigned valid;
	uint16_t mode;          /* permission bits (07777) */
	uint32_t uid, gid;
	uint64_t size;          /* regular files: ext3_file_setsize */
	int64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
};
/* ctime is set to now for any change unless EXT3_SET_CTIME gives it; a
 * chown clears setuid (and setgid when group-executable) as Linux does. */
int ext3_setattr(struct ext3_inode *in, const struct ext3_setattr *sa);
/* Inode flags (chattr(1), FS_IOC_SETFLAGS; the values are the FS_*_FL
 * ones): flags outside EXT3_FL_USER_MODIFIABLE keep their old values, and
 * flags that mean nothing for the inode's type are dropped (2.6.30's
 * ext3_mask_flags). Changing EXT3_JOURNAL_DATA_FL is -EOPNOTSUPP. ctime
 * becomes now. No permission check: the caller's (owner or CAP_FOWNER;
 * CAP_LINUX_IMMUTABLE to change immutable or append-only). */
int ext3_setflags(struct ext3_inode *in, uint32_t flags);
/* May in's data be changed by a writer (open for writing, write,
 * truncate)? -EPERM for an immutable inode, and for an append-only one
 * unless the writer appends (append: O_APPEND and no truncation). */
int ext3_may_write(struct ext3_inode *in, bool append);
/* value NULL: remove. flags: EXT3_XATTR_CREATE / EXT3_XATTR_REPLACE. */
#define EXT3_XATTR_CREATE 0x1u
#define EXT3_XATTR_REPLACE 0x2u
int ext3_xattr_change(struct ext3_inode *in, const char *name, const void *value, size_t size,
		      unsigned flags);

/* ---- file data (file_data.c, file_write.c) ---- */

/* Open / last close bookkeeping of a regular file. flags: EXT3_OPEN_WRITE
 * (a writer), EXT3_OPEN_TRUNC (O_TRUNC: truncate to 0 now). Release of a
 * writer that truncated to 0 starts the data flush in writeback and guarded
 * (the 2.6.30 replace-on-truncate safeguard) and drops the reservation
 * window; its return is the file's pending write error, once. */
#define EXT3_OPEN_WRITE 0x1u
#define EXT3_OPEN_TRUNC 0x2u
int ext3_file_open(struct ext3_inode *in, unsigned flags);
int ext3_file_release(struct ext3_inode *in, unsigned flags);
/* Write len bytes at off (EXT3_WRITE_APPEND: at i_size, *off_out tells
 * where). Allocates blocks (holes stay holes elsewhere), grows i_size, sets
 * mtime/ctime, clears setuid/setgid, orders the data per the data mode.
 * EXT3_WRITE_SYNC / _DSYNC: durable on return (O_SYNC / O_DSYNC). Returns
 * the bytes written (short only if space ran out midway), or an errno. */
#define EXT3_WRITE_APPEND 0x1u
#define EXT3_WRITE_SYNC 0x2u
#define EXT3_WRITE_DSYNC 0x4u
/* EXT3_WRITE_NOTHROTTLE: skip the dirty-page throttle (the wait for
 * writeback over the dirty limit); the caller calls ext3_file_throttle on
 * the same thread afterwards (a server replies in between). */
#define EXT3_WRITE_NOTHROTTLE 0x8u
/* EXT3_WRITE_KEEP_SETID: leave setuid/setgid alone (the caller has applied
 * the kill rules itself: a FUSE kernel clears them before the write for
 * writers without CAP_FSETID). */
#define EXT3_WRITE_KEEP_SETID 0x10u
/* EXT3_WRITE_APPENDER: the writer's handle is O_APPEND but the offset is
 * the caller's (it has placed the write at the end): an append-only inode
 * accepts it. */
#define EXT3_WRITE_APPENDER 0x20u
ssize_t ext3_file_write(struct ext3_inode *in, const void *buf, size_t len, uint64_t off,
			unsigned flags, uint64_t *off_out);
/* The throttle a write with EXT3_WRITE_NOTHROTTLE skipped: waits while the
 * mount's dirty + writeback pages are over this thread's dirty limit. No
 * lock held; a no-op without a page cache. */
void ext3_file_throttle(struct ext3_fs *fs);
/* Read through the page cache (so unwritten data is seen); rd (may be NULL)
 * is the handle's sequential reader, used while the inode has no dirty or
 * in-flight data. Updates atime per the mount's atime rule. */
ssize_t ext3_file_read(struct ext3_inode *in, struct ext3_fread *rd, void *buf, size_t len,
		       uint64_t off);
/* ext3_file_read delivered to sink (ext3_fread_pread_sink): the per-file
 * reader's segments are lent when the read takes its path, buf is used
 * otherwise. The sink runs once unless the read fails. */
ssize_t ext3_file_read_sink(struct ext3_inode *in, struct ext3_fread *rd, void *buf, size_t len,
			    uint64_t off, ext3_read_sink sink, void *arg);
/* Truncate or extend (a hole) to size. -EFBIG past the maximum file size. */
int ext3_file_setsize(struct ext3_inode *in, uint64_t size);
/* fallocate(2) (file_falloc.c; docs/write-data.md, "fallocate"). mode:
 * Linux's FALLOC_FL_* bits. 0 / KEEP_SIZE: unwritten extents over the
 * holes of [off, off + len) (0 grows the size to off + len); PUNCH_HOLE
 * (with KEEP_SIZE): free the range's blocks, zero its partial edges;
 * ZERO_RANGE (KEEP_SIZE optional): the range reads as zeros, its blocks
 * allocated unwritten. Extent files only (-EOPNOTSUPP otherwise);
 * COLLAPSE/INSERT/UNSHARE_RANGE -EOPNOTSUPP. Errors as vfs_fallocate and
 * ext4_fallocate: -EINVAL (len 0, negative), -EFBIG, -EPERM (immutable;
 * append-only for anything but allocation), -EISDIR / -ESPIPE / -ENODEV,
 * -ENOSPC (what was allocated stays, unwritten). Caller holds nothing. */
#define EXT3_FALLOC_KEEP_SIZE 0x01
#define EXT3_FALLOC_PUNCH_HOLE 0x02
#define EXT3_FALLOC_COLLAPSE_RANGE 0x08
#define EXT3_FALLOC_ZERO_RANGE 0x10
#define EXT3_FALLOC_INSERT_RANGE 0x20
#define EXT3_FALLOC_UNSHARE_RANGE 0x40
int ext3_fallocate(struct ext3_inode *in, int mode, uint64_t off, uint64_t len);
/* fsync / fdatasync of any inode (directories: commit their transaction). */
int ext3_file_fsync(struct ext3_inode *in, bool datasync);
/* sync(2): write back every file's data and commit the journal. */
int ext3_fs_sync(struct ext3_fs *fs);
/* Free blocks and inodes now (statfs on a writable mount). */
void ext3_fs_free_counts(struct ext3_fs *fs, uint64_t *blocks, uint64_t *inodes);

#endif
