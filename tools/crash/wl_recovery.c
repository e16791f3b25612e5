/* crashtest --workload recovery (docs/crashtest-workloads.md): a crash
 * during recovery.
 *
 * Source states: crash states of other workloads (truncate-write, append,
 * rename-replace, random), recorded in the job's mode and block size, that
 * have committed transactions to replay. For each:
 *
 * 1. the clean recovery: nostall's journal replay, then (orphans) the
 *    read-write mount that cleans them (wl_recover, what check.c does); its
 *    contents are the reference; recovering it again must not change a
 *    byte (recovery_idempotent); e2fsck -fn must pass on it (fsck);
 * 2. the same recovery recorded on a log: device, and crash states of that
 *    recording (every crash point's prefix, random subsets of the in-flight
 *    writes of a flush epoch, torn writes: states.c, the same generator as
 *    the other workloads);
 * 3. each interrupted state recovered again: the contents must be the
 *    reference's (recovery_interrupted), recovering once more changes
 *    nothing (recovery_idempotent); on the e2fsck sample, e2fsck -fn passes
 *    on it (fsck) and e2fsck -y -E journal_only of the interrupted state
 *    gives the reference's contents too (recovery_e2fsck).
 *
 * The job's budget is the number of interrupted states; a clean recovery
 * counts as a state too.
 */
#include "wl.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "jbd/jbd.h"
#include "nostall/nostall.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* WL_NR: the orphan source below */
static const enum crash_wl sources[] = { WL_NR, WL_TRUNCATE_WRITE, WL_APPEND, WL_RENAME_REPLACE, WL_RANDOM };
#define WLNAME(wl) ((wl) == WL_NR ? "orphans" : crash_wl_names[wl])
#define NSOURCES (sizeof sources / sizeof sources[0])
/* Crash states of a source recording to choose from. */
#define SRC_STATES 64u

/* A source with orphans on disk (the other workloads commit none): files
 * unlinked while open and written on, other files' fsyncs committing the
 * orphan list, a big file truncated down (truncate orphans), closes two
 * rounds later. No model: recovery is compared with recovery. */
static int orphan_source(struct nostall_fs *fs, uint64_t seed, char *why, size_t len)
{
	static uint8_t buf[65536];
	for (size_t k = 0; k < sizeof buf; k++)
		buf[k] = (uint8_t)(crash_rnd(&seed) | 1);
	int fds[8], rc = 0;
	const char *what = "";
	char p[32];
	int big = nostall_fd_open(fs, "/big", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
	if (big < 0)
		rc = big, what = "create /big";
	for (int r = 0; !rc && r < 8; r++) {
		fds[r] = -1;
		uint64_t sz = 65536 * (1 + crash_rnd(&seed) % 6);
		for (uint64_t off = 0; !rc && off < sz; off += sizeof buf)
			if (nostall_fd_pwrite(fs, big, buf, sizeof buf, off) != (ssize_t)sizeof buf)
				rc = -EIO, what = "write /big";
		snprintf(p, sizeof p, "/o%d", r);
		int fd = nostall_fd_open(fs, p, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
		if (!rc && fd < 0)
			rc = fd, what = "create /oN";
		if (rc)
			break;
		fds[r] = fd;
		if (nostall_fd_pwrite(fs, fd, buf, 8192 * (1 + r % 4), 0) < 0 || (rc = nostall_fd_fsync(fs, fd, 0)) ||
		    (rc = nostall_unlink(fs, p)))
			what = "write, fsync, unlink /oN";
		if (!rc && nostall_fd_pwrite(fs, fd, buf, 4096, 65536) < 0)
			rc = -EIO, what = "write /oN unlinked";
		if (!rc && (rc = nostall_fd_ftruncate(fs, big, 4096 * (crash_rnd(&seed) % 8))))
			what = "truncate /big";
		snprintf(p, sizeof p, "/k%d", r);
		int k = rc ? -1 : nostall_fd_open(fs, p, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
		if (!rc && k < 0)
			rc = k, what = "create /kN";
		if (k >= 0) {
			if (nostall_fd_pwrite(fs, k, buf, 4096, 0) < 0 || (rc = nostall_fd_fsync(fs, k, 0)))
				rc = rc ? rc : -EIO, what = "write, fsync /kN";
			nostall_fd_close(fs, k);
		}
		if (!rc && r >= 2 && fds[r - 2] >= 0 && (rc = nostall_fd_close(fs, fds[r - 2])) == 0)
			fds[r - 2] = -1;
		if (!rc && r % 3 == 2)
			rc = nostall_sync(fs);
	}
	for (int r = 0; r < 8; r++)
		if (fds[r] >= 0)
			nostall_fd_close(fs, fds[r]);
	if (big >= 0)
		nostall_fd_close(fs, big);
	if (rc)
		snprintf(why, len, "%s: %s", what, nostall_errmsg(rc));
	return rc;
}

struct rctx {
	const struct crash_job *j;
	struct crash_result *r;
	uint8_t *src, *img, *img2;
	struct wl_tree ref;
	uint64_t pick; /* e2fsck sample */
	char log[600], rlog[600], crash[600], mine[600], out[600];
};

static bool want_fsck(struct rctx *c)
{
	unsigned n = c->j->fsck_every;
	return n == 1 || (n && crash_rnd(&c->pick) % n == 0);
}

/* Recover dev once more: nothing may change. */
static int check_idempotent(struct rctx *c, struct dev *dev, struct crash_verdict *v)
{
	int rc = wl_dev_read(dev, c->img);
	if (rc)
		return rc;
	bool orphans;
	char why[160];
	if (wl_recover(dev, c->j->mode, c->j->opts, &orphans, why, sizeof why)) {
		crash_verdict_add(v, CK_REC_IDEMPOTENT, "recovering the recovered image: %s", why);
		return 0;
	}
	if ((rc = wl_dev_read(dev, c->img2)))
		return rc;
	for (uint64_t off = 0; off < CRASH_IMAGE_BYTES; off += c->j->bs)
		if (memcmp(c->img + off, c->img2 + off, c->j->bs)) {
			crash_verdict_add(v, CK_REC_IDEMPOTENT, "recovering the recovered image again changed block %llu%s",
					  (unsigned long long)(off / c->j->bs), orphans ? " (it had orphans)" : "");
			break;
		}
	return 0;
}

/* e2fsck -fn on the image in c->img (the recovered one). */
static int fsck_recovered(struct rctx *c, struct crash_verdict *v)
{
	char sum[200];
	int rc = wl_img_save(c->img, c->mine);
	if (!rc)
		rc = wl_e2fsck("-fn", NULL, c->mine, c->out, sum, sizeof sum);
	if (rc < 0)
		return rc;
	if (rc)
		crash_verdict_add(v, CK_FSCK, "e2fsck -fn exit %d after recovery: %s", rc, sum);
	v->e2fsck_ran = true;
	return 0;
}

/* e2fsck -y -E journal_only on c->crash (the interrupted state): the
 * reference's contents. */
static int e2fsck_agrees(struct rctx *c, struct crash_verdict *v)
{
	char sum[200], why[240];
	int rc = wl_e2fsck("-y", "-Ejournal_only", c->crash, c->out, sum, sizeof sum);
	if (rc < 0)
		return rc;
	if (rc != 0 && rc != 1) {
		crash_verdict_add(v, CK_REC_E2FSCK, "e2fsck -E journal_only exit %d: %s", rc, sum);
		return 0;
	}
	struct dev *d;
	if ((rc = wl_img_load(c->crash, c->img2)) || (rc = wl_dev_new(&d)))
		return rc;
	struct wl_tree t;
	rc = wl_dev_write(d, c->img2, true);
	if (!rc) {
		int trc = wl_tree_read(d, &t);
		if (trc)
			crash_verdict_add(v, CK_REC_E2FSCK, "e2fsck's recovery does not mount: %s", nostall_errmsg(trc));
		else if (wl_tree_diff(&c->ref, &t, why, sizeof why))
			crash_verdict_add(v, CK_REC_E2FSCK, "e2fsck's recovery and nostall's differ: %s", why);
		wl_tree_free(&t);
	}
	dev_close(d);
	v->e2fsck_ran = true;
	return rc;
}

/* One interrupted state, on dev. */
static int check_interrupted(struct rctx *c, struct dev *dev, struct crash_verdict *v)
{
	memset(v, 0, sizeof *v);
	bool fsck = want_fsck(c);
	int rc = 0;
	if (fsck && (rc = crash_dev_save(dev, c->crash)))
		return rc;
	char why[240];
	if (wl_recover(dev, c->j->mode, c->j->opts, &v->orphans, why, sizeof why)) {
		crash_verdict_add(v, CK_REC_INTERRUPTED, "recovering the interrupted recovery: %s", why);
		return fsck ? e2fsck_agrees(c, v) : 0;
	}
	struct wl_tree t;
	rc = wl_tree_read(dev, &t);
	if (rc) {
		crash_verdict_add(v, CK_REC_INTERRUPTED, "the recovered image does not mount: %s", nostall_errmsg(rc));
		rc = 0;
	} else if (wl_tree_diff(&t, &c->ref, why, sizeof why)) {
		crash_verdict_add(v, CK_REC_INTERRUPTED, "not the clean recovery: %s", why);
	}
	wl_tree_free(&t);
	if (!rc)
		rc = check_idempotent(c, dev, v); /* leaves the recovered image in c->img */
	if (!rc && fsck)
		rc = fsck_recovered(c, v);
	if (!rc && fsck)
		rc = e2fsck_agrees(c, v);
	return rc;
}

/* Record nostall's recovery of c->src on a log: device. */
static int record_recovery(struct rctx *c, char *why, size_t len)
{
	char spec[700];
	snprintf(spec, sizeof spec, "log:mem:%llu,to=%s", (unsigned long long)CRASH_IMAGE_BYTES, c->rlog);
	struct dev *d;
	struct nostall_fs *fs;
	unsigned n;
	int rc = wl_record_open(spec, c->src, NULL, NULL, &d, &fs, &n);
	if (rc) {
		snprintf(why, len, "opening the log device: %s", err_last(rc));
		return rc;
	}
	bool orphans;
	rc = wl_recover(d, c->j->mode, c->j->opts, &orphans, why, len);
	dev_close(d);
	return rc;
}

/* One source state (in c->src). */
static int check_source(struct rctx *c, unsigned budget, uint64_t seed, const char *name)
{
	struct crash_verdict v;
	memset(&v, 0, sizeof v);
	struct dev *d;
	int rc = wl_dev_new(&d);
	if (rc)
		return rc;
	char why[240], what[200];
	snprintf(what, sizeof what, "%s clean recovery", name);
	rc = wl_dev_write(d, c->src, true);
	if (!rc && wl_recover(d, c->j->mode, c->j->opts, &v.orphans, why, sizeof why)) {
		/* the other workloads report this state (recovery_mismatch) */
		crash_verdict_add(&v, CK_RECOVERY, "the clean recovery failed: %s", why);
		wl_count(c->r, c->j, &v, what);
		dev_close(d);
		return 0;
	}
	wl_tree_free(&c->ref);
	if (!rc && (rc = wl_tree_read(d, &c->ref)))
		crash_verdict_add(&v, CK_RECOVERY, "the clean recovery does not mount: %s", nostall_errmsg(rc)), rc = 0;
	if (!rc && !v.bad[CK_RECOVERY])
		rc = check_idempotent(c, d, &v);
	if (!rc && !v.bad[CK_RECOVERY] && c->j->fsck_every)
		rc = fsck_recovered(c, &v);
	dev_close(d);
	if (rc)
		return rc;
	wl_count(c->r, c->j, &v, what);
	if (v.bad[CK_RECOVERY])
		return 0;
	rc = record_recovery(c, why, sizeof why);
	if (rc)
		return wl_set_err(c->r, rc, why);
	struct crash_log *l;
	if ((rc = crash_log_load(c->rlog, &l)))
		return wl_set_err(c->r, rc, "reading the recovery's recording");
	struct crash_state *st = NULL;
	size_t n = 0;
	rc = crash_states_make(l, budget, seed, &st, &n);
	bool made = !rc;
	for (size_t i = 0; !rc && i < n; i++) {
		if ((rc = wl_dev_new(&d)))
			break;
		rc = crash_state_build(l, &st[i], d);
		if (!rc)
			rc = check_interrupted(c, d, &v);
		dev_close(d);
		if (rc)
			break;
		char sd[48];
		crash_state_format(&st[i], sd, sizeof sd);
		snprintf(what, sizeof what, "%.100s, its recovery crashed at %.40s (%llu log entries)", name, sd,
			 (unsigned long long)crash_log_entries(l));
		wl_count(c->r, c->j, &v, what);
		if (c->r->states % 16 == 0 && c->j->progress_fd >= 0) {
			struct crash_msg msg = { .type = 1, .done = c->r->states };
			ssize_t nw = write(c->j->progress_fd, &msg, sizeof msg);
			(void)nw;
		}
	}
	if (rc)
		wl_set_err(c->r, rc, "checking interrupted recoveries");
	if (made)
		crash_states_free(st, n);
	crash_log_destroy(l);
	unlink(c->rlog);
	return c->r->error;
}

/* Record source workload wl, and check `picks` of its crash states that
 * have transactions to replay, spread over the recording. */
static int run_source(struct rctx *c, const uint8_t *base, enum crash_wl wl, unsigned picks, unsigned per)
{
	const struct crash_job *j = c->j;
	char spec[700];
	snprintf(spec, sizeof spec, "log:mem:%llu,to=%s", (unsigned long long)CRASH_IMAGE_BYTES, c->log);
	struct dev *d;
	struct nostall_fs *fs;
	unsigned ncmds;
	int rc = wl_record_open(spec, base, j->mode, j->opts, &d, &fs, &ncmds);
	if (rc)
		return wl_set_err(c->r, rc, "mounting the source recording");
	struct crash_model *m;
	if ((rc = crash_model_create(&m))) {
		nostall_umount(fs);
		dev_close(d);
		return wl_set_err(c->r, rc, "the model");
	}
	struct crash_wl_ctx w = { .fs = fs, .dev = d, .m = m, .rng = wl_mix(j->seed, (uint64_t)wl + 1, j->bs), .bs = j->bs };
	rc = wl == WL_NR ? orphan_source(fs, w.rng, w.errmsg, sizeof w.errmsg) : crash_workload_run(&w, wl);
	c->r->ops += w.nops;
	int urc = nostall_umount(fs);
	dev_close(d);
	crash_model_destroy(m);
	if (rc || urc) {
		snprintf(c->r->errmsg, sizeof c->r->errmsg, "source workload %s: %.200s", WLNAME(wl),
			 rc ? w.errmsg : err_last(urc));
		return c->r->error = rc ? rc : urc;
	}
	struct crash_log *l;
	if ((rc = crash_log_load(c->log, &l)))
		return wl_set_err(c->r, rc, "reading the source recording");
	c->r->entries += crash_log_entries(l);
	c->r->epochs += crash_log_nepochs(l);
	struct crash_state *st;
	size_t n;
	uint64_t seed = wl_mix(j->seed, (uint64_t)wl + 201, j->bs ^ (uint64_t)j->mode[0] << 16);
	rc = crash_states_make(l, SRC_STATES, seed, &st, &n);
	if (rc) {
		crash_log_destroy(l);
		return wl_set_err(c->r, rc, "making source states");
	}
	/* the candidates: committed transactions to replay (1), and orphans
	 * after the replay (2): half of the picks from those when there are */
	uint8_t *cand = calloc(n ? n : 1, 1);
	size_t nc[3] = { 0 };
	for (size_t i = 0; cand && !rc && i < n; i++) {
		if ((rc = wl_dev_new(&d)))
			break;
		struct jbd_recovery_info info;
		bool orphans;
		char why[160];
		wl_beat();
		if (!(rc = crash_state_build(l, &st[i], d)) &&
		    !ext3_journal_recover(d, JBD_RECOVER_DRY_RUN, &info, NULL) && info.transactions > 0)
			cand[i] = !wl_recover(d, j->mode, j->opts, &orphans, why, sizeof why) && orphans ? 2 : 1;
		nc[cand[i]]++;
		dev_close(d);
	}
	if (!cand)
		rc = -ENOMEM;
	crash_log_rewind(l);
	size_t want[3] = { 0, 0, nc[2] < (picks + 1) / 2 ? nc[2] : (picks + 1) / 2 }, seen[3] = { 0 }, done = 0;
	want[1] = picks - want[2] < nc[1] ? picks - want[2] : nc[1];
	if (want[1] + want[2] < picks)
		want[2] = picks - want[1] < nc[2] ? picks - want[1] : nc[2];
	for (size_t i = 0; !rc && i < n && done < picks; i++) {
		if ((rc = wl_dev_new(&d)))
			break;
		rc = crash_state_build(l, &st[i], d); /* in order: the epochs' images advance */
		uint8_t t = cand[i];
		/* evenly: the k-th of nc[t] when k * want / nc crosses an integer */
		bool take = !rc && t && (seen[t] + 1) * want[t] / nc[t] > seen[t] * want[t] / nc[t];
		seen[t] += t != 0;
		if (take)
			rc = wl_dev_read(d, c->src);
		dev_close(d);
		if (!take || rc)
			continue;
		char name[120], sd[48];
		crash_state_format(&st[i], sd, sizeof sd);
		snprintf(name, sizeof name, "source %s%s %.40s", WLNAME(wl), t == 2 ? " (orphans)" : "", sd);
		rc = check_source(c, per, wl_mix(seed, i, 7), name);
		done++;
	}
	if (rc && !c->r->error)
		wl_set_err(c->r, rc, "checking source states");
	free(cand);
	crash_states_free(st, n);
	crash_log_destroy(l);
	unlink(c->log);
	return c->r->error;
}

int wl_recovery_run(const struct crash_job *j, struct crash_result *r)
{
	struct rctx c = { .j = j, .r = r, .pick = wl_mix(j->seed, 0x5bd1e995u, j->bs) };
	snprintf(c.log, sizeof c.log, "%s/rec.log", j->tmpdir);
	snprintf(c.rlog, sizeof c.rlog, "%s/rec2.log", j->tmpdir);
	snprintf(c.crash, sizeof c.crash, "%s/crash.img", j->tmpdir);
	snprintf(c.mine, sizeof c.mine, "%s/nostall.img", j->tmpdir);
	snprintf(c.out, sizeof c.out, "%s/e2fsck.out", j->tmpdir);
	uint8_t *base = malloc(CRASH_IMAGE_BYTES);
	c.src = malloc(CRASH_IMAGE_BYTES);
	c.img = malloc(CRASH_IMAGE_BYTES);
	c.img2 = malloc(CRASH_IMAGE_BYTES);
	int rc = base && c.src && c.img && c.img2 ? 0 : wl_set_err(r, -ENOMEM, "out of memory");
	if (!rc)
		rc = crash_base_image(j->bs, base, r);
	/* budget: interrupted states; a source state gets `per` of them */
	unsigned nsrc = j->budget / 40, per;
	nsrc = nsrc < 2 ? 2 : nsrc > 24 ? 24 : nsrc;
	per = j->budget / nsrc;
	per = per < 4 ? 4 : per;
	for (size_t s = 0; !rc && s < NSOURCES && s < nsrc; s++) {
		unsigned picks = (unsigned)(nsrc / NSOURCES + (s < nsrc % NSOURCES));
		rc = run_source(&c, base, sources[(s + j->seed) % NSOURCES], picks, per);
	}
	wl_tree_free(&c.ref);
	free(base);
	free(c.src);
	free(c.img);
	free(c.img2);
	unlink(c.rlog);
	unlink(c.log);
	return r->error;
}
