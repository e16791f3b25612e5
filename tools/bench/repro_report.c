/* bench repro: results.json (flat records, docs/bench-repro.schema.json),
 * report.md (a table per workload, the done-when checks with their
 * ratios, the plots) — every number in them comes from this run.
 */
#include "repro.h"

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

/* One side of a ratio: a run and its metric. */
struct side {
	const char *workload, *system, *preset, *mode, *config, *metric, *name;
};

struct check {
	const char *what;
	struct side num, den;     /* ratio = num / den */
	const char *rel;          /* ">=" or "<=" */
	double target;
};

/* The value (total_s falls back to its extrapolation); *few lowered to
 * the sample count behind a latency figure. */
static double side_get(const struct rp_bench *b, const struct side *s, unsigned *few)
{
	const struct rp_run *r = find(b, s->workload, s->system, s->preset, s->mode, s->config);
	if (!r)
		return NAN;
	double v = rp_run_get(r, s->metric);
	if (isnan(v) && !strcmp(s->metric, "total_s"))
		v = rp_run_get(r, "total_s_extrapolated");
	unsigned n = samples_of(r, s->metric);
	if (strstr(s->metric, "_ms") && n < *few)
		*few = n;
	return v;
}

static void check_print(FILE *f, const struct rp_bench *b, const struct check *c)
{
	unsigned few = UINT32_MAX;
	double num = side_get(b, &c->num, &few), den = side_get(b, &c->den, &few);
	double ratio = num / den;
	const char *verdict;
	if (isnan(ratio) || isinf(ratio) || den <= 0)
		verdict = "n/a (a run is missing, skipped or failed)";
	else if (few < RP_MIN_SAMPLES)
		verdict = "n/a (too few samples for a percentile)";
	else if (!strcmp(c->rel, ">=") ? ratio >= c->target
		 : !strcmp(c->rel, ">") ? ratio > c->target
				       : ratio <= c->target)
		verdict = "**holds**";
	else
		verdict = "**short**";
	fprintf(f, "| %s | %s %.4g / %s %.4g | %.3g | %s %.3g | %s", c->what, c->num.name, num, c->den.name, den, ratio,
		c->rel, c->target, verdict);
	if (few < UINT32_MAX)
		fprintf(f, " (fewest samples: %u)", few);
	fprintf(f, " |\n");
}

#define FUS "fsync-under-stream"
#define JENS(p, n) { "jens", "nostall", p, "ordered", "idle", "total_s", n }
#define FUS_P99(p, m, n) { FUS, "nostall", p, m, "stream", "fsync_p99_ms", n }
/* An era's run in mode m, whether or not m is its default. */
#define FUS_P99_ANY(p, m, n) { FUS, "nostall", p, m, "stream|era-default", "fsync_p99_ms", n }
#define FUS_P99_ERA(p, m, n) { FUS, "nostall", p, m, "era-default", "fsync_p99_ms", n }

static const struct check checks[] = {
	{ "Jens loop, idle: 2.6.30 >= 10x faster than 2.6.30-rc1", JENS("2.6.30-rc1", "rc1 s"), JENS("2.6.30", "2.6.30 s"), ">=", 10 },
	{ "Jens loop, idle: 2.6.29 close to 2.6.30 (within 2x)", JENS("2.6.29", "2.6.29 s"), JENS("2.6.30", "2.6.30 s"), "<=", 2 },
	{ "fsync p99 beside a streamer, each era in its default mode: 2.6.30 (writeback) <= 1/5 of 2.6.29 (ordered)",
	  FUS_P99_ERA("2.6.30", "writeback", "2.6.30 ms"), FUS_P99_ERA("2.6.29", "ordered", "2.6.29 ms"), "<=", 0.2 },
	{ "... both in data=ordered: 2.6.30 <= 1/5 of 2.6.29", FUS_P99_ANY("2.6.30", "ordered", "2.6.30 ms"),
	  FUS_P99_ANY("2.6.29", "ordered", "2.6.29 ms"), "<=", 0.2 },
	{ "... both in data=writeback: 2.6.30 <= 1/5 of 2.6.29", FUS_P99_ANY("2.6.30", "writeback", "2.6.30 ms"),
	  FUS_P99_ANY("2.6.29", "writeback", "2.6.29 ms"), "<=", 0.2 },
	{ "atime probe p99: RT/4 >= 3x lower than BE/4",
	  { "atime", "nostall", "2.6.30", "ordered", "journal_ioprio=BE/4", "probe_p99_ms", "BE/4 ms" },
	  { "atime", "nostall", "2.6.30", "ordered", "journal_ioprio=RT/4", "probe_p99_ms", "RT/4 ms" }, ">=", 3 },
	{ "max_sectors_kb=64 lowers fsync p99 beside the streamer",
	  { "max-sectors", "nostall", "2.6.30", "ordered", "max_sectors_kb=512", "fsync_p99_ms", "512: ms" },
	  { "max-sectors", "nostall", "2.6.30", "ordered", "max_sectors_kb=64", "fsync_p99_ms", "64: ms" }, ">", 1 },
	{ "max_sectors_kb=64 lowers fsync p99 beside the streamer (writeback)",
	  { "max-sectors", "nostall", "2.6.30", "writeback", "max_sectors_kb=512", "fsync_p99_ms", "512: ms" },
	  { "max-sectors", "nostall", "2.6.30", "writeback", "max_sectors_kb=64", "fsync_p99_ms", "64: ms" }, ">", 1 },
	{ "writeback fsync p99 <= 1/10 of ordered (2.6.30)", FUS_P99_ANY("2.6.30", "writeback", "writeback ms"),
	  FUS_P99_ANY("2.6.30", "ordered", "ordered ms"), "<=", 0.1 },
	{ "guarded fsync p99 <= 1/10 of ordered (2.6.30)", FUS_P99_ANY("2.6.30", "guarded", "guarded ms"),
	  FUS_P99_ANY("2.6.30", "ordered", "ordered ms"), "<=", 0.1 },
};

static const struct check peer_checks[] = {
	{ "Jens loop: nostall (library) <= 0.5x kernel ext3 data=ordered", JENS("nostall", "nostall s"),
	  { "jens", "kernel-ext3", "host", "ordered", "idle", "total_s", "kernel s" }, "<=", 0.5 },
	{ "Jens loop: nostall-fuse <= 0.5x kernel ext3 data=ordered",
	  { "jens", "nostall-fuse", "nostall", "ordered", "idle", "total_s", "fuse s" },
	  { "jens", "kernel-ext3", "host", "ordered", "idle", "total_s", "kernel s" }, "<=", 0.5 },
	{ "guarded fsync p99 <= 1/20 of kernel ext3 data=ordered", FUS_P99("nostall", "guarded", "guarded ms"),
	  { FUS, "kernel-ext3", "host", "ordered", "stream", "fsync_p99_ms", "kernel ms" }, "<=", 0.05 },
	{ "guarded streamer >= kernel ext3 data=ordered streamer",
	  { FUS, "nostall", "nostall", "guarded", "stream", "stream_mbps", "guarded MiB/s" },
	  { FUS, "kernel-ext3", "host", "ordered", "stream", "stream_mbps", "kernel MiB/s" }, ">=", 1 },
};

static void checks_write(FILE *f, const struct rp_bench *b)
{
	static const char head[] = "| claim | figures | ratio | target | verdict |\n|---|---|---|---|---|\n";
	fprintf(f, "\n## Done-when checks (issue 13)\n\n"
		   "A verdict on a latency needs %u samples on each side (fewer: n/a); a p99 of fewer than\n"
		   "100 samples is their maximum (nearest rank).\n\n%s",
		RP_MIN_SAMPLES, head);
	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
		check_print(f, b, &checks[i]);
	if (!b->peers)
		return;
	fprintf(f, "\nPeers, on the host disk:\n\n%s", head);
	for (size_t i = 0; i < sizeof peer_checks / sizeof peer_checks[0]; i++)
		check_print(f, b, &peer_checks[i]);
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
	/* A percentile of too few samples is not reported (max is). */
	bool pct = strstr(metric, "_p50_ms") || strstr(metric, "_p99_ms");
	if (isnan(v) || (pct && samples_of(r, metric) < RP_MIN_SAMPLES)) {
		fprintf(f, " n/a |");
		return;
	}
	/* A maximum (or p99) that includes a timed-out operation is a lower
	 * bound. */
	char tm[48];
	const char *us = strrchr(metric, '_');
	bool lower = false;
	if (us && strstr(metric, "_ms")) {
		const char *q = strstr(metric, "_p99_ms") ? strstr(metric, "_p99_ms") : strstr(metric, "_max_ms");
		if (q) {
			snprintf(tm, sizeof tm, "%.*s_timeouts", (int)(q - metric), metric);
			lower = rp_run_get(r, tm) > 0;
		}
	}
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
		   "What each workload shows and what to look for: docs/bench-repro.md.\n",
		b->device, b->quick ? " (--quick)" : b->micro ? " (--micro: shape only, not a measurement)" : "",
		b->load_before, b->load_after);
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
	table_write(f, b, "atime", "atime (seed 010): probe operations beside readers and a build, journal_ioprio BE/4 vs RT/4",
		    cols_atime, 10, "probe_p50_ms");
	table_write(f, b, "max-sectors", "max-sectors: fsync-under-stream with max_sectors_kb 512 vs 64",
		    cols_fus, 6, "fsync_p50_ms");
	fprintf(f, "\n## Plots\n\n");
	if (prc < 0)
		fprintf(f, "No plots: %s\n", why);
	else
		fprintf(f, "- fsync latency over time: ![](plots/timeline-eras.svg) ![](plots/timeline-modes.svg)\n"
			   "- latency CDFs: ![](plots/cdf-eras.svg) ![](plots/cdf-modes.svg) ![](plots/cdf-atime.svg)\n"
			   "- the Jens loop per era: ![](plots/jens.svg)\n"
			   "- data files (one per run and series) under plots/*.dat\n");
	rc = ferror(f) ? -EIO : 0;
	if (fclose(f) || rc)
		return err_set(-EIO, "%s: write failed", path);
	return 0;
}
