/* fallocate's block work on extent files (falloc.h; docs/write-inode.md,
 * "fallocate"), through the extent map's write side (extent_write.h).
 *
 * Each step (one allocation + insert, one conversion) is complete in the
 * transaction that holds it: the tree, the bitmaps and i_blocks move
 * together, so a crash between steps leaves a consistent file with part of
 * the range done, as the kernel's ext4_alloc_file_blocks does. Handles are
 * extended, else restarted (the inode written first), between steps; an
 * -ENOSPC stops the handle before ext3_should_retry_alloc (which may wait
 * for a commit) and starts a new one.
 *
 * Locking: the caller holds in->lock as writer and no handle (the seek
 * helper: nothing; it takes the lock as reader). */
#include "extfs/inode/falloc.h"
#include "extfs/format/ext4_extent.h"
#include "extfs/inode/extent_write.h"

#include "jbd/jbd.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>

/* Steps one handle is started for (each extends it on demand after). */
#define FALLOC_STEPS 8

bool ext4_falloc_supported(const struct ext3_inode *in)
{
	return ext3_bmap_ops_of(in) == &ext3_bmap_ext_ops;
}

/* A run of steps under restartable handles. */
struct falloc_tx {
	struct ext3_inode *in;
	struct jbd_handle *h;
	int budget; /* credits left by our own count */
};

/* Credits of one step: the tree change (its depth may have grown since the
 * last step), the data blocks' bitmap, descriptor and superblock, the
 * inode. */
static int step_credits(const struct ext3_inode *in)
{
	return ext4_ext_credits(in->fs, in) + 4;
}

static int tx_start(struct falloc_tx *t)
{
	int c = step_credits(t->in) * FALLOC_STEPS;
	int rc = ext3_journal_start(t->in->fs, c, &t->h);
	if (rc) {
		t->h = NULL;
		return rc;
	}
	t->budget = c;
	return 0;
}

static int tx_stop(struct falloc_tx *t)
{
	if (!t->h)
		return 0;
	int rc = ext3_mark_inode_dirty(t->h, t->in);
	if (!rc)
		ext3_inode_note_tid(t->h, t->in, true);
	int src = ext3_journal_stop(t->h);
	t->h = NULL;
	return rc ? rc : src;
}

/* Room for one more step: extend the handle, else end its transaction here
 * (the inode written) and restart it. */
static int tx_room(struct falloc_tx *t)
{
	if (!t->h)
		return tx_start(t);
	int need = step_credits(t->in);
	if (t->budget >= need)
		return 0;
	int c = need * FALLOC_STEPS;
	if (ext3_handle_extend(t->h, c) == 0) {
		t->budget += c;
		return 0;
	}
	int rc = ext3_mark_inode_dirty(t->h, t->in);
	if (rc)
		return rc;
	rc = ext3_handle_restart(t->h, c);
	if (rc)
		return err_wrap(rc, "ext4: inode %u: restarting the fallocate handle", t->in->ino);
	t->budget = c;
	return 0;
}

/* One allocation step at the hole starting at b (n blocks wanted, at most
 * an unwritten extent's length): *got blocks mapped, near goal (0: near
 * the inode). */
static int alloc_step(struct falloc_tx *t, uint32_t b, uint32_t n, uint64_t goal, uint32_t *got)
{
	struct ext3_inode *in = t->in;
	struct ext3_fs *fs = in->fs;
	uint64_t units = fs->g.block_size / 512;
	if (ext3_inode_blocks_now(in) + (uint64_t)n * units > ext3_inode_blocks_max(fs))
		return err_set(-EFBIG, "ext4: inode %u: i_blocks would overflow", in->ino);
	uint32_t count = n;
	uint64_t first;
	int rc = ext3_new_blocks(t->h, in, goal, &count, &first);
	if (rc)
		return rc;
	rc = ext4_ext_insert(t->h, in, b, first, count, true);
	if (rc) {
		/* Nothing maps them: give them back in the same handle. */
		(void)ext3_free_blocks(t->h, in, first, count, false);
		return rc;
	}
	ext3_inode_blocks_add(in, (int64_t)count * (int64_t)units);
	in->rsv.last_lblk = (uint64_t)b + count - 1;
	in->rsv.last_phys = first + count - 1;
	t->budget -= step_credits(in);
	*got = count;
	return 0;
}

int ext4_falloc_alloc(struct ext3_inode *in, uint32_t first, uint64_t end, uint64_t *reached)
{
	struct ext3_fs *fs = in->fs;
	struct falloc_tx t = { .in = in };
	uint64_t b = first;
	int rc = 0, retries = 0;
	while (b < end) {
		struct ext4_ext_map m;
		rc = ext4_ext_map(in, (uint32_t)b, &m);
		if (rc)
			break;
		uint64_t len = m.len ? m.len : 1;
		if (len > end - b)
			len = end - b;
		if (m.pblk) { /* mapped already, written or not */
			b += len;
			continue;
		}
		uint32_t want = len > EXT4_EXT_UNWRITTEN_MAX_LEN ? EXT4_EXT_UNWRITTEN_MAX_LEN : (uint32_t)len;
		/* the data path's goal: after the last allocation, else the
		 * nearest extent's run continued (ext4_ext_find_goal) */
		uint64_t goal = ext4_ext_find_goal(in, (uint32_t)b);
		if (goal >= ext3_fs_blocks_count(fs))
			goal = 0;
		rc = tx_room(&t);
		if (rc)
			break;
		uint32_t got = 0;
		rc = alloc_step(&t, (uint32_t)b, want, goal, &got);
		if (rc == -ENOSPC) {
			/* Blocks freed by an uncommitted transaction come back
			 * after a commit: without a handle. */
			int src = tx_stop(&t);
			if (src) {
				rc = src;
				break;
			}
			if (ext3_should_retry_alloc(fs, &retries))
				continue;
			break;
		}
		if (rc)
			break;
		b += got;
	}
	ext3_inode_map_invalidate(in);
	int src = tx_stop(&t);
	if (!rc)
		rc = src;
	*reached = b;
	return rc;
}

int ext4_falloc_to_unwritten(struct ext3_inode *in, uint32_t first, uint64_t end)
{
	struct falloc_tx t = { .in = in };
	uint64_t b = first;
	int rc = 0;
	while (b < end) {
		struct ext4_ext_map m;
		rc = ext4_ext_map(in, (uint32_t)b, &m);
		if (rc)
			break;
		uint64_t len = m.len ? m.len : 1;
		if (len > end - b)
			len = end - b;
		if (m.pblk && !m.unwritten) {
			rc = tx_room(&t);
			if (!rc)
				rc = ext4_ext_convert(t.h, in, (uint32_t)b, (uint32_t)len, true);
			if (rc)
				break;
			t.budget -= step_credits(in);
		}
		b += len;
	}
	ext3_inode_map_invalidate(in);
	int src = tx_stop(&t);
	return rc ? rc : src;
}

int ext4_falloc_punch(struct ext3_inode *in, uint32_t first, uint64_t end)
{
	struct ext3_fs *fs = in->fs;
	struct ext3_bmap_trunc t = { .in = in, .fs = fs, .units = fs->g.block_size / 512,
				     .meta = ext3_inode_data_is_meta(in) };
	/* As truncate.c: room for two freeing steps, the inode and the tree. */
	t.credits = ext3_credits_truncate(fs);
	int min = 2 * EXT3_BMAP_TRUNC_STEP_CREDITS + ext4_ext_credits(fs, in) + 2;
	if (t.credits < min)
		t.credits = min;
	int rc = ext3_journal_start(fs, t.credits, &t.h);
	if (rc)
		return rc;
	t.budget = t.credits - 2; /* the inode */
	rc = ext4_ext_remove(&t, first, end);
	ext3_inode_map_invalidate(in);
	if (!rc)
		rc = ext3_mark_inode_dirty(t.h, in);
	if (!rc)
		ext3_inode_note_tid(t.h, in, true);
	int src = ext3_journal_stop(t.h);
	return rc ? rc : src;
}

/* Does the page cache hold data of block index (an uptodate or dirty
 * page)? */
static bool page_has_data(struct page_mapping *pm, uint64_t index)
{
	struct page *pg = page_lookup(pm, index);
	if (!pg)
		return false;
	bool data = page_uptodate(pg) || page_dirty(pg);
	page_put(pg);
	return data;
}

int ext4_falloc_seek_run(struct ext3_inode *in, uint64_t b, uint64_t count, bool *data, uint64_t *n)
{
	*data = false;
	*n = count ? count : 1;
	if (b > UINT32_MAX)
		return 0;
	ext3_inode_rdlock(in);
	if (!ext4_falloc_supported(in)) { /* the indirect map has no unwritten blocks */
		ext3_inode_unlock(in);
		return 0;
	}
	struct ext4_ext_map m;
	int rc = ext4_ext_map(in, (uint32_t)b, &m);
	struct page_mapping *pm = in->mapping;
	if (rc || !m.pblk || !m.unwritten || !pm || page_mapping_nr_pages(pm) == 0) {
		ext3_inode_unlock(in);
		return rc;
	}
	uint64_t run = m.len < *n ? m.len : *n;
	if (run == 0)
		run = 1;
	bool first = page_has_data(pm, b);
	uint64_t k = 1;
	while (k < run && page_has_data(pm, b + k) == first)
		k++;
	ext3_inode_unlock(in);
	*data = first;
	*n = k;
	return 0;
}
