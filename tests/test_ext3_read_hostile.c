/* ext3 read path, hostile images: corrupted superblocks, group descriptors,
 * directories, block maps, xattrs, symlinks and htree indexes (nostall mkfs
 * or e2fsprogs images copied to a mem: device and patched there). Every
 * case must fail cleanly with an error, never crash or loop.
 *
 * nostall-test: concurrent (every mount runs the block queue's dispatcher thread)
 */
#include "test_ext3_read_env.h"

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
		{0x60, 4, 0x2 | 0x8000, -EOPNOTSUPP, "inline_data"},
		{0x60, 4, 0x2 | 0x80, -EUCLEAN, "descriptor size"}, /* 64bit, s_desc_size 0 */
		{0x60, 4, 0x2 | 0x80000000u, -EOPNOTSUPP, "FEATURE_I31"},
		{0x60, 4, 0x2 | 0x100, -EOPNOTSUPP, "mmp"},
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
	/* meta_bg is understood (2.6.30's ext3 has it), but not a first meta
	 * group past the descriptor table */
	struct dev *mb = mkfs_mem(size, 1024, 128);
	patch32(mb, SB + 0x60, 0x2 | 0x10);
	patch32(mb, SB + 0x104, 5000);
	expect_mount_fail(mb, -EUCLEAN, "first meta block group");
	dev_close(mb);
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

static int group_setup(void **state)
{
	(void)state;
	return ext3_read_env_setup(IMG_MAIN | IMG_BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_super),
		cmocka_unit_test(test_hostile_mkfs_dirs),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_hostile_htree),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
