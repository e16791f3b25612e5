/* nostall put [-r] [-o OPTS] IMAGE HOSTPATH PATH: copy a host file, or with
 * -r any tree, into the image (docs/cli.md). The reverse of `get`:
 * regular files with their holes (SEEK_DATA / SEEK_HOLE: only data ranges
 * are written, the size is set at the end), directories (merged into when
 * they exist), symbolic links, fifos, sockets and device nodes, hard links
 * within the copy, then owner (as root), mode, extended attributes (POSIX
 * ACLs converted to ext3's on-disk form) and atime/mtime. A failing entry is reported and skipped; the status is then
 * 1. */
#include "../common/cmds.h"
#include "../common/tutil.h"
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

struct put_hl { /* hard links: host inode -> image path of its first copy */
	dev_t dev;
	ino_t ino;
	char *path;
};

struct put_ctx {
	const struct cli_args *a;
	struct nostall_fs *fs;
	bool root;
	char *buf;       /* CLI_IO_CHUNK bytes */
	struct put_hl *hl;
	size_t nhl, caphl;
	bool warned_system;
	int ret;
	/* Progress on stderr (a terminal, or --progress), once the copy has
	 * run a second: entries and MiB so far, twice a second. */
	bool tty, shown, midline;
	uint64_t entries, bytes, t0_ns, last_ns;
};

static void put_progress(struct put_ctx *g, bool end)
{
	if (!g->tty)
		return;
	uint64_t now = tool_now_ns();
	if (!end && (now - g->t0_ns < 1000 * TOOL_NS_PER_MS || now - g->last_ns < 500 * TOOL_NS_PER_MS))
		return;
	if (end && !g->shown)
		return;
	g->last_ns = now;
	g->shown = g->midline = true;
	double s = (double)(now - g->t0_ns) / 1e9;
	fprintf(stderr, "\rnostall put: %" PRIu64 " entries, %" PRIu64 " MiB, %.0f MiB/s ", g->entries,
		g->bytes >> 20, s > 0 ? (double)g->bytes / 1048576.0 / s : 0.0);
	if (end) {
		fputc('\n', stderr);
		g->midline = false;
	}
}

/* An error message starts on a line of its own. */
static void progress_break(struct put_ctx *g)
{
	if (g->midline)
		fputc('\n', stderr);
	g->midline = false;
}

static void progress_break(struct put_ctx *g);

static int put_fs_error(struct put_ctx *g, const char *path, int rc)
{
	progress_break(g);
	g->ret = cli_fs_error(g->a, path, rc);
	return rc;
}

static int put_host_error(struct put_ctx *g, const char *host, const char *what, int rc)
{
	progress_break(g);
	cli_error(g->a->cmd, host, what, rc, false);
	g->ret = CLI_EXIT_FAIL;
	return rc;
}

/* ---- regular files ---- */

/* Copy [off, end) of host fd into f. */
static int copy_range(struct put_ctx *g, int fd, struct nostall_file *f, uint64_t off, uint64_t end,
		      const char *host, const char *path)
{
	while (off < end) {
		size_t want = end - off < CLI_IO_CHUNK ? (size_t)(end - off) : CLI_IO_CHUNK;
		ssize_t n = pread(fd, g->buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return put_host_error(g, host, "read", -errno);
		if (n == 0)
			break; /* the host file shrank: its size is set below anyway */
		for (ssize_t done = 0; done < n;) {
			ssize_t w = nostall_pwrite(f, g->buf + done, (size_t)(n - done), off + (uint64_t)done);
			if (w <= 0)
				return put_fs_error(g, path, w < 0 ? (int)w : -EIO);
			done += w;
		}
		off += (uint64_t)n;
		g->bytes += (uint64_t)n;
		put_progress(g, false);
	}
	return 0;
}

/* The data ranges of fd (SEEK_DATA / SEEK_HOLE; the whole file where the
 * host cannot tell), then the size. */
static int copy_data(struct put_ctx *g, int fd, struct nostall_file *f, uint64_t size,
		     const char *host, const char *path)
{
	uint64_t off = 0;
	int rc = 0;
	while (!rc && off < size) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			break; /* only a hole from here */
		if (d < 0) { /* no SEEK_DATA: copy everything */
			rc = copy_range(g, fd, f, off, size, host, path);
			break;
		}
		off_t h = lseek(fd, d, SEEK_HOLE);
		uint64_t end = h < 0 || (uint64_t)h > size ? size : (uint64_t)h;
		rc = copy_range(g, fd, f, (uint64_t)d, end, host, path);
		off = end;
	}
	if (!rc && (rc = nostall_ftruncate(f, size)))
		put_fs_error(g, path, rc);
	return rc;
}

static int put_regular(struct put_ctx *g, const char *host, const char *path, const struct stat *hs)
{
	int fd = open(host, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return put_host_error(g, host, "open", -errno);
	struct nostall_file *f = NULL;
	int rc = nostall_create(g->fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_TRUNC,
				0600, &f);
	if (rc) {
		close(fd);
		return put_fs_error(g, path, rc);
	}
	rc = copy_data(g, fd, f, (uint64_t)hs->st_size, host, path);
	int frc = nostall_flush(f);
	nostall_close(f);
	close(fd);
	if (!rc && frc)
		rc = put_fs_error(g, path, frc);
	return rc;
}

/* ---- attributes ---- */

static void put_xattrs(struct put_ctx *g, const char *host, const char *path)
{
	ssize_t n = llistxattr(host, NULL, 0);
	if (n <= 0) {
		if (n < 0 && errno != ENOTSUP)
			put_host_error(g, host, "listxattr", -errno);
		return;
	}
	char *list = malloc((size_t)n);
	if (!list || (n = llistxattr(host, list, (size_t)n)) < 0) {
		put_host_error(g, host, "listxattr", list ? -errno : -ENOMEM);
		free(list);
		return;
	}
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1) {
		const char *name = list + i;
		bool acl = !strcmp(name, "system.posix_acl_access") ||
			   !strcmp(name, "system.posix_acl_default");
		if (!acl && !strncmp(name, "system.", 7)) { /* NFSv4 ACLs and the like: not ext3's */
			if (!g->warned_system) {
				progress_break(g);
				fprintf(stderr, "nostall put: %s: %s not copied (ext3 has no such attribute)\n",
					host, name);
			}
			g->warned_system = true;
			continue;
		}
		ssize_t len = lgetxattr(host, name, g->buf, CLI_IO_CHUNK);
		if (len < 0) {
			put_host_error(g, host, name, -errno);
			continue;
		}
		/* POSIX ACLs: the host's VFS form is the library's too (it
		 * stores ext3's own and keeps the mode in step). */
		int rc = nostall_setxattr(g->fs, path, NOSTALL_NOFOLLOW, name, g->buf, (size_t)len, 0);
		if (rc)
			put_fs_error(g, path, rc);
	}
	free(list);
}

/* Owner (as root; before the mode, because a chown clears set-id bits),
 * mode (not of symlinks), xattrs, then times. */
static void put_attrs(struct put_ctx *g, const char *host, const char *path, const struct stat *hs)
{
	int rc = 0;
	if (g->root && (rc = nostall_chown(g->fs, path, NOSTALL_NOFOLLOW, hs->st_uid, hs->st_gid)))
		put_fs_error(g, path, rc);
	if (!S_ISLNK(hs->st_mode) && (rc = nostall_chmod(g->fs, path, 0, hs->st_mode & 07777)))
		put_fs_error(g, path, rc);
	put_xattrs(g, host, path);
	struct nostall_timespec ts[2] = {
		{ hs->st_atim.tv_sec, (uint32_t)hs->st_atim.tv_nsec },
		{ hs->st_mtim.tv_sec, (uint32_t)hs->st_mtim.tv_nsec },
	};
	if ((rc = nostall_utimens(g->fs, path, NOSTALL_NOFOLLOW, ts)))
		put_fs_error(g, path, rc);
}

/* ---- the walk ---- */

static int put_entry(struct put_ctx *g, const char *host, const char *path, const struct stat *hs);

static int put_dir(struct put_ctx *g, const char *host, const char *path, const struct stat *hs)
{
	struct nostall_stat st;
	int rc = nostall_mkdir(g->fs, path, 0700);
	if (rc == -EEXIST && !nostall_stat(g->fs, path, 0, &st) && S_ISDIR(st.mode))
		rc = 0; /* merged into */
	if (rc)
		return put_fs_error(g, path, rc);
	DIR *d = opendir(host);
	if (!d)
		return put_host_error(g, host, "opendir", -errno);
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *h = cli_join(host, de->d_name), *p = cli_join(path, de->d_name);
		struct stat cs;
		if (!h || !p)
			g->ret = cli_oom(g->a);
		else if (lstat(h, &cs) < 0)
			put_host_error(g, h, "stat", -errno);
		else
			put_entry(g, h, p, &cs);
		free(h);
		free(p);
	}
	if (errno)
		put_host_error(g, host, "readdir", -errno);
	closedir(d);
	return 0;
}

static int put_symlink(struct put_ctx *g, const char *host, const char *path, const struct stat *hs)
{
	char target[NOSTALL_PATH_MAX];
	ssize_t n = readlink(host, target, sizeof target - 1);
	if (n < 0)
		return put_host_error(g, host, "readlink", -errno);
	target[n] = '\0';
	int rc = nostall_symlink(g->fs, target, path);
	return rc ? put_fs_error(g, path, rc) : 0;
}

/* A second name of a host inode already copied: a hard link to the copy. */
static bool put_hardlink(struct put_ctx *g, const char *path, const struct stat *hs)
{
	for (size_t k = 0; k < g->nhl; k++)
		if (g->hl[k].dev == hs->st_dev && g->hl[k].ino == hs->st_ino) {
			int rc = nostall_link(g->fs, g->hl[k].path, path);
			if (rc)
				put_fs_error(g, path, rc);
			return true;
		}
	return false;
}

static void hl_add(struct put_ctx *g, const char *path, const struct stat *hs)
{
	char *p = strdup(path);
	if (!p || cli_array_grow(&g->hl, &g->caphl, g->nhl, sizeof *g->hl, 32)) {
		free(p);
		return; /* later names are then separate copies */
	}
	g->hl[g->nhl++] = (struct put_hl){ hs->st_dev, hs->st_ino, p };
}

/* Whatever is at path goes unless it is a directory (merged into). */
static void clear_target(struct put_ctx *g, const char *path)
{
	struct nostall_stat st;
	if (!nostall_stat(g->fs, path, NOSTALL_NOFOLLOW, &st) && !S_ISDIR(st.mode))
		nostall_unlink(g->fs, path);
}

static int put_entry(struct put_ctx *g, const char *host, const char *path, const struct stat *hs)
{
	int rc;
	if (!S_ISDIR(hs->st_mode))
		clear_target(g, path);
	if (!S_ISDIR(hs->st_mode) && hs->st_nlink > 1 && put_hardlink(g, path, hs))
		return 0;
	switch (hs->st_mode & S_IFMT) {
	case S_IFREG: rc = put_regular(g, host, path, hs); break;
	case S_IFDIR: rc = put_dir(g, host, path, hs); break;
	case S_IFLNK: rc = put_symlink(g, host, path, hs); break;
	default:
		rc = nostall_mknod(g->fs, path, hs->st_mode, hs->st_rdev);
		if (rc)
			put_fs_error(g, path, rc);
		break;
	}
	if (rc)
		return rc;
	if (!S_ISDIR(hs->st_mode) && hs->st_nlink > 1)
		hl_add(g, path, hs);
	put_attrs(g, host, path, hs);
	g->entries++;
	put_progress(g, false);
	return 0;
}

static int put_run(struct cli_args *a, struct nostall_fs *fs)
{
	const char *host = a->pos[0];
	struct put_ctx g = { .a = a, .fs = fs, .root = geteuid() == 0,
			     .tty = a->progress || isatty(STDERR_FILENO) == 1, .t0_ns = tool_now_ns() };
	struct stat hs;
	if ((a->flag['r'] ? lstat(host, &hs) : stat(host, &hs)) < 0) {
		put_host_error(&g, host, NULL, -errno);
		return g.ret;
	}
	if (!a->flag['r'] && !S_ISREG(hs.st_mode)) {
		put_host_error(&g, host, "not a regular file (use -r)",
			       S_ISDIR(hs.st_mode) ? -EISDIR : -EINVAL);
		return g.ret;
	}
	char *path = NULL;
	struct nostall_stat st;
	if (!a->flag['r'] && !nostall_stat(fs, a->pos[1], 0, &st) && S_ISDIR(st.mode)) {
		const char *base = strrchr(host, '/');
		path = cli_join(a->pos[1], base ? base + 1 : host);
	} else {
		path = strdup(a->pos[1]);
	}
	if (!path || !(g.buf = malloc(CLI_IO_CHUNK))) {
		free(path);
		return cli_oom(a);
	}
	if (!a->flag['r']) { /* the file itself, through a symlink if HOSTPATH is one */
		clear_target(&g, path);
		if (!put_regular(&g, host, path, &hs)) {
			put_attrs(&g, host, path, &hs);
			g.entries++;
		}
	} else {
		put_entry(&g, host, path, &hs);
	}
	put_progress(&g, true);
	for (size_t k = 0; k < g.nhl; k++)
		free(g.hl[k].path);
	free(g.hl);
	free(g.buf);
	free(path);
	return g.ret;
}

const struct cli_cmd cmd_put = {
	.name = "put", .usage = "put [-r] [--progress] [-o OPTS] IMAGE HOSTPATH PATH",
	.flags = "r", .min_pos = 2, .max_pos = 2, .long_flags = CLI_LONG_PROGRESS, .run = put_run,
};
