/* bench repro: one run in a child process (see repro.h for why), the
 * parent's side of the line protocol, and a run's summaries.
 *
 * The library's child opens the device, makes a fresh filesystem and
 * mounts it (bench fs's fsb_env), runs the load and unmounts. A peer's
 * child is a command (`nostall load DIR WORKLOAD ...`) whose stdout is the
 * protocol. Either way the parent reads lines until EOF or the deadline;
 * at the deadline it kills the child. An operation begun and never ended
 * (B without S) becomes a censored sample: its time so far, a lower bound,
 * counted in `*_timeouts`.
 */
#include "repro.h"

#include "bench_fs.h"

#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_TIMEDOUT 3

/* ------------------------------------------------------------ run data */

void rp_run_metric(struct rp_run *r, const char *name, double v, const char *unit, unsigned samples)
{
	for (int i = 0; i < r->nm; i++)
		if (!strcmp(r->m[i].name, name)) {
			r->m[i].value = v;
			r->m[i].samples = samples;
			return;
		}
	if (r->nm == RP_METRICS_MAX)
		return;
	struct rp_metric *m = &r->m[r->nm++];
	snprintf(m->name, sizeof m->name, "%s", name);
	snprintf(m->unit, sizeof m->unit, "%s", unit);
	m->value = v;
	m->samples = samples;
}

double rp_run_get(const struct rp_run *r, const char *name)
{
	for (int i = 0; i < r->nm; i++)
		if (!strcmp(r->m[i].name, name))
			return r->m[i].value;
	return NAN;
}

struct rp_series *rp_run_series(struct rp_run *r, const char *name, bool create)
{
	for (int i = 0; i < r->ns; i++)
		if (!strcmp(r->s[i].name, name))
			return &r->s[i];
	if (!create || r->ns == RP_SERIES_MAX)
		return NULL;
	struct rp_series *s = &r->s[r->ns++];
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", name);
	s->pending_t = -1;
	return s;
}

static void series_add(struct rp_series *s, double t, double ms)
{
	if (s->n == s->cap) {
		unsigned cap = s->cap ? 2 * s->cap : 256;
		double *nt = realloc(s->t, cap * sizeof *nt);
		if (nt)
			s->t = nt;
		double *nm = realloc(s->ms, cap * sizeof *nm);
		if (nm)
			s->ms = nm;
		if (!nt || !nm)
			return; /* out of memory: the sample is dropped */
		s->cap = cap;
	}
	s->t[s->n] = t;
	s->ms[s->n++] = ms;
}

void rp_run_free(struct rp_run *r)
{
	for (int i = 0; i < r->ns; i++) {
		free(r->s[i].t);
		free(r->s[i].ms);
	}
	r->ns = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double *rp_series_sorted(const struct rp_series *s)
{
	if (!s->n)
		return NULL;
	double *v = malloc(s->n * sizeof *v);
	if (!v)
		return NULL;
	memcpy(v, s->ms, s->n * sizeof *v);
	qsort(v, s->n, sizeof *v, cmp_double);
	return v;
}

/* Nearest rank. */
double rp_quantile(const double *sorted, unsigned n, double q)
{
	if (!n)
		return NAN;
	unsigned i = (unsigned)ceil(q * n);
	return sorted[i ? i - 1 : 0];
}

static void summarize_values(struct rp_run *r, const char *prefix, double *v, unsigned n, unsigned censored)
{
	if (!n)
		return;
	qsort(v, n, sizeof *v, cmp_double);
	char name[48];
	static const struct {
		const char *suffix;
		double q;
	} qs[] = { { "p50_ms", 0.5 }, { "p99_ms", 0.99 }, { "max_ms", 1.0 } };
	for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
		snprintf(name, sizeof name, "%s_%s", prefix, qs[i].suffix);
		rp_run_metric(r, name, rp_quantile(v, n, qs[i].q), "ms", n);
	}
	snprintf(name, sizeof name, "%s_timeouts", prefix);
	rp_run_metric(r, name, censored, "count", n);
}

void rp_run_summarize(struct rp_run *r)
{
	unsigned all = 0, allcens = 0;
	double *probe = NULL;
	for (int i = 0; i < r->ns; i++) {
		struct rp_series *s = &r->s[i];
		char prefix[32];
		snprintf(prefix, sizeof prefix, "%s", s->name);
		for (char *c = prefix; *c; c++)
			if (*c == '-')
				*c = '_';
		double *v = rp_series_sorted(s);
		if (v)
			summarize_values(r, prefix, v, s->n, s->censored);
		free(v);
		if (!strncmp(s->name, "probe-", 6) && s->n) {
			double *np = realloc(probe, (all + s->n) * sizeof *np);
			if (!np)
				continue;
			probe = np;
			memcpy(probe + all, s->ms, s->n * sizeof *probe);
			all += s->n;
			allcens += s->censored;
		}
	}
	if (all)
		summarize_values(r, "probe", probe, all, allcens);
	free(probe);
	/* The Jens loop's total summarizes its iterations. */
	double n = rp_run_get(r, "fsyncs");
	for (int i = 0; i < r->nm && !isnan(n); i++)
		if (!strncmp(r->m[i].name, "total_s", 7) || !strcmp(r->m[i].name, "fsyncs"))
			r->m[i].samples = (unsigned)n;
}

/* ------------------------------------------------------------ protocol */

static void parse_line(struct rp_run *r, char *line)
{
	char kind = line[0];
	if (!kind || line[1] != ' ')
		return;
	char *rest = line + 2, *save = NULL;
	if (kind == 'N' || kind == 'E') {
		if (kind == 'E') {
			if (!r->status[0])
				snprintf(r->status, sizeof r->status, "failed: %s", rest);
			return;
		}
		size_t len = strlen(r->note);
		snprintf(r->note + len, sizeof r->note - len, "%s%s", len ? "; " : "", rest);
		return;
	}
	if (kind == 'Z') {
		/* Series times count from here (no samples come before it). */
		r->t0 = strtod(rest, NULL);
		return;
	}
	char *name = strtok_r(rest, " ", &save), *a = strtok_r(NULL, " ", &save), *b = strtok_r(NULL, " ", &save);
	if (!name || !a)
		return;
	if (kind == 'M') {
		rp_run_metric(r, name, strtod(a, NULL), b ? b : "", 1);
		return;
	}
	struct rp_series *s = rp_run_series(r, name, true);
	if (!s)
		return;
	double t = strtod(a, NULL) - r->t0;
	if (kind == 'B') {
		s->pending_t = t;
	} else if (kind == 'S' && b) {
		series_add(s, t, strtod(b, NULL));
		s->pending_t = -1;
	}
}

/* An operation begun and not ended by `end` counts as a sample of its time
 * so far: a lower bound, marked censored. */
static void censor_pending(struct rp_run *r, double end)
{
	for (int i = 0; i < r->ns; i++) {
		struct rp_series *s = &r->s[i];
		if (s->pending_t < 0)
			continue;
		series_add(s, end, (end - s->pending_t) * 1e3);
		s->censored++;
		s->pending_t = -1;
	}
}

/* ------------------------------------------------------------ children */

static int env_remount(void *ctx, struct nostall_fs **fs)
{
	struct fsb_env *e = ctx;
	int rc = fsb_env_remount(e);
	*fs = e->fs;
	return rc;
}

/* The library's child: fresh filesystem, the load, unmount. Exit status 0,
 * 1 (failed: an E line says why) or EXIT_TIMEDOUT (left mounted). */
static int lib_child(struct rp_run *r, const struct rp_exec *x, int fd)
{
	struct rp_out *o = rp_out_new(fd);
	if (!o)
		return 1;
	struct fsb b = { .spec = x->spec, .user_opts = r->opts[0] ? r->opts : NULL, .fs = x->fs,
			 .fs_features = x->features };
	b.sz.fs_bytes = x->fs_bytes;
	struct fsb_env e;
	int rc = fsb_env_open(&b, r->mode, &e);
	struct rp_fs *fs = NULL;
	if (!rc)
		rc = rp_fs_lib(e.fs, env_remount, &e, &fs);
	if (!rc) {
		rc = rp_load_run(fs, r->kind, &r->p, o);
		if (rc == -ETIMEDOUT) {
			rp_out_note(o, "%s", err_last(rc));
			_exit(EXIT_TIMEDOUT); /* stuck threads hold the mount */
		}
		rc = fsb_env_unmount(&e, rc);
		fsb_env_close(&e);
	}
	if (rc)
		rp_out_error(o, rc);
	rp_out_free(o);
	rp_fs_free(fs);
	return rc ? 1 : 0;
}

#define READ_PAUSE_NS (5 * 1000 * 1000)
#define READ_PIPE_BYTES (1 << 20)

static void read_lines(struct rp_run *r, int fd, double started, double deadline, pid_t pid)
{
	char buf[65536];
	size_t have = 0;
	for (;;) {
		double now = (double)clock_now_ns() / 1e9;
		if (now >= deadline) {
			kill(pid, SIGKILL);
			r->timed_out = true;
			snprintf(r->status, sizeof r->status, "timed out: killed after %.0f s", deadline - started);
			break;
		}
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int prc = poll(&pfd, 1, (int)((deadline - now) * 1000) + 1);
		if (prc < 0 && errno == EINTR)
			continue;
		if (prc <= 0)
			continue;
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		char *start = buf, *nl;
		while ((nl = strchr(start, '\n'))) {
			*nl = 0;
			parse_line(r, start);
			start = nl + 1;
		}
		have -= (size_t)(start - buf);
		memmove(buf, start, have);
		if (have == sizeof buf - 1)
			have = 0; /* a line too long for the protocol: dropped */
		/* Let lines gather before reading again: woken by every line, this
		 * process took a CPU 2,800 times a second beside a Jens loop
		 * through FUSE (two lines per fsync), on a 2-CPU machine where the
		 * daemon and its commit thread need both (`perf sched timehist`).
		 * The pipe (grown to READ_PIPE_BYTES where allowed, else 64 KiB)
		 * holds far more than a pause's worth of lines, so the child never
		 * blocks on it. */
		struct timespec pause = { 0, READ_PAUSE_NS };
		nanosleep(&pause, NULL);
	}
}

int rp_job_run(struct rp_run *r, const struct rp_exec *x)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return err_set(-errno, "pipe: %s", strerror(errno));
	fflush(NULL);
	r->t0 = (double)clock_now_ns() / 1e9;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return err_set(-errno, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(p[0]);
		if (x->argv) {
			if (dup2(p[1], STDOUT_FILENO) < 0)
				_exit(127);
			execv(x->argv[0], x->argv);
			dprintf(p[1], "E exec %s: %s\n", x->argv[0], strerror(errno));
			_exit(127);
		}
		_exit(lib_child(r, x, p[1]));
	}
	close(p[1]);
	(void)fcntl(p[0], F_SETPIPE_SZ, READ_PIPE_BYTES); /* best effort */
	read_lines(r, p[0], r->t0, r->t0 + x->deadline_s, pid);
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	double end = (double)clock_now_ns() / 1e9 - r->t0;
	bool stuck = WIFEXITED(st) && WEXITSTATUS(st) == EXIT_TIMEDOUT;
	if (stuck || r->timed_out) {
		r->timed_out = true;
		censor_pending(r, end);
		if (!r->status[0])
			snprintf(r->status, sizeof r->status, "timed out: an operation did not finish");
	} else if (!r->status[0] && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		snprintf(r->status, sizeof r->status, "failed: exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	rp_run_summarize(r);
	return 0;
}
