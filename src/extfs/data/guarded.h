/* data=guarded (guarded.c; docs/write-guarded.md): the on-disk size
 * (i_disksize) of a regular file moves past newly allocated blocks only once
 * their data I/O has completed, so a commit never has to write file data and
 * a crash never exposes a block that was not written. Private to
 * file_data.c, file_write.c, truncate.c and guarded.c.
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

/* Is this mount in data=guarded? (Regular files only use it.) */
bool ext3_guarded_mode(const struct ext3_fs *fs);

/* The mount's state and its logger thread (ext3_data_init, when guarded).
 * Destroy after every inode has been evicted (ext3_data_shutdown). */
int ext3_guarded_create(struct ext3_fs *fs, struct ext3_guarded **out);
void ext3_guarded_destroy(struct ext3_guarded *g);

/* The map op allocated the block of page `index` (caller: the writer, with
 * in->lock as writer and the page locked). At or past i_disksize: a new
 * extent; inside: a hole fill, ordered at the chunk's end. 0 or -ENOMEM. */
int ext3_guarded_block_new(struct ext3_inode *in, uint64_t index);
/* Before a write of [off, off + len): when it ends past i_disksize and
 * writes bytes past i_size inside the partial last block (a block that
 * exists, so no extent covers its new bytes), this write's data is ordered
 * (like a hole fill: the next ext3_guarded_write_end files the jbd_inode).
 * Found by nostall crashtest (too_long on append and links). Rewrites of
 * pages wholly below i_size need nothing: their blocks hold this file's
 * older bytes. Caller holds in->lock as writer. 0 or -ENOMEM. */
int ext3_guarded_write_begin(struct ext3_inode *in, uint64_t off, uint64_t len);

/* End of a write chunk, in its handle, after i_size moved (in->lock as
 * writer): the orphan entry for new extents, ordered data for a hole fill,
 * then ext3_guarded_catch_up. Extra credits a chunk needs for it:
 * EXT3_GUARDED_CREDITS. */
#define EXT3_GUARDED_CREDITS 4
int ext3_guarded_write_end(struct jbd_handle *h, struct ext3_inode *in);

/* Move i_disksize up to min(i_size, the first pending or failed extent) and
 * take the inode off the orphan list once no extent is left (in->lock as
 * writer, in h). The first move past a truncate's end inside a block orders
 * the inode's data in h: the tail the truncate zeroed in the cache may not
 * be on disk yet. *changed: the inode needs writing. */
int ext3_guarded_catch_up(struct jbd_handle *h, struct ext3_inode *in, bool *changed);

/* The page cache's io_done for a guarded inode: pages [first, last] were
 * written (err 0: their extents are done) or not (failed). Non-blocking
 * apart from the leaf mutex; queues the inode for the logger. */
void ext3_guarded_io_done(struct ext3_inode *in, uint64_t first, uint64_t last, int err);

/* fsync's guarded step, after the file's pages were written and waited (no
 * lock held): wait for their completions, then (in->lock, a handle) bring
 * i_disksize up. -EIO while a failed extent lies below i_size. */
int ext3_guarded_fsync(struct ext3_inode *in);
/* fsync's way in one commit (fsync_data_in_commit in file_data.c; in->lock
 * held as writer, h a handle the caller makes synchronous): the file's
 * pages become strict ordered data of h's transaction (jbd_inode_file_strict)
 * and i_disksize moves to i_size in that same handle, off the orphan list.
 * The commit writes the pages and waits for them, and for every write of
 * the file already under way, before its commit block; a failure there
 * aborts the journal whatever data_err says (ext3_guarded_data_check), so
 * the size never commits over data that is not on disk. Pending extents
 * stay and complete as their runs do. One device round trip less than
 * writing and waiting first (ext3_guarded_fsync). Returns 1 when done that
 * way, 0 when the caller must take the plain way (a failed extent, which
 * that way reports), or a negative errno. */
int ext3_guarded_fsync_in_commit(struct jbd_handle *h, struct ext3_inode *in);
/* The commit's wait op for in's ordered data (commit thread, no lock
 * held), after its runs ended: their completions are marked; -EIO if any
 * extent of in failed (data under a size a strict filing may have logged). */
int ext3_guarded_data_check(struct ext3_inode *in);
/* ext3_guarded_truncate_begin/_end, _settled and _requeue: extfs/core/write.h. */

/* sync(2): after every mapping was written and waited: wait for the
 * completions and for the logger to have logged every inode queued. */
int ext3_guarded_drain(struct ext3_fs *fs);

/* Before an inode's mapping goes (ext3_data_evict; pages already written,
 * no lock held): wait for its completions and the logger, log the final
 * size (a live inode whose extents cannot complete - failed data - is
 * truncated to i_disksize, as the next mount would) and forget its state. */
void ext3_guarded_evict(struct ext3_inode *in);

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
/* Tests: fn(in, arg) is called by the logger thread for each inode it logs,
 * with a reference to it and in->lock held as writer (NULL: none). */
typedef void (*ext3_guarded_log_hook_fn)(struct ext3_inode *in, void *arg);
void ext3_guarded_set_log_hook(struct ext3_fs *fs, ext3_guarded_log_hook_fn fn, void *arg);
/* Pending or failed extent ranges of one inode now (tests). */
size_t ext3_guarded_inode_extents(struct ext3_inode *in);

#endif
