/* Buffer cache: references, reads and readahead, wait unplugs, LRU bound and
 * reclaim order, I/O errors. Sync, fsync lists, the writeback thread and
 * threads: test_buf_write.c; shared fixtures: test_buf_env.h.
 * nostall-test: concurrent (the default writeback thread, the queue dispatcher)
 */
#include "test_buf_env.h"

/* ------------------------------------------------------------------ */

static void test_get_put_refcount(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "mem:16M", NULL, NULL);
	assert_int_equal(buf_cache_block_size(e.c), BS);
	assert_int_equal(buf_cache_nr_blocks(e.c), (16u << 20) / BS);
	assert_ptr_equal(buf_cache_queue(e.c), e.q);

	struct buffer_head *a = buf_get(e.c, 7, NULL);
	assert_non_null(a);
	assert_int_equal(buf_blocknr(a), 7);
	assert_int_equal(buf_size(a), BS);
	assert_ptr_equal(buf_cache_of(a), e.c);
	assert_true(buf_mapped(a));
	assert_false(buf_uptodate(a));
	assert_false(buf_dirty(a));
	assert_false(buf_locked(a));
	assert_false(buf_req(a));
	assert_null(buf_private(a));
	assert_int_equal((uintptr_t)buf_data(a) % 4096, 0);

	struct buffer_head *b = buf_get(e.c, 7, NULL);
	assert_ptr_equal(a, b);
	buf_hold(a);
	assert_int_equal(bstats(e.c).cached, 1);
	buf_put(a);
	buf_put(b);
	buf_put(NULL);
	/* Still referenced once: drop_clean keeps it. */
	buf_cache_drop_clean(e.c);
	assert_int_equal(bstats(e.c).cached, 1);
	buf_put(a);
	buf_cache_drop_clean(e.c);
	assert_int_equal(bstats(e.c).cached, 0);

	/* Past the end. */
	int err = 0;
	assert_null(buf_get(e.c, buf_cache_nr_blocks(e.c), &err));
	assert_int_equal(err, -ERANGE);
	struct buffer_head *x = (void *)1;
	assert_int_equal(buf_read(e.c, 1ull << 40, &x), -ERANGE);
	assert_null(x);

	/* State bits. */
	a = buf_get(e.c, 3, NULL);
	buf_set_new(a, true);
	assert_true(buf_new(a));
	buf_set_new(a, false);
	assert_false(buf_new(a));
	buf_set_jbd(a, true);
	assert_true(buf_jbd(a));
	buf_set_jbd(a, false);
	int cookie;
	buf_set_private(a, &cookie);
	assert_ptr_equal(buf_private(a), &cookie);
	buf_set_private(a, NULL);
	assert_true(buf_trylock(a));
	assert_false(buf_trylock(a));
	assert_true(buf_locked(a));
	buf_unlock(a);
	assert_false(buf_locked(a));
	/* submit requires the lock. */
	assert_int_equal(buf_submit(a, BLK_READ), -EINVAL);
	/* bforget drops dirty state and the reference. */
	buf_set_uptodate(a);
	buf_mark_dirty(a);
	assert_int_equal(bstats(e.c).dirty, 1);
	assert_true(buf_test_clear_dirty(a));
	assert_false(buf_test_clear_dirty(a));
	buf_mark_dirty(a);
	buf_forget(a);
	assert_int_equal(bstats(e.c).dirty, 0);
	assert_int_equal(buf_cache_sync(e.c), 0);
	assert_int_equal(bstats(e.c).writes, 0);
	env_close(&e);
}

/* buf_verified (the kernel's buffer_verified): a check of the contents
 * holds until they are read again or lose uptodate, so a checksum is
 * verified once per read from disk, never skipped on fresh contents. */
static void test_verified(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "mem:16M", NULL, NULL);
	struct buffer_head *bh;
	assert_int_equal(buf_read(e.c, 5, &bh), 0);
	assert_false(buf_verified(bh));
	buf_set_verified(bh);
	assert_true(buf_verified(bh));
	/* a hit keeps it */
	struct buffer_head *again;
	assert_int_equal(buf_read(e.c, 5, &again), 0);
	assert_ptr_equal(again, bh);
	assert_true(buf_verified(again));
	buf_put(again);
	/* losing uptodate voids it, and the read that follows leaves it clear */
	buf_clear_uptodate(bh);
	assert_false(buf_verified(bh));
	buf_set_verified(bh);
	buf_clear_uptodate(bh);
	buf_put(bh);
	assert_int_equal(buf_read(e.c, 5, &bh), 0);
	assert_false(buf_verified(bh));
	/* a read submitted over verified contents clears it before the I/O */
	buf_set_verified(bh);
	buf_lock(bh);
	assert_int_equal(buf_submit(bh, BLK_READ_SYNC), 0);
	assert_false(buf_verified(bh));
	buf_wait(bh);
	assert_false(buf_verified(bh));
	buf_put(bh);
	env_close(&e);
}

static void test_bad_create(void **state)
{
	(void)state;
	struct dev *d;
	struct blk_queue *q;
	assert_int_equal(dev_open("mem:1M", &d), 0);
	assert_int_equal(blk_queue_create(d, NULL, &q), 0);
	struct buf_cache *c = NULL;
	assert_int_equal(buf_cache_create(q, 512, NULL, &c), -EINVAL);
	assert_int_equal(buf_cache_create(q, 3000, NULL, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(buf_cache_create(q, 1024, NULL, &c), 0);
	assert_int_equal(buf_cache_nr_blocks(c), 1024);
	struct buffer_head *bh;
	assert_int_equal(buf_read(c, 1023, &bh), 0); /* last block, with the default thread */
	buf_put(bh);
	buf_cache_destroy(c);
	blk_queue_destroy(q);
	dev_close(d);
}

static void test_bread_known_data(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "mem:16M", NULL, NULL);
	dev_write_block(e.d, 5, 1);
	dev_write_block(e.d, 9, 2);
	struct buffer_head *bh;
	assert_int_equal(buf_read(e.c, 5, &bh), 0);
	assert_true(buf_uptodate(bh));
	assert_true(buf_req(bh));
	assert_false(buf_locked(bh));
	assert_true(check(buf_data(bh), 5, 1));
	buf_put(bh);
	struct buf_stats s = bstats(e.c);
	assert_int_equal(s.misses, 1);
	assert_int_equal(s.reads, 1);
	assert_int_equal(s.hits, 0);
	/* A second read is a hit without I/O. */
	assert_int_equal(buf_read(e.c, 5, &bh), 0);
	assert_true(check(buf_data(bh), 5, 1));
	buf_put(bh);
	s = bstats(e.c);
	assert_int_equal(s.hits, 1);
	assert_int_equal(s.reads, 1);
	/* ll_rw_block READ + wait. */
	bh = buf_get(e.c, 9, NULL);
	buf_ll_rw_block(BLK_READ, 1, &bh);
	buf_wait(bh);
	assert_true(buf_uptodate(bh));
	assert_true(check(buf_data(bh), 9, 2));
	/* Nothing to do for an uptodate buffer. */
	buf_ll_rw_block(BLK_READ, 1, &bh);
	assert_int_equal(bstats(e.c).reads, 2);
	buf_put(bh);
	env_close(&e);
}

static void test_dirty_sync_roundtrip(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "sim:hdd,size=64M,scale=0.01", NULL, NULL);
	for (uint64_t b = 100; b < 110; b++)
		buf_put(dirty_block(e.c, b, 3));
	buf_put(dirty_block(e.c, 7, 3));
	assert_int_equal(bstats(e.c).dirty, 11);
	struct dev_sim_stats ss0, ss1;
	assert_int_equal(dev_sim_stats(e.d, &ss0), 0);
	struct blk_stats q0 = qstats(e.q);
	assert_int_equal(buf_cache_sync(e.c), 0);
	struct blk_stats q1 = qstats(e.q);
	assert_int_equal(dev_sim_stats(e.d, &ss1), 0);
	assert_int_equal(bstats(e.c).dirty, 0);
	assert_int_equal(bstats(e.c).writes, 11);
	/* One flush reached the device; the writes were async (WRITE), as is
	 * the flush (like blkdev_issue_flush's WRITE_BARRIER). */
	assert_int_equal(ss1.flushes - ss0.flushes, 1);
	assert_int_equal(q1.device_requests[1] - q0.device_requests[1], 0);
	assert_true(q1.device_requests[0] - q0.device_requests[0] >= 3);  /* 7, 100..109, flush */
	assert_true(q1.device_requests[0] - q0.device_requests[0] <= 12);
	for (uint64_t b = 100; b < 110; b++)
		assert_true(dev_block_is(e.d, b, 3));
	assert_true(dev_block_is(e.d, 7, 3));
	/* Drop the cache and read back through it. */
	buf_cache_drop_clean(e.c);
	assert_int_equal(bstats(e.c).cached, 0);
	struct buffer_head *bh;
	assert_int_equal(buf_read(e.c, 104, &bh), 0);
	assert_true(check(buf_data(bh), 104, 3));
	buf_put(bh);
	env_close(&e);
}

static void test_readahead(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.readahead_blocks = 16;
	struct env e;
	env_open(&e, "mem:16M", NULL, &p);
	for (uint64_t b = 100; b < 140; b++)
		dev_write_block(e.d, b, 4);
	struct buffer_head *bh;
	/* Random misses: no readahead. */
	assert_int_equal(buf_read(e.c, 100, &bh), 0);
	buf_put(bh);
	assert_int_equal(buf_read(e.c, 90, &bh), 0);
	buf_put(bh);
	assert_int_equal(bstats(e.c).readahead, 0);
	/* A miss at 101 right after a miss at 100... not quite: the last miss was 90. */
	assert_int_equal(buf_read(e.c, 101, &bh), 0);
	buf_put(bh);
	assert_int_equal(bstats(e.c).readahead, 0);
	/* 102 right after the miss at 101: READ 103..118. */
	struct blk_stats q0 = qstats(e.q);
	assert_int_equal(buf_read(e.c, 102, &bh), 0);
	assert_true(check(buf_data(bh), 102, 4));
	buf_put(bh);
	struct buf_stats s = bstats(e.c);
	assert_int_equal(s.readahead, 16);
	assert_int_equal(s.misses, 4);
	struct blk_stats q1 = qstats(e.q);
	assert_int_equal(q1.bios - q0.bios, 17);
	/* Those blocks are served from the cache (waiting for the I/O if
	 * needed); reading 103 (the window's first block) starts 119..134. */
	for (uint64_t b = 103; b < 119; b++) {
		assert_int_equal(buf_read(e.c, b, &bh), 0);
		assert_true(check(buf_data(bh), b, 4));
		buf_put(bh);
	}
	s = bstats(e.c);
	assert_int_equal(s.misses, 4);
	assert_int_equal(s.hits, 16);
	assert_int_equal(s.readahead, 32);
	/* buf_readahead explicitly: only uncached blocks. */
	buf_readahead(e.c, 130, 8); /* 130..134 cached, 135..137 not */
	s = bstats(e.c);
	assert_int_equal(s.readahead, 35);
	/* Never past the end. */
	buf_readahead(e.c, buf_cache_nr_blocks(e.c) - 2, 8);
	assert_int_equal(bstats(e.c).readahead, 37);
	/* Disabled: no readahead. */
	env_close(&e);

	p.readahead_blocks = 0;
	env_open(&e, "mem:16M", NULL, &p);
	for (uint64_t b = 0; b < 10; b++) {
		assert_int_equal(buf_read(e.c, b, &bh), 0);
		buf_put(bh);
	}
	s = bstats(e.c);
	assert_int_equal(s.readahead, 0);
	assert_int_equal(s.misses, 10);
	env_close(&e);
}

/* Readahead never grows a full cache. */
static void test_readahead_respects_bound(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.max_bytes = 16 * BS;
	p.readahead_blocks = 32;
	struct env e;
	env_open(&e, "mem:16M", NULL, &p);
	struct buffer_head *held[15], *bh;
	for (int i = 0; i < 15; i++)
		held[i] = buf_get(e.c, 1000 + (uint64_t)i, NULL);
	assert_int_equal(buf_read(e.c, 10, &bh), 0);
	buf_put(bh);
	assert_int_equal(buf_read(e.c, 11, &bh), 0); /* sequential: would read ahead 12..43 */
	buf_put(bh);
	struct buf_stats s = bstats(e.c);
	assert_int_equal(s.readahead, 0);
	assert_int_equal(s.pressure, 0);
	assert_int_equal(s.cached, 16);
	for (int i = 0; i < 15; i++)
		buf_put(held[i]);
	/* With room again it reads ahead, reusing LRU buffers, at most a
	 * quarter of the cache (two windows must fit). */
	assert_int_equal(buf_read(e.c, 12, &bh), 0);
	buf_put(bh);
	s = bstats(e.c);
	assert_int_equal(s.readahead, 4);
	/* A sequential reader hits every block from here on. */
	uint64_t m = s.misses;
	for (uint64_t b = 13; b < 60; b++)
		assert_true(has_block(e.c, b));
	s = bstats(e.c);
	assert_int_equal(s.misses, m);
	assert_true(s.readahead >= 48);
	assert_int_equal(s.pressure, 0);
	assert_int_equal(s.cached, 16);
	env_close(&e);
}

/* Readahead on a plugged queue: the block and its window merge into one
 * request, dispatched by the wait's unplug. */
static void test_readahead_merges(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.readahead_blocks = 32;
	struct env e;
	env_open(&e, "sim:hdd,size=64M,scale=0.01", "scheduler=deadline,unplug_delay_ms=1000", &p);
	struct buffer_head *bh;
	assert_int_equal(buf_read(e.c, 1000, &bh), 0);
	buf_put(bh);
	struct blk_stats q0 = qstats(e.q);
	uint64_t t0 = clock_now_ns();
	assert_int_equal(buf_read(e.c, 1001, &bh), 0);
	uint64_t dt = clock_now_ns() - t0;
	buf_put(bh);
	struct blk_stats q1 = qstats(e.q);
	assert_int_equal(q1.bios - q0.bios, 33);
	assert_int_equal(q1.device_requests[1] - q0.device_requests[1], 1);
	assert_int_equal(q1.unplugs_timer - q0.unplugs_timer, 0); /* not the 1 s timer */
	printf("readahead: 33 blocks in %" PRIu64 " request(s), %.2f ms\n",
	       q1.device_requests[1] - q0.device_requests[1], dt / 1e6);
	env_close(&e);
}

/* A sequential scan: with readahead the device sees few large requests and
 * the reader never misses after the first window. */
static uint64_t seq_scan(unsigned ra, double *ms, uint64_t *misses)
{
	struct buf_params p = quiet_params();
	p.readahead_blocks = ra;
	struct env e;
	/* deadline: CFQ's kick of the queue it idles on dispatches a window's
	 * first bios alone, as often as the real-time scheduling of the test
	 * thread allows (68 to 277 requests seen under ASan). */
	env_open(&e, "sim:hdd,size=64M,scale=0.01", "scheduler=deadline", &p);
	struct blk_stats q0 = qstats(e.q);
	uint64_t t0 = clock_now_ns();
	for (uint64_t b = 0; b < 2048; b++) {
		struct buffer_head *bh;
		assert_int_equal(buf_read(e.c, b, &bh), 0);
		buf_put(bh);
	}
	*ms = (clock_now_ns() - t0) / 1e6;
	struct blk_stats q1 = qstats(e.q);
	*misses = bstats(e.c).misses;
	env_close(&e);
	return (q1.device_requests[0] + q1.device_requests[1]) - (q0.device_requests[0] + q0.device_requests[1]);
}

static void test_sequential_scan(void **state)
{
	(void)state;
	double t0, t32;
	uint64_t m0, m32;
	uint64_t r0 = seq_scan(0, &t0, &m0);
	uint64_t r32 = seq_scan(32, &t32, &m32);
	printf("sequential scan of 8 MiB (2048 x 4 KiB) on sim:hdd,scale=0.01:\n"
	       "  readahead 0:  %4" PRIu64 " requests, %4" PRIu64 " misses, %.1f ms\n"
	       "  readahead 32: %4" PRIu64 " requests, %4" PRIu64 " misses, %.1f ms\n",
	       r0, m0, t0, r32, m32, t32);
	assert_int_equal(r0, 2048);
	assert_int_equal(m0, 2048);
	assert_true(m32 <= 3);
	/* Each buffer is its own bio: the first bio of a window may go out
	 * alone (an empty queue is not plugged while another request is at
	 * the device), the rest merge. */
	assert_true(r32 * 8 < r0);
}

/* A plugged queue with one request: buf_wait unplugs instead of sleeping
 * until the unplug timer (set to 1 s here). */
static void test_wait_unplugs(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "sim:hdd,size=64M,scale=0.01", "scheduler=deadline,unplug_delay_ms=1000", NULL);
	struct buffer_head *bh = buf_get(e.c, 50, NULL);
	struct blk_stats q0 = qstats(e.q);
	buf_ll_rw_block(BLK_READ, 1, &bh); /* READ: no UNPLUG flag */
	assert_true(buf_locked(bh));
	assert_true(blk_queue_plugged(e.q));
	buf_wait(bh);
	struct blk_stats q1 = qstats(e.q);
	assert_false(buf_locked(bh));
	assert_true(buf_uptodate(bh));
	assert_int_equal(q1.unplugs_wait - q0.unplugs_wait, 1);
	assert_int_equal(q1.unplugs_timer - q0.unplugs_timer, 0); /* not the 1 s timer */
	/* Waiting on an unlocked buffer does nothing. */
	buf_wait(bh);
	assert_int_equal(qstats(e.q).unplugs_wait, q1.unplugs_wait);
	/* buf_lock on a buffer under plugged I/O unplugs too. */
	buf_put(bh);
	bh = buf_get(e.c, 60, NULL);
	buf_ll_rw_block(BLK_READ, 1, &bh);
	assert_true(blk_queue_plugged(e.q));
	buf_lock(bh);
	assert_true(buf_uptodate(bh));
	buf_unlock(bh);
	assert_int_equal(qstats(e.q).unplugs_wait - q1.unplugs_wait, 1);
	buf_put(bh);
	env_close(&e);
}

static void test_lru_bound_and_order(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.max_bytes = 16 * BS;
	p.readahead_blocks = 0;
	struct env e;
	env_open(&e, "mem:16M", NULL, &p);
	struct buffer_head *bh;
	for (uint64_t b = 0; b < 16; b++) {
		assert_int_equal(buf_read(e.c, b * 2, &bh), 0);
		buf_put(bh);
	}
	assert_int_equal(bstats(e.c).cached, 16);
	assert_int_equal(bstats(e.c).max_cached, 16);
	/* Touch block 0: now block 2 is the least recently used. */
	assert_true(has_block(e.c, 0));
	assert_int_equal(buf_read(e.c, 100, &bh), 0);
	buf_put(bh);
	struct buf_stats s = bstats(e.c);
	assert_int_equal(s.cached, 16);
	assert_int_equal(s.reclaimed, 1);
	assert_true(has_block(e.c, 0));
	assert_true(has_block(e.c, 4));  /* 2 went, 4 stays */
	assert_false(has_block(e.c, 2)); /* re-reading 2 evicts 6 (4 was touched) */
	assert_false(has_block(e.c, 6));

	/* Referenced, dirty, jbd and private buffers are never reclaimed. */
	struct buffer_head *held = buf_get(e.c, 500, NULL);
	buf_put(dirty_block(e.c, 501, 1));
	struct buffer_head *j = buf_get(e.c, 502, NULL);
	buf_set_jbd(j, true);
	buf_put(j);
	struct buffer_head *pr = buf_get(e.c, 503, NULL);
	int cookie;
	buf_set_private(pr, &cookie);
	buf_put(pr);
	for (uint64_t b = 1000; b < 1100; b++) {
		assert_int_equal(buf_read(e.c, b, &bh), 0);
		buf_put(bh);
	}
	s = bstats(e.c);
	assert_int_equal(s.cached, 16);
	assert_int_equal(s.pressure, 0);
	bh = buf_get(e.c, 501, NULL);
	assert_true(buf_dirty(bh));
	assert_true(check(buf_data(bh), 501, 1));
	buf_put(bh);
	bh = buf_get(e.c, 502, NULL);
	assert_true(buf_jbd(bh));
	buf_set_jbd(bh, false);
	buf_put(bh);
	bh = buf_get(e.c, 503, NULL);
	assert_ptr_equal(buf_private(bh), &cookie);
	buf_set_private(bh, NULL);
	buf_put(bh);

	/* Over the bound with nothing reclaimable: still allocates. */
	struct buffer_head *refs[40];
	for (int i = 0; i < 40; i++) {
		refs[i] = buf_get(e.c, 2000 + (uint64_t)i, NULL);
		assert_non_null(refs[i]);
	}
	s = bstats(e.c);
	assert_true(s.cached >= 40);
	assert_true(s.pressure >= 24);
	for (int i = 0; i < 40; i++)
		buf_put(refs[i]);
	/* And shrinks back when buffers become reclaimable. */
	for (uint64_t b = 3000; b < 3100; b++) {
		assert_int_equal(buf_read(e.c, b, &bh), 0);
		buf_put(bh);
	}
	s = bstats(e.c);
	assert_true(s.cached <= 17);
	buf_put(held);
	assert_int_equal(buf_cache_sync(e.c), 0);
	env_close(&e);
}

static void test_write_error(void **state)
{
	(void)state;
	struct env e;
	/* block 100 = sectors 800..807 */
	env_open(&e, "fault:mem:16M,op=write,sector=800-807,err=eio", NULL, NULL);
	struct buffer_head *bh = dirty_block(e.c, 100, 13);
	assert_int_equal(buf_sync_dirty(bh), -EIO);
	assert_true(buf_write_io_error(bh));
	assert_false(buf_dirty(bh));
	assert_false(buf_uptodate(bh));
	assert_false(buf_locked(bh));
	assert_int_equal(bstats(e.c).write_errors, 1);
	/* The error is also reported (once) by the next cache sync. */
	assert_int_equal(buf_cache_sync(e.c), -EIO);
	assert_int_equal(buf_cache_sync(e.c), 0);
	buf_clear_write_io_error(bh);
	assert_false(buf_write_io_error(bh));
	/* fsync_buffers_list reports it too, and writes the good ones. */
	struct buffer_head *list[3] = { dirty_block(e.c, 99, 13), bh, dirty_block(e.c, 101, 13) };
	buf_lock(bh);
	fill(buf_data(bh), 100, 13);
	buf_set_uptodate(bh);
	buf_mark_dirty(bh);
	buf_unlock(bh);
	assert_int_equal(buf_fsync_list(3, list), -EIO);
	assert_true(buf_write_io_error(bh));
	assert_true(dev_block_is(e.d, 99, 13));
	assert_true(dev_block_is(e.d, 101, 13));
	/* Asynchronous (cache sync) write errors. */
	buf_lock(bh);
	buf_set_uptodate(bh);
	buf_mark_dirty(bh);
	buf_unlock(bh);
	assert_int_equal(buf_cache_sync(e.c), -EIO);
	assert_int_equal(bstats(e.c).dirty, 0);
	buf_put(list[0]);
	buf_put(list[2]);
	buf_put(bh);
	env_close(&e);
}

static void test_read_error(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.readahead_blocks = 4;
	struct env e;
	env_open(&e, "fault:mem:16M,op=read,sector=800-807,err=eio", NULL, &p);
	struct buffer_head *bh = (void *)1;
	assert_int_equal(buf_read(e.c, 100, &bh), -EIO);
	assert_null(bh);
	assert_int_equal(bstats(e.c).read_errors, 1);
	/* Not cached as uptodate: a retry reads (and fails) again. */
	assert_int_equal(buf_read(e.c, 100, &bh), -EIO);
	assert_int_equal(bstats(e.c).read_errors, 2);
	/* A readahead window over the bad block: the others are fine. */
	assert_int_equal(buf_read(e.c, 97, &bh), 0);
	buf_put(bh);
	assert_int_equal(buf_read(e.c, 98, &bh), 0); /* READ 99..102 */
	buf_put(bh);
	assert_int_equal(buf_read(e.c, 99, &bh), 0);
	buf_put(bh);
	assert_int_equal(buf_read(e.c, 100, &bh), -EIO);
	assert_int_equal(buf_read(e.c, 101, &bh), 0);
	buf_put(bh);
	env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_put_refcount),
		cmocka_unit_test(test_bad_create),
		cmocka_unit_test(test_verified),
		cmocka_unit_test(test_bread_known_data),
		cmocka_unit_test(test_dirty_sync_roundtrip),
		cmocka_unit_test(test_readahead),
		cmocka_unit_test(test_readahead_respects_bound),
		cmocka_unit_test(test_readahead_merges),
		cmocka_unit_test(test_sequential_scan),
		cmocka_unit_test(test_wait_unplugs),
		cmocka_unit_test(test_lru_bound_and_order),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_read_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
