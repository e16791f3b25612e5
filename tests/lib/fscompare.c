/* Whole-tree compare and copy between two targets (fsrun.h).
 *
 * The compare walks both trees from the root in name order and reports
 * every difference it finds (up to max_diffs): entry names and types,
 * permission bits, owner, link count, size, device numbers, known times,
 * symlink targets, xattrs (names and values), contents, and the hard-link
 * structure (an inode seen under two names in one tree must be one inode
 * under the same names in the other). Contents are compared over the union
 * of both sides' allocated ranges, so a sparse file costs what it holds. */
#include "fsrun.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IOBUF (1u << 20)
#define XBUF 65536

/* ---- fsmap ---- */

static size_t map_slot(const struct fsmap *m, uint64_t k)
{
	size_t i = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & (m->cap - 1);
	while (m->k[i] && m->k[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

void fsmap_put(struct fsmap *m, uint64_t k, uint64_t v)
{
	k++;
	if (2 * (m->n + 1) > m->cap) {
		struct fsmap old = *m;
		m->cap = m->cap ? 2 * m->cap : 64;
		m->k = fst_xcalloc(m->cap, sizeof *m->k);
		m->v = fst_xcalloc(m->cap, sizeof *m->v);
		m->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.k[i])
				fsmap_put(m, old.k[i] - 1, old.v[i]);
		free(old.k);
		free(old.v);
	}
	size_t i = map_slot(m, k);
	if (!m->k[i]) {
		m->k[i] = k;
		m->n++;
	}
	m->v[i] = v;
}

bool fsmap_get(const struct fsmap *m, uint64_t k, uint64_t *v)
{
	if (!m->cap)
		return false;
	size_t i = map_slot(m, k + 1);
	if (!m->k[i])
		return false;
	*v = m->v[i];
	return true;
}

void fsmap_free(struct fsmap *m)
{
	free(m->k);
	free(m->v);
	*m = (struct fsmap){ 0 };
}

/* ---- byte ranges ---- */

struct ranges {
	uint64_t (*v)[2]; /* [start, end) */
	size_t n, cap;
};

static int range_add(void *ctx, uint64_t off, uint64_t len)
{
	struct ranges *r = ctx;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 16;
		r->v = fst_xrealloc(r->v, r->cap * sizeof *r->v);
	}
	r->v[r->n][0] = off;
	r->v[r->n][1] = off + len;
	r->n++;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sort and merge overlapping/adjacent ranges. */
static void ranges_merge(struct ranges *r)
{
	if (!r->n)
		return;
	qsort(r->v, r->n, sizeof *r->v, range_cmp);
	size_t o = 0;
	for (size_t i = 1; i < r->n; i++) {
		if (r->v[i][0] <= r->v[o][1]) {
			if (r->v[i][1] > r->v[o][1])
				r->v[o][1] = r->v[i][1];
		} else {
			r->v[++o][0] = r->v[i][0];
			r->v[o][1] = r->v[i][1];
		}
	}
	r->n = o + 1;
}

/* Allocated ranges of path, clipped to size ([0, size) without the call). */
static int ranges_get(struct fs_target *t, const char *path, uint64_t size, struct ranges *r)
{
	if (!t->ops->data_ranges)
		return size ? range_add(r, 0, size) : 0;
	int rc = t->ops->data_ranges(t, path, range_add, r);
	if (rc)
		return rc;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i][1] > size)
			r->v[i][1] = size;
	ranges_merge(r);
	return 0;
}

/* ---- compare ---- */

struct cmp {
	struct fs_target *a, *b;
	struct fst_cmp_opts o;
	char *msg;
	size_t msglen, used;
	unsigned ndiffs;
	struct fsmap ab, ba; /* inode identities seen: a -> b and b -> a */
	uint8_t *bufa, *bufb;
	int err;
};

static void diff(struct cmp *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void diff(struct cmp *c, const char *path, const char *fmt, ...)
{
	c->ndiffs++;
	if (c->ndiffs > c->o.max_diffs || c->used + 1 >= c->msglen)
		return;
	int n = snprintf(c->msg + c->used, c->msglen - c->used, "%s: ", path);
	if (n > 0)
		c->used += (size_t)n;
	if (c->used + 1 >= c->msglen)
		return;
	va_list ap;
	va_start(ap, fmt);
	n = vsnprintf(c->msg + c->used, c->msglen - c->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		c->used += (size_t)n;
	if (c->used + 1 < c->msglen) {
		c->msg[c->used++] = '\n';
		c->msg[c->used] = 0;
	} else {
		c->used = c->msglen - 1;
	}
}

static bool stop(const struct cmp *c)
{
	return c->err || c->ndiffs >= c->o.max_diffs;
}

static void fail(struct cmp *c, const char *path, const char *what, int64_t rc)
{
	diff(c, path, "%s failed: %s", what, fst_errname(rc));
}

static int xattr_names(struct fs_target *t, const char *path, char *buf, struct fst_dirlist *out)
{
	ssize_t n = t->ops->listxattr(t, path, FST_NOFOLLOW, buf, XBUF);
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		fst_dirlist_add(out, 0, 0, buf + i);
	fst_dirlist_sort(out);
	return 0;
}

static void cmp_xattrs(struct cmp *c, const char *path)
{
	struct fst_dirlist la = { 0 }, lb = { 0 };
	int ra = xattr_names(c->a, path, (char *)c->bufa, &la);
	int rb = xattr_names(c->b, path, (char *)c->bufb, &lb);
	if (ra || rb) {
		fail(c, path, "listxattr", ra ? ra : rb);
		goto out;
	}
	size_t i = 0, j = 0;
	while (i < la.n || j < lb.n) {
		int d = i == la.n ? 1 : j == lb.n ? -1 : strcmp(la.v[i].name, lb.v[j].name);
		if (d < 0) {
			diff(c, path, "xattr %s only in %s", la.v[i++].name, c->a->name);
			continue;
		}
		if (d > 0) {
			diff(c, path, "xattr %s only in %s", lb.v[j++].name, c->b->name);
			continue;
		}
		const char *name = la.v[i].name;
		ssize_t na = c->a->ops->getxattr(c->a, path, FST_NOFOLLOW, name, c->bufa, XBUF);
		ssize_t nb = c->b->ops->getxattr(c->b, path, FST_NOFOLLOW, name, c->bufb, XBUF);
		if (na < 0 || nb < 0)
			fail(c, path, "getxattr", na < 0 ? na : nb);
		else if (na != nb || memcmp(c->bufa, c->bufb, (size_t)na))
			diff(c, path, "xattr %s value differs (%zd vs %zd bytes)", name, na, nb);
		i++;
		j++;
	}
out:
	fst_dirlist_free(&la);
	fst_dirlist_free(&lb);
}

/* Read [off, off + len) of an open handle pair and compare. */
static void cmp_bytes(struct cmp *c, const char *path, int ha, int hb, uint64_t off, uint64_t end)
{
	while (off < end && !stop(c)) {
		size_t n = end - off > IOBUF ? IOBUF : (size_t)(end - off);
		ssize_t na = c->a->ops->pread(c->a, ha, c->bufa, n, off);
		ssize_t nb = c->b->ops->pread(c->b, hb, c->bufb, n, off);
		if (na < 0 || nb < 0) {
			fail(c, path, "pread", na < 0 ? na : nb);
			return;
		}
		if (na != nb || (size_t)na != n) {
			diff(c, path, "short read at %" PRIu64 ": %zd vs %zd of %zu", off, na, nb, n);
			return;
		}
		if (memcmp(c->bufa, c->bufb, n)) {
			size_t k = 0;
			while (c->bufa[k] == c->bufb[k])
				k++;
			diff(c, path, "content differs at byte %" PRIu64 " (0x%02x vs 0x%02x)", off + k,
			     c->bufa[k], c->bufb[k]);
			return;
		}
		off += n;
	}
}

static bool range_covered(const struct ranges *r, uint64_t s, uint64_t e)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i][0] <= s && e <= r->v[i][1])
			return true;
	return false;
}

static void cmp_content(struct cmp *c, const char *path, uint64_t size)
{
	struct ranges ra = { 0 }, rb = { 0 }, all = { 0 };
	int rc = ranges_get(c->a, path, size, &ra);
	if (!rc)
		rc = ranges_get(c->b, path, size, &rb);
	if (rc) {
		fail(c, path, "data ranges", rc);
		goto out;
	}
	if (c->o.holes)
		for (size_t i = 0; i < rb.n; i++)
			if (!range_covered(&ra, rb.v[i][0], rb.v[i][1])) {
				diff(c, path, "%s allocated [%" PRIu64 ", %" PRIu64 ") where %s has a hole",
				     c->b->name, rb.v[i][0], rb.v[i][1], c->a->name);
				break;
			}
	for (size_t i = 0; i < ra.n; i++)
		range_add(&all, ra.v[i][0], ra.v[i][1] - ra.v[i][0]);
	for (size_t i = 0; i < rb.n; i++)
		range_add(&all, rb.v[i][0], rb.v[i][1] - rb.v[i][0]);
	ranges_merge(&all);
	int ha = c->a->ops->open(c->a, path, O_RDONLY | O_NOFOLLOW, 0);
	int hb = c->b->ops->open(c->b, path, O_RDONLY | O_NOFOLLOW, 0);
	if (ha >= 0 && hb >= 0)
		for (size_t i = 0; i < all.n && !stop(c); i++)
			cmp_bytes(c, path, ha, hb, all.v[i][0], all.v[i][1]);
	else
		fail(c, path, "open", ha < 0 ? ha : hb);
	if (ha >= 0)
		c->a->ops->close(c->a, ha);
	if (hb >= 0)
		c->b->ops->close(c->b, hb);
out:
	free(ra.v);
	free(rb.v);
	free(all.v);
}

static void cmp_symlink(struct cmp *c, const char *path)
{
	ssize_t na = c->a->ops->readlink(c->a, path, (char *)c->bufa, XBUF);
	ssize_t nb = c->b->ops->readlink(c->b, path, (char *)c->bufb, XBUF);
	if (na < 0 || nb < 0)
		fail(c, path, "readlink", na < 0 ? na : nb);
	else if (na != nb || memcmp(c->bufa, c->bufb, (size_t)na))
		diff(c, path, "symlink target '%.*s' vs '%.*s'", (int)na, (char *)c->bufa, (int)nb,
		     (char *)c->bufb);
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFCHR: return "chrdev";
	case S_IFBLK: return "blkdev";
	case S_IFSOCK: return "socket";
	default: return "?";
	}
}

static bool time_eq(const struct cmp *c, struct fst_time x, struct fst_time y)
{
	return x.sec == y.sec && (!c->o.nsec || x.nsec == y.nsec);
}

/* Attributes; returns true if the inode was seen before (a hard link whose
 * contents were compared already). */
static bool cmp_attrs(struct cmp *c, const char *path, const struct fst_stat *sa,
		      const struct fst_stat *sb)
{
	if ((sa->mode & 07777) != (sb->mode & 07777))
		diff(c, path, "mode 0%o vs 0%o", sa->mode & 07777, sb->mode & 07777);
	if (sa->nlink != sb->nlink)
		diff(c, path, "nlink %u vs %u", sa->nlink, sb->nlink);
	if (c->o.owner && (sa->uid != sb->uid || sa->gid != sb->gid))
		diff(c, path, "owner %u:%u vs %u:%u", sa->uid, sa->gid, sb->uid, sb->gid);
	if (!S_ISDIR(sa->mode) && sa->size != sb->size)
		diff(c, path, "size %" PRIu64 " vs %" PRIu64, sa->size, sb->size);
	if ((S_ISCHR(sa->mode) || S_ISBLK(sa->mode)) && sa->rdev != sb->rdev)
		diff(c, path, "rdev 0x%" PRIx64 " vs 0x%" PRIx64, sa->rdev, sb->rdev);
	if (c->o.times && (sa->known & FST_MTIME_KNOWN) && !time_eq(c, sa->mtime, sb->mtime))
		diff(c, path, "mtime %" PRId64 ".%09u vs %" PRId64 ".%09u", sa->mtime.sec,
		     sa->mtime.nsec, sb->mtime.sec, sb->mtime.nsec);
	if (c->o.times && (sa->known & FST_ATIME_KNOWN) && !time_eq(c, sa->atime, sb->atime))
		diff(c, path, "atime %" PRId64 " vs %" PRId64, sa->atime.sec, sb->atime.sec);
	uint64_t xb, xa;
	bool seen_a = fsmap_get(&c->ab, sa->ino, &xb), seen_b = fsmap_get(&c->ba, sb->ino, &xa);
	if (seen_a != seen_b || (seen_a && (xb != sb->ino || xa != sa->ino)))
		diff(c, path, "hard links differ (another name of this inode is not one in the other tree)");
	fsmap_put(&c->ab, sa->ino, sb->ino);
	fsmap_put(&c->ba, sb->ino, sa->ino);
	return seen_a && seen_b;
}

static void cmp_dir(struct cmp *c, char *path, size_t plen);

static void cmp_entry(struct cmp *c, char *path, size_t plen)
{
	struct fst_stat sa, sb;
	int ra = c->a->ops->stat(c->a, path, FST_NOFOLLOW, &sa);
	int rb = c->b->ops->stat(c->b, path, FST_NOFOLLOW, &sb);
	if (ra || rb) {
		fail(c, path, "lstat", ra ? ra : rb);
		return;
	}
	if ((sa.mode & S_IFMT) != (sb.mode & S_IFMT)) {
		diff(c, path, "type %s vs %s", type_name(sa.mode), type_name(sb.mode));
		return;
	}
	if (cmp_attrs(c, path, &sa, &sb))
		return;
	cmp_xattrs(c, path);
	if (S_ISREG(sa.mode) && sa.size == sb.size)
		cmp_content(c, path, sa.size);
	else if (S_ISLNK(sa.mode))
		cmp_symlink(c, path);
	else if (S_ISDIR(sa.mode))
		cmp_dir(c, path, plen);
}

static int readdir_sorted(struct fs_target *t, const char *path, struct fst_dirlist *dl,
			  uint64_t *dotdot)
{
	int rc = t->ops->readdir(t, path, dl);
	if (rc)
		return rc;
	size_t o = 0;
	*dotdot = 0;
	for (size_t i = 0; i < dl->n; i++) {
		if (!strcmp(dl->v[i].name, ".."))
			*dotdot = dl->v[i].ino;
		if (strcmp(dl->v[i].name, ".") && strcmp(dl->v[i].name, ".."))
			dl->v[o++] = dl->v[i];
	}
	dl->n = o;
	fst_dirlist_sort(dl);
	return 0;
}

static void cmp_dir(struct cmp *c, char *path, size_t plen)
{
	struct fst_dirlist la = { 0 }, lb = { 0 };
	uint64_t dda, ddb, x;
	int ra = readdir_sorted(c->a, path, &la, &dda);
	int rb = readdir_sorted(c->b, path, &lb, &ddb);
	if (ra || rb) {
		fail(c, path, "readdir", ra ? ra : rb);
		goto out;
	}
	/* ".." names the parent (compared already): its identity must match */
	if (plen > 1 && (!fsmap_get(&c->ab, dda, &x) || x != ddb))
		diff(c, path, "'..' is not the parent directory");
	size_t i = 0, j = 0;
	while ((i < la.n || j < lb.n) && !stop(c)) {
		int d = i == la.n ? 1 : j == lb.n ? -1 : strcmp(la.v[i].name, lb.v[j].name);
		if (d) {
			const struct fst_dirent *e = d < 0 ? &la.v[i++] : &lb.v[j++];
			diff(c, path, "entry '%s' only in %s", e->name, d < 0 ? c->a->name : c->b->name);
			continue;
		}
		size_t nl = strlen(la.v[i].name);
		if (plen + 1 + nl + 1 > 8192) {
			diff(c, path, "path too long");
			break;
		}
		size_t np = plen;
		if (plen > 1)
			path[np++] = '/';
		memcpy(path + np, la.v[i].name, nl + 1);
		unsigned char ta = la.v[i].type, tb = lb.v[j].type;
		if (ta != DT_UNKNOWN && tb != DT_UNKNOWN && ta != tb)
			diff(c, path, "d_type %u vs %u", ta, tb);
		cmp_entry(c, path, np + nl);
		path[plen] = 0;
		i++;
		j++;
	}
out:
	fst_dirlist_free(&la);
	fst_dirlist_free(&lb);
}

int fst_compare_tree(struct fs_target *a, struct fs_target *b, const struct fst_cmp_opts *o,
		     char *msg, size_t msglen)
{
	struct cmp c = { .a = a, .b = b, .o = *o, .msg = msg, .msglen = msglen };
	if (!c.o.max_diffs)
		c.o.max_diffs = 20;
	if (msglen)
		msg[0] = 0;
	c.bufa = fst_xcalloc(1, IOBUF);
	c.bufb = fst_xcalloc(1, IOBUF);
	char *path = fst_xcalloc(1, 8192);
	strcpy(path, "/");
	cmp_entry(&c, path, 1);
	free(path);
	free(c.bufa);
	free(c.bufb);
	fsmap_free(&c.ab);
	fsmap_free(&c.ba);
	if (c.ndiffs > c.o.max_diffs && c.used + 40 < msglen)
		snprintf(msg + c.used, msglen - c.used, "... %u differences in all\n", c.ndiffs);
	return c.err ? c.err : c.ndiffs ? 1 : 0;
}

/* ---- copy ---- */

struct copy {
	struct fs_target *src, *dst;
	struct fsmap seen; /* src inode -> index in paths (first name copied) */
	char **paths;
	size_t npaths;
	uint8_t *buf;
	unsigned flags;
};

static int copy_xattrs(struct copy *c, const char *path)
{
	struct fst_dirlist names = { 0 };
	char *list = fst_xcalloc(1, XBUF);
	int rc = xattr_names(c->src, path, list, &names);
	for (size_t i = 0; !rc && i < names.n; i++) {
		ssize_t n = c->src->ops->getxattr(c->src, path, FST_NOFOLLOW, names.v[i].name, c->buf, XBUF);
		rc = n < 0 ? (int)n
			   : c->dst->ops->setxattr(c->dst, path, FST_NOFOLLOW, names.v[i].name, c->buf,
						   (size_t)n, 0);
	}
	fst_dirlist_free(&names);
	free(list);
	return rc;
}

static int copy_data(struct copy *c, const char *path, uint64_t size, uint32_t mode)
{
	struct ranges r = { 0 };
	int rc = ranges_get(c->src, path, size, &r);
	int hs = rc ? rc : c->src->ops->open(c->src, path, O_RDONLY | O_NOFOLLOW, 0);
	int hd = hs < 0 ? hs : c->dst->ops->open(c->dst, path, O_WRONLY | O_CREAT | O_EXCL, mode);
	rc = hd < 0 ? hd : 0;
	for (size_t i = 0; !rc && i < r.n; i++)
		for (uint64_t off = r.v[i][0]; !rc && off < r.v[i][1];) {
			size_t n = r.v[i][1] - off > IOBUF ? IOBUF : (size_t)(r.v[i][1] - off);
			ssize_t got = c->src->ops->pread(c->src, hs, c->buf, n, off);
			ssize_t put = got <= 0 ? got : c->dst->ops->pwrite(c->dst, hd, c->buf, (size_t)got, off);
			rc = got <= 0 ? (got ? (int)got : -EIO) : put != got ? (put < 0 ? (int)put : -EIO) : 0;
			off += n;
		}
	if (!rc)
		rc = c->dst->ops->ftruncate(c->dst, hd, size);
	if (hs >= 0)
		c->src->ops->close(c->src, hs);
	if (hd >= 0)
		c->dst->ops->close(c->dst, hd);
	free(r.v);
	return rc;
}

static int copy_dir(struct copy *c, char *path, size_t plen);

static int copy_entry(struct copy *c, char *path, size_t plen)
{
	struct fst_stat st;
	int rc = c->src->ops->stat(c->src, path, FST_NOFOLLOW, &st);
	if (rc)
		return rc;
	uint64_t first;
	if (!S_ISDIR(st.mode) && fsmap_get(&c->seen, st.ino, &first))
		return c->dst->ops->link(c->dst, c->paths[first], path);
	uint32_t perm = st.mode & 07777;
	if (S_ISDIR(st.mode))
		rc = plen == 1 ? 0 : c->dst->ops->mkdir(c->dst, path, perm);
	else if (S_ISREG(st.mode))
		rc = copy_data(c, path, st.size, perm);
	else if (S_ISLNK(st.mode)) {
		ssize_t n = c->src->ops->readlink(c->src, path, (char *)c->buf, XBUF - 1);
		if (n < 0)
			return (int)n;
		c->buf[n] = 0;
		rc = c->dst->ops->symlink(c->dst, (char *)c->buf, path);
	} else
		rc = c->dst->ops->mknod(c->dst, path, st.mode, st.rdev);
	if (!rc)
		rc = c->dst->ops->chown(c->dst, path, FST_NOFOLLOW, st.uid, st.gid);
	if (!rc && !S_ISLNK(st.mode))
		rc = c->dst->ops->chmod(c->dst, path, perm);
	if (!rc)
		rc = copy_xattrs(c, path);
	if (rc)
		return rc;
	if (!S_ISDIR(st.mode)) {
		c->paths = fst_xrealloc(c->paths, (c->npaths + 1) * sizeof *c->paths);
		c->paths[c->npaths] = fst_xstrdup(path);
		fsmap_put(&c->seen, st.ino, c->npaths++);
	} else {
		rc = copy_dir(c, path, plen);
	}
	/* times last: after the contents and a directory's entries are made */
	if (!rc && (c->flags & FST_COPY_TIMES))
		rc = c->dst->ops->utimens(c->dst, path, FST_NOFOLLOW,
					  (struct fst_time[2]){ st.atime, st.mtime });
	return rc;
}

static int copy_dir(struct copy *c, char *path, size_t plen)
{
	struct fst_dirlist dl = { 0 };
	uint64_t dotdot;
	int rc = readdir_sorted(c->src, path, &dl, &dotdot);
	for (size_t i = 0; !rc && i < dl.n; i++) {
		size_t nl = strlen(dl.v[i].name), np = plen;
		if (plen + 1 + nl + 1 > 8192)
			return -ENAMETOOLONG;
		if (plen > 1)
			path[np++] = '/';
		memcpy(path + np, dl.v[i].name, nl + 1);
		rc = copy_entry(c, path, np + nl);
		path[plen] = 0;
	}
	fst_dirlist_free(&dl);
	return rc;
}

int fst_copy_tree(struct fs_target *src, struct fs_target *dst, unsigned flags)
{
	struct copy c = { .src = src, .dst = dst, .buf = fst_xcalloc(1, IOBUF), .flags = flags };
	char *path = fst_xcalloc(1, 8192);
	strcpy(path, "/");
	int rc = copy_entry(&c, path, 1);
	for (size_t i = 0; i < c.npaths; i++)
		free(c.paths[i]);
	free(c.paths);
	free(path);
	free(c.buf);
	fsmap_free(&c.seen);
	return rc;
}
