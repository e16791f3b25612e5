/* fault: device: exact rule behaviour, errors delivered through done().
 * nostall-test: concurrent */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct dev *open_ok(const char *spec)
{
	struct dev *d = NULL;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	return d;
}

static void test_fault_after_count_range(void **state)
{
	(void)state;
	struct dev *d = open_ok("fault:mem:1M,op=write,sector=1000-2000,err=eio,after=3,count=2");
	char buf[4096] = { 0 };
	/* Outside the range: never fails. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	/* Reads in range never match op=write. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 1000, 8, buf, 0), 0);
	/* Overlapping the range at either edge matches. */
	int results[8];
	uint64_t sectors[8] = { 993, 2000, 1500, 1000, 1996, 1200, 1300, 1400 };
	for (int i = 0; i < 8; i++)
		results[i] = dev_rw_sync(d, DEV_OP_WRITE, sectors[i], 8, buf, 0);
	int want[8] = { 0, 0, 0, -EIO, -EIO, 0, 0, 0 };
	for (int i = 0; i < 8; i++)
		assert_int_equal(results[i], want[i]);
	/* Just outside: 992..999 ends before 1000, 2001.. starts after 2000. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 992, 8, buf, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 2001, 8, buf, 0), 0);
	assert_int_equal(dev_fault_injected(d), 2);
	assert_int_equal(dev_flush_sync(d), 0);
	dev_close(d);
}

static void test_fault_enospc_and_flush(void **state)
{
	(void)state;
	struct dev *d = open_ok("fault:mem:1M,op=write,err=enospc,count=1");
	char buf[4096] = { 0 };
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), -ENOSPC);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	dev_close(d);
	d = open_ok("fault:mem:1M,op=flush");
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, buf, 0), 0);
	assert_int_equal(dev_flush_sync(d), -EIO);
	assert_int_equal(dev_flush_sync(d), -EIO); /* count=0: every time */
	dev_close(d);
	/* A sector rule never matches a flush. */
	d = open_ok("fault:mem:1M,sector=0-100");
	assert_int_equal(dev_flush_sync(d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, buf, 0), -EIO);
	dev_close(d);
}

static void test_fault_short(void **state)
{
	(void)state;
	struct dev *d = open_ok("fault:mem:1M,op=write,err=short,count=1");
	char w[8192], r[8192];
	memset(w, 0x77, sizeof(w));
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 64, 16, w, 0), -EIO);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 64, 16, r, 0), 0);
	/* The first half landed (a torn write), the rest did not. */
	for (int i = 0; i < 4096; i++)
		assert_int_equal((unsigned char)r[i], 0x77);
	for (int i = 4096; i < 8192; i++)
		assert_int_equal(r[i], 0);
	dev_close(d);
	/* One sector: nothing can land. */
	d = open_ok("fault:mem:1M,op=write,err=short");
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 1, w, 0), -EIO);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 1, r, 0), 0);
	assert_int_equal(r[0], 0);
	dev_close(d);
}

static unsigned fail_pattern(const char *spec, unsigned n, unsigned char *bits)
{
	struct dev *d = open_ok(spec);
	char buf[512];
	unsigned fails = 0;
	for (unsigned i = 0; i < n; i++) {
		int rc = dev_rw_sync(d, DEV_OP_READ, i % 100, 1, buf, 0);
		assert_true(rc == 0 || rc == -EIO);
		bits[i] = rc != 0;
		fails += rc != 0;
	}
	dev_close(d);
	return fails;
}

static void test_fault_probability_reproducible(void **state)
{
	(void)state;
	unsigned seed = (unsigned)(clock_now_ns() % 100000);
	printf("seed %u\n", seed);
	char spec[128];
	snprintf(spec, sizeof(spec), "fault:mem:1M,op=read,prob=0.5,seed=%u", seed);
	static unsigned char a[2000], b[2000];
	unsigned fa = fail_pattern(spec, 2000, a);
	unsigned fb = fail_pattern(spec, 2000, b);
	assert_int_equal(fa, fb);
	assert_memory_equal(a, b, sizeof(a));
	assert_true(fa > 800 && fa < 1200);
	snprintf(spec, sizeof(spec), "fault:mem:1M,op=read,prob=0.5,seed=%u", seed + 1);
	fail_pattern(spec, 2000, b);
	assert_memory_not_equal(a, b, sizeof(a));
	/* prob=0: never. */
	assert_int_equal(fail_pattern("fault:mem:1M,prob=0", 200, a), 0);
}

/* Nested faults: both rules act; ",," separates the rules explicitly. */
static void test_fault_nested(void **state)
{
	(void)state;
	struct dev *d = open_ok("fault:fault:mem:1M,op=read,err=enospc,,op=write,count=1");
	char buf[512];
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 1, buf, 0), -ENOSPC);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 1, buf, 0), -EIO);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 1, buf, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 1, buf, 0), -ENOSPC);
	dev_close(d);
}

struct counter {
	atomic_int done;
	atomic_int eio;
};

static void count_done(struct dev_io *io, int err)
{
	struct counter *c = io->priv;
	if (err == -EIO)
		atomic_fetch_add(&c->eio, 1);
	atomic_fetch_add(&c->done, 1);
}

/* Over an asynchronous device: failures and passes all come through done(). */
static void test_fault_async(void **state)
{
	(void)state;
	struct dev *d = open_ok("fault:sim:ssd,scale=0.01,size=16M,op=read,after=4,count=8");
	struct counter c;
	atomic_init(&c.done, 0);
	atomic_init(&c.eio, 0);
	struct dev_io ios[32];
	static char buf[32 * 4096];
	for (unsigned i = 0; i < 32; i++) {
		ios[i] = (struct dev_io){ .op = DEV_OP_READ, .sector = i * 8, .nr_sectors = 8,
					  .buf = buf + i * 4096, .done = count_done, .priv = &c };
		assert_int_equal(dev_submit(d, &ios[i]), 0);
	}
	dev_close(d); /* waits for all 32 */
	assert_int_equal(atomic_load(&c.done), 32);
	assert_int_equal(atomic_load(&c.eio), 8);
}

static void test_fault_bad_specs(void **state)
{
	(void)state;
	struct dev *d;
	const char *bad[] = { "fault:mem:1M,op=", "fault:mem:1M,sector=x", "fault:mem:1M,count=-1",
			      "fault:mem:1M,after", "fault:mem:1M,seed=1.5", "fault:floppy:3,op=read" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear();
		int rc = dev_open(bad[i], &d);
		if (rc != -EINVAL)
			fail_msg("dev_open(%s) = %d", bad[i], rc);
		printf("%s -> %s\n", bad[i], err_last(rc));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_after_count_range),
		cmocka_unit_test(test_fault_enospc_and_flush),
		cmocka_unit_test(test_fault_short),
		cmocka_unit_test(test_fault_probability_reproducible),
		cmocka_unit_test(test_fault_nested),
		cmocka_unit_test(test_fault_async),
		cmocka_unit_test(test_fault_bad_specs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
