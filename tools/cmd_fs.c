/* Read-only filesystem commands, built on the public API (nostall/nostall.h):
 *
 *   nostall info [--device SPEC] [-o OPTS] IMAGE
 *   nostall ls   [-l] [-R] [-a] [-i] [--device SPEC] [-o OPTS] IMAGE PATH
 *   nostall cat  [--device SPEC] [-o OPTS] IMAGE PATH...
 *   nostall stat [-L] [--device SPEC] [-o OPTS] IMAGE PATH...
 *   nostall get  [-r] [-v] [--progress] [--device SPEC] [-o OPTS] IMAGE PATH HOSTPATH
 *
 * IMAGE is mounted as file:IMAGE; with --device SPEC the filesystem is mounted
 * on that device spec instead and IMAGE is left out. -o passes mount options
 * and block-layer tunables through to nostall_mount(). Exit status: 0 success,
 * 1 failure (message on stderr), 2 usage error (including a device spec or
 * option the library rejects as invalid). See docs/cli.md.
 */
#include "cmds.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* common: option parsing and mounting                                 */

struct fs_args {
	const char *cmd;      /* "ls", ... */
	const char *usage;
	const char *device;   /* --device SPEC or NULL */
	const char *opts;     /* -o OPTS or NULL */
	char *spec;           /* what is mounted (malloc'ed) */
	char **pos;           /* positional arguments after IMAGE */
	int npos;
	/* command flags */
	bool l, R, a, i, r, L, v, progress;
};

static int fs_usage_error(const struct fs_args *fa, const char *msg)
{
	if (msg)
		fprintf(stderr, "nostall %s: %s\n", fa->cmd, msg);
	fprintf(stderr, "usage: nostall %s\n", fa->usage);
	return 2;
}

/* Parse argv. `flags` lists the command's one-letter flags ("lRai");
 * min_pos/max_pos count the positional arguments after IMAGE (max_pos < 0:
 * no limit). Returns -1 when parsed, else the exit status to return. */
static int fs_parse(struct fs_args *fa, int argc, char **argv, const char *flags, int min_pos,
		    int max_pos)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "progress", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	char optstring[32];
	snprintf(optstring, sizeof optstring, "o:h%s", flags); /* options may follow IMAGE */
	optind = 0; /* full getopt reset (glibc) */
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		switch (opt) {
		case 'D':
			if (!*optarg)
				return fs_usage_error(fa, "--device needs a spec (file:PATH, sim:..., see docs/devices.md)");
			fa->device = optarg;
			break;
		case 'o':
			fa->opts = optarg;
			break;
		case 'h':
			printf("usage: nostall %s\n", fa->usage);
			return 0;
		case 'l': fa->l = true; break;
		case 'R': fa->R = true; break;
		case 'a': fa->a = true; break;
		case 'i': fa->i = true; break;
		case 'r': fa->r = true; break;
		case 'L': fa->L = true; break;
		case 'v': fa->v = true; break;
		case 'P':
			if (!strcmp(fa->cmd, "get")) {
				fa->progress = true;
				break;
			}
			return fs_usage_error(fa, "unknown option '--progress'");
		default: {
			char msg[96];
			if (optopt == 'o' || optopt == 'D')
				snprintf(msg, sizeof msg, "option %s needs an argument",
					 optopt == 'o' ? "-o" : "--device");
			else if (optopt)
				snprintf(msg, sizeof msg, "unknown option '-%c'", optopt);
			else
				snprintf(msg, sizeof msg, "unknown option '%s'", argv[optind - 1]);
			return fs_usage_error(fa, msg);
		}
		}
	}
	int rest = argc - optind;
	char **args = argv + optind;
	if (!fa->device) {
		if (rest < 1)
			return fs_usage_error(fa, "missing IMAGE");
		if (!*args[0])
			return fs_usage_error(fa, "empty IMAGE name");
		if (asprintf(&fa->spec, "file:%s", args[0]) < 0) {
			fprintf(stderr, "nostall %s: out of memory\n", fa->cmd);
			return 1;
		}
		args++;
		rest--;
	} else {
		fa->spec = strdup(fa->device);
		if (!fa->spec) {
			fprintf(stderr, "nostall %s: out of memory\n", fa->cmd);
			return 1;
		}
	}
	if (rest < min_pos || (max_pos >= 0 && rest > max_pos)) {
		free(fa->spec);
		fa->spec = NULL;
		return fs_usage_error(fa, rest < min_pos ? "missing arguments" : "too many arguments");
	}
	fa->pos = args;
	fa->npos = rest;
	return -1;
}

/* The name of what is mounted, for messages: the image path, or the spec. */
static const char *fs_what(const struct fs_args *fa)
{
	return fa->device ? fa->device : fa->spec + 5;
}

static void fs_done(struct fs_args *fa, struct nostall_fs *fs)
{
	if (fs) {
		int rc = nostall_umount(fs);
		if (rc)
			fprintf(stderr, "nostall %s: unmount: %s\n", fa->cmd, nostall_errmsg(rc));
	}
	free(fa->spec);
	fa->spec = NULL;
}

/* Mount read-only; on failure prints the message, releases fa and returns
 * the exit status. */
static int fs_mount(struct fs_args *fa, struct nostall_fs **fs)
{
	int rc = nostall_mount(fa->spec, fa->opts, NOSTALL_MOUNT_RDONLY, fs);
	if (rc == 0)
		return 0;
	fprintf(stderr, "nostall %s: cannot mount %s: %s\n", fa->cmd, fs_what(fa), nostall_errmsg(rc));
	fs_done(fa, NULL);
	return rc == -EINVAL ? 2 : 1;
}

/* Parse the command line, then mount. Returns -1 to go on (*fs mounted),
 * or the exit status. */
static int fs_start(struct fs_args *fa, int argc, char **argv, const char *flags, int min_pos, int max_pos,
		    struct nostall_fs **fs)
{
	*fs = NULL;
	int ex = fs_parse(fa, argc, argv, flags, min_pos, max_pos);
	if (ex >= 0)
		return ex;
	ex = fs_mount(fa, fs);
	return ex ? ex : -1;
}

static int fs_path_error(const struct fs_args *fa, const char *path, int rc)
{
	fprintf(stderr, "nostall %s: %s: %s\n", fa->cmd, path, nostall_errmsg(rc));
	return 1;
}

/* ------------------------------------------------------------------ */
/* formatting helpers                                                  */

static char type_char(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFCHR: return 'c';
	case S_IFBLK: return 'b';
	case S_IFIFO: return 'p';
	case S_IFSOCK: return 's';
	case S_IFREG: return '-';
	default: return '?';
	}
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFREG: return "regular file";
	default: return "unknown type";
	}
}

/* "drwxr-xr-x" (10 characters + NUL). */
static void mode_string(uint32_t mode, char out[11])
{
	out[0] = type_char(mode);
	const char *rwx = "rwxrwxrwx";
	for (int k = 0; k < 9; k++)
		out[1 + k] = (mode & (0400u >> k)) ? rwx[k] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

/* "YYYY-MM-DD HH:MM:SS" in local time (TZ), or the raw number if out of range. */
static void time_string(const struct nostall_timespec *t, bool nsec, char *out, size_t n)
{
	time_t s = (time_t)t->sec;
	struct tm tm;
	if (!localtime_r(&s, &tm)) {
		snprintf(out, n, "@%" PRId64, t->sec);
		return;
	}
	size_t k = strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm);
	if (nsec && k < n) {
		char z[8];
		strftime(z, sizeof z, "%z", &tm);
		snprintf(out + k, n - k, ".%09u %s", t->nsec, z);
	}
}

/* Write bytes with C-style escapes for anything not printable ASCII. */
static void put_escaped(FILE *f, const char *s, size_t len)
{
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)s[k];
		if (c == '\\')
			fputs("\\\\", f);
		else if (c >= 0x20 && c < 0x7f)
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

/* ------------------------------------------------------------------ */
/* info                                                                */

static void print_time_field(const char *label, int64_t t)
{
	if (t == 0) {
		printf("%-26s n/a\n", label);
		return;
	}
	struct nostall_timespec ts = { .sec = t, .nsec = 0 };
	char buf[64];
	time_string(&ts, false, buf, sizeof buf);
	printf("%-26s %s\n", label, buf);
}

int cmd_info(int argc, char **argv)
{
	struct fs_args fa = { .cmd = "info", .usage = "info [--device SPEC] [-o OPTS] IMAGE" };
	struct nostall_fs *fs;
	int ex = fs_start(&fa, argc, argv, "", 0, 0, &fs);
	if (ex >= 0)
		return ex;
	struct nostall_info in;
	struct nostall_statfs sf;
	int rc = nostall_info(fs, &in);
	if (rc == 0)
		rc = nostall_statfs(fs, &sf);
	if (rc) {
		fprintf(stderr, "nostall info: %s: %s\n", fs_what(&fa), nostall_errmsg(rc));
		fs_done(&fa, fs);
		return 1;
	}
	static const char *const hash_names[] = { "legacy", "half_md4", "tea" };
	printf("%-26s %s\n", "Filesystem volume name:", in.volume_name[0] ? in.volume_name : "<none>");
	printf("%-26s %s\n", "Last mounted on:", in.last_mounted[0] ? in.last_mounted : "<not available>");
	printf("%-26s %s\n", "Filesystem UUID:", in.uuid);
	printf("%-26s %u.%u\n", "Filesystem revision #:", in.rev_level, in.minor_rev_level);
	printf("%-26s %s\n", "Filesystem features:", in.features);
	printf("%-26s %s%s%s\n", "Filesystem state:", (in.state & 1) ? "clean" : "not clean",
	       (in.state & 2) ? " with errors" : "", (in.state & 4) ? " (orphans being recovered)" : "");
	printf("%-26s %s\n", "Errors behavior:",
	       in.errors == 1 ? "Continue" : in.errors == 2 ? "Remount read-only" : in.errors == 3 ? "Panic" : "Unknown");
	printf("%-26s %u\n", "Inode count:", in.inodes_count);
	printf("%-26s %" PRIu64 "\n", "Block count:", in.blocks_count);
	printf("%-26s %" PRIu64 "\n", "Reserved block count:", in.r_blocks_count);
	printf("%-26s %" PRIu64 "\n", "Free blocks:", in.free_blocks_count);
	printf("%-26s %u\n", "Free inodes:", in.free_inodes_count);
	printf("%-26s %u\n", "First block:", in.first_data_block);
	printf("%-26s %u\n", "Block size:", in.block_size);
	printf("%-26s %u\n", "Reserved GDT blocks:", in.reserved_gdt_blocks);
	printf("%-26s %u\n", "Blocks per group:", in.blocks_per_group);
	printf("%-26s %u\n", "Inodes per group:", in.inodes_per_group);
	printf("%-26s %u\n", "Group count:", in.groups);
	printf("%-26s %u\n", "GDT blocks:", in.desc_blocks);
	print_time_field("Filesystem created:", in.mkfs_time);
	print_time_field("Last mount time:", in.mtime);
	print_time_field("Last write time:", in.wtime);
	printf("%-26s %u\n", "Mount count:", in.mnt_count);
	printf("%-26s %d\n", "Maximum mount count:", in.max_mnt_count);
	print_time_field("Last checked:", in.lastcheck);
	printf("%-26s %u\n", "Check interval:", in.checkinterval);
	printf("%-26s %u\n", "Reserved blocks uid:", in.def_resuid);
	printf("%-26s %u\n", "Reserved blocks gid:", in.def_resgid);
	printf("%-26s %u\n", "First inode:", in.first_ino);
	printf("%-26s %u\n", "Inode size:", in.inode_size);
	if (in.inode_size > 128) {
		printf("%-26s %u\n", "Required extra isize:", in.min_extra_isize);
		printf("%-26s %u\n", "Desired extra isize:", in.want_extra_isize);
	}
	printf("%-26s %u\n", "Journal inode:", in.journal_inum);
	if (in.journal_dev)
		printf("%-26s 0x%04x\n", "Journal device:", in.journal_dev);
	printf("%-26s %s\n", "Default directory hash:",
	       in.def_hash_version < 3 ? hash_names[in.def_hash_version] : "unknown");
	printf("%-26s %08x-%08x-%08x-%08x\n", "Directory hash seed:", in.hash_seed[0], in.hash_seed[1],
	       in.hash_seed[2], in.hash_seed[3]);
	printf("%-26s %s\n", "Directory hash sign:", in.unsigned_hash ? "unsigned" : "signed");
	printf("%-26s 0x%04x\n", "Default mount options:", in.default_mount_opts);
	if (in.last_orphan)
		printf("%-26s %u\n", "First orphan inode:", in.last_orphan);
	printf("%-26s %s\n", "Needs recovery:", in.needs_recovery ? "yes (journal not replayed: mounted with noload)" : "no");
	if (in.unknown_ro_compat)
		printf("%-26s yes (read-only)\n", "Unknown ro_compat:");
	if (in.superblock_block != (in.block_size == 1024 ? 1u : 0u))
		printf("%-26s %u\n", "Superblock read from:", in.superblock_block);
	printf("%-26s %" PRIu64 " blocks, %" PRIu64 " free, %" PRIu64 " available, %" PRIu64
	       " inodes, %" PRIu64 " free\n",
	       "statfs:", sf.blocks, sf.blocks_free, sf.blocks_avail, sf.files, sf.files_free);

	printf("\n");
	int ret = 0;
	for (uint32_t g = 0; g < in.groups; g++) {
		struct nostall_group_info gi;
		rc = nostall_group_info(fs, g, &gi);
		if (rc) {
			fprintf(stderr, "nostall info: group %u: %s\n", g, nostall_errmsg(rc));
			ret = 1;
			continue;
		}
		printf("Group %u: blocks %" PRIu64 "-%" PRIu64 "%s\n", gi.group, gi.first_block, gi.last_block,
		       gi.has_super ? " [superblock + GDT backup]" : "");
		printf("  block bitmap %u, inode bitmap %u, inode table %u\n", gi.block_bitmap, gi.inode_bitmap,
		       gi.inode_table);
		printf("  %u free blocks, %u free inodes, %u directories%s\n", gi.free_blocks, gi.free_inodes,
		       gi.used_dirs, gi.flags ? "" : "");
	}
	fs_done(&fa, fs);
	return ret;
}

/* ------------------------------------------------------------------ */
/* ls                                                                  */

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
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct ls_entry *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
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
static int ls_print(const struct fs_args *fa, struct nostall_fs *fs, struct ls_list *l,
		    const char *dir_label)
{
	int ret = 0;
	int w_ino = 1, w_nlink = 1, w_uid = 1, w_gid = 1, w_size = 1;
	if (fa->l || fa->i) {
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
		if (fa->i)
			printf("%*" PRIu64 " ", w_ino, s->ino);
		if (fa->l) {
			char ms[11], ts[64], sz[48];
			mode_string(s->mode, ms);
			time_string(&s->mtime, false, ts, sizeof ts);
			if (S_ISCHR(s->mode) || S_ISBLK(s->mode))
				snprintf(sz, sizeof sz, "%u, %u", s->rdev_major, s->rdev_minor);
			else
				snprintf(sz, sizeof sz, "%" PRIu64, s->size);
			printf("%s %*u %*u %*u %*s %s ", ms, w_nlink, s->nlink, w_uid, s->uid, w_gid, s->gid,
			       w_size, sz, ts);
		}
		fwrite(e->name, 1, e->name_len, stdout);
		if (fa->l && S_ISLNK(e->st.mode)) {
			fputs(" -> ", stdout);
			if (e->target)
				fputs(e->target, stdout);
		}
		putchar('\n');
	}
	(void)fs;
	return ret;
}

static char *read_target(struct nostall_fs *fs, uint64_t ino, uint64_t size, int *err)
{
	size_t cap = size < NOSTALL_PATH_MAX ? (size_t)size : NOSTALL_PATH_MAX;
	char *buf = malloc(cap + 1);
	if (!buf) {
		*err = -ENOMEM;
		return NULL;
	}
	ssize_t n = nostall_readlink_ino(fs, ino, buf, cap);
	if (n < 0) {
		*err = (int)n;
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*err = 0;
	return buf;
}

static void ls_stat_all(const struct fs_args *fa, struct nostall_fs *fs, struct ls_list *l)
{
	for (size_t k = 0; k < l->n; k++) {
		struct ls_entry *e = &l->v[k];
		if (!fa->l && !fa->i && !fa->R)
			continue;
		e->st_rc = nostall_stat_ino(fs, e->ino, &e->st);
		if (e->st_rc == 0 && fa->l && S_ISLNK(e->st.mode)) {
			int err;
			e->target = read_target(fs, e->ino, e->st.size, &err);
			if (!e->target)
				e->st_rc = err;
		}
	}
}

/* List directory ino (labelled path); with -R recurse. depth bounds recursion. */
static int ls_dir(const struct fs_args *fa, struct nostall_fs *fs, uint64_t ino, const char *path,
		  bool header, int depth)
{
	struct ls_list l = { .all = fa->a };
	int ret = 0;
	if (header) /* raw bytes, like GNU ls writing to a pipe */
		printf("%s:\n", path);
	int rc = nostall_readdir_ino(fs, ino, ls_collect, &l);
	if (rc < 0) {
		fs_path_error(fa, path, rc);
		ls_free(&l);
		return 1;
	}
	if (l.n) /* qsort(NULL, 0, ...) is undefined */
		qsort(l.v, l.n, sizeof l.v[0], ls_cmp);
	ls_stat_all(fa, fs, &l);
	if (fa->l) {
		uint64_t total = 0;
		for (size_t k = 0; k < l.n; k++)
			if (!l.v[k].st_rc)
				total += l.v[k].st.blocks;
		printf("total %" PRIu64 "\n", total / 2);
	}
	ret |= ls_print(fa, fs, &l, path);
	if (fa->R) {
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
			putchar('\n');
			ret |= ls_dir(fa, fs, e->ino, sub, true, depth + 1);
			free(sub);
		}
	}
	ls_free(&l);
	return ret;
}

int cmd_ls(int argc, char **argv)
{
	struct fs_args fa = { .cmd = "ls", .usage = "ls [-l] [-R] [-a] [-i] [--device SPEC] [-o OPTS] IMAGE [PATH...]" };
	struct nostall_fs *fs;
	int ex = fs_start(&fa, argc, argv, "lRai", 0, -1, &fs);
	if (ex >= 0)
		return ex;
	static char *root_only[] = { "/" };
	char **paths = fa.npos ? fa.pos : root_only;
	int np = fa.npos ? fa.npos : 1;
	int ret = 0;
	for (int k = 0; k < np; k++) {
		const char *path = paths[k];
		struct nostall_stat st;
		/* like ls: a symlink to a directory is listed as the directory
		 * unless -l is given */
		int rc = nostall_stat(fs, path, fa.l ? NOSTALL_NOFOLLOW : 0, &st);
		if (rc) {
			ret |= fs_path_error(&fa, path, rc);
			continue;
		}
		if (S_ISDIR(st.mode)) {
			if (k > 0)
				putchar('\n');
			ret |= ls_dir(&fa, fs, st.ino, path, np > 1 || fa.R, 0);
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
				fprintf(stderr, "nostall ls: out of memory\n");
				ret = 1;
				continue;
			}
			l.v[0].st = st;
			l.v[0].st_rc = 0;
			if (fa.l && S_ISLNK(st.mode)) {
				int err;
				l.v[0].target = read_target(fs, st.ino, st.size, &err);
				l.v[0].st_rc = l.v[0].target ? 0 : err;
			}
			ret |= ls_print(&fa, fs, &l, "");
			ls_free(&l);
		}
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "nostall ls: write error on standard output: %s\n", strerror(errno));
		ret = 1;
	}
	fs_done(&fa, fs);
	return ret;
}

/* ------------------------------------------------------------------ */
/* cat                                                                 */

#define IO_CHUNK (1u << 20)

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int cmd_cat(int argc, char **argv)
{
	struct fs_args fa = { .cmd = "cat", .usage = "cat [--device SPEC] [-o OPTS] IMAGE PATH..." };
	struct nostall_fs *fs;
	int ex = fs_start(&fa, argc, argv, "", 1, -1, &fs);
	if (ex >= 0)
		return ex;
	char *buf = malloc(IO_CHUNK);
	int ret = 0;
	if (!buf) {
		fprintf(stderr, "nostall cat: out of memory\n");
		fs_done(&fa, fs);
		return 1;
	}
	for (int k = 0; k < fa.npos; k++) {
		const char *path = fa.pos[k];
		struct nostall_file *f = NULL;
		int rc = nostall_open(fs, path, NOSTALL_O_RDONLY, &f);
		if (rc) {
			ret |= fs_path_error(&fa, path, rc);
			continue;
		}
		for (;;) {
			ssize_t n = nostall_read(f, buf, IO_CHUNK);
			if (n < 0) {
				ret |= fs_path_error(&fa, path, (int)n);
				break;
			}
			if (n == 0)
				break;
			rc = write_all(STDOUT_FILENO, buf, (size_t)n);
			if (rc) {
				if (rc != -EPIPE)
					fprintf(stderr, "nostall cat: write error: %s\n", strerror(-rc));
				ret = 1;
				nostall_close(f);
				goto out;
			}
		}
		nostall_close(f);
	}
out:
	free(buf);
	fs_done(&fa, fs);
	return ret;
}

/* ------------------------------------------------------------------ */
/* stat                                                                */

static bool printable(const unsigned char *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (v[k] < 0x20 || v[k] >= 0x7f)
			return (k == n - 1 && v[k] == 0); /* allow one trailing NUL */
	return true;
}

static int print_xattrs(const struct fs_args *fa, struct nostall_fs *fs, uint64_t ino, const char *path)
{
	ssize_t len = nostall_listxattr_ino(fs, ino, NULL, 0);
	if (len < 0)
		return fs_path_error(fa, path, (int)len);
	if (len == 0) {
		printf("Xattrs: none\n");
		return 0;
	}
	char *list = malloc((size_t)len);
	if (!list)
		return 1;
	len = nostall_listxattr_ino(fs, ino, list, (size_t)len);
	if (len < 0) {
		free(list);
		return fs_path_error(fa, path, (int)len);
	}
	int ret = 0;
	printf("Xattrs:\n");
	for (char *name = list; name < list + len; name += strlen(name) + 1) {
		ssize_t vlen = nostall_getxattr_ino(fs, ino, name, NULL, 0);
		unsigned char *v = vlen > 0 ? malloc((size_t)vlen) : NULL;
		if (vlen > 0 && v)
			vlen = nostall_getxattr_ino(fs, ino, name, v, (size_t)vlen);
		printf("  %s", name);
		if (vlen < 0) {
			printf(" (error: %s)\n", nostall_errmsg((int)vlen));
			ret = 1;
		} else if (vlen > 0 && !v) {
			printf(" (out of memory)\n");
			ret = 1;
		} else if (printable(v, (size_t)vlen)) {
			size_t n = (size_t)vlen;
			if (n && v[n - 1] == 0)
				n--;
			printf(" (%zd) = \"%.*s\"\n", vlen, (int)n, v ? (const char *)v : "");
		} else {
			printf(" (%zd) = 0x", vlen);
			size_t show = (size_t)vlen > 64 ? 64 : (size_t)vlen;
			for (size_t k = 0; k < show; k++)
				printf("%02x", v[k]);
			printf("%s\n", (size_t)vlen > show ? "..." : "");
		}
		free(v);
	}
	free(list);
	return ret;
}

int cmd_stat(int argc, char **argv)
{
	struct fs_args fa = { .cmd = "stat", .usage = "stat [-L] [--device SPEC] [-o OPTS] IMAGE PATH..." };
	struct nostall_fs *fs;
	int ex = fs_start(&fa, argc, argv, "L", 1, -1, &fs);
	if (ex >= 0)
		return ex;
	int ret = 0;
	for (int k = 0; k < fa.npos; k++) {
		const char *path = fa.pos[k];
		struct nostall_stat st;
		int rc = nostall_stat(fs, path, fa.L ? 0 : NOSTALL_NOFOLLOW, &st);
		if (rc) {
			ret |= fs_path_error(&fa, path, rc);
			continue;
		}
		char ms[11], ts[96];
		mode_string(st.mode, ms);
		printf("  File: ");
		put_escaped(stdout, path, strlen(path));
		if (S_ISLNK(st.mode)) {
			int err;
			char *t = read_target(fs, st.ino, st.size, &err);
			if (t) {
				printf(" -> ");
				put_escaped(stdout, t, strlen(t));
				free(t);
			} else {
				printf(" -> (error: %s)", nostall_errmsg(err));
				ret = 1;
			}
		}
		printf("\n");
		printf("  Size: %-15" PRIu64 " Blocks: %-10" PRIu64 " IO Block: %-6u %s\n", st.size, st.blocks,
		       st.blksize, type_name(st.mode));
		printf("Inode: %-15" PRIu64 " Links: %u", st.ino, st.nlink);
		if (S_ISCHR(st.mode) || S_ISBLK(st.mode))
			printf("  Device type: %u,%u", st.rdev_major, st.rdev_minor);
		printf("\n");
		printf("Access: (%04o/%s)  Uid: %u  Gid: %u\n", st.mode & 07777, ms, st.uid, st.gid);
		time_string(&st.atime, true, ts, sizeof ts);
		printf("Access: %s\n", ts);
		time_string(&st.mtime, true, ts, sizeof ts);
		printf("Modify: %s\n", ts);
		time_string(&st.ctime, true, ts, sizeof ts);
		printf("Change: %s\n", ts);
		if (st.crtime.sec || st.crtime.nsec) {
			time_string(&st.crtime, true, ts, sizeof ts);
			printf(" Birth: %s\n", ts);
		} else {
			printf(" Birth: -\n");
		}
		printf("Flags: 0x%x  Generation: %u  File ACL: %" PRIu64 "\n", st.flags, st.generation,
		       st.xattr_block);
		ret |= print_xattrs(&fa, fs, st.ino, path);
		if (k + 1 < fa.npos)
			printf("\n");
	}
	fs_done(&fa, fs);
	return ret;
}

/* ------------------------------------------------------------------ */
/* get                                                                 */

struct hl_entry { /* hard-link map: fs inode -> path of its first copy */
	uint64_t ino;
	char *relpath; /* relative to the top of the copy (top_fd) */
};

struct get_ctx {
	const struct fs_args *fa;
	struct nostall_fs *fs;
	bool root;          /* euid 0: owners and device nodes */
	bool tty;           /* progress on stderr */
	int top_fd;         /* parent directory of the copy's top */
	char *buf;
	uint32_t bsize;
	struct hl_entry *hl;
	size_t nhl, caphl;
	/* counters */
	uint64_t files, dirs, links, specials, bytes, hardlinks;
	uint64_t skipped_dev, xattr_fail, owner_fail;
	int ret;
	bool warned_xattr_ns[4];
};

static int get_error(struct get_ctx *g, const char *path, const char *what, int rc, bool fs_side)
{
	fprintf(stderr, "nostall get: %s: %s%s%s\n", path, what ? what : "", what ? ": " : "",
		fs_side ? nostall_errmsg(rc) : strerror(-rc));
	g->ret = 1;
	return rc;
}

static bool all_zero(const char *p, size_t n)
{
	static const char zero[4096];
	while (n >= sizeof zero) {
		if (memcmp(p, zero, sizeof zero))
			return false;
		p += sizeof zero;
		n -= sizeof zero;
	}
	return n == 0 || !memcmp(p, zero, n);
}

static void progress(struct get_ctx *g, const char *path, uint64_t done, uint64_t total, bool end)
{
	if (!g->tty || total < (64u << 20))
		return;
	fprintf(stderr, "\r%s: %" PRIu64 "/%" PRIu64 " MiB (%u%%)", path, done >> 20, total >> 20,
		(unsigned)(total ? done * 100 / total : 100));
	if (end)
		fputc('\n', stderr);
}

/* Are the `n` blocks from lblk all holes? (bmap errors count as "not sure") */
static bool blocks_are_holes(struct nostall_file *f, uint64_t lblk, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		uint64_t phys = 1;
		if (nostall_bmap(f, lblk + k, &phys) || phys)
			return false;
	}
	return true;
}

/* Copy the contents of an open fs file to host fd, holes preserved. */
static int copy_data(struct get_ctx *g, struct nostall_file *f, const struct nostall_stat *st, int fd,
		     const char *path)
{
	uint64_t size = st->size, off = 0;
	uint32_t bs = g->bsize;
	bool sparse = st->blocks * 512 < size + bs; /* allocated less than the size: holes likely */
	while (off < size) {
		size_t want = size - off < IO_CHUNK ? (size_t)(size - off) : IO_CHUNK;
		if (sparse && off % bs == 0 && bs && blocks_are_holes(f, off / bs, (want + bs - 1) / bs)) {
			off += want;
			continue;
		}
		ssize_t n = nostall_pread(f, g->buf, want, off);
		if (n < 0)
			return get_error(g, path, "read", (int)n, true);
		if (n == 0)
			return get_error(g, path, "read", -EIO, false), -EIO; /* short file */
		/* write the non-zero runs of block-sized pieces */
		size_t pos = 0;
		while (pos < (size_t)n) {
			size_t piece = bs - (size_t)((off + pos) % bs);
			if (piece > (size_t)n - pos)
				piece = (size_t)n - pos;
			if (all_zero(g->buf + pos, piece)) {
				pos += piece;
				continue;
			}
			size_t start = pos;
			pos += piece;
			while (pos < (size_t)n) {
				size_t p2 = bs < (size_t)n - pos ? bs : (size_t)n - pos;
				if (all_zero(g->buf + pos, p2))
					break;
				pos += p2;
			}
			const char *p = g->buf + start;
			size_t left = pos - start;
			uint64_t woff = off + start;
			while (left) {
				ssize_t w = pwrite(fd, p, left, (off_t)woff);
				if (w < 0) {
					if (errno == EINTR)
						continue;
					return get_error(g, path, "write", -errno, false);
				}
				p += w;
				left -= (size_t)w;
				woff += (uint64_t)w;
			}
		}
		off += (uint64_t)n;
		g->bytes += (uint64_t)n;
		progress(g, path, off, size, false);
	}
	if (ftruncate(fd, (off_t)size) < 0)
		return get_error(g, path, "truncate", -errno, false);
	progress(g, path, size, size, true);
	return 0;
}

/* Convert an ext3 on-disk ACL (version 1, short entries for *_OBJ/MASK/OTHER)
 * to the POSIX ACL xattr format (version 2, 8-byte entries). Returns the new
 * length or -EINVAL. out must hold 4 + 8 * entries bytes (n*2 is enough). */
static ssize_t ext3_acl_to_xattr(const unsigned char *in, size_t n, unsigned char *out)
{
	if (n < 4 || in[0] != 1 || in[1] || in[2] || in[3])
		return -EINVAL;
	size_t o = 0;
	out[o++] = 2; out[o++] = 0; out[o++] = 0; out[o++] = 0;
	size_t p = 4;
	while (p < n) {
		if (n - p < 4)
			return -EINVAL;
		uint16_t tag = (uint16_t)(in[p] | in[p + 1] << 8);
		uint32_t id = 0xffffffffu;
		size_t esz = 4;
		if (tag == 0x02 || tag == 0x08) { /* ACL_USER, ACL_GROUP: long entry */
			if (n - p < 8)
				return -EINVAL;
			id = (uint32_t)in[p + 4] | (uint32_t)in[p + 5] << 8 | (uint32_t)in[p + 6] << 16 |
			     (uint32_t)in[p + 7] << 24;
			esz = 8;
		}
		memcpy(out + o, in + p, 4); /* tag, perm (little-endian in both) */
		out[o + 4] = (unsigned char)id;
		out[o + 5] = (unsigned char)(id >> 8);
		out[o + 6] = (unsigned char)(id >> 16);
		out[o + 7] = (unsigned char)(id >> 24);
		o += 8;
		p += esz;
	}
	return (ssize_t)o;
}

static int ns_index(const char *name)
{
	if (!strncmp(name, "user.", 5)) return 0;
	if (!strncmp(name, "trusted.", 8)) return 1;
	if (!strncmp(name, "security.", 9)) return 2;
	return 3;
}

/* Copy xattrs of inode ino onto host entry `hpath` (an lsetxattr path). */
static void copy_xattrs(struct get_ctx *g, uint64_t ino, const char *hpath, const char *path)
{
	ssize_t len = nostall_listxattr_ino(g->fs, ino, NULL, 0);
	if (len <= 0) {
		if (len < 0)
			get_error(g, path, "listxattr", (int)len, true);
		return;
	}
	char *list = malloc((size_t)len);
	if (!list)
		return;
	len = nostall_listxattr_ino(g->fs, ino, list, (size_t)len);
	if (len < 0) {
		get_error(g, path, "listxattr", (int)len, true);
		free(list);
		return;
	}
	for (char *name = list; name < list + len; name += strlen(name) + 1) {
		ssize_t vlen = nostall_getxattr_ino(g->fs, ino, name, NULL, 0);
		if (vlen < 0) {
			get_error(g, path, name, (int)vlen, true);
			continue;
		}
		unsigned char *v = malloc((size_t)vlen * 2 + 8);
		if (!v)
			continue;
		if (vlen > 0)
			vlen = nostall_getxattr_ino(g->fs, ino, name, v, (size_t)vlen);
		if (vlen < 0) {
			get_error(g, path, name, (int)vlen, true);
			free(v);
			continue;
		}
		const unsigned char *val = v;
		unsigned char *conv = NULL;
		if (!strcmp(name, "system.posix_acl_access") || !strcmp(name, "system.posix_acl_default")) {
			conv = v + vlen;
			ssize_t c = ext3_acl_to_xattr(v, (size_t)vlen, conv);
			if (c < 0) {
				fprintf(stderr, "nostall get: %s: %s: malformed ext3 ACL, not copied\n", path, name);
				g->ret = 1;
				free(v);
				continue;
			}
			/* the converted form can be longer than the input buffer's
			 * second half only for absurd inputs: 8 per 4 bytes */
			val = conv;
			vlen = c;
		}
		if (lsetxattr(hpath, name, val, (size_t)vlen, 0) < 0) {
			int e = errno;
			int ns = ns_index(name);
			g->xattr_fail++;
			if (!g->warned_xattr_ns[ns]) {
				g->warned_xattr_ns[ns] = true;
				fprintf(stderr, "nostall get: %s: cannot set %s on the host: %s%s\n", path, name,
					strerror(e), " (further failures in this namespace not shown)");
			}
		}
		free(v);
	}
	free(list);
}

static void set_times(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		      const char *path)
{
	struct timespec ts[2] = {
		{ .tv_sec = (time_t)st->atime.sec, .tv_nsec = st->atime.nsec },
		{ .tv_sec = (time_t)st->mtime.sec, .tv_nsec = st->mtime.nsec },
	};
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		get_error(g, path, "set times", -errno, false);
}

/* Owner, mode (not for symlinks), xattrs and times, in that order (chown
 * clears set-id bits; times last). */
static void set_attrs(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		      const char *path)
{
	if (g->root && fchownat(dirfd, name, st->uid, st->gid, AT_SYMLINK_NOFOLLOW) < 0) {
		g->owner_fail++;
		get_error(g, path, "chown", -errno, false);
	}
	if (!S_ISLNK(st->mode) && fchmodat(dirfd, name, st->mode & 07777, 0) < 0)
		get_error(g, path, "chmod", -errno, false);
	char hpath[64 + NOSTALL_NAME_MAX];
	if (dirfd == AT_FDCWD)
		copy_xattrs(g, st->ino, name, path);
	else {
		snprintf(hpath, sizeof hpath, "/proc/self/fd/%d/%s", dirfd, name);
		copy_xattrs(g, st->ino, hpath, path);
	}
	set_times(g, dirfd, name, st, path);
}

static int hl_find(struct get_ctx *g, uint64_t ino)
{
	for (size_t k = 0; k < g->nhl; k++)
		if (g->hl[k].ino == ino)
			return (int)k;
	return -1;
}

static void hl_add(struct get_ctx *g, uint64_t ino, const char *relpath)
{
	if (g->nhl == g->caphl) {
		size_t cap = g->caphl ? g->caphl * 2 : 32;
		struct hl_entry *v = realloc(g->hl, cap * sizeof *v);
		if (!v)
			return;
		g->hl = v;
		g->caphl = cap;
	}
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
	rc = copy_data(g, f, st, fd, path);
	nostall_close(f);
	if (close(fd) < 0 && !rc)
		rc = get_error(g, path, "close", -errno, false);
	if (rc)
		return rc;
	set_attrs(g, dirfd, name, st, path);
	g->files++;
	if (st->nlink > 1 && relpath)
		hl_add(g, st->ino, relpath);
	return 0;
}

static int get_symlink(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		       const char *path)
{
	int err;
	char *t = read_target(g->fs, st->ino, st->size, &err);
	if (!t)
		return get_error(g, path, "readlink", err, true);
	clear_target(dirfd, name);
	if (symlinkat(t, dirfd, name) < 0) {
		err = -errno;
		free(t);
		return get_error(g, path, "symlink", err, false);
	}
	free(t);
	set_attrs(g, dirfd, name, st, path);
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
	set_attrs(g, dirfd, name, st, path);
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
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct nostall_dirent *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *de;
	return 0;
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a);
	char *s = malloc(la + strlen(b) + 2);
	if (s)
		sprintf(s, "%s%s%s", a, la && a[la - 1] == '/' ? "" : "/", b);
	return s;
}

static int get_dir(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		   const char *path, const char *relpath, int depth)
{
	if (depth > 2048)
		return get_error(g, path, NULL, -ELOOP, false);
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
		char *sub = join(path, de->name);
		char *subrel = relpath ? (relpath[0] ? join(relpath, de->name) : strdup(de->name)) : NULL;
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
	set_attrs(g, dirfd, name, st, path);
	g->dirs++;
	return 0;
}

static int get_tree(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		    const char *path, const char *relpath, int depth)
{
	if (g->fa->v)
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

int cmd_get(int argc, char **argv)
{
	struct fs_args fa = { .cmd = "get",
			      .usage = "get [-r] [-v] [--progress] [--device SPEC] [-o OPTS] IMAGE PATH HOSTPATH" };
	int ex = fs_parse(&fa, argc, argv, "rv", 2, 2);
	if (ex >= 0)
		return ex;
	const char *path = fa.pos[0], *host = fa.pos[1];
	if (!*host) {
		free(fa.spec);
		return fs_usage_error(&fa, "empty HOSTPATH");
	}
	struct nostall_fs *fs = NULL;
	if ((ex = fs_mount(&fa, &fs)) != 0)
		return ex;
	struct nostall_stat st;
	/* -r copies a final symlink as a symlink; a single-file copy follows it */
	int rc = nostall_stat(fs, path, fa.r ? NOSTALL_NOFOLLOW : 0, &st);
	if (rc) {
		fs_path_error(&fa, path, rc);
		fs_done(&fa, fs);
		return 1;
	}
	if (!fa.r && !S_ISREG(st.mode)) {
		fprintf(stderr, "nostall get: %s: %s (use -r to copy %s)\n", path,
			S_ISDIR(st.mode) ? "is a directory" : "not a regular file",
			S_ISDIR(st.mode) ? "a tree" : "special files");
		fs_done(&fa, fs);
		return 1;
	}
	struct nostall_info in;
	rc = nostall_info(fs, &in);
	if (rc) {
		fs_path_error(&fa, path, rc);
		fs_done(&fa, fs);
		return 1;
	}
	struct get_ctx g = {
		.fa = &fa,
		.fs = fs,
		.root = geteuid() == 0,
		.tty = fa.progress || isatty(STDERR_FILENO) == 1,
		.bsize = in.block_size,
		.buf = malloc(IO_CHUNK),
		.top_fd = AT_FDCWD,
	};
	if (!g.buf) {
		fprintf(stderr, "nostall get: out of memory\n");
		fs_done(&fa, fs);
		return 1;
	}
	/* Destination: HOSTPATH itself, or HOSTPATH/basename(PATH) when HOSTPATH
	 * is an existing directory and PATH is not (cp semantics for files;
	 * a directory is copied AS HOSTPATH, merging into an existing one). */
	char *dest = strdup(host);
	struct stat hs;
	if (dest && !S_ISDIR(st.mode) && stat(host, &hs) == 0 && S_ISDIR(hs.st_mode)) {
		const char *b = base_name(path);
		free(dest);
		dest = (*b && strcmp(b, "/")) ? join(host, b) : NULL;
		if (!dest) {
			fprintf(stderr, "nostall get: %s: cannot name the copy inside %s\n", path, host);
			free(g.buf);
			fs_done(&fa, fs);
			return 1;
		}
	}
	if (!dest) {
		fprintf(stderr, "nostall get: out of memory\n");
		free(g.buf);
		fs_done(&fa, fs);
		return 1;
	}
	/* the parent of dest is where hard links are resolved from */
	char *parent = strdup(dest);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	const char *leaf = dest;
	if (slash) {
		while (slash > parent && slash[-1] == '/')
			slash--;
		if (slash == parent)
			parent[1] = '\0';
		else
			*slash = '\0';
		leaf = dest + (strrchr(dest, '/') - dest) + 1;
		g.top_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (g.top_fd < 0) {
			fprintf(stderr, "nostall get: %s: %s\n", parent, strerror(errno));
			free(parent);
			free(dest);
			free(g.buf);
			fs_done(&fa, fs);
			return 1;
		}
	}
	if (!*leaf) {
		/* "HOSTPATH/": copy into it (must be a directory) */
		leaf = ".";
	}
	get_tree(&g, g.top_fd, leaf, &st, path, leaf, 0);
	if (g.top_fd != AT_FDCWD)
		close(g.top_fd);
	if (g.skipped_dev > 1)
		fprintf(stderr, "nostall get: %" PRIu64 " device nodes not created (needs root)\n", g.skipped_dev);
	if (g.xattr_fail)
		fprintf(stderr, "nostall get: %" PRIu64 " extended attributes could not be set on the host\n",
			g.xattr_fail);
	if (fa.v || (g.tty && fa.r))
		fprintf(stderr,
			"nostall get: %" PRIu64 " files (%" PRIu64 " bytes), %" PRIu64 " hard links, %" PRIu64
			" directories, %" PRIu64 " symlinks, %" PRIu64 " special files\n",
			g.files, g.bytes, g.hardlinks, g.dirs, g.links, g.specials);
	for (size_t k = 0; k < g.nhl; k++)
		free(g.hl[k].relpath);
	free(g.hl);
	free(parent);
	free(dest);
	free(g.buf);
	fs_done(&fa, fs);
	return g.ret;
}
