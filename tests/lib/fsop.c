/* Operation names, replay-script format and data patterns (fsop.h). */
#include "fsop.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static const char *const kind_names[FSOP_NKINDS] = {
	[FSOP_MKDIR] = "mkdir",       [FSOP_MKNOD] = "mknod",
	[FSOP_SYMLINK] = "symlink",   [FSOP_LINK] = "link",
	[FSOP_UNLINK] = "unlink",     [FSOP_RMDIR] = "rmdir",
	[FSOP_RENAME] = "rename",     [FSOP_TRUNCATE] = "truncate",
	[FSOP_CHMOD] = "chmod",       [FSOP_CHOWN] = "chown",
	[FSOP_UTIMENS] = "utimens",   [FSOP_SETXATTR] = "setxattr",
	[FSOP_REMOVEXATTR] = "removexattr", [FSOP_GETXATTR] = "getxattr",
	[FSOP_LISTXATTR] = "listxattr", [FSOP_STAT] = "stat",
	[FSOP_READDIR] = "readdir",   [FSOP_READLINK] = "readlink",
	[FSOP_OPEN] = "open",         [FSOP_CLOSE] = "close",
	[FSOP_READ] = "read",         [FSOP_WRITE] = "write",
	[FSOP_PREAD] = "pread",       [FSOP_PWRITE] = "pwrite",
	[FSOP_FTRUNCATE] = "ftruncate", [FSOP_FSYNC] = "fsync",
	[FSOP_FSTAT] = "fstat",       [FSOP_CHECKPOINT] = "checkpoint",
};

/* Which fields each kind prints. */
enum {
	F_SLOT = 1 << 0, F_PATH = 1 << 1, F_PATH2 = 1 << 2, F_NAME = 1 << 3, F_FLAGS = 1 << 4,
	F_XFLAGS = 1 << 5, F_NOFOLLOW = 1 << 6, F_MODE = 1 << 7, F_OWNER = 1 << 8, F_OFF = 1 << 9,
	F_LEN = 1 << 10, F_SEED = 1 << 11, F_RDEV = 1 << 12, F_TIMES = 1 << 13,
};
static const unsigned kind_fields[FSOP_NKINDS] = {
	[FSOP_MKDIR] = F_PATH | F_MODE,
	[FSOP_MKNOD] = F_PATH | F_MODE | F_RDEV,
	[FSOP_SYMLINK] = F_PATH | F_PATH2,
	[FSOP_LINK] = F_PATH | F_PATH2,
	[FSOP_UNLINK] = F_PATH,
	[FSOP_RMDIR] = F_PATH,
	[FSOP_RENAME] = F_PATH | F_PATH2 | F_FLAGS,
	[FSOP_TRUNCATE] = F_PATH | F_OFF,
	[FSOP_CHMOD] = F_PATH | F_MODE,
	[FSOP_CHOWN] = F_PATH | F_OWNER | F_NOFOLLOW,
	[FSOP_UTIMENS] = F_PATH | F_TIMES | F_NOFOLLOW,
	[FSOP_SETXATTR] = F_PATH | F_NAME | F_LEN | F_SEED | F_XFLAGS | F_NOFOLLOW,
	[FSOP_REMOVEXATTR] = F_PATH | F_NAME | F_NOFOLLOW,
	[FSOP_GETXATTR] = F_PATH | F_NAME | F_LEN | F_NOFOLLOW,
	[FSOP_LISTXATTR] = F_PATH | F_LEN | F_NOFOLLOW,
	[FSOP_STAT] = F_PATH | F_NOFOLLOW,
	[FSOP_READDIR] = F_PATH,
	[FSOP_READLINK] = F_PATH,
	[FSOP_OPEN] = F_SLOT | F_PATH | F_FLAGS | F_MODE,
	[FSOP_CLOSE] = F_SLOT,
	[FSOP_READ] = F_SLOT | F_LEN,
	[FSOP_WRITE] = F_SLOT | F_LEN | F_SEED,
	[FSOP_PREAD] = F_SLOT | F_OFF | F_LEN,
	[FSOP_PWRITE] = F_SLOT | F_OFF | F_LEN | F_SEED,
	[FSOP_FTRUNCATE] = F_SLOT | F_OFF,
	[FSOP_FSYNC] = F_SLOT | F_FLAGS,
	[FSOP_FSTAT] = F_SLOT,
	[FSOP_CHECKPOINT] = 0,
};

struct flagname {
	unsigned bit;
	const char *name;
};
/* The access mode comes first and is always printed (RDONLY is 0). */
static const struct flagname open_flags[] = {
	{ O_WRONLY, "WRONLY" }, { O_RDWR, "RDWR" },     { O_CREAT, "CREAT" },
	{ O_EXCL, "EXCL" },     { O_TRUNC, "TRUNC" },   { O_APPEND, "APPEND" },
	{ O_NOFOLLOW, "NOFOLLOW" }, { 0, NULL },
};
static const struct flagname rename_flags[] = {
	{ FST_RENAME_NOREPLACE, "NOREPLACE" }, { FST_RENAME_EXCHANGE, "EXCHANGE" }, { 0, NULL },
};
static const struct flagname xattr_flags[] = {
	{ FST_XATTR_CREATE, "CREATE" }, { FST_XATTR_REPLACE, "REPLACE" }, { 0, NULL },
};
static const struct flagname fsync_flags[] = { { 1, "DATASYNC" }, { 0, NULL } };

static const struct flagname *flag_table(enum fsop_kind k)
{
	return k == FSOP_OPEN ? open_flags : k == FSOP_RENAME ? rename_flags : fsync_flags;
}

const char *fsop_kind_name(enum fsop_kind k)
{
	return (unsigned)k < FSOP_NKINDS ? kind_names[k] : "?";
}

int fsop_kind_parse(const char *name)
{
	for (int k = 0; k < FSOP_NKINDS; k++)
		if (!strcmp(kind_names[k], name))
			return k;
	return -1;
}

void fsop_free(struct fsop *op)
{
	free(op->path);
	free(op->path2);
	free(op->name);
	op->path = op->path2 = op->name = NULL;
}

void fsop_copy(struct fsop *dst, const struct fsop *src)
{
	*dst = *src;
	dst->path = src->path ? fst_xstrdup(src->path) : NULL;
	dst->path2 = src->path2 ? fst_xstrdup(src->path2) : NULL;
	dst->name = src->name ? fst_xstrdup(src->name) : NULL;
}

/* ---- formatting ---- */

static void put_str(FILE *f, const char *key, const char *s)
{
	fprintf(f, " %s=", key);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p <= ' ' || *p > '~' || *p == '%')
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
	}
}

static void put_flags(FILE *f, const char *key, unsigned v, const struct flagname *tab)
{
	fprintf(f, " %s=", key);
	bool any = false;
	if (tab == open_flags && !(v & O_ACCMODE)) {
		fputs("RDONLY", f);
		any = true;
	}
	for (const struct flagname *t = tab; t->name; t++)
		if (v & t->bit) {
			fprintf(f, "%s%s", any ? "|" : "", t->name);
			v &= ~t->bit;
			any = true;
		}
	if (v || !any)
		fprintf(f, "%s0x%x", any ? "|" : "", v);
}

void fsop_format(const struct fsop *op, FILE *f)
{
	unsigned fl = (unsigned)op->kind < FSOP_NKINDS ? kind_fields[op->kind] : 0;
	fputs(fsop_kind_name(op->kind), f);
	if (fl & F_SLOT)
		fprintf(f, " slot=%d", op->slot);
	if (fl & F_PATH)
		put_str(f, "path", op->path);
	if (fl & F_PATH2)
		put_str(f, "path2", op->path2);
	if (fl & F_NAME)
		put_str(f, "name", op->name);
	if ((fl & F_FLAGS) && (op->flags || op->kind == FSOP_OPEN))
		put_flags(f, "flags", op->flags, flag_table(op->kind));
	if ((fl & F_XFLAGS) && op->xflags)
		put_flags(f, "xflags", op->xflags, xattr_flags);
	if ((fl & F_NOFOLLOW) && op->nofollow)
		fputs(" nofollow=1", f);
	if (fl & F_MODE)
		fprintf(f, " mode=0%" PRIo32, op->mode);
	if (fl & F_OWNER)
		fprintf(f, " uid=%" PRId32 " gid=%" PRId32, (int32_t)op->uid, (int32_t)op->gid);
	if (fl & F_OFF)
		fprintf(f, " off=%" PRIu64, op->off);
	if (fl & F_LEN)
		fprintf(f, " len=%" PRIu64, op->len);
	if ((fl & F_SEED) && op->seed)
		fprintf(f, " seed=0x%" PRIx64, op->seed);
	if ((fl & F_RDEV) && op->rdev)
		fprintf(f, " rdev=%u:%u", major(op->rdev), minor(op->rdev));
	if (fl & F_TIMES)
		fprintf(f, " atime=%" PRId64 ".%09" PRIu32 " mtime=%" PRId64 ".%09" PRIu32,
			op->ts[0].sec, op->ts[0].nsec, op->ts[1].sec, op->ts[1].nsec);
	fputc('\n', f);
}

void fsop_script_write(const struct fsop *ops, size_t n, FILE *f)
{
	for (size_t i = 0; i < n; i++)
		fsop_format(&ops[i], f);
}

/* ---- parsing ---- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char *unescape(const char *s, size_t n)
{
	char *out = fst_xcalloc(1, n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			out[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = 0;
	return out;
}

static int parse_flags(const char *v, const struct flagname *tab, unsigned *out)
{
	*out = 0;
	char *copy = fst_xstrdup(v), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
		const struct flagname *t = tab;
		while (t->name && strcmp(t->name, tok))
			t++;
		if (tab == open_flags && !strcmp(tok, "RDONLY"))
			continue;
		if (t->name) {
			*out |= t->bit;
		} else {
			char *end;
			unsigned long x = strtoul(tok, &end, 0);
			if (*end) {
				rc = -EINVAL;
				break;
			}
			*out |= (unsigned)x;
		}
	}
	free(copy);
	return rc;
}

static int parse_time(const char *v, struct fst_time *t)
{
	char *end;
	t->sec = strtoll(v, &end, 10);
	t->nsec = 0;
	if (*end == '.')
		t->nsec = (uint32_t)strtoul(end + 1, &end, 10);
	return *end ? -EINVAL : 0;
}

static int parse_field(struct fsop *op, const char *key, const char *v, size_t vlen)
{
	char *s = unescape(v, vlen), *end = NULL;
	int rc = 0;
	if (!strcmp(key, "path") || !strcmp(key, "path2") || !strcmp(key, "name")) {
		char **dst = key[0] == 'n' ? &op->name : key[4] ? &op->path2 : &op->path;
		free(*dst);
		*dst = s;
		return 0;
	}
	if (!strcmp(key, "slot"))
		op->slot = (int)strtol(s, &end, 10);
	else if (!strcmp(key, "flags"))
		rc = parse_flags(s, flag_table(op->kind), &op->flags);
	else if (!strcmp(key, "xflags"))
		rc = parse_flags(s, xattr_flags, &op->xflags);
	else if (!strcmp(key, "nofollow"))
		op->nofollow = strtoul(s, &end, 10) != 0;
	else if (!strcmp(key, "mode"))
		op->mode = (uint32_t)strtoul(s, &end, 8);
	else if (!strcmp(key, "uid"))
		op->uid = (uint32_t)strtol(s, &end, 10);
	else if (!strcmp(key, "gid"))
		op->gid = (uint32_t)strtol(s, &end, 10);
	else if (!strcmp(key, "off"))
		op->off = strtoull(s, &end, 0);
	else if (!strcmp(key, "len"))
		op->len = strtoull(s, &end, 0);
	else if (!strcmp(key, "seed"))
		op->seed = strtoull(s, &end, 0);
	else if (!strcmp(key, "rdev")) {
		unsigned long ma = strtoul(s, &end, 10), mi = 0;
		if (*end == ':')
			mi = strtoul(end + 1, &end, 10);
		op->rdev = makedev(ma, mi);
	} else if (!strcmp(key, "atime"))
		rc = parse_time(s, &op->ts[0]);
	else if (!strcmp(key, "mtime"))
		rc = parse_time(s, &op->ts[1]);
	else
		rc = -EINVAL;
	if (end && *end)
		rc = -EINVAL;
	free(s);
	return rc;
}

int fsop_parse(const char *line, struct fsop *op, char *err, size_t errlen)
{
	memset(op, 0, sizeof *op);
	const char *p = line + strspn(line, " \t");
	if (!*p || *p == '\n' || *p == '#')
		return 1;
	size_t n = strcspn(p, " \t\n");
	char kind[32];
	snprintf(kind, sizeof kind, "%.*s", (int)(n < 31 ? n : 31), p);
	int k = fsop_kind_parse(kind);
	if (k < 0) {
		snprintf(err, errlen, "unknown operation '%s'", kind);
		return -EINVAL;
	}
	op->kind = (enum fsop_kind)k;
	p += n;
	for (;;) {
		p += strspn(p, " \t\n");
		if (!*p)
			break;
		size_t tl = strcspn(p, " \t\n");
		const char *eq = memchr(p, '=', tl);
		char key[16];
		if (!eq || eq - p >= (ptrdiff_t)sizeof key) {
			snprintf(err, errlen, "bad field '%.*s'", (int)tl, p);
			fsop_free(op);
			return -EINVAL;
		}
		snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
		if (parse_field(op, key, eq + 1, tl - (size_t)(eq + 1 - p))) {
			snprintf(err, errlen, "bad field '%.*s'", (int)tl, p);
			fsop_free(op);
			return -EINVAL;
		}
		p += tl;
	}
	return 0;
}

int fsop_script_read(FILE *f, struct fsop **ops, size_t *n, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0, nops = 0, opcap = 0;
	struct fsop *v = NULL;
	int rc = 0;
	while (getline(&line, &cap, f) > 0) {
		struct fsop op;
		char e[200];
		lineno++;
		int r = fsop_parse(line, &op, e, sizeof e);
		if (r == 1)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "line %zu: %s", lineno, e);
			rc = r;
			break;
		}
		if (nops == opcap) {
			opcap = opcap ? 2 * opcap : 64;
			v = fst_xrealloc(v, opcap * sizeof *v);
		}
		v[nops++] = op;
	}
	free(line);
	if (rc) {
		for (size_t i = 0; i < nops; i++)
			fsop_free(&v[i]);
		free(v);
		return rc;
	}
	*ops = v;
	*n = nops;
	return 0;
}

/* ---- data ---- */

uint64_t fsop_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void fsop_fill(uint64_t seed, uint8_t *buf, size_t len)
{
	if (!seed) {
		memset(buf, 0, len);
		return;
	}
	uint64_t st = seed;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t r = fsop_rand(&st);
		memcpy(buf + i, &r, 8);
	}
	if (i < len) {
		uint64_t r = fsop_rand(&st);
		memcpy(buf + i, &r, len - i);
	}
}
