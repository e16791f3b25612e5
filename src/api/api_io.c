/* Public API: I/O on open files (include/nostall/nostall.h): read, write,
 * seek, truncate, fsync, flush. On a read-write mount regular-file data goes
 * through ext3's page cache (ext3_file_read / ext3_file_write); on a
 * read-only mount reads use the read path directly (ext3_fread). */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/uio.h>

/* Linux's MAX_RW_COUNT: one call moves at most this much. */
#define API_RW_MAX 0x7ffff000u

static ssize_t symlink_pread(struct nostall_file *f, void *buf, size_t len, uint64_t off)
{
	char t[EXT3_MAX_BLOCK_SIZE];
	ssize_t n = ext3_symlink_read(f->fs->e, f->in, t, sizeof t);
	if (n < 0)
		return n;
	if (off >= (uint64_t)n)
		return 0;
	size_t c = (size_t)n - (size_t)off;
	if (c > len)
		c = len;
	memcpy(buf, t + off, c);
	return (ssize_t)c;
}

ssize_t nostall_pread(struct nostall_file *f, void *buf, size_t len, uint64_t off)
{
	if (!f->can_read)
		return err_set(-EBADF, "read: the handle is open for writing only");
	if ((f->mode & EXT3_S_IFMT) == EXT3_S_IFDIR)
		return err_set(-EISDIR, "read: a directory handle");
	if (len == 0)
		return 0;
	if (len > API_RW_MAX)
		len = API_RW_MAX;
	if ((f->mode & EXT3_S_IFMT) == EXT3_S_IFLNK)
		return symlink_pread(f, buf, len, off);
	if (f->fs->rw)
		return ext3_file_read(f->in, f->rd, buf, len, off);
	if (f->rd)
		return ext3_fread_pread(f->rd, buf, len, off);
	return ext3_inode_pread(f->fs->e, f->in, buf, len, off);
}

ssize_t nostall_pread_sink(struct nostall_file *f, void *buf, size_t len, uint64_t off,
			   nostall_read_sink sink, void *arg)
{
	ssize_t n;
	if (f->can_read && (f->mode & EXT3_S_IFMT) == EXT3_S_IFREG && len && f->rd) {
		if (len > API_RW_MAX)
			len = API_RW_MAX;
		if (f->fs->rw)
			return ext3_file_read_sink(f->in, f->rd, buf, len, off, sink, arg);
		return ext3_fread_pread_sink(f->rd, buf, len, off, sink, arg);
	}
	n = nostall_pread(f, buf, len, off);
	if (n < 0)
		return n;
	struct iovec one = { .iov_base = buf, .iov_len = (size_t)n };
	int rc = sink(arg, &one, 1);
	return rc < 0 ? rc : n;
}

ssize_t nostall_read(struct nostall_file *f, void *buf, size_t len)
{
	pthread_mutex_lock(&f->lock);
	ssize_t n = nostall_pread(f, buf, len, f->pos);
	if (n > 0)
		f->pos += (uint64_t)n;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* One write at off (or at the end with O_APPEND); *end = where it ended.
 * wf: extra EXT3_WRITE_* flags. */
static ssize_t file_write(struct nostall_file *f, const void *buf, size_t len, uint64_t off,
			  unsigned wf, uint64_t *end)
{
	if (!f->can_write)
		return err_set(-EBADF, "write: the handle is not open for writing");
	if (len == 0)
		return 0;
	if (len > API_RW_MAX)
		len = API_RW_MAX;
	if (f->flags & NOSTALL_O_APPEND)
		wf |= (wf & EXT3_WRITE_APPENDER) ? 0 : EXT3_WRITE_APPEND;
	else
		wf &= ~EXT3_WRITE_APPENDER;
	if (f->flags & NOSTALL_O_SYNC)
		wf |= EXT3_WRITE_SYNC;
	else if (f->flags & NOSTALL_O_DSYNC)
		wf |= EXT3_WRITE_DSYNC;
	uint64_t at = off;
	ssize_t n = ext3_file_write(f->in, buf, len, off, wf, &at);
	if (n > 0)
		*end = at + (uint64_t)n;
	return n;
}

ssize_t nostall_write(struct nostall_file *f, const void *buf, size_t len)
{
	pthread_mutex_lock(&f->lock);
	uint64_t end = f->pos;
	ssize_t n = file_write(f, buf, len, f->pos, 0, &end);
	if (n > 0)
		f->pos = end;
	pthread_mutex_unlock(&f->lock);
	return n;
}

ssize_t nostall_pwrite(struct nostall_file *f, const void *buf, size_t len, uint64_t off)
{
	uint64_t end;
	return file_write(f, buf, len, off, 0, &end);
}

ssize_t nostall_pwrite_flags(struct nostall_file *f, const void *buf, size_t len, uint64_t off,
			     unsigned flags)
{
	if (flags & ~(NOSTALL_PWRITE_NOTHROTTLE | NOSTALL_PWRITE_KEEP_SETID | NOSTALL_PWRITE_AT))
		return err_set(-EINVAL, "pwrite: unknown flags %#x", flags);
	unsigned wf = (flags & NOSTALL_PWRITE_NOTHROTTLE ? EXT3_WRITE_NOTHROTTLE : 0) |
		      (flags & NOSTALL_PWRITE_KEEP_SETID ? EXT3_WRITE_KEEP_SETID : 0) |
		      (flags & NOSTALL_PWRITE_AT ? EXT3_WRITE_APPENDER : 0);
	uint64_t end;
	return file_write(f, buf, len, off, wf, &end);
}

void nostall_throttle(struct nostall_fs *fs)
{
	if (fs->rw)
		ext3_file_throttle(fs->e);
}

int64_t nostall_lseek(struct nostall_file *f, int64_t off, int whence)
{
	pthread_mutex_lock(&f->lock);
	int64_t base;
	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)f->pos; break;
	case SEEK_END: base = (int64_t)ext3_inode_size(f->in); break;
	case SEEK_DATA:
	case SEEK_HOLE: {
		uint64_t at = 0;
		int rc = (f->mode & EXT3_S_IFMT) != EXT3_S_IFREG
				 ? err_set(-EINVAL, "lseek: SEEK_DATA/SEEK_HOLE on a non-regular file")
			 : off < 0 ? err_set(-ENXIO, "lseek: negative offset")
				   : ext3_inode_seek(f->fs->e, f->in, (uint64_t)off, whence == SEEK_HOLE, &at);
		if (!rc)
			f->pos = at;
		pthread_mutex_unlock(&f->lock);
		return rc ? rc : (int64_t)at;
	}
	default:
		pthread_mutex_unlock(&f->lock);
		return err_set(-EINVAL, "lseek: bad whence %d", whence);
	}
	int64_t np;
	if (__builtin_add_overflow(base, off, &np) || np < 0) {
		pthread_mutex_unlock(&f->lock);
		return err_set(-EINVAL, "lseek: position out of range");
	}
	f->pos = (uint64_t)np;
	pthread_mutex_unlock(&f->lock);
	return np;
}

int nostall_ftruncate(struct nostall_file *f, uint64_t size)
{
	if (!f->can_write || (f->mode & EXT3_S_IFMT) != EXT3_S_IFREG)
		return err_set(-EINVAL, "ftruncate: not a regular file open for writing");
	int rc = ext3_file_setsize(f->in, size);
	return rc ? rc : api_kill_suid(f->fs, f->in);
}

_Static_assert(NOSTALL_FALLOC_KEEP_SIZE == EXT3_FALLOC_KEEP_SIZE && NOSTALL_FALLOC_PUNCH_HOLE == EXT3_FALLOC_PUNCH_HOLE &&
		       NOSTALL_FALLOC_ZERO_RANGE == EXT3_FALLOC_ZERO_RANGE,
	       "the public fallocate modes are the library's");

int nostall_fallocate(struct nostall_file *f, int mode, int64_t off, int64_t len)
{
	if (off < 0 || len <= 0)
		return err_set(-EINVAL, "fallocate: offset %lld, length %lld", (long long)off, (long long)len);
	if (!f->can_write)
		return err_set(-EBADF, "fallocate: the file is not open for writing");
	if (!f->fs->rw)
		return err_set(-EROFS, "fallocate: read-only mount");
	return ext3_fallocate(f->in, mode, (uint64_t)off, (uint64_t)len);
}

int nostall_fsync(struct nostall_file *f, int datasync)
{
	if (!f->fs->rw)
		return 0; /* nothing is ever dirty */
	return ext3_file_fsync(f->in, datasync != 0);
}

/* ext3 has one release per writer; a flush is a release followed by a new
 * open, so the bookkeeping stays one writer per handle while the release's
 * work (the truncate safeguard, the pending error) happens now. */
int nostall_flush(struct nostall_file *f)
{
	pthread_mutex_lock(&f->lock);
	if (!f->writer) {
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	int rc = ext3_file_release(f->in, EXT3_OPEN_WRITE);
	int orc = ext3_file_open(f->in, EXT3_OPEN_WRITE);
	if (orc) {
		f->writer = false; /* released: no second release at close */
		f->can_write = false;
	}
	pthread_mutex_unlock(&f->lock);
	return rc ? rc : orc;
}
