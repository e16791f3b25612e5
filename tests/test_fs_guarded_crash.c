/* data=guarded's crash guarantee, proven on a log: device (issue 10;
 * docs/write-guarded.md). The image is made over a device pre-filled with a
 * "stale" pattern (mke2fs -E nodiscard keeps it in every free block), so a
 * block that reaches a file without having been written shows bytes no write
 * produced. Five workloads run through the public API over "log:file:IMG":
 *
 *   append           unaligned appends, some fsynced (1 KiB blocks)
 *   overwrite        a file written, then rewritten in place (4 KiB blocks)
 *   holefill         holes filled inside the on-disk size, a truncate up
 *                    then a write into its hole (1 KiB blocks)
 *   truncate-write   a truncate to an unaligned size, then writes past it
 *                    (4 KiB blocks)
 *   rename-replace   new files written and renamed over the old one, no
 *                    fsync before the rename (1 KiB blocks)
 *
 * and a trigger file's fsync forces commits in between (so allocations
 * commit while their data is still in the page cache). Every write of the
 * recording after the workload's start is a crash point: the image is
 * rebuilt up to it and recovered twice, by a read-write nostall mount (then
 * e2fsck -fn must be clean) and by e2fsck -fy (then clean, read by a
 * read-only mount); both must leave the same free block count. Checked on
 * every file: no byte that no write to that path produced (stale data:
 * anything but zero or one of its writes' patterns - every write has its own
 * pattern), no fsynced byte lost (until a later truncate or rename replaces
 * it: the fsynced bytes or a later write's), no file longer than it ever
 * was. data=guarded must pass them all; data=writeback runs the same
 * workloads and must show stale data at some crash point of each (the check
 * can catch the bug).
 * Seeded (write lengths): the seed is printed, NOSTALL_SEED=N reruns it.
 * mke2fs, e2fsck and dumpe2fs must be installed. */
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IMG_KIB 8192u
#define MAXEV 48
#define MAXPATHS 6
#define MAXEXP 16

static char tmpdir[256];
static uint64_t seed;

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Write `gen`'s byte at file offset off: never 0 (zero means "not
 * written" and is always allowed), and different per write. */
static uint8_t pat(unsigned gen, uint64_t off)
{
	uint64_t x = (off / 8 + 1) * 0x9e3779b97f4a7c15ull + (gen + 1) * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 31;
	uint8_t b = (uint8_t)(x >> (8 * (off % 8)));
	return b ? b : 1;
}

/* ------------------------------------------------------------- the model */

enum { EV_WRITE, EV_TRUNC, EV_RESET };

struct ev {
	int type;
	uint64_t off, len; /* write: range; trunc: off = the size */
	unsigned gen;
};

/* Everything that ever happened at one path (all the files it named). */
struct pmodel {
	char path[32];
	struct ev ev[MAXEV];
	unsigned nev;
	uint64_t maxsize;
};

/* After mark `mark` and up to mark `until` (or the end), path pm holds the
 * state its events [0, nev) built, or later writes' bytes. */
struct expect {
	unsigned pm, nev;
	char mark[24], until[24];
	uint64_t mark_idx, until_idx;
};

struct wl {
	const char *name, *mode;
	unsigned bs;
	char img[300], base[300], log[300];
	struct dev *d;
	struct nostall_fs *fs;
	struct pmodel pm[MAXPATHS];
	unsigned npm;
	struct expect ex[MAXEXP];
	unsigned nex;
	unsigned gen, nmarks, ntrig;
	uint64_t rs;
};

static unsigned wl_path(struct wl *w, const char *path)
{
	for (unsigned i = 0; i < w->npm; i++)
		if (!strcmp(w->pm[i].path, path))
			return i;
	assert_true(w->npm < MAXPATHS);
	snprintf(w->pm[w->npm].path, sizeof w->pm[0].path, "%s", path);
	return w->npm++;
}

static void ev_add(struct wl *w, unsigned pi, struct ev e)
{
	struct pmodel *p = &w->pm[pi];
	assert_true(p->nev < MAXEV);
	p->ev[p->nev++] = e;
}

/* The content of pm after its events [0, n): bytes into buf (size cap),
 * returns the size. */
static uint64_t replay(const struct pmodel *p, unsigned n, uint8_t *buf, uint64_t cap)
{
	uint64_t size = 0;
	memset(buf, 0, cap);
	for (unsigned i = 0; i < n; i++) {
		const struct ev *e = &p->ev[i];
		if (e->type == EV_RESET) {
			memset(buf, 0, cap);
			size = 0;
		} else if (e->type == EV_TRUNC) {
			if (e->off < size)
				memset(buf + e->off, 0, size - e->off);
			size = e->off;
		} else {
			for (uint64_t o = e->off; o < e->off + e->len; o++)
				buf[o] = pat(e->gen, o);
			if (e->off + e->len > size)
				size = e->off + e->len;
		}
	}
	return size;
}

static void mark(struct wl *w, char *name, size_t n, const char *what)
{
	snprintf(name, n, "%s %u", what, w->nmarks++);
	assert_int_equal(dev_mark(w->d, name), 0);
}

/* ------------------------------------------------------- the operations */

static void op_write(struct wl *w, const char *path, uint64_t off, uint64_t len)
{
	unsigned pi = wl_path(w, path);
	unsigned gen = ++w->gen;
	uint8_t *b = malloc(len);
	assert_non_null(b);
	for (uint64_t i = 0; i < len; i++)
		b[i] = pat(gen, off + i);
	int fd = nostall_fd_open(w->fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
	if (fd < 0)
		fail_msg("open %s: %s", path, nostall_errmsg(fd));
	assert_int_equal(nostall_fd_pwrite(w->fs, fd, b, len, off), (ssize_t)len);
	assert_int_equal(nostall_fd_close(w->fs, fd), 0);
	free(b);
	ev_add(w, pi, (struct ev){EV_WRITE, off, len, gen});
	struct pmodel *p = &w->pm[pi];
	static uint8_t tmp[1 << 20];
	uint64_t size = replay(p, p->nev, tmp, sizeof tmp);
	if (size > p->maxsize)
		p->maxsize = size;
}

/* fsync(path), then a mark: from there on its state must survive. */
static void op_fsync(struct wl *w, const char *path)
{
	unsigned pi = wl_path(w, path);
	int fd = nostall_fd_open(w->fs, path, NOSTALL_O_WRONLY, 0);
	assert_true(fd >= 0);
	int rc = nostall_fd_fsync(w->fs, fd, 0);
	if (rc)
		fail_msg("fsync %s: %s", path, nostall_errmsg(rc));
	assert_int_equal(nostall_fd_close(w->fs, fd), 0);
	assert_true(w->nex < MAXEXP);
	struct expect *x = &w->ex[w->nex++];
	memset(x, 0, sizeof *x);
	x->pm = pi;
	x->nev = w->pm[pi].nev;
	mark(w, x->mark, sizeof x->mark, "fsync");
}

/* A mark before an operation that replaces path's bytes: its fsynced
 * states hold up to here. */
static void invalidate(struct wl *w, unsigned pi)
{
	char name[24];
	mark(w, name, sizeof name, "replace");
	for (unsigned i = 0; i < w->nex; i++)
		if (w->ex[i].pm == pi && !w->ex[i].until[0])
			snprintf(w->ex[i].until, sizeof w->ex[i].until, "%s", name);
}

static void op_truncate(struct wl *w, const char *path, uint64_t size)
{
	unsigned pi = wl_path(w, path);
	invalidate(w, pi);
	assert_int_equal(nostall_truncate(w->fs, path, size), 0);
	ev_add(w, pi, (struct ev){EV_TRUNC, size, 0, 0});
	if (size > w->pm[pi].maxsize)
		w->pm[pi].maxsize = size;
}

/* rename(from, to): `to` names from's file, with its history. */
static void op_rename(struct wl *w, const char *from, const char *to)
{
	unsigned fi = wl_path(w, from), ti = wl_path(w, to);
	invalidate(w, ti);
	assert_int_equal(nostall_rename(w->fs, from, to, 0), 0);
	ev_add(w, ti, (struct ev){EV_RESET, 0, 0, 0});
	for (unsigned i = 0; i < w->pm[fi].nev; i++)
		ev_add(w, ti, w->pm[fi].ev[i]);
	if (w->pm[fi].maxsize > w->pm[ti].maxsize)
		w->pm[ti].maxsize = w->pm[fi].maxsize;
}

/* Force a commit through another file's fsync. */
static void op_trigger(struct wl *w)
{
	op_write(w, "/t", (w->ntrig++ % 64) * 13, 5);
	op_fsync(w, "/t");
}

static uint64_t len_between(struct wl *w, uint64_t lo, uint64_t hi)
{
	return lo + rnd(&w->rs) % (hi - lo + 1);
}

/* ------------------------------------------------------------ workloads */

static void wl_append(struct wl *w)
{
	uint64_t off = 0;
	for (int i = 0; i < 7; i++) {
		uint64_t len = len_between(w, 200, 3000);
		op_write(w, "/a", off, len);
		off += len;
		if (i == 1 || i == 3 || i == 5)
			op_trigger(w);
		if (i == 2 || i == 6)
			op_fsync(w, "/a");
	}
}

static void wl_overwrite(struct wl *w)
{
	op_write(w, "/b", 0, 5 * w->bs + 300);
	op_trigger(w);
	op_fsync(w, "/b");
	op_write(w, "/b", len_between(w, 100, 2 * w->bs), len_between(w, 100, 2 * w->bs));
	op_trigger(w);
	op_write(w, "/b", 0, len_between(w, 1, 300));
	op_write(w, "/b", 4 * w->bs + 7, w->bs + 293);
	op_trigger(w);
	op_fsync(w, "/b");
}

static void wl_holefill(struct wl *w)
{
	op_write(w, "/c", 0, 3000);
	op_write(w, "/c", 40 * w->bs, len_between(w, 100, 4000));
	op_fsync(w, "/c");
	op_write(w, "/c", 10 * w->bs + 100, len_between(w, 2000, 9000)); /* inside the size */
	op_trigger(w);
	op_write(w, "/c", 3000, 1096); /* the partial block, then a new one */
	op_trigger(w);
	op_truncate(w, "/c", 60 * w->bs + 17); /* up: a hole to the new size */
	op_write(w, "/c", 50 * w->bs, len_between(w, 500, 2500));
	op_trigger(w);
	op_fsync(w, "/c");
}

static void wl_truncate_write(struct wl *w)
{
	op_write(w, "/d", 0, 10 * w->bs);
	op_fsync(w, "/d");
	op_truncate(w, "/d", 2 * w->bs + 532);
	op_write(w, "/d", 3 * w->bs - 96, len_between(w, w->bs, 4 * w->bs));
	op_trigger(w);
	op_write(w, "/d", 8 * w->bs, len_between(w, 100, 3 * w->bs));
	op_trigger(w);
	op_fsync(w, "/d");
}

static void wl_rename_replace(struct wl *w)
{
	op_write(w, "/e", 0, 8000);
	op_fsync(w, "/e");
	op_write(w, "/e.tmp", 0, len_between(w, 6000, 14000));
	op_trigger(w); /* the new file's blocks commit before the rename */
	op_rename(w, "/e.tmp", "/e");
	op_trigger(w);
	op_write(w, "/e.new", 0, len_between(w, 2000, 6000));
	op_rename(w, "/e.new", "/e");
	op_trigger(w);
	op_fsync(w, "/e");
}

/* ---------------------------------------------------------- recording */

/* An image whose free blocks hold the stale pattern. */
static void make_image(struct wl *w)
{
	FILE *f = fopen(w->img, "w");
	assert_non_null(f);
	static uint8_t blk[4096];
	for (unsigned k = 0; k < IMG_KIB / 4; k++) {
		for (unsigned i = 0; i < sizeof blk; i++)
			blk[i] = (uint8_t)(0x80 | ((k * 4096 + i) * 37 % 113)); /* never 0 */
		assert_int_equal(fwrite(blk, 1, sizeof blk, f), sizeof blk);
	}
	assert_int_equal(fclose(f), 0);
	assert_int_equal(fsimg_run("mke2fs -q -t ext3 -b %u -E nodiscard -F '%s' >/dev/null 2>&1", w->bs, w->img),
			 0);
}

static void record(struct wl *w, void (*fn)(struct wl *))
{
	snprintf(w->img, sizeof w->img, "%s/%s-%s.img", tmpdir, w->name, w->mode);
	snprintf(w->base, sizeof w->base, "%s/%s-%s.base", tmpdir, w->name, w->mode);
	snprintf(w->log, sizeof w->log, "%s/%s-%s.log", tmpdir, w->name, w->mode);
	make_image(w);
	assert_int_equal(fsimg_run("cp '%s' '%s'", w->img, w->base), 0);
	char spec[800], opts[64];
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", w->img, w->log);
	snprintf(opts, sizeof opts, "data=%s", w->mode);
	int rc = dev_open(spec, &w->d);
	if (rc)
		fail_msg("dev_open %s: %s", spec, err_last(rc));
	rc = nostall_mount_dev(w->d, opts, 0, &w->fs);
	if (rc)
		fail_msg("mount %s -o %s: %s", spec, opts, nostall_errmsg(rc));
	/* the trigger file exists before the start */
	op_write(w, "/t", 0, 64 * 13 + 5);
	assert_int_equal(nostall_sync(w->fs), 0);
	char name[24];
	mark(w, name, sizeof name, "start");
	fn(w);
	rc = nostall_umount(w->fs);
	if (rc)
		fail_msg("umount: %s", nostall_errmsg(rc));
	dev_close(w->d);
	assert_int_equal(fsimg_run("e2fsck -fn '%s' >/dev/null 2>&1", w->img), 0);
}

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

static void crash_image(const struct wl *w, uint64_t upto, const char *out)
{
	assert_int_equal(fsimg_run("cp '%s' '%s'", w->base, out), 0);
	char spec[420];
	snprintf(spec, sizeof spec, "file:%s", out);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	int rc = dev_log_replay(w->log, upto, d);
	if (rc)
		fail_msg("replay %s up to %llu: %s", w->log, (unsigned long long)upto, err_last(rc));
	dev_close(d);
}

/* A number from `dumpe2fs -h` ("Free blocks"), -1 if absent. */
static long long dumpe2fs_field(const char *img, const char *field)
{
	char cmd[600], line[512];
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

static long long free_blocks(const char *img)
{
	return dumpe2fs_field(img, "Free blocks");
}

/* Is an inode on the orphan list of the crash state once its journal is
 * replayed (nostall's journal step alone)? */
static bool orphans_pending(const char *crash)
{
	char copy[500], spec[520];
	snprintf(copy, sizeof copy, "%s.journal", crash);
	assert_int_equal(fsimg_run("cp '%s' '%s'", crash, copy), 0);
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
	return v > 0;
}

/* ------------------------------------------------------------- checking */

static uint8_t fbuf[1 << 20], want[1 << 20];

/* One path in a recovered state. Returns 1 when it shows stale data (after
 * printing the first such byte), 0 otherwise; other violations (checked on
 * stale-free files) fail. */
static int check_path(const struct wl *w, struct nostall_fs *fs, unsigned pi, uint64_t upto,
		      const char *where)
{
	const struct pmodel *p = &w->pm[pi];
	struct nostall_stat st;
	int rc = nostall_stat(fs, p->path, 0, &st);
	bool exists = rc == 0;
	if (rc && rc != -ENOENT)
		fail_msg("%s: stat %s: %s", where, p->path, nostall_errmsg(rc));
	uint64_t size = exists ? st.size : 0;
	if (exists && size > p->maxsize)
		fail_msg("%s: %s is %llu bytes, longer than it ever was (%llu)", where, p->path,
			 (unsigned long long)size, (unsigned long long)p->maxsize);
	assert_true(size <= sizeof fbuf);
	if (exists && size) {
		int fd = nostall_fd_open(fs, p->path, NOSTALL_O_RDONLY, 0);
		assert_true(fd >= 0);
		assert_int_equal(nostall_fd_pread(fs, fd, fbuf, size, 0), (ssize_t)size);
		assert_int_equal(nostall_fd_close(fs, fd), 0);
	}
	/* every byte: zero or one of this path's writes */
	for (uint64_t o = 0; exists && o < size; o++) {
		if (!fbuf[o])
			continue;
		bool ok = false;
		for (unsigned e = 0; e < p->nev && !ok; e++)
			ok = p->ev[e].type == EV_WRITE && o >= p->ev[e].off && o < p->ev[e].off + p->ev[e].len &&
			     fbuf[o] == pat(p->ev[e].gen, o);
		if (!ok) {
			printf("%s: %s byte %llu is %u: stale data\n", where, p->path, (unsigned long long)o,
			       fbuf[o]);
			return 1;
		}
	}
	/* fsynced states in force at this crash point */
	for (unsigned k = 0; k < w->nex; k++) {
		const struct expect *x = &w->ex[k];
		if (x->pm != pi || upto < x->mark_idx + 1 || (x->until[0] && upto > x->until_idx + 1))
			continue;
		uint64_t wsize = replay(p, x->nev, want, sizeof want);
		if (!exists || size < wsize)
			fail_msg("%s: %s fsynced at %s with %llu bytes, now %s%llu", where, p->path, x->mark,
				 (unsigned long long)wsize, exists ? "" : "missing, ",
				 (unsigned long long)size);
		for (uint64_t o = 0; o < wsize; o++) {
			if (fbuf[o] == want[o])
				continue;
			bool later = false; /* or a write after the fsync */
			for (unsigned e = x->nev; e < p->nev && !later; e++)
				later = p->ev[e].type == EV_WRITE && o >= p->ev[e].off &&
					o < p->ev[e].off + p->ev[e].len && fbuf[o] == pat(p->ev[e].gen, o);
			if (!later)
				fail_msg("%s: %s byte %llu fsynced at %s as %u, now %u", where, p->path,
					 (unsigned long long)o, x->mark, want[o], fbuf[o]);
		}
	}
	return 0;
}

static int check_state(const struct wl *w, struct nostall_fs *fs, uint64_t upto, const char *where)
{
	int stale = 0;
	for (unsigned i = 0; i < w->npm; i++)
		stale += check_path(w, fs, i, upto, where);
	return stale;
}

/* Recover crash state `upto` both ways; returns the recoveries that showed
 * stale data (0..2). *orphaned: the state had an orphan to clean up. */
static int crash_check(struct wl *w, uint64_t upto, bool *orphaned)
{
	char a[400], e[400], where[200], opts[64];
	snprintf(a, sizeof a, "%s/crash.nostall", tmpdir);
	snprintf(e, sizeof e, "%s/crash.e2fsck", tmpdir);
	snprintf(opts, sizeof opts, "data=%s", w->mode);
	crash_image(w, upto, a);
	assert_int_equal(fsimg_run("cp '%s' '%s'", a, e), 0);
	*orphaned = orphans_pending(a);
	int stale = 0;
	/* nostall: journal replay and orphan cleanup at a read-write mount */
	snprintf(where, sizeof where, "%s data=%s seed %llu, crash point %llu, nostall", w->name, w->mode,
		 (unsigned long long)seed, (unsigned long long)upto);
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(a, opts, 0, &fs);
	if (rc)
		fail_msg("%s: mount: %s", where, nostall_errmsg(rc));
	stale += check_state(w, fs, upto, where) > 0;
	assert_int_equal(nostall_umount(fs), 0);
	rc = fsimg_run("e2fsck -fn '%s' >'%s/fsck.out' 2>&1", a, tmpdir);
	if (rc) {
		(void)fsimg_run("head -30 '%s/fsck.out'", tmpdir);
		fail_msg("%s: e2fsck -fn after the nostall recovery: exit %d", where, rc);
	}
	/* e2fsck: journal, orphan list, full check; read by a read-only mount */
	snprintf(where, sizeof where, "%s data=%s seed %llu, crash point %llu, e2fsck", w->name, w->mode,
		 (unsigned long long)seed, (unsigned long long)upto);
	rc = fsimg_run("e2fsck -fy '%s' >'%s/fsck.out' 2>&1", e, tmpdir);
	if (rc != 0 && rc != 1) {
		(void)fsimg_run("head -30 '%s/fsck.out'", tmpdir);
		fail_msg("%s: e2fsck -fy: exit %d", where, rc);
	}
	rc = fsimg_run("e2fsck -fn '%s' >'%s/fsck.out' 2>&1", e, tmpdir);
	if (rc)
		fail_msg("%s: e2fsck -fn after e2fsck -fy: exit %d", where, rc);
	rc = nostall_mount(e, NULL, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		fail_msg("%s: read-only mount: %s", where, nostall_errmsg(rc));
	stale += check_state(w, fs, upto, where) > 0;
	assert_int_equal(nostall_umount(fs), 0);
	if (free_blocks(a) != free_blocks(e))
		fail_msg("%s: nostall leaves %lld free blocks, e2fsck %lld", where, free_blocks(a),
			 free_blocks(e));
	unlink(a);
	unlink(e);
	return stale;
}

/* orphans: the workload allocates past the size on disk without an fsync
 * in the same transaction, so some crash state must need the orphan list
 * (holefill's new blocks are inside the size: ordered instead). */
static void workload_case(const char *name, unsigned bs, void (*fn)(struct wl *), const char *mode,
			  bool orphans)
{
	static struct wl w;
	memset(&w, 0, sizeof w);
	w.name = name;
	w.mode = mode;
	w.bs = bs;
	w.rs = seed ^ (uint64_t)name[0] << 8 ^ bs;
	record(&w, fn);
	for (unsigned k = 0; k < w.nex; k++) {
		w.ex[k].mark_idx = mark_index(w.log, w.ex[k].mark);
		if (w.ex[k].until[0])
			w.ex[k].until_idx = mark_index(w.log, w.ex[k].until);
	}
	struct dev_log_reader *rd;
	assert_int_equal(dev_log_reader_open(w.log, &rd), 0);
	uint64_t total = dev_log_reader_count(rd);
	dev_log_reader_close(rd);
	uint64_t start = mark_index(w.log, "start 0");
	unsigned states = 0, stale = 0, orphaned = 0;
	/* every prefix from the start mark on: a crash after each write */
	for (uint64_t upto = start + 1; upto <= total; upto++) {
		bool orph = false;
		stale += crash_check(&w, upto, &orph) > 0;
		orphaned += orph;
		states++;
	}
	printf("%s data=%s, %u-byte blocks: %u crash states, %u with stale data, %u with orphans "
	       "to clean up\n", name, mode, bs, states, stale, orphaned);
	if (!strcmp(mode, "guarded")) {
		assert_int_equal(stale, 0);
		/* the guard was needed somewhere: blocks past the size on disk */
		if (orphans)
			assert_true(orphaned > 0);
	} else if (!stale)
		fail_msg("%s data=%s: no crash state showed stale data: the check cannot catch it", name,
			 mode);
	unlink(w.img);
	unlink(w.base);
	unlink(w.log);
}

#define CASE(fn, wname, bs, orphans)                                                                \
	static void test_##fn##_guarded(void **state)                                              \
	{                                                                                          \
		workload_case(wname, bs, wl_##fn, "guarded", orphans);                             \
	}                                                                                          \
	static void test_##fn##_writeback(void **state)                                            \
	{                                                                                          \
		workload_case(wname, bs, wl_##fn, "writeback", orphans);                           \
	}

CASE(append, "append", 1024, true)
CASE(overwrite, "overwrite", 4096, true)
CASE(holefill, "holefill", 1024, false)
CASE(truncate_write, "truncate-write", 4096, true)
CASE(rename_replace, "rename-replace", 1024, true)

int main(void)
{
	int orc = fsimg_main_begin("test_fs_guarded_crash", "gcrash", "mke2fs e2fsck dumpe2fs", &seed, tmpdir, sizeof tmpdir);
	if (orc >= 0)
		return orc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_guarded),         cmocka_unit_test(test_append_writeback),
		cmocka_unit_test(test_overwrite_guarded),      cmocka_unit_test(test_overwrite_writeback),
		cmocka_unit_test(test_holefill_guarded),       cmocka_unit_test(test_holefill_writeback),
		cmocka_unit_test(test_truncate_write_guarded), cmocka_unit_test(test_truncate_write_writeback),
		cmocka_unit_test(test_rename_replace_guarded), cmocka_unit_test(test_rename_replace_writeback),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
