/* CFQ's async_ramp toggle (2.6.32's low_latency async depth ramp; off in
 * every preset, docs/block-layer.md): after a sync completion an async
 * queue keeps one request in the drive, one more per slice_sync elapsed;
 * off, an async queue alone keeps up to 4 x quantum. The elevator is
 * driven directly on a fake clock (the test plays blk). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "blk/sched/cfq.h"
#include "util/clock.h"

#define T0 (1000 * NS_PER_SEC)
#define MAXRQ 64

struct rfx {
	struct elevator e;
	struct request rq[MAXRQ];
	bool busy[MAXRQ];
	int n;
	struct blk_ioc *sync_ioc, *async_ioc;
};

static struct rfx R;

static struct rfx *rfx_open(bool ramp)
{
	struct rfx *f = &R;
	memset(f, 0, sizeof *f);
	f->e.ops = &elv_cfq_ops;
	f->e.rotational = true;
	f->e.queuing = true;
	f->e.honour_noidle = true;
	f->e.single_dispatch = true;
	f->e.async_ramp = ramp;
	f->e.now_ns = T0;
	assert_int_equal(f->e.ops->init(&f->e), 0);
	f->sync_ioc = blk_ioc_create(BLK_IOPRIO_CLASS_BE, 4);
	f->async_ioc = blk_ioc_create(BLK_IOPRIO_CLASS_BE, 4);
	assert_non_null(f->sync_ioc);
	assert_non_null(f->async_ioc);
	return f;
}

static void rfx_at(struct rfx *f, uint64_t ms) { f->e.now_ns = T0 + ms * NS_PER_MS; }

static struct request *rfx_add(struct rfx *f, struct blk_ioc *ioc, uint64_t sector, unsigned flags)
{
	assert_true(f->n < MAXRQ);
	struct request *rq = &f->rq[f->n++];
	memset(rq, 0, sizeof *rq);
	rq->sector = sector;
	rq->nr_sectors = 8;
	rq->flags = flags;
	rq->ioc = ioc;
	list_init(&rq->elv_fifo);
	list_init(&rq->elv_sort);
	rq->alloc_ns = rq->insert_ns = f->e.now_ns;
	assert_int_equal(f->e.ops->set_request(&f->e, rq), 0);
	f->e.ops->add_request(&f->e, rq);
	return rq;
}

static struct request *rfx_dispatch(struct rfx *f)
{
	struct request *rq = f->e.ops->dispatch(&f->e, false);
	if (rq) {
		f->e.in_driver[rq_is_sync(rq)]++;
		f->busy[rq - f->rq] = true;
	}
	return rq;
}

static void rfx_complete(struct rfx *f, struct request *rq)
{
	assert_true(f->busy[rq - f->rq]);
	f->busy[rq - f->rq] = false;
	f->e.in_driver[rq_is_sync(rq)]--;
	f->e.ops->completed(&f->e, rq);
	f->e.ops->put_request(&f->e, rq);
}

/* Dispatch until the elevator holds back; the number dispatched. */
static int rfx_fill(struct rfx *f)
{
	int k = 0;
	while (rfx_dispatch(f))
		k++;
	return k;
}

static void rfx_close(struct rfx *f)
{
	for (int i = 0; i < f->n; i++)
		if (f->busy[i])
			rfx_complete(f, &f->rq[i]);
	struct request *rq;
	while ((rq = f->e.ops->dispatch(&f->e, true)) != NULL) {
		f->e.in_driver[rq_is_sync(rq)]++;
		f->busy[rq - f->rq] = true;
		rfx_complete(f, rq);
	}
	assert_true(f->e.ops->empty(&f->e));
	f->e.ops->exit(&f->e);
	blk_ioc_put(f->sync_ioc);
	blk_ioc_put(f->async_ioc);
}

/* A sync write completes at t=0; then an async queue alone gets 24
 * requests. Returns how many it may have in the drive at t = at_ms. */
static int async_depth_after_sync(bool ramp, uint64_t at_ms)
{
	struct rfx *f = rfx_open(ramp);
	struct request *s = rfx_add(f, f->sync_ioc, 1000, BLK_WRITE_SYNC);
	assert_ptr_equal(rfx_dispatch(f), s);
	rfx_complete(f, s);
	rfx_at(f, at_ms);
	for (int i = 0; i < 24; i++)
		rfx_add(f, f->async_ioc, 100000 + 8 * (uint64_t)i, BLK_WRITE);
	int k = rfx_fill(f);
	rfx_close(f);
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
	struct rfx *f = rfx_open(true);
	struct request *s = rfx_add(f, f->sync_ioc, 1000, BLK_WRITE_SYNC);
	assert_ptr_equal(rfx_dispatch(f), s);
	rfx_complete(f, s);
	rfx_at(f, 1);
	for (int i = 0; i < 4; i++)
		rfx_add(f, f->async_ioc, 100000 + 8 * (uint64_t)i, BLK_WRITE);
	for (int i = 0; i < 4; i++) {
		struct request *a = rfx_dispatch(f);
		assert_non_null(a);
		assert_null(rfx_dispatch(f));
		rfx_at(f, 2 + (uint64_t)i);
		rfx_complete(f, a);
	}
	assert_true(f->e.ops->empty(&f->e));
	rfx_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ramp_depth),
		cmocka_unit_test(test_ramp_progress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
