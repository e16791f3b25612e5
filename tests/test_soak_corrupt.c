/* Writes to corrupt images (bugs found by the soak's corruption runs, not
 * by the read-only fuzzer): each case makes a small mke2fs image through
 * the public API, corrupts one field with debugfs, then writes. Every call
 * may fail; none may crash or trip a sanitizer, and the corruption met must
 * be reported (the superblock's error state).
 *
 * - orphan_bitmap_free: the inode bitmap is a zeroed block, so an unlinked
 *   inode is "already free" when its last reference goes. Its eviction left
 *   it on the in-memory orphan list and the struct was freed: the next
 *   unlink linked to freed memory (heap-use-after-free in ext3_orphan_add).
 *
 * - dx_count_readdir: an htree root whose count exceeds its limit (one
 *   flipped byte). The index is refused and the directory read linearly,
 *   but the iterator's next batch (a byte-offset cookie) started over at 0:
 *   nostall_dir_next, and the FUSE mount's readdir, returned the first
 *   entries forever (find never ended).
 *
 * Oracles: mke2fs, debugfs, dumpe2fs. Deterministic. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

static bool has_errors(const char *img)
{
	return fsimg_count("with errors", "dumpe2fs -h '%s' 2>/dev/null", img) > 0;
}

/* A file of n bytes at path (created, written, closed). */
static void mkfile(struct nostall_fs *fs, const char *path, size_t n)
{
	static char buf[8192];
	memset(buf, 'x', sizeof buf);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, path, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f), 0);
	assert_int_equal(nostall_pwrite(f, buf, n, 0), (ssize_t)n);
	nostall_close(f);
}

/* An 8 MiB, 1 KiB-block image with files /f0../f{n-1} and a directory /d
 * holding /d/g, made through nostall and unmounted. */
static void make_image(const char *img, unsigned n)
{
	fsimg_assert_mkfs(img, 1024, 8192, NULL);
	struct nostall_fs *fs;
	assert_int_equal(nostall_mount(img, NULL, 0, &fs), 0);
	char p[32];
	for (unsigned i = 0; i < n; i++) {
		snprintf(p, sizeof p, "/f%u", i);
		mkfile(fs, p, 3000 + i * 1000);
	}
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	mkfile(fs, "/d/g", 100);
	assert_int_equal(nostall_umount(fs), 0);
}

static void test_orphan_bitmap_free(void **state)
{
	(void)state;
	char img[300];
	snprintf(img, sizeof img, "%s/orphan.img", tmpdir);
	make_image(img, 4);
	/* Block 8191 (the last) is free and zero: no inode "in use". */
	assert_int_equal(fsimg_debugfs_w(img, "set_bg 0 inode_bitmap 8191"), 0);
	struct nostall_fs *fs;
	assert_int_equal(nostall_mount(img, "errors=continue", 0, &fs), 0);
	/* Each unlink frees an inode the bitmap calls free: reported, and
	 * the next one's orphan_add must not touch the previous struct. */
	assert_int_equal(nostall_unlink(fs, "/f0"), 0);
	assert_int_equal(nostall_unlink(fs, "/f1"), 0);
	assert_int_equal(nostall_unlink(fs, "/d/g"), 0);
	assert_int_equal(nostall_rmdir(fs, "/d"), 0);
	/* One still open across its unlink: evicted at the close. */
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "/f2", NOSTALL_O_RDWR, &f), 0);
	assert_int_equal(nostall_unlink(fs, "/f2"), 0);
	nostall_close(f);
	(void)nostall_umount(fs);
	assert_true(has_errors(img)); /* the inodes "already free" */
	/* The next mount meets the stale orphan list: reported, no crash;
	 * creating is refused (the bitmap calls the reserved inodes free). */
	assert_int_equal(nostall_mount(img, "errors=continue", 0, &fs), 0);
	assert_int_equal(nostall_create(fs, "/new", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f),
			 -EUCLEAN);
	assert_int_equal(nostall_unlink(fs, "/f3"), 0);
	(void)nostall_umount(fs);
	unlink(img);
}

static void test_dx_count_readdir(void **state)
{
	(void)state;
	enum { NAMES = 300 };
	char img[300], p[64];
	snprintf(img, sizeof img, "%s/dxcount.img", tmpdir);
	fsimg_assert_mkfs(img, 1024, 8192, NULL);
	struct nostall_fs *fs;
	assert_int_equal(nostall_mount(img, NULL, 0, &fs), 0);
	assert_int_equal(nostall_mkdir(fs, "/big", 0755), 0);
	for (unsigned i = 0; i < NAMES; i++) {
		snprintf(p, sizeof p, "/big/entry-with-a-longish-name-%u", i);
		mkfile(fs, p, 0);
	}
	assert_int_equal(nostall_umount(fs), 0);
	long long root = fsimg_num("", "debugfs -R 'bmap /big 0' '%s' 2>/dev/null", img);
	assert_true(root > 0);
	/* The root's count/limit at byte 32 (after "." and ".." and the
	 * 8-byte info): limit (1024 - 32) / 8; count := limit + 13. */
	int fd = open(img, O_RDWR);
	assert_true(fd >= 0);
	uint8_t cl[4];
	off_t at = (off_t)root * 1024 + 32;
	assert_int_equal(pread(fd, cl, 4, at), 4);
	assert_int_equal(cl[0] | cl[1] << 8, 124); /* an htree root */
	unsigned count = 124 + 13;
	cl[2] = (uint8_t)count;
	cl[3] = (uint8_t)(count >> 8);
	assert_int_equal(pwrite(fd, cl, 4, at), 4);
	close(fd);

	assert_int_equal(nostall_mount(img, NULL, NOSTALL_MOUNT_RDONLY, &fs), 0);
	struct nostall_dir *d;
	assert_int_equal(nostall_opendir(fs, "/big", &d), 0);
	struct nostall_dirent de;
	unsigned n = 0, named = 0;
	int rc;
	/* every name once, then the end (bounded: the bug never ended) */
	while (n < 20 * NAMES && (rc = nostall_dir_next(d, &de)) == 1) {
		n++;
		named += strncmp(de.name, "entry-", 6) == 0;
	}
	nostall_closedir(d);
	assert_int_equal(nostall_umount(fs), 0);
	assert_int_equal(named, NAMES);
	assert_int_equal(n, NAMES + 2); /* with "." and ".." */
	unlink(img);
}

int main(void)
{
	int orc = oracles_check("test_soak_corrupt", "mke2fs debugfs dumpe2fs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "soak_corrupt"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orphan_bitmap_free),
		cmocka_unit_test(test_dx_count_readdir),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
