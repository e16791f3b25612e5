/* ext3 truncate: free every block past a new size, in restartable steps
 * (write.h, "inodes"; docs/write-inode.md, "Truncate"). The freeing itself
 * belongs to the inode's block map (bmap.h, ext3_bmap_truncate: for the
 * indirect map bmap_ind_trunc.c), which writes the inode before each
 * restart of the handle so that every committed transaction leaves a
 * consistent map. The inode sits on the orphan list from the first
 * transaction (with i_disksize already the new size) to the last, so a
 * crash in between is finished by the next mount's orphan cleanup.
 *
 * data=guarded (guarded.c, through the data-mode table's truncate_begin
 * and _end: core/data_ops.h): i_disksize may lag i_size over pending
 * extents. Before the page cache drops pages, the data between i_disksize
 * and the new size is written and waited (the new size goes to disk with
 * the first transaction); after it, the extents past the new size are
 * dropped once the completions of the runs just waited for have run.
 *
 * Order: the guarded data below the new size first (no handle), then the
 * handle with the orphan entry and the new size, then the page cache
 * (the committing transaction's data past the new size written first),
 * then the blocks.
 *
 * Locking: the caller holds in->lock as writer and no handle.
 */
#include "extfs/inode/inode_write.h"
#include "extfs/core/data_ops.h"
#include "extfs/inode/bmap.h"

#include "blk/blk.h"
#include "jbd/jbd.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>

/* Does the inode own blocks through its block map (not a device, a fast symlink,
 * a fifo or a socket)? */
static bool has_block_map(const struct ext3_inode *in)
{
	uint16_t type = in->a.mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFREG || type == EXT3_S_IFDIR)
		return true;
	return type == EXT3_S_IFLNK && !ext3_inode_fast_symlink_locked(in->fs, in);
}

int ext3_truncate(struct ext3_inode *in, uint64_t new_size)
{
	struct ext3_fs *fs = in->fs;
	if (!ext3_fs_writable(fs))
		return err_set(-EROFS, "ext3: inode %u: truncate on a read-only mount", in->ino);
	bool map = has_block_map(in);
	if (map && new_size > ext3_bmap_ops_of(in)->max_blocks(fs) * fs->g.block_size)
		return err_set(-EFBIG, "ext3: inode %u: size %llu past the largest file", in->ino,
			       (unsigned long long)new_size);
	if (in->mapping) {
		int prc = ext3_dops_truncate_begin(in, new_size);
		if (prc)
			return prc;
	}
	struct ext3_bmap_trunc t = {.in = in, .fs = fs, .units = fs->g.block_size / 512,
			  .meta = ext3_inode_data_is_meta(in)};
	t.credits = ext3_credits_truncate(fs);
	if (t.credits < 2 * EXT3_BMAP_TRUNC_STEP_CREDITS + 4)
		t.credits = 2 * EXT3_BMAP_TRUNC_STEP_CREDITS + 4;
	int rc = ext3_journal_start(fs, t.credits, &t.h);
	if (rc)
		return rc;
	t.budget = t.credits - 4; /* the orphan list, the inode */
	/* A shrink (or an unlinked inode) goes on the orphan list first, with
	 * the new size on disk: a crash from here on is finished at mount.
	 * (i_size: data=guarded's blocks past i_disksize are freed too.) */
	if (map && (new_size < in->i_disksize || new_size < in->i_size || in->a.links == 0))
		rc = ext3_orphan_add(t.h, in);
	in->i_size = in->i_disksize = new_size;
	if (!rc)
		rc = ext3_mark_inode_dirty(t.h, in);
	/* The page cache goes only now, under the handle that put the orphan
	 * entry and the new size in the running transaction: a transaction
	 * that maps blocks past the new size is then either this one (a crash
	 * after it truncates them again at mount) or the committing one,
	 * whose commit still needs their data - written here first (jbd2's
	 * begin_ordered_truncate). Dropping the dirty pages before that, a
	 * commit mapped blocks whose data never reached them (crashtest fsx,
	 * data=ordered: a block of the base image's garbage in the file). */
	if (!rc && in->mapping) {
		unsigned ps = fs->g.block_size;
		if (in->jinode && jbd_inode_committing(in->jinode)) {
			rc = page_mapping_sync(in->mapping, new_size / ps, PAGE_INDEX_MAX, BLK_WRITE);
			if (rc)
				rc = err_wrap(rc, "ext3: inode %u: writing the committing transaction's data "
						  "before a truncate", in->ino);
		}
		if (!rc) {
			rc = page_mapping_truncate(in->mapping, new_size);
			if (rc)
				rc = err_wrap(rc, "ext3: inode %u: truncating the page cache", in->ino);
			else
				ext3_dops_truncate_end(in, new_size);
		}
	}
	if (!rc && map) {
		uint64_t first = (new_size + fs->g.block_size - 1) / fs->g.block_size;
		rc = ext3_bmap_truncate(&t, first);
		ext3_rsv_discard(in);
		in->rsv.last_lblk = in->rsv.last_phys = 0;
		ext3_inode_map_invalidate(in);
	}
	if (!rc)
		rc = ext3_mark_inode_dirty(t.h, in);
	if (!rc)
		ext3_inode_note_tid(t.h, in, true);
	/* Done: off the orphan list unless the inode is unlinked (its
	 * eviction frees it and takes it off). An error leaves it on. */
	if (!rc && in->a.links)
		rc = ext3_orphan_del(t.h, in);
	int src = ext3_journal_stop(t.h);
	return rc ? rc : src;
}
