/* file: device (io_uring, O_DIRECT, bounce buffers, flush/FUA).
 * nostall-test: concurrent */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static char *make_file(const char *dir, uint64_t size)
{
	char *path = malloc(256);
	snprintf(path, 256, "%s/nostall-devfile-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		unlink(path);
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

static void roundtrip(const char *spec, bool expect_direct_ok)
{
	(void)expect_direct_ok;
	struct dev *d;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	assert_int_equal(g.size_bytes, 64u << 20);
	assert_true(g.has_write_cache);
	assert_true(g.logical_block_size == 512 || g.logical_block_size == 4096);
	unsigned lbs = g.logical_block_size / 512;

	/* Deliberately unaligned buffers: bounced for O_DIRECT. */
	char *wbase = malloc(256 * 1024 + 1), *rbase = malloc(256 * 1024 + 3);
	char *w = wbase + 1, *r = rbase + 3;
	fill(w, 256 * 1024, 3);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 8 * lbs, 512, w, 0), 0);
	memset(r, 0, 256 * 1024);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 8 * lbs, 512, r, 0), 0);
	assert_memory_equal(w, r, 256 * 1024);
	/* FUA, PREFLUSH, flush, last block. */
	uint64_t last = g.size_bytes / 512 - 8 * lbs;
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, last, 8 * lbs, w, DEV_IO_FUA | DEV_IO_PREFLUSH), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, last, 8 * lbs, r, 0), 0);
	assert_memory_equal(w, r, 4096 * lbs);
	assert_int_equal(dev_flush_sync(d), 0);
	/* Discard: zeroes or old data, never garbage or an error. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_DISCARD, 0, 2048, NULL, 0), 0);
	/* Out of range. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, g.size_bytes / 512, 8, r, 0), -ERANGE);
	dev_close(d);
	free(wbase);
	free(rbase);
}

static void test_file_depth1_and_32(void **state)
{
	(void)state;
	char *path = make_file("/tmp", 64u << 20);
	assert_non_null(path);
	char spec[512];
	snprintf(spec, sizeof(spec), "file:%s,depth=1", path);
	roundtrip(spec, true);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	assert_int_equal(g.queue_depth, 1);
	dev_close(d);
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(dev_open(spec, &d), 0);
	dev_geometry_get(d, &g);
	assert_int_equal(g.queue_depth, 32);
	dev_close(d);
	snprintf(spec, sizeof(spec), "file:%s,depth=32,direct=1", path);
	roundtrip(spec, true);
	snprintf(spec, sizeof(spec), "file:%s,direct=0", path);
	roundtrip(spec, false);
	unlink(path);
	free(path);
}

static void test_file_tmpfs_fallback(void **state)
{
	(void)state;
	struct stat st;
	if (stat("/dev/shm", &st) < 0) {
		skip();
		return;
	}
	char *path = make_file("/dev/shm", 64u << 20);
	if (!path) {
		skip();
		return;
	}
	char spec[512];
	snprintf(spec, sizeof(spec), "file:%s,depth=4", path);
	roundtrip(spec, false);
	unlink(path);
	free(path);
}

static void test_file_errors(void **state)
{
	(void)state;
	struct dev *d;
	char *path = make_file("/tmp", 0);
	assert_non_null(path);
	char spec[512];
	snprintf(spec, sizeof(spec), "file:%s", path);
	int rc = dev_open(spec, &d);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err_last(rc), "empty"));
	snprintf(spec, sizeof(spec), "file:%s,size=1M", path);
	assert_int_equal(dev_open(spec, &d), 0); /* size= extends */
	dev_close(d);
	snprintf(spec, sizeof(spec), "file:%s,depth=0", path);
	rc = dev_open(spec, &d);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err_last(rc), "depth"));
	snprintf(spec, sizeof(spec), "file:%s,dpeth=3", path);
	rc = dev_open(spec, &d);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err_last(rc), "dpeth=3"));
	rc = dev_open("file:/nonexistent-nostall/x", &d);
	assert_int_equal(rc, -ENOENT);
	assert_non_null(strstr(err_last(rc), "/nonexistent-nostall/x"));
	rc = dev_open("file:/dev/null", &d);
	assert_int_equal(rc, -EINVAL);
	unlink(path);
	free(path);
}

/* Many async commands at depth 32 from several threads. */
struct async_ctx {
	atomic_int completed;
	atomic_int errors;
};

struct async_io {
	struct dev_io io;
	struct async_ctx *ctx;
	char buf[8192];
};

static void async_done(struct dev_io *io, int err)
{
	struct async_io *a = io->priv;
	if (err)
		atomic_fetch_add(&a->ctx->errors, 1);
	atomic_fetch_add(&a->ctx->completed, 1);
}

struct submitter {
	struct dev *d;
	unsigned id;
	struct async_ctx ctx;
};

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;
	enum { N = 8 };
	struct async_io *ios = calloc(N, sizeof(*ios));
	for (unsigned round = 0; round < 20; round++) {
		atomic_store(&s->ctx.completed, 0);
		for (unsigned i = 0; i < N; i++) {
			struct async_io *a = &ios[i];
			fill(a->buf, sizeof(a->buf), s->id * 100 + i + round);
			a->ctx = &s->ctx;
			a->io = (struct dev_io){ .op = DEV_OP_WRITE, .sector = (uint64_t)(s->id * N + i) * 16,
						 .nr_sectors = 16, .buf = a->buf, .done = async_done, .priv = a };
			/* Barrier writes (a linked preflush SQE and an RWF_DSYNC
			 * write: two CQEs each) with all 32 commands in flight
			 * fill the completion ring. */
			if (round % 5 == 4)
				a->io.flags = DEV_IO_FUA;
			else if (round % 5 == 3)
				a->io.flags = DEV_IO_PREFLUSH | DEV_IO_FUA;
			else if (round % 5 == 2)
				a->io.flags = DEV_IO_PREFLUSH;
			int rc;
			while ((rc = dev_submit(s->d, &a->io)) == -EBUSY)
				usleep(10);
			if (rc)
				atomic_fetch_add(&s->ctx.errors, 1), atomic_fetch_add(&s->ctx.completed, 1);
		}
		while (atomic_load(&s->ctx.completed) < N)
			usleep(50);
	}
	/* Verify the final contents. */
	char r[8192];
	for (unsigned i = 0; i < N; i++) {
		fill(ios[i].buf, sizeof(ios[i].buf), s->id * 100 + i + 19);
		if (dev_rw_sync(s->d, DEV_OP_READ, (uint64_t)(s->id * N + i) * 16, 16, r, 0) ||
		    memcmp(r, ios[i].buf, sizeof(r)))
			atomic_fetch_add(&s->ctx.errors, 1);
	}
	free(ios);
	return NULL;
}

/* DEV_IO_MORE: commands held back start together at dev_commit, one
 * submission for the batch; the data is the same. A wrapper (fault:)
 * without a commit op clears the flag: its commands complete without one. */
static void more_batch(struct dev *d, enum dev_op op, char *buf, unsigned n, bool commit)
{
	struct async_ctx ctx;
	atomic_init(&ctx.completed, 0);
	atomic_init(&ctx.errors, 0);
	struct async_io *ios = calloc(n, sizeof(*ios));
	assert_non_null(ios);
	for (unsigned i = 0; i < n; i++) {
		ios[i].ctx = &ctx;
		ios[i].io = (struct dev_io){ .op = op, .flags = DEV_IO_MORE, .sector = i * 64u, .nr_sectors = 64,
					     .buf = buf + (size_t)i * 32768, .done = async_done, .priv = &ios[i] };
		assert_int_equal(dev_submit(d, &ios[i].io), 0);
	}
	if (commit)
		dev_commit(d);
	while (atomic_load(&ctx.completed) < (int)n)
		usleep(50);
	assert_int_equal(atomic_load(&ctx.errors), 0);
	free(ios);
}

static void test_file_more_batches(void **state)
{
	(void)state;
	char *path = make_file("/tmp", 64u << 20);
	assert_non_null(path);
	char spec[512];
	snprintf(spec, sizeof(spec), "file:%s,depth=16,inline_io=0", path);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	char *w = aligned_alloc(4096, 8 * 32768), *r = aligned_alloc(4096, 8 * 32768);
	fill(w, 8 * 32768, 11);
	struct dev_file_stats a, b;
	assert_int_equal(dev_file_stats(d, &a), 0);
	more_batch(d, DEV_OP_WRITE, w, 8, true);
	assert_int_equal(dev_file_stats(d, &b), 0);
	assert_int_equal(b.enters - a.enters, 1); /* eight writes, one submission */
	memset(r, 0, 8 * 32768);
	more_batch(d, DEV_OP_READ, r, 8, true);
	assert_memory_equal(w, r, 8 * 32768);
	assert_int_equal(dev_file_stats(d, &a), 0);
	assert_int_equal(a.enters - b.enters, 1);
	/* Without the flag: one submission per command. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 64, r, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 64, 64, r, 0), 0);
	assert_int_equal(dev_file_stats(d, &b), 0);
	assert_int_equal(b.enters - a.enters, 2);
	dev_close(d);

	/* Through a wrapper that has no commit op: no dev_commit needed. */
	snprintf(spec, sizeof(spec), "fault:file:%s,op=discard", path); /* fails nothing here */
	assert_int_equal(dev_open(spec, &d), 0);
	memset(r, 0, 8 * 32768);
	more_batch(d, DEV_OP_READ, r, 8, false);
	assert_memory_equal(w, r, 8 * 32768);
	dev_close(d);
	free(w);
	free(r);
	unlink(path);
	free(path);
}

static void test_file_concurrent(void **state)
{
	(void)state;
	char *path = make_file("/tmp", 64u << 20);
	assert_non_null(path);
	char spec[512];
	snprintf(spec, sizeof(spec), "file:%s,depth=32", path);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	pthread_t t[4];
	struct submitter s[4];
	for (unsigned i = 0; i < 4; i++) {
		s[i] = (struct submitter){ .d = d, .id = i };
		atomic_init(&s[i].ctx.completed, 0);
		atomic_init(&s[i].ctx.errors, 0);
		assert_int_equal(pthread_create(&t[i], NULL, submit_thread, &s[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(atomic_load(&s[i].ctx.errors), 0);
	}
	dev_close(d);
	unlink(path);
	free(path);
}

/* Background flushes (flush_every=): none while nobody asked for
 * durability; after a flush, every flush_every bytes written start one,
 * which covers what was written before it; 0 turns them off. */
static uint64_t write_mib(struct dev *d, unsigned mib, unsigned from_mib)
{
	char *buf = aligned_alloc(4096, 256 * 1024);
	fill(buf, 256 * 1024, 7);
	for (unsigned i = 0; i < mib * 4; i++)
		assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, ((uint64_t)from_mib << 11) + i * 512u, 512,
					     buf, 0), 0);
	free(buf);
	return (uint64_t)mib << 20;
}

static struct dev_file_stats file_stats_settled(struct dev *d, uint64_t min_bg)
{
	struct dev_file_stats st;
	for (int i = 0; i < 500; i++) { /* the flush completes asynchronously */
		assert_int_equal(dev_file_stats(d, &st), 0);
		if (st.bg_flushes >= min_bg)
			break;
		usleep(10000);
	}
	return st;
}

static void test_file_background_flush(void **state)
{
	(void)state;
	char *path = make_file("/tmp", 64u << 20);
	assert_non_null(path);
	char spec[512];
	struct dev *d;
	snprintf(spec, sizeof(spec), "file:%s,flush_every=100K", path);
	assert_int_equal(dev_open(spec, &d), -EINVAL);
	snprintf(spec, sizeof(spec), "file:%s,flush_every=1M", path);
	assert_int_equal(dev_open(spec, &d), 0);
	struct dev_file_stats st;
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.written, 0);
	/* nobody waits for a flush yet: none in the background */
	uint64_t w = write_mib(d, 4, 0);
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.written, w);
	assert_int_equal(st.unflushed, w);
	assert_int_equal(st.bg_flushes, 0);
	/* an explicit flush covers it all */
	assert_int_equal(dev_flush_sync(d), 0);
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.unflushed, 0);
	/* now writes past 1 MiB start background flushes */
	w += write_mib(d, 8, 4);
	st = file_stats_settled(d, 1);
	assert_int_equal(st.written, w);
	assert_true(st.bg_flushes >= 1);
	assert_true(st.unflushed < (8u << 20));
	dev_close(d);

	/* closing with a background flush likely still queued (ASan/TSan
	 * watch the completion thread wait for it) */
	assert_int_equal(dev_open(spec, &d), 0);
	assert_int_equal(dev_flush_sync(d), 0);
	write_mib(d, 3, 0);
	dev_close(d);

	/* flush_every=0: never */
	snprintf(spec, sizeof(spec), "file:%s,flush_every=0", path);
	assert_int_equal(dev_open(spec, &d), 0);
	assert_int_equal(dev_flush_sync(d), 0);
	w = write_mib(d, 8, 0);
	usleep(100000);
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.bg_flushes, 0);
	assert_int_equal(st.unflushed, w);
	dev_close(d);
	unlink(path);
	free(path);
}

/* dev_close waits for outstanding commands. */
struct flush_probe {
	struct dev_io io;
	pthread_t thread;     /* the one that ran done() */
	atomic_int done;
	int err;
};

static void probe_done(struct dev_io *io, int err)
{
	struct flush_probe *p = io->priv;
	p->thread = pthread_self();
	p->err = err;
	atomic_store(&p->done, 1);
}

/* A flush submitted asynchronously; returns whether it had completed, in
 * this thread, when dev_submit returned (inline), and waits for it. */
static bool flush_was_inline(struct dev *d)
{
	struct flush_probe p = { .io = { .op = DEV_OP_FLUSH, .done = probe_done } };
	p.io.priv = &p;
	assert_int_equal(dev_submit(d, &p.io), 0);
	bool inl = atomic_load(&p.done) && pthread_equal(p.thread, pthread_self());
	while (!atomic_load(&p.done))
		usleep(20);
	assert_int_equal(p.err, 0);
	return inl;
}

/* inline_io=1 (the default): a flush or a barrier write on an idle
 * device with little to carry, and a small transfer sent alone, are served
 * and completed in the submitting thread; a flush with a lot to carry, a
 * large transfer or one without the hint go through the ring; inline_io=0
 * never serves inline. Durability accounting and data are the same. */
static void test_file_inline_io(void **state)
{
	(void)state;
	char *path = make_file("/tmp", 16u << 20);
	assert_non_null(path);
	char spec[512];
	struct dev *d;
	struct dev_file_stats st;
	snprintf(spec, sizeof(spec), "file:%s,inline_io=2", path);
	assert_int_equal(dev_open(spec, &d), -EINVAL);
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(dev_open(spec, &d), 0);
	static char buf[65536], back[65536];
	fill(buf, sizeof(buf), 7);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, sizeof(buf) / 512, buf, 0), 0);
	assert_true(flush_was_inline(d));
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.inline_ios, 1);
	assert_int_equal(st.unflushed, 0);
	assert_int_equal(st.written, sizeof(buf));
	/* a barrier write: preflush, write, FUA, all here */
	fill(buf, sizeof(buf), 8);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 128, sizeof(buf) / 512, buf, DEV_IO_PREFLUSH | DEV_IO_FUA), 0);
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.inline_ios, 2);
	assert_int_equal(st.unflushed, 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 128, sizeof(back) / 512, back, 0), 0);
	assert_memory_equal(back, buf, sizeof(buf));
	/* a small read or write sent alone (DEV_IO_ALONE) is inline too; a
	 * large one, or one without the hint, is not */
	static char big[256 << 10];
	fill(buf, sizeof(buf), 9);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 256, sizeof(buf) / 512, buf, DEV_IO_ALONE), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 256, sizeof(back) / 512, back, DEV_IO_ALONE), 0);
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 256, sizeof(back) / 512, back, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, sizeof(big) / 512, big, DEV_IO_ALONE), 0);
	assert_memory_equal(big + (256 << 9), buf, sizeof(buf));
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.inline_ios, 4);
	assert_int_equal(st.unflushed, sizeof(buf));
	assert_true(flush_was_inline(d));
	/* 2 MiB to carry: through the ring */
	write_mib(d, 2, 1);
	assert_false(flush_was_inline(d));
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.inline_ios, 5);
	assert_int_equal(st.unflushed, 0);
	dev_close(d);

	snprintf(spec, sizeof(spec), "file:%s,inline_io=0", path);
	assert_int_equal(dev_open(spec, &d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, sizeof(buf) / 512, buf, 0), 0);
	assert_false(flush_was_inline(d));
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 128, sizeof(buf) / 512, buf, DEV_IO_PREFLUSH | DEV_IO_FUA), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 128, sizeof(back) / 512, back, DEV_IO_ALONE), 0);
	assert_int_equal(dev_file_stats(d, &st), 0);
	assert_int_equal(st.inline_ios, 0);
	/* the RWF_DSYNC write's own bytes are not counted as flushed */
	assert_true(st.unflushed <= sizeof(buf));
	dev_close(d);
	unlink(path);
	free(path);
}

static void test_file_close_waits(void **state)
{
	(void)state;
	char *path = make_file("/tmp", 16u << 20);
	char spec[512];
	snprintf(spec, sizeof(spec), "file:%s,depth=16", path);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	struct async_ctx ctx;
	atomic_init(&ctx.completed, 0);
	atomic_init(&ctx.errors, 0);
	struct async_io *ios = calloc(16, sizeof(*ios));
	for (unsigned i = 0; i < 16; i++) {
		ios[i].ctx = &ctx;
		ios[i].io = (struct dev_io){ .op = i % 2 ? DEV_OP_READ : DEV_OP_WRITE, .sector = i * 16,
					     .nr_sectors = 16, .buf = ios[i].buf, .done = async_done,
					     .priv = &ios[i] };
		assert_int_equal(dev_submit(d, &ios[i].io), 0);
	}
	dev_close(d);
	assert_int_equal(atomic_load(&ctx.completed), 16);
	assert_int_equal(atomic_load(&ctx.errors), 0);
	free(ios);
	unlink(path);
	free(path);
}

/* dev_lock between two opens of one image (two OFDs: flock conflicts even
 * inside one process), through a wrapper, and on close. */
static void test_file_lock(void **state)
{
	(void)state;
	char *path = make_file("/tmp", 4u << 20);
	char spec[512], wspec[600];
	snprintf(spec, sizeof(spec), "file:%s", path);
	snprintf(wspec, sizeof(wspec), "fault:file:%s", path);
	struct dev *a, *b, *w;
	assert_int_equal(dev_open(spec, &a), 0);
	assert_int_equal(dev_open(spec, &b), 0);
	assert_int_equal(dev_lock(a, DEV_LOCK_EXCL), 0);
	assert_int_equal(dev_lock(b, DEV_LOCK_SHARED), -EBUSY);
	assert_non_null(strstr(err_last(-EBUSY), "in use"));
	assert_int_equal(dev_lock(b, DEV_LOCK_EXCL), -EBUSY);
	assert_int_equal(dev_lock(a, DEV_LOCK_EXCL), 0); /* again: its own */
	/* shared beside shared; exclusive beside either is refused */
	assert_int_equal(dev_lock(a, DEV_LOCK_SHARED), 0);
	assert_int_equal(dev_lock(b, DEV_LOCK_SHARED), 0);
	assert_int_equal(dev_lock(a, DEV_LOCK_EXCL), -EBUSY);
	assert_int_equal(dev_lock(b, DEV_LOCK_NONE), 0);
	assert_int_equal(dev_lock(a, DEV_LOCK_EXCL), 0);
	/* a wrapper locks its inner device */
	assert_int_equal(dev_open(wspec, &w), 0);
	assert_int_equal(dev_lock(w, DEV_LOCK_SHARED), -EBUSY);
	/* closing lets go */
	dev_close(a);
	assert_int_equal(dev_lock(w, DEV_LOCK_EXCL), 0);
	assert_int_equal(dev_lock(b, DEV_LOCK_SHARED), -EBUSY);
	dev_close(w);
	assert_int_equal(dev_lock(b, DEV_LOCK_EXCL), 0);
	dev_close(b);
	/* memory has nothing to guard */
	struct dev *m;
	assert_int_equal(dev_open("mem:1M", &m), 0);
	assert_int_equal(dev_lock(m, DEV_LOCK_EXCL), 0);
	dev_close(m);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_depth1_and_32),
		cmocka_unit_test(test_file_tmpfs_fallback),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_file_concurrent),
		cmocka_unit_test(test_file_more_batches),
		cmocka_unit_test(test_file_close_waits),
		cmocka_unit_test(test_file_background_flush),
		cmocka_unit_test(test_file_inline_io),
		cmocka_unit_test(test_file_lock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
