/* The filesystem the write-path tests make (testfs.h). */
#include "testfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *testfs_type(void)
{
	const char *t = getenv("NOSTALL_TEST_FS");
	return t && *t ? t : "ext3";
}

const char *testfs_mkfs_opts(void)
{
	const char *o = getenv("NOSTALL_TEST_MKFS_OPTS");
	return o ? o : "";
}

const char *testfs_mke2fs_args(char *buf, size_t n)
{
	const char *o = testfs_mkfs_opts();
	snprintf(buf, n, "-t %s%s%s", testfs_type(), *o ? " " : "", o);
	return buf;
}

const char *testfs_kernel_type(void)
{
	return testfs_type();
}

bool testfs_bs_wanted(unsigned bs)
{
	const char *s = getenv("NOSTALL_TEST_BLOCK_SIZE");
	return !s || !*s || strtoul(s, NULL, 10) == bs;
}

bool testfs_has_journal(void)
{
	return strcmp(testfs_type(), "ext2") && !strstr(testfs_mkfs_opts(), "^has_journal");
}

const char *testfs_mount_opts(const char *opts, char *buf, size_t n)
{
	if (!opts || testfs_has_journal())
		return opts;
	size_t len = 0;
	buf[0] = '\0';
	for (const char *s = opts; *s;) {
		size_t w = strcspn(s, ",");
		bool drop = (w >= 5 && !strncmp(s, "data=", 5)) || (w >= 9 && !strncmp(s, "data_err=", 9));
		if (!drop && len + w + 2 < n) {
			if (len)
				buf[len++] = ',';
			memcpy(buf + len, s, w);
			len += w;
			buf[len] = '\0';
		}
		s += w;
		if (*s == ',')
			s++;
	}
	return buf;
}

bool testfs_is_default(void)
{
	return !strcmp(testfs_type(), "ext3") && !*testfs_mkfs_opts();
}
