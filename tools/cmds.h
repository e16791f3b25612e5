/* Subcommands of the nostall CLI. Each takes the arguments after its name
 * (argv[0] is the subcommand name) and returns the process exit status:
 * 0 success, 1 failure (message already printed on stderr), 2 usage error. */
#ifndef NOSTALL_TOOLS_CMDS_H
#define NOSTALL_TOOLS_CMDS_H

int cmd_bench(int argc, char **argv);  /* nostall bench blk ... */
int cmd_mkfs(int argc, char **argv);   /* nostall mkfs ... */

#endif
