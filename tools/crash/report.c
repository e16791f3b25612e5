/* crashtest reports (crash.h, docs/crashtest.md "Output"): the table per
 * data mode, the JSON objects, and kept failing states. */
#include "crash.h"

#include "dev/dev.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void sum_rows(const char *mode, const struct crash_row *rows, size_t n, struct crash_result *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < n; i++) {
		const struct crash_result *r = &rows[i].res;
		if (mode && strcmp(rows[i].job->mode, mode))
			continue;
		t->states += r->states;
		t->violating += r->violating;
		t->e2fsck_states += r->e2fsck_states;
		t->orphan_states += r->orphan_states;
		t->kernel_agrees += r->kernel_agrees;
		t->epoch_states += r->epoch_states;
		t->prefix_states += r->prefix_states;
		t->random_states += r->random_states;
		t->entries += r->entries;
		t->epochs += r->epochs;
		t->ops += r->ops;
		t->seconds += r->seconds;
		for (int k = 0; k < CK_NR; k++)
			t->by_kind[k] += r->by_kind[k];
		if (r->error && !t->error) {
			t->error = r->error;
			snprintf(t->errmsg, sizeof t->errmsg, "%s", r->errmsg);
		}
	}
}

/* The kind columns of this report (crash_kind_shown: a workload's own
 * kinds only when it ran), set by the two entry points before they print. */
static bool kind_col[CK_NR];
static void kind_cols(const char *mode, const struct crash_row *rows, size_t n)
{
	for (int k = 0; k < CK_NR; k++)
		kind_col[k] = crash_kind_shown((enum crash_kind)k, mode, rows, n);
}

static void row_print(FILE *out, const char *wl, const char *bs, const struct crash_result *r)
{
	fprintf(out, "%-15s %5s %7" PRIu64 " %6" PRIu64 " %6" PRIu64, wl, bs, r->states, r->e2fsck_states,
		r->orphan_states);
	for (int k = 0; k < CK_NR; k++)
		if (kind_col[k])
			fprintf(out, " %*" PRIu64, k == CK_RECOVERY ? 8 : (int)strlen(crash_kind_names[k]) < 6 ? 6
											   : (int)strlen(crash_kind_names[k]),
				r->by_kind[k]);
	fprintf(out, " %9" PRIu64 " %7.1f%s\n", r->violating, r->seconds, r->error ? "  ERROR" : "");
}

void crash_report_table(FILE *out, const char *mode, const char *opts, const struct crash_row *rows, size_t n)
{
	struct crash_result t;
	sum_rows(mode, rows, n, &t);
	kind_cols(mode, rows, n);
	char label[16 + CRASH_OPTS_MAX];
	crash_mode_label(mode, opts, label, sizeof label);
	fprintf(out, "\ndata=%s: %" PRIu64 " crash states checked (e2fsck oracle on %" PRIu64 "), %" PRIu64
		     " violating\n",
		label, t.states, t.e2fsck_states, t.violating);
	fprintf(out, "%-15s %5s %7s %6s %6s", "workload", "bs", "states", "e2fsck", "orphan");
	for (int k = 0; k < CK_NR; k++)
		if (kind_col[k])
			fprintf(out, " %*s", k == CK_RECOVERY ? 8 : (int)strlen(crash_kind_names[k]) < 6 ? 6
											 : (int)strlen(crash_kind_names[k]),
				k == CK_RECOVERY ? "recovery" : crash_kind_names[k]);
	fprintf(out, " %9s %7s\n", "violating", "cpu s");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].job->mode, mode))
			continue;
		char bs[16];
		snprintf(bs, sizeof bs, "%u", rows[i].job->bs);
		row_print(out, crash_wl_names[rows[i].job->wl], bs, &rows[i].res);
	}
	row_print(out, "total", "", &t);
	bool allowed_only = t.violating > 0;
	for (int k = 0; k < CK_NR; k++)
		if (t.by_kind[k] && !crash_kind_allowed(mode, (enum crash_kind)k))
			allowed_only = false;
	if (allowed_only)
		fprintf(out, "(data=%s allows stale_data and too_long: documented, not a failure)\n", mode);
	unsigned shown = 0;
	for (size_t i = 0; i < n; i++) {
		const struct crash_result *r = &rows[i].res;
		if (strcmp(rows[i].job->mode, mode))
			continue;
		if (r->error)
			fprintf(out, "  error: %s bs=%u %s: %s\n", label, rows[i].job->bs, crash_wl_names[rows[i].job->wl],
				r->errmsg);
		for (unsigned k = 0; k < r->nwhy && shown < 12; k++, shown++)
			fprintf(out, "  %s\n", r->why[k]);
	}
	/* not violations, but shown: nothing is hidden */
	if (!t.kernel_agrees)
		return;
	fprintf(out, "%" PRIu64 " state%s where e2fsck's orphan cleanup differs and the kernel's agrees with "
		     "nostall (e2fsck_differs_kernel_agrees, not violations):\n",
		t.kernel_agrees, t.kernel_agrees == 1 ? "" : "s");
	shown = 0;
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; !strcmp(rows[i].job->mode, mode) && k < rows[i].res.nkwhy && shown < 12; k++, shown++)
			fprintf(out, "  %s\n", rows[i].res.kwhy[k]);
}

/* "options" only when -o was given: without it the line is what it was
 * before the option existed. (main.c lets no '"' or '\\' into opts.) */
static void json_obj(FILE *out, const char *mode, const char *workload, const char *opts,
		     const struct crash_job *j, const struct crash_result *t, double seconds)
{
	fprintf(out, "{\"mode\":\"%s\",", mode);
	if (opts && *opts)
		fprintf(out, "\"options\":\"%s\",", opts);
	/* "fs" (and "features") only for another filesystem than the default
	 * ext3: the default line stays as it was */
	if (j && ((j->fs[0] && strcmp(j->fs, "ext3")) || j->features[0])) {
		fprintf(out, "\"fs\":\"%s\",", j->fs[0] ? j->fs : "ext3");
		if (j->features[0])
			fprintf(out, "\"features\":\"%s\",", j->features);
	}
	fprintf(out, "\"workload\":\"%s\",\"states\":%" PRIu64 ",\"violations\":%" PRIu64 ",\"by_kind\":{", workload,
		t->states, t->violating);
	for (int k = 0; k < CK_NR; k++)
		if (kind_col[k])
			fprintf(out, "%s\"%s\":%" PRIu64, k ? "," : "", crash_kind_names[k], t->by_kind[k]);
	fprintf(out, "},\"seconds\":%.1f,\"e2fsck_states\":%" PRIu64 ",\"orphan_states\":%" PRIu64
		     ",\"epoch_states\":%" PRIu64 ",\"prefix_states\":%" PRIu64 ",\"random_states\":%" PRIu64
		     ",\"states_per_second\":%.1f,\"errors\":%d,\"ops\":%" PRIu64
		     ",\"e2fsck_differs_kernel_agrees\":%" PRIu64 "}",
		seconds, t->e2fsck_states, t->orphan_states, t->epoch_states, t->prefix_states, t->random_states,
		seconds > 0 ? (double)t->states / seconds : 0.0, t->error ? 1 : 0, t->ops, t->kernel_agrees);
}

void crash_report_json(FILE *out, const char *mode, const char *label, const char *workload, const char *opts,
		       const struct crash_row *rows, size_t n, double seconds)
{
	struct crash_result t;
	sum_rows(mode, rows, n, &t);
	kind_cols(mode, rows, n);
	json_obj(out, label, workload, opts, n ? rows[0].job : NULL, &t, seconds);
	fputc('\n', out);
}

/* ------------------------------------------------------------ kept states */

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int outfd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (outfd < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	static char buf[1 << 16];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(outfd, buf, (size_t)n) != n) {
			rc = -EIO;
			break;
		}
	if (n < 0)
		rc = -errno;
	close(in);
	close(outfd);
	return rc;
}

static int write_text(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[900];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "crashtest: %s: %s", path, strerror(errno));
	fputs(text, f);
	int rc = fclose(f) ? -EIO : 0;
	if (!rc && mode)
		chmod(path, mode);
	return rc;
}

int crash_keep_state(const struct crash_job *j, const char *logpath, const struct crash_state *s,
		     struct dev *crash_dev, const struct crash_verdict *v, unsigned k)
{
	char dir[700], path[900];
	mkdir(j->keep, 0755);
	/* The options in the name too: runs with and without -o into one
	 * DIR keep apart ('/' of an option's value cannot go in a name). */
	char label[16 + CRASH_OPTS_MAX];
	crash_mode_label(j->mode, j->opts, label, sizeof label);
	for (char *c = label; *c; c++)
		if (*c == '/')
			*c = '_';
	/* ... and the filesystem, when not the default ext3 */
	bool other_fs = (j->fs[0] && strcmp(j->fs, "ext3")) || j->features[0];
	snprintf(dir, sizeof dir, "%s/%s%s%s-%u-%s-s%" PRIu64 "-%u", j->keep, other_fs ? (j->fs[0] ? j->fs : "ext3") : "",
		 other_fs ? (j->features[0] ? "+features-" : "-") : "", label, j->bs, crash_wl_names[j->wl], j->seed, k);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return err_set(-errno, "crashtest: mkdir %s: %s", dir, strerror(errno));
	/* options= last and only when given: job.txt of older kept states
	 * (without it) reads the same (job.c crash_replay). */
	char text[800], fsw[32 + CRASH_OPTS_MAX];
	crash_fs_words(j, fsw, sizeof fsw);
	snprintf(text, sizeof text, "mode=%s block-size=%u workload=%s seed=%" PRIu64 "%s%s%s\n", j->mode, j->bs,
		 crash_wl_names[j->wl], j->seed, j->opts[0] ? " options=" : "", j->opts, fsw);
	int rc = write_text(dir, "job.txt", text, 0);
	size_t slen = 128 + (size_t)s->nsel;
	char *st = malloc(slen + 1);
	if (!st)
		return -ENOMEM;
	if (!rc)
		rc = crash_state_format(s, st, slen);
	if (!rc) {
		strcat(st, "\n");
		rc = write_text(dir, "state.txt", st, 0);
	}
	free(st);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/rec.log", dir);
	if ((rc = copy_file(logpath, path)))
		return err_set(rc, "crashtest: copying the recording to %s", path);
	snprintf(path, sizeof path, "%s/crash.img", dir);
	if ((rc = crash_dev_save(crash_dev, path)))
		return rc;
	snprintf(path, sizeof path, "%s/verdict.txt", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "crashtest: %s: %s", path, strerror(errno));
	for (int i = 0; i < CK_NR; i++)
		if (v->bad[i])
			fprintf(f, "%s: %s\n", crash_kind_names[i], v->why[i]);
	fclose(f);
	rc = write_text(dir, "replay.sh",
			"#!/bin/sh\n# Re-check this crash state (crash.img is the state before recovery).\n"
			"exec \"${NOSTALL:-nostall}\" crashtest --replay \"$(dirname \"$0\")\"\n",
			0755);
	if (rc)
		return rc;
	/* a regression case for tests/crash-regress/ (docs/crashtest.md) */
	snprintf(path, sizeof path, "%s/corpus.txt", j->keep);
	f = fopen(path, "a");
	if (!f)
		return err_set(-errno, "crashtest: %s: %s", path, strerror(errno));
	fprintf(f, "mode=%s%s%s workload=%s seed=%" PRIu64 " block-size=%u states=%u%s expect=clean # found:",
		j->mode, j->opts[0] ? " options=" : "", j->opts, crash_wl_names[j->wl], j->seed, j->bs, j->budget, fsw);
	for (int i = 0; i < CK_NR; i++)
		if (v->bad[i])
			fprintf(f, " %s", crash_kind_names[i]);
	fprintf(f, " (%s)\n", dir);
	fclose(f);
	return 0;
}
