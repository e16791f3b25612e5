/* nostall — public filesystem API.
 *
 * This header is the library's public API: the contract for programs that
 * read and write ext3 filesystems through it (the CLI's filesystem commands,
 * the model-based tests, the fuzzers, the coming FUSE daemon). Mounts are
 * read-only with NOSTALL_MOUNT_RDONLY or -o ro, else read-write (the write
 * path: "the write path" below and docs/api.md). The CLI and some tests also
 * use internal headers under src/ (devices, the block queue, mkfs, journal
 * recovery), which are not part of this contract.
 *
 * Conventions
 * - Every function that can fail returns a negative errno (-ENOENT, -EIO,
 *   -EUCLEAN for a corrupt filesystem, ...). Functions returning a count
 *   (ssize_t) return the count on success. A human-readable message for the
 *   last failure on the calling thread is available from nostall_errmsg().
 * - Handles are opaque. A handle obtained from a filesystem (file, directory
 *   iterator) must be closed before nostall_umount() of that filesystem;
 *   nostall_umount() fails with -EBUSY otherwise.
 * - Paths are absolute or relative to the root ("a/b" == "/a/b"); empty
 *   components and "." are skipped, ".." goes to the parent through the
 *   directory's ".." entry (the root's parent is the root). Symbolic links
 *   are followed in every component but the last, and in the last one too
 *   unless NOSTALL_NOFOLLOW is given; more than NOSTALL_SYMLOOP_MAX links in
 *   one walk fails with -ELOOP, a path over NOSTALL_PATH_MAX bytes or a name
 *   over 255 bytes with -ENAMETOOLONG. A non-directory in the middle of a path
 *   is -ENOTDIR.
 * - Inode numbers (uint64_t ino) are the filesystem's own; the root is
 *   NOSTALL_ROOT_INO (2).
 *
 * Threads: every function may be called from any thread. There is no
 * filesystem-wide lock: the buffer cache is thread-safe and each inode has
 * its own read-write lock (reads take it as reader, changes as writer), so
 * reads of different files, and even of the same file with nostall_pread(),
 * proceed concurrently; changes to different inodes proceed concurrently
 * too, with ext3's journal handles (cross-directory renames are serialized
 * by one lock). A file handle's position (nostall_read, nostall_write,
 * nostall_lseek) and a directory iterator are protected by their own mutex;
 * a handle may be shared by threads, but interleaved nostall_read() calls on
 * one handle see an unspecified order. Closing a handle while another
 * thread is using it is undefined (the nostall_fd_* table makes that safe:
 * a descriptor closed during a call is released when the call ends).
 *
 * Corrupt images: nothing in an image can crash the library or make it loop
 * forever. Inconsistent metadata fails the operation with -EUCLEAN (or -EIO
 * for an I/O error or a block number past the end of the device) and a
 * message naming the inode/block; every walk is bounded (path depth, symlink
 * count, directory blocks, index depth, indirect depth).
 */
#ifndef NOSTALL_NOSTALL_H
#define NOSTALL_NOSTALL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct nostall_fs;   /* a mounted filesystem */
struct nostall_file; /* an open regular file (or any inode opened for reading) */
struct nostall_dir;  /* a directory iterator */
struct dev;          /* an open device (src/dev/dev.h), for nostall_mount_dev */

#define NOSTALL_ROOT_INO 2u
#define NOSTALL_NAME_MAX 255
#define NOSTALL_PATH_MAX 4096
#define NOSTALL_SYMLOOP_MAX 40

/* ---- errors ---- */

/* The message recorded by the last failing call on this thread (e.g.
 * "ext3: unknown incompat feature 0x40 (extents)"), or strerror(-rc) if
 * none. Never NULL. The string is valid until the next call on this thread. */
const char *nostall_errmsg(int rc);
/* Record a message for this thread, as the library's failing calls do, and
 * return rc: a program that checks its own input before calling the
 * library (the FUSE daemon's mount options) reports both through one
 * nostall_errmsg(). */
int nostall_errmsg_set(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- option strings ---- */

/* The "name=value,name,..." grammar of the library's own option strings
 * (nostall_mount's opts), for programs that take more options in the same
 * string (the FUSE daemon's -o): split s (NULL: nothing) at commas, no
 * quoting, and call cb for each non-empty item (value NULL for a bare
 * name); a negative return of cb stops the walk and is returned. */
typedef int (*nostall_opt_cb)(void *ctx, const char *name, const char *value);
int nostall_opts_each(const char *s, nostall_opt_cb cb, void *ctx);
/* The values in them, as the library reads its own: a size ("16M", "4K",
 * "2G"; binary multiples, optional "iB"/"B"), a plain unsigned number
 * (decimal or 0x hex), a non-negative decimal fraction. 0, or -EINVAL /
 * -ERANGE with a message (nostall_errmsg). */
int nostall_parse_size(const char *s, uint64_t *out);
int nostall_parse_u64(const char *s, uint64_t *out);
int nostall_parse_double(const char *s, double *out);

/* ---- mount ---- */

/* Mount flags. */
#define NOSTALL_MOUNT_RDONLY 0x1u /* read-only; without it (and without -o ro) the
				   * mount is read-write (see "the write path") */

/* Mount the ext3 filesystem on a device spec ("file:IMG", "mem:..",
 * "sim:hdd,file=IMG", "fault:file:IMG,op=read,...", see docs/devices.md); a
 * spec without a known "kind:" prefix is a plain path and means file:PATH.
 *
 * opts: NULL or "name[=value],...":
 *   ro                 the same as NOSTALL_MOUNT_RDONLY
 *   cache=SIZE         buffer cache bound (default 64M)
 *   readahead=N        readahead blocks on sequential misses (default 32, 0 off)
 *   file_readahead=SIZE  max readahead window per open file for sequential reads
 *                      that bypass the buffer cache (default 2M, 64K..64M, 0 off)
 *   noload             do not look at the journal (a filesystem that needs
 *                      recovery is then mounted as it is on disk)
 *   sb=N               use the backup superblock at block N (with 1 KiB blocks:
 *                      8193, 24577, ...; the block size is probed)
 *   any block-queue tunable (scheduler=cfq, preset=2.6.30, max_sectors_kb=..,
 *   see blk.h): passed to the device's request queue.
 *   write-side options (read-write mounts): data=journal|ordered|writeback|
 *   guarded (default guarded, unless the superblock's default mount options
 *   name a mode; nostall info shows the mode in use), commit=N, barrier=0|1, nobarrier, journal_ioprio=CLASS/LEVEL,
 *   errors=continue|remount-ro|panic, data_err=ignore|abort,
 *   noatime|relatime|strictatime.
 * Unknown names, bad values and contradicting options (data=journal,
 * data=ordered) fail with -EINVAL naming the option; so do noload and sb=
 * on a read-write mount (they need NOSTALL_MOUNT_RDONLY or ro). The options
 * are ext3's (docs/ext3-read-path.md, "Mounting").
 *
 * Validation: magic, revision 0 or 1, block size 1..4 KiB, blocks/inodes per
 * group, group count against blocks_count and against the device size, group
 * descriptor locations (bitmaps and inode table inside their group and the
 * device), inode size (128..block size, a power of two). Feature policy: an
 * unknown incompat feature refuses the mount (-EOPNOTSUPP, the message names
 * it); an unknown ro_compat feature mounts read-only (here: always) and is
 * reported in nostall_info(). A filesystem whose journal needs recovery
 * (incompat "recover") has its journal replayed on the device first, as the
 * kernel does even for a read-only mount (so the image is written); with
 * -o noload it is read as it is on disk and info.needs_recovery tells.
 * The image is locked until nostall_umount (flock; docs/devices.md "Image
 * locks"): exclusively by a read-write mount and by a replay, shared by a
 * read-only one, not with noload. A conflicting nostall mount (in any
 * process, this one included) or a kernel mount of the image gives -EBUSY
 * before anything is read or written.
 * Errors: -ENOENT/-EIO opening the device, -EINVAL bad spec or option,
 * -EBUSY the image is in use (above), -EUCLEAN a corrupt superblock or
 * descriptor table ("ext3: bad magic 0x0000 at byte 1024, not an ext2/ext3
 * filesystem"), -EOPNOTSUPP, -ENOMEM. */
int nostall_mount(const char *image_or_spec, const char *opts, unsigned flags,
		  struct nostall_fs **out);
/* The same on a device opened by the caller (dev_open()); the filesystem does
 * not own it: close it after nostall_umount(). */
int nostall_mount_dev(struct dev *dev, const char *opts, unsigned flags, struct nostall_fs **out);
/* Unmount: -EBUSY (and nothing done) while files, directory iterators or
 * nostall_fd_* descriptors are open. Lookup references (nostall_lookup_ref)
 * are dropped. A read-write mount then writes everything back, empties the
 * journal and clears needs_recovery; an error doing so is returned (the
 * mount is gone either way, the next mount replays the journal). NULL is a
 * no-op returning 0. */
int nostall_umount(struct nostall_fs *fs);

/* ---- device specs ---- */

/* What a device spec is, read without opening it (the grammar and the list
 * of kinds are the library's alone: docs/devices.md). The strings are
 * static, except file, which points INTO spec. */
struct nostall_dev_info {
	const char *kind;      /* "file", "mem", "sim", "log", "fault" or "nbd";
				* "file" for a bare path */
	const char *base_kind; /* the kind under every log:/fault: wrapper */
	int has_kind;          /* spec starts with KIND: (else a bare path, which
				* nostall_mount opens as file:PATH) */
	int plain_file;        /* a bare path or file:PATH, unwrapped: a file that
				* may be created with a size (nostall mkfs IMG SIZE) */
	int simulated;         /* a sim: device at the base (modelled timing) */
	int in_memory;         /* the data lives in RAM only and is gone at close
				* (mem:, sim: without file=) */
	const char *file;      /* the file or block device the spec names (PATH,
				* file:PATH, sim:...,file=PATH, under any wrapper):
				* file_len bytes of spec, not NUL-terminated; NULL
				* when none (mem:, nbd:) */
	size_t file_len;
};
/* 0, or -EINVAL with a message (nostall_errmsg) for a malformed spec: empty,
 * "KIND:" without arguments, a wrapper around nothing or around a string of
 * no known kind. A string of no known kind is a bare path (kind "file",
 * has_kind 0). On failure kind and has_kind are still filled. The kinds'
 * own options are checked when the device is opened (nostall_mount). */
int nostall_dev_spec_info(const char *spec, struct nostall_dev_info *out);

/* ---- inode attributes ---- */

/* Directory entry types (the values of the POSIX d_type). */
enum nostall_dtype {
	NOSTALL_DT_UNKNOWN = 0,
	NOSTALL_DT_FIFO = 1,
	NOSTALL_DT_CHR = 2,
	NOSTALL_DT_DIR = 4,
	NOSTALL_DT_BLK = 6,
	NOSTALL_DT_REG = 8,
	NOSTALL_DT_LNK = 10,
	NOSTALL_DT_SOCK = 12,
};

struct nostall_timespec {
	int64_t sec;
	uint32_t nsec; /* from the *_extra fields of 256-byte inodes, else 0 */
};

struct nostall_stat {
	uint64_t ino;
	uint32_t mode;       /* type and permission bits, the POSIX S_IF* values */
	uint32_t nlink;
	uint32_t uid, gid;   /* 32-bit (low 16 + high 16) */
	uint64_t size;       /* bytes (i_size | i_size_high << 32 for regular files) */
	uint64_t blocks;     /* 512-byte units allocated (data, indirect, xattr block);
			      * ext4 huge_file: 48 bits, HUGE_FILE_FL scaled, as
			      * the kernel's st_blocks */
	uint32_t blksize;    /* filesystem block size */
	uint32_t rdev_major; /* device nodes: decoded from the old (i_block[0]) or
			      * new (i_block[1]) encoding, else 0 */
	uint32_t rdev_minor;
	uint64_t rdev;       /* makedev(rdev_major, rdev_minor) in glibc's encoding */
	struct nostall_timespec atime, mtime, ctime;
	struct nostall_timespec crtime; /* i_crtime (birth): inodes whose i_extra_isize covers it, else 0 */
	uint32_t flags;      /* ext3 i_flags (0x1000 = htree directory, 0x10 immutable, ...) */
	uint32_t generation;
	uint64_t xattr_block; /* i_file_acl, 0 if none */
};

/* Attributes of the inode at path (following a final symlink unless
 * flags has NOSTALL_NOFOLLOW). */
#define NOSTALL_NOFOLLOW 0x1u
int nostall_stat(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_stat *st);
/* Attributes of inode ino: -EINVAL for 0 or past s_inodes_count, -ENOENT for
 * a free inode (links_count 0 and mode 0, or deleted: dtime set and no links). */
int nostall_stat_ino(struct nostall_fs *fs, uint64_t ino, struct nostall_stat *st);

/* ---- lookup ---- */

/* Resolve path to an inode number (see the path rules at the top). */
int nostall_lookup(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino);
/* One component in directory dir_ino (no symlink following, "." and ".."
 * looked up as entries). Uses the htree index when the directory has one.
 * -ENOTDIR if dir_ino is not a directory, -ENOENT if absent. */
int nostall_lookup_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint64_t *ino);

/* ---- directories ---- */

struct nostall_dirent {
	uint64_t ino;
	uint8_t type;      /* enum nostall_dtype (from the entry's file_type; UNKNOWN
			    * on filesystems without the filetype feature) */
	uint16_t name_len;
	char name[NOSTALL_NAME_MAX + 1]; /* NUL-terminated */
	uint64_t next_pos; /* position just past this entry (for nostall_dir_seek) */
};

/* Called once per entry, "." and ".." included, in on-disk order (block by
 * block; htree directories are read linearly too, so the order is the block
 * order, not hash order). Return 0 to go on, anything else stops the walk and
 * is returned by nostall_readdir (use a positive value to tell a stop from an
 * error). */
typedef int (*nostall_readdir_cb)(void *ctx, const struct nostall_dirent *de);
int nostall_readdir(struct nostall_fs *fs, const char *path, nostall_readdir_cb cb, void *ctx);
int nostall_readdir_ino(struct nostall_fs *fs, uint64_t dir_ino, nostall_readdir_cb cb, void *ctx);

/* Iterator form. nostall_dir_next returns 1 and fills *de, 0 at the end, or a
 * negative errno (the iterator stays at the failing entry). Linear
 * directories come in block order, indexed (htree) ones in hash order: a
 * name present for the whole walk comes exactly once, and none twice, even
 * while names are inserted and leaves split (docs/write-dirs.md). */
int nostall_opendir(struct nostall_fs *fs, const char *path, struct nostall_dir **out);
int nostall_opendir_ino(struct nostall_fs *fs, uint64_t dir_ino, struct nostall_dir **out);
int nostall_dir_next(struct nostall_dir *d, struct nostall_dirent *de);
/* Position: an opaque cookie, 0 = start (a byte offset in a linear
 * directory, a hash position in an indexed one); a next_pos or a tell of
 * this or another iterator of the directory. */
uint64_t nostall_dir_tell(struct nostall_dir *d);
int nostall_dir_seek(struct nostall_dir *d, uint64_t pos);
void nostall_closedir(struct nostall_dir *d);

/* ---- files ---- */

/* Open flags (the write-side ones, NOSTALL_O_WRONLY ..., are below with the
 * write path; on a read-only mount they fail with -EROFS). */
#define NOSTALL_O_RDONLY 0x0u
#define NOSTALL_O_NOFOLLOW 0x1u /* like NOSTALL_NOFOLLOW: open the link itself
				 * (reads then return the target bytes, like a file;
				 * read-only: with write access or O_CREAT, -ELOOP) */

/* Open (for reading unless flags say otherwise; nostall_create below for the
 * rules of the write-side flags). Directories fail with -EISDIR unless
 * NOSTALL_O_DIRECTORY is given (a directory handle: fstat and fsync; reads
 * fail with -EISDIR); device nodes, fifos and sockets with -ENXIO (they have
 * no contents here). */
int nostall_open(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_file **out);
int nostall_open_ino(struct nostall_fs *fs, uint64_t ino, unsigned flags, struct nostall_file **out);
/* Read up to len bytes at the handle's position and advance it. Returns the
 * byte count (0 at end of file), holes read as zeroes. -EBADF on a handle
 * opened write-only, -EISDIR on a directory handle. On a read-write mount
 * reads see every write (the page cache) and update atime per the mount's
 * atime rule (relatime by default). */
ssize_t nostall_read(struct nostall_file *f, void *buf, size_t len);
/* Read at off without touching the position. */
ssize_t nostall_pread(struct nostall_file *f, void *buf, size_t len, uint64_t off);
/* nostall_pread without the copy out of the library, for a caller that
 * hands the bytes on (a FUSE daemon's reply): sink(arg, iov, iovcnt) is
 * called once with the result as pieces in file order, valid only during
 * the call. A large sequential read lends the per-handle readahead's own
 * buffers; any other read fills buf (len bytes, as nostall_pread would)
 * and passes that. The sink is not called when the read fails; it runs
 * with the handle's reader locked (other reads of the handle wait), so it
 * must not read the same handle. Returns the byte count, or the read's or
 * the sink's negative errno. */
struct iovec;
typedef int (*nostall_read_sink)(void *arg, const struct iovec *iov, int iovcnt);
ssize_t nostall_pread_sink(struct nostall_file *f, void *buf, size_t len, uint64_t off,
			   nostall_read_sink sink, void *arg);
/* whence: SEEK_SET, SEEK_CUR, SEEK_END (0, 1, 2), and SEEK_DATA / SEEK_HOLE
 * (3, 4) as lseek(2) on Linux (block granularity; the end of the file is a
 * hole; -ENXIO at or past the end, or when no data follows for SEEK_DATA;
 * -EINVAL on a handle that is not a regular file). Returns the new
 * position, -EINVAL for a bad whence or position. */
int64_t nostall_lseek(struct nostall_file *f, int64_t off, int whence);
int nostall_fstat(struct nostall_file *f, struct nostall_stat *st);
/* Close. A writer's last close is ext3's release (the writeback-mode
 * truncate safeguard, the allocation window); its error is not reported
 * here: call nostall_flush() first to see it. NULL is a no-op. */
void nostall_close(struct nostall_file *f);

/* Physical block of logical block `lblk` of an open file: 0 and *phys = 0 for a
 * hole (for `nostall stat`-style block lists and tests). */
int nostall_bmap(struct nostall_file *f, uint64_t lblk, uint64_t *phys);

/* ---- symbolic links ---- */

/* Like POSIX readlink: copies at most size bytes of the target, NOT
 * NUL-terminated, and returns the number copied; -EINVAL if the (last
 * component of) path is not a symlink. Fast symlinks (target in i_block) and
 * slow ones (target in a data block) both work. The full length is
 * nostall_stat().size (at most block size - 1). */
ssize_t nostall_readlink(struct nostall_fs *fs, const char *path, char *buf, size_t size);
ssize_t nostall_readlink_ino(struct nostall_fs *fs, uint64_t ino, char *buf, size_t size);

/* ---- extended attributes ---- */

/* Names carry their namespace prefix: "user.", "trusted.", "security.",
 * "system.posix_acl_access", "system.posix_acl_default" (ACL values in
 * the xattr ACL format of Linux's getxattr(2)/setxattr(2), version 2, as
 * getfacl and setfacl use; stored in ext3's on-disk format. Setting an
 * access ACL sets the mode's permission bits from it, and one the mode
 * says in full is not stored; only the owner or CAP_FOWNER sets ACLs). In-inode attributes (256-byte inodes) come first, then the
 * attribute block. flags: NOSTALL_NOFOLLOW (act on a symlink itself).
 *
 * getxattr: size 0 returns the value's length; a too small buffer fails with
 * -ERANGE; a missing attribute with -ENODATA.
 * listxattr: the names, each NUL-terminated, one after the other; size 0
 * returns the length needed; -ERANGE if too small. */
ssize_t nostall_getxattr(struct nostall_fs *fs, const char *path, unsigned flags,
			 const char *name, void *value, size_t size);
ssize_t nostall_listxattr(struct nostall_fs *fs, const char *path, unsigned flags,
			  char *list, size_t size);
ssize_t nostall_getxattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name, void *value,
			     size_t size);
ssize_t nostall_listxattr_ino(struct nostall_fs *fs, uint64_t ino, char *list, size_t size);

/* ---- filesystem-wide ---- */

/* On a read-write mount the free counts are the live ones (what the
 * allocators have now), else the superblock's. */
struct nostall_statfs {
	uint32_t block_size;
	uint64_t blocks;        /* s_blocks_count - overhead (like statfs(2) f_blocks, minix
				 * style: the metadata of every group is subtracted) */
	uint64_t blocks_free;   /* s_free_blocks_count */
	uint64_t blocks_avail;  /* free - reserved (0 if negative) */
	uint64_t files;         /* s_inodes_count */
	uint64_t files_free;    /* s_free_inodes_count */
	uint32_t name_max;      /* 255 */
	uint8_t fsid[16];       /* the uuid */
};
int nostall_statfs(struct nostall_fs *fs, struct nostall_statfs *st);

/* The superblock and a summary, for `nostall info`. */
struct nostall_info {
	char volume_name[17];     /* NUL-terminated */
	char uuid[37];            /* "01234567-89ab-..." */
	char last_mounted[65];
	uint32_t rev_level, minor_rev_level;
	uint32_t block_size;
	uint64_t blocks_count, r_blocks_count, free_blocks_count;
	uint32_t inodes_count, free_inodes_count;
	uint32_t first_data_block;
	uint32_t blocks_per_group, inodes_per_group;
	uint32_t groups;
	uint32_t desc_blocks;     /* GDT blocks per copy */
	uint32_t reserved_gdt_blocks;
	uint32_t inode_size;
	uint32_t first_ino;
	uint32_t feature_compat, feature_incompat, feature_ro_compat;
	char features[256];       /* "has_journal ext_attr resize_inode dir_index filetype
				   * sparse_super large_file" (unknown bits as "FEATURE_I40") */
	uint32_t state;           /* s_state: 1 clean, 2 errors, 4 orphans being recovered */
	uint32_t errors;          /* s_errors */
	uint32_t mnt_count;
	int32_t max_mnt_count;
	int64_t mtime, wtime, lastcheck, mkfs_time;
	uint32_t checkinterval;
	uint32_t creator_os;
	uint32_t journal_inum, journal_dev;
	uint8_t journal_uuid[16];
	uint32_t last_orphan;
	uint32_t hash_seed[4];
	uint32_t def_hash_version; /* 0 legacy, 1 half_md4, 2 tea */
	uint32_t flags;            /* s_flags: 1 signed hash, 2 unsigned hash */
	uint32_t default_mount_opts;
	uint32_t def_resuid, def_resgid;
	uint32_t min_extra_isize, want_extra_isize;
	/* what the mount decided */
	int read_only;             /* 1: mounted read-only, 0: read-write */
	int needs_recovery;        /* incompat "recover": the journal has transactions
				    * to replay (only after a -o noload mount) */
	int unknown_ro_compat;     /* unknown ro_compat bits forced read-only */
	int unsigned_hash;         /* directory hashes computed with unsigned chars */
	uint32_t superblock_block; /* block the superblock was read from (backup with sb=) */
	char data_mode[12];        /* data mode of the mount (journal, ordered, writeback,
				    * guarded; a read-only mount names the one a read-write
				    * mount would use) */
	char journal_features[160]; /* the internal journal's, as dumpe2fs names them
				     * ("journal_64bit journal_checksum_v3"; "(none)");
				     * "" without a readable internal journal */
};
int nostall_info(struct nostall_fs *fs, struct nostall_info *info);

/* One group descriptor (g < info.groups). */
struct nostall_group_info {
	uint32_t group;
	uint64_t first_block, last_block;
	int has_super;            /* superblock + GDT backup here (sparse_super) */
	uint32_t block_bitmap, inode_bitmap, inode_table;
	uint32_t free_blocks, free_inodes, used_dirs;
	uint32_t flags;
};
int nostall_group_info(struct nostall_fs *fs, uint32_t g, struct nostall_group_info *gi);

/* Names of the feature bits (NULL for unknown), for reports. which: 0 compat,
 * 1 incompat, 2 ro_compat. */
const char *nostall_feature_name(int which, uint32_t bit);

/* The on-disk features nostall knows, one table that the mount, mkfs,
 * nostall_info's feature list and docs/ext3-format.md ("Features") read. */
enum nostall_feature_support {
	NOSTALL_FEATURE_RW = 0,      /* understood: mounted read-write */
	NOSTALL_FEATURE_IGNORED = 1, /* compat, not used: read-write, left untouched */
	NOSTALL_FEATURE_RO = 2,      /* not understood: read-only mounts only */
	NOSTALL_FEATURE_REFUSE = 3,  /* not understood: the mount is refused */
};
struct nostall_feature {
	const char *name;         /* e2fsprogs' name, as dumpe2fs prints it ("has_journal") */
	int which;                /* 0 compat, 1 incompat, 2 ro_compat */
	uint32_t bit;             /* its bit in the superblock's feature word */
	int support;              /* enum nostall_feature_support */
	const char *support_name; /* "read-write", "ignored", "read-only", "refused" */
	int mkfs;                 /* 1: nostall's mkfs sets it */
};
/* Entry i (from 0; by which, then bit) of the table in *out: 0, or -ENOENT
 * past the last entry. */
int nostall_feature_get(unsigned i, struct nostall_feature *out);
/* What nostall does with a filesystem that has (which, bit), bit a single
 * bit: the table's level, or for a bit it lacks the rule of its kind
 * (compat: ignored, incompat: refused, ro_compat: read-only). -EINVAL for a
 * bad which or bit. */
int nostall_feature_support(int which, uint32_t bit);

/* ==== the write path (docs/api.md) ====
 *
 * A mount without NOSTALL_MOUNT_RDONLY (and without -o ro) is read-write:
 * the journal is loaded (recovered first if it needs it), the superblock says
 * needs_recovery while mounted, and nostall_umount() writes everything back,
 * empties the journal and clears needs_recovery. Orphans left by an unclean
 * stop (open-unlinked files, cut-short truncates) are cleaned at mount.
 *
 * Credentials: every call acts for a caller (struct nostall_cred below):
 * the calling thread's (nostall_cred_use, or the older nostall_cred_set),
 * else the mount's default, which is the mounting process's credentials as
 * they were at mount (euid, egid, groups, effective capabilities), or
 * root's with -o fakeroot. New inodes are the caller's; a setgid parent
 * directory passes on its group (and its setgid bit to subdirectories).
 * The library checks permissions as Linux's VFS does with POSIX ACLs on:
 * opening for reading or writing (not a file the open created), creating
 * and removing names (write and search on the directory), nostall_access,
 * owner checks for chmod, chown, utimens and setting ACLs (CAP_FOWNER
 * passes them), CAP_CHOWN to give a file away, CAP_MKNOD for device
 * nodes, search permission on every directory a path walk passes (not
 * the *_at and *_ino calls: their caller resolved the name); -EACCES or
 * -EPERM otherwise. It
 * applies the set-id rules with the caller's capabilities: a data write
 * or truncate drops setuid (and setgid where Linux does) unless the caller
 * holds CAP_FSETID; chown drops them for everyone; chmod by a caller
 * outside the file's group drops setgid unless CAP_FSETID. It enforces
 * ext3's rules too (name length, link count, directory emptiness,
 * read-only mounts) and the VFS's (a directory into its own subtree, user.*
 * xattrs only on files and directories). The block allocator keeps the
 * reserved blocks (s_r_blocks_count) for callers with CAP_SYS_RESOURCE,
 * s_def_resuid and members of s_def_resgid, as Linux keeps them; other
 * callers get -ENOSPC when only reserved blocks are left.
 *
 * Path calls resolve every component but the last (following symlinks), then
 * act on the last name in that directory; "/" or an empty last component,
 * "." and ".." as the last name give what Linux gives (mkdir: -EEXIST,
 * rmdir: -EBUSY / -EINVAL / -ENOTEMPTY, unlink: -EISDIR, rename: -EBUSY).
 * Calls that change something fail with -EROFS on a read-only mount.
 *
 * Errors as a Linux user expects them: -ENOSPC (blocks or inodes; the image
 * stays consistent and freeing space makes writes work again),
 * -ENAMETOOLONG, -EMLINK (32000 links), -ENOTEMPTY, -EISDIR, -ENOTDIR,
 * -EEXIST, -EINVAL (a directory renamed into its own subtree), -EFBIG (past
 * the indirect-map limit), -EROFS (read-only mount, or after a journal
 * abort), -EIO (device errors), -EUCLEAN (corrupt metadata met while
 * writing; the errors= policy is then applied). Never -EXDEV. */

/* Open flags beyond NOSTALL_O_RDONLY / NOSTALL_O_NOFOLLOW. */
#define NOSTALL_O_WRONLY 0x2u
#define NOSTALL_O_RDWR 0x4u
#define NOSTALL_O_CREAT 0x8u
#define NOSTALL_O_EXCL 0x10u
#define NOSTALL_O_TRUNC 0x20u
#define NOSTALL_O_APPEND 0x40u
#define NOSTALL_O_SYNC 0x80u      /* every write is durable when it returns (data + metadata) */
#define NOSTALL_O_DSYNC 0x100u    /* data + what is needed to read it back */
#define NOSTALL_O_DIRECTORY 0x200u /* fail with -ENOTDIR unless a directory (and
				    * allow opening one read-only) */
#define NOSTALL_O_NOATIME 0x400u  /* accepted; atime follows the mount's rule
				   * (-o noatime|relatime|strictatime) */
/* Host open(2) flags (O_WRONLY|O_CREAT|...) to NOSTALL_O_* (unknown bits ignored). */
unsigned nostall_oflags_from_posix(int oflags);

/* ---- credentials (who is asking; see "Credentials" above) ---- */

/* Capabilities the library consults (Linux's numbers: 1 << CAP_*, so a
 * capget(2) or /proc/PID/status CapEff mask can be given as it is). */
#define NOSTALL_CAP_CHOWN (1ull << 0)
#define NOSTALL_CAP_DAC_OVERRIDE (1ull << 1)
#define NOSTALL_CAP_DAC_READ_SEARCH (1ull << 2)
#define NOSTALL_CAP_FOWNER (1ull << 3)
#define NOSTALL_CAP_FSETID (1ull << 4)
#define NOSTALL_CAP_LINUX_IMMUTABLE (1ull << 9)
#define NOSTALL_CAP_SYS_RESOURCE (1ull << 24)
#define NOSTALL_CAP_MKNOD (1ull << 27)
#define NOSTALL_CAP_ALL                                                                    \
	(NOSTALL_CAP_CHOWN | NOSTALL_CAP_DAC_OVERRIDE | NOSTALL_CAP_DAC_READ_SEARCH |        \
	 NOSTALL_CAP_FOWNER | NOSTALL_CAP_FSETID | NOSTALL_CAP_LINUX_IMMUTABLE |             \
	 NOSTALL_CAP_SYS_RESOURCE | NOSTALL_CAP_MKNOD)
/* NOSTALL_CRED_NOPERM: the caller has made the access checks (a FUSE
 * daemon under default_permissions: the kernel made them): the library's
 * answer "may it?" is yes, and the chmod and truncate set-id rules are
 * left to the caller; owners, capabilities (CAP_FSETID on write, reserved
 * blocks) and the umask still apply. */
#define NOSTALL_CRED_NOPERM 0x1u
#define NOSTALL_CRED_GROUPS_MAX 64u
struct nostall_cred {
	uint32_t uid, gid;       /* the filesystem uid and gid (fsuid, fsgid) */
	const uint32_t *groups;  /* supplementary groups (copied; at most
				  * NOSTALL_CRED_GROUPS_MAX are kept), may be NULL */
	unsigned ngroups;
	uint64_t caps;           /* NOSTALL_CAP_* */
	uint32_t umask;          /* taken from new inodes' modes unless their
				  * directory has a default ACL (which replaces it) */
	unsigned flags;          /* NOSTALL_CRED_* */
};
/* The calling thread's credentials for every call from now on (copied);
 * NULL: the mount's default again. -EINVAL for unknown flags. */
int nostall_cred_use(const struct nostall_cred *c);
/* The calling process's own credentials (euid, egid, getgroups(2), the
 * effective capabilities from capget(2)), groups copied into groups[max]. */
void nostall_cred_self(struct nostall_cred *c, uint32_t *groups, unsigned max);
/* The mount's default for threads without their own (copied). */
int nostall_cred_default(struct nostall_fs *fs, const struct nostall_cred *c);
/* The umask of the mount's default credentials (0 unless set): a program
 * that creates as its process would (the CLI) gives its own, and asks for
 * 0666 / 0777; a directory's default ACL replaces it, as in Linux. */
void nostall_cred_umask(struct nostall_fs *fs, uint32_t umask);
/* access(2)/faccessat(2) with the current credentials: mode R_OK (4),
 * W_OK (2), X_OK (1) or F_OK (0); -EACCES, -EROFS for W_OK on a read-only
 * mount. flags: NOSTALL_NOFOLLOW. */
int nostall_access(struct nostall_fs *fs, const char *path, unsigned flags, int mode);
int nostall_access_ino(struct nostall_fs *fs, uint64_t ino, int mode);

/* The older interface: the calling thread's uid, gid and groups (thread-
 * local) as a caller with NOSTALL_CRED_NOPERM, every capability for uid 0
 * and none for others, no umask. */
void nostall_cred_set(uint32_t uid, uint32_t gid, const uint32_t *groups, unsigned ngroups);
void nostall_cred_reset(void); /* back to the mount's default, no xattrs */
/* Extended attributes that every inode this thread creates from now on
 * (nostall_create*, nostall_mknod*, nostall_mkdir*, O_CREAT opens; not
 * symlinks) gets inside the transaction that creates it, so that no crash
 * leaves the inode without them, after the ACLs the library inherits from
 * the directory's default ACL (values are stored as given: an ACL name
 * here takes ext3's on-disk format). One that cannot be set fails the
 * creation with its error, and nothing is created. At most
 * NOSTALL_CREATE_XATTRS_MAX (-EINVAL beyond); the array is copied but the
 * names and values it points to must stay valid until the next call or
 * nostall_cred_reset(), which clears the list (as does n = 0). */
#define NOSTALL_CREATE_XATTRS_MAX 8u
struct nostall_xattr_init {
	const char *name;  /* with its namespace prefix ("system.posix_acl_access") */
	const void *value;
	size_t size;
};
int nostall_cred_set_xattrs(const struct nostall_xattr_init *x, unsigned n);

/* Open (flags as above); with NOSTALL_O_CREAT a missing last component is
 * created as a regular file with mode & 07777 (no umask is applied: callers
 * apply their own); a dangling final symlink creates its target, as Linux
 * does. O_CREAT|O_EXCL on an existing name (a symlink too) is -EEXIST;
 * O_TRUNC truncates an existing regular file (whatever the access mode);
 * a directory with write access or O_CREAT is -EISDIR. Both O_WRONLY and
 * O_RDWR: -EINVAL. */
int nostall_create(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode,
		   struct nostall_file **out);
/* Write len bytes at the handle's position (at the end with O_APPEND) and
 * advance it; pwrite writes at off (with O_APPEND at the end, as Linux
 * does), leaving the position alone. Returns the count
 * written: short only when space ran out after some bytes (-ENOSPC when
 * none). Holes stay holes. */
ssize_t nostall_write(struct nostall_file *f, const void *buf, size_t len);
ssize_t nostall_pwrite(struct nostall_file *f, const void *buf, size_t len, uint64_t off);
/* nostall_pwrite with flags. NOSTALL_PWRITE_NOTHROTTLE: return without
 * the dirty-page throttle (the wait for writeback while dirty data is over
 * the dirty limit, which nostall_pwrite does before returning); the data is
 * in the cache and its blocks allocated as with nostall_pwrite. The caller
 * must then call nostall_throttle on the SAME thread (the limit is per
 * thread): a server replies to its client in between, so the client's next
 * request is prepared while this thread waits. Unknown flags: -EINVAL. */
#define NOSTALL_PWRITE_NOTHROTTLE 0x1u
/* NOSTALL_PWRITE_KEEP_SETID: the write leaves setuid/setgid alone; by
 * default it clears them as ext3 does for a writer without CAP_FSETID. For
 * callers that apply those rules themselves (a FUSE daemon: the kernel
 * clears the bits before sending the write, knowing the writer's
 * capabilities). */
#define NOSTALL_PWRITE_KEEP_SETID 0x2u
/* NOSTALL_PWRITE_AT: write at off even on an O_APPEND handle, which the
 * caller has already placed at the end (a FUSE daemon: the kernel computes
 * O_APPEND offsets from its size); the handle still counts as appending
 * for an append-only (chattr +a) file. */
#define NOSTALL_PWRITE_AT 0x4u
ssize_t nostall_pwrite_flags(struct nostall_file *f, const void *buf, size_t len, uint64_t off,
			     unsigned flags);
/* The dirty-page throttle: returns once the mount's dirty + writeback data
 * is under this thread's dirty limit (writing some of it back meanwhile).
 * A no-op on a read-only mount. */
void nostall_throttle(struct nostall_fs *fs);
/* -EINVAL on a handle without write access or not a regular file. */
int nostall_ftruncate(struct nostall_file *f, uint64_t size);
/* fallocate(2) on an extent file (ext4). mode: 0 or Linux's FALLOC_FL_*
 * bits, same values: 0 allocates unwritten (reading as zeros) blocks over
 * the holes of [off, off + len) and grows the size to off + len;
 * NOSTALL_FALLOC_KEEP_SIZE leaves the size (blocks past the end stay until
 * a truncate); PUNCH_HOLE (with KEEP_SIZE) frees the range's blocks and
 * zeroes its partial edges; ZERO_RANGE (KEEP_SIZE optional) makes the
 * range read as zeros, its blocks allocated unwritten. Errors as Linux:
 * -EINVAL (len <= 0, off < 0), -EBADF (no write access), -EOPNOTSUPP (an
 * indirect-mapped file, ext2/ext3's; COLLAPSE_RANGE, INSERT_RANGE and
 * UNSHARE_RANGE; PUNCH_HOLE without KEEP_SIZE), -EFBIG, -EPERM (immutable,
 * or append-only for anything but allocation), -ENODEV / -ESPIPE /
 * -EISDIR (not a regular file), -ENOSPC (what was allocated stays). */
#define NOSTALL_FALLOC_KEEP_SIZE 0x01
#define NOSTALL_FALLOC_PUNCH_HOLE 0x02
#define NOSTALL_FALLOC_ZERO_RANGE 0x10
int nostall_fallocate(struct nostall_file *f, int mode, int64_t off, int64_t len);
/* fsync(2) / fdatasync(2): 1 = datasync. Durable on return in every data mode. */
int nostall_fsync(struct nostall_file *f, int datasync);
/* close(2)-time flush (FUSE flush; nostall_fd_close calls it): for a writer,
 * ext3's release runs now (the writeback/guarded replace-on-truncate
 * safeguard starts here) and the handle stays a writer; returns the file's
 * pending write error, once. 0 for other handles. */
int nostall_flush(struct nostall_file *f);

/* Path calls (no final-symlink following for unlink/rmdir/rename/link's new
 * name/symlink/lchown with NOSTALL_NOFOLLOW; chmod/chown/utimens/truncate
 * follow a final symlink unless flags has NOSTALL_NOFOLLOW). */
int nostall_mkdir(struct nostall_fs *fs, const char *path, uint32_t mode);
int nostall_mknod(struct nostall_fs *fs, const char *path, uint32_t mode, uint64_t rdev);
int nostall_symlink(struct nostall_fs *fs, const char *target, const char *linkpath);
int nostall_link(struct nostall_fs *fs, const char *oldpath, const char *newpath);
int nostall_unlink(struct nostall_fs *fs, const char *path);
int nostall_rmdir(struct nostall_fs *fs, const char *path);
#define NOSTALL_RENAME_NOREPLACE 0x1u
#define NOSTALL_RENAME_EXCHANGE 0x2u
/* RENAME_WHITEOUT: the old name stays, as a whiteout (a character device
 * 0:0 with mode 0, owned by the caller's credentials: overlayfs's mark of a
 * removed lower file), made in the rename's transaction. Not with EXCHANGE
 * (-EINVAL). Needs CAP_MKNOD (-EPERM), as Linux. */
#define NOSTALL_RENAME_WHITEOUT 0x4u
int nostall_rename(struct nostall_fs *fs, const char *from, const char *to, unsigned flags);
int nostall_truncate(struct nostall_fs *fs, const char *path, uint64_t size);
int nostall_chmod(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode);
/* uid/gid (uint32_t)-1 = unchanged. */
int nostall_chown(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t uid, uint32_t gid);
/* ts[0] atime, ts[1] mtime; nsec NOSTALL_UTIME_NOW or NOSTALL_UTIME_OMIT as in
 * utimensat(2); ts NULL = both now. ctime becomes now. */
#define NOSTALL_UTIME_NOW ((1u << 30) - 1u)
#define NOSTALL_UTIME_OMIT ((1u << 30) - 2u)
int nostall_utimens(struct nostall_fs *fs, const char *path, unsigned flags,
		    const struct nostall_timespec ts[2]);
/* Inode flags, as chattr(1) and FS_IOC_SETFLAGS set them (the FS_*_FL
 * values; nostall_stat.flags reads them): NOSTALL_FL_* below. Flags Linux's
 * ext3 does not let users change keep their values, and flags that mean
 * nothing for the inode's type are dropped (directory-only ones on files;
 * all but nodump and noatime on special files). Changing the
 * journal-data flag (+j) is -EOPNOTSUPP: the mount's data= mode applies
 * to every file. ctime becomes now. As Linux, only the owner (or
 * CAP_FOWNER) changes flags (-EPERM), and only
 * CAP_LINUX_IMMUTABLE change immutable and append-only.
 * What the flags do: immutable (i): no open for writing, write, truncate,
 * attribute or xattr change, link, unlink or rename (-EPERM); append-only
 * (a): open for writing only with O_APPEND, never O_TRUNC, no truncate,
 * attribute or xattr change, unlink or rename (-EPERM); sync (S): every
 * write is O_SYNC and a directory's changes are synchronous; dirsync (D,
 * directories): changes of the directory are synchronous; noatime (A): no
 * atime updates. Others (nodump, secrm, unrm, compr, notail, topdir) are
 * stored and shown, as Linux's ext3 does. */
#define NOSTALL_FL_SECRM 0x00000001u
#define NOSTALL_FL_UNRM 0x00000002u
#define NOSTALL_FL_COMPR 0x00000004u
#define NOSTALL_FL_SYNC 0x00000008u
#define NOSTALL_FL_IMMUTABLE 0x00000010u
#define NOSTALL_FL_APPEND 0x00000020u
#define NOSTALL_FL_NODUMP 0x00000040u
#define NOSTALL_FL_NOATIME 0x00000080u
#define NOSTALL_FL_INDEX 0x00001000u        /* htree directory (not settable) */
#define NOSTALL_FL_JOURNAL_DATA 0x00004000u
#define NOSTALL_FL_NOTAIL 0x00008000u
#define NOSTALL_FL_DIRSYNC 0x00010000u
#define NOSTALL_FL_TOPDIR 0x00020000u
#define NOSTALL_FL_USER_VISIBLE 0x0003DFFFu /* what FS_IOC_GETFLAGS shows */
int nostall_setflags(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t iflags);
/* xflags: NOSTALL_XATTR_CREATE (fail -EEXIST if present), NOSTALL_XATTR_REPLACE
 * (fail -ENODATA if absent). Values up to what fits in a block; -ENOSPC when
 * the inode body and its block are full; -ERANGE for a name over 255 bytes;
 * -EOPNOTSUPP for an unknown namespace. */
#define NOSTALL_XATTR_CREATE 0x1u
#define NOSTALL_XATTR_REPLACE 0x2u
int nostall_setxattr(struct nostall_fs *fs, const char *path, unsigned flags, const char *name,
		     const void *value, size_t size, unsigned xflags);
int nostall_removexattr(struct nostall_fs *fs, const char *path, unsigned flags, const char *name);
/* sync(2)/syncfs(2): commit the journal and write back all file data. */
int nostall_sync(struct nostall_fs *fs);

/* ---- inode-number calls (a FUSE low-level daemon) ----
 * Lookup counts: nostall_lookup_ref and every *_at call that returns a new
 * entry's attributes take one lookup reference on the inode; nostall_forget
 * drops n (more than it holds: down to none). The mount keeps one table
 * ino -> count (a few dozen bytes an inode); a linked inode with lookup
 * references but no open handle may leave memory like any other (the inode
 * cache's bound) and is read again when asked for by number. An inode
 * unlinked while referenced (lookup references or open handles) stays in
 * memory and lives until the last reference goes; an unclean stop leaves it
 * on the orphan list for the next mount. nostall_umount drops every lookup
 * reference. */
/* -ENOENT when absent (no reference taken). */
int nostall_lookup_ref(struct nostall_fs *fs, uint64_t dir_ino, const char *name,
		       struct nostall_stat *st);
void nostall_forget(struct nostall_fs *fs, uint64_t ino, uint64_t nlookup);
/* One lookup reference on inode ino, found by number (FUSE readdirplus:
 * the entry's attributes without a second name lookup); -ENOENT when not
 * in use. */
int nostall_lookup_ref_ino(struct nostall_fs *fs, uint64_t ino, struct nostall_stat *st);
/* on != 0: from now on an inode that holds lookup references stays
 * reachable by number (*_ino calls, nostall_open_ino) after its last link
 * goes, as a kernel inode does while a process has it open: a FUSE daemon
 * gets fstat, fchmod, fsetxattr ... on open-unlinked files. Default off:
 * such an inode is -ENOENT by number. */
void nostall_lookup_refs_live(struct nostall_fs *fs, int on);

/* setattr: the fields named in valid; *st (may be NULL) gets the result.
 * SIZE: -EISDIR for a directory, -EINVAL for other non-regular files. */
#define NOSTALL_SET_MODE 0x1u
#define NOSTALL_SET_UID 0x2u
#define NOSTALL_SET_GID 0x4u
#define NOSTALL_SET_SIZE 0x8u
#define NOSTALL_SET_ATIME 0x10u
#define NOSTALL_SET_MTIME 0x20u
#define NOSTALL_SET_ATIME_NOW 0x40u
#define NOSTALL_SET_MTIME_NOW 0x80u
#define NOSTALL_SET_CTIME 0x100u
struct nostall_setattr {
	unsigned valid;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct nostall_timespec atime, mtime, ctime;
};
int nostall_setattr_ino(struct nostall_fs *fs, uint64_t ino, const struct nostall_setattr *sa,
			struct nostall_stat *st);
/* Create an entry in dir_ino and return the new inode's attributes (one
 * lookup reference taken). mknod: S_IFREG, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK. */
int nostall_mknod_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint32_t mode,
		     uint64_t rdev, struct nostall_stat *st);
int nostall_mkdir_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint32_t mode,
		     struct nostall_stat *st);
int nostall_symlink_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name,
		       const char *target, struct nostall_stat *st);
int nostall_link_at(struct nostall_fs *fs, uint64_t ino, uint64_t dir_ino, const char *name,
		    struct nostall_stat *st);
/* Create (or with O_EXCL unset open an existing) regular file and open it
 * (no symlink following: an existing symlink is -ELOOP). */
int nostall_create_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, unsigned flags,
		      uint32_t mode, struct nostall_stat *st, struct nostall_file **out);
int nostall_unlink_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name);
int nostall_rmdir_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name);
int nostall_rename_at(struct nostall_fs *fs, uint64_t olddir, const char *oldname, uint64_t newdir,
		      const char *newname, unsigned flags);
/* nostall_setflags by inode number; *st (may be NULL) gets the result. */
int nostall_setflags_ino(struct nostall_fs *fs, uint64_t ino, uint32_t iflags, struct nostall_stat *st);
int nostall_setxattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name, const void *value,
			 size_t size, unsigned xflags);
int nostall_removexattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name);
/* fsync/fsyncdir of any inode (directories included). */
int nostall_fsync_ino(struct nostall_fs *fs, uint64_t ino, int datasync);

/* ---- a POSIX-like file-descriptor table per mount ----
 * Small non-negative integers naming open handles (lowest free first, like
 * open(2)); -EBADF for a descriptor that is not open. Thread-safe: a
 * descriptor closed while another thread uses it is released when that
 * call ends. Open follows open(2): NOSTALL_O_NOFOLLOW on a final symlink is
 * -ELOOP, a directory opens read-only (reads -EISDIR). Close returns the
 * nostall_flush() result. */
int nostall_fd_open(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode);
int nostall_fd_close(struct nostall_fs *fs, int fd);
ssize_t nostall_fd_read(struct nostall_fs *fs, int fd, void *buf, size_t len);
ssize_t nostall_fd_write(struct nostall_fs *fs, int fd, const void *buf, size_t len);
ssize_t nostall_fd_pread(struct nostall_fs *fs, int fd, void *buf, size_t len, uint64_t off);
ssize_t nostall_fd_pwrite(struct nostall_fs *fs, int fd, const void *buf, size_t len, uint64_t off);
int64_t nostall_fd_lseek(struct nostall_fs *fs, int fd, int64_t off, int whence);
int nostall_fd_fsync(struct nostall_fs *fs, int fd, int datasync);
int nostall_fd_ftruncate(struct nostall_fs *fs, int fd, uint64_t size);
int nostall_fd_fstat(struct nostall_fs *fs, int fd, struct nostall_stat *st);
int nostall_fd_fallocate(struct nostall_fs *fs, int fd, int mode, int64_t off, int64_t len);

#ifdef __cplusplus
}
#endif

#endif
