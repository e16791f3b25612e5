/* Page cache (src/page): holes, write/readback, partial writes, writeback
 * runs and waits, io_done in the worker with ranges and errors, truncate,
 * the overlay of cached pages (reads around the cache), the budget,
 * throttling, expiry and background flusher passes, tunables,
 * a random test against a model, and concurrent writers with the flusher.
 * nostall-test: concurrent
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blk/blk.h"
#include "dev/dev.h"
#include "page/page.h"
#include "lib/pagefs.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- tests */

static void test_holes_read_zero(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, true);
	unsigned char buf[PS], zero[PS] = { 0 };
	pfs_write_pages(&e, 0, 1, 1);
	pfs_write_pages(&e, 3, 1, 1);
	uint64_t size = 4 * PS;
	for (uint64_t i = 1; i <= 2; i++) {
		memset(buf, 0xAA, PS);
		assert_int_equal(page_mapping_read(e.m, i * PS, buf, PS, size), PS);
		assert_memory_equal(buf, zero, PS);
		assert_int_equal(e.fs.table[i], 0); /* not allocated by the read */
	}
	assert_int_equal(pfs_stats(&e).holes_read, 2);
	/* At and past i_size: nothing. A read crossing it is cut short. */
	assert_int_equal(page_mapping_read(e.m, size, buf, PS, size), 0);
	assert_int_equal(page_mapping_read(e.m, size - 10, buf, PS, size), 10);
	/* After writeback and a cold cache the holes still read as zeroes and
	 * the data is read from the device. */
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	assert_int_equal(page_mapping_invalidate(e.m, 0, PAGE_INDEX_MAX), 4);
	assert_int_equal(page_mapping_nr_pages(e.m), 0);
	assert_int_equal(page_mapping_read(e.m, PS, buf, PS, size), PS);
	assert_memory_equal(buf, zero, PS);
	pfs_check_pages(&e, 3, 1, 1);
	assert_int_equal(e.fs.table[1], 0);
	pfs_env_close(&e);
}

static void test_write_readback(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 0, 10, 5);
	pfs_check_pages(&e, 0, 10, 5);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.dirty, 10);
	assert_int_equal(s.pages_written, 0);
	assert_int_equal(page_mapping_nr_dirty(e.m), 10);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE_SYNC_PLUG), 0);
	assert_int_equal(pfs_stats(&e).dirty, 0);
	unsigned char buf[PS], want[PS];
	for (uint64_t i = 0; i < 10; i++) {
		pfs_fill(want, PS, 5 + (unsigned)i);
		pfs_dev_block(&e, BASE + i, buf);
		assert_memory_equal(buf, want, PS);
	}
	/* Cold: read back from the device. */
	page_mapping_invalidate(e.m, 0, PAGE_INDEX_MAX);
	uint64_t reads = pfs_stats(&e).read_bios;
	pfs_check_pages(&e, 0, 10, 5);
	assert_int_equal(pfs_stats(&e).read_bios, reads + 10);
	pfs_env_close(&e);
}

static void test_partial_writes(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	unsigned char old[PS], buf[PS], want[PS], patch[100];
	/* An existing block under i_size: read-modify-write. */
	pfs_fill(old, PS, 9);
	assert_int_equal(blk_rw(e.q, BLK_WRITE, (uint64_t)BASE * PS, old, PS), 0);
	memset(patch, 0x5A, sizeof patch);
	assert_int_equal(page_mapping_write(e.m, 1000, patch, sizeof patch, 2 * PS), sizeof patch);
	assert_int_equal(pfs_stats(&e).read_bios, 1);
	memcpy(want, old, PS);
	memcpy(want + 1000, patch, sizeof patch);
	assert_int_equal(page_mapping_read(e.m, 0, buf, PS, 2 * PS), PS);
	assert_memory_equal(buf, want, PS);
	/* A page wholly past i_size: zeroed, not read (its block holds garbage). */
	pfs_fill(old, PS, 11);
	assert_int_equal(blk_rw(e.q, BLK_WRITE, (uint64_t)(BASE + 5) * PS, old, PS), 0);
	assert_int_equal(page_mapping_write(e.m, 5 * PS + 7, patch, 10, 2 * PS), 10);
	assert_int_equal(pfs_stats(&e).read_bios, 1);
	memset(want, 0, PS);
	memcpy(want + 7, patch, 10);
	assert_int_equal(page_mapping_read(e.m, 5 * PS, buf, PS, 6 * PS), PS);
	assert_memory_equal(buf, want, PS);
	/* Written through: the device sees the merged pages. */
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_dev_block(&e, BASE + 5, buf);
	assert_memory_equal(buf, want, PS);
	pfs_env_close(&e);

	/* A newly allocated block: zeroed around the write, never read. */
	pfs_env_open(&e, "mem:16M", NULL, true);
	pfs_fill(old, PS, 13);
	assert_int_equal(blk_rw(e.q, BLK_WRITE, 2000ull * PS, old, PS), 0);
	assert_int_equal(page_mapping_write(e.m, 300, patch, sizeof patch, 10 * PS), sizeof patch);
	assert_int_equal(e.fs.table[0], 2000);
	assert_int_equal(pfs_stats(&e).read_bios, 0);
	memset(want, 0, PS);
	memcpy(want + 300, patch, sizeof patch);
	assert_int_equal(page_mapping_read(e.m, 0, buf, PS, 10 * PS), PS);
	assert_memory_equal(buf, want, PS);
	/* A failing allocation: the error comes back, nothing is dirtied. */
	e.fs.fail_create = -ENOSPC;
	assert_int_equal(page_mapping_write(e.m, 3 * PS, patch, 10, 10 * PS), -ENOSPC);
	assert_int_equal(page_mapping_nr_dirty(e.m), 1);
	/* The same for a whole page (the batched path): the page gets no
	 * block from the failed map and reads as the hole it is. */
	static unsigned char full[PS];
	pfs_fill(full, PS, 77);
	assert_int_equal(page_mapping_write(e.m, 4 * PS, full, PS, 10 * PS), -ENOSPC);
	assert_int_equal(page_mapping_nr_dirty(e.m), 1);
	struct page *failed = page_lookup(e.m, 4);
	assert_non_null(failed);
	assert_int_equal(page_block(failed), PAGE_NO_BLOCK);
	page_put(failed);
	memset(want, 0, PS);
	assert_int_equal(page_mapping_read(e.m, 4 * PS, buf, PS, 10 * PS), PS);
	assert_memory_equal(buf, want, PS);
	e.fs.fail_create = 0;
	/* Page-level: dirtying a page without a block is refused. */
	struct page *pg;
	assert_int_equal(page_grab(e.m, 7, &pg), 0);
	assert_int_equal(page_read(pg), 0); /* a hole */
	assert_int_equal(page_block(pg), PAGE_NO_BLOCK);
	assert_int_equal(page_mark_dirty(pg), -EINVAL);
	assert_int_equal(page_prepare_write(pg, 0, 10, 10 * PS), 0);
	assert_true(page_block(pg) != PAGE_NO_BLOCK);
	assert_int_equal(page_mark_dirty(pg), 0);
	assert_true(page_dirty(pg));
	page_unlock(pg);
	page_put(pg);
	pfs_env_close(&e);
}

static void test_writeback_runs(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 0, 16, 1);
	pfs_write_pages(&e, 20, 4, 1);
	assert_int_equal(page_mapping_writeback(e.m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_NONE, BLK_WRITE), 0);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.write_bios, 2); /* [0,15] and [20,23] */
	assert_int_equal(s.pages_written, 20);
	assert_int_equal(s.dirty, 0);
	/* A range: only pages inside are written. */
	pfs_write_pages(&e, 0, 8, 2);
	assert_int_equal(page_mapping_writeback(e.m, 2, 4, PAGE_WB_SYNC_ALL, BLK_WRITE), 0);
	assert_int_equal(pfs_stats(&e).pages_written, 23);
	assert_int_equal(page_mapping_nr_dirty(e.m), 5);
	/* Runs are bounded by max_run_kb. */
	assert_int_equal(page_cache_set(e.pc, "max_run_kb", "8"), 0);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	s = pfs_stats(&e);
	assert_int_equal(s.write_bios, 3 + 3); /* [0,1] [5,6] [7] */
	unsigned char buf[PS], want[PS];
	for (uint64_t i = 0; i < 8; i++) {
		pfs_fill(want, PS, 2 + (unsigned)i);
		pfs_dev_block(&e, BASE + i, buf);
		assert_memory_equal(buf, want, PS);
	}
	pfs_env_close(&e);

	/* Consecutive pages on scattered blocks are separate runs. */
	pfs_env_open(&e, "mem:16M", NULL, true);
	e.fs.table[0] = 3000;
	e.fs.table[1] = 3001;
	e.fs.table[2] = 3005;
	e.fs.table[3] = 3006;
	pfs_write_pages(&e, 0, 4, 3);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	assert_int_equal(pfs_stats(&e).write_bios, 2);
	pfs_dev_block(&e, 3005, buf);
	pfs_fill(want, PS, 3 + 2);
	assert_memory_equal(buf, want, PS);
	pfs_env_close(&e);
}

struct sync_arg {
	struct page_mapping *m;
	atomic_bool done;
};

static void *sync_all_thread(void *arg)
{
	struct sync_arg *a = arg;
	page_mapping_writeback(a->m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_ALL, BLK_WRITE);
	atomic_store(&a->done, true);
	return NULL;
}

static void test_sync_modes(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 0, 4, 1);
	struct page *pg;
	assert_int_equal(page_grab(e.m, 2, &pg), 0); /* someone holds page 2 */
	assert_int_equal(page_mapping_writeback(e.m, 0, 3, PAGE_WB_SYNC_NONE, BLK_WRITE), 0);
	assert_int_equal(page_mapping_nr_dirty(e.m), 1); /* page 2 skipped */
	assert_true(page_dirty(pg));
	/* WB_SYNC_ALL waits for the lock. */
	struct sync_arg a = { .m = e.m };
	pthread_t t;
	pthread_create(&t, NULL, sync_all_thread, &a);
	clock_sleep_ns(20 * NS_PER_MS);
	assert_false(atomic_load(&a.done)); /* it cannot finish while we hold the lock */
	page_unlock(pg);
	pthread_join(t, NULL);
	assert_false(page_dirty(pg));
	page_put(pg);
	assert_int_equal(pfs_stats(&e).pages_written, 4);
	pfs_env_close(&e);
}

static void test_io_done_worker(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 0, 8, 1);
	pfs_write_pages(&e, 10, 2, 1);
	assert_int_equal(page_mapping_writeback(e.m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_NONE, BLK_WRITE), 0);
	assert_int_equal(page_cache_flush_io_done(e.pc), 0);
	assert_int_equal(e.fs.ndone, 2);
	assert_int_equal(e.fs.done[0].first, 0);
	assert_int_equal(e.fs.done[0].last, 7);
	assert_int_equal(e.fs.done[1].first, 10);
	assert_int_equal(e.fs.done[1].last, 11);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(e.fs.done[i].err, 0);
		/* mem: completes inside the submitter's call: io_done must
		 * still run elsewhere. */
		assert_false(pthread_equal(e.fs.done[i].thread, pthread_self()));
	}
	assert_int_equal(pfs_stats(&e).io_done_calls, 2);
	pfs_env_close(&e);

	/* A write error (blocks BASE+2.. fail once): io_done and the wait see
	 * it, the wait only once; the pages stay readable. */
	char spec[128];
	snprintf(spec, sizeof spec, "fault:mem:16M,op=write,sector=%u-%u,count=1", (BASE + 2) * 8, (BASE + 2) * 8 + 7);
	pfs_env_open(&e, spec, NULL, false);
	pfs_write_pages(&e, 0, 4, 4);
	pfs_write_pages(&e, 6, 1, 4);
	assert_int_equal(page_cache_write_errors(e.pc), 0);
	assert_int_equal(page_mapping_writeback(e.m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_ALL, BLK_WRITE), 0);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), -EIO);
	/* Counted by the time the pages left writeback, before io_done ran
	 * (the guarded fsync's data check relies on it). */
	assert_int_equal(page_cache_write_errors(e.pc), 1);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
	assert_int_equal(page_mapping_flush_io_done(e.m), 0);
	assert_int_equal(e.fs.ndone, 2);
	assert_int_equal(e.fs.done[0].first, 0);
	assert_int_equal(e.fs.done[0].last, 3);
	assert_int_equal(e.fs.done[0].err, -EIO);
	assert_int_equal(e.fs.done[1].first, 6);
	assert_int_equal(e.fs.done[1].err, 0);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.write_errors, 1);
	assert_int_equal(s.dirty, 0);
	pfs_check_pages(&e, 0, 4, 4);
	assert_int_equal(dev_fault_injected(e.d), 1);
	pfs_env_close(&e);
}

struct overlay_job {
	struct page_mapping *m;
	unsigned char *buf;
	size_t len;
	uint64_t ret;
	atomic_bool done;
};

static void *overlay_main(void *arg)
{
	struct overlay_job *j = arg;
	j->ret = page_mapping_overlay(j->m, 0, j->buf, j->len);
	atomic_store(&j->done, true);
	return NULL;
}

/* page_mapping_overlay / page_mapping_removals (reading around the cache,
 * ext3's readahead segments): the cached pages' bytes land over the
 * caller's buffer, the rest of it is left alone; a page held locked by
 * someone else is waited for; the count moves when a page leaves the index
 * (invalidate, truncate) and on every truncate, not on writes or
 * writeback. */
static void test_overlay(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 2, 3, 7); /* pages 2, 3, 4 */
	uint64_t r0 = page_mapping_removals(e.m);
	unsigned char buf[8 * PS], want[8 * PS];
	memset(buf, 0xEE, sizeof buf);
	memset(want, 0xEE, sizeof want);
	for (unsigned i = 2; i < 5; i++)
		pfs_fill(want + i * PS, PS, 7 + i);
	/* A range starting and ending inside pages. */
	uint64_t off = PS + 100;
	size_t len = 4 * PS - 200;
	assert_int_equal(page_mapping_overlay(e.m, off, buf + off, len), r0);
	assert_memory_equal(buf + off, want + off, len);
	assert_int_equal(buf[off - 1], 0xEE);
	assert_int_equal(buf[off + len], 0xEE); /* past the range: untouched */
	/* Writeback and rewrites do not move the count; a page locked by
	 * another holder is copied once it lets go. */
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_write_pages(&e, 3, 1, 9);
	assert_int_equal(page_mapping_removals(e.m), r0);
	struct page *pg;
	assert_int_equal(page_grab(e.m, 3, &pg), 0); /* locked by us */
	memset(buf, 0, sizeof buf);
	struct overlay_job job = { .m = e.m, .buf = buf, .len = sizeof buf };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, overlay_main, &job), 0);
	struct timespec ms50 = { 0, 50 * 1000 * 1000 };
	nanosleep(&ms50, NULL);
	assert_false(atomic_load(&job.done)); /* waits for page 3 */
	page_unlock(pg);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(job.ret, r0);
	pfs_fill(want + 3 * PS, PS, 9 + 3);
	assert_memory_equal(buf + 2 * PS, want + 2 * PS, 3 * PS);
	page_put(pg);
	/* Invalidating clean pages moves it by the pages dropped; a truncate
	 * moves it even when nothing is cached past the new size. */
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	size_t dropped = page_mapping_invalidate(e.m, 0, 2);
	assert_int_equal(dropped, 1);
	assert_int_equal(page_mapping_removals(e.m), r0 + 1);
	assert_int_equal(page_mapping_truncate(e.m, 10 * PS), 0);
	assert_int_equal(page_mapping_removals(e.m), r0 + 2);
	memset(buf, 0x11, sizeof buf);
	assert_int_equal(page_mapping_overlay(e.m, 0, buf, 2 * PS), r0 + 2);
	for (size_t i = 0; i < 2 * PS; i++)
		assert_int_equal(buf[i], 0x11); /* page 2 is gone: nothing copied */
	pfs_env_close(&e);
}

static void test_truncate(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	pfs_write_pages(&e, 0, 10, 1);
	assert_int_equal(page_mapping_truncate(e.m, 5 * PS + 100), 0);
	assert_int_equal(page_mapping_nr_pages(e.m), 6);
	assert_int_equal(page_mapping_nr_dirty(e.m), 6);
	assert_int_equal(pfs_stats(&e).truncated_dirty, 4);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	assert_int_equal(pfs_stats(&e).pages_written, 6);
	unsigned char buf[PS], want[PS], zero[PS] = { 0 };
	for (uint64_t i = 6; i < 10; i++) {
		pfs_dev_block(&e, BASE + i, buf); /* never written */
		assert_memory_equal(buf, zero, PS);
	}
	pfs_fill(want, PS, 1 + 5);
	memset(want + 100, 0, PS - 100);
	pfs_dev_block(&e, BASE + 5, buf);
	assert_memory_equal(buf, want, PS);
	/* A clean page cut in the middle is dirtied with its tail zeroed; a
	 * tail already zero costs nothing. */
	assert_int_equal(page_mapping_truncate(e.m, 2 * PS + 10), 0);
	assert_int_equal(page_mapping_nr_dirty(e.m), 1);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_fill(want, PS, 1 + 2);
	memset(want + 10, 0, PS - 10);
	pfs_dev_block(&e, BASE + 2, buf);
	assert_memory_equal(buf, want, PS);
	assert_int_equal(page_mapping_truncate(e.m, 2 * PS + 20), 0);
	assert_int_equal(page_mapping_nr_dirty(e.m), 0);
	/* A truncated page held by someone is gone from the index; marking it
	 * dirty is refused. */
	struct page *pg;
	assert_int_equal(page_grab(e.m, 1, &pg), 0);
	page_unlock(pg);
	assert_int_equal(page_mapping_truncate(e.m, 0), 0);
	assert_int_equal(page_mapping_nr_pages(e.m), 0);
	assert_null(page_lookup(e.m, 1));
	page_lock(pg);
	assert_int_equal(page_mark_dirty(pg), -ESTALE);
	page_unlock(pg);
	page_put(pg);
	assert_int_equal(pfs_stats(&e).pages, 0);
	pfs_env_close(&e);
}

/* Writes pages [from, to) one at a time (contents seeded by seed + index),
 * checking after each that the cache stays within its budget and dirty +
 * writeback within the dirty limit. */
static void write_bounded(struct env *e, uint64_t from, uint64_t to, unsigned seed)
{
	unsigned char buf[PS];
	for (uint64_t i = from; i < to; i++) {
		pfs_fill(buf, PS, seed + (unsigned)i);
		assert_int_equal(page_mapping_write(e->m, i * PS, buf, PS, i * PS), PS);
		struct page_stats s = pfs_stats(e);
		assert_true(s.pages <= s.max_pages);
		assert_true(s.dirty + s.writeback <= s.dirty_limit);
	}
}

static void test_budget_bound(void **state)
{
	struct page_params p = pfs_quiet_params(64);
	struct env e;
	pfs_env_open(&e, "mem:16M", &p, false);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.max_pages, 64);
	assert_int_equal(s.dirty_limit, 12);
	assert_int_equal(s.background_limit, 6);
	write_bounded(&e, 0, 4 * 64, 7);
	s = pfs_stats(&e);
	assert_true(s.peak_pages <= 64);
	assert_true(s.evictions >= 4 * 64 - 64);
	assert_true(s.throttled > 0);
	assert_true(s.throttle_writes > 0);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_check_pages(&e, 0, 4 * 64, 7);
	assert_true(pfs_stats(&e).peak_pages <= 64);
	pfs_env_close(&e);
}

struct starter {
	struct env *e;
	atomic_bool stop;
};

/* Restart the stopped queue once a throttled writer is waiting on
 * writeback that cannot complete until then. */
static void *queue_starter(void *arg)
{
	struct starter *st = arg;
	for (;;) {
		struct page_stats s = pfs_stats(st->e);
		if ((s.throttle_waits > 0 && s.writeback > 0) || atomic_load(&st->stop))
			break;
		clock_sleep_ns(NS_PER_MS);
	}
	blk_queue_start(st->e->q);
	blk_queue_unplug(st->e->q);
	return NULL;
}

/* With a floor under the dirty limit a writer keeps that many pages dirty
 * before it is throttled (and memory stays within the budget). */
static void test_dirty_floor(void **state)
{
	struct page_params p = pfs_quiet_params(64);
	p.dirty_min_kb = 32 * PS / 1024;
	struct env e;
	pfs_env_open(&e, "mem:16M", &p, false);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.dirty_limit, 32);
	unsigned char buf[PS];
	for (uint64_t i = 0; i < 28; i++) {
		pfs_fill(buf, PS, 3 + (unsigned)i);
		assert_int_equal(page_mapping_write(e.m, i * PS, buf, PS, i * PS), PS);
	}
	s = pfs_stats(&e);
	assert_int_equal(s.dirty, 28); /* 2.6.30's 20 % (12) would have throttled */
	assert_int_equal(s.throttled, 0);
	write_bounded(&e, 28, 4 * 64, 3);
	assert_true(pfs_stats(&e).throttled > 0);
	pfs_env_close(&e);
}

static void test_throttle_waits(void **state)
{
	struct page_params p = pfs_quiet_params(64);
	struct env e;
	pfs_env_open(&e, "mem:16M", &p, false);
	pfs_write_pages(&e, 0, 12, 1); /* at the limit, not over it */
	assert_int_equal(pfs_stats(&e).throttled, 0);
	blk_queue_stop(e.q);
	struct starter st = { .e = &e };
	pthread_t t;
	pthread_create(&t, NULL, queue_starter, &st);
	pfs_write_pages(&e, 12, 1, 1); /* over: writes back, then must wait */
	atomic_store(&st.stop, true);
	pthread_join(t, NULL);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.throttled, 1);
	assert_true(s.throttle_waits >= 1);
	assert_true(s.throttle_writes >= 1);
	assert_true(s.dirty + s.writeback <= s.dirty_limit);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_env_close(&e);
}

static void test_flusher_pass(void **state)
{
	struct page_params p = pfs_quiet_params(64);
	struct env e;
	pfs_env_open(&e, "mem:16M", &p, false);
	pfs_write_pages(&e, 0, 4, 1);
	uint64_t now = clock_now_ns();
	assert_int_equal(page_cache_flush_pass(e.pc, now + NS_PER_SEC), 0); /* young */
	assert_int_equal(pfs_stats(&e).dirty, 4);
	assert_int_equal(page_cache_flush_pass(e.pc, now + 31 * NS_PER_SEC), 4); /* expired */
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.dirty, 0);
	assert_int_equal(s.expired_writes, 4);
	assert_int_equal(s.flusher_passes, 2);
	/* The expiry is a tunable. */
	pfs_write_pages(&e, 4, 2, 1);
	assert_int_equal(page_cache_set(e.pc, "dirty_expire_ms", "1000"), 0);
	assert_int_equal(page_cache_flush_pass(e.pc, clock_now_ns() + 2 * NS_PER_SEC), 2);
	/* Background: over 6 dirty pages, the oldest are written down to 6. */
	assert_int_equal(page_cache_set(e.pc, "dirty_expire_ms", "30000"), 0);
	pfs_write_pages(&e, 10, 10, 1);
	assert_int_equal(pfs_stats(&e).dirty, 10);
	assert_int_equal(page_cache_flush_pass(e.pc, 0), 4);
	s = pfs_stats(&e);
	assert_int_equal(s.dirty, 6);
	assert_int_equal(s.background_writes, 4);
	for (uint64_t i = 10; i < 14; i++) { /* the oldest went */
		struct page *pg = page_lookup(e.m, i);
		assert_false(page_dirty(pg));
		page_put(pg);
	}
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	pfs_env_close(&e);
}

static void test_flusher_thread(void **state)
{
	struct page_params p = pfs_quiet_params(64);
	p.writeback_interval_ms = 2;
	p.dirty_expire_ms = 0;
	struct env e;
	pfs_env_open(&e, "mem:16M", &p, false);
	pfs_write_pages(&e, 0, 5, 1);
	/* The thread gets there; the test does not time it. (The pass's
	 * counters are bumped after its pages are clean: wait for them.) */
	for (int i = 0; i < 10000 && pfs_stats(&e).flusher_writes < 5; i++)
		clock_sleep_ns(NS_PER_MS);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.dirty, 0);
	assert_true(s.flusher_passes > 0);
	assert_int_equal(s.flusher_writes, 5);
	pfs_env_close(&e);
}

static void test_tunables(void **state)
{
	struct env e;
	pfs_env_open(&e, "mem:16M", NULL, false);
	assert_int_equal(page_cache_set(e.pc, "cache_bytes", "1M"), -EPERM);
	assert_int_equal(page_cache_set(e.pc, "dirty_ratio", "0"), -ERANGE);
	assert_int_equal(page_cache_set(e.pc, "no_such", "1"), -ENOENT);
	uint64_t v;
	assert_int_equal(page_cache_get(e.pc, "dirty_expire_ms", &v), 0);
	assert_int_equal(v, 30000);
	assert_int_equal(page_cache_get(e.pc, "writeback_interval_ms", &v), 0);
	assert_int_equal(v, 0);
	/* Background ratio at or above the dirty ratio: half of it (2.6.30). */
	assert_int_equal(page_cache_set(e.pc, "dirty_background_ratio", "50"), 0);
	struct page_stats s = pfs_stats(&e);
	assert_int_equal(s.dirty_limit, 256 * 20 / 100);
	assert_int_equal(s.background_limit, 256 * 10 / 100);
	/* The dirty limit's floor lifts the limit only, at most to half the
	 * budget; 0 leaves the ratio alone. */
	char kb[32];
	snprintf(kb, sizeof kb, "%u", 100 * PS / 1024);
	assert_int_equal(page_cache_set(e.pc, "dirty_min_kb", kb), 0);
	assert_int_equal(pfs_stats(&e).dirty_limit, 100);
	assert_int_equal(pfs_stats(&e).background_limit, 256 * 10 / 100);
	snprintf(kb, sizeof kb, "%u", 1000 * PS / 1024);
	assert_int_equal(page_cache_set(e.pc, "dirty_min_kb", kb), 0);
	assert_int_equal(pfs_stats(&e).dirty_limit, 128);
	assert_int_equal(page_cache_set(e.pc, "dirty_min_kb", "4"), 0);
	assert_int_equal(pfs_stats(&e).dirty_limit, 256 * 20 / 100);
	assert_int_equal(page_cache_set(e.pc, "dirty_min_kb", "0"), 0);
	assert_int_equal(pfs_stats(&e).dirty_limit, 256 * 20 / 100);
	pfs_env_close(&e);
	struct page_params p;
	page_params_default(&p);
	assert_int_equal(p.dirty_expire_ms, 30000);
	assert_int_equal(p.writeback_interval_ms, 5000);
	assert_int_equal(p.dirty_background_ratio, 10);
	assert_int_equal(p.dirty_ratio, 20);
	assert_int_equal(p.dirty_min_kb, 0);
	p.dirty_ratio = 0;
	struct page_cache *pc;
	struct dev *d;
	struct blk_queue *q;
	assert_int_equal(dev_open("mem:1M", &d), 0);
	assert_int_equal(blk_queue_create(d, NULL, &q), 0);
	assert_int_equal(page_cache_create(q, PS, &p, &pc), -ERANGE);
	assert_int_equal(page_cache_create(q, 8192, NULL, &pc), -EINVAL);
	blk_queue_destroy(q);
	dev_close(d);
}

/* ---------------------------------------------------------- random model */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t test_seed(const char *name)
{
	const char *env_seed = getenv("NOSTALL_SEED");
	uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : (uint64_t)time(NULL);
	printf("%s seed %" PRIu64 " (NOSTALL_SEED to repeat)\n", name, seed);
	return seed;
}

#define MODEL_PAGES 48u

static void test_random_model(void **state)
{
	uint64_t seed = test_seed("test_random_model"), s = seed;
	struct page_params p = pfs_quiet_params(24); /* smaller than the file: eviction */
	struct env e;
	pfs_env_open(&e, "mem:32M", &p, true);
	size_t cap = MODEL_PAGES * PS;
	unsigned char *model = calloc(1, cap), *buf = malloc(cap);
	uint64_t size = 0;
	for (int op = 0; op < 3000; op++) {
		unsigned kind = (unsigned)(rnd(&s) % 100);
		uint64_t off = rnd(&s) % cap;
		size_t len = 1 + (size_t)(rnd(&s) % (3 * PS));
		if (len > cap - off)
			len = (size_t)(cap - off);
		if (kind < 45) {
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)rnd(&s);
			ssize_t n = page_mapping_write(e.m, off, buf, len, size);
			if (n != (ssize_t)len)
				fail_msg("seed %" PRIu64 " op %d: write(%" PRIu64 ", %zu) = %zd: %s", seed, op, off, len, n,
					 err_last((int)n));
			memcpy(model + off, buf, len);
			if (off + len > size)
				size = off + len;
		} else if (kind < 75) {
			ssize_t n = page_mapping_read(e.m, off, buf, len, size);
			size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
			if (n != (ssize_t)want || memcmp(buf, model + off, want))
				fail_msg("seed %" PRIu64 " op %d: read(%" PRIu64 ", %zu) = %zd, want %zu (size %" PRIu64 ")",
					 seed, op, off, len, n, want, size);
		} else if (kind < 82) {
			uint64_t ns = off < size ? off : size;
			assert_int_equal(page_mapping_truncate(e.m, ns), 0);
			pfs_fs_free_from(&e.fs, ns / PS + (ns % PS != 0));
			memset(model + ns, 0, (size_t)(cap - ns));
			size = ns;
		} else if (kind < 88) {
			assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE_SYNC_PLUG), 0);
		} else if (kind < 94) {
			page_cache_flush_pass(e.pc, clock_now_ns() + (rnd(&s) % 2) * 60 * NS_PER_SEC);
		} else {
			page_mapping_invalidate(e.m, off / PS, off / PS + 8);
		}
		struct page_stats st = pfs_stats(&e);
		if (st.pages > st.max_pages || st.dirty + st.writeback > st.dirty_limit)
			fail_msg("seed %" PRIu64 " op %d: %" PRIu64 " pages, %" PRIu64 " dirty", seed, op, st.pages,
				 st.dirty);
	}
	/* Everything on the device: a cold cache reads the model back. */
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	page_mapping_invalidate(e.m, 0, PAGE_INDEX_MAX);
	assert_int_equal(page_mapping_nr_pages(e.m), 0);
	assert_int_equal(page_mapping_read(e.m, 0, buf, cap, size), (ssize_t)size);
	if (memcmp(buf, model, (size_t)size))
		fail_msg("seed %" PRIu64 ": device contents differ from the model", seed);
	free(model);
	free(buf);
	pfs_env_close(&e);
}

/* ------------------------------------------------------------ concurrent */

#define NTHREADS 4
#define TPAGES 24u

struct writer {
	struct page_cache *pc;
	struct fakefs fs;
	struct page_mapping *m;
	uint64_t seed;
	unsigned char *model;
	int err;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t s = w->seed;
	unsigned char buf[PS + 512];
	for (int op = 0; op < 400 && !w->err; op++) {
		uint64_t off = rnd(&s) % (TPAGES * PS - 512);
		size_t len = 1 + (size_t)(rnd(&s) % (PS + 512));
		if (len > TPAGES * PS - off)
			len = (size_t)(TPAGES * PS - off);
		unsigned k = (unsigned)(rnd(&s) % 10);
		if (k < 7) {
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)rnd(&s);
			if (page_mapping_write(w->m, off, buf, len, TPAGES * PS) != (ssize_t)len)
				w->err = -EIO;
			memcpy(w->model + off, buf, len);
		} else if (k < 9) {
			if (page_mapping_read(w->m, off, buf, len, TPAGES * PS) != (ssize_t)len ||
			    memcmp(buf, w->model + off, len))
				w->err = -EILSEQ;
		} else if (page_mapping_sync(w->m, 0, PAGE_INDEX_MAX, BLK_WRITE_SYNC_PLUG)) {
			w->err = -EIO;
		}
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	uint64_t seed = test_seed("test_concurrent");
	struct page_params p = pfs_quiet_params(32); /* smaller than 4 x 24 pages */
	p.writeback_interval_ms = 1;
	p.dirty_expire_ms = 2;
	struct env e;
	pfs_env_open(&e, "sim:ssd,size=64M,scale=0.01", &p, false);
	struct writer w[NTHREADS];
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].pc = e.pc;
		pfs_fs_init(&w[i].fs, true);
		w[i].fs.next_block = 4000 + (uint64_t)i * 1000;
		w[i].seed = seed + (uint64_t)i;
		w[i].model = calloc(1, TPAGES * PS);
		assert_int_equal(page_mapping_create(e.pc, &pfs_fs_ops, &w[i].fs, &w[i].m), 0);
		/* Start from a file of zeroes on disk. */
		assert_int_equal(page_mapping_write(w[i].m, 0, w[i].model, TPAGES * PS, 0), TPAGES * PS);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, writer_main, &w[i]);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < NTHREADS; i++) {
		if (w[i].err)
			fail_msg("seed %" PRIu64 " writer %d: %d", seed, i, w[i].err);
		assert_int_equal(page_mapping_sync(w[i].m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
		page_mapping_invalidate(w[i].m, 0, PAGE_INDEX_MAX);
		unsigned char *buf = malloc(TPAGES * PS);
		assert_int_equal(page_mapping_read(w[i].m, 0, buf, TPAGES * PS, TPAGES * PS), TPAGES * PS);
		if (memcmp(buf, w[i].model, TPAGES * PS))
			fail_msg("seed %" PRIu64 " writer %d: contents differ", seed, i);
		free(buf);
		assert_int_equal(page_mapping_flush_io_done(w[i].m), 0);
		assert_true(w[i].fs.ndone > 0);
		page_mapping_destroy(w[i].m);
		pthread_mutex_destroy(&w[i].fs.lock);
		free(w[i].model);
	}
	struct page_stats s = pfs_stats(&e);
	assert_true(s.peak_pages <= s.max_pages);
	printf("concurrent: written %" PRIu64 " pages in %" PRIu64 " bios, evictions %" PRIu64 ", throttled %" PRIu64
	       ", flusher passes %" PRIu64 "\n",
	       s.pages_written, s.write_bios, s.evictions, s.throttled, s.flusher_passes);
	pfs_env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holes_read_zero),
		cmocka_unit_test(test_write_readback),
		cmocka_unit_test(test_partial_writes),
		cmocka_unit_test(test_writeback_runs),
		cmocka_unit_test(test_sync_modes),
		cmocka_unit_test(test_io_done_worker),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_overlay),
		cmocka_unit_test(test_budget_bound),
		cmocka_unit_test(test_dirty_floor),
		cmocka_unit_test(test_throttle_waits),
		cmocka_unit_test(test_flusher_pass),
		cmocka_unit_test(test_flusher_thread),
		cmocka_unit_test(test_tunables),
		cmocka_unit_test(test_random_model),
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
