/* Crashes, through the public API on a log: device (docs/devices.md): the
 * image is mounted over "log:file:IMG,to=LOG", the workload runs and places
 * dev_mark()s, and crash states are rebuilt by replaying a prefix of the
 * recording onto a copy of the image as it was before the mount (every
 * prefix ending at a flush, FUA or mark is a state the disk could have been
 * in). Issue 8:
 *
 * - orphans: a file unlinked while open, its unlink committed, then the
 *   crash: the next nostall mount frees it (orphan list); e2fsck -y on the
 *   same crash state does the same (equal free counts), and both images are
 *   e2fsck -fn clean. That the orphan list was really set is checked on the
 *   crash state (dumpe2fs after the journal replay alone: e2fsck -E
 *   journal_only would process the orphan list too).
 * - a truncate cut short: a sparse file with 2,000 indirect blocks is
 *   truncated; its truncate spans several transactions (the handle
 *   restarts), and every crash point inside it recovers, by nostall's mount
 *   and by e2fsck -y, to a clean image where the file has its old or its new
 *   size with the kept bytes intact and, when new, no block past the end.
 *   At least one crash point must have the truncate half done (on the
 *   orphan list).
 * - fsync durability, data=journal, ordered and writeback: rounds of a new
 *   file written and fsynced, an append to a log file with fsync or
 *   fdatasync, and noise (unsynced writes, renames, unlinks); a mark after
 *   each round's fsyncs return. Every crash point at or after a mark (the
 *   marks' own points and random ones) recovers - by a nostall mount and by
 *   e2fsck -y -E journal_only followed by a read-only nostall mount - to a
 *   state holding every file fsynced before it with its size and data, and
 *   the log file at least as long as its last fsync with those bytes.
 *   nostall's recovered image is e2fsck -fn clean.
 * - fsync durability on ext2 (no journal): the same rounds; every crash
 *   point at a mark and seeded samples of every write's end after the
 *   first (any prefix: no journal orders anything) hold every fsynced file
 *   as they are (a read-only mount, before any repair), and after e2fsck
 *   -fy (exit 0 or 1; a second e2fsck -fn clean) through read-only and
 *   read-write mounts.
 * Seeded (sizes, crash point samples): the seed is printed, NOSTALL_SEED=N
 * reruns it. mke2fs, e2fsck and dumpe2fs must be installed.
 * nostall-test: concurrent (a thread forces commits during the truncate) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "jbd/jbd.h"
#include "nostall/nostall.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KIB 1024ull

static char tmpdir[256];
static uint64_t seed;

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint8_t pat(unsigned id, uint64_t off)
{
	uint64_t x = (off / 8) * 0x9e3779b97f4a7c15ull + (id + 1) * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off % 8)));
}

static void fsck_clean(const char *img)
{
	int rc = fsimg_run("e2fsck -fn '%s' >'%s/fsck.out' 2>&1", img, tmpdir);
	if (rc) {
		(void)fsimg_run("head -40 '%s/fsck.out'", tmpdir);
		fail_msg("e2fsck -fn %s: exit %d", img, rc);
	}
}

/* A number from `dumpe2fs -h` ("Free blocks:"), -1 if the field is absent. */
static long long dumpe2fs_field(const char *img, const char *field)
{
	char cmd[1200], line[512];
	snprintf(cmd, sizeof cmd, "dumpe2fs -h '%s' 2>/dev/null", img);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	long long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, p))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = strtoll(line + n + 1, NULL, 0);
	pclose(p);
	return v;
}

static struct nostall_fs *mnt(const char *img, const char *opts, unsigned flags)
{
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(img, opts, flags, &fs);
	if (rc)
		fail_msg("mount %s: %s", img, nostall_errmsg(rc));
	return fs;
}

static void umnt(struct nostall_fs *fs)
{
	int rc = nostall_umount(fs);
	if (rc)
		fail_msg("umount: %s", nostall_errmsg(rc));
}

/* ------------------------------------------------------------ recording */

struct rec {
	char img[300], base[300], log[300];
	struct dev *d;
	struct nostall_fs *fs;
};

/* mke2fs -t type, keep a copy of the unmounted image, mount over log:. */
static void rec_start_type(struct rec *r, const char *type, const char *name, unsigned bs, unsigned kib,
			   const char *mkfs, const char *opts)
{
	snprintf(r->img, sizeof r->img, "%s/%s.img", tmpdir, name);
	snprintf(r->base, sizeof r->base, "%s/%s.base", tmpdir, name);
	snprintf(r->log, sizeof r->log, "%s/%s.log", tmpdir, name);
	assert_int_equal(fsimg_run("mke2fs -q -t %s -b %u %s -F '%s' %uk >/dev/null 2>&1", type, bs, mkfs,
			     r->img, kib), 0);
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", r->img, r->base), 0);
	char spec[800];
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", r->img, r->log);
	int rc = dev_open(spec, &r->d);
	if (rc)
		fail_msg("dev_open %s: %s", spec, err_last(rc));
	rc = nostall_mount_dev(r->d, opts, 0, &r->fs);
	if (rc)
		fail_msg("mount %s -o %s: %s", spec, opts ? opts : "", nostall_errmsg(rc));
}

static void rec_start(struct rec *r, const char *name, unsigned bs, unsigned kib, const char *mkfs,
		      const char *opts)
{
	rec_start_type(r, "ext3", name, bs, kib, mkfs, opts);
}

static void rec_stop(struct rec *r)
{
	umnt(r->fs);
	dev_close(r->d);
}

static void rec_remove(struct rec *r)
{
	unlink(r->img);
	unlink(r->base);
	unlink(r->log);
}

/* The crash state after entries [0, upto) of the recording. */
static void crash_image(const struct rec *r, uint64_t upto, const char *out)
{
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", r->base, out), 0);
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", out);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	int rc = dev_log_replay(r->log, upto, d);
	if (rc)
		fail_msg("replay %s up to %llu: %s", r->log, (unsigned long long)upto, err_last(rc));
	dev_close(d);
}

/* Entry index of the mark named `name` (exactly), or fail. */
static uint64_t mark_index(const char *log, const char *name)
{
	struct dev_log_reader *rd;
	assert_int_equal(dev_log_reader_open(log, &rd), 0);
	struct dev_log_entry e;
	size_t n = strlen(name);
	uint64_t found = UINT64_MAX;
	while (dev_log_reader_next(rd, &e) == 1)
		if ((e.flags & DEV_LOG_MARK) && e.data_len == n && !memcmp(e.data, name, n)) {
			found = e.index;
			break;
		}
	dev_log_reader_close(rd);
	if (found == UINT64_MAX)
		fail_msg("%s: no mark '%s'", log, name);
	return found;
}

/* Crash points p (prefix lengths) with lo < p <= hi. */
static size_t points_between(const char *log, uint64_t lo, uint64_t hi, uint64_t **out)
{
	uint64_t *pts;
	size_t n;
	assert_int_equal(dev_log_crash_points(log, &pts, &n), 0);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (pts[i] > lo && pts[i] <= hi)
			pts[k++] = pts[i];
	*out = pts;
	return k;
}

static void write_file(struct nostall_fs *fs, const char *path, unsigned id, uint64_t off, size_t len,
		       bool sync, bool datasync)
{
	uint8_t *b = malloc(len ? len : 1);
	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = pat(id, off + i);
	int fd = nostall_fd_open(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
	if (fd < 0)
		fail_msg("open %s: %s", path, nostall_errmsg(fd));
	if (len)
		assert_int_equal(nostall_fd_pwrite(fs, fd, b, len, off), (ssize_t)len);
	if (sync) {
		int rc = nostall_fd_fsync(fs, fd, datasync);
		if (rc)
			fail_msg("fsync %s: %s", path, nostall_errmsg(rc));
	}
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	free(b);
}

/* The file holds pat(id) in [0, len) except for holes listed as [hole_lo,
 * hole_hi) zeroes, and its size is exactly `size` (or at least, with !exact). */
static void check_data(struct nostall_fs *fs, const char *path, unsigned id, uint64_t size, bool exact,
		       uint64_t hole_lo, uint64_t hole_hi, const char *where)
{
	int fd = nostall_fd_open(fs, path, NOSTALL_O_RDONLY, 0);
	if (fd < 0)
		fail_msg("%s: open %s: %s", where, path, nostall_errmsg(fd));
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	if (exact ? st.size != size : st.size < size)
		fail_msg("%s: %s has size %llu, want %s%llu", where, path, (unsigned long long)st.size,
			 exact ? "" : ">= ", (unsigned long long)size);
	static uint8_t buf[64 * 1024];
	for (uint64_t off = 0; off < size; off += sizeof buf) {
		size_t n = size - off < sizeof buf ? (size_t)(size - off) : sizeof buf;
		assert_int_equal(nostall_fd_pread(fs, fd, buf, n, off), (ssize_t)n);
		for (size_t i = 0; i < n; i++) {
			uint64_t o = off + i;
			uint8_t want = o >= hole_lo && o < hole_hi ? 0 : pat(id, o);
			if (buf[i] != want)
				fail_msg("%s: %s byte %llu is %u, want %u", where, path, (unsigned long long)o,
					 buf[i], want);
		}
	}
	assert_int_equal(nostall_fd_close(fs, fd), 0);
}

/* s_last_orphan of a crash state after the journal replay alone (nostall's
 * journal step, as `nostall recover`; e2fsck -E journal_only would also
 * process the orphan list, which is what we want to see), 0 if none. */
static long long orphan_head(const char *crash)
{
	char copy[500], spec[520];
	snprintf(copy, sizeof copy, "%s.journal", crash);
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", crash, copy), 0);
	snprintf(spec, sizeof spec, "file:%s", copy);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	struct jbd_recovery_info info;
	int rc = ext3_journal_recover(d, 0, &info, NULL);
	if (rc)
		fail_msg("recover %s: %s", copy, err_last(rc));
	dev_close(d);
	long long v = dumpe2fs_field(copy, "First orphan inode");
	unlink(copy);
	return v < 0 ? 0 : v;
}

/* ------------------------------------------------------------ orphans */

static void orphan_case(unsigned bs)
{
	struct rec r;
	rec_start(&r, "orphan", bs, 16384, "", "data=ordered");
	struct nostall_fs *fs = r.fs;
	write_file(fs, "/keep", 1, 0, 100 * KIB, true, false);
	int fd = nostall_fd_open(fs, "/orphan", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
	assert_true(fd >= 0);
	static uint8_t b[256 * 1024];
	for (size_t i = 0; i < sizeof b; i++)
		b[i] = pat(2, i);
	assert_int_equal(nostall_fd_write(fs, fd, b, sizeof b), (ssize_t)sizeof b);
	assert_int_equal(nostall_fd_fsync(fs, fd, 0), 0);
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	uint64_t ino = st.ino;
	assert_int_equal(nostall_unlink(fs, "/orphan"), 0);
	assert_int_equal(nostall_sync(fs), 0); /* the unlink is committed */
	assert_int_equal(dev_mark(r.d, "unlinked"), 0);
	/* the open file still works */
	assert_int_equal(nostall_fd_pread(fs, fd, b, 4, 0), 4);
	assert_int_equal(b[0], pat(2, 0));
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	rec_stop(&r);
	fsck_clean(r.img);

	char a[400], e[400];
	snprintf(a, sizeof a, "%s/orphan.nostall", tmpdir);
	snprintf(e, sizeof e, "%s/orphan.e2fsck", tmpdir);
	crash_image(&r, mark_index(r.log, "unlinked") + 1, a);
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", a, e), 0);
	/* the crash state has the file on the orphan list */
	assert_int_equal(orphan_head(a), (long long)ino);
	/* nostall: the mount recovers the journal and frees the orphan */
	fs = mnt(a, NULL, 0);
	assert_int_equal(nostall_stat_ino(fs, ino, &st), -ENOENT);
	check_data(fs, "/keep", 1, 100 * KIB, true, 0, 0, "orphan: nostall");
	umnt(fs);
	fsck_clean(a);
	/* e2fsck frees it too */
	int rc = fsimg_run("e2fsck -fy '%s' >/dev/null 2>&1", e);
	assert_true(rc == 0 || rc == 1);
	fsck_clean(e);
	assert_int_equal(dumpe2fs_field(e, "First orphan inode"), -1);
	assert_int_equal(dumpe2fs_field(a, "Free blocks"), dumpe2fs_field(e, "Free blocks"));
	assert_int_equal(dumpe2fs_field(a, "Free inodes"), dumpe2fs_field(e, "Free inodes"));
	/* and the clean unmount's image agrees */
	assert_int_equal(dumpe2fs_field(a, "Free blocks"), dumpe2fs_field(r.img, "Free blocks"));
	unlink(a);
	unlink(e);
	rec_remove(&r);
}

static void test_orphan_unlinked_1k(void **state)
{
	orphan_case(1024);
}

static void test_orphan_unlinked_4k(void **state)
{
	orphan_case(4096);
}

/* ------------------------------------------------------------ truncate */

#define NIND 2000u  /* indirect blocks of the sparse file */
#define KEEP 4u    /* blocks kept by the truncate (direct blocks) */

/* Commits forced from another thread while the truncate runs: its handle
 * restarts only kick a commit, and the restarted handle may join the same
 * transaction before the commit thread takes it (so does 2.6.30's). */
struct committer {
	struct nostall_fs *fs;
	atomic_bool stop;
	unsigned commits;
};

static void *committer_run(void *arg)
{
	struct committer *c = arg;
	while (!atomic_load(&c->stop)) {
		if (nostall_fsync_ino(c->fs, NOSTALL_ROOT_INO, 0) == 0)
			c->commits++;
	}
	return NULL;
}

/* One recording and its check; returns the number of crash points at
 * which the truncate was half done. */
static unsigned truncate_attempt(unsigned bs, const char *mode)
{
	struct rec r;
	char opts[64];
	snprintf(opts, sizeof opts, "data=%s", mode);
	/* the smallest journal: a long truncate cannot fit one transaction */
	rec_start(&r, "trunc", bs, 32768, "-J size=4", opts);
	struct nostall_fs *fs = r.fs;
	uint64_t apb = bs / 4;
	write_file(fs, "/big", 3, 0, KEEP * bs, false, false);
	uint64_t old_size = 0;
	for (uint64_t k = 0; k < NIND; k++) {
		/* the first block under each indirect block */
		uint64_t off = (12 + k * apb) * bs;
		write_file(fs, "/big", 3, off, bs, false, false);
		old_size = off + bs;
	}
	write_file(fs, "/other", 4, 0, 20 * KIB, false, false);
	assert_int_equal(nostall_sync(fs), 0);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/big", 0, &st), 0);
	assert_int_equal(st.size, old_size);
	uint64_t old_blocks = st.blocks;
	struct committer cm = { .fs = fs };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, committer_run, &cm), 0);
	assert_int_equal(dev_mark(r.d, "truncate"), 0);
	uint64_t new_size = (KEEP - 1) * bs + 100;
	assert_int_equal(nostall_truncate(fs, "/big", new_size), 0);
	assert_int_equal(dev_mark(r.d, "truncated"), 0);
	atomic_store(&cm.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(nostall_sync(fs), 0);
	assert_int_equal(dev_mark(r.d, "synced"), 0);
	rec_stop(&r);
	fsck_clean(r.img);

	uint64_t *pts;
	size_t n = points_between(r.log, mark_index(r.log, "truncate"), mark_index(r.log, "synced") + 1,
				  &pts);
	assert_true(n >= 2);
	char a[400], e[400], where[120];
	snprintf(a, sizeof a, "%s/trunc.nostall", tmpdir);
	snprintf(e, sizeof e, "%s/trunc.e2fsck", tmpdir);
	unsigned halfway = 0, at_new = 0, at_old = 0;
	uint64_t rs = seed ^ bs;
	/* at most 10 points: the first 5 and a seeded sample of the rest */
	for (size_t k = 0; k < n; k++) {
		if (k >= 5 && rnd(&rs) % (n - 5) >= 5)
			continue;
		snprintf(where, sizeof where, "truncate bs %u data=%s, crash point %llu", bs, mode,
			 (unsigned long long)pts[k]);
		crash_image(&r, pts[k], a);
		assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", a, e), 0);
		if (orphan_head(a) > 0)
			halfway++;
		fs = mnt(a, opts, 0);
		assert_int_equal(nostall_stat(fs, "/big", 0, &st), 0);
		if (st.size == new_size) {
			/* nothing past the end: the orphan cleanup finished it */
			assert_int_equal(st.blocks, KEEP * (bs / 512));
			at_new++;
		} else {
			if (st.size != old_size)
				fail_msg("%s: size %llu, neither %llu nor %llu", where,
					 (unsigned long long)st.size, (unsigned long long)old_size,
					 (unsigned long long)new_size);
			assert_int_equal(st.blocks, old_blocks);
			at_old++;
		}
		check_data(fs, "/big", 3, new_size, false, 0, 0, where);
		check_data(fs, "/other", 4, 20 * KIB, true, 0, 0, where);
		umnt(fs);
		fsck_clean(a);
		int rc = fsimg_run("e2fsck -fy '%s' >/dev/null 2>&1", e);
		assert_true(rc == 0 || rc == 1);
		fsck_clean(e);
		if (dumpe2fs_field(a, "Free blocks") != dumpe2fs_field(e, "Free blocks"))
			fail_msg("%s: nostall leaves %lld free blocks, e2fsck %lld", where,
				 dumpe2fs_field(a, "Free blocks"), dumpe2fs_field(e, "Free blocks"));
	}
	printf("truncate bs %u data=%s: %zu crash points, %u old size, %u new size, %u cut short "
	       "(on the orphan list)\n", bs, mode, n, at_old, at_new, halfway);
	assert_true(at_new > 0);
	free(pts);
	unlink(a);
	unlink(e);
	rec_remove(&r);
	return halfway;
}

/* Commit timing decides whether a crash point falls inside the truncate:
 * up to 5 recordings until one does (each is fully checked). */
static void truncate_case(unsigned bs, const char *mode)
{
	for (int attempt = 0; attempt < 5; attempt++)
		if (truncate_attempt(bs, mode) > 0)
			return;
	fail_msg("bs %u data=%s: no crash point inside the truncate in 5 recordings", bs, mode);
}

static void test_truncate_cut_1k(void **state)
{
	truncate_case(1024, "ordered");
}

static void test_truncate_cut_4k(void **state)
{
	truncate_case(4096, "journal");
}

/* ------------------------------------------------------------ fsync */

#define ROUNDS 8
#define NOISE 6

struct fsync_state {
	uint64_t fsize[ROUNDS]; /* new file f<i>: size (written from 0, a hole inside) */
	uint64_t hole_lo[ROUNDS], hole_hi[ROUNDS];
	uint64_t logsize[ROUNDS]; /* /log after round i's fsync */
};

/* State after round i: f0..fi complete, /log at least logsize[i]. */
static void check_round(struct nostall_fs *fs, const struct fsync_state *s, int i, const char *where)
{
	char p[32];
	for (int k = 0; k <= i; k++) {
		snprintf(p, sizeof p, "/d/f%d", k);
		check_data(fs, p, 100 + (unsigned)k, s->fsize[k], true, s->hole_lo[k], s->hole_hi[k], where);
	}
	check_data(fs, "/log", 7, s->logsize[i], false, 0, 0, where);
}

/* Every entry end (prefix length) after entry lo: without a journal any
 * prefix of the writes is a state the disk may be left in, not only those
 * ending at a flush (the device may keep any subset since the last flush;
 * a prefix is one). */
static size_t entries_after(const char *log, uint64_t lo, uint64_t **out)
{
	struct dev_log_reader *rd;
	assert_int_equal(dev_log_reader_open(log, &rd), 0);
	size_t n = 0, cap = 256;
	uint64_t *v = malloc(cap * sizeof *v);
	assert_non_null(v);
	struct dev_log_entry e;
	while (dev_log_reader_next(rd, &e) == 1) {
		if (e.index <= lo)
			continue;
		if (n == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof *v);
			assert_non_null(v);
		}
		v[n++] = e.index + 1;
	}
	dev_log_reader_close(rd);
	*out = v;
	return n;
}

/* ext2 (no journal): the crash state as it is must already hold what was
 * fsynced (a read-only mount reads it, no repair), then e2fsck -fy repairs
 * the rest (exit 0 or 1), a second e2fsck -fn is clean, and both a
 * read-only and a read-write mount find the fsynced files. */
static void ext2_recover_check(const char *a, const struct fsync_state *s, int round, const char *where)
{
	struct nostall_fs *fs = mnt(a, NULL, NOSTALL_MOUNT_RDONLY);
	check_round(fs, s, round, where);
	umnt(fs);
	int rc = fsimg_run("e2fsck -fy '%s' >'%s/fsck.out' 2>&1", a, tmpdir);
	if (rc != 0 && rc != 1) {
		(void)fsimg_run("head -40 '%s/fsck.out'", tmpdir);
		fail_msg("%s: e2fsck -fy: exit %d", where, rc);
	}
	fsck_clean(a);
	fs = mnt(a, NULL, NOSTALL_MOUNT_RDONLY);
	check_round(fs, s, round, where);
	umnt(fs);
	fs = mnt(a, NULL, 0);
	check_round(fs, s, round, where);
	umnt(fs);
	fsck_clean(a);
}

static void fsync_case(unsigned bs, const char *mode)
{
	struct rec r;
	char opts[64];
	snprintf(opts, sizeof opts, "data=%s", mode);
	/* "ext2": a journal-less image, no data= (refused there) */
	bool ext2 = !strcmp(mode, "ext2");
	if (ext2)
		rec_start_type(&r, "ext2", "fsync", bs, 32768, "", NULL);
	else
		rec_start(&r, "fsync", bs, 32768, "", opts);
	struct nostall_fs *fs = r.fs;
	struct fsync_state s;
	memset(&s, 0, sizeof s);
	uint64_t rs = seed ^ (bs * 31u) ^ (uint64_t)mode[0];
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	assert_int_equal(nostall_mkdir(fs, "/noise", 0755), 0);
	uint64_t logsize = 0;
	char p[64], q[64];
	for (int i = 0; i < ROUNDS; i++) {
		/* noise: unsynced writes, a rename over, an unlink */
		for (int k = 0; k < 3; k++) {
			snprintf(p, sizeof p, "/noise/n%d", (int)(rnd(&rs) % NOISE));
			write_file(fs, p, 50 + (unsigned)k, rnd(&rs) % (64 * KIB), 1 + rnd(&rs) % (96 * KIB),
				   false, false);
		}
		snprintf(p, sizeof p, "/noise/n%d", (int)(rnd(&rs) % NOISE));
		snprintf(q, sizeof q, "/noise/n%d", (int)(rnd(&rs) % NOISE));
		int rc = nostall_rename(fs, p, q, 0);
		assert_true(rc == 0 || rc == -ENOENT);
		snprintf(p, sizeof p, "/noise/n%d", (int)(rnd(&rs) % NOISE));
		rc = nostall_unlink(fs, p);
		assert_true(rc == 0 || rc == -ENOENT);
		/* a new file: data, a hole, data; fsync or fdatasync */
		uint64_t a = 1 + rnd(&rs) % (40 * KIB), hole = rnd(&rs) % 3 ? 0 : 3 * bs + rnd(&rs) % (bs * 8);
		uint64_t b = rnd(&rs) % (120 * KIB);
		snprintf(p, sizeof p, "/d/f%d", i);
		write_file(fs, p, 100 + (unsigned)i, 0, a, false, false);
		write_file(fs, p, 100 + (unsigned)i, a + hole, b, true, i % 2);
		s.fsize[i] = a + hole + b;
		s.hole_lo[i] = a;
		s.hole_hi[i] = a + hole;
		if (!b) /* an empty write does not extend the file */
			s.fsize[i] = a, s.hole_hi[i] = a;
		/* the append log: O_APPEND write + fsync, as the seed's loop */
		size_t len = 1 + rnd(&rs) % (6 * KIB);
		uint8_t *buf = malloc(len);
		assert_non_null(buf);
		for (size_t k = 0; k < len; k++)
			buf[k] = pat(7, logsize + k);
		int fd = nostall_fd_open(fs, "/log", NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_APPEND,
					 0644);
		assert_true(fd >= 0);
		assert_int_equal(nostall_fd_write(fs, fd, buf, len), (ssize_t)len);
		assert_int_equal(nostall_fd_fsync(fs, fd, !(i % 3)), 0);
		assert_int_equal(nostall_fd_close(fs, fd), 0);
		free(buf);
		logsize += len;
		s.logsize[i] = logsize;
		snprintf(p, sizeof p, "round %d", i);
		assert_int_equal(dev_mark(r.d, p), 0);
		/* more appends after the mark, not synced (later rounds may find
		 * them or not) */
		fd = nostall_fd_open(fs, "/log", NOSTALL_O_WRONLY | NOSTALL_O_APPEND, 0);
		assert_true(fd >= 0);
		len = 1 + rnd(&rs) % (3 * KIB);
		buf = malloc(len);
		assert_non_null(buf);
		for (size_t k = 0; k < len; k++)
			buf[k] = pat(7, logsize + k);
		assert_int_equal(nostall_fd_write(fs, fd, buf, len), (ssize_t)len);
		assert_int_equal(nostall_fd_close(fs, fd), 0);
		free(buf);
		logsize += len;
	}
	rec_stop(&r);
	fsck_clean(r.img);

	uint64_t marks[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		snprintf(p, sizeof p, "round %d", i);
		marks[i] = mark_index(r.log, p);
	}
	uint64_t *pts;
	size_t n = ext2 ? entries_after(r.log, marks[0], &pts)
			: points_between(r.log, marks[0], UINT64_MAX, &pts);
	assert_true(n > ROUNDS);
	char a[400], e[400], where[160];
	snprintf(a, sizeof a, "%s/fsync.nostall", tmpdir);
	snprintf(e, sizeof e, "%s/fsync.e2fsck", tmpdir);
	/* each mark's own point (the earliest state holding the fsync), and
	 * seeded samples of the others */
	uint64_t cand[ROUNDS + 24];
	size_t nc = 0;
	for (int i = 0; i < ROUNDS; i++)
		cand[nc++] = marks[i] + 1;
	for (int k = 0; k < (ext2 ? 24 : 8); k++)
		cand[nc++] = pts[rnd(&rs) % n];
	for (size_t c = 0; c < nc; c++) {
		uint64_t upto = cand[c];
		int round = -1;
		for (int i = 0; i < ROUNDS; i++)
			if (marks[i] < upto)
				round = i;
		assert_true(round >= 0);
		snprintf(where, sizeof where, "fsync bs %u data=%s seed %llu, crash point %llu (round %d)",
			 bs, mode, (unsigned long long)seed, (unsigned long long)upto, round);
		crash_image(&r, upto, a);
		if (ext2) {
			ext2_recover_check(a, &s, round, where);
			continue;
		}
		assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", a, e), 0);
		/* nostall's recovery: a read-write mount */
		fs = mnt(a, opts, 0);
		check_round(fs, &s, round, where);
		umnt(fs);
		fsck_clean(a);
		/* e2fsck's recovery, read by a read-only mount */
		int rc = fsimg_run("e2fsck -y -E journal_only '%s' >/dev/null 2>&1", e);
		if (rc != 0 && rc != 1)
			fail_msg("%s: e2fsck -E journal_only: exit %d", where, rc);
		fs = mnt(e, NULL, NOSTALL_MOUNT_RDONLY);
		check_round(fs, &s, round, where);
		umnt(fs);
	}
	free(pts);
	unlink(a);
	unlink(e);
	rec_remove(&r);
}

static void test_fsync_journal_1k(void **state)
{
	fsync_case(1024, "journal");
}

static void test_fsync_ordered_1k(void **state)
{
	fsync_case(1024, "ordered");
}

static void test_fsync_writeback_1k(void **state)
{
	fsync_case(1024, "writeback");
}

static void test_fsync_ordered_4k(void **state)
{
	fsync_case(4096, "ordered");
}

static void test_fsync_journal_4k(void **state)
{
	fsync_case(4096, "journal");
}

static void test_fsync_writeback_4k(void **state)
{
	fsync_case(4096, "writeback");
}

static void test_fsync_ext2_1k(void **state)
{
	fsync_case(1024, "ext2");
}

static void test_fsync_ext2_4k(void **state)
{
	fsync_case(4096, "ext2");
}

int main(void)
{
	int orc = fsimg_main_begin("test_fs_crash", "fscrash", "mke2fs e2fsck dumpe2fs", &seed, tmpdir, sizeof tmpdir);
	if (orc >= 0)
		return orc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orphan_unlinked_1k), cmocka_unit_test(test_orphan_unlinked_4k),
		cmocka_unit_test(test_truncate_cut_1k),    cmocka_unit_test(test_truncate_cut_4k),
		cmocka_unit_test(test_fsync_journal_1k),   cmocka_unit_test(test_fsync_ordered_1k),
		cmocka_unit_test(test_fsync_writeback_1k), cmocka_unit_test(test_fsync_ordered_4k),
		cmocka_unit_test(test_fsync_journal_4k),   cmocka_unit_test(test_fsync_writeback_4k),
		cmocka_unit_test(test_fsync_ext2_1k),      cmocka_unit_test(test_fsync_ext2_4k),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
