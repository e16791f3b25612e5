/* Barriers (docs/block-layer.md, "Barriers"): 2.6.30's ordered sequence
 * under the era presets (drain, pre-flush, write, post-flush or FUA) and the
 * modern flush + FUA without a drain, on the gate device of test_blk_env.h.
 * nostall-test: concurrent
 */
#include "test_blk_env.h"

/* ---------------------------------------------------------- barriers */

static atomic_int barrier_seen_async; /* async completions when the barrier completed */
static atomic_int barrier_calls;
static atomic_int barrier_err;

static void barrier_end(struct bio *bio, int err)
{
	atomic_store(&barrier_seen_async, atomic_load(&async_done));
	atomic_store(&barrier_err, err);
	atomic_fetch_add(&barrier_calls, 1);
	free(bio);
}

/* Release the head command after checking it is `op` with `flags` and,
 * the queue being ordered, the only one at the device (a barrier step holds
 * back everything else; after the barrier, only one write is left). */
static void expect_head(struct gate *g, unsigned op, unsigned flags, uint64_t sector)
{
	WAIT_FOR(gate_held(g) >= 1);
	struct dev_io io = { 0 };
	assert_int_equal(gate_held(g), 1);
	assert_true(gate_head(g, &io));
	assert_int_equal(io.op, op);
	assert_int_equal(io.flags & ~(unsigned)DEV_IO_ALONE, flags); /* ALONE: a hint */
	if (op != DEV_OP_FLUSH)
		assert_int_equal(io.sector, sector);
	gate_release(g, 1);
}

/* Eight async writes at the device (held by the gate), then a barrier
 * (FLUSH|FUA commit-like write), then one more async write. */
static struct fixture barrier_setup(const char *opts, bool wcache)
{
	gate_wcache = wcache;
	struct fixture f = open_q(true, 64, opts);
	gate_wcache = false;
	atomic_store(&barrier_calls, 0);
	atomic_store(&barrier_seen_async, -1);
	for (int i = 0; i < 8; i++)
		submit(f.q, (uint64_t)i * 1000, 4096, BLK_WRITE);
	blk_queue_unplug(f.q);
	WAIT_FOR(gate_held(f.g) == 8);
	struct bio *b = mkbio(50000, 4096, BLK_WRITE_SYNC | BLK_REQ_FLUSH | BLK_REQ_FUA);
	b->end_io = barrier_end;
	assert_int_equal(blk_submit_bio(f.q, b), 0);
	submit(f.q, 60000, 4096, BLK_WRITE);
	blk_queue_unplug(f.q);
	return f;
}

/* 2.6.30's ordered barrier (preset 2.6.30: barrier_mode=drain): the eight
 * writes queued ahead of it reach the device and complete first, while the
 * one behind it waits; then pre-flush, the write (no FUA), post-flush; only
 * then the later write. Counted: 8 requests drained. */
static void test_barrier_drain_sequence(void **state)
{
	(void)state;
	struct fixture f = barrier_setup("preset=2.6.30", true);
	WAIT_FOR(gate_held(f.g) == 8);
	struct dev_io io;
	for (int i = 0; i < 8; i++) {
		assert_true(gate_head(f.g, &io));
		assert_int_equal(io.op, DEV_OP_WRITE);
		assert_true(io.sector < 50000);
		gate_release(f.g, 1);
	}
	expect_head(f.g, DEV_OP_FLUSH, 0, 0);
	expect_head(f.g, DEV_OP_WRITE, 0, 50000);
	expect_head(f.g, DEV_OP_FLUSH, 0, 0);
	WAIT_FOR(atomic_load(&barrier_calls) == 1);
	assert_int_equal(atomic_load(&barrier_seen_async), 8);
	assert_int_equal(atomic_load(&barrier_err), 0);
	expect_head(f.g, DEV_OP_WRITE, 0, 60000);
	struct blk_stats st;
	blk_queue_stats_get(f.q, &st);
	assert_int_equal(st.barriers, 1);
	assert_int_equal(st.barrier_drained, 8);
	assert_int_equal(st.barrier_wait.count, 1);
	close_q(&f);

	/* drain_fua: FUA on the write instead of the post-flush. */
	f = barrier_setup("preset=2.6.30,barrier_mode=drain_fua", true);
	WAIT_FOR(gate_held(f.g) == 8);
	gate_release(f.g, 8);
	expect_head(f.g, DEV_OP_FLUSH, 0, 0);
	expect_head(f.g, DEV_OP_WRITE, DEV_IO_FUA, 50000);
	WAIT_FOR(atomic_load(&barrier_calls) == 1);
	assert_int_equal(atomic_load(&barrier_seen_async), 8);
	expect_head(f.g, DEV_OP_WRITE, 0, 60000);
	close_q(&f);

	/* No write cache: the drain and the write, no flushes. */
	f = barrier_setup("preset=2.6.29", false);
	WAIT_FOR(gate_held(f.g) == 8);
	gate_release(f.g, 8);
	expect_head(f.g, DEV_OP_WRITE, 0, 50000);
	WAIT_FOR(atomic_load(&barrier_calls) == 1);
	assert_int_equal(atomic_load(&barrier_seen_async), 8);
	close_q(&f);
}

/* modern (nostall's default): one PREFLUSH+FUA command, no drain: the
 * barrier goes to the device while the writes before it are still there. */
static void test_barrier_modern_no_drain(void **state)
{
	(void)state;
	struct fixture f = barrier_setup(NULL, true);
	/* The barrier reaches the device beside the eight writes. */
	WAIT_FOR(gate_held(f.g) == 9);
	struct dev_io io;
	pthread_mutex_lock(&f.g->m);
	io = *f.g->held[8];
	pthread_mutex_unlock(&f.g->m);
	assert_int_equal(io.sector, 50000);
	assert_int_equal(io.flags, DEV_IO_PREFLUSH | DEV_IO_FUA);
	gate_release(f.g, 9);
	WAIT_FOR(atomic_load(&barrier_calls) == 1);
	struct blk_stats st;
	blk_queue_stats_get(f.q, &st);
	assert_int_equal(st.barriers, 0);
	assert_int_equal(st.barrier_drained, 0);
	close_q(&f);
}

/* DEV_IO_ALONE: set on the requests of a dispatch pass that are all the
 * queue has, at most BLK_ALONE_MAX (2) of them (a sync write on an idle
 * queue; a commit's data block and log run), never on a larger batch or
 * on one the device gets beside others. */
static void test_alone_hint(void **state)
{
	(void)state;
	struct fixture f = open_q(true, 64, NULL);
	submit(f.q, 1000, 4096, BLK_WRITE_SYNC);
	WAIT_FOR(gate_held(f.g) == 1);
	struct dev_io io = { 0 };
	assert_true(gate_head(f.g, &io));
	assert_true(io.flags & DEV_IO_ALONE);
	/* a second one while the first is at the device: not alone */
	submit(f.q, 9000, 4096, BLK_WRITE_SYNC);
	WAIT_FOR(gate_held(f.g) == 2);
	pthread_mutex_lock(&f.g->m);
	io = *f.g->held[1];
	pthread_mutex_unlock(&f.g->m);
	assert_false(io.flags & DEV_IO_ALONE);
	gate_release(f.g, 2);
	/* two plugged, unplugged at once: both alone */
	submit(f.q, 15000, 4096, BLK_WRITE);
	submit(f.q, 17000, 4096, BLK_WRITE);
	blk_queue_unplug(f.q);
	WAIT_FOR(gate_held(f.g) == 2);
	for (int i = 0; i < 2; i++) {
		pthread_mutex_lock(&f.g->m);
		io = *f.g->held[i];
		pthread_mutex_unlock(&f.g->m);
		assert_true(io.flags & DEV_IO_ALONE);
	}
	gate_release(f.g, 2);
	/* a plugged batch of three, unplugged at once: none alone */
	for (int i = 0; i < 3; i++)
		submit(f.q, 20000 + (uint64_t)i * 1000, 4096, BLK_WRITE);
	blk_queue_unplug(f.q);
	WAIT_FOR(gate_held(f.g) == 3);
	for (int i = 0; i < 3; i++) {
		pthread_mutex_lock(&f.g->m);
		io = *f.g->held[i];
		pthread_mutex_unlock(&f.g->m);
		assert_false(io.flags & DEV_IO_ALONE);
	}
	gate_release(f.g, 3);
	close_q(&f);
}

/* A step that fails completes the barrier with that error and ends the
 * sequence; the queue carries on. */
static void test_barrier_step_error(void **state)
{
	(void)state;
	struct fixture f = barrier_setup("preset=2.6.30", true);
	WAIT_FOR(gate_held(f.g) == 8);
	gate_release(f.g, 8);
	WAIT_FOR(gate_held(f.g) == 1);
	gate_release_err(f.g, 1, -EIO); /* the pre-flush */
	WAIT_FOR(atomic_load(&barrier_calls) == 1);
	assert_int_equal(atomic_load(&barrier_err), -EIO);
	expect_head(f.g, DEV_OP_WRITE, 0, 60000);
	close_q(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_barrier_drain_sequence),
		cmocka_unit_test(test_barrier_modern_no_drain),
		cmocka_unit_test(test_barrier_step_error),
		cmocka_unit_test(test_alone_hint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
