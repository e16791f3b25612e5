/* Transactions and errors of the ext3 write path (write.h, "transactions and
 * errors"; docs/write-alloc.md): credit formulas, the jbd wrappers that turn
 * a failed journal call into an aborted journal, the errors= policy, and the
 * set-up / tear-down of a writable mount's write side.
 *
 * A failed wrapper needs the mount to abort its journal and mark it
 * read-only, but a jbd handle does not know its filesystem: the thread that
 * starts a handle through ext3_journal_start records its mount in a
 * thread-local (handles are per thread and nest, as jbd's are).
 */
#include "extfs/core/write.h"
#include "extfs/core/csum.h"
#include "extfs/core/nojournal.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "jbd/jbd.h"
#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The mount of the calling thread's open handle (ext3_journal_start). */
static _Thread_local struct ext3_fs *tl_fs;
static _Thread_local int tl_depth;

/* ---- credits ---- */

/* EXT3_CRED_DATA: n data blocks + their map blocks (ext3_bmap_credits: the
 * indirect blocks of the indirect map) may land in as many
 * groups as there are blocks (fragmented free space), each touching its
 * bitmap and, per descriptor block, the GDT; plus the inode and the
 * superblock. The data blocks themselves (data=journal) are the caller's. */
int ext3_credits_data(const struct ext3_fs *fs, uint64_t nblocks)
{
	uint64_t ind = ext3_bmap_credits(fs, nblocks);
	uint64_t blocks = nblocks + ind;
	uint64_t groups = blocks < fs->g.groups ? blocks : fs->g.groups;
	uint64_t gdt = groups < fs->g.desc_blocks ? groups : fs->g.desc_blocks;
	uint64_t c = ind + groups + gdt + EXT3_CRED_INODE + 1;
	return c > INT32_MAX / 2 ? INT32_MAX / 2 : (int)c;
}

/* Index blocks an htree insert may change: the split leaf and the new one,
 * two index levels (each possibly split) and their allocations. */
#define CRED_INDEX_EXTRA 8

/* create / mkdir / symlink / link / unlink in one directory: the directory
 * may grow by a block (its mapping + the block), a new directory or a slow
 * symlink gets a block (the same again), the htree may split, the new inode
 * costs its table block, bitmap and descriptor, the directory inode itself,
 * and the orphan list the superblock and the previous orphan. */
int ext3_credits_dirop(const struct ext3_fs *fs)
{
	int grow = ext3_credits_data(fs, 1) + 1;
	/* ext4: a new inode in an uninitialised group writes its block
	 * bitmap too (ext3_block_bitmap_init_write) */
	int uninit = ext4_has_group_desc_csum(fs) ? 1 : 0;
	return 2 * grow + CRED_INDEX_EXTRA + 3 + EXT3_CRED_INODE + 2 + uninit;
}

int ext3_credits_rename(const struct ext3_fs *fs)
{
	return 2 * ext3_credits_dirop(fs) + 1;
}

/* One truncate step: the kernel's cap of 64 blocks freed per transaction
 * (their bitmaps, descriptors), the indirect path being edited, the inode,
 * the superblock and the orphan list. */
#define CRED_TRUNC_MAX 64
int ext3_credits_truncate(const struct ext3_fs *fs)
{
	return CRED_TRUNC_MAX + ext3_credits_data(fs, 1) + 2;
}

/* An xattr change: the old and the new block, the bitmap and descriptor of
 * each (allocation and free), the superblock and the inode. */
int ext3_credits_xattr(const struct ext3_fs *fs)
{
	(void)fs;
	return 2 + 2 + 2 + 1 + EXT3_CRED_INODE;
}

/* ---- handles and wrappers ---- */

bool ext3_fs_writable(const struct ext3_fs *fs)
{
	if (fs->nojournal)
		return fs->writable && !atomic_load(&fs->ro_forced);
	return fs->writable && fs->journal && !atomic_load(&fs->ro_forced) &&
	       !jbd_journal_aborted(fs->journal);
}

int ext3_journal_start(struct ext3_fs *fs, int credits, struct jbd_handle **out)
{
	*out = NULL;
	if (fs->nojournal)
		return ext3_nj_start(fs, out);
	if (!fs->writable || !fs->journal)
		return err_set(-EROFS, "ext3: read-only mount");
	if (atomic_load(&fs->ro_forced) || jbd_journal_aborted(fs->journal))
		return err_set(-EROFS, "ext3: filesystem is read-only after an error");
	int rc = jbd_handle_start(fs->journal, credits, out);
	if (rc) {
		if (rc == -EROFS)
			atomic_store(&fs->ro_forced, true);
		return err_wrap(rc, "ext3: starting a handle of %d credits", credits);
	}
	if (tl_depth++ == 0)
		tl_fs = fs;
	return 0;
}

int ext3_journal_stop(struct jbd_handle *h)
{
	if (ext3_handle_nojournal(h))
		return ext3_nj_stop();
	struct ext3_fs *fs = tl_fs;
	if (tl_depth > 0 && --tl_depth == 0)
		tl_fs = NULL;
	int rc = jbd_handle_stop(h);
	if (rc && fs && fs->journal && jbd_journal_aborted(fs->journal))
		atomic_store(&fs->ro_forced, true);
	return rc;
}

/* A journal call failed: abort the journal (sticky) and go read-only. */
static int journal_failed(int rc, const char *what, struct buffer_head *bh)
{
	struct ext3_fs *fs = tl_fs;
	rc = err_wrap(rc, "ext3: %s of block %llu", what,
		      bh ? (unsigned long long)buf_blocknr(bh) : 0ull);
	if (fs && fs->journal) {
		if (!jbd_journal_aborted(fs->journal))
			fprintf(stderr, "nostall: ext3: aborting the journal: %s\n", err_last(rc));
		jbd_journal_abort(fs->journal, rc == -EROFS ? -EIO : rc);
		atomic_store(&fs->ro_forced, true);
	}
	return rc;
}

/* Call a jbd buffer operation; its failure aborts the journal. */
static int journal_call(int (*op)(struct jbd_handle *, struct buffer_head *), struct jbd_handle *h,
			struct buffer_head *bh, const char *what)
{
	int rc = op(h, bh);
	return rc ? journal_failed(rc, what, bh) : 0;
}

/* Without a journal a buffer is changed in place (as the kernel's ext4 in
 * no-journal mode): no access to ask for, and a freed block's old state
 * need not be kept (no undo). */
int ext3_journal_get_write_access(struct jbd_handle *h, struct buffer_head *bh)
{
	if (ext3_handle_nojournal(h))
		return 0;
	return journal_call(jbd_get_write_access, h, bh, "write access");
}

int ext3_journal_get_create_access(struct jbd_handle *h, struct buffer_head *bh)
{
	if (ext3_handle_nojournal(h))
		return 0;
	return journal_call(jbd_get_create_access, h, bh, "create access");
}

int ext3_journal_get_undo_access(struct jbd_handle *h, struct buffer_head *bh)
{
	if (ext3_handle_nojournal(h))
		return 0;
	return journal_call(jbd_get_undo_access, h, bh, "undo access");
}

/* No journal: mark_buffer_dirty. nojournal.c's flusher, fsync and sync(2)
 * write it (ext3_fs_sync_metadata), never while a stand-in is open, so it
 * goes out as the handles left it. */
int ext3_journal_dirty_metadata(struct jbd_handle *h, struct buffer_head *bh)
{
	if (ext3_handle_nojournal(h)) {
		buf_mark_dirty(bh);
		return 0;
	}
	return journal_call(jbd_dirty_metadata, h, bh, "dirtying");
}

int ext3_journal_bread(struct jbd_handle *h, struct ext3_fs *fs, uint64_t blk, const char *what,
		       bool undo, struct buffer_head **out)
{
	int rc = ext3_bread(fs, blk, what, out);
	if (rc)
		return rc;
	rc = undo ? ext3_journal_get_undo_access(h, *out) : ext3_journal_get_write_access(h, *out);
	if (rc) {
		buf_put(*out);
		*out = NULL;
	}
	return rc;
}

int ext3_journal_forget_block(struct jbd_handle *h, uint64_t block)
{
	if (ext3_handle_nojournal(h))
		return ext3_nj_forget_block(block);
	int rc = jbd_revoke(h, block, NULL);
	if (rc == -EOPNOTSUPP) {
		/* A v1 journal (data=journal only) has no revoke records: at
		 * least never write a stale cached copy over the reused block. */
		struct ext3_fs *fs = tl_fs;
		struct buffer_head *bh = fs ? buf_get(fs->cache, block, NULL) : NULL;
		if (bh && !buf_private(bh)) {
			buf_put(bh);
			return 0;
		}
		rc = bh ? jbd_forget(h, bh) : 0;
	}
	if (rc) {
		rc = err_wrap(rc, "ext3: forgetting block %llu", (unsigned long long)block);
		return journal_failed(rc, "revoke", NULL);
	}
	return 0;
}

struct jbd_handle *ext3_handle_current(void)
{
	struct jbd_handle *h = jbd_handle_current();
	return h ? h : ext3_nj_current();
}

void ext3_handle_set_sync(struct jbd_handle *h)
{
	if (ext3_handle_nojournal(h))
		ext3_nj_set_sync();
	else
		jbd_handle_set_sync(h, true);
}

int ext3_handle_extend(struct jbd_handle *h, int credits)
{
	return ext3_handle_nojournal(h) ? 0 : jbd_handle_extend(h, credits);
}

int ext3_handle_restart(struct jbd_handle *h, int credits)
{
	return ext3_handle_nojournal(h) ? 0 : jbd_handle_restart(h, credits);
}

uint32_t ext3_handle_tid(const struct jbd_handle *h)
{
	return ext3_handle_nojournal(h) ? 0 : jbd_handle_tid(h);
}

/* ---- errors ---- */

void ext3_now(int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

/* errors= in effect: the option, else the superblock's; an unknown value
 * is remount-ro (as the kernel reads s_errors). */
static int errors_policy(const struct ext3_fs *fs)
{
	int e = fs->opts.errors ? fs->opts.errors : le16_to_cpu(fs->sb.s_errors);
	return e == EXT3_ERRORS_CONTINUE || e == EXT3_ERRORS_PANIC ? e : EXT3_ERRORS_RO;
}

/* Write the in-memory superblock straight to the device (no handle could
 * carry it): flushed before, FUA after, as mount.c writes it. */
static void super_write_direct(struct ext3_fs *fs)
{
	struct ext3_super_block copy;
	ext3_sb_lock(fs);
	copy = fs->sb;
	ext3_sb_unlock(fs);
	ext4_sb_csum_update(fs, &copy);
	(void)blk_rw(fs->q, BLK_WRITE_SYNC | BLK_REQ_FLUSH | BLK_REQ_FUA, EXT3_SUPERBLOCK_OFFSET,
		     &copy, EXT3_SUPERBLOCK_SIZE);
}

/* Exit status of errors=panic (EX_SOFTWARE). */
#define EXT3_PANIC_STATUS 70

int ext3_fs_error(struct ext3_fs *fs, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	int policy = errors_policy(fs);
	fprintf(stderr, "nostall: ext3 error: %s\n", msg);
	bool writable = fs->writable && (fs->journal || fs->nojournal) && fs->group_locks;
	if (writable && fs->nojournal) {
		/* No journal: the state goes straight to disk (the kernel's
		 * ext4_commit_super), the cached superblock block first so that
		 * its later writeback carries it too. */
		ext3_sb_lock(fs);
		uint16_t st = le16_to_cpu(fs->sb.s_state);
		fs->sb.s_state = cpu_to_le16(st | EXT3_ERROR_FS);
		ext3_sb_unlock(fs);
		(void)ext3_super_dirty(ext3_nj_any(), fs);
		super_write_direct(fs);
	} else if (writable) {
		ext3_sb_lock(fs);
		uint16_t st = le16_to_cpu(fs->sb.s_state);
		fs->sb.s_state = cpu_to_le16(st | EXT3_ERROR_FS);
		ext3_sb_unlock(fs);
		/* Only the thread's own handle: starting one could wait for a
		 * commit that waits for handles blocked on our group lock. */
		struct jbd_handle *h = jbd_handle_current();
		bool journaled = false;
		/* One more credit, in case the superblock is not in this
		 * transaction yet (an out-of-credits dirty would abort). */
		if (policy != EXT3_ERRORS_PANIC && h && tl_fs == fs &&
		    !jbd_journal_aborted(fs->journal) && jbd_handle_extend(h, 1) == 0)
			journaled = ext3_super_dirty(h, fs) == 0;
		if (!journaled)
			super_write_direct(fs);
	} else {
		uint16_t st = le16_to_cpu(fs->sb.s_state);
		fs->sb.s_state = cpu_to_le16(st | EXT3_ERROR_FS);
	}
	switch (policy) {
	case EXT3_ERRORS_CONTINUE:
		break;
	case EXT3_ERRORS_PANIC:
		if (fs->journal)
			jbd_journal_abort(fs->journal, -EIO);
		fprintf(stderr, "nostall: ext3: panic forced after error (errors=panic)\n");
		fflush(stderr);
		exit(EXT3_PANIC_STATUS);
	default:
		if (!atomic_exchange(&fs->ro_forced, true))
			fprintf(stderr, "nostall: ext3: remounting filesystem read-only\n");
		break;
	}
	return err_set(-EUCLEAN, "ext3: %s", msg);
}

/* ---- the write side of a mount ---- */

int ext3_write_init(struct ext3_fs *fs)
{
	if (fs->group_locks)
		return 0; /* already set up */
	if (!fs->journal && !fs->nojournal)
		return err_set(-EROFS, "ext3: the write side needs a writable mount");
	fs->group_locks = calloc(fs->g.groups, sizeof *fs->group_locks);
	if (!fs->group_locks)
		return err_set(-ENOMEM, "ext3: out of memory for %u group locks", fs->g.groups);
	for (uint32_t g = 0; g < fs->g.groups; g++)
		pthread_mutex_init(&fs->group_locks[g], NULL);
	pthread_mutex_init(&fs->sb_lock, NULL);
	pthread_mutex_init(&fs->orphan_lock, NULL);
	pthread_mutex_init(&fs->rename_lock, NULL);
	fs->orphans = NULL;
	/* The live counts are the descriptors' sums (the kernel's percpu
	 * counters are initialised the same way); the superblock copy follows,
	 * so the first journaled superblock and the unmount write agree with
	 * what e2fsck computes. */
	uint64_t fb = 0, fi = 0;
	for (uint32_t g = 0; g < fs->g.groups; g++) {
		fb += fs->gd[g].bg_free_blocks_count;
		fi += fs->gd[g].bg_free_inodes_count;
	}
	fs->free_blocks = fb;
	fs->free_inodes = fi;
	fs->sb.s_free_blocks_count = cpu_to_le32((uint32_t)fb);
	fs->sb.s_free_inodes_count = cpu_to_le32((uint32_t)fi);
	int rc = ext3_balloc_init(fs);
	if (!rc && fs->nojournal)
		rc = ext3_nj_init(fs);
	if (rc) {
		ext3_write_shutdown(fs);
		return rc;
	}
	atomic_store(&fs->ro_forced, false);
	fs->writable = true;
	return 0;
}

void ext3_write_shutdown(struct ext3_fs *fs)
{
	if (!fs->group_locks)
		return;
	ext3_nj_shutdown(fs);
	ext3_balloc_destroy(fs);
	for (uint32_t g = 0; g < fs->g.groups; g++)
		pthread_mutex_destroy(&fs->group_locks[g]);
	free(fs->group_locks);
	fs->group_locks = NULL;
	pthread_mutex_destroy(&fs->sb_lock);
	pthread_mutex_destroy(&fs->orphan_lock);
	pthread_mutex_destroy(&fs->rename_lock);
	fs->writable = false;
}
