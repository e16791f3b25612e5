/* data=journal (data_mode=journal; docs/write-data.md): file data is
 * journaled like metadata. Each block a write touches is a buffer of the
 * buffer cache, journaled in the write chunk's handle (no page cache, no
 * ordered data); a shrink zeroes the partial block's tail through the
 * journal; freed data blocks are revoked (ext3_inode_data_is_meta, through
 * the table's journal_data). Its data-mode table (core/data_ops.h) is
 * defined here; the rest of the write path (file_write.c, file_data.c)
 * reaches this file only through it.
 *
 * Locking: as file_write.c - the writer holds in->lock as writer for the
 * whole call; a chunk's handle is started before any buffer is touched.
 */
#include "extfs/data/data_modes.h"
#include "extfs/data/file_data.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* One block of data=journal: the block's buffer is journaled in h. */
static int write_block_journal(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk,
			       unsigned from, const uint8_t *src, unsigned len)
{
	struct ext3_fs *fs = in->fs;
	uint32_t bs = fs->g.block_size;
	uint64_t phys;
	uint32_t cnt = 0;
	bool is_new = false;
	int rc = ext3_get_blocks(h, in, lblk, 1, true, &phys, &cnt, &is_new);
	if (rc)
		return rc;
	struct buffer_head *bh;
	bool whole = from == 0 && len == bs;
	bool keep_old = !is_new && !whole && lblk * bs < in->i_size;
	if (is_new && whole) {
		/* A new block written whole (a streaming write): no zeroing
		 * first (issue 8: it cost as much as the copy). Access first,
		 * then the contents and uptodate under the buffer lock, so
		 * that a readahead of the block cannot land over them. */
		bh = buf_get(fs->cache, phys, &rc);
		if (!bh)
			return err_set(rc ? rc : -ENOMEM, "ext3: data block %llu", (unsigned long long)phys);
		rc = ext3_journal_get_create_access(h, bh);
		if (!rc) {
			buf_lock(bh);
			memcpy(buf_data(bh), src, bs);
			buf_set_uptodate(bh);
			buf_unlock(bh);
			rc = ext3_journal_dirty_metadata(h, bh);
		}
		buf_put(bh);
		return rc;
	}
	if (keep_old) {
		rc = ext3_bread(fs, phys, "data", &bh);
		if (rc)
			return rc;
	} else {
		bh = buf_get(fs->cache, phys, &rc);
		if (!bh)
			return err_set(rc ? rc : -ENOMEM, "ext3: data block %llu", (unsigned long long)phys);
		/* Nothing of the old contents survives: no read. The buffer is
		 * this file's block (we hold in->lock), so no reader races us. */
		buf_lock(bh);
		if (is_new || !buf_uptodate(bh)) {
			memset(buf_data(bh), 0, bs);
			buf_set_uptodate(bh);
		}
		buf_unlock(bh);
	}
	rc = is_new ? ext3_journal_get_create_access(h, bh) : ext3_journal_get_write_access(h, bh);
	if (!rc) {
		memcpy((uint8_t *)buf_data(bh) + from, src, len);
		rc = ext3_journal_dirty_metadata(h, bh);
	}
	buf_put(bh);
	return rc;
}

static ssize_t write_chunk_journal(struct ext3_inode *in, const uint8_t *buf, size_t len,
				   uint64_t off, bool first, unsigned flags)
{
	struct ext3_fs *fs = in->fs;
	uint32_t bs = fs->g.block_size;
	uint64_t nblk = (off + len - 1) / bs - off / bs + 1;
	struct jbd_handle *h;
	int rc = ext3_journal_start(fs, ext3_credits_data(fs, nblk) + (int)nblk, &h);
	if (rc)
		return rc;
	size_t done = 0;
	while (done < len) {
		uint64_t pos = off + done;
		unsigned from = (unsigned)(pos % bs);
		unsigned n = bs - from;
		if (n > len - done)
			n = (unsigned)(len - done);
		rc = write_block_journal(h, in, pos / bs, from, buf + done, n);
		if (rc)
			break;
		done += n;
	}
	int irc = 0;
	if (done) {
		bool grew = off + done > in->i_size;
		uint64_t size0 = in->i_size, disksize0 = in->i_disksize;
		if (grew)
			ext3_data_size_set(in, off + done);
		if (first)
			ext3_data_touch(in, !(flags & EXT3_WRITE_KEEP_SETID));
		/* The data itself is in this transaction: fdatasync needs it. */
		irc = ext3_data_inode_commit(h, in, true);
		if (irc && grew) { /* not reported as written (below) */
			in->i_size = in->a.size = size0;
			in->i_disksize = disksize0;
		}
	}
	int src = ext3_journal_stop(h);
	/* As write_chunk_paged: a block that failed to journal ends the chunk
	 * short (the blocks before it are in the transaction, as the pages
	 * before a failed write_begin); a failed inode update or handle stop
	 * is the chunk's error. */
	if (irc || src)
		return irc ? irc : src;
	if (rc < 0 && !done)
		return rc;
	return (ssize_t)done;
}

/* data=journal: zero the tail of the block holding the new end, through
 * the journal (the page cache does it in the other modes). */
static int journal_zero_tail(struct ext3_inode *in, uint64_t size)
{
	struct ext3_fs *fs = in->fs;
	uint32_t bs = fs->g.block_size;
	if (size % bs == 0)
		return 0;
	uint64_t phys;
	int rc = ext3_inode_bmap_locked(fs, in, size / bs, &phys);
	if (rc || !phys)
		return rc;
	struct jbd_handle *h;
	rc = ext3_journal_start(fs, 1, &h);
	if (rc)
		return rc;
	struct buffer_head *bh;
	rc = ext3_bread(fs, phys, "data", &bh);
	if (!rc) {
		rc = ext3_journal_get_write_access(h, bh);
		if (!rc) {
			memset((uint8_t *)buf_data(bh) + size % bs, 0, bs - size % bs);
			rc = ext3_journal_dirty_metadata(h, bh);
		}
		buf_put(bh);
	}
	int src = ext3_journal_stop(h);
	return rc ? rc : src;
}

const struct ext3_data_ops ext3_data_journal_ops = {
	.name = "journal",
	.journal_data = true,
	.write_chunk = write_chunk_journal,
	.zero_tail = journal_zero_tail,
};
