/* Public API: filesystem-wide information: statfs, the superblock report,
 * group descriptors (include/nostall/nostall.h). */
#include "api/api_int.h"

#include "extfs/format/features.h"
#include "extfs/format/uuid.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int nostall_statfs(struct nostall_fs *fs, struct nostall_statfs *st)
{
	const struct ext3_super_block *sb = ext3_fs_super(fs->e);
	memset(st, 0, sizeof *st);
	uint64_t overhead = ext3_fs_overhead(fs->e);
	uint32_t bs = ext3_fs_block_size(fs->e);
	uint64_t blocks = ext3_fs_blocks_count(fs->e);
	st->block_size = bs;
	st->blocks = blocks > overhead ? blocks - overhead : 0;
	st->files = ext3_fs_inodes_count(fs->e);
	if (fs->rw) { /* the allocators' live counts (the superblock's copy
		       * changes under sb_lock meanwhile: not read here) */
		uint64_t fb, fi;
		ext3_fs_free_counts(fs->e, &fb, &fi);
		st->blocks_free = fb;
		st->files_free = fi;
	} else {
		st->blocks_free = le32_to_cpu(sb->s_free_blocks_count);
		st->files_free = le32_to_cpu(sb->s_free_inodes_count);
	}
	if (st->blocks_free > blocks)
		st->blocks_free = blocks;
	uint64_t r = le32_to_cpu(sb->s_r_blocks_count);
	st->blocks_avail = st->blocks_free > r ? st->blocks_free - r : 0;
	if (st->files_free > st->files)
		st->files_free = st->files;
	st->name_max = NOSTALL_NAME_MAX;
	memcpy(st->fsid, sb->s_uuid, 16);
	return 0;
}

const char *nostall_feature_name(int which, uint32_t bit)
{
	return ext3_feature_name(which, bit);
}

int nostall_feature_get(unsigned i, struct nostall_feature *out)
{
	const struct ext3_feature *f = ext3_feature_at(i);
	if (!f)
		return -ENOENT;
	memset(out, 0, sizeof *out);
	out->name = f->name;
	out->which = f->kind;
	out->bit = f->mask;
	out->support = f->support; /* enum ext3_feature_support has the same values */
	out->support_name = ext3_feature_support_name(f->support);
	out->mkfs = f->mkfs;
	return 0;
}

int nostall_feature_support(int which, uint32_t bit)
{
	if (which < 0 || which > 2 || !bit || (bit & (bit - 1)))
		return err_set(-EINVAL, "feature: bad kind %d or bit 0x%x", which, bit);
	return (int)ext3_feature_support_of(which, bit);
}

_Static_assert(NOSTALL_FEATURE_RW == (int)EXT3_FEATURE_RW &&
		       NOSTALL_FEATURE_IGNORED == (int)EXT3_FEATURE_IGNORED &&
		       NOSTALL_FEATURE_RO == (int)EXT3_FEATURE_RO &&
		       NOSTALL_FEATURE_REFUSE == (int)EXT3_FEATURE_REFUSE,
	       "the public support levels are the table's");

static void str_copy(char *dst, const char *src, size_t n)
{
	/* src is a fixed-size on-disk field that may lack a terminator. */
	size_t i = 0;
	for (; i < n && src[i]; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

int nostall_info(struct nostall_fs *fs, struct nostall_info *info)
{
	const struct ext3_super_block *sb = ext3_fs_super(fs->e);
	memset(info, 0, sizeof *info);
	str_copy(info->volume_name, sb->s_volume_name, sizeof sb->s_volume_name);
	ext3_uuid_format(sb->s_uuid, info->uuid);
	str_copy(info->last_mounted, sb->s_last_mounted, sizeof sb->s_last_mounted);
	info->rev_level = le32_to_cpu(sb->s_rev_level);
	info->minor_rev_level = le16_to_cpu(sb->s_minor_rev_level);
	info->block_size = ext3_fs_block_size(fs->e);
	info->blocks_count = ext3_fs_blocks_count(fs->e);
	info->r_blocks_count = le32_to_cpu(sb->s_r_blocks_count);
	info->free_blocks_count = le32_to_cpu(sb->s_free_blocks_count);
	info->inodes_count = ext3_fs_inodes_count(fs->e);
	info->free_inodes_count = le32_to_cpu(sb->s_free_inodes_count);
	info->first_data_block = le32_to_cpu(sb->s_first_data_block);
	info->blocks_per_group = le32_to_cpu(sb->s_blocks_per_group);
	info->inodes_per_group = le32_to_cpu(sb->s_inodes_per_group);
	info->groups = ext3_fs_groups(fs->e);
	info->desc_blocks = ext3_fs_desc_blocks(fs->e);
	info->inode_size = ext3_fs_inode_size(fs->e);
	bool dyn = info->rev_level >= EXT3_DYNAMIC_REV;
	info->reserved_gdt_blocks = dyn ? le16_to_cpu(sb->s_reserved_gdt_blocks) : 0;
	info->first_ino = dyn ? le32_to_cpu(sb->s_first_ino) : EXT3_GOOD_OLD_FIRST_INO;
	if (dyn) {
		info->feature_compat = le32_to_cpu(sb->s_feature_compat);
		info->feature_incompat = le32_to_cpu(sb->s_feature_incompat);
		info->feature_ro_compat = le32_to_cpu(sb->s_feature_ro_compat);
	}
	ext3_features_format(info->feature_compat, info->feature_incompat, info->feature_ro_compat,
			     info->features, sizeof info->features);
	info->state = le16_to_cpu(sb->s_state);
	info->errors = le16_to_cpu(sb->s_errors);
	info->mnt_count = le16_to_cpu(sb->s_mnt_count);
	info->max_mnt_count = (int16_t)le16_to_cpu(sb->s_max_mnt_count);
	info->mtime = le32_to_cpu(sb->s_mtime);
	info->wtime = le32_to_cpu(sb->s_wtime);
	info->lastcheck = le32_to_cpu(sb->s_lastcheck);
	info->mkfs_time = dyn ? le32_to_cpu(sb->s_mkfs_time) : 0;
	info->checkinterval = le32_to_cpu(sb->s_checkinterval);
	info->creator_os = le32_to_cpu(sb->s_creator_os);
	if (dyn) {
		info->journal_inum = le32_to_cpu(sb->s_journal_inum);
		info->journal_dev = le32_to_cpu(sb->s_journal_dev);
		memcpy(info->journal_uuid, sb->s_journal_uuid, 16);
		info->last_orphan = le32_to_cpu(sb->s_last_orphan);
		for (int i = 0; i < 4; i++)
			info->hash_seed[i] = le32_to_cpu(sb->s_hash_seed[i]);
		info->def_hash_version = sb->s_def_hash_version;
		info->flags = le32_to_cpu(sb->s_flags);
		info->default_mount_opts = le32_to_cpu(sb->s_default_mount_opts);
		info->min_extra_isize = le16_to_cpu(sb->s_min_extra_isize);
		info->want_extra_isize = le16_to_cpu(sb->s_want_extra_isize);
	}
	info->def_resuid = le16_to_cpu(sb->s_def_resuid);
	info->def_resgid = le16_to_cpu(sb->s_def_resgid);
	info->read_only = !fs->rw;
	info->needs_recovery = ext3_fs_needs_recovery(fs->e);
	info->unknown_ro_compat = ext3_fs_unknown_ro_compat(fs->e);
	info->unsigned_hash = ext3_fs_unsigned_hash(fs->e);
	info->superblock_block = ext3_fs_sb_block(fs->e);
	snprintf(info->data_mode, sizeof info->data_mode, "%s",
		 ext3_fs_data_mode(fs->e));
	if (info->feature_compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL)
		(void)ext3_journal_features(fs->e, info->journal_features, sizeof info->journal_features);
	return 0;
}

int nostall_group_info(struct nostall_fs *fs, uint32_t g, struct nostall_group_info *gi)
{
	const struct ext3_group_desc *d = ext3_fs_group_desc(fs->e, g);
	if (!d)
		return err_set(-EINVAL, "group %u out of range (%u groups)", g, ext3_fs_groups(fs->e));
	memset(gi, 0, sizeof *gi);
	gi->group = g;
	ext3_fs_group_range(fs->e, g, &gi->first_block, &gi->last_block);
	gi->has_super = ext3_fs_group_has_super(fs->e, g);
	gi->block_bitmap = d->bg_block_bitmap;
	gi->inode_bitmap = d->bg_inode_bitmap;
	gi->inode_table = d->bg_inode_table;
	gi->free_blocks = d->bg_free_blocks_count;
	gi->free_inodes = d->bg_free_inodes_count;
	gi->used_dirs = d->bg_used_dirs_count;
	gi->flags = d->bg_flags;
	return 0;
}
