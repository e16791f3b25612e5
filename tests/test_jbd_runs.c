/* Issue 8 (data=journal streaming): the checkpoint writes a transaction's
 * consecutive home blocks as runs (one bio per up to BUF_RUN_MAX blocks),
 * the commit writes a descriptor group's consecutive log blocks as one
 * bio, and journal_checkpoint=early's thread writes committed buffers home
 * before a handle finds the log full, without ever forcing a commit.
 * Every case ends with the device contents checked (home blocks, or a
 * crash snapshot recovered).
 * nostall-test: concurrent
 *
 * The environment (test_jbd_env.h) is test_jbd.c's: a mem: device, queue,
 * buffer cache and journal in a contiguous block range (1 KiB blocks, a
 * 1024-block log: at most 256 buffers a transaction).
 */
#include "test_jbd_env.h"

#include <unistd.h>

/* Blocks first, first+step, ... (n of them) = v + i % 7, in handles of at
 * most 100 blocks, then a forced commit. */
static void write_blocks(struct env *e, uint64_t first, int n, int step, int v)
{
	for (int i = 0; i < n;) {
		int k = n - i < 100 ? n - i : 100;
		struct jbd_handle *h;
		assert_int_equal(jbd_handle_start(e->j, k, &h), 0);
		for (int x = 0; x < k; x++)
			put_block(h, e, first + (uint64_t)(i + x) * (uint64_t)step, v + (i + x) % 7, false);
		assert_int_equal(jbd_handle_stop(h), 0);
		i += k;
	}
	assert_int_equal(jbd_journal_force_commit(e->j), 0);
}

static void check_home(struct env *e, uint64_t first, int n, int step, int v)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(first_byte(e->d, first + (uint64_t)i * (uint64_t)step), v + i % 7);
}

/* 200 consecutive committed blocks go home in ceil(200 / BUF_RUN_MAX) = 2
 * bios (plus the tail move's flush and superblock); 200 scattered ones
 * (every other block) need a bio each. */
static void test_checkpoint_runs(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "journal_checkpoint=full");
	write_blocks(&e, DATA0, 200, 1, 0x10);
	struct buf_stats b0;
	buf_cache_stats(e.c, &b0);
	uint64_t before = bios_of(&e);
	assert_int_equal(jbd_journal_checkpoint(e.j), 0);
	uint64_t bios = bios_of(&e) - before;
	struct buf_stats b1;
	buf_cache_stats(e.c, &b1);
	assert_int_equal(b1.run_writes - b0.run_writes, 2);
	assert_int_equal(b1.run_blocks - b0.run_blocks, 200);
	assert_true(bios >= 2 && bios <= 4); /* 2 runs, flush, superblock */
	assert_int_equal(stats_of(&e).checkpoint_writes, 200);
	check_home(&e, DATA0, 200, 1, 0x10);

	write_blocks(&e, DATA0 + 1000, 200, 2, 0x30);
	before = bios_of(&e);
	assert_int_equal(jbd_journal_checkpoint(e.j), 0);
	assert_true(bios_of(&e) - before >= 200);
	check_home(&e, DATA0 + 1000, 200, 2, 0x30);
	assert_int_equal(env_close(&e), 0);
}

/* buf_write_run refuses buffers that are not consecutive (nothing
 * submitted, the buffers still locked) and cuts a long run at
 * BUF_RUN_MAX. */
static void test_write_run_api(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, NULL);
	enum { N = 300 };
	struct buffer_head *bh[N];
	for (int i = 0; i < N; i++) {
		int err = 0;
		bh[i] = buf_get(e.c, DATA0 + 2000 + (uint64_t)i, &err);
		assert_non_null(bh[i]);
		buf_lock(bh[i]);
		memset(buf_data(bh[i]), 0x40 + i % 7, BS);
		buf_set_uptodate(bh[i]);
	}
	uint64_t before = bios_of(&e);
	struct buffer_head *gap[2] = { bh[0], bh[2] };
	assert_int_equal(buf_write_run(2, gap, BLK_WRITE), -EINVAL);
	assert_true(buf_locked(bh[0]) && buf_locked(bh[2]));
	assert_int_equal(bios_of(&e), before);
	assert_int_equal(buf_write_run(N, bh, BLK_WRITE), 0);
	for (int i = 0; i < N; i++) {
		buf_wait(bh[i]);
		assert_false(buf_write_io_error(bh[i]));
		assert_true(buf_uptodate(bh[i]));
		buf_put(bh[i]);
	}
	assert_int_equal(bios_of(&e) - before, (N + BUF_RUN_MAX - 1) / BUF_RUN_MAX);
	for (int i = 0; i < N; i++)
		assert_int_equal(first_byte(e.d, DATA0 + 2000 + (uint64_t)i), 0x40 + i % 7);
	assert_int_equal(env_close(&e), 0);
}

/* A commit of 240 buffers: two descriptor groups (124 tags each at 1 KiB),
 * each one bio in a fresh log, plus the commit block. Recovery of a crash
 * image replays every block. */
static void test_commit_log_runs(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "journal_checkpoint=full");
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, 240, &h), 0);
	for (int i = 0; i < 240; i++)
		put_block(h, &e, DATA0 + (uint64_t)i, 0x50 + i % 7, i % 11 == 5); /* some escaped */
	assert_int_equal(jbd_handle_stop(h), 0);
	uint64_t before = bios_of(&e);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	uint64_t bios = bios_of(&e) - before;
	struct jbd_stats st = stats_of(&e);
	assert_int_equal(st.blocks_logged, 240);
	assert_int_equal(st.descriptor_blocks, 2);
	assert_true(bios >= 3 && bios <= 4); /* two groups, the commit block (+ a tail move) */
	struct dev *s = snapshot(&e);
	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(info.replayed, 240);
	for (int i = 0; i < 240; i++)
		if (i % 11 != 5)
			assert_int_equal(first_byte(s, DATA0 + (uint64_t)i), 0x50 + i % 7);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

/* Under 2.6.30-rc1 a synchronous commit's op unplugs per bio (WRITE_SYNC):
 * the log goes out a bio per block, as that era submitted it (its
 * preset's regression); an asynchronous commit there still uses runs. */
static void test_commit_rc1_per_block(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "preset=2.6.30-rc1", "barrier=0,journal_checkpoint=full");
	uint64_t b[20];
	for (int i = 0; i < 20; i++)
		b[i] = DATA0 + (uint64_t)i;
	uint64_t before = bios_of(&e);
	write_tx(&e, b, 20, 0x33, true);
	assert_int_equal(stats_of(&e).last_write_op, BLK_WRITE_SYNC);
	assert_true(bios_of(&e) - before >= 22); /* descriptor, 20 copies, commit block */
	write_tx(&e, b, 20, 0x34, false);
	before = bios_of(&e);
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	assert_true(bios_of(&e) - before <= 3); /* one run, the commit block (+ a tail move) */
	assert_int_equal(env_close(&e), 0);
}

/* journal_checkpoint=early: commits that leave less than three transactions'
 * room wake the checkpoint thread, which writes the oldest transactions
 * home before any handle finds the log short. The log math (1023 log
 * blocks, 32 kept free, ~260 a transaction may need): each transaction
 * here takes 203 blocks, so the second commit leaves 585 < 780 and the
 * thread writes the first transaction home; the third, the second. */
static void test_early_checkpoint(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "journal_checkpoint=early");
	for (int t = 0; t < 4; t++)
		write_blocks(&e, DATA0 + (uint64_t)t * 200, 200, 1, 0x60 + t);
	WAIT_FOR(stats_of(&e).early_checkpoint_writes >= 400, "the checkpoint thread");
	check_home(&e, DATA0, 200, 1, 0x60);
	check_home(&e, DATA0 + 200, 200, 1, 0x61);
	struct jbd_stats st = stats_of(&e);
	assert_int_equal(st.handle_waits_space, 0);
	assert_int_equal(st.checkpoints, 0);
	assert_true(st.early_checkpoints >= 1); /* one pass may cover both */
	assert_int_equal(st.commits, 4);
	assert_int_equal(env_close(&e), 0);
}

/* A buffer of the oldest transaction that the committing transaction
 * holds is left on the list by the background pass: the pass neither
 * forces nor waits for that commit (it is held in its data submit op, and
 * the pass completes meanwhile), the rest goes home, and a crash image
 * recovers the newest contents. T1 and T2 take 92 log blocks each, which
 * leaves 807 >= 780; the pass comes with the held commit's start: its
 * reserve leaves ~600 blocks, less than 780. */
static void test_early_never_forces(void **state)
{
	(void)state;
	struct held x;
	held_open(&x, "journal_checkpoint=early,commit=100");
	struct env *e = &x.e;
	const uint64_t shared = DATA0 + 3000;
	/* T1: shared + 89 blocks; T2: 90 blocks. */
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	put_block(h, e, shared, 0x70, false);
	assert_int_equal(jbd_handle_stop(h), 0);
	write_blocks(e, DATA0, 89, 1, 0x60);
	write_blocks(e, DATA0 + 200, 90, 1, 0x61);
	assert_int_equal(stats_of(e).early_checkpoint_writes, 0);
	/* T3: 199 blocks and shared again, committed on the hold. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(jbd_handle_start(e->j, 100, &h), 0);
		for (int k = 0; k < 100 - i; k++)
			put_block(h, e, DATA0 + 400 + (uint64_t)(i * 100 + k), 0x62 + (i * 100 + k) % 7, false);
		assert_int_equal(jbd_handle_stop(h), 0);
	}
	write_filed(e, shared, 0x71, x.ji);
	held_commit_start(&x);
	WAIT_FOR(stats_of(e).early_checkpoint_writes >= 89 + 90, "the checkpoint thread");
	check_home(e, DATA0, 89, 1, 0x60);
	check_home(e, DATA0 + 200, 90, 1, 0x61);
	struct jbd_stats st = stats_of(e);
	assert_int_equal(st.commits, 2);               /* T3 still held */
	assert_int_equal(first_byte(e->d, shared), 0); /* not written home */
	assert_int_equal(st.handle_waits_space, 0);
	held_commit_end(&x);
	assert_int_equal(jbd_journal_force_commit(e->j), 0);
	struct dev *s = snapshot(e);
	struct jbd_recovery_info info;
	recover_snapshot(e, s, &info);
	assert_int_equal(first_byte(s, shared), 0x71);
	for (int i = 0; i < 199; i++)
		assert_int_equal(first_byte(s, DATA0 + 400 + (uint64_t)i), 0x62 + i % 7);
	for (int i = 0; i < 89; i++)
		assert_int_equal(first_byte(s, DATA0 + (uint64_t)i), 0x60 + i % 7);
	for (int i = 0; i < 90; i++)
		assert_int_equal(first_byte(s, DATA0 + 200 + (uint64_t)i), 0x61 + i % 7);
	dev_close(s);
	held_close(&x, 0);
}

/* journal_checkpoint=full (2.6.30's, the era presets' default): nothing
 * goes home until a handle finds the log full. */
static void test_full_checkpoint_waits(void **state)
{
	(void)state;
	struct jbd_config c;
	jbd_config_default(&c);
	assert_false(c.checkpoint_full);
	assert_false(c.ordered_txn); /* jbd2's whole-mapping wait */
	jbd_config_era_defaults(&c, "2.6.30");
	assert_true(c.checkpoint_full);
	assert_true(c.ordered_txn); /* fs/jbd's per-transaction data lists */
	jbd_config_default(&c);
	assert_int_equal(jbd_config_parse(&c, "journal_checkpoint=early"), 0);
	jbd_config_era_defaults(&c, "2.6.30");
	assert_false(c.checkpoint_full);
	assert_int_equal(jbd_config_parse(&c, "journal_checkpoint=soon"), -EINVAL);

	struct env e;
	env_open(&e, NULL, "journal_checkpoint=full");
	for (int t = 0; t < 4; t++)
		write_blocks(&e, DATA0 + (uint64_t)t * 200, 200, 1, 0x20 + t);
	struct jbd_stats st = stats_of(&e);
	assert_int_equal(st.early_checkpoints, 0);
	assert_int_equal(st.checkpoint_writes, 0);
	assert_true(first_byte(e.d, DATA0) != 0x20);
	/* The fifth transaction needs room: its first handle checkpoints. */
	write_blocks(&e, DATA0 + 800, 200, 1, 0x24);
	st = stats_of(&e);
	assert_true(st.handle_waits_space >= 1);
	assert_true(st.checkpoint_writes >= 200);
	check_home(&e, DATA0, 200, 1, 0x20);
	assert_int_equal(env_close(&e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_runs),
		cmocka_unit_test(test_write_run_api),
		cmocka_unit_test(test_commit_log_runs),
		cmocka_unit_test(test_commit_rc1_per_block),
		cmocka_unit_test(test_early_checkpoint),
		cmocka_unit_test(test_early_never_forces),
		cmocka_unit_test(test_full_checkpoint_waits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
