/* Read-only filesystem commands: placeholder until the ext3 read path lands. */
#include "cmds.h"

#include <stdio.h>

static int not_yet(const char *name)
{
	fprintf(stderr, "nostall %s: not implemented yet\n", name);
	return 1;
}

int cmd_info(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_ls(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_cat(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_stat(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_get(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
