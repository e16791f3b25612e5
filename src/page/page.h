/* Page cache for file data (docs/page-cache.md).
 *
 * A bounded store of file-data pages over one block queue, beside the buffer
 * cache (src/buf, which keeps metadata). One `struct page_cache` per mount;
 * one `struct page_mapping` per inode, created by the filesystem with an ops
 * table that maps a page index (file block) to a physical block.
 *
 * Page size = filesystem block size (1024, 2048 or 4096): one page is one fs
 * block, so a page has at most one physical block and no per-block state.
 *
 * - Reads: holes (map(create=0) gives PAGE_NO_BLOCK) read as zeroes and are
 *   not allocated; other pages are read with READ_SYNC.
 * - Writes: map(create=1) allocates at write time (ext3 has no delayed
 *   allocation); a partial write reads the page first (read-modify-write)
 *   unless the block is new or the page lies wholly beyond i_size (then the
 *   rest of the page is zeroed).
 * - Writeback: dirty pages go in one bio per contiguous run (consecutive
 *   indices AND consecutive physical blocks, at most max_run_kb), written
 *   from the page buffers themselves when they are contiguous in memory
 *   (else from a copy), submitted with the caller's op (BLK_WRITE,
 *   BLK_WRITE_SYNC_PLUG, ...), several runs behind one plug. When a run
 *   completes, its pages leave writeback in the completion context and the
 *   mapping's io_done(ctx, first, last, err) is called later in the cache's
 *   worker thread (never in the device's completion context).
 * - Budget: at most cache_bytes / page_size pages exist. A new page at the
 *   budget evicts the least recently used clean, unreferenced page; when there
 *   is none, the allocating thread writes back dirty pages and waits for
 *   writeback (direct reclaim); -ENOMEM only if every page is referenced.
 * - Dirty limits (2.6.30 vm rules, as percentages of the budget): past
 *   dirty_background_ratio (10 %) plus a batch the flusher thread is woken
 *   to write the oldest dirty pages down to it; past dirty_ratio (20 %) of dirty + writeback pages a
 *   writer is throttled in page_cache_balance_dirty (it writes back dirty pages
 *   itself, then waits for writeback to complete, until under the limit).
 *   The limit is per thread (2.6.30's task_dirty_limit): lowered by up to an
 *   eighth in proportion to the thread's share of the pages dirtied lately,
 *   so a streaming writer is held a little below it and a light writer
 *   beside it is not throttled for the streamer's pages.
 *   Every dirty_writeback interval (5 s) the flusher writes pages dirty for
 *   longer than dirty_expire (30 s).
 *
 * Errors: negative errno, with an err_set() message. -EIO for a failed read
 * (returned by the reading call); a failed write leaves the page clean and
 * uptodate (its data is still the newest) and records the error in the mapping:
 * page_mapping_wait returns it once (AS_EIO) and io_done receives it.
 * -ENOMEM only on a real allocation failure or a budget fully referenced.
 * Map op errors are returned unchanged.
 *
 * Threads: every function may be called from any thread. Besides callers,
 * the cache has a worker thread (io_done) and, if writeback_interval_ms is
 * not 0, a flusher thread. map() is called only in the thread of the
 * page_* call that needs it, with that page locked and no cache lock held;
 * never from the flusher, the worker or a completion. io_done() is called in
 * the worker thread, one at a time, in completion order, no lock held; it
 * may call any page_* function except page_cache_flush_io_done,
 * page_mapping_flush_io_done and page_mapping_destroy (-EDEADLK / refused).
 *
 * Locking rules for the filesystem:
 * - The page lock is a sleeping lock owned by one thread at a time (the
 *   page_grab caller, a reader doing I/O, writeback taking the page). The
 *   data of a page is read and written only under its page lock; a page
 *   under writeback may be changed (no stable pages): page_grab/page_lock
 *   give it a copy of its buffer first when the bio reads that buffer.
 * - page_mapping_writeback(WB_SYNC_ALL), truncate, invalidate, destroy and
 *   eviction may wait for page locks and writeback. So a thread that holds a
 *   page lock must not wait for anything that itself waits for writeback
 *   (e.g. a journal commit in data=ordered): start the journal handle BEFORE
 *   taking page locks (ext4's order), as page_mapping_write does by calling
 *   map() only inside the caller's thread.
 * - Do not hold a page lock while calling page_cache_balance_dirty or
 *   page_mapping_wait.
 * - Take several page locks of one mapping only in ascending index order.
 */
#ifndef NOSTALL_PAGE_H
#define NOSTALL_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/tunable.h"

struct blk_queue;
struct page_cache;
struct page_mapping;
struct page;

/* map() result for a hole; also page_block() of a page without a block. */
#define PAGE_NO_BLOCK UINT64_MAX
/* Last page index of an open-ended range. */
#define PAGE_INDEX_MAX UINT64_MAX

enum page_wb_sync {
	PAGE_WB_SYNC_NONE = 0, /* skip pages that are locked or under writeback */
	PAGE_WB_SYNC_ALL = 1,  /* wait for them, then write them if still dirty */
};

/* 1 when whole-page writes can copy with streaming (non-temporal) stores
 * (tunable stream_copy, stat stream_copies): x86-64, where SSE2 is part of
 * the base ISA, and not under TSan, which would not see the stores. */
#if defined(__SANITIZE_THREAD__)
#define PAGE_STREAM_COPY 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PAGE_STREAM_COPY 0
#endif
#endif
#ifndef PAGE_STREAM_COPY
#if defined(__SSE2__)
#define PAGE_STREAM_COPY 1
#else
#define PAGE_STREAM_COPY 0
#endif
#endif

/* Tunables (page_tunables(), util/tunable.h). */
struct page_params {
	uint64_t cache_bytes;            /* the budget (64 MiB); fixed at creation */
	uint64_t dirty_expire_ms;        /* 30000 (dirty_expire_centisecs 3000) */
	uint64_t writeback_interval_ms;  /* 5000 (dirty_writeback_centisecs 500); 0 = no flusher thread */
	uint64_t dirty_background_ratio; /* 10 (% of the budget) */
	uint64_t dirty_ratio;            /* 20 (% of the budget) */
	uint64_t dirty_min_kb;           /* 0: floor of the dirty limit (<= half the budget) */
	uint64_t max_run_kb;             /* largest writeback bio, 512 KiB */
	uint64_t throttle_chunk;         /* pages a throttled writer writes per round, 48 */
	uint64_t stream_copy;            /* 1: whole pages are copied in with streaming stores */
};

void page_params_default(struct page_params *p);
/* The tunable table of struct page_params (for tunable_set/print). */
const struct tunable_desc *page_tunables(void);

/* A cache of `page_size` pages over q (not owned). p may be NULL. */
int page_cache_create(struct blk_queue *q, unsigned page_size, const struct page_params *p,
		      struct page_cache **out);
/* Every mapping must be destroyed first. Stops the threads. NULL is a no-op. */
void page_cache_destroy(struct page_cache *pc);
unsigned page_cache_page_size(const struct page_cache *pc);
/* Change a tunable at run time (not cache_bytes: -EPERM). */
int page_cache_set(struct page_cache *pc, const char *name, const char *value);
int page_cache_get(struct page_cache *pc, const char *name, uint64_t *out);

/* One flusher pass in the calling thread, as if the clock read now_ns
 * (0 = the real clock): write the pages dirty since before now_ns -
 * dirty_expire, and the oldest ones while dirty pages exceed the background
 * threshold. Returns the number of pages submitted. For tests and for
 * running without the flusher thread. */
size_t page_cache_flush_pass(struct page_cache *pc, uint64_t now_ns);
/* Throttle the calling writer (balance_dirty_pages): while dirty + writeback
 * pages exceed the dirty limit, write back dirty pages itself (BLK_WRITE) and
 * wait for writeback. Also wakes the flusher past the background threshold.
 * page_mapping_write calls it; page-level writers call it after unlocking. */
void page_cache_balance_dirty(struct page_cache *pc);
/* Wait until every io_done queued so far has returned (flush_workqueue).
 * -EDEADLK when called from io_done itself. */
int page_cache_flush_io_done(struct page_cache *pc);
/* Writeback runs that have failed in this cache so far (stats.write_errors,
 * without the copy). Counted in the run's completion, under the same lock
 * hold that takes its pages out of writeback: a caller that has seen a page
 * leave writeback sees its run's failure counted. */
uint64_t page_cache_write_errors(struct page_cache *pc);

struct page_stats {
	uint64_t pages, dirty, writeback;     /* now */
	uint64_t max_pages, peak_pages;       /* the budget; the most ever allocated */
	uint64_t dirty_limit, background_limit; /* in pages */
	uint64_t hits, misses;                /* page lookups by read/write/grab */
	uint64_t read_bios, read_errors, holes_read;
	uint64_t write_bios, pages_written, write_errors;
	uint64_t zero_copy_bios, unshared;    /* bios from the page buffers themselves; pages copied
					       * because changed under such a bio */
	uint64_t copied_bytes, piece_runs;    /* bytes copied into run buffers (runs whose pages are
					       * not contiguous); runs written piecewise for want
					       * of memory for that copy */
	uint64_t stream_copies;               /* whole pages written in with streaming stores
					       * (0 unless PAGE_STREAM_COPY) */
	uint64_t evictions, reclaim_writes;   /* clean pages evicted; pages written by direct reclaim */
	uint64_t throttled, throttle_waits, throttle_writes; /* writers throttled; their sleeps; their pages */
	uint64_t flusher_passes, flusher_writes, expired_writes, background_writes;
	uint64_t truncated_dirty;             /* dirty pages dropped unwritten by truncate/destroy */
	uint64_t io_done_calls;
};
void page_cache_stats(struct page_cache *pc, struct page_stats *out);
/* Tests: refuse the next n copy buffers of writeback runs, as if out of
 * memory (such a run is written piece by piece: piece_runs). */
void page_cache_fail_run_bufs(struct page_cache *pc, unsigned n);

/* ---- mappings (one per inode) ---- */

struct page_mapping_ops {
	/* The physical block of page `index`. create=false: *phys = PAGE_NO_BLOCK
	 * for a hole (never allocate). create=true: allocate if needed and set
	 * *is_new when the block was just allocated (its old contents are
	 * garbage). Returns 0 or a negative errno (-ENOSPC ...). */
	int (*map)(void *ctx, uint64_t index, bool create, uint64_t *phys, bool *is_new);
	/* Optional. A writeback run of pages [first, last] completed with err
	 * (0 or negative errno). Runs in the cache's worker thread. */
	void (*io_done)(void *ctx, uint64_t first, uint64_t last, int err);
	/* Optional. map(create=true) for up to `max` pages from `index` in one
	 * call, all of them locked by the caller and without a block yet:
	 * *phys is the block of page `index` and *count (1..max on success)
	 * how many pages from it map to consecutive blocks from *phys. Used by
	 * whole-page writes to allocate a batch at once (else map per page). */
	int (*map_range)(void *ctx, uint64_t index, uint32_t max, uint64_t *phys, uint32_t *count);
};

int page_mapping_create(struct page_cache *pc, const struct page_mapping_ops *ops, void *ctx,
			struct page_mapping **out);
/* Drops every page (dirty ones unwritten: write back first), waits for
 * writeback, for every page reference still held elsewhere to be released
 * and for queued io_done calls. Not from io_done (refused with a message). */
void page_mapping_destroy(struct page_mapping *m);
struct page_cache *page_mapping_cache(const struct page_mapping *m);
/* Pages cached / dirty in this mapping now. */
uint64_t page_mapping_nr_pages(struct page_mapping *m);
uint64_t page_mapping_nr_dirty(struct page_mapping *m);

/* Copy min(len, i_size - off) bytes at byte offset off into buf. Returns the
 * bytes read (0 at or past i_size) or a negative errno. */
ssize_t page_mapping_read(struct page_mapping *m, uint64_t off, void *buf, size_t len, uint64_t i_size);
/* Copy len bytes from buf at byte offset off, allocating blocks (map
 * create=1), dirtying the pages, throttling the writer. i_size is the file
 * size before the write (the caller updates it). Returns len, or the bytes
 * written before an error, or the negative errno if none was. */
ssize_t page_mapping_write(struct page_mapping *m, uint64_t off, const void *buf, size_t len,
			   uint64_t i_size);
/* The same without the throttle: the caller calls page_cache_balance_dirty
 * once it holds no journal handle (Linux's generic_perform_write throttles
 * after write_end, which stopped ext3's handle; a writer throttled inside
 * its handle holds up every commit, and with it every other file's fsync). */
ssize_t page_mapping_write_nobalance(struct page_mapping *m, uint64_t off, const void *buf, size_t len,
				     uint64_t i_size);
/* Reading around the cache (ext3's readahead segments read the disk
 * directly): the disk holds the file's bytes except where m has a page, as
 * long as no page left the index since the disk was read (a dirty page
 * written back and evicted meanwhile). So: take page_mapping_removals before
 * reading the disk, then page_mapping_overlay the range read; equal counts
 * mean buf now holds the file as it was at the overlay (a page being
 * written concurrently gives the old or the new bytes, as any read racing a
 * write). Different counts: read again. page_mapping_truncate counts as a
 * removal even without pages (the blocks it precedes freeing). */
uint64_t page_mapping_removals(struct page_mapping *m);
/* Copy over buf (the bytes of [off, off + len)) the parts that m holds in
 * uptodate pages (taking each page's lock). Returns the removals count read
 * after the last lookup. */
uint64_t page_mapping_overlay(struct page_mapping *m, uint64_t off, void *buf, size_t len);
/* Start writing the dirty pages with index in [start, end] with op rw
 * (BLK_WRITE, BLK_WRITE_SYNC_PLUG, ...; plugged: the caller or a wait
 * unplugs). Returns 0 or -ENOMEM (run buffer); I/O errors surface through
 * page_mapping_wait and io_done. */
int page_mapping_writeback(struct page_mapping *m, uint64_t start, uint64_t end, enum page_wb_sync mode,
			   unsigned rw);
/* Wait for the writeback of pages in [start, end] that had started when
 * the call began (unplugging first): writeback that other threads start
 * meanwhile is not waited for (a page re-submitted meanwhile counts as
 * new), so a streaming writer cannot keep the caller waiting
 * (filemap_fdatawait_range's bound). Every page written by an earlier
 * page_mapping_writeback of the caller is covered. Then return and clear
 * the mapping's first write error since the last call (filemap_fdatawait:
 * the error may come from outside the range). */
int page_mapping_wait(struct page_mapping *m, uint64_t start, uint64_t end);
/* page_mapping_wait restricted to the writeback of pages that had become
 * dirty at or before dirtied_by (CLOCK_MONOTONIC ns; their dirtying that
 * this writeback writes): a commit that waits only for its transaction's
 * data (jbd's per-transaction data lists, data_ordered.c). */
int page_mapping_wait_dirtied(struct page_mapping *m, uint64_t start, uint64_t end, uint64_t dirtied_by);
/* fsync's data part: writeback(WB_SYNC_ALL, rw) + wait. */
int page_mapping_sync(struct page_mapping *m, uint64_t start, uint64_t end, unsigned rw);
/* Drop every page wholly past byte offset `size` (waiting for page locks and
 * writeback; dirty pages are dropped unwritten). If size is inside a page
 * that has a block, that page's tail is zeroed and the page dirtied (reading
 * it first if needed: ext3_block_truncate_page's work). Call before freeing
 * the blocks. Returns 0 or the error of that read. */
int page_mapping_truncate(struct page_mapping *m, uint64_t size);
/* Drop every page with index in [first, last] (waiting for page locks and
 * writeback; dirty pages are dropped unwritten: the caller wrote what must
 * land first), counted as a removal: fallocate's PUNCH_HOLE / ZERO_RANGE,
 * before the blocks behind them are freed or turned unwritten. */
int page_mapping_punch(struct page_mapping *m, uint64_t first, uint64_t last);
/* Drop the clean, unlocked, unreferenced pages not under writeback in
 * [start, end] (after the fs wrote their blocks behind the cache). Returns
 * how many were dropped. */
size_t page_mapping_invalidate(struct page_mapping *m, uint64_t start, uint64_t end);
/* Wait until this mapping's queued io_done calls have returned. -EDEADLK
 * from io_done. */
int page_mapping_flush_io_done(struct page_mapping *m);

/* ---- pages (for page-level users: data=journal, tests) ---- */

/* Find or create page `index`, locked and referenced. May wait for the page
 * lock and for reclaim. */
int page_grab(struct page_mapping *m, uint64_t index, struct page **out);
/* The cached page, referenced (not locked), or NULL. */
struct page *page_lookup(struct page_mapping *m, uint64_t index);
void page_lock(struct page *pg);
void page_unlock(struct page *pg);
void page_put(struct page *pg); /* NULL is a no-op */
/* Locked page: make it uptodate (hole: zeroes, not allocated). -EIO. */
int page_read(struct page *pg);
/* Locked page, before writing bytes [from, from+len) of it: map with
 * create=1, then make the rest valid (read, or zero if the block is new or
 * the page is wholly at/after i_size). A write covering the whole page
 * reads nothing. */
int page_prepare_write(struct page *pg, unsigned from, unsigned len, uint64_t i_size);
/* Locked page whose data is complete and which has a block: uptodate +
 * dirty (records when). -EINVAL otherwise. */
int page_mark_dirty(struct page *pg);
/* Accessors; data only under the page lock. */
void *page_data(struct page *pg);
uint64_t page_index(const struct page *pg);
uint64_t page_block(struct page *pg);
bool page_uptodate(struct page *pg);
bool page_dirty(struct page *pg);
bool page_writeback(struct page *pg);

#endif
