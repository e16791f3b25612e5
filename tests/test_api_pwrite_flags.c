/* nostall_pwrite_flags and nostall_throttle (include/nostall/nostall.h):
 * a NOSTALL_PWRITE_NOTHROTTLE write leaves the dirty-page throttle to the
 * caller (the FUSE daemon replies in between, docs/fuse.md "Reply before
 * the throttle") but is otherwise the same write: data readable, blocks
 * allocated, ENOSPC/EFBIG reported, image clean. nostall_throttle then
 * brings the dirty + writeback pages under the dirty limit.
 * NOSTALL_PWRITE_KEEP_SETID leaves setuid/setgid to the caller. The page
 * cache's mount options: dirty limits and the flusher's ages. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/fstarget_nostall.h"
#include "lib/oracles.h"

#include "api/api_int.h"
#include "extfs/core/ext3_int.h"
#include "page/page.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256], img[300];

#define MiB (1024u * 1024)

static int setup(void **state)
{
	snprintf(img, sizeof img, "%s/pwrite_flags.img", tmpdir);
	return fst_nostall_mkfs(img, 4096, 64u << 20) ? -1 : 0;
}

static int teardown(void **state)
{
	unlink(img);
	return 0;
}

static struct page_stats stats_of(struct nostall_fs *fs)
{
	struct page_stats st;
	page_cache_stats(fs->e->pcache, &st);
	return st;
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 31u + seed + i / 4096u);
}

static void test_nothrottle(void **state)
{
	/* a 2 MiB cache: the dirty limit is 256 pages (the dirty floor's cap,
	 * half the cache), far below one write */
	struct nostall_fs *fs = fsimg_api_mount(img, "cache=2M", 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/f", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f), 0);
	size_t len = 8 * MiB;
	unsigned char *w = malloc(len), *r = malloc(len);
	assert_non_null(w);
	assert_non_null(r);
	fill(w, len, 1);

	assert_int_equal(nostall_pwrite_flags(f, w, 4096, 0, 0x80u), -EINVAL);

	/* Not throttled however far over the limit it goes. */
	struct page_stats st0 = stats_of(fs);
	assert_int_equal(nostall_pwrite_flags(f, w, len, 0, NOSTALL_PWRITE_NOTHROTTLE), (ssize_t)len);
	struct page_stats st1 = stats_of(fs);
	assert_int_equal(st1.throttled, st0.throttled);
	/* The throttle it skipped: under the limit on return. */
	nostall_throttle(fs);
	struct page_stats st2 = stats_of(fs);
	assert_true(st2.dirty + st2.writeback <= st2.dirty_limit);

	/* The control: the same write without the flag is throttled. */
	fill(w, len, 2);
	assert_int_equal(nostall_pwrite_flags(f, w, len, len, 0), (ssize_t)len);
	assert_true(stats_of(fs).throttled > st2.throttled);

	/* Both writes are there. */
	assert_int_equal(nostall_pread(f, r, len, len), (ssize_t)len);
	assert_memory_equal(r, w, len);
	fill(w, len, 1);
	assert_int_equal(nostall_pread(f, r, len, 0), (ssize_t)len);
	assert_memory_equal(r, w, len);
	struct nostall_stat sb;
	assert_int_equal(nostall_fstat(f, &sb), 0);
	assert_int_equal(sb.size, 2 * len);
	assert_int_equal(nostall_fsync(f, 0), 0);
	nostall_close(f);
	free(w);
	free(r);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
}

/* ENOSPC and EFBIG come back from the call itself, as from nostall_pwrite. */
static void test_errors(void **state)
{
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/big", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f), 0);
	size_t len = 4 * MiB;
	unsigned char *w = malloc(len);
	assert_non_null(w);
	fill(w, len, 3);
	uint64_t off = 0;
	ssize_t n;
	while ((n = nostall_pwrite_flags(f, w, len, off, NOSTALL_PWRITE_NOTHROTTLE)) == (ssize_t)len) {
		nostall_throttle(fs);
		off += len;
		assert_true(off < 128u * MiB); /* a 64 MiB image fills first */
	}
	if (n > 0) { /* short: space ran out midway; the next one gets none */
		off += (uint64_t)n;
		n = nostall_pwrite_flags(f, w, len, off, NOSTALL_PWRITE_NOTHROTTLE);
	}
	assert_int_equal(n, -ENOSPC);
	nostall_throttle(fs);
	assert_int_equal(nostall_pwrite_flags(f, w, 1, 1ull << 50, NOSTALL_PWRITE_NOTHROTTLE), -EFBIG);
	nostall_close(f);
	free(w);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
}

/* Write one byte at off with flags; the file's permission bits after. */
static unsigned write_mode(struct nostall_file *f, const char *c, uint64_t off, unsigned flags)
{
	struct nostall_stat sb;
	assert_int_equal(nostall_pwrite_flags(f, c, 1, off, flags), 1);
	assert_int_equal(nostall_fstat(f, &sb), 0);
	return sb.mode & 07777;
}

/* Set-id bits: cleared by a plain write from a writer without CAP_FSETID
 * (ext3's rule, with the caller's credentials: nostall_cred_use), kept by
 * one with it (root here) and with NOSTALL_PWRITE_KEEP_SETID (the FUSE
 * kernel applied the rule already). */
static void test_keep_setid(void **state)
{
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/s", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 06755, &f), 0);
	assert_int_equal(nostall_chmod(fs, "/s", 0, 06755), 0);
	assert_int_equal(write_mode(f, "a", 0, NOSTALL_PWRITE_KEEP_SETID), 06755);
	assert_int_equal(write_mode(f, "b", 1, NOSTALL_PWRITE_KEEP_SETID | NOSTALL_PWRITE_NOTHROTTLE),
			 06755);
	if (geteuid() == 0) /* the mount's default: the process's credentials */
		assert_int_equal(write_mode(f, "c", 2, 0), 06755);
	struct nostall_cred user = { .uid = 1000, .gid = 1000 };
	assert_int_equal(nostall_cred_use(&user), 0);
	assert_int_equal(write_mode(f, "c", 2, 0), 0755);
	assert_int_equal(nostall_cred_use(NULL), 0);
	char r[3];
	assert_int_equal(nostall_pread(f, r, 3, 0), 3);
	assert_memory_equal(r, "abc", 3);
	nostall_close(f);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
}

/* A read-only mount: the throttle is a no-op and writes are refused. */
static void test_readonly(void **state)
{
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/f", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f), 0);
	nostall_close(f);
	fsimg_api_umount(fs);
	fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	nostall_throttle(fs);
	assert_int_equal(nostall_create(fs, "/f", NOSTALL_O_RDONLY, 0, &f), 0);
	char c = 0;
	assert_int_equal(nostall_pwrite_flags(f, &c, 1, 0, NOSTALL_PWRITE_NOTHROTTLE), -EBADF);
	nostall_close(f);
	fsimg_api_umount(fs);
}

/* The dirty limits a mount gives its page cache (docs/page-cache.md): a
 * 24 MiB floor under 2.6.30's 20 % of the 64 MiB default cache, which
 * dirty_min=0 and the era presets turn off (unless dirty_min= is given);
 * dirty_ratio= and dirty_background_ratio= set the ratios. */
static void test_dirty_opts(void **state)
{
	const struct {
		const char *opts;
		uint64_t dirty, background;
	} c[] = {
		{ NULL, 24 * MiB / 4096, 16384 / 10 },
		{ "dirty_min=0", 16384 * 20 / 100, 16384 / 10 },
		{ "preset=2.6.30", 16384 * 20 / 100, 16384 / 10 },
		{ "preset=2.6.30,dirty_min=32M", 32 * MiB / 4096, 16384 / 10 },
		{ "dirty_min=32M,preset=2.6.29", 32 * MiB / 4096, 16384 / 10 },
		{ "dirty_ratio=50,dirty_background_ratio=5,dirty_min=0", 16384 / 2, 16384 * 5 / 100 },
		{ "dirty_min=1G", 16384 / 2, 16384 / 10 },
		{ "cache=256M", 65536 * 20 / 100, 65536 / 10 },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct nostall_fs *fs = fsimg_api_mount(img, c[i].opts, 0);
		struct page_stats st = stats_of(fs);
		if (st.dirty_limit != c[i].dirty || st.background_limit != c[i].background)
			fail_msg("-o %s: dirty limit %llu, background %llu; want %llu, %llu",
				 c[i].opts ? c[i].opts : "(none)", (unsigned long long)st.dirty_limit,
				 (unsigned long long)st.background_limit, (unsigned long long)c[i].dirty,
				 (unsigned long long)c[i].background);
		fsimg_api_umount(fs);
	}
	const char *bad[] = { "dirty_ratio=0", "dirty_ratio=101", "dirty_background_ratio=x", "dirty_min=",
			      "dirty_min=-1" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct nostall_fs *fs = NULL;
		assert_int_equal(nostall_mount(img, bad[i], 0, &fs), -EINVAL);
		assert_null(fs);
	}
}

/* dirty_expire_centisecs= and dirty_writeback_centisecs= (Linux's sysctl
 * names, per mount): a dirty page older than the expiry is written by the
 * next periodic flusher pass; with dirty_writeback_centisecs=0 no periodic
 * pass runs at all. data=writeback and commit=600, so no commit writes the
 * page instead. */
static uint64_t flusher_after(const char *opts, uint64_t want_expire_ms, uint64_t want_interval_ms,
			      int wait_ms)
{
	struct nostall_fs *fs = fsimg_api_mount(img, opts, 0);
	uint64_t v;
	assert_int_equal(page_cache_get(fs->e->pcache, "dirty_expire_ms", &v), 0);
	assert_int_equal(v, want_expire_ms);
	assert_int_equal(page_cache_get(fs->e->pcache, "writeback_interval_ms", &v), 0);
	assert_int_equal(v, want_interval_ms);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/aged", NOSTALL_O_RDWR | NOSTALL_O_CREAT | NOSTALL_O_TRUNC, 0644, &f),
			 0);
	unsigned char b[8192];
	fill(b, sizeof b, 3);
	assert_int_equal(nostall_pwrite(f, b, sizeof b, 0), (ssize_t)sizeof b);
	/* Poll (not a timing assertion): stop as soon as the flusher wrote. */
	uint64_t expired = 0;
	for (int t = 0; t < wait_ms && !expired; t += 20) {
		usleep(20 * 1000);
		expired = stats_of(fs).expired_writes;
	}
	nostall_close(f);
	fsimg_api_umount(fs);
	return expired;
}

static void test_flusher_opts(void **state)
{
	const char *base = "data=writeback,commit=600";
	char o[160];
	snprintf(o, sizeof o, "%s,dirty_expire_centisecs=10,dirty_writeback_centisecs=10", base);
	assert_true(flusher_after(o, 100, 100, 5000) > 0);
	snprintf(o, sizeof o, "%s,dirty_expire_centisecs=10,dirty_writeback_centisecs=0", base);
	assert_int_equal(flusher_after(o, 100, 0, 700), 0);
	/* 2.6.30's defaults: 30 s and 5 s, nothing written in the first 0.7 s */
	assert_int_equal(flusher_after(base, 30000, 5000, 700), 0);
	/* ... but the flusher still answers the background limit. A 2 MiB
	 * cache with dirty_ratio=50: the dirty limit is 256 pages, the
	 * background limit 51, and the flusher is kicked at 51 plus a batch of
	 * one 512 KiB run, 179. 200 dirty pages kick it and stay under the
	 * dirty limit, so no writer is throttled and only the flusher writes. */
	struct nostall_fs *fs = fsimg_api_mount(img, "data=writeback,commit=600,cache=2M,dirty_min=0,"
						   "dirty_ratio=50,dirty_writeback_centisecs=0", 0);
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, "/bg", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f), 0);
	static unsigned char w[200 * 4096];
	fill(w, sizeof w, 4);
	assert_int_equal(nostall_pwrite(f, w, sizeof w, 0), (ssize_t)sizeof w);
	uint64_t bg = 0;
	for (int t = 0; t < 5000 && !bg; t += 20) {
		usleep(20 * 1000);
		bg = stats_of(fs).background_writes;
	}
	assert_true(bg > 0);
	assert_int_equal(stats_of(fs).throttled, 0);
	nostall_close(f);
	fsimg_api_umount(fs);
	const char *bad[] = { "dirty_expire_centisecs=", "dirty_expire_centisecs=x",
			      "dirty_expire_centisecs=8640001", "dirty_writeback_centisecs=-1",
			      "dirty_writeback_centisecs=360001" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fs = NULL;
		assert_int_equal(nostall_mount(img, bad[i], 0, &fs), -EINVAL);
		assert_null(fs);
	}
}

int main(void)
{
	int orc = oracles_check("test_api_pwrite_flags", "mke2fs e2fsck");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "api_pwrite_flags"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nothrottle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_setid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dirty_opts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flusher_opts, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
