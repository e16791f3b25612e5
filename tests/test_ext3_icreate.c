/* Creating inodes without reading their inode-table block (ialloc.c,
 * itable_fresh): a block in which no other inode is in use is made up in
 * memory; a block with another inode in use is read; a block in the cache
 * is used as it is.
 *
 * The device fails every read of the fresh part of group 0's inode table
 * (a fault: device), so a create that reads a fresh block fails with EIO.
 * Oracles: e2fsck -fn after unmount, debugfs (a kept inode's content, a
 * freed inode's dtime), nostall's read path after a remount. Images: mke2fs,
 * 1 KiB and 4 KiB blocks, 128- and 256-byte inodes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];

struct geo {
	unsigned bs, isz;
};
static const struct geo geos[] = {{1024, 128}, {1024, 256}, {4096, 128}, {4096, 256}};
#define NGEOS (sizeof geos / sizeof geos[0])

static const struct ext3_cred cred = { .uid = 0, .gid = 0 };

#define KEEP_TEXT "the kept inode's data, written by debugfs\n"

static uint32_t create(struct ext3_inode *dir, const char *name)
{
	struct ext3_inode *in = NULL;
	int rc = ext3_create(dir, name, strlen(name), EXT3_S_IFREG | 0644, 0, &cred, &in);
	if (rc)
		fail_msg("create %s: %s", name, err_last(rc));
	uint32_t ino = in->ino;
	ext3_iput(in);
	return ino;
}

/* A fresh image whose group 0 has one used non-reserved inode, alone in
 * its inode-table block: debugfs writes files k0.. up to the first inode
 * of the first block past the reserved inodes, then removes all but that
 * last one ("keep", holding KEEP_TEXT). *keep_blk: that block's index in
 * the table. */
static void mkimg(const char *img, struct geo g, uint32_t *keep_ino, uint32_t *keep_blk)
{
	char extra[64];
	snprintf(extra, sizeof extra, "-I %u -N 512", g.isz);
	fsimg_assert_mkfs(img, g.bs, 8192, extra);
	uint32_t ipb = g.bs / g.isz;
	/* first_ino is 11 (lost+found): indexes 0..10 are in use. */
	uint32_t blk = (11 + ipb - 1) / ipb;
	uint32_t keep = blk * ipb + 1;
	char path[300], cmds[300];
	snprintf(path, sizeof path, "%s/keep.txt", tmpdir);
	snprintf(cmds, sizeof cmds, "%s/mk.cmds", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(KEEP_TEXT, f);
	fclose(f);
	f = fopen(cmds, "w");
	assert_non_null(f);
	for (uint32_t i = 12; i < keep; i++)
		fprintf(f, "write /dev/null k%u\n", i);
	fprintf(f, "write %s keep\n", path);
	for (uint32_t i = 12; i < keep; i++)
		fprintf(f, "rm k%u\n", i);
	fclose(f);
	assert_int_equal(fsimg_run("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmds, img), 0);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "debugfs -R 'stat keep' '%s' 2>/dev/null", img);
	assert_int_equal(fsimg_assert_num("Inode:", cmd), keep);
	*keep_ino = keep;
	*keep_blk = blk;
}

/* The fault: spec failing every read of group 0's inode table from index
 * first_blk on. */
static void fault_spec(char *out, size_t n, const char *img, struct geo g, uint32_t first_blk)
{
	struct fsimg_mnt m;
	fsimg_assert_mount(img, NULL, 0, &m);
	uint64_t start = m.fs->gd[0].bg_inode_table + first_blk;
	uint64_t end = m.fs->gd[0].bg_inode_table + m.fs->g.itable_blocks - 1;
	fsimg_assert_umount(&m);
	unsigned spb = g.bs / 512;
	snprintf(out, n, "fault:file:%s,op=read,sector=%llu-%llu,err=eio", img,
		 (unsigned long long)(start * spb), (unsigned long long)((end + 1) * spb - 1));
}

static void assert_keep_intact(const char *img, uint32_t keep)
{
	char buf[256];
	assert_int_equal(fsimg_out(buf, sizeof buf, "debugfs -R 'cat <%u>' '%s' 2>/dev/null",
				   keep, img), 0);
	assert_string_equal(buf, KEEP_TEXT);
}

/* Creates in group 0 fill the reserved inodes' block, the kept inode's
 * block (read: keep survives) and fresh blocks (never read: the device
 * fails those reads). */
static void test_fresh_blocks_not_read(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi++) {
		struct geo g = geos[gi];
		uint32_t ipb = g.bs / g.isz;
		char img[300], spec[600];
		snprintf(img, sizeof img, "%s/fresh-%u-%u.img", tmpdir, g.bs, g.isz);
		uint32_t keep, keep_blk;
		mkimg(img, g, &keep, &keep_blk);
		fault_spec(spec, sizeof spec, img, g, keep_blk + 1);
		print_message("%u/%u: keep %u, reads of the table from block %u fail\n", g.bs,
			      g.isz, keep, keep_blk + 1);
		struct fsimg_mnt m;
		fsimg_assert_mount_spec(spec, "readahead=0", EXT3_MOUNT_JOURNAL, &m);
		/* Through the keep's block and three fresh ones. */
		uint32_t n = keep - 12 + 4 * ipb;
		for (uint32_t i = 0; i < n; i++) {
			char name[32];
			snprintf(name, sizeof name, "f%u", i);
			uint32_t ino = create(m.root, name);
			uint32_t want = i < keep - 12 ? 12 + i : i + 13;
			assert_int_equal(ino, want);
		}
		fsimg_assert_umount(&m);
		fsimg_assert_clean(img);
		assert_keep_intact(img, keep);
		/* The new inodes read back whole (the fault device is gone). */
		fsimg_assert_mount(img, NULL, 0, &m);
		for (uint32_t i = 0; i < n; i++) {
			char name[32];
			snprintf(name, sizeof name, "/f%u", i);
			uint32_t ino;
			assert_int_equal(ext3_path_lookup(m.fs, name, true, &ino), 0);
			struct ext3_inode *in;
			assert_int_equal(ext3_iget(m.fs, ino, &in), 0);
			struct ext3_inode_attr a;
			ext3_inode_attr_get(in, &a);
			assert_int_equal(a.mode, EXT3_S_IFREG | 0644);
			assert_int_equal(a.links, 1);
			assert_int_equal(a.size, 0);
			ext3_iput(in);
		}
		fsimg_assert_umount(&m);
	}
}

/* A block in the cache is used as it is, even when nothing in it is in
 * use: two files made at the start of a fresh block and removed, then a
 * new one takes the first slot; the second slot keeps its dtime. */
static void test_cached_block_kept(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi++) {
		struct geo g = geos[gi];
		uint32_t ipb = g.bs / g.isz;
		char img[300];
		snprintf(img, sizeof img, "%s/cached-%u-%u.img", tmpdir, g.bs, g.isz);
		uint32_t keep, keep_blk;
		mkimg(img, g, &keep, &keep_blk);
		struct fsimg_mnt m;
		fsimg_assert_mount(img, "readahead=0", EXT3_MOUNT_JOURNAL, &m);
		/* Fill up to the end of keep's block: x is a fresh block's first. */
		for (uint32_t i = 12; i < keep + ipb; i++) {
			if (i == keep)
				continue;
			char name[32];
			snprintf(name, sizeof name, "f%u", i);
			assert_int_equal(create(m.root, name), i);
		}
		uint32_t x = create(m.root, "x"), y = create(m.root, "y");
		assert_int_equal(x, keep + ipb);
		assert_int_equal(y, x + 1);
		assert_int_equal(ext3_unlink(m.root, "x", 1), 0);
		assert_int_equal(ext3_unlink(m.root, "y", 1), 0);
		assert_int_equal(create(m.root, "z"), x);
		/* The lowest free number is taken: a hole among used ones
		 * (ialloc.c's word-at-a-time bitmap scan), else y. */
		char hole[32];
		snprintf(hole, sizeof hole, "f%u", keep + 3);
		assert_int_equal(ext3_unlink(m.root, hole, strlen(hole)), 0);
		assert_int_equal(create(m.root, "w"), keep + 3);
		assert_int_equal(create(m.root, "v"), y);
		assert_int_equal(ext3_unlink(m.root, "v", 1), 0);
		fsimg_assert_umount(&m);
		fsimg_assert_clean(img);
		assert_keep_intact(img, keep);
		char cmd[700];
		snprintf(cmd, sizeof cmd, "debugfs -R 'stat <%u>' '%s' 2>/dev/null", y, img);
		if (fsimg_count("dtime:", "%s", cmd) != 1)
			fail_msg("%u/%u: freed inode %u lost its dtime (its cached block was "
				 "zeroed)", g.bs, g.isz, y);
	}
}

int main(void)
{
	int orc = oracles_check("test_ext3_icreate", "mke2fs e2fsck debugfs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "ext3_icreate"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_blocks_not_read),
		cmocka_unit_test(test_cached_block_kept),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
