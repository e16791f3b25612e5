/* Target support shared by every target (fstarget.h): allocation helpers,
 * directory lists, errno names and the fault-injecting filter target. */
#include "fstarget.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *oom(void *p)
{
	if (!p) {
		fprintf(stderr, "fstarget: out of memory\n");
		abort();
	}
	return p;
}

void *fst_xcalloc(size_t n, size_t size)
{
	return oom(calloc(n ? n : 1, size ? size : 1));
}

void *fst_xrealloc(void *p, size_t size)
{
	return oom(realloc(p, size ? size : 1));
}

char *fst_xstrdup(const char *s)
{
	return oom(strdup(s));
}

char *fst_xstrndup(const char *s, size_t n)
{
	return oom(strndup(s, n));
}

void *fst_xmemdup(const void *p, size_t n)
{
	void *q = oom(malloc(n ? n : 1));
	if (n)
		memcpy(q, p, n);
	return q;
}

int fst_dirlist_add(struct fst_dirlist *dl, uint64_t ino, unsigned char type, const char *name)
{
	if (strlen(name) > 255)
		return -ENAMETOOLONG;
	if (dl->n == dl->cap) {
		dl->cap = dl->cap ? 2 * dl->cap : 16;
		dl->v = fst_xrealloc(dl->v, dl->cap * sizeof *dl->v);
	}
	struct fst_dirent *de = &dl->v[dl->n++];
	de->ino = ino;
	de->type = type;
	strcpy(de->name, name);
	return 0;
}

static int dirent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fst_dirent *)a)->name, ((const struct fst_dirent *)b)->name);
}

void fst_dirlist_sort(struct fst_dirlist *dl)
{
	if (dl->n)
		qsort(dl->v, dl->n, sizeof *dl->v, dirent_cmp);
}

void fst_dirlist_free(struct fst_dirlist *dl)
{
	free(dl->v);
	*dl = (struct fst_dirlist){ 0 };
}

void fst_destroy(struct fs_target *t)
{
	if (t)
		t->ops->destroy(t);
}

const char *fst_errname(int64_t rc)
{
	if (rc >= 0)
		return "OK";
	const char *s = rc < -4095 ? NULL : strerrorname_np((int)-rc);
	return s ? s : "E?";
}

/* ---- fault-injecting filter ---- */

struct filter {
	struct fs_target t;
	struct fs_target *in;
	struct fst_ops ops; /* filter_ops, without the optional calls inner lacks */
	fst_filter_hook hook;
	void *ctx;
};

static struct filter *flt(struct fs_target *t)
{
	return t->priv;
}

#define FWD(opname, path, call)                                          \
	do {                                                             \
		struct filter *f_ = flt(t);                              \
		struct fs_target *in = f_->in;                           \
		int64_t rc_ = (call);                                    \
		return f_->hook(f_->ctx, opname, path, rc_);             \
	} while (0)

static int f_mkdir(struct fs_target *t, const char *p, uint32_t mode)
{
	FWD("mkdir", p, in->ops->mkdir(in, p, mode));
}
static int f_mknod(struct fs_target *t, const char *p, uint32_t mode, uint64_t rdev)
{
	FWD("mknod", p, in->ops->mknod(in, p, mode, rdev));
}
static int f_symlink(struct fs_target *t, const char *target, const char *p)
{
	FWD("symlink", p, in->ops->symlink(in, target, p));
}
static int f_link(struct fs_target *t, const char *a, const char *b)
{
	FWD("link", a, in->ops->link(in, a, b));
}
static int f_unlink(struct fs_target *t, const char *p)
{
	FWD("unlink", p, in->ops->unlink(in, p));
}
static int f_rmdir(struct fs_target *t, const char *p)
{
	FWD("rmdir", p, in->ops->rmdir(in, p));
}
static int f_rename(struct fs_target *t, const char *a, const char *b, unsigned flags)
{
	FWD("rename", a, in->ops->rename(in, a, b, flags));
}
static int f_truncate(struct fs_target *t, const char *p, uint64_t size)
{
	FWD("truncate", p, in->ops->truncate(in, p, size));
}
static int f_chmod(struct fs_target *t, const char *p, uint32_t mode)
{
	FWD("chmod", p, in->ops->chmod(in, p, mode));
}
static int f_chown(struct fs_target *t, const char *p, unsigned fl, uint32_t uid, uint32_t gid)
{
	FWD("chown", p, in->ops->chown(in, p, fl, uid, gid));
}
static int f_utimens(struct fs_target *t, const char *p, unsigned fl, const struct fst_time ts[2])
{
	FWD("utimens", p, in->ops->utimens(in, p, fl, ts));
}
static int f_stat(struct fs_target *t, const char *p, unsigned fl, struct fst_stat *st)
{
	FWD("stat", p, in->ops->stat(in, p, fl, st));
}
static ssize_t f_readlink(struct fs_target *t, const char *p, char *buf, size_t size)
{
	FWD("readlink", p, in->ops->readlink(in, p, buf, size));
}
static int f_readdir(struct fs_target *t, const char *p, struct fst_dirlist *out)
{
	FWD("readdir", p, in->ops->readdir(in, p, out));
}
static int f_setxattr(struct fs_target *t, const char *p, unsigned fl, const char *name,
		      const void *v, size_t size, unsigned xflags)
{
	FWD("setxattr", p, in->ops->setxattr(in, p, fl, name, v, size, xflags));
}
static int f_removexattr(struct fs_target *t, const char *p, unsigned fl, const char *name)
{
	FWD("removexattr", p, in->ops->removexattr(in, p, fl, name));
}
static ssize_t f_getxattr(struct fs_target *t, const char *p, unsigned fl, const char *name,
			  void *buf, size_t size)
{
	FWD("getxattr", p, in->ops->getxattr(in, p, fl, name, buf, size));
}
static ssize_t f_listxattr(struct fs_target *t, const char *p, unsigned fl, char *buf, size_t size)
{
	FWD("listxattr", p, in->ops->listxattr(in, p, fl, buf, size));
}
static int f_open(struct fs_target *t, const char *p, int oflags, uint32_t mode)
{
	FWD("open", p, in->ops->open(in, p, oflags, mode));
}
static int f_close(struct fs_target *t, int h)
{
	FWD("close", NULL, in->ops->close(in, h));
}
static ssize_t f_read(struct fs_target *t, int h, void *buf, size_t len)
{
	FWD("read", NULL, in->ops->read(in, h, buf, len));
}
static ssize_t f_write(struct fs_target *t, int h, const void *buf, size_t len)
{
	FWD("write", NULL, in->ops->write(in, h, buf, len));
}
static ssize_t f_pread(struct fs_target *t, int h, void *buf, size_t len, uint64_t off)
{
	FWD("pread", NULL, in->ops->pread(in, h, buf, len, off));
}
static ssize_t f_pwrite(struct fs_target *t, int h, const void *buf, size_t len, uint64_t off)
{
	FWD("pwrite", NULL, in->ops->pwrite(in, h, buf, len, off));
}
static int f_ftruncate(struct fs_target *t, int h, uint64_t size)
{
	FWD("ftruncate", NULL, in->ops->ftruncate(in, h, size));
}
static int f_fsync(struct fs_target *t, int h, int datasync)
{
	FWD("fsync", NULL, in->ops->fsync(in, h, datasync));
}
static int f_fstat(struct fs_target *t, int h, struct fst_stat *st)
{
	FWD("fstat", NULL, in->ops->fstat(in, h, st));
}
static int f_data_ranges(struct fs_target *t, const char *p, fst_range_cb cb, void *ctx)
{
	FWD("data_ranges", p, in->ops->data_ranges(in, p, cb, ctx));
}
static int f_checkpoint(struct fs_target *t, char *msg, size_t msglen)
{
	FWD("checkpoint", NULL, in->ops->checkpoint ? in->ops->checkpoint(in, msg, msglen) : 0);
}
static void f_destroy(struct fs_target *t)
{
	fst_destroy(flt(t)->in);
	free(t->priv);
}

static const struct fst_ops filter_ops = {
	.mkdir = f_mkdir, .mknod = f_mknod, .symlink = f_symlink, .link = f_link,
	.unlink = f_unlink, .rmdir = f_rmdir, .rename = f_rename, .truncate = f_truncate,
	.chmod = f_chmod, .chown = f_chown, .utimens = f_utimens, .stat = f_stat,
	.readlink = f_readlink, .readdir = f_readdir, .setxattr = f_setxattr,
	.removexattr = f_removexattr, .getxattr = f_getxattr, .listxattr = f_listxattr,
	.open = f_open, .close = f_close, .read = f_read, .write = f_write, .pread = f_pread,
	.pwrite = f_pwrite, .ftruncate = f_ftruncate, .fsync = f_fsync, .fstat = f_fstat,
	.data_ranges = f_data_ranges, .checkpoint = f_checkpoint, .destroy = f_destroy,
};
int fst_filter_new(struct fs_target *inner, fst_filter_hook hook, void *ctx,
		   struct fs_target **out)
{
	struct filter *f = fst_xcalloc(1, sizeof *f);
	f->in = inner;
	f->hook = hook;
	f->ctx = ctx;
	f->ops = filter_ops;
	if (!inner->ops->data_ranges)
		f->ops.data_ranges = NULL;
	f->t = (struct fs_target){ .ops = &f->ops, .name = "filter", .caps = inner->caps, .priv = f };
	*out = &f->t;
	return 0;
}
