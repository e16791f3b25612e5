/* nostall bench fs --mount [--peers]: bench fs's workloads through a FUSE
 * mount of nostall and, with --peers (root), on the kernel's ext3
 * (data=ordered and data=writeback, barrier=1, a loop device) and on
 * fuse2fs, all on the same image file on the host disk, in the same run;
 * one table row per system and the issue 11 targets as ratios measured in
 * that run (docs/bench-fs-mount.md).
 *
 * The operations are bench repro's POSIX loads (`nostall load DIR PHASE`,
 * tools/repro/repro_files.c and repro_load.c), run in a child per phase by
 * rp_job_run (a deadline, no hang); the systems are mounted, unmounted and
 * made cold by rp_peer.c. Between a write phase and its read or stat phase
 * every cache is made cold: nostall's mount is restarted (its page cache
 * lives in the daemon), then the host syncs and drops its caches (the
 * kernel's page cache of the mount and of the image file, dentries and
 * inodes). Writes end with fsync (or a whole-filesystem sync), so every
 * system's figure includes getting the data to the host disk.
 */
#include "bench_fs.h"

#include "repro/repro.h"
#include "repro/rp_peer.h"
#include "util/err.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSYS 4

struct msys {
	const char *system;
	const char *mode;          /* NULL: nostall-fuse's (ordered or -o data=) */
	bool peer;
};

static const struct msys msystems[NSYS] = {
	{ "nostall-fuse", NULL, false },
	{ "kernel-ext3", "ordered", true },
	{ "kernel-ext3", "writeback", true },
	{ "fuse2fs", "default", true },
};

/* One workload on one system: its figures (the fsb_run shape) or why not. */
struct mrow {
	struct fsb_run r;
	const char *system;
	char status[200];          /* "" ran; "skipped: ..." / "failed: ..." */
};

struct mctx {
	struct fsb *b;
	char self[4096];
	char fuse_mode[32];
	const char *fuse_opts;     /* -o without its data= */
	char fuse_opts_buf[512];
	struct rp_peer p;
	struct mrow rows[FSB_NWORKLOADS][NSYS];
	bool ran[FSB_NWORKLOADS];
};

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

/* ------------------------------------------------------------ phases */

static double phase_deadline(const struct mctx *m, enum rp_kind k)
{
	const struct fsb_sizes *s = &m->b->sz;
	switch (k) {
	case RP_JENS: return 60 + s->jens_n * 0.1;
	case RP_FUS: return s->fus_seconds * 1.1 + 60;
	case RP_STREAM_WRITE:
	case RP_STREAM_READ: return 120 + (double)s->stream_bytes / FSB_MiB * 0.5; /* 2 MiB/s */
	default: return 120 + s->creates_n * 0.05;
	}
}

static struct rp_params phase_params(const struct mctx *m)
{
	const struct fsb_sizes *s = &m->b->sz;
	struct rp_params p;
	rp_params_default(&p);
	p.jens_n = s->jens_n;
	p.seconds = s->fus_seconds;
	p.warmup = s->fus_seconds / 10; /* bench fs lets the streamer fill the cache as long */
	p.stream_bytes = s->stream_bytes;
	p.files = s->creates_n;
	p.dirs = s->creates_dirs;
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
	r->p = phase_params(m);
	if (k == RP_FUS)
		r->p.stream_bytes = m->b->sz.fus_file_bytes;
	char bufs[24][32];
	char *argv[32] = { m->self, "load", m->p.dir, (char *)rp_kind_name(k) };
	int n = 4 + rp_params_argv(&r->p, bufs, argv + 4, 24);
	argv[n] = NULL;
	fsb_progress(m->b, "%s on %s (%s)...", rp_kind_name(k), row->system, row->r.config);
	struct rp_exec x = { .argv = argv, .deadline_s = phase_deadline(m, k) };
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
	fsb_progress(m->b, "%s (%s): making the caches cold", row->system, row->r.config);
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
		phase_get(row, &r, "fsync_p50_ms", "p50_ms", 2);
		double p99 = phase_get(row, &r, "fsync_p99_ms", NULL, 2);
		fsb_field(&row->r, "p99_ms", n >= 100 ? p99 : NAN, 2);
		phase_get(row, &r, "fsync_max_ms", "max_ms", 2);
		fsb_field(&row->r, "samples", n, 0);
		phase_get(row, &r, "stream_mbps", "stream_mbps", 1);
	}
	rp_run_free(&r);
	return row->status[0] ? -1 : 0;
}

typedef int (*mwl_fn)(struct mctx *m, struct mrow *row);
static const mwl_fn mworkloads[FSB_NWORKLOADS] = {
	[FSB_JENS] = wl_jens, [FSB_STREAM] = wl_stream, [FSB_CREATES] = wl_creates, [FSB_FUS] = wl_fus,
};
static const char *const mnotes[FSB_NWORKLOADS] = {
	[FSB_JENS] = "open(O_APPEND)/write a line/fsync/close; p99 of the iterations",
	[FSB_STREAM] = "1 MiB writes + fsync; caches made cold; 1 MiB reads; MiB/s",
	[FSB_CREATES] = "1 KiB files; create and unlink end with a sync; stat after the caches are made cold",
	[FSB_FUS] = "4 KiB append + fsync every 50 ms beside a streamer; p99 n/a under 100 samples",
};

/* ------------------------------------------------------------ output */

static const char *row_config(const struct mrow *row)
{
	return row->r.config;
}

static void print_json_row(const struct fsb *b, const struct mrow *row)
{
	printf("{\"scenario\":\"%s\",\"device\":\"%s\",\"system\":\"%s\",\"config\":\"%s\"", row->r.workload, b->spec,
	       row->system, row_config(row));
	for (int j = 0; j < row->r.nf; j++) {
		if (isnan(row->r.f[j].value))
			printf(",\"%s\":null", row->r.f[j].name);
		else
			printf(",\"%s\":%.*f", row->r.f[j].name, row->r.f[j].decimals, row->r.f[j].value);
	}
	printf(",\"status\":\"");
	const char *st = row->status[0] ? row->status : "ok";
	for (const char *c = st; *c; c++)
		printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c >= ' ' ? *c : ' ');
	printf("\"}\n");
}

static void print_table(const struct fsb *b, const struct mrow *rows, const char *note)
{
	const struct mrow *ref = NULL;
	for (int s = 0; s < NSYS && !ref; s++)
		if (!rows[s].status[0])
			ref = &rows[s];
	printf("\n%s on %s\n  %-13s %-10s", rows[0].r.workload, b->spec, "system", "config");
	for (int j = 0; ref && j < ref->r.nf; j++)
		printf(" %13s", ref->r.f[j].name);
	printf("\n");
	for (int s = 0; s < NSYS; s++) {
		const struct mrow *row = &rows[s];
		printf("  %-13s %-10s", row->system, row_config(row));
		if (row->status[0])
			printf(" %s", row->status);
		for (int j = 0; !row->status[0] && j < row->r.nf; j++) {
			if (isnan(row->r.f[j].value))
				printf(" %13s", "n/a");
			else
				printf(" %13.*f", row->r.f[j].decimals, row->r.f[j].value);
		}
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

/* The issue 11 targets: nostall-fuse's figure over a peer's (same run). */
static const struct target {
	enum fsb_workload w;
	const char *field;
	int peer;                  /* index in msystems */
	double goal;
	bool at_most;              /* ratio <= goal (else >=) */
	const char *what;
} targets[] = {
	{ FSB_STREAM, "write_mbps", 3, 2, false, "stream write >= 2x fuse2fs" },
	{ FSB_STREAM, "write_mbps", 1, 0.5, false, "stream write >= 0.5x kernel-ext3 ordered" },
	{ FSB_STREAM, "write_mbps", 2, 0.5, false, "stream write >= 0.5x kernel-ext3 writeback" },
	{ FSB_STREAM, "read_mbps", 3, 2, false, "stream read >= 2x fuse2fs" },
	{ FSB_STREAM, "read_mbps", 1, 0.5, false, "stream read >= 0.5x kernel-ext3 ordered" },
	{ FSB_STREAM, "read_mbps", 2, 0.5, false, "stream read >= 0.5x kernel-ext3 writeback" },
	{ FSB_JENS, "total_s", 1, 0.5, true, "jens time <= 0.5x kernel-ext3 ordered" },
	{ FSB_FUS, "p99_ms", 1, 0.05, true, "fsync p99 beside a streamer <= 1/20 kernel-ext3 ordered" },
	{ FSB_CREATES, "creates_per_s", 3, 1, false, "creates/s >= fuse2fs" },
};

static void print_targets(const struct mctx *m)
{
	const struct fsb *b = m->b;
	if (!b->json)
		printf("\ntargets (issue 11): nostall-fuse data=%s over the peer, same run\n  %-56s %12s %12s %8s  %s\n",
		       m->fuse_mode, "target", "nostall-fuse", "peer", "ratio", "met");
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		const struct target *t = &targets[i];
		if (!m->ran[t->w])
			continue;
		double a = row_value(&m->rows[t->w][0], t->field), p = row_value(&m->rows[t->w][t->peer], t->field);
		double ratio = a / p;
		bool known = isfinite(ratio) && p > 0;
		bool met = known && (t->at_most ? ratio <= t->goal : ratio >= t->goal);
		if (b->json) {
			printf("{\"scenario\":\"target\",\"device\":\"%s\",\"system\":\"nostall-fuse\",\"config\":\"%s\","
			       "\"target\":\"%s\",\"peer\":\"%s\",\"peer_config\":\"%s\",\"figure\":\"%s\",",
			       b->spec, m->fuse_mode, t->what, msystems[t->peer].system, msystems[t->peer].mode, t->field);
			if (known)
				printf("\"value\":%.3f,\"peer_value\":%.3f,\"ratio\":%.3f,", a, p, ratio);
			else
				printf("\"value\":null,\"peer_value\":null,\"ratio\":null,");
			printf("\"goal\":%g,\"met\":%s}\n", t->goal, known ? (met ? "true" : "false") : "null");
			continue;
		}
		printf("  %-56s", t->what);
		if (known)
			printf(" %12.2f %12.2f %7.2fx  %s\n", a, p, ratio, met ? "yes" : "NO");
		else
			printf(" %12s %12s %8s  n/a (a run is missing, skipped or failed)\n", "", "", "");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------ driver */

static void run_one(struct mctx *m, enum fsb_workload w, int s)
{
	struct mrow *row = &m->rows[w][s];
	const struct msys *sys = &msystems[s];
	m->p.system = sys->system;
	m->p.mode = sys->mode ? sys->mode : m->fuse_mode;
	m->p.opts = sys->peer ? NULL : m->fuse_opts;
	row->r.config = m->p.mode;
	if (sys->peer && !m->b->peers) {
		snprintf(row->status, sizeof row->status, "skipped: --peers not given");
		return;
	}
	rp_peer_why(m->self, sys->system, row->status, sizeof row->status);
	if (row->status[0])
		return;
	fsb_progress(m->b, "%s on %s (%s): mkfs and mount", row->r.workload, sys->system, m->p.mode);
	if (rp_peer_mount(&m->p, row->status, sizeof row->status)) {
		if (!sys->peer) { /* nostall itself must run: a failure, not a skip */
			char why[sizeof row->status];
			snprintf(why, sizeof why, "%s", row->status + strlen("skipped: "));
			snprintf(row->status, sizeof row->status, "failed: %.180s", why);
		}
		return;
	}
	if (!stop_sig)
		mworkloads[w](m, row);
	fsb_progress(m->b, "%s on %s (%s): unmount", row->r.workload, sys->system, m->p.mode);
	if (!m->p.mounted && stop_sig && dir_is_mounted(m->p.dir))
		m->p.mounted = true; /* the mount command was killed after mounting */
	rp_peer_umount(&m->p);
	if (m->p.mounted && !row->status[0])
		snprintf(row->status, sizeof row->status, "failed: could not unmount %.120s", m->p.dir);
}

/* -o for nostall-fuse: its data= picks the mode (default ordered, the
 * kernel's default and the mode of the targets), the rest goes to
 * `nostall mount -o`. */
static void fuse_opts_split(struct mctx *m, const char *user)
{
	snprintf(m->fuse_mode, sizeof m->fuse_mode, "ordered");
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
}

int fsb_mount_run(struct fsb *b, const bool *selected, const char *image)
{
	struct mctx *m = calloc(1, sizeof *m);
	if (!m) {
		fprintf(stderr, "nostall bench fs: out of memory\n");
		return 1;
	}
	m->b = b;
	ssize_t sl = readlink("/proc/self/exe", m->self, sizeof m->self - 1);
	m->self[sl > 0 ? sl : 0] = 0;
	fuse_opts_split(m, b->user_opts);
	m->p.self = m->self;
	snprintf(m->p.image, sizeof m->p.image, "%s", image);
	snprintf(m->p.dir, sizeof m->p.dir, "/tmp/nostall-benchfs-mnt.XXXXXX");
	int ret = 0;
	if (!mkdtemp(m->p.dir)) {
		fprintf(stderr, "nostall bench fs: mkdtemp %s: %s\n", m->p.dir, strerror(errno));
		free(m);
		return 1;
	}
	if (!b->json)
		printf("bench fs --mount: %llu MiB filesystems on %s (host disk), fresh per system and workload;\n"
		       "caches made cold before reads and stats (nostall: mount restarted; all: sync + drop_caches)\n",
		       (unsigned long long)(b->sz.fs_bytes / FSB_MiB), image);
	stop_sig = 0;
	stop_handlers(true);
	for (int w = 0; w < FSB_NWORKLOADS && !stop_sig; w++) {
		if (!selected[w])
			continue;
		m->ran[w] = true;
		for (int s = 0; s < NSYS; s++) {
			m->rows[w][s].r.workload = fsb_workload_name((enum fsb_workload)w);
			m->rows[w][s].system = msystems[s].system;
			if (stop_sig)
				snprintf(m->rows[w][s].status, sizeof m->rows[w][s].status,
					 "failed: interrupted by signal %d", (int)stop_sig);
			else
				run_one(m, (enum fsb_workload)w, s);
		}
		fprintf(stderr, "\r%82s\r", "");
		if (m->rows[w][0].status[0])
			ret = 1; /* nostall itself must run */
		for (int s = 0; b->json && s < NSYS; s++)
			print_json_row(b, &m->rows[w][s]);
		if (!b->json)
			print_table(b, m->rows[w], mnotes[w]);
		fflush(stdout);
	}
	print_targets(m);
	if (dir_is_mounted(m->p.dir)) { /* a signal between a mount and its record */
		m->p.mounted = true;
		rp_peer_umount(&m->p);
	}
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
