/* CFQ elevator: tunables, slice lengths, class order, sync preemption,
 * the idle window and the per-context history it rests on (the fixture:
 * test_sched_cfq_env.h; dispatch order, quantum and merges:
 * test_sched_cfq_dispatch.c). */
#include "test_sched_cfq_env.h"

/* ------------------------------------------------------------------ */

static void test_tunables(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	const struct tunable_desc *t = f->e.ops->tunables;
	static const struct { const char *n; uint64_t v; } defs[] = {
		{ "quantum", 4 }, { "fifo_expire_sync", 125 }, { "fifo_expire_async", 250 },
		{ "back_seek_max", 16384 }, { "back_seek_penalty", 2 }, { "slice_sync", 100 },
		{ "slice_async", 40 }, { "slice_async_rq", 2 }, { "slice_idle", 8 },
	};
	for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
		uint64_t v = 0;
		assert_int_equal(tunable_get(t, f->e.data, defs[i].n, &v), 0);
		assert_int_equal(v, defs[i].v);
	}
	assert_int_equal(tunable_set(t, f->e.data, "quantum", "0"), -ERANGE);
	assert_int_equal(tunable_set(t, f->e.data, "slice_sync", "0"), -ERANGE);
	assert_int_equal(tunable_set(t, f->e.data, "slice_idle", "0"), 0);
	assert_ptr_equal(elv_find("cfq"), &elv_cfq_ops);
	fx_free(f);
}

static void test_slice_lengths(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	const uint64_t sync_ms[8] = { 180, 160, 140, 120, 100, 80, 60, 40 };
	const uint64_t async_ms[8] = { 72, 64, 56, 48, 40, 32, 24, 16 };
	const unsigned maxrq[8] = { 32, 28, 24, 20, 16, 12, 8, 4 };
	for (int p = 0; p < 8; p++) {
		assert_int_equal(cfq_slice_for(&f->e, true, p), sync_ms[p] * MS);
		assert_int_equal(cfq_slice_for(&f->e, false, p), async_ms[p] * MS);
		assert_int_equal(cfq_async_maxrq_for(&f->e, p), maxrq[p]);
	}
	set(f, "slice_sync", "50");
	assert_int_equal(cfq_slice_for(&f->e, true, 0), 90 * MS);
	assert_int_equal(cfq_slice_for(&f->e, true, 7), 20 * MS);

	/* The slice starts at the first completion: RT/0 gets 90 ms now. */
	struct blk_ioc *rt = mkioc(f, BLK_IOPRIO_CLASS_RT, 0);
	struct blk_ioc *be = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, rt, 0, BLK_READ);
	sub(f, rt, 8, BLK_READ);
	struct request *r = disp(f);
	assert_non_null(r);
	uint64_t id, end;
	bool sync;
	assert_true(cfq_active_info(&f->e, &id, &sync, &end));
	assert_int_equal(id, blk_ioc_id(rt));
	assert_true(sync);
	assert_int_equal(end, 0);
	at(f, 3);
	done(f, r);
	assert_true(cfq_active_info(&f->e, NULL, NULL, &end));
	assert_int_equal(end, T0 + 93 * MS);
	fx_free(f);

	f = fx_new(true, false);
	be = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, be, 0, BLK_READ);
	at(f, 1);
	done(f, disp(f));
	assert_true(cfq_active_info(&f->e, NULL, NULL, &end));
	assert_int_equal(end, T0 + 101 * MS);
	fx_free(f);
}

/* RT before BE before IDLE, whatever the arrival order; IDLE only after the
 * grace period following the last other completion. */
static void test_class_order(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	set(f, "slice_idle", "0");
	struct blk_ioc *idle = mkioc(f, BLK_IOPRIO_CLASS_IDLE, 0);
	struct blk_ioc *be = mkioc(f, BLK_IOPRIO_CLASS_BE, 0);
	struct blk_ioc *rt = mkioc(f, BLK_IOPRIO_CLASS_RT, 7);
	struct request *ri = sub(f, idle, 100, BLK_READ);
	struct request *rb = sub(f, be, 200, BLK_READ);
	struct request *rr = sub(f, rt, 300, BLK_READ);
	at(f, 1);
	struct request *r = disp(f);
	assert_ptr_equal(r, rr);
	at(f, 2);
	done(f, r);
	r = disp(f);
	assert_ptr_equal(r, rb);
	at(f, 3);
	done(f, r);
	/* Only the IDLE queue is left: it waits 100 ms after the last
	 * completion of another class. */
	assert_null(disp(f));
	assert_int_equal(f->e.kick_ns, T0 + 103 * MS);
	at(f, 50);
	assert_null(disp(f));
	at(f, 103);
	assert_ptr_equal(disp(f), ri);
	fx_free(f);
}

/* A sync request preempts an active async queue; async waits while sync is
 * in the driver. */
static void test_sync_preempts_async_and_holds_it(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	set(f, "slice_idle", "0");
	struct blk_ioc *wr = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *rd = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	for (int i = 0; i < 8; i++)
		sub(f, wr, 1000 + (uint64_t)i * 8, BLK_WRITE);
	struct request *a1 = disp(f), *a2 = disp(f);
	assert_non_null(a1);
	assert_non_null(a2);
	assert_false(rq_is_sync(a1));
	at(f, 1);
	f->e.kick_ns = 0;
	struct request *rs = sub(f, rd, 50, BLK_READ);
	assert_int_equal(f->e.kick_ns, f->e.now_ns); /* preempted: run now */
	struct request *r = disp(f);
	assert_ptr_equal(r, rs);
	/* The read is in the driver: the async queue must wait. */
	assert_null(disp(f));
	assert_null(disp(f));
	at(f, 2);
	done(f, r);
	r = disp(f);
	assert_non_null(r);
	assert_false(rq_is_sync(r));
	/* A forced dispatch does not hold async back. */
	struct request *rs2 = sub(f, rd, 60, BLK_READ);
	assert_ptr_equal(disp(f), rs2);
	assert_null(disp(f));
	r = f->e.ops->dispatch(&f->e, true);
	assert_non_null(r);
	assert_false(rq_is_sync(r));
	f->e.in_driver[0]++;
	f->in_driver[r - f->rq] = true;
	fx_free(f);
}

/* Reader A completes; B waits. Returns the fixture after A's completion at
 * 1 ms (with B's request queued). */
static struct fx *idle_setup(bool rot, bool queuing, bool honour, unsigned flags, struct blk_ioc **a_out)
{
	struct fx *f = fx_new(rot, queuing);
	f->e.honour_noidle = honour;
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct request *ra = sub(f, a, 0, flags);
	sub(f, b, 100000, BLK_READ);
	struct request *r = disp(f);
	assert_ptr_equal(r, ra);
	at(f, 1);
	done(f, r);
	if (a_out)
		*a_out = a;
	return f;
}

static void assert_idles(struct fx *f, bool idles)
{
	if (idles) {
		assert_true(cfq_idling(&f->e));
		assert_int_equal(f->e.idle_count, 1);
		assert_int_equal(f->e.kick_ns, T0 + 9 * MS);
		at(f, 2);
		assert_null(disp(f));
	} else {
		assert_false(cfq_idling(&f->e));
		assert_int_equal(f->e.idle_count, 0);
		struct request *r = disp(f);
		assert_non_null(r);
		assert_int_equal(r->sector, 100000);
	}
}

static void test_idle_window_conditions(void **state)
{
	(void)state;
	struct fx *f;
	/* read: idle */
	f = idle_setup(true, false, true, BLK_READ, NULL);
	assert_idles(f, true);
	fx_free(f);
	/* O_DIRECT write: sync without NOIDLE, idle */
	f = idle_setup(true, false, true, BLK_WRITE_ODIRECT, NULL);
	assert_idles(f, true);
	fx_free(f);
	/* WRITE_SYNC_PLUG / WRITE_SYNC carry NOIDLE: no idling in 2.6.30 */
	f = idle_setup(true, false, true, BLK_WRITE_SYNC_PLUG, NULL);
	assert_idles(f, false);
	fx_free(f);
	f = idle_setup(true, false, true, BLK_WRITE_SYNC, NULL);
	assert_idles(f, false);
	fx_free(f);
	/* 2.6.29 / 2.6.30-rc1: NOIDLE not honoured, idle after every sync */
	f = idle_setup(true, false, false, BLK_WRITE_SYNC, NULL);
	assert_idles(f, true);
	fx_free(f);
	/* async write: never */
	f = idle_setup(true, false, true, BLK_WRITE, NULL);
	assert_idles(f, false);
	fx_free(f);
	/* non-rotational and queuing: never; non-rotational without queuing
	 * and rotational with queuing: yes */
	f = idle_setup(false, true, true, BLK_READ, NULL);
	assert_idles(f, false);
	fx_free(f);
	f = idle_setup(false, false, true, BLK_READ, NULL);
	assert_idles(f, true);
	fx_free(f);
	f = idle_setup(true, true, true, BLK_READ, NULL);
	assert_idles(f, true);
	fx_free(f);
}

static void test_idle_not_armed(void **state)
{
	(void)state;
	/* slice_idle 0 */
	struct fx *f = fx_new(true, false);
	set(f, "slice_idle", "0");
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, a, 0, BLK_READ);
	sub(f, b, 100000, BLK_READ);
	at(f, 1);
	done(f, disp(f));
	assert_false(cfq_idling(&f->e));
	assert_int_equal(disp(f)->sector, 100000);
	fx_free(f);

	/* other requests still in the driver */
	f = fx_new(true, true);
	a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, a, 0, BLK_READ);
	sub(f, a, 8, BLK_READ);
	sub(f, b, 100000, BLK_READ);
	struct request *r1 = disp(f), *r2 = disp(f);
	assert_int_equal(r1->sector, 0);
	assert_int_equal(r2->sector, 8);
	at(f, 1);
	done(f, r1);
	assert_false(cfq_idling(&f->e)); /* r2 still in the driver */
	at(f, 2);
	done(f, r2);
	assert_true(cfq_idling(&f->e)); /* now empty and idle */
	assert_int_equal(f->e.kick_ns, T0 + 10 * MS);
	fx_free(f);

	/* the queue still has requests: it continues instead */
	f = fx_new(true, false);
	a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, a, 0, BLK_READ);
	sub(f, b, 100000, BLK_READ);
	r1 = disp(f);
	sub(f, a, 8, BLK_READ);
	at(f, 1);
	done(f, r1);
	assert_false(cfq_idling(&f->e));
	assert_int_equal(disp(f)->sector, 8);
	fx_free(f);

	/* the slice is used up: expire, do not idle */
	f = fx_new(true, false);
	a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	sub(f, a, 0, BLK_READ);
	sub(f, a, 8, BLK_READ);
	sub(f, b, 100000, BLK_READ);
	r1 = disp(f);
	r2 = disp(f);
	at(f, 1);
	done(f, r1); /* slice ends at 101 ms */
	at(f, 120);
	done(f, r2); /* slice used: expire */
	assert_false(cfq_idling(&f->e));
	assert_false(cfq_active_info(&f->e, NULL, NULL, NULL));
	assert_int_equal(disp(f)->sector, 100000);
	fx_free(f);
}

/* The request we idled for ends the window when it is dispatched; the
 * timer ends it otherwise. idle_ns counts the window either way. */
static void test_idle_end(void **state)
{
	(void)state;
	struct blk_ioc *a;
	struct fx *f = idle_setup(true, false, true, BLK_READ, &a);
	at(f, 4);
	assert_null(disp(f));
	assert_int_equal(f->e.ops->may_queue(&f->e, a, BLK_READ), ELV_MQUEUE_MUST);
	assert_int_equal(f->e.ops->may_queue(&f->e, a, BLK_READ), ELV_MQUEUE_MAY);
	assert_int_equal(f->e.ops->may_queue(&f->e, f->ioc[1], BLK_READ), ELV_MQUEUE_MAY);
	struct request *ra = sub(f, a, 16, BLK_READ);
	assert_ptr_equal(disp(f), ra);
	assert_false(cfq_idling(&f->e));
	assert_int_equal(f->e.idle_ns, 3 * MS);
	fx_free(f);

	/* timer: at 9 ms the window closes and B gets the disk */
	f = idle_setup(true, false, true, BLK_READ, &a);
	at(f, 8);
	assert_null(disp(f));
	assert_int_equal(f->e.kick_ns, T0 + 9 * MS);
	at(f, 9);
	f->e.kick_ns = 0; /* blk clears it when it fires */
	struct request *r = disp(f);
	assert_non_null(r);
	assert_int_equal(r->sector, 100000);
	assert_false(cfq_idling(&f->e));
	assert_int_equal(f->e.idle_ns, 8 * MS);
	assert_int_equal(f->e.idle_count, 1);
	fx_free(f);
}

/* A context that thinks longer than slice_idle loses its idle window. */
static void test_think_time(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	uint64_t t = 0;
	unsigned armed = 0;
	for (int i = 0; i < 6; i++) {
		at(f, t);
		sub(f, a, (uint64_t)i * 8, BLK_READ);
		struct request *r = disp(f);
		assert_non_null(r);
		t += 1;
		at(f, t);
		done(f, r);
		if (cfq_idling(&f->e))
			armed++;
		t += 20; /* think 20 ms: longer than slice_idle */
	}
	/* the first three requests have too few samples to judge */
	assert_int_equal(armed, 2);
	assert_int_equal(f->e.idle_count, 2);
	fx_free(f);
}

/* ---- 2.6.30 fidelity (issue 12): each of these failed before the fix */

/* The request CFQ idles for sets must_dispatch but does not start the
 * queue (2.6.30: plugging and merging decide; the idle timer kicks if
 * nothing else does). The old code asked blk to run at once. */
static void test_idled_request_waits_for_plug(void **state)
{
	(void)state;
	struct blk_ioc *a;
	struct fx *f = idle_setup(true, false, true, BLK_READ, &a);
	at(f, 4);
	struct request *ra = sub(f, a, 16, BLK_READ);
	assert_true(f->e.kick_ns > f->e.now_ns);        /* no immediate run */
	assert_int_equal(f->e.kick_ns, T0 + 9 * MS);     /* the timer still stands */
	assert_true(cfq_idling(&f->e));
	/* At the timer the slice is not expired under it: A's request goes,
	 * not B's. */
	at(f, 9);
	f->e.kick_ns = 0;
	assert_ptr_equal(disp(f), ra);
	assert_false(cfq_idling(&f->e));
	fx_free(f);
}

/* Without seek samples the active context has no mean seek distance, and
 * nothing is "close" (2.6.30): a nearby request of another context does
 * not preempt the idling queue. The old code used 8192 sectors instead. */
static void test_rq_close_needs_samples(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *b = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct request *ra = sub(f, a, 1000, BLK_READ);
	assert_ptr_equal(disp(f), ra);
	at(f, 1);
	done(f, ra);
	assert_true(cfq_idling(&f->e));
	at(f, 2);
	sub(f, b, 1100, BLK_READ); /* 92 sectors from the head */
	uint64_t id = 0;
	assert_true(cfq_active_info(&f->e, &id, NULL, NULL));
	assert_int_equal(id, blk_ioc_id(a));
	assert_true(cfq_idling(&f->e));
	assert_true(f->e.kick_ns > f->e.now_ns);
	fx_free(f);
}

/* Think time and seek history belong to the io context and are fed by all
 * its requests, async ones included: a process whose async writes seek
 * all over the disk is seeky, and on a queuing device its sync queue gets
 * no idle window. The old code learnt only from the sync queue's own
 * requests (one sample here: not enough to judge, so it idled). */
static void test_history_per_context(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, true);
	struct blk_ioc *a = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	for (int i = 0; i < 4; i++)
		sub(f, a, (uint64_t)i * 20000000, BLK_WRITE);
	for (int i = 0; i < 4; i++)
		assert_non_null(disp_done(f));
	at(f, 1);
	struct request *rs = sub(f, a, 90000000, BLK_READ);
	assert_ptr_equal(disp(f), rs);
	at(f, 2);
	done(f, rs);
	assert_false(cfq_idling(&f->e));
	assert_int_equal(f->e.idle_count, 0);
	fx_free(f);
}

/* The service-tree offset uses the queue's own slice (2.6.30
 * cfq_slice_offset): an async BE/4 queue starts 140 ms per other busy
 * queue later, not 80 ms like a sync BE/4 one. A sync BE/0 queue arriving
 * 100 ms later (offset 0) is therefore served before it; with the old
 * offset the async queue (key +80 ms) went first. */
static void test_service_offset_own_slice(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	set(f, "slice_idle", "0");
	struct blk_ioc *x = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *w = mkioc(f, BLK_IOPRIO_CLASS_BE, 4);
	struct blk_ioc *s0 = mkioc(f, BLK_IOPRIO_CLASS_BE, 0);
	struct request *x1 = sub(f, x, 0, BLK_READ);
	sub(f, x, 8, BLK_READ);
	assert_ptr_equal(disp(f), x1);            /* X active, one request left */
	sub(f, w, 50000000, BLK_WRITE);           /* async BE/4, 2 busy queues */
	at(f, 100);
	sub(f, s0, 60000000, BLK_READ);           /* sync BE/0, 3 busy queues */
	done(f, x1);
	struct request *x2 = disp(f);
	assert_int_equal(x2->sector, 8);
	at(f, 101);
	done(f, x2);
	struct request *next = disp(f);
	assert_non_null(next);
	assert_int_equal(next->sector, 60000000);
	assert_true(rq_is_sync(next));
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tunables),
		cmocka_unit_test(test_slice_lengths),
		cmocka_unit_test(test_class_order),
		cmocka_unit_test(test_sync_preempts_async_and_holds_it),
		cmocka_unit_test(test_idle_window_conditions),
		cmocka_unit_test(test_idle_not_armed),
		cmocka_unit_test(test_idle_end),
		cmocka_unit_test(test_think_time),
		cmocka_unit_test(test_idled_request_waits_for_plug),
		cmocka_unit_test(test_rq_close_needs_samples),
		cmocka_unit_test(test_history_per_context),
		cmocka_unit_test(test_service_offset_own_slice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
