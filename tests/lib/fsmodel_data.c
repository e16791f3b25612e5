/* In-memory POSIX tree model: file contents (sparse chunks), attributes,
 * extended attributes and handle I/O (fsmodel.h). */
#define FSMODEL_INTERNAL
#include "fsmodel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define XATTR_NAME_MAX_ 255
#define XATTR_SIZE_MAX_ 65536

static struct fsmodel *model_of(struct fs_target *t)
{
	return t->priv;
}

/* ---- contents ---- */

/* Index of the first chunk with idx >= want. */
static size_t chunk_lower(const struct fsm_inode *ip, uint64_t want)
{
	size_t lo = 0, hi = ip->nchunks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ip->chunks[mid].idx < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint8_t *chunk_get(struct fsmodel *m, struct fsm_inode *ip, uint64_t idx)
{
	size_t i = chunk_lower(ip, idx);
	if (i < ip->nchunks && ip->chunks[i].idx == idx)
		return ip->chunks[i].data;
	if (ip->nchunks == ip->chunks_cap) {
		ip->chunks_cap = ip->chunks_cap ? 2 * ip->chunks_cap : 8;
		ip->chunks = fst_xrealloc(ip->chunks, ip->chunks_cap * sizeof *ip->chunks);
	}
	memmove(ip->chunks + i + 1, ip->chunks + i, (ip->nchunks - i) * sizeof *ip->chunks);
	ip->chunks[i].idx = idx;
	ip->chunks[i].data = fst_xcalloc(1, FSM_CHUNK);
	ip->nchunks++;
	m->bytes += FSM_CHUNK;
	return ip->chunks[i].data;
}

static void data_write(struct fsmodel *m, struct fsm_inode *ip, uint64_t off, const uint8_t *buf,
		       size_t len)
{
	if (!len)
		return;
	if (off + len > ip->size)
		ip->size = off + len;
	while (len) {
		uint64_t in = off % FSM_CHUNK;
		size_t n = FSM_CHUNK - in < len ? (size_t)(FSM_CHUNK - in) : len;
		memcpy(chunk_get(m, ip, off / FSM_CHUNK) + in, buf, n);
		off += n;
		buf += n;
		len -= n;
	}
	ip->known &= ~FST_MTIME_KNOWN;
}

static void data_read(const struct fsm_inode *ip, uint64_t off, uint8_t *buf, size_t len)
{
	memset(buf, 0, len);
	size_t i = chunk_lower(ip, off / FSM_CHUNK);
	for (; i < ip->nchunks; i++) {
		uint64_t cs = ip->chunks[i].idx * FSM_CHUNK, ce = cs + FSM_CHUNK;
		if (cs >= off + len)
			break;
		uint64_t s = cs > off ? cs : off, e = ce < off + len ? ce : off + len;
		memcpy(buf + (s - off), ip->chunks[i].data + (s - cs), (size_t)(e - s));
	}
}

void fsm_data_truncate(struct fsmodel *m, struct fsm_inode *ip, uint64_t size)
{
	if (size < ip->size) {
		uint64_t keep = (size + FSM_CHUNK - 1) / FSM_CHUNK; /* chunks [0, keep) stay */
		size_t i = chunk_lower(ip, keep);
		for (size_t j = i; j < ip->nchunks; j++) {
			free(ip->chunks[j].data);
			m->bytes -= FSM_CHUNK;
		}
		ip->nchunks = i;
		if (size % FSM_CHUNK && i && ip->chunks[i - 1].idx == size / FSM_CHUNK)
			memset(ip->chunks[i - 1].data + size % FSM_CHUNK, 0,
			       FSM_CHUNK - size % FSM_CHUNK);
	}
	ip->size = size;
	ip->known &= ~FST_MTIME_KNOWN;
}

void fsm_inode_free_data(struct fsmodel *m, struct fsm_inode *ip)
{
	for (size_t i = 0; i < ip->nchunks; i++)
		free(ip->chunks[i].data);
	m->bytes -= (uint64_t)ip->nchunks * FSM_CHUNK;
	free(ip->chunks);
	for (size_t i = 0; i < ip->nents; i++)
		free(ip->ents[i].name);
	free(ip->ents);
	free(ip->target);
	for (size_t i = 0; i < ip->nxattrs; i++) {
		free(ip->xattrs[i].name);
		free(ip->xattrs[i].val);
	}
	free(ip->xattrs);
}

int fsm_op_data_ranges(struct fs_target *t, const char *path, fst_range_cb cb, void *ctx)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, false, &ip);
	if (rc)
		return rc;
	if (!S_ISREG(ip->mode))
		return -EINVAL;
	for (size_t i = 0; i < ip->nchunks;) {
		size_t j = i + 1;
		while (j < ip->nchunks && ip->chunks[j].idx == ip->chunks[j - 1].idx + 1)
			j++;
		uint64_t s = ip->chunks[i].idx * FSM_CHUNK, e = (ip->chunks[j - 1].idx + 1) * FSM_CHUNK;
		if (e > ip->size)
			e = ip->size;
		if (s < e && (rc = cb(ctx, s, e - s)))
			return rc;
		i = j;
	}
	return 0;
}

/* ---- path attribute calls ---- */

int fsm_op_truncate(struct fs_target *t, const char *path, uint64_t size)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, true, &ip);
	if (rc)
		return rc;
	if (S_ISDIR(ip->mode))
		return -EISDIR;
	if (!S_ISREG(ip->mode))
		return -EINVAL;
	fsm_data_truncate(model_of(t), ip, size);
	return 0;
}

int fsm_op_chmod(struct fs_target *t, const char *path, uint32_t mode)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, true, &ip);
	if (rc)
		return rc;
	ip->mode = (ip->mode & S_IFMT) | (mode & 07777);
	return 0;
}

/* chown_common: a non-directory loses setuid, and setgid when group-
 * executable, whoever asks (even with ids unchanged). */
int fsm_op_chown(struct fs_target *t, const char *path, unsigned flags, uint32_t uid, uint32_t gid)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, !(flags & FST_NOFOLLOW), &ip);
	if (rc)
		return rc;
	if (uid != (uint32_t)-1)
		ip->uid = uid;
	if (gid != (uint32_t)-1)
		ip->gid = gid;
	if (!S_ISDIR(ip->mode)) {
		ip->mode &= ~(uint32_t)S_ISUID;
		if ((ip->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
			ip->mode &= ~(uint32_t)S_ISGID;
	}
	return 0;
}

int fsm_op_utimens(struct fs_target *t, const char *path, unsigned flags,
		   const struct fst_time ts[2])
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, !(flags & FST_NOFOLLOW), &ip);
	if (rc)
		return rc;
	ip->atime = ts[0];
	ip->mtime = ts[1];
	ip->known = FST_ATIME_KNOWN | FST_MTIME_KNOWN;
	return 0;
}

static void stat_fill(const struct fsm_inode *ip, struct fst_stat *st)
{
	*st = (struct fst_stat){ .ino = ip->ino, .mode = ip->mode, .nlink = ip->nlink,
				 .uid = ip->uid, .gid = ip->gid,
				 .size = S_ISDIR(ip->mode) ? 0 : ip->size, .rdev = ip->rdev,
				 .atime = ip->atime, .mtime = ip->mtime, .known = ip->known };
}

int fsm_op_stat(struct fs_target *t, const char *path, unsigned flags, struct fst_stat *st)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, !(flags & FST_NOFOLLOW), &ip);
	if (rc)
		return rc;
	stat_fill(ip, st);
	return 0;
}

ssize_t fsm_op_readlink(struct fs_target *t, const char *path, char *buf, size_t size)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, false, &ip);
	if (rc)
		return rc;
	if (!S_ISLNK(ip->mode) || !size)
		return -EINVAL;
	size_t n = ip->size < size ? ip->size : size;
	memcpy(buf, ip->target, n);
	ip->known &= ~FST_ATIME_KNOWN;
	return (ssize_t)n;
}

static unsigned char dtype_of(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFIFO: return DT_FIFO;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	case S_IFSOCK: return DT_SOCK;
	default: return DT_UNKNOWN;
	}
}

int fsm_op_readdir(struct fs_target *t, const char *path, struct fst_dirlist *out)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, true, &ip);
	if (rc)
		return rc;
	if (!S_ISDIR(ip->mode))
		return -ENOTDIR;
	if (ip->nlink == 0)
		return 0; /* a removed directory reads as empty, without . and .. */
	fst_dirlist_add(out, ip->ino, DT_DIR, ".");
	fst_dirlist_add(out, ip->parent->ino, DT_DIR, "..");
	for (size_t i = 0; i < ip->nents; i++)
		fst_dirlist_add(out, ip->ents[i].ip->ino, dtype_of(ip->ents[i].ip->mode),
				ip->ents[i].name);
	ip->known &= ~FST_ATIME_KNOWN;
	return 0;
}

/* ---- extended attributes ---- */

size_t fsm_xattr_cost(const char *name, size_t value_len)
{
	size_t n = strlen(name);
	if (!strncmp(name, "user.", 5))
		n -= 5;
	else if (!strncmp(name, "trusted.", 8))
		n -= 8;
	return 16 + ((n + 3) & ~(size_t)3) + ((value_len + 3) & ~(size_t)3);
}

size_t fsm_xattr_bytes(const struct fsm_inode *ip)
{
	size_t sum = 0;
	for (size_t i = 0; i < ip->nxattrs; i++)
		sum += fsm_xattr_cost(ip->xattrs[i].name, ip->xattrs[i].len);
	return sum;
}

/* The name checks of the VFS before the path is looked up. */
static int xattr_name_check(const char *name)
{
	size_t n = strlen(name);
	return (n == 0 || n > XATTR_NAME_MAX_) ? -ERANGE : 0;
}

/* xattr_permission() and the handler lookup, after the path: user.* only
 * on regular files and directories; unknown namespaces are not supported. */
static int xattr_ns_check(const struct fsm_inode *ip, const char *name, bool write)
{
	if (!strncmp(name, "user.", 5)) {
		if (!S_ISREG(ip->mode) && !S_ISDIR(ip->mode))
			return write ? -EPERM : -ENODATA;
		return name[5] ? 0 : -EINVAL;
	}
	if (!strncmp(name, "trusted.", 8))
		return name[8] ? 0 : -EINVAL;
	return -EOPNOTSUPP;
}

static int xattr_find(const struct fsm_inode *ip, const char *name)
{
	for (size_t i = 0; i < ip->nxattrs; i++)
		if (!strcmp(ip->xattrs[i].name, name))
			return (int)i;
	return -1;
}

int fsm_op_setxattr(struct fs_target *t, const char *path, unsigned flags, const char *name,
		    const void *value, size_t size, unsigned xflags)
{
	struct fsm_inode *ip;
	if (xflags & ~(FST_XATTR_CREATE | FST_XATTR_REPLACE))
		return -EINVAL;
	int rc = xattr_name_check(name);
	if (rc)
		return rc;
	if (size > XATTR_SIZE_MAX_)
		return -E2BIG;
	if ((rc = fsm_resolve(model_of(t), path, !(flags & FST_NOFOLLOW), &ip)) ||
	    (rc = xattr_ns_check(ip, name, true)))
		return rc;
	int i = xattr_find(ip, name);
	if (i >= 0 && (xflags & FST_XATTR_CREATE))
		return -EEXIST;
	if (i < 0 && (xflags & FST_XATTR_REPLACE))
		return -ENODATA;
	if (i < 0) {
		ip->xattrs = fst_xrealloc(ip->xattrs, (ip->nxattrs + 1) * sizeof *ip->xattrs);
		i = (int)ip->nxattrs++;
		ip->xattrs[i].name = fst_xstrdup(name);
	} else {
		free(ip->xattrs[i].val);
	}
	ip->xattrs[i].val = fst_xmemdup(value, size);
	ip->xattrs[i].len = size;
	return 0;
}

int fsm_op_removexattr(struct fs_target *t, const char *path, unsigned flags, const char *name)
{
	struct fsm_inode *ip;
	int rc = xattr_name_check(name);
	if (rc)
		return rc;
	if ((rc = fsm_resolve(model_of(t), path, !(flags & FST_NOFOLLOW), &ip)) ||
	    (rc = xattr_ns_check(ip, name, true)))
		return rc;
	int i = xattr_find(ip, name);
	if (i < 0)
		return -ENODATA;
	free(ip->xattrs[i].name);
	free(ip->xattrs[i].val);
	memmove(ip->xattrs + i, ip->xattrs + i + 1, (ip->nxattrs - (size_t)i - 1) * sizeof *ip->xattrs);
	ip->nxattrs--;
	return 0;
}

ssize_t fsm_op_getxattr(struct fs_target *t, const char *path, unsigned flags, const char *name,
			void *buf, size_t size)
{
	struct fsm_inode *ip;
	int rc = xattr_name_check(name);
	if (rc)
		return rc;
	if ((rc = fsm_resolve(model_of(t), path, !(flags & FST_NOFOLLOW), &ip)) ||
	    (rc = xattr_ns_check(ip, name, false)))
		return rc;
	int i = xattr_find(ip, name);
	if (i < 0)
		return -ENODATA;
	if (!size)
		return (ssize_t)ip->xattrs[i].len;
	if (size < ip->xattrs[i].len)
		return -ERANGE;
	memcpy(buf, ip->xattrs[i].val, ip->xattrs[i].len);
	return (ssize_t)ip->xattrs[i].len;
}

ssize_t fsm_op_listxattr(struct fs_target *t, const char *path, unsigned flags, char *buf,
			 size_t size)
{
	struct fsm_inode *ip;
	int rc = fsm_resolve(model_of(t), path, !(flags & FST_NOFOLLOW), &ip);
	if (rc)
		return rc;
	size_t need = 0;
	for (size_t i = 0; i < ip->nxattrs; i++)
		need += strlen(ip->xattrs[i].name) + 1;
	if (!size)
		return (ssize_t)need;
	if (size < need)
		return -ERANGE;
	size_t off = 0;
	for (size_t i = 0; i < ip->nxattrs; i++) {
		size_t n = strlen(ip->xattrs[i].name) + 1;
		memcpy(buf + off, ip->xattrs[i].name, n);
		off += n;
	}
	return (ssize_t)need;
}

/* ---- handle I/O ---- */

static struct fsm_handle *handle_of(struct fs_target *t, int h)
{
	return fsm_handle_get(model_of(t), h);
}

static ssize_t do_read(struct fsm_handle *fh, void *buf, size_t len, uint64_t off)
{
	if (!fh || (fh->oflags & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	struct fsm_inode *ip = fh->ip;
	if (S_ISDIR(ip->mode))
		return -EISDIR;
	ip->known &= ~FST_ATIME_KNOWN;
	if (off >= ip->size)
		return 0;
	if (len > ip->size - off)
		len = (size_t)(ip->size - off);
	data_read(ip, off, buf, len);
	return (ssize_t)len;
}

/* O_APPEND writes at the end, for pwrite too (as Linux does). */
static ssize_t do_write(struct fsmodel *m, struct fsm_handle *fh, const void *buf, size_t len,
			uint64_t off)
{
	if (!fh || (fh->oflags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	struct fsm_inode *ip = fh->ip;
	if (fh->oflags & O_APPEND)
		off = ip->size;
	data_write(m, ip, off, buf, len);
	ip->known &= ~FST_MTIME_KNOWN;
	return (ssize_t)len;
}

ssize_t fsm_op_read(struct fs_target *t, int h, void *buf, size_t len)
{
	struct fsm_handle *fh = handle_of(t, h);
	ssize_t n = do_read(fh, buf, len, fh ? fh->pos : 0);
	if (n > 0)
		fh->pos += (uint64_t)n;
	return n;
}

ssize_t fsm_op_pread(struct fs_target *t, int h, void *buf, size_t len, uint64_t off)
{
	return do_read(handle_of(t, h), buf, len, off);
}

ssize_t fsm_op_write(struct fs_target *t, int h, const void *buf, size_t len)
{
	struct fsm_handle *fh = handle_of(t, h);
	if (fh && len && (fh->oflags & O_APPEND) && (fh->oflags & O_ACCMODE) != O_RDONLY)
		fh->pos = fh->ip->size; /* an empty write leaves the position alone */
	ssize_t n = do_write(model_of(t), fh, buf, len, fh ? fh->pos : 0);
	if (n > 0)
		fh->pos += (uint64_t)n;
	return n;
}

ssize_t fsm_op_pwrite(struct fs_target *t, int h, const void *buf, size_t len, uint64_t off)
{
	return do_write(model_of(t), handle_of(t, h), buf, len, off);
}

int fsm_op_ftruncate(struct fs_target *t, int h, uint64_t size)
{
	struct fsm_handle *fh = handle_of(t, h);
	if (!fh)
		return -EBADF;
	if (!S_ISREG(fh->ip->mode) || (fh->oflags & O_ACCMODE) == O_RDONLY)
		return -EINVAL;
	fsm_data_truncate(model_of(t), fh->ip, size);
	return 0;
}

int fsm_op_fsync(struct fs_target *t, int h, int datasync)
{
	return handle_of(t, h) ? 0 : -EBADF;
}

int fsm_op_fstat(struct fs_target *t, int h, struct fst_stat *st)
{
	struct fsm_handle *fh = handle_of(t, h);
	if (!fh)
		return -EBADF;
	stat_fill(fh->ip, st);
	return 0;
}
