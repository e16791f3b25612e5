/* file:PATH[,depth=N][,direct=0|1][,size=SIZE][,flush_every=SIZE][,inline_io=0|1]
 * — a regular file or block device driven through io_uring.
 *
 * Threads: submitters prepare SQEs under sq_lock; one completion thread reaps
 * CQEs, advances each command's state machine (preflush -> data (retrying
 * short transfers) -> FUA fdatasync) and calls dev_complete(). At most two
 * SQEs per command are in flight, so the completion ring (twice the SQ ring
 * of at least depth + 1 entries) never overflows.
 *
 * A barrier write (PREFLUSH + FUA, the journal's commit block) costs one trip
 * through this thread, not three: the preflush goes as an fsync SQE linked
 * (IOSQE_IO_LINK) to the write, so the kernel starts the write when the
 * flush is done, and FUA is the write's RWF_DSYNC (the host makes that
 * range durable before completing it: a FUA write where the disk has FUA,
 * write + flush where it has not). The link head's CQE carries a tagged
 * user_data (bit 0); a failed head cancels the write, whose CQE then
 * finishes the command with the head's error. A kernel that refuses
 * RWF_DSYNC gets the fdatasync stage instead (no_dsync, sticky).
 *
 * Inline commands (inline_io=1, the default): a command that finds no
 * other command in flight is served in the submitting thread with
 * fdatasync/pread/pwrite, and completed there (dev_complete may be called
 * from submit, as for a discard), when it is a flush or a barrier write
 * with less than INLINE_MAX_UNFLUSHED bytes to carry, or a transfer of at
 * most INLINE_MAX_TRANSFER the block queue sent alone (DEV_IO_ALONE). Why:
 * the host runs an fsync SQE in an io-wq worker, and completes a write
 * SQE through task work in the submitting thread, so through the ring a
 * command costs that worker's or the submitter's wake-up, the completion
 * thread's and the waiter's: on a virtual machine, wake-ups of an idle
 * vCPU cost more than the flush or write of a few blocks (the Jens loop
 * through FUSE with one flush per fsync: 0.61-0.67 -> 0.52-0.58 s,
 * docs/devices.md). The conditions bound what it costs others: the
 * submitter (often the queue runner, which then dispatches nothing else)
 * blocks for one short command of an idle device; a flush that carries a
 * streamer's data, a request others queue behind, or one beside other
 * commands goes through the ring, where the rest keeps moving.
 *
 * Background flushes (flush_every=SIZE, docs/devices.md): once SIZE bytes
 * of writes have completed since the last flush that covers them, the
 * completion thread starts an fdatasync of its own (one at a time). Why: a
 * disk's volatile cache is a few MiB, so a flush costs milliseconds; the
 * "cache" behind a file (the host's page cache, or a VM disk the host
 * caches) holds gigabytes, and a flush then writes everything written since
 * the last one — a journal commit's flush beside a streaming writer took
 * tens of milliseconds for the streamer's data (docs/bench-fs.md). Bounding
 * what is unflushed bounds what a commit's flush must carry. Only while
 * someone waits for flushes: the background flushes start when a command
 * asked for durability (a flush, a barrier write) in the last second
 * (FLUSH_ACTIVE_NS). A streaming writer alone loses 10-20 % of its rate to
 * them on the VM they were measured on (the host's flush slows the writes
 * beside it) and gains nothing; a fsync beside it gains a bounded tail
 * (docs/devices.md has the figures).
 * Accounting:
 * `completed` counts written bytes (monotonic); a flush SQE snapshots it
 * when queued (it covers every write completed before it runs) and, done,
 * raises `durable` to its snapshot; completed - durable is what is
 * unflushed (`durable` only grows: flushed_upto). A background flush's error is kept (bg_err) and returned by
 * the next command that asks for durability (a flush, a barrier write),
 * which the host would otherwise never report again (an fd's writeback
 * error is reported to one fsync).
 */
#include "dev/dev_impl.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/stalltrace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MEM_ALIGN 4096u     /* buffer alignment used for O_DIRECT */
#define FILE_DEFAULT_MAX_SECTORS 1024u
#define FLUSH_ACTIVE_NS NS_PER_SEC /* background flushes this long after a durability command */
#define BG_FLUSH_TAG ((uintptr_t)2) /* user_data of a background flush (file_cmd is 8-aligned) */
#define INLINE_MAX_UNFLUSHED (1u << 20) /* inline durability: at most this much to carry */
#define INLINE_MAX_TRANSFER (128u << 10) /* inline lone reads and writes: at most this long */

enum stage { ST_PREFLUSH, ST_DATA, ST_FUA, ST_FLUSH };

struct file_cmd {
	struct dev_io *io;
	enum stage stage;
	void *bounce;         /* aligned copy of io->buf, or NULL */
	char *data;           /* bounce or io->buf */
	size_t len, xferred;
	uint64_t off;
	bool dsync;           /* data SQEs carry RWF_DSYNC (FUA) */
	bool linked;          /* a preflush head is linked ahead of the data SQE */
	bool head_seen;       /* its CQE arrived (head_err: its error) */
	uint64_t flush_snap;  /* `completed` when its flush SQE was queued */
	bool stashed;         /* the data CQE came first: stashed_res waits */
	int head_err, stashed_res;
	struct file_cmd *next_free;
};

struct file_dev {
	struct dev dev; /* first */
	int fd;
	char *path;     /* as opened (dev_lock's messages and block-device claim) */
	int claim_fd;   /* dev_lock: the O_EXCL claim of a block device, or -1 */
	bool direct;
	bool is_bdev;
	atomic_bool no_dsync; /* the kernel refused RWF_DSYNC once */
	uint64_t flush_every; /* background flush threshold in bytes, 0 = never */
	bool inline_io;    /* inline durability (see the top of this file) */
	atomic_uint inflight; /* commands between file_submit and finish */
	_Atomic uint64_t completed; /* bytes of writes completed (monotonic) */
	_Atomic uint64_t durable; /* `completed` covered by a finished flush (flushed_upto) */
	bool bg_inflight;     /* a background flush is queued (completion thread) */
	uint64_t bg_t0;       /* stalltrace.h: when it was queued */
	bool closing;         /* the close sentinel arrived first: exit after the flush */
	uint64_t bg_snap;     /* its snapshot of `completed` (completion thread) */
	atomic_int bg_err;    /* a background flush failed: the next durability command reports it */
	_Atomic uint64_t bg_flushes; /* finished background flushes (stats) */
	_Atomic uint64_t inline_ios; /* commands served inline (stats) */
	_Atomic uint64_t enters;     /* ring_submit calls: io_uring submissions (stats) */
	_Atomic uint64_t last_durable_ns; /* CLOCK_MONOTONIC of the last durability command */
	struct io_uring ring;
	pthread_t thread;
	pthread_mutex_t sq_lock; /* protects the SQ side of ring and free_cmds */
	struct file_cmd *cmds;
	struct file_cmd *free_cmds;
};

/* A free SQE, submitting queued ones while the SQ is full. Caller holds
 * sq_lock. */
static struct io_uring_sqe *sqe_get(struct file_dev *f)
{
	struct io_uring_sqe *sqe;
	while (!(sqe = io_uring_get_sqe(&f->ring)))
		io_uring_submit(&f->ring);
	return sqe;
}

/* Submit what is queued, retrying interruptions. Caller holds sq_lock. */
static int ring_submit(struct file_dev *f)
{
	int rc;
	atomic_fetch_add_explicit(&f->enters, 1, memory_order_relaxed);
	do
		rc = io_uring_submit(&f->ring);
	while (rc == -EINTR || rc == -EAGAIN);
	return rc;
}

/* Queue the SQE for cmd's current stage. Caller holds sq_lock. */
static void queue_stage(struct file_dev *f, struct file_cmd *c)
{
	struct io_uring_sqe *sqe = sqe_get(f);
	switch (c->stage) {
	case ST_PREFLUSH:
	case ST_FUA:
	case ST_FLUSH:
		io_uring_prep_fsync(sqe, f->fd, IORING_FSYNC_DATASYNC);
		c->flush_snap = atomic_load_explicit(&f->completed, memory_order_relaxed);
		break;
	case ST_DATA:
		if (c->io->op == DEV_OP_READ)
			io_uring_prep_read(sqe, f->fd, c->data + c->xferred, (unsigned)(c->len - c->xferred),
					   c->off + c->xferred);
		else
			io_uring_prep_write(sqe, f->fd, c->data + c->xferred, (unsigned)(c->len - c->xferred),
					    c->off + c->xferred);
		if (c->dsync)
			sqe->rw_flags = RWF_DSYNC;
		break;
	}
	io_uring_sqe_set_data(sqe, c);
}

/* Queue the preflush of a barrier write linked ahead of its data SQE.
 * Caller holds sq_lock. */
static void queue_linked(struct file_dev *f, struct file_cmd *c)
{
	struct io_uring_sqe *sqe;
	/* Both SQEs must go in one submission: a full SQ is flushed first. */
	while (io_uring_sq_space_left(&f->ring) < 2)
		io_uring_submit(&f->ring);
	sqe = io_uring_get_sqe(&f->ring);
	io_uring_prep_fsync(sqe, f->fd, IORING_FSYNC_DATASYNC);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data(sqe, (void *)((uintptr_t)c | 1u));
	c->flush_snap = atomic_load_explicit(&f->completed, memory_order_relaxed);
	c->linked = true;
	c->head_seen = false;
	c->head_err = 0;
	c->stashed = false;
	c->stage = ST_DATA;
	queue_stage(f, c);
}

/* Submit c's current stage; a barrier write's preflush goes linked to its
 * data when `link`. */
static int submit_stage(struct file_dev *f, struct file_cmd *c, bool link, bool defer)
{
	pthread_mutex_lock(&f->sq_lock);
	if (link && c->stage == ST_PREFLUSH && c->len)
		queue_linked(f, c);
	else
		queue_stage(f, c);
	/* Deferred (DEV_IO_MORE): the next submit or file_commit enters. */
	int rc = defer ? 0 : ring_submit(f);
	pthread_mutex_unlock(&f->sq_lock);
	return rc < 0 ? rc : 0;
}

/* A flush covering `snap` finished (the completion thread, or an inline
 * flush in a submitter: durable only grows). */
static void flushed_upto(struct file_dev *f, uint64_t snap)
{
	uint64_t d = atomic_load_explicit(&f->durable, memory_order_relaxed);
	while (snap > d && !atomic_compare_exchange_weak_explicit(&f->durable, &d, snap, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

/* A flush, or a barrier write: someone waits for durability. */
static bool io_asks_durability(const struct dev_io *io)
{
	return io->op == DEV_OP_FLUSH ||
	       (io->op == DEV_OP_WRITE && (io->flags & (DEV_IO_PREFLUSH | DEV_IO_FUA)));
}

static void finish(struct file_dev *f, struct file_cmd *c, int err)
{
	struct dev_io *io = c->io;
	if (!err && io_asks_durability(io))
		err = atomic_exchange(&f->bg_err, 0);
	if (!err && c->bounce && io->op == DEV_OP_READ)
		memcpy(io->buf, c->bounce, c->len);
	free(c->bounce);
	c->bounce = NULL;
	c->io = NULL;
	pthread_mutex_lock(&f->sq_lock);
	c->next_free = f->free_cmds;
	f->free_cmds = c;
	pthread_mutex_unlock(&f->sq_lock);
	atomic_fetch_sub_explicit(&f->inflight, 1, memory_order_relaxed);
	dev_complete(&f->dev, io, err);
}

/* ---- inline durability (inline_io=1) ---- */

/* fdatasync now: every write completed before it is durable after. */
static int inline_fdatasync(struct file_dev *f)
{
	uint64_t snap = atomic_load_explicit(&f->completed, memory_order_relaxed);
	while (fdatasync(f->fd) < 0)
		if (errno != EINTR)
			return -errno;
	flushed_upto(f, snap);
	return 0;
}

/* c's transfer with pread/pwrite, short transfers continued; a FUA write
 * (c->dsync) is one pwritev2(RWF_DSYNC), as through the ring: the host
 * makes the range durable before it returns (a syscall and a sleep less
 * than pwrite + fdatasync). */
static int inline_rw(struct file_dev *f, struct file_cmd *c)
{
	bool wr = c->io->op == DEV_OP_WRITE;
	while (c->xferred < c->len) {
		char *p = c->data + c->xferred;
		size_t left = c->len - c->xferred;
		off_t at = (off_t)(c->off + c->xferred);
		struct iovec iov = { .iov_base = p, .iov_len = left };
		ssize_t n = !wr ? pread(f->fd, p, left, at)
			    : c->dsync ? pwritev2(f->fd, &iov, 1, at, RWF_DSYNC)
				       : pwrite(f->fd, p, left, at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && c->dsync && (errno == EINVAL || errno == EOPNOTSUPP)) {
			/* as advance(): no RWF_DSYNC here, an fdatasync after */
			atomic_store(&f->no_dsync, true);
			c->dsync = false;
			continue;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* no progress: never accept a short transfer */
		c->xferred += (size_t)n;
	}
	if (wr) {
		uint64_t prev = atomic_fetch_add_explicit(&f->completed, c->len, memory_order_relaxed);
		/* A durable write after everything before it was durable (the
		 * preflush, nobody else's write completed since): all is. */
		if (c->dsync && atomic_load_explicit(&f->durable, memory_order_relaxed) == prev)
			flushed_upto(f, prev + c->len);
	}
	return 0;
}

/* Whether the command is served inline: the device is idle but for it,
 * and it is a flush or barrier write with little to carry, or a small
 * transfer the block queue sent alone (DEV_IO_ALONE: nothing waits behind
 * it there either). */
static bool inline_wanted(struct file_dev *f, const struct dev_io *io)
{
	if (!f->inline_io || atomic_load_explicit(&f->inflight, memory_order_relaxed) != 1)
		return false;
	if (io_asks_durability(io)) {
		uint64_t durable = atomic_load_explicit(&f->durable, memory_order_relaxed);
		return atomic_load_explicit(&f->completed, memory_order_relaxed) - durable < INLINE_MAX_UNFLUSHED;
	}
	return (io->flags & DEV_IO_ALONE) && (io->op == DEV_OP_READ || io->op == DEV_OP_WRITE) &&
	       ((uint64_t)io->nr_sectors << DEV_SECTOR_SHIFT) <= INLINE_MAX_TRANSFER;
}

/* Preflush, transfer, FUA, in this thread; then finish() completes it here. */
static void inline_run(struct file_dev *f, struct file_cmd *c)
{
	const struct dev_io *io = c->io;
	int rc = 0;
	atomic_fetch_add_explicit(&f->inline_ios, 1, memory_order_relaxed);
	if (io->op == DEV_OP_FLUSH || (io->flags & DEV_IO_PREFLUSH))
		rc = inline_fdatasync(f);
	if (rc == 0 && io->op != DEV_OP_FLUSH && c->len) {
		rc = inline_rw(f, c);
		if (rc == 0 && io->op == DEV_OP_WRITE && (io->flags & DEV_IO_FUA) && !c->dsync)
			rc = inline_fdatasync(f);
	}
	finish(f, c, rc);
}

/* A write of len bytes completed (completion thread): start a background
 * flush when flush_every bytes are unflushed and none is queued. */
static void write_done(struct file_dev *f, size_t len)
{
	uint64_t done = atomic_fetch_add_explicit(&f->completed, len, memory_order_relaxed) + len;
	if (!f->flush_every || f->bg_inflight ||
	    done - atomic_load_explicit(&f->durable, memory_order_relaxed) < f->flush_every)
		return;
	if (clock_now_ns() - atomic_load_explicit(&f->last_durable_ns, memory_order_relaxed) > FLUSH_ACTIVE_NS)
		return; /* nobody waits for a flush */
	pthread_mutex_lock(&f->sq_lock);
	struct io_uring_sqe *sqe = sqe_get(f);
	io_uring_prep_fsync(sqe, f->fd, IORING_FSYNC_DATASYNC);
	io_uring_sqe_set_data(sqe, (void *)BG_FLUSH_TAG);
	(void)ring_submit(f);
	pthread_mutex_unlock(&f->sq_lock);
	/* A failed submit leaves the SQE queued: the next submit sends it. */
	f->bg_inflight = true;
	f->bg_snap = done;
	f->bg_t0 = stalltrace_t0();
	stalltrace_mark("dev bg flush start (unflushed MiB)",
			(done - atomic_load_explicit(&f->durable, memory_order_relaxed)) >> 20);
}

/* The CQE of a background flush (completion thread). */
static void bg_flush_done(struct file_dev *f, int res)
{
	f->bg_inflight = false;
	stalltrace_span("dev bg flush", f->bg_t0, stalltrace__now(), 0, 0);
	if (res >= 0) {
		flushed_upto(f, f->bg_snap);
		atomic_fetch_add_explicit(&f->bg_flushes, 1, memory_order_relaxed);
		return;
	}
	if (res == -EINTR || res == -EAGAIN)
		return; /* the next write past the threshold tries again */
	int none = 0;
	atomic_compare_exchange_strong(&f->bg_err, &none, res);
}

/* Advance c after its SQE completed with `res`. */
static void advance(struct file_dev *f, struct file_cmd *c, int res)
{
	if (c->linked) {
		if (!c->head_seen) {
			c->stashed = true; /* the head's CQE settles it */
			c->stashed_res = res;
			return;
		}
		c->linked = false;
		if (c->head_err == -EINTR || c->head_err == -EAGAIN) {
			/* The write was cancelled: start again, unlinked. */
			c->stage = ST_PREFLUSH;
			int rc = submit_stage(f, c, false, false);
			if (rc)
				finish(f, c, rc);
			return;
		}
		if (c->head_err) {
			finish(f, c, c->head_err);
			return;
		}
	}
	if (res < 0 && c->dsync && c->stage == ST_DATA && (res == -EINVAL || res == -EOPNOTSUPP)) {
		/* A kernel without RWF_DSYNC for this file: fdatasync stages from
		 * now on (an unrelated EINVAL fails again below, without it). */
		atomic_store(&f->no_dsync, true);
		c->dsync = false;
	} else if (res == -EINTR || res == -EAGAIN) {
		/* Retry the same stage. */
	} else if (res < 0) {
		finish(f, c, res);
		return;
	} else {
		switch (c->stage) {
		case ST_PREFLUSH:
			flushed_upto(f, c->flush_snap);
			c->stage = ST_DATA;
			break;
		case ST_DATA:
			if (res == 0) {
				finish(f, c, -EIO); /* no progress: never accept a short transfer */
				return;
			}
			c->xferred += (size_t)res;
			if (c->xferred < c->len)
				break; /* short: transfer the rest */
			if (c->io->op == DEV_OP_WRITE)
				write_done(f, c->len);
			if (c->io->op == DEV_OP_WRITE && (c->io->flags & DEV_IO_FUA) && !c->dsync) {
				c->stage = ST_FUA;
				break;
			}
			finish(f, c, 0);
			return;
		case ST_FUA:
		case ST_FLUSH:
			flushed_upto(f, c->flush_snap);
			finish(f, c, 0);
			return;
		}
	}
	int rc = submit_stage(f, c, true, false);
	if (rc)
		finish(f, c, rc);
}

/* The CQE of a linked preflush. */
static void advance_head(struct file_dev *f, struct file_cmd *c, int res)
{
	c->head_seen = true;
	c->head_err = res < 0 ? res : 0;
	if (res >= 0)
		flushed_upto(f, c->flush_snap);
	if (c->stashed) {
		c->stashed = false;
		advance(f, c, c->stashed_res);
	}
}

static void *completion_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-file-cq"); /* top, perf, gdb */
	struct file_dev *f = arg;
	for (;;) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_wait_cqe(&f->ring, &cqe);
		if (rc == -EINTR || rc == -EAGAIN)
			continue;
		if (rc < 0) {
			fprintf(stderr, "nostall: file device %s: io_uring_wait_cqe: %s\n", dev_spec(&f->dev),
				strerror(-rc));
			abort(); /* commands would hang otherwise */
		}
		uintptr_t tag = (uintptr_t)io_uring_cqe_get_data(cqe);
		struct file_cmd *c = (struct file_cmd *)(tag & ~(uintptr_t)1);
		int res = cqe->res;
		io_uring_cqe_seen(&f->ring, cqe);
		if (!c) {
			/* the close sentinel: a background flush still queued is
			 * waited for (its CQE must not outlive the ring) */
			if (!f->bg_inflight)
				return NULL;
			f->closing = true;
			continue;
		}
		if (tag == BG_FLUSH_TAG) {
			bg_flush_done(f, res);
			if (f->closing)
				return NULL;
			continue;
		}
		/* The SQE went through the kernel, which thread sanitizers do not
		 * see: pair with the submitter's unlock so that its writes to *c
		 * (and to the data buffer) visibly happen before ours. */
		pthread_mutex_lock(&f->sq_lock);
		pthread_mutex_unlock(&f->sq_lock);
		if (tag & 1u)
			advance_head(f, c, res);
		else
			advance(f, c, res);
	}
}

static int do_discard(struct file_dev *f, const struct dev_io *io)
{
	uint64_t off = io->sector << DEV_SECTOR_SHIFT, len = (uint64_t)io->nr_sectors << DEV_SECTOR_SHIFT;
	if (f->is_bdev) {
		uint64_t range[2] = { off, len };
		if (ioctl(f->fd, BLKDISCARD, range) < 0 && errno != EOPNOTSUPP)
			return -errno;
		return 0;
	}
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0 &&
	    errno != EOPNOTSUPP)
		return -errno;
	return 0; /* "data may read back as zeroes or as old data" */
}

static int file_submit(struct dev *d, struct dev_io *io)
{
	struct file_dev *f = (struct file_dev *)d;
	if (io->op == DEV_OP_DISCARD) {
		dev_complete(d, io, do_discard(f, io));
		return 0;
	}
	pthread_mutex_lock(&f->sq_lock);
	struct file_cmd *c = f->free_cmds;
	if (c)
		f->free_cmds = c->next_free;
	pthread_mutex_unlock(&f->sq_lock);
	if (!c)
		return -EBUSY; /* cannot happen: dev.c enforces the depth */
	atomic_fetch_add_explicit(&f->inflight, 1, memory_order_relaxed);
	c->io = io;
	c->bounce = NULL;
	c->xferred = 0;
	c->off = io->sector << DEV_SECTOR_SHIFT;
	c->len = (size_t)io->nr_sectors << DEV_SECTOR_SHIFT;
	c->data = io->buf;
	c->linked = false;
	c->dsync = io->op == DEV_OP_WRITE && (io->flags & DEV_IO_FUA) && !atomic_load(&f->no_dsync);
	if (f->flush_every && io_asks_durability(io))
		atomic_store_explicit(&f->last_durable_ns, clock_now_ns(), memory_order_relaxed);
	if (io->op == DEV_OP_FLUSH) {
		c->stage = ST_FLUSH;
	} else {
		c->stage = (io->op == DEV_OP_WRITE && (io->flags & DEV_IO_PREFLUSH)) ? ST_PREFLUSH : ST_DATA;
		if (f->direct && ((uintptr_t)io->buf % FILE_MEM_ALIGN)) {
			c->bounce = aligned_alloc(FILE_MEM_ALIGN, (c->len + FILE_MEM_ALIGN - 1) /
							  FILE_MEM_ALIGN * FILE_MEM_ALIGN);
			if (!c->bounce) {
				c->io = NULL;
				pthread_mutex_lock(&f->sq_lock);
				c->next_free = f->free_cmds;
				f->free_cmds = c;
				pthread_mutex_unlock(&f->sq_lock);
				atomic_fetch_sub_explicit(&f->inflight, 1, memory_order_relaxed);
				return -ENOMEM;
			}
			if (io->op == DEV_OP_WRITE)
				memcpy(c->bounce, io->buf, c->len);
			c->data = c->bounce;
		}
	}
	if (inline_wanted(f, io)) {
		inline_run(f, c);
		return 0;
	}
	int rc = submit_stage(f, c, true, (io->flags & DEV_IO_MORE) != 0);
	if (rc) {
		/* The SQE may still be queued; completing through finish() keeps
		 * the slot bookkeeping simple. */
		finish(f, c, rc);
	}
	return 0;
}

/* Enter the SQEs file_submit queued without entering (DEV_IO_MORE). */
static void file_commit(struct dev *d)
{
	struct file_dev *f = (struct file_dev *)d;
	pthread_mutex_lock(&f->sq_lock);
	if (io_uring_sq_ready(&f->ring))
		(void)ring_submit(f); /* a failure leaves them queued: the next submit sends them */
	pthread_mutex_unlock(&f->sq_lock);
}

static void file_close(struct dev *d)
{
	struct file_dev *f = (struct file_dev *)d;
	/* No command is outstanding (a background flush may be): a NOP with
	 * NULL data stops the thread, after that flush's CQE. */
	pthread_mutex_lock(&f->sq_lock);
	struct io_uring_sqe *sqe = sqe_get(f);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, NULL);
	(void)ring_submit(f);
	pthread_mutex_unlock(&f->sq_lock);
	pthread_join(f->thread, NULL);
	io_uring_queue_exit(&f->ring);
	pthread_mutex_destroy(&f->sq_lock);
	if (f->claim_fd >= 0)
		close(f->claim_fd);
	close(f->fd); /* lets go of the flock too */
	free(f->path);
	free(f->cmds);
	free(f);
}

static int file_lock(struct dev *d, enum dev_lock_mode mode)
{
	struct file_dev *f = (struct file_dev *)d;
	return dev_file_lock(f->fd, f->path, f->is_bdev, mode, &f->claim_fd);
}

static const struct dev_ops file_ops = {
	.kind = "file",
	.submit = file_submit,
	.commit = file_commit,
	.close = file_close,
	.lock = file_lock,
};

static const struct file_dev *find_file(const struct dev *d)
{
	while (d && d->ops != &file_ops)
		d = d->ops->inner ? d->ops->inner(d) : NULL;
	return (const struct file_dev *)d;
}

int dev_file_stats(const struct dev *d, struct dev_file_stats *out)
{
	const struct file_dev *f = find_file(d);
	if (!f)
		return err_set(-EINVAL, "device '%s' is not a file: device", dev_spec(d));
	/* durable first: it never passes completed, so unflushed stays >= 0 */
	uint64_t durable = atomic_load_explicit(&f->durable, memory_order_relaxed);
	out->written = atomic_load_explicit(&f->completed, memory_order_relaxed);
	out->unflushed = out->written - durable;
	out->bg_flushes = atomic_load_explicit(&f->bg_flushes, memory_order_relaxed);
	out->inline_ios = atomic_load_explicit(&f->inline_ios, memory_order_relaxed);
	out->enters = atomic_load_explicit(&f->enters, memory_order_relaxed);
	return 0;
}

/* ---- open ---- */

/* Can this fd do O_DIRECT reads of `lbs` bytes? */
static int probe_direct(int fd, unsigned lbs)
{
	void *buf = aligned_alloc(FILE_MEM_ALIGN, FILE_MEM_ALIGN);
	if (!buf)
		return -ENOMEM;
	ssize_t n = pread(fd, buf, lbs, 0);
	int rc = n < 0 ? -errno : 0;
	free(buf);
	return rc;
}

char *dev_file_spec_path(const char *args)
{
	char *path, *optstr;
	if (dev_split_spec(args, dev_file_opt_names, &path, &optstr))
		return NULL;
	free(optstr);
	return path;
}

int dev_file_open(const char *args, struct dev **out)
{
	char *path, *optstr;
	if (dev_split_spec(args, dev_file_opt_names, &path, &optstr))
		return err_set(-ENOMEM, "out of memory");
	struct dev_file_opts o;
	int rc = dev_file_opts_parse(optstr, &o);
	free(optstr);
	if (rc) {
		free(path);
		return rc;
	}
	if (!*path) {
		free(path);
		return err_set(-EINVAL, "file: missing path (file:PATH[,depth=N][,direct=0|1][,size=SIZE][,flush_every=SIZE][,inline_io=0|1])");
	}
	if (strchr(path, ',')) {
		/* Probably a misspelt option: the right-end rule left it in the path. */
		struct stat st0;
		if (stat(path, &st0) < 0) {
			rc = err_set(-EINVAL, "file: '%s': no such file, and '%s' is not a file option "
					      "(depth, direct, size, flush_every, inline_io)", path, strrchr(path, ',') + 1);
			free(path);
			return rc;
		}
	}

	int fd = -1;
	bool direct = o.direct != 0;
	if (direct) {
		fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
		if (fd < 0 && errno == EINVAL && o.direct == -1)
			direct = false;
	}
	if (!direct)
		fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = err_set(-errno, "file: cannot open '%s'%s: %s", path, direct && errno == EINVAL ? " with O_DIRECT" : "",
			     strerror(errno));
		free(path);
		return rc;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		rc = err_set(-errno, "file: cannot stat '%s': %s", path, strerror(errno));
		goto fail_fd;
	}
	struct dev_geometry g = {
		.rotational = false,
		.queue_depth = (unsigned)o.depth,
		.max_hw_sectors = FILE_DEFAULT_MAX_SECTORS,
		.logical_block_size = 512,
		.has_write_cache = true,
	};
	bool is_bdev = S_ISBLK(st.st_mode);
	uint64_t v;
	if (is_bdev) {
		uint64_t bytes = 0;
		int ssz = 512;
		if (ioctl(fd, BLKGETSIZE64, &bytes) < 0) {
			rc = err_set(-errno, "file: BLKGETSIZE64 on '%s': %s", path, strerror(errno));
			goto fail_fd;
		}
		if (ioctl(fd, BLKSSZGET, &ssz) == 0 && (ssz == 512 || ssz == 4096))
			g.logical_block_size = (unsigned)ssz;
		g.size_bytes = bytes;
		if (dev_file_queue_attr(st.st_rdev, "rotational", &v))
			g.rotational = v != 0;
		if (dev_file_queue_attr(st.st_rdev, "max_hw_sectors_kb", &v) && v >= 4)
			g.max_hw_sectors = (unsigned)(v * 2 < 2048 ? v * 2 : 2048);
		if (o.size) {
			rc = err_set(-EINVAL, "file: size= is for regular files, '%s' is a block device", path);
			goto fail_fd;
		}
	} else if (S_ISREG(st.st_mode)) {
		if (o.size > (uint64_t)st.st_size) {
			if (ftruncate(fd, (off_t)o.size) < 0) {
				rc = err_set(-errno, "file: cannot extend '%s' to %" PRIu64 " bytes: %s", path, o.size,
					     strerror(errno));
				goto fail_fd;
			}
			st.st_size = (off_t)o.size;
		}
		g.size_bytes = (uint64_t)st.st_size;
		if (dev_file_queue_attr(st.st_dev, "rotational", &v))
			g.rotational = v != 0;
	} else {
		rc = err_set(-EINVAL, "file: '%s' is neither a regular file nor a block device", path);
		goto fail_fd;
	}
	g.size_bytes &= ~(uint64_t)(g.logical_block_size - 1);
	if (g.size_bytes == 0) {
		rc = err_set(-EINVAL, "file: '%s' is empty (use size= to extend it)", path);
		goto fail_fd;
	}
	if (direct) {
		/* The filesystem may want 4 KiB-aligned offsets; else fall back. */
		rc = probe_direct(fd, g.logical_block_size);
		if (rc == -EINVAL && g.logical_block_size == 512) {
			rc = probe_direct(fd, 4096);
			if (rc == 0)
				g.logical_block_size = 4096;
		}
		if (rc) {
			if (o.direct == 1) {
				rc = err_set(rc, "file: O_DIRECT I/O on '%s' fails: %s", path, strerror(-rc));
				goto fail_fd;
			}
			int fd2 = open(path, O_RDWR | O_CLOEXEC);
			if (fd2 < 0) {
				rc = err_set(-errno, "file: cannot reopen '%s': %s", path, strerror(errno));
				goto fail_fd;
			}
			close(fd);
			fd = fd2;
			direct = false;
			g.logical_block_size = is_bdev ? g.logical_block_size : 512;
		}
	}

	struct file_dev *f = calloc(1, sizeof(*f));
	if (!f) {
		rc = err_set(-ENOMEM, "out of memory");
		goto fail_fd;
	}
	f->fd = fd;
	f->claim_fd = -1;
	f->direct = direct;
	f->is_bdev = is_bdev;
	f->flush_every = o.flush_every;
	f->inline_io = o.inline_io;
	f->cmds = calloc(o.depth, sizeof(*f->cmds));
	if (!f->cmds) {
		free(f);
		rc = err_set(-ENOMEM, "out of memory");
		goto fail_fd;
	}
	for (size_t i = 0; i < o.depth; i++) {
		f->cmds[i].next_free = f->free_cmds;
		f->free_cmds = &f->cmds[i];
	}
	unsigned entries = 1;
	while (entries < o.depth + 1)
		entries <<= 1;
	rc = io_uring_queue_init(entries, &f->ring, 0);
	if (rc < 0) {
		rc = err_set(rc, "file: io_uring_queue_init(%u): %s", entries, strerror(-rc));
		goto fail_f;
	}
	pthread_mutex_init(&f->sq_lock, NULL);
	rc = dev_init(&f->dev, &file_ops, &g);
	if (rc)
		goto fail_ring;
	rc = pthread_create(&f->thread, NULL, completion_thread, f);
	if (rc) {
		rc = err_set(-rc, "file: cannot start the completion thread");
		dev_fini(&f->dev);
		goto fail_ring;
	}
	f->path = path;
	*out = &f->dev;
	return 0;

fail_ring:
	pthread_mutex_destroy(&f->sq_lock);
	io_uring_queue_exit(&f->ring);
fail_f:
	free(f->cmds);
	free(f);
fail_fd:
	close(fd);
	free(path);
	return rc;
}
