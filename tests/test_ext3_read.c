/* ext3 read path through the public API (include/nostall/nostall.h).
 *
 * Oracles: e2fsprogs (mke2fs images populated with debugfs, `debugfs -R stat`
 * / `ls -p` / `dx_hash`), the host files written into the images, the host
 * kernel (loop mount, root only), and nostall's own mkfs for the hostile
 * image cases (corrupted in memory on a mem: device).
 *
 * nostall-test: concurrent (one test reads files from several threads)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nostall/nostall.h"

#include "dev/dev.h"
#include "ext3/ext3.h"
#include "ext3/ext3_format.h"
#include "ext3/mkfs.h"
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

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
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
static bool cmd_field(const char *cmd, const char *key, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	char line[4096];
	bool found = false;
	while (fgets(line, sizeof line, p)) {
		char *k = strstr(line, key);
		if (k && !found) {
			snprintf(out, len, "%s", k + strlen(key));
			found = true;
		}
	}
	pclose(p);
	return found;
}

static unsigned long long debugfs_num(const char *img, const char *what, const char *key)
{
	char cmd[1024], val[512];
	snprintf(cmd, sizeof cmd, "debugfs -R 'stat %s' '%s' 2>/dev/null", what, img);
	if (!cmd_field(cmd, key, val, sizeof val))
		fail_msg("debugfs stat %s: no %s", what, key);
	return strtoull(val, NULL, 0);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static uint8_t *read_host(const char *path, size_t *len)
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

static void fill_pattern(uint8_t *b, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

static struct nostall_fs *mount_ok(const char *img)
{
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(img, NULL, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		fail_msg("mount %s: %s", img, nostall_errmsg(rc));
	return fs;
}

/* Whole-file read through the API, compared with the host file. */
static void compare_file(struct nostall_fs *fs, const char *path, const char *host)
{
	size_t hlen;
	uint8_t *h = read_host(host, &hlen);
	struct nostall_file *f = NULL;
	int rc = nostall_open(fs, path, NOSTALL_O_RDONLY, &f);
	if (rc)
		fail_msg("open %s: %s", path, nostall_errmsg(rc));
	struct nostall_stat st;
	assert_int_equal(nostall_fstat(f, &st), 0);
	assert_int_equal(st.size, hlen);
	uint8_t *b = malloc(hlen + 100);
	assert_non_null(b);
	/* sequential reads in odd-sized chunks */
	size_t got = 0;
	for (;;) {
		ssize_t n = nostall_read(f, b + got, 70001);
		assert_true(n >= 0);
		if (n == 0)
			break;
		got += (size_t)n;
		assert_true(got <= hlen);
	}
	assert_int_equal(got, hlen);
	assert_memory_equal(b, h, hlen);
	/* pread at a block-crossing offset, and past the end */
	if (hlen > 3000) {
		assert_int_equal(nostall_pread(f, b, 2000, 1500), 2000);
		assert_memory_equal(b, h + 1500, 2000);
	}
	assert_int_equal(nostall_pread(f, b, 10, hlen), 0);
	nostall_close(f);
	free(b);
	free(h);
}

/* ---- image construction (once per run) ---- */

static void host_sparse(const char *path, const uint64_t *offs, int n, size_t chunk)
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

static void build_main_image(void)
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

static void build_big_image(void)
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

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nostall_ext3_read_XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	have_e2fs = run("command -v mke2fs >/dev/null && command -v debugfs >/dev/null && "
			"command -v e2fsck >/dev/null") == 0;
	if (!have_e2fs)
		return 0;
	build_main_image();
	build_big_image();
	snprintf(img_4k, sizeof img_4k, "%s/4k.img", tmpdir);
	if (run("mke2fs -q -t ext3 -F -b 4096 -I 128 '%s' 160M", img_4k))
		return -1;
	char p[512];
	snprintf(p, sizeof p, "%s/f8", tmpdir);
	if (run("debugfs -w -R 'write %s big' '%s' >/dev/null 2>&1", p, img_4k))
		return -1;
	return 0;
}

static int group_teardown(void **state)
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

static void skip_msg(const char *m)
{
	print_message("[  SKIP    ] %s\n", m);
	skip();
}

/* ---- hashes vs debugfs dx_hash ---- */

static void test_hash_vs_debugfs(void **state)
{
	(void)state;
	NEED_E2FS();
	static const char *names[] = {"a", "hello", "h\xc3\xa9llo", "..x",
				      "0123456789012345678901234567890123456789_long",
				      "\xff\xfe\x80\x7f", "name_with_exactly_32_bytes______"};
	static const char *seed_s = "3a4f1c2e-9b8d-4e7f-a1b2-c3d4e5f60718";
	uint8_t u[16];
	assert_int_equal(ext3_uuid_parse(seed_s, u), 0);
	uint32_t seed[4];
	memcpy(seed, u, 16);
	for (int le = 0; le < 4; le++)
		seed[le] = le32_to_cpu(seed[le]);
	for (int v = 0; v < 6; v++) {
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
			char cmd[512], val[128];
			snprintf(cmd, sizeof cmd,
				 "debugfs -R 'dx_hash -h %d -s %s \"%s\"' '%s' 2>/dev/null", v, seed_s,
				 names[i], img_4k);
			assert_true(cmd_field(cmd, " is ", val, sizeof val));
			unsigned long h = strtoul(val, NULL, 16);
			char *m = strstr(val, "minor ");
			assert_non_null(m);
			unsigned long mi = strtoul(m + 6, NULL, 16);
			uint32_t hh, mm;
			assert_int_equal(ext3_dx_hash(names[i], strlen(names[i]), v, seed, &hh, &mm), 0);
			if (hh != h || mm != mi)
				fail_msg("hash %d of '%s': nostall 0x%08x/0x%08x, debugfs 0x%08lx/0x%08lx", v,
					 names[i], hh, mm, h, mi);
		}
	}
	uint32_t h;
	assert_int_equal(ext3_dx_hash("x", 1, 6, NULL, &h, NULL), -EINVAL);
}

/* ---- directory block parsing (pure) ---- */

static void put_de(uint8_t *b, unsigned off, uint32_t ino, uint16_t rec_len, const char *name,
		   uint8_t ft)
{
	struct ext3_dir_entry_2 e = {cpu_to_le32(ino), cpu_to_le16(rec_len), (uint8_t)strlen(name), ft};
	memcpy(b + off, &e, sizeof e);
	memcpy(b + off + 8, name, strlen(name));
}

static void test_dirblock_parse(void **state)
{
	(void)state;
	uint8_t b[1024] = {0};
	put_de(b, 0, 2, 12, ".", EXT3_FT_DIR);
	put_de(b, 12, 2, 12, "..", EXT3_FT_DIR);
	put_de(b, 24, 15, 1000, "file", EXT3_FT_REG_FILE);
	struct ext3_dirent_view de;
	unsigned off = 0, n = 0;
	while (off < 1024) {
		assert_int_equal(ext3_dirblock_entry(b, 1024, off, 100, true, &de), 0);
		off += de.rec_len;
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(de.inode, 15);
	assert_int_equal(de.file_type, EXT3_FT_REG_FILE);
	assert_memory_equal(de.name, "file", 4);
	/* filetype off: the type byte is ignored */
	assert_int_equal(ext3_dirblock_entry(b, 1024, 24, 100, false, &de), 0);
	assert_int_equal(de.file_type, 0);
	/* rec_len 0, unaligned, too small for the name, overflowing, bad inode */
	put_de(b, 24, 15, 0, "file", 1);
	assert_int_equal(ext3_dirblock_entry(b, 1024, 24, 100, true, &de), -EUCLEAN);
	assert_non_null(strstr(err_last(-EUCLEAN), "rec_len"));
	put_de(b, 24, 15, 14, "file", 1);
	assert_int_equal(ext3_dirblock_entry(b, 1024, 24, 100, true, &de), -EUCLEAN);
	put_de(b, 24, 15, 12, "filename", 1);
	assert_int_equal(ext3_dirblock_entry(b, 1024, 24, 100, true, &de), -EUCLEAN);
	put_de(b, 24, 15, 1004, "file", 1);
	assert_int_equal(ext3_dirblock_entry(b, 1024, 24, 100, true, &de), -EUCLEAN);
	assert_non_null(strstr(err_last(-EUCLEAN), "overflows"));
	put_de(b, 24, 150, 1000, "file", 1);
	assert_int_equal(ext3_dirblock_entry(b, 1024, 24, 100, true, &de), -EUCLEAN);
	assert_int_equal(ext3_dirblock_entry(b, 1024, 1020, 100, true, &de), -EUCLEAN);
	assert_int_equal(ext3_dirblock_entry(b, 1024, 2000, 100, true, &de), -EUCLEAN);
}

/* ---- xattr region parsing (pure) ---- */

struct xa_seen {
	int n;
	char names[4][64];
};

static int xa_cb(void *ctx, const char *prefix, const char *name, size_t name_len,
		 const uint8_t *value, size_t value_len)
{
	struct xa_seen *s = ctx;
	(void)value;
	(void)value_len;
	if (s->n < 4)
		snprintf(s->names[s->n], 64, "%s%.*s", prefix, (int)name_len, name);
	s->n++;
	return 0;
}

static void test_xattr_region_parse(void **state)
{
	(void)state;
	uint8_t r[128] = {0};
	struct ext3_xattr_entry e = {3, EXT3_XATTR_INDEX_USER, cpu_to_le16(100), 0, cpu_to_le32(5), 0};
	memcpy(r, &e, sizeof e);
	memcpy(r + 16, "foo", 3);
	memcpy(r + 100, "hello", 5);
	struct xa_seen s = {0};
	assert_int_equal(ext3_xattr_region_walk(r, r, r + sizeof r, "t", xa_cb, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "user.foo");
	/* value past the end */
	e.e_value_size = cpu_to_le32(100);
	memcpy(r, &e, sizeof e);
	assert_int_equal(ext3_xattr_region_walk(r, r, r + sizeof r, "t", xa_cb, &s), -EUCLEAN);
	/* name overflowing the region */
	e.e_value_size = cpu_to_le32(5);
	e.e_name_len = 200;
	memcpy(r, &e, sizeof e);
	assert_int_equal(ext3_xattr_region_walk(r, r, r + sizeof r, "t", xa_cb, &s), -EUCLEAN);
}

/* ---- nostall mkfs image ---- */

static struct dev *mkfs_mem(uint64_t bytes, unsigned bs, unsigned isz)
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

static int names_cb(void *ctx, const struct nostall_dirent *de)
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

/* ext3's mount options (Linux names), the data mode, the writable-journal
 * mount's needs_recovery lifecycle and the shared inode cache. */
static void test_mount_opts_and_icache(void **state)
{
	(void)state;
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	assert_int_equal(o.file_readahead, 4u << 20);
	assert_int_equal(ext3_mount_opts_parse(&o, "ro,data=writeback,commit=7,nobarrier,errors=remount-ro,"
					      "data_err=abort,noatime,journal_ioprio=RT/2,scheduler=deadline"), 0);
	assert_true(o.ro);
	assert_int_equal(o.data_mode, EXT3_DATA_WRITEBACK);
	assert_int_equal(o.jcfg.commit_interval_ms, 7000);
	assert_false(o.jcfg.barrier);
	assert_int_equal(o.errors, EXT3_ERRORS_RO);
	assert_int_equal(o.data_err, EXT3_DATA_ERR_ABORT);
	assert_int_equal(o.atime, EXT3_ATIME_NOATIME);
	assert_string_equal(o.blk_opts, "scheduler=deadline");
	/* the same value twice is fine; a different one conflicts */
	assert_int_equal(ext3_mount_opts_parse(&o, "data=writeback"), 0);
	assert_int_equal(ext3_mount_opts_parse(&o, "data=journal"), -EINVAL);
	assert_non_null(strstr(err_last(-EINVAL), "data=journal"));
	assert_int_equal(ext3_mount_opts_parse(&o, "strictatime"), -EINVAL);
	assert_int_equal(ext3_mount_opts_parse(&o, "data=sloppy"), -EINVAL);
	assert_int_equal(ext3_mount_opts_parse(&o, "errors=explode"), -EINVAL);
	assert_int_equal(ext3_mount_opts_parse(&o, "commit=-1"), -EINVAL);
	assert_int_equal(ext3_mount_opts_parse(&o, "frobnicate=1"), -EINVAL);
	assert_non_null(strstr(err_last(-EINVAL), "frobnicate"));
	assert_int_equal(ext3_mount_opts_parse(&o, "ro=1"), -EINVAL);
	ext3_mount_opts_release(&o);

	struct dev *d = mkfs_mem(8 * MIB, 1024, 256);
	struct nostall_fs *nfs = NULL;
	assert_int_equal(nostall_mount_dev(d, "ro,data=guarded,relatime", 0, &nfs), 0);
	assert_int_equal(nostall_umount(nfs), 0);
	assert_int_equal(nostall_mount_dev(d, "ro,data=journal,data=ordered", 0, &nfs), -EINVAL);

	/* data mode: the build default, then the superblock's default bits */
	struct ext3_fs *fs;
	assert_int_equal(ext3_fs_mount(d, NULL, 0, &fs), 0);
	assert_int_equal(ext3_fs_opts(fs)->data_mode, EXT3_DATA_MODE_DEFAULT);
	assert_null(ext3_fs_journal(fs));
	struct jbd_location loc;
	assert_int_equal(ext3_fs_journal_location(fs, &loc), -ENOENT);

	/* one shared inode per number, reference counted */
	struct ext3_inode *a, *b;
	struct ext3_icache_stats st0, st1;
	ext3_icache_stats(fs, &st0);
	assert_int_equal(ext3_iget(fs, EXT3_ROOT_INO, &a), 0);
	assert_int_equal(ext3_iget(fs, EXT3_ROOT_INO, &b), 0);
	assert_ptr_equal(a, b);
	ext3_icache_stats(fs, &st1);
	assert_true(st1.hits >= st0.hits + 1);
	assert_int_equal(ext3_inode_ino(a), EXT3_ROOT_INO);
	assert_true(ext3_inode_in_use(a));
	assert_int_equal(ext3_inode_size(a), 1024);
	assert_int_equal(ext3_inode_disksize(a), ext3_inode_size(a));
	assert_int_equal(ext3_inode_dirty_data(a), 0);
	ext3_iput(a);
	ext3_iput(b);
	assert_int_equal(ext3_iget(fs, 0, &a), -EINVAL);
	assert_int_equal(ext3_iget(fs, ext3_fs_inodes_count(fs) + 1, &a), -EINVAL);
	/* every inode once: unreferenced ones are evicted beyond the bound */
	for (uint32_t i = 1; i <= ext3_fs_inodes_count(fs); i++) {
		assert_int_equal(ext3_iget(fs, i, &a), 0);
		ext3_iput(a);
	}
	ext3_icache_stats(fs, &st1);
	assert_true(st1.unused == st1.cached);
	assert_true(st1.cached <= 4096);
	assert_int_equal(st1.evictions, ext3_fs_inodes_count(fs) > 4096 ? ext3_fs_inodes_count(fs) - 4096 : 0);
	assert_int_equal(ext3_fs_unmount(fs), 0);

	struct ext3_super_block sb;
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 2, 2, &sb, 0), 0);
	sb.s_default_mount_opts = cpu_to_le32(EXT3_DEFM_JMODE_WBACK);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 2, 2, &sb, 0), 0);
	assert_int_equal(ext3_fs_mount(d, NULL, 0, &fs), 0);
	assert_int_equal(ext3_fs_opts(fs)->data_mode, EXT3_DATA_WRITEBACK);
	ext3_fs_unmount(fs);

	/* the writable journal: conflicts, then needs_recovery only while mounted */
	ext3_mount_opts_init(&o);
	o.ro = true;
	assert_int_equal(ext3_fs_mount(d, &o, EXT3_MOUNT_JOURNAL, &fs), -EINVAL);
	o.ro = false;
	assert_int_equal(ext3_mount_opts_parse(&o, "commit=1"), 0);
	int rc = ext3_fs_mount(d, &o, EXT3_MOUNT_JOURNAL, &fs);
	if (rc)
		fail_msg("journal mount: %s", err_last(rc));
	assert_non_null(ext3_fs_journal(fs));
	assert_int_equal(ext3_fs_journal_location(fs, &loc), 0);
	assert_true(loc.nr_blocks >= 1024);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 2, 2, &sb, 0), 0);
	assert_true(le32_to_cpu(sb.s_feature_incompat) & EXT3_FEATURE_INCOMPAT_RECOVER);
	assert_int_equal(ext3_fs_unmount(fs), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 2, 2, &sb, 0), 0);
	assert_false(le32_to_cpu(sb.s_feature_incompat) & EXT3_FEATURE_INCOMPAT_RECOVER);
	ext3_mount_opts_release(&o);
	dev_close(d);
}

static void test_mkfs_image(void **state)
{
	(void)state;
	static const unsigned cfg[][3] = {{8, 1024, 128}, {16, 2048, 256}, {64, 4096, 256}};
	for (size_t c = 0; c < 3; c++) {
		struct dev *d = mkfs_mem(cfg[c][0] * MIB, cfg[c][1], cfg[c][2]);
		struct nostall_fs *fs = NULL;
		/* read-write mounts exist now; noload still needs a read-only one */
		assert_int_equal(nostall_mount_dev(d, "noload", 0, &fs), -EINVAL);
		int rc = nostall_mount_dev(d, "ro,cache=1M,readahead=8", 0, &fs);
		if (rc)
			fail_msg("mount: %s", nostall_errmsg(rc));
		struct nostall_info info;
		assert_int_equal(nostall_info(fs, &info), 0);
		assert_int_equal(info.block_size, cfg[c][1]);
		assert_int_equal(info.inode_size, cfg[c][2]);
		assert_string_equal(info.volume_name, "mkfstest");
		assert_string_equal(info.uuid, "01234567-89ab-cdef-0123-456789abcdef");
		assert_int_equal(info.blocks_count * info.block_size, cfg[c][0] * MIB);
		assert_non_null(strstr(info.features, "has_journal"));
		assert_non_null(strstr(info.features, "dir_index"));
		assert_int_equal(info.needs_recovery, 0);
		assert_int_equal(info.read_only, 1);
		struct nostall_group_info gi;
		assert_int_equal(nostall_group_info(fs, 0, &gi), 0);
		assert_int_equal(gi.has_super, 1);
		assert_int_equal(nostall_group_info(fs, info.groups, &gi), -EINVAL);
		struct nostall_statfs sf;
		assert_int_equal(nostall_statfs(fs, &sf), 0);
		assert_int_equal(sf.files, info.inodes_count);
		assert_int_equal(sf.files_free, info.inodes_count - 11);
		assert_true(sf.blocks < info.blocks_count && sf.blocks_free <= sf.blocks);

		struct nostall_stat st;
		assert_int_equal(nostall_stat(fs, "/", 0, &st), 0);
		assert_int_equal(st.ino, 2);
		assert_int_equal(st.mode, 040755);
		assert_int_equal(st.nlink, 3);
		assert_int_equal(st.mtime.sec, 1000000000);
		assert_int_equal(nostall_stat(fs, "/lost+found", 0, &st), 0);
		assert_int_equal(st.ino, 11);
		assert_int_equal(st.mode, 040700);
		assert_int_equal(nostall_stat(fs, "lost+found/..//./", 0, &st), 0);
		assert_int_equal(st.ino, 2);
		assert_int_equal(nostall_stat(fs, "/nothing", 0, &st), -ENOENT);
		assert_int_equal(nostall_stat_ino(fs, 12, &st), -ENOENT); /* free inode */
		assert_int_equal(nostall_stat_ino(fs, 0, &st), -EINVAL);
		assert_int_equal(nostall_stat_ino(fs, info.inodes_count + 1, &st), -EINVAL);

		struct names n = {0};
		assert_int_equal(nostall_readdir(fs, "/", names_cb, &n), 0);
		assert_int_equal(n.n, 3);
		assert_string_equal(n.name[0], ".");
		assert_string_equal(n.name[1], "..");
		assert_string_equal(n.name[2], "lost+found");
		assert_int_equal(n.type[2], NOSTALL_DT_DIR);
		/* iterator: the same, with tell/seek */
		struct nostall_dir *dir = NULL;
		assert_int_equal(nostall_opendir(fs, "/", &dir), 0);
		struct nostall_dirent de;
		assert_int_equal(nostall_dir_next(dir, &de), 1);
		uint64_t after_dot = nostall_dir_tell(dir);
		assert_int_equal(nostall_dir_next(dir, &de), 1);
		assert_int_equal(nostall_dir_next(dir, &de), 1);
		assert_string_equal(de.name, "lost+found");
		assert_int_equal(nostall_dir_next(dir, &de), 0);
		assert_int_equal(nostall_dir_seek(dir, after_dot), 0);
		assert_int_equal(nostall_dir_next(dir, &de), 1);
		assert_string_equal(de.name, "..");
		assert_int_equal(nostall_umount(fs), -EBUSY);
		nostall_closedir(dir);
		struct nostall_file *f = NULL;
		assert_int_equal(nostall_open(fs, "/", 0, &f), -EISDIR);
		assert_int_equal(nostall_open(fs, "/lost+found/x", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, &f),
				 -EROFS); /* a read-only mount */
		assert_int_equal(nostall_umount(fs), 0);
		dev_close(d);
	}
}

/* ---- the debugfs-populated image ---- */

static void test_files_vs_host(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_ok(img_main);
	char name[32], host[512];
	for (int i = 0; i < 9; i++) {
		snprintf(name, sizeof name, "/f%d", i);
		snprintf(host, sizeof host, "%s/f%d", tmpdir, i);
		compare_file(fs, name, host);
		struct nostall_stat st;
		assert_int_equal(nostall_stat(fs, name, 0, &st), 0);
		assert_int_equal(st.blocks, debugfs_num(img_main, name, "Blockcount: "));
		assert_int_equal(st.nlink, debugfs_num(img_main, name, "Links: "));
	}
	snprintf(host, sizeof host, "%s/sparse", tmpdir);
	compare_file(fs, "sparse", host);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "sparse", 0, &st), 0);
	assert_int_equal(st.blocks, debugfs_num(img_main, "sparse", "Blockcount: "));
	assert_true(st.blocks < 200); /* holes stay holes */
	/* block map: a hole and a triple-indirect block */
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "sparse", 0, &f), 0);
	uint64_t phys;
	assert_int_equal(nostall_bmap(f, 10, &phys), 0);
	assert_int_equal(phys, 0);
	assert_int_equal(nostall_bmap(f, 70 * 1024, &phys), 0);
	assert_true(phys > 0);
	assert_int_equal(nostall_bmap(f, 50 * 1024, &phys), 0);
	assert_int_equal(phys, 0);
	assert_int_equal(nostall_bmap(f, 1ull << 40, &phys), -EFBIG);
	assert_int_equal(nostall_lseek(f, -10, SEEK_END), (int64_t)st.size - 10);
	uint8_t tail[20];
	assert_int_equal(nostall_read(f, tail, sizeof tail), 10);
	assert_int_equal(nostall_lseek(f, -1, SEEK_SET), -EINVAL);
	nostall_close(f);
	/* large uid/gid, hard links */
	assert_int_equal(nostall_stat(fs, "f4", 0, &st), 0);
	assert_int_equal(st.uid, 100000);
	assert_int_equal(st.gid, 70001);
	struct nostall_stat st2;
	assert_int_equal(nostall_stat(fs, "f3", 0, &st), 0);
	assert_int_equal(nostall_stat(fs, "hardlink", 0, &st2), 0);
	assert_int_equal(st.ino, st2.ino);
	assert_int_equal(st.nlink, 2);
	snprintf(host, sizeof host, "%s/f3", tmpdir);
	compare_file(fs, "hardlink", host);
	/* 256-byte inodes: times with the extra fields */
	assert_int_equal(st.mtime.sec, (int64_t)debugfs_num(img_main, "f3", " mtime: "));
	assert_int_equal(nostall_umount(fs), 0);
}

/* The directory listing against `debugfs ls -p`. */
static void compare_ls(struct nostall_fs *fs, const char *img, const char *dir)
{
	struct names n = {0};
	assert_int_equal(nostall_readdir(fs, dir, names_cb, &n), 0);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "debugfs -R 'ls -p %s' '%s' 2>/dev/null", dir, img);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[1024];
	int k = 0;
	while (fgets(line, sizeof line, p)) {
		unsigned ino, mode;
		char nm[300];
		if (sscanf(line, "/%u/%o/%*u/%*u/%299[^/]/", &ino, &mode, nm) != 3)
			continue;
		assert_true(k < n.n);
		assert_string_equal(n.name[k], nm);
		assert_int_equal(n.ino[k], ino);
		k++;
	}
	pclose(p);
	assert_int_equal(k, n.n);
}

static void test_dirs_links_specials(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_ok(img_main);
	compare_ls(fs, img_main, "/");
	compare_ls(fs, img_main, "/dir");
	struct nostall_stat st;
	/* symlinks: fast, slow, relative, through a link, chains, loops */
	char buf[300];
	ssize_t n = nostall_readlink(fs, "fastlink", buf, sizeof buf);
	assert_int_equal(n, 8);
	assert_memory_equal(buf, "/dir/sub", 8);
	n = nostall_readlink(fs, "slowlink", buf, sizeof buf);
	assert_int_equal(n, 200);
	assert_memory_equal(buf, "/a/long/target/LLL", 18);
	assert_int_equal(nostall_stat(fs, "slowlink", NOSTALL_NOFOLLOW, &st), 0);
	assert_int_equal(st.size, 200);
	assert_true(st.blocks > 0);
	assert_int_equal(nostall_readlink(fs, "fastlink", buf, 3), 3);
	assert_int_equal(nostall_readlink(fs, "f1", buf, sizeof buf), -EINVAL);
	uint64_t ino, ino2;
	assert_int_equal(nostall_lookup(fs, "fastlink/deeper/leaf", 0, &ino), 0);
	assert_int_equal(nostall_lookup(fs, "rellink", 0, &ino2), 0);
	assert_int_equal(ino, ino2);
	assert_int_equal(nostall_lookup(fs, "fastlink", NOSTALL_NOFOLLOW, &ino), 0);
	assert_int_equal(nostall_lookup(fs, "fastlink/", NOSTALL_NOFOLLOW, &ino2), 0);
	assert_true(ino != ino2);
	assert_int_equal(nostall_lookup(fs, "dir/up", 0, &ino), 0);
	assert_int_equal(nostall_lookup(fs, "f2", 0, &ino2), 0);
	assert_int_equal(ino, ino2);
	assert_int_equal(nostall_lookup(fs, "loop1", 0, &ino), -ELOOP);
	assert_int_equal(nostall_lookup(fs, "self/x", 0, &ino), -ELOOP);
	assert_int_equal(nostall_lookup(fs, "loop1", NOSTALL_NOFOLLOW, &ino), 0);
	assert_int_equal(nostall_lookup(fs, "dangling", 0, &ino), -ENOENT);
	assert_int_equal(nostall_lookup(fs, "f1/x", 0, &ino), -ENOTDIR);
	assert_int_equal(nostall_lookup(fs, "f1/", 0, &ino), -ENOTDIR);
	char longname[300];
	memset(longname, 'n', 299);
	longname[299] = '\0';
	assert_int_equal(nostall_lookup(fs, longname, 0, &ino), -ENAMETOOLONG);
	/* open a symlink itself: reads the target */
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "fastlink", NOSTALL_O_NOFOLLOW, &f), 0);
	assert_int_equal(nostall_pread(f, buf, sizeof buf, 0), 8);
	nostall_close(f);
	/* device nodes, fifo, socket */
	assert_int_equal(nostall_stat(fs, "chr", 0, &st), 0);
	assert_true(S_ISCHR(st.mode));
	assert_int_equal(st.rdev_major, 4);
	assert_int_equal(st.rdev_minor, 5);
	assert_int_equal(st.rdev, makedev(4, 5));
	assert_int_equal(nostall_stat(fs, "blk", 0, &st), 0);
	assert_true(S_ISBLK(st.mode));
	assert_int_equal(st.rdev_major, 8);
	assert_int_equal(st.rdev_minor, 1);
	assert_int_equal(nostall_stat(fs, "bigdev", 0, &st), 0);
	assert_int_equal(st.rdev_major, 300);
	assert_int_equal(st.rdev_minor, 70000);
	char val[64];
	assert_true(cmd_field("true", "", val, sizeof val) == false || 1);
	assert_int_equal(nostall_stat(fs, "fifo", 0, &st), 0);
	assert_true(S_ISFIFO(st.mode));
	assert_int_equal(nostall_stat(fs, "sock", 0, &st), 0);
	assert_true(S_ISSOCK(st.mode));
	assert_int_equal(nostall_open(fs, "fifo", 0, &f), -ENXIO);
	assert_int_equal(nostall_open(fs, "chr", 0, &f), -ENXIO);
	struct names nn = {0};
	assert_int_equal(nostall_readdir(fs, "/", names_cb, &nn), 0);
	for (int i = 0; i < nn.n && i < 512; i++) {
		if (!strcmp(nn.name[i], "fifo"))
			assert_int_equal(nn.type[i], NOSTALL_DT_FIFO);
		if (!strcmp(nn.name[i], "chr"))
			assert_int_equal(nn.type[i], NOSTALL_DT_CHR);
		if (!strcmp(nn.name[i], "slowlink"))
			assert_int_equal(nn.type[i], NOSTALL_DT_LNK);
	}
	assert_int_equal(nostall_readdir(fs, "f1", names_cb, &nn), -ENOTDIR);
	assert_int_equal(nostall_umount(fs), 0);
}

static void test_xattrs(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_ok(img_main);
	char v[4000];
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", v, sizeof v), 5);
	assert_memory_equal(v, "hello", 5);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", NULL, 0), 5);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", v, 2), -ERANGE);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "trusted.t1", v, sizeof v), 13);
	assert_memory_equal(v, "trusted-value", 13);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.nope", v, sizeof v), -ENODATA);
	/* no namespace: the VFS finds no handler (Linux's EOPNOTSUPP) */
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "small", v, sizeof v), -EOPNOTSUPP);
	/* the 700-byte value lives in the xattr block */
	size_t blen;
	char host[512];
	snprintf(host, sizeof host, "%s/bigval", tmpdir);
	uint8_t *big = read_host(host, &blen);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.big", v, sizeof v), (ssize_t)blen);
	assert_memory_equal(v, big, blen);
	free(big);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "f2", 0, &st), 0);
	assert_int_equal(st.xattr_block, debugfs_num(img_main, "f2", "File ACL: "));
	assert_true(st.xattr_block != 0);
	char list[512];
	ssize_t n = nostall_listxattr(fs, "f2", 0, list, sizeof list);
	assert_true(n > 0);
	assert_int_equal(nostall_listxattr(fs, "f2", 0, NULL, 0), n);
	assert_int_equal(nostall_listxattr(fs, "f2", 0, list, 5), -ERANGE);
	int found = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1)
		found += !strcmp(list + i, "user.small") + !strcmp(list + i, "trusted.t1") +
			 !strcmp(list + i, "user.big");
	assert_int_equal(found, 3);
	assert_int_equal(nostall_getxattr(fs, "dir", 0, "user.dirattr", v, sizeof v), 4);
	assert_int_equal(nostall_listxattr(fs, "f1", 0, list, sizeof list), 0);
	/* via a symlink: follows unless NOFOLLOW */
	assert_int_equal(nostall_getxattr(fs, "dir/up", 0, "user.small", v, sizeof v), 5);
	assert_int_equal(nostall_getxattr(fs, "dir/up", NOSTALL_NOFOLLOW, "user.small", v, sizeof v),
			 -ENODATA);
	assert_int_equal(nostall_umount(fs), 0);
}

/* ---- htree ---- */

struct count_ctx {
	int n;
	int bad;
};

static int count_cb(void *ctx, const struct nostall_dirent *de)
{
	struct count_ctx *c = ctx;
	c->n++;
	if (de->type != NOSTALL_DT_FIFO && de->type != NOSTALL_DT_DIR)
		c->bad++;
	return 0;
}

static void check_big_dir(struct nostall_fs *fs)
{
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "big", 0, &st), 0);
	assert_true(st.flags & EXT3_INDEX_FL);
	struct count_ctx c = {0};
	assert_int_equal(nostall_readdir(fs, "big", count_cb, &c), 0);
	assert_int_equal(c.n, 10502);
	assert_int_equal(c.bad, 0);
	uint64_t dir = st.ino;
	char name[128];
	for (int i = 0; i < 10500; i++) {
		snprintf(name, sizeof name, "entry_%05d_%s", i,
			 (i % 3) ? "x" : "with_a_longer_name_\xc3\xa9t\xc3\xa9");
		uint64_t ino;
		int rc = nostall_lookup_at(fs, dir, name, &ino);
		if (rc)
			fail_msg("lookup %s: %s", name, nostall_errmsg(rc));
	}
	uint64_t ino;
	assert_int_equal(nostall_lookup_at(fs, dir, "entry_10500_x", &ino), -ENOENT);
	assert_int_equal(nostall_lookup_at(fs, dir, "..", &ino), 0);
	assert_int_equal(ino, 2);
	/* the iterator sees the same count */
	struct nostall_dir *d;
	assert_int_equal(nostall_opendir(fs, "/big", &d), 0);
	struct nostall_dirent de;
	int n = 0, rc;
	while ((rc = nostall_dir_next(d, &de)) == 1)
		n++;
	assert_int_equal(rc, 0);
	assert_int_equal(n, 10502);
	nostall_closedir(d);
}

static void test_htree_big(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_ok(img_big);
	check_big_dir(fs);
	compare_ls(fs, img_big, "/small");
	assert_int_equal(nostall_umount(fs), 0);
}

/* Every hash version, signed and unsigned, re-indexed by e2fsck -D. */
static void test_htree_hash_variants(void **state)
{
	(void)state;
	NEED_E2FS();
	char img[512];
	snprintf(img, sizeof img, "%s/variant.img", tmpdir);
	static const char *const alg_names[] = {"legacy", "half_md4", "tea"};
	for (int alg = 0; alg < 3; alg++) {
		for (int uns = 0; uns < 2; uns++) {
			assert_int_equal(run("cp '%s' '%s'", img_big, img), 0);
			assert_int_equal(run("debugfs -w -R 'ssv def_hash_version %s' '%s' >/dev/null 2>&1",
					     alg_names[alg], img), 0);
			assert_int_equal(run("debugfs -w -R 'ssv flags %d' '%s' >/dev/null 2>&1",
					     uns ? EXT3_FLAGS_UNSIGNED_HASH : EXT3_FLAGS_SIGNED_HASH, img),
					 0);
			int rc = run("e2fsck -fyD '%s' >/dev/null 2>&1", img);
			assert_true(rc == 0 || rc == 1);
			char cmd[1024], val[64];
			snprintf(cmd, sizeof cmd, "debugfs -R 'htree small' '%s' 2>/dev/null", img);
			assert_true(cmd_field(cmd, "Hash Version: ", val, sizeof val));
			assert_int_equal(atoi(val), alg);
			struct nostall_fs *fs = mount_ok(img);
			struct nostall_info info;
			assert_int_equal(nostall_info(fs, &info), 0);
			assert_int_equal(info.unsigned_hash, uns);
			uint64_t dir;
			assert_int_equal(nostall_lookup(fs, "small", 0, &dir), 0);
			struct nostall_stat st;
			assert_int_equal(nostall_stat_ino(fs, dir, &st), 0);
			assert_true(st.flags & EXT3_INDEX_FL);
			char name[64];
			for (int i = 0; i < 200; i++) {
				snprintf(name, sizeof name, "n%03d_\xc3\xa9\xe2\x82\xac", i);
				uint64_t ino;
				rc = nostall_lookup_at(fs, dir, name, &ino);
				if (rc)
					fail_msg("hash %d%s: lookup %s: %s", alg, uns ? " unsigned" : "",
						 name, nostall_errmsg(rc));
			}
			if (alg == 1 && uns == 1)
				check_big_dir(fs);
			assert_int_equal(nostall_umount(fs), 0);
		}
	}
}

/* ---- 4 KiB blocks, 128-byte inodes ---- */

static void test_4k_image(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_ok(img_4k);
	char host[512];
	snprintf(host, sizeof host, "%s/f8", tmpdir);
	compare_file(fs, "big", host);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "big", 0, &st), 0);
	assert_int_equal(st.blksize, 4096);
	assert_int_equal(st.blocks, debugfs_num(img_4k, "big", "Blockcount: "));
	assert_int_equal(st.mtime.nsec, 0);
	assert_int_equal(nostall_umount(fs), 0);
	/* plain path and explicit file: spec are the same */
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", img_4k);
	fs = mount_ok(spec);
	assert_int_equal(nostall_umount(fs), 0);
	assert_int_equal(nostall_mount(img_4k, "bogus_option=1", NOSTALL_MOUNT_RDONLY, &fs), -EINVAL);
	assert_int_equal(nostall_mount("/no/such/image", NULL, NOSTALL_MOUNT_RDONLY, &fs) < 0, 1);
	/* a backup superblock (4 KiB: group 1 at 32768) */
	assert_int_equal(nostall_mount(img_4k, "sb=32768", NOSTALL_MOUNT_RDONLY, &fs), 0);
	struct nostall_info info;
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_int_equal(info.superblock_block, 32768);
	compare_file(fs, "big", host);
	assert_int_equal(nostall_umount(fs), 0);
}

/* ---- concurrency: several threads read different files and the same one ---- */

struct reader_arg {
	struct nostall_fs *fs;
	int which;
	int errors;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	char path[32], host[512];
	int i = a->which % 2 ? 8 : 6;
	snprintf(path, sizeof path, "/f%d", i);
	snprintf(host, sizeof host, "%s/f%d", tmpdir, i);
	FILE *h = fopen(host, "rb");
	if (!h) {
		a->errors++;
		return NULL;
	}
	uint8_t x[4096], y[4096];
	struct nostall_file *f;
	if (nostall_open(a->fs, path, 0, &f)) {
		a->errors++;
		fclose(h);
		return NULL;
	}
	for (int r = 0; r < 300; r++) {
		uint64_t off = ((uint64_t)r * 7919 * (a->which + 1)) % (200 * 1024);
		ssize_t n = nostall_pread(f, x, sizeof x, off);
		fseek(h, (long)off, SEEK_SET);
		size_t m = fread(y, 1, sizeof y, h);
		if (n < 0 || (size_t)n != m || memcmp(x, y, m))
			a->errors++;
		uint64_t ino;
		if (nostall_lookup(a->fs, "dir/sub/deeper/leaf", 0, &ino))
			a->errors++;
	}
	nostall_close(f);
	fclose(h);
	return NULL;
}

static void test_concurrent_reads(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = NULL;
	assert_int_equal(nostall_mount(img_main, "cache=256K", NOSTALL_MOUNT_RDONLY, &fs), 0);
	pthread_t t[6];
	struct reader_arg a[6];
	for (int i = 0; i < 6; i++) {
		a[i] = (struct reader_arg){fs, i, 0};
		assert_int_equal(pthread_create(&t[i], NULL, reader, &a[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].errors, 0);
	}
	assert_int_equal(nostall_umount(fs), 0);
}

/* ---- the host kernel as the writer (root, loop mount) ---- */

static void test_kernel_written(void **state)
{
	(void)state;
	NEED_E2FS();
	if (geteuid() != 0)
		skip_msg("not root: the kernel loop-mount test needs root");
	char img[512], mnt[512];
	snprintf(img, sizeof img, "%s/kernel.img", tmpdir);
	snprintf(mnt, sizeof mnt, "%s/mnt", tmpdir);
	assert_int_equal(run("mke2fs -q -t ext3 -F -b 1024 -N 14000 '%s' 40M && mkdir -p '%s'", img,
			     mnt), 0);
	if (run("mount -o loop -t ext3 '%s' '%s' 2>/dev/null", img, mnt)) {
		skip_msg("mount -o loop -t ext3 failed (no loop devices or ext3 driver here)");
		return;
	}
	int rc = run("cd '%s' && mkdir many && cd many && "
		     "for i in $(seq 0 11999); do : > \"kf_$i\"; done && cd .. && "
		     "truncate -s 75M sparse && printf 'tail' | dd of=sparse bs=1 seek=74000000 "
		     "conv=notrunc status=none && printf 'head' | dd of=sparse conv=notrunc "
		     "status=none && ln -s ../many/kf_7 many_link && mknod cdev c 10 200 && "
		     "mkfifo fifo && setfattr -n user.k -v kernel-value sparse 2>/dev/null; "
		     "cd / && sync", mnt);
	run("umount '%s'", mnt);
	assert_int_equal(rc, 0);
	struct nostall_fs *fs = mount_ok(img);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "many", 0, &st), 0);
	assert_true(st.flags & EXT3_INDEX_FL);
	char name[64];
	uint64_t ino;
	for (int i = 0; i < 12000; i++) {
		snprintf(name, sizeof name, "kf_%d", i);
		rc = nostall_lookup_at(fs, st.ino, name, &ino);
		if (rc)
			fail_msg("lookup %s: %s", name, nostall_errmsg(rc));
	}
	struct count_ctx c = {0};
	assert_int_equal(nostall_readdir(fs, "many", count_cb, &c), 0);
	assert_int_equal(c.n, 12002);
	assert_int_equal(nostall_stat(fs, "sparse", 0, &st), 0);
	assert_int_equal(st.size, 75 * MIB);
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "sparse", 0, &f), 0);
	char b[8];
	assert_int_equal(nostall_pread(f, b, 4, 74000000), 4);
	assert_memory_equal(b, "tail", 4);
	assert_int_equal(nostall_pread(f, b, 4, 0), 4);
	assert_memory_equal(b, "head", 4);
	assert_int_equal(nostall_pread(f, b, 4, 1000000), 4);
	assert_memory_equal(b, "\0\0\0\0", 4);
	nostall_close(f);
	assert_int_equal(nostall_lookup(fs, "many_link", 0, &ino), 0);
	assert_int_equal(nostall_stat(fs, "cdev", 0, &st), 0);
	assert_int_equal(st.rdev_major, 10);
	assert_int_equal(st.rdev_minor, 200);
	assert_int_equal(nostall_umount(fs), 0);
}

/* ---- hostile images ---- */

static void patch(struct dev *d, uint64_t off, const void *data, size_t len)
{
	uint64_t s0 = off / 512, s1 = (off + len + 511) / 512;
	size_t n = (size_t)(s1 - s0) * 512;
	uint8_t *b = malloc(n);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, s0, (uint32_t)(s1 - s0), b, 0), 0);
	memcpy(b + (off - s0 * 512), data, len);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, s0, (uint32_t)(s1 - s0), b, 0), 0);
	free(b);
}

static void patch32(struct dev *d, uint64_t off, uint32_t v)
{
	uint32_t le = cpu_to_le32(v);
	patch(d, off, &le, 4);
}

static void patch16(struct dev *d, uint64_t off, uint16_t v)
{
	uint16_t le = cpu_to_le16(v);
	patch(d, off, &le, 2);
}

static int mount_dev_rc(struct dev *d, struct nostall_fs **fs)
{
	*fs = NULL;
	return nostall_mount_dev(d, NULL, NOSTALL_MOUNT_RDONLY, fs);
}

static void expect_mount_fail(struct dev *d, int want, const char *msg_part)
{
	struct nostall_fs *fs;
	int rc = mount_dev_rc(d, &fs);
	if (rc != want)
		fail_msg("mount gave %d (%s), want %d (%s)", rc, rc ? nostall_errmsg(rc) : "ok", want,
			 msg_part);
	if (msg_part && !strstr(nostall_errmsg(rc), msg_part))
		fail_msg("message '%s' lacks '%s'", nostall_errmsg(rc), msg_part);
	assert_null(fs);
}

#define SB 1024u /* superblock byte offset */

static void test_hostile_super(void **state)
{
	(void)state;
	const uint64_t size = 8 * MIB;
	struct {
		uint32_t off;
		int width;
		uint32_t val;
		int want;
		const char *msg;
	} cases[] = {
		{0x38, 2, 0x1234, -EUCLEAN, "magic"},
		{0x18, 4, 7, -EUCLEAN, "block size"},
		{0x20, 4, 0, -EUCLEAN, "blocks per group"},
		{0x20, 4, 8, -EUCLEAN, "inode count"},     /* 1024 groups vs inodes */
		{0x28, 4, 0, -EUCLEAN, "inodes per group"},
		{0x28, 4, 1u << 20, -EUCLEAN, "inodes per group"},
		{0x00, 4, 12345, -EUCLEAN, "inode count"},
		{0x04, 4, 100000, -EUCLEAN, "device"},     /* larger than the device */
		{0x04, 4, 1, -EUCLEAN, "block count"},
		{0x14, 4, 0, -EUCLEAN, "s_first_data_block"},
		{0x58, 2, 3000, -EUCLEAN, "inode size"},
		{0x58, 2, 64, -EUCLEAN, "inode size"},
		{0x54, 4, 3, -EUCLEAN, "first inode"},
		{0x4C, 4, 7, -EOPNOTSUPP, "revision"},
		{0x60, 4, 0x2 | 0x40, -EOPNOTSUPP, "extent"},
		{0x60, 4, 0x2 | 0x80000000u, -EOPNOTSUPP, "FEATURE_I31"},
		{0x60, 4, 0x2 | 0x10, -EOPNOTSUPP, "meta_bg"},
		{0xCE, 2, 5000, -EUCLEAN, "reserved GDT"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct dev *d = mkfs_mem(size, 1024, 128);
		if (cases[i].width == 2)
			patch16(d, SB + cases[i].off, (uint16_t)cases[i].val);
		else
			patch32(d, SB + cases[i].off, cases[i].val);
		expect_mount_fail(d, cases[i].want, cases[i].msg);
		dev_close(d);
	}
	/* truncated image: the first half of an 8 MiB filesystem */
	struct dev *d = mkfs_mem(size, 1024, 128);
	uint8_t *img = malloc(size / 2);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, (uint32_t)(size / 2 / 512), img, 0), 0);
	dev_close(d);
	char spec[64];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)(size / 2));
	assert_int_equal(dev_open(spec, &d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, (uint32_t)(size / 2 / 512), img, 0), 0);
	expect_mount_fail(d, -EUCLEAN, "truncated");
	dev_close(d);
	free(img);
	/* a device too small for a superblock */
	assert_int_equal(dev_open("mem:1024", &d), 0);
	expect_mount_fail(d, -EUCLEAN, "too small");
	dev_close(d);
	/* all zeroes */
	assert_int_equal(dev_open("mem:1M", &d), 0);
	expect_mount_fail(d, -EUCLEAN, "magic");
	dev_close(d);
	/* group descriptors: inode table and bitmaps outside their group */
	for (int k = 0; k < 3; k++) {
		d = mkfs_mem(2 * size, 1024, 128); /* two groups */
		uint64_t gdt = 2 * 1024; /* block 2 */
		if (k == 0)
			patch32(d, gdt + 8, 9999999);                 /* group 0 inode table */
		else if (k == 1)
			patch32(d, gdt + 32 + 0, 5);                  /* group 1 block bitmap in group 0 */
		else
			patch16(d, gdt + 12, 60000);                  /* free count > group */
		expect_mount_fail(d, -EUCLEAN, "group");
		dev_close(d);
	}
	/* unknown ro_compat: mounts read-only, reported; needs_recovery reported
	 * by a noload mount, and cleared by a normal one (which replays the
	 * journal, here empty, as e2fsck and the kernel do) */
	d = mkfs_mem(size, 1024, 128);
	patch32(d, SB + 0x64, 0x1 | 0x2 | 0x8000);
	patch32(d, SB + 0x60, 0x2 | 0x4);
	struct nostall_fs *fs;
	assert_int_equal(nostall_mount_dev(d, "noload", NOSTALL_MOUNT_RDONLY, &fs), 0);
	struct nostall_info info;
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_int_equal(info.unknown_ro_compat, 1);
	assert_int_equal(info.needs_recovery, 1);
	assert_non_null(strstr(info.features, "verity"));
	assert_non_null(strstr(info.features, "needs_recovery"));
	assert_int_equal(nostall_umount(fs), 0);
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_int_equal(info.needs_recovery, 0);
	assert_int_equal(info.unknown_ro_compat, 1);
	assert_int_equal(nostall_umount(fs), 0);
	dev_close(d);
	/* revision 0: fixed 128-byte inodes, no features */
	d = mkfs_mem(size, 1024, 128);
	patch32(d, SB + 0x4C, 0);
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	struct names n = {0};
	assert_int_equal(nostall_readdir(fs, "/", names_cb, &n), 0);
	assert_int_equal(n.n, 3);
	assert_int_equal(n.type[2], NOSTALL_DT_UNKNOWN); /* no filetype feature */
	assert_int_equal(nostall_umount(fs), 0);
	dev_close(d);
}

/* Byte offset of inode ino in a mem device (via the group descriptors). */
static uint64_t inode_off(struct nostall_fs *fs, uint64_t ino)
{
	struct nostall_info info;
	assert_int_equal(nostall_info(fs, &info), 0);
	uint32_t g = (uint32_t)((ino - 1) / info.inodes_per_group);
	uint32_t idx = (uint32_t)((ino - 1) % info.inodes_per_group);
	struct nostall_group_info gi;
	assert_int_equal(nostall_group_info(fs, g, &gi), 0);
	return (uint64_t)gi.inode_table * info.block_size + (uint64_t)idx * info.inode_size;
}

/* i_block[idx] of the inode at path, read raw from the device. */
static uint64_t raw_iblock(struct dev *d, struct nostall_fs *fs, const char *path, int idx)
{
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, path, NOSTALL_NOFOLLOW, &st), 0);
	uint64_t off = inode_off(fs, st.ino) + 0x28 + 4 * (uint64_t)idx;
	uint8_t s[512];
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, off / 512, 1, s, 0), 0);
	uint32_t v;
	memcpy(&v, s + off % 512, 4);
	return le32_to_cpu(v);
}

static void test_hostile_mkfs_dirs(void **state)
{
	(void)state;
	const uint64_t size = 8 * MIB;
	struct nostall_fs *fs;
	struct names n;
	struct nostall_stat st;
	uint64_t ino;
	/* a root that is not a directory: the mount refuses */
	struct dev *d0 = mkfs_mem(size, 1024, 256);
	assert_int_equal(mount_dev_rc(d0, &fs), 0);
	uint64_t r0 = inode_off(fs, 2);
	assert_int_equal(nostall_umount(fs), 0);
	patch16(d0, r0, 0100644);
	expect_mount_fail(d0, -EUCLEAN, "root inode");
	dev_close(d0);
	/* absurd i_extra_isize on lost+found: stat fails cleanly */
	d0 = mkfs_mem(size, 1024, 256);
	assert_int_equal(mount_dev_rc(d0, &fs), 0);
	r0 = inode_off(fs, 11);
	assert_int_equal(nostall_umount(fs), 0);
	patch16(d0, r0 + 0x80, 200);
	assert_int_equal(mount_dev_rc(d0, &fs), 0);
	assert_int_equal(nostall_stat(fs, "/lost+found", 0, &st), -EUCLEAN);
	assert_non_null(strstr(nostall_errmsg(-EUCLEAN), "extra_isize"));
	assert_int_equal(nostall_umount(fs), 0);
	dev_close(d0);
	for (int k = 0; k < 6; k++) {
		struct dev *d = mkfs_mem(size, 1024, 256);
		assert_int_equal(mount_dev_rc(d, &fs), 0);
		uint64_t root = inode_off(fs, 2);
		uint64_t rootblk = raw_iblock(d, fs, "/", 0);
		assert_int_equal(nostall_umount(fs), 0);
		const char *msg = NULL;
		switch (k) {
		case 0: patch16(d, rootblk * 1024 + 4, 0); msg = "rec_len"; break;       /* "." rec_len 0 */
		case 1: patch16(d, rootblk * 1024 + 12 + 4, 2048); msg = "overflows"; break;
		case 2: patch32(d, root + 0x28, 99999999); msg = "outside"; break;      /* i_block[0] */
		case 3: patch32(d, root + 4, 1u << 30); msg = "allocated"; break;       /* huge dir size */
		case 4: patch32(d, root + 0x28, 0); msg = "hole"; break;
		case 5: patch32(d, rootblk * 1024 + 24, 999999); msg = "out of range"; break; /* lost+found ino */
		}
		assert_int_equal(mount_dev_rc(d, &fs), 0);
		memset(&n, 0, sizeof n);
		int rc = nostall_readdir(fs, "/", names_cb, &n);
		if (rc != -EUCLEAN)
			fail_msg("case %d: readdir gave %d (%s)", k, rc, rc ? nostall_errmsg(rc) : "ok");
		if (!strstr(nostall_errmsg(rc), msg))
			fail_msg("case %d: message '%s' lacks '%s'", k, nostall_errmsg(rc), msg);
		rc = nostall_lookup(fs, "/lost+found/x", 0, &ino);
		assert_true(rc == -EUCLEAN || rc == -ENOENT);
		rc = nostall_stat(fs, "/", 0, &st);
		assert_true(rc == 0 || rc == -EUCLEAN);
		struct nostall_dir *dir;
		if (nostall_opendir(fs, "/", &dir) == 0) {
			struct nostall_dirent de;
			int guard = 0;
			while ((rc = nostall_dir_next(dir, &de)) == 1 && guard++ < 100)
				;
			assert_int_equal(rc, -EUCLEAN);
			nostall_closedir(dir);
		}
		assert_int_equal(nostall_umount(fs), 0);
		dev_close(d);
	}
}

/* Copy an image file into a mem device (so it can be corrupted freely). */
static struct dev *mem_from_file(const char *path)
{
	size_t len;
	uint8_t *b = read_host(path, &len);
	char spec[64];
	snprintf(spec, sizeof spec, "mem:%zu", len);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, (uint32_t)(len / 512), b, 0), 0);
	free(b);
	return d;
}

static void test_hostile_files(void **state)
{
	(void)state;
	NEED_E2FS();
	struct dev *d = mem_from_file(img_main);
	struct nostall_fs *fs;
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "f8", 0, &st), 0); /* 3 MiB: double indirect */
	uint64_t f8 = inode_off(fs, st.ino);
	uint64_t f8_ino = st.ino;
	assert_int_equal(nostall_stat(fs, "f2", 0, &st), 0);
	uint64_t xblk = st.xattr_block;
	uint64_t f2 = inode_off(fs, st.ino);
	assert_int_equal(nostall_stat(fs, "dir", 0, &st), 0);
	uint64_t dirblk = raw_iblock(d, fs, "dir", 0);
	struct nostall_info info;
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_int_equal(nostall_umount(fs), 0);
	uint8_t *buf = malloc(4 * MIB);
	uint32_t ind;
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, (f8 + 0x28 + 12 * 4) / 512, 1, buf, 0), 0);
	memcpy(&ind, buf + (f8 + 0x28 + 12 * 4) % 512, 4);
	ind = le32_to_cpu(ind);

	/* 1. indirect block pointing at itself (a cycle): reads are bounded and
	 * return the indirect block's bytes as data */
	patch32(d, (uint64_t)ind * 1024, ind);
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	struct nostall_file *f;
	assert_int_equal(nostall_open_ino(fs, f8_ino, 0, &f), 0);
	assert_int_equal(nostall_pread(f, buf, 4 * MIB, 0), 3 * MIB + 17);
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);
	/* 2. indirect entry past the end of the filesystem: -EUCLEAN */
	patch32(d, (uint64_t)ind * 1024 + 8, 0x7fffffff);
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	assert_int_equal(nostall_open_ino(fs, f8_ino, 0, &f), 0);
	ssize_t got = nostall_pread(f, buf, 4 * MIB, 0);
	assert_int_equal(got, 14 * 1024); /* up to the bad block */
	assert_int_equal(nostall_pread(f, buf, 1024, 14 * 1024), -EUCLEAN);
	assert_non_null(strstr(nostall_errmsg(-EUCLEAN), "outside"));
	nostall_close(f);
	/* 3. the double indirect pointer itself past the end */
	assert_int_equal(nostall_umount(fs), 0);
	patch32(d, f8 + 0x28 + 13 * 4, 0xfffffff0u);
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	assert_int_equal(nostall_open_ino(fs, f8_ino, 0, &f), 0);
	assert_int_equal(nostall_pread(f, buf, 1024, 2 * MIB), -EUCLEAN);
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);

	/* 4. xattr block with a bad magic, then an entry whose value overflows */
	char v[100];
	patch32(d, xblk * 1024, 0xdeadbeef);
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.big", v, sizeof v), -EUCLEAN);
	assert_non_null(strstr(nostall_errmsg(-EUCLEAN), "xattr block"));
	/* in-inode attributes are still readable */
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", v, sizeof v), 5);
	assert_int_equal(nostall_umount(fs), 0);
	patch32(d, xblk * 1024, EXT3_XATTR_MAGIC);
	patch32(d, xblk * 1024 + 32 + 8, 0x7fffffff); /* first entry's value size */
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	assert_int_equal(nostall_listxattr(fs, "f2", 0, v, sizeof v), -EUCLEAN);
	assert_int_equal(nostall_umount(fs), 0);
	/* 5. in-inode xattr entry with a huge name length */
	patch(d, f2 + 128 + 32 + 4, "\xff", 1);
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", v, sizeof v), -EUCLEAN);
	assert_int_equal(nostall_umount(fs), 0);

	/* 6. a directory cycle: dir's ".." and an entry pointing at the root
	 * make unbounded paths; the walk stays bounded by the path length */
	patch32(d, dirblk * 1024 + 12, 2); /* ".." -> root, fine */
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	char *path = malloc(8000);
	path[0] = '\0';
	while (strlen(path) < 4000)
		strcat(path, "dir/../");
	uint64_t ino;
	assert_int_equal(nostall_lookup(fs, path, 0, &ino), 0);
	assert_int_equal(ino, 2);
	strcat(path, "dir/..");
	while (strlen(path) < 5000)
		strcat(path, "/dir");
	assert_int_equal(nostall_lookup(fs, path, 0, &ino), -ENAMETOOLONG);
	/* 41 symlink expansions in one walk: ELOOP */
	path[0] = '\0';
	for (int i = 0; i < 41; i++)
		strcat(path, "fastlink/../../"); /* /dir/sub, then back to / */
	assert_int_equal(nostall_lookup(fs, path, 0, &ino), -ELOOP);
	free(path);
	assert_int_equal(nostall_umount(fs), 0);

	/* 7. a symlink with an absurd size and a directory entry pointing to a
	 * free inode */
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	assert_int_equal(nostall_stat(fs, "slowlink", NOSTALL_NOFOLLOW, &st), 0);
	uint64_t sl = inode_off(fs, st.ino);
	assert_int_equal(nostall_umount(fs), 0);
	patch32(d, sl + 4, 1u << 30);
	patch32(d, dirblk * 1024 + 24, info.inodes_count - 1); /* "sub" -> a free inode */
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	char t[64];
	assert_int_equal(nostall_readlink(fs, "slowlink", t, sizeof t), -EUCLEAN);
	assert_int_equal(nostall_lookup(fs, "dir/sub", 0, &ino), -EUCLEAN);
	assert_non_null(strstr(nostall_errmsg(-EUCLEAN), "free inode"));
	assert_int_equal(nostall_umount(fs), 0);
	free(buf);
	dev_close(d);
}

/* A damaged htree index: lookups fall back to a linear scan. */
static void test_hostile_htree(void **state)
{
	(void)state;
	NEED_E2FS();
	struct dev *d = mem_from_file(img_big);
	struct nostall_fs *fs;
	assert_int_equal(mount_dev_rc(d, &fs), 0);
	uint64_t root0 = raw_iblock(d, fs, "big", 0);
	uint64_t dir;
	assert_int_equal(nostall_lookup(fs, "big", 0, &dir), 0);
	assert_int_equal(nostall_umount(fs), 0);
	for (int k = 0; k < 4; k++) {
		switch (k) {
		case 0: patch16(d, root0 * 1024 + 0x22, 0); break;       /* count 0 */
		case 1: patch16(d, root0 * 1024 + 0x20, 9); break;       /* limit wrong */
		case 2: patch(d, root0 * 1024 + 0x1E, "\x05", 1); break; /* indirect_levels 5 */
		case 3: patch32(d, root0 * 1024 + 0x24, 99999); break;   /* child past the dir */
		}
		assert_int_equal(mount_dev_rc(d, &fs), 0);
		uint64_t ino;
		int rc = nostall_lookup_at(fs, dir, "entry_01234_x", &ino);
		if (rc)
			fail_msg("case %d: %s", k, nostall_errmsg(rc));
		assert_int_equal(nostall_lookup_at(fs, dir, "entry_99999_x", &ino), -ENOENT);
		assert_int_equal(nostall_umount(fs), 0);
	}
	dev_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_vs_debugfs),
		cmocka_unit_test(test_dirblock_parse),
		cmocka_unit_test(test_xattr_region_parse),
		cmocka_unit_test(test_mkfs_image),
		cmocka_unit_test(test_mount_opts_and_icache),
		cmocka_unit_test(test_files_vs_host),
		cmocka_unit_test(test_dirs_links_specials),
		cmocka_unit_test(test_xattrs),
		cmocka_unit_test(test_htree_big),
		cmocka_unit_test(test_htree_hash_variants),
		cmocka_unit_test(test_4k_image),
		cmocka_unit_test(test_concurrent_reads),
		cmocka_unit_test(test_kernel_written),
		cmocka_unit_test(test_hostile_super),
		cmocka_unit_test(test_hostile_mkfs_dirs),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_hostile_htree),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
