/* The on-disk feature table (src/extfs/format/features.c) through the
 * public API (nostall_feature_get, nostall_feature_support,
 * nostall_feature_name) and its internal readers' helpers: the table is
 * ordered and without duplicates, a bit without an entry follows its kind's
 * rule, mkfs's column is the set the mount takes read-write, and the names
 * formatted for reports are the table's (unknown bits as dumpe2fs prints
 * them). docs/ext3-format.md's copy is checked by tests/cli/info_features.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "extfs/format/ext3_format.h"
#include "extfs/format/features.h"
#include "nostall/nostall.h"

#include <errno.h>
#include <string.h>

static void test_table_walk(void **state)
{
	(void)state;
	struct nostall_feature f, prev = {0};
	unsigned n = 0;
	for (; nostall_feature_get(n, &f) == 0; n++) {
		assert_non_null(f.name);
		assert_true(f.which >= 0 && f.which <= 2);
		assert_true(f.bit && !(f.bit & (f.bit - 1)));
		assert_true(f.support >= NOSTALL_FEATURE_RW && f.support <= NOSTALL_FEATURE_REFUSE);
		/* ordered by kind, then bit: no duplicates */
		if (n)
			assert_true(f.which > prev.which || (f.which == prev.which && f.bit > prev.bit));
		/* the name lookup agrees; the support of the bit is the entry's */
		assert_string_equal(nostall_feature_name(f.which, f.bit), f.name);
		assert_int_equal(nostall_feature_support(f.which, f.bit), f.support);
		/* compat features are never refused nor read-only, incompat ones
		 * never ignored (what each kind means); an incompat one is
		 * read-only only when nostall reads it but does not write it
		 * yet (extent, 64bit, flex_bg, metadata_csum_seed); an
		 * ro_compat one is refused only when nostall cannot read its
		 * layout (bigalloc) */
		if (f.which == 0)
			assert_true(f.support == NOSTALL_FEATURE_RW || f.support == NOSTALL_FEATURE_IGNORED);
		if (f.which == 1)
			assert_true(f.support == NOSTALL_FEATURE_RW || f.support == NOSTALL_FEATURE_REFUSE ||
				    (f.support == NOSTALL_FEATURE_RO &&
				     (f.bit & (EXT4_FEATURE_INCOMPAT_EXTENTS | EXT4_FEATURE_INCOMPAT_64BIT |
					       EXT4_FEATURE_INCOMPAT_FLEX_BG | EXT4_FEATURE_INCOMPAT_CSUM_SEED))));
		if (f.which == 2)
			assert_true(f.support == NOSTALL_FEATURE_RW || f.support == NOSTALL_FEATURE_RO ||
				    (f.support == NOSTALL_FEATURE_REFUSE && f.bit == EXT4_FEATURE_RO_COMPAT_BIGALLOC));
		/* mkfs sets only what nostall mounts read-write */
		if (f.mkfs)
			assert_int_equal(f.support, NOSTALL_FEATURE_RW);
		assert_non_null(f.support_name);
		prev = f;
	}
	assert_true(n >= 40);
	assert_int_equal(nostall_feature_get(n, &f), -ENOENT);
	assert_int_equal(nostall_feature_get(1000000, &f), -ENOENT);
}

static void test_unknown_bits(void **state)
{
	(void)state;
	/* bits without an entry: the rule of their kind */
	assert_null(nostall_feature_name(0, 1u << 7));
	assert_int_equal(nostall_feature_support(0, 1u << 7), NOSTALL_FEATURE_IGNORED);
	assert_int_equal(nostall_feature_support(1, 1u << 31), NOSTALL_FEATURE_REFUSE);
	assert_int_equal(nostall_feature_support(2, 1u << 20), NOSTALL_FEATURE_RO);
	assert_int_equal(nostall_feature_support(3, 1), -EINVAL);
	assert_int_equal(nostall_feature_support(1, 0), -EINVAL);
	assert_int_equal(nostall_feature_support(1, 3), -EINVAL);
	/* a few entries as the mount has always treated them */
	assert_int_equal(nostall_feature_support(1, EXT3_FEATURE_INCOMPAT_FILETYPE), NOSTALL_FEATURE_RW);
	assert_int_equal(nostall_feature_support(1, EXT3_FEATURE_INCOMPAT_RECOVER), NOSTALL_FEATURE_RW);
	assert_int_equal(nostall_feature_support(1, EXT3_FEATURE_INCOMPAT_META_BG), NOSTALL_FEATURE_RW);
	/* issue 39: the ext4 set Debian's mkfs.ext4 makes is written */
	assert_int_equal(nostall_feature_support(1, EXT4_FEATURE_INCOMPAT_EXTENTS), NOSTALL_FEATURE_RW);
	assert_int_equal(nostall_feature_support(1, EXT4_FEATURE_INCOMPAT_64BIT), NOSTALL_FEATURE_RW);
	assert_int_equal(nostall_feature_support(1, EXT4_FEATURE_INCOMPAT_FLEX_BG), NOSTALL_FEATURE_RW);
	assert_int_equal(nostall_feature_support(1, EXT3_FEATURE_INCOMPAT_JOURNAL_DEV),
			 NOSTALL_FEATURE_REFUSE);
	assert_int_equal(nostall_feature_support(2, EXT4_FEATURE_RO_COMPAT_METADATA_CSUM),
			 NOSTALL_FEATURE_RW);
	assert_int_equal(nostall_feature_support(2, EXT4_FEATURE_RO_COMPAT_GDT_CSUM), NOSTALL_FEATURE_RW);
	assert_int_equal(nostall_feature_support(2, 0x100 /* quota */), NOSTALL_FEATURE_RO);
	/* the masks the mount uses */
	uint32_t incompat = EXT3_FEATURE_INCOMPAT_FILETYPE | EXT4_FEATURE_INCOMPAT_EXTENTS |
			    EXT4_FEATURE_INCOMPAT_64BIT | (1u << 31);
	assert_int_equal(ext3_features_with(EXT3_FEATURE_KIND_INCOMPAT, incompat, EXT3_FEATURE_REFUSE),
			 1u << 31);
	assert_int_equal(ext3_features_with(EXT3_FEATURE_KIND_INCOMPAT, incompat, EXT3_FEATURE_RO), 0);
	assert_int_equal(ext3_features_with(EXT3_FEATURE_KIND_INCOMPAT, incompat, EXT3_FEATURE_RW),
			 EXT3_FEATURE_INCOMPAT_FILETYPE | EXT4_FEATURE_INCOMPAT_EXTENTS |
				 EXT4_FEATURE_INCOMPAT_64BIT);
	assert_int_equal(ext3_features_with(EXT3_FEATURE_KIND_RO_COMPAT, 0x3 | (1u << 14) | (1u << 20),
					    EXT3_FEATURE_RO),
			 (1u << 14) | (1u << 20));
}

static void test_format(void **state)
{
	(void)state;
	char out[256];
	ext3_features_format(ext3_features_mkfs(0), ext3_features_mkfs(1), ext3_features_mkfs(2), out,
			     sizeof out);
	assert_string_equal(out, "has_journal ext_attr resize_inode dir_index filetype sparse_super "
				 "large_file");
	ext3_features_format(1u << 7, EXT4_FEATURE_INCOMPAT_EXTENTS | (1u << 31), 1u << 20, out,
			     sizeof out);
	assert_string_equal(out, "FEATURE_C7 extent FEATURE_I31 FEATURE_R20");
	/* truncated, never overrun */
	char small[12];
	memset(small, 'x', sizeof small);
	ext3_features_format(ext3_features_mkfs(0), 0, 0, small, sizeof small);
	assert_true(strlen(small) < sizeof small);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_walk),
		cmocka_unit_test(test_unknown_bits),
		cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
