/* Reading an ext4 extent tree (format: extfs/format/ext4_extent.h).
 *
 * ext4_ext_lookup finds what maps a logical block: an extent (its physical
 * block and how many blocks from there on are contiguous in it, and
 * whether it is unwritten) or a hole (how many blocks until the next
 * mapped block, so a reader can skip it in one step). It checks every
 * header it passes as the kernel's ext4_ext_check does (magic, entries
 * within eh_max, eh_max within the room, the depth each level must have,
 * depth at most 5, entries sorted, physical blocks inside the filesystem)
 * and answers -EUCLEAN with a message naming the inode and the block on
 * any violation: a corrupt tree is an error, never a guess.
 *
 * Tree blocks are read through the caller's callback, so the walk is the
 * same for the block-map layer (through the buffer cache), the crash
 * checker and the unit tests (an array of blocks). */
#ifndef NOSTALL_EXTFS_EXTENT_H
#define NOSTALL_EXTFS_EXTENT_H

#include <stdbool.h>
#include <stdint.h>

struct ext4_ext_source {
	/* Read tree block pblk (block_size bytes) into buf: 0 or -errno. */
	int (*read)(void *ctx, uint64_t pblk, void *buf);
	/* Or, when set (read is then unused): the block in place, valid
	 * until put(ctx, *ref), or NULL with *err. *checked: the block
	 * passed ext4_ext_node_check since it was read from disk (a cached
	 * buffer that was: the kernel's buffer_verified), so its entries are
	 * not walked again. The caller keeps writers of the tree out. */
	const void *(*get)(void *ctx, uint64_t pblk, void **ref, bool *checked, int *err);
	void (*put)(void *ctx, void *ref);
	void *ctx;
	unsigned block_size;
	uint64_t blocks_count; /* physical blocks past this are corrupt */
	uint32_t ino;          /* for messages */
};

struct ext4_ext_map {
	uint64_t pblk;  /* physical block of lblk; 0 for a hole */
	uint32_t len;   /* blocks from lblk on: in the extent, or in the hole
			 * (a hole after the last extent reaches 2^32) */
	bool unwritten; /* an unwritten extent: reads as zeros */
};

/* Map lblk through the tree rooted in i_block (the inode's 60 bytes).
 * scratch: block_size bytes the walk reads tree blocks into (NULL with a
 * get source). */
int ext4_ext_lookup(const struct ext4_ext_source *src, const void *i_block, uint32_t lblk, void *scratch,
		    struct ext4_ext_map *out);

/* The checks ext4_ext_lookup makes of a tree block (block_size bytes at
 * pblk), except the depth its parent gives it: for a get source that
 * checks a block once per read from disk. 0 or -EUCLEAN with a message. */
int ext4_ext_node_check(const struct ext4_ext_source *src, const void *node, uint64_t pblk);

#endif
