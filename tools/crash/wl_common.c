/* crashtest: what the workloads with a job of their own share (wl.h,
 * docs/crashtest-workloads.md): the dispatch from crash_job_run, the kind
 * columns of a report, nostall's recovery of an image (journal replay,
 * then the orphan cleanup's read-write mount), a filesystem's contents as
 * the checker compares them, and e2fsck.
 */
#include "wl.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "jbd/jbd.h"
#include "nostall/nostall.h"
#include "util/array.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* ------------------------------------------------------------ dispatch */

bool crash_wl_own_job(enum crash_wl wl)
{
	return wl == WL_RECOVERY || wl == WL_EIO_LOOP;
}

/* The watchdog: a recovery (or an unmount after EIO) that never returns
 * is a violation, not a hung run. When no state finished for WL_HANG_S
 * seconds, the job's result so far, with that violation, goes to the
 * parent as the worker's result (main.c's message: header, result) and
 * the worker ends. */
#define WL_HANG_S 20.0

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	double beat, t0;
	const struct crash_job *j;
	struct crash_result *r;
} watch = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

void wl_beat(void)
{
	pthread_mutex_lock(&watch.mu);
	watch.beat = wl_now();
	pthread_mutex_unlock(&watch.mu);
}

static void *watch_main(void *arg)
{
	pthread_mutex_lock(&watch.mu);
	while (!watch.stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&watch.cv, &watch.mu, &ts);
		if (watch.stop || wl_now() - watch.beat < WL_HANG_S)
			continue;
		pthread_mutex_unlock(&watch.mu); /* wl_count beats */
		struct { struct crash_msg h; struct crash_result res; } msg;
		memset(&msg, 0, sizeof msg);
		msg.res = *watch.r; /* the job's thread is stuck */
		struct crash_verdict v;
		memset(&v, 0, sizeof v);
		crash_verdict_add(&v, watch.j->wl == WL_RECOVERY ? CK_REC_INTERRUPTED : CK_EIO_EROFS,
				  "no state finished for %.0f s: a recovery, mount or unmount hangs (the job stopped)",
				  WL_HANG_S);
		msg.res.states--; /* wl_count counts the hung state */
		wl_count(&msg.res, watch.j, &v, "after the last state");
		msg.res.seconds = wl_now() - watch.t0;
		msg.h.type = 2;
		fprintf(stderr, "nostall crashtest: %s bs=%u %s: %s\n", watch.j->mode, watch.j->bs,
			crash_wl_names[watch.j->wl], v.why[watch.j->wl == WL_RECOVERY ? CK_REC_INTERRUPTED : CK_EIO_EROFS]);
		/* the scratch files (main.c's child() would remove them) */
		static const char *const files[] = { "crash.img", "nostall.img", "e2fsck.out", "rec.log", "rec2.log" };
		for (size_t i = 0; watch.j->tmpdir && i < sizeof files / sizeof files[0]; i++) {
			char p[700];
			snprintf(p, sizeof p, "%s/%s", watch.j->tmpdir, files[i]);
			unlink(p);
		}
		if (watch.j->tmpdir)
			rmdir(watch.j->tmpdir);
		ssize_t n = watch.j->progress_fd >= 0 ? write(watch.j->progress_fd, &msg, sizeof msg) : -1;
		_exit(n == (ssize_t)sizeof msg ? 0 : 1);
	}
	pthread_mutex_unlock(&watch.mu);
	return arg;
}

int crash_wl_job_run(const struct crash_job *j, struct crash_result *r)
{
	double t0 = wl_now();
	memset(r, 0, sizeof *r);
	watch.j = j;
	watch.r = r;
	watch.t0 = t0;
	watch.stop = false;
	wl_beat();
	pthread_t t;
	bool watching = !pthread_create(&t, NULL, watch_main, NULL);
	int rc = j->wl == WL_RECOVERY ? wl_recovery_run(j, r) : wl_eio_run(j, r);
	if (watching) {
		pthread_mutex_lock(&watch.mu);
		watch.stop = true;
		pthread_cond_signal(&watch.cv);
		pthread_mutex_unlock(&watch.mu);
		pthread_join(t, NULL);
	}
	if (rc && !r->error)
		wl_set_err(r, rc, "workload");
	r->seconds = wl_now() - t0;
	return r->error;
}

/* The workload a kind belongs to (WL_NR: every workload's). */
static enum crash_wl kind_owner(enum crash_kind k)
{
	switch (k) {
	case CK_REC_INTERRUPTED:
	case CK_REC_IDEMPOTENT:
	case CK_REC_E2FSCK: return WL_RECOVERY;
	case CK_EIO_EROFS: return WL_EIO_LOOP;
	default: return WL_NR;
	}
}

bool crash_kind_shown(enum crash_kind k, const char *mode, const struct crash_row *rows, size_t n)
{
	enum crash_wl owner = kind_owner(k);
	if (owner == WL_NR)
		return true;
	for (size_t i = 0; i < n; i++)
		if (rows[i].job->wl == owner && (!mode || !strcmp(rows[i].job->mode, mode)))
			return true;
	return false;
}

/* ------------------------------------------------------------ helpers */

double wl_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

uint64_t wl_mix(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ull) ^ (c * 0xc2b2ae3d27d4eb4full);
	return crash_rnd(&s);
}

int wl_set_err(struct crash_result *r, int rc, const char *what)
{
	if (!r->error) {
		r->error = rc < 0 ? rc : -EIO;
		snprintf(r->errmsg, sizeof r->errmsg, "%s: %s", what, err_last(rc));
	}
	return r->error;
}

void wl_count(struct crash_result *r, const struct crash_job *j, const struct crash_verdict *v, const char *what)
{
	wl_beat();
	r->states++;
	r->e2fsck_states += v->e2fsck_ran;
	r->orphan_states += v->orphans;
	r->kernel_agrees += v->kernel_agrees;
	bool any = false, bad = false;
	for (int k = 0; k < CK_NR; k++) {
		if (!v->bad[k])
			continue;
		any = true;
		r->by_kind[k]++;
		bad = bad || !crash_kind_allowed(j->mode, (enum crash_kind)k);
	}
	if (!any)
		return;
	r->violating++;
	int slot = crash_result_why_slot(r, bad);
	if (slot < 0)
		return;
	for (int k = 0; k < CK_NR; k++) {
		if (!v->bad[k] || (bad && crash_kind_allowed(j->mode, (enum crash_kind)k)))
			continue;
		snprintf(r->why[slot], sizeof r->why[0], "%s bs=%u %s seed=%llu %.100s: %s: %s", j->mode, j->bs,
			 crash_wl_names[j->wl], (unsigned long long)j->seed, what, crash_kind_names[k], v->why[k]);
		r->why_bad[slot] = bad;
		return;
	}
}

/* ------------------------------------------------------------ images */

#define CHUNK (1u << 20)

int wl_dev_new(struct dev **out)
{
	char spec[32];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)CRASH_IMAGE_BYTES);
	return dev_open(spec, out);
}

int wl_dev_read(struct dev *d, uint8_t *img)
{
	for (uint64_t off = 0; off < CRASH_IMAGE_BYTES; off += CHUNK) {
		int rc = dev_rw_sync(d, DEV_OP_READ, off / DEV_SECTOR_SIZE, CHUNK / DEV_SECTOR_SIZE, img + off, 0);
		if (rc)
			return rc;
	}
	return 0;
}

int wl_dev_write(struct dev *d, const uint8_t *img, bool skip_zero)
{
	for (uint64_t off = 0; off < CRASH_IMAGE_BYTES; off += CHUNK) {
		if (skip_zero && crash_all_zero(img + off, CHUNK))
			continue;
		int rc = dev_rw_sync(d, DEV_OP_WRITE, off / DEV_SECTOR_SIZE, CHUNK / DEV_SECTOR_SIZE, (void *)(img + off),
				     0);
		if (rc)
			return rc;
	}
	return 0;
}

int wl_img_save(const uint8_t *img, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(-errno, "crashtest: cannot create %s: %s", path, strerror(errno));
	int rc = ftruncate(fd, (off_t)CRASH_IMAGE_BYTES) ? -errno : 0;
	for (uint64_t off = 0; !rc && off < CRASH_IMAGE_BYTES; off += CHUNK)
		if (!crash_all_zero(img + off, CHUNK) && pwrite(fd, img + off, CHUNK, (off_t)off) != (ssize_t)CHUNK)
			rc = -EIO;
	close(fd);
	return rc ? err_set(rc, "crashtest: writing %s failed", path) : 0;
}

int wl_img_load(const char *path, uint8_t *img)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "crashtest: %s: %s", path, strerror(errno));
	size_t done = 0;
	while (done < CRASH_IMAGE_BYTES) {
		ssize_t n = pread(fd, img + done, CRASH_IMAGE_BYTES - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	memset(img + done, 0, CRASH_IMAGE_BYTES - done);
	return 0;
}

/* ------------------------------------------------------------ recording */

int wl_record_open(const char *spec, const uint8_t *base, const char *mode, const char *opts, struct dev **dev,
		   struct nostall_fs **fs, unsigned *ncmds)
{
	*fs = NULL;
	*ncmds = 0;
	int rc = dev_open(spec, dev);
	if (rc)
		return rc;
	for (uint64_t off = 0; !rc && off < CRASH_IMAGE_BYTES; off += CHUNK) {
		if (crash_all_zero(base + off, CHUNK))
			continue;
		rc = dev_rw_sync(*dev, DEV_OP_WRITE, off / DEV_SECTOR_SIZE, CHUNK / DEV_SECTOR_SIZE, (void *)(base + off), 0);
		++*ncmds;
	}
	if (!rc) {
		rc = dev_flush_sync(*dev);
		++*ncmds;
	}
	if (!rc)
		rc = dev_mark(*dev, "base");
	if (!rc && mode) {
		char o[64 + CRASH_OPTS_MAX];
		crash_record_opts(mode, opts, o, sizeof o);
		rc = nostall_mount_dev(*dev, o, 0, fs);
	}
	if (rc) {
		dev_close(*dev);
		*dev = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------ recovery */

static uint32_t last_orphan(struct dev *dev, int *rc)
{
	uint8_t sb[1024];
	*rc = dev_rw_sync(dev, DEV_OP_READ, 2, 2, sb, 0);
	return *rc ? 0 : (uint32_t)sb[0xe8] | (uint32_t)sb[0xe9] << 8 | (uint32_t)sb[0xea] << 16 |
				 (uint32_t)sb[0xeb] << 24;
}

int wl_recover(struct dev *dev, const char *mode, const char *opts, bool *orphans, char *why, size_t len)
{
	*orphans = false;
	struct jbd_recovery_info info;
	int rc = ext3_journal_recover(dev, 0, &info, NULL);
	if (rc) {
		snprintf(why, len, "journal replay failed: %s", err_last(rc));
		return rc;
	}
	*orphans = last_orphan(dev, &rc) != 0;
	if (rc) {
		snprintf(why, len, "reading the superblock: %s", err_last(rc));
		return rc;
	}
	if (!*orphans)
		return 0;
	char o[48 + CRASH_OPTS_MAX];
	snprintf(o, sizeof o, "data=%s%s%s", mode, opts && *opts ? "," : "", opts ? opts : "");
	struct nostall_fs *fs;
	rc = nostall_mount_dev(dev, o, 0, &fs);
	if (!rc)
		rc = nostall_umount(fs);
	if (rc)
		snprintf(why, len, "orphan cleanup (a read-write mount) failed: %s", nostall_errmsg(rc));
	return rc;
}

/* ------------------------------------------------------------ contents */

void wl_tree_free(struct wl_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].path);
	free(t->e);
	memset(t, 0, sizeof *t);
}

struct dirents {
	struct nostall_dirent *d;
	size_t n, cap;
};

static int collect(void *ctx, const struct nostall_dirent *de)
{
	struct dirents *ds = ctx;
	if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
		return 0;
	if (array_grow(&ds->d, &ds->cap, ds->n, sizeof *ds->d, 16))
		return -ENOMEM;
	ds->d[ds->n++] = *de;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nostall_dirent *)a)->name, ((const struct nostall_dirent *)b)->name);
}

static int hash_file(struct nostall_fs *fs, uint64_t ino, uint64_t size, uint64_t *h)
{
	static uint8_t buf[65536];
	struct nostall_file *f;
	int rc = nostall_open_ino(fs, ino, NOSTALL_O_RDONLY, &f);
	if (rc)
		return rc;
	*h = 0xcbf29ce484222325ull;
	for (uint64_t done = 0; done < size;) {
		size_t want = size - done < sizeof buf ? (size_t)(size - done) : sizeof buf;
		ssize_t n = nostall_pread(f, buf, want, done);
		if (n <= 0) {
			rc = n < 0 ? (int)n : -EIO;
			break;
		}
		for (ssize_t i = 0; i < n; i++)
			*h = (*h ^ buf[i]) * 0x100000001b3ull;
		done += (uint64_t)n;
	}
	nostall_close(f);
	return rc;
}

static int walk(struct nostall_fs *fs, uint64_t dir, const char *prefix, struct wl_tree *t, int depth)
{
	if (depth > 16)
		return err_set(-ELOOP, "crashtest: directory tree too deep at %s", prefix);
	struct dirents ds = { 0 };
	int rc = nostall_readdir_ino(fs, dir, collect, &ds);
	if (!rc && ds.n)
		qsort(ds.d, ds.n, sizeof *ds.d, name_cmp); /* htree order may differ */
	for (size_t i = 0; !rc && i < ds.n; i++) {
		char path[600];
		snprintf(path, sizeof path, "%s/%s", prefix, ds.d[i].name);
		struct nostall_stat st;
		rc = nostall_stat_ino(fs, ds.d[i].ino, &st);
		if (rc)
			break;
		if (array_grow(&t->e, &t->cap, t->n, sizeof *t->e, 64)) {
			rc = -ENOMEM;
			break;
		}
		struct wl_tent *e = &t->e[t->n];
		*e = (struct wl_tent){ .path = strdup(path), .ino = st.ino, .size = st.size, .blocks = st.blocks,
				       .mode = st.mode, .nlink = st.nlink, .uid = st.uid };
		if (!e->path) {
			rc = -ENOMEM;
			break;
		}
		t->n++;
		if ((st.mode & S_IFMT) == S_IFDIR)
			rc = walk(fs, st.ino, path, t, depth + 1);
		else if ((st.mode & S_IFMT) == S_IFREG)
			rc = hash_file(fs, st.ino, st.size, &t->e[t->n - 1].hash);
	}
	free(ds.d);
	return rc;
}

int wl_tree_read(struct dev *dev, struct wl_tree *t)
{
	memset(t, 0, sizeof *t);
	struct nostall_fs *fs;
	int rc = nostall_mount_dev(dev, NULL, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		return rc;
	rc = walk(fs, NOSTALL_ROOT_INO, "", t, 0);
	struct nostall_statfs sf;
	if (!rc && !(rc = nostall_statfs(fs, &sf))) {
		t->blocks_free = sf.blocks_free;
		t->files_free = sf.files_free;
	}
	int urc = nostall_umount(fs);
	return rc ? rc : urc;
}

bool wl_tree_diff(const struct wl_tree *a, const struct wl_tree *b, char *why, size_t len)
{
	for (size_t i = 0; i < a->n || i < b->n; i++) {
		const struct wl_tent *x = i < a->n ? &a->e[i] : NULL, *y = i < b->n ? &b->e[i] : NULL;
		if (!x || !y || strcmp(x->path, y->path)) {
			snprintf(why, len, "names differ: %s against %s", x ? x->path : "(none)", y ? y->path : "(none)");
			return true;
		}
		if (x->ino != y->ino || x->size != y->size || x->blocks != y->blocks || x->nlink != y->nlink ||
		    x->hash != y->hash || x->mode != y->mode || x->uid != y->uid) {
			snprintf(why, len, "%s differs: ino %llu size %llu blocks %llu links %u%s against ino %llu size "
				 "%llu blocks %llu links %u",
				 x->path, (unsigned long long)x->ino, (unsigned long long)x->size,
				 (unsigned long long)x->blocks, x->nlink, x->hash != y->hash ? " (other data)" : "",
				 (unsigned long long)y->ino, (unsigned long long)y->size, (unsigned long long)y->blocks,
				 y->nlink);
			return true;
		}
	}
	if (a->blocks_free != b->blocks_free || a->files_free != b->files_free) {
		snprintf(why, len, "free blocks/inodes %llu/%llu against %llu/%llu", (unsigned long long)a->blocks_free,
			 (unsigned long long)a->files_free, (unsigned long long)b->blocks_free,
			 (unsigned long long)b->files_free);
		return true;
	}
	return false;
}

/* ------------------------------------------------------------ e2fsck */

int wl_e2fsck(const char *opt1, const char *opt2, const char *img, const char *out, char *sum, size_t len)
{
	int rc = crash_e2fsck_run(opt1, opt2, img, out);
	if (rc >= 0)
		crash_e2fsck_summary(out, sum, len);
	else
		sum[0] = '\0';
	return rc;
}
