/* ext3 group and layout geometry: pure arithmetic over the numbers in the
 * superblock, shared by the mount checks, statfs, mkfs and the (coming)
 * block and inode allocators. No I/O, no allocation, no locks: a struct
 * ext3_geom is filled once (mount, or mkfs's layout computation) and only
 * read afterwards. See docs/ext3-format.md, "Groups".
 *
 * Blocks and inodes: group g covers blocks first_data_block + g *
 * blocks_per_group onwards (the last group may be shorter) and inodes
 * g * inodes_per_group + 1 onwards. Groups 0, 1 and the powers of 3, 5 and 7
 * hold a superblock backup and the descriptor table (GDT) plus the reserved
 * GDT blocks (sparse_super); without sparse_super every group does.
 */
#ifndef NOSTALL_EXT3_GEOM_H
#define NOSTALL_EXT3_GEOM_H

#include <stdbool.h>
#include <stdint.h>

struct ext3_geom {
	uint32_t block_size;
	uint32_t blocks_count;
	uint32_t first_data_block;   /* 1 with 1 KiB blocks, else 0 */
	uint32_t blocks_per_group;
	uint32_t inodes_per_group;
	uint32_t inodes_count;
	uint32_t inode_size;
	uint32_t inodes_per_block;
	uint32_t itable_blocks;      /* inode table blocks per group */
	uint32_t groups;
	uint32_t desc_size;          /* bytes per group descriptor: 32, or s_desc_size
				      * with 64bit (0 at derive: 32) */
	uint32_t desc_per_block;
	uint32_t desc_blocks;        /* GDT blocks per copy */
	uint32_t reserved_gdt_blocks;
	uint32_t apb;                /* block numbers per indirect block */
	bool sparse_super;
	/* meta_bg: descriptor block nr >= first_meta_bg lives in the first
	 * group of "its" metagroup (the desc_per_block groups it describes),
	 * after that group's superblock backup if any, with copies in the
	 * metagroup's second and last groups. Descriptor blocks below
	 * first_meta_bg stay in the classic table after each superblock. */
	bool meta_bg;
	uint32_t first_meta_bg;      /* <= desc_blocks (checked at mount) */
};

/* Fill the derived fields (groups, desc_per_block, desc_blocks,
 * inodes_per_block, itable_blocks, apb, inodes_count) from block_size,
 * blocks_count, first_data_block, blocks_per_group, inodes_per_group and
 * inode_size. The caller has checked that they are sane (no division by 0,
 * blocks_count > first_data_block). */
void ext3_geom_derive(struct ext3_geom *g);

/* sparse_super's rule: does group grp hold a superblock + GDT backup (0, 1
 * and powers of 3, 5 and 7)? */
bool ext3_group_has_super(uint32_t grp);
/* The same for this filesystem (every group without sparse_super). */
bool ext3_geom_has_super(const struct ext3_geom *g, uint32_t grp);

uint32_t ext3_geom_group_of_block(const struct ext3_geom *g, uint64_t blk);
uint32_t ext3_geom_group_of_ino(const struct ext3_geom *g, uint32_t ino);
/* Index of inode ino inside its group (0-based). */
uint32_t ext3_geom_ino_index(const struct ext3_geom *g, uint32_t ino);
uint64_t ext3_geom_group_first(const struct ext3_geom *g, uint32_t grp);
/* Blocks in group grp (the last one may be shorter). */
uint32_t ext3_geom_group_blocks(const struct ext3_geom *g, uint32_t grp);
/* Blocks at the start of group grp taken by the superblock copy, the GDT and
 * the reserved GDT blocks (0 in a group without a backup); with meta_bg, the
 * classic table holds first_meta_bg blocks only (no reserved ones, as
 * e2fsprogs counts them), and the first, second and last group of each
 * metagroup from first_meta_bg on hold one descriptor block instead. */
uint32_t ext3_geom_super_blocks(const struct ext3_geom *g, uint32_t grp);
/* Where descriptor block nr (0 .. desc_blocks-1) of the primary copy is,
 * the classic table following the superblock at sb_block (which may be a
 * backup's, mount -o sb=). */
uint64_t ext3_geom_desc_block(const struct ext3_geom *g, uint64_t sb_block, uint32_t nr);
/* The standard (mke2fs without flex_bg) placement: block bitmap right after
 * the superblock copy, then the inode bitmap, then the inode table. A
 * mounted filesystem reads the real locations from its descriptors. */
uint64_t ext3_geom_std_block_bitmap(const struct ext3_geom *g, uint32_t grp);
/* Static metadata blocks at the start of group grp in the standard placement
 * (super_blocks + 2 bitmaps + inode table). */
uint32_t ext3_geom_group_meta(const struct ext3_geom *g, uint32_t grp);
/* statfs overhead like ext3_statfs: blocks before first_data_block, each
 * backup's superblock + GDT (not the reserved GDT blocks), and every group's
 * bitmaps and inode table. */
uint64_t ext3_geom_overhead(const struct ext3_geom *g);

#endif
