/* ext3 read path through the public API (include/nostall/nostall.h): mount
 * options, superblock and group info, the inode cache, file data against the
 * host files, 1 KiB and 4 KiB images, concurrent readers. Directories and
 * htree: test_ext3_read_dir.c; xattrs: test_ext3_read_xattr.c; hostile
 * images: test_ext3_read_hostile.c; shared fixtures: test_ext3_read_env.h.
 *
 * Oracles: e2fsprogs (mke2fs images populated with debugfs, `debugfs -R stat`
 * / `ls -p` / `dx_hash`), the host files written into the images, the host
 * kernel (loop mount, root only), and nostall's own mkfs for the hostile
 * image cases (corrupted in memory on a mem: device).
 *
 * nostall-test: concurrent (one test reads files from several threads)
 */
#include "test_ext3_read_env.h"

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

/* ext3's mount options (Linux names), the data mode, the writable-journal
 * mount's needs_recovery lifecycle and the shared inode cache. */
static void test_mount_opts_and_icache(void **state)
{
	(void)state;
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	assert_int_equal(o.file_readahead, 2u << 20);
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
		/* read-write mounts exist now (the write path): a default mount
		 * is writable; "ro" below still refuses writes (O_CREAT) */
		int rw = nostall_mount_dev(d, NULL, 0, &fs);
		if (rw)
			fail_msg("read-write mount: %s", nostall_errmsg(rw));
		struct nostall_info rwinfo;
		assert_int_equal(nostall_info(fs, &rwinfo), 0);
		assert_int_equal(rwinfo.read_only, 0);
		assert_int_equal(nostall_umount(fs), 0);
		fs = NULL;
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

static int group_setup(void **state)
{
	(void)state;
	return ext3_read_env_setup(IMG_MAIN | IMG_4K);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkfs_image),
		cmocka_unit_test(test_mount_opts_and_icache),
		cmocka_unit_test(test_files_vs_host),
		cmocka_unit_test(test_4k_image),
		cmocka_unit_test(test_concurrent_reads),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
