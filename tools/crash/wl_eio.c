/* crashtest --workload eio-loop (docs/crashtest-workloads.md): xfstests
 * generic/475's loop on a fault: device.
 *
 * Per round (seeded): a workload of the other kinds (random, append,
 * truncate-write, rename-replace, overwrite, create, links, dirs in turn)
 * runs on fault:log:mem: whose rule fails every write (1 round in 3: writes
 * and flushes; 1 in 3: every command, reads too) from a random command on
 * (uniform over the commands a fault-free run of that workload issues).
 * The workload stops at its first failed operation. Then, when the fault
 * fired, the journal must abort and stay aborted:
 *   mkdir (+ rmdir) a probe, sync: the sync must fail when the probe's
 *   change was made (its commit cannot be written);
 *   two more probes must fail, and once one says -EROFS the next too
 *   (eio_erofs otherwise).
 * Unmount (its error is expected), and the disk is what the device
 * completed (the log replayed). nostall recovers it (journal replay, orphan
 * cleanup) and check.c checks it against the model with every fsync that
 * returned 0 persisted (lost_fsync, stale_data, too_long, rename), and with
 * e2fsck -fn and the e2fsck oracle every round (fsck, recovery_mismatch).
 * A round is one state of the job; budget / 4 rounds (at least 1).
 */
#include "wl.h"

#include "dev/dev.h"
#include "nostall/nostall.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const enum crash_wl wls[] = { WL_RANDOM,	   WL_APPEND, WL_TRUNCATE_WRITE, WL_RENAME_REPLACE,
				     WL_OVERWRITE, WL_CREATE, WL_LINKS,		 WL_DIRS };
#define NWLS (sizeof wls / sizeof wls[0])
static const char *const rules[] = { "write", "write|flush", "any" };

struct ectx {
	const struct crash_job *j;
	struct crash_result *r;
	const uint8_t *base;
	uint64_t ref[NWLS]; /* commands of a fault-free run (0: not known yet) */
	char log[600];
};

/* Probes after the fault: 0, or a verdict. */
static void probe(struct nostall_fs *fs, struct crash_verdict *v)
{
	int p1 = nostall_mkdir(fs, "/eio-probe1", 0755);
	if (!p1)
		p1 = nostall_rmdir(fs, "/eio-probe1");
	int s1 = nostall_sync(fs);
	int p2 = nostall_mkdir(fs, "/eio-probe2", 0755);
	if (!p2)
		nostall_rmdir(fs, "/eio-probe2");
	int p3 = nostall_mkdir(fs, "/eio-probe3", 0755);
	if (!p3)
		nostall_rmdir(fs, "/eio-probe3");
	if (!p1 && !s1)
		crash_verdict_add(v, CK_EIO_EROFS, "sync returned 0 with every write failing (a mkdir+rmdir to commit)");
	else if (!p2 || !p3)
		crash_verdict_add(v, CK_EIO_EROFS, "mkdir succeeded after the failed sync (%d) / mkdir (%d): %s", s1, p1,
				  !p2 ? "the first probe" : "the second probe");
	else if (p2 == -EROFS && p3 != -EROFS)
		crash_verdict_add(v, CK_EIO_EROFS, "-EROFS not sticky: a later mkdir gave %d", p3);
}

/* Apply every mark of the log to the model: the state at the end. */
static int eval_all(const struct crash_log *l, struct crash_model *m, struct crash_eval **e)
{
	int rc = crash_eval_create(m, e);
	for (size_t i = 0; !rc && i < crash_log_nmarks(l); i++) {
		size_t op;
		char kind;
		uint64_t idx;
		crash_log_mark(l, i, &op, &kind, &idx);
		if (op >= crash_model_nevents(m))
			return err_set(-EINVAL, "crashtest: mark %c%zu has no event", kind, op);
		rc = crash_eval_apply(*e, op, kind == 'd');
	}
	return rc;
}

/* One round: wl with the fault rule after `after` matching commands
 * (UINT64_MAX: no fault, which measures *cmds). */
static int round_run(struct ectx *c, unsigned round, size_t wi, const char *rule, uint64_t after, uint64_t *cmds)
{
	const struct crash_job *j = c->j;
	char spec[800], what[160];
	struct dev *d;
	struct nostall_fs *fs;
	unsigned nbase;
	struct crash_verdict v;
	memset(&v, 0, sizeof v);
	/* the base image's commands (1 MiB writes, a flush) pass first */
	unsigned bw = 0;
	for (uint64_t off = 0; off < CRASH_IMAGE_BYTES; off += 1u << 20)
		bw += !crash_all_zero(c->base + off, 1u << 20);
	uint64_t skip = after == UINT64_MAX ? 1000000000ull : after + bw + (strcmp(rule, "write") ? 1 : 0);
	snprintf(spec, sizeof spec, "fault:log:mem:%llu,to=%s,op=%s,after=%llu", (unsigned long long)CRASH_IMAGE_BYTES,
		 c->log, rule, (unsigned long long)skip);
	int rc = wl_record_open(spec, c->base, NULL, NULL, &d, &fs, &nbase);
	if (rc)
		return wl_set_err(c->r, rc, "opening the recording");
	struct crash_model *m;
	if ((rc = crash_model_create(&m))) {
		dev_close(d);
		return wl_set_err(c->r, rc, "the model");
	}
	char o[64 + CRASH_OPTS_MAX];
	crash_record_opts(j->mode, j->opts, o, sizeof o);
	/* op=any: the fault may hit the mount's reads (an empty model then) */
	int mrc = nostall_mount_dev(d, o, 0, &fs);
	if (mrc && !dev_fault_injected(d)) {
		crash_model_destroy(m);
		dev_close(d);
		return wl_set_err(c->r, mrc, "mounting the recording");
	}
	uint64_t seed = wl_mix(j->seed, round + 1, j->bs);
	struct crash_wl_ctx w = { .fs = fs, .dev = d, .m = m, .rng = seed, .bs = j->bs };
	int wrc = mrc ? mrc : crash_workload_run(&w, wls[wi]);
	if (mrc)
		snprintf(w.errmsg, sizeof w.errmsg, "mount: %s", nostall_errmsg(mrc));
	c->r->ops += w.nops;
	bool fired = dev_fault_injected(d) > 0;
	if (fired && !mrc)
		probe(fs, &v);
	int urc = mrc ? 0 : nostall_umount(fs);
	bool late = !fired && dev_fault_injected(d) > 0; /* at the unmount's writes */
	dev_close(d);
	w.errmsg[strcspn(w.errmsg, ":")] = '\0'; /* the operation (the message may be stale) */
	if (!fired && !late && (wrc || urc)) {
		crash_model_destroy(m);
		snprintf(c->r->errmsg, sizeof c->r->errmsg, "workload %s without a fault: %.200s", crash_wl_names[wls[wi]],
			 wrc ? w.errmsg : err_last(urc));
		return c->r->error = wrc ? wrc : urc;
	}
	struct crash_log *l = NULL;
	struct crash_eval *e = NULL;
	rc = crash_log_load(c->log, &l);
	if (!rc && cmds) /* writes and flushes after the base (marks aside) */
		*cmds = crash_log_entries(l) - crash_log_nmarks(l) - bw - 1;
	if (!rc)
		rc = eval_all(l, m, &e);
	if (!rc) {
		c->r->entries += crash_log_entries(l);
		c->r->epochs += crash_log_nepochs(l);
		rc = wl_dev_new(&d);
		if (!rc) {
			rc = dev_log_replay(c->log, UINT64_MAX, d);
			struct crash_check_cfg cfg = { .mode = j->mode, .opts = j->opts, .bs = j->bs,
						       .e2fsck = j->fsck_every != 0, .tmpdir = j->tmpdir };
			struct crash_verdict cv;
			if (!rc)
				rc = crash_check_state(&cfg, d, e, &cv);
			if (!rc) {
				for (int k = 0; k < CK_NR; k++)
					if (cv.bad[k] && !v.bad[k])
						crash_verdict_add(&v, (enum crash_kind)k, "%s", cv.why[k]);
				v.e2fsck_ran = cv.e2fsck_ran;
				v.orphans = cv.orphans;
			}
			dev_close(d);
		}
	}
	crash_eval_destroy(e);
	crash_log_destroy(l);
	crash_model_destroy(m);
	unlink(c->log);
	if (rc)
		return wl_set_err(c->r, rc, "checking a round");
	snprintf(what, sizeof what, "round %u (%s, fail op=%s after %s%llu commands%s: %.40s %d)", round,
		 crash_wl_names[wls[wi]], rule, after == UINT64_MAX ? "(none) " : "",
		 (unsigned long long)(after == UINT64_MAX ? 0 : after), fired ? "" : late ? ", at the unmount" : ", not reached",
		 fired ? w.errmsg : "", fired ? wrc : 0);
	wl_count(c->r, j, &v, what);
	return 0;
}

int wl_eio_run(const struct crash_job *j, struct crash_result *r)
{
	struct ectx c = { .j = j, .r = r };
	snprintf(c.log, sizeof c.log, "%s/rec.log", j->tmpdir);
	uint8_t *base = malloc(CRASH_IMAGE_BYTES);
	if (!base)
		return wl_set_err(r, -ENOMEM, "out of memory");
	c.base = base;
	int rc = crash_base_image(j->bs, base, r);
	unsigned rounds = j->budget / 4 ? j->budget / 4 : 1;
	uint64_t rng = wl_mix(j->seed, 0xe10u, j->bs ^ (uint64_t)j->mode[0] << 8);
	for (unsigned i = 0; !rc && i < rounds; i++) {
		size_t wi = (i + (size_t)j->seed) % NWLS;
		if (!c.ref[wi]) /* a fault-free run first: the commands it issues */
			rc = round_run(&c, 1000000 + (unsigned)wi, wi, "write", UINT64_MAX, &c.ref[wi]);
		if (rc)
			break;
		c.ref[wi] = c.ref[wi] ? c.ref[wi] : 1;
		const char *rule = rules[crash_rnd(&rng) % 3];
		rc = round_run(&c, i, wi, rule, crash_rnd(&rng) % c.ref[wi], NULL);
		if (i % 4 == 3 && j->progress_fd >= 0) {
			struct crash_msg msg = { .type = 1, .done = r->states };
			ssize_t n = write(j->progress_fd, &msg, sizeof msg);
			(void)n;
		}
	}
	free(base);
	unlink(c.log);
	return r->error;
}
