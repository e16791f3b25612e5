/* nostall: command-line entry point. */
#include "../common/cmds.h"
#include "../fs/common.h"
#include "../fuse/fuse_ioc.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The Makefile passes the package's version (debian/rules: the Debian
 * version); a compile outside it still says something true. */
#ifndef NOSTALL_VERSION
#define NOSTALL_VERSION "unknown"
#endif

/* A command is either a function (fn, usage) or a filesystem command
 * descriptor (fs), which carries its own usage line. */
static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
	const struct cli_cmd *fs;
} commands[] = {
	{ "bench", cmd_bench, "bench blk|jbd|fs|repro [--device SPEC] [-o OPTS] [--json] ... (options: nostall bench KIND --help)", NULL },
	{ "mkfs", cmd_mkfs,
	  "mkfs [-q] [-b 1024|2048|4096] [-I 128|256] [-N inodes] [-J blocks] [-L label] [-U uuid] [-E root_owner=UID:GID] [-T time] IMAGE [SIZE]",
	  NULL },
	{ "info", NULL, NULL, &cmd_info },
	{ "ls", NULL, NULL, &cmd_ls },
	{ "cat", NULL, NULL, &cmd_cat },
	{ "stat", NULL, NULL, &cmd_stat },
	{ "get", NULL, NULL, &cmd_get },
	{ "put", NULL, NULL, &cmd_put },
	{ "write", NULL, NULL, &cmd_write },
	{ "mkdir", NULL, NULL, &cmd_mkdir },
	{ "rm", NULL, NULL, &cmd_rm },
	{ "rmdir", NULL, NULL, &cmd_rmdir },
	{ "mv", NULL, NULL, &cmd_mv },
	{ "ln", NULL, NULL, &cmd_ln },
	{ "mknod", NULL, NULL, &cmd_mknod },
	{ "truncate", NULL, NULL, &cmd_truncate },
	{ "fallocate", NULL, NULL, &cmd_fallocate },
	{ "chmod", NULL, NULL, &cmd_chmod },
	{ "chown", NULL, NULL, &cmd_chown },
	{ "touch", NULL, NULL, &cmd_touch },
	{ "xattr", NULL, NULL, &cmd_xattr },
	{ "lsattr", NULL, NULL, &cmd_lsattr },
	{ "chattr", NULL, NULL, &cmd_chattr },
	{ "recover", cmd_recover, "recover [--device SPEC] [-o OPTS] IMAGE", NULL },
	{ "load", cmd_load, "load DIR WORKLOAD [--jens-n N] [--seconds S] ... (bench repro's workloads on a directory)", NULL },
	{ "mount", cmd_mount, "mount [-f] [-o OPTS] IMAGE|DEVICE-SPEC MOUNTPOINT", NULL },
	{ "umount", cmd_umount, "umount MOUNTPOINT", NULL },
	{ "sync", cmd_sync, "sync MOUNTPOINT", NULL },
	{ "crashtest", cmd_crashtest,
	  "crashtest [--mode M] [--workload W] [--states N] [--seed S] [--block-size B] [--keep DIR] [--json]", NULL },
};
#define NR_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
	fprintf(out, "usage: nostall COMMAND [ARGS] | --help | --version\ncommands:\n");
	for (size_t i = 0; i < NR_COMMANDS; i++)
		fprintf(out, "  nostall %s\n", commands[i].fs ? commands[i].fs->usage : commands[i].usage);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("nostall %s\n", NOSTALL_VERSION);
		return 0;
	}
	/* `nostall info MOUNTPOINT` asks a running FUSE daemon (an image is a
	 * file, a mount point a directory). */
	struct stat st;
	if (argc == 3 && !strcmp(argv[1], "info") && stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode))
		return nfuse_info_mountpoint(argv[2]);
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (commands[i].fs)
			return cli_main(commands[i].fs, argc - 1, argv + 1);
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "nostall: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
