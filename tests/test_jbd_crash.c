/* Journals written by nostall are recovered by others, at every kind of
 * crash point. nostall-test: concurrent
 *
 * crash_points: an ext3 image (ext3_mkfs) on a log: device; the test client
 * journals raw blocks into free data blocks through the image's own journal
 * (inode 8) until the log has wrapped several times. Then, for a sample of
 * the crash points the log allows (after each flush/FUA), the prefix is
 * replayed onto an image file, and
 *   - nostall's recovery and `e2fsck -y -E journal_only` give the same image
 *     (superblock write time and write counter masked);
 *   - that image holds exactly the blocks of the last transaction whose
 *     commit block is in the prefix (found by scanning the raw log, not by
 *     our recovery) as the client's model says;
 *   - `e2fsck -fn` is clean.
 * fault_abort: a fault: device fails a write in the journal area: the
 *   journal aborts (-EROFS afterwards, nothing hangs) and e2fsck recovers
 *   the image to the last committed transaction, like nostall does.
 * async_torn: the same client under journal_async_commit (the commit block
 *   goes out with its log blocks, one flush after them, jbd2's v1 checksum
 *   in it). While mounted the journal superblock carries COMPAT_CHECKSUM and
 *   INCOMPAT_ASYNC_COMMIT; the clean unmount clears them. Crash states that
 *   only a volatile cache can make: the log up to a commit block with one
 *   earlier write of that transaction (since the last flush) not on disk.
 *   nostall and e2fsck must both drop that transaction (the checksum fails
 *   or the log ends at the stale block) and agree byte for byte; the image
 *   holds the transaction before it; the kernel (as root) replays it alike.
 * checksum_corrupt: journal_checksum with ordinary commits: a log block
 *   changed under a commit that was flushed is corruption, not a torn
 *   commit: recovery stops before it and marks the filesystem with errors.
 * crash_points_jbd2: crash_points again (8 points) with journal_64bit and
 *   journal_csum=v3: e2fsck and the kernel verify every checksum.
 * Without e2fsck on the machine the e2fsck halves are skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blk/blk.h"
#include "buf/buf.h"
#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "extfs/mkfs/mkfs.h"
#include "jbd/jbd.h"
#include "jbd/jbd_format.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BS 1024u
#define IMG_BYTES (16u * 1024 * 1024)
#define NPOINTS 24

static char tmpdir[256];
static bool have_e2fsck;

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nostall-jbd-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	have_e2fsck = system("e2fsck -V >/dev/null 2>&1") == 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

struct stack {
	struct dev *d;
	struct ext3_fs *fs;       /* the ext3 mount with its writable journal */
	struct buf_cache *c;      /* the mount's cache and journal */
	struct jbd_journal *j;
	struct jbd_location loc;
	struct ext3_mkfs_layout lay;
};

static void stack_mkfs(struct stack *s, const char *spec)
{
	memset(s, 0, sizeof *s);
	int rc = dev_open(spec, &s->d);
	if (rc)
		fail_msg("dev_open %s: %s", spec, err_last(rc));
	struct ext3_mkfs_params p = { .block_size = BS, .uuid_set = true, .time_set = true, .time = 1234567890,
				      .assume_zeroed = true };
	for (int i = 0; i < 16; i++)
		p.uuid[i] = (uint8_t)(0x40 + i);
	rc = ext3_mkfs_with_layout(s->d, &p, &s->lay);
	if (rc)
		fail_msg("mkfs: %s", err_last(rc));
}

/* What a mount does, by ext3's mount: find the journal, set
 * needs_recovery, load it with the journal options. */
static void stack_mount(struct stack *s, const char *jopts)
{
	struct ext3_mount_opts mo;
	ext3_mount_opts_init(&mo);
	assert_int_equal(ext3_mount_opts_parse(&mo, jopts), 0);
	int rc = ext3_fs_mount(s->d, &mo, EXT3_MOUNT_JOURNAL, &s->fs);
	ext3_mount_opts_release(&mo);
	if (rc)
		fail_msg("mount: %s", err_last(rc));
	/* needs_recovery is on the disk while mounted */
	struct ext3_super_block sb;
	assert_int_equal(dev_rw_sync(s->d, DEV_OP_READ, 2, 2, &sb, 0), 0);
	assert_true(le32_to_cpu(sb.s_feature_incompat) & EXT3_FEATURE_INCOMPAT_RECOVER);
	dev_mark(s->d, "mounted");
	s->j = ext3_fs_journal(s->fs);
	s->c = ext3_fs_cache(s->fs);
	assert_non_null(s->j);
	assert_int_equal(ext3_fs_journal_location(s->fs, &s->loc), 0);
}

/* Unmount (the journal is emptied and needs_recovery cleared unless it
 * aborted: then its error), close the device. */
static int stack_close(struct stack *s)
{
	int rc = ext3_fs_unmount(s->fs);
	dev_close(s->d);
	return rc;
}

/* The client's region: free data blocks of group 0 after mkfs's allocations. */
static void region(const struct stack *s, uint64_t *first, uint64_t *n)
{
	*first = s->lay.alloc_end + 16;
	uint64_t end = s->lay.first_data_block + s->lay.blocks_per_group - 64;
	*n = end - *first < 1500 ? end - *first : 1500;
}

/* ------------------------------------------------------------ images */

static void make_image(const char *path, const char *logfile, uint64_t upto)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, IMG_BYTES), 0);
	close(fd);
	char spec[700];
	snprintf(spec, sizeof spec, "file:%s", path);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	int rc = dev_log_replay(logfile, upto, d);
	if (rc)
		fail_msg("replay: %s", err_last(rc));
	dev_close(d);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[2200];
	snprintf(cmd, sizeof cmd, "cp --sparse=always '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

/* nostall recover, as the CLI does it. */
static struct jbd_recovery_info nostall_recover(const char *path)
{
	char spec[700];
	snprintf(spec, sizeof spec, "file:%s", path);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	struct jbd_recovery_info info;
	int rc = ext3_journal_recover(d, 0, &info, NULL);
	if (rc)
		fail_msg("recover %s: %s", path, err_last(rc));
	dev_close(d);
	return info;
}

static void mask(const char *path)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t z[8] = { 0 };
	/* Times e2fsck may set on its own (write time; last check, which it
	 * has been seen to touch when run while the clock crosses a second). */
	assert_int_equal(pwrite(fd, z, 4, 1024 + 0x30), 4);  /* s_wtime */
	assert_int_equal(pwrite(fd, z, 4, 1024 + 0x40), 4);  /* s_lastcheck */
	assert_int_equal(pwrite(fd, z, 8, 1024 + 0x178), 8); /* s_kbytes_written */
	close(fd);
}

static bool files_equal(const char *a, const char *b)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

/* nostall recovers `ours` (its info in *info if not NULL); e2fsck recovers
 * a copy; both must agree (without e2fsck: nostall only). */
static void check_against_e2fsck_info(const char *ours, bool require_clean, struct jbd_recovery_info *info)
{
	if (!have_e2fsck) {
		struct jbd_recovery_info i = nostall_recover(ours);
		if (info)
			*info = i;
		return;
	}
	char theirs[600], cmd[1400];
	snprintf(theirs, sizeof theirs, "%s.e2fsck", ours);
	/* ours is still the crash image here */
	copy_file(ours, theirs);
	struct jbd_recovery_info i = nostall_recover(ours);
	if (info)
		*info = i;
	snprintf(cmd, sizeof cmd, "e2fsck -y -E journal_only '%s' >/dev/null 2>&1", theirs);
	int rc = system(cmd);
	assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) <= 1);
	mask(ours);
	mask(theirs);
	if (!files_equal(ours, theirs)) {
		snprintf(cmd, sizeof cmd, "cmp -l '%s' '%s' | head -5 >&2", ours, theirs);
		(void)system(cmd);
		fail_msg("nostall and e2fsck recover %s differently", ours);
	}
	if (require_clean) {
		snprintf(cmd, sizeof cmd, "e2fsck -fn '%s' >/dev/null 2>&1", ours);
		rc = system(cmd);
		if (!(WIFEXITED(rc) && WEXITSTATUS(rc) == 0))
			fail_msg("e2fsck -fn %s is not clean", ours);
	}
	unlink(theirs);
}

static void check_against_e2fsck(const char *ours, bool require_clean)
{
	check_against_e2fsck_info(ours, require_clean, NULL);
}

/* Last committed tid in the log prefix, from the raw log entries: the
 * highest sequence of a commit block written to a journal block. */
static bool last_commit_in_prefix(const char *logfile, uint64_t upto, const uint8_t *is_jblock, uint64_t nblocks,
				  uint32_t *tid)
{
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logfile, &r), 0);
	struct dev_log_entry en;
	bool found = false;
	for (uint64_t i = 0; i < upto && dev_log_reader_next(r, &en) == 1; i++) {
		if (en.flags & (DEV_LOG_MARK | DEV_LOG_DISCARD) || !en.nr_sectors)
			continue;
		uint64_t off = en.sector * 512, len = en.nr_sectors * 512;
		for (uint64_t o = (off + BS - 1) / BS * BS; o + BS <= off + len; o += BS) {
			uint64_t b = o / BS;
			if (b >= nblocks || !is_jblock[b])
				continue;
			const struct jbd_header *h = (const void *)((const char *)en.data + (o - off));
			if (be32_to_cpu(h->h_magic) != JBD_MAGIC_NUMBER || be32_to_cpu(h->h_blocktype) != JBD_COMMIT_BLOCK)
				continue;
			uint32_t seq = be32_to_cpu(h->h_sequence);
			if (!found || (int32_t)(seq - *tid) > 0)
				*tid = seq;
			found = true;
		}
	}
	dev_log_reader_close(r);
	return found;
}

static void check_model(const char *path, struct jbd_client *c, uint32_t tid, uint64_t first, uint64_t n)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	unsigned char want[BS], got[BS];
	for (uint64_t b = first; b < first + n; b++) {
		int k = jbd_client_expected(c, tid, b, want);
		if (k < 0)
			continue;
		if (k == 0)
			memset(want, 0, BS);
		assert_int_equal(pread(fd, got, BS, (off_t)(b * BS)), BS);
		if (memcmp(want, got, BS))
			fail_msg("%s: block %llu is not the state after transaction %u", path, (unsigned long long)b, tid);
	}
	close(fd);
}

/* Crash images the kernel replayed in test_crash_points (checked, and
 * skipped or failed loudly, by test_kernel_replay). */
static int kernel_replayed = -1;

/* The Linux kernel as a third recoverer: mount a copy of the crash image
 * on a loop device (ext3 replays the journal at mount), unmount, and hand
 * back the path. Needs root; false when not root (test_kernel_replay then
 * skips with the reason). As root a machine that cannot loop-mount ext3
 * fails the test: the oracle is required there. */
static bool kernel_replay(const char *img, char *out, size_t outlen)
{
	static int usable = -1;
	if (usable == 0)
		return false;
	if (geteuid() != 0) {
		usable = 0;
		return false;
	}
	char mnt[300], cmd[4096];
	snprintf(out, outlen, "%.400s.kernel", img);
	snprintf(mnt, sizeof mnt, "%s/kmnt", tmpdir);
	copy_file(img, out);
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && mount -o loop -t ext3 '%s' '%s' 2>/dev/null", mnt, out, mnt);
	if (system(cmd) != 0) {
		if (usable < 0) {
			/* Is it the machine (no loop device, no ext3) or us? A
			 * fresh mkfs image decides. */
			snprintf(cmd, sizeof cmd,
				 "cp '%s' '%s.probe' && e2fsck -fy '%s.probe' >/dev/null 2>&1; mount -o loop -t ext3 '%s.probe' '%s' 2>/dev/null && umount '%s'",
				 img, out, out, out, mnt, mnt);
			if (system(cmd) != 0)
				fail_msg("running as root, but the kernel cannot loop-mount ext3 here "
					 "(no loop device or no ext3): the kernel replay oracle is required");
		}
		fail_msg("the kernel refused to mount crash image %s", out);
	}
	usable = 1;
	snprintf(cmd, sizeof cmd, "umount '%s'", mnt);
	assert_int_equal(system(cmd), 0);
	return true;
}

/* The crash-point check under mount options jopts, at npoints sampled
 * points (and the end); returns how many went through the kernel too. */
static int crash_points_run(const char *jopts, int npoints, uint32_t want_incompat)
{
	char logfile[512], spec[600], img[512];
	snprintf(logfile, sizeof logfile, "%s/crash.log", tmpdir);
	snprintf(spec, sizeof spec, "log:mem:16M,to=%s", logfile);
	snprintf(img, sizeof img, "%s/crash.img", tmpdir);
	struct stack s;
	stack_mkfs(&s, spec);
	stack_mount(&s, jopts);
	if (want_incompat) {
		/* the journal superblock carries the format while mounted */
		struct jbd_recovery_info ji;
		assert_int_equal(jbd_journal_check_dev(s.d, &s.loc, &ji), 0);
		assert_int_equal(ji.incompat & want_incompat, want_incompat);
	}
	uint64_t first, n;
	region(&s, &first, &n);
	struct jbd_client *c;
	struct jbd_client_params cp = { .j = s.j, .cache = s.c, .first_block = first, .nr_blocks = n, .seed = 4242,
					.max_tx_blocks = 30, .sync_prob = 0.35, .revoke_prob = 0.15, .magic_every = 9,
					.track = true };
	assert_int_equal(jbd_client_create(&cp, &c), 0);
	struct jbd_stats st;
	int steps = 0;
	do {
		assert_int_equal(jbd_client_step(c, NULL), 0);
		jbd_journal_stats(s.j, &st);
		steps++;
	} while ((st.wraps < 3 || steps < 200) && steps < 20000);
	assert_true(st.wraps >= 3);
	/* The journal map, for the log scan. */
	uint64_t nblocks = IMG_BYTES / BS;
	uint8_t *is_j = calloc(nblocks, 1);
	for (uint32_t i = 1; i < st.maxlen; i++) {
		uint64_t p;
		assert_int_equal(s.loc.bmap(s.loc.bmap_ctx, i, &p), 0);
		is_j[p] = 1;
	}
	assert_int_equal(stack_close(&s), 0);

	uint64_t *pts;
	size_t npts;
	assert_int_equal(dev_log_crash_points(logfile, &pts, &npts), 0);
	/* Only crash points after the mount matter (mkfs is not journaled). */
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logfile, &r), 0);
	struct dev_log_entry en;
	uint64_t mounted = 0;
	while (dev_log_reader_next(r, &en) == 1) {
		if ((en.flags & DEV_LOG_MARK) && en.data_len >= 7 && !memcmp(en.data, "mounted", 7)) {
			mounted = en.index + 1;
			break;
		}
	}
	dev_log_reader_close(r);
	assert_true(mounted > 0);
	size_t lo = 0;
	while (lo < npts && pts[lo] <= mounted)
		lo++;
	assert_true(npts - lo > (size_t)npoints);
	uint64_t rng = 99;
	int checked = 0, with_tx = 0, by_kernel = 0;
	for (int k = 0; k <= npoints; k++) {
		size_t idx;
		if (k == npoints) {
			idx = npts - 1; /* the whole log: cleanly unmounted */
		} else {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			idx = lo + (size_t)((rng >> 33) % (npts - lo));
		}
		uint64_t upto = pts[idx];
		make_image(img, logfile, upto);
		uint32_t tid = 0;
		bool any = last_commit_in_prefix(logfile, upto, is_j, nblocks, &tid);
		if (have_e2fsck)
			check_against_e2fsck(img, true);
		else
			(void)nostall_recover(img);
		if (any) {
			check_model(img, c, tid, first, n);
			with_tx++;
		}
		/* Every third point (and the last) also through the kernel. */
		char kimg[512];
		if ((k % 3 == 0 || k == npoints) && kernel_replay(img, kimg, sizeof kimg)) {
			if (any)
				check_model(kimg, c, tid, first, n);
			unlink(kimg);
			by_kernel++;
		}
		checked++;
	}
	assert_int_equal(checked, npoints + 1);
	assert_true(with_tx > npoints / 2);
	fprintf(stderr, "crash points (%s): %d checked, %d with a committed transaction, %d also replayed by the kernel\n",
		jopts, checked, with_tx, by_kernel);
	free(pts);
	free(is_j);
	jbd_client_destroy(c);
	unlink(logfile);
	unlink(img);
	return by_kernel;
}

static void test_crash_points(void **state)
{
	(void)state;
	kernel_replayed = crash_points_run("commit=100,barrier=1", NPOINTS, 0);
}

/* The same with jbd2's write format (issue 39): 64-bit tags and v3
 * checksums, which e2fsck and (as root) the kernel check at every point. */
static void test_crash_points_jbd2(void **state)
{
	(void)state;
	int k = crash_points_run("commit=100,barrier=1,journal_64bit,journal_csum=v3", NPOINTS / 3,
				 JBD_FEATURE_INCOMPAT_64BIT | JBD_FEATURE_INCOMPAT_CSUM_V3);
	if (geteuid() == 0)
		assert_true(k > 0);
}

/* The kernel's half of test_crash_points, reported on its own: a counted
 * skip with its reason when not root, a failure as root if no crash image
 * went through the kernel. */
static void test_kernel_replay(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		printf("[  SKIP    ] not root: the kernel replay of crash images (loop mount) was not run\n");
		fflush(stdout);
		skip();
	}
	if (kernel_replayed < 0)
		fail_msg("test_crash_points did not run to its end");
	assert_true(kernel_replayed > 0);
}

static void test_fault_abort(void **state)
{
	(void)state;
	char img[512], spec[700];
	snprintf(img, sizeof img, "%s/fault.img", tmpdir);
	int fd = open(img, O_CREAT | O_TRUNC | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, IMG_BYTES), 0);
	close(fd);
	/* mkfs on the plain file, then find the journal's log area. */
	struct stack s;
	snprintf(spec, sizeof spec, "file:%s", img);
	stack_mkfs(&s, spec);
	struct ext3_journal *e;
	assert_int_equal(ext3_journal_open(s.d, &e), 0);
	struct jbd_location loc;
	ext3_journal_location(e, &loc);
	uint64_t p1, plast;
	assert_int_equal(loc.bmap(loc.bmap_ctx, 1, &p1), 0);
	assert_int_equal(loc.bmap(loc.bmap_ctx, loc.nr_blocks - 1, &plast), 0);
	ext3_journal_close(e);
	dev_close(s.d);
	/* Writes into the log area fail from the 300th on. */
	snprintf(spec, sizeof spec, "fault:file:%s,op=write,sector=%llu-%llu,after=300,err=eio", img,
		 (unsigned long long)(p1 * (BS / 512)), (unsigned long long)((plast + 1) * (BS / 512) - 1));
	assert_int_equal(dev_open(spec, &s.d), 0);
	stack_mount(&s, "commit=100");
	uint64_t first, n;
	region(&s, &first, &n);
	struct jbd_client *c;
	struct jbd_client_params cp = { .j = s.j, .cache = s.c, .first_block = first, .nr_blocks = n, .seed = 7,
					.max_tx_blocks = 20, .sync_prob = 0.5, .revoke_prob = 0.1, .track = true };
	assert_int_equal(jbd_client_create(&cp, &c), 0);
	int rc = 0, steps = 0;
	while (rc == 0 && steps < 5000) {
		rc = jbd_client_step(c, NULL);
		steps++;
	}
	assert_true(rc == -EIO || rc == -EROFS);
	assert_true(jbd_journal_aborted(s.j));
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(s.j, 1, &h), -EROFS);
	assert_int_equal(jbd_client_step(c, NULL), -EROFS);
	struct jbd_stats st;
	jbd_journal_stats(s.j, &st);
	uint32_t last = st.commit_sequence;
	assert_true(dev_fault_injected(s.d) > 0);
	assert_int_not_equal(stack_close(&s), 0);
	/* e2fsck and nostall recover the image to the last commit. */
	if (have_e2fsck)
		check_against_e2fsck(img, false);
	else
		(void)nostall_recover(img);
	check_model(img, c, last, first, n);
	jbd_client_destroy(c);
	unlink(img);
}

/* ------------------------------------------------ checksums, async commit */

/* The journal superblock's compat and incompat words in an image file. */
static void jsb_features(const char *path, uint64_t jsb_block, uint32_t *compat, uint32_t *incompat)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct jbd_superblock sb;
	assert_int_equal(pread(fd, &sb, sizeof sb, (off_t)(jsb_block * BS)), (ssize_t)sizeof sb);
	close(fd);
	assert_int_equal(be32_to_cpu(sb.s_header.h_magic), JBD_MAGIC_NUMBER);
	*compat = be32_to_cpu(sb.s_feature_compat);
	*incompat = be32_to_cpu(sb.s_feature_incompat);
}

static void read_range(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void write_range(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/* A commit block write and one write of the same transaction, since the
 * last flush, to leave out. */
struct torn {
	uint64_t commit_index; /* the commit block's entry */
	uint32_t tid;
	uint64_t drop_index, drop_sector, drop_nsect;
};

struct run_log {
	struct stack s;
	struct jbd_client *c;
	uint64_t first, n, nblocks, jsb_block;
	uint8_t *is_j;
	char logfile[512];
};

/* Mount with `opts` on a log: device, run the client until the log has
 * wrapped `wraps` times, unmount. */
static void run_client(struct run_log *rl, const char *opts, uint64_t seed, unsigned wraps)
{
	char spec[600];
	snprintf(rl->logfile, sizeof rl->logfile, "%s/async.log", tmpdir);
	snprintf(spec, sizeof spec, "log:mem:16M,to=%s", rl->logfile);
	stack_mkfs(&rl->s, spec);
	stack_mount(&rl->s, opts);
	region(&rl->s, &rl->first, &rl->n);
	struct jbd_client_params cp = { .j = rl->s.j, .cache = rl->s.c, .first_block = rl->first,
					.nr_blocks = rl->n, .seed = seed, .max_tx_blocks = 30, .sync_prob = 0.5,
					.revoke_prob = 0.15, .magic_every = 9, .track = true };
	assert_int_equal(jbd_client_create(&cp, &rl->c), 0);
	struct jbd_stats st;
	int steps = 0;
	do {
		assert_int_equal(jbd_client_step(rl->c, NULL), 0);
		jbd_journal_stats(rl->s.j, &st);
		steps++;
	} while ((st.wraps < wraps || steps < 150) && steps < 20000);
	assert_true(st.wraps >= wraps);
	rl->nblocks = IMG_BYTES / BS;
	rl->is_j = calloc(rl->nblocks, 1);
	assert_non_null(rl->is_j);
	for (uint32_t i = 1; i < st.maxlen; i++) {
		uint64_t p;
		assert_int_equal(rl->s.loc.bmap(rl->s.loc.bmap_ctx, i, &p), 0);
		rl->is_j[p] = 1;
	}
	assert_int_equal(rl->s.loc.bmap(rl->s.loc.bmap_ctx, 0, &rl->jsb_block), 0);
	/* Features as a crash would leave them: on the disk while mounted. */
	char img[600];
	snprintf(img, sizeof img, "%s/mounted.img", tmpdir);
	make_image(img, rl->logfile, UINT64_MAX);
	uint32_t compat, incompat;
	jsb_features(img, rl->jsb_block, &compat, &incompat);
	assert_true(compat & JBD_FEATURE_COMPAT_CHECKSUM);
	assert_int_equal(!!(incompat & JBD_FEATURE_INCOMPAT_ASYNC_COMMIT), !!strstr(opts, "async"));
	if (strstr(opts, "async"))
		assert_true(st.async_flushes > 0);
	else
		assert_int_equal(st.async_flushes, 0);
	assert_int_equal(stack_close(&rl->s), 0);
	/* A clean unmount leaves a journal a 2.6.30 ext3 accepts. */
	make_image(img, rl->logfile, UINT64_MAX);
	jsb_features(img, rl->jsb_block, &compat, &incompat);
	assert_int_equal(compat & JBD_FEATURE_COMPAT_CHECKSUM, 0);
	assert_int_equal(incompat & JBD_FEATURE_INCOMPAT_ASYNC_COMMIT, 0);
	unlink(img);
}

static void run_client_free(struct run_log *rl)
{
	jbd_client_destroy(rl->c);
	free(rl->is_j);
	unlink(rl->logfile);
}

/* Every commit block after the mount with a write of its transaction
 * (journal blocks, not a revoke block, since the last flush) to drop,
 * picked with rng. */
static size_t find_torn(const struct run_log *rl, struct torn *out, size_t max, uint64_t rng)
{
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(rl->logfile, &r), 0);
	struct dev_log_entry en;
	struct torn cand[64];
	size_t ncand = 0, nout = 0, seen = 0;
	bool mounted = false;
	while (dev_log_reader_next(r, &en) == 1) {
		if (en.flags & DEV_LOG_MARK) {
			if (en.data_len >= 7 && !memcmp(en.data, "mounted", 7))
				mounted = true;
			continue;
		}
		if (en.flags & DEV_LOG_FLUSH)
			ncand = 0; /* everything before is durable */
		if (!en.nr_sectors || (en.flags & DEV_LOG_DISCARD) || !mounted)
			continue;
		uint64_t b = en.sector * 512 / BS;
		if (b >= rl->nblocks || !rl->is_j[b])
			continue;
		const struct jbd_header *h = en.data;
		bool hdr = be32_to_cpu(h->h_magic) == JBD_MAGIC_NUMBER;
		uint32_t type = hdr ? be32_to_cpu(h->h_blocktype) : 0;
		if (hdr && type == JBD_COMMIT_BLOCK) {
			if (ncand) {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				struct torn t = cand[(rng >> 33) % ncand];
				t.commit_index = en.index;
				t.tid = be32_to_cpu(h->h_sequence);
				/* Reservoir sample of max over all commits. */
				seen++;
				if (nout < max) {
					out[nout++] = t;
				} else {
					rng = rng * 6364136223846793005ull + 1442695040888963407ull;
					uint64_t k = (rng >> 33) % seen;
					if (k < max)
						out[k] = t;
				}
			}
			ncand = 0;
			continue;
		}
		if (hdr && type == JBD_REVOKE_BLOCK)
			continue; /* not covered by the v1 checksum (as in jbd2) */
		if (ncand < 64)
			cand[ncand++] = (struct torn){ .drop_index = en.index, .drop_sector = en.sector,
						       .drop_nsect = en.nr_sectors };
	}
	dev_log_reader_close(r);
	return nout;
}

/* The crash image of t: the log through its commit block, with the
 * dropped write as it was before that write: all of it when it is one
 * block, else one block after its first (a cache that kept only some
 * sectors of a run: the descriptor at its head survives, so only the
 * checksum can tell). False when that changed nothing (not a torn state). */
static bool torn_image(const struct run_log *rl, const struct torn *t, const char *img)
{
	char before[600];
	snprintf(before, sizeof before, "%s.before", img);
	size_t len = (size_t)t->drop_nsect * 512;
	uint64_t off = t->drop_sector * 512;
	if (len > BS) {
		uint64_t nb = len / BS;
		off += (1 + (t->drop_index * 7919) % (nb - 1)) * BS;
		len = BS;
	}
	char *old = malloc(len), *cur = malloc(len);
	assert_true(old && cur);
	make_image(before, rl->logfile, t->drop_index);
	read_range(before, off, old, len);
	unlink(before);
	make_image(img, rl->logfile, t->commit_index + 1);
	read_range(img, off, cur, len);
	bool differs = memcmp(old, cur, len) != 0;
	if (differs)
		write_range(img, off, old, len);
	free(old);
	free(cur);
	return differs;
}

static void test_async_torn(void **state)
{
	(void)state;
	struct run_log rl = { 0 };
	run_client(&rl, "data=writeback,commit=100,barrier=1,journal_async_commit", 9191, 1);
	struct torn ts[10];
	size_t nt = find_torn(&rl, ts, 10, 31337);
	assert_true(nt >= 5);
	char img[512];
	snprintf(img, sizeof img, "%s/torn.img", tmpdir);
	int checked = 0, torn_by_csum = 0, by_kernel = 0;
	for (size_t i = 0; i < nt; i++) {
		if (!torn_image(&rl, &ts[i], img))
			continue;
		char kimg[600];
		bool kernel = i % 2 == 0 && kernel_replay(img, kimg, sizeof kimg);
		struct jbd_recovery_info info;
		check_against_e2fsck_info(img, true, &info);
		/* The torn transaction is never replayed: its checksum fails, or
		 * the log ends at the stale block before its commit. */
		if (info.end_tid != ts[i].tid)
			fail_msg("commit %u torn (entry %llu left out): recovery ended at %u", ts[i].tid,
				 (unsigned long long)ts[i].drop_index, info.end_tid);
		assert_false(info.failed);
		if (info.torn_commit)
			torn_by_csum++;
		check_model(img, rl.c, ts[i].tid - 1, rl.first, rl.n);
		if (kernel) {
			check_model(kimg, rl.c, ts[i].tid - 1, rl.first, rl.n);
			unlink(kimg);
			by_kernel++;
		}
		checked++;
	}
	fprintf(stderr, "async commit: %d torn commits checked, %d caught by the checksum, %d also by the kernel\n",
		checked, torn_by_csum, by_kernel);
	assert_true(checked >= 3);
	assert_true(torn_by_csum >= 1);
	unlink(img);
	run_client_free(&rl);
}

static void test_checksum_corrupt(void **state)
{
	(void)state;
	struct run_log rl = { 0 };
	run_client(&rl, "commit=100,barrier=1,journal_checksum", 4711, 1);
	/* Without async commit a commit block follows a flush: whatever it
	 * closes is durable, so a log block that changes under it is damage.
	 * find_torn sees no candidate (the flush clears them): corrupt a
	 * logged block of the last transaction in the image instead. */
	struct torn ts[4];
	assert_int_equal(find_torn(&rl, ts, 4, 1), 0);
	char img[512];
	snprintf(img, sizeof img, "%s/corrupt.img", tmpdir);
	/* The last commit block and a data block before it in the log. */
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(rl.logfile, &r), 0);
	struct dev_log_entry en;
	uint64_t commit_index = 0, data_block = 0, last_data_block = 0;
	uint32_t tid = 0;
	while (dev_log_reader_next(r, &en) == 1) {
		if (!en.nr_sectors || (en.flags & (DEV_LOG_MARK | DEV_LOG_DISCARD)))
			continue;
		uint64_t b = en.sector * 512 / BS;
		if (b >= rl.nblocks || !rl.is_j[b])
			continue;
		const struct jbd_header *h = en.data;
		if (be32_to_cpu(h->h_magic) != JBD_MAGIC_NUMBER) {
			last_data_block = b;
			continue;
		}
		if (be32_to_cpu(h->h_blocktype) == JBD_COMMIT_BLOCK && last_data_block) {
			commit_index = en.index;
			tid = be32_to_cpu(h->h_sequence);
			data_block = last_data_block;
			last_data_block = 0;
		}
	}
	dev_log_reader_close(r);
	assert_true(commit_index > 0);
	make_image(img, rl.logfile, commit_index + 1);
	char blk[BS];
	read_range(img, data_block * BS, blk, BS);
	blk[BS / 2] ^= 0x5a;
	write_range(img, data_block * BS, blk, BS);
	struct jbd_recovery_info info = nostall_recover(img);
	assert_true(info.failed);
	assert_int_equal(info.failed_commit, tid);
	assert_int_equal(info.end_tid, tid);
	assert_true(info.checksums_verified > 0);
	check_model(img, rl.c, tid - 1, rl.first, rl.n);
	/* Marked as having errors, for e2fsck to look at. */
	struct ext3_super_block sb;
	read_range(img, 1024, &sb, sizeof sb);
	assert_true(le16_to_cpu(sb.s_state) & EXT3_ERROR_FS);
	unlink(img);
	run_client_free(&rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_points),
		cmocka_unit_test(test_kernel_replay),
		cmocka_unit_test(test_crash_points_jbd2),
		cmocka_unit_test(test_fault_abort),
		cmocka_unit_test(test_async_torn),
		cmocka_unit_test(test_checksum_corrupt),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
