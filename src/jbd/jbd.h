/* JBD: the ext3 journal (docs/journal.md).
 *
 * The Linux 2.6.30 fs/jbd model, on-disk compatible with the kernel and
 * e2fsprogs (jbd_format.h):
 * - a journal lives either in the ext3 journal inode (a block-map callback
 *   gives the device block of each journal block) or in a contiguous block
 *   range of the device (the test client);
 * - the filesystem changes metadata through handles: start a handle with a
 *   credit budget, get write (or create) access to each buffer before
 *   changing it, mark it dirty, stop the handle. Handles nest per thread;
 * - handles join the running transaction; one commit thread (kjournald)
 *   commits it on a sync handle (fsync), on the commit interval, when its
 *   credits pass a quarter of the log, or when a handle does not fit;
 * - ordered data (data=ordered, data=guarded): the filesystem files a
 *   jbd_inode in a transaction; its commit writes that inode's data (the
 *   filesystem's submit and wait ops) before the commit block;
 * - committed buffers are written home by checkpointing, which moves the log
 *   tail recorded in the journal superblock;
 * - recovery (SCAN, REVOKE, REPLAY) runs at load, or on its own for
 *   `nostall recover` (jbd_journal_recover_dev);
 * - the first I/O error aborts the journal for good: new handles get -EROFS.
 *
 * Every function returns 0 or a negative errno (with an err_set() message
 * where a human needs more). Threads: any thread may use handles; the
 * journal owns one commit thread, which also runs the jbd_inode ops.
 * Locking is internal (one journal mutex, never held across I/O or
 * callbacks); callers hold no journal lock. Lock order for callers: a
 * buffer lock may be held while calling into the journal (and must be,
 * around jbd_buffer_committed_data), but not while starting a handle; a
 * jbd_inode op must not start a handle nor wait for a commit; a thread
 * holding jbd_journal_lock_updates must not start a handle.
 */
#ifndef NOSTALL_JBD_H
#define NOSTALL_JBD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../util/hist.h"
#include "../util/lockdep.h"

struct dev;
struct blk_queue;
struct buf_cache;
struct buffer_head;

struct jbd_journal;
struct jbd_handle;

/* ---- where the journal is ---- */

/* Journal block `logical` -> device block (in journal block size units).
 * Returns 0, or a negative errno (e.g. -ENOENT for a hole). */
typedef int (*jbd_bmap_fn)(void *ctx, uint32_t logical, uint64_t *physical);

struct jbd_location {
	unsigned block_size;   /* journal block size = filesystem block size */
	jbd_bmap_fn bmap;      /* NULL: contiguous range below */
	void *bmap_ctx;
	uint64_t first_block;  /* contiguous: device block of journal block 0 */
	uint32_t nr_blocks;    /* journal blocks available: contiguous: the range
				* length; with bmap: 0 = trust s_maxlen, else a bound */
	/* Replay writes this filesystem block with FUA when fua_block_set:
	 * the block holding the filesystem's superblock. A replayed copy is
	 * a multi-sector write; torn by a crash (the volatile cache keeping
	 * some of its sectors), it leaves a superblock whose checksum fails,
	 * and the next recovery cannot even map the journal that would
	 * rewrite it (nor can e2fsck without a backup superblock, nor the
	 * kernel). The filesystem's own superblock writes are FUA too. */
	bool fua_block_set;
	uint64_t fua_block;
};

/* ---- options ("commit=5,barrier=1,journal_ioprio=BE/4,journal_shadow=copy,journal_checkpoint=early,data_err=abort") ---- */

struct jbd_config {
	unsigned commit_interval_ms; /* commit=N seconds (0 = default 5) */
	bool barrier;                /* barrier=1: flush + FUA commit block (default) */
	bool barrier_set;            /* barrier= / nobarrier given: era defaults keep out */
	int ioprio_class, ioprio_level; /* commit thread's I/O priority (default BE/4) */
	/* data_err=ignore: an ordered-data error (a jbd_inode op) is kept in the
	 * jbd_inode and counted instead of aborting the journal; data_err=abort
	 * (the default here; 2.6.30 ext3's own default was ignore) aborts. */
	bool data_err_ignore;
	/* journal_shadow=wait: 2.6.30's fs/jbd commit. The ordered data is
	 * written and waited for before the metadata goes to the log, and a
	 * metadata buffer whose log copy is being written (BJ_Shadow) gets
	 * write access only when that write completes: a handle waits for
	 * the commit's log I/O, issued at journal_ioprio. The era presets
	 * bring it. journal_shadow=copy (nostall's default): the log copies
	 * are the commit's own memory, taken under the journal lock, so no
	 * handle ever waits for log I/O; data and log writes overlap
	 * (jbd2's order). */
	bool shadow_wait;
	bool shadow_set;             /* journal_shadow= given: era defaults keep out */
	/* Ordered data per transaction (the era presets): fs/jbd kept a
	 * transaction's data buffers on its own lists (t_sync_datalist, and
	 * t_locked_list for those already under I/O when the commit reached
	 * them), so a commit waited only for data dirtied while it ran, never
	 * for writeback the flusher started on data dirtied after the
	 * transaction closed (that data is the next transaction's). false
	 * (nostall, jbd2's rule): the commit waits for every writeback of its
	 * inodes' mappings started before its wait (filemap_fdatawait). */
	bool ordered_txn;
	/* journal_checkpoint=early (nostall's default): a checkpoint thread
	 * writes committed buffers home in the background once the free log
	 * drops below two maximal transactions, so that a handle rarely finds
	 * the log full (issue 8); it never forces a commit and moves the tail
	 * as a checkpoint does. journal_checkpoint=full (the era presets):
	 * 2.6.30's, a checkpoint only when a handle finds no room. */
	bool checkpoint_full;
	bool checkpoint_set;         /* journal_checkpoint= given: era defaults keep out */
	/* journal_checksum: each commit block carries jbd2's v1 checksum of
	 * the transaction's log blocks (journal feature COMPAT_CHECKSUM) and
	 * recovery checks it. journal_async_commit (implies the checksum): the
	 * commit block goes out with the log blocks, and one cache flush after
	 * all of them makes the transaction durable, instead of a flush before
	 * the commit block and a FUA write of it: one flush per commit instead
	 * of two. A torn commit fails its checksum and ends the log. Sets the
	 * journal's INCOMPAT_ASYNC_COMMIT while mounted (a 2.6.30 kernel
	 * refuses such a journal; a clean unmount clears both features again).
	 * Whether the data mode allows it is the filesystem's rule (ext3:
	 * journal and writeback only, as ext4 refuses it with ordered data). */
	bool checksum;
	bool async_commit;
	/* jbd2's write format (docs/journal.md, "The jbd2 write format"), what
	 * the kernel's ext4 asks of its journal at mount. journal_64bit
	 * (INCOMPAT_64BIT; the filesystem asks for it when it has the 64bit
	 * feature): tags carry t_blocknr_high and revoke records are 8 bytes,
	 * so blocks past 2^32 can be logged; once set on the journal it stays
	 * (the kernel never clears it). journal_csum=v3 (INCOMPAT_CSUM_V3; the
	 * filesystem asks for it with metadata_csum): crc32c on the journal
	 * superblock, each descriptor and revoke block (a tail), each logged
	 * block (its 16-byte tag) and each commit block; it replaces the v1
	 * checksum (journal_checksum then means v3, as on an ext4 with
	 * metadata_csum) and stays on the journal at unmount. A journal found
	 * with v2 or v3 is written with v3 (the log is empty at load) unless
	 * journal_csum=v1 asks for the v1 checksum instead, which replaces it
	 * as jbd2_journal_set_features does. A v1 journal superblock takes
	 * none of them (-EINVAL). */
	bool journal_64bit;
	bool csum_v3;
	bool csum_v1_set;            /* journal_csum=v1 given: a v2/v3 journal goes back to v1 */
};
void jbd_config_default(struct jbd_config *c);
/* Apply one option. -ENOENT (no message) for a name that is not the
 * journal's, so a filesystem can route its own options; -EINVAL with a
 * message for a bad value. */
int jbd_config_set(struct jbd_config *c, const char *name, const char *value);
/* Apply a whole option string; unknown names are errors. */
int jbd_config_parse(struct jbd_config *c, const char *opts);
/* The mount defaults of era preset `preset` (blk_preset_is_era): barrier=0,
 * ext3's default until 2.6.38, unless barrier= or nobarrier was given, and
 * journal_shadow=wait (fs/jbd's commit) unless journal_shadow= was given,
 * journal_checkpoint=full unless journal_checkpoint= was given (an explicit
 * option always wins, whatever the order). nostall's own default (no
 * preset, or preset=nostall) stays barrier=1, journal_shadow=copy,
 * journal_checkpoint=early. NULL: nothing. */
void jbd_config_era_defaults(struct jbd_config *c, const char *preset);
/* The same for the last preset= in a block-queue option string (a
 * filesystem's mount options), if any. */
void jbd_config_era_defaults_opts(struct jbd_config *c, const char *queue_opts);

/* ---- create, load, destroy ---- */

/* Write an empty journal superblock (v2, revoke feature, s_sequence 1,
 * s_start 0) covering loc->nr_blocks blocks (contiguous), or the blocks the
 * bmap callback maps (nr_blocks required). Synchronous (dev_rw_sync). */
int jbd_journal_create(struct dev *dev, const struct jbd_location *loc, const uint8_t uuid[16]);

struct jbd_params {
	struct blk_queue *q;      /* the log's I/O goes through this queue */
	struct buf_cache *cache;  /* the filesystem's buffer cache over q (same block size) */
	struct jbd_location loc;
	struct jbd_config cfg;    /* jbd_config_default() + options */
	bool no_recovery;         /* refuse to load a journal that needs recovery (-EUCLEAN) */
};

/* Read and check the journal superblock, recover if it needs it (the
 * replayed blocks are written home through the queue and flushed; the
 * cache's clean buffers are dropped so nothing stale stays cached), reset
 * the log, and start the commit thread. Refuses unsupported features with
 * -EOPNOTSUPP and a message naming them. */
int jbd_journal_load(const struct jbd_params *p, struct jbd_journal **out);
/* Unmount: commit what is running, checkpoint everything, mark the journal
 * clean (s_start 0), stop the commit thread, free. Every handle must be
 * stopped. Returns the journal's error if it was aborted (then nothing more
 * is written). */
int jbd_journal_destroy(struct jbd_journal *j);

/* ---- handles ---- */

/* Start a handle reserving `credits` buffers of log space (nested call in
 * the same thread: the current handle, with a reference more). Sleeps while
 * the running transaction is locked for commit, while it has no room
 * (commits it first) or the log has no room (checkpoints). -EROFS once
 * aborted, -ENOSPC if credits exceed a transaction's limit. */
int jbd_handle_start(struct jbd_journal *j, int credits, struct jbd_handle **out);
/* Drop a reference; the last one releases unused credits, may start a
 * commit (sync handle, interval passed, transaction large), and for a sync
 * handle waits for the commit. Returns -EIO if the journal aborted while the
 * handle was open or its commit failed. */
int jbd_handle_stop(struct jbd_handle *h);
/* The calling thread's handle (for its nested users), or NULL. */
struct jbd_handle *jbd_handle_current(void);
/* Ask for a synchronous commit at stop (fsync, O_SYNC, dirsync). */
void jbd_handle_set_sync(struct jbd_handle *h, bool sync);
/* Transaction id the handle belongs to. */
uint32_t jbd_handle_tid(const struct jbd_handle *h);
/* Add credits if the running transaction can take them: 0, or -EAGAIN (the
 * caller stops and starts a new handle: jbd_handle_restart). */
int jbd_handle_extend(struct jbd_handle *h, int credits);
/* Stop the handle's part of the transaction and continue in a new one with
 * `credits` (a handle that restarts must not hold nested references). */
int jbd_handle_restart(struct jbd_handle *h, int credits);

/* Before changing a metadata buffer (uptodate, referenced by the caller).
 * If the committing transaction still needs the old contents, they are
 * frozen (copied out) first. Cancels a revoke of this block in the running
 * transaction. */
int jbd_get_write_access(struct jbd_handle *h, struct buffer_head *bh);
/* Same for a freshly allocated buffer whose old contents do not matter. */
int jbd_get_create_access(struct jbd_handle *h, struct buffer_head *bh);
/* Write access for an allocation bitmap: besides, keep a committed copy of
 * the buffer (its contents before this transaction changed it; made at the
 * first undo access, kept while newer transactions need it), so an
 * allocator can refuse a block that is free in the buffer but not in the
 * last committed copy (freed by a transaction that has not committed: the
 * freeing may still be undone by a crash). The copy is dropped when the
 * transaction owning the buffer commits and no running one has it; if the
 * running one has it, the copy becomes the contents just committed. */
int jbd_get_undo_access(struct jbd_handle *h, struct buffer_head *bh);
/* The committed copy of bh (jbd_get_undo_access), or NULL when there is
 * none (then the buffer itself is what is committed). The caller holds
 * undo access through a running handle AND the buffer lock (buf_lock):
 * the copy is only replaced or freed by a holder of the buffer lock, so
 * the pointer stays valid until buf_unlock. Read only. */
const void *jbd_buffer_committed_data(struct buffer_head *bh);
/* Change the committed copy of bh (and the one about to replace it at the
 * end of a commit) with fn(copy, arg). ext3 marks there the blocks the
 * running transaction frees, so that they stay unallocatable until that
 * transaction commits: a block allocated by the committing transaction and
 * freed by the running one is free in the older committed copy, and handing
 * it out again would let the new owner's data reach the disk under the
 * committing transaction's mapping (2.6.30's ext3_free_blocks_sb sets the
 * bit in b_committed_data for the same reason). Same conditions as
 * jbd_buffer_committed_data (undo access, buffer lock held). No copy:
 * nothing to do (0). */
int jbd_buffer_committed_update(struct buffer_head *bh, void (*fn)(void *copy, void *arg), void *arg);
/* The buffer's new contents belong to the handle's transaction (uses one
 * credit the first time in a transaction). */
int jbd_dirty_metadata(struct jbd_handle *h, struct buffer_head *bh);
/* The block was freed (truncate, unlink; metadata or data=journal data):
 * drop its pending journaled changes in the handle's transaction, and make
 * sure no older copy is ever written home over a reuse of the block: an
 * older transaction's copy on a checkpoint list (or in the committing
 * transaction) is not checkpointed until this transaction commits, and is
 * then dropped unwritten (the kernel's BH_Freed / journal_forget). After
 * that commit the buffer is clean and off every journal list. Consumes the
 * caller's reference to bh (like buf_forget; the cache's copy is clean, its
 * contents no longer the block's). */
int jbd_forget(struct jbd_handle *h, struct buffer_head *bh);
/* Revoke `block`: older logged copies of it are not replayed by recovery.
 * bh (optional, the caller's reference is consumed) is forgotten too. */
int jbd_revoke(struct jbd_handle *h, uint64_t block, struct buffer_head *bh);

/* ---- commits and the log ---- */

/* Start a commit of transaction `tid` (if it is still running); returns
 * whether one was started. */
bool jbd_log_start_commit(struct jbd_journal *j, uint32_t tid);
/* Wait until transaction `tid` has committed; 0, or -EIO if the journal
 * aborted. */
int jbd_log_wait_commit(struct jbd_journal *j, uint32_t tid);
/* Commit the running transaction (if any) and wait for it. */
int jbd_journal_force_commit(struct jbd_journal *j);
/* Commit everything and checkpoint everything: the log is then empty. */
int jbd_journal_flush(struct jbd_journal *j);
/* Id of the running transaction, or of the next one if none runs. */
uint32_t jbd_journal_running_tid(struct jbd_journal *j);
/* Write back committed transactions (checkpoint) without committing the
 * running one, until the checkpoint list is empty; a buffer that a newer
 * transaction owns or freed makes that transaction commit first. Then the
 * tail moves. Returns 0, or the error that aborted the journal. */
int jbd_journal_checkpoint(struct jbd_journal *j);

/* Stop the world (unmount, resize, freeze): wait until every open handle
 * has stopped and keep new handles from starting (jbd_handle_start sleeps)
 * until jbd_journal_unlock_updates. Nestable by the thread that holds it
 * (each lock needs its unlock); another thread's lock_updates waits for the
 * first to unlock completely. The caller must not have a handle open, nor
 * start one while it holds the lock (it would wait for itself). Commits
 * and checkpoints go on. */
void jbd_journal_lock_updates(struct jbd_journal *j);
void jbd_journal_unlock_updates(struct jbd_journal *j);

/* ---- ordered data: per-inode lists (data=ordered, data=guarded) ---- */

/* An inode's ordered data (jbd_inode.c; jbd2's jbd2_inode). Allocated by
 * jbd_inode_create (opaque); one per inode with data to order, released at
 * eviction. */
struct jbd_inode;
struct jbd_inode_ops {
	/* Start writing the inode's dirty data for commit `tid`: submit, do
	 * not wait (the queue is plugged until the wait). Runs on the commit
	 * thread, no journal lock held; must not start a handle. */
	int (*submit)(void *ctx, uint32_t tid);
	/* Wait for that data (the wait unplugs); before the commit block. */
	int (*wait)(void *ctx, uint32_t tid);
};
int jbd_inode_create(struct jbd_journal *j, const struct jbd_inode_ops *ops, void *ctx,
		     struct jbd_inode **out);
/* File the inode in the handle's (running) transaction: its commit calls
 * submit after the transaction is locked and wait before the commit block.
 * If the inode is on the committing transaction's list, it moves to the
 * running one's when that commit finishes (on at most one running and one
 * committing transaction). -EROFS once aborted. An op error aborts the
 * journal unless data_err=ignore (then see jbd_inode_error). */
int jbd_inode_file(struct jbd_handle *h, struct jbd_inode *ji);
/* jbd_inode_file, and an op error of this inode in this transaction's
 * commit aborts the journal even with data_err=ignore: for a handle that
 * logged what must not commit over failed data (data=guarded's fsync logs
 * the size its data reaches). */
int jbd_inode_file_strict(struct jbd_handle *h, struct jbd_inode *ji);
/* At eviction: wait while the commit thread is in one of the inode's ops,
 * take it off the lists, free it. Returns its unreported data error (or
 * 0). Every jbd_inode is released before jbd_journal_destroy. */
int jbd_inode_release(struct jbd_inode *ji);
/* Is the inode filed on the committing transaction (whose commit submits
 * its data)? A truncate asks before it drops pages (jbd2's
 * jbd2_journal_begin_ordered_truncate): that commit's mapping of the blocks
 * past the new size needs their data on disk, so the caller writes them
 * first. Stable while the caller holds a handle: the running transaction
 * cannot start committing under it. */
bool jbd_inode_committing(struct jbd_inode *ji);
/* The first data error recorded with data_err=ignore since the last call
 * (then cleared), or 0. */
int jbd_inode_error(struct jbd_inode *ji);
/* For a submit op: the write op of the commit of `tid` for its ordered
 * data, as 2.6.30's journal_submit_data_buffers chose it: the era's sync
 * batch op (blk_queue_sync_batch_op) when a sync handle (fsync, O_SYNC)
 * asked for that commit, else BLK_WRITE. BLK_WRITE when tid is not the
 * committing transaction. */
unsigned jbd_commit_data_op(struct jbd_journal *j, uint32_t tid);
/* For a wait op: the data of the commit of `tid` is the data that was dirty
 * when its ordered submit began (CLOCK_MONOTONIC ns; the transaction's
 * handles were done by then) under cfg.ordered_txn; UINT64_MAX (all of it)
 * otherwise, or when tid is not the committing transaction. */
uint64_t jbd_commit_data_dirtied_by(struct jbd_journal *j, uint32_t tid);
/* TEST ONLY: NOSTALL_DEBUG_SKIP_ORDERED=1 is set (commits skip every filed
 * inode's ops: the deliberately broken build of `nostall crashtest`). A
 * filesystem that would file data only to make an fsync durable writes it
 * itself instead, so the broken build breaks ordering, not fsync. Only in
 * test builds (-DNOSTALL_TEST_HOOKS: build/nostall-testhooks, the asan and
 * tsan variants); the release library's is the constant false below. */
/* The journal handle as a pseudo-lock for util/lockdep.h: acquired by the
 * outermost jbd_handle_start (it may wait for a commit, which waits for
 * every open handle), released by the last jbd_handle_stop. */
extern struct lockdep_class jbd_lockdep_handle;

#ifdef NOSTALL_TEST_HOOKS
bool jbd_debug_skip_ordered(void);
#else
static inline bool jbd_debug_skip_ordered(void)
{
	return false;
}
#endif

/* ---- errors ---- */

/* Abort (sticky): the first error is recorded (s_errno in the superblock
 * where it can still be written). */
void jbd_journal_abort(struct jbd_journal *j, int err);
bool jbd_journal_aborted(struct jbd_journal *j);
/* The abort error (negative), or 0. */
int jbd_journal_errno(struct jbd_journal *j);

/* ---- statistics ---- */

enum jbd_commit_reason {
	JBD_COMMIT_SYNC = 0,     /* a sync handle (fsync) */
	JBD_COMMIT_TIMER,        /* the commit interval passed */
	JBD_COMMIT_FULL,         /* credits passed a quarter of the log */
	JBD_COMMIT_NOFIT,        /* a handle did not fit */
	JBD_COMMIT_FORCE,        /* force_commit / flush / unmount / checkpoint */
	JBD_COMMIT_REASONS
};

struct jbd_stats {
	uint64_t commits;
	uint64_t commits_by[JBD_COMMIT_REASONS];
	uint64_t sync_commits;       /* commits that used the era's sync batch op */
	uint64_t async_flushes;      /* journal_async_commit: the flush after a commit block */
	uint64_t blocks_logged;      /* metadata copies written to the log */
	uint64_t descriptor_blocks, revoke_blocks, escaped;
	uint64_t frozen_copies;      /* copy-outs for a committing transaction */
	uint64_t committed_copies;   /* undo-access copies made */
	uint64_t data_inodes;        /* jbd_inode submit ops run by commits */
	uint64_t data_errors;        /* ordered-data errors kept (data_err=ignore) */
	uint64_t lock_updates;       /* jbd_journal_lock_updates (outermost) */
	uint64_t handles;
	uint64_t handle_waits_locked, handle_waits_nofit, handle_waits_space;
	uint64_t shadow_waits;       /* write accesses that waited for a log write (journal_shadow=wait) */
	uint64_t shadow_wait_ns;     /* ... their total wait */
	uint64_t checkpoints, checkpoint_writes, tail_advances, wraps;
	uint64_t early_checkpoints;      /* journal_checkpoint=early: background passes */
	uint64_t early_checkpoint_writes; /* ... and the buffers they wrote home (also in checkpoint_writes) */
	uint64_t sb_writes;
	uint32_t head, tail, free, maxlen, first; /* log positions now */
	uint32_t tail_sequence, transaction_sequence, commit_sequence;
	unsigned last_write_op, last_commit_op; /* BLK_* flags used by the last commit */
	struct hist commit_ns;       /* lock -> commit block done */
	struct hist sync_stop_ns;    /* sync handle stop -> return (fsync latency) */
};
/* Snapshot (hist copies included). */
void jbd_journal_stats(struct jbd_journal *j, struct jbd_stats *out);

/* ---- recovery on its own (nostall recover, tests) ---- */

enum {
	JBD_RECOVER_DRY_RUN = 1u << 0, /* scan and count, write nothing */
	JBD_RECOVER_RESET = 1u << 1,   /* afterwards mark the journal empty like
					* e2fsck: s_start 0, s_sequence = end+1 */
	/* With RESET: a journal found corrupt by its v2/v3 checksums
	 * (-EBADMSG) is emptied as e2fsck empties it (s_start 0, s_sequence
	 * kept), after what could be replayed was; info->discarded says so and
	 * -EBADMSG is still returned (the caller marks the filesystem for a
	 * full check). Without it the journal is left as found (the kernel:
	 * the mount fails). */
	JBD_RECOVER_DISCARD_BAD = 1u << 2,
};

struct jbd_recovery_info {
	bool needed;                /* s_start was non-zero */
	uint32_t start_tid;         /* s_sequence */
	uint32_t end_tid;           /* first transaction id NOT found committed */
	uint32_t transactions;      /* committed transactions found */
	uint64_t replayed;          /* blocks written home */
	uint64_t revoke_records;    /* distinct revoked blocks */
	uint64_t revoked;           /* logged copies skipped as revoked */
	int32_t sb_errno;           /* s_errno found in the journal superblock */
	/* Journal checksums (COMPAT_CHECKSUM): commit blocks verified, and a
	 * transaction whose checksum failed. Under ASYNC_COMMIT a failure at
	 * the end of the log is a commit torn by the crash: the log ends
	 * before it (torn_commit). Otherwise, or with a committed transaction
	 * after it, it is corruption: failed_commit names it and recovery
	 * stops before it (as jbd2 and e2fsck do; the caller marks the
	 * filesystem as having errors). */
	uint32_t checksums_verified;
	/* v2/v3: logged blocks whose tag checksum failed (not written home;
	 * recovery answers -EBADMSG after replaying the rest), and whether a
	 * corrupt journal was emptied (JBD_RECOVER_DISCARD_BAD). */
	uint64_t bad_blocks;
	bool discarded;
	bool torn_commit;
	bool failed;
	uint32_t failed_commit;
	uint32_t maxlen, first, blocksize;
	int sb_version;             /* 1 or 2 */
	uint32_t compat, incompat, ro_compat; /* v2: the superblock's feature bits */
};
/* The journal features of compat/incompat/ro_compat, named as dumpe2fs
 * names them ("journal_incompat_revoke journal_64bit
 * journal_checksum_v3"; "(none)" for none), into out. */
void jbd_features_format(uint32_t compat, uint32_t incompat, uint32_t ro_compat, char *out, size_t len);

/* Run recovery on a device synchronously (dev_rw_sync; replayed blocks are
 * flushed). */
int jbd_journal_recover_dev(struct dev *dev, const struct jbd_location *loc, unsigned flags,
			    struct jbd_recovery_info *info);

/* Read a journal superblock and check it (features). Fills maxlen, first,
 * blocksize, sb_version, start_tid, needed, sb_errno and the feature bits
 * of info. */
int jbd_journal_check_dev(struct dev *dev, const struct jbd_location *loc, struct jbd_recovery_info *info);

/* The internal journal of an ext3 image is located by ext3 itself
 * (src/extfs/core/ext3.h, ext3_journal_*), which hands this layer a jbd_location. */

/* ---- mount-style assembly (jbd_stack.c): device + queue + cache + journal ---- */

/* For the journal's users that are not a filesystem (tests, crash tests,
 * `nostall bench jbd`). */
struct jbd_stack;
struct jbd_stack_params {
	const char *queue_opts;   /* blk_queue_create options (NULL: defaults) */
	const char *queue_preset; /* then preset=NAME on top of them (NULL: none) */
	struct jbd_location loc;  /* its block_size is the cache's */
	struct jbd_config cfg;    /* jbd_config_default() + options */
	bool create;              /* write an empty journal first (jbd_journal_create) */
	const uint8_t *uuid;      /* for create: 16 bytes, or NULL (zero) */
	bool no_recovery;         /* as jbd_params */
	bool writeback;           /* run the cache's writeback thread (default: none) */
};
/* Zero + jbd_config_default. */
void jbd_stack_params_default(struct jbd_stack_params *p);
/* Open the device (dev_open spec) and build the stack on it; the stack owns
 * the device. Errors name the step that failed (err_last). */
int jbd_stack_open(const char *dev_spec, const struct jbd_stack_params *p, struct jbd_stack **out);
/* The same on an open device the caller keeps (and closes after
 * jbd_stack_close). */
int jbd_stack_open_dev(struct dev *dev, const struct jbd_stack_params *p, struct jbd_stack **out);
/* jbd_journal_destroy (clean unmount), cache sync, queue drained, device
 * closed if owned; frees. Returns the journal's error, else the sync's. */
int jbd_stack_close(struct jbd_stack *s);
struct dev *jbd_stack_dev(const struct jbd_stack *s);
struct blk_queue *jbd_stack_queue(const struct jbd_stack *s);
struct buf_cache *jbd_stack_cache(const struct jbd_stack *s);
struct jbd_journal *jbd_stack_journal(const struct jbd_stack *s);

/* ---- test client: journals raw metadata-like blocks (tests, bench) ---- */

struct jbd_client;
struct jbd_client_params {
	struct jbd_journal *j;
	struct buf_cache *cache;
	uint64_t first_block, nr_blocks; /* the region of "metadata" blocks it changes */
	uint64_t seed;
	unsigned max_tx_blocks;   /* blocks per handle: uniform in [1, max] */
	double sync_prob;         /* probability a handle is sync */
	double revoke_prob;       /* probability a handle also revokes a block */
	unsigned magic_every;     /* every Nth block starts with the JBD magic (0 = never) */
	/* Record every block's final contents per transaction for checking. */
	bool track;
};
int jbd_client_create(const struct jbd_client_params *p, struct jbd_client **out);
void jbd_client_destroy(struct jbd_client *c);
/* One handle: random blocks changed, maybe sync, maybe a revoke. Returns
 * 0, or the handle's error. *sync_ns (optional) gets the stop latency of a
 * sync handle (0 for an async one). */
int jbd_client_step(struct jbd_client *c, uint64_t *sync_ns);
/* The contents block b must have after transaction `tid` committed (and
 * everything before it): fills buf and returns 1, 0 when the block was never
 * written (initial contents), -1 when it is undefined (revoked and not
 * rewritten since). Requires track. */
int jbd_client_expected(const struct jbd_client *c, uint32_t tid, uint64_t b, void *buf);
/* Deterministic contents of block b as written by transaction tid. */
void jbd_client_fill(uint64_t seed, uint32_t tid, uint64_t b, unsigned magic_every, void *buf,
		     unsigned size);
/* Transactions the client wrote into (ids, in order). */
uint32_t jbd_client_last_tid(const struct jbd_client *c);

#endif
