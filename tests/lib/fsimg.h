/* The shared image fixture of the write-path tests: a private temporary
 * directory, images made by mke2fs, ext3-level mounts (writable or
 * read-only, on an image or any device spec), the e2fsck -fn / -fy verdict
 * with its output, scans of e2fsprogs output, and single allocation steps
 * in journal handles of their own. The functions return plain codes (no
 * cmocka); the static inline section at the end (compiled only after
 * <cmocka.h>) turns them into test failures that carry the oracle's output,
 * and wraps the library's nostall_mount the same way. */
#ifndef NOSTALL_TESTS_FSIMG_H
#define NOSTALL_TESTS_FSIMG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "testfs.h"

struct dev;
struct jbd_handle;
struct ext3_fs;
struct ext3_inode;
struct ext3_mount_opts;

/* Run a shell command (printf format): its exit status, -1 if it did not
 * exit normally. */
int fsimg_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The command's whole output (stdout; add 2>&1 for stderr), NUL-terminated,
 * truncated to n - 1 bytes; returns the exit status like fsimg_run. */
int fsimg_out(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* mkdtemp /tmp/nostall_<tag>_XXXXXX into out. 0 or -errno. */
int fsimg_tmpdir(char *out, size_t n, const char *tag);
/* rm -rf it, unless NOSTALL_TEST_KEEP or NOSTALL_KEEP is set (then say
 * where it is). */
void fsimg_tmpdir_remove(const char *dir);
/* The start of a test program's main(): the seed (NOSTALL_SEED=N, else
 * time ^ pid; printed with the rerun command) into *seed unless seed is
 * NULL, the temp dir (fsimg_tmpdir), the oracles (oracles_check). Returns
 * -1 to go on, else main's exit status (the temp dir is gone then). */
int fsimg_main_begin(const char *test, const char *tag, const char *oracles, uint64_t *seed,
		     char *dir, size_t n);

/* mke2fs -q -t ext3 -F -b bs EXTRA PATH KIBk. 0 or mke2fs's exit status.
 * The type and more options come from the environment when set
 * (testfs.h: NOSTALL_TEST_FS, NOSTALL_TEST_MKFS_OPTS). */
int fsimg_mkfs(const char *path, unsigned bs, unsigned kib, const char *extra);
/* e2fsck -fn: 0 when clean, else its exit status with its output in msg
 * (may be NULL). */
int fsimg_fsck(const char *path, char *msg, size_t n);

/* An ext3-level mount with the root inode held: writable
 * (EXT3_MOUNT_JOURNAL) from fsimg_mount, either kind from the _opts and
 * _spec variants. */
struct fsimg_mnt {
	struct dev *dev;
	struct ext3_fs *fs;
	struct ext3_inode *root;
};
/* o may be NULL (the defaults). 0 or the error (message: err_last). */
int fsimg_mount(const char *path, const struct ext3_mount_opts *o, struct fsimg_mnt *m);
/* Put the root, unmount, close the device: 0 or the unmount's error. */
int fsimg_umount(struct fsimg_mnt *m);
/* fsimg_mount with the options as text (ext3_mount_opts_parse; NULL: the
 * defaults) and the ext3_fs_mount flags (EXT3_MOUNT_JOURNAL: writable; 0:
 * read-only). 0 or the error (message: err_last). */
int fsimg_mount_opts(const char *path, const char *opts, unsigned flags, struct fsimg_mnt *m);
/* The same on a device spec (dev_open: "log:file:IMG,to=LOG", "fault:...",
 * "file:IMG"). */
int fsimg_mount_spec(const char *spec, const char *opts, unsigned flags, struct fsimg_mnt *m);

/* e2fsck -fy (replays the journal, repairs): 0 when its exit status is 0
 * or 1 (errors corrected), else that status with its output in msg. */
int fsimg_fsck_repair(const char *path, char *msg, size_t n);
/* The number of lines of the command's output (stdout) that contain
 * needle; -1 if the command could not be started. */
int fsimg_count(const char *needle, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The number just after key in the first output line that contains key
 * (strtoll base 0; key "" is the first line); -1 when no line has it. */
long long fsimg_num(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* debugfs -w -R REQ on the image (its output discarded): its exit status. */
int fsimg_debugfs_w(const char *path, const char *req);

/* A test's image file and its mount. */
struct fsimg_fx {
	char img[300];
	struct fsimg_mnt m;
};
/* x->img = DIR/NAME.img, made afresh by fsimg_mkfs (m zeroed): 0 or
 * mke2fs's exit status. */
int fsimg_fx_mkfs(struct fsimg_fx *x, const char *dir, const char *name, unsigned bs, unsigned kib,
		  const char *extra);

/* The number after key ("Free blocks:") in dumpe2fs -h: -1 if none. */
long long fsimg_dumpe2fs_num(const char *path, const char *key);
/* A 16-bit group descriptor field summed over the groups (in memory). */
#define FSIMG_GD_SUM(fs, field) fsimg_gd_sum(fs, offsetof(struct ext3_group_desc, field))
uint64_t fsimg_gd_sum(const struct ext3_fs *fs, size_t off);

/* ext3-level steps, each in a journal handle of its own (ext3/write.h),
 * for tests of the allocators and directories below the namei layer. */
/* A new inode (mode; uid, gid 0; links 0) from dir's group policy, dir
 * locked meanwhile; *out referenced and unlocked. */
int fsimg_new_inode(struct ext3_fs *fs, struct ext3_inode *dir, uint16_t mode,
		    struct ext3_inode **out);
/* Free in's number (its blocks already freed) and drop the reference. */
int fsimg_free_inode(struct ext3_fs *fs, struct ext3_inode *in);
/* Allocate up to n blocks for in at goal: *first, *count (ext3_new_blocks). */
int fsimg_new_blocks(struct ext3_fs *fs, struct ext3_inode *in, uint64_t goal, uint32_t n,
		     uint64_t *first, uint32_t *count);
/* Free n blocks from first (data blocks: no journal forget). */
int fsimg_free_blocks(struct ext3_fs *fs, struct ext3_inode *in, uint64_t first, uint32_t n);

/* cmocka conveniences: defined only where the test included <cmocka.h>
 * before this header (cmocka's fail_msg is a macro). Each fails the test
 * with the oracle's output or the error's message. */
#ifdef fail_msg
#include <stdlib.h>

#include "extfs/core/ext3.h"
#include "extfs/core/write.h"
#include "nostall/nostall.h"
#include "util/err.h"

/* A block size NOSTALL_TEST_BLOCK_SIZE leaves out (testfs.h): the test
 * is skipped, saying why. */
static inline void fsimg_skip_unwanted_bs(unsigned bs)
{
	if (!testfs_bs_wanted(bs)) {
		print_message("[  SKIP    ] %u-byte blocks: NOSTALL_TEST_BLOCK_SIZE=%s\n", bs,
			      getenv("NOSTALL_TEST_BLOCK_SIZE"));
		skip();
	}
}

/* mke2fs as fsimg_mkfs, or fail (or skip: fsimg_skip_unwanted_bs). */
static inline void fsimg_assert_mkfs(const char *path, unsigned bs, unsigned kib, const char *extra)
{
	fsimg_skip_unwanted_bs(bs);
	int rc = fsimg_mkfs(path, bs, kib, extra);
	if (rc)
		fail_msg("mke2fs -b %u %s %s %uk: exit %d", bs, extra ? extra : "", path, kib, rc);
}

/* e2fsck -fn must find the image clean. */
static inline void fsimg_assert_clean(const char *path)
{
	static char msg[16384];
	int rc = fsimg_fsck(path, msg, sizeof msg);
	if (rc)
		fail_msg("e2fsck -fn %s: exit %d:\n%s", path, rc, msg);
}

/* e2fsck -fy must repair the image, then e2fsck -fn find it clean. */
static inline void fsimg_assert_repaired(const char *path)
{
	static char msg[16384];
	int rc = fsimg_fsck_repair(path, msg, sizeof msg);
	if (rc)
		fail_msg("e2fsck -fy %s: exit %d:\n%s", path, rc, msg);
	fsimg_assert_clean(path);
}

/* An ext3-level mount as fsimg_mount_opts, or fail. */
static inline void fsimg_assert_mount(const char *path, const char *opts, unsigned flags,
				      struct fsimg_mnt *m)
{
	int rc = fsimg_mount_opts(path, opts, flags, m);
	if (rc)
		fail_msg("mount %s -o %s: %s", path, opts ? opts : "", err_last(rc));
}

static inline void fsimg_assert_mount_spec(const char *spec, const char *opts, unsigned flags,
					   struct fsimg_mnt *m)
{
	int rc = fsimg_mount_spec(spec, opts, flags, m);
	if (rc)
		fail_msg("mount %s -o %s: %s", spec, opts ? opts : "", err_last(rc));
}

static inline void fsimg_assert_umount(struct fsimg_mnt *m)
{
	int rc = fsimg_umount(m);
	if (rc)
		fail_msg("unmount: %s", err_last(rc));
}

/* fsimg_num on the shell command cmd, or fail when no line has key. */
static inline long long fsimg_assert_num(const char *key, const char *cmd)
{
	long long v = fsimg_num(key, "%s", cmd);
	if (v < 0)
		fail_msg("%s: no '%s'", cmd, key);
	return v;
}

/* fsimg_fx_mkfs, then a writable mount with the options text mopts (NULL:
 * the defaults), or fail. */
static inline void fsimg_fx_open(struct fsimg_fx *x, const char *dir, const char *name,
				 unsigned bs, unsigned kib, const char *extra, const char *mopts)
{
	fsimg_skip_unwanted_bs(bs);
	int rc = fsimg_fx_mkfs(x, dir, name, bs, kib, extra);
	if (rc)
		fail_msg("mke2fs -b %u %s %s %uk: exit %d", bs, extra ? extra : "", x->img, kib, rc);
	fsimg_assert_mount(x->img, mopts, EXT3_MOUNT_JOURNAL, &x->m);
}

/* Unmount (must succeed); with fsck, e2fsck -fn must find it clean. */
static inline void fsimg_fx_close(struct fsimg_fx *x, bool fsck)
{
	fsimg_assert_umount(&x->m);
	if (fsck)
		fsimg_assert_clean(x->img);
}

/* A journal handle of credits, or fail; fsimg_hstop requires the stop to
 * succeed. */
static inline struct jbd_handle *fsimg_hstart(struct ext3_fs *fs, int credits)
{
	struct jbd_handle *h = NULL;
	int rc = ext3_journal_start(fs, credits, &h);
	if (rc)
		fail_msg("ext3_journal_start: %s", err_last(rc));
	return h;
}

static inline void fsimg_hstop(struct jbd_handle *h)
{
	int rc = ext3_journal_stop(h);
	if (rc)
		fail_msg("ext3_journal_stop: %s", err_last(rc));
}

/* fsimg_new_inode / fsimg_free_inode / fsimg_free_blocks, or fail. */
static inline struct ext3_inode *fsimg_assert_new_inode(struct ext3_fs *fs,
							struct ext3_inode *dir, uint16_t mode)
{
	struct ext3_inode *in = NULL;
	int rc = fsimg_new_inode(fs, dir, mode, &in);
	if (rc)
		fail_msg("ext3_new_inode: %s", err_last(rc));
	return in;
}

static inline void fsimg_assert_free_inode(struct ext3_fs *fs, struct ext3_inode *in)
{
	int rc = fsimg_free_inode(fs, in);
	if (rc)
		fail_msg("ext3_free_inode: %s", err_last(rc));
}

static inline void fsimg_assert_free_blocks(struct ext3_fs *fs, struct ext3_inode *in,
					    uint64_t first, uint32_t n)
{
	int rc = fsimg_free_blocks(fs, in, first, n);
	if (rc)
		fail_msg("ext3_free_blocks %llu+%u: %s", (unsigned long long)first, n, err_last(rc));
}

/* A library (nostall_mount) mount of spec, or fail. */
static inline struct nostall_fs *fsimg_api_mount(const char *spec, const char *opts,
						 unsigned flags)
{
	char ob[512];
	opts = testfs_mount_opts(opts, ob, sizeof ob); /* no data= without a journal */
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(spec, opts, flags, &fs);
	if (rc)
		fail_msg("mount %s -o %s: %s", spec, opts ? opts : "", nostall_errmsg(rc));
	return fs;
}

static inline void fsimg_api_umount(struct nostall_fs *fs)
{
	int rc = nostall_umount(fs);
	if (rc)
		fail_msg("umount: %s", nostall_errmsg(rc));
}
#endif

#endif
