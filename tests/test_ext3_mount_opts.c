/* ext3 mount options that reach the journal: an era preset brings 2009's
 * barrier=0 (ext3's default until 2.6.38) unless barrier= or nobarrier is
 * given, in whatever order; nostall's own default stays barrier=1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ext3/ext3.h"

static bool barrier_of(const char *opts)
{
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	int rc = ext3_mount_opts_parse(&o, opts);
	assert_int_equal(rc, 0);
	bool b = o.jcfg.barrier;
	ext3_mount_opts_release(&o);
	return b;
}

static void test_era_barrier_defaults(void **state)
{
	(void)state;
	assert_true(barrier_of(""));                       /* nostall's default */
	assert_true(barrier_of("preset=nostall"));
	assert_false(barrier_of("preset=2.6.30"));         /* 2009 ext3 */
	assert_false(barrier_of("preset=2.6.29"));
	assert_false(barrier_of("preset=2.6.30-rc1"));
	assert_true(barrier_of("preset=2.6.30,barrier=1")); /* explicit wins */
	assert_true(barrier_of("barrier=1,preset=2.6.30")); /* in any order */
	assert_false(barrier_of("nobarrier"));
	assert_false(barrier_of("preset=nostall,barrier=0"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_era_barrier_defaults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
