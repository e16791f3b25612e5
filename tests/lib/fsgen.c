/* The seeded operation generator (fsrun.h, docs/testing-model.md).
 *
 * It looks at the model (not the target) to pick names, so a seed gives the
 * same operations on every target. Paths come from a random walk down the
 * model's directories (through symlinks to directories too) ending at an
 * existing entry of the wanted type or at a name from a small pool (so
 * creations collide with existing names), now and then a 255-byte name, a
 * 256-byte one (ENAMETOOLONG) or a component through a file or a missing
 * directory (ENOTDIR, ENOENT). Sizes and offsets mix small, block-boundary,
 * end-of-file and far-beyond-EOF values; the model's stored bytes stay under
 * max_bytes and each inode's xattrs under xattr_budget (what fits in one
 * 1 KiB ext3 xattr block), so a correct target never runs out of space. */
#include "fsrun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define PATHBUF 4096

struct fsgen {
	struct fsgen_cfg c;
	uint64_t rng;
	unsigned total;
	char long_names[3][258]; /* 255 bytes (two) and 256 bytes */
};

enum pref { P_ANY, P_FILE, P_DIR, P_EMPTY_DIR, P_LINK, P_NEW };

static const unsigned default_weight[FSOP_NKINDS] = {
	[FSOP_MKDIR] = 6,    [FSOP_MKNOD] = 1,     [FSOP_SYMLINK] = 3,   [FSOP_LINK] = 3,
	[FSOP_UNLINK] = 5,   [FSOP_RMDIR] = 3,     [FSOP_RENAME] = 8,    [FSOP_TRUNCATE] = 3,
	[FSOP_CHMOD] = 2,    [FSOP_CHOWN] = 2,     [FSOP_UTIMENS] = 2,   [FSOP_SETXATTR] = 5,
	[FSOP_REMOVEXATTR] = 2, [FSOP_GETXATTR] = 3, [FSOP_LISTXATTR] = 2, [FSOP_STAT] = 5,
	[FSOP_READDIR] = 3,  [FSOP_READLINK] = 2,  [FSOP_OPEN] = 8,     [FSOP_CLOSE] = 5,
	[FSOP_READ] = 5,     [FSOP_WRITE] = 12,    [FSOP_PREAD] = 6,     [FSOP_PWRITE] = 12,
	[FSOP_FTRUNCATE] = 3, [FSOP_FSYNC] = 2,    [FSOP_FSTAT] = 3,
};

void fsgen_cfg_default(struct fsgen_cfg *c)
{
	*c = (struct fsgen_cfg){ .root = true, .max_depth = 6, .names = 10,
				 .max_write = 3u << 20, .max_off = 64u << 20, .max_bytes = 48u << 20,
				 .xattr_budget = 900, .symlink_max = 900 };
	memcpy(c->weight, default_weight, sizeof c->weight);
}

int fsgen_cfg_weights(struct fsgen_cfg *c, const char *spec)
{
	char *copy = fst_xstrdup(spec), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int k = -1;
		if (eq) {
			*eq = 0;
			k = fsop_kind_parse(tok);
		}
		if (k < 0 || k == FSOP_CHECKPOINT) {
			rc = -EINVAL;
			break;
		}
		c->weight[k] = (unsigned)strtoul(eq + 1, NULL, 10);
	}
	free(copy);
	return rc;
}

struct fsgen *fsgen_new(const struct fsgen_cfg *c, uint64_t seed)
{
	struct fsgen *g = fst_xcalloc(1, sizeof *g);
	g->c = *c;
	if (!g->c.names)
		g->c.names = 10;
	g->rng = seed;
	if (!g->c.root)
		g->c.weight[FSOP_CHOWN] = 0; /* owner changes need root */
	for (int k = 0; k < FSOP_NKINDS; k++)
		g->total += k == FSOP_CHECKPOINT ? 0 : g->c.weight[k];
	for (int i = 0; i < 3; i++) {
		size_t n = i < 2 ? 255 : 256;
		memset(g->long_names[i], 'a' + i, n);
		g->long_names[i][0] = 'L';
		g->long_names[i][n] = 0;
	}
	return g;
}

void fsgen_free(struct fsgen *g)
{
	free(g);
}

static uint64_t below(struct fsgen *g, uint64_t n)
{
	return n ? fsop_rand(&g->rng) % n : 0;
}

static bool chance(struct fsgen *g, unsigned pct)
{
	return below(g, 100) < pct;
}

/* ---- names and paths ---- */

static const char *pool_name(struct fsgen *g, char *buf)
{
	sprintf(buf, "n%u", (unsigned)below(g, g->c.names));
	return buf;
}

static const char *gen_name(struct fsgen *g, char *buf)
{
	unsigned r = (unsigned)below(g, 100);
	if (r < 3)
		return g->long_names[below(g, 2)];
	if (r < 4)
		return g->long_names[2];
	return pool_name(g, buf);
}

static void path_join(char *out, const char *dir, const char *name)
{
	size_t n = strlen(dir), nl = strlen(name);
	if (n + 1 + nl + 1 > PATHBUF)
		return; /* out unchanged: the generator never builds paths this long */
	memmove(out, dir, n);
	if (n > 1)
		out[n++] = '/';
	memcpy(out + n, name, nl + 1);
}

static bool type_ok(const struct fsm_info *in, enum pref p)
{
	uint32_t mode = in->mode;
	switch (p) {
	case P_FILE: return S_ISREG(mode);
	case P_DIR: return S_ISDIR(mode);
	case P_EMPTY_DIR: return S_ISDIR(mode) && !in->nentries;
	case P_LINK: return S_ISLNK(mode);
	default: return true;
	}
}

static size_t entry_count(struct fsmodel *m, const char *dir)
{
	size_t n = 0;
	while (fsm_entry_name(m, dir, n))
		n++;
	return n;
}

/* A random existing entry of dir (lost+found at the root never), of type
 * pref if one turns up in a few tries; another type only now and then (the
 * error paths), else false. */
static bool pick_entry(struct fsgen *g, struct fsmodel *m, const char *dir, enum pref pref,
		       char *out)
{
	size_t n = entry_count(m, dir);
	char other[PATHBUF] = "";
	for (int tries = 0; n && tries < 8; tries++) {
		const char *name = fsm_entry_name(m, dir, below(g, n));
		if (!strcmp(dir, "/") && !strcmp(name, "lost+found"))
			continue;
		char cand[PATHBUF];
		struct fsm_info in;
		strcpy(cand, dir);
		path_join(cand, dir, name);
		if (fsm_query(m, cand, false, &in))
			continue;
		if (type_ok(&in, pref)) {
			strcpy(out, cand);
			return true;
		}
		if (!other[0])
			strcpy(other, cand);
	}
	if (other[0] && chance(g, 15)) {
		strcpy(out, other);
		return true;
	}
	return false;
}

/* A random walk down from the root; the last component is an existing entry
 * of type pref when one is found (up to four walks), else a new name. */
static void gen_path(struct fsgen *g, struct fsrun *r, enum pref pref, char *out)
{
	struct fsmodel *m = fsrun_model(r);
	char dir[PATHBUF], name[16];
	for (int walk = 0; walk < 4; walk++) {
		strcpy(dir, "/");
		for (unsigned depth = 0; depth < g->c.max_depth; depth++) {
			char sub[PATHBUF];
			struct fsm_info in;
			if (!chance(g, 60 - 6 * depth) || !pick_entry(g, m, dir, P_DIR, sub) ||
			    fsm_query(m, sub, true, &in) || !S_ISDIR(in.mode))
				break;
			strcpy(dir, sub);
		}
		strcpy(out, dir);
		if (chance(g, 4)) { /* through a non-directory or a missing directory */
			if (!pick_entry(g, m, dir, P_FILE, out))
				path_join(out, dir, pool_name(g, name));
			strcpy(dir, out);
			path_join(out, dir, pool_name(g, name));
			return;
		}
		if (pref == P_NEW || !chance(g, 80))
			break;
		if (pick_entry(g, m, dir, pref, out))
			return;
		if (pref == P_ANY)
			break;
	}
	path_join(out, dir, gen_name(g, name));
}

/* ---- numbers ---- */

static uint32_t perm_bits(struct fsgen *g, bool dir)
{
	uint32_t m = (uint32_t)below(g, 01000);
	if (dir && chance(g, 10))
		m |= S_ISGID; /* new entries inherit the group (and dirs the bit) */
	if (!g->c.root)
		m |= dir ? 0700 : 0600;
	return m;
}

static uint64_t gen_size(struct fsgen *g, uint64_t size)
{
	switch (below(g, 10)) {
	case 0: case 1: return 0;
	case 2: case 3: return below(g, size + 1);
	case 4: case 5: return size + below(g, 65536);
	case 6: return size;
	case 7: return below(g, g->c.max_off);
	default: return below(g, 64) * 1024 + below(g, 3) - (below(g, 2) ? 1 : 0) + 1;
	}
}

static uint64_t gen_off(struct fsgen *g, uint64_t size)
{
	switch (below(g, 20)) {
	case 0: case 1: return 0;
	case 2: case 3: case 4: case 5: case 6: return below(g, size + 1);
	case 7: case 8: case 9: case 10: return size;
	case 11: case 12: case 13: return size + below(g, 65536);
	case 14: case 15: return below(g, g->c.max_off); /* far: a big hole */
	default: return (size / 1024) * 1024 + below(g, 3) * 1024 + below(g, 3);
	}
}

static uint64_t gen_wlen(struct fsgen *g)
{
	unsigned r = (unsigned)below(g, 100);
	if (r < 5)
		return 0;
	if (r < 50)
		return 1 + below(g, 4096);
	if (r < 80)
		return 1 + below(g, 65536);
	if (r < 95)
		return 1 + below(g, 1u << 20);
	return g->c.max_write > (1u << 20) ? (1u << 20) + below(g, g->c.max_write - (1u << 20))
					   : g->c.max_write;
}

static uint64_t gen_rlen(struct fsgen *g)
{
	unsigned r = (unsigned)below(g, 10);
	return r < 6 ? below(g, 8192) : r < 9 ? below(g, 256 << 10) : below(g, 2u << 20);
}

static uint64_t seed_nonzero(struct fsgen *g)
{
	return chance(g, 10) ? 0 : (fsop_rand(&g->rng) | 1);
}

/* ---- per kind ---- */

static void gen_symlink_target(struct fsgen *g, const char *linkpath, char *out)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._- %~";
	char a[16], b[16];
	unsigned r = (unsigned)below(g, 100);
	if (r < 45) {
		strcpy(out, pool_name(g, a));
	} else if (r < 70) {
		pool_name(g, a);
		snprintf(out, PATHBUF, "%s/%s", a, pool_name(g, b));
	} else if (r < 80) {
		const char *slash = strrchr(linkpath, '/');
		strcpy(out, slash ? slash + 1 : linkpath); /* itself: ELOOP when followed */
	} else if (r < 95) {
		/* never "/..." or "..": a followed target stays inside the tree */
		size_t n = r < 90 ? 1 + below(g, 64) : 1 + below(g, g->c.symlink_max);
		out[0] = 'g';
		for (size_t i = 1; i < n; i++)
			out[i] = chars[below(g, sizeof chars - 1)];
		out[n] = 0;
	} else {
		out[0] = 0; /* ENOENT */
	}
}

static int free_slot(struct fsgen *g, struct fsrun *r)
{
	int start = (int)below(g, FSRUN_SLOTS);
	for (int i = 0; i < FSRUN_SLOTS; i++)
		if (!fsrun_slot_open(r, (start + i) % FSRUN_SLOTS))
			return (start + i) % FSRUN_SLOTS;
	return -1;
}

/* An open slot; for reads (want O_RDONLY) or writes (O_WRONLY) mostly one
 * opened for it (EBADF now and then). */
static int open_slot(struct fsgen *g, struct fsrun *r, int want)
{
	int start = (int)below(g, FSRUN_SLOTS), any = -1;
	bool strict = want >= 0 && chance(g, 90);
	for (int i = 0; i < FSRUN_SLOTS; i++) {
		int s = (start + i) % FSRUN_SLOTS;
		if (!fsrun_slot_open(r, s))
			continue;
		int acc = fsrun_slot_flags(r, s) & O_ACCMODE;
		if (!strict || acc == O_RDWR || acc == want)
			return s;
		any = s;
	}
	return any;
}

static void gen_xattr_name(struct fsgen *g, struct fsmodel *m, struct fsop *op, bool existing)
{
	char buf[300];
	size_t nx = 0;
	while (fsm_xattr_name(m, op->path, op->nofollow, nx))
		nx++;
	if (existing && nx && chance(g, 70)) {
		op->name = fst_xstrdup(fsm_xattr_name(m, op->path, op->nofollow, below(g, nx)));
		return;
	}
	unsigned r = (unsigned)below(g, 100);
	if (r < 2)
		strcpy(buf, "bogus.x"); /* EOPNOTSUPP */
	else if (r < 4)
		snprintf(buf, sizeof buf, "user.%.251s", g->long_names[2]); /* 256: ERANGE */
	else if (r < 6)
		snprintf(buf, sizeof buf, "user.%.250s", g->long_names[0]); /* 255: the longest */
	else if (g->c.root && r < 30)
		snprintf(buf, sizeof buf, "trusted.t%u", (unsigned)below(g, 4));
	else
		snprintf(buf, sizeof buf, "user.x%u", (unsigned)below(g, 8));
	op->name = fst_xstrdup(buf);
}

static void gen_setxattr(struct fsgen *g, struct fsrun *r, struct fsop *op)
{
	struct fsmodel *m = fsrun_model(r);
	struct fsm_info in;
	unsigned p = (unsigned)below(g, 100);
	op->len = p < 5 ? 0 : p < 55 ? below(g, 33) : p < 85 ? below(g, 200) : 200 + below(g, 500);
	op->seed = seed_nonzero(g);
	op->xflags = chance(g, 70) ? 0 : chance(g, 50) ? FST_XATTR_CREATE : FST_XATTR_REPLACE;
	gen_xattr_name(g, m, op, true);
	if (fsm_query(m, op->path, !op->nofollow, &in))
		return;
	size_t cost = fsm_xattr_cost(op->name, op->len);
	if (in.xattr_bytes + cost > g->c.xattr_budget) {
		/* full: remove one instead (the same name: a replace would fit) */
		op->kind = FSOP_REMOVEXATTR;
		free(op->name);
		op->name = NULL;
		gen_xattr_name(g, m, op, true);
	}
}

static void gen_open(struct fsgen *g, struct fsrun *r, struct fsop *op)
{
	struct fsm_info in;
	op->slot = free_slot(g, r);
	gen_path(g, r, chance(g, 75) ? P_FILE : P_NEW, op->path);
	unsigned acc = (unsigned)below(g, 10);
	op->flags = acc < 2 ? O_RDONLY : acc < 4 ? O_WRONLY : O_RDWR;
	if (chance(g, 50))
		op->flags |= O_CREAT | (chance(g, 15) ? O_EXCL : 0);
	if (op->flags & O_ACCMODE) {
		if (chance(g, 10))
			op->flags |= O_TRUNC;
	}
	if (chance(g, 20))
		op->flags |= O_APPEND;
	if (chance(g, 5))
		op->flags |= O_NOFOLLOW;
	op->mode = perm_bits(g, false);
	/* mostly not a directory: go one level down into it */
	for (int i = 0; i < 3; i++) {
		char name[16], dir[PATHBUF];
		if (fsm_query(fsrun_model(r), op->path, !(op->flags & O_NOFOLLOW), &in))
			return;
		if (!S_ISDIR(in.mode) || chance(g, 15))
			break;
		strcpy(dir, op->path);
		path_join(op->path, dir, pool_name(g, name));
	}
	if (S_ISDIR(in.mode) && !(op->flags & (O_CREAT | O_ACCMODE)))
		op->flags |= O_RDWR; /* EISDIR rather than a directory handle */
	else if (!S_ISDIR(in.mode) && !S_ISREG(in.mode) && !S_ISLNK(in.mode))
		op->kind = FSOP_STAT; /* opening a fifo would block */
}

static void gen_rename(struct fsgen *g, struct fsrun *r, struct fsop *op)
{
	struct fsm_info in;
	char name[16];
	gen_path(g, r, P_ANY, op->path);
	bool isdir = !fsm_query(fsrun_model(r), op->path, false, &in) && S_ISDIR(in.mode);
	unsigned p = (unsigned)below(g, 100);
	if (isdir && p < 8) { /* into its own subtree: EINVAL */
		path_join(op->path2, op->path, pool_name(g, name));
	} else if (p < 14 && strrchr(op->path, '/') != op->path) { /* onto an ancestor */
		strcpy(op->path2, op->path);
		*strrchr(op->path2, '/') = 0;
	} else if (p < 45) {
		gen_path(g, r, isdir ? (chance(g, 50) ? P_EMPTY_DIR : P_DIR) : P_FILE, op->path2);
	} else {
		gen_path(g, r, P_ANY, op->path2);
	}
	p = (unsigned)below(g, 10);
	op->flags = p == 0 ? FST_RENAME_NOREPLACE : p == 1 ? FST_RENAME_EXCHANGE : 0;
}

static enum fsop_kind pick_kind(struct fsgen *g, struct fsrun *r)
{
	uint64_t x = below(g, g->total);
	int k = 0;
	for (; k < FSOP_NKINDS; k++) {
		unsigned w = k == FSOP_CHECKPOINT ? 0 : g->c.weight[k];
		if (x < w)
			break;
		x -= w;
	}
	if (k >= FSOP_CLOSE && k <= FSOP_FSTAT && open_slot(g, r, -1) < 0)
		k = FSOP_OPEN;
	if (k == FSOP_OPEN && free_slot(g, r) < 0)
		k = FSOP_CLOSE;
	return (enum fsop_kind)k;
}

static void gen_slot_op(struct fsgen *g, struct fsrun *r, struct fsop *op)
{
	struct fsm_info in = { 0 };
	bool reads = op->kind == FSOP_READ || op->kind == FSOP_PREAD;
	bool writes = op->kind == FSOP_WRITE || op->kind == FSOP_PWRITE || op->kind == FSOP_FTRUNCATE;
	op->slot = open_slot(g, r, reads ? O_RDONLY : writes ? O_WRONLY : -1);
	fsm_query_handle(fsrun_model(r), fsrun_slot_handle(r, op->slot), &in);
	switch (op->kind) {
	case FSOP_READ: op->len = gen_rlen(g); break;
	case FSOP_PREAD:
		op->off = gen_off(g, in.size);
		op->len = gen_rlen(g);
		break;
	case FSOP_WRITE:
	case FSOP_PWRITE:
		op->off = gen_off(g, in.size);
		op->len = gen_wlen(g);
		op->seed = seed_nonzero(g);
		if (fsm_bytes(fsrun_model(r)) + op->len + 2 * FSM_CHUNK > g->c.max_bytes) {
			op->kind = FSOP_FTRUNCATE; /* full: shrink this file instead */
			op->off = below(g, in.size / 2 + 1);
			op->len = op->seed = 0;
		} else if (op->off > g->c.max_off) {
			op->off = below(g, g->c.max_off);
		}
		break;
	case FSOP_FTRUNCATE: op->off = gen_size(g, in.size); break;
	case FSOP_FSYNC: op->flags = chance(g, 50); break;
	default: break;
	}
}

void fsgen_next(struct fsgen *g, struct fsrun *r, struct fsop *op)
{
	struct fsmodel *m = fsrun_model(r);
	struct fsm_info in;
	memset(op, 0, sizeof *op);
	op->kind = pick_kind(g, r);
	op->path = fst_xcalloc(1, PATHBUF);
	op->path2 = fst_xcalloc(1, PATHBUF);
	switch (op->kind) {
	case FSOP_MKDIR:
		gen_path(g, r, chance(g, 70) ? P_NEW : P_ANY, op->path);
		op->mode = perm_bits(g, true);
		break;
	case FSOP_MKNOD: {
		gen_path(g, r, P_NEW, op->path);
		unsigned t = g->c.root ? (unsigned)below(g, 4) : 0;
		op->mode = (t == 1 ? S_IFCHR : t == 2 ? S_IFBLK : S_IFIFO) | perm_bits(g, false);
		if (t == 1 || t == 2)
			op->rdev = makedev(1 + below(g, 200), below(g, 256));
		break;
	}
	case FSOP_SYMLINK:
		gen_path(g, r, chance(g, 80) ? P_NEW : P_ANY, op->path);
		gen_symlink_target(g, op->path, op->path2);
		break;
	case FSOP_LINK:
		gen_path(g, r, P_FILE, op->path);
		gen_path(g, r, chance(g, 80) ? P_NEW : P_ANY, op->path2);
		break;
	case FSOP_UNLINK: {
		int s = open_slot(g, r, -1);
		if (s >= 0 && chance(g, 25))
			strcpy(op->path, fsrun_slot_path(r, s)); /* unlink of an open file */
		else
			gen_path(g, r, P_FILE, op->path);
		break;
	}
	case FSOP_RMDIR: gen_path(g, r, chance(g, 50) ? P_EMPTY_DIR : P_DIR, op->path); break;
	case FSOP_RENAME: gen_rename(g, r, op); break;
	case FSOP_TRUNCATE:
		gen_path(g, r, P_FILE, op->path);
		op->off = gen_size(g, fsm_query(m, op->path, true, &in) ? 0 : in.size);
		break;
	case FSOP_CHMOD:
		gen_path(g, r, P_ANY, op->path);
		op->mode = perm_bits(g, !fsm_query(m, op->path, true, &in) && S_ISDIR(in.mode));
		break;
	case FSOP_CHOWN: {
		static const uint32_t ids[] = { 0, 1, 1000, 4242, 65534, (uint32_t)-1 };
		gen_path(g, r, P_ANY, op->path);
		op->uid = ids[below(g, 6)];
		op->gid = ids[below(g, 6)];
		op->nofollow = chance(g, 40);
		break;
	}
	case FSOP_UTIMENS:
		gen_path(g, r, P_ANY, op->path);
		for (int i = 0; i < 2; i++)
			op->ts[i] = (struct fst_time){ (int64_t)below(g, 1ull << 31),
						       (uint32_t)below(g, 1000000000) };
		op->nofollow = chance(g, 20);
		break;
	case FSOP_SETXATTR:
		gen_path(g, r, chance(g, 50) ? P_FILE : P_DIR, op->path);
		op->nofollow = chance(g, 10);
		gen_setxattr(g, r, op);
		break;
	case FSOP_REMOVEXATTR:
	case FSOP_GETXATTR:
	case FSOP_LISTXATTR:
		gen_path(g, r, P_ANY, op->path);
		op->nofollow = chance(g, 15);
		if (op->kind != FSOP_LISTXATTR)
			gen_xattr_name(g, m, op, true);
		if (op->kind != FSOP_REMOVEXATTR)
			op->len = chance(g, 75) ? 65536 : chance(g, 50) ? 0 : below(g, 64);
		break;
	case FSOP_STAT:
		gen_path(g, r, P_ANY, op->path);
		op->nofollow = chance(g, 50);
		break;
	case FSOP_READDIR: gen_path(g, r, P_DIR, op->path); break;
	case FSOP_READLINK: gen_path(g, r, P_LINK, op->path); break;
	case FSOP_OPEN: gen_open(g, r, op); break;
	case FSOP_CLOSE: op->slot = open_slot(g, r, -1); break;
	default: gen_slot_op(g, r, op); break;
	}
	if (!op->path[0]) {
		free(op->path);
		op->path = NULL;
	}
	if (!op->path2[0] && op->kind != FSOP_SYMLINK) {
		free(op->path2);
		op->path2 = NULL;
	}
}
