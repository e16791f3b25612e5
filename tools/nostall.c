/* nostall: command-line entry point. */
#include "cmds.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
} commands[] = {
	{ "bench", cmd_bench, "bench blk [--device SPEC] [--scenario NAME] [--json] [-o OPTS]" },
	{ "mkfs", cmd_mkfs, "mkfs [-b 1024|2048|4096] [-I 128|256] [-N inodes] [-J blocks] [-L label] [-U uuid] [-T time] IMAGE SIZE" },
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
