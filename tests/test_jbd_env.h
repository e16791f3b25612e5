/* Shared by the journal's unit tests (test_jbd.c, test_jbd_write.c):
 * mem: device -> queue -> buffer cache -> journal in a contiguous block
 * range (jbd_stack_open), block helpers, crash snapshots, and an
 * ordered-data inode whose submit op can hold a commit.
 */
#ifndef NOSTALL_TEST_JBD_ENV_H
#define NOSTALL_TEST_JBD_ENV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blk/blk.h"
#include "buf/buf.h"
#include "dev/dev.h"
#include "jbd/jbd.h"
#include "jbd/jbd_format.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BS 1024u
#define DEV_BLOCKS 16384u /* 16 MiB */
#define JSTART 1000u
#define JLEN 1024u
#define DATA0 4000u

struct env {
	struct jbd_stack *s;
	struct dev *d;
	struct blk_queue *q;
	struct buf_cache *c;
	struct jbd_journal *j;
	struct jbd_location loc;
};

static inline void env_open_spec(struct env *e, const char *spec, const char *qopts, const char *jopts, uint32_t jlen)
{
	memset(e, 0, sizeof *e);
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	struct jbd_stack_params p;
	jbd_stack_params_default(&p);
	p.queue_opts = qopts;
	p.loc = (struct jbd_location){ .block_size = BS, .first_block = JSTART, .nr_blocks = jlen };
	p.create = true;
	p.uuid = uuid;
	int rc = jbd_config_parse(&p.cfg, jopts);
	if (rc)
		fail_msg("opts: %s", err_last(rc));
	rc = jbd_stack_open(spec, &p, &e->s);
	if (rc)
		fail_msg("%s: %s", spec, err_last(rc));
	e->loc = p.loc;
	e->d = jbd_stack_dev(e->s);
	e->q = jbd_stack_queue(e->s);
	e->c = jbd_stack_cache(e->s);
	e->j = jbd_stack_journal(e->s);
}

static inline void env_open(struct env *e, const char *qopts, const char *jopts)
{
	env_open_spec(e, "mem:16M", qopts, jopts, JLEN);
}

static inline int env_close(struct env *e)
{
	return jbd_stack_close(e->s);
}

#include <unistd.h>

/* Poll `cond` (an expression) every millisecond for up to 20 s; a test
 * that never gets there fails instead of hanging. */
#define WAIT_FOR(cond, what)                                                                        \
	do {                                                                                        \
		int waited_ = 0;                                                                    \
		while (!(cond)) {                                                                   \
			if (++waited_ > 20000)                                                      \
				fail_msg("gave up waiting for %s", what);                           \
			usleep(1000);                                                               \
		}                                                                                   \
	} while (0)

/* Bios queued on the env's queue so far. */
static inline uint64_t bios_of(struct env *e)
{
	struct blk_stats st;
	blk_queue_stats_get(e->q, &st);
	return st.bios;
}

static inline struct jbd_stats stats_of(struct env *e)
{
	struct jbd_stats st;
	jbd_journal_stats(e->j, &st);
	return st;
}

/* Write one block through a handle: contents = byte `v` (first 4 bytes
 * optional magic). */
static inline void put_block(struct jbd_handle *h, struct env *e, uint64_t b, int v, bool magic)
{
	int err = 0;
	struct buffer_head *bh = buf_get(e->c, b, &err);
	assert_non_null(bh);
	int rc = buf_uptodate(bh) ? jbd_get_write_access(h, bh) : jbd_get_create_access(h, bh);
	assert_int_equal(rc, 0);
	memset(buf_data(bh), v, BS);
	if (magic) {
		uint32_t m = cpu_to_be32(JBD_MAGIC_NUMBER);
		memcpy(buf_data(bh), &m, 4);
	}
	buf_set_uptodate(bh);
	assert_int_equal(jbd_dirty_metadata(h, bh), 0);
	buf_put(bh);
}

static inline void write_tx(struct env *e, const uint64_t *blocks, int n, int v, bool sync)
{
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e->j, n, &h), 0);
	for (int i = 0; i < n; i++)
		put_block(h, e, blocks[i], v, false);
	jbd_handle_set_sync(h, sync);
	assert_int_equal(jbd_handle_stop(h), 0);
}

/* Copy the whole device to a new mem: device (the crash image). */
static inline struct dev *snapshot(struct env *e)
{
	struct dev *s;
	assert_int_equal(dev_open("mem:16M", &s), 0);
	size_t len = 1024 * 1024;
	void *buf;
	assert_int_equal(posix_memalign(&buf, 4096, len), 0);
	for (uint64_t off = 0; off < (uint64_t)DEV_BLOCKS * BS; off += len) {
		assert_int_equal(dev_rw_sync(e->d, DEV_OP_READ, off / 512, (uint32_t)(len / 512), buf, 0), 0);
		assert_int_equal(dev_rw_sync(s, DEV_OP_WRITE, off / 512, (uint32_t)(len / 512), buf, 0), 0);
	}
	free(buf);
	return s;
}

static inline void read_dev_block(struct dev *d, uint64_t b, void *buf)
{
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, b * (BS / 512), BS / 512, buf, 0), 0);
}

static inline int first_byte(struct dev *d, uint64_t b)
{
	unsigned char buf[BS];
	read_dev_block(d, b, buf);
	return buf[100];
}

static inline void recover_snapshot(struct env *e, struct dev *s, struct jbd_recovery_info *info)
{
	int rc = jbd_journal_recover_dev(s, &e->loc, 0, info);
	if (rc)
		fail_msg("recover: %s", err_last(rc));
}

/* An ordered-data inode whose submit op holds the commit (in DATA_SUBMIT,
 * before any log copy is taken) until released, counting its calls. */
struct hold {
	pthread_mutex_t m;
	pthread_cond_t c;
	int entered, release;
	int submits, waits;
	uint32_t submit_tid[8], wait_tid[8];
	int fail_submit, fail_wait; /* errors to return */
	int released;               /* set by a thread whose release returned */
	int late_calls;             /* ops called after that */
};

static inline void hold_init(struct hold *h)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->m, NULL);
	pthread_cond_init(&h->c, NULL);
}

static inline void hold_destroy(struct hold *h)
{
	pthread_mutex_destroy(&h->m);
	pthread_cond_destroy(&h->c);
}

static inline int hold_submit(void *ctx, uint32_t tid)
{
	struct hold *h = ctx;
	pthread_mutex_lock(&h->m);
	h->late_calls += h->released;
	if (h->submits < 8)
		h->submit_tid[h->submits] = tid;
	h->submits++;
	h->entered++;
	pthread_cond_broadcast(&h->c);
	while (!h->release)
		pthread_cond_wait(&h->c, &h->m);
	pthread_mutex_unlock(&h->m);
	return h->fail_submit;
}

static inline int hold_wait(void *ctx, uint32_t tid)
{
	struct hold *h = ctx;
	pthread_mutex_lock(&h->m);
	h->late_calls += h->released;
	if (h->waits < 8)
		h->wait_tid[h->waits] = tid;
	h->waits++;
	pthread_mutex_unlock(&h->m);
	return h->fail_wait;
}

static const struct jbd_inode_ops hold_ops = { .submit = hold_submit, .wait = hold_wait };

static inline void hold_wait_entered(struct hold *h, int n)
{
	pthread_mutex_lock(&h->m);
	while (h->entered < n)
		pthread_cond_wait(&h->c, &h->m);
	pthread_mutex_unlock(&h->m);
}

static inline void hold_set_release(struct hold *h, int v)
{
	pthread_mutex_lock(&h->m);
	h->release = v;
	pthread_cond_broadcast(&h->c);
	pthread_mutex_unlock(&h->m);
}

/* One handle writing block b = v and filing ji (if given). */
static inline void write_filed(struct env *e, uint64_t b, int v, struct jbd_inode *ji)
{
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	put_block(h, e, b, v, false);
	if (ji)
		assert_int_equal(jbd_inode_file(h, ji), 0);
	assert_int_equal(jbd_handle_stop(h), 0);
}

struct committer {
	struct jbd_journal *j;
	int rc;
};

static inline void *force_commit_main(void *arg)
{
	struct committer *c = arg;
	c->rc = jbd_journal_force_commit(c->j);
	return NULL;
}

/* An env with one ordered-data inode on a hold, and a thread that forces a
 * commit which the hold stops in its submit op. */
struct held {
	struct env e;
	struct hold hd;
	struct jbd_inode *ji; /* NULL once released by the test */
	struct committer cm;
	pthread_t th;
	int commits;          /* held commits started */
};

static inline void held_open(struct held *x, const char *jopts)
{
	env_open(&x->e, NULL, jopts);
	hold_init(&x->hd);
	assert_int_equal(jbd_inode_create(x->e.j, &hold_ops, &x->hd, &x->ji), 0);
	x->cm = (struct committer){ .j = x->e.j };
	x->commits = 0;
}

/* Returns once the commit is in the inode's submit op. */
static inline void held_commit_start(struct held *x)
{
	pthread_create(&x->th, NULL, force_commit_main, &x->cm);
	hold_wait_entered(&x->hd, ++x->commits);
}

/* Lets every submit op through from now on and waits for the commit. */
static inline void held_commit_end(struct held *x)
{
	hold_set_release(&x->hd, 1);
	pthread_join(x->th, NULL);
	assert_int_equal(x->cm.rc, 0);
}

static inline void held_close(struct held *x, int want_rc)
{
	assert_int_equal(jbd_inode_release(x->ji), 0);
	assert_int_equal(env_close(&x->e), want_rc);
	hold_destroy(&x->hd);
}

#endif
