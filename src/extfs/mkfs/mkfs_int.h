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

#endif
