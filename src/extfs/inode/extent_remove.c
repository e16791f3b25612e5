/* Removing a range from an ext4 extent tree (extent_write.h's
 * ext4_ext_remove: truncate and punch; docs/ext4-extents.md, "Writing").
 *
 * Forward over the range, one step per transaction budget share
 * (ext3_bmap_trunc_room before each): a step cuts one extent by the blocks
 * it holds in one block group (the head, or the tail when the range starts
 * inside the extent), frees them, and removes the extent when it is gone;
 * a leaf left empty is freed and its index entry removed, up the path.
 * Every step leaves a consistent tree and i_blocks, so a restart of the
 * handle between steps commits a tree e2fsck accepts (the inode, on the
 * orphan list, finishes at the next mount). A range inside one extent
 * splits it first (its tail inserted as an extent of its own), then the
 * middle goes as a tail cut. The tree keeps its depth while it holds an
 * extent: only a root left empty becomes a leaf of depth 0 again, as the
 * kernel's ext4_ext_remove_space and e2fsprogs' punch do (no tree
 * reduction), so that a truncate finished by nostall's orphan cleanup frees
 * the same blocks as e2fsck's.
 *
 * Locking: in->lock as writer, t->h running (extent_write.h). */
#include "extfs/inode/extent_path.h"

#include "extfs/core/csum.h"

#include "buf/buf.h"
#include "util/err.h"

#include <string.h>

/* Credits left in t's handle for a step needing `need`: extended or
 * restarted (ext3_bmap_trunc_room; the inode is written first). */
static int room_for(struct ext3_bmap_trunc *t, int need)
{
	if (need > t->credits)
		need = t->credits;
	if (t->budget >= need)
		return 0;
	t->budget = 0; /* under-counting is safe: room adds a fresh handle's worth */
	return ext3_bmap_trunc_room(t);
}

/* Remove entry pos of level l; a non-root node left empty is freed and
 * its entry removed from the parent, and so on up; the root left empty is
 * an empty leaf again. */
static int remove_at(struct xctx *c, int l, unsigned pos)
{
	uint8_t *node = c->lv[l].node;
	unsigned n = xnode_entries(node);
	int rc;
	if (n == 1 && l > 0) {
		uint64_t blk = c->lv[l].blk;
		buf_put(c->lv[l].bh); /* freed as metadata: its buffer is forgotten */
		c->lv[l].bh = NULL;
		c->lv[l].node = NULL;
		rc = xblock_free(c, blk);
		return rc ? rc : remove_at(c, l - 1, (unsigned)c->lv[l - 1].pos);
	}
	rc = xnode_begin(c, l);
	if (rc)
		return rc;
	if (n == 1) { /* the root */
		xnode_init(node, 4, 0);
		return xnode_end(c, l);
	}
	memmove(xnode_ent(node, pos), xnode_ent(node, pos + 1), (size_t)(n - pos - 1) * XENT);
	xnode_set_entries(node, n - 1);
	rc = xnode_end(c, l);
	if (!rc && pos == 0)
		rc = xfix_keys(c, l);
	return rc;
}

static void blocks_drop(struct xctx *c, uint32_t n)
{
	uint64_t u = (uint64_t)n * c->units;
	ext3_inode_blocks_add(c->in, -(int64_t)u);
	c->root_dirty = true;
}

int ext4_ext_remove(struct ext3_bmap_trunc *t, uint32_t first, uint64_t end)
{
	if (end > (uint64_t)1 << 32)
		end = (uint64_t)1 << 32;
	if (first >= end)
		return 0;
	struct xctx c;
	xctx_init(&c, t->h, t->in);
	const struct ext3_geom *g = &t->fs->g;
	uint64_t cur = first;
	int rc = 0;
	while (cur < end && !rc) {
		/* A step: the leaf and every level above it (an emptied leaf
		 * frees up the path), the data's bitmap and descriptor, or a
		 * split's insert. */
		int need = EXT3_BMAP_TRUNC_STEP_CREDITS + ext4_ext_credits(t->fs, t->in);
		rc = room_for(t, need);
		if (!rc)
			rc = xpath_walk(&c, (uint32_t)cur);
		if (rc)
			break;
		int l = c.depth, pos = c.lv[l].pos;
		uint8_t *leaf = c.lv[l].node;
		struct xext x;
		if (pos >= 0)
			xext_get(xnode_ent(leaf, (unsigned)pos), &x);
		if (pos < 0 || (uint64_t)x.lblk + x.len <= cur) { /* a hole */
			if (c.next >= end)
				break;
			cur = c.next;
			continue;
		}
		if (x.pblk < g->first_data_block || x.pblk + x.len > g->blocks_count) {
			rc = xcorrupt(&c, c.lv[l].blk, "an extent outside the filesystem");
			break;
		}
		uint64_t xend = (uint64_t)x.lblk + x.len;
		uint64_t a = cur, b = xend < end ? xend : end;
		t->budget -= need;
		rc = xnode_begin(&c, l);
		if (rc)
			break;
		if (a > x.lblk && b < xend) {
			/* Inside the extent: its tail past the range becomes an
			 * extent of its own; the next step cuts the rest's tail. */
			struct xext head = x;
			head.len = (uint32_t)(b - x.lblk);
			xext_set(xnode_ent(leaf, (unsigned)pos), &head);
			rc = xnode_end(&c, l);
			if (rc)
				break;
			rc = xinsert(&c, (uint32_t)b, x.pblk + (b - x.lblk), (uint32_t)(xend - b), x.unwritten,
				     false);
			if (rc)
				xrestore(&c, x.lblk, b, &x); /* the tail's blocks stay mapped */
			continue;
		}
		uint64_t pfree;
		uint32_t k;
		if (a == x.lblk) {
			/* The head, up to the end of its block group. */
			uint64_t gend = g->first_data_block +
					((x.pblk - g->first_data_block) / g->blocks_per_group + 1) * g->blocks_per_group;
			k = (uint32_t)(b - a < gend - x.pblk ? b - a : gend - x.pblk);
			pfree = x.pblk;
			if (k == x.len) {
				rc = remove_at(&c, l, (unsigned)pos);
			} else {
				struct xext rest = {x.lblk + k, x.len - k, x.pblk + k, x.unwritten};
				xext_set(xnode_ent(leaf, (unsigned)pos), &rest);
				rc = xnode_end(&c, l);
				if (!rc && pos == 0)
					rc = xfix_keys(&c, l);
			}
			cur = a + k;
		} else {
			/* The tail (b == xend), back to the start of its group. */
			uint64_t last = x.pblk + x.len - 1;
			uint64_t gstart = g->first_data_block +
					  (last - g->first_data_block) / g->blocks_per_group * g->blocks_per_group;
			k = (uint32_t)(b - a < last - gstart + 1 ? b - a : last - gstart + 1);
			pfree = last + 1 - k;
			struct xext head = x;
			head.len -= k;
			xext_set(xnode_ent(leaf, (unsigned)pos), &head);
			rc = xnode_end(&c, l);
		}
		if (!rc)
			rc = ext3_free_blocks(t->h, t->in, pfree, k, t->meta);
		if (!rc)
			blocks_drop(&c, k);
	}
	return xctx_done(&c, rc);
}
