/* Page cache writeback (docs/page-cache.md): runs of contiguous dirty pages
 * as one bio each, their completion, the io_done worker, range writeback
 * and wait, the writer throttle (balance_dirty_pages), direct reclaim, and
 * the flusher (expiry + background). Locking rules: page_int.h.
 */
#include "util/stalltrace.h"
#include "page/page_int.h"

#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- runs */

/* Keep the run's copy buffer (if it had one) for the next run if there is
 * room, else free it. */
static void run_free(struct page_run *r)
{
	struct page_cache *pc = r->pc;
	pthread_mutex_lock(&pc->lock);
	if (r->buf && pc->nr_run_bufs < PAGE_RUN_BUFS) {
		pc->run_bufs[pc->nr_run_bufs].buf = r->buf;
		pc->run_bufs[pc->nr_run_bufs++].bytes = r->buf_bytes;
		r->buf = NULL;
	}
	pthread_mutex_unlock(&pc->lock);
	free(r->buf);
	free(r);
}

/* Free the kept run buffers (page_cache_destroy). */
void page_run_bufs_drop(struct page_cache *pc)
{
	while (pc->nr_run_bufs)
		free(pc->run_bufs[--pc->nr_run_bufs].buf);
}

/* A run of up to cap pages of m starting at pg. pc->lock held (counts the
 * run in m->io_pending, which keeps m alive until the run is finished). No
 * copy buffer: most runs are submitted from the page buffers themselves,
 * and run_submit takes one, the run's size, only for a run that is not. */
static struct page_run *run_alloc_locked(struct page_cache *pc, struct page *pg, size_t cap)
{
	struct page_run *r = calloc(1, sizeof *r + cap * sizeof r->e[0]);
	if (!r)
		return NULL;
	r->pc = pc;
	r->m = pg->m;
	r->first = pg->index;
	r->block = pg->block;
	r->cap = cap;
	list_init(&r->link);
	pg->m->io_pending++;
	return r;
}

/* A copy buffer of at least `bytes` for r: a kept one that fits, else a new
 * one of exactly that size (a 4 KiB run no longer gets max_run_kb). False
 * when there is no memory (or a test asked for the failure). */
static bool run_buf_get(struct page_cache *pc, struct page_run *r, size_t bytes)
{
	pthread_mutex_lock(&pc->lock);
	bool fail = pc->fail_run_bufs > 0;
	if (fail)
		pc->fail_run_bufs--;
	for (unsigned i = pc->nr_run_bufs; !fail && i-- > 0;) {
		if (pc->run_bufs[i].bytes >= bytes) {
			r->buf = pc->run_bufs[i].buf;
			r->buf_bytes = pc->run_bufs[i].bytes;
			pc->run_bufs[i] = pc->run_bufs[--pc->nr_run_bufs];
			break;
		}
	}
	pthread_mutex_unlock(&pc->lock);
	if (fail)
		return false;
	if (!r->buf) {
		if (posix_memalign(&r->buf, 4096, bytes)) {
			r->buf = NULL;
			return false;
		}
		r->buf_bytes = bytes;
	}
	return true;
}

/* Completion (device context, or the submitter's on a refused bio): end
 * writeback of the pages, record an error, hand io_done to the worker. */
static void run_end_io(struct bio *bio, int err)
{
	struct page_run *r = bio->private;
	struct page_mapping *m = r->m;
	struct page_cache *pc = m->pc;
	struct page *chain = NULL;
	void *old = NULL; /* a list through the buffers themselves */
	pthread_mutex_lock(&pc->lock);
	for (size_t i = 0; i < r->n; i++) {
		struct page *pg = r->e[i].pg;
		/* A page given a copy meanwhile left its old buffer to us. */
		if (!(pg->flags & PG_WBSHARED)) {
			*(void **)r->e[i].data = old;
			old = r->e[i].data;
		}
		pg->flags &= ~(unsigned)(PG_WRITEBACK | PG_WBSHARED);
		list_del(&pg->wb);
		pc->nr_writeback--;
		struct page *f = page_put_locked(pc, pg);
		if (f) {
			f->hash_next = chain;
			chain = f;
		}
	}
	if (err) {
		/* The pages stay clean and uptodate (their data is the newest);
		 * the error is the mapping's (AS_EIO) and io_done's. */
		r->err = err < 0 ? err : -EIO;
		pc->st.write_errors++;
		if (!m->err)
			m->err = r->err;
	}
	pc->wb_gen++;
	page_wake_locked(pc);
	if (m->ops->io_done) {
		list_add_tail(&pc->done, &r->link);
		pc->done_queued++;
		pthread_cond_signal(&pc->worker_cond);
		r = NULL;
	} else {
		m->io_pending--; /* m may go away once we unlock */
	}
	pthread_mutex_unlock(&pc->lock);
	while (chain) {
		struct page *next = chain->hash_next;
		page_free(chain);
		chain = next;
	}
	while (old) {
		void *next = *(void **)old;
		page_data_free(pc, old);
		old = next;
	}
	if (r)
		run_free(r);
}

/* Whether the run's page buffers are one contiguous range (pages allocated
 * together, or reused in LRU order by a streaming writer, usually are). */
static bool run_contiguous(const struct page_cache *pc, const struct page_run *r)
{
	for (size_t i = 1; i < r->n; i++)
		if ((const char *)r->e[i].data != (const char *)r->e[0].data + i * pc->page_size)
			return false;
	return true;
}

/* No memory for a copy buffer: write each contiguous piece of the run with
 * a bio of its own (a few at a time, on the stack) and wait for them, then
 * complete the run as one. Slower (the caller waits for the device), but a
 * transient ENOMEM neither fails the write nor leaves the pages stranded
 * under writeback. */
static void run_submit_pieces(struct page_cache *pc, struct page_run *r, unsigned rw)
{
	enum { PIECES = 16 };
	struct bio bios[PIECES];
	struct blk_batch b;
	int err = 0;
	size_t i = 0, nr_bios = 0;
	while (i < r->n) {
		blk_batch_init(&b);
		for (unsigned k = 0; k < PIECES && i < r->n; k++) {
			size_t j = i + 1;
			while (j < r->n && (char *)r->e[j].data == (char *)r->e[i].data + (j - i) * pc->page_size)
				j++;
			bios[k] = (struct bio){ .sector = (r->block + i) * pc->sectors_per_page,
						.size = (uint32_t)((j - i) * pc->page_size),
						.data = r->e[i].data,
						.rw = rw };
			blk_batch_submit(pc->q, &b, &bios[k]); /* a refused bio counts as done */
			nr_bios++;
			i = j;
		}
		int rc = blk_batch_wait(pc->q, &b);
		blk_batch_destroy(&b);
		if (rc && !err)
			err = rc;
	}
	pthread_mutex_lock(&pc->lock);
	pc->st.piece_runs++;
	pc->st.write_bios += nr_bios;
	pc->st.pages_written += r->n;
	pthread_mutex_unlock(&pc->lock);
	r->bio.private = r;
	run_end_io(&r->bio, err);
}

/* Returns the pages submitted (the run may be freed before we return).
 * The bio reads the page buffers themselves when they are contiguous,
 * else a copy of them in a buffer of the run's size: either way the
 * buffers stay unchanged until the completion (PG_WBSHARED: a writer
 * copies first). */
static size_t run_submit(struct page_cache *pc, struct page_run *r, unsigned rw)
{
	size_t n = r->n;
	bool direct = run_contiguous(pc, r);
	if (!direct && !run_buf_get(pc, r, n * pc->page_size)) {
		run_submit_pieces(pc, r, rw);
		return n;
	}
	if (!direct)
		for (size_t i = 0; i < n; i++)
			memcpy((char *)r->buf + i * pc->page_size, r->e[i].data, pc->page_size);
	memset(&r->bio, 0, sizeof r->bio);
	r->bio.sector = r->block * pc->sectors_per_page;
	r->bio.size = (uint32_t)(n * pc->page_size);
	r->bio.data = direct ? r->e[0].data : r->buf;
	r->bio.rw = rw;
	r->bio.end_io = run_end_io;
	r->bio.private = r;
	pthread_mutex_lock(&pc->lock);
	pc->st.write_bios++;
	pc->st.zero_copy_bios += direct;
	pc->st.copied_bytes += direct ? 0 : n * pc->page_size;
	pc->st.pages_written += n;
	pthread_mutex_unlock(&pc->lock);
	if (n <= 2) /* an fsync's own pages, not a streamer's runs */
		stalltrace_mark("page run of <= 2 submitted (rw | n<<32)", rw | (uint64_t)n << 32);
	int rc = blk_submit_bio(pc->q, &r->bio);
	if (rc < 0)
		run_end_io(&r->bio, rc);
	return n;
}

/* How many of v[i..n) continue pg's index and block, at most max_run.
 * pc->lock held. */
static size_t stretch_locked(struct page_cache *pc, struct page **v, size_t i, size_t n)
{
	struct page *pg = v[i];
	size_t k = 1;
	while (i + k < n && k < pc->max_run && v[i + k]->m == pg->m && v[i + k]->index == pg->index + k &&
	       v[i + k]->block == pg->block + k)
		k++;
	return k;
}

/* Own pg for writeback: dirty, not detached, not locked, not under
 * writeback, then locked by us. WB_SYNC_NONE gives up on a busy page;
 * WB_SYNC_ALL submits the pending run (never sleep holding one) and waits.
 * pc->lock held. */
static bool acquire_locked(struct page_cache *pc, struct page *pg, enum page_wb_sync mode,
			   struct page_run **r, unsigned rw, size_t *sub)
{
	for (;;) {
		if ((pg->flags & PG_DETACHED) || !(pg->flags & PG_DIRTY))
			return false;
		if (!(pg->flags & (PG_LOCKED | PG_WRITEBACK)))
			break;
		if (mode == PAGE_WB_SYNC_NONE)
			return false;
		if (*r) {
			pthread_mutex_unlock(&pc->lock);
			*sub += run_submit(pc, *r, rw);
			*r = NULL;
			pthread_mutex_lock(&pc->lock);
			continue;
		}
		page_wait_locked(pc);
	}
	pg->flags |= PG_LOCKED;
	return true;
}

/* Whether pg continues run r (after its n + took pages), with room. */
static bool run_continues(const struct page_run *r, const struct page *pg, size_t took)
{
	size_t k = r->n + took;
	return pg->m == r->m && pg->index == r->first + k && pg->block == r->block + k && k < r->cap;
}

/* Pages go in rounds: under one cache lock hold, take (lock) the pages that
 * extend the current run and need no wait; put them under writeback in one
 * more hold — two lock round trips a round, not three a page (the flusher
 * shares the lock with the streaming writer). Nothing is copied here:
 * run_submit does, if it must. Only a round's first page may wait (acquire_locked),
 * so the run it may submit holds no page taken but not yet copied. */
int page_write_pages(struct page_cache *pc, struct page **v, size_t n, enum page_wb_sync mode, unsigned rw,
		     size_t *submitted)
{
	struct page_run *r = NULL;
	size_t sub = 0, i = 0;
	int err = 0;
	while (i < n) {
		size_t took = 0;
		struct page *chain = NULL;
		pthread_mutex_lock(&pc->lock);
		for (; i < n; i++) {
			struct page *pg = v[i];
			if (took && ((pg->flags & (PG_LOCKED | PG_WRITEBACK)) || !run_continues(r, pg, took)))
				break; /* the next round starts with it */
			if (err || !acquire_locked(pc, pg, mode, &r, rw, &sub)) {
				struct page *f = page_put_locked(pc, pg);
				if (f) {
					f->hash_next = chain;
					chain = f;
				}
				continue;
			}
			if (r && !run_continues(r, pg, took)) { /* only when took == 0 */
				pthread_mutex_unlock(&pc->lock);
				sub += run_submit(pc, r, rw);
				r = NULL;
				pthread_mutex_lock(&pc->lock);
			}
			if (!r && !(r = run_alloc_locked(pc, pg, stretch_locked(pc, v, i, n)))) {
				page_unlock_locked(pc, pg);
				struct page *f = page_put_locked(pc, pg);
				if (f) {
					f->hash_next = chain;
					chain = f;
				}
				err = err_set(-ENOMEM, "page: no memory for a writeback run");
				continue;
			}
			r->e[r->n + took++].pg = pg; /* our reference is the run's now */
		}
		pthread_mutex_unlock(&pc->lock);
		while (chain) {
			struct page *next = chain->hash_next;
			page_free(chain);
			chain = next;
		}
		if (!took)
			continue;
		pthread_mutex_lock(&pc->lock);
		for (size_t k = r->n; k < r->n + took; k++) {
			struct page *pg = r->e[k].pg;
			r->e[k].data = pg->data; /* ours to read until the completion */
			pg->wb_dirty_ns = pg->dirty_ns;
			page_clear_dirty_locked(pc, pg);
			pg->flags = (pg->flags | PG_WRITEBACK | PG_WBSHARED) & ~(unsigned)PG_LOCKED;
			pg->wb_seq = ++pg->m->wb_seq; /* m->wb stays sorted by wb_seq */
			list_add_tail(&pg->m->wb, &pg->wb);
			pc->nr_writeback++;
		}
		r->n += took;
		page_wake_locked(pc); /* the page locks */
		pthread_mutex_unlock(&pc->lock);
	}
	if (r)
		sub += run_submit(pc, r, rw);
	if (submitted)
		*submitted = sub;
	return err;
}

static int cmp_page(const void *a, const void *b)
{
	const struct page *x = *(struct page *const *)a, *y = *(struct page *const *)b;
	if (x->m != y->m)
		return (uintptr_t)x->m < (uintptr_t)y->m ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* -------------------------------------------------- range writeback, wait */

int page_mapping_writeback(struct page_mapping *m, uint64_t start, uint64_t end, enum page_wb_sync mode,
			   unsigned rw)
{
	struct page_cache *pc = m->pc;
	pthread_mutex_lock(&pc->lock);
	struct page **v = m->nr_dirty ? malloc(m->nr_dirty * sizeof *v) : NULL;
	size_t n = 0;
	if (m->nr_dirty && !v) {
		pthread_mutex_unlock(&pc->lock);
		return err_set(-ENOMEM, "page: no memory to collect dirty pages");
	}
	struct list_node *pos;
	list_for_each(pos, &m->dirty) {
		struct page *pg = list_entry(pos, struct page, mdirty);
		if (pg->index >= start && pg->index <= end) {
			page_hold_locked(pg);
			v[n++] = pg;
		}
	}
	pthread_mutex_unlock(&pc->lock);
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_page);
	int rc = page_write_pages(pc, v, n, mode, rw, NULL);
	free(v);
	return rc;
}

/* Whether a page of [start, end] that became dirty at or before
 * dirtied_by is still under the writeback it was put under at or before
 * sequence `upto`. m->wb is sorted by wb_seq, so the scan stops at the
 * first later start. pc->lock held. */
static bool wb_busy_locked(struct page_mapping *m, uint64_t start, uint64_t end, uint64_t upto,
			   uint64_t dirtied_by)
{
	struct list_node *pos;
	list_for_each(pos, &m->wb) {
		struct page *pg = list_entry(pos, struct page, wb);
		if (pg->wb_seq > upto)
			return false;
		if (pg->index >= start && pg->index <= end && pg->wb_dirty_ns <= dirtied_by)
			return true;
	}
	return false;
}

/* Sleep until a run completes (or, with nothing under writeback, until
 * anything changes). pc->lock held. */
static void wait_writeback_locked(struct page_cache *pc)
{
	uint64_t g = pc->wb_gen;
	if (!pc->nr_writeback) {
		page_wait_locked(pc);
		return;
	}
	while (pc->wb_gen == g && pc->nr_writeback)
		page_wait_locked(pc);
}

int page_mapping_wait(struct page_mapping *m, uint64_t start, uint64_t end)
{
	return page_mapping_wait_dirtied(m, start, end, UINT64_MAX);
}

int page_mapping_wait_dirtied(struct page_mapping *m, uint64_t start, uint64_t end, uint64_t dirtied_by)
{
	struct page_cache *pc = m->pc;
	pthread_mutex_lock(&pc->lock);
	/* Only the writeback started before we began (filemap_fdatawait_range's
	 * bound): a writer that keeps starting writeback of the range cannot
	 * keep us waiting. A page re-submitted meanwhile has a later wb_seq. */
	uint64_t upto = m->wb_seq;
	while (wb_busy_locked(m, start, end, upto, dirtied_by))
		wait_writeback_locked(pc); /* rescan once per completed run */
	int err = m->err;
	m->err = 0;
	pthread_mutex_unlock(&pc->lock);
	if (err)
		return err_set(err, "page: write error in the mapping since the last wait");
	return 0;
}

int page_mapping_sync(struct page_mapping *m, uint64_t start, uint64_t end, unsigned rw)
{
	int rc = page_mapping_writeback(m, start, end, PAGE_WB_SYNC_ALL, rw);
	int wrc = page_mapping_wait(m, start, end);
	return rc ? rc : wrc;
}

/* ------------------------------------------- oldest pages, throttle, reclaim */

struct page **page_collect_oldest(struct page_cache *pc, uint64_t expired_before, uint64_t keep, size_t max,
				  size_t *n, size_t *n_expired)
{
	*n = *n_expired = 0;
	pthread_mutex_lock(&pc->lock);
	size_t cap = pc->nr_dirty < max ? pc->nr_dirty : max;
	struct page **v = cap ? malloc(cap * sizeof *v) : NULL;
	if (!v) {
		pthread_mutex_unlock(&pc->lock);
		return NULL;
	}
	uint64_t remaining = pc->nr_dirty;
	struct list_node *pos;
	list_for_each(pos, &pc->dirty) {
		if (*n == cap)
			break;
		struct page *pg = list_entry(pos, struct page, dirty);
		bool expired = pg->dirty_ns <= expired_before;
		if (!expired && remaining <= keep)
			break; /* oldest first: the rest is younger */
		page_hold_locked(pg);
		v[(*n)++] = pg;
		*n_expired += expired;
		remaining--;
	}
	pthread_mutex_unlock(&pc->lock);
	if (*n > 1)
		qsort(v, *n, sizeof *v, cmp_page);
	return v;
}

/* Write up to throttle_chunk of the oldest dirty pages (WRITE, skipping busy
 * ones). pc->lock held on entry and return. Returns the pages submitted. */
static size_t write_chunk_locked(struct page_cache *pc)
{
	size_t chunk = (size_t)pc->p.throttle_chunk, n, x, sub = 0;
	pthread_mutex_unlock(&pc->lock);
	struct page **v = page_collect_oldest(pc, 0, 0, chunk, &n, &x);
	if (v)
		page_write_pages(pc, v, n, PAGE_WB_SYNC_NONE, BLK_WRITE, &sub);
	free(v);
	pthread_mutex_lock(&pc->lock);
	return sub;
}

/* 2.6.30's per-task dirty limit (task_dirty_limit, since 2.6.24): each
 * writer's limit is the cache's lowered by up to an eighth, in proportion
 * to its share of the pages dirtied lately, so a heavy writer is throttled
 * a little below the limit and a light one (a process appending a record
 * and fsyncing) is not throttled for the heavy one's pages. The share is a
 * floating proportion: a thread's count halves every `dirty_limit` pages
 * dirtied in the cache (a period); share = count / (period + pages into
 * the current period). State per thread, for one cache at a time (by id:
 * a new cache may reuse a freed one's address). */
static _Thread_local struct {
	uint64_t pc_id;
	uint64_t count, period;
} task_dirty;

static uint64_t task_period_len(const struct page_cache *pc)
{
	return pc->dirty_limit ? pc->dirty_limit : 1;
}

/* Decay this thread's count to the cache's current period. */
static void task_dirty_decay(const struct page_cache *pc)
{
	uint64_t period = pc->dirtied / task_period_len(pc);
	if (task_dirty.pc_id != pc->id) {
		task_dirty.pc_id = pc->id;
		task_dirty.count = 0;
	} else if (period > task_dirty.period) {
		uint64_t d = period - task_dirty.period;
		task_dirty.count = d >= 64 ? 0 : task_dirty.count >> d;
	}
	task_dirty.period = period;
}

void page_task_dirtied_locked(struct page_cache *pc)
{
	pc->dirtied++;
	task_dirty_decay(pc);
	task_dirty.count++;
}

/* This thread's dirty limit (pc->lock held). */
static uint64_t task_dirty_limit_locked(const struct page_cache *pc)
{
	task_dirty_decay(pc);
	uint64_t len = task_period_len(pc), den = len + pc->dirtied % len;
	uint64_t num = task_dirty.count < den ? task_dirty.count : den;
	uint64_t cut = pc->dirty_limit / 8;
	return pc->dirty_limit - (uint64_t)((double)cut * (double)num / (double)den);
}

void page_cache_balance_dirty(struct page_cache *pc)
{
	bool throttled = false;
	uint64_t w0 = stalltrace_t0();
	pthread_mutex_lock(&pc->lock);
	if (pc->kick_limit && pc->nr_dirty > pc->kick_limit)
		page_flusher_wake_locked(pc);
	uint64_t limit = task_dirty_limit_locked(pc);
	while (pc->nr_dirty + pc->nr_writeback > limit) {
		if (!throttled) {
			pc->st.throttled++;
			throttled = true;
		}
		if (pc->nr_dirty) {
			pc->st.throttle_writes += write_chunk_locked(pc);
			if (pc->nr_dirty + pc->nr_writeback <= limit)
				break;
		}
		pc->st.throttle_waits++;
		wait_writeback_locked(pc);
	}
	pthread_mutex_unlock(&pc->lock);
	if (throttled)
		stalltrace_wait("balance_dirty throttled", w0, 0);
}

bool page_reclaim_wait_locked(struct page_cache *pc)
{
	if (!pc->nr_dirty && !pc->nr_writeback)
		return false;
	size_t sub = 0;
	if (pc->nr_dirty) {
		sub = write_chunk_locked(pc);
		pc->st.reclaim_writes += sub;
	}
	/* Synchronous devices completed the writes in write_chunk: the pages
	 * are evictable now. Otherwise wait for a completion. */
	if (!sub || pc->nr_writeback)
		wait_writeback_locked(pc);
	return true;
}

/* --------------------------------------------------------------- flusher */

size_t page_cache_flush_pass(struct page_cache *pc, uint64_t now_ns)
{
	if (!now_ns)
		now_ns = clock_now_ns();
	pthread_mutex_lock(&pc->lock);
	uint64_t expire = pc->p.dirty_expire_ms * NS_PER_MS;
	uint64_t before = now_ns >= expire ? now_ns - expire : 0;
	uint64_t keep = pc->bg_limit ? pc->bg_limit : UINT64_MAX;
	pthread_mutex_unlock(&pc->lock);
	size_t n, n_expired, sub = 0;
	struct page **v = page_collect_oldest(pc, before, keep, SIZE_MAX, &n, &n_expired);
	if (v)
		page_write_pages(pc, v, n, PAGE_WB_SYNC_NONE, BLK_WRITE, &sub);
	free(v);
	pthread_mutex_lock(&pc->lock);
	pc->st.flusher_passes++;
	pc->st.flusher_writes += sub;
	pc->st.expired_writes += n_expired;
	pc->st.background_writes += n - n_expired;
	pthread_mutex_unlock(&pc->lock);
	return sub;
}

void page_flusher_wake_locked(struct page_cache *pc)
{
	if (pc->flusher_running && !pc->flusher_kick) {
		pc->flusher_kick = true;
		pthread_cond_signal(&pc->flusher_cond);
	}
}

static void *flusher_main(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-flusher"); /* top, perf, gdb */
	struct page_cache *pc = arg;
	pthread_mutex_lock(&pc->lock);
	uint64_t next = clock_now_ns() + pc->p.writeback_interval_ms * NS_PER_MS;
	while (!pc->stop) {
		uint64_t interval = pc->p.writeback_interval_ms * NS_PER_MS;
		if (!pc->flusher_kick && (!interval || clock_now_ns() < next)) {
			clock_cond_wait_until(&pc->flusher_cond, &pc->lock, interval ? next : 0);
			continue;
		}
		pc->flusher_kick = false;
		pthread_mutex_unlock(&pc->lock);
		page_cache_flush_pass(pc, 0);
		pthread_mutex_lock(&pc->lock);
		next = clock_now_ns() + pc->p.writeback_interval_ms * NS_PER_MS;
	}
	pthread_mutex_unlock(&pc->lock);
	return NULL;
}

/* ---------------------------------------------------------- the worker */

/* The cache whose worker the calling thread is (NULL elsewhere). */
static _Thread_local struct page_cache *worker_of;

static void *worker_main(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-page-wb"); /* top, perf, gdb */
	struct page_cache *pc = arg;
	worker_of = pc;
	pthread_mutex_lock(&pc->lock);
	for (;;) {
		if (list_empty(&pc->done)) {
			if (pc->stop)
				break;
			pthread_cond_wait(&pc->worker_cond, &pc->lock);
			continue;
		}
		struct page_run *r = list_entry(pc->done.next, struct page_run, link);
		list_del(&r->link);
		pthread_mutex_unlock(&pc->lock);
		struct page_mapping *m = r->m;
		m->ops->io_done(m->ctx, r->first, r->first + r->n - 1, r->err);
		run_free(r);
		pthread_mutex_lock(&pc->lock);
		pc->st.io_done_calls++;
		pc->done_finished++;
		m->io_pending--;
		page_wake_locked(pc);
	}
	pthread_mutex_unlock(&pc->lock);
	return NULL;
}

bool page_in_worker(struct page_cache *pc)
{
	return worker_of == pc;
}

int page_cache_flush_io_done(struct page_cache *pc)
{
	if (page_in_worker(pc))
		return err_set(-EDEADLK, "page: page_cache_flush_io_done from io_done");
	pthread_mutex_lock(&pc->lock);
	uint64_t target = pc->done_queued;
	while (pc->done_finished < target)
		page_wait_locked(pc);
	pthread_mutex_unlock(&pc->lock);
	return 0;
}

uint64_t page_cache_write_errors(struct page_cache *pc)
{
	pthread_mutex_lock(&pc->lock);
	uint64_t n = pc->st.write_errors;
	pthread_mutex_unlock(&pc->lock);
	return n;
}

int page_mapping_flush_io_done(struct page_mapping *m)
{
	struct page_cache *pc = m->pc;
	if (page_in_worker(pc))
		return err_set(-EDEADLK, "page: page_mapping_flush_io_done from io_done");
	pthread_mutex_lock(&pc->lock);
	while (m->io_pending)
		page_wait_locked(pc);
	pthread_mutex_unlock(&pc->lock);
	return 0;
}

int page_threads_start(struct page_cache *pc)
{
	/* The flags are set before the threads exist (nothing races them). */
	pc->worker_running = true;
	int rc = pthread_create(&pc->worker, NULL, worker_main, pc);
	if (rc) {
		pc->worker_running = false;
		return err_set(-rc, "page: cannot start the io_done worker");
	}
	if (pc->p.writeback_interval_ms) {
		pc->flusher_running = true;
		rc = pthread_create(&pc->flusher, NULL, flusher_main, pc);
		if (rc) {
			pc->flusher_running = false;
			return err_set(-rc, "page: cannot start the flusher thread");
		}
	}
	return 0;
}

void page_threads_stop(struct page_cache *pc)
{
	pthread_mutex_lock(&pc->lock);
	pc->stop = true;
	pthread_cond_signal(&pc->worker_cond);
	pthread_cond_signal(&pc->flusher_cond);
	pthread_mutex_unlock(&pc->lock);
	if (pc->flusher_running)
		pthread_join(pc->flusher, NULL);
	if (pc->worker_running)
		pthread_join(pc->worker, NULL);
	pc->flusher_running = pc->worker_running = false;
}
