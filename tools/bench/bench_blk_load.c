/* nostall bench blk: the load machinery (bench_blk.h). */
#include "bench_blk.h"

#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bench_env_open(struct bench *b, struct env *e, const char *spec, const char *config_opts)
{
	memset(e, 0, sizeof *e);
	int rc = dev_open(spec, &e->dev);
	if (rc < 0) {
		fprintf(stderr, "nostall bench: device '%s': %s\n", spec, err_last(rc));
		return rc;
	}
	struct dev_geometry g;
	dev_geometry_get(e->dev, &g);
	e->dev_sectors = g.size_bytes >> DEV_SECTOR_SHIFT;
	rc = blk_queue_create(e->dev, b->opts, &e->q);
	if (rc < 0) {
		fprintf(stderr, "nostall bench: -o %s: %s\n", b->opts ? b->opts : "", err_last(rc));
		dev_close(e->dev);
		return rc;
	}
	rc = blk_queue_set_opts(e->q, config_opts);
	if (rc < 0) {
		fprintf(stderr, "nostall bench: config %s: %s\n", config_opts, err_last(rc));
		blk_queue_destroy(e->q);
		dev_close(e->dev);
		return rc;
	}
	e->buf_len = 1 * MiB;
	if (posix_memalign(&e->buf, 4096, e->buf_len)) {
		blk_queue_destroy(e->q);
		dev_close(e->dev);
		return -ENOMEM;
	}
	memset(e->buf, 0x5a, e->buf_len);
	return 0;
}

/* Wait for the fire-and-forget load, then tear down. A run whose I/O failed
 * reports it: its figures would mean nothing. Returns rc if it is already an
 * error, else the teardown's verdict. */
int bench_env_close(struct env *e, int rc)
{
	atomic_store(&e->stop, true);
	blk_queue_unplug(e->q);
	while (atomic_load(&e->outstanding))
		clock_sleep_ns(NS_PER_MS);
	blk_queue_destroy(e->q);
	dev_close(e->dev);
	free(e->buf);
	int errs = atomic_load(&e->io_errors);
	if (rc < 0)
		return rc;
	if (errs)
		return err_set(-EIO, "%d I/O request(s) failed on the device", errs);
	return 0;
}

static void async_end_io(struct bio *bio, int err)
{
	struct env *e = bio->private;
	if (err)
		atomic_fetch_add(&e->io_errors, 1);
	else
		atomic_fetch_add(&e->async_bytes, bio->size);
	atomic_fetch_sub(&e->outstanding, 1);
	free(bio);
}

/* Fire-and-forget one bio (the page-cache writeback shape). Sleeps in the
 * block layer when the request pool is full. */
int bench_submit_async(struct env *e, unsigned rw, uint64_t sector, uint32_t bytes)
{
	struct bio *bio = calloc(1, sizeof *bio);
	if (!bio)
		return -ENOMEM;
	bio->sector = sector;
	bio->size = bytes;
	bio->data = e->buf;
	bio->rw = rw;
	bio->end_io = async_end_io;
	bio->private = e;
	atomic_fetch_add(&e->outstanding, 1);
	int rc = blk_submit_bio(e->q, bio);
	if (rc < 0) {
		atomic_fetch_sub(&e->outstanding, 1);
		free(bio);
	}
	return rc;
}

/* Submit `n` bios of `bytes` at consecutive sectors with op rw, then
 * optionally a commit-like bio with commit_rw at commit_sector, and wait for
 * all of them (the wait unplugs). Returns elapsed ns or a negative errno. */
int64_t bench_sync_batch(struct env *e, unsigned rw, uint64_t sector, unsigned n, uint32_t bytes,
			 unsigned commit_rw, uint64_t commit_sector)
{
	struct bio bios[65];
	if (n > 64)
		n = 64;
	struct blk_batch batch;
	blk_batch_init(&batch);
	uint64_t t0 = clock_now_ns();
	int rc = 0;
	for (unsigned i = 0; i < n && !rc; i++) {
		bios[i] = (struct bio){ .sector = sector + (uint64_t)i * (bytes >> DEV_SECTOR_SHIFT), .size = bytes,
					.data = e->buf, .rw = rw };
		rc = blk_batch_submit(e->q, &batch, &bios[i]);
	}
	if (!rc && commit_rw != ~0u) {
		/* The commit block goes out after the log blocks are done. */
		rc = blk_batch_wait(e->q, &batch);
		bios[n] = (struct bio){ .sector = commit_sector, .size = 4096, .data = e->buf, .rw = commit_rw };
		if (!rc)
			rc = blk_batch_submit(e->q, &batch, &bios[n]);
	}
	int werr = blk_batch_wait(e->q, &batch);
	blk_batch_destroy(&batch);
	if (rc < 0 || werr < 0)
		return rc < 0 ? rc : werr;
	return (int64_t)(clock_now_ns() - t0);
}


static uint64_t rnd_next(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void *streamer_main(void *arg)
{
	struct streamer *s = arg;
	struct env *e = s->e;
	if (s->ioprio_class)
		blk_ioprio_set(s->ioprio_class, s->ioprio_level);
	uint64_t step = s->bytes >> DEV_SECTOR_SHIFT;
	uint64_t pos = 0;
	while (!atomic_load(&e->stop) && !atomic_load(&e->io_errors)) {
		uint64_t off;
		if (s->random)
			off = (rnd_next(&s->seed) % (s->len / 8 - step / 8 + 1)) * 8;
		else {
			if (pos + step > s->len)
				pos = 0;
			off = pos;
			pos += step;
		}
		if (bench_submit_async(e, s->rw, s->start + off, s->bytes) < 0)
			break;
		if (s->think_ns)
			clock_sleep_ns(s->think_ns);
	}
	return NULL;
}

static int streamer_start(struct streamer *s)
{
	return -pthread_create(&s->tid, NULL, streamer_main, s);
}


void bench_flood_start(struct bench *b, struct env *e, struct flood *f, int n, uint32_t bytes, bool random)
{
	f->n = n < 4 ? n : 4;
	for (int i = 0; i < f->n; i++) {
		f->w[i] = (struct streamer){ .e = e, .rw = BLK_WRITE, .bytes = bytes, .start = bench_region(e, 0.05 + 0.1 * i),
					     .len = bench_span(e, 256 * MiB), .random = random,
					     .seed = 0x9e3779b97f4a7c15ull + (uint64_t)i };
		streamer_start(&f->w[i]);
	}
	clock_sleep_ns(bench_scaled(b, 500 * NS_PER_MS));
	blk_queue_stats_reset(e->q);
	atomic_store(&e->async_bytes, 0);
	f->t0 = clock_now_ns();
}

/* The flood's throughput since flood_start, in MiB/s. */
double bench_flood_mbps(struct env *e, struct flood *f)
{
	double secs = (double)(clock_now_ns() - f->t0) / 1e9;
	return (double)atomic_load(&e->async_bytes) / MiB / secs;
}

/* Tear the environment down and join the streams. */
int bench_flood_stop(struct env *e, struct flood *f, int rc)
{
	rc = bench_env_close(e, rc);
	for (int i = 0; i < f->n; i++)
		pthread_join(f->w[i].tid, NULL);
	return rc;
}

int bench_flood_run_begin(struct bench *b, struct flood_run *fr, const char *spec, const char *config_opts,
			  int streams, uint32_t bytes, bool random)
{
	int rc = bench_env_open(b, &fr->e, spec, config_opts);
	if (rc)
		return rc;
	bench_flood_start(b, &fr->e, &fr->f, streams, bytes, random);
	hist_init(&fr->h);
	fr->n = 0;
	return 0;
}

int bench_flood_run_end(struct flood_run *fr, int rc)
{
	fr->mbps = bench_flood_mbps(&fr->e, &fr->f);
	blk_queue_stats_get(fr->e.q, &fr->st);
	return bench_flood_stop(&fr->e, &fr->f, rc);
}

/* Repeat a single 4 KiB sync write (op) and wait, every period, for
 * `seconds`; latencies into h. */
double bench_cap(const struct bench *b, double seconds)
{
	return seconds * (b->cap_factor > 1 ? b->cap_factor : 1);
}

bool bench_more(const struct bench *b, double seconds, uint64_t t0, uint64_t count)
{
	double el = (double)(clock_now_ns() - t0) / 1e9;
	if (el < seconds)
		return true;
	return count < BENCH_MIN_SAMPLES && el < bench_cap(b, seconds);
}

int bench_sync_write_loop(struct bench *b, struct env *e, unsigned op, double seconds, uint64_t period_ns,
			  struct hist *h, uint64_t *count)
{
	uint64_t t0 = clock_now_ns();
	uint64_t base = bench_region(e, 0.5);
	while (bench_more(b, seconds, t0, *count)) {
		int64_t t = bench_sync_batch(e, op, base + (*count % 4096) * 8, 1, 4096, ~0u, 0);
		if (t < 0)
			return (int)t;
		hist_add(h, (uint64_t)t);
		(*count)++;
		clock_sleep_ns(bench_scaled(b, period_ns));
	}
	return 0;
}


void *bench_reader_main(void *arg)
{
	struct reader *r = arg;
	struct env *e = r->e;
	uint64_t step = r->bytes >> DEV_SECTOR_SHIFT, pos = 0;
	while (!atomic_load(&e->stop)) {
		if (pos + step > r->len)
			pos = 0;
		struct bio bio = { .sector = r->start + pos, .size = r->bytes, .data = r->buf, .rw = BLK_READ };
		if (blk_submit_bio_wait(e->q, &bio) < 0) {
			atomic_fetch_add(&e->io_errors, 1);
			break;
		}
		atomic_fetch_add(&r->done_bytes, r->bytes);
		pos += step;
	}
	return NULL;
}

double bench_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

uint64_t bench_scaled(struct bench *b, uint64_t ns)
{
	return (uint64_t)((double)ns * b->scale);
}

/* Region helpers: keep loads inside the first GiBs so simulated disks stay
 * small in memory, but far enough apart that they seek. */
uint64_t bench_region(struct env *e, double frac)
{
	uint64_t s = (uint64_t)((double)e->dev_sectors * frac);
	return s & ~7ull;
}

uint64_t bench_span(struct env *e, uint64_t want_bytes)
{
	uint64_t s = want_bytes >> DEV_SECTOR_SHIFT;
	uint64_t max = e->dev_sectors / 8;
	return (s < max ? s : max) & ~7ull;
}

/* A journal-like sync submitter: every `period`, a plugged batch of `n`
 * 4 KiB writes with the queue's batch op, then a commit block, then wait.
 * Records each batch's latency. */
int bench_fsync_loop(struct bench *b, struct env *e, double seconds, unsigned n, uint64_t period_ns,
		     struct hist *h, uint64_t *count)
{
	unsigned op = blk_queue_sync_batch_op(e->q);
	/* The commit block: WRITE under 2.6.29 (sync_dirty_buffer was WRITE),
	 * WRITE_SYNC otherwise. */
	unsigned commit_op = op == BLK_WRITE ? BLK_WRITE : BLK_WRITE_SYNC;
	uint64_t jbase = bench_region(e, 0.45), jlen = bench_span(e, 64 * MiB), jpos = 0;
	uint64_t t0 = clock_now_ns();
	while (bench_more(b, seconds, t0, *count)) {
		uint64_t start = clock_now_ns();
		if (jpos + (n + 1) * 8 > jlen)
			jpos = 0;
		int64_t t = bench_sync_batch(e, op, jbase + jpos, n, 4096, commit_op, jbase + jpos + n * 8);
		if (t < 0)
			return (int)t;
		jpos += (n + 1) * 8;
		hist_add(h, (uint64_t)t);
		(*count)++;
		uint64_t next = start + period_ns;
		if (clock_now_ns() < next)
			clock_sleep_until_ns(next);
	}
	return 0;
}
