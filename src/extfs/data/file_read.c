/* File data reads with per-open-file readahead that bypasses the buffer
 * cache. See docs/ext3-read-path.md, "Sequential reads".
 *
 * A reader (one per open file) keeps a ring of FR_NSEG segments in file
 * order: the oldest is the one being consumed, the others the readahead
 * behind it. A segment is a block-aligned byte range of the file and a buffer
 * of the same size; issuing it maps the range into physically contiguous runs
 * (with the inode's copy of the last leaf indirect block), zero-fills the
 * holes and sends one READ bio per run straight to the block queue (which
 * splits runs larger than max_sectors_kb). The readahead allowance (bytes
 * issued past the reader) starts at twice the first request (at least
 * 128 KiB, at most max_window), doubles per consumed segment once the reader
 * passes its first request (like the kernel's ondemand readahead), up to
 * 2 x max_window (the memory of the former two windows); segments are half
 * the allowance, at most 2 x max_window / FR_NSEG (1 MiB by default).
 *
 * Why a ring: the device must never run dry while the caller copies. With
 * two whole windows, the next one was issued only when the reader moved on,
 * so the queue went down to the stragglers of one window (on file: under
 * load 20 % of the time under four requests, the raw floor's depth). Here
 * every consumed segment is re-issued at the front at once, and the queue
 * holds 2 x max_window minus one segment at all times.
 *
 * Leaf pointer blocks (one per 4 MiB of data with 4 KiB blocks): mapping a
 * segment reads its leaf. Read synchronously then, the leaf waits behind
 * everything queued and the reader with it; worse, an elevator (ours or the
 * host's) serves requests in sector order, so a leaf read started early
 * still completes only when the stream reaches it, just before its data.
 * Measured on file: that wait was 80-90 % of a stream's time. So (1) leaves
 * up to three allowances ahead are started early (META:
 * ext3_inode_map_prefetch), and (2) a segment whose leaf is not in yet is
 * issued on a guess (ext3_inode_map_guess: the blocks right after the leaf,
 * where a sequential write puts them, never across a block group's end),
 * and checked against the real mapping when the reader reaches it (its leaf,
 * being before its data on the disk, is in by then): a wrong guess drops the
 * ring from that segment on and maps for real (guess_misses).
 *
 * Which reads take this path: a read that continues the previous one on this
 * reader (off == end of the last read, including the first read at 0), a
 * read inside a live segment or at the end of the readahead, and any read of
 * at least FR_LARGE bytes. Other
 * (small, random) reads go through the buffer cache block by block
 * (ext3_inode_pread), which caches them.
 *
 * Correctness rules:
 * - Dirty data must win over the disk. A segment records the inode's page
 *   mapping and its removal count when issued; when the reader gets to it,
 *   the cached pages of the range are copied over it and the count checked
 *   again (win_current; docs/write-data.md, "Reads"): a page dropped since
 *   (written back after the disk was read) or a truncate makes it stale and
 *   it is read again. Reads off the ring take the page mapping for a file
 *   written in this mount (ext3_data_written), the buffer cache for others
 *   (fread_cached). The per-inode dirty-data count checked per window
 *   (ext3_inode_dirty_data) is 0 except in a test that dirties a block by
 *   hand; it stays as a guard. Indirect blocks need no check: the mapping
 *   always reads them through the buffer cache (ext3_bread), so a dirty
 *   cached copy is the one used.
 * - Errors keep ext3_inode_pread's semantics because the fast path never
 *   reports one itself: a segment whose mapping fails stops before the bad
 *   block (no readahead after it: ra_stop), a segment whose I/O fails drops
 *   the stream, and the read continues
 *   through the buffer cache from there, which returns the short count and,
 *   on the next call, the error (with the usual message). Clean cached
 *   buffers hold the same bytes as the disk, so mixing both paths is safe.
 *
 * Locking: r->lock protects everything in the reader. It is held while a
 * segment is issued and while waiting for a segment's I/O (so readers of one
 * handle that share a stream serialize; readers taking the buffer-cache path
 * do not take it for their I/O). Under it only the buffer cache's and the
 * block queue's internal locks are taken (through ext3_bread, blk_submit_bio,
 * blk_batch_wait) and the inode's lock as reader with its map-cache mutex
 * (ext3_inode_size, ext3_inode_map_run, ext3_inode_pread), and the page
 * cache's lock and page locks (page_mapping_overlay, never with the inode's
 * lock held). Lock order: the API's per-handle position mutex, then
 * r->lock, then the inode's locks.
 * Segment buffers are written by the device while their batch is in flight
 * and read by the reader only after blk_batch_wait returned.
 */
#include "extfs/core/ext3_int.h"
#include "extfs/data/file_data.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "page/page.h"
#include "util/array.h"
#include "util/blockmem.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define FR_MIN_WINDOW (128u * 1024)      /* first allowance of a stream, at least */
#define FR_LARGE (64u * 1024)            /* reads this large always use segments */
#define FR_MAX_WINDOW_CAP (64u << 20)
#define FR_BUF_ALIGN 4096u               /* O_DIRECT file devices need no bounce */
#define FR_NSEG 8u                       /* segments in a reader's ring */
#define FR_HUGE (2u << 20)               /* a transparent huge page (x86-64, arm64/4K) */

/* A stream's segments live in one arena of huge pages once the ring is at
 * least one huge page (FR_NSEG * seg_max >= FR_HUGE) and a segment has grown
 * to half of seg_max (a stream, not a small file). Every byte of a segment is
 * pinned page by page twice: by the O_DIRECT read into it, and by the FUSE
 * daemon's reply, whose copy into the kernel's pages pins one page per call.
 * With 2 MiB pages each pin is one page-table step instead of four, and the
 * TLB covers the ring: cold 1 GiB reads through the mount (tmpfs image, the
 * daemon's CPU the limit) 0.36 -> 0.31 s, from a file: image 0.60 -> 0.32 s
 * (docs/ext3-read-path.md, "Huge pages").
 * MADV_HUGEPAGE is advice: without THP the arena is ordinary memory. */

struct fr_win {
	uint8_t *buf;          /* buf_size bytes, grown as segments grow */
	size_t buf_size;
	bool in_arena;         /* buf is the reader's arena slice (not freed alone) */
	uint64_t start;        /* file byte offset (block aligned) */
	uint64_t len;          /* bytes covered (whole blocks); 0 = empty */
	bool inflight;         /* batch submitted, not waited for yet */
	bool guessed;          /* part of it was read on a guessed mapping */
	struct page_mapping *m; /* the inode's page mapping when issued (NULL: none) */
	uint64_t removals;     /* ... and its removal count then (win_current) */
	struct blk_batch batch;
	struct bio *bios;
	size_t nbios, cap;
};

struct ext3_fread {
	struct ext3_fs *fs;
	struct ext3_inode *in;  /* a reference (ext3_igrab) */
	size_t max_window;     /* 0: fast path off */
	uint64_t seg_max;      /* largest segment: 2 * max_window / FR_NSEG */
	pthread_mutex_t lock;  /* protects everything below */
	uint64_t next_off;     /* end of the last read: sequential detection */
	uint64_t window;       /* readahead allowance: bytes issued past the reader */
	uint64_t marker;       /* the stream's first request ends here: no more
				* readahead until the reader gets past it */
	uint64_t ra_end;       /* end of the last segment issued (stream live) */
	uint64_t pf_next;      /* leaf pointer blocks are prefetched up to this
				* logical block */
	uint64_t hint_log;     /* the last block mapped for readahead ... */
	uint64_t hint_phys;    /* ... and where (0: a hole or unknown) */
	bool live;             /* a stream is live: ra_end means something */
	bool ra_stop;          /* no segment after ra_end (a mapping error or a
				* refused issue): the buffer-cache path goes on */
	struct fr_win win[FR_NSEG];
	uint8_t *arena;        /* FR_NSEG slices of seg_max bytes, or NULL */
	unsigned head, nlive;  /* win[head..head+nlive) in file order, modulo FR_NSEG */
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
		uint32_t bs = fs->g.block_size;
		r->seg_max = 2 * (uint64_t)max_window / FR_NSEG;
		if (r->seg_max < bs)
			r->seg_max = bs;
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
	pthread_mutex_lock(&w->batch.lock);
	bool pending = w->batch.pending > 0;
	pthread_mutex_unlock(&w->batch.lock);
	uint64_t t0 = pending ? clock_now_ns() : 0;
	int rc = blk_batch_wait(r->fs->q, &w->batch);
	if (pending) { /* the reader is ahead of the device */
		r->st.waits++;
		r->st.wait_ns += clock_now_ns() - t0;
	}
	blk_batch_destroy(&w->batch);
	w->inflight = false;
	return rc;
}

/* Forget w (waiting for its I/O first: the device still writes into it). */
static void win_drop(struct ext3_fread *r, struct fr_win *w)
{
	(void)win_wait(r, w);
	w->len = 0;
}

/* The i-th live segment (0 = the oldest, the one the reader is in). */
static struct fr_win *seg(struct ext3_fread *r, unsigned i)
{
	return &r->win[(r->head + i) % FR_NSEG];
}

/* Forget the oldest live segment. */
static void ring_pop(struct ext3_fread *r)
{
	win_drop(r, seg(r, 0));
	r->head = (r->head + 1) % FR_NSEG;
	r->nlive--;
}

/* End the stream: every segment forgotten (after its I/O). */
static void ring_reset(struct ext3_fread *r)
{
	while (r->nlive)
		ring_pop(r);
	r->live = false;
	r->ra_stop = false;
}

void ext3_fread_destroy(struct ext3_fread *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	ring_reset(r);
	for (unsigned i = 0; i < FR_NSEG; i++) {
		if (!r->win[i].in_arena)
			free(r->win[i].buf);
		free(r->win[i].bios);
	}
	free(r->arena);
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

/* Index of the live segment holding pos, or -1. */
static int ring_find(struct ext3_fread *r, uint64_t pos)
{
	for (unsigned i = 0; i < r->nlive; i++)
		if (win_has(seg(r, i), pos))
			return (int)i;
	return -1;
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

/* Give w, which is empty, its slice of the arena (made on first use) for a
 * segment of size bytes. False: no arena for this reader or this size (or
 * no memory for it), w keeps a buffer of its own. */
static bool win_arena_take(struct ext3_fread *r, struct fr_win *w, uint64_t size)
{
	uint64_t ring = FR_NSEG * r->seg_max;
	if (ring < FR_HUGE || size < r->seg_max / 2 || size > r->seg_max ||
	    r->seg_max % FR_BUF_ALIGN)
		return false;
	if (!r->arena) {
		r->arena = blockmem_huge_alloc((size_t)ring);
		if (!r->arena)
			return false;
	}
	if (!w->in_arena)
		free(w->buf);
	w->buf = r->arena + (size_t)(w - r->win) * r->seg_max;
	w->buf_size = (size_t)r->seg_max;
	w->in_arena = true;
	return true;
}

/* The inode's page mapping (NULL: none yet). It is created under the
 * inode's lock as writer and lives as long as the inode (our reference
 * keeps it). */
static struct page_mapping *fread_mapping(struct ext3_fread *r)
{
	ext3_inode_rdlock(r->in);
	struct page_mapping *m = r->in->mapping;
	ext3_inode_unlock(r->in);
	return m;
}

/* Make [pos, pos + n) of segment w (its I/O done) the file's bytes: the
 * page cache's copy over the disk's where it has one (a file written in
 * this mount). False: w is stale, read before a page it covers was written
 * back and dropped, or before a truncate (page_mapping_removals moved), or
 * before the inode had a mapping at all: drop it and read again. */
static bool win_current(struct ext3_fread *r, struct fr_win *w, uint64_t pos, size_t n)
{
	struct page_mapping *m = fread_mapping(r);
	if (m != w->m)
		return false;
	if (!m)
		return true;
	return page_mapping_overlay(m, pos, w->buf + (pos - w->start), n) == w->removals;
}

/* Issue segment w for [start, start + size) (start block aligned), bounded
 * by the end of the file. Returns false when nothing could be issued (end of
 * file, dirty cache, no memory, or the first block does not map); a mapping
 * that stops early (an error) issues what it mapped and sets r->ra_stop.
 * Caller holds r->lock; w is idle (not in flight). */
static bool win_issue(struct ext3_fread *r, struct fr_win *w, uint64_t start, uint64_t size)
{
	struct ext3_fs *fs = r->fs;
	uint32_t bs = fs->g.block_size;
	w->len = 0;
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
	if (w->buf_size < size && !win_arena_take(r, w, size)) {
		/* Small files get small buffers; a stream's buffers grow with its
		 * segments (a handful of reallocations up to seg_max). */
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
	r->st.huge_segs += w->in_arena;
	w->nbios = 0;
	w->guessed = false;
	/* Before the mapping and the I/O: what the cache held then is checked
	 * when the reader gets here (win_current). */
	w->m = fread_mapping(r);
	w->removals = w->m ? page_mapping_removals(w->m) : 0;
	uint64_t pos = start, end = start + size;
	while (pos < end) {
		uint64_t phys, cnt;
		uint64_t hint = r->hint_phys && r->hint_log + 1 == pos / bs ? r->hint_phys : 0;
		int g = ext3_inode_map_guess(fs, r->in, pos / bs, (end - pos) / bs, hint, &phys, &cnt);
		if (g < 0) {
			r->ra_stop = true; /* the buffer-cache path reports it */
			break;
		}
		w->guessed |= g == 1;
		uint8_t *dst = w->buf + (pos - start);
		uint64_t bytes = cnt * bs;
		r->hint_log = pos / bs + cnt - 1;
		r->hint_phys = phys ? phys + cnt - 1 : 0;
		if (phys == 0) {
			memset(dst, 0, (size_t)bytes);
		} else if (win_add_bio(w, phys * (bs / DEV_SECTOR_SIZE), (uint32_t)bytes, dst)) {
			r->ra_stop = true;
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
	r->st.windows++;
	r->st.guesses += w->guessed;
	if (w->nbios) {
		blk_batch_init(&w->batch);
		w->inflight = true;
		for (size_t i = 0; i < w->nbios; i++)
			(void)blk_batch_submit(fs->q, &w->batch, &w->bios[i]); /* a refusal is the batch's error */
		r->st.bios += w->nbios;
		/* Dispatch now: nobody may wait for this segment for a while, and
		 * its runs are already as large as they get (no merging to wait for). */
		blk_queue_unplug(fs->q);
	}
	return true;
}

/* Does segment w (its I/O done) hold what the real mapping says, i.e. was
 * its guess right? Maps its range again (the leaf is in by now: it was read
 * before the data that follows it) and compares with the bios issued.
 * 1: right, 0: wrong, negative: the mapping failed (the buffer-cache path
 * reports it). */
static int win_check(struct ext3_fread *r, struct fr_win *w)
{
	uint32_t bs = r->fs->g.block_size;
	uint64_t pos = w->start, end = w->start + w->len;
	size_t bi = 0;
	while (pos < end) {
		uint64_t phys, cnt;
		int rc = ext3_inode_map_run(r->fs, r->in, NULL, pos / bs, (end - pos) / bs, &phys, &cnt);
		if (rc < 0)
			return rc;
		uint8_t *at = w->buf + (pos - w->start);
		bool bio_here = bi < w->nbios && w->bios[bi].data == at;
		if (phys == 0) {
			if (bio_here)
				return 0; /* a hole read as data */
		} else {
			if (!bio_here || w->bios[bi].sector != phys * (bs / DEV_SECTOR_SIZE) ||
			    w->bios[bi].size != cnt * bs)
				return 0;
			bi++;
		}
		pos += cnt * bs;
	}
	return bi == w->nbios;
}

/* Mapping a segment reads the leaf pointer block that maps it (one per 4 MiB
 * of data with 4 KiB blocks). Read synchronously when the segment is issued,
 * that block waits behind the allowance already queued (up to 2 x
 * max_window) while the reader waits for it: that wait was most of a
 * stream's time on file:. So the leaves up to one allowance past ra_end
 * are started early, and mapping finds them cached. */
static void ra_prefetch_map(struct ext3_fread *r)
{
	uint32_t bs = r->fs->g.block_size;
	uint64_t fend = (ext3_inode_size(r->in) + bs - 1) / bs;
	uint64_t target = (r->ra_end + 3 * r->window) / bs;
	if (target > fend)
		target = fend;
	if (r->pf_next < r->ra_end / bs)
		r->pf_next = r->ra_end / bs;
	bool started = false;
	while (r->pf_next < target) {
		uint64_t next;
		if (ext3_inode_map_prefetch(r->fs, r->in, r->pf_next, &next) < 0 || next <= r->pf_next) {
			r->pf_next = target; /* the mapping reports it */
			break;
		}
		r->pf_next = next;
		r->st.map_prefetches++;
		started = true;
	}
	if (started)
		blk_queue_unplug(r->fs->q); /* a plugged queue would hold them back */
}

/* Keep the readahead allowance issued past `pos`: append segments at
 * ra_end while a whole segment fits in the allowance and the ring has a free
 * slot. Segments are half the allowance (at most seg_max), so the ring is
 * refilled a segment at a time as the reader consumes one, instead of a
 * whole window at a time: the device never runs dry while the caller copies. */
static void ra_fill(struct ext3_fread *r, uint64_t pos)
{
	uint32_t bs = r->fs->g.block_size;
	uint64_t s = r->window / 2 < r->seg_max ? r->window / 2 : r->seg_max;
	s -= s % bs;
	if (s < bs)
		s = bs;
	while (r->live && !r->ra_stop && r->nlive < FR_NSEG) {
		uint64_t ahead = r->ra_end > pos ? r->ra_end - pos : 0;
		if (ahead + s > r->window && ahead)
			return;
		struct fr_win *w = seg(r, r->nlive);
		uint64_t t0 = clock_now_ns();
		bool ok = win_issue(r, w, r->ra_end, s);
		r->st.issue_ns += clock_now_ns() - t0;
		if (!ok)
			return; /* end of file, dirty data, no memory: tried again later */
		r->nlive++;
		r->ra_end = w->start + w->len;
	}
	ra_prefetch_map(r);
}

/* Ramp the allowance up (doubling per consumed segment, like the kernel's
 * window per window) to twice max_window: the same memory as two windows. */
static void ra_grow(struct ext3_fread *r)
{
	if (r->window < 2 * (uint64_t)r->max_window)
		r->window *= 2;
	if (r->window > 2 * (uint64_t)r->max_window)
		r->window = 2 * (uint64_t)r->max_window;
}

/* Is every block of [pos, end) in memory already (the page mapping's
 * pages for a file written in this mount, the buffer cache for others)?
 * Then the read takes the cache's path and no stream starts: a read of
 * cached data never goes to the disk, as the kernel's readahead starts
 * only at a page it misses (page_cache_sync_readahead). Without this a
 * fresh handle's first read at 0 read the whole first allowance from the
 * disk even when every page was cached, and threw it away for the cached
 * copies (win_current). One block missing and the stream starts as before:
 * the cache's path would read the missing blocks one by one, and for a
 * file written in this mount it would fill the page cache with them (pages
 * that also change what SEEK_HOLE sees over unwritten extents). Stops at
 * the first block missing, so an uncached read pays one lookup. Mapping may
 * read a leaf pointer block, which the stream would read anyway. Holes and
 * mapping errors count as missing (the stream's path, as before). Caller
 * holds r->lock. */
static bool fread_range_cached(struct ext3_fread *r, uint64_t pos, uint64_t end)
{
	struct ext3_inode *in = r->in;
	uint32_t bs = r->fs->g.block_size;
	uint64_t b = pos / bs, e = (end + bs - 1) / bs;
	if (ext3_data_written(in)) {
		/* as fread_cached: the page mapping when there is one */
		bool all = true;
		ext3_inode_rdlock(in);
		bool mapped = in->mapping != NULL;
		for (uint64_t i = b; mapped && all && i < e; i++) {
			struct page *pg = page_lookup(in->mapping, i);
			all = pg && (page_uptodate(pg) || page_dirty(pg));
			page_put(pg);
		}
		ext3_inode_unlock(in);
		if (mapped)
			return all;
	}
	while (b < e) {
		uint64_t phys, cnt;
		if (ext3_inode_map_run(r->fs, in, NULL, b, e - b, &phys, &cnt) < 0 || !phys || !cnt)
			return false;
		for (uint64_t k = 0; k < cnt; k++)
			if (!buf_cached(r->fs->cache, phys + k))
				return false;
		b += cnt;
	}
	return true;
}

/* A new stream at pos for a request of `len` bytes ending at `marker`:
 * its first allowance is twice the request (at least FR_MIN_WINDOW, at most
 * max_window), issued at once; more only once the reader passes the request. */
static bool ra_start(struct ext3_fread *r, uint64_t pos, uint64_t len, uint64_t marker)
{
	ring_reset(r);
	uint64_t want = r->max_window;
	if (len < r->max_window / 2) {
		want = pow2_ceil(len) * 2;
		if (want < FR_MIN_WINDOW)
			want = FR_MIN_WINDOW;
		if (want > r->max_window)
			want = r->max_window;
	}
	uint32_t bs = r->fs->g.block_size;
	r->window = want;
	r->marker = marker;
	r->live = true;
	r->ra_end = pos - pos % bs;
	r->pf_next = 0;
	ra_fill(r, r->ra_end);
	return r->nlive > 0;
}

/* A zero-copy read in progress (ext3_fread_pread_sink): pieces[k] lies in
 * segment seg(r, k), which stays live (not popped, not re-issued) until the
 * sink has had it. Every piece but the last ends at its segment's end. */
struct fr_zc {
	bool on;               /* still zero-copy (else copying into dst) */
	int n;                 /* pieces recorded */
	struct iovec iov[FR_NSEG];
};

/* Give up zero-copy: copy the pieces recorded so far into dst (their order
 * is the file's) and pop their segments, as the copying path would have. */
static void zc_materialize(struct ext3_fread *r, struct fr_zc *zc, uint8_t *dst, uint64_t off)
{
	if (!zc || !zc->on)
		return;
	size_t at = 0;
	for (int k = 0; k < zc->n; k++) {
		memcpy(dst + at, zc->iov[k].iov_base, zc->iov[k].iov_len);
		at += zc->iov[k].iov_len;
	}
	/* Only the last piece can end inside its segment, and materializing
	 * happens only when the read goes past it: all are consumed. */
	for (int k = 0; k < zc->n; k++) {
		ring_pop(r);
		if (off + at >= r->marker)
			ra_grow(r);
	}
	if (zc->n && off + at >= r->marker)
		ra_fill(r, off + at);
	zc->n = 0;
	zc->on = false;
}

/* The body of both reads: fills [off, off + done) into buf, or (zc->on at
 * the end) records it as zc->iov pieces of live segments. Returns done; the
 * caller finishes the read through the buffer cache when done < len.
 * Caller holds r->lock. */
static size_t fread_ring(struct ext3_fread *r, uint8_t *dst, size_t len, uint64_t off,
			 struct fr_zc *zc)
{
	size_t done = 0;
	uint64_t missed_at = UINT64_MAX; /* a second wrong guess there: give up */
	uint64_t stale_at = UINT64_MAX;  /* a second stale segment there: give up */
	while (done < len) {
		uint64_t pos = off + done;
		int i = ring_find(r, pos);
		/* Zero-copy goes on only while the next piece is in the segment
		 * right after the pinned ones; anything else (a fill, a restart,
		 * segments to pop) copies what is pinned first. */
		if (zc && zc->on && zc->n && i != zc->n) {
			zc_materialize(r, zc, dst, off);
			i = ring_find(r, pos); /* the ring moved on */
		}
		if (i < 0 && r->live && !r->ra_stop && pos == r->ra_end) {
			ra_fill(r, pos); /* the reader caught up with the readahead */
			i = ring_find(r, pos);
		}
		if (i < 0) {
			if (r->live && r->ra_stop && pos >= r->ra_end)
				break; /* past a mapping error or a refusal: the cache's turn */
			if (fread_range_cached(r, pos, off + len))
				break; /* all in memory: the cache's turn */
			if (!ra_start(r, pos, len - done, off + len))
				break;
			i = ring_find(r, pos);
			if (i < 0)
				break;
		}
		unsigned pinned = zc && zc->on ? (unsigned)zc->n : 0;
		if (!pinned)
			while (i-- > 0)
				ring_pop(r); /* segments behind the reader are done */
		if (pos >= r->marker)
			ra_fill(r, pos);
		struct fr_win *c = seg(r, pinned);
		if (win_wait(r, c) < 0) {
			/* An I/O error: drop the stream, read the rest through the
			 * buffer cache, which retries block by block and reports it. */
			zc_materialize(r, zc, dst, off);
			r->st.fallbacks++;
			ring_reset(r);
			break;
		}
		if (c->guessed) {
			int ok = win_check(r, c);
			if (ok <= 0) {
				/* A wrong guess (the file is not laid out sequentially):
				 * drop it and everything after it, map for real from here
				 * (the check left the leaf cached: no guess this time).
				 * A mapping error, or a second miss here (the leaf did not
				 * stay cached): the buffer-cache path takes over. */
				zc_materialize(r, zc, dst, off);
				r->st.guess_misses += ok == 0;
				uint64_t keep = r->window;
				ring_reset(r);
				if (ok < 0 || missed_at == pos)
					break;
				missed_at = pos;
				if (!ra_start(r, pos, len - done, off + len))
					break;
				r->window = keep > r->window ? keep : r->window;
				continue;
			}
			c->guessed = false;
		}
		uint64_t avail = c->start + c->len - pos;
		size_t cp = len - done < avail ? len - done : (size_t)avail;
		if (!win_current(r, c, pos, cp)) {
			/* Read before the cache let go of a newer copy: read the
			 * ring again from here; twice at one place (the cache keeps
			 * evicting this file's pages under us): the page cache's
			 * path takes over. */
			zc_materialize(r, zc, dst, off);
			r->st.stale++;
			uint64_t keep = r->window;
			ring_reset(r);
			if (stale_at == pos)
				break;
			stale_at = pos;
			if (!ra_start(r, pos, len - done, off + len))
				break;
			r->window = keep > r->window ? keep : r->window;
			continue;
		}
		if (zc && zc->on) {
			/* Pinned until the sink has it (zc_release). */
			zc->iov[zc->n].iov_base = c->buf + (pos - c->start);
			zc->iov[zc->n].iov_len = cp;
			zc->n++;
			done += cp;
			r->st.direct_bytes += cp;
			continue;
		}
		uint64_t t0 = clock_now_ns();
		memcpy(dst + done, c->buf + (pos - c->start), cp);
		r->st.copy_ns += clock_now_ns() - t0;
		done += cp;
		r->st.direct_bytes += cp;
		if (cp == avail) {
			/* Consumed: its slot goes to the next segment at once. */
			ring_pop(r);
			if (off + done >= r->marker) {
				ra_grow(r);
				ra_fill(r, off + done);
			}
		}
	}
	r->next_off = off + done;
	if (r->live && r->window == 2 * (uint64_t)r->max_window && r->ra_end < ext3_inode_size(r->in) &&
	    !r->ra_stop) {
		uint64_t ahead = r->ra_end > r->next_off ? r->ra_end - r->next_off : 0;
		if (!r->st.ahead_samples || ahead < r->st.ahead_min)
			r->st.ahead_min = ahead;
		r->st.ahead_samples++;
	}
	return done;
}

/* After the sink: the pinned segments it consumed go, their slots refilled. */
static void zc_release(struct ext3_fread *r, struct fr_zc *zc, uint64_t end)
{
	for (int k = 0; k < zc->n; k++) {
		struct fr_win *w = seg(r, 0);
		const uint8_t *piece_end = (const uint8_t *)zc->iov[k].iov_base + zc->iov[k].iov_len;
		if (piece_end != w->buf + w->len)
			break; /* the last piece ended inside its segment: it stays */
		ring_pop(r);
		if (end >= r->marker)
			ra_grow(r);
	}
	if (end >= r->marker)
		ra_fill(r, end);
	zc->n = 0;
}

/* A read off the ring: a file written in this mount through its page
 * cache (the buffer cache may hold copies of its blocks older than the
 * pages written since: docs/write-data.md, "Reads"), any other file through
 * the buffer cache, which caches it. */
static ssize_t fread_cached(struct ext3_fread *r, void *buf, size_t len, uint64_t off)
{
	struct ext3_inode *in = r->in;
	if (!ext3_data_written(in))
		return ext3_inode_pread(r->fs, in, buf, len, off);
	ext3_inode_rdlock(in);
	ssize_t n = in->mapping ? page_mapping_read(in->mapping, off, buf, len, in->i_size)
				: ext3_inode_pread_locked(r->fs, in, buf, len, off);
	ext3_inode_unlock(in);
	return n;
}

/* Clamp a request the way ext3_inode_pread does; false: nothing to read. */
static bool fread_clamp(struct ext3_fread *r, size_t *len, uint64_t off)
{
	uint64_t isize = ext3_inode_size(r->in);
	if (off >= isize || *len == 0)
		return false;
	if (*len > isize - off)
		*len = (size_t)(isize - off);
	if (*len > (size_t)SSIZE_MAX)
		*len = (size_t)SSIZE_MAX & ~(size_t)(r->fs->g.block_size - 1);
	return true;
}

/* Is a read of len at off part of a stream (the ring's path)? r->lock held. */
static bool fread_is_stream(struct ext3_fread *r, size_t len, uint64_t off)
{
	return off == r->next_off || len >= FR_LARGE || ring_find(r, off) >= 0 ||
	       (r->live && off == r->ra_end);
}

/* A read off the ring's path: through the buffer cache, which caches it. */
static ssize_t fread_slow(struct ext3_fread *r, uint8_t *buf, size_t len, uint64_t off)
{
	ssize_t n = fread_cached(r, buf, len, off);
	pthread_mutex_lock(&r->lock);
	if (n > 0)
		r->st.slow_bytes += (uint64_t)n;
	if (n >= 0)
		r->next_off = off + (uint64_t)n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* The tail after `done` bytes of the ring: the buffer cache's (errors,
 * dirty cache, no memory). Returns the whole read's count, or the error
 * when nothing was read. */
static ssize_t fread_finish(struct ext3_fread *r, uint8_t *dst, size_t len, uint64_t off,
			    size_t done)
{
	if (done == len)
		return (ssize_t)done;
	ssize_t m = fread_cached(r, dst + done, len - done, off + done);
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

ssize_t ext3_fread_pread(struct ext3_fread *r, void *buf, size_t len, uint64_t off)
{
	if (!fread_clamp(r, &len, off))
		return 0;
	if (!r->max_window)
		return fread_cached(r, buf, len, off);
	pthread_mutex_lock(&r->lock);
	if (!fread_is_stream(r, len, off)) {
		r->next_off = off + len; /* optimistic: the common case is a full read */
		pthread_mutex_unlock(&r->lock);
		return fread_slow(r, buf, len, off);
	}
	size_t done = fread_ring(r, buf, len, off, NULL);
	pthread_mutex_unlock(&r->lock);
	return fread_finish(r, buf, len, off, done);
}

ssize_t ext3_fread_pread_sink(struct ext3_fread *r, void *buf, size_t len, uint64_t off,
			      ext3_read_sink sink, void *arg)
{
	ssize_t n;
	struct iovec one;
	if (!fread_clamp(r, &len, off)) {
		n = 0;
		goto copied;
	}
	if (!r->max_window) {
		n = fread_cached(r, buf, len, off);
		goto copied;
	}
	pthread_mutex_lock(&r->lock);
	if (!fread_is_stream(r, len, off)) {
		r->next_off = off + len;
		pthread_mutex_unlock(&r->lock);
		n = fread_slow(r, buf, len, off);
		goto copied;
	}
	struct fr_zc zc = { .on = true };
	size_t done = fread_ring(r, buf, len, off, &zc);
	if (zc.on && zc.n && done == len) {
		/* Every byte is in pinned segments: the sink reads them there.
		 * r->lock stays held (another reader of this handle waits, as it
		 * would for the copy). */
		int rc = sink(arg, zc.iov, zc.n);
		zc_release(r, &zc, off + done);
		pthread_mutex_unlock(&r->lock);
		return rc < 0 ? rc : (ssize_t)done;
	}
	if (zc.on)
		zc_materialize(r, &zc, buf, off); /* a short ring read: the cache goes on */
	pthread_mutex_unlock(&r->lock);
	n = fread_finish(r, buf, len, off, done);
copied:
	if (n < 0)
		return n;
	one.iov_base = buf;
	one.iov_len = (size_t)n;
	int rc = sink(arg, &one, 1);
	return rc < 0 ? rc : n;
}
