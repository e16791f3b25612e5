/* nostall bench blk: the load machinery the scenarios (cmd_bench.c) are
 * built from (bench_blk_load.c): a device and queue per run, fire-and-forget
 * and synchronous submission, background floods of async writes, a
 * sequential reader, and journal-like commit loops. Threads started here
 * stop when env.stop is set (bench_env_close, bench_flood_stop). */
#ifndef NOSTALL_TOOLS_BENCH_BLK_H
#define NOSTALL_TOOLS_BENCH_BLK_H

#include "blk/blk.h"
#include "dev/dev.h"
#include "util/hist.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A p99 needs at least this many samples (below: "n/a (N samples)"); a
 * latency run goes on past its time until it has them, up to its cap. */
#define BENCH_MIN_SAMPLES 100

#define KiB 1024ull
#define MiB (1024ull * 1024)

struct bench {
	const char *device;  /* spec given with --device, or NULL */
	const char *opts;    /* user -o options, applied before each config */
	bool json;
	double seconds;      /* minimum measurement time per run */
	double cap_factor;   /* a latency run stops at cap_factor * seconds even
			      * without BENCH_MIN_SAMPLES samples */
	double scale;        /* time multiplier for sleeps in the load (think times) */
	int failures;
};

struct env {
	struct dev *dev;
	struct blk_queue *q;
	uint64_t dev_sectors;
	atomic_bool stop;
	atomic_uint_fast64_t outstanding; /* fire-and-forget bios in flight */
	atomic_uint_fast64_t async_bytes; /* completed by the async load */
	atomic_int io_errors;
	void *buf;           /* shared payload for writes (contents irrelevant) */
	size_t buf_len;
};

struct streamer {
	struct env *e;
	pthread_t tid;
	unsigned rw;
	uint32_t bytes;       /* per bio */
	uint64_t start, len;  /* region in sectors; the stream wraps inside it */
	bool random;          /* random offsets (4 KiB aligned) instead of sequential */
	uint64_t seed;
	uint64_t think_ns;    /* pause between bios */
	int ioprio_class, ioprio_level;
};

/* A background flood of async writes: n streams in separate regions,
 * started and given time to fill the queue before measuring (statistics
 * and byte counts are reset once it has settled). */
struct flood {
	struct streamer w[4];
	int n;
	uint64_t t0;
};

/* Sequential reader that waits for each read (a sync stream). */
struct reader {
	struct env *e;
	pthread_t tid;
	uint32_t bytes;
	uint64_t start, len;
	atomic_uint_fast64_t done_bytes;
	void *buf;
};

/* A sync load measured beside an async flood (the sync-alloc, ioprio,
 * max-sectors and era scenarios). */
struct flood_run {
	struct env e;
	struct flood f;
	struct hist h;          /* latencies of the sync load */
	uint64_t n;             /* its operations */
	double mbps;            /* the flood's throughput (bench_flood_run_end) */
	struct blk_stats st;    /* queue statistics at the end (bench_flood_run_end) */
};

/* ---- a run's device and queue */

/* Open spec afresh, build its queue with the user's -o options, then the
 * configuration's; reported on stderr on failure. */
int bench_env_open(struct bench *b, struct env *e, const char *spec, const char *config_opts);
/* Wait for the fire-and-forget load, then tear down. A run whose I/O failed
 * reports it: its figures would mean nothing. Returns rc if it is already an
 * error, else the teardown's verdict. */
int bench_env_close(struct env *e, int rc);

/* ---- submission */

/* Fire-and-forget one bio (the page-cache writeback shape). Sleeps in the
 * block layer when the request pool is full. */
int bench_submit_async(struct env *e, unsigned rw, uint64_t sector, uint32_t bytes);
/* Submit `n` bios of `bytes` at consecutive sectors with op rw, then
 * optionally (commit_rw != ~0u) a commit-like bio with commit_rw at
 * commit_sector, and wait for all of them (the wait unplugs). Returns
 * elapsed ns or a negative errno. */
int64_t bench_sync_batch(struct env *e, unsigned rw, uint64_t sector, unsigned n, uint32_t bytes,
			 unsigned commit_rw, uint64_t commit_sector);

/* ---- loads */

/* Start n (at most 4) async streams of `bytes` bios and let them settle. */
void bench_flood_start(struct bench *b, struct env *e, struct flood *f, int n, uint32_t bytes, bool random);
/* The flood's throughput since bench_flood_start, in MiB/s. */
double bench_flood_mbps(struct env *e, struct flood *f);
/* Tear the environment down and join the streams (bench_env_close's result). */
int bench_flood_stop(struct env *e, struct flood *f, int rc);
/* Open the environment and start the flood for a flood_run. */
int bench_flood_run_begin(struct bench *b, struct flood_run *fr, const char *spec, const char *config_opts,
			  int streams, uint32_t bytes, bool random);
/* Read the flood's throughput and the queue statistics, then tear down
 * (bench_flood_stop's result). */
int bench_flood_run_end(struct flood_run *fr, int rc);
/* Should a latency loop that started at t0 (ns) with `count` samples go
 * on? At least `seconds`, then until BENCH_MIN_SAMPLES, at most the cap. */
bool bench_more(const struct bench *b, double seconds, uint64_t t0, uint64_t count);
/* The cap of a run of `seconds`, in seconds. */
double bench_cap(const struct bench *b, double seconds);

/* Repeat a single 4 KiB sync write (op) and wait, every period, for
 * `seconds` (bench_more); latencies into h. */
int bench_sync_write_loop(struct bench *b, struct env *e, unsigned op, double seconds, uint64_t period_ns,
			  struct hist *h, uint64_t *count);
/* A journal-like sync submitter: every `period`, a plugged batch of `n`
 * 4 KiB writes with the queue's batch op, then a commit block, then wait.
 * Records each batch's latency. */
int bench_fsync_loop(struct bench *b, struct env *e, double seconds, unsigned n, uint64_t period_ns,
		     struct hist *h, uint64_t *count);
/* Thread body of a struct reader: sequential reads until e->stop. */
void *bench_reader_main(void *arg);

/* ---- units and placement */

double bench_ms(uint64_t ns);
/* ns scaled by the bench's time multiplier (think times, settling). */
uint64_t bench_scaled(struct bench *b, uint64_t ns);
/* Region helpers: keep loads inside the first GiBs so simulated disks stay
 * small in memory, but far enough apart that they seek. The sector at
 * fraction frac of the device (4 KiB aligned); a span of want_bytes, at most
 * an eighth of the device, in sectors. */
uint64_t bench_region(struct env *e, double frac);
uint64_t bench_span(struct env *e, uint64_t want_bytes);

#endif
