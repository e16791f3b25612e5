/* ext4 metadata checksums (metadata_csum, and gdt_csum's crc16 for
 * uninit_bg), as the kernel computes them (docs/ext4-csum.md). The seed is
 * s_checksum_seed with metadata_csum_seed, else the crc32c of the uuid;
 * per-inode objects chain the inode number and generation on top of it.
 * Each _ok function answers true when the object's stored checksum holds,
 * or when the filesystem has no such checksum. */
#ifndef NOSTALL_EXTFS_CSUM_H
#define NOSTALL_EXTFS_CSUM_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct ext3_fs;

/* At mount, after the superblock is read: the seed and which checksums
 * the filesystem carries. -EBADMSG (with a message) when the superblock's
 * own checksum fails, -EUCLEAN for an unknown checksum type. */
int ext4_csum_init(struct ext3_fs *fs);
bool ext4_has_metadata_csum(const struct ext3_fs *fs);

/* Group descriptor g as on disk (desc_size bytes). */
bool ext4_gd_csum_ok(const struct ext3_fs *fs, uint32_t g, const void *desc);
/* An inode as on disk (inode_size bytes). An all-zero inode (never used,
 * lazily initialised tables) has no checksum to hold. */
bool ext4_inode_csum_ok(const struct ext3_fs *fs, uint32_t ino, const void *raw);
/* An extent tree block of inode ino (generation gen): the tail after
 * eh_max entries. */
bool ext4_extent_block_csum_ok(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, const void *block);
/* Set that tail (nothing without metadata_csum): before the block is
 * dirtied, after its last change in the handle (the extent map's writes). */
void ext4_extent_block_csum_update(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, void *block);

/* Directory blocks (dir/): does b look like an htree block (a node's
 * single empty entry, or a root's "." and ".." of 12 and bs - 12 bytes), the
 * kernel's is_dx_block; a leaf's checksum (the 12-byte tail entry, whose
 * absence is a mismatch, as the kernel's); an htree block's (dx_tail after
 * limit entries of the count/limit array at byte count_off). */
bool ext4_dir_is_dx_block(const uint8_t *b, unsigned bs);
bool ext4_dirblock_csum_ok(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, const void *block);
bool ext4_dx_csum_ok(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, const void *block, unsigned count_off);

/* ---- verify side: xattr blocks and bitmaps (issue 38) ---- */

/* An xattr block at block number blk: crc32c(seed, le64 blk, the block
 * with h_checksum at 0x10 taken as zero); not per inode (blocks are
 * shared). */
bool ext4_xattr_block_csum_ok(const struct ext3_fs *fs, uint64_t blk, const void *block);
/* A group's block (inode_bitmap false) or inode bitmap against the
 * bg_*_bitmap_csum_lo/hi fields of its raw descriptor (desc_size bytes):
 * crc32c(seed, clusters_per_group / 8 or inodes_per_group / 8 bytes),
 * only the low 16 bits when the descriptor has no high half. */
bool ext4_bitmap_csum_ok(const struct ext3_fs *fs, const void *desc, bool inode_bitmap, const void *bitmap);

#endif
