/* ext3 file data on a writable mount (src/ext3/file_data.c, file_write.c;
 * docs/write-data.md): writes, holes, indirect levels, O_APPEND, truncate,
 * remount, e2fsck, data=ordered's order on a log: device, fsync durability,
 * the page budget, concurrent writers with fsync.
 * nostall-test: concurrent
 *
 * Files are created empty by debugfs before the mount (this part does not
 * create names); mke2fs, debugfs and e2fsck must be installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "ext3/ext3_fsops.h"
#include "ext3/ext3_int.h"
#include "ext3/file_data.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024ull
#define MIB (1024ull * 1024)

static char tmpdir[256];

static const struct {
	const char *name;
	int mode;
} modes[] = {
	{"journal", EXT3_DATA_JOURNAL},
	{"ordered", EXT3_DATA_ORDERED},
	{"writeback", EXT3_DATA_WRITEBACK},
};
#define NMODES (sizeof modes / sizeof modes[0])

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

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 7;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

/* A fresh ext3 image with empty files f1..f<nfiles>. */
static void mkimg(const char *img, unsigned bs, unsigned mib, int nfiles)
{
	assert_int_equal(run("mke2fs -q -t ext3 -b %u -F '%s' %uM >/dev/null 2>&1", bs, img, mib), 0);
	char cmds[300];
	snprintf(cmds, sizeof cmds, "%s/cmds", tmpdir);
	FILE *f = fopen(cmds, "w");
	assert_non_null(f);
	for (int i = 1; i <= nfiles; i++)
		fprintf(f, "write /dev/null f%d\n", i);
	fclose(f);
	assert_int_equal(run("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmds, img), 0);
}

static struct ext3_fs *mount_spec(const char *spec, const char *opts, unsigned flags, struct dev **devp)
{
	struct dev *d = NULL;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	if (opts && ext3_mount_opts_parse(&o, opts))
		fail_msg("options %s: %s", opts, err_last(-EINVAL));
	struct ext3_fs *fs = NULL;
	rc = ext3_fs_mount(d, &o, flags, &fs);
	ext3_mount_opts_release(&o);
	if (rc)
		fail_msg("mount %s (%s): %s", spec, opts ? opts : "", err_last(rc));
	*devp = d;
	return fs;
}

static struct ext3_fs *mount_rw(const char *img, const char *opts, struct dev **devp)
{
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", img);
	return mount_spec(spec, opts, EXT3_MOUNT_JOURNAL, devp);
}

/* Mount spec with data=MODE, a long commit interval and `extra` options. */
static struct ext3_fs *mount_mode(const char *spec, const char *mode, const char *extra, struct dev **devp)
{
	char opts[200];
	snprintf(opts, sizeof opts, "data=%s,commit=60%s", mode, extra);
	return mount_spec(spec, opts, EXT3_MOUNT_JOURNAL, devp);
}

static void umount_ok(struct ext3_fs *fs, struct dev *d)
{
	int rc = ext3_fs_unmount(fs);
	if (rc)
		fail_msg("unmount: %s", err_last(rc));
	dev_close(d);
}

static struct ext3_inode *get(struct ext3_fs *fs, const char *path)
{
	uint32_t ino;
	int rc = ext3_path_lookup(fs, path, true, &ino);
	if (rc)
		fail_msg("lookup %s: %s", path, err_last(rc));
	struct ext3_inode *in;
	assert_int_equal(ext3_iget(fs, ino, &in), 0);
	return in;
}

static void wr(struct ext3_inode *in, const void *b, size_t n, uint64_t off)
{
	ssize_t w = ext3_file_write(in, b, n, off, 0, NULL);
	if (w != (ssize_t)n)
		fail_msg("write %zu at %llu: %zd (%s)", n, (unsigned long long)off, w,
			 w < 0 ? err_last((int)w) : "short");
}

/* Read [off, off+n) through the write path and compare with want (NULL:
 * zeroes). */
static void check_read(struct ext3_inode *in, const uint8_t *want, size_t n, uint64_t off)
{
	uint8_t *got = malloc(n ? n : 1);
	assert_non_null(got);
	ssize_t r = ext3_file_read(in, NULL, got, n, off);
	if (r != (ssize_t)n)
		fail_msg("read %zu at %llu: %zd", n, (unsigned long long)off, r);
	for (size_t i = 0; i < n; i++) {
		uint8_t w = want ? want[i] : 0;
		if (got[i] != w)
			fail_msg("byte %llu: got %u want %u", (unsigned long long)(off + i), got[i], w);
	}
	free(got);
}

/* The same through the read-only path (ext3_inode_pread). */
static void check_pread(struct ext3_fs *fs, struct ext3_inode *in, const uint8_t *want, size_t n,
			uint64_t off)
{
	uint8_t *got = malloc(n ? n : 1);
	assert_non_null(got);
	assert_int_equal(ext3_inode_pread(fs, in, got, n, off), (ssize_t)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t w = want ? want[i] : 0;
		if (got[i] != w)
			fail_msg("remount byte %llu: got %u want %u", (unsigned long long)(off + i), got[i], w);
	}
	free(got);
}

/* Data blocks debugfs counts for a file (holes are not counted). */
static int debugfs_blocks(const char *img, const char *path)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "debugfs -R 'blocks %s' '%s' 2>/dev/null", path, img);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int n = 0;
	char word[64];
	while (fscanf(p, "%63s", word) == 1)
		n++;
	pclose(p);
	return n;
}

static void fsck_clean(const char *img)
{
	int rc = run("e2fsck -fn '%s' >%s/fsck.out 2>&1", img, tmpdir);
	if (rc != 0) {
		(void)run("cat %s/fsck.out", tmpdir);
		fail_msg("e2fsck -fn: exit %d on %s", rc, img);
	}
}

static void tmpname(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", tmpdir, name);
}

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
	assert_int_equal(run("cp '%s' '%s'", img, base), 0);
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
 * the mount that wrote it, the same reads go through the page or buffer
 * cache instead (the file was written there). */
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
			if (pass == 0) {
				assert_int_equal(st.direct_bytes, 0);
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
		pthread_rwlock_wrlock(&f->lock);
		f->a.atime = a0.mtime - 1;
		pthread_rwlock_unlock(&f->lock);
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

/* ---- setup ---- */

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nostall-data-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	(void)run("rm -rf '%s'", tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_ordered_log),
		cmocka_unit_test(test_fsync_writer),
		cmocka_unit_test(test_fsync_durable),
		cmocka_unit_test(test_async_commit),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_atime),
		cmocka_unit_test(test_stream_readback),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
