/* Writeback throttling (wbt_lat_usec, src/blk/blk_wbt.c) on the gate
 * device, which holds every command until the test completes it: the test
 * decides how long the sync requests take at the device and so drives the
 * limit down (target missed) and up again (target met), and checks that
 * background writes keep moving at the smallest limit and are not held at
 * all with the toggle off. nostall-test: concurrent */
#include "test_blk_env.h"

/* A thread submitting n background 4 KiB writes, 8 KiB apart (no merges). */
struct submitter {
	struct blk_queue *q;
	pthread_t tid;
	int n;
	uint64_t base;
	atomic_int submitted;
};

static void *submitter_main(void *arg)
{
	struct submitter *s = arg;
	for (int i = 0; i < s->n; i++) {
		submit(s->q, s->base + 16 * (uint64_t)i, 4096, BLK_WRITE);
		atomic_fetch_add(&s->submitted, 1);
	}
	return NULL;
}

static void submitter_start(struct submitter *s, struct blk_queue *q, int n, uint64_t base)
{
	s->q = q;
	s->n = n;
	s->base = base;
	atomic_init(&s->submitted, 0);
	assert_int_equal(pthread_create(&s->tid, NULL, submitter_main, s), 0);
}

/* The tests put their sync writes at SYNC_BASE and above, background
 * writes below it. */
#define SYNC_BASE (1u << 16) /* 32 MiB into the 64 MiB gate */

/* Complete up to k held commands that are sync writes (sync) or background
 * writes (!sync), oldest first; the rest stay held. */
static int gate_release_kind(struct gate *g, int k, bool sync)
{
	int done = 0;
	while (done < k) {
		pthread_mutex_lock(&g->m);
		int pick = -1;
		for (int i = 0; i < g->n && pick < 0; i++)
			if ((g->held[i]->sector >= SYNC_BASE) == sync)
				pick = i;
		if (pick < 0) {
			pthread_mutex_unlock(&g->m);
			break;
		}
		struct dev_io *io = g->held[pick];
		memmove(g->held + pick, g->held + pick + 1, sizeof g->held[0] * (size_t)(g->n - pick - 1));
		g->n--;
		g->served++;
		pthread_mutex_unlock(&g->m);
		dev_complete(&g->d, io, 0);
		done++;
	}
	return done;
}

static struct blk_wbt_state wbt(struct blk_queue *q)
{
	struct blk_wbt_state s;
	blk_queue_wbt_state(q, &s);
	return s;
}

static void test_wbt_presets_and_range(void **state)
{
	(void)state;
	char v[32];
	/* A queue as created without options (open_q would switch it off). */
	struct fixture f;
	f.g = gate_open(true, 31);
	assert_int_equal(blk_queue_create(&f.g->d, NULL, &f.q), 0);
	/* nostall (the default) throttles at Linux's rotational target. */
	assert_int_equal(blk_queue_get(f.q, "wbt_lat_usec", v, sizeof v), 0);
	assert_string_equal(v, "75000");
	assert_int_equal(wbt(f.q).limit, 16);
	/* The era presets have no throttling; nostall brings it back. */
	for (const char *const *p = (const char *const[]){ "2.6.29", "2.6.30-rc1", "2.6.30", NULL }; *p; p++) {
		assert_int_equal(blk_queue_set(f.q, "preset", *p), 0);
		assert_int_equal(blk_queue_get(f.q, "wbt_lat_usec", v, sizeof v), 0);
		assert_string_equal(v, "0");
		assert_int_equal(wbt(f.q).limit, 0);
	}
	assert_int_equal(blk_queue_set(f.q, "preset", "nostall"), 0);
	assert_int_equal(blk_queue_get(f.q, "wbt_lat_usec", v, sizeof v), 0);
	assert_string_equal(v, "75000");
	/* The range: 0 (off) .. 10 s. */
	assert_true(blk_queue_set(f.q, "wbt_lat_usec", "10000001") < 0);
	assert_true(blk_opts_validate("wbt_lat_usec=-1") < 0);
	assert_int_equal(blk_opts_validate("wbt_lat_usec=0"), 0);
	assert_int_equal(blk_queue_set(f.q, "wbt_lat_usec", "10000000"), 0);
	close_q(&f);
	/* Non-rotational: Linux's 2 ms; a device without queuing keeps 2. */
	f = open_q(false, 1, NULL);
	assert_int_equal(blk_queue_set(f.q, "preset", "nostall"), 0);
	assert_int_equal(blk_queue_get(f.q, "wbt_lat_usec", v, sizeof v), 0);
	assert_string_equal(v, "2000");
	assert_int_equal(wbt(f.q).limit, 2);
	close_q(&f);
}

/* Off: 64 background writes all get requests at once, nothing waits. */
static void test_wbt_off_no_cap(void **state)
{
	(void)state;
	struct fixture f = open_q(true, 31, "wbt_lat_usec=0");
	struct submitter s;
	submitter_start(&s, f.q, 64, 4096);
	pthread_join(s.tid, NULL);
	assert_int_equal(atomic_load(&s.submitted), 64);
	struct blk_wbt_state w = wbt(f.q);
	assert_int_equal(w.limit, 0);
	assert_int_equal(w.waiters, 0);
	struct blk_stats st;
	blk_queue_stats_get(f.q, &st);
	assert_int_equal(st.wbt_waits, 0);
	close_q(&f);
}

/* On: the limit holds the writer at 16 requests; a sync write held at the
 * device past the target scales it down to 1, where background writes still
 * complete one by one; sync writes served in time scale it back up. noop,
 * so that the scheduler dispatches whatever the throttle lets through (CFQ
 * holds async requests while a sync one is at the device). */
static void test_wbt_scale_down_and_up(void **state)
{
	(void)state;
	struct fixture f = open_q(true, 31, "scheduler=noop,wbt_lat_usec=20000");
	struct submitter s;
	submitter_start(&s, f.q, 400, 4096);
	WAIT_FOR(wbt(f.q).waiters == 1);
	assert_int_equal(wbt(f.q).inflight, 16);
	assert_int_equal(atomic_load(&s.submitted), 16);

	/* A sync write that the device sits on: every window sees it stuck. */
	submit(f.q, SYNC_BASE, 4096, BLK_WRITE_SYNC);
	WAIT_FOR(gate_held(f.g) > 0);
	uint64_t deadline = clock_now_ns() + 5 * NS_PER_SEC;
	while (wbt(f.q).limit > 1 && clock_now_ns() < deadline) {
		gate_release_kind(f.g, 1, false);
		clock_sleep_ns(5 * NS_PER_MS);
	}
	struct blk_wbt_state w = wbt(f.q);
	assert_int_equal(w.limit, 1);
	assert_true(w.step > 0);
	/* At the smallest limit background writes still progress. */
	int before = atomic_load(&s.submitted);
	for (int i = 0; i < 20; i++) {
		uint64_t until = clock_now_ns() + 5 * NS_PER_SEC;
		while (gate_release_kind(f.g, 1, false) != 1 && wbt(f.q).inflight && clock_now_ns() < until)
			clock_sleep_ns(100 * NS_PER_US);
		if (clock_now_ns() >= until) {
			unsigned qd, fl;
			blk_queue_counts(f.q, &qd, &fl);
			w = wbt(f.q);
			fprintf(stderr, "stuck: i=%d queued %u in_flight %u held %d limit %u inflight %u waiters %d step %d plugged %d\n", i, qd, fl, gate_held(f.g), w.limit, w.inflight, w.waiters, w.step, blk_queue_plugged(f.q));
			fail();
		}
		clock_sleep_ns(2 * NS_PER_MS);
		w = wbt(f.q);
		assert_int_equal(w.limit, 1);
		assert_true(w.inflight <= 1);
	}
	assert_true(atomic_load(&s.submitted) >= before + 10);

	/* The device serves sync writes at once now: the limit grows back. */
	gate_release_kind(f.g, 1, true);
	deadline = clock_now_ns() + 5 * NS_PER_SEC;
	uint64_t sector = SYNC_BASE + 4096;
	while (wbt(f.q).limit < 16 && clock_now_ns() < deadline) {
		submit(f.q, sector, 4096, BLK_WRITE_SYNC);
		sector += 16;
		for (int i = 0; i < 4; i++) {
			gate_release_kind(f.g, GATE_MAX, true);
			gate_release_kind(f.g, 2, false);
			clock_sleep_ns(1 * NS_PER_MS);
		}
	}
	assert_true(wbt(f.q).limit >= 16);
	struct blk_stats st;
	blk_queue_stats_get(f.q, &st);
	assert_true(st.wbt_scale_down >= 4);
	assert_true(st.wbt_scale_up >= 4);
	assert_true(st.wbt_waits > 0);

	/* Switched off with a writer waiting: it is released. */
	assert_int_equal(blk_queue_set(f.q, "wbt_lat_usec", "0"), 0);
	deadline = clock_now_ns() + 5 * NS_PER_SEC;
	while (atomic_load(&s.submitted) < 400 && clock_now_ns() < deadline) {
		gate_release(f.g, GATE_MAX);
		clock_sleep_ns(NS_PER_MS);
	}
	pthread_join(s.tid, NULL);
	assert_int_equal(atomic_load(&s.submitted), 400);
	close_q(&f);
}

/* Scaled down to 1, then nothing completes for many windows: the next
 * completion finds them empty and the limit drifts back to the default
 * (one step per 3 empty windows). */
static void test_wbt_idle_drifts_back(void **state)
{
	(void)state;
	struct fixture f = open_q(true, 31, "scheduler=noop,wbt_lat_usec=20000");
	struct submitter s;
	submitter_start(&s, f.q, 60, 4096);
	WAIT_FOR(wbt(f.q).waiters == 1);
	submit(f.q, SYNC_BASE, 4096, BLK_WRITE_SYNC);
	uint64_t deadline = clock_now_ns() + 5 * NS_PER_SEC;
	while (wbt(f.q).limit > 1 && clock_now_ns() < deadline) {
		gate_release_kind(f.g, 1, false);
		clock_sleep_ns(5 * NS_PER_MS);
	}
	assert_int_equal(wbt(f.q).limit, 1);
	/* The rest of the writer's 60 go through one by one (the sync write,
	 * still held, keeps the limit at 1); then everything completes. */
	while (atomic_load(&s.submitted) < 60 && clock_now_ns() < deadline) {
		gate_release_kind(f.g, 1, false);
		clock_sleep_ns(NS_PER_MS);
	}
	pthread_join(s.tid, NULL);
	assert_int_equal(wbt(f.q).limit, 1);
	int step = wbt(f.q).step;
	assert_true(step >= 4);
	/* (the last writes may still be plugged: release until all are done) */
	deadline = clock_now_ns() + 5 * NS_PER_SEC;
	while ((wbt(f.q).inflight || gate_held(f.g)) && clock_now_ns() < deadline) {
		gate_release(f.g, GATE_MAX);
		clock_sleep_ns(NS_PER_MS);
	}
	assert_int_equal(wbt(f.q).inflight, 0);
	step = wbt(f.q).step; /* those completions may have ended a window */
	assert_true(step >= 3);
	/* Idle: more than 3 x step windows (at most 100 ms each) pass. */
	clock_sleep_ns((uint64_t)(3 * step + 3) * 100 * NS_PER_MS);
	assert_int_equal(wbt(f.q).step, step); /* nothing completed: unchanged */
	submit(f.q, 8, 4096, BLK_WRITE);
	WAIT_FOR(gate_held(f.g) == 1);
	gate_release(f.g, 1);
	WAIT_FOR(wbt(f.q).inflight == 0);
	struct blk_wbt_state w = wbt(f.q);
	assert_int_equal(w.step, 0);
	assert_int_equal(w.limit, 16);
	close_q(&f);
}

/* Only background writes complete (no sync I/O to protect): the limit
 * opens past the default, to 3/4 of the queue depth. */
static void test_wbt_writes_only_opens(void **state)
{
	(void)state;
	struct fixture f = open_q(true, 32, "scheduler=noop,wbt_lat_usec=20000");
	struct submitter s;
	submitter_start(&s, f.q, 2000, 4096);
	uint64_t deadline = clock_now_ns() + 5 * NS_PER_SEC;
	while (wbt(f.q).limit < 24 && clock_now_ns() < deadline) {
		gate_release_kind(f.g, 4, false);
		clock_sleep_ns(2 * NS_PER_MS);
	}
	struct blk_wbt_state w = wbt(f.q);
	assert_int_equal(w.limit, 24);
	assert_true(w.step < 0);
	assert_int_equal(blk_queue_set(f.q, "wbt_lat_usec", "0"), 0);
	while (atomic_load(&s.submitted) < 2000) {
		gate_release(f.g, GATE_MAX);
		clock_sleep_ns(NS_PER_MS);
	}
	pthread_join(s.tid, NULL);
	close_q(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wbt_presets_and_range),
		cmocka_unit_test(test_wbt_off_no_cap),
		cmocka_unit_test(test_wbt_scale_down_and_up),
		cmocka_unit_test(test_wbt_idle_drifts_back),
		cmocka_unit_test(test_wbt_writes_only_opens),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
