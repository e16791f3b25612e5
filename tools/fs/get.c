/* nostall get [-r] [-v] [--progress] [--device SPEC] [-o OPTS] IMAGE PATH HOSTPATH:
 * copy a file, or with -r any tree, out of the image (docs/cli.md). This part
 * walks the image and creates the host entries; get_host.c writes their
 * data and attributes. */
#include "../common/cmds.h"
#include "get.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int hl_find(struct get_ctx *g, uint64_t ino)
{
	for (size_t k = 0; k < g->nhl; k++)
		if (g->hl[k].ino == ino)
			return (int)k;
	return -1;
}

static void hl_add(struct get_ctx *g, uint64_t ino, const char *relpath)
{
	if (cli_array_grow(&g->hl, &g->caphl, g->nhl, sizeof g->hl[0], 32))
		return;
	char *p = strdup(relpath);
	if (!p)
		return;
	g->hl[g->nhl].ino = ino;
	g->hl[g->nhl].relpath = p;
	g->nhl++;
}

/* Remove whatever is at dirfd/name unless it is a directory (which is merged
 * into). */
static void clear_target(int dirfd, const char *name)
{
	struct stat hs;
	if (fstatat(dirfd, name, &hs, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(hs.st_mode))
		unlinkat(dirfd, name, 0);
}

static int get_regular(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		       const char *path, const char *relpath)
{
	if (st->nlink > 1 && relpath) {
		int k = hl_find(g, st->ino);
		if (k >= 0) {
			clear_target(dirfd, name);
			if (linkat(g->top_fd, g->hl[k].relpath, dirfd, name, 0) == 0) {
				g->hardlinks++;
				return 0;
			}
			/* fall back to a separate copy */
		}
	}
	struct nostall_file *f = NULL;
	int rc = nostall_open_ino(g->fs, st->ino, NOSTALL_O_RDONLY, &f);
	if (rc)
		return get_error(g, path, NULL, rc, true);
	clear_target(dirfd, name);
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		nostall_close(f);
		return get_error(g, path, "create", rc, false);
	}
	rc = get_data_copy(g, f, st, fd, path);
	nostall_close(f);
	if (close(fd) < 0 && !rc)
		rc = get_error(g, path, "close", -errno, false);
	if (rc)
		return rc;
	get_attrs_set(g, dirfd, name, st, path);
	g->files++;
	if (st->nlink > 1 && relpath)
		hl_add(g, st->ino, relpath);
	return 0;
}

static int get_symlink(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		       const char *path)
{
	int err;
	char *t = cli_read_target(g->fs, st->ino, st->size, &err);
	if (!t)
		return get_error(g, path, "readlink", err, true);
	clear_target(dirfd, name);
	if (symlinkat(t, dirfd, name) < 0) {
		err = -errno;
		free(t);
		return get_error(g, path, "symlink", err, false);
	}
	free(t);
	get_attrs_set(g, dirfd, name, st, path);
	g->links++;
	return 0;
}

static int get_special(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		       const char *path)
{
	bool dev = S_ISCHR(st->mode) || S_ISBLK(st->mode);
	if (dev && !g->root) {
		if (!g->skipped_dev++)
			fprintf(stderr, "nostall get: %s: device node not created (needs root)\n", path);
		return 0;
	}
	clear_target(dirfd, name);
	dev_t rdev = dev ? makedev(st->rdev_major, st->rdev_minor) : 0;
	if (mknodat(dirfd, name, (st->mode & S_IFMT) | 0600, rdev) < 0)
		return get_error(g, path, "mknod", -errno, false);
	get_attrs_set(g, dirfd, name, st, path);
	g->specials++;
	return 0;
}

static int get_tree(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		    const char *path, const char *relpath, int depth);

struct name_list {
	struct nostall_dirent *v;
	size_t n, cap;
};

static int collect_names(void *ctx, const struct nostall_dirent *de)
{
	struct name_list *l = ctx;
	if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
		return 0;
	if (cli_array_grow(&l->v, &l->cap, l->n, sizeof l->v[0], 64))
		return -ENOMEM;
	l->v[l->n++] = *de;
	return 0;
}

static int get_dir(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		   const char *path, const char *relpath, int depth)
{
	if (depth > GET_MAX_DEPTH)
		return get_error(g, path, NULL, -ELOOP, false);
	for (int k = 0; k < depth; k++)
		if (g->anc[k] == st->ino)
			return get_error(g, path, "directory loop (a corrupt image)", -ELOOP, true);
	g->anc[depth] = st->ino;
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return get_error(g, path, "mkdir", -errno, false);
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* an existing directory without search permission for us */
		if (errno == EACCES && fchmodat(dirfd, name, 0700, 0) == 0)
			fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return get_error(g, path, "open", -errno, false);
	}
	struct name_list l = { 0 };
	int rc = nostall_readdir_ino(g->fs, st->ino, collect_names, &l);
	if (rc < 0)
		get_error(g, path, "readdir", rc, true);
	for (size_t k = 0; k < l.n; k++) {
		const struct nostall_dirent *de = &l.v[k];
		char *sub = cli_join(path, de->name);
		char *subrel = relpath ? (relpath[0] ? cli_join(relpath, de->name) : strdup(de->name)) : NULL;
		if (!sub || (relpath && !subrel)) {
			free(sub);
			free(subrel);
			get_error(g, path, NULL, -ENOMEM, false);
			break;
		}
		struct nostall_stat cst;
		rc = nostall_stat_ino(g->fs, de->ino, &cst);
		if (rc)
			get_error(g, sub, NULL, rc, true);
		else
			get_tree(g, fd, de->name, &cst, sub, subrel, depth + 1);
		free(sub);
		free(subrel);
	}
	free(l.v);
	close(fd);
	get_attrs_set(g, dirfd, name, st, path);
	g->dirs++;
	return 0;
}

static int get_tree(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		    const char *path, const char *relpath, int depth)
{
	if (g->a->flag['v'])
		fprintf(stderr, "%s\n", path);
	switch (st->mode & S_IFMT) {
	case S_IFREG:
		return get_regular(g, dirfd, name, st, path, relpath);
	case S_IFDIR:
		return get_dir(g, dirfd, name, st, path, relpath, depth);
	case S_IFLNK:
		return get_symlink(g, dirfd, name, st, path);
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		return get_special(g, dirfd, name, st, path);
	default:
		fprintf(stderr, "nostall get: %s: unknown file type (mode 0%o), skipped\n", path, st->mode);
		g->ret = 1;
		return -EUCLEAN;
	}
}

static const char *base_name(const char *p)
{
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		n--;
	const char *s = p + n;
	while (s > p && s[-1] != '/')
		s--;
	return s;
}

/* Destination: HOSTPATH itself, or HOSTPATH/basename(PATH) when HOSTPATH is
 * an existing directory and PATH is not (cp semantics for files; a
 * directory is copied AS HOSTPATH, merging into an existing one). Returns
 * the malloc'ed path, or NULL (reported). */
static char *get_dest(const struct cli_args *a, const char *path, const char *host,
		      const struct nostall_stat *st)
{
	char *dest = strdup(host);
	struct stat hs;
	if (dest && !S_ISDIR(st->mode) && stat(host, &hs) == 0 && S_ISDIR(hs.st_mode)) {
		const char *b = base_name(path);
		free(dest);
		dest = (*b && strcmp(b, "/")) ? cli_join(host, b) : NULL;
		if (!dest) {
			fprintf(stderr, "nostall get: %s: cannot name the copy inside %s\n", path, host);
			return NULL;
		}
	}
	if (!dest)
		cli_oom(a);
	return dest;
}

/* Open the parent of dest as g->top_fd, where hard links are resolved from
 * (left AT_FDCWD when dest has no slash); *leaf: what to create in it.
 * Returns 0, or 1 (reported). */
static int get_open_top(struct get_ctx *g, const char *dest, const char **leaf)
{
	char *parent = strdup(dest);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	*leaf = dest;
	if (slash) {
		while (slash > parent && slash[-1] == '/')
			slash--;
		if (slash == parent)
			parent[1] = '\0';
		else
			*slash = '\0';
		*leaf = dest + (strrchr(dest, '/') - dest) + 1;
		g->top_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (g->top_fd < 0) {
			fprintf(stderr, "nostall get: %s: %s\n", parent, strerror(errno));
			free(parent);
			return 1;
		}
	}
	free(parent);
	if (!**leaf) {
		/* "HOSTPATH/": copy into it (must be a directory) */
		*leaf = ".";
	}
	return 0;
}

static void get_report(const struct get_ctx *g)
{
	if (g->skipped_dev > 1)
		fprintf(stderr, "nostall get: %" PRIu64 " device nodes not created (needs root)\n", g->skipped_dev);
	if (g->xattr_fail)
		fprintf(stderr, "nostall get: %" PRIu64 " extended attributes could not be set on the host\n",
			g->xattr_fail);
	if (g->a->flag['v'] || (g->tty && g->a->flag['r']))
		fprintf(stderr,
			"nostall get: %" PRIu64 " files (%" PRIu64 " bytes), %" PRIu64 " hard links, %" PRIu64
			" directories, %" PRIu64 " symlinks, %" PRIu64 " special files\n",
			g->files, g->bytes, g->hardlinks, g->dirs, g->links, g->specials);
}

static int get_run(struct cli_args *a, struct nostall_fs *fs)
{
	const char *path = a->pos[0], *host = a->pos[1];
	bool r = a->flag['r'];
	struct nostall_stat st;
	/* -r copies a final symlink as a symlink; a single-file copy follows it */
	int rc = nostall_stat(fs, path, r ? NOSTALL_NOFOLLOW : 0, &st);
	if (rc)
		return cli_path_error(a, path, rc);
	if (!r && !S_ISREG(st.mode)) {
		fprintf(stderr, "nostall get: %s: %s (use -r to copy %s)\n", path,
			S_ISDIR(st.mode) ? "is a directory" : "not a regular file",
			S_ISDIR(st.mode) ? "a tree" : "special files");
		return 1;
	}
	struct nostall_info in;
	rc = nostall_info(fs, &in);
	if (rc)
		return cli_path_error(a, path, rc);
	struct get_ctx g = {
		.a = a,
		.fs = fs,
		.root = geteuid() == 0,
		.tty = a->progress || isatty(STDERR_FILENO) == 1,
		.bsize = in.block_size,
		.buf = malloc(CLI_IO_CHUNK),
		.top_fd = AT_FDCWD,
	};
	if (!g.buf)
		return cli_oom(a);
	char *dest = get_dest(a, path, host, &st);
	const char *leaf;
	if (!dest || get_open_top(&g, dest, &leaf)) {
		free(dest);
		free(g.buf);
		return 1;
	}
	get_tree(&g, g.top_fd, leaf, &st, path, leaf, 0);
	if (g.top_fd != AT_FDCWD)
		close(g.top_fd);
	get_report(&g);
	for (size_t k = 0; k < g.nhl; k++)
		free(g.hl[k].relpath);
	free(g.hl);
	free(dest);
	free(g.buf);
	return g.ret;
}

static int get_check(struct cli_args *a)
{
	if (!*a->pos[1])
		return cli_usage_error(a, "empty HOSTPATH");
	return -1;
}

const struct cli_cmd cmd_get = {
	.name = "get", .usage = "get [-r] [-v] [--progress] [--device SPEC] [-o OPTS] IMAGE PATH HOSTPATH",
	.flags = "rv", .min_pos = 2, .max_pos = 2, .long_flags = CLI_LONG_PROGRESS,
	.mount_flags = NOSTALL_MOUNT_RDONLY, .check = get_check, .run = get_run,
};
