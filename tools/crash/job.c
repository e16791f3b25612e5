/* crashtest: one job (crash.h): the base image, the recording, the states
 * and their checks; and the re-check of a kept state.
 *
 * e2fsck sampling (docs/crashtest.md "Sampling"): with fsck_every N the
 * e2fsck oracle runs on a seeded 1-in-N sample of the states, and on every
 * state where nostall's own checks or recovery found something the data
 * mode does not allow (the state is rebuilt and checked again with the
 * oracle; at most 32 such re-checks per job, which bounds the time of a
 * run that fails everywhere). N = 1 checks all, 0 none.
 */
#include "crash.h"

#include "dev/dev.h"
#include "extfs/format/ext3_format.h"
#include "extfs/mkfs/mkfs.h"
#include "nostall/nostall.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ull) ^ (c * 0xc2b2ae3d27d4eb4full);
	return crash_rnd(&s);
}

/* The workload's generator seed and the states' (both from the job). */
static uint64_t wl_seed(const struct crash_job *j)
{
	return mix3(j->seed, (uint64_t)j->wl + 1, j->bs);
}

static uint64_t states_seed(const struct crash_job *j)
{
	return mix3(j->seed, (uint64_t)j->wl + 101, j->bs ^ (uint64_t)j->mode[0] << 16 ^ (uint64_t)j->mode[1] << 24);
}

static int set_err(struct crash_result *r, int rc, const char *what)
{
	if (!r->error) {
		r->error = rc < 0 ? rc : -EIO;
		snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", what, err_last(rc));
	}
	return r->error;
}

/* ------------------------------------------------------------ base image */

static char fs_type[CRASH_FS_MAX] = "ext3";
static char fs_features[CRASH_OPTS_MAX];

void crash_fs_set(const char *type, const char *features)
{
	snprintf(fs_type, sizeof fs_type, "%s", type && *type ? type : "ext3");
	snprintf(fs_features, sizeof fs_features, "%s", features ? features : "");
}

int crash_fs_check(const char *type, const char *features)
{
	struct ext3_mkfs_params p = { 0 };
	return ext3_mkfs_params_fs_type(&p, type && *type ? type : "ext3", features);
}

bool crash_fs_journal(const char *type, const char *features)
{
	struct ext3_mkfs_params p = { 0 };
	return ext3_mkfs_params_fs_type(&p, type && *type ? type : "ext3", features) == 0 &&
	       (p.features[0] & EXT3_FEATURE_COMPAT_HAS_JOURNAL);
}

void crash_fs_words(const struct crash_job *j, char *buf, size_t len)
{
	buf[0] = '\0';
	if ((j->fs[0] && strcmp(j->fs, "ext3")) || j->features[0])
		snprintf(buf, len, " fs=%s%s%s", j->fs[0] ? j->fs : "ext3", j->features[0] ? " features=" : "",
			 j->features);
}

/* nostall's mkfs on a new mem: device: fixed uuid and time, so every job
 * of a block size starts from the same image; its type and features are
 * the process's (crash_fs_set). */
static int mkfs_mem(unsigned bs, struct dev **out)
{
	/* the aged image's files need inodes (about one per 25 KiB) */
	uint32_t inodes = CRASH_IMAGE_BYTES > CRASH_IMAGE_BYTES_DEFAULT ? 4096 : 1024;
	char spec[32];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)CRASH_IMAGE_BYTES);
	int rc = dev_open(spec, out);
	if (rc)
		return rc;
	struct ext3_mkfs_params p = { .block_size = bs, .inode_size = 256, .inodes = inodes, .journal_blocks = 1024,
				      .uuid_set = true, .time_set = true, .time = 1234567890, .assume_zeroed = true };
	for (int i = 0; i < 16; i++)
		p.uuid[i] = (uint8_t)(0x5a + 17 * i);
	/* the default ext3 image stays exactly the one made before --fs existed */
	if (strcmp(fs_type, "ext3") || fs_features[0])
		rc = ext3_mkfs_params_fs_type(&p, fs_type, fs_features);
	if (!rc)
		rc = ext3_mkfs(*out, &p);
	if (rc) {
		dev_close(*out);
		*out = NULL;
	}
	return rc;
}

/* mkfs, then the free space filled with the garbage pattern by a file
 * that is then deleted: a block a crash exposes without its data shows
 * another file's (or the garbage's) words. The mount is data=ordered
 * whatever the job's mode and options: this image is the recording's
 * starting point, not part of what is tested (and an option such as
 * journal_async_commit is refused with data=ordered). */
static int base_make(unsigned bs, bool aged, uint8_t *img, struct crash_result *r)
{
	struct dev *d;
	int rc = mkfs_mem(bs, &d);
	if (rc)
		return set_err(r, rc, "making the base image");
	struct nostall_fs *fs = NULL;
	rc = nostall_mount_dev(d, "data=ordered", 0, &fs);
	if (rc) {
		dev_close(d);
		return set_err(r, rc, "making the base image");
	}
	nostall_cred_set(CRASH_UID_BASE + CRASH_OBJ_GARBAGE, CRASH_UID_BASE, NULL, 0);
	int fd = nostall_fd_open(fs, "/fill", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0600);
	nostall_cred_reset();
	static uint8_t buf[65536];
	for (uint64_t off = 0; fd >= 0;) {
		for (size_t k = 0; k < sizeof buf; k++)
			buf[k] = (uint8_t)(crash_pat(CRASH_OBJ_GARBAGE, 0, off + (k & ~(size_t)7)) >> (8 * (k & 7)));
		ssize_t n = nostall_fd_pwrite(fs, fd, buf, sizeof buf, off);
		if (n <= 0)
			break;
		off += (uint64_t)n;
	}
	rc = fd < 0 ? fd : nostall_fd_fsync(fs, fd, 0);
	if (fd >= 0)
		nostall_fd_close(fs, fd);
	if (!rc)
		rc = nostall_unlink(fs, "/fill");
	if (!rc)
		rc = nostall_sync(fs);
	if (!rc && aged)
		rc = crash_age(fs, bs, bs);
	int urc = nostall_umount(fs);
	if (!rc)
		rc = urc;
	for (uint64_t off = 0; !rc && off < CRASH_IMAGE_BYTES; off += 1u << 20)
		rc = dev_rw_sync(d, DEV_OP_READ, off / DEV_SECTOR_SIZE, 2048, img + off, 0);
	dev_close(d);
	return rc ? set_err(r, rc, "filling the base image") : 0;
}

/* ------------------------------------------------------------ recording */

void crash_record_opts(const char *mode, const char *opts, char *buf, size_t len)
{
	snprintf(buf, len, "data=%s,barrier=1%s%s", mode, opts && *opts ? "," : "", opts ? opts : "");
}

void crash_mode_label(const char *mode, const char *opts, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", mode, opts && *opts ? "," : "", opts ? opts : "");
}

int crash_opts_try(const char *mode, const char *opts, unsigned bs)
{
	struct dev *d;
	int rc = mkfs_mem(bs, &d);
	if (rc)
		return rc;
	char o[64 + CRASH_OPTS_MAX];
	crash_record_opts(mode, opts, o, sizeof o);
	struct nostall_fs *fs;
	rc = nostall_mount_dev(d, o, 0, &fs);
	if (!rc)
		rc = nostall_umount(fs);
	dev_close(d);
	return rc;
}

static int record(const struct crash_job *j, const uint8_t *base, const char *log, struct crash_model *m,
		  struct crash_result *r)
{
	char spec[700];
	snprintf(spec, sizeof spec, "log:mem:%llu,to=%s", (unsigned long long)CRASH_IMAGE_BYTES, log);
	struct dev *d;
	int rc = dev_open(spec, &d);
	if (rc)
		return set_err(r, rc, "opening the log device");
	/* the base image: entries before the "base" mark, made durable */
	for (uint64_t off = 0; !rc && off < CRASH_IMAGE_BYTES; off += 1u << 20) {
		if (!crash_all_zero(base + off, 1u << 20))
			rc = dev_rw_sync(d, DEV_OP_WRITE, off / DEV_SECTOR_SIZE, 2048, (void *)(base + off), 0);
	}
	if (!rc)
		rc = dev_flush_sync(d);
	if (!rc)
		rc = dev_mark(d, "base");
	char opts[64 + CRASH_OPTS_MAX];
	crash_record_opts(j->mode, j->opts, opts, sizeof opts);
	struct nostall_fs *fs = NULL;
	if (!rc)
		rc = nostall_mount_dev(d, opts, 0, &fs);
	if (rc) {
		dev_close(d);
		return set_err(r, rc, "mounting the recording");
	}
	struct crash_wl_ctx w = { .fs = fs, .dev = d, .m = m, .rng = wl_seed(j), .bs = j->bs, .budget = j->budget };
	rc = crash_workload_run(&w, j->wl);
	if (rc && !r->error) {
		r->error = rc;
		snprintf(r->errmsg, sizeof r->errmsg, "workload %s: %.200s", crash_wl_names[j->wl], w.errmsg);
	}
	r->ops = w.nops;
	int urc = nostall_umount(fs);
	dev_close(d);
	if (urc)
		return set_err(r, urc, "unmounting the recording");
	return r->error;
}

/* A dry run: the same events, no filesystem. */
static int model_dry(const struct crash_job *j, struct crash_model *m)
{
	struct crash_wl_ctx w = { .m = m, .rng = wl_seed(j), .bs = j->bs };
	return crash_workload_run(&w, j->wl);
}

/* ------------------------------------------------------------ checking */

struct cursor {
	const struct crash_log *l;
	struct crash_eval *e;
	size_t next; /* next mark */
};

/* Apply every mark before point. */
static int cursor_to(struct cursor *c, uint64_t point, size_t nevents)
{
	size_t n = crash_log_nmarks(c->l);
	for (; c->next < n; c->next++) {
		size_t op;
		char kind;
		uint64_t idx;
		crash_log_mark(c->l, c->next, &op, &kind, &idx);
		if (idx >= point)
			break;
		if (op >= nevents)
			return err_set(-EINVAL, "crashtest: mark %c%zu has no event (the model and the recording differ)",
				       kind, op);
		int rc = crash_eval_apply(c->e, op, kind == 'd');
		if (rc)
			return rc;
	}
	return 0;
}

static int fresh_dev(struct dev **d)
{
	char spec[32];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)CRASH_IMAGE_BYTES);
	return dev_open(spec, d);
}

/* Build state s on a new device and check it. */
static int check_one(struct crash_log *l, const struct crash_state *s, const struct crash_check_cfg *cfg,
		     const struct crash_eval *e, struct crash_verdict *v)
{
	struct dev *d;
	int rc = fresh_dev(&d);
	if (!rc)
		rc = crash_state_build(l, s, d);
	if (!rc)
		rc = crash_check_state(cfg, d, e, v);
	dev_close(d);
	return rc;
}

static bool any_bad(const struct crash_verdict *v)
{
	for (int k = 0; k < CK_NR; k++)
		if (v->bad[k])
			return true;
	return false;
}

/* A violation the mode does not allow: the oracle is asked too. */
static bool suspicious(const char *mode, const struct crash_verdict *v)
{
	for (int k = 0; k < CK_NR; k++)
		if (v->bad[k] && !crash_kind_allowed(mode, (enum crash_kind)k))
			return true;
	return false;
}

int crash_result_why_slot(struct crash_result *r, bool bad)
{
	if (r->nwhy < CRASH_WHY_MAX)
		return (int)r->nwhy++;
	if (!bad)
		return -1;
	for (int slot = 0; slot < CRASH_WHY_MAX; slot++)
		if (!r->why_bad[slot])
			return slot;
	return -1;
}

/* Describe a violating state in r->why: the first one, then states with a
 * kind the mode does not allow (they replace allowed-only ones). */
static void describe(const struct crash_job *j, const struct crash_state *s, const struct crash_verdict *v,
		     struct crash_result *r)
{
	bool bad = suspicious(j->mode, v);
	int slot = crash_result_why_slot(r, bad);
	if (slot < 0)
		return;
	char st[64], label[16 + CRASH_OPTS_MAX];
	crash_state_format(s, st, sizeof st); /* cut: the head is enough here */
	crash_mode_label(j->mode, j->opts, label, sizeof label);
	for (int k = 0; k < CK_NR; k++) {
		if (!v->bad[k] || (bad && crash_kind_allowed(j->mode, (enum crash_kind)k)))
			continue;
		snprintf(r->why[slot], sizeof r->why[0], "%s bs=%u %s seed=%" PRIu64 " state %.40s: %s: %s", label,
			 j->bs, crash_wl_names[j->wl], j->seed, st, crash_kind_names[k], v->why[k]);
		r->why_bad[slot] = bad;
		return;
	}
}

static void progress(const struct crash_job *j, uint64_t done)
{
	if (j->progress_fd < 0)
		return;
	struct crash_msg msg = { .type = 1, .done = done };
	ssize_t n = write(j->progress_fd, &msg, sizeof msg);
	(void)n;
}

static int check_all(const struct crash_job *j, struct crash_log *l, struct crash_model *m, const char *logpath,
		     struct crash_result *r)
{
	struct crash_state *st;
	size_t n;
	int rc = crash_states_make(l, j->budget, states_seed(j), &st, &n);
	if (rc)
		return set_err(r, rc, "making crash states");
	struct cursor c = { .l = l };
	rc = crash_eval_create(m, &c.e);
	if (rc) {
		crash_states_free(st, n);
		return set_err(r, rc, "the oracle");
	}
	crash_eval_allow_hole_tail(c.e, !strcmp(j->mode, "guarded"));
	uint64_t pick = states_seed(j) ^ 0x5bd1e995ull;
	struct crash_check_cfg cfg = { .mode = j->mode, .opts = j->opts, .bs = j->bs, .tmpdir = j->tmpdir };
	unsigned kept = 0, kept_allowed = 0, rechecks = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		rc = cursor_to(&c, st[i].point, crash_model_nevents(m));
		if (rc)
			break;
		cfg.e2fsck = j->fsck_every == 1 || (j->fsck_every && crash_rnd(&pick) % j->fsck_every == 0);
		struct crash_verdict v;
		rc = check_one(l, &st[i], &cfg, c.e, &v);
		if (!rc && suspicious(j->mode, &v) && !v.e2fsck_ran && j->fsck_every && rechecks < 32) {
			rechecks++;
			cfg.e2fsck = true; /* suspicious: ask the oracle too */
			rc = check_one(l, &st[i], &cfg, c.e, &v);
		}
		if (rc)
			break;
		r->states++;
		r->epoch_states += st[i].how == 'e';
		r->prefix_states += st[i].how == 'p';
		r->random_states += st[i].how == 's' || st[i].how == 't';
		r->e2fsck_states += v.e2fsck_ran;
		r->orphan_states += v.orphans;
		if (v.kernel_agrees) {
			r->kernel_agrees++;
			if (r->nkwhy < CRASH_WHY_MAX) {
				char ks[64], kl[16 + CRASH_OPTS_MAX];
				crash_state_format(&st[i], ks, sizeof ks);
				crash_mode_label(j->mode, j->opts, kl, sizeof kl);
				/* cut when long (the head is enough) */
				if (snprintf(r->kwhy[r->nkwhy++], sizeof r->kwhy[0],
					 "%s bs=%u %s seed=%" PRIu64 " state %.40s: e2fsck_differs_kernel_agrees: %.200s", kl,
					 j->bs, crash_wl_names[j->wl], j->seed, ks, v.kernel_why) < 0)
					r->kwhy[r->nkwhy - 1][0] = '\0';
			}
		}
		if (any_bad(&v)) {
			r->violating++;
			for (int k = 0; k < CK_NR; k++)
				r->by_kind[k] += v.bad[k];
			describe(j, &st[i], &v, r);
			bool bad = suspicious(j->mode, &v);
			if (j->keep && (bad ? kept < j->keep_max : !kept_allowed)) {
				kept_allowed += !bad;
				struct dev *d;
				rc = fresh_dev(&d);
				if (!rc)
					rc = crash_state_build(l, &st[i], d);
				if (!rc)
					rc = crash_keep_state(j, logpath, &st[i], d, &v, kept++);
				dev_close(d);
			}
		}
		if (i % 16 == 15)
			progress(j, r->states);
	}
	if (rc)
		set_err(r, rc, "checking crash states");
	progress(j, r->states);
	crash_eval_destroy(c.e);
	crash_states_free(st, n);
	return r->error;
}

int crash_base_image(unsigned bs, uint8_t *img, struct crash_result *r)
{
	return base_make(bs, false, img, r);
}

int crash_job_run(const struct crash_job *j, struct crash_result *r)
{
	crash_wl_image_set(j->wl);
	crash_fs_set(j->fs, j->features);
	if (crash_wl_own_job(j->wl))
		return crash_wl_job_run(j, r);
	double t0 = now_s();
	memset(r, 0, sizeof *r);
	uint8_t *base = malloc(CRASH_IMAGE_BYTES);
	struct crash_model *m = NULL;
	struct crash_log *l = NULL;
	char log[600];
	snprintf(log, sizeof log, "%s/rec.log", j->tmpdir);
	if (!base || crash_model_create(&m)) {
		set_err(r, -ENOMEM, "out of memory");
		goto out;
	}
	if (base_make(j->bs, crash_wl_aged(j->wl), base, r) || record(j, base, log, m, r))
		goto out;
	int rc = crash_log_load(log, &l);
	if (rc) {
		set_err(r, rc, "reading the recording");
		goto out;
	}
	r->entries = crash_log_entries(l);
	r->epochs = crash_log_nepochs(l);
	check_all(j, l, m, log, r);
out:
	crash_log_destroy(l);
	crash_model_destroy(m);
	free(base);
	unlink(log);
	r->seconds = now_s() - t0;
	return r->error;
}

/* ------------------------------------------------------------ replay */

static int read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[700];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return err_set(-errno, "crashtest: %s: %s", path, strerror(errno));
	char *s = fgets(buf, (int)len, f);
	fclose(f);
	if (!s)
		return err_set(-EINVAL, "crashtest: %s is empty", path);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The rest of job.txt's line: nothing (a state kept before -o existed, or
 * without it), or any of " options=OPTS" (the recording's extra mount
 * options), " fs=TYPE" and " features=LIST" (--fs, --features; absent for
 * ext3, the default). */
static bool job_opts_parse(const char *rest, struct crash_job *j)
{
	j->opts[0] = j->fs[0] = j->features[0] = '\0';
	for (;;) {
		rest += strspn(rest, " \t");
		if (!*rest)
			return true;
		char *dst;
		size_t cap, key;
		if (!strncmp(rest, "options=", 8))
			dst = j->opts, cap = sizeof j->opts, key = 8;
		else if (!strncmp(rest, "fs=", 3))
			dst = j->fs, cap = sizeof j->fs, key = 3;
		else if (!strncmp(rest, "features=", 9))
			dst = j->features, cap = sizeof j->features, key = 9;
		else
			return false;
		rest += key;
		size_t n = strcspn(rest, " \t");
		if (!n || n >= cap)
			return false;
		memcpy(dst, rest, n);
		dst[n] = '\0';
		rest += n;
	}
}

static const char *const ev_names[] = { "create", "mkdir", "write", "truncate", "link", "unlink",
					"rmdir", "rename", "fsync", "sync" };

/* The operations with the log entries of their marks, against the point. */
static void print_events(const struct crash_model *m, const struct crash_log *l, uint64_t point, FILE *out)
{
	size_t nm = crash_log_nmarks(l), k = 0;
	for (size_t i = 0; i < crash_model_nevents(m); i++) {
		const struct crash_ev *ev = crash_model_event(m, i);
		uint64_t start = UINT64_MAX, done = UINT64_MAX;
		for (; k < nm; k++) {
			size_t op;
			char kind;
			uint64_t idx;
			crash_log_mark(l, k, &op, &kind, &idx);
			if (op > i)
				break;
			if (kind == 'o')
				start = idx;
			else
				done = idx;
		}
		fprintf(out, "  %c op %zu at entry %" PRIu64 ": %s", start < point ? (done < point ? '+' : '~') : ' ', i,
			start, ev_names[ev->t]);
		if (ev->t == EV_WRITE)
			fprintf(out, " object %u write %u off %" PRIu64 " len %" PRIu64, ev->obj, ev->seq, ev->off, ev->len);
		else if (ev->t == EV_TRUNC)
			fprintf(out, " object %u to %" PRIu64, ev->obj, ev->off);
		else if (ev->t == EV_FSYNC && !ev->obj)
			fprintf(out, " /");
		else if (ev->t == EV_FSYNC)
			fprintf(out, " object %u%s", ev->obj, ev->len ? " (fdatasync)" : "");
		else if (ev->obj)
			fprintf(out, " object %u", ev->obj);
		if (ev->path)
			fprintf(out, " %s%s%s", ev->path, ev->path2 ? " -> " : "", ev->path2 ? ev->path2 : "");
		if (done != UINT64_MAX)
			fprintf(out, ", returned at entry %" PRIu64, done);
		fputc('\n', out);
	}
}

int crash_replay(const char *dir, bool events, FILE *out)
{
	char line[400], wl[32];
	struct crash_job j = { .progress_fd = -1, .fsck_every = 1 };
	int rc = read_line(dir, "job.txt", line, sizeof line);
	if (rc)
		return rc;
	int used = 0;
	if (sscanf(line, "mode=%15s block-size=%u workload=%31s seed=%" SCNu64 "%n", j.mode, &j.bs, wl, &j.seed,
		   &used) != 4 ||
	    crash_wl_parse(wl) < 0 || !job_opts_parse(line + used, &j))
		return err_set(-EINVAL, "crashtest: %s/job.txt: bad line '%s'", dir, line);
	j.wl = (enum crash_wl)crash_wl_parse(wl);
	crash_wl_image_set(j.wl);
	crash_fs_set(j.fs, j.features);
	static char sline[1 << 20];
	rc = read_line(dir, "state.txt", sline, sizeof sline);
	struct crash_state s;
	if (!rc)
		rc = crash_state_parse(sline, &s);
	if (rc)
		return rc;
	char tmp[] = "/tmp/nostall-replay-XXXXXX", log[700];
	struct crash_model *m = NULL;
	struct crash_log *l = NULL;
	struct crash_eval *e = NULL;
	if (!mkdtemp(tmp)) {
		free(s.sel);
		return err_set(-errno, "crashtest: mkdtemp: %s", strerror(errno));
	}
	snprintf(log, sizeof log, "%s/rec.log", dir);
	rc = crash_model_create(&m);
	if (!rc)
		rc = model_dry(&j, m);
	if (!rc)
		rc = crash_log_load(log, &l);
	if (!rc)
		rc = crash_eval_create(m, &e);
	if (!rc)
		crash_eval_allow_hole_tail(e, !strcmp(j.mode, "guarded"));
	struct cursor c = { .l = l, .e = e };
	if (!rc)
		rc = cursor_to(&c, s.point, crash_model_nevents(m));
	struct crash_verdict v;
	struct crash_check_cfg cfg = { .mode = j.mode, .opts = j.opts, .bs = j.bs, .tmpdir = tmp,
				       .e2fsck = crash_have_e2fsck() };
	if (!rc)
		rc = check_one(l, &s, &cfg, e, &v);
	if (!rc) {
		char label[16 + CRASH_OPTS_MAX];
		crash_mode_label(j.mode, j.opts, label, sizeof label);
		fprintf(out, "%s: data=%s, %u-byte blocks, workload %s, seed %" PRIu64 ", state %c at entry %" PRIu64
			     " (epoch %u)%s\n",
			dir, label, j.bs, wl, j.seed, s.how, s.point, s.epoch, v.e2fsck_ran ? ", e2fsck checked" : "");
		for (int k = 0; k < CK_NR; k++)
			if (v.bad[k])
				fprintf(out, "  %s: %s\n", crash_kind_names[k], v.why[k]);
		if (v.kernel_agrees)
			fprintf(out, "  e2fsck_differs_kernel_agrees (no violation: the kernel's recovery gives "
				     "nostall's): %s\n", v.kernel_why);
		if (!any_bad(&v))
			fprintf(out, "  no violation\n");
		if (events) {
			fprintf(out, "operations (+ returned before the crash, ~ started):\n");
			print_events(m, l, s.point, out);
		}
		rc = any_bad(&v) ? 1 : 0;
	}
	crash_eval_destroy(e);
	crash_log_destroy(l);
	crash_model_destroy(m);
	free(s.sel);
	char p[800];
	const char *files[] = { "crash.img", "nostall.img", "e2fsck.out" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s/%s", tmp, files[i]);
		unlink(p);
	}
	rmdir(tmp);
	return rc;
}
