/* JBD journal: commit triggers, frozen copies, ordered-data inode lists,
 * escaping, revoke cancellation, log wrap, checkpoint tail advance, abort
 * stickiness, era write ops, feature refusal, options, nested handles, a
 * fault: device.
 * nostall-test: concurrent
 *
 * Each test builds mem: device -> queue -> buffer cache -> journal in a
 * contiguous block range (jbd_stack_open). "Crash" checks copy the device
 * as it is (what a power cut would leave with everything written so far
 * durable), recover the copy with jbd_journal_recover_dev and compare
 * blocks.
 */
#include "test_jbd_env.h"
#include "util/crc32c.h"

#include <inttypes.h>
#include <stdatomic.h>

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
	assert_false(c.data_err_ignore);
	assert_int_equal(jbd_config_parse(&c, "data_err=ignore"), 0);
	assert_true(c.data_err_ignore);
	assert_int_equal(jbd_config_parse(&c, "data_err=abort"), 0);
	assert_false(c.data_err_ignore);
	assert_int_equal(jbd_config_parse(&c, "data_err=maybe"), -EINVAL);
}

/* Era mount defaults and their precedence: an era preset brings 2009's
 * barrier=0, nostall's own default is barrier=1, and an explicit barrier=
 * or nobarrier wins in any order, in the config and through the stack (read
 * from the commit block's op). */
static void test_barrier_era_defaults(void **state)
{
	(void)state;
	struct jbd_config c;
	jbd_config_default(&c);
	jbd_config_era_defaults(&c, "nostall");
	assert_true(c.barrier);
	jbd_config_era_defaults(&c, "2.6.30");
	assert_false(c.barrier);
	jbd_config_default(&c);
	assert_int_equal(jbd_config_parse(&c, "barrier=1"), 0);
	jbd_config_era_defaults(&c, "2.6.29");
	assert_true(c.barrier);
	jbd_config_default(&c);
	jbd_config_era_defaults(&c, "2.6.30-rc1");
	assert_int_equal(jbd_config_parse(&c, "barrier=1"), 0);
	assert_true(c.barrier);
	jbd_config_default(&c);
	assert_int_equal(jbd_config_parse(&c, "nobarrier"), 0);
	jbd_config_era_defaults(&c, "nostall");
	assert_false(c.barrier);

	static const struct {
		const char *q, *j;
		bool barrier;
	} cases[] = {
		{ NULL, NULL, true },
		{ "preset=nostall", NULL, true },
		{ "preset=2.6.30", NULL, false },
		{ "preset=2.6.29", NULL, false },
		{ "preset=2.6.30", "barrier=1", true },
		{ NULL, "barrier=0", false },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct env e;
		env_open(&e, cases[i].q, cases[i].j);
		uint64_t b[] = { DATA0 };
		write_tx(&e, b, 1, 1, true);
		struct jbd_stats st;
		jbd_journal_stats(e.j, &st);
		unsigned want = cases[i].barrier ? BLK_REQ_FLUSH | BLK_REQ_FUA : 0;
		assert_int_equal(st.last_commit_op & (BLK_REQ_FLUSH | BLK_REQ_FUA), want);
		assert_int_equal(env_close(&e), 0);
	}
}

#define FLOOD_N 64
static atomic_int flood_done;

static void flood_end(struct bio *bio, int err)
{
	(void)err;
	atomic_fetch_add(&flood_done, 1);
	free(bio);
}

struct commit_arg {
	struct env *e;
	int rc;
	int flood_seen; /* flood completions when the sync commit returned */
};

static void *commit_main(void *p)
{
	struct commit_arg *a = p;
	struct jbd_handle *h;
	a->rc = jbd_handle_start(a->e->j, 1, &h);
	if (a->rc)
		return NULL;
	int err = 0;
	struct buffer_head *bh = buf_get(a->e->c, DATA0, &err);
	a->rc = bh ? jbd_get_create_access(h, bh) : (err ? err : -ENOMEM);
	if (!a->rc) {
		memset(buf_data(bh), 7, BS);
		buf_set_uptodate(bh);
		a->rc = jbd_dirty_metadata(h, bh);
	}
	buf_put(bh);
	jbd_handle_set_sync(h, true);
	int rc = jbd_handle_stop(h);
	if (!a->rc)
		a->rc = rc;
	a->flood_seen = atomic_load(&flood_done);
	return NULL;
}

/* barrier=1 beside an async flood queued ahead of the commit (sim:hdd,
 * frozen while the flood and the log writes queue). Under the 2.6.30
 * preset the commit block is an ordered barrier: every flood write queued
 * before it completes before the sync commit returns, and the block layer
 * counts them. Under nostall's modern barriers nothing is drained. */
static int barrier_flood_case(const char *qopts, struct blk_stats *st)
{
	struct env e;
	env_open_spec(&e, "sim:hdd,size=64M", qopts, "barrier=1", JLEN);
	static char payload[256 * 1024];
	atomic_store(&flood_done, 0);
	assert_int_equal(dev_sim_freeze(e.d, true), 0);
	blk_queue_stats_reset(e.q);
	for (int i = 0; i < FLOOD_N; i++) {
		struct bio *b = calloc(1, sizeof *b);
		*b = (struct bio){ .sector = 40000 + (uint64_t)i * 512, .size = sizeof payload, .data = payload,
				   .rw = BLK_WRITE, .end_io = flood_end };
		assert_int_equal(blk_submit_bio(e.q, b), 0);
	}
	struct commit_arg a = { .e = &e };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, commit_main, &a), 0);
	clock_sleep_ns(20 * NS_PER_MS); /* the log writes queue behind the frozen disk */
	assert_int_equal(dev_sim_freeze(e.d, false), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, 0);
	blk_queue_stats_get(e.q, st);
	blk_queue_unplug(e.q);
	while (atomic_load(&flood_done) < FLOOD_N)
		clock_sleep_ns(NS_PER_MS);
	assert_int_equal(env_close(&e), 0);
	return a.flood_seen;
}

static void test_barrier_drain_vs_modern(void **state)
{
	(void)state;
	struct blk_stats st;
	int seen = barrier_flood_case("preset=2.6.30", &st);
	printf("drain: %d/%d flood writes done at commit return, %" PRIu64 " drained by %" PRIu64 " barriers\n",
	       seen, FLOOD_N, st.barrier_drained, st.barriers);
	assert_int_equal(seen, FLOOD_N);
	assert_true(st.barriers >= 1);
	assert_true(st.barrier_drained >= 1);
	/* nostall's preset without its writeback throttling: the flood is
	 * submitted by this thread while the disk is frozen, and the limit
	 * would hold it before the disk is let go. */
	seen = barrier_flood_case("wbt_lat_usec=0", &st);
	printf("modern: %d/%d flood writes done at commit return\n", seen, FLOOD_N);
	assert_int_equal(st.barriers, 0);
	assert_int_equal(st.barrier_drained, 0);
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
	/* The commit thread now sleeps until a tick one interval on, and the
	 * next transaction, created before it, does not wake it: it must
	 * still commit at its own expiry. Then a tick finds nothing and the
	 * thread sleeps without a deadline: the transaction after that must
	 * wake it. Each commits by the timer, after its interval. */
	for (unsigned round = 2; round <= 3; round++) {
		if (round == 3)
			clock_sleep_ns(200 * NS_PER_MS); /* past the idle tick */
		uint64_t t0 = clock_now_ns();
		write_tx(&e, b, 1, 0x55 + (int)round, false);
		deadline = t0 + 2 * NS_PER_SEC;
		do {
			clock_sleep_ns(5 * NS_PER_MS);
			jbd_journal_stats(e.j, &st);
		} while (st.commits < round && clock_now_ns() < deadline);
		assert_int_equal(st.commits, round);
		assert_int_equal(st.commits_by[JBD_COMMIT_TIMER], round);
		assert_true(clock_now_ns() - t0 >= 50 * NS_PER_MS);
	}
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

/* Frozen copy: an ordered-data inode's submit op holds the commit of T1
 * (FLUSH, before the log copies) while a new transaction changes the same
 * buffer; T1's log must hold the old contents, and the commit waits for
 * the data. */
static void test_frozen_copy(void **state)
{
	(void)state;
	struct held x;
	held_open(&x, "commit=100");
	struct env *e = &x.e;
	uint64_t b[] = { DATA0 };
	write_filed(e, DATA0, 0xAA, x.ji);
	held_commit_start(&x);
	/* T1 is committing (FLUSH, copies not taken yet). */
	write_tx(e, b, 1, 0xBB, false);
	struct jbd_stats st;
	jbd_journal_stats(e->j, &st);
	assert_int_equal(st.frozen_copies, 1);
	assert_int_equal(st.commits, 0); /* the commit waits for the data */
	held_commit_end(&x);
	assert_int_equal(x.hd.submits, 1);
	assert_int_equal(x.hd.waits, 1);
	/* Crash now: T1 committed with 0xAA, T2 not committed. */
	struct dev *s = snapshot(e);
	struct jbd_recovery_info info;
	recover_snapshot(e, s, &info);
	assert_int_equal(info.transactions, 1);
	assert_int_equal(first_byte(s, DATA0), 0xAA);
	dev_close(s);
	/* The buffer itself has T2's contents and T2 commits them (the inode
	 * was not filed in T2: no data op). */
	assert_int_equal(jbd_journal_force_commit(e->j), 0);
	assert_int_equal(x.hd.submits, 1);
	s = snapshot(e);
	recover_snapshot(e, s, &info);
	assert_int_equal(first_byte(s, DATA0), 0xBB);
	dev_close(s);
	held_close(&x, 0);
}

/* An inode filed in T1 (twice: one call per commit) and, while T1 commits,
 * in T2: T1's commit calls its ops once, then it moves to T2, whose commit
 * calls them again; a transaction without it calls nothing. */
static void test_inode_refile(void **state)
{
	(void)state;
	struct held x;
	held_open(&x, "commit=100");
	struct env *e = &x.e;
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e->j, 2, &h), 0);
	uint32_t t1 = jbd_handle_tid(h);
	put_block(h, e, DATA0, 1, false);
	assert_int_equal(jbd_inode_file(h, x.ji), 0);
	assert_int_equal(jbd_inode_file(h, x.ji), 0);
	assert_int_equal(jbd_handle_stop(h), 0);
	held_commit_start(&x);
	/* T1 commits (held in its submit op); file the inode in T2. */
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	uint32_t t2 = jbd_handle_tid(h);
	assert_int_not_equal(t1, t2);
	put_block(h, e, DATA0 + 1, 2, false);
	assert_int_equal(jbd_inode_file(h, x.ji), 0);
	assert_int_equal(jbd_handle_stop(h), 0);
	held_commit_end(&x);
	assert_int_equal(x.hd.submits, 1);
	assert_int_equal(x.hd.waits, 1);
	assert_int_equal(x.hd.submit_tid[0], t1);
	assert_int_equal(x.hd.wait_tid[0], t1);
	/* T2 has it now. */
	assert_int_equal(jbd_journal_force_commit(e->j), 0);
	assert_int_equal(x.hd.submits, 2);
	assert_int_equal(x.hd.waits, 2);
	assert_int_equal(x.hd.submit_tid[1], t2);
	assert_int_equal(x.hd.wait_tid[1], t2);
	/* T3 without it: no call. */
	write_filed(e, DATA0 + 2, 3, NULL);
	assert_int_equal(jbd_journal_force_commit(e->j), 0);
	assert_int_equal(x.hd.submits, 2);
	struct jbd_stats st;
	jbd_journal_stats(e->j, &st);
	assert_int_equal(st.data_inodes, 2);
	held_close(&x, 0);
}

struct releaser {
	struct jbd_inode *ji;
	struct hold *hd;
	int rc;
};

static void *release_main(void *arg)
{
	struct releaser *r = arg;
	r->rc = jbd_inode_release(r->ji);
	pthread_mutex_lock(&r->hd->m);
	r->hd->released = 1;
	pthread_mutex_unlock(&r->hd->m);
	return NULL;
}

/* Eviction while the commit is in the inode's submit op: the release
 * waits for the op to return, and the commit does not call the freed
 * inode again. */
static void test_inode_release_waits(void **state)
{
	(void)state;
	struct held x;
	held_open(&x, "commit=100");
	write_filed(&x.e, DATA0, 1, x.ji);
	held_commit_start(&x);
	struct releaser r = { .ji = x.ji, .hd = &x.hd };
	x.ji = NULL;
	pthread_t rth;
	pthread_create(&rth, NULL, release_main, &r);
	clock_sleep_ns(50 * NS_PER_MS); /* time for a wrong release to return */
	pthread_mutex_lock(&x.hd.m);
	int early = x.hd.released;
	pthread_mutex_unlock(&x.hd.m);
	assert_int_equal(early, 0);
	held_commit_end(&x);
	pthread_join(rth, NULL);
	assert_int_equal(r.rc, 0);
	assert_int_equal(x.hd.released, 1);
	assert_int_equal(x.hd.submits, 1);
	/* The wait op ran only if the commit got there before the release
	 * took the inode off the list; never after it returned. */
	assert_true(x.hd.waits <= 1);
	assert_int_equal(x.hd.late_calls, 0);
	held_close(&x, 0);
}

/* A data error aborts the journal (data_err=abort, the default), or is
 * kept in the inode and reported once (data_err=ignore). */
static void test_inode_data_error(void **state)
{
	(void)state;
	for (int ignore = 0; ignore < 2; ignore++) {
		for (int in_wait = 0; in_wait < 2; in_wait++) {
			struct held x;
			held_open(&x, ignore ? "commit=100,data_err=ignore" : "commit=100");
			struct env *e = &x.e;
			x.hd.release = 1;
			if (in_wait)
				x.hd.fail_wait = -EIO;
			else
				x.hd.fail_submit = -EIO;
			write_filed(e, DATA0, 1, x.ji);
			int rc = jbd_journal_force_commit(e->j);
			struct jbd_stats st;
			jbd_journal_stats(e->j, &st);
			if (ignore) {
				assert_int_equal(rc, 0);
				assert_false(jbd_journal_aborted(e->j));
				assert_int_equal(st.data_errors, 1);
				assert_int_equal(st.commits, 1);
				assert_int_equal(jbd_inode_error(x.ji), -EIO);
				assert_int_equal(jbd_inode_error(x.ji), 0); /* reported once */
			} else {
				assert_int_equal(rc, -EIO);
				assert_int_equal(jbd_journal_errno(e->j), -EIO);
				assert_int_equal(st.commits, 0);
				struct jbd_handle *h;
				assert_int_equal(jbd_handle_start(e->j, 1, &h), -EROFS);
			}
			assert_int_equal(x.hd.waits, in_wait || ignore ? 1 : 0);
			held_close(&x, ignore ? 0 : -EIO);
		}
	}
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

/* With journal_checkpoint=full the writer's handles checkpoint; with
 * early the thread may do all of it (how much is timing). */
static void wrap_case(const char *jopts, bool early)
{
	struct env e;
	env_open(&e, NULL, jopts);
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
	if (early)
		assert_true(st.checkpoints + st.early_checkpoint_writes > 0);
	else
		assert_true(st.checkpoints > 0 && st.early_checkpoints == 0);
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

static void test_wrap_and_checkpoint(void **state)
{
	(void)state;
	wrap_case("commit=100,journal_checkpoint=full", false);
	wrap_case("commit=100", true);
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
	sb->s_feature_incompat = cpu_to_be32(0x1 | 0x2 | 0x4 | 0x10);
	sb->s_feature_compat = cpu_to_be32(0x1);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * 2, 2, sbb, 0), 0);
	struct jbd_recovery_info info;
	/* The v1 checksum with v3: contradictory, refused as corrupt. */
	int rc = jbd_journal_check_dev(d, &loc, &info);
	assert_int_equal(rc, -EUCLEAN);
	assert_non_null(strstr(err_last(rc), "v1 and v2/v3"));
	/* jbd2's 64bit and v3 checksums: recovery reads them, once the
	 * superblock's own checksum holds. */
	sb->s_feature_compat = 0;
	sb->s_checksum_type = JBD_CRC32C_CHKSUM;
	sb->s_checksum = 0;
	sb->s_checksum = cpu_to_be32(crc32c(~0u, sb, sizeof *sb));
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * 2, 2, sbb, 0), 0);
	assert_int_equal(jbd_journal_check_dev(d, &loc, &info), 0);
	/* A journal that will be written takes them too (issue 39; it refused
	 * them by name before) and keeps them: 64bit and v3 stay on the
	 * superblock after a clean unmount, ASYNC_COMMIT (not asked for) is
	 * cleared, and the superblock checksum is written with them. */
	char path[] = "/tmp/nostall-jbd-feat.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static unsigned char img[JSTART * BS + BS];
	memset(img, 0, sizeof img);
	memcpy(img + (size_t)JSTART * BS, sbb, BS);
	assert_int_equal(write(fd, img, sizeof img), (ssize_t)sizeof img);
	assert_int_equal(ftruncate(fd, 16 << 20), 0);
	char spec[64];
	snprintf(spec, sizeof spec, "file:%s", path);
	struct jbd_stack_params p;
	jbd_stack_params_default(&p);
	p.loc = loc;
	struct jbd_stack *s = NULL;
	rc = jbd_stack_open(spec, &p, &s);
	assert_int_equal(rc, 0);
	assert_int_equal(jbd_stack_close(s), 0);
	unsigned char back[BS];
	assert_int_equal(pread(fd, back, BS, (off_t)JSTART * BS), BS);
	close(fd);
	unlink(path);
	const struct jbd_superblock *bsb = (const void *)back;
	assert_int_equal(be32_to_cpu(bsb->s_feature_incompat), 0x1 | 0x2 | 0x10);
	assert_int_equal(be32_to_cpu(bsb->s_feature_compat), 0);
	assert_int_equal(be32_to_cpu(bsb->s_start), 0);
	assert_int_equal(bsb->s_checksum_type, JBD_CRC32C_CHKSUM);
	struct jbd_superblock zeroed = *bsb;
	zeroed.s_checksum = 0;
	assert_int_equal(be32_to_cpu(bsb->s_checksum), crc32c(~0u, &zeroed, sizeof zeroed));
	/* A superblock checksum that does not hold. */
	sb->s_checksum ^= cpu_to_be32(1);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * 2, 2, sbb, 0), 0);
	assert_int_equal(jbd_journal_check_dev(d, &loc, &info), -EBADMSG);
	/* fast_commit: refused by name even for recovery. */
	sb->s_feature_incompat = cpu_to_be32(0x1 | 0x10 | 0x20);
	sb->s_checksum = 0;
	sb->s_checksum = cpu_to_be32(crc32c(~0u, sb, sizeof *sb));
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * 2, 2, sbb, 0), 0);
	rc = jbd_journal_check_dev(d, &loc, &info);
	assert_int_equal(rc, -EOPNOTSUPP);
	assert_non_null(strstr(err_last(rc), "fast_commit"));
	sb->s_checksum_type = 0;
	sb->s_checksum = 0;
	sb->s_feature_incompat = cpu_to_be32(0x1 | 0x4);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * 2, 2, sbb, 0), 0);
	assert_int_equal(jbd_journal_check_dev(d, &loc, &info), 0);
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
	int syncs; /* sync handles run */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct jbd_client *c;
	struct jbd_client_params cp = { .j = w->e->j, .cache = w->e->c, .first_block = DATA0 + (uint64_t)w->id * 500,
					.nr_blocks = 500, .seed = 1000 + (uint64_t)w->id, .max_tx_blocks = 20,
					.sync_prob = 0.2, .revoke_prob = 0.05 };
	w->rc = jbd_client_create(&cp, &c);
	for (int i = 0; i < w->steps && !w->rc; i++) {
		uint64_t sync_ns = 0;
		w->rc = jbd_client_step(c, &sync_ns);
		w->syncs += sync_ns != 0;
	}
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
	/* Counters, not the 20 ms timer: a thread's sync handle returns only
	 * once its transaction committed, so its next handle is in a later
	 * transaction: every worker's sync handles are in distinct commits. */
	int most = 0;
	for (int i = 0; i < 4; i++)
		most = w[i].syncs > most ? w[i].syncs : most;
	printf("%" PRIu64 " commits (%" PRIu64 " sync, %" PRIu64 " timer), most sync handles in a thread %d\n",
	       st.commits, st.commits_by[JBD_COMMIT_SYNC], st.commits_by[JBD_COMMIT_TIMER], most);
	assert_true(most > 10);
	assert_true(st.commits >= (uint64_t)most);
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
		cmocka_unit_test(test_inode_refile),
		cmocka_unit_test(test_inode_release_waits),
		cmocka_unit_test(test_inode_data_error),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_revoke),
		cmocka_unit_test(test_wrap_and_checkpoint),
		cmocka_unit_test(test_abort_sticky),
		cmocka_unit_test(test_fault_aborts),
		cmocka_unit_test(test_era_ops),
		cmocka_unit_test(test_barrier_era_defaults),
		cmocka_unit_test(test_barrier_drain_vs_modern),
		cmocka_unit_test(test_journal_ioprio),
		cmocka_unit_test(test_features_refused),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
