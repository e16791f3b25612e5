/* File data on a writable mount: the mount's page cache, one page mapping
 * per regular file, ordered data (jbd_inode ops), fsync, sync(2) and the
 * free counts (ext3_fsops.h "file data", write.h "file data";
 * docs/write-data.md). The calls that move bytes are in file_write.c.
 *
 * - The page cache (src/page) holds the data of regular files in every data
 *   mode but data=journal, whose data blocks are journaled buffers of the
 *   buffer cache instead. Its budget is the mount's cache= (the same number
 *   as the buffer cache's; page cache default 64 MiB when not given).
 * - A mapping is created on an inode's first write (or first read after a
 *   write) under in->lock as writer; its map op maps a page to a block with
 *   ext3_get_blocks, allocating in the calling thread's journal handle
 *   (jbd_handle_current: the writer started it before page_mapping_write
 *   took any page lock, page.h's rule). The mapping lives until the inode
 *   leaves the inode cache (ext3_data_evict) or the unmount
 *   (ext3_data_shutdown); a registry of the inode numbers that have one
 *   serves sync(2) and the unmount.
 * - data=ordered: every handle that dirties an inode's pages files its
 *   jbd_inode; the commit's submit op writes ALL the inode's dirty pages
 *   (WB_SYNC_ALL) with the commit's op (jbd_commit_data_op: the era's sync
 *   batch op for a sync commit, WRITE otherwise) and the wait op waits for
 *   them, before the commit block: 2.6.30's ordered mode, the fsync stall.
 * - data=guarded (guarded.c): the map op turns allocations past i_disksize
 *   into extents, the mapping's io_done completes them; the jbd_inode is
 *   filed only for hole fills and partial-block tails. fsync waits for this
 *   file's completions and logs its size, sync(2) for every file's, and an
 *   evicted inode's final size is logged before its mapping goes.
 * - What differs between the modes is reached through the inode's data-mode
 *   table (ext3_dops, core/data_ops.h): this file never asks which mode is
 *   in force; the tables are defined beside their modes' code.
 *
 * Locking: in->mapping / in->jinode are set under in->lock as writer and
 * stay until eviction (no inode reference left) or unmount, so a holder of
 * in->lock (either mode) or of a reference taken after the mapping was
 * created may use them. d->lock protects the registry only (a leaf). The
 * written bitmap is atomic. The commit thread's ops take no inode lock and
 * start no handle.
 */
#include "util/stalltrace.h"
#include "extfs/data/file_data.h"
#include "extfs/inode/inode_write.h"

#include "blk/blk.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DATA_DEFAULT_BUDGET (64u << 20)

struct ext3_data {
	pthread_mutex_t lock;       /* the registry */
	uint32_t *inos;             /* inodes with a page mapping */
	size_t n, cap;
	_Atomic uint64_t *written;  /* bit per inode: data changed this mount */
	size_t words;
	/* The data mode's own state (data=guarded's; ext3_data_set_mode_state)
	 * and the table that set it. Set at mount, read-only until unmount. */
	void *mode_state;
	const struct ext3_data_ops *mode_state_ops;
};

bool ext3_data_paged(const struct ext3_inode *in)
{
	return !ext3_dops(in)->journal_data;
}

void ext3_data_set_mode_state(struct ext3_fs *fs, const struct ext3_data_ops *ops, void *state)
{
	fs->data->mode_state = state;
	fs->data->mode_state_ops = state ? ops : NULL;
}

void *ext3_data_mode_state(const struct ext3_fs *fs, const struct ext3_data_ops *ops)
{
	struct ext3_data *d = fs->data;
	return d && d->mode_state_ops == ops ? d->mode_state : NULL;
}

uint64_t ext3_data_max_size(const struct ext3_fs *fs)
{
	return ext3_max_blocks(fs) * fs->g.block_size;
}

/* ---------------------------------------------------------------- init */

int ext3_data_init(struct ext3_fs *fs)
{
	struct ext3_data *d = calloc(1, sizeof *d);
	if (!d)
		return err_set(-ENOMEM, "ext3: out of memory for the file data state");
	d->words = fs->g.inodes_count / 64 + 1;
	d->written = calloc(d->words, sizeof *d->written);
	if (!d->written) {
		free(d);
		return err_set(-ENOMEM, "ext3: out of memory for the file data state");
	}
	pthread_mutex_init(&d->lock, NULL);
	struct page_params pp = fs->opts.page;
	pp.cache_bytes = fs->opts.cache_bytes ? fs->opts.cache_bytes : DATA_DEFAULT_BUDGET;
	/* dirty_writeback_centisecs=0 stops the periodic passes only (as the
	 * sysctl does): a cache created with 0 would have no flusher thread
	 * for the background limit's kicks either, so it gets the period
	 * after creation. */
	bool no_periodic = pp.writeback_interval_ms == 0;
	if (no_periodic)
		pp.writeback_interval_ms = 5000;
	int rc = page_cache_create(fs->q, fs->g.block_size, &pp, &fs->pcache);
	if (!rc && no_periodic)
		rc = page_cache_set(fs->pcache, "writeback_interval_ms", "0");
	if (!rc && fs->dops->init) {
		fs->data = d; /* the mode's init may keep its state there */
		rc = fs->dops->init(fs);
		fs->data = NULL;
	}
	if (rc && fs->pcache) {
		page_cache_destroy(fs->pcache);
		fs->pcache = NULL;
	}
	if (rc) {
		pthread_mutex_destroy(&d->lock);
		free(d->written);
		free(d);
		return err_wrap(rc, "ext3: the page cache");
	}
	fs->data = d;
	return 0;
}

static void registry_add(struct ext3_data *d, uint32_t ino, int *rc)
{
	pthread_mutex_lock(&d->lock);
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		uint32_t *v = realloc(d->inos, cap * sizeof *v);
		if (!v) {
			pthread_mutex_unlock(&d->lock);
			*rc = err_set(-ENOMEM, "ext3: out of memory");
			return;
		}
		d->inos = v;
		d->cap = cap;
	}
	d->inos[d->n++] = ino;
	pthread_mutex_unlock(&d->lock);
}

static void registry_del(struct ext3_data *d, uint32_t ino)
{
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->n; i++) {
		if (d->inos[i] == ino) {
			d->inos[i] = d->inos[--d->n];
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
}

/* A copy of the registry (the inodes may come and go meanwhile). */
static uint32_t *registry_snapshot(struct ext3_data *d, size_t *n)
{
	pthread_mutex_lock(&d->lock);
	*n = d->n;
	uint32_t *v = malloc((d->n ? d->n : 1) * sizeof *v);
	if (v && d->n)
		memcpy(v, d->inos, d->n * sizeof *v);
	pthread_mutex_unlock(&d->lock);
	return v;
}

void ext3_data_shutdown(struct ext3_fs *fs)
{
	struct ext3_data *d = fs->data;
	if (!d)
		return;
	/* Every mapping goes first (written back, jbd_inode released) so the
	 * journal's last commit has no inode left to call. */
	size_t n;
	uint32_t *v = registry_snapshot(d, &n);
	for (size_t i = 0; v && i < n; i++) {
		struct ext3_inode *in;
		if (ext3_iget(fs, v[i], &in) == 0) {
			ext3_data_evict(in);
			ext3_iput(in);
		}
	}
	free(v);
	if (fs->dops->shutdown)
		fs->dops->shutdown(fs); /* after the last eviction */
	d->mode_state = NULL;
	d->mode_state_ops = NULL;
	page_cache_destroy(fs->pcache);
	fs->pcache = NULL;
	pthread_mutex_destroy(&d->lock);
	free(d->inos);
	free(d->written);
	free(d);
	fs->data = NULL;
}

void ext3_data_mark_written(struct ext3_inode *in)
{
	struct ext3_data *d = in->fs->data;
	if (d && in->ino / 64 < d->words)
		atomic_fetch_or(&d->written[in->ino / 64], 1ull << (in->ino % 64));
}

bool ext3_data_written(const struct ext3_inode *in)
{
	struct ext3_data *d = in->fs->data;
	if (!d || in->ino / 64 >= d->words)
		return true;
	return atomic_load(&d->written[in->ino / 64]) >> (in->ino % 64) & 1;
}

/* ------------------------------------------------------------ mappings */

/* map op: page `index` of the file. Runs in the thread of the page_* call,
 * which holds in->lock (as writer when create: the writer, with its
 * journal handle current). */
static int data_map(void *ctx, uint64_t index, bool create, uint64_t *phys, bool *is_new)
{
	struct ext3_inode *in = ctx;
	*is_new = false;
	if (!create) {
		uint64_t p;
		int rc = ext3_inode_bmap_locked(in->fs, in, index, &p);
		if (rc)
			return rc;
		*phys = p ? p : PAGE_NO_BLOCK;
		return 0;
	}
	struct jbd_handle *h = ext3_handle_current();
	if (!h)
		return err_set(-EINVAL, "ext3: inode %u: allocating a data block without a journal "
			       "handle", in->ino);
	uint32_t count = 0;
	int rc = ext3_get_blocks(h, in, index, 1, true, phys, &count, is_new);
	if (!rc && (count == 0 || *phys == 0))
		rc = err_set(-EIO, "ext3: inode %u: block %llu not mapped after allocation", in->ino,
			     (unsigned long long)index);
	const struct ext3_data_ops *ops = ext3_dops(in);
	if (!rc && *is_new && ops->block_new)
		rc = ops->block_new(in, index);
	return rc;
}

/* io_done op (tables with one: data=guarded): the page cache's worker, no
 * lock held. */
static void data_io_done(void *ctx, uint64_t first, uint64_t last, int err)
{
	struct ext3_inode *in = ctx;
	ext3_dops(in)->io_done(in, first, last, err);
}

/* Whole-page writes allocate a batch in one call (page.h map_range): one
 * ext3_get_blocks for up to `max` blocks instead of one per page, which was
 * most of a streaming writer's CPU (docs/bench-fs.md). Same handle and lock
 * rules as data_map. */
static int data_map_range(void *ctx, uint64_t index, uint32_t max, uint64_t *phys, uint32_t *count)
{
	struct ext3_inode *in = ctx;
	struct jbd_handle *h = ext3_handle_current();
	if (!h)
		return err_set(-EINVAL, "ext3: inode %u: allocating data blocks without a journal "
			       "handle", in->ino);
	bool is_new = false;
	*count = 0;
	int rc = ext3_get_blocks(h, in, index, max, true, phys, count, &is_new);
	if (!rc && (*count == 0 || *phys == 0))
		rc = err_set(-EIO, "ext3: inode %u: block %llu not mapped after allocation", in->ino,
			     (unsigned long long)index);
	const struct ext3_data_ops *ops = ext3_dops(in);
	for (uint32_t i = 0; !rc && is_new && ops->block_new && i < *count; i++)
		rc = ops->block_new(in, index + i);
	return rc;
}

static const struct page_mapping_ops data_ops = {.map = data_map, .map_range = data_map_range};
static const struct page_mapping_ops data_ops_io_done = {.map = data_map, .io_done = data_io_done,
							 .map_range = data_map_range};

int ext3_data_mapping(struct ext3_inode *in, struct page_mapping **out)
{
	if (!in->mapping) {
		struct ext3_fs *fs = in->fs;
		if (!fs->pcache)
			return err_set(-EROFS, "ext3: no page cache (read-only mount)");
		struct page_mapping *m;
		int rc = page_mapping_create(fs->pcache, ext3_dops(in)->io_done ? &data_ops_io_done : &data_ops,
					     in, &m);
		if (rc)
			return err_wrap(rc, "ext3: inode %u: page mapping", in->ino);
		registry_add(fs->data, in->ino, &rc);
		if (rc) {
			page_mapping_destroy(m);
			return rc;
		}
		in->mapping = m;
	}
	*out = in->mapping;
	return 0;
}

/* ---------------------------------------------------------- ordered data */

static int ordered_submit(void *ctx, uint32_t tid)
{
	struct ext3_inode *in = ctx;
	unsigned op = jbd_commit_data_op(in->fs->journal, tid);
	return page_mapping_writeback(in->mapping, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_ALL, op);
}

/* The era presets wait only for the pages dirty when the commit's submit
 * began (fs/jbd's per-transaction lists, jbd.h cfg.ordered_txn): the
 * flusher's writeback of pages dirtied after it is the next commit's. */
static int ordered_wait(void *ctx, uint32_t tid)
{
	struct ext3_inode *in = ctx;
	uint64_t by = jbd_commit_data_dirtied_by(in->fs->journal, tid);
	int rc = page_mapping_wait_dirtied(in->mapping, 0, PAGE_INDEX_MAX, by);
	/* Guarded: the mapping's error goes to its first waiter, which may
	 * not be this commit; the extents keep every failure. */
	const struct ext3_data_ops *ops = ext3_dops(in);
	if (!rc && ops->data_check)
		rc = ops->data_check(in);
	return rc;
}

static const struct jbd_inode_ops ordered_ops = {.submit = ordered_submit, .wait = ordered_wait};

/* File in's pages as ordered data of h's transaction (in->lock held);
 * strict: jbd_inode_file_strict. */
static int data_file_ordered_as(struct jbd_handle *h, struct ext3_inode *in, bool strict)
{
	if (!in->jinode) {
		int rc = jbd_inode_create(in->fs->journal, &ordered_ops, in, &in->jinode);
		if (rc)
			return err_wrap(rc, "ext3: inode %u: ordered data", in->ino);
	}
	int rc = strict ? jbd_inode_file_strict(h, in->jinode) : jbd_inode_file(h, in->jinode);
	return rc ? err_wrap(rc, "ext3: inode %u: ordering its data", in->ino) : 0;
}

int ext3_data_file_ordered(struct jbd_handle *h, struct ext3_inode *in)
{
	return in->mapping ? data_file_ordered_as(h, in, false) : 0;
}

int ext3_data_order_strict(struct jbd_handle *h, struct ext3_inode *in)
{
	return in->mapping ? data_file_ordered_as(h, in, true) : 0;
}

void ext3_inode_note_tid(struct jbd_handle *h, struct ext3_inode *in, bool datasync)
{
	uint32_t tid = ext3_handle_tid(h);
	in->sync_tid = tid;
	in->has_sync_tid = true;
	if (datasync) {
		in->datasync_tid = tid;
		in->has_datasync_tid = true;
	}
}

void ext3_data_evict(struct ext3_inode *in)
{
	struct page_mapping *m = in->mapping;
	if (m && in->a.links) {
		/* The data must reach its blocks before the inode is forgotten
		 * (and, ordered, before its jbd_inode leaves the commit). */
		(void)page_mapping_sync(m, 0, PAGE_INDEX_MAX, BLK_WRITE);
	}
	/* data=guarded: the size that data reached, logged before the state
	 * goes (pages written above; the mapping still exists). */
	const struct ext3_data_ops *ops = ext3_dops(in);
	if (ops->evict)
		ops->evict(in);
	if (in->jinode) {
		(void)jbd_inode_release(in->jinode);
		in->jinode = NULL;
	}
	if (m) {
		in->mapping = NULL;
		page_mapping_destroy(m);
		registry_del(in->fs->data, in->ino);
	}
}

int ext3_data_flush_start(struct ext3_inode *in)
{
	if (!in->mapping)
		return 0;
	return page_mapping_writeback(in->mapping, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_NONE, BLK_WRITE);
}

/* --------------------------------------------------------- fsync, sync */

/* A cache flush on its own, when barriers are on. fsync needs one when it
 * waits for no new commit: the data it just wrote (writeback, or ordered
 * data of a transaction that had already committed) is in the device's
 * write cache, and only a commit block's flush would have covered it. Linux
 * 2.6.30 lacked this (2.6.32 added blkdev_issue_flush to ext3_sync_file);
 * `nostall crashtest` found the lost fsyncs it causes. */
static int data_cache_flush(struct ext3_fs *fs)
{
	if (!fs->opts.jcfg.barrier)
		return 0;
	struct bio flush = { .sector = 0, .size = 0, .data = NULL, .rw = BLK_WRITE_SYNC | BLK_REQ_FLUSH };
	int rc = blk_submit_bio_wait(fs->q, &flush);
	return rc < 0 ? err_wrap(rc, "ext3: flushing the device cache") : 0;
}

int ext3_data_commit(struct ext3_fs *fs, bool have, uint32_t tid)
{
	struct jbd_journal *j = fs->journal;
	if (!j)
		return 0;
	if (!have || jbd_journal_running_tid(j) == tid) {
		/* Still running (or unknown): a sync handle commits it and waits,
		 * with the era's sync ops (2.6.30's ext3_force_commit). */
		struct jbd_handle *h;
		int rc = ext3_journal_start(fs, 1, &h);
		if (rc)
			return rc;
		jbd_handle_set_sync(h, true);
		uint32_t htid = jbd_handle_tid(h);
		rc = ext3_journal_stop(h);
		if (rc || !have || htid == tid)
			return rc;
	}
	/* Committing or committed: wait (at once if it is done). Its commit
	 * block may have been flushed before this caller's data reached the
	 * device cache: flush once more. */
	int rc = jbd_log_wait_commit(j, tid);
	return rc ? rc : data_cache_flush(fs);
}

/* fsync's data inside the commit it forces (the tables' fsync_in_commit:
 * ordered, writeback, guarded): the inode's pages are filed as ordered data
 * of the running transaction (ordered, writeback: only while it is `tid`,
 * the one this inode last changed; guarded: any running one, as it logs
 * the size there), in a sync handle. The commit then writes them beside its
 * log blocks and waits for them before the commit block, whose flush
 * covers them: one write round trip less than writing and waiting first.
 * The way is not taken (0: the caller writes and waits) when the mount
 * says so (fsync_in_commit off, as 2.6.30) or the crash checker's broken
 * build skips filed data; the tables refuse it when the transaction moved
 * on, or (writeback) when a data error would abort the journal where the
 * mode must not: data_err=abort. Lock order as the write path: in->lock,
 * then the handle; the commit is waited for without in->lock (its data
 * submit maps blocks under it). in has a page mapping. */
static int fsync_data_in_commit(struct ext3_inode *in, uint32_t tid)
{
	const struct ext3_data_ops *ops = ext3_dops(in);
	if (!ops->fsync_in_commit || !in->fs->opts.fsync_in_commit || jbd_debug_skip_ordered())
		return 0;
	return ops->fsync_in_commit(in, tid);
}

int ext3_data_fsync_filed(struct ext3_inode *in, uint32_t tid, int credits,
			  int (*file)(struct jbd_handle *h, struct ext3_inode *in, uint32_t tid))
{
	struct ext3_fs *fs = in->fs;
	ext3_inode_wrlock(in);
	struct jbd_handle *h = NULL;
	int rc = ext3_journal_start(fs, credits, &h);
	stalltrace_mark("fsync: filed handle started", h ? jbd_handle_tid(h) : 0);
	if (!h) {
		ext3_inode_unlock(in);
		return rc;
	}
	rc = file(h, in, tid);
	stalltrace_mark("fsync: data filed rc", (uint64_t)(int64_t)rc);
	int filed = rc == 1;
	if (rc == 1)
		rc = 0;
	if (filed)
		jbd_handle_set_sync(h, true);
	ext3_inode_unlock(in);
	int src = ext3_journal_stop(h);
	return rc ? rc : src ? src : filed;
}

/* Only data whose size is on disk already: filed while tid still runs. */
static int file_same_tid(struct jbd_handle *h, struct ext3_inode *in, uint32_t tid)
{
	if (jbd_handle_tid(h) != tid)
		return 0;
	int rc = ext3_data_file_ordered(h, in);
	return rc ? rc : 1;
}

int ext3_data_fsync_same_tid(struct ext3_inode *in, uint32_t tid)
{
	if (jbd_journal_running_tid(in->fs->journal) != tid)
		return 0;
	return ext3_data_fsync_filed(in, tid, 1, file_same_tid);
}

/* fsync without a journal (the kernel's ext4_fsync_nojournal): the file's
 * data written and waited for, then the metadata - every dirty buffer of
 * the mount, a superset of the inode's own buffers and its table block
 * that generic_buffers_fsync writes, and of the directory entries of a new
 * file (ext4_sync_parent) - and a cache flush with barriers on. Bitmaps
 * and counters go with them here; the kernel leaves them to e2fsck. */
static int nj_fsync(struct ext3_inode *in)
{
	struct ext3_fs *fs = in->fs;
	ext3_inode_rdlock(in);
	struct page_mapping *m = in->mapping;
	ext3_inode_unlock(in);
	int rc = 0;
	if (m && ext3_data_paged(in))
		rc = page_mapping_sync(m, 0, PAGE_INDEX_MAX, blk_queue_sync_batch_op(fs->q));
	int mrc = ext3_fs_sync_metadata(fs);
	return rc ? rc : mrc;
}

int ext3_file_fsync(struct ext3_inode *in, bool datasync)
{
	struct ext3_fs *fs = in->fs;
	if (fs->nojournal)
		return fs->writable ? nj_fsync(in) : 0;
	if (!fs->journal)
		return 0;
	ext3_inode_rdlock(in);
	bool dir = (in->a.mode & EXT3_S_IFMT) == EXT3_S_IFDIR;
	struct page_mapping *m = in->mapping;
	bool have = datasync ? in->has_datasync_tid : in->has_sync_tid;
	uint32_t tid = datasync ? in->datasync_tid : in->sync_tid;
	ext3_inode_unlock(in);
	int rc = 0;
	const struct ext3_data_ops *ops = ext3_dops(in);
	stalltrace_mark("fsync: begin (tid)", tid);
	if (m && have && !dir && ext3_data_paged(in)) {
		rc = fsync_data_in_commit(in, tid);
		stalltrace_mark("fsync: data in commit rc", (uint64_t)(int64_t)rc);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			rc = 0;
			goto done;
		}
	}
	if (m && ext3_data_paged(in))
		rc = page_mapping_sync(m, 0, PAGE_INDEX_MAX, blk_queue_sync_batch_op(fs->q));
	stalltrace_mark("fsync: pages synced", 0);
	if (m && ops->fsync_wait) {
		/* Guarded: this file's completions only, then its size in a
		 * handle: the commit below then covers it, and writes nobody's
		 * data. */
		int grc = ops->fsync_wait(in);
		if (!rc)
			rc = grc;
		ext3_inode_rdlock(in);
		have = datasync ? in->has_datasync_tid : in->has_sync_tid;
		tid = datasync ? in->datasync_tid : in->sync_tid;
		ext3_inode_unlock(in);
	}
	/* Directories: their changes are not tracked per inode; commit. */
	int crc = ext3_data_commit(fs, dir ? false : have, tid);
	if (!rc)
		rc = crc;
done:
	stalltrace_mark("fsync: end", 0);
	if (in->jinode) {
		int e = jbd_inode_error(in->jinode);
		if (!rc && e)
			rc = err_set(e, "ext3: inode %u: ordered data write failed", in->ino);
	}
	return rc;
}

int ext3_fs_sync(struct ext3_fs *fs)
{
	if (!fs->journal && !(fs->nojournal && fs->writable))
		return 0;
	int rc = 0;
	size_t n = 0;
	uint32_t *v = fs->data ? registry_snapshot(fs->data, &n) : NULL;
	struct ext3_inode **ins = calloc(n ? n : 1, sizeof *ins);
	if (!ins)
		rc = err_set(-ENOMEM, "ext3: out of memory");
	/* Start everything, then wait: the writes of all files queue together. */
	for (size_t i = 0; ins && i < n; i++) {
		if (ext3_iget(fs, v[i], &ins[i]) < 0) {
			ins[i] = NULL;
			continue;
		}
		ext3_inode_rdlock(ins[i]);
		struct page_mapping *m = ins[i]->mapping;
		ext3_inode_unlock(ins[i]);
		int e = m ? page_mapping_writeback(m, 0, PAGE_INDEX_MAX, PAGE_WB_SYNC_ALL, BLK_WRITE) : 0;
		if (!rc)
			rc = e;
	}
	for (size_t i = 0; ins && i < n; i++) {
		if (!ins[i])
			continue;
		ext3_inode_rdlock(ins[i]);
		struct page_mapping *m = ins[i]->mapping;
		ext3_inode_unlock(ins[i]);
		int e = m ? page_mapping_wait(m, 0, PAGE_INDEX_MAX) : 0;
		if (!rc)
			rc = e;
		ext3_iput(ins[i]);
	}
	free(ins);
	free(v);
	/* data=guarded: every size the written data allows, logged first. */
	int grc = fs->dops->sync ? fs->dops->sync(fs) : 0;
	if (!rc)
		rc = grc;
	if (fs->nojournal) {
		/* No commit: the metadata itself, then the flush. */
		int mrc = ext3_fs_sync_metadata(fs);
		return rc ? rc : mrc;
	}
	int crc = jbd_journal_force_commit(fs->journal);
	/* With nothing to commit no commit block flushed the data written above. */
	int frc = crc ? 0 : data_cache_flush(fs);
	return rc ? rc : crc ? crc : frc;
}

void ext3_fs_free_counts(struct ext3_fs *fs, uint64_t *blocks, uint64_t *inodes)
{
	if (fs->writable) {
		ext3_sb_lock(fs);
		*blocks = fs->free_blocks;
		*inodes = fs->free_inodes;
		ext3_sb_unlock(fs);
		return;
	}
	*blocks = le32_to_cpu(fs->sb.s_free_blocks_count);
	*inodes = le32_to_cpu(fs->sb.s_free_inodes_count);
}
