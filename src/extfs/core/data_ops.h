/* Data-mode operations (docs/write-data.md, "Data-mode ops tables"): what
 * differs between data=journal, ordered, writeback and guarded, as one table
 * per mode - Linux's per-inode address-space operations (ext3_set_aops:
 * journalled / ordered / writeback). The tables are defined in the data
 * room beside their mode's code (extfs/data/data_journal.c, data_ordered.c,
 * data_writeback.c, guarded.c; extfs/data/data_modes.h names them); the
 * mount chooses one where it resolves the mode (super/mount.c,
 * data_mode_resolve) and nothing else asks which mode is in force: the
 * write path, truncate, the inode cache, rename and eviction call through
 * the table. A NULL entry does nothing (the wrappers below).
 *
 * Per inode: in->dops overrides the mount's table (fs->dops) when set; NULL
 * (every inode today) follows the mount. This is the room for a per-inode
 * choice such as chattr +j (Linux's ext3_change_inode_journal_flag: write
 * back and wait for the pages, then switch the aops under the inode lock);
 * such a switch would set in->dops under in->lock as writer once the
 * inode's pages and ordered data are out. The mount keeps its own table
 * for the mount-wide entries (init, shutdown, sync). Inodes read before the
 * mode is resolved (the root and journal inodes at mount) follow the mount
 * once it is, which a copy taken at inode setup would not.
 *
 * Locking: each entry states what its caller holds; the tables are
 * constant. */
#ifndef NOSTALL_EXTFS_CORE_DATA_OPS_H
#define NOSTALL_EXTFS_CORE_DATA_OPS_H

#include "extfs/core/ext3_int.h"

#include <sys/types.h>

struct jbd_handle;

struct ext3_data_ops {
	const char *name;         /* the data= word: "journal", "ordered", ... */
	/* Data blocks are journaled through the buffer cache (metadata to
	 * jbd: revoked when freed) and never go through the page cache. */
	bool journal_data;
	/* i_disksize moves only over completed data I/O (catch_up), not
	 * with i_size. */
	bool disksize_at_io;
	/* 2.6.30's replace safeguards: a writer's close after a truncate to
	 * 0, and a rename over a file, start the file's writeback. */
	bool replace_flush;
	/* Journal credits a write chunk (or a size change) needs on top of
	 * its own for the mode's bookkeeping (write_end, catch_up). */
	int write_credits;

	/* ---- the mount (fs->dops; file_data.c) ---- */
	/* After the page cache is up (ext3_data_init): the mode's own state
	 * (ext3_data_set_mode_state). */
	int (*init)(struct ext3_fs *fs);
	/* After every inode was evicted (ext3_data_shutdown). */
	void (*shutdown)(struct ext3_fs *fs);
	/* sync(2), after every mapping was written and waited. */
	int (*sync)(struct ext3_fs *fs);

	/* ---- writes (file_write.c; in->lock as writer) ---- */
	/* One chunk of a write of another kind than the page cache's
	 * (data=journal; NULL: through the page cache, below). Returns bytes
	 * written or a negative errno, as ext3_data_write_chunk_paged. */
	ssize_t (*write_chunk)(struct ext3_inode *in, const uint8_t *buf, size_t len, uint64_t off,
			       bool first, unsigned flags);
	/* A shrink to size inside a block: the block's tail zeroed its way
	 * (NULL: the page cache's truncate does it). No handle held. */
	int (*zero_tail)(struct ext3_inode *in, uint64_t size);
	/* Page-cache chunks, in the chunk's handle: write_begin before the
	 * pages are written; write_order after they were, before i_size
	 * moves (how the data is filed: ordered files the jbd_inode);
	 * write_end after i_size moved, before the inode is written - also
	 * for a chunk that wrote nothing (a block may have been allocated). */
	int (*write_begin)(struct ext3_inode *in, uint64_t off, uint64_t len);
	int (*write_order)(struct jbd_handle *h, struct ext3_inode *in);
	int (*write_end)(struct jbd_handle *h, struct ext3_inode *in);
	/* After a size change in h (a growing setsize): bring i_disksize up as
	 * far as the mode allows; *changed: the inode needs writing. */
	int (*catch_up)(struct jbd_handle *h, struct ext3_inode *in, bool *changed);

	/* ---- the page mapping's ops (file_data.c) ---- */
	/* The map op allocated the block of page index (the writer: in->lock
	 * as writer, the page locked). */
	int (*block_new)(struct ext3_inode *in, uint64_t index);
	/* Pages [first, last] were written (err 0) or not: the page cache's
	 * io_done worker, no lock held, must not block. NULL: the mapping has
	 * no io_done op. */
	void (*io_done)(struct ext3_inode *in, uint64_t first, uint64_t last, int err);
	/* The commit's wait op for in's ordered data, after its runs ended
	 * (commit thread, no lock): an extra check of the mode's. */
	int (*data_check)(struct ext3_inode *in);

	/* ---- fsync (file_data.c; no lock held) ---- */
	/* The data inside the commit fsync forces (in has a page mapping and
	 * a transaction tid to commit): 1 when done that way, 0 when the
	 * caller must take the plain way, or a negative errno. NULL: never. */
	int (*fsync_in_commit)(struct ext3_inode *in, uint32_t tid);
	/* The plain way, after the pages were written and waited: the mode's
	 * own step before the commit (guarded: the completions, the size). */
	int (*fsync_wait)(struct ext3_inode *in);

	/* ---- truncate (inode/truncate.c; in->lock as writer, no handle) ---- */
	/* Around the page cache's truncate of an inode with a mapping: begin
	 * may refuse (a negative errno); end after the pages went. */
	int (*truncate_begin)(struct ext3_inode *in, uint64_t new_size);
	void (*truncate_end)(struct ext3_inode *in, uint64_t new_size);

	/* ---- the inode cache (inode/icache.c) and eviction ---- */
	/* Nothing of in's data is on its way in the mode's own bookkeeping
	 * (in->lock held): its eviction would not have to wait for the mode.
	 * NULL: always settled. */
	bool (*settled)(struct ext3_inode *in);
	/* The inode cache kept an unsettled victim (victim_spare): hand it
	 * back to whatever the mode left its work to. */
	void (*requeue)(struct ext3_inode *in);
	/* Before the inode's mapping goes (ext3_data_evict; pages written, no
	 * lock held): the mode's last word on it. */
	void (*evict)(struct ext3_inode *in);
};

/* The table in force for in (its own, else the mount's). */
static inline const struct ext3_data_ops *ext3_dops(const struct ext3_inode *in)
{
	return in->dops ? in->dops : in->fs->dops;
}

/* Is in's file data journaled as metadata (data=journal, or the inode's
 * own table says so)? */
static inline bool ext3_dops_journal_data(const struct ext3_inode *in)
{
	return ext3_dops(in)->journal_data;
}

static inline bool ext3_dops_replace_flush(const struct ext3_inode *in)
{
	return ext3_dops(in)->replace_flush;
}

static inline int ext3_dops_truncate_begin(struct ext3_inode *in, uint64_t new_size)
{
	const struct ext3_data_ops *ops = ext3_dops(in);
	return ops->truncate_begin ? ops->truncate_begin(in, new_size) : 0;
}

static inline void ext3_dops_truncate_end(struct ext3_inode *in, uint64_t new_size)
{
	const struct ext3_data_ops *ops = ext3_dops(in);
	if (ops->truncate_end)
		ops->truncate_end(in, new_size);
}

static inline bool ext3_dops_settled(struct ext3_inode *in)
{
	const struct ext3_data_ops *ops = ext3_dops(in);
	return ops->settled ? ops->settled(in) : true;
}

static inline void ext3_dops_requeue(struct ext3_inode *in)
{
	const struct ext3_data_ops *ops = ext3_dops(in);
	if (ops->requeue)
		ops->requeue(in);
}

#endif
