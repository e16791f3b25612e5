/* nostall stat [-L] [--device SPEC] [-o OPTS] IMAGE PATH...: every attribute
 * of an inode and its extended attributes, stat(1)-like (docs/cli.md). */
#include "../common/cmds.h"
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool printable(const unsigned char *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (v[k] < 0x20 || v[k] >= 0x7f)
			return (k == n - 1 && v[k] == 0); /* allow one trailing NUL */
	return true;
}

static int print_xattrs(const struct cli_args *a, struct nostall_fs *fs, uint64_t ino, const char *path)
{
	ssize_t len = nostall_listxattr_ino(fs, ino, NULL, 0);
	if (len < 0)
		return cli_path_error(a, path, (int)len);
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
		return cli_path_error(a, path, (int)len);
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

static int stat_run(struct cli_args *a, struct nostall_fs *fs)
{
	int ret = 0;
	for (int k = 0; k < a->npos; k++) {
		const char *path = a->pos[k];
		struct nostall_stat st;
		int rc = nostall_stat(fs, path, a->flag['L'] ? 0 : NOSTALL_NOFOLLOW, &st);
		if (rc) {
			ret |= cli_path_error(a, path, rc);
			continue;
		}
		char ms[11], ts[96];
		cli_mode_string(st.mode, ms);
		printf("  File: ");
		cli_put_escaped(stdout, path, strlen(path));
		if (S_ISLNK(st.mode)) {
			int err;
			char *t = cli_read_target(fs, st.ino, st.size, &err);
			if (t) {
				printf(" -> ");
				cli_put_escaped(stdout, t, strlen(t));
				free(t);
			} else {
				printf(" -> (error: %s)", nostall_errmsg(err));
				ret = 1;
			}
		}
		printf("\n");
		printf("  Size: %-15" PRIu64 " Blocks: %-10" PRIu64 " IO Block: %-6u %s\n", st.size, st.blocks,
		       st.blksize, cli_type_name(st.mode));
		printf("Inode: %-15" PRIu64 " Links: %u", st.ino, st.nlink);
		if (S_ISCHR(st.mode) || S_ISBLK(st.mode))
			printf("  Device type: %u,%u", st.rdev_major, st.rdev_minor);
		printf("\n");
		printf("Access: (%04o/%s)  Uid: %u  Gid: %u\n", st.mode & 07777, ms, st.uid, st.gid);
		cli_time_string(&st.atime, true, ts, sizeof ts);
		printf("Access: %s\n", ts);
		cli_time_string(&st.mtime, true, ts, sizeof ts);
		printf("Modify: %s\n", ts);
		cli_time_string(&st.ctime, true, ts, sizeof ts);
		printf("Change: %s\n", ts);
		if (st.crtime.sec || st.crtime.nsec) {
			cli_time_string(&st.crtime, true, ts, sizeof ts);
			printf(" Birth: %s\n", ts);
		} else {
			printf(" Birth: -\n");
		}
		printf("Flags: 0x%x  Generation: %u  File ACL: %" PRIu64 "\n", st.flags, st.generation,
		       st.xattr_block);
		ret |= print_xattrs(a, fs, st.ino, path);
		if (k + 1 < a->npos)
			printf("\n");
	}
	return ret;
}

const struct cli_cmd cmd_stat = {
	.name = "stat", .usage = "stat [-L] [--device SPEC] [-o OPTS] IMAGE PATH...",
	.flags = "L", .min_pos = 1, .max_pos = -1, .mount_flags = NOSTALL_MOUNT_RDONLY,
	.run = stat_run,
};
