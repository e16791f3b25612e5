/* Shared by the ext3 read-path tests (test_ext3_read*.c): e2fsprogs helpers,
 * the debugfs-populated images built once per binary (ext3_read_env_setup),
 * nostall mkfs on a mem: device, and a directory-listing collector.
 */
#ifndef NOSTALL_TEST_EXT3_READ_ENV_H
#define NOSTALL_TEST_EXT3_READ_ENV_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nostall/nostall.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "extfs/mkfs/mkfs.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define KIB 1024ull
#define MIB (1024ull * 1024)

static char tmpdir[256];
static bool have_e2fs;
static char img_main[300];  /* 1 KiB blocks, 256-byte inodes, populated */
static char img_big[300];   /* 10,500-entry htree directory */
static char img_4k[300];    /* 4 KiB blocks, 128-byte inodes */

/* ---- helpers ---- */

static inline int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* First line of `cmd` output containing `key`; the text after it. */
static inline bool cmd_field(const char *cmd, const char *key, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	char line[4096];
	bool found = false;
	while (fgets(line, sizeof line, p)) {
		char *k = strstr(line, key);
		/* A longer value is cut to the caller's buffer (the fields read
		 * are short); using snprintf's result keeps gcc's truncation
		 * warning quiet once this is inlined into a small buffer. */
		if (k && !found)
			found = snprintf(out, len, "%s", k + strlen(key)) >= 0;
	}
	pclose(p);
	return found;
}

static inline unsigned long long debugfs_num(const char *img, const char *what, const char *key)
{
	char cmd[1024], val[512];
	snprintf(cmd, sizeof cmd, "debugfs -R 'stat %s' '%s' 2>/dev/null", what, img);
	if (!cmd_field(cmd, key, val, sizeof val))
		fail_msg("debugfs stat %s: no %s", what, key);
	return strtoull(val, NULL, 0);
}

static inline void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static inline uint8_t *read_host(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static inline void fill_pattern(uint8_t *b, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

static inline struct nostall_fs *mount_ok(const char *img)
{
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(img, NULL, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		fail_msg("mount %s: %s", img, nostall_errmsg(rc));
	return fs;
}

/* ---- image construction (once per run) ---- */

static inline void host_sparse(const char *path, const uint64_t *offs, int n, size_t chunk)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	assert_true(fd >= 0);
	uint8_t *b = malloc(chunk);
	for (int i = 0; i < n; i++) {
		fill_pattern(b, chunk, (unsigned)i + 77);
		assert_int_equal(pwrite(fd, b, chunk, (off_t)offs[i]), (ssize_t)chunk);
	}
	free(b);
	close(fd);
}

static inline void build_main_image(void)
{
	char p[512], cmdf[512];
	snprintf(img_main, sizeof img_main, "%s/main.img", tmpdir);
	assert_int_equal(run("mke2fs -q -t ext3 -F -b 1024 -I 256 -L readtest '%s' 32M", img_main), 0);
	/* host files */
	static const size_t sizes[] = {0, 1, 1023, 1024, 12 * 1024, 12 * 1024 + 1, 200 * 1024,
				       (268 + 100) * 1024 + 5, 3 * 1024 * 1024 + 17};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		uint8_t *b = malloc(sizes[i] + 1);
		fill_pattern(b, sizes[i], (unsigned)i);
		snprintf(p, sizeof p, "%s/f%zu", tmpdir, i);
		write_file(p, b, sizes[i]);
		free(b);
	}
	/* sparse: holes, single/double/triple indirect (1 KiB blocks: triple
	 * from 12+256+65536 blocks = 65804 KiB), unaligned end */
	static const uint64_t offs[] = {0, 5000, 300 * KIB, 3 * MIB, 70 * MIB, 80 * MIB - 7};
	snprintf(p, sizeof p, "%s/sparse", tmpdir);
	host_sparse(p, offs, 6, 1300);
	char longt[220];
	memset(longt, 'L', sizeof longt);
	memcpy(longt, "/a/long/target/", 15);
	longt[200] = '\0';
	uint8_t big[700];
	fill_pattern(big, sizeof big, 99);
	snprintf(p, sizeof p, "%s/bigval", tmpdir);
	write_file(p, big, sizeof big);

	snprintf(cmdf, sizeof cmdf, "%s/cmds", tmpdir);
	FILE *c = fopen(cmdf, "w");
	assert_non_null(c);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		fprintf(c, "write %s/f%zu f%zu\n", tmpdir, i, i);
	fprintf(c, "write %s/sparse sparse\n", tmpdir);
	fprintf(c, "mkdir dir\nmkdir dir/sub\nmkdir dir/sub/deeper\n");
	fprintf(c, "write %s/f1 dir/sub/deeper/leaf\n", tmpdir);
	fprintf(c, "symlink fastlink /dir/sub\n");
	fprintf(c, "symlink rellink dir/sub/deeper/leaf\n");
	fprintf(c, "symlink dir/up ../f2\n");
	fprintf(c, "symlink slowlink %s\n", longt);
	fprintf(c, "symlink loop1 loop2\nsymlink loop2 loop1\nsymlink self self\n");
	fprintf(c, "symlink dangling /no/such/thing\n");
	fprintf(c, "ln f3 hardlink\nsif f3 links_count 2\n");
	fprintf(c, "mknod fifo p\nmknod chr c 4 5\nmknod blk b 8 1\n");
	fprintf(c, "mknod bigdev c 1 1\nsif bigdev block[0] 0\nsif bigdev block[1] 0x11112C70\n");
	fprintf(c, "write %s/f1 sock\nsif sock mode 0140644\n", tmpdir);
	fprintf(c, "ea_set f2 user.small hello\n");
	fprintf(c, "ea_set f2 trusted.t1 trusted-value\n");
	fprintf(c, "ea_set -f %s/bigval f2 user.big\n", tmpdir);
	fprintf(c, "ea_set dir user.dirattr 1234\n");
	fprintf(c, "sif f4 uid 100000\nsif f4 gid 70001\n");
	fclose(c);
	assert_int_equal(run("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmdf, img_main), 0);
}

static inline void build_big_image(void)
{
	char cmdf[512];
	snprintf(img_big, sizeof img_big, "%s/big.img", tmpdir);
	assert_int_equal(run("mke2fs -q -t ext3 -F -b 1024 -N 12000 '%s' 24M", img_big), 0);
	snprintf(cmdf, sizeof cmdf, "%s/bigcmds", tmpdir);
	FILE *c = fopen(cmdf, "w");
	assert_non_null(c);
	fprintf(c, "mkdir big\ncd big\n");
	for (int i = 0; i < 10500; i++)
		fprintf(c, "mknod entry_%05d_%s p\n", i, (i % 3) ? "x" : "with_a_longer_name_\xc3\xa9t\xc3\xa9");
	fprintf(c, "cd /\nmkdir small\ncd small\n");
	for (int i = 0; i < 200; i++)
		fprintf(c, "mknod n%03d_\xc3\xa9\xe2\x82\xac p\n", i);
	fclose(c);
	assert_int_equal(run("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmdf, img_big), 0);
	/* e2fsck -D builds the htree indexes (exit 1: "file system modified") */
	int rc = run("e2fsck -fyD '%s' >/dev/null 2>&1", img_big);
	assert_true(rc == 0 || rc == 1);
}

/* The images the calling binary needs (IMG_4K also needs IMG_MAIN's host
 * file f8, so it implies IMG_MAIN). */
enum { IMG_MAIN = 1, IMG_BIG = 2, IMG_4K = 4 };

static inline int ext3_read_env_setup(unsigned images)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nostall_ext3_read_XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	have_e2fs = run("command -v mke2fs >/dev/null && command -v debugfs >/dev/null && "
			"command -v e2fsck >/dev/null") == 0;
	if (!have_e2fs)
		return 0;
	if (images & IMG_4K)
		images |= IMG_MAIN;
	if (images & IMG_MAIN)
		build_main_image();
	if (images & IMG_BIG)
		build_big_image();
	if (!(images & IMG_4K))
		return 0;
	snprintf(img_4k, sizeof img_4k, "%s/4k.img", tmpdir);
	if (run("mke2fs -q -t ext3 -F -b 4096 -I 128 '%s' 160M", img_4k))
		return -1;
	char p[512];
	snprintf(p, sizeof p, "%s/f8", tmpdir);
	if (run("debugfs -w -R 'write %s big' '%s' >/dev/null 2>&1", p, img_4k))
		return -1;
	return 0;
}

static inline int group_teardown(void **state)
{
	(void)state;
	if (tmpdir[0] && !getenv("NOSTALL_TEST_KEEP"))
		run("rm -rf '%s'", tmpdir);
	return 0;
}

#define NEED_E2FS()                                                    \
	do {                                                           \
		if (!have_e2fs)                                        \
			skip_msg("e2fsprogs (mke2fs, debugfs) not found"); \
	} while (0)

static inline void skip_msg(const char *m)
{
	print_message("[  SKIP    ] %s\n", m);
	skip();
}

static inline struct dev *mkfs_mem(uint64_t bytes, unsigned bs, unsigned isz)
{
	char spec[64];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)bytes);
	struct dev *d = NULL;
	assert_int_equal(dev_open(spec, &d), 0);
	struct ext3_mkfs_params p;
	memset(&p, 0, sizeof p);
	p.block_size = bs;
	p.inode_size = isz;
	assert_int_equal(ext3_uuid_parse("01234567-89ab-cdef-0123-456789abcdef", p.uuid), 0);
	p.uuid_set = true;
	p.time = 1000000000;
	p.time_set = true;
	p.assume_zeroed = true;
	snprintf(p.label, sizeof p.label, "mkfstest");
	int rc = ext3_mkfs(d, &p);
	if (rc)
		fail_msg("mkfs: %s", err_last(rc));
	return d;
}

struct names {
	int n;
	char name[512][64]; /* truncated to 63 bytes */
	uint64_t ino[512];
	uint8_t type[512];
};

static inline int names_cb(void *ctx, const struct nostall_dirent *de)
{
	struct names *n = ctx;
	if (n->n < 512) {
		size_t l = de->name_len < 63 ? de->name_len : 63;
		memcpy(n->name[n->n], de->name, l);
		n->name[n->n][l] = '\0';
		n->ino[n->n] = de->ino;
		n->type[n->n] = de->type;
	}
	n->n++;
	return 0;
}

#endif
