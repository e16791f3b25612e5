/* CFQ's async_ramp toggle (2.6.32's low_latency async depth ramp; off in
 * every preset, docs/block-layer.md): after a sync completion an async
 * queue keeps one request in the drive, one more per slice_sync elapsed;
 * off, an async queue alone keeps up to 4 x quantum. The elevator is
 * driven directly on a fake clock (the test plays blk: the fixture of
 * test_sched_cfq_env.h). */
#include "test_sched_cfq_env.h"

/* A CFQ elevator as blk sets it up for a rotational NCQ disk, async_ramp
 * on or off (read at dispatch time), and the two queues' contexts. */
static struct fx *ramp_open(bool ramp, struct blk_ioc **sync_ioc, struct blk_ioc **async_ioc)
{
	struct fx *f = fx_new(true, true);
	f->e.async_ramp = ramp;
	*sync_ioc = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	*async_ioc = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	return f;
}

/* Dispatch until the elevator holds back; the number dispatched. */
static int fill(struct fx *f)
{
	int k = 0;
	while (disp(f))
		k++;
	return k;
}

/* A sync write completes at t=0; then an async queue alone gets 24
 * requests. Returns how many it may have in the drive at t = at_ms. */
static int async_depth_after_sync(bool ramp, uint64_t at_ms)
{
	struct blk_ioc *sio, *aio;
	struct fx *f = ramp_open(ramp, &sio, &aio);
	struct request *s = sub(f, sio, 1000, BLK_WRITE_SYNC);
	assert_ptr_equal(disp(f), s);
	done(f, s);
	at(f, at_ms);
	for (int i = 0; i < 24; i++)
		sub(f, aio, 100000 + 8 * (uint64_t)i, BLK_WRITE);
	int k = fill(f);
	fx_free(f);
	return k;
}

static void test_ramp_depth(void **state)
{
	(void)state;
	/* Off (every preset): 4 x quantum for a queue alone. */
	assert_int_equal(async_depth_after_sync(false, 1), 16);
	/* On: one within the first slice_sync (100 ms), then one more per
	 * slice_sync, up to the cap. */
	assert_int_equal(async_depth_after_sync(true, 1), 1);
	assert_int_equal(async_depth_after_sync(true, 250), 2);
	assert_int_equal(async_depth_after_sync(true, 5000), 16);
}

/* The one request in the drive completes: the next may go (the queue is
 * never stuck at depth 0 with nothing in flight). */
static void test_ramp_progress(void **state)
{
	(void)state;
	struct blk_ioc *sio, *aio;
	struct fx *f = ramp_open(true, &sio, &aio);
	struct request *s = sub(f, sio, 1000, BLK_WRITE_SYNC);
	assert_ptr_equal(disp(f), s);
	done(f, s);
	at(f, 1);
	for (int i = 0; i < 4; i++)
		sub(f, aio, 100000 + 8 * (uint64_t)i, BLK_WRITE);
	for (int i = 0; i < 4; i++) {
		struct request *a = disp(f);
		assert_non_null(a);
		assert_null(disp(f));
		at(f, 2 + (uint64_t)i);
		done(f, a);
	}
	assert_true(f->e.ops->empty(&f->e));
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ramp_depth),
		cmocka_unit_test(test_ramp_progress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
