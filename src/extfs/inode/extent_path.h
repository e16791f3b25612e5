/* What extent_write.c and extent_remove.c share: a path from the root in
 * i_block down to a leaf, and helpers over the raw little-endian nodes.
 * Private to those two files (the contract is extent_write.h).
 *
 * A node is the 12-byte header then eh_entries 12-byte entries (extents in
 * a leaf, index entries above); the root is a 60-byte copy of i_block in
 * xctx.root, written back into in->a.block by every xnode_end on level 0. */
#ifndef NOSTALL_EXTFS_EXTENT_PATH_H
#define NOSTALL_EXTFS_EXTENT_PATH_H

#include "extfs/inode/extent_write.h"
#include "extfs/format/ext4_extent.h"

#define XENT 12
#define XMAX_LEVELS (EXT4_EXT_MAX_DEPTH + 2)

struct xlevel {
	struct buffer_head *bh; /* NULL: the root */
	uint8_t *node;
	uint64_t blk;           /* 0: the root */
	int pos;                /* the entry the path takes (leaf: -1 when none starts at or before) */
};

struct xctx {
	struct jbd_handle *h;
	struct ext3_inode *in;
	struct ext3_fs *fs;
	unsigned bs, units, cap; /* block size, 512-byte units per block, entries per tree block */
	uint8_t root[60];
	int depth;               /* levels below the root on the path */
	struct xlevel lv[XMAX_LEVELS];
	uint64_t next;           /* after xpath_walk: the first key after the path (2^32: none) */
	bool root_dirty;         /* the inode must be written (root or i_blocks changed) */
	bool caller_writes;      /* ...by the caller, in the same handle (xctx_done leaves it) */
};

/* An extent in host order. */
struct xext {
	uint32_t lblk;
	uint32_t len;
	uint64_t pblk;
	bool unwritten;
};

unsigned xnode_entries(const uint8_t *node);
unsigned xnode_max(const uint8_t *node);
unsigned xnode_depth(const uint8_t *node);
void xnode_set_entries(uint8_t *node, unsigned n);
uint8_t *xnode_ent(uint8_t *node, unsigned i);
uint32_t xnode_key(const uint8_t *node, unsigned i);
void xnode_init(uint8_t *node, unsigned max, unsigned depth);
void xext_get(const uint8_t *e, struct xext *x);
void xext_set(uint8_t *e, const struct xext *x);
uint64_t xidx_child(const uint8_t *e);
unsigned xext_max_len(bool unwritten);
unsigned xroot_depth(const struct ext3_inode *in);

void xctx_init(struct xctx *c, struct jbd_handle *h, struct ext3_inode *in);
/* Release the path; write the inode when its root or i_blocks changed. */
int xctx_done(struct xctx *c, int rc);
void xpath_release(struct xctx *c);
/* Walk from the root to the leaf that covers lblk (checking each node as
 * the read side does, -EUCLEAN through ext3_fs_error). */
int xpath_walk(struct xctx *c, uint32_t lblk);
int xcorrupt(struct xctx *c, uint64_t blk, const char *what);
/* Write access to level l / its change done (checksum set, dirtied; the
 * root stored into i_block). */
int xnode_begin(struct xctx *c, int l);
int xnode_end(struct xctx *c, int l);
/* After level l's first key changed: the index keys above follow. */
int xfix_keys(struct xctx *c, int l);
/* A zeroed tree block with an empty header (journaled, create access;
 * i_blocks counted) / one freed (forgotten, i_blocks lowered). */
int xblock_new(struct xctx *c, uint64_t goal, unsigned depth, struct buffer_head **out);
int xblock_free(struct xctx *c, uint64_t blk);
/* Insert one extent (within the length limit) into a hole: merged with a
 * neighbour in its leaf when it continues it. The path is stale after. */
int xinsert_one(struct xctx *c, uint32_t lblk, uint64_t pblk, uint32_t len, bool unwritten);
/* The same, merging only when merge (a split's half must not join the
 * extent it was just cut from). */
int xinsert(struct xctx *c, uint32_t lblk, uint64_t pblk, uint32_t len, bool unwritten, bool merge);
/* Undo a cut after a failed insert (ENOSPC for a new tree node: the insert
 * changed nothing): the leaf entry starting at key and ending at end is
 * rewritten as x (its key carried up), when nothing overlaps x. -ENOENT
 * when the tree is not as the cut left it. */
int xrestore(struct xctx *c, uint32_t key, uint64_t end, const struct xext *x);
/* Merge leaf entry i with its neighbours where they continue each other. */
int xleaf_merge(struct xctx *c, unsigned i);

#endif
