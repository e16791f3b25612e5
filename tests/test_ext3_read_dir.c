/* ext3 read path, directories: dx hashes against debugfs, directory block
 * parsing, listings, paths and symlinks, special files, htree lookups in
 * every hash variant, and a kernel-written image (root only).
 *
 * nostall-test: concurrent (every mount runs the block queue's dispatcher thread)
 */
#include "test_ext3_read_env.h"

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
	/* The debugfs field reader the checks rely on: no output, no field. */
	assert_false(cmd_field("true", "x", val, sizeof val));
	assert_true(cmd_field("echo 'Links: 7'", "Links: ", val, sizeof val));
	assert_int_equal(atoi(val), 7);
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

static int group_setup(void **state)
{
	(void)state;
	return ext3_read_env_setup(IMG_MAIN | IMG_BIG | IMG_4K);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_vs_debugfs),
		cmocka_unit_test(test_dirblock_parse),
		cmocka_unit_test(test_dirs_links_specials),
		cmocka_unit_test(test_htree_big),
		cmocka_unit_test(test_htree_hash_variants),
		cmocka_unit_test(test_kernel_written),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
