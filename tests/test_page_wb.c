/* Page cache writeback (src/page) beside other threads: the bounded wait
 * (page_mapping_wait returns while another thread keeps writing back the
 * same mapping) and zero-copy writeback with its copy-on-write of a page
 * changed under a bio. Helpers: tests/lib/pagefs.h.
 * nostall-test: concurrent
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blk/blk.h"
#include "page/page.h"
#include "lib/pagefs.h"
#include "util/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* A run whose page buffers are contiguous is written from them (no copy);
 * a writer changing a page under such a bio gets a copy of the buffer, so
 * the bio writes the data as it was when it was submitted and the page
 * keeps the new data for the next writeback. */
static void test_writeback_zero_copy(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 0, 8, 1); /* a fresh cache: consecutive buffers */
	blk_queue_stop(e.q);
	assert_int_equal(page_mapping_writeback(e.m, 0, 7, PAGE_WB_SYNC_NONE, BLK_WRITE), 0);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.write_bios, 1);
	assert_int_equal(s.zero_copy_bios, 1);
	assert_int_equal(s.copied_bytes, 0);
	assert_int_equal(s.writeback, 8);
	pfs_write_pages(&e, 3, 1, 50); /* under writeback, the bio not even sent */
	s = pfs_stats(&e);
	assert_int_equal(s.unshared, 1);
	assert_int_equal(s.dirty, 1);
	blk_queue_start(e.q);
	assert_int_equal(page_mapping_wait(e.m, 0, 7), 0);
	for (unsigned i = 0; i < 8; i++) /* what was submitted */
		pfs_check_block(&e, BASE + i, 1 + i);
	pfs_check_pages(&e, 3, 1, 50); /* the cache has the new data */
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_check_block(&e, BASE + 3, 50 + 3);
	pfs_env_close(&e);
}

/* Pages [0, n) written last to first: in a fresh cache their buffers
 * descend, so no two of them are contiguous in memory. */
static void write_reversed(struct env *e, uint64_t n, unsigned tag)
{
	for (uint64_t i = n; i-- > 0;)
		pfs_write_pages(e, i, 1, tag);
}

/* Pages [0, n) are on the device with tags tag + index; close the env. */
static void check_blocks_close(struct env *e, unsigned n, unsigned tag)
{
	for (unsigned i = 0; i < n; i++)
		pfs_check_block(e, BASE + i, tag + i);
	pfs_env_close(e);
}

/* Pages written last to first get descending buffers: their run is not
 * contiguous in memory, so it is copied, into a buffer of the run's size
 * (copied_bytes: the run, nothing more), and still goes as one bio. */
static void test_writeback_copy(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	write_reversed(&e, 4, 7);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.write_bios, 1);
	assert_int_equal(s.zero_copy_bios, 0);
	assert_int_equal(s.copied_bytes, 4 * PS);
	assert_int_equal(s.piece_runs, 0);
	check_blocks_close(&e, 4, 7);
}

/* Without memory for that copy the run is written piece by piece (one bio
 * per contiguous piece, waited for), and completes as a run: the data is
 * on disk, the pages are clean, no error is reported. */
static void test_writeback_pieces(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 4, 2, 3); /* pages 4, 5: one contiguous piece */
	write_reversed(&e, 4, 3);
	page_cache_fail_run_bufs(e.pc, 1);
	assert_int_equal(page_mapping_writeback(e.m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_NONE, BLK_WRITE), 0);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.piece_runs, 1);
	assert_int_equal(s.write_bios, 5); /* 3, 2, 1, 0, then 4-5 */
	assert_int_equal(s.copied_bytes, 0);
	assert_int_equal(s.pages_written, 6);
	assert_int_equal(s.dirty, 0);
	assert_int_equal(s.writeback, 0);
	check_blocks_close(&e, 6, 3);
}

/* Whole-page writes copy with streaming stores where the build has them
 * (tunable stream_copy; partial pages never do), and the data is the
 * same either way, in the cache and on disk. */
static void test_stream_copy(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 0, 8, 20);
	static unsigned char half[PS / 2];
	pfs_fill(half, sizeof half, 99);
	assert_int_equal(page_mapping_write(e.m, 8 * PS, half, sizeof half, 8 * PS), sizeof half);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.stream_copies, PAGE_STREAM_COPY ? 8 : 0);
	assert_int_equal(page_cache_set(e.pc, "stream_copy", "0"), 0);
	pfs_write_pages(&e, 9, 4, 20);
	s = pfs_stats(&e);
	assert_int_equal(s.stream_copies, PAGE_STREAM_COPY ? 8 : 0);
	pfs_check_pages(&e, 0, 8, 20);
	pfs_check_pages(&e, 9, 4, 20);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	for (unsigned i = 0; i < 13; i++)
		if (i != 8)
			pfs_check_block(&e, BASE + i, 20 + i);
	pfs_env_close(&e);
}

/* With a map_range op, whole-page writes allocate a batch (up to 64 pages)
 * per call; the data lands on the blocks it gave. */
static void test_map_range(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, true);
	struct page_mapping *m;
	assert_int_equal(page_mapping_create(e.pc, &pfs_fs_ops_range, &e.fs, &m), 0);
	enum { N = 150 };
	static unsigned char buf[N * PS];
	for (unsigned i = 0; i < N; i++)
		pfs_fill(buf + i * PS, PS, 9 + i);
	assert_int_equal(page_mapping_write(m, 0, buf, sizeof buf, 0), sizeof buf);
	assert_true(e.fs.range_calls >= 3 && e.fs.range_calls < N); /* batches of <= 64 */
	assert_int_equal(e.fs.map_calls, 0);
	assert_int_equal(page_mapping_sync(m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	for (unsigned i = 0; i < N; i++)
		pfs_check_block(&e, e.fs.table[i], 9 + i);
	page_mapping_destroy(m);
	pfs_env_close(&e);
}

/* ---------------------------------------------------------- bounded wait */

struct streamer {
	struct page_mapping *m;
	atomic_bool stop;
	atomic_uint rounds;
	int err;
};

#define STREAM_PAGES 64u

/* Keeps dirtying pages [0, STREAM_PAGES) and starting their writeback, like
 * a streaming writer beside an ordered commit, until told to stop. */
static void *streamer_main(void *arg)
{
	struct streamer *s = arg;
	unsigned char buf[PS];
	for (unsigned i = 0; !atomic_load(&s->stop); i++) {
		uint64_t idx = i % STREAM_PAGES;
		pfs_fill(buf, PS, i);
		if (page_mapping_write(s->m, idx * PS, buf, PS, STREAM_PAGES * PS) != PS ||
		    page_mapping_writeback(s->m, idx, idx, PAGE_WB_SYNC_NONE, BLK_WRITE) < 0) {
			s->err = -EIO;
			break;
		}
		atomic_fetch_add(&s->rounds, 1);
	}
	return NULL;
}

/* page_mapping_wait covers the writeback started before it began: it returns
 * while another thread keeps starting writeback of the same range (the
 * ordered commit beside a streamer on sim:hdd never returned when the wait
 * covered all writeback), and what was under writeback at its start is on
 * disk when it returns. The device (a 2009 SSD, real time) is slower than
 * the streamer, so the streamer's writeback never drains by itself. */
static void test_wait_bounded(void **state)
{
	struct env e;
	struct page_params p = pfs_quiet_params(256);
	pfs_env_open(&e, "sim:ssd,size=64M", &p, false);
	struct streamer s = { .m = e.m };
	pthread_t t;
	pthread_create(&t, NULL, streamer_main, &s);
	while (atomic_load(&s.rounds) < 2 * STREAM_PAGES && !s.err)
		clock_sleep_ns(NS_PER_MS);
	unsigned char want[PS];
	unsigned before = atomic_load(&s.rounds);
	for (unsigned k = 0; k < 16; k++) {
		uint64_t idx = 100 + k;
		pfs_fill(want, PS, 500 + k);
		assert_int_equal(page_mapping_write(e.m, idx * PS, want, PS, idx * PS), PS);
		/* SYNC_ALL: the streamer's dirty throttling may be building a run
		 * with this page (locked, not yet under writeback), which
		 * SYNC_NONE would skip; the page must be under writeback (or
		 * written) before the wait starts (a TSan run caught it). */
		assert_int_equal(page_mapping_writeback(e.m, idx, idx, PAGE_WB_SYNC_ALL, BLK_WRITE), 0);
		assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
		struct page *pg = page_lookup(e.m, idx);
		assert_non_null(pg);
		assert_false(page_writeback(pg));
		assert_false(page_dirty(pg));
		page_put(pg);
		pfs_check_block(&e, BASE + idx, 500 + k); /* behind the cache */
	}
	unsigned during = atomic_load(&s.rounds) - before;
	atomic_store(&s.stop, true);
	pthread_join(t, NULL);
	assert_int_equal(s.err, 0);
	printf("wait_bounded: the streamer started %u writebacks during 16 waits\n", during);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_env_close(&e);
}

/* page_mapping_wait_dirtied waits only for the writeback of pages that were
 * dirty at its bound (an era commit's own transaction, fs/jbd's
 * per-transaction data lists): page 0 dirtied before the bound, 4,096 pages
 * (16 MiB, from index 2: page 0 is a request of its own) after it, all put
 * under writeback together, page 0 first. The wait returns once page 0 is
 * on disk, while the later pages the queue still holds are being written
 * (the writeback call returns once its last request found room in the
 * queue, so ~1,100 pages are still queued or in the device, a 2009 SSD in
 * real time; sim:hdd's write cache would take them at once);
 * page_mapping_wait, the bound at infinity, would wait for all of them. */
#define LATE_FIRST 2u
#define LATE_PAGES 4096u
static void test_wait_dirtied_bound(void **state)
{
	struct env e;
	struct page_params p = pfs_quiet_params(16384);
	p.dirty_ratio = 50; /* no throttling: every page stays dirty until the writeback below */
	pfs_env_open(&e, "sim:ssd,size=64M", &p, false);
	unsigned char buf[PS];
	pfs_fill(buf, PS, 7);
	assert_int_equal(page_mapping_write(e.m, 0, buf, PS, 0), PS);
	clock_sleep_ns(NS_PER_MS);
	uint64_t bound = clock_now_ns();
	clock_sleep_ns(NS_PER_MS);
	for (uint64_t i = LATE_FIRST; i < LATE_FIRST + LATE_PAGES; i++) {
		pfs_fill(buf, PS, 1000 + (unsigned)i);
		assert_int_equal(page_mapping_write(e.m, i * PS, buf, PS, i * PS), PS);
	}
	assert_int_equal(page_mapping_writeback(e.m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_ALL, BLK_WRITE), 0);
	assert_int_equal(page_mapping_wait_dirtied(e.m, 0, PAGE_INDEX_MAX, bound), 0);
	struct page *pg = page_lookup(e.m, 0);
	assert_non_null(pg);
	assert_false(page_writeback(pg));
	page_put(pg);
	pfs_check_block(&e, BASE, 7);
	unsigned busy = 0;
	for (uint64_t i = LATE_FIRST; i < LATE_FIRST + LATE_PAGES; i++) {
		struct page *q = page_lookup(e.m, i);
		if (q) {
			busy += page_writeback(q);
			page_put(q);
		}
	}
	printf("wait_dirtied_bound: %u of %u later pages still under writeback\n", busy, LATE_PAGES);
	assert_true(busy > 0);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
	for (uint64_t i = LATE_FIRST; i < LATE_FIRST + LATE_PAGES; i += 1000)
		pfs_check_block(&e, BASE + i, 1000 + (unsigned)i);
	pfs_env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writeback_zero_copy),
		cmocka_unit_test(test_writeback_copy),
		cmocka_unit_test(test_writeback_pieces),
		cmocka_unit_test(test_stream_copy),
		cmocka_unit_test(test_map_range),
		cmocka_unit_test(test_wait_bounded),
		cmocka_unit_test(test_wait_dirtied_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
