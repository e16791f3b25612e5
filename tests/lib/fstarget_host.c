/* The host-directory target: every call is the kernel's own syscall on a
 * directory (fstarget.h). With the model it validates the model; on a
 * kernel mount of a nostall image it is the "kernel sees the same tree"
 * oracle.
 *
 * The umask is 0 while a host target exists (the model, like nostall's
 * API, applies none); it is restored when the last one is destroyed. */
#include "fstarget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

struct host {
	struct fs_target t;
	char *dir;
	bool remove_at_destroy;
	char buf[2][PATH_MAX + 8]; /* full paths of the current call */
};

static unsigned host_count;
static mode_t host_saved_umask;

static struct host *host_of(struct fs_target *t)
{
	return t->priv;
}

/* Full host path of target path p in buffer i (0 or 1), or NULL if too long. */
static const char *full(struct fs_target *t, int i, const char *p)
{
	struct host *h = host_of(t);
	int n = snprintf(h->buf[i], sizeof h->buf[i], "%s%s%s", h->dir, p[0] == '/' ? "" : "/", p);
	return n < (int)sizeof h->buf[i] ? h->buf[i] : NULL;
}

#define FULL(var, i, p)                          \
	const char *var = full(t, i, p);         \
	if (!var)                                \
		return -ENAMETOOLONG

static int rc0(int r)
{
	return r < 0 ? -errno : r;
}

static ssize_t rcs(ssize_t r)
{
	return r < 0 ? -errno : r;
}

static int h_mkdir(struct fs_target *t, const char *p, uint32_t mode)
{
	FULL(f, 0, p);
	return rc0(mkdir(f, mode));
}

static int h_mknod(struct fs_target *t, const char *p, uint32_t mode, uint64_t rdev)
{
	FULL(f, 0, p);
	return rc0(mknod(f, mode, rdev));
}

static int h_symlink(struct fs_target *t, const char *target, const char *p)
{
	FULL(f, 0, p);
	return rc0(symlink(target, f));
}

static int h_link(struct fs_target *t, const char *a, const char *b)
{
	FULL(fa, 0, a);
	FULL(fb, 1, b);
	return rc0(linkat(AT_FDCWD, fa, AT_FDCWD, fb, 0));
}

static int h_unlink(struct fs_target *t, const char *p)
{
	FULL(f, 0, p);
	return rc0(unlink(f));
}

static int h_rmdir(struct fs_target *t, const char *p)
{
	FULL(f, 0, p);
	return rc0(rmdir(f));
}

static int h_rename(struct fs_target *t, const char *a, const char *b, unsigned flags)
{
	FULL(fa, 0, a);
	FULL(fb, 1, b);
	return rc0((int)syscall(SYS_renameat2, AT_FDCWD, fa, AT_FDCWD, fb, flags));
}

static int h_truncate(struct fs_target *t, const char *p, uint64_t size)
{
	FULL(f, 0, p);
	return rc0(truncate(f, (off_t)size));
}

static int h_chmod(struct fs_target *t, const char *p, uint32_t mode)
{
	FULL(f, 0, p);
	return rc0(chmod(f, mode));
}

static int h_chown(struct fs_target *t, const char *p, unsigned fl, uint32_t uid, uint32_t gid)
{
	FULL(f, 0, p);
	return rc0(fchownat(AT_FDCWD, f, uid, gid, (fl & FST_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0));
}

static int h_utimens(struct fs_target *t, const char *p, unsigned fl, const struct fst_time ts[2])
{
	FULL(f, 0, p);
	struct timespec tv[2] = { { .tv_sec = ts[0].sec, .tv_nsec = ts[0].nsec },
				  { .tv_sec = ts[1].sec, .tv_nsec = ts[1].nsec } };
	return rc0(utimensat(AT_FDCWD, f, tv, (fl & FST_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0));
}

static void stat_conv(const struct stat *s, struct fst_stat *st)
{
	*st = (struct fst_stat){ .ino = s->st_ino, .mode = s->st_mode, .nlink = (uint32_t)s->st_nlink,
				 .uid = s->st_uid, .gid = s->st_gid, .size = (uint64_t)s->st_size,
				 .rdev = s->st_rdev,
				 .atime = { s->st_atim.tv_sec, (uint32_t)s->st_atim.tv_nsec },
				 .mtime = { s->st_mtim.tv_sec, (uint32_t)s->st_mtim.tv_nsec },
				 .known = FST_ATIME_KNOWN | FST_MTIME_KNOWN };
}

static int h_stat(struct fs_target *t, const char *p, unsigned fl, struct fst_stat *st)
{
	FULL(f, 0, p);
	struct stat s;
	int rc = rc0(fstatat(AT_FDCWD, f, &s, (fl & FST_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0));
	if (!rc)
		stat_conv(&s, st);
	return rc;
}

static ssize_t h_readlink(struct fs_target *t, const char *p, char *buf, size_t size)
{
	FULL(f, 0, p);
	return rcs(readlink(f, buf, size));
}

static int h_readdir(struct fs_target *t, const char *p, struct fst_dirlist *out)
{
	FULL(f, 0, p);
	DIR *d = opendir(f);
	if (!d)
		return -errno;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d)))
		fst_dirlist_add(out, de->d_ino, de->d_type, de->d_name);
	int rc = -errno;
	closedir(d);
	return rc;
}

static int h_setxattr(struct fs_target *t, const char *p, unsigned fl, const char *name,
		      const void *v, size_t size, unsigned xflags)
{
	FULL(f, 0, p);
	return rc0((fl & FST_NOFOLLOW) ? lsetxattr(f, name, v, size, (int)xflags)
				       : setxattr(f, name, v, size, (int)xflags));
}

static int h_removexattr(struct fs_target *t, const char *p, unsigned fl, const char *name)
{
	FULL(f, 0, p);
	return rc0((fl & FST_NOFOLLOW) ? lremovexattr(f, name) : removexattr(f, name));
}

static ssize_t h_getxattr(struct fs_target *t, const char *p, unsigned fl, const char *name,
			  void *buf, size_t size)
{
	FULL(f, 0, p);
	return rcs((fl & FST_NOFOLLOW) ? lgetxattr(f, name, buf, size) : getxattr(f, name, buf, size));
}

/* Only user.* and trusted.* (the model's namespaces; the host may add
 * security.* labels or system.* ACLs of its own). */
static ssize_t h_listxattr(struct fs_target *t, const char *p, unsigned fl, char *buf, size_t size)
{
	FULL(f, 0, p);
	char all[65536];
	ssize_t n = (fl & FST_NOFOLLOW) ? llistxattr(f, all, sizeof all) : listxattr(f, all, sizeof all);
	if (n < 0)
		return -errno;
	size_t need = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(all + i) + 1)
		if (!strncmp(all + i, "user.", 5) || !strncmp(all + i, "trusted.", 8))
			need += strlen(all + i) + 1;
	if (!size)
		return (ssize_t)need;
	if (size < need)
		return -ERANGE;
	size_t off = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(all + i) + 1)
		if (!strncmp(all + i, "user.", 5) || !strncmp(all + i, "trusted.", 8)) {
			memcpy(buf + off, all + i, strlen(all + i) + 1);
			off += strlen(all + i) + 1;
		}
	return (ssize_t)need;
}

static int h_open(struct fs_target *t, const char *p, int oflags, uint32_t mode)
{
	FULL(f, 0, p);
	return rc0(open(f, oflags | O_CLOEXEC, mode));
}

static int h_close(struct fs_target *t, int h)
{
	return rc0(close(h));
}

static ssize_t h_read(struct fs_target *t, int h, void *buf, size_t len)
{
	return rcs(read(h, buf, len));
}

static ssize_t h_write(struct fs_target *t, int h, const void *buf, size_t len)
{
	return rcs(write(h, buf, len));
}

static ssize_t h_pread(struct fs_target *t, int h, void *buf, size_t len, uint64_t off)
{
	return rcs(pread(h, buf, len, (off_t)off));
}

static ssize_t h_pwrite(struct fs_target *t, int h, const void *buf, size_t len, uint64_t off)
{
	return rcs(pwrite(h, buf, len, (off_t)off));
}

static int h_ftruncate(struct fs_target *t, int h, uint64_t size)
{
	return rc0(ftruncate(h, (off_t)size));
}

static int h_fsync(struct fs_target *t, int h, int datasync)
{
	return rc0(datasync ? fdatasync(h) : fsync(h));
}

static int h_fstat(struct fs_target *t, int h, struct fst_stat *st)
{
	struct stat s;
	int rc = rc0(fstat(h, &s));
	if (!rc)
		stat_conv(&s, st);
	return rc;
}

static int h_data_ranges(struct fs_target *t, const char *p, fst_range_cb cb, void *ctx)
{
	FULL(f, 0, p);
	int fd = open(f, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	off_t off = 0;
	int rc = 0;
	for (;;) {
		off_t d = lseek(fd, off, SEEK_DATA);
		if (d < 0) {
			rc = errno == ENXIO ? 0 : -errno;
			break;
		}
		off_t e = lseek(fd, d, SEEK_HOLE);
		if (e < 0) {
			rc = -errno;
			break;
		}
		if ((rc = cb(ctx, (uint64_t)d, (uint64_t)(e - d))))
			break;
		off = e;
	}
	close(fd);
	return rc;
}

static int rm_fix_mode(const char *p, const struct stat *s, int flag, struct FTW *ftw)
{
	if (flag == FTW_D)
		chmod(p, 0700);
	return 0;
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *ftw)
{
	remove(p);
	return 0;
}

static void h_destroy(struct fs_target *t)
{
	struct host *h = host_of(t);
	if (h->remove_at_destroy) {
		nftw(h->dir, rm_fix_mode, 32, FTW_PHYS);
		nftw(h->dir, rm_one, 32, FTW_PHYS | FTW_DEPTH);
	}
	if (--host_count == 0)
		umask(host_saved_umask);
	free(h->dir);
	free(h);
}

static const struct fst_ops host_ops = {
	.mkdir = h_mkdir, .mknod = h_mknod, .symlink = h_symlink, .link = h_link,
	.unlink = h_unlink, .rmdir = h_rmdir, .rename = h_rename, .truncate = h_truncate,
	.chmod = h_chmod, .chown = h_chown, .utimens = h_utimens, .stat = h_stat,
	.readlink = h_readlink, .readdir = h_readdir, .setxattr = h_setxattr,
	.removexattr = h_removexattr, .getxattr = h_getxattr, .listxattr = h_listxattr,
	.open = h_open, .close = h_close, .read = h_read, .write = h_write, .pread = h_pread,
	.pwrite = h_pwrite, .ftruncate = h_ftruncate, .fsync = h_fsync, .fstat = h_fstat,
	.data_ranges = h_data_ranges, .checkpoint = NULL, .destroy = h_destroy,
};

static int host_new(const char *dir, bool remove_at_destroy, struct fs_target **out)
{
	char *real = realpath(dir, NULL);
	if (!real)
		return -errno;
	struct host *h = fst_xcalloc(1, sizeof *h);
	h->dir = real;
	h->remove_at_destroy = remove_at_destroy;
	h->t = (struct fs_target){ .ops = &host_ops, .name = "host", .caps = FST_CAP_NSEC, .priv = h };
	if (host_count++ == 0)
		host_saved_umask = umask(0);
	*out = &h->t;
	return 0;
}

int fst_host_new(const char *dir, struct fs_target **out)
{
	return host_new(dir, false, out);
}

int fst_host_new_tmp(struct fs_target **out)
{
	const char *tmp = getenv("TMPDIR");
	char templ[PATH_MAX];
	snprintf(templ, sizeof templ, "%s/fsmodel-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(templ))
		return -errno;
	int rc = host_new(templ, true, out);
	if (rc)
		rmdir(templ);
	return rc;
}

const char *fst_host_dir(const struct fs_target *t)
{
	return t && t->ops == &host_ops ? ((const struct host *)t->priv)->dir : NULL;
}

static int host_tmp_create(void *ctx, struct fs_target **out)
{
	return fst_host_new_tmp(out);
}

const struct fst_factory fst_host_tmp_factory = { .create = host_tmp_create, .ctx = NULL };
