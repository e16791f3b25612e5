/* The command fronts' option parser (nostall bench blk|jbd|fs|repro,
 * crashtest, load): each command declares its options once, in a table,
 * and both the parsing and its --help come from that table.
 *
 * Parsing is getopt_long's (options and operands in any order, --name=V or
 * --name V, -kV or -k V, unambiguous abbreviations of long names). -h and
 * --help are every command's: the help goes to stdout, status 0. A failure
 * prints ONE line naming what is wrong ("nostall bench fs: unknown option
 * '--frob'", "...: option '--seconds' needs an argument", a callback's own
 * line), then the help on stderr, and gives status 2 (a callback may give
 * another status). libc only: tools/common is public-only
 * (docs/architecture.md). */
#ifndef NOSTALL_TOOLS_CLIOPT_H
#define NOSTALL_TOOLS_CLIOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cliopt_kind {
	CLIOPT_FLAG, /* no argument: the bool at ctx+off becomes true */
	CLIOPT_STR,  /* the argument, as given, into the const char * at ctx+off */
	CLIOPT_FN,   /* the argument (NULL when arg is NULL) to fn */
};

struct cliopt {
	const char *name;    /* long name without "--", or NULL */
	int key;             /* short letter, or 0 */
	const char *arg;     /* the argument's name in the help ("SPEC"); NULL: takes none */
	const char *help;    /* the help text; '\n' starts an aligned continuation line;
			      * NULL: accepted but not listed */
	enum cliopt_kind kind;
	size_t off;          /* CLIOPT_FLAG, CLIOPT_STR: where in ctx */
	/* CLIOPT_FN: check and store arg; 0, or an exit status after printing
	 * one line that names the option and the bad value (cliopt_say). */
	int (*fn)(void *ctx, const struct cliopt *o, const char *arg);
};

/* Table entries: where a value goes, checked against the field's type. */
#define CLIOPT_FLAG_AT(type, field) \
	.kind = CLIOPT_FLAG, .off = offsetof(type, field) + 0 * _Generic(((type *)0)->field, bool: 0)
#define CLIOPT_STR_AT(type, field) \
	.kind = CLIOPT_STR, .off = offsetof(type, field) + 0 * _Generic(((type *)0)->field, const char *: 0)
#define CLIOPT_CALL(f) .kind = CLIOPT_FN, .fn = (f)

/* A list printed under the options (scenarios, workloads): n entries of
 * an array of structs with `const char *name, *help` members. */
struct cliopt_list {
	const char *title;    /* "scenarios:" */
	const void *base;
	size_t n, stride, name_off, help_off;
	int width;            /* of the name column */
};
#define CLIOPT_LIST(t, arr, w)                                                                            \
	{ .title = (t), .base = (arr), .n = sizeof(arr) / sizeof((arr)[0]), .stride = sizeof((arr)[0]),    \
	  .name_off = offsetof(__typeof__((arr)[0]), name), .help_off = offsetof(__typeof__((arr)[0]), help), \
	  .width = (w) }

struct cliopt_cmd {
	const char *prog;     /* "nostall bench fs": the messages' prefix */
	const char *usage;    /* the synopsis ("usage: ...\n"), printed before the options */
	const struct cliopt *opts; /* ends with an entry without name and key */
	struct cliopt_list list; /* printed after the options (title NULL: none) */
	/* printed last, or NULL */
	void (*more)(FILE *out);
	int min_pos, max_pos; /* operands (non-options) allowed */
};

/* Parse argv[1..argc) into ctx. Returns -1 when parsed, with the operands
 * (in order) at argv[*first_pos..argc); else the exit status to return (0
 * after --help). */
int cliopt_parse(const struct cliopt_cmd *c, int argc, char **argv, void *ctx, int *first_pos);
/* The synopsis, one line per listed option, c->list, then c->more. */
void cliopt_help(const struct cliopt_cmd *c, FILE *out);
/* "PROG: MESSAGE" on stderr, for callbacks; returns 2. */
int cliopt_say(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The option as the user would write it: "--seconds", or "-o" without a
 * long name (for messages). */
const char *cliopt_spelling(const struct cliopt *o, char *buf, size_t n);

#endif
