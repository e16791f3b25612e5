/* ext3 block and inode allocation, the journaled counters and the errors=
 * policy (src/ext3/balloc.c, ialloc.c, super_write.c, trans.c), on writable
 * mounts of mke2fs images with 1 KiB and 4 KiB blocks.
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

#include "buf/buf.h"
#include "dev/dev.h"
#include "ext3/ext3.h"
#include "ext3/ext3_int.h"
#include "ext3/write.h"
#include "jbd/jbd.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];
static bool have_e2fs;

/* ---- helpers ---- */

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Does the output of cmd contain `needle`? */
static bool cmd_has(const char *cmd, const char *needle)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	char line[4096];
	bool found = false;
	while (fgets(line, sizeof line, p))
		if (strstr(line, needle))
			found = true;
	pclose(p);
	return found;
}

/* The number after `key` in dumpe2fs -h output. */
static unsigned long long dumpe2fs_num(const char *img, const char *key)
{
	char cmd[600], line[4096];
	snprintf(cmd, sizeof cmd, "dumpe2fs -h '%s' 2>/dev/null", img);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	unsigned long long v = ~0ull;
	while (fgets(line, sizeof line, p))
		if (!strncmp(line, key, strlen(key)))
			v = strtoull(line + strlen(key), NULL, 10);
	pclose(p);
	if (v == ~0ull)
		fail_msg("dumpe2fs: no '%s'", key);
	return v;
}

static void fsck_clean(const char *img)
{
	int rc = run("e2fsck -fn '%s' >/dev/null 2>&1", img);
	if (rc) {
		(void)run("e2fsck -fn '%s' 2>&1 | head -30", img);
		fail_msg("e2fsck -fn %s: exit %d", img, rc);
	}
}

static void mkimg(char *img, size_t len, const char *name, unsigned bs, const char *extra,
		  const char *size)
{
	snprintf(img, len, "%s/%s.img", tmpdir, name);
	unlink(img);
	assert_int_equal(run("mke2fs -q -t ext3 -b %u %s -F '%s' %s >/dev/null 2>&1", bs, extra, img,
			     size), 0);
}

/* A test's image, writable mount (mount.c brings the write side up) and
 * root inode. */
struct fx {
	char img[300];
	struct dev *dev;
	struct ext3_fs *fs;
	struct ext3_inode *root;
};

static int fx_mount_rc(struct fx *x, const char *opts)
{
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", x->img);
	int rc = dev_open(spec, &x->dev);
	if (rc)
		return rc;
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	rc = opts ? ext3_mount_opts_parse(&o, opts) : 0;
	if (!rc)
		rc = ext3_fs_mount(x->dev, &o, EXT3_MOUNT_JOURNAL, &x->fs);
	ext3_mount_opts_release(&o);
	return rc ? rc : ext3_iget(x->fs, EXT3_ROOT_INO, &x->root);
}

static void fx_mount(struct fx *x, const char *opts)
{
	int rc = fx_mount_rc(x, opts);
	if (rc)
		fail_msg("mount %s: %s", x->img, err_last(rc));
}

static bool fx_open(struct fx *x, const char *name, unsigned bs, const char *mkopts,
		    const char *size, const char *mopts)
{
	if (!have_e2fs)
		return false;
	mkimg(x->img, sizeof x->img, name, bs, mkopts, size);
	fx_mount(x, mopts);
	return true;
}

static void fx_close(struct fx *x, bool fsck)
{
	ext3_iput(x->root);
	assert_int_equal(ext3_fs_unmount(x->fs), 0);
	dev_close(x->dev);
	if (fsck)
		fsck_clean(x->img);
}

/* Does dumpe2fs say the filesystem has errors? */
static bool has_errors(const char *img)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "dumpe2fs -h '%s' 2>/dev/null", img);
	return cmd_has(cmd, "with errors");
}

static struct jbd_handle *hstart(struct ext3_fs *fs, int credits)
{
	struct jbd_handle *h;
	int rc = ext3_journal_start(fs, credits, &h);
	if (rc)
		fail_msg("ext3_journal_start: %s", err_last(rc));
	return h;
}

static void hstop(struct jbd_handle *h) { assert_int_equal(ext3_journal_stop(h), 0); }

/* A 16-bit descriptor count summed over the groups. */
#define GD_SUM(fs, field) gd_sum(fs, offsetof(struct ext3_group_desc, field))
static uint64_t gd_sum(struct ext3_fs *fs, size_t off)
{
	uint64_t s = 0;
	for (uint32_t g = 0; g < fs->g.groups; g++) {
		uint16_t v;
		memcpy(&v, (const char *)&fs->gd[g] + off, sizeof v);
		s += v;
	}
	return s;
}

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

/* A new inode from root, unlocked, referenced. */
static struct ext3_inode *new_inode(struct ext3_fs *fs, struct ext3_inode *dir, uint16_t mode)
{
	struct jbd_handle *h = hstart(fs, ext3_credits_dirop(fs));
	struct ext3_inode *in;
	pthread_rwlock_wrlock(&dir->lock);
	int rc = ext3_new_inode(h, dir, mode, 0, 0, &in);
	pthread_rwlock_unlock(&dir->lock);
	if (rc)
		fail_msg("ext3_new_inode: %s", err_last(rc));
	pthread_rwlock_unlock(&in->lock);
	hstop(h);
	return in;
}

static void free_inode(struct ext3_fs *fs, struct ext3_inode *in)
{
	struct jbd_handle *h = hstart(fs, ext3_credits_dirop(fs));
	pthread_rwlock_wrlock(&in->lock);
	assert_int_equal(ext3_free_inode(h, in), 0);
	pthread_rwlock_unlock(&in->lock);
	hstop(h);
	ext3_iput(in);
}

/* Allocate up to n blocks for in at goal in a handle of its own. */
static int alloc(struct ext3_fs *fs, struct ext3_inode *in, uint64_t goal, uint32_t n,
		 uint64_t *first, uint32_t *count)
{
	struct jbd_handle *h = hstart(fs, ext3_credits_data(fs, n));
	pthread_rwlock_wrlock(&in->lock);
	*count = n;
	int rc = ext3_new_blocks(h, in, goal, count, first);
	pthread_rwlock_unlock(&in->lock);
	hstop(h);
	return rc;
}

static void free_run(struct ext3_fs *fs, struct ext3_inode *in, uint64_t first, uint32_t n)
{
	struct jbd_handle *h = hstart(fs, ext3_credits_data(fs, n));
	pthread_rwlock_wrlock(&in->lock);
	int rc = ext3_free_blocks(h, in, first, n, false);
	pthread_rwlock_unlock(&in->lock);
	hstop(h);
	if (rc)
		fail_msg("ext3_free_blocks %llu+%u: %s", (unsigned long long)first, n, err_last(rc));
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
	struct fx x;
	if (!fx_open(&x, "cred", 1024, "", "16M", NULL))
		skip();
	struct ext3_fs *fs = x.fs;
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
	fx_close(&x, false);
	/* Read-only mounts refuse handles. */
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", x.img);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	assert_int_equal(ext3_fs_mount(d, NULL, 0, &fs), 0);
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(fs, 1, &h), -EROFS);
	assert_false(ext3_fs_writable(fs));
	assert_int_equal(ext3_fs_unmount(fs), 0);
	dev_close(d);
}

/* ---- allocate, make reachable, check with the e2fsprogs, free ---- */

static void check_testb(const char *img, uint64_t first, uint32_t n, bool used)
{
	char cmd[600];
	for (uint32_t i = 0; i < n; i++) {
		snprintf(cmd, sizeof cmd, "debugfs -R 'testb %llu' '%s' 2>/dev/null",
			 (unsigned long long)(first + i), img);
		if (cmd_has(cmd, used ? "not in use" : "marked in use"))
			fail_msg("debugfs testb %llu: expected %s", (unsigned long long)(first + i),
				 used ? "in use" : "free");
	}
}

/* debugfs -w CMD on img must succeed. */
static void debugfs_w(const char *img, const char *cmd)
{
	assert_int_equal(run("debugfs -w -R '%s' '%s' >/dev/null 2>&1", cmd, img), 0);
}

static void basic(unsigned bs)
{
	struct fx x;
	if (!fx_open(&x, bs == 4096 ? "basic4k" : "basic1k", bs, bs == 4096 ? "-g 4096 -I 128" : "",
		     bs == 4096 ? "64M" : "32M", NULL))
		skip();
	struct ext3_fs *fs = x.fs;
	struct ext3_inode *root = x.root;
	unsigned long long free0 = dumpe2fs_num(x.img, "Free blocks:");
	unsigned long long ifree0 = dumpe2fs_num(x.img, "Free inodes:");
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(GD_SUM(fs, bg_free_blocks_count), free0);
	assert_true(fs->g.groups >= 4);

	/* A regular file with up to 12 direct blocks, a directory with one
	 * block (ext3_dir_make allocates it through ext3_get_blocks). */
	struct jbd_handle *h = hstart(fs, 2 * ext3_credits_dirop(fs));
	struct ext3_inode *f, *d;
	pthread_rwlock_wrlock(&root->lock);
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
	pthread_rwlock_unlock(&root->lock);
	pthread_rwlock_unlock(&f->lock);
	pthread_rwlock_unlock(&d->lock);
	hstop(h);
	uint32_t fino = f->ino, dino = d->ino;
	uint32_t dgroup = ext3_geom_group_of_ino(&fs->g, dino);
	assert_int_equal(fs->free_blocks, free0 - fc - 1);
	assert_int_equal(fs->free_inodes, ifree0 - 2);
	assert_int_equal(GD_SUM(fs, bg_free_blocks_count), free0 - fc - 1);
	assert_int_equal(GD_SUM(fs, bg_free_inodes_count), ifree0 - 2);
	assert_int_equal(fs->gd[dgroup].bg_used_dirs_count, dgroup == 0 ? 3 : 1);

	/* Everything home: the e2fsprogs see the allocation while mounted. */
	assert_int_equal(jbd_journal_flush(ext3_fs_journal(fs)), 0);
	check_testb(x.img, fb, fc, true);
	check_testb(x.img, db, 1, true);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "debugfs -R 'testi <%u>' '%s' 2>/dev/null", fino, x.img);
	assert_true(cmd_has(cmd, "marked in use"));
	if (fs->g.inode_size > 128) {
		snprintf(cmd, sizeof cmd, "debugfs -R 'stat <%u>' '%s' 2>/dev/null", fino, x.img);
		assert_true(cmd_has(cmd, "Size of extra inode fields: 28"));
	}
	ext3_iput(f);
	ext3_iput(d);
	fx_close(&x, false);
	assert_int_equal(dumpe2fs_num(x.img, "Free blocks:"), free0 - fc - 1);
	assert_int_equal(dumpe2fs_num(x.img, "Free inodes:"), ifree0 - 2);
	snprintf(cmd, sizeof cmd, "link <%u> /f1", fino);
	debugfs_w(x.img, cmd);
	snprintf(cmd, sizeof cmd, "link <%u> /d1", dino);
	debugfs_w(x.img, cmd);
	fsck_clean(x.img);

	/* Free it all again. */
	fx_mount(&x, NULL);
	fs = x.fs;
	root = x.root;
	f = iget(fs, fino);
	d = iget(fs, dino);
	h = hstart(fs, 2 * ext3_credits_dirop(fs) + 2 * ext3_credits_data(fs, 12));
	pthread_rwlock_wrlock(&root->lock);
	pthread_rwlock_wrlock(&d->lock);
	pthread_rwlock_wrlock(&f->lock);
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
	pthread_rwlock_unlock(&f->lock);
	pthread_rwlock_unlock(&d->lock);
	pthread_rwlock_unlock(&root->lock);
	hstop(h);
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(fs->gd[dgroup].bg_used_dirs_count, dgroup == 0 ? 2 : 0);
	ext3_iput(f);
	ext3_iput(d);
	assert_int_equal(jbd_journal_flush(ext3_fs_journal(fs)), 0);
	check_testb(x.img, fb, fc, false);
	fx_close(&x, false);
	debugfs_w(x.img, "unlink /f1");
	debugfs_w(x.img, "unlink /d1");
	fsck_clean(x.img);
	assert_int_equal(dumpe2fs_num(x.img, "Free blocks:"), free0);
	assert_int_equal(dumpe2fs_num(x.img, "Free inodes:"), ifree0);
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
	struct fx x;
	if (!fx_open(&x, bs == 4096 ? "fill4k" : "fill1k", bs, bs == 4096 ? "-g 1024 -N 256" :
		     "-g 2048 -N 256", bs == 4096 ? "16M" : "8M", NULL))
		skip();
	struct ext3_fs *fs = x.fs;
	struct ext3_inode *root = x.root;
	uint64_t free0 = fs->free_blocks, ifree0 = fs->free_inodes;
	assert_true(fs->g.groups >= 4);
	struct ext3_inode *f = new_inode(fs, root, EXT3_S_IFREG | 0600);
	uint8_t *seen = calloc(fs->g.blocks_count, 1);
	struct run_rec *runs = calloc(free0 + 1, sizeof *runs);
	assert_non_null(seen);
	assert_non_null(runs);
	size_t nruns = 0;
	uint64_t total = 0;
	for (;;) {
		uint64_t first;
		uint32_t n;
		int rc = alloc(fs, f, 0, 64, &first, &n);
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
	assert_int_equal(GD_SUM(fs, bg_free_blocks_count), 0);
	/* Inodes too (f already took one). */
	struct ext3_inode **inos = calloc(ifree0, sizeof *inos);
	assert_non_null(inos);
	size_t ninos = 0;
	for (;;) {
		struct jbd_handle *h = hstart(fs, ext3_credits_dirop(fs));
		struct ext3_inode *in;
		pthread_rwlock_wrlock(&root->lock);
		int rc = ext3_new_inode(h, root, (ninos % 3 ? EXT3_S_IFREG : EXT3_S_IFDIR) | 0600, 0,
					0, &in);
		pthread_rwlock_unlock(&root->lock);
		hstop(h);
		if (rc == -ENOSPC)
			break;
		assert_int_equal(rc, 0);
		pthread_rwlock_unlock(&in->lock);
		inos[ninos++] = in;
	}
	assert_int_equal(ninos, ifree0 - 1);
	assert_int_equal(fs->free_inodes, 0);
	assert_int_equal(GD_SUM(fs, bg_free_inodes_count), 0);
	for (size_t i = 0; i < ninos; i++)
		free_inode(fs, inos[i]);
	for (size_t i = 0; i < nruns; i++)
		free_run(fs, f, runs[i].first, runs[i].n);
	free_inode(fs, f);
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(GD_SUM(fs, bg_free_blocks_count), free0);
	fx_close(&x, true);
	assert_int_equal(dumpe2fs_num(x.img, "Free blocks:"), free0);
	assert_int_equal(dumpe2fs_num(x.img, "Free inodes:"), ifree0);
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
	struct fx x;
	if (!fx_open(&x, "undo", 1024, "", "16M", NULL))
		skip();
	struct ext3_fs *fs = x.fs;
	uint64_t free0 = fs->free_blocks;
	struct ext3_inode *root = x.root;
	/* A directory: no reservation window, the goal is taken as it is. */
	struct ext3_inode *d = new_inode(fs, root, EXT3_S_IFDIR | 0700);
	struct ext3_inode *f = new_inode(fs, root, EXT3_S_IFREG | 0600);
	uint64_t b, b2, b3;
	uint32_t n;
	assert_int_equal(alloc(fs, d, 0, 1, &b, &n), 0);
	assert_int_equal(jbd_journal_force_commit(ext3_fs_journal(fs)), 0);
	/* Freed in the running transaction: not handed out, to either kind. */
	struct jbd_handle *h = hstart(fs, 16);
	pthread_rwlock_wrlock(&d->lock);
	assert_int_equal(ext3_free_blocks(h, d, b, 1, false), 0);
	n = 1;
	assert_int_equal(ext3_new_blocks(h, d, b, &n, &b2), 0);
	assert_int_not_equal(b2, b);
	pthread_rwlock_unlock(&d->lock);
	pthread_rwlock_wrlock(&f->lock);
	n = 4;
	assert_int_equal(ext3_new_blocks(h, f, b, &n, &b3), 0);
	assert_true(b < b3 || b >= b3 + n);
	pthread_rwlock_unlock(&f->lock);
	hstop(h);
	/* Another handle of the same transaction: still not. */
	uint64_t b4;
	uint32_t n4;
	assert_int_equal(alloc(fs, d, b, 1, &b4, &n4), 0);
	assert_int_not_equal(b4, b);
	free_run(fs, d, b4, 1);
	/* After the commit it is allocatable again. */
	assert_int_equal(jbd_journal_force_commit(ext3_fs_journal(fs)), 0);
	assert_int_equal(alloc(fs, d, b, 1, &b4, &n4), 0);
	assert_int_equal(b4, b);
	free_run(fs, d, b, 1);
	free_run(fs, d, b2, 1);
	free_run(fs, f, b3, n);
	ext3_rsv_discard(f);
	free_inode(fs, d);
	free_inode(fs, f);
	assert_int_equal(fs->free_blocks, free0);
	fx_close(&x, true);
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
		assert_int_equal(alloc(fs, a, i ? ba[i - 1] + 1 : goal, 1, &ba[i], &c), 0);
		assert_int_equal(c, 1);
		assert_int_equal(alloc(fs, b, i ? bb[i - 1] + 1 : goal, 1, &bb[i], &c), 0);
		assert_int_equal(c, 1);
	}
}

static void test_reservation_interleaved(void **state)
{
	(void)state;
	struct fx x;
	if (!fx_open(&x, "rsv", 1024, "", "32M", NULL))
		skip();
	struct ext3_fs *fs = x.fs;
	uint64_t free0 = fs->free_blocks;
	struct ext3_inode *root = x.root;
	enum { N = 1500 };
	uint64_t *ba = calloc(N, sizeof *ba), *bb = calloc(N, sizeof *bb);
	uint64_t *ca = calloc(N / 10, sizeof *ca), *cb = calloc(N / 10, sizeof *cb);
	struct ext3_inode *a = new_inode(fs, root, EXT3_S_IFREG | 0600);
	struct ext3_inode *b = new_inode(fs, root, EXT3_S_IFREG | 0600);
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
	struct ext3_inode *da = new_inode(fs, root, EXT3_S_IFDIR | 0700);
	struct ext3_inode *db = new_inode(fs, root, EXT3_S_IFDIR | 0700);
	interleave(fs, da, db, N / 10, ext3_geom_group_first(&fs->g, 1), ca, cb);
	assert_true(count_runs(ca, N / 10) > N / 20);
	for (size_t i = 0; i < N; i++) {
		free_run(fs, a, ba[i], 1);
		free_run(fs, b, bb[i], 1);
	}
	for (size_t i = 0; i < N / 10; i++) {
		free_run(fs, da, ca[i], 1);
		free_run(fs, db, cb[i], 1);
	}
	ext3_rsv_discard(a);
	ext3_rsv_discard(b);
	free_inode(fs, a);
	free_inode(fs, b);
	free_inode(fs, da);
	free_inode(fs, db);
	assert_int_equal(fs->free_blocks, free0);
	fx_close(&x, true);
	free(ba);
	free(bb);
	free(ca);
	free(cb);
}

/* ---- Orlov ---- */

static void test_orlov(void **state)
{
	(void)state;
	struct fx x;
	if (!fx_open(&x, "orlov", 1024, "", "32M", NULL))
		skip();
	struct ext3_fs *fs = x.fs;
	uint64_t ifree0 = fs->free_inodes;
	struct ext3_inode *root = x.root;
	enum { TOP = 8 };
	struct ext3_inode *top[TOP], *sub[TOP], *file[TOP];
	bool used[64] = {false};
	unsigned groups = 0;
	for (int i = 0; i < TOP; i++) {
		top[i] = new_inode(fs, root, EXT3_S_IFDIR | 0755);
		uint32_t g = ext3_geom_group_of_ino(&fs->g, top[i]->ino);
		if (!used[g])
			groups++;
		used[g] = true;
	}
	/* Top-level directories spread over the groups. */
	assert_true(groups >= 3);
	for (int i = 0; i < TOP; i++) {
		uint32_t g = ext3_geom_group_of_ino(&fs->g, top[i]->ino);
		sub[i] = new_inode(fs, top[i], EXT3_S_IFDIR | 0755);
		file[i] = new_inode(fs, sub[i], EXT3_S_IFREG | 0644);
		/* Children stay near the parent. */
		assert_int_equal(ext3_geom_group_of_ino(&fs->g, sub[i]->ino), g);
		assert_int_equal(ext3_geom_group_of_ino(&fs->g, file[i]->ino), g);
	}
	assert_int_equal(GD_SUM(fs, bg_used_dirs_count), 2 + 2 * TOP);
	for (int i = 0; i < TOP; i++) {
		free_inode(fs, file[i]);
		free_inode(fs, sub[i]);
		free_inode(fs, top[i]);
	}
	assert_int_equal(GD_SUM(fs, bg_used_dirs_count), 2);
	assert_int_equal(fs->free_inodes, ifree0);
	fx_close(&x, true);
}

/* ---- errors= ---- */

/* A directory's block allocated and freed, then freed again (-EUCLEAN). */
static struct ext3_inode *double_free(struct ext3_fs *fs, struct ext3_inode *root)
{
	struct ext3_inode *d = new_inode(fs, root, EXT3_S_IFDIR | 0700);
	uint64_t b;
	uint32_t n;
	assert_int_equal(alloc(fs, d, 0, 1, &b, &n), 0);
	free_run(fs, d, b, 1);
	struct jbd_handle *h = hstart(fs, 8);
	assert_int_equal(ext3_free_blocks(h, d, b, 1, false), -EUCLEAN);
	/* Freeing metadata (a block bitmap) is refused too. */
	if (ext3_fs_writable(fs))
		assert_int_equal(ext3_free_blocks(h, d, fs->gd[1].bg_block_bitmap, 1, false),
				 -EUCLEAN);
	hstop(h);
	return d;
}

static void test_errors_policy(void **state)
{
	(void)state;
	struct fx x;
	if (!fx_open(&x, "errs", 1024, "", "16M", "errors=continue"))
		skip();
	uint64_t free0 = x.fs->free_blocks;
	struct ext3_inode *d = double_free(x.fs, x.root);
	assert_int_equal(x.fs->free_blocks, free0);
	assert_true(le16_to_cpu(x.fs->sb.s_state) & EXT3_ERROR_FS);
	assert_true(ext3_fs_writable(x.fs)); /* continue */
	free_inode(x.fs, d);
	fx_close(&x, false);
	assert_true(has_errors(x.img));

	assert_true(fx_open(&x, "errs_ro", 1024, "", "16M", "errors=remount-ro"));
	d = double_free(x.fs, x.root);
	assert_false(ext3_fs_writable(x.fs));
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(x.fs, 1, &h), -EROFS);
	ext3_iput(d);
	fx_close(&x, false);
	assert_true(has_errors(x.img));
}

static struct fx panic_fx; /* reachable at the child's exit */

static void test_errors_panic(void **state)
{
	(void)state;
	if (!have_e2fs)
		skip();
	mkimg(panic_fx.img, sizeof panic_fx.img, "errs_panic", 1024, "", "16M");
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct jbd_handle *h;
		if (fx_mount_rc(&panic_fx, "errors=panic") || ext3_journal_start(panic_fx.fs, 8, &h))
			_exit(2);
		/* The last block is free on a fresh image: freeing it panics. */
		(void)ext3_free_blocks(h, panic_fx.root, panic_fx.fs->g.blocks_count - 1, 1, false);
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
	struct fx x;
	if (!fx_open(&x, "metafree", 1024, "", "16M", "errors=continue"))
		skip();
	uint64_t bb = x.fs->gd[0].bg_block_bitmap;
	fx_close(&x, false);
	char cmd[100];
	snprintf(cmd, sizeof cmd, "freeb %llu", (unsigned long long)bb);
	debugfs_w(x.img, cmd);
	fx_mount(&x, "errors=continue");
	struct ext3_fs *fs = x.fs;
	struct ext3_inode *d = new_inode(fs, x.root, EXT3_S_IFDIR | 0700);
	uint64_t b;
	uint32_t n;
	assert_int_equal(alloc(fs, d, bb, 1, &b, &n), -EUCLEAN);
	assert_true(le16_to_cpu(fs->sb.s_state) & EXT3_ERROR_FS);
	free_inode(fs, d);
	fx_close(&x, false);
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
	pthread_rwlock_wrlock(&locked->lock);
	int rc = ext3_journal_start(fs, ext3_credits_dirop(fs) + ext3_credits_data(fs, 16), &h);
	if (!rc) {
		if (op == OP_INODE) {
			uint16_t mode = (r & 16 ? EXT3_S_IFDIR : EXT3_S_IFREG) | 0600;
			rc = ext3_new_inode(h, w->root, mode, 0, 0, &in);
			if (!rc) {
				rc = ext3_free_inode(h, in);
				pthread_rwlock_unlock(&in->lock);
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
	pthread_rwlock_unlock(&locked->lock);
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
	pthread_rwlock_wrlock(&w->in->lock);
	ext3_rsv_discard(w->in);
	pthread_rwlock_unlock(&w->in->lock);
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct fx x;
	if (!fx_open(&x, "threads", 1024, "-g 2048", "16M", NULL))
		skip();
	struct ext3_fs *fs = x.fs;
	uint64_t free0 = fs->free_blocks, ifree0 = fs->free_inodes;
	struct ext3_inode *root = x.root;
	enum { T = 4 };
	struct worker w[T];
	pthread_t tid[T];
	unsigned seed = (unsigned)time(NULL);
	print_message("threads: seed %u\n", seed);
	for (int i = 0; i < T; i++) {
		w[i] = (struct worker){.fs = fs, .root = root, .seed = seed + (unsigned)i, .iters = 300};
		w[i].in = new_inode(fs, root, EXT3_S_IFREG | 0600);
	}
	for (int i = 0; i < T; i++)
		assert_int_equal(pthread_create(&tid[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < T; i++) {
		pthread_join(tid[i], NULL);
		if (w[i].err)
			fail_msg("worker %d: %d (%s)", i, w[i].err, err_last(w[i].err));
	}
	for (int i = 0; i < T; i++)
		free_inode(fs, w[i].in);
	assert_int_equal(fs->free_blocks, free0);
	assert_int_equal(fs->free_inodes, ifree0);
	assert_int_equal(GD_SUM(fs, bg_free_blocks_count), free0);
	assert_int_equal(GD_SUM(fs, bg_free_inodes_count), ifree0);
	fx_close(&x, true);
	assert_int_equal(dumpe2fs_num(x.img, "Free blocks:"), free0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nostall_alloc_XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	have_e2fs = run("command -v mke2fs >/dev/null && command -v e2fsck >/dev/null && "
			"command -v debugfs >/dev/null && command -v dumpe2fs >/dev/null") == 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	(void)run("rm -rf '%s'", tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credits),
		cmocka_unit_test(test_basic_1k),
		cmocka_unit_test(test_basic_4k),
		cmocka_unit_test(test_fill_1k),
		cmocka_unit_test(test_fill_4k),
		cmocka_unit_test(test_freed_not_reused_before_commit),
		cmocka_unit_test(test_reservation_interleaved),
		cmocka_unit_test(test_orlov),
		cmocka_unit_test(test_errors_policy),
		cmocka_unit_test(test_errors_panic),
		cmocka_unit_test(test_metadata_claimed_free),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
