/* nostall bench fs: the workloads (through the library API), each beside
 * its raw device floor (bench_fs_raw.c; docs/bench-fs.md).
 *
 * Each workload runs on a fresh filesystem (fsb_env_open), unmounts, then
 * measures its floor on the same open device: the raw writes land on the
 * filesystem's blocks, which is why they come after the unmount (a fresh
 * mkfs follows in the next run). Raw I/O goes straight to dev_submit,
 * without the block layer: the best the device does, not what our queue
 * makes of it.
 */
#include "bench_fs.h"

#include "dev/dev.h"
#include "extfs/mkfs/mkfs.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/stalltrace.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IO_CHUNK (1024u * 1024)      /* the workloads' read/write size */
#define FUS_PERIOD_NS (50 * NS_PER_MS)
#define FUS_APPEND 4096u

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static double mibps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / FSB_MiB / secs(ns) : 0;
}

static double pct(double a, double b)
{
	return b > 0 ? 100.0 * a / b : NAN;
}

/* ------------------------------------------------------------ memory */

void fsb_rss_reset(void)
{
	/* Give the heap's free memory back first (earlier runs' caches are
	 * freed but glibc keeps their pages): the peak then measures this
	 * run, not the allocator's history. */
	malloc_trim(0);
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

uint64_t fsb_rss_peak(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* ------------------------------------------------------------ helpers */

static int api_err(int rc, const char *what, const char *path)
{
	return err_set(rc, "%s %s: %s", what, path, nostall_errmsg(rc));
}

/* Write `bytes` of buf (IO_CHUNK long) to f in IO_CHUNK pieces. */
static int write_all(struct nostall_file *f, const char *buf, uint64_t bytes, const char *path)
{
	for (uint64_t done = 0; done < bytes;) {
		size_t len = bytes - done < IO_CHUNK ? (size_t)(bytes - done) : IO_CHUNK;
		ssize_t n = nostall_write(f, buf, len);
		if (n < 0)
			return api_err((int)n, "write", path);
		done += (uint64_t)n;
	}
	return 0;
}

static int close_file(struct nostall_file *f, const char *path)
{
	int rc = nostall_flush(f);
	nostall_close(f);
	return rc < 0 ? api_err(rc, "close", path) : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Quantile q of n sorted samples in ms (nearest rank). */
static double quantile_ms(const uint64_t *v, unsigned n, double q)
{
	if (!n)
		return NAN;
	unsigned i = (unsigned)ceil(q * n);
	return (double)v[i ? i - 1 : 0] / 1e6;
}

/* ------------------------------------------------------------ repetitions */

/* The device's rate moves a lot from second to second on a shared host
 * (a file: device on a virtual disk: 1.0 to 3.0 GB/s from one run to the
 * next), so a floor measured once, minutes away from the filesystem's
 * figure, compares two different machines. Stream and jens therefore
 * repeat: each repetition measures the filesystem and its raw floor back
 * to back, in alternating order (fs then raw, raw then fs: a drift favours
 * neither side), and the figures are medians; a ratio is the median of the
 * per-repetition ratios (each of two neighbouring measurements). */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v); the mean of the middle two for even n. */
static double median(double *v, unsigned n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double min_of(const double *v, unsigned n)
{
	double m = n ? v[0] : NAN;
	for (unsigned i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double max_of(const double *v, unsigned n)
{
	double m = n ? v[0] : NAN;
	for (unsigned i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* The ratios' median (the figure) with their spread (JSON only). */
static void ratio_fields(struct fsb_run *r, const char *name, const char *lo, const char *hi, double *v,
			 unsigned n, int decimals)
{
	double a = min_of(v, n), z = max_of(v, n);
	fsb_field(r, name, median(v, n), decimals);
	fsb_field_json(r, lo, a, decimals);
	fsb_field_json(r, hi, z, decimals);
}

/* ", 2/5" for the progress line ("" without repetitions). */
static void rep_label(char *s, size_t n, unsigned i, unsigned reps)
{
	if (reps > 1)
		snprintf(s, n, ", %u/%u", i + 1, reps);
	else
		s[0] = 0;
}

/* Whether repetition `rep` measures the raw floor first. */
static bool raw_first(unsigned rep)
{
	return rep % 2 == 1;
}

/* ------------------------------------------------------------ jens */

/* The seed's loop (Jens Axboe, April 2009): fopen, fprintf a line, fsync,
 * fclose, 2,000 times. "a" mode: O_CREAT|O_WRONLY|O_APPEND. On a fresh
 * filesystem, unmounted at the end; elapsed ns of the loop in *ns. */
static int jens_once(struct fsb *b, struct fsb_env *e, const char *mode, const char *rep, uint64_t *ns)
{
	int rc = fsb_env_fresh(e);
	if (rc < 0)
		return rc;
	static const char line[] = "Some data here\n";
	const char *path = "/jens.txt";
	unsigned n = b->sz.jens_n;
	uint64_t t0 = clock_now_ns();
	for (unsigned i = 0; i < n && !rc; i++) {
		struct nostall_file *f;
		rc = nostall_create(e->fs, path, NOSTALL_O_CREAT | NOSTALL_O_WRONLY | NOSTALL_O_APPEND, 0644, &f);
		if (rc < 0) {
			rc = api_err(rc, "open", path);
			break;
		}
		ssize_t w = nostall_write(f, line, sizeof line - 1);
		rc = w < 0 ? api_err((int)w, "write", path) : nostall_fsync(f, 0);
		if (rc < 0 && w >= 0)
			rc = api_err(rc, "fsync", path);
		int crc = close_file(f, path);
		if (!rc)
			rc = crc;
		if (i % 100 == 99)
			fsb_progress(b, "jens (data=%s%s): %u/%u fsyncs", mode, rep, i + 1, n);
	}
	*ns = clock_now_ns() - t0;
	return fsb_env_unmount(e, rc);
}

int fsb_jens(struct fsb *b, const char *mode, struct fsb_run *r)
{
	struct fsb_env e;
	int rc = fsb_env_dev_open(b, mode, &e);
	if (rc < 0)
		return rc;
	unsigned n = b->sz.jens_n, reps = b->sz.reps;
	double total[99], floor[99], x[99];
	for (unsigned i = 0; i < reps && !rc; i++) {
		char rep[32];
		rep_label(rep, sizeof rep, i, reps);
		uint64_t t = 0;
		int64_t fl = 0;
		for (int step = 0; step < 2 && !rc; step++) {
			if (step == raw_first(i)) {
				rc = jens_once(b, &e, mode, rep, &t);
				continue;
			}
			fsb_progress(b, "jens (data=%s%s): floor, %u write+flush round trips", mode, rep, 2 * n);
			fl = fsb_raw_roundtrips(e.dev, 2 * n, b->sz.fs_bytes);
			if (fl < 0)
				rc = (int)fl;
		}
		total[i] = secs(t);
		floor[i] = secs((uint64_t)fl);
		x[i] = fl > 0 ? (double)t / (double)fl : NAN;
	}
	fsb_env_close(&e);
	if (rc < 0)
		return rc;
	double total_s = median(total, reps);
	fsb_field(r, "total_s", total_s, 3);
	fsb_field(r, "floor_s", median(floor, reps), 3);
	ratio_fields(r, "x_floor", "x_floor_min", "x_floor_max", x, reps, 2);
	fsb_field(r, "ms_per_fsync", total_s * 1e3 / n, 3);
	fsb_field(r, "fsyncs", n, 0);
	fsb_field(r, "reps", reps, 0);
	snprintf(r->note, sizeof r->note,
		 "floor = %u x (4 KiB write + flush) on the raw device; medians of %u repetitions, fs and floor "
		 "alternating; x_floor = median of the per-repetition ratios",
		 2 * n, reps);
	return 0;
}

/* ------------------------------------------------------------ stream */

/* Read `path` to its end in IO_CHUNK reads; bytes read into *got. */
static int read_all(struct nostall_fs *fs, const char *path, char *buf, uint64_t *got)
{
	struct nostall_file *f;
	int rc = nostall_open(fs, path, NOSTALL_O_RDONLY, &f);
	if (rc < 0)
		return api_err(rc, "open", path);
	*got = 0;
	for (;;) {
		ssize_t n = nostall_read(f, buf, IO_CHUNK);
		if (n <= 0) {
			rc = n < 0 ? api_err((int)n, "read", path) : 0;
			break;
		}
		*got += (uint64_t)n;
	}
	nostall_close(f);
	return rc;
}

/* One filesystem pass: fresh filesystem, write + fsync + close (timed:
 * *tw, with the peak RSS meanwhile in *rss), remount, read back (*tr),
 * unmount. */
static int stream_once(struct fsb *b, struct fsb_env *e, const char *mode, const char *rep, char *buf,
		       uint64_t *tw, uint64_t *tr, uint64_t *rss)
{
	int rc = fsb_env_fresh(e);
	if (rc < 0)
		return rc;
	const char *path = "/stream";
	uint64_t bytes = b->sz.stream_bytes, got = 0;
	fsb_progress(b, "stream (data=%s%s): writing %llu MiB", mode, rep, (unsigned long long)(bytes / FSB_MiB));
	fsb_rss_reset();
	uint64_t t0 = clock_now_ns();
	struct nostall_file *f;
	rc = nostall_create(e->fs, path, NOSTALL_O_CREAT | NOSTALL_O_WRONLY | NOSTALL_O_TRUNC, 0644, &f);
	if (rc < 0) {
		rc = api_err(rc, "create", path);
	} else {
		rc = write_all(f, buf, bytes, path);
		int frc = rc ? 0 : nostall_fsync(f, 0);
		if (frc < 0)
			rc = api_err(frc, "fsync", path);
		frc = close_file(f, path);
		if (!rc)
			rc = frc;
	}
	*tw = clock_now_ns() - t0;
	*rss = fsb_rss_peak();
	if (!rc)
		rc = fsb_env_remount(e);
	if (!rc) {
		fsb_progress(b, "stream (data=%s%s): reading back", mode, rep);
		t0 = clock_now_ns();
		rc = read_all(e->fs, path, buf, &got);
		*tr = clock_now_ns() - t0;
		if (!rc && got != bytes)
			rc = err_set(-EIO, "read back %llu bytes of %llu", (unsigned long long)got,
				     (unsigned long long)bytes);
	}
	return fsb_env_unmount(e, rc);
}

int fsb_stream(struct fsb *b, const char *mode, struct fsb_run *r)
{
	struct fsb_env e;
	int rc = fsb_env_dev_open(b, mode, &e);
	if (rc < 0)
		return rc;
	uint64_t bytes = b->sz.stream_bytes, rss_max = 0;
	unsigned reps = b->sz.reps;
	char *buf = malloc(IO_CHUNK);
	if (!buf) {
		fsb_env_close(&e);
		return err_set(-ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < IO_CHUNK; i++)
		buf[i] = (char)('a' + i % 26);
	/* The raw transfers land on the filesystem's blocks: they run before
	 * its mkfs or after its unmount, never beside it. */
	uint64_t sector = (b->sz.fs_bytes - bytes) / 2 / DEV_SECTOR_SIZE & ~2047ull;
	/* data=journal gets its own floor as well (raw_journal), over the
	 * journal the filesystem's mkfs makes (where and how large; a
	 * transaction is at most a quarter of it, as jbd sizes them). */
	bool journal = !strcmp(mode, "journal") && fsb_fs_journal(b); /* ext2: no journal, no floor of it */
	struct ext3_mkfs_layout lay;
	struct ext3_mkfs_params mp = fsb_mkfs_params(b);
	if (journal && (rc = ext3_mkfs_layout_compute(&mp, b->sz.fs_bytes, &lay)) < 0) {
		fsb_env_close(&e);
		return err_wrap(rc, "mkfs layout: ");
	}
	uint64_t log_bytes = journal ? (uint64_t)lay.journal_blocks * lay.block_size : 0;
	uint64_t txn = log_bytes / 4;
	double w[99], rw[99], wp[99], rd[99], rr[99], rp[99], rj[99], jp[99];
	for (unsigned i = 0; i < reps && !rc; i++) {
		char rep[32];
		rep_label(rep, sizeof rep, i, reps);
		uint64_t tw = 0, tr = 0, rss = 0;
		int64_t raw_w = 0, raw_r = 0, raw_j = 0;
		for (int step = 0; step < 2 && !rc; step++) {
			if (step == raw_first(i)) {
				rc = stream_once(b, &e, mode, rep, buf, &tw, &tr, &rss);
				continue;
			}
			fsb_progress(b, "stream (data=%s%s): raw device write and read", mode, rep);
			raw_w = fsb_raw_seq(e.dev, DEV_OP_WRITE, sector, bytes);
			raw_r = raw_w < 0 ? raw_w : fsb_raw_seq(e.dev, DEV_OP_READ, sector, bytes);
			if (journal && raw_r >= 0) {
				fsb_progress(b, "stream (data=%s%s): raw journal-pattern write", mode, rep);
				raw_j = fsb_raw_journal(e.dev, (uint64_t)lay.journal_start * lay.block_size / DEV_SECTOR_SIZE,
						    log_bytes, sector, bytes, txn);
			}
			rc = raw_r < 0 ? (int)raw_r : raw_j < 0 ? (int)raw_j : 0;
		}
		if (rc)
			break;
		rss_max = rss > rss_max ? rss : rss_max;
		w[i] = mibps(bytes, tw);
		rw[i] = mibps(bytes, (uint64_t)raw_w);
		wp[i] = pct(w[i], rw[i]);
		rd[i] = mibps(bytes, tr);
		rr[i] = mibps(bytes, (uint64_t)raw_r);
		rp[i] = pct(rd[i], rr[i]);
		rj[i] = journal ? mibps(bytes, (uint64_t)raw_j) : NAN;
		jp[i] = pct(w[i], rj[i]);
	}
	free(buf);
	fsb_env_close(&e);
	if (rc < 0)
		return rc;
	fsb_field(r, "write_mbps", median(w, reps), 1);
	fsb_field(r, "raw_write_mbps", median(rw, reps), 1);
	ratio_fields(r, "write_pct", "write_pct_min", "write_pct_max", wp, reps, 1);
	fsb_field(r, "read_mbps", median(rd, reps), 1);
	fsb_field(r, "raw_read_mbps", median(rr, reps), 1);
	ratio_fields(r, "read_pct", "read_pct_min", "read_pct_max", rp, reps, 1);
	fsb_field(r, "rss_peak_mib", rss_max ? (double)rss_max / FSB_MiB : NAN, 1);
	fsb_field(r, "rss_bound_mib", (double)(b->cache_bytes + 64 * FSB_MiB) / FSB_MiB, 0);
	fsb_field(r, "reps", reps, 0);
	snprintf(r->note, sizeof r->note,
		 "%llu MiB file, cache=%lluM; MiB/s, medians of %u repetitions, fs and raw alternating; "
		 "*_pct = median of the per-repetition ratios; rss_peak = the largest VmHWM while writing%s",
		 (unsigned long long)(bytes / FSB_MiB), (unsigned long long)(b->cache_bytes / FSB_MiB), reps,
		 b->sim ? " (includes the simulated disk's in-memory store)" : "");
	if (journal) {
		/* Last, and JSON-only: the table's columns are the first run's,
		 * and the other modes have no such figure. */
		double j = median(rj, reps), jpct = median(jp, reps);
		fsb_field_json(r, "raw_journal_write_mbps", j, 1);
		fsb_field_json(r, "journal_write_pct", jpct, 1);
		snprintf(r->extra, sizeof r->extra,
			 "this mode's own floor, every byte into the log and home with one flush per %llu MiB "
			 "transaction: %.0f MiB/s; write = %.1f %% of it",
			 (unsigned long long)(txn / FSB_MiB), j, jpct);
	}
	return 0;
}

/* ------------------------------------------------------------ creates */

static void file_path(char *p, size_t n, const struct fsb *b, unsigned i)
{
	snprintf(p, n, "/d%u/f%u", i % b->sz.creates_dirs, i);
}

static int creates_phase(struct fsb *b, struct fsb_env *e, int phase, const char *buf)
{
	unsigned n = b->sz.creates_n;
	char path[64];
	struct nostall_stat st;
	for (unsigned i = 0; i < n; i++) {
		file_path(path, sizeof path, b, i);
		int rc;
		if (phase == 0) {
			struct nostall_file *f;
			rc = nostall_create(e->fs, path, NOSTALL_O_CREAT | NOSTALL_O_EXCL | NOSTALL_O_WRONLY, 0644, &f);
			if (rc < 0)
				return api_err(rc, "create", path);
			rc = write_all(f, buf, b->sz.creates_bytes, path);
			int crc = close_file(f, path);
			rc = rc ? rc : crc;
		} else if (phase == 1) {
			rc = nostall_stat(e->fs, path, 0, &st);
			if (!rc && st.size != b->sz.creates_bytes)
				rc = err_set(-EIO, "stat %s: size %llu", path, (unsigned long long)st.size);
			else if (rc < 0)
				rc = api_err(rc, "stat", path);
		} else {
			rc = nostall_unlink(e->fs, path);
			if (rc < 0)
				rc = api_err(rc, "unlink", path);
		}
		if (rc < 0)
			return rc;
	}
	if (phase != 1) {
		int rc = nostall_sync(e->fs);
		if (rc < 0)
			return api_err(rc, "sync", "");
	}
	return 0;
}

/* One repetition on a fresh filesystem: the three phases' times. */
static int creates_once(struct fsb *b, const char *mode, const char *rep, uint64_t t[3])
{
	struct fsb_env e;
	int rc = fsb_env_open(b, mode, &e);
	if (rc < 0)
		return rc;
	char buf[4096];
	memset(buf, 'c', sizeof buf);
	for (unsigned d = 0; d < b->sz.creates_dirs && !rc; d++) {
		char path[32];
		snprintf(path, sizeof path, "/d%u", d);
		rc = nostall_mkdir(e.fs, path, 0755);
		if (rc < 0)
			rc = api_err(rc, "mkdir", path);
	}
	static const char *const what[] = { "create", "stat", "unlink" };
	for (int phase = 0; phase < 3 && !rc; phase++) {
		fsb_progress(b, "creates (data=%s%s): %s %u files", mode, rep, what[phase], b->sz.creates_n);
		if (phase == 1)
			rc = fsb_env_remount(&e); /* stat from a cold cache */
		uint64_t t0 = clock_now_ns();
		if (!rc)
			rc = creates_phase(b, &e, phase, buf);
		t[phase] = clock_now_ns() - t0;
	}
	rc = fsb_env_unmount(&e, rc);
	fsb_env_close(&e);
	return rc;
}

/* A run of 10,000 creates lasts a tenth of a second, in which one-off costs
 * (the first touch of the buffers' memory, a group's first allocation)
 * weigh: the figures are medians of `reps` repetitions, each on a fresh
 * filesystem. With several filesystem types (--fs LIST) the repetitions
 * alternate between them, in turn and in reverse order every other one,
 * so the host's drift over the run (its disk, other tenants) falls on all
 * of them alike: with one type's repetitions after the other's, a shared
 * host moved the figures 10-40 % between the two. */
int fsb_creates_types(struct fsb *b, const char *mode, const char *const *types, int ntypes,
		      struct fsb_run *r)
{
	unsigned reps = b->sz.reps;
	double rate[3][3][99]; /* [type][phase][rep]; --reps is at most 99, as for stream and jens */
	const char *keep = b->fs;
	int rc = 0;
	if (ntypes > 3)
		ntypes = 3;
	for (unsigned i = 0; i < reps && !rc; i++) {
		for (int k = 0; k < ntypes && !rc; k++) {
			int f = i % 2 ? ntypes - 1 - k : k;
			char rep[64];
			rep_label(rep, sizeof rep, i, reps);
			if (ntypes > 1) {
				size_t l = strlen(rep);
				snprintf(rep + l, sizeof rep - l, ", %s", types[f] ? types[f] : "ext3");
			}
			b->fs = types[f];
			uint64_t t[3] = { 0 };
			rc = creates_once(b, mode, rep, t);
			for (int ph = 0; ph < 3; ph++)
				rate[f][ph][i] = b->sz.creates_n / secs(t[ph]);
		}
	}
	b->fs = keep;
	if (rc < 0)
		return rc;
	for (int f = 0; f < ntypes; f++) {
		fsb_field(&r[f], "creates_per_s", median(rate[f][0], reps), 0);
		fsb_field(&r[f], "stats_per_s", median(rate[f][1], reps), 0);
		fsb_field(&r[f], "unlinks_per_s", median(rate[f][2], reps), 0);
		fsb_field(&r[f], "files", b->sz.creates_n, 0);
		fsb_field(&r[f], "reps", reps, 0);
		snprintf(r[f].note, sizeof r[f].note,
			 "%u x %u B files in %u directories; create and unlink end with a sync, stat after a remount; "
			 "medians of %u repetitions, each on a fresh filesystem%s",
			 b->sz.creates_n, b->sz.creates_bytes, b->sz.creates_dirs, reps,
			 ntypes > 1 ? ", alternating with the other --fs types" : "");
	}
	return 0;
}

int fsb_creates(struct fsb *b, const char *mode, struct fsb_run *r)
{
	const char *types[1] = { b->fs };
	return fsb_creates_types(b, mode, types, 1, r);
}

/* ------------------------------------------------------------ fsync-under-stream */

struct streamer {
	struct nostall_fs *fs;
	struct fsb *b;
	pthread_t tid;
	atomic_bool stop;
	atomic_uint_fast64_t bytes;
	int rc;
};

/* Sequential 1 MiB writes, wrapping inside a file of fus_file_bytes. */
static void *streamer_main(void *arg)
{
	struct streamer *s = arg;
	const char *path = "/streamer";
	char *buf = malloc(IO_CHUNK);
	struct nostall_file *f = NULL;
	if (!buf) {
		s->rc = err_set(-ENOMEM, "out of memory");
		return NULL;
	}
	memset(buf, 's', IO_CHUNK);
	int rc = nostall_create(s->fs, path, NOSTALL_O_CREAT | NOSTALL_O_WRONLY, 0644, &f);
	if (rc < 0)
		rc = api_err(rc, "create", path);
	for (uint64_t off = 0; !rc && !atomic_load(&s->stop);) {
		ssize_t n = nostall_pwrite(f, buf, IO_CHUNK, off);
		if (n < 0) {
			rc = api_err((int)n, "write", path);
			break;
		}
		atomic_fetch_add(&s->bytes, (uint64_t)n);
		off += (uint64_t)n;
		if (off >= s->b->sz.fus_file_bytes)
			off = 0;
	}
	if (f) {
		int crc = close_file(f, path);
		rc = rc ? rc : crc;
	}
	free(buf);
	s->rc = rc;
	return NULL;
}

/* Samples a p99 is printed from (fewer: n/a), and how far past its time a
 * run short of them may go on (x --seconds). */
#define FUS_P99_SAMPLES 100u
#define FUS_STRETCH 2.5

/* One sample per period: append 4 KiB and fsync, timed; until `max`
 * samples or `until` (whichever comes first; until 0 = no deadline). Past
 * `until` it goes on up to `hard` while there are fewer than
 * FUS_P99_SAMPLES (slow fsyncs still get a p99: ordered's ~560 ms ones on
 * sim:hdd need 60 s for 100). */
static int fsync_samples(struct nostall_file *f, const char *buf, uint64_t *v, unsigned max, unsigned *n,
			 uint64_t until, uint64_t hard)
{
	uint64_t next = clock_now_ns();
	*n = 0;
	for (;;) {
		uint64_t now = clock_now_ns();
		if (*n >= max || (until && now >= until && (*n >= FUS_P99_SAMPLES || now >= hard)))
			break;
		clock_sleep_until_ns(next);
		uint64_t t0 = clock_now_ns();
		stalltrace_mark("fus: write", 0);
		ssize_t w = nostall_write(f, buf, FUS_APPEND);
		stalltrace_mark("fus: fsync", 0);
		if (w < 0)
			return api_err((int)w, "write", "/fsyncer");
		int rc = nostall_fsync(f, 0);
		if (rc < 0)
			return api_err(rc, "fsync", "/fsyncer");
		uint64_t t1 = clock_now_ns();
		if (stalltrace_on() && t1 - t0 >= stalltrace_threshold_ns())
			stalltrace_dump("fsync-under-stream: slow append + fsync", t0, t1);
		v[(*n)++] = t1 - t0;
		next += FUS_PERIOD_NS;
		if (next < t1)
			next = t1;
	}
	return 0;
}

int fsb_fsync_under_stream(struct fsb *b, const char *mode, struct fsb_run *r)
{
	struct fsb_env e;
	int rc = fsb_env_dev_open(b, mode, &e);
	if (rc < 0)
		return rc;
	/* A dirty budget an ordered commit can stall on (FSB_FUS_CACHE),
	 * unless -o gave a cache= (then it is used as given). */
	bool own_cache = !b->user_cache && !b->quick;
	if (own_cache) {
		size_t len = strlen(e.opts);
		if ((size_t)snprintf(e.opts + len, sizeof e.opts - len, ",cache=%s", FSB_FUS_CACHE) >= sizeof e.opts - len)
			rc = err_set(-E2BIG, "mount options too long");
	}
	if (!rc)
		rc = fsb_env_fresh(&e);
	if (rc < 0) {
		fsb_env_close(&e); /* the device is open */
		return rc;
	}
	unsigned max = (unsigned)(FUS_STRETCH * b->sz.fus_seconds * 1e9 / FUS_PERIOD_NS) + 16, nidle = 0, n = 0;
	if (max < b->sz.fus_idle)
		max = b->sz.fus_idle;
	uint64_t *idle = calloc(max, sizeof *idle), *v = calloc(max, sizeof *v);
	char buf[FUS_APPEND];
	memset(buf, 'f', sizeof buf);
	struct nostall_file *f = NULL;
	struct streamer s = { .fs = e.fs, .b = b };
	uint64_t b0 = 0, b1 = 0, t0 = 0, t1 = 0;
	if (!idle || !v)
		rc = err_set(-ENOMEM, "out of memory");
	if (!rc) {
		rc = nostall_create(e.fs, "/fsyncer", NOSTALL_O_CREAT | NOSTALL_O_WRONLY | NOSTALL_O_APPEND, 0644, &f);
		if (rc < 0)
			rc = api_err(rc, "create", "/fsyncer");
	}
	if (!rc) {
		fsb_progress(b, "fsync-under-stream (data=%s): %u idle fsyncs", mode, b->sz.fus_idle);
		rc = fsync_samples(f, buf, idle, b->sz.fus_idle, &nidle, 0, 0);
	}
	if (!rc) {
		fsb_progress(b, "fsync-under-stream (data=%s): %.0f s beside a streamer", mode, b->sz.fus_seconds);
		atomic_init(&s.stop, false);
		atomic_init(&s.bytes, 0);
		if (pthread_create(&s.tid, NULL, streamer_main, &s)) {
			rc = err_set(-EAGAIN, "pthread_create failed");
		} else {
			/* Let the streamer fill the cache before measuring. */
			clock_sleep_ns((uint64_t)(b->sz.fus_seconds * 1e9 / 10));
			b0 = atomic_load(&s.bytes);
			t0 = clock_now_ns();
			uint64_t span = (uint64_t)(b->sz.fus_seconds * 1e9);
			rc = fsync_samples(f, buf, v, max, &n, t0 + span, t0 + (uint64_t)(FUS_STRETCH * (double)span));
			t1 = clock_now_ns();
			b1 = atomic_load(&s.bytes);
			atomic_store(&s.stop, true);
			pthread_join(s.tid, NULL);
			rc = rc ? rc : s.rc;
		}
	}
	if (f) {
		int crc = close_file(f, "/fsyncer");
		rc = rc ? rc : crc;
	}
	fsb_progress(b, "fsync-under-stream (data=%s): unmount", mode);
	rc = fsb_env_unmount(&e, rc);
	int64_t floor = 0;
	if (!rc) {
		floor = fsb_raw_roundtrips(e.dev, 2 * 20, b->sz.fs_bytes);
		rc = floor < 0 ? (int)floor : 0;
	}
	fsb_env_close(&e);
	if (!rc) {
		qsort(idle, nidle, sizeof *idle, cmp_u64);
		qsort(v, n, sizeof *v, cmp_u64);
		fsb_field(r, "floor_ms", (double)floor / 1e6 / 20, 2);
		fsb_field(r, "idle_p50_ms", quantile_ms(idle, nidle, 0.5), 2);
		fsb_field(r, "p50_ms", quantile_ms(v, n, 0.5), 2);
		fsb_field(r, "p99_ms", n >= FUS_P99_SAMPLES ? quantile_ms(v, n, 0.99) : NAN, 2);
		fsb_field(r, "max_ms", n ? (double)v[n - 1] / 1e6 : NAN, 2);
		fsb_field(r, "samples", n, 0);
		fsb_field(r, "stream_mbps", mibps(b1 - b0, t1 - t0), 1);
		/* fsyncs completed per second beside the streamer: each costs
		 * the streamer disk time (docs/block-layer.md, wbt's floor) */
		fsb_field_json(r, "fsync_per_s", t1 > t0 ? n * 1e9 / (double)(t1 - t0) : NAN, 2);
		snprintf(r->note, sizeof r->note,
			 "4 KiB append + fsync every 50 ms beside a streamer; %s; floor = 2 raw write+flush; "
			 "p99 n/a under 100 samples",
			 own_cache ? "cache=" FSB_FUS_CACHE " (a 2009 desktop's dirty budget)"
				   : b->user_cache ? "cache as -o gives" : "the mount's cache");
	}
	free(idle);
	free(v);
	return rc;
}
