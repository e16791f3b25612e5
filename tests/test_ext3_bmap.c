/* The block-map interface (src/extfs/inode/bmap.h): the dispatchers over
 * the indirect map of a regular file. A hole maps to 0 without create and
 * is allocated with it; the inode's own map cache forgets a leaf the
 * allocation changed; ext3_bmap_truncate frees a range and i_blocks with
 * it; an inode flagged EXT4_EXTENTS_FL maps through the indirect map unless
 * the filesystem has the extent feature, then through the extent table.
 *
 * Oracles: e2fsck -fn (clean after our unmount), debugfs (the file, bmap).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "extfs/core/write.h"
#include "extfs/inode/bmap.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static char tmpdir[256];

static long long debugfs_bmap(const char *img, uint32_t ino, uint64_t lblk)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "debugfs -R 'bmap <%u> %llu' '%s' 2>/dev/null", ino,
		 (unsigned long long)lblk, img);
	return fsimg_assert_num("", cmd);
}

/* Allocate logical block lblk of in in a handle of its own (growing i_size
 * over it): 0 or the error; *phys, *is_new from ext3_get_blocks. */
static int alloc_one(struct ext3_inode *in, uint64_t lblk, uint64_t *phys, bool *is_new)
{
	struct ext3_fs *fs = in->fs;
	struct jbd_handle *h;
	int rc = ext3_journal_start(fs, ext3_credits_data(fs, 1), &h);
	if (rc)
		return rc;
	if (ext3_inode_trywrlock(in)) { /* under the handle: only tried (write.h) */
		ext3_journal_stop(h);
		return -EBUSY;
	}
	uint32_t cnt = 0;
	rc = ext3_get_blocks(h, in, lblk, 1, true, phys, &cnt, is_new);
	if (!rc && cnt != 1)
		rc = -EIO;
	if (!rc && (lblk + 1) * fs->g.block_size > in->i_size) {
		in->i_size = in->i_disksize = (lblk + 1) * fs->g.block_size;
		rc = ext3_mark_inode_dirty(h, in);
	}
	ext3_inode_unlock(in);
	int src = ext3_journal_stop(h);
	return rc ? rc : src;
}

/* ext3_bmap_truncate from logical block first, as truncate.c drives it. */
static int free_from(struct ext3_inode *in, uint64_t first)
{
	struct ext3_fs *fs = in->fs;
	struct ext3_bmap_trunc t = {.in = in, .fs = fs, .units = fs->g.block_size / 512,
				    .meta = ext3_inode_data_is_meta(in)};
	t.credits = ext3_credits_truncate(fs);
	int rc = ext3_journal_start(fs, t.credits, &t.h);
	if (rc)
		return rc;
	t.budget = t.credits - 4;
	ext3_inode_wrlock(in);
	rc = ext3_bmap_truncate(&t, first);
	ext3_inode_map_invalidate(in);
	if (!rc)
		rc = ext3_mark_inode_dirty(t.h, in);
	ext3_inode_unlock(in);
	int src = ext3_journal_stop(t.h);
	return rc ? rc : src;
}

static void bmap_interface(unsigned bs)
{
	char img[300];
	snprintf(img, sizeof img, "%s/bmap%u.img", tmpdir, bs);
	fsimg_assert_mkfs(img, bs, 8 * 1024, "-I 128");
	assert_int_equal(fsimg_debugfs_w(img, "write /dev/null f0"), 0);
	struct fsimg_mnt m;
	fsimg_assert_mount(img, NULL, EXT3_MOUNT_JOURNAL, &m);
	struct ext3_fs *fs = m.fs;
	uint32_t ino;
	assert_int_equal(ext3_path_lookup(fs, "/f0", true, &ino), 0);
	struct ext3_inode *in;
	assert_int_equal(ext3_iget(fs, ino, &in), 0);
	const uint32_t units = bs / 512;

	/* An ext3 inode maps through the indirect map. */
	assert_ptr_equal(ext3_bmap_ops_of(in), &ext3_bmap_ind_ops);

	/* A hole without create: 0, no block, no error; the whole missing
	 * single-indirect span is one hole run. */
	uint64_t p = 1, c = 0;
	assert_int_equal(ext3_inode_bmap(fs, in, 20, &p), 0);
	assert_int_equal(p, 0);
	assert_int_equal(ext3_inode_map_run(fs, in, NULL, 12, 1000, &p, &c), 0);
	assert_int_equal(p, 0);
	assert_int_equal(c, fs->g.apb < 1000 ? fs->g.apb : 1000);
	ext3_inode_wrlock(in);
	uint64_t gp = 1;
	uint32_t gc = 0;
	bool nw = true;
	assert_int_equal(ext3_get_blocks(NULL, in, 20, 4, false, &gp, &gc, &nw), 0);
	assert_int_equal(gp, 0);
	assert_int_equal(gc, 4);
	assert_false(nw);
	assert_int_equal(in->a.blocks, 0);
	ext3_inode_unlock(in);

	/* With create: a new block (and the indirect leaf above it). */
	uint64_t p30 = 0;
	assert_int_equal(alloc_one(in, 30, &p30, &nw), 0);
	assert_true(nw);
	assert_true(p30 != 0);
	assert_int_equal(in->a.blocks, 2 * units);
	assert_int_equal(ext3_inode_bmap(fs, in, 30, &p), 0);
	assert_int_equal(p, p30);

	/* The inode's own cache holds the leaf now (block 20 a hole in it);
	 * allocating 20 invalidates it, so the next run sees the block. */
	assert_int_equal(ext3_inode_map_run(fs, in, NULL, 20, 5, &p, &c), 0);
	assert_int_equal(p, 0);
	assert_int_equal(c, 5);
	uint64_t p20 = 0;
	assert_int_equal(alloc_one(in, 20, &p20, &nw), 0);
	assert_true(nw && p20 != 0);
	assert_int_equal(ext3_inode_map_run(fs, in, NULL, 20, 5, &p, &c), 0);
	assert_int_equal(p, p20);
	assert_int_equal(c, 1);
	/* Mapping again without create: the same block, not new. */
	assert_int_equal(alloc_one(in, 20, &gp, &nw), 0);
	assert_false(nw);
	assert_int_equal(gp, p20);
	assert_int_equal(in->a.blocks, 3 * units);

	/* A caller's own cache, and invalidation of the inode's. */
	struct ext3_map_cache *mc = ext3_map_cache_new();
	assert_non_null(mc);
	assert_int_equal(ext3_inode_map_run(fs, in, mc, 30, 1, &p, &c), 0);
	assert_int_equal(p, p30);
	ext3_map_cache_free(mc);
	ext3_inode_map_invalidate(in);
	assert_int_equal(ext3_inode_map_run(fs, in, NULL, 30, 1, &p, &c), 0);
	assert_int_equal(p, p30);

	/* Free a range: from 25 on (block 30 goes, the leaf stays for 20). */
	assert_int_equal(free_from(in, 25), 0);
	assert_int_equal(ext3_inode_bmap(fs, in, 30, &p), 0);
	assert_int_equal(p, 0);
	assert_int_equal(ext3_inode_bmap(fs, in, 20, &p), 0);
	assert_int_equal(p, p20);
	assert_int_equal(in->a.blocks, 2 * units);
	/* From 12 on: 20 and the emptied leaf. */
	assert_int_equal(free_from(in, 12), 0);
	assert_int_equal(ext3_inode_map_run(fs, in, NULL, 20, 1, &p, &c), 0);
	assert_int_equal(p, 0);
	assert_int_equal(in->a.blocks, 0);

	/* The extent flag alone changes nothing (ext3 ignores it); with the
	 * extent feature the inode maps through the extent table, which finds
	 * no tree header in this indirect map (corrupt) and allocates nothing
	 * (the write side checks the tree before it changes anything). */
	ext3_inode_wrlock(in);
	in->a.flags |= EXT4_EXTENTS_FL;
	assert_ptr_equal(ext3_bmap_ops_of(in), &ext3_bmap_ind_ops);
	uint32_t incompat = fs->sb.s_feature_incompat;
	fs->sb.s_feature_incompat |= cpu_to_le32(EXT4_FEATURE_INCOMPAT_EXTENTS);
	assert_ptr_equal(ext3_bmap_ops_of(in), &ext3_bmap_ext_ops);
	assert_int_equal(ext3_inode_bmap_locked(fs, in, 0, &p), -EUCLEAN);
	assert_int_equal(ext3_get_blocks(NULL, in, 0, 1, false, &gp, &gc, &nw), -EUCLEAN);
	assert_int_equal(ext3_get_blocks(NULL, in, 0, 1, true, &gp, &gc, &nw), -EUCLEAN);
	fs->sb.s_feature_incompat = incompat;
	in->a.flags &= ~(uint32_t)EXT4_EXTENTS_FL;
	ext3_inode_unlock(in);

	/* Block 20 once more, checked by debugfs after the unmount. */
	assert_int_equal(alloc_one(in, 20, &p20, &nw), 0);
	assert_true(nw);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	assert_int_equal(debugfs_bmap(img, ino, 20), (long long)p20);
	assert_int_equal(debugfs_bmap(img, ino, 30), 0);
}

static void test_bmap_1k(void **s) { (void)s; bmap_interface(1024); }
static void test_bmap_4k(void **s) { (void)s; bmap_interface(4096); }

int main(void)
{
	int orc = oracles_check("test_ext3_bmap", "mke2fs e2fsck debugfs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "bmap"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bmap_1k),
		cmocka_unit_test(test_bmap_4k),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
