/* Shared by the block layer tests (test_blk.c, test_blk_barrier.c): the
 * "gate" device, defined here through the device ops table, which holds
 * every command until the test releases it (so the tests decide exactly when
 * requests complete), and bio / queue helpers.
 */
#ifndef NOSTALL_TEST_BLK_ENV_H
#define NOSTALL_TEST_BLK_ENV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blk/blk.h"
#include "dev/dev_impl.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------- gate device */

#define GATE_MAX 1024

struct gate {
	struct dev d;
	pthread_mutex_t m;
	struct dev_io *held[GATE_MAX];
	int n;
	uint64_t served;
	uint64_t sizes[GATE_MAX]; /* nr_sectors of each served command, in order */
	unsigned char *data;
};

static inline int gate_submit(struct dev *d, struct dev_io *io)
{
	struct gate *g = (struct gate *)d;
	pthread_mutex_lock(&g->m);
	g->held[g->n++] = io;
	pthread_mutex_unlock(&g->m);
	return 0;
}

static inline void gate_close(struct dev *d)
{
	struct gate *g = (struct gate *)d;
	pthread_mutex_destroy(&g->m);
	free(g->data);
	free(g);
}

static const struct dev_ops gate_ops = { .kind = "gate", .submit = gate_submit, .close = gate_close };

static bool gate_wcache; /* the next gate_open has a volatile write cache */

static inline struct gate *gate_open(bool rotational, unsigned depth)
{
	struct gate *g = calloc(1, sizeof *g);
	struct dev_geometry geo = { .size_bytes = 64ull << 20, .rotational = rotational, .queue_depth = depth,
				    .max_hw_sectors = 2048, .logical_block_size = 512,
				    .has_write_cache = gate_wcache };
	assert_int_equal(dev_init(&g->d, &gate_ops, &geo), 0);
	pthread_mutex_init(&g->m, NULL);
	g->data = calloc(1, geo.size_bytes);
	return g;
}

static inline int gate_held(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	int n = g->n;
	pthread_mutex_unlock(&g->m);
	return n;
}

/* The oldest held command (false if none). */
static inline bool gate_head(struct gate *g, struct dev_io *out)
{
	pthread_mutex_lock(&g->m);
	bool any = g->n > 0;
	if (any)
		*out = *g->held[0];
	pthread_mutex_unlock(&g->m);
	return any;
}

/* Complete the k oldest held commands with err. */
static inline void gate_release_err(struct gate *g, int k, int err)
{
	for (int i = 0; i < k; i++) {
		pthread_mutex_lock(&g->m);
		if (!g->n) {
			pthread_mutex_unlock(&g->m);
			return;
		}
		struct dev_io *io = g->held[0];
		memmove(g->held, g->held + 1, sizeof g->held[0] * (size_t)--g->n);
		if (g->served < GATE_MAX)
			g->sizes[g->served] = io->nr_sectors;
		g->served++;
		pthread_mutex_unlock(&g->m);
		size_t off = (size_t)io->sector * 512, len = (size_t)io->nr_sectors * 512;
		if (!err && io->op == DEV_OP_WRITE)
			memcpy(g->data + off, io->buf, len);
		else if (!err && io->op == DEV_OP_READ)
			memcpy(io->buf, g->data + off, len);
		dev_complete(&g->d, io, err);
	}
}

static inline void gate_release(struct gate *g, int k)
{
	gate_release_err(g, k, 0);
}

/* Poll until cond() holds (at most 5 s). */
#define WAIT_FOR(cond)                                                  \
	do {                                                            \
		uint64_t deadline_ = clock_now_ns() + 5 * NS_PER_SEC;   \
		while (!(cond) && clock_now_ns() < deadline_)           \
			clock_sleep_ns(100 * NS_PER_US);                \
		assert_true(cond);                                      \
	} while (0)

/* ------------------------------------------------------- bio helpers */

static atomic_int async_done;
static atomic_int async_err;

static inline void async_end(struct bio *bio, int err)
{
	if (err)
		atomic_store(&async_err, err);
	atomic_fetch_add(&async_done, 1);
	free(bio);
}

static char page[1 << 20];

static inline struct bio *mkbio(uint64_t sector, uint32_t bytes, unsigned rw)
{
	struct bio *b = calloc(1, sizeof *b);
	b->sector = sector;
	b->size = bytes;
	b->data = page;
	b->rw = rw;
	b->end_io = async_end;
	return b;
}

static inline void submit(struct blk_queue *q, uint64_t sector, uint32_t bytes, unsigned rw)
{
	assert_int_equal(blk_submit_bio(q, mkbio(sector, bytes, rw)), 0);
}

struct fixture {
	struct gate *g;
	struct blk_queue *q;
};

/* A queue on a fresh gate. Writeback throttling (wbt_lat_usec, on in the
 * default preset; not in 2009) is switched off unless opts names it: the
 * pool, plug, merge and barrier tests count the requests a 2009 queue
 * makes, and a stopped queue would hold their async writes at its limit.
 * test_blk_wbt.c tests it. */
static inline struct fixture open_q(bool rot, unsigned depth, const char *opts)
{
	struct fixture f;
	f.g = gate_open(rot, depth);
	char o[256];
	if (!opts || !strstr(opts, "wbt_lat_usec")) {
		snprintf(o, sizeof o, "wbt_lat_usec=0%s%s", opts && *opts ? "," : "", opts ? opts : "");
		opts = o;
	}
	int rc = blk_queue_create(&f.g->d, opts, &f.q);
	if (rc)
		fprintf(stderr, "blk_queue_create: %s\n", err_last(rc));
	assert_int_equal(rc, 0);
	atomic_store(&async_done, 0);
	atomic_store(&async_err, 0);
	return f;
}

static inline void close_q(struct fixture *f)
{
	/* Let everything through so that the queue drains. */
	struct blk_queue *q = f->q;
	blk_queue_start(q);
	blk_queue_unplug(q);
	unsigned queued, inflight;
	do {
		gate_release(f->g, GATE_MAX);
		blk_queue_counts(q, &queued, &inflight);
		clock_sleep_ns(50 * NS_PER_US);
	} while (queued || inflight || gate_held(f->g));
	blk_queue_destroy(q);
	dev_close(&f->g->d);
}

static inline struct blk_pool_state pool(struct blk_queue *q, int i)
{
	struct blk_pool_state s;
	blk_queue_pool_state(q, i, &s);
	return s;
}

/* A thread that submits one bio (and may sleep in the pool). */
struct sub_arg {
	struct blk_queue *q;
	uint64_t sector;
	uint32_t bytes;
	unsigned rw;
	pthread_t tid;
	atomic_bool returned;
};

static inline void *sub_thread(void *p)
{
	struct sub_arg *a = p;
	submit(a->q, a->sector, a->bytes, a->rw);
	atomic_store(&a->returned, true);
	return NULL;
}

static inline void sub_start(struct sub_arg *a, struct blk_queue *q, uint64_t sector, unsigned rw)
{
	a->q = q;
	a->sector = sector;
	a->bytes = 4096;
	a->rw = rw;
	atomic_store(&a->returned, false);
	assert_int_equal(pthread_create(&a->tid, NULL, sub_thread, a), 0);
}

#endif
