/* Inode flags, as e2fsprogs' lsattr and chattr show and set them
 * (docs/cli.md):
 *   nostall lsattr IMAGE PATH...          "FLAGS PATH" per path (read-only mount)
 *   nostall chattr IMAGE [+-=]FLAGS PATH... (read-write mount)
 * Letters: s u S D i a d A c j I t T (e2fsprogs' order and meaning; I, the
 * htree index, is shown but never set). Symbolic links are not followed
 * (lsattr and chattr do not follow them either: ext3 keeps no flags that
 * mean anything on a symlink). The library checks no permissions: the CLI
 * runs with the image owner's rights. */
#include "../common/cmds.h"
#include "common.h"

#include <errno.h>
#include <string.h>

static const struct {
	char c;
	uint32_t fl;
} letters[] = {
	{ 's', NOSTALL_FL_SECRM },    { 'u', NOSTALL_FL_UNRM },      { 'S', NOSTALL_FL_SYNC },
	{ 'D', NOSTALL_FL_DIRSYNC },  { 'i', NOSTALL_FL_IMMUTABLE }, { 'a', NOSTALL_FL_APPEND },
	{ 'd', NOSTALL_FL_NODUMP },   { 'A', NOSTALL_FL_NOATIME },   { 'c', NOSTALL_FL_COMPR },
	{ 'j', NOSTALL_FL_JOURNAL_DATA }, { 'I', NOSTALL_FL_INDEX }, { 't', NOSTALL_FL_NOTAIL },
	{ 'T', NOSTALL_FL_TOPDIR },
};
#define NLETTERS (sizeof letters / sizeof letters[0])

static int lsattr_run(struct cli_args *a, struct nostall_fs *fs)
{
	int ret = 0;
	for (int i = 0; i < a->npos; i++) {
		struct nostall_stat st;
		int rc = nostall_stat(fs, a->pos[i], NOSTALL_NOFOLLOW, &st);
		if (rc) {
			ret = cli_fs_error(a, a->pos[i], rc);
			continue;
		}
		char s[NLETTERS + 1];
		for (size_t k = 0; k < NLETTERS; k++)
			s[k] = (st.flags & letters[k].fl) ? letters[k].c : '-';
		s[NLETTERS] = '\0';
		printf("%s %s\n", s, a->pos[i]);
	}
	return ret;
}

const struct cli_cmd cmd_lsattr = {
	.name = "lsattr", .usage = "lsattr [-o OPTS] IMAGE PATH...",
	.min_pos = 1, .max_pos = -1, .mount_flags = NOSTALL_MOUNT_RDONLY, .run = lsattr_run,
};

/* "+LETTERS", "-LETTERS" or "=LETTERS": the operator and the flags named. */
static bool spec_parse(const char *s, char *op, uint32_t *fl)
{
	*op = s[0];
	*fl = 0;
	if (*op != '+' && *op != '-' && *op != '=')
		return false;
	for (const char *p = s + 1; *p; p++) {
		size_t k = 0;
		while (k < NLETTERS && letters[k].c != *p)
			k++;
		if (k == NLETTERS || letters[k].fl == NOSTALL_FL_INDEX)
			return false;
		*fl |= letters[k].fl;
	}
	return *op == '=' || s[1];
}

static int chattr_check(struct cli_args *a)
{
	char op;
	uint32_t fl;
	if (!spec_parse(a->pos[0], &op, &fl))
		return cli_arg_error(a, a->pos[0], "invalid flags: +, - or = and letters of sSDiadAcujtT");
	return -1;
}

static int chattr_run(struct cli_args *a, struct nostall_fs *fs)
{
	char op;
	uint32_t fl;
	spec_parse(a->pos[0], &op, &fl);
	int ret = 0;
	for (int i = 1; i < a->npos; i++) {
		struct nostall_stat st;
		int rc = nostall_stat(fs, a->pos[i], NOSTALL_NOFOLLOW, &st);
		if (!rc) {
			/* '=' replaces the letters' flags but I and j (j only
			 * when named: it cannot change, see nostall_setflags) */
			uint32_t named = 0;
			for (size_t k = 0; k < NLETTERS; k++)
				named |= letters[k].fl;
			uint32_t keep = ~named | NOSTALL_FL_INDEX | NOSTALL_FL_JOURNAL_DATA;
			uint32_t v = op == '+' ? st.flags | fl : op == '-' ? st.flags & ~fl : (st.flags & keep & ~fl) | fl;
			rc = v == st.flags ? 0 : nostall_setflags(fs, a->pos[i], NOSTALL_NOFOLLOW, v);
		}
		if (rc)
			ret = cli_fs_error(a, a->pos[i], rc);
	}
	return ret;
}

const struct cli_cmd cmd_chattr = {
	.name = "chattr", .usage = "chattr [-o OPTS] IMAGE [+-=]FLAGS PATH...",
	.min_pos = 2, .max_pos = -1, .check = chattr_check, .run = chattr_run,
};
