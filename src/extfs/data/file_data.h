/* Between file_data.c (the mount's page cache, per-inode mappings, ordered
 * data, fsync, sync) and file_write.c (open/release, write, read, setsize,
 * atime). Private to those two files; see docs/write-data.md. */
#ifndef NOSTALL_EXT3_FILE_DATA_H
#define NOSTALL_EXT3_FILE_DATA_H

#include "extfs/core/ext3_fsops.h"
#include "extfs/core/write.h"

struct page_mapping;

/* Does this mount keep file data in the page cache (every mode but
 * data=journal)? */
bool ext3_data_paged(const struct ext3_fs *fs);
/* The inode's page mapping, created on first use. Caller holds in->lock as
 * writer. */
int ext3_data_mapping(struct ext3_inode *in, struct page_mapping **out);
/* Ordered data: file the inode's jbd_inode (created on first use) in h's
 * transaction, so its commit writes the inode's dirty pages first. A no-op
 * outside data=ordered and data=guarded (guarded.c files it only for a hole
 * fill or a partial block's tail). Caller holds in->lock as writer. */
int ext3_data_order(struct jbd_handle *h, struct ext3_inode *in);
/* ext3_data_order for data=guarded's fsync (any data mode with a page
 * mapping): strict, an error writing it aborts that commit whatever
 * data_err says (jbd_inode_file_strict). in->lock held. */
int ext3_data_order_strict(struct jbd_handle *h, struct ext3_inode *in);
/* data=guarded's state of the mount (guarded.c), NULL in the other modes. */
struct ext3_guarded *ext3_data_guard(const struct ext3_fs *fs);
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
/* The largest file size (indirect-block limit and i_blocks' 32 bits, as
 * ext3_max_size). */
uint64_t ext3_data_max_size(const struct ext3_fs *fs);

#endif
