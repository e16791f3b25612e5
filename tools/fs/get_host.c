/* nostall get, the host side: file contents with holes preserved, and
 * owner, mode, extended attributes (ext3 ACLs converted) and times. */
#include "get.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

int get_error(struct get_ctx *g, const char *path, const char *what, int rc, bool fs_side)
{
	g->ret = 1;
	return cli_error("get", path, what, rc, fs_side);
}

static bool all_zero(const char *p, size_t n)
{
	static const char zero[4096];
	while (n >= sizeof zero) {
		if (memcmp(p, zero, sizeof zero))
			return false;
		p += sizeof zero;
		n -= sizeof zero;
	}
	return n == 0 || !memcmp(p, zero, n);
}

static void progress(struct get_ctx *g, const char *path, uint64_t done, uint64_t total, bool end)
{
	if (!g->tty || total < (64u << 20))
		return;
	fprintf(stderr, "\r%s: %" PRIu64 "/%" PRIu64 " MiB (%u%%)", path, done >> 20, total >> 20,
		(unsigned)(total ? done * 100 / total : 100));
	if (end)
		fputc('\n', stderr);
}

/* Are the `n` blocks from lblk all holes? (bmap errors count as "not sure") */
static bool blocks_are_holes(struct nostall_file *f, uint64_t lblk, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		uint64_t phys = 1;
		if (nostall_bmap(f, lblk + k, &phys) || phys)
			return false;
	}
	return true;
}

/* One read's pieces, written to the host file where they are not zero:
 * block-sized pieces that are all zero are skipped and stay holes (the file
 * gets its size at the end). Called by nostall_pread_sink, which lends the
 * read-ahead's buffers on a sequential read: no copy of our own. */
struct get_sink {
	int fd;
	uint32_t bs;
	uint64_t off; /* file offset of the next piece */
	int err;      /* the host write's negative errno, told apart from the read's */
};

static int get_sink_write(void *arg, const struct iovec *iov, int iovcnt)
{
	struct get_sink *s = arg;
	for (int k = 0; k < iovcnt; k++) {
		const char *b = iov[k].iov_base;
		size_t n = iov[k].iov_len, pos = 0;
		while (pos < n) {
			/* the non-zero run of block-sized pieces from pos */
			size_t piece = s->bs - (size_t)((s->off + pos) % s->bs);
			if (piece > n - pos)
				piece = n - pos;
			if (all_zero(b + pos, piece)) {
				pos += piece;
				continue;
			}
			size_t start = pos;
			pos += piece;
			while (pos < n) {
				size_t p2 = s->bs < n - pos ? s->bs : n - pos;
				if (all_zero(b + pos, p2))
					break;
				pos += p2;
			}
			int rc = cli_pwrite_all(s->fd, b + start, pos - start, s->off + start);
			if (rc < 0)
				return s->err = rc;
		}
		s->off += n;
	}
	return 0;
}

/* Copy the contents of an open fs file to host fd, holes preserved. */
int get_data_copy(struct get_ctx *g, struct nostall_file *f, const struct nostall_stat *st, int fd,
		  const char *path)
{
	uint64_t size = st->size, off = 0;
	uint32_t bs = g->bsize;
	bool sparse = st->blocks * 512 < size + bs; /* allocated less than the size: holes likely */
	struct get_sink s = { .fd = fd, .bs = bs ? bs : 4096 };
	while (off < size) {
		size_t want = size - off < CLI_IO_CHUNK ? (size_t)(size - off) : CLI_IO_CHUNK;
		if (sparse && off % bs == 0 && bs && blocks_are_holes(f, off / bs, (want + bs - 1) / bs)) {
			off += want;
			continue;
		}
		s.off = off;
		ssize_t n = nostall_pread_sink(f, g->buf, want, off, get_sink_write, &s);
		if (s.err)
			return get_error(g, path, "write", s.err, false);
		if (n < 0)
			return get_error(g, path, "read", (int)n, true);
		if (n == 0)
			return get_error(g, path, "read", -EIO, false), -EIO; /* short file */
		off += (uint64_t)n;
		g->bytes += (uint64_t)n;
		progress(g, path, off, size, false);
	}
	if (ftruncate(fd, (off_t)size) < 0)
		return get_error(g, path, "truncate", -errno, false);
	progress(g, path, size, size, true);
	return 0;
}

static int ns_index(const char *name)
{
	if (!strncmp(name, "user.", 5)) return 0;
	if (!strncmp(name, "trusted.", 8)) return 1;
	if (!strncmp(name, "security.", 9)) return 2;
	return 3;
}

/* Copy xattrs of inode ino onto host entry `hpath` (an lsetxattr path). */
static void copy_xattrs(struct get_ctx *g, uint64_t ino, const char *hpath, const char *path)
{
	ssize_t len = nostall_listxattr_ino(g->fs, ino, NULL, 0);
	if (len <= 0) {
		if (len < 0)
			get_error(g, path, "listxattr", (int)len, true);
		return;
	}
	char *list = malloc((size_t)len);
	if (!list)
		return;
	len = nostall_listxattr_ino(g->fs, ino, list, (size_t)len);
	if (len < 0) {
		get_error(g, path, "listxattr", (int)len, true);
		free(list);
		return;
	}
	for (char *name = list; name < list + len; name += strlen(name) + 1) {
		ssize_t vlen = nostall_getxattr_ino(g->fs, ino, name, NULL, 0);
		if (vlen < 0) {
			get_error(g, path, name, (int)vlen, true);
			continue;
		}
		unsigned char *v = malloc((size_t)vlen + 1);
		if (!v)
			continue;
		if (vlen > 0)
			vlen = nostall_getxattr_ino(g->fs, ino, name, v, (size_t)vlen);
		if (vlen < 0) {
			get_error(g, path, name, (int)vlen, true);
			free(v);
			continue;
		}
		const unsigned char *val = v; /* ACLs: the library gives the VFS form */
		if (lsetxattr(hpath, name, val, (size_t)vlen, 0) < 0) {
			int e = errno;
			int ns = ns_index(name);
			g->xattr_fail++;
			if (!g->warned_xattr_ns[ns]) {
				g->warned_xattr_ns[ns] = true;
				fprintf(stderr, "nostall get: %s: cannot set %s on the host: %s%s\n", path, name,
					strerror(e), " (further failures in this namespace not shown)");
			}
		}
		free(v);
	}
	free(list);
}

static void set_times(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		      const char *path)
{
	struct timespec ts[2] = {
		{ .tv_sec = (time_t)st->atime.sec, .tv_nsec = st->atime.nsec },
		{ .tv_sec = (time_t)st->mtime.sec, .tv_nsec = st->mtime.nsec },
	};
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		get_error(g, path, "set times", -errno, false);
}

/* Owner, mode (not for symlinks), xattrs and times, in that order (chown
 * clears set-id bits; times last). */
void get_attrs_set(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		   const char *path)
{
	if (g->root && fchownat(dirfd, name, st->uid, st->gid, AT_SYMLINK_NOFOLLOW) < 0) {
		g->owner_fail++;
		get_error(g, path, "chown", -errno, false);
	}
	if (!S_ISLNK(st->mode) && fchmodat(dirfd, name, st->mode & 07777, 0) < 0)
		get_error(g, path, "chmod", -errno, false);
	char hpath[64 + NOSTALL_NAME_MAX];
	if (dirfd == AT_FDCWD)
		copy_xattrs(g, st->ino, name, path);
	else {
		snprintf(hpath, sizeof hpath, "/proc/self/fd/%d/%s", dirfd, name);
		copy_xattrs(g, st->ino, hpath, path);
	}
	set_times(g, dirfd, name, st, path);
}
