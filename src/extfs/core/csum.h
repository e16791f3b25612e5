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
struct buffer_head;

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

/* ---- set side: the write path (issue 39) ----
 * Each one stores the checksum of the object as it stands in memory (the
 * buffer's bytes), and does nothing on a filesystem without that checksum.
 * The caller holds the lock that protects the object (docs/ext4-csum.md,
 * "The write side"): the inode's lock for an inode slot, the group's lock
 * for a descriptor and its bitmaps, sb_lock for the superblock, the
 * directory's lock for its blocks, the xattr block's buffer lock. */

/* Does the filesystem checksum its group descriptors (metadata_csum or
 * gdt_csum: the kernel's ext4_has_group_desc_csum)? Then BLOCK_UNINIT,
 * INODE_UNINIT and bg_itable_unused mean what they say. */
bool ext4_has_group_desc_csum(const struct ext3_fs *fs);
/* The superblock's bytes (1024): s_checksum at 0x3FC. */
void ext4_sb_csum_update(const struct ext3_fs *fs, void *sb);
/* The same for the superblock's journaled buffer (the superblock at byte
 * off of it), deferred to the journal's copy like a directory leaf's
 * (below): every allocation journals the superblock's counts. */
void ext4_sb_csum_defer(const struct ext3_fs *fs, struct buffer_head *bh, unsigned off);
/* Group descriptor g as on disk (desc_size bytes): bg_checksum (crc32c
 * with metadata_csum, crc16 with gdt_csum). */
void ext4_gd_csum_update(const struct ext3_fs *fs, uint32_t g, void *desc);
/* A group's bitmap checksum (the value of bg_*_bitmap_csum_lo/hi), over
 * clusters_per_group / 8 or inodes_per_group / 8 bytes; 0 without
 * metadata_csum. */
uint32_t ext4_bitmap_csum_of(const struct ext3_fs *fs, bool inode_bitmap, const void *bitmap);
/* Store it into a raw descriptor (the high half only when desc_size has
 * one). */
/* Update *csum, the sum of a bitmap, for the flip of bits [bit, bit +
 * nbits) (crc32c is linear: the sum changes by the sum of the flipped
 * mask alone, carried to the bitmap's end). false (nothing changed) for a
 * range past the bitmap or too long to gain from it: sum it again. */
bool ext4_bitmap_csum_flip(const struct ext3_fs *fs, bool inode_bitmap, uint32_t *csum, uint32_t bit,
			   uint32_t nbits);
void ext4_gd_bitmap_csum_put(const struct ext3_fs *fs, void *desc, bool inode_bitmap, uint32_t csum);
/* An inode slot (inode_size bytes): i_checksum_lo, and _hi when
 * i_extra_isize covers it. */
void ext4_inode_csum_update(const struct ext3_fs *fs, uint32_t ino, void *raw);
/* The same with the inode's seed from ext4_inode_csum_seed. */
void ext4_inode_csum_update_seeded(const struct ext3_fs *fs, uint32_t seed, void *raw);
/* The checksum seed of in's objects (its inode, directory blocks, extent
 * blocks) at generation gen: crc32c(fs seed, ino, gen), kept in the inode
 * (in->csum_seed) so that every change does not sum it again. */
struct ext3_inode;
uint32_t ext4_inode_csum_seed(const struct ext3_inode *in, uint32_t gen);
/* A directory leaf block of (ino, gen): writes the 12-byte tail entry and
 * its checksum (the caller's entries end at block_size - 12). */
void ext4_dirblock_csum_update(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, void *block);
/* An htree block (root: count_off 0x20, node: 0x08): its dx_tail
 * (dt_reserved 0, dt_checksum) after limit entries. */
void ext4_dx_csum_update(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, void *block, unsigned count_off);
/* The same two for a journaled buffer, deferred (buf_csum_defer): the
 * dir tail's header is written now, the sums when the journal takes the
 * block's log or frozen copy, once per transaction instead of once per
 * change. Without a journal (ext2) they are computed at once. An htree or
 * xattr block's sum is computed at once (xxx_csum_update) and cancels a
 * deferred one: a leaf turned into an htree root keeps no leaf sum. */
void ext4_dirblock_csum_defer(const struct ext3_inode *dir, struct buffer_head *bh);
void ext4_extent_block_csum_defer(const struct ext3_inode *in, struct buffer_head *bh);
/* An xattr block at block number blk: h_checksum. */
void ext4_xattr_block_csum_update(const struct ext3_fs *fs, uint64_t blk, void *block);
/* The bytes a directory leaf keeps for its tail (12 with metadata_csum,
 * else 0). */
unsigned ext4_dir_tail_bytes(const struct ext3_fs *fs);

#endif
