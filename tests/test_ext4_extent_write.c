/* The ext4 extent tree's write side (src/extfs/inode/extent_write.c,
 * extent_remove.c) on a mounted 1 KiB-block extent filesystem (84 entries
 * per tree block): inserts that split leaves, then index blocks, and grow
 * the tree to depth 2; merges with the neighbours; convert splitting an
 * extent in three and merging back; a punch inside one extent; removal
 * keeping the tree's depth while an extent is left (the kernel's rule) and
 * emptying it back into the inode; the length limits (32768
 * initialized, 32767 unwritten, the 32-bit logical space); and random
 * insert / convert / remove sequences against a model array (the seed is
 * printed: NOSTALL_SEED=N reruns one).
 *
 * Data blocks: a pool allocated at the start (identity map: logical block
 * l is physical POOL + l), so any extent the test inserts owns its blocks;
 * blocks the tree frees are never mapped again; pool blocks left unmapped
 * are freed at the end. Oracles: ext4_ext_map for every block of the model,
 * the root's header, i_blocks; e2fsck -fn after the unmount (index keys,
 * node depths, bitmaps, i_blocks). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/fsop.h"
#include "lib/oracles.h"

#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "extfs/core/write.h"
#include "extfs/inode/bmap.h"
#include "extfs/inode/extent_write.h"
#include "util/crc32c.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];
static uint64_t seed;

#define BS 1024
#define NL 40000u                /* logical blocks of the model */
enum { HOLE, INIT, UNWR, DEAD }; /* DEAD: its pool block was freed */

struct fx {
	char img[300];
	struct fsimg_mnt m;
	struct ext3_fs *fs;
	struct ext3_inode *in;
	uint32_t ino;
	uint64_t pool;
	uint8_t st[NL];
};

static void fx_umount(struct fx *x)
{
	ext3_iput(x->in);
	fsimg_assert_umount(&x->m);
}

/* A 128 MiB image with flex_bg (groups 10..15 are free of metadata: the
 * pool), /f extent-mapped and NL blocks long, the pool allocated. */
static void fx_setup(struct fx *x, const char *name)
{
	memset(x, 0, sizeof *x);
	snprintf(x->img, sizeof x->img, "%s/%s.img", tmpdir, name);
	fsimg_assert_mkfs(x->img, BS, 128 * 1024, "-O extent,flex_bg -I 256");
	assert_int_equal(fsimg_debugfs_w(x->img, "write /dev/null f"), 0);
	fsimg_assert_mount(x->img, NULL, EXT3_MOUNT_JOURNAL, &x->m);
	x->fs = x->m.fs;
	assert_int_equal(ext3_path_lookup(x->fs, "/f", true, &x->ino), 0);
	assert_int_equal(ext3_iget(x->fs, x->ino, &x->in), 0);
	assert_ptr_equal(ext3_bmap_ops_of(x->in), &ext3_bmap_ext_ops);
	uint64_t want = x->fs->g.first_data_block + 10ull * x->fs->g.blocks_per_group;
	x->pool = want;
	for (uint64_t got = 0; got < NL;) {
		uint64_t first;
		uint32_t n;
		assert_int_equal(fsimg_new_blocks(x->fs, x->in, want + got, NL - (uint32_t)got, &first, &n), 0);
		if (first != want + got)
			fail_msg("pool not contiguous: %llu at %llu", (unsigned long long)first,
				 (unsigned long long)(want + got));
		got += n;
	}
	struct jbd_handle *h;
	ext3_inode_wrlock(x->in);
	assert_int_equal(ext3_journal_start(x->fs, 4, &h), 0);
	x->in->i_size = x->in->i_disksize = (uint64_t)NL * BS;
	assert_int_equal(ext3_mark_inode_dirty(h, x->in), 0);
	assert_int_equal(ext3_journal_stop(h), 0);
	ext3_inode_unlock(x->in);
}

static unsigned root_depth(const struct ext3_inode *in)
{
	return in->a.block[1] >> 16;
}

static unsigned root_entries(const struct ext3_inode *in)
{
	return in->a.block[0] >> 16;
}

/* ---- the operations, each in a handle of its own ---- */

static int op_insert(struct fx *x, uint32_t l, uint32_t len, bool unwritten)
{
	struct jbd_handle *h;
	ext3_inode_wrlock(x->in);
	int credits = ext4_ext_credits(x->fs, x->in) * (int)(len / 32767 + 1);
	int rc = ext3_journal_start(x->fs, credits, &h);
	if (!rc) {
		rc = ext4_ext_insert(h, x->in, l, x->pool + l, len, unwritten);
		if (!rc) {
			x->in->a.blocks += len * (BS / 512);
			rc = ext3_mark_inode_dirty(h, x->in);
		}
		int src = ext3_journal_stop(h);
		rc = rc ? rc : src;
	}
	ext3_inode_unlock(x->in);
	if (!rc)
		for (uint32_t i = 0; i < len; i++)
			x->st[l + i] = unwritten ? UNWR : INIT;
	return rc;
}

static int op_convert(struct fx *x, uint32_t l, uint32_t len, bool to_unwritten)
{
	struct jbd_handle *h;
	ext3_inode_wrlock(x->in);
	int rc = ext3_journal_start(x->fs, ext4_ext_credits(x->fs, x->in) * (int)(len / 32767 + 2), &h);
	if (!rc) {
		rc = ext4_ext_convert(h, x->in, l, len, to_unwritten);
		int src = ext3_journal_stop(h);
		rc = rc ? rc : src;
	}
	ext3_inode_unlock(x->in);
	if (!rc)
		for (uint32_t i = l; i < l + len && i < NL; i++)
			if (x->st[i] == INIT || x->st[i] == UNWR)
				x->st[i] = to_unwritten ? UNWR : INIT;
	return rc;
}

static int op_remove(struct fx *x, uint32_t first, uint64_t end)
{
	struct ext3_fs *fs = x->fs;
	struct ext3_bmap_trunc t = {.in = x->in, .fs = fs, .units = BS / 512};
	t.credits = ext3_credits_truncate(fs);
	ext3_inode_wrlock(x->in);
	int rc = ext3_journal_start(fs, t.credits, &t.h);
	if (!rc) {
		t.budget = t.credits - 4;
		rc = ext4_ext_remove(&t, first, end);
		if (!rc)
			rc = ext3_mark_inode_dirty(t.h, x->in);
		int src = ext3_journal_stop(t.h);
		rc = rc ? rc : src;
	}
	ext3_inode_unlock(x->in);
	if (!rc)
		for (uint64_t i = first; i < end && i < NL; i++)
			if (x->st[i] == INIT || x->st[i] == UNWR)
				x->st[i] = DEAD;
	return rc;
}

/* ext4_ext_map of block l as a reader: it succeeds with a run. */
static void map_at(struct fx *x, uint32_t l, struct ext4_ext_map *m)
{
	ext3_inode_rdlock(x->in);
	int rc = ext4_ext_map(x->in, l, m);
	ext3_inode_unlock(x->in);
	assert_int_equal(rc, 0);
	assert_true(m->len > 0);
}

/* Every block of the model against the tree; i_blocks against the data
 * mapped plus the tree blocks (counted from the difference). */
static void check_model(struct fx *x)
{
	uint32_t mapped = 0;
	for (uint32_t l = 0; l < NL;) {
		struct ext4_ext_map m;
		map_at(x, l, &m);
		for (uint32_t i = 0; i < m.len && l + i < NL; i++) {
			uint8_t s = x->st[l + i];
			if (s == INIT || s == UNWR) {
				if (m.pblk == 0 || m.pblk + i != x->pool + l + i || m.unwritten != (s == UNWR))
					fail_msg("seed %llu: block %u: tree %llu%s, model %s", (unsigned long long)seed,
						 l + i, (unsigned long long)(m.pblk ? m.pblk + i : 0),
						 m.unwritten ? " unwritten" : "", s == UNWR ? "unwritten" : "initialized");
				mapped++;
			} else if (m.pblk) {
				fail_msg("seed %llu: block %u mapped to %llu, a hole in the model",
					 (unsigned long long)seed, l + i, (unsigned long long)(m.pblk + i));
			}
		}
		l = m.len > NL - l ? NL : l + m.len;
	}
	uint64_t data = (uint64_t)mapped * (BS / 512);
	assert_true(x->in->a.blocks >= data);
	/* the rest is tree blocks: none at depth 0 */
	if (root_depth(x->in) == 0)
		assert_int_equal(x->in->a.blocks, data);
}

/* One block against the model (ext4_ext_map: the run cache of a tree with
 * a level below the root answers when it holds the block). */
static void check_block(struct fx *x, uint32_t l)
{
	struct ext4_ext_map m;
	map_at(x, l, &m);
	uint8_t st = x->st[l];
	bool mapped = st == INIT || st == UNWR;
	if (mapped ? (m.pblk != x->pool + l || m.unwritten != (st == UNWR)) : m.pblk != 0)
		fail_msg("seed %llu: block %u: tree %llu%s, model %s", (unsigned long long)seed, l,
			 (unsigned long long)m.pblk, m.unwritten ? " unwritten" : "",
			 st == UNWR ? "unwritten" : st == INIT ? "initialized" : "a hole");
	/* the run it reports: as far as the model agrees */
	uint32_t last = l + (m.len < NL - l ? m.len : NL - l) - 1;
	uint8_t lst = x->st[last];
	bool lmapped = lst == INIT || lst == UNWR;
	if (lmapped != mapped || (mapped && lst != st))
		fail_msg("seed %llu: block %u: run of %u reaches block %u of another kind", (unsigned long long)seed,
			 l, m.len, last);
}

/* Free the pool blocks the tree does not map, unmount, e2fsck. */
static void fx_finish(struct fx *x)
{
	check_model(x);
	for (uint32_t l = 0; l < NL;) {
		if (x->st[l] != HOLE) {
			l++;
			continue;
		}
		uint32_t e = l;
		while (e < NL && x->st[e] == HOLE)
			e++;
		assert_int_equal(fsimg_free_blocks(x->fs, x->in, x->pool + l, e - l), 0);
		l = e;
	}
	fx_umount(x);
	fsimg_assert_clean(x->img);
}

/* ---- the cases ---- */

/* Appends of separate one-block extents: leaf splits (84 per leaf), the
 * root's four entries full -> depth 1, then depth 2, then a level-1 index
 * block full -> an index split (the root holds two index entries). */
static void test_split_grow(void **s)
{
	(void)s;
	static struct fx x;
	fx_setup(&x, "split");
	/* The tree blocks' metadata_csum tails: the feature turned on in
	 * memory only (the image has none; nothing else here reads a
	 * checksummed structure), every tree block checked by the lookups of
	 * check_model (the read side answers -EBADMSG on a bad tail). */
	x.fs->ro_compat |= EXT4_FEATURE_RO_COMPAT_METADATA_CSUM;
	x.fs->csum_seed = crc32c(~0u, x.fs->sb.s_uuid, sizeof x.fs->sb.s_uuid);
	uint32_t i = 0;
	unsigned seen_depth1_at = 0;
	while (!(root_depth(x.in) == 2 && root_entries(x.in) >= 2)) {
		assert_true(2 * i < NL);
		assert_int_equal(op_insert(&x, 2 * i, 1, false), 0);
		if (root_depth(x.in) == 1 && !seen_depth1_at)
			seen_depth1_at = i;
		i++;
	}
	assert_int_equal(seen_depth1_at, 4); /* the fifth extent leaves the inode */
	print_message("%u extents: depth 2 with an index split\n", i);
	check_model(&x);
	x.fs->ro_compat &= ~(uint32_t)EXT4_FEATURE_RO_COMPAT_METADATA_CSUM;
	x.fs->csum_seed = 0;
	/* Merges: the gaps filled, extents join their neighbours on both
	 * sides, inside leaves. */
	assert_int_equal(op_insert(&x, 1, 1, false), 0);
	struct ext4_ext_map m;
	assert_int_equal(ext4_ext_map(x.in, 0, &m), 0);
	assert_int_equal(m.len, 3);
	assert_int_equal(op_insert(&x, 3, 1, false), 0);
	assert_int_equal(ext4_ext_map(x.in, 0, &m), 0);
	assert_int_equal(m.len, 5);
	/* An overlapping insert is refused and changes nothing. */
	assert_int_equal(op_insert(&x, 4, 1, false), -EEXIST);
	/* The kinds do not merge. */
	assert_int_equal(op_insert(&x, 5, 1, true), 0);
	assert_int_equal(ext4_ext_map(x.in, 0, &m), 0);
	assert_int_equal(m.len, 5);
	check_model(&x);
	/* Remove all: the tree goes back into the inode, empty. */
	assert_int_equal(op_remove(&x, 0, (uint64_t)1 << 32), 0);
	assert_int_equal(root_depth(x.in), 0);
	assert_int_equal(root_entries(x.in), 0);
	assert_int_equal(x.in->a.blocks, 0);
	fx_finish(&x);
}

/* Random-position inserts split leaves in the middle; removal down to
 * three extents keeps the tree's depth (the kernel's ext4_ext_remove_space
 * and e2fsprogs' punch reduce a tree only when it is empty: an orphan
 * truncate finished by e2fsck frees the same blocks); removing the rest
 * empties it back to a root leaf of depth 0. */
static void test_random_splits_shrink(void **s)
{
	(void)s;
	static struct fx x;
	fx_setup(&x, "shrink");
	uint64_t st = seed ^ 0x5eed;
	/* 1500 separate extents at random even positions (no merges) */
	for (int n = 0; n < 1500;) {
		uint32_t l = (uint32_t)(fsop_rand(&st) % (NL / 2)) * 2;
		if (x.st[l] != HOLE)
			continue;
		assert_int_equal(op_insert(&x, l, 1, false), 0);
		n++;
	}
	assert_true(root_depth(x.in) >= 1);
	check_model(&x);
	/* A range with 3 extents left: the depth stays, one leaf is left
	 * under the root's single index entry. */
	unsigned depth = root_depth(x.in);
	uint32_t keep = 0, cut = 0;
	for (uint32_t l = 0; l < NL && keep < 3; l++)
		if (x.st[l] == INIT && ++keep == 3)
			cut = l + 1;
	assert_int_equal(op_remove(&x, cut, (uint64_t)1 << 32), 0);
	assert_int_equal(root_depth(x.in), depth);
	assert_int_equal(root_entries(x.in), 1);
	check_model(&x);
	/* All of it: an empty root leaf, no tree blocks. */
	assert_int_equal(op_remove(&x, 0, (uint64_t)1 << 32), 0);
	assert_int_equal(root_depth(x.in), 0);
	assert_int_equal(root_entries(x.in), 0);
	check_model(&x);
	fx_finish(&x);
}

/* Convert in the middle of an unwritten extent: three extents; the head
 * converted too merges with the middle; all of it: one extent. A punch
 * inside one extent leaves two, the blocks freed. */
static void test_convert_punch(void **s)
{
	(void)s;
	static struct fx x;
	fx_setup(&x, "convert");
	assert_int_equal(op_insert(&x, 100, 100, true), 0);
	assert_int_equal(op_convert(&x, 110, 10, false), 0);
	struct ext4_ext_map m;
	assert_int_equal(ext4_ext_map(x.in, 100, &m), 0);
	assert_true(m.unwritten);
	assert_int_equal(m.len, 10);
	assert_int_equal(ext4_ext_map(x.in, 110, &m), 0);
	assert_false(m.unwritten);
	assert_int_equal(m.len, 10);
	assert_int_equal(ext4_ext_map(x.in, 120, &m), 0);
	assert_true(m.unwritten);
	assert_int_equal(m.len, 80);
	assert_int_equal(root_entries(x.in), 3);
	assert_int_equal(op_convert(&x, 100, 10, false), 0);
	assert_int_equal(root_entries(x.in), 2);
	assert_int_equal(ext4_ext_map(x.in, 100, &m), 0);
	assert_int_equal(m.len, 20);
	/* over a hole and both kinds: everything initialized, one extent */
	assert_int_equal(op_convert(&x, 50, 200, false), 0);
	assert_int_equal(root_entries(x.in), 1);
	assert_int_equal(ext4_ext_map(x.in, 100, &m), 0);
	assert_int_equal(m.len, 100);
	assert_false(m.unwritten);
	/* back to unwritten in the middle (ZERO_RANGE's way) */
	assert_int_equal(op_convert(&x, 150, 5, true), 0);
	assert_int_equal(root_entries(x.in), 3);
	check_model(&x);
	/* a punch inside: [100,130) [140,200), ten blocks fewer */
	assert_int_equal(op_convert(&x, 150, 5, false), 0);
	uint32_t b0 = x.in->a.blocks;
	assert_int_equal(op_remove(&x, 130, 140), 0);
	assert_int_equal(x.in->a.blocks, b0 - 10 * (BS / 512));
	assert_int_equal(root_entries(x.in), 2);
	assert_int_equal(ext4_ext_map(x.in, 130, &m), 0);
	assert_int_equal(m.pblk, 0);
	assert_int_equal(m.len, 10);
	check_model(&x);
	/* get_blocks with create over an unwritten extent: those blocks
	 * become initialized in the caller's handle and come back new (the
	 * data path then treats them as a hole fill); without create they map
	 * as a hole. */
	assert_int_equal(op_insert(&x, 1000, 50, true), 0);
	struct jbd_handle *h;
	uint64_t p;
	uint32_t c;
	bool nw = false;
	ext3_inode_wrlock(x.in);
	assert_int_equal(ext3_get_blocks(NULL, x.in, 1010, 5, false, &p, &c, &nw), 0);
	assert_int_equal(p, 0);
	assert_int_equal(ext3_journal_start(x.fs, ext3_credits_data(x.fs, 5), &h), 0);
	assert_int_equal(ext3_get_blocks(h, x.in, 1010, 5, true, &p, &c, &nw), 0);
	assert_int_equal(ext3_journal_stop(h), 0);
	ext3_inode_unlock(x.in);
	assert_true(nw);
	assert_int_equal(p, x.pool + 1010);
	assert_int_equal(c, 5);
	for (uint32_t i = 1010; i < 1015; i++)
		x.st[i] = INIT;
	assert_int_equal(ext4_ext_map(x.in, 1010, &m), 0);
	assert_false(m.unwritten);
	assert_int_equal(m.len, 5);
	check_model(&x);
	fx_finish(&x);
}

/* A punch inside an extent of a full leaf on a full filesystem: the split
 * needs a new leaf, none is free: -ENOSPC and the tree as it was (the
 * extent cut for the split gets its tail back); a convert splitting an
 * extent there too. Then, with room, the punch goes. */
static void test_punch_enospc(void **s)
{
	(void)s;
	static struct fx x;
	fx_setup(&x, "enospc");
	for (uint32_t i = 0; i < 85; i++)
		assert_int_equal(op_insert(&x, 4 * i, 3, false), 0);
	assert_int_equal(root_depth(x.in), 1);
	uint64_t first[256];
	uint32_t count[256];
	int nruns = 0, rc = 0;
	while (nruns < 256) {
		rc = fsimg_new_blocks(x.fs, x.in, 0, 1u << 16, &first[nruns], &count[nruns]);
		if (rc)
			break;
		nruns++;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(op_remove(&x, 41, 42), -ENOSPC);
	check_model(&x);
	/* convert's pieces likewise: the middle, the head, the tail of an
	 * extent; each leaves the blocks mapped as they were */
	assert_int_equal(op_convert(&x, 45, 1, true), -ENOSPC);
	check_model(&x);
	assert_int_equal(op_convert(&x, 48, 1, true), -ENOSPC);
	check_model(&x);
	assert_int_equal(op_convert(&x, 54, 1, true), -ENOSPC);
	check_model(&x);
	for (int i = 0; i < nruns; i++)
		assert_int_equal(fsimg_free_blocks(x.fs, x.in, first[i], count[i]), 0);
	assert_int_equal(ext3_fs_sync(x.fs), 0); /* freed blocks are allocatable once committed */
	assert_int_equal(op_remove(&x, 41, 42), 0);
	struct ext4_ext_map m;
	assert_int_equal(ext4_ext_map(x.in, 40, &m), 0);
	assert_int_equal(m.len, 1);
	assert_int_equal(ext4_ext_map(x.in, 42, &m), 0);
	assert_int_equal(m.len, 1);
	check_model(&x);
	fx_finish(&x);
}

/* 32768 blocks per initialized extent, 32767 unwritten; the 32-bit
 * logical space. */
static void test_limits(void **s)
{
	(void)s;
	static struct fx x;
	fx_setup(&x, "limits");
	struct ext4_ext_map m;
	assert_int_equal(op_insert(&x, 0, 35000, false), 0);
	assert_int_equal(ext4_ext_map(x.in, 0, &m), 0);
	assert_int_equal(m.len, 32768);
	assert_int_equal(ext4_ext_map(x.in, 32768, &m), 0);
	assert_int_equal(m.len, 35000 - 32768);
	assert_int_equal(root_entries(x.in), 2);
	/* the whole initialized extent to unwritten: 32767 + 1 */
	assert_int_equal(op_convert(&x, 0, 32768, true), 0);
	assert_int_equal(ext4_ext_map(x.in, 0, &m), 0);
	assert_true(m.unwritten);
	assert_int_equal(m.len, 32767);
	assert_int_equal(ext4_ext_map(x.in, 32767, &m), 0);
	assert_true(m.unwritten);
	assert_int_equal(m.len, 1);
	/* and back: the single block joins one neighbour or the other, never
	 * past 32768 (two extents either way) */
	assert_int_equal(op_convert(&x, 0, 35000, false), 0);
	assert_int_equal(ext4_ext_map(x.in, 0, &m), 0);
	assert_true(m.len == 32767 || m.len == 32768);
	assert_false(m.unwritten);
	assert_int_equal(root_entries(x.in), 2);
	check_model(&x);
	assert_int_equal(op_remove(&x, 0, 35000), 0);
	struct jbd_handle *h;
	ext3_inode_wrlock(x.in);
	assert_int_equal(ext3_journal_start(x.fs, 64, &h), 0);
	assert_int_equal(ext4_ext_insert(h, x.in, UINT32_MAX, x.pool, 2, false), -EFBIG);
	uint64_t p;
	uint32_t c;
	bool nw;
	assert_int_equal(ext3_get_blocks(h, x.in, (uint64_t)1 << 32, 1, true, &p, &c, &nw), -EFBIG);
	assert_int_equal(ext3_journal_stop(h), 0);
	ext3_inode_unlock(x.in);
	fx_finish(&x);
	/* unwritten limit on a fresh image */
	fx_setup(&x, "limits2");
	assert_int_equal(op_insert(&x, 0, 35000, true), 0);
	assert_int_equal(ext4_ext_map(x.in, 0, &m), 0);
	assert_true(m.unwritten);
	assert_int_equal(m.len, 32767);
	check_model(&x);
	fx_finish(&x);
}

/* Random insert / convert / remove against the model. */
static void test_random_model(void **s)
{
	(void)s;
	static struct fx x;
	fx_setup(&x, "random");
	uint64_t st = seed;
	print_message("seed %llu\n", (unsigned long long)seed);
	for (int op = 0; op < 3000; op++) {
		uint32_t l = (uint32_t)(fsop_rand(&st) % NL);
		uint32_t len = 1 + (uint32_t)(fsop_rand(&st) % 48);
		if (l + len > NL)
			len = NL - l;
		unsigned kind = (unsigned)(fsop_rand(&st) % 10);
		if (kind < 6) {
			/* insert over the hole run from l (owned pool blocks only) */
			uint32_t n = 0;
			while (n < len && x.st[l + n] == HOLE)
				n++;
			if (n == 0)
				continue;
			assert_int_equal(op_insert(&x, l, n, fsop_rand(&st) & 1), 0);
		} else if (kind < 9) {
			assert_int_equal(op_convert(&x, l, len, fsop_rand(&st) & 1), 0);
		} else {
			assert_int_equal(op_remove(&x, l, (uint64_t)l + (fsop_rand(&st) % 4 ? len : 3 * len)), 0);
		}
		/* Around the change and elsewhere, twice (the second from the
		 * run cache, which every change of the tree must empty). */
		for (int k = 0; k < 2; k++) {
			check_block(&x, l);
			check_block(&x, l + len - 1);
			if (l + len < NL)
				check_block(&x, l + len);
			check_block(&x, (uint32_t)(fsop_rand(&st) % NL));
		}
		if (op % 500 == 499)
			check_model(&x);
	}
	print_message("depth %u after 3000 operations\n", root_depth(x.in));
	fx_finish(&x);
}

int main(void)
{
	int rc = fsimg_main_begin("test_ext4_extent_write", "extw", "mke2fs e2fsck debugfs", &seed, tmpdir,
				  sizeof tmpdir);
	if (rc >= 0)
		return rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_grow),
		cmocka_unit_test(test_random_splits_shrink),
		cmocka_unit_test(test_convert_punch),
		cmocka_unit_test(test_punch_enospc),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_random_model),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
