/* nostall recover: placeholder until the journal lands. */
#include "cmds.h"

#include <stdio.h>

int cmd_recover(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "nostall %s: not implemented yet\n", argv[0]);
	return 1;
}
