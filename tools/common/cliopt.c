/* The command fronts' table-driven option parser (cliopt.h). */
#include "cliopt.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CLIOPT_MAX 48
#define HELP_KEY 'h'
/* getopt_long's value for long-only option i: above every short letter */
#define LONG_KEY(i) (256 + (int)(i))

int cliopt_say(const char *prog, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 2;
}

const char *cliopt_spelling(const struct cliopt *o, char *buf, size_t n)
{
	if (o->name)
		snprintf(buf, n, "--%s", o->name);
	else
		snprintf(buf, n, "-%c", o->key);
	return buf;
}

/* The left column of an option's help line: "-o, --options OPTS". */
static void help_left(const struct cliopt *o, char *buf, size_t n)
{
	int w = 0;
	if (o->key && o->name)
		w = snprintf(buf, n, "-%c, --%s", o->key, o->name);
	else
		w = o->name ? snprintf(buf, n, "--%s", o->name) : snprintf(buf, n, "-%c", o->key);
	if (o->arg && w >= 0 && (size_t)w < n)
		snprintf(buf + w, n - (size_t)w, " %s", o->arg);
}

void cliopt_help(const struct cliopt_cmd *c, FILE *out)
{
	enum { COL = 16 };
	fputs(c->usage, out);
	for (const struct cliopt *o = c->opts; o->name || o->key; o++) {
		if (!o->help)
			continue;
		char left[64];
		help_left(o, left, sizeof left);
		/* a left column wider than COL puts the text on the next line */
		bool wide = strlen(left) > COL;
		fprintf(out, "  %-*s%s", COL, left, wide ? "\n" : " ");
		for (const char *t = o->help; *t;) {
			size_t len = strcspn(t, "\n");
			if (t != o->help || wide)
				fprintf(out, "%*s", COL + 3, "");
			fprintf(out, "%.*s\n", (int)len, t);
			t += len + (t[len] == '\n');
		}
	}
	const struct cliopt_list *l = &c->list;
	if (l->title)
		fprintf(out, "%s\n", l->title);
	for (size_t i = 0; l->title && i < l->n; i++) {
		const char *e = (const char *)l->base + i * l->stride, *name, *help;
		memcpy(&name, e + l->name_off, sizeof name);
		memcpy(&help, e + l->help_off, sizeof help);
		fprintf(out, "  %-*s %s\n", l->width, name, help);
	}
	if (c->more)
		c->more(out);
}

/* The one-line failure, then the help on stderr: status 2. */
static int usage_fail(const struct cliopt_cmd *c, const char *fmt, const char *what)
{
	fprintf(stderr, "%s: ", c->prog);
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	cliopt_help(c, stderr);
	return 2;
}

/* getopt's '?' (opterr is 0): which option was wrong, and how. optopt is
 * 0 for an unknown or ambiguous long option, else the option's value: a
 * short letter that is unknown or lacks its argument, or a long option
 * that lacks its argument or was given one it does not take. */
static int getopt_fail(const struct cliopt_cmd *c, char **argv, const char *shorts)
{
	const char *given = argv[optind - 1];
	char buf[80];
	if (!optopt)
		return usage_fail(c, "unknown option '%s'", given);
	if (!strncmp(given, "--", 2)) {
		snprintf(buf, sizeof buf, "%.*s", (int)strcspn(given, "="), given);
		return usage_fail(c, strchr(given, '=') ? "option '%s' takes no argument" : "option '%s' needs an argument",
				  buf);
	}
	const char *p = optopt < 256 ? strchr(shorts, optopt) : NULL;
	snprintf(buf, sizeof buf, "-%c", optopt);
	return usage_fail(c, p && p[1] == ':' ? "option '%s' needs an argument" : "unknown option '%s'", buf);
}

int cliopt_parse(const struct cliopt_cmd *c, int argc, char **argv, void *ctx, int *first_pos)
{
	struct option lo[CLIOPT_MAX + 2];
	char shorts[2 * CLIOPT_MAX + 4] = "h";
	size_t nlo = 0, ns = 1;
	const struct cliopt *byval[CLIOPT_MAX + 256 + 1] = { 0 };
	size_t n = 0;
	for (const struct cliopt *o = c->opts; o->name || o->key; o++, n++) {
		if (n == CLIOPT_MAX)
			return cliopt_say(c->prog, "too many options in its table");
		int val = o->key ? o->key : LONG_KEY(n);
		byval[val] = o;
		if (o->name)
			lo[nlo++] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, val };
		if (o->key) {
			shorts[ns++] = (char)o->key;
			if (o->arg)
				shorts[ns++] = ':';
		}
	}
	lo[nlo++] = (struct option){ "help", no_argument, NULL, HELP_KEY };
	lo[nlo] = (struct option){ NULL, 0, NULL, 0 };
	shorts[ns] = 0;

	optind = 0; /* a full reset (glibc): a process may parse more than once */
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (ch == HELP_KEY) {
			cliopt_help(c, stdout);
			return 0;
		}
		const struct cliopt *o = ch > 0 && ch < (int)(sizeof byval / sizeof byval[0]) ? byval[ch] : NULL;
		if (!o)
			return getopt_fail(c, argv, shorts);
		int rc = 0;
		switch (o->kind) {
		case CLIOPT_FLAG: *(bool *)(void *)((char *)ctx + o->off) = true; break;
		case CLIOPT_STR: *(const char **)(void *)((char *)ctx + o->off) = optarg; break;
		case CLIOPT_FN: rc = o->fn(ctx, o, o->arg ? optarg : NULL); break;
		}
		if (rc) {
			if (rc == 2)
				cliopt_help(c, stderr);
			return rc;
		}
	}
	int npos = argc - optind;
	if (npos > c->max_pos)
		return usage_fail(c, "unexpected argument '%s'", argv[optind + c->max_pos]);
	if (npos < c->min_pos)
		return usage_fail(c, "%s", "missing arguments");
	*first_pos = optind;
	return -1;
}
