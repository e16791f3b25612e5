/* Moving file data on a writable mount: open/release bookkeeping, write,
 * read, setsize, atime (ext3_fsops.h "file data"; docs/write-data.md).
 *
 * Writes hold in->lock as writer for the whole call (2.6.30's i_mutex) and
 * go in chunks of at most CHUNK_BLOCKS blocks, one journal handle each,
 * started BEFORE the page cache takes a page lock (page.h: a thread holding
 * a page lock must not wait for a commit, and jbd_handle_start may). In the
 * chunk's handle: the pages are written (allocating through the map op and
 * jbd_handle_current), i_size grows (size_set: the one place i_disksize
 * moves with it; data=guarded moves it in guarded.c instead), the inode is
 * written, and in data=ordered its jbd_inode is filed (data=guarded: the
 * orphan entry for new extents, ordering for hole fills only): the inode's
 * data-mode table's write_begin / write_order / write_end
 * (core/data_ops.h). data=journal instead journals each block through the
 * buffer cache: its table's write_chunk (data_journal.c).
 *
 * Reads: through the open file's ext3_fread (its readahead segments read
 * the disk directly; for a file whose data changed during this mount,
 * ext3_data_written, each segment is overlaid with the page cache's copy
 * and dropped if the cache let go of a page since it was read:
 * page_mapping_overlay); without one, a written file through its page
 * cache, others through the buffer cache. data=journal: a written file
 * always through the buffer cache, where its journalled blocks are.
 */
#include "extfs/data/file_data.h"
#include "extfs/inode/cred.h"
#include "extfs/inode/falloc.h"

#include "page/page.h"
#include "util/err.h"

#include <errno.h>
#include <limits.h>
#include <sys/uio.h>

#define CHUNK_BLOCKS 64u
#define ATIME_SLACK_S (24 * 60 * 60) /* relatime: at least daily */

static bool is_reg(const struct ext3_inode *in)
{
	return (in->a.mode & EXT3_S_IFMT) == EXT3_S_IFREG;
}

static int check_reg(struct ext3_inode *in, const char *what)
{
	if ((in->a.mode & EXT3_S_IFMT) == EXT3_S_IFDIR)
		return err_set(-EISDIR, "ext3: %s inode %u: a directory", what, in->ino);
	if (!is_reg(in))
		return err_set(-EINVAL, "ext3: %s inode %u: not a regular file", what, in->ino);
	return 0;
}

/* The only place i_size and i_disksize move together. data=guarded moves
 * i_disksize only over completed data (its table's disksize_at_io: its
 * catch_up, called by the same handle). Caller holds in->lock as writer and
 * a handle that writes the inode afterwards. */
void ext3_data_size_set(struct ext3_inode *in, uint64_t size)
{
	in->i_size = size;
	if (!ext3_dops(in)->disksize_at_io)
		in->i_disksize = size;
	in->a.size = size;
}

/* mtime/ctime now; a data change drops setuid, and setgid when group
 * execution is on, unless the writer holds CAP_FSETID (cred.h,
 * ext3_creds_kill_suid: the kernel's should_remove_suid). Caller holds
 * in->lock as writer. */
void ext3_data_touch(struct ext3_inode *in, bool data)
{
	int64_t s;
	uint32_t ns;
	ext3_now(&s, &ns);
	in->a.mtime = in->a.ctime = s;
	in->a.mtime_ns = in->a.ctime_ns = ns;
	if (data)
		in->a.mode = ext3_creds_kill_suid(ext3_cred_current(in->fs), in->a.mode, in->a.gid);
}

/* Write the inode in h and remember the transaction for fsync. */
int ext3_data_inode_commit(struct jbd_handle *h, struct ext3_inode *in, bool datasync)
{
	int rc = ext3_mark_inode_dirty(h, in);
	if (!rc)
		ext3_inode_note_tid(h, in, datasync);
	return rc;
}

/* ------------------------------------------------------------ writes */

/* One chunk through the page cache, in its own handle. Returns bytes
 * written or an errno. */
static ssize_t write_chunk_paged(struct ext3_inode *in, struct page_mapping *m, const uint8_t *buf,
				 size_t len, uint64_t off, bool first, unsigned flags)
{
	struct ext3_fs *fs = in->fs;
	uint32_t bs = fs->g.block_size;
	uint64_t nblk = (off + len - 1) / bs - off / bs + 1;
	const struct ext3_data_ops *ops = ext3_dops(in);
	struct jbd_handle *h;
	int rc = ext3_journal_start(fs, ext3_credits_data(fs, nblk) + ops->write_credits, &h);
	if (rc)
		return rc;
	uint32_t blocks0 = in->a.blocks;
	if (ops->write_begin && (rc = ops->write_begin(in, off, len)) < 0) {
		(void)ext3_journal_stop(h);
		return rc;
	}
	ssize_t n = page_mapping_write_nobalance(m, off, buf, len, in->i_size);
	if (n > 0) {
		/* The data is filed first, as 2.6.30's ext3_ordered_write_end
		 * walks the page's buffers (journal_dirty_data) before it moves
		 * i_size: a chunk whose data could not be ordered must not
		 * grow the size over it. */
		if (ops->write_order)
			rc = ops->write_order(h, in);
		bool grew = !rc && off + (uint64_t)n > in->i_size;
		uint64_t size0 = in->i_size, disksize0 = in->i_disksize;
		if (grew)
			ext3_data_size_set(in, off + (uint64_t)n);
		if (!rc && first)
			ext3_data_touch(in, !(flags & EXT3_WRITE_KEEP_SETID));
		if (!rc && ops->write_end) /* before the inode is written: it may move i_disksize */
			rc = ops->write_end(h, in);
		if (!rc)
			rc = ext3_data_inode_commit(h, in, grew || in->a.blocks != blocks0);
		if (rc && grew) {
			/* Not reported as written: the size does not cover it
			 * (the caller frees blocks past i_size). */
			in->i_size = in->a.size = size0;
			in->i_disksize = disksize0;
		}
	} else if (ops->write_end) {
		/* Nothing written, but a block may have been allocated: its
		 * extent needs the orphan entry all the same. */
		(void)ops->write_end(h, in);
	}
	int src = ext3_journal_stop(h);
	/* Throttled (dirty limit) only now, without the handle, as Linux's
	 * generic_perform_write after write_end: a throttled writer holding a
	 * handle would hold the next commit - and every fsync - in its lock
	 * phase for as long as its writeback wait lasts. Skipped with
	 * EXT3_WRITE_NOTHROTTLE (ext3_file_throttle later). */
	if (n > 0 && !(flags & EXT3_WRITE_NOTHROTTLE))
		page_cache_balance_dirty(page_mapping_cache(m));
	if (!rc)
		rc = src;
	/* The rule (2.6.30's ext3_ordered_write_end and generic_perform_write):
	 * a short count only for a short copy. An error of the chunk's
	 * bookkeeping - filing its ordered data, the guarded write-end, the
	 * inode update, the handle's stop - is this chunk's result even when
	 * bytes were copied: reporting them as written would leave data
	 * unordered (or unsized) under an allocation that commits. The
	 * caller (ext3_file_write) still returns the bytes of earlier chunks
	 * that completed, as generic_perform_write's "written ? written :
	 * status". */
	if (rc < 0)
		return rc;
	return n;
}

ssize_t ext3_file_write(struct ext3_inode *in, const void *buf, size_t len, uint64_t off,
			unsigned flags, uint64_t *off_out)
{
	struct ext3_fs *fs = in->fs;
	if (!ext3_fs_writable(fs))
		return err_set(-EROFS, "ext3: read-only filesystem");
	ext3_inode_wrlock(in);
	int rc = check_reg(in, "write to");
	if (!rc)
		rc = ext3_may_write_locked(in, flags & (EXT3_WRITE_APPEND | EXT3_WRITE_APPENDER));
	if (rc) {
		ext3_inode_unlock(in);
		return rc;
	}
	/* chattr +S: every write is O_SYNC (2.6.30's IS_SYNC) */
	if (in->a.flags & EXT3_SYNC_FL)
		flags |= EXT3_WRITE_SYNC;
	if (flags & EXT3_WRITE_APPEND)
		off = in->i_size;
	if (off_out)
		*off_out = off;
	uint64_t max = ext3_data_max_size(fs);
	if (len && off >= max) {
		ext3_inode_unlock(in);
		return err_set(-EFBIG, "ext3: inode %u: write at %llu past the maximum file size %llu",
			       in->ino, (unsigned long long)off, (unsigned long long)max);
	}
	if (len > max - off)
		len = (size_t)(max - off);
	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX & ~(size_t)(fs->g.block_size - 1);
	const struct ext3_data_ops *ops = ext3_dops(in);
	struct page_mapping *m = NULL;
	if (len && !ops->write_chunk)
		rc = ext3_data_mapping(in, &m);
	if (rc || !len) {
		ext3_inode_unlock(in);
		return rc;
	}
	ext3_data_mark_written(in);
	uint64_t size0 = in->i_size;
	uint32_t bs = fs->g.block_size;
	const uint8_t *src = buf;
	size_t done = 0;
	ssize_t n = 0;
	int retries = 0;
	while (done < len) {
		uint64_t pos = off + done;
		/* Up to CHUNK_BLOCKS blocks, ending on a block boundary. */
		uint64_t lim = (pos / bs + CHUNK_BLOCKS) * bs - pos;
		size_t chunk = len - done < lim ? len - done : (size_t)lim;
		n = m ? write_chunk_paged(in, m, src + done, chunk, pos, done == 0, flags)
		      : ops->write_chunk(in, src + done, chunk, pos, done == 0, flags);
		/* Out of space (the chunk's handle is stopped): blocks freed by
		 * an uncommitted transaction come back after a commit. */
		if (n == -ENOSPC && ext3_should_retry_alloc(fs, &retries))
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
		if ((size_t)n < chunk && !ext3_should_retry_alloc(fs, &retries)) {
			n = 0;
			break;
		}
	}
	/* A failed write past the old end may have allocated blocks (an
	 * indirect block, the page that failed) beyond i_size: free them. */
	if (done < len && off + len > size0)
		(void)ext3_truncate(in, in->i_size);
	ext3_inode_unlock(in);
	if (!done)
		return n < 0 ? n : err_set(-EIO, "ext3: inode %u: write failed", in->ino);
	if (flags & (EXT3_WRITE_SYNC | EXT3_WRITE_DSYNC)) {
		rc = ext3_file_fsync(in, !(flags & EXT3_WRITE_SYNC));
		if (rc)
			return rc;
	}
	return (ssize_t)done;
}

int ext3_data_overwrite_locked(struct ext3_inode *in, const void *buf, size_t len, uint64_t off)
{
	const struct ext3_data_ops *ops = ext3_dops(in);
	struct page_mapping *m = NULL;
	int rc = ops->write_chunk ? 0 : ext3_data_mapping(in, &m);
	if (rc)
		return rc;
	ext3_data_mark_written(in);
	size_t done = 0;
	while (done < len) {
		uint32_t bs = in->fs->g.block_size;
		uint64_t pos = off + done;
		uint64_t lim = (pos / bs + CHUNK_BLOCKS) * bs - pos;
		size_t chunk = len - done < lim ? len - done : (size_t)lim;
		ssize_t n = m ? write_chunk_paged(in, m, (const uint8_t *)buf + done, chunk, pos, done == 0,
						  EXT3_WRITE_NOTHROTTLE)
			      : ops->write_chunk(in, (const uint8_t *)buf + done, chunk, pos, done == 0,
						 EXT3_WRITE_NOTHROTTLE);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return err_set(-EIO, "ext3: inode %u: zeroing at %llu wrote nothing", in->ino,
				       (unsigned long long)pos);
		done += (size_t)n;
	}
	return 0;
}

void ext3_file_throttle(struct ext3_fs *fs)
{
	if (fs->pcache)
		page_cache_balance_dirty(fs->pcache);
}

/* ------------------------------------------------------------- setsize */

/* Caller holds in->lock as writer. */
static int setsize_locked(struct ext3_inode *in, uint64_t size)
{
	struct ext3_fs *fs = in->fs;
	uint64_t old = in->i_size;
	const struct ext3_data_ops *ops = ext3_dops(in);
	int rc = 0;
	ext3_data_mark_written(in);
	/* The same size on an extent file too: fallocate's blocks past the
	 * end go (ext4_setattr's "even if i_size didn't change"). */
	if (size < old || (size == old && ext4_falloc_supported(in))) {
		/* ext3_truncate drops the pages (and zeroes the partial page);
		 * data=journal's partial block is a journaled buffer instead. */
		if (ops->zero_tail) {
			rc = ops->zero_tail(in, size);
		} else if (size % fs->g.block_size) {
			/* the partial block's tail is zeroed through the page
			 * cache: the mapping must exist even if nothing was
			 * read or written since the mount */
			struct page_mapping *m;
			rc = ext3_data_mapping(in, &m);
		}
		if (!rc)
			rc = ext3_truncate(in, size);
		if (rc)
			return rc;
		/* 2.6.30's replace-by-truncate safeguard: flush at the writer's
		 * close (any truncate to 0, as ext3_truncate flagged it). */
		if (size == 0)
			in->trunc_flush = true;
	}
	struct jbd_handle *h;
	rc = ext3_journal_start(fs, 1 + ops->write_credits, &h);
	if (rc)
		return rc;
	if (size > old) {
		ext3_data_size_set(in, size);
		/* data=guarded: the hole is safe, but not past pending data */
		bool changed = false;
		if (ops->catch_up)
			rc = ops->catch_up(h, in, &changed);
	}
	if (size != old)
		ext3_data_touch(in, false);
	if (!rc)
		rc = ext3_data_inode_commit(h, in, true);
	int src = ext3_journal_stop(h);
	return rc ? rc : src;
}

int ext3_file_setsize(struct ext3_inode *in, uint64_t size)
{
	struct ext3_fs *fs = in->fs;
	if (!ext3_fs_writable(fs))
		return err_set(-EROFS, "ext3: read-only filesystem");
	uint64_t max = ext3_data_max_size(fs);
	if (size > max)
		return err_set(-EFBIG, "ext3: inode %u: size %llu past the maximum file size %llu",
			       in->ino, (unsigned long long)size, (unsigned long long)max);
	ext3_inode_wrlock(in);
	int rc = check_reg(in, "truncate");
	if (!rc)
		rc = ext3_may_write_locked(in, false);
	if (!rc)
		rc = setsize_locked(in, size);
	ext3_inode_unlock(in);
	return rc;
}

/* -------------------------------------------------------- open, release */

int ext3_file_open(struct ext3_inode *in, unsigned flags)
{
	if (!(flags & (EXT3_OPEN_WRITE | EXT3_OPEN_TRUNC)))
		return 0;
	struct ext3_fs *fs = in->fs;
	if (!ext3_fs_writable(fs))
		return err_set(-EROFS, "ext3: read-only filesystem");
	ext3_inode_wrlock(in);
	int rc = 0;
	if (is_reg(in)) {
		if (flags & EXT3_OPEN_TRUNC)
			rc = setsize_locked(in, 0);
		if (!rc && (flags & EXT3_OPEN_WRITE))
			in->writers++;
	}
	ext3_inode_unlock(in);
	return rc;
}

int ext3_file_release(struct ext3_inode *in, unsigned flags)
{
	if (!(flags & EXT3_OPEN_WRITE))
		return 0;
	struct ext3_fs *fs = in->fs;
	int rc = 0;
	ext3_inode_wrlock(in);
	if (is_reg(in) && in->writers) {
		if (--in->writers == 0) {
			if (fs->writable)
				ext3_rsv_discard(in);
			if (in->trunc_flush && ext3_dops_replace_flush(in))
				rc = ext3_data_flush_start(in);
			in->trunc_flush = false;
		}
		/* The pending write error, once (nothing in range to wait for). */
		if (in->mapping) {
			int e = page_mapping_wait(in->mapping, PAGE_INDEX_MAX, PAGE_INDEX_MAX);
			if (!rc)
				rc = e;
		}
		if (in->jinode) {
			int e = jbd_inode_error(in->jinode);
			if (!rc && e)
				rc = err_set(e, "ext3: inode %u: ordered data write failed", in->ino);
		}
	}
	ext3_inode_unlock(in);
	return rc;
}

/* ---------------------------------------------------------------- reads */

static bool atime_due(const struct ext3_inode *in, int rule, int64_t now)
{
	const struct ext3_inode_attr *a = &in->a;
	if (rule == EXT3_ATIME_NOATIME || (a->flags & EXT3_NOATIME_FL)) /* chattr +A */
		return false;
	if (rule == EXT3_ATIME_STRICT)
		return a->atime != now;
	/* relatime (2.6.30's relatime_need_update, with the daily update of
	 * later kernels' default). */
	if (a->mtime > a->atime || (a->mtime == a->atime && a->mtime_ns >= a->atime_ns))
		return true;
	if (a->ctime > a->atime || (a->ctime == a->atime && a->ctime_ns >= a->atime_ns))
		return true;
	return now - a->atime >= ATIME_SLACK_S;
}

/* In its own small handle; errors are not the reader's (a full or
 * read-only journal just leaves atime alone). */
static void atime_update(struct ext3_inode *in)
{
	struct ext3_fs *fs = in->fs;
	int rule = fs->opts.atime ? fs->opts.atime : EXT3_ATIME_RELATIME;
	if (rule == EXT3_ATIME_NOATIME || !ext3_fs_writable(fs))
		return;
	int64_t s;
	uint32_t ns;
	ext3_now(&s, &ns);
	ext3_inode_rdlock(in);
	bool due = atime_due(in, rule, s);
	ext3_inode_unlock(in);
	if (!due)
		return;
	ext3_inode_wrlock(in);
	struct jbd_handle *h;
	if (atime_due(in, rule, s) && ext3_journal_start(fs, 1, &h) == 0) {
		in->a.atime = s;
		in->a.atime_ns = ns;
		(void)ext3_data_inode_commit(h, in, false);
		(void)ext3_journal_stop(h);
	}
	ext3_inode_unlock(in);
}

ssize_t ext3_file_read_sink(struct ext3_inode *in, struct ext3_fread *rd, void *buf, size_t len,
			    uint64_t off, ext3_read_sink sink, void *arg)
{
	struct ext3_fs *fs = in->fs;
	ext3_inode_rdlock(in);
	ssize_t n = check_reg(in, "read from");
	if (n) {
		ext3_inode_unlock(in);
		return n;
	}
	bool written = ext3_data_written(in);
	if (written && ext3_data_paged(in) && !in->mapping) {
		/* Written earlier, evicted since: a fresh mapping (writer lock). */
		ext3_inode_unlock(in);
		ext3_inode_wrlock(in);
		struct page_mapping *m;
		n = ext3_data_mapping(in, &m);
		ext3_inode_unlock(in);
		if (n)
			return n;
		ext3_inode_rdlock(in);
	}
	if (written && in->mapping && !rd) {
		n = page_mapping_read(in->mapping, off, buf, len, in->i_size);
		ext3_inode_unlock(in);
	} else if ((written && !in->mapping) || !rd) {
		n = ext3_inode_pread_locked(fs, in, buf, len, off);
		ext3_inode_unlock(in);
	} else {
		/* The reader takes its own lock, then the inode's. */
		ext3_inode_unlock(in);
		n = sink ? ext3_fread_pread_sink(rd, buf, len, off, sink, arg)
			 : ext3_fread_pread(rd, buf, len, off);
		sink = NULL; /* delivered (or failed) */
	}
	if (n >= 0 && len)
		atime_update(in);
	if (n >= 0 && sink) {
		struct iovec one = { .iov_base = buf, .iov_len = (size_t)n };
		int rc = sink(arg, &one, 1);
		if (rc < 0)
			return rc;
	}
	return n;
}

ssize_t ext3_file_read(struct ext3_inode *in, struct ext3_fread *rd, void *buf, size_t len,
		       uint64_t off)
{
	return ext3_file_read_sink(in, rd, buf, len, off, NULL, NULL);
}
