/* ext3 file data on a writable mount (src/extfs/data/file_data.c, file_write.c;
 * docs/write-data.md): writes, holes, indirect levels, O_APPEND, truncate,
 * remount, e2fsck, the page budget, concurrent writers with fsync, atime,
 * streaming reads. Ordering and durability: test_ext3_data_order.c.
 * nostall-test: concurrent
 *
 * Files are created empty by debugfs before the mount (this part does not
 * create names); mke2fs, debugfs and e2fsck must be installed. */#include "test_ext3_data_env.h"

/* ---- write, holes, indirect levels, append, truncate, remount ---- */

struct layout {
	uint64_t sparse1, sparse2;  /* offsets in the double and triple indirect ranges */
};

static void layout_for(unsigned bs, struct layout *l)
{
	uint64_t apb = bs / 4;
	l->sparse1 = (12 + apb + 3) * bs + 100;                  /* double indirect */
	l->sparse2 = (12 + apb + apb * apb + 5) * bs + bs / 2;    /* triple indirect */
}

static void one_mode(unsigned bs, const char *mode, unsigned seed)
{
	char img[300], opts[64];
	tmpname(img, sizeof img, "basic.img");
	mkimg(img, bs, 64, 4);
	snprintf(opts, sizeof opts, "data=%s", mode);
	struct dev *d;
	struct ext3_fs *fs = mount_rw(img, opts, &d);
	assert_int_equal(ext3_fs_opts(fs)->data_mode == EXT3_DATA_JOURNAL, !strcmp(mode, "journal"));

	/* f1: writes at offsets, holes between. */
	const size_t f1len = 1 * MIB + 3000;
	uint8_t *m1 = calloc(1, f1len);
	assert_non_null(m1);
	struct ext3_inode *f1 = get(fs, "/f1");
	fill(m1, 100, seed + 1);
	wr(f1, m1, 100, 0);
	fill(m1 + 5 * bs + 17, bs, seed + 2);
	wr(f1, m1 + 5 * bs + 17, bs, 5 * bs + 17);
	fill(m1 + MIB, 3000, seed + 3);
	wr(f1, m1 + MIB, 3000, MIB);
	assert_int_equal(ext3_inode_size(f1), f1len);
	check_read(f1, m1, f1len, 0);
	/* debugfs counts the indirect blocks too: 1 MiB is in the double
	 * indirect range with 1 KiB blocks (dind + one ind), in the single one
	 * with 4 KiB blocks. */
	int f1blocks = 1 + 2 + (int)((MIB + 2999) / bs - MIB / bs + 1) + (bs == 1024 ? 2 : 1);

	/* f2: 3 MiB in random-size chunks, then sparse writes deep in the tree. */
	const size_t f2len = 3 * MIB;
	uint8_t *m2 = malloc(f2len);
	assert_non_null(m2);
	fill(m2, f2len, seed + 4);
	struct ext3_inode *f2 = get(fs, "/f2");
	srand(seed);
	for (size_t pos = 0; pos < f2len;) {
		size_t n = 1 + (size_t)rand() % (200 * KIB);
		if (n > f2len - pos)
			n = f2len - pos;
		wr(f2, m2 + pos, n, pos);
		pos += n;
	}
	struct layout l;
	layout_for(bs, &l);
	uint8_t s1[5000], s2[300];
	fill(s1, sizeof s1, seed + 5);
	fill(s2, sizeof s2, seed + 6);
	wr(f2, s1, sizeof s1, f2len + l.sparse1);
	wr(f2, s2, sizeof s2, l.sparse2);
	assert_int_equal(ext3_inode_size(f2), l.sparse2 + sizeof s2);
	check_read(f2, m2, f2len, 0);
	check_read(f2, s1, sizeof s1, f2len + l.sparse1);
	check_read(f2, NULL, 4 * bs, f2len + 10 * bs); /* a hole */
	check_read(f2, s2, sizeof s2, l.sparse2);

	/* f3: O_APPEND. */
	struct ext3_inode *f3 = get(fs, "/f3");
	uint8_t m3[3000];
	fill(m3, sizeof m3, seed + 7);
	for (int i = 0; i < 3; i++) {
		uint64_t at = 99;
		ssize_t w = ext3_file_write(f3, m3 + i * 1000, 1000, 12345, EXT3_WRITE_APPEND, &at);
		assert_int_equal(w, 1000);
		assert_int_equal(at, (uint64_t)i * 1000);
	}
	check_read(f3, m3, sizeof m3, 0);

	/* f4: truncate down into a block, then up: the old tail reads zeroes. */
	struct ext3_inode *f4 = get(fs, "/f4");
	size_t f4len = 10 * bs + 123;
	uint8_t *m4 = malloc(f4len);
	assert_non_null(m4);
	fill(m4, f4len, seed + 8);
	wr(f4, m4, f4len, 0);
	uint64_t cut = 3 * bs + 10;
	assert_int_equal(ext3_file_setsize(f4, cut), 0);
	assert_int_equal(ext3_inode_size(f4), cut);
	assert_int_equal(ext3_file_setsize(f4, 8 * bs), 0);
	memset(m4 + cut, 0, f4len - cut);
	check_read(f4, m4, 8 * bs, 0);
	assert_int_equal(ext3_file_setsize(f4, ext3_data_max_size(fs) + 1), -EFBIG);

	/* A directory is refused. */
	struct ext3_inode *root = get(fs, "/");
	assert_int_equal(ext3_file_write(root, m3, 10, 0, 0, NULL), -EISDIR);
	ext3_iput(root);

	uint64_t fb, fi;
	ext3_fs_free_counts(fs, &fb, &fi);
	assert_true(fb > 0 && fi > 0);
	assert_int_equal(ext3_fs_sync(fs), 0);
	ext3_iput(f1);
	ext3_iput(f2);
	ext3_iput(f3);
	ext3_iput(f4);
	umount_ok(fs, d);

	fsck_clean(img);
	assert_int_equal(debugfs_blocks(img, "/f1"), f1blocks);
	assert_int_equal(debugfs_blocks(img, "/f4"), 4);

	/* Read back after a remount (read-only mount: the read path). */
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", img);
	fs = mount_spec(spec, NULL, 0, &d);
	f1 = get(fs, "/f1");
	f2 = get(fs, "/f2");
	f3 = get(fs, "/f3");
	f4 = get(fs, "/f4");
	check_pread(fs, f1, m1, f1len, 0);
	check_pread(fs, f2, m2, f2len, 0);
	check_pread(fs, f2, s1, sizeof s1, f2len + l.sparse1);
	check_pread(fs, f2, s2, sizeof s2, l.sparse2);
	check_pread(fs, f3, m3, sizeof m3, 0);
	check_pread(fs, f4, m4, 8 * bs, 0);
	ext3_iput(f1);
	ext3_iput(f2);
	ext3_iput(f3);
	ext3_iput(f4);
	umount_ok(fs, d);
	free(m1);
	free(m2);
	free(m4);
}

static void test_modes(void **state)
{
	(void)state;
	unsigned seed = (unsigned)getpid();
	print_message("seed %u\n", seed);
	const unsigned bss[] = {1024, 4096};
	for (size_t b = 0; b < 2; b++) {
		for (size_t m = 0; m < NMODES; m++) {
			print_message("data=%s, %u-byte blocks\n", modes[m].name, bss[b]);
			one_mode(bss[b], modes[m].name, seed + (unsigned)(b * 10 + m));
		}
	}
}

/* ---- the page budget ---- */

static void test_budget(void **state)
{
	(void)state;
	const unsigned bs = 1024;
	char img[300];
	tmpname(img, sizeof img, "budget.img");
	for (int wb = 0; wb < 2; wb++) {
		mkimg(img, bs, 32, 1);
		struct dev *d;
		struct ext3_fs *fs = mount_rw(img, wb ? "data=writeback,cache=256K" : "data=ordered,cache=256K", &d);
		struct ext3_inode *f = get(fs, "/f1");
		size_t len = 4 * 256 * KIB, chunk = 48 * KIB;
		uint8_t *buf = malloc(len);
		assert_non_null(buf);
		fill(buf, len, 31 + (unsigned)wb);
		for (size_t pos = 0; pos < len; pos += chunk)
			wr(f, buf + pos, pos + chunk > len ? len - pos : chunk, pos);
		struct page_stats ps;
		page_cache_stats(fs->pcache, &ps);
		print_message("budget %llu pages, peak %llu, written %llu\n", (unsigned long long)ps.max_pages,
			      (unsigned long long)ps.peak_pages, (unsigned long long)ps.pages_written);
		assert_int_equal(ps.max_pages, 256 * KIB / bs);
		assert_true(ps.peak_pages <= ps.max_pages);
		assert_true(ps.pages_written > 0);
		check_read(f, buf, len, 0);
		ext3_iput(f);
		umount_ok(fs, d);
		fsck_clean(img);
		free(buf);
	}
}

/* ---- concurrent writers, fsync, sync ---- */

struct cw {
	struct ext3_fs *fs;
	int idx;
	int rc;
};

static void *cw_main(void *arg)
{
	struct cw *c = arg;
	char path[16];
	snprintf(path, sizeof path, "/f%d", c->idx + 1);
	uint32_t ino;
	c->rc = ext3_path_lookup(c->fs, path, true, &ino);
	struct ext3_inode *in = NULL;
	if (!c->rc)
		c->rc = ext3_iget(c->fs, ino, &in);
	uint8_t buf[8192], got[8192];
	for (int i = 0; !c->rc && i < 40; i++) {
		fill(buf, sizeof buf, (unsigned)(c->idx * 1000 + i));
		if (ext3_file_write(in, buf, sizeof buf, (uint64_t)i * sizeof buf, 0, NULL) != (ssize_t)sizeof buf)
			c->rc = -EIO;
		else if (i % 10 == 9 && ext3_file_fsync(in, false))
			c->rc = -EIO;
		else if (ext3_file_read(in, NULL, got, sizeof got, (uint64_t)i * sizeof buf) != (ssize_t)sizeof got ||
			 memcmp(got, buf, sizeof got))
			c->rc = -EILSEQ;
	}
	ext3_iput(in);
	return NULL;
}

static void test_concurrent(void **state)
{
	(void)state;
	char img[300];
	tmpname(img, sizeof img, "conc.img");
	for (size_t m = 0; m < NMODES; m++) {
		mkimg(img, 4096, 64, 4);
		char opts[64];
		snprintf(opts, sizeof opts, "data=%s", modes[m].name);
		struct dev *d;
		struct ext3_fs *fs = mount_rw(img, opts, &d);
		pthread_t t[4];
		struct cw c[4];
		for (int i = 0; i < 4; i++) {
			c[i] = (struct cw){.fs = fs, .idx = i};
			assert_int_equal(pthread_create(&t[i], NULL, cw_main, &c[i]), 0);
		}
		for (int i = 0; i < 4; i++)
			assert_int_equal(ext3_fs_sync(fs), 0);
		for (int i = 0; i < 4; i++) {
			pthread_join(t[i], NULL);
			if (c[i].rc)
				fail_msg("data=%s writer %d: %d", modes[m].name, i, c[i].rc);
		}
		umount_ok(fs, d);
		fsck_clean(img);
	}
}

/* ---- atime: relatime updates once after a write, noatime never ---- */

/* ---- streaming read back (issue 8's stream workload) ---- */

/* A file written sequentially in each data mode, then read back after a
 * remount as the stream benchmark does: the whole read takes the reader's
 * segments (the per-mount "written" mark is gone), the mapping guesses made
 * on the writer's layout are all right, and the readahead stays full. In
 * the mount that wrote it, the same reads take the segments too (overlaid
 * with the page cache's copies), except in data=journal (the buffer cache). */
static void test_stream_readback(void **state)
{
	(void)state;
	char img[300];
	tmpname(img, sizeof img, "stream.img");
	const size_t size = 20 * MIB + 4096, chunk = MIB;
	uint8_t *data = malloc(size), *got = malloc(chunk);
	assert_non_null(data);
	assert_non_null(got);
	fill(data, size, 77);
	static const char *const smodes[] = {"journal", "ordered", "writeback", "guarded"};
	for (size_t m = 0; m < 4; m++) {
		char opts[64];
		snprintf(opts, sizeof opts, "data=%s", smodes[m]);
		mkimg(img, 4096, 128, 1);
		struct dev *d;
		struct ext3_fs *fs = mount_rw(img, opts, &d);
		struct ext3_inode *in = get(fs, "/f1");
		assert_int_equal(ext3_file_open(in, EXT3_OPEN_WRITE), 0);
		for (size_t off = 0; off < size; off += chunk)
			wr(in, data + off, size - off < chunk ? size - off : chunk, off);
		assert_int_equal(ext3_file_fsync(in, false), 0);
		assert_int_equal(ext3_file_release(in, EXT3_OPEN_WRITE), 0);
		for (int pass = 0; pass < 2; pass++) {
			struct ext3_fread *rd;
			assert_int_equal(ext3_fread_create(fs, in, 4 * MIB, &rd), 0);
			for (size_t off = 0; off < size; off += chunk) {
				size_t n = size - off < chunk ? size - off : chunk;
				assert_int_equal(ext3_file_read(in, rd, got, n, off), (ssize_t)n);
				assert_memory_equal(got, data + off, n);
			}
			struct ext3_fread_stats st;
			ext3_fread_stats(rd, &st);
			print_message("data=%s %s: direct %llu slow %llu, %llu segments, %llu guessed, "
				      "%llu wrong, ahead_min %llu\n", smodes[m],
				      pass ? "after remount" : "same mount", (unsigned long long)st.direct_bytes,
				      (unsigned long long)st.slow_bytes, (unsigned long long)st.windows,
				      (unsigned long long)st.guesses, (unsigned long long)st.guess_misses,
				      (unsigned long long)st.ahead_min);
			if (pass == 0 && m == 0) {
				/* data=journal: its blocks are in the buffer cache. */
				assert_int_equal(st.direct_bytes, 0);
			} else if (pass == 0) {
				/* Read back in the mount that wrote it: a request whose
				 * pages are all still cached is read from the page
				 * cache, any other from the segments, overlaid with
				 * what the page cache holds (the readback that ran at
				 * 25 MB/s through the mount read page by page). */
				assert_int_equal(st.direct_bytes + st.slow_bytes, size);
				assert_int_equal(st.stale, 0);
			} else {
				assert_int_equal(st.direct_bytes, size);
				assert_int_equal(st.slow_bytes, 0);
				assert_int_equal(st.fallbacks, 0);
				assert_int_equal(st.guess_misses, 0);
				assert_true(st.ahead_samples > 0);
				assert_true(st.ahead_min >= 7 * MIB);
			}
			ext3_fread_destroy(rd);
			ext3_iput(in);
			umount_ok(fs, d);
			fs = mount_rw(img, opts, &d);
			in = get(fs, "/f1");
		}
		ext3_iput(in);
		umount_ok(fs, d);
		fsck_clean(img);
	}
	free(data);
	free(got);
}

/* Reading around the page cache in the mount that wrote the file
 * (file_read.c, win_current): a segment read from the disk before a write
 * gives the written bytes (the dirty pages overlay it); a segment read
 * while pages were dirty, whose pages were then written back and dropped
 * before the reader got there, is stale and read again; a truncate and
 * re-extension behind a live stream reads as a hole. Each step against the
 * model of the file. */
static void stale_mode(const char *mode)
{
	char img[300], opts[64];
	tmpname(img, sizeof img, "stale.img");
	mkimg(img, 4096, 64, 1);
	snprintf(opts, sizeof opts, "data=%s", mode);
	struct dev *d;
	struct ext3_fs *fs = mount_rw(img, opts, &d);
	const size_t size = 12 * MIB;
	uint8_t *model = malloc(size), *got = malloc(size), *pat = malloc(MIB);
	assert_non_null(model);
	assert_non_null(got);
	assert_non_null(pat);
	fill(model, size, 5);
	struct ext3_inode *in = get(fs, "/f1");
	assert_int_equal(ext3_file_open(in, EXT3_OPEN_WRITE), 0);
	for (size_t off = 0; off < size; off += MIB)
		wr(in, model + off, MIB, off);
	assert_int_equal(ext3_file_fsync(in, false), 0);
	(void)page_mapping_invalidate(in->mapping, 0, PAGE_INDEX_MAX);

	/* 1. Dirty pages written after the segments were read: overlaid. */
	struct ext3_fread *rd;
	assert_int_equal(ext3_fread_create(fs, in, 16 * MIB, &rd), 0);
	assert_int_equal(ext3_file_read(in, rd, got, 4 * MIB, 0), (ssize_t)(4 * MIB));
	assert_memory_equal(got, model, 4 * MIB);
	fill(pat, MIB, 6);
	memcpy(model + 5 * MIB + 100, pat, MIB / 2);
	wr(in, pat, MIB / 2, 5 * MIB + 100);
	assert_int_equal(ext3_file_read(in, rd, got + 4 * MIB, 4 * MIB, 4 * MIB), (ssize_t)(4 * MIB));
	assert_memory_equal(got + 4 * MIB, model + 4 * MIB, 4 * MIB);
	struct ext3_fread_stats st;
	ext3_fread_stats(rd, &st);
	assert_int_equal(st.slow_bytes, 0);
	assert_int_equal(st.stale, 0);
	ext3_fread_destroy(rd);

	/* 2. Segments read while pages were dirty, the pages then written
	 * back and dropped: stale, read again. */
	fill(pat, MIB, 7);
	memcpy(model + 6 * MIB, pat, MIB);
	wr(in, pat, MIB, 6 * MIB);
	assert_int_equal(ext3_fread_create(fs, in, 16 * MIB, &rd), 0);
	assert_int_equal(ext3_file_read(in, rd, got, 4 * MIB, 0), (ssize_t)(4 * MIB));
	assert_int_equal(ext3_file_fsync(in, false), 0);
	assert_true(page_mapping_invalidate(in->mapping, 0, PAGE_INDEX_MAX) > 0);
	assert_int_equal(page_mapping_nr_pages(in->mapping), 0);
	assert_int_equal(ext3_file_read(in, rd, got + 4 * MIB, size - 4 * MIB, 4 * MIB),
			 (ssize_t)(size - 4 * MIB));
	assert_memory_equal(got, model, size);
	ext3_fread_stats(rd, &st);
	print_message("data=%s: stale segments %llu, direct %llu, slow %llu\n", mode,
		      (unsigned long long)st.stale, (unsigned long long)st.direct_bytes,
		      (unsigned long long)st.slow_bytes);
	assert_true(st.stale > 0);
	assert_int_equal(st.direct_bytes, size);

	/* 3. Truncated to 0 and extended again behind a live stream (no page
	 * cached): the hole reads as zeroes, not as the freed blocks. */
	(void)page_mapping_invalidate(in->mapping, 0, PAGE_INDEX_MAX);
	assert_int_equal(ext3_file_read(in, rd, got, MIB, 0), (ssize_t)MIB);
	assert_int_equal(ext3_file_setsize(in, 0), 0);
	assert_int_equal(ext3_file_setsize(in, size), 0);
	assert_int_equal(ext3_file_read(in, rd, got, size - MIB, MIB), (ssize_t)(size - MIB));
	memset(model, 0, size);
	assert_memory_equal(got, model, size - MIB);
	ext3_fread_destroy(rd);

	assert_int_equal(ext3_file_release(in, EXT3_OPEN_WRITE), 0);
	ext3_iput(in);
	umount_ok(fs, d);
	fsck_clean(img);
	free(model);
	free(got);
	free(pat);
}

static void test_readback_stale(void **state)
{
	(void)state;
	stale_mode("guarded");
	stale_mode("ordered");
	stale_mode("writeback");
}

static void test_atime(void **state)
{
	(void)state;
	char img[300];
	tmpname(img, sizeof img, "atime.img");
	for (int noatime = 0; noatime < 2; noatime++) {
		mkimg(img, 1024, 16, 1);
		struct dev *d;
		struct ext3_fs *fs = mount_rw(img, noatime ? "noatime" : "relatime", &d);
		struct ext3_inode *f = get(fs, "/f1");
		uint8_t b[100];
		fill(b, sizeof b, 41);
		wr(f, b, sizeof b, 0);
		struct ext3_inode_attr a0, a1;
		ext3_inode_attr_get(f, &a0);
		/* Pretend the file was last read long ago, before the write. */
		ext3_inode_wrlock(f);
		f->a.atime = a0.mtime - 1;
		ext3_inode_unlock(f);
		check_read(f, b, sizeof b, 0);
		ext3_inode_attr_get(f, &a1);
		if (noatime)
			assert_int_equal(a1.atime, a0.mtime - 1);
		else
			assert_true(a1.atime >= a0.mtime);
		ext3_iput(f);
		umount_ok(fs, d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_atime),
		cmocka_unit_test(test_stream_readback),
		cmocka_unit_test(test_readback_stale),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
