/* Preallocation and holes (docs/cli.md), util-linux fallocate(1)'s modes:
 *   nostall fallocate [-k] [-p] [-z] [-O OFFSET] -l LENGTH IMAGE PATH
 * -k keeps the size (blocks past the end), -p punches a hole (implies -k,
 * as fallocate(1)), -z zeroes the range; none: allocate (unwritten) and
 * grow the size to OFFSET + LENGTH. OFFSET and LENGTH in bytes, or with
 * K, M, G, T (binary). (-o is the mount options, as for every command.)
 * Extent files (ext4) only: an ext2/ext3 file answers "Operation not
 * supported". PATH must exist (fallocate(1) creates it; the image commands
 * create files with put, write or touch). */
#include "../common/cmds.h"
#include "common.h"

#include <errno.h>

static int fallocate_check(struct cli_args *a)
{
	uint64_t v;
	if (a->flag['O'] && !cli_parse_u64(a->arg['O'], true, &v))
		return cli_arg_error(a, a->arg['O'], "invalid offset (bytes, or with K, M, G, T)");
	if (!a->flag['l'])
		return cli_usage_error(a, "a length (-l) is required");
	if (!cli_parse_u64(a->arg['l'], true, &v) || v == 0 || v > INT64_MAX)
		return cli_arg_error(a, a->arg['l'], "invalid length (bytes, or with K, M, G, T; not 0)");
	if (a->flag['p'] && a->flag['z'])
		return cli_usage_error(a, "-p and -z exclude each other");
	return -1;
}

static int fallocate_run(struct cli_args *a, struct nostall_fs *fs)
{
	uint64_t off = 0, len = 0;
	if (a->flag['O'])
		cli_parse_u64(a->arg['O'], true, &off);
	cli_parse_u64(a->arg['l'], true, &len);
	int mode = 0;
	if (a->flag['k'])
		mode |= NOSTALL_FALLOC_KEEP_SIZE;
	if (a->flag['p'])
		mode |= NOSTALL_FALLOC_PUNCH_HOLE | NOSTALL_FALLOC_KEEP_SIZE;
	if (a->flag['z'])
		mode |= NOSTALL_FALLOC_ZERO_RANGE;
	const char *path = a->pos[0];
	struct nostall_file *f = NULL;
	int rc = nostall_open(fs, path, NOSTALL_O_WRONLY, &f);
	if (rc)
		return cli_fs_error(a, path, rc);
	rc = off > INT64_MAX ? -EFBIG : nostall_fallocate(f, mode, (int64_t)off, (int64_t)len);
	int frc = nostall_flush(f);
	nostall_close(f);
	if (!rc)
		rc = frc;
	return rc ? cli_fs_error(a, path, rc) : 0;
}

const struct cli_cmd cmd_fallocate = {
	.name = "fallocate", .usage = "fallocate [-k] [-p] [-z] [-O OFFSET] -l LENGTH [-o OPTS] IMAGE PATH",
	.flags = "kpzO:l:", .min_pos = 1, .max_pos = 1, .check = fallocate_check, .run = fallocate_run,
};
