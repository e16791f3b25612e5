/* Private to src/extfs: the layout of struct ext3_fs and the internal
 * interfaces between its files. Others use ext3.h.
 *
 * Layers (a file only calls into its own layer or the ones below; nothing
 * calls in a circle):
 *   core       geom.c (pure geometry), core.c (ext3_bread, inode location)
 *   metadata   super.c (superblock + descriptors), inode.c (inodes, block
 *              map), dir.c, path.c, xattr.c, file_read.c
 *   mount      mount_opts.c, mount.c, ext3_journal.c
 *   mkfs       mkfs_layout.c, mkfs_write.c: a leaf on top of geom.c; nothing
 *              in src/extfs uses it. */
#ifndef NOSTALL_EXT3_EXT3_INT_H
#define NOSTALL_EXT3_EXT3_INT_H

#include "extfs/core/ext3.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/format/geom.h"

#include <pthread.h>

struct page_cache;
struct page_mapping;
struct jbd_inode;
struct ext3_balloc;
struct ext3_data;
struct ext3_data_ops;
struct ext3_nj;
#include <stdatomic.h>

#include "util/lockdep.h"

/* The in-memory inode (ext3.h, "inodes"). */
struct ext3_inode {
	struct ext3_fs *fs;
	uint32_t ino;               /* immutable */
	/* The inode's own data-mode table (extfs/core/data_ops.h, ext3_dops);
	 * NULL: the mount's (fs->dops), as every inode today. */
	const struct ext3_data_ops *dops;
	/* Inode cache linkage: protected by fs->icache.lock. */
	unsigned refs;
	struct ext3_inode *hnext;   /* hash chain */
	struct ext3_inode *lru_prev, *lru_next; /* unreferenced inodes only */
	bool freeing;               /* being read or evicted: ext3_iget waits */
	/* in->lock (read-write) protects everything from here to raw[]: readers
	 * hold it as reader for a whole read function; the write path takes it as
	 * writer to change a field, i_size or the block map. */
	pthread_rwlock_t lock;
	struct ext3_inode_attr a;   /* decoded on-disk fields (a.size = i_disksize as read) */
	uint64_t i_size;            /* in-memory size: what reads see */
	uint64_t i_disksize;        /* size in the on-disk inode; = i_size until data=guarded
				     * moves it only at data I/O completion */
	/* map_lock protects map, the inode's block-map cache (taken under lock;
	 * src/extfs/inode/bmap.h): allocated by the map when it first needs it
	 * (the indirect map: a sequential reader past the 12 direct blocks),
	 * freed when the inode goes unreferenced (icache.c), so an unreferenced
	 * cached inode costs no 4 KiB copy of a pointer block. NULL: none (the
	 * map then walks its metadata). */
	pthread_mutex_t map_lock;
	struct ext3_map_cache *map;
	/* metadata_csum: the inode's checksum seed (crc32c of the fs seed, ino
	 * and generation) and the generation it is for, generation << 32 |
	 * seed, 0 when not known (ext4_inode_csum_seed; relaxed atomic: any
	 * reader may fill it, all with the same value). */
	_Atomic uint64_t csum_seed;
	/* Dirty data blocks/pages not yet written (atomic; 0 today). */
	atomic_uint_least64_t dirty_data;
	/* ---- the write path (src/extfs/core/write.h, docs/write-path.md) ---- */
	/* balloc.c: reservation window and allocation goal; changed under
	 * in->lock as writer (the fs-wide window set has balloc's own lock). */
	struct ext3_rsv {
		uint64_t start, end;        /* window [start, end]; end < start = none */
		uint32_t goal_size;         /* blocks wanted (grows as the file does) */
		uint64_t last_lblk, last_phys; /* last block mapped: the next goal */
		void *node;                 /* balloc.c's link in the fs-wide set */
	} rsv;
	/* orphan.c: the in-memory orphan list (fs->orphan_lock), doubly
	 * linked so that a deletion finds its predecessor at once. */
	struct ext3_inode *orphan_next, *orphan_prev;
	bool on_orphan;
	/* file_data.c: the page mapping of a regular file's data and its
	 * ordered-data handle, created lazily under in->lock as writer and freed
	 * by ext3_data_evict; writers and trunc_flush under in->lock. */
	struct page_mapping *mapping;
	struct jbd_inode *jinode;
	unsigned writers;           /* open for writing (ext3_file_open) */
	bool trunc_flush;           /* truncated to 0 by a writer: flush at release */
	/* The transactions that last changed the inode, for fsync (any change)
	 * and fdatasync (size, block map): ext3_inode_note_tid under in->lock
	 * as writer; has_* false = none since the inode was read. */
	uint32_t sync_tid, datasync_tid;
	bool has_sync_tid, has_datasync_tid;
	uint16_t raw_size;          /* bytes in raw (= inode size) */
	_Alignas(8) uint8_t raw[];  /* the on-disk inode as read (in-inode xattrs); aligned
				     * for struct ext3_disk_inode access */
};

/* The inode cache (icache.c): a hash by inode number and an LRU of
 * unreferenced inodes. lock is a leaf lock: held for list and count
 * changes only, never across I/O or while taking another lock. */
struct ext3_icache {
	pthread_mutex_t lock;
	pthread_cond_t freed;       /* an inode's eviction finished (freeing cleared) */
	struct ext3_inode **hash;   /* [nbuckets] */
	unsigned nbuckets;
	struct ext3_inode *lru_head, *lru_tail; /* most recently put at head */
	unsigned cached, unused, max_unused;
	uint64_t hits, misses, evictions, spared;
	/* ext3_fs_set_unlinked_keeper (under lock): offered the last
	 * reference of an unlinked inode. */
	bool (*keep)(void *arg, struct ext3_inode *in);
	void *keep_arg;
};

/* Everything below is set by ext3_fs_mount() and read-only afterwards (no
 * lock needed to read it). */
struct ext3_fs {
	struct dev *dev;            /* not owned */
	bool dev_locked;            /* the mount holds dev_lock on dev (ext3_fs_unmount lets go) */
	struct blk_queue *q;        /* owned */
	struct buf_cache *cache;    /* owned */
	struct ext3_super_block sb; /* on-disk copy (little-endian) */
	uint32_t sb_block;          /* filesystem block of the superblock used */
	uint32_t rev;
	struct ext3_geom g;         /* group geometry (geom.h) */
	uint64_t overhead;          /* statfs overhead (ext3_geom_overhead) */
	uint32_t first_ino;
	uint32_t compat, incompat, ro_compat;
	bool needs_recovery;
	bool unknown_ro_compat;
	bool want_writable;         /* EXT3_MOUNT_JOURNAL asked for (set before the
				     * descriptors are read: their checks differ) */
	bool has_filetype;
	uint32_t csum_seed;         /* metadata_csum: crc32c seed (core/csum.c) */
	bool unsigned_hash;
	bool noload;
	uint32_t hash_seed[4];
	uint8_t def_hash_version;
	char ro_reason[256];
	struct ext3_group_desc *gd; /* [groups], host byte order; a writable mount changes
				     * the counts, bg_flags and bg_itable_unused under the
				     * group's lock (relaxed atomics: read racily) */
	uint32_t *bm_csum;          /* [2 * groups]: metadata_csum's block (2g) and inode
				     * (2g + 1) bitmap checksums, whole (lo | hi << 16);
				     * changed under the group's lock (super_write.c) */
	bool *bm_csum_live;         /* [2 * groups]: bm_csum[i] is the sum of the bitmap
				     * in memory (computed since mount), so a change of a
				     * few bits updates it (crc32c_zeros) instead of
				     * summing the block again; group's lock */
	struct ext3_mount_opts opts; /* in effect (data_mode resolved, blk_opts NULL) */
	const struct ext3_data_ops *dops; /* the data mode's table, chosen with the mode
					   * (super/mount.c; core/data_ops.h) */
	/* the credentials of calls from threads without their own
	 * (extfs/inode/cred.h); set by the API after mount */
	struct ext3_creds cred_default;
	/* search permission on each directory a path walk passes
	 * (ext3_path_lookup): the API's check (xattr/acl.c), NULL = none */
	int (*may_search)(struct ext3_inode *dir);
	struct ext3_journal *jmap;  /* EXT3_MOUNT_JOURNAL: the journal's block map */
	struct jbd_journal *journal; /* EXT3_MOUNT_JOURNAL: the loaded journal */
	struct ext3_icache icache;  /* internally locked */
	/* ---- writable mounts (src/extfs/core/write.h; set up by ext3_write_init) ---- */
	bool writable;              /* EXT3_MOUNT_JOURNAL mount */
	/* A writable mount of a filesystem without a journal (ext2): handles
	 * are trans.c's stand-in (write.h, "No-journal mounts"); s_state
	 * lacks VALID_FS while mounted and gets mount_state (the state read
	 * at mount) back at a clean unmount (super/mount.c). */
	bool nojournal;
	uint16_t mount_state;
	struct ext3_nj *nj;         /* nojournal.c: the writers' lock, the flusher */
	atomic_bool ro_forced;      /* errors=remount-ro fired or the journal aborted */
	pthread_mutex_t *group_locks; /* [groups]: a group's bitmaps and descriptor */
	pthread_mutex_t sb_lock;    /* sb's counters, s_last_orphan, s_state; a leaf */
	uint64_t free_blocks, free_inodes; /* live counts (sb_lock) */
	struct ext3_balloc *balloc; /* balloc.c: the reservation window set */
	pthread_mutex_t orphan_lock;
	struct ext3_inode *orphans; /* in-memory orphan list (orphan_next) */
	pthread_mutex_t rename_lock; /* cross-directory renames */
	struct page_cache *pcache;  /* file data (file_data.c) */
	struct ext3_data *data;     /* file_data.c's state (its own locks) */
};

/* ---- the core: below everything else in src/extfs (core.c) ---- */

/* Where inode ino lives: inode-table block and byte offset in it. ino must
 * be in 1..inodes_count. */
void ext3_fs_inode_loc(const struct ext3_fs *fs, uint32_t ino, uint64_t *blk, unsigned *off);

/* ---- superblock and descriptors (super.c, used by mount.c) ---- */

/* Read the superblock (the primary, or the backup at block sb_block),
 * check it and the device size, fill fs's geometry and feature fields. */
int ext3_super_load(struct ext3_fs *fs, uint64_t sb_block);
/* Read and check the group descriptor table (needs fs->cache). */
int ext3_gdt_load(struct ext3_fs *fs);

/* ---- inodes (inode.c, icache.c) ---- */

/* Read inode ino from the inode table into out (allocated with room for
 * raw[inode_size]) and check it. */
int ext3_inode_load(struct ext3_fs *fs, uint32_t ino, struct ext3_inode *out);
int ext3_icache_init(struct ext3_fs *fs);
/* Frees every cached inode (all must have been put). */
void ext3_icache_destroy(struct ext3_fs *fs);

/* Forget the inode's cached pointer block (after a change to its block map;
 * takes map_lock). */
void ext3_inode_map_invalidate(struct ext3_inode *in);

/* Unlocked variants for callers that hold in->lock (as reader or writer). */
int ext3_inode_bmap_locked(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical,
			   uint64_t *physical);
ssize_t ext3_inode_pread_locked(struct ext3_fs *fs, const struct ext3_inode *in, void *buf,
				size_t len, uint64_t off);
bool ext3_inode_fast_symlink_locked(const struct ext3_fs *fs, const struct ext3_inode *in);

/* ---- lock-order annotations (util/lockdep.h; the order: write.h) ----
 * Classes: directory and non-directory inode locks (two of one class in
 * inode-number order), fs->rename_lock, the group locks (ascending group),
 * fs->sb_lock; the journal handle is jbd's (jbd_lockdep_handle). Defined
 * in icache.c; nothing of this exists without -DNOSTALL_LOCKDEP.
 *
 * An inode's class is its type, read once the lock is held (a.mode is
 * written under the writer lock): the check runs right after the wait,
 * which still records every order the run takes. */
extern struct lockdep_class ext3_lockdep_dir_inode, ext3_lockdep_inode, ext3_lockdep_rename,
	ext3_lockdep_group, ext3_lockdep_sb;
#define EXT3_INODE_LOCKDEP_CLASS(in) \
	(((in)->a.mode & EXT3_S_IFMT) == EXT3_S_IFDIR ? &ext3_lockdep_dir_inode : &ext3_lockdep_inode)

static inline void ext3_inode_wrlock(struct ext3_inode *in)
{
	pthread_rwlock_wrlock(&in->lock);
	lockdep_acquire(EXT3_INODE_LOCKDEP_CLASS(in), &in->lock, in->ino);
}

static inline void ext3_inode_rdlock(struct ext3_inode *in)
{
	pthread_rwlock_rdlock(&in->lock);
	lockdep_acquire(EXT3_INODE_LOCKDEP_CLASS(in), &in->lock, in->ino);
}

/* 0 when taken (as pthread_rwlock_trywrlock). */
static inline int ext3_inode_trywrlock(struct ext3_inode *in)
{
	int rc = pthread_rwlock_trywrlock(&in->lock);
	if (!rc)
		lockdep_acquire_try(EXT3_INODE_LOCKDEP_CLASS(in), &in->lock, in->ino);
	return rc;
}

static inline void ext3_inode_unlock(struct ext3_inode *in)
{
	lockdep_release(&in->lock);
	pthread_rwlock_unlock(&in->lock);
}

/* fs->group_locks[g]: checked before the wait (order: the group number). */
static inline void ext3_group_lock(struct ext3_fs *fs, uint32_t g)
{
	lockdep_acquire(&ext3_lockdep_group, &fs->group_locks[g], g);
	pthread_mutex_lock(&fs->group_locks[g]);
}

static inline void ext3_group_unlock(struct ext3_fs *fs, uint32_t g)
{
	lockdep_release(&fs->group_locks[g]);
	pthread_mutex_unlock(&fs->group_locks[g]);
}

static inline void ext3_sb_lock(struct ext3_fs *fs)
{
	lockdep_acquire(&ext3_lockdep_sb, &fs->sb_lock, 0);
	pthread_mutex_lock(&fs->sb_lock);
}

static inline void ext3_sb_unlock(struct ext3_fs *fs)
{
	lockdep_release(&fs->sb_lock);
	pthread_mutex_unlock(&fs->sb_lock);
}

#endif
