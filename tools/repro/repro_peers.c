/* bench repro --peers: the same workloads, by the same code (`nostall load
 * DIR WORKLOAD`), on other filesystems over one zero-filled image file on
 * the host disk, in the same run:
 *
 *   nostall       the library on file:IMAGE (preset nostall, the modern
 *                 default) — the reference the peers are compared with
 *   nostall-fuse  `nostall mount -o data=MODE IMAGE DIR` (issue 11)
 *   kernel-ext3   mkfs.ext3, a loop device, mount -t ext3 -o data=MODE,barrier=1
 *   fuse2fs       e2fsprogs' FUSE ext2/3/4 driver
 *
 * Each run makes a fresh filesystem on the image. A peer that cannot run
 * (not root, a tool missing, a mount failing) is reported as skipped with
 * the reason, never silently dropped.
 */
#include "repro.h"
#include "../bench_fs.h"

#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PEER_DEVICE "host disk (/tmp image)"

static const struct peer_work {
	const char *workload;
	enum rp_kind kind;
	const char *config;
} works[] = {
	{ "jens", RP_JENS, "idle" },
	{ "jens", RP_JENS_STREAM, "stream" },
	{ "fsync-under-stream", RP_FUS, "stream" },
	{ "fsync-tester", RP_TESTER, "random-writer" },
};

static const struct peer_sys {
	const char *system;
	const char *preset;
	const char *modes[2];
} systems[] = {
	{ "nostall", "nostall", { "ordered", "guarded" } },
	{ "nostall-fuse", "nostall", { "ordered", "guarded" } },
	{ "kernel-ext3", "host", { "ordered", "writeback" } },
	{ "fuse2fs", "host", { "default", NULL } },
};

/* Run argv with stdout+stderr captured (first bytes, trimmed) in out.
 * Returns the exit status, 127 when it could not be run. */
static int cmd_run(char *const argv[], char *out, size_t outlen)
{
	int p[2];
	if (pipe(p))
		return 127;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return 127;
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		close(p[1]);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "%s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	size_t have = 0;
	char sink[512];
	for (;;) {
		ssize_t n = have + 1 < outlen ? read(p[0], out + have, outlen - 1 - have) : read(p[0], sink, sizeof sink);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (have + 1 < outlen)
			have += (size_t)n;
	}
	close(p[0]);
	if (outlen)
		out[have] = 0;
	while (have && (out[have - 1] == '\n' || out[have - 1] == ' '))
		out[--have] = 0;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool have_tool(const char *name)
{
	char out[64];
	char *argv[] = { "sh", "-c", NULL, NULL };
	char script[128];
	snprintf(script, sizeof script, "command -v %s", name);
	argv[2] = script;
	return cmd_run(argv, out, sizeof out) == 0;
}

/* Why a system cannot run here ("" when it can). */
static void peer_why(const struct rp_bench *b, const struct peer_sys *s, const char *mode, char *why, size_t n)
{
	why[0] = 0;
	bool guarded_missing = !strcmp(mode, "guarded");
#if __has_include("ext3/guarded.c")
	guarded_missing = false;
#endif
	if (guarded_missing) {
		snprintf(why, n, "skipped: not built (data=guarded is issue 10, wt-guarded)");
		return;
	}
	if (!strcmp(s->system, "nostall"))
		return;
	if (geteuid() != 0) {
		snprintf(why, n, "skipped: mounting needs root");
		return;
	}
	if (!strcmp(s->system, "nostall-fuse")) {
		char out[256];
		char *argv[] = { (char *)b->self, "mount", "--help", NULL };
		if (cmd_run(argv, out, sizeof out) != 0)
			snprintf(why, n, "skipped: `nostall mount` is not built (issue 11, wt-fuse)");
		else if (access("/dev/fuse", R_OK | W_OK))
			snprintf(why, n, "skipped: no /dev/fuse");
	} else if (!strcmp(s->system, "kernel-ext3")) {
		if (!have_tool("mkfs.ext3") || !have_tool("losetup"))
			snprintf(why, n, "skipped: mkfs.ext3 or losetup missing (e2fsprogs, mount)");
	} else if (!have_tool("fuse2fs") || !have_tool("mkfs.ext3")) {
		snprintf(why, n, "skipped: fuse2fs missing (apt-get install fuse2fs)");
	} else if (access("/dev/fuse", R_OK | W_OK)) {
		snprintf(why, n, "skipped: no /dev/fuse");
	}
}

void rp_peers_add(struct rp_bench *b)
{
	for (size_t s = 0; s < sizeof systems / sizeof systems[0]; s++)
		for (int m = 0; m < 2 && systems[s].modes[m]; m++)
			for (size_t w = 0; w < sizeof works / sizeof works[0]; w++) {
				const struct peer_work *pw = &works[w];
				if (!b->kind_on[pw->kind])
					continue;
				struct rp_run *r = rp_bench_add(b, pw->workload, pw->kind, systems[s].system,
								systems[s].preset, systems[s].modes[m], pw->config, NULL);
				if (!r)
					return;
				r->device = PEER_DEVICE;
				r->p = rp_params_pick(b, pw->kind);
				peer_why(b, &systems[s], r->mode, r->status, sizeof r->status);
			}
}

/* ------------------------------------------------------------ running */

struct peer_env {
	const struct rp_bench *b;
	char image[64];
	char dir[64];
	char loop[64];
	bool mounted;
};

static int fail_cmd(struct rp_run *r, const char *what, int st, const char *out)
{
	snprintf(r->status, sizeof r->status, "skipped: %s failed (%d): %.100s", what, st, out);
	return -1;
}

static int mkfs_ext3(struct peer_env *e, struct rp_run *r)
{
	char out[256];
	char *argv[] = { "mkfs.ext3", "-q", "-F", "-b", "4096", e->image, NULL };
	int st = cmd_run(argv, out, sizeof out);
	return st ? fail_cmd(r, "mkfs.ext3", st, out) : 0;
}

/* Make a fresh filesystem and mount it on e->dir. */
static int peer_mount(struct peer_env *e, struct rp_run *r)
{
	char out[256], opts[64];
	int st;
	if (!strcmp(r->system, "kernel-ext3")) {
		if (mkfs_ext3(e, r))
			return -1;
		char *la[] = { "losetup", "-f", "--show", e->image, NULL };
		if ((st = cmd_run(la, e->loop, sizeof e->loop)))
			return fail_cmd(r, "losetup", st, e->loop);
		snprintf(opts, sizeof opts, "data=%s,barrier=1", r->mode);
		char *ma[] = { "mount", "-t", "ext3", "-o", opts, e->loop, e->dir, NULL };
		st = cmd_run(ma, out, sizeof out);
	} else if (!strcmp(r->system, "fuse2fs")) {
		if (mkfs_ext3(e, r))
			return -1;
		char *ma[] = { "fuse2fs", e->image, e->dir, NULL };
		st = cmd_run(ma, out, sizeof out);
	} else {
		char *ka[] = { (char *)e->b->self, "mkfs", "-q", e->image, NULL };
		if ((st = cmd_run(ka, out, sizeof out)))
			return fail_cmd(r, "nostall mkfs", st, out);
		snprintf(opts, sizeof opts, "data=%s", r->mode);
		char *ma[] = { (char *)e->b->self, "mount", "-o", opts, e->image, e->dir, NULL };
		st = cmd_run(ma, out, sizeof out);
	}
	if (st)
		return fail_cmd(r, "mount", st, out);
	e->mounted = true;
	return 0;
}

/* nostall-fuse: `nostall umount` waits for the daemon to finish with the
 * image (umount(8) returns while it still writes back), so the next run's
 * mount does not find it busy. */
static void peer_umount(struct peer_env *e, const struct rp_run *r)
{
	char out[256];
	bool fuse = !strcmp(r->system, "nostall-fuse");
	for (int i = 0; e->mounted && i < 20; i++) {
		char *ua[] = { "umount", e->dir, NULL };
		char *na[] = { (char *)e->b->self, "umount", e->dir, NULL };
		if (cmd_run(fuse ? na : ua, out, sizeof out) == 0)
			e->mounted = false;
		else
			usleep(250000); /* a killed load may still hold it */
	}
	if (e->loop[0]) {
		char *da[] = { "losetup", "-d", e->loop, NULL };
		cmd_run(da, out, sizeof out);
		e->loop[0] = 0;
	}
}

static void peer_run_one(struct peer_env *e, struct rp_run *r)
{
	if (!strcmp(r->system, "nostall")) {
		char spec[96];
		snprintf(spec, sizeof spec, "file:%s", e->image);
		struct rp_exec x = { .spec = spec, .fs_bytes = e->b->fs_bytes,
				     .deadline_s = r->p.seconds + r->p.warmup + 60 + r->p.jens_n * 0.1 };
		int rc = rp_job_run(r, &x);
		if (rc < 0)
			snprintf(r->status, sizeof r->status, "failed: %s", err_last(rc));
		return;
	}
	if (peer_mount(e, r)) {
		peer_umount(e, r); /* a loop device set up before the failure */
		return;
	}
	char bufs[16][32];
	char *argv[24] = { (char *)e->b->self, "load", e->dir, (char *)rp_kind_name(r->kind) };
	int n = 4 + rp_params_argv(&r->p, bufs, argv + 4, 16);
	argv[n] = NULL;
	struct rp_exec x = { .argv = argv, .deadline_s = r->p.seconds + r->p.warmup + 60 + r->p.jens_n * 0.1 };
	int rc = rp_job_run(r, &x);
	if (rc < 0)
		snprintf(r->status, sizeof r->status, "failed: %s", err_last(rc));
	peer_umount(e, r);
}

int rp_peers_run(struct rp_bench *b)
{
	struct peer_env e = { .b = b };
	bool any = false;
	for (int i = 0; i < b->nruns && !any; i++)
		any = !strcmp(b->runs[i].device, PEER_DEVICE) && !b->runs[i].status[0];
	if (!any)
		return 0;
	rp_progress(b, "peers: preparing a %llu MiB image under /tmp", (unsigned long long)(b->fs_bytes / RP_MiB));
	int rc = fsb_tmpdev_make(e.image, sizeof e.image, b->fs_bytes);
	snprintf(e.dir, sizeof e.dir, "/tmp/nostall-repro-mnt.XXXXXX");
	if (!rc && !mkdtemp(e.dir))
		rc = err_set(-errno, "mkdtemp: %s", strerror(errno));
	for (int i = 0; i < b->nruns; i++) {
		struct rp_run *r = &b->runs[i];
		if (strcmp(r->device, PEER_DEVICE))
			continue;
		if (r->status[0]) {
			b->done++;
			continue;
		}
		if (rc) {
			snprintf(r->status, sizeof r->status, "skipped: %s", err_last(rc));
			continue;
		}
		rp_progress(b, "%s %s data=%s (%s)", r->workload, r->config, r->mode, r->system);
		peer_run_one(&e, r);
		b->done++;
	}
	if (e.image[0])
		unlink(e.image);
	rmdir(e.dir);
	return 0;
}
