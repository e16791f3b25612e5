/* data=guarded: i_disksize follows completed data I/O (guarded.h;
 * docs/write-guarded.md). Chris Mason's 2009 RFC for ext3, rebuilt on the
 * page cache's io_done hook. This file holds the mode's table
 * (ext3_data_guarded_ops, core/data_ops.h, at the end) and the hooks it
 * names, which the write path calls through it (block_new, write_begin/end,
 * catch_up, io_done, truncate, fsync, sync, evict, the inode cache's
 * settled/requeue), the logger thread and the mount's state (created by the
 * table's init); the per-inode extents and their hash
 * are in guarded_ext.c (guarded_int.h). The target, from the extents:
 *
 *     i_disksize target = min(i_size, first range's start * block size)
 *
 * Rules, and why (the state diagram is in the doc):
 * - a block allocated at or past i_disksize becomes a pending extent: its
 *   pointer may commit before its data is on disk; the size on disk does
 *   not cover it, and the orphan entry (added in the same handle) makes the
 *   next mount (or e2fsck) free it after a crash;
 * - a block allocated inside i_disksize (a hole fill) is covered by the
 *   size already: ordered mode for that chunk (the inode's jbd_inode is
 *   filed, the commit writes its data first); so is the first size move
 *   past a truncate's unaligned end (the tail it zeroed in the cache may
 *   still hold the old bytes on disk);
 * - a completed run removes the extents it covers, whatever their state (the
 *   page's whole block was written, so the block holds this file's data); a
 *   failed run marks them failed, and the size stays below them for good
 *   (fsync reports -EIO) unless a later run of the page succeeds;
 * - the completion only marks (io_done runs in the page cache's single
 *   worker, which every flush_io_done waiter and page_mapping_destroy waits
 *   for: it must never block on an inode lock or a journal handle); the
 *   size update, the inode write and the orphan deletion go to the logger
 *   thread, or are done by whoever holds in->lock first (the writer at its
 *   next chunk, fsync, truncate, eviction);
 * - truncate waits for the completions of the runs it waited for before
 *   dropping extents past the new size: a late completion would otherwise
 *   meet a new extent at the same page index and mark it done.
 *
 * Locking: g->lock is a leaf (guarded_int.h). i_disksize and gi->orphaned
 * change only under in->lock as writer. The logger takes a reference to the
 * inode, then in->lock, then a handle (the write path's order); it never
 * holds a handle while waiting for a lock. Eviction waits until the logger
 * is not working on the inode and takes it off the queue before the state
 * is freed.
 */
#include "extfs/data/guarded_int.h"
#include "extfs/data/data_modes.h"
#include "extfs/data/file_data.h"

#include "blk/blk.h"
#include "jbd/jbd.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The mount's guarded state: set by this table's init (guarded_init), so
 * NULL on a read-only mount and on a mount of another mode (the test calls
 * below may be made on any mount). */
static struct ext3_guarded *guard_of(const struct ext3_fs *fs)
{
	return ext3_data_mode_state(fs, &ext3_data_guarded_ops);
}

/* ------------------------------------------------------- the logger queue */

/* g->lock held. */
static void queue_add(struct ext3_guarded *g, struct ginode *gi)
{
	if (gi->queued || gi->dying)
		return;
	gi->queued = true;
	gi->qnext = NULL;
	if (g->qtail)
		g->qtail->qnext = gi;
	else
		g->qhead = gi;
	g->qtail = gi;
	pthread_cond_broadcast(&g->cond);
}

/* g->lock held. */
static void queue_del(struct ext3_guarded *g, struct ginode *gi)
{
	if (!gi->queued)
		return;
	struct ginode *prev = NULL, *x = g->qhead;
	while (x && x != gi) {
		prev = x;
		x = x->qnext;
	}
	if (!x)
		return;
	if (prev)
		prev->qnext = gi->qnext;
	else
		g->qhead = gi->qnext;
	if (g->qtail == gi)
		g->qtail = prev;
	gi->queued = false;
}

/* -------------------------------------------------- the size, the orphan */

/* The inode's state, looked up under the leaf lock. Its pointer stays
 * valid while the caller holds in->lock (only eviction frees it, and no
 * one else holds a reference then). */
static struct ginode *gi_of(struct ext3_guarded *g, struct ext3_inode *in, uint64_t *low)
{
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	*low = guarded_ext_low(gi);
	pthread_mutex_unlock(&g->lock);
	return gi;
}

static bool tail_pending(struct ext3_guarded *g, struct ginode *gi)
{
	pthread_mutex_lock(&g->lock);
	bool t = gi && gi->tail_pending;
	pthread_mutex_unlock(&g->lock);
	return t;
}

static uint64_t size_target(const struct ext3_inode *in, uint64_t low)
{
	uint64_t bs = in->fs->g.block_size;
	uint64_t lim = low == UINT64_MAX ? UINT64_MAX : low * bs;
	return in->i_size < lim ? in->i_size : lim;
}

/* Is there logging to do (in->lock held)? */
static bool catch_up_due(struct ext3_guarded *g, struct ext3_inode *in)
{
	uint64_t low;
	struct ginode *gi = gi_of(g, in, &low);
	if (!in->a.links)
		return false;
	return size_target(in, low) > in->i_disksize || (gi && gi->orphaned && low == UINT64_MAX);
}

/* Take in off the orphan list it is on for its extents, in h. */
static int orphan_drop(struct ext3_guarded *g, struct jbd_handle *h, struct ext3_inode *in, struct ginode *gi,
		       bool *changed)
{
	int rc = ext3_orphan_del(h, in);
	if (rc)
		return rc;
	*changed = true;
	pthread_mutex_lock(&g->lock);
	gi->orphaned = false;
	g->st.orphan_dels++;
	pthread_mutex_unlock(&g->lock);
	return 0;
}

/* Move i_disksize up to min(i_size, the first pending or failed extent) and
 * take the inode off the orphan list once no extent is left (in->lock as
 * writer, in h). The first move past a truncate's end inside a block orders
 * the inode's data in h: the tail the truncate zeroed in the cache may not
 * be on disk yet. *changed: the inode needs writing. */
static int guarded_catch_up(struct jbd_handle *h, struct ext3_inode *in, bool *changed)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return 0;
	uint64_t low;
	struct ginode *gi = gi_of(g, in, &low);
	uint64_t target = size_target(in, low);
	int rc = 0;
	if (target > in->i_disksize) {
		/* The old end is a truncate's, inside a block: the bytes after
		 * it on disk may be older than the zeroes the truncate put in
		 * the cache. This commit writes that page first. */
		if (tail_pending(g, gi) && in->mapping) {
			rc = ext3_data_file_ordered(h, in);
			if (rc)
				return rc;
			pthread_mutex_lock(&g->lock);
			gi->tail_pending = false;
			g->st.tail_orders++;
			pthread_mutex_unlock(&g->lock);
		}
		in->i_disksize = target;
		*changed = true;
	}
	/* No extent left (none can appear: we hold in->lock): off the orphan
	 * list, unless unlinked (its eviction frees it from there). */
	if (gi && gi->orphaned && low == UINT64_MAX && in->a.links)
		return orphan_drop(g, h, in, gi, changed);
	return 0;
}

/* A handle of its own for the catch-up (in->lock held as writer). */
static int catch_up_logged(struct ext3_guarded *g, struct ext3_inode *in)
{
	if (!catch_up_due(g, in) || !ext3_fs_writable(in->fs))
		return 0;
	struct jbd_handle *h;
	int rc = ext3_journal_start(in->fs, EXT3_GUARDED_CREDITS + EXT3_CRED_INODE, &h);
	if (rc)
		return rc;
	bool changed = false;
	rc = guarded_catch_up(h, in, &changed);
	if (!rc && changed) {
		rc = ext3_mark_inode_dirty(h, in);
		if (!rc) /* fdatasync must commit it too: it carries the size */
			ext3_inode_note_tid(h, in, true);
	}
	int src = ext3_journal_stop(h);
	return rc ? rc : src;
}

/* ------------------------------------------------------------- writes */

/* The map op allocated the block of page `index` (caller: the writer, with
 * in->lock as writer and the page locked). At or past i_disksize: a new
 * extent; inside: a hole fill, ordered at the chunk's end. 0 or -ENOMEM. */
static int guarded_block_new(struct ext3_inode *in, uint64_t index)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return 0;
	uint64_t bs = in->fs->g.block_size;
	int rc = 0;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_get(g, in);
	if (!gi) {
		rc = err_set(-ENOMEM, "ext3: out of memory for guarded data");
	} else if (index * bs < in->i_disksize) {
		gi->hole_fill = true; /* the size covers it already */
	} else {
		rc = guarded_ext_add(gi, index);
		if (!rc)
			g->st.extents++;
	}
	pthread_mutex_unlock(&g->lock);
	return rc;
}

/* Before a write of [off, off + len): when it ends past i_disksize and
 * writes bytes past i_size inside the partial last block (a block that
 * exists, so no extent covers its new bytes), this write's data is ordered
 * (like a hole fill: the next guarded_write_end files the jbd_inode).
 * Found by nostall crashtest (too_long on append and links). Rewrites of
 * pages wholly below i_size need nothing: their blocks hold this file's
 * older bytes. Caller holds in->lock as writer. 0 or -ENOMEM. */
static int guarded_write_begin(struct ext3_inode *in, uint64_t off, uint64_t len)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g || !len || off + len <= in->i_disksize)
		return 0; /* inside the on-disk size: the size does not move */
	uint64_t bs = in->fs->g.block_size;
	uint64_t mapped_end = (in->i_size + bs - 1) / bs * bs; /* pages below may have blocks */
	if (off >= mapped_end)
		return 0; /* only new blocks: data_map files their extents */
	/* Pages wholly below i_size hold bytes of this file's writes (or
	 * zeros) on disk once their extents are done: a rewrite of them may
	 * show the older bytes after a crash, as any overwrite. Only the
	 * partial last block's bytes past i_size are new bytes in a block
	 * that no extent covers. (Ordering every rewrite below i_size made a
	 * streamer that wraps around its file order its data while i_disksize
	 * lagged, and the next fsync's commit wrote all of it.) */
	if (off + len <= in->i_size || in->i_size % bs == 0)
		return 0;
	int rc = 0;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_get(g, in);
	if (gi)
		gi->hole_fill = true;
	else
		rc = err_set(-ENOMEM, "ext3: out of memory for guarded data");
	pthread_mutex_unlock(&g->lock);
	return rc;
}

/* End of a write chunk, in its handle, after i_size moved (in->lock as
 * writer): the orphan entry for new extents, ordered data for a hole fill,
 * then guarded_catch_up. Extra credits a chunk needs for it:
 * EXT3_GUARDED_CREDITS (the table's write_credits). */
static int guarded_write_end(struct jbd_handle *h, struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	bool pending = gi && gi->n, hole = gi && gi->hole_fill;
	if (gi)
		gi->hole_fill = false;
	if (hole)
		g->st.hole_fills++;
	pthread_mutex_unlock(&g->lock);
	int rc = 0;
	/* Pending extents: on the orphan list in this very transaction, which
	 * also commits their block pointers. An inode on it already (unlinked,
	 * a truncate that failed) stays as it is. */
	if (pending && !gi->orphaned && !in->on_orphan && in->a.links) {
		rc = ext3_orphan_add(h, in);
		if (!rc) {
			pthread_mutex_lock(&g->lock);
			gi->orphaned = true;
			g->st.orphan_adds++;
			pthread_mutex_unlock(&g->lock);
		}
	}
	if (!rc && hole)
		rc = ext3_data_file_ordered(h, in);
	bool changed = false;
	if (!rc)
		rc = guarded_catch_up(h, in, &changed);
	return rc;
}

/* ---------------------------------------------------------- completion */

/* The page cache's io_done for a guarded inode: pages [first, last] were
 * written (err 0: their extents are done) or not (failed). Non-blocking
 * apart from the leaf mutex; queues the inode for the logger. */
static void guarded_io_done(struct ext3_inode *in, uint64_t first, uint64_t last, int err)
{
	struct ext3_fs *fs = in->fs;
	struct ext3_guarded *g = guard_of(fs);
	if (!g)
		return;
	uint64_t done = 0, failed = 0;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	/* The state is found by number: only this inode's own (a completion
	 * never marks another inode's extents, whatever reuses the number). */
	if (gi && gi->in == in && !gi->dying) {
		uint64_t low0 = guarded_ext_low(gi);
		guarded_ext_complete(gi, first, last, err, &done, &failed);
		g->st.done += done;
		g->st.failed += failed;
		if (guarded_ext_low(gi) != low0)
			queue_add(g, gi);
	}
	pthread_mutex_unlock(&g->lock);
	/* data_err=abort: a lost data write stops the journal, as ordered. */
	if (failed && fs->opts.data_err == EXT3_DATA_ERR_ABORT && fs->journal)
		jbd_journal_abort(fs->journal, err);
}

/* The logger: the journal half of the completion work. */
static void *logger_main(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-guarded"); /* top, perf, gdb */
	struct ext3_guarded *g = arg;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		if (!g->qhead) {
			if (g->stop)
				break;
			pthread_cond_wait(&g->cond, &g->lock);
			continue;
		}
		struct ginode *gi = g->qhead;
		queue_del(g, gi);
		gi->busy = true;
		g->logging = gi;
		ext3_guarded_log_hook_fn hook = g->log_hook;
		void *hook_arg = g->log_hook_arg;
		pthread_mutex_unlock(&g->lock);
		/* A reference for the work: gi->in stays in memory while gi is
		 * busy (eviction waits), but without a reference a final iput
		 * meanwhile would see the lock held, take an unlinked inode
		 * for a live one and leave it allocated until the next unmount
		 * or orphan cleanup. NULL: being evicted, which logs the final
		 * state itself (evict_final). */
		struct ext3_inode *in = ext3_igrab_live(gi->in);
		if (in) {
			ext3_inode_wrlock(in);
			/* Errors (a read-only or aborted journal) leave the size
			 * where it is on disk: safe, and reported by fsync. */
			(void)catch_up_logged(g, in);
			if (hook)
				hook(in, hook_arg);
			ext3_inode_unlock(in);
		}
		pthread_mutex_lock(&g->lock);
		gi->busy = false;
		g->st.logs++;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
		/* Maybe the last reference: an unlinked inode is freed here
		 * (its eviction waits for busy, cleared above; gi may be gone
		 * after). g->logging stays set, so ext3_guarded_drain returns
		 * only once that is done. */
		ext3_iput(in);
		pthread_mutex_lock(&g->lock);
		g->logging = NULL;
		pthread_cond_broadcast(&g->cond);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* ----------------------------------------------------------- truncate */

/* Wait for every io_done queued so far (the completions of the runs the
 * caller waited for are among them). Not page_mapping_flush_io_done: that
 * waits until the mapping has no run at all, which a writer streaming into
 * the same file can put off forever; this is bounded, and each io_done is
 * short (marking only). */
static int completions_wait(struct ext3_fs *fs)
{
	return page_cache_flush_io_done(fs->pcache);
}

/* Truncate (in->lock as writer, no handle), in two steps around the page
 * cache's truncate:
 * - begin: when the new size is past i_disksize, write and wait the pages in
 *   between and their completions; -EIO if an extent below the new size is
 *   still not done (failed data: the size would pass it);
 * - end: wait for the completions of the runs the page truncate waited for
 *   (they must meet the old extents, not new ones at the same index), then
 *   drop every extent at or past the new size. */
static int guarded_truncate_begin(struct ext3_inode *in, uint64_t new_size)
{
	struct ext3_guarded *g = guard_of(in->fs);
	struct page_mapping *m = in->mapping;
	if (!g || !m)
		return 0;
	uint64_t bs = in->fs->g.block_size, low;
	if (new_size % bs) { /* for its tail flag (truncate_end) */
		pthread_mutex_lock(&g->lock);
		bool ok = guarded_inode_get(g, in) != NULL;
		pthread_mutex_unlock(&g->lock);
		if (!ok)
			return err_set(-ENOMEM, "ext3: out of memory for guarded data");
	}
	if (new_size <= in->i_disksize)
		return 0;
	struct ginode *gi = gi_of(g, in, &low);
	if (!gi || low == UINT64_MAX || low * bs >= new_size)
		return 0;
	/* The new size lands on disk with the truncate: the data under it
	 * first (the RFC's filemap_write_and_wait_range). */
	(void)page_mapping_sync(m, in->i_disksize / bs, (new_size - 1) / bs, BLK_WRITE);
	int rc = completions_wait(in->fs);
	if (rc)
		return rc;
	pthread_mutex_lock(&g->lock);
	bool left = guarded_ext_low(gi) * bs < new_size && guarded_ext_low(gi) != UINT64_MAX;
	pthread_mutex_unlock(&g->lock);
	if (left)
		return err_set(-EIO, "ext3: inode %u: data below the new size %llu could not be written",
			       in->ino, (unsigned long long)new_size);
	return 0;
}

static void guarded_truncate_end(struct ext3_inode *in, uint64_t new_size)
{
	struct ext3_guarded *g = guard_of(in->fs);
	struct page_mapping *m = in->mapping;
	if (!g || !m)
		return;
	(void)completions_wait(in->fs);
	uint64_t bs = in->fs->g.block_size;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	if (gi) {
		guarded_ext_drop_from(gi, (new_size + bs - 1) / bs);
		/* The truncate takes the inode off the orphan list at its end. */
		if (!gi->n)
			gi->orphaned = false;
		if (new_size % bs)
			gi->tail_pending = true;
	}
	pthread_mutex_unlock(&g->lock);
}

/* ------------------------------------------------- fsync, sync, evict */

/* Nothing of in's data is guarded (in->lock held): no extent pending or
 * failed, no truncated tail, not on the orphan list for guarded, and the
 * size on disk is the size in memory. Its dirty pages are then plain
 * overwrites, which fsync may order into its commit as writeback does. */
static bool guarded_settled(struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return true;
	if (in->i_disksize != in->i_size)
		return false;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	bool settled = !gi || (gi->in == in && !gi->n && !gi->orphaned && !gi->tail_pending && !gi->busy && !gi->queued);
	pthread_mutex_unlock(&g->lock);
	return settled;
}

/* Queue in for the logger again: the inode cache kept it (victim_spare)
 * after the logger, finding it being evicted, had left its size to the
 * eviction. */
static void guarded_requeue(struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	if (gi && gi->in == in)
		queue_add(g, gi); /* also while busy: that pass may have skipped it */
	pthread_mutex_unlock(&g->lock);
}

/* fsync's guarded step, after the file's pages were written and waited (no
 * lock held): wait for their completions, then (in->lock, a handle) bring
 * i_disksize up. -EIO while a failed extent lies below i_size. */
static int guarded_fsync(struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return 0;
	ext3_inode_rdlock(in);
	struct page_mapping *m = in->mapping;
	ext3_inode_unlock(in);
	if (!m)
		return 0;
	int rc = completions_wait(in->fs);
	if (rc)
		return rc;
	ext3_inode_wrlock(in);
	rc = catch_up_logged(g, in);
	uint64_t bs = in->fs->g.block_size;
	pthread_mutex_lock(&g->lock);
	bool failed = guarded_ext_failed_below(guarded_inode_find(g, in->ino), (in->i_size + bs - 1) / bs);
	pthread_mutex_unlock(&g->lock);
	ext3_inode_unlock(in);
	if (!rc && failed)
		rc = err_set(-EIO, "ext3: inode %u: data could not be written (the size on disk stays "
			     "below it)", in->ino);
	return rc;
}

/* Has any extent of in (its own state, not a former inode's of the same
 * number) failed? */
static bool any_failed(struct ext3_guarded *g, struct ext3_inode *in)
{
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	bool failed = gi && gi->in == in && guarded_ext_failed_below(gi, UINT64_MAX);
	pthread_mutex_unlock(&g->lock);
	return failed;
}

/* fsync's way in one commit (fsync_data_in_commit in file_data.c; in->lock
 * held as writer, h a handle the caller makes synchronous): the file's
 * pages become strict ordered data of h's transaction (jbd_inode_file_strict)
 * and i_disksize moves to i_size in that same handle, off the orphan list.
 * The commit writes the pages and waits for them, and for every write of
 * the file already under way, before its commit block; a failure there
 * aborts the journal whatever data_err says (guarded_data_check), so
 * the size never commits over data that is not on disk. Pending extents
 * stay and complete as their runs do. One device round trip less than
 * writing and waiting first (guarded_fsync). Returns 1 when done that
 * way, 0 when the caller must take the plain way (a failed extent, which
 * that way reports), or a negative errno. */
static int guarded_fsync_in_commit(struct jbd_handle *h, struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return 0;
	if (any_failed(g, in))
		return 0; /* the plain way reports it */
	int rc = ext3_data_order_strict(h, in);
	if (rc)
		return rc;
	bool changed = false;
	if (in->i_size > in->i_disksize) {
		in->i_disksize = in->i_size;
		changed = true;
	}
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	if (gi && gi->in != in)
		gi = NULL; /* another life of the number: not ours */
	bool orphaned = gi && gi->orphaned;
	if (gi)
		gi->tail_pending = false; /* the commit writes the zeroed tail too */
	g->st.fsync_in_commit++;
	pthread_mutex_unlock(&g->lock);
	/* Off the orphan list in the same transaction: a crash before its
	 * commit finds the old size and the old entry (the next mount cuts the
	 * file back); after it, the data is there. Extents still pending stay
	 * in gi and complete as their runs do; a new one puts the inode back
	 * on the list (write_end). */
	if (orphaned && in->a.links && (rc = orphan_drop(g, h, in, gi, &changed)))
		return rc;
	if (changed) {
		rc = ext3_mark_inode_dirty(h, in);
		if (!rc)
			ext3_inode_note_tid(h, in, true);
	}
	return rc ? rc : 1;
}

/* The commit's wait op for in's ordered data (commit thread, no lock
 * held), after its runs ended: their completions are marked; -EIO if any
 * extent of in failed (data under a size a strict filing may have logged). */
static int guarded_data_check(struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return 0;
	/* An extent fails only in io_done of a failed run, and the caller has
	 * waited for the file's pages to leave writeback, which counts their
	 * runs' failures first: while no run of this cache has ever failed,
	 * no extent can be failed nor about to be, and waiting for the worker
	 * to mark the completed ones (a wake-up of another thread: ~20 us of
	 * every guarded fsync) would find nothing. */
	if (!page_cache_write_errors(in->fs->pcache))
		return 0;
	int rc = completions_wait(in->fs);
	if (rc)
		return rc;
	return any_failed(g, in) ? err_set(-EIO, "ext3: inode %u: guarded data could not be written", in->ino) : 0;
}

int ext3_guarded_drain(struct ext3_fs *fs)
{
	struct ext3_guarded *g = guard_of(fs);
	if (!g)
		return 0;
	int rc = completions_wait(fs);
	pthread_mutex_lock(&g->lock);
	while (g->qhead || g->logging)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	return rc;
}

/* The final state of a live inode leaving memory (in->lock held). */
static void evict_final(struct ext3_guarded *g, struct ext3_inode *in, struct ginode *gi)
{
	if (ext3_fs_writable(in->fs)) {
		pthread_mutex_lock(&g->lock);
		bool stuck = gi->n != 0;
		pthread_mutex_unlock(&g->lock);
		/* Failed data: the file ends where its size on disk does, as
		 * after a crash (the truncate also leaves the orphan list). */
		if (stuck)
			(void)ext3_truncate(in, in->i_disksize);
		else
			(void)catch_up_logged(g, in);
	}
	if (gi->orphaned && in->on_orphan) {
		/* Could not write: the on-disk list keeps it for the next mount
		 * (nothing more reaches the disk), memory must forget it. */
		ext3_orphan_forget(in);
		pthread_mutex_lock(&g->lock);
		gi->orphaned = false;
		pthread_mutex_unlock(&g->lock);
	}
}

/* Before an inode's mapping goes (ext3_data_evict; pages already written,
 * no lock held): wait for its completions and the logger, log the final
 * size (a live inode whose extents cannot complete - failed data - is
 * truncated to i_disksize, as the next mount would) and forget its state. */
static void guarded_evict(struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return;
	if (in->mapping)
		(void)completions_wait(in->fs);
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	if (!gi || gi->in != in) {
		pthread_mutex_unlock(&g->lock);
		return;
	}
	while (gi->busy)
		pthread_cond_wait(&g->cond, &g->lock);
	queue_del(g, gi);
	gi->dying = true; /* never queued again: the logger must not meet it */
	pthread_mutex_unlock(&g->lock);
	ext3_inode_wrlock(in);
	if (in->a.links && in->a.mode)
		evict_final(g, in, gi);
	ext3_inode_unlock(in);
	pthread_mutex_lock(&g->lock);
	guarded_inode_unhash(g, gi);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	free(gi->ext);
	free(gi);
}

/* ---------------------------------------------------------- the mount */

/* The mount's state and its logger thread (ext3_data_init, when guarded).
 * Destroy after every inode has been evicted (ext3_data_shutdown). */
static int guarded_create(struct ext3_fs *fs, struct ext3_guarded **out)
{
	struct ext3_guarded *g = calloc(1, sizeof *g);
	if (!g)
		return err_set(-ENOMEM, "ext3: out of memory for data=guarded");
	g->fs = fs;
	g->nbuckets = GUARD_BUCKETS;
	g->hash = calloc(g->nbuckets, sizeof *g->hash);
	if (!g->hash) {
		free(g);
		return err_set(-ENOMEM, "ext3: out of memory for data=guarded");
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	int rc = pthread_create(&g->logger, NULL, logger_main, g);
	if (rc) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		free(g->hash);
		free(g);
		return err_set(-rc, "ext3: cannot start the data=guarded logger");
	}
	g->running = true;
	*out = g;
	return 0;
}

static void guarded_destroy(struct ext3_guarded *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (g->running)
		pthread_join(g->logger, NULL);
	/* Every inode was evicted; anything left is a leak to free. */
	for (size_t b = 0; b < g->nbuckets; b++) {
		while (g->hash[b]) {
			struct ginode *gi = g->hash[b];
			g->hash[b] = gi->hnext;
			free(gi->ext);
			free(gi);
		}
	}
	free(g->hash);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* ---------------------------------------------------------- the table */

static int guarded_init(struct ext3_fs *fs)
{
	struct ext3_guarded *g = NULL;
	int rc = guarded_create(fs, &g);
	if (!rc)
		ext3_data_set_mode_state(fs, &ext3_data_guarded_ops, g);
	return rc;
}

static void guarded_shutdown(struct ext3_fs *fs)
{
	guarded_destroy(guard_of(fs));
	ext3_data_set_mode_state(fs, &ext3_data_guarded_ops, NULL);
}

/* fsync's data inside the commit it forces (file_data.c,
 * ext3_data_fsync_filed; in->lock as writer, h a handle): in whatever
 * transaction runs, as the size is logged there. Unsettled data: its size
 * moves in this handle, the data strict ordered before the commit block
 * (guarded_fsync_in_commit). Settled: only data whose size is on disk
 * already (rewrites, appends inside allocated blocks), filed as ordered
 * data. */
static int guarded_fsync_file(struct jbd_handle *h, struct ext3_inode *in, uint32_t tid)
{
	(void)tid; /* an earlier transaction commits first anyway */
	if (!guarded_settled(in))
		return guarded_fsync_in_commit(h, in);
	int rc = ext3_data_file_ordered(h, in);
	return rc ? rc : 1;
}

static int guarded_fsync_commit(struct ext3_inode *in, uint32_t tid)
{
	return ext3_data_fsync_filed(in, tid, EXT3_GUARDED_CREDITS + EXT3_CRED_INODE, guarded_fsync_file);
}

/* data=guarded's table (core/data_ops.h): i_disksize moves at I/O
 * completion; no write_order (the jbd_inode is filed by write_end for hole
 * fills and by catch_up for a truncated tail only). */
const struct ext3_data_ops ext3_data_guarded_ops = {
	.name = "guarded",
	.disksize_at_io = true,
	.replace_flush = true,
	.write_credits = EXT3_GUARDED_CREDITS,
	.init = guarded_init,
	.shutdown = guarded_shutdown,
	.sync = ext3_guarded_drain,
	.write_begin = guarded_write_begin,
	.write_end = guarded_write_end,
	.catch_up = guarded_catch_up,
	.block_new = guarded_block_new,
	.io_done = guarded_io_done,
	.data_check = guarded_data_check,
	.fsync_in_commit = guarded_fsync_commit,
	.fsync_wait = guarded_fsync,
	.truncate_begin = guarded_truncate_begin,
	.truncate_end = guarded_truncate_end,
	.settled = guarded_settled,
	.requeue = guarded_requeue,
	.evict = guarded_evict,
};

/* ------------------------------------------------------------- tests */

void ext3_guarded_stats(struct ext3_fs *fs, struct ext3_guarded_stats *out)
{
	memset(out, 0, sizeof *out);
	struct ext3_guarded *g = guard_of(fs);
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	*out = g->st;
	for (size_t b = 0; b < g->nbuckets; b++)
		for (struct ginode *gi = g->hash[b]; gi; gi = gi->hnext)
			out->pending += gi->n;
	pthread_mutex_unlock(&g->lock);
}

void ext3_guarded_set_log_hook(struct ext3_fs *fs, ext3_guarded_log_hook_fn fn, void *arg)
{
	struct ext3_guarded *g = guard_of(fs);
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->log_hook = fn;
	g->log_hook_arg = arg;
	pthread_mutex_unlock(&g->lock);
}

size_t ext3_guarded_inode_extents(struct ext3_inode *in)
{
	struct ext3_guarded *g = guard_of(in->fs);
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	struct ginode *gi = guarded_inode_find(g, in->ino);
	size_t n = gi ? gi->n : 0;
	pthread_mutex_unlock(&g->lock);
	return n;
}
