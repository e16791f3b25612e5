/* Inside the data room (extfs/data/): between file_data.c (the mount's
 * page cache, per-inode mappings, ordered data, fsync, sync), file_write.c
 * (open/release, write, read, setsize, atime) and the data modes' files
 * (data_journal.c, data_ordered.c, data_writeback.c, guarded.c: their
 * tables, core/data_ops.h). Private to those files; see
 * docs/write-data.md. */
#ifndef NOSTALL_EXT3_FILE_DATA_H
#define NOSTALL_EXT3_FILE_DATA_H

#include "extfs/core/data_ops.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/write.h"

struct page_mapping;

/* Does in's data go through the page cache (every table but one that
 * journals the data)? */
bool ext3_data_paged(const struct ext3_inode *in);
/* The inode's page mapping, created on first use. Caller holds in->lock as
 * writer. */
int ext3_data_mapping(struct ext3_inode *in, struct page_mapping **out);
/* Ordered data: file the inode's jbd_inode (created on first use) in h's
 * transaction, so its commit writes the inode's dirty pages first. Nothing
 * without a page mapping. Caller holds in->lock as writer. (data=ordered's
 * write_order; guarded.c files it only for a hole fill or a partial
 * block's tail; fsync's way inside the commit.) */
int ext3_data_file_ordered(struct jbd_handle *h, struct ext3_inode *in);
/* ext3_data_file_ordered for data=guarded's fsync (any data mode with a
 * page mapping): strict, an error writing it aborts that commit whatever
 * data_err says (jbd_inode_file_strict). in->lock held. */
int ext3_data_order_strict(struct jbd_handle *h, struct ext3_inode *in);
/* The mode's own state of the mount (the table's init sets it, its
 * shutdown takes it back): get returns it only to the table that set it
 * (NULL otherwise, and on a read-only mount). */
void ext3_data_set_mode_state(struct ext3_fs *fs, const struct ext3_data_ops *ops, void *state);
void *ext3_data_mode_state(const struct ext3_fs *fs, const struct ext3_data_ops *ops);
/* The inode's data changed (written or truncated) during this mount: from
 * now on its reads go through the page cache (or, in data=journal, the
 * buffer cache), never the open file's ext3_fread windows, whose windows
 * and buffer-cache path may hold copies older than the write. Sticky for
 * the mount (a per-mount bitmap: it survives eviction from the inode
 * cache). */
void ext3_data_mark_written(struct ext3_inode *in);
bool ext3_data_written(const struct ext3_inode *in);
/* fsync's commit step: make transaction `tid` (have = false: the running
 * one) durable, through a sync handle when it is still running. */
int ext3_data_commit(struct ext3_fs *fs, bool have, uint32_t tid);
/* fsync's data inside the commit it forces (the tables' fsync_in_commit):
 * in->lock as writer, a handle of `credits`, file(h, in, tid) - 1 when it
 * filed the data (the handle is then made synchronous), 0 not, or a
 * negative errno -, the lock dropped, the handle stopped (its commit
 * waited for when synchronous). Returns file's answer or an error. */
int ext3_data_fsync_filed(struct ext3_inode *in, uint32_t tid, int credits,
			  int (*file)(struct jbd_handle *h, struct ext3_inode *in, uint32_t tid));
/* data=ordered's and data=writeback's fsync_in_commit: the pages filed as
 * ordered data of transaction tid while it is still running. */
int ext3_data_fsync_same_tid(struct ext3_inode *in, uint32_t tid);
/* The largest file size (indirect-block limit and i_blocks' 32 bits, as
 * ext3_max_size). */
uint64_t ext3_data_max_size(const struct ext3_fs *fs);

/* ---- file_write.c, for the modes' write_chunk ---- */
/* i_size (and, unless the table moves it at I/O completion, i_disksize)
 * to size. in->lock as writer, a handle that writes the inode next. */
void ext3_data_size_set(struct ext3_inode *in, uint64_t size);
/* mtime/ctime now; data: a data change (drops set-id bits). */
void ext3_data_touch(struct ext3_inode *in, bool data);
/* Write the inode in h and remember the transaction for fsync. */
int ext3_data_inode_commit(struct jbd_handle *h, struct ext3_inode *in, bool datasync);

/* fallocate's zeroed edges (file_falloc.c): overwrite len bytes at off,
 * inside i_size over blocks already mapped, through the mode's write path
 * (page-cache chunks, or the table's write_chunk), without the throttle.
 * in->lock as writer, no handle. 0 or a negative errno. */
int ext3_data_overwrite_locked(struct ext3_inode *in, const void *buf, size_t len, uint64_t off);

#endif
