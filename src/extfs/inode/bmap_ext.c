/* The extent map, read side (bmap.h's table for EXT4_EXTENTS_FL inodes on
 * a filesystem with the extent feature; docs/ext4-extents.md). Lookups walk
 * the tree with ext4_ext_lookup (extent.c), reading tree blocks through the
 * buffer cache; an unwritten extent maps as a hole (it reads as zeros).
 * Allocation and freeing are not written yet: the feature table makes an
 * extent filesystem mount read-only, so get_blocks with create and
 * truncate are never reached on a writable mount and answer -EROFS if
 * they are. */
#include "extfs/core/csum.h"
#include "extfs/inode/bmap.h"
#include "extfs/format/ext4_extent.h"
#include "extfs/inode/extent.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tree_ctx {
	struct ext3_fs *fs;
	uint32_t ino, gen;
};

/* A tree block through the buffer cache, its metadata_csum tail checked
 * (-EBADMSG, as the kernel's EFSBADCRC). */
static int tree_read(void *ctx, uint64_t pblk, void *buf)
{
	struct tree_ctx *t = ctx;
	struct buffer_head *bh;
	int rc = ext3_bread(t->fs, pblk, "extent tree", &bh);
	if (rc < 0)
		return rc;
	memcpy(buf, buf_data(bh), ext3_fs_block_size(t->fs));
	buf_put(bh);
	if (!ext4_extent_block_csum_ok(t->fs, t->ino, t->gen, buf))
		return err_set(-EBADMSG, "checksum mismatch (metadata_csum)");
	return 0;
}

/* The run at logical: *physical 0 for a hole (or an unwritten extent),
 * *count blocks of it, at most max. */
static int ext_lookup(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical, uint64_t max,
		      uint64_t *physical, uint64_t *count)
{
	*physical = 0;
	*count = 0;
	if (logical > UINT32_MAX) {
		*count = max;
		return 0; /* past the 32-bit logical space: a hole */
	}
	uint32_t root[EXT3_N_BLOCKS];
	for (int i = 0; i < EXT3_N_BLOCKS; i++)
		root[i] = cpu_to_le32(in->a.block[i]); /* the tree is little-endian bytes */
	struct tree_ctx tc = { fs, in->ino, in->a.generation };
	struct ext4_ext_source src = { tree_read, &tc, ext3_fs_block_size(fs), ext3_fs_blocks_count(fs), in->ino };
	/* A tree block buffer only when the root is an index (an in-inode
	 * leaf, most files, needs none). */
	const struct ext4_extent_header *eh = (const void *)root;
	void *scratch = NULL;
	if (eh->eh_depth && !(scratch = malloc(src.block_size)))
		return -ENOMEM;
	struct ext4_ext_map m;
	int rc = ext4_ext_lookup(&src, root, (uint32_t)logical, scratch, &m);
	free(scratch);
	if (rc < 0)
		return rc;
	*physical = m.unwritten ? 0 : m.pblk;
	*count = m.len < max ? m.len : max;
	return 0;
}

static uint64_t ext_max_blocks(const struct ext3_fs *fs)
{
	(void)fs;
	return (uint64_t)1 << 32;
}

static uint64_t ext_map_credits(const struct ext3_fs *fs, uint64_t n)
{
	(void)fs, (void)n;
	return 0; /* nothing is allocated through this table yet */
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

static int ext_get_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk, uint32_t max, bool create,
			  uint64_t *phys, uint32_t *count, bool *is_new)
{
	(void)h;
	if (is_new)
		*is_new = false;
	*phys = 0;
	*count = 0;
	if (create)
		return err_set(-EROFS, "ext4: inode %u: extent files are read-only here", in->ino);
	uint64_t c;
	int rc = ext_lookup(in->fs, in, lblk, max, phys, &c);
	*count = (uint32_t)c;
	return rc;
}

static int ext_truncate(struct ext3_bmap_trunc *t, uint64_t first)
{
	(void)first;
	return err_set(-EROFS, "ext4: inode %u: extent files are read-only here", t->in->ino);
}

const struct ext3_bmap_ops ext3_bmap_ext_ops = {
	.name = "extent (read-only)",
	.max_blocks = ext_max_blocks,
	.map_credits = ext_map_credits,
	.map_block = ext_map_block,
	.map_run = ext_map_run,
	.map_guess = ext_map_guess,
	.map_prefetch = ext_map_prefetch,
	.get_blocks = ext_get_blocks,
	.truncate = ext_truncate,
};
