/* Private to src/api: the handle structs and helpers shared by the api_*.c
 * files (docs/api.md).
 *
 * Locking: a mounted filesystem has no API-level lock over the filesystem;
 * the count of open handles is atomic. Inodes are ext3's shared,
 * reference-counted inodes (ext3_iget / ext3_iput) with their own locks
 * (ext3.h, "inodes"): a handle holds one reference for its lifetime. Each
 * file handle has a mutex for its position, each directory iterator one for
 * its batch and position; a regular file's handle also owns a reader
 * (ext3_fread: readahead windows, with their own mutex, taken after the
 * position mutex, before the inode's lock). The FUSE lookup table
 * (lookup_lock) and the descriptor table (fd_lock) each have a mutex that
 * is a leaf: nothing of ext3 is called while holding either (inode
 * references are dropped after unlocking, because a last put can free an
 * unlinked inode, which starts journal handles). */
#ifndef NOSTALL_API_INT_H
#define NOSTALL_API_INT_H

#include "nostall/nostall.h"

#include "extfs/core/ext3.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/xattr/acl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct api_lref;
struct api_lpin;
struct api_fd;

struct nostall_fs {
	struct dev *dev;  /* owned when own_dev */
	bool own_dev;
	bool rw;          /* a read-write (journaled) mount */
	struct ext3_fs *e;
	atomic_int handles; /* open files, directory iterators (descriptors hold files) */
	size_t file_readahead; /* max readahead window per open file, 0 = off */

	/* FUSE lookup counts (api_lookup.c): ino -> count, open addressing
	 * (nlref_slots a power of two, 0 = none yet); an entry holds an ext3
	 * inode reference (in lpins, LPIN_BUCKETS chains) only once the inode
	 * is unlinked. */
	pthread_mutex_t lookup_lock;
	struct api_lref *lref;
	size_t nlref_slots, nlref;
	struct api_lpin **lpins;
	/* nostall_lookup_refs_live: inodes with lookup references stay
	 * reachable by number after their last link goes (api_inode_get). */
	atomic_bool lref_live;

	/* nostall_fd_* (api_fd.c): fds[i] NULL = free. */
	pthread_mutex_t fd_lock;
	struct api_fd **fds;
	size_t nfds;
};

struct nostall_file {
	struct nostall_fs *fs;
	pthread_mutex_t lock; /* protects pos; held across a write (one writer per handle) */
	uint64_t pos;
	struct ext3_inode *in; /* a reference */
	uint16_t mode;         /* file type and permissions at open */
	struct ext3_fread *rd; /* regular files: data reads with readahead */
	unsigned flags;        /* NOSTALL_O_* as opened */
	bool can_read, can_write;
	bool writer;           /* ext3_file_open(EXT3_OPEN_WRITE) done: release at close */
};

#define DIR_BATCH 64
struct nostall_dir {
	struct nostall_fs *fs;
	pthread_mutex_t lock; /* protects everything below */
	uint64_t pos;         /* position of the next entry to return */
	struct nostall_dirent batch[DIR_BATCH];
	unsigned nbatch, at;
	bool eof;
	struct ext3_inode *in; /* a reference */
	/* The name returned last and the position after it: a resume there
	 * inside a run of equal hashes goes on right after that name. */
	char last[NOSTALL_NAME_MAX + 1];
	uint16_t last_len;
	uint64_t last_pos;
	bool has_last;
	/* Names returned while the directory was linear and one block long,
	 * each as a length byte and the name: if it becomes indexed (hash
	 * order) they are not returned again. NULL when not recorded. */
	uint8_t *seen;
	size_t seen_len, seen_cap;
	bool seen_off;         /* past the first block: a directory that long never converts */
};

/* Get inode ino with a reference; it must be in use (-ENOENT otherwise),
 * -EINVAL out of range. */
int api_inode_get(struct nostall_fs *fs, uint64_t ino, struct ext3_inode **out);
/* Resolve a path (flags: NOSTALL_NOFOLLOW). */
int api_path_ino(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino);
/* Resolve a path to a referenced inode (flags: NOSTALL_NOFOLLOW). */
int api_path_inode(struct nostall_fs *fs, const char *path, unsigned flags,
		   struct ext3_inode **out);
void api_stat_fill(struct nostall_fs *fs, struct ext3_inode *in, struct nostall_stat *st);
static inline uint16_t api_type(struct ext3_inode *in)
{
	return ext3_inode_mode(in) & EXT3_S_IFMT;
}

/* ---- the write side (api_path.c) ---- */

/* -EROFS with a message unless the mount is read-write. */
int api_check_rw(struct nostall_fs *fs, const char *what);

/* The parent of a path's last component: what the creating and removing
 * calls start with. */
enum api_last { API_LAST_NAME, API_LAST_ROOT, API_LAST_DOT, API_LAST_DOTDOT };
struct api_parent {
	struct ext3_inode *dir; /* a reference (the root for API_LAST_ROOT) */
	enum api_last kind;
	const char *name;       /* points into the caller's path */
	size_t len;
	bool slash;             /* the path ended in '/' after the name */
};
/* Resolve every component of path but the last (following symlinks) from
 * the root. Errors: -ENOENT (empty path or missing component), -ENOTDIR,
 * -ENAMETOOLONG (the path, or the last name), -ELOOP. */
int api_parent_get(struct nostall_fs *fs, const char *path, struct api_parent *p);
/* The same; with late_len the last name's length is not checked (rename
 * looks the source up before it checks the target's name:
 * api_parent_name_check). */
int api_parent_walk(struct nostall_fs *fs, const char *path, bool late_len, struct api_parent *p);
int api_parent_name_check(const struct api_parent *p);
void api_parent_put(struct api_parent *p);
/* The same for the *_at calls: directory dir_ino and one name (-ENOTDIR,
 * -EINVAL for an empty name or one with '/', -ENAMETOOLONG). */
int api_at_parent(struct nostall_fs *fs, uint64_t dir_ino, const char *name,
		  struct api_parent *p);
/* Look the last name up in p->dir: 0 and *out referenced, or -ENOENT. */
int api_parent_lookup(struct nostall_fs *fs, const struct api_parent *p, struct ext3_inode **out);

/* ---- credentials and the VFS's permission checks (api_cred.c) ---- */

/* May the current caller add or remove names in dir (write and search)? */
int api_may_change_names(struct nostall_fs *fs, struct ext3_inode *dir);
/* Does the current caller want access checks (not NOSTALL_CRED_NOPERM)?
 * Callers skip the lookups the checks would need otherwise. */
bool api_checks_on(struct nostall_fs *fs);
/* may_delete: api_may_change_names and the sticky directory's rule
 * (-EPERM unless the owner of victim or dir, or CAP_FOWNER). */
int api_may_delete(struct nostall_fs *fs, struct ext3_inode *dir, struct ext3_inode *victim);
/* may_open: read and/or write access as flags (NOSTALL_O_*) and trunc ask. */
int api_may_open(struct ext3_inode *in, unsigned flags, bool trunc);
/* inode_owner_or_capable (chmod, utimes, flags, ACLs). */
bool api_owner_or_capable(struct nostall_fs *fs, struct ext3_inode *in);
/* Does the current caller hold every capability in cap (NOSTALL_CAP_*)?
 * true for NOSTALL_CRED_NOPERM credentials. */
bool api_capable(struct nostall_fs *fs, uint64_t cap);
/* chown's rule ((uint32_t)-1 = unchanged): CAP_CHOWN, or the owner keeping
 * itself and choosing one of its groups; -EPERM otherwise. */
int api_may_chown(struct nostall_fs *fs, struct ext3_inode *in, uint32_t uid, uint32_t gid);
/* After a truncate by an open handle (ftruncate, O_TRUNC): drop set-id
 * bits as a write does (do_truncate's should_remove_suid), unless the
 * caller holds CAP_FSETID or made the checks itself (NOPERM). */
int api_kill_suid(struct nostall_fs *fs, struct ext3_inode *in);
/* A new inode in p->dir: checks may_create (write and search on the
 * directory, -EEXIST first for an existing name; CAP_MKNOD for a device),
 * then sets the owner (cr), the mode (umask, or the directory's default
 * ACL, which also gives the ACL xattrs) and adds the thread's
 * nostall_cred_set_xattrs. api_new_end after the creation. */
struct api_new {
	struct ext3_cred cr;
	struct ext3_acl_new acl;
	struct ext3_xattr_init x[2 + NOSTALL_CREATE_XATTRS_MAX];
};
int api_new_begin(struct nostall_fs *fs, const struct api_parent *p, uint16_t *mode,
		  struct api_new *n);
void api_new_end(struct api_new *n);

/* ---- files (api_file.c, api_io.c) ---- */

/* A handle on in (the reference is taken over, put on failure). flags
 * NOSTALL_O_*; trunc: truncate at open (an existing regular file). */
int api_file_new(struct nostall_fs *fs, struct ext3_inode *in, unsigned flags, bool trunc,
		 struct nostall_file **out);
/* The open of a path (nostall_create / nostall_fd_open): posix makes
 * O_NOFOLLOW on a final symlink -ELOOP and lets a directory open read-only. */
int api_open_path(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode,
		  bool posix, struct nostall_file **out);

/* ---- extended attributes (api_attr.c): the VFS's checks ---- */

/* Before the path: -ERANGE for an empty name or one over 255 bytes, -E2BIG
 * for a value over 64 KiB. */
int api_xattr_name_check(const char *name, size_t size);
/* After it: -EOPNOTSUPP for an unknown namespace, -EINVAL for an empty
 * name in one, user.* only on regular files and directories (-EPERM to
 * change, -ENODATA to read). */
int api_xattr_ns_check(struct ext3_inode *in, const char *name, bool write);

/* ---- lookup references (api_lookup.c) ---- */

/* Set up the table (mount): the lock, and on a read-write mount the inode
 * cache's keeper of unlinked inodes with lookups. */
void api_lookup_init(struct nostall_fs *fs);
/* One more lookup reference on in (the caller keeps its own). */
int api_lookup_take(struct nostall_fs *fs, struct ext3_inode *in);
/* Does ino hold lookup references? */
bool api_lookup_held(struct nostall_fs *fs, uint64_t ino);
/* Drop every lookup reference (umount). */
void api_lookup_drop_all(struct nostall_fs *fs);
void api_fd_table_free(struct nostall_fs *fs);

#endif
