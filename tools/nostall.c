/* nostall: command-line entry point. */
#include "cmds.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
} commands[] = {
	{ "bench", cmd_bench, "bench blk|jbd [--device SPEC] [--scenario NAME] [--seconds S] [--json] [-o OPTS]" },
	{ "mkfs", cmd_mkfs,
	  "mkfs [-q] [-b 1024|2048|4096] [-I 128|256] [-N inodes] [-J blocks] [-L label] [-U uuid] [-E root_owner=UID:GID] [-T time] IMAGE [SIZE]" },
	{ "info", cmd_info, "info [--device SPEC] [-o OPTS] IMAGE" },
	{ "ls", cmd_ls, "ls [-l] [-R] [-a] [-i] [--device SPEC] [-o OPTS] IMAGE [PATH...]" },
	{ "cat", cmd_cat, "cat [--device SPEC] [-o OPTS] IMAGE PATH..." },
	{ "stat", cmd_stat, "stat [-L] [--device SPEC] [-o OPTS] IMAGE PATH..." },
	{ "get", cmd_get, "get [-r] [-v] [--progress] [--device SPEC] [-o OPTS] IMAGE PATH HOSTPATH" },
	{ "recover", cmd_recover, "recover [--device SPEC] [-o OPTS] IMAGE" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: nostall COMMAND [ARGS]\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(out, "  nostall %s\n", commands[i].usage);
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
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "nostall: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
