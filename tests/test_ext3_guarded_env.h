/* Shared by the data=guarded tests (test_ext3_guarded.c: the extents'
 * life, fsync, truncate, errors; test_ext3_guarded_load.c: eviction,
 * concurrency, dirty limits): images made by mke2fs in the test's tmpdir,
 * mounts on file: devices, patterned file contents and a snapshot of an
 * inode's guarded state.
 */
#ifndef NOSTALL_TEST_EXT3_GUARDED_ENV_H
#define NOSTALL_TEST_EXT3_GUARDED_ENV_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"
#include "lib/pagefs.h"

#include "api/api_int.h"
#include "blk/blk.h"
#include "dev/dev.h"
#include "extfs/core/ext3_int.h"
#include "extfs/data/guarded.h"
#include "jbd/jbd.h"
#include "nostall/nostall.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024ull

static char tmpdir[256];

static inline uint8_t pat(unsigned id, uint64_t off)
{
	uint64_t x = (off / 8 + 1) * 0x9e3779b97f4a7c15ull + (id + 1) * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 31;
	return (uint8_t)(x >> (8 * (off % 8)));
}

static inline void mkimg(const char *name, unsigned bs, unsigned kib, char *img, size_t n)
{
	snprintf(img, n, "%s/%s", tmpdir, name);
	assert_int_equal(fsimg_run("mke2fs -q -t ext3 -b %u -F '%s' %uk >/dev/null 2>&1", bs, img, kib), 0);
}

static inline void fsck_clean(const char *img)
{
	int rc = fsimg_run("e2fsck -fn '%s' >'%s/fsck.out' 2>&1", img, tmpdir);
	if (rc) {
		(void)fsimg_run("head -30 '%s/fsck.out'", tmpdir);
		fail_msg("e2fsck -fn %s: exit %d", img, rc);
	}
}

static inline struct nostall_fs *mnt_spec(const char *spec, const char *opts)
{
	struct dev *d;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open %s: %s", spec, err_last(rc));
	struct nostall_fs *fs;
	rc = nostall_mount_dev(d, opts, 0, &fs);
	if (rc)
		fail_msg("mount %s -o %s: %s", spec, opts ? opts : "", nostall_errmsg(rc));
	fs->own_dev = true; /* closed by the unmount */
	return fs;
}

static inline struct nostall_fs *mnt(const char *img, const char *opts)
{
	char spec[420];
	snprintf(spec, sizeof spec, "file:%s", img);
	return mnt_spec(spec, opts);
}

static inline void umnt(struct nostall_fs *fs)
{
	int rc = nostall_umount(fs);
	if (rc)
		fail_msg("umount: %s", nostall_errmsg(rc));
}

static inline void put(struct nostall_fs *fs, const char *path, unsigned id, uint64_t off, size_t len)
{
	uint8_t *b = malloc(len);
	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = pat(id, off + i);
	int fd = nostall_fd_open(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
	if (fd < 0)
		fail_msg("open %s: %s", path, nostall_errmsg(fd));
	ssize_t w = nostall_fd_pwrite(fs, fd, b, len, off);
	if (w != (ssize_t)len)
		fail_msg("write %s: %zd", path, w);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	free(b);
}

static inline int fsync_path(struct nostall_fs *fs, const char *path)
{
	int fd = nostall_fd_open(fs, path, NOSTALL_O_RDONLY, 0);
	assert_true(fd >= 0);
	int rc = nostall_fd_fsync(fs, fd, 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	return rc;
}

/* The file holds pattern id over [0, len) (holes: [hlo, hhi) zeroes). */
static inline void check(struct nostall_fs *fs, const char *path, unsigned id, uint64_t len, uint64_t hlo,
		  uint64_t hhi)
{
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, path, 0, &st), 0);
	if (st.size != len)
		fail_msg("%s: size %llu, want %llu", path, (unsigned long long)st.size,
			 (unsigned long long)len);
	uint8_t *b = malloc(len ? len : 1);
	assert_non_null(b);
	int fd = nostall_fd_open(fs, path, NOSTALL_O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_pread(fs, fd, b, len, 0), (ssize_t)len);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	for (uint64_t o = 0; o < len; o++) {
		uint8_t want = o >= hlo && o < hhi ? 0 : pat(id, o);
		if (b[o] != want)
			fail_msg("%s byte %llu: %u, want %u", path, (unsigned long long)o, b[o], want);
	}
	free(b);
}

/* The in-memory inode of path (referenced: ext3_iput it). */
static inline struct ext3_inode *inode_of(struct nostall_fs *fs, const char *path)
{
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, path, 0, &st), 0);
	struct ext3_inode *in;
	assert_int_equal(ext3_iget(fs->e, (uint32_t)st.ino, &in), 0);
	return in;
}

struct snap {
	uint64_t size, disksize;
	bool orphan, ordered;
	size_t extents;
};

static inline struct snap snap_of(struct nostall_fs *fs, const char *path)
{
	struct ext3_inode *in = inode_of(fs, path);
	struct snap s;
	pthread_rwlock_rdlock(&in->lock);
	s.size = in->i_size;
	s.disksize = in->i_disksize;
	s.orphan = in->on_orphan;
	s.ordered = in->jinode != NULL;
	pthread_rwlock_unlock(&in->lock);
	s.extents = ext3_guarded_inode_extents(in);
	ext3_iput(in);
	return s;
}

#endif
