/* mkfs feature sets (-t ext2|ext3|ext4, -O) and the structures ext4 images
 * carry, checked from the raw bytes with the published formulas (crc32c
 * straight from util/, not through the set functions under test). The
 * judges of the whole images are e2fsck and the kernel in
 * tests/cli/mkfs_types.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "extfs/format/ext3_format.h"
#include "extfs/format/ext4_extent.h"
#include "extfs/format/features.h"
#include "extfs/mkfs/mkfs.h"
#include "jbd/jbd_format.h"
#include "util/crc32c.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024)

static void test_type_sets(void **state)
{
	(void)state;
	uint32_t f2[3], f3[3], f4[3];
	assert_int_equal(ext3_mkfs_features_of_type("ext2", f2), 0);
	assert_int_equal(ext3_mkfs_features_of_type("ext3", f3), 0);
	assert_int_equal(ext3_mkfs_features_of_type("ext4", f4), 0);
	/* ext3 = the table's mkfs column (today's default) */
	for (int k = 0; k < 3; k++)
		assert_int_equal(f3[k], ext3_features_mkfs(k));
	assert_int_equal(f2[0], f3[0] & ~EXT3_FEATURE_COMPAT_HAS_JOURNAL);
	assert_int_equal(f2[1], f3[1]);
	assert_int_equal(f2[2], f3[2]);
	char s[256];
	ext3_features_format(f4[0], f4[1], f4[2], s, sizeof s);
	assert_string_equal(s, "has_journal ext_attr resize_inode dir_index filetype extent 64bit "
			       "flex_bg sparse_super large_file huge_file dir_nlink extra_isize metadata_csum");
	assert_int_equal(ext3_mkfs_features_of_type("ext5", f2), -EINVAL);
	assert_non_null(strstr(err_last(-EINVAL), "ext5"));
}

static void test_edit(void **state)
{
	(void)state;
	uint32_t f[3];
	assert_int_equal(ext3_mkfs_features_of_type("ext4", f), 0);
	assert_int_equal(ext3_mkfs_features_edit(f, "^metadata_csum,^has_journal"), 0);
	assert_false(f[2] & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM);
	assert_false(f[0] & EXT3_FEATURE_COMPAT_HAS_JOURNAL);
	assert_int_equal(ext3_mkfs_features_check(f), 0);
	assert_int_equal(ext3_mkfs_features_edit(f, "metadata_csum"), 0);
	assert_true(f[2] & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM);
	assert_int_equal(ext3_mkfs_features_edit(f, "bigalloc"), -EINVAL);
	assert_non_null(strstr(err_last(-EINVAL), "cannot make feature 'bigalloc'"));
	assert_int_equal(ext3_mkfs_features_edit(f, "nosuch"), -EINVAL);
	assert_non_null(strstr(err_last(-EINVAL), "unknown feature 'nosuch'"));
	assert_int_equal(ext3_mkfs_features_edit(f, "^extent"), 0);
	assert_int_equal(ext3_mkfs_features_check(f), -EINVAL); /* 64bit without extent */
	/* removing a feature mkfs cannot make is fine (already absent) */
	assert_int_equal(ext3_mkfs_features_edit(f, "^bigalloc"), 0);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* An ext4 image on a mem: device, checked field by field. */
static void run_ext4(unsigned bs, uint64_t bytes)
{
	struct ext3_mkfs_params p;
	memset(&p, 0, sizeof p);
	p.block_size = bs;
	assert_int_equal(ext3_uuid_parse("01234567-89ab-cdef-0123-456789abcdef", p.uuid), 0);
	p.uuid_set = p.time_set = p.assume_zeroed = true;
	p.time = 1700000000;
	assert_int_equal(ext3_mkfs_features_of_type("ext4", p.features), 0);
	p.features_set = true;
	char spec[64];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)bytes);
	struct dev *d = NULL;
	assert_int_equal(dev_open(spec, &d), 0);
	struct ext3_mkfs_layout l;
	int rc = ext3_mkfs_with_layout(d, &p, &l);
	if (rc)
		fail_msg("mkfs: %s", err_last(rc));
	uint8_t *img = malloc(bytes);
	assert_non_null(img);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, (uint32_t)(bytes / DEV_SECTOR_SIZE), img, 0), 0);
	dev_close(d);

	const uint8_t *sb = img + 1024;
	assert_int_equal(le16(sb + 0x38), EXT3_SUPER_MAGIC);
	assert_int_equal(le16(sb + 0xFE), 64);       /* s_desc_size */
	assert_int_equal(sb[0x175], 1);              /* crc32c */
	assert_int_equal(le16(sb + 0x15C), 32);      /* s_min_extra_isize */
	assert_int_equal(sb[0x174], 4);              /* s_log_groups_per_flex */
	assert_int_equal(le32(sb + 0x3FC), crc32c(~0u, sb, 0x3FC));
	uint32_t seed = crc32c(~0u, sb + 0x68, 16);

	/* group descriptors: checksum, bitmap checksums */
	const uint8_t *gdt = img + (size_t)(l.first_data_block + 1) * bs;
	for (uint32_t g = 0; g < l.groups; g++) {
		uint8_t desc[64];
		memcpy(desc, gdt + g * 64, 64);
		uint16_t want = le16(desc + 0x1E);
		desc[0x1E] = desc[0x1F] = 0;
		uint8_t le_g[4] = { (uint8_t)g, (uint8_t)(g >> 8), (uint8_t)(g >> 16), (uint8_t)(g >> 24) };
		assert_int_equal(want, crc32c(crc32c(seed, le_g, 4), desc, 64) & 0xFFFF);
		const uint8_t *bb = img + (size_t)le32(desc) * bs;
		uint32_t bc = crc32c(seed, bb, l.blocks_per_group / 8);
		assert_int_equal(le16(desc + 0x18) | (uint32_t)le16(desc + 0x38) << 16, bc);
	}

	/* the root directory: extent-mapped, its block ends in the csum tail */
	const uint8_t *itab = img + (size_t)le32(gdt + 8) * bs;
	const uint8_t *root = itab + (EXT3_ROOT_INO - 1) * l.inode_size;
	assert_true(le32(root + 0x20) & EXT4_EXTENTS_FL);
	assert_int_equal(le16(root + 0x28), EXT4_EXT_MAGIC);
	assert_int_equal(le16(root + 0x80), 32);     /* i_extra_isize */
	uint32_t rblk = le32(root + 0x28 + 12 + 8);  /* the extent's ee_start_lo */
	assert_int_equal(rblk, l.root_block);
	const uint8_t *tail = img + (size_t)rblk * bs + bs - 12;
	assert_int_equal(le16(tail + 4), 12);
	assert_int_equal(tail[7], 0xDE);

	/* the journal superblock: 64bit + csum_v3, its checksum */
	const uint8_t *js = img + (size_t)l.journal_start * bs;
	uint32_t inc = (uint32_t)js[0x28] << 24 | (uint32_t)js[0x29] << 16 | js[0x2A] << 8 | js[0x2B];
	assert_int_equal(inc, JBD_FEATURE_INCOMPAT_REVOKE | JBD_FEATURE_INCOMPAT_64BIT |
				      JBD_FEATURE_INCOMPAT_CSUM_V3);
	assert_int_equal(js[0x50], JBD_CRC32C_CHKSUM);
	uint8_t copy[1024];
	memcpy(copy, js, 1024);
	memset(copy + 0xFC, 0, 4);
	uint32_t c = crc32c(~0u, copy, 1024);
	assert_int_equal((uint32_t)js[0xFC] << 24 | (uint32_t)js[0xFD] << 16 | js[0xFE] << 8 | js[0xFF], c);
	free(img);
}

static void test_ext4_images(void **state)
{
	(void)state;
	run_ext4(1024, 64 * MIB);
	run_ext4(4096, 96 * MIB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type_sets),
		cmocka_unit_test(test_edit),
		cmocka_unit_test(test_ext4_images),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
