/* bench repro: results.json (flat records, docs/bench-repro.schema.json),
 * report.md (a table per workload, the done-when checks with their
 * ratios, the plots) — every number in them comes from this run.
 */
#include "repro.h"
#include "repro_verdict.h"

#include "util/err.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ JSON */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static const struct rp_bench *json_bench; /* rp_json_write's: --fs for every record */

static void json_record(FILE *f, const struct rp_run *r, bool *first, const char *metric, double v,
			const char *unit, unsigned samples)
{
	const char *const kv[][2] = { { "workload", r->workload }, { "device", r->device }, { "system", r->system },
				      { "preset", r->preset },     { "mode", r->mode },     { "config", r->config },
				      { "metric", metric } };
	fprintf(f, "%s\n  {", *first ? "" : ",");
	*first = false;
	for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
		fprintf(f, "%s\"%s\": ", i ? ", " : "", kv[i][0]);
		json_str(f, kv[i][1]);
	}
	if (isnan(v) || isinf(v))
		fprintf(f, ", \"value\": null");
	else
		fprintf(f, ", \"value\": %.6g", v);
	fprintf(f, ", \"unit\": ");
	json_str(f, unit);
	fprintf(f, ", \"samples\": %u", samples);
	/* "fs" (and "features") only with --fs: without, the records are
	 * what they were before the option */
	if (json_bench && json_bench->fs) {
		fprintf(f, ", \"fs\": ");
		json_str(f, json_bench->fs);
		if (json_bench->features) {
			fprintf(f, ", \"features\": ");
			json_str(f, json_bench->features);
		}
	}
	fputc('}', f);
}

int rp_json_write(const struct rp_bench *b, FILE *f)
{
	bool first = true;
	json_bench = b;
	fputc('[', f);
	for (int i = 0; i < b->nruns; i++) {
		const struct rp_run *r = &b->runs[i];
		/* A run that did not run (skipped) or broke (failed) is one
		 * record with a null value; its reason is in the report. */
		if (!strncmp(r->status, "skipped", 7) || (!strncmp(r->status, "failed", 6) && !r->nm)) {
			json_record(f, r, &first, r->status[0] == 's' ? "skipped" : "failed", NAN, "", 0);
			continue;
		}
		for (int j = 0; j < r->nm; j++)
			json_record(f, r, &first, r->m[j].name, r->m[j].value, r->m[j].unit, r->m[j].samples);
	}
	fputs("\n]\n", f);
	return ferror(f) ? err_set(-EIO, "writing results.json failed") : 0;
}

/* ------------------------------------------------------------ lookups */

/* want: a config, or alternatives "a|b" (a check that looks for a mode in
 * an era whichever of its configs ran it). */
static bool config_match(const char *want, const char *have)
{
	size_t n = strlen(have);
	for (const char *w = want; w; w = strchr(w, '|') ? strchr(w, '|') + 1 : NULL) {
		size_t len = strcspn(w, "|");
		if (len == n && !strncmp(w, have, n))
			return true;
	}
	return false;
}

static const struct rp_run *find(const struct rp_bench *b, const char *workload, const char *system,
				 const char *preset, const char *mode, const char *config)
{
	for (int i = 0; i < b->nruns; i++) {
		const struct rp_run *r = &b->runs[i];
		if (!strcmp(r->workload, workload) && !strcmp(r->system, system) && !strcmp(r->preset, preset) &&
		    !strcmp(r->mode, mode) && config_match(config, r->config) && strncmp(r->status, "skipped", 7))
			return r;
	}
	return NULL;
}

static unsigned samples_of(const struct rp_run *r, const char *metric);

/* The bounds of a run's figure (repro_verdict.h): exact, unless it is a
 * latency percentile of a series with censored samples (operations still
 * in flight when the run stopped, at their time so far): then from the
 * series, hi = INFINITY where the censored samples reach its rank; without
 * the series (a run reporting another's figures) any censored sample opens
 * it. */
static struct rp_bound metric_bounds(const struct rp_run *r, const char *metric)
{
	double v = rp_run_get(r, metric);
	struct rp_bound b = { v, v };
	static const struct {
		const char *suffix;
		double q;
	} qs[] = { { "_p50_ms", 0.5 }, { "_p99_ms", 0.99 }, { "_max_ms", 1.0 } };
	size_t len = strlen(metric), i;
	for (i = 0; i < 3; i++) {
		size_t sl = strlen(qs[i].suffix);
		if (len > sl && !strcmp(metric + len - sl, qs[i].suffix))
			break;
	}
	if (i == 3 || isnan(v))
		return b;
	char prefix[40], tm[64];
	snprintf(prefix, sizeof prefix, "%.*s", (int)(len - strlen(qs[i].suffix)), metric);
	snprintf(tm, sizeof tm, "%s_timeouts", prefix);
	if (!(rp_run_get(r, tm) > 0))
		return b;
	unsigned n = 0, c = 0;
	for (int k = 0; k < r->ns; k++)
		n += r->s[k].n;
	double *vals = n ? malloc(n * sizeof *vals) : NULL;
	n = 0;
	for (int pass = 0; vals && pass < 2; pass++) /* exact samples first, then the censored */
		for (int k = 0; k < r->ns; k++) {
			const struct rp_series *s = &r->s[k];
			char name[32];
			snprintf(name, sizeof name, "%s", s->name);
			for (char *ch = name; *ch; ch++)
				*ch = *ch == '-' ? '_' : *ch;
			bool mine = !strcmp(name, prefix) || (!strcmp(prefix, "probe") && !strncmp(name, "probe_", 6));
			if (!mine)
				continue;
			unsigned exact = s->n - s->censored;
			for (unsigned j = pass ? exact : 0; j < (pass ? s->n : exact); j++)
				vals[n++] = s->ms[j];
			c += pass ? s->censored : 0;
		}
	if (!n || !c)
		b.hi = INFINITY;
	else
		b.hi = rp_quantile_bounds(vals, n, c, qs[i].q).hi;
	if (b.hi < b.lo)
		b.hi = b.lo;
	free(vals);
	return b;
}

/* One side of a ratio: a run and its metric. */
struct side {
	const char *workload, *system, *preset, *mode, *config, *metric, *name;
};

struct check {
	const char *what;
	struct side num, den;     /* ratio = num / den */
	const char *rel;          /* ">=", ">", "<=" or "<" */
	double target;
	const char *anchor;       /* the seed's or anchor's sentence and figure */
};

/* The value's bounds (total_s falls back to its extrapolation); *few
 * lowered to the sample count behind a latency figure. A p99 of fewer
 * than RP_P99_SAMPLES samples is their maximum: the max is used and
 * `label` says so. */
static struct rp_bound side_get(const struct rp_bench *b, const struct side *s, unsigned *few, char *label,
				size_t llen)
{
	snprintf(label, llen, "%s", s->name);
	const struct rp_run *r = find(b, s->workload, s->system, s->preset, s->mode, s->config);
	if (!r)
		return (struct rp_bound){ NAN, NAN };
	char metric[48];
	snprintf(metric, sizeof metric, "%s", s->metric);
	char *p99 = strstr(metric, "_p99_ms");
	if (p99 && samples_of(r, metric) < RP_P99_SAMPLES) {
		memcpy(p99, "_max_ms", 8);
		snprintf(label, llen, "%s (max: p99 of %u)", s->name, samples_of(r, s->metric));
	}
	struct rp_bound v = metric_bounds(r, metric);
	if (isnan(v.lo) && !strcmp(metric, "total_s"))
		v = metric_bounds(r, "total_s_extrapolated");
	unsigned n = samples_of(r, metric);
	if (strstr(metric, "_ms") && n < *few)
		*few = n;
	return v;
}

static void bound_print(FILE *f, struct rp_bound v)
{
	if (v.lo == v.hi || isnan(v.lo))
		fprintf(f, "%.4g", v.lo);
	else if (isinf(v.hi))
		fprintf(f, ">=%.4g", v.lo);
	else
		fprintf(f, "%.4g..%.4g", v.lo, v.hi);
}

static void check_print(FILE *f, const struct rp_bench *b, const struct check *c)
{
	unsigned few = UINT32_MAX;
	char nl[64], dl[64];
	struct rp_bound num = side_get(b, &c->num, &few, nl, sizeof nl), den = side_get(b, &c->den, &few, dl, sizeof dl);
	enum rp_verdict v = rp_verdict_of(num, den, c->rel, c->target);
	const char *verdict = rp_verdict_name(v);
	if (v != RP_VERDICT_NA && few < RP_MIN_SAMPLES)
		verdict = "n/a (too few samples for a percentile)";
	fprintf(f, "| %s | %s | %s ", c->what, c->anchor, nl);
	bound_print(f, num);
	fprintf(f, " / %s ", dl);
	bound_print(f, den);
	fprintf(f, " | ");
	struct rp_bound ratio = { num.lo / den.hi, num.hi / den.lo };
	if (den.lo > 0 && !isnan(ratio.lo) && !isnan(ratio.hi)) {
		if (ratio.lo == ratio.hi)
			fprintf(f, "%.3g", ratio.lo);
		else if (isinf(ratio.hi))
			fprintf(f, ">=%.3g", ratio.lo);
		else
			fprintf(f, "%.3g..%.3g", ratio.lo, ratio.hi);
	} else {
		fprintf(f, "-");
	}
	fprintf(f, " | %s %.3g | %s", c->rel, c->target, verdict);
	if (few < UINT32_MAX)
		fprintf(f, " (fewest samples: %u)", few);
	fprintf(f, " |\n");
}

#define FUS "fsync-under-stream"
#define OW "overwrite"
#define JENS(p, n) { "jens", "nostall", p, "ordered", "idle", "total_s", n }
#define FUS_P99(p, m, n) { FUS, "nostall", p, m, "stream", "fsync_p99_ms", n }
/* An era's run in mode m, whether or not m is its default. */
#define FUS_P99_ANY(p, m, n) { FUS, "nostall", p, m, "stream|era-default", "fsync_p99_ms", n }
#define FUS_P99_ERA(p, m, n) { FUS, "nostall", p, m, "era-default", "fsync_p99_ms", n }
#define OW_M(p, metric, n) { OW, "nostall", p, "ordered", "overwriter", metric, n }
#define ATIME(p, prio, metric, n) { "atime", "nostall", p, "ordered", "journal_ioprio=" prio, metric, n }

#define A_AXBOE "Axboe (seed 001): the loop \"(for nr == 2000) takes 16 seconds in -git, completes in 0.9s with the patches\" (17.8x)"
#define A_TSO "Ts'o (LWN 327107, 2009-04-03): fsync-tester beside overwrite.c, 2.43-6.33 s per fsync on 2.6.29 (9 samples), 0.29-1.81 s with the patches (11); overwrite.c 24 -> 21 MB/s"
#define A_ARJAN "Arjan (seed 010, 2.6.27): atime updates during a kernel build \"had latencies of 6 seconds or longer\"; RT kjournald: \"go down by a factor of 3x to 4x\""
#define A_DEFAULT "Article (seed 000): \"ext3 mounts to silently switch to data=writeback mode with 2.6.30 kernels\" (no figure)"
#define A_ORDERED "Article (seed 000): \"in data=ordered mode ... the amount of data to be written guarantees that fsync() will always be slower\" (no figure; the target is issue 13's)"
#define A_LINUS "Article (seed 000): Linus set max_sectors_kb to 64KB \"and reports that things worked a lot better\" (no figure)"
#define A_LINUS_WBT "Article (seed 000): Linus: \"it might make sense to cap the maximum amount of outstanding data, rather than the size of any individual request\" (no figure; Linux 4.10's blk-wbt)"
#define A_NONE "no figure in the seeds (issue 13's target)"

static const struct check checks[] = {
	{ "Jens loop, idle: 2.6.30 >= 10x faster than 2.6.30-rc1", JENS("2.6.30-rc1", "rc1 s"), JENS("2.6.30", "2.6.30 s"), ">=", 10, A_AXBOE },
	{ "Jens loop, idle: 2.6.29 close to 2.6.30 (within 2x)", JENS("2.6.29", "2.6.29 s"), JENS("2.6.30", "2.6.30 s"), "<=", 2, A_NONE },
	{ "fsync p99 beside a streamer, each era in its default mode: 2.6.30 (writeback) <= 1/5 of 2.6.29 (ordered)",
	  FUS_P99_ERA("2.6.30", "writeback", "2.6.30 ms"), FUS_P99_ERA("2.6.29", "ordered", "2.6.29 ms"), "<=", 0.2, A_DEFAULT },
	{ "... both in data=ordered: 2.6.30 <= 1/5 of 2.6.29", FUS_P99_ANY("2.6.30", "ordered", "2.6.30 ms"),
	  FUS_P99_ANY("2.6.29", "ordered", "2.6.29 ms"), "<=", 0.2, A_NONE },
	{ "... both in data=writeback: 2.6.30 <= 1/5 of 2.6.29", FUS_P99_ANY("2.6.30", "writeback", "2.6.30 ms"),
	  FUS_P99_ANY("2.6.29", "writeback", "2.6.29 ms"), "<=", 0.2, A_NONE },
	{ "overwrite (Ts'o's test), data=ordered: 2.6.30 fsync median <= 1/2 of 2.6.29's",
	  OW_M("2.6.30", "fsync_p50_ms", "2.6.30 ms"), OW_M("2.6.29", "fsync_p50_ms", "2.6.29 ms"), "<=", 0.5, A_TSO },
	{ "... fsync max <= 1/2 of 2.6.29's", OW_M("2.6.30", "fsync_max_ms", "2.6.30 ms"),
	  OW_M("2.6.29", "fsync_max_ms", "2.6.29 ms"), "<=", 0.5, A_TSO },
	{ "... the overwriter keeps >= 80% of its 2.6.29 rate", OW_M("2.6.30", "stream_mbps", "2.6.30 MiB/s"),
	  OW_M("2.6.29", "stream_mbps", "2.6.29 MiB/s"), ">=", 0.8, A_TSO },
	{ "atime on 2.6.29 (Arjan's kind of kernel): probe p99 RT/4 >= 3x lower than BE/4",
	  ATIME("2.6.29", "BE/4", "probe_p99_ms", "BE/4 ms"), ATIME("2.6.29", "RT/4", "probe_p99_ms", "RT/4 ms"), ">=", 3, A_ARJAN },
	{ "... probe max RT/4 >= 3x lower than BE/4 (2.6.29)",
	  ATIME("2.6.29", "BE/4", "probe_max_ms", "BE/4 ms"), ATIME("2.6.29", "RT/4", "probe_max_ms", "RT/4 ms"), ">=", 3, A_ARJAN },
	{ "... on 2.6.30 (the fixes made the patch moot): probe p99 RT/4 >= 3x lower than BE/4",
	  ATIME("2.6.30", "BE/4", "probe_p99_ms", "BE/4 ms"), ATIME("2.6.30", "RT/4", "probe_p99_ms", "RT/4 ms"), ">=", 3, A_ARJAN },
	{ "max_sectors_kb=64 lowers fsync p99 beside the streamer",
	  { "max-sectors", "nostall", "2.6.30", "ordered", "max_sectors_kb=512", "fsync_p99_ms", "512: ms" },
	  { "max-sectors", "nostall", "2.6.30", "ordered", "max_sectors_kb=64", "fsync_p99_ms", "64: ms" }, ">", 1, A_LINUS },
	{ "max_sectors_kb=64 lowers fsync p99 beside the streamer (writeback)",
	  { "max-sectors", "nostall", "2.6.30", "writeback", "max_sectors_kb=512", "fsync_p99_ms", "512: ms" },
	  { "max-sectors", "nostall", "2.6.30", "writeback", "max_sectors_kb=64", "fsync_p99_ms", "64: ms" }, ">", 1, A_LINUS },
	{ "writeback throttling (wbt_lat_usec=75000) lowers fsync p99 beside the streamer",
	  { "max-sectors", "nostall", "2.6.30", "ordered", "max_sectors_kb=512", "fsync_p99_ms", "off: ms" },
	  { "max-sectors", "nostall", "2.6.30", "ordered", "wbt_lat_usec=75000", "fsync_p99_ms", "wbt: ms" }, ">", 1, A_LINUS_WBT },
	{ "writeback throttling lowers fsync p99 beside the streamer (writeback)",
	  { "max-sectors", "nostall", "2.6.30", "writeback", "max_sectors_kb=512", "fsync_p99_ms", "off: ms" },
	  { "max-sectors", "nostall", "2.6.30", "writeback", "wbt_lat_usec=75000", "fsync_p99_ms", "wbt: ms" }, ">", 1, A_LINUS_WBT },
	{ "writeback fsync p99 <= 1/10 of ordered (2.6.30)", FUS_P99_ANY("2.6.30", "writeback", "writeback ms"),
	  FUS_P99_ANY("2.6.30", "ordered", "ordered ms"), "<=", 0.1, A_ORDERED },
	{ "guarded fsync p99 <= 1/10 of ordered (2.6.30)", FUS_P99_ANY("2.6.30", "guarded", "guarded ms"),
	  FUS_P99_ANY("2.6.30", "ordered", "ordered ms"), "<=", 0.1, A_ORDERED },
};

static const struct check peer_checks[] = {
	{ "Jens loop: nostall (library) <= 0.5x kernel ext3 data=ordered", JENS("nostall", "nostall s"),
	  { "jens", "kernel-ext3", "host", "ordered", "idle", "total_s", "kernel s" }, "<=", 0.5, A_NONE },
	{ "Jens loop: nostall-fuse <= 0.5x kernel ext3 data=ordered",
	  { "jens", "nostall-fuse", "nostall", "ordered", "idle", "total_s", "fuse s" },
	  { "jens", "kernel-ext3", "host", "ordered", "idle", "total_s", "kernel s" }, "<=", 0.5, A_NONE },
	{ "guarded fsync p99 <= 1/20 of kernel ext3 data=ordered", FUS_P99("nostall", "guarded", "guarded ms"),
	  { FUS, "kernel-ext3", "host", "ordered", "stream", "fsync_p99_ms", "kernel ms" }, "<=", 0.05, A_NONE },
	{ "guarded streamer >= kernel ext3 data=ordered streamer",
	  { FUS, "nostall", "nostall", "guarded", "stream", "stream_mbps", "guarded MiB/s" },
	  { FUS, "kernel-ext3", "host", "ordered", "stream", "stream_mbps", "kernel MiB/s" }, ">=", 1, A_NONE },
	{ "overwrite: guarded fsync median <= 1/2 of kernel ext3 data=ordered",
	  { OW, "nostall", "nostall", "guarded", "overwriter", "fsync_p50_ms", "guarded ms" },
	  { OW, "kernel-ext3", "host", "ordered", "overwriter", "fsync_p50_ms", "kernel ms" }, "<=", 0.5, A_TSO },
};

static void checks_write(FILE *f, const struct rp_bench *b)
{
	static const char head[] =
		"| claim | anchor | figures | ratio | target | verdict |\n|---|---|---|---|---|---|\n";
	fprintf(f, "\n## Done-when checks (issues 13, 40)\n\n"
		   "A verdict on a latency needs %u samples on each side (fewer: n/a). A p99 of fewer than\n"
		   "%u samples is their maximum (nearest rank), so the checks use the max and say so.\n"
		   "A figure that includes an operation still in flight when the run stopped is a bound\n"
		   "(`>=x`, or `a..b` for a percentile the censored samples can move only that far); a check\n"
		   "holds only when every value within the bounds meets it, is short only when none does,\n"
		   "and is otherwise **undecided (censored)**.\n\n%s",
		RP_MIN_SAMPLES, RP_P99_SAMPLES, head);
	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
		check_print(f, b, &checks[i]);
	if (!b->peers)
		return;
	fprintf(f, "\nPeers, on the host disk:\n\n%s", head);
	for (size_t i = 0; i < sizeof peer_checks / sizeof peer_checks[0]; i++)
		check_print(f, b, &peer_checks[i]);
}

/* The era gain decomposed (issue 40): 2.6.29 ordered -> 2.6.30 ordered
 * (the block layer's and WRITE_SYNC fixes) -> 2.6.30 writeback (the
 * default switch) -> guarded, per workload, each step against the one
 * before and against 2.6.29. */
static void decomp_write(FILE *f, const struct rp_bench *b, const char *workload, const char *config, const char *title)
{
	static const struct {
		const char *preset, *mode, *what;
	} steps[] = {
		{ "2.6.29", "ordered", "2.6.29, data=ordered (a 2009 user's kernel)" },
		{ "2.6.30", "ordered", "2.6.30, data=ordered: the block layer's and WRITE_SYNC fixes" },
		{ "2.6.30", "writeback", "2.6.30, data=writeback: its default mode (the switch)" },
		{ "2.6.30", "guarded", "2.6.30, data=guarded (Mason, seed 011)" },
	};
	const struct rp_run *rs[4];
	int have = 0;
	for (int i = 0; i < 4; i++)
		have += (rs[i] = find(b, workload, "nostall", steps[i].preset, steps[i].mode, config)) != NULL;
	if (have < 2)
		return;
	fprintf(f, "\n### The era gain decomposed: %s\n\n"
		   "| step | fsync p50 ms | max ms | p99 ms | samples | writer MiB/s | p50 / step before | p50 / 2.6.29 |\n"
		   "|---|---:|---:|---:|---:|---:|---:|---:|\n",
		title);
	double first = NAN, prev = NAN;
	for (int i = 0; i < 4; i++) {
		const struct rp_run *r = rs[i];
		if (!r) {
			fprintf(f, "| %s | not run | | | | | | |\n", steps[i].what);
			prev = NAN;
			continue;
		}
		unsigned n = samples_of(r, "fsync_p50_ms");
		double p50 = n >= RP_MIN_SAMPLES ? rp_run_get(r, "fsync_p50_ms") : NAN;
		struct rp_bound mx = metric_bounds(r, "fsync_max_ms");
		fprintf(f, "| %s | %s%.*f | %s%.0f |", steps[i].what, metric_bounds(r, "fsync_p50_ms").hi > p50 ? ">=" : "",
			p50 < 10 ? 2 : 0, p50, mx.hi > mx.lo ? ">=" : "", mx.lo);
		if (n >= RP_P99_SAMPLES)
			fprintf(f, " %.0f |", rp_run_get(r, "fsync_p99_ms"));
		else
			fprintf(f, " n/a (<%u) |", RP_P99_SAMPLES);
		fprintf(f, " %u | %.1f | ", n, rp_run_get(r, "stream_mbps"));
		if (i && !isnan(prev) && !isnan(p50))
			fprintf(f, "%.3g |", p50 / prev);
		else
			fprintf(f, "- |");
		if (i && !isnan(first) && !isnan(p50))
			fprintf(f, " %.3g |\n", p50 / first);
		else
			fprintf(f, " - |\n");
		if (!i)
			first = p50;
		prev = p50;
	}
}

/* ------------------------------------------------------------ tables */

struct column {
	const char *metric;
	const char *title;
};

static void cell(FILE *f, const struct rp_run *r, const char *metric)
{
	double v = rp_run_get(r, metric);
	if (isnan(v) && !strcmp(metric, "total_s") && !isnan(rp_run_get(r, "total_s_extrapolated"))) {
		fprintf(f, " ~%.3g (extrapolated) |", rp_run_get(r, "total_s_extrapolated"));
		return;
	}
	/* A percentile of too few samples is not reported (max is), nor a
	 * p99 of fewer than RP_P99_SAMPLES (it is the max, in its column). */
	bool pct = strstr(metric, "_p50_ms") || strstr(metric, "_p99_ms");
	unsigned n = samples_of(r, metric);
	if (isnan(v) || (pct && n < RP_MIN_SAMPLES) || (strstr(metric, "_p99_ms") && n < RP_P99_SAMPLES)) {
		fprintf(f, " n/a |");
		return;
	}
	/* A figure that includes a timed-out operation is a lower bound. */
	struct rp_bound bd = metric_bounds(r, metric);
	bool lower = bd.hi > bd.lo;
	int decimals = fabs(v) >= 100 || strstr(metric, "timeouts") ? 0 : fabs(v) >= 1 ? 2 : 3;
	fprintf(f, " %s%.*f |", lower ? ">=" : "", decimals, v);
}

static unsigned samples_of(const struct rp_run *r, const char *metric)
{
	for (int i = 0; i < r->nm; i++)
		if (!strcmp(r->m[i].name, metric))
			return r->m[i].samples;
	return 0;
}

static void table_write(FILE *f, const struct rp_bench *b, const char *workload, const char *title,
			const struct column *cols, int ncols, const char *samples_of_metric)
{
	bool any = false;
	for (int i = 0; i < b->nruns && !any; i++)
		any = !strcmp(b->runs[i].workload, workload);
	if (!any)
		return;
	fprintf(f, "\n### %s\n\n| system | device | preset | mode | config |", title);
	for (int c = 0; c < ncols; c++)
		fprintf(f, " %s |", cols[c].title);
	fprintf(f, " samples | status |\n|---|---|---|---|---|");
	for (int c = 0; c < ncols + 2; c++)
		fprintf(f, "---:|");
	fputc('\n', f);
	for (int i = 0; i < b->nruns; i++) {
		const struct rp_run *r = &b->runs[i];
		if (strcmp(r->workload, workload))
			continue;
		fprintf(f, "| %s | %s | %s | %s | %s |", r->system, r->device, r->preset, r->mode, r->config);
		for (int c = 0; c < ncols; c++)
			cell(f, r, cols[c].metric);
		fprintf(f, " %u | %s |\n", samples_of(r, samples_of_metric), r->status[0] ? r->status : "ok");
	}
	for (int i = 0; i < b->nruns; i++) {
		const struct rp_run *r = &b->runs[i];
		if (!strcmp(r->workload, workload) && r->note[0])
			fprintf(f, "\n- %s %s %s %s: %s", r->system, r->preset, r->mode, r->config, r->note);
	}
	fputc('\n', f);
}

static const struct column cols_jens[] = {
	{ "total_s", "total s" }, { "fsync_p50_ms", "iteration p50 ms" }, { "fsync_p99_ms", "p99 ms" },
	{ "fsync_max_ms", "max ms" }, { "fsync_timeouts", "timeouts" },
};
static const struct column cols_fus[] = {
	{ "fsync_p50_ms", "fsync p50 ms" }, { "fsync_p99_ms", "p99 ms" }, { "fsync_max_ms", "max ms" },
	{ "fsync_timeouts", "timeouts" },   { "stream_mbps", "streamer MiB/s" }, { "measured_s", "measured s" },
};
static const struct column cols_atime[] = {
	{ "probe_p50_ms", "probe p50 ms" },         { "probe_p99_ms", "p99 ms" },
	{ "probe_max_ms", "max ms" },               { "probe_atime_p99_ms", "atime p99" },
	{ "probe_touch_p99_ms", "touch p99" },      { "probe_create_p99_ms", "create p99" },
	{ "probe_rename_p99_ms", "rename p99" },    { "probe_timeouts", "timeouts" },
	{ "readers_mbps", "readers MiB/s" },        { "build_files_per_s", "build files/s" },
};

int rp_report_write(const struct rp_bench *b)
{
	char path[4200], why[256] = "";
	int prc = rp_plots_write(b, why, sizeof why);
	snprintf(path, sizeof path, "%s/results.json", b->out_dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	int rc = rp_json_write(b, f);
	if (fclose(f) && !rc)
		rc = err_set(-EIO, "%s: write failed", path);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/report.md", b->out_dir);
	f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	fprintf(f, "# nostall bench repro: the 2009 ext3 fsync stalls, reproduced\n\n"
		   "Device `%s`%s. Load average before the run: %s; after: %s (other processes share\n"
		   "the machine: compare ratios within this run; retake final figures on a quiet machine).\n"
		   "Every figure below is measured in this run; `>=` marks a lower bound that includes an\n"
		   "operation still in flight when the run was stopped (counted in `timeouts`).\n"
		   "What each workload shows and what to look for: docs/bench-repro.md.\n"
		   "The run took %.0f s (%.1f min) of wall time. A p99 is printed only over %u or more samples\n"
		   "(under that the nearest-rank p99 is the max, in its own column).\n",
		b->device, b->quick ? " (--quick)" : b->micro ? " (--micro: shape only, not a measurement)" : "",
		b->load_before, b->load_after, b->wall_s, b->wall_s / 60, RP_P99_SAMPLES);
	if (b->fs)
		fprintf(f, "\nFilesystem: %s%s%s (`--fs`; every system, the peers' kernel-ext3 rows through the "
			   "kernel's %s driver).\n",
			b->fs, b->features ? ", features " : "", b->features ? b->features : "", b->fs);
	checks_write(f, b);
	fprintf(f, "\n## Tables\n");
	table_write(f, b, "jens", "jens: 2,000 x open/write/fsync/close (seed 001); idle and beside a streamer",
		    cols_jens, 5, "fsync_p50_ms");
	table_write(f, b, "fsync-under-stream", "fsync-under-stream: 4 KiB append + fsync every 50 ms beside a streaming writer",
		    cols_fus, 6, "fsync_p50_ms");
	table_write(f, b, "fsync-tester", "fsync-tester: 1 MiB pwrite + fsync every second beside a random 4 KiB writer",
		    cols_fus, 6, "fsync_p50_ms");
	table_write(f, b, "atime", "atime (seed 010): probe operations beside readers and a build that shares the probe's "
		    "inode-table blocks, journal_ioprio BE/4 vs RT/4, 2.6.29 and 2.6.30",
		    cols_atime, 10, "probe_p50_ms");
	table_write(f, b, "overwrite", "overwrite (LWN 327107): Ts'o's fsync-tester (1 MiB write + fsync, then 1 s) beside an overwriter "
		    "rewriting an allocated file in 4 MiB writes", cols_fus, 6, "fsync_p50_ms");
	decomp_write(f, b, FUS, "stream|era-default", "fsync-under-stream");
	decomp_write(f, b, OW, "overwriter", "overwrite");
	table_write(f, b, "max-sectors", "max-sectors: fsync-under-stream with max_sectors_kb 512 vs 64, and writeback throttling (wbt_lat_usec=75000)",
		    cols_fus, 6, "fsync_p50_ms");
	fprintf(f, "\n## Plots\n\n");
	if (prc < 0)
		fprintf(f, "No plots: %s\n", why);
	else
		fprintf(f, "- fsync latency over time: ![](plots/timeline-eras.svg) ![](plots/timeline-modes.svg)\n"
			   "- latency CDFs: ![](plots/cdf-eras.svg) ![](plots/cdf-modes.svg) ![](plots/cdf-atime.svg)\n"
			   "- the Jens loop per era, beside Axboe's figures scaled: ![](plots/jens.svg)\n"
			   "- overwrite per era beside Ts'o's ranges: ![](plots/overwrite.svg)\n"
			   "- data files (one per run and series) under plots/*.dat\n");
	rc = ferror(f) ? -EIO : 0;
	if (fclose(f) || rc)
		return err_set(-EIO, "%s: write failed", path);
	return 0;
}
