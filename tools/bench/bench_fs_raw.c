/* nostall bench fs: the raw device floors the workloads are printed
 * beside (docs/bench-fs.md). Raw I/O goes straight to dev_submit, without
 * the block layer: the best the device does, not what our queue makes of
 * it. Each runs on the workload's open device after its unmount or before
 * its mkfs: the raw writes land on the filesystem's blocks. */
#include "bench_fs.h"

#include "dev/dev.h"
#include "util/blockmem.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Raw sequential commands in flight: as many as the filesystem's streaming
 * read keeps queued (its ring of 8 segments of two max_hw commands each,
 * docs/ext3-read-path.md), so a ratio compares the filesystem with the
 * device at the same depth. The floor ran 4 deep until 2026-12-06; on file:
 * that read 10-25 % below 16 or 32 deep, and the filesystem beat it by as
 * much (docs/bench-fs.md, "The floor's depth"). sim: devices serve both
 * depths alike. */
#define RAW_DEPTH 16u
#define RAW_CHUNK (1024u * 1024) /* at most; capped at max_hw_sectors */

struct raw_slot {
	struct dev_io io;
	struct raw_ctx *c;
	bool busy;
};

struct raw_ctx {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int err;
};

static void raw_done(struct dev_io *io, int err)
{
	struct raw_slot *s = io->priv;
	pthread_mutex_lock(&s->c->m);
	if (err && !s->c->err)
		s->c->err = err;
	s->busy = false;
	pthread_cond_broadcast(&s->c->cv);
	pthread_mutex_unlock(&s->c->m);
}

/* Wait for a free slot and claim it (mark it busy), or with want_all for
 * every slot to be free; returns the slot's index. */
static unsigned raw_wait(struct raw_ctx *c, struct raw_slot *slots, unsigned n, bool want_all)
{
	pthread_mutex_lock(&c->m);
	for (;;) {
		unsigned free_at = n, nbusy = 0;
		for (unsigned i = 0; i < n; i++) {
			if (slots[i].busy)
				nbusy++;
			else if (free_at == n)
				free_at = i;
		}
		if (want_all ? nbusy == 0 : free_at < n) {
			if (!want_all)
				slots[free_at].busy = true;
			pthread_mutex_unlock(&c->m);
			return free_at;
		}
		pthread_cond_wait(&c->cv, &c->m);
	}
}

/* A raw transfer's buffer and shape: RAW_DEPTH commands of up to
 * RAW_CHUNK (capped by the device) in flight, from and into one buffer in
 * transparent huge pages, as the filesystem's own streaming buffers (the
 * read arena, the page cache's chunks): the device pins a 4 KiB-page buffer
 * page by page, which on the VMs we measure on halves the rate, and the
 * floor is the best the device does. Allocated once per floor: a fresh
 * huge page costs milliseconds to fault in on those VMs. */
struct raw_xfer {
	struct dev *d;
	void *buf;
	uint32_t chunk;
	unsigned depth;
};

static int raw_xfer_init(struct raw_xfer *x, struct dev *d)
{
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	x->d = d;
	x->chunk = RAW_CHUNK;
	if (x->chunk > g.max_hw_sectors * DEV_SECTOR_SIZE)
		x->chunk = g.max_hw_sectors * DEV_SECTOR_SIZE;
	x->depth = g.queue_depth < RAW_DEPTH ? g.queue_depth : RAW_DEPTH;
	x->buf = blockmem_huge_alloc((size_t)x->chunk * x->depth);
	if (!x->buf)
		return err_set(-ENOMEM, "out of memory");
	memset(x->buf, 0x5a, (size_t)x->chunk * x->depth);
	return 0;
}

/* Sequential transfer of `bytes` from `sector`, waiting for the last
 * command (no flush). 0 or a negative errno. */
static int raw_xfer_run(struct raw_xfer *x, enum dev_op op, uint64_t sector, uint64_t bytes)
{
	struct raw_ctx c = { .err = 0 };
	pthread_mutex_init(&c.m, NULL);
	pthread_cond_init(&c.cv, NULL);
	struct raw_slot slots[RAW_DEPTH] = { 0 };
	int rc = 0;
	for (uint64_t done = 0; done < bytes && !rc;) {
		unsigned i = raw_wait(&c, slots, x->depth, false);
		uint32_t len = bytes - done < x->chunk ? (uint32_t)(bytes - done) : x->chunk;
		slots[i].c = &c;
		slots[i].io = (struct dev_io){ .op = op, .sector = sector + done / DEV_SECTOR_SIZE,
					      .nr_sectors = len / DEV_SECTOR_SIZE,
					      .buf = (char *)x->buf + (size_t)i * x->chunk, .done = raw_done,
					      .priv = &slots[i] };
		rc = dev_submit(x->d, &slots[i].io);
		if (rc < 0) {
			pthread_mutex_lock(&c.m);
			slots[i].busy = false;
			pthread_mutex_unlock(&c.m);
		}
		done += len;
	}
	raw_wait(&c, slots, x->depth, true);
	if (!rc)
		rc = c.err;
	pthread_mutex_destroy(&c.m);
	pthread_cond_destroy(&c.cv);
	return rc;
}

/* Sequential transfer of `bytes` from `sector`; a write ends with a cache
 * flush (the filesystem's figure ends with an fsync). Elapsed ns, or a
 * negative errno. */
int64_t fsb_raw_seq(struct dev *d, enum dev_op op, uint64_t sector, uint64_t bytes)
{
	struct raw_xfer x;
	int rc = raw_xfer_init(&x, d);
	if (rc < 0)
		return rc;
	uint64_t t0 = clock_now_ns();
	rc = raw_xfer_run(&x, op, sector, bytes);
	if (!rc && op == DEV_OP_WRITE)
		rc = dev_flush_sync(d);
	uint64_t t1 = clock_now_ns();
	free(x.buf);
	if (rc < 0)
		return err_wrap(rc, "raw %s: ", op == DEV_OP_WRITE ? "write" : "read");
	return (int64_t)(t1 - t0);
}

/* data=journal's floor: what the device allows for the I/O that mode
 * cannot avoid, whoever implements it. Every byte is written twice (into
 * the log, then home) and the log's space comes back only through cache
 * flushes: a commit is durable after one, and a checkpointed transaction's
 * log space may be reused only once its home writes are (jbd2 folds that
 * second flush into the next commit's). So per transaction of `txn` bytes:
 * write them into the log (at log_sector, wrapping in log_bytes), then
 * home (sequential from home_sector), then one flush. Elapsed ns for
 * `bytes` of data, or a negative errno. On a host whose flush writes back
 * what its cache took since the last one, this is far below half the raw
 * write rate (docs/bench-fs.md, "data=journal: the ceiling"). */
int64_t fsb_raw_journal(struct dev *d, uint64_t log_sector, uint64_t log_bytes, uint64_t home_sector,
			   uint64_t bytes, uint64_t txn)
{
	struct raw_xfer x;
	int rc = raw_xfer_init(&x, d);
	if (rc < 0)
		return rc;
	uint64_t t0 = clock_now_ns(), head = 0;
	for (uint64_t done = 0; done < bytes && !rc;) {
		uint64_t n = bytes - done < txn ? bytes - done : txn;
		for (uint64_t left = n; left && !rc;) {
			uint64_t piece = log_bytes - head < left ? log_bytes - head : left;
			rc = raw_xfer_run(&x, DEV_OP_WRITE, log_sector + head / DEV_SECTOR_SIZE, piece);
			head = (head + piece) % log_bytes;
			left -= piece;
		}
		if (!rc)
			rc = raw_xfer_run(&x, DEV_OP_WRITE, home_sector + done / DEV_SECTOR_SIZE, n);
		if (!rc)
			rc = dev_flush_sync(d);
		done += n;
	}
	uint64_t t1 = clock_now_ns();
	free(x.buf);
	if (rc < 0)
		return err_wrap(rc, "raw journal-pattern write: ");
	return (int64_t)(t1 - t0);
}

/* n round trips of a 4 KiB write then a cache flush, alternating between two
 * regions of the filesystem's span (an fsync writes data and then the
 * journal). Elapsed ns. */
int64_t fsb_raw_roundtrips(struct dev *d, unsigned n, uint64_t span)
{
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, 4096))
		return err_set(-ENOMEM, "out of memory");
	memset(buf, 0xa5, 4096);
	uint64_t region[2] = { span / 8 / DEV_SECTOR_SIZE & ~7ull, span / 2 / DEV_SECTOR_SIZE & ~7ull };
	int rc = 0;
	uint64_t t0 = clock_now_ns();
	for (unsigned i = 0; i < n && !rc; i++) {
		rc = dev_rw_sync(d, DEV_OP_WRITE, region[i & 1] + (i / 2 % 1024) * 8, 8, buf, 0);
		if (!rc)
			rc = dev_flush_sync(d);
	}
	uint64_t t1 = clock_now_ns();
	free(buf);
	return rc < 0 ? err_wrap(rc, "raw write+flush: ") : (int64_t)(t1 - t0);
}
