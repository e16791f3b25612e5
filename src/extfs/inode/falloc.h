/* fallocate's block work on an extent file (falloc.c; docs/write-inode.md,
 * "fallocate"): the tree changes under their own handles. The file data
 * layer (extfs/data/file_falloc.c, ext3_fallocate) checks the call, the
 * page cache and the size around them.
 *
 * Every call: the caller holds in->lock as writer and no handle; in is an
 * extent inode (ext3_bmap_ops_of(in) == &ext3_bmap_ext_ops) on a writable
 * mount. Blocks are logical (32-bit in the tree; end up to 2^32). */
#ifndef NOSTALL_EXTFS_INODE_FALLOC_H
#define NOSTALL_EXTFS_INODE_FALLOC_H

#include "extfs/core/write.h"

/* Is in mapped by an extent tree (fallocate's other modes need one)? */
bool ext4_falloc_supported(const struct ext3_inode *in);

/* Map every hole of [first, end) to newly allocated blocks as unwritten
 * extents (at most 32767 blocks each), near the extent on the left. Blocks
 * already mapped (written or not) stay. Stops at the first error: what was
 * allocated stays mapped (unwritten, consistent), *reached says how far
 * the range is mapped from first on (end when all went well). -ENOSPC
 * after the retries ext3_should_retry_alloc allows. */
int ext4_falloc_alloc(struct ext3_inode *in, uint32_t first, uint64_t end, uint64_t *reached);

/* Turn the written extents of [first, end) unwritten (ZERO_RANGE: the data
 * reads as zeros from then on; the blocks stay allocated). */
int ext4_falloc_to_unwritten(struct ext3_inode *in, uint32_t first, uint64_t end);

/* Unmap [first, end) and free its blocks (PUNCH_HOLE), in restartable
 * steps: every committed transaction leaves a consistent tree. data=journal
 * (ext3_inode_data_is_meta): the freed data blocks are revoked. */
int ext4_falloc_punch(struct ext3_inode *in, uint32_t first, uint64_t end);

/* SEEK_DATA / SEEK_HOLE inside a run that the block map reads as a hole at
 * logical block b (count blocks): *data tells whether block b holds data,
 * *n how many blocks from b have the same answer (1..count). The kernel's
 * rule: an unwritten extent is a hole except where the page cache holds a
 * page of it (uptodate or dirty); a real hole is a hole (and every hole of
 * an indirect-mapped file). Takes in->lock as reader. */
int ext4_falloc_seek_run(struct ext3_inode *in, uint64_t b, uint64_t count, bool *data, uint64_t *n);

#endif
