/* The write path on corrupt images, seeded (fuzz/fuzz_write.h, the walk the
 * libFuzzer target fuzz/fuzz_write.c runs): a small ext3 image is made by
 * mke2fs and filled through the library (files in direct, indirect and
 * double-indirect blocks, holes, a 150-entry htree directory, symlinks,
 * xattrs in the inode and in a block, a fifo, hard links, an open-unlinked
 * file left on the orphan list by a copy taken while it was open, so the
 * mount's orphan cleanup runs); then each round corrupts a few bytes of its
 * metadata (superblock, group descriptors, bitmaps, inode table, directory
 * and indirect blocks) and runs the write walk on it: a read-write mount,
 * changes everywhere, sync, unmount, a read-only walk of the result. Every
 * call may fail; nothing may crash, hang, leak or trip a sanitizer (CI runs
 * this under ASan+UBSan). The same again from an image without a journal
 * (ext2, written in place). The seed is printed (NOSTALL_SEED=N reruns it);
 * NOSTALL_FUZZ_ROUNDS sets the rounds (default 150).
 *
 * Oracle: mke2fs makes the image. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../fuzz/fuzz_write.h"
#include "lib/fsimg.h"
#include "lib/fsop.h"
#include "lib/oracles.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];
static uint64_t seed;

static void mkfile(struct nostall_fs *fs, const char *path, uint64_t off, size_t n)
{
	static char buf[16384];
	memset(buf, 'q', sizeof buf);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, path, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f), 0);
	while (n) {
		size_t k = n < sizeof buf ? n : sizeof buf;
		assert_int_equal(nostall_pwrite(f, buf, k, off), (ssize_t)k);
		off += k;
		n -= k;
	}
	nostall_close(f);
}

/* The image, in memory; ext2: without a journal (written with no data=,
 * docs/ext2-nojournal.md). */
static uint8_t *make_image(size_t *len, bool ext2)
{
	char img[300], copy[320];
	snprintf(img, sizeof img, "%s/base.img", tmpdir);
	snprintf(copy, sizeof copy, "%s/orphan.img", tmpdir);
	assert_int_equal(fsimg_mkfs(img, 1024, 4096, ext2 ? "-N 512 -O ^has_journal" : "-N 512"), 0);
	struct nostall_fs *fs;
	assert_int_equal(nostall_mount(img, ext2 ? NULL : "data=ordered", 0, &fs), 0);
	mkfile(fs, "/small", 0, 100);
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	assert_int_equal(nostall_mkdir(fs, "/d/e", 0700), 0);
	mkfile(fs, "/d/ind", 0, 40000);           /* single indirect */
	mkfile(fs, "/d/e/dind", 300000, 9000);     /* a hole, then double indirect */
	assert_int_equal(nostall_symlink(fs, "small", "/fast"), 0);
	char longt[200];
	memset(longt, 'x', sizeof longt - 1);
	longt[sizeof longt - 1] = 0;
	assert_int_equal(nostall_symlink(fs, longt, "/d/slow"), 0);
	assert_int_equal(nostall_mknod(fs, "/fifo", 0010644, 0), 0);
	assert_int_equal(nostall_link(fs, "/small", "/d/hard"), 0);
	assert_int_equal(nostall_setxattr(fs, "/small", 0, "user.a", "1", 1, 0), 0);
	char big[700];
	memset(big, 'v', sizeof big);
	assert_int_equal(nostall_setxattr(fs, "/d/ind", 0, "trusted.big", big, sizeof big, 0), 0);
	assert_int_equal(nostall_mkdir(fs, "/big", 0755), 0);
	for (unsigned i = 0; i < 150; i++) {
		char p[96];
		snprintf(p, sizeof p, "/big/entry-name-number-%u", i);
		mkfile(fs, p, 0, i % 7 ? 0 : 2000);
	}
	/* Open, unlinked, synced: a copy now is an image with an orphan
	 * (the unmount below frees it). */
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "/d/ind", NOSTALL_O_RDWR, &f), 0);
	assert_int_equal(nostall_unlink(fs, "/d/ind"), 0);
	assert_int_equal(nostall_sync(fs), 0);
	assert_int_equal(fsimg_run("cp '%s' '%s'", img, copy), 0);
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);
	/* The orphan image (needs_recovery too: the copy was of a live
	 * mount) is the one the rounds corrupt. */
	FILE *in = fopen(copy, "rb");
	assert_non_null(in);
	uint8_t *buf = malloc(4096u << 10);
	assert_non_null(buf);
	*len = fread(buf, 1, 4096u << 10, in);
	fclose(in);
	assert_int_equal(*len, 4096u << 10);
	unlink(img);
	unlink(copy);
	return buf;
}

/* Corrupt one spot: a byte, or a 32-bit field set to a value that means
 * something (0, all ones, a small count, a block number past the end). */
static void corrupt(uint8_t *img, size_t len, uint64_t *s)
{
	/* the first 300 KiB: superblock, descriptors, bitmaps, inode table,
	 * and the first directory and indirect blocks; 1 in 8 anywhere */
	size_t span = fsop_rand(s) % 8 ? 300u << 10 : len;
	size_t off = 1024 + fsop_rand(s) % (span - 1024 - 4);
	uint32_t v;
	switch (fsop_rand(s) % 6) {
	case 0: img[off] = (uint8_t)fsop_rand(s); return;
	case 1: img[off] ^= (uint8_t)(1u << (fsop_rand(s) % 8)); return;
	case 2: v = 0; break;
	case 3: v = UINT32_MAX; break;
	case 4: v = (uint32_t)(fsop_rand(s) % 64); break;
	default: v = (uint32_t)(4096 + fsop_rand(s) % 100000); break;
	}
	off &= ~(size_t)3;
	memcpy(img + off, &v, 4); /* little-endian host, as the fields */
}

static void write_corruptions(bool ext2)
{
	size_t len;
	uint8_t *base = make_image(&len, ext2);
	uint8_t *img = malloc(len);
	assert_non_null(img);
	/* The image as made: it mounts, and the walk changes it. */
	unsigned ok = 0;
	assert_int_equal(fuzz_write_image(base, len, &ok), 1);
	printf("the image as made: %u calls of the walk succeeded\n", ok);
	assert_true(ok >= 150);
	unsigned rounds = 150;
	const char *e = getenv("NOSTALL_FUZZ_ROUNDS");
	if (e && atoi(e) > 0)
		rounds = (unsigned)atoi(e);
	uint64_t s = seed;
	unsigned mounted = 0;
	for (unsigned r = 0; r < rounds; r++) {
		memcpy(img, base, len);
		unsigned spots = 1 + (unsigned)(fsop_rand(&s) % 4);
		for (unsigned k = 0; k < spots; k++)
			corrupt(img, len, &s);
		img[len - 1] = (uint8_t)r; /* the data mode: all four in turn */
		mounted += (unsigned)fuzz_write_image(img, len, NULL);
	}
	printf("%u corrupt images, %u mounted read-write\n", rounds, mounted);
	/* Most spots leave the image mountable: a walk that never got to
	 * write would test nothing. */
	assert_true(mounted >= rounds / 3);
	free(img);
	free(base);
}

static void test_write_corruptions(void **state)
{
	(void)state;
	write_corruptions(false);
}

/* The same on an ext2 image (no journal: the fuzz walk mounts it without
 * data=): a corrupt journal-less image is written in place. */
static void test_write_corruptions_ext2(void **state)
{
	(void)state;
	write_corruptions(true);
}

int main(void)
{
	int rc = fsimg_main_begin("test_fuzz_write", "fuzz_write", "mke2fs", &seed, tmpdir, sizeof tmpdir);
	if (rc >= 0)
		return rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_corruptions),
		cmocka_unit_test(test_write_corruptions_ext2),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
