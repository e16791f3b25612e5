/* nostall bench fs: the front-end, each run's device and mount, and the
 * output (docs/bench-fs.md; the workloads are in bench_fs_load.c).
 *
 * Every run (one workload in one data mode) opens the device afresh,
 * measures its raw floor, makes a fresh filesystem with ext3_mkfs and mounts
 * it read-write through nostall_mount_dev with data=MODE and the user's -o.
 * Without --device the device is a file under /tmp, written with zeroes once
 * so that neither the raw floors nor the filesystem pay the host
 * filesystem's block allocation (a real disk has none), removed at the end.
 *
 * usage: nostall bench fs [--device SPEC] [-o OPTS] [--workload NAME[,NAME..]]
 *                         [--json] [--quick]
 *        nostall bench fs --mount [--peers [--host-cache]] ... (bench_fs_mount.c;
 *                         the workloads readback and manyfiles run there only)
 */
#include "bench_fs.h"
#include "../common/cliopt.h"
#include "../common/cmds.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "extfs/mkfs/mkfs.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FSB_DEFAULT_CACHE (64ull * FSB_MiB) /* the mount's cache= default */

void fsb_field(struct fsb_run *r, const char *name, double v, int decimals)
{
	if (r->nf < FSB_MAX_FIELDS)
		r->f[r->nf++] = (struct fsb_field){ name, v, decimals, false };
}

void fsb_field_json(struct fsb_run *r, const char *name, double v, int decimals)
{
	if (r->nf < FSB_MAX_FIELDS)
		r->f[r->nf++] = (struct fsb_field){ name, v, decimals, true };
}

void fsb_progress(const struct fsb *b, const char *fmt, ...)
{
	(void)b;
	char line[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\rbench fs: %-70.70s", line);
	fflush(stderr);
}

static void progress_done(void)
{
	fprintf(stderr, "\r%82s\r", "");
	fflush(stderr);
}

/* ------------------------------------------------------------ env */

bool fsb_fs_journal(const struct fsb *b)
{
	struct ext3_mkfs_params p = fsb_mkfs_params(b);
	return !p.features_set || (p.features[0] & EXT3_FEATURE_COMPAT_HAS_JOURNAL);
}

int fsb_env_dev_open(struct fsb *b, const char *mode, struct fsb_env *e)
{
	memset(e, 0, sizeof *e);
	e->b = b;
	/* a journal-less type (ext2) is mounted without data= (refused there,
	 * as by the kernel's ext4 driver): every mode's run is the same mount */
	if (!fsb_fs_journal(b))
		snprintf(e->opts, sizeof e->opts, "%s", b->user_opts ? b->user_opts : "");
	else
		snprintf(e->opts, sizeof e->opts, "data=%s%s%s", mode, b->user_opts ? "," : "",
			 b->user_opts ? b->user_opts : "");
	int rc = dev_open(b->spec, &e->dev);
	return rc < 0 ? err_wrap(rc, "device %s: ", b->spec) : 0;
}

struct ext3_mkfs_params fsb_mkfs_params(const struct fsb *b)
{
	struct ext3_mkfs_params p = { .size_bytes = b->sz.fs_bytes, .block_size = 4096 };
	/* the default ext3 stays the mkfs it was before --fs; a bad set was
	 * refused by the front-end (fs_list_check), mkfs would refuse it too */
	if ((b->fs && strcmp(b->fs, "ext3")) || (b->fs_features && *b->fs_features))
		(void)ext3_mkfs_params_fs_type(&p, b->fs, b->fs_features);
	return p;
}

/* Not closing the device on failure: the caller's fsb_env_close does. */
int fsb_env_fresh(struct fsb_env *e)
{
	struct ext3_mkfs_params p = fsb_mkfs_params(e->b);
	int rc = ext3_mkfs(e->dev, &p);
	if (rc < 0)
		return err_wrap(rc, "mkfs on %s", e->b->spec);
	rc = nostall_mount_dev(e->dev, e->opts, 0, &e->fs);
	return rc < 0 ? err_wrap(rc, "mount -o %s", e->opts) : 0;
}

int fsb_env_open(struct fsb *b, const char *mode, struct fsb_env *e)
{
	int rc = fsb_env_dev_open(b, mode, e);
	if (!rc && (rc = fsb_env_fresh(e)) < 0)
		fsb_env_close(e);
	return rc;
}

int fsb_env_remount(struct fsb_env *e)
{
	int rc = nostall_umount(e->fs);
	e->fs = NULL;
	if (rc < 0)
		return err_wrap(rc, "unmount: ");
	rc = nostall_mount_dev(e->dev, e->opts, 0, &e->fs);
	return rc < 0 ? err_wrap(rc, "remount -o %s: ", e->opts) : 0;
}

int fsb_env_unmount(struct fsb_env *e, int rc)
{
	if (!e->fs)
		return rc;
	int urc = nostall_umount(e->fs);
	e->fs = NULL;
	if (rc < 0)
		return rc;
	return urc < 0 ? err_wrap(urc, "unmount: ") : 0;
}

void fsb_env_close(struct fsb_env *e)
{
	if (e->fs)
		nostall_umount(e->fs);
	e->fs = NULL;
	dev_close(e->dev);
	e->dev = NULL;
}

/* ------------------------------------------------------------ sizes */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Sizes for a run: full on file: (the default run of every workload takes
 * about six minutes there, half of it fsync-under-stream's 600 samples per
 * mode), smaller on a simulated disk, whose modelled time is real
 * time (a 7200 rpm disk pays a revolution per synchronous write), tiny with
 * --quick (shape checks). The streamed file is at least 4x the cache, so
 * the memory bound is tested, unless the filesystem cannot hold it. */
static void fsb_sizes_pick(struct fsb *b)
{
	struct fsb_sizes *s = &b->sz;
	if (b->quick) {
		*s = (struct fsb_sizes){ .jens_n = 20, .stream_bytes = 8 * FSB_MiB, .creates_n = 100,
					 .creates_dirs = 2, .creates_bytes = 1024, .fus_idle = 3, .fus_seconds = 0.5,
					 .fus_file_bytes = 4 * FSB_MiB, .fs_bytes = 128 * FSB_MiB, .reps = 2,
					 .readback_bytes = 64 * FSB_MiB, .many_files = 20000 };
	} else if (b->sim) {
		*s = (struct fsb_sizes){ .jens_n = 200, .stream_bytes = 64 * FSB_MiB, .creates_n = 1000,
					 .creates_dirs = 4, .creates_bytes = 1024, .fus_idle = 10, .fus_seconds = 30,
					 .fus_file_bytes = 64 * FSB_MiB, .fs_bytes = 1024 * FSB_MiB, .reps = 3,
					 .readback_bytes = 64 * FSB_MiB, .many_files = 20000 };
	} else {
		*s = (struct fsb_sizes){ .jens_n = 2000, .stream_bytes = 1024 * FSB_MiB, .creates_n = 10000,
					 .creates_dirs = 10, .creates_bytes = 1024, .fus_idle = 20, .fus_seconds = 30,
					 .fus_file_bytes = 512 * FSB_MiB, .fs_bytes = 2048 * FSB_MiB, .reps = 5,
					 .readback_bytes = 1024 * FSB_MiB, .many_files = 200000 };
	}
	s->many_dirs = 40; /* issue 36: files of 100 bytes in 40 directories */
	s->many_bytes = 100;
	s->fs_bytes = min_u64(s->fs_bytes, b->dev_bytes) & ~(4096ull - 1);
	if (!b->quick && s->stream_bytes < 4 * b->cache_bytes)
		s->stream_bytes = 4 * b->cache_bytes;
	uint64_t room = s->fs_bytes / 2; /* leaves the journal and metadata room */
	s->stream_bytes = min_u64(s->stream_bytes, room) & ~(FSB_MiB - 1);
	s->fus_file_bytes = min_u64(s->fus_file_bytes, room / 2) & ~(FSB_MiB - 1);
	s->readback_bytes = min_u64(s->readback_bytes, room) & ~(FSB_MiB - 1);
	/* a block and an inode each, in three quarters of the filesystem */
	s->many_files = (unsigned)min_u64(s->many_files, s->fs_bytes / 4 * 3 / (4096 + 256));
}

/* The default device: a zero-filled file under /tmp (written, not sparse:
 * see the file comment). Also bench repro's default file: device. */
int fsb_tmpdev_make(char *path, size_t pathlen, uint64_t bytes)
{
	snprintf(path, pathlen, "/tmp/nostall-benchfs.XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return err_set(-errno, "mkstemp %s: %s", path, strerror(errno));
	char *zero = calloc(1, FSB_MiB);
	int rc = zero ? 0 : -ENOMEM;
	for (uint64_t off = 0; !rc && off < bytes; off += FSB_MiB) {
		if (pwrite(fd, zero, FSB_MiB, (off_t)off) != (ssize_t)FSB_MiB)
			rc = err_set(-errno ? -errno : -EIO, "writing %s: %s", path, strerror(errno));
	}
	if (!rc && fdatasync(fd))
		rc = err_set(-errno, "fdatasync %s: %s", path, strerror(errno));
	free(zero);
	close(fd);
	if (rc)
		unlink(path);
	return rc;
}

/* ------------------------------------------------------------ output */

static void print_value(const struct fsb_field *f, int width)
{
	if (isnan(f->value))
		printf(" %*s", width, "n/a");
	else
		printf(" %*.*f", width, f->decimals, f->value);
}

static void print_runs(const struct fsb *b, struct fsb_run *runs, int n)
{
	if (!n)
		return;
	if (b->json) {
		for (int i = 0; i < n; i++) {
			struct fsb_run *r = &runs[i];
			printf("{\"scenario\":\"%s\",\"device\":\"%s\",\"config\":\"%s\"", r->workload, b->spec, r->config);
			if (b->fs_given)
				printf(",\"fs\":\"%s\"%s%s%s", b->fs ? b->fs : "ext3",
				       b->fs_features ? ",\"features\":\"" : "", b->fs_features ? b->fs_features : "",
				       b->fs_features ? "\"" : "");
			for (int j = 0; j < r->nf; j++) {
				if (isnan(r->f[j].value))
					printf(",\"%s\":null", r->f[j].name);
				else
					printf(",\"%s\":%.*f", r->f[j].name, r->f[j].decimals, r->f[j].value);
			}
			printf("}\n");
		}
		fflush(stdout);
		return;
	}
	if (b->fs_given)
		printf("\n%s on %s (%s%s%s)\n", runs[0].workload, b->spec, b->fs ? b->fs : "ext3",
		       b->fs_features && *b->fs_features ? " -O " : "", b->fs_features ? b->fs_features : "");
	else
		printf("\n%s on %s\n", runs[0].workload, b->spec);
	int cw = 10; /* config column: the widest label */
	for (int i = 0; i < n; i++)
		if ((int)strlen(runs[i].config) > cw)
			cw = (int)strlen(runs[i].config);
	printf("  %-*s", cw, "config");
	for (int j = 0; j < runs[0].nf; j++)
		if (!runs[0].f[j].json_only)
			printf(" %*s", (int)(strlen(runs[0].f[j].name) < 8 ? 8 : strlen(runs[0].f[j].name)), runs[0].f[j].name);
	printf("\n");
	for (int i = 0; i < n; i++) {
		printf("  %-*s", cw, runs[i].config);
		for (int j = 0; j < runs[i].nf; j++)
			if (!runs[i].f[j].json_only)
				print_value(&runs[i].f[j], (int)(strlen(runs[0].f[j].name) < 8 ? 8 : strlen(runs[0].f[j].name)));
		printf("\n");
	}
	bool same = true;
	for (int i = 1; i < n; i++)
		same = same && !strcmp(runs[i].note, runs[0].note);
	for (int i = 0; i < (same ? 1 : n); i++) {
		if (runs[i].note[0])
			printf(same ? "  (%s%s)\n" : "  (%s: %s)\n", same ? "" : runs[i].config, runs[i].note);
	}
	for (int i = 0; i < n; i++)
		if (runs[i].extra[0])
			printf("  (%s: %s)\n", runs[i].config, runs[i].extra);
	fflush(stdout);
}

/* ------------------------------------------------------------ front-end */

typedef int (*workload_fn)(struct fsb *b, const char *mode, struct fsb_run *r);

static const struct workload {
	const char *name;
	workload_fn fn;
	const char *help;
} workloads[] = { /* in enum fsb_workload's order; fn NULL: --mount only */
	{ "jens", fsb_jens, "open(O_APPEND)/write a line/fsync/close loop beside 2 write+flush per fsync" },
	{ "stream", fsb_stream, "sequential write + fsync, remount, read back; beside raw device rates" },
	{ "creates", fsb_creates, "small files: create, stat (cold), unlink" },
	{ "fsync-under-stream", fsb_fsync_under_stream, "4 KiB append + fsync every 50 ms beside a streaming writer" },
	{ "readback", NULL, "--mount: 1 GiB write + fsync, drop_caches, read back in the same mount, then fresh" },
	{ "manyfiles", NULL, "--mount: 200,000 files of 100 B in 40 dirs, then find | wc -l; daemon peak RSS" },
};
#define NR_WORKLOADS (sizeof workloads / sizeof workloads[0])

const char *fsb_workload_name(enum fsb_workload w)
{
	return workloads[w].name;
}

struct fs_args {
	struct fsb b;
	const char *device, *only; /* --device, --workload */
	const char *fs_list;       /* --fs */
};

/* ------------------------------------------------------------ --fs list */

#define FS_MAX 3 /* ext2, ext3, ext4 */
#define CMP_FIGS 5

/* The closing comparison of a --fs list: per data mode and filesystem the
 * issue's figures (Jens, stream write and read % of raw, creates/s, fsync
 * p99 beside a streamer), NAN where a workload did not run. */
static const struct cmp_fig {
	enum fsb_workload w;
	const char *field, *label;
	bool lower_better;
} cmp_figs[CMP_FIGS] = {
	{ FSB_JENS, "x_floor", "jens x floor", true }, /* the device drifts between runs: its ratio */
	{ FSB_STREAM, "write_pct", "write % raw", false },
	{ FSB_STREAM, "read_pct", "read % raw", false },
	{ FSB_CREATES, "creates_per_s", "creates/s", false },
	{ FSB_FUS, "p99_ms", "fsync p99 ms", true },
};

struct fs_cmp {
	const char *fs[FS_MAX];
	int nfs;
	double v[FS_MAX][4][CMP_FIGS]; /* [fs][mode][figure] */
};

static void cmp_record(struct fs_cmp *c, int fsi, const char *workload, const struct fsb_run *runs, int n)
{
	for (int k = 0; k < CMP_FIGS; k++) {
		if (strcmp(fsb_workload_name(cmp_figs[k].w), workload))
			continue;
		for (int m = 0; m < n && m < 4; m++)
			for (int j = 0; j < runs[m].nf; j++)
				if (!strcmp(runs[m].f[j].name, cmp_figs[k].field))
					c->v[fsi][m][k] = runs[m].f[j].value;
	}
}

/* The table: a row per data mode and figure, a column per filesystem; with
 * ext3 in the list, each other filesystem's figure that is worse than
 * ext3's by more than 10 % is named at the end (measurement noise on a
 * shared host is of that order; the figures are there to judge). */
static void cmp_print(const struct fsb *b, const struct fs_cmp *c, const char **modes, int nmodes)
{
	if (b->json || c->nfs < 2)
		return;
	printf("\nfilesystems compared on %s (same device, one run; 4 KiB blocks)\n  %-10s %-13s", b->spec, "mode",
	       "figure");
	for (int f = 0; f < c->nfs; f++)
		printf(" %10s", c->fs[f]);
	printf("\n");
	int ref = -1;
	for (int f = 0; f < c->nfs; f++)
		if (!strcmp(c->fs[f], "ext3"))
			ref = f;
	char worse[512] = "";
	for (int m = 0; m < nmodes; m++)
		for (int k = 0; k < CMP_FIGS; k++) {
			bool any = false;
			for (int f = 0; f < c->nfs; f++)
				any = any || !isnan(c->v[f][m][k]);
			if (!any)
				continue;
			printf("  %-10s %-13s", modes[m], cmp_figs[k].label);
			for (int f = 0; f < c->nfs; f++) {
				double v = c->v[f][m][k];
				if (isnan(v))
					printf(" %10s", "n/a");
				else
					printf(" %10.*f", v >= 100 ? 0 : 2, v);
				double r = ref >= 0 ? c->v[ref][m][k] : NAN;
				if (f == ref || isnan(v) || isnan(r) || r <= 0)
					continue;
				bool bad = cmp_figs[k].lower_better ? v > r * 1.1 : v < r / 1.1;
				if (bad && strlen(worse) < sizeof worse - 64)
					snprintf(worse + strlen(worse), sizeof worse - strlen(worse), "%s%s %s %s",
						 worse[0] ? ", " : "", c->fs[f], modes[m], cmp_figs[k].label);
			}
			printf("\n");
		}
	if (ref >= 0)
		printf("  worse than ext3 by more than 10 %%: %s\n", worse[0] ? worse : "none");
	fflush(stdout);
}

/* --fs LIST into c->fs (each one checked as mkfs would make it with
 * --features); 0 or -EINVAL with the message in err_last(). */
static int fs_list_parse(const char *list, const char *features, struct fs_cmp *c)
{
	static char buf[64];
	snprintf(buf, sizeof buf, "%s", list ? list : "ext3");
	c->nfs = 0;
	for (char *sv, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		if (c->nfs == FS_MAX)
			return err_set(-EINVAL, "--fs: at most %d filesystems", FS_MAX);
		for (int f = 0; f < c->nfs; f++)
			if (!strcmp(c->fs[f], t))
				return err_set(-EINVAL, "--fs: %s twice", t);
		struct ext3_mkfs_params p = { 0 };
		int rc = ext3_mkfs_params_fs_type(&p, t, features);
		if (rc < 0)
			return rc;
		c->fs[c->nfs++] = t;
	}
	return c->nfs ? 0 : err_set(-EINVAL, "--fs: no filesystem type");
}

/* Can the library write this filesystem in every mode asked? A 64 MiB
 * mem: device made by fsb_mkfs_params and mounted read-write: the
 * library's own refusal (a feature it does not write yet, no journal)
 * before any figure is measured. */
static int fs_try(struct fsb *b, const char **modes, int nmodes)
{
	for (int i = 0; i < nmodes; i++) {
		struct fsb t = *b;
		t.sz.fs_bytes = 64 * FSB_MiB;
		t.spec = "mem:64M";
		struct fsb_env e;
		int rc = fsb_env_open(&t, modes[i], &e);
		if (rc < 0)
			return err_wrap(rc, "--fs %s, data=%s", b->fs ? b->fs : "ext3", modes[i]);
		rc = fsb_env_unmount(&e, 0);
		fsb_env_close(&e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int fs_seconds(void *ctx, const struct cliopt *o, const char *arg)
{
	struct fsb *b = &((struct fs_args *)ctx)->b;
	char *end;
	b->seconds = strtod(arg, &end);
	if (*end || !(b->seconds > 0 && b->seconds <= 3600))
		return cliopt_say("nostall bench fs", "--seconds wants 0 < S <= 3600, not '%s'", arg);
	return 0;
}

static int fs_reps(void *ctx, const struct cliopt *o, const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (*end || v < 1 || v > 99)
		return cliopt_say("nostall bench fs", "--reps wants 1..99, not '%s'", arg);
	((struct fs_args *)ctx)->b.reps = (unsigned)v;
	return 0;
}

static const struct cliopt fs_opts[] = {
	{ "device", 'd', "SPEC", "device (default: a 2 GiB file under /tmp, removed after); its\n"
				 "contents are destroyed (mkfs per run)", CLIOPT_STR_AT(struct fs_args, device) },
	{ NULL, 'o', "OPTS", "mount options for every run; data=MODE runs that mode only\n"
			     "(default: journal, ordered, writeback and guarded)",
	  CLIOPT_STR_AT(struct fs_args, b.user_opts) },
	{ "workload", 'w', "NAME[,NAME..]", "the workloads to run (default: all, below)",
	  CLIOPT_STR_AT(struct fs_args, only) },
	{ "json", 'j', NULL, "one JSON object per run on stdout", CLIOPT_FLAG_AT(struct fs_args, b.json) },
	{ "quick", 'q', NULL, "tiny sizes (checks, not measurements)", CLIOPT_FLAG_AT(struct fs_args, b.quick) },
	{ "seconds", 0, "S", "fsync-under-stream's measuring time (default 30; p99 is printed\n"
			     "from 100 samples on: until it has them, the run goes on, up\n"
			     "to 2.5 x S)", CLIOPT_CALL(fs_seconds) },
	{ "reps", 0, "N", "stream and jens: N repetitions, each beside its own raw floor,\n"
			  "fs and raw in alternating order; creates: N repetitions, each\n"
			  "on a fresh filesystem; medians (default 5, 3 on sim:, 2 with\n"
			  "--quick)", CLIOPT_CALL(fs_reps) },
	{ "mount", 0, NULL, "the workloads through `nostall mount` (FUSE), its default data\n"
			    "mode unless -o data=MODE; -o also takes the daemon's options\n"
			    "(docs/fuse.md, docs/bench-fs-mount.md)", CLIOPT_FLAG_AT(struct fs_args, b.mount) },
	{ "peers", 0, NULL, "with --mount, as root: also kernel ext3 (loop device with direct\n"
			    "I/O, data=ordered and writeback) and fuse2fs on the same image\n"
			    "file, with the host's dirty budget set to the nostall daemon's",
	  CLIOPT_FLAG_AT(struct fs_args, b.peers) },
	{ "fs", 0, "TYPE[,TYPE..]", "ext2, ext3 or ext4: the mkfs type (default ext3); a list runs\n"
				    "each on the same device, then a table with a column per type",
	  CLIOPT_STR_AT(struct fs_args, fs_list) },
	{ "features", 0, "LIST", "mkfs -O edits of every --fs type (e.g. ^metadata_csum)",
	  CLIOPT_STR_AT(struct fs_args, b.fs_features) },
	{ "host-cache", 0, NULL, "with --peers: also kernel ext3 on a loop device through the\n"
				 "host's page cache, the host's own dirty settings (extra rows)",
	  CLIOPT_FLAG_AT(struct fs_args, b.host_cache) },
	{ 0 },
};

static const struct cliopt_cmd fs_cmd = {
	.prog = "nostall bench fs",
	.usage = "usage: nostall bench fs [--device SPEC] [-o OPTS] [--workload NAME[,NAME..]] [--seconds S] [--reps N]\n"
		 "                        [--fs ext2|ext3|ext4[,..]] [--features LIST] [--json] [--quick]\n"
		 "       nostall bench fs --mount [--peers [--host-cache]] [--device file:PATH] [-o OPTS] [--workload ..]\n"
		 "                        [--json] [--quick]\n",
	.opts = fs_opts,
	.list = CLIOPT_LIST("workloads:", workloads, 19),
};

static int select_workloads(const char *only, bool mount, bool *selected)
{
	if (!only) {
		for (size_t i = 0; i < NR_WORKLOADS; i++)
			selected[i] = mount || workloads[i].fn;
		return 0;
	}
	char *copy = strdup(only), *save = NULL;
	if (!copy)
		return -ENOMEM;
	int rc = 0;
	for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < NR_WORKLOADS; i++)
			if (!strcmp(workloads[i].name, t))
				break;
		if (i == NR_WORKLOADS) {
			fprintf(stderr, "nostall bench fs: unknown workload '%s'\n", t);
			rc = -EINVAL;
		} else if (!mount && !workloads[i].fn) {
			fprintf(stderr, "nostall bench fs: workload '%s' runs with --mount only\n", t);
			rc = -EINVAL;
		} else {
			selected[i] = true;
		}
	}
	free(copy);
	return rc;
}

/* -o checked as a mount would; its data= (if any) and cache= picked out. */
static int parse_user_opts(struct fsb *b, const char **modes, int *nmodes)
{
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	int rc = ext3_mount_opts_parse(&o, b->user_opts);
	if (rc < 0) {
		ext3_mount_opts_release(&o);
		return rc;
	}
	if (o.ro) {
		ext3_mount_opts_release(&o);
		return err_set(-EINVAL, "the benchmark writes: 'ro' makes no sense here");
	}
	b->cache_bytes = o.cache_bytes ? o.cache_bytes : FSB_DEFAULT_CACHE;
	b->user_cache = o.cache_bytes != 0;
	if (o.data_mode) {
		modes[0] = ext3_data_mode_name(o.data_mode);
		*nmodes = 1;
	}
	ext3_mount_opts_release(&o);
	return 0;
}

/* fsync-under-stream's block-layer rows: with one data mode (-o data=M)
 * and no queue setting of the user's, the mode also runs with writeback
 * throttling off (wbt_lat_usec=0, the preset's default is on) and with
 * Linus' 2009 experiment instead (max_sectors_kb=64, throttling off), so
 * the toggle shows beside the smaller requests in one run. Only with one
 * mode: each row is another full run (30 s on sim, up to 75 s). */
#define FUS_VARIANTS 2
static const struct fus_variant {
	const char *opts; /* appended to -o */
} fus_variants[FUS_VARIANTS] = { { "wbt_lat_usec=0" }, { "max_sectors_kb=64,wbt_lat_usec=0" } };

static bool fus_variants_apply(const struct fsb *b, const struct workload *w, int nmodes)
{
	const char *o = b->user_opts ? b->user_opts : "";
	return w->fn == fsb_fsync_under_stream && nmodes == 1 && !b->quick && !strstr(o, "wbt_lat_usec") &&
	       !strstr(o, "max_sectors_kb") && !strstr(o, "preset");
}

static double run_value(const struct fsb_run *r, const char *name)
{
	for (int j = 0; j < r->nf; j++)
		if (!strcmp(r->f[j].name, name))
			return r->f[j].value;
	return NAN;
}

static int run_one(struct fsb *b, const struct workload *w, const char *mode, const char *config, struct fsb_run *r)
{
	memset(r, 0, sizeof *r);
	r->workload = w->name;
	r->config = config;
	fsb_progress(b, "%s (data=%s%s%s)...", w->name, mode, config == mode ? "" : ", ",
		     config == mode ? "" : config + strlen(mode) + 1);
	err_clear();
	int rc = w->fn(b, mode, r);
	if (rc < 0) {
		progress_done();
		fprintf(stderr, "nostall bench fs: %s (%s) on %s failed: %s\n", w->name, config, b->spec, err_last(rc));
	}
	return rc;
}

static int run_workload(struct fsb *b, const struct workload *w, const char **modes, int nmodes,
			struct fs_cmp *cmp, int fsi)
{
	struct fsb_run runs[4 + FUS_VARIANTS];
	char labels[FUS_VARIANTS][128], opts[FUS_VARIANTS][512];
	int n = nmodes;
	for (int i = 0; i < nmodes; i++)
		if (run_one(b, w, modes[i], modes[i], &runs[i]) < 0)
			return -1;
	if (fus_variants_apply(b, w, nmodes)) {
		for (int k = 0; k < FUS_VARIANTS; k++) {
			struct fsb v = *b;
			snprintf(labels[k], sizeof labels[k], "%s,%s", modes[0], fus_variants[k].opts);
			snprintf(opts[k], sizeof opts[k], "%s%s%s", b->user_opts ? b->user_opts : "",
				 b->user_opts ? "," : "", fus_variants[k].opts);
			v.user_opts = opts[k];
			if (run_one(&v, w, modes[0], labels[k], &runs[n]) < 0)
				return -1;
			n++;
		}
		/* The toggle's two figures: fsync p99 with it (the default) and
		 * the streamer's rate with it as a share of its rate without. */
		double on = run_value(&runs[0], "stream_mbps"), off = run_value(&runs[1], "stream_mbps");
		double pct = off > 0 ? 100.0 * on / off : NAN;
		fsb_field_json(&runs[0], "stream_pct_of_wbt_off", pct, 1);
		snprintf(runs[0].extra, sizeof runs[0].extra,
			 "writeback throttling (wbt_lat_usec, on by default): fsync p99 %.2f ms vs %.2f ms off; "
			 "streamer %.1f %% of its rate with it off",
			 run_value(&runs[0], "p99_ms"), run_value(&runs[1], "p99_ms"), pct);
	}
	progress_done();
	print_runs(b, runs, n);
	cmp_record(cmp, fsi, w->name, runs, nmodes);
	return 0;
}

/* A workload on several filesystem types: per data mode each type in
 * turn (reversed every other mode), so the figures one row of the
 * comparison puts side by side are measured minutes apart at most and the
 * host's drift falls on the types alike; creates, which has no device
 * floor to divide by, alternates within the mode, repetition by repetition
 * (fsb_creates_types). Then each type's table as run_workload prints it. */
static int run_workload_types(struct fsb *b, const struct workload *w, enum fsb_workload wi, const char **modes,
			      int nmodes, struct fs_cmp *cmp)
{
	struct fsb_run runs[FS_MAX][4];
	memset(runs, 0, sizeof runs);
	const char *keep = b->fs;
	int rc = 0;
	for (int i = 0; i < nmodes && !rc; i++) {
		for (int f = 0; f < cmp->nfs; f++) {
			runs[f][i].workload = w->name;
			runs[f][i].config = modes[i];
		}
		err_clear();
		if (wi == FSB_CREATES) {
			struct fsb_run per[FS_MAX];
			for (int f = 0; f < cmp->nfs; f++)
				per[f] = runs[f][i];
			fsb_progress(b, "%s (data=%s)...", w->name, modes[i]);
			rc = fsb_creates_types(b, modes[i], cmp->fs, cmp->nfs, per);
			for (int f = 0; f < cmp->nfs && !rc; f++)
				runs[f][i] = per[f];
		} else {
			for (int k = 0; k < cmp->nfs && !rc; k++) {
				int f = i % 2 ? cmp->nfs - 1 - k : k;
				b->fs = cmp->fs[f];
				fsb_progress(b, "%s (data=%s, %s)...", w->name, modes[i], b->fs ? b->fs : "ext3");
				rc = w->fn(b, modes[i], &runs[f][i]);
			}
		}
		if (rc < 0) {
			progress_done();
			fprintf(stderr, "nostall bench fs: %s (data=%s) on %s (%s) failed: %s\n", w->name, modes[i],
				b->spec, b->fs ? b->fs : "ext3", err_last(rc));
		}
	}
	b->fs = keep;
	if (rc < 0)
		return rc;
	progress_done();
	for (int f = 0; f < cmp->nfs; f++) {
		b->fs = cmp->fs[f];
		print_runs(b, runs[f], nmodes);
		cmp_record(cmp, f, w->name, runs[f], nmodes);
	}
	b->fs = keep;
	return 0;
}

static int bench_fs_run(struct fsb *b, const bool *selected, const char **modes, int nmodes, struct fs_cmp *cmp)
{
	struct dev *d;
	int rc = dev_open(b->spec, &d);
	if (rc < 0) {
		fprintf(stderr, "nostall bench fs: device '%s': %s\n", b->spec, err_last(rc));
		return 1;
	}
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	dev_close(d);
	b->dev_bytes = g.size_bytes;
	struct dev_spec_info si;
	b->sim = dev_spec_parse(b->spec, &si) == 0 && si.simulated;
	fsb_sizes_pick(b);
	if (b->seconds > 0)
		b->sz.fus_seconds = b->seconds;
	if (b->reps > 0)
		b->sz.reps = b->reps;
	if (b->sz.fs_bytes < 64 * FSB_MiB) {
		fprintf(stderr, "nostall bench fs: device '%s' is too small (want at least 64 MiB)\n", b->spec);
		return 1;
	}
	if (b->mount) {
		/* --mount: each filesystem's own tables, one after the other */
		int st = 0;
		for (int f = 0; f < cmp->nfs && !st; f++) {
			b->fs = cmp->fs[f];
			st = fsb_mount_run(b, selected, b->spec + strlen("file:"));
		}
		return st;
	}
	if (!b->json && b->sim && !b->quick)
		printf("simulated device: smaller sizes (fsyncs %u, stream %llu MiB, %u files, %.0f s under stream)\n",
		       b->sz.jens_n, (unsigned long long)(b->sz.stream_bytes / FSB_MiB), b->sz.creates_n,
		       b->sz.fus_seconds);
	for (int f = 0; f < cmp->nfs; f++) {
		b->fs = cmp->fs[f];
		if (b->fs_given && (rc = fs_try(b, modes, nmodes)) < 0) {
			fprintf(stderr, "nostall bench fs: %s\n", err_last(rc));
			return 1;
		}
	}
	/* workload by workload; with several types, each mode on each type in
	 * turn (run_workload_types): one figure's types measured close together
	 * on the same device */
	for (size_t i = 0; i < NR_WORKLOADS; i++) {
		if (selected[i] && workloads[i].fn && cmp->nfs > 1) {
			if (run_workload_types(b, &workloads[i], (enum fsb_workload)i, modes, nmodes, cmp) < 0)
				return 1;
			continue;
		}
		for (int f = 0; f < cmp->nfs; f++) {
			b->fs = cmp->fs[f];
			if (selected[i] && workloads[i].fn &&
			    run_workload(b, &workloads[i], modes, nmodes, cmp, f) < 0)
				return 1;
		}
	}
	cmp_print(b, cmp, modes, nmodes);
	return 0;
}

int bench_fs(int argc, char **argv)
{
	/* A fixed mmap threshold: glibc's dynamic one rises to the largest
	 * buffer freed (4 MiB read windows), after which MiB-sized transient
	 * buffers (writeback runs, merged requests) come from the heap and
	 * fragment it around the caches' memory: the second and third data
	 * modes of a run then peaked at 220-295 MiB instead of ~105 (cache=64M).
	 * A long-lived library user (a FUSE daemon) wants the same setting. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	struct fs_args a = { 0 };
	int pos, st = cliopt_parse(&fs_cmd, argc, argv, &a, &pos);
	if (st >= 0)
		return st;
	struct fsb b = a.b;
	const char *device = a.device, *only = a.only;
	struct fs_cmp cmp;
	for (int f = 0; f < FS_MAX; f++)
		for (int m = 0; m < 4; m++)
			for (int k = 0; k < CMP_FIGS; k++)
				cmp.v[f][m][k] = NAN;
	b.fs_given = a.fs_list || b.fs_features;
	if (fs_list_parse(a.fs_list, b.fs_features, &cmp) < 0) {
		fprintf(stderr, "nostall bench fs: %s\n", err_last(-EINVAL));
		return 2;
	}
	bool selected[NR_WORKLOADS] = { false };
	if (select_workloads(only, b.mount, selected) < 0) {
		cliopt_help(&fs_cmd, stderr);
		return 2;
	}
	const char *modes[4] = { "journal", "ordered", "writeback", "guarded" };
	int nmodes = 4;
	if (b.peers && !b.mount) {
		fprintf(stderr, "nostall bench fs: --peers needs --mount\n");
		return 2;
	}
	if (b.host_cache && !b.peers) {
		fprintf(stderr, "nostall bench fs: --host-cache needs --mount --peers\n");
		return 2;
	}
	struct dev_spec_info si;
	if (b.mount && device && (dev_spec_parse(device, &si) < 0 || si.kind != DEV_KIND_FILE)) {
		fprintf(stderr, "nostall bench fs: --mount needs a file: device (every system mounts the same image file)\n");
		return 2;
	}
	/* --mount: -o goes to `nostall mount` (daemon options too), which checks it */
	int rc = b.mount ? 0 : parse_user_opts(&b, modes, &nmodes);
	if (b.mount)
		b.cache_bytes = FSB_DEFAULT_CACHE;
	if (rc < 0) {
		fprintf(stderr, "nostall bench fs: -o %s: %s\n", b.user_opts, err_last(rc));
		return 2;
	}
	char tmppath[64] = "", tmpspec[80];
	if (device) {
		b.spec = device;
	} else {
		uint64_t bytes = (b.quick ? 128 : 2048) * FSB_MiB;
		fprintf(stderr, "bench fs: preparing a %llu MiB device file under /tmp...", (unsigned long long)(bytes / FSB_MiB));
		rc = fsb_tmpdev_make(tmppath, sizeof tmppath, bytes);
		progress_done();
		if (rc < 0) {
			fprintf(stderr, "nostall bench fs: %s\n", err_last(rc));
			return 1;
		}
		snprintf(tmpspec, sizeof tmpspec, "file:%s", tmppath);
		b.spec = tmpspec;
	}
	int ret = bench_fs_run(&b, selected, modes, nmodes, &cmp);
	if (tmppath[0])
		unlink(tmppath);
	return ret;
}
