/* crashtest --workload concurrent (docs/crashtest-workloads.md): three
 * threads at once, recorded together, checked like any workload (job.c).
 *
 * Each thread works on its own files: a private directory /tN (create,
 * append or overwrite, truncate, rename inside it, unlink, fsync,
 * fdatasync, fsync of the directory) and its own names in a shared
 * directory /S (create, rename, fsync of /S). The model (model.c) is one
 * sequence: an operation's mark and model event are placed together under
 * a mutex, so the log's marks are in the model's order; the operation
 * itself runs outside it, concurrently with the other threads' operations
 * on other objects, which commute with it. What does not commute is held
 * exclusive by a rwlock: sync (it persists every operation started before
 * it, which must then have been done) and the operations on the shared
 * directory (an fsync of /S persists every entry the model has there).
 * Every thread's fsync guarantees are checked in every crash state.
 * The interleaving depends on timing: a dry run cannot make the same
 * events, so kept states of this workload cannot be replayed.
 */
#include "crash.h"

#include "dev/dev.h"
#include "nostall/nostall.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 3
#define NOPS 36 /* per thread */
#define NFILES 4

struct cc {
	struct crash_wl_ctx *w;
	pthread_mutex_t mu;      /* marks + model events, w->nops, w->err */
	pthread_rwlock_t order;  /* exclusive: sync, the shared directory */
};

struct th {
	struct cc *c;
	int id;
	uint64_t rng;
};

static void fail(struct cc *c, int rc, const char *what, const char *path)
{
	pthread_mutex_lock(&c->mu);
	if (!c->w->err) {
		c->w->err = rc < 0 ? rc : -EIO;
		snprintf(c->w->errmsg, sizeof c->w->errmsg, "%s %s: %s", what, path ? path : "", nostall_errmsg(rc));
	}
	pthread_mutex_unlock(&c->mu);
}

/* The mark "o<N>" and the model event, together; *op = N. */
static int start(struct cc *c, struct crash_ev *ev, uint32_t *obj, size_t *op)
{
	pthread_mutex_lock(&c->mu);
	int rc = c->w->err;
	char name[32];
	if (!rc) {
		snprintf(name, sizeof name, "o%zu", c->w->nops);
		rc = dev_mark(c->w->dev, name);
	}
	if (!rc)
		rc = crash_model_add(c->w->m, ev, obj);
	if (!rc)
		*op = c->w->nops++;
	else if (!c->w->err) {
		c->w->err = rc;
		snprintf(c->w->errmsg, sizeof c->w->errmsg, "concurrent: %s", nostall_errmsg(rc));
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static void done(struct cc *c, size_t op)
{
	char name[32];
	snprintf(name, sizeof name, "d%zu", op);
	pthread_mutex_lock(&c->mu);
	int rc = dev_mark(c->w->dev, name);
	pthread_mutex_unlock(&c->mu);
	if (rc)
		fail(c, rc, "mark", name);
}

static uint32_t lookup(struct cc *c, const char *path)
{
	pthread_mutex_lock(&c->mu);
	uint32_t o = crash_model_lookup(c->w->m, path);
	pthread_mutex_unlock(&c->mu);
	return o;
}

static uint64_t msize(struct cc *c, uint32_t obj)
{
	pthread_mutex_lock(&c->mu);
	uint64_t s = crash_model_size(c->w->m, obj);
	pthread_mutex_unlock(&c->mu);
	return s;
}

static void op_create(struct th *t, const char *path)
{
	struct crash_ev ev = { .t = EV_CREATE, .path = (char *)path };
	uint32_t obj;
	size_t op;
	if (start(t->c, &ev, &obj, &op))
		return;
	nostall_cred_set(CRASH_UID_BASE + obj, CRASH_UID_BASE, NULL, 0);
	struct nostall_fs *fs = t->c->w->fs;
	int fd = nostall_fd_open(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_EXCL, 0644);
	int rc = fd < 0 ? fd : nostall_fd_close(fs, fd);
	if (rc)
		fail(t->c, rc, "create", path);
}

static void op_write(struct th *t, const char *path, uint64_t off, uint64_t len)
{
	uint64_t *buf = malloc(len);
	if (!buf)
		return fail(t->c, -ENOMEM, "write", path);
	struct crash_ev ev = { .t = EV_WRITE, .obj = lookup(t->c, path), .off = off, .len = len };
	size_t op;
	if (start(t->c, &ev, NULL, &op)) {
		free(buf);
		return;
	}
	for (uint64_t k = 0; k < len / 8; k++) {
		uint64_t p = crash_pat(ev.obj, ev.seq, off + 8 * k);
		uint8_t *b = (uint8_t *)&buf[k];
		for (int i = 0; i < 8; i++)
			b[i] = (uint8_t)(p >> (8 * i));
	}
	struct nostall_fs *fs = t->c->w->fs;
	int fd = nostall_fd_open(fs, path, NOSTALL_O_WRONLY, 0);
	int rc = fd < 0 ? fd : 0;
	if (fd >= 0) {
		ssize_t n = nostall_fd_pwrite(fs, fd, buf, (size_t)len, off);
		rc = n == (ssize_t)len ? 0 : n < 0 ? (int)n : -EIO;
		int crc = nostall_fd_close(fs, fd);
		rc = rc ? rc : crc;
	}
	free(buf);
	if (rc)
		fail(t->c, rc, "write", path);
}

static void op_simple(struct th *t, enum crash_ev_type type, const char *path, const char *path2, uint64_t arg)
{
	struct crash_ev ev = { .t = type, .path = (char *)path, .path2 = (char *)path2, .off = arg };
	if (type == EV_TRUNC) {
		ev.obj = lookup(t->c, path);
		ev.path = NULL;
	}
	size_t op;
	if (start(t->c, &ev, NULL, &op))
		return;
	struct nostall_fs *fs = t->c->w->fs;
	int rc = type == EV_TRUNC	? nostall_truncate(fs, path, arg)
		 : type == EV_RENAME ? nostall_rename(fs, path, path2, 0)
				     : nostall_unlink(fs, path);
	if (rc)
		fail(t->c, rc, "operation on", path);
}

static void op_mkdir(struct th *t, const char *path)
{
	struct crash_ev ev = { .t = EV_MKDIR, .path = (char *)path };
	uint32_t obj;
	size_t op;
	if (start(t->c, &ev, &obj, &op))
		return;
	nostall_cred_set(CRASH_UID_BASE + obj, CRASH_UID_BASE, NULL, 0);
	int rc = nostall_mkdir(t->c->w->fs, path, 0755);
	if (rc)
		fail(t->c, rc, "mkdir", path);
}

/* fsync of a file or directory (path NULL: sync). */
static void op_sync(struct th *t, const char *path, bool datasync)
{
	struct crash_ev ev = { .t = path ? EV_FSYNC : EV_SYNC, .len = datasync };
	if (path)
		ev.obj = lookup(t->c, path);
	size_t op;
	if (start(t->c, &ev, NULL, &op))
		return;
	struct nostall_fs *fs = t->c->w->fs;
	uint64_t ino;
	int rc = path ? nostall_lookup(fs, path, 0, &ino) : nostall_sync(fs);
	if (!rc && path)
		rc = nostall_fsync_ino(fs, ino, datasync);
	if (rc)
		fail(t->c, rc, path ? "fsync" : "sync", path);
	else
		done(t->c, op);
}

static uint64_t rr(struct th *t, uint64_t lo, uint64_t hi)
{
	return lo + crash_rnd(&t->rng) % (hi - lo + 1);
}

static void one_op(struct th *t)
{
	struct cc *c = t->c;
	char a[32], b[32];
	snprintf(a, sizeof a, "/t%d/f%u", t->id, (unsigned)rr(t, 0, NFILES - 1));
	snprintf(b, sizeof b, "/t%d/f%u", t->id, (unsigned)rr(t, 0, NFILES - 1));
	uint32_t oa = lookup(c, a);
	unsigned k = (unsigned)rr(t, 0, 15);
	bool excl = k >= 13; /* the shared directory, sync */
	if (excl)
		pthread_rwlock_wrlock(&c->order);
	else
		pthread_rwlock_rdlock(&c->order);
	if (k <= 1 && !oa) {
		op_create(t, a);
	} else if (k <= 5 && oa) {
		uint64_t size = msize(c, oa), off = k == 2 || !size ? size : 8 * rr(t, 0, size / 8);
		op_write(t, a, off, 8 * rr(t, 1, 2048));
	} else if (k == 6 && oa) {
		op_simple(t, EV_TRUNC, a, NULL, 8 * rr(t, 0, msize(c, oa) / 8 + 512));
	} else if (k <= 9 && oa) {
		op_sync(t, a, k == 8);
	} else if (k == 10 && oa && strcmp(a, b)) {
		op_simple(t, EV_RENAME, a, b, 0);
	} else if (k == 11 && oa) {
		op_simple(t, EV_UNLINK, a, NULL, 0);
	} else if (k == 12) {
		snprintf(b, sizeof b, "/t%d", t->id);
		op_sync(t, b, false);
	} else if (k == 13 || k == 14) { /* excl */
		snprintf(a, sizeof a, "/S/t%d-%u", t->id, (unsigned)rr(t, 0, 2));
		snprintf(b, sizeof b, "/S/t%d-%u", t->id, (unsigned)rr(t, 0, 2));
		if (!lookup(c, a))
			op_create(t, a);
		else if (strcmp(a, b))
			op_simple(t, EV_RENAME, a, b, 0);
		else
			op_write(t, a, msize(c, lookup(c, a)), 8 * rr(t, 1, 512));
		if (rr(t, 0, 1))
			op_sync(t, "/S", false);
	} else if (k == 15) { /* excl */
		op_sync(t, NULL, false);
	} /* else: nothing to do on a missing file */
	pthread_rwlock_unlock(&c->order);
}

static void *thread_main(void *arg)
{
	struct th *t = arg;
	char d[16];
	snprintf(d, sizeof d, "/t%d", t->id);
	pthread_rwlock_rdlock(&t->c->order);
	op_mkdir(t, d);
	pthread_rwlock_unlock(&t->c->order);
	for (int i = 0; i < NOPS && !t->c->w->err; i++)
		one_op(t);
	nostall_cred_reset();
	return NULL;
}

void crash_wl_concurrent(struct crash_wl_ctx *w)
{
	if (!w->fs) {
		snprintf(w->errmsg, sizeof w->errmsg, "concurrent: a dry run cannot make the threads' interleaving "
			 "(its kept states are not replayable)");
		w->err = -EINVAL;
		return;
	}
	struct cc c = { .w = w };
	pthread_mutex_init(&c.mu, NULL);
	pthread_rwlock_init(&c.order, NULL);
	struct th t[NTHREADS];
	pthread_t tid[NTHREADS];
	int started = 0;
	{
		struct th t0 = { .c = &c };
		op_mkdir(&t0, "/S");
		op_sync(&t0, NULL, false);
	}
	for (int i = 0; i < NTHREADS && !w->err; i++) {
		t[i] = (struct th){ .c = &c, .id = i, .rng = w->rng ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)) };
		if (pthread_create(&tid[i], NULL, thread_main, &t[i])) {
			fail(&c, -EAGAIN, "pthread_create", NULL);
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	nostall_cred_reset();
	pthread_rwlock_destroy(&c.order);
	pthread_mutex_destroy(&c.mu);
}
