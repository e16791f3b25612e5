/* crashtest: the long histories, `fsx` and `fsstress`
 * (docs/crashtest-workloads.md), xfstests generic/455 and generic/482: a
 * long seeded sequence of operations on an aged filesystem, every flush
 * epoch's end a crash state (states.c gives each one).
 *
 * Both run through the ordinary driver (workload.c: marks, model events),
 * so model.c's guarantees are what every crash state is checked against.
 * Their length scales with the job's budget (crash_wl_ctx.budget) up to a
 * cap; every operation draws the same numbers from the generator whatever
 * the length, so a dry run at the full length (a replay, budget unknown)
 * begins with exactly the recording's events, and the evaluator never
 * looks past the crash point.
 *
 * The aged image (crash_age, called by job.c before the "base" mark, so not
 * part of the recording): files of a few blocks created in /aged until the
 * filesystem is ~88 % full counting the gaps to come, then every other one
 * deleted: the free space left is mostly 1-4 block gaps scattered over
 * every group. The checks skip /aged (check.c), as they skip lost+found.
 */
#include "crash.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The cap and the scale of a history's length: the default run
 * (--states 10000 over 14 workloads and 2 block sizes: 357 a job) gets
 * about 23000 operations, a CI-sized one a few thousand. */
#define HIST_OPS_MAX 24000u
#define HIST_OPS_PER_STATE 64u
#define HIST_OPS_MIN 1000u

static size_t hist_len(const struct crash_wl_ctx *w)
{
	if (!w->budget)
		return HIST_OPS_MAX;
	uint64_t n = (uint64_t)w->budget * HIST_OPS_PER_STATE;
	return n < HIST_OPS_MIN ? HIST_OPS_MIN : n > HIST_OPS_MAX ? HIST_OPS_MAX : (size_t)n;
}

static uint64_t rr(struct crash_wl_ctx *w, uint64_t lo, uint64_t hi)
{
	return lo + crash_rnd(&w->rng) % (hi - lo + 1);
}

/* ------------------------------------------------------------ aging */

/* A file of nblocks blocks of the garbage pattern (write number 1: told
 * apart from the free-space fill) at path. */
static int age_file(struct nostall_fs *fs, const char *path, uint64_t bytes)
{
	static uint8_t buf[65536];
	int fd = nostall_fd_open(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_EXCL, 0600);
	if (fd < 0)
		return fd;
	int rc = 0;
	for (uint64_t off = 0; off < bytes && !rc;) {
		size_t n = bytes - off < sizeof buf ? (size_t)(bytes - off) : sizeof buf;
		for (size_t k = 0; k < n; k++)
			buf[k] = (uint8_t)(crash_pat(CRASH_OBJ_GARBAGE, 1, off + (k & ~(size_t)7)) >> (8 * (k & 7)));
		ssize_t got = nostall_fd_pwrite(fs, fd, buf, n, off);
		if (got != (ssize_t)n)
			rc = got < 0 ? (int)got : -ENOSPC;
		off += n;
	}
	int crc = nostall_fd_close(fs, fd);
	return rc ? rc : crc;
}

int crash_age(struct nostall_fs *fs, unsigned bs, uint64_t seed)
{
	/* as root: the files may use the reserved blocks, so the workload's
	 * users (who may not) find the gaps and little else */
	nostall_cred_set(0, 0, NULL, 0);
	struct nostall_statfs sf;
	int rc = nostall_mkdir(fs, "/aged", 0700);
	if (!rc)
		rc = nostall_statfs(fs, &sf);
	uint64_t target = sf.blocks * 12 / 100, gaps = 0, s = seed ^ 0xa6edull;
	char path[64];
	/* pairs (kept: 6-30 blocks, gap: 1-4) until what stays free, the
	 * gaps included, is down to the target */
	for (unsigned i = 0; !rc; i += 2) {
		if (sf.blocks_free + gaps <= target)
			break;
		uint64_t keep = 6 + crash_rnd(&s) % 25, gap = 1 + crash_rnd(&s) % 4;
		snprintf(path, sizeof path, "/aged/%05u", i);
		rc = age_file(fs, path, keep * bs);
		snprintf(path, sizeof path, "/aged/%05u", i + 1);
		if (!rc)
			rc = age_file(fs, path, gap * bs);
		gaps += gap;
		if (!rc)
			rc = nostall_statfs(fs, &sf);
	}
	for (unsigned i = 1; !rc; i += 2) {
		snprintf(path, sizeof path, "/aged/%05u", i);
		rc = nostall_unlink(fs, path);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
	}
	if (!rc)
		rc = nostall_sync(fs);
	nostall_cred_reset();
	return rc;
}

/* ------------------------------------------------------------ fsx */

#define FSX_FILES 2
#define FSX_MAXSIZE (256u * 1024)
#define FSX_MAXLEN (16u * 1024)

struct fsx_file {
	const char *path;
	uint32_t obj;
	uint64_t size;
	uint64_t *w; /* the words now: every one from size on is 0 */
};

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Read [off, off + len) back through the library and compare it (and the
 * size) with the shadow: the page cache and the filesystem must give what
 * was written, sparse parts as zeros. */
static void fsx_verify(struct crash_wl_ctx *w, struct fsx_file *f, uint64_t off, uint64_t len)
{
	static uint8_t buf[FSX_MAXSIZE];
	char what[200];
	if (!w->fs || w->err)
		return;
	struct nostall_stat st;
	int rc = nostall_stat(w->fs, f->path, 0, &st);
	if (rc || st.size != f->size) {
		snprintf(what, sizeof what, "read-back: %s has size %llu, the model %llu", f->path,
			 rc ? 0ull : (unsigned long long)st.size, (unsigned long long)f->size);
		crash_op_fail(w, rc ? rc : -EIO, what);
		return;
	}
	if (off >= f->size)
		return;
	if (off + len > f->size)
		len = f->size - off;
	int fd = nostall_fd_open(w->fs, f->path, NOSTALL_O_RDONLY, 0);
	if (fd < 0) {
		crash_op_fail(w, fd, "read-back: open");
		return;
	}
	ssize_t n = nostall_fd_pread(w->fs, fd, buf, (size_t)len, off);
	nostall_fd_close(w->fs, fd);
	if (n != (ssize_t)len) {
		snprintf(what, sizeof what, "read-back: %s: %zd of %llu bytes at %llu", f->path, n,
			 (unsigned long long)len, (unsigned long long)off);
		crash_op_fail(w, n < 0 ? (int)n : -EIO, what);
		return;
	}
	for (uint64_t k = 0; k < len; k += 8) {
		uint64_t got = le64(buf + k), want = f->w[(off + k) / 8];
		if (got != want) {
			snprintf(what, sizeof what, "read-back: %s at %llu: %016llx, the model %016llx", f->path,
				 (unsigned long long)(off + k), (unsigned long long)got, (unsigned long long)want);
			crash_op_fail(w, -EIO, what);
			return;
		}
	}
}

static void fsx_write(struct crash_wl_ctx *w, struct fsx_file *f, uint64_t off, uint64_t len)
{
	if (off + len > FSX_MAXSIZE)
		len = FSX_MAXSIZE - off;
	if (!len)
		return;
	uint32_t seq = crash_op_write(w, f->path, off, len);
	for (uint64_t k = 0; k < len; k += 8)
		f->w[(off + k) / 8] = crash_pat(f->obj, seq, off + k);
	if (off + len > f->size)
		f->size = off + len;
}

static void fsx_trunc(struct crash_wl_ctx *w, struct fsx_file *f, uint64_t size)
{
	crash_op_trunc(w, f->path, size);
	if (size < f->size)
		memset(f->w + size / 8, 0, (size_t)(f->size - size));
	f->size = size;
}

void crash_wl_fsx(struct crash_wl_ctx *w)
{
	static const char *const names[FSX_FILES] = { "/fsx", "/fsx.b" };
	struct fsx_file fs[FSX_FILES];
	memset(fs, 0, sizeof fs);
	for (int i = 0; i < FSX_FILES; i++) {
		fs[i].path = names[i];
		fs[i].w = calloc(FSX_MAXSIZE / 8, sizeof *fs[i].w);
		if (!fs[i].w) {
			crash_op_fail(w, -ENOMEM, "fsx: the shadow");
			goto out;
		}
		fs[i].obj = crash_op_create(w, names[i]);
	}
	crash_op_sync(w);
	size_t n = hist_len(w);
	for (size_t i = 0; i < n && !w->err; i++) {
		struct fsx_file *f = &fs[rr(w, 0, 3) == 0];
		uint64_t r = rr(w, 0, 999), a = crash_rnd(&w->rng), b = crash_rnd(&w->rng);
		uint64_t len = 8 * (1 + b % ((a & 3) ? 512 / 8 : FSX_MAXLEN / 8));
		if (r < 380) { /* write at a random offset: sparse beyond the end */
			fsx_write(w, f, 8 * (a % (FSX_MAXSIZE / 8)), len);
		} else if (r < 520) { /* append */
			fsx_write(w, f, f->size < FSX_MAXSIZE ? f->size : 8 * (a % (FSX_MAXSIZE / 8)), len);
		} else if (r < 600) { /* truncate down */
			fsx_trunc(w, f, 8 * (a % (f->size / 8 + 1)));
		} else if (r < 640) { /* truncate up (a sparse tail) */
			fsx_trunc(w, f, f->size + 8 * (a % ((FSX_MAXSIZE - f->size) / 8 + 1)));
		} else if (r < 970 || r >= 978) { /* read back: no event, nothing on disk */
			fsx_verify(w, f, 8 * (a % (FSX_MAXSIZE / 8)), len);
		} else if (r < 974) {
			crash_op_fsync(w, f->path, false);
		} else if (r < 977) {
			crash_op_fsync(w, f->path, true);
		} else if (r < 978) {
			crash_op_sync(w);
		}
		if (i % 1000 == 999) /* the whole file now and then */
			fsx_verify(w, f, 0, FSX_MAXSIZE);
	}
out:
	for (int i = 0; i < FSX_FILES; i++)
		free(fs[i].w);
}

/* ------------------------------------------------------------ fsstress */

/* Names in the root, in three directories and in two nested ones (all
 * created and removed by the workload); only files are renamed (the model
 * does not move a directory's names). */
static const char *const sdirs[] = { "/p0", "/p1", "/p2", "/p0/q", "/p1/q" };
#define NSD (sizeof sdirs / sizeof sdirs[0])
#define NSLOC (NSD + 1)
#define NSNAMES 6
#define SS_MAXSIZE (32u * 1024)

static void ss_name(char *buf, size_t len, unsigned k)
{
	unsigned loc = k / NSNAMES, nm = k % NSNAMES;
	snprintf(buf, len, "%s/f%u", loc ? sdirs[loc - 1] : "", nm);
}

static bool ss_is_file(struct crash_wl_ctx *w, const char *path)
{
	uint32_t o = crash_model_lookup(w->m, path);
	return o && !crash_model_is_dir(w->m, o);
}

/* A pool name: an existing file (want) or a free name whose directory is
 * there; a fixed number of draws, so the generator's use is the same. */
static bool ss_pick(struct crash_wl_ctx *w, bool want, char *buf, size_t len)
{
	bool found = false;
	for (int t = 0; t < 8; t++) {
		char p[48];
		ss_name(p, sizeof p, (unsigned)rr(w, 0, NSLOC * NSNAMES - 1));
		if (!found && (want ? ss_is_file(w, p) : !crash_wl_exists(w, p) && crash_wl_parent_ok(w, p))) {
			snprintf(buf, len, "%s", p);
			found = true;
		}
	}
	return found;
}


static uint64_t ss_size(struct crash_wl_ctx *w, const char *p)
{
	return crash_model_size(w->m, crash_model_lookup(w->m, p));
}

static void ss_op(struct crash_wl_ctx *w)
{
	char p[48], q[48];
	uint64_t r = rr(w, 0, 99), a = crash_rnd(&w->rng), len = 8 * (1 + crash_rnd(&w->rng) % (8192 / 8));
	/* the persisting operations (r 88-95) one time in six: a fsync or a
	 * sync every 80 operations or so keeps the epochs (each a state) to a
	 * few hundred in the default run */
	if (r >= 88 && r < 96 && a % 6)
		return;
	if (r < 14) { /* create, often with data */
		if (ss_pick(w, false, p, sizeof p)) {
			crash_op_create(w, p);
			if (a & 1)
				crash_op_write(w, p, 0, len);
		}
	} else if (r < 38) { /* write: overwrite, extend or past the end */
		if (ss_pick(w, true, p, sizeof p)) {
			uint64_t s = ss_size(w, p), off = 8 * (a % ((s + 4096) / 8 + 1));
			if (off >= SS_MAXSIZE)
				off = s < SS_MAXSIZE ? s : 0;
			crash_op_write(w, p, off, off + len > SS_MAXSIZE ? SS_MAXSIZE - off : len);
		}
	} else if (r < 48) { /* truncate, mostly down */
		if (ss_pick(w, true, p, sizeof p)) {
			uint64_t s = ss_size(w, p);
			uint64_t t = a & 3 ? 8 * (a % (s / 8 + 1)) : s + 8 * (a % 1024);
			crash_op_trunc(w, p, t > SS_MAXSIZE ? SS_MAXSIZE : t);
		}
	} else if (r < 56) { /* mkdir, or rmdir when empty */
		const char *d = sdirs[a % NSD];
		if (!crash_wl_exists(w, d) && crash_wl_parent_ok(w, d))
			crash_op_mkdir(w, d);
		else if (crash_wl_exists(w, d) && crash_wl_dir_empty(w, d))
			crash_op_unlink(w, d, true);
	} else if (r < 68) { /* rename a file, maybe over another */
		if (ss_pick(w, true, p, sizeof p)) {
			ss_name(q, sizeof q, (unsigned)(a % (NSLOC * NSNAMES)));
			if (strcmp(p, q) && crash_wl_parent_ok(w, q) && (!crash_wl_exists(w, q) || ss_is_file(w, q)) &&
			    crash_model_lookup(w->m, p) != crash_model_lookup(w->m, q))
				crash_op_rename(w, p, q);
		}
	} else if (r < 76) { /* hard link */
		if (ss_pick(w, true, p, sizeof p) && ss_pick(w, false, q, sizeof q))
			crash_op_link(w, p, q);
	} else if (r < 88) { /* unlink */
		if (ss_pick(w, true, p, sizeof p))
			crash_op_unlink(w, p, false);
	} else if (r < 91) {
		if (ss_pick(w, true, p, sizeof p))
			crash_op_fsync(w, p, false);
	} else if (r < 93) {
		if (ss_pick(w, true, p, sizeof p))
			crash_op_fsync(w, p, true);
	} else if (r < 95) { /* fsync of a directory (the root when it is gone) */
		const char *d = sdirs[a % NSD];
		crash_op_fsync(w, crash_wl_exists(w, d) ? d : "/", false);
	} else if (r < 96) {
		crash_op_sync(w);
	}
	/* else: nothing (an idle step: fsstress's reads and stats) */
}

void crash_wl_fsstress(struct crash_wl_ctx *w)
{
	crash_op_mkdir(w, "/p0");
	crash_op_mkdir(w, "/p1");
	crash_op_sync(w);
	size_t n = hist_len(w);
	for (size_t i = 0; i < n && !w->err; i++)
		ss_op(w);
}
