/* Helpers shared by inode_write.c, truncate.c, orphan.c and icache.c (the
 * inode part of the write path; docs/write-inode.md). Private to those
 * files; the contract is write.h. */
#ifndef NOSTALL_EXT3_INODE_WRITE_H
#define NOSTALL_EXT3_INODE_WRITE_H

#include "extfs/core/write.h"

/* Encode in (decoded fields, i_disksize) into in->raw and copy raw into the
 * inode-table block under write access (no large_file check). The caller
 * holds in->lock as writer; orphan_locked: it also holds fs->orphan_lock
 * (otherwise an orphan inode is encoded under it here). */
int ext3_inode_write_raw(struct jbd_handle *h, struct ext3_inode *in, bool orphan_locked);
/* Rewrite only the on-disk i_dtime of an orphan inode (the chain's next
 * pointer: in->orphan_next's number) in raw and the inode table; for a
 * predecessor whose lock the caller does not hold. Caller holds
 * fs->orphan_lock. */
int ext3_inode_write_orphan_next(struct jbd_handle *h, struct ext3_inode *in);
/* Inode cache (icache.c): at unmount, with every reference put, free the
 * unlinked inodes still cached and hand every inode to ext3_data_evict. */
void ext3_icache_evict_all(struct ext3_fs *fs);
/* Is inode ino marked in use in its group's inode bitmap? */
int ext3_inode_bitmap_test(struct ext3_fs *fs, uint32_t ino, bool *in_use);
/* Are the inode's data blocks journaled (directories, symlinks,
 * data=journal): freeing them forgets/revokes them. */
bool ext3_inode_data_is_meta(const struct ext3_inode *in);

#endif
