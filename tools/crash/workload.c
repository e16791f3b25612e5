/* crashtest workloads (crash.h, docs/crashtest.md "Workloads").
 *
 * The driver: every operation is one model event, numbered in order. Before
 * it the driver places the mark "o<N>" on the log device, and after a
 * fsync/fdatasync/fsyncdir/sync returns, "d<N>": a crash point after "o<N>"
 * may show the operation's effects, one after "d<N>" must show what it
 * persisted. Inodes are created with uid CRASH_UID_BASE + object id, data
 * is the crash_pat pattern. Arguments come from the seeded generator and the
 * model (never from the filesystem), so a dry run (fs == NULL) makes the
 * same events: kept states are re-checked that way.
 */
#include "crash.h"

#include "dev/dev.h"
#include "nostall/nostall.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define WL_MAXWRITE (128u * 1024)

const char *const crash_wl_names[WL_NR] = {
	"append", "overwrite", "create", "rename-replace", "truncate-write", "dirs", "links", "htree", "random",
	"recovery", "eio-loop", "concurrent", "fsx", "fsstress",
};

uint64_t crash_image_bytes = CRASH_IMAGE_BYTES_DEFAULT;

bool crash_wl_aged(enum crash_wl wl)
{
	return wl == WL_FSX || wl == WL_FSSTRESS;
}

void crash_wl_image_set(enum crash_wl wl)
{
	crash_image_bytes = crash_wl_aged(wl) ? CRASH_IMAGE_BYTES_AGED : CRASH_IMAGE_BYTES_DEFAULT;
}

int crash_wl_parse(const char *name)
{
	for (int i = 0; i < WL_NR; i++)
		if (!strcmp(name, crash_wl_names[i]))
			return i;
	return -1;
}

uint64_t crash_rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A number in [lo, hi]. */
static uint64_t rr(struct crash_wl_ctx *w, uint64_t lo, uint64_t hi)
{
	return lo + crash_rnd(&w->rng) % (hi - lo + 1);
}

/* A length in [8, max], a multiple of 8. */
static uint64_t rlen(struct crash_wl_ctx *w, uint64_t max)
{
	return 8 * rr(w, 1, max / 8);
}

/* ------------------------------------------------------------ driver */

static int fail(struct crash_wl_ctx *w, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct crash_wl_ctx *w, int rc, const char *fmt, ...)
{
	if (w->err)
		return w->err;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(w->errmsg, sizeof w->errmsg, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof w->errmsg)
		snprintf(w->errmsg + n, sizeof w->errmsg - (size_t)n, ": %s", nostall_errmsg(rc));
	w->err = rc < 0 ? rc : -EIO;
	return w->err;
}

static int mark(struct crash_wl_ctx *w, char kind, size_t op)
{
	if (!w->dev)
		return 0;
	char name[32];
	snprintf(name, sizeof name, "%c%zu", kind, op);
	int rc = dev_mark(w->dev, name);
	return rc ? fail(w, rc, "mark %s", name) : 0;
}

/* Start operation ev: its mark, then its model event. */
static int op_start(struct crash_wl_ctx *w, struct crash_ev *ev, uint32_t *obj)
{
	if (w->err)
		return w->err;
	if (mark(w, 'o', w->nops))
		return w->err;
	int rc = crash_model_add(w->m, ev, obj);
	if (rc) {
		snprintf(w->errmsg, sizeof w->errmsg, "%s", nostall_errmsg(rc));
		return w->err = rc;
	}
	w->nops++;
	return 0;
}

static void cred(struct crash_wl_ctx *w, uint32_t obj)
{
	nostall_cred_set(CRASH_UID_BASE + obj, CRASH_UID_BASE, NULL, 0);
}

static uint32_t wl_create(struct crash_wl_ctx *w, const char *path)
{
	struct crash_ev ev = { .t = EV_CREATE, .path = (char *)path };
	uint32_t obj = 0;
	if (op_start(w, &ev, &obj) || !w->fs)
		return obj;
	cred(w, obj);
	int fd = nostall_fd_open(w->fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_EXCL, 0644);
	if (fd < 0)
		return fail(w, fd, "create %s", path), 0;
	int rc = nostall_fd_close(w->fs, fd);
	if (rc)
		fail(w, rc, "close %s", path);
	return obj;
}

static void wl_mkdir(struct crash_wl_ctx *w, const char *path)
{
	struct crash_ev ev = { .t = EV_MKDIR, .path = (char *)path };
	uint32_t obj = 0;
	if (op_start(w, &ev, &obj) || !w->fs)
		return;
	cred(w, obj);
	int rc = nostall_mkdir(w->fs, path, 0755);
	if (rc)
		fail(w, rc, "mkdir %s", path);
}

static uint32_t wl_write(struct crash_wl_ctx *w, const char *path, uint64_t off, uint64_t len)
{
	static uint64_t buf[WL_MAXWRITE / 8];
	if (len > WL_MAXWRITE)
		len = WL_MAXWRITE;
	struct crash_ev ev = { .t = EV_WRITE, .obj = crash_model_lookup(w->m, path), .off = off, .len = len };
	if (op_start(w, &ev, NULL) || !w->fs)
		return ev.seq;
	for (uint64_t k = 0; k < len / 8; k++) {
		uint64_t p = crash_pat(ev.obj, ev.seq, off + 8 * k);
		uint8_t *b = (uint8_t *)&buf[k];
		for (int i = 0; i < 8; i++)
			b[i] = (uint8_t)(p >> (8 * i));
	}
	int fd = nostall_fd_open(w->fs, path, NOSTALL_O_WRONLY, 0);
	if (fd < 0) {
		fail(w, fd, "open %s", path);
		return ev.seq;
	}
	ssize_t n = nostall_fd_pwrite(w->fs, fd, buf, (size_t)len, off);
	if (n != (ssize_t)len)
		fail(w, n < 0 ? (int)n : -EIO, "write %s at %llu", path, (unsigned long long)off);
	int rc = nostall_fd_close(w->fs, fd);
	if (rc)
		fail(w, rc, "close %s", path);
	return ev.seq;
}

static void wl_append(struct crash_wl_ctx *w, const char *path, uint64_t len)
{
	wl_write(w, path, crash_model_size(w->m, crash_model_lookup(w->m, path)), len);
}

static void wl_trunc(struct crash_wl_ctx *w, const char *path, uint64_t size)
{
	struct crash_ev ev = { .t = EV_TRUNC, .obj = crash_model_lookup(w->m, path), .off = size };
	if (op_start(w, &ev, NULL) || !w->fs)
		return;
	int rc = nostall_truncate(w->fs, path, size);
	if (rc)
		fail(w, rc, "truncate %s", path);
}

static void wl_link(struct crash_wl_ctx *w, const char *from, const char *to)
{
	struct crash_ev ev = { .t = EV_LINK, .obj = crash_model_lookup(w->m, from), .path = (char *)to };
	if (op_start(w, &ev, NULL) || !w->fs)
		return;
	int rc = nostall_link(w->fs, from, to);
	if (rc)
		fail(w, rc, "link %s %s", from, to);
}

static void wl_unlink(struct crash_wl_ctx *w, const char *path, bool dir)
{
	struct crash_ev ev = { .t = dir ? EV_RMDIR : EV_UNLINK, .path = (char *)path };
	if (op_start(w, &ev, NULL) || !w->fs)
		return;
	int rc = dir ? nostall_rmdir(w->fs, path) : nostall_unlink(w->fs, path);
	if (rc)
		fail(w, rc, "%s %s", dir ? "rmdir" : "unlink", path);
}

static void wl_rename(struct crash_wl_ctx *w, const char *from, const char *to)
{
	struct crash_ev ev = { .t = EV_RENAME, .path = (char *)from, .path2 = (char *)to };
	if (op_start(w, &ev, NULL) || !w->fs)
		return;
	int rc = nostall_rename(w->fs, from, to, 0);
	if (rc)
		fail(w, rc, "rename %s %s", from, to);
}

/* fsync (datasync: fdatasync) of a file, or of a directory ("/" too). */
static void wl_fsync(struct crash_wl_ctx *w, const char *path, bool datasync)
{
	bool root = !strcmp(path, "/");
	struct crash_ev ev = { .t = EV_FSYNC, .obj = root ? 0 : crash_model_lookup(w->m, path), .len = datasync };
	size_t op = w->nops;
	if (op_start(w, &ev, NULL) || !w->fs)
		return;
	uint64_t ino;
	int rc = nostall_lookup(w->fs, path, 0, &ino);
	if (!rc)
		rc = nostall_fsync_ino(w->fs, ino, datasync);
	if (rc)
		fail(w, rc, "fsync %s", path);
	else
		mark(w, 'd', op);
}

static void wl_sync(struct crash_wl_ctx *w)
{
	struct crash_ev ev = { .t = EV_SYNC };
	size_t op = w->nops;
	if (op_start(w, &ev, NULL) || !w->fs)
		return;
	int rc = nostall_sync(w->fs);
	if (rc)
		fail(w, rc, "sync");
	else
		mark(w, 'd', op);
}

bool crash_wl_exists(struct crash_wl_ctx *w, const char *path)
{
	return crash_model_lookup(w->m, path) != 0;
}

/* ------------------------------------------------------------ workloads */

/* Appends to a log file, each fsynced (fdatasync every third); appends to
 * a second file that is never fsynced (only the periodic sync): its size
 * rides along with the log's commits, which writeback may not match with
 * data. */
static void wl_run_append(struct crash_wl_ctx *w)
{
	wl_create(w, "/log");
	wl_create(w, "/aux");
	for (int r = 0; r < 24 && !w->err; r++) {
		wl_append(w, "/log", rlen(w, 12288));
		if (r % 3 != 2)
			wl_append(w, "/aux", rlen(w, 8192));
		wl_fsync(w, "/log", r % 3 == 2);
		if (r % 8 == 7)
			wl_sync(w);
	}
}

/* Overwrites inside a 64 KiB file, fsync / fdatasync after each round; a
 * second file overwritten without fsync. */
static void wl_run_overwrite(struct crash_wl_ctx *w)
{
	const uint64_t size = 64 * 1024;
	wl_create(w, "/f");
	for (uint64_t off = 0; off < size; off += 8192)
		wl_write(w, "/f", off, 8192);
	wl_fsync(w, "/f", false);
	wl_create(w, "/g");
	wl_write(w, "/g", 0, 16384);
	wl_sync(w);
	for (int r = 0; r < 24 && !w->err; r++) {
		int k = (int)rr(w, 1, 2);
		for (int i = 0; i < k; i++) {
			uint64_t off = 8 * rr(w, 0, size / 8 - 1), len = rlen(w, 8192);
			if (off + len > size)
				len = size - off;
			wl_write(w, "/f", off, len);
		}
		if (r % 4 == 3)
			wl_write(w, "/g", 8 * rr(w, 0, 2047), rlen(w, 4096));
		wl_fsync(w, "/f", r % 2);
	}
}

/* Small files created and written, then fsync, fsync + fsyncdir, nothing,
 * or fsyncdir alone (the name persisted, not the data). */
static void wl_run_create(struct crash_wl_ctx *w)
{
	char p[64];
	wl_mkdir(w, "/sub");
	wl_fsync(w, "/", false);
	for (int i = 0; i < 36 && !w->err; i++) {
		const char *dir = i % 3 == 2 ? "/sub" : "";
		snprintf(p, sizeof p, "%s/c%d", dir, i);
		wl_create(w, p);
		wl_write(w, p, 0, rlen(w, 6144));
		if (i % 5 == 4)
			wl_append(w, p, rlen(w, 2048));
		switch (i % 4) {
		case 0: wl_fsync(w, p, false); break;
		case 1: wl_fsync(w, p, true); wl_fsync(w, *dir ? dir : "/", false); break;
		case 2: break;
		default: wl_fsync(w, *dir ? dir : "/", false); break;
		}
		if (i % 12 == 11)
			wl_sync(w);
	}
}

/* The configuration-file pattern: write a temporary file, (fsync it,)
 * rename it over the old one. Some rounds skip the fsync and let another
 * file's fsync commit the temporary file's blocks first. */
static void wl_run_rename_replace(struct crash_wl_ctx *w)
{
	wl_create(w, "/cfg");
	wl_write(w, "/cfg", 0, 4096);
	wl_create(w, "/journal");
	wl_sync(w);
	for (int r = 0; r < 18 && !w->err; r++) {
		wl_create(w, "/cfg.tmp");
		uint64_t len = rlen(w, 16384);
		wl_write(w, "/cfg.tmp", 0, len);
		if (r % 2)
			wl_append(w, "/cfg.tmp", rlen(w, 4096));
		switch (r % 3) {
		case 0:
			wl_fsync(w, "/cfg.tmp", false);
			wl_rename(w, "/cfg.tmp", "/cfg");
			wl_fsync(w, "/", false);
			break;
		case 1:
			wl_fsync(w, "/cfg.tmp", true);
			wl_rename(w, "/cfg.tmp", "/cfg");
			wl_append(w, "/journal", rlen(w, 1024));
			wl_fsync(w, "/journal", false);
			break;
		default:
			wl_append(w, "/journal", rlen(w, 1024));
			wl_fsync(w, "/journal", false);
			wl_rename(w, "/cfg.tmp", "/cfg");
			wl_fsync(w, "/", false);
			break;
		}
	}
}

/* Truncate (down, sometimes up) then write, fsync; a second file truncated
 * and written without fsync. */
static void wl_run_truncate_write(struct crash_wl_ctx *w)
{
	wl_create(w, "/t");
	wl_write(w, "/t", 0, 48 * 1024);
	wl_fsync(w, "/t", false);
	wl_create(w, "/u");
	wl_write(w, "/u", 0, 16 * 1024);
	for (int r = 0; r < 24 && !w->err; r++) {
		uint64_t s = crash_model_size(w->m, crash_model_lookup(w->m, "/t"));
		uint64_t t = r % 5 == 4 ? s + rlen(w, 8192) : 8 * rr(w, 0, s / 8);
		wl_trunc(w, "/t", t);
		if (r % 2)
			wl_write(w, "/t", t, rlen(w, 12288));
		else
			wl_write(w, "/t", 8 * rr(w, 0, (t + 4096) / 8), rlen(w, 8192));
		wl_fsync(w, "/t", r % 3 == 0);
		if (r % 4 == 1) {
			uint64_t su = crash_model_size(w->m, crash_model_lookup(w->m, "/u"));
			uint64_t tu = 8 * rr(w, 0, su / 8);
			wl_trunc(w, "/u", tu);
			wl_write(w, "/u", tu, rlen(w, 8192));
		}
		if (r % 6 == 5)
			wl_sync(w);
	}
}

/* Directory trees made and removed, with fsyncdir on parents. */
static void wl_run_dirs(struct crash_wl_ctx *w)
{
	char d[32], e[48], f[64];
	for (int r = 0; r < 12 && !w->err; r++) {
		snprintf(d, sizeof d, "/d%d", r);
		wl_mkdir(w, d);
		if (r % 2)
			wl_fsync(w, "/", false);
		snprintf(f, sizeof f, "%s/x", d);
		wl_create(w, f);
		wl_write(w, f, 0, rlen(w, 3072));
		wl_fsync(w, f, false);
		snprintf(f, sizeof f, "%s/y", d);
		wl_create(w, f);
		wl_write(w, f, 0, rlen(w, 1024));
		snprintf(e, sizeof e, "%s/e", d);
		wl_mkdir(w, e);
		snprintf(f, sizeof f, "%s/z", e);
		wl_create(w, f);
		wl_write(w, f, 0, rlen(w, 2048));
		wl_fsync(w, d, false);
		if (r >= 2 && r % 2 == 0) {
			/* remove the tree of two rounds ago */
			snprintf(d, sizeof d, "/d%d", r - 2);
			const char *leaves[] = { "x", "y", "e/z" };
			for (int k = 0; k < 3; k++) {
				snprintf(f, sizeof f, "%s/%s", d, leaves[k]);
				wl_unlink(w, f, false);
			}
			snprintf(e, sizeof e, "%s/e", d);
			wl_unlink(w, e, true);
			wl_fsync(w, d, false);
			wl_unlink(w, d, true);
			if (r % 4 == 0)
				wl_fsync(w, "/", false);
			else
				wl_sync(w);
		}
	}
}

/* Hard links across directories, unlinks of the first name, fsync of a
 * file (its names) or of a directory. */
static void wl_run_links(struct crash_wl_ctx *w)
{
	char a[32], b[32], c[32], x[32];
	wl_mkdir(w, "/ldir");
	wl_sync(w);
	for (int r = 0; r < 16 && !w->err; r++) {
		snprintf(a, sizeof a, "/l%d", r);
		snprintf(b, sizeof b, "/ldir/a%d", r);
		snprintf(c, sizeof c, "/b%d", r);
		wl_create(w, a);
		wl_write(w, a, 0, rlen(w, 4096));
		wl_link(w, a, b);
		wl_link(w, a, c);
		wl_fsync(w, a, r % 2);
		if (r % 3 == 1) {
			snprintf(x, sizeof x, "/l%d", r - 1);
			wl_unlink(w, x, false);
			snprintf(x, sizeof x, "/b%d", r - 1);
			if (r % 2)
				wl_fsync(w, x, false);
			else
				wl_fsync(w, "/", false);
		}
		if (r % 4 == 3) {
			snprintf(x, sizeof x, "/ldir/a%d", r - 2);
			snprintf(c, sizeof c, "/ldir/c%d", r);
			wl_link(w, x, c);
			wl_fsync(w, "/ldir", false);
		}
		if (r % 5 == 2) {
			snprintf(x, sizeof x, "/b%d", r);
			wl_append(w, x, rlen(w, 2048));
		}
	}
}

/* Many files with long names in one directory (an htree index at either
 * block size), then unlinks and renames inside it. */
static void wl_run_htree(struct crash_wl_ctx *w)
{
	enum { N = 300 };
	char p[96], q[96];
	wl_mkdir(w, "/h");
	wl_fsync(w, "/", false);
	for (int i = 0; i < N && !w->err; i++) {
		snprintf(p, sizeof p, "/h/file-with-a-rather-long-name-%05d", i);
		wl_create(w, p);
		wl_write(w, p, 0, rlen(w, 512));
		if (i % 30 == 29)
			wl_fsync(w, "/h", false);
		if (i % 50 == 49)
			wl_fsync(w, p, false);
	}
	for (int k = 0; k < 60 && !w->err; k++) {
		snprintf(p, sizeof p, "/h/file-with-a-rather-long-name-%05d", (int)rr(w, 0, N - 1));
		if (crash_wl_exists(w, p))
			wl_unlink(w, p, false);
		if (k % 10 == 9)
			wl_fsync(w, "/h", false);
	}
	for (int k = 0; k < 40 && !w->err; k++) {
		snprintf(p, sizeof p, "/h/file-with-a-rather-long-name-%05d", (int)rr(w, 0, N - 1));
		snprintf(q, sizeof q, "/h/renamed-file-with-a-long-name-%05d", k);
		if (crash_wl_exists(w, p))
			wl_rename(w, p, q);
		if (k % 10 == 9)
			wl_fsync(w, "/h", false);
	}
}

/* ---- random: short sequences of core operations (ACE-like) ---- */

static const char *const rfiles[] = { "/A", "/B", "/C", "/X/D", "/X/E", "/Y/F", "/Y/G", "/Z/H", "/Z/I" };
static const char *const rdirs[] = { "/X", "/Y", "/Z" };
#define NRF (sizeof rfiles / sizeof rfiles[0])
#define NRD (sizeof rdirs / sizeof rdirs[0])

bool crash_wl_parent_ok(struct crash_wl_ctx *w, const char *path)
{
	const char *s = strrchr(path, '/');
	if (s == path)
		return true;
	char d[64];
	snprintf(d, sizeof d, "%.*s", (int)(s - path), path);
	return crash_wl_exists(w, d);
}

bool crash_wl_dir_empty(struct crash_wl_ctx *w, const char *dir)
{
	size_t n, len = strlen(dir);
	const char *const *paths = crash_model_paths(w->m, &n);
	for (size_t i = 0; i < n; i++)
		if (!strncmp(paths[i], dir, len) && paths[i][len] == '/')
			return false;
	return true;
}

/* A pool file name that exists (want) or is free with its parent there. */
static const char *pick_file(struct crash_wl_ctx *w, bool want)
{
	for (int t = 0; t < 20; t++) {
		const char *p = rfiles[rr(w, 0, NRF - 1)];
		if (want ? crash_wl_exists(w, p) && !crash_model_is_dir(w->m, crash_model_lookup(w->m, p))
			 : !crash_wl_exists(w, p) && crash_wl_parent_ok(w, p))
			return p;
	}
	return NULL;
}

static void random_op(struct crash_wl_ctx *w)
{
	const char *p, *q;
	switch (rr(w, 0, 9)) {
	case 0:
	case 1:
		if ((p = pick_file(w, false))) {
			wl_create(w, p);
			wl_write(w, p, 0, rlen(w, 8192));
		}
		break;
	case 2:
	case 3:
		if ((p = pick_file(w, true))) {
			uint64_t s = crash_model_size(w->m, crash_model_lookup(w->m, p));
			uint64_t off = rr(w, 0, 1) ? s : 8 * rr(w, 0, s / 8);
			wl_write(w, p, off, rlen(w, 8192));
		}
		break;
	case 4:
		if ((p = pick_file(w, true))) {
			uint64_t s = crash_model_size(w->m, crash_model_lookup(w->m, p));
			wl_trunc(w, p, rr(w, 0, 3) ? 8 * rr(w, 0, s / 8) : s + rlen(w, 4096));
		}
		break;
	case 5:
		if ((p = pick_file(w, true)) && (q = pick_file(w, false)))
			wl_link(w, p, q);
		break;
	case 6:
		if ((p = pick_file(w, true)))
			wl_unlink(w, p, false);
		break;
	case 7:
	case 8:
		if ((p = pick_file(w, true)) && (q = rfiles[rr(w, 0, NRF - 1)]) && strcmp(p, q) && crash_wl_parent_ok(w, q) &&
		    crash_model_lookup(w->m, p) != crash_model_lookup(w->m, q))
			wl_rename(w, p, q);
		break;
	default:
		p = rdirs[rr(w, 0, NRD - 1)];
		if (!crash_wl_exists(w, p))
			wl_mkdir(w, p);
		else if (crash_wl_dir_empty(w, p))
			wl_unlink(w, p, true);
		break;
	}
}

static void random_persist(struct crash_wl_ctx *w)
{
	const char *p;
	switch (rr(w, 0, 5)) {
	case 0:
	case 1:
		if ((p = pick_file(w, true)))
			wl_fsync(w, p, false);
		break;
	case 2:
		if ((p = pick_file(w, true)))
			wl_fsync(w, p, true);
		break;
	case 3:
		p = rdirs[rr(w, 0, NRD - 1)];
		wl_fsync(w, crash_wl_exists(w, p) ? p : "/", false);
		break;
	case 4:
		wl_sync(w);
		break;
	default:
		break; /* none */
	}
}

static void wl_run_random(struct crash_wl_ctx *w)
{
	wl_mkdir(w, "/X");
	wl_mkdir(w, "/Y");
	wl_create(w, "/A");
	wl_write(w, "/A", 0, 4096);
	wl_sync(w);
	for (int s = 0; s < 40 && !w->err; s++) {
		int n = (int)rr(w, 1, 3);
		for (int i = 0; i < n; i++)
			random_op(w);
		random_persist(w);
	}
}

/* ---- the driver, for workloads in other files (crash.h) ---- */

uint32_t crash_op_create(struct crash_wl_ctx *w, const char *path) { return wl_create(w, path); }
void crash_op_mkdir(struct crash_wl_ctx *w, const char *path) { wl_mkdir(w, path); }
uint32_t crash_op_write(struct crash_wl_ctx *w, const char *path, uint64_t off, uint64_t len)
{
	return wl_write(w, path, off, len);
}
void crash_op_trunc(struct crash_wl_ctx *w, const char *path, uint64_t size) { wl_trunc(w, path, size); }
void crash_op_link(struct crash_wl_ctx *w, const char *from, const char *to) { wl_link(w, from, to); }
void crash_op_unlink(struct crash_wl_ctx *w, const char *path, bool dir) { wl_unlink(w, path, dir); }
void crash_op_rename(struct crash_wl_ctx *w, const char *from, const char *to) { wl_rename(w, from, to); }
void crash_op_fsync(struct crash_wl_ctx *w, const char *path, bool datasync) { wl_fsync(w, path, datasync); }
void crash_op_sync(struct crash_wl_ctx *w) { wl_sync(w); }
void crash_op_fail(struct crash_wl_ctx *w, int rc, const char *what) { fail(w, rc, "%s", what); }

int crash_workload_run(struct crash_wl_ctx *w, enum crash_wl wl)
{
	static void (*const run[WL_NR])(struct crash_wl_ctx *) = {
		wl_run_append, wl_run_overwrite, wl_run_create, wl_run_rename_replace, wl_run_truncate_write,
		wl_run_dirs,   wl_run_links,     wl_run_htree,  wl_run_random,
		[WL_CONCURRENT] = crash_wl_concurrent, [WL_FSX] = crash_wl_fsx, [WL_FSSTRESS] = crash_wl_fsstress,
	};
	if (!run[wl]) /* a workload with a job of its own (wl_*.c) */
		return w->err = -EINVAL;
	run[wl](w);
	if (w->fs)
		nostall_cred_reset();
	return w->err;
}
