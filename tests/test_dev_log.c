/* log: device (dm-log-writes format), reader, replay, crash points.
 * nostall-test: concurrent */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVSZ (4u << 20)

static struct dev *open_ok(const char *spec)
{
	struct dev *d = NULL;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	return d;
}

static char *tmp_log(void)
{
	char *p = strdup("/tmp/nostall-log-XXXXXX");
	int fd = mkstemp(p);
	assert_true(fd >= 0);
	close(fd);
	return p;
}

static void pattern(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 37u + i * 11u + 1);
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* The operations of the scripted sequence, for the shadow model. */
struct op {
	int kind; /* 'W' write, 'F' flush, 'M' mark, 'D' discard */
	uint64_t sector;
	uint32_t nr;
	unsigned flags;
	unsigned seed;
	const char *mark;
};

static const struct op script[] = {
	{ 'W', 0, 8, 0, 1, NULL },
	{ 'W', 100, 16, 0, 2, NULL },
	{ 'F', 0, 0, 0, 0, NULL },
	{ 'M', 0, 0, 0, 0, "commit 1" },
	{ 'W', 0, 8, DEV_IO_FUA, 3, NULL },
	{ 'D', 100, 16, 0, 0, NULL },
	{ 'W', 200, 1024, DEV_IO_PREFLUSH, 4, NULL },
	{ 'M', 0, 0, 0, 0, "end" },
};
#define NSCRIPT (sizeof(script) / sizeof(script[0]))

static void run_script(struct dev *d)
{
	static char buf[1024 * 512];
	for (size_t i = 0; i < NSCRIPT; i++) {
		const struct op *o = &script[i];
		switch (o->kind) {
		case 'W':
			pattern(buf, (size_t)o->nr * 512, o->seed);
			assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, o->sector, o->nr, buf, o->flags), 0);
			break;
		case 'F':
			assert_int_equal(dev_flush_sync(d), 0);
			break;
		case 'M':
			assert_int_equal(dev_mark(d, o->mark), 0);
			break;
		case 'D':
			assert_int_equal(dev_rw_sync(d, DEV_OP_DISCARD, o->sector, o->nr, NULL, 0), 0);
			break;
		}
	}
}

/* Expected device image after the first k script entries. */
static void shadow(unsigned char *img, size_t k)
{
	memset(img, 0, DEVSZ);
	for (size_t i = 0; i < k; i++) {
		const struct op *o = &script[i];
		if (o->kind == 'W')
			pattern(img + o->sector * 512, (size_t)o->nr * 512, o->seed);
		else if (o->kind == 'D')
			memset(img + o->sector * 512, 0, (size_t)o->nr * 512);
	}
}

static void read_image(struct dev *d, unsigned char *img)
{
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, DEVSZ / 512, img, 0), 0);
}

static void test_log_roundtrip(void **state)
{
	(void)state;
	char *path = tmp_log();
	char spec[256];
	snprintf(spec, sizeof(spec), "log:mem:4M,to=%s", path);
	struct dev *d = open_ok(spec);
	run_script(d);
	/* Reads are passed through and not logged. */
	static unsigned char img[DEVSZ], exp[DEVSZ];
	read_image(d, img);
	shadow(exp, NSCRIPT);
	assert_memory_equal(img, exp, DEVSZ);
	dev_close(d);

	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	assert_int_equal(dev_log_reader_count(r), NSCRIPT);
	assert_int_equal(dev_log_reader_sector_size(r), 512);
	struct dev_log_entry e;
	for (size_t i = 0; i < NSCRIPT; i++) {
		assert_int_equal(dev_log_reader_next(r, &e), 1);
		const struct op *o = &script[i];
		assert_int_equal(e.index, i);
		switch (o->kind) {
		case 'W': {
			uint64_t f = (o->flags & DEV_IO_FUA ? DEV_LOG_FUA : 0) |
				     (o->flags & DEV_IO_PREFLUSH ? DEV_LOG_FLUSH : 0);
			assert_int_equal(e.flags, f);
			assert_int_equal(e.sector, o->sector);
			assert_int_equal(e.nr_sectors, o->nr);
			assert_int_equal(e.data_len, (uint64_t)o->nr * 512);
			static char want[1024 * 512];
			pattern(want, (size_t)o->nr * 512, o->seed);
			assert_memory_equal(e.data, want, (size_t)o->nr * 512);
			break;
		}
		case 'F':
			assert_int_equal(e.flags, DEV_LOG_FLUSH);
			assert_int_equal(e.nr_sectors, 0);
			break;
		case 'M':
			assert_int_equal(e.flags, DEV_LOG_MARK);
			assert_int_equal(e.data_len, strlen(o->mark));
			assert_memory_equal(e.data, o->mark, strlen(o->mark));
			break;
		case 'D':
			assert_int_equal(e.flags, DEV_LOG_DISCARD);
			assert_int_equal(e.sector, o->sector);
			assert_int_equal(e.nr_sectors, o->nr);
			break;
		}
	}
	assert_int_equal(dev_log_reader_next(r, &e), 0);
	assert_int_equal(dev_log_reader_rewind(r), 0);
	assert_int_equal(dev_log_reader_next(r, &e), 1);
	assert_int_equal(e.index, 0);
	dev_log_reader_close(r);

	/* Crash points: after FLUSH(2), MARK(3), FUA(4), preflush write(6), MARK(7). */
	uint64_t *pts;
	size_t n;
	assert_int_equal(dev_log_crash_points(path, &pts, &n), 0);
	uint64_t want_pts[] = { 3, 4, 5, 7, 8 };
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pts[i], want_pts[i]);
	free(pts);

	/* Replay every prefix onto a fresh mem: device. */
	for (size_t k = 0; k <= NSCRIPT; k++) {
		struct dev *t = open_ok("mem:4M");
		assert_int_equal(dev_log_replay(path, k, t), 0);
		read_image(t, img);
		shadow(exp, k);
		if (memcmp(img, exp, DEVSZ))
			fail_msg("replay of prefix %zu differs", k);
		dev_close(t);
	}
	/* Replay onto a log: device reproduces the log (marks included). */
	char *path2 = tmp_log();
	snprintf(spec, sizeof(spec), "log:mem:4M,to=%s", path2);
	struct dev *t = open_ok(spec);
	assert_int_equal(dev_log_replay(path, UINT64_MAX, t), 0);
	dev_close(t);
	assert_int_equal(dev_log_reader_open(path2, &r), 0);
	assert_int_equal(dev_log_reader_count(r), NSCRIPT);
	dev_log_reader_close(r);
	unlink(path2);
	free(path2);
	unlink(path);
	free(path);
}

/* Byte layout as dm-log-writes / replay-log expect it. */
static void test_log_raw_format(void **state)
{
	(void)state;
	char *path = tmp_log();
	char spec[256];
	snprintf(spec, sizeof(spec), "log:mem:1M,to=%s", path);
	struct dev *d = open_ok(spec);
	char buf[1024];
	pattern(buf, sizeof(buf), 9);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 5, 2, buf, DEV_IO_FUA), 0);
	assert_int_equal(dev_mark(d, "hello"), 0);
	dev_close(d);
	int fd = open(path, O_RDONLY);
	static unsigned char raw[4096];
	ssize_t n = read(fd, raw, sizeof(raw));
	close(fd);
	assert_int_equal(n, 512 + 512 + 1024 + 512);
	assert_int_equal(le64(raw + 0), 0x6a736677736872ull);
	assert_int_equal(le64(raw + 8), 1);
	assert_int_equal(le64(raw + 16), 2);
	assert_int_equal(raw[24] | raw[25] << 8 | raw[26] << 16 | raw[27] << 24, 512);
	for (int i = 28; i < 512; i++)
		assert_int_equal(raw[i], 0);
	unsigned char *e0 = raw + 512;
	assert_int_equal(le64(e0 + 0), 5);
	assert_int_equal(le64(e0 + 8), 2);
	assert_int_equal(le64(e0 + 16), 2 /* FUA */);
	assert_int_equal(le64(e0 + 24), 0);
	for (int i = 32; i < 512; i++)
		assert_int_equal(e0[i], 0); /* replay-log rejects non-zero padding */
	assert_memory_equal(raw + 1024, buf, 1024);
	unsigned char *e1 = raw + 2048;
	assert_int_equal(le64(e1 + 0), 0);
	assert_int_equal(le64(e1 + 8), 0);
	assert_int_equal(le64(e1 + 16), 8 /* MARK */);
	assert_int_equal(le64(e1 + 24), 5);
	assert_memory_equal(e1 + 32, "hello", 6); /* NUL-terminated by the zero padding */
	unlink(path);
	free(path);
}

/* A FLUSH entry records its issue point (entries logged when it was
 * submitted) in the header's padding at byte 48, past the byte replay-log
 * checks (32); the reader returns it as issued. */
static void test_log_flush_issue_format(void **state)
{
	(void)state;
	char *path = tmp_log();
	char spec[256];
	snprintf(spec, sizeof(spec), "log:mem:1M,to=%s", path);
	struct dev *d = open_ok(spec);
	char buf[1024];
	pattern(buf, sizeof(buf), 3);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 5, 2, buf, 0), 0);
	assert_int_equal(dev_flush_sync(d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 9, 2, buf, DEV_IO_PREFLUSH), 0);
	dev_close(d);
	int fd = open(path, O_RDONLY);
	static unsigned char raw[8192];
	ssize_t n = read(fd, raw, sizeof(raw));
	close(fd);
	assert_int_equal(n, 512 + (512 + 1024) + 512 + (512 + 1024));
	unsigned char *f = raw + 512 + 1536;
	assert_int_equal(le64(f + 16), 1 /* FLUSH */);
	assert_int_equal(f[32], 0); /* replay-log's padding check */
	assert_int_equal(le64(f + 48), 0x6465757373697366ull);
	assert_int_equal(le64(f + 56), 1); /* the write before it */
	unsigned char *pw = f + 512;
	assert_int_equal(le64(pw + 16), 1 /* FLUSH: the PREFLUSH write */);
	assert_int_equal(le64(pw + 56), 2);
	struct dev_log_reader *r;
	struct dev_log_entry e;
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	uint64_t want[] = { 0, 1, 2 };
	for (int i = 0; i < 3; i++) {
		assert_int_equal(dev_log_reader_next(r, &e), 1);
		assert_int_equal(e.issued, want[i]);
	}
	dev_log_reader_close(r);
	unlink(path);
	free(path);
}

/* A log whose writer died: the super's count rules, trailing junk is ignored. */
static void test_log_partial(void **state)
{
	(void)state;
	char *path = tmp_log();
	char spec[256];
	snprintf(spec, sizeof(spec), "log:mem:1M,to=%s", path);
	struct dev *d = open_ok(spec);
	char buf[4096] = { 1 };
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	assert_int_equal(dev_flush_sync(d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 8, 8, buf, 0), 0);
	/* While still open: the super counts up to the flush at least. */
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	assert_int_equal(dev_log_reader_count(r), 2);
	struct dev_log_entry e;
	assert_int_equal(dev_log_reader_next(r, &e), 1);
	assert_int_equal(dev_log_reader_next(r, &e), 1);
	assert_int_equal(e.flags, DEV_LOG_FLUSH);
	assert_int_equal(dev_log_reader_next(r, &e), 0);
	dev_log_reader_close(r);
	dev_close(d);
	/* Append a partial entry. */
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "partial entry junk", 18), 18);
	close(fd);
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	assert_int_equal(dev_log_reader_count(r), 3);
	int rc, cnt = 0;
	while ((rc = dev_log_reader_next(r, &e)) == 1)
		cnt++;
	assert_int_equal(rc, 0);
	assert_int_equal(cnt, 3);
	dev_log_reader_close(r);
	/* A truncated log (count says more than is there) is an error, not a crash. */
	assert_int_equal(truncate(path, 512 + 512 + 4096 + 512 + 100), 0);
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	assert_int_equal(dev_log_reader_next(r, &e), 1);
	assert_int_equal(dev_log_reader_next(r, &e), 1);
	rc = dev_log_reader_next(r, &e);
	assert_int_equal(rc, -EIO);
	assert_non_null(strstr(err_last(rc), "truncated"));
	dev_log_reader_close(r);
	/* Not a log at all. */
	assert_int_equal(truncate(path, 0), 0);
	rc = dev_log_reader_open(path, &r);
	assert_true(rc < 0);
	assert_non_null(strstr(err_last(rc), path));
	rc = dev_log_reader_open("/nonexistent/x.log", &r);
	assert_int_equal(rc, -ENOENT);
	unlink(path);
	free(path);
}

/* Wrappers nest both ways; inner specs keep their commas. */
static void test_log_nesting(void **state)
{
	(void)state;
	char *path = tmp_log();
	char spec[256];
	char buf[4096] = { 2 };
	/* fault inside log: the failed write is not logged. */
	snprintf(spec, sizeof(spec), "log:fault:mem:1M,op=write,sector=0-7,count=1,to=%s", path);
	struct dev *d = open_ok(spec);
	assert_string_equal(dev_spec(d), spec);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), -EIO);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	assert_int_equal(dev_fault_injected(d), 1);
	dev_close(d);
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	assert_int_equal(dev_log_reader_count(r), 1);
	dev_log_reader_close(r);
	/* log inside fault: a failed flush never reaches the log. */
	snprintf(spec, sizeof(spec), "fault:log:mem:1M,to=%s,op=flush", path);
	d = open_ok(spec);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	assert_int_equal(dev_flush_sync(d), -EIO);
	assert_int_equal(dev_mark(d, "passes through"), 0);
	dev_close(d);
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	assert_int_equal(dev_log_reader_count(r), 2);
	struct dev_log_entry e;
	assert_int_equal(dev_log_reader_next(r, &e), 1);
	assert_int_equal(e.flags, 0);
	assert_int_equal(dev_log_reader_next(r, &e), 1);
	assert_int_equal(e.flags, DEV_LOG_MARK);
	dev_log_reader_close(r);
	/* A sim with options inside a log; stats are found through the wrapper. */
	snprintf(spec, sizeof(spec), "log:sim:ssd,scale=0.001,size=16M,to=%s", path);
	d = open_ok(spec);
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	assert_int_equal(g.size_bytes, 16u << 20);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, buf, 0), 0);
	struct dev_sim_stats st;
	assert_int_equal(dev_sim_stats(d, &st), 0);
	assert_int_equal(st.writes, 1);
	dev_close(d);
	unlink(path);
	free(path);
}

/* Concurrent writers and marks through log: over an asynchronous device. */
struct writer {
	struct dev *d;
	unsigned id;
	int errors;
};

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	char buf[4096];
	for (unsigned i = 0; i < 50; i++) {
		pattern(buf, sizeof(buf), w->id * 1000 + i);
		if (dev_rw_sync(w->d, DEV_OP_WRITE, (uint64_t)(w->id * 64 + i % 8) * 8, 8, buf,
				i % 10 == 9 ? DEV_IO_FUA : 0))
			w->errors++;
		if (i % 25 == 0) {
			char m[32];
			snprintf(m, sizeof(m), "w%u-%u", w->id, i);
			if (dev_mark(w->d, m))
				w->errors++;
		}
	}
	return NULL;
}

static void test_log_concurrent(void **state)
{
	(void)state;
	char *path = tmp_log();
	char spec[256];
	snprintf(spec, sizeof(spec), "log:sim:ssd,scale=0.01,size=4M,to=%s", path);
	struct dev *d = open_ok(spec);
	pthread_t t[4];
	struct writer w[4];
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct writer){ .d = d, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, writer_thread, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].errors, 0);
	}
	assert_int_equal(dev_flush_sync(d), 0);
	static unsigned char img[DEVSZ], img2[DEVSZ];
	read_image(d, img);
	dev_close(d);
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(path, &r), 0);
	assert_int_equal(dev_log_reader_count(r), 4 * 50 + 4 * 2 + 1);
	dev_log_reader_close(r);
	struct dev *t2 = open_ok("mem:4M");
	assert_int_equal(dev_log_replay(path, UINT64_MAX, t2), 0);
	read_image(t2, img2);
	assert_memory_equal(img, img2, DEVSZ);
	dev_close(t2);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_roundtrip),
		cmocka_unit_test(test_log_raw_format),
		cmocka_unit_test(test_log_flush_issue_format),
		cmocka_unit_test(test_log_partial),
		cmocka_unit_test(test_log_nesting),
		cmocka_unit_test(test_log_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
