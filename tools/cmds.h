/* Subcommands of the nostall CLI. Each takes the arguments after its name
 * (argv[0] is the subcommand name) and returns the process exit status:
 * 0 success, 1 failure (message already printed on stderr), 2 usage error. */
#ifndef NOSTALL_TOOLS_CMDS_H
#define NOSTALL_TOOLS_CMDS_H

int cmd_bench(int argc, char **argv);   /* nostall bench blk|jbd ... (cmd_bench.c) */
int bench_jbd(int argc, char **argv);   /* nostall bench jbd ... (bench_jbd.c) */
int cmd_mkfs(int argc, char **argv);    /* nostall mkfs ... (cmd_mkfs.c) */
/* Read-only filesystem commands (fs/: info.c, ls.c, cat.c, stat.c, get.c;
 * their common part, argument parsing to unmount, is fs/common.h). */
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_recover(int argc, char **argv); /* nostall recover IMAGE (cmd_recover.c) */

#endif
