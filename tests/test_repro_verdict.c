/* bench repro's verdict logic (tools/bench/repro_verdict.c, issue 40): a
 * check holds only when the bounds prove it, censored numerators and
 * denominators make it undecided unless the bound alone decides, and a
 * quantile's upper bound moves to infinity exactly when the censored
 * samples reach its rank. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../tools/bench/repro_verdict.h"

#include <math.h>

static struct rp_bound exact(double v)
{
	return (struct rp_bound){ v, v };
}

/* a censored value: at least v */
static struct rp_bound atleast(double v)
{
	return (struct rp_bound){ v, INFINITY };
}

static void test_verdict_exact(void **state)
{
	(void)state;
	assert_int_equal(rp_verdict_of(exact(1), exact(10), "<=", 0.2), RP_VERDICT_HOLDS);
	assert_int_equal(rp_verdict_of(exact(3), exact(10), "<=", 0.2), RP_VERDICT_SHORT);
	assert_int_equal(rp_verdict_of(exact(2), exact(10), "<=", 0.2), RP_VERDICT_HOLDS); /* at the target */
	assert_int_equal(rp_verdict_of(exact(2), exact(10), "<", 0.2), RP_VERDICT_SHORT);
	assert_int_equal(rp_verdict_of(exact(30), exact(10), ">=", 3), RP_VERDICT_HOLDS);
	assert_int_equal(rp_verdict_of(exact(29), exact(10), ">=", 3), RP_VERDICT_SHORT);
	assert_int_equal(rp_verdict_of(exact(10), exact(10), ">", 1), RP_VERDICT_SHORT);
	assert_int_equal(rp_verdict_of(exact(11), exact(10), ">", 1), RP_VERDICT_HOLDS);
}

/* "<=": a censored numerator (at least num) never proves it holds, but
 * proves it short once its lower bound alone is over the target. */
static void test_verdict_censored_numerator_le(void **state)
{
	(void)state;
	assert_int_equal(rp_verdict_of(atleast(1), exact(10), "<=", 0.2), RP_VERDICT_UNDECIDED);
	assert_int_equal(rp_verdict_of(atleast(3), exact(10), "<=", 0.2), RP_VERDICT_SHORT);
	/* a bounded censored quantile (hi finite) can still hold */
	assert_int_equal(rp_verdict_of((struct rp_bound){ 1, 1.5 }, exact(10), "<=", 0.2), RP_VERDICT_HOLDS);
}

/* "<=": a censored denominator only grows, so a ratio under the target
 * holds (the old code's only right case), one over it is undecided. */
static void test_verdict_censored_denominator_le(void **state)
{
	(void)state;
	assert_int_equal(rp_verdict_of(exact(1), atleast(10), "<=", 0.2), RP_VERDICT_HOLDS);
	assert_int_equal(rp_verdict_of(exact(3), atleast(10), "<=", 0.2), RP_VERDICT_UNDECIDED);
}

/* ">=": a censored denominator (atime RT/4, max_sectors_kb=64) never proves
 * it holds - the old check printed "holds" on such a raw ratio - while a
 * censored numerator over the target does. */
static void test_verdict_censored_ge(void **state)
{
	(void)state;
	assert_int_equal(rp_verdict_of(exact(40), atleast(10), ">=", 3), RP_VERDICT_UNDECIDED);
	assert_int_equal(rp_verdict_of(exact(20), atleast(10), ">=", 3), RP_VERDICT_SHORT);
	assert_int_equal(rp_verdict_of(atleast(40), exact(10), ">=", 3), RP_VERDICT_HOLDS);
	assert_int_equal(rp_verdict_of(atleast(20), exact(10), ">=", 3), RP_VERDICT_UNDECIDED);
	assert_int_equal(rp_verdict_of(exact(20), atleast(10), ">", 1), RP_VERDICT_UNDECIDED);
	assert_int_equal(rp_verdict_of(atleast(20), atleast(10), ">=", 3), RP_VERDICT_UNDECIDED);
}

static void test_verdict_na(void **state)
{
	(void)state;
	assert_int_equal(rp_verdict_of(exact(NAN), exact(10), "<=", 1), RP_VERDICT_NA);
	assert_int_equal(rp_verdict_of(exact(1), exact(NAN), "<=", 1), RP_VERDICT_NA);
	assert_int_equal(rp_verdict_of(exact(1), exact(0), "<=", 1), RP_VERDICT_NA);
}

static void test_quantile_bounds(void **state)
{
	(void)state;
	/* 10 samples, the last (censored) at 50: p50 is exact, the max is
	 * open, p99 (rank 10 of 10) too */
	double v[10] = { 5, 1, 4, 2, 3, 7, 6, 9, 8, 50 };
	struct rp_bound b = rp_quantile_bounds(v, 10, 1, 0.5);
	assert_true(b.lo == 5 && b.hi == 5);
	b = rp_quantile_bounds(v, 10, 1, 1.0);
	assert_true(b.lo == 50 && isinf(b.hi));
	b = rp_quantile_bounds(v, 10, 1, 0.99);
	assert_true(b.lo == 50 && isinf(b.hi));
	/* a censored sample below the median: the median may rise, but only
	 * to the next exact sample */
	double w[5] = { 10, 20, 30, 40, 2 };
	b = rp_quantile_bounds(w, 5, 1, 0.5); /* rank 3: {2,10,20,..} -> 20; {10,20,30,..} -> 30 */
	assert_true(b.lo == 20 && b.hi == 30);
	/* no censored sample: exact; all censored: open from the first rank */
	b = rp_quantile_bounds(w, 5, 0, 1.0);
	assert_true(b.lo == 40 && b.hi == 40);
	b = rp_quantile_bounds(w, 5, 5, 0.2);
	assert_true(b.lo == 2 && isinf(b.hi));
	b = rp_quantile_bounds(w, 0, 0, 0.5);
	assert_true(isnan(b.lo));
	/* feeding the bounds on: a censored denominator max over a numerator */
	assert_int_equal(rp_verdict_of(exact(40), rp_quantile_bounds(v, 10, 1, 1.0), "<=", 1), RP_VERDICT_HOLDS);
	assert_int_equal(rp_verdict_of(exact(40), rp_quantile_bounds(v, 10, 1, 1.0), ">=", 0.5), RP_VERDICT_UNDECIDED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_exact),
		cmocka_unit_test(test_verdict_censored_numerator_le),
		cmocka_unit_test(test_verdict_censored_denominator_le),
		cmocka_unit_test(test_verdict_censored_ge),
		cmocka_unit_test(test_verdict_na),
		cmocka_unit_test(test_quantile_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
