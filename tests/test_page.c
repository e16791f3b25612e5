/* Page cache (src/page): holes, write/readback, partial writes, writeback
 * runs and waits, io_done in the worker with ranges and errors, truncate,
 * the budget, throttling, expiry and background flusher passes, tunables,
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

#define PS 4096u
#define BASE 100u      /* identity map: page i is block BASE + i */
#define MAX_IDX 1024u  /* table map size */
#define MAX_DONE 256

/* ------------------------------------------------------------ a fake fs */

struct done_rec {
	uint64_t first, last;
	int err;
	pthread_t thread;
};

struct fakefs {
	pthread_mutex_t lock;
	bool table_mode;        /* else identity */
	uint64_t table[MAX_IDX]; /* 0: hole */
	uint64_t free_blocks[MAX_IDX];
	size_t nr_free;
	uint64_t next_block;
	int fail_create;        /* map(create) fails with this while set */
	unsigned map_calls;
	struct done_rec done[MAX_DONE];
	unsigned ndone;
};

static int fs_map(void *ctx, uint64_t index, bool create, uint64_t *phys, bool *is_new)
{
	struct fakefs *fs = ctx;
	pthread_mutex_lock(&fs->lock);
	fs->map_calls++;
	int rc = 0;
	*is_new = false;
	if (!fs->table_mode) {
		*phys = BASE + index;
	} else if (index >= MAX_IDX) {
		rc = -EFBIG;
	} else if (fs->table[index]) {
		*phys = fs->table[index];
	} else if (!create) {
		*phys = PAGE_NO_BLOCK;
	} else if (fs->fail_create) {
		rc = fs->fail_create;
	} else {
		fs->table[index] = fs->nr_free ? fs->free_blocks[--fs->nr_free] : fs->next_block++;
		*phys = fs->table[index];
		*is_new = true;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

static void fs_io_done(void *ctx, uint64_t first, uint64_t last, int err)
{
	struct fakefs *fs = ctx;
	pthread_mutex_lock(&fs->lock);
	if (fs->ndone < MAX_DONE)
		fs->done[fs->ndone++] = (struct done_rec){ first, last, err, pthread_self() };
	pthread_mutex_unlock(&fs->lock);
}

/* The fs frees the blocks of pages from `first` on (after truncating them). */
static void fs_free_from(struct fakefs *fs, uint64_t first)
{
	pthread_mutex_lock(&fs->lock);
	for (uint64_t i = first; i < MAX_IDX; i++)
		if (fs->table[i]) {
			fs->free_blocks[fs->nr_free++] = fs->table[i];
			fs->table[i] = 0;
		}
	pthread_mutex_unlock(&fs->lock);
}

static const struct page_mapping_ops fs_ops = { fs_map, fs_io_done };

static void fs_init(struct fakefs *fs, bool table_mode)
{
	memset(fs, 0, sizeof *fs);
	pthread_mutex_init(&fs->lock, NULL);
	fs->table_mode = table_mode;
	fs->next_block = 2000;
}

/* ------------------------------------------------------------------ env */

struct env {
	struct dev *d;
	struct blk_queue *q;
	struct page_cache *pc;
	struct fakefs fs;
	struct page_mapping *m;
};

static struct page_params quiet_params(uint64_t pages)
{
	struct page_params p;
	page_params_default(&p);
	p.cache_bytes = pages * PS;
	p.writeback_interval_ms = 0; /* no flusher thread unless a test wants one */
	return p;
}

static void env_open(struct env *e, const char *spec, const struct page_params *p, bool table_mode)
{
	memset(e, 0, sizeof *e);
	int rc = dev_open(spec, &e->d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	rc = blk_queue_create(e->d, "scheduler=noop", &e->q);
	if (rc)
		fail_msg("blk_queue_create: %s", err_last(rc));
	struct page_params qp = quiet_params(256);
	rc = page_cache_create(e->q, PS, p ? p : &qp, &e->pc);
	if (rc)
		fail_msg("page_cache_create: %s", err_last(rc));
	fs_init(&e->fs, table_mode);
	rc = page_mapping_create(e->pc, &fs_ops, &e->fs, &e->m);
	assert_int_equal(rc, 0);
}

static void env_close(struct env *e)
{
	page_mapping_destroy(e->m);
	page_cache_destroy(e->pc);
	blk_queue_destroy(e->q);
	dev_close(e->d);
	pthread_mutex_destroy(&e->fs.lock);
}

static void fill(void *p, size_t len, unsigned tag)
{
	unsigned char *c = p;
	for (size_t i = 0; i < len; i++)
		c[i] = (unsigned char)(tag * 31 + i * 7 + (i >> 8));
}

static struct page_stats stats(struct env *e)
{
	struct page_stats s;
	page_cache_stats(e->pc, &s);
	return s;
}

/* Block `block` as stored on the device. */
static void dev_block(struct env *e, uint64_t block, void *buf)
{
	assert_int_equal(blk_rw(e->q, BLK_READ, block * PS, buf, PS), 0);
}

static void write_pages(struct env *e, uint64_t first, uint64_t n, unsigned tag)
{
	static unsigned char buf[PS];
	for (uint64_t i = first; i < first + n; i++) {
		fill(buf, PS, tag + (unsigned)i);
		assert_int_equal(page_mapping_write(e->m, i * PS, buf, PS, i * PS), PS);
	}
}

static void check_pages(struct env *e, uint64_t first, uint64_t n, unsigned tag)
{
	static unsigned char buf[PS], want[PS];
	for (uint64_t i = first; i < first + n; i++) {
		fill(want, PS, tag + (unsigned)i);
		assert_int_equal(page_mapping_read(e->m, i * PS, buf, PS, UINT64_MAX), PS);
		assert_memory_equal(buf, want, PS);
	}
}

/* ---------------------------------------------------------------- tests */

static void test_holes_read_zero(void **state)
{
	struct env e;
	env_open(&e, "mem:16M", NULL, true);
	unsigned char buf[PS], zero[PS] = { 0 };
	write_pages(&e, 0, 1, 1);
	write_pages(&e, 3, 1, 1);
	uint64_t size = 4 * PS;
	for (uint64_t i = 1; i <= 2; i++) {
		memset(buf, 0xAA, PS);
		assert_int_equal(page_mapping_read(e.m, i * PS, buf, PS, size), PS);
		assert_memory_equal(buf, zero, PS);
		assert_int_equal(e.fs.table[i], 0); /* not allocated by the read */
	}
	assert_int_equal(stats(&e).holes_read, 2);
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
	check_pages(&e, 3, 1, 1);
	assert_int_equal(e.fs.table[1], 0);
	env_close(&e);
}

static void test_write_readback(void **state)
{
	struct env e;
	env_open(&e, "mem:16M", NULL, false);
	write_pages(&e, 0, 10, 5);
	check_pages(&e, 0, 10, 5);
	struct page_stats s = stats(&e);
	assert_int_equal(s.dirty, 10);
	assert_int_equal(s.pages_written, 0);
	assert_int_equal(page_mapping_nr_dirty(e.m), 10);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE_SYNC_PLUG), 0);
	assert_int_equal(stats(&e).dirty, 0);
	unsigned char buf[PS], want[PS];
	for (uint64_t i = 0; i < 10; i++) {
		fill(want, PS, 5 + (unsigned)i);
		dev_block(&e, BASE + i, buf);
		assert_memory_equal(buf, want, PS);
	}
	/* Cold: read back from the device. */
	page_mapping_invalidate(e.m, 0, PAGE_INDEX_MAX);
	uint64_t reads = stats(&e).read_bios;
	check_pages(&e, 0, 10, 5);
	assert_int_equal(stats(&e).read_bios, reads + 10);
	env_close(&e);
}

static void test_partial_writes(void **state)
{
	struct env e;
	env_open(&e, "mem:16M", NULL, false);
	unsigned char old[PS], buf[PS], want[PS], patch[100];
	/* An existing block under i_size: read-modify-write. */
	fill(old, PS, 9);
	assert_int_equal(blk_rw(e.q, BLK_WRITE, (uint64_t)BASE * PS, old, PS), 0);
	memset(patch, 0x5A, sizeof patch);
	assert_int_equal(page_mapping_write(e.m, 1000, patch, sizeof patch, 2 * PS), sizeof patch);
	assert_int_equal(stats(&e).read_bios, 1);
	memcpy(want, old, PS);
	memcpy(want + 1000, patch, sizeof patch);
	assert_int_equal(page_mapping_read(e.m, 0, buf, PS, 2 * PS), PS);
	assert_memory_equal(buf, want, PS);
	/* A page wholly past i_size: zeroed, not read (its block holds garbage). */
	fill(old, PS, 11);
	assert_int_equal(blk_rw(e.q, BLK_WRITE, (uint64_t)(BASE + 5) * PS, old, PS), 0);
	assert_int_equal(page_mapping_write(e.m, 5 * PS + 7, patch, 10, 2 * PS), 10);
	assert_int_equal(stats(&e).read_bios, 1);
	memset(want, 0, PS);
	memcpy(want + 7, patch, 10);
	assert_int_equal(page_mapping_read(e.m, 5 * PS, buf, PS, 6 * PS), PS);
	assert_memory_equal(buf, want, PS);
	/* Written through: the device sees the merged pages. */
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	dev_block(&e, BASE + 5, buf);
	assert_memory_equal(buf, want, PS);
	env_close(&e);

	/* A newly allocated block: zeroed around the write, never read. */
	env_open(&e, "mem:16M", NULL, true);
	fill(old, PS, 13);
	assert_int_equal(blk_rw(e.q, BLK_WRITE, 2000ull * PS, old, PS), 0);
	assert_int_equal(page_mapping_write(e.m, 300, patch, sizeof patch, 10 * PS), sizeof patch);
	assert_int_equal(e.fs.table[0], 2000);
	assert_int_equal(stats(&e).read_bios, 0);
	memset(want, 0, PS);
	memcpy(want + 300, patch, sizeof patch);
	assert_int_equal(page_mapping_read(e.m, 0, buf, PS, 10 * PS), PS);
	assert_memory_equal(buf, want, PS);
	/* A failing allocation: the error comes back, nothing is dirtied. */
	e.fs.fail_create = -ENOSPC;
	assert_int_equal(page_mapping_write(e.m, 3 * PS, patch, 10, 10 * PS), -ENOSPC);
	assert_int_equal(page_mapping_nr_dirty(e.m), 1);
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
	env_close(&e);
}

static void test_writeback_runs(void **state)
{
	struct env e;
	env_open(&e, "mem:16M", NULL, false);
	write_pages(&e, 0, 16, 1);
	write_pages(&e, 20, 4, 1);
	assert_int_equal(page_mapping_writeback(e.m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_NONE, BLK_WRITE), 0);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
	struct page_stats s = stats(&e);
	assert_int_equal(s.write_bios, 2); /* [0,15] and [20,23] */
	assert_int_equal(s.pages_written, 20);
	assert_int_equal(s.dirty, 0);
	/* A range: only pages inside are written. */
	write_pages(&e, 0, 8, 2);
	assert_int_equal(page_mapping_writeback(e.m, 2, 4, PAGE_WB_SYNC_ALL, BLK_WRITE), 0);
	assert_int_equal(stats(&e).pages_written, 23);
	assert_int_equal(page_mapping_nr_dirty(e.m), 5);
	/* Runs are bounded by max_run_kb. */
	assert_int_equal(page_cache_set(e.pc, "max_run_kb", "8"), 0);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	s = stats(&e);
	assert_int_equal(s.write_bios, 3 + 3); /* [0,1] [5,6] [7] */
	unsigned char buf[PS], want[PS];
	for (uint64_t i = 0; i < 8; i++) {
		fill(want, PS, 2 + (unsigned)i);
		dev_block(&e, BASE + i, buf);
		assert_memory_equal(buf, want, PS);
	}
	env_close(&e);

	/* Consecutive pages on scattered blocks are separate runs. */
	env_open(&e, "mem:16M", NULL, true);
	e.fs.table[0] = 3000;
	e.fs.table[1] = 3001;
	e.fs.table[2] = 3005;
	e.fs.table[3] = 3006;
	write_pages(&e, 0, 4, 3);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	assert_int_equal(stats(&e).write_bios, 2);
	dev_block(&e, 3005, buf);
	fill(want, PS, 3 + 2);
	assert_memory_equal(buf, want, PS);
	env_close(&e);
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
	env_open(&e, "mem:16M", NULL, false);
	write_pages(&e, 0, 4, 1);
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
	assert_int_equal(stats(&e).pages_written, 4);
	env_close(&e);
}

static void test_io_done_worker(void **state)
{
	struct env e;
	env_open(&e, "mem:16M", NULL, false);
	write_pages(&e, 0, 8, 1);
	write_pages(&e, 10, 2, 1);
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
	assert_int_equal(stats(&e).io_done_calls, 2);
	env_close(&e);

	/* A write error (blocks BASE+2.. fail once): io_done and the wait see
	 * it, the wait only once; the pages stay readable. */
	char spec[128];
	snprintf(spec, sizeof spec, "fault:mem:16M,op=write,sector=%u-%u,count=1", (BASE + 2) * 8, (BASE + 2) * 8 + 7);
	env_open(&e, spec, NULL, false);
	write_pages(&e, 0, 4, 4);
	write_pages(&e, 6, 1, 4);
	assert_int_equal(page_mapping_writeback(e.m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_ALL, BLK_WRITE), 0);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), -EIO);
	assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
	assert_int_equal(page_mapping_flush_io_done(e.m), 0);
	assert_int_equal(e.fs.ndone, 2);
	assert_int_equal(e.fs.done[0].first, 0);
	assert_int_equal(e.fs.done[0].last, 3);
	assert_int_equal(e.fs.done[0].err, -EIO);
	assert_int_equal(e.fs.done[1].first, 6);
	assert_int_equal(e.fs.done[1].err, 0);
	struct page_stats s = stats(&e);
	assert_int_equal(s.write_errors, 1);
	assert_int_equal(s.dirty, 0);
	check_pages(&e, 0, 4, 4);
	assert_int_equal(dev_fault_injected(e.d), 1);
	env_close(&e);
}

static void test_truncate(void **state)
{
	struct env e;
	env_open(&e, "mem:16M", NULL, false);
	write_pages(&e, 0, 10, 1);
	assert_int_equal(page_mapping_truncate(e.m, 5 * PS + 100), 0);
	assert_int_equal(page_mapping_nr_pages(e.m), 6);
	assert_int_equal(page_mapping_nr_dirty(e.m), 6);
	assert_int_equal(stats(&e).truncated_dirty, 4);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	assert_int_equal(stats(&e).pages_written, 6);
	unsigned char buf[PS], want[PS], zero[PS] = { 0 };
	for (uint64_t i = 6; i < 10; i++) {
		dev_block(&e, BASE + i, buf); /* never written */
		assert_memory_equal(buf, zero, PS);
	}
	fill(want, PS, 1 + 5);
	memset(want + 100, 0, PS - 100);
	dev_block(&e, BASE + 5, buf);
	assert_memory_equal(buf, want, PS);
	/* A clean page cut in the middle is dirtied with its tail zeroed; a
	 * tail already zero costs nothing. */
	assert_int_equal(page_mapping_truncate(e.m, 2 * PS + 10), 0);
	assert_int_equal(page_mapping_nr_dirty(e.m), 1);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	fill(want, PS, 1 + 2);
	memset(want + 10, 0, PS - 10);
	dev_block(&e, BASE + 2, buf);
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
	assert_int_equal(stats(&e).pages, 0);
	env_close(&e);
}

static void test_budget_bound(void **state)
{
	struct page_params p = quiet_params(64);
	struct env e;
	env_open(&e, "mem:16M", &p, false);
	struct page_stats s = stats(&e);
	assert_int_equal(s.max_pages, 64);
	assert_int_equal(s.dirty_limit, 12);
	assert_int_equal(s.background_limit, 6);
	unsigned char buf[PS];
	for (uint64_t i = 0; i < 4 * 64; i++) {
		fill(buf, PS, 7 + (unsigned)i);
		assert_int_equal(page_mapping_write(e.m, i * PS, buf, PS, i * PS), PS);
		s = stats(&e);
		assert_true(s.pages <= s.max_pages);
		assert_true(s.dirty + s.writeback <= s.dirty_limit);
	}
	s = stats(&e);
	assert_true(s.peak_pages <= 64);
	assert_true(s.evictions >= 4 * 64 - 64);
	assert_true(s.throttled > 0);
	assert_true(s.throttle_writes > 0);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	check_pages(&e, 0, 4 * 64, 7);
	assert_true(stats(&e).peak_pages <= 64);
	env_close(&e);
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
		struct page_stats s = stats(st->e);
		if ((s.throttle_waits > 0 && s.writeback > 0) || atomic_load(&st->stop))
			break;
		clock_sleep_ns(NS_PER_MS);
	}
	blk_queue_start(st->e->q);
	blk_queue_unplug(st->e->q);
	return NULL;
}

static void test_throttle_waits(void **state)
{
	struct page_params p = quiet_params(64);
	struct env e;
	env_open(&e, "mem:16M", &p, false);
	write_pages(&e, 0, 12, 1); /* at the limit, not over it */
	assert_int_equal(stats(&e).throttled, 0);
	blk_queue_stop(e.q);
	struct starter st = { .e = &e };
	pthread_t t;
	pthread_create(&t, NULL, queue_starter, &st);
	write_pages(&e, 12, 1, 1); /* over: writes back, then must wait */
	atomic_store(&st.stop, true);
	pthread_join(t, NULL);
	struct page_stats s = stats(&e);
	assert_int_equal(s.throttled, 1);
	assert_true(s.throttle_waits >= 1);
	assert_true(s.throttle_writes >= 1);
	assert_true(s.dirty + s.writeback <= s.dirty_limit);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	env_close(&e);
}

static void test_flusher_pass(void **state)
{
	struct page_params p = quiet_params(64);
	struct env e;
	env_open(&e, "mem:16M", &p, false);
	write_pages(&e, 0, 4, 1);
	uint64_t now = clock_now_ns();
	assert_int_equal(page_cache_flush_pass(e.pc, now + NS_PER_SEC), 0); /* young */
	assert_int_equal(stats(&e).dirty, 4);
	assert_int_equal(page_cache_flush_pass(e.pc, now + 31 * NS_PER_SEC), 4); /* expired */
	struct page_stats s = stats(&e);
	assert_int_equal(s.dirty, 0);
	assert_int_equal(s.expired_writes, 4);
	assert_int_equal(s.flusher_passes, 2);
	/* The expiry is a tunable. */
	write_pages(&e, 4, 2, 1);
	assert_int_equal(page_cache_set(e.pc, "dirty_expire_ms", "1000"), 0);
	assert_int_equal(page_cache_flush_pass(e.pc, clock_now_ns() + 2 * NS_PER_SEC), 2);
	/* Background: over 6 dirty pages, the oldest are written down to 6. */
	assert_int_equal(page_cache_set(e.pc, "dirty_expire_ms", "30000"), 0);
	write_pages(&e, 10, 10, 1);
	assert_int_equal(stats(&e).dirty, 10);
	assert_int_equal(page_cache_flush_pass(e.pc, 0), 4);
	s = stats(&e);
	assert_int_equal(s.dirty, 6);
	assert_int_equal(s.background_writes, 4);
	for (uint64_t i = 10; i < 14; i++) { /* the oldest went */
		struct page *pg = page_lookup(e.m, i);
		assert_false(page_dirty(pg));
		page_put(pg);
	}
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	env_close(&e);
}

static void test_flusher_thread(void **state)
{
	struct page_params p = quiet_params(64);
	p.writeback_interval_ms = 2;
	p.dirty_expire_ms = 0;
	struct env e;
	env_open(&e, "mem:16M", &p, false);
	write_pages(&e, 0, 5, 1);
	/* The thread gets there; the test does not time it. (The pass's
	 * counters are bumped after its pages are clean: wait for them.) */
	for (int i = 0; i < 10000 && stats(&e).flusher_writes < 5; i++)
		clock_sleep_ns(NS_PER_MS);
	struct page_stats s = stats(&e);
	assert_int_equal(s.dirty, 0);
	assert_true(s.flusher_passes > 0);
	assert_int_equal(s.flusher_writes, 5);
	env_close(&e);
}

static void test_tunables(void **state)
{
	struct env e;
	env_open(&e, "mem:16M", NULL, false);
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
	struct page_stats s = stats(&e);
	assert_int_equal(s.dirty_limit, 256 * 20 / 100);
	assert_int_equal(s.background_limit, 256 * 10 / 100);
	env_close(&e);
	struct page_params p;
	page_params_default(&p);
	assert_int_equal(p.dirty_expire_ms, 30000);
	assert_int_equal(p.writeback_interval_ms, 5000);
	assert_int_equal(p.dirty_background_ratio, 10);
	assert_int_equal(p.dirty_ratio, 20);
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
		fill(buf, PS, i);
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
	struct page_params p = quiet_params(256);
	env_open(&e, "sim:ssd,size=64M", &p, false);
	struct streamer s = { .m = e.m };
	pthread_t t;
	pthread_create(&t, NULL, streamer_main, &s);
	while (atomic_load(&s.rounds) < 2 * STREAM_PAGES && !s.err)
		clock_sleep_ns(NS_PER_MS);
	unsigned char buf[PS], want[PS];
	unsigned before = atomic_load(&s.rounds);
	for (unsigned k = 0; k < 16; k++) {
		uint64_t idx = 100 + k;
		fill(want, PS, 500 + k);
		assert_int_equal(page_mapping_write(e.m, idx * PS, want, PS, idx * PS), PS);
		assert_int_equal(page_mapping_writeback(e.m, idx, idx, PAGE_WB_SYNC_NONE, BLK_WRITE), 0);
		assert_int_equal(page_mapping_wait(e.m, 0, PAGE_INDEX_MAX), 0);
		struct page *pg = page_lookup(e.m, idx);
		assert_non_null(pg);
		assert_false(page_writeback(pg));
		assert_false(page_dirty(pg));
		page_put(pg);
		dev_block(&e, BASE + idx, buf); /* behind the cache: the device's copy */
		assert_memory_equal(buf, want, PS);
	}
	unsigned during = atomic_load(&s.rounds) - before;
	atomic_store(&s.stop, true);
	pthread_join(t, NULL);
	assert_int_equal(s.err, 0);
	printf("wait_bounded: the streamer started %u writebacks during 16 waits\n", during);
	assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE), 0);
	env_close(&e);
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
	struct page_params p = quiet_params(24); /* smaller than the file: eviction */
	struct env e;
	env_open(&e, "mem:32M", &p, true);
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
			fs_free_from(&e.fs, ns / PS + (ns % PS != 0));
			memset(model + ns, 0, (size_t)(cap - ns));
			size = ns;
		} else if (kind < 88) {
			assert_int_equal(page_mapping_sync(e.m, 0, PAGE_INDEX_MAX, BLK_WRITE_SYNC_PLUG), 0);
		} else if (kind < 94) {
			page_cache_flush_pass(e.pc, clock_now_ns() + (rnd(&s) % 2) * 60 * NS_PER_SEC);
		} else {
			page_mapping_invalidate(e.m, off / PS, off / PS + 8);
		}
		struct page_stats st = stats(&e);
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
	env_close(&e);
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
	struct page_params p = quiet_params(32); /* smaller than 4 x 24 pages */
	p.writeback_interval_ms = 1;
	p.dirty_expire_ms = 2;
	struct env e;
	env_open(&e, "sim:ssd,size=64M,scale=0.01", &p, false);
	struct writer w[NTHREADS];
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].pc = e.pc;
		fs_init(&w[i].fs, true);
		w[i].fs.next_block = 4000 + (uint64_t)i * 1000;
		w[i].seed = seed + (uint64_t)i;
		w[i].model = calloc(1, TPAGES * PS);
		assert_int_equal(page_mapping_create(e.pc, &fs_ops, &w[i].fs, &w[i].m), 0);
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
	struct page_stats s = stats(&e);
	assert_true(s.peak_pages <= s.max_pages);
	printf("concurrent: written %" PRIu64 " pages in %" PRIu64 " bios, evictions %" PRIu64 ", throttled %" PRIu64
	       ", flusher passes %" PRIu64 "\n",
	       s.pages_written, s.write_bios, s.evictions, s.throttled, s.flusher_passes);
	env_close(&e);
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
		cmocka_unit_test(test_budget_bound),
		cmocka_unit_test(test_throttle_waits),
		cmocka_unit_test(test_flusher_pass),
		cmocka_unit_test(test_flusher_thread),
		cmocka_unit_test(test_tunables),
		cmocka_unit_test(test_wait_bounded),
		cmocka_unit_test(test_random_model),
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
