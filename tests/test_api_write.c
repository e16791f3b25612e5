/* The public write API call by call (include/nostall/nostall.h,
 * docs/api.md): read-only refusals, the descriptor table, FUSE lookup
 * counts and unlinked-but-referenced inodes (lookup references keep no
 * linked inode in memory), -EBUSY at umount, per-thread
 * credentials and new-inode xattrs, O_CREAT through a dangling symlink, live statfs, the *_at
 * calls, setattr, a clean image after umount, and threads sharing one
 * mount and one descriptor table.
 *
 * nostall-test: concurrent */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/fstarget_nostall.h"
#include "lib/oracles.h"

#include "nostall/nostall.h"

#include "api/api_int.h" /* the mount's ext3 (its inode cache) */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256], img[300];

/* A fresh image for each test. */
static int setup(void **state)
{
	snprintf(img, sizeof img, "%s/api_write.img", tmpdir);
	return fst_nostall_mkfs(img, 1024, 64u << 20) ? -1 : 0;
}

static int teardown(void **state)
{
	unlink(img);
	return 0;
}

static struct nostall_fs *mount_rw(void)
{
	return fsimg_api_mount(img, NULL, 0);
}

/* e2fsck -fn finds nothing and needs_recovery is off. */
static void assert_clean(void)
{
	fsimg_assert_clean(img);
	assert_int_equal(fsimg_count("needs_recovery", "dumpe2fs -h '%s' 2>/dev/null", img), 0);
}

static void test_readonly_refuses(void **state)
{
	struct nostall_fs *fs;
	struct nostall_info info;
	assert_int_equal(nostall_mount(img, NULL, NOSTALL_MOUNT_RDONLY, &fs), 0);
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_int_equal(info.read_only, 1);
	assert_int_equal(nostall_mkdir(fs, "/x", 0755), -EROFS);
	assert_int_equal(nostall_unlink(fs, "/lost+found"), -EROFS);
	assert_int_equal(nostall_chmod(fs, "/", 0, 0700), -EROFS);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/x", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f),
			 -EROFS);
	assert_int_equal(nostall_fd_open(fs, "/x", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644), -EROFS);
	assert_int_equal(nostall_sync(fs), 0);
	assert_int_equal(nostall_umount(fs), 0);
	/* -o ro is the same; noload needs a read-only mount */
	assert_int_equal(nostall_mount(img, "ro", 0, &fs), 0);
	assert_int_equal(nostall_mkdir(fs, "/x", 0755), -EROFS);
	assert_int_equal(nostall_umount(fs), 0);
	assert_int_equal(nostall_mount(img, "noload", 0, &fs), -EINVAL);
	fs = mount_rw();
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_int_equal(info.read_only, 0);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
	/* an unknown ro_compat feature (bit 14) refuses a read-write mount */
	assert_int_equal(fsimg_debugfs_w(img, "feature FEATURE_R14"), 0);
	assert_int_equal(nostall_mount(img, NULL, 0, &fs), -EROFS);
	assert_int_equal(nostall_mount(img, NULL, NOSTALL_MOUNT_RDONLY, &fs), 0);
	assert_int_equal(nostall_umount(fs), 0);
}

static void test_fd_table(void **state)
{
	struct nostall_fs *fs = mount_rw();
	unsigned rw = NOSTALL_O_RDWR | NOSTALL_O_CREAT;
	assert_int_equal(nostall_fd_open(fs, "/a", rw, 0644), 0);
	assert_int_equal(nostall_fd_open(fs, "/b", rw, 0644), 1);
	assert_int_equal(nostall_fd_open(fs, "/c", rw, 0644), 2);
	assert_int_equal(nostall_fd_close(fs, 1), 0);
	assert_int_equal(nostall_fd_close(fs, 1), -EBADF);
	assert_int_equal(nostall_fd_open(fs, "/b", NOSTALL_O_RDONLY, 0), 1); /* lowest free */
	assert_int_equal(nostall_fd_write(fs, 1, "x", 1), -EBADF);          /* read-only */
	assert_int_equal(nostall_fd_read(fs, 7, (char[4]){ 0 }, 4), -EBADF);
	assert_int_equal(nostall_fd_read(fs, -1, (char[4]){ 0 }, 4), -EBADF);
	assert_int_equal(nostall_fd_ftruncate(fs, 1, 0), -EINVAL);
	/* write, position, append, pread */
	assert_int_equal(nostall_fd_write(fs, 0, "hello", 5), 5);
	assert_int_equal(nostall_fd_lseek(fs, 0, 0, SEEK_CUR), 5);
	assert_int_equal(nostall_fd_pwrite(fs, 0, "J", 1, 0), 1);
	char buf[16] = { 0 };
	assert_int_equal(nostall_fd_pread(fs, 0, buf, sizeof buf, 0), 5);
	assert_memory_equal(buf, "Jello", 5);
	int ap = nostall_fd_open(fs, "/a", NOSTALL_O_WRONLY | NOSTALL_O_APPEND, 0);
	assert_int_equal(ap, 3);
	assert_int_equal(nostall_fd_pwrite(fs, ap, "!", 1, 0), 1); /* O_APPEND: at the end */
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, 0, &st), 0);
	assert_int_equal(st.size, 6);
	assert_int_equal(nostall_fd_fsync(fs, 0, 1), 0);
	/* a directory opens read-only through the table, reads are EISDIR */
	int d = nostall_fd_open(fs, "/lost+found", NOSTALL_O_RDONLY, 0);
	assert_true(d >= 0);
	assert_int_equal(nostall_fd_read(fs, d, buf, 4), -EISDIR);
	assert_int_equal(nostall_fd_open(fs, "/lost+found", NOSTALL_O_RDWR, 0), -EISDIR);
	assert_int_equal(nostall_umount(fs), -EBUSY);
	for (int i = 0; i <= 4; i++)
		assert_int_equal(nostall_fd_close(fs, i), 0);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

static void test_symlinks_and_create(void **state)
{
	struct nostall_fs *fs = mount_rw();
	assert_int_equal(nostall_mkdir(fs, "/s", 0755), 0);
	assert_int_equal(nostall_mkdir(fs, "/s/a", 0755), 0);
	assert_int_equal(nostall_symlink(fs, "a/new", "/s/d"), 0);
	/* O_CREAT through a dangling link creates its target, relative to the link */
	int fd = nostall_fd_open(fs, "/s/d", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/s/a/new", 0, &st), 0);
	assert_int_equal(st.mode, S_IFREG | 0600);
	assert_int_equal(nostall_fd_open(fs, "/s/d", NOSTALL_O_WRONLY | NOSTALL_O_CREAT |
							     NOSTALL_O_EXCL, 0600),
			 -EEXIST);
	assert_int_equal(nostall_fd_open(fs, "/s/d", NOSTALL_O_RDONLY | NOSTALL_O_NOFOLLOW, 0), -ELOOP);
	/* the library's own open reads the link itself with O_NOFOLLOW */
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "/s/d", NOSTALL_O_NOFOLLOW, &f), 0);
	char buf[16];
	assert_int_equal(nostall_read(f, buf, sizeof buf), 5);
	assert_memory_equal(buf, "a/new", 5);
	nostall_close(f);
	assert_int_equal(nostall_create(fs, "/s/d", NOSTALL_O_RDWR | NOSTALL_O_NOFOLLOW, 0, &f), -ELOOP);
	/* O_TRUNC, O_DIRECTORY, both access modes */
	assert_int_equal(nostall_create(fs, "/s/a/new", NOSTALL_O_WRONLY, 0, &f), 0);
	assert_int_equal(nostall_write(f, "abc", 3), 3);
	nostall_close(f);
	assert_int_equal(nostall_create(fs, "/s/a/new", NOSTALL_O_RDONLY | NOSTALL_O_TRUNC, 0, &f), 0);
	assert_int_equal(nostall_fstat(f, &st), 0);
	assert_int_equal(st.size, 0);
	nostall_close(f);
	assert_int_equal(nostall_open(fs, "/s/a/new", NOSTALL_O_DIRECTORY, &f), -ENOTDIR);
	assert_int_equal(nostall_open(fs, "/s/a", NOSTALL_O_DIRECTORY, &f), 0);
	nostall_close(f);
	assert_int_equal(nostall_open(fs, "/s/a", 0, &f), -EISDIR);
	assert_int_equal(nostall_open(fs, "/s/a/new", NOSTALL_O_WRONLY | NOSTALL_O_RDWR, &f), -EINVAL);
	/* the VFS's answers for "/", "." and ".." */
	assert_int_equal(nostall_mkdir(fs, "/", 0755), -EEXIST);
	assert_int_equal(nostall_mkdir(fs, "/s/.", 0755), -EEXIST);
	assert_int_equal(nostall_rmdir(fs, "/"), -EBUSY);
	assert_int_equal(nostall_rmdir(fs, "/s/a/."), -EINVAL);
	assert_int_equal(nostall_rmdir(fs, "/s/a/.."), -ENOTEMPTY);
	assert_int_equal(nostall_unlink(fs, "/s/.."), -EISDIR);
	assert_int_equal(nostall_rename(fs, "/s/.", "/t", 0), -EBUSY);
	assert_int_equal(nostall_create(fs, "/", NOSTALL_O_RDONLY | NOSTALL_O_CREAT, 0, &f), -EISDIR);
	assert_int_equal(nostall_symlink(fs, "", "/e"), -ENOENT);
	assert_int_equal(nostall_link(fs, "/s", "/s2"), -EPERM);
	assert_int_equal(nostall_link(fs, "/s", "/s/a"), -EEXIST);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

static void test_lookup_refs(void **state)
{
	struct nostall_fs *fs = mount_rw();
	struct nostall_stat st, d;
	assert_int_equal(nostall_mkdir_at(fs, NOSTALL_ROOT_INO, "L", 0755, &d), 0);
	assert_true(S_ISDIR(d.mode));
	struct nostall_file *f;
	assert_int_equal(nostall_create_at(fs, d.ino, "f", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644,
					   &st, &f),
			 0);
	assert_int_equal(nostall_pwrite(f, "data", 4, 0), 4);
	nostall_close(f);
	uint64_t ino = st.ino;
	assert_int_equal(nostall_lookup_ref(fs, d.ino, "f", &st), 0);
	assert_int_equal(st.ino, ino);
	assert_int_equal(nostall_lookup_ref(fs, d.ino, "nope", &st), -ENOENT);
	/* unlinked while the kernel still knows it (two lookup references):
	 * the inode stays allocated until the last forget */
	struct nostall_statfs s0, s1;
	assert_int_equal(nostall_statfs(fs, &s0), 0);
	assert_int_equal(nostall_unlink_at(fs, d.ino, "f"), 0);
	assert_int_equal(nostall_stat_ino(fs, ino, &st), -ENOENT); /* no links: not "in use" */
	nostall_forget(fs, ino, 1);
	assert_int_equal(nostall_statfs(fs, &s1), 0);
	assert_int_equal(s1.files_free, s0.files_free);
	nostall_forget(fs, ino, 5);    /* more than held: down to none, the inode goes */
	nostall_forget(fs, 999999, 1); /* unknown: ignored */
	assert_int_equal(nostall_statfs(fs, &s1), 0);
	assert_int_equal(s1.files_free, s0.files_free + 1);
	/* setattr by number */
	struct nostall_setattr sa = { .valid = NOSTALL_SET_MODE | NOSTALL_SET_MTIME,
				      .mode = 0700, .mtime = { 1000000000, 5 } };
	assert_int_equal(nostall_setattr_ino(fs, d.ino, &sa, &st), 0);
	assert_int_equal(st.mode, S_IFDIR | 0700);
	assert_int_equal(st.mtime.sec, 1000000000);
	sa = (struct nostall_setattr){ .valid = NOSTALL_SET_SIZE, .size = 1 };
	assert_int_equal(nostall_setattr_ino(fs, d.ino, &sa, &st), -EISDIR);
	assert_int_equal(nostall_symlink_at(fs, d.ino, "sl", "target", &st), 0);
	assert_true(S_ISLNK(st.mode));
	assert_int_equal(nostall_mknod_at(fs, d.ino, "p", S_IFIFO | 0600, 0, &st), 0);
	assert_int_equal(nostall_link_at(fs, st.ino, d.ino, "p2", &st), 0);
	assert_int_equal(st.nlink, 2);
	assert_int_equal(nostall_rename_at(fs, d.ino, "p2", NOSTALL_ROOT_INO, "p3", 0), 0);
	assert_int_equal(nostall_mkdir_at(fs, d.ino, "a/b", 0755, &st), -EINVAL);
	assert_int_equal(nostall_rmdir_at(fs, NOSTALL_ROOT_INO, "L"), -ENOTEMPTY);
	assert_int_equal(nostall_setxattr_ino(fs, d.ino, "user.k", "v", 1, NOSTALL_XATTR_CREATE), 0);
	assert_int_equal(nostall_setxattr_ino(fs, d.ino, "user.k", "v", 1, NOSTALL_XATTR_CREATE),
			 -EEXIST);
	assert_int_equal(nostall_removexattr_ino(fs, d.ino, "user.k"), 0);
	assert_int_equal(nostall_fsync_ino(fs, d.ino, 0), 0);
	/* lookup references left at umount are dropped there */
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

/* Lookup references do not keep inodes in memory (issue 36): with the inode
 * cache bounded at 32 unreferenced inodes, 400 files each holding a lookup
 * reference leave about 32 cached, and each reads back by number from disk;
 * an unlinked inode with lookup references stays (by number, its blocks and
 * its inode allocated) through the churn until forgotten - unlink, rmdir
 * and rename over it alike. */
static void test_lookup_refs_bounded(void **state)
{
	enum { N = 400, BOUND = 32 };
	struct nostall_fs *fs = mount_rw();
	nostall_lookup_refs_live(fs, 1);
	ext3_icache_set_max_unused(fs->e, BOUND);
	struct nostall_stat d, st;
	assert_int_equal(nostall_mkdir_at(fs, NOSTALL_ROOT_INO, "M", 0755, &d), 0);
	static uint64_t ino[N];
	char name[32], buf[32];
	for (int i = 0; i < N; i++) {
		struct nostall_file *f;
		snprintf(name, sizeof name, "f%d", i);
		assert_int_equal(nostall_create_at(fs, d.ino, name, NOSTALL_O_RDWR | NOSTALL_O_CREAT,
						   0644, &st, &f), 0);
		assert_int_equal(nostall_pwrite(f, name, strlen(name), 0), (ssize_t)strlen(name));
		nostall_close(f);
		ino[i] = st.ino;
	}
	assert_int_equal(nostall_sync(fs), 0); /* nothing spared for its data any more */
	/* each by number: the evicted ones are read again */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "f%d", i);
		assert_int_equal(nostall_stat_ino(fs, ino[i], &st), 0);
		assert_int_equal(st.size, strlen(name));
		struct nostall_file *f;
		assert_int_equal(nostall_open_ino(fs, ino[i], NOSTALL_O_RDONLY, &f), 0);
		assert_int_equal(nostall_pread(f, buf, sizeof buf, 0), (ssize_t)strlen(name));
		assert_memory_equal(buf, name, strlen(name));
		nostall_close(f);
	}
	struct ext3_icache_stats cs;
	ext3_icache_stats(fs->e, &cs);
	assert_true(cs.unused <= BOUND);
	assert_true(cs.cached <= BOUND + 4);
	assert_true(cs.evictions >= N - BOUND);

	/* unlinked while known: kept (by number too) until forgotten */
	struct nostall_stat sd, sa, sb;
	assert_int_equal(nostall_mkdir_at(fs, d.ino, "gone", 0755, &sd), 0);
	assert_int_equal(nostall_mknod_at(fs, d.ino, "a", S_IFREG | 0644, 0, &sa), 0);
	assert_int_equal(nostall_mknod_at(fs, d.ino, "b", S_IFREG | 0644, 0, &sb), 0);
	struct nostall_statfs s0, s1;
	assert_int_equal(nostall_statfs(fs, &s0), 0);
	assert_int_equal(nostall_unlink_at(fs, d.ino, "f0"), 0);
	assert_int_equal(nostall_rmdir_at(fs, d.ino, "gone"), 0);
	assert_int_equal(nostall_rename_at(fs, d.ino, "a", d.ino, "b", 0), 0); /* b's inode loses its name */
	for (int i = 1; i < N; i++) /* churn: every other inode passes through the cache */
		assert_int_equal(nostall_stat_ino(fs, ino[i], &st), 0);
	uint64_t kept[3] = { ino[0], sd.ino, sb.ino };
	for (int k = 0; k < 3; k++) {
		assert_int_equal(nostall_stat_ino(fs, kept[k], &st), 0);
		assert_int_equal(st.nlink, 0);
	}
	struct nostall_file *f;
	assert_int_equal(nostall_open_ino(fs, ino[0], NOSTALL_O_RDONLY, &f), 0);
	assert_int_equal(nostall_pread(f, buf, sizeof buf, 0), 2);
	assert_memory_equal(buf, "f0", 2);
	nostall_close(f); /* the last handle: the lookup reference still keeps it */
	assert_int_equal(nostall_statfs(fs, &s1), 0);
	assert_int_equal(s1.files_free, s0.files_free);
	for (int k = 0; k < 3; k++)
		nostall_forget(fs, kept[k], 1);
	assert_int_equal(nostall_statfs(fs, &s1), 0);
	assert_int_equal(s1.files_free, s0.files_free + 3);
	for (int k = 0; k < 3; k++)
		assert_int_equal(nostall_stat_ino(fs, kept[k], &st), -ENOENT);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

/* The lookup table (open addressing, backward-shift deletion) through two
 * doublings: 2,500 inodes, every other one counted twice; forgetting one
 * from each leaves exactly the twice-counted ones, forgetting those empties
 * it. */
static void test_lookup_table(void **state)
{
	enum { N = 2500 };
	struct nostall_fs *fs = mount_rw();
	struct nostall_stat d, st;
	assert_int_equal(nostall_mkdir_at(fs, NOSTALL_ROOT_INO, "T", 0755, &d), 0);
	static uint64_t ino[N];
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "n%d", i);
		assert_int_equal(nostall_mknod_at(fs, d.ino, name, S_IFREG | 0644, 0, &st), 0);
		ino[i] = st.ino;
		if (i % 2 == 0)
			assert_int_equal(nostall_lookup_ref_ino(fs, ino[i], &st), 0);
	}
	assert_int_equal(fs->nlref, N + 1);
	for (int i = 0; i < N; i++)
		nostall_forget(fs, ino[i], 1);
	for (int i = 0; i < N; i++)
		assert_int_equal(api_lookup_held(fs, ino[i]), i % 2 == 0);
	assert_int_equal(fs->nlref, N / 2 + 1);
	for (int i = 0; i < N; i += 2)
		nostall_forget(fs, ino[i], 1);
	nostall_forget(fs, d.ino, 1);
	assert_int_equal(fs->nlref, 0);
	for (int i = 0; i < N; i++)
		assert_false(api_lookup_held(fs, ino[i]));
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

/* An open handle keeps an unlinked file alive: readable and writable. */
static void test_unlinked_open(void **state)
{
	struct nostall_fs *fs = mount_rw();
	int fd = nostall_fd_open(fs, "/u", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_write(fs, fd, "12345", 5), 5);
	assert_int_equal(nostall_unlink(fs, "/u"), 0);
	assert_int_equal(nostall_fd_pwrite(fs, fd, "6", 1, 5), 1);
	char buf[8];
	assert_int_equal(nostall_fd_pread(fs, fd, buf, sizeof buf, 0), 6);
	assert_memory_equal(buf, "123456", 6);
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	assert_int_equal(st.nlink, 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

struct cred_arg {
	struct nostall_fs *fs;
	struct nostall_stat st;
	int rc;
};

static void *cred_thread(void *p)
{
	struct cred_arg *a = p;
	nostall_cred_set(1234, 5678, NULL, 0);
	a->rc = nostall_mkdir(a->fs, "/owned", 0755);
	if (!a->rc)
		a->rc = nostall_stat(a->fs, "/owned", 0, &a->st);
	nostall_cred_reset();
	return NULL;
}

static void test_credentials(void **state)
{
	struct nostall_fs *fs = mount_rw();
	struct cred_arg a = { .fs = fs };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, cred_thread, &a), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, 0);
	assert_int_equal(a.st.uid, 1234);
	assert_int_equal(a.st.gid, 5678);
	/* this thread: the process's ids; a setgid parent passes its group */
	struct nostall_stat st;
	assert_int_equal(nostall_mkdir(fs, "/mine", 0755), 0);
	assert_int_equal(nostall_stat(fs, "/mine", 0, &st), 0);
	assert_int_equal(st.uid, geteuid());
	assert_int_equal(nostall_chmod(fs, "/owned", 0, 02775), 0);
	assert_int_equal(nostall_mkdir(fs, "/owned/sub", 0755), 0);
	assert_int_equal(nostall_stat(fs, "/owned/sub", 0, &st), 0);
	assert_int_equal(st.gid, 5678);
	assert_true(st.mode & S_ISGID);
	/* chown of one id keeps the other; a chown clears setuid of a file */
	int fd = nostall_fd_open(fs, "/owned/x", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 04755);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_chmod(fs, "/owned/x", 0, 04755), 0);
	assert_int_equal(nostall_chown(fs, "/owned/x", 0, 42, (uint32_t)-1), 0);
	assert_int_equal(nostall_stat(fs, "/owned/x", 0, &st), 0);
	assert_int_equal(st.uid, 42);
	assert_int_equal(st.gid, 5678);
	assert_false(st.mode & S_ISUID);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

/* nostall_cred_set_xattrs: every inode the thread creates (not a symlink)
 * has the xattrs from its creating transaction on; one that cannot be set
 * fails the creation and leaves nothing (no name, no inode, no block); the
 * list is the thread's own and cleared by nostall_cred_reset. */
struct xinit_arg {
	struct nostall_fs *fs;
	int rc;
};

static void *xinit_other_thread(void *p)
{
	struct xinit_arg *a = p;
	a->rc = nostall_mkdir(a->fs, "/other", 0755);
	if (!a->rc)
		a->rc = (int)nostall_getxattr(a->fs, "/other", 0, "user.k", NULL, 0);
	return NULL;
}

static void test_create_xattrs(void **state)
{
	struct nostall_fs *fs = mount_rw();
	char big[600];
	memset(big, 'v', sizeof big);
	const struct nostall_xattr_init x[] = {
		{ "user.k", "value", 5 },
		{ "trusted.t", big, 300 }, /* in-inode room or not: a block then */
	};
	assert_int_equal(nostall_cred_set_xattrs(x, 2), 0);
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/d/f", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), 0);
	nostall_close(f);
	/* user.* only on files and directories, as setxattr(2) has it */
	assert_int_equal(nostall_mknod(fs, "/d/p", 0010644, 0), -EPERM);
	assert_int_equal(nostall_cred_set_xattrs(x + 1, 1), 0);
	assert_int_equal(nostall_mknod(fs, "/d/p", 0010644, 0), 0);
	assert_int_equal(nostall_cred_set_xattrs(x, 2), 0);
	assert_int_equal(nostall_symlink(fs, "f", "/d/l"), 0);
	int fd = nostall_fd_open(fs, "/d/g", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	/* another thread's creations are its own business */
	struct xinit_arg a = { .fs = fs };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, xinit_other_thread, &a), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, -ENODATA);
	/* an existing file opened with O_CREAT gets nothing */
	nostall_cred_reset();
	assert_int_equal(nostall_create(fs, "/e", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), 0);
	nostall_close(f);
	assert_int_equal(nostall_cred_set_xattrs(x, 1), 0);
	assert_int_equal(nostall_create(fs, "/e", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), 0);
	nostall_close(f);
	/* a value no block can hold: the creation fails, nothing is left */
	struct nostall_statfs s0, s1;
	assert_int_equal(nostall_statfs(fs, &s0), 0);
	char *huge = malloc(4096);
	assert_non_null(huge);
	memset(huge, 'h', 4096);
	const struct nostall_xattr_init bad[] = { { "user.k", "v", 1 }, { "user.huge", huge, 4096 } };
	assert_int_equal(nostall_cred_set_xattrs(bad, 2), 0);
	int rc = nostall_mkdir(fs, "/d/nope", 0755);
	assert_true(rc == -ENOSPC || rc == -E2BIG || rc == -ERANGE);
	assert_int_equal(nostall_create(fs, "/d/nofile", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), rc);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/d/nope", 0, &st), -ENOENT);
	assert_int_equal(nostall_stat(fs, "/d/nofile", 0, &st), -ENOENT);
	/* refused lists */
	assert_int_equal(nostall_cred_set_xattrs(x, NOSTALL_CREATE_XATTRS_MAX + 1), -EINVAL);
	const struct nostall_xattr_init noname[] = { { NULL, "v", 1 } };
	assert_int_equal(nostall_cred_set_xattrs(noname, 1), -EINVAL);
	nostall_cred_reset();
	free(huge);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();

	fs = mount_rw();
	assert_int_equal(nostall_statfs(fs, &s1), 0);
	/* the failed creations' inodes and blocks are free again */
	assert_int_equal(s1.files_free, s0.files_free);
	assert_int_equal(s1.blocks_free, s0.blocks_free);
	char v[400];
	const char *with[] = { "/d", "/d/f", "/d/g", "/d/p" };
	for (size_t i = 0; i < sizeof with / sizeof with[0]; i++) {
		if (i < 3) {
			assert_int_equal(nostall_getxattr(fs, with[i], 0, "user.k", v, sizeof v), 5);
			assert_memory_equal(v, "value", 5);
		}
		assert_int_equal(nostall_getxattr(fs, with[i], 0, "trusted.t", v, sizeof v), 300);
		assert_memory_equal(v, big, 300);
	}
	assert_int_equal(nostall_getxattr(fs, "/d/l", NOSTALL_NOFOLLOW, "user.k", v, sizeof v), -ENODATA);
	assert_int_equal(nostall_getxattr(fs, "/e", 0, "user.k", v, sizeof v), -ENODATA);
	assert_int_equal(nostall_umount(fs), 0);
	/* e2fsprogs reads them where ext3 keeps them */
	assert_int_equal(fsimg_count("value", "debugfs -R 'ea_get /d/f user.k' '%s' 2>/dev/null", img), 1);
}

static void test_statfs_and_xattr_checks(void **state)
{
	struct nostall_fs *fs = mount_rw();
	struct nostall_statfs s0, s1;
	assert_int_equal(nostall_statfs(fs, &s0), 0);
	int fd = nostall_fd_open(fs, "/big", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
	static char buf[1 << 20];
	memset(buf, 7, sizeof buf);
	assert_int_equal(nostall_fd_write(fs, fd, buf, sizeof buf), (ssize_t)sizeof buf);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_statfs(fs, &s1), 0);
	assert_true(s1.blocks_free + 1024 <= s0.blocks_free); /* live counts, before any umount */
	assert_int_equal(s1.files_free + 1, s0.files_free);
	/* the VFS's xattr checks: name before the path, namespace after it */
	assert_int_equal(nostall_setxattr(fs, "/nope", 0, "", "v", 1, 0), -ERANGE);
	assert_int_equal(nostall_setxattr(fs, "/nope", 0, "user.a", "v", 70000, 0), -E2BIG);
	assert_int_equal(nostall_setxattr(fs, "/nope", 0, "user.a", "v", 1, 0), -ENOENT);
	assert_int_equal(nostall_setxattr(fs, "/big", 0, "bogus.a", "v", 1, 0), -EOPNOTSUPP);
	assert_int_equal(nostall_setxattr(fs, "/big", 0, "user.", "v", 1, 0), -EINVAL);
	assert_int_equal(nostall_getxattr(fs, "/big", 0, "bogus.a", NULL, 0), -EOPNOTSUPP);
	assert_int_equal(nostall_getxattr(fs, "/big", 0, "", NULL, 0), -ERANGE);
	assert_int_equal(nostall_mknod(fs, "/fifo", S_IFIFO | 0644, 0), 0);
	assert_int_equal(nostall_setxattr(fs, "/fifo", 0, "user.a", "v", 1, 0), -EPERM);
	assert_int_equal(nostall_getxattr(fs, "/fifo", 0, "user.a", NULL, 0), -ENODATA);
	assert_int_equal(nostall_setxattr(fs, "/fifo", 0, "trusted.a", "v", 1, 0), 0);
	assert_int_equal(nostall_truncate(fs, "/fifo", 0), -EINVAL);
	assert_int_equal(nostall_truncate(fs, "/", 0), -EISDIR);
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

/* Threads on one mount: each its own files through the shared descriptor
 * table, plus renames in and out of a shared directory. */
#define NTHREADS 4
#define NITER 60

static void *worker(void *p)
{
	struct cred_arg *a = p;
	struct nostall_fs *fs = a->fs;
	int id = a->rc;
	a->rc = 0;
	char dir[32], path[64], to[64], buf[512], back[512];
	snprintf(dir, sizeof dir, "/w%d", id);
	if (nostall_mkdir(fs, dir, 0755))
		a->rc = -1;
	for (int i = 0; i < NITER && !a->rc; i++) {
		snprintf(path, sizeof path, "%s/f%d", dir, i % 7);
		memset(buf, 'a' + (i + id) % 26, sizeof buf);
		int fd = nostall_fd_open(fs, path, NOSTALL_O_RDWR | NOSTALL_O_CREAT | NOSTALL_O_TRUNC,
					 0644);
		if (fd < 0 || nostall_fd_pwrite(fs, fd, buf, sizeof buf, (uint64_t)i * 700) != sizeof buf ||
		    nostall_fd_pread(fs, fd, back, sizeof back, (uint64_t)i * 700) != sizeof back ||
		    memcmp(buf, back, sizeof buf) || nostall_fd_close(fs, fd)) {
			a->rc = -2;
			break;
		}
		snprintf(to, sizeof to, "/shared-%d-%d", id, i % 3);
		if (nostall_rename(fs, path, to, 0) || nostall_unlink(fs, to))
			a->rc = -3;
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct nostall_fs *fs = mount_rw();
	pthread_t t[NTHREADS];
	struct cred_arg a[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		a[i] = (struct cred_arg){ .fs = fs, .rc = i };
		assert_int_equal(pthread_create(&t[i], NULL, worker, &a[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].rc, 0);
	}
	assert_int_equal(nostall_umount(fs), 0);
	assert_clean();
}

/* lseek SEEK_DATA / SEEK_HOLE (1 KiB blocks): block granularity, the end
 * is a hole, -ENXIO at or past the end, whole missing indirect trees
 * skipped (data at 8 GiB, in the triple-indirect range), on a file
 * written in this mount and after a remount; data=journal too. */
static void check_seek(const char *opts)
{
	struct nostall_fs *fs = fsimg_api_mount(img, opts, 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/s", NOSTALL_O_RDWR | NOSTALL_O_CREAT | NOSTALL_O_TRUNC, 0644, &f), 0);
	const uint64_t far = 8ull << 30; /* triple indirect at 1 KiB blocks (past 64 MiB) */
	assert_int_equal(nostall_pwrite(f, "aaaa", 4, 0), 4);
	assert_int_equal(nostall_pwrite(f, "bbbb", 4, 2048), 4);  /* block 2; block 1 a hole */
	assert_int_equal(nostall_pwrite(f, "cccc", 4, 1 << 20), 4);
	assert_int_equal(nostall_pwrite(f, "dddd", 4, far + 100), 4);
	assert_int_equal(nostall_ftruncate(f, far + 5000), 0);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(nostall_lseek(f, 0, SEEK_DATA), 0);
		assert_int_equal(nostall_lseek(f, 0, SEEK_HOLE), 1024);
		assert_int_equal(nostall_lseek(f, 1024, SEEK_DATA), 2048);
		assert_int_equal(nostall_lseek(f, 2050, SEEK_DATA), 2050);
		assert_int_equal(nostall_lseek(f, 2050, SEEK_HOLE), 3072);
		assert_int_equal(nostall_lseek(f, 3072, SEEK_DATA), 1 << 20);
		assert_int_equal(nostall_lseek(f, (1 << 20) + 1, SEEK_HOLE), (1 << 20) + 1024);
		assert_int_equal(nostall_lseek(f, (1 << 20) + 1024, SEEK_DATA), (int64_t)far);
		assert_int_equal(nostall_lseek(f, far, SEEK_HOLE), (int64_t)far + 1024);
		assert_int_equal(nostall_lseek(f, far + 1024, SEEK_DATA), -ENXIO);
		assert_int_equal(nostall_lseek(f, far + 1024, SEEK_HOLE), (int64_t)far + 1024);
		assert_int_equal(nostall_lseek(f, far + 5000, SEEK_HOLE), -ENXIO);
		assert_int_equal(nostall_lseek(f, far + 5000, SEEK_DATA), -ENXIO);
		assert_int_equal(nostall_lseek(f, -1, SEEK_DATA), -ENXIO);
		/* the position moved to the answer */
		assert_int_equal(nostall_lseek(f, 1024, SEEK_DATA), 2048);
		assert_int_equal(nostall_lseek(f, 0, SEEK_CUR), 2048);
		if (pass == 0) { /* again from the disk */
			nostall_close(f);
			fsimg_api_umount(fs);
			fs = fsimg_api_mount(img, opts, 0);
			assert_int_equal(nostall_create(fs, "/s", NOSTALL_O_RDONLY, 0, &f), 0);
		}
	}
	nostall_close(f);
	/* an empty file: nothing to find; a directory: -EINVAL */
	assert_int_equal(nostall_create(fs, "/e", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f), 0);
	assert_int_equal(nostall_lseek(f, 0, SEEK_DATA), -ENXIO);
	assert_int_equal(nostall_lseek(f, 0, SEEK_HOLE), -ENXIO);
	nostall_close(f);
	assert_int_equal(nostall_open(fs, "/", NOSTALL_O_RDONLY | NOSTALL_O_DIRECTORY, &f), 0);
	assert_int_equal(nostall_lseek(f, 0, SEEK_DATA), -EINVAL);
	nostall_close(f);
	fsimg_api_umount(fs);
	assert_clean();
}

static void test_seek_data_hole(void **state)
{
	check_seek(NULL);
	assert_int_equal(setup(state), 0);
	check_seek("data=journal");
}

/* RENAME_WHITEOUT (overlayfs): the old name becomes a 0:0 character
 * device with mode 0 owned by the caller, the new name gets the source
 * (a file over an existing one, a directory across directories); not with
 * EXCHANGE; e2fsck agrees. */
static void test_rename_whiteout(void **state)
{
	struct nostall_fs *fs = mount_rw();
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/a", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), 0);
	assert_int_equal(nostall_write(f, "A", 1), 1);
	nostall_close(f);
	assert_int_equal(nostall_create(fs, "/b", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), 0);
	nostall_close(f);
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	assert_int_equal(nostall_mkdir(fs, "/d/sub", 0755), 0);
	assert_int_equal(nostall_mkdir(fs, "/e", 02775), 0);
	assert_int_equal(nostall_chown(fs, "/e", 0, 7, 77), 0);
	assert_int_equal(nostall_chmod(fs, "/e", 0, 02775), 0);

	struct nostall_stat st, root0, root1;
	assert_int_equal(nostall_stat(fs, "/", 0, &root0), 0);
	assert_int_equal(nostall_rename(fs, "/a", "/b", NOSTALL_RENAME_WHITEOUT | NOSTALL_RENAME_EXCHANGE), -EINVAL);
	nostall_cred_set(1234, 567, NULL, 0);
	assert_int_equal(nostall_rename(fs, "/a", "/b", NOSTALL_RENAME_WHITEOUT), 0);
	nostall_cred_reset();
	assert_int_equal(nostall_stat(fs, "/a", NOSTALL_NOFOLLOW, &st), 0);
	assert_int_equal(st.mode, 0020000);
	assert_int_equal(st.rdev, 0);
	assert_int_equal(st.nlink, 1);
	assert_int_equal(st.uid, 1234);
	assert_int_equal(st.gid, 567);
	char c = 0;
	assert_int_equal(nostall_create(fs, "/b", NOSTALL_O_RDONLY, 0, &f), 0);
	assert_int_equal(nostall_read(f, &c, 1), 1);
	assert_int_equal(c, 'A');
	nostall_close(f);
	/* NOREPLACE with a whiteout: the target must not exist */
	assert_int_equal(nostall_rename(fs, "/b", "/a", NOSTALL_RENAME_WHITEOUT | NOSTALL_RENAME_NOREPLACE), -EEXIST);
	/* a directory into a setgid directory: links move, the whiteout takes
	 * the old directory's place */
	assert_int_equal(nostall_rename(fs, "/d/sub", "/e/sub", NOSTALL_RENAME_WHITEOUT), 0);
	struct nostall_stat d, e;
	assert_int_equal(nostall_stat(fs, "/d", 0, &d), 0);
	assert_int_equal(nostall_stat(fs, "/e", 0, &e), 0);
	assert_int_equal(d.nlink, 2);
	assert_int_equal(e.nlink, 3);
	assert_int_equal(nostall_stat(fs, "/d/sub", NOSTALL_NOFOLLOW, &st), 0);
	assert_int_equal(st.mode, 0020000);
	assert_int_equal(nostall_stat(fs, "/e/sub/..", 0, &st), 0);
	assert_int_equal(st.ino, e.ino);
	/* a whiteout made in a setgid directory takes its group */
	assert_int_equal(nostall_create(fs, "/e/x", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), 0);
	nostall_close(f);
	assert_int_equal(nostall_rename(fs, "/e/x", "/y", NOSTALL_RENAME_WHITEOUT), 0);
	assert_int_equal(nostall_stat(fs, "/e/x", NOSTALL_NOFOLLOW, &st), 0);
	assert_int_equal(st.gid, 77);
	assert_int_equal(nostall_stat(fs, "/", 0, &root1), 0);
	assert_int_equal(root1.nlink, root0.nlink);
	/* whiteouts are ordinary device nodes: they go with unlink */
	assert_int_equal(nostall_unlink(fs, "/d/sub"), 0);
	fsimg_api_umount(fs);
	assert_clean();
	char out[4096];
	assert_int_equal(fsimg_out(out, sizeof out, "debugfs -R 'stat /a' %s 2>/dev/null", img), 0);
	assert_non_null(strstr(out, "Type: character special"));
	assert_non_null(strstr(out, "Device major/minor number: 00:00"));
}

int main(void)
{
	int orc = oracles_check("test_api_write", "mke2fs e2fsck debugfs dumpe2fs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "api_write"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_readonly_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_and_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lookup_refs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlinked_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credentials, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statfs_and_xattr_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_xattrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seek_data_hole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_whiteout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lookup_refs_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lookup_table, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
