/* Shared by the buffer cache's unit tests (test_buf.c, test_buf_write.c):
 * a mem:/sim: device -> queue -> buffer cache stack (env_open), tagged block
 * contents written and checked on the device, dirty buffers, stats.
 */
#ifndef NOSTALL_TEST_BUF_ENV_H
#define NOSTALL_TEST_BUF_ENV_H

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

static inline struct buf_params quiet_params(void)
{
	struct buf_params p;
	buf_params_default(&p);
	p.writeback_interval_ms = 0; /* no thread unless a test wants one */
	return p;
}

static inline void env_open(struct env *e, const char *spec, const char *qopts, const struct buf_params *p)
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

static inline void env_close(struct env *e)
{
	buf_cache_destroy(e->c);
	blk_queue_destroy(e->q);
	dev_close(e->d);
}

static inline void fill(void *p, uint64_t block, unsigned tag)
{
	uint64_t *w = p;
	for (unsigned i = 0; i < BS / 8; i++)
		w[i] = block * 1000003u + tag * 7919u + i;
}

static inline bool check(const void *p, uint64_t block, unsigned tag)
{
	const uint64_t *w = p;
	for (unsigned i = 0; i < BS / 8; i++)
		if (w[i] != block * 1000003u + tag * 7919u + i)
			return false;
	return true;
}

static inline void dev_write_block(struct dev *d, uint64_t block, unsigned tag)
{
	void *b;
	assert_int_equal(posix_memalign(&b, 4096, BS), 0);
	fill(b, block, tag);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, block * SPB, SPB, b, 0), 0);
	free(b);
}

static inline bool dev_block_is(struct dev *d, uint64_t block, unsigned tag)
{
	void *b;
	assert_int_equal(posix_memalign(&b, 4096, BS), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, block * SPB, SPB, b, 0), 0);
	bool ok = check(b, block, tag);
	free(b);
	return ok;
}

/* Make a buffer dirty with known contents (as a filesystem would). */
static inline struct buffer_head *dirty_block(struct buf_cache *c, uint64_t block, unsigned tag)
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

static inline struct buf_stats bstats(struct buf_cache *c)
{
	struct buf_stats s;
	buf_cache_stats(c, &s);
	return s;
}

static inline struct blk_stats qstats(struct blk_queue *q)
{
	struct blk_stats s;
	blk_queue_stats_get(q, &s);
	return s;
}

static inline bool has_block(struct buf_cache *c, uint64_t block)
{
	/* Probe through buf_read's hit counter. */
	uint64_t h = bstats(c).hits;
	struct buffer_head *bh;
	assert_int_equal(buf_read(c, block, &bh), 0);
	buf_put(bh);
	return bstats(c).hits > h;
}

#endif
