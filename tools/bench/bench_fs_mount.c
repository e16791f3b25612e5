/* nostall bench fs --mount [--peers [--host-cache]]: bench fs's workloads
 * (and two of its own, readback and manyfiles) through a FUSE mount of
 * nostall in its default data mode and, with --peers (root), on the
 * kernel's ext3 (data=ordered and data=writeback, barrier=1, a loop device
 * with direct I/O) and on fuse2fs, all on the same image file on the host
 * disk, in the same run, the peers with the host's dirty budget set to
 * what nostall's daemon allows dirty (issue 36's like-for-like path); with
 * --host-cache also the kernel through the host's page cache with the
 * host's own dirty settings. One table row per system and issue 36's
 * targets as ratios measured in that run (docs/bench-fs-mount.md).
 *
 * The operations are bench repro's POSIX loads (`nostall load DIR PHASE`,
 * tools/bench/repro_files.c and repro_load.c), run in a child per phase by
 * rp_job_run (a deadline, no hang); the systems are mounted, unmounted and
 * made cold by rp_peer.c. Between a write phase and its read or stat phase
 * every cache is made cold: nostall's mount is restarted (its page cache
 * lives in the daemon), then the host syncs and drops its caches (the
 * kernel's page cache of the mount and of the image file, dentries and
 * inodes). Writes end with fsync (or a whole-filesystem sync), so every
 * system's figure includes getting the data to the host disk.
 */
#include "bench_fs.h"

#include "extfs/core/ext3.h"
#include "../fuse/fuse_ioc.h"
#include "repro.h"
#include "rp_peer.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each file of the creates workload through the mount (issue 36). */
#define MOUNT_CREATE_BYTES 4096u

#define NSYS 6
#define NSYS_BASE 4                /* without --host-cache */
#define HWM_BASE_MiB 64            /* issue 36's bound: 64 MiB + 512 B a file */
#define HWM_PER_FILE 512

struct msys {
	const char *system;
	const char *mode;          /* data= (NULL: nostall-fuse's, its default unless -o data=) */
	const char *config;        /* the row's label (NULL: nostall-fuse's mode) */
	bool peer;
	bool host_cache;           /* the kernel through the host's page cache and dirty settings */
};

static const struct msys msystems[NSYS] = {
	{ "nostall-fuse", NULL, NULL, false, false },
	{ "kernel-ext3", "ordered", "ordered", true, false },
	{ "kernel-ext3", "writeback", "writeback", true, false },
	{ "fuse2fs", "default", "default", true, false },
	{ "kernel-ext3", "ordered", "ordered (host cache)", true, true },
	{ "kernel-ext3", "writeback", "writeback (host cache)", true, true },
};

/* One workload on one system: its figures (the fsb_run shape) or why not. */
struct mrow {
	struct fsb_run r;
	const char *system;
	char config[40];
	char path[80];             /* how it reaches the disk (JSON "path") */
	char note[96];             /* after the row's figures: what did not go as asked */
	double dirty_bytes, bg_bytes; /* the dirty budget it ran with (NAN: the host's own) */
	char status[200];          /* "" ran; "skipped: ..." / "failed: ..." */
};

/* The host's dirty settings, saved before a peer's run and restored after
 * it (also on a signal: the handler only flags, the run unwinds). */
#define NVM 4
static const char *const vm_names[NVM] = { "dirty_bytes", "dirty_ratio", "dirty_background_bytes",
					   "dirty_background_ratio" };

struct mctx {
	struct fsb *b;
	char self[4096];
	char fuse_mode[32];        /* -o data=, or "" (the library's default) */
	char default_mode[32];     /* what nostall-fuse's rows are labelled before the mount says */
	const char *fuse_opts;     /* -o without its data= */
	char fuse_opts_buf[512];
	int nsys;
	/* nostall's daemon's dirty budget for these options (bytes) */
	uint64_t cache_bytes, dirty_bytes, bg_bytes;
	char budget_how[200];
	char vm_saved[NVM][32];
	bool vm_set;               /* the budget is in force: restore vm_saved */
	enum fsb_workload cur;     /* the workload under way (its sizes) */
	struct rp_peer p;
	struct mrow rows[FSB_NWORKLOADS][NSYS];
	bool ran[FSB_NWORKLOADS];
	char kernel_label[16];     /* "kernel-ext3", or the driver --fs names (kernel-ext4, ...) */
};

/* What a system's rows are called. The kernel peers are one system
 * ("kernel-ext3" to rp_peer and the load) that mounts the --fs type with
 * the kernel's own driver, so under --fs ext4 its rows say kernel-ext4. */
static const char *sys_label(const struct mctx *m, const char *system)
{
	return !strcmp(system, "kernel-ext3") && m->kernel_label[0] ? m->kernel_label : system;
}

/* A target's sentence with the kernel peer's label (they are written with
 * kernel-ext3's). */
static const char *target_text(const struct mctx *m, const char *what, char *buf, size_t len)
{
	const char *k = strstr(what, "kernel-ext3");
	if (!k || !strcmp(m->kernel_label, "kernel-ext3") || !m->kernel_label[0])
		return what;
	snprintf(buf, len, "%.*s%s%s", (int)(k - what), what, m->kernel_label, k + strlen("kernel-ext3"));
	return buf;
}

/* SIGINT/SIGTERM/SIGHUP during a run: the phase under way ends (Ctrl-C
 * also reaches the load child, which is in our process group; the mount
 * daemons are not), the system is unmounted as after any run, and the
 * run stops there with exit status 128 + the signal (the caller then
 * removes its image file). No mount is left behind. */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void stop_handlers(bool install)
{
	struct sigaction sa = { .sa_handler = install ? on_stop : SIG_DFL };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Is dir a mount point (/proc/self/mountinfo's fifth field)? A mount
 * command killed by the signal may have left one that p->mounted does not
 * know of. */
static bool dir_is_mounted(const char *dir)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return false;
	char line[4096], mp[4096];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && !strcmp(mp, dir);
	fclose(f);
	return found;
}

/* ------------------------------------------------------------ dirty budget */

static int vm_read(const char *name, char *out, size_t n)
{
	char path[96];
	snprintf(path, sizeof path, "/proc/sys/vm/%s", name);
	FILE *f = fopen(path, "r");
	if (!f || !fgets(out, (int)n, f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	out[strcspn(out, "\n")] = 0;
	return 0;
}

static int vm_write(const char *name, const char *value)
{
	char path[96];
	snprintf(path, sizeof path, "/proc/sys/vm/%s", name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	int rc = n == (ssize_t)strlen(value) ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return rc;
}

/* Is the budget still in force (nobody else has written the settings)? */
static bool vm_ours(const struct mctx *m)
{
	char v[32], bg[32];
	return !vm_read("dirty_bytes", v, sizeof v) && !vm_read("dirty_background_bytes", bg, sizeof bg) &&
	       strtoull(v, NULL, 10) == m->dirty_bytes && strtoull(bg, NULL, 10) == m->bg_bytes;
}

/* Back to the saved settings: the bytes form when it was in force (the
 * kernel then zeroes the ratio), else the ratio (which zeroes the bytes).
 * Settings another process wrote meanwhile are left as they are. */
static void vm_restore(struct mctx *m)
{
	if (!m->vm_set)
		return;
	bool ours = vm_ours(m);
	for (int i = 0; i < NVM && ours; i += 2) {
		bool bytes = strcmp(m->vm_saved[i], "0") != 0;
		vm_write(vm_names[bytes ? i : i + 1], m->vm_saved[bytes ? i : i + 1]);
	}
	m->vm_set = false;
}

/* The daemon's budget into vm.dirty_bytes and vm.dirty_background_bytes,
 * the previous four values saved. 0, or -1 with row->note saying why. */
static int vm_budget_set(struct mctx *m, struct mrow *row)
{
	if (!m->vm_set) {
		for (int i = 0; i < NVM; i++)
			if (vm_read(vm_names[i], m->vm_saved[i], sizeof m->vm_saved[i])) {
				snprintf(row->note, sizeof row->note, "[dirty budget not set: /proc/sys/vm/%s unreadable]",
					 vm_names[i]);
				return -1;
			}
		m->vm_set = true;
	}
	char v[32], bg[32];
	snprintf(v, sizeof v, "%llu", (unsigned long long)m->dirty_bytes);
	snprintf(bg, sizeof bg, "%llu", (unsigned long long)m->bg_bytes);
	int rc = vm_write("dirty_bytes", v);
	if (!rc && m->bg_bytes)
		rc = vm_write("dirty_background_bytes", bg);
	if (rc) {
		vm_restore(m);
		snprintf(row->note, sizeof row->note, "[dirty budget not set: %s]", strerror(-rc));
		return -1;
	}
	return 0;
}

/* What nostall's daemon allows dirty with the options the bench mounts it
 * with: the page cache's dirty limit (src/page/page_cache.c
 * page_limits_locked: dirty_ratio % of cache=, at least dirty_min up to
 * half the cache) and its background threshold (dirty_background_ratio %;
 * half the dirty ratio when at or above it). The daemon's own options
 * (writeback_cache, ...) are not the library's: each -o token is parsed
 * alone and those it refuses are left out. */
static void budget_pick(struct mctx *m)
{
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	char *copy = m->fuse_opts ? strdup(m->fuse_opts) : NULL, *save = NULL;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
		if (ext3_mount_opts_parse(&o, t) < 0)
			err_clear();
	}
	free(copy);
	const uint64_t page = 4096; /* mkfs's block size, the page cache's page */
	m->cache_bytes = o.cache_bytes ? o.cache_bytes : 64 * FSB_MiB;
	uint64_t pages = m->cache_bytes / page;
	uint64_t ratio = o.page.dirty_ratio, bgr = o.page.dirty_background_ratio;
	if (bgr >= ratio)
		bgr = ratio / 2;
	uint64_t dirty = pages * ratio / 100, floor = o.page.dirty_min_kb * 1024 / page;
	if (floor > pages / 2)
		floor = pages / 2;
	if (dirty < floor)
		dirty = floor;
	if (dirty < 1)
		dirty = 1;
	uint64_t bg = bgr ? pages * bgr / 100 : 0;
	m->dirty_bytes = dirty * page;
	m->bg_bytes = bg * page;
	snprintf(m->budget_how, sizeof m->budget_how,
		 "cache=%lluM: dirty_ratio %llu %%, dirty_min %llu MiB; background %llu %%",
		 (unsigned long long)(m->cache_bytes / FSB_MiB), (unsigned long long)ratio,
		 (unsigned long long)(o.page.dirty_min_kb / 1024), (unsigned long long)bgr);
	ext3_mount_opts_release(&o);
}

/* nostall-fuse's data mode as the daemon reports it (`nostall info DIR`'s
 * ioctl), into out; unchanged when it does not answer. */
static void fuse_mode_ask(const char *dir, char *out, size_t n)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char mode[16] = "";
	if (fd >= 0 && ioctl(fd, NOSTALL_IOC_DATA_MODE, mode) == 0 && mode[0]) {
		mode[sizeof mode - 1] = 0;
		snprintf(out, n, "%s", mode);
	}
	if (fd >= 0)
		close(fd);
}

/* ------------------------------------------------------------ phases */

static double phase_deadline(const struct mctx *m, enum rp_kind k, const struct rp_params *p)
{
	const struct fsb_sizes *s = &m->b->sz;
	switch (k) {
	case RP_JENS: return 60 + s->jens_n * 0.1;
	case RP_FUS: return s->fus_seconds * 1.1 + 60;
	case RP_STREAM_WRITE:
	case RP_STREAM_READ: return 120 + (double)p->stream_bytes / FSB_MiB * 0.5; /* 2 MiB/s */
	default: return 120 + p->files * 0.05;
	}
}

/* The load's parameters for phase k of the workload under way. */
static struct rp_params phase_params(const struct mctx *m, enum rp_kind k)
{
	const struct fsb_sizes *s = &m->b->sz;
	struct rp_params p;
	rp_params_default(&p);
	p.jens_n = s->jens_n;
	p.seconds = s->fus_seconds;
	p.warmup = s->fus_seconds / 10; /* bench fs lets the streamer fill the cache as long */
	p.stream_bytes = k == RP_FUS ? s->fus_file_bytes : m->cur == FSB_READBACK ? s->readback_bytes : s->stream_bytes;
	p.files = s->creates_n;
	/* Issue 36's creates: open O_CREAT + 4 KiB write + close in one
	 * directory, then a whole-filesystem sync (bench fs's library
	 * workload spreads 1 KiB files over creates_dirs). */
	p.dirs = 1;
	p.tester_write = MOUNT_CREATE_BYTES; /* the creates phase's file size (repro_files.c) */
	if (m->cur == FSB_MANYFILES) {
		p.files = s->many_files;
		p.dirs = s->many_dirs;
		p.tester_write = s->many_bytes; /* the creates phase's file size (repro_files.c) */
	}
	return p;
}

/* Run one phase on the mounted system; its results in *r (caller frees).
 * 0, or -1 with row->status set. */
static int phase_run(struct mctx *m, struct mrow *row, enum rp_kind k, struct rp_run *r)
{
	memset(r, 0, sizeof *r);
	r->kind = k;
	r->workload = rp_kind_name(k);
	r->system = row->system;
	r->p = phase_params(m, k);
	char bufs[24][32];
	char *argv[32] = { m->self, "load", m->p.dir, (char *)rp_kind_name(k) };
	int n = 4 + rp_params_argv(&r->p, bufs, argv + 4, 24);
	if (m->p.fs) {
		argv[n++] = "--fs";
		argv[n++] = (char *)m->p.fs;
	}
	argv[n] = NULL;
	fsb_progress(m->b, "%s on %s (%s)...", rp_kind_name(k), row->system, row->config);
	struct rp_exec x = { .argv = argv, .deadline_s = phase_deadline(m, k, &r->p) };
	err_clear();
	int rc = rp_job_run(r, &x);
	if (rc < 0)
		snprintf(row->status, sizeof row->status, "failed: %s: %s", rp_kind_name(k), err_last(rc));
	else if (r->status[0])
		snprintf(row->status, sizeof row->status, "%s (%s)", r->status, rp_kind_name(k));
	return row->status[0] ? -1 : 0;
}

/* A phase's metric into the row's figures (NAN when it has none). */
static double phase_get(struct mrow *row, struct rp_run *r, const char *metric, const char *field, int decimals)
{
	double v = rp_run_get(r, metric);
	if (field)
		fsb_field(&row->r, field, v, decimals);
	return v;
}

static int wl_jens(struct mctx *m, struct mrow *row)
{
	struct rp_run r;
	if (phase_run(m, row, RP_JENS, &r) == 0) {
		double total = phase_get(row, &r, "total_s", "total_s", 3);
		fsb_field(&row->r, "ms_per_fsync", total * 1e3 / m->b->sz.jens_n, 3);
		phase_get(row, &r, "fsync_p99_ms", "p99_ms", 3);
		fsb_field(&row->r, "fsyncs", m->b->sz.jens_n, 0);
	}
	rp_run_free(&r);
	return row->status[0] ? -1 : 0;
}

static int cold(struct mctx *m, struct mrow *row)
{
	fsb_progress(m->b, "%s (%s): making the caches cold", row->system, row->config);
	return rp_peer_cold(&m->p, row->status, sizeof row->status);
}

/* Phases k0, then (after making caches cold) k1.. up to k_end. */
static int wl_phases(struct mctx *m, struct mrow *row, const enum rp_kind *ks, const char *const *fields, int n)
{
	for (int i = 0; i < n; i++) {
		struct rp_run r;
		if (stop_sig) {
			snprintf(row->status, sizeof row->status, "failed: interrupted by signal %d", (int)stop_sig);
			return -1;
		}
		if (i == 1 && cold(m, row))
			return -1;
		int rc = phase_run(m, row, ks[i], &r);
		if (!rc)
			phase_get(row, &r, fields[i], fields[i], fields[i][0] == 'w' || fields[i][0] == 'r' ? 1 : 0);
		rp_run_free(&r);
		if (rc)
			return -1;
	}
	return 0;
}

static int wl_stream(struct mctx *m, struct mrow *row)
{
	static const enum rp_kind ks[] = { RP_STREAM_WRITE, RP_STREAM_READ };
	static const char *const fields[] = { "write_mbps", "read_mbps" };
	return wl_phases(m, row, ks, fields, 2);
}

static int wl_creates(struct mctx *m, struct mrow *row)
{
	static const enum rp_kind ks[] = { RP_CREATES, RP_STATS, RP_UNLINKS };
	static const char *const fields[] = { "creates_per_s", "stats_per_s", "unlinks_per_s" };
	int rc = wl_phases(m, row, ks, fields, 3);
	if (!rc)
		fsb_field(&row->r, "files", m->b->sz.creates_n, 0);
	return rc;
}

static int wl_fus(struct mctx *m, struct mrow *row)
{
	struct rp_run r;
	if (phase_run(m, row, RP_FUS, &r) == 0) {
		struct rp_series *s = rp_run_series(&r, "fsync", false);
		unsigned n = s ? s->n : 0;
		/* the streamer's rate beside the percentiles it was measured with */
		phase_get(row, &r, "fsync_p50_ms", "p50_ms", 2);
		double p99 = phase_get(row, &r, "fsync_p99_ms", NULL, 2);
		fsb_field(&row->r, "p99_ms", n >= 100 ? p99 : NAN, 2);
		phase_get(row, &r, "stream_mbps", "stream_mbps", 1);
		phase_get(row, &r, "fsync_max_ms", "max_ms", 2);
		fsb_field(&row->r, "samples", n, 0);
	}
	rp_run_free(&r);
	return row->status[0] ? -1 : 0;
}

/* One phase whose metric goes into the row under another name. */
static int phase_into(struct mctx *m, struct mrow *row, enum rp_kind k, const char *metric, const char *field)
{
	if (stop_sig) {
		snprintf(row->status, sizeof row->status, "failed: interrupted by signal %d", (int)stop_sig);
		return -1;
	}
	struct rp_run r;
	int rc = phase_run(m, row, k, &r);
	if (!rc)
		phase_get(row, &r, metric, field, 1);
	rp_run_free(&r);
	return rc;
}

/* readback (issue 36): written and fsynced, then the host's caches dropped
 * with the mount left as it is (nostall's daemon keeps its cache: what a
 * user reading back what they just wrote gets), read back; then every cache
 * made cold as stream's read does (nostall: remount), read again. */
static int wl_readback(struct mctx *m, struct mrow *row)
{
	if (phase_into(m, row, RP_STREAM_WRITE, "write_mbps", "write_mbps"))
		return -1;
	fsb_progress(m->b, "%s (%s): sync + drop_caches, same mount", row->system, row->config);
	if (rp_peer_drop_host(row->status, sizeof row->status))
		return -1;
	if (phase_into(m, row, RP_STREAM_READ, "read_mbps", "readback_mbps"))
		return -1;
	if (cold(m, row))
		return -1;
	return phase_into(m, row, RP_STREAM_READ, "read_mbps", "fresh_read_mbps");
}

/* `find DIR -type f | wc -l`, timed; the count in *count. 0 or -1 (why in
 * row->status). */
static int find_count(struct mctx *m, struct mrow *row, double *secs, unsigned long long *count)
{
	char cmd[400];
	snprintf(cmd, sizeof cmd, "timeout 1800 find '%s' -type f | wc -l", m->p.dir);
	fsb_progress(m->b, "find -type f | wc -l on %s (%s)...", row->system, row->config);
	uint64_t t0 = clock_now_ns();
	FILE *f = popen(cmd, "r");
	char out[64] = "";
	bool got = f && fgets(out, sizeof out, f);
	int st = f ? pclose(f) : -1;
	*secs = (double)(clock_now_ns() - t0) / 1e9;
	char *end;
	*count = strtoull(out, &end, 10);
	if (!got || st != 0 || end == out) {
		snprintf(row->status, sizeof row->status, "failed: find -type f | wc -l (status %d): %.60s", st, out);
		return -1;
	}
	return 0;
}

/* manyfiles (issue 36): many small files through the mount, then a find
 * over them; nostall-fuse's daemon's peak memory is added by run_one. */
static int wl_manyfiles(struct mctx *m, struct mrow *row)
{
	if (phase_into(m, row, RP_CREATES, "creates_per_s", "files_per_s"))
		return -1;
	row->r.f[row->r.nf - 1].decimals = 0;
	double secs;
	unsigned long long count;
	if (find_count(m, row, &secs, &count))
		return -1;
	fsb_field(&row->r, "find_s", secs, 3);
	fsb_field(&row->r, "files", (double)count, 0);
	if (count != m->b->sz.many_files) {
		snprintf(row->status, sizeof row->status, "failed: find counted %llu files, %u were created", count,
			 m->b->sz.many_files);
		return -1;
	}
	return 0;
}

typedef int (*mwl_fn)(struct mctx *m, struct mrow *row);
static const mwl_fn mworkloads[FSB_NWORKLOADS] = {
	[FSB_JENS] = wl_jens, [FSB_STREAM] = wl_stream, [FSB_CREATES] = wl_creates, [FSB_FUS] = wl_fus,
	[FSB_READBACK] = wl_readback, [FSB_MANYFILES] = wl_manyfiles,
};
static const char *const mnotes[FSB_NWORKLOADS] = {
	[FSB_JENS] = "open(O_APPEND)/write a line/fsync/close; p99 of the iterations",
	[FSB_STREAM] = "1 MiB writes + fsync; caches made cold; 1 MiB reads; MiB/s",
	[FSB_CREATES] = "4 KiB files in one directory (issue 36); create and unlink end with a sync; stat after the caches are made cold",
	[FSB_FUS] = "4 KiB append + fsync every 50 ms beside a streamer (stream_mbps: its rate meanwhile); "
		    "p99 n/a under 100 samples",
	[FSB_READBACK] = "1 MiB writes + fsync; sync + drop_caches, read back in the same mount (readback); "
			 "caches made cold (nostall: remount), read again (fresh_read); MiB/s",
	[FSB_MANYFILES] = "create+write+close of small files, then a sync; `find DIR -type f | wc -l` right after "
			  "(files: its count); daemon_hwm_mib: the daemon's VmHWM, bytes_per_file: (VmHWM - 64 MiB)/files",
};

/* ------------------------------------------------------------ output */

static void json_str(const char *s)
{
	putchar('"');
	for (const char *c = s; *c; c++)
		printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c >= ' ' ? *c : ' ');
	putchar('"');
}

static void json_num(const char *name, double v, int decimals)
{
	if (isnan(v))
		printf(",\"%s\":null", name);
	else
		printf(",\"%s\":%.*f", name, decimals, v);
}

static void print_json_row(const struct fsb *b, const struct mrow *row)
{
	printf("{\"scenario\":\"%s\",\"device\":\"%s\",\"system\":\"%s\",\"config\":", row->r.workload, b->spec,
	       row->system);
	json_str(row->config);
	if (b->fs_given) {
		printf(",\"fs\":");
		json_str(b->fs ? b->fs : "ext3");
		if (b->fs_features) {
			printf(",\"features\":");
			json_str(b->fs_features);
		}
	}
	printf(",\"path\":");
	json_str(row->path);
	json_num("dirty_bytes", row->dirty_bytes, 0);
	json_num("dirty_background_bytes", row->bg_bytes, 0);
	for (int j = 0; j < row->r.nf; j++)
		json_num(row->r.f[j].name, row->r.f[j].value, row->r.f[j].decimals);
	if (row->note[0]) {
		printf(",\"note\":");
		json_str(row->note);
	}
	printf(",\"status\":");
	json_str(row->status[0] ? row->status : "ok");
	printf("}\n");
}

static void print_table(const struct mctx *m, const struct mrow *rows, const char *note)
{
	const struct mrow *ref = NULL;
	for (int s = 0; s < m->nsys && !ref; s++) /* the most figures: nostall-fuse's */
		if (!rows[s].status[0] && (!ref || rows[s].r.nf > ref->r.nf))
			ref = &rows[s];
	printf("\n%s on %s\n  %-13s %-22s", rows[0].r.workload, m->b->spec, "system", "config");
	for (int j = 0; ref && j < ref->r.nf; j++)
		printf(" %14s", ref->r.f[j].name);
	printf("\n");
	for (int s = 0; s < m->nsys; s++) {
		const struct mrow *row = &rows[s];
		printf("  %-13s %-22s", row->system, row->config);
		if (row->status[0])
			printf(" %s", row->status);
		for (int j = 0; !row->status[0] && j < row->r.nf; j++) {
			if (isnan(row->r.f[j].value))
				printf(" %14s", "n/a");
			else
				printf(" %14.*f", row->r.f[j].decimals, row->r.f[j].value);
		}
		if (row->note[0])
			printf("  %s", row->note);
		printf("\n");
	}
	printf("  (%s)\n", note);
}

static double row_value(const struct mrow *row, const char *name)
{
	for (int j = 0; !row->status[0] && j < row->r.nf; j++)
		if (!strcmp(row->r.f[j].name, name))
			return row->r.f[j].value;
	return NAN;
}

/* Issue 36's targets: nostall-fuse's figure over a peer's (same run, the
 * like-for-like rows), or over a bound (peer -1). */
static const struct target {
	enum fsb_workload w;
	const char *field;
	int peer;                  /* index in msystems; -1: the manyfiles memory bound */
	double goal;
	bool at_most;              /* ratio <= goal (else >=) */
	const char *what;
} targets[] = {
	{ FSB_FUS, "p99_ms", 1, 0.1, true, "fsync p99 beside a streamer <= 1/10 kernel-ext3 ordered" },
	{ FSB_FUS, "stream_mbps", 1, 0.8, false, "... its streamer >= 0.8x kernel-ext3 ordered's" },
	{ FSB_FUS, "p99_ms", 2, 0.2, true, "fsync p99 beside a streamer <= 1/5 kernel-ext3 writeback" },
	{ FSB_JENS, "total_s", 1, 0.6, true, "jens loop time <= 0.6x kernel-ext3 ordered" },
	{ FSB_CREATES, "creates_per_s", 1, 0.4, false, "creates/s >= 0.4x kernel-ext3 ordered" },
	{ FSB_READBACK, "readback_mbps", 1, 0.9, false, "read-back, same mount >= 0.9x kernel-ext3 ordered" },
	{ FSB_READBACK, "fresh_read_mbps", 1, 0.9, false, "read-back, fresh mount >= 0.9x kernel-ext3 ordered" },
	{ FSB_MANYFILES, "daemon_hwm_mib", -1, 1, true, "manyfiles daemon peak RSS <= 64 MiB + 512 B/file" },
};

static void print_targets(const struct mctx *m)
{
	const struct fsb *b = m->b;
	const char *mode = m->fuse_mode[0] ? m->fuse_mode : m->default_mode;
	if (!b->json)
		printf("\ntargets (issue 36): nostall-fuse data=%s over the peer (like-for-like rows), same run\n"
		       "  %-56s %12s %12s %8s  %s\n",
		       mode, "target", "nostall-fuse", "peer", "ratio", "met");
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		const struct target *t = &targets[i];
		char what[96];
		if (!m->ran[t->w])
			continue;
		const struct mrow *own = &m->rows[t->w][0];
		double a = row_value(own, t->field);
		double p = t->peer >= 0 ? row_value(&m->rows[t->w][t->peer], t->field)
					: HWM_BASE_MiB + (double)m->b->sz.many_files * HWM_PER_FILE / FSB_MiB;
		double ratio = a / p;
		bool known = isfinite(ratio) && p > 0;
		bool met = known && (t->at_most ? ratio <= t->goal : ratio >= t->goal);
		if (b->json) {
			printf("{\"scenario\":\"target\",\"device\":\"%s\",\"system\":\"nostall-fuse\",\"config\":\"%s\","
			       "\"target\":\"%s\",\"peer\":\"%s\",\"peer_config\":\"%s\",\"figure\":\"%s\",",
			       b->spec, own->config, target_text(m, t->what, what, sizeof what),
			       t->peer >= 0 ? sys_label(m, msystems[t->peer].system) : "bound",
			       t->peer >= 0 ? msystems[t->peer].config : "64 MiB + 512 B/file", t->field);
			if (known)
				printf("\"value\":%.3f,\"peer_value\":%.3f,\"ratio\":%.3f,", a, p, ratio);
			else
				printf("\"value\":null,\"peer_value\":null,\"ratio\":null,");
			printf("\"goal\":%g,\"met\":%s}\n", t->goal, known ? (met ? "true" : "false") : "null");
			continue;
		}
		printf("  %-56s", target_text(m, t->what, what, sizeof what));
		if (known)
			printf(" %12.2f %12.2f %7.3fx  %s\n", a, p, ratio, met ? "yes" : "NO");
		else
			printf(" %12s %12s %8s  n/a (a run is missing, skipped or failed)\n", "", "", "");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------ driver */

/* The row's path and budget before it runs. */
static void row_label(struct mctx *m, struct mrow *row, const struct msys *sys)
{
	row->dirty_bytes = row->bg_bytes = NAN;
	if (!sys->peer) {
		snprintf(row->config, sizeof row->config, "%s", m->fuse_mode[0] ? m->fuse_mode : m->default_mode);
		snprintf(row->path, sizeof row->path, "O_DIRECT on the image, the daemon's cache %llu MiB",
			 (unsigned long long)(m->cache_bytes / FSB_MiB));
		row->dirty_bytes = (double)m->dirty_bytes;
		row->bg_bytes = (double)m->bg_bytes;
		return;
	}
	snprintf(row->config, sizeof row->config, "%s", sys->config);
	if (sys->host_cache) {
		snprintf(row->path, sizeof row->path, "loop device through the host page cache, host dirty settings");
		return;
	}
	snprintf(row->path, sizeof row->path, "%s",
		 !strcmp(sys->system, "fuse2fs") ? "the image through the host page cache"
						 : "loop device with direct I/O");
	row->dirty_bytes = (double)m->dirty_bytes;
	row->bg_bytes = (double)m->bg_bytes;
}

static void run_one(struct mctx *m, enum fsb_workload w, int s)
{
	struct mrow *row = &m->rows[w][s];
	const struct msys *sys = &msystems[s];
	m->cur = w;
	m->p.system = sys->system;
	m->p.mode = sys->mode ? sys->mode : m->fuse_mode[0] ? m->fuse_mode : NULL;
	m->p.opts = sys->peer ? NULL : m->fuse_opts;
	m->p.loop_dio = !strcmp(sys->system, "kernel-ext3") && !sys->host_cache;
	m->p.dio = -1;
	m->p.inodes = w == FSB_MANYFILES ? m->b->sz.many_files + m->b->sz.many_dirs + 4096 : 0;
	m->p.track_hwm = !sys->peer;
	m->p.hwm_kb = 0;
	row_label(m, row, sys);
	if (sys->peer && !m->b->peers) {
		snprintf(row->status, sizeof row->status, "skipped: --peers not given");
		return;
	}
	rp_peer_why(m->self, sys->system, row->status, sizeof row->status);
	if (row->status[0])
		return;
	/* the like-for-like peers run with the daemon's dirty budget */
	bool budget = sys->peer && !sys->host_cache;
	if (budget && vm_budget_set(m, row))
		row->dirty_bytes = row->bg_bytes = NAN;
	fsb_progress(m->b, "%s on %s (%s): mkfs and mount", row->r.workload, sys->system, row->config);
	if (rp_peer_mount(&m->p, row->status, sizeof row->status)) {
		if (!sys->peer) { /* nostall itself must run: a failure, not a skip */
			char why[sizeof row->status];
			snprintf(why, sizeof why, "%s", row->status + strlen("skipped: "));
			snprintf(row->status, sizeof row->status, "failed: %.180s", why);
		}
		vm_restore(m);
		return;
	}
	if (!sys->peer && !m->fuse_mode[0])
		fuse_mode_ask(m->p.dir, row->config, sizeof row->config);
	if (m->p.loop_dio && m->p.dio != 1) {
		snprintf(row->path, sizeof row->path, "loop device, direct I/O NOT taken (dio=%d)", m->p.dio);
		snprintf(row->note, sizeof row->note, "[loop dio=%d: direct I/O not taken]", m->p.dio);
	}
	if (!stop_sig)
		mworkloads[w](m, row);
	fsb_progress(m->b, "%s on %s (%s): unmount", row->r.workload, sys->system, row->config);
	if (!m->p.mounted && stop_sig && dir_is_mounted(m->p.dir))
		m->p.mounted = true; /* the mount command was killed after mounting */
	if (m->vm_set && !vm_ours(m))
		snprintf(row->note, sizeof row->note, "[the dirty budget was changed by another process during the run]");
	rp_peer_umount(&m->p);
	vm_restore(m);
	if (m->p.mounted && !row->status[0])
		snprintf(row->status, sizeof row->status, "failed: could not unmount %.120s", m->p.dir);
	if (!sys->peer && !row->status[0]) {
		double hwm = m->p.hwm_kb ? (double)m->p.hwm_kb / 1024 : NAN;
		fsb_field(&row->r, "daemon_hwm_mib", hwm, 1);
		if (w == FSB_MANYFILES)
			fsb_field(&row->r, "bytes_per_file",
				  (hwm - HWM_BASE_MiB) * (double)FSB_MiB / m->b->sz.many_files, 0);
	}
}

/* -o for nostall-fuse: its data= picks the mode (default: none given, the
 * library's default, guarded), the rest goes to `nostall mount -o`. */
static void fuse_opts_split(struct mctx *m, const char *user)
{
	m->fuse_mode[0] = 0;
	size_t used = 0;
	m->fuse_opts_buf[0] = 0;
	char *copy = user ? strdup(user) : NULL, *save = NULL;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
		if (!strncmp(t, "data=", 5)) {
			snprintf(m->fuse_mode, sizeof m->fuse_mode, "%s", t + 5);
			continue;
		}
		int n = snprintf(m->fuse_opts_buf + used, sizeof m->fuse_opts_buf - used, "%s%s", used ? "," : "", t);
		if (n > 0 && (size_t)n < sizeof m->fuse_opts_buf - used)
			used += (size_t)n;
	}
	free(copy);
	m->fuse_opts = used ? m->fuse_opts_buf : NULL;
	snprintf(m->default_mode, sizeof m->default_mode, "%s", ext3_data_mode_name(EXT3_DATA_MODE_DEFAULT));
}

static void print_header(const struct mctx *m, const char *image)
{
	const struct fsb *b = m->b;
	if (b->fs_given)
		printf("bench fs --mount --fs %s%s%s: every system on that type (the kernel's own %s driver)\n",
		       b->fs ? b->fs : "ext3", b->fs_features ? " --features " : "", b->fs_features ? b->fs_features : "",
		       b->fs ? b->fs : "ext3");
	printf("bench fs --mount: %llu MiB filesystems on %s (host disk), fresh per system and workload;\n"
	       "caches made cold before reads and stats (nostall: mount restarted; all: sync + drop_caches)\n",
	       (unsigned long long)(b->sz.fs_bytes / FSB_MiB), image);
	printf("dirty budget: %.1f MiB, background %.1f MiB: nostall's daemon (%s);\n"
	       "  %s and fuse2fs run with vm.dirty_bytes=%llu, vm.dirty_background_bytes=%llu "
	       "(restored after each)\n",
	       (double)m->dirty_bytes / FSB_MiB, (double)m->bg_bytes / FSB_MiB, m->budget_how, m->kernel_label,
	       (unsigned long long)m->dirty_bytes, (unsigned long long)m->bg_bytes);
	printf("paths: nostall-fuse O_DIRECT on the image; %s a loop device with direct I/O\n"
	       "  (losetup --direct-io=on); fuse2fs the image through the host page cache%s\n",
	       m->kernel_label, b->host_cache ? ";\n  \"(host cache)\" rows: a loop device through the host page cache, the host's "
			       "own dirty settings" : "");
}

int fsb_mount_run(struct fsb *b, const bool *selected, const char *image)
{
	struct mctx *m = calloc(1, sizeof *m);
	if (!m) {
		fprintf(stderr, "nostall bench fs: out of memory\n");
		return 1;
	}
	m->b = b;
	m->nsys = b->host_cache ? NSYS : NSYS_BASE;
	ssize_t sl = readlink("/proc/self/exe", m->self, sizeof m->self - 1);
	m->self[sl > 0 ? sl : 0] = 0;
	fuse_opts_split(m, b->user_opts);
	budget_pick(m);
	m->p.self = m->self;
	m->p.fs = b->fs_given ? (b->fs ? b->fs : "ext3") : NULL;
	snprintf(m->kernel_label, sizeof m->kernel_label, "kernel-%s", b->fs ? b->fs : "ext3");
	m->p.features = b->fs_features;
	/* absolute paths: the daemon is found by them (rp_peer_daemon_pid) */
	if (image[0] != '/' && realpath(image, m->p.image) == NULL)
		snprintf(m->p.image, sizeof m->p.image, "%s", image);
	else if (image[0] == '/')
		snprintf(m->p.image, sizeof m->p.image, "%s", image);
	snprintf(m->p.dir, sizeof m->p.dir, "/tmp/nostall-benchfs-mnt.XXXXXX");
	int ret = 0;
	if (!mkdtemp(m->p.dir)) {
		fprintf(stderr, "nostall bench fs: mkdtemp %s: %s\n", m->p.dir, strerror(errno));
		free(m);
		return 1;
	}
	if (!b->json)
		print_header(m, image);
	stop_sig = 0;
	stop_handlers(true);
	for (int w = 0; w < FSB_NWORKLOADS && !stop_sig; w++) {
		if (!selected[w])
			continue;
		m->ran[w] = true;
		for (int s = 0; s < m->nsys; s++) {
			struct mrow *row = &m->rows[w][s];
			row->r.workload = fsb_workload_name((enum fsb_workload)w);
			row->system = sys_label(m, msystems[s].system);
			if (stop_sig) {
				row_label(m, row, &msystems[s]);
				snprintf(row->status, sizeof row->status, "failed: interrupted by signal %d",
					 (int)stop_sig);
			} else {
				run_one(m, (enum fsb_workload)w, s);
			}
		}
		fprintf(stderr, "\r%82s\r", "");
		if (m->rows[w][0].status[0])
			ret = 1; /* nostall itself must run */
		for (int s = 0; b->json && s < m->nsys; s++)
			print_json_row(b, &m->rows[w][s]);
		if (!b->json)
			print_table(m, m->rows[w], mnotes[w]);
		fflush(stdout);
	}
	print_targets(m);
	if (dir_is_mounted(m->p.dir)) { /* a signal between a mount and its record */
		m->p.mounted = true;
		rp_peer_umount(&m->p);
	}
	vm_restore(m);
	rmdir(m->p.dir);
	free(m);
	int sig = stop_sig;
	stop_handlers(false);
	if (sig) {
		fprintf(stderr, "nostall bench fs: interrupted (signal %d); nothing left mounted\n", sig);
		ret = 128 + sig; /* the caller removes its image file */
	}
	return ret;
}
