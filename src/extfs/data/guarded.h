/* data=guarded (guarded.c; docs/write-guarded.md): the on-disk size
 * (i_disksize) of a regular file moves past newly allocated blocks only once
 * their data I/O has completed, so a commit never has to write file data and
 * a crash never exposes a block that was not written. The write path,
 * truncate, the inode cache and eviction reach it only through its
 * data-mode table (ext3_data_guarded_ops: data_modes.h, core/data_ops.h);
 * this header holds what the tests and guarded_int.h need besides.
 *
 * Per inode, an ordered-extent index keyed by page (block) index: an extent
 * is created when a write allocates a block at or past i_disksize, and is
 * done (removed) when a writeback run covering it completes without error; a
 * failed run leaves it failed (the size never passes it). While extents
 * exist the inode is on the orphan list, so a crash truncates it back to
 * i_disksize at the next mount (e2fsck does the same).
 *
 * Locking: the state has one mount-wide mutex, a leaf (held for list and
 * range changes only; never across I/O, a handle or another lock). i_disksize
 * and the orphan membership change only under in->lock as writer, with a
 * handle. The page cache's io_done worker only marks extents (it never
 * blocks on an inode lock or a journal handle, so anyone may wait for
 * io_done); the journal part of the completion work runs in the mount's
 * guarded logger thread, or in the lock holder (writer, fsync, truncate,
 * eviction) that gets there first.
 */
#ifndef NOSTALL_EXT3_GUARDED_H
#define NOSTALL_EXT3_GUARDED_H

#include "extfs/core/write.h"

struct ext3_guarded;
struct jbd_handle;

/* Extra credits a write chunk needs for the guarded write-end (the orphan
 * entry, the size): the table's write_credits. */
#define EXT3_GUARDED_CREDITS 4

/* sync(2) (the table's sync), after every mapping was written and waited:
 * wait for the completions and for the logger to have logged every inode
 * queued. 0 at once on a mount of another mode. */
int ext3_guarded_drain(struct ext3_fs *fs);

/* Tests (all no-ops, or zeros, on a mount of another mode). */
struct ext3_guarded_stats {
	uint64_t extents;     /* blocks that became extents */
	uint64_t done;        /* blocks whose extent completed */
	uint64_t failed;      /* blocks whose write failed */
	uint64_t hole_fills;  /* chunks ordered for a hole fill */
	uint64_t tail_orders; /* size moves ordered past a truncated partial block */
	uint64_t logs;        /* inodes logged by the logger thread */
	uint64_t orphan_adds, orphan_dels;
	uint64_t fsync_in_commit; /* fsyncs that ordered their data and size into one commit */
	uint64_t pending;     /* extent ranges now (all inodes) */
};
void ext3_guarded_stats(struct ext3_fs *fs, struct ext3_guarded_stats *out);
/* fn(in, arg) is called by the logger thread for each inode it logs, with a
 * reference to it and in->lock held as writer (NULL: none). */
typedef void (*ext3_guarded_log_hook_fn)(struct ext3_inode *in, void *arg);
void ext3_guarded_set_log_hook(struct ext3_fs *fs, ext3_guarded_log_hook_fn fn, void *arg);
/* Pending or failed extent ranges of one inode now. */
size_t ext3_guarded_inode_extents(struct ext3_inode *in);

#endif
