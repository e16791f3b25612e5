/* Private to the directory files of src/extfs: dir.c (reading), dirblock.c
 * (helpers shared by reading and writing: block I/O bounds, htree checks,
 * and the pure in-block operations), dir_write.c (entries, linear
 * directories) and dx_write.c (htree insertion). See docs/write-dirs.md.
 *
 * The pure block functions work on one directory block in memory (b, bs
 * bytes, little-endian on-disk layout) and do no I/O; the ones that change a
 * block assume it passed ext3_dirblk_check (every rec_len sane, the chain
 * ending exactly at the block end). */
#ifndef NOSTALL_EXT3_DIR_INT_H
#define NOSTALL_EXT3_DIR_INT_H

#include "extfs/core/ext3_int.h"

struct buffer_head;

/* ---- directory I/O bounds (dirblock.c) ---- */

/* Blocks of a directory (i_size / block size), checked against the blocks
 * it really has (i_blocks) and the filesystem size. -ENOTDIR, -EUCLEAN. */
int ext3_dir_nblocks(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t *n);
/* Read logical block lblk of a directory (a hole is corruption). Caller
 * holds dir->lock (reader or writer). */
int ext3_dir_bread(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t lblk,
		   struct buffer_head **out);
/* ext3_dir_iterate with dir->lock held (reader or writer). (dir.c) */
int ext3_dir_iterate_locked(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t *pos,
			    ext3_dir_cb cb, void *ctx);
/* Find name like ext3_dir_lookup (htree when the index is sane, else a
 * linear scan) and say which logical block holds it. Caller holds dir->lock.
 * -ENOENT when absent. (dir.c) */
int ext3_dir_find_locked(struct ext3_fs *fs, const struct ext3_inode *dir, const char *name,
			 size_t len, uint64_t *lblk, uint32_t *ino, uint8_t *file_type);

/* ---- htree checks and hashing (dirblock.c; pure) ---- */

/* Offsets of the count/limit header in a dx root and in an interior node. */
#define EXT3_DX_ROOT_CL 0x20u
#define EXT3_DX_NODE_CL 0x08u

/* Is the directory indexed (flag and filesystem feature)? */
bool ext3_dir_is_dx(const struct ext3_fs *fs, const struct ext3_inode *dir);
/* The hash of name for a tree whose root says hash version root_hv (0..2),
 * with the superblock's signed/unsigned rule and seed. */
int ext3_dx_name_hash(const struct ext3_fs *fs, unsigned root_hv, const char *name, size_t len,
		      uint32_t *hash);
/* Check a dx root block's header: "." (rec_len 12), info (reserved 0,
 * length 8, hash version 0..2, levels 0..1). *hv, *levels from it. */
int ext3_dx_root_check(const uint8_t *b, unsigned *hv, unsigned *levels);
/* Check an interior node's fake empty entry (inode 0, rec_len bs). */
int ext3_dx_node_check(const uint8_t *b, unsigned bs);
/* Check the count/limit header at b + off and its entries: the exact limit
 * for the position (tail: bytes kept at the block's end, 8 for metadata_csum's
 * dx_tail, else 0), 1 <= count <= limit, children in 1..nblocks-1 (upper 8
 * bits of the block field masked), hashes ascending. */
int ext3_dx_entries_check(const uint8_t *b, unsigned off, unsigned bs, unsigned tail, uint64_t nblocks);
/* The bytes metadata_csum keeps at the end of an htree block (dx_tail). */
unsigned ext3_dx_tail_bytes(const struct ext3_fs *fs);

/* Raw access to a (checked) count/limit array at b + off. Entry i's hash
 * (i >= 1) and block, in host order. */
unsigned ext3_dx_count(const uint8_t *b, unsigned off);
unsigned ext3_dx_limit(const uint8_t *b, unsigned off);
uint32_t ext3_dx_hash_at(const uint8_t *b, unsigned off, unsigned i);
uint32_t ext3_dx_block_at(const uint8_t *b, unsigned off, unsigned i);
/* The last entry whose hash <= h (entry 0 covers everything below entry 1). */
unsigned ext3_dx_choose(const uint8_t *b, unsigned off, uint32_t h);
/* Insert (hash, block) right after entry `at`; count must be < limit. */
void ext3_dx_insert(uint8_t *b, unsigned off, unsigned at, uint32_t hash, uint32_t block);
/* Set the count of the array at b + off (limit = what fits from off). */
void ext3_dx_set_count(uint8_t *b, unsigned off, unsigned bs, unsigned count);
/* An empty interior node: the fake entry spanning the block, limit, count 0. */
void ext3_dx_node_init(uint8_t *b, unsigned bs);
/* Turn a directory's first block (".", "..", then entries) into a dx root
 * with one child, leaf block 1: the entries after ".." are moved to `leaf`
 * (the last one's rec_len stretched to the block end). Needs "." with
 * rec_len 12 followed by ".." (-EINVAL otherwise, nothing changed) and
 * hv 0..2. */
int ext3_dx_root_make(uint8_t *root, uint8_t *leaf, unsigned bs, unsigned hv);

/* ---- walking an htree in hash order (dir.c) ---- */

/* One level of the index: a copy of its count/limit array (raw, as on disk;
 * read with the ext3_dx_* accessors) and the entry chosen. */
struct ext3_dx_level {
	uint8_t raw[EXT3_MAX_BLOCK_SIZE];
	unsigned count;
	unsigned at;
};
/* A position in the index: the entry chosen at each level down to the
 * leaf. */
struct ext3_dx_walk {
	struct ext3_dx_level lv[EXT3_DX_MAX_LEVELS];
	unsigned levels; /* indirect_levels: lv[levels] points at the leaf */
	unsigned hv;     /* the root's hash version (0..2) */
	uint32_t hash;   /* what was looked for */
	uint64_t nblocks;
};
#define EXT3_DX_WALK_END UINT64_MAX
/* Check the root and walk down to the leaf for the hash of name (name NULL:
 * for hash h). -EUCLEAN on a bad index (the caller may fall back to a
 * linear scan). Caller holds dir->lock. */
int ext3_dx_walk_start(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t nblocks,
		       const char *name, size_t len, uint32_t h, struct ext3_dx_walk *w);
/* The leaf's logical block. */
uint64_t ext3_dx_walk_leaf(const struct ext3_dx_walk *w);
/* The index hash of the leaf after this one (bit 0: the collision
 * continuation bit), EXT3_DX_WALK_END when this is the last. */
uint64_t ext3_dx_walk_next_hash(const struct ext3_dx_walk *w);
/* Go to the next leaf in hash order: 1, 0 at the end, or an error. */
int ext3_dx_walk_next(struct ext3_fs *fs, const struct ext3_inode *dir, struct ext3_dx_walk *w);

/* ---- pure in-block operations (dirblock.c) ---- */

/* The file type byte (filetype feature) for an inode mode. */
uint8_t ext3_mode_to_ft(uint16_t mode);
/* Check every entry of the block (ext3_dirblock_entry rules). */
int ext3_dirblk_check(const uint8_t *b, unsigned bs, uint32_t max_ino, bool has_filetype);
/* The first entry with room for a len-byte name: an unused entry whose
 * rec_len fits it, or a used one whose slack (rec_len minus its own
 * minimal length) does. *off = its offset. -ENOSPC when none. */
int ext3_dirblk_room(const uint8_t *b, unsigned bs, size_t len, unsigned *off);
/* Write the entry into the room at off found by ext3_dirblk_room: a used
 * entry there is cut to its minimal length and the new one takes the rest. */
void ext3_dirblk_put(uint8_t *b, unsigned off, const char *name, size_t len, uint32_t ino,
		     uint8_t file_type);
/* The used entry named name: *off, and *prev the entry before it in the
 * block (UINT32_MAX when it leads the block). -ENOENT. */
int ext3_dirblk_find(const uint8_t *b, unsigned bs, const char *name, size_t len, unsigned *off,
		     unsigned *prev);
/* Remove the entry at off: merged into prev's rec_len, or (leading the
 * block, prev == UINT32_MAX) its inode set to 0. */
void ext3_dirblk_del(uint8_t *b, unsigned off, unsigned prev);
/* An empty block: one unused entry spanning it. */
void ext3_dirblk_init(uint8_t *b, unsigned bs);
/* A new directory's first block: "." -> self (rec_len 12), ".." -> parent
 * (the rest of the block). */
void ext3_dirblk_dots(uint8_t *b, unsigned bs, uint32_t self, uint32_t parent, bool has_filetype);
/* The entries "." and ".." at the start of a checked block: their offsets
 * (0 and *dotdot). -EUCLEAN when the block does not start with them. */
int ext3_dirblk_dots_check(const uint8_t *b, unsigned bs, unsigned *dotdot);
/* Used entries in the block besides the first `skip` ones (0: all). */
unsigned ext3_dirblk_live(const uint8_t *b, unsigned bs, unsigned skip);

/* How a leaf's names hash (the tree's version with the signed/unsigned
 * rule applied: EXT3_DX_HASH_* 0..5, and the seed). */
struct ext3_dx_hashfn {
	int version;
	const uint32_t *seed;
};
/* Split a full leaf b1: its used entries sorted by hash, the upper half (by
 * size) is moved to b2 (compacted, in hash order), the rest compacted in
 * b1; both blocks end with a stretched last entry. *split_hash = the lowest
 * hash in b2, with bit 0 set when it equals the highest hash left in b1
 * (the collision-continuation rule). -ENOSPC when the leaf holds fewer than
 * two used entries (nothing to split), with nothing changed. */
int ext3_dirblk_split(uint8_t *b1, uint8_t *b2, unsigned bs, const struct ext3_dx_hashfn *hf,
		      uint32_t *split_hash);

/* ---- the write side (dir_write.c, dx_write.c; see write.h) ---- */

struct jbd_handle;

/* Corruption met while writing directory block lblk (UINT64_MAX: not one
 * block): rc's message through ext3_fs_error; returns -EUCLEAN. */
int ext3_dir_corrupt(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t lblk, int rc);
/* Read directory block lblk and check every entry (ext3_dirblk_check);
 * corruption goes through ext3_dir_corrupt. */
int ext3_dir_read_checked(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t lblk,
			  struct buffer_head **out);
/* Grow the directory by one block at its end (ext3_get_blocks with create):
 * the block is an empty directory block (one unused entry spanning it),
 * journaled in h (the caller may change it further under the same access);
 * i_size grows by a block and the inode is written. *lblk = its logical
 * block. */
int ext3_dir_append(struct jbd_handle *h, struct ext3_inode *dir, uint64_t *lblk,
		    struct buffer_head **out);
/* Write access to bh, the new entry into the room at off, dirty. */
int ext3_dir_put_entry(struct jbd_handle *h, struct ext3_inode *dir, struct buffer_head *bh,
		       unsigned off, const char *name, size_t len, uint32_t ino, uint8_t file_type);
/* metadata_csum (docs/ext4-csum.md, "The write side"): a leaf's entries
 * end at ext3_dir_leaf_bytes (block size less the 12-byte tail entry, which
 * no insert, removal or split ever touches); every changed directory block
 * is checksummed by ext3_dir_dirty right before it is dirtied, under the
 * directory's lock: a leaf's tail, or an index block's dx_tail (the index
 * limits leave it room: ext3_dx_tail_bytes). */
unsigned ext3_dir_leaf_bytes(const struct ext3_fs *fs);
int ext3_dir_dirty(struct jbd_handle *h, const struct ext3_inode *dir, struct buffer_head *bh);
/* Insert into an indexed directory (dx_write.c). */
int ext3_dx_add(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		uint32_t ino, uint8_t file_type);
/* Turn a full one-block directory (block 0 in root_bh, checked, starting
 * with "." of 12 bytes and "..") into an indexed one and insert the name:
 * block 0 becomes the dx root, its entries move to leaves 1 and 2 split by
 * hash, the inode gets EXT3_INDEX_FL (dx_write.c). */
int ext3_dx_make_indexed(struct jbd_handle *h, struct ext3_inode *dir,
			 struct buffer_head *root_bh, const char *name, size_t len, uint32_t ino,
			 uint8_t file_type);

#endif
