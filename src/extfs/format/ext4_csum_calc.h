/* ext4 metadata_csum arithmetic on raw on-disk bytes, with no filesystem
 * object: the "set" side used by mkfs (which has no mounted ext3_fs), next to
 * the verify side in extfs/core/csum.c (same formulas, docs/ext4-csum.md).
 * seed = ext4_csum_seed_of(uuid) = crc32c(~0, uuid, 16) (no
 * metadata_csum_seed: mkfs never sets it). Pure functions, no I/O, no locks. */
#ifndef NOSTALL_EXT4_CSUM_CALC_H
#define NOSTALL_EXT4_CSUM_CALC_H

#include <stddef.h>
#include <stdint.h>

uint32_t ext4_csum_seed_of(const uint8_t uuid[16]);
/* Superblock (1024 bytes): s_checksum at 0x3FC = crc32c(~0, first 1020). */
void ext4_sb_csum_set(void *sb);
/* Group descriptor g (desc_size bytes): bg_checksum at 0x1E, the low 16
 * bits of crc32c(seed, le32 g, descriptor with the field taken as zero). */
void ext4_gd_csum_set(uint32_t seed, uint32_t g, void *desc, size_t desc_size);
/* A block or inode bitmap (len = blocks_per_group / 8 or inodes_per_group
 * / 8 bytes): the value for bg_*_bitmap_csum_lo/_hi. */
uint32_t ext4_bitmap_csum(uint32_t seed, const void *bm, size_t len);
/* Inode ino (inode_size bytes, i_generation read from it): the low half at
 * 0x7C and, when i_extra_isize >= 4, the high half at 0x82. */
void ext4_inode_csum_set(uint32_t seed, uint32_t ino, void *raw, size_t inode_size);
/* A directory leaf block of inode (ino, gen) ending in the 12-byte tail
 * entry: writes the tail (inode 0, rec_len 12, type 0xDE) and its checksum.
 * The caller left the last 12 bytes to it. */
void ext4_dirblock_tail_set(uint32_t seed, uint32_t ino, uint32_t gen, void *block, size_t bs);
/* An extent tree block of (ino, gen): the 4 bytes after eh_max entries. */
void ext4_extent_block_csum_set(uint32_t seed, uint32_t ino, uint32_t gen, void *block);

#endif
