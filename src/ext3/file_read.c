/* File data reads with per-open-file readahead windows that bypass the
 * buffer cache. See docs/ext3-read-path.md, "Sequential reads".
 *
 * A reader (one per open file) keeps two windows: `cur`, the one being
 * consumed, and `next`, the asynchronous readahead behind it. A window is a
 * block-aligned byte range of the file and a buffer of the same size; issuing
 * it maps the range into physically contiguous runs (ext3_inode_map_run with
 * the inode's copy of the last leaf indirect block), zero-fills the holes and
 * sends one READ bio per run straight to the block queue (the queue splits
 * runs larger than max_sectors_kb), so a 4 MiB window is about eight 512 KiB
 * requests in flight. Like the kernel's ondemand readahead, the first window
 * of a stream is small (twice the request, at least 128 KiB), each following
 * one doubles up to the maximum, and the next window is issued as soon as the
 * reader starts consuming the current one (for the first window: once the
 * reader goes past its first request), so the device always has a window
 * queued while the caller copies the previous one.
 *
 * Which reads take this path: a read that continues the previous one on this
 * reader (off == end of the last read, including the first read at 0), a
 * read inside a live window, and any read of at least FR_LARGE bytes. Other
 * (small, random) reads go through the buffer cache block by block
 * (ext3_inode_pread), which caches them.
 *
 * Correctness rules:
 * - Dirty data must win over the disk. The rule is per inode: a window is
 *   only issued while the inode's dirty-data count (ext3_inode_dirty_data)
 *   is 0 (checked per window); otherwise the read goes through the buffer
 *   cache, which returns the cached copy. The write path must count every
 *   dirty data block or page of the inode there (data=journal's dirty
 *   buffers included), keep a block from becoming dirty while a window read
 *   of it is in flight (or drop the file's windows when it dirties one), and
 *   reset the inode's map cache when it changes the block map. Indirect
 *   blocks need no check: the mapping always reads them through the buffer
 *   cache (ext3_bread), so a dirty cached copy is the one used. Dirty
 *   buffers of other files no longer turn the fast path off.
 * - Errors keep ext3_inode_pread's semantics because the fast path never
 *   reports one itself: a window whose mapping fails stops before the bad
 *   block, a window whose I/O fails is dropped, and the read continues
 *   through the buffer cache from there, which returns the short count and,
 *   on the next call, the error (with the usual message). Clean cached
 *   buffers hold the same bytes as the disk, so mixing both paths is safe.
 *
 * Locking: r->lock protects everything in the reader. It is held while a
 * window is issued and while waiting for a window's I/O (so readers of one
 * handle that share a stream serialize; readers taking the buffer-cache path
 * do not take it for their I/O). Under it only the buffer cache's and the
 * block queue's internal locks are taken (through ext3_bread, blk_submit_bio,
 * blk_batch_wait) and the inode's lock as reader with its map-cache mutex
 * (ext3_inode_size, ext3_inode_map_run, ext3_inode_pread). Lock order: the
 * API's per-handle position mutex, then r->lock, then the inode's locks. Window buffers are written by the device while their batch is in
 * flight and read by the reader only after blk_batch_wait returned.
 */
#include "ext3/ext3_int.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "util/array.h"
#include "util/err.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FR_MIN_WINDOW (128u * 1024)      /* first window of a stream, at least */
#define FR_LARGE (64u * 1024)            /* reads this large always use windows */
#define FR_MAX_WINDOW_CAP (64u << 20)
#define FR_BUF_ALIGN 4096u               /* O_DIRECT file devices need no bounce */

struct fr_win {
	uint8_t *buf;          /* buf_size bytes, grown as windows grow */
	size_t buf_size;
	uint64_t start;        /* file byte offset (block aligned) */
	uint64_t len;          /* bytes covered (whole blocks); 0 = empty window */
	uint64_t marker;       /* consuming at or past this offset issues the next window */
	bool inflight;         /* batch submitted, not waited for yet */
	bool short_map;        /* mapping stopped early (error): no window after it */
	struct blk_batch batch;
	struct bio *bios;
	size_t nbios, cap;
};

struct ext3_fread {
	struct ext3_fs *fs;
	struct ext3_inode *in;  /* a reference (ext3_igrab) */
	size_t max_window;     /* 0: fast path off */
	pthread_mutex_t lock;  /* protects everything below */
	uint64_t next_off;     /* end of the last read: sequential detection */
	uint64_t window;       /* size of the next window to issue */
	struct fr_win win[2];
	unsigned cur;          /* win[cur] is being consumed, win[cur ^ 1] is next */
	struct ext3_fread_stats st;
};

static uint64_t pow2_ceil(uint64_t v)
{
	uint64_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

int ext3_fread_create(struct ext3_fs *fs, struct ext3_inode *in, size_t max_window,
		      struct ext3_fread **out)
{
	*out = NULL;
	struct ext3_fread *r = calloc(1, sizeof *r);
	if (!r)
		return err_set(-ENOMEM, "out of memory");
	r->fs = fs;
	r->in = ext3_igrab(in);
	if (max_window) {
		if (max_window < FR_LARGE)
			max_window = FR_LARGE;
		if (max_window > FR_MAX_WINDOW_CAP)
			max_window = FR_MAX_WINDOW_CAP;
		max_window = (size_t)pow2_ceil(max_window);
	}
	r->max_window = max_window;
	pthread_mutex_init(&r->lock, NULL);
	*out = r;
	return 0;
}

/* Wait for w's I/O. Returns the first error. Caller holds r->lock. */
static int win_wait(struct ext3_fread *r, struct fr_win *w)
{
	if (!w->inflight)
		return 0;
	int rc = blk_batch_wait(r->fs->q, &w->batch);
	blk_batch_destroy(&w->batch);
	w->inflight = false;
	return rc;
}

/* Forget w (waiting for its I/O first: the device still writes into it). */
static void win_drop(struct ext3_fread *r, struct fr_win *w)
{
	(void)win_wait(r, w);
	w->len = 0;
	w->short_map = false;
}

void ext3_fread_destroy(struct ext3_fread *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < 2; i++) {
		win_drop(r, &r->win[i]);
		free(r->win[i].buf);
		free(r->win[i].bios);
	}
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_destroy(&r->lock);
	ext3_iput(r->in);
	free(r);
}

void ext3_fread_stats(struct ext3_fread *r, struct ext3_fread_stats *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->st;
	out->window = (size_t)r->window;
	pthread_mutex_unlock(&r->lock);
}

static bool win_has(const struct fr_win *w, uint64_t pos)
{
	return w->len && pos >= w->start && pos - w->start < w->len;
}

static int win_add_bio(struct fr_win *w, uint64_t sector, uint32_t size, void *data)
{
	if (array_grow(&w->bios, &w->cap, w->nbios, sizeof *w->bios, 16))
		return -ENOMEM;
	struct bio *b = &w->bios[w->nbios++];
	memset(b, 0, sizeof *b);
	b->sector = sector;
	b->size = size;
	b->data = data;
	b->rw = BLK_READ;
	return 0;
}

/* Issue window w for [start, start + size) (start block aligned), bounded
 * by the end of the file. Returns false when nothing could be issued (dirty
 * cache, no memory, or the first block does not map): the caller then reads
 * through the buffer cache. Caller holds r->lock; w is idle (not in flight). */
static bool win_issue(struct ext3_fread *r, struct fr_win *w, uint64_t start, uint64_t size,
		      uint64_t marker)
{
	struct ext3_fs *fs = r->fs;
	uint32_t bs = fs->g.block_size;
	w->len = 0;
	w->short_map = false;
	uint64_t fend = ext3_inode_size(r->in) + bs - 1;
	fend -= fend % bs; /* the file's end, rounded up to whole blocks */
	if (start >= fend)
		return false;
	if (size > fend - start)
		size = fend - start;
	/* Dirty data must win over the disk: never bypass the cache while the
	 * inode has any (a read-only mount never does). */
	if (ext3_inode_dirty_data(r->in)) {
		r->st.fallbacks++;
		return false;
	}
	if (w->buf_size < size) {
		/* Small files get small buffers; a stream's buffers grow with its
		 * windows (a handful of reallocations up to max_window). */
		size_t want = (size_t)(size + FR_BUF_ALIGN - 1) / FR_BUF_ALIGN * FR_BUF_ALIGN;
		free(w->buf);
		w->buf_size = 0;
		w->buf = aligned_alloc(FR_BUF_ALIGN, want);
		if (!w->buf) {
			r->st.fallbacks++;
			return false;
		}
		w->buf_size = want;
	}
	w->nbios = 0;
	uint64_t pos = start, end = start + size;
	while (pos < end) {
		uint64_t phys, cnt;
		if (ext3_inode_map_run(fs, r->in, NULL, pos / bs, (end - pos) / bs, &phys,
				       &cnt) < 0) {
			w->short_map = true; /* the buffer-cache path reports it */
			break;
		}
		uint8_t *dst = w->buf + (pos - start);
		uint64_t bytes = cnt * bs;
		if (phys == 0) {
			memset(dst, 0, (size_t)bytes);
		} else if (win_add_bio(w, phys * (bs / DEV_SECTOR_SIZE), (uint32_t)bytes, dst)) {
			w->short_map = true;
			break;
		}
		pos += bytes;
	}
	if (pos == start) {
		r->st.fallbacks++;
		return false;
	}
	w->start = start;
	w->len = pos - start;
	/* A request that reaches past this window goes on: read ahead at once. */
	w->marker = marker < start + w->len ? marker : start;
	r->st.windows++;
	if (w->nbios) {
		blk_batch_init(&w->batch);
		w->inflight = true;
		for (size_t i = 0; i < w->nbios; i++)
			(void)blk_batch_submit(fs->q, &w->batch, &w->bios[i]); /* a refusal is the batch's error */
		r->st.bios += w->nbios;
		/* Dispatch now: nobody may wait for this window for a while, and
		 * its runs are already as large as they get (no merging to wait for). */
		blk_queue_unplug(fs->q);
	}
	return true;
}

/* The window after `w`, asynchronously, if there is none yet. */
static void ra_next(struct ext3_fread *r)
{
	struct fr_win *c = &r->win[r->cur], *n = &r->win[r->cur ^ 1];
	if (n->len || c->short_map)
		return;
	uint64_t start = c->start + c->len;
	if (r->window < r->max_window)
		r->window *= 2;
	(void)win_issue(r, n, start, r->window, start); /* marker: its first byte */
}

ssize_t ext3_fread_pread(struct ext3_fread *r, void *buf, size_t len, uint64_t off)
{
	struct ext3_inode *in = r->in;
	uint64_t isize = ext3_inode_size(in);
	if (off >= isize || len == 0)
		return 0;
	if (len > isize - off)
		len = (size_t)(isize - off);
	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX & ~(size_t)(r->fs->g.block_size - 1);
	if (!r->max_window)
		return ext3_inode_pread(r->fs, in, buf, len, off);

	uint8_t *dst = buf;
	size_t done = 0;
	pthread_mutex_lock(&r->lock);
	bool stream = off == r->next_off || len >= FR_LARGE || win_has(&r->win[0], off) ||
		      win_has(&r->win[1], off);
	if (!stream) {
		r->next_off = off + len; /* optimistic: the common case is a full read */
		pthread_mutex_unlock(&r->lock);
		ssize_t n = ext3_inode_pread(r->fs, in, buf, len, off);
		pthread_mutex_lock(&r->lock);
		if (n > 0)
			r->st.slow_bytes += (uint64_t)n;
		if (n >= 0)
			r->next_off = off + (uint64_t)n;
		pthread_mutex_unlock(&r->lock);
		return n;
	}
	uint32_t bs = r->fs->g.block_size;
	while (done < len) {
		uint64_t pos = off + done;
		struct fr_win *c = &r->win[r->cur], *n = &r->win[r->cur ^ 1];
		if (!win_has(c, pos)) {
			if (win_has(n, pos)) {
				/* Moving on to the readahead window: the old one is done. */
				win_drop(r, c);
				r->cur ^= 1;
			} else {
				/* A new stream: its first window is twice the request
				 * (at least FR_MIN_WINDOW); the next window is issued when
				 * the reader goes past its first request. */
				win_drop(r, c);
				win_drop(r, n);
				uint64_t want = r->max_window;
				if (len - done < r->max_window / 2) {
					want = pow2_ceil(len - done) * 2;
					if (want < FR_MIN_WINDOW)
						want = FR_MIN_WINDOW;
					if (want > r->max_window)
						want = r->max_window;
				}
				r->window = want;
				uint64_t start = pos - pos % bs;
				uint64_t marker = off + len;
				if (!win_issue(r, c, start, want, marker))
					break;
			}
			c = &r->win[r->cur];
		}
		if (pos >= c->marker)
			ra_next(r);
		if (win_wait(r, c) < 0) {
			/* An I/O error: drop the windows, read the rest through the
			 * buffer cache, which retries block by block and reports it. */
			r->st.fallbacks++;
			win_drop(r, &r->win[r->cur ^ 1]);
			win_drop(r, c);
			break;
		}
		uint64_t avail = c->start + c->len - pos;
		size_t cp = len - done < avail ? len - done : (size_t)avail;
		memcpy(dst + done, c->buf + (pos - c->start), cp);
		done += cp;
		r->st.direct_bytes += cp;
	}
	r->next_off = off + done;
	pthread_mutex_unlock(&r->lock);
	if (done == len)
		return (ssize_t)done;
	/* The rest through the buffer cache (errors, dirty cache, no memory). */
	ssize_t m = ext3_inode_pread(r->fs, in, dst + done, len - done, off + done);
	pthread_mutex_lock(&r->lock);
	if (m > 0) {
		r->st.slow_bytes += (uint64_t)m;
		r->next_off = off + done + (uint64_t)m;
	}
	pthread_mutex_unlock(&r->lock);
	if (m < 0)
		return done ? (ssize_t)done : m;
	return (ssize_t)(done + (size_t)m);
}
