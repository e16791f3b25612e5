/* fallocate and crashes (issue 39, item 3; docs/write-data.md,
 * "fallocate"): an ext4 image (mkfs.ext4) mounted over a log: device
 * (docs/devices.md) in each data mode; a file of a known pattern is synced,
 * then preallocated past its end (KEEP_SIZE, several extents), punched in
 * many places (holes across extent boundaries, partial edges), zeroed
 * (ZERO_RANGE, converting written extents to unwritten), written into an
 * unwritten range and into the preallocation past the end, grown by mode 0,
 * with commits between. Every crash point after the sync (a sample past 48)
 * recovers by nostall's mount (the journal replayed) to an image e2fsck -fn
 * finds clean, where the file's size is one it had (or, data=guarded,
 * one on the way to a write past the end) and every byte is the pattern or
 * zero - never stale data of an unwritten or freed block.
 *
 * Seeded (crash point samples): NOSTALL_SEED=N reruns. Oracles: mkfs.ext4,
 * e2fsck. */
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BS 4096u
#define NBLK 96u /* the file's written blocks */
#define POINTS 48 /* crash points checked per mode at most (else sampled) */

static char tmpdir[256];
static uint64_t seed;

static uint8_t pat(uint64_t off)
{
	return (uint8_t)(off * 13 + off / BS + 1) | 1; /* never zero */
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static struct nostall_file *open_rw(struct nostall_fs *fs, const char *path)
{
	struct nostall_file *f = NULL;
	int rc = nostall_create(fs, path, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f);
	if (rc)
		fail_msg("create %s: %s", path, nostall_errmsg(rc));
	return f;
}

/* The workload, on the recording mount. Returns the sizes the file may
 * have after the mark besides its first: after a write past the end, after
 * the last growth. */
static void workload(struct nostall_fs *fs, struct dev *d, uint64_t *written, uint64_t *grown)
{
	struct nostall_file *f = open_rw(fs, "/f");
	uint8_t *buf = malloc(NBLK * BS);
	assert_non_null(buf);
	for (uint64_t i = 0; i < NBLK * BS; i++)
		buf[i] = pat(i);
	assert_int_equal(nostall_pwrite(f, buf, NBLK * BS, 0), (ssize_t)(NBLK * BS));
	assert_int_equal(nostall_fsync(f, 0), 0);
	assert_int_equal(dev_mark(d, "synced"), 0);
	const int keep = NOSTALL_FALLOC_KEEP_SIZE, punch = NOSTALL_FALLOC_PUNCH_HOLE | keep;
	/* preallocation past the end, in pieces so that they are extents of
	 * their own */
	for (unsigned k = 0; k < 6; k++)
		assert_int_equal(nostall_fallocate(f, keep, (NBLK + 20 * k) * BS, 12 * BS), 0);
	assert_int_equal(nostall_sync(fs), 0);
	/* holes: many, some with partial edges */
	for (unsigned k = 0; k < 10; k++)
		assert_int_equal(nostall_fallocate(f, punch, (uint64_t)(k * 9 + 1) * BS + (k & 1) * 700,
						   3 * BS + (k & 2) * 500), 0);
	/* one across the end into the preallocation */
	assert_int_equal(nostall_fallocate(f, punch, (NBLK - 2) * BS + 100, 30 * BS), 0);
	assert_int_equal(nostall_sync(fs), 0);
	/* zeroed ranges: written extents turned unwritten */
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_ZERO_RANGE | keep, 40 * BS + 300, 20 * BS), 0);
	assert_int_equal(nostall_fallocate(f, NOSTALL_FALLOC_ZERO_RANGE | keep, 5 * BS, BS), 0);
	/* written again inside an unwritten range (the data lands: ordered
	 * like a hole fill) */
	assert_int_equal(nostall_pwrite(f, buf + 45 * BS + 10, 2 * BS, 45 * BS + 10), (ssize_t)(2 * BS));
	/* written into the preallocation past the end: the size grows over
	 * converted blocks (guarded: i_disksize moves when the data lands) */
	uint8_t *tail = malloc(2 * BS);
	assert_non_null(tail);
	for (uint64_t i = 0; i < 2 * BS; i++)
		tail[i] = pat((NBLK + 3) * BS + 5 + i);
	assert_int_equal(nostall_pwrite(f, tail, 2 * BS, (NBLK + 3) * BS + 5), (ssize_t)(2 * BS));
	free(tail);
	*written = (NBLK + 5) * BS + 5;
	/* mode 0 grows the size over new unwritten blocks */
	*grown = (NBLK + 150) * BS + 123;
	assert_int_equal(nostall_fallocate(f, 0, NBLK * BS, *grown - NBLK * BS), 0);
	assert_int_equal(nostall_fsync(f, 0), 0);
	assert_int_equal(dev_mark(d, "done"), 0);
	nostall_close(f);
	free(buf);
}

/* A recovered crash state: clean, the size one the file had, each byte the
 * pattern or zero. */
static void check_state(const char *img, uint64_t written, uint64_t grown, bool at_end, const char *what)
{
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(img, NULL, 0, &fs);
	if (rc)
		fail_msg("%s: mount: %s", what, nostall_errmsg(rc));
	assert_int_equal(nostall_umount(fs), 0);
	char msg[4096];
	if (fsimg_fsck(img, msg, sizeof msg))
		fail_msg("%s: e2fsck: %s", what, msg);
	assert_int_equal(nostall_mount(img, "ro", 0, &fs), 0);
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "/f", NOSTALL_O_RDONLY, &f), 0);
	struct nostall_stat st;
	assert_int_equal(nostall_fstat(f, &st), 0);
	/* between the first and the last (data=guarded moves i_disksize up to
	 * pending data, over the preallocated span before it: zeros) */
	if (st.size < NBLK * BS || st.size > grown || (st.size > written && st.size != grown))
		fail_msg("%s: size %llu", what, (unsigned long long)st.size);
	if (at_end && st.size != grown)
		fail_msg("%s: size %llu after the last fsync", what, (unsigned long long)st.size);
	uint8_t *buf = malloc(st.size + 1);
	assert_non_null(buf);
	assert_int_equal(nostall_pread(f, buf, st.size + 1, 0), (ssize_t)st.size);
	/* every byte written had pat(offset): any other is stale */
	for (uint64_t i = 0; i < st.size; i++)
		if (buf[i] != pat(i) && buf[i] != 0)
			fail_msg("%s: byte %llu is %#x (neither %#x nor zero)", what, (unsigned long long)i, buf[i],
				 pat(i));
	free(buf);
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);
}

static void crash_case(const char *mode)
{
	char img[300], base[300], logf[300], crash[300], spec[800];
	snprintf(img, sizeof img, "%s/f.img", tmpdir);
	snprintf(base, sizeof base, "%s/f.base", tmpdir);
	snprintf(logf, sizeof logf, "%s/f.log", tmpdir);
	snprintf(crash, sizeof crash, "%s/f.crash", tmpdir);
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F -b %u -O ^metadata_csum,^64bit,^uninit_bg,^huge_file,"
				   "^dir_nlink,^extra_isize '%s' 16M >/dev/null 2>&1",
				   BS, img),
			 0);
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", img, base), 0);
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", img, logf);
	struct dev *d;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open %s: %s", spec, err_last(rc));
	struct nostall_fs *fs;
	rc = nostall_mount_dev(d, mode, 0, &fs);
	if (rc)
		fail_msg("mount -o %s: %s", mode, nostall_errmsg(rc));
	uint64_t written = 0, grown = 0;
	workload(fs, d, &written, &grown);
	assert_int_equal(nostall_umount(fs), 0);
	dev_close(d);

	/* the crash points after the sync's mark */
	struct dev_log_reader *rd;
	assert_int_equal(dev_log_reader_open(logf, &rd), 0);
	struct dev_log_entry e;
	uint64_t synced = UINT64_MAX, done = UINT64_MAX;
	while (dev_log_reader_next(rd, &e) == 1)
		if (e.flags & DEV_LOG_MARK) {
			if (e.data_len == 6 && !memcmp(e.data, "synced", 6))
				synced = e.index;
			if (e.data_len == 4 && !memcmp(e.data, "done", 4))
				done = e.index;
		}
	dev_log_reader_close(rd);
	assert_true(synced != UINT64_MAX && done != UINT64_MAX);
	uint64_t *pts;
	size_t n;
	assert_int_equal(dev_log_crash_points(logf, &pts, &n), 0);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (pts[i] > synced)
			pts[k++] = pts[i];
	assert_true(k > 4);
	uint64_t s = seed;
	size_t todo = k <= POINTS ? k : POINTS;
	for (size_t i = 0; i < todo; i++) {
		/* every one; past POINTS the first after the sync, the last
		 * and random ones between */
		uint64_t p = k <= POINTS ? pts[i] : i == 0 ? pts[0] : i == 1 ? pts[k - 1] : pts[rnd(&s) % k];
		assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", base, crash), 0);
		char cspec[400];
		snprintf(cspec, sizeof cspec, "file:%s", crash);
		struct dev *cd;
		assert_int_equal(dev_open(cspec, &cd), 0);
		rc = dev_log_replay(logf, p, cd);
		if (rc)
			fail_msg("replay up to %llu: %s", (unsigned long long)p, err_last(rc));
		dev_close(cd);
		char what[200];
		snprintf(what, sizeof what, "%s, crash point %llu (seed %llu)", mode, (unsigned long long)p,
			 (unsigned long long)seed);
		check_state(crash, written, grown, p > done, what);
	}
	free(pts);
	unlink(img);
	unlink(base);
	unlink(logf);
	unlink(crash);
}

static void test_crash_ordered(void **state) { crash_case("data=ordered"); }
static void test_crash_guarded(void **state) { crash_case("data=guarded"); }
static void test_crash_writeback(void **state) { crash_case("data=writeback"); }
static void test_crash_journal(void **state) { crash_case("data=journal"); }

int main(void)
{
	int orc = fsimg_main_begin("test_fs_falloc_crash", "falloccrash", "mkfs.ext4 e2fsck", &seed, tmpdir,
				   sizeof tmpdir);
	if (orc >= 0)
		return orc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_ordered),
		cmocka_unit_test(test_crash_guarded),
		cmocka_unit_test(test_crash_writeback),
		cmocka_unit_test(test_crash_journal),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
