/* Bitmaps of uninitialised groups, built in memory (uninit.h). Written
 * from the ext4 disk layout's description of BLOCK_UNINIT / INODE_UNINIT
 * and checked against the bitmaps mkfs.ext4 writes for the same layout
 * without uninit_bg (test_ext4_csum_write). */
#include "extfs/core/uninit.h"
#include "extfs/core/csum.h"
#include "extfs/core/ext3_int.h"

#include <string.h>

static void bit_set(uint8_t *m, uint32_t bit) { m[bit >> 3] |= (uint8_t)(1u << (bit & 7)); }

/* Mark [blk, blk + n) where it falls inside group g (first .. first+nb-1). */
static void mark_range(uint8_t *bm, uint64_t first, uint32_t nb, uint64_t blk, uint64_t n)
{
	uint64_t lo = blk > first ? blk : first, hi = blk + n < first + nb ? blk + n : first + nb;
	for (uint64_t b = lo; b < hi; b++)
		bit_set(bm, (uint32_t)(b - first));
}

uint32_t ext4_block_bitmap_init(const struct ext3_fs *fs, uint32_t g, uint8_t *bm)
{
	uint32_t bs = fs->g.block_size;
	uint64_t first = ext3_geom_group_first(&fs->g, g);
	uint32_t nb = ext3_geom_group_blocks(&fs->g, g);
	memset(bm, 0, bs);
	mark_range(bm, first, nb, first, ext3_geom_super_blocks(&fs->g, g));
	bool flex = fs->incompat & EXT4_FEATURE_INCOMPAT_FLEX_BG;
	/* Without flex_bg every group's metadata is its own; with it, any
	 * group's may lie here (mkfs clears BLOCK_UNINIT on such a group, but
	 * a free-looking metadata block would be handed out). */
	uint32_t from = flex ? 0 : g, to = flex ? fs->g.groups : g + 1;
	for (uint32_t o = from; o < to; o++) {
		const struct ext3_group_desc *d = &fs->gd[o];
		mark_range(bm, first, nb, d->bg_block_bitmap, 1);
		mark_range(bm, first, nb, d->bg_inode_bitmap, 1);
		mark_range(bm, first, nb, d->bg_inode_table, fs->g.itable_blocks);
	}
	uint32_t used = 0;
	for (uint32_t b = 0; b < nb; b++)
		used += (bm[b >> 3] >> (b & 7)) & 1;
	for (uint32_t b = nb; b < bs * 8; b++)
		bit_set(bm, b);
	return nb - used;
}

void ext4_inode_bitmap_init(const struct ext3_fs *fs, uint8_t *bm)
{
	uint32_t bs = fs->g.block_size;
	memset(bm, 0, bs);
	for (uint32_t b = fs->g.inodes_per_group; b < bs * 8; b++)
		bit_set(bm, b);
}

bool ext4_group_bitmap_uninit(const struct ext3_fs *fs, uint32_t g, bool inode_bitmap)
{
	if (!ext4_has_group_desc_csum(fs))
		return false;
	uint16_t fl = __atomic_load_n(&fs->gd[g].bg_flags, __ATOMIC_RELAXED);
	return fl & (inode_bitmap ? EXT4_BG_INODE_UNINIT : EXT4_BG_BLOCK_UNINIT);
}
