/* The namespace commands on a read-write mount (docs/cli.md):
 *   nostall mkdir [-p] [-m MODE] IMAGE PATH...
 *   nostall rm [-r] IMAGE PATH...
 *   nostall rmdir IMAGE PATH...
 *   nostall mv IMAGE FROM TO
 *   nostall ln [-s] IMAGE TARGET LINKPATH
 *   nostall mknod [-m MODE] IMAGE PATH b|c|u|p [MAJOR MINOR]
 * Each failure prints one line naming the path and the errno text; the
 * other PATHs are still done and the status is 1. */
#include "../common/cmds.h"
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* ---- mkdir ---- */

static int mkdir_check(struct cli_args *a)
{
	uint32_t m;
	if (a->flag['m'] && !cli_parse_mode(a->arg['m'], &m))
		return cli_arg_error(a, a->arg['m'], "invalid mode (octal, 0 to 7777)");
	return -1;
}

static bool is_dir(struct nostall_fs *fs, const char *path)
{
	struct nostall_stat st;
	return !nostall_stat(fs, path, 0, &st) && S_ISDIR(st.mode);
}

/* mkdir -p: every missing component, with u+wx for the parents (like
 * mkdir(1): 0777 less the umask, plus u+wx, given as it is); an existing
 * directory is fine. umask: the last one's. */
static int mkdir_parents(struct cli_args *a, struct nostall_fs *fs, const char *path, uint32_t mode,
			 uint32_t umask)
{
	uint32_t pmode = (0777 & ~cli_umask()) | 0300;
	char *p = strdup(path);
	if (!p)
		return cli_oom(a);
	int rc = 0;
	for (char *s = p; !rc && *s;) {
		while (*s == '/')
			s++;
		char *e = s + strcspn(s, "/");
		if (e == s)
			break;
		char c = *e;
		*e = '\0';
		bool last = !c || !e[strspn(e + 1, "/") + 1];
		nostall_cred_umask(fs, last ? umask : 0);
		rc = nostall_mkdir(fs, p, last ? mode : pmode);
		if (rc == -EEXIST && is_dir(fs, p))
			rc = 0;
		*e = c;
		s = e;
	}
	int ret = rc ? cli_fs_error(a, path, rc) : 0;
	free(p);
	return ret;
}

static int mkdir_run(struct cli_args *a, struct nostall_fs *fs)
{
	/* the umask is the library's (cli_main; a default ACL replaces it);
	 * -m MODE is taken as it is, as mkdir(1) does */
	uint32_t mode = 0777, umask = cli_umask();
	if (a->flag['m']) {
		cli_parse_mode(a->arg['m'], &mode);
		umask = 0;
	}
	nostall_cred_umask(fs, umask);
	int ret = 0;
	for (int k = 0; k < a->npos; k++) {
		if (a->flag['p']) {
			ret |= mkdir_parents(a, fs, a->pos[k], mode, umask);
			nostall_cred_umask(fs, umask);
			continue;
		}
		int rc = nostall_mkdir(fs, a->pos[k], mode);
		if (rc)
			ret |= cli_fs_error(a, a->pos[k], rc);
	}
	return ret;
}

const struct cli_cmd cmd_mkdir = {
	.name = "mkdir", .usage = "mkdir [-p] [-m MODE] [-o OPTS] IMAGE PATH...",
	.flags = "pm:", .min_pos = 1, .max_pos = -1, .check = mkdir_check, .run = mkdir_run,
};

/* ---- rm, rmdir ---- */

struct names {
	char **v;
	size_t n, cap;
};

static int names_add(void *ctx, const struct nostall_dirent *de)
{
	struct names *l = ctx;
	if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
		return 0;
	if (cli_array_grow(&l->v, &l->cap, l->n, sizeof *l->v, 16))
		return -ENOMEM;
	if (!(l->v[l->n] = strdup(de->name)))
		return -ENOMEM;
	l->n++;
	return 0;
}

static void names_free(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* Remove path; with recurse, a directory and everything in it (entries are
 * listed first, then removed, so the walk never reads a changing block).
 * up: the directories being removed around it (a corrupt image's name for
 * one of them is refused, with them). */
static int rm_one(struct cli_args *a, struct nostall_fs *fs, const char *path, bool recurse,
		  const struct cli_dir_up *up)
{
	struct nostall_stat st;
	int rc = nostall_stat(fs, path, NOSTALL_NOFOLLOW, &st);
	if (rc)
		return cli_fs_error(a, path, rc);
	if (!S_ISDIR(st.mode)) {
		rc = nostall_unlink(fs, path);
		return rc ? cli_fs_error(a, path, rc) : 0;
	}
	if (!recurse)
		return cli_fs_error(a, path, -EISDIR);
	if (cli_dir_up_has(up, st.ino)) {
		fprintf(stderr, "nostall rm: %s: directory loop (a corrupt image)\n", path);
		return 1;
	}
	const struct cli_dir_up self = { st.ino, up };
	struct names l = { 0 };
	rc = nostall_readdir(fs, path, names_add, &l);
	if (rc) {
		names_free(&l);
		return cli_fs_error(a, path, rc);
	}
	int ret = 0;
	for (size_t i = 0; i < l.n; i++) {
		char *sub = cli_join(path, l.v[i]);
		ret |= sub ? rm_one(a, fs, sub, true, &self) : cli_oom(a);
		free(sub);
	}
	names_free(&l);
	if (!ret && (rc = nostall_rmdir(fs, path)))
		ret = cli_fs_error(a, path, rc);
	return ret;
}

/* rm_one on path with the directories above it as its ancestors: a
 * corrupt image's name for one of them inside path is refused, not a way
 * to remove what is outside path. */
static int rm_top(struct cli_args *a, struct nostall_fs *fs, const char *path)
{
	size_t n = strlen(path);
	struct cli_dir_up *v = calloc(n + 1, sizeof *v);
	char *pre = strdup(path);
	if (!v || !pre) {
		free(v);
		free(pre);
		return cli_oom(a);
	}
	const struct cli_dir_up *up = NULL;
	size_t depth = 0;
	for (size_t i = 0; i < n; i++) { /* each prefix ending before a '/' not last */
		if (path[i] != '/' || i + 1 == n || path[i + 1] == '/')
			continue;
		pre[i ? i : 1] = '\0';
		struct nostall_stat st;
		if (nostall_stat(fs, pre, 0, &st) == 0 && S_ISDIR(st.mode)) {
			v[depth] = (struct cli_dir_up){ st.ino, up };
			up = &v[depth++];
		}
		memcpy(pre, path, n + 1);
	}
	int ret = rm_one(a, fs, path, true, up);
	free(v);
	free(pre);
	return ret;
}

static int rm_run(struct cli_args *a, struct nostall_fs *fs)
{
	int ret = 0;
	for (int k = 0; k < a->npos; k++)
		ret |= a->flag['r'] ? rm_top(a, fs, a->pos[k]) : rm_one(a, fs, a->pos[k], false, NULL);
	return ret;
}

const struct cli_cmd cmd_rm = {
	.name = "rm", .usage = "rm [-r] [-o OPTS] IMAGE PATH...",
	.flags = "r", .min_pos = 1, .max_pos = -1, .run = rm_run,
};

static int rmdir_run(struct cli_args *a, struct nostall_fs *fs)
{
	int ret = 0;
	for (int k = 0; k < a->npos; k++) {
		int rc = nostall_rmdir(fs, a->pos[k]);
		if (rc)
			ret |= cli_fs_error(a, a->pos[k], rc);
	}
	return ret;
}

const struct cli_cmd cmd_rmdir = {
	.name = "rmdir", .usage = "rmdir [-o OPTS] IMAGE PATH...",
	.min_pos = 1, .max_pos = -1, .run = rmdir_run,
};

/* ---- mv, ln ---- */

/* mv(1) and ln(1): a destination that is an existing directory means
 * "into it, under the source's last name". Returns a malloc'ed path. */
static char *dest_path(struct nostall_fs *fs, const char *src, const char *dst)
{
	if (!is_dir(fs, dst))
		return strdup(dst);
	size_t n = strlen(src);
	while (n > 1 && src[n - 1] == '/')
		n--;
	size_t b = n;
	while (b && src[b - 1] != '/')
		b--;
	char *base = strndup(src + b, n - b);
	char *p = base ? cli_join(dst, base) : NULL;
	free(base);
	return p;
}

static int mv_run(struct cli_args *a, struct nostall_fs *fs)
{
	const char *from = a->pos[0];
	char *to = dest_path(fs, from, a->pos[1]);
	if (!to)
		return cli_oom(a);
	int rc = nostall_rename(fs, from, to, 0);
	int ret = rc ? cli_fs_error(a, from, rc) : 0;
	free(to);
	return ret;
}

const struct cli_cmd cmd_mv = {
	.name = "mv", .usage = "mv [-o OPTS] IMAGE FROM TO",
	.min_pos = 2, .max_pos = 2, .run = mv_run,
};

static int ln_run(struct cli_args *a, struct nostall_fs *fs)
{
	const char *target = a->pos[0];
	char *link = dest_path(fs, target, a->pos[1]);
	if (!link)
		return cli_oom(a);
	int rc = a->flag['s'] ? nostall_symlink(fs, target, link) : nostall_link(fs, target, link);
	int ret = rc ? cli_fs_error(a, link, rc) : 0;
	free(link);
	return ret;
}

const struct cli_cmd cmd_ln = {
	.name = "ln", .usage = "ln [-s] [-o OPTS] IMAGE TARGET LINKPATH",
	.flags = "s", .min_pos = 2, .max_pos = 2, .run = ln_run,
};

/* ---- mknod, as mknod(1): b (block), c or u (character), p (fifo) ---- */

static int mknod_parse(struct cli_args *a, uint32_t *type, uint64_t *rdev)
{
	const char *t = a->pos[1];
	bool dev = !strcmp(t, "b") || !strcmp(t, "c") || !strcmp(t, "u");
	if (!dev && strcmp(t, "p"))
		return cli_arg_error(a, t, "invalid type (b, c, u or p)");
	if (dev != (a->npos == 4))
		return cli_usage_error(a, dev ? "a device needs MAJOR and MINOR" :
					      "a fifo takes no MAJOR and MINOR");
	*type = t[0] == 'b' ? S_IFBLK : t[0] == 'p' ? S_IFIFO : S_IFCHR;
	*rdev = 0;
	if (dev) {
		char *e1, *e2;
		unsigned long ma = strtoul(a->pos[2], &e1, 0), mi = strtoul(a->pos[3], &e2, 0);
		if (*e1 || *e2 || !*a->pos[2] || !*a->pos[3] || ma > 0xfff || mi > 0xfffff)
			return cli_arg_error(a, *e1 || !*a->pos[2] || ma > 0xfff ? a->pos[2] : a->pos[3],
					     "invalid device number");
		*rdev = makedev((unsigned)ma, (unsigned)mi);
	}
	return -1;
}

static int mknod_check(struct cli_args *a)
{
	uint32_t m, type;
	uint64_t rdev;
	if (a->flag['m'] && !cli_parse_mode(a->arg['m'], &m))
		return cli_arg_error(a, a->arg['m'], "invalid mode (octal, 0 to 7777)");
	return mknod_parse(a, &type, &rdev);
}

static int mknod_run(struct cli_args *a, struct nostall_fs *fs)
{
	uint32_t mode = 0666, type; /* less the umask (the library's), or -m as it is */
	uint64_t rdev;
	if (a->flag['m']) {
		cli_parse_mode(a->arg['m'], &mode);
		nostall_cred_umask(fs, 0);
	}
	(void)mknod_parse(a, &type, &rdev);
	int rc = nostall_mknod(fs, a->pos[0], type | mode, rdev);
	return rc ? cli_fs_error(a, a->pos[0], rc) : 0;
}

const struct cli_cmd cmd_mknod = {
	.name = "mknod", .usage = "mknod [-m MODE] [-o OPTS] IMAGE PATH b|c|u|p [MAJOR MINOR]",
	.flags = "m:", .min_pos = 2, .max_pos = 4, .check = mknod_check, .run = mknod_run,
};
