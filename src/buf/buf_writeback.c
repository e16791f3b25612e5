/* The buffer cache's writeback thread (docs/buffer-cache.md, "Cache sync
 * and the writeback thread"): every writeback_interval_ms it writes the
 * buffers dirty for longer than dirty_expire_ms; woken early past the
 * background threshold or under memory pressure. Its control fields
 * (wb_*) are under c->lock (buf_int.h).
 */
#include "buf/buf_int.h"

#include "util/clock.h"
#include "util/err.h"

#include <stdlib.h>

/* One pass: write (WRITE, block order) the expired dirty buffers, or the
 * oldest ones down to the background threshold, or (all: the cache is over
 * its bound with nothing reclaimable) every dirty buffer; skip jbd and
 * locked buffers. Then shrink the cache back under its bound if it grew past it. */
static void writeback_pass(struct buf_cache *c, bool all)
{
	uint64_t now = clock_now_ns();
	uint64_t expire_ns = (uint64_t)c->p.dirty_expire_ms * NS_PER_MS;
	uint64_t before = now > expire_ns ? now - expire_ns : 0;
	size_t keep = c->bg_dirty_buffers ? c->bg_dirty_buffers : SIZE_MAX;
	struct buffer_head **v;
	size_t n = buf_collect(c, &v, all, before, keep, false);
	if (n > 1)
		qsort(v, n, sizeof *v, buf_cmp_block);
	for (size_t i = 0; i < n; i++) {
		struct buffer_head *bh = v[i];
		if (!(bh_state(bh) & BH_JBD) && buf_trylock(bh)) {
			if (!(bh_state(bh) & BH_JBD) && buf_test_clear_dirty(bh)) {
				if (buf_submit(bh, BLK_WRITE) == 0)
					STAT_INC(c, writeback_writes);
			} else {
				buf_unlock(bh);
			}
		}
		buf_put(bh);
	}
	free(v);
	pthread_mutex_lock(&c->lock);
	struct buffer_head *chain = buf_shrink_locked(c, SIZE_MAX);
	pthread_mutex_unlock(&c->lock);
	buf_chain_free(chain);
}

static void *writeback_main(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-buf-wb"); /* top, perf, gdb */
	struct buf_cache *c = arg;
	uint64_t interval = (uint64_t)c->p.writeback_interval_ms * NS_PER_MS;
	pthread_mutex_lock(&c->lock);
	uint64_t next = clock_now_ns() + interval;
	while (!c->wb_stop) {
		if (!c->wb_kick && clock_now_ns() < next) {
			clock_cond_wait_until(&c->wb_cond, &c->lock, next);
			continue;
		}
		bool all = c->wb_pressure;
		c->wb_kick = c->wb_pressure = false;
		pthread_mutex_unlock(&c->lock);
		writeback_pass(c, all);
		pthread_mutex_lock(&c->lock);
		next = clock_now_ns() + interval;
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}


int buf_wb_start(struct buf_cache *c)
{
	if (!c->p.writeback_interval_ms)
		return 0;
	c->wb_running = true;
	int rc = pthread_create(&c->wb_thread, NULL, writeback_main, c);
	if (rc) {
		c->wb_running = false;
		return err_set(-rc, "buf: cannot start the writeback thread");
	}
	return 0;
}

void buf_wb_stop(struct buf_cache *c)
{
	pthread_mutex_lock(&c->lock);
	bool running = c->wb_running;
	c->wb_stop = true;
	pthread_cond_signal(&c->wb_cond);
	pthread_mutex_unlock(&c->lock);
	if (running)
		pthread_join(c->wb_thread, NULL);
}

void buf_wb_wake_locked(struct buf_cache *c, bool pressure)
{
	if (!c->wb_running)
		return;
	if (pressure) {
		if (c->wb_pressure)
			return;
		c->wb_pressure = true;
	} else if (c->wb_kick) {
		return;
	}
	c->wb_kick = true;
	pthread_cond_signal(&c->wb_cond);
}
