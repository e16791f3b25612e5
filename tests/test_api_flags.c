/* Inode flags through the library (nostall_setflags, nostall_stat.flags;
 * include/nostall/nostall.h): what chattr sets is on disk as Linux's ext3
 * keeps it (debugfs reads it back), the type masks and the unmodifiable
 * flags hold, and each flag does what Linux's does: immutable and
 * append-only refuse the changes the kernel refuses (-EPERM), sync and
 * dirsync make the change commit before the call returns (the journal's
 * commit count moves), noatime stops atime updates. In each data mode;
 * the image stays e2fsck -fn clean. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/fstarget_nostall.h"
#include "lib/oracles.h"

#include "api/api_int.h"
#include "extfs/core/ext3_int.h"
#include "jbd/jbd.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256], img[300];
static const char *const modes[] = { "data=guarded", "data=ordered", "data=writeback", "data=journal" };

static int setup(void **state)
{
	snprintf(img, sizeof img, "%s/flags.img", tmpdir);
	return fst_nostall_mkfs(img, 4096, 32u << 20) ? -1 : 0;
}

static int teardown(void **state)
{
	unlink(img);
	return 0;
}

static uint32_t flags_of(struct nostall_fs *fs, const char *path)
{
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, path, NOSTALL_NOFOLLOW, &st), 0);
	return st.flags;
}

static void put(struct nostall_fs *fs, const char *path, const char *data)
{
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_TRUNC, 0644, &f), 0);
	assert_int_equal(nostall_write(f, data, strlen(data)), (ssize_t)strlen(data));
	assert_int_equal(nostall_flush(f), 0);
	nostall_close(f);
}

static uint64_t commits(struct nostall_fs *fs)
{
	struct jbd_stats js;
	jbd_journal_stats(fs->e->journal, &js);
	return js.commits;
}

/* Set, read back, survive a remount, match debugfs; masks by type. */
static void test_setflags(void **state)
{
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	put(fs, "/f", "data");
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	assert_int_equal(nostall_mknod(fs, "/p", 0010644, 0), 0);
	struct nostall_stat st0, st1;
	assert_int_equal(nostall_stat(fs, "/f", 0, &st0), 0);
	usleep(20000);
	assert_int_equal(nostall_setflags(fs, "/f", 0, NOSTALL_FL_NODUMP | NOSTALL_FL_NOATIME | NOSTALL_FL_SYNC), 0);
	assert_int_equal(nostall_stat(fs, "/f", 0, &st1), 0);
	assert_int_equal(st1.flags, NOSTALL_FL_NODUMP | NOSTALL_FL_NOATIME | NOSTALL_FL_SYNC);
	assert_true(st1.ctime.sec > st0.ctime.sec ||
		    (st1.ctime.sec == st0.ctime.sec && st1.ctime.nsec > st0.ctime.nsec));
	/* directory-only flags are dropped on a file, kept on a directory */
	assert_int_equal(nostall_setflags(fs, "/f", 0, NOSTALL_FL_DIRSYNC | NOSTALL_FL_TOPDIR), 0);
	assert_int_equal(flags_of(fs, "/f"), 0);
	assert_int_equal(nostall_setflags(fs, "/d", 0, NOSTALL_FL_DIRSYNC | NOSTALL_FL_TOPDIR), 0);
	assert_int_equal(flags_of(fs, "/d"), NOSTALL_FL_DIRSYNC | NOSTALL_FL_TOPDIR);
	/* a fifo keeps only nodump and noatime */
	assert_int_equal(nostall_setflags(fs, "/p", 0, NOSTALL_FL_IMMUTABLE | NOSTALL_FL_NODUMP), 0);
	assert_int_equal(flags_of(fs, "/p"), NOSTALL_FL_NODUMP);
	/* flags outside the user-modifiable set are not the caller's */
	assert_int_equal(nostall_setflags(fs, "/f", 0, NOSTALL_FL_INDEX | 0x80000u), 0);
	assert_int_equal(flags_of(fs, "/f"), 0);
	/* per-file data journaling cannot be switched */
	assert_int_equal(nostall_setflags(fs, "/f", 0, NOSTALL_FL_JOURNAL_DATA), -EOPNOTSUPP);
	assert_int_equal(flags_of(fs, "/f"), 0);
	assert_int_equal(nostall_setflags(fs, "/nope", 0, 0), -ENOENT);
	assert_int_equal(nostall_setflags(fs, "/f", 0, NOSTALL_FL_APPEND | NOSTALL_FL_NODUMP), 0);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);

	char out[4096];
	assert_int_equal(fsimg_out(out, sizeof out, "debugfs -R 'stat /f' %s 2>/dev/null", img), 0);
	assert_non_null(strstr(out, "Flags: 0x60"));
	fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	assert_int_equal(flags_of(fs, "/f"), NOSTALL_FL_APPEND | NOSTALL_FL_NODUMP);
	assert_int_equal(flags_of(fs, "/d"), NOSTALL_FL_DIRSYNC | NOSTALL_FL_TOPDIR);
	assert_int_equal(nostall_setflags(fs, "/f", 0, 0), -EROFS);
	fsimg_api_umount(fs);
}

/* Immutable: every change of the inode or its names is -EPERM; reading
 * works; clearing the flag restores everything. */
static void check_immutable(const char *mode)
{
	struct nostall_fs *fs = fsimg_api_mount(img, mode, 0);
	put(fs, "/i", "data");
	struct nostall_file *w, *f;
	assert_int_equal(nostall_create(fs, "/i", NOSTALL_O_WRONLY, 0, &w), 0);
	assert_int_equal(nostall_setflags(fs, "/i", 0, NOSTALL_FL_IMMUTABLE), 0);
	assert_int_equal(nostall_create(fs, "/i", NOSTALL_O_WRONLY, 0, &f), -EPERM);
	assert_int_equal(nostall_create(fs, "/i", NOSTALL_O_RDWR | NOSTALL_O_APPEND, 0, &f), -EPERM);
	assert_int_equal(nostall_create(fs, "/i", NOSTALL_O_RDONLY | NOSTALL_O_TRUNC, 0, &f), -EPERM);
	/* a writer opened before the flag was set */
	assert_int_equal(nostall_pwrite(w, "x", 1, 0), -EPERM);
	assert_int_equal(nostall_ftruncate(w, 0), -EPERM);
	assert_int_equal(nostall_flush(w), 0);
	nostall_close(w);
	assert_int_equal(nostall_truncate(fs, "/i", 0), -EPERM);
	assert_int_equal(nostall_chmod(fs, "/i", 0, 0600), -EPERM);
	assert_int_equal(nostall_chown(fs, "/i", 0, 5, 5), -EPERM);
	assert_int_equal(nostall_utimens(fs, "/i", 0, NULL), -EPERM);
	assert_int_equal(nostall_setxattr(fs, "/i", 0, "user.k", "v", 1, 0), -EPERM);
	assert_int_equal(nostall_unlink(fs, "/i"), -EPERM);
	assert_int_equal(nostall_rename(fs, "/i", "/j", 0), -EPERM);
	assert_int_equal(nostall_link(fs, "/i", "/j"), -EPERM);
	char buf[8] = { 0 };
	assert_int_equal(nostall_create(fs, "/i", NOSTALL_O_RDONLY, 0, &f), 0);
	assert_int_equal(nostall_read(f, buf, sizeof buf), 4);
	assert_memory_equal(buf, "data", 4);
	assert_int_equal(nostall_flush(f), 0);
	nostall_close(f);
	/* an immutable directory takes no new names and loses none */
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	put(fs, "/d/in", "x");
	assert_int_equal(nostall_setflags(fs, "/d", 0, NOSTALL_FL_IMMUTABLE), 0);
	assert_int_equal(nostall_create(fs, "/d/new", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), -EPERM);
	assert_int_equal(nostall_unlink(fs, "/d/in"), -EPERM);
	assert_int_equal(nostall_rename(fs, "/d/in", "/out", 0), -EPERM);
	put(fs, "/d/in", "y"); /* its files' data stays writable */
	assert_int_equal(nostall_setflags(fs, "/d", 0, 0), 0);
	assert_int_equal(nostall_setflags(fs, "/i", 0, 0), 0);
	put(fs, "/i", "new");
	assert_int_equal(nostall_unlink(fs, "/i"), 0);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
}

/* Append-only: writers must append; no truncate, attribute change,
 * unlink or rename; touch (times = now) is allowed. */
static void check_append(const char *mode)
{
	struct nostall_fs *fs = fsimg_api_mount(img, mode, 0);
	put(fs, "/a", "log:");
	assert_int_equal(nostall_setflags(fs, "/a", 0, NOSTALL_FL_APPEND), 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/a", NOSTALL_O_WRONLY, 0, &f), -EPERM);
	assert_int_equal(nostall_create(fs, "/a", NOSTALL_O_WRONLY | NOSTALL_O_APPEND | NOSTALL_O_TRUNC, 0, &f),
			 -EPERM);
	assert_int_equal(nostall_create(fs, "/a", NOSTALL_O_WRONLY | NOSTALL_O_APPEND, 0, &f), 0);
	assert_int_equal(nostall_write(f, "one", 3), 3);
	assert_int_equal(nostall_pwrite(f, "two", 3, 0), 3); /* O_APPEND: at the end anyway */
	/* a caller that placed the write itself (a FUSE daemon) */
	assert_int_equal(nostall_pwrite_flags(f, "3", 1, 10, NOSTALL_PWRITE_AT), 1);
	assert_int_equal(nostall_ftruncate(f, 0), -EPERM);
	assert_int_equal(nostall_flush(f), 0);
	nostall_close(f);
	char buf[16] = { 0 };
	assert_int_equal(nostall_create(fs, "/a", NOSTALL_O_RDONLY, 0, &f), 0);
	assert_int_equal(nostall_read(f, buf, sizeof buf), 11);
	assert_memory_equal(buf, "log:onetwo3", 11);
	assert_int_equal(nostall_flush(f), 0);
	nostall_close(f);
	assert_int_equal(nostall_truncate(fs, "/a", 0), -EPERM);
	assert_int_equal(nostall_chmod(fs, "/a", 0, 0600), -EPERM);
	assert_int_equal(nostall_setxattr(fs, "/a", 0, "user.k", "v", 1, 0), -EPERM);
	assert_int_equal(nostall_unlink(fs, "/a"), -EPERM);
	assert_int_equal(nostall_rename(fs, "/a", "/b", 0), -EPERM);
	assert_int_equal(nostall_utimens(fs, "/a", 0, NULL), 0);
	const struct nostall_timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };
	assert_int_equal(nostall_utimens(fs, "/a", 0, ts), -EPERM);
	struct nostall_setattr sa = { .valid = NOSTALL_SET_ATIME_NOW | NOSTALL_SET_MTIME_NOW };
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/a", 0, &st), 0);
	assert_int_equal(nostall_setattr_ino(fs, st.ino, &sa, NULL), 0);
	sa.valid |= NOSTALL_SET_MODE;
	assert_int_equal(nostall_setattr_ino(fs, st.ino, &sa, NULL), -EPERM);
	assert_int_equal(nostall_setflags(fs, "/a", 0, 0), 0);
	assert_int_equal(nostall_unlink(fs, "/a"), 0);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
}

/* Sync (S) files and dirsync (D) directories commit before the call
 * returns; noatime (A) files keep their atime under strictatime. */
static void check_sync(const char *mode)
{
	/* no periodic commit during the test: every commit counted is ours */
	char opts[64];
	snprintf(opts, sizeof opts, "%s,commit=600", mode);
	struct nostall_fs *fs = fsimg_api_mount(img, opts, 0);
	put(fs, "/s", "x");
	assert_int_equal(nostall_mkdir(fs, "/dd", 0755), 0);
	assert_int_equal(nostall_setflags(fs, "/s", 0, NOSTALL_FL_SYNC), 0);
	assert_int_equal(nostall_setflags(fs, "/dd", 0, NOSTALL_FL_DIRSYNC), 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/s", NOSTALL_O_WRONLY, 0, &f), 0);
	uint64_t c0 = commits(fs);
	assert_int_equal(nostall_pwrite(f, "abc", 3, 4096), 3);
	uint64_t c1 = commits(fs);
	assert_true(c1 > c0);
	assert_int_equal(nostall_flush(f), 0);
	nostall_close(f);
	c0 = commits(fs);
	assert_int_equal(nostall_mkdir(fs, "/dd/sub", 0755), 0);
	c1 = commits(fs);
	assert_true(c1 > c0);
	c0 = commits(fs);
	assert_int_equal(nostall_rename(fs, "/dd/sub", "/dd/sub2", 0), 0);
	assert_true(commits(fs) > c0);
	/* the new entry inherits dirsync; a file created there does not */
	assert_int_equal(flags_of(fs, "/dd/sub2"), NOSTALL_FL_DIRSYNC);
	put(fs, "/dd/file", "y");
	assert_int_equal(flags_of(fs, "/dd/file"), 0);
	/* a plain directory's change does not commit by itself */
	c0 = commits(fs);
	assert_int_equal(nostall_mkdir(fs, "/plain", 0755), 0);
	assert_int_equal(commits(fs), c0);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);

	snprintf(opts, sizeof opts, "%s,strictatime", mode);
	fs = fsimg_api_mount(img, opts, 0);
	put(fs, "/n", "noatime");
	assert_int_equal(nostall_setflags(fs, "/n", 0, NOSTALL_FL_NOATIME), 0);
	const struct nostall_timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };
	assert_int_equal(nostall_utimens(fs, "/n", 0, ts), 0);
	assert_int_equal(nostall_setflags(fs, "/s", 0, 0), 0);
	assert_int_equal(nostall_utimens(fs, "/s", 0, ts), 0);
	char buf[8];
	assert_int_equal(nostall_create(fs, "/n", NOSTALL_O_RDONLY, 0, &f), 0);
	assert_true(nostall_read(f, buf, sizeof buf) > 0);
	assert_int_equal(nostall_flush(f), 0);
	nostall_close(f);
	assert_int_equal(nostall_create(fs, "/s", NOSTALL_O_RDONLY, 0, &f), 0);
	assert_true(nostall_read(f, buf, sizeof buf) > 0);
	assert_int_equal(nostall_flush(f), 0);
	nostall_close(f);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/n", 0, &st), 0);
	assert_int_equal(st.atime.sec, 1000);
	assert_int_equal(nostall_stat(fs, "/s", 0, &st), 0);
	assert_true(st.atime.sec > 1000);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
}

static void test_immutable(void **state)
{
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		print_message("%s\n", modes[i]);
		assert_int_equal(setup(state), 0); /* a fresh filesystem per mode */
		check_immutable(modes[i]);
	}
}

static void test_append(void **state)
{
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		print_message("%s\n", modes[i]);
		assert_int_equal(setup(state), 0); /* a fresh filesystem per mode */
		check_append(modes[i]);
	}
}

static void test_sync_flags(void **state)
{
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		print_message("%s\n", modes[i]);
		assert_int_equal(setup(state), 0); /* a fresh filesystem per mode */
		check_sync(modes[i]);
	}
}

int main(void)
{
	int orc = oracles_check("test_api_flags", "mke2fs e2fsck debugfs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "api_flags"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_setflags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_immutable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_flags, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
