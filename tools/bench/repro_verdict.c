/* bench repro: verdicts from bounds (repro_verdict.h). */
#include "repro_verdict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static bool bound_ok(struct rp_bound b)
{
	return !isnan(b.lo) && !isnan(b.hi) && b.lo <= b.hi;
}

enum rp_verdict rp_verdict_of(struct rp_bound num, struct rp_bound den, const char *rel, double target)
{
	if (!bound_ok(num) || !bound_ok(den) || den.lo <= 0 || num.lo < 0 || isnan(target))
		return RP_VERDICT_NA;
	/* den.hi infinite: the ratio may be as small as 0; num.hi infinite:
	 * as large as infinity (IEEE division gives both) */
	double lo = num.lo / den.hi, hi = num.hi / den.lo;
	bool at_least = rel[0] == '>', strict = rel[1] != '=';
	if (at_least) {
		if (strict ? lo > target : lo >= target)
			return RP_VERDICT_HOLDS;
		if (strict ? hi <= target : hi < target)
			return RP_VERDICT_SHORT;
	} else {
		if (strict ? hi < target : hi <= target)
			return RP_VERDICT_HOLDS;
		if (strict ? lo >= target : lo > target)
			return RP_VERDICT_SHORT;
	}
	return RP_VERDICT_UNDECIDED;
}

/* Nearest rank: the ceil(q n)-th smallest. */
static unsigned rank_of(unsigned n, double q)
{
	unsigned k = (unsigned)ceil(q * n);
	return k ? k : 1;
}

struct rp_bound rp_quantile_bounds(const double *v, unsigned n, unsigned censored, double q)
{
	struct rp_bound b = { NAN, NAN };
	if (!n || censored > n)
		return b;
	double *s = malloc(n * sizeof *s);
	if (!s)
		return b;
	unsigned k = rank_of(n, q), exact = n - censored;
	memcpy(s, v, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_double);
	b.lo = s[k - 1];
	/* the censored samples at infinity: the k-th smallest is the k-th of
	 * the exact ones, or infinity when fewer than k are exact */
	memcpy(s, v, exact * sizeof *s);
	qsort(s, exact, sizeof *s, cmp_double);
	b.hi = k <= exact ? s[k - 1] : INFINITY;
	if (b.hi < b.lo) /* cannot happen: raising samples raises ranks */
		b.hi = b.lo;
	free(s);
	return b;
}

const char *rp_verdict_name(enum rp_verdict v)
{
	switch (v) {
	case RP_VERDICT_HOLDS: return "**holds**";
	case RP_VERDICT_SHORT: return "**short**";
	case RP_VERDICT_UNDECIDED: return "undecided (censored)";
	default: return "n/a (a run is missing, skipped or failed)";
	}
}
