/* Private to src/ext3: the layout of struct ext3_fs and the internal
 * interfaces between its files. Others use ext3.h.
 *
 * Layers (a file only calls into its own layer or the ones below; nothing
 * calls in a circle):
 *   core       geom.c (pure geometry), core.c (ext3_bread, inode location)
 *   metadata   super.c (superblock + descriptors), inode.c (inodes, block
 *              map), dir.c, path.c, xattr.c, file_read.c
 *   mount      mount_opts.c, mount.c, ext3_journal.c
 *   mkfs       mkfs_layout.c, mkfs_write.c: a leaf on top of geom.c; nothing
 *              in src/ext3 uses it. */
#ifndef NOSTALL_EXT3_EXT3_INT_H
#define NOSTALL_EXT3_EXT3_INT_H

#include "ext3/ext3.h"
#include "ext3/geom.h"

/* Everything below is set by ext3_fs_mount() and read-only afterwards (no
 * lock needed to read it). */
struct ext3_fs {
	struct dev *dev;            /* not owned */
	struct blk_queue *q;        /* owned */
	struct buf_cache *cache;    /* owned */
	struct ext3_super_block sb; /* on-disk copy (little-endian) */
	uint32_t sb_block;          /* filesystem block of the superblock used */
	uint32_t rev;
	struct ext3_geom g;         /* group geometry (geom.h) */
	uint64_t overhead;          /* statfs overhead (ext3_geom_overhead) */
	uint32_t first_ino;
	uint32_t compat, incompat, ro_compat;
	bool needs_recovery;
	bool unknown_ro_compat;
	bool has_filetype;
	bool unsigned_hash;
	bool noload;
	uint32_t hash_seed[4];
	uint8_t def_hash_version;
	char ro_reason[256];
	struct ext3_group_desc *gd; /* [groups], host byte order */
	struct ext3_mount_opts opts; /* in effect (data_mode resolved, blk_opts NULL) */
	struct ext3_journal *jmap;  /* EXT3_MOUNT_JOURNAL: the journal's block map */
	struct jbd_journal *journal; /* EXT3_MOUNT_JOURNAL: the loaded journal */
};

/* ---- the core: below everything else in src/ext3 (core.c) ---- */

/* Where inode ino lives: inode-table block and byte offset in it. ino must
 * be in 1..inodes_count. */
void ext3_fs_inode_loc(const struct ext3_fs *fs, uint32_t ino, uint64_t *blk, unsigned *off);

/* ---- superblock and descriptors (super.c, used by mount.c) ---- */

/* Read the superblock (the primary, or the backup at block sb_block),
 * check it and the device size, fill fs's geometry and feature fields. */
int ext3_super_load(struct ext3_fs *fs, uint64_t sb_block);
/* Read and check the group descriptor table (needs fs->cache). */
int ext3_gdt_load(struct ext3_fs *fs);

#endif
