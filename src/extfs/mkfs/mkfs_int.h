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

#endif
