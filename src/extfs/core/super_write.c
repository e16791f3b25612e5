/* Group descriptors and the superblock's counters, journaled (write.h,
 * "superblock counters and group descriptors"; docs/write-alloc.md).
 *
 * fs->gd[] (host order) is the live copy of the descriptors; a change is
 * made there under the group's lock and copied into the primary GDT block
 * holding the descriptor (the kernel journals only the primary; backups are
 * e2fsck's and resize's business). The superblock's free counts follow the
 * live totals fs->free_blocks / fs->free_inodes (under fs->sb_lock), and the
 * whole in-memory superblock fs->sb is copied into the superblock's block
 * (block 1 with 1 KiB blocks, else bytes 1024-2047 of block 0) whenever it
 * is journaled, so the on-disk copy is always a consistent snapshot.
 *
 * Counts are read without the group lock by the allocators' group choice
 * (a heuristic): they are written and read with relaxed atomics.
 */
#include "extfs/core/write.h"
#include "extfs/core/csum.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* Journal fs->sb; adjust the live free counts by the deltas first. */
static int super_journal(struct jbd_handle *h, struct ext3_fs *fs, int64_t dblocks,
			 int64_t dinodes)
{
	/* The block holding the superblock, and its offset there. */
	uint64_t blk = fs->g.block_size == EXT3_SUPERBLOCK_OFFSET ? 1 : 0;
	unsigned off = blk ? 0 : EXT3_SUPERBLOCK_OFFSET;
	struct buffer_head *bh;
	int rc = ext3_journal_bread(h, fs, blk, "superblock", false, &bh);
	if (rc)
		return rc;
	ext3_sb_lock(fs);
	fs->free_blocks = (uint64_t)((int64_t)fs->free_blocks + dblocks);
	fs->free_inodes = (uint64_t)((int64_t)fs->free_inodes + dinodes);
	fs->sb.s_free_blocks_count = cpu_to_le32((uint32_t)fs->free_blocks);
	fs->sb.s_free_inodes_count = cpu_to_le32((uint32_t)fs->free_inodes);
	memcpy((uint8_t *)buf_data(bh) + off, &fs->sb, sizeof fs->sb);
	/* metadata_csum: the buffer's copy, under sb_lock (every writer of
	 * the superblock's bytes holds it); deferred to the journal's copy,
	 * when no handle writes (docs/ext4-csum.md) */
	ext4_sb_csum_defer(fs, bh, off);
	ext3_sb_unlock(fs);
	rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	return rc;
}

int ext3_super_dirty(struct jbd_handle *h, struct ext3_fs *fs)
{
	return super_journal(h, fs, 0, 0);
}

/* New value of a 16-bit descriptor count, or -1 when it would leave
 * [0, limit]. */
static int32_t count_apply(uint16_t *field, int32_t delta, uint32_t limit)
{
	int32_t v = (int32_t)__atomic_load_n(field, __ATOMIC_RELAXED) + delta;
	return v < 0 || (uint32_t)v > limit ? -1 : v;
}

/* Write group g's live descriptor fields (fs->gd[g], fs->bm_csum) into its
 * on-disk copy d (desc_size bytes) and checksum it. Only this group's
 * bytes: the block's other descriptors are their lock holders'. 64-byte
 * descriptors: the high halves of the counts are 0 (at most 2^16 blocks or
 * inodes per group), those of the locations were checked 0 at mount. */
static void desc_encode(const struct ext3_fs *fs, uint32_t g, uint8_t *d)
{
	struct ext3_group_desc *od = (struct ext3_group_desc *)d;
	const struct ext3_group_desc *m = &fs->gd[g];
	od->bg_free_blocks_count = cpu_to_le16(m->bg_free_blocks_count);
	od->bg_free_inodes_count = cpu_to_le16(m->bg_free_inodes_count);
	od->bg_used_dirs_count = cpu_to_le16(m->bg_used_dirs_count);
	if (ext4_has_group_desc_csum(fs)) {
		od->bg_flags = cpu_to_le16(m->bg_flags);
		od->bg_itable_unused = cpu_to_le16(m->bg_itable_unused);
	}
	if (fs->g.desc_size >= EXT4_DESC_SIZE_64BIT) {
		struct ext4_group_desc_hi *hi = (struct ext4_group_desc_hi *)(od + 1);
		hi->bg_free_blocks_count_hi = 0;
		hi->bg_free_inodes_count_hi = 0;
		hi->bg_used_dirs_count_hi = 0;
		if (ext4_has_group_desc_csum(fs))
			hi->bg_itable_unused_hi = 0;
	}
	ext4_gd_bitmap_csum_put(fs, d, false, fs->bm_csum[2 * g]);
	ext4_gd_bitmap_csum_put(fs, d, true, fs->bm_csum[2 * g + 1]);
	ext4_gd_csum_update(fs, g, d);
}

void ext3_group_bitmap_changed(struct ext3_fs *fs, uint32_t g, bool inode_bitmap, const void *bm,
			       uint32_t bit, uint32_t nbits)
{
	size_t i = 2 * (size_t)g + (inode_bitmap ? 1 : 0);
	bool updated = fs->bm_csum_live[i] && nbits &&
		       ext4_bitmap_csum_flip(fs, inode_bitmap, &fs->bm_csum[i], bit, nbits);
	if (ext4_has_metadata_csum(fs) && !updated) {
		fs->bm_csum[i] = ext4_bitmap_csum_of(fs, inode_bitmap, bm);
		fs->bm_csum_live[i] = true;
	}
	if (!ext4_has_group_desc_csum(fs))
		return;
	uint16_t fl = __atomic_load_n(&fs->gd[g].bg_flags, __ATOMIC_RELAXED);
	fl &= (uint16_t)~(inode_bitmap ? EXT4_BG_INODE_UNINIT : EXT4_BG_BLOCK_UNINIT);
	__atomic_store_n(&fs->gd[g].bg_flags, fl, __ATOMIC_RELAXED);
}

bool ext3_group_itable_use(struct ext3_fs *fs, uint32_t g, uint32_t idx)
{
	if (!ext4_has_group_desc_csum(fs))
		return false;
	struct ext3_group_desc *d = &fs->gd[g];
	uint32_t ipg = fs->g.inodes_per_group;
	uint16_t unused = __atomic_load_n(&d->bg_itable_unused, __ATOMIC_RELAXED);
	uint16_t fl = __atomic_load_n(&d->bg_flags, __ATOMIC_RELAXED);
	/* the initialised part of the table: none while INODE_UNINIT */
	uint32_t init = fl & EXT4_BG_INODE_UNINIT ? 0 : unused <= ipg ? ipg - unused : ipg;
	if (idx < init)
		return false;
	__atomic_store_n(&d->bg_itable_unused, (uint16_t)(ipg - idx - 1), __ATOMIC_RELAXED);
	return true;
}

int ext3_group_adjust(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g, int32_t dblocks,
		      int32_t dinodes, int32_t ddirs)
{
	if (g >= fs->g.groups)
		return err_set(-EINVAL, "ext3: group %u out of range (%u groups)", g, fs->g.groups);
	struct ext3_group_desc *d = &fs->gd[g];
	int32_t fb = count_apply(&d->bg_free_blocks_count, dblocks, ext3_geom_group_blocks(&fs->g, g));
	int32_t fi = count_apply(&d->bg_free_inodes_count, dinodes, fs->g.inodes_per_group);
	int32_t nd = count_apply(&d->bg_used_dirs_count, ddirs, fs->g.inodes_per_group);
	if (fb < 0 || fi < 0 || nd < 0)
		return ext3_fs_error(fs, "group %u: descriptor counts (%u free blocks, %u free "
				     "inodes, %u directories) cannot change by %d/%d/%d",
				     g, d->bg_free_blocks_count, d->bg_free_inodes_count,
				     d->bg_used_dirs_count, dblocks, dinodes, ddirs);
	uint64_t blk = ext3_geom_desc_block(&fs->g, fs->sb_block, g / fs->g.desc_per_block);
	struct buffer_head *bh;
	int rc = ext3_journal_bread(h, fs, blk, "group descriptor", false, &bh);
	if (rc)
		return rc;
	__atomic_store_n(&d->bg_free_blocks_count, (uint16_t)fb, __ATOMIC_RELAXED);
	__atomic_store_n(&d->bg_free_inodes_count, (uint16_t)fi, __ATOMIC_RELAXED);
	__atomic_store_n(&d->bg_used_dirs_count, (uint16_t)nd, __ATOMIC_RELAXED);
	/* desc_size bytes each (64 with 64bit) */
	desc_encode(fs, g, (uint8_t *)buf_data(bh) + (size_t)(g % fs->g.desc_per_block) * fs->g.desc_size);
	rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	if (rc)
		return rc;
	if (!dblocks && !dinodes)
		return 0;
	return super_journal(h, fs, dblocks, dinodes);
}
