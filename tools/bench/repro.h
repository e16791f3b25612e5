/* nostall bench repro: the article at the filesystem level (issue 13,
 * docs/bench-repro.md). One command runs every workload per era preset and
 * data mode on a device through the library, optionally beside peers
 * (nostall over FUSE, the kernel's ext3 on a loop device, fuse2fs), and
 * writes a report, results.json and gnuplot plots.
 *
 * Seams:
 *   repro_main.c    front-end, the run matrix, progress
 *   repro_job.c     one run in a child process: fork, the line protocol,
 *                   deadline, kill; a hung fsync is censored, not waited for
 *   repro_fsops.c   where a workload's files live: the library or POSIX
 *   repro_load.c    the workloads (jens, fsync-under-stream, fsync-tester,
 *                   atime, overwrite), written once against repro_fsops
 *   repro_loadcmd.c `nostall load DIR WORKLOAD`: the peers' workload binary
 *   repro_peers.c   kernel ext3 on a loop device, fuse2fs, nostall-fuse
 *   repro_report.c  results.json, report.md and the done-when checks
 *   repro_plot.c    gnuplot: fsync latency over time, CDFs, Jens bars
 *
 * Why a child process per run: data=ordered fsync beside a streamer can
 * take unbounded time (a livelock before issue 8's fix), and a stuck fsync
 * cannot be cancelled. The child streams each sample as it completes; the
 * parent kills it at the deadline and counts the fsync in flight as a
 * timed-out sample (a lower bound), so the bench never hangs and never
 * hides a stall.
 */
#ifndef NOSTALL_TOOLS_REPRO_H
#define NOSTALL_TOOLS_REPRO_H

#include <nostall/nostall.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define RP_MiB (1024ull * 1024)

/* ------------------------------------------------------------ sizes */

/* What a run measures. Chosen by the driver (full, --quick, --micro) and
 * passed to the load as arguments, so peers measure the same thing. */
struct rp_params {
	unsigned jens_n;          /* Jens loop iterations */
	double seconds;           /* measuring time of a timed workload */
	unsigned min_samples;     /* fsync-under-stream: measure past `seconds` until
	                           * this many fsyncs completed ... */
	double max_seconds;       /* ... or this much measuring time (a hard cap) */
	double warmup;            /* the streamer runs alone this long first */
	double period;            /* the sampler's period (s) */
	uint64_t stream_bytes;    /* a streamer wraps inside a file this big */
	uint64_t reader_bytes;    /* atime: each reader's file */
	unsigned tester_write;    /* fsync-tester: bytes per pwrite+fsync; creates and
	                           * stats (bench fs --mount): each file's size when
	                           * set, at most 1 KiB (else 1 KiB) */
	unsigned files, dirs;     /* creates/stats/unlinks (bench fs --mount) */
};

/* The longest a run measures: max_seconds when above seconds (the child's
 * deadline is this plus warm-up and slack, so nothing hangs). */
double rp_params_span(const struct rp_params *p);

/* The fewest samples behind a percentile the report gives a verdict on
 * (below: n/a). The median lies between the smallest and the largest of 5
 * samples with probability 1 - 2/2^5 = 94%; a p99 of fewer than 100
 * samples is their maximum (nearest rank), and the report says so. */
#define RP_MIN_SAMPLES 5u
/* The fewest samples behind a p99 the report prints as a p99: under it the
 * nearest-rank p99 is the maximum, and the tables and checks say "max". */
#define RP_P99_SAMPLES 100u

/* The full run's parameters (what `nostall load` assumes unless told). */
void rp_params_default(struct rp_params *p);

/* ------------------------------------------------------------ files */

/* A filesystem the workloads run on: the library (a mounted nostall_fs) or
 * POSIX calls under a host directory. Paths are relative ("a/b"). Every
 * call returns 0 / a count, or a negative errno with err_set'd message. */
struct rp_fs;
struct rp_file;

/* remount unmounts and mounts again, giving the new mount (caches cold). */
int rp_fs_lib(struct nostall_fs *fs, int (*remount)(void *ctx, struct nostall_fs **fs), void *ctx,
	      struct rp_fs **out);
int rp_fs_posix(const char *dir, struct rp_fs **out);
void rp_fs_free(struct rp_fs *fs);
/* posix O_* flags (O_CREAT, O_APPEND, ...). */
int rp_open(struct rp_fs *fs, const char *path, int oflags, struct rp_file **out);
ssize_t rp_write(struct rp_file *f, const void *buf, size_t len);
ssize_t rp_pwrite(struct rp_file *f, const void *buf, size_t len, uint64_t off);
ssize_t rp_pread(struct rp_file *f, void *buf, size_t len, uint64_t off);
int rp_fsync(struct rp_file *f);
int rp_close(struct rp_file *f);
int rp_mkdir(struct rp_fs *fs, const char *path);
int rp_rename(struct rp_fs *fs, const char *from, const char *to);
int rp_unlink(struct rp_fs *fs, const char *path);
/* stat(2): the file's size in *size. */
int rp_stat(struct rp_fs *fs, const char *path, uint64_t *size);
/* Everything written so far durable, as the system offers it: the
 * library's nostall_sync; POSIX: syncfs(2), then NOSTALL_IOC_SYNC (on a
 * nostall FUSE mount, where syncfs does not reach the daemon; ENOTTY and
 * the like elsewhere are ignored). */
int rp_syncfs(struct rp_fs *fs);
/* Make `paths` cold (written back and out of every cache), so readers go
 * to the disk: a remount for the library, fsync + fadvise for POSIX. */
int rp_drop_caches(struct rp_fs *fs, const char *const *paths, unsigned n);

/* ------------------------------------------------------------ protocol */

/* The load's output, one line each, written by any thread (whole lines,
 * under a lock) to an fd, read by the parent (repro_job.c):
 *   B SERIES T            an operation of SERIES began at T
 *   S SERIES T MS         ... and ended at T, taking MS milliseconds
 *   M METRIC VALUE UNIT   a figure (VALUE may be nan)
 *   Z T                   the measurement began at T (time zero of the series)
 *   N TEXT                a note
 *   E TEXT                the load failed
 * T: CLOCK_MONOTONIC seconds (parent and child share the clock). */
struct rp_out;
struct rp_out *rp_out_new(int fd);
void rp_out_free(struct rp_out *o);
void rp_out_zero(struct rp_out *o, uint64_t t_ns);
void rp_out_begin(struct rp_out *o, const char *series, uint64_t t_ns);
void rp_out_sample(struct rp_out *o, const char *series, uint64_t t_ns, uint64_t lat_ns);
void rp_out_metric(struct rp_out *o, const char *metric, double v, const char *unit);
void rp_out_note(struct rp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rp_out_error(struct rp_out *o, int rc);

/* ------------------------------------------------------------ workloads */

/* RP_STREAM_WRITE..RP_UNLINKS: bench fs --mount's workloads as phases,
 * one load each, so that the driver can make caches cold between them
 * (repro_files.c; bench repro itself does not run them). */
enum rp_kind {
	RP_JENS, RP_JENS_STREAM, RP_FUS, RP_TESTER, RP_ATIME, RP_OVERWRITE,
	RP_STREAM_WRITE, RP_STREAM_READ, RP_CREATES, RP_STATS, RP_UNLINKS, RP_NKINDS
};
const char *rp_kind_name(enum rp_kind k);
int rp_kind_parse(const char *name, enum rp_kind *k);

/* Run a workload on fs, writing its samples and figures to o. Returns 0 or
 * a negative errno; on a workload that overran its time by far it returns
 * -ETIMEDOUT with the operation in flight still open (B without S): the
 * caller exits without unmounting. */
int rp_load_run(struct rp_fs *fs, enum rp_kind k, const struct rp_params *p, struct rp_out *o);
/* The phase kinds (rp_load_run passes them on). */
int rp_files_run(struct rp_fs *fs, enum rp_kind k, const struct rp_params *p, struct rp_out *o);

/* Parameters as load arguments and back ("--jens-n 500 --seconds 6 ..."). */
int rp_params_argv(const struct rp_params *p, char bufs[][32], char **argv, int max);
int rp_params_parse(struct rp_params *p, const char *name, const char *value);

/* ------------------------------------------------------------ results */

#define RP_SERIES_MAX 6

struct rp_series {
	char name[24];
	double *t;                /* seconds since the run began */
	double *ms;
	unsigned n, cap;
	double pending_t;         /* a B without its S (-1: none) */
	unsigned censored;        /* samples that are timed-out lower bounds */
};

struct rp_metric {
	char name[32];
	double value;             /* NAN: not measured */
	char unit[12];
	unsigned samples;
};

#define RP_METRICS_MAX 24

/* One run: a workload on a system with a preset, mode and setting. */
struct rp_run {
	const char *workload;     /* "jens", "fsync-under-stream", ... */
	enum rp_kind kind;
	const char *device;
	const char *system;       /* "nostall", "nostall-fuse", "kernel-ext3", "fuse2fs" */
	const char *preset;       /* era preset, or "host" for peers */
	const char *mode;         /* data mode */
	char config[48];          /* "idle", "stream", "journal_ioprio=RT/4", ... */
	char opts[160];           /* extra mount options (nostall) */
	struct rp_params p;
	int same_as;              /* 1 + the index of a run with the same mount whose
	                           * figures this one reports (not run again); 0: none */
	/* results */
	char status[160];         /* "" ok, else "skipped: ...", "failed: ...", "timed out: ..." */
	bool timed_out;
	double t0;                /* monotonic: the child's start, then the measurement's */
	struct rp_series s[RP_SERIES_MAX];
	int ns;
	struct rp_metric m[RP_METRICS_MAX];
	int nm;
	char note[200];
};

void rp_run_metric(struct rp_run *r, const char *name, double v, const char *unit, unsigned samples);
/* NAN if the run has no such metric. */
double rp_run_get(const struct rp_run *r, const char *name);
struct rp_series *rp_run_series(struct rp_run *r, const char *name, bool create);
void rp_run_free(struct rp_run *r);
/* Summaries from the series (percentiles, counts), after the run. */
void rp_run_summarize(struct rp_run *r);
/* Sorted copy of a series' latencies (caller frees), NULL when empty. */
double *rp_series_sorted(const struct rp_series *s);
double rp_quantile(const double *sorted, unsigned n, double q);

/* What runs a job: the library in a forked child (dev spec), or a command
 * (argv) whose stdout speaks the protocol. deadline_s bounds the whole run. */
struct rp_exec {
	const char *spec;         /* library: the device */
	uint64_t fs_bytes;        /* library: mkfs size */
	const char *fs, *features; /* library: mkfs type and -O (NULL: ext3, the type's) */
	char *const *argv;        /* command (peers) */
	double deadline_s;
};
int rp_job_run(struct rp_run *r, const struct rp_exec *x);

/* ------------------------------------------------------------ driver */

struct rp_bench {
	const char *device;
	const char *out_dir;
	const char *user_opts;    /* -o: added to every nostall run's mount */
	const char *only;         /* --workload: the list as given, or NULL (all) */
	bool quick, micro, peers, json;
	bool kind_on[RP_NKINDS];
	bool maxsec_on;
	uint64_t fs_bytes;
	const char *fs, *features; /* --fs, --features (NULL: ext3 as before; named in
	                            * the outputs only when given) */
	struct rp_run *runs;
	int nruns, cap;
	int done;                 /* progress */
	char load_before[64], load_after[64];
	double wall_s;            /* the whole run's wall time (report.md) */
	char self[4096];          /* this binary, for the peers' load */
};

/* The parameters of a workload in this bench (full, --quick, --micro). */
struct rp_params rp_params_pick(const struct rp_bench *b, enum rp_kind k);
struct rp_run *rp_bench_add(struct rp_bench *b, const char *workload, enum rp_kind k, const char *system,
			    const char *preset, const char *mode, const char *config, const char *opts);
void rp_progress(const struct rp_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rp_progress_done(void);

/* repro_peers.c: add the peers' runs, then run them (each mounts and
 * unmounts its own filesystem). */
void rp_peers_add(struct rp_bench *b);
int rp_peers_run(struct rp_bench *b);

/* repro_report.c */
int rp_report_write(const struct rp_bench *b);
int rp_json_write(const struct rp_bench *b, FILE *f);
/* repro_plot.c: data files and SVGs under out_dir; 0, or -ENOENT when
 * gnuplot is missing (the report says so). */
int rp_plots_write(const struct rp_bench *b, char *why, size_t whylen);

#endif
