/* Device write errors under the filesystem, through the public API on a
 * fault: device (docs/devices.md), issue 8: "An injected write error on
 * data and on journal blocks gives the documented errno, the journal aborts
 * (-EROFS after) where Linux's would, and e2fsck recovers an image with
 * every committed transaction."
 *
 * - data blocks, data=ordered|writeback, data_err=ignore (2.6.30's
 *   default): a file's blocks are known (nostall_bmap), the image is
 *   mounted over fault:file:IMG,op=write,sector=<those blocks>; an
 *   overwrite + fsync returns -EIO, the journal does NOT abort (a mkdir,
 *   another file's write and fsync work), the unmount is clean and e2fsck
 *   -fn passes. In data=ordered the error met by a commit (another file's
 *   fsync commits the victim's dirty data first) is reported by the
 *   victim's next fsync.
 * - data_err=abort, data=ordered: the same commit-time data error aborts
 *   the journal: the fsync that forced the commit fails, later changes get
 *   -EROFS; e2fsck -y then -fn recovers the image with every transaction
 *   committed before (their files read back).
 * - journal blocks: writes into the journal's blocks start failing after a
 *   few commits: the fsync that meets it returns -EIO, the journal aborts,
 *   later writes, creates and fsyncs get -EROFS; nothing hangs; e2fsck -y
 *   then -fn recovers an image holding every file whose fsync returned 0
 *   (with its data), and so does nostall's own mount of the same image.
 * 1 KiB and 4 KiB blocks. Deterministic. mke2fs, e2fsck and debugfs must
 * be installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "dev/dev.h"
#include "nostall/nostall.h"
#include "util/err.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KIB 1024ull
/* 8 blocks: all direct, so contiguous with no indirect block among them */
#define VICTIM_BLOCKS 8u

static char tmpdir[256];

static uint8_t pat(unsigned id, uint64_t off)
{
	uint64_t x = (off / 8) * 0x9e3779b97f4a7c15ull + (id + 1) * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off % 8)));
}

/* Write [off, off+len) of pattern id; fsync if asked. Returns the write's,
 * else the fsync's, else the close's result. */
static int put(struct nostall_fs *fs, const char *path, unsigned id, uint64_t off, size_t len,
	       bool sync)
{
	uint8_t *b = malloc(len);
	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = pat(id, off + i);
	int fd = nostall_fd_open(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
	if (fd < 0) {
		free(b);
		return fd;
	}
	ssize_t w = nostall_fd_pwrite(fs, fd, b, len, off);
	int rc = w < 0 ? (int)w : w != (ssize_t)len ? -EIO : 0;
	if (!rc && sync)
		rc = nostall_fd_fsync(fs, fd, 0);
	int crc = nostall_fd_close(fs, fd);
	free(b);
	return rc ? rc : crc;
}

static void check(struct nostall_fs *fs, const char *path, unsigned id, uint64_t size)
{
	int fd = nostall_fd_open(fs, path, NOSTALL_O_RDONLY, 0);
	if (fd < 0)
		fail_msg("open %s: %s", path, nostall_errmsg(fd));
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	if (st.size != size)
		fail_msg("%s: size %llu, want %llu", path, (unsigned long long)st.size,
			 (unsigned long long)size);
	uint8_t *b = malloc(size ? size : 1);
	assert_non_null(b);
	assert_int_equal(nostall_fd_pread(fs, fd, b, size, 0), (ssize_t)size);
	for (uint64_t i = 0; i < size; i++)
		if (b[i] != pat(id, i))
			fail_msg("%s: byte %llu differs", path, (unsigned long long)i);
	free(b);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
}

/* Sectors [*lo, *hi] of the file's blocks (they must be contiguous). */
static void file_sectors(const char *img, const char *path, unsigned bs, uint64_t *lo, uint64_t *hi)
{
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, path, 0, &f), 0);
	uint64_t first = 0, prev = 0;
	for (uint64_t l = 0; l < VICTIM_BLOCKS; l++) {
		uint64_t p;
		assert_int_equal(nostall_bmap(f, l, &p), 0);
		assert_true(p != 0);
		if (l == 0)
			first = p;
		else
			assert_int_equal(p, prev + 1);
		prev = p;
	}
	nostall_close(f);
	fsimg_api_umount(fs);
	*lo = first * (bs / 512);
	*hi = (prev + 1) * (bs / 512) - 1;
}

/* ------------------------------------------------------------ data blocks */

static void data_case(unsigned bs, const char *mode)
{
	char img[300], spec[600], opts[64];
	snprintf(img, sizeof img, "%s/data.img", tmpdir);
	fsimg_assert_mkfs(img, bs, 16384, NULL);
	snprintf(opts, sizeof opts, "data=%s", mode);
	struct nostall_fs *fs = fsimg_api_mount(img, opts, 0);
	assert_int_equal(put(fs, "/victim", 1, 0, VICTIM_BLOCKS * bs, true), 0);
	assert_int_equal(put(fs, "/other", 2, 0, 8 * KIB, true), 0);
	fsimg_api_umount(fs);
	uint64_t lo, hi;
	file_sectors(img, "/victim", bs, &lo, &hi);

	snprintf(spec, sizeof spec, "fault:file:%s,op=write,sector=%llu-%llu,err=eio", img,
		 (unsigned long long)lo, (unsigned long long)hi);
	fs = fsimg_api_mount(spec, opts, 0);
	/* 1: the file's own fsync writes its data: -EIO */
	assert_int_equal(put(fs, "/victim", 3, 0, 2 * KIB, true), -EIO);
	/* the journal is fine: metadata and other files go on */
	assert_int_equal(nostall_mkdir(fs, "/after", 0755), 0);
	assert_int_equal(put(fs, "/after/new", 4, 0, 12 * KIB, true), 0);
	/* 2: a commit meets the victim's dirty data (ordered: the commit
	 * writes it; writeback: it stays dirty until the victim's fsync) */
	assert_int_equal(put(fs, "/victim", 5, 3 * KIB, 2 * KIB, false), 0);
	assert_int_equal(nostall_mkdir(fs, "/after/d2", 0755), 0);
	assert_int_equal(nostall_fsync_ino(fs, NOSTALL_ROOT_INO, 0), 0);
	int fd = nostall_fd_open(fs, "/victim", NOSTALL_O_WRONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_fsync(fs, fd, 0), -EIO);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(put(fs, "/after/new2", 6, 0, 3 * KIB, true), 0);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	check(fs, "/other", 2, 8 * KIB);
	check(fs, "/after/new", 4, 12 * KIB);
	check(fs, "/after/new2", 6, 3 * KIB);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/victim", 0, &st), 0);
	assert_int_equal(st.size, VICTIM_BLOCKS * bs);
	fsimg_api_umount(fs);
	unlink(img);
}

static void test_data_ordered_1k(void **state)
{
	data_case(1024, "ordered");
}

static void test_data_ordered_4k(void **state)
{
	data_case(4096, "ordered");
}

static void test_data_writeback_1k(void **state)
{
	data_case(1024, "writeback");
}

/* data_err=abort: the commit's ordered-data error aborts the journal. */
static void data_abort_case(unsigned bs)
{
	char img[300], spec[600];
	snprintf(img, sizeof img, "%s/abort.img", tmpdir);
	fsimg_assert_mkfs(img, bs, 16384, NULL);
	const char *opts = "data=ordered,data_err=abort";
	struct nostall_fs *fs = fsimg_api_mount(img, opts, 0);
	assert_int_equal(put(fs, "/victim", 1, 0, VICTIM_BLOCKS * bs, true), 0);
	fsimg_api_umount(fs);
	uint64_t lo, hi;
	file_sectors(img, "/victim", bs, &lo, &hi);
	snprintf(spec, sizeof spec, "fault:file:%s,op=write,sector=%llu-%llu,err=eio", img,
		 (unsigned long long)lo, (unsigned long long)hi);
	fs = fsimg_api_mount(spec, opts, 0);
	assert_int_equal(put(fs, "/before", 2, 0, 10 * KIB, true), 0);
	/* dirty victim data, then a commit forced by another file */
	assert_int_equal(put(fs, "/victim", 3, 0, 2 * KIB, false), 0);
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	int rc = put(fs, "/d/f", 4, 0, 2 * KIB, true);
	if (rc != -EIO)
		fail_msg("fsync forcing a commit over a data error: %d, want -EIO", rc);
	assert_int_equal(nostall_mkdir(fs, "/later", 0755), -EROFS);
	assert_int_equal(put(fs, "/before", 2, 0, 10 * KIB, false), -EROFS);
	assert_int_equal(nostall_fd_open(fs, "/x", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644), -EROFS);
	(void)nostall_umount(fs); /* an error, but the mount is gone */
	fsimg_assert_repaired(img);
	fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	check(fs, "/before", 2, 10 * KIB);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/later", 0, &st), -ENOENT);
	fsimg_api_umount(fs);
	unlink(img);
}

static void test_data_err_abort_1k(void **state)
{
	data_abort_case(1024);
}

static void test_data_err_abort_4k(void **state)
{
	data_abort_case(4096);
}

/* ------------------------------------------------------------ journal */

/* Physical block of the journal's logical block l (debugfs). */
static uint64_t journal_bmap(const char *img, uint64_t l)
{
	char cmd[700], line[128] = "";
	snprintf(cmd, sizeof cmd, "debugfs -R 'bmap <8> %llu' '%s' 2>/dev/null", (unsigned long long)l,
		 img);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(line, sizeof line, p))
		line[0] = 0;
	pclose(p);
	uint64_t v = strtoull(line, NULL, 0);
	assert_true(v > 0);
	return v;
}

#define NFILES 40

static void journal_case(unsigned bs, const char *mode)
{
	char img[300], copy[320], spec[600], opts[64];
	snprintf(img, sizeof img, "%s/journal.img", tmpdir);
	snprintf(copy, sizeof copy, "%s/journal.nostall", tmpdir);
	fsimg_assert_mkfs(img, bs, 16384, NULL);
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	struct nostall_stat st;
	assert_int_equal(nostall_stat_ino(fs, 8, &st), 0);
	fsimg_api_umount(fs);
	uint64_t jblocks = st.size / bs;
	uint64_t j0 = journal_bmap(img, 0), jn = journal_bmap(img, jblocks - 1);
	assert_true(jn > j0);
	/* block 0 is the journal superblock: the log area is the rest (its
	 * range may hold the journal inode's indirect blocks: never written
	 * while mounted); the first 6 writes into it pass (a few commits) */
	snprintf(spec, sizeof spec, "fault:file:%s,op=write,sector=%llu-%llu,after=6,err=eio", img,
		 (unsigned long long)((j0 + 1) * (bs / 512)),
		 (unsigned long long)((jn + 1) * (bs / 512) - 1));
	snprintf(opts, sizeof opts, "data=%s", mode);
	fs = fsimg_api_mount(spec, opts, 0);
	char p[32];
	int done = 0, rc = 0;
	for (; done < NFILES; done++) {
		snprintf(p, sizeof p, "/f%d", done);
		rc = put(fs, p, 10 + (unsigned)done, 0, (size_t)(1 + done) * 1500, true);
		if (rc)
			break;
	}
	if (done == NFILES)
		fail_msg("no error in %d fsyncs: the journal range is wrong", NFILES);
	if (rc != -EIO)
		fail_msg("the fsync meeting the journal write error: %d (%s), want -EIO", rc,
			 nostall_errmsg(rc));
	assert_true(done >= 1);
	/* aborted: every change is -EROFS now, nothing hangs */
	assert_int_equal(nostall_mkdir(fs, "/later", 0755), -EROFS);
	assert_int_equal(nostall_fd_open(fs, "/x", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644), -EROFS);
	assert_int_equal(put(fs, "/f0", 10, 0, 100, false), -EROFS);
	assert_int_equal(nostall_unlink(fs, "/f0"), -EROFS);
	assert_int_equal(nostall_rename(fs, "/f0", "/g0", 0), -EROFS);
	rc = nostall_sync(fs);
	assert_true(rc == -EROFS || rc == -EIO);
	/* reads still work */
	assert_int_equal(nostall_stat(fs, "/f0", 0, &st), 0);
	(void)nostall_umount(fs);

	/* nostall's mount and e2fsck both recover every committed file */
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", img, copy), 0);
	fs = fsimg_api_mount(copy, opts, 0);
	for (int i = 0; i < done; i++) {
		snprintf(p, sizeof p, "/f%d", i);
		check(fs, p, 10 + (unsigned)i, (size_t)(1 + i) * 1500);
	}
	fsimg_api_umount(fs);
	fsimg_assert_clean(copy);
	fsimg_assert_repaired(img);
	fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	for (int i = 0; i < done; i++) {
		snprintf(p, sizeof p, "/f%d", i);
		check(fs, p, 10 + (unsigned)i, (size_t)(1 + i) * 1500);
	}
	assert_int_equal(nostall_stat(fs, "/later", 0, &st), -ENOENT);
	fsimg_api_umount(fs);
	unlink(img);
	unlink(copy);
}

static void test_journal_ordered_1k(void **state)
{
	journal_case(1024, "ordered");
}

static void test_journal_journal_4k(void **state)
{
	journal_case(4096, "journal");
}

static void test_journal_writeback_4k(void **state)
{
	journal_case(4096, "writeback");
}

int main(void)
{
	int orc = oracles_check("test_fs_fault", "mke2fs e2fsck debugfs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "fsfault"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data_ordered_1k),    cmocka_unit_test(test_data_ordered_4k),
		cmocka_unit_test(test_data_writeback_1k),  cmocka_unit_test(test_data_err_abort_1k),
		cmocka_unit_test(test_data_err_abort_4k),  cmocka_unit_test(test_journal_ordered_1k),
		cmocka_unit_test(test_journal_journal_4k), cmocka_unit_test(test_journal_writeback_4k),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
