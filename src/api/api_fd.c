/* Public API: a POSIX-like descriptor table per mount (nostall_fd_*).
 * Descriptors are indexes into fs->fds, the lowest free one first. Each
 * slot holds a counted reference to its handle: a call takes one for its
 * duration (fd_get / fd_put), so a descriptor closed by another thread in
 * the meantime is released when the last call on it ends (close(2)'s
 * behaviour), never under a running call.
 *
 * Locking: fd_lock guards the table and the counts and is a leaf (the
 * handle is closed after unlocking). */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>

struct api_fd {
	struct nostall_file *f;
	unsigned refs; /* the table's, plus one per call in progress */
};

/* Most descriptors one mount hands out (like RLIMIT_NOFILE). */
#define API_FD_MAX (1 << 20)

static int fd_install(struct nostall_fs *fs, struct nostall_file *f)
{
	struct api_fd *a = malloc(sizeof *a);
	if (!a)
		return err_set(-ENOMEM, "out of memory");
	*a = (struct api_fd){ .f = f, .refs = 1 };
	pthread_mutex_lock(&fs->fd_lock);
	size_t i = 0;
	while (i < fs->nfds && fs->fds[i])
		i++;
	int rc = 0;
	if (i == fs->nfds) {
		size_t n = fs->nfds ? 2 * fs->nfds : 16;
		struct api_fd **v = n <= API_FD_MAX ? realloc(fs->fds, n * sizeof *v) : NULL;
		if (v) {
			for (size_t k = fs->nfds; k < n; k++)
				v[k] = NULL;
			fs->fds = v;
			fs->nfds = n;
		} else {
			rc = n <= API_FD_MAX ? -ENOMEM : -EMFILE;
		}
	}
	if (!rc)
		fs->fds[i] = a;
	pthread_mutex_unlock(&fs->fd_lock);
	if (rc) {
		free(a);
		return err_set(rc, "no descriptor free");
	}
	return (int)i;
}

static struct api_fd *fd_get(struct nostall_fs *fs, int fd)
{
	struct api_fd *a = NULL;
	pthread_mutex_lock(&fs->fd_lock);
	if (fd >= 0 && (size_t)fd < fs->nfds && (a = fs->fds[fd]))
		a->refs++;
	pthread_mutex_unlock(&fs->fd_lock);
	if (!a)
		err_set(-EBADF, "descriptor %d is not open", fd);
	return a;
}

static void fd_put(struct nostall_fs *fs, struct api_fd *a)
{
	pthread_mutex_lock(&fs->fd_lock);
	bool last = --a->refs == 0;
	pthread_mutex_unlock(&fs->fd_lock);
	if (last) {
		nostall_close(a->f);
		free(a);
	}
}

int nostall_fd_open(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode)
{
	struct nostall_file *f;
	int rc = api_open_path(fs, path, flags, mode, true, &f);
	if (rc)
		return rc;
	rc = fd_install(fs, f);
	if (rc < 0)
		nostall_close(f);
	return rc;
}

int nostall_fd_close(struct nostall_fs *fs, int fd)
{
	struct api_fd *a = NULL;
	pthread_mutex_lock(&fs->fd_lock);
	if (fd >= 0 && (size_t)fd < fs->nfds) {
		a = fs->fds[fd];
		fs->fds[fd] = NULL;
	}
	pthread_mutex_unlock(&fs->fd_lock);
	if (!a)
		return err_set(-EBADF, "descriptor %d is not open", fd);
	int rc = nostall_flush(a->f);
	fd_put(fs, a);
	return rc;
}

/* The calls on a descriptor: the handle call between fd_get and fd_put. */
enum fd_op { FD_READ, FD_WRITE, FD_PREAD, FD_PWRITE, FD_LSEEK, FD_FSYNC, FD_FTRUNC, FD_FSTAT, FD_FALLOC };
struct fd_args {
	void *buf;
	const void *cbuf;
	size_t len;
	uint64_t off;
	int64_t soff;
	int n; /* whence, datasync */
	struct nostall_stat *st;
};

static int64_t fd_call(struct nostall_fs *fs, int fd, enum fd_op op, const struct fd_args *x)
{
	struct api_fd *a = fd_get(fs, fd);
	if (!a)
		return -EBADF;
	struct nostall_file *f = a->f;
	int64_t rc = 0;
	switch (op) {
	case FD_READ: rc = nostall_read(f, x->buf, x->len); break;
	case FD_WRITE: rc = nostall_write(f, x->cbuf, x->len); break;
	case FD_PREAD: rc = nostall_pread(f, x->buf, x->len, x->off); break;
	case FD_PWRITE: rc = nostall_pwrite(f, x->cbuf, x->len, x->off); break;
	case FD_LSEEK: rc = nostall_lseek(f, x->soff, x->n); break;
	case FD_FSYNC: rc = nostall_fsync(f, x->n); break;
	case FD_FTRUNC: rc = nostall_ftruncate(f, x->off); break;
	case FD_FSTAT: rc = nostall_fstat(f, x->st); break;
	case FD_FALLOC: rc = nostall_fallocate(f, x->n, x->soff, (int64_t)x->len); break;
	}
	fd_put(fs, a);
	return rc;
}

ssize_t nostall_fd_read(struct nostall_fs *fs, int fd, void *buf, size_t len)
{
	return (ssize_t)fd_call(fs, fd, FD_READ, &(struct fd_args){ .buf = buf, .len = len });
}

ssize_t nostall_fd_write(struct nostall_fs *fs, int fd, const void *buf, size_t len)
{
	return (ssize_t)fd_call(fs, fd, FD_WRITE, &(struct fd_args){ .cbuf = buf, .len = len });
}

ssize_t nostall_fd_pread(struct nostall_fs *fs, int fd, void *buf, size_t len, uint64_t off)
{
	return (ssize_t)fd_call(fs, fd, FD_PREAD,
				&(struct fd_args){ .buf = buf, .len = len, .off = off });
}

ssize_t nostall_fd_pwrite(struct nostall_fs *fs, int fd, const void *buf, size_t len, uint64_t off)
{
	return (ssize_t)fd_call(fs, fd, FD_PWRITE,
				&(struct fd_args){ .cbuf = buf, .len = len, .off = off });
}

int64_t nostall_fd_lseek(struct nostall_fs *fs, int fd, int64_t off, int whence)
{
	return fd_call(fs, fd, FD_LSEEK, &(struct fd_args){ .soff = off, .n = whence });
}

int nostall_fd_fsync(struct nostall_fs *fs, int fd, int datasync)
{
	return (int)fd_call(fs, fd, FD_FSYNC, &(struct fd_args){ .n = datasync });
}

int nostall_fd_ftruncate(struct nostall_fs *fs, int fd, uint64_t size)
{
	return (int)fd_call(fs, fd, FD_FTRUNC, &(struct fd_args){ .off = size });
}

int nostall_fd_fstat(struct nostall_fs *fs, int fd, struct nostall_stat *st)
{
	return (int)fd_call(fs, fd, FD_FSTAT, &(struct fd_args){ .st = st });
}

int nostall_fd_fallocate(struct nostall_fs *fs, int fd, int mode, int64_t off, int64_t len)
{
	if (len < 0)
		return err_set(-EINVAL, "fallocate: length %lld", (long long)len);
	return (int)fd_call(fs, fd, FD_FALLOC, &(struct fd_args){ .n = mode, .soff = off, .len = (size_t)len });
}

void api_fd_table_free(struct nostall_fs *fs)
{
	free(fs->fds);
	fs->fds = NULL;
	fs->nfds = 0;
}
