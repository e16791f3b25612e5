/* deadline elevator, driven directly on a fake clock (e.now_ns). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "blk/sched/sched.h"
#include "util/clock.h"

#define MS NS_PER_MS
#define MAXRQ 64

struct fx {
	struct elevator e;
	struct request rq[MAXRQ];
	int n;
};

static struct fx *fx_new(void)
{
	static struct fx f;
	memset(&f, 0, sizeof f);
	f.e.ops = &elv_deadline_ops;
	f.e.rotational = true;
	assert_int_equal(f.e.ops->init(&f.e), 0);
	return &f;
}

static void fx_free(struct fx *f)
{
	assert_true(f->e.ops->empty(&f->e));
	f->e.ops->exit(&f->e);
}

static void set(struct fx *f, const char *name, const char *v)
{
	assert_int_equal(tunable_set(f->e.ops->tunables, f->e.data, name, v), 0);
}

/* Queue a request at time t; returns it. */
static struct request *add(struct fx *f, uint64_t t, uint64_t sector, unsigned flags)
{
	assert_true(f->n < MAXRQ);
	struct request *rq = &f->rq[f->n++];
	memset(rq, 0, sizeof *rq);
	rq->sector = sector;
	rq->nr_sectors = 8;
	rq->flags = flags;
	list_init(&rq->elv_fifo);
	list_init(&rq->elv_sort);
	f->e.now_ns = t;
	rq->insert_ns = t;
	f->e.ops->add_request(&f->e, rq);
	return rq;
}

/* Dispatch everything at time t; returns the sectors in order. */
static int drain(struct fx *f, uint64_t t, uint64_t *out, int max)
{
	int n = 0;
	f->e.now_ns = t;
	struct request *rq;
	while ((rq = f->e.ops->dispatch(&f->e, false)) != NULL) {
		assert_true(n < max);
		out[n++] = rq->sector;
	}
	return n;
}

static void assert_order(const uint64_t *got, int n, const uint64_t *want, int wn)
{
	assert_int_equal(n, wn);
	for (int i = 0; i < n; i++) {
		if (got[i] != want[i])
			fail_msg("position %d: sector %llu, expected %llu", i, (unsigned long long)got[i],
				 (unsigned long long)want[i]);
	}
}

static void test_defaults_and_ranges(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	const struct tunable_desc *t = f->e.ops->tunables;
	uint64_t v;
	assert_int_equal(tunable_get(t, f->e.data, "read_expire", &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(tunable_get(t, f->e.data, "write_expire", &v), 0);
	assert_int_equal(v, 5000);
	assert_int_equal(tunable_get(t, f->e.data, "writes_starved", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(tunable_get(t, f->e.data, "fifo_batch", &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(tunable_get(t, f->e.data, "front_merges", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(tunable_set(t, f->e.data, "fifo_batch", "0"), -ERANGE);
	assert_int_equal(tunable_set(t, f->e.data, "front_merges", "2"), -EINVAL);
	assert_int_equal(tunable_set(t, f->e.data, "quantum", "4"), -ENOENT);
	assert_ptr_equal(elv_find("deadline"), &elv_deadline_ops);
	fx_free(f);
}

/* The first request of a direction starts at the FIFO head, then the sweep
 * goes up in sector order. */
static void test_sector_order(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	const uint64_t s[] = { 10, 500, 100, 300, 700, 200 };
	for (int i = 0; i < 6; i++)
		add(f, i * MS, s[i], BLK_READ);
	uint64_t got[16];
	int n = drain(f, 10 * MS, got, 16);
	const uint64_t want[] = { 10, 100, 200, 300, 500, 700 };
	assert_order(got, n, want, 6);
	fx_free(f);
}

/* 1 request at 0, an old one far away, then 20 in a row. Unexpired: one
 * sweep. Expired: after a batch of fifo_batch (16) the expired read jumps
 * the queue. */
static void batch_case(bool expired)
{
	struct fx *f = fx_new();
	add(f, 0, 0, BLK_READ);
	add(f, 0, 100000, BLK_READ);
	for (int i = 1; i <= 20; i++)
		add(f, 1 * MS, (uint64_t)i * 8, BLK_READ);
	uint64_t got[32], want[32];
	int n = drain(f, expired ? 600 * MS : 100 * MS, got, 32);
	int w = 0;
	want[w++] = 0;
	for (int i = 1; i <= 15; i++)
		want[w++] = (uint64_t)i * 8;
	if (expired)
		want[w++] = 100000;
	for (int i = 16; i <= 20; i++)
		want[w++] = (uint64_t)i * 8;
	if (!expired)
		want[w++] = 100000;
	assert_order(got, n, want, w);
	fx_free(f);
}

static void test_batch_unexpired(void **state) { (void)state; batch_case(false); }
static void test_batch_read_expiry(void **state) { (void)state; batch_case(true); }

/* A smaller fifo_batch takes effect at once. */
static void test_fifo_batch_tunable(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	set(f, "fifo_batch", "4");
	add(f, 0, 0, BLK_READ);
	add(f, 0, 100000, BLK_READ);
	for (int i = 1; i <= 6; i++)
		add(f, 1 * MS, (uint64_t)i * 8, BLK_READ);
	uint64_t got[16];
	int n = drain(f, 600 * MS, got, 16);
	const uint64_t want[] = { 0, 8, 16, 24, 100000, 32, 40, 48 };
	assert_order(got, n, want, 8);
	fx_free(f);
}

/* Reads are preferred, but only for writes_starved batches in a row. */
static void test_writes_starved(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	set(f, "fifo_batch", "1");
	for (int i = 0; i < 5; i++)
		add(f, 0, 1000 + (uint64_t)i * 8, BLK_READ);
	for (int i = 0; i < 3; i++)
		add(f, 0, 5000 + (uint64_t)i * 8, BLK_WRITE);
	uint64_t got[16];
	int n = drain(f, 1 * MS, got, 16);
	const uint64_t want[] = { 1000, 1008, 5000, 1016, 1024, 5008, 1032, 5016 };
	assert_order(got, n, want, 8);
	fx_free(f);

	/* writes_starved 0: a write batch whenever writes wait. */
	f = fx_new();
	set(f, "fifo_batch", "1");
	set(f, "writes_starved", "0");
	for (int i = 0; i < 2; i++)
		add(f, 0, 1000 + (uint64_t)i * 8, BLK_READ);
	for (int i = 0; i < 2; i++)
		add(f, 0, 5000 + (uint64_t)i * 8, BLK_WRITE);
	n = drain(f, 1 * MS, got, 16);
	const uint64_t want0[] = { 5000, 5008, 1000, 1008 };
	assert_order(got, n, want0, 4);
	fx_free(f);
}

/* An expired write is served when the next write batch starts. */
static void write_expiry_case(bool expired)
{
	struct fx *f = fx_new();
	set(f, "fifo_batch", "2");
	add(f, 0, 50, BLK_WRITE);
	add(f, 0, 900, BLK_WRITE);
	add(f, 1000 * MS, 100, BLK_WRITE);
	add(f, 1000 * MS, 200, BLK_WRITE);
	add(f, 1000 * MS, 300, BLK_WRITE);
	uint64_t got[8];
	/* deadlines: 5000 ms for the first two, 6000 ms for the others */
	int n = drain(f, expired ? 5500 * MS : 1100 * MS, got, 8);
	const uint64_t w_exp[] = { 50, 100, 900, 200, 300 };
	const uint64_t w_ok[] = { 50, 100, 200, 300, 900 };
	assert_order(got, n, expired ? w_exp : w_ok, 5);
	fx_free(f);
}

static void test_write_expiry(void **state)
{
	(void)state;
	write_expiry_case(false);
	write_expiry_case(true);
}

/* The surviving request takes the earlier deadline and that FIFO place. */
static void test_merge_requests(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	struct request *b = add(f, 0, 108, BLK_WRITE);
	struct request *c = add(f, 1000 * MS, 50, BLK_WRITE);
	struct request *a = add(f, 2000 * MS, 100, BLK_WRITE);
	assert_int_equal(a->elv_deadline_ns, 7000 * MS);
	a->nr_sectors += b->nr_sectors;
	f->e.now_ns = 2000 * MS;
	f->e.ops->merge_requests(&f->e, a, b);
	assert_int_equal(a->elv_deadline_ns, 5000 * MS);
	/* FIFO is now a, c: the first dispatch starts at the FIFO head. */
	uint64_t got[4];
	int n = drain(f, 2000 * MS, got, 4);
	const uint64_t want[] = { 100, 50 };
	assert_order(got, n, want, 2);
	(void)c;
	fx_free(f);

	/* A later `next` does not change rq's deadline. */
	f = fx_new();
	a = add(f, 0, 100, BLK_READ);
	b = add(f, 10 * MS, 108, BLK_READ);
	a->nr_sectors += 8;
	f->e.ops->merge_requests(&f->e, a, b);
	assert_int_equal(a->elv_deadline_ns, 500 * MS);
	n = drain(f, 20 * MS, got, 4);
	assert_int_equal(n, 1);
	assert_int_equal(got[0], 100);
	fx_free(f);
}

/* A front merge moves the request in the sector order; front_merges=0 is
 * reported through allow_front_merge. */
static void test_front_merge(void **state)
{
	(void)state;
	struct fx *f = fx_new();
	assert_non_null(f->e.ops->allow_front_merge);
	assert_true(f->e.ops->allow_front_merge(&f->e));
	add(f, 0, 0, BLK_READ);
	add(f, 0, 300, BLK_READ);
	struct request *x = add(f, 0, 1000, BLK_READ);
	add(f, 0, 600, BLK_READ);
	x->sector = 200;
	x->nr_sectors += 800;
	f->e.ops->merged(&f->e, x, ELV_MERGE_FRONT);
	uint64_t got[8];
	int n = drain(f, 1 * MS, got, 8);
	const uint64_t want[] = { 0, 200, 300, 600 };
	assert_order(got, n, want, 4);
	set(f, "front_merges", "0");
	assert_false(f->e.ops->allow_front_merge(&f->e));
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_ranges),
		cmocka_unit_test(test_sector_order),
		cmocka_unit_test(test_batch_unexpired),
		cmocka_unit_test(test_batch_read_expiry),
		cmocka_unit_test(test_fifo_batch_tunable),
		cmocka_unit_test(test_writes_starved),
		cmocka_unit_test(test_write_expiry),
		cmocka_unit_test(test_merge_requests),
		cmocka_unit_test(test_front_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
