/* nostall bench repro: the front-end, the run matrix and its progress
 * (docs/bench-repro.md).
 *
 * usage: nostall bench repro [--device SPEC] [--quick] [--peers] [--out DIR]
 *                            [--json] [--workload NAME[,NAME..]] [--micro]
 *
 * The matrix: every workload in data=ordered per era preset; the modes
 * where the claim is about modes (fsync-under-stream under 2.6.30, every
 * mode per preset in a full run); atime's journal_ioprio BE/4 vs RT/4 and
 * max-sectors' max_sectors_kb 512 vs 64 under 2.6.30. fsync-under-stream
 * runs every era in its default data mode (config "era-default": ordered
 * for 2.6.29, writeback for 2.6.30-rc1 and 2.6.30, ext3_era_data_mode)
 * and in ordered and writeback (config "stream") beside it. Every run gets a
 * fresh filesystem in a child process (repro_job.c); the parent keeps no
 * threads, so fork is safe.
 */
#include "repro.h"
#include "bench_fs.h"
#include "../common/cliopt.h"
#include "../common/cmds.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RP_SIM_OPTS "cache=1G"

static const char *const presets[] = { "2.6.29", "2.6.30-rc1", "2.6.30" };
#define NPRESETS 3
static const char *const modes[] = { "ordered", "writeback", "guarded", "journal" };
#define NMODES 4

void rp_progress(const struct rp_bench *b, const char *fmt, ...)
{
	char line[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	int k = b->done < b->nruns ? b->done + 1 : b->nruns;
	fprintf(stderr, "\rbench repro: [%d/%d] %-70.70s", k, b->nruns, line);
	fflush(stderr);
}

void rp_progress_done(void)
{
	fprintf(stderr, "\r%96s\r", "");
	fflush(stderr);
}

struct rp_run *rp_bench_add(struct rp_bench *b, const char *workload, enum rp_kind k, const char *system,
			    const char *preset, const char *mode, const char *config, const char *opts)
{
	if (b->nruns == b->cap) {
		int cap = b->cap ? 2 * b->cap : 64;
		struct rp_run *nr = realloc(b->runs, (size_t)cap * sizeof *nr);
		if (!nr)
			return NULL;
		b->runs = nr;
		b->cap = cap;
	}
	struct rp_run *r = &b->runs[b->nruns++];
	memset(r, 0, sizeof *r);
	r->workload = workload;
	r->kind = k;
	r->device = b->device;
	r->system = system;
	r->preset = preset;
	r->mode = mode;
	snprintf(r->config, sizeof r->config, "%s", config);
	snprintf(r->opts, sizeof r->opts, "%s", opts ? opts : "");
	return r;
}

/* ------------------------------------------------------------ sizes */

struct rp_params rp_params_pick(const struct rp_bench *b, enum rp_kind k)
{
	struct rp_params p;
	rp_params_default(&p);
	if (b->quick)
		p = (struct rp_params){ .jens_n = 500, .seconds = 5, .warmup = 1, .period = 0.05,
					.stream_bytes = 512 * RP_MiB, .reader_bytes = 96 * RP_MiB };
	if (b->micro)
		p = (struct rp_params){ .jens_n = 10, .seconds = 0.4, .warmup = 0.1, .period = 0.05,
					.stream_bytes = 8 * RP_MiB, .reader_bytes = 4 * RP_MiB };
	/* jens-stream: `seconds` bounds the loop (then total_s_extrapolated) */
	if (k == RP_TESTER || k == RP_OVERWRITE) {
		p.period = b->micro ? 0.1 : 1.0;
		p.tester_write = b->micro ? 64 * 1024 : 1024 * 1024;
		p.seconds = b->micro ? 0.5 : b->quick ? 4 : p.seconds;
	}
	/* fsync-under-stream: an ordered fsync beside the streamer takes 2-10 s
	 * (~4.5 s once the cache is full), so `seconds` holds 1-3; the run goes
	 * on until RP_MIN_SAMPLES fsyncs (a full run: RP_P99_SAMPLES), capped.
	 * fsync-tester (one a second) the same way. */
	/* The full run goes on to RP_P99_SAMPLES (a p99 that is a p99), capped
	 * at 2 minutes: runs with fast fsyncs get there (writeback, guarded,
	 * journal: 100 fsyncs in 5-15 s at a 50 ms period, ~2 min at one a
	 * second); ordered ones beside a writer (2-10 s per fsync) stop at the
	 * cap with 15-50 and report their median and max. The quick run's
	 * overwrite cap is 25 s: 2.6.29's 5 fsyncs took 20-23 s. */
	if (k == RP_FUS || k == RP_TESTER || k == RP_OVERWRITE) {
		p.min_samples = b->micro ? 3 : b->quick ? RP_MIN_SAMPLES : RP_P99_SAMPLES;
		p.max_seconds = b->micro ? 1 : b->quick ? (k == RP_OVERWRITE ? 25 : 30) : 120;
	}
	/* overwrite: a file bigger than the ~200 MiB the cache lets be dirty
	 * (cache=1G), written whole before measuring (5 s per 512 MiB) */
	if (k == RP_OVERWRITE && b->quick)
		p.stream_bytes = 256 * RP_MiB;
	/* atime: long enough for several commits (one per 5 s) */
	if (k == RP_ATIME) {
		p.period = 0.1;
		if (!b->micro)
			p.seconds = b->quick ? 15 : 40;
	}
	return p;
}

double rp_params_span(const struct rp_params *p)
{
	return p->max_seconds > p->seconds ? p->max_seconds : p->seconds;
}

/* ------------------------------------------------------------ matrix */

static void add_nostall(struct rp_bench *b, const char *workload, enum rp_kind k, const char *preset,
			const char *mode, const char *config, const char *extra)
{
	char opts[160];
	snprintf(opts, sizeof opts, "preset=%s%s%s%s%s", preset, extra ? "," : "", extra ? extra : "",
		 b->user_opts ? "," : "", b->user_opts ? b->user_opts : "");
	struct rp_run *r = rp_bench_add(b, workload, k, "nostall", preset, mode, config, opts);
	if (!r)
		return;
	r->p = rp_params_pick(b, k);
}

/* fsync-under-stream's config: "era-default" for the era's default data
 * mode (what a 2009 user of that kernel got without data=), else "stream". */
static const char *fus_config(const char *preset, const char *mode)
{
	int m = ext3_era_data_mode(preset);
	return m && !strcmp(ext3_data_mode_name(m), mode) ? "era-default" : "stream";
}

/* max_sectors_kb=512 is the default: its run is fsync-under-stream's
 * 2.6.30 run in that mode, when that ran with the same options. */
static void maxsec_share(struct rp_bench *b, struct rp_run *r)
{
	if (b->user_opts && strstr(b->user_opts, "max_sectors_kb"))
		return;
	for (int i = 0; i < b->nruns; i++) {
		const struct rp_run *s = &b->runs[i];
		if (!strcmp(s->workload, "fsync-under-stream") && !strcmp(s->preset, r->preset) &&
		    !strcmp(s->mode, r->mode) && s->device == r->device) {
			r->same_as = i + 1;
			return;
		}
	}
}

static void matrix_build(struct rp_bench *b)
{
	bool full = !b->quick && !b->micro;
	for (int i = 0; i < NPRESETS && b->kind_on[RP_JENS]; i++)
		add_nostall(b, "jens", RP_JENS, presets[i], "ordered", "idle", NULL);
	for (int i = 0; i < NPRESETS && b->kind_on[RP_JENS_STREAM]; i++)
		add_nostall(b, "jens", RP_JENS_STREAM, presets[i], "ordered", "stream", NULL);
	/* ordered and writeback per era (one of them the era's default mode:
	 * the era claim; ordered in every era: the 2009 mode's own view),
	 * every mode under 2.6.30; a full run: every mode per era */
	for (int i = 0; i < NPRESETS && b->kind_on[RP_FUS]; i++)
		for (int m = 0; m < NMODES; m++)
			if (full || m < 2 || i == NPRESETS - 1)
				add_nostall(b, "fsync-under-stream", RP_FUS, presets[i], modes[m],
					    fus_config(presets[i], modes[m]), NULL);
	for (int i = 0; i < NPRESETS && b->kind_on[RP_TESTER]; i++)
		add_nostall(b, "fsync-tester", RP_TESTER, presets[i], "ordered", "random-writer", NULL);
	/* Ts'o's test (LWN 327107) per era in data=ordered; 2.6.30's writeback
	 * and guarded beside it: the era gain decomposed (report.md) */
	for (int i = 0; i < NPRESETS && b->kind_on[RP_OVERWRITE]; i++)
		add_nostall(b, "overwrite", RP_OVERWRITE, presets[i], "ordered", "overwriter", NULL);
	for (int m = 1; m < 3 && b->kind_on[RP_OVERWRITE]; m++)
		add_nostall(b, "overwrite", RP_OVERWRITE, "2.6.30", modes[m], "overwriter", NULL);
	static const char *const prio[] = { "journal_ioprio=BE/4", "journal_ioprio=RT/4" };
	/* Arjan's claim on the kind of kernel he patched (2.6.29: commit writes
	 * async, CFQ fair to kjournald) and on 2.6.30 (WRITE_SYNC_PLUG) */
	for (int e = 0; e < NPRESETS && b->kind_on[RP_ATIME]; e += 2)
		for (int i = 0; i < 2; i++)
			add_nostall(b, "atime", RP_ATIME, presets[e], "ordered", prio[i], prio[i]);
	/* ordered (Linus' setting) and writeback (where a commit waits only
	 * for the drive's queue, the drain max_sectors_kb shortens); beside
	 * them Linus' other idea, a cap on the outstanding writes rather than
	 * on each request's size, as Linux 4.10 built it (writeback
	 * throttling at its rotational default, 75 ms: off in the era
	 * presets, docs/block-layer.md) */
	static const char *const ms[] = { "max_sectors_kb=512", "max_sectors_kb=64", "wbt_lat_usec=75000" };
	for (int m = 0; m < 2 && b->maxsec_on; m++)
		for (int i = 0; i < 3; i++) {
			add_nostall(b, "max-sectors", RP_FUS, "2.6.30", modes[m], ms[i], ms[i]);
			if (i == 0)
				maxsec_share(b, &b->runs[b->nruns - 1]);
		}
}

static int matrix_run(struct rp_bench *b)
{
	for (int i = 0; i < b->nruns; i++) {
		struct rp_run *r = &b->runs[i];
		if (r->device != b->device) /* the peers' (repro_peers.c) */
			continue;
		if (r->same_as) {
			const struct rp_run *s = &b->runs[r->same_as - 1];
			memcpy(r->m, s->m, sizeof r->m);
			r->nm = s->nm;
			r->timed_out = s->timed_out;
			memcpy(r->status, s->status, sizeof r->status);
			snprintf(r->note, sizeof r->note,
				 "the figures of fsync-under-stream %s data=%s (%s): max_sectors_kb 512 is the default",
				 s->preset, s->mode, s->config);
		}
		if (r->status[0] || r->same_as) {
			b->done++;
			continue;
		}
		rp_progress(b, "%s %s %s data=%s (%s)", r->workload, r->config, r->preset, r->mode, r->system);
		err_clear();
		/* The deadline: the run's own time, its warm-up, the grace for
		 * a stopping load, and room for mkfs/set-up and a slow Jens. */
		double deadline = rp_params_span(&r->p) + r->p.warmup + 30 + (r->kind == RP_JENS ? r->p.jens_n * 0.1 : 0) +
				  (r->kind == RP_ATIME ? 30 : 0) +
				  (r->kind == RP_OVERWRITE ? (double)r->p.stream_bytes / RP_MiB / 20 : 0);
		struct rp_exec x = { .spec = b->device, .fs_bytes = b->fs_bytes, .fs = b->fs, .features = b->features,
				     .deadline_s = deadline };
		int rc = rp_job_run(r, &x);
		if (rc < 0)
			snprintf(r->status, sizeof r->status, "failed: %s", err_last(rc));
		b->done++;
	}
	return 0;
}

/* ------------------------------------------------------------ front-end */

/* What --workload accepts: bench repro's own workloads. rp_kind_parse also
 * knows bench fs --mount's phases (stream-write, ...), which this matrix
 * never runs: naming one is an error, not a run that measures nothing. */
static const struct {
	const char *name;
	int kind; /* enum rp_kind; -1: max-sectors (fsync-under-stream runs) */
} repro_workloads[] = {
	{ "jens", RP_JENS },     { "jens-stream", RP_JENS_STREAM }, { "fsync-under-stream", RP_FUS },
	{ "fsync-tester", RP_TESTER }, { "atime", RP_ATIME },     { "overwrite", RP_OVERWRITE },
	{ "max-sectors", -1 },
};
#define NWORKLOADS (sizeof repro_workloads / sizeof repro_workloads[0])

static void workloads_list(FILE *out)
{
	for (size_t i = 0; i < NWORKLOADS; i++)
		fprintf(out, "%s%s", i ? "," : "", repro_workloads[i].name);
}

static int workload_select(struct rp_bench *b, const char *name)
{
	for (size_t i = 0; i < NWORKLOADS; i++) {
		if (strcmp(name, repro_workloads[i].name))
			continue;
		if (repro_workloads[i].kind < 0)
			b->maxsec_on = true;
		else
			b->kind_on[repro_workloads[i].kind] = true;
		return 0;
	}
	enum rp_kind k;
	if (!*name)
		fprintf(stderr, "nostall bench repro: empty workload name in --workload");
	else if (rp_kind_parse(name, &k) == 0)
		fprintf(stderr, "nostall bench repro: unknown workload '%s' (a phase of `nostall bench fs --mount`, "
				"not a bench repro workload)", name);
	else
		fprintf(stderr, "nostall bench repro: unknown workload '%s'", name);
	err_clear();
	fprintf(stderr, "; valid workloads: ");
	workloads_list(stderr);
	fprintf(stderr, "\n");
	return -EINVAL;
}

static void workloads_more(FILE *out)
{
	fprintf(out, "workloads: ");
	workloads_list(out);
	fprintf(out, "\n");
}

static const struct cliopt repro_opts[] = {
	{ "device", 'd', "SPEC", "sim:hdd (default), sim:ssd, file:[PATH] (a temporary file under /tmp\n"
				 "when PATH is empty); the device's contents are destroyed",
	  CLIOPT_STR_AT(struct rp_bench, device) },
	{ "quick", 'q', NULL, "the default run in about 4 minutes (make bench)", CLIOPT_FLAG_AT(struct rp_bench, quick) },
	{ "peers", 'p', NULL, "also run the workloads on nostall over FUSE, the kernel's ext3 (loop\n"
			      "device, data=ordered and writeback, barrier=1) and fuse2fs (root)",
	  CLIOPT_FLAG_AT(struct rp_bench, peers) },
	{ "out", 'o', "DIR", "report.md, results.json, plots (default build/repro)",
	  CLIOPT_STR_AT(struct rp_bench, out_dir) },
	{ "json", 'j', NULL, "results.json on stdout too", CLIOPT_FLAG_AT(struct rp_bench, json) },
	{ "workload", 'w', "L", "a comma-separated list of the workloads below", CLIOPT_STR_AT(struct rp_bench, only) },
	{ "micro", 'm', NULL, "tiny sizes: checks the output, measures nothing", CLIOPT_FLAG_AT(struct rp_bench, micro) },
	{ "opts", 'O', "OPTS", "added to every nostall run's mount options", CLIOPT_STR_AT(struct rp_bench, user_opts) },
	{ "fs", 0, "TYPE", "ext2, ext3 or ext4: the mkfs type of every filesystem, the peers'\n"
			   "too (the kernel's driver of that type); default ext3 (the 2009 figures)",
	  CLIOPT_STR_AT(struct rp_bench, fs) },
	{ "features", 0, "LIST", "mkfs -O edits of --fs's feature set (e.g. ^metadata_csum)",
	  CLIOPT_STR_AT(struct rp_bench, features) },
	{ 0 },
};

static const struct cliopt_cmd repro_cmd = {
	.prog = "nostall bench repro",
	.usage = "usage: nostall bench repro [--device SPEC] [--quick] [--peers] [--out DIR] [--json]\n"
		 "                           [--workload NAME[,NAME..]] [--micro] [--opts OPTS]\n"
		 "                           [--fs ext2|ext3|ext4] [--features LIST]\n",
	.opts = repro_opts,
	.more = workloads_more,
};

/* --workload L: a comma-separated list; every name must be a workload
 * (an empty name too is an error: "jens," selects nothing extra). */
static int select_workloads(struct rp_bench *b, const char *only)
{
	for (int i = 0; i < RP_NKINDS; i++)
		b->kind_on[i] = !only;
	b->maxsec_on = !only;
	/* --quick leaves jens-stream out unless named: its iteration is the
	 * ordered fsync beside a streamer that fsync-under-stream measures with
	 * a sample floor, and a 6 s run held 2-3 of them (the time goes to
	 * that floor instead; docs/bench-repro.md). */
	if (!only && b->quick)
		b->kind_on[RP_JENS_STREAM] = false;
	/* ... and fsync-tester beside its paced random writer: overwrite runs
	 * the same tester beside Ts'o's own background (Linus' overwriter),
	 * the one with figures to compare (LWN 327107); the 4-5 minutes go
	 * there. `--workload fsync-tester` runs it. */
	if (!only && b->quick)
		b->kind_on[RP_TESTER] = false;
	if (!only)
		return 0;
	char *copy = strdup(only);
	if (!copy)
		return -ENOMEM;
	int rc = 0;
	char *t = copy;
	for (char *comma; !rc; t = comma + 1) {
		comma = strchr(t, ',');
		if (comma)
			*comma = 0;
		rc = workload_select(b, t);
		if (!comma)
			break;
	}
	free(copy);
	return rc;
}

static void loadavg(char *dst, size_t n)
{
	FILE *f = fopen("/proc/loadavg", "r");
	dst[0] = 0;
	if (f) {
		if (fgets(dst, (int)n, f))
			dst[strcspn(dst, "\n")] = 0;
		fclose(f);
	}
}

static int mkdir_p(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof p, "%s", dir);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	return mkdir(p, 0755) && errno != EEXIST ? -errno : 0;
}

/* The device: sim:* as given; file: alone makes a zero-filled temp file. */
static int device_prepare(struct rp_bench *b, char *tmppath, size_t n, char *spec, size_t specn)
{
	tmppath[0] = 0;
	/* A 2009 desktop's page cache on a simulated disk: 2 GiB of RAM,
	 * about 1 GiB of it cache, dirty_ratio 20 -> ~200 MiB dirty, which an
	 * ordered commit writes out (the article's multi-second fsyncs). */
	struct dev_spec_info si;
	if (dev_spec_parse(b->device, &si) == 0 && si.simulated && !b->user_opts && !b->micro)
		b->user_opts = RP_SIM_OPTS;
	b->fs_bytes = (b->micro ? 64 : 1024) * RP_MiB;
	if (strcmp(b->device, "file:"))
		return 0;
	fprintf(stderr, "bench repro: preparing a %llu MiB device file under /tmp...",
		(unsigned long long)(b->fs_bytes / RP_MiB));
	int rc = fsb_tmpdev_make(tmppath, n, b->fs_bytes);
	rp_progress_done();
	if (rc < 0)
		return rc;
	snprintf(spec, specn, "file:%s", tmppath);
	b->device = spec;
	return 0;
}

static int outputs_write(struct rp_bench *b)
{
	int rc = mkdir_p(b->out_dir);
	if (rc < 0) {
		fprintf(stderr, "nostall bench repro: %s: %s\n", b->out_dir, strerror(-rc));
		return 1;
	}
	rp_progress(b, "plots (gnuplot)");
	rc = rp_report_write(b);
	rp_progress_done();
	if (rc < 0) {
		fprintf(stderr, "nostall bench repro: %s\n", err_last(rc));
		return 1;
	}
	if (b->json && rp_json_write(b, stdout) < 0)
		return 1;
	if (!b->json)
		printf("bench repro: report in %s/report.md (results.json, plots/*.svg beside it)\n", b->out_dir);
	return 0;
}

int bench_repro(int argc, char **argv)
{
	struct rp_bench b = { .device = "sim:hdd", .out_dir = "build/repro" };
	int rc, pos, st = cliopt_parse(&repro_cmd, argc, argv, &b, &pos);
	if (st >= 0)
		return st;
	if (select_workloads(&b, b.only) < 0) {
		cliopt_help(&repro_cmd, stderr);
		return 2;
	}
	if (b.features && !b.fs)
		b.fs = "ext3";
	if (b.fs) {
		/* the set mkfs makes, and one the library writes: a 64 MiB
		 * mem: filesystem mounted read-write says so (its message) */
		struct fsb t = { .spec = "mem:64M", .fs = b.fs, .fs_features = b.features };
		t.sz.fs_bytes = 64 * RP_MiB;
		struct ext3_mkfs_params p = { 0 };
		struct fsb_env e;
		if ((rc = ext3_mkfs_params_fs_type(&p, b.fs, b.features)) < 0) {
			fprintf(stderr, "nostall bench repro: %s\n", err_last(rc));
			return 2;
		}
		if ((rc = fsb_env_open(&t, "ordered", &e)) < 0 || (rc = fsb_env_unmount(&e, 0)) < 0) {
			fprintf(stderr, "nostall bench repro: --fs %s: %s\n", b.fs, err_last(rc));
			if (e.dev)
				fsb_env_close(&e);
			return 1;
		}
		fsb_env_close(&e);
	}
	ssize_t sl = readlink("/proc/self/exe", b.self, sizeof b.self - 1);
	b.self[sl > 0 ? sl : 0] = 0;
	char tmppath[64], spec[96];
	rc = device_prepare(&b, tmppath, sizeof tmppath, spec, sizeof spec);
	if (rc < 0) {
		fprintf(stderr, "nostall bench repro: %s\n", err_last(rc));
		return 1;
	}
	struct dev *d;
	if (!tmppath[0] && (rc = dev_open(b.device, &d)) < 0) {
		fprintf(stderr, "nostall bench repro: device '%s': %s\n", b.device, err_last(rc));
		return 1;
	}
	if (!tmppath[0])
		dev_close(d);
	loadavg(b.load_before, sizeof b.load_before);
	uint64_t wall0 = clock_now_ns();
	matrix_build(&b);
	if (b.peers)
		rp_peers_add(&b);
	matrix_run(&b);
	if (b.peers)
		rp_peers_run(&b);
	rp_progress_done();
	loadavg(b.load_after, sizeof b.load_after);
	b.wall_s = (double)(clock_now_ns() - wall0) / 1e9;
	if (tmppath[0])
		unlink(tmppath);
	int ret = outputs_write(&b);
	for (int i = 0; i < b.nruns; i++)
		rp_run_free(&b.runs[i]);
	free(b.runs);
	return ret;
}
