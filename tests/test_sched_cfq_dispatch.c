/* CFQ elevator: what it dispatches next: FIFO expiry, back seeks, RT
 * preemption, quantum, the async budget, pre-2.6.30 dispatch, merges and the
 * slice-end kick (the fixture: test_sched_cfq_env.h; slices and idling:
 * test_sched_cfq.c). */
#include "test_sched_cfq_env.h"

/* The FIFO head jumps the sector order when expired, checked once per
 * slice. */
static void fifo_case(bool expired)
{
	struct fx *f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, a, 5000, BLK_READ);
	sub(f, a, 300, BLK_READ);
	sub(f, a, 100, BLK_READ);
	at(f, expired ? 200 : 10);
	uint64_t got[3];
	for (int i = 0; i < 3; i++) {
		struct request *r = disp(f);
		assert_non_null(r);
		got[i] = r->sector;
	}
	const uint64_t w_exp[3] = { 5000, 100, 300 };
	const uint64_t w_ok[3] = { 100, 300, 5000 };
	const uint64_t *w = expired ? w_exp : w_ok;
	for (int i = 0; i < 3; i++)
		assert_int_equal(got[i], w[i]);
	fx_free(f);
}

static void test_fifo_expiry(void **state)
{
	(void)state;
	fifo_case(false);
	fifo_case(true);
}

/* Sector choice: forward seeks, short back seeks at a penalty. */
static void test_choose_back_seek(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, a, 100000, BLK_READ);
	done(f, disp(f)); /* head at 100008 */
	at(f, 20); /* idle window is over */
	disp(f);
	sub(f, a, 99000, BLK_READ);   /* 1008 behind: cost 2016 */
	sub(f, a, 101500, BLK_READ);  /* 1492 ahead */
	sub(f, a, 200000, BLK_READ);
	sub(f, a, 10, BLK_READ);      /* far behind (> back_seek_max) */
	/* 99000 is closer than 101500 but behind: penalised; after 101500 the
	 * short back seek to 99000 beats the long forward one; 10 is beyond
	 * back_seek_max and comes last. */
	uint64_t want[4] = { 101500, 99000, 200000, 10 };
	for (int i = 0; i < 4; i++) {
		struct request *r = disp(f);
		assert_non_null(r);
		assert_int_equal(r->sector, want[i]);
	}
	fx_free(f);
}

static void test_preempt_rt(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	struct blk_ioc *be = mkioc(f, BLK_IOPRIO_CLASS_BE, 0);
	struct blk_ioc *rt = mkioc(f, BLK_IOPRIO_CLASS_RT, 7);
	for (int i = 0; i < 6; i++)
		sub(f, be, (uint64_t)i * 8, BLK_READ);
	struct request *r = disp(f);
	at(f, 1);
	done(f, r);
	assert_non_null(disp(f));
	f->e.kick_ns = 0;
	struct request *rr = sub(f, rt, 900000, BLK_READ);
	assert_int_equal(f->e.kick_ns, f->e.now_ns);
	assert_ptr_equal(disp(f), rr);
	uint64_t id;
	assert_true(cfq_active_info(&f->e, &id, NULL, NULL));
	assert_int_equal(id, blk_ioc_id(rt));
	fx_free(f);

	/* A BE request does not preempt another BE sync queue... */
	f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 0);
	sub(f, a, 0, BLK_READ);
	sub(f, a, 8, BLK_READ);
	r = disp(f);
	f->e.kick_ns = 0;
	sub(f, b, 900000, BLK_READ);
	assert_int_equal(f->e.kick_ns, 0);
	assert_int_equal(disp(f)->sector, 8);
	/* ...but a META one does when the active queue has no meta pending. */
	sub(f, a, 16, BLK_READ);
	struct request *rm = sub(f, b, 500000, BLK_READ | BLK_REQ_META);
	assert_int_equal(f->e.kick_ns, f->e.now_ns);
	assert_ptr_equal(disp(f), rm); /* b's queue: meta first */
	fx_free(f);
}

/* Quantum: 4 in flight with others waiting, 16 when alone. */
static void test_quantum(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	for (int i = 0; i < 20; i++)
		sub(f, a, (uint64_t)i * 8, BLK_READ);
	int n = 0;
	while (disp(f))
		n++;
	assert_int_equal(n, 16);
	fx_free(f);

	f = fx_new(true, true);
	a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	for (int i = 0; i < 20; i++)
		sub(f, a, (uint64_t)i * 8, BLK_READ);
	sub(f, b, 900000, BLK_READ);
	n = 0;
	while (disp(f))
		n++;
	assert_int_equal(n, 4);
	set(f, "quantum", "6");
	n = 0;
	while (disp(f))
		n++;
	assert_int_equal(n, 2);
	fx_free(f);
}

/* An async queue dispatches slice_async_rq-derived requests per slice when
 * another queue waits (BE/4: 16), then the other one (BE/0 async) runs. */
static void test_async_budget(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 0);
	for (int i = 0; i < 20; i++)
		sub(f, a, (uint64_t)i * 8, BLK_WRITE);
	for (int i = 0; i < 20; i++)
		sub(f, b, 500000 + (uint64_t)i * 8, BLK_WRITE);
	int from_a = 0;
	for (;;) {
		struct request *r = disp_done(f);
		assert_non_null(r);
		if (r->sector >= 500000)
			break;
		from_a++;
	}
	assert_int_equal(from_a, 16);
	fx_free(f);
}

/* Before 2.6.30's single-request dispatch (single_dispatch off: the
 * 2.6.29 and 2.6.30-rc1 presets) a queue alone had no cap on its requests
 * in the driver, and an async queue's request budget (16 at BE/4) was
 * counted per dispatch round of at most quantum (4) requests, so it never
 * ran out: only the async slice's time ended it. With others waiting the
 * quantum still capped a queue. */
static void test_dispatch_before_2630(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	f->e.single_dispatch = false;
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	for (int i = 0; i < 20; i++)
		sub(f, a, (uint64_t)i * 8, BLK_WRITE);
	int n = 0;
	while (disp(f))
		n++;
	assert_int_equal(n, 20); /* 2.6.30: 16 (test_quantum) */
	fx_free(f);

	f = fx_new(true, true);
	f->e.single_dispatch = false;
	a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 0);
	for (int i = 0; i < 20; i++)
		sub(f, a, (uint64_t)i * 8, BLK_WRITE);
	for (int i = 0; i < 20; i++)
		sub(f, b, 500000 + (uint64_t)i * 8, BLK_WRITE);
	int from_a = 0;
	for (;;) {
		struct request *r = disp_done(f);
		assert_non_null(r);
		if (r->sector >= 500000)
			break;
		from_a++;
	}
	assert_int_equal(from_a, 20); /* 2.6.30: 16 (test_async_budget) */
	fx_free(f);

	f = fx_new(true, true);
	f->e.single_dispatch = false;
	a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	for (int i = 0; i < 20; i++)
		sub(f, a, (uint64_t)i * 8, BLK_READ);
	sub(f, b, 900000, BLK_READ);
	n = 0;
	while (disp(f))
		n++;
	assert_int_equal(n, 4);
	fx_free(f);
}

/* merge_requests: next leaves, rq inherits the older deadline and FIFO
 * place; queues are freed when their last request is put. */
static void test_merge_bookkeeping(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct request *nx = sub(f, a, 108, BLK_READ);
	at(f, 10);
	sub(f, a, 5000, BLK_READ);
	at(f, 50);
	struct request *rq = sub(f, a, 100, BLK_READ);
	assert_int_equal(rq->elv_deadline_ns, T0 + 175 * MS);
	assert_true(f->e.ops->allow_merge(&f->e, rq, BLK_READ, a));
	assert_false(f->e.ops->allow_merge(&f->e, rq, BLK_READ, NULL));
	rq->nr_sectors += nx->nr_sectors;
	f->e.ops->merge_requests(&f->e, rq, nx);
	f->e.ops->put_request(&f->e, nx);
	assert_int_equal(rq->elv_deadline_ns, T0 + 125 * MS);
	at(f, 200); /* rq (FIFO head now) has expired */
	struct request *r = disp(f);
	assert_ptr_equal(r, rq);
	r = disp(f);
	assert_int_equal(r->sector, 5000);
	assert_null(disp(f));
	assert_true(f->e.ops->empty(&f->e));
	fx_free(f);

	/* Queue life cycle: the sync queue goes with its last request (after
	 * its slice); the async queue is pinned. */
	f = fx_new(true, true);
	set(f, "slice_idle", "0");
	a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	assert_false(f->e.ops->allow_merge(&f->e, &f->rq[0], BLK_READ, a)); /* no queue yet */
	struct request *w = sub(f, a, 0, BLK_WRITE);
	struct request *s = sub(f, b, 800, BLK_READ);
	assert_int_equal(cfq_nr_queues(&f->e), 2);
	/* sync bio into async request: never */
	assert_false(f->e.ops->allow_merge(&f->e, w, BLK_READ, a));
	assert_true(f->e.ops->allow_merge(&f->e, w, BLK_WRITE, a));
	assert_ptr_equal(disp_done(f), w);
	assert_ptr_equal(disp_done(f), s);
	/* b's queue stays active (nothing else is busy, as in 2.6.30)... */
	assert_null(disp(f));
	assert_int_equal(cfq_nr_queues(&f->e), 2);
	/* ...until another queue needs the disk: then it goes. */
	struct request *w2 = sub(f, a, 16, BLK_WRITE);
	assert_ptr_equal(disp(f), w2);
	assert_int_equal(cfq_nr_queues(&f->e), 1);
	fx_free(f);
}

/* A front merge re-sorts the request inside its queue. */
static void test_front_merge(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, a, 0, BLK_READ);
	disp(f); /* head at 8 */
	sub(f, a, 400, BLK_READ);
	struct request *x = sub(f, a, 1000, BLK_READ);
	x->sector = 100;
	x->nr_sectors += 900;
	f->e.ops->merged(&f->e, x, ELV_MERGE_FRONT);
	assert_ptr_equal(disp(f), x);
	assert_int_equal(disp(f)->sector, 400);
	fx_free(f);
}

/* The active queue is kicked at its slice end when others wait. */
static void test_slice_end_kick(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	for (int i = 0; i < 40; i++)
		sub(f, a, (uint64_t)i * 8, BLK_READ);
	sub(f, b, 900000, BLK_READ);
	uint64_t t = 0;
	struct request *r;
	int n = 0;
	for (;;) {
		at(f, t);
		r = disp(f);
		assert_non_null(r);
		if (r->sector == 900000)
			break;
		n++;
		t += 10;
		at(f, t);
		done(f, r);
		if (n == 1)
			assert_int_equal(f->e.kick_ns, T0 + 110 * MS);
	}
	/* slice 10..110 ms: requests at 0,10,...,100 from a */
	assert_int_equal(n, 11);
	assert_int_equal(t, 110);
	done(f, r);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_expiry),
		cmocka_unit_test(test_choose_back_seek),
		cmocka_unit_test(test_preempt_rt),
		cmocka_unit_test(test_quantum),
		cmocka_unit_test(test_dispatch_before_2630),
		cmocka_unit_test(test_async_budget),
		cmocka_unit_test(test_merge_bookkeeping),
		cmocka_unit_test(test_front_merge),
		cmocka_unit_test(test_slice_end_kick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
