/* ext3 block and inode allocation and the journaled counters
 * (src/extfs/inode/balloc.c, ialloc.c, super_write.c, trans.c), on writable
 * mounts of mke2fs images with 1 KiB and 4 KiB blocks: credits, allocate
 * and free, fill to ENOSPC, the undo-access rule, reservation windows,
 * Orlov, allocating threads. The errors= policy: test_ext3_alloc_errors.c.
 *
 * Oracles: e2fsck -fn (clean after unmount: bitmaps and every count exactly
 * what it computes), debugfs (testb / testi, link / unlink to make the
 * test's inodes reachable), dumpe2fs (free counts).
 *
 * nostall-test: concurrent (allocating threads; TSan runs it)
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
#include "jbd/jbd.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char tmpdir[256];

/* ---- helpers ---- */

/* Is blk metadata by the geometry (the test's own computation)? */
static bool is_meta(struct ext3_fs *fs, uint64_t blk)
{
	if (blk < fs->g.first_data_block)
		return true;
	uint32_t g = ext3_geom_group_of_block(&fs->g, blk);
	uint64_t first = ext3_geom_group_first(&fs->g, g);
	const struct ext3_group_desc *d = &fs->gd[g];
	return blk < first + ext3_geom_super_blocks(&fs->g, g) || blk == d->bg_block_bitmap ||
	       blk == d->bg_inode_bitmap ||
	       (blk >= d->bg_inode_table && blk < d->bg_inode_table + fs->g.itable_blocks);
}

static struct ext3_inode *iget(struct ext3_fs *fs, uint32_t ino)
{
	struct ext3_inode *in;
	assert_int_equal(ext3_iget(fs, ino, &in), 0);
	return in;
}

/* ---- credits ---- */

static void test_credits(void **state)
{
	(void)state;
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, "cred", 1024, 16384, NULL, NULL);
	struct ext3_fs *fs = x.m.fs;
	/* One block: 3 indirect levels; the 4 new blocks may be in both groups
	 * (2 bitmaps), 1 descriptor block, the inode, the superblock. */
	assert_int_equal(fs->g.groups, 2);
	assert_int_equal(ext3_credits_data(fs, 1), 3 + 2 + 1 + 1 + 1);
	assert_true(ext3_credits_data(fs, 300) > ext3_credits_data(fs, 1));
	assert_true(ext3_credits_data(fs, 100000) >= ext3_credits_data(fs, 300));
	assert_true(ext3_credits_dirop(fs) >= 2 * ext3_credits_data(fs, 1));
	assert_true(ext3_credits_rename(fs) > 2 * ext3_credits_dirop(fs));
	assert_true(ext3_credits_truncate(fs) > 64);
	assert_true(ext3_credits_xattr(fs) >= 6);
	assert_true(ext3_fs_writable(fs));
	fsimg_fx_close(&x, false);
	/* Read-only mounts refuse handles. */
	fsimg_assert_mount(x.img, NULL, 0, &x.m);
	fs = x.m.fs;
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(fs, 1, &h), -EROFS);
	assert_false(ext3_fs_writable(fs));
	fsimg_fx_close(&x, false);
}

/* ---- allocate, make reachable, check with the e2fsprogs, free ---- */

static void check_testb(const char *img, uint64_t first, uint32_t n, bool used)
{
	char cmd[600];
	for (uint32_t i = 0; i < n; i++) {
		snprintf(cmd, sizeof cmd, "debugfs -R 'testb %llu' '%s' 2>/dev/null",
			 (unsigned long long)(first + i), img);
		if (fsimg_count(used ? "not in use" : "marked in use", "%s", cmd) != 0)
			fail_msg("debugfs testb %llu: expected %s", (unsigned long long)(first + i),
				 used ? "in use" : "free");
	}
}

/* debugfs -w CMD on img must succeed. */
static void debugfs_w(const char *img, const char *cmd)
{
	assert_int_equal(fsimg_debugfs_w(img, cmd), 0);
}

static void basic(unsigned bs)
{
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, bs == 4096 ? "basic4k" : "basic1k", bs, bs == 4096 ? 65536 : 32768,
		      bs == 4096 ? "-g 4096 -I 128" : NULL, NULL);
	struct ext3_fs *fs = x.m.fs;
	struct ext3_inode *root = x.m.root;
	unsigned long long free0 = fsimg_dumpe2fs_num(x.img, "Free blocks:");
	unsigned long long ifree0 = fsimg_dumpe2fs_num(x.img, "Free inodes:");
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_blocks_count), free0);
	assert_true(fs->g.groups >= 4);

	/* A regular file with up to 12 direct blocks, a directory with one
	 * block (ext3_dir_make allocates it through ext3_get_blocks). */
	struct ext3_inode *f, *d;
	ext3_inode_wrlock(root);
	struct jbd_handle *h = fsimg_hstart(fs, 2 * ext3_credits_dirop(fs));
	assert_int_equal(ext3_new_inode(h, root, EXT3_S_IFREG | 0644, 1000, 100, &f), 0);
	assert_int_equal(ext3_new_inode(h, root, EXT3_S_IFDIR | 0755, 0, 0, &d), 0);
	assert_int_equal(ext3_geom_group_of_ino(&fs->g, f->ino), 0); /* the parent's group */
	assert_int_equal(f->a.extra_isize, fs->g.inode_size > 128 ? 28 : 0);
	assert_int_equal(f->a.uid, 1000);
	assert_int_equal(f->a.links, 0);
	assert_true(f->a.ctime > 0);
	assert_int_not_equal(f->a.generation, d->a.generation);
	uint64_t fb;
	uint32_t fc = 12;
	assert_int_equal(ext3_new_blocks(h, f, 0, &fc, &fb), 0);
	assert_true(fc >= 1 && fc <= 12);
	for (uint32_t i = 0; i < fc; i++) {
		assert_false(is_meta(fs, fb + i));
		f->a.block[i] = (uint32_t)(fb + i);
	}
	f->a.links = 1;
	f->i_size = f->i_disksize = (uint64_t)fc * bs;
	f->a.blocks = fc * (bs / 512);
	assert_int_equal(ext3_mark_inode_dirty(h, f), 0);
	assert_int_equal(ext3_dir_make(h, d, EXT3_ROOT_INO), 0);
	uint64_t db = d->a.block[0];
	assert_false(is_meta(fs, db));
	assert_true(db < fb || db >= fb + fc);
	d->a.links = 2;
	assert_int_equal(ext3_mark_inode_dirty(h, d), 0);
	root->a.links++;
	assert_int_equal(ext3_mark_inode_dirty(h, root), 0);
	ext3_inode_unlock(root);
	ext3_inode_unlock(f);
	ext3_inode_unlock(d);
	fsimg_hstop(h);
	uint32_t fino = f->ino, dino = d->ino;
	uint32_t dgroup = ext3_geom_group_of_ino(&fs->g, dino);
	assert_int_equal(fs->free_blocks, free0 - fc - 1);
	assert_int_equal(fs->free_inodes, ifree0 - 2);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_blocks_count), free0 - fc - 1);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_inodes_count), ifree0 - 2);
	assert_int_equal(fs->gd[dgroup].bg_used_dirs_count, dgroup == 0 ? 3 : 1);

	/* Everything home: the e2fsprogs see the allocation while mounted. */
	assert_int_equal(jbd_journal_flush(ext3_fs_journal(fs)), 0);
	check_testb(x.img, fb, fc, true);
	check_testb(x.img, db, 1, true);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "debugfs -R 'testi <%u>' '%s' 2>/dev/null", fino, x.img);
	assert_true(fsimg_count("marked in use", "%s", cmd) > 0);
	if (fs->g.inode_size > 128) {
		snprintf(cmd, sizeof cmd, "debugfs -R 'stat <%u>' '%s' 2>/dev/null", fino, x.img);
		assert_true(fsimg_count("Size of extra inode fields: 28", "%s", cmd) > 0);
	}
	ext3_iput(f);
	ext3_iput(d);
	fsimg_fx_close(&x, false);
	assert_int_equal(fsimg_dumpe2fs_num(x.img, "Free blocks:"), free0 - fc - 1);
	assert_int_equal(fsimg_dumpe2fs_num(x.img, "Free inodes:"), ifree0 - 2);
	snprintf(cmd, sizeof cmd, "link <%u> /f1", fino);
	debugfs_w(x.img, cmd);
	snprintf(cmd, sizeof cmd, "link <%u> /d1", dino);
	debugfs_w(x.img, cmd);
	fsimg_assert_clean(x.img);

	/* Free it all again. */
	fsimg_assert_mount(x.img, NULL, EXT3_MOUNT_JOURNAL, &x.m);
	fs = x.m.fs;
	root = x.m.root;
	f = iget(fs, fino);
	d = iget(fs, dino);
	ext3_inode_wrlock(root);
	ext3_inode_wrlock(d);
	ext3_inode_wrlock(f);
	h = fsimg_hstart(fs, 2 * ext3_credits_dirop(fs) + 2 * ext3_credits_data(fs, 12));
	assert_int_equal(ext3_free_blocks(h, f, fb, fc, false), 0);
	assert_int_equal(ext3_free_blocks(h, d, db, 1, true), 0);
	memset(f->a.block, 0, sizeof f->a.block);
	memset(d->a.block, 0, sizeof d->a.block);
	f->a.links = d->a.links = 0;
	f->a.blocks = d->a.blocks = 0;
	f->i_size = f->i_disksize = d->i_size = d->i_disksize = 0;
	assert_int_equal(ext3_free_inode(h, f), 0);
	assert_int_equal(ext3_free_inode(h, d), 0);
	assert_true(f->a.dtime > 0);
	root->a.links--;
	assert_int_equal(ext3_mark_inode_dirty(h, root), 0);
	ext3_inode_unlock(f);
	ext3_inode_unlock(d);
	ext3_inode_unlock(root);
	fsimg_hstop(h);
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(fs->gd[dgroup].bg_used_dirs_count, dgroup == 0 ? 2 : 0);
	ext3_iput(f);
	ext3_iput(d);
	assert_int_equal(jbd_journal_flush(ext3_fs_journal(fs)), 0);
	check_testb(x.img, fb, fc, false);
	fsimg_fx_close(&x, false);
	debugfs_w(x.img, "unlink /f1");
	debugfs_w(x.img, "unlink /d1");
	fsimg_assert_clean(x.img);
	assert_int_equal(fsimg_dumpe2fs_num(x.img, "Free blocks:"), free0);
	assert_int_equal(fsimg_dumpe2fs_num(x.img, "Free inodes:"), ifree0);
}

static void test_basic_1k(void **state) { (void)state; basic(1024); }
static void test_basic_4k(void **state) { (void)state; basic(4096); }

/* ---- fill to ENOSPC and free again ---- */

struct run_rec {
	uint64_t first;
	uint32_t n;
};

static void fill(unsigned bs)
{
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, bs == 4096 ? "fill4k" : "fill1k", bs, bs == 4096 ? 16384 : 8192,
		      bs == 4096 ? "-g 1024 -N 256" : "-g 2048 -N 256", NULL);
	struct ext3_fs *fs = x.m.fs;
	struct ext3_inode *root = x.m.root;
	uint64_t free0 = fs->free_blocks, ifree0 = fs->free_inodes;
	assert_true(fs->g.groups >= 4);
	struct ext3_inode *f = fsimg_assert_new_inode(fs, root, EXT3_S_IFREG | 0600);
	uint8_t *seen = calloc(fs->g.blocks_count, 1);
	struct run_rec *runs = calloc(free0 + 1, sizeof *runs);
	assert_non_null(seen);
	assert_non_null(runs);
	size_t nruns = 0;
	uint64_t total = 0;
	for (;;) {
		uint64_t first;
		uint32_t n;
		int rc = fsimg_new_blocks(fs, f, 0, 64, &first, &n);
		if (rc == -ENOSPC)
			break;
		assert_int_equal(rc, 0);
		assert_true(n >= 1 && n <= 64);
		for (uint32_t i = 0; i < n; i++) {
			assert_false(is_meta(fs, first + i));
			assert_int_equal(seen[first + i], 0);
			seen[first + i] = 1;
		}
		runs[nruns++] = (struct run_rec){first, n};
		total += n;
		assert_true(total <= free0);
	}
	assert_int_equal(total, free0);
	assert_int_equal(fs->free_blocks, 0);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_blocks_count), 0);
	/* Inodes too (f already took one). */
	struct ext3_inode **inos = calloc(ifree0, sizeof *inos);
	assert_non_null(inos);
	size_t ninos = 0;
	for (;;) {
		struct ext3_inode *in;
		ext3_inode_wrlock(root);
		struct jbd_handle *h = fsimg_hstart(fs, ext3_credits_dirop(fs));
		int rc = ext3_new_inode(h, root, (ninos % 3 ? EXT3_S_IFREG : EXT3_S_IFDIR) | 0600, 0,
					0, &in);
		ext3_inode_unlock(root);
		fsimg_hstop(h);
		if (rc == -ENOSPC)
			break;
		assert_int_equal(rc, 0);
		ext3_inode_unlock(in);
		inos[ninos++] = in;
	}
	assert_int_equal(ninos, ifree0 - 1);
	assert_int_equal(fs->free_inodes, 0);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_inodes_count), 0);
	for (size_t i = 0; i < ninos; i++)
		fsimg_assert_free_inode(fs, inos[i]);
	for (size_t i = 0; i < nruns; i++)
		fsimg_assert_free_blocks(fs, f, runs[i].first, runs[i].n);
	fsimg_assert_free_inode(fs, f);
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_blocks_count), free0);
	fsimg_fx_close(&x, true);
	assert_int_equal(fsimg_dumpe2fs_num(x.img, "Free blocks:"), free0);
	assert_int_equal(fsimg_dumpe2fs_num(x.img, "Free inodes:"), ifree0);
	free(seen);
	free(runs);
	free(inos);
}

static void test_fill_1k(void **state) { (void)state; fill(1024); }
static void test_fill_4k(void **state) { (void)state; fill(4096); }

/* ---- the undo-access rule ---- */

static void test_freed_not_reused_before_commit(void **state)
{
	(void)state;
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, "undo", 1024, 16384, NULL, NULL);
	struct ext3_fs *fs = x.m.fs;
	uint64_t free0 = fs->free_blocks;
	struct ext3_inode *root = x.m.root;
	/* A directory: no reservation window, the goal is taken as it is. */
	struct ext3_inode *d = fsimg_assert_new_inode(fs, root, EXT3_S_IFDIR | 0700);
	struct ext3_inode *f = fsimg_assert_new_inode(fs, root, EXT3_S_IFREG | 0600);
	uint64_t b, b2, b3;
	uint32_t n;
	assert_int_equal(fsimg_new_blocks(fs, d, 0, 1, &b, &n), 0);
	assert_int_equal(jbd_journal_force_commit(ext3_fs_journal(fs)), 0);
	/* Freed in the running transaction: not handed out, to either kind. */
	ext3_inode_wrlock(d);
	struct jbd_handle *h = fsimg_hstart(fs, 16);
	assert_int_equal(ext3_free_blocks(h, d, b, 1, false), 0);
	n = 1;
	assert_int_equal(ext3_new_blocks(h, d, b, &n, &b2), 0);
	assert_int_not_equal(b2, b);
	ext3_inode_unlock(d);
	assert_int_equal(ext3_inode_trywrlock(f), 0); /* under the handle: only tried (write.h) */
	n = 4;
	assert_int_equal(ext3_new_blocks(h, f, b, &n, &b3), 0);
	assert_true(b < b3 || b >= b3 + n);
	ext3_inode_unlock(f);
	fsimg_hstop(h);
	/* Another handle of the same transaction: still not. */
	uint64_t b4;
	uint32_t n4;
	assert_int_equal(fsimg_new_blocks(fs, d, b, 1, &b4, &n4), 0);
	assert_int_not_equal(b4, b);
	fsimg_assert_free_blocks(fs, d, b4, 1);
	/* After the commit it is allocatable again. */
	assert_int_equal(jbd_journal_force_commit(ext3_fs_journal(fs)), 0);
	assert_int_equal(fsimg_new_blocks(fs, d, b, 1, &b4, &n4), 0);
	assert_int_equal(b4, b);
	fsimg_assert_free_blocks(fs, d, b, 1);
	fsimg_assert_free_blocks(fs, d, b2, 1);
	fsimg_assert_free_blocks(fs, f, b3, n);
	ext3_rsv_discard(f);
	fsimg_assert_free_inode(fs, d);
	fsimg_assert_free_inode(fs, f);
	assert_int_equal(fs->free_blocks, free0);
	fsimg_fx_close(&x, true);
}

/* ---- reservation windows ---- */

static unsigned count_runs(const uint64_t *b, size_t n)
{
	unsigned runs = n ? 1 : 0;
	for (size_t i = 1; i < n; i++)
		if (b[i] != b[i - 1] + 1)
			runs++;
	return runs;
}

/* Two files appended to one block at a time, in turn; goal = the block
 * after each file's last one (what ext3_get_blocks asks). */
static void interleave(struct ext3_fs *fs, struct ext3_inode *a, struct ext3_inode *b, size_t n,
		       uint64_t goal, uint64_t *ba, uint64_t *bb)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t c;
		assert_int_equal(fsimg_new_blocks(fs, a, i ? ba[i - 1] + 1 : goal, 1, &ba[i], &c), 0);
		assert_int_equal(c, 1);
		assert_int_equal(fsimg_new_blocks(fs, b, i ? bb[i - 1] + 1 : goal, 1, &bb[i], &c), 0);
		assert_int_equal(c, 1);
	}
}

static void test_reservation_interleaved(void **state)
{
	(void)state;
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, "rsv", 1024, 32768, NULL, NULL);
	struct ext3_fs *fs = x.m.fs;
	uint64_t free0 = fs->free_blocks;
	struct ext3_inode *root = x.m.root;
	enum { N = 1500 };
	uint64_t *ba = calloc(N, sizeof *ba), *bb = calloc(N, sizeof *bb);
	uint64_t *ca = calloc(N / 10, sizeof *ca), *cb = calloc(N / 10, sizeof *cb);
	struct ext3_inode *a = fsimg_assert_new_inode(fs, root, EXT3_S_IFREG | 0600);
	struct ext3_inode *b = fsimg_assert_new_inode(fs, root, EXT3_S_IFREG | 0600);
	interleave(fs, a, b, N, 0, ba, bb);
	unsigned ra = count_runs(ba, N), rb = count_runs(bb, N);
	print_message("interleaved appends of %d blocks: %u and %u runs\n", N, ra, rb);
	/* Windows double from 8 to 1027 blocks: a dozen runs, not 1500. */
	assert_true(ra <= 16);
	assert_true(rb <= 16);
	assert_true(a->rsv.goal_size > 8);
	/* The two windows never overlap. */
	assert_true(a->rsv.end < b->rsv.start || b->rsv.end < a->rsv.start);
	/* Control: directories get no window and, started at the same goal,
	 * interleave block by block. */
	struct ext3_inode *da = fsimg_assert_new_inode(fs, root, EXT3_S_IFDIR | 0700);
	struct ext3_inode *db = fsimg_assert_new_inode(fs, root, EXT3_S_IFDIR | 0700);
	interleave(fs, da, db, N / 10, ext3_geom_group_first(&fs->g, 1), ca, cb);
	assert_true(count_runs(ca, N / 10) > N / 20);
	for (size_t i = 0; i < N; i++) {
		fsimg_assert_free_blocks(fs, a, ba[i], 1);
		fsimg_assert_free_blocks(fs, b, bb[i], 1);
	}
	for (size_t i = 0; i < N / 10; i++) {
		fsimg_assert_free_blocks(fs, da, ca[i], 1);
		fsimg_assert_free_blocks(fs, db, cb[i], 1);
	}
	ext3_rsv_discard(a);
	ext3_rsv_discard(b);
	fsimg_assert_free_inode(fs, a);
	fsimg_assert_free_inode(fs, b);
	fsimg_assert_free_inode(fs, da);
	fsimg_assert_free_inode(fs, db);
	assert_int_equal(fs->free_blocks, free0);
	fsimg_fx_close(&x, true);
	free(ba);
	free(bb);
	free(ca);
	free(cb);
}

/* ---- Orlov ---- */

static void test_orlov(void **state)
{
	(void)state;
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, "orlov", 1024, 32768, NULL, NULL);
	struct ext3_fs *fs = x.m.fs;
	uint64_t ifree0 = fs->free_inodes;
	struct ext3_inode *root = x.m.root;
	enum { TOP = 8 };
	struct ext3_inode *top[TOP], *sub[TOP], *file[TOP];
	bool used[64] = {false};
	unsigned groups = 0;
	for (int i = 0; i < TOP; i++) {
		top[i] = fsimg_assert_new_inode(fs, root, EXT3_S_IFDIR | 0755);
		uint32_t g = ext3_geom_group_of_ino(&fs->g, top[i]->ino);
		if (!used[g])
			groups++;
		used[g] = true;
	}
	/* Top-level directories spread over the groups. */
	assert_true(groups >= 3);
	for (int i = 0; i < TOP; i++) {
		uint32_t g = ext3_geom_group_of_ino(&fs->g, top[i]->ino);
		sub[i] = fsimg_assert_new_inode(fs, top[i], EXT3_S_IFDIR | 0755);
		file[i] = fsimg_assert_new_inode(fs, sub[i], EXT3_S_IFREG | 0644);
		/* Children stay near the parent. */
		assert_int_equal(ext3_geom_group_of_ino(&fs->g, sub[i]->ino), g);
		assert_int_equal(ext3_geom_group_of_ino(&fs->g, file[i]->ino), g);
	}
	assert_int_equal(FSIMG_GD_SUM(fs, bg_used_dirs_count), 2 + 2 * TOP);
	for (int i = 0; i < TOP; i++) {
		fsimg_assert_free_inode(fs, file[i]);
		fsimg_assert_free_inode(fs, sub[i]);
		fsimg_assert_free_inode(fs, top[i]);
	}
	assert_int_equal(FSIMG_GD_SUM(fs, bg_used_dirs_count), 2);
	assert_int_equal(fs->free_inodes, ifree0);
	fsimg_fx_close(&x, true);
}

/* ---- threads ---- */

struct worker {
	struct ext3_fs *fs;
	struct ext3_inode *root, *in;
	unsigned seed;
	int iters;
	int err;
};

enum { OP_ALLOC, OP_FREE, OP_INODE };

/* One handle of a worker: allocate a run, free run k (the last when
 * draining), or create an inode and free it again. */
static int worker_step(struct worker *w, int op, unsigned r, struct run_rec *runs, size_t *nruns)
{
	struct ext3_fs *fs = w->fs;
	struct ext3_inode *locked = op == OP_INODE ? w->root : w->in, *in = NULL;
	struct jbd_handle *h;
	ext3_inode_wrlock(locked);
	int rc = ext3_journal_start(fs, ext3_credits_dirop(fs) + ext3_credits_data(fs, 16), &h);
	if (!rc) {
		if (op == OP_INODE) {
			uint16_t mode = (r & 16 ? EXT3_S_IFDIR : EXT3_S_IFREG) | 0600;
			rc = ext3_new_inode(h, w->root, mode, 0, 0, &in);
			if (!rc) {
				rc = ext3_free_inode(h, in);
				ext3_inode_unlock(in);
			}
		} else if (op == OP_FREE) {
			size_t k = (r >> 4) % *nruns;
			rc = ext3_free_blocks(h, w->in, runs[k].first, runs[k].n, r & 32);
			runs[k] = runs[--*nruns];
		} else {
			uint32_t n = 1 + (r >> 8) % 16;
			uint64_t first;
			rc = ext3_new_blocks(h, w->in, 0, &n, &first);
			if (!rc)
				runs[(*nruns)++] = (struct run_rec){first, n};
		}
		int src = ext3_journal_stop(h);
		rc = rc ? rc : src;
	}
	ext3_inode_unlock(locked);
	ext3_iput(in);
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run_rec runs[64];
	size_t nruns = 0;
	for (int it = 0; it < w->iters && !w->err; it++) {
		unsigned r = (unsigned)rand_r(&w->seed);
		int op = r % 8 == 0 ? OP_INODE : nruns == 64 || (nruns && r % 3 == 0) ? OP_FREE
										: OP_ALLOC;
		w->err = worker_step(w, op, r, runs, &nruns);
	}
	while (nruns && !w->err) /* give everything back */
		w->err = worker_step(w, OP_FREE, (unsigned)(nruns - 1) << 4, runs, &nruns);
	ext3_inode_wrlock(w->in);
	ext3_rsv_discard(w->in);
	ext3_inode_unlock(w->in);
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct fsimg_fx x;
	fsimg_fx_open(&x, tmpdir, "threads", 1024, 16384, "-g 2048", NULL);
	struct ext3_fs *fs = x.m.fs;
	uint64_t free0 = fs->free_blocks, ifree0 = fs->free_inodes;
	struct ext3_inode *root = x.m.root;
	enum { T = 4 };
	struct worker w[T];
	pthread_t tid[T];
	unsigned seed = (unsigned)time(NULL);
	print_message("threads: seed %u\n", seed);
	for (int i = 0; i < T; i++) {
		w[i] = (struct worker){.fs = fs, .root = root, .seed = seed + (unsigned)i, .iters = 300};
		w[i].in = fsimg_assert_new_inode(fs, root, EXT3_S_IFREG | 0600);
	}
	for (int i = 0; i < T; i++)
		assert_int_equal(pthread_create(&tid[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < T; i++) {
		pthread_join(tid[i], NULL);
		if (w[i].err)
			fail_msg("worker %d: %d (%s)", i, w[i].err, err_last(w[i].err));
	}
	for (int i = 0; i < T; i++)
		fsimg_assert_free_inode(fs, w[i].in);
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_blocks_count), free0);
	assert_int_equal(FSIMG_GD_SUM(fs, bg_free_inodes_count), ifree0);
	fsimg_fx_close(&x, true);
	assert_int_equal(fsimg_dumpe2fs_num(x.img, "Free blocks:"), free0);
}

int main(void)
{
	int orc = oracles_check("test_ext3_alloc", "mke2fs e2fsck debugfs dumpe2fs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "alloc"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credits),
		cmocka_unit_test(test_basic_1k),
		cmocka_unit_test(test_basic_4k),
		cmocka_unit_test(test_fill_1k),
		cmocka_unit_test(test_fill_4k),
		cmocka_unit_test(test_freed_not_reused_before_commit),
		cmocka_unit_test(test_reservation_interleaved),
		cmocka_unit_test(test_orlov),
		cmocka_unit_test(test_threads),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
