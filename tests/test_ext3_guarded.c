/* data=guarded (src/extfs/data/guarded.c; docs/write-guarded.md): the extents'
 * life (created by allocations past i_disksize, done by completed writes),
 * i_disksize and the orphan entry that follow them, ordered data only for
 * hole fills and partial tails, fsync that writes no other file's data (a
 * log: device, against data=ordered), truncate and unlink with pending
 * extents (also the last close while the logger logs the file: freed once
 * the completion work drained), a failed write (the size stays below it until the page is
 * written again), a journal abort with pending extents, the default mode.
 * Eviction, concurrency and dirty limits: test_ext3_guarded_load.c.
 * nostall-test: concurrent
 * mke2fs, e2fsck and tune2fs must be installed. */

#include "test_ext3_guarded_env.h"

/* ------------------------------------------------------------ lifecycle */

static void lifecycle(unsigned bs)
{
	char img[300];
	mkimg("life.img", bs, 16384, img, sizeof img);
	struct nostall_fs *fs = mnt(img, "data=guarded,commit=60");
	struct ext3_guarded_stats st0, st;
	ext3_guarded_stats(fs->e, &st0);
	uint64_t n = 10 * bs + 100;
	put(fs, "/f", 1, 0, n);
	/* allocated past the on-disk size: pending, on the orphan list, no
	 * ordered data */
	struct snap s = snap_of(fs, "/f");
	assert_int_equal(s.size, n);
	assert_int_equal(s.disksize, 0);
	assert_true(s.orphan);
	assert_false(s.ordered);
	assert_int_equal(s.extents, 1); /* one range: adjacent blocks merge */
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.extents - st0.extents, 11);
	assert_int_equal(st.orphan_adds - st0.orphan_adds, 1);
	/* fsync: the data, then the size, then off the list */
	assert_int_equal(fsync_path(fs, "/f"), 0);
	s = snap_of(fs, "/f");
	assert_int_equal(s.disksize, n);
	assert_false(s.orphan);
	/* The extents are marked done by the page worker's io_done, which
	 * this fsync need not wait for (its commit wrote the data strictly
	 * ordered before the commit block: test_fsync_in_commit); under a
	 * slow or loaded host the marks come after fsync returns. */
	assert_int_equal(ext3_guarded_drain(fs->e), 0);
	s = snap_of(fs, "/f");
	assert_int_equal(s.extents, 0);
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.done - st0.done, 11);
	assert_int_equal(st.orphan_dels - st0.orphan_dels, 1);
	assert_int_equal(st.tail_orders - st0.tail_orders, 0);
	/* an append across the unaligned end: the old last block gets new
	 * bytes that no extent covers, so this write's data is ordered (the
	 * commit that carries the size writes that block first - without it a
	 * crash showed zeroes under the size: crashtest's too_long); the new
	 * block pends */
	put(fs, "/f", 1, n, bs);
	s = snap_of(fs, "/f");
	assert_int_equal(s.disksize, 11 * (uint64_t)bs);
	assert_true(s.ordered);
	assert_true(s.orphan);
	/* sync(2): every completion logged, then committed */
	assert_int_equal(nostall_sync(fs), 0);
	s = snap_of(fs, "/f");
	assert_int_equal(s.disksize, n + bs);
	assert_false(s.orphan);
	/* a truncate inside a block zeroes its tail in the cache only: the
	 * first size move past it is ordered (once) */
	assert_int_equal(nostall_truncate(fs, "/f", n - 50), 0);
	put(fs, "/f", 1, n - 50, 50 + bs);
	s = snap_of(fs, "/f");
	assert_true(s.ordered);
	put(fs, "/f", 1, n + bs, bs);
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.tail_orders - st0.tail_orders, 1);
	assert_int_equal(nostall_sync(fs), 0);
	n += bs;
	/* overwrites inside the size: nothing to guard */
	ext3_guarded_stats(fs->e, &st0);
	put(fs, "/f", 1, 5, 3 * bs);
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.extents, st0.extents);
	assert_int_equal(st.hole_fills, st0.hole_fills);
	umnt(fs);
	fsck_clean(img);
	fs = mnt(img, "data=guarded");
	check(fs, "/f", 1, n + bs, 0, 0);
	umnt(fs);
	unlink(img);
}

static void test_lifecycle_1k(void **state)
{
	lifecycle(1024);
}

static void test_lifecycle_4k(void **state)
{
	lifecycle(4096);
}

/* A hole inside the on-disk size is filled in ordered mode; a truncate up
 * moves the size at once (a hole is safe). */
static void test_hole_fill(void **state)
{
	char img[300];
	unsigned bs = 1024;
	mkimg("hole.img", bs, 16384, img, sizeof img);
	struct nostall_fs *fs = mnt(img, "data=guarded,commit=60");
	put(fs, "/h", 2, 0, bs);
	put(fs, "/h", 2, 20 * bs, bs);
	/* sync, not fsync: fsync orders the file's data into its commit
	 * (test_fsync_in_commit), which would file it */
	assert_int_equal(nostall_sync(fs), 0);
	struct snap s = snap_of(fs, "/h");
	assert_int_equal(s.disksize, 21 * bs);
	assert_false(s.ordered);
	struct ext3_guarded_stats st0, st;
	ext3_guarded_stats(fs->e, &st0);
	put(fs, "/h", 2, 10 * bs, 2 * bs);
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.hole_fills - st0.hole_fills, 1);
	assert_int_equal(st.extents, st0.extents);
	s = snap_of(fs, "/h");
	assert_true(s.ordered);
	assert_false(s.orphan);
	assert_int_equal(nostall_truncate(fs, "/h", 40 * bs), 0);
	s = snap_of(fs, "/h");
	assert_int_equal(s.disksize, 40 * bs);
	/* Past i_disksize (extents pending: nothing written back yet), a
	 * rewrite of a page wholly below i_size is not ordered; new bytes past
	 * i_size in the partial last block are. */
	put(fs, "/r", 3, 0, 8 * bs + 100);
	s = snap_of(fs, "/r");
	assert_true(s.disksize < 2 * bs);
	ext3_guarded_stats(fs->e, &st0);
	put(fs, "/r", 3, 2 * bs, bs);
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.hole_fills, st0.hole_fills);
	assert_false(snap_of(fs, "/r").ordered);
	put(fs, "/r", 3, 8 * bs + 100, 50);
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.hole_fills - st0.hole_fills, 1);
	assert_true(snap_of(fs, "/r").ordered);
	umnt(fs);
	fsck_clean(img);
	fs = mnt(img, NULL);
	struct nostall_stat nst;
	assert_int_equal(nostall_stat(fs, "/h", 0, &nst), 0);
	assert_int_equal(nst.size, 40 * bs);
	check(fs, "/r", 3, 8 * bs + 150, 0, 0);
	umnt(fs);
	unlink(img);
}

/* ------------------------------------------------- fsync writes no other data */

/* Data blocks of `other` written between marks a and b of the log. */
static unsigned other_writes(const char *log, const char *a, const char *b, const uint64_t *blk,
			     size_t nblk, unsigned bs)
{
	struct dev_log_reader *rd;
	assert_int_equal(dev_log_reader_open(log, &rd), 0);
	struct dev_log_entry e;
	int state = 0;
	unsigned hits = 0;
	while (dev_log_reader_next(rd, &e) == 1 && state < 2) {
		if (e.flags & DEV_LOG_MARK) {
			if (e.data_len == strlen(a) && !memcmp(e.data, a, e.data_len))
				state = 1;
			else if (e.data_len == strlen(b) && !memcmp(e.data, b, e.data_len))
				state = 2;
			continue;
		}
		if (state != 1 || !e.nr_sectors)
			continue;
		uint64_t first = e.sector * 512 / bs, last = ((e.sector + e.nr_sectors) * 512 - 1) / bs;
		for (size_t i = 0; i < nblk; i++)
			hits += blk[i] >= first && blk[i] <= last;
	}
	dev_log_reader_close(rd);
	return hits;
}

static unsigned fsync_beside(const char *mode)
{
	char img[300], log[300], spec[700], opts[64];
	unsigned bs = 4096;
	mkimg("iso.img", bs, 65536, img, sizeof img);
	snprintf(log, sizeof log, "%s/iso.log", tmpdir);
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", img, log);
	snprintf(opts, sizeof opts, "data=%s,commit=60", mode);
	struct nostall_fs *fs = mnt_spec(spec, opts);
	/* a big unsynced file (below the flusher's thresholds) */
	put(fs, "/big", 3, 0, 2048 * KIB);
	uint64_t blk[512];
	struct nostall_file *f = NULL;
	assert_int_equal(nostall_open(fs, "/big", NOSTALL_O_RDONLY, &f), 0);
	for (size_t i = 0; i < 512; i++)
		assert_int_equal(nostall_bmap(f, i, &blk[i]), 0);
	nostall_close(f);
	put(fs, "/small", 4, 0, 4 * KIB);
	assert_int_equal(dev_mark(fs->dev, "before"), 0);
	assert_int_equal(fsync_path(fs, "/small"), 0);
	assert_int_equal(dev_mark(fs->dev, "after"), 0);
	umnt(fs);
	fsck_clean(img);
	unsigned hits = other_writes(log, "before", "after", blk, 512, bs);
	printf("data=%s: fsync of a 4 KiB file wrote %u blocks of a 2 MiB unsynced file\n", mode, hits);
	unlink(img);
	unlink(log);
	return hits;
}

static void test_fsync_isolation(void **state)
{
	assert_int_equal(fsync_beside("guarded"), 0);
	/* the contrast: 2.6.30's ordered mode writes all of it first */
	assert_int_equal(fsync_beside("ordered"), 512);
}

/* ---------------------------------------------------- truncate, unlink */

static void test_truncate_pending(void **state)
{
	char img[300];
	unsigned bs = 1024;
	mkimg("trunc.img", bs, 16384, img, sizeof img);
	struct nostall_fs *fs = mnt(img, "data=guarded,commit=60");
	/* down below the on-disk size: extents past it dropped, off the list */
	put(fs, "/t1", 5, 0, 20 * bs);
	assert_int_equal(nostall_truncate(fs, "/t1", 5 * bs + 10), 0);
	struct snap s = snap_of(fs, "/t1");
	assert_int_equal(s.disksize, 5 * bs + 10);
	assert_int_equal(s.extents, 0);
	assert_false(s.orphan);
	/* to a size past i_disksize: the data in between is written first */
	put(fs, "/t2", 6, 0, 20 * bs);
	assert_int_equal(fsync_path(fs, "/t2"), 0);
	put(fs, "/t2", 6, 20 * bs, 10 * bs);
	s = snap_of(fs, "/t2");
	assert_int_equal(s.disksize, 20 * bs);
	assert_int_equal(nostall_truncate(fs, "/t2", 25 * bs + 1), 0);
	s = snap_of(fs, "/t2");
	assert_int_equal(s.disksize, 25 * bs + 1);
	assert_int_equal(s.extents, 0);
	assert_false(s.orphan);
	/* then writes past the new end again (new extents at the same pages) */
	put(fs, "/t2", 6, 25 * bs + 1, 10 * bs);
	assert_int_equal(fsync_path(fs, "/t2"), 0);
	/* unlink with pending extents, the file open: freed at the close */
	struct nostall_statfs sf0, sf1;
	assert_int_equal(nostall_statfs(fs, &sf0), 0);
	int fd = nostall_fd_open(fs, "/u", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
	assert_true(fd >= 0);
	static uint8_t b[64 * 1024];
	memset(b, 7, sizeof b);
	assert_int_equal(nostall_fd_write(fs, fd, b, sizeof b), (ssize_t)sizeof b);
	assert_int_equal(nostall_unlink(fs, "/u"), 0);
	assert_int_equal(nostall_fd_write(fs, fd, b, sizeof b), (ssize_t)sizeof b);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_statfs(fs, &sf1), 0);
	assert_int_equal(sf1.blocks_free, sf0.blocks_free);
	/* rename over a file with pending extents */
	put(fs, "/r1", 7, 0, 30 * bs);
	put(fs, "/r2", 8, 0, 12 * bs);
	assert_int_equal(nostall_rename(fs, "/r2", "/r1", 0), 0);
	umnt(fs);
	fsck_clean(img);
	fs = mnt(img, NULL);
	check(fs, "/t1", 5, 5 * bs + 10, 0, 0);
	check(fs, "/t2", 6, 35 * bs + 1, 0, 0);
	check(fs, "/r1", 8, 12 * bs, 0, 0);
	assert_int_equal(nostall_stat(fs, "/u", 0, &(struct nostall_stat){0}), -ENOENT);
	umnt(fs);
	unlink(img);
}

/* ----------------------------------------------- the logger's reference */

/* The logger stops in its hook while it holds an inode's lock (and, with
 * its own reference, the inode); the test drops the last other reference
 * meanwhile. */
struct hold {
	uint32_t ino;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool in_hook, release;
};

static void hold_hook(struct ext3_inode *in, void *arg)
{
	struct hold *h = arg;
	if (in->ino != h->ino)
		return;
	pthread_mutex_lock(&h->lock);
	h->in_hook = true;
	pthread_cond_broadcast(&h->cond);
	while (!h->release)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

/* Unlink, then the last close while the logger logs the file's completed
 * extents: the inode and its blocks are free once the completion work has
 * drained (the logger's put is the final one and frees it). Before the
 * logger took a reference, the close's final put found the inode locked,
 * took it for a live one and left it allocated until the unmount. */
static void test_unlink_while_logged(void **state)
{
	char img[300];
	unsigned bs = 1024;
	mkimg("ulog.img", bs, 16384, img, sizeof img);
	struct nostall_fs *fs = mnt(img, "data=guarded,commit=60");
	struct nostall_statfs sf0, sf1;
	assert_int_equal(nostall_statfs(fs, &sf0), 0);
	put(fs, "/u", 12, 0, 48 * bs); /* pending extents, dirty pages */
	int fd = nostall_fd_open(fs, "/u", NOSTALL_O_RDONLY, 0);
	assert_true(fd >= 0);
	struct ext3_inode *in = inode_of(fs, "/u");
	assert_true(ext3_guarded_inode_extents(in) > 0);
	assert_int_equal(nostall_unlink(fs, "/u"), 0);
	struct hold h = { .ino = in->ino };
	pthread_mutex_init(&h.lock, NULL);
	pthread_cond_init(&h.cond, NULL);
	ext3_guarded_set_log_hook(fs->e, hold_hook, &h);
	/* The pages written: their completion queues the inode for the
	 * logger, which stops in the hook holding in->lock. */
	ext3_inode_rdlock(in);
	struct page_mapping *m = in->mapping;
	ext3_inode_unlock(in);
	assert_non_null(m);
	assert_int_equal(page_mapping_sync(m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	for (int i = 0;; i++) { /* 30 s: the completion work never came */
		pthread_mutex_lock(&h.lock);
		bool in_hook = h.in_hook;
		pthread_mutex_unlock(&h.lock);
		if (in_hook)
			break;
		if (i == 30000)
			fail_msg("the logger never logged the unlinked file");
		usleep(1000);
	}
	/* Every other reference goes (a read-only descriptor's close takes
	 * no inode lock): in must not be touched after this. */
	ext3_iput(in);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	pthread_mutex_lock(&h.lock);
	h.release = true;
	pthread_cond_broadcast(&h.cond);
	pthread_mutex_unlock(&h.lock);
	assert_int_equal(ext3_guarded_drain(fs->e), 0);
	ext3_guarded_set_log_hook(fs->e, NULL, NULL);
	assert_int_equal(nostall_statfs(fs, &sf1), 0);
	assert_int_equal(sf1.files_free, sf0.files_free);
	assert_int_equal(sf1.blocks_free, sf0.blocks_free);
	umnt(fs);
	fsck_clean(img);
	pthread_cond_destroy(&h.cond);
	pthread_mutex_destroy(&h.lock);
	unlink(img);
}

/* --------------------------------------------------------- write errors */

/* The blocks /e gets on a fresh copy of img (the allocator is
 * deterministic for the same image and the same calls). */
static uint64_t first_block_of(const char *img, unsigned bs, uint64_t len)
{
	char copy[300];
	snprintf(copy, sizeof copy, "%.290s.probe", img);
	assert_int_equal(fsimg_run("cp '%s' '%s'", img, copy), 0);
	struct nostall_fs *fs = mnt(copy, "data=guarded,commit=60");
	put(fs, "/e", 9, 0, len);
	struct nostall_file *f = NULL;
	assert_int_equal(nostall_open(fs, "/e", NOSTALL_O_RDONLY, &f), 0);
	uint64_t phys = 0;
	assert_int_equal(nostall_bmap(f, 2, &phys), 0);
	nostall_close(f);
	umnt(fs);
	unlink(copy);
	(void)bs;
	return phys;
}

static void test_write_error(void **state)
{
	char img[300], spec[600];
	unsigned bs = 4096;
	mkimg("err.img", bs, 16384, img, sizeof img);
	uint64_t len = 8 * bs;
	uint64_t bad = first_block_of(img, bs, len); /* block 2 of /e */
	assert_true(bad > 0);
	/* the first write touching that block fails, once */
	snprintf(spec, sizeof spec, "fault:file:%s,op=write,sector=%llu-%llu,count=1", img,
		 (unsigned long long)(bad * (bs / 512)), (unsigned long long)(bad * (bs / 512)));
	struct nostall_fs *fs = mnt_spec(spec, "data=guarded,commit=60");
	put(fs, "/e", 9, 0, len);
	/* The write fails in writeback (here sync's), before any fsync: the
	 * extent is marked failed, and fsync reports it without ordering the
	 * file into its commit (that way's failure aborts: test_fsync_error). */
	assert_int_equal(nostall_sync(fs), -EIO);
	assert_int_equal(fsync_path(fs, "/e"), -EIO);
	struct snap s = snap_of(fs, "/e");
	/* below the failed block (its run may have held more), for good */
	assert_true(s.disksize <= 2 * bs);
	assert_true(s.orphan);
	assert_true(s.extents >= 1);
	struct ext3_guarded_stats st;
	ext3_guarded_stats(fs->e, &st);
	assert_true(st.failed >= 1);
	/* still failed: fsync says so again */
	assert_int_equal(fsync_path(fs, "/e"), -EIO);
	/* the pages written again (the fault fired once): the size moves on */
	put(fs, "/e", 9, 0, len);
	assert_int_equal(fsync_path(fs, "/e"), 0);
	s = snap_of(fs, "/e");
	assert_int_equal(s.disksize, len);
	assert_false(s.orphan);
	umnt(fs);
	fsck_clean(img);
	fs = mnt(img, NULL);
	check(fs, "/e", 9, len, 0, 0);
	umnt(fs);
	unlink(img);
}

/* fsync orders the file's data into the commit that logs its size: one
 * commit, the size and orphan entry settled at once, and what it wrote
 * survives a remount and e2fsck. */
static uint64_t commits_of(struct nostall_fs *fs)
{
	struct jbd_stats js;
	jbd_journal_stats(fs->e->journal, &js);
	return js.commits;
}

static void test_fsync_in_commit(void **state)
{
	char img[300];
	unsigned bs = 1024;
	mkimg("fic.img", bs, 16384, img, sizeof img);
	struct nostall_fs *fs = mnt(img, "data=guarded,commit=600");
	struct ext3_guarded_stats st0, st;
	put(fs, "/a", 12, 0, 5 * bs + 7);
	struct snap s = snap_of(fs, "/a");
	assert_true(s.orphan);
	assert_true(s.disksize < s.size);
	ext3_guarded_stats(fs->e, &st0);
	uint64_t commits0 = commits_of(fs);
	assert_int_equal(fsync_path(fs, "/a"), 0);
	ext3_guarded_stats(fs->e, &st);
	assert_int_equal(st.fsync_in_commit - st0.fsync_in_commit, 1);
	assert_int_equal(commits_of(fs) - commits0, 1);
	s = snap_of(fs, "/a");
	assert_int_equal(s.disksize, 5 * bs + 7);
	assert_false(s.orphan);
	/* appends again, fsync again; then a crash-free remount sees it all */
	put(fs, "/a", 12, 5 * bs + 7, 30 * bs);
	assert_int_equal(fsync_path(fs, "/a"), 0);
	s = snap_of(fs, "/a");
	assert_int_equal(s.disksize, 35 * bs + 7);
	assert_false(s.orphan);
	assert_int_equal(ext3_guarded_drain(fs->e), 0);
	struct ext3_inode *in = inode_of(fs, "/a");
	assert_int_equal(ext3_guarded_inode_extents(in), 0);
	ext3_iput(in);
	umnt(fs);
	fsck_clean(img);
	fs = mnt(img, NULL);
	check(fs, "/a", 12, 35 * bs + 7, 0, 0);
	umnt(fs);
	unlink(img);
}

/* fsync's data write fails inside the commit that logs the size: the
 * journal aborts (the size must not commit over data that is not there;
 * the log cannot take it back), fsync fails, later changes get -EROFS, and
 * the image recovers to the last committed state: the file's size on disk
 * never covers the failed block. */
static void test_fsync_error(void **state)
{
	char img[300], spec[600];
	unsigned bs = 4096;
	mkimg("ferr.img", bs, 16384, img, sizeof img);
	uint64_t len = 8 * bs;
	struct nostall_fs *fs = mnt(img, "data=guarded");
	put(fs, "/keep", 8, 0, 3 * bs); /* committed before: survives */
	umnt(fs);
	uint64_t bad = first_block_of(img, bs, len); /* block 2 of /e */
	assert_true(bad > 0);
	snprintf(spec, sizeof spec, "fault:file:%s,op=write,sector=%llu-%llu,count=1", img,
		 (unsigned long long)(bad * (bs / 512)), (unsigned long long)(bad * (bs / 512)));
	fs = mnt_spec(spec, "data=guarded,commit=60");
	put(fs, "/e", 9, 0, len);
	int rc = fsync_path(fs, "/e");
	assert_true(rc == -EIO || rc == -EROFS);
	assert_true(jbd_journal_aborted(fs->e->journal));
	assert_int_equal(nostall_mkdir(fs, "/after", 0755), -EROFS);
	(void)nostall_umount(fs); /* reports the abort */
	fsck_clean(img);
	fs = mnt(img, NULL);
	check(fs, "/keep", 8, 3 * bs, 0, 0);
	struct nostall_stat st;
	rc = nostall_stat(fs, "/e", 0, &st);
	assert_true(rc == -ENOENT || (rc == 0 && st.size <= 2 * bs));
	umnt(fs);
	fsck_clean(img);
	unlink(img);
}

/* A journal abort with extents pending: fsync fails, the unmount does not
 * crash, the next mount truncates the file to its on-disk size. */
static void test_abort_pending(void **state)
{
	char img[300];
	unsigned bs = 1024;
	mkimg("abort.img", bs, 16384, img, sizeof img);
	struct nostall_fs *fs = mnt(img, "data=guarded,commit=60");
	put(fs, "/k", 10, 0, 4 * bs);
	assert_int_equal(fsync_path(fs, "/k"), 0);
	put(fs, "/p", 11, 0, 6 * bs);
	put(fs, "/k", 10, 4 * bs, 6 * bs);
	assert_int_equal(nostall_sync(fs), 0); /* allocations + orphans committed... */
	put(fs, "/p", 11, 6 * bs, 6 * bs);     /* ...these are not */
	jbd_journal_abort(fs->e->journal, -EIO);
	assert_true(fsync_path(fs, "/p") < 0);
	(void)nostall_umount(fs); /* reports the abort */
	fs = mnt(img, NULL);
	check(fs, "/k", 10, 10 * bs, 0, 0);
	check(fs, "/p", 11, 6 * bs, 0, 0); /* the size the sync logged */
	umnt(fs);
	fsck_clean(img);
	unlink(img);
}

/* ------------------------------------------------------------- default */

static void test_default_mode(void **state)
{
	char img[300];
	mkimg("def.img", 1024, 8192, img, sizeof img);
	struct nostall_fs *fs = mnt(img, NULL);
	struct nostall_info info;
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_string_equal(info.data_mode, "guarded");
	umnt(fs);
	/* the superblock's default mount options win */
	assert_int_equal(fsimg_run("tune2fs -o journal_data_ordered '%s' >/dev/null 2>&1", img), 0);
	fs = mnt(img, NULL);
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_string_equal(info.data_mode, "ordered");
	umnt(fs);
	fs = mnt(img, "data=guarded");
	assert_int_equal(nostall_info(fs, &info), 0);
	assert_string_equal(info.data_mode, "guarded");
	umnt(fs);
	unlink(img);
}

int main(void)
{
	int orc = fsimg_main_begin("test_ext3_guarded", "guarded", "mke2fs e2fsck tune2fs", NULL, tmpdir, sizeof tmpdir);
	if (orc >= 0)
		return orc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle_1k),    cmocka_unit_test(test_lifecycle_4k),
		cmocka_unit_test(test_hole_fill),       cmocka_unit_test(test_fsync_isolation),
		cmocka_unit_test(test_truncate_pending), cmocka_unit_test(test_unlink_while_logged),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_fsync_in_commit), cmocka_unit_test(test_fsync_error),
		cmocka_unit_test(test_abort_pending),   cmocka_unit_test(test_default_mode),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
