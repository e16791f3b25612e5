/* Common part of the filesystem commands: argument parsing, mount/run/
 * unmount, error messages and exit statuses, formatting (common.h). */
#include "common.h"

#include "../common/tutil.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* messages                                                            */

int cli_usage_error(const struct cli_args *a, const char *msg)
{
	if (msg)
		fprintf(stderr, "nostall %s: %s\n", a->cmd, msg);
	fprintf(stderr, "usage: nostall %s\n", a->c->usage);
	return CLI_EXIT_USAGE;
}

const char *cli_what(const struct cli_args *a)
{
	if (a->device)
		return a->device;
	return strncmp(a->spec, "file:", 5) ? a->spec : a->spec + 5;
}

int cli_error(const char *cmd, const char *path, const char *what, int rc, bool fs_side)
{
	fprintf(stderr, "nostall %s: %s: %s%s%s\n", cmd, path, what ? what : "", what ? ": " : "",
		fs_side ? nostall_errmsg(rc) : strerror(-rc));
	return rc;
}

int cli_path_error(const struct cli_args *a, const char *path, int rc)
{
	cli_error(a->cmd, path, NULL, rc, true);
	return CLI_EXIT_FAIL;
}

int cli_oom(const struct cli_args *a)
{
	fprintf(stderr, "nostall %s: out of memory\n", a->cmd);
	return CLI_EXIT_FAIL;
}

int cli_fs_error(const struct cli_args *a, const char *path, int rc)
{
	const char *text = strerror(-rc);
	const char *msg = nostall_errmsg(rc);
	size_t lt = strlen(text), lm = strlen(msg);
	/* "x: file exists" only restates "File exists" */
	bool restates = lm >= lt && !strcasecmp(msg + lm - lt, text);
	if (restates || !*msg)
		fprintf(stderr, "nostall %s: %s: %s\n", a->cmd, path, text);
	else
		fprintf(stderr, "nostall %s: %s: %s (%s)\n", a->cmd, path, text, msg);
	return CLI_EXIT_FAIL;
}

int cli_arg_error(const struct cli_args *a, const char *arg, const char *why)
{
	fprintf(stderr, "nostall %s: %s: %s\n", a->cmd, arg, why);
	return CLI_EXIT_USAGE;
}

bool cli_parse_mode(const char *s, uint32_t *mode)
{
	if (!s || !*s || strspn(s, "01234567") != strlen(s) || strlen(s) > 6)
		return false;
	unsigned long v = strtoul(s, NULL, 8);
	if (v > 07777)
		return false;
	*mode = (uint32_t)v;
	return true;
}

bool cli_parse_u64(const char *s, bool suffixes, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return false;
	unsigned shift = 0;
	if (suffixes && *end) {
		const char *k = strchr("KMGT", toupper((unsigned char)*end));
		if (!k)
			return false;
		shift = 10 * (unsigned)(k - "KMGT" + 1);
		end++;
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

uint32_t cli_umask(void)
{
	mode_t m = umask(022);
	umask(m);
	return (uint32_t)m;
}

/* ------------------------------------------------------------------ */
/* parsing                                                             */

/* Values of the long options. The letters D and P are therefore not free
 * as command flags; an unknown -D is reported as a missing --device
 * argument, as it always was. */
enum { OPT_DEVICE = 'D', OPT_PROGRESS = 'P' };

/* Does flag letter c take an argument in the getopt string? */
static bool takes_arg(const char *optstring, int c)
{
	const char *p = strchr(optstring, c);
	return c != ':' && p && p[1] == ':';
}

/* The getopt failure in argv (opt '?') as a usage error. */
static int parse_error(const struct cli_args *a, char **argv, const char *optstring)
{
	char msg[96];
	if (optopt == OPT_DEVICE)
		snprintf(msg, sizeof msg, "option --device needs an argument");
	else if (optopt && takes_arg(optstring, optopt))
		snprintf(msg, sizeof msg, "option -%c needs an argument", optopt);
	else if (optopt)
		snprintf(msg, sizeof msg, "unknown option '-%c'", optopt);
	else
		snprintf(msg, sizeof msg, "unknown option '%s'", argv[optind - 1]);
	return cli_usage_error(a, msg);
}

/* IMAGE (or --device) and the positional arguments after it. */
static int parse_positional(struct cli_args *a, int rest, char **args)
{
	const struct cli_cmd *c = a->c;
	if (!a->device) {
		if (rest < 1)
			return cli_usage_error(a, "missing IMAGE");
		if (!*args[0])
			return cli_usage_error(a, "empty IMAGE name");
		/* IMAGE is a path, or any device spec (nbd:URI, mem:...): the
		 * library says which (a malformed spec still names its kind). */
		struct nostall_dev_info di;
		nostall_dev_spec_info(args[0], &di);
		if (di.has_kind ? !(a->spec = strdup(args[0])) : asprintf(&a->spec, "file:%s", args[0]) < 0) {
			a->spec = NULL;
			return cli_oom(a);
		}
		args++;
		rest--;
	} else {
		a->spec = strdup(a->device);
		if (!a->spec)
			return cli_oom(a);
	}
	if (rest < c->min_pos || (c->max_pos >= 0 && rest > c->max_pos)) {
		free(a->spec);
		a->spec = NULL;
		return cli_usage_error(a, rest < c->min_pos ? "missing arguments" : "too many arguments");
	}
	a->pos = args;
	a->npos = rest;
	return -1;
}

/* Parse argv into a. Returns -1 when parsed (a->spec allocated), else the
 * exit status to return. */
static int cli_parse(struct cli_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "help", no_argument, NULL, 'h' },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ NULL, 0, NULL, 0 },
	};
	char optstring[64];
	/* no leading '+': options may follow IMAGE */
	snprintf(optstring, sizeof optstring, "o:h%s", a->c->flags ? a->c->flags : "");
	optind = 0; /* full getopt reset (glibc) */
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_DEVICE:
			if (!*optarg)
				return cli_usage_error(a, "--device needs a spec (file:PATH, sim:..., see docs/devices.md)");
			a->device = optarg;
			break;
		case 'o':
			a->opts = optarg;
			break;
		case 'h':
			printf("usage: nostall %s\n", a->c->usage);
			return CLI_EXIT_OK;
		case OPT_PROGRESS:
			if (!(a->c->long_flags & CLI_LONG_PROGRESS))
				return cli_usage_error(a, "unknown option '--progress'");
			a->progress = true;
			break;
		case '?':
			return parse_error(a, argv, optstring);
		default: /* one of the command's flags */
			if (opt > 0 && opt < 128) {
				a->flag[opt] = true;
				a->arg[opt] = optarg;
			}
			break;
		}
	}
	return parse_positional(a, argc - optind, argv + optind);
}

/* ------------------------------------------------------------------ */
/* mount, run, unmount                                                 */

int cli_main(const struct cli_cmd *c, int argc, char **argv)
{
	struct cli_args a = { .c = c, .cmd = c->name };
	int ex = cli_parse(&a, argc, argv);
	if (ex >= 0)
		return ex;
	if (c->check && (ex = c->check(&a)) >= 0) {
		free(a.spec);
		return ex;
	}
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(a.spec, a.opts, c->mount_flags, &fs);
	if (rc) {
		fprintf(stderr, "nostall %s: cannot mount %s: %s\n", a.cmd, cli_what(&a), nostall_errmsg(rc));
		free(a.spec);
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
	}
	nostall_cred_umask(fs, cli_umask()); /* the library applies it: not under a default ACL */
	ex = c->run(&a, fs);
	rc = nostall_umount(fs);
	if (rc) {
		fprintf(stderr, "nostall %s: unmount: %s\n", a.cmd, nostall_errmsg(rc));
		if (!(c->mount_flags & NOSTALL_MOUNT_RDONLY) && ex == CLI_EXIT_OK)
			ex = CLI_EXIT_FAIL;
	}
	free(a.spec);
	return ex;
}

/* ------------------------------------------------------------------ */
/* formatting                                                          */

static char type_char(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFCHR: return 'c';
	case S_IFBLK: return 'b';
	case S_IFIFO: return 'p';
	case S_IFSOCK: return 's';
	case S_IFREG: return '-';
	default: return '?';
	}
}

const char *cli_type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFREG: return "regular file";
	default: return "unknown type";
	}
}

void cli_mode_string(uint32_t mode, char out[11])
{
	out[0] = type_char(mode);
	const char *rwx = "rwxrwxrwx";
	for (int k = 0; k < 9; k++)
		out[1 + k] = (mode & (0400u >> k)) ? rwx[k] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

void cli_time_string(const struct nostall_timespec *t, bool nsec, char *out, size_t n)
{
	time_t s = (time_t)t->sec;
	struct tm tm;
	if (!localtime_r(&s, &tm)) {
		snprintf(out, n, "@%" PRId64, t->sec);
		return;
	}
	size_t k = strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm);
	if (nsec && k < n) {
		char z[8];
		strftime(z, sizeof z, "%z", &tm);
		snprintf(out + k, n - k, ".%09u %s", t->nsec, z);
	}
}

/* The length of a well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF) whose code point is
 * printable (not a C1 control, U+0080..U+009F); 0 otherwise. */
static size_t utf8_printable(const unsigned char *s, size_t len)
{
	size_t n;
	uint32_t cp, min;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, cp = s[0] & 0x1fu, min = 0xa0; /* 0x80..0x9f: C1 controls */
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3, cp = s[0] & 0x0fu, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, cp = s[0] & 0x07u, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void cli_put_escaped(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t k = 0; k < len;) {
		unsigned char c = u[k];
		size_t n;
		if (c == '\\') {
			fputs("\\\\", f);
			k++;
		} else if (c >= 0x20 && c < 0x7f) {
			fputc(c, f);
			k++;
		} else if ((n = utf8_printable(u + k, len - k))) {
			fwrite(u + k, 1, n, f);
			k += n;
		} else {
			fprintf(f, "\\x%02x", c);
			k++;
		}
	}
}

/* ------------------------------------------------------------------ */
/* helpers                                                             */

char *cli_read_target(struct nostall_fs *fs, uint64_t ino, uint64_t size, int *err)
{
	size_t cap = size < NOSTALL_PATH_MAX ? (size_t)size : NOSTALL_PATH_MAX;
	char *buf = malloc(cap + 1);
	if (!buf) {
		*err = -ENOMEM;
		return NULL;
	}
	ssize_t n = nostall_readlink_ino(fs, ino, buf, cap);
	if (n < 0) {
		*err = (int)n;
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*err = 0;
	return buf;
}

char *cli_join(const char *a, const char *b)
{
	size_t la = strlen(a);
	char *s = malloc(la + strlen(b) + 2);
	if (s)
		sprintf(s, "%s%s%s", a, la && a[la - 1] == '/' ? "" : "/", b);
	return s;
}

/* write() (off < 0) or pwrite() at off all of p[0..n), EINTR retried. */
static int write_loop(int fd, const char *p, size_t n, int64_t off)
{
	while (n) {
		ssize_t w = off < 0 ? write(fd, p, n) : pwrite(fd, p, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

int cli_write_all(int fd, const void *buf, size_t n)
{
	return write_loop(fd, buf, n, -1);
}

int cli_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	return write_loop(fd, buf, n, (int64_t)off);
}

int cli_writev_all(int fd, const struct iovec *iov, int iovcnt)
{
	/* A window of the pieces left, the first one cut where a short write
	 * stopped; the caller's array stays as it was. */
	struct iovec win[16];
	int at = 0;
	size_t skip = 0; /* bytes of iov[at] already written */
	while (at < iovcnt) {
		int n = 0;
		for (int k = at; k < iovcnt && n < 16; k++, n++)
			win[n] = iov[k];
		win[0].iov_base = (char *)win[0].iov_base + skip;
		win[0].iov_len -= skip;
		ssize_t w = writev(fd, win, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		size_t left = (size_t)w + skip;
		while (at < iovcnt && left >= iov[at].iov_len) {
			left -= iov[at].iov_len;
			at++;
		}
		skip = left;
	}
	return 0;
}

int cli_array_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
	return tool_array_grow(v, cap, n, elem, first);
}
