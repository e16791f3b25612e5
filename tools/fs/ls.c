/* nostall ls [-l] [-R] [-a] [-i] [--device SPEC] [-o OPTS] IMAGE [PATH...]:
 * directory listings sorted by name (byte order), optionally long, recursive,
 * with dot entries and inode numbers (docs/cli.md). */
#include "../common/cmds.h"
#include "common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ls_entry {
	char *name;
	uint16_t name_len;
	uint64_t ino;
	uint8_t type;
	struct nostall_stat st;
	int st_rc;
	char *target; /* symlinks with -l */
};

struct ls_list {
	struct ls_entry *v;
	size_t n, cap;
	bool all;
};

static int ls_collect(void *ctx, const struct nostall_dirent *de)
{
	struct ls_list *l = ctx;
	if (!l->all && (!strcmp(de->name, ".") || !strcmp(de->name, "..")))
		return 0;
	if (cli_array_grow(&l->v, &l->cap, l->n, sizeof l->v[0], 64))
		return -ENOMEM;
	struct ls_entry *e = &l->v[l->n];
	memset(e, 0, sizeof *e);
	e->name = malloc(de->name_len + 1u);
	if (!e->name)
		return -ENOMEM;
	memcpy(e->name, de->name, de->name_len);
	e->name[de->name_len] = '\0';
	e->name_len = de->name_len;
	e->ino = de->ino;
	e->type = de->type;
	l->n++;
	return 0;
}

static int ls_cmp(const void *a, const void *b)
{
	const struct ls_entry *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	return (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static void ls_free(struct ls_list *l)
{
	for (size_t k = 0; k < l->n; k++) {
		free(l->v[k].name);
		free(l->v[k].target);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

static int digits(uint64_t v)
{
	int d = 1;
	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* Print entries (already stat'ed when long). dir_label: the path printed in
 * messages. Returns 0 or 1 (some entry failed). */
static int ls_print(const struct cli_args *a, struct nostall_fs *fs, struct ls_list *l,
		    const char *dir_label)
{
	int ret = 0;
	int w_ino = 1, w_nlink = 1, w_uid = 1, w_gid = 1, w_size = 1;
	if (a->flag['l'] || a->flag['i']) {
		for (size_t k = 0; k < l->n; k++) {
			struct ls_entry *e = &l->v[k];
			if (e->st_rc)
				continue;
			const struct nostall_stat *s = &e->st;
			int d;
			if ((d = digits(s->ino)) > w_ino) w_ino = d;
			if ((d = digits(s->nlink)) > w_nlink) w_nlink = d;
			if ((d = digits(s->uid)) > w_uid) w_uid = d;
			if ((d = digits(s->gid)) > w_gid) w_gid = d;
			if (S_ISCHR(s->mode) || S_ISBLK(s->mode))
				d = digits(s->rdev_major) + 2 + digits(s->rdev_minor);
			else
				d = digits(s->size);
			if (d > w_size) w_size = d;
		}
	}
	for (size_t k = 0; k < l->n; k++) {
		struct ls_entry *e = &l->v[k];
		if (e->st_rc) {
			fprintf(stderr, "nostall ls: %s%s%s: %s\n", dir_label,
				dir_label[0] && dir_label[strlen(dir_label) - 1] != '/' ? "/" : "", e->name,
				nostall_errmsg(e->st_rc));
			ret = 1;
			continue;
		}
		const struct nostall_stat *s = &e->st;
		if (a->flag['i'])
			printf("%*" PRIu64 " ", w_ino, s->ino);
		if (a->flag['l']) {
			char ms[11], ts[64], sz[48];
			cli_mode_string(s->mode, ms);
			cli_time_string(&s->mtime, false, ts, sizeof ts);
			if (S_ISCHR(s->mode) || S_ISBLK(s->mode))
				snprintf(sz, sizeof sz, "%u, %u", s->rdev_major, s->rdev_minor);
			else
				snprintf(sz, sizeof sz, "%" PRIu64, s->size);
			printf("%s %*u %*u %*u %*s %s ", ms, w_nlink, s->nlink, w_uid, s->uid, w_gid, s->gid,
			       w_size, sz, ts);
		}
		fwrite(e->name, 1, e->name_len, stdout);
		if (a->flag['l'] && S_ISLNK(e->st.mode)) {
			fputs(" -> ", stdout);
			if (e->target)
				fputs(e->target, stdout);
		}
		putchar('\n');
	}
	(void)fs;
	return ret;
}

static void ls_stat_all(const struct cli_args *a, struct nostall_fs *fs, struct ls_list *l)
{
	for (size_t k = 0; k < l->n; k++) {
		struct ls_entry *e = &l->v[k];
		if (!a->flag['l'] && !a->flag['i'] && !a->flag['R'])
			continue;
		e->st_rc = nostall_stat_ino(fs, e->ino, &e->st);
		if (e->st_rc == 0 && a->flag['l'] && S_ISLNK(e->st.mode)) {
			int err;
			e->target = cli_read_target(fs, e->ino, e->st.size, &err);
			if (!e->target)
				e->st_rc = err;
		}
	}
}

/* List directory ino (labelled path); with -R recurse. depth bounds
 * recursion; a directory that is its own ancestor (a corrupt image) is
 * reported, not listed again at every level. */
static int ls_dir(const struct cli_args *a, struct nostall_fs *fs, uint64_t ino, const char *path,
		  bool header, int depth, const struct cli_dir_up *up)
{
	const struct cli_dir_up self = { ino, up };
	struct ls_list l = { .all = a->flag['a'] };
	int ret = 0;
	if (header) /* raw bytes, like GNU ls writing to a pipe */
		printf("%s:\n", path);
	int rc = nostall_readdir_ino(fs, ino, ls_collect, &l);
	if (rc < 0) {
		cli_path_error(a, path, rc);
		ls_free(&l);
		return 1;
	}
	if (l.n) /* qsort(NULL, 0, ...) is undefined */
		qsort(l.v, l.n, sizeof l.v[0], ls_cmp);
	ls_stat_all(a, fs, &l);
	if (a->flag['l']) {
		uint64_t total = 0;
		for (size_t k = 0; k < l.n; k++)
			if (!l.v[k].st_rc)
				total += l.v[k].st.blocks;
		printf("total %" PRIu64 "\n", total / 2);
	}
	ret |= ls_print(a, fs, &l, path);
	if (a->flag['R']) {
		if (depth > 4096) {
			fprintf(stderr, "nostall ls: %s: directories nested too deep\n", path);
			ls_free(&l);
			return 1;
		}
		for (size_t k = 0; k < l.n; k++) {
			struct ls_entry *e = &l.v[k];
			if (e->st_rc || !S_ISDIR(e->st.mode))
				continue;
			if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
				continue;
			size_t plen = strlen(path);
			char *sub = malloc(plen + e->name_len + 2);
			if (!sub) {
				ret = 1;
				break;
			}
			bool slash = plen && path[plen - 1] == '/';
			sprintf(sub, "%s%s%s", path, slash ? "" : "/", e->name);
			if (cli_dir_up_has(&self, e->ino)) {
				fprintf(stderr, "nostall ls: %s: directory loop (a corrupt image)\n", sub);
				free(sub);
				ret = 1;
				continue;
			}
			putchar('\n');
			ret |= ls_dir(a, fs, e->ino, sub, true, depth + 1, &self);
			free(sub);
		}
	}
	ls_free(&l);
	return ret;
}

static int ls_run(struct cli_args *a, struct nostall_fs *fs)
{
	static char *root_only[] = { "/" };
	char **paths = a->npos ? a->pos : root_only;
	int np = a->npos ? a->npos : 1;
	int ret = 0;
	for (int k = 0; k < np; k++) {
		const char *path = paths[k];
		struct nostall_stat st;
		/* like ls: a symlink to a directory is listed as the directory
		 * unless -l is given */
		int rc = nostall_stat(fs, path, a->flag['l'] ? NOSTALL_NOFOLLOW : 0, &st);
		if (rc) {
			ret |= cli_path_error(a, path, rc);
			continue;
		}
		if (S_ISDIR(st.mode)) {
			if (k > 0)
				putchar('\n');
			ret |= ls_dir(a, fs, st.ino, path, np > 1 || a->flag['R'], 0, NULL);
		} else {
			struct ls_list l = { 0 };
			struct nostall_dirent de = { .ino = st.ino };
			size_t len = strlen(path);
			if (len > NOSTALL_NAME_MAX) {
				/* show the whole path as the name, like ls does */
				len = NOSTALL_NAME_MAX;
			}
			memcpy(de.name, path, len);
			de.name[len] = '\0';
			de.name_len = (uint16_t)len;
			l.all = true;
			if (ls_collect(&l, &de)) {
				ls_free(&l);
				ret |= cli_oom(a);
				continue;
			}
			l.v[0].st = st;
			l.v[0].st_rc = 0;
			if (a->flag['l'] && S_ISLNK(st.mode)) {
				int err;
				l.v[0].target = cli_read_target(fs, st.ino, st.size, &err);
				l.v[0].st_rc = l.v[0].target ? 0 : err;
			}
			ret |= ls_print(a, fs, &l, "");
			ls_free(&l);
		}
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "nostall ls: write error on standard output: %s\n", strerror(errno));
		ret = 1;
	}
	return ret;
}

const struct cli_cmd cmd_ls = {
	.name = "ls", .usage = "ls [-l] [-R] [-a] [-i] [--device SPEC] [-o OPTS] IMAGE [PATH...]",
	.flags = "lRai", .min_pos = 0, .max_pos = -1, .mount_flags = NOSTALL_MOUNT_RDONLY,
	.run = ls_run,
};
