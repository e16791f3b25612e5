/* fsx: running operations on the real directory and comparing with the
 * model. Each check writes one line into s->msg naming the path, what
 * differs and what the model expected. */
#include "fsx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A data call found a mismatch itself (s->msg is set). */
#define FAILED INT_MIN
/* Bytes around a write or a size change compared right after it. */
#define MARGIN 4096

__attribute__((format(printf, 2, 3))) static int fail(struct fsx_state *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->msg, sizeof s->msg, fmt, ap);
	va_end(ap);
	return -1;
}

static void path_of(const struct fsx_state *s, int p, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->root, model_path_name(p));
}

static const char *target_name(const struct fsx_target *t, char *buf, size_t len)
{
	if (t->slot)
		snprintf(buf, len, "slot %d", t->idx);
	else
		snprintf(buf, len, "%s", model_path_name(t->idx));
	return buf;
}

static int rm_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

int state_start(struct fsx_state *s, const struct fsx_cfg *cfg)
{
	memset(s, 0, sizeof *s);
	s->cfg = cfg;
	model_init(&s->m);
	for (int i = 0; i < FSX_SLOTS; i++)
		s->fd[i] = -1;
	snprintf(s->root, sizeof s->root, "%s/fsx.work", cfg->dir);
	s->buf = malloc(cfg->max_size + cfg->max_io + MARGIN);
	s->wbuf = malloc(cfg->max_io);
	if (!s->buf || !s->wbuf)
		return fail(s, "out of memory");
	if (nftw(s->root, rm_cb, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return fail(s, "cannot empty %s: %s", s->root, strerror(errno));
	if (mkdir(s->root, 0755))
		return fail(s, "mkdir %s: %s", s->root, strerror(errno));
	return 0;
}

void state_end(struct fsx_state *s)
{
	for (int i = 0; i < FSX_SLOTS; i++)
		if (s->fd[i] >= 0)
			close(s->fd[i]);
	model_free(&s->m);
	free(s->buf);
	free(s->wbuf);
	s->buf = s->wbuf = NULL;
}

/* ------------------------------------------------------------ checks */

/* Compare n bytes read at off with the model's inode (zeroes past its
 * data). */
static int cmp_data(struct fsx_state *s, int ino, const char *what, uint64_t off, const uint8_t *got,
		    uint64_t n)
{
	const struct fsx_inode *in = &s->m.ino[ino];
	for (uint64_t k = 0; k < n; k++) {
		uint8_t want = off + k < in->size ? in->data[off + k] : 0;
		if (got[k] != want)
			return fail(s, "%s: byte at offset %llu is 0x%02x, the model has 0x%02x (size %llu)",
				    what, (unsigned long long)(off + k), got[k], want,
				    (unsigned long long)in->size);
	}
	return 0;
}

/* pread until n bytes or end of file; the count, or -errno. */
static int64_t read_full(int fd, uint8_t *buf, uint64_t n, uint64_t off)
{
	uint64_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	return (int64_t)done;
}

/* fd's type, size and link count against the model's inode, then bytes
 * [lo, hi) (clamped to the size). */
static int check_fd(struct fsx_state *s, int fd, int ino, const char *what, uint64_t lo, uint64_t hi)
{
	const struct fsx_inode *in = &s->m.ino[ino];
	struct stat st;
	if (fstat(fd, &st))
		return fail(s, "%s: fstat: %s", what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(s, "%s: not a regular file (mode 0%o)", what, st.st_mode);
	if ((uint64_t)st.st_size != in->size)
		return fail(s, "%s: size %lld, the model has %llu", what, (long long)st.st_size,
			    (unsigned long long)in->size);
	if (st.st_nlink != in->nlink)
		return fail(s, "%s: %lu links, the model has %u", what, (unsigned long)st.st_nlink, in->nlink);
	if (hi > in->size)
		hi = in->size;
	if (lo >= hi)
		return 0;
	int64_t n = read_full(fd, s->buf, hi - lo, lo);
	if (n < 0)
		return fail(s, "%s: read at %llu: %s", what, (unsigned long long)lo, strerror((int)-n));
	if ((uint64_t)n != hi - lo)
		return fail(s, "%s: read of %llu bytes at %llu returned %lld (size %llu)", what,
			    (unsigned long long)(hi - lo), (unsigned long long)lo, (long long)n,
			    (unsigned long long)in->size);
	return cmp_data(s, ino, what, lo, s->buf, hi - lo);
}

/* The file behind a target (its slot, or a fresh O_RDONLY open of the
 * path), checked as check_fd does. */
static int check_target(struct fsx_state *s, const struct fsx_target *t, uint64_t lo, uint64_t hi)
{
	char what[64], path[4200];
	int ino = model_target_ino(&s->m, t);
	target_name(t, what, sizeof what);
	if (t->slot)
		return check_fd(s, s->fd[t->idx], ino, what, lo, hi);
	path_of(s, t->idx, path, sizeof path);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return fail(s, "%s: open for the check: %s", what, strerror(errno));
	int rc = check_fd(s, fd, ino, what, lo, hi);
	close(fd);
	return rc;
}

/* One name: exists as the model says, with its type, link count and (files)
 * size; *st_ino gets its inode number (0 when missing). */
static int check_name(struct fsx_state *s, int p, uint64_t *st_ino)
{
	char path[4200];
	struct stat st;
	path_of(s, p, path, sizeof path);
	int d = model_parent(p);
	int ino = d >= 0 && s->m.path_ino[d] < 0 ? -1 : s->m.path_ino[p];
	int rc = lstat(path, &st) ? errno : 0;
	if (st_ino)
		*st_ino = rc ? 0 : st.st_ino;
	if (ino < 0)
		return rc == ENOENT ? 0
				    : fail(s, "%s: lstat gives %s, the model has no such name",
					   model_path_name(p), rc ? strerror(rc) : "success");
	if (rc)
		return fail(s, "%s: lstat: %s, the model has it", model_path_name(p), strerror(rc));
	const struct fsx_inode *in = &s->m.ino[ino];
	if (in->dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return fail(s, "%s: mode 0%o, the model has a %s", model_path_name(p), st.st_mode,
			    in->dir ? "directory" : "regular file");
	if (st.st_nlink != in->nlink)
		return fail(s, "%s: %lu links, the model has %u", model_path_name(p),
			    (unsigned long)st.st_nlink, in->nlink);
	if (!in->dir && (uint64_t)st.st_size != in->size)
		return fail(s, "%s: size %lld, the model has %llu", model_path_name(p),
			    (long long)st.st_size, (unsigned long long)in->size);
	return 0;
}

/* The work root's link count: 2 + its subdirectories. */
static int check_root(struct fsx_state *s)
{
	struct stat st;
	unsigned dirs = 0;
	for (int d = 0; d < FSX_DIRS; d++)
		dirs += s->m.path_ino[d] >= 0;
	if (stat(s->root, &st))
		return fail(s, "work root: stat: %s", strerror(errno));
	if (st.st_nlink != 2 + dirs)
		return fail(s, "work root: %lu links, the model has %u (2 + %u directories)",
			    (unsigned long)st.st_nlink, 2 + dirs, dirs);
	return 0;
}

/* readdir of the root (dir -1) or a directory: exactly the model's names,
 * each d_ino equal to the name's st_ino. */
static int check_listing(struct fsx_state *s, int dir)
{
	char path[4200], name[300];
	if (dir < 0)
		snprintf(path, sizeof path, "%s", s->root);
	else
		path_of(s, dir, path, sizeof path);
	DIR *dh = opendir(path);
	if (!dh)
		return fail(s, "opendir %s: %s", dir < 0 ? "work root" : model_path_name(dir), strerror(errno));
	unsigned seen = 0;
	int rc = 0;
	struct dirent *de;
	while (!rc && (errno = 0, de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (dir < 0)
			snprintf(name, sizeof name, "%s", de->d_name);
		else
			snprintf(name, sizeof name, "%s/%s", model_path_name(dir), de->d_name);
		int p = model_path_lookup(name);
		uint64_t ino;
		if (p < 0 || s->m.path_ino[p] < 0)
			rc = fail(s, "readdir: unexpected name %s", name);
		else if (!(rc = check_name(s, p, &ino)) && ino != de->d_ino)
			rc = fail(s, "readdir: %s has d_ino %llu, stat says %llu", name,
				  (unsigned long long)de->d_ino, (unsigned long long)ino);
		seen++;
	}
	if (!rc && errno)
		rc = fail(s, "readdir %s: %s", path, strerror(errno));
	closedir(dh);
	if (!rc && seen != model_dir_entries(&s->m, dir))
		rc = fail(s, "readdir %s: %u names, the model has %u", dir < 0 ? "work root" : model_path_name(dir),
			  seen, model_dir_entries(&s->m, dir));
	return rc;
}

int state_check_all(struct fsx_state *s)
{
	uint64_t real[FSX_MAXINO] = {0};
	bool checked[FSX_MAXINO] = {false};
	if (check_root(s) || check_listing(s, -1))
		return -1;
	for (int d = 0; d < FSX_DIRS; d++)
		if (s->m.path_ino[d] >= 0 && check_listing(s, d))
			return -1;
	for (int p = 0; p < FSX_NPATHS; p++) {
		uint64_t st_ino;
		if (check_name(s, p, &st_ino))
			return -1;
		int d = model_parent(p);
		int i = d >= 0 && s->m.path_ino[d] < 0 ? -1 : s->m.path_ino[p];
		if (i < 0)
			continue;
		if (real[i] && real[i] != st_ino)
			return fail(s, "%s: inode %llu, but another name of the same file has %llu",
				    model_path_name(p), (unsigned long long)st_ino, (unsigned long long)real[i]);
		for (int j = 0; j < FSX_MAXINO; j++)
			if (j != i && real[j] == st_ino)
				return fail(s, "%s: inode %llu is also another file's", model_path_name(p),
					    (unsigned long long)st_ino);
		real[i] = st_ino;
		if (s->m.ino[i].dir || checked[i])
			continue;
		checked[i] = true;
		struct fsx_target t = {.slot = false, .idx = p};
		if (check_target(s, &t, 0, UINT64_MAX))
			return -1;
	}
	for (int k = 0; k < FSX_SLOTS; k++) {
		int i = s->m.slot_ino[k];
		if (i < 0)
			continue;
		struct stat st;
		if (fstat(s->fd[k], &st))
			return fail(s, "slot %d: fstat: %s", k, strerror(errno));
		if (real[i] && real[i] != st.st_ino)
			return fail(s, "slot %d: inode %llu, its name has %llu", k,
				    (unsigned long long)st.st_ino, (unsigned long long)real[i]);
		struct fsx_target t = {.slot = true, .idx = k};
		if (!checked[i] && check_target(s, &t, 0, UINT64_MAX))
			return -1;
		checked[i] = true;
	}
	return 0;
}

/* ---------------------------------------------------------- execution */

static void fill_pattern(uint8_t *buf, uint64_t off, uint64_t len, uint32_t tag)
{
	for (uint64_t k = 0; k < len; k++)
		buf[k] = fsx_pattern(tag, off + k);
}

static int write_full(int fd, const uint8_t *buf, uint64_t len, uint64_t off)
{
	uint64_t done = 0;
	while (done < len) {
		ssize_t r = pwrite(fd, buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += (uint64_t)r;
	}
	return 0;
}

/* mmap a range of fd (page-aligned start); *delta is off's place in it. */
static uint8_t *map_range(int fd, uint64_t off, uint64_t len, int prot, uint64_t *delta, size_t *maplen)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = off & ~(pg - 1);
	*delta = off - start;
	*maplen = (size_t)(off + len - start);
	void *p = mmap(NULL, *maplen, prot, MAP_SHARED, fd, (off_t)start);
	return p == MAP_FAILED ? NULL : p;
}

/* The real size must be the model's before an mmap (else a check would
 * fault past the end of the file instead of reporting). */
static int size_guard(struct fsx_state *s, const struct fsx_op *op, int fd, uint64_t size)
{
	struct stat st;
	char what[64];
	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size != size) {
		fail(s, "%s: size %lld before the mmap, the model has %llu",
		     target_name(&op->t, what, sizeof what), (long long)st.st_size, (unsigned long long)size);
		return FAILED;
	}
	return 0;
}

static int mapwrite(struct fsx_state *s, const struct fsx_op *op, int fd, uint64_t size)
{
	int rc = size_guard(s, op, fd, size);
	if (rc || !op->len)
		return rc;
	if (op->off + op->len > size && ftruncate(fd, (off_t)(op->off + op->len)))
		return -errno;
	uint64_t delta;
	size_t maplen;
	uint8_t *p = map_range(fd, op->off, op->len, PROT_READ | PROT_WRITE, &delta, &maplen);
	if (!p)
		return -errno;
	fill_pattern(p + delta, op->off, op->len, op->tag);
	rc = op->flag && msync(p, maplen, MS_SYNC) ? -errno : 0;
	munmap(p, maplen);
	return rc;
}

static int mapread(struct fsx_state *s, const struct fsx_op *op, int fd, int ino, uint64_t size)
{
	int rc = size_guard(s, op, fd, size);
	if (rc || op->off >= size)
		return rc;
	uint64_t len = op->len < size - op->off ? op->len : size - op->off, delta;
	size_t maplen;
	uint8_t *p = map_range(fd, op->off, len, PROT_READ, &delta, &maplen);
	if (!p)
		return -errno;
	char what[64];
	rc = cmp_data(s, ino, target_name(&op->t, what, sizeof what), op->off, p + delta, len) ? FAILED : 0;
	munmap(p, maplen);
	return rc;
}

/* The self-test's wrong operations, done on the filesystem only. */
static int badwrite(struct fsx_state *s, const struct fsx_op *op, int fd, uint64_t size)
{
	char path[4200];
	switch (op->flag) {
	case 1:
		return ftruncate(fd, (off_t)(size / 2)) ? -errno : 0;
	case 2:
		if (!op->t.slot) {
			path_of(s, op->t.idx, path, sizeof path);
			return unlink(path) ? -errno : 0;
		}
		/* a slot has no name to remove: write instead */
		__attribute__((fallthrough));
	default:
		fill_pattern(s->wbuf, op->off, op->len, op->tag ^ 0x5a5a5a5au);
		return write_full(fd, s->wbuf, op->len, op->off);
	}
}

/* The call of a data op on fd (-1 for a closed slot). *nread: READ's count. */
static int data_call(struct fsx_state *s, const struct fsx_op *op, int fd, int ino, uint64_t size,
		     int64_t *nread)
{
	switch (op->kind) {
	case OP_WRITE:
		fill_pattern(s->wbuf, op->off, op->len, op->tag);
		return write_full(fd, s->wbuf, op->len, op->off);
	case OP_READ:
		*nread = read_full(fd, s->buf, op->len, op->off);
		return *nread < 0 ? (int)*nread : 0;
	case OP_MAPWRITE:
		return mapwrite(s, op, fd, size);
	case OP_MAPREAD:
		return mapread(s, op, fd, ino, size);
	case OP_TRUNC:
		return ftruncate(fd, (off_t)op->off) ? -errno : 0;
	case OP_FSYNC:
		return (op->flag ? fdatasync(fd) : fsync(fd)) ? -errno : 0;
	case OP_BADWRITE:
		return badwrite(s, op, fd, size);
	default:
		return -EINVAL;
	}
}

static int compare_errno(struct fsx_state *s, const struct fsx_op *op, int exp, int got)
{
	if (exp == got) {
		s->err[op->kind] += exp != 0;
		return 0;
	}
	char line[256];
	op_format(op, line, sizeof line);
	return fail(s, "'%s' gave %s, the model expects %s", line, got ? strerror(got) : "success",
		    exp ? strerror(exp) : "success");
}

static int exec_data(struct fsx_state *s, const struct fsx_op *op)
{
	int ino = model_target_ino(&s->m, &op->t);
	uint64_t size = ino >= 0 ? s->m.ino[ino].size : 0;
	int fd = -1, got = 0;
	bool own = false;
	int64_t nread = 0;
	char path[4200];
	path_of(s, op->t.idx, path, sizeof path);
	if (op->t.slot) {
		fd = s->fd[op->t.idx];
	} else if (op->kind == OP_TRUNC) { /* truncate(2) by name; ftruncate on slots */
		got = truncate(path, (off_t)op->off) ? errno : 0;
	} else {
		fd = open(path, O_RDWR);
		own = fd >= 0;
		if (fd < 0)
			got = errno;
	}
	if (!got && (op->t.slot || op->kind != OP_TRUNC)) {
		int rc = data_call(s, op, fd, ino, size, &nread);
		if (rc == FAILED) {
			if (own)
				close(fd);
			return -1;
		}
		got = -rc;
	}
	if (own)
		close(fd);
	int exp = model_apply(&s->m, op);
	if (compare_errno(s, op, exp, got))
		return -1;
	if (exp) /* failed as the model said: nothing to look at */
		return 0;
	s->ok[op->kind]++;
	char what[64];
	target_name(&op->t, what, sizeof what);
	uint64_t lo = op->off > MARGIN ? op->off - MARGIN : 0;
	switch (op->kind) {
	case OP_READ: {
		int64_t want = op->off < size ? (int64_t)(op->len < size - op->off ? op->len : size - op->off) : 0;
		if (nread != want)
			return fail(s, "%s: read of %llu at %llu returned %lld, the model has size %llu", what,
				    (unsigned long long)op->len, (unsigned long long)op->off, (long long)nread,
				    (unsigned long long)size);
		return cmp_data(s, ino, what, op->off, s->buf, (uint64_t)nread);
	}
	case OP_TRUNC: {
		uint64_t a = op->off < size ? op->off : size, b = op->off < size ? size : op->off;
		return check_target(s, &op->t, a > MARGIN ? a - MARGIN : 0, b + MARGIN);
	}
	case OP_WRITE:
	case OP_MAPWRITE:
	case OP_BADWRITE:
		return check_target(s, &op->t, lo, op->off + op->len + MARGIN);
	default: /* MAPREAD compared in the call; FSYNC: the file is unchanged */
		return check_target(s, &op->t, 0, 0);
	}
}

static int name_call(struct fsx_state *s, const struct fsx_op *op)
{
	char a[4200], b[4200];
	path_of(s, op->a, a, sizeof a);
	path_of(s, op->b, b, sizeof b);
	int fd;
	switch (op->kind) {
	case OP_CREATE:
		fd = open(a, O_RDWR | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			return errno;
		return close(fd) ? errno : 0;
	case OP_OPEN:
		if (s->fd[op->slot] >= 0)
			close(s->fd[op->slot]);
		s->fd[op->slot] = open(a, O_RDWR | (op->flag ? O_CREAT : 0), 0644);
		return s->fd[op->slot] < 0 ? errno : 0;
	case OP_CLOSE:
		fd = s->fd[op->slot];
		s->fd[op->slot] = -1;
		return close(fd) ? errno : 0;
	case OP_UNLINK:
		return unlink(a) ? errno : 0;
	case OP_LINK:
		return link(a, b) ? errno : 0;
	case OP_RENAME:
		if (!op->flag)
			return rename(a, b) ? errno : 0;
		return renameat2(AT_FDCWD, a, AT_FDCWD, b, op->flag == 1 ? RENAME_NOREPLACE : RENAME_EXCHANGE)
			       ? errno
			       : 0;
	case OP_MKDIR:
		return mkdir(a, 0755) ? errno : 0;
	case OP_RMDIR:
		return rmdir(a) ? errno : 0;
	default:
		return EINVAL;
	}
}

static int exec_name(struct fsx_state *s, const struct fsx_op *op)
{
	int got = name_call(s, op);
	int exp = model_apply(&s->m, op);
	if (compare_errno(s, op, exp, got))
		return -1;
	s->ok[op->kind] += !exp;
	int paths[2 + 2 * FSX_FILES], n = 0;
	if (op->kind != OP_CLOSE)
		paths[n++] = op->a;
	if (op->kind == OP_LINK || op->kind == OP_RENAME)
		paths[n++] = op->b;
	if (op->kind == OP_RENAME && model_is_dir_path(op->a))
		for (int f = 0; f < FSX_FILES; f++) {
			paths[n++] = FSX_DIRS + FSX_FILES * (op->a + 1) + f;
			paths[n++] = FSX_DIRS + FSX_FILES * (op->b + 1) + f;
		}
	for (int k = 0; k < n; k++)
		if (check_name(s, paths[k], NULL))
			return -1;
	if (op->kind == OP_OPEN && !exp) {
		struct fsx_target t = {.slot = true, .idx = op->slot};
		return check_target(s, &t, 0, 0);
	}
	return model_is_dir_path(op->a) ? check_root(s) : 0;
}

int state_exec(struct fsx_state *s, const struct fsx_op *op)
{
	s->nops++;
	return fsx_is_data_op(op->kind) ? exec_data(s, op) : exec_name(s, op);
}
