/* Where each group's bitmaps and inode table go, and the bitmaps that follow
 * (mkfs_int.h). Without flex_bg: the standard place (geom.c), right after
 * the group's superblock copy and GDT. With flex_bg (flex_size groups per
 * flex group, as mke2fs with s_log_groups_per_flex 4): the metadata of every
 * group of a flex group is packed from the first free block of its first
 * group on, all block bitmaps, then all inode bitmaps, then all inode tables,
 * skipping the superblock/GDT copies of the groups it runs into (an inode
 * table is moved past such a copy rather than split; the skipped blocks stay
 * free). Everything is recomputed on demand from the layout: no tables. */
#include "extfs/mkfs/mkfs_int.h"

#include "extfs/format/ext3_format.h"

#include <errno.h>
#include <string.h>

static uint32_t group_of(const struct ext3_mkfs_layout *l, uint64_t b)
{
	return (uint32_t)((b - l->first_data_block) / l->blocks_per_group);
}

/* Place len blocks at *m or after: never inside a superblock/GDT copy, never
 * across a group boundary into one. */
static int place(const struct ext3_mkfs_layout *l, uint64_t *m, uint32_t len, uint64_t *at)
{
	for (;;) {
		if (*m + len > l->blocks_count)
			return -ENOSPC;
		uint32_t g = group_of(l, *m);
		uint64_t first = ext3_geom_group_first(&l->geo, g);
		uint64_t sb_end = first + ext3_geom_super_blocks(&l->geo, g);
		if (*m < sb_end) {
			*m = sb_end;
			continue;
		}
		uint64_t end = first + ext3_geom_group_blocks(&l->geo, g);
		if (*m + len > end && g + 1 < l->groups && ext3_geom_super_blocks(&l->geo, g + 1)) {
			*m = end; /* the loop skips the next group's copy */
			continue;
		}
		*at = *m;
		*m += len;
		return 0;
	}
}

int mkfs_group_meta(const struct ext3_mkfs_layout *l, uint32_t g, struct mkfs_gmeta *out)
{
	if (!l->flex_size) {
		out->block_bitmap = ext3_geom_std_block_bitmap(&l->geo, g);
		out->inode_bitmap = out->block_bitmap + 1;
		out->inode_table = out->block_bitmap + 2;
		return 0;
	}
	uint32_t f0 = g - g % l->flex_size;
	uint32_t n = l->groups - f0 < l->flex_size ? l->groups - f0 : l->flex_size;
	uint32_t i = g - f0;
	uint64_t m = ext3_geom_group_first(&l->geo, f0);
	uint64_t at = 0;
	int rc = 0;
	/* bitmaps: 1 block each, so n of them then the i-th is at a fixed
	 * distance unless a copy intervenes: place one by one. */
	for (uint32_t k = 0; k < n && !rc; k++) {
		rc = place(l, &m, 1, &at);
		if (k == i)
			out->block_bitmap = at;
	}
	for (uint32_t k = 0; k < n && !rc; k++) {
		rc = place(l, &m, 1, &at);
		if (k == i)
			out->inode_bitmap = at;
	}
	for (uint32_t k = 0; k < n && !rc; k++) {
		rc = place(l, &m, l->inode_table_blocks, &at);
		if (k == i)
			out->inode_table = at;
	}
	return rc;
}

/* Call fn for each metadata item (bitmap or table) of the flex group (or
 * the group, without flex_bg) that group g belongs to. */
static void flex_items(const struct ext3_mkfs_layout *l, uint32_t g,
		       void (*fn)(void *ctx, uint64_t blk, uint32_t len), void *ctx)
{
	uint32_t f0 = l->flex_size ? g - g % l->flex_size : g;
	uint32_t n = l->flex_size ? (l->groups - f0 < l->flex_size ? l->groups - f0 : l->flex_size) : 1;
	for (uint32_t k = 0; k < n; k++) {
		struct mkfs_gmeta gm;
		if (mkfs_group_meta(l, f0 + k, &gm))
			continue; /* the layout check refused this already */
		fn(ctx, gm.block_bitmap, 1);
		fn(ctx, gm.inode_bitmap, 1);
		fn(ctx, gm.inode_table, l->inode_table_blocks);
	}
}

struct span_ctx {
	uint64_t first, end; /* the group's blocks */
	uint64_t top;        /* end of the last item inside */
	uint8_t *bm;         /* when marking */
};

static void bitmap_set_range(uint8_t *bm, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++)
		bm[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static void span_fn(void *vctx, uint64_t blk, uint32_t len)
{
	struct span_ctx *c = vctx;
	uint64_t a = blk > c->first ? blk : c->first;
	uint64_t b = blk + len < c->end ? blk + len : c->end;
	if (a >= b)
		return;
	if (b > c->top)
		c->top = b;
	if (c->bm)
		bitmap_set_range(c->bm, (uint32_t)(a - c->first), (uint32_t)(b - c->first));
}

uint64_t mkfs_data0(const struct ext3_mkfs_layout *l, uint32_t g)
{
	uint64_t first = ext3_geom_group_first(&l->geo, g);
	struct span_ctx c = {
		.first = first,
		.end = first + ext3_geom_group_blocks(&l->geo, g),
		.top = first + ext3_geom_super_blocks(&l->geo, g),
	};
	flex_items(l, g, span_fn, &c);
	return c.top;
}

void mkfs_group_bitmaps(const struct ext3_mkfs_layout *l, uint32_t g, uint8_t *bbm, uint8_t *ibm)
{
	uint32_t bs = l->block_size;
	uint64_t first = ext3_geom_group_first(&l->geo, g);
	uint32_t nb = ext3_geom_group_blocks(&l->geo, g);
	struct span_ctx c = { .first = first, .end = first + nb, .top = first, .bm = bbm };
	memset(bbm, 0, bs);
	bitmap_set_range(bbm, 0, ext3_geom_super_blocks(&l->geo, g));
	flex_items(l, g, span_fn, &c);
	uint64_t d0 = mkfs_data0(l, g);
	if (l->alloc_end > d0) {
		uint64_t e = l->alloc_end < first + nb ? l->alloc_end : first + nb;
		bitmap_set_range(bbm, (uint32_t)(d0 - first), (uint32_t)(e - first));
	}
	bitmap_set_range(bbm, nb, bs * 8); /* past the end of the filesystem */
	memset(ibm, 0, bs);
	if (g == 0)
		bitmap_set_range(ibm, 0, EXT3_FIRST_INO);
	bitmap_set_range(ibm, l->inodes_per_group, bs * 8);
}

static void count_fn(void *vctx, uint64_t blk, uint32_t len)
{
	struct span_ctx *c = vctx;
	uint64_t a = blk > c->first ? blk : c->first;
	uint64_t b = blk + len < c->end ? blk + len : c->end;
	if (a < b)
		c->top += b - a; /* here: the count of metadata blocks */
}

uint32_t mkfs_group_free_blocks(const struct ext3_mkfs_layout *l, uint32_t g)
{
	/* The same sets as mkfs_group_bitmaps marks, counted: superblock copy,
	 * the flex group's items inside g, the data below alloc_end. They do
	 * not overlap. */
	uint64_t first = ext3_geom_group_first(&l->geo, g);
	uint32_t nb = ext3_geom_group_blocks(&l->geo, g);
	struct span_ctx c = { .first = first, .end = first + nb, .top = 0 };
	flex_items(l, g, count_fn, &c);
	uint64_t used = ext3_geom_super_blocks(&l->geo, g) + c.top;
	uint64_t d0 = mkfs_data0(l, g);
	if (l->alloc_end > d0)
		used += (l->alloc_end < first + nb ? l->alloc_end : first + nb) - d0;
	return (uint32_t)(nb - used);
}
