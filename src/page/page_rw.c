/* Page cache read and write paths (docs/page-cache.md): page_read (holes as
 * zeroes), page_prepare_write (allocation at write time, read-modify-write),
 * page_mark_dirty, the byte-range copies, truncate, invalidate, and the end
 * of a mapping. Locking rules: page_int.h.
 */
#include "page/page_int.h"

#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#if PAGE_STREAM_COPY
#include <emmintrin.h>
#endif

/* Copy one whole page of a write into a cache page. The destination is
 * cold (a reused or new slot; the cache is many times the CPU caches) and
 * is read next by the device, not the CPU: normal stores first read each
 * destination line into the cache (read for ownership) and evict others
 * to make room; streaming stores write the lines straight to memory
 * (about 40 % less time per MiB measured on the streaming write path).
 * Returns whether streaming stores were used: the caller fences
 * (page_copy_fence) before anyone else may see the page. stream_copy is
 * read without the cache lock (a switch applies from some next page). */
static bool page_copy_in(const struct page_cache *pc, void *dst, const void *src, size_t len)
{
#if PAGE_STREAM_COPY
	if (pc->p.stream_copy && (uintptr_t)dst % 16 == 0 && len % 64 == 0) {
		__m128i *d = dst;
		const __m128i *s = src;
		for (size_t i = 0; i < len / 16; i += 4) {
			__m128i a = _mm_loadu_si128(s + i), b = _mm_loadu_si128(s + i + 1);
			__m128i c = _mm_loadu_si128(s + i + 2), e = _mm_loadu_si128(s + i + 3);
			_mm_stream_si128(d + i, a);
			_mm_stream_si128(d + i + 1, b);
			_mm_stream_si128(d + i + 2, c);
			_mm_stream_si128(d + i + 3, e);
		}
		return true;
	}
#endif
	memcpy(dst, src, len);
	return false;
}

/* Order streaming stores before the stores that publish the pages (the
 * cache lock's release does not order them on x86). */
static void page_copy_fence(void)
{
#if PAGE_STREAM_COPY
	_mm_sfence();
#endif
}

/* Call the map op (page locked by the caller, no cache lock held) and
 * check its answer; the caller records the block. */
static int map_call(struct page *pg, bool create, uint64_t *block, bool *is_new)
{
	struct page_mapping *m = pg->m;
	*block = PAGE_NO_BLOCK;
	*is_new = false;
	int rc = m->ops->map(m->ctx, pg->index, create, block, is_new);
	if (rc < 0) {
		/* Whatever the op left there is not the page's block (the
		 * caller may record *block without checking rc). */
		*block = PAGE_NO_BLOCK;
		return err_wrap(rc, "page: map of page %" PRIu64, pg->index);
	}
	if (*block == PAGE_NO_BLOCK ? create : *block >= m->pc->nr_blocks) {
		*block = PAGE_NO_BLOCK;
		return err_set(-EIO, "page: map of page %" PRIu64 " gave %s", pg->index,
			       create ? "no block or one past the device" : "a block past the device");
	}
	return 0;
}

/* map_call, then record the block in the page. */
static int map_page(struct page *pg, bool create, uint64_t *block, bool *is_new)
{
	int rc = map_call(pg, create, block, is_new);
	if (rc < 0)
		return rc;
	if (*block != PAGE_NO_BLOCK) {
		pthread_mutex_lock(&pg->m->pc->lock);
		pg->block = *block;
		pthread_mutex_unlock(&pg->m->pc->lock);
	}
	return 0;
}

static void set_flags(struct page *pg, unsigned flags)
{
	struct page_cache *pc = pg->m->pc;
	pthread_mutex_lock(&pc->lock);
	pg->flags |= flags;
	pthread_mutex_unlock(&pc->lock);
}

/* Zero the page and mark it uptodate. */
static void zero_page(struct page *pg)
{
	memset(pg->data, 0, pg->m->pc->page_size);
	set_flags(pg, PG_UPTODATE);
}

/* Snapshot of (uptodate, block) under the cache lock. */
static bool page_state(struct page *pg, uint64_t *block)
{
	struct page_cache *pc = pg->m->pc;
	pthread_mutex_lock(&pc->lock);
	bool up = pg->flags & PG_UPTODATE;
	*block = pg->block;
	pthread_mutex_unlock(&pc->lock);
	return up;
}

int page_read(struct page *pg)
{
	uint64_t block;
	if (page_state(pg, &block))
		return 0;
	if (block == PAGE_NO_BLOCK) {
		bool is_new;
		int rc = map_page(pg, false, &block, &is_new);
		if (rc < 0)
			return rc;
		if (block == PAGE_NO_BLOCK) { /* a hole: zeroes, nothing allocated */
			zero_page(pg);
			pthread_mutex_lock(&pg->m->pc->lock);
			pg->m->pc->st.holes_read++;
			pthread_mutex_unlock(&pg->m->pc->lock);
			return 0;
		}
	}
	return page_read_io(pg->m->pc, pg);
}

int page_prepare_write(struct page *pg, unsigned from, unsigned len, uint64_t i_size)
{
	struct page_cache *pc = pg->m->pc;
	if (from > pc->page_size || len > pc->page_size - from)
		return err_set(-EINVAL, "page: write of [%u, +%u) does not fit a %u-byte page", from, len,
			       pc->page_size);
	uint64_t block;
	bool up = page_state(pg, &block), is_new = false;
	if (block == PAGE_NO_BLOCK) {
		int rc = map_page(pg, true, &block, &is_new);
		if (rc < 0)
			return rc;
	}
	if (up || (from == 0 && len == pc->page_size))
		return 0;
	/* A new block holds garbage, and a page wholly at or past the end of
	 * the file has nothing to keep: zero instead of reading. */
	if (is_new || pg->index * pc->page_size >= i_size) {
		zero_page(pg);
		return 0;
	}
	return page_read_io(pc, pg);
}

int page_mark_dirty(struct page *pg)
{
	struct page_cache *pc = pg->m->pc;
	int rc = 0;
	pthread_mutex_lock(&pc->lock);
	if (pg->flags & PG_DETACHED)
		rc = err_set(-ESTALE, "page: page %" PRIu64 " was truncated", pg->index);
	else if (!(pg->flags & PG_LOCKED) || pg->block == PAGE_NO_BLOCK)
		rc = err_set(-EINVAL, "page: page %" PRIu64 " dirtied %s", pg->index,
			     pg->block == PAGE_NO_BLOCK ? "without a block (page_prepare_write first)" : "unlocked");
	if (rc == 0) {
		pg->flags |= PG_UPTODATE;
		page_set_dirty_locked(pc, pg, clock_now_ns());
	}
	pthread_mutex_unlock(&pc->lock);
	return rc;
}

/* ----------------------------------------------------- byte-range copies */

/* Unlock and drop a grabbed page. */
static void release(struct page *pg)
{
	struct page_cache *pc = pg->m->pc;
	pthread_mutex_lock(&pc->lock);
	page_unlock_locked(pc, pg);
	struct page *f = page_put_locked(pc, pg);
	pthread_mutex_unlock(&pc->lock);
	page_free(f);
}

static void free_chain(struct page *pg)
{
	while (pg) {
		struct page *next = pg->hash_next;
		page_free(pg);
		pg = next;
	}
}

/* Map the pages of a batch without a block from blk[i] on (page index + i)
 * with the map_range op: as many as it gives, at most up to the next page
 * that has a block. */
static int map_range_call(struct page_mapping *m, uint64_t index, size_t i, size_t k, uint64_t *blk)
{
	size_t end = i + 1;
	while (end < k && blk[end] == PAGE_NO_BLOCK)
		end++;
	uint64_t phys = PAGE_NO_BLOCK;
	uint32_t count = 0;
	int rc = m->ops->map_range(m->ctx, index + i, (uint32_t)(end - i), &phys, &count);
	if (rc < 0)
		return err_wrap(rc, "page: map of pages %" PRIu64 "..", index + i);
	if (count < 1 || count > end - i || phys == PAGE_NO_BLOCK || phys + count > m->pc->nr_blocks)
		return err_set(-EIO, "page: map of page %" PRIu64 " gave no block, a bad count or a block past the device",
			       index + i);
	for (uint32_t j = 0; j < count; j++)
		blk[i + j] = phys + j;
	return 0;
}

/* Most pages one whole-page write step takes (a batch: locked together).
 * 64 (a 256 KiB batch of 4 KiB pages, ext3's write chunk): a 1 MiB FUSE
 * WRITE takes 4 map_range calls and 8 cache lock holds instead of 16 and
 * 32; about 6 % less daemon CPU per GiB streamed than 16. */
#define WRITE_BATCH 64u

/* Whole pages [index, index + n) of a write from src, in batches: grab
 * (the first page may wait; page_grab_batch adds what it can without
 * waiting), map the pages that have no block and copy in without the cache
 * lock, then record the blocks, dirty, unlock and drop the whole batch in
 * one cache lock hold — two lock round trips a batch, where the streaming
 * writer used to take the lock six times a page (shared with the flusher
 * and the completions). Deferring the block is safe: only the page lock
 * holder reads the block of a clean page (writeback looks at dirty pages
 * only), and we hold it. *written: the bytes written (whole pages from
 * index on, up to the first error); returns 0 or that error. *throttle:
 * dirty + writeback pages are over the dirty limit (the caller calls
 * page_cache_balance_dirty). */
static int write_whole_pages(struct page_mapping *m, uint64_t index, size_t n, const char *src, size_t *written,
			     bool *throttle)
{
	struct page_cache *pc = m->pc;
	struct page *v[WRITE_BATCH];
	uint64_t blk[WRITE_BATCH];
	bool up;
	*written = 0;
	int rc = page_grab_snap(m, index, &v[0], &up, &blk[0]);
	if (rc < 0)
		return rc;
	size_t k = page_grab_batch(m, index, n < WRITE_BATCH ? n : WRITE_BATCH, v, blk), ok, streamed = 0;
	for (ok = 0; ok < k; ok++) {
		bool is_new;
		if (blk[ok] == PAGE_NO_BLOCK && m->ops->map_range)
			rc = map_range_call(m, index, ok, k, blk);
		else if (blk[ok] == PAGE_NO_BLOCK)
			rc = map_call(v[ok], true, &blk[ok], &is_new);
		if (rc < 0)
			break;
		streamed += page_copy_in(pc, v[ok]->data, src + ok * pc->page_size, pc->page_size);
	}
	if (streamed)
		page_copy_fence();
	uint64_t now = clock_now_ns();
	size_t done = ok;
	struct page *chain = NULL;
	pthread_mutex_lock(&pc->lock);
	for (size_t i = 0; i < k; i++) {
		struct page *pg = v[i];
		if (blk[i] != PAGE_NO_BLOCK)
			pg->block = blk[i];
		if (i < ok && (pg->flags & PG_DETACHED)) {
			/* Truncated meanwhile (the pages after it are being
			 * truncated too). */
			if (i < done) {
				done = i;
				rc = err_set(-ESTALE, "page: page %" PRIu64 " was truncated", pg->index);
			}
		} else if (i < ok) {
			pg->flags |= PG_UPTODATE;
			page_set_dirty_locked(pc, pg, now);
		}
		page_unlock_locked(pc, pg);
		struct page *f = page_put_locked(pc, pg);
		if (f) {
			f->hash_next = chain;
			chain = f;
		}
	}
	/* Past the lowest per-thread limit (page_cache_balance_dirty decides). */
	*throttle = pc->nr_dirty + pc->nr_writeback > pc->dirty_limit - pc->dirty_limit / 8;
	pc->st.stream_copies += streamed;
	pthread_mutex_unlock(&pc->lock);
	free_chain(chain);
	*written = done * pc->page_size;
	return rc;
}

/* Copy between buf and the pages of [off, off+len): out of them (read), or
 * into them (write: allocate, read-modify-write, dirty, throttle). Returns
 * the bytes copied, or the error if none were. */
static ssize_t copy_range(struct page_mapping *m, uint64_t off, void *buf, size_t len, uint64_t i_size,
			  bool write, bool balance)
{
	unsigned ps = m->pc->page_size;
	size_t done = 0;
	while (done < len) {
		uint64_t pos = off + done;
		unsigned in = (unsigned)(pos % ps);
		size_t n = ps - in < len - done ? ps - in : len - done;
		char *data, *ubuf = (char *)buf + done;
		struct page *pg;
		bool throttle = write;
		int rc;
		if (write && in == 0 && len - done >= ps) {
			rc = write_whole_pages(m, pos / ps, (len - done) / ps, ubuf, &n, &throttle);
			if (rc < 0)
				done += n;
		} else if ((rc = page_grab(m, pos / ps, &pg)) == 0) {
			data = (char *)pg->data + in;
			rc = write ? page_prepare_write(pg, in, (unsigned)n, i_size) : page_read(pg);
			if (rc == 0 && write) {
				memcpy(data, ubuf, n);
				rc = page_mark_dirty(pg);
			} else if (rc == 0) {
				memcpy(ubuf, data, n);
			}
			release(pg);
		}
		if (rc < 0)
			return done ? (ssize_t)done : rc;
		done += n;
		/* No page lock held here: throttling may write and wait. */
		if (throttle && balance)
			page_cache_balance_dirty(m->pc);
	}
	return (ssize_t)done;
}

ssize_t page_mapping_read(struct page_mapping *m, uint64_t off, void *buf, size_t len, uint64_t i_size)
{
	if (off >= i_size)
		return 0;
	if (len > i_size - off)
		len = (size_t)(i_size - off);
	return copy_range(m, off, buf, len, i_size, false, false);
}

ssize_t page_mapping_write(struct page_mapping *m, uint64_t off, const void *buf, size_t len,
			   uint64_t i_size)
{
	/* Only read from in this direction. */
	return copy_range(m, off, (void *)(uintptr_t)buf, len, i_size, true, true);
}

ssize_t page_mapping_write_nobalance(struct page_mapping *m, uint64_t off, const void *buf, size_t len,
				     uint64_t i_size)
{
	return copy_range(m, off, (void *)(uintptr_t)buf, len, i_size, true, false);
}

/* ------------------------------------------------- truncate, invalidate */

/* Drop the pages of m with index in [first, last] that `pick` accepts;
 * with `wait`, wait for locked pages and writeback first (truncate), else
 * skip them. pc->lock held. Returns the pages to free (hash_next chain) and
 * the number dropped. */
static struct page *drop_range_locked(struct page_mapping *m, uint64_t first, uint64_t last, bool wait,
				      size_t *dropped)
{
	struct page_cache *pc = m->pc;
	struct page *chain = NULL;
	*dropped = 0;
restart:;
	struct list_node *pos, *tmp;
	list_for_each_safe(pos, tmp, &m->pages) {
		struct page *pg = list_entry(pos, struct page, mlink);
		if (pg->index < first || pg->index > last)
			continue;
		bool busy = pg->flags & (PG_LOCKED | PG_WRITEBACK);
		if (!wait && (busy || pg->count || (pg->flags & PG_DIRTY)))
			continue;
		if (busy) {
			/* Keep it alive while we sleep; the list may change. */
			page_hold_locked(pg);
			while (pg->flags & (PG_LOCKED | PG_WRITEBACK))
				page_wait_locked(pc);
			struct page *f = page_put_locked(pc, pg);
			if (f) {
				f->hash_next = chain;
				chain = f;
			}
			goto restart;
		}
		struct page *f = page_detach_locked(pc, pg);
		if (f) {
			f->hash_next = chain;
			chain = f;
		}
		(*dropped)++;
	}
	return chain;
}

static void drop_range(struct page_mapping *m, uint64_t first, uint64_t last, bool wait, size_t *dropped)
{
	pthread_mutex_lock(&m->pc->lock);
	struct page *chain = drop_range_locked(m, first, last, wait, dropped);
	pthread_mutex_unlock(&m->pc->lock);
	free_chain(chain);
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int page_mapping_truncate(struct page_mapping *m, uint64_t size)
{
	unsigned ps = m->pc->page_size;
	uint64_t first = size / ps + (size % ps != 0);
	size_t dropped;
	/* The blocks past size are freed after this: a copy of them read
	 * from the disk before now is stale even if no page was cached. */
	pthread_mutex_lock(&m->pc->lock);
	m->removals++;
	pthread_mutex_unlock(&m->pc->lock);
	drop_range(m, first, PAGE_INDEX_MAX, true, &dropped);
	if (size % ps == 0)
		return 0;
	/* The page holding the new end keeps its head; its tail must read as
	 * zeroes if the file grows again, on disk too. */
	struct page *pg;
	int rc = page_grab(m, size / ps, &pg);
	if (rc < 0)
		return rc;
	rc = page_read(pg);
	unsigned in = (unsigned)(size % ps);
	if (rc == 0 && page_block(pg) != PAGE_NO_BLOCK && !all_zero((unsigned char *)pg->data + in, ps - in)) {
		memset((char *)pg->data + in, 0, ps - in);
		rc = page_mark_dirty(pg);
	}
	release(pg);
	page_cache_balance_dirty(m->pc);
	return rc;
}

int page_mapping_punch(struct page_mapping *m, uint64_t first, uint64_t last)
{
	if (first > last)
		return 0;
	/* As truncate: the blocks behind the range are freed or zeroed next. */
	pthread_mutex_lock(&m->pc->lock);
	m->removals++;
	pthread_mutex_unlock(&m->pc->lock);
	size_t dropped;
	drop_range(m, first, last, true, &dropped);
	return 0;
}

size_t page_mapping_invalidate(struct page_mapping *m, uint64_t start, uint64_t end)
{
	size_t dropped;
	drop_range(m, start, end, false, &dropped);
	return dropped;
}

void page_mapping_destroy(struct page_mapping *m)
{
	if (!m)
		return;
	struct page_cache *pc = m->pc;
	if (page_in_worker(pc)) {
		err_set(-EDEADLK, "page: page_mapping_destroy from io_done is refused");
		return;
	}
	size_t dropped;
	drop_range(m, 0, PAGE_INDEX_MAX, true, &dropped);
	pthread_mutex_lock(&pc->lock);
	while (m->nr_alive || m->io_pending)
		page_wait_locked(pc);
	list_del(&m->link);
	pthread_mutex_unlock(&pc->lock);
	free(m);
}
