/* nostall bench blk: one scenario per claim of the 2009 block-layer fixes,
 * each run under "before" and "after" settings on the same device spec in
 * the same process (docs/bench-blk.md explains every scenario).
 *
 * Each run opens the device afresh (a clean simulated disk), builds a queue
 * with the user's -o options and then the scenario's configuration, runs the
 * load for a fixed time, and reads the queue statistics. Nothing here is
 * hard-coded: every figure printed is measured in this run. The loads are
 * built from bench_blk.h (bench_blk_load.c); this file holds the scenarios,
 * their output and the `nostall bench` front-end.
 */
#include "bench_blk.h"
#include "../common/cliopt.h"
#include "../common/cmds.h"

#include "util/clock.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 10

/* A figure of a run. A percentile that needs more samples than it has
 * (samples >= 0 and below BENCH_MIN_SAMPLES) prints "n/a (N samples)" in
 * text and null in JSON. */
struct field {
	const char *name;
	double value;
	int decimals;
	int64_t samples; /* -1: not a tail percentile */
};

struct run {
	const char *scenario;
	const char *device;
	const char *config;
	struct field f[MAX_FIELDS];
	int nf;
};

static void run_field(struct run *r, const char *name, double v, int decimals)
{
	if (r->nf < MAX_FIELDS)
		r->f[r->nf++] = (struct field){ name, v, decimals, -1 };
}

/* A p99 of histogram h: shown only with BENCH_MIN_SAMPLES samples. */
static void run_p99_field(struct run *r, const char *name, const struct hist *h, int decimals)
{
	if (r->nf < MAX_FIELDS)
		r->f[r->nf++] = (struct field){ name, bench_ms(hist_quantile(h, 0.99)), decimals, (int64_t)h->count };
}

/* p50, p99, (max) and the number of samples behind them. */
static void run_latency_fields(struct run *r, const struct hist *h, bool with_max)
{
	run_field(r, "p50_ms", bench_ms(hist_quantile(h, 0.5)), 2);
	run_p99_field(r, "p99_ms", h, 2);
	if (with_max)
		run_field(r, "max_ms", bench_ms(h->max), 2);
	run_field(r, "samples", (double)h->count, 0);
}

static bool field_na(const struct field *f)
{
	return f->samples >= 0 && f->samples < BENCH_MIN_SAMPLES;
}

/* ----------------------------------------------------------- output */

static void progress(struct bench *b, const char *scenario, const char *config, int i, int n)
{
	(void)b;
	fprintf(stderr, "\rbench blk: %-12s run %d/%d (%s)...            ", scenario, i, n, config);
	fflush(stderr);
}

static void progress_done(void)
{
	fprintf(stderr, "\r%80s\r", "");
	fflush(stderr);
}

static void print_runs(struct bench *b, struct run *runs, int n)
{
	if (!n)
		return;
	if (b->json) {
		for (int i = 0; i < n; i++) {
			struct run *r = &runs[i];
			printf("{\"scenario\":\"%s\",\"device\":\"%s\",\"config\":\"%s\"", r->scenario, r->device,
			       r->config);
			for (int j = 0; j < r->nf; j++) {
				if (field_na(&r->f[j]))
					printf(",\"%s\":null", r->f[j].name);
				else
					printf(",\"%s\":%.*f", r->f[j].name, r->f[j].decimals, r->f[j].value);
			}
			printf("}\n");
		}
		fflush(stdout);
		return;
	}
	printf("\n%s on %s\n", runs[0].scenario, runs[0].device);
	printf("  %-18s", "config");
	for (int j = 0; j < runs[0].nf; j++)
		printf(" %18s", runs[0].f[j].name);
	printf("\n");
	for (int i = 0; i < n; i++) {
		printf("  %-18s", runs[i].config);
		for (int j = 0; j < runs[i].nf; j++) {
			const struct field *f = &runs[i].f[j];
			if (field_na(f)) {
				char na[32];
				snprintf(na, sizeof na, "n/a (%lld samples)", (long long)f->samples);
				printf(" %18s", na);
			} else {
				printf(" %18.*f", f->decimals, f->value);
			}
		}
		printf("\n");
	}
	fflush(stdout);
}

/* ---------------------------------------------------------- scenarios */

struct config {
	const char *name;
	const char *opts;
};

typedef int (*scenario_fn)(struct bench *b, const char *spec, const struct config *c, struct run *r);

/* sync-alloc (patch 002): async writers fill the request pool; a sync
 * writer measures its time to get a request. */
static int sc_sync_alloc(struct bench *b, const char *spec, const struct config *c, struct run *r)
{
	struct flood_run fr;
	int rc = bench_flood_run_begin(b, &fr, spec, c->opts, 4, 4096, true);
	if (rc)
		return rc;
	rc = bench_sync_write_loop(b, &fr.e, BLK_WRITE_SYNC, b->seconds, 20 * NS_PER_MS, &fr.h, &fr.n);
	rc = bench_flood_run_end(&fr, rc);
	run_field(r, "alloc_wait_p50_ms", bench_ms(hist_quantile(&fr.st.alloc_wait[1], 0.5)), 3);
	run_p99_field(r, "alloc_wait_p99_ms", &fr.st.alloc_wait[1], 3);
	run_field(r, "alloc_wait_max_ms", bench_ms(fr.st.alloc_wait[1].max), 3);
	run_field(r, "alloc_samples", (double)fr.st.alloc_wait[1].count, 0);
	run_field(r, "async_service_p50_ms", bench_ms(hist_quantile(&fr.st.service_lat[0], 0.5)), 3);
	run_field(r, "service_samples", (double)fr.st.service_lat[0].count, 0);
	return rc;
}

/* sync-plug (patches 003-006): batches of 64 adjacent 4 KiB sync writes
 * then a wait, as a journal commit does. */
static int sc_sync_plug(struct bench *b, const char *spec, const struct config *c, struct run *r)
{
	struct env e;
	int rc = bench_env_open(b, &e, spec, c->opts);
	if (rc)
		return rc;
	blk_queue_stats_reset(e.q);
	unsigned op = blk_queue_sync_batch_op(e.q);
	struct hist h;
	hist_init(&h);
	/* A fixed number of batches, so device_requests compare directly. */
	int batches = 0, nbatches = (int)(b->seconds * 25);
	if (nbatches < BENCH_MIN_SAMPLES)
		nbatches = BENCH_MIN_SAMPLES;
	uint64_t base = bench_region(&e, 0.25);
	while (batches < nbatches) {
		int64_t t = bench_sync_batch(&e, op, base + (uint64_t)batches * 1024, 64, 4096, ~0u, 0);
		if (t < 0) {
			rc = (int)t;
			break;
		}
		hist_add(&h, (uint64_t)t);
		batches++;
	}
	struct blk_stats st;
	blk_queue_stats_get(e.q, &st);
	rc = bench_env_close(&e, rc);
	uint64_t reqs = st.device_requests[0] + st.device_requests[1];
	run_field(r, "device_requests", (double)reqs, 0);
	run_field(r, "requests_per_batch", batches ? (double)reqs / batches : 0, 1);
	run_field(r, "batch_ms", bench_ms((uint64_t)hist_mean(&h)), 3);
	run_p99_field(r, "batch_p99_ms", &h, 3);
	run_field(r, "batches", batches, 0);
	return rc;
}

/* noidle (patch 008): small sync writes with think time beside a
 * sequential reader. */
static int sc_noidle(struct bench *b, const char *spec, const struct config *c, struct run *r)
{
	struct env e;
	int rc = bench_env_open(b, &e, spec, c->opts);
	if (rc)
		return rc;
	struct reader rd = { .e = &e, .bytes = 128 * KiB, .start = bench_region(&e, 0.6), .len = bench_span(&e, 256 * MiB) };
	if (posix_memalign(&rd.buf, 4096, rd.bytes))
		return bench_env_close(&e, -ENOMEM);
	pthread_create(&rd.tid, NULL, bench_reader_main, &rd);
	clock_sleep_ns(bench_scaled(b, 200 * NS_PER_MS));
	blk_queue_stats_reset(e.q);
	uint64_t r0 = atomic_load(&rd.done_bytes);
	uint64_t t0 = clock_now_ns();
	struct hist h;
	hist_init(&h);
	uint64_t n = 0;
	while (bench_more(b, b->seconds, t0, n)) {
		int64_t t = bench_sync_batch(&e, BLK_WRITE_SYNC_PLUG, bench_region(&e, 0.2) + (n % 4096) * 8, 1, 4096, ~0u, 0);
		if (t < 0) {
			rc = (int)t;
			break;
		}
		hist_add(&h, (uint64_t)t);
		n++;
		clock_sleep_ns(bench_scaled(b, 3 * NS_PER_MS));
	}
	uint64_t t1 = clock_now_ns();
	struct blk_stats st;
	blk_queue_stats_get(e.q, &st);
	atomic_store(&e.stop, true);
	pthread_join(rd.tid, NULL);
	uint64_t rbytes = atomic_load(&rd.done_bytes) - r0;
	rc = bench_env_close(&e, rc);
	free(rd.buf);
	run_field(r, "idle_ms", bench_ms(st.idle_ns), 1);
	run_field(r, "reader_mbps", (double)rbytes / MiB / ((double)(t1 - t0) / 1e9), 2);
	run_field(r, "writer_p50_ms", bench_ms(hist_quantile(&h, 0.5)), 3);
	run_field(r, "writes", (double)n, 0); /* the writer's samples */
	return rc;
}

/* ssd-plug (patch 007): small sequential writes on a non-queuing SSD. */
static int sc_ssd_plug(struct bench *b, const char *spec, const struct config *c, struct run *r)
{
	struct env e;
	int rc = bench_env_open(b, &e, spec, c->opts);
	if (rc)
		return rc;
	blk_queue_stats_reset(e.q);
	uint64_t t0 = clock_now_ns(), end = t0 + (uint64_t)(b->seconds * 1e9);
	uint64_t base = bench_region(&e, 0.1), len = bench_span(&e, 256 * MiB), pos = 0;
	while (clock_now_ns() < end) {
		if (pos + 8 > len)
			pos = 0;
		rc = bench_submit_async(&e, BLK_WRITE, base + pos, 4096);
		if (rc < 0)
			break;
		pos += 8;
		clock_sleep_ns(bench_scaled(b, 20 * NS_PER_US));
	}
	/* Count throughput over the whole run including the drain. */
	blk_queue_unplug(e.q);
	while (atomic_load(&e.outstanding))
		clock_sleep_ns(NS_PER_MS);
	uint64_t t1 = clock_now_ns();
	struct blk_stats st;
	blk_queue_stats_get(e.q, &st);
	uint64_t bytes = atomic_load(&e.async_bytes);
	rc = bench_env_close(&e, rc);
	uint64_t reqs = st.device_requests[0] + st.device_requests[1];
	run_field(r, "device_requests", (double)reqs, 0);
	run_field(r, "kib_per_request", reqs ? (double)bytes / KiB / reqs : 0, 1);
	run_field(r, "mbps", (double)bytes / MiB / ((double)(t1 - t0) / 1e9), 2);
	return rc < 0 ? rc : 0;
}

/* ioprio (patch 010): journal-like sync batches beside a best-effort async
 * flood, journal at BE/4 vs RT/4. */
static int sc_ioprio(struct bench *b, const char *spec, const struct config *c, struct run *r)
{
	/* The config names the journal's ioprio, not a queue option. */
	int cls, lvl;
	int rc = blk_ioprio_parse(c->opts, &cls, &lvl);
	if (rc)
		return rc;
	struct flood_run fr;
	/* 2.6.30's CFQ decides here: writeback throttling (not in 2009) off. */
	rc = bench_flood_run_begin(b, &fr, spec, "wbt_lat_usec=0", 2, 1024 * KiB, false);
	if (rc)
		return rc;
	blk_ioprio_set(cls, lvl);
	rc = bench_fsync_loop(b, &fr.e, b->seconds, 16, bench_scaled(b, 50 * NS_PER_MS), &fr.h, &fr.n);
	blk_ioprio_set(BLK_IOPRIO_CLASS_BE, 4);
	rc = bench_flood_run_end(&fr, rc);
	run_latency_fields(r, &fr.h, true);
	run_field(r, "async_mbps", fr.mbps, 2);
	return rc;
}

/* max-sectors (Linus' experiment): a 4 KiB sync write behind streaming
 * 1 MiB async writes, max_sectors_kb 512 vs 64, and writeback throttling. */
static int sc_max_sectors(struct bench *b, const char *spec, const struct config *c, struct run *r)
{
	struct flood_run fr;
	int rc = bench_flood_run_begin(b, &fr, spec, c->opts, 1, 1024 * KiB, false);
	if (rc)
		return rc;
	rc = bench_sync_write_loop(b, &fr.e, BLK_WRITE_SYNC, b->seconds, 20 * NS_PER_MS, &fr.h, &fr.n);
	rc = bench_flood_run_end(&fr, rc);
	run_latency_fields(r, &fr.h, false);
	run_field(r, "async_mbps", fr.mbps, 2);
	return rc;
}

/* era: fsync-shaped work every 50 ms beside a streaming async writer, for
 * each preset. */
static int sc_era(struct bench *b, const char *spec, const struct config *c, struct run *r)
{
	struct flood_run fr;
	int rc = bench_flood_run_begin(b, &fr, spec, c->opts, 1, 1024 * KiB, false);
	if (rc)
		return rc;
	/* Twice the time: under 2.6.29 one fsync takes seconds; its p99 stays
	 * n/a (the cap comes first), its p50 and max have a few samples. */
	rc = bench_fsync_loop(b, &fr.e, 2 * b->seconds, 8, bench_scaled(b, 50 * NS_PER_MS), &fr.h, &fr.n);
	rc = bench_flood_run_end(&fr, rc);
	run_latency_fields(r, &fr.h, true);
	run_field(r, "async_mbps", fr.mbps, 2);
	run_field(r, "device_requests", (double)(fr.st.device_requests[0] + fr.st.device_requests[1]), 0);
	return rc;
}

/* Writeback throttling off: it keeps the async writers from filling the
 * pool at all (it is not what patch 002 is about; docs/bench-blk.md). */
static const struct config cfg_sync_alloc[] = { { "rw-pools", "sync_async_pools=0,wbt_lat_usec=0" },
						{ "sync-async-pools", "sync_async_pools=1,wbt_lat_usec=0" } };
static const struct config cfg_sync_plug[] = { { "WRITE_SYNC", "sync_batch_op=WRITE_SYNC" },
					       { "WRITE_SYNC_PLUG", "sync_batch_op=WRITE_SYNC_PLUG" } };
static const struct config cfg_noidle[] = { { "noidle-ignored", "noidle=0" }, { "noidle-honoured", "noidle=1" } };
static const struct config cfg_ssd_plug[] = { { "no-plug-nonrot", "ssd_plug=0" },
					      { "plug-unless-queuing", "ssd_plug=1" } };
static const struct config cfg_ioprio[] = { { "BE/4", "BE/4" }, { "RT/4", "RT/4" } };
/* Linus' experiment as 2.6.30 ran it (writeback throttling off), then his
 * later suggestion, a cap on outstanding writes, as Linux 4.10 built it
 * (wbt_lat_usec at the rotational default, full-size requests). */
static const struct config cfg_max_sectors[] = { { "max_sectors_kb=512", "max_sectors_kb=512,wbt_lat_usec=0" },
						 { "max_sectors_kb=64", "max_sectors_kb=64,wbt_lat_usec=0" },
						 { "wbt_lat_usec=75000", "max_sectors_kb=512,wbt_lat_usec=75000" } };
static const struct config cfg_era[] = { { "2.6.29", "preset=2.6.29" },
					 { "2.6.30-rc1", "preset=2.6.30-rc1" },
					 { "2.6.30", "preset=2.6.30" } };

static const struct scenario {
	const char *name;
	scenario_fn fn;
	const struct config *configs;
	int nconfigs;
	const char *default_device; /* used when --device is not given */
	const char *help;
} scenarios[] = {
	/* Without the write cache: 4 random 4 KiB writers fill sim:hdd's 16 MiB
	 * cache with 4096 scattered blocks, whose destage (~18 s) every later
	 * command waits behind, so no request completes and no pool slot
	 * frees within a run (docs/bench-blk.md). */
	{ "sync-alloc", sc_sync_alloc, cfg_sync_alloc, 2, "sim:hdd,wcache=0", "sync writer's request allocation behind async writers (patch 002)" },
	{ "sync-plug", sc_sync_plug, cfg_sync_plug, 2, NULL, "64 adjacent sync writes then wait (patches 003-006)" },
	{ "noidle", sc_noidle, cfg_noidle, 2, NULL, "sync writes with think time beside a reader (patch 008)" },
	{ "ssd-plug", sc_ssd_plug, cfg_ssd_plug, 2, "sim:ssd-nq", "small sequential writes on a non-queuing SSD (patch 007)" },
	{ "ioprio", sc_ioprio, cfg_ioprio, 2, NULL, "journal-like commits beside an async flood, BE/4 vs RT/4 (patch 010)" },
	{ "max-sectors", sc_max_sectors, cfg_max_sectors, 3, NULL, "4 KiB sync write behind 1 MiB async writes; 512 vs 64 KiB requests vs wbt" },
	{ "era", sc_era, cfg_era, 3, NULL, "fsync-shaped work beside a streaming writer, per preset" },
};
#define NR_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

static int bench_scenario(struct bench *b, const struct scenario *s)
{
	const char *spec = b->device ? b->device : s->default_device ? s->default_device : "sim:hdd";
	struct run runs[4];
	int rc = 0;
	for (int i = 0; i < s->nconfigs; i++) {
		struct run *r = &runs[i];
		memset(r, 0, sizeof *r);
		r->scenario = s->name;
		r->device = spec;
		r->config = s->configs[i].name;
		progress(b, s->name, r->config, i + 1, s->nconfigs);
		err_clear();
		rc = s->fn(b, spec, &s->configs[i], r);
		if (rc < 0) {
			progress_done();
			fprintf(stderr, "nostall bench: %s (%s) on %s failed: %s\n", s->name, r->config, spec, err_last(rc));
			return rc;
		}
	}
	progress_done();
	print_runs(b, runs, s->nconfigs);
	return 0;
}

struct blk_args {
	struct bench b;
	const char *only; /* --scenario */
};

static int blk_seconds(void *ctx, const struct cliopt *o, const char *arg)
{
	struct bench *b = &((struct blk_args *)ctx)->b;
	if (opts_parse_double(arg, &b->seconds) || b->seconds <= 0 || b->seconds > 3600)
		return cliopt_say("nostall bench", "--seconds '%s' must be a number in (0, 3600]", arg);
	return 0;
}

static const struct cliopt blk_opts[] = {
	{ "device", 'd', "SPEC", "device spec (default sim:hdd; ssd-plug defaults to sim:ssd-nq)",
	  CLIOPT_STR_AT(struct blk_args, b.device) },
	{ "scenario", 's', "NAME[,NAME..]", "the scenarios to run (default: all, below)",
	  CLIOPT_STR_AT(struct blk_args, only) },
	{ "seconds", 't', "S", "minimum measurement time per run (default 4); latency runs go on\n"
			       "until 100 samples, at most twice that time", CLIOPT_CALL(blk_seconds) },
	{ NULL, 'o', "OPTS", "queue/scheduler tunables applied before each configuration",
	  CLIOPT_STR_AT(struct blk_args, b.opts) },
	{ "json", 'j', NULL, "one JSON object per run on stdout", CLIOPT_FLAG_AT(struct blk_args, b.json) },
	{ 0 },
};

static const struct cliopt_cmd blk_cmd = {
	.prog = "nostall bench blk",
	.usage = "usage: nostall bench blk|jbd [--device SPEC] [--scenario NAME[,NAME..]] [--seconds S] [--json] [-o OPTS]\n"
		 "       nostall bench fs [--device SPEC] [-o OPTS] [--workload NAME] [--json] (bench fs --help)\n"
		 "       nostall bench repro [--device SPEC] [--quick] [--peers] [--out DIR] [--json] (bench repro --help)\n",
	.opts = blk_opts,
	.list = CLIOPT_LIST("scenarios:", scenarios, 12),
};

static int bench_blk(int argc, char **argv)
{
	struct blk_args a = { .b = { .seconds = 4.0, .scale = 1.0, .cap_factor = 2.0 } };
	int pos, st = cliopt_parse(&blk_cmd, argc, argv, &a, &pos);
	if (st >= 0)
		return st;
	struct bench b = a.b;
	const char *only = a.only;
	int rc = blk_opts_validate(b.opts);
	if (rc) {
		fprintf(stderr, "nostall bench: -o %s: %s\n", b.opts, err_last(rc));
		return 2;
	}
	bool selected[NR_SCENARIOS] = { false };
	if (only) {
		char *copy = strdup(only), *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			size_t i;
			for (i = 0; i < NR_SCENARIOS; i++)
				if (!strcmp(scenarios[i].name, t))
					break;
			if (i == NR_SCENARIOS) {
				fprintf(stderr, "nostall bench: unknown scenario '%s'\n", t);
				cliopt_help(&blk_cmd, stderr);
				free(copy);
				return 2;
			}
			selected[i] = true;
		}
		free(copy);
	} else {
		for (size_t i = 0; i < NR_SCENARIOS; i++)
			selected[i] = true;
	}
	/* Fail early on a bad device spec, before any run starts. */
	if (b.device) {
		struct dev *d;
		rc = dev_open(b.device, &d);
		if (rc < 0) {
			fprintf(stderr, "nostall bench: device '%s': %s\n", b.device, err_last(rc));
			return 1;
		}
		dev_close(d);
	}
	if (!b.json)
		printf("latency runs: at least %g s (era %g s), then until %d samples, at most %g s (era %g s);\n"
		       "p99 only with %d samples or more, else n/a with the count\n",
		       b.seconds, 2 * b.seconds, BENCH_MIN_SAMPLES, bench_cap(&b, b.seconds), bench_cap(&b, 2 * b.seconds),
		       BENCH_MIN_SAMPLES);
	for (size_t i = 0; i < NR_SCENARIOS; i++) {
		if (!selected[i])
			continue;
		if (bench_scenario(&b, &scenarios[i]) < 0)
			return 1;
	}
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		cliopt_help(&blk_cmd, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "blk"))
		return bench_blk(argc - 1, argv + 1);
	if (!strcmp(argv[1], "jbd"))
		return bench_jbd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "fs"))
		return bench_fs(argc - 1, argv + 1);
	if (!strcmp(argv[1], "repro"))
		return bench_repro(argc - 1, argv + 1);
	fprintf(stderr, "nostall bench: unknown benchmark '%s' (available: blk, jbd, fs, repro)\n", argv[1]);
	return 2;
}

