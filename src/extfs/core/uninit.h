/* ext4 uninitialised groups (uninit_bg / metadata_csum; docs/ext4-csum.md,
 * "Uninitialised groups"): a group flagged BLOCK_UNINIT has no block
 * bitmap on disk and one INODE_UNINIT no inode bitmap (nor any inode in
 * use); whoever reads such a bitmap builds it in memory, as the kernel's
 * ext4_init_block_bitmap and ext4_read_inode_bitmap do. Pure functions
 * over the mounted geometry and descriptors: no I/O, no locks (the caller
 * holds the group's lock when it then writes the bitmap). */
#ifndef NOSTALL_EXTFS_UNINIT_H
#define NOSTALL_EXTFS_UNINIT_H

#include <stdbool.h>
#include <stdint.h>

struct ext3_fs;

/* Group g's block bitmap as it stands before any data block of the group
 * is used, into bm (block_size bytes): the superblock backup and
 * descriptor blocks at the group's start, every group's bitmaps and inode
 * table that lie in this group (with flex_bg another group's may; the
 * kernel only looks at the group's own, nostall at all of them so that no
 * metadata block can ever look free), and the bits past the group's last
 * block up to the end of the bitmap block. Returns the free count. */
uint32_t ext4_block_bitmap_init(const struct ext3_fs *fs, uint32_t g, uint8_t *bm);
/* An INODE_UNINIT group's inode bitmap: no inode in use, the bits past
 * inodes_per_group set. */
void ext4_inode_bitmap_init(const struct ext3_fs *fs, uint8_t *bm);
/* Does group g's bitmap of that kind have to be built rather than read
 * (the flag is set on a filesystem with descriptor checksums)? Reads the
 * live flags with a relaxed load (they change under the group lock). */
bool ext4_group_bitmap_uninit(const struct ext3_fs *fs, uint32_t g, bool inode_bitmap);

#endif
