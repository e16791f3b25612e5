/* ext3 truncate: free every block past a new size, data and indirect trees
 * (partial trees included), in restartable steps (write.h, "inodes";
 * docs/write-inode.md, "Truncate").
 *
 * Each step clears pointers (in an indirect block or the inode's i_block)
 * and frees the blocks they held in the same transaction, with i_blocks
 * lowered to match; before the handle is restarted the inode is written,
 * so every committed transaction leaves a consistent tree. The inode sits
 * on the orphan list from the first transaction (with i_disksize already
 * the new size) to the last, so a crash in between is finished by the next
 * mount's orphan cleanup. Children are freed before the indirect block that
 * points at them; the pointer to an indirect block is cleared only when the
 * block itself is freed, so a crash never leaves a freed block pointed at.
 *
 * data=guarded (guarded.c, through the data-mode table's truncate_begin
 * and _end: core/data_ops.h): i_disksize may lag i_size over pending
 * extents. Before the page cache drops pages, the data between i_disksize
 * and the new size is written and waited (the new size goes to disk with
 * the first transaction); after it, the extents past the new size are
 * dropped once the completions of the runs just waited for have run.
 *
 * Order: the guarded data below the new size first (no handle), then the
 * handle with the orphan entry and the new size, then the page cache
 * (the committing transaction's data past the new size written first),
 * then the blocks.
 *
 * Locking: the caller holds in->lock as writer and no handle.
 */
#include "extfs/inode/inode_write.h"
#include "extfs/core/data_ops.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "jbd/jbd.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* Credits one freeing step may use: the parent pointer block, the inode,
 * two bitmaps and two descriptors (a run across a group boundary), the
 * superblock. */
#define TRUNC_STEP_CREDITS 8

struct trunc {
	struct ext3_inode *in;
	struct ext3_fs *fs;
	struct jbd_handle *h;
	int budget;    /* credits left by our own count */
	int credits;   /* a fresh handle's */
	bool meta;     /* data blocks are journaled: forget them when freed */
	uint32_t units; /* 512-byte units per block */
};

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

static int trunc_room(struct trunc *t)
{
	if (t->budget >= TRUNC_STEP_CREDITS)
		return 0;
	if (jbd_handle_extend(t->h, t->credits) == 0) {
		t->budget += t->credits;
		return 0;
	}
	/* The transaction ends here: the inode (i_blocks, i_block) with it. */
	int rc = ext3_mark_inode_dirty(t->h, t->in);
	if (rc)
		return rc;
	rc = jbd_handle_restart(t->h, t->credits);
	if (rc)
		return err_wrap(rc, "ext3: inode %u: restarting the truncate", t->in->ino);
	t->budget = t->credits;
	return 0;
}

/* Clear entries [i, i + n) of a, journaled in the running handle. */
static int parr_clear(struct trunc *t, struct parr *a, uint32_t i, uint32_t n)
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

static void blocks_drop(struct trunc *t, uint32_t n)
{
	uint64_t u = (uint64_t)n * t->units;
	t->in->a.blocks = t->in->a.blocks > u ? t->in->a.blocks - (uint32_t)u : 0;
}

/* Free entries [i, i + n) of a: n blocks first..first+n-1 (data, or one
 * indirect block already emptied when meta). */
static int free_entries(struct trunc *t, struct parr *a, uint32_t i, uint32_t n, uint64_t first,
			bool meta)
{
	int rc = trunc_room(t);
	if (!rc)
		rc = parr_clear(t, a, i, n);
	if (!rc)
		rc = ext3_free_blocks(t->h, t->in, first, n, meta);
	if (rc)
		return rc;
	blocks_drop(t, n);
	t->budget -= TRUNC_STEP_CREDITS;
	return 0;
}

static int ptr_check(struct trunc *t, uint32_t p)
{
	if (p >= t->fs->g.first_data_block && p < t->fs->g.blocks_count)
		return 0;
	return ext3_fs_error(t->fs, "inode %u: block pointer %u outside the filesystem (truncate)",
			     t->in->ino, p);
}

static int trunc_array(struct trunc *t, struct parr *a, uint32_t from, int level,
		       const uint32_t *sub);

/* Free the tree under entry i of a (an indirect block whose entries are at
 * `level`, 0 = data), then the block itself. */
static int free_branch(struct trunc *t, struct parr *a, uint32_t i, int level)
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
static int trunc_array(struct trunc *t, struct parr *a, uint32_t from, int level,
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

/* Free every block from logical block first on. */
static int trunc_blocks(struct trunc *t, uint64_t first)
{
	struct ext3_inode *in = t->in;
	struct parr top = {NULL, in->a.block, EXT3_N_BLOCKS};
	int rc = 0;
	unsigned next_tree = EXT3_IND_BLOCK;
	if (first < EXT3_NDIR_BLOCKS) {
		struct parr direct = {NULL, in->a.block, EXT3_NDIR_BLOCKS};
		rc = trunc_array(t, &direct, (uint32_t)first, 0, NULL);
	} else if (first < ext3_max_blocks(t->fs)) {
		uint32_t off[4];
		int depth;
		rc = ext3_block_to_path(t->fs, in->ino, first, off, &depth);
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

/* Does the inode own blocks through i_block (not a device, a fast symlink,
 * a fifo or a socket)? */
static bool has_block_map(const struct ext3_inode *in)
{
	uint16_t type = in->a.mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFREG || type == EXT3_S_IFDIR)
		return true;
	return type == EXT3_S_IFLNK && !ext3_inode_fast_symlink_locked(in->fs, in);
}

int ext3_truncate(struct ext3_inode *in, uint64_t new_size)
{
	struct ext3_fs *fs = in->fs;
	if (!ext3_fs_writable(fs))
		return err_set(-EROFS, "ext3: inode %u: truncate on a read-only mount", in->ino);
	bool map = has_block_map(in);
	if (map && new_size > ext3_max_blocks(fs) * fs->g.block_size)
		return err_set(-EFBIG, "ext3: inode %u: size %llu past the largest file", in->ino,
			       (unsigned long long)new_size);
	if (in->mapping) {
		int prc = ext3_dops_truncate_begin(in, new_size);
		if (prc)
			return prc;
	}
	struct trunc t = {.in = in, .fs = fs, .units = fs->g.block_size / 512,
			  .meta = ext3_inode_data_is_meta(in)};
	t.credits = ext3_credits_truncate(fs);
	if (t.credits < 2 * TRUNC_STEP_CREDITS + 4)
		t.credits = 2 * TRUNC_STEP_CREDITS + 4;
	int rc = ext3_journal_start(fs, t.credits, &t.h);
	if (rc)
		return rc;
	t.budget = t.credits - 4; /* the orphan list, the inode */
	/* A shrink (or an unlinked inode) goes on the orphan list first, with
	 * the new size on disk: a crash from here on is finished at mount.
	 * (i_size: data=guarded's blocks past i_disksize are freed too.) */
	if (map && (new_size < in->i_disksize || new_size < in->i_size || in->a.links == 0))
		rc = ext3_orphan_add(t.h, in);
	in->i_size = in->i_disksize = new_size;
	if (!rc)
		rc = ext3_mark_inode_dirty(t.h, in);
	/* The page cache goes only now, under the handle that put the orphan
	 * entry and the new size in the running transaction: a transaction
	 * that maps blocks past the new size is then either this one (a crash
	 * after it truncates them again at mount) or the committing one,
	 * whose commit still needs their data - written here first (jbd2's
	 * begin_ordered_truncate). Dropping the dirty pages before that, a
	 * commit mapped blocks whose data never reached them (crashtest fsx,
	 * data=ordered: a block of the base image's garbage in the file). */
	if (!rc && in->mapping) {
		unsigned ps = fs->g.block_size;
		if (in->jinode && jbd_inode_committing(in->jinode)) {
			rc = page_mapping_sync(in->mapping, new_size / ps, PAGE_INDEX_MAX, BLK_WRITE);
			if (rc)
				rc = err_wrap(rc, "ext3: inode %u: writing the committing transaction's data "
						  "before a truncate", in->ino);
		}
		if (!rc) {
			rc = page_mapping_truncate(in->mapping, new_size);
			if (rc)
				rc = err_wrap(rc, "ext3: inode %u: truncating the page cache", in->ino);
			else
				ext3_dops_truncate_end(in, new_size);
		}
	}
	if (!rc && map) {
		uint64_t first = (new_size + fs->g.block_size - 1) / fs->g.block_size;
		rc = trunc_blocks(&t, first);
		ext3_rsv_discard(in);
		in->rsv.last_lblk = in->rsv.last_phys = 0;
		ext3_inode_map_invalidate(in);
	}
	if (!rc)
		rc = ext3_mark_inode_dirty(t.h, in);
	if (!rc)
		ext3_inode_note_tid(t.h, in, true);
	/* Done: off the orphan list unless the inode is unlinked (its
	 * eviction frees it and takes it off). An error leaves it on. */
	if (!rc && in->a.links)
		rc = ext3_orphan_del(t.h, in);
	int src = ext3_journal_stop(t.h);
	return rc ? rc : src;
}
