/* Attribute and data commands on a read-write mount (docs/cli.md):
 *   nostall truncate IMAGE PATH SIZE
 *   nostall chmod IMAGE MODE PATH      (octal)
 *   nostall chown IMAGE UID[:GID] PATH (numeric; ":GID" changes the group only)
 *   nostall touch IMAGE PATH           (create if missing, times now)
 *   nostall write IMAGE PATH OFFSET    (standard input at OFFSET; create if
 *                                       missing, never truncate)
 * Arguments are checked before mounting (a bad one: one line, status 2). */
#include "../common/cmds.h"
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int truncate_check(struct cli_args *a)
{
	uint64_t v;
	if (!cli_parse_u64(a->pos[1], true, &v))
		return cli_arg_error(a, a->pos[1], "invalid size (bytes, or with K, M, G, T)");
	return -1;
}

static int truncate_run(struct cli_args *a, struct nostall_fs *fs)
{
	uint64_t size = 0;
	cli_parse_u64(a->pos[1], true, &size);
	int rc = nostall_truncate(fs, a->pos[0], size);
	return rc ? cli_fs_error(a, a->pos[0], rc) : 0;
}

const struct cli_cmd cmd_truncate = {
	.name = "truncate", .usage = "truncate [-o OPTS] IMAGE PATH SIZE",
	.min_pos = 2, .max_pos = 2, .check = truncate_check, .run = truncate_run,
};

static int chmod_check(struct cli_args *a)
{
	uint32_t m;
	if (!cli_parse_mode(a->pos[0], &m))
		return cli_arg_error(a, a->pos[0], "invalid mode (octal, 0 to 7777)");
	return -1;
}

static int chmod_run(struct cli_args *a, struct nostall_fs *fs)
{
	uint32_t mode = 0;
	cli_parse_mode(a->pos[0], &mode);
	int rc = nostall_chmod(fs, a->pos[1], 0, mode);
	return rc ? cli_fs_error(a, a->pos[1], rc) : 0;
}

const struct cli_cmd cmd_chmod = {
	.name = "chmod", .usage = "chmod [-o OPTS] IMAGE MODE PATH",
	.min_pos = 2, .max_pos = 2, .check = chmod_check, .run = chmod_run,
};

/* "UID", "UID:GID", "UID:" or ":GID" (numeric); -1 = unchanged. */
static bool owner_parse(const char *s, uint32_t *uid, uint32_t *gid)
{
	uint64_t v;
	*uid = *gid = (uint32_t)-1;
	const char *colon = strchr(s, ':');
	size_t ulen = colon ? (size_t)(colon - s) : strlen(s);
	if (ulen) {
		char u[24];
		if (ulen >= sizeof u)
			return false;
		memcpy(u, s, ulen);
		u[ulen] = '\0';
		if (!cli_parse_u64(u, false, &v) || v >= UINT32_MAX)
			return false;
		*uid = (uint32_t)v;
	}
	if (colon && colon[1]) {
		if (!cli_parse_u64(colon + 1, false, &v) || v >= UINT32_MAX)
			return false;
		*gid = (uint32_t)v;
	}
	return ulen || (colon && colon[1]);
}

static int chown_check(struct cli_args *a)
{
	uint32_t u, g;
	if (!owner_parse(a->pos[0], &u, &g))
		return cli_arg_error(a, a->pos[0], "invalid owner (UID, UID:GID or :GID, numeric)");
	return -1;
}

static int chown_run(struct cli_args *a, struct nostall_fs *fs)
{
	uint32_t uid, gid;
	owner_parse(a->pos[0], &uid, &gid);
	int rc = nostall_chown(fs, a->pos[1], 0, uid, gid);
	return rc ? cli_fs_error(a, a->pos[1], rc) : 0;
}

const struct cli_cmd cmd_chown = {
	.name = "chown", .usage = "chown [-o OPTS] IMAGE UID[:GID] PATH",
	.min_pos = 2, .max_pos = 2, .check = chown_check, .run = chown_run,
};

/* Open PATH for writing, creating a regular file (0666 less the umask,
 * which the library applies unless the directory has a default ACL) if it
 * is missing; never truncates. */
static int open_create(struct nostall_fs *fs, const char *path, struct nostall_file **f)
{
	return nostall_create(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0666, f);
}

static int touch_run(struct cli_args *a, struct nostall_fs *fs)
{
	const char *path = a->pos[0];
	int rc = nostall_utimens(fs, path, 0, NULL);
	if (rc == -ENOENT) { /* a new file has its times set to now already */
		struct nostall_file *f = NULL;
		rc = open_create(fs, path, &f);
		if (!rc) {
			rc = nostall_flush(f);
			nostall_close(f);
		}
	}
	return rc ? cli_fs_error(a, path, rc) : 0;
}

const struct cli_cmd cmd_touch = {
	.name = "touch", .usage = "touch [-o OPTS] IMAGE PATH",
	.min_pos = 1, .max_pos = 1, .run = touch_run,
};

static int write_check(struct cli_args *a)
{
	uint64_t v;
	if (!cli_parse_u64(a->pos[1], true, &v))
		return cli_arg_error(a, a->pos[1], "invalid offset (bytes, or with K, M, G, T)");
	return -1;
}

/* Standard input into f from off on; 0 or the exit status of a failure. */
static int write_stdin(struct cli_args *a, struct nostall_file *f, const char *path, uint64_t off)
{
	char *buf = malloc(CLI_IO_CHUNK);
	if (!buf)
		return cli_oom(a);
	int ret = 0;
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, CLI_IO_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = cli_error(a->cmd, "standard input", NULL, -errno, false) ? CLI_EXIT_FAIL : 0;
			break;
		}
		if (n == 0)
			break;
		for (ssize_t done = 0; done < n && !ret;) {
			ssize_t w = nostall_pwrite(f, buf + done, (size_t)(n - done), off);
			if (w <= 0) {
				ret = cli_fs_error(a, path, w < 0 ? (int)w : -EIO);
				break;
			}
			done += w;
			off += (uint64_t)w;
		}
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

static int write_run(struct cli_args *a, struct nostall_fs *fs)
{
	const char *path = a->pos[0];
	uint64_t off = 0;
	cli_parse_u64(a->pos[1], true, &off);
	struct nostall_file *f = NULL;
	int rc = open_create(fs, path, &f);
	if (rc)
		return cli_fs_error(a, path, rc);
	int ret = write_stdin(a, f, path, off);
	rc = nostall_flush(f);
	if (rc && !ret)
		ret = cli_fs_error(a, path, rc);
	nostall_close(f);
	return ret;
}

const struct cli_cmd cmd_write = {
	.name = "write", .usage = "write [-o OPTS] IMAGE PATH OFFSET < DATA",
	.min_pos = 2, .max_pos = 2, .check = write_check, .run = write_run,
};
