/* nostall crashtest: the command line (docs/crashtest.md, man/nostall.1).
 *
 *   nostall crashtest [--mode M] [--workload W] [--states N] [--seed S]
 *                     [--block-size B] [-o OPTS] [--keep DIR] [--json]
 *                     [--jobs N] [--fsck-every N] [--quiet]
 *   nostall crashtest --replay DIR       re-check one kept state
 *   nostall crashtest --corpus DIR       run the regression cases (DIR/NAME.case)
 *
 * Jobs (mode x block size x workload) run in forked worker processes, as
 * many at once as --jobs; each reports progress and its result over a
 * pipe (fixed-size messages, written atomically). Exit status: 0 when no
 * violation (or, for data=writeback, only the kinds it is documented to
 * allow), 1 on a violation or a failure of the tool, 2 on a usage error.
 */
#include "crash.h"

#include "../common/cliopt.h"
#include "../common/cmds.h"
#include "util/err.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* data=guarded (the build default, docs/write-guarded.md) is in the
 * default mode list, first. */
static const bool crash_guarded_default = true;

static const char *const all_modes[] = { "guarded", "journal", "ordered", "writeback" };

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ options */

struct opts {
	const char *modes[4];
	size_t nmodes;
	enum crash_wl wls[WL_NR];
	size_t nwls;
	unsigned bss[3];
	size_t nbss;
	unsigned states, jobs, fsck_every;
	uint64_t seed;
	const char *keep, *replay, *corpus;
	const char *mount_opts; /* -o: "" when not given */
	const char *fs, *features; /* --fs, --features: "" when not given */
	bool json, quiet, events;
};

static const struct cliopt_cmd crash_cmd;

/* The one line of a usage error: an option's callback returns it (the
 * parser adds the help); bad_usage adds it itself. */
static int bad_line(const char *msg, const char *arg)
{
	fprintf(stderr, "nostall crashtest: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	return 2;
}

static int bad_usage(const char *msg, const char *arg)
{
	bad_line(msg, arg);
	cliopt_help(&crash_cmd, stderr);
	return 2;
}

/* -o OPTS (also a corpus case's options=): NULL when usable, or why not.
 * Kept states and corpus lines store them as one space-separated word and
 * the JSON prints them unescaped, hence the characters refused; the data
 * mode is --mode's (the oracle's rules follow it). Whether the filesystem
 * takes them is the mount's to say (crash_opts_try). */
static const char *mount_opts_bad(const char *s)
{
	if (!*s)
		return "empty -o";
	if (strlen(s) >= CRASH_OPTS_MAX)
		return "-o too long";
	for (const char *c = s; *c; c++)
		if (!isgraph((unsigned char)*c) || *c == '"' || *c == '\\' || *c == '#')
			return "-o: no spaces, quotes, backslashes or '#'";
	for (const char *t = s;; t++) {
		size_t n = strcspn(t, ",");
		if (!n)
			return "-o: an empty option";
		if (strcspn(t, "=,") == 4 && !strncmp(t, "data", 4))
			return "-o: the data mode is --mode's, not an option";
		t += n;
		if (!*t)
			return NULL;
	}
}

/* A comma-separated list of names, or "all", into idx[] (at most max):
 * each name's index by lookup (-1: unknown). */
static int parse_names(const char *s, int (*lookup)(const char *), int max, int *idx, size_t *n,
		       const char *what)
{
	char buf[256], msg[32];
	snprintf(buf, sizeof buf, "%s", s);
	*n = 0;
	for (char *sv, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		if (!strcmp(t, "all")) {
			for (int i = 0; i < max; i++)
				idx[i] = i;
			*n = (size_t)max;
			return 0;
		}
		int i = lookup(t);
		if (i < 0 || *n == (size_t)max) {
			snprintf(msg, sizeof msg, "unknown %s", what);
			return bad_line(msg, t);
		}
		idx[(*n)++] = i;
	}
	snprintf(msg, sizeof msg, "no %s", what);
	return *n ? 0 : bad_line(msg, s);
}

static int mode_index(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, all_modes[i]))
			return i;
	return -1;
}

static int parse_modes(void *ctx, const struct cliopt *opt, const char *s)
{
	struct opts *o = ctx;
	int idx[4];
	int rc = parse_names(s, mode_index, 4, idx, &o->nmodes, "data mode");
	for (size_t i = 0; !rc && i < o->nmodes; i++)
		o->modes[i] = all_modes[idx[i]];
	return rc;
}

static int parse_wls(void *ctx, const struct cliopt *opt, const char *s)
{
	struct opts *o = ctx;
	int idx[WL_NR];
	int rc = parse_names(s, crash_wl_parse, WL_NR, idx, &o->nwls, "workload");
	for (size_t i = 0; !rc && i < o->nwls; i++)
		o->wls[i] = (enum crash_wl)idx[i];
	return rc;
}

static int parse_bss(void *ctx, const struct cliopt *opt, const char *s)
{
	struct opts *o = ctx;
	char buf[64];
	snprintf(buf, sizeof buf, "%s", s);
	o->nbss = 0;
	for (char *sv, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		unsigned long v = strtoul(t, NULL, 10);
		if ((v != 1024 && v != 2048 && v != 4096) || o->nbss == 3)
			return bad_line("block size must be 1024, 2048 or 4096", t);
		o->bss[o->nbss++] = (unsigned)v;
	}
	return o->nbss ? 0 : bad_line("no block size", s);
}

static bool parse_num(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return *s && !*end && !errno;
}

/* --states, --seed, --jobs, --fsck-every: a number within the option's
 * bounds (states, jobs: not 0). */
static int parse_count(void *ctx, const struct cliopt *opt, const char *arg)
{
	struct opts *o = ctx;
	uint64_t v;
	char what[32];
	snprintf(what, sizeof what, "bad --%s", opt->name);
	bool ok = parse_num(arg, &v);
	if (!strcmp(opt->name, "states") && ok && v && v <= 100000000)
		o->states = (unsigned)v;
	else if (!strcmp(opt->name, "seed") && ok)
		o->seed = v;
	else if (!strcmp(opt->name, "jobs") && ok && v && v <= 64)
		o->jobs = (unsigned)v;
	else if (!strcmp(opt->name, "fsck-every") && ok && v <= 1000000)
		o->fsck_every = (unsigned)v;
	else
		return bad_line(what, arg);
	return 0;
}

static int parse_mount_opts(void *ctx, const struct cliopt *opt, const char *arg)
{
	const char *why = mount_opts_bad(arg);
	if (why)
		return bad_line(why, *arg ? arg : NULL);
	((struct opts *)ctx)->mount_opts = arg;
	return 0;
}

/* --fs TYPE / --features LIST (also a corpus case's fs= and features=):
 * NULL when mkfs makes that set, or why not (the words go into job.txt,
 * corpus lines and the JSON unquoted: letters, digits, '_', '^', ','). */
static const char *fs_bad(const char *type, const char *features)
{
	if (strlen(type) >= CRASH_FS_MAX || strlen(features) >= CRASH_OPTS_MAX)
		return "--fs or --features too long";
	for (const char *c = features; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("_^,", *c))
			return "--features: a comma list of feature names, '^' before one removes it";
	int rc = crash_fs_check(type, features);
	return rc ? err_last(rc) : NULL;
}

static int parse_fs(void *ctx, const struct cliopt *opt, const char *arg)
{
	struct opts *o = ctx;
	if (!strcmp(opt->name, "fs"))
		o->fs = arg;
	else
		o->features = arg;
	return 0;
}

static const struct cliopt crash_opts[] = {
	{ "mode", 0, "M[,M]", "guarded journal ordered writeback, or all (default: all four,\n"
			      "guarded,journal,ordered,writeback)", CLIOPT_CALL(parse_modes) },
	{ "workload", 0, "W[,W]", "append overwrite create rename-replace truncate-write dirs links htree\n"
				  "random recovery eio-loop concurrent fsx fsstress, or all (default: all;\n"
				  "fsx and fsstress are long histories on an aged image)", CLIOPT_CALL(parse_wls) },
	{ "states", 0, "N", "crash states per data mode (default 10000), split over workloads and\n"
			    "block sizes", CLIOPT_CALL(parse_count) },
	{ "seed", 0, "S", "the random seed (default: from the time and pid)", CLIOPT_CALL(parse_count) },
	{ "block-size", 0, "B[,B]", "1024, 2048 or 4096 (default 1024,4096)", CLIOPT_CALL(parse_bss) },
	{ "options", 'o', "OPTS", "extra mount options of the recording mount (data=M,barrier=1,OPTS),\n"
				  "e.g. journal_async_commit; a mode that refuses them is an error (exit 2)",
	  CLIOPT_CALL(parse_mount_opts) },
	{ "fs", 0, "TYPE", "ext2, ext3 or ext4: the mkfs type of the base images (default ext3)",
	  CLIOPT_CALL(parse_fs) },
	{ "features", 0, "LIST", "mkfs -O edits of --fs's feature set (e.g. ^metadata_csum)", CLIOPT_CALL(parse_fs) },
	{ "keep", 0, "DIR", "keep the states that fail a check in DIR", CLIOPT_STR_AT(struct opts, keep) },
	{ "json", 0, NULL, "the summary as JSON", CLIOPT_FLAG_AT(struct opts, json) },
	{ "jobs", 0, "N", "worker processes at once (default: the CPUs, at most 4)", CLIOPT_CALL(parse_count) },
	{ "fsck-every", 0, "N", "e2fsck oracle on 1 in N states, and on every suspicious one\n"
				"(default 8; 1 all, 0 none)", CLIOPT_CALL(parse_count) },
	{ "quiet", 0, NULL, "no progress lines", CLIOPT_FLAG_AT(struct opts, quiet) },
	{ "replay", 0, "DIR", "re-check one kept state", CLIOPT_STR_AT(struct opts, replay) },
	{ "events", 0, NULL, "with --replay: the state's recorded events", CLIOPT_FLAG_AT(struct opts, events) },
	{ "corpus", 0, "DIR", "run the regression cases (DIR/NAME.case)", CLIOPT_STR_AT(struct opts, corpus) },
	{ 0 },
};

static const struct cliopt_cmd crash_cmd = {
	.prog = "nostall crashtest",
	.usage = "usage: nostall crashtest [--mode M[,M]] [--workload W[,W]] [--states N] [--seed S]\n"
		 "                         [--block-size B[,B]] [-o OPTS] [--keep DIR] [--json] [--jobs N]\n"
		 "                         [--fsck-every N] [--quiet] [--fs ext2|ext3|ext4] [--features LIST]\n"
		 "       nostall crashtest --replay DIR [--events] | --corpus DIR\n",
	.opts = crash_opts,
};

static int parse_args(struct opts *o, int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	*o = (struct opts){ .states = 10000, .fsck_every = 8, .jobs = cpus < 1 ? 1 : cpus > 4 ? 4 : (unsigned)cpus,
			    .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20), .mount_opts = "", .fs = "",
			    .features = "" };
	for (size_t i = 0; i < 4; i++)
		if (i > 0 || crash_guarded_default)
			o->modes[o->nmodes++] = all_modes[i];
	/* every workload, the long histories (fsx, fsstress: about three
	 * minutes of a default run on 2 CPUs) included */
	for (int i = 0; i < WL_NR; i++)
		o->wls[o->nwls++] = (enum crash_wl)i;
	o->bss[o->nbss++] = 1024;
	o->bss[o->nbss++] = 4096;
	int pos, rc = cliopt_parse(&crash_cmd, argc, argv, o, &pos);
	if (rc >= 0)
		return rc;
	const char *why = fs_bad(o->fs, o->features);
	if (why)
		return bad_line(why, NULL);
	/* A journal-less image recovers by e2fsck -fy, not a replay, and
	 * mounts without data=: the checker has neither yet. */
	if (!crash_fs_journal(o->fs, o->features)) {
		fprintf(stderr, "nostall crashtest: --fs %s%s%s: no journal; crash states of a journal-less "
				"filesystem (recovered by e2fsck -fy, mounted without data=) are not checked yet\n",
			*o->fs ? o->fs : "ext3", *o->features ? " --features " : "", o->features);
		return 1;
	}
	if ((*o->fs || *o->features) && (o->replay || o->corpus))
		return bad_usage("--fs/--features with --replay or --corpus (the state or case names its own)", NULL);
	crash_fs_set(o->fs, o->features);
	/* A kept state and a corpus case carry their own options: -o there
	 * would be ignored or contradict them. */
	if (*o->mount_opts && (o->replay || o->corpus))
		return bad_usage(o->replay ? "-o with --replay (the kept state's job.txt has its options)"
					   : "-o with --corpus (a case gives its own: options=OPTS)",
				 o->mount_opts);
	return -1;
}

/* ------------------------------------------------------------ workers */

struct run {
	struct crash_job *jobs;
	struct crash_row *rows;
	char **env;          /* per job: "NAME=VALUE" to set in its worker, or NULL */
	uint64_t *done;      /* states done per job */
	double *t0, *t1;     /* when each job started and ended (wall clock) */
	bool *have;          /* result received */
	size_t n;
	char tmp[256];
};

static const char *tmp_base(void)
{
	const char *t = getenv("TMPDIR");
	if (t && *t)
		return t;
	struct stat st;
	if (!stat("/dev/shm", &st) && S_ISDIR(st.st_mode) && !access("/dev/shm", W_OK))
		return "/dev/shm";
	return "/tmp";
}

static void child(struct run *r, size_t i, int fd)
{
	signal(SIGINT, SIG_DFL);
	if (r->env[i])
		putenv(r->env[i]);
	char dir[300];
	snprintf(dir, sizeof dir, "%s/job%zu", r->tmp, i);
	struct crash_job j = r->jobs[i];
	j.tmpdir = dir;
	j.progress_fd = fd;
	struct { struct crash_msg h; struct crash_result res; } msg;
	memset(&msg, 0, sizeof msg);
	if (mkdir(dir, 0700)) {
		msg.res.error = -errno;
		snprintf(msg.res.errmsg, sizeof msg.res.errmsg, "mkdir %.200s: %s", dir, strerror(errno));
	} else {
		crash_job_run(&j, &msg.res);
	}
	const char *files[] = { "crash.img", "nostall.img", "e2fsck.out", "rec.log" };
	char p[400];
	for (size_t k = 0; k < 4; k++) {
		snprintf(p, sizeof p, "%s/%s", dir, files[k]);
		unlink(p);
	}
	rmdir(dir);
	msg.h.type = 2;
	msg.h.job = (uint32_t)i;
	_Static_assert(sizeof msg <= 4096, "one atomic pipe write");
	ssize_t n = write(fd, &msg, sizeof msg);
	_exit(n == (ssize_t)sizeof msg ? 0 : 1);
}

static bool read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static void job_line(const struct crash_job *j, const struct crash_result *r)
{
	char label[16 + CRASH_OPTS_MAX];
	crash_mode_label(j->mode, j->opts, label, sizeof label);
	fprintf(stderr, "  %-9s %4u %-15s %6" PRIu64 " states %5" PRIu64 " e2fsck %4" PRIu64 " violating %6.1f s%s%s\n",
		label, j->bs, crash_wl_names[j->wl], r->states, r->e2fsck_states, r->violating, r->seconds,
		r->error ? "  ERROR: " : "", r->error ? r->errmsg : "");
}

/* Run every job, at most `par` at once. A line per finished job on stderr
 * (quiet: only those with violations; total == 0, the corpus: only errors). */
static void run_jobs(struct run *r, unsigned par, bool quiet, uint64_t total)
{
	struct { pid_t pid; int fd; size_t job; } w[64];
	size_t nw = 0, next = 0, finished = 0;
	double t0 = now_s(), last = t0;
	while (next < r->n || nw) {
		while (nw < par && next < r->n) {
			int p[2];
			if (pipe(p)) {
				perror("nostall crashtest: pipe");
				exit(1);
			}
			fflush(NULL);
			pid_t pid = fork();
			if (pid == 0) {
				close(p[0]);
				child(r, next, p[1]);
			}
			close(p[1]);
			if (pid < 0) {
				perror("nostall crashtest: fork");
				exit(1);
			}
			r->t0[next] = now_s();
			w[nw].pid = pid;
			w[nw].fd = p[0];
			w[nw++].job = next++;
		}
		struct pollfd pf[64];
		for (size_t i = 0; i < nw; i++)
			pf[i] = (struct pollfd){ .fd = w[i].fd, .events = POLLIN };
		int pr = poll(pf, nw, 1000);
		for (size_t i = 0; pr > 0 && i < nw; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			size_t jb = w[i].job;
			struct crash_msg h;
			if (read_full(w[i].fd, &h, sizeof h)) {
				if (h.type == 1)
					r->done[jb] = h.done;
				else if (h.type == 2 && read_full(w[i].fd, &r->rows[jb].res, sizeof r->rows[jb].res))
					r->have[jb] = true;
				continue;
			}
			/* end of the worker */
			close(w[i].fd);
			int st = 0;
			waitpid(w[i].pid, &st, 0);
			if (!r->have[jb]) {
				struct crash_result *res = &r->rows[jb].res;
				res->error = -EIO;
				snprintf(res->errmsg, sizeof res->errmsg, "the worker died (%s %d)",
					 WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			}
			r->done[jb] = r->rows[jb].res.states;
			r->t1[jb] = now_s();
			finished++;
			if (r->rows[jb].res.error || (!quiet && total) || (quiet && total && r->rows[jb].res.violating))
				job_line(&r->jobs[jb], &r->rows[jb].res);
			w[i] = w[--nw];
			pf[i] = pf[nw];
			i--;
		}
		double t = now_s();
		if (!quiet && total && t - last >= 5) {
			uint64_t done = 0, bad = 0;
			for (size_t i = 0; i < r->n; i++) {
				done += r->done[i];
				bad += r->rows[i].res.violating;
			}
			fprintf(stderr, "crashtest: %" PRIu64 "/%" PRIu64 " states, %.0f states/s, %zu/%zu jobs done, %" PRIu64
					" violating so far\n",
				done, total, (double)done / (t - t0), finished, r->n, bad);
			last = t;
		}
	}
}

/* ------------------------------------------------------------ runs */

static int run_free(struct run *r, int rc)
{
	rmdir(r->tmp);
	for (size_t i = 0; i < r->n; i++)
		free(r->env[i]);
	free(r->jobs);
	free(r->rows);
	free(r->env);
	free(r->done);
	free(r->have);
	free(r->t0);
	free(r->t1);
	return rc;
}

static int run_alloc(struct run *r, size_t n)
{
	memset(r, 0, sizeof *r);
	r->n = n;
	r->jobs = calloc(n, sizeof *r->jobs);
	r->rows = calloc(n, sizeof *r->rows);
	r->env = calloc(n, sizeof *r->env);
	r->done = calloc(n, sizeof *r->done);
	r->have = calloc(n, sizeof *r->have);
	r->t0 = calloc(n, sizeof *r->t0);
	r->t1 = calloc(n, sizeof *r->t1);
	snprintf(r->tmp, sizeof r->tmp, "%s/nostall-crash-XXXXXX", tmp_base());
	if (!r->jobs || !r->rows || !r->env || !r->done || !r->have || !r->t0 || !r->t1 || !mkdtemp(r->tmp)) {
		fprintf(stderr, "nostall crashtest: cannot set up (%s)\n", strerror(errno ? errno : ENOMEM));
		r->tmp[0] = '\0';
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		r->rows[i].job = &r->jobs[i];
	return 0;
}

static void job_init(struct crash_job *j, const struct opts *o, const char *mode, unsigned bs, enum crash_wl wl,
		     unsigned budget)
{
	*j = (struct crash_job){ .bs = bs, .wl = wl, .seed = o->seed, .budget = budget, .fsck_every = o->fsck_every,
				 .keep = o->keep, .keep_max = 3, .progress_fd = -1 };
	snprintf(j->mode, sizeof j->mode, "%s", mode);
	snprintf(j->opts, sizeof j->opts, "%s", o->mount_opts);
	snprintf(j->fs, sizeof j->fs, "%s", o->fs);
	snprintf(j->features, sizeof j->features, "%s", o->features);
}

static void join_names(char *buf, size_t len, const char *const *names, size_t n)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", names[i]);
}

static int run_main(const struct opts *o)
{
	/* An option a mode refuses (journal_async_commit with ordered or
	 * guarded: it cannot order data before the commit) would fail every
	 * job of that mode at the recording's mount; say it once, before any
	 * job runs, with the mount's own reason. A typo is caught the same way. */
	for (size_t m = 0; *o->mount_opts && m < o->nmodes; m++) {
		int trc = crash_opts_try(o->modes[m], o->mount_opts, o->bss[0]);
		if (trc) {
			fprintf(stderr, "nostall crashtest: -o %s with --mode %s: %s\n", o->mount_opts, o->modes[m],
				err_last(trc));
			return 2;
		}
	}
	/* Another filesystem than ext3: one read-write mount per data mode
	 * and block size before any job, so a set the library does not write
	 * (yet) is refused once with the library's own message. */
	for (size_t m = 0; (*o->fs || *o->features) && m < o->nmodes; m++)
		for (size_t b = 0; b < o->nbss; b++) {
			int trc = crash_opts_try(o->modes[m], o->mount_opts, o->bss[b]);
			if (trc) {
				fprintf(stderr, "nostall crashtest: --fs %s%s%s, data=%s, %u-byte blocks: %s\n",
					*o->fs ? o->fs : "ext3", *o->features ? " --features " : "", o->features,
					o->modes[m], o->bss[b], err_last(trc));
				return 1;
			}
		}
	size_t per_mode = o->nwls * o->nbss;
	struct run r;
	if (run_alloc(&r, o->nmodes * per_mode))
		return run_free(&r, 1);
	unsigned budget = (unsigned)((o->states + per_mode - 1) / per_mode);
	size_t k = 0;
	for (size_t m = 0; m < o->nmodes; m++)
		for (size_t w = 0; w < o->nwls; w++)
			for (size_t b = 0; b < o->nbss; b++)
				job_init(&r.jobs[k++], o, o->modes[m], o->bss[b], o->wls[w], budget);
	if (!o->quiet)
		fprintf(stderr, "crashtest: seed %" PRIu64 " (rerun: --seed %" PRIu64 "), %zu jobs of %u states, %u at once, "
				"e2fsck on 1 in %u states and every suspicious one%s%s\n",
			o->seed, o->seed, r.n, budget, o->jobs, o->fsck_every, *o->mount_opts ? ", recording mount -o " : "",
			o->mount_opts);
	if (*o->fs || *o->features)
		printf("filesystem: %s%s%s (nostall mkfs -t %s%s%s)\n", *o->fs ? o->fs : "ext3",
		       *o->features ? ", features " : "", o->features, *o->fs ? o->fs : "ext3",
		       *o->features ? " -O " : "", o->features);
	double t0 = now_s();
	run_jobs(&r, o->jobs, o->quiet, (uint64_t)budget * r.n);
	double secs = now_s() - t0;
	int rc = 0;
	for (size_t m = 0; m < o->nmodes; m++)
		crash_report_table(stdout, o->modes[m], o->mount_opts, r.rows, r.n);
	for (size_t i = 0; i < r.n; i++) {
		const struct crash_result *res = &r.rows[i].res;
		if (res->error)
			rc = 1;
		for (int kd = 0; kd < CK_NR; kd++)
			if (res->by_kind[kd] && !crash_kind_allowed(r.jobs[i].mode, (enum crash_kind)kd))
				rc = 1;
	}
	uint64_t states = 0;
	for (size_t i = 0; i < r.n; i++)
		states += r.rows[i].res.states;
	printf("\n%" PRIu64 " states in %.1f s (%.0f states/s, %u workers)%s\n", states, secs,
	       secs > 0 ? (double)states / secs : 0.0, o->jobs, o->keep ? "" : "");
	if (o->keep)
		printf("failing states (if any) kept under %s, regression lines in %s/corpus.txt\n", o->keep, o->keep);
	char modes[64], wls[256];
	join_names(modes, sizeof modes, o->modes, o->nmodes);
	const char *wn[WL_NR] = { 0 };
	for (size_t i = 0; i < o->nwls; i++)
		wn[i] = crash_wl_names[o->wls[i]];
	join_names(wls, sizeof wls, wn, o->nwls);
	bool dflt = true; /* the default set is still named "all" in the JSON */
	for (size_t i = 0, d = 0; i < WL_NR; i++)
		if (!crash_wl_aged((enum crash_wl)i))
			dflt = dflt && d < o->nwls && o->wls[d++] == (enum crash_wl)i;
	if (o->nwls == WL_NR || (dflt && o->nwls == WL_NR - 2))
		snprintf(wls, sizeof wls, "all");
	if (o->json) {
		for (size_t m = 0; m < o->nmodes && o->nmodes > 1; m++) {
			/* a mode's seconds: from its first job's start to its last one's end */
			double a = 0, b = 0;
			for (size_t i = 0; i < r.n; i++) {
				if (strcmp(r.jobs[i].mode, o->modes[m]))
					continue;
				a = a == 0 || r.t0[i] < a ? r.t0[i] : a;
				b = r.t1[i] > b ? r.t1[i] : b;
			}
			crash_report_json(stdout, o->modes[m], o->modes[m], wls, o->mount_opts, r.rows, r.n, b - a);
		}
		crash_report_json(stdout, NULL, modes, wls, o->mount_opts, r.rows, r.n, secs);
	}
	fflush(stdout);
	return run_free(&r, rc);
}

/* ------------------------------------------------------------ corpus */

struct rcase {
	char name[256];
	char env[128];
	char expect[128];
};

/* "mode=ordered [options=OPTS] workload=append seed=7 block-size=1024
 *  states=300 [env=NAME=VALUE] expect=clean|KIND[,KIND]" ('#' starts a
 *  comment; options= as -o). */
static int case_parse(char *line, struct crash_job *j, struct rcase *c)
{
	char *hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	*j = (struct crash_job){ .budget = 300, .fsck_every = 8, .progress_fd = -1, .bs = 1024, .wl = WL_NR };
	snprintf(c->expect, sizeof c->expect, "clean");
	c->env[0] = '\0';
	int seen = 0;
	for (char *sv, *t = strtok_r(line, " \t\n", &sv); t; t = strtok_r(NULL, " \t\n", &sv)) {
		char *eq = strchr(t, '=');
		if (!eq)
			return -1;
		*eq++ = '\0';
		seen++;
		if (!strcmp(t, "mode"))
			snprintf(j->mode, sizeof j->mode, "%s", eq);
		else if (!strcmp(t, "options")) {
			if (mount_opts_bad(eq))
				return -1;
			snprintf(j->opts, sizeof j->opts, "%s", eq);
		}
		else if (!strcmp(t, "workload"))
			j->wl = crash_wl_parse(eq) < 0 ? WL_NR : (enum crash_wl)crash_wl_parse(eq);
		else if (!strcmp(t, "seed"))
			j->seed = strtoull(eq, NULL, 0);
		else if (!strcmp(t, "block-size"))
			j->bs = (unsigned)strtoul(eq, NULL, 10);
		else if (!strcmp(t, "states"))
			j->budget = (unsigned)strtoul(eq, NULL, 10);
		else if (!strcmp(t, "env"))
			snprintf(c->env, sizeof c->env, "%s", eq);
		else if (!strcmp(t, "fs") && strlen(eq) < sizeof j->fs)
			snprintf(j->fs, sizeof j->fs, "%s", eq);
		else if (!strcmp(t, "features") && strlen(eq) < sizeof j->features)
			snprintf(j->features, sizeof j->features, "%s", eq);
		else if (!strcmp(t, "expect"))
			snprintf(c->expect, sizeof c->expect, "%s", eq);
		else
			return -1;
	}
	if (!seen)
		return 0;
	if (fs_bad(j->fs, j->features))
		return -1;
	return j->mode[0] && j->wl != WL_NR && j->budget ? 1 : -1;
}

/* Did the result meet the expectation? expect=clean: no violation;
 * expect=K1[,K2...]: K1 was found, and no kind outside the list. */
static bool case_pass(const struct rcase *c, const struct crash_result *r)
{
	if (r->error)
		return false;
	if (!strcmp(c->expect, "clean"))
		return r->violating == 0;
	char first[32];
	snprintf(first, sizeof first, "%.*s", (int)strcspn(c->expect, ","), c->expect);
	bool found = false;
	for (int k = 0; k < CK_NR; k++) {
		if (!r->by_kind[k])
			continue;
		char list[140];
		snprintf(list, sizeof list, ",%s,", c->expect);
		char want[40];
		snprintf(want, sizeof want, ",%s,", crash_kind_names[k]);
		if (!strstr(list, want))
			return false; /* a kind not expected */
		found = found || !strcmp(first, crash_kind_names[k]);
	}
	return found;
}

static int run_corpus(const struct opts *o)
{
	DIR *d = opendir(o->corpus);
	if (!d) {
		fprintf(stderr, "nostall crashtest: %s: %s\n", o->corpus, strerror(errno));
		return 1;
	}
	struct crash_job jobs[256];
	struct rcase cases[256];
	size_t n = 0;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)) && n < 256) {
		size_t len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".case"))
			continue;
		char path[800], line[512];
		snprintf(path, sizeof path, "%s/%s", o->corpus, de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		for (unsigned ln = 1; fgets(line, sizeof line, f) && n < 256; ln++) {
			int pr = case_parse(line, &jobs[n], &cases[n]);
			if (pr < 0) {
				fprintf(stderr, "nostall crashtest: %s:%u: bad case line\n", path, ln);
				rc = 2;
			} else if (pr > 0) {
				snprintf(cases[n].name, sizeof cases[n].name, "%.200s:%u", de->d_name, ln);
				jobs[n].keep = o->keep;
				jobs[n].keep_max = 1;
				n++;
			}
		}
		fclose(f);
	}
	closedir(d);
	if (rc || !n) {
		if (!n)
			fprintf(stderr, "nostall crashtest: no *.case lines in %s\n", o->corpus);
		return rc ? rc : 1;
	}
	struct run r;
	if (run_alloc(&r, n))
		return run_free(&r, 1);
	for (size_t i = 0; i < n; i++) {
		r.jobs[i] = jobs[i];
		if (cases[i].env[0])
			r.env[i] = strdup(cases[i].env);
	}
	run_jobs(&r, o->jobs, true, 0);
	size_t failed = 0;
	for (size_t i = 0; i < n; i++) {
		const struct crash_result *res = &r.rows[i].res;
		bool ok = case_pass(&cases[i], res);
		failed += !ok;
		char label[16 + CRASH_OPTS_MAX];
		crash_mode_label(jobs[i].mode, jobs[i].opts, label, sizeof label);
		printf("%s %s: data=%s bs=%u %s seed=%" PRIu64 "%s%s: %" PRIu64 " states, %" PRIu64 " violating (",
		       ok ? "PASS" : "FAIL", cases[i].name, label, jobs[i].bs, crash_wl_names[jobs[i].wl],
		       jobs[i].seed, cases[i].env[0] ? " " : "", cases[i].env, res->states, res->violating);
		int shown = 0;
		for (int k = 0; k < CK_NR; k++)
			if (res->by_kind[k])
				printf("%s%s %" PRIu64, shown++ ? ", " : "", crash_kind_names[k], res->by_kind[k]);
		printf("%s), expected %s%s%s\n", shown ? "" : "none", cases[i].expect, res->error ? "; error: " : "",
		       res->error ? res->errmsg : "");
		if (!ok)
			for (unsigned k = 0; k < res->nwhy; k++)
				printf("  %s\n", res->why[k]);
	}
	printf("%zu of %zu regression cases passed\n", n - failed, n);
	return run_free(&r, failed ? 1 : 0);
}

int cmd_crashtest(int argc, char **argv)
{
	struct opts o;
	int rc = parse_args(&o, argc, argv);
	if (rc >= 0)
		return rc;
	if (o.replay) {
		rc = crash_replay(o.replay, o.events, stdout);
		if (rc < 0)
			fprintf(stderr, "nostall crashtest: %s\n", err_last(rc));
		return rc ? 1 : 0;
	}
	if (o.fsck_every && !crash_have_e2fsck()) {
		fprintf(stderr, "nostall crashtest: e2fsck not found on PATH (install e2fsprogs), or run with "
				"--fsck-every 0 for nostall's own checks only\n");
		return 1;
	}
	if (o.keep && mkdir(o.keep, 0755) && errno != EEXIST) {
		fprintf(stderr, "nostall crashtest: --keep %s: %s\n", o.keep, strerror(errno));
		return 1;
	}
	return o.corpus ? run_corpus(&o) : run_main(&o);
}
