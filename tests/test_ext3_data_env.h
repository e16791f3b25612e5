/* Shared by the file-data tests (test_ext3_data.c: writes, holes, the
 * page budget, concurrency, atime, streaming reads; test_ext3_data_order.c:
 * data=ordered's order on a log: device, fsync durability,
 * journal_async_commit): images made by mke2fs and debugfs in the group's
 * tmpdir, mounts, patterned buffers, e2fsck.
 */
#ifndef NOSTALL_TEST_EXT3_DATA_ENV_H
#define NOSTALL_TEST_EXT3_DATA_ENV_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"

#include "dev/dev.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "extfs/data/file_data.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024ull
#define MIB (1024ull * 1024)

static char tmpdir[256];

static const struct __attribute__((unused)) {
	const char *name;
	int mode;
} modes[] = {
	{"journal", EXT3_DATA_JOURNAL},
	{"ordered", EXT3_DATA_ORDERED},
	{"writeback", EXT3_DATA_WRITEBACK},
};
#define NMODES (sizeof modes / sizeof modes[0])

/* ---- helpers ---- */

static inline void fill(uint8_t *b, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 7;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

/* A fresh ext3 image with empty files f1..f<nfiles>. */
static inline void mkimg(const char *img, unsigned bs, unsigned mib, int nfiles)
{
	assert_int_equal(fsimg_run("mke2fs -q -t ext3 -b %u -F '%s' %uM >/dev/null 2>&1", bs, img, mib), 0);
	char cmds[300];
	snprintf(cmds, sizeof cmds, "%s/cmds", tmpdir);
	FILE *f = fopen(cmds, "w");
	assert_non_null(f);
	for (int i = 1; i <= nfiles; i++)
		fprintf(f, "write /dev/null f%d\n", i);
	fclose(f);
	assert_int_equal(fsimg_run("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmds, img), 0);
}

static inline struct ext3_fs *mount_spec(const char *spec, const char *opts, unsigned flags, struct dev **devp)
{
	struct dev *d = NULL;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	if (opts && ext3_mount_opts_parse(&o, opts))
		fail_msg("options %s: %s", opts, err_last(-EINVAL));
	struct ext3_fs *fs = NULL;
	rc = ext3_fs_mount(d, &o, flags, &fs);
	ext3_mount_opts_release(&o);
	if (rc)
		fail_msg("mount %s (%s): %s", spec, opts ? opts : "", err_last(rc));
	*devp = d;
	return fs;
}

static inline struct ext3_fs *mount_rw(const char *img, const char *opts, struct dev **devp)
{
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", img);
	return mount_spec(spec, opts, EXT3_MOUNT_JOURNAL, devp);
}

/* Mount spec with data=MODE, a long commit interval and `extra` options. */
static inline struct ext3_fs *mount_mode(const char *spec, const char *mode, const char *extra, struct dev **devp)
{
	char opts[200];
	snprintf(opts, sizeof opts, "data=%s,commit=60%s", mode, extra);
	return mount_spec(spec, opts, EXT3_MOUNT_JOURNAL, devp);
}

static inline void umount_ok(struct ext3_fs *fs, struct dev *d)
{
	int rc = ext3_fs_unmount(fs);
	if (rc)
		fail_msg("unmount: %s", err_last(rc));
	dev_close(d);
}

static inline struct ext3_inode *get(struct ext3_fs *fs, const char *path)
{
	uint32_t ino;
	int rc = ext3_path_lookup(fs, path, true, &ino);
	if (rc)
		fail_msg("lookup %s: %s", path, err_last(rc));
	struct ext3_inode *in;
	assert_int_equal(ext3_iget(fs, ino, &in), 0);
	return in;
}

static inline void wr(struct ext3_inode *in, const void *b, size_t n, uint64_t off)
{
	ssize_t w = ext3_file_write(in, b, n, off, 0, NULL);
	if (w != (ssize_t)n)
		fail_msg("write %zu at %llu: %zd (%s)", n, (unsigned long long)off, w,
			 w < 0 ? err_last((int)w) : "short");
}

/* Read [off, off+n) through the write path and compare with want (NULL:
 * zeroes). */
static inline void check_read(struct ext3_inode *in, const uint8_t *want, size_t n, uint64_t off)
{
	uint8_t *got = malloc(n ? n : 1);
	assert_non_null(got);
	ssize_t r = ext3_file_read(in, NULL, got, n, off);
	if (r != (ssize_t)n)
		fail_msg("read %zu at %llu: %zd", n, (unsigned long long)off, r);
	for (size_t i = 0; i < n; i++) {
		uint8_t w = want ? want[i] : 0;
		if (got[i] != w)
			fail_msg("byte %llu: got %u want %u", (unsigned long long)(off + i), got[i], w);
	}
	free(got);
}

/* The same through the read-only path (ext3_inode_pread). */
static inline void check_pread(struct ext3_fs *fs, struct ext3_inode *in, const uint8_t *want, size_t n,
			uint64_t off)
{
	uint8_t *got = malloc(n ? n : 1);
	assert_non_null(got);
	assert_int_equal(ext3_inode_pread(fs, in, got, n, off), (ssize_t)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t w = want ? want[i] : 0;
		if (got[i] != w)
			fail_msg("remount byte %llu: got %u want %u", (unsigned long long)(off + i), got[i], w);
	}
	free(got);
}

/* Data blocks debugfs counts for a file (holes are not counted). */
static inline int debugfs_blocks(const char *img, const char *path)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "debugfs -R 'blocks %s' '%s' 2>/dev/null", path, img);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int n = 0;
	char word[64];
	while (fscanf(p, "%63s", word) == 1)
		n++;
	pclose(p);
	return n;
}

static inline void fsck_clean(const char *img)
{
	int rc = fsimg_run("e2fsck -fn '%s' >%s/fsck.out 2>&1", img, tmpdir);
	if (rc != 0) {
		(void)fsimg_run("cat %s/fsck.out", tmpdir);
		fail_msg("e2fsck -fn: exit %d on %s", rc, img);
	}
}

static inline void tmpname(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", tmpdir, name);
}

/* ---- setup ---- */

static inline int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nostall-data-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static inline int group_teardown(void **state)
{
	(void)state;
	(void)fsimg_run("rm -rf '%s'", tmpdir);
	return 0;
}

#endif
