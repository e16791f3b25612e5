/* Common part of the filesystem commands (nostall info, ls, cat, stat, get,
 * and the ones to come): every such command is described by a struct cli_cmd
 * and run by cli_main(), which
 *
 *   - parses `[flags] [--device SPEC] [-o OPTS] IMAGE ARGS...` (options may
 *     come before or after IMAGE; `--` ends them);
 *   - mounts IMAGE (as file:IMAGE) or the --device spec with -o OPTS and the
 *     command's mount flags;
 *   - calls the command's run function with the mounted filesystem;
 *   - unmounts (an unmount failure is reported; it fails the command only for
 *     a writable mount, where it can mean lost writes);
 *   - maps errors to the exit status: 0 success, 1 runtime failure (message
 *     on stderr), 2 usage error, including what the library rejects as
 *     invalid when mounting (-EINVAL: a bad spec, an unknown -o name).
 *
 * Messages have one form: "nostall CMD: PATH: reason" (cli_path_error(),
 * cli_error()). See docs/cli.md.
 */
#ifndef NOSTALL_TOOLS_FS_COMMON_H
#define NOSTALL_TOOLS_FS_COMMON_H

#include "nostall/nostall.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

/* Long options a command may accept besides --device and --help. */
enum { CLI_LONG_PROGRESS = 1u << 0 };

/* Read/write chunk of the data-copying commands. */
#define CLI_IO_CHUNK (1u << 20)

struct cli_cmd;

/* The parsed command line. */
struct cli_args {
	const struct cli_cmd *c;
	const char *cmd;         /* the command's name, for messages */
	const char *device;      /* --device SPEC or NULL */
	const char *opts;        /* -o OPTS or NULL */
	char *spec;              /* what is mounted (malloc'ed, freed by cli_main) */
	char **pos;              /* positional arguments after IMAGE */
	int npos;
	bool flag[128];          /* flag['l']: -l was given */
	const char *arg[128];    /* arg['s']: the argument of -s (flags declared "s:") */
	bool progress;           /* --progress (CLI_LONG_PROGRESS) */
};

struct cli_cmd {
	const char *name;        /* "ls" */
	const char *usage;       /* "ls [-l] ... IMAGE [PATH...]" */
	const char *flags;       /* one-letter flags, getopt style ("lRai", "s:");
				  * o, h, D and P are taken */
	int min_pos, max_pos;    /* positional arguments after IMAGE (max_pos < 0: no limit) */
	unsigned long_flags;     /* CLI_LONG_* accepted */
	unsigned mount_flags;    /* NOSTALL_MOUNT_* */
	/* Optional check of the arguments before mounting: returns -1 to go on,
	 * else the exit status (cli_usage_error()). */
	int (*check)(struct cli_args *a);
	/* The command, on the mounted filesystem; returns the exit status.
	 * cli_main() unmounts afterwards. */
	int (*run)(struct cli_args *a, struct nostall_fs *fs);
};

/* Parse, mount, run, unmount; returns the process exit status. */
int cli_main(const struct cli_cmd *c, int argc, char **argv);

/* "nostall CMD: MSG" (when msg) and the usage line on stderr; returns 2. */
int cli_usage_error(const struct cli_args *a, const char *msg);

/* The name of what is mounted, for messages: the image path, or the spec. */
const char *cli_what(const struct cli_args *a);

/* "nostall CMD: PATH: WHAT: reason" on stderr (": WHAT" left out when what
 * is NULL). rc is a negative errno: the reason is the library's message for
 * it (fs_side: a failure inside the image) or strerror (a host failure).
 * Returns rc. */
int cli_error(const char *cmd, const char *path, const char *what, int rc, bool fs_side);

/* "nostall CMD: PATH: reason" for a library failure; returns 1. */
int cli_path_error(const struct cli_args *a, const char *path, int rc);

/* "nostall CMD: out of memory"; returns 1. */
int cli_oom(const struct cli_args *a);

/* For the writing commands: "nostall CMD: PATH: strerror" (the errno text
 * always), then " (the library's message)" when that says more than the
 * errno text. Returns 1. */
int cli_fs_error(const struct cli_args *a, const char *path, int rc);

/* A bad argument found before mounting: "nostall CMD: ARG: WHY" (one
 * line, no usage); returns 2. */
int cli_arg_error(const struct cli_args *a, const char *arg, const char *why);

/* Octal permission bits 0..07777 ("644", "0755", "4755"). */
bool cli_parse_mode(const char *s, uint32_t *mode);
/* Unsigned decimal; with suffixes, K/M/G/T (binary) may follow. */
bool cli_parse_u64(const char *s, bool suffixes, uint64_t *out);
/* The process umask (read without changing it for good). */
uint32_t cli_umask(void);

/* ---- formatting */

/* "directory", "regular file", ... (stat(1) names). */
const char *cli_type_name(uint32_t mode);
/* "drwxr-xr-x" (10 characters + NUL), with s/S/t/T for the set-id and sticky bits. */
void cli_mode_string(uint32_t mode, char out[11]);
/* "YYYY-MM-DD HH:MM:SS" in local time (TZ), with nsec ".NNNNNNNNN +ZZZZ";
 * "@SECONDS" when out of range. */
void cli_time_string(const struct nostall_timespec *t, bool nsec, char *out, size_t n);
/* Write bytes as they are when printable ASCII or well-formed, printable
 * UTF-8; anything else (control characters, invalid UTF-8) as \xNN, and
 * a backslash as \\, so the bytes can be recovered exactly. */
void cli_put_escaped(FILE *f, const char *s, size_t len);

/* ---- helpers */

/* The target of symlink ino (size bytes at most NOSTALL_PATH_MAX), malloc'ed
 * and NUL-terminated; NULL with *err set on failure. */
char *cli_read_target(struct nostall_fs *fs, uint64_t ino, uint64_t size, int *err);
/* "a/b" (no double slash after a trailing one), malloc'ed; NULL on ENOMEM. */
char *cli_join(const char *a, const char *b);
/* The directories a recursive walk (ls -R, rm -r) is inside, innermost
 * first, on the walk's stack: a corrupt image's entry naming an ancestor
 * would make the walk endless (exponential with two such names). */
struct cli_dir_up {
	uint64_t ino;
	const struct cli_dir_up *up;
};
static inline bool cli_dir_up_has(const struct cli_dir_up *u, uint64_t ino)
{
	for (; u; u = u->up)
		if (u->ino == ino)
			return true;
	return false;
}
/* write() all of buf (EINTR retried); 0 or a negative errno. */
int cli_write_all(int fd, const void *buf, size_t n);
/* pwrite() all of buf at off (EINTR retried); 0 or a negative errno. */
int cli_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);
/* writev() all of iov[0..iovcnt) in order, resuming after a short write
 * (EINTR retried); 0 or a negative errno. */
struct iovec;
int cli_writev_all(int fd, const struct iovec *iov, int iovcnt);
/* Make room for one more element in a growing array *v of n elements of
 * elem bytes (capacity *cap, doubled from `first`); 0 or -ENOMEM. */
int cli_array_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first);

#endif
