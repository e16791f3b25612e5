/* Subcommands of the nostall CLI. Each takes the arguments after its name
 * (argv[0] is the subcommand name) and returns the process exit status:
 * 0 success, 1 failure (message already printed on stderr), 2 usage error. */
#ifndef NOSTALL_TOOLS_CMDS_H
#define NOSTALL_TOOLS_CMDS_H

int cmd_bench(int argc, char **argv);   /* nostall bench blk|jbd ... (cmd_bench.c) */
int bench_jbd(int argc, char **argv);   /* nostall bench jbd ... (bench_jbd.c) */
int bench_fs(int argc, char **argv);    /* nostall bench fs ... (bench_fs.c) */
int bench_repro(int argc, char **argv); /* nostall bench repro ... (repro/repro_main.c) */
int cmd_load(int argc, char **argv);    /* nostall load DIR WORKLOAD ... (repro/repro_loadcmd.c) */
int cmd_mkfs(int argc, char **argv);    /* nostall mkfs ... (cmd_mkfs.c) */
int cmd_recover(int argc, char **argv); /* nostall recover IMAGE (cmd_recover.c) */
/* FUSE (fuse/): nostall mount|umount|sync (docs/fuse.md) */
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_crashtest(int argc, char **argv); /* nostall crashtest ... (crash/main.c) */

/* Commands on a mounted filesystem (fs/NAME.c): descriptors run by
 * cli_main(), which parses the options, mounts, runs and unmounts
 * (fs/common.h). A new one is a descriptor here and a row in nostall.c. */
struct cli_cmd;
extern const struct cli_cmd cmd_info;  /* nostall info IMAGE */
extern const struct cli_cmd cmd_ls;    /* nostall ls IMAGE [PATH...] */
extern const struct cli_cmd cmd_cat;   /* nostall cat IMAGE PATH... */
extern const struct cli_cmd cmd_stat;  /* nostall stat IMAGE PATH... */
extern const struct cli_cmd cmd_get;   /* nostall get IMAGE PATH HOSTPATH */
extern const struct cli_cmd cmd_lsattr; /* nostall lsattr IMAGE PATH... (fs/chattr.c) */
/* writing (read-write mount): put.c, attrs.c, names.c, xattr.c, chattr.c */
extern const struct cli_cmd cmd_put;      /* nostall put IMAGE HOSTPATH PATH */
extern const struct cli_cmd cmd_write;    /* nostall write IMAGE PATH OFFSET */
extern const struct cli_cmd cmd_mkdir;    /* nostall mkdir IMAGE PATH... */
extern const struct cli_cmd cmd_rm;       /* nostall rm IMAGE PATH... */
extern const struct cli_cmd cmd_rmdir;    /* nostall rmdir IMAGE PATH... */
extern const struct cli_cmd cmd_mv;       /* nostall mv IMAGE FROM TO */
extern const struct cli_cmd cmd_ln;       /* nostall ln IMAGE TARGET LINKPATH */
extern const struct cli_cmd cmd_mknod;    /* nostall mknod IMAGE PATH TYPE [MAJOR MINOR] */
extern const struct cli_cmd cmd_truncate; /* nostall truncate IMAGE PATH SIZE */
extern const struct cli_cmd cmd_chmod;    /* nostall chmod IMAGE MODE PATH */
extern const struct cli_cmd cmd_chown;    /* nostall chown IMAGE UID[:GID] PATH */
extern const struct cli_cmd cmd_touch;    /* nostall touch IMAGE PATH */
extern const struct cli_cmd cmd_xattr;    /* nostall xattr IMAGE OP PATH [NAME [VALUE]] */
extern const struct cli_cmd cmd_chattr;   /* nostall chattr IMAGE [+-=]FLAGS PATH... */
extern const struct cli_cmd cmd_fallocate; /* nostall fallocate [-kpz] [-O OFF] -l LEN IMAGE PATH (fs/falloc.c) */

#endif
