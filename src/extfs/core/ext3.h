/* ext3's interface for src/api, the CLI (`nostall recover`) and tests
 * (docs/ext3-read-path.md). src/jbd does not use it: ext3 uses jbd, not the
 * other way round (it hands jbd a block-map callback for the journal inode).
 *
 * struct ext3_fs and struct ext3_inode are opaque outside src/extfs: other
 * layers use the accessors and the functions below.
 *
 * Threads and locking: after ext3_fs_mount() returns, the in-memory
 * superblock copy, the geometry and the group descriptor table are
 * immutable (the mount is read-only), so every function here may be called
 * concurrently without a filesystem lock; block access goes through the
 * buffer cache, which is thread-safe. Inodes are shared and carry their own
 * locks (see "inodes" below).
 *
 * Errors: negative errno with an err_set() message. Corrupt metadata is
 * -EUCLEAN ("ext3: inode 12: indirect block 99999 past the end (8192 blocks)"),
 * device errors -EIO.
 */
#ifndef NOSTALL_EXT3_EXT3_H
#define NOSTALL_EXT3_EXT3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "extfs/format/ext3_format.h"
#include "jbd/jbd.h"
#include "page/page.h"

struct dev;
struct blk_queue;
struct buf_cache;
struct buffer_head;
struct ext3_fs;

/* ---- mount (mount.c; options: mount_opts.c) ---- */

/* Data modes (data=). 0 in ext3_mount_opts = not given: the superblock's
 * default mount options (s_default_mount_opts & 0x60: 0x20 journal,
 * 0x40 ordered, 0x60 writeback) decide, else EXT3_DATA_MODE_DEFAULT.
 * Without the journal's revoke feature (a version 1 journal superblock)
 * only journal mode works: asking for another one is an error, a default
 * falls back to journal (as Linux does). */
enum {
	EXT3_DATA_JOURNAL = 1,
	EXT3_DATA_ORDERED = 2,
	EXT3_DATA_WRITEBACK = 3,
	EXT3_DATA_GUARDED = 4,
};
#ifndef EXT3_DATA_MODE_DEFAULT
#define EXT3_DATA_MODE_DEFAULT EXT3_DATA_GUARDED /* a build setting (-D); issue 10 */
#endif
enum { EXT3_DATA_ERR_IGNORE = 1, EXT3_DATA_ERR_ABORT = 2 };
enum { EXT3_ATIME_RELATIME = 1, EXT3_ATIME_NOATIME = 2, EXT3_ATIME_STRICT = 3 };

/* The floor under the page cache's dirty limit (dirty_min=): 2.6.30's 20 %
 * of the default 64 MiB cache is 12.8 MiB, and with the flusher holding
 * ~7 MiB back a streaming writer kept ~6 MiB in flight, a few ms of a GB/s
 * device, which ran dry between passes (docs/page-cache.md, "A floor under
 * the dirty limit"). Caches from 120 MiB up are above it. */
#define EXT3_DIRTY_MIN_DEFAULT (24ull << 20)

/* Parsed mount options. Fields the mount does not act on yet (the write
 * side) are validated and stored for the write path. */
struct ext3_mount_opts {
	bool ro;                    /* "ro" (the caller decides what it means) */
	bool noload;                /* ignore the journal (no replay) */
	bool fakeroot;              /* calls without their own credentials act as root
				     * (uid 0, gid 0, every capability: extfs/inode/cred.h) */
	uint64_t sb_block;          /* 0 = primary superblock; else a backup's block number */
	size_t cache_bytes;         /* 0 = buffer cache default */
	int readahead_blocks;       /* buffer cache readahead; -1 = default */
	size_t file_readahead;      /* max readahead window per open file, 0 = off */
	char *blk_opts;             /* block queue tunables and presets (owned), or NULL */
	int data_mode;              /* EXT3_DATA_*, 0 = default (see above) */
	int era_data_mode;          /* an era preset's default (ext3_era_data_mode), 0 = none:
				     * takes the place of the build's default */
	struct jbd_config jcfg;     /* commit=, barrier=, nobarrier, journal_ioprio= */
	int errors;                 /* EXT3_ERRORS_* (ext3_format.h), 0 = the superblock's */
	int data_err;               /* EXT3_DATA_ERR_*, 0 = ignore */
	int atime;                  /* EXT3_ATIME_*, 0 = relatime */
	/* fsync_in_commit=0|1: fsync files the file's data into the commit
	 * it forces (file_data.c fsync_data_in_commit; nostall's, not in
	 * 2.6.30), default 1; an era preset turns it off unless given: the
	 * 2.6.30-rc1 regression is the fsync thread's own WRITE_SYNC data
	 * write, after which CFQ idled while kjournald's commit waited. */
	bool fsync_in_commit;
	bool fsync_in_commit_set;
	/* The page cache's tunables (docs/page-cache.md), checked against
	 * page_tunables()' ranges: dirty_ratio= and dirty_background_ratio=
	 * (% of cache=; 2.6.30's 20 and 10) and dirty_min= (dirty_min_kb, a
	 * floor under the dirty limit; nostall's, not in 2.6.30: default
	 * EXT3_DIRTY_MIN_DEFAULT, an era preset turns it off unless given).
	 * cache_bytes is not used: the mount sizes the cache from cache=. */
	struct page_params page;
	bool dirty_min_set;
};
void ext3_mount_opts_init(struct ext3_mount_opts *o);
/* Add "name=value,..." (Linux's names) to o. -EINVAL with a message naming
 * the option for an unknown name, a bad value or a conflict with an earlier
 * option; -ENOMEM. */
int ext3_mount_opts_parse(struct ext3_mount_opts *o, const char *opts);
void ext3_mount_opts_release(struct ext3_mount_opts *o);
const char *ext3_data_mode_name(int mode);
/* The default data mode of era preset `preset` (blk_preset_is_era) when
 * neither data= nor the superblock's default mount options choose one:
 * the kernel's CONFIG_EXT3_DEFAULTS_TO_ORDERED. 2.6.29: ordered; 2.6.30-rc1
 * and 2.6.30: writeback (Linus made it a Kconfig option defaulting to
 * writeback just before 2.6.30-rc1, seed 000). 0 for anything else (the
 * build's EXT3_DATA_MODE_DEFAULT applies). */
int ext3_era_data_mode(const char *preset);

/* Mount flags. Without EXT3_MOUNT_JOURNAL the mount is read-only and never
 * writes, except that a journal needing recovery is replayed first (as the
 * kernel does even for a read-only mount) unless noload or sb= is given. */
#define EXT3_MOUNT_JOURNAL 0x1u /* writable: load the journal for writing
				 * (jbd_journal_load; needs_recovery is set on disk
				 * while mounted), or on a filesystem without one
				 * (ext2) the no-journal stand-in (core/nojournal.c;
				 * s_state not clean while mounted) */

/* Mount dev (not owned): open the block queue (o->blk_opts) and the buffer
 * cache, validate the superblock and the descriptor table (see
 * docs/ext3-read-path.md, "Mount checks"), replay the journal if needed,
 * resolve the data mode. With EXT3_MOUNT_JOURNAL, ro, noload and sb= are
 * conflicts (-EINVAL). o may be NULL (defaults); it is copied (blk_opts is
 * not kept). */
int ext3_fs_mount(struct dev *dev, const struct ext3_mount_opts *o, unsigned flags,
		  struct ext3_fs **out);
/* Unmount. With a journal: jbd_journal_destroy (commit, checkpoint, empty
 * log), write back the cache, then clear needs_recovery; a journal error is
 * returned and needs_recovery stays set (the next mount replays). Everything
 * is freed in any case. NULL: 0. */
int ext3_fs_unmount(struct ext3_fs *fs);

/* The options in effect (data_mode resolved; blk_opts NULL). */
const struct ext3_mount_opts *ext3_fs_opts(const struct ext3_fs *fs);
/* The data mode in force, by name ("journal", "ordered", "writeback",
 * "guarded"): its ops table's (core/data_ops.h). */
const char *ext3_fs_data_mode(const struct ext3_fs *fs);
/* The journal of an EXT3_MOUNT_JOURNAL mount, else NULL. */
struct jbd_journal *ext3_fs_journal(struct ext3_fs *fs);
/* Where the journal is (EXT3_MOUNT_JOURNAL mounts; valid while mounted).
 * -ENOENT otherwise. */
int ext3_fs_journal_location(struct ext3_fs *fs, struct jbd_location *loc);
/* statfs overhead (geom.h's ext3_geom_overhead), computed at mount. */
uint64_t ext3_fs_overhead(const struct ext3_fs *fs);
/* Does group g hold a superblock backup (all groups without sparse_super)? */
bool ext3_fs_group_has_super(const struct ext3_fs *fs, uint32_t g);
/* First and last block of group g. */
void ext3_fs_group_range(const struct ext3_fs *fs, uint32_t g, uint64_t *first, uint64_t *last);

/* Accessors. */
const struct ext3_super_block *ext3_fs_super(const struct ext3_fs *fs); /* on-disk (LE) copy */
uint32_t ext3_fs_block_size(const struct ext3_fs *fs);
uint32_t ext3_fs_blocks_count(const struct ext3_fs *fs);
uint32_t ext3_fs_inodes_count(const struct ext3_fs *fs);
uint32_t ext3_fs_groups(const struct ext3_fs *fs);
uint32_t ext3_fs_desc_blocks(const struct ext3_fs *fs);
uint32_t ext3_fs_inode_size(const struct ext3_fs *fs);
uint32_t ext3_fs_sb_block(const struct ext3_fs *fs);
/* Group descriptor g (host byte order), NULL if g is out of range. */
const struct ext3_group_desc *ext3_fs_group_desc(const struct ext3_fs *fs, uint32_t g);
struct buf_cache *ext3_fs_cache(struct ext3_fs *fs);
struct blk_queue *ext3_fs_queue(struct ext3_fs *fs);
struct dev *ext3_fs_dev(struct ext3_fs *fs);
bool ext3_fs_needs_recovery(const struct ext3_fs *fs);
bool ext3_fs_unknown_ro_compat(const struct ext3_fs *fs);
bool ext3_fs_unsigned_hash(const struct ext3_fs *fs);
bool ext3_fs_has_filetype(const struct ext3_fs *fs);

/* Read filesystem block `blk` (checked against blocks_count: -EUCLEAN with
 * `what` in the message when past the end). `what` may be NULL. */
int ext3_bread(struct ext3_fs *fs, uint64_t blk, const char *what, struct buffer_head **out);

/* Feature names and what nostall does with each: extfs/format/features.h. */

/* ---- inodes: the shared in-memory inode (icache.c, inode.c) ----
 *
 * One struct ext3_inode per inode number and mount, shared and reference
 * counted: ext3_iget finds it in the inode cache (hash by number) or reads
 * it from the inode table, ext3_iput drops the reference; unreferenced
 * inodes stay cached (LRU) up to a bound and are evicted beyond it. The
 * struct is opaque outside src/extfs; use the accessors.
 *
 * Locking (see docs/ext3-read-path.md, "Locking"): each inode has a
 * read-write lock over its fields (the decoded on-disk fields, i_size,
 * i_disksize, the block map). Every function below that takes a struct
 * ext3_inode holds that lock as reader for its whole call, I/O included;
 * the write path will take it as writer to change fields or the block map.
 * Callbacks (ext3_dir_iterate) run with it held as reader: they must not
 * take it as writer. The per-inode block-map cache has its own mutex, taken
 * under the inode lock. Order: API handle mutex -> reader (ext3_fread)
 * mutex -> inode lock -> map-cache mutex -> buffer cache / block queue.
 * The inode cache's mutex is a leaf (never held while taking another).
 *
 * Every inode must be put before ext3_fs_unmount. */
struct ext3_inode;

/* A snapshot of an inode's decoded fields (ext3_inode_attr_get). */
struct ext3_inode_attr {
	uint32_t ino;
	uint16_t mode;
	uint16_t links;
	uint32_t uid, gid;
	uint64_t size;         /* i_size (in-memory size; regular files use i_size_high too) */
	uint32_t blocks;       /* i_blocks (low 32 bits), 512-byte units; the write path's
				* count (ext3 filesystems: huge_file is read-only) */
	uint16_t blocks_hi;    /* huge_file: osd2.l_i_blocks_high, else 0 (read only) */
	uint32_t flags;
	uint32_t dtime;
	uint32_t generation;
	uint32_t file_acl;
	uint32_t block[EXT3_N_BLOCKS]; /* host order */
	int64_t atime, mtime, ctime, crtime;
	uint32_t atime_ns, mtime_ns, ctime_ns, crtime_ns;
	uint16_t extra_isize;  /* 0 for 128-byte inodes */
};

/* Get inode ino (1..inodes_count; -EINVAL otherwise) with a reference.
 * Reading it checks it (extra_isize within the inode, a sane size for
 * directories and symlinks; -EUCLEAN). A free inode is returned as it is
 * (links 0): callers decide (ext3_inode_in_use). */
int ext3_iget(struct ext3_fs *fs, uint32_t ino, struct ext3_inode **out);
/* Drop a reference (NULL: no-op). */
void ext3_iput(struct ext3_inode *in);
/* Another reference to an inode the caller holds one to. */
struct ext3_inode *ext3_igrab(struct ext3_inode *in);
/* A reference to a cached inode the caller holds none to but knows is still
 * in memory (its eviction cannot have finished): NULL while it is being
 * evicted or read; an unreferenced inode leaves the LRU. Its final
 * ext3_iput frees it if unlinked. */
struct ext3_inode *ext3_igrab_live(struct ext3_inode *in);

uint32_t ext3_inode_ino(const struct ext3_inode *in);
void ext3_inode_attr_get(struct ext3_inode *in, struct ext3_inode_attr *out);
uint16_t ext3_inode_mode(struct ext3_inode *in);
uint64_t ext3_inode_size(struct ext3_inode *in);      /* i_size */
uint64_t ext3_inode_disksize(struct ext3_inode *in);  /* i_disksize (= i_size until data=guarded) */
/* Is this inode in use (links > 0 and mode != 0)? */
bool ext3_inode_in_use(struct ext3_inode *in);
/* Dirty data blocks/pages of the inode not yet on disk (0 today: the
 * read-only mount never dirties data). The write path adds and subtracts as
 * it dirties and writes data; the fast read path bypasses the buffer cache
 * only while this is 0 (file_read.c). */
uint64_t ext3_inode_dirty_data(const struct ext3_inode *in);
void ext3_inode_dirty_data_add(struct ext3_inode *in, int64_t delta);
/* An owner of references by inode number (the library's FUSE lookup
 * counts, src/api/api_lookup.c) that holds none while the inode is linked
 * but must keep an unlinked inode alive until it lets go, as the kernel's
 * dentries do: the last ext3_iput of an unlinked inode on a writable mount
 * first offers that reference to keep(arg, in), called with no lock of
 * ext3's held (keep may only take leaf locks of its own and must not call
 * into ext3). true: keep took the reference over (the inode stays cached,
 * unlinked, on the orphan list, until that reference is put); false: the
 * inode is freed as without a keeper. NULL keep: none (the default). */
void ext3_fs_set_unlinked_keeper(struct ext3_fs *fs,
				 bool (*keep)(void *arg, struct ext3_inode *in), void *arg);
/* The bound on unreferenced cached inodes (default 4096; at least 1):
 * beyond it the least recently used are evicted (an inode whose data is
 * still being written is spared meanwhile, icache.c). */
void ext3_icache_set_max_unused(struct ext3_fs *fs, unsigned max_unused);
/* Inode cache statistics. */
struct ext3_icache_stats {
	uint64_t hits, misses, evictions;
	uint64_t spared;           /* LRU victims kept: their data was still being written */
	unsigned cached, unused;   /* inodes in the cache; of those unreferenced */
};
void ext3_icache_stats(struct ext3_fs *fs, struct ext3_icache_stats *out);

/* Map logical block `logical` of the inode through the direct and indirect
 * blocks: *physical = 0 for a hole (return 0). -EFBIG past the triple
 * indirect range, -EUCLEAN for a block number past the end of the filesystem. */
int ext3_inode_bmap(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
		    uint64_t *physical);
/* lseek(2)'s SEEK_DATA (hole false) and SEEK_HOLE (hole true) from off:
 * *out = the first data / hole offset at or after off (block granularity;
 * the end of the file counts as a hole). -ENXIO when off is at or past
 * i_size, or (SEEK_DATA) no data follows. */
int ext3_inode_seek(struct ext3_fs *fs, struct ext3_inode *in, uint64_t off, bool hole, uint64_t *out);
/* Read up to len bytes of the inode's data at off (bounded by i_size);
 * holes read as zeroes. Returns the byte count. Block by block through the
 * buffer cache (the slow path; see ext3_fread below for the fast one). */
ssize_t ext3_inode_pread(struct ext3_fs *fs, struct ext3_inode *in, void *buf,
			 size_t len, uint64_t off);

/* A map cache: what the inode's block map (src/extfs/inode/bmap.h) keeps
 * of its last lookup, so that a sequential scan walks the map once per leaf
 * (apb blocks of the indirect map) instead of once per block. Each inode
 * has one (under its map-cache mutex; allocated on the first mapping that
 * needs it, freed when the inode's last reference goes); a caller may pass
 * its own to ext3_inode_map_run, owned by one user at a time. Only valid
 * while the block map cannot change: a write path invalidates the inode's
 * (ext3_inode_map_invalidate, ext3_int.h) whenever it changes the map; a
 * caller's own must not outlive such a change. */
struct ext3_map_cache;
/* NULL when out of memory. */
struct ext3_map_cache *ext3_map_cache_new(void);
void ext3_map_cache_free(struct ext3_map_cache *mc);
/* Map a run of logical blocks starting at `logical`, at most `max` (>= 1)
 * blocks long: *count blocks that are all a hole (*physical = 0) or all
 * mapped to consecutive physical blocks starting at *physical. Runs end at
 * leaf boundaries. mc: the caller's cache (owned by one user at a time), or
 * NULL for the inode's own. Errors as ext3_inode_bmap for the first block of
 * the run (a bad block later in the run just ends it, so the next call
 * reports it). */
int ext3_inode_map_run(struct ext3_fs *fs, struct ext3_inode *in,
		       struct ext3_map_cache *mc, uint64_t logical, uint64_t max,
		       uint64_t *physical, uint64_t *count);

/* Start reading the leaf pointer block that maps `logical` without waiting
 * for it (the levels above it are read and waited for: one block per apb
 * leaves), so that a later ext3_inode_map_run of that range finds it cached
 * instead of waiting behind the data already queued. *next = the first
 * logical block past that leaf's span (past the direct blocks for one of
 * those). Errors as ext3_inode_bmap's; the caller may ignore them (the
 * mapping meets and reports them again). */
int ext3_inode_map_prefetch(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			    uint64_t *next);
/* ext3_inode_map_run (with the inode's own map cache) that never waits for
 * a leaf pointer block: when the leaf is not cached, its read is started
 * and the result (1) is a guess, the run a sequentially written file has:
 * right after the block before `logical` (prev_hint: its physical block as
 * the caller mapped or guessed it, 0 when unknown), skipping the leaf when
 * the leaf sits there (2.6.30's layout), never across a block group's end.
 * No plausible guess: it waits, as ext3_inode_map_run. Data read from a
 * guess must be checked with ext3_inode_map_run before it is used. 0: a real
 * mapping, as ext3_inode_map_run's. */
int ext3_inode_map_guess(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			 uint64_t max, uint64_t prev_hint, uint64_t *physical, uint64_t *count);

/* ---- file data reads with per-open-file readahead (file_read.c) ----
 *
 * Large sequential reads bypass the buffer cache: the range plus a
 * readahead window (doubling from 128 KiB to max_window) is mapped into
 * physically contiguous runs and read with direct bios into a per-file
 * window buffer, two windows in flight; small random reads still go through
 * the buffer cache (ext3_inode_pread). See docs/ext3-read-path.md,
 * "Sequential reads". The reader holds a reference to `in`. Thread-safe: one mutex per
 * reader for its windows (held while waiting for this reader's window I/O;
 * nothing else is taken under it except the buffer cache's and the block
 * queue's internal locks). */
struct ext3_fread;
/* max_window: bytes, rounded to a power of two in 64 KiB..64 MiB; 0 turns
 * the fast path off (every read through the buffer cache). */
int ext3_fread_create(struct ext3_fs *fs, struct ext3_inode *in, size_t max_window,
		      struct ext3_fread **out);
/* Waits for this reader's I/O in flight, frees everything. NULL: no-op. */
void ext3_fread_destroy(struct ext3_fread *r);
/* pread semantics of ext3_inode_pread (short count at EOF or before an
 * error, the error on the next call). */
ssize_t ext3_fread_pread(struct ext3_fread *r, void *buf, size_t len, uint64_t off);
/* Where a read without a copy delivers its bytes: called once with the
 * whole result as iovcnt pieces in file order (valid only during the call);
 * a negative return is the read's result. */
struct iovec;
typedef int (*ext3_read_sink)(void *arg, const struct iovec *iov, int iovcnt);
/* ext3_fread_pread, delivered to sink instead of copied into buf: straight
 * from the readahead ring's segments when the whole read lies in them, else
 * from buf (len bytes, filled as ext3_fread_pread would fill it). The sink is
 * called exactly once unless the read fails (then never); returns the byte
 * count or the read's or the sink's error. */
ssize_t ext3_fread_pread_sink(struct ext3_fread *r, void *buf, size_t len, uint64_t off,
			      ext3_read_sink sink, void *arg);
struct ext3_fread_stats {
	uint64_t windows;      /* readahead segments issued */
	uint64_t bios;         /* data bios submitted */
	uint64_t direct_bytes; /* bytes read out of windows (copied or lent) */
	uint64_t slow_bytes;   /* bytes read through the buffer cache */
	uint64_t fallbacks;    /* windows given up (I/O error, map error, dirty cache) */
	size_t window;         /* current readahead allowance (bytes past the reader) */
	uint64_t ahead_min;    /* at full allowance: the fewest bytes issued past the
				* end of a read (not counting the file's last segment) */
	uint64_t ahead_samples; /* reads that ahead_min looked at */
	uint64_t waits;        /* segments the reader found still in flight */
	uint64_t wait_ns;      /* time it spent waiting for them */
	uint64_t issue_ns;     /* time spent issuing segments (mapping included) */
	uint64_t copy_ns;      /* time spent copying out of segments */
	uint64_t map_prefetches; /* leaf pointer blocks started ahead of the mapping */
	uint64_t guesses;      /* segments issued on a guessed mapping */
	uint64_t guess_misses; /* ... whose check failed (re-read) */
	uint64_t huge_segs;    /* segments issued into the huge-page arena */
	uint64_t stale;        /* segments dropped at the reader: the page cache let go
				* of a newer copy after they were read (re-read) */
};
void ext3_fread_stats(struct ext3_fread *r, struct ext3_fread_stats *out);
/* Device number of a character or block device inode (old or new encoding). */
void ext3_inode_rdev(const struct ext3_inode_attr *a, uint32_t *major, uint32_t *minor);
/* st_blocks as the kernel's ext4_inode_blocks computes it: i_blocks with
 * huge_file's 16 high bits, counted in filesystem blocks when the inode has
 * EXT4_HUGE_FILE_FL; 512-byte units. */
uint64_t ext3_inode_attr_blocks512(const struct ext3_fs *fs, const struct ext3_inode_attr *a);
/* Is this a fast symlink (target inside i_block)? */
bool ext3_inode_is_fast_symlink(struct ext3_fs *fs, struct ext3_inode *in);

/* ---- directories ---- */

/* One parsed directory entry (a view into a block). */
struct ext3_dirent_view {
	uint32_t inode;
	uint16_t rec_len;
	uint8_t name_len;
	uint8_t file_type;
	const char *name; /* not NUL-terminated */
};

/* Parse the entry at byte `off` of a directory block of `bs` bytes (pure
 * function, no I/O). Checks rec_len (>= 12, multiple of 4, room for the name,
 * inside the block) and inode <= max_ino (if max_ino != 0). Returns 0, or
 * -EUCLEAN with a message. has_filetype: otherwise file_type is 0 (rev 0 used
 * the byte as the high half of name_len; names are at most 255 anyway). */
int ext3_dirblock_entry(const uint8_t *blk, unsigned bs, unsigned off, uint32_t max_ino,
			bool has_filetype, struct ext3_dirent_view *de);

/* Iterate the directory from byte position *pos (must be at an entry
 * boundary; 0 = start), calling cb for each used entry. cb returns 0 to go on;
 * anything else stops (returned as is). *pos is the position after the last
 * entry passed to cb (or where it stopped with an error). */
typedef int (*ext3_dir_cb)(void *ctx, const struct ext3_dirent_view *de, uint64_t next_pos);
int ext3_dir_iterate(struct ext3_fs *fs, struct ext3_inode *dir, uint64_t *pos,
		     ext3_dir_cb cb, void *ctx);
/* Iterate like ext3_dir_iterate, with positions that survive concurrent
 * inserts (docs/write-dirs.md, "Readdir cookies"): a linear directory in
 * block order with byte offsets; an indexed one in hash order (names of one
 * hash by name), its positions hash cookies (EXT3_DIR_COOKIE_HASH set), so
 * a leaf split never makes a name come twice or be skipped. *pos: 0 or a
 * next_pos given to cb before. after (may be NULL): the name of the entry
 * whose next_pos *pos is, if the caller kept it: a resume inside a run of
 * equal hashes then continues right after that name. A byte offset met on
 * a directory that became indexed since restarts in hash order (the caller
 * filters what it saw: at most one block of names, since only a one-block
 * directory becomes indexed). */
#define EXT3_DIR_COOKIE_HASH (1ull << 62)
int ext3_dir_iterate_stable(struct ext3_fs *fs, struct ext3_inode *dir, uint64_t *pos,
			    const char *after, size_t after_len, ext3_dir_cb cb, void *ctx);

/* Look up one name in a directory (htree when indexed and the index is sane,
 * else linear). *ino = the entry's inode; -ENOENT when absent. */
int ext3_dir_lookup(struct ext3_fs *fs, struct ext3_inode *dir, const char *name,
		    size_t len, uint32_t *ino, uint8_t *file_type);

/* htree name hash (pure): version is EXT3_DX_HASH_* 0..5; seed may be NULL
 * or all-zero for the default. Returns -EINVAL for an unknown version. */
int ext3_dx_hash(const char *name, size_t len, int version, const uint32_t seed[4],
		 uint32_t *hash, uint32_t *minor_hash);

/* ---- path walk (bounded: NOSTALL_SYMLOOP_MAX links, 4096-byte paths) ---- */

/* Resolve path from the root. follow: follow a final symlink. */
int ext3_path_lookup(struct ext3_fs *fs, const char *path, bool follow, uint32_t *ino);

/* ---- symlinks ---- */

/* Copy at most size bytes of the target (not NUL-terminated); returns the
 * count. -EINVAL if not a symlink. */
ssize_t ext3_symlink_read(struct ext3_fs *fs, struct ext3_inode *in, char *buf,
			  size_t size);

/* ---- extended attributes ---- */

/* getxattr / listxattr semantics of nostall.h. */
ssize_t ext3_xattr_get(struct ext3_fs *fs, struct ext3_inode *in, const char *name,
		       void *value, size_t size);
ssize_t ext3_xattr_list(struct ext3_fs *fs, struct ext3_inode *in, char *list,
			size_t size);

/* Callback over every attribute (pure over a region): prefix is the namespace
 * prefix ("user." ...), name the rest (not NUL-terminated). */
typedef int (*ext3_xattr_cb)(void *ctx, const char *prefix, const char *name, size_t name_len,
			     const uint8_t *value, size_t value_len);
/* Walk the entries of an xattr region: `base` is where value offsets count
 * from, entries start at `first`, the region ends at `end`. */
int ext3_xattr_region_walk(const uint8_t *base, const uint8_t *first, const uint8_t *end,
			   const char *what, ext3_xattr_cb cb, void *ctx);


/* ---- the internal journal (inode 8), outside a mount (ext3_journal.c) ----
 * For recovery by `nostall recover`, by a mount before it starts, and by
 * tests: ext3 locates the journal through its read path and gives src/jbd a
 * block map; ext3 owns the superblock flags recovery changes. */
struct ext3_journal;
/* Check the superblock (-EINVAL: not ext3 or no journal; -EOPNOTSUPP: an
 * external journal), mount read-only for a moment and map every block of
 * inode 8 (-EUCLEAN with a message for a hole or a bad inode). */
int ext3_journal_open(struct dev *dev, struct ext3_journal **out);
/* The superblock's journal fields: -EINVAL (not ext3, no journal),
 * -EOPNOTSUPP (external journal), with a message. */
int ext3_journal_sb_check(const struct ext3_super_block *sb);
/* The same as ext3_journal_open over a mounted fs (its read path; dev = the fs's device). The
 * superblock copy is the fs's. */
int ext3_journal_open_fs(struct ext3_fs *fs, struct ext3_journal **out);
void ext3_journal_close(struct ext3_journal *e);
/* The internal journal's features as dumpe2fs names them (nostall info);
 * "" and an error when it cannot be read. */
int ext3_journal_features(struct ext3_fs *fs, char *out, size_t len);
/* A location whose bmap uses the map built at open (valid while e is). */
void ext3_journal_location(struct ext3_journal *e, struct jbd_location *loc);
/* What the filesystem's features ask of its journal, as the kernel's ext4
 * asks jbd2 at mount: 64-bit block numbers with the 64bit feature
 * (journal_64bit), v3 checksums with metadata_csum (journal_csum=v3). Only
 * sets (a mount option may have asked already). */
void ext3_journal_config_features(const struct ext3_journal *e, struct jbd_config *cfg);
/* needs_recovery (incompat RECOVER) in the superblock as read at open. */
bool ext3_journal_needs_recovery(const struct ext3_journal *e);
int ext3_journal_set_needs_recovery(struct ext3_journal *e, bool on);
/* Record a journal error in the filesystem (state |= ERROR_FS), as e2fsck
 * does after replaying a journal whose superblock had s_errno. */
int ext3_journal_mark_error(struct ext3_journal *e);
unsigned ext3_journal_block_size(const struct ext3_journal *e);
uint32_t ext3_journal_fs_blocks(const struct ext3_journal *e);
/* Replace the superblock copy (as read from the device at open). */
void ext3_journal_set_super(struct ext3_journal *e, const struct ext3_super_block *sb);
/* Replay e's journal as ext3_journal_recover below does (the filesystem must
 * not be mounted: recovery writes the device directly). */
int ext3_journal_replay(struct ext3_journal *e, unsigned flags, struct jbd_recovery_info *info,
			bool *did);
/* What `nostall recover` and e2fsck's journal step do to an ext3 image:
 * when the journal has data or needs_recovery is set, replay it, mark the
 * journal empty, record a journal error in the filesystem, clear
 * needs_recovery. *did (optional) says whether anything was done. flags may
 * add JBD_RECOVER_DRY_RUN. */
int ext3_journal_recover(struct dev *dev, unsigned flags, struct jbd_recovery_info *info, bool *did);

#endif
