/* The driver: a seeded run, replay of a script, and the minimizer (fsrun.h).
 *
 * A failing run prints the seed, the index of the first operation whose
 * results differ, the difference, and saves the operations so far as a
 * replay script. The minimizer (delta debugging, Zeller's ddmin) replays
 * subsets of the script on fresh targets, keeps any subset that still
 * fails (any mismatch counts) and cuts everything after the operation that
 * fails, until no chunk can be removed or the replay budget is spent. */
#include "fsrun.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void fsdrive_cfg_default(struct fsdrive_cfg *c)
{
	*c = (struct fsdrive_cfg){ .seed = 1, .nops = 5000, .check_every = 500,
				   .run = { .owner = true, .holes = true },
				   .minimize = true, .minimize_budget = 400 };
	fsgen_cfg_default(&c->gen);
	c->gen.root = geteuid() == 0;
}

uint64_t fsdrive_seed(void)
{
	const char *s = getenv("NOSTALL_SEED");
	if (s && *s)
		return strtoull(s, NULL, 0);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t st = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (uint64_t)getpid();
	return fsop_rand(&st) % 1000000000000ull; /* short enough to retype */
}

void fsdrive_cfg_env(struct fsdrive_cfg *c)
{
	const char *s = getenv("NOSTALL_SEED");
	if (s && *s)
		c->seed = strtoull(s, NULL, 0);
	if ((s = getenv("NOSTALL_FSOPS")) && *s)
		c->nops = (unsigned)strtoul(s, NULL, 0);
	if ((s = getenv("NOSTALL_FSWEIGHTS")) && *s && fsgen_cfg_weights(&c->gen, s))
		fprintf(c->out ? c->out : stderr, "fsmodel: bad NOSTALL_FSWEIGHTS '%s' (ignored)\n", s);
	if ((s = getenv("NOSTALL_FSVERBOSE")) && *s == '1')
		c->run.log = c->out ? c->out : stderr;
}

int fsdrive_replay(const struct fst_factory *f, const struct fsrun_cfg *rc, const struct fsop *ops,
		   size_t n, size_t *fail_index, char *msg, size_t msglen)
{
	struct fs_target *t;
	struct fsrun *r;
	int err = f->create(f->ctx, &t);
	if (err)
		return err;
	if ((err = fsrun_new(t, rc, &r))) {
		fst_destroy(t);
		return err;
	}
	int res = 0;
	size_t i = 0;
	for (; i < n && !res; i++)
		res = fsrun_apply(r, &ops[i]);
	if (!res)
		res = fsrun_checkpoint(r); /* the final compare counts as operation n */
	else
		i--;
	if (res) {
		*fail_index = i;
		snprintf(msg, msglen, "%s", fsrun_msg(r));
	}
	fsrun_free(r);
	fst_destroy(t);
	return res;
}

int fsdrive_replay_file(const struct fst_factory *f, const struct fsrun_cfg *rc, const char *path,
			FILE *out)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return -errno;
	struct fsop *ops = NULL;
	size_t n = 0, at = 0;
	char err[256], msg[4096];
	int res = fsop_script_read(fp, &ops, &n, err, sizeof err);
	fclose(fp);
	if (res) {
		fprintf(out, "fsmodel: %s: %s\n", path, err);
		return res;
	}
	res = fsdrive_replay(f, rc, ops, n, &at, msg, sizeof msg);
	if (res == 1)
		fprintf(out, "fsmodel: replay of %s (%zu operations): mismatch at #%zu:\n%s", path, n, at, msg);
	else if (res == 0)
		fprintf(out, "fsmodel: replay of %s (%zu operations): agree\n", path, n);
	for (size_t i = 0; i < n; i++)
		fsop_free(&ops[i]);
	free(ops);
	return res;
}

/* Replay the ops in keep (keep[i] true) and report the failing index in
 * terms of the kept list. */
static int try_subset(const struct fst_factory *f, const struct fsrun_cfg *rc,
		      const struct fsop *ops, size_t n, const bool *keep, size_t *fail_at)
{
	struct fsop *sub = fst_xcalloc(n, sizeof *sub);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i])
			sub[m++] = ops[i]; /* shallow: the strings stay owned by ops */
	char msg[256];
	int res = fsdrive_replay(f, rc, sub, m, fail_at, msg, sizeof msg);
	free(sub);
	return res;
}

/* Keep ops[i] where keep[i], and of those only the first `upto`. */
static size_t compact(struct fsop *ops, size_t n, const bool *keep, size_t upto)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] && m < upto)
			ops[m++] = ops[i];
		else
			fsop_free(&ops[i]);
	}
	memset(ops + m, 0, (n - m) * sizeof *ops); /* moved or freed */
	return m;
}

int fsdrive_minimize(const struct fst_factory *f, const struct fsrun_cfg *rc, struct fsop *ops,
		     size_t *n, unsigned budget)
{
	size_t len = *n, k = 2, fail_at;
	unsigned used = 0;
	/* replayed operations are the cost: long scripts get fewer tries */
	uint64_t ops_left = (uint64_t)budget * 2000;
	bool *keep = fst_xcalloc(len ? len : 1, sizeof *keep);
	while (len >= 2 && used < budget && ops_left >= len) {
		size_t chunk = (len + k - 1) / k;
		bool reduced = false;
		for (size_t start = 0; start < len && used < budget && ops_left >= len; start += chunk) {
			for (size_t i = 0; i < len; i++)
				keep[i] = i < start || i >= start + chunk;
			used++;
			ops_left -= len;
			int res = try_subset(f, rc, ops, len, keep, &fail_at);
			if (res < 0) {
				free(keep);
				return res;
			}
			if (res == 1) {
				len = compact(ops, len, keep, fail_at + 1);
				k = k > 2 ? k - 1 : 2;
				reduced = true;
				break;
			}
		}
		if (!reduced) {
			if (k >= len)
				break;
			k = 2 * k < len ? 2 * k : len;
		}
	}
	free(keep);
	*n = len;
	return 0;
}

/* ---- the random run ---- */

static void save_script(const struct fsdrive_cfg *c, const char *suffix, const struct fsop *ops,
			size_t n, const char *msg, char *path, size_t pathlen)
{
	const char *dir = c->script_dir ? c->script_dir : getenv("TMPDIR");
	snprintf(path, pathlen, "%s/fsmodel-%" PRIu64 "%s.ops", dir && *dir ? dir : "/tmp", c->seed,
		 suffix);
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(path, pathlen, "(could not write the script: %s)", strerror(errno));
		return;
	}
	fprintf(f, "# fsmodel replay script: seed %" PRIu64 ", %zu operations\n# ", c->seed, n);
	for (const char *p = msg; *p; p++)
		fputs(*p == '\n' && p[1] ? "\n# " : (char[2]){ *p, 0 }, f);
	fputc('\n', f);
	fsop_script_write(ops, n, f);
	fclose(f);
}

static void print_script(FILE *out, const struct fsop *ops, size_t n, size_t tail)
{
	size_t from = n > tail ? n - tail : 0;
	if (from)
		fprintf(out, "  ... (%zu earlier operations in the file)\n", from);
	for (size_t i = from; i < n; i++) {
		fprintf(out, "  %5zu  ", i);
		fsop_format(&ops[i], out);
	}
}

static void report(const struct fst_factory *f, const struct fsdrive_cfg *c, struct fsop *ops,
		   size_t n, struct fsdrive_result *res)
{
	FILE *out = c->out ? c->out : stderr;
	fprintf(out, "fsmodel: MISMATCH at operation #%zu (seed %" PRIu64 ", rerun with NOSTALL_SEED=%" PRIu64 ")\n%s",
		res->fail_index, c->seed, c->seed, res->msg);
	save_script(c, "", ops, n, res->msg, res->script, sizeof res->script);
	fprintf(out, "fsmodel: replay script (%zu operations): %s\n", n, res->script);
	print_script(out, ops, n, 25);
	if (!c->minimize)
		return;
	size_t m = n, first;
	char first_msg[256];
	const struct fsrun_cfg rcfg = { .owner = c->run.owner, .holes = c->run.holes };
	/* a replay must fail too (an end check of the caller is not replayed) */
	if (fsdrive_replay(f, &rcfg, ops, n, &first, first_msg, sizeof first_msg) != 1) {
		fprintf(out, "fsmodel: the script does not fail on replay: not minimized\n");
		return;
	}
	for (size_t i = first + 1; i < m; i++)
		fsop_free(&ops[i]);
	m = first + 1 < m ? first + 1 : m;
	int rc = fsdrive_minimize(f, &rcfg, ops, &m, c->minimize_budget ? c->minimize_budget : 400);
	if (rc < 0) {
		fprintf(out, "fsmodel: minimizer failed: %s\n", fst_errname(rc));
		return;
	}
	size_t at;
	char msg[4096] = "";
	if (fsdrive_replay(f, &rcfg, ops, m, &at, msg, sizeof msg) != 1) {
		fprintf(out, "fsmodel: the minimized script no longer fails (flaky target?)\n");
		return;
	}
	res->nops_min = m;
	save_script(c, "-min", ops, m, msg, res->script, sizeof res->script);
	fprintf(out, "fsmodel: minimized to %zu operations (%s), failing at #%zu:\n%s", m, res->script,
		at, msg);
	print_script(out, ops, m, 60);
}

int fsdrive_random(const struct fst_factory *f, const struct fsdrive_cfg *cfg,
		   struct fsdrive_result *res)
{
	FILE *out = cfg->out ? cfg->out : stderr;
	struct fs_target *t;
	struct fsrun *r;
	memset(res, 0, sizeof *res);
	int rc = f->create(f->ctx, &t);
	if (rc)
		return rc;
	if ((rc = fsrun_new(t, &cfg->run, &r))) {
		fst_destroy(t);
		return rc;
	}
	fprintf(out, "fsmodel: seed %" PRIu64 ", %u operations on target %s (rerun: NOSTALL_SEED=%" PRIu64 ")\n",
		cfg->seed, cfg->nops, t->name, cfg->seed);
	struct fsgen *g = fsgen_new(&cfg->gen, cfg->seed);
	size_t n = 0, cap = (size_t)cfg->nops + 2;
	struct fsop *ops = fst_xcalloc(cap, sizeof *ops);
	int bad = 0;
	unsigned ok[FSOP_NKINDS] = { 0 }, errs[FSOP_NKINDS] = { 0 }, skipped = 0;
	for (unsigned i = 0; i <= cfg->nops && !bad; i++) {
		struct fsop *op = &ops[n++];
		if (i == cfg->nops || (cfg->check_every && i && i % cfg->check_every == 0))
			*op = (struct fsop){ .kind = FSOP_CHECKPOINT };
		else
			fsgen_next(g, r, op);
		bad = fsrun_apply(r, op);
		int64_t last = fsrun_last_result(r);
		if (last == INT64_MIN)
			skipped++;
		else if (last < 0)
			errs[op->kind]++;
		else
			ok[op->kind]++;
	}
	if (!bad && cfg->at_end && cfg->at_end(cfg->at_end_ctx, r, t)) {
		bad = 1;
		fprintf(out, "fsmodel: the end check failed:\n");
	}
	if (bad) {
		res->failed = 1;
		res->fail_index = n - 1;
		snprintf(res->msg, sizeof res->msg, "%s", fsrun_msg(r));
	}
	fsrun_free(r);
	fst_destroy(t);
	fsgen_free(g);
	if (bad)
		report(f, cfg, ops, n, res);
	else {
		fprintf(out, "fsmodel: seed %" PRIu64 ": %u operations agree (ok/failed per kind:", cfg->seed,
			cfg->nops);
		for (int k = 0; k < FSOP_NKINDS; k++)
			if (ok[k] + errs[k])
				fprintf(out, " %s %u/%u", fsop_kind_name((enum fsop_kind)k), ok[k], errs[k]);
		fprintf(out, "; %u skipped)\n", skipped);
	}
	for (size_t i = 0; i < n; i++)
		fsop_free(&ops[i]);
	free(ops);
	return 0;
}
