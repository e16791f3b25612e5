/* bench repro: plots drawn by gnuplot from data files written here, under
 * OUT/plots: every run's series as TIME MS (timeline) and MS FRACTION
 * (CDF), the Jens loop's totals per era, and one gnuplot script.
 *
 *   timeline-eras.svg  fsync latency over time, ordered and writeback per preset
 *   timeline-modes.svg ... under 2.6.30 per mode (writeback, guarded,
 *                      journal), max_sectors_kb, and the peers
 *   cdf-eras.svg, cdf-modes.svg, cdf-atime.svg   the same runs' CDFs (modes:
 *                      with 2.6.30 data=ordered's curve; atime: Arjan's 6 s)
 *   jens.svg           the Jens loop's total per era, idle and streaming,
 *                      beside Axboe's 16 s / 0.9 s scaled to the iterations
 *   overwrite.svg      overwrite's fsyncs per era beside Ts'o's ranges
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

/* A run drawn in group g: its own group, and for the modes plots also the
 * 2.6.30 data=ordered fsync-under-stream run (an era run), so the modes
 * are seen against ordered's own curve. */
static bool in_group(const struct rp_run *r, enum group g)
{
	if (group_of(r) == g)
		return true;
	return g == G_MODES && !strcmp(r->workload, "fsync-under-stream") && !strcmp(r->system, "nostall") &&
	       !strcmp(r->preset, "2.6.30") && !strcmp(r->mode, "ordered");
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
		n += has[i] && in_group(&b->runs[i], g);
	if (!n)
		return;
	fprintf(gp, "set output '%s'\nset title '%s'\n", file, title);
	if (cdf)
		fprintf(gp, "set logscale x\nunset logscale y\nset xlabel 'latency (ms)'\nset ylabel 'fraction of operations'\n"
			    "set key bottom right\nset yrange [0:1]\nset xrange [*:*]\n");
	else
		fprintf(gp, "unset logscale x\nset logscale y\nset xlabel 'time since the measurement began (s)'\n"
			    "set ylabel 'latency (ms)'\nset key top left\nset yrange [*:*]\nset xrange [*:*]\n");
	/* the anchor: Arjan's atime waits (seed 010), drawn at 6 s */
	if (g == G_ATIME && cdf)
		fprintf(gp, "set arrow 1 from 6000, graph 0 to 6000, graph 1 nohead dt 2 lw 2\n"
			    "set label 1 \"Arjan (seed 010, 2.6.27): atime waits of 6 s or longer\" at 6000, graph 0.5 right offset -1,0\n"
			    "set xrange [*:10000]\n");
	fprintf(gp, "plot ");
	int k = 0;
	for (int i = 0; i < b->nruns; i++) {
		if (!has[i] || !in_group(&b->runs[i], g))
			continue;
		char label[160];
		run_label(label, sizeof label, &b->runs[i]);
		fprintf(gp, "%s'run%02d.%s' using 1:2 with %s title '%s'", k++ ? ", \\\n     " : "", i, cdf ? "cdf" : "dat",
			cdf ? "steps" : "linespoints pt 7 ps 0.4", label);
	}
	fprintf(gp, "\nunset arrow 1\nunset label 1\n");
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
	unsigned jens_n = 2000;
	bool stream = false; /* --quick has no jens-stream: no empty bars */
	for (int p = 0; p < 3; p++) {
		double v[2] = { NAN, NAN };
		for (int i = 0; i < b->nruns; i++) {
			const struct rp_run *r = &b->runs[i];
			if (strcmp(r->workload, "jens") || strcmp(r->system, "nostall") || strcmp(r->preset, presets[p]))
				continue;
			if (!strcmp(r->config, "idle"))
				jens_n = r->p.jens_n;
			double t = rp_run_get(r, "total_s");
			if (isnan(t))
				t = rp_run_get(r, "total_s_extrapolated");
			v[strcmp(r->config, "idle") != 0] = t;
		}
		if (isnan(v[0]) && isnan(v[1]))
			continue;
		stream |= !isnan(v[1]);
		/* Axboe's figures (seed 001: 2,000 iterations, 16 s on -git, i.e.
		 * 2.6.30-rc1, 0.9 s with the patches, i.e. 2.6.30), scaled to
		 * this run's iteration count; none for 2.6.29 */
		double anchor = !strcmp(presets[p], "2.6.30-rc1") ? 16.0 : !strcmp(presets[p], "2.6.30") ? 0.9 : NAN;
		fprintf(f, "%s %.4f %.4f %.4f\n", presets[p], isnan(v[0]) ? 0 : v[0], isnan(v[1]) ? 0 : v[1],
			isnan(anchor) ? 0 : anchor * jens_n / 2000);
		rows++;
	}
	fclose(f);
	if (rows)
		fprintf(gp, "set output 'jens.svg'\nset title 'Jens loop: fopen/fprintf/fsync/fclose (data=ordered)'\n"
			    "unset logscale x\nset logscale y\nset xlabel 'era preset'\nset ylabel 'total (s)'\n"
			    "set key top right\nset xrange [*:*]\nset yrange [*:*]\nset style data histogram\n"
			    "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
			    "plot 'jens.dat' using 2:xtic(1) title 'idle'%s, '' using 4 title 'Axboe (seed 001: 16 s / 0.9 s "
			    "for 2,000), scaled to %u'\n",
			stream ? ", '' using 3 title 'beside a streamer'" : "", jens_n);
	return 0;
}

/* overwrite per era in data=ordered: our fsyncs (median, and min..max as
 * the bar) beside Ts'o's range (LWN 327107: 2.43-6.33 s on 2.6.29,
 * 0.29-1.81 s with the patches 2.6.30 carries). */
static int overwrite_write(FILE *gp, const char *dir, const struct rp_bench *b)
{
	static const struct {
		const char *preset;
		double lo, hi; /* Ts'o's, ms; 0: none */
	} eras[] = { { "2.6.29", 2430, 6330 }, { "2.6.30-rc1", 0, 0 }, { "2.6.30", 290, 1810 } };
	char path[4300];
	snprintf(path, sizeof path, "%s/overwrite.dat", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	int rows = 0;
	for (int p = 0; p < 3; p++) {
		for (int i = 0; i < b->nruns; i++) {
			const struct rp_run *r = &b->runs[i];
			if (strcmp(r->workload, "overwrite") || strcmp(r->system, "nostall") ||
			    strcmp(r->preset, eras[p].preset) || strcmp(r->mode, "ordered") || !r->ns || !r->s[0].n)
				continue;
			double *v = rp_series_sorted(&r->s[0]);
			if (!v)
				continue;
			double tso = eras[p].lo ? sqrt(eras[p].lo * eras[p].hi) : NAN;
			/* x, preset, p50, min, max, Ts'o's mid, lo, hi */
			fprintf(f, "%d %s %.3f %.3f %.3f ", p, eras[p].preset, rp_quantile(v, r->s[0].n, 0.5), v[0],
				v[r->s[0].n - 1]);
			if (isnan(tso))
				fprintf(f, "NaN NaN NaN\n");
			else
				fprintf(f, "%.1f %.1f %.1f\n", tso, eras[p].lo, eras[p].hi);
			free(v);
			rows++;
		}
	}
	fclose(f);
	if (rows)
		fprintf(gp, "set output 'overwrite.svg'\n"
			    "set title \"fsync-tester beside an overwriter, data=ordered: ours vs Ts'o's (LWN 327107)\"\n"
			    "unset logscale x\nset logscale y\nset xlabel 'era preset'\nset ylabel 'fsync (ms)'\n"
			    "set key top right\nset xrange [-0.5:2.5]\nset yrange [*:*]\nset style data points\n"
			    "plot 'overwrite.dat' using ($1-0.1):3:4:5:xtic(2) with yerrorbars pt 7 ps 1.5 title 'nostall: median, min..max', "
			    "'' using ($1+0.1):6:7:8 with yerrorbars pt 5 ps 1.5 lw 2 title \"Ts'o: 2.43-6.33 s (2.6.29), "
			    "0.29-1.81 s (patched)\"\n");
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
		if (!rc)
			rc = overwrite_write(gp, dir, b);
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
