/* bench repro: where a workload's files live (the library or POSIX calls in
 * a host directory), and the load's output protocol (repro.h).
 *
 * The workloads are written once against these calls so that nostall
 * through the library and every peer through the kernel run the same code.
 */
#include "repro.h"

#include "util/clock.h"
#include "util/err.h"
#include "../fuse/fuse_ioc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rp_fs {
	struct nostall_fs *lib;   /* NULL: POSIX */
	int (*remount)(void *ctx, struct nostall_fs **fs);
	void *ctx;
	int dirfd;
};

struct rp_file {
	struct rp_fs *fs;
	struct nostall_file *lf;
	int fd;
	char path[96];
};

int rp_fs_lib(struct nostall_fs *lib, int (*remount)(void *ctx, struct nostall_fs **fs), void *ctx,
	      struct rp_fs **out)
{
	struct rp_fs *fs = calloc(1, sizeof *fs);
	if (!fs)
		return err_set(-ENOMEM, "out of memory");
	*fs = (struct rp_fs){ .lib = lib, .remount = remount, .ctx = ctx, .dirfd = -1 };
	*out = fs;
	return 0;
}

int rp_fs_posix(const char *dir, struct rp_fs **out)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return err_set(-errno, "%s: %s", dir, strerror(errno));
	struct rp_fs *fs = calloc(1, sizeof *fs);
	if (!fs) {
		close(fd);
		return err_set(-ENOMEM, "out of memory");
	}
	*fs = (struct rp_fs){ .dirfd = fd };
	*out = fs;
	return 0;
}

void rp_fs_free(struct rp_fs *fs)
{
	if (fs && fs->dirfd >= 0)
		close(fs->dirfd);
	free(fs);
}

/* The library takes absolute paths. */
static void lib_path(char *dst, size_t n, const char *path)
{
	snprintf(dst, n, "/%s", path);
}

static int fail(int rc, const char *what, const char *path)
{
	return err_set(rc, "%s %s: %s", what, path, strerror(-rc));
}

int rp_open(struct rp_fs *fs, const char *path, int oflags, struct rp_file **out)
{
	struct rp_file *f = calloc(1, sizeof *f);
	if (!f)
		return err_set(-ENOMEM, "out of memory");
	f->fs = fs;
	f->fd = -1;
	snprintf(f->path, sizeof f->path, "%s", path);
	int rc = 0;
	if (fs->lib) {
		char p[128];
		lib_path(p, sizeof p, path);
		unsigned fl = nostall_oflags_from_posix(oflags);
		rc = (oflags & O_CREAT) ? nostall_create(fs->lib, p, fl, 0644, &f->lf) : nostall_open(fs->lib, p, fl, &f->lf);
	} else {
		f->fd = openat(fs->dirfd, path, oflags | O_CLOEXEC, 0644);
		rc = f->fd < 0 ? -errno : 0;
	}
	if (rc < 0) {
		free(f);
		return fail(rc, "open", path);
	}
	*out = f;
	return 0;
}

static ssize_t io_done(struct rp_file *f, ssize_t n, const char *what)
{
	if (n < 0)
		return fail((int)n, what, f->path);
	return n;
}

ssize_t rp_write(struct rp_file *f, const void *buf, size_t len)
{
	ssize_t n = f->lf ? nostall_write(f->lf, buf, len) : write(f->fd, buf, len);
	return io_done(f, n < 0 && !f->lf ? -errno : n, "write");
}

ssize_t rp_pwrite(struct rp_file *f, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = f->lf ? nostall_pwrite(f->lf, buf, len, off) : pwrite(f->fd, buf, len, (off_t)off);
	return io_done(f, n < 0 && !f->lf ? -errno : n, "write");
}

ssize_t rp_pread(struct rp_file *f, void *buf, size_t len, uint64_t off)
{
	ssize_t n = f->lf ? nostall_pread(f->lf, buf, len, off) : pread(f->fd, buf, len, (off_t)off);
	return io_done(f, n < 0 && !f->lf ? -errno : n, "read");
}

int rp_fsync(struct rp_file *f)
{
	int rc = f->lf ? nostall_fsync(f->lf, 0) : (fsync(f->fd) ? -errno : 0);
	return rc < 0 ? fail(rc, "fsync", f->path) : 0;
}

int rp_close(struct rp_file *f)
{
	int rc;
	if (f->lf) {
		rc = nostall_flush(f->lf);
		nostall_close(f->lf);
	} else {
		rc = close(f->fd) ? -errno : 0;
	}
	if (rc < 0)
		rc = fail(rc, "close", f->path);
	free(f);
	return rc;
}

int rp_mkdir(struct rp_fs *fs, const char *path)
{
	char p[128];
	lib_path(p, sizeof p, path);
	int rc = fs->lib ? nostall_mkdir(fs->lib, p, 0755) : (mkdirat(fs->dirfd, path, 0755) ? -errno : 0);
	return rc < 0 ? fail(rc, "mkdir", path) : 0;
}

int rp_rename(struct rp_fs *fs, const char *from, const char *to)
{
	char a[128], b[128];
	lib_path(a, sizeof a, from);
	lib_path(b, sizeof b, to);
	int rc = fs->lib ? nostall_rename(fs->lib, a, b, 0) : (renameat(fs->dirfd, from, fs->dirfd, to) ? -errno : 0);
	return rc < 0 ? fail(rc, "rename", from) : 0;
}

int rp_unlink(struct rp_fs *fs, const char *path)
{
	char p[128];
	lib_path(p, sizeof p, path);
	int rc = fs->lib ? nostall_unlink(fs->lib, p) : (unlinkat(fs->dirfd, path, 0) ? -errno : 0);
	return rc < 0 ? fail(rc, "unlink", path) : 0;
}

int rp_stat(struct rp_fs *fs, const char *path, uint64_t *size)
{
	char p[128];
	lib_path(p, sizeof p, path);
	int rc;
	if (fs->lib) {
		struct nostall_stat st;
		rc = nostall_stat(fs->lib, p, 0, &st);
		*size = rc < 0 ? 0 : st.size;
	} else {
		struct stat st;
		rc = fstatat(fs->dirfd, path, &st, 0) ? -errno : 0;
		*size = rc < 0 ? 0 : (uint64_t)st.st_size;
	}
	return rc < 0 ? fail(rc, "stat", path) : 0;
}

int rp_syncfs(struct rp_fs *fs)
{
	int rc;
	if (fs->lib) {
		rc = nostall_sync(fs->lib);
	} else {
		rc = syncfs(fs->dirfd) ? -errno : 0;
		if (!rc && ioctl(fs->dirfd, NOSTALL_IOC_SYNC) && errno != ENOTTY && errno != ENOSYS &&
		    errno != EINVAL && errno != EOPNOTSUPP)
			rc = -errno;
	}
	return rc < 0 ? fail(rc, "sync", ".") : 0;
}

int rp_drop_caches(struct rp_fs *fs, const char *const *paths, unsigned n)
{
	if (fs->lib) {
		int rc = fs->remount(fs->ctx, &fs->lib);
		return rc < 0 ? err_wrap(rc, "remount: ") : 0;
	}
	for (unsigned i = 0; i < n; i++) {
		int fd = openat(fs->dirfd, paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail(-errno, "open", paths[i]);
		int rc = fsync(fd) ? -errno : posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) ? -EIO : 0;
		close(fd);
		if (rc < 0)
			return fail(rc, "drop caches of", paths[i]);
	}
	return 0;
}

/* ------------------------------------------------------------ output */

struct rp_out {
	int fd;
	pthread_mutex_t m;
};

struct rp_out *rp_out_new(int fd)
{
	struct rp_out *o = calloc(1, sizeof *o);
	if (o) {
		o->fd = fd;
		pthread_mutex_init(&o->m, NULL);
	}
	return o;
}

void rp_out_free(struct rp_out *o)
{
	if (o)
		pthread_mutex_destroy(&o->m);
	free(o);
}

static void out_line(struct rp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_line(struct rp_out *o, const char *fmt, ...)
{
	char line[320];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	pthread_mutex_lock(&o->m);
	/* One write per line (under PIPE_BUF): a killed child leaves whole
	 * lines behind. A short write means the parent is gone: nothing to do. */
	ssize_t w = write(o->fd, line, (size_t)n);
	(void)w;
	pthread_mutex_unlock(&o->m);
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

void rp_out_zero(struct rp_out *o, uint64_t t_ns)
{
	out_line(o, "Z %.6f", secs(t_ns));
}

void rp_out_begin(struct rp_out *o, const char *series, uint64_t t_ns)
{
	out_line(o, "B %s %.6f", series, secs(t_ns));
}

void rp_out_sample(struct rp_out *o, const char *series, uint64_t t_ns, uint64_t lat_ns)
{
	out_line(o, "S %s %.6f %.4f", series, secs(t_ns), (double)lat_ns / 1e6);
}

void rp_out_metric(struct rp_out *o, const char *metric, double v, const char *unit)
{
	if (isnan(v))
		out_line(o, "M %s nan %s", metric, unit);
	else
		out_line(o, "M %s %.6g %s", metric, v, unit);
}

void rp_out_note(struct rp_out *o, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	for (char *c = text; *c; c++)
		if (*c == '\n')
			*c = ' ';
	out_line(o, "N %s", text);
}

void rp_out_error(struct rp_out *o, int rc)
{
	char text[256];
	snprintf(text, sizeof text, "%s", err_last(rc));
	for (char *c = text; *c; c++)
		if (*c == '\n')
			*c = ' ';
	out_line(o, "E %s", text);
}
