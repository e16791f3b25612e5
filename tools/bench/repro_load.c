/* bench repro: the workloads (docs/bench-repro.md), written once against
 * repro_fsops so that the library and every peer run the same code.
 *
 * Threads: a workload's background load (streamer, random writer, readers,
 * build) and its timed operations (the sampler) each run in their own
 * thread; the calling thread keeps the clock. When the measuring time is
 * over it stops them all and waits a bounded grace for them: an operation
 * still in flight after that is left open (its B line without an S) and
 * the run returns -ETIMEDOUT, so the caller exits without unmounting and
 * the parent counts the operation as timed out.
 */
#include "repro.h"

#include "util/clock.h"
#include "util/err.h"
#include "util/stalltrace.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IO_CHUNK (1024u * 1024)
#define FUS_APPEND 4096u
#define RAND_WRITE 4096u
#define RAND_PERIOD_NS (10 * NS_PER_MS)
#define READ_CHUNK (256u * 1024)
#define GRACE_NS (5 * NS_PER_SEC)   /* for the load to stop after its time */
#define READERS 2u
#define PROBE_FILES 8u

static const char *const kind_names[RP_NKINDS] = {
	[RP_JENS] = "jens", [RP_JENS_STREAM] = "jens-stream", [RP_FUS] = "fsync-under-stream",
	[RP_TESTER] = "fsync-tester", [RP_ATIME] = "atime", [RP_OVERWRITE] = "overwrite", [RP_STREAM_WRITE] = "stream-write",
	[RP_STREAM_READ] = "stream-read", [RP_CREATES] = "creates", [RP_STATS] = "stats", [RP_UNLINKS] = "unlinks",
};

const char *rp_kind_name(enum rp_kind k)
{
	return kind_names[k];
}

int rp_kind_parse(const char *name, enum rp_kind *k)
{
	for (int i = 0; i < RP_NKINDS; i++)
		if (!strcmp(name, kind_names[i])) {
			*k = (enum rp_kind)i;
			return 0;
		}
	return err_set(-EINVAL, "unknown workload '%s'", name);
}

/* ------------------------------------------------------------ threads */

/* A workload's state, shared by its threads. */
struct load {
	struct rp_fs *fs;
	const struct rp_params *p;
	struct rp_out *o;
	atomic_bool stop;           /* background load and sampler */
	atomic_uint_fast64_t bytes; /* streamer / random writer / readers */
	atomic_uint_fast64_t files; /* build: files created */
	atomic_uint fsyncs;         /* fsyncer: fsyncs completed (min_samples) */
	unsigned seed;
	struct rp_file *probe_f[PROBE_FILES]; /* atime: the probe's handles, opened and
	                                       * read once in set-up (probe_handles) */
	unsigned jens_done;         /* Jens loop: iterations done, and when */
	uint64_t jens_t0, jens_t1;
	pthread_mutex_t m;
	int rc;                     /* first error of any thread */
};

static void load_fail(struct load *l, int rc)
{
	pthread_mutex_lock(&l->m);
	if (!l->rc) {
		l->rc = rc;
		rp_out_error(l->o, rc);
	}
	pthread_mutex_unlock(&l->m);
	atomic_store(&l->stop, true);
}

struct worker {
	struct load *l;
	pthread_t tid;
	bool started;
	unsigned idx;
	void *(*fn)(void *);
};

static int worker_start(struct worker *w, struct load *l, void *(*fn)(void *), unsigned idx)
{
	*w = (struct worker){ .l = l, .idx = idx, .fn = fn };
	if (pthread_create(&w->tid, NULL, fn, w))
		return err_set(-EAGAIN, "pthread_create failed");
	w->started = true;
	return 0;
}

/* Join within deadline (CLOCK_MONOTONIC ns); -ETIMEDOUT if it is stuck. */
static int worker_join(struct worker *w, uint64_t deadline)
{
	if (!w->started)
		return 0;
	if (deadline == UINT64_MAX) {
		pthread_join(w->tid, NULL);
		w->started = false;
		return 0;
	}
	uint64_t now = clock_now_ns();
	uint64_t left = deadline > now ? deadline - now : 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t abs = (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec + left;
	ts.tv_sec = (time_t)(abs / NS_PER_SEC);
	ts.tv_nsec = (long)(abs % NS_PER_SEC);
	if (pthread_timedjoin_np(w->tid, NULL, &ts))
		return err_set(-ETIMEDOUT, "an operation did not finish within %.0f s of the run's end",
			       (double)GRACE_NS / 1e9);
	w->started = false;
	return 0;
}

/* A worker's end: its file closed, its buffer freed, its error (or the
 * close's) recorded. Returns the thread's result. */
static void *worker_end(struct load *l, struct rp_file *f, void *buf, int rc)
{
	if (f) {
		int crc = rp_close(f);
		rc = rc ? rc : crc;
	}
	free(buf);
	if (rc)
		load_fail(l, rc);
	return NULL;
}

/* Sleep until `until` or until the load stops (errors stop it early). */
static void load_sleep(struct load *l, uint64_t until)
{
	while (!atomic_load(&l->stop) && clock_now_ns() < until) {
		uint64_t left = until - clock_now_ns();
		clock_sleep_ns(left < 50 * NS_PER_MS ? left : 50 * NS_PER_MS);
	}
}

static char *pattern(size_t n, char c)
{
	char *buf = malloc(n);
	if (buf)
		memset(buf, c, n);
	return buf;
}

/* ------------------------------------------------------------ background */

/* Sequential writes of `chunk` bytes to path, wrapping inside
 * stream_bytes (the last write of a lap stops at it): the streamer and the
 * overwriter. */
static void *seq_writer(struct worker *w, const char *path, int flags, size_t chunk, char fill)
{
	struct load *l = w->l;
	char *buf = pattern(chunk, fill);
	struct rp_file *f = NULL;
	int rc = buf ? rp_open(l->fs, path, flags, &f) : err_set(-ENOMEM, "out of memory");
	for (uint64_t off = 0; !rc && !atomic_load(&l->stop);) {
		size_t len = l->p->stream_bytes - off < chunk ? (size_t)(l->p->stream_bytes - off) : chunk;
		ssize_t n = rp_pwrite(f, buf, len, off);
		if (n < 0) {
			rc = (int)n;
			break;
		}
		atomic_fetch_add(&l->bytes, (uint64_t)n);
		off += (uint64_t)n;
		if (off >= l->p->stream_bytes)
			off = 0;
	}
	return worker_end(l, f, buf, rc);
}

/* Sequential 1 MiB writes, wrapping inside stream_bytes (a dd). */
static void *streamer_main(void *arg)
{
	return seq_writer(arg, "streamer", O_CREAT | O_WRONLY, IO_CHUNK, 's');
}

/* Random 4 KiB writes inside stream_bytes, one every RAND_PERIOD_NS
 * (fsync-tester's background): about what a 2009 disk sustains at random
 * (~100 IOPS). Unpaced, the writer dirties the whole cache at memory speed
 * and an ordered commit then needs minutes of seeks: no fsync completes
 * within a run, which shows nothing but a timeout. */
static void *random_writer_main(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->l;
	char buf[RAND_WRITE];
	memset(buf, 'r', sizeof buf);
	unsigned seed = l->seed;
	uint64_t blocks = l->p->stream_bytes / RAND_WRITE;
	struct rp_file *f = NULL;
	int rc = rp_open(l->fs, "random", O_CREAT | O_WRONLY, &f);
	while (!rc && !atomic_load(&l->stop)) {
		uint64_t blk = ((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) % blocks;
		ssize_t n = rp_pwrite(f, buf, sizeof buf, blk * RAND_WRITE);
		if (n < 0)
			rc = (int)n;
		else
			atomic_fetch_add(&l->bytes, (uint64_t)n);
		clock_sleep_ns(RAND_PERIOD_NS);
	}
	return worker_end(l, f, NULL, rc);
}

/* Linus' overwrite.c beside Ts'o's fsync-tester (LWN 327107): rewrites a
 * file that is already allocated (overwrite_setup wrote it whole and
 * synced it) in large sequential writes, wrapping at its end. No block is
 * allocated, so in data=ordered only the inode's dirty pages tie it to a
 * commit (every chunk files the inode, as 2.6.29/2.6.30 ext3 filed every
 * written buffer). */
#define OVERWRITE_CHUNK (4u * IO_CHUNK)
#define OVERWRITE_PATH "overwrite"

static void *overwriter_main(void *arg)
{
	return seq_writer(arg, OVERWRITE_PATH, O_WRONLY, OVERWRITE_CHUNK, 'w');
}

static void reader_path(char *p, size_t n, unsigned i)
{
	snprintf(p, n, "big%u", i);
}

/* Streams its big file from the start, over and over (atime's readers). */
static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->l;
	char path[32];
	reader_path(path, sizeof path, w->idx);
	char *buf = malloc(READ_CHUNK);
	struct rp_file *f = NULL;
	int rc = buf ? rp_open(l->fs, path, O_RDONLY, &f) : err_set(-ENOMEM, "out of memory");
	for (uint64_t off = 0; !rc && !atomic_load(&l->stop);) {
		ssize_t n = rp_pread(f, buf, READ_CHUNK, off);
		if (n < 0)
			rc = (int)n;
		else if (n == 0)
			off = 0;
		else {
			off += (uint64_t)n;
			atomic_fetch_add(&l->bytes, (uint64_t)n);
		}
	}
	return worker_end(l, f, buf, rc);
}

/* A build: small files created and written (a compiler's objects), an
 * older one removed now and then; no fsync, like make. Its objects live in
 * the probe's directory, so that their inodes take the free slots next to
 * the probe's (the group's lowest free inodes) and every commit logs
 * inode-table and directory blocks the probe's atime, touch, create and
 * rename must then wait for while they are shadowed (journal_shadow=wait):
 * Arjan's build, whose commits carried the blocks his atime updates
 * needed (seed 010). */
static void *build_main(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->l;
	char buf[16384];
	memset(buf, 'o', sizeof buf);
	unsigned seed = l->seed ^ 0x5bd1e995u;
	int rc = 0;
	for (unsigned i = 0; !rc && !atomic_load(&l->stop); i++) {
		char path[48];
		snprintf(path, sizeof path, "probe/o%u", i);
		struct rp_file *f;
		rc = rp_open(l->fs, path, O_CREAT | O_WRONLY | O_TRUNC, &f);
		if (rc)
			break;
		ssize_t n = rp_write(f, buf, 4096 + (size_t)(rand_r(&seed) % 12288));
		int crc = rp_close(f);
		rc = n < 0 ? (int)n : crc;
		if (!rc && i >= 400 && i % 2 == 0) {
			snprintf(path, sizeof path, "probe/o%u", i - 400);
			rc = rp_unlink(l->fs, path);
		}
		atomic_fetch_add(&l->files, 1);
		clock_sleep_ns(2 * NS_PER_MS); /* the compiler's think time */
	}
	if (rc)
		load_fail(l, rc);
	return NULL;
}

/* ------------------------------------------------------------ timed ops */

/* B, then the op, then S: an op that never returns stays open. */
#define TIMED(l, series, expr)                                                      \
	({                                                                             \
		uint64_t t0_ = clock_now_ns();                                         \
		rp_out_begin((l)->o, (series), t0_);                                   \
		int rc_ = (expr);                                                      \
		uint64_t t1_ = clock_now_ns();                                         \
		if (!rc_)                                                              \
			rp_out_sample((l)->o, (series), t1_, t1_ - t0_);               \
		rc_;                                                                   \
	})

static int append_fsync(struct rp_file *f, const char *buf, size_t len)
{
	ssize_t n = rp_write(f, buf, len);
	return n < 0 ? (int)n : rp_fsync(f);
}

/* The seed's loop: fopen("a"), fprintf a line, fsync, fclose. */
static int jens_iter(struct load *l)
{
	static const char line[] = "Some data here\n";
	struct rp_file *f;
	int rc = rp_open(l->fs, "jens.txt", O_CREAT | O_WRONLY | O_APPEND, &f);
	if (rc)
		return rc;
	rc = append_fsync(f, line, sizeof line - 1);
	int crc = rp_close(f);
	return rc ? rc : crc;
}

static void *jens_main(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->l;
	l->jens_t0 = clock_now_ns();
	int rc = 0;
	for (unsigned i = 0; i < l->p->jens_n && !rc && !atomic_load(&l->stop); i++) {
		rc = TIMED(l, "fsync", jens_iter(l));
		if (!rc)
			l->jens_done = i + 1;
	}
	l->jens_t1 = clock_now_ns();
	if (rc)
		load_fail(l, rc);
	return NULL;
}

/* Appends and fsyncs every period (fsync-under-stream: 4 KiB every 50 ms;
 * fsync-tester: tester_write bytes every second). */
static void *fsyncer_main(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->l;
	size_t len = l->p->tester_write && w->idx ? l->p->tester_write : FUS_APPEND;
	char *buf = pattern(len, 'f');
	struct rp_file *f = NULL;
	int rc = buf ? rp_open(l->fs, "fsyncer", O_CREAT | O_WRONLY | O_APPEND, &f) : err_set(-ENOMEM, "out of memory");
	uint64_t period = (uint64_t)(l->p->period * 1e9), next = clock_now_ns();
	while (!rc && !atomic_load(&l->stop)) {
		uint64_t t0 = clock_now_ns();
		rc = TIMED(l, "fsync", append_fsync(f, buf, len));
		if (!rc)
			atomic_fetch_add(&l->fsyncs, 1);
		/* NOSTALL_FSYNC_TRACE=MS (src/util/stalltrace.h): what every
		 * thread waited on during a slow one, to stderr (the request
		 * traces behind docs/bench-repro.md's mechanism notes) */
		uint64_t t1 = clock_now_ns();
		if (!rc && stalltrace_on() && t1 - t0 >= stalltrace_threshold_ns())
			stalltrace_dump("bench repro: slow write + fsync", t0, t1);
		next += period;
		uint64_t now = clock_now_ns();
		if (next < now)
			next = now;
		load_sleep(l, next);
	}
	return worker_end(l, f, buf, rc);
}

static int probe_create(struct load *l, unsigned i)
{
	char path[32];
	snprintf(path, sizeof path, "probe/c%u", i);
	struct rp_file *f;
	int rc = rp_open(l->fs, path, O_CREAT | O_EXCL | O_WRONLY, &f);
	if (rc)
		return rc;
	ssize_t n = rp_write(f, "probe\n", 6);
	int crc = rp_close(f);
	return n < 0 ? (int)n : crc;
}

static int probe_rename(struct load *l, unsigned i)
{
	char from[32], to[32];
	snprintf(from, sizeof from, "probe/c%u", i);
	snprintf(to, sizeof to, "probe/r%u", i);
	return rp_rename(l->fs, from, to);
}

static int io_rc(ssize_t n)
{
	return n < 0 ? (int)n : 0;
}

/* A timed probe operation; NOSTALL_FSYNC_TRACE=MS dumps what every thread
 * waited on during one that took MS or more (docs/bench-repro.md). */
static int probe_op(struct load *l, const char *series, int rc, uint64_t t0)
{
	uint64_t t1 = clock_now_ns();
	if (!rc && stalltrace_on() && t1 - t0 >= stalltrace_threshold_ns())
		stalltrace_dump(series, t0, t1);
	return rc;
}

/* Arjan's probe: each period a file is touched (mtime: a journal handle),
 * read (relatime: mtime > atime, so an atime update), a file created and
 * one renamed; each operation timed on its own. */
static void *probe_main(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->l;
	struct rp_file **f = l->probe_f;
	int rc = 0;
	uint64_t period = (uint64_t)(l->p->period * 1e9), next = clock_now_ns();
	char b = 0;
	for (unsigned i = 0; !rc && !atomic_load(&l->stop); i++) {
		struct rp_file *pf = f[i % PROBE_FILES];
		uint64_t t0 = clock_now_ns();
		rc = probe_op(l, "probe-touch", TIMED(l, "probe-touch", io_rc(rp_pwrite(pf, "x", 1, 0))), t0);
		t0 = clock_now_ns();
		if (!rc)
			rc = probe_op(l, "probe-atime", TIMED(l, "probe-atime", io_rc(rp_pread(pf, &b, 1, 0))), t0);
		t0 = clock_now_ns();
		if (!rc)
			rc = probe_op(l, "probe-create", TIMED(l, "probe-create", probe_create(l, i)), t0);
		t0 = clock_now_ns();
		if (!rc)
			rc = probe_op(l, "probe-rename", TIMED(l, "probe-rename", probe_rename(l, i)), t0);
		next += period;
		uint64_t now = clock_now_ns();
		if (next < now)
			next = now;
		load_sleep(l, next);
	}
	if (rc)
		load_fail(l, rc);
	return NULL;
}

/* The probe's handles, each read once before measuring: on nostall a read
 * at offset 0 on a fresh handle starts a readahead stream, which reads the
 * disk even when the page is cached (src/extfs/data/file_read.c); timed,
 * those 8 first reads were the probe's largest samples (110-360 ms behind
 * the readers' CFQ slices, the first 1.4 s of every run), not waits on the
 * journal. */
static int probe_handles(struct load *l)
{
	int rc = 0;
	char b;
	for (unsigned i = 0; i < PROBE_FILES && !rc; i++) {
		char path[32];
		snprintf(path, sizeof path, "probe/p%u", i);
		rc = rp_open(l->fs, path, O_RDWR, &l->probe_f[i]);
		rc = rc ? rc : io_rc(rp_pread(l->probe_f[i], &b, 1, 0));
	}
	return rc;
}

static int probe_handles_close(struct load *l)
{
	int rc = 0;
	for (unsigned i = 0; i < PROBE_FILES; i++) {
		if (l->probe_f[i]) {
			int crc = rp_close(l->probe_f[i]);
			rc = rc ? rc : crc;
			l->probe_f[i] = NULL;
		}
	}
	return rc;
}

/* ------------------------------------------------------------ set-up */

static int write_file(struct load *l, const char *path, uint64_t bytes)
{
	char *buf = pattern(IO_CHUNK, 'b');
	struct rp_file *f = NULL;
	int rc = buf ? rp_open(l->fs, path, O_CREAT | O_WRONLY | O_TRUNC, &f) : err_set(-ENOMEM, "out of memory");
	for (uint64_t off = 0; !rc && off < bytes; off += IO_CHUNK) {
		size_t len = bytes - off < IO_CHUNK ? (size_t)(bytes - off) : IO_CHUNK;
		ssize_t n = rp_pwrite(f, buf, len, off);
		rc = n < 0 ? (int)n : 0;
	}
	if (!rc)
		rc = rp_fsync(f);
	if (f) {
		int crc = rp_close(f);
		rc = rc ? rc : crc;
	}
	free(buf);
	return rc;
}

/* After the caches are dropped, the probe's own files, its directory and
 * what a create there allocates from are read back: the probe then times
 * waits on the journal and the disk queue, not first cold reads of its
 * own files behind the readers, which journal_ioprio does not touch. The
 * readers' files stay cold. (The probe's iterations never reach
 * UINT32_MAX - n, the warm-up's creates.) */
static int probe_warm(struct load *l)
{
	char buf[4096];
	int rc = 0;
	for (unsigned i = 0; i < PROBE_FILES && !rc; i++) {
		char path[32];
		snprintf(path, sizeof path, "probe/p%u", i);
		struct rp_file *f;
		rc = rp_open(l->fs, path, O_RDWR, &f);
		if (rc)
			break;
		rc = io_rc(rp_pread(f, buf, sizeof buf, 0));
		rc = rc ? rc : io_rc(rp_pwrite(f, "x", 1, 0));
		int crc = rp_close(f);
		rc = rc ? rc : crc;
	}
	/* As many creates as the probe will make, then their unlinks: the
	 * probe's creates reuse those inodes (lowest free first), whose
	 * inode-table and directory blocks are now cached. */
	unsigned n = (unsigned)(l->p->seconds / l->p->period) + 16;
	for (unsigned j = 0; j < n && !rc; j++)
		rc = probe_create(l, UINT32_MAX - j);
	rc = rc ? rc : probe_rename(l, UINT32_MAX);
	for (unsigned j = 0; j < n && !rc; j++) {
		char path[32];
		snprintf(path, sizeof path, "probe/%c%u", j ? 'c' : 'r', UINT32_MAX - j);
		rc = rp_unlink(l->fs, path);
	}
	return rc;
}

/* overwrite's file, allocated and on disk before the overwriter starts. */
static int overwrite_setup(struct load *l)
{
	return write_file(l, OVERWRITE_PATH, l->p->stream_bytes);
}

/* atime's files: the readers' big files (then made cold), the probe's
 * files (the build's go beside them). */
static int atime_setup(struct load *l)
{
	int rc = rp_mkdir(l->fs, "probe");
	for (unsigned i = 0; i < PROBE_FILES && !rc; i++) {
		char path[32];
		snprintf(path, sizeof path, "probe/p%u", i);
		rc = write_file(l, path, 4096);
	}
	char paths[READERS][32];
	const char *pp[READERS];
	for (unsigned i = 0; i < READERS && !rc; i++) {
		reader_path(paths[i], sizeof paths[i], i);
		pp[i] = paths[i];
		rc = write_file(l, paths[i], l->p->reader_bytes);
	}
	rc = rc ? rc : rp_drop_caches(l->fs, pp, READERS);
	rc = rc ? rc : probe_warm(l);
	return rc ? rc : probe_handles(l);
}

/* ------------------------------------------------------------ runner */

#define MAX_WORKERS 6

static double mbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / RP_MiB / ((double)ns / 1e9) : NAN;
}

int rp_load_run(struct rp_fs *fs, enum rp_kind k, const struct rp_params *p, struct rp_out *o)
{
	if (k >= RP_STREAM_WRITE)
		return rp_files_run(fs, k, p, o);
	struct load l = { .fs = fs, .p = p, .o = o };
	pthread_mutex_init(&l.m, NULL);
	atomic_init(&l.stop, false);
	atomic_init(&l.bytes, 0);
	atomic_init(&l.files, 0);
	atomic_init(&l.fsyncs, 0);
	l.seed = (unsigned)clock_now_ns();
	struct worker bg[MAX_WORKERS] = { 0 }, timed = { 0 };
	unsigned nbg = 0;
	int rc = 0;
	if (k == RP_ATIME)
		rc = atime_setup(&l);
	if (k == RP_OVERWRITE)
		rc = overwrite_setup(&l);
	/* background load, then a warm-up (the streamer fills the cache) */
	if (!rc && (k == RP_JENS_STREAM || k == RP_FUS))
		rc = worker_start(&bg[nbg++], &l, streamer_main, 0);
	if (!rc && k == RP_OVERWRITE)
		rc = worker_start(&bg[nbg++], &l, overwriter_main, 0);
	if (!rc && k == RP_TESTER) {
		rp_out_note(o, "random writer seed %u", l.seed);
		rc = worker_start(&bg[nbg++], &l, random_writer_main, 0);
	}
	for (unsigned i = 0; k == RP_ATIME && i < READERS && !rc; i++)
		rc = worker_start(&bg[nbg++], &l, reader_main, i);
	if (!rc && k == RP_ATIME)
		rc = worker_start(&bg[nbg++], &l, build_main, 0);
	if (!rc && nbg)
		load_sleep(&l, clock_now_ns() + (uint64_t)(p->warmup * 1e9));
	uint64_t b0 = atomic_load(&l.bytes), f0 = atomic_load(&l.files), t0 = clock_now_ns();
	rp_out_zero(o, t0);
	void *(*fn)(void *) = k == RP_JENS || k == RP_JENS_STREAM ? jens_main : k == RP_ATIME ? probe_main : fsyncer_main;
	if (!rc)
		rc = worker_start(&timed, &l, fn, k == RP_TESTER || k == RP_OVERWRITE);
	/* The idle Jens loop runs to its end (bounded by the parent's
	 * deadline); every other run lasts `seconds`. */
	uint64_t end = t0 + (uint64_t)(p->seconds * 1e9);
	if (!rc && k == RP_JENS)
		rc = worker_join(&timed, UINT64_MAX);
	else if (!rc)
		load_sleep(&l, end);
	/* Too few fsyncs for a percentile (an ordered fsync beside the
	 * streamer takes seconds): go on until min_samples or the cap. The
	 * figures below cover the whole measured time. */
	uint64_t cap = t0 + (uint64_t)(p->max_seconds * 1e9);
	bool sample_floor = k == RP_FUS || k == RP_TESTER || k == RP_OVERWRITE;
	for (uint64_t now; !rc && sample_floor && !atomic_load(&l.stop) && atomic_load(&l.fsyncs) < p->min_samples &&
			   (now = clock_now_ns()) < cap;)
		load_sleep(&l, now + 50 * NS_PER_MS < cap ? now + 50 * NS_PER_MS : cap);
	uint64_t t1 = clock_now_ns(), b1 = atomic_load(&l.bytes), f1 = atomic_load(&l.files);
	/* Figures first: they are out even if a thread then hangs. */
	if (!rc && k != RP_JENS && k != RP_ATIME && nbg)
		rp_out_metric(o, "stream_mbps", mbps(b1 - b0, t1 - t0), "MiB/s");
	if (!rc && k != RP_JENS)
		rp_out_metric(o, "measured_s", (double)(t1 - t0) / 1e9, "s");
	if (!rc && k == RP_ATIME) {
		rp_out_metric(o, "readers_mbps", mbps(b1 - b0, t1 - t0), "MiB/s");
		rp_out_metric(o, "build_files_per_s", (double)(f1 - f0) / ((double)(t1 - t0) / 1e9), "1/s");
	}
	atomic_store(&l.stop, true);
	uint64_t deadline = clock_now_ns() + GRACE_NS;
	int jrc = worker_join(&timed, deadline);
	for (unsigned i = 0; i < nbg && !jrc; i++)
		jrc = worker_join(&bg[i], deadline);
	if (jrc)
		return jrc; /* threads are stuck: the caller exits */
	int crc = probe_handles_close(&l);
	rc = rc ? rc : crc;
	if (!rc && (k == RP_JENS || k == RP_JENS_STREAM)) {
		double total = (double)(l.jens_t1 - l.jens_t0) / 1e9;
		rp_out_metric(o, "fsyncs", l.jens_done, "count");
		if (l.jens_done == p->jens_n)
			rp_out_metric(o, "total_s", total, "s");
		else if (l.jens_done)
			rp_out_metric(o, "total_s_extrapolated", total * p->jens_n / l.jens_done, "s");
	}
	pthread_mutex_destroy(&l.m);
	return rc ? rc : l.rc;
}

/* ------------------------------------------------------------ parameters */

void rp_params_default(struct rp_params *p)
{
	*p = (struct rp_params){ .jens_n = 2000, .seconds = 10, .warmup = 2, .period = 0.05,
				 .stream_bytes = 512 * RP_MiB, .reader_bytes = 128 * RP_MiB,
				 .files = 10000, .dirs = 10 };
}

static const struct pdesc {
	const char *name;
	size_t off;
	bool u64, uint;
} pdescs[] = {
	{ "jens-n", offsetof(struct rp_params, jens_n), false, true },
	{ "seconds", offsetof(struct rp_params, seconds), false, false },
	{ "min-samples", offsetof(struct rp_params, min_samples), false, true },
	{ "max-seconds", offsetof(struct rp_params, max_seconds), false, false },
	{ "warmup", offsetof(struct rp_params, warmup), false, false },
	{ "period", offsetof(struct rp_params, period), false, false },
	{ "stream-bytes", offsetof(struct rp_params, stream_bytes), true, false },
	{ "reader-bytes", offsetof(struct rp_params, reader_bytes), true, false },
	{ "tester-write", offsetof(struct rp_params, tester_write), false, true },
	{ "files", offsetof(struct rp_params, files), false, true },
	{ "dirs", offsetof(struct rp_params, dirs), false, true },
};
#define NPDESC (sizeof pdescs / sizeof pdescs[0])

int rp_params_argv(const struct rp_params *p, char bufs[][32], char **argv, int max)
{
	int n = 0;
	for (size_t i = 0; i < NPDESC && n + 2 <= max; i++) {
		const struct pdesc *d = &pdescs[i];
		const char *base = (const char *)p + d->off;
		snprintf(bufs[n], 32, "--%s", d->name);
		if (d->u64)
			snprintf(bufs[n + 1], 32, "%llu", (unsigned long long)*(const uint64_t *)(const void *)base);
		else if (d->uint)
			snprintf(bufs[n + 1], 32, "%u", *(const unsigned *)(const void *)base);
		else
			snprintf(bufs[n + 1], 32, "%.6g", *(const double *)(const void *)base);
		argv[n] = bufs[n];
		argv[n + 1] = bufs[n + 1];
		n += 2;
	}
	return n;
}

int rp_params_parse(struct rp_params *p, const char *name, const char *value)
{
	for (size_t i = 0; i < NPDESC; i++) {
		const struct pdesc *d = &pdescs[i];
		if (strcmp(name, d->name))
			continue;
		char *end;
		char *base = (char *)p + d->off;
		errno = 0;
		if (d->u64 || d->uint) {
			unsigned long long v = strtoull(value, &end, 10);
			if (errno || *end || !*value || (d->uint && v > 0xffffffffu))
				break;
			if (d->u64)
				*(uint64_t *)(void *)base = v;
			else
				*(unsigned *)(void *)base = (unsigned)v;
		} else {
			double v = strtod(value, &end);
			if (errno || *end || !*value || !(v >= 0) || v > 86400)
				break;
			*(double *)(void *)base = v;
		}
		return 0;
	}
	return err_set(-EINVAL, "bad parameter --%s '%s'", name, value);
}
