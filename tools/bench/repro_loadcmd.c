/* nostall load DIR WORKLOAD [--jens-n N] [--seconds S] [--warmup S]
 *                           [--period S] [--stream-bytes B] [--reader-bytes B]
 *                           [--tester-write B] [--files N] [--dirs N]
 *                           [--min-samples N] [--max-seconds S] [--fs TYPE]
 *
 * bench repro's workloads with POSIX calls in a directory: the peers'
 * workload binary (the kernel's ext3 on a loop device, fuse2fs, nostall
 * over FUSE). Its stdout is bench repro's line protocol (repro.h): one
 * line per timed operation and figure, which the bench reads while the
 * load runs. Exit status 0, 1 (an E line says why), 2 (usage) or 3 (an
 * operation still in flight long after the run's end: timed out).
 */
#include "repro.h"
#include "../common/cliopt.h"
#include "../common/cmds.h"

#include "util/err.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static int load_param(void *ctx, const struct cliopt *o, const char *arg)
{
	if (rp_params_parse(ctx, o->name, arg) < 0)
		return cliopt_say("nostall load", "bad option '--%s %s'", o->name, arg);
	return 0;
}

static void load_more(FILE *out)
{
	fprintf(out, "workloads: jens, jens-stream, fsync-under-stream, fsync-tester, atime, overwrite,\n"
		     "           stream-write, stream-read, creates, stats, unlinks (bench fs --mount's phases)\n"
		     "output: bench repro's line protocol (docs/bench-repro.md)\n");
}

/* --fs: the filesystem DIR is on, as whoever mounted it made it (load
 * makes no image: bench repro --peers and bench fs --mount pass their
 * --fs); checked against the three names and said in the output (an N
 * line: the run's note), so a record tells which filesystem it measured. */
static const char *load_fs;

static int load_fs_opt(void *ctx, const struct cliopt *o, const char *arg)
{
	if (strcmp(arg, "ext2") && strcmp(arg, "ext3") && strcmp(arg, "ext4"))
		return cliopt_say("nostall load", "--fs wants ext2, ext3 or ext4, not '%s'", arg);
	load_fs = arg;
	return 0;
}

/* The names are rp_params_parse's (repro_load.c), which checks the values. */
static const struct cliopt load_opts[] = {
	{ "jens-n", 0, "N", "jens' open/append/fsync/close iterations", CLIOPT_CALL(load_param) },
	{ "seconds", 0, "S", "the measuring time", CLIOPT_CALL(load_param) },
	{ "warmup", 0, "S", "time before measuring", CLIOPT_CALL(load_param) },
	{ "period", 0, "S", "the interval of periodic operations", CLIOPT_CALL(load_param) },
	{ "stream-bytes", 0, "B", "the streamed file's size", CLIOPT_CALL(load_param) },
	{ "reader-bytes", 0, "B", "atime's reader's file size", CLIOPT_CALL(load_param) },
	{ "tester-write", 0, "B", "fsync-tester's bytes per write; creates' and stats' file size\n"
				  "(default 1 KiB, at most 1 MiB)", CLIOPT_CALL(load_param) },
	{ "files", 0, "N", "files of creates, stats, unlinks", CLIOPT_CALL(load_param) },
	{ "dirs", 0, "N", "directories they are spread over", CLIOPT_CALL(load_param) },
	{ "min-samples", 0, "N", "fsync-under-stream and fsync-tester measure past --seconds until\n"
				 "N fsyncs completed ...", CLIOPT_CALL(load_param) },
	{ "max-seconds", 0, "S", "... or S seconds of measuring, whichever first", CLIOPT_CALL(load_param) },
	{ "fs", 0, "TYPE", "ext2, ext3 or ext4: the filesystem DIR is on (recorded in the output)",
	  CLIOPT_CALL(load_fs_opt) },
	{ 0 },
};

static const struct cliopt_cmd load_cmd = {
	.prog = "nostall load",
	.usage = "usage: nostall load DIR WORKLOAD [--jens-n N] [--seconds S] [--warmup S] [--period S]\n"
		 "                    [--stream-bytes B] [--reader-bytes B] [--tester-write B] [--files N] [--dirs N]\n"
		 "                    [--min-samples N] [--max-seconds S] [--fs ext2|ext3|ext4]\n",
	.opts = load_opts,
	.more = load_more,
	.min_pos = 2,
	.max_pos = 2,
};

int cmd_load(int argc, char **argv)
{
	struct rp_params p;
	rp_params_default(&p);
	int pos, st = cliopt_parse(&load_cmd, argc, argv, &p, &pos);
	if (st >= 0)
		return st;
	const char *dir = argv[pos];
	enum rp_kind k;
	if (rp_kind_parse(argv[pos + 1], &k) < 0) {
		fprintf(stderr, "nostall load: %s\n", err_last(-EINVAL));
		return 2;
	}
	if (!p.period || !p.stream_bytes || (k == RP_ATIME && !p.reader_bytes) ||
	    (k >= RP_CREATES && (!p.files || !p.dirs))) {
		fprintf(stderr, "nostall load: --period, --stream-bytes, --files and --dirs must be above zero\n");
		return 2;
	}
	struct rp_out *o = rp_out_new(STDOUT_FILENO);
	struct rp_fs *fs = NULL;
	int rc = o ? rp_fs_posix(dir, &fs) : -ENOMEM;
	if (!rc && load_fs)
		rp_out_note(o, "fs %s", load_fs);
	if (!rc)
		rc = rp_load_run(fs, k, &p, o);
	if (rc == -ETIMEDOUT) {
		rp_out_note(o, "%s", err_last(rc));
		_exit(3); /* threads are stuck in the filesystem */
	}
	if (rc && o)
		rp_out_error(o, rc);
	else if (rc)
		fprintf(stderr, "nostall load: out of memory\n");
	rp_fs_free(fs);
	rp_out_free(o);
	return rc ? 1 : 0;
}
