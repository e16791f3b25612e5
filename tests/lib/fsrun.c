/* The runner: one operation on the model and on the target, results
 * compared (fsrun.h).
 *
 * Handles live in slots so that a script names them independently of the
 * target's own numbers. An operation on a closed slot is skipped on both
 * sides (a minimized script may have lost the open). Opening a fifo or a
 * device node is skipped too: it would block or reach a host device. */
#include "fsrun.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SKIPPED INT64_MIN

struct slot {
	bool open;
	int mh, th; /* model and target handles */
	int flags;
	char *path;
};

struct fsrun {
	struct fs_target *t;
	struct fsmodel *m;
	struct fs_target *mt;
	struct fsrun_cfg cfg;
	struct slot slots[FSRUN_SLOTS];
	struct fsmap m2t, t2m; /* inode identities: model <-> target */
	char msg[8192];
	int64_t last;
	uint8_t *wbuf;
	size_t wcap;
};

struct res {
	int64_t rc;
	struct fst_stat st;
	struct fst_dirlist dl;
	uint8_t *buf;
	size_t cap;
};

static uint8_t *res_buf(struct res *s, size_t len)
{
	if (s->cap < len || !s->buf) {
		free(s->buf);
		s->cap = len ? len : 1;
		s->buf = fst_xcalloc(1, s->cap);
	}
	return s->buf;
}

static void res_free(struct res *s)
{
	free(s->buf);
	fst_dirlist_free(&s->dl);
}

/* Run op on target t whose handle for op->slot is h. */
static void exec_op(struct fs_target *t, int h, const struct fsop *op, const uint8_t *data,
		    struct res *s)
{
	const struct fst_ops *o = t->ops;
	unsigned nf = op->nofollow ? FST_NOFOLLOW : 0;
	size_t len = (size_t)op->len;
	/* a hand-written or minimized script may lack a string: "" then */
	const char *p = op->path ? op->path : "", *p2 = op->path2 ? op->path2 : "";
	const char *nm = op->name ? op->name : "";
	switch (op->kind) {
	case FSOP_MKDIR: s->rc = o->mkdir(t, p, op->mode); break;
	case FSOP_MKNOD: s->rc = o->mknod(t, p, op->mode, op->rdev); break;
	case FSOP_SYMLINK: s->rc = o->symlink(t, p2, p); break;
	case FSOP_LINK: s->rc = o->link(t, p, p2); break;
	case FSOP_UNLINK: s->rc = o->unlink(t, p); break;
	case FSOP_RMDIR: s->rc = o->rmdir(t, p); break;
	case FSOP_RENAME: s->rc = o->rename(t, p, p2, op->flags); break;
	case FSOP_TRUNCATE: s->rc = o->truncate(t, p, op->off); break;
	case FSOP_CHMOD: s->rc = o->chmod(t, p, op->mode); break;
	case FSOP_CHOWN: s->rc = o->chown(t, p, nf, op->uid, op->gid); break;
	case FSOP_UTIMENS: s->rc = o->utimens(t, p, nf, op->ts); break;
	case FSOP_SETXATTR: s->rc = o->setxattr(t, p, nf, nm, data, len, op->xflags); break;
	case FSOP_REMOVEXATTR: s->rc = o->removexattr(t, p, nf, nm); break;
	case FSOP_GETXATTR: s->rc = o->getxattr(t, p, nf, nm, res_buf(s, len), len); break;
	case FSOP_LISTXATTR: s->rc = o->listxattr(t, p, nf, (char *)res_buf(s, len), len); break;
	case FSOP_STAT: s->rc = o->stat(t, p, nf, &s->st); break;
	case FSOP_READDIR: s->rc = o->readdir(t, p, &s->dl); break;
	case FSOP_READLINK: s->rc = o->readlink(t, p, (char *)res_buf(s, 4096), 4096); break;
	case FSOP_OPEN: s->rc = o->open(t, p, (int)op->flags, op->mode); break;
	case FSOP_CLOSE: s->rc = o->close(t, h); break;
	case FSOP_READ: s->rc = o->read(t, h, res_buf(s, len), len); break;
	case FSOP_WRITE: s->rc = o->write(t, h, data, len); break;
	case FSOP_PREAD: s->rc = o->pread(t, h, res_buf(s, len), len, op->off); break;
	case FSOP_PWRITE: s->rc = o->pwrite(t, h, data, len, op->off); break;
	case FSOP_FTRUNCATE: s->rc = o->ftruncate(t, h, op->off); break;
	case FSOP_FSYNC: s->rc = o->fsync(t, h, (int)(op->flags & 1)); break;
	case FSOP_FSTAT: s->rc = o->fstat(t, h, &s->st); break;
	case FSOP_CHECKPOINT:
	case FSOP_NKINDS: s->rc = 0; break;
	}
}

static int mismatch(struct fsrun *r, const struct fsop *op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int mismatch(struct fsrun *r, const struct fsop *op, const char *fmt, ...)
{
	FILE *f = fmemopen(r->msg, sizeof r->msg, "w");
	if (!f)
		return 1;
	if (op)
		fsop_format(op, f);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	r->msg[sizeof r->msg - 1] = 0;
	return 1;
}

/* The model's inode mi and the target's ti must stay one pair. A target
 * number seen before for a dead model inode may be reused. */
static int identity(struct fsrun *r, const struct fsop *op, const char *what, uint64_t mi,
		    uint64_t ti)
{
	uint64_t x;
	if (fsmap_get(&r->m2t, mi, &x) && x != ti)
		return mismatch(r, op, "%s: target inode %" PRIu64 " where it was %" PRIu64 " before\n",
				what, ti, x);
	if (fsmap_get(&r->t2m, ti, &x) && x != mi && fsm_ino_alive(r->m, x))
		return mismatch(r, op, "%s: target inode %" PRIu64 " stands for two model inodes\n",
				what, ti);
	fsmap_put(&r->m2t, mi, ti);
	fsmap_put(&r->t2m, ti, mi);
	return 0;
}

static int cmp_stat(struct fsrun *r, const struct fsop *op, const struct fst_stat *a,
		    const struct fst_stat *b)
{
	bool nsec = r->t->caps & FST_CAP_NSEC;
	if (a->mode != b->mode)
		return mismatch(r, op, "mode: model 0%o, target 0%o\n", a->mode, b->mode);
	if (a->nlink != b->nlink)
		return mismatch(r, op, "nlink: model %u, target %u\n", a->nlink, b->nlink);
	if (r->cfg.owner && (a->uid != b->uid || a->gid != b->gid))
		return mismatch(r, op, "owner: model %u:%u, target %u:%u\n", a->uid, a->gid, b->uid, b->gid);
	if (!S_ISDIR(a->mode) && a->size != b->size)
		return mismatch(r, op, "size: model %" PRIu64 ", target %" PRIu64 "\n", a->size, b->size);
	if ((S_ISCHR(a->mode) || S_ISBLK(a->mode)) && a->rdev != b->rdev)
		return mismatch(r, op, "rdev differs\n");
	for (int i = 0; i < 2; i++) {
		unsigned bit = i ? FST_MTIME_KNOWN : FST_ATIME_KNOWN;
		const struct fst_time *x = i ? &a->mtime : &a->atime, *y = i ? &b->mtime : &b->atime;
		if ((a->known & bit) && (x->sec != y->sec || (nsec && x->nsec != y->nsec)))
			return mismatch(r, op, "%s: model %" PRId64 ".%09u, target %" PRId64 ".%09u\n",
					i ? "mtime" : "atime", x->sec, x->nsec, y->sec, y->nsec);
	}
	return identity(r, op, "stat", a->ino, b->ino);
}

static void sorted_names(const uint8_t *buf, int64_t n, struct fst_dirlist *out)
{
	for (int64_t i = 0; i < n; i += (int64_t)strlen((const char *)buf + i) + 1)
		fst_dirlist_add(out, 0, 0, (const char *)buf + i);
	fst_dirlist_sort(out);
}

static int cmp_names(struct fsrun *r, const struct fsop *op, struct res *a, struct res *b)
{
	struct fst_dirlist la = { 0 }, lb = { 0 };
	sorted_names(a->buf, a->rc, &la);
	sorted_names(b->buf, b->rc, &lb);
	int rc = 0;
	for (size_t i = 0; !rc && i < la.n && i < lb.n; i++)
		if (strcmp(la.v[i].name, lb.v[i].name))
			rc = mismatch(r, op, "xattr names differ: model %s, target %s\n", la.v[i].name,
				      lb.v[i].name);
	if (!rc && la.n != lb.n)
		rc = mismatch(r, op, "xattr count: model %zu, target %zu\n", la.n, lb.n);
	fst_dirlist_free(&la);
	fst_dirlist_free(&lb);
	return rc;
}

static int cmp_readdir(struct fsrun *r, const struct fsop *op, struct res *a, struct res *b)
{
	fst_dirlist_sort(&a->dl);
	fst_dirlist_sort(&b->dl);
	bool root = false;
	for (size_t i = 0; i + 1 < a->dl.n; i++)
		if (!strcmp(a->dl.v[i].name, ".") && !strcmp(a->dl.v[i + 1].name, ".."))
			root = a->dl.v[i].ino == a->dl.v[i + 1].ino;
	for (size_t i = 0; i < a->dl.n || i < b->dl.n; i++) {
		int d = i >= a->dl.n ? 1 : i >= b->dl.n ? -1 : strcmp(a->dl.v[i].name, b->dl.v[i].name);
		if (d)
			return mismatch(r, op, "entry '%s' only in the %s\n",
					d < 0 ? a->dl.v[i].name : b->dl.v[i].name, d < 0 ? "model" : "target");
		const struct fst_dirent *x = &a->dl.v[i], *y = &b->dl.v[i];
		if (root && !strcmp(x->name, ".."))
			continue; /* the host root's parent is outside the tree */
		if (y->type != DT_UNKNOWN && x->type != y->type)
			return mismatch(r, op, "'%s': d_type model %u, target %u\n", x->name, x->type, y->type);
		if (identity(r, op, x->name, x->ino, y->ino))
			return 1;
	}
	return 0;
}

static int compare(struct fsrun *r, const struct fsop *op, struct res *a, struct res *b)
{
	if (op->kind == FSOP_OPEN ? (a->rc < 0 || b->rc < 0) && a->rc != b->rc : a->rc != b->rc)
		return mismatch(r, op, "model -> %" PRId64 " (%s), target -> %" PRId64 " (%s)\n", a->rc,
				fst_errname(a->rc), b->rc, fst_errname(b->rc));
	if (a->rc < 0)
		return 0;
	switch (op->kind) {
	case FSOP_READ:
	case FSOP_PREAD:
	case FSOP_READLINK:
	case FSOP_GETXATTR:
		if (op->kind == FSOP_GETXATTR && !op->len)
			return 0;
		if (memcmp(a->buf, b->buf, (size_t)a->rc)) {
			size_t k = 0;
			while (a->buf[k] == b->buf[k])
				k++;
			return mismatch(r, op, "bytes differ at %zu: model 0x%02x, target 0x%02x\n", k,
					a->buf[k], b->buf[k]);
		}
		return 0;
	case FSOP_LISTXATTR:
		return op->len ? cmp_names(r, op, a, b) : 0;
	case FSOP_STAT:
	case FSOP_FSTAT:
		return cmp_stat(r, op, &a->st, &b->st);
	case FSOP_READDIR:
		return cmp_readdir(r, op, a, b);
	default:
		return 0;
	}
}

static void slot_close(struct fsrun *r, int i)
{
	struct slot *s = &r->slots[i];
	if (!s->open)
		return;
	r->mt->ops->close(r->mt, s->mh);
	r->t->ops->close(r->t, s->th);
	free(s->path);
	*s = (struct slot){ 0 };
}

static bool slot_op(enum fsop_kind k)
{
	return k >= FSOP_CLOSE && k <= FSOP_FSTAT;
}

/* Opening what resolves to a fifo or a device node is not done. */
static bool open_skipped(struct fsrun *r, const struct fsop *op)
{
	struct fsm_info in;
	if (fsm_query(r->m, op->path, !(op->flags & O_NOFOLLOW), &in))
		return false;
	return !S_ISREG(in.mode) && !S_ISDIR(in.mode) && !S_ISLNK(in.mode);
}

int fsrun_apply(struct fsrun *r, const struct fsop *op)
{
	r->last = SKIPPED;
	r->msg[0] = 0;
	if (op->kind == FSOP_CHECKPOINT) {
		int rc = fsrun_checkpoint(r);
		r->last = 0;
		return rc;
	}
	if (op->slot < 0 || op->slot >= FSRUN_SLOTS)
		return 0;
	struct slot *s = &r->slots[op->slot];
	if (slot_op(op->kind) && !s->open)
		return 0;
	if (op->kind == FSOP_OPEN) {
		if (open_skipped(r, op))
			return 0;
		slot_close(r, op->slot);
	}
	const uint8_t *data = NULL;
	if (op->kind == FSOP_WRITE || op->kind == FSOP_PWRITE || op->kind == FSOP_SETXATTR) {
		if (r->wcap < op->len || !r->wbuf) {
			free(r->wbuf);
			r->wcap = op->len ? (size_t)op->len : 1;
			r->wbuf = fst_xcalloc(1, r->wcap);
		}
		fsop_fill(op->seed, r->wbuf, (size_t)op->len);
		data = r->wbuf;
	}
	struct res a = { 0 }, b = { 0 };
	exec_op(r->mt, s->mh, op, data, &a);
	exec_op(r->t, s->th, op, data, &b);
	r->last = a.rc;
	if (r->cfg.log) {
		fsop_format(op, r->cfg.log);
		fprintf(r->cfg.log, "    -> model %" PRId64 " %s, %s %" PRId64 " %s\n", a.rc,
			fst_errname(a.rc), r->t->name, b.rc, fst_errname(b.rc));
	}
	int rc = compare(r, op, &a, &b);
	if (op->kind == FSOP_OPEN) {
		if (a.rc >= 0 && b.rc >= 0)
			*s = (struct slot){ .open = true, .mh = (int)a.rc, .th = (int)b.rc,
					    .flags = (int)op->flags, .path = fst_xstrdup(op->path) };
		else if (a.rc >= 0)
			r->mt->ops->close(r->mt, (int)a.rc);
		else if (b.rc >= 0)
			r->t->ops->close(r->t, (int)b.rc);
	} else if (op->kind == FSOP_CLOSE) {
		free(s->path);
		*s = (struct slot){ 0 };
	}
	res_free(&a);
	res_free(&b);
	return rc;
}

static struct fst_cmp_opts cmp_opts(const struct fsrun *r, const struct fs_target *other)
{
	return (struct fst_cmp_opts){ .owner = r->cfg.owner, .times = true,
				      .nsec = other->caps & FST_CAP_NSEC, .holes = r->cfg.holes };
}

static int tree_compare(struct fsrun *r, struct fs_target *other, const char *what)
{
	struct fst_cmp_opts o = cmp_opts(r, other);
	char *diffs = fst_xcalloc(1, 6000);
	int rc = fst_compare_tree(r->mt, other, &o, diffs, 6000);
	if (rc)
		mismatch(r, NULL, "%s: the trees differ (model vs %s):\n%s", what, other->name, diffs);
	free(diffs);
	return rc ? 1 : 0;
}

int fsrun_checkpoint(struct fsrun *r)
{
	for (int i = 0; i < FSRUN_SLOTS; i++)
		slot_close(r, i);
	if (r->t->ops->checkpoint) {
		char why[2048] = "";
		int rc = r->t->ops->checkpoint(r->t, why, sizeof why);
		if (rc)
			return mismatch(r, NULL, "checkpoint: %s (%s)\n", fst_errname(rc), why);
	}
	return tree_compare(r, r->t, "checkpoint");
}

int fsrun_compare_with(struct fsrun *r, struct fs_target *other)
{
	return tree_compare(r, other, "compare");
}

int fsrun_new(struct fs_target *t, const struct fsrun_cfg *cfg, struct fsrun **out)
{
	struct fst_stat st;
	int rc = t->ops->stat(t, "/", 0, &st);
	if (rc)
		return rc;
	struct fsrun *r = fst_xcalloc(1, sizeof *r);
	r->t = t;
	r->cfg = *cfg;
	r->m = fsm_new(st.mode, (uint32_t)geteuid(), (uint32_t)getegid());
	r->mt = fsm_target(r->m);
	rc = fst_copy_tree(t, r->mt, 0); /* times unknown: the copy reads the files */
	if (rc) {
		fsrun_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void fsrun_free(struct fsrun *r)
{
	if (!r)
		return;
	for (int i = 0; i < FSRUN_SLOTS; i++)
		slot_close(r, i);
	fst_destroy(r->mt);
	fsmap_free(&r->m2t);
	fsmap_free(&r->t2m);
	free(r->wbuf);
	free(r);
}

const char *fsrun_msg(const struct fsrun *r)
{
	return r->msg;
}

struct fsmodel *fsrun_model(struct fsrun *r)
{
	return r->m;
}

int64_t fsrun_last_result(const struct fsrun *r)
{
	return r->last;
}

bool fsrun_slot_open(const struct fsrun *r, int slot)
{
	return slot >= 0 && slot < FSRUN_SLOTS && r->slots[slot].open;
}

const char *fsrun_slot_path(const struct fsrun *r, int slot)
{
	return fsrun_slot_open(r, slot) ? r->slots[slot].path : NULL;
}

int fsrun_slot_handle(const struct fsrun *r, int slot)
{
	return fsrun_slot_open(r, slot) ? r->slots[slot].mh : -1;
}

int fsrun_slot_flags(const struct fsrun *r, int slot)
{
	return fsrun_slot_open(r, slot) ? r->slots[slot].flags : 0;
}
