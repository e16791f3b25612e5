/* fsx: command line, the run loop, delta-debugging minimization of a
 * failing run and replay of scripts (docs/exerciser.md).
 *
 * Exit status: 0 no mismatch, 1 a mismatch (the replay script is written),
 * 2 a usage or set-up error.
 */
#include "fsx.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct oplog {
	struct fsx_op *v;
	size_t n, cap;
};

static void log_push(struct oplog *l, const struct fsx_op *op)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		if (!l->v) {
			fprintf(stderr, "fsx: out of memory for the op log\n");
			exit(2);
		}
	}
	l->v[l->n++] = *op;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (end == s || *end) {
		fprintf(stderr, "fsx: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

/* Run ops from a fresh work root; true when a mismatch shows (msg set,
 * *at = the op it showed at, n when only the final full check saw it). */
static bool trial(const struct fsx_cfg *cfg, const struct fsx_op *ops, size_t n, char *msg, size_t msglen,
		  size_t *at)
{
	struct fsx_state *s = malloc(sizeof *s);
	if (!s || state_start(s, cfg)) {
		fprintf(stderr, "fsx: %s\n", s ? s->msg : "out of memory");
		exit(2);
	}
	bool failed = false;
	size_t k;
	for (k = 0; k < n && !failed; k++)
		failed = state_exec(s, &ops[k]) != 0;
	if (failed)
		k--;
	else
		failed = state_check_all(s) != 0;
	if (failed) {
		snprintf(msg, msglen, "%s", s->msg);
		*at = k;
	}
	state_end(s);
	free(s);
	return failed;
}

struct minimize {
	const struct fsx_cfg *cfg;
	unsigned max_trials, trials;
	double deadline;
	char msg[1024];
	bool reproduced;
};

/* ddmin over the op log (complements of 1/gran of it, gran growing to one
 * op): keeps every reduction that still fails, cut after the op the failure
 * shows at. Stops at the trial or time budget with the best so far. */
static void minimize(struct minimize *mz, struct oplog *l)
{
	struct fsx_op *cand = malloc((l->n ? l->n : 1) * sizeof *cand);
	size_t at;
	if (!cand) {
		fprintf(stderr, "fsx: out of memory\n");
		exit(2);
	}
	mz->trials = 1;
	mz->reproduced = trial(mz->cfg, l->v, l->n, mz->msg, sizeof mz->msg, &at);
	if (!mz->reproduced) {
		free(cand);
		return;
	}
	if (at < l->n)
		l->n = at + 1;
	size_t gran = 2;
	while (l->n >= 2 && mz->trials < mz->max_trials && now_s() < mz->deadline) {
		size_t chunk = (l->n + gran - 1) / gran;
		bool reduced = false;
		for (size_t start = 0; start < l->n && mz->trials < mz->max_trials; start += chunk) {
			size_t end = start + chunk < l->n ? start + chunk : l->n, m = 0;
			for (size_t k = 0; k < l->n; k++)
				if (k < start || k >= end)
					cand[m++] = l->v[k];
			char msg[1024];
			mz->trials++;
			if (m && trial(mz->cfg, cand, m, msg, sizeof msg, &at)) {
				memcpy(l->v, cand, m * sizeof *cand);
				l->n = at < m ? at + 1 : m;
				snprintf(mz->msg, sizeof mz->msg, "%s", msg);
				gran = gran > 2 ? gran - 1 : 2;
				reduced = true;
				break;
			}
		}
		if (!reduced) {
			if (gran >= l->n)
				break;
			gran = gran * 2 < l->n ? gran * 2 : l->n;
		}
	}
	free(cand);
}

static int write_script(const char *path, const struct oplog *l, const char *header)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "fsx: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "%s", header);
	char line[256];
	for (size_t k = 0; k < l->n; k++) {
		op_format(&l->v[k], line, sizeof line);
		fprintf(f, "%s\n", line);
	}
	return fclose(f) ? -1 : 0;
}

static int replay(struct fsx_cfg *cfg, const char *script)
{
	FILE *f = fopen(script, "r");
	if (!f) {
		fprintf(stderr, "fsx: cannot read %s: %s\n", script, strerror(errno));
		return 2;
	}
	struct oplog l = {0};
	char line[512];
	unsigned lineno = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		char *p = line + strspn(line, " \t");
		if (*p == '#' || *p == '\n' || !*p)
			continue;
		struct fsx_op op;
		if (op_parse(p, &op)) {
			fprintf(stderr, "fsx: %s:%u: cannot parse: %s", script, lineno, p);
			fclose(f);
			return 2;
		}
		/* Buffers must fit the script's sizes. */
		uint64_t end = op.kind == OP_TRUNC ? op.off : op.off + op.len;
		if (end > cfg->max_size)
			cfg->max_size = end;
		if (op.len > cfg->max_io)
			cfg->max_io = op.len;
		log_push(&l, &op);
	}
	fclose(f);
	char msg[1024];
	size_t at;
	printf("fsx: replaying %zu ops from %s in %s\n", l.n, script, cfg->dir);
	int rc = 0;
	if (trial(cfg, l.v, l.n, msg, sizeof msg, &at)) {
		printf("fsx: MISMATCH at op %zu of the script: %s\n", at + 1, msg);
		rc = 1;
	} else {
		printf("fsx: replay: no mismatch\n");
	}
	free(l.v);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fsx [-n OPS] [-S SEED] [-l MAXSIZE] [-w MAXIO] [-c CHECK_EVERY] [-o REPLAY]\n"
		"           [-M TRIALS] [-T SECONDS] [-X N[:HOW]] [-N] [-R] [-q] [-v] DIR\n"
		"       fsx -r SCRIPT [-N] DIR\n"
		"  -X N[:HOW]  self-test: op N (or the next plain write after it) is done on the\n"
		"              filesystem but not in the model (HOW 0 write, 1 truncate, 2 unlink);\n"
		"              the run must then fail and write a short replay script\n");
	exit(2);
}

struct run_opts {
	uint64_t nops, seed;
	const char *out;
	long inject_at;
	int inject_how;
	unsigned max_trials;
	double max_seconds;
	bool quiet;
};

/* The self-test's wrong op: a plain write (by name, at least 16 bytes) to
 * a file with data, so that each kind of wrong op changes something. */
static bool inject_here(const struct fsx_model *m, const struct fsx_op *op)
{
	if (op->kind != OP_WRITE || op->t.slot || op->len < 16)
		return false;
	int i = model_target_ino(m, &op->t);
	return i >= 0 && m->ino[i].size > 1;
}

static int run(const struct fsx_cfg *cfg, const struct run_opts *ro)
{
	struct fsx_state *s = malloc(sizeof *s);
	struct oplog l = {0};
	struct fsx_rng rng = {ro->seed};
	if (!s || state_start(s, cfg)) {
		fprintf(stderr, "fsx: %s\n", s ? s->msg : "out of memory");
		return 2;
	}
	printf("fsx: seed %" PRIu64 ", %" PRIu64 " ops, max size %" PRIu64 ", max io %" PRIu64
	       ", full check every %u, in %s\n",
	       ro->seed, ro->nops, cfg->max_size, cfg->max_io, cfg->check_every, s->root);
	fflush(stdout);
	bool failed = false, injected = false;
	uint64_t i;
	for (i = 0; i < ro->nops && !failed; i++) {
		struct fsx_op op;
		char line[256];
		op_generate(&rng, &s->m, cfg, &op);
		if (ro->inject_at >= 0 && !injected && i >= (uint64_t)ro->inject_at && inject_here(&s->m, &op)) {
			op.kind = OP_BADWRITE;
			op.flag = ro->inject_how;
			injected = true;
			printf("fsx: self-test: op %" PRIu64 " is wrong on purpose (how=%d)\n", i + 1, op.flag);
		}
		log_push(&l, &op);
		if (cfg->verbose) {
			op_format(&op, line, sizeof line);
			printf("%" PRIu64 ": %s\n", i + 1, line);
		}
		failed = state_exec(s, &op) != 0;
		if (!failed && (i + 1) % cfg->check_every == 0)
			failed = state_check_all(s) != 0;
		if (!ro->quiet && ro->nops >= 100000 && (i + 1) % (ro->nops / 10) == 0) {
			printf("fsx: %" PRIu64 " ops\n", i + 1);
			fflush(stdout);
		}
	}
	if (!failed) {
		failed = state_check_all(s) != 0;
		i = l.n;
	}
	char first[1024];
	snprintf(first, sizeof first, "%s", s->msg);
	if (!ro->quiet) {
		uint64_t ok = 0, err = 0;
		for (int k = 0; k < OP_NKINDS; k++)
			ok += s->ok[k], err += s->err[k];
		printf("fsx: %" PRIu64 " ops succeeded, %" PRIu64 " failed as the model expected (ENOENT, EEXIST, ...)\n",
		       ok, err);
	}
	state_end(s);
	free(s);
	if (!failed) {
		free(l.v);
		if (ro->inject_at >= 0 && !injected) {
			fprintf(stderr, "fsx: self-test: no op to make wrong after op %ld\n", ro->inject_at);
			return 2;
		}
		printf("fsx: %" PRIu64 " ops, no mismatch (seed %" PRIu64 ")\n", ro->nops, ro->seed);
		return 0;
	}
	printf("fsx: MISMATCH at op %" PRIu64 " (seed %" PRIu64 "): %s\n", i, ro->seed, first);
	fflush(stdout);
	struct minimize mz = {.cfg = cfg, .max_trials = ro->max_trials, .deadline = now_s() + ro->max_seconds};
	size_t orig = l.n;
	minimize(&mz, &l);
	char header[4096];
	snprintf(header, sizeof header,
		 "# fsx replay script (docs/exerciser.md)\n"
		 "# seed %" PRIu64 ": mismatch at op %" PRIu64 ": %s\n"
		 "# %s: %zu of %zu ops after %u trial runs\n"
		 "# last mismatch: %s\n"
		 "# replay: fsx -r THIS_FILE DIR\n",
		 ro->seed, i, first,
		 mz.reproduced ? "minimized" : "NOT reproduced on a fresh run; the whole log", l.n, orig,
		 mz.trials, mz.reproduced ? mz.msg : "-");
	char defpath[64];
	snprintf(defpath, sizeof defpath, "fsx-%" PRIu64 ".replay", ro->seed);
	const char *out = ro->out ? ro->out : defpath;
	if (write_script(out, &l, header) == 0)
		printf("fsx: %s replay script (%zu ops) written to %s\n",
		       mz.reproduced ? "minimized" : "unminimized", l.n, out);
	free(l.v);
	return 1;
}

int main(int argc, char **argv)
{
	struct fsx_cfg cfg = {.max_size = 256 << 10, .max_io = 64 << 10, .check_every = 200};
	struct run_opts ro = {.nops = 10000, .inject_at = -1, .max_trials = 400, .max_seconds = 300};
	const char *script = NULL;
	bool have_seed = false;
	int c;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "n:S:l:w:c:o:r:M:T:X:NRqv")) != -1) {
		switch (c) {
		case 'n': ro.nops = strtoull(optarg, NULL, 10); break;
		case 'S': ro.seed = strtoull(optarg, NULL, 10); have_seed = true; break;
		case 'l': cfg.max_size = parse_size(optarg); break;
		case 'w': cfg.max_io = parse_size(optarg); break;
		case 'c': cfg.check_every = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'o': ro.out = optarg; break;
		case 'r': script = optarg; break;
		case 'M': ro.max_trials = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'T': ro.max_seconds = strtod(optarg, NULL); break;
		case 'X': {
			char *colon;
			ro.inject_at = strtol(optarg, &colon, 10);
			ro.inject_how = *colon == ':' ? atoi(colon + 1) : 0;
			if (ro.inject_at < 0 || ro.inject_how < 0 || ro.inject_how > 2)
				usage();
			break;
		}
		case 'N': cfg.no_mmap = true; break;
		case 'R': cfg.no_rename2 = true; break;
		case 'q': ro.quiet = true; break;
		case 'v': cfg.verbose = true; break;
		default: usage();
		}
	}
	if (optind != argc - 1 || !cfg.check_every || cfg.max_size < 16 || !cfg.max_io)
		usage();
	cfg.dir = argv[optind];
	if (cfg.max_io > cfg.max_size)
		cfg.max_io = cfg.max_size;
	if (script)
		return replay(&cfg, script);
	if (!have_seed)
		ro.seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	return run(&cfg, &ro);
}
