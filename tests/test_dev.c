/* Device layer: spec parsing, mem:, command validation, sync helpers.
 * nostall-test: concurrent */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "dev/dev_impl.h"
#include "util/err.h"
#include "nostall/nostall.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static void expect_open_fails(const char *spec, int err, const char *msg_part)
{
	struct dev *d = (struct dev *)0x1;
	err_clear();
	int rc = dev_open(spec, &d);
	if (rc != err)
		fail_msg("dev_open('%s') = %d, want %d (%s)", spec, rc, err, err_last(rc));
	assert_null(d);
	const char *m = err_last(rc);
	if (!strstr(m, msg_part))
		fail_msg("dev_open('%s'): message '%s' lacks '%s'", spec, m, msg_part);
}

static void test_bad_specs(void **state)
{
	(void)state;
	expect_open_fails("", -EINVAL, "empty device spec");
	expect_open_fails("floppy:1M", -EINVAL, "unknown kind 'floppy'");
	expect_open_fails("mem", -EINVAL, "missing arguments");
	expect_open_fails("mem:", -EINVAL, "missing arguments");
	expect_open_fails("mem:12Q", -EINVAL, "mem: bad size '12Q'");
	expect_open_fails("mem:0", -EINVAL, "multiple of 512");
	expect_open_fails("mem:1000", -EINVAL, "multiple of 512");
	expect_open_fails("mem:1M,depth=3", -EINVAL, "mem: takes only a size");
	expect_open_fails("file:/nonexistent/nostall-dev-test", -ENOENT, "/nonexistent/nostall-dev-test");
	expect_open_fails("sim:floppy", -EINVAL, "sim: unknown model 'floppy'");
	expect_open_fails("sim:hdd,depth=0", -EINVAL, "depth");
	expect_open_fails("sim:hdd,bogus=1", -EINVAL, "bogus");
	expect_open_fails("sim:ssd,size=12Q", -EINVAL, "12Q");
	expect_open_fails("sim:hdd,scale=-1", -EINVAL, "scale");
	expect_open_fails("sim:hdd,size=2G,capacity=1G", -EINVAL, "exceeds capacity");
	expect_open_fails("sim:hdd,aging=0", -EINVAL, "aging");
	expect_open_fails("log:mem:1M", -EINVAL, "to=");
	expect_open_fails("log:mem:1M,to=/nonexistent/dir/x.log", -ENOENT, "/nonexistent/dir/x.log");
	/* a bad inner spec is refused before the log file is touched */
	expect_open_fails("log:floppy:1,to=/nonexistent/dir/x.log", -EINVAL, "unknown kind 'floppy'");
	expect_open_fails("fault:mem:1M,err=bogus", -EINVAL, "bogus");
	expect_open_fails("fault:mem:1M,op=chew", -EINVAL, "chew");
	expect_open_fails("fault:mem:1M,sector=9-3", -EINVAL, "9-3");
	expect_open_fails("fault:mem:1M,prob=2", -EINVAL, "prob");
	expect_open_fails("fault:mem:1M,bogus=2", -EINVAL, "bogus");
}


/* The file a spec names, as a string (NULL: none). */
static char *spec_file(const struct dev_spec_info *di)
{
	return di->file ? strndup(di->file, di->file_len) : NULL;
}

/* dev_spec_parse: kind, base under wrappers, the file named, in memory or
 * simulated, without opening anything (the files need not exist). */
static void test_spec_parse(void **state)
{
	(void)state;
	static const struct {
		const char *spec;
		enum dev_kind kind, base;
		bool has_kind, plain, sim, mem;
		const char *file;
	} cases[] = {
		{ "/img/a.img", DEV_KIND_PATH, DEV_KIND_PATH, false, true, false, false, "/img/a.img" },
		{ "odd:name", DEV_KIND_PATH, DEV_KIND_PATH, false, true, false, false, "odd:name" },
		{ "file:/x,direct=0,depth=4", DEV_KIND_FILE, DEV_KIND_FILE, true, true, false, false, "/x" },
		{ "file:/a,b", DEV_KIND_FILE, DEV_KIND_FILE, true, true, false, false, "/a,b" },
		{ "mem:64M", DEV_KIND_MEM, DEV_KIND_MEM, true, false, false, true, NULL },
		{ "sim:hdd", DEV_KIND_SIM, DEV_KIND_SIM, true, false, true, true, NULL },
		{ "sim:ssd,size=1G,file=/s.img,scale=0.1", DEV_KIND_SIM, DEV_KIND_SIM, true, false, true, false, "/s.img" },
		{ "nbd:nbd+unix:///?socket=/s,conns=2", DEV_KIND_NBD, DEV_KIND_NBD, true, false, false, false, NULL },
		{ "log:sim:hdd,scale=0.1,to=/tmp/x.log", DEV_KIND_LOG, DEV_KIND_SIM, true, false, true, true, NULL },
		{ "fault:file:/f.img,op=read", DEV_KIND_FAULT, DEV_KIND_FILE, true, false, false, false, "/f.img" },
		{ "fault:log:file:/g,direct=0,to=/l,op=flush", DEV_KIND_FAULT, DEV_KIND_FILE, true, false, false, false, "/g" },
		{ "fault:fault:mem:1M,op=read,,op=write", DEV_KIND_FAULT, DEV_KIND_MEM, true, false, false, true, NULL },
		{ "log:sim:hdd,file=/h,to=/l", DEV_KIND_LOG, DEV_KIND_SIM, true, false, true, false, "/h" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct dev_spec_info di;
		assert_int_equal(dev_spec_parse(cases[i].spec, &di), 0);
		assert_int_equal(di.kind, cases[i].kind);
		assert_int_equal(di.base, cases[i].base);
		assert_int_equal(di.has_kind, cases[i].has_kind);
		assert_int_equal(di.plain_file, cases[i].plain);
		assert_int_equal(di.simulated, cases[i].sim);
		assert_int_equal(di.in_memory, cases[i].mem);
		char *f = spec_file(&di);
		if (cases[i].file)
			assert_string_equal(f, cases[i].file);
		else
			assert_null(f);
		free(f);
		assert_int_equal(dev_spec_has_kind(cases[i].spec), cases[i].has_kind);
	}
	/* Malformed: one message naming the spec; kind still read. */
	static const char *const bad[] = { "", "mem:", "log:,to=/x", "fault:nope:1,op=read", "log:mem", NULL };
	for (size_t i = 0; bad[i]; i++) {
		struct dev_spec_info di;
		err_clear();
		assert_int_equal(dev_spec_parse(bad[i], &di), -EINVAL);
		assert_true(strlen(err_last(-EINVAL)) > 10);
		if (*bad[i])
			assert_true(di.has_kind);
	}
	assert_string_equal(dev_kind_name(DEV_KIND_PATH), "file");
	assert_string_equal(dev_kind_name(DEV_KIND_NBD), "nbd");
}

/* The public face: nostall_dev_spec_info gives the same answers by name. */
static void test_spec_info_public(void **state)
{
	(void)state;
	struct nostall_dev_info di;
	const char *spec = "fault:sim:hdd,size=64M,file=/d/i.img,op=write";
	assert_int_equal(nostall_dev_spec_info(spec, &di), 0);
	assert_string_equal(di.kind, "fault");
	assert_string_equal(di.base_kind, "sim");
	assert_true(di.has_kind && di.simulated && !di.in_memory && !di.plain_file);
	assert_int_equal(di.file_len, strlen("/d/i.img"));
	assert_memory_equal(di.file, "/d/i.img", di.file_len);
	assert_ptr_equal(di.file, strstr(spec, "/d/i.img")); /* points into spec */
	assert_int_equal(nostall_dev_spec_info("plain.img", &di), 0);
	assert_string_equal(di.kind, "file");
	assert_true(!di.has_kind && di.plain_file);
	assert_int_equal(nostall_dev_spec_info("nbd:", &di), -EINVAL);
	assert_true(di.has_kind);
	assert_non_null(strstr(nostall_errmsg(-EINVAL), "missing arguments"));
	/* the caller's own message, read back the same way */
	assert_int_equal(nostall_errmsg_set(-ERANGE, "option %s too big", "x"), -ERANGE);
	assert_string_equal(nostall_errmsg(-ERANGE), "option x too big");
}

static void test_split_spec(void **state)
{
	(void)state;
	static const char *const log_names[] = { "to", NULL };
	static const char *const fault_names[] = { "op", "err", "count", "after", NULL };
	char *head, *opts;
	assert_int_equal(dev_split_spec("sim:hdd,scale=0.1,to=/tmp/x.log", log_names, &head, &opts), 0);
	assert_string_equal(head, "sim:hdd,scale=0.1");
	assert_string_equal(opts, "to=/tmp/x.log");
	free(head);
	free(opts);
	assert_int_equal(dev_split_spec("mem:1M", log_names, &head, &opts), 0);
	assert_string_equal(head, "mem:1M");
	assert_string_equal(opts, "");
	free(head);
	free(opts);
	/* A repeated name stops: everything left of it is the inner spec. */
	assert_int_equal(dev_split_spec("fault:mem:1M,op=read,err=eio,op=write,count=2", fault_names,
					&head, &opts), 0);
	assert_string_equal(head, "fault:mem:1M,op=read");
	assert_string_equal(opts, "err=eio,op=write,count=2");
	free(head);
	free(opts);
	/* ",," is an explicit boundary. */
	assert_int_equal(dev_split_spec("fault:mem:1M,op=read,err=eio,,op=write,count=2", fault_names,
					&head, &opts), 0);
	assert_string_equal(head, "fault:mem:1M,op=read,err=eio");
	assert_string_equal(opts, "op=write,count=2");
	free(head);
	free(opts);
	assert_int_equal(dev_split_spec("mem:1M,,", fault_names, &head, &opts), 0);
	assert_string_equal(head, "mem:1M,");
	assert_string_equal(opts, "");
	free(head);
	free(opts);
	/* An unknown name stops too. */
	assert_int_equal(dev_split_spec("log:mem:1M,to=/x,op=write", fault_names, &head, &opts), 0);
	assert_string_equal(head, "log:mem:1M,to=/x");
	assert_string_equal(opts, "op=write");
	free(head);
	free(opts);
	/* The first field is never taken. */
	assert_int_equal(dev_split_spec("op=write", fault_names, &head, &opts), 0);
	assert_string_equal(head, "op=write");
	assert_string_equal(opts, "");
	free(head);
	free(opts);
}

static void test_mem_rw(void **state)
{
	(void)state;
	struct dev *d;
	assert_int_equal(dev_open("mem:16G", &d), 0); /* sparse: cheap */
	assert_string_equal(dev_spec(d), "mem:16G");
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	assert_int_equal(g.size_bytes, 16ull << 30);
	assert_false(g.rotational);
	assert_int_equal(g.logical_block_size, 512);
	assert_true(g.max_hw_sectors >= 1024);

	char *w = malloc(65536 * 3), *r = malloc(65536 * 3);
	fill(w, 65536 * 3, 5);
	/* Unwritten reads as zero. */
	memset(r, 0xaa, 4096);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 1000, 8, r, 0), 0);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(r[i], 0);
	/* Round trip across chunk boundaries (unaligned start), and at the end. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 127, 384, w, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 127, 384, r, 0), 0);
	assert_memory_equal(w, r, 384 * 512);
	uint64_t last = (16ull << 30) / 512 - 8;
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, last, 8, w, DEV_IO_FUA | DEV_IO_PREFLUSH), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, last, 8, r, 0), 0);
	assert_memory_equal(w, r, 4096);
	assert_int_equal(dev_flush_sync(d), 0);
	/* Discard zeroes. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_DISCARD, 127, 384, NULL, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 127, 384, r, 0), 0);
	for (int i = 0; i < 384 * 512; i++)
		assert_int_equal(r[i], 0);
	/* Larger than max_hw_sectors through the sync helper: split. */
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 4096, 384, w, 0), 0);
	dev_close(d);
	free(w);
	free(r);
}

static void nop_done(struct dev_io *io, int err)
{
	int *p = io->priv;
	*p = err ? err : 1;
}

static void test_mem_invalid_commands(void **state)
{
	(void)state;
	struct dev *d;
	assert_int_equal(dev_open("mem:1M", &d), 0);
	char buf[4096];
	int res = 0;
	struct dev_io io = { .op = DEV_OP_READ, .sector = 2048, .nr_sectors = 1, .buf = buf,
			     .done = nop_done, .priv = &res };
	assert_int_equal(dev_submit(d, &io), -ERANGE); /* past the end */
	io.sector = 2047;
	io.nr_sectors = 2;
	assert_int_equal(dev_submit(d, &io), -ERANGE); /* straddles the end */
	io.sector = 0;
	io.nr_sectors = 0;
	assert_int_equal(dev_submit(d, &io), -EINVAL); /* empty */
	io.nr_sectors = 100000;
	assert_int_equal(dev_submit(d, &io), -EINVAL); /* > max_hw_sectors */
	io.nr_sectors = 1;
	io.buf = NULL;
	assert_int_equal(dev_submit(d, &io), -EINVAL);
	io.buf = buf;
	io.op = (enum dev_op)17;
	assert_int_equal(dev_submit(d, &io), -EINVAL);
	io.op = DEV_OP_READ;
	io.flags = 1u << 7;
	assert_int_equal(dev_submit(d, &io), -EINVAL);
	assert_int_equal(res, 0); /* done() never called */
	io.flags = 0;
	assert_int_equal(dev_submit(d, &io), 0);
	assert_int_equal(res, 1); /* mem completes inside submit */
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 2047, 2, buf, 0), -ERANGE);
	dev_close(d);
	dev_close(NULL);
}

/* Several threads hammer one mem device; each owns a region. */
struct hammer {
	struct dev *d;
	unsigned id;
	int failures;
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	char w[8192], r[8192];
	for (unsigned i = 0; i < 200; i++) {
		uint64_t sector = (uint64_t)h->id * 4096 + (i % 64) * 16;
		fill(w, sizeof(w), h->id * 1000 + i);
		if (dev_rw_sync(h->d, DEV_OP_WRITE, sector, 16, w, 0) ||
		    dev_rw_sync(h->d, DEV_OP_READ, sector, 16, r, 0) || memcmp(w, r, sizeof(w)))
			h->failures++;
	}
	return NULL;
}

static void test_mem_concurrent(void **state)
{
	(void)state;
	struct dev *d;
	assert_int_equal(dev_open("mem:64M", &d), 0);
	pthread_t t[8];
	struct hammer h[8];
	for (unsigned i = 0; i < 8; i++) {
		h[i] = (struct hammer){ .d = d, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, hammer_thread, &h[i]), 0);
	}
	for (unsigned i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(h[i].failures, 0);
	}
	dev_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_spec),
		cmocka_unit_test(test_spec_parse),
		cmocka_unit_test(test_spec_info_public),
		cmocka_unit_test(test_mem_rw),
		cmocka_unit_test(test_mem_invalid_commands),
		cmocka_unit_test(test_mem_concurrent),
		cmocka_unit_test(test_bad_specs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
