/* The extent map (bmap.h's table for EXT4_EXTENTS_FL inodes on a
 * filesystem with the extent feature; docs/ext4-extents.md). Lookups walk
 * the tree with ext4_ext_lookup (extent.c), reading tree blocks through the
 * buffer cache; an unwritten extent maps as a hole (it reads as zeros).
 * get_blocks with create allocates a run (ext3_new_blocks, goal from
 * ext4_ext_find_goal) and inserts it (ext4_ext_insert), or converts an
 * unwritten run to initialized and reports it new (the data path then
 * treats it as a hole fill: zeroes around a partial write, ordered data);
 * truncate is ext4_ext_remove (extent_write.c, extent_remove.c). */
#include "extfs/core/csum.h"
#include "extfs/inode/bmap.h"
#include "extfs/format/ext4_extent.h"
#include "extfs/inode/extent.h"
#include "extfs/inode/extent_write.h"
#include "extfs/inode/extent_path.h" /* xroot_depth */

#include "jbd/jbd.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tree_ctx {
	struct ext3_fs *fs;
	const struct ext4_ext_source *src;
	uint32_t ino, gen;
};

/* A tree block in the buffer cache, read in place (the caller holds
 * in->lock: the tree's writers hold it exclusively; the journal's settling
 * of the checksum writes only the tail, past the entries). Checked once per
 * read from disk, as the kernel's buffer_verified: the metadata_csum tail
 * (-EBADMSG, as the kernel's EFSBADCRC) and the node's structure
 * (ext4_ext_node_check); the tree's writers keep both valid. */
static const void *tree_get(void *ctx, uint64_t pblk, void **ref, bool *checked, int *err)
{
	struct tree_ctx *t = ctx;
	struct buffer_head *bh;
	int rc = ext3_bread(t->fs, pblk, "extent tree", &bh);
	if (rc < 0) {
		*err = rc;
		return NULL;
	}
	const void *node = buf_data(bh);
	if (!buf_verified(bh)) {
		if (!ext4_extent_block_csum_ok(t->fs, t->ino, t->gen, node))
			rc = err_set(-EBADMSG, "checksum mismatch (metadata_csum)");
		else if (!(rc = ext4_ext_node_check(t->src, node, pblk)))
			buf_set_verified(bh);
	}
	if (rc < 0) {
		buf_put(bh);
		*err = rc;
		return NULL;
	}
	*checked = true;
	*ref = bh;
	return node;
}

static void tree_put(void *ctx, void *ref)
{
	(void)ctx;
	buf_put(ref);
}

/* ---- the run cache (bmap.h's struct ext3_map_cache, ext[]) ----
 *
 * Only for a tree with a level below the root: an in-inode root maps
 * without touching a block. Filled by lookups (in->lock as reader, so
 * several at once: map_lock serialises them); emptied by every change of
 * the tree (xnode_begin / xnode_end, get_blocks, falloc, truncate call
 * ext3_inode_map_invalidate with in->lock as writer, so no lookup runs
 * between a change and its invalidation). */

static bool run_cache_get(struct ext3_inode *in, uint32_t lblk, struct ext4_ext_map *out)
{
	bool hit = false;
	pthread_mutex_lock(&in->map_lock);
	struct ext3_map_cache *mc = in->map;
	if (mc && mc->valid) {
		for (unsigned i = 0; i < mc->ext_n; i++) {
			const struct ext3_map_run *r = &mc->ext[i];
			if (lblk - r->lblk < r->len) { /* unsigned: lblk in [r->lblk, r->lblk + len) */
				uint32_t off = lblk - r->lblk;
				out->pblk = r->pblk ? r->pblk + off : 0;
				out->len = r->len - off;
				out->unwritten = r->unwritten;
				hit = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&in->map_lock);
	return hit;
}

static void run_cache_put(struct ext3_inode *in, uint32_t lblk, const struct ext4_ext_map *m)
{
	if (m->len == 0)
		return;
	pthread_mutex_lock(&in->map_lock);
	if (!in->map) {
		in->map = ext3_map_cache_new();
		if (!in->map) { /* no memory: the tree is walked every time */
			pthread_mutex_unlock(&in->map_lock);
			return;
		}
	}
	struct ext3_map_cache *mc = in->map;
	if (!mc->valid) {
		mc->valid = true;
		mc->n = 0; /* the indirect map's part: nothing */
		mc->ext_n = 0;
		mc->ext_next = 0;
	}
	unsigned cap = sizeof mc->ext / sizeof mc->ext[0];
	unsigned i = mc->ext_next;
	mc->ext[i] = (struct ext3_map_run){ lblk, m->len, m->pblk, m->unwritten };
	mc->ext_next = (uint8_t)((i + 1) % cap);
	if (mc->ext_n < cap)
		mc->ext_n++;
	pthread_mutex_unlock(&in->map_lock);
}

int ext4_ext_map(struct ext3_inode *in, uint32_t lblk, struct ext4_ext_map *out)
{
	struct ext3_fs *fs = in->fs;
	bool deep = xroot_depth(in) != 0;
	if (deep && run_cache_get(in, lblk, out))
		return 0;
	uint32_t root[EXT3_N_BLOCKS];
	for (int i = 0; i < EXT3_N_BLOCKS; i++)
		root[i] = cpu_to_le32(in->a.block[i]); /* the tree is little-endian bytes */
	struct ext4_ext_source src = { .get = tree_get, .put = tree_put, .block_size = ext3_fs_block_size(fs),
				       .blocks_count = ext3_fs_blocks_count(fs), .ino = in->ino };
	struct tree_ctx tc = { fs, &src, in->ino, in->a.generation };
	src.ctx = &tc;
	int rc = ext4_ext_lookup(&src, root, lblk, NULL, out);
	if (rc == 0 && deep)
		run_cache_put(in, lblk, out);
	return rc;
}

/* The run at logical: *physical 0 for a hole (or an unwritten extent),
 * *count blocks of it, at most max. */
static int ext_lookup(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical, uint64_t max,
		      uint64_t *physical, uint64_t *count)
{
	(void)fs;
	*physical = 0;
	*count = 0;
	if (logical > UINT32_MAX) {
		*count = max;
		return 0; /* past the 32-bit logical space: a hole */
	}
	struct ext4_ext_map m;
	/* (the lookup only reads the inode) */
	int rc = ext4_ext_map((struct ext3_inode *)in, (uint32_t)logical, &m);
	if (rc < 0)
		return rc;
	*physical = m.unwritten ? 0 : m.pblk;
	*count = m.len < max ? m.len : max;
	return 0;
}

static uint64_t ext_max_blocks(const struct ext3_fs *fs)
{
	/* ext4_max_size: the 32-bit logical block of an extent (blocks 0 to
	 * 2^32 - 2), and without huge_file i_blocks (32 bits of 512-byte
	 * units) counting the data. */
	uint64_t space = 0xffffffffull;
	if (fs->ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE)
		return space;
	uint64_t limit = 0xffffffffull / (fs->g.block_size / 512);
	return limit < space ? limit : space;
}

/* ops->map_credits, per filesystem (the inode's depth is not known): n
 * blocks land in ceil(n / 32768) extents when contiguous, each insert
 * touching a path of up to EXT4_EXT_MAX_DEPTH tree blocks and splitting
 * each level (a new block per level and one for a new level). get_blocks
 * extends the handle by the inode's own figure (ext4_ext_credits) before
 * each insert, which covers fragmented allocations. */
static uint64_t ext_map_credits(const struct ext3_fs *fs, uint64_t n)
{
	(void)fs;
	if (n == 0)
		return 0;
	uint64_t extents = (n + EXT4_EXT_INIT_MAX_LEN - 1) / EXT4_EXT_INIT_MAX_LEN;
	return extents * (2 * EXT4_EXT_MAX_DEPTH + 1);
}

static int ext_map_block(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical, uint64_t *physical)
{
	uint64_t count;
	return ext_lookup(fs, in, logical, 1, physical, &count);
}

static int ext_map_run(struct ext3_fs *fs, struct ext3_inode *in, struct ext3_map_cache *mc, uint64_t logical,
		       uint64_t max, uint64_t *physical, uint64_t *count)
{
	(void)mc; /* tree blocks stay in the buffer cache; the run is long */
	return ext_lookup(fs, in, logical, max, physical, count);
}

static int ext_map_guess(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical, uint64_t max,
			 uint64_t prev_hint, uint64_t *physical, uint64_t *count)
{
	(void)prev_hint; /* an extent gives the whole run at once: never a guess */
	return ext_lookup(fs, in, logical, max, physical, count);
}

static int ext_map_prefetch(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical, uint64_t *next)
{
	uint64_t phys, count;
	int rc = ext_lookup(fs, in, logical, UINT32_MAX, &phys, &count);
	*next = logical + (count ? count : 1);
	return rc;
}

/* Credits for one tree change in h: the inode's own figure, asked of the
 * transaction (the caller's reservation, ext3_bmap_credits, is a per
 * filesystem guess). A full transaction answers -EAGAIN: the reservation
 * has to do. */
static void credits_ensure(struct jbd_handle *h, struct ext3_inode *in)
{
	(void)ext3_handle_extend(h, ext4_ext_credits(in->fs, in));
}

static int ext_get_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk, uint32_t max, bool create,
			  uint64_t *phys, uint32_t *count, bool *is_new)
{
	struct ext3_fs *fs = in->fs;
	if (is_new)
		*is_new = false;
	*phys = 0;
	*count = 0;
	if (max == 0)
		return 0;
	if (lblk > UINT32_MAX) {
		if (create)
			return err_set(-EFBIG, "ext4: inode %u: logical block %llu past the 32-bit extent space",
				       in->ino, (unsigned long long)lblk);
		*count = max;
		return 0;
	}
	struct ext4_ext_map m;
	int rc = ext4_ext_map(in, (uint32_t)lblk, &m);
	if (rc < 0)
		return rc;
	uint32_t n = m.len < max ? m.len : max;
	if (m.pblk && !m.unwritten) {
		*phys = m.pblk;
		*count = n;
		return 0;
	}
	if (!create) {
		*count = n; /* a hole, or unwritten: reads as zeros */
		return 0;
	}
	if (m.pblk) {
		/* Data lands in an unwritten extent: those blocks become
		 * initialized in this handle and count as new, as a hole fill. */
		credits_ensure(h, in);
		rc = ext4_ext_convert_nowrite(h, in, (uint32_t)lblk, n, false);
		if (rc) {
			(void)ext3_mark_inode_dirty(h, in); /* the root may have changed */
			return rc;
		}
		*phys = m.pblk;
	} else {
		if (n > EXT4_EXT_INIT_MAX_LEN)
			n = EXT4_EXT_INIT_MAX_LEN;
		uint64_t units = (uint64_t)n * (fs->g.block_size / 512);
		if (ext3_inode_blocks_now(in) + units > ext3_inode_blocks_max(fs))
			return err_set(-EFBIG, "ext4: inode %u: i_blocks would overflow", in->ino);
		uint64_t goal = ext4_ext_find_goal(in, (uint32_t)lblk), first;
		credits_ensure(h, in);
		rc = ext3_new_blocks(h, in, goal, &n, &first);
		if (rc)
			return rc;
		rc = ext4_ext_insert_nowrite(h, in, (uint32_t)lblk, first, n, false);
		if (rc) {
			(void)ext3_free_blocks(h, in, first, n, false);
			(void)ext3_mark_inode_dirty(h, in); /* the root may have changed */
			return rc;
		}
		ext3_inode_blocks_add(in, (int64_t)n * (fs->g.block_size / 512));
		*phys = first;
	}
	in->rsv.last_lblk = lblk + n - 1;
	in->rsv.last_phys = *phys + n - 1;
	ext3_inode_map_invalidate(in);
	rc = ext3_mark_inode_dirty(h, in);
	if (rc)
		return rc;
	ext3_inode_note_tid(h, in, true); /* the block map: fdatasync too */
	*count = n;
	if (is_new)
		*is_new = true;
	return 0;
}

static int ext_truncate(struct ext3_bmap_trunc *t, uint64_t first)
{
	if (first > UINT32_MAX)
		return 0;
	return ext4_ext_remove(t, (uint32_t)first, (uint64_t)1 << 32);
}

const struct ext3_bmap_ops ext3_bmap_ext_ops = {
	.name = "extent",
	.max_blocks = ext_max_blocks,
	.map_credits = ext_map_credits,
	.map_block = ext_map_block,
	.map_run = ext_map_run,
	.map_guess = ext_map_guess,
	.map_prefetch = ext_map_prefetch,
	.get_blocks = ext_get_blocks,
	.truncate = ext_truncate,
};
