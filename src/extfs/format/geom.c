/* ext3 group and layout geometry (geom.h). Pure functions. */
#include "extfs/format/geom.h"

#include "extfs/format/ext3_format.h"

static uint64_t div_ceil(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

void ext3_geom_derive(struct ext3_geom *g)
{
	g->groups = (uint32_t)div_ceil((uint64_t)g->blocks_count - g->first_data_block,
				       g->blocks_per_group);
	if (!g->desc_size)
		g->desc_size = EXT3_DESC_SIZE;
	g->desc_per_block = g->block_size / g->desc_size;
	g->desc_blocks = (uint32_t)div_ceil(g->groups, g->desc_per_block);
	g->inodes_per_block = g->block_size / g->inode_size;
	g->itable_blocks = (uint32_t)div_ceil((uint64_t)g->inodes_per_group * g->inode_size,
					      g->block_size);
	g->apb = g->block_size / 4;
	g->inodes_count = (uint32_t)((uint64_t)g->inodes_per_group * g->groups);
}

bool ext3_group_has_super(uint32_t grp)
{
	if (grp <= 1)
		return true;
	if (!(grp & 1))
		return false;
	static const uint32_t bases[] = { 3, 5, 7 };
	for (unsigned i = 0; i < 3; i++) {
		uint64_t p = bases[i];
		while (p < grp)
			p *= bases[i];
		if (p == grp)
			return true;
	}
	return false;
}

bool ext3_geom_has_super(const struct ext3_geom *g, uint32_t grp)
{
	return !g->sparse_super || ext3_group_has_super(grp);
}

uint32_t ext3_geom_group_of_block(const struct ext3_geom *g, uint64_t blk)
{
	return (uint32_t)((blk - g->first_data_block) / g->blocks_per_group);
}

uint32_t ext3_geom_group_of_ino(const struct ext3_geom *g, uint32_t ino)
{
	return (ino - 1) / g->inodes_per_group;
}

uint32_t ext3_geom_ino_index(const struct ext3_geom *g, uint32_t ino)
{
	return (ino - 1) % g->inodes_per_group;
}

uint64_t ext3_geom_group_first(const struct ext3_geom *g, uint32_t grp)
{
	return g->first_data_block + (uint64_t)grp * g->blocks_per_group;
}

uint32_t ext3_geom_group_blocks(const struct ext3_geom *g, uint32_t grp)
{
	if (grp + 1 < g->groups)
		return g->blocks_per_group;
	return (uint32_t)(g->blocks_count - ext3_geom_group_first(g, grp));
}

/* Is grp in a metagroup whose descriptor block is a meta_bg one? */
static bool in_meta_region(const struct ext3_geom *g, uint32_t grp)
{
	return g->meta_bg && grp / g->desc_per_block >= g->first_meta_bg;
}

/* With meta_bg, does grp hold a copy of its metagroup's descriptor block
 * (first, second and last group of the metagroup)? */
static bool holds_meta_desc(const struct ext3_geom *g, uint32_t grp)
{
	uint32_t r = grp % g->desc_per_block;
	return in_meta_region(g, grp) && (r == 0 || r == 1 || r == g->desc_per_block - 1);
}

uint32_t ext3_geom_super_blocks(const struct ext3_geom *g, uint32_t grp)
{
	uint32_t sb = ext3_geom_has_super(g, grp) ? 1 : 0;
	if (in_meta_region(g, grp))
		return sb + (holds_meta_desc(g, grp) ? 1 : 0);
	if (!sb)
		return 0;
	return 1 + (g->meta_bg ? g->first_meta_bg : g->desc_blocks + g->reserved_gdt_blocks);
}

uint64_t ext3_geom_desc_block(const struct ext3_geom *g, uint64_t sb_block, uint32_t nr)
{
	if (!g->meta_bg || nr < g->first_meta_bg)
		return sb_block + 1 + nr;
	uint32_t grp = nr * g->desc_per_block;
	return ext3_geom_group_first(g, grp) + (ext3_geom_has_super(g, grp) ? 1 : 0);
}

uint64_t ext3_geom_std_block_bitmap(const struct ext3_geom *g, uint32_t grp)
{
	return ext3_geom_group_first(g, grp) + ext3_geom_super_blocks(g, grp);
}

uint32_t ext3_geom_group_meta(const struct ext3_geom *g, uint32_t grp)
{
	return ext3_geom_super_blocks(g, grp) + 2 + g->itable_blocks;
}

uint64_t ext3_geom_overhead(const struct ext3_geom *g)
{
	uint64_t o = g->first_data_block;
	for (uint32_t grp = 0; grp < g->groups; grp++) {
		if (in_meta_region(g, grp))
			o += (ext3_geom_has_super(g, grp) ? 1 : 0) + (holds_meta_desc(g, grp) ? 1 : 0);
		else if (ext3_geom_has_super(g, grp))
			o += 1 + (g->meta_bg ? g->first_meta_bg : g->desc_blocks);
		o += 2 + g->itable_blocks;
	}
	return o;
}
