/* ext4's write side, the parts that are pure functions (issue 39 item 2;
 * docs/ext4-csum.md, "The write side"):
 *  - a BLOCK_UNINIT group's block bitmap built in memory
 *    (ext4_block_bitmap_init, extfs/core/uninit.h) equals the bitmap
 *    mkfs.ext4 writes for the same group when it initialises every group
 *    (the same layout made with ^metadata_csum,^uninit_bg), with flex_bg
 *    (the group's own bitmaps and table live elsewhere) and without (they
 *    are in the group), 1 KiB and 4 KiB blocks; its free count is the one
 *    mkfs.ext4 put in the uninit group's descriptor; an INODE_UNINIT
 *    group's inode bitmap is empty with the bits past inodes_per_group set;
 *  - each set-side checksum (csum.h) passes the read side's check, on the
 *    structures of a real image, and a changed byte fails it;
 *  - dir_nlink: a directory of 65,010 subdirectories counts 1 link.
 * Oracles: mkfs.ext4 (the bitmaps and descriptors it writes), e2fsck (the
 * images are clean). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/csum.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "extfs/core/uninit.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];

static void read_at(const char *img, uint64_t off, void *buf, size_t n)
{
	FILE *f = fopen(img, "rb");
	assert_non_null(f);
	assert_int_equal(fseeko(f, (off_t)off, SEEK_SET), 0);
	assert_int_equal(fread(buf, 1, n, f), n);
	fclose(f);
}

static void mkimg(char *img, size_t n, const char *name, const char *opts)
{
	snprintf(img, n, "%s/%s.img", tmpdir, name);
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F %s '%s' 64M >/dev/null 2>&1", opts, img), 0);
	assert_int_equal(fsimg_fsck(img, NULL, 0), 0);
}

/* The layout opts made twice: with uninit groups (metadata_csum, or
 * uninit_bg) and with every group initialised; each uninit group's built
 * bitmap against the initialised image's bitmap of that group. Answers
 * how many groups were compared. */
static unsigned compare_layout(const char *name, const char *opts, const char *csum)
{
	char a[512], b[512], ao[256], bo[256], an[64], bn[64];
	snprintf(ao, sizeof ao, "%s %s", opts, csum);
	snprintf(bo, sizeof bo, "%s -O ^metadata_csum,^uninit_bg", opts);
	snprintf(an, sizeof an, "%s-u", name);
	snprintf(bn, sizeof bn, "%s-i", name);
	mkimg(a, sizeof a, an, ao);
	mkimg(b, sizeof b, bn, bo);
	struct fsimg_mnt ma, mb;
	assert_int_equal(fsimg_mount_opts(a, NULL, 0, &ma), 0);
	assert_int_equal(fsimg_mount_opts(b, NULL, 0, &mb), 0);
	struct ext3_fs *fa = ma.fs, *fb = mb.fs;
	assert_true(ext4_has_group_desc_csum(fa));
	assert_false(ext4_has_group_desc_csum(fb));
	assert_int_equal(fa->g.groups, fb->g.groups);
	unsigned bs = fa->g.block_size, compared = 0, uninit = 0;
	uint8_t *built = malloc(bs), *disk = malloc(bs), *ib = malloc(bs);
	assert_non_null(built);
	assert_non_null(disk);
	assert_non_null(ib);
	for (uint32_t g = 0; g < fa->g.groups; g++) {
		const struct ext3_group_desc *da = &fa->gd[g], *db = &fb->gd[g];
		/* the same layout: the comparison means something */
		assert_int_equal(da->bg_block_bitmap, db->bg_block_bitmap);
		assert_int_equal(da->bg_inode_table, db->bg_inode_table);
		uint32_t freeb = ext4_block_bitmap_init(fb, g, built);
		read_at(b, (uint64_t)db->bg_block_bitmap * bs, disk, bs);
		/* a group holding nothing but metadata (its free count says
		 * so): mkfs.ext4's bitmap is the built one */
		if (db->bg_free_blocks_count == freeb) {
			assert_memory_equal(built, disk, bs);
			compared++;
		}
		if (da->bg_flags & EXT4_BG_BLOCK_UNINIT) {
			assert_true(ext4_group_bitmap_uninit(fa, g, false));
			uint32_t f = ext4_block_bitmap_init(fa, g, built);
			assert_int_equal(f, da->bg_free_blocks_count);
			assert_memory_equal(built, disk, bs);
			uninit++;
		}
		if (da->bg_flags & EXT4_BG_INODE_UNINIT) {
			ext4_inode_bitmap_init(fa, ib);
			for (uint32_t i = 0; i < bs * 8; i++)
				assert_int_equal((ib[i / 8] >> (i % 8)) & 1, i >= fa->g.inodes_per_group);
		}
	}
	free(built);
	free(disk);
	free(ib);
	assert_int_equal(fsimg_umount(&ma), 0);
	assert_int_equal(fsimg_umount(&mb), 0);
	assert_true(uninit >= 2);
	return compared;
}

static void test_block_uninit_flex(void **state)
{
	(void)state;
	assert_true(compare_layout("flex1k", "-b 1024", "") >= 4);
	assert_true(compare_layout("flex4k", "-b 4096 -g 2048", "") >= 4);
	assert_true(compare_layout("flexgdt", "-b 1024", "-O ^metadata_csum,uninit_bg") >= 4);
}

static void test_block_uninit_noflex(void **state)
{
	(void)state;
	assert_true(compare_layout("plain1k", "-b 1024 -O ^flex_bg", "") >= 4);
	assert_true(compare_layout("plain4k", "-b 4096 -g 2048 -O ^flex_bg", "") >= 4);
	assert_true(compare_layout("metabg", "-b 1024 -O ^flex_bg,meta_bg,^resize_inode", "") >= 4);
}

/* Each set function's result passes its check; one byte off fails it. */
static void test_set_side_roundtrip(void **state)
{
	(void)state;
	char img[512];
	mkimg(img, sizeof img, "rt", "-b 1024");
	struct fsimg_mnt m;
	assert_int_equal(fsimg_mount_opts(img, NULL, 0, &m), 0);
	struct ext3_fs *fs = m.fs;
	unsigned bs = fs->g.block_size, ds = fs->g.desc_size, isz = fs->g.inode_size;
	uint8_t *b = malloc(bs);
	assert_non_null(b);
	/* a descriptor (group 1) */
	uint64_t gdt = (uint64_t)(fs->g.first_data_block + 1) * bs;
	read_at(img, gdt + ds, b, ds);
	b[0x0C] ^= 1; /* the free count */
	assert_false(ext4_gd_csum_ok(fs, 1, b));
	ext4_gd_csum_update(fs, 1, b);
	assert_true(ext4_gd_csum_ok(fs, 1, b));
	assert_false(ext4_gd_csum_ok(fs, 2, b));
	/* the bitmap checksums in it */
	uint8_t bm[1024];
	memset(bm, 0x5A, sizeof bm);
	ext4_gd_bitmap_csum_put(fs, b, false, ext4_bitmap_csum_of(fs, false, bm));
	ext4_gd_bitmap_csum_put(fs, b, true, ext4_bitmap_csum_of(fs, true, bm));
	assert_true(ext4_bitmap_csum_ok(fs, b, false, bm));
	assert_true(ext4_bitmap_csum_ok(fs, b, true, bm));
	bm[0] ^= 1;
	assert_false(ext4_bitmap_csum_ok(fs, b, false, bm));
	/* an inode (the root's) */
	uint64_t blk;
	unsigned off;
	ext3_fs_inode_loc(fs, EXT3_ROOT_INO, &blk, &off);
	read_at(img, blk * bs + off, b, isz);
	assert_true(ext4_inode_csum_ok(fs, EXT3_ROOT_INO, b));
	b[0x08] ^= 1; /* atime */
	assert_false(ext4_inode_csum_ok(fs, EXT3_ROOT_INO, b));
	ext4_inode_csum_update(fs, EXT3_ROOT_INO, b);
	assert_true(ext4_inode_csum_ok(fs, EXT3_ROOT_INO, b));
	assert_false(ext4_inode_csum_ok(fs, EXT3_ROOT_INO + 1, b));
	/* a directory leaf: entries end at bs - 12, the tail is written */
	memset(b, 0, bs);
	b[4] = (uint8_t)((bs - 12) & 0xFF);
	b[5] = (uint8_t)((bs - 12) >> 8);
	ext4_dirblock_csum_update(fs, 12, 7, b);
	assert_true(ext4_dirblock_csum_ok(fs, 12, 7, b));
	assert_false(ext4_dirblock_csum_ok(fs, 12, 8, b));
	assert_int_equal(b[bs - 12 + 4], 12);
	assert_int_equal(b[bs - 12 + 7], 0xDE);
	/* an htree node: limit leaves the 8-byte dx_tail */
	memset(b, 0, bs);
	b[4] = (uint8_t)(bs & 0xFF);
	b[5] = (uint8_t)(bs >> 8);
	unsigned limit = (bs - 8 - 8) / 8;
	b[8] = (uint8_t)limit;
	b[9] = (uint8_t)(limit >> 8);
	b[10] = 1;
	b[12 + 0] = 1; /* entry 0's block */
	ext4_dx_csum_update(fs, 12, 7, b, 8);
	assert_true(ext4_dx_csum_ok(fs, 12, 7, b, 8));
	b[12] = 2;
	assert_false(ext4_dx_csum_ok(fs, 12, 7, b, 8));
	/* an xattr block: per block number */
	memset(b, 0xA5, bs);
	ext4_xattr_block_csum_update(fs, 1000, b);
	assert_true(ext4_xattr_block_csum_ok(fs, 1000, b));
	assert_false(ext4_xattr_block_csum_ok(fs, 1001, b));
	/* the superblock */
	memcpy(b, &fs->sb, 1024);
	b[0x30] ^= 1;
	ext4_sb_csum_update(fs, b);
	uint32_t stored;
	memcpy(&stored, b + 0x3FC, 4);
	assert_int_equal(le32_to_cpu(stored), crc32c(~0u, b, 0x3FC));
	free(b);
	assert_int_equal(fsimg_umount(&m), 0);
}

/* dir_nlink: an indexed directory past 65,000 links counts 1 (the
 * kernel's ext4_inc_count) instead of -EMLINK, stays 1 when a subdirectory
 * goes, and e2fsck agrees. */
static void test_dir_nlink(void **state)
{
	(void)state;
	char img[512];
	snprintf(img, sizeof img, "%s/nlink.img", tmpdir);
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F -b 1024 -I 128 -N 68000 -O ^extent,^64bit '%s' 100M "
				   ">/dev/null 2>&1", img), 0);
	struct fsimg_mnt m;
	fsimg_assert_mount(img, NULL, EXT3_MOUNT_JOURNAL, &m);
	static const struct ext3_cred cred = {.uid = 0, .gid = 0};
	struct ext3_inode *p, *in;
	assert_int_equal(ext3_mkdir(m.root, "p", 1, 0755, &cred, &p), 0);
	char name[16];
	unsigned n = 0;
	for (; n < 65010; n++) {
		int len = snprintf(name, sizeof name, "s%05u", n);
		assert_int_equal(ext3_mkdir(p, name, (size_t)len, 0755, &cred, &in), 0);
		ext3_iput(in);
		struct ext3_inode_attr a;
		ext3_inode_attr_get(p, &a);
		if (n + 1 <= 64998)
			assert_int_equal(a.links, n + 3);
		else
			assert_int_equal(a.links, 1);
	}
	assert_int_equal(ext3_rmdir(p, "s00007", 6), 0);
	struct ext3_inode_attr a;
	ext3_inode_attr_get(p, &a);
	assert_int_equal(a.links, 1);
	ext3_iput(p);
	assert_int_equal(fsimg_umount(&m), 0);
	char msg[512];
	assert_int_equal(fsimg_fsck(img, msg, sizeof msg), 0);
}

int main(void)
{
	int orc = oracles_check("test_ext4_csum_write", "mkfs.ext4 e2fsck");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "e4csumw"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_uninit_flex),
		cmocka_unit_test(test_block_uninit_noflex),
		cmocka_unit_test(test_set_side_roundtrip),
		cmocka_unit_test(test_dir_nlink),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
