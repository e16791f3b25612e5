/* nostall load DIR WORKLOAD [--jens-n N] [--seconds S] [--warmup S]
 *                           [--period S] [--stream-bytes B] [--reader-bytes B]
 *                           [--tester-write B] [--files N] [--dirs N]
 *                           [--min-samples N] [--max-seconds S]
 *
 * bench repro's workloads with POSIX calls in a directory: the peers'
 * workload binary (the kernel's ext3 on a loop device, fuse2fs, nostall
 * over FUSE). Its stdout is bench repro's line protocol (repro.h): one
 * line per timed operation and figure, which the bench reads while the
 * load runs. Exit status 0, 1 (an E line says why), 2 (usage) or 3 (an
 * operation still in flight long after the run's end: timed out).
 */
#include "repro.h"
#include "../common/cmds.h"

#include "util/err.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static void load_usage(FILE *out)
{
	fprintf(out, "usage: nostall load DIR WORKLOAD [--jens-n N] [--seconds S] [--warmup S] [--period S]\n"
		     "                    [--stream-bytes B] [--reader-bytes B] [--tester-write B] [--files N] [--dirs N]\n"
		     "                    [--min-samples N] [--max-seconds S]\n"
		     "  --min-samples, --max-seconds: fsync-under-stream and fsync-tester measure past\n"
		     "  --seconds until N fsyncs completed or S seconds of measuring, whichever first\n"
		     "  --tester-write: fsync-tester's bytes per write; creates' and stats' file size\n"
		     "  (default 1 KiB, at most 1 MiB)\n"
		     "workloads: jens, jens-stream, fsync-under-stream, fsync-tester, atime,\n"
		     "           stream-write, stream-read, creates, stats, unlinks (bench fs --mount's phases)\n"
		     "output: bench repro's line protocol (docs/bench-repro.md)\n");
}

int cmd_load(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		load_usage(stdout);
		return 0;
	}
	if (argc < 3 || (argc - 3) % 2) {
		load_usage(stderr);
		return 2;
	}
	enum rp_kind k;
	if (rp_kind_parse(argv[2], &k) < 0) {
		fprintf(stderr, "nostall load: %s\n", err_last(-EINVAL));
		return 2;
	}
	struct rp_params p;
	rp_params_default(&p);
	for (int i = 3; i < argc; i += 2) {
		if (strncmp(argv[i], "--", 2) || rp_params_parse(&p, argv[i] + 2, argv[i + 1]) < 0) {
			fprintf(stderr, "nostall load: bad option '%s %s'\n", argv[i], argv[i + 1]);
			return 2;
		}
	}
	if (!p.period || !p.stream_bytes || (k == RP_ATIME && !p.reader_bytes) ||
	    (k >= RP_CREATES && (!p.files || !p.dirs))) {
		fprintf(stderr, "nostall load: --period, --stream-bytes, --files and --dirs must be above zero\n");
		return 2;
	}
	struct rp_out *o = rp_out_new(STDOUT_FILENO);
	struct rp_fs *fs = NULL;
	int rc = o ? rp_fs_posix(argv[1], &fs) : -ENOMEM;
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
