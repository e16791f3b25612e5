/* nostall xattr IMAGE get|set|rm|list PATH [NAME [VALUE]] (docs/cli.md):
 *   get NAME        the value's bytes on standard output, as they are
 *   set NAME VALUE  set (create or replace) to VALUE's bytes
 *   rm NAME         remove
 *   list            the names, one a line
 * Symbolic links are followed (like getfattr/setfattr without -h). Like
 * every writing command it mounts read-write (and unmounts cleanly). */
#include "../common/cmds.h"
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum xop { X_GET, X_SET, X_RM, X_LIST, X_BAD };

static enum xop xop_of(const char *s)
{
	static const char *const names[] = { "get", "set", "rm", "list" };
	for (int i = 0; i < X_BAD; i++)
		if (!strcmp(s, names[i]))
			return (enum xop)i;
	return X_BAD;
}

static int xattr_check(struct cli_args *a)
{
	static const int args[] = { [X_GET] = 3, [X_SET] = 4, [X_RM] = 3, [X_LIST] = 2 };
	enum xop op = xop_of(a->pos[0]);
	if (op == X_BAD)
		return cli_arg_error(a, a->pos[0], "unknown operation (get, set, rm or list)");
	if (a->npos != args[op])
		return cli_usage_error(a, a->npos < args[op] ? "missing arguments" : "too many arguments");
	return -1;
}

/* Read a whole value or list (size first, then the bytes; retried if it
 * grew in between). */
static ssize_t xattr_fetch(struct nostall_fs *fs, const char *path, const char *name, char **out)
{
	*out = NULL;
	for (int tries = 0; tries < 4; tries++) {
		ssize_t n = name ? nostall_getxattr(fs, path, 0, name, NULL, 0)
				 : nostall_listxattr(fs, path, 0, NULL, 0);
		if (n < 0)
			return n;
		char *buf = malloc((size_t)n + 1);
		if (!buf)
			return -ENOMEM;
		ssize_t m = name ? nostall_getxattr(fs, path, 0, name, buf, (size_t)n)
				 : nostall_listxattr(fs, path, 0, buf, (size_t)n);
		if (m >= 0) {
			*out = buf;
			return m;
		}
		free(buf);
		if (m != -ERANGE)
			return m;
	}
	return -ERANGE;
}

static int xattr_show(struct cli_args *a, struct nostall_fs *fs, enum xop op, const char *path)
{
	char *buf;
	ssize_t n = xattr_fetch(fs, path, op == X_GET ? a->pos[2] : NULL, &buf);
	if (n < 0)
		return cli_fs_error(a, path, (int)n);
	int rc = 0;
	if (op == X_GET) {
		rc = cli_write_all(STDOUT_FILENO, buf, (size_t)n);
	} else {
		for (ssize_t i = 0; i < n && !rc; i += (ssize_t)strlen(buf + i) + 1) {
			rc = cli_write_all(STDOUT_FILENO, buf + i, strlen(buf + i));
			if (!rc)
				rc = cli_write_all(STDOUT_FILENO, "\n", 1);
		}
	}
	free(buf);
	if (rc && rc != -EPIPE)
		cli_error(a->cmd, "standard output", NULL, rc, false);
	return rc ? CLI_EXIT_FAIL : 0;
}

static int xattr_run(struct cli_args *a, struct nostall_fs *fs)
{
	enum xop op = xop_of(a->pos[0]);
	const char *path = a->pos[1];
	int rc = 0;
	switch (op) {
	case X_GET:
	case X_LIST: return xattr_show(a, fs, op, path);
	case X_SET: rc = nostall_setxattr(fs, path, 0, a->pos[2], a->pos[3], strlen(a->pos[3]), 0); break;
	case X_RM: rc = nostall_removexattr(fs, path, 0, a->pos[2]); break;
	case X_BAD: return CLI_EXIT_USAGE;
	}
	return rc ? cli_fs_error(a, path, rc) : 0;
}

const struct cli_cmd cmd_xattr = {
	.name = "xattr", .usage = "xattr [-o OPTS] IMAGE get|set|rm|list PATH [NAME [VALUE]]",
	.min_pos = 2, .max_pos = 4, .check = xattr_check, .run = xattr_run,
};
