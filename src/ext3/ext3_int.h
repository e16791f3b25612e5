/* Private to src/ext3: the layout of struct ext3_fs and helpers shared by
 * super.c, inode.c, dir.c, xattr.c and path.c. Others use ext3.h. */
#ifndef NOSTALL_EXT3_EXT3_INT_H
#define NOSTALL_EXT3_EXT3_INT_H

#include "ext3/ext3.h"
#include "ext3/mkfs.h"

/* Everything below is set by ext3_fs_mount() and read-only afterwards (no
 * lock needed to read it). */
struct ext3_fs {
	struct dev *dev;            /* not owned */
	struct blk_queue *q;        /* owned */
	struct buf_cache *cache;    /* owned */
	struct ext3_super_block sb; /* on-disk copy (little-endian) */
	uint32_t sb_block;          /* filesystem block of the superblock used */
	uint32_t rev;
	uint32_t block_size;
	uint32_t blocks_count;
	uint32_t first_data_block;
	uint32_t blocks_per_group;
	uint32_t inodes_per_group;
	uint32_t inodes_count;
	uint32_t inode_size;
	uint32_t inodes_per_block;
	uint32_t itable_blocks;     /* inode table blocks per group */
	uint32_t first_ino;
	uint32_t groups;
	uint32_t desc_per_block;
	uint32_t desc_blocks;
	uint32_t reserved_gdt_blocks;
	uint32_t apb;               /* block numbers per indirect block */
	uint32_t compat, incompat, ro_compat;
	bool needs_recovery;
	bool unknown_ro_compat;
	bool has_filetype;
	bool sparse_super;
	bool unsigned_hash;
	bool noload;
	uint32_t hash_seed[4];
	uint8_t def_hash_version;
	char ro_reason[256];
	struct ext3_group_desc *gd; /* [groups], host byte order */
};

/* Does group g hold a superblock backup (all groups without sparse_super)? */
bool ext3_fs_group_has_super(const struct ext3_fs *fs, uint32_t g);

#endif
