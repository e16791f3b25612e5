/* bench repro: a done-when check's verdict from bounds, not raw values
 * (issue 40). A latency figure that includes an operation still in flight
 * when the run was stopped (a censored sample: its time so far) is only a
 * lower bound: the true value lies in [lo, hi], hi = INFINITY when the
 * censored samples can move it without limit. A check holds only when
 * every value in the bounds satisfies it, is short only when none does, and
 * is otherwise undecided (censored). Kept apart from repro_report.c so
 * that tests/test_repro_verdict.c can link it alone.
 */
#ifndef NOSTALL_TOOLS_REPRO_VERDICT_H
#define NOSTALL_TOOLS_REPRO_VERDICT_H

#include <stdbool.h>

struct rp_bound {
	double lo, hi;            /* the value lies in [lo, hi]; lo == hi: exact */
};

enum rp_verdict {
	RP_VERDICT_HOLDS,
	RP_VERDICT_SHORT,
	RP_VERDICT_UNDECIDED,     /* a censored side leaves both possible */
	RP_VERDICT_NA,            /* a side missing (NaN) or a zero denominator */
};

/* num / den against target with rel ">=", ">", "<=" or "<". The ratio's
 * bounds: [num.lo / den.hi, num.hi / den.lo]. */
enum rp_verdict rp_verdict_of(struct rp_bound num, struct rp_bound den, const char *rel, double target);

/* The nearest-rank quantile q of n samples, the last `censored` of which
 * (in `v`'s order) are lower bounds, as bounds: lo is the quantile with the
 * censored samples at their lower bounds, hi the same with them at
 * infinity (INFINITY when they reach the quantile's rank). v is not
 * modified. */
struct rp_bound rp_quantile_bounds(const double *v, unsigned n, unsigned censored, double q);

const char *rp_verdict_name(enum rp_verdict v);

#endif
