/* Private to mkfs_layout.c and mkfs_write.c. */
#ifndef NOSTALL_EXT3_MKFS_INT_H
#define NOSTALL_EXT3_MKFS_INT_H

#include "extfs/mkfs/mkfs.h"

/* Advance the allocation cursor over n free blocks (skipping each group's
 * static metadata); *first gets the first one. -ENOSPC when the filesystem
 * ends first. The layout computation and the writer make the same calls, so
 * the writer's allocations match the layout. */
int mkfs_cursor_take(const struct ext3_mkfs_layout *l, uint32_t *cursor, uint64_t n,
		     uint32_t *first);

/* The extents a file of n blocks gets from the cursor (runs split at
 * group metadata and at EXT4_EXT_INIT_MAX_LEN); the first max are stored in
 * runs (may be NULL with max 0). Returns the count or -ENOSPC. The cursor
 * is not moved. */
struct mkfs_run {
	uint32_t start, len;
};
int mkfs_extent_runs(const struct ext3_mkfs_layout *l, uint32_t cursor, uint64_t n,
		     struct mkfs_run *runs, uint32_t max);

/* Group g's bitmaps and inode table (mkfs_group.c: the standard place, or
 * packed per flex group with flex_bg). -ENOSPC when the flex group's
 * metadata would run past the end of the filesystem. */
struct mkfs_gmeta {
	uint64_t block_bitmap, inode_bitmap, inode_table;
};
int mkfs_group_meta(const struct ext3_mkfs_layout *l, uint32_t g, struct mkfs_gmeta *out);
/* The first block of group g that data may take: after its superblock copy
 * and every bitmap or inode table placed in it. */
uint64_t mkfs_data0(const struct ext3_mkfs_layout *l, uint32_t g);
/* Group g's block and inode bitmaps (block_size bytes each), and its free
 * block count (the same sets, counted). */
void mkfs_group_bitmaps(const struct ext3_mkfs_layout *l, uint32_t g, uint8_t *bbm, uint8_t *ibm);
uint32_t mkfs_group_free_blocks(const struct ext3_mkfs_layout *l, uint32_t g);

#endif
