/* sim: device models. Timing assertions use the modelled-time accounting
 * (dev_sim_stats), which does not depend on how fast the host runs, except
 * where noted.
 * nostall-test: concurrent */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000000ull

static struct dev *open_ok(const char *spec)
{
	struct dev *d = NULL;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	return d;
}

static struct dev_sim_stats stats(struct dev *d)
{
	struct dev_sim_stats st;
	assert_int_equal(dev_sim_stats(d, &st), 0);
	return st;
}

static void test_sim_geometry(void **state)
{
	(void)state;
	struct dev_geometry g;
	struct dev *d = open_ok("sim:hdd");
	dev_geometry_get(d, &g);
	assert_true(g.rotational);
	assert_int_equal(g.queue_depth, 31);
	assert_int_equal(g.size_bytes, 64ull << 30);
	assert_int_equal(g.max_hw_sectors, 1024);
	assert_false(g.has_write_cache);
	dev_close(d);
	d = open_ok("sim:ssd,size=1G,wcache=1,depth=8");
	dev_geometry_get(d, &g);
	assert_false(g.rotational);
	assert_int_equal(g.queue_depth, 8);
	assert_int_equal(g.size_bytes, 1ull << 30);
	assert_true(g.has_write_cache);
	dev_close(d);
	d = open_ok("sim:ssd-nq");
	dev_geometry_get(d, &g);
	assert_false(g.rotational);
	assert_int_equal(g.queue_depth, 1);
	dev_close(d);
	struct dev_sim_stats st;
	d = open_ok("mem:1M");
	assert_int_equal(dev_sim_stats(d, &st), -EINVAL);
	assert_int_equal(dev_sim_modelled_ns(d), 0);
	dev_close(d);
}

static void test_sim_data_roundtrip(void **state)
{
	(void)state;
	const char *specs[] = { "sim:hdd,scale=0.001", "sim:ssd,scale=0.001", "sim:ssd-nq,scale=0.001",
				"sim:hdd,scale=0.001,wcache=1" };
	char w[65536], r[65536];
	for (size_t k = 0; k < 4; k++) {
		struct dev *d = open_ok(specs[k]);
		for (size_t i = 0; i < sizeof(w); i++)
			w[i] = (char)(i * 13 + k);
		assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 1000000, 128, w, 0), 0);
		assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 1000000, 128, r, 0), 0);
		assert_memory_equal(w, r, sizeof(w));
		assert_int_equal(dev_flush_sync(d), 0);
		assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 8, 8, w, DEV_IO_PREFLUSH | DEV_IO_FUA), 0);
		assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 8, 8, r, 0), 0);
		assert_memory_equal(w, r, 4096);
		struct dev_sim_stats st = stats(d);
		assert_int_equal(st.commands, 5);
		assert_int_equal(st.writes, 2);
		assert_int_equal(st.reads, 2);
		assert_int_equal(st.flushes, 1);
		assert_true(st.modelled_ns > 0);
		dev_close(d);
	}
}

static void test_sim_file_backed(void **state)
{
	(void)state;
	char path[] = "/tmp/nostall-sim-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	char spec[256];
	snprintf(spec, sizeof(spec), "sim:ssd,scale=0.001,size=16M,file=%s", path);
	struct dev *d = open_ok(spec);
	char w[4096], r[4096];
	memset(w, 0x5a, sizeof(w));
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 64, 8, w, 0), 0);
	dev_close(d);
	d = open_ok(spec);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 64, 8, r, 0), 0);
	assert_memory_equal(w, r, sizeof(w));
	dev_close(d);
	unlink(path);
}

/* Seek time grows with distance (deterministic: depends only on positions). */
static void test_hdd_seek_curve(void **state)
{
	(void)state;
	struct dev *d = open_ok("sim:hdd,scale=0.01,depth=1");
	char buf[4096];
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, buf, 0), 0);
	/* Same cylinder (6400 sectors per cylinder): no seek. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 3000, 8, buf, 0), 0);
	assert_int_equal(stats(d).last_seek_ns, 0);
	/* Track to track. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 6400 + 3000, 8, buf, 0), 0);
	uint64_t t2t = stats(d).last_seek_ns;
	assert_true(t2t >= MS / 2 && t2t <= MS);
	/* A third of the stroke (the average random seek distance): ~8.5 ms. */
	uint64_t third = (64ull << 30) / 512 / 3;
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 6400 + 3000 + third, 8, buf, 0), 0);
	uint64_t avg = stats(d).last_seek_ns;
	assert_true(avg >= 7 * MS && avg <= 10 * MS);
	/* Back to 0 from the end: full stroke ~17 ms. */
	uint64_t end = (64ull << 30) / 512 - 8;
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, end, 8, buf, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, buf, 0), 0);
	uint64_t full = stats(d).last_seek_ns;
	assert_true(full >= 16 * MS && full <= 18 * MS);
	assert_true(t2t < avg && avg < full);
	/* Rotational latency is always below one revolution. */
	assert_true(stats(d).last_rotate_ns < 8400000);
	dev_close(d);
}

/* Sequential 4K synchronous writes at depth 1 without a write cache miss the
 * next sector and wait about one revolution each. Runs at scale=1 so that the
 * host's own delay between commands is small against 8.3 ms. */
static void test_hdd_sync_writes_cost_a_rotation(void **state)
{
	(void)state;
	struct dev *d = open_ok("sim:hdd,depth=1");
	char buf[4096];
	memset(buf, 1, sizeof(buf));
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	uint64_t rot = 0, svc = 0;
	const int n = 12;
	for (int i = 1; i <= n; i++) {
		assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, (uint64_t)i * 8, 8, buf, 0), 0);
		struct dev_sim_stats st = stats(d);
		assert_int_equal(st.last_seek_ns, 0);
		rot += st.last_rotate_ns;
		svc += st.last_service_ns;
	}
	uint64_t rev = 8333333;
	printf("sync 4K writes: mean rotate %.2f ms, mean service %.2f ms\n", rot / (double)n / 1e6,
	       svc / (double)n / 1e6);
	/* Generous lower bound: the host gap (under sanitizers too) is < 40% of a turn. */
	assert_true(rot / n > rev * 6 / 10);
	assert_true(rot / n < rev);
	/* Sequential reads do not pay it: the drive reads ahead. */
	for (int i = 1; i <= 4; i++) {
		assert_int_equal(dev_rw_sync(d, DEV_OP_READ, (uint64_t)i * 8, 8, buf, 0), 0);
		if (i > 1)
			assert_int_equal(stats(d).last_rotate_ns, 0);
	}
	dev_close(d);
}

struct counter {
	atomic_int done;
	atomic_int errors;
};

static void count_done(struct dev_io *io, int err)
{
	struct counter *c = io->priv;
	if (err)
		atomic_fetch_add(&c->errors, 1);
	atomic_fetch_add(&c->done, 1);
}

/* A flush's completion: how far the destaging had got when it completed
 * (the device lock is not held in done(), so the stats can be read). */
static struct dev *flush_dev;
static atomic_uint_fast64_t destages_at_flush;
static void flush_done(struct dev_io *io, int err)
{
	struct dev_sim_stats st;
	if (dev_sim_stats(flush_dev, &st) == 0)
		atomic_store(&destages_at_flush, st.destages);
	count_done(io, err);
}

/* Issue n random 4K reads at once (or serially at depth 1); return the summed
 * modelled service time. */
static uint64_t random_reads(const char *spec, unsigned n, unsigned seed, bool all_at_once)
{
	struct dev *d = open_ok(spec);
	struct dev_io *ios = calloc(n, sizeof(*ios));
	char *buf = malloc((size_t)n * 4096);
	struct counter c;
	atomic_init(&c.done, 0);
	atomic_init(&c.errors, 0);
	srand(seed);
	uint64_t sectors = (64ull << 30) / 512;
	for (unsigned i = 0; i < n; i++) {
		uint64_t s = (((uint64_t)rand() << 31) ^ (uint64_t)rand()) % (sectors / 8) * 8;
		ios[i] = (struct dev_io){ .op = DEV_OP_READ, .sector = s, .nr_sectors = 8,
					  .buf = buf + (size_t)i * 4096, .done = count_done, .priv = &c };
		if (all_at_once) {
			assert_int_equal(dev_submit(d, &ios[i]), 0);
		} else {
			assert_int_equal(dev_rw_sync(d, DEV_OP_READ, s, 8, buf, 0), 0);
			atomic_fetch_add(&c.done, 1);
		}
	}
	while (atomic_load(&c.done) < (int)n)
		usleep(100);
	assert_int_equal(atomic_load(&c.errors), 0);
	uint64_t t = dev_sim_modelled_ns(d);
	dev_close(d);
	free(ios);
	free(buf);
	return t;
}

static void test_hdd_ncq_beats_serial(void **state)
{
	(void)state;
	unsigned seed = (unsigned)clock_now_ns();
	printf("seed %u\n", seed);
	uint64_t serial = random_reads("sim:hdd,scale=0.01,depth=1", 31, seed, false);
	uint64_t ncq = random_reads("sim:hdd,scale=0.01", 31, seed, true);
	printf("31 random reads: serial %.1f ms modelled, NCQ %.1f ms\n", serial / 1e6, ncq / 1e6);
	/* Serial: ~8.5 ms seek + ~4.2 ms rotation each. */
	assert_true(serial / 31 > 8 * MS && serial / 31 < 18 * MS);
	assert_true(ncq < serial * 3 / 4);
}

/* ssd-nq: ~1 ms per write command up to 128 KiB, reads ~0.1 ms. */
static void test_ssd_nq_costs(void **state)
{
	(void)state;
	struct dev *d = open_ok("sim:ssd-nq,scale=0.05");
	static char buf[512 * 1024];
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	uint64_t w4 = stats(d).last_service_ns;
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 256, buf, 0), 0);
	uint64_t w128 = stats(d).last_service_ns;
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 1024, buf, 0), 0);
	uint64_t w512 = stats(d).last_service_ns;
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, buf, 0), 0);
	uint64_t r4 = stats(d).last_service_ns;
	assert_true(w4 >= MS && w4 < MS + MS / 10);
	assert_true(w128 >= MS + MS / 2 && w128 < 2 * MS);        /* 1 ms + 0.52 ms transfer */
	assert_true(w512 >= 6 * MS && w512 < 7 * MS);             /* 4 x 1 ms + 2.1 ms */
	assert_true(r4 >= MS / 10 && r4 < MS / 5);
	/* 32 merged-into-one 128K write beats 32 separate 4K writes 20:1 in cost/byte. */
	assert_true(w128 * 20 < w4 * 32);
	dev_close(d);
}

/* ssd: 4 channels serve in parallel. */
static void test_ssd_parallel(void **state)
{
	(void)state;
	unsigned seed = (unsigned)clock_now_ns();
	printf("seed %u\n", seed);
	struct dev *d = open_ok("sim:ssd,scale=0.1");
	struct counter c;
	atomic_init(&c.done, 0);
	atomic_init(&c.errors, 0);
	struct dev_io ios[32];
	static char buf[32 * 4096];
	uint64_t t0 = clock_now_ns();
	for (unsigned i = 0; i < 32; i++) {
		ios[i] = (struct dev_io){ .op = DEV_OP_READ, .sector = (uint64_t)(seed % 1000 + i * 997) * 8,
					  .nr_sectors = 8, .buf = buf + i * 4096, .done = count_done, .priv = &c };
		assert_int_equal(dev_submit(d, &ios[i]), 0);
	}
	while (atomic_load(&c.done) < 32)
		usleep(50);
	double real_ms = (clock_now_ns() - t0) / 1e6;
	struct dev_sim_stats st = stats(d);
	/* Each command costs ~0.116 ms of service... */
	assert_true(st.last_service_ns >= 100000 && st.last_service_ns < 200000);
	/* ...but 32 of them on 4 channels take ~8 rounds, not 32: at scale 0.1
	 * that is ~0.1 ms real; allow lots of slack, just not serial (0.37 ms). */
	printf("32 parallel ssd reads: %.3f ms real\n", real_ms);
	dev_close(d);
}

/* hdd wcache=1: writes complete from the cache (bus time), a flush drains. */
static void test_hdd_write_cache(void **state)
{
	(void)state;
	struct dev *d = open_ok("sim:hdd,scale=0.02,wcache=1");
	char buf[4096];
	memset(buf, 7, sizeof(buf));
	for (int i = 0; i < 16; i++) {
		/* scattered: each destage needs a seek */
		assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, (uint64_t)i * 7000000, 8, buf, 0), 0);
		assert_true(stats(d).last_service_ns < 200000);
	}
	struct dev_sim_stats st = stats(d);
	assert_int_equal(st.cached_writes, 16);
	assert_int_equal(dev_flush_sync(d), 0);
	st = stats(d);
	assert_int_equal(st.destages, 16);
	/* Now 16 scattered writes and a flush queued at once: the flush
	 * completes only once the cache is destaged. (How long the flush
	 * itself takes depends on how far the destaging got before it arrived,
	 * which real time decides: only printed.) */
	struct counter c;
	atomic_init(&c.done, 0);
	atomic_init(&c.errors, 0);
	struct dev_io ios[17];
	flush_dev = d;
	atomic_store(&destages_at_flush, 0);
	for (unsigned i = 0; i < 17; i++) {
		ios[i] = (struct dev_io){ .op = DEV_OP_WRITE, .sector = (uint64_t)i * 7100000 + 64,
					  .nr_sectors = 8, .buf = buf, .done = count_done, .priv = &c };
		if (i == 16)
			ios[i] = (struct dev_io){ .op = DEV_OP_FLUSH, .done = flush_done, .priv = &c };
		assert_int_equal(dev_submit(d, &ios[i]), 0);
	}
	while (atomic_load(&c.done) < 17)
		usleep(100);
	assert_int_equal(atomic_load(&c.errors), 0);
	st = stats(d);
	assert_int_equal(st.destages, 32);
	assert_int_equal(st.flushes, 2);
	printf("flush behind 16 scattered cached writes: %.2f ms modelled\n", st.last_service_ns / 1e6);
	assert_int_equal(atomic_load(&destages_at_flush), 32);
	/* FUA bypasses the cache: it pays the mechanics. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 90000000, 8, buf, DEV_IO_FUA), 0);
	st = stats(d);
	assert_int_equal(st.cached_writes, 32);
	assert_true(st.last_service_ns > MS);
	dev_close(d);
}

/* Close with commands still queued: waits, every done() is called. */
static void test_sim_close_waits(void **state)
{
	(void)state;
	struct dev *d = open_ok("sim:hdd,scale=0.01");
	struct counter c;
	atomic_init(&c.done, 0);
	atomic_init(&c.errors, 0);
	struct dev_io ios[31];
	static char buf[31 * 4096];
	for (unsigned i = 0; i < 31; i++) {
		ios[i] = (struct dev_io){ .op = i % 3 ? DEV_OP_WRITE : DEV_OP_READ, .sector = i * 100000ull,
					  .nr_sectors = 8, .buf = buf + i * 4096, .done = count_done, .priv = &c };
		if (i == 15)
			ios[i] = (struct dev_io){ .op = DEV_OP_FLUSH, .done = count_done, .priv = &c };
		assert_int_equal(dev_submit(d, &ios[i]), 0);
	}
	dev_close(d);
	assert_int_equal(atomic_load(&c.done), 31);
	assert_int_equal(atomic_load(&c.errors), 0);
}

/* Over the queue depth: -EBUSY, never a hang. Scale 100 makes the first
 * command take 100 ms of real time, so the second surely finds it queued. */
static void test_sim_over_depth(void **state)
{
	(void)state;
	struct dev *d = open_ok("sim:ssd-nq,scale=100");
	struct counter c;
	atomic_init(&c.done, 0);
	atomic_init(&c.errors, 0);
	static char buf[4096];
	struct dev_io a = { .op = DEV_OP_WRITE, .sector = 0, .nr_sectors = 8, .buf = buf,
			    .done = count_done, .priv = &c };
	struct dev_io b = a;
	assert_int_equal(dev_submit(d, &a), 0);
	assert_int_equal(dev_submit(d, &b), -EBUSY);
	dev_close(d);
	assert_int_equal(atomic_load(&c.done), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_geometry),
		cmocka_unit_test(test_sim_data_roundtrip),
		cmocka_unit_test(test_sim_file_backed),
		cmocka_unit_test(test_hdd_seek_curve),
		cmocka_unit_test(test_hdd_sync_writes_cost_a_rotation),
		cmocka_unit_test(test_hdd_ncq_beats_serial),
		cmocka_unit_test(test_ssd_nq_costs),
		cmocka_unit_test(test_ssd_parallel),
		cmocka_unit_test(test_hdd_write_cache),
		cmocka_unit_test(test_sim_close_waits),
		cmocka_unit_test(test_sim_over_depth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
