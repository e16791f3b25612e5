/* crashtest's state builder (tools/crash/states.c, docs/crashtest.md "Crash
 * states") on hand-made logs and on a log: over an asynchronous device:
 *  - a flush covers only the writes that had completed when it was issued;
 *    a write that completed after the issue (before the flush completed) is
 *    in flight in the next epoch. With the test hook
 *    crash_test_flush_covers_inflight (the old, too generous rule) such a
 *    write is durable, and the states that lose it are missed;
 *  - a log without the issue points (dm-log-writes', or nostall's before
 *    them) reads with the old rule;
 *  - a discard is applied as zeroes and never reads write data;
 *  - every epoch's end gets a state whatever the budget.
 * states.c is compiled into this test with NOSTALL_TEST_HOOKS (the release
 * tool has no hook). */
#ifndef NOSTALL_TEST_HOOKS
#define NOSTALL_TEST_HOOKS 1
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../tools/crash/states.c"

#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

/* workload.c's image size (the default: the test's logs are small). */
uint64_t crash_image_bytes = CRASH_IMAGE_BYTES_DEFAULT;

/* workload.c's generator (the test links states.c alone). */
uint64_t crash_rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static char *tmp_log(void)
{
	char *p = strdup("/tmp/nostall-cstates-XXXXXX");
	int fd = mkstemp(p);
	assert_true(fd >= 0);
	close(fd);
	return p;
}

static void le64_put(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* One entry of a hand-made log. */
struct hent {
	char kind;       /* 'W' write, 'F' flush, 'D' discard, 'M' mark */
	uint64_t sector; /* 512-byte units */
	uint64_t nr;
	int64_t issued;  /* 'F': its issue point; -1: not recorded (an old log) */
	unsigned char fill;
	const char *text;
};

/* Write the log in the format of src/dev/dev_log.c (S = 512). */
static void write_log(const char *path, const struct hent *e, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	unsigned char blk[512] = { 0 };
	le64_put(blk, 0x6a736677736872ull);
	le64_put(blk + 8, 1);
	le64_put(blk + 16, n);
	blk[24] = 0x00;
	blk[25] = 0x02; /* sectorsize 512 */
	assert_int_equal(fwrite(blk, 1, 512, f), 512);
	for (size_t i = 0; i < n; i++) {
		memset(blk, 0, sizeof blk);
		uint64_t flags = e[i].kind == 'W' ? 0 : e[i].kind == 'F' ? DEV_LOG_FLUSH : e[i].kind == 'D' ? DEV_LOG_DISCARD
												: DEV_LOG_MARK;
		le64_put(blk, e[i].kind == 'F' || e[i].kind == 'M' ? 0 : e[i].sector);
		le64_put(blk + 8, e[i].kind == 'F' || e[i].kind == 'M' ? 0 : e[i].nr);
		le64_put(blk + 16, flags);
		if (e[i].kind == 'M') {
			le64_put(blk + 24, strlen(e[i].text));
			memcpy(blk + 32, e[i].text, strlen(e[i].text));
		}
		if (e[i].kind == 'F' && e[i].issued >= 0) {
			le64_put(blk + 48, 0x6465757373697366ull); /* "fsissued" */
			le64_put(blk + 56, (uint64_t)e[i].issued);
		}
		assert_int_equal(fwrite(blk, 1, 512, f), 512);
		if (e[i].kind == 'W') {
			unsigned char *d = malloc(e[i].nr * 512);
			assert_non_null(d);
			memset(d, e[i].fill, e[i].nr * 512);
			assert_int_equal(fwrite(d, 1, e[i].nr * 512, f), e[i].nr * 512);
			free(d);
		}
	}
	assert_int_equal(fclose(f), 0);
}

static struct dev *mem_dev(void)
{
	struct dev *d = NULL;
	char spec[64];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)CRASH_IMAGE_BYTES);
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	return d;
}

/* The byte at sector s of state st built from l. */
static unsigned char built_byte(struct crash_log *l, const struct crash_state *st, uint64_t s)
{
	struct dev *d = mem_dev();
	int rc = crash_state_build(l, st, d);
	if (rc)
		fail_msg("crash_state_build: %s", err_last(rc));
	unsigned char buf[512];
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, s, 1, buf, 0), 0);
	dev_close(d);
	return buf[0];
}

/* W1 completes; the flush is issued (covers W1); W2 completes; the flush
 * completes; W3 completes. Log (completion order): W1 W2 F(issued=1) W3. */
static const struct hent race_log[] = {
	{ 'W', 0, 8, 0, 0xa1, NULL },
	{ 'W', 8, 8, 0, 0xb2, NULL },
	{ 'F', 0, 0, 1, 0, NULL },
	{ 'W', 16, 8, 0, 0xc3, NULL },
};

/* States of epoch 1 (after the flush completed) whose disk lacks W2. */
static size_t states_losing_w2(struct crash_log *l)
{
	struct crash_state *st;
	size_t n, lost = 0;
	assert_int_equal(crash_states_make(l, 200, 7, &st, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (st[i].epoch == 1 && built_byte(l, &st[i], 8) != 0xb2)
			lost++;
	crash_states_free(st, n);
	crash_log_rewind(l);
	return lost;
}

static void test_flush_issue_handmade(void **state)
{
	(void)state;
	char *path = tmp_log();
	write_log(path, race_log, 4);
	struct crash_log *l;
	assert_int_equal(crash_log_load(path, &l), 0);
	assert_int_equal(crash_log_nepochs(l), 2);
	/* epoch 1: W1 durable; W2 (in flight at the issue) and W3 are not */
	assert_int_equal(l->ep[1].start, 2);
	assert_int_equal(l->ep[1].durable, 1);
	assert_int_equal(l->ep[1].nw, 2);
	assert_int_equal(l->ep[1].w[0], 1);
	assert_int_equal(l->ep[1].w[1], 3);
	/* the crash after everything, with W3 kept and W2 lost */
	uint64_t sel = 1ull << 1;
	struct crash_state s = { .epoch = 1, .point = 4, .sel = &sel, .nsel = 2, .torn = -1, .how = 's' };
	assert_int_equal(built_byte(l, &s, 0), 0xa1);
	assert_int_equal(built_byte(l, &s, 8), 0);
	assert_int_equal(built_byte(l, &s, 16), 0xc3);
	/* the generator finds such states */
	assert_true(states_losing_w2(l) > 0);
	crash_log_destroy(l);

	/* the old rule (test hook): W2 durable, no state of epoch 1 loses it */
	crash_test_flush_covers_inflight = true;
	assert_int_equal(crash_log_load(path, &l), 0);
	assert_int_equal(l->ep[1].durable, 2);
	assert_int_equal(l->ep[1].nw, 1);
	assert_int_equal(states_losing_w2(l), 0);
	crash_log_destroy(l);
	crash_test_flush_covers_inflight = false;
	unlink(path);
	free(path);
}

/* A log without issue points (dm-log-writes', nostall's before them): the
 * flush covers everything before its entry. */
static void test_flush_old_log(void **state)
{
	(void)state;
	char *path = tmp_log();
	struct hent old[4];
	memcpy(old, race_log, sizeof old);
	old[2].issued = -1;
	write_log(path, old, 4);
	struct dev_log_reader *r;
	struct dev_log_entry e;
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(dev_log_reader_next(r, &e), 1);
	assert_int_equal(e.issued, 2);
	dev_log_reader_close(r);
	struct crash_log *l;
	assert_int_equal(crash_log_load(path, &l), 0);
	assert_int_equal(l->ep[1].durable, 2);
	assert_int_equal(states_losing_w2(l), 0);
	crash_log_destroy(l);
	/* an issue point past the flush's own entry is a corrupt log */
	old[2].issued = 3;
	write_log(path, old, 4);
	assert_int_equal(crash_log_load(path, &l), -EIO);
	unlink(path);
	free(path);
}

struct waiter {
	atomic_int done;
	atomic_int err;
};

static void io_done(struct dev_io *io, int err)
{
	struct waiter *w = io->priv;
	if (err)
		atomic_store(&w->err, err);
	atomic_fetch_add(&w->done, 1);
}

/* On log: over an asynchronous device (sim:, its clock frozen so both are
 * queued at once): a write submitted, then a flush submitted before the
 * write completed. The flush entry records that it covers nothing of it; the
 * state builder keeps the write in flight after the flush - and the old rule
 * (the test hook) would have called it durable. On log:mem: (completion
 * inside dev_submit) the write is covered. */
static void test_flush_issue_async_device(void **state)
{
	(void)state;
	for (int async = 1; async >= 0; async--) {
		char *path = tmp_log();
		char spec[256];
		snprintf(spec, sizeof spec, "log:%s,to=%s", async ? "sim:ssd,size=16M,scale=0.01" : "mem:16M", path);
		struct dev *d = NULL;
		int rc = dev_open(spec, &d);
		if (rc)
			fail_msg("dev_open(%s): %s", spec, err_last(rc));
		static unsigned char buf[4096];
		memset(buf, 0x5a, sizeof buf);
		struct waiter w;
		atomic_init(&w.done, 0);
		atomic_init(&w.err, 0);
		struct dev_io wr = { .op = DEV_OP_WRITE, .sector = 64, .nr_sectors = 8, .buf = buf, .done = io_done,
				     .priv = &w };
		struct dev_io fl = { .op = DEV_OP_FLUSH, .done = io_done, .priv = &w };
		if (async)
			assert_int_equal(dev_sim_freeze(d, true), 0);
		assert_int_equal(dev_submit(d, &wr), 0);
		assert_int_equal(dev_submit(d, &fl), 0);
		if (async)
			assert_int_equal(dev_sim_freeze(d, false), 0);
		while (atomic_load(&w.done) < 2)
			usleep(100);
		assert_int_equal(atomic_load(&w.err), 0);
		dev_close(d);

		struct dev_log_reader *r;
		struct dev_log_entry e;
		assert_int_equal(dev_log_reader_open(path, &r), 0);
		assert_int_equal(dev_log_reader_count(r), 2);
		assert_int_equal(dev_log_reader_next(r, &e), 1);
		assert_int_equal(e.flags, 0);
		assert_int_equal(dev_log_reader_next(r, &e), 1);
		assert_int_equal(e.flags, DEV_LOG_FLUSH);
		assert_int_equal(e.issued, async ? 0 : 1);
		dev_log_reader_close(r);

		for (int old = 0; old < 2; old++) {
			crash_test_flush_covers_inflight = old;
			struct crash_log *l;
			assert_int_equal(crash_log_load(path, &l), 0);
			assert_int_equal(crash_log_nepochs(l), 2);
			bool inflight = async && !old;
			assert_int_equal(l->ep[1].nw, inflight ? 1 : 0);
			/* the state after the flush that loses the write: there iff
			 * the write was in flight (the correct rule) */
			uint64_t sel = 0;
			struct crash_state s = { .epoch = 1, .point = 2, .sel = &sel, .nsel = (uint32_t)l->ep[1].nw,
						 .torn = -1, .how = 's' };
			assert_int_equal(built_byte(l, &s, 64), inflight ? 0 : 0x5a);
			crash_log_destroy(l);
		}
		crash_test_flush_covers_inflight = false;
		unlink(path);
		free(path);
	}
}

/* A discard after a write: the built state has zeroes there (durable or in
 * flight), never the bytes of some write from the data area. */
static void test_discard_zeroes(void **state)
{
	(void)state;
	char *path = tmp_log();
	const struct hent lg[] = {
		{ 'W', 0, 16, 0, 0x77, NULL },     /* 0 */
		{ 'D', 0, 16, 0, 0, NULL },        /* 1 */
		{ 'W', 100, 8, 0, 0x66, NULL },    /* 2 */
		{ 'F', 0, 0, 3, 0, NULL },         /* 3: all of the above durable */
		{ 'W', 200, 8, 0, 0x55, NULL },    /* 4 */
		{ 'D', 200, 4096, 0, 0, NULL },    /* 5: 2 MiB, larger than the data */
	};
	write_log(path, lg, 6);
	struct crash_log *l;
	assert_int_equal(crash_log_load(path, &l), 0);
	assert_int_equal(crash_log_nepochs(l), 2);
	/* epoch 0's end, everything in flight: the discard zeroes the write */
	struct crash_state s0 = { .epoch = 0, .point = 3, .torn = -1, .how = 'e' };
	assert_int_equal(built_byte(l, &s0, 0), 0);
	assert_int_equal(built_byte(l, &s0, 15), 0);
	assert_int_equal(built_byte(l, &s0, 100), 0x66);
	/* epoch 1: the discard durable; the in-flight discard zeroes 200.. */
	struct crash_state s1 = { .epoch = 1, .point = 6, .torn = -1, .how = 'e' };
	assert_int_equal(built_byte(l, &s1, 0), 0);
	assert_int_equal(built_byte(l, &s1, 200), 0);
	assert_int_equal(built_byte(l, &s1, 4000), 0);
	/* only the write of the pair survives */
	uint64_t sel = 1;
	struct crash_state s2 = { .epoch = 1, .point = 6, .sel = &sel, .nsel = 2, .torn = -1, .how = 's' };
	assert_int_equal(built_byte(l, &s2, 200), 0x55);
	assert_int_equal(built_byte(l, &s2, 0), 0);
	/* every generated state builds (no torn discard): where a discard
	 * was, zeroes or the write before it, nothing else */
	struct crash_state *st;
	size_t n;
	assert_int_equal(crash_states_make(l, 100, 3, &st, &n), 0);
	for (size_t i = 0; i < n; i++) {
		assert_true(st[i].torn != 1 && st[i].torn != 5);
		unsigned char b0 = built_byte(l, &st[i], 0), b200 = built_byte(l, &st[i], 200);
		assert_true(b0 == 0 || b0 == 0x77);
		assert_true(b200 == 0 || b200 == 0x55);
		assert_int_equal(built_byte(l, &st[i], 4000), 0);
	}
	crash_states_free(st, n);
	crash_log_destroy(l);
	unlink(path);
	free(path);
}

/* Every epoch's end has a state, even when there are more epochs than the
 * budget; the budget bounds the random subsets. */
static void test_every_epoch_end(void **state)
{
	(void)state;
	char *path = tmp_log();
	enum { EPOCHS = 40 };
	struct hent lg[3 * EPOCHS + 1];
	size_t n = 0;
	lg[n++] = (struct hent){ 'M', 0, 0, 0, 0, "base" };
	for (int k = 0; k < EPOCHS; k++) {
		lg[n++] = (struct hent){ 'W', (uint64_t)k * 16, 8, 0, (unsigned char)(k + 1), NULL };
		lg[n++] = (struct hent){ 'W', (uint64_t)k * 16 + 8, 8, 0, (unsigned char)(k + 1), NULL };
		lg[n] = (struct hent){ 'F', 0, 0, (int64_t)n, 0, NULL };
		n++;
	}
	write_log(path, lg, n);
	struct crash_log *l;
	assert_int_equal(crash_log_load(path, &l), 0);
	assert_int_equal(crash_log_nepochs(l), EPOCHS + 1);
	struct crash_state *st;
	size_t ns;
	assert_int_equal(crash_states_make(l, 16, 1, &st, &ns), 0);
	size_t ends = 0, random = 0;
	for (size_t i = 0; i < ns; i++) {
		ends += st[i].how == 'e';
		random += st[i].how == 's' || st[i].how == 't';
		if (st[i].how == 'e')
			assert_true(st[i].point == l->n || (l->e[st[i].point].flags & DEV_LOG_FLUSH));
	}
	/* the ends: before each of the 40 flushes, and the log's end */
	assert_int_equal(ends, EPOCHS + 1);
	assert_true(random > 0 && random <= 16);
	crash_states_free(st, ns);
	crash_log_destroy(l);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush_issue_handmade),
		cmocka_unit_test(test_flush_old_log),
		cmocka_unit_test(test_flush_issue_async_device),
		cmocka_unit_test(test_discard_zeroes),
		cmocka_unit_test(test_every_epoch_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
