/* The inode part of the ext3 write path (src/extfs/inode/inode_write.c, truncate.c,
 * orphan.c, icache.c eviction, mount.c's writable bring-up), driven through
 * the internal contract (write.h) on mke2fs images whose files debugfs made.
 *
 * Oracles: debugfs (stat, bmap, ea_get), dumpe2fs (free counts, features,
 * the orphan head), e2fsck -fn (clean after our unmount or our recovery),
 * and nostall's own read path after a remount. Crashes are images copied
 * while mounted, after a forced commit, or crash points of a log: device.
 *
 * nostall-test: concurrent (a thread forces commits during a truncate)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "dev/dev.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "extfs/core/write.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

/* ---- helpers ---- */

static long long stat_num(const char *img, const char *file, const char *key)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "debugfs -R 'stat %s' '%s' 2>/dev/null", file, img);
	return fsimg_assert_num(key, cmd);
}

static long long free_blocks(const char *img)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "dumpe2fs -h '%s' 2>/dev/null", img);
	return fsimg_assert_num("Free blocks:", cmd);
}

static long long bmap(const char *img, uint32_t ino, uint64_t lblk)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "debugfs -R 'bmap <%u> %llu' '%s' 2>/dev/null", ino,
		 (unsigned long long)lblk, img);
	return fsimg_assert_num("", cmd);
}

static bool cmd_has(const char *cmd, const char *text)
{
	return fsimg_count(text, "%s", cmd) > 0;
}

/* A fresh image with nfiles empty regular files f0.. (debugfs). */
static void mkimg(char *img, size_t len, const char *name, unsigned bs, unsigned mb,
		  unsigned isz, const char *extra, int nfiles)
{
	snprintf(img, len, "%s/%s.img", tmpdir, name);
	char opts[200];
	snprintf(opts, sizeof opts, "-I %u %s", isz, extra ? extra : "");
	fsimg_assert_mkfs(img, bs, mb * 1024, opts);
	char cmds[300];
	snprintf(cmds, sizeof cmds, "%s/%s.cmds", tmpdir, name);
	FILE *f = fopen(cmds, "w");
	assert_non_null(f);
	for (int i = 0; i < nfiles; i++)
		fprintf(f, "write /dev/null f%d\n", i);
	fclose(f);
	assert_int_equal(fsimg_run("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmds, img), 0);
}

/* rw: writable (EXT3_MOUNT_JOURNAL), else the read path. */
static void mnt_open(struct fsimg_mnt *m, const char *img, bool rw)
{
	fsimg_assert_mount(img, NULL, rw ? EXT3_MOUNT_JOURNAL : 0, m);
}

static struct ext3_inode *file_get(struct ext3_fs *fs, const char *path)
{
	uint32_t ino;
	assert_int_equal(ext3_path_lookup(fs, path, true, &ino), 0);
	struct ext3_inode *in;
	assert_int_equal(ext3_iget(fs, ino, &in), 0);
	return in;
}

/* Map (allocating) [lblk, lblk + n) and grow i_size over it. Returns the
 * first call's error or 0; *first gets the first physical block. */
static int alloc_range(struct ext3_inode *in, uint64_t lblk, uint32_t n, uint64_t *first)
{
	struct ext3_fs *fs = in->fs;
	int rc = 0;
	uint64_t done = 0;
	while (done < n && !rc) {
		struct jbd_handle *h;
		uint32_t want = n - (uint32_t)done > 64 ? 64 : n - (uint32_t)done;
		rc = ext3_journal_start(fs, ext3_credits_data(fs, want), &h);
		if (rc) {
			print_message("journal start: %s\n", err_last(rc));
			break;
		}
		assert_int_equal(ext3_inode_trywrlock(in), 0); /* under the handle: only tried (write.h) */
		uint64_t phys;
		uint32_t cnt;
		bool is_new;
		rc = ext3_get_blocks(h, in, lblk + done, want, true, &phys, &cnt, &is_new);
		if (!rc && (!is_new || cnt < 1 || cnt > want)) {
			/* release the lock and the handle before failing: a
			 * handle left open breaks every later test */
			ext3_inode_unlock(in);
			ext3_journal_stop(h);
			fail_msg("get_blocks at %llu: new %d, count %u of %u",
				 (unsigned long long)(lblk + done), is_new, cnt, want);
		}
		if (!rc) {
			if (first && done == 0)
				*first = phys;
			done += cnt;
			uint64_t end = (lblk + done) * fs->g.block_size;
			if (end > in->i_size) {
				in->i_size = in->i_disksize = end;
				rc = ext3_mark_inode_dirty(h, in);
			}
		}
		ext3_inode_unlock(in);
		if (rc && rc != -ENOSPC)
			print_message("get_blocks at %llu: %s\n", (unsigned long long)(lblk + done),
				      err_last(rc));
		int src = ext3_journal_stop(h);
		if (!rc)
			rc = src;
	}
	return rc;
}

static int do_truncate(struct ext3_inode *in, uint64_t size)
{
	ext3_inode_wrlock(in);
	int rc = ext3_truncate(in, size);
	ext3_inode_unlock(in);
	return rc;
}

/* Indirect blocks a dense file of n blocks needs (n within the double
 * indirect range). */
static uint64_t dense_meta(uint64_t n, uint64_t apb)
{
	if (n <= EXT3_NDIR_BLOCKS)
		return 0;
	n -= EXT3_NDIR_BLOCKS;
	if (n <= apb)
		return 1;
	n -= apb;
	return 1 + 1 + (n + apb - 1) / apb;
}

/* ---- tests ---- */

static void fields_roundtrip(unsigned bs, unsigned isz)
{
	char img[300];
	mkimg(img, sizeof img, "fields", bs, 16, isz, "-O ^large_file", 2);
	bool big = isz > 128;
	if (big)
		assert_int_equal(fsimg_debugfs_w(img, "ea_set f0 user.keep kept-value"), 0);
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *in = file_get(m.fs, "/f0");
	uint32_t ino = in->ino;
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(m.fs, 4, &h), 0);
	assert_int_equal(ext3_inode_trywrlock(in), 0); /* under the handle: only tried (write.h) */
	in->a.mode = EXT3_S_IFREG | 0640;
	in->a.uid = 70001;
	in->a.gid = 80002;
	in->a.flags |= EXT3_NODUMP_FL;
	in->a.generation = 0x1234567;
	in->a.mtime = (1ll << 32) + 5; /* needs the epoch bits */
	in->a.mtime_ns = 123456789;
	in->a.atime = 1700000000;
	in->a.atime_ns = 42;
	in->a.ctime = -5; /* before 1970 */
	in->a.ctime_ns = 7;
	in->a.crtime = 1600000000;
	in->a.crtime_ns = 999999999;
	in->i_size = in->i_disksize = 3ull << 30; /* sparse 3 GiB: large_file */
	assert_int_equal(ext3_mark_inode_dirty(h, in), 0);
	ext3_inode_unlock(in);
	assert_int_equal(ext3_journal_stop(h), 0);
	ext3_iput(in);
	fsimg_assert_umount(&m);

	fsimg_assert_clean(img);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "dumpe2fs -h '%s' 2>/dev/null", img);
	assert_true(cmd_has(cmd, "large_file"));
	assert_int_equal(stat_num(img, "f0", "User:"), 70001);
	assert_int_equal(stat_num(img, "f0", "Group:"), 80002);
	assert_int_equal(stat_num(img, "f0", "Generation:"), 0x1234567);
	assert_int_equal(stat_num(img, "f0", "Size:"), 3ll << 30);
	if (big) {
		snprintf(cmd, sizeof cmd, "debugfs -R 'ea_get f0 user.keep' '%s' 2>/dev/null", img);
		assert_true(cmd_has(cmd, "kept-value"));
	}
	/* Read back through nostall. */
	mnt_open(&m, img, false);
	assert_int_equal(ext3_iget(m.fs, ino, &in), 0);
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	assert_int_equal(a.mode, EXT3_S_IFREG | 0640);
	assert_int_equal(a.uid, 70001);
	assert_int_equal(a.gid, 80002);
	assert_true(a.flags & EXT3_NODUMP_FL);
	assert_int_equal(a.size, 3ull << 30);
	if (big) {
		assert_int_equal(a.mtime, (1ll << 32) + 5);
		assert_int_equal(a.mtime_ns, 123456789);
		assert_int_equal(a.atime_ns, 42);
		assert_int_equal(a.ctime, -5);
		assert_int_equal(a.crtime, 1600000000);
		assert_int_equal(a.crtime_ns, 999999999);
	} else {
		assert_int_equal(a.mtime, 5); /* 32 bits only */
		assert_int_equal(a.ctime, -5);
	}
	assert_int_equal(a.atime, 1700000000);
	ext3_iput(in);
	fsimg_assert_umount(&m);
}

static void test_fields_1k(void **s) { (void)s; fields_roundtrip(1024, 256); }
static void test_fields_4k(void **s) { (void)s; fields_roundtrip(4096, 256); }
static void test_fields_128(void **s) { (void)s; fields_roundtrip(1024, 128); }

/* Sparse blocks in every range of the tree; debugfs's bmap agrees. */
static void map_ranges(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "map", bs, 32, 256, NULL, 1);
	long long free0 = free_blocks(img);
	uint64_t apb = bs / 4;
	uint64_t lblks[] = {0, 11, 12, 12 + apb - 1, 12 + apb, 12 + apb + apb * apb - 1,
			    12 + apb + apb * apb, 12 + apb + apb * apb + apb * apb + 7};
	const int n = sizeof lblks / sizeof lblks[0];
	uint64_t phys[8];
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *in = file_get(m.fs, "/f0");
	uint32_t ino = in->ino;
	for (int i = 0; i < n; i++) {
		int rc = alloc_range(in, lblks[i], 1, &phys[i]);
		if (rc)
			fail_msg("alloc at %llu: %s", (unsigned long long)lblks[i], err_last(rc));
	}
	/* Mapped now, holes elsewhere (no create). */
	ext3_inode_wrlock(in);
	for (int i = 0; i < n; i++) {
		uint64_t p;
		uint32_t c;
		bool nw;
		assert_int_equal(ext3_get_blocks(NULL, in, lblks[i], 1, false, &p, &c, &nw), 0);
		assert_int_equal(p, phys[i]);
		assert_false(nw);
	}
	uint64_t p;
	uint32_t c;
	assert_int_equal(ext3_get_blocks(NULL, in, 1, 5, false, &p, &c, NULL), 0);
	assert_int_equal(p, 0);
	assert_int_equal(c, 5); /* the hole 1..5 */
	uint32_t blocks = in->a.blocks;
	ext3_inode_unlock(in);
	ext3_iput(in);
	fsimg_assert_umount(&m);

	fsimg_assert_clean(img);
	for (int i = 0; i < n; i++)
		assert_int_equal(bmap(img, ino, lblks[i]), (long long)phys[i]);
	/* 8 data blocks; indirect: IND, DIND + 2 leaves, TIND + 2 DIND-level
	 * + 2 leaves. */
	long long meta = 1 + 3 + 5;
	assert_int_equal(blocks, (8 + meta) * (bs / 512));
	assert_int_equal(stat_num(img, "f0", "Blockcount:"), (8 + meta) * (bs / 512));
	assert_int_equal(free0 - free_blocks(img), 8 + meta);
}

static void test_map_1k(void **s) { (void)s; map_ranges(1024); }
static void test_map_4k(void **s) { (void)s; map_ranges(4096); }

/* Past the largest file: -EFBIG; the last block maps. */
static void efbig(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "efbig", bs, 16, 256, NULL, 1);
	uint64_t apb = bs / 4;
	uint64_t tree = 12 + apb + apb * apb + apb * apb * apb;
	uint64_t lim = 0xffffffffull / (bs / 512) - (1 + (1 + apb) + (1 + apb + apb * apb));
	uint64_t max = tree < lim ? tree : lim;
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *in = file_get(m.fs, "/f0");
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(m.fs, ext3_credits_data(m.fs, 1), &h), 0);
	assert_int_equal(ext3_inode_trywrlock(in), 0); /* under the handle: only tried (write.h) */
	uint64_t p;
	uint32_t c = 0;
	bool nw;
	/* Results are checked after the handle stops: a handle left open
	 * would break every later test. */
	int past = ext3_get_blocks(h, in, max, 1, true, &p, &c, &nw);
	int last = ext3_get_blocks(h, in, max - 1, 4, true, &p, &c, &nw);
	in->i_size = in->i_disksize = max * bs;
	int dirty = ext3_mark_inode_dirty(h, in);
	ext3_inode_unlock(in);
	assert_int_equal(ext3_journal_stop(h), 0);
	assert_int_equal(past, -EFBIG);
	assert_int_equal(last, 0);
	assert_int_equal(c, 1);
	assert_int_equal(dirty, 0);
	/* Truncate up past the largest file is refused too. */
	assert_int_equal(do_truncate(in, (max + 1) * bs), -EFBIG);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
}

static void test_efbig_1k(void **s) { (void)s; efbig(1024); }
static void test_efbig_4k(void **s) { (void)s; efbig(4096); }

/* Dense file into the double indirect range, truncated down across the
 * boundaries: exactly the blocks past the size (and the indirect blocks no
 * longer needed) come back. Then up (a hole), then to 0. */
static void truncate_steps(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "trunc", bs, 64, 256, NULL, 2);
	uint64_t apb = bs / 4;
	uint64_t n = 12 + apb + 2 * apb + 10;
	long long free0 = free_blocks(img);
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *in = file_get(m.fs, "/f0");
	uint32_t ino = in->ino;
	assert_int_equal(alloc_range(in, 0, (uint32_t)n, NULL), 0);
	/* A sparse triple-indirect block too: truncating below frees the tree. */
	uint64_t tind = 12 + apb + apb * apb + 3;
	assert_int_equal(alloc_range(in, tind, 1, NULL), 0);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	long long used = free0 - free_blocks(img);
	assert_int_equal(used, (long long)(n + dense_meta(n, apb) + 1 + 3));

	uint64_t sizes[] = {n - 3, 12 + apb + apb + 1, 12 + apb + apb, 12 + apb + 1, 12 + apb,
			    13, 12, 5, 0};
	uint64_t cur = n;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		long long before = free_blocks(img);
		mnt_open(&m, img, true);
		in = file_get(m.fs, "/f0");
		/* The byte size ends inside the block: that block stays. */
		uint64_t bytes = sizes[i] ? sizes[i] * bs - bs / 2 : 0;
		int rc = do_truncate(in, bytes);
		if (rc)
			fail_msg("truncate to %llu: %s", (unsigned long long)bytes, err_last(rc));
		assert_false(in->on_orphan);
		ext3_iput(in);
		fsimg_assert_umount(&m);
		fsimg_assert_clean(img);
		long long freed = free_blocks(img) - before;
		long long want = (long long)((cur - sizes[i]) + dense_meta(cur, apb) -
					     dense_meta(sizes[i], apb));
		if (i == 0)
			want += 4; /* the triple indirect tree (1 data + 3) */
		assert_int_equal(freed, want);
		assert_int_equal(stat_num(img, "f0", "Size:"), (long long)bytes);
		assert_int_equal(stat_num(img, "f0", "Blockcount:"),
				 (long long)((sizes[i] + dense_meta(sizes[i], apb)) * (bs / 512)));
		cur = sizes[i];
	}
	assert_int_equal(free_blocks(img), free0);
	/* Up: a hole, no blocks. */
	mnt_open(&m, img, true);
	in = file_get(m.fs, "/f0");
	assert_int_equal(do_truncate(in, 10ull << 20), 0);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	assert_int_equal(free_blocks(img), free0);
	assert_int_equal(stat_num(img, "f0", "Size:"), 10ll << 20);
	assert_int_equal(bmap(img, ino, 100), 0);
}

/* A cut inside an indirect block whose entries before the cut are all
 * holes empties it: it is freed with the tail (Linux's ext3_find_shared
 * frees the top of an all-zero partial branch, e2fsck's orphan truncate an
 * emptied indirect block; a crash's orphan cleanup must leave the same
 * image as theirs). A kept prefix keeps it. */
static void truncate_sparse_branch(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "trsparse", bs, 64, 256, NULL, 2);
	uint64_t apb = bs / 4;
	long long free0 = free_blocks(img);
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *in = file_get(m.fs, "/f0");
	uint32_t ino = in->ino;
	uint64_t dind = 12 + apb;
	/* IND: its last 5 entries; DIND: entries 5..7 of its first IND and
	 * 7..9 of its third. */
	assert_int_equal(alloc_range(in, 12 + apb - 5, 5, NULL), 0);
	assert_int_equal(alloc_range(in, dind + 5, 3, NULL), 0);
	assert_int_equal(alloc_range(in, dind + 2 * apb + 7, 3, NULL), 0);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	/* 11 data, IND, DIND, two INDs under it */
	assert_int_equal(free0 - free_blocks(img), 11 + 1 + 1 + 2);

	struct {
		uint64_t size;  /* blocks */
		long long freed; /* blocks freed by this step */
		long long left;  /* blocks the file keeps, tree included */
	} steps[] = {
		{dind + 2 * apb + 8, 2, 13},  /* third IND keeps entry 7 */
		{dind + 2 * apb + 3, 2, 11},  /* its prefix is holes: it goes */
		{dind + 6, 2, 9},             /* first IND keeps entry 5 */
		{dind + 3, 3, 6},             /* first IND and then DIND empty */
		{12 + 3, 6, 0},               /* IND's prefix is holes */
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		long long before = free_blocks(img);
		mnt_open(&m, img, true);
		in = file_get(m.fs, "/f0");
		int rc = do_truncate(in, steps[i].size * bs);
		if (rc)
			fail_msg("truncate to %llu blocks: %s", (unsigned long long)steps[i].size,
				 err_last(rc));
		ext3_iput(in);
		fsimg_assert_umount(&m);
		fsimg_assert_clean(img);
		if (free_blocks(img) - before != steps[i].freed)
			fail_msg("step %zu (size %llu blocks): freed %lld, want %lld", i,
				 (unsigned long long)steps[i].size, free_blocks(img) - before,
				 steps[i].freed);
		assert_int_equal(stat_num(img, "f0", "Blockcount:"), steps[i].left * (bs / 512));
	}
	assert_int_equal(free_blocks(img), free0);
	assert_int_equal(bmap(img, ino, 12), 0);
}

static void test_truncate_sparse_1k(void **s) { (void)s; truncate_sparse_branch(1024); }
static void test_truncate_sparse_4k(void **s) { (void)s; truncate_sparse_branch(4096); }

static void test_truncate_1k(void **s) { (void)s; truncate_steps(1024); }
static void test_truncate_4k(void **s) { (void)s; truncate_steps(4096); }

/* Allocate until the filesystem is full: the failing call leaves a
 * consistent inode (e2fsck clean), and truncating gives everything back. */
static void enospc(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "enospc", bs, bs == 1024 ? 4 : 8, 128, "-m 0", 1);
	long long free0 = free_blocks(img);
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *in = file_get(m.fs, "/f0");
	uint64_t apb = bs / 4;
	/* Sparse steps so indirect blocks are needed at the end too. */
	int rc = 0;
	uint64_t l = 0;
	unsigned calls = 0;
	while (!rc && calls < 100000) {
		rc = alloc_range(in, l, 7, NULL);
		l += 7 + (calls % 3 == 0 ? apb / 2 : 0);
		calls++;
	}
	assert_int_equal(rc, -ENOSPC);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	assert_true(free_blocks(img) < 8);
	mnt_open(&m, img, true);
	in = file_get(m.fs, "/f0");
	assert_int_equal(do_truncate(in, 0), 0);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	assert_int_equal(free_blocks(img), free0);
}

static void test_enospc_1k(void **s) { (void)s; enospc(1024); }
static void test_enospc_4k(void **s) { (void)s; enospc(4096); }

/* Copy the image while mounted, after a commit: a crash. */
static void crash_copy(struct ext3_fs *fs, const char *img, char *out, size_t len)
{
	assert_int_equal(jbd_journal_force_commit(ext3_fs_journal(fs)), 0);
	snprintf(out, len, "%s.crash", img);
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", img, out), 0);
}

static void unlink_mem(struct ext3_inode *in)
{
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(in->fs, 8, &h), 0);
	assert_int_equal(ext3_inode_trywrlock(in), 0); /* under the handle: only tried (write.h) */
	in->a.links = 0;
	assert_int_equal(ext3_orphan_add(h, in), 0);
	assert_int_equal(ext3_mark_inode_dirty(h, in), 0);
	ext3_inode_unlock(in);
	assert_int_equal(ext3_journal_stop(h), 0);
}

static uint32_t file_ino(const char *img, const char *name)
{
	return (uint32_t)stat_num(img, name, "Inode: ");
}

/* Orphans: two open-unlinked files and a truncate in progress, crash; the
 * next mount frees/truncates them; a deletion from the middle of the list
 * rewrites the predecessor's next pointer. */
static void orphans(unsigned bs)
{
	char img[300], crash[400];
	mkimg(img, sizeof img, "orphan", bs, 32, 256, NULL, 4);
	uint32_t ino[4];
	for (int i = 0; i < 4; i++) {
		char name[16];
		snprintf(name, sizeof name, "f%d", i);
		ino[i] = file_ino(img, name);
	}
	/* f0 and f1 lose their names now (debugfs unlink: the entry only);
	 * the test drops their links in memory, as a last unlink does. */
	assert_int_equal(fsimg_debugfs_w(img, "unlink f0"), 0);
	assert_int_equal(fsimg_debugfs_w(img, "unlink f1"), 0);
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *f[4];
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ext3_iget(m.fs, ino[i], &f[i]), 0);
		assert_int_equal(alloc_range(f[i], 0, 40 + 10 * i, NULL), 0);
	}
	unlink_mem(f[0]);
	unlink_mem(f[1]);
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(m.fs, 16, &h), 0);
	/* f3 goes on before f2 and off again from the middle:
	 * f2 -> f3 -> f1 -> f0, then f2 -> f1 -> f0. */
	assert_int_equal(ext3_inode_trywrlock(f[3]), 0); /* under the handle: only tried (write.h) */
	assert_int_equal(ext3_orphan_add(h, f[3]), 0);
	ext3_inode_unlock(f[3]);
	/* f2: a truncate whose first step committed (3 blocks on disk, the
	 * blocks past still mapped). */
	assert_int_equal(ext3_inode_trywrlock(f[2]), 0); /* under the handle: only tried (write.h) */
	assert_int_equal(ext3_orphan_add(h, f[2]), 0);
	f[2]->i_size = f[2]->i_disksize = 3ull * bs;
	assert_int_equal(ext3_mark_inode_dirty(h, f[2]), 0);
	ext3_inode_unlock(f[2]);
	assert_int_equal(ext3_inode_trywrlock(f[1]), 0); /* under the handle: only tried (write.h) */
	assert_int_equal(ext3_orphan_add(h, f[1]), 0); /* idempotent */
	ext3_inode_unlock(f[1]);
	assert_int_equal(ext3_inode_trywrlock(f[3]), 0); /* under the handle: only tried (write.h) */
	assert_int_equal(ext3_orphan_del(h, f[3]), 0);
	ext3_inode_unlock(f[3]);
	assert_int_equal(ext3_journal_stop(h), 0);
	crash_copy(m.fs, img, crash, sizeof crash);
	/* The live mount: the last references to the unlinked files free them. */
	for (int i = 0; i < 4; i++)
		ext3_iput(f[i]);
	assert_int_equal(ext3_iget(m.fs, ino[2], &f[2]), 0);
	assert_int_equal(do_truncate(f[2], 3ull * bs), 0); /* finish it */
	ext3_iput(f[2]);
	assert_null(m.fs->orphans);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	long long live_free = free_blocks(img);

	/* The crash image: replay only, then look at the chain. */
	char spec[500];
	snprintf(spec, sizeof spec, "file:%s", crash);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	assert_int_equal(ext3_journal_recover(d, 0, NULL, NULL), 0);
	dev_close(d);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "dumpe2fs -h '%s' 2>/dev/null", crash);
	assert_int_equal(fsimg_assert_num("First orphan inode:", cmd), ino[2]);
	char name[32];
	snprintf(name, sizeof name, "<%u>", ino[2]);
	assert_int_equal(stat_num(crash, name, "dtime: "), ino[1]);
	snprintf(name, sizeof name, "<%u>", ino[1]);
	assert_int_equal(stat_num(crash, name, "dtime: "), ino[0]);
	/* Mount: cleanup frees f0 and f1, finishes f2's truncate. */
	mnt_open(&m, crash, true);
	assert_null(m.fs->orphans);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(crash);
	assert_int_equal(free_blocks(crash), live_free);
	assert_false(cmd_has(cmd, "First orphan inode:"));
	assert_int_equal(stat_num(crash, "f2", "Size:"), 3ll * bs);
}

static void test_orphans_1k(void **s) { (void)s; orphans(1024); }
static void test_orphans_4k(void **s) { (void)s; orphans(4096); }

struct committer {
	struct jbd_journal *j;
	atomic_bool stop;
};

static void *committer_main(void *arg)
{
	struct committer *c = arg;
	while (!atomic_load(&c->stop))
		(void)jbd_journal_force_commit(c->j);
	return NULL;
}

/* A truncate cut short by a crash: a big file truncated to 0 on a log:
 * device (a 1 MiB journal, so the truncate spans several commits); every
 * crash point inside the truncate, replayed onto the image as it was,
 * mounts clean: the orphan cleanup finishes the truncate. */
static void test_truncate_crash(void **s)
{
	(void)s;
	char img[300], base[400], logf[400], copy[400];
	mkimg(img, sizeof img, "tcrash", 1024, 160, 128, "-J size=1", 1);
	struct fsimg_mnt m;
	mnt_open(&m, img, true);
	struct ext3_inode *in = file_get(m.fs, "/f0");
	uint32_t ino = in->ino;
	assert_int_equal(alloc_range(in, 0, 120000, NULL), 0);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	long long full = free_blocks(img);
	snprintf(base, sizeof base, "%s.base", img);
	snprintf(logf, sizeof logf, "%s.log", img);
	snprintf(copy, sizeof copy, "%s.copy", img);
	assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", img, base), 0);

	char spec[1000];
	snprintf(spec, sizeof spec, "log:file:%s,to=%s", img, logf);
	fsimg_assert_mount_spec(spec, NULL, EXT3_MOUNT_JOURNAL, &m);
	assert_int_equal(ext3_iget(m.fs, ino, &in), 0);
	/* Restarts only ask for a commit; a second thread forcing commits
	 * makes them land between the truncate's steps. */
	struct committer c = {.j = ext3_fs_journal(m.fs)};
	pthread_t th;
	assert_int_equal(dev_mark(m.dev, "truncate"), 0);
	assert_int_equal(pthread_create(&th, NULL, committer_main, &c), 0);
	assert_int_equal(do_truncate(in, 0), 0);
	atomic_store(&c.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(dev_mark(m.dev, "truncated"), 0);
	ext3_iput(in);
	fsimg_assert_umount(&m);
	fsimg_assert_clean(img);
	long long empty = free_blocks(img);
	assert_true(empty > full + 120000);

	uint64_t *pts;
	size_t npts;
	assert_int_equal(dev_log_crash_points(logf, &pts, &npts), 0);
	/* The marks' indices: the entries carrying them. */
	struct dev_log_reader *r;
	assert_int_equal(dev_log_reader_open(logf, &r), 0);
	struct dev_log_entry e;
	uint64_t m0 = 0, m1 = 0;
	while (dev_log_reader_next(r, &e) == 1)
		if (e.flags & DEV_LOG_MARK)
			*(m0 ? &m1 : &m0) = e.index;
	dev_log_reader_close(r);
	assert_true(m0 && m1 > m0);
	unsigned tried = 0, cut = 0;
	for (size_t i = 0; i < npts; i++) {
		if (pts[i] <= m0 || pts[i] > m1)
			continue;
		assert_int_equal(fsimg_run("cp --sparse=always '%s' '%s'", base, copy), 0);
		snprintf(spec, sizeof spec, "file:%s", copy);
		struct dev *d;
		assert_int_equal(dev_open(spec, &d), 0);
		assert_int_equal(dev_log_replay(logf, pts[i], d), 0);
		assert_int_equal(ext3_journal_recover(d, 0, NULL, NULL), 0);
		dev_close(d);
		char cmd[600];
		snprintf(cmd, sizeof cmd, "dumpe2fs -h '%s' 2>/dev/null", copy);
		bool orphan = cmd_has(cmd, "First orphan inode:");
		long long f = free_blocks(copy);
		if (orphan && f > full && f < empty)
			cut++; /* a truncate committed part of the way */
		mnt_open(&m, copy, true);
		assert_null(m.fs->orphans);
		fsimg_assert_umount(&m);
		fsimg_assert_clean(copy);
		f = free_blocks(copy);
		assert_true(f == full || f == empty);
		if (orphan)
			assert_int_equal(f, empty);
		tried++;
	}
	free(pts);
	print_message("truncate crash: %u crash points, %u inside the truncate\n", tried, cut);
	assert_true(cut > 0);
}

int main(void)
{
	int orc = oracles_check("test_ext3_inode_write", "mke2fs e2fsck debugfs dumpe2fs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "inowr"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields_1k),   cmocka_unit_test(test_fields_4k),
		cmocka_unit_test(test_fields_128),  cmocka_unit_test(test_map_1k),
		cmocka_unit_test(test_map_4k),      cmocka_unit_test(test_efbig_1k),
		cmocka_unit_test(test_efbig_4k),    cmocka_unit_test(test_truncate_1k),
		cmocka_unit_test(test_truncate_4k), cmocka_unit_test(test_enospc_1k),
		cmocka_unit_test(test_enospc_4k),   cmocka_unit_test(test_orphans_1k),
		cmocka_unit_test(test_orphans_4k),  cmocka_unit_test(test_truncate_crash),
		cmocka_unit_test(test_truncate_sparse_1k), cmocka_unit_test(test_truncate_sparse_4k),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
