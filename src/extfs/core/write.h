/* The ext3 write path's internal contract (private to src/extfs; see
 * docs/write-path.md). Each section names the file that implements it. The
 * sections are written by different hands at the same time: a file changes
 * only its own section's functions; a change to a signature here is agreed
 * first.
 *
 * Locking order (outermost first; never take an earlier one while holding a
 * later one):
 *   fs->rename_lock (cross-directory renames only)
 *   -> directory inode locks (writer; two directories in inode-number order)
 *   -> non-directory inode locks (writer; two in inode-number order)
 *   -> journal handle (jbd_handle_start may wait for a commit: the commit
 *      thread never takes an inode lock, so this is safe; without a
 *      journal the stand-in's writers' lock, whose start may wait for a
 *      metadata write-out in the same way: core/nojournal.c)
 *   -> page locks (page cache; ascending index)
 *   -> group locks (fs->groups_lock[g], ascending g) -> fs->sb_lock
 *   -> buffer cache / block queue internals.
 * The commit thread's ordered-data ops (jbd_inode submit/wait) only start and
 * wait for page writeback; they take no inode lock and start no handle.
 * One exception, provably safe: ext3_new_inode (and so the rename whiteout)
 * locks the new inode under the handle with a trylock only - a busy lock
 * (a stale user of the reused number) makes it claim another number - so
 * no thread ever waits for an inode lock while it holds a handle.
 *
 * Checked in test builds (util/lockdep.h, docs/write-testing.md): the
 * classes directory inode / inode (ext3_inode_wrlock & co., ascending
 * inode number within a class), jbd handle, rename_lock, group locks
 * (ascending group: ext3_group_lock), sb_lock (ext3_sb_lock) - ext3_int.h.
 * Take these locks through those helpers so that the checker sees them.
 *
 * Errors: negative errno with a message. Corrupt metadata met while writing
 * goes through ext3_fs_error(), which applies errors= and returns -EUCLEAN;
 * nothing is written over a structure found corrupt. A failed journal
 * operation aborts the journal (sticky): handles then fail with -EROFS.
 */
#ifndef NOSTALL_EXT3_WRITE_H
#define NOSTALL_EXT3_WRITE_H

#include "extfs/core/ext3_int.h"

struct jbd_handle;
struct buffer_head;

/* ==== transactions and errors (trans.c) ==== */

/* Credits (journal blocks a handle may dirty) for the operations below, for
 * this filesystem (block size, indirect depth, quota-free ext3):
 *  - EXT3_CRED_DATA(fs, n): map n new data blocks into one file (their
 *    bitmaps, group descriptors, indirect blocks, inode, superblock);
 *  - EXT3_CRED_INODE: change one inode (inode table block) = 1;
 *  - ext3_credits_dirop(fs): create/link/unlink in one directory (a new dir
 *    block + htree split of up to two index levels, the new inode + its
 *    bitmap/descriptor, superblock, orphan list);
 *  - ext3_credits_rename(fs): two dirop + the moved directory's ".." block;
 *  - ext3_credits_truncate(fs): one truncate step (a restart point);
 *  - ext3_credits_xattr(fs): an xattr change (old + new block, bitmaps). */
#define EXT3_CRED_INODE 1
int ext3_credits_data(const struct ext3_fs *fs, uint64_t nblocks);
int ext3_credits_dirop(const struct ext3_fs *fs);
int ext3_credits_rename(const struct ext3_fs *fs);
int ext3_credits_truncate(const struct ext3_fs *fs);
int ext3_credits_xattr(const struct ext3_fs *fs);

/* Start / stop a handle on the mount's journal. -EROFS on a read-only mount,
 * after errors=remount-ro fired, or after a journal abort. */
int ext3_journal_start(struct ext3_fs *fs, int credits, struct jbd_handle **out);
int ext3_journal_stop(struct jbd_handle *h);
/* Write access / dirtying of a metadata buffer: jbd's calls, with an abort
 * of the journal (and errors= applied) on failure. */
int ext3_journal_get_write_access(struct jbd_handle *h, struct buffer_head *bh);
int ext3_journal_get_create_access(struct jbd_handle *h, struct buffer_head *bh);
int ext3_journal_get_undo_access(struct jbd_handle *h, struct buffer_head *bh);
int ext3_journal_dirty_metadata(struct jbd_handle *h, struct buffer_head *bh);
/* ext3_bread of a metadata block + write access (undo access with undo);
 * on failure nothing is held. */
int ext3_journal_bread(struct jbd_handle *h, struct ext3_fs *fs, uint64_t blk, const char *what,
		       bool undo, struct buffer_head **out);
/* A freed metadata (or data=journal data) block: revoke it and forget its
 * buffer if cached (so a stale copy is never written over a reused block). */
int ext3_journal_forget_block(struct jbd_handle *h, uint64_t block);

/* No-journal mounts (a writable mount of a filesystem without has_journal:
 * ext2, ext4 ^has_journal; docs/ext2-nojournal.md): ext3_journal_start
 * hands out a stand-in handle, as the kernel's ext4 does without a journal
 * (ext4_get_nojournal). Every ext3_journal_* call above takes it: access
 * calls do nothing, dirty_metadata marks the buffer dirty in the buffer
 * cache (its writeback thread writes it), forget_block drops a cached
 * copy's dirty state (a freed block is reusable at once: no undo, no
 * revoke). Code that used jbd's handle calls directly goes through the
 * wrappers below, which know both kinds. */
bool ext3_handle_nojournal(const struct jbd_handle *h);
/* The calling thread's open handle (jbd's, or the stand-in), else NULL. */
struct jbd_handle *ext3_handle_current(void);
/* A synchronous change (dirsync, chattr +S): jbd's stop waits for the
 * commit; the stand-in's outermost stop writes the dirty metadata and
 * flushes (ext3_fs_sync_metadata). */
void ext3_handle_set_sync(struct jbd_handle *h);
/* jbd_handle_extend / _restart; the stand-in has no credits to run out
 * of (0). */
int ext3_handle_extend(struct jbd_handle *h, int credits);
int ext3_handle_restart(struct jbd_handle *h, int credits);
/* The handle's transaction (jbd_handle_tid); 0 for the stand-in. */
uint32_t ext3_handle_tid(const struct jbd_handle *h);
/* No-journal fsync's metadata step: write every dirty buffer of the
 * mount's cache and wait (the kernel writes the inode's own buffers: this
 * writes all of them), then flush the device cache when barriers are on. */
int ext3_fs_sync_metadata(struct ext3_fs *fs);

/* Corrupt metadata found while writing: record it (s_state |= ERROR_FS,
 * s_errors policy from errors= or the superblock), then continue,
 * remount read-only (later handles -EROFS) or, for panic, abort the journal
 * and end the process with a message (exit status 70). Returns -EUCLEAN. */
int ext3_fs_error(struct ext3_fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Is the mount (still) writable? */
bool ext3_fs_writable(const struct ext3_fs *fs);
/* ext3_may_write with in->lock held (attr.c). */
int ext3_may_write_locked(const struct ext3_inode *in, bool append);
/* "now" for timestamps (wall clock, seconds + ns). */
void ext3_now(int64_t *sec, uint32_t *nsec);

/* Set up / tear down the write side of a writable mount (group locks, the
 * superblock's free counters, the allocator's reservation set, the orphan
 * list). mount.c calls init after the journal is loaded and shutdown before
 * it is destroyed. */
int ext3_write_init(struct ext3_fs *fs);
void ext3_write_shutdown(struct ext3_fs *fs);

/* ==== superblock counters and group descriptors (super_write.c) ==== */

/* Adjust group g's descriptor (free blocks, free inodes, used dirs) and the
 * superblock's free counts by the deltas, journaling the descriptor block
 * and the superblock block in h. Caller holds fs->groups_lock[g]. */
int ext3_group_adjust(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g, int32_t dblocks,
		      int32_t dinodes, int32_t ddirs);
/* ext4 (docs/ext4-csum.md, "The write side"): group g's block
 * (inode_bitmap false) or inode bitmap bm was changed in h under the group's
 * lock: note its metadata_csum checksum and clear the group's BLOCK_UNINIT /
 * INODE_UNINIT flag (descriptor checksums only). The caller's next
 * ext3_group_adjust of g (same handle, same lock) writes both. The change
 * flipped exactly bits [bit, bit + nbits) (all set or all cleared): the
 * sum is updated from those alone once it is known; nbits 0 sums the whole
 * bitmap again (any other change). */
void ext3_group_bitmap_changed(struct ext3_fs *fs, uint32_t g, bool inode_bitmap, const void *bm,
			       uint32_t bit, uint32_t nbits);
/* ialloc: inode index idx (0-based) of group g comes into use (group lock
 * held): with descriptor checksums, lower bg_itable_unused past it when it
 * was in the never-initialised part of the table (or the group was
 * INODE_UNINIT); true then (its slot on disk may hold anything). Written
 * by the next ext3_group_adjust. */
bool ext3_group_itable_use(struct ext3_fs *fs, uint32_t g, uint32_t idx);
/* Journal a change of the in-memory superblock copy's other fields
 * (s_last_orphan, s_state, s_mtime, ...): copies fs->sb into the superblock
 * buffer under fs->sb_lock. */
int ext3_super_dirty(struct jbd_handle *h, struct ext3_fs *fs);

/* ==== block allocation (balloc.c) ==== */

/* Allocate between 1 and *count blocks, contiguous, at or after goal when
 * possible (goal 0: near the inode's group), inside the inode's reservation
 * window (2.6.30's block reservation: per-inode windows so files growing at
 * the same time stay unfragmented). A block is free only if it is free in
 * the bitmap AND in the last committed bitmap (jbd undo access), so a block
 * freed by the running transaction is not reused before it commits.
 * Honours reserved blocks (s_r_blocks_count) for non-root credentials.
 * *count = blocks given; *first = the first. -ENOSPC when none. Does not
 * touch the inode (the caller adds to i_blocks). */
int ext3_new_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t goal, uint32_t *count,
		    uint64_t *first);
/* After an allocation failed with -ENOSPC, with no journal handle held:
 * true when blocks are counted free that the allocator could not take
 * (freed by a transaction that has not committed: the committed bitmap
 * still holds them) and *retries (start at 0) allows another try (3); the
 * running transaction has then been committed, so retrying can succeed
 * (ext3_should_retry_alloc). */
bool ext3_should_retry_alloc(struct ext3_fs *fs, int *retries);
/* Free count blocks starting at first (all in one group, or split here).
 * metadata: also ext3_journal_forget_block each (indirect, directory, xattr
 * and data=journal blocks). A block already free is corruption
 * (ext3_fs_error). */
int ext3_free_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t first, uint32_t count,
		     bool metadata);
/* Drop the inode's reservation window (last close of a writer, truncate;
 * also before an inode leaves the inode cache, or its window stays reserved
 * until unmount). */
void ext3_rsv_discard(struct ext3_inode *in);
/* Where a file's blocks start when nothing before them says (goal 0 of
 * ext3_new_blocks): the first block of the inode's group; with flex_bg
 * (at least 4 groups a flex group) that of its flex group's first group
 * for directories and others, of the second for regular files (past the
 * flex group's packed bitmaps and inode tables), as the kernel's
 * ext4_inode_to_goal_block. */
uint64_t ext3_inode_goal_block(const struct ext3_inode *in);
/* ext4: write group g's block bitmap now if it is BLOCK_UNINIT (built in
 * memory, journaled, the flag cleared), as the kernel does when a group's
 * first inode is allocated. Caller holds the group's lock. */
int ext3_block_bitmap_init_write(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g);
/* The reservation window set (ext3_write_init / ext3_write_shutdown). */
int ext3_balloc_init(struct ext3_fs *fs);
void ext3_balloc_destroy(struct ext3_fs *fs);

/* ==== inode allocation (ialloc.c) ==== */

/* Allocate an inode in a group chosen Orlov-style for directories (spread
 * top-level directories; children near the parent) and near the parent for
 * the rest; initialise it (mode, uid/gid from the caller, links 0 — the
 * caller sets them —, times now, a new generation, extra_isize for large
 * inodes, zeroed block map), put it in the inode cache and return it
 * referenced, locked as writer, and written (ext3_mark_inode_dirty). Updates
 * the bitmap, group counts (used dirs for directories) and superblock.
 * -ENOSPC when no inode is free. */
int ext3_new_inode(struct jbd_handle *h, struct ext3_inode *dir, uint16_t mode, uint32_t uid,
		   uint32_t gid, struct ext3_inode **out);
/* Free the inode number (bitmap, counts); the inode's blocks and xattrs are
 * already freed. Sets dtime and writes the inode. The caller holds in->lock
 * as writer and has taken the inode off the orphan list first (i_dtime is
 * the orphan link). Afterwards the in-memory inode reads as free (mode 0):
 * the number may already belong to a new inode. */
int ext3_free_inode(struct jbd_handle *h, struct ext3_inode *in);

/* ==== inodes: writing, the block map, truncate, orphans (inode_write.c,
 *      truncate.c, orphan.c) ==== */

/* Copy the in-memory inode (attributes, i_disksize, i_blocks, the block map,
 * timestamps with their extra nanoseconds) into its inode-table block and
 * journal it. Caller holds in->lock as writer. */
int ext3_mark_inode_dirty(struct jbd_handle *h, struct ext3_inode *in);
/* i_blocks (512-byte sectors; 48 bits with huge_file, kept in a.blocks
 * and a.blocks_hi): the largest count the filesystem can record, and a
 * change by a signed number of sectors (floored at 0). Caller holds
 * in->lock as writer. */
uint64_t ext3_inode_blocks_max(const struct ext3_fs *fs);
/* The inode's i_blocks now, 48 bits (caller holds in->lock). */
uint64_t ext3_inode_blocks_now(const struct ext3_inode *in);
void ext3_inode_blocks_add(struct ext3_inode *in, int64_t sectors);
/* The block map with allocation: dispatched per inode to its map kind
 * (src/extfs/inode/bmap.h; today the indirect map of ext2/ext3).
 *
 * Map logical blocks [lblk, lblk + max) like ext3_inode_map_run; with create,
 * allocate the missing ones (and indirect blocks on the way, journaled,
 * zeroed), goal = the block before in the file, else near the inode.
 * *count blocks mapped contiguously from *phys; *is_new when they were just
 * allocated. Updates i_blocks and the map cache; marks the inode dirty.
 * -EFBIG past the triple-indirect limit. Caller holds in->lock as writer
 * when create. */
int ext3_get_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk, uint32_t max,
		    bool create, uint64_t *phys, uint32_t *count, bool *is_new);
/* Logical blocks a file may have on fs (the map's bound: the indirect
 * map's triple-indirect tree and i_blocks). */
uint64_t ext3_max_blocks(const struct ext3_fs *fs);
/* Blocks of the map (not data) that mapping n contiguous logical blocks
 * may touch: the credits ext3_credits_data adds for them. */
uint64_t ext3_bmap_credits(const struct ext3_fs *fs, uint64_t n);
/* Free every block past new_size (data and indirect trees), in as many
 * transactions as it takes (the handle is restarted; the inode is on the
 * orphan list across the restarts so a crash finishes the job at the next
 * mount). Sets i_size = i_disksize = new_size. Caller holds in->lock as
 * writer and no handle. Page cache pages past new_size are dropped first
 * (page_mapping_truncate). */
int ext3_truncate(struct ext3_inode *in, uint64_t new_size);
/* Orphan list (s_last_orphan, chained through i_dtime; in memory
 * fs->orphans): add before an operation that a crash must finish (last
 * unlink of an open file, truncate, data=guarded's pending sizes); delete
 * when done. Idempotent. */
int ext3_orphan_add(struct jbd_handle *h, struct ext3_inode *in);
int ext3_orphan_del(struct jbd_handle *h, struct ext3_inode *in);
/* Take the inode off the in-memory list only, when it cannot be written
 * (the journal refuses handles) and the struct is about to go: the on-disk
 * list keeps it for the next mount. Caller holds in->lock as writer. */
void ext3_orphan_forget(struct ext3_inode *in);
/* At mount (read-write): walk s_last_orphan: truncate each inode to its
 * i_size (i_disksize), free those with no links. */
int ext3_orphan_cleanup(struct ext3_fs *fs);
/* The last reference to an inode with no links went: truncate to 0, free
 * its xattr block, free the inode, take it off the orphan list. Called by
 * the inode cache (icache.c) before it drops the inode. */
int ext3_evict_inode(struct ext3_inode *in);

/* ==== directories (dir_write.c, dx_write.c) ==== */

/* Insert name -> ino (file type from mode) into dir: the first block with
 * room (linear), or the htree leaf for the name's hash (splitting a full
 * leaf, adding an index block, growing the index to a second level; all six
 * hash versions as the superblock says), growing the directory by a block
 * when needed; a linear directory that outgrows one block becomes indexed
 * when the filesystem has dir_index. The name is not looked up first: the
 * caller has checked it is absent. Caller holds dir->lock as writer. */
int ext3_dir_add(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		 uint32_t ino, uint16_t mode);
/* Remove the entry for name (merged into the previous entry's rec_len, or
 * inode set to 0 at the start of a block). *ino gets the inode it named.
 * -ENOENT if absent. */
int ext3_dir_remove(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		    uint32_t *ino);
/* Point the existing entry `name` at ino (rename over a target). */
int ext3_dir_retarget(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		      uint32_t ino, uint16_t mode);
/* Write a new directory's first block ("." and ".."); sets its size. */
int ext3_dir_make(struct jbd_handle *h, struct ext3_inode *dir, uint32_t parent_ino);
/* Change ".." of a directory being moved. */
int ext3_dir_set_parent(struct jbd_handle *h, struct ext3_inode *dir, uint32_t parent_ino);
/* Only "." and ".." (and empty blocks)? -ENOTEMPTY-style answer in *empty. */
int ext3_dir_is_empty(struct ext3_inode *dir, bool *empty);

/* ==== extended attributes (xattr_write.c) ==== */

/* Set (value != NULL) or remove (value == NULL) attribute name (with its
 * namespace prefix) on in: in the inode body when it fits (large inodes),
 * else the xattr block (shared blocks are copied on write: refcount). flags:
 * NOSTALL_XATTR_CREATE / _REPLACE semantics (-EEXIST / -ENODATA).
 * -ENOSPC when it fits nowhere, -ERANGE for a name over 255 bytes,
 * -EOPNOTSUPP for an unknown namespace. Caller holds in->lock as writer. */
int ext3_xattr_set(struct jbd_handle *h, struct ext3_inode *in, const char *name,
		   const void *value, size_t size, unsigned flags);
/* Drop the inode's reference on its xattr block (at inode free). */
int ext3_xattr_drop(struct jbd_handle *h, struct ext3_inode *in);

/* ==== file data (file_data.c; the api-facing calls are in ext3_fsops.h) ==== */

/* The mount's page cache for file data (writable mounts): created at mount
 * after ext3_write_init, destroyed at unmount before the journal (every
 * mapping first). */
int ext3_data_init(struct ext3_fs *fs);
void ext3_data_shutdown(struct ext3_fs *fs);
/* Before an inode leaves the inode cache (any inode, writable mounts): write
 * back and drop its pages, release its jbd_inode. */
void ext3_data_evict(struct ext3_inode *in);
/* Start writeback of the inode's dirty data without waiting (rename over a
 * file when the data-mode table asks, replace_flush: the 2.6.30 safeguard;
 * the inode cache's spared dirty victims). 0 or -ENOMEM. */
int ext3_data_flush_start(struct ext3_inode *in);
/* Record that h's transaction changes in (datasync: a change fdatasync must
 * commit too: size, block map); fsync commits the recorded transaction.
 * Caller holds in->lock as writer. ext3_mark_inode_dirty should call it
 * (datasync false) so every inode change is seen by fsync. */
void ext3_inode_note_tid(struct jbd_handle *h, struct ext3_inode *in, bool datasync);

/* What differs between the data modes (truncate's and the inode cache's
 * hooks included): extfs/core/data_ops.h. */

#endif
