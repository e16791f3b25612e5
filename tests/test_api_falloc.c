/* fallocate through the public API (nostall_fallocate, docs/api.md) on an
 * ext4 image (mkfs.ext4, extent files), in every data mode: mode 0 and
 * KEEP_SIZE (unwritten extents: zeros, i_blocks, the size), data written
 * into an unwritten range (a partial block, read back before and after a
 * remount), PUNCH_HOLE and ZERO_RANGE over written data (clean or still
 * dirty in the page cache), SEEK_DATA / SEEK_HOLE over each, the errors of
 * vfs_fallocate / ext4_fallocate, -EOPNOTSUPP on an ext3 (indirect) file,
 * -ENOSPC leaving a consistent image, random operations against a model,
 * four threads on one file. e2fsck -fn after every umount.
 *
 * Oracles: mkfs.ext4, e2fsck.
 * nostall-test: concurrent */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/fstarget_nostall.h"
#include "lib/oracles.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BS 4096u
#define UNITS (BS / 512)

static char tmpdir[256], img[300];
static const char *const modes[] = { "data=ordered", "data=guarded", "data=writeback", "data=journal" };
#define NMODES (sizeof modes / sizeof modes[0])

/* An ext4 image of the features nostall writes (no metadata_csum, 32-bit). */
static void mkfs_ext4(unsigned mib)
{
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F -b %u -O ^metadata_csum,^64bit,^uninit_bg,^huge_file,^dir_nlink,^extra_isize '%s' %uM "
				   ">/dev/null 2>&1",
				   BS, img, mib),
			 0);
}

static int setup(void **state)
{
	snprintf(img, sizeof img, "%s/falloc.img", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	unlink(img);
	return 0;
}

static struct nostall_file *open_rw(struct nostall_fs *fs, const char *path)
{
	struct nostall_file *f = NULL;
	int rc = nostall_create(fs, path, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f);
	if (rc)
		fail_msg("create %s: %s", path, nostall_errmsg(rc));
	return f;
}

static struct nostall_stat fstat_of(struct nostall_file *f)
{
	struct nostall_stat st;
	assert_int_equal(nostall_fstat(f, &st), 0);
	return st;
}

/* The file's bytes [0, len) equal want. */
static void assert_bytes(struct nostall_file *f, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len + 1);
	assert_non_null(got);
	assert_int_equal(nostall_pread(f, got, len + 1, 0), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			fail_msg("byte %zu: %#x, want %#x", i, got[i], want[i]);
	free(got);
}

static void umount_clean(struct nostall_fs *fs)
{
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
}

/* Mode 0 and KEEP_SIZE: unwritten extents read as zeros, count in
 * st_blocks, are holes to SEEK_DATA; data written into them lands. */
static void test_alloc(void **state)
{
	for (size_t mi = 0; mi < NMODES; mi++) {
		mkfs_ext4(32);
		struct nostall_fs *fs = fsimg_api_mount(img, modes[mi], 0);
		struct nostall_file *f = open_rw(fs, "/a");
		/* mode 0: 100 .. 100 + 5000: blocks 0 and 1, size 5100 */
		assert_int_equal(nostall_fallocate(f, 0, 100, 5000), 0);
		struct nostall_stat st = fstat_of(f);
		assert_int_equal(st.size, 5100);
		assert_int_equal(st.blocks, 2 * UNITS);
		/* (SEEK first: a page read from an unwritten extent counts
		 * as data afterwards, as in the kernel) */
		assert_int_equal(nostall_lseek(f, 0, SEEK_DATA), -ENXIO);
		assert_int_equal(nostall_lseek(f, 0, SEEK_HOLE), 0);
		uint8_t *want = calloc(1, 64 * BS);
		assert_non_null(want);
		assert_bytes(f, want, 5100);
		/* KEEP_SIZE past the end: 8 more blocks, the size stays */
		assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_KEEP_SIZE, 2 * BS, 8 * BS), 0);
		st = fstat_of(f);
		assert_int_equal(st.size, 5100);
		assert_int_equal(st.blocks, 10 * UNITS);
		/* again over the same range: nothing new */
		assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_KEEP_SIZE, 0, 10 * BS), 0);
		assert_int_equal(fstat_of(f).blocks, 10 * UNITS);
		/* a partial block written in the unwritten range (block 3) */
		memcpy(want + 3 * BS + 1000, "unwritten no more", 17);
		assert_int_equal(nostall_pwrite(f, "unwritten no more", 17, 3 * BS + 1000), 17);
		assert_int_equal(fstat_of(f).size, 3 * BS + 1017);
		assert_int_equal(fstat_of(f).blocks, 10 * UNITS);
		/* data at block 3 (block 2 has no page; the zeros read above
		 * are uptodate pages of blocks 0 and 1) */
		assert_int_equal(nostall_lseek(f, 2 * BS, SEEK_DATA), 3 * BS);
		assert_int_equal(nostall_lseek(f, 3 * BS, SEEK_HOLE), 3 * BS + 1017);
		assert_bytes(f, want, 3 * BS + 1017);
		nostall_close(f);
		umount_clean(fs);
		/* after a remount: the same bytes; the blocks past the end stay */
		fs = fsimg_api_mount(img, modes[mi], 0);
		f = open_rw(fs, "/a");
		assert_int_equal(nostall_lseek(f, 0, SEEK_DATA), 3 * BS);
		assert_int_equal(nostall_lseek(f, 0, SEEK_HOLE), 0);
		assert_bytes(f, want, 3 * BS + 1017);
		assert_int_equal(fstat_of(f).blocks, 10 * UNITS);
		/* a truncate, to the same size too, frees the blocks past it
		 * (ext4_setattr) */
		assert_int_equal(nostall_ftruncate(f, 3 * BS + 1017), 0);
		assert_int_equal(fstat_of(f).blocks, 4 * UNITS);
		nostall_close(f);
		umount_clean(fs);
		free(want);
	}
}

/* 8 blocks of a pattern, synced or left dirty. */
static uint8_t *pattern_file(struct nostall_file *f, bool sync)
{
	uint8_t *want = malloc(8 * BS);
	assert_non_null(want);
	for (size_t i = 0; i < 8 * BS; i++)
		want[i] = (uint8_t)(i * 7 + i / BS + 1);
	assert_int_equal(nostall_pwrite(f, want, 8 * BS, 0), (ssize_t)(8 * BS));
	if (sync)
		assert_int_equal(nostall_fsync(f, 0), 0);
	return want;
}

/* PUNCH_HOLE: edges zeroed, whole blocks freed, holes to SEEK. */
static void test_punch(void **state)
{
	for (size_t mi = 0; mi < NMODES; mi++) {
		for (int sync = 0; sync < 2; sync++) {
			mkfs_ext4(32);
			struct nostall_fs *fs = fsimg_api_mount(img, modes[mi], 0);
			struct nostall_file *f = open_rw(fs, "/p");
			uint8_t *want = pattern_file(f, sync);
			int mode = NOSTALL_FALLOC_PUNCH_HOLE | NOSTALL_FALLOC_KEEP_SIZE;
			/* [BS/2, 5 BS + 10): blocks 1..4 go, 0 and 5 zeroed in part */
			assert_int_equal(nostall_fallocate(f, mode, BS / 2, 4 * BS + BS / 2 + 10), 0);
			memset(want + BS / 2, 0, 4 * BS + BS / 2 + 10);
			struct nostall_stat st = fstat_of(f);
			assert_int_equal(st.size, 8 * BS);
			assert_int_equal(st.blocks, 4 * UNITS);
			assert_bytes(f, want, 8 * BS);
			assert_int_equal(nostall_lseek(f, 0, SEEK_HOLE), BS);
			assert_int_equal(nostall_lseek(f, BS, SEEK_DATA), 5 * BS);
			/* inside one block: only zeroes */
			assert_int_equal(nostall_fallocate(f, mode, 6 * BS + 5, 100), 0);
			memset(want + 6 * BS + 5, 0, 100);
			assert_int_equal(fstat_of(f).blocks, 4 * UNITS);
			/* past the end: nothing; over the end: to the end */
			assert_int_equal(nostall_fallocate(f, mode, 9 * BS, BS), 0);
			assert_int_equal(nostall_fallocate(f, mode, 7 * BS, 4 * BS), 0);
			memset(want + 7 * BS, 0, BS);
			assert_int_equal(fstat_of(f).blocks, 3 * UNITS);
			assert_int_equal(fstat_of(f).size, 8 * BS);
			assert_bytes(f, want, 8 * BS);
			/* writing into the hole again */
			assert_int_equal(nostall_pwrite(f, "again", 5, 2 * BS + 3), 5);
			memcpy(want + 2 * BS + 3, "again", 5);
			assert_int_equal(fstat_of(f).blocks, 4 * UNITS);
			nostall_close(f);
			umount_clean(fs);
			fs = fsimg_api_mount(img, modes[mi], 0);
			f = open_rw(fs, "/p");
			assert_bytes(f, want, 8 * BS);
			nostall_close(f);
			umount_clean(fs);
			free(want);
		}
	}
}

/* ZERO_RANGE: edges zeroed, whole blocks unwritten (still allocated), the
 * size grows unless KEEP_SIZE. */
static void test_zero(void **state)
{
	for (size_t mi = 0; mi < NMODES; mi++) {
		for (int sync = 0; sync < 2; sync++) {
			mkfs_ext4(32);
			struct nostall_fs *fs = fsimg_api_mount(img, modes[mi], 0);
			struct nostall_file *f = open_rw(fs, "/z");
			uint8_t *want = realloc(pattern_file(f, sync), 12 * BS);
			assert_non_null(want);
			int mode = NOSTALL_FALLOC_ZERO_RANGE | NOSTALL_FALLOC_KEEP_SIZE;
			assert_int_equal(nostall_fallocate(f, mode, BS / 2, 4 * BS + BS / 2 + 10), 0);
			memset(want + BS / 2, 0, 4 * BS + BS / 2 + 10);
			struct nostall_stat st = fstat_of(f);
			assert_int_equal(st.size, 8 * BS);
			assert_int_equal(st.blocks, 8 * UNITS);
			assert_bytes(f, want, 8 * BS);
			assert_int_equal(nostall_lseek(f, 0, SEEK_HOLE), BS);
			assert_int_equal(nostall_lseek(f, BS, SEEK_DATA), 5 * BS);
			/* without KEEP_SIZE past the end: the size grows, the
			 * blocks are allocated (unwritten) */
			assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_ZERO_RANGE, 7 * BS + 100, 3 * BS), 0);
			memset(want + 7 * BS + 100, 0, 5 * BS - 100);
			st = fstat_of(f);
			assert_int_equal(st.size, 10 * BS + 100);
			assert_int_equal(st.blocks, 11 * UNITS);
			assert_bytes(f, want, 10 * BS + 100);
			assert_int_equal(nostall_pwrite(f, "xyz", 3, 9 * BS + 7), 3);
			memcpy(want + 9 * BS + 7, "xyz", 3);
			nostall_close(f);
			umount_clean(fs);
			fs = fsimg_api_mount(img, modes[mi], 0);
			f = open_rw(fs, "/z");
			assert_bytes(f, want, 10 * BS + 100);
			/* the write split [8, 11) unwritten in three: six
			 * extents, more than the inode holds: a leaf block */
			assert_int_equal(fstat_of(f).blocks, 12 * UNITS);
			nostall_close(f);
			umount_clean(fs);
			free(want);
		}
	}
}

static void test_errors(void **state)
{
	mkfs_ext4(32);
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_file *f = open_rw(fs, "/e");
	const int keep = NOSTALL_FALLOC_KEEP_SIZE, punch = NOSTALL_FALLOC_PUNCH_HOLE | keep;
	assert_int_equal(nostall_fallocate(f, 0, 0, 0), -EINVAL);
	assert_int_equal(nostall_fallocate(f, 0, -1, 10), -EINVAL);
	assert_int_equal(nostall_fallocate(f, 0, 0, -5), -EINVAL);
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_PUNCH_HOLE, 0, 10), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, punch | NOSTALL_FALLOC_ZERO_RANGE, 0, 10), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, 0x08 /* COLLAPSE_RANGE */, 0, BS), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, 0x20 /* INSERT_RANGE */, 0, BS), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, 0x80, 0, BS), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, 0, INT64_MAX - 10, 5), -EFBIG);
	assert_int_equal(nostall_fallocate(f, 0, (int64_t)1 << 44, BS), -EFBIG);
	nostall_close(f);
	/* no write access */
	struct nostall_file *r;
	assert_int_equal(nostall_open(fs, "/e", NOSTALL_O_RDONLY, &r), 0);
	assert_int_equal(nostall_fallocate(r, 0, 0, BS), -EBADF);
	nostall_close(r);
	/* the descriptor variant */
	int fd = nostall_fd_open(fs, "/e", NOSTALL_O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_fallocate(fs, fd, 0, 0, 3 * BS), 0);
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	assert_int_equal(st.size, 3 * BS);
	assert_int_equal(nostall_fd_fallocate(fs, fd, 0, 0, 0), -EINVAL);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_fd_fallocate(fs, fd, 0, 0, BS), -EBADF);
	/* append-only: allocation only; immutable: nothing */
	assert_int_equal(nostall_setflags(fs, "/e", 0, NOSTALL_FL_APPEND), 0);
	assert_int_equal(nostall_open(fs, "/e", NOSTALL_O_WRONLY | NOSTALL_O_APPEND, &f), 0);
	assert_int_equal(nostall_fallocate(f, keep, 0, 8 * BS), 0);
	assert_int_equal(nostall_fallocate(f, punch, 0, BS), -EPERM);
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_ZERO_RANGE, 0, BS), -EPERM);
	nostall_close(f);
	assert_int_equal(nostall_setflags(fs, "/e", 0, 0), 0);
	f = open_rw(fs, "/e");
	assert_int_equal(nostall_setflags(fs, "/e", 0, NOSTALL_FL_IMMUTABLE), 0);
	assert_int_equal(nostall_fallocate(f, 0, 0, BS), -EPERM);
	assert_int_equal(nostall_setflags(fs, "/e", 0, 0), 0);
	nostall_close(f);
	umount_clean(fs);
}

/* ext3 (indirect-mapped files): -EOPNOTSUPP, as the kernel for allocation. */
static void test_indirect(void **state)
{
	assert_int_equal(fst_nostall_mkfs(img, 1024, 16u << 20), 0);
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_file *f = open_rw(fs, "/i");
	assert_int_equal(nostall_pwrite(f, "data", 4, 0), 4);
	assert_int_equal(nostall_fallocate(f, 0, 0, 4096), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_KEEP_SIZE, 0, 4096), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_ZERO_RANGE, 0, 4096), -EOPNOTSUPP);
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_PUNCH_HOLE | NOSTALL_FALLOC_KEEP_SIZE, 0, 4096),
			 -EOPNOTSUPP);
	/* SEEK on the indirect map as before */
	assert_int_equal(nostall_lseek(f, 0, SEEK_DATA), 0);
	assert_int_equal(nostall_lseek(f, 0, SEEK_HOLE), 4);
	nostall_close(f);
	umount_clean(fs);
}

/* More than the free space: -ENOSPC, what was allocated stays (unwritten,
 * counted), the image stays clean, the space comes back with a truncate. */
static void test_enospc(void **state)
{
	mkfs_ext4(16);
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_file *f = open_rw(fs, "/big");
	assert_int_equal(nostall_fallocate(f, 0, 0, 64ll << 20), -ENOSPC);
	struct nostall_stat st = fstat_of(f);
	assert_true(st.blocks > 0);
	assert_true(st.size <= 64ull << 20);
	assert_int_equal(st.size % BS, 0);
	uint8_t buf[4096], zero[4096] = { 0 };
	assert_int_equal(nostall_pread(f, buf, sizeof buf, 0), (ssize_t)sizeof buf);
	assert_memory_equal(buf, zero, sizeof buf);
	nostall_close(f);
	umount_clean(fs);
	fs = fsimg_api_mount(img, NULL, 0);
	assert_int_equal(nostall_truncate(fs, "/big", 0), 0);
	umount_clean(fs);
}

/* More than an unwritten extent holds (32767 blocks): several extents,
 * every block still unwritten (zeros; no data to SEEK_DATA), e2fsck clean. */
static void test_long(void **state)
{
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F -b %u -O ^metadata_csum,^64bit,^uninit_bg,^huge_file,"
				   "^dir_nlink,^extra_isize '%s' 1G >/dev/null 2>&1",
				   BS, img),
			 0);
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_file *f = open_rw(fs, "/long");
	const uint64_t n = 200000; /* blocks: whole groups of data (flex_bg), 32767 + 1 */
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_KEEP_SIZE, 0, (int64_t)(n * BS)), 0);
	/* growing over them keeps them (a truncate frees only past the size) */
	assert_int_equal(nostall_ftruncate(f, n * BS), 0);
	struct nostall_stat st = fstat_of(f);
	assert_int_equal(st.size, n * BS);
	assert_true(st.blocks >= n * UNITS);
	assert_int_equal(nostall_lseek(f, 0, SEEK_DATA), -ENXIO);
	static const uint64_t probe[] = { 0, 32767, 32768, 94054, 94055, 94056, 150000, 199999 };
	uint8_t buf[BS], zero[BS] = { 0 };
	for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
		assert_int_equal(nostall_pread(f, buf, BS, probe[i] * BS), (ssize_t)BS);
		assert_memory_equal(buf, zero, BS);
	}
	nostall_close(f);
	umount_clean(fs);
}

/* fallocate beside readers, seekers and a writer of the same file (one
 * mount, four threads): every call succeeds, reads see whole blocks of one
 * pattern or zeros, the image is clean after. */
struct conc {
	struct nostall_fs *fs;
	int id;
	_Atomic int stop;
	int errors;
};

static void *conc_run(void *arg)
{
	struct conc *c = arg;
	struct nostall_file *f = open_rw(c->fs, "/c");
	uint64_t s = 0x1234 + (uint64_t)c->id;
	uint8_t *buf = malloc(4 * BS);
	for (int i = 0; i < 150; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t blk = (s >> 33) % 60, n = 1 + (s >> 40) % 4;
		int rc = 0;
		switch (c->id) {
		case 0: { /* fallocate, every mode */
			static const int m[] = { 0, NOSTALL_FALLOC_KEEP_SIZE,
						 NOSTALL_FALLOC_PUNCH_HOLE | NOSTALL_FALLOC_KEEP_SIZE,
						 NOSTALL_FALLOC_ZERO_RANGE, NOSTALL_FALLOC_ZERO_RANGE | NOSTALL_FALLOC_KEEP_SIZE };
			rc = nostall_fallocate(f, m[(s >> 20) % 5], (int64_t)(blk * BS), (int64_t)(n * BS));
			break;
		}
		case 1: /* whole blocks of one byte */
			memset(buf, (int)(1 + blk % 250), n * BS);
			rc = nostall_pwrite(f, buf, n * BS, blk * BS) == (ssize_t)(n * BS) ? 0 : -EIO;
			break;
		case 2: { /* reads: each block all one byte (or zero) */
			ssize_t r = nostall_pread(f, buf, n * BS, blk * BS);
			if (r < 0)
				rc = (int)r;
			for (ssize_t b = 0; b + (ssize_t)BS <= r && !rc; b += BS)
				for (unsigned k = 1; k < BS; k++)
					if (buf[b + k] != buf[b]) {
						rc = -EILSEQ;
						break;
					}
			break;
		}
		default: { /* seeks */
			int64_t r = nostall_lseek(f, (int64_t)(blk * BS), (s >> 30) & 1 ? SEEK_DATA : SEEK_HOLE);
			rc = r >= 0 || r == -ENXIO ? 0 : (int)r;
			break;
		}
		}
		if (rc) {
			print_message("thread %d, op %d: %d\n", c->id, i, rc);
			c->errors++;
		}
	}
	free(buf);
	nostall_close(f);
	return NULL;
}

static void test_concurrent(void **state)
{
	mkfs_ext4(32);
	struct nostall_fs *fs = fsimg_api_mount(img, "data=guarded", 0);
	struct nostall_file *f = open_rw(fs, "/c");
	nostall_close(f);
	struct conc c[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (struct conc){ .fs = fs, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, conc_run, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].errors, 0);
	}
	umount_clean(fs);
}

/* Random writes, fallocates of every mode and truncates against a model of
 * the bytes and the size, a remount halfway, e2fsck at the end; in every
 * data mode. Extents split, merge and convert in every combination. */
#define RND_SPAN (96 * BS)
static uint64_t rnd_state;
static uint64_t rnd(uint64_t n)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return (rnd_state >> 33) % n;
}

static void rnd_check(struct nostall_file *f, const uint8_t *model, uint64_t size, int op)
{
	struct nostall_stat st = fstat_of(f);
	if (st.size != size)
		fail_msg("op %d: size %llu, model %llu", op, (unsigned long long)st.size, (unsigned long long)size);
	uint8_t *got = malloc(RND_SPAN + 1);
	assert_non_null(got);
	ssize_t n = nostall_pread(f, got, RND_SPAN + 1, 0);
	assert_int_equal(n, (ssize_t)size);
	for (uint64_t i = 0; i < size; i++)
		if (got[i] != model[i])
			fail_msg("op %d: byte %llu is %#x, model %#x", op, (unsigned long long)i, got[i], model[i]);
	free(got);
}

static void test_random(void **state)
{
	uint8_t *model = calloc(1, RND_SPAN), *buf = malloc(RND_SPAN);
	assert_non_null(model);
	assert_non_null(buf);
	for (size_t mi = 0; mi < NMODES; mi++) {
		const char *seed = getenv("FALLOC_SEED"); /* another run: FALLOC_SEED=N */
		rnd_state = (seed ? strtoull(seed, NULL, 0) : 0x5eed) + mi;
		mkfs_ext4(32);
		struct nostall_fs *fs = fsimg_api_mount(img, modes[mi], 0);
		struct nostall_file *f = open_rw(fs, "/r");
		memset(model, 0, RND_SPAN);
		uint64_t size = 0;
		const int nops = 160;
		for (int op = 0; op < nops; op++) {
			uint64_t off = rnd(RND_SPAN - BS), len = 1 + rnd(rnd(2) ? BS : 24 * BS);
			if (off + len > RND_SPAN)
				len = RND_SPAN - off;
			int kind = (int)rnd(8);
			if (kind <= 2) { /* write */
				for (uint64_t i = 0; i < len; i++)
					buf[i] = (uint8_t)(op * 31 + i + 1);
				assert_int_equal(nostall_pwrite(f, buf, len, off), (ssize_t)len);
				memcpy(model + off, buf, len);
				if (off + len > size)
					size = off + len;
			} else if (kind == 3) { /* allocate, maybe keeping the size */
				bool keep = rnd(2);
				assert_int_equal(nostall_fallocate(f, keep ? NOSTALL_FALLOC_KEEP_SIZE : 0, off, len), 0);
				if (!keep && off + len > size)
					size = off + len;
			} else if (kind == 4) { /* punch */
				assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_PUNCH_HOLE | NOSTALL_FALLOC_KEEP_SIZE,
								   off, len), 0);
				if (off < size)
					memset(model + off, 0, (off + len < size ? off + len : size) - off);
			} else if (kind == 5) { /* zero */
				bool keep = rnd(2);
				assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_ZERO_RANGE |
									   (keep ? NOSTALL_FALLOC_KEEP_SIZE : 0),
								   off, len), 0);
				if (off < size)
					memset(model + off, 0, (off + len < size ? off + len : size) - off);
				if (!keep && off + len > size)
					size = off + len;
			} else if (kind == 6) { /* truncate */
				uint64_t ns = rnd(RND_SPAN);
				assert_int_equal(nostall_ftruncate(f, ns), 0);
				if (ns < size)
					memset(model + ns, 0, size - ns);
				size = ns;
			} else if (rnd(4) == 0) {
				assert_int_equal(nostall_fsync(f, 0), 0);
			}
			if (op % 8 == 7)
				rnd_check(f, model, size, op);
			if (op == nops / 2) {
				nostall_close(f);
				umount_clean(fs);
				fs = fsimg_api_mount(img, modes[mi], 0);
				f = open_rw(fs, "/r");
				rnd_check(f, model, size, op);
			}
		}
		rnd_check(f, model, size, nops);
		nostall_close(f);
		umount_clean(fs);
		fs = fsimg_api_mount(img, modes[mi], 0);
		f = open_rw(fs, "/r");
		rnd_check(f, model, size, nops + 1);
		nostall_close(f);
		umount_clean(fs);
	}
	free(model);
	free(buf);
}

int main(void)
{
	int orc = oracles_check("test_api_falloc", "mkfs.ext4 e2fsck");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "falloc"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alloc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_punch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_indirect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enospc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
