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

static void json_record(FILE *f, const struct rp_run *r, bool *first, const char *metric, double v,
			const char *unit, unsigned samples)
{
	fprintf(f, "%s\n  {\"workload\": ", *first ? "" : ",");
	*first = false;
	json_str(f, r->workload);
	fprintf(f, ", \"device\": ");
	json_str(f, r->device);
	fprintf(f, ", \"system\": ");
	json_str(f, r->system);
	fprintf(f, ", \"preset\": ");
	json_str(f, r->preset);
	fprintf(f, ", \"mode\": ");
	json_str(f, r->mode);
	fprintf(f, ", \"config\": ");
	json_str(f, r->config);
	fprintf(f, ", \"metric\": ");
	json_str(f, metric);
	if (isnan(v) || isinf(v))
		fprintf(f, ", \"value\": null");
	else
		fprintf(f, ", \"value\": %.6g", v);
	fprintf(f, ", \"unit\": ");
	json_str(f, unit);
	fprintf(f, ", \"samples\": %u}", samples);
}

int rp_json_write(const struct rp_bench *b, FILE *f)
{
	bool first = true;
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

static const struct rp_run *find(const struct rp_bench *b, const char *workload, const char *system,
				 const char *preset, const char *mode, const char *config)
{
	for (int i = 0; i < b->nruns; i++) {
		const struct rp_run *r = &b->runs[i];
		if (!strcmp(r->workload, workload) && !strcmp(r->system, system) && !strcmp(r->preset, preset) &&
		    !strcmp(r->mode, mode) && !strcmp(r->config, config) && strncmp(r->status, "skipped", 7))
			return r;
	}
	return NULL;
}

static double get(const struct rp_bench *b, const char *workload, const char *system, const char *preset,
		  const char *mode, const char *config, const char *metric)
{
	const struct rp_run *r = find(b, workload, system, preset, mode, config);
	if (!r)
		return NAN;
	double v = rp_run_get(r, metric);
	if (isnan(v) && !strcmp(metric, "total_s"))
		v = rp_run_get(r, "total_s_extrapolated");
	return v;
}

/* ------------------------------------------------------------ checks */

struct check {
	const char *what;
	double num, den;          /* ratio = num / den */
	const char *rel;          /* ">=" or "<=" */
	double target;
	const char *num_name, *den_name;
};

static void check_print(FILE *f, const struct check *c)
{
	double ratio = c->num / c->den;
	const char *verdict;
	if (isnan(ratio) || isinf(ratio) || c->den <= 0)
		verdict = "n/a (a run is missing, skipped or failed)";
	else if (!strcmp(c->rel, ">=") ? ratio >= c->target : ratio <= c->target)
		verdict = "**holds**";
	else
		verdict = "**short**";
	fprintf(f, "| %s | %s %.4g / %s %.4g | %.3g | %s %.3g | %s |\n", c->what, c->num_name, c->num, c->den_name,
		c->den, ratio, c->rel, c->target, verdict);
}

static void checks_write(FILE *f, const struct rp_bench *b)
{
	const char *fus = "fsync-under-stream";
	struct check cs[] = {
		{ "Jens loop, idle: 2.6.30 >= 10x faster than 2.6.30-rc1",
		  get(b, "jens", "nostall", "2.6.30-rc1", "ordered", "idle", "total_s"),
		  get(b, "jens", "nostall", "2.6.30", "ordered", "idle", "total_s"), ">=", 10, "rc1 total_s", "2.6.30 total_s" },
		{ "Jens loop, idle: 2.6.29 close to 2.6.30 (within 2x)",
		  get(b, "jens", "nostall", "2.6.29", "ordered", "idle", "total_s"),
		  get(b, "jens", "nostall", "2.6.30", "ordered", "idle", "total_s"), "<=", 2, "2.6.29 total_s", "2.6.30 total_s" },
		{ "fsync p99 beside a streamer (ordered): 2.6.30 <= 1/5 of 2.6.29",
		  get(b, fus, "nostall", "2.6.30", "ordered", "stream", "fsync_p99_ms"),
		  get(b, fus, "nostall", "2.6.29", "ordered", "stream", "fsync_p99_ms"), "<=", 0.2, "2.6.30 p99", "2.6.29 p99" },
		{ "atime probe p99: RT/4 >= 3x lower than BE/4",
		  get(b, "atime", "nostall", "2.6.30", "ordered", "journal_ioprio=BE/4", "probe_p99_ms"),
		  get(b, "atime", "nostall", "2.6.30", "ordered", "journal_ioprio=RT/4", "probe_p99_ms"), ">=", 3, "BE/4 p99", "RT/4 p99" },
		{ "max_sectors_kb=64 lowers fsync p99 beside the streamer",
		  get(b, "max-sectors", "nostall", "2.6.30", "ordered", "max_sectors_kb=512", "fsync_p99_ms"),
		  get(b, "max-sectors", "nostall", "2.6.30", "ordered", "max_sectors_kb=64", "fsync_p99_ms"), ">=", 1, "512 p99", "64 p99" },
		{ "writeback fsync p99 <= 1/10 of ordered (2.6.30)",
		  get(b, fus, "nostall", "2.6.30", "writeback", "stream", "fsync_p99_ms"),
		  get(b, fus, "nostall", "2.6.30", "ordered", "stream", "fsync_p99_ms"), "<=", 0.1, "writeback p99", "ordered p99" },
		{ "guarded fsync p99 <= 1/10 of ordered (2.6.30)",
		  get(b, fus, "nostall", "2.6.30", "guarded", "stream", "fsync_p99_ms"),
		  get(b, fus, "nostall", "2.6.30", "ordered", "stream", "fsync_p99_ms"), "<=", 0.1, "guarded p99", "ordered p99" },
	};
	fprintf(f, "\n## Done-when checks (issue 13)\n\n| claim | figures | ratio | target | verdict |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
		check_print(f, &cs[i]);
	if (!b->peers)
		return;
	struct check ps[] = {
		{ "Jens loop: nostall (library) <= 0.5x kernel ext3 data=ordered",
		  get(b, "jens", "nostall", "nostall", "ordered", "idle", "total_s"),
		  get(b, "jens", "kernel-ext3", "host", "ordered", "idle", "total_s"), "<=", 0.5, "nostall", "kernel" },
		{ "Jens loop: nostall-fuse <= 0.5x kernel ext3 data=ordered",
		  get(b, "jens", "nostall-fuse", "nostall", "ordered", "idle", "total_s"),
		  get(b, "jens", "kernel-ext3", "host", "ordered", "idle", "total_s"), "<=", 0.5, "nostall-fuse", "kernel" },
		{ "guarded fsync p99 <= 1/20 of kernel ext3 data=ordered",
		  get(b, fus, "nostall", "nostall", "guarded", "stream", "fsync_p99_ms"),
		  get(b, fus, "kernel-ext3", "host", "ordered", "stream", "fsync_p99_ms"), "<=", 0.05, "guarded", "kernel" },
		{ "guarded streamer >= kernel ext3 data=ordered streamer",
		  get(b, fus, "nostall", "nostall", "guarded", "stream", "stream_mbps"),
		  get(b, fus, "kernel-ext3", "host", "ordered", "stream", "stream_mbps"), ">=", 1, "guarded MiB/s", "kernel MiB/s" },
	};
	fprintf(f, "\nPeers, on the host disk:\n\n| claim | figures | ratio | target | verdict |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
		check_print(f, &ps[i]);
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
	if (isnan(v)) {
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
	{ "fsync_timeouts", "timeouts" },   { "stream_mbps", "streamer MiB/s" },
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
	checks_write(f, b);
	fprintf(f, "\n## Tables\n");
	table_write(f, b, "jens", "jens: 2,000 x open/write/fsync/close (seed 001); idle and beside a streamer",
		    cols_jens, 5, "fsync_p50_ms");
	table_write(f, b, "fsync-under-stream", "fsync-under-stream: 4 KiB append + fsync every 50 ms beside a streaming writer",
		    cols_fus, 5, "fsync_p50_ms");
	table_write(f, b, "fsync-tester", "fsync-tester: 1 MiB pwrite + fsync every second beside a random 4 KiB writer",
		    cols_fus, 5, "fsync_p50_ms");
	table_write(f, b, "atime", "atime (seed 010): probe operations beside readers and a build, journal_ioprio BE/4 vs RT/4",
		    cols_atime, 10, "probe_p50_ms");
	table_write(f, b, "max-sectors", "max-sectors: fsync-under-stream with max_sectors_kb 512 vs 64",
		    cols_fus, 5, "fsync_p50_ms");
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
