/* The errors= policy of the allocators (split from test_ext3_alloc.c):
 * corruption met while allocating or freeing — a block freed twice, a
 * bitmap freeing metadata, a block bitmap claiming its own block free — is
 * -EUCLEAN and handled as errors=continue, remount-ro or panic says, on
 * writable mounts of mke2fs images (src/extfs/inode/balloc.c, super_write.c).
 *
 * Oracles: dumpe2fs (the superblock's error state), debugfs (freeb to
 * corrupt a bitmap).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/ext3.h"
#include "extfs/core/ext3_int.h"
#include "extfs/core/write.h"

#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

/* Does dumpe2fs say the filesystem has errors? */
static bool has_errors(const char *img)
{
	return fsimg_count("with errors", "dumpe2fs -h '%s' 2>/dev/null", img) > 0;
}

/* A directory's block allocated and freed, then freed again (-EUCLEAN). */
static struct ext3_inode *double_free(struct ext3_fs *fs, struct ext3_inode *root)
{
	struct ext3_inode *d = fsimg_assert_new_inode(fs, root, EXT3_S_IFDIR | 0700);
	uint64_t b;
	uint32_t n;
	assert_int_equal(fsimg_new_blocks(fs, d, 0, 1, &b, &n), 0);
	fsimg_assert_free_blocks(fs, d, b, 1);
	struct jbd_handle *h = fsimg_hstart(fs, 8);
	assert_int_equal(ext3_free_blocks(h, d, b, 1, false), -EUCLEAN);
	/* Freeing metadata (a block bitmap) is refused too. */
	if (ext3_fs_writable(fs))
		assert_int_equal(ext3_free_blocks(h, d, fs->gd[1].bg_block_bitmap, 1, false),
				 -EUCLEAN);
	fsimg_hstop(h);
	return d;
}

static void test_errors_policy(void **state)
{
	(void)state;
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, "errs", 1024, 16384, NULL, "errors=continue");
	uint64_t free0 = x.m.fs->free_blocks;
	struct ext3_inode *d = double_free(x.m.fs, x.m.root);
	assert_int_equal(x.m.fs->free_blocks, free0);
	assert_true(le16_to_cpu(x.m.fs->sb.s_state) & EXT3_ERROR_FS);
	assert_true(ext3_fs_writable(x.m.fs)); /* continue */
	fsimg_assert_free_inode(x.m.fs, d);
	fsimg_fx_close(&x, false);
	assert_true(has_errors(x.img));

	fsimg_fx_open(&x, tmpdir, "errs_ro", 1024, 16384, NULL, "errors=remount-ro");
	d = double_free(x.m.fs, x.m.root);
	assert_false(ext3_fs_writable(x.m.fs));
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(x.m.fs, 1, &h), -EROFS);
	ext3_iput(d);
	fsimg_fx_close(&x, false);
	assert_true(has_errors(x.img));
}

static struct fsimg_fx panic_fx; /* reachable at the child's exit */

static void test_errors_panic(void **state)
{
	(void)state;
	assert_int_equal(fsimg_fx_mkfs(&panic_fx, tmpdir, "errs_panic", 1024, 16384, NULL), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct jbd_handle *h;
		if (fsimg_mount_opts(panic_fx.img, "errors=panic", EXT3_MOUNT_JOURNAL, &panic_fx.m) ||
		    ext3_journal_start(panic_fx.m.fs, 8, &h))
			_exit(2);
		/* The last block is free on a fresh image: freeing it panics. */
		(void)ext3_free_blocks(h, panic_fx.m.root, panic_fx.m.fs->g.blocks_count - 1, 1, false);
		_exit(4);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 70);
	assert_true(has_errors(panic_fx.img));
}

/* A block bitmap that claims its own block free: never handed out. */
static void test_metadata_claimed_free(void **state)
{
	(void)state;
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, "metafree", 1024, 16384, NULL, "errors=continue");
	uint64_t bb = x.m.fs->gd[0].bg_block_bitmap;
	fsimg_fx_close(&x, false);
	char cmd[100];
	snprintf(cmd, sizeof cmd, "freeb %llu", (unsigned long long)bb);
	assert_int_equal(fsimg_debugfs_w(x.img, cmd), 0);
	fsimg_assert_mount(x.img, "errors=continue", EXT3_MOUNT_JOURNAL, &x.m);
	struct ext3_fs *fs = x.m.fs;
	struct ext3_inode *d = fsimg_assert_new_inode(fs, x.m.root, EXT3_S_IFDIR | 0700);
	uint64_t b;
	uint32_t n;
	assert_int_equal(fsimg_new_blocks(fs, d, bb, 1, &b, &n), -EUCLEAN);
	assert_true(le16_to_cpu(fs->sb.s_state) & EXT3_ERROR_FS);
	fsimg_assert_free_inode(fs, d);
	fsimg_fx_close(&x, false);
}

int main(void)
{
	int orc = oracles_check("test_ext3_alloc_errors", "mke2fs e2fsck debugfs dumpe2fs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "alloc_errors"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors_policy),
		cmocka_unit_test(test_errors_panic),
		cmocka_unit_test(test_metadata_claimed_free),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
