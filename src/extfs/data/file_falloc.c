/* fallocate(2) on a writable mount (ext3_fsops.h, ext3_fallocate;
 * docs/write-data.md, "fallocate"): the checks, the page cache and the
 * size around the extent tree's work (extfs/inode/falloc.c).
 *
 * Modes (Linux's FALLOC_FL_* values), as ext4_fallocate:
 *  - 0 / KEEP_SIZE: unwritten extents over the holes of the range (they
 *    read as zeros; data written into them converts them, get_blocks
 *    reporting the blocks as new so that every data mode zero-fills and
 *    orders them as a hole fill); 0 grows i_size to off + len.
 *  - PUNCH_HOLE | KEEP_SIZE: the partial blocks at the edges zeroed
 *    through the mode's write path, the whole blocks unmapped and freed.
 *  - ZERO_RANGE [| KEEP_SIZE]: the edges zeroed likewise, the whole blocks
 *    turned unwritten, the holes of the range (edges included) allocated
 *    unwritten; the size grows unless KEEP_SIZE.
 * COLLAPSE_RANGE, INSERT_RANGE and UNSHARE_RANGE are -EOPNOTSUPP here.
 * Indirect-mapped files: -EOPNOTSUPP for every mode, as 2.6.30's ext3
 * (no fallocate at all) and the ext4 driver for every mode but
 * PUNCH_HOLE, which it does on them (nostall's indirect map frees from a
 * block to the end only: left for later).
 *
 * Order for PUNCH / ZERO (ext4_punch_hole's): the dirty pages of the range
 * written and waited (and their I/O completions run: data=guarded's sizes
 * settle), the edges zeroed, the range's whole pages dropped, then the
 * tree changed. Nothing stale can land afterwards: the dropped pages were
 * clean and nobody can dirty them while in->lock is held as writer.
 *
 * Sizes: an allocation past EOF (KEEP_SIZE) changes no size; a growing
 * size goes through ext3_data_size_set and the mode's catch_up as a
 * growing truncate does (data=guarded: i_disksize follows unless data is
 * pending below). Blocks past i_size are freed by any later truncate (and
 * by a crash's orphan cleanup), as the kernel's ext4_truncate frees them.
 *
 * Locking: the caller holds nothing; in->lock is taken as writer for the
 * whole call (the write path's i_mutex), handles are started under it. */
#include "extfs/data/file_data.h"
#include "extfs/inode/falloc.h"

#include "blk/blk.h"
#include "page/page.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>

/* The largest extent file: 2^32 - 1 blocks, and without huge_file what
 * i_blocks' 32 bits of 512-byte units can count (ext4_max_size). */
static uint64_t falloc_max_size(const struct ext3_fs *fs)
{
	unsigned bits = 9;
	while ((1u << bits) < fs->g.block_size)
		bits++;
	uint64_t blocks = 0xffffffffull;
	if (!(le32_to_cpu(fs->sb.s_feature_ro_compat) & EXT4_FEATURE_RO_COMPAT_HUGE_FILE)) {
		uint64_t lim = 0xffffffffull >> (bits - 9);
		if (lim < blocks)
			blocks = lim;
	}
	return blocks << bits;
}

/* What vfs_fallocate and ext4_fallocate refuse, in their order. */
static int falloc_check(struct ext3_inode *in, int mode, uint64_t off, uint64_t len)
{
	const int known = EXT3_FALLOC_KEEP_SIZE | EXT3_FALLOC_PUNCH_HOLE | EXT3_FALLOC_COLLAPSE_RANGE |
			  EXT3_FALLOC_ZERO_RANGE | EXT3_FALLOC_INSERT_RANGE | EXT3_FALLOC_UNSHARE_RANGE;
	if (len == 0 || (int64_t)off < 0 || (int64_t)len < 0)
		return err_set(-EINVAL, "ext3: fallocate: offset %lld, length %lld", (long long)off,
			       (long long)len);
	if (mode & ~known)
		return err_set(-EOPNOTSUPP, "ext3: fallocate: unknown mode bits %#x", mode);
	if ((mode & EXT3_FALLOC_PUNCH_HOLE) && (mode & EXT3_FALLOC_ZERO_RANGE))
		return err_set(-EOPNOTSUPP, "ext3: fallocate: PUNCH_HOLE and ZERO_RANGE together");
	if ((mode & EXT3_FALLOC_PUNCH_HOLE) && !(mode & EXT3_FALLOC_KEEP_SIZE))
		return err_set(-EOPNOTSUPP, "ext3: fallocate: PUNCH_HOLE without KEEP_SIZE");
	if (mode & (EXT3_FALLOC_COLLAPSE_RANGE | EXT3_FALLOC_INSERT_RANGE | EXT3_FALLOC_UNSHARE_RANGE))
		return err_set(-EOPNOTSUPP, "ext3: fallocate: mode %#x is not supported", mode);
	if ((mode & ~EXT3_FALLOC_KEEP_SIZE) && (in->a.flags & EXT3_APPEND_FL))
		return err_set(-EPERM, "ext3: inode %u is append-only", in->ino);
	if (in->a.flags & EXT3_IMMUTABLE_FL)
		return err_set(-EPERM, "ext3: inode %u is immutable", in->ino);
	uint16_t type = in->a.mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFIFO)
		return err_set(-ESPIPE, "ext3: fallocate: inode %u is a fifo", in->ino);
	if (type == EXT3_S_IFDIR)
		return err_set(-EISDIR, "ext3: fallocate: inode %u is a directory", in->ino);
	if (type != EXT3_S_IFREG)
		return err_set(-ENODEV, "ext3: fallocate: inode %u is not a regular file", in->ino);
	uint64_t max = falloc_max_size(in->fs);
	if (off > max || len > max - off)
		return err_set(-EFBIG, "ext3: fallocate: inode %u: %llu + %llu past the maximum file size %llu",
			       in->ino, (unsigned long long)off, (unsigned long long)len,
			       (unsigned long long)max);
	if (!ext4_falloc_supported(in))
		return err_set(-EOPNOTSUPP, "ext3: fallocate: inode %u is not an extent file", in->ino);
	return 0;
}

/* The size (growing only, unless keep) and the times, in one handle; the
 * inode written. */
static int falloc_finish(struct ext3_inode *in, uint64_t size, bool grow)
{
	const struct ext3_data_ops *ops = ext3_dops(in);
	struct jbd_handle *h;
	int rc = ext3_journal_start(in->fs, 1 + ops->write_credits, &h);
	if (rc)
		return rc;
	if (grow && size > in->i_size) {
		ext3_data_size_set(in, size);
		/* data=guarded: the new span holds no data; not past pending
		 * data either */
		bool changed = false;
		if (ops->catch_up)
			rc = ops->catch_up(h, in, &changed);
	}
	ext3_data_touch(in, true);
	if (!rc)
		rc = ext3_data_inode_commit(h, in, true);
	int src = ext3_journal_stop(h);
	return rc ? rc : src;
}

/* The range's dirty pages written and waited, their completions run. */
static int falloc_flush(struct ext3_inode *in, uint64_t first, uint64_t last)
{
	if (!in->mapping)
		return 0;
	int rc = page_mapping_sync(in->mapping, first, last, BLK_WRITE);
	if (!rc)
		rc = page_mapping_flush_io_done(in->mapping);
	return rc ? err_wrap(rc, "ext3: inode %u: writing the range before fallocate", in->ino) : 0;
}

/* Zero [from, to) inside one block when the block is mapped and written
 * (a hole or an unwritten extent reads as zeros already), bounded by
 * i_size (past it a written block holds zeros). */
static int zero_partial(struct ext3_inode *in, uint64_t from, uint64_t to)
{
	if (to > in->i_size)
		to = in->i_size;
	if (from >= to)
		return 0;
	uint64_t phys = 0;
	int rc = ext3_inode_bmap_locked(in->fs, in, from / in->fs->g.block_size, &phys);
	if (rc || !phys)
		return rc;
	void *zeros = calloc(1, (size_t)(to - from));
	if (!zeros)
		return err_set(-ENOMEM, "out of memory");
	rc = ext3_data_overwrite_locked(in, zeros, (size_t)(to - from), from);
	free(zeros);
	return rc;
}

/* The edges of [off, end) that do not cover a whole block. */
static int zero_edges(struct ext3_inode *in, uint64_t off, uint64_t end)
{
	uint64_t bs = in->fs->g.block_size;
	uint64_t head_end = (off / bs + 1) * bs;
	if (off / bs == (end - 1) / bs) /* one block */
		return (off % bs || end % bs) ? zero_partial(in, off, end) : 0;
	int rc = 0;
	if (off % bs)
		rc = zero_partial(in, off, head_end);
	if (!rc && end % bs)
		rc = zero_partial(in, end / bs * bs, end);
	return rc;
}

static int falloc_punch(struct ext3_inode *in, uint64_t off, uint64_t end)
{
	uint64_t bs = in->fs->g.block_size;
	if (off >= in->i_size)
		return 0;
	/* ext4_punch_hole (Linux 6.x): a range past EOF ends with the block
	 * of i_size; the blocks past it (KEEP_SIZE's) stay */
	if (end > in->i_size)
		end = (in->i_size + bs - 1) / bs * bs;
	uint64_t first = (off + bs - 1) / bs, last = end / bs; /* whole blocks [first, last) */
	int rc = falloc_flush(in, off / bs, (end - 1) / bs);
	if (!rc)
		rc = zero_edges(in, off, end);
	if (!rc && first < last) {
		if (in->mapping)
			rc = page_mapping_punch(in->mapping, first, last - 1);
		if (!rc)
			rc = ext4_falloc_punch(in, (uint32_t)first, last);
	}
	if (!rc)
		rc = falloc_finish(in, 0, false);
	return rc;
}

static int falloc_alloc(struct ext3_inode *in, uint64_t off, uint64_t end, bool keep)
{
	uint64_t bs = in->fs->g.block_size;
	uint64_t reached = off / bs;
	int rc = ext4_falloc_alloc(in, (uint32_t)(off / bs), (end + bs - 1) / bs, &reached);
	/* A partial allocation keeps its blocks, and (without KEEP_SIZE) the
	 * size covers them, as ext4_alloc_file_blocks updates it per chunk. */
	uint64_t size = reached * bs < end ? reached * bs : end;
	int frc = falloc_finish(in, size, !keep && size > off);
	return rc ? rc : frc;
}

static int falloc_zero(struct ext3_inode *in, uint64_t off, uint64_t end, bool keep)
{
	uint64_t bs = in->fs->g.block_size;
	uint64_t first = (off + bs - 1) / bs, last = end / bs;
	int rc = falloc_flush(in, off / bs, (end - 1) / bs);
	if (!rc)
		rc = zero_edges(in, off, end);
	if (!rc && first < last) {
		if (in->mapping)
			rc = page_mapping_punch(in->mapping, first, last - 1);
		if (!rc)
			rc = ext4_falloc_to_unwritten(in, (uint32_t)first, last);
	}
	if (rc) {
		(void)falloc_finish(in, 0, false);
		return rc;
	}
	/* ext4_zero_range: the holes of the range, its edges included */
	return falloc_alloc(in, off, end, keep);
}

int ext3_fallocate(struct ext3_inode *in, int mode, uint64_t off, uint64_t len)
{
	if (!ext3_fs_writable(in->fs))
		return err_set(-EROFS, "ext3: read-only filesystem");
	ext3_inode_wrlock(in);
	int rc = falloc_check(in, mode, off, len);
	if (rc) {
		ext3_inode_unlock(in);
		return rc;
	}
	uint64_t end = off + len;
	bool keep = mode & EXT3_FALLOC_KEEP_SIZE;
	if (mode & (EXT3_FALLOC_PUNCH_HOLE | EXT3_FALLOC_ZERO_RANGE))
		ext3_data_mark_written(in); /* reads must not come from older copies */
	if (mode & EXT3_FALLOC_PUNCH_HOLE)
		rc = falloc_punch(in, off, end);
	else if (mode & EXT3_FALLOC_ZERO_RANGE)
		rc = falloc_zero(in, off, end, keep);
	else
		rc = falloc_alloc(in, off, end, keep);
	ext3_inode_unlock(in);
	return rc;
}
