/* The shared image fixture of the write-path tests: a private temporary
 * directory, images made by mke2fs, writable ext3-level mounts, and the
 * e2fsck -fn verdict with its output. Plain return codes (no cmocka): the
 * tests turn them into failures with their own messages. */
#ifndef NOSTALL_TESTS_FSIMG_H
#define NOSTALL_TESTS_FSIMG_H

#include <stddef.h>

struct dev;
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
/* rm -rf it, unless NOSTALL_TEST_KEEP is set (then say where it is). */
void fsimg_tmpdir_remove(const char *dir);

/* mke2fs -q -t ext3 -F -b bs EXTRA PATH KIBk. 0 or mke2fs's exit status. */
int fsimg_mkfs(const char *path, unsigned bs, unsigned kib, const char *extra);
/* e2fsck -fn: 0 when clean, else its exit status with its output in msg
 * (may be NULL). */
int fsimg_fsck(const char *path, char *msg, size_t n);

/* A writable ext3-level mount of an image file (EXT3_MOUNT_JOURNAL), with
 * the root inode held. */
struct fsimg_mnt {
	struct dev *dev;
	struct ext3_fs *fs;
	struct ext3_inode *root;
};
/* o may be NULL (the defaults). 0 or the error (message: err_last). */
int fsimg_mount(const char *path, const struct ext3_mount_opts *o, struct fsimg_mnt *m);
/* Put the root, unmount, close the device: 0 or the unmount's error. */
int fsimg_umount(struct fsimg_mnt *m);

#endif
