/* The indirect block map, freeing (bmap.h's truncate of bmap_ind.c's
 * table): every block from a logical block on, data and indirect trees
 * (partial trees included), in restartable steps (docs/write-inode.md,
 * "Truncate"; truncate.c orders it with the size, the orphan list and the
 * page cache).
 *
 * Each step clears pointers (in an indirect block or the inode's i_block)
 * and frees the blocks they held in the same transaction, with i_blocks
 * lowered to match; before the handle is restarted the inode is written
 * (ext3_bmap_trunc_room), so every committed transaction leaves a
 * consistent tree. Children are freed before the indirect block that
 * points at them; the pointer to an indirect block is cleared only when the
 * block itself is freed, so a crash never leaves a freed block pointed at.
 *
 * Locking: the caller holds in->lock as writer and t->h.
 */
#include "extfs/inode/bmap_ind.h"

#include "buf/buf.h"
#include "util/err.h"

#include <string.h>

/* A pointer array: the inode's i_block (host order) or an indirect block
 * (little-endian). */
struct parr {
	struct buffer_head *bh;
	uint32_t *p;
	uint32_t n;
};

static uint32_t parr_get(const struct parr *a, uint32_t i)
{
	return a->bh ? le32_to_cpu(a->p[i]) : a->p[i];
}

/* Clear entries [i, i + n) of a, journaled in the running handle. */
static int parr_clear(struct ext3_bmap_trunc *t, struct parr *a, uint32_t i, uint32_t n)
{
	if (!a->bh) {
		memset(&a->p[i], 0, n * sizeof(uint32_t));
		return ext3_mark_inode_dirty(t->h, t->in);
	}
	int rc = ext3_journal_get_write_access(t->h, a->bh);
	if (rc)
		return rc;
	memset(&a->p[i], 0, n * sizeof(uint32_t));
	return ext3_journal_dirty_metadata(t->h, a->bh);
}

static void blocks_drop(struct ext3_bmap_trunc *t, uint32_t n)
{
	ext3_inode_blocks_add(t->in, -(int64_t)((uint64_t)n * t->units));
}

/* Free entries [i, i + n) of a: n blocks first..first+n-1 (data, or one
 * indirect block already emptied when meta). */
static int free_entries(struct ext3_bmap_trunc *t, struct parr *a, uint32_t i, uint32_t n, uint64_t first,
			bool meta)
{
	int rc = ext3_bmap_trunc_room(t);
	if (!rc)
		rc = parr_clear(t, a, i, n);
	if (!rc)
		rc = ext3_free_blocks(t->h, t->in, first, n, meta);
	if (rc)
		return rc;
	blocks_drop(t, n);
	t->budget -= EXT3_BMAP_TRUNC_STEP_CREDITS;
	return 0;
}

static int ptr_check(struct ext3_bmap_trunc *t, uint32_t p)
{
	if (p >= t->fs->g.first_data_block && p < t->fs->g.blocks_count)
		return 0;
	return ext3_fs_error(t->fs, "inode %u: block pointer %u outside the filesystem (truncate)",
			     t->in->ino, p);
}

static int trunc_array(struct ext3_bmap_trunc *t, struct parr *a, uint32_t from, int level,
		       const uint32_t *sub);

/* Free the tree under entry i of a (an indirect block whose entries are at
 * `level`, 0 = data), then the block itself. */
static int free_branch(struct ext3_bmap_trunc *t, struct parr *a, uint32_t i, int level)
{
	uint32_t blk = parr_get(a, i);
	int rc = ptr_check(t, blk);
	if (rc)
		return rc;
	struct buffer_head *bh;
	rc = ext3_bread(t->fs, blk, "indirect", &bh);
	if (rc)
		return err_wrap(rc, "ext3: inode %u: truncate", t->in->ino);
	struct parr ca = {bh, buf_data(bh), t->fs->g.apb};
	rc = trunc_array(t, &ca, 0, level, NULL);
	buf_put(bh);
	if (rc)
		return rc;
	return free_entries(t, a, i, 1, blk, true);
}

static bool all_zero(const uint32_t *v, int n)
{
	for (int i = 0; i < n; i++)
		if (v[i])
			return false;
	return true;
}

/* Free the entries of a from `from` on; their level is `level` (0: data
 * blocks, k: indirect blocks k levels above the data). sub (level values,
 * or NULL) is the path below entry `from` of the first block to free: when
 * not all zero, the block at `from` is kept and only its own tail freed -
 * unless that leaves it empty (its entries before the cut are holes): then
 * it is freed too. */
static int trunc_array(struct ext3_bmap_trunc *t, struct parr *a, uint32_t from, int level,
		       const uint32_t *sub)
{
	uint32_t i = from;
	int rc = 0;
	if (sub && level > 0 && i < a->n && !all_zero(sub, level)) {
		uint32_t child = parr_get(a, i);
		if (child) {
			rc = ptr_check(t, child);
			struct buffer_head *bh = NULL;
			if (!rc)
				rc = ext3_bread(t->fs, child, "indirect", &bh);
			if (rc)
				return rc;
			struct parr ca = {bh, buf_data(bh), t->fs->g.apb};
			rc = trunc_array(t, &ca, sub[0], level - 1, sub + 1);
			/* Kept only for the entries before the cut: when those
			 * are all holes the block is now empty and goes too, as
			 * Linux's ext3_find_shared frees the top of an all-zero
			 * partial branch (and e2fsck's orphan truncate frees an
			 * emptied indirect block): the three must leave the same
			 * image after a crash. */
			bool empty = !rc && all_zero(ca.p, (int)ca.n);
			buf_put(bh);
			if (rc)
				return rc;
			if (empty) {
				rc = free_entries(t, a, i, 1, child, true);
				if (rc)
					return rc;
			}
		}
		i++;
	}
	if (level > 0) {
		for (; i < a->n && !rc; i++)
			if (parr_get(a, i))
				rc = free_branch(t, a, i, level - 1);
		return rc;
	}
	/* Data blocks: free physically contiguous runs at once. */
	uint32_t run_i = 0, run_n = 0;
	uint64_t run_first = 0;
	for (; i <= a->n && !rc; i++) {
		uint32_t p = i < a->n ? parr_get(a, i) : 0;
		if (p && run_n && p == run_first + run_n && p < t->fs->g.blocks_count) {
			run_n++;
			continue;
		}
		if (run_n)
			rc = free_entries(t, a, run_i, run_n, run_first, t->meta);
		run_n = 0;
		if (p && !rc) {
			rc = ptr_check(t, p);
			run_i = i;
			run_first = p;
			run_n = 1;
		}
	}
	return rc;
}

/* ops->truncate: free every block from logical block first on. */
int ext3_ind_truncate(struct ext3_bmap_trunc *t, uint64_t first)
{
	struct ext3_inode *in = t->in;
	struct parr top = {NULL, in->a.block, EXT3_N_BLOCKS};
	int rc = 0;
	unsigned next_tree = EXT3_IND_BLOCK;
	if (first < EXT3_NDIR_BLOCKS) {
		struct parr direct = {NULL, in->a.block, EXT3_NDIR_BLOCKS};
		rc = trunc_array(t, &direct, (uint32_t)first, 0, NULL);
	} else if (first < ext3_ind_max_blocks(t->fs)) {
		uint32_t off[4];
		int depth;
		rc = ext3_ind_block_to_path(t->fs, in->ino, first, off, &depth);
		if (rc)
			return rc;
		/* Tree off[0] only (its root's entries are at level depth - 2;
		 * the later trees have other levels). */
		struct parr one = {NULL, in->a.block, off[0] + 1};
		rc = trunc_array(t, &one, off[0], depth - 1, off + 1);
		next_tree = off[0] + 1;
	} else {
		return 0;
	}
	for (unsigned k = next_tree; k < EXT3_N_BLOCKS && !rc; k++)
		if (in->a.block[k])
			rc = free_branch(t, &top, k, (int)(k - EXT3_IND_BLOCK));
	return rc;
}
