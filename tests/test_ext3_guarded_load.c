/* data=guarded under load (docs/write-guarded.md): the inode cache sparing
 * LRU victims whose data is still on its way (guarded and ordered),
 * concurrent writers, fsyncs, truncates and syncs (TSan), and the page
 * cache's per-thread dirty limit that keeps an fsyncing appender beside a
 * streaming writer from being throttled for the streamer's pages.
 * nostall-test: concurrent
 * mke2fs, e2fsck and tune2fs must be installed. */

#include "test_ext3_guarded_env.h"

/* ------------------------------------------- inode cache and dirty data */

/* More small files than the inode cache keeps unreferenced (4096): the
 * oldest ones still have dirty pages (a 1 GiB cache keeps 20 MiB dirty)
 * or, guarded, a size not logged yet when the cache picks them, and are
 * spared (their writeback started) instead of being written one by one,
 * waiting, at eviction. Every file reads back after a remount and e2fsck
 * is clean. */
static void evict_spares(const char *mode)
{
	char img[300], opts[96], path[32];
	mkimg("spare.img", 4096, 131072, img, sizeof img);
	/* No flusher expiry (and no commit timer) while the files are
	 * written: under TSan beside stress-ng, writing them took longer than
	 * the 30 s dirty expiry, the flusher wrote the oldest files' pages, and
	 * the victims were clean when evicted (ordered: spared 0; with
	 * dirty_expire_centisecs=1 both modes spare none). */
	snprintf(opts, sizeof opts, "data=%s,cache=1G,commit=600,dirty_expire_centisecs=60000", mode);
	struct nostall_fs *fs = mnt(img, opts);
	enum { FILES = 5000 };
	for (unsigned d = 0; d < 5; d++) {
		snprintf(path, sizeof path, "/d%u", d);
		assert_int_equal(nostall_mkdir(fs, path, 0755), 0);
	}
	for (unsigned i = 0; i < FILES; i++) {
		snprintf(path, sizeof path, "/d%u/f%u", i % 5, i);
		put(fs, path, i, 0, 700 + i % 900);
	}
	struct ext3_icache_stats st;
	ext3_icache_stats(fs->e, &st);
	printf("data=%s: %u files: evictions %llu spared %llu unused %u\n", mode, FILES,
	       (unsigned long long)st.evictions, (unsigned long long)st.spared, st.unused);
	assert_true(st.spared > 0);
	assert_true(st.evictions + st.spared >= FILES - 4096);
	for (unsigned i = 0; i < FILES; i += 97) { /* spared inodes read back at once */
		snprintf(path, sizeof path, "/d%u/f%u", i % 5, i);
		check(fs, path, i, 700 + i % 900, 0, 0);
	}
	umnt(fs);
	fsck_clean(img);
	fs = mnt(img, opts);
	for (unsigned i = 0; i < FILES; i++) {
		snprintf(path, sizeof path, "/d%u/f%u", i % 5, i);
		check(fs, path, i, 700 + i % 900, 0, 0);
	}
	umnt(fs);
	unlink(img);
}

static void test_evict_spares_guarded(void **state)
{
	evict_spares("guarded");
}

static void test_evict_spares_ordered(void **state)
{
	evict_spares("ordered");
}

/* ---------------------------------------------------------- concurrency */

struct worker {
	struct nostall_fs *fs;
	int id, rc;
	uint64_t size;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char path[32];
	snprintf(path, sizeof path, "/w%d", w->id);
	static const size_t lens[] = {700, 4096, 5000, 123, 16384};
	uint8_t *b = malloc(16384);
	int fd = nostall_fd_open(w->fs, path, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
	if (!b || fd < 0) {
		w->rc = -ENOMEM;
		free(b);
		return NULL;
	}
	uint64_t off = 0;
	for (int i = 0; i < 60 && !w->rc; i++) {
		size_t len = lens[(i + w->id) % 5];
		for (size_t k = 0; k < len; k++)
			b[k] = pat((unsigned)w->id, off + k);
		if (nostall_fd_pwrite(w->fs, fd, b, len, off) != (ssize_t)len)
			w->rc = -EIO;
		off += len;
		if (i % 7 == 3 && nostall_fd_fsync(w->fs, fd, i % 2) < 0)
			w->rc = -EIO;
		if (i % 13 == 12) { /* cut back, then go on from there */
			off -= len / 2;
			if (nostall_fd_ftruncate(w->fs, fd, off) < 0)
				w->rc = -EIO;
		}
	}
	w->size = off;
	if (nostall_fd_close(w->fs, fd) < 0)
		w->rc = -EIO;
	free(b);
	return NULL;
}

static void test_concurrent(void **state)
{
	char img[300];
	mkimg("conc.img", 1024, 32768, img, sizeof img);
	struct nostall_fs *fs = mnt(img, "data=guarded,cache=1M");
	enum { N = 4 };
	struct worker w[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		w[i] = (struct worker){.fs = fs, .id = i};
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int k = 0; k < 5; k++)
		assert_int_equal(nostall_sync(fs), 0);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].rc, 0);
	}
	struct ext3_guarded_stats st;
	ext3_guarded_stats(fs->e, &st);
	assert_true(st.extents > 0);
	umnt(fs);
	fsck_clean(img);
	fs = mnt(img, NULL);
	for (int i = 0; i < N; i++) {
		char path[32];
		snprintf(path, sizeof path, "/w%d", i);
		check(fs, path, (unsigned)i, w[i].size, 0, 0);
	}
	umnt(fs);
	unlink(img);
}

/* ---------------------------------------- the fsync writer's dirty limit */

struct heavy {
	struct env *e;
	atomic_bool done;
	int bad; /* writes that failed */
};

/* A thread that has dirtied every page of the cache lately (several
 * periods of it, cleaned in between), then dirties pages up to just under
 * the cache's dirty limit and balances: its own limit is lower (2.6.30's
 * task_dirty_limit), so it is throttled - and waits, the queue is stopped. */
static void *heavy_main(void *arg)
{
	struct heavy *h = arg;
	struct env *e = h->e;
	uint64_t limit = pfs_stats(e).dirty_limit;
	static unsigned char buf[4096];
	for (int round = 0; round < 6; round++) {
		for (uint64_t i = 0; i < limit - 2; i++)
			h->bad += page_mapping_write_nobalance(e->m, i * 4096, buf, 4096, i * 4096) != 4096;
		h->bad += page_mapping_sync(e->m, 0, PAGE_INDEX_MAX, BLK_WRITE) != 0;
	}
	blk_queue_stop(e->q);
	for (uint64_t i = 0; i < limit - 2; i++)
		h->bad += page_mapping_write_nobalance(e->m, i * 4096, buf, 4096, i * 4096) != 4096;
	page_cache_balance_dirty(e->pc);
	atomic_store(&h->done, true);
	return NULL;
}

static void test_light_writer_limit(void **state)
{
	struct page_params p = pfs_quiet_params(256);
	struct env e;
	pfs_env_open(&e, "mem:16M", &p, false);
	uint64_t limit = pfs_stats(&e).dirty_limit;
	assert_true(limit >= 16); /* an eighth of it is at least 2 pages */
	struct heavy h = { .e = &e };
	atomic_init(&h.done, false);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, heavy_main, &h), 0);
	/* Until the heavy writer is throttled (or returned: not throttled). */
	while (!atomic_load(&h.done) && pfs_stats(&e).throttle_waits == 0)
		usleep(1000);
	bool throttled = !atomic_load(&h.done);
	if (!throttled) {
		pthread_join(t, NULL);
		pfs_env_close(&e);
		fail_msg("a writer of every recent page was not throttled below the dirty limit");
	}
	/* This thread dirtied nothing lately: its limit is the cache's, and
	 * one page more stays under it - written without waiting for the
	 * stopped queue. */
	uint64_t before = pfs_stats(&e).throttled;
	pfs_write_pages(&e, 200, 1, 3);
	assert_int_equal(pfs_stats(&e).throttled, before);
	blk_queue_start(e.q);
	blk_queue_unplug(e.q);
	pthread_join(t, NULL);
	assert_int_equal(h.bad, 0);
	pfs_env_close(&e);
}

int main(void)
{
	int orc = fsimg_main_begin("test_ext3_guarded_load", "guarded-load", "mke2fs e2fsck tune2fs", NULL, tmpdir,
				   sizeof tmpdir);
	if (orc >= 0)
		return orc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_light_writer_limit),
		cmocka_unit_test(test_evict_spares_guarded),
		cmocka_unit_test(test_evict_spares_ordered),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
