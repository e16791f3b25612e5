/* The on-disk feature table (features.h). Support levels: what nostall's
 * code handles (docs/ext3-format.md, "Features"); names: e2fsprogs'. */
#include "extfs/format/features.h"

#include <stdio.h>
#include <string.h>

#define C EXT3_FEATURE_KIND_COMPAT
#define I EXT3_FEATURE_KIND_INCOMPAT
#define R EXT3_FEATURE_KIND_RO_COMPAT
#define RW EXT3_FEATURE_RW
#define IGN EXT3_FEATURE_IGNORED
#define RO EXT3_FEATURE_RO
#define NO EXT3_FEATURE_REFUSE

/* By kind, then bit (ext3_features_format and the docs list in this
 * order; test_features checks it). */
static const struct ext3_feature features[] = {
	{"dir_prealloc", C, RW, false, 1u << 0},
	{"imagic_inodes", C, IGN, false, 1u << 1},
	{"has_journal", C, RW, true, 1u << 2},
	{"ext_attr", C, RW, true, 1u << 3},
	{"resize_inode", C, RW, true, 1u << 4},
	{"dir_index", C, RW, true, 1u << 5},
	{"lazy_bg", C, IGN, false, 1u << 6},
	{"snapshot_bitmap", C, IGN, false, 1u << 8},
	{"sparse_super2", C, IGN, false, 1u << 9},
	{"fast_commit", C, IGN, false, 1u << 10},
	{"stable_inodes", C, IGN, false, 1u << 11},
	{"orphan_file", C, IGN, false, 1u << 12},

	{"compression", I, NO, false, 1u << 0},
	{"filetype", I, RW, true, 1u << 1},
	{"needs_recovery", I, RW, false, 1u << 2},
	{"journal_dev", I, NO, false, 1u << 3},
	{"meta_bg", I, RW, false, 1u << 4},
	{"extent", I, RW, false, 1u << 6},
	{"64bit", I, RW, false, 1u << 7},
	{"mmp", I, NO, false, 1u << 8},
	{"flex_bg", I, RW, false, 1u << 9},
	{"ea_inode", I, NO, false, 1u << 10},
	{"dirdata", I, NO, false, 1u << 12},
	{"metadata_csum_seed", I, RW, false, 1u << 13},
	{"large_dir", I, NO, false, 1u << 14},
	{"inline_data", I, NO, false, 1u << 15},
	{"encrypt", I, NO, false, 1u << 16},
	{"casefold", I, NO, false, 1u << 17},

	{"sparse_super", R, RW, true, 1u << 0},
	{"large_file", R, RW, true, 1u << 1},
	{"btree_dir", R, RO, false, 1u << 2}, /* the kernel headers' name; e2fsprogs has none */
	{"huge_file", R, RW, false, 1u << 3},
	{"uninit_bg", R, RW, false, 1u << 4},
	{"dir_nlink", R, RW, false, 1u << 5},
	{"extra_isize", R, RW, false, 1u << 6},
	{"quota", R, RO, false, 1u << 8},
	{"bigalloc", R, NO, false, 1u << 9}, /* clusters: geometry not read */
	{"metadata_csum", R, RW, false, 1u << 10},
	{"replica", R, RO, false, 1u << 11},
	{"read-only", R, RO, false, 1u << 12},
	{"project", R, RO, false, 1u << 13},
	{"shared_blocks", R, RO, false, 1u << 14},
	{"verity", R, RO, false, 1u << 15},
	{"orphan_present", R, RO, false, 1u << 16},
};

#define NFEATURES (sizeof features / sizeof features[0])

const struct ext3_feature *ext3_feature_at(size_t i)
{
	return i < NFEATURES ? &features[i] : NULL;
}

const struct ext3_feature *ext3_feature_find(int kind, uint32_t bit)
{
	if (!bit || (bit & (bit - 1)))
		return NULL;
	for (size_t i = 0; i < NFEATURES; i++)
		if (features[i].kind == kind && features[i].mask == bit)
			return &features[i];
	return NULL;
}

const char *ext3_feature_name(int kind, uint32_t bit)
{
	const struct ext3_feature *f = ext3_feature_find(kind, bit);
	return f ? f->name : NULL;
}

enum ext3_feature_support ext3_feature_support_of(int kind, uint32_t bit)
{
	const struct ext3_feature *f = ext3_feature_find(kind, bit);
	if (f)
		return (enum ext3_feature_support)f->support;
	switch (kind) {
	case EXT3_FEATURE_KIND_COMPAT:
		return EXT3_FEATURE_IGNORED;
	case EXT3_FEATURE_KIND_RO_COMPAT:
		return EXT3_FEATURE_RO;
	default:
		return EXT3_FEATURE_REFUSE;
	}
}

uint32_t ext3_features_with(int kind, uint32_t set, enum ext3_feature_support s)
{
	uint32_t out = 0;
	for (int b = 0; b < 32; b++) {
		uint32_t bit = 1u << b;
		if ((set & bit) && ext3_feature_support_of(kind, bit) == s)
			out |= bit;
	}
	return out;
}

uint32_t ext3_features_mkfs(int kind)
{
	uint32_t out = 0;
	for (size_t i = 0; i < NFEATURES; i++)
		if (features[i].kind == kind && features[i].mkfs)
			out |= features[i].mask;
	return out;
}

/* Names of the bits of `mask`, space separated, appended to out. */
static void features_append(int kind, uint32_t mask, char *out, size_t len)
{
	static const char letter[3] = {'C', 'I', 'R'};
	for (int b = 0; b < 32; b++) {
		uint32_t bit = 1u << b;
		if (!(mask & bit))
			continue;
		size_t used = strlen(out);
		if (used + 1 >= len)
			return;
		const char *n = ext3_feature_name(kind, bit);
		char tmp[32];
		if (!n) {
			snprintf(tmp, sizeof tmp, "FEATURE_%c%u", letter[kind], (unsigned)b);
			n = tmp;
		}
		snprintf(out + used, len - used, "%s%s", used ? " " : "", n);
	}
}

void ext3_features_format(uint32_t compat, uint32_t incompat, uint32_t ro_compat, char *out,
			  size_t len)
{
	if (!len)
		return;
	out[0] = '\0';
	features_append(EXT3_FEATURE_KIND_COMPAT, compat, out, len);
	features_append(EXT3_FEATURE_KIND_INCOMPAT, incompat, out, len);
	features_append(EXT3_FEATURE_KIND_RO_COMPAT, ro_compat, out, len);
}

const char *ext3_feature_support_name(enum ext3_feature_support s)
{
	switch (s) {
	case EXT3_FEATURE_RW:
		return "read-write";
	case EXT3_FEATURE_IGNORED:
		return "ignored";
	case EXT3_FEATURE_RO:
		return "read-only";
	case EXT3_FEATURE_REFUSE:
		return "refused";
	}
	return "?";
}

const char *ext3_feature_kind_name(int kind)
{
	static const char *const names[3] = {"compat", "incompat", "ro_compat"};
	return kind >= 0 && kind <= 2 ? names[kind] : "?";
}
