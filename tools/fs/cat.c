/* nostall cat [--device SPEC] [-o OPTS] IMAGE PATH...: the contents of each
 * file on standard output, in CLI_IO_CHUNK reads handed to write(2) without
 * a copy of our own (docs/cli.md). */
#include "../common/cmds.h"
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The sink of one read: the pieces go to standard output as they are
 * (nostall_pread_sink lends the readahead's buffers on a sequential read,
 * so a large file is not copied into our buffer first). */
struct cat_out {
	int err; /* the write's negative errno, told apart from the read's */
};

static int cat_sink(void *arg, const struct iovec *iov, int iovcnt)
{
	struct cat_out *o = arg;
	o->err = cli_writev_all(STDOUT_FILENO, iov, iovcnt);
	return o->err;
}

/* Copy one open file to standard output. Returns 0, 1 (read failed, go on
 * with the next file) or -1 (write failed: stop; a closed pipe is not
 * reported, like cat). */
static int cat_file(const struct cli_args *a, struct nostall_file *f, const char *path, char *buf)
{
	struct cat_out o = { 0 };
	for (uint64_t off = 0;;) {
		ssize_t n = nostall_pread_sink(f, buf, CLI_IO_CHUNK, off, cat_sink, &o);
		if (o.err) {
			if (o.err != -EPIPE)
				fprintf(stderr, "nostall cat: write error: %s\n", strerror(-o.err));
			return -1;
		}
		if (n < 0)
			return cli_path_error(a, path, (int)n);
		if (n == 0)
			return 0;
		off += (uint64_t)n;
	}
}

static int cat_run(struct cli_args *a, struct nostall_fs *fs)
{
	char *buf = malloc(CLI_IO_CHUNK);
	if (!buf)
		return cli_oom(a);
	int ret = 0;
	for (int k = 0; k < a->npos; k++) {
		const char *path = a->pos[k];
		struct nostall_file *f = NULL;
		int rc = nostall_open(fs, path, NOSTALL_O_RDONLY, &f);
		if (rc) {
			ret |= cli_path_error(a, path, rc);
			continue;
		}
		rc = cat_file(a, f, path, buf);
		nostall_close(f);
		if (rc < 0) {
			ret = 1;
			break;
		}
		ret |= rc;
	}
	free(buf);
	return ret;
}

const struct cli_cmd cmd_cat = {
	.name = "cat", .usage = "cat [--device SPEC] [-o OPTS] IMAGE PATH...",
	.min_pos = 1, .max_pos = -1, .mount_flags = NOSTALL_MOUNT_RDONLY,
	.run = cat_run,
};
