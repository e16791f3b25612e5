/* The block-map interface: how an inode's logical blocks map to physical
 * ones, with one implementation per on-disk map kind behind an ops table
 * (docs/write-inode.md, "Block map"). Linux's ext4 does the same:
 * ext4_map_blocks dispatches to ext4_ext_map_blocks or ext4_ind_map_blocks,
 * truncate likewise.
 *
 * Callers use the dispatchers only, declared with the rest of the inode
 * API: ext3_inode_bmap / ext3_inode_bmap_locked (one block),
 * ext3_inode_map_run / _guess / _prefetch (runs for the read path, core
 * ext3.h), ext3_get_blocks (map with or without allocation, write.h),
 * ext3_bmap_truncate (free from a logical block on, below), ext3_max_blocks,
 * ext3_inode_map_invalidate / ext3_inode_map_drop (the per-inode map
 * cache). bmap.c holds the dispatchers and picks the table per inode
 * (ext3_bmap_ops_of); bmap_ind*.c is the indirect map of ext2/ext3 (12
 * direct pointers, single/double/triple indirect trees), the only code
 * outside mkfs and the format header that knows that layout. An inode with
 * EXT4_EXTENTS_FL on a filesystem with the extent feature gets a table that
 * refuses (-EOPNOTSUPP) until the extent tree lands beside bmap_ind.c.
 *
 * Private to src/extfs/inode (and the unit tests).
 */
#ifndef NOSTALL_EXT3_BMAP_H
#define NOSTALL_EXT3_BMAP_H

#include "extfs/inode/inode_write.h"

/* The per-inode map cache (in->map, under in->map_lock; or a caller's own,
 * ext3_map_cache_new): what the implementation keeps of its last lookup so
 * that a sequential scan does not walk the map once per block. The indirect
 * map keeps a copy of its last leaf pointer block. Resetting (valid = false)
 * and freeing it are the same for every implementation, so the cache
 * survives a change of the inode's map kind (a freed inode reused). Only
 * valid while the map cannot change: every change of the map invalidates
 * the inode's. */
struct ext3_map_cache {
	bool valid;
	/* extent (a tree with a level below the root): the last runs found,
	 * extents and holes alike, so a directory whose few blocks lie in
	 * separate extents maps each block without a tree-block lookup (the
	 * kernel keeps them all, its extent status tree). Slots are reused
	 * round-robin. */
	uint8_t ext_n, ext_next;
	struct ext3_map_run {
		uint32_t lblk, len; /* [lblk, lblk + len) */
		uint64_t pblk;      /* of lblk; 0: a hole */
		bool unwritten;
	} ext[8];
	uint32_t leaf_blk;          /* indirect: the pointer block copied */
	uint64_t first;             /* indirect: logical block mapped by ptr[0] */
	uint32_t n;                 /* indirect: pointers (apb) */
	uint32_t ptr[EXT3_MAX_BLOCK_SIZE / 4]; /* indirect: host order */
};

/* Credits one freeing step of a truncate may use: the parent pointer block,
 * the inode, two bitmaps and two descriptors (a run across a group
 * boundary), the superblock. */
#define EXT3_BMAP_TRUNC_STEP_CREDITS 8

/* A truncate in progress (truncate.c sets it up, the map frees): the running
 * handle and its credit budget. The implementation frees in steps of at
 * most EXT3_BMAP_TRUNC_STEP_CREDITS, calling ext3_bmap_trunc_room before
 * each, so that every committed transaction leaves a consistent map. */
struct ext3_bmap_trunc {
	struct ext3_inode *in;
	struct ext3_fs *fs;
	struct jbd_handle *h;
	int budget;     /* credits left by our own count */
	int credits;    /* a fresh handle's */
	bool meta;      /* data blocks are journaled: forget them when freed */
	uint32_t units; /* 512-byte units per block */
};

/* One map kind. Locking: the caller holds in->lock (as reader for the
 * lookups, as writer for create and truncate); map_run and map_guess with
 * mc NULL take in->map_lock for the inode's own cache. */
struct ext3_bmap_ops {
	const char *name;
	/* Logical blocks a file of this kind may have on fs. */
	uint64_t (*max_blocks)(const struct ext3_fs *fs);
	/* Map blocks (not data) that mapping n contiguous logical blocks may
	 * touch (journal credits; ext3_bmap_credits). */
	uint64_t (*map_credits)(const struct ext3_fs *fs, uint64_t n);
	/* One block: *physical, 0 for a hole (ext3_inode_bmap_locked). */
	int (*map_block)(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical,
			 uint64_t *physical);
	/* A run from logical: a hole or contiguous blocks (ext3_inode_map_run). */
	int (*map_run)(struct ext3_fs *fs, struct ext3_inode *in, struct ext3_map_cache *mc,
		       uint64_t logical, uint64_t max, uint64_t *physical, uint64_t *count);
	/* map_run that guesses rather than waits for map metadata
	 * (ext3_inode_map_guess; 1: a guess). */
	int (*map_guess)(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical, uint64_t max,
			 uint64_t prev_hint, uint64_t *physical, uint64_t *count);
	/* Start reading the map metadata of logical (ext3_inode_map_prefetch). */
	int (*map_prefetch)(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			    uint64_t *next);
	/* Map with or without allocation, in h when create (ext3_get_blocks). */
	int (*get_blocks)(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk, uint32_t max,
			  bool create, uint64_t *phys, uint32_t *count, bool *is_new);
	/* Free every block mapped from logical block first on (data and map
	 * metadata), in restartable steps. */
	int (*truncate)(struct ext3_bmap_trunc *t, uint64_t first);
};

/* The indirect map (bmap_ind.c). */
extern const struct ext3_bmap_ops ext3_bmap_ind_ops;
extern const struct ext3_bmap_ops ext3_bmap_ext_ops; /* bmap_ext.c: lookups only */

/* The table for in (in->a.flags read: the caller holds in->lock, or owns
 * the inode). */
const struct ext3_bmap_ops *ext3_bmap_ops_of(const struct ext3_inode *in);

/* Free the inode's map cache (its last reference is gone, or it goes to
 * the LRU: nobody is under its map_lock). */
void ext3_inode_map_drop(struct ext3_inode *in);

/* Make room in t's handle for one freeing step: extend it, or write the
 * inode and restart it (the transaction ends there). */
int ext3_bmap_trunc_room(struct ext3_bmap_trunc *t);
/* Free every block of t->in from logical block first on (the dispatcher of
 * ops->truncate). Lowers i_blocks; does not write the inode's size. */
int ext3_bmap_truncate(struct ext3_bmap_trunc *t, uint64_t first);

#endif
