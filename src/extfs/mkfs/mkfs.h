/* mkfs: lays out and writes an empty ext2, ext3 or ext4 filesystem
 * (docs/ext3-format.md, "mkfs layout" and "mkfs layout for ext4").
 *
 * By default (no features_set) the result has has_journal, ext_attr,
 * resize_inode, dir_index, filetype, sparse_super and large_file; a root
 * directory, lost+found and an empty journal (JBD superblock v2 with the
 * revoke feature). Other sets (mkfs_features.c) may drop the journal and add
 * extent, 64bit, flex_bg, huge_file, dir_nlink, extra_isize and
 * metadata_csum. With a fixed uuid and
 * time the written bytes are a pure function of the parameters and size.
 *
 * Threads: ext3_mkfs is a plain synchronous function; it owns the device for
 * its duration (nothing else may write to it meanwhile).
 */
#ifndef NOSTALL_EXT3_MKFS_H
#define NOSTALL_EXT3_MKFS_H

#include <stdbool.h>
#include <stdint.h>

#include "extfs/format/geom.h"
#include "extfs/format/uuid.h"

struct dev;

struct ext3_mkfs_params {
	uint64_t size_bytes;     /* filesystem size; 0 = the whole device */
	unsigned block_size;     /* 1024, 2048, 4096; 0 = by size like mke2fs */
	unsigned inode_size;     /* 128 or 256; 0 = 256 */
	uint64_t inodes;         /* inode count wanted; 0 = from the inode ratio */
	uint32_t journal_blocks; /* 0 = default by size like mke2fs */
	char label[17];          /* NUL-terminated, at most 16 bytes */
	uint8_t uuid[16];        /* used when uuid_set, else random */
	bool uuid_set;
	uint32_t root_uid, root_gid; /* owner of / */
	int64_t time;            /* all timestamps; used when time_set, else now */
	bool time_set;
	/* The device reads as zeroes where nothing was written (a freshly created
	 * sparse file, a new mem: device): all-zero blocks are then skipped.
	 * Otherwise inode tables, journal and the other zero-initialised
	 * metadata are written out. */
	bool assume_zeroed;
	/* Feature masks (compat, incompat, ro_compat) when features_set, else
	 * the ext3 default (the feature table's mkfs column). Fill them with
	 * ext3_mkfs_features_of_type and ext3_mkfs_features_edit. */
	uint32_t features[3];
	bool features_set;
	/* Optional progress report (called per group and per phase). */
	void (*progress)(void *ctx, const char *phase, uint64_t done, uint64_t total);
	void *progress_ctx;
};

/* Everything mkfs decides, in filesystem blocks unless stated. */
struct ext3_mkfs_layout {
	uint32_t block_size;
	uint32_t log_block_size;   /* block_size = 1024 << log_block_size */
	uint32_t blocks_count;
	uint32_t first_data_block;
	uint32_t blocks_per_group;
	uint32_t groups;
	uint32_t desc_blocks;      /* GDT blocks per copy */
	uint32_t reserved_gdt_blocks;
	uint32_t inode_size;
	uint32_t inodes_per_group;
	uint32_t inode_table_blocks; /* per group */
	uint32_t inodes_count;
	uint32_t r_blocks_count;   /* 5% */
	uint32_t journal_blocks;
	uint32_t journal_ind_blocks; /* indirect blocks mapping the journal */
	uint32_t lpf_blocks;       /* lost+found size in blocks */
	/* data allocated in order from the first block after group 0's inode
	 * table, skipping other groups' metadata: */
	uint32_t root_block;
	uint32_t lpf_block;        /* first of lpf_blocks (contiguous, in group 0) */
	uint32_t resize_dind_block;
	uint32_t journal_start;    /* first journal block (holds the JBD superblock) */
	uint32_t alloc_end;        /* every non-metadata block below this is in use */
	uint32_t free_blocks;
	uint32_t free_inodes;
	uint32_t time;
	uint8_t uuid[16];
	uint32_t hash_seed[4];
	struct ext3_geom geo;      /* the group geometry of the above (geom.h) */
	uint32_t features[3];      /* compat, incompat, ro_compat written */
	uint32_t desc_size;        /* 32, or 64 with 64bit */
	bool journal;              /* has_journal: journal_* above are 0 without */
	bool extents;              /* root, lost+found and journal extent-mapped */
	bool csum;                 /* metadata_csum */
	uint32_t csum_seed;        /* crc32c(~0, uuid) with metadata_csum */
	uint32_t journal_extents;  /* extents mapping the journal (extents only) */
	uint32_t flex_size;        /* groups per flex group with flex_bg (16), else 0 */
};

/* The feature set of `nostall mkfs -t type` (ext2, ext3, ext4: mke2fs.conf's
 * base_features plus the type's); -EINVAL with a message for another type. */
int ext3_mkfs_features_of_type(const char *type, uint32_t features[3]);
/* Apply -O's comma list ("name" adds, "^name" removes) by the feature table's
 * names; -EINVAL with one clear line for an unknown name or a feature nostall
 * mkfs cannot make. */
int ext3_mkfs_features_edit(uint32_t features[3], const char *list);
/* Is this set one mkfs can write (only writable features, and their
 * dependencies: 64bit needs extent, ...)? -EINVAL with a message if not. */
int ext3_mkfs_features_check(const uint32_t features[3]);
/* The three above in one step, as `nostall mkfs -t type -O features` does:
 * p's feature masks for type (NULL: ext3) edited by the comma list features
 * (NULL or "": none), checked, features_set. The tools that make their own
 * images (crashtest, bench fs, bench repro) take --fs and --features through
 * it. -EINVAL with the message in err_last(). */
int ext3_mkfs_params_fs_type(struct ext3_mkfs_params *p, const char *type, const char *features);

/* Compute the layout for a device of dev_bytes bytes. Fails with -EINVAL
 * (bad parameter), -ENOSPC (too small) and a message in err_last(). */
int ext3_mkfs_layout_compute(const struct ext3_mkfs_params *p, uint64_t dev_bytes,
			     struct ext3_mkfs_layout *out);

/* Write the filesystem onto dev (dev_rw_sync, then dev_flush_sync). The
 * primary superblock is written last, after a flush. If layout_out is not
 * NULL it receives the layout used (for a summary). */
int ext3_mkfs(struct dev *dev, const struct ext3_mkfs_params *p);
int ext3_mkfs_with_layout(struct dev *dev, const struct ext3_mkfs_params *p,
			  struct ext3_mkfs_layout *layout_out);


#endif
