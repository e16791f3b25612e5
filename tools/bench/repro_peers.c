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
 * Each run makes a fresh filesystem on the image (rp_peer.c mounts the
 * peers; bench fs --mount shares it). A peer that cannot run (not root, a
 * tool missing, a mount failing) is reported as skipped with the reason,
 * never silently dropped.
 */
#include "repro.h"
#include "rp_peer.h"
#include "bench_fs.h"

#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	{ "overwrite", RP_OVERWRITE, "overwriter" },
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

/* Why a system cannot run here ("" when it can). */
static void peer_why(const struct rp_bench *b, const struct peer_sys *s, const char *mode, char *why, size_t n)
{
	why[0] = 0;
	(void)mode;
	if (strcmp(s->system, "nostall"))
		rp_peer_why(b->self, s->system, why, n);
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
	struct rp_peer p;
};

static void peer_run_one(struct peer_env *e, struct rp_run *r)
{
	if (!strcmp(r->system, "nostall")) {
		char spec[300];
		snprintf(spec, sizeof spec, "file:%s", e->p.image);
		struct rp_exec x = { .spec = spec, .fs_bytes = e->b->fs_bytes, .fs = e->b->fs, .features = e->b->features,
				     .deadline_s = rp_params_span(&r->p) + r->p.warmup + 60 + r->p.jens_n * 0.1 };
		int rc = rp_job_run(r, &x);
		if (rc < 0)
			snprintf(r->status, sizeof r->status, "failed: %s", err_last(rc));
		return;
	}
	e->p.system = r->system;
	e->p.mode = r->mode;
	if (rp_peer_mount(&e->p, r->status, sizeof r->status))
		return;
	char bufs[24][32];
	char *argv[32] = { (char *)e->b->self, "load", e->p.dir, (char *)rp_kind_name(r->kind) };
	int n = 4 + rp_params_argv(&r->p, bufs, argv + 4, 24);
	if (e->b->fs) {
		argv[n++] = "--fs";
		argv[n++] = (char *)e->b->fs;
	}
	argv[n] = NULL;
	struct rp_exec x = { .argv = argv, .deadline_s = rp_params_span(&r->p) + r->p.warmup + 60 + r->p.jens_n * 0.1 };
	int rc = rp_job_run(r, &x);
	if (rc < 0)
		snprintf(r->status, sizeof r->status, "failed: %s", err_last(rc));
	rp_peer_umount(&e->p);
}

int rp_peers_run(struct rp_bench *b)
{
	struct peer_env e = { .b = b, .p = { .self = b->self, .fs = b->fs, .features = b->features } };
	bool any = false;
	for (int i = 0; i < b->nruns && !any; i++)
		any = !strcmp(b->runs[i].device, PEER_DEVICE) && !b->runs[i].status[0];
	if (!any)
		return 0;
	rp_progress(b, "peers: preparing a %llu MiB image under /tmp", (unsigned long long)(b->fs_bytes / RP_MiB));
	int rc = fsb_tmpdev_make(e.p.image, sizeof e.p.image, b->fs_bytes);
	snprintf(e.p.dir, sizeof e.p.dir, "/tmp/nostall-repro-mnt.XXXXXX");
	if (!rc && !mkdtemp(e.p.dir))
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
	if (e.p.image[0])
		unlink(e.p.image);
	rmdir(e.p.dir);
	return 0;
}
