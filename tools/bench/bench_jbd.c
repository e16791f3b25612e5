/* nostall bench jbd: the latency of synchronous (fsync-like) journal
 * commits beside an async write flood, per era preset.
 *
 * Each run opens the device afresh, builds a queue (the user's -o queue
 * tunables, then the preset), a buffer cache and a journal (32 MiB of 4 KiB
 * blocks, in the middle of the device) with jbd_stack_open_dev; a streamer
 * thread writes 1 MiB
 * BLK_WRITE bios into another region without waiting (page-cache writeback
 * shape) while the test client (src/jbd/jbd_client.c) runs one sync handle
 * of 1..8 metadata blocks every 50 ms and measures how long its stop (the
 * commit) takes. The journal writes follow the preset: WRITE under 2.6.29,
 * WRITE_SYNC per buffer under 2.6.30-rc1, WRITE_SYNC_PLUG under 2.6.30.
 * Journal options in -o (commit=, barrier=, journal_ioprio=) go to the
 * journal; the presets bring barrier=0, 2009 ext3's default
 * (jbd_config_era_defaults), unless -o names barrier. With barrier=1 the
 * commit block is an ordered barrier under the presets' barrier_mode=drain
 * (the flood queued ahead of it is drained first; "drained" counts those
 * requests); -o barrier_mode=modern shows the flush + FUA of later kernels.
 * A run lasts --seconds, then goes on until 100 commits (a p99 needs them),
 * at most three times --seconds; p99 prints n/a below 100 samples. Every
 * figure printed is measured in this run.
 *
 * usage: nostall bench jbd [--device SPEC] [--seconds S] [--json] [-o OPTS]
 */
#include "../common/cliopt.h"
#include "../common/cmds.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "dev/dev.h"
#include "jbd/jbd.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/hist.h"
#include "util/opts.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024ull * 1024)
#define JBS 4096u
#define JBLOCKS 8192u

struct jb {
	const char *device;
	char qopts[1024];      /* queue part of -o */
	struct jbd_config jcfg;
	bool json;
	double seconds;
};

struct flood {
	struct blk_queue *q;
	pthread_t tid;
	void *buf;
	uint64_t start, len;  /* sectors */
	atomic_bool stop;
	atomic_uint_fast64_t outstanding, bytes;
	atomic_int errors;
};

static void flood_end_io(struct bio *bio, int err)
{
	struct flood *f = bio->private;
	if (err)
		atomic_fetch_add(&f->errors, 1);
	else
		atomic_fetch_add(&f->bytes, bio->size);
	atomic_fetch_sub(&f->outstanding, 1);
	free(bio);
}

static void *flood_main(void *arg)
{
	struct flood *f = arg;
	uint64_t pos = 0, step = MiB / 512;
	while (!atomic_load(&f->stop)) {
		if (pos + step > f->len)
			pos = 0;
		struct bio *bio = calloc(1, sizeof *bio);
		if (!bio)
			break;
		*bio = (struct bio){ .sector = f->start + pos, .size = (uint32_t)MiB, .data = f->buf, .rw = BLK_WRITE,
				     .end_io = flood_end_io, .private = f };
		atomic_fetch_add(&f->outstanding, 1);
		if (blk_submit_bio(f->q, bio) < 0) {
			atomic_fetch_sub(&f->outstanding, 1);
			free(bio);
			break;
		}
		pos += step;
	}
	return NULL;
}

struct result {
	const char *config;
	double p50, p99, max, mbps;
	uint64_t commits;       /* samples behind the latencies */
	uint64_t drained;       /* requests drained ahead of barriers (barrier_mode=drain) */
	bool barrier;           /* the journal's barrier= in effect */
};

/* A p99 needs this many samples; a run goes on past --seconds until it has
 * them, up to CAP_FACTOR times --seconds. */
#define MIN_SAMPLES 100
#define CAP_FACTOR 3

static int run_one(struct jb *b, const char *spec, const char *preset, struct result *res)
{
	struct dev *d = NULL;
	struct blk_queue *q = NULL;
	struct jbd_stack *stk = NULL;
	struct jbd_client *cl = NULL;
	struct flood f = { 0 };
	bool flooding = false;
	int rc = dev_open(spec, &d);
	if (rc < 0)
		return rc;
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	uint64_t dev_blocks = g.size_bytes / JBS;
	if (dev_blocks < 4ull * JBLOCKS + 65536) {
		rc = err_set(-EINVAL, "device too small for the benchmark (want at least %llu MiB)",
			     (unsigned long long)((4ull * JBLOCKS + 65536) * JBS / MiB));
		goto out;
	}
	/* Journal in the middle of the device, metadata just after it; the
	 * flood far away so that commits must seek. */
	uint64_t jstart = (dev_blocks / 2) & ~1023ull;
	if (dev_blocks > (64ull << 30) / JBS)
		jstart = ((8ull << 30) / JBS); /* big sim disks: keep it near */
	static const uint8_t uuid[16] = { 0x6e, 0x6f, 0x73, 0x74, 0x61, 0x6c, 0x6c, 0x21 };
	struct jbd_stack_params sp;
	jbd_stack_params_default(&sp);
	/* The preset and the user's queue options in one string: the preset
	 * applies first, so -o barrier_mode=modern refines it. */
	char qopts[1100];
	snprintf(qopts, sizeof qopts, "preset=%s%s%s", preset, b->qopts[0] ? "," : "", b->qopts);
	sp.queue_opts = qopts;
	sp.loc = (struct jbd_location){ .block_size = JBS, .first_block = jstart, .nr_blocks = JBLOCKS };
	sp.cfg = b->jcfg;
	sp.create = true;
	sp.uuid = uuid;
	rc = jbd_stack_open_dev(d, &sp, &stk);
	if (rc < 0)
		goto out;
	q = jbd_stack_queue(stk);
	struct jbd_client_params cp = { .j = jbd_stack_journal(stk), .cache = jbd_stack_cache(stk), .first_block = jstart + JBLOCKS + 256,
					.nr_blocks = 4096, .seed = 0x5eed, .max_tx_blocks = 8, .sync_prob = 1.0 };
	rc = jbd_client_create(&cp, &cl);
	if (rc < 0)
		goto out;
	if (posix_memalign(&f.buf, 4096, MiB)) {
		rc = -ENOMEM;
		goto out;
	}
	memset(f.buf, 0x5a, MiB);
	f.q = q;
	f.start = (dev_blocks / 16) * (JBS / 512);
	f.len = (256 * MiB) / 512;
	rc = -pthread_create(&f.tid, NULL, flood_main, &f);
	if (rc < 0)
		goto out;
	flooding = true;
	clock_sleep_ns(500 * NS_PER_MS); /* let the flood fill the queue */
	atomic_store(&f.bytes, 0);
	blk_queue_stats_reset(q);
	struct hist h;
	hist_init(&h);
	uint64_t t0 = clock_now_ns(), n = 0;
	uint64_t min_end = t0 + (uint64_t)(b->seconds * 1e9), cap_end = t0 + (uint64_t)(CAP_FACTOR * b->seconds * 1e9);
	for (;;) {
		uint64_t now = clock_now_ns();
		if (now >= cap_end || (now >= min_end && n >= MIN_SAMPLES))
			break;
		uint64_t start = clock_now_ns(), ns = 0;
		rc = jbd_client_step(cl, &ns);
		if (rc < 0)
			break;
		hist_add(&h, ns);
		n++;
		uint64_t next = start + 50 * NS_PER_MS;
		if (clock_now_ns() < next)
			clock_sleep_until_ns(next);
	}
	uint64_t t1 = clock_now_ns();
	uint64_t abytes = atomic_load(&f.bytes);
	res->config = preset;
	res->p50 = (double)hist_quantile(&h, 0.5) / 1e6;
	res->p99 = (double)hist_quantile(&h, 0.99) / 1e6;
	res->max = (double)h.max / 1e6;
	res->mbps = (double)abytes / MiB / ((double)(t1 - t0) / 1e9);
	res->commits = n;
	struct blk_stats bst;
	blk_queue_stats_get(q, &bst);
	res->drained = bst.barrier_drained;
	struct jbd_stats jst;
	jbd_journal_stats(jbd_stack_journal(stk), &jst);
	res->barrier = (jst.last_commit_op & BLK_REQ_FLUSH) != 0;
out:
	if (flooding) {
		atomic_store(&f.stop, true);
		pthread_join(f.tid, NULL);
		blk_queue_unplug(q);
		while (atomic_load(&f.outstanding))
			clock_sleep_ns(NS_PER_MS);
	}
	free(f.buf);
	jbd_client_destroy(cl);
	int crc = jbd_stack_close(stk);
	if (rc == 0)
		rc = crc;
	dev_close(d);
	return rc;
}

/* -o: journal options to the journal, the rest to the queue. */
static int split_opt(void *ctx, const char *name, const char *value)
{
	struct jb *b = ctx;
	int rc = jbd_config_set(&b->jcfg, name, value);
	if (rc != -ENOENT)
		return rc;
	size_t n = strlen(b->qopts);
	int w = snprintf(b->qopts + n, sizeof b->qopts - n, "%s%s%s%s", n ? "," : "", name, value ? "=" : "",
			 value ? value : "");
	if (w < 0 || (size_t)w >= sizeof b->qopts - n)
		return err_set(-E2BIG, "-o: too long");
	return 0;
}

struct jb_args {
	struct jb b;
	const char *opts; /* -o */
};

static int jb_seconds(void *ctx, const struct cliopt *o, const char *arg)
{
	struct jb *b = &((struct jb_args *)ctx)->b;
	if (opts_parse_double(arg, &b->seconds) || b->seconds <= 0 || b->seconds > 3600)
		return cliopt_say("nostall bench jbd", "--seconds '%s' must be a number in (0, 3600]", arg);
	return 0;
}

static const struct cliopt jb_opts[] = {
	{ "device", 'd', "SPEC", "default sim:hdd", CLIOPT_STR_AT(struct jb_args, b.device) },
	{ "seconds", 't', "S", "minimum measurement time per preset (default 4); a run goes on\n"
			       "until 100 commits, at most 3 times that", CLIOPT_CALL(jb_seconds) },
	{ NULL, 'o', "OPTS", "journal options (commit=, barrier= (the presets' default: 0, 2009's\n"
			     "ext3), journal_ioprio=) and queue/scheduler tunables (barrier_mode=, ...)",
	  CLIOPT_STR_AT(struct jb_args, opts) },
	{ "json", 'j', NULL, "one JSON object per preset on stdout", CLIOPT_FLAG_AT(struct jb_args, b.json) },
	{ 0 },
};

static const struct cliopt_cmd jb_cmd = {
	.prog = "nostall bench jbd",
	.usage = "usage: nostall bench jbd [--device SPEC] [--seconds S] [--json] [-o OPTS]\n"
		 "  sync (fsync-like) journal commits every 50 ms beside a 1 MiB async write flood,\n"
		 "  per era preset (2.6.29, 2.6.30-rc1, 2.6.30)\n",
	.opts = jb_opts,
};

int bench_jbd(int argc, char **argv)
{
	struct jb_args a = { .b = { .seconds = 4.0 } };
	jbd_config_default(&a.b.jcfg);
	int pos, st = cliopt_parse(&jb_cmd, argc, argv, &a, &pos);
	if (st >= 0)
		return st;
	struct jb b = a.b;
	const char *opts = a.opts;
	if (opts) {
		int rc = opts_parse(opts, split_opt, &b);
		if (rc == 0 && b.qopts[0])
			rc = blk_opts_validate(b.qopts);
		if (rc < 0) {
			fprintf(stderr, "nostall bench jbd: -o %s: %s\n", opts, err_last(rc));
			return 2;
		}
	}
	const char *spec = b.device ? b.device : "sim:hdd";
	static const char *presets[] = { "2.6.29", "2.6.30-rc1", "2.6.30" };
	struct result res[3];
	for (int i = 0; i < 3; i++) {
		fprintf(stderr, "\rbench jbd: sync-commit run %d/3 (%s)...            ", i + 1, presets[i]);
		fflush(stderr);
		err_clear();
		memset(&res[i], 0, sizeof res[i]);
		int rc = run_one(&b, spec, presets[i], &res[i]);
		if (rc < 0) {
			fprintf(stderr, "\r%80s\r", "");
			fprintf(stderr, "nostall bench jbd: %s on %s failed: %s\n", presets[i], spec, err_last(rc));
			return 1;
		}
	}
	fprintf(stderr, "\r%80s\r", "");
	fflush(stderr);
	if (b.json) {
		for (int i = 0; i < 3; i++) {
			printf("{\"scenario\":\"sync-commit\",\"device\":\"%s\",\"config\":\"%s\",\"p50_ms\":%.2f,", spec,
			       res[i].config, res[i].p50);
			if (res[i].commits >= MIN_SAMPLES)
				printf("\"p99_ms\":%.2f,", res[i].p99);
			else
				printf("\"p99_ms\":null,");
			printf("\"max_ms\":%.2f,\"async_mbps\":%.2f,\"commits\":%llu,\"barrier\":%d,\"drained\":%llu}\n",
			       res[i].max, res[i].mbps, (unsigned long long)res[i].commits, res[i].barrier,
			       (unsigned long long)res[i].drained);
		}
	} else {
		printf("\nsync-commit on %s (journal_ioprio=%s/%d); runs of at least %g s, then until %d commits,"
		       " at most %g s;\np99 only with %d samples or more; commits = the samples behind each figure\n",
		       spec, blk_ioprio_class_name(b.jcfg.ioprio_class), b.jcfg.ioprio_level, b.seconds, MIN_SAMPLES,
		       CAP_FACTOR * b.seconds, MIN_SAMPLES);
		printf("  %-12s %8s %12s %18s %12s %12s %8s %8s\n", "config", "barrier", "p50_ms", "p99_ms", "max_ms",
		       "async_mbps", "commits", "drained");
		for (int i = 0; i < 3; i++) {
			char p99[32];
			if (res[i].commits >= MIN_SAMPLES)
				snprintf(p99, sizeof p99, "%.2f", res[i].p99);
			else
				snprintf(p99, sizeof p99, "n/a (%llu samples)", (unsigned long long)res[i].commits);
			printf("  %-12s %8d %12.2f %18s %12.2f %12.2f %8llu %8llu\n", res[i].config, res[i].barrier,
			       res[i].p50, p99, res[i].max, res[i].mbps, (unsigned long long)res[i].commits,
			       (unsigned long long)res[i].drained);
		}
	}
	fflush(stdout);
	return 0;
}
