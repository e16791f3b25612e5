/* mkfs feature sets (mkfs.h): `-t ext2|ext3|ext4` and `-O feature,^feature`.
 *
 * The sets are mke2fs.conf's (Debian 12, e2fsprogs 1.47): base_features =
 * sparse_super,large_file,filetype,resize_inode,dir_index,ext_attr; ext3 adds
 * has_journal; ext4 adds has_journal,extent,huge_file,flex_bg,metadata_csum,
 * 64bit,dir_nlink,extra_isize; nostall writes all of them (flex_bg with 16
 * groups per flex group, mkfs_group.c). */
#include "extfs/mkfs/mkfs.h"

#include "extfs/format/ext3_format.h"
#include "extfs/format/features.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

#define BASE_C (EXT3_FEATURE_COMPAT_EXT_ATTR | EXT3_FEATURE_COMPAT_RESIZE_INODE | \
		EXT3_FEATURE_COMPAT_DIR_INDEX)
#define BASE_I EXT3_FEATURE_INCOMPAT_FILETYPE
#define BASE_R (EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER | EXT3_FEATURE_RO_COMPAT_LARGE_FILE)

/* What mkfs_write.c knows how to lay out. */
static const uint32_t writable[3] = {
	BASE_C | EXT3_FEATURE_COMPAT_HAS_JOURNAL,
	BASE_I | EXT4_FEATURE_INCOMPAT_EXTENTS | EXT4_FEATURE_INCOMPAT_64BIT | EXT4_FEATURE_INCOMPAT_FLEX_BG,
	BASE_R | EXT4_FEATURE_RO_COMPAT_HUGE_FILE | EXT4_FEATURE_RO_COMPAT_DIR_NLINK |
		EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE | EXT4_FEATURE_RO_COMPAT_METADATA_CSUM,
};

int ext3_mkfs_features_of_type(const char *type, uint32_t f[3])
{
	f[0] = BASE_C;
	f[1] = BASE_I;
	f[2] = BASE_R;
	if (!strcmp(type, "ext2"))
		return 0;
	f[0] |= EXT3_FEATURE_COMPAT_HAS_JOURNAL;
	if (!strcmp(type, "ext3"))
		return 0;
	if (!strcmp(type, "ext4")) {
		f[1] |= EXT4_FEATURE_INCOMPAT_EXTENTS | EXT4_FEATURE_INCOMPAT_64BIT |
			EXT4_FEATURE_INCOMPAT_FLEX_BG;
		f[2] |= EXT4_FEATURE_RO_COMPAT_HUGE_FILE | EXT4_FEATURE_RO_COMPAT_DIR_NLINK |
			EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE | EXT4_FEATURE_RO_COMPAT_METADATA_CSUM;
		return 0;
	}
	return err_set(-EINVAL, "mkfs: unknown filesystem type '%s' (use ext2, ext3 or ext4)", type);
}

int ext3_mkfs_features_edit(uint32_t f[3], const char *list)
{
	const char *s = list;
	while (*s) {
		size_t n = strcspn(s, ",");
		bool del = *s == '^';
		const char *name = s + del;
		size_t nl = n - del;
		const struct ext3_feature *hit = NULL, *e;
		for (size_t i = 0; (e = ext3_feature_at(i)); i++)
			if (strlen(e->name) == nl && !strncmp(e->name, name, nl))
				hit = e;
		if (!hit)
			return err_set(-EINVAL, "mkfs: unknown feature '%.*s'", (int)nl, name);
		if (!del && !(writable[hit->kind] & hit->mask))
			return err_set(-EINVAL, "mkfs: cannot make feature '%s' (nostall mkfs writes only the ext2, ext3 and ext4 defaults' features)", hit->name);
		if (del)
			f[hit->kind] &= ~hit->mask;
		else
			f[hit->kind] |= hit->mask;
		s += n;
		if (*s == ',')
			s++;
	}
	return 0;
}

int ext3_mkfs_features_check(const uint32_t f[3])
{
	for (int k = 0; k < 3; k++)
		if (f[k] & ~writable[k]) {
			uint32_t bad = f[k] & ~writable[k];
			const char *nm = ext3_feature_name(k, bad & -bad);
			return err_set(-EINVAL, "mkfs: cannot make feature %s",
				       nm ? nm : "(unnamed)");
		}
	if ((f[1] & EXT4_FEATURE_INCOMPAT_64BIT) && !(f[1] & EXT4_FEATURE_INCOMPAT_EXTENTS))
		return err_set(-EINVAL, "mkfs: 64bit needs extent (as mke2fs: extents must be enabled "
				       "for a 64-bit filesystem)");
	if (!(f[1] & EXT3_FEATURE_INCOMPAT_FILETYPE) || !(f[2] & EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER))
		return err_set(-EINVAL, "mkfs: nostall mkfs always writes filetype and sparse_super");
	if (!(f[0] & EXT3_FEATURE_COMPAT_RESIZE_INODE))
		return err_set(-EINVAL, "mkfs: nostall mkfs always writes resize_inode");
	return 0;
}

int ext3_mkfs_params_fs_type(struct ext3_mkfs_params *p, const char *type, const char *features)
{
	int rc = ext3_mkfs_features_of_type(type ? type : "ext3", p->features);
	if (!rc && features && *features)
		rc = ext3_mkfs_features_edit(p->features, features);
	if (!rc)
		rc = ext3_mkfs_features_check(p->features);
	p->features_set = rc == 0;
	return rc;
}
