/* ext3 superblock and group descriptors: reading and validation (the mount
 * checks, docs/ext3-read-path.md, with the feature table of
 * format/features.h), the accessors of struct ext3_fs. Uses only the core (ext3_bread, geom.c); mount.c calls it. */
#include "extfs/core/csum.h"
#include "extfs/core/ext3.h"
#include "extfs/core/ext3_int.h"
#include "extfs/format/features.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "dev/dev.h"
#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- accessors ---- */

const struct ext3_super_block *ext3_fs_super(const struct ext3_fs *fs) { return &fs->sb; }
uint32_t ext3_fs_block_size(const struct ext3_fs *fs) { return fs->g.block_size; }
uint32_t ext3_fs_blocks_count(const struct ext3_fs *fs) { return fs->g.blocks_count; }
uint32_t ext3_fs_inodes_count(const struct ext3_fs *fs) { return fs->g.inodes_count; }
uint32_t ext3_fs_groups(const struct ext3_fs *fs) { return fs->g.groups; }
uint32_t ext3_fs_desc_blocks(const struct ext3_fs *fs) { return fs->g.desc_blocks; }
uint32_t ext3_fs_inode_size(const struct ext3_fs *fs) { return fs->g.inode_size; }
uint32_t ext3_fs_sb_block(const struct ext3_fs *fs) { return fs->sb_block; }
struct buf_cache *ext3_fs_cache(struct ext3_fs *fs) { return fs->cache; }
struct blk_queue *ext3_fs_queue(struct ext3_fs *fs) { return fs->q; }
struct dev *ext3_fs_dev(struct ext3_fs *fs) { return fs->dev; }
bool ext3_fs_needs_recovery(const struct ext3_fs *fs) { return fs->needs_recovery; }
bool ext3_fs_unknown_ro_compat(const struct ext3_fs *fs) { return fs->unknown_ro_compat; }
bool ext3_fs_unsigned_hash(const struct ext3_fs *fs) { return fs->unsigned_hash; }
bool ext3_fs_has_filetype(const struct ext3_fs *fs) { return fs->has_filetype; }

bool ext3_fs_group_has_super(const struct ext3_fs *fs, uint32_t g)
{
	return ext3_geom_has_super(&fs->g, g);
}

void ext3_fs_group_range(const struct ext3_fs *fs, uint32_t g, uint64_t *first, uint64_t *last)
{
	*first = ext3_geom_group_first(&fs->g, g);
	*last = *first + ext3_geom_group_blocks(&fs->g, g) - 1;
}

const struct ext3_group_desc *ext3_fs_group_desc(const struct ext3_fs *fs, uint32_t g)
{
	return g < fs->g.groups ? &fs->gd[g] : NULL;
}

/* ---- superblock checks ---- */

static uint64_t div_ceil_u64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Validate the superblock geometry; fill fs->fields. dev_blocks: device size
 * in filesystem blocks. */
static int super_check(struct ext3_fs *fs, uint64_t dev_bytes)
{
	const struct ext3_super_block *sb = &fs->sb;
	uint16_t magic = le16_to_cpu(sb->s_magic);
	if (magic != EXT3_SUPER_MAGIC)
		return err_set(-EUCLEAN,
			       "ext3: bad magic 0x%04x in the superblock (want 0xef53): not an "
			       "ext2/ext3 filesystem", magic);
	uint32_t rev = le32_to_cpu(sb->s_rev_level);
	if (rev > EXT3_DYNAMIC_REV)
		return err_set(-EOPNOTSUPP, "ext3: unknown superblock revision %u", rev);
	uint32_t log = le32_to_cpu(sb->s_log_block_size);
	if (log > 2)
		return err_set(-EUCLEAN, "ext3: unsupported block size (s_log_block_size %u; "
			       "nostall supports 1024, 2048, 4096)", log);
	fs->g.block_size = 1024u << log;
	fs->rev = rev;
	uint32_t bs = fs->g.block_size;

	if (rev == EXT3_GOOD_OLD_REV) {
		fs->g.inode_size = EXT3_GOOD_OLD_INODE_SIZE;
		fs->first_ino = EXT3_GOOD_OLD_FIRST_INO;
		fs->compat = fs->incompat = fs->ro_compat = 0;
	} else {
		fs->g.inode_size = le16_to_cpu(sb->s_inode_size);
		fs->first_ino = le32_to_cpu(sb->s_first_ino);
		fs->compat = le32_to_cpu(sb->s_feature_compat);
		fs->incompat = le32_to_cpu(sb->s_feature_incompat);
		fs->ro_compat = le32_to_cpu(sb->s_feature_ro_compat);
	}
	/* The feature table (format/features.h): a refused incompat feature
	 * refuses the mount, a read-only ro_compat one leaves it read-only
	 * (compat features are read-write or ignored). Refusals come before
	 * the geometry checks, whose rules such features change (journal_dev's
	 * empty groups, bigalloc's clusters): the answer names the feature. An
	 * ro_compat feature is refused only where nostall cannot even read
	 * the layout (bigalloc). */
	uint32_t unk_incompat = ext3_features_with(EXT3_FEATURE_KIND_INCOMPAT, fs->incompat,
						   EXT3_FEATURE_REFUSE);
	if (unk_incompat) {
		char names[160];
		ext3_features_format(0, unk_incompat, 0, names, sizeof names);
		return err_set(-EOPNOTSUPP,
			       "ext3: unsupported incompat feature%s %s (0x%x): refusing to mount",
			       (unk_incompat & (unk_incompat - 1)) ? "s" : "", names, unk_incompat);
	}
	uint32_t no_ro = ext3_features_with(EXT3_FEATURE_KIND_RO_COMPAT, fs->ro_compat, EXT3_FEATURE_REFUSE);
	if (no_ro) {
		char names[160];
		ext3_features_format(0, 0, no_ro, names, sizeof names);
		return err_set(-EOPNOTSUPP,
			       "ext3: unsupported ro_compat feature%s %s (0x%x): refusing to mount, even "
			       "read-only",
			       (no_ro & (no_ro - 1)) ? "s" : "", names, no_ro);
	}

	fs->g.blocks_count = le32_to_cpu(sb->s_blocks_count);
	fs->g.first_data_block = le32_to_cpu(sb->s_first_data_block);
	fs->g.blocks_per_group = le32_to_cpu(sb->s_blocks_per_group);
	fs->g.inodes_per_group = le32_to_cpu(sb->s_inodes_per_group);
	fs->g.inodes_count = le32_to_cpu(sb->s_inodes_count);

	if (fs->g.first_data_block != (bs == 1024 ? 1u : 0u))
		return err_set(-EUCLEAN, "ext3: s_first_data_block %u impossible with %u-byte blocks",
			       fs->g.first_data_block, bs);
	if (fs->g.blocks_per_group == 0 || fs->g.blocks_per_group > 8 * bs ||
	    fs->g.blocks_per_group % 8)
		return err_set(-EUCLEAN, "ext3: bad blocks per group %u (block size %u)",
			       fs->g.blocks_per_group, bs);
	if (fs->g.blocks_count <= fs->g.first_data_block + 1)
		return err_set(-EUCLEAN, "ext3: bad block count %u", fs->g.blocks_count);

	uint32_t isz = fs->g.inode_size;
	if (isz < EXT3_GOOD_OLD_INODE_SIZE || isz > bs || (isz & (isz - 1)))
		return err_set(-EUCLEAN, "ext3: bad inode size %u (block size %u)", isz, bs);
	fs->g.inodes_per_block = bs / isz;
	if (fs->g.inodes_per_group == 0 || fs->g.inodes_per_group > 8 * bs ||
	    fs->g.inodes_per_group % fs->g.inodes_per_block)
		return err_set(-EUCLEAN, "ext3: bad inodes per group %u (block size %u, %u inodes "
			       "per block)", fs->g.inodes_per_group, bs, fs->g.inodes_per_block);
	fs->g.itable_blocks = fs->g.inodes_per_group / fs->g.inodes_per_block;

	uint64_t groups = div_ceil_u64((uint64_t)fs->g.blocks_count - fs->g.first_data_block,
				       fs->g.blocks_per_group);
	if (groups == 0 || groups > (1u << 24))
		return err_set(-EUCLEAN, "ext3: impossible group count %llu",
			       (unsigned long long)groups);
	fs->g.groups = (uint32_t)groups;
	uint64_t dev_blocks = dev_bytes / bs;
	if (fs->g.blocks_count > dev_blocks)
		return err_set(-EUCLEAN,
			       "ext3: filesystem has %u blocks but the device only %llu "
			       "(truncated image?)", fs->g.blocks_count, (unsigned long long)dev_blocks);
	if ((uint64_t)fs->g.inodes_per_group * groups != fs->g.inodes_count)
		return err_set(-EUCLEAN, "ext3: inode count %u != %llu groups x %u inodes per group",
			       fs->g.inodes_count, (unsigned long long)groups, fs->g.inodes_per_group);
	if (fs->first_ino < EXT3_GOOD_OLD_FIRST_INO || fs->first_ino > fs->g.inodes_count)
		return err_set(-EUCLEAN, "ext3: bad first inode %u", fs->first_ino);

	/* 64bit (ext4): descriptors of s_desc_size bytes with the high halves
	 * of every block number and count. nostall's block numbers are 32
	 * bits: a filesystem past 2^32 blocks is refused by name. */
	fs->g.desc_size = EXT3_DESC_SIZE;
	if (fs->incompat & EXT4_FEATURE_INCOMPAT_64BIT) {
		uint32_t ds = le16_to_cpu(sb->s_desc_size);
		if (ds < EXT4_DESC_SIZE_64BIT || ds > EXT4_MAX_DESC_SIZE || ds > bs || (ds & (ds - 1)))
			return err_set(-EUCLEAN, "ext4: bad group descriptor size %u", ds);
		if (le32_to_cpu(sb->s_blocks_count_hi) || le32_to_cpu(sb->s_r_blocks_count_hi) ||
		    le32_to_cpu(sb->s_free_blocks_count_hi))
			return err_set(-EOPNOTSUPP, "ext4: more than 2^32 blocks (blocks_count_hi %u): "
						    "not supported",
				       le32_to_cpu(sb->s_blocks_count_hi));
		fs->g.desc_size = ds;
	}
	fs->g.reserved_gdt_blocks = 0;
	ext3_geom_derive(&fs->g); /* groups, descriptor blocks, apb (as checked above) */

	/* features (the refusals are checked above, before the geometry) */
	/* An incompat feature nostall reads but does not write yet (extent)
	 * makes the mount read-only, as an unknown ro_compat one does; the
	 * reason names both kinds. */
	uint32_t ro_incompat = ext3_features_with(EXT3_FEATURE_KIND_INCOMPAT, fs->incompat, EXT3_FEATURE_RO);
	uint32_t unk_ro = ext3_features_with(EXT3_FEATURE_KIND_RO_COMPAT, fs->ro_compat,
					     EXT3_FEATURE_RO);
	if (ro_incompat || unk_ro) {
		fs->unknown_ro_compat = true;
		size_t n = 0;
		char names[160];
		fs->ro_reason[0] = 0;
		if (ro_incompat) {
			ext3_features_format(0, ro_incompat, 0, names, sizeof names);
			n += (size_t)snprintf(fs->ro_reason, sizeof fs->ro_reason,
					      "incompat feature%s %s (0x%x) read but not written yet",
					      (ro_incompat & (ro_incompat - 1)) ? "s" : "", names, ro_incompat);
		}
		if (unk_ro && n < sizeof fs->ro_reason) {
			ext3_features_format(0, 0, unk_ro, names, sizeof names);
			n += (size_t)snprintf(fs->ro_reason + n, sizeof fs->ro_reason - n,
					      "%sunknown ro_compat feature%s %s (0x%x)", n ? ", " : "",
					      (unk_ro & (unk_ro - 1)) ? "s" : "", names, unk_ro);
		}
		if (n < sizeof fs->ro_reason)
			snprintf(fs->ro_reason + n, sizeof fs->ro_reason - n, ": read-only");
	}
	/* metadata_csum: the superblock's own checksum and the seed of all
	 * others (core/csum.c). */
	int crc = ext4_csum_init(fs);
	if (crc < 0)
		return crc;
	fs->needs_recovery = (fs->incompat & EXT3_FEATURE_INCOMPAT_RECOVER) != 0;
	fs->has_filetype = (fs->incompat & EXT3_FEATURE_INCOMPAT_FILETYPE) != 0;
	fs->g.sparse_super = (fs->ro_compat & EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER) != 0;
	fs->g.meta_bg = (fs->incompat & EXT3_FEATURE_INCOMPAT_META_BG) != 0;
	fs->g.first_meta_bg = fs->g.meta_bg ? le32_to_cpu(sb->s_first_meta_bg) : 0;
	/* Past the table, the classic copy would run into the groups' own
	 * metadata (ext4 refuses it too; e2fsck repairs it). */
	if (fs->g.first_meta_bg > fs->g.desc_blocks)
		return err_set(-EUCLEAN, "ext3: first meta block group %u past the %u descriptor blocks",
			       fs->g.first_meta_bg, fs->g.desc_blocks);
	if (fs->needs_recovery && !(fs->compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL))
		return err_set(-EUCLEAN, "ext3: needs_recovery set but there is no journal");
	if (rev >= EXT3_DYNAMIC_REV) {
		uint32_t rsv = le16_to_cpu(sb->s_reserved_gdt_blocks);
		if (rsv > fs->g.apb)
			return err_set(-EUCLEAN, "ext3: %u reserved GDT blocks (at most %u)", rsv,
				       fs->g.apb);
		fs->g.reserved_gdt_blocks = rsv;
	}
	fs->overhead = ext3_geom_overhead(&fs->g);
	uint32_t sflags = le32_to_cpu(sb->s_flags);
	fs->unsigned_hash = (sflags & EXT3_FLAGS_UNSIGNED_HASH) != 0 &&
			    !(sflags & EXT3_FLAGS_SIGNED_HASH);
	for (int i = 0; i < 4; i++)
		fs->hash_seed[i] = le32_to_cpu(sb->s_hash_seed[i]);
	fs->def_hash_version = sb->s_def_hash_version;
	return 0;
}

/* Read and check the group descriptors: the table that follows the
 * superblock at fs->sb_block, and with meta_bg the metagroups' blocks. */
int ext3_gdt_load(struct ext3_fs *fs)
{
	fs->gd = calloc(fs->g.groups, sizeof *fs->gd);
	fs->bm_csum = calloc(2 * (size_t)fs->g.groups, sizeof *fs->bm_csum);
	fs->bm_csum_live = calloc(2 * (size_t)fs->g.groups, sizeof *fs->bm_csum_live);
	if (!fs->gd || !fs->bm_csum || !fs->bm_csum_live)
		return err_set(-ENOMEM, "ext3: out of memory for %u group descriptors", fs->g.groups);
	/* The classic table starts in the block after the one holding the
	 * superblock; with meta_bg, later blocks live in their metagroups. */
	for (uint32_t b = 0; b < fs->g.desc_blocks; b++) {
		uint64_t blk = ext3_geom_desc_block(&fs->g, fs->sb_block, b);
		if (blk >= fs->g.blocks_count)
			return err_set(-EUCLEAN, "ext3: group descriptor block %u (at %llu) past the end",
				       b, (unsigned long long)blk);
		struct buffer_head *bh;
		int rc = ext3_bread(fs, blk, "group descriptor", &bh);
		if (rc)
			return rc;
		const uint8_t *raw = buf_data(bh);
		for (uint32_t i = 0; i < fs->g.desc_per_block; i++) {
			uint64_t g = (uint64_t)b * fs->g.desc_per_block + i;
			if (g >= fs->g.groups)
				break;
			const struct ext3_group_desc *d = (const void *)(raw + (size_t)i * fs->g.desc_size);
			struct ext3_group_desc *o = &fs->gd[g];
			/* metadata_csum / gdt_csum: as the kernel's
			 * ext4_check_descriptors, a mismatch refuses a writable
			 * mount and is only reported on a read-only one. */
			if (!ext4_gd_csum_ok(fs, (uint32_t)g, d)) {
				if (fs->want_writable && !fs->unknown_ro_compat) {
					buf_put(bh);
					return err_set(-EBADMSG, "ext4: group %llu: descriptor checksum mismatch",
						       (unsigned long long)g);
				}
				fprintf(stderr, "nostall: ext4: group %llu: descriptor checksum mismatch "
						"(read-only mount goes on)\n",
					(unsigned long long)g);
			}
			o->bg_block_bitmap = le32_to_cpu(d->bg_block_bitmap);
			o->bg_inode_bitmap = le32_to_cpu(d->bg_inode_bitmap);
			o->bg_inode_table = le32_to_cpu(d->bg_inode_table);
			o->bg_free_blocks_count = le16_to_cpu(d->bg_free_blocks_count);
			o->bg_free_inodes_count = le16_to_cpu(d->bg_free_inodes_count);
			o->bg_used_dirs_count = le16_to_cpu(d->bg_used_dirs_count);
			o->bg_flags = le16_to_cpu(d->bg_flags);
			o->bg_itable_unused = le16_to_cpu(d->bg_itable_unused);
			o->bg_checksum = le16_to_cpu(d->bg_checksum);
			const uint8_t *rd = (const uint8_t *)d;
			fs->bm_csum[2 * g] = (uint32_t)rd[0x18] | (uint32_t)rd[0x19] << 8;
			fs->bm_csum[2 * g + 1] = (uint32_t)rd[0x1A] | (uint32_t)rd[0x1B] << 8;
			if (fs->g.desc_size >= EXT4_DESC_SIZE_64BIT) {
				fs->bm_csum[2 * g] |= ((uint32_t)rd[0x38] | (uint32_t)rd[0x39] << 8) << 16;
				fs->bm_csum[2 * g + 1] |= ((uint32_t)rd[0x3A] | (uint32_t)rd[0x3B] << 8) << 16;
			}
			if (fs->g.desc_size >= EXT4_DESC_SIZE_64BIT) {
				const struct ext4_group_desc_hi *hi = (const void *)(d + 1);
				if (hi->bg_block_bitmap_hi || hi->bg_inode_bitmap_hi || hi->bg_inode_table_hi ||
				    hi->bg_free_blocks_count_hi || hi->bg_free_inodes_count_hi ||
				    hi->bg_used_dirs_count_hi || hi->bg_itable_unused_hi) {
					buf_put(bh);
					return err_set(-EUCLEAN, "ext4: group %llu: a descriptor's high half "
								 "is set on a filesystem of %u blocks",
						       (unsigned long long)g, fs->g.blocks_count);
				}
			}
		}
		buf_put(bh);
	}
	/* Every group's bitmaps and inode table inside the group; with
	 * flex_bg (ext4) anywhere in the filesystem (a flex group's metadata
	 * is packed in its first group), clear of the superblock and the
	 * primary descriptor table, as the kernel's ext4_check_descriptors. */
	bool flex = fs->incompat & EXT4_FEATURE_INCOMPAT_FLEX_BG;
	/* The descriptor blocks group 0 holds (the kernel's ext4_bg_num_gdb):
	 * the whole table, or with meta_bg from metagroup 0 on, its one block. */
	uint32_t gdb0 = fs->g.meta_bg && fs->g.first_meta_bg == 0 ? 1 : fs->g.desc_blocks;
	uint64_t gdt_first = fs->sb_block, gdt_last = fs->sb_block + gdb0;
	for (uint32_t g = 0; g < fs->g.groups; g++) {
		const struct ext3_group_desc *d = &fs->gd[g];
		uint64_t first = flex ? fs->g.first_data_block : ext3_geom_group_first(&fs->g, g);
		uint64_t last = flex ? (uint64_t)fs->g.blocks_count - 1
				     : first + ext3_geom_group_blocks(&fs->g, g) - 1;
		if (flex && ((d->bg_block_bitmap >= gdt_first && d->bg_block_bitmap <= gdt_last) ||
			     (d->bg_inode_bitmap >= gdt_first && d->bg_inode_bitmap <= gdt_last) ||
			     (d->bg_inode_table <= gdt_last &&
			      (uint64_t)d->bg_inode_table + fs->g.itable_blocks > gdt_first)))
			return err_set(-EUCLEAN, "ext4: group %u: bitmaps or inode table overlap the "
						 "superblock or the group descriptors (blocks %llu-%llu)",
				       g, (unsigned long long)gdt_first, (unsigned long long)gdt_last);
		if (d->bg_block_bitmap < first || d->bg_block_bitmap > last)
			return err_set(-EUCLEAN, "ext3: group %u: block bitmap %u not in the group "
				       "(%llu-%llu)", g, d->bg_block_bitmap,
				       (unsigned long long)first, (unsigned long long)last);
		if (d->bg_inode_bitmap < first || d->bg_inode_bitmap > last)
			return err_set(-EUCLEAN, "ext3: group %u: inode bitmap %u not in the group "
				       "(%llu-%llu)", g, d->bg_inode_bitmap,
				       (unsigned long long)first, (unsigned long long)last);
		if (d->bg_inode_table < first ||
		    (uint64_t)d->bg_inode_table + fs->g.itable_blocks - 1 > last)
			return err_set(-EUCLEAN, "ext3: group %u: inode table %u+%u not in the group "
				       "(%llu-%llu)", g, d->bg_inode_table, fs->g.itable_blocks,
				       (unsigned long long)first, (unsigned long long)last);
		if (d->bg_free_blocks_count > fs->g.blocks_per_group ||
		    d->bg_free_inodes_count > fs->g.inodes_per_group)
			return err_set(-EUCLEAN, "ext3: group %u: free counts %u blocks / %u inodes "
				       "exceed the group size", g, d->bg_free_blocks_count,
				       d->bg_free_inodes_count);
	}
	return 0;
}

/* Read 1024 superblock bytes at byte offset `off` through the queue. */
static int super_read_at(struct ext3_fs *fs, uint64_t off, uint64_t dev_bytes)
{
	if (off + EXT3_SUPERBLOCK_SIZE > dev_bytes)
		return err_set(-EUCLEAN, "ext3: device too small (%llu bytes) for a superblock at "
			       "byte %llu", (unsigned long long)dev_bytes, (unsigned long long)off);
	int rc = blk_rw(fs->q, BLK_READ_SYNC, off, &fs->sb, EXT3_SUPERBLOCK_SIZE);
	if (rc)
		return err_wrap(rc, "ext3: reading the superblock at byte %llu",
				     (unsigned long long)off);
	return 0;
}

int ext3_super_load(struct ext3_fs *fs, uint64_t sb_block)
{
	struct dev_geometry geo;
	dev_geometry_get(fs->dev, &geo);
	int rc;
	if (sb_block) {
		/* A backup superblock: probe the block size. */
		rc = -EUCLEAN;
		for (uint32_t log = 0; log <= 2; log++) {
			uint32_t bs = 1024u << log;
			uint64_t off = sb_block * (uint64_t)bs;
			if (off / bs != sb_block || off + EXT3_SUPERBLOCK_SIZE > geo.size_bytes)
				continue;
			if (super_read_at(fs, off, geo.size_bytes))
				continue;
			if (le16_to_cpu(fs->sb.s_magic) == EXT3_SUPER_MAGIC &&
			    le32_to_cpu(fs->sb.s_log_block_size) == log) {
				rc = 0;
				break;
			}
		}
		if (rc)
			return err_set(-EUCLEAN, "ext3: no superblock at block %llu (tried 1, 2 and "
				       "4 KiB blocks)", (unsigned long long)sb_block);
	} else {
		rc = super_read_at(fs, EXT3_SUPERBLOCK_OFFSET, geo.size_bytes);
		if (rc)
			return rc;
	}
	rc = super_check(fs, geo.size_bytes);
	if (rc)
		return rc;
	if (!sb_block) {
		fs->sb_block = fs->g.first_data_block; /* block 1 (1 KiB) or inside block 0 */
		return 0;
	}
	fs->sb_block = (uint32_t)sb_block;
	uint64_t rel = sb_block - fs->g.first_data_block;
	if (sb_block < fs->g.first_data_block || rel % fs->g.blocks_per_group ||
	    sb_block >= fs->g.blocks_count)
		return err_set(-EUCLEAN, "ext3: block %llu is not the start of a group",
			       (unsigned long long)sb_block);
	return 0;
}
