/* Block allocation (write.h, "block allocation"; docs/write-alloc.md).
 *
 * The 2.6.30 ext3 allocator, written from its semantics:
 * - goal-directed: the goal's group first (from the goal), then every other
 *   group in turn (from its start), the goal's group last from its start;
 * - a block is allocatable only if it is free in the bitmap AND in the
 *   bitmap's last committed copy (jbd undo access): a block freed by a
 *   transaction that has not committed may come back after a crash;
 * - reservation windows: a regular file allocates inside its own window of
 *   the group ([start, end], 8 blocks at first, doubled when more than half
 *   of the previous window was used, up to 1027); windows of different
 *   inodes never overlap (a sorted set per filesystem), so files growing at
 *   the same time each get contiguous runs. Windows are soft: allocations
 *   without one (directories, a nearly full filesystem) may take blocks in
 *   them. When no window fits anywhere, a second pass allocates without;
 * - metadata (superblock and GDT copies, reserved GDT, bitmaps, inode
 *   tables) is never handed out: a bitmap that claims such a block free is
 *   corrupt (ext3_fs_error), as is freeing a free block or metadata.
 *
 * Locking: fs->groups_lock[g] covers group g's bitmap and descriptor; the
 * bitmap's buffer lock is held while its committed copy is read (the copy is
 * only replaced under it); balloc->lock (a leaf) covers the window set and
 * every node's start/end. Order: group lock -> buffer lock -> balloc->lock.
 * The inode's rsv fields change under in->lock (writer), held by callers.
 */
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/uninit.h"
#include "extfs/core/write.h"
#include "extfs/inode/cred.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RSV_DEFAULT 8u    /* EXT3_DEFAULT_RESERVE_BLOCKS */
#define RSV_MAX 1027u     /* EXT3_MAX_RESERVE_BLOCKS */
#define NO_GOAL UINT64_MAX

/* One window in the set; in->rsv.node points here. */
struct rsv_node {
	uint64_t start, end; /* balloc->lock */
	uint64_t hit;        /* blocks allocated in this window (owner's in->lock) */
};

struct ext3_balloc {
	pthread_mutex_t lock;
	struct rsv_node **v; /* sorted by start; windows never overlap, so ends are sorted too */
	size_t n, cap;
};

int ext3_balloc_init(struct ext3_fs *fs)
{
	struct ext3_balloc *b = calloc(1, sizeof *b);
	if (!b)
		return err_set(-ENOMEM, "ext3: out of memory for the allocator");
	pthread_mutex_init(&b->lock, NULL);
	fs->balloc = b;
	return 0;
}

void ext3_balloc_destroy(struct ext3_fs *fs)
{
	struct ext3_balloc *b = fs->balloc;
	if (!b)
		return;
	/* Inodes still holding a window point into nodes freed here: they
	 * are all gone by now (unmount) or must not allocate any more. */
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i]);
	free(b->v);
	pthread_mutex_destroy(&b->lock);
	free(b);
	fs->balloc = NULL;
}

/* ---- the window set (balloc->lock held) ---- */

/* Index of the first window whose end is >= blk. */
static size_t set_first_ending_at(const struct ext3_balloc *b, uint64_t blk)
{
	size_t lo = 0, hi = b->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->v[mid]->end < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void set_remove(struct ext3_balloc *b, struct rsv_node *node)
{
	size_t i = set_first_ending_at(b, node->end);
	while (i < b->n && b->v[i] != node)
		i++;
	if (i == b->n)
		return;
	memmove(&b->v[i], &b->v[i + 1], (b->n - i - 1) * sizeof *b->v);
	b->n--;
}

static int set_insert(struct ext3_balloc *b, struct rsv_node *node)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		struct rsv_node **v = realloc(b->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	size_t i = set_first_ending_at(b, node->start);
	memmove(&b->v[i + 1], &b->v[i], (b->n - i) * sizeof *b->v);
	b->v[i] = node;
	b->n++;
	return 0;
}

void ext3_rsv_discard(struct ext3_inode *in)
{
	struct ext3_balloc *b = in->fs->balloc;
	struct rsv_node *node = in->rsv.node;
	if (!node)
		return;
	if (b) {
		pthread_mutex_lock(&b->lock);
		set_remove(b, node);
		pthread_mutex_unlock(&b->lock);
	}
	free(node);
	in->rsv.node = NULL;
	in->rsv.start = 1;
	in->rsv.end = 0;
}

/* ---- bitmaps ---- */

static bool bit_test(const uint8_t *m, uint32_t bit) { return m[bit >> 3] & (1u << (bit & 7)); }
static void bit_set(uint8_t *m, uint32_t bit) { m[bit >> 3] |= (uint8_t)(1u << (bit & 7)); }
static void bit_clear(uint8_t *m, uint32_t bit) { m[bit >> 3] &= (uint8_t)~(1u << (bit & 7)); }

/* Free in the bitmap and in the committed copy (cd, may be NULL). */
static bool allocatable(const uint8_t *bm, const uint8_t *cd, uint32_t bit)
{
	return !bit_test(bm, bit) && (!cd || !bit_test(cd, bit));
}

/* First allocatable bit in [from, to], or UINT32_MAX. Skips whole used
 * bytes. */
static uint32_t next_allocatable(const uint8_t *bm, const uint8_t *cd, uint32_t from, uint32_t to)
{
	uint32_t bit = from;
	while (bit <= to) {
		/* a full 64-bit word of the bitmap (and of the committed copy's
		 * union) is skipped at once: a nearly full group is scanned from
		 * the same goal by every new file */
		if (!(bit & 63) && bit + 63 <= to) {
			uint64_t w, c = 0;
			memcpy(&w, bm + (bit >> 3), 8);
			if (cd)
				memcpy(&c, cd + (bit >> 3), 8);
			if ((w | c) == UINT64_MAX) {
				bit += 64;
				continue;
			}
		}
		if (!(bit & 7)) {
			uint8_t used = bm[bit >> 3] | (cd ? cd[bit >> 3] : 0);
			if (used == 0xff) {
				bit += 8;
				continue;
			}
		}
		if (allocatable(bm, cd, bit))
			return bit;
		bit++;
	}
	return UINT32_MAX;
}

/* Does block blk of group g hold metadata (superblock/GDT/reserved GDT
 * copy, a bitmap, the inode table)? */
static bool group_meta_at(const struct ext3_fs *fs, uint32_t o, uint64_t blk)
{
	const struct ext3_group_desc *d = &fs->gd[o];
	if (blk == d->bg_block_bitmap || blk == d->bg_inode_bitmap)
		return true;
	return blk >= d->bg_inode_table && blk < (uint64_t)d->bg_inode_table + fs->g.itable_blocks;
}

/* With flex_bg (ext4) a group's bitmaps and inode table are packed in the
 * first group of its flex group (s_log_groups_per_flex): the groups of
 * g's own flex group and of the one before are checked too (mkfs may
 * spill a flex group's tables into the next). */
static bool block_is_meta(const struct ext3_fs *fs, uint32_t g, uint64_t blk)
{
	uint64_t first = ext3_geom_group_first(&fs->g, g);
	if (blk < first + ext3_geom_super_blocks(&fs->g, g))
		return true;
	if (group_meta_at(fs, g, blk))
		return true;
	if (!(fs->incompat & EXT4_FEATURE_INCOMPAT_FLEX_BG))
		return false;
	unsigned log = fs->sb.s_log_groups_per_flex < 31 ? fs->sb.s_log_groups_per_flex : 0;
	uint32_t size = 1u << log;
	uint32_t from = (g & ~(size - 1)) >= size ? (g & ~(size - 1)) - size : 0;
	uint64_t to = (uint64_t)(g & ~(size - 1)) + size;
	for (uint32_t o = from; o < to && o < fs->g.groups; o++)
		if (o != g && group_meta_at(fs, o, blk))
			return true;
	return false;
}

/* The group being allocated from: its lock is held, undo access taken and
 * the bitmap's buffer lock held while bm / cd are used. */
struct grp {
	struct ext3_fs *fs;
	uint32_t g;
	uint64_t first;   /* first block of the group */
	uint32_t nbits;   /* blocks in the group */
	uint8_t *bm;
	const uint8_t *cd;
	uint64_t meta_blk; /* a metadata block found free in the bitmap, else 0 */
};

/* Claim up to want allocatable blocks starting at the first allocatable bit
 * in [lo, hi] (group-relative; lo itself first). Returns the count and the
 * first bit in *start; 0 when none (or a metadata block was met: g->meta_blk). */
static uint32_t claim_run(struct grp *g, uint32_t lo, uint32_t hi, uint32_t want, uint32_t *start)
{
	if (hi >= g->nbits)
		hi = g->nbits - 1;
	if (lo > hi)
		return 0;
	uint32_t s = next_allocatable(g->bm, g->cd, lo, hi);
	if (s == UINT32_MAX)
		return 0;
	uint32_t n = 1;
	while (n < want && s + n <= hi && allocatable(g->bm, g->cd, s + n))
		n++;
	for (uint32_t i = 0; i < n; i++) {
		if (block_is_meta(g->fs, g->g, g->first + s + i)) {
			g->meta_blk = g->first + s + i;
			return 0;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		bit_set(g->bm, s + i);
	*start = s;
	return n;
}

/* ---- windows ---- */

/* Move the inode's window to the first place at or after `from` in the
 * group where `size` blocks fit between the other windows and that starts
 * at an allocatable block. false when the group has none (the inode is left
 * without a window). */
static bool window_place(struct grp *g, struct ext3_inode *in, uint64_t from, uint32_t size)
{
	struct ext3_balloc *b = g->fs->balloc;
	struct rsv_node *me = in->rsv.node;
	uint64_t last = g->first + g->nbits - 1;
	bool ok = false;
	pthread_mutex_lock(&b->lock);
	set_remove(b, me);
	uint64_t cur = from < g->first ? g->first : from;
	while (cur <= last) {
		uint32_t bit = next_allocatable(g->bm, g->cd, (uint32_t)(cur - g->first),
						(uint32_t)(last - g->first));
		if (bit == UINT32_MAX)
			break;
		cur = g->first + bit;
		uint64_t end = cur + size - 1 > last ? last : cur + size - 1;
		size_t i = set_first_ending_at(b, cur);
		if (i < b->n && b->v[i]->start <= end) {
			cur = b->v[i]->end + 1; /* overlaps (or too small a hole): after it */
			continue;
		}
		me->start = cur;
		me->end = end;
		ok = set_insert(b, me) == 0;
		break;
	}
	pthread_mutex_unlock(&b->lock);
	if (ok) {
		in->rsv.start = me->start;
		in->rsv.end = me->end;
	} else {
		in->rsv.start = 1;
		in->rsv.end = 0;
	}
	me->hit = 0;
	return ok;
}

/* Grow the window's end towards goal + want - 1, up to the next window and
 * the group's end. */
static void window_extend(struct grp *g, struct ext3_inode *in, uint64_t goal, uint32_t want)
{
	struct ext3_balloc *b = g->fs->balloc;
	struct rsv_node *me = in->rsv.node;
	uint64_t last = g->first + g->nbits - 1;
	uint64_t end = goal + want - 1;
	if (end > last)
		end = last;
	pthread_mutex_lock(&b->lock);
	size_t i = set_first_ending_at(b, me->end + 1);
	if (i < b->n && b->v[i] != me && b->v[i]->start <= end)
		end = b->v[i]->start - 1;
	if (end > me->end)
		me->end = end;
	in->rsv.end = me->end;
	pthread_mutex_unlock(&b->lock);
}

static bool in_window(const struct ext3_inode *in, uint64_t blk)
{
	return blk >= in->rsv.start && blk <= in->rsv.end;
}

/* Allocate in group g inside the inode's window (moving or growing it).
 * goal: a block of this group or NO_GOAL. */
static uint32_t alloc_with_window(struct grp *g, struct ext3_inode *in, uint64_t goal,
				  uint32_t want, uint32_t *start)
{
	uint64_t last = g->first + g->nbits - 1;
	if (!in->rsv.node) {
		in->rsv.node = calloc(1, sizeof(struct rsv_node));
		if (!in->rsv.node)
			return 0;
		in->rsv.start = 1;
		in->rsv.end = 0;
	}
	struct rsv_node *me = in->rsv.node;
	if (!in->rsv.goal_size)
		in->rsv.goal_size = RSV_DEFAULT;
	bool failed = false;
	/* At most a few rounds: a new window starts at an allocatable block. */
	for (int round = 0; round < 4; round++) {
		bool have = in->rsv.end >= in->rsv.start && in->rsv.start >= g->first &&
			    in->rsv.end <= last;
		if (!have || failed || (goal != NO_GOAL && !in_window(in, goal))) {
			uint32_t size = in->rsv.goal_size;
			if (have && me->hit > (in->rsv.end - in->rsv.start + 1) / 2)
				size = size * 2 > RSV_MAX ? RSV_MAX : size * 2;
			if (size < want)
				size = want < g->nbits ? want : g->nbits;
			in->rsv.goal_size = size;
			if (!window_place(g, in, goal == NO_GOAL ? g->first : goal, size)) {
				free(me); /* out of the set: the inode has no window */
				in->rsv.node = NULL;
				return 0;
			}
			if (goal != NO_GOAL && !in_window(in, goal))
				goal = NO_GOAL;
		} else if (goal != NO_GOAL && in->rsv.end - goal + 1 < want) {
			window_extend(g, in, goal, want);
		}
		uint64_t lo = goal == NO_GOAL ? in->rsv.start : goal;
		uint32_t n = claim_run(g, (uint32_t)(lo - g->first), (uint32_t)(in->rsv.end - g->first),
				       want, start);
		if (n) {
			me->hit += n;
			return n;
		}
		if (g->meta_blk)
			return 0;
		failed = true;
	}
	return 0;
}

/* ---- allocation ---- */

/* ---- reserved blocks and the caller's credentials ---- */

/* May the caller use the reserved blocks? 2.6.30's ext3_has_free_blocks
 * rule: CAP_SYS_RESOURCE, the uid s_def_resuid, or a member of the group
 * s_def_resgid when that is not 0. */
static bool cred_may_use_reserved(const struct ext3_fs *fs)
{
	const struct ext3_creds *c = ext3_cred_current(fs);
	uint32_t resgid = le16_to_cpu(fs->sb.s_def_resgid);
	return ext3_creds_capable(c, EXT3_CAP_SYS_RESOURCE) ||
	       c->uid == le16_to_cpu(fs->sb.s_def_resuid) ||
	       (resgid != 0 && ext3_creds_in_group(c, resgid));
}

/* Blocks the caller may still allocate, as far as a request for `want`
 * can tell: the free count, less the reserved blocks (s_r_blocks_count)
 * unless it may use them. The caller's credentials are looked at only when
 * the reserve decides (fewer than want blocks free outside it). They are
 * never a system call here (the mount's default is read at mount): one per
 * allocation was 8 % of the CPU of a data=journal stream on a VM whose
 * system calls are slow. */
static uint64_t blocks_available(struct ext3_fs *fs, uint64_t want)
{
	ext3_sb_lock(fs);
	uint64_t free = fs->free_blocks;
	ext3_sb_unlock(fs);
	uint64_t rsv = le32_to_cpu(fs->sb.s_r_blocks_count);
	if (free >= rsv && free - rsv >= want)
		return free - rsv;
	if (cred_may_use_reserved(fs))
		return free;
	return free > rsv ? free - rsv : 0;
}

bool ext3_should_retry_alloc(struct ext3_fs *fs, int *retries)
{
	if (!fs->journal || !blocks_available(fs, 1) || (*retries)++ >= 3)
		return false;
	return jbd_journal_force_commit(fs->journal) == 0;
}

/* Group g's block bitmap with undo access (group lock held). A
 * BLOCK_UNINIT group's bitmap is not on disk: it is built in the buffer
 * (uninit.h) before jbd takes its committed copy, and written with the
 * first change (ext3_group_bitmap_changed clears the flag). */
static int bitmap_get(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g,
		      struct buffer_head **bh)
{
	if (!ext4_group_bitmap_uninit(fs, g, false))
		return ext3_journal_bread(h, fs, fs->gd[g].bg_block_bitmap, "block bitmap", true, bh);
	int err = 0;
	uint64_t blk = fs->gd[g].bg_block_bitmap;
	if (blk >= fs->g.blocks_count)
		return ext3_fs_error(fs, "group %u: block bitmap %llu past the end", g,
				     (unsigned long long)blk);
	*bh = buf_get(fs->cache, blk, &err);
	if (!*bh)
		return err_set(err ? err : -ENOMEM, "ext4: group %u: block bitmap buffer", g);
	buf_lock(*bh);
	ext4_block_bitmap_init(fs, g, buf_data(*bh));
	buf_set_uptodate(*bh);
	buf_unlock(*bh);
	int rc = ext3_journal_get_undo_access(h, *bh);
	if (rc) {
		buf_put(*bh);
		*bh = NULL;
	}
	return rc;
}

int ext3_block_bitmap_init_write(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g)
{
	if (!ext4_group_bitmap_uninit(fs, g, false))
		return 0;
	struct buffer_head *bh;
	int rc = bitmap_get(h, fs, g, &bh);
	if (rc)
		return rc;
	ext3_group_bitmap_changed(fs, g, false, buf_data(bh), 0, 0);
	rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	return rc ? rc : ext3_group_adjust(h, fs, g, 0, 0, 0);
}

/* Try group g: 1 with *first and *count set, 0 when nothing was found, or an
 * error. use_rsv: allocate inside the inode's window. */
static int group_alloc(struct jbd_handle *h, struct ext3_inode *in, uint32_t g, uint64_t goal,
		       bool use_rsv, uint32_t want, uint64_t *first, uint32_t *count)
{
	struct ext3_fs *fs = in->fs;
	ext3_group_lock(fs, g);
	if (!fs->gd[g].bg_free_blocks_count) {
		ext3_group_unlock(fs, g);
		return 0;
	}
	struct buffer_head *bh;
	int rc = bitmap_get(h, fs, g, &bh);
	if (rc) {
		ext3_group_unlock(fs, g);
		return rc;
	}
	struct grp gr = {.fs = fs, .g = g, .first = ext3_geom_group_first(&fs->g, g),
			 .nbits = ext3_geom_group_blocks(&fs->g, g), .bm = buf_data(bh)};
	uint32_t start = 0, n;
	buf_lock(bh);
	gr.cd = jbd_buffer_committed_data(bh);
	if (use_rsv) {
		n = alloc_with_window(&gr, in, goal, want, &start);
	} else {
		uint32_t lo = goal == NO_GOAL ? 0 : (uint32_t)(goal - gr.first);
		n = claim_run(&gr, lo, gr.nbits - 1, want, &start);
	}
	buf_unlock(bh);
	if (gr.meta_blk) {
		rc = ext3_fs_error(fs, "group %u: block bitmap marks metadata block %llu free", g,
				   (unsigned long long)gr.meta_blk);
	} else if (n) {
		ext3_group_bitmap_changed(fs, g, false, gr.bm, start, n);
		rc = ext3_journal_dirty_metadata(h, bh);
		if (!rc)
			rc = ext3_group_adjust(h, fs, g, -(int32_t)n, 0, 0);
		if (!rc) {
			*first = gr.first + start;
			*count = n;
			rc = 1;
		}
	}
	buf_put(bh);
	ext3_group_unlock(fs, g);
	return rc;
}

uint64_t ext3_inode_goal_block(const struct ext3_inode *in)
{
	const struct ext3_fs *fs = in->fs;
	uint32_t g = ext3_geom_group_of_ino(&fs->g, in->ino);
	unsigned log = fs->sb.s_log_groups_per_flex;
	/* the kernel's EXT4_FLEX_SIZE_DIR_ALLOC_SCHEME: from 4 groups a flex */
	if ((fs->incompat & EXT4_FEATURE_INCOMPAT_FLEX_BG) && log >= 2 && log <= 16) {
		g &= ~((1u << log) - 1);
		if ((in->a.mode & EXT3_S_IFMT) == EXT3_S_IFREG && g + 1 < fs->g.groups)
			g++;
	}
	return ext3_geom_group_first(&fs->g, g);
}

int ext3_new_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t goal, uint32_t *count,
		    uint64_t *first)
{
	struct ext3_fs *fs = in->fs;
	uint32_t want = *count;
	*count = 0;
	*first = 0;
	if (!want)
		return err_set(-EINVAL, "ext3: allocating 0 blocks");
	if (!fs->group_locks || !fs->balloc)
		return err_set(-EROFS, "ext3: read-only mount");
	/* Never more than the caller may take: an unprivileged caller stops
	 * at the reserved blocks (concurrent allocators may each take the last
	 * few, as the kernel's approximate counter lets them). */
	uint64_t avail = blocks_available(fs, want);
	if (!avail)
		return err_set(-ENOSPC, "ext3: no free blocks");
	if (want > avail)
		want = (uint32_t)avail;
	if (goal < fs->g.first_data_block || goal >= fs->g.blocks_count) {
		if (in->rsv.last_phys && in->rsv.last_phys + 1 < fs->g.blocks_count)
			goal = in->rsv.last_phys + 1;
		else
			goal = ext3_inode_goal_block(in);
	}
	uint32_t goal_group = ext3_geom_group_of_block(&fs->g, goal);
	bool rsv = (in->a.mode & EXT3_S_IFMT) == EXT3_S_IFREG;
	uint32_t winsz = in->rsv.goal_size ? in->rsv.goal_size : RSV_DEFAULT;
	for (int pass = rsv ? 0 : 1; pass < 2; pass++) {
		bool use_rsv = pass == 0;
		/* The goal group from the goal, the others from their start,
		 * finally the goal group again from its start. */
		for (uint32_t i = 0; i <= fs->g.groups; i++) {
			uint32_t g = (goal_group + i) % fs->g.groups;
			uint64_t ggoal = i == 0 ? goal : NO_GOAL;
			uint16_t free = __atomic_load_n(&fs->gd[g].bg_free_blocks_count, __ATOMIC_RELAXED);
			if (!free || (i == fs->g.groups &&
				      goal == ext3_geom_group_first(&fs->g, goal_group)))
				continue; /* the first round covered it already */
			bool grp_rsv = use_rsv;
			/* Too little room for a window: the goal group without
			 * one (unless the inode has one there), the others not
			 * in this pass. */
			if (use_rsv && i == 0 && free < winsz && !in->rsv.node)
				grp_rsv = false;
			else if (use_rsv && i > 0 && free <= winsz / 2)
				continue;
			int rc = group_alloc(h, in, g, ggoal, grp_rsv, want, first, count);
			if (rc < 0)
				return rc;
			if (rc > 0) {
				in->rsv.last_phys = *first + *count - 1;
				return 0;
			}
		}
	}
	return err_set(-ENOSPC, "ext3: no free blocks");
}

/* ---- freeing ---- */

struct bit_run {
	uint32_t bit, n;
};

static void committed_mark_used(void *copy, void *arg)
{
	const struct bit_run *r = arg;
	for (uint32_t i = 0; i < r->n; i++)
		bit_set(copy, r->bit + i);
}

/* Free [first, first + n) inside group g; metadata: forget each block's
 * buffer first. The forget happens under the group lock while the bits are
 * still set, and the freed bits are set in the bitmap's committed copy: the
 * blocks come back only once this transaction has committed. Without that,
 * a block allocated by the committing transaction (free in the older
 * committed copy) and freed by the running one was handed out again at
 * once: the new owner's ordered data then reached the block while the
 * committing transaction's mapping - the old owner's - was what a crash
 * kept (crashtest fsx, data=ordered, 1 KiB blocks: another offset's data in
 * a file). */
static int group_free(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g, uint64_t first,
		      uint32_t n, bool metadata)
{
	for (uint32_t i = 0; i < n; i++)
		if (block_is_meta(fs, g, first + i))
			return ext3_fs_error(fs, "freeing metadata block %llu (group %u)",
					     (unsigned long long)(first + i), g);
	ext3_group_lock(fs, g);
	struct buffer_head *bh;
	int rc = bitmap_get(h, fs, g, &bh);
	if (rc) {
		ext3_group_unlock(fs, g);
		return rc;
	}
	uint8_t *bm = buf_data(bh);
	uint32_t bit = (uint32_t)(first - ext3_geom_group_first(&fs->g, g));
	uint64_t bad = 0;
	for (uint32_t i = 0; i < n && !bad; i++)
		if (!bit_test(bm, bit + i))
			bad = first + i;
	if (bad)
		rc = ext3_fs_error(fs, "freeing free block %llu (group %u)",
				   (unsigned long long)bad, g);
	for (uint32_t i = 0; !rc && metadata && i < n; i++)
		rc = ext3_journal_forget_block(h, first + i);
	if (!rc) {
		/* In use in the committed copy until this transaction commits
		 * (jbd_buffer_committed_update): the blocks may belong to the
		 * committing transaction's files, whose data may still be
		 * written to them. */
		struct bit_run run = {bit, n};
		buf_lock(bh);
		(void)jbd_buffer_committed_update(bh, committed_mark_used, &run);
		for (uint32_t i = 0; i < n; i++)
			bit_clear(bm, bit + i);
		ext3_group_bitmap_changed(fs, g, false, bm, bit, n);
		buf_unlock(bh);
		rc = ext3_journal_dirty_metadata(h, bh);
		if (!rc)
			rc = ext3_group_adjust(h, fs, g, (int32_t)n, 0, 0);
	}
	buf_put(bh);
	ext3_group_unlock(fs, g);
	return rc;
}

int ext3_free_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t first, uint32_t count,
		     bool metadata)
{
	struct ext3_fs *fs = in->fs;
	if (!count)
		return 0;
	if (!fs->group_locks)
		return err_set(-EROFS, "ext3: read-only mount");
	if (first < fs->g.first_data_block || first + count > fs->g.blocks_count ||
	    first + count < first)
		return ext3_fs_error(fs, "inode %u: freeing blocks %llu+%u outside the filesystem",
				     in->ino, (unsigned long long)first, count);
	while (count) {
		uint32_t g = ext3_geom_group_of_block(&fs->g, first);
		uint64_t gend = ext3_geom_group_first(&fs->g, g) + ext3_geom_group_blocks(&fs->g, g);
		uint32_t n = gend - first < count ? (uint32_t)(gend - first) : count;
		int rc = group_free(h, fs, g, first, n, metadata);
		if (rc)
			return rc;
		first += n;
		count -= n;
	}
	return 0;
}
