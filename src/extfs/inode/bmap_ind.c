/* The indirect block map of ext2/ext3, lookups (bmap.h's first
 * implementation; allocation is bmap_ind_alloc.c, freeing bmap_ind_trunc.c):
 * i_block[0..11] map the first 12 blocks, i_block[12..14] are the roots of
 * the single, double and triple indirect trees of apb pointers per block.
 * See docs/ext3-read-path.md, "Inodes and the block map". The caller holds in->lock (as
 * reader at least); the inode's own map cache is under in->map_lock. */
#include "extfs/inode/bmap_ind.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>

/* ---- the tree's shape ---- */

uint64_t ext3_ind_max_blocks(const struct ext3_fs *fs)
{
	uint64_t apb = fs->g.apb;
	uint64_t tree = EXT3_NDIR_BLOCKS + apb + apb * apb + apb * apb * apb;
	/* i_blocks (512-byte units, 32 bits) must count the data and every
	 * indirect block a full tree needs (ext3_max_size's bound). */
	uint64_t units = fs->g.block_size / 512;
	uint64_t limit = 0xffffffffull / units;
	uint64_t meta = 1 + (1 + apb) + (1 + apb + apb * apb);
	limit = limit > meta ? limit - meta : 0;
	return tree < limit ? tree : limit;
}

/* ops->map_credits: at most ceil((n-1)/apb)+1 leaf blocks,
 * ceil((n-1)/apb^2)+1 double-indirect level blocks and one triple-indirect
 * block (3 for a single block, whatever the block size: 1 KiB blocks need
 * all three levels soonest). */
static uint64_t ind_map_credits(const struct ext3_fs *fs, uint64_t n)
{
	uint64_t apb = fs->g.apb;
	if (n == 0)
		return 0;
	return (n - 1 + apb - 1) / apb + 1 + (n - 1 + apb * apb - 1) / (apb * apb) + 1 + 1;
}

int ext3_ind_block_to_path(const struct ext3_fs *fs, uint32_t ino, uint64_t lblk,
			   uint32_t off[4], int *depth)
{
	uint64_t apb = fs->g.apb;
	if (lblk >= ext3_ind_max_blocks(fs))
		return err_set(-EFBIG, "ext3: inode %u: logical block %llu past the largest file "
			       "(%llu blocks)", ino, (unsigned long long)lblk,
			       (unsigned long long)ext3_ind_max_blocks(fs));
	if (lblk < EXT3_NDIR_BLOCKS) {
		off[0] = (uint32_t)lblk;
		*depth = 1;
		return 0;
	}
	lblk -= EXT3_NDIR_BLOCKS;
	if (lblk < apb) {
		off[0] = EXT3_IND_BLOCK;
		off[1] = (uint32_t)lblk;
		*depth = 2;
		return 0;
	}
	lblk -= apb;
	if (lblk < apb * apb) {
		off[0] = EXT3_DIND_BLOCK;
		off[1] = (uint32_t)(lblk / apb);
		off[2] = (uint32_t)(lblk % apb);
		*depth = 3;
		return 0;
	}
	lblk -= apb * apb;
	off[0] = EXT3_TIND_BLOCK;
	off[1] = (uint32_t)(lblk / (apb * apb));
	off[2] = (uint32_t)(lblk / apb % apb);
	off[3] = (uint32_t)(lblk % apb);
	*depth = 4;
	return 0;
}

/* ---- lookups ---- */

/* For logical >= EXT3_NDIR_BLOCKS: the tree that maps it (IND, DIND or
 * TIND: *levels 1..3, *root its block) and *l, the offset inside that
 * tree. -EFBIG past the triple indirect range. */
static int map_indirect_root(const struct ext3_inode *in, uint64_t apb, uint64_t logical,
			     uint64_t *l, uint32_t *root, int *levels)
{
	uint64_t off = logical - EXT3_NDIR_BLOCKS, span = apb;
	for (int lv = 1; lv <= 3; lv++, span *= apb) {
		if (off < span) {
			*root = in->a.block[EXT3_NDIR_BLOCKS + lv - 1];
			*levels = lv;
			*l = off;
			return 0;
		}
		off -= span;
	}
	return err_set(-EFBIG, "ext3: inode %u: logical block %llu beyond the triple indirect range",
		       in->a.ino, (unsigned long long)logical);
}

/* ops->map_block: one block, walking the tree (no cache). */
static int ind_map_block(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical,
			 uint64_t *physical)
{
	*physical = 0;
	uint64_t apb = fs->g.apb;
	uint32_t root = 0;
	int levels = 0;
	uint64_t l = logical;
	if (l < EXT3_NDIR_BLOCKS) {
		root = in->a.block[l];
		levels = 0;
	} else {
		int rc = map_indirect_root(in, apb, logical, &l, &root, &levels);
		if (rc)
			return rc;
	}
	uint32_t cur = root;
	for (int lv = levels; lv > 0; lv--) {
		if (cur == 0)
			return 0;
		uint64_t div = 1;
		for (int k = 1; k < lv; k++)
			div *= apb;
		struct buffer_head *bh;
		int rc = ext3_bread(fs, cur, "indirect", &bh);
		if (rc)
			return err_wrap(rc, "ext3: inode %u", in->a.ino);
		const uint32_t *ptr = buf_data(bh);
		cur = le32_to_cpu(ptr[(l / div) % apb]);
		buf_put(bh);
	}
	if (cur && (cur >= fs->g.blocks_count || cur < fs->g.first_data_block))
		return err_set(-EUCLEAN, "ext3: inode %u: logical block %llu maps to block %u "
			       "outside the filesystem (%u blocks)", in->a.ino,
			       (unsigned long long)logical, cur, fs->g.blocks_count);
	*physical = cur;
	return 0;
}

/* The inode's own map cache for a mapping of `logical`, allocated on the
 * first use past the direct blocks (which the inode maps itself); NULL when
 * not needed or out of memory (map_run_locked then copies the leaf on its
 * stack). Caller holds map_lock. */
static struct ext3_map_cache *inode_map(struct ext3_inode *in, uint64_t logical)
{
	if (!in->map && logical >= EXT3_NDIR_BLOCKS) {
		in->map = malloc(sizeof *in->map);
		if (in->map)
			in->map->valid = false;
	}
	return in->map;
}

/* Is pointer p (non-zero) a block inside the filesystem? */
static bool map_ptr_ok(const struct ext3_fs *fs, uint32_t p)
{
	return p < fs->g.blocks_count && p >= fs->g.first_data_block;
}

/* Is pointer block `blk` cached and uptodate? If not, start reading it
 * without waiting. META, as 2.6.30 reads metadata: CFQ dispatches it before
 * the queue's data, which sorts before it by sector when it lies ahead of
 * the data already queued. */
static bool leaf_start(struct ext3_fs *fs, uint32_t blk)
{
	struct buffer_head *bh = buf_get(ext3_fs_cache(fs), blk, NULL);
	if (!bh)
		return false;
	bool ok = buf_uptodate(bh);
	if (!ok)
		buf_ll_rw_block(BLK_READ | BLK_REQ_META, 1, &bh);
	buf_put(bh);
	return ok;
}

/* ops->map_prefetch */
static int ind_map_prefetch(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			    uint64_t *next)
{
	uint64_t apb = fs->g.apb;
	*next = logical + 1;
	if (logical < EXT3_NDIR_BLOCKS) {
		*next = EXT3_NDIR_BLOCKS; /* mapped by the inode itself */
		return 0;
	}
	uint64_t l = 0;
	uint32_t cur = 0;
	int levels = 0;
	int rc = map_indirect_root(in, apb, logical, &l, &cur, &levels);
	if (!rc) {
		*next = logical - l % apb + apb; /* the leaf's span ends there */
		uint64_t span = 1;
		for (int k = 1; k < levels; k++)
			span *= apb;
		/* The levels above the leaf synchronously (one block per apb
		 * leaves, cached after the first), the leaf asynchronously. */
		for (int lv = levels; lv > 1 && cur && map_ptr_ok(fs, cur); lv--) {
			struct buffer_head *bh;
			rc = ext3_bread(fs, cur, "indirect", &bh);
			if (rc) {
				cur = 0;
				break;
			}
			cur = le32_to_cpu(((const uint32_t *)buf_data(bh))[(l / span) % apb]);
			span /= apb;
			buf_put(bh);
		}
		if (cur && map_ptr_ok(fs, cur))
			(void)leaf_start(fs, cur);
	}
	return rc;
}

/* map_run with in->lock held as reader and mc owned by the caller. With
 * `guess` non-NULL a leaf pointer block that is not cached is not waited for:
 * its read is started and *guess set to its block number (return 1, *count
 * = the blocks up to the leaf's end, at most max). */
static int map_run_locked(struct ext3_fs *fs, const struct ext3_inode *in,
			  struct ext3_map_cache *mc, uint64_t logical, uint64_t max,
			  uint64_t *physical, uint64_t *count, uint32_t *guess);

/* ops->map_run */
static int ind_map_run(struct ext3_fs *fs, struct ext3_inode *in, struct ext3_map_cache *mc,
		       uint64_t logical, uint64_t max, uint64_t *physical, uint64_t *count)
{
	int rc;
	if (mc) {
		rc = map_run_locked(fs, in, mc, logical, max, physical, count, NULL);
	} else {
		pthread_mutex_lock(&in->map_lock);
		rc = map_run_locked(fs, in, inode_map(in, logical), logical, max, physical, count,
				    NULL);
		pthread_mutex_unlock(&in->map_lock);
	}
	return rc;
}

/* Where the data of `logical` probably is, its leaf `leaf` not being in:
 * a file written sequentially continues right after the previous block
 * (prev: the caller's hint, else the map cache when it still holds the
 * previous leaf; 0 when unknown), skipping the leaf when the leaf sits there
 * (2.6.30's ext3 puts each leaf right before the data it maps; the ext4
 * driver mounting ext3 groups the leaves elsewhere). 0: no guess. Never the first block of a
 * group nor across a group's end (bitmaps and inode table come first). */
static uint64_t map_guess_at(const struct ext3_fs *fs, uint32_t leaf, uint64_t idx, uint32_t prev,
			     uint64_t *count)
{
	uint64_t p = (uint64_t)leaf + 1 + idx;
	/* The leaf right after the previous data (with the double and triple
	 * indirect blocks before it at their first leaf): the data follows
	 * the leaf. */
	if (prev)
		p = leaf > prev && leaf - prev <= 3 ? (uint64_t)leaf + 1 : (uint64_t)prev + 1;
	if (p <= fs->g.first_data_block || p >= fs->g.blocks_count)
		return 0;
	uint64_t g = (p - fs->g.first_data_block) / fs->g.blocks_per_group;
	uint64_t gfirst = fs->g.first_data_block + g * fs->g.blocks_per_group;
	uint64_t gend = gfirst + fs->g.blocks_per_group;
	if (gend > fs->g.blocks_count)
		gend = fs->g.blocks_count;
	if (p == gfirst)
		return 0;
	if (p + *count > gend)
		*count = gend - p;
	return p;
}

/* ops->map_guess */
static int ind_map_guess(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			 uint64_t max, uint64_t prev_hint, uint64_t *physical, uint64_t *count)
{
	pthread_mutex_lock(&in->map_lock);
	struct ext3_map_cache *mc = inode_map(in, logical);
	uint32_t prev = prev_hint < UINT32_MAX ? (uint32_t)prev_hint : 0;
	/* the caller's hint wins over the cache, which the checks of earlier
	 * segments move back */
	if (!prev && logical > EXT3_NDIR_BLOCKS && mc && mc->valid && logical - 1 >= mc->first &&
	    logical - 1 - mc->first < mc->n)
		prev = mc->ptr[logical - 1 - mc->first];
	else if (!prev && logical == EXT3_NDIR_BLOCKS)
		prev = in->a.block[EXT3_NDIR_BLOCKS - 1];
	uint32_t leaf = 0;
	int rc = map_run_locked(fs, in, mc, logical, max, physical, count, &leaf);
	if (rc == 1) {
		uint64_t idx = (logical - EXT3_NDIR_BLOCKS) % fs->g.apb;
		uint64_t p = map_guess_at(fs, leaf, idx, prev, count);
		if (p)
			*physical = p;
		else /* no guess: wait for the leaf */
			rc = map_run_locked(fs, in, mc, logical, max, physical, count, NULL);
	}
	pthread_mutex_unlock(&in->map_lock);
	return rc;
}

static int map_run_locked(struct ext3_fs *fs, const struct ext3_inode *in,
			  struct ext3_map_cache *mc, uint64_t logical, uint64_t max,
			  uint64_t *physical, uint64_t *count, uint32_t *guess)
{
	*physical = 0;
	*count = 0;
	if (max == 0)
		return 0;
	uint64_t apb = fs->g.apb;
	const uint32_t *ptrs; /* the pointer array that maps `logical` */
	uint64_t first, n;    /* ... starting at logical block `first`, n pointers */
	uint32_t leafcopy[EXT3_MAX_BLOCK_SIZE / 4];
	if (logical < EXT3_NDIR_BLOCKS) {
		ptrs = in->a.block;
		first = 0;
		n = EXT3_NDIR_BLOCKS;
	} else if (mc && mc->valid && logical >= mc->first && logical - mc->first < mc->n) {
		ptrs = mc->ptr;
		first = mc->first;
		n = mc->n;
	} else {
		/* Walk down to the leaf as ind_map_block does (same errors). */
		uint64_t l = 0;
		uint32_t cur = 0;
		int levels = 0;
		int mrc = map_indirect_root(in, apb, logical, &l, &cur, &levels);
		if (mrc)
			return mrc;
		/* span: blocks mapped by the block `cur` at level lv. */
		uint64_t span = 1;
		for (int k = 0; k < levels; k++)
			span *= apb;
		for (int lv = levels; lv > 0; lv--) {
			if (cur == 0) { /* a missing pointer block: all of its span is a hole */
				uint64_t left = span - l % span;
				*count = left < max ? left : max;
				return 0;
			}
			if (lv == 1 && guess && map_ptr_ok(fs, cur) && !leaf_start(fs, cur)) {
				uint64_t left = apb - l % apb;
				*count = left < max ? left : max;
				*guess = cur;
				return 1;
			}
			struct buffer_head *bh;
			int rc = ext3_bread(fs, cur, "indirect", &bh);
			if (rc)
				return err_wrap(rc, "ext3: inode %u", in->a.ino);
			const uint32_t *p = buf_data(bh);
			span /= apb;
			if (lv > 1) {
				cur = le32_to_cpu(p[(l / span) % apb]);
			} else {
				uint32_t *dst = mc ? mc->ptr : leafcopy;
				for (uint64_t i = 0; i < apb; i++)
					dst[i] = le32_to_cpu(p[i]);
				if (mc) {
					mc->valid = true;
					mc->leaf_blk = cur;
					mc->first = logical - l % apb;
					mc->n = (uint32_t)apb;
				}
			}
			buf_put(bh);
		}
		ptrs = mc ? mc->ptr : leafcopy;
		first = logical - l % apb;
		n = apb;
	}
	uint64_t i = logical - first;
	uint32_t p0 = ptrs[i];
	if (p0 && !map_ptr_ok(fs, p0))
		return err_set(-EUCLEAN, "ext3: inode %u: logical block %llu maps to block %u "
			       "outside the filesystem (%u blocks)", in->a.ino,
			       (unsigned long long)logical, p0, fs->g.blocks_count);
	uint64_t c = 1;
	while (c < max && i + c < n) {
		uint32_t p = ptrs[i + c];
		if (p0 == 0 ? p != 0 : (p != p0 + c || !map_ptr_ok(fs, p)))
			break;
		c++;
	}
	*physical = p0;
	*count = c;
	return 0;
}

const struct ext3_bmap_ops ext3_bmap_ind_ops = {
	.name = "indirect",
	.max_blocks = ext3_ind_max_blocks,
	.map_credits = ind_map_credits,
	.map_block = ind_map_block,
	.map_run = ind_map_run,
	.map_guess = ind_map_guess,
	.map_prefetch = ind_map_prefetch,
	.get_blocks = ext3_ind_get_blocks,
	.truncate = ext3_ind_truncate,
};
