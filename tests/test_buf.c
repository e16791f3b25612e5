/* Buffer cache: references, reads and readahead, dirty + sync, the era ops of
 * sync_dirty_buffer and fsync_buffers_list, wait unplugs, LRU bound and
 * reclaim order, the writeback thread, I/O errors, threads.
 * nostall-test: concurrent
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blk/blk.h"
#include "buf/buf.h"
#include "dev/dev.h"
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
#include <unistd.h>

#define BS 4096u
#define SPB (BS / DEV_SECTOR_SIZE)

struct env {
	struct dev *d;
	struct blk_queue *q;
	struct buf_cache *c;
};

static struct buf_params quiet_params(void)
{
	struct buf_params p;
	buf_params_default(&p);
	p.writeback_interval_ms = 0; /* no thread unless a test wants one */
	return p;
}

static void env_open(struct env *e, const char *spec, const char *qopts, const struct buf_params *p)
{
	memset(e, 0, sizeof *e);
	int rc = dev_open(spec, &e->d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	rc = blk_queue_create(e->d, qopts, &e->q);
	if (rc)
		fail_msg("blk_queue_create(%s): %s", qopts ? qopts : "", err_last(rc));
	struct buf_params qp = quiet_params();
	rc = buf_cache_create(e->q, BS, p ? p : &qp, &e->c);
	if (rc)
		fail_msg("buf_cache_create: %s", err_last(rc));
}

static void env_close(struct env *e)
{
	buf_cache_destroy(e->c);
	blk_queue_destroy(e->q);
	dev_close(e->d);
}

static void fill(void *p, uint64_t block, unsigned tag)
{
	uint64_t *w = p;
	for (unsigned i = 0; i < BS / 8; i++)
		w[i] = block * 1000003u + tag * 7919u + i;
}

static bool check(const void *p, uint64_t block, unsigned tag)
{
	const uint64_t *w = p;
	for (unsigned i = 0; i < BS / 8; i++)
		if (w[i] != block * 1000003u + tag * 7919u + i)
			return false;
	return true;
}

static void dev_write_block(struct dev *d, uint64_t block, unsigned tag)
{
	void *b;
	assert_int_equal(posix_memalign(&b, 4096, BS), 0);
	fill(b, block, tag);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, block * SPB, SPB, b, 0), 0);
	free(b);
}

static bool dev_block_is(struct dev *d, uint64_t block, unsigned tag)
{
	void *b;
	assert_int_equal(posix_memalign(&b, 4096, BS), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, block * SPB, SPB, b, 0), 0);
	bool ok = check(b, block, tag);
	free(b);
	return ok;
}

/* Make a buffer dirty with known contents (as a filesystem would). */
static struct buffer_head *dirty_block(struct buf_cache *c, uint64_t block, unsigned tag)
{
	struct buffer_head *bh = buf_get(c, block, NULL);
	assert_non_null(bh);
	buf_lock(bh);
	fill(buf_data(bh), block, tag);
	buf_set_uptodate(bh);
	buf_mark_dirty(bh);
	buf_unlock(bh);
	return bh;
}

static struct buf_stats bstats(struct buf_cache *c)
{
	struct buf_stats s;
	buf_cache_stats(c, &s);
	return s;
}

static struct blk_stats qstats(struct blk_queue *q)
{
	struct blk_stats s;
	blk_queue_stats_get(q, &s);
	return s;
}

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

static bool has_block(struct buf_cache *c, uint64_t block);

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

static void sync_dirty_case(const char *preset, bool expect_sync)
{
	char opts[64];
	snprintf(opts, sizeof opts, "preset=%s", preset);
	struct env e;
	env_open(&e, "sim:hdd,size=64M,scale=0.01", opts, NULL);
	struct buffer_head *bh = dirty_block(e.c, 33, 5);
	struct blk_stats q0 = qstats(e.q);
	assert_int_equal(buf_sync_dirty(bh), 0);
	struct blk_stats q1 = qstats(e.q);
	assert_false(buf_dirty(bh));
	assert_false(buf_locked(bh));
	assert_true(dev_block_is(e.d, 33, 5));
	assert_int_equal(q1.device_requests[1] - q0.device_requests[1], expect_sync ? 1 : 0);
	assert_int_equal(q1.device_requests[0] - q0.device_requests[0], expect_sync ? 0 : 1);
	/* Clean: nothing written. */
	assert_int_equal(buf_sync_dirty(bh), 0);
	struct blk_stats q2 = qstats(e.q);
	assert_int_equal(q2.device_requests[0] + q2.device_requests[1], q1.device_requests[0] + q1.device_requests[1]);
	buf_put(bh);
	env_close(&e);
}

static void test_sync_dirty_op_by_preset(void **state)
{
	(void)state;
	sync_dirty_case("2.6.29", false);
	sync_dirty_case("2.6.30-rc1", true);
	sync_dirty_case("2.6.30", true);
}

static uint64_t fsync_list_case(const char *preset, uint64_t *merges, double *ms)
{
	char opts[64];
	snprintf(opts, sizeof opts, "preset=%s", preset);
	struct env e;
	env_open(&e, "sim:hdd,size=64M,scale=0.05", opts, NULL);
	struct buffer_head *bhs[66];
	for (int i = 0; i < 64; i++)
		bhs[i] = dirty_block(e.c, 2000 + (uint64_t)i, 6);
	/* A clean buffer and a jbd-owned dirty one are left alone. */
	bhs[64] = buf_get(e.c, 10, NULL);
	bhs[65] = dirty_block(e.c, 11, 6);
	buf_set_jbd(bhs[65], true);
	struct blk_stats q0 = qstats(e.q);
	uint64_t t0 = clock_now_ns();
	assert_int_equal(buf_fsync_list(66, bhs), 0);
	*ms = (clock_now_ns() - t0) / 1e6;
	struct blk_stats q1 = qstats(e.q);
	for (int i = 0; i < 64; i++) {
		assert_false(buf_dirty(bhs[i]));
		assert_false(buf_locked(bhs[i]));
	}
	assert_true(buf_dirty(bhs[65]));
	for (int i = 0; i < 64; i++)
		assert_true(dev_block_is(e.d, 2000 + (uint64_t)i, 6));
	assert_false(dev_block_is(e.d, 11, 6));
	assert_int_equal(q1.bios - q0.bios, 64);
	*merges = (q1.merges_back + q1.merges_front + q1.merges_rq) - (q0.merges_back + q0.merges_front + q0.merges_rq);
	uint64_t reqs = (q1.device_requests[0] + q1.device_requests[1]) - (q0.device_requests[0] + q0.device_requests[1]);
	buf_set_jbd(bhs[65], false);
	assert_true(buf_test_clear_dirty(bhs[65]));
	for (int i = 0; i < 66; i++)
		buf_put(bhs[i]);
	env_close(&e);
	return reqs;
}

static void test_fsync_list_plugging(void **state)
{
	(void)state;
	uint64_t m30, m29rc, m29;
	double t30, t29rc, t29;
	uint64_t r30 = fsync_list_case("2.6.30", &m30, &t30);
	uint64_t r29rc = fsync_list_case("2.6.30-rc1", &m29rc, &t29rc);
	uint64_t r29 = fsync_list_case("2.6.29", &m29, &t29);
	printf("fsync_buffers_list, 64 adjacent 4 KiB buffers on sim:hdd,scale=0.05:\n"
	       "  2.6.30     %3" PRIu64 " device requests, %2" PRIu64 " merges, %.2f ms\n"
	       "  2.6.30-rc1 %3" PRIu64 " device requests, %2" PRIu64 " merges, %.2f ms\n"
	       "  2.6.29     %3" PRIu64 " device requests, %2" PRIu64 " merges, %.2f ms\n",
	       r30, m30, t30, r29rc, m29rc, t29rc, r29, m29, t29);
	assert_int_equal(r30, 1);
	assert_int_equal(m30, 63);
	assert_true(r29rc >= 8);
	assert_true(r29 >= 8);
}

/* Buffers of two queues: both are written, one request each (the first
 * queue is kicked when the list moves on to the second). */
static void test_fsync_list_two_queues(void **state)
{
	(void)state;
	struct env a, b;
	env_open(&a, "sim:hdd,size=64M,scale=0.01", "unplug_delay_ms=1000", NULL);
	env_open(&b, "sim:hdd,size=64M,scale=0.01", "unplug_delay_ms=1000", NULL);
	struct buffer_head *bhs[16];
	for (int i = 0; i < 8; i++) {
		bhs[i] = dirty_block(a.c, 300 + (uint64_t)i, 7);
		bhs[8 + i] = dirty_block(b.c, 500 + (uint64_t)i, 8);
	}
	struct blk_stats a0 = qstats(a.q), b0 = qstats(b.q);
	assert_int_equal(buf_fsync_list(16, bhs), 0);
	struct blk_stats a1 = qstats(a.q), b1 = qstats(b.q);
	assert_int_equal(a1.device_requests[1] - a0.device_requests[1], 1);
	assert_int_equal(b1.device_requests[1] - b0.device_requests[1], 1);
	assert_int_equal(a1.unplugs_timer - a0.unplugs_timer, 0);
	assert_int_equal(b1.unplugs_timer - b0.unplugs_timer, 0);
	assert_int_equal(a1.unplugs_wait - a0.unplugs_wait, 1); /* the kick */
	assert_int_equal(b1.unplugs_wait - b0.unplugs_wait, 1); /* the first wait */
	for (int i = 0; i < 8; i++) {
		assert_true(dev_block_is(a.d, 300 + (uint64_t)i, 7));
		assert_true(dev_block_is(b.d, 500 + (uint64_t)i, 8));
	}
	for (int i = 0; i < 16; i++)
		buf_put(bhs[i]);
	env_close(&a);
	env_close(&b);
}

struct swrite_arg {
	struct buffer_head *bh;
	atomic_bool done;
};

static void *swrite_thread(void *p)
{
	struct swrite_arg *a = p;
	buf_ll_rw_block(BLK_SWRITE, 1, &a->bh);
	atomic_store(&a->done, true);
	return NULL;
}

static void test_ll_rw_block_swrite(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, "mem:16M", NULL, NULL);
	struct buffer_head *bh = dirty_block(e.c, 40, 9);
	buf_lock(bh);
	/* WRITE skips a locked buffer. */
	buf_ll_rw_block(BLK_WRITE, 1, &bh);
	assert_true(buf_dirty(bh));
	assert_int_equal(bstats(e.c).writes, 0);
	/* SWRITE waits for the lock. */
	struct swrite_arg a = { .bh = bh };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, swrite_thread, &a), 0);
	clock_sleep_ns(30 * NS_PER_MS);
	assert_false(atomic_load(&a.done));
	assert_true(buf_dirty(bh));
	buf_unlock(bh);
	pthread_join(t, NULL);
	buf_wait(bh);
	assert_false(buf_dirty(bh));
	assert_int_equal(bstats(e.c).writes, 1);
	assert_true(dev_block_is(e.d, 40, 9));
	/* WRITE of a clean buffer: nothing. */
	buf_ll_rw_block(BLK_WRITE, 1, &bh);
	assert_int_equal(bstats(e.c).writes, 1);
	buf_put(bh);
	env_close(&e);
}

static bool has_block(struct buf_cache *c, uint64_t block)
{
	/* Probe through buf_read's hit counter. */
	uint64_t h = bstats(c).hits;
	struct buffer_head *bh;
	assert_int_equal(buf_read(c, block, &bh), 0);
	buf_put(bh);
	return bstats(c).hits > h;
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

static void test_writeback_thread(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.dirty_expire_ms = 50;
	p.writeback_interval_ms = 10;
	struct env e;
	env_open(&e, "mem:16M", NULL, &p);
	for (uint64_t b = 0; b < 10; b++)
		buf_put(dirty_block(e.c, 20 + b * 3, 10));
	struct buffer_head *j = dirty_block(e.c, 5, 10);
	buf_set_jbd(j, true);
	uint64_t t0 = clock_now_ns();
	/* Not before the expiry. */
	clock_sleep_ns(20 * NS_PER_MS);
	struct buf_stats s = bstats(e.c);
	if (clock_now_ns() - t0 < 45 * NS_PER_MS)
		assert_int_equal(s.writeback_writes, 0);
	while (bstats(e.c).writeback_writes < 10 && clock_now_ns() - t0 < 5 * NS_PER_SEC)
		clock_sleep_ns(5 * NS_PER_MS);
	uint64_t dt = clock_now_ns() - t0;
	/* Wait for the in-flight writes (they hold references). */
	for (uint64_t b = 0; b < 10; b++) {
		struct buffer_head *bh = buf_get(e.c, 20 + b * 3, NULL);
		buf_wait(bh);
		buf_put(bh);
	}
	s = bstats(e.c);
	printf("writeback: 10 expired buffers written after %.1f ms (expire 50, interval 10)\n", dt / 1e6);
	assert_int_equal(s.writeback_writes, 10);
	assert_int_equal(s.dirty, 1); /* the jbd one */
	assert_true(buf_dirty(j));
	assert_true(dt >= 50 * NS_PER_MS);
	for (uint64_t b = 0; b < 10; b++)
		assert_true(dev_block_is(e.d, 20 + b * 3, 10));
	assert_false(dev_block_is(e.d, 5, 10));
	buf_set_jbd(j, false);
	buf_test_clear_dirty(j);
	buf_put(j);
	env_close(&e);
}

/* Past the background threshold the thread writes at once, down to it. */
static void test_writeback_background(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.max_bytes = 100 * BS;
	p.dirty_background_pct = 10; /* 10 buffers */
	p.dirty_expire_ms = 3600000;
	p.writeback_interval_ms = 3600000;
	struct env e;
	env_open(&e, "mem:16M", NULL, &p);
	for (uint64_t b = 0; b < 10; b++)
		buf_put(dirty_block(e.c, b, 11));
	clock_sleep_ns(30 * NS_PER_MS);
	assert_int_equal(bstats(e.c).writeback_writes, 0);
	for (uint64_t b = 10; b < 25; b++)
		buf_put(dirty_block(e.c, b, 11));
	uint64_t t0 = clock_now_ns();
	while (bstats(e.c).dirty > 10 && clock_now_ns() - t0 < 5 * NS_PER_SEC)
		clock_sleep_ns(2 * NS_PER_MS);
	struct buf_stats s = bstats(e.c);
	assert_true(s.dirty <= 10);
	assert_true(s.writeback_writes >= 15);
	/* Oldest first: block 0 was written. */
	clock_sleep_ns(10 * NS_PER_MS);
	assert_true(dev_block_is(e.d, 0, 11));
	assert_int_equal(buf_cache_sync(e.c), 0);
	assert_int_equal(bstats(e.c).dirty, 0);
	env_close(&e);
}

/* A cache full of dirty buffers: allocation goes over the bound (pressure)
 * and wakes the writeback thread, which cleans everything so that reclaim
 * brings the cache back under its bound. */
static void test_writeback_pressure(void **state)
{
	(void)state;
	struct buf_params p = quiet_params();
	p.max_bytes = 16 * BS;
	p.dirty_background_pct = 100;
	p.dirty_expire_ms = 3600000;
	p.writeback_interval_ms = 3600000;
	p.readahead_blocks = 0;
	struct env e;
	env_open(&e, "mem:16M", NULL, &p);
	for (uint64_t b = 0; b < 16; b++)
		buf_put(dirty_block(e.c, b, 14));
	assert_int_equal(bstats(e.c).writeback_writes, 0);
	struct buffer_head *bh;
	assert_int_equal(buf_read(e.c, 100, &bh), 0);
	buf_put(bh);
	assert_int_equal(bstats(e.c).pressure, 1);
	uint64_t t0 = clock_now_ns();
	while (bstats(e.c).writeback_writes < 16 && clock_now_ns() - t0 < 5 * NS_PER_SEC)
		clock_sleep_ns(2 * NS_PER_MS);
	assert_int_equal(bstats(e.c).writeback_writes, 16);
	assert_int_equal(buf_cache_sync(e.c), 0); /* waits for the I/O */
	for (uint64_t b = 200; b < 210; b++) {
		assert_int_equal(buf_read(e.c, b, &bh), 0);
		buf_put(bh);
	}
	struct buf_stats s = bstats(e.c);
	assert_int_equal(s.cached, 16);
	assert_int_equal(s.pressure, 1);
	assert_true(dev_block_is(e.d, 3, 14));
	env_close(&e);
}

/* The writeback thread writes in block order (noop keeps the order). */
static void test_writeback_block_order(void **state)
{
	(void)state;
	char logf[] = "/tmp/nostall-test-buf-XXXXXX";
	int fd = mkstemp(logf);
	assert_true(fd >= 0);
	close(fd);
	char spec[128];
	snprintf(spec, sizeof spec, "log:mem:16M,to=%s", logf);
	struct buf_params p = quiet_params();
	p.dirty_expire_ms = 20;
	p.writeback_interval_ms = 10;
	struct env e;
	env_open(&e, spec, "scheduler=noop", &p);
	uint64_t order[] = { 90, 10, 70, 30, 50, 110, 130, 5 };
	/* Dirty them out of order but hold each buffer locked (writeback skips
	 * locked buffers) until all have expired, then release them in block
	 * order: however a loaded machine schedules the writeback passes, a
	 * pass can only find a prefix of the blocks released so far, so any
	 * order in the log other than ascending is the writeback's doing. */
	struct buffer_head *held[8];
	for (unsigned i = 0; i < 8; i++) {
		held[i] = dirty_block(e.c, order[i], 12);
		buf_lock(held[i]);
	}
	clock_sleep_ns(40 * NS_PER_MS);
	for (uint64_t b = 0; b <= 130; b++)
		for (unsigned i = 0; i < 8; i++)
			if (order[i] == b) {
				buf_unlock(held[i]);
				buf_put(held[i]);
			}
	uint64_t t0 = clock_now_ns();
	while (bstats(e.c).writeback_writes < 8 && clock_now_ns() - t0 < 5 * NS_PER_SEC)
		clock_sleep_ns(5 * NS_PER_MS);
	assert_int_equal(buf_cache_sync(e.c), 0);
	env_close(&e);
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logf, &r), 0);
	struct dev_log_entry ent;
	uint64_t last = 0;
	int writes = 0;
	while (dev_log_reader_next(r, &ent) == 1) {
		if (!ent.nr_sectors)
			continue;
		assert_true(ent.sector >= last);
		last = ent.sector;
		writes++;
	}
	assert_int_equal(writes, 8);
	dev_log_reader_close(r);
	unlink(logf);
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

/* ------------------------------------------------------- concurrency */

#define CONC_BLOCKS 256
#define CONC_THREADS 6

struct conc {
	struct env e;
	atomic_uint versions[CONC_BLOCKS]; /* highest version written per block */
	unsigned seed;
	atomic_int failures;
	atomic_bool stop;
};

struct conc_arg {
	struct conc *k;
	unsigned id;
};

/* Layout of a block in this test: u64 block number, u64 version, rest zero. */
static void *conc_worker(void *p)
{
	struct conc_arg *a = p;
	struct conc *k = a->k;
	unsigned r = k->seed * 2654435761u + a->id;
	for (int it = 0; it < 3000; it++) {
		r = r * 1103515245u + 12345u;
		uint64_t b = (r >> 8) % CONC_BLOCKS;
		unsigned op = (r >> 20) % 10;
		struct buffer_head *bh;
		int rc = buf_read(k->e.c, b, &bh);
		if (rc) {
			atomic_fetch_add(&k->failures, 1);
			continue;
		}
		buf_lock(bh);
		const uint64_t *w = buf_data(bh);
		if (w[0] != b)
			atomic_fetch_add(&k->failures, 1);
		if (op < 4) {
			uint64_t *ww = buf_data(bh);
			ww[1]++;
			atomic_store(&k->versions[b], (unsigned)ww[1]);
			buf_mark_dirty(bh);
		}
		buf_unlock(bh);
		if (op == 4 && buf_sync_dirty(bh))
			atomic_fetch_add(&k->failures, 1);
		if (op == 5) {
			struct buffer_head *list[1] = { bh };
			if (buf_fsync_list(1, list))
				atomic_fetch_add(&k->failures, 1);
		}
		buf_put(bh);
		if (op == 6 && (r >> 28) == 0)
			buf_cache_drop_clean(k->e.c);
	}
	return NULL;
}

static void *conc_syncer(void *p)
{
	struct conc *k = p;
	while (!atomic_load(&k->stop)) {
		if (buf_cache_sync(k->e.c))
			atomic_fetch_add(&k->failures, 1);
		clock_sleep_ns(3 * NS_PER_MS);
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	(void)state;
	struct conc *k = calloc(1, sizeof *k);
	const char *env_seed = getenv("NOSTALL_SEED");
	k->seed = env_seed ? (unsigned)strtoul(env_seed, NULL, 0) : (unsigned)time(NULL);
	printf("test_concurrent seed %u (NOSTALL_SEED to repeat)\n", k->seed);
	struct buf_params p = quiet_params();
	p.max_bytes = 64 * BS; /* smaller than the working set: reclaim runs */
	p.readahead_blocks = 8;
	p.dirty_expire_ms = 5;
	p.writeback_interval_ms = 2;
	p.dirty_background_pct = 20;
	env_open(&k->e, "sim:ssd,size=16M,scale=0.01", NULL, &p);
	void *blk;
	assert_int_equal(posix_memalign(&blk, 4096, BS), 0);
	for (uint64_t b = 0; b < CONC_BLOCKS; b++) {
		memset(blk, 0, BS);
		((uint64_t *)blk)[0] = b;
		assert_int_equal(dev_rw_sync(k->e.d, DEV_OP_WRITE, b * SPB, SPB, blk, 0), 0);
	}
	pthread_t t[CONC_THREADS], s;
	struct conc_arg args[CONC_THREADS];
	for (unsigned i = 0; i < CONC_THREADS; i++) {
		args[i] = (struct conc_arg){ .k = k, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, conc_worker, &args[i]), 0);
	}
	assert_int_equal(pthread_create(&s, NULL, conc_syncer, k), 0);
	for (unsigned i = 0; i < CONC_THREADS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&k->stop, true);
	pthread_join(s, NULL);
	assert_int_equal(buf_cache_sync(k->e.c), 0);
	struct buf_stats st = bstats(k->e.c);
	printf("concurrent: hits %" PRIu64 " misses %" PRIu64 " reads %" PRIu64 " writes %" PRIu64
	       " writeback %" PRIu64 " reclaimed %" PRIu64 " pressure %" PRIu64 " cached %" PRIu64 "\n",
	       st.hits, st.misses, st.reads, st.writes, st.writeback_writes, st.reclaimed, st.pressure, st.cached);
	assert_int_equal(atomic_load(&k->failures), 0);
	assert_int_equal(st.dirty, 0);
	/* Updates are never lost: the device holds the last version of each. */
	for (uint64_t b = 0; b < CONC_BLOCKS; b++) {
		assert_int_equal(dev_rw_sync(k->e.d, DEV_OP_READ, b * SPB, SPB, blk, 0), 0);
		const uint64_t *w = blk;
		assert_int_equal(w[0], b);
		assert_int_equal(w[1], atomic_load(&k->versions[b]));
	}
	free(blk);
	env_close(&k->e);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_put_refcount),
		cmocka_unit_test(test_bad_create),
		cmocka_unit_test(test_bread_known_data),
		cmocka_unit_test(test_dirty_sync_roundtrip),
		cmocka_unit_test(test_readahead),
		cmocka_unit_test(test_readahead_respects_bound),
		cmocka_unit_test(test_readahead_merges),
		cmocka_unit_test(test_sequential_scan),
		cmocka_unit_test(test_wait_unplugs),
		cmocka_unit_test(test_sync_dirty_op_by_preset),
		cmocka_unit_test(test_fsync_list_plugging),
		cmocka_unit_test(test_fsync_list_two_queues),
		cmocka_unit_test(test_ll_rw_block_swrite),
		cmocka_unit_test(test_lru_bound_and_order),
		cmocka_unit_test(test_writeback_thread),
		cmocka_unit_test(test_writeback_background),
		cmocka_unit_test(test_writeback_pressure),
		cmocka_unit_test(test_writeback_block_order),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_read_error),
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
