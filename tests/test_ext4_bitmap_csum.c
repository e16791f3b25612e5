/* metadata_csum on block and inode bitmaps (ext4_bitmap_csum_ok, csum.h):
 * nostall's read-only ext4 mount reads no bitmap (statfs takes the
 * descriptors' counts; only the ext3 writer and the orphan list of a
 * writable mount read them), so the formula is checked here on its own,
 * against the bitmaps and descriptors mkfs.ext4 wrote: 64-byte descriptors
 * (32-bit checksums, lo + hi) and ^64bit's 32-byte ones (the low 16 bits),
 * every group whose bitmap is initialised; a changed bitmap byte fails; a
 * filesystem without metadata_csum has nothing to check.
 *
 * The update of a sum from flipped bits (ext4_bitmap_csum_flip) is
 * checked against whole sums on random bitmaps.
 *
 * Oracles: mkfs.ext4, e2fsck (the images are clean). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/csum.h"
#include "extfs/core/ext3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char tmpdir[256];

static void read_at(const char *img, uint64_t off, void *buf, size_t n)
{
	FILE *f = fopen(img, "rb");
	assert_non_null(f);
	assert_int_equal(fseeko(f, (off_t)off, SEEK_SET), 0);
	assert_int_equal(fread(buf, 1, n, f), n);
	fclose(f);
}

/* Check every group's bitmaps of a fresh mkfs.ext4 image made with opts;
 * answers how many bitmaps were checked. */
static unsigned check_image(const char *name, const char *opts, bool csum)
{
	char img[512];
	snprintf(img, sizeof img, "%s/%s.img", tmpdir, name);
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F %s '%s' 40M >/dev/null 2>&1", opts, img), 0);
	assert_int_equal(fsimg_fsck(img, NULL, 0), 0);
	struct fsimg_mnt m;
	assert_int_equal(fsimg_mount_opts(img, NULL, 0, &m), 0);
	struct ext3_fs *fs = m.fs;
	assert_int_equal(ext4_has_metadata_csum(fs), csum);
	unsigned bs = fs->g.block_size, ds = fs->g.desc_size, checked = 0;
	uint8_t *desc = malloc(ds), *bm = malloc(bs);
	assert_non_null(desc);
	assert_non_null(bm);
	uint64_t gdt = (uint64_t)(fs->g.first_data_block + 1) * bs;
	for (uint32_t g = 0; g < fs->g.groups; g++) {
		read_at(img, gdt + (uint64_t)g * ds, desc, ds);
		const struct ext3_group_desc *d = &fs->gd[g];
		for (int inode = 0; inode < 2; inode++) {
			/* an uninitialised bitmap is computed, not read, and
			 * carries no checksum (e2fsck skips it too) */
			if (d->bg_flags & (inode ? EXT4_BG_INODE_UNINIT : EXT4_BG_BLOCK_UNINIT))
				continue;
			read_at(img, (uint64_t)(inode ? d->bg_inode_bitmap : d->bg_block_bitmap) * bs, bm, bs);
			assert_true(ext4_bitmap_csum_ok(fs, desc, inode, bm));
			bm[3] ^= 0x10;
			assert_int_equal(ext4_bitmap_csum_ok(fs, desc, inode, bm), !csum);
			checked++;
		}
	}
	free(desc);
	free(bm);
	assert_int_equal(fsimg_umount(&m), 0);
	return checked;
}

static void test_bitmap_csum_64bit(void **state)
{
	(void)state;
	assert_true(check_image("d64", "-b 4096", true) >= 2);
	assert_true(check_image("d64k", "-b 1024", true) >= 2);
}

static void test_bitmap_csum_32byte_desc(void **state)
{
	(void)state;
	assert_true(check_image("d32", "-b 1024 -O ^64bit", true) >= 2);
}

static void test_bitmap_csum_none(void **state)
{
	(void)state;
	assert_true(check_image("nocsum", "-b 4096 -O ^metadata_csum", false) >= 2);
}

/* ext4_bitmap_csum_flip (the write path's update of a bitmap sum from the
 * bits an allocation or a free flipped) against a whole sum, on random
 * bitmaps and random runs, block and inode bitmaps, 1 KiB and 4 KiB
 * blocks. A run it declines (too long, past the end) is summed again. */
static void flip_image(const char *name, const char *opts, unsigned seed)
{
	char img[512];
	snprintf(img, sizeof img, "%s/%s.img", tmpdir, name);
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F %s '%s' 40M >/dev/null 2>&1", opts, img), 0);
	struct fsimg_mnt m;
	assert_int_equal(fsimg_mount_opts(img, NULL, 0, &m), 0);
	struct ext3_fs *fs = m.fs;
	unsigned bs = fs->g.block_size;
	uint8_t *bm = malloc(bs);
	assert_non_null(bm);
	srand(seed);
	unsigned flips = 0, declined = 0;
	for (int inode = 0; inode < 2; inode++) {
		uint32_t bits = inode ? fs->g.inodes_per_group : fs->g.blocks_per_group;
		for (unsigned i = 0; i < bs; i++)
			bm[i] = (uint8_t)rand();
		uint32_t sum = ext4_bitmap_csum_of(fs, inode, bm);
		for (int k = 0; k < 400; k++) {
			uint32_t len = k % 4 == 0 ? 1 : 1 + (uint32_t)rand() % (k % 4 == 3 ? 4000 : 70);
			if (len > bits)
				len = bits;
			uint32_t start = (uint32_t)rand() % (bits - len + 1);
			for (uint32_t b = start; b < start + len; b++)
				bm[b >> 3] ^= (uint8_t)(1u << (b & 7));
			if (ext4_bitmap_csum_flip(fs, inode, &sum, start, len)) {
				flips++;
			} else {
				sum = ext4_bitmap_csum_of(fs, inode, bm);
				declined++;
			}
			assert_int_equal(sum, ext4_bitmap_csum_of(fs, inode, bm));
		}
		/* past the bitmap: declined, the sum untouched */
		uint32_t before = sum;
		assert_false(ext4_bitmap_csum_flip(fs, inode, &sum, bits - 1, 2));
		assert_int_equal(sum, before);
	}
	assert_true(flips > 500);
	assert_true(declined > 0);
	free(bm);
	assert_int_equal(fsimg_umount(&m), 0);
}

static void test_bitmap_csum_flip(void **state)
{
	(void)state;
	unsigned seed = (unsigned)time(NULL);
	printf("test_bitmap_csum_flip: seed %u\n", seed);
	flip_image("f4k", "-b 4096", seed);
	flip_image("f1k", "-b 1024 -O ^64bit", seed + 1);
}

int main(void)
{
	int orc = oracles_check("test_ext4_bitmap_csum", "mkfs.ext4 e2fsck");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "bmcsum"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bitmap_csum_64bit),
		cmocka_unit_test(test_bitmap_csum_32byte_desc),
		cmocka_unit_test(test_bitmap_csum_none),
		cmocka_unit_test(test_bitmap_csum_flip),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
