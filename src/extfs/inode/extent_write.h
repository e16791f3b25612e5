/* Changing an ext4 extent tree (format: extfs/format/ext4_extent.h; the
 * read side: extent.h). The contract between the extent map (bmap_ext.c,
 * extent_write*.c) and its other users (fallocate, falloc.c; the data
 * paths through ext3_get_blocks). Private to src/extfs/inode.
 *
 * Every call: the caller holds in->lock as writer and a running handle
 * with at least ext4_ext_credits() credits for the call (remove takes a
 * truncate context and restarts the handle itself between steps). Tree
 * blocks are journaled metadata with their metadata_csum tail set before
 * they are dirtied; the inode's root (i_block) changes in memory and the
 * inode is marked dirty by the call. i_blocks counts the tree blocks the
 * call allocates or frees; data blocks: see each call. Corrupt trees
 * answer -EUCLEAN through ext3_fs_error; nothing is written over them.
 *
 * Limits: an initialized extent holds at most 32768 blocks, an unwritten
 * one 32767 (EXT4_EXT_INIT_MAX_LEN / EXT4_EXT_UNINIT_MAX_LEN); logical
 * blocks are 32-bit. */
#ifndef NOSTALL_EXTFS_EXTENT_WRITE_H
#define NOSTALL_EXTFS_EXTENT_WRITE_H

#include "extfs/inode/bmap.h"
#include "extfs/inode/extent.h"

/* Credits one insert / convert may use: every node on the path (depth + 1,
 * split), a new tree level, the new tree blocks' bitmaps and descriptors,
 * the inode, the superblock. */
int ext4_ext_credits(const struct ext3_fs *fs, const struct ext3_inode *in);

/* Map the 32-bit logical block lblk as the tree says (ext4_ext_lookup
 * through the buffer cache): out->unwritten for an unwritten extent. */
int ext4_ext_map(struct ext3_inode *in, uint32_t lblk, struct ext4_ext_map *out);

/* Map [lblk, lblk + len) to [pblk, pblk + len): the range must be a hole
 * in the tree (-EEXIST otherwise). Merged with the neighbouring extents
 * when contiguous on both sides and of the same kind (within the length
 * limit), split into several extents past it; leaves and index nodes
 * split when full, the tree grows a level when the root is full (the
 * in-inode root moves to a block). Data blocks are the caller's: it has
 * allocated them and added them to i_blocks. */
int ext4_ext_insert(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint64_t pblk, uint32_t len,
		    bool unwritten);
/* The same, leaving the inode to the caller: it writes it in the same
 * handle, also when this fails (the root in i_block may have changed).
 * get_blocks writes it anyway for i_blocks: one inode write (and
 * checksum) per allocation instead of two. */
int ext4_ext_insert_nowrite(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint64_t pblk,
			    uint32_t len, bool unwritten);

/* Change the state of the mapped blocks in [lblk, lblk + len) to unwritten
 * (to_unwritten: ZERO_RANGE) or initialized (data landed in an unwritten
 * extent), splitting extents at the range's edges and merging with
 * neighbours of the new state; holes in the range are skipped. */
int ext4_ext_convert(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint32_t len, bool to_unwritten);
/* The same, the inode left to the caller (as ext4_ext_insert_nowrite). */
int ext4_ext_convert_nowrite(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint32_t len,
			     bool to_unwritten);

/* Remove every mapping in [first, end) (end up to 2^32: truncate) and free
 * the data blocks (metadata: t->meta, data=journal) and the tree blocks
 * left empty, lowering i_blocks for both; an extent straddling an edge is
 * cut (punching inside one extent splits it in two). In steps of at most
 * EXT3_BMAP_TRUNC_STEP_CREDITS-sized changes with ext3_bmap_trunc_room
 * between them, so that each committed transaction leaves a consistent
 * tree. The tree keeps its depth while it holds an extent (no tree
 * reduction, as the kernel's ext4_ext_remove_space and e2fsprogs' punch:
 * an orphan truncate finished by e2fsck frees the same blocks); a tree
 * left empty is an empty root leaf of depth 0 again. */
int ext4_ext_remove(struct ext3_bmap_trunc *t, uint32_t first, uint64_t end);

/* Added with the implementation (additive to the agreed contract): */

/* The allocation goal for a data block at lblk: after the last block
 * allocated for the inode when lblk follows it, else as far from the
 * nearest extent's physical start as lblk is from its logical one
 * (ext4_ext_find_goal), else near the leaf; 0: near the inode. */
uint64_t ext4_ext_find_goal(struct ext3_inode *in, uint32_t lblk);

/* An empty tree in i_block (depth 0, eh_max 4) and EXT4_EXTENTS_FL. */
void ext4_ext_root_init(struct ext3_inode *in);
/* ext3_new_inode's step: on a filesystem with the extent feature, regular
 * files, directories and symlinks start extent-mapped (a fast symlink
 * clears the flag when its target goes into i_block). */
void ext4_ext_new_inode_init(struct ext3_inode *in);

#endif
