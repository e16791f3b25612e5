/* Public API: open files (include/nostall/nostall.h). A handle holds a
 * reference to the shared ext3 inode; regular files read through an
 * ext3_fread (per-handle readahead windows), symlinks through their target. */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

int nostall_open_ino(struct nostall_fs *fs, uint64_t ino, unsigned flags, struct nostall_file **out)
{
	*out = NULL;
	if (flags & ~(unsigned)NOSTALL_O_NOFOLLOW)
		return err_set(-EROFS, "nostall_open: only reading is supported (flags 0x%x)", flags);
	struct nostall_file *f = calloc(1, sizeof *f);
	if (!f)
		return err_set(-ENOMEM, "out of memory");
	int rc = api_inode_get(fs, ino, &f->in);
	if (!rc) {
		f->mode = ext3_inode_mode(f->in);
		uint16_t t = f->mode & EXT3_S_IFMT;
		if (t == EXT3_S_IFDIR)
			rc = err_set(-EISDIR, "inode %llu is a directory", (unsigned long long)ino);
		else if (t != EXT3_S_IFREG && t != EXT3_S_IFLNK)
			rc = err_set(-ENXIO, "inode %llu is a device, fifo or socket",
				     (unsigned long long)ino);
		else if (t == EXT3_S_IFREG)
			rc = ext3_fread_create(fs->e, f->in, fs->file_readahead, &f->rd);
	}
	if (rc) {
		ext3_iput(f->in);
		free(f);
		return rc;
	}
	f->fs = fs;
	pthread_mutex_init(&f->lock, NULL);
	atomic_fetch_add(&fs->handles, 1);
	*out = f;
	return 0;
}

int nostall_open(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_file **out)
{
	uint64_t ino = 0;
	*out = NULL;
	if (flags & ~(unsigned)NOSTALL_O_NOFOLLOW)
		return err_set(-EROFS, "nostall_open: only reading is supported (flags 0x%x)", flags);
	int rc = api_path_ino(fs, path, (flags & NOSTALL_O_NOFOLLOW) ? NOSTALL_NOFOLLOW : 0, &ino);
	return rc ? rc : nostall_open_ino(fs, ino, flags, out);
}

ssize_t nostall_pread(struct nostall_file *f, void *buf, size_t len, uint64_t off)
{
	if (len == 0)
		return 0;
	if ((f->mode & EXT3_S_IFMT) == EXT3_S_IFLNK) {
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
	if (f->rd)
		return ext3_fread_pread(f->rd, buf, len, off);
	return ext3_inode_pread(f->fs->e, f->in, buf, len, off);
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

int64_t nostall_lseek(struct nostall_file *f, int64_t off, int whence)
{
	pthread_mutex_lock(&f->lock);
	int64_t base;
	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)f->pos; break;
	case SEEK_END: base = (int64_t)ext3_inode_size(f->in); break;
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

int nostall_fstat(struct nostall_file *f, struct nostall_stat *st)
{
	api_stat_fill(f->fs, f->in, st);
	return 0;
}

void nostall_close(struct nostall_file *f)
{
	if (!f)
		return;
	ext3_fread_destroy(f->rd); /* waits for its readahead in flight */
	ext3_iput(f->in);
	atomic_fetch_sub(&f->fs->handles, 1);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int nostall_bmap(struct nostall_file *f, uint64_t lblk, uint64_t *phys)
{
	*phys = 0;
	if ((f->mode & EXT3_S_IFMT) == EXT3_S_IFLNK && ext3_inode_is_fast_symlink(f->fs->e, f->in))
		return 0;
	return ext3_inode_bmap(f->fs->e, f->in, lblk, phys);
}

