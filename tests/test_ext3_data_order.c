/* ext3 file data: order and durability (src/extfs/data/file_data.c;
 * docs/write-data.md): data=ordered writes a transaction's data before its
 * commit block on a log: device (and writeback does not), fsync beside a
 * writer in each fsync path and era preset, the state at an fsync's last
 * flush holds the file (fdatasync, O_SYNC, every mode), and
 * journal_async_commit's one flush per fsync.
 *
 * Files are created empty by debugfs before the mount; mke2fs, debugfs and
 * e2fsck must be installed. */
#include "test_ext3_data_env.h"

/* ---- ordered data on a log: device ---- */

struct logscan {
	uint64_t start, end;      /* indices of the marks */
	uint64_t first_fua;       /* first FUA write after start */
	uint64_t *first_write;    /* per data block of interest: first write index, or UINT64_MAX */
};

static uint64_t find_mark(const char *logfile, const char *text)
{
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logfile, &r), 0);
	struct dev_log_entry e;
	uint64_t idx = UINT64_MAX;
	while (dev_log_reader_next(r, &e) == 1) {
		if ((e.flags & DEV_LOG_MARK) && e.data_len == strlen(text) &&
		    !memcmp(e.data, text, e.data_len))
			idx = e.index;
	}
	dev_log_reader_close(r);
	if (idx == UINT64_MAX)
		fail_msg("mark %s not in the log", text);
	return idx;
}

/* The data blocks of in (all mapped, nblocks of them). */
static uint64_t *data_blocks(struct ext3_fs *fs, struct ext3_inode *in, size_t nblocks)
{
	uint64_t *v = calloc(nblocks, sizeof *v);
	assert_non_null(v);
	for (size_t i = 0; i < nblocks; i++) {
		assert_int_equal(ext3_inode_bmap(fs, in, i, &v[i]), 0);
		assert_true(v[i] != 0);
	}
	return v;
}

/* fsync of file a after writing a and b: which data reached the log: device
 * before the commit block. data=ordered: both (2.6.30 ordered every filed
 * inode's dirty data); data=writeback: a only (fsync files a alone as the
 * data of the commit it forces, nothing else is ordered). */
static void ordered_log(bool ordered)
{
	const unsigned bs = 1024;
	char img[300], logf[300], spec[700];
	tmpname(img, sizeof img, "ord.img");
	tmpname(logf, sizeof logf, "ord.log");
	mkimg(img, bs, 32, 2);
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", img, logf);
	struct dev *d;
	struct ext3_fs *fs = mount_spec(spec, ordered ? "data=ordered,commit=60" : "data=writeback,commit=60",
					EXT3_MOUNT_JOURNAL, &d);
	struct ext3_inode *a = get(fs, "/f1"), *b = get(fs, "/f2");
	assert_int_equal(dev_mark(d, "start"), 0);
	size_t alen = 256 * KIB, blen = 64 * KIB;
	uint8_t *buf = malloc(alen);
	assert_non_null(buf);
	fill(buf, alen, 11);
	wr(a, buf, alen, 0);
	wr(b, buf, blen, 0);
	/* fsync of a alone: the commit writes b's data too (2.6.30 ordered). */
	assert_int_equal(ext3_file_fsync(a, false), 0);
	assert_int_equal(dev_mark(d, "end"), 0);
	size_t na = alen / bs, nb = blen / bs;
	uint64_t *ba = data_blocks(fs, a, na), *bb = data_blocks(fs, b, nb);
	struct jbd_stats js;
	jbd_journal_stats(ext3_fs_journal(fs), &js);
	assert_true(ordered ? js.data_inodes >= 2 : js.data_inodes == 1);
	ext3_iput(a);
	ext3_iput(b);

	uint64_t s = find_mark(logf, "start"), e_ = find_mark(logf, "end");
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logf, &r), 0);
	struct dev_log_entry e;
	uint64_t fua = UINT64_MAX, spb = bs / 512;
	uint64_t lasta = 0, lastb = 0;
	size_t seena = 0, seenb = 0;
	while (dev_log_reader_next(r, &e) == 1) {
		if (e.index <= s || e.index >= e_ || (e.flags & DEV_LOG_MARK))
			continue;
		if ((e.flags & DEV_LOG_FUA) && fua == UINT64_MAX) {
			fua = e.index;
			continue;
		}
		if (fua != UINT64_MAX || !e.nr_sectors)
			continue;
		/* Writes before the commit block: which data blocks they cover. */
		for (size_t i = 0; i < na; i++) {
			uint64_t sec = ba[i] * spb;
			if (sec >= e.sector && sec < e.sector + e.nr_sectors) {
				seena++;
				lasta = e.index;
			}
		}
		for (size_t i = 0; i < nb; i++) {
			uint64_t sec = bb[i] * spb;
			if (sec >= e.sector && sec < e.sector + e.nr_sectors) {
				seenb++;
				lastb = e.index;
			}
		}
	}
	dev_log_reader_close(r);
	assert_true(fua != UINT64_MAX);
	print_message("commit block at entry %llu; data of a (%zu blocks) by %llu, of b (%zu) by %llu\n",
		      (unsigned long long)fua, seena, (unsigned long long)lasta, seenb,
		      (unsigned long long)lastb);
	assert_true(seena >= na);
	if (ordered)
		assert_true(seenb >= nb);
	else
		assert_int_equal(seenb, 0);
	umount_ok(fs, d);
	fsck_clean(img);
	free(ba);
	free(bb);
	free(buf);
}

static void test_ordered_log(void **state)
{
	(void)state;
	ordered_log(true);
	ordered_log(false);
}

/* Who writes fsync's data: the commit it forces (nostall's default: the
 * file is filed as the commit's ordered data, one jbd_inode submit), or
 * the fsync itself first, as 2.6.30 did - what an era preset chooses
 * (fsync_in_commit=0), because the 2.6.30-rc1 Jens-loop regression is that
 * write (CFQ idled after it while kjournald's commit waited). */
static void fsync_writer(const char *mode, const char *extra, bool in_commit)
{
	char img[300], spec[400];
	tmpname(img, sizeof img, "fic.img");
	mkimg(img, 1024, 32, 1);
	snprintf(spec, sizeof spec, "file:%s", img);
	struct dev *d;
	struct ext3_fs *fs = mount_mode(spec, mode, extra, &d);
	struct ext3_inode *a = get(fs, "/f1");
	uint8_t buf[8192];
	fill(buf, sizeof buf, 5);
	wr(a, buf, sizeof buf, 0);
	struct jbd_stats j0, j1;
	jbd_journal_stats(ext3_fs_journal(fs), &j0);
	assert_int_equal(ext3_file_fsync(a, false), 0);
	jbd_journal_stats(ext3_fs_journal(fs), &j1);
	print_message("data=%s%s: %llu ordered-data submits by the commit\n", mode, extra,
		      (unsigned long long)(j1.data_inodes - j0.data_inodes));
	if (in_commit)
		assert_int_equal(j1.data_inodes - j0.data_inodes, 1);
	else
		assert_int_equal(j1.data_inodes - j0.data_inodes, 0);
	assert_true(j1.commits > j0.commits);
	ext3_iput(a);
	umount_ok(fs, d);
	fsck_clean(img);
}

static void test_fsync_writer(void **state)
{
	(void)state;
	const char *dmodes[] = { "writeback", "guarded" };
	for (size_t i = 0; i < 2; i++) {
		fsync_writer(dmodes[i], "", true);
		fsync_writer(dmodes[i], ",fsync_in_commit=0", false);
		fsync_writer(dmodes[i], ",preset=2.6.30-rc1", false);
		fsync_writer(dmodes[i], ",preset=2.6.30", false);
		fsync_writer(dmodes[i], ",preset=2.6.30,fsync_in_commit=1", true);
	}
}

/* ---- fsync durability: the state at the fsync's last flush ---- */

static void fsync_mode_opts(const char *mode, const char *extra, bool osync)
{
	const unsigned bs = 1024;
	char img[300], base[300], logf[300], spec[700];
	tmpname(img, sizeof img, "fs.img");
	tmpname(base, sizeof base, "fs.base");
	tmpname(logf, sizeof logf, "fs.log");
	mkimg(img, bs, 32, 1);
	assert_int_equal(fsimg_run("cp '%s' '%s'", img, base), 0);
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", img, logf);
	struct dev *d;
	struct ext3_fs *fs = mount_mode(spec, mode, extra, &d);
	struct ext3_inode *f = get(fs, "/f1");
	size_t len = 100 * KIB + 77;
	uint8_t *buf = malloc(len), *later = malloc(len);
	assert_non_null(buf);
	assert_non_null(later);
	fill(buf, len, 21);
	fill(later, len, 22);
	if (osync) {
		assert_int_equal(ext3_file_write(f, buf, len, 0, EXT3_WRITE_SYNC, NULL), (ssize_t)len);
	} else {
		wr(f, buf, len, 0);
		assert_int_equal(ext3_file_fsync(f, true), 0);
	}
	assert_int_equal(dev_mark(d, "fsynced"), 0);
	wr(f, later, len, len); /* not synced: may or may not be there */
	ext3_iput(f);

	/* Crash at the last flush before the mark: replay that prefix onto the
	 * image as it was before the mount, recover, read. */
	uint64_t m = find_mark(logf, "fsynced");
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logf, &r), 0);
	struct dev_log_entry e;
	uint64_t upto = 0;
	while (dev_log_reader_next(r, &e) == 1 && e.index < m)
		if (e.flags & (DEV_LOG_FLUSH | DEV_LOG_FUA))
			upto = e.index + 1;
	dev_log_reader_close(r);
	assert_true(upto > 0);
	char bspec[400];
	snprintf(bspec, sizeof bspec, "file:%s", base);
	struct dev *bd;
	assert_int_equal(dev_open(bspec, &bd), 0);
	assert_int_equal(dev_log_replay(logf, upto, bd), 0);
	dev_close(bd);
	umount_ok(fs, d);

	struct dev *cd;
	struct ext3_fs *cfs = mount_spec(bspec, NULL, 0, &cd); /* replays the journal */
	struct ext3_inode *cf = get(cfs, "/f1");
	assert_true(ext3_inode_size(cf) >= len);
	check_pread(cfs, cf, buf, len, 0);
	ext3_iput(cf);
	umount_ok(cfs, cd);
	free(buf);
	free(later);
}

static void test_fsync_durable(void **state)
{
	(void)state;
	for (size_t m = 0; m < NMODES; m++) {
		print_message("data=%s: fdatasync, then O_SYNC\n", modes[m].name);
		fsync_mode_opts(modes[m].name, "", false);
		fsync_mode_opts(modes[m].name, "", true);
	}
	/* With the commit block beside the log, the last flush before the
	 * mark is the one after it. */
	const char *amodes[] = { "journal", "writeback" };
	for (size_t m = 0; m < 2; m++) {
		print_message("data=%s,journal_async_commit: fdatasync, then O_SYNC\n", amodes[m]);
		fsync_mode_opts(amodes[m], ",journal_async_commit", false);
		fsync_mode_opts(amodes[m], ",journal_async_commit", true);
	}
}

/* ---- journal_async_commit: one flush per fsync ---- */

/* Flush and FUA entries the device saw between two marks. */
static void flushes_between(const char *logf, const char *from, const char *to, int *flushes, int *fuas)
{
	uint64_t a = find_mark(logf, from), b = find_mark(logf, to);
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logf, &r), 0);
	struct dev_log_entry e;
	*flushes = *fuas = 0;
	while (dev_log_reader_next(r, &e) == 1) {
		if (e.index <= a || e.index >= b)
			continue;
		*flushes += !!(e.flags & DEV_LOG_FLUSH);
		*fuas += !!(e.flags & DEV_LOG_FUA);
	}
	dev_log_reader_close(r);
}

/* An append + fsync costs one cache flush and no FUA write with
 * journal_async_commit, a flush and a FUA commit block without it. */
static void async_flushes(const char *mode, const char *extra, int want_flushes, int want_fuas)
{
	char img[300], logf[300], spec[700];
	tmpname(img, sizeof img, "af.img");
	tmpname(logf, sizeof logf, "af.log");
	mkimg(img, 4096, 32, 1);
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", img, logf);
	struct dev *d;
	struct ext3_fs *fs = mount_mode(spec, mode, extra, &d);
	struct ext3_inode *f = get(fs, "/f1");
	uint8_t buf[3000];
	fill(buf, sizeof buf, 9);
	uint64_t off = ext3_inode_size(f);
	for (int i = 0; i < 3; i++) {
		char m0[16], m1[16];
		snprintf(m0, sizeof m0, "pre%d", i);
		snprintf(m1, sizeof m1, "post%d", i);
		wr(f, buf, sizeof buf, off);
		off += sizeof buf;
		assert_int_equal(dev_mark(d, m0), 0);
		assert_int_equal(ext3_file_fsync(f, false), 0);
		assert_int_equal(dev_mark(d, m1), 0);
		int fl, fu;
		flushes_between(logf, m0, m1, &fl, &fu);
		print_message("data=%s%s: fsync %d: %d flushes, %d FUA writes\n", mode, extra, i, fl, fu);
		assert_int_equal(fl, want_flushes);
		assert_int_equal(fu, want_fuas);
	}
	ext3_iput(f);
	umount_ok(fs, d);
	fsck_clean(img);
}

static void test_async_commit(void **state)
{
	(void)state;
	async_flushes("writeback", ",journal_async_commit", 1, 0);
	async_flushes("journal", ",journal_async_commit", 1, 0);
	/* Without it: the commit block's preflush and its FUA write. */
	async_flushes("writeback", "", 1, 1);
	async_flushes("writeback", ",journal_checksum", 1, 1);
	/* Refused where data must be ordered before the commit (ext4's rule). */
	const char *refused[] = { "data=ordered,journal_async_commit", "data=guarded,journal_async_commit",
				  "journal_async_commit" /* the default mode, guarded */ };
	char img[300];
	tmpname(img, sizeof img, "af2.img");
	mkimg(img, 1024, 32, 1);
	for (size_t i = 0; i < 3; i++) {
		char spec[400];
		snprintf(spec, sizeof spec, "file:%s", img);
		struct dev *d;
		assert_int_equal(dev_open(spec, &d), 0);
		struct ext3_mount_opts o;
		ext3_mount_opts_init(&o);
		assert_int_equal(ext3_mount_opts_parse(&o, refused[i]), 0);
		struct ext3_fs *fs = NULL;
		assert_int_equal(ext3_fs_mount(d, &o, EXT3_MOUNT_JOURNAL, &fs), -EINVAL);
		assert_non_null(strstr(err_last(-EINVAL), "journal_async_commit"));
		ext3_mount_opts_release(&o);
		dev_close(d);
	}
	fsck_clean(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordered_log),
		cmocka_unit_test(test_fsync_writer),
		cmocka_unit_test(test_fsync_durable),
		cmocka_unit_test(test_async_commit),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
