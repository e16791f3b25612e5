/* Buffer cache: block-sized buffers of one device, over the block layer.
 *
 * The Linux 2.6.30 buffer-head model (docs/buffer-cache.md):
 * - a buffer is identified by (cache, block number); buf_get() returns it
 *   with a reference held (getblk), buf_put() drops it (brelse);
 * - states: uptodate (data valid), dirty (must be written), locked (I/O in
 *   progress or owned by someone about to do I/O), mapped, new, req (I/O was
 *   submitted at least once), write_io_error; plus a private pointer the
 *   journal uses (journal_head) and a "jbd" flag (buffer managed by the
 *   journal: the writeback thread leaves it alone);
 * - reads are READ, or READ_SYNC when someone waits (buf_read); sequential
 *   misses trigger readahead (READ of the next blocks, nobody waits);
 * - buf_wait() (wait_on_buffer) unplugs the queue before sleeping;
 * - buf_sync_dirty() (sync_dirty_buffer) writes with WRITE_SYNC (WRITE under
 *   the 2.6.29 preset) and waits;
 * - buf_ll_rw_block() with BLK_SWRITE* waits for a locked buffer instead of
 *   skipping it;
 * - buf_fsync_list() (fsync_buffers_list): writes a list of dirty buffers as
 *   SWRITE_SYNC_PLUG and waits, unplugging once (under the old presets each
 *   buffer is WRITE_SYNC, i.e. unplugged one by one);
 * - a bounded cache: clean, unreferenced buffers are reclaimed LRU first
 *   (never dirty, locked, referenced, jbd or private ones); over the bound
 *   with nothing reclaimable it still allocates (stats.pressure) and wakes
 *   the writeback thread to clean everything it may;
 * - a writeback thread writes dirty buffers older than dirty_expire (30 s)
 *   every wakeup interval (5 s), or at once past the background threshold
 *   (dirty bytes > dirty_background_ratio of the cache), with WRITE.
 *
 * The block size is fixed per cache (1024, 2048 or 4096 = filesystem block).
 *
 * Locking: the cache has one internal mutex for its hash/LRU/dirty lists,
 * reference counts and the dirty bit (the other state bits are atomic); a
 * buffer's lock (BH_Lock) is a sleeping lock that may be held across I/O and
 * is released by the I/O completion (which may run in any thread, including
 * the submitter's own inside buf_submit/buf_wait on a synchronous device). Callers never hold the
 * cache mutex (it is internal). Data (buf_data) may be read by anyone holding
 * a reference while the buffer is uptodate; writers must hold the buffer lock
 * or otherwise own the buffer (the journal's get_write_access).
 */
#ifndef NOSTALL_BUF_H
#define NOSTALL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct blk_queue;
struct buf_cache;
struct buffer_head;

struct buf_params {
	size_t max_bytes;              /* cache size bound (default 64 MiB) */
	unsigned readahead_blocks;     /* 0 disables readahead (default 32) */
	unsigned dirty_expire_ms;      /* default 30000 */
	unsigned writeback_interval_ms; /* default 5000; 0 = no writeback thread */
	unsigned dirty_background_pct;  /* default 10 (% of max_bytes) */
};

/* Defaults for *p. */
void buf_params_default(struct buf_params *p);

/* A cache of `block_size` buffers over queue q (which it does not own).
 * p may be NULL for defaults. */
int buf_cache_create(struct blk_queue *q, unsigned block_size, const struct buf_params *p,
		     struct buf_cache **out);
/* Writes back nothing: callers sync first (buf_cache_sync). Every buffer must
 * be unreferenced. */
void buf_cache_destroy(struct buf_cache *c);
struct blk_queue *buf_cache_queue(const struct buf_cache *c);
unsigned buf_cache_block_size(const struct buf_cache *c);
/* Every write of `block` (buf_submit, or a run holding it) carries
 * BLK_REQ_FUA: a filesystem's superblock, whose checksum a write torn by a
 * crash (some sectors kept by a volatile cache) would break. Call once
 * after create, before any write. */
void buf_cache_set_fua_block(struct buf_cache *c, uint64_t block);
/* Blocks on the device (device size / block size). */
uint64_t buf_cache_nr_blocks(const struct buf_cache *c);

/* getblk: the buffer for `block`, referenced, not necessarily uptodate.
 * NULL only on ENOMEM (everything referenced or dirty and no memory) or a
 * block past the end (then *err, if given, says which: -ENOMEM, -ERANGE).
 * Over the size bound with nothing reclaimable it still allocates (counted
 * in buf_stats.pressure). */
struct buffer_head *buf_get(struct buf_cache *c, uint64_t block, int *err);
/* Is `block` cached and uptodate? A peek: nothing is created, read or
 * referenced (the answer may be stale by the time the caller acts on it;
 * callers use it to choose a path, not for the data). */
bool buf_cached(struct buf_cache *c, uint64_t block);
/* bread: buf_get + read with READ_SYNC if not uptodate, waiting. Returns 0
 * and a referenced uptodate buffer, or a negative errno (-EIO ...).
 * Readahead: a miss at b right after a miss at b-1 reads b and the next
 * readahead_blocks blocks as READ (queued behind the plug so they merge; the
 * wait for b unplugs); reading the first block of that window starts the
 * next window (asynchronous readahead). One sequential stream per cache. */
int buf_read(struct buf_cache *c, uint64_t block, struct buffer_head **out);
/* Start READ of blocks [block, block+n) that are not cached; nobody waits. */
void buf_readahead(struct buf_cache *c, uint64_t block, unsigned n);
void buf_hold(struct buffer_head *bh);  /* extra reference */
void buf_put(struct buffer_head *bh);   /* brelse; NULL is a no-op */
/* bforget: drop the dirty state (the block is freed) and the reference. */
void buf_forget(struct buffer_head *bh);

/* Accessors. */
void *buf_data(struct buffer_head *bh);
uint64_t buf_blocknr(const struct buffer_head *bh);
unsigned buf_size(const struct buffer_head *bh);
struct buf_cache *buf_cache_of(const struct buffer_head *bh);

/* State bits (thread-safe). */
bool buf_uptodate(const struct buffer_head *bh);
void buf_set_uptodate(struct buffer_head *bh);
void buf_clear_uptodate(struct buffer_head *bh);
/* The owner's check of the contents (a metadata checksum) passed since
 * they were read, as the kernel's buffer_verified: later users skip the
 * check. Cleared when the buffer is read again or loses uptodate; a writer
 * that changes a verified buffer keeps it valid (it sets the new
 * checksum). */
bool buf_verified(const struct buffer_head *bh);
void buf_set_verified(struct buffer_head *bh);
bool buf_dirty(const struct buffer_head *bh);
/* mark_buffer_dirty: dirty + on the writeback list (records the time). */
void buf_mark_dirty(struct buffer_head *bh);
/* Returns whether it was dirty. */
bool buf_test_clear_dirty(struct buffer_head *bh);
bool buf_locked(const struct buffer_head *bh);
bool buf_mapped(const struct buffer_head *bh); /* always set for a cache buffer */
bool buf_req(const struct buffer_head *bh);    /* I/O was submitted at least once */
bool buf_write_io_error(const struct buffer_head *bh);
void buf_clear_write_io_error(struct buffer_head *bh);
bool buf_new(const struct buffer_head *bh);
void buf_set_new(struct buffer_head *bh, bool v);
/* Buffer owned by the journal: writeback and buf_fsync_list skip it. */
bool buf_jbd(const struct buffer_head *bh);
void buf_set_jbd(struct buffer_head *bh, bool v);
/* One pointer for the journal (journal_head); NULL by default. */
void *buf_private(const struct buffer_head *bh);
void buf_set_private(struct buffer_head *bh, void *p);

/* Deferred checksums (jbd2's frozen trigger; docs/ext4-csum.md): a
 * metadata block whose checksum covers the whole block (an ext4 directory
 * leaf, an extent tree block) is changed many times per transaction; its
 * owner records, instead of computing the sum at every change, how to
 * compute it (fn with a 32-bit seed, e.g. the inode's checksum seed), and
 * the sum is computed once, when the contents leave memory: the journal's
 * log copy or frozen copy of the buffer, or a write of the buffer.
 * buf_csum_defer: the caller owns the buffer (the journal's write access)
 * and has just changed it; a later defer replaces fn and seed; the buffer
 * counts as verified (buf_verified: its contents are the owner's).
 * buf_csum_settle: if a checksum is pending, run it on the buffer's data
 * (the caller excludes every writer of the buffer: the journal does under
 * its lock, a write under the buffer lock). buf_csum_cancel: the contents
 * get a new meaning (a new block's create access, a freed block). */
typedef void (*buf_csum_fn)(uint32_t seed, void *data, unsigned size);
void buf_csum_defer(struct buffer_head *bh, buf_csum_fn fn, uint32_t seed);
void buf_csum_settle(struct buffer_head *bh);
void buf_csum_cancel(struct buffer_head *bh);
bool buf_csum_pending(const struct buffer_head *bh);

/* The buffer lock. */
void buf_lock(struct buffer_head *bh);
bool buf_trylock(struct buffer_head *bh);
void buf_unlock(struct buffer_head *bh);
/* wait_on_buffer: unplug the queue, then sleep until unlocked. */
void buf_wait(struct buffer_head *bh);

/* submit_bh: bh must be locked (and uptodate for writes). Sends one bio with
 * flags rw (BLK_* from blk.h; BLK_REQ_SWRITE is dropped). The I/O holds its
 * own reference until completion. On completion: reads set uptodate (or
 * clear it on error); a failed write sets write_io_error AND clears uptodate
 * (as Linux's end_buffer_write_sync: the buffer is clean, its contents are
 * no longer trusted, and waiters that test uptodate see -EIO); then the
 * buffer is unlocked and waiters woken. Returns 0 or a negative errno (then
 * unlocked; -EINVAL if bh was not locked). */
int buf_submit(struct buffer_head *bh, unsigned rw);
/* Blocks per bio of buf_write_run (a longer run is cut into bios of at
 * most this many). */
#define BUF_RUN_MAX 128u
/* Write n locked (and uptodate) buffers of one cache holding consecutive blocks
 * (bhs[i] is block buf_blocknr(bhs[0]) + i) as one bio per BUF_RUN_MAX of
 * them, in the order of the array: their data is copied into a run buffer
 * of the cache (a bio carries one contiguous memory range) and the copy is
 * written; the buffers stay locked until the bio completes, each then ends
 * as a buf_submit write (write_io_error and not uptodate on error, unlocked,
 * waiters woken; the bio holds a reference to each meanwhile). The copy is
 * what a merged request of n one-block bios costs in the block layer's
 * bounce buffer anyway, without the n bios. With no memory for a run buffer
 * the buffers go out one bio each (buf_submit). Returns 0, or the first
 * submit error (the buffers of the refused bio end as failed writes, as
 * with buf_submit); -EINVAL for buffers that are not consecutive, not
 * locked or not of one cache (nothing submitted, the buffers untouched). */
int buf_write_run(int n, struct buffer_head **bhs, unsigned rw);
/* ll_rw_block: for each buffer, lock (trylock; wait for the lock with
 * BLK_SWRITE* / always for SWRITE), and if it needs I/O (reads: not uptodate;
 * writes: dirty, cleaned here) submit it. Does not wait. */
void buf_ll_rw_block(unsigned rw, int n, struct buffer_head **bhs);
/* sync_dirty_buffer: lock, if dirty write it with the era's op (WRITE_SYNC,
 * or WRITE when blk_queue_sync_batch_op() is BLK_WRITE, i.e. 2.6.29) and wait;
 * returns -EIO on a write error (buffer not uptodate afterwards), 0 if it
 * was clean. The caller holds a reference. */
int buf_sync_dirty(struct buffer_head *bh);
/* fsync_buffers_list: write the dirty buffers of the array (skipping jbd
 * ones) with SWRITE_SYNC_PLUG (SWRITE_SYNC, i.e. unplugged per buffer, under
 * the old presets), unplugging the previous queue whenever the queue changes
 * along the array, then wait for all of them (dirty or under I/O when
 * called); the first wait unplugs the last queue. -EIO if one of them is not
 * uptodate after its write. NULL entries are skipped. */
int buf_fsync_list(int n, struct buffer_head **bhs);

/* Write every dirty buffer not owned by the journal (WRITE, block order),
 * wait for those and for any I/O in flight, then flush the device cache
 * (a FLUSH bio). Returns -EIO if any write failed since the last
 * buf_cache_sync (including asynchronous writeback), else the flush's
 * result. */
int buf_cache_sync(struct buf_cache *c);
/* buf_cache_sync without the flush (the caller decides: a no-journal
 * fsync flushes only with barriers on). */
int buf_cache_writeout(struct buf_cache *c);
/* Drop every clean unreferenced buffer (e.g. before measuring cold reads). */
void buf_cache_drop_clean(struct buf_cache *c);

/* hits/misses: buf_read found the buffer uptodate / had to read it.
 * reads/writes: bios submitted (readahead included). readahead: blocks read
 * ahead. writeback_writes: written by the writeback thread. reclaimed:
 * buffers reclaimed (reused or freed) from the LRU. pressure: buffers
 * allocated while the cache was at its bound with nothing reclaimable.
 * run_writes/run_blocks: buf_write_run's bios and the blocks they wrote. */
struct buf_stats {
	uint64_t hits, misses, reads, readahead, writes, reclaimed, writeback_writes;
	uint64_t cached, dirty;     /* buffers now */
	uint64_t pressure, read_errors, write_errors;
	uint64_t max_cached;        /* the bound, in buffers */
	uint64_t run_writes, run_blocks; /* buf_write_run: bios (also in writes) and blocks */
};
void buf_cache_stats(struct buf_cache *c, struct buf_stats *out);

#endif
