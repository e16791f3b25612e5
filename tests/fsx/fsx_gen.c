/* fsx: the random generator and the text form of operations (the replay
 * script format of docs/exerciser.md). */
#include "fsx.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: small, seedable from any value, good enough for test choices. */
uint64_t rng_next(struct fsx_rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t rng_below(struct fsx_rng *r, uint64_t n) { return rng_next(r) % n; }

static const char *const kind_names[OP_NKINDS] = {
	[OP_WRITE] = "write",   [OP_READ] = "read",     [OP_MAPWRITE] = "mapwrite",
	[OP_MAPREAD] = "mapread", [OP_TRUNC] = "trunc",  [OP_FSYNC] = "fsync",
	[OP_CREATE] = "create", [OP_OPEN] = "open",     [OP_CLOSE] = "close",
	[OP_UNLINK] = "unlink", [OP_LINK] = "link",     [OP_RENAME] = "rename",
	[OP_MKDIR] = "mkdir",   [OP_RMDIR] = "rmdir",   [OP_BADWRITE] = "badwrite",
};

static const char *const rename_flags[] = {"none", "noreplace", "exchange"};

static void target_format(const struct fsx_target *t, char *buf, size_t len)
{
	if (t->slot)
		snprintf(buf, len, "s:%d", t->idx);
	else
		snprintf(buf, len, "p:%s", model_path_name(t->idx));
}

void op_format(const struct fsx_op *op, char *buf, size_t len)
{
	char t[32];
	const char *k = kind_names[op->kind];
	target_format(&op->t, t, sizeof t);
	switch (op->kind) {
	case OP_WRITE:
	case OP_BADWRITE:
		snprintf(buf, len, "%s %s %" PRIu64 " %" PRIu64 " tag=%" PRIu32 " how=%d", k, t, op->off,
			 op->len, op->tag, op->flag);
		break;
	case OP_MAPWRITE:
		snprintf(buf, len, "%s %s %" PRIu64 " %" PRIu64 " tag=%" PRIu32 " msync=%d", k, t, op->off,
			 op->len, op->tag, op->flag);
		break;
	case OP_READ:
	case OP_MAPREAD:
		snprintf(buf, len, "%s %s %" PRIu64 " %" PRIu64, k, t, op->off, op->len);
		break;
	case OP_TRUNC:
		snprintf(buf, len, "%s %s %" PRIu64, k, t, op->off);
		break;
	case OP_FSYNC:
		snprintf(buf, len, "%s %s datasync=%d", k, t, op->flag);
		break;
	case OP_OPEN:
		snprintf(buf, len, "%s s:%d %s creat=%d", k, op->slot, model_path_name(op->a), op->flag);
		break;
	case OP_CLOSE:
		snprintf(buf, len, "%s s:%d", k, op->slot);
		break;
	case OP_LINK:
		snprintf(buf, len, "%s %s %s", k, model_path_name(op->a), model_path_name(op->b));
		break;
	case OP_RENAME:
		snprintf(buf, len, "%s %s %s flags=%s", k, model_path_name(op->a), model_path_name(op->b),
			 rename_flags[op->flag % 3]);
		break;
	default: /* create, unlink, mkdir, rmdir */
		snprintf(buf, len, "%s %s", k, model_path_name(op->a));
		break;
	}
}

static int parse_target(const char *s, struct fsx_target *t)
{
	if (!strncmp(s, "s:", 2)) {
		t->slot = true;
		t->idx = atoi(s + 2);
		return t->idx >= 0 && t->idx < FSX_SLOTS ? 0 : -1;
	}
	if (strncmp(s, "p:", 2))
		return -1;
	t->slot = false;
	t->idx = model_path_lookup(s + 2);
	return t->idx < 0 || model_is_dir_path(t->idx) ? -1 : 0;
}

static int parse_kv(const char *s, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	if (strncmp(s, key, n) || s[n] != '=')
		return -1;
	char *end;
	*v = strtoull(s + n + 1, &end, 10);
	return *end ? -1 : 0;
}

static int parse_num(const char *s, uint64_t *v)
{
	char *end;
	*v = strtoull(s, &end, 10);
	return end == s || *end ? -1 : 0;
}

/* Path operands: files for create/unlink/link/open, directories for
 * mkdir/rmdir, either kind (both the same) for rename. */
static int parse_paths(struct fsx_op *op, char **tok, int ntok, int first, int count)
{
	if (ntok < first + count)
		return -1;
	int *dst[2] = {&op->a, &op->b};
	for (int i = 0; i < count; i++) {
		*dst[i] = model_path_lookup(tok[first + i]);
		if (*dst[i] < 0)
			return -1;
	}
	bool want_dir = op->kind == OP_MKDIR || op->kind == OP_RMDIR ||
			(op->kind == OP_RENAME && model_is_dir_path(op->a));
	for (int i = 0; i < count; i++)
		if (model_is_dir_path(*dst[i]) != want_dir)
			return -1;
	return 0;
}

static int parse_slot(const char *s, int *slot)
{
	struct fsx_target t;
	if (parse_target(s, &t) || !t.slot)
		return -1;
	*slot = t.idx;
	return 0;
}

int op_parse(const char *line, struct fsx_op *op)
{
	char copy[512], *tok[8], *save = NULL;
	int n = 0;
	snprintf(copy, sizeof copy, "%s", line);
	for (char *p = strtok_r(copy, " \t\r\n", &save); p && n < 8; p = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = p;
	if (n == 0)
		return -1;
	memset(op, 0, sizeof *op);
	int k;
	for (k = 0; k < OP_NKINDS && strcmp(tok[0], kind_names[k]); k++)
		;
	if (k == OP_NKINDS)
		return -1;
	op->kind = k;
	uint64_t v = 0, tag = 0;
	switch (op->kind) {
	case OP_WRITE:
	case OP_BADWRITE:
	case OP_MAPWRITE:
		if (n != 6 || parse_target(tok[1], &op->t) || parse_num(tok[2], &op->off) ||
		    parse_num(tok[3], &op->len) || parse_kv(tok[4], "tag", &tag) ||
		    parse_kv(tok[5], op->kind == OP_MAPWRITE ? "msync" : "how", &v))
			return -1;
		op->tag = (uint32_t)tag;
		op->flag = (int)v;
		return 0;
	case OP_READ:
	case OP_MAPREAD:
		return n == 4 && !parse_target(tok[1], &op->t) && !parse_num(tok[2], &op->off) &&
		       !parse_num(tok[3], &op->len) ? 0 : -1;
	case OP_TRUNC:
		return n == 3 && !parse_target(tok[1], &op->t) && !parse_num(tok[2], &op->off) ? 0 : -1;
	case OP_FSYNC:
		if (n != 3 || parse_target(tok[1], &op->t) || parse_kv(tok[2], "datasync", &v))
			return -1;
		op->flag = (int)v;
		return 0;
	case OP_OPEN:
		if (n != 4 || parse_slot(tok[1], &op->slot) || parse_paths(op, tok, n, 2, 1) ||
		    parse_kv(tok[3], "creat", &v))
			return -1;
		op->flag = (int)v;
		return 0;
	case OP_CLOSE:
		return n == 2 && !parse_slot(tok[1], &op->slot) ? 0 : -1;
	case OP_LINK:
		return n == 3 ? parse_paths(op, tok, n, 1, 2) : -1;
	case OP_RENAME:
		if (n != 4 || parse_paths(op, tok, n, 1, 2) || strncmp(tok[3], "flags=", 6))
			return -1;
		for (op->flag = 0; op->flag < 3; op->flag++)
			if (!strcmp(tok[3] + 6, rename_flags[op->flag]))
				return 0;
		return -1;
	default:
		return n == 2 ? parse_paths(op, tok, n, 1, 1) : -1;
	}
}

/* ---------------------------------------------------------- generation */

/* A file path: mostly one that exists (when any does). */
static int pick_file(struct fsx_rng *r, const struct fsx_model *m)
{
	int nfiles = FSX_NPATHS - FSX_DIRS;
	if (rng_below(r, 100) < 85) {
		int start = (int)rng_below(r, (uint64_t)nfiles);
		for (int k = 0; k < nfiles; k++) {
			int p = FSX_DIRS + (start + k) % nfiles;
			int d = model_parent(p);
			if (m->path_ino[p] >= 0 && (d < 0 || m->path_ino[d] >= 0))
				return p;
		}
	}
	return FSX_DIRS + (int)rng_below(r, (uint64_t)nfiles);
}

static void pick_target(struct fsx_rng *r, const struct fsx_model *m, struct fsx_target *t)
{
	int open = 0;
	for (int s = 0; s < FSX_SLOTS; s++)
		open += m->slot_ino[s] >= 0;
	if (open && rng_below(r, 100) < 35) {
		int s = (int)rng_below(r, FSX_SLOTS);
		while (m->slot_ino[s] < 0)
			s = (s + 1) % FSX_SLOTS;
		t->slot = true;
		t->idx = s;
		return;
	}
	t->slot = false;
	t->idx = pick_file(r, m);
}

/* An offset in [0, max): uniform, near the current end of file, or on a
 * page boundary (where page-cache and block-mapping bugs live). */
static uint64_t pick_offset(struct fsx_rng *r, uint64_t size, uint64_t max)
{
	uint64_t off;
	switch (rng_below(r, 4)) {
	case 0: {
		uint64_t d = rng_below(r, 8192);
		off = rng_below(r, 2) && size > d ? size - d : size + d;
		break;
	}
	case 1: /* a page boundary, one byte before or after it */
		off = rng_below(r, max / 4096 + 1) * 4096;
		off += (uint64_t)(rng_below(r, 3) == 0);
		off -= off && rng_below(r, 3) == 0;
		break;
	default:
		off = rng_below(r, max);
		break;
	}
	return off < max ? off : rng_below(r, max);
}

static uint64_t pick_len(struct fsx_rng *r, uint64_t off, const struct fsx_cfg *cfg)
{
	uint64_t len = rng_below(r, 4) == 0 ? 1 + rng_below(r, 64) : 1 + rng_below(r, cfg->max_io);
	if (off + len > cfg->max_size)
		len = cfg->max_size - off;
	return len ? len : 1;
}

/* Relative weights of the operations (sum 100). */
static const struct {
	enum fsx_kind kind;
	unsigned weight;
} weights[] = {
	{OP_WRITE, 20}, {OP_READ, 9},   {OP_MAPWRITE, 7}, {OP_MAPREAD, 7}, {OP_TRUNC, 8},
	{OP_FSYNC, 4},  {OP_CREATE, 6}, {OP_OPEN, 5},     {OP_CLOSE, 3},   {OP_UNLINK, 5},
	{OP_LINK, 5},   {OP_RENAME, 10}, {OP_MKDIR, 6},   {OP_RMDIR, 5},
};

static enum fsx_kind pick_kind(struct fsx_rng *r, const struct fsx_cfg *cfg)
{
	for (;;) {
		unsigned w = (unsigned)rng_below(r, 100);
		for (size_t i = 0; i < sizeof weights / sizeof weights[0]; i++) {
			if (w < weights[i].weight) {
				enum fsx_kind k = weights[i].kind;
				if (cfg->no_mmap && (k == OP_MAPWRITE || k == OP_MAPREAD))
					break;
				return k;
			}
			w -= weights[i].weight;
		}
	}
}

void op_generate(struct fsx_rng *r, const struct fsx_model *m, const struct fsx_cfg *cfg,
		 struct fsx_op *op)
{
	memset(op, 0, sizeof *op);
	op->kind = pick_kind(r, cfg);
	op->tag = (uint32_t)rng_next(r);
	pick_target(r, m, &op->t);
	int ino = model_target_ino(m, &op->t);
	uint64_t size = ino >= 0 ? m->ino[ino].size : 0;
	switch (op->kind) {
	case OP_WRITE:
	case OP_MAPWRITE:
		op->off = pick_offset(r, size, cfg->max_size);
		op->len = pick_len(r, op->off, cfg);
		op->flag = op->kind == OP_MAPWRITE && rng_below(r, 3) == 0;
		break;
	case OP_READ:
		op->off = pick_offset(r, size, cfg->max_size);
		op->len = 1 + rng_below(r, cfg->max_io);
		break;
	case OP_MAPREAD:
		op->off = size ? rng_below(r, size) : 0;
		op->len = 1 + rng_below(r, size > op->off ? size - op->off : 1);
		break;
	case OP_TRUNC:
		op->off = rng_below(r, 8) == 0 ? 0 : pick_offset(r, size, cfg->max_size + 1);
		break;
	case OP_FSYNC:
		op->flag = (int)rng_below(r, 2);
		break;
	case OP_OPEN:
	case OP_CLOSE:
		op->slot = (int)rng_below(r, FSX_SLOTS);
		op->a = pick_file(r, m);
		op->flag = rng_below(r, 3) != 0;
		break;
	case OP_CREATE:
	case OP_UNLINK:
		op->a = pick_file(r, m);
		break;
	case OP_LINK:
		op->a = pick_file(r, m);
		op->b = FSX_DIRS + (int)rng_below(r, FSX_NPATHS - FSX_DIRS);
		break;
	case OP_RENAME:
		op->flag = cfg->no_rename2 ? 0 : (int)(rng_below(r, 4) < 2 ? 0 : rng_below(r, 2) + 1);
		if (rng_below(r, 6) == 0) {
			op->a = (int)rng_below(r, FSX_DIRS);
			op->b = (int)rng_below(r, FSX_DIRS);
		} else {
			op->a = pick_file(r, m);
			op->b = rng_below(r, 2) ? pick_file(r, m)
						: FSX_DIRS + (int)rng_below(r, FSX_NPATHS - FSX_DIRS);
		}
		break;
	case OP_MKDIR:
	case OP_RMDIR:
		op->a = (int)rng_below(r, FSX_DIRS);
		break;
	default:
		break;
	}
}
