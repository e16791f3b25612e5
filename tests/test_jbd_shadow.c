/* The journal's journal_shadow=wait mode (2.6.30's fs/jbd commit, brought
 * by the era presets): a handle asking for write access to a buffer whose
 * log copy the committing transaction is writing waits until that write
 * completes (BJ_Shadow), and the commit writes and waits for the ordered
 * data before the log. With journal_shadow=copy (nostall's default) the
 * same handle goes through at once. The log write is held by stopping the
 * queue's dispatch (blk_queue_stop), so "still waiting" is a state, not a
 * timing. Plus recovery after wraps, threads sharing blocks, and an abort
 * that ends a wait.
 * nostall-test: concurrent */
#include "test_jbd_env.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <unistd.h>

/* A second writer: write access to block b, then b = v (async handle). */
struct writer {
	struct env *e;
	uint64_t b;
	int v;
	int rc;
	atomic_int got_access; /* get_write_access returned */
	atomic_int done;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct jbd_handle *h;
	w->rc = jbd_handle_start(w->e->j, 1, &h);
	if (w->rc)
		goto out;
	int err = 0;
	struct buffer_head *bh = buf_get(w->e->c, w->b, &err);
	if (!bh) {
		w->rc = err ? err : -ENOMEM;
		jbd_handle_stop(h);
		goto out;
	}
	w->rc = jbd_get_write_access(h, bh);
	atomic_store(&w->got_access, 1);
	if (!w->rc) {
		memset(buf_data(bh), w->v, BS);
		w->rc = jbd_dirty_metadata(h, bh);
	}
	buf_put(bh);
	int src = jbd_handle_stop(h);
	if (!w->rc)
		w->rc = src;
out:
	atomic_store(&w->done, 1);
	return NULL;
}

/* Block DATA0 = 0x11 in a transaction, whose commit is then started with
 * the queue stopped: the log write of DATA0 is in flight (queued, not
 * done) when this returns. */
static void commit_held(struct env *e, struct committer *cm, pthread_t *th)
{
	uint64_t b[] = { DATA0 };
	write_tx(e, b, 1, 0x11, false);
	uint64_t before = bios_of(e);
	blk_queue_stop(e->q);
	cm->j = e->j;
	assert_int_equal(pthread_create(th, NULL, force_commit_main, cm), 0);
	/* a descriptor and DATA0's copy submitted (one bio: consecutive log
	 * blocks of a descriptor group go out as one run) */
	WAIT_FOR(bios_of(e) >= before + 1, "the log writes to be submitted");
}

static void test_shadow_wait(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "journal_shadow=wait");
	struct committer cm;
	pthread_t cth, wth;
	commit_held(&e, &cm, &cth);
	struct writer w = { .e = &e, .b = DATA0, .v = 0x22 };
	assert_int_equal(pthread_create(&wth, NULL, writer_main, &w), 0);
	WAIT_FOR(stats_of(&e).shadow_waits == 1, "the writer to wait on the shadowed buffer");
	/* The log write cannot complete while dispatch is stopped: the writer
	 * is still waiting, whatever the time. */
	usleep(50 * 1000);
	assert_int_equal(atomic_load(&w.got_access), 0);
	assert_int_equal(atomic_load(&w.done), 0);
	/* The log write completes: the writer proceeds, the commit finishes. */
	blk_queue_start(e.q);
	pthread_join(wth, NULL);
	pthread_join(cth, NULL);
	assert_int_equal(w.rc, 0);
	assert_int_equal(cm.rc, 0);
	struct jbd_stats st = stats_of(&e);
	assert_int_equal(st.shadow_waits, 1);
	assert_true(st.shadow_wait_ns > 0);
	/* The committed transaction logged 0x11, the writer's 0x22 is only in
	 * the running one. */
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(first_byte(s, DATA0), 0x11);
	dev_close(s);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	s = snapshot(&e);
	recover_snapshot(&e, s, &info);
	assert_int_equal(first_byte(s, DATA0), 0x22);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

/* nostall's default: the copy protects the log, nobody waits for it. */
static void test_copy_does_not_wait(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	struct committer cm;
	pthread_t cth, wth;
	commit_held(&e, &cm, &cth);
	struct writer w = { .e = &e, .b = DATA0, .v = 0x22 };
	assert_int_equal(pthread_create(&wth, NULL, writer_main, &w), 0);
	/* done while the log write is still held */
	WAIT_FOR(atomic_load(&w.done), "the writer (it must not wait for the held log write)");
	pthread_join(wth, NULL);
	assert_int_equal(w.rc, 0);
	assert_int_equal(stats_of(&e).shadow_waits, 0);
	blk_queue_start(e.q);
	pthread_join(cth, NULL);
	assert_int_equal(cm.rc, 0);
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(first_byte(s, DATA0), 0x11);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

/* A block the committing transaction does not log is not waited for. */
static void test_shadow_only_first_access(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "journal_shadow=wait");
	struct committer cm;
	pthread_t cth;
	commit_held(&e, &cm, &cth);
	struct writer w = { .e = &e, .b = DATA0 + 1, .v = 0x33 };
	pthread_t wth;
	assert_int_equal(pthread_create(&wth, NULL, writer_main, &w), 0);
	WAIT_FOR(atomic_load(&w.done), "a writer of a block the commit does not log");
	pthread_join(wth, NULL);
	assert_int_equal(w.rc, 0);
	assert_int_equal(stats_of(&e).shadow_waits, 0);
	blk_queue_start(e.q);
	pthread_join(cth, NULL);
	assert_int_equal(cm.rc, 0);
	assert_int_equal(env_close(&e), 0);
}

/* The commit's order: fs/jbd writes and waits for the ordered data before
 * any log block; the default overlaps them (the log is submitted before
 * the data wait). */
struct order_probe {
	struct env *e;
	uint64_t at_submit, at_wait;
};

static int probe_submit(void *ctx, uint32_t tid)
{
	struct order_probe *p = ctx;
	(void)tid;
	p->at_submit = bios_of(p->e);
	return 0;
}

static int probe_wait(void *ctx, uint32_t tid)
{
	struct order_probe *p = ctx;
	(void)tid;
	p->at_wait = bios_of(p->e);
	return 0;
}

static const struct jbd_inode_ops probe_ops = { .submit = probe_submit, .wait = probe_wait };

static void order_case(const char *jopts, bool data_first)
{
	struct env e;
	env_open(&e, NULL, jopts);
	struct order_probe p = { .e = &e };
	struct jbd_inode *ji;
	assert_int_equal(jbd_inode_create(e.j, &probe_ops, &p, &ji), 0);
	write_filed(&e, DATA0, 0x44, ji);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	if (data_first)
		assert_true(p.at_wait == p.at_submit);  /* no log block before the data wait */
	else
		assert_true(p.at_wait >= p.at_submit + 1); /* descriptor + copy already out (one run) */
	assert_int_equal(jbd_inode_release(ji), 0);
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(first_byte(s, DATA0), 0x44);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

static void test_commit_order(void **state)
{
	(void)state;
	order_case("journal_shadow=wait", true);
	order_case(NULL, false);
	order_case("journal_shadow=copy", false);
}

/* The era presets bring the wait; an explicit option wins. */
static void test_era_default(void **state)
{
	(void)state;
	static const struct {
		const char *preset, *opts;
		bool wait;
	} cases[] = {
		{ "2.6.29", NULL, true },       { "2.6.30-rc1", NULL, true },
		{ "2.6.30", NULL, true },       { "nostall", NULL, false },
		{ NULL, NULL, false },          { "2.6.30", "journal_shadow=copy", false },
		{ "nostall", "journal_shadow=wait", true },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jbd_config c;
		jbd_config_default(&c);
		assert_int_equal(jbd_config_parse(&c, cases[i].opts), 0);
		jbd_config_era_defaults(&c, cases[i].preset);
		assert_int_equal(c.shadow_wait, cases[i].wait);
	}
	struct jbd_config c;
	jbd_config_default(&c);
	assert_int_equal(jbd_config_parse(&c, "journal_shadow=later"), -EINVAL);
	jbd_config_default(&c);
	jbd_config_era_defaults_opts(&c, "nr_requests=64,preset=2.6.30");
	assert_true(c.shadow_wait);
}

/* The client model through log wraps in fs/jbd's mode: recovery gives the
 * model's contents at the last commit. */
static void test_wrap_recovery(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=100,journal_shadow=wait");
	struct jbd_client *c;
	struct jbd_client_params cp = { .j = e.j, .cache = e.c, .first_block = DATA0, .nr_blocks = 2000,
					.seed = 1234, .max_tx_blocks = 30, .sync_prob = 0.3, .revoke_prob = 0.1,
					.magic_every = 7, .track = true };
	assert_int_equal(jbd_client_create(&cp, &c), 0);
	struct jbd_stats st;
	int steps = 0;
	do {
		assert_int_equal(jbd_client_step(c, NULL), 0);
		jbd_journal_stats(e.j, &st);
	} while (st.wraps < 2 && ++steps < 5000);
	assert_true(st.wraps >= 2);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	jbd_journal_stats(e.j, &st);
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(info.end_tid - 1, st.commit_sequence);
	unsigned char want[BS], got[BS];
	for (uint64_t b = DATA0; b < DATA0 + 2000; b++) {
		int k = jbd_client_expected(c, st.commit_sequence, b, want);
		if (k < 0)
			continue;
		if (k == 0)
			memset(want, 0, BS);
		read_dev_block(s, b, got);
		if (memcmp(want, got, BS))
			fail_msg("block %llu differs after recovery", (unsigned long long)b);
	}
	dev_close(s);
	jbd_client_destroy(c);
	assert_int_equal(env_close(&e), 0);
}

/* Threads changing the same few blocks with sync handles and a short
 * commit interval: shadow waits happen and nobody deadlocks; every
 * thread's last value of its own block survives recovery. */
struct sharer {
	struct env *e;
	int id, steps, rc;
};

static void *sharer_main(void *arg)
{
	struct sharer *s = arg;
	for (int i = 0; i < s->steps && !s->rc; i++) {
		struct jbd_handle *h;
		if ((s->rc = jbd_handle_start(s->e->j, 3, &h)))
			break;
		/* two shared blocks and the thread's own */
		uint64_t blocks[] = { DATA0, DATA0 + 1, DATA0 + 10 + (uint64_t)s->id };
		for (int k = 0; k < 3 && !s->rc; k++) {
			int err = 0;
			struct buffer_head *bh = buf_get(s->e->c, blocks[k], &err);
			if (!bh) {
				s->rc = err ? err : -ENOMEM;
				break;
			}
			s->rc = buf_uptodate(bh) ? jbd_get_write_access(h, bh) : jbd_get_create_access(h, bh);
			if (!s->rc) {
				memset(buf_data(bh), k == 2 ? i & 0xff : s->id, BS);
				buf_set_uptodate(bh);
				s->rc = jbd_dirty_metadata(h, bh);
			}
			buf_put(bh);
		}
		jbd_handle_set_sync(h, i % 3 == 0);
		int src = jbd_handle_stop(h);
		if (!s->rc)
			s->rc = src;
	}
	return NULL;
}

static void test_threads_share(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=0.005,journal_shadow=wait");
	struct sharer w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct sharer){ .e = &e, .id = i, .steps = 200 };
		assert_int_equal(pthread_create(&th[i], NULL, sharer_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].rc, 0);
	}
	struct jbd_stats st = stats_of(&e);
	printf("%" PRIu64 " commits, %" PRIu64 " shadow waits (%.1f ms in all)\n", st.commits, st.shadow_waits,
	       (double)st.shadow_wait_ns / 1e6);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	for (int i = 0; i < 4; i++)
		assert_int_equal(first_byte(s, DATA0 + 10 + (uint64_t)i), (200 - 1) & 0xff);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

/* A log write that fails aborts the journal; the waiter wakes (its access
 * fails with -EROFS, or it got through before the abort: 0). */
static void test_abort_wakes_waiter(void **state)
{
	(void)state;
	struct env e;
	char spec[256];
	/* every write to the log area after the superblock fails */
	snprintf(spec, sizeof spec, "fault:mem:16M,op=write,sector=%u-%u", (JSTART + 1) * 2,
		 (JSTART + JLEN) * 2 - 1);
	env_open_spec(&e, spec, NULL, "journal_shadow=wait", JLEN);
	struct committer cm;
	pthread_t cth, wth;
	commit_held(&e, &cm, &cth); /* its log writes will fail */
	struct writer w = { .e = &e, .b = DATA0, .v = 0x22 };
	assert_int_equal(pthread_create(&wth, NULL, writer_main, &w), 0);
	WAIT_FOR(stats_of(&e).shadow_waits == 1, "the writer to wait on the shadowed buffer");
	blk_queue_start(e.q);
	pthread_join(cth, NULL);
	pthread_join(wth, NULL);
	assert_int_equal(cm.rc, -EIO);
	assert_true(jbd_journal_aborted(e.j));
	assert_true(w.rc == -EROFS || w.rc == -EIO || w.rc == 0);
	assert_int_not_equal(env_close(&e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shadow_wait),
		cmocka_unit_test(test_copy_does_not_wait),
		cmocka_unit_test(test_shadow_only_first_access),
		cmocka_unit_test(test_commit_order),
		cmocka_unit_test(test_era_default),
		cmocka_unit_test(test_wrap_recovery),
		cmocka_unit_test(test_threads_share),
		cmocka_unit_test(test_abort_wakes_waiter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
