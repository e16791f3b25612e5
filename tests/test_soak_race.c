/* Races the soak found by running the FUSE daemon under ThreadSanitizer
 * (stress-ng's stressors beside each other), reproduced here through the
 * public API so that the TSan variant of this test sees them:
 *
 * - statfs_while_allocating: nostall_statfs read the superblock's free
 *   counts without sb_lock while allocations rewrote them under it (on a
 *   read-write mount, only to replace them with the allocators' live
 *   counts). Now a read-write mount reads only the live counts.
 *
 * nostall-test: concurrent (a writer thread allocates and frees while the
 * main thread calls nostall_statfs). Oracles: mke2fs. Deterministic work;
 * the interleaving is the scheduler's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "nostall/nostall.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

struct writer {
	struct nostall_fs *fs;
	atomic_bool done;
	int rc;
};

/* Files created, written (8 KiB) and every other one removed: blocks and
 * inodes allocated and freed all along. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	static char buf[8192];
	memset(buf, 'w', sizeof buf);
	char p[32];
	for (unsigned i = 0; i < 400 && !w->rc; i++) {
		snprintf(p, sizeof p, "/f%u", i);
		struct nostall_file *f;
		w->rc = nostall_create(w->fs, p, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &f);
		if (w->rc)
			break;
		if (nostall_pwrite(f, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
			w->rc = -1;
		nostall_close(f);
		if (!w->rc && i % 2)
			w->rc = nostall_unlink(w->fs, p);
	}
	atomic_store(&w->done, true);
	return NULL;
}

static void test_statfs_while_allocating(void **state)
{
	(void)state;
	char img[300];
	snprintf(img, sizeof img, "%s/statfs.img", tmpdir);
	fsimg_assert_mkfs(img, 1024, 16384, NULL);
	struct writer w = { .rc = 0 };
	atomic_init(&w.done, false);
	assert_int_equal(nostall_mount(img, NULL, 0, &w.fs), 0);
	struct nostall_statfs st0;
	assert_int_equal(nostall_statfs(w.fs, &st0), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	unsigned calls = 0;
	do {
		struct nostall_statfs st;
		assert_int_equal(nostall_statfs(w.fs, &st), 0);
		assert_true(st.blocks_free <= st.blocks);
		assert_true(st.files_free <= st.files);
		calls++;
	} while (!atomic_load(&w.done) || calls < 100);
	pthread_join(t, NULL);
	assert_int_equal(w.rc, 0);
	/* 200 files of 8 KiB left: the live counts say so */
	struct nostall_statfs st1;
	assert_int_equal(nostall_statfs(w.fs, &st1), 0);
	assert_int_equal(st0.files_free - st1.files_free, 200);
	assert_true(st0.blocks_free - st1.blocks_free >= 200 * 8);
	assert_int_equal(nostall_umount(w.fs), 0);
	fsimg_assert_clean(img);
	unlink(img);
}

int main(void)
{
	int orc = oracles_check("test_soak_race", "mke2fs e2fsck");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "soak_race"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statfs_while_allocating),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
