/* nostall bench jbd: placeholder until the journal lands. */
#include "cmds.h"

#include <stdio.h>

int bench_jbd(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "nostall bench jbd: not implemented yet\n");
	return 1;
}
