/* JBD journal: commit triggers, frozen copies, escaping, revoke
 * cancellation, log wrap, checkpoint tail advance, abort stickiness, era
 * write ops, feature refusal, options, nested handles, a fault: device.
 * nostall-test: concurrent
 *
 * Each test builds mem: device -> queue -> buffer cache -> journal in a
 * contiguous block range. "Crash" checks copy the device as it is (what a
 * power cut would leave with everything written so far durable), recover
 * the copy with jbd_journal_recover_dev and compare blocks.
 */
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
	struct dev *d;
	struct blk_queue *q;
	struct buf_cache *c;
	struct jbd_journal *j;
	struct jbd_location loc;
};

static void env_open_spec(struct env *e, const char *spec, const char *qopts, const char *jopts, uint32_t jlen)
{
	memset(e, 0, sizeof *e);
	int rc = dev_open(spec, &e->d);
	if (rc)
		fail_msg("dev_open %s: %s", spec, err_last(rc));
	rc = blk_queue_create(e->d, qopts, &e->q);
	if (rc)
		fail_msg("queue: %s", err_last(rc));
	struct buf_params bp;
	buf_params_default(&bp);
	bp.writeback_interval_ms = 0;
	rc = buf_cache_create(e->q, BS, &bp, &e->c);
	assert_int_equal(rc, 0);
	e->loc = (struct jbd_location){ .block_size = BS, .first_block = JSTART, .nr_blocks = jlen };
	uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	rc = jbd_journal_create(e->d, &e->loc, uuid);
	if (rc)
		fail_msg("create: %s", err_last(rc));
	struct jbd_params p = { .q = e->q, .cache = e->c, .loc = e->loc };
	jbd_config_default(&p.cfg);
	rc = jbd_config_parse(&p.cfg, jopts);
	if (rc)
		fail_msg("opts: %s", err_last(rc));
	rc = jbd_journal_load(&p, &e->j);
	if (rc)
		fail_msg("load: %s", err_last(rc));
}

static void env_open(struct env *e, const char *qopts, const char *jopts)
{
	env_open_spec(e, "mem:16M", qopts, jopts, JLEN);
}

static int env_close(struct env *e)
{
	int rc = 0;
	if (e->j)
		rc = jbd_journal_destroy(e->j);
	if (e->c) {
		buf_cache_sync(e->c);
		buf_cache_destroy(e->c);
	}
	if (e->q)
		blk_queue_destroy(e->q);
	dev_close(e->d);
	return rc;
}

/* Write one block through a handle: contents = byte `v` (first 4 bytes
 * optional magic). */
static void put_block(struct jbd_handle *h, struct env *e, uint64_t b, int v, bool magic)
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

static void write_tx(struct env *e, const uint64_t *blocks, int n, int v, bool sync)
{
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e->j, n, &h), 0);
	for (int i = 0; i < n; i++)
		put_block(h, e, blocks[i], v, false);
	jbd_handle_set_sync(h, sync);
	assert_int_equal(jbd_handle_stop(h), 0);
}

/* Copy the whole device to a new mem: device (the crash image). */
static struct dev *snapshot(struct env *e)
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

static void read_dev_block(struct dev *d, uint64_t b, void *buf)
{
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, b * (BS / 512), BS / 512, buf, 0), 0);
}

static int first_byte(struct dev *d, uint64_t b)
{
	unsigned char buf[BS];
	read_dev_block(d, b, buf);
	return buf[100];
}

static void recover_snapshot(struct env *e, struct dev *s, struct jbd_recovery_info *info)
{
	int rc = jbd_journal_recover_dev(s, &e->loc, 0, info);
	if (rc)
		fail_msg("recover: %s", err_last(rc));
}

/* ------------------------------------------------------------ tests */

static void test_config(void **state)
{
	(void)state;
	struct jbd_config c;
	jbd_config_default(&c);
	assert_int_equal(c.commit_interval_ms, 5000);
	assert_true(c.barrier);
	assert_int_equal(c.ioprio_class, BLK_IOPRIO_CLASS_BE);
	assert_int_equal(c.ioprio_level, 4);
	assert_int_equal(jbd_config_parse(&c, "commit=2,barrier=0,journal_ioprio=RT/4"), 0);
	assert_int_equal(c.commit_interval_ms, 2000);
	assert_false(c.barrier);
	assert_int_equal(c.ioprio_class, BLK_IOPRIO_CLASS_RT);
	assert_int_equal(jbd_config_set(&c, "data", "ordered"), -ENOENT);
	assert_int_equal(jbd_config_parse(&c, "data=ordered"), -EINVAL);
	assert_int_equal(jbd_config_parse(&c, "commit=x"), -EINVAL);
	assert_int_equal(jbd_config_parse(&c, "commit=0"), 0);
	assert_int_equal(c.commit_interval_ms, 5000);
}

static void test_clean_cycle(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	uint64_t b[] = { DATA0, DATA0 + 1 };
	write_tx(&e, b, 2, 0x11, true);
	assert_int_equal(env_close(&e) == 0, 1);
	/* Reopen the same image: clean journal, home blocks written. */
	struct dev *d;
	assert_int_equal(dev_open("mem:16M", &d), 0); /* (fresh: only checks the API) */
	dev_close(d);
}

static void test_sync_commit_and_recovery(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	uint64_t b[] = { DATA0, DATA0 + 5, DATA0 + 9 };
	write_tx(&e, b, 3, 0x22, true);
	struct jbd_stats st;
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.commits, 1);
	assert_int_equal(st.commits_by[JBD_COMMIT_SYNC], 1);
	assert_int_equal(st.blocks_logged, 3);
	/* Home blocks are not written yet (no checkpoint): a crash now must
	 * replay them from the log. */
	struct dev *s = snapshot(&e);
	assert_int_equal(first_byte(s, DATA0), 0);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_true(info.needed);
	assert_int_equal(info.transactions, 1);
	assert_int_equal(info.replayed, 3);
	assert_int_equal(first_byte(s, DATA0), 0x22);
	assert_int_equal(first_byte(s, DATA0 + 9), 0x22);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

static void test_uncommitted_ignored(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=100");
	uint64_t b[] = { DATA0 };
	write_tx(&e, b, 1, 0x33, true);
	write_tx(&e, b, 1, 0x44, false); /* running, not committed */
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(first_byte(s, DATA0), 0x33);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

static void test_timer_commit(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=0.05");
	uint64_t b[] = { DATA0 };
	write_tx(&e, b, 1, 0x55, false);
	uint64_t deadline = clock_now_ns() + 2 * NS_PER_SEC;
	struct jbd_stats st;
	do {
		clock_sleep_ns(10 * NS_PER_MS);
		jbd_journal_stats(e.j, &st);
	} while (st.commits == 0 && clock_now_ns() < deadline);
	assert_int_equal(st.commits, 1);
	assert_int_equal(st.commits_by[JBD_COMMIT_TIMER], 1);
	assert_int_equal(st.last_write_op, BLK_WRITE); /* async commit */
	assert_int_equal(env_close(&e), 0);
}

static void test_full_and_nofit(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=100");
	int max = JLEN / 4;
	/* A transaction filled to a quarter of the log commits at stop. */
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, max, &h), 0);
	for (int i = 0; i < max; i++)
		put_block(h, &e, DATA0 + (uint64_t)i, 1, false);
	assert_int_equal(jbd_handle_stop(h), 0);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	struct jbd_stats st;
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.commits_by[JBD_COMMIT_FULL], 1);
	/* A handle that does not fit in the running transaction commits it. */
	assert_int_equal(jbd_handle_start(e.j, max / 2 + 10, &h), 0);
	uint32_t t1 = jbd_handle_tid(h);
	for (int i = 0; i < max / 2 + 10; i++)
		put_block(h, &e, DATA0 + (uint64_t)i, 2, false);
	assert_int_equal(jbd_handle_stop(h), 0);
	assert_int_equal(jbd_handle_start(e.j, max / 2 + 10, &h), 0);
	uint32_t t2 = jbd_handle_tid(h);
	assert_int_not_equal(t1, t2);
	assert_int_equal(jbd_handle_stop(h), 0);
	assert_int_equal(jbd_log_wait_commit(e.j, t1), 0);
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.commits_by[JBD_COMMIT_NOFIT], 1);
	assert_int_equal(st.handle_waits_nofit, 1);
	/* Too many credits for any transaction. */
	assert_int_equal(jbd_handle_start(e.j, max + 1, &h), -ENOSPC);
	assert_int_equal(env_close(&e), 0);
}

static void test_nested_handles(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	struct jbd_handle *h1, *h2;
	assert_int_equal(jbd_handle_start(e.j, 2, &h1), 0);
	assert_int_equal(jbd_handle_start(e.j, 2, &h2), 0);
	assert_ptr_equal(h1, h2);
	assert_ptr_equal(jbd_handle_current(), h1);
	put_block(h2, &e, DATA0, 7, false);
	assert_int_equal(jbd_handle_stop(h2), 0);
	assert_ptr_equal(jbd_handle_current(), h1);
	assert_int_equal(jbd_handle_stop(h1), 0);
	assert_null(jbd_handle_current());
	assert_int_equal(env_close(&e), 0);
}

/* Frozen copy: the data-flush hook holds the commit of T1 in FLUSH while a
 * new transaction changes the same buffer; T1's log must hold the old
 * contents. */
struct hold {
	pthread_mutex_t m;
	pthread_cond_t c;
	int entered, release;
};

static int hold_hook(void *ctx, uint32_t tid)
{
	struct hold *h = ctx;
	pthread_mutex_lock(&h->m);
	h->entered++;
	pthread_cond_broadcast(&h->c);
	while (!h->release)
		pthread_cond_wait(&h->c, &h->m);
	pthread_mutex_unlock(&h->m);
	(void)tid;
	return 0;
}

struct committer {
	struct jbd_journal *j;
	int rc;
};

static void *force_commit_main(void *arg)
{
	struct committer *c = arg;
	c->rc = jbd_journal_force_commit(c->j);
	return NULL;
}

static void test_frozen_copy(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=100");
	struct hold hd = { .entered = 0 };
	pthread_mutex_init(&hd.m, NULL);
	pthread_cond_init(&hd.c, NULL);
	jbd_journal_set_data_flush(e.j, hold_hook, &hd);
	uint64_t b[] = { DATA0 };
	write_tx(&e, b, 1, 0xAA, false);
	struct committer cm = { .j = e.j };
	pthread_t th;
	pthread_create(&th, NULL, force_commit_main, &cm);
	pthread_mutex_lock(&hd.m);
	while (!hd.entered)
		pthread_cond_wait(&hd.c, &hd.m);
	pthread_mutex_unlock(&hd.m);
	/* T1 is committing (FLUSH, copies not taken yet). */
	write_tx(&e, b, 1, 0xBB, false);
	struct jbd_stats st;
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.frozen_copies, 1);
	pthread_mutex_lock(&hd.m);
	hd.release = 1;
	pthread_cond_broadcast(&hd.c);
	pthread_mutex_unlock(&hd.m);
	pthread_join(th, NULL);
	assert_int_equal(cm.rc, 0);
	/* Crash now: T1 committed with 0xAA, T2 not committed. */
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(info.transactions, 1);
	assert_int_equal(first_byte(s, DATA0), 0xAA);
	dev_close(s);
	/* The buffer itself has T2's contents and T2 commits them. */
	jbd_journal_set_data_flush(e.j, NULL, NULL);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	s = snapshot(&e);
	recover_snapshot(&e, s, &info);
	assert_int_equal(first_byte(s, DATA0), 0xBB);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
	pthread_mutex_destroy(&hd.m);
	pthread_cond_destroy(&hd.c);
}

static void test_escaping(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, 2, &h), 0);
	put_block(h, &e, DATA0, 0x5C, true);
	put_block(h, &e, DATA0 + 1, 0x5D, false);
	jbd_handle_set_sync(h, true);
	assert_int_equal(jbd_handle_stop(h), 0);
	struct jbd_stats st;
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.escaped, 1);
	/* The logged copy has its magic zeroed; recovery restores it. */
	unsigned char buf[BS];
	read_dev_block(e.d, JSTART + 2, buf); /* sb, descriptor, then copy 1 */
	uint32_t first4;
	memcpy(&first4, buf, 4);
	assert_int_equal(first4, 0);
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	read_dev_block(s, DATA0, buf);
	memcpy(&first4, buf, 4);
	assert_int_equal(be32_to_cpu(first4), JBD_MAGIC_NUMBER);
	assert_int_equal(buf[100], 0x5C);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

static void test_revoke(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	uint64_t x = DATA0, y = DATA0 + 1;
	uint64_t both[] = { x, y };
	write_tx(&e, both, 2, 0x10, true);
	/* T2: revoke x and y; journal x again (cancels x's revoke). */
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, 2, &h), 0);
	assert_int_equal(jbd_revoke(h, x, NULL), 0);
	assert_int_equal(jbd_revoke(h, y, NULL), 0);
	put_block(h, &e, x, 0x20, false);
	jbd_handle_set_sync(h, true);
	assert_int_equal(jbd_handle_stop(h), 0);
	struct jbd_stats st;
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.revoke_blocks, 1);
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	/* T1 may already have left the log (all its buffers were re-logged or
	 * forgotten by T2); T2 and its one revoke record are there. */
	assert_true(info.transactions >= 1);
	assert_int_equal(info.revoke_records, 1); /* only y's survived */
	assert_int_equal(first_byte(s, x), 0x20);  /* T2's copy replayed */
	assert_int_equal(first_byte(s, y), 0);     /* T1's copy revoked, never home */
	dev_close(s);
	/* y's revoked buffer is never checkpointed home either. */
	assert_int_equal(jbd_journal_flush(e.j), 0);
	assert_int_equal(first_byte(e.d, y), 0);
	assert_int_equal(first_byte(e.d, x), 0x20);
	assert_int_equal(env_close(&e), 0);
}

static void test_wrap_and_checkpoint(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=100");
	struct jbd_client *c;
	struct jbd_client_params cp = { .j = e.j, .cache = e.c, .first_block = DATA0, .nr_blocks = 3000,
					.seed = 77, .max_tx_blocks = 40, .sync_prob = 0.3, .revoke_prob = 0.1,
					.magic_every = 5, .track = true };
	assert_int_equal(jbd_client_create(&cp, &c), 0);
	struct jbd_stats st;
	int steps = 0;
	do {
		assert_int_equal(jbd_client_step(c, NULL), 0);
		jbd_journal_stats(e.j, &st);
		steps++;
	} while (st.wraps < 3 && steps < 5000);
	assert_true(st.wraps >= 3);
	assert_true(st.checkpoints > 0);
	assert_true(st.tail_advances > 0);
	/* Crash now and compare with the model at the last committed tid. */
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	jbd_journal_stats(e.j, &st);
	uint32_t last = st.commit_sequence;
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(info.end_tid - 1, last);
	unsigned char want[BS], got[BS];
	int checked = 0;
	for (uint64_t b = DATA0; b < DATA0 + 3000; b++) {
		int k = jbd_client_expected(c, last, b, want);
		if (k < 0)
			continue;
		if (k == 0)
			memset(want, 0, BS);
		read_dev_block(s, b, got);
		if (memcmp(want, got, BS))
			fail_msg("block %llu differs after recovery", (unsigned long long)b);
		checked++;
	}
	assert_true(checked > 1000);
	dev_close(s);
	/* Flush: everything home, the log empty (tail == head), sb says so. */
	assert_int_equal(jbd_journal_flush(e.j), 0);
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.tail, st.head);
	unsigned char sbb[BS];
	read_dev_block(e.d, JSTART, sbb);
	const struct jbd_superblock *sb = (const void *)sbb;
	assert_int_equal(be32_to_cpu(sb->s_start), st.tail);
	assert_int_equal(be32_to_cpu(sb->s_sequence), st.tail_sequence);
	jbd_client_destroy(c);
	assert_int_equal(env_close(&e), 0);
	(void)got;
}

static void test_abort_sticky(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	uint64_t b[] = { DATA0 };
	write_tx(&e, b, 1, 0x66, true);
	jbd_journal_abort(e.j, -EIO);
	assert_true(jbd_journal_aborted(e.j));
	assert_int_equal(jbd_journal_errno(e.j), -EIO);
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, 1, &h), -EROFS);
	jbd_journal_abort(e.j, -ENOSPC); /* the first error stays */
	assert_int_equal(jbd_journal_errno(e.j), -EIO);
	assert_int_equal(jbd_handle_start(e.j, 1, &h), -EROFS);
	unsigned char sbb[BS];
	read_dev_block(e.d, JSTART, sbb);
	const struct jbd_superblock *sb = (const void *)sbb;
	assert_int_equal((int32_t)be32_to_cpu(sb->s_errno), -EIO);
	assert_int_not_equal(be32_to_cpu(sb->s_start), 0); /* still needs replay */
	assert_int_equal(env_close(&e), -EIO);
}

static void test_fault_aborts(void **state)
{
	(void)state;
	struct env e;
	/* Fail writes in the log area after the load's superblock write. */
	char spec[256];
	snprintf(spec, sizeof spec, "fault:mem:16M,op=write,sector=%u-%u,after=1", (JSTART + 1) * 2,
		 (JSTART + JLEN) * 2 - 1);
	env_open_spec(&e, spec, NULL, NULL, JLEN);
	uint64_t b[] = { DATA0 };
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, 1, &h), 0);
	put_block(h, &e, b[0], 0x77, false);
	jbd_handle_set_sync(h, true);
	assert_int_equal(jbd_handle_stop(h), -EIO);
	assert_true(jbd_journal_aborted(e.j));
	assert_int_equal(jbd_handle_start(e.j, 1, &h), -EROFS);
	assert_true(dev_fault_injected(e.d) > 0);
	assert_int_not_equal(env_close(&e), 0);
}

static void test_era_ops(void **state)
{
	(void)state;
	static const struct {
		const char *q, *j;
		unsigned write_op, commit_op;
	} cases[] = {
		{ "preset=2.6.29", "barrier=0", BLK_WRITE, BLK_WRITE },
		{ "preset=2.6.30-rc1", "barrier=0", BLK_WRITE_SYNC, BLK_WRITE_SYNC },
		{ "preset=2.6.30", "barrier=0", BLK_WRITE_SYNC_PLUG, BLK_WRITE_SYNC },
		{ "preset=2.6.30", "barrier=1", BLK_WRITE_SYNC_PLUG, BLK_WRITE_SYNC | BLK_REQ_FLUSH | BLK_REQ_FUA },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct env e;
		env_open(&e, cases[i].q, cases[i].j);
		uint64_t b[] = { DATA0, DATA0 + 1 };
		write_tx(&e, b, 2, 1, true);
		struct jbd_stats st;
		jbd_journal_stats(e.j, &st);
		assert_int_equal(st.last_write_op, cases[i].write_op);
		assert_int_equal(st.last_commit_op, cases[i].commit_op);
		write_tx(&e, b, 2, 2, false);
		assert_int_equal(jbd_journal_force_commit(e.j), 0);
		jbd_journal_stats(e.j, &st);
		assert_int_equal(st.last_write_op, BLK_WRITE); /* not synchronous */
		assert_int_equal(env_close(&e), 0);
	}
}

/* journal_ioprio: the commit thread submits the log at that class (seed
 * patch 010's RT/4), and at BE by default. Read from the queue's count of
 * device requests per ioprio class. */
static void test_journal_ioprio(void **state)
{
	(void)state;
	static const struct {
		const char *j;
		bool rt;
	} cases[] = { { "barrier=0", false }, { "barrier=0,journal_ioprio=RT/4", true },
		      { "barrier=1,journal_ioprio=RT/0", true } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct env e;
		env_open(&e, "scheduler=cfq", cases[i].j);
		blk_queue_stats_reset(e.q);
		uint64_t b[] = { DATA0, DATA0 + 1, DATA0 + 2 };
		write_tx(&e, b, 3, 1, true);
		struct blk_stats st;
		blk_queue_stats_get(e.q, &st);
		if (cases[i].rt)
			assert_true(st.class_requests[BLK_IOPRIO_CLASS_RT] > 0);
		else
			assert_int_equal(st.class_requests[BLK_IOPRIO_CLASS_RT], 0);
		assert_int_equal(env_close(&e), 0);
	}
}

static void test_features_refused(void **state)
{
	(void)state;
	struct dev *d;
	assert_int_equal(dev_open("mem:16M", &d), 0);
	struct jbd_location loc = { .block_size = BS, .first_block = JSTART, .nr_blocks = JLEN };
	assert_int_equal(jbd_journal_create(d, &loc, NULL), 0);
	unsigned char sbb[BS];
	read_dev_block(d, JSTART, sbb);
	struct jbd_superblock *sb = (void *)sbb;
	sb->s_feature_incompat = cpu_to_be32(0x1 | 0x2 | 0x10);
	sb->s_feature_compat = cpu_to_be32(0x1);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * 2, 2, sbb, 0), 0);
	struct jbd_recovery_info info;
	int rc = jbd_journal_check_dev(d, &loc, &info);
	assert_int_equal(rc, -EOPNOTSUPP);
	const char *msg = err_last(rc);
	assert_non_null(strstr(msg, "64bit"));
	assert_non_null(strstr(msg, "checksum v3"));
	assert_non_null(strstr(msg, "checksum (v1)"));
	/* v1 superblock: readable (no features). */
	sb->s_header.h_blocktype = cpu_to_be32(JBD_SUPERBLOCK_V1);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * 2, 2, sbb, 0), 0);
	assert_int_equal(jbd_journal_check_dev(d, &loc, &info), 0);
	assert_int_equal(info.sb_version, 1);
	dev_close(d);
}

/* Many threads with handles, sync and not, while the log wraps. */
struct worker {
	struct env *e;
	int id, steps, rc;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct jbd_client *c;
	struct jbd_client_params cp = { .j = w->e->j, .cache = w->e->c, .first_block = DATA0 + (uint64_t)w->id * 500,
					.nr_blocks = 500, .seed = 1000 + (uint64_t)w->id, .max_tx_blocks = 20,
					.sync_prob = 0.2, .revoke_prob = 0.05 };
	w->rc = jbd_client_create(&cp, &c);
	for (int i = 0; i < w->steps && !w->rc; i++)
		w->rc = jbd_client_step(c, NULL);
	jbd_client_destroy(c);
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=0.02");
	struct worker w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .e = &e, .id = i, .steps = 150 };
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].rc, 0);
	}
	struct jbd_stats st;
	jbd_journal_stats(e.j, &st);
	assert_true(st.commits > 10);
	assert_int_equal(env_close(&e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_clean_cycle),
		cmocka_unit_test(test_sync_commit_and_recovery),
		cmocka_unit_test(test_uncommitted_ignored),
		cmocka_unit_test(test_timer_commit),
		cmocka_unit_test(test_full_and_nofit),
		cmocka_unit_test(test_nested_handles),
		cmocka_unit_test(test_frozen_copy),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_revoke),
		cmocka_unit_test(test_wrap_and_checkpoint),
		cmocka_unit_test(test_abort_sticky),
		cmocka_unit_test(test_fault_aborts),
		cmocka_unit_test(test_era_ops),
		cmocka_unit_test(test_journal_ioprio),
	cmocka_unit_test(test_features_refused),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
