/* The indirect block map, allocation (bmap.h's get_blocks of
 * bmap_ind.c's table): a lookup down the tree that stops at the first
 * missing pointer, and the missing branch (indirect blocks, zeroed and
 * journaled, then the data blocks, contiguous) allocated and spliced in
 * last, so that a failure leaves nothing linked (docs/write-inode.md,
 * "Block map"). The caller holds in->lock as writer when it allocates; the
 * inode's map cache is invalidated under map_lock whenever the map
 * changes. */
#include "extfs/inode/bmap_ind.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* One step of a walk down the tree: where a pointer lives (the inode's
 * i_block or an indirect block) and its value. */
struct branch {
	struct buffer_head *bh; /* NULL: in->a.block */
	uint32_t *p;            /* host-order pointer (inode) or LE (buffer) */
	uint32_t key;           /* its value, host order */
};

static bool ptr_ok(const struct ext3_fs *fs, uint32_t p)
{
	return p >= fs->g.first_data_block && p < fs->g.blocks_count;
}

static void branch_release(struct branch *br, int n)
{
	for (int i = 0; i < n; i++)
		buf_put(br[i].bh);
}

/* Walk as far as the map goes: chain[0..*found-1] are set pointers; chain[k]
 * for k = *found (< depth) is the first zero one. */
static int branch_get(struct ext3_inode *in, const uint32_t *off, int depth, struct branch *chain,
		      int *found)
{
	struct ext3_fs *fs = in->fs;
	memset(chain, 0, sizeof(*chain) * 4);
	chain[0].bh = NULL;
	chain[0].p = &in->a.block[off[0]];
	chain[0].key = in->a.block[off[0]];
	int k = 0;
	for (;;) {
		if (!chain[k].key)
			break;
		if (!ptr_ok(fs, chain[k].key)) {
			int rc = ext3_fs_error(fs, "inode %u: block pointer %u outside the filesystem",
					       in->ino, chain[k].key);
			branch_release(chain, k + 1);
			return rc;
		}
		if (k + 1 == depth) {
			k++;
			break;
		}
		struct buffer_head *bh;
		int rc = ext3_bread(fs, chain[k].key, "indirect", &bh);
		if (rc) {
			branch_release(chain, k + 1);
			return err_wrap(rc, "ext3: inode %u", in->ino);
		}
		k++;
		chain[k].bh = bh;
		chain[k].p = (uint32_t *)buf_data(bh) + off[k];
		chain[k].key = le32_to_cpu(*chain[k].p);
	}
	*found = k;
	return 0;
}

/* Pointer i of the array that chain[k] lives in, host order. */
static uint32_t chain_ptr(const struct branch *b, int64_t delta)
{
	return b->bh ? le32_to_cpu(b->p[delta]) : b->p[delta];
}

/* Entries left in the pointer array of the leaf level after off[depth-1]. */
static uint32_t leaf_room(const struct ext3_fs *fs, const uint32_t *off, int depth)
{
	uint32_t n = depth == 1 ? EXT3_NDIR_BLOCKS : fs->g.apb;
	return n - off[depth - 1];
}

/* The allocation goal for logical block lblk (ext3_find_goal's rule). */
static uint64_t find_goal(struct ext3_inode *in, uint64_t lblk, const struct branch *chain,
			  int found, int depth, const uint32_t *off)
{
	if (in->rsv.last_phys && lblk == in->rsv.last_lblk + 1)
		return in->rsv.last_phys + 1;
	/* The nearest set pointer before ours in the same array, else the
	 * indirect block holding the array. */
	const struct branch *b = &chain[found < depth ? found : depth - 1];
	uint32_t idx = off[found < depth ? found : depth - 1];
	for (uint32_t i = idx; i-- > 0;) {
		uint32_t p = chain_ptr(b, (int64_t)i - idx);
		if (p)
			return p;
	}
	if (b->bh)
		return buf_blocknr(b->bh);
	return 0; /* near the inode's group (balloc.c) */
}

/* Allocated but not yet linked runs (freed on failure). */
struct newblocks {
	uint64_t first[4];
	uint32_t count[4];
	int nruns;
	uint64_t ind[3];   /* the new indirect blocks, top first */
	int nind;
	uint64_t data;     /* first data block */
	uint32_t ndata;
};

static void newblocks_free(struct jbd_handle *h, struct ext3_inode *in, struct newblocks *nb)
{
	for (int i = 0; i < nb->nruns; i++)
		(void)ext3_free_blocks(h, in, nb->first[i], nb->count[i], false);
	nb->nruns = 0;
	nb->nind = 0;
	nb->ndata = 0;
}

/* Allocate nind indirect blocks and 1..want data blocks (the data last,
 * contiguous). */
static int alloc_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t goal, int nind,
			uint32_t want, struct newblocks *nb)
{
	memset(nb, 0, sizeof *nb);
	while (nb->ndata == 0) {
		uint32_t n = (uint32_t)(nind - nb->nind) + want;
		uint64_t first;
		int rc = ext3_new_blocks(h, in, goal, &n, &first);
		if (rc) {
			newblocks_free(h, in, nb);
			return rc;
		}
		if (n == 0 || nb->nruns == 4) { /* cannot happen: the allocator gives >= 1 */
			newblocks_free(h, in, nb);
			return err_set(-EIO, "ext3: allocator returned no block");
		}
		nb->first[nb->nruns] = first;
		nb->count[nb->nruns++] = n;
		uint32_t i = 0;
		while (nb->nind < nind && i < n)
			nb->ind[nb->nind++] = first + i++;
		if (i < n) {
			nb->data = first + i;
			nb->ndata = n - i;
		}
		goal = first + n;
	}
	return 0;
}

/* Zero the new indirect blocks (journaled, create access) and chain them:
 * new indirect k points at new indirect k+1 at off[...]; the last points
 * at the data blocks. */
static int init_indirect(struct jbd_handle *h, struct ext3_inode *in, const struct newblocks *nb,
			 const uint32_t *off, int found, int depth)
{
	struct ext3_fs *fs = in->fs;
	for (int k = 0; k < nb->nind; k++) {
		int err = 0;
		struct buffer_head *bh = buf_get(fs->cache, nb->ind[k], &err);
		if (!bh)
			return err_wrap(err ? err : -ENOMEM, "ext3: indirect block %llu",
					(unsigned long long)nb->ind[k]);
		int rc = ext3_journal_get_create_access(h, bh);
		if (!rc) {
			buf_lock(bh); /* (jbd takes it inside its access calls) */
			uint32_t *p = buf_data(bh);
			memset(p, 0, fs->g.block_size);
			/* this block is level found+1+k of the path */
			uint32_t idx = off[found + 1 + k];
			if (k + 1 < nb->nind) {
				p[idx] = cpu_to_le32((uint32_t)nb->ind[k + 1]);
			} else {
				for (uint32_t i = 0; i < nb->ndata; i++)
					p[idx + i] = cpu_to_le32((uint32_t)(nb->data + i));
			}
			buf_set_uptodate(bh);
			buf_unlock(bh);
		}
		if (!rc)
			rc = ext3_journal_dirty_metadata(h, bh);
		buf_put(bh);
		if (rc)
			return rc;
	}
	(void)depth;
	return 0;
}

/* Link the new branch at chain[found] (the first zero pointer). */
static int splice_branch(struct jbd_handle *h, struct ext3_inode *in, struct branch *at,
			 const struct newblocks *nb)
{
	uint32_t n = nb->nind ? 1 : nb->ndata;
	if (!at->bh) {
		for (uint32_t i = 0; i < n; i++)
			at->p[i] = nb->nind ? (uint32_t)nb->ind[0] : (uint32_t)(nb->data + i);
		return 0; /* the caller writes the inode */
	}
	int rc = ext3_journal_get_write_access(h, at->bh);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < n; i++)
		at->p[i] = cpu_to_le32(nb->nind ? (uint32_t)nb->ind[0] : (uint32_t)(nb->data + i));
	return ext3_journal_dirty_metadata(h, at->bh);
}

/* ops->get_blocks */
int ext3_ind_get_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk, uint32_t max,
			bool create, uint64_t *phys, uint32_t *count, bool *is_new)
{
	struct ext3_fs *fs = in->fs;
	*phys = 0;
	*count = 0;
	if (is_new)
		*is_new = false;
	if (max == 0)
		return 0;
	uint32_t off[4];
	int depth = 0, found = 0;
	int rc = ext3_ind_block_to_path(fs, in->ino, lblk, off, &depth);
	if (rc)
		return rc;
	struct branch chain[4];
	rc = branch_get(in, off, depth, chain, &found);
	if (rc)
		return rc;
	uint32_t room = leaf_room(fs, off, depth);
	if (max > room)
		max = room;
	if (lblk + max > ext3_ind_max_blocks(fs)) /* the last leaf may end early */
		max = (uint32_t)(ext3_ind_max_blocks(fs) - lblk);
	if (found == depth) { /* mapped: count the contiguous run in the leaf */
		struct branch *leaf = &chain[depth - 1];
		uint32_t c = 1;
		while (c < max) {
			uint32_t p = chain_ptr(leaf, c);
			if (p != leaf->key + c || !ptr_ok(fs, p))
				break;
			c++;
		}
		*phys = leaf->key;
		*count = c;
		branch_release(chain, depth);
		return 0;
	}
	/* A hole: how long (the leaf's zero entries, or the rest of the span
	 * of the missing pointer block). */
	uint32_t hole;
	if (found == depth - 1) {
		hole = 1;
		while (hole < max && chain_ptr(&chain[found], hole) == 0)
			hole++;
	} else {
		hole = max; /* the whole leaf below is missing: room bounds it */
	}
	if (!create) {
		*count = hole;
		branch_release(chain, found + 1);
		return 0;
	}
	int nind = depth - 1 - found;
	uint32_t want = found == depth - 1 ? hole : max;
	uint64_t units = (uint64_t)(nind + want) * (fs->g.block_size / 512);
	uint64_t have = in->a.blocks | (uint64_t)in->a.blocks_hi << 32;
	if (have + units > ext3_inode_blocks_max(fs)) {
		branch_release(chain, found + 1);
		return err_set(-EFBIG, "ext3: inode %u: i_blocks would overflow", in->ino);
	}
	uint64_t goal = find_goal(in, lblk, chain, found, depth, off);
	struct newblocks nb;
	rc = alloc_blocks(h, in, goal, nind, want, &nb);
	if (!rc)
		rc = init_indirect(h, in, &nb, off, found, depth);
	if (!rc)
		rc = splice_branch(h, in, &chain[found], &nb);
	if (rc) {
		/* Nothing links the new blocks: forget the journaled indirect ones
		 * and give everything back. */
		for (int k = 0; k < nb.nind; k++)
			(void)ext3_journal_forget_block(h, nb.ind[k]);
		newblocks_free(h, in, &nb); /* (alloc_blocks already freed its own) */
		branch_release(chain, found + 1);
		return rc;
	}
	branch_release(chain, found + 1);
	ext3_inode_blocks_add(in, (int64_t)(nb.nind + nb.ndata) * (fs->g.block_size / 512));
	in->rsv.last_lblk = lblk + nb.ndata - 1;
	in->rsv.last_phys = nb.data + nb.ndata - 1;
	ext3_inode_map_invalidate(in);
	rc = ext3_mark_inode_dirty(h, in);
	if (rc)
		return rc;
	ext3_inode_note_tid(h, in, true); /* the block map: fdatasync too */
	*phys = nb.data;
	*count = nb.ndata;
	if (is_new)
		*is_new = true;
	return 0;
}
