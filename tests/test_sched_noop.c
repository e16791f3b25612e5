/* noop elevator: FIFO order and merge bookkeeping, driven directly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "blk/sched/sched.h"

static void rq_init(struct request *rq, uint64_t sector, uint32_t n, unsigned flags)
{
	memset(rq, 0, sizeof *rq);
	rq->sector = sector;
	rq->nr_sectors = n;
	rq->flags = flags;
	list_init(&rq->elv_fifo);
	list_init(&rq->elv_sort);
}

static void test_noop_fifo(void **state)
{
	(void)state;
	struct elevator e = { .ops = &elv_noop_ops };
	assert_int_equal(e.ops->init(&e), 0);
	assert_ptr_equal(elv_find("noop"), &elv_noop_ops);
	struct request rq[5];
	const uint64_t sectors[5] = { 900, 10, 500, 20, 0 };
	assert_true(e.ops->empty(&e));
	for (int i = 0; i < 5; i++) {
		rq_init(&rq[i], sectors[i], 8, i % 2 ? BLK_WRITE : BLK_READ);
		e.ops->add_request(&e, &rq[i]);
	}
	assert_false(e.ops->empty(&e));
	for (int i = 0; i < 5; i++)
		assert_ptr_equal(e.ops->dispatch(&e, false), &rq[i]);
	assert_null(e.ops->dispatch(&e, false));
	assert_null(e.ops->dispatch(&e, true));
	assert_true(e.ops->empty(&e));
	e.ops->exit(&e);
}

static void test_noop_merge(void **state)
{
	(void)state;
	struct elevator e = { .ops = &elv_noop_ops };
	assert_int_equal(e.ops->init(&e), 0);
	struct request a, b, c;
	rq_init(&a, 100, 8, BLK_WRITE);
	rq_init(&b, 50, 8, BLK_WRITE);
	rq_init(&c, 108, 8, BLK_WRITE);
	e.ops->add_request(&e, &a);
	e.ops->add_request(&e, &b);
	e.ops->add_request(&e, &c);
	/* c merged into a: a keeps its FIFO place, c disappears. */
	a.nr_sectors += c.nr_sectors;
	e.ops->merge_requests(&e, &a, &c);
	assert_ptr_equal(e.ops->dispatch(&e, false), &a);
	assert_false(e.ops->empty(&e));
	assert_ptr_equal(e.ops->dispatch(&e, false), &b);
	assert_null(e.ops->dispatch(&e, false));
	assert_true(e.ops->empty(&e));
	e.ops->exit(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noop_fifo),
		cmocka_unit_test(test_noop_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
