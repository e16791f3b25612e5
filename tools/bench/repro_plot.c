/* bench repro: plots drawn by gnuplot from data files written here, under
 * OUT/plots: every run's series as TIME MS (timeline) and MS FRACTION
 * (CDF), the Jens loop's totals per era, and one gnuplot script.
 *
 *   timeline-eras.svg  fsync latency over time, ordered and writeback per preset
 *   timeline-modes.svg ... under 2.6.30 per mode (writeback, guarded,
 *                      journal), max_sectors_kb, and the peers
 *   cdf-eras.svg, cdf-modes.svg, cdf-atime.svg   the same runs' CDFs
 *   jens.svg           the Jens loop's total per era, idle and streaming
 *
 * Latency axes are logarithmic: the stalls span four decades.
 */
#include "repro.h"

#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum group { G_ERAS, G_MODES, G_ATIME, G_NONE };

static enum group group_of(const struct rp_run *r)
{
	if (!strcmp(r->workload, "atime"))
		return G_ATIME;
	bool fus = !strcmp(r->workload, "fsync-under-stream");
	bool era_mode = !strcmp(r->mode, "ordered") || !strcmp(r->mode, "writeback");
	if (fus && !strcmp(r->system, "nostall") && era_mode && strcmp(r->preset, "nostall"))
		return G_ERAS;
	if ((fus && (strcmp(r->preset, "2.6.29") && strcmp(r->preset, "2.6.30-rc1"))) ||
	    !strcmp(r->workload, "max-sectors"))
		return G_MODES;
	return G_NONE;
}

static void run_label(char *dst, size_t n, const struct rp_run *r)
{
	snprintf(dst, n, "%s %s %s %s", r->system, r->preset, r->mode, r->config);
}

/* One file per run: its series merged (atime's probe ops), time order for
 * the timeline, sorted for the CDF. */
static int data_write(const char *dir, int idx, const struct rp_run *r)
{
	unsigned n = 0;
	for (int i = 0; i < r->ns; i++)
		n += r->s[i].n;
	if (!n)
		return 0;
	double *t = malloc(n * sizeof *t), *ms = malloc(n * sizeof *ms);
	if (!t || !ms) {
		free(t);
		free(ms);
		return -ENOMEM;
	}
	unsigned k = 0;
	for (int i = 0; i < r->ns; i++)
		for (unsigned j = 0; j < r->s[i].n; j++, k++) {
			t[k] = r->s[i].t[j];
			ms[k] = r->s[i].ms[j];
		}
	char path[4300];
	snprintf(path, sizeof path, "%s/run%02d.dat", dir, idx);
	FILE *f = fopen(path, "w");
	int rc = f ? 0 : -errno;
	for (unsigned j = 0; f && j < n; j++)
		fprintf(f, "%.4f %.4f\n", t[j], ms[j]);
	if (f && fclose(f))
		rc = -EIO;
	struct rp_series all = { .ms = ms, .n = n };
	double *v = rc ? NULL : rp_series_sorted(&all);
	snprintf(path, sizeof path, "%s/run%02d.cdf", dir, idx);
	f = v ? fopen(path, "w") : NULL;
	for (unsigned j = 0; f && j < n; j++)
		fprintf(f, "%.4f %.5f\n", v[j], (double)(j + 1) / n);
	if (f && fclose(f))
		rc = -EIO;
	free(v);
	free(t);
	free(ms);
	return rc ? err_set(rc, "%s: %s", path, strerror(-rc)) : 1;
}

static void plot_group(FILE *gp, const struct rp_bench *b, const bool *has, enum group g, bool cdf,
		       const char *file, const char *title)
{
	int n = 0;
	for (int i = 0; i < b->nruns; i++)
		n += has[i] && group_of(&b->runs[i]) == g;
	if (!n)
		return;
	fprintf(gp, "set output '%s'\nset title '%s'\n", file, title);
	if (cdf)
		fprintf(gp, "set logscale x\nunset logscale y\nset xlabel 'latency (ms)'\nset ylabel 'fraction of operations'\n"
			    "set key bottom right\nset yrange [0:1]\nset xrange [*:*]\n");
	else
		fprintf(gp, "unset logscale x\nset logscale y\nset xlabel 'time since the measurement began (s)'\n"
			    "set ylabel 'latency (ms)'\nset key top left\nset yrange [*:*]\nset xrange [*:*]\n");
	fprintf(gp, "plot ");
	int k = 0;
	for (int i = 0; i < b->nruns; i++) {
		if (!has[i] || group_of(&b->runs[i]) != g)
			continue;
		char label[160];
		run_label(label, sizeof label, &b->runs[i]);
		fprintf(gp, "%s'run%02d.%s' using 1:2 with %s title '%s'", k++ ? ", \\\n     " : "", i, cdf ? "cdf" : "dat",
			cdf ? "steps" : "linespoints pt 7 ps 0.4", label);
	}
	fprintf(gp, "\n");
}

/* The Jens loop's total per preset: idle and beside a streamer. */
static int jens_write(FILE *gp, const char *dir, const struct rp_bench *b)
{
	static const char *const presets[] = { "2.6.29", "2.6.30-rc1", "2.6.30" };
	char path[4300];
	snprintf(path, sizeof path, "%s/jens.dat", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	int rows = 0;
	bool stream = false; /* --quick has no jens-stream: no empty bars */
	for (int p = 0; p < 3; p++) {
		double v[2] = { NAN, NAN };
		for (int i = 0; i < b->nruns; i++) {
			const struct rp_run *r = &b->runs[i];
			if (strcmp(r->workload, "jens") || strcmp(r->system, "nostall") || strcmp(r->preset, presets[p]))
				continue;
			double t = rp_run_get(r, "total_s");
			if (isnan(t))
				t = rp_run_get(r, "total_s_extrapolated");
			v[strcmp(r->config, "idle") != 0] = t;
		}
		if (isnan(v[0]) && isnan(v[1]))
			continue;
		stream |= !isnan(v[1]);
		fprintf(f, "%s %.4f %.4f\n", presets[p], isnan(v[0]) ? 0 : v[0], isnan(v[1]) ? 0 : v[1]);
		rows++;
	}
	fclose(f);
	if (rows)
		fprintf(gp, "set output 'jens.svg'\nset title 'Jens loop: fopen/fprintf/fsync/fclose (data=ordered)'\n"
			    "unset logscale x\nset logscale y\nset xlabel 'era preset'\nset ylabel 'total (s)'\n"
			    "set key top right\nset xrange [*:*]\nset yrange [*:*]\nset style data histogram\n"
			    "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
			    "plot 'jens.dat' using 2:xtic(1) title 'idle'%s\n",
			stream ? ", '' using 3 title 'beside a streamer'" : "");
	return 0;
}

static int gnuplot_run(const char *dir)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (chdir(dir))
			_exit(126);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execlp("gnuplot", "gnuplot", "plots.gp", (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return -ENOENT;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

int rp_plots_write(const struct rp_bench *b, char *why, size_t whylen)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/plots", b->out_dir);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(why, whylen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	bool *has = calloc((size_t)b->nruns + 1, sizeof *has);
	if (!has)
		return -ENOMEM;
	int rc = 0;
	for (int i = 0; i < b->nruns && rc >= 0; i++) {
		rc = data_write(dir, i, &b->runs[i]);
		has[i] = rc > 0;
	}
	char path[4300];
	snprintf(path, sizeof path, "%s/plots.gp", dir);
	FILE *gp = rc < 0 ? NULL : fopen(path, "w");
	if (gp) {
		fprintf(gp, "# bench repro's plots (run: cd plots && gnuplot plots.gp)\n"
			    "set terminal svg size 1000,600 dynamic noenhanced font 'sans,11' background rgb 'white'\n"
			    "set grid\nset encoding utf8\n");
		plot_group(gp, b, has, G_ERAS, false, "timeline-eras.svg", "fsync every 50 ms beside a streamer: ordered and writeback per era");
		plot_group(gp, b, has, G_MODES, false, "timeline-modes.svg", "fsync every 50 ms beside a streamer: modes, max_sectors_kb, peers");
		plot_group(gp, b, has, G_ERAS, true, "cdf-eras.svg", "fsync latency CDF: ordered and writeback per era");
		plot_group(gp, b, has, G_MODES, true, "cdf-modes.svg", "fsync latency CDF: modes, max_sectors_kb, peers");
		plot_group(gp, b, has, G_ATIME, true, "cdf-atime.svg", "atime probe latency CDF (touch, atime, create, rename)");
		rc = jens_write(gp, dir, b);
		if (fclose(gp) && !rc)
			rc = -EIO;
	} else if (rc >= 0) {
		rc = -errno;
	}
	free(has);
	if (rc < 0) {
		snprintf(why, whylen, "writing plot data: %s", strerror(-rc));
		return rc;
	}
	rc = gnuplot_run(dir);
	if (rc == -ENOENT)
		snprintf(why, whylen, "gnuplot is not installed (apt-get install gnuplot-nox); data and script in %s", dir);
	else if (rc < 0)
		snprintf(why, whylen, "gnuplot failed on %s/plots.gp", dir);
	return rc;
}
