/* ext3 on-disk format (docs/ext3-format.md).
 *
 * Every structure here is exactly the bytes on disk: fixed-width fields, all
 * little-endian (convert with le16_to_cpu() and friends below), naturally
 * aligned so no packing attribute is needed. The comment on each field gives
 * its byte offset inside the structure; _Static_asserts pin the sizes and a
 * few offsets so a mistake fails the build.
 *
 * Written from the published ext2/ext3/ext4 disk-layout documentation
 * (Documentation/filesystems/ext4/ in the kernel tree); only the ext3 subset
 * is given names, ext4-only fields are kept as reserved bytes that nostall
 * always writes as zero and never interprets.
 */
#ifndef NOSTALL_EXT3_FORMAT_H
#define NOSTALL_EXT3_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

/* Byte order: util/endian.h. */

/* ---- geometry constants ---- */

#define EXT3_SUPER_MAGIC 0xEF53
#define EXT3_SUPERBLOCK_OFFSET 1024 /* byte offset of the primary superblock */
#define EXT3_SUPERBLOCK_SIZE 1024
#define EXT3_MIN_BLOCK_LOG_SIZE 10
#define EXT3_MIN_BLOCK_SIZE 1024
#define EXT3_MAX_BLOCK_SIZE 4096 /* what nostall supports (ext3 allows up to 64 KiB) */
#define EXT3_GOOD_OLD_INODE_SIZE 128
#define EXT3_GOOD_OLD_FIRST_INO 11
#define EXT3_GOOD_OLD_REV 0 /* fixed inode size 128, first_ino 11, no features */
#define EXT3_DYNAMIC_REV 1  /* s_first_ino, s_inode_size and feature sets valid */
#define EXT3_DESC_SIZE 32   /* group descriptor size without the 64bit feature */

/* Reserved inode numbers. */
#define EXT3_BAD_INO 1
#define EXT3_ROOT_INO 2
#define EXT3_USR_QUOTA_INO 3
#define EXT3_GRP_QUOTA_INO 4
#define EXT3_BOOT_LOADER_INO 5
#define EXT3_UNDEL_DIR_INO 6
#define EXT3_RESIZE_INO 7
#define EXT3_JOURNAL_INO 8
#define EXT3_EXCLUDE_INO 9
#define EXT3_REPLICA_INO 10
#define EXT3_FIRST_INO 11 /* lost+found, by mkfs convention */

/* i_block[] slots. */
#define EXT3_NDIR_BLOCKS 12
#define EXT3_IND_BLOCK 12
#define EXT3_DIND_BLOCK 13
#define EXT3_TIND_BLOCK 14
#define EXT3_N_BLOCKS 15

/* s_state */
#define EXT3_VALID_FS 0x0001
#define EXT3_ERROR_FS 0x0002
#define EXT3_ORPHAN_FS 0x0004

/* s_errors */
#define EXT3_ERRORS_CONTINUE 1
#define EXT3_ERRORS_RO 2
#define EXT3_ERRORS_PANIC 3

/* s_creator_os */
#define EXT3_OS_LINUX 0

/* s_flags */
#define EXT3_FLAGS_SIGNED_HASH 0x0001   /* dx hashes use signed char arithmetic */
#define EXT3_FLAGS_UNSIGNED_HASH 0x0002 /* dx hashes use unsigned char arithmetic */
#define EXT3_FLAGS_TEST_FILESYS 0x0004

/* s_default_mount_opts */
#define EXT3_DEFM_DEBUG 0x0001
#define EXT3_DEFM_BSDGROUPS 0x0002
#define EXT3_DEFM_XATTR_USER 0x0004
#define EXT3_DEFM_ACL 0x0008
#define EXT3_DEFM_UID16 0x0010
#define EXT3_DEFM_JMODE 0x0060 /* mask: data mode */
#define EXT3_DEFM_JMODE_DATA 0x0020
#define EXT3_DEFM_JMODE_ORDERED 0x0040
#define EXT3_DEFM_JMODE_WBACK 0x0060

/* s_jnl_backup_type */
#define EXT3_JNL_BACKUP_BLOCKS 1 /* s_jnl_blocks[0..14] = i_block, [15] size_high, [16] size */

/* Feature bits (the ones nostall's code tests; the full list with names and
 * what nostall does with each is features.c's table). A kernel (or nostall)
 * must refuse to mount a filesystem with an unknown incompat feature and
 * mount read-only one with an unknown ro_compat feature; unknown compat
 * features are ignored. */
#define EXT3_FEATURE_COMPAT_DIR_PREALLOC 0x0001
#define EXT3_FEATURE_COMPAT_IMAGIC_INODES 0x0002
#define EXT3_FEATURE_COMPAT_HAS_JOURNAL 0x0004
#define EXT3_FEATURE_COMPAT_EXT_ATTR 0x0008
#define EXT3_FEATURE_COMPAT_RESIZE_INODE 0x0010
#define EXT3_FEATURE_COMPAT_DIR_INDEX 0x0020

#define EXT3_FEATURE_INCOMPAT_COMPRESSION 0x0001
#define EXT3_FEATURE_INCOMPAT_FILETYPE 0x0002
#define EXT3_FEATURE_INCOMPAT_RECOVER 0x0004     /* journal needs replay */
#define EXT3_FEATURE_INCOMPAT_JOURNAL_DEV 0x0008 /* this is an external journal */
#define EXT3_FEATURE_INCOMPAT_META_BG 0x0010
/* ext4-only incompat features (nostall refuses them): */
#define EXT4_FEATURE_INCOMPAT_EXTENTS 0x0040
#define EXT4_FEATURE_INCOMPAT_64BIT 0x0080
#define EXT4_FEATURE_INCOMPAT_FLEX_BG 0x0200
#define EXT4_FEATURE_INCOMPAT_CSUM_SEED 0x2000 /* s_checksum_seed (0x270) seeds metadata_csum */

#define EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER 0x0001
#define EXT3_FEATURE_RO_COMPAT_LARGE_FILE 0x0002
#define EXT3_FEATURE_RO_COMPAT_BTREE_DIR 0x0004
/* ext4-only ro_compat features: */
#define EXT4_FEATURE_RO_COMPAT_HUGE_FILE 0x0008
#define EXT4_FEATURE_RO_COMPAT_GDT_CSUM 0x0010
#define EXT4_FEATURE_RO_COMPAT_DIR_NLINK 0x0020
#define EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE 0x0040
#define EXT4_FEATURE_RO_COMPAT_BIGALLOC 0x0200
#define EXT4_FEATURE_RO_COMPAT_METADATA_CSUM 0x0400

/* What nostall does with each feature, and their names: features.h. */

/* ---- superblock: 1024 bytes at byte 1024 of the device (block 1 with 1 KiB
 * blocks, inside block 0 otherwise); backups at the start of block groups. ---- */

struct ext3_super_block {
	uint32_t s_inodes_count;         /* 0x000 total inodes (= inodes_per_group * groups) */
	uint32_t s_blocks_count;         /* 0x004 total blocks */
	uint32_t s_r_blocks_count;       /* 0x008 blocks reserved for the superuser */
	uint32_t s_free_blocks_count;    /* 0x00C free blocks */
	uint32_t s_free_inodes_count;    /* 0x010 free inodes */
	uint32_t s_first_data_block;     /* 0x014 block holding the superblock: 1 for 1 KiB blocks, else 0 */
	uint32_t s_log_block_size;       /* 0x018 block size = 1024 << this */
	uint32_t s_log_frag_size;        /* 0x01C fragment size (= block size on Linux) */
	uint32_t s_blocks_per_group;     /* 0x020 blocks per group (8 * block size) */
	uint32_t s_frags_per_group;      /* 0x024 fragments per group (= blocks per group) */
	uint32_t s_inodes_per_group;     /* 0x028 inodes per group (multiple of 8) */
	uint32_t s_mtime;                /* 0x02C last mount time (seconds since the epoch) */
	uint32_t s_wtime;                /* 0x030 last write time */
	uint16_t s_mnt_count;            /* 0x034 mounts since the last check */
	uint16_t s_max_mnt_count;        /* 0x036 mounts before a check (signed; 0xFFFF = -1 = never) */
	uint16_t s_magic;                /* 0x038 EXT3_SUPER_MAGIC 0xEF53 */
	uint16_t s_state;                /* 0x03A EXT3_VALID_FS / EXT3_ERROR_FS / EXT3_ORPHAN_FS */
	uint16_t s_errors;               /* 0x03C behaviour on errors: EXT3_ERRORS_* */
	uint16_t s_minor_rev_level;      /* 0x03E minor revision */
	uint32_t s_lastcheck;            /* 0x040 time of the last fsck */
	uint32_t s_checkinterval;        /* 0x044 seconds between checks (0 = none) */
	uint32_t s_creator_os;           /* 0x048 EXT3_OS_LINUX = 0 */
	uint32_t s_rev_level;            /* 0x04C EXT3_GOOD_OLD_REV or EXT3_DYNAMIC_REV */
	uint16_t s_def_resuid;           /* 0x050 uid allowed to use reserved blocks */
	uint16_t s_def_resgid;           /* 0x052 gid allowed to use reserved blocks */
	/* --- valid only when s_rev_level >= EXT3_DYNAMIC_REV --- */
	uint32_t s_first_ino;            /* 0x054 first non-reserved inode (11) */
	uint16_t s_inode_size;           /* 0x058 on-disk inode size: 128 or 256 */
	uint16_t s_block_group_nr;       /* 0x05A group this superblock copy lives in */
	uint32_t s_feature_compat;       /* 0x05C EXT3_FEATURE_COMPAT_* */
	uint32_t s_feature_incompat;     /* 0x060 EXT3_FEATURE_INCOMPAT_* */
	uint32_t s_feature_ro_compat;    /* 0x064 EXT3_FEATURE_RO_COMPAT_* */
	uint8_t s_uuid[16];              /* 0x068 filesystem uuid */
	char s_volume_name[16];          /* 0x078 label, NUL-padded (not terminated at 16) */
	char s_last_mounted[64];         /* 0x088 directory where last mounted */
	uint32_t s_algorithm_usage_bitmap; /* 0x0C8 compression (unused) */
	uint8_t s_prealloc_blocks;       /* 0x0CC blocks to preallocate for files (unused) */
	uint8_t s_prealloc_dir_blocks;   /* 0x0CD blocks to preallocate for directories */
	uint16_t s_reserved_gdt_blocks;  /* 0x0CE GDT blocks reserved for online growth (resize_inode) */
	uint8_t s_journal_uuid[16];      /* 0x0D0 uuid of an external journal (zero when internal) */
	uint32_t s_journal_inum;         /* 0x0E0 journal inode (8) */
	uint32_t s_journal_dev;          /* 0x0E4 external journal device number */
	uint32_t s_last_orphan;          /* 0x0E8 head of the orphan inode list */
	uint32_t s_hash_seed[4];         /* 0x0EC htree hash seed */
	uint8_t s_def_hash_version;      /* 0x0FC default htree hash: EXT3_DX_HASH_* */
	uint8_t s_jnl_backup_type;       /* 0x0FD EXT3_JNL_BACKUP_BLOCKS when s_jnl_blocks is valid */
	uint16_t s_desc_size;            /* 0x0FE group descriptor size (64bit only; 0 here) */
	uint32_t s_default_mount_opts;   /* 0x100 EXT3_DEFM_* */
	uint32_t s_first_meta_bg;        /* 0x104 first meta block group (meta_bg only) */
	uint32_t s_mkfs_time;            /* 0x108 when the filesystem was created */
	uint32_t s_jnl_blocks[17];       /* 0x10C backup of the journal inode's i_block[15], size_high, size */
	uint32_t s_blocks_count_hi;      /* 0x150 64bit only */
	uint32_t s_r_blocks_count_hi;    /* 0x154 64bit only */
	uint32_t s_free_blocks_count_hi; /* 0x158 64bit only */
	uint16_t s_min_extra_isize;      /* 0x15C every inode has at least this many extra bytes */
	uint16_t s_want_extra_isize;     /* 0x15E new inodes should have this many extra bytes */
	uint32_t s_flags;                /* 0x160 EXT3_FLAGS_* */
	uint16_t s_raid_stride;          /* 0x164 RAID stride (blocks) */
	uint16_t s_mmp_interval;         /* 0x166 multi-mount protection (ext4) */
	uint64_t s_mmp_block;            /* 0x168 multi-mount protection (ext4) */
	uint32_t s_raid_stripe_width;    /* 0x170 RAID stripe width (blocks) */
	uint8_t s_log_groups_per_flex;   /* 0x174 flex_bg (ext4) */
	uint8_t s_checksum_type;         /* 0x175 metadata_csum (ext4) */
	uint16_t s_reserved_pad;         /* 0x176 */
	uint64_t s_kbytes_written;       /* 0x178 lifetime KiB written (informational) */
	uint32_t s_ext4_reserved[160];   /* 0x180 ext4 fields (snapshots, error log, quota
					  * inodes, overhead, encryption, checksums): zero */
};
_Static_assert(sizeof(struct ext3_super_block) == 1024, "ext3 superblock size");
_Static_assert(offsetof(struct ext3_super_block, s_magic) == 0x38, "s_magic");
_Static_assert(offsetof(struct ext3_super_block, s_block_group_nr) == 0x5A, "s_block_group_nr");
_Static_assert(offsetof(struct ext3_super_block, s_uuid) == 0x68, "s_uuid");
_Static_assert(offsetof(struct ext3_super_block, s_reserved_gdt_blocks) == 0xCE, "s_reserved_gdt_blocks");
_Static_assert(offsetof(struct ext3_super_block, s_hash_seed) == 0xEC, "s_hash_seed");
_Static_assert(offsetof(struct ext3_super_block, s_default_mount_opts) == 0x100, "s_default_mount_opts");
_Static_assert(offsetof(struct ext3_super_block, s_jnl_blocks) == 0x10C, "s_jnl_blocks");
_Static_assert(offsetof(struct ext3_super_block, s_min_extra_isize) == 0x15C, "s_min_extra_isize");
_Static_assert(offsetof(struct ext3_super_block, s_kbytes_written) == 0x178, "s_kbytes_written");

/* ---- group descriptor: 32 bytes each, packed into the blocks right after
 * each superblock copy (the GDT). ---- */

struct ext3_group_desc {
	uint32_t bg_block_bitmap;      /* 0x00 block number of the block bitmap */
	uint32_t bg_inode_bitmap;      /* 0x04 block number of the inode bitmap */
	uint32_t bg_inode_table;       /* 0x08 first block of the inode table */
	uint16_t bg_free_blocks_count; /* 0x0C free blocks in this group */
	uint16_t bg_free_inodes_count; /* 0x0E free inodes in this group */
	uint16_t bg_used_dirs_count;   /* 0x10 directories in this group */
	uint16_t bg_flags;             /* 0x12 ext4 uninit flags; always 0 for ext3 */
	uint32_t bg_reserved[2];       /* 0x14 ext4: exclude bitmap (0x14), bitmap checksums
					* (0x18, 0x1A); 0 */
	uint16_t bg_itable_unused;     /* 0x1C ext4 uninit_bg; 0 */
	uint16_t bg_checksum;          /* 0x1E ext4 uninit_bg / metadata_csum; 0 */
};
_Static_assert(sizeof(struct ext3_group_desc) == EXT3_DESC_SIZE, "ext3 group descriptor size");
/* bg_flags (uninit_bg / metadata_csum) */
#define EXT4_BG_INODE_UNINIT 0x0001 /* inode table and bitmap not initialised */
#define EXT4_BG_BLOCK_UNINIT 0x0002 /* block bitmap not initialised */
#define EXT4_BG_INODE_ZEROED 0x0004 /* inode table zeroed */

/* ext4 64bit: s_desc_size-byte descriptors (64 and up) continue with the
 * high halves. nostall reads them (and refuses a filesystem that needs
 * them: more than 2^32 blocks). */
#define EXT4_DESC_SIZE_64BIT 64
#define EXT4_MAX_DESC_SIZE 1024
struct ext4_group_desc_hi {
	uint32_t bg_block_bitmap_hi;        /* 0x20 */
	uint32_t bg_inode_bitmap_hi;        /* 0x24 */
	uint32_t bg_inode_table_hi;         /* 0x28 */
	uint16_t bg_free_blocks_count_hi;   /* 0x2C */
	uint16_t bg_free_inodes_count_hi;   /* 0x2E */
	uint16_t bg_used_dirs_count_hi;     /* 0x30 */
	uint16_t bg_itable_unused_hi;       /* 0x32 */
	uint32_t bg_exclude_bitmap_hi;      /* 0x34 */
	uint16_t bg_block_bitmap_csum_hi;   /* 0x38 metadata_csum */
	uint16_t bg_inode_bitmap_csum_hi;   /* 0x3A metadata_csum */
	uint32_t bg_reserved;               /* 0x3C */
};
_Static_assert(EXT3_DESC_SIZE + sizeof(struct ext4_group_desc_hi) == EXT4_DESC_SIZE_64BIT,
	       "ext4 64-bit group descriptor size");

/* ---- inode: s_inode_size bytes each in the inode tables. The first 128 bytes
 * are struct ext3_disk_inode; 256-byte inodes continue with the large fields, of
 * which the first i_extra_isize bytes are in use and the rest may hold
 * in-inode extended attributes (struct ext3_xattr_ibody_header). ---- */

/* i_mode */
#define EXT3_S_IFMT 0xF000
#define EXT3_S_IFSOCK 0xC000
#define EXT3_S_IFLNK 0xA000
#define EXT3_S_IFREG 0x8000
#define EXT3_S_IFBLK 0x6000
#define EXT3_S_IFDIR 0x4000
#define EXT3_S_IFCHR 0x2000
#define EXT3_S_IFIFO 0x1000

/* i_flags */
#define EXT3_SECRM_FL 0x00000001
#define EXT3_UNRM_FL 0x00000002
#define EXT3_COMPR_FL 0x00000004
#define EXT3_SYNC_FL 0x00000008
#define EXT3_IMMUTABLE_FL 0x00000010
#define EXT3_APPEND_FL 0x00000020
#define EXT3_NODUMP_FL 0x00000040
#define EXT3_NOATIME_FL 0x00000080
#define EXT3_INDEX_FL 0x00001000 /* directory uses an htree index */
#define EXT3_JOURNAL_DATA_FL 0x00004000
#define EXT3_DIRSYNC_FL 0x00010000
#define EXT3_TOPDIR_FL 0x00020000
#define EXT4_HUGE_FILE_FL 0x00040000 /* huge_file: i_blocks in filesystem blocks */
#define EXT4_EXTENTS_FL 0x00080000 /* i_block holds an extent tree (ext4) */
#define EXT3_FL_USER_VISIBLE 0x0003DFFFu    /* what FS_IOC_GETFLAGS shows */
#define EXT3_FL_USER_MODIFIABLE 0x000380FFu /* what FS_IOC_SETFLAGS may change */

struct ext3_disk_inode {
	uint16_t i_mode;        /* 0x00 file type (EXT3_S_IF*) and permissions */
	uint16_t i_uid;         /* 0x02 owner uid, low 16 bits */
	uint32_t i_size;        /* 0x04 size in bytes, low 32 bits */
	uint32_t i_atime;       /* 0x08 access time */
	uint32_t i_ctime;       /* 0x0C inode change time */
	uint32_t i_mtime;       /* 0x10 modification time */
	uint32_t i_dtime;       /* 0x14 deletion time (orphan list: next orphan inode) */
	uint16_t i_gid;         /* 0x18 group, low 16 bits */
	uint16_t i_links_count; /* 0x1A hard links */
	uint32_t i_blocks;      /* 0x1C 512-byte sectors used, data + indirect + xattr block */
	uint32_t i_flags;       /* 0x20 EXT3_*_FL */
	uint32_t i_version;     /* 0x24 osd1: Linux i_version */
	uint32_t i_block[EXT3_N_BLOCKS]; /* 0x28 12 direct, single, double, triple indirect
					  * (symlinks < 60 bytes: the target itself) */
	uint32_t i_generation;  /* 0x64 file version (NFS) */
	uint32_t i_file_acl;    /* 0x68 extended attribute block */
	uint32_t i_size_high;   /* 0x6C size, high 32 bits (rev 0: i_dir_acl) */
	uint32_t i_faddr;       /* 0x70 fragment address (unused) */
	uint8_t i_frag;         /* 0x74 fragment number (unused) */
	uint8_t i_fsize;        /* 0x75 fragment size (unused) */
	uint16_t i_pad1;        /* 0x76 */
	uint16_t i_uid_high;    /* 0x78 owner uid, high 16 bits */
	uint16_t i_gid_high;    /* 0x7A group, high 16 bits */
	uint32_t i_reserved2;   /* 0x7C */
};
_Static_assert(sizeof(struct ext3_disk_inode) == EXT3_GOOD_OLD_INODE_SIZE, "ext3 inode size");
_Static_assert(offsetof(struct ext3_disk_inode, i_block) == 0x28, "i_block");
_Static_assert(offsetof(struct ext3_disk_inode, i_size_high) == 0x6C, "i_size_high");

/* The fields after the first 128 bytes (256-byte inodes). */
struct ext3_disk_inode_large {
	struct ext3_disk_inode i;     /* 0x00 */
	uint16_t i_extra_isize;  /* 0x80 bytes in use after 0x80 (32 = through i_projid) */
	uint16_t i_checksum_hi;  /* 0x82 ext4 metadata_csum; 0 */
	uint32_t i_ctime_extra;  /* 0x84 ctime: 2 epoch bits + 30 bits of nanoseconds */
	uint32_t i_mtime_extra;  /* 0x88 mtime extra */
	uint32_t i_atime_extra;  /* 0x8C atime extra */
	uint32_t i_crtime;       /* 0x90 creation time */
	uint32_t i_crtime_extra; /* 0x94 creation time extra */
	uint32_t i_version_hi;   /* 0x98 high 32 bits of i_version */
	uint32_t i_projid;       /* 0x9C project id (ext4 quota) */
};
_Static_assert(sizeof(struct ext3_disk_inode_large) == 160, "ext3 large inode fields");
#define EXT3_INODE_EXTRA_ISIZE 32 /* sizeof(ext3_inode_large) - 128: what mkfs writes */

/* ---- directories: a sequence of variable-length entries per block; each
 * block is completely covered by rec_len values (the last entry's rec_len
 * reaches the end of the block). An entry with inode 0 is unused. ---- */

#define EXT3_NAME_LEN 255
#define EXT3_DIR_PAD 4
/* Minimal record length for a name of n bytes. */
#define EXT3_DIR_REC_LEN(n) ((((unsigned)(n)) + 8 + EXT3_DIR_PAD - 1) & ~(unsigned)(EXT3_DIR_PAD - 1))

/* file_type (filetype feature) */
#define EXT3_FT_UNKNOWN 0
#define EXT3_FT_REG_FILE 1
#define EXT3_FT_DIR 2
#define EXT3_FT_CHRDEV 3
#define EXT3_FT_BLKDEV 4
#define EXT3_FT_FIFO 5
#define EXT3_FT_SOCK 6
#define EXT3_FT_SYMLINK 7

struct ext3_dir_entry_2 {
	uint32_t inode;    /* 0x0 inode number, 0 = unused entry */
	uint16_t rec_len;  /* 0x4 bytes to the next entry (multiple of 4) */
	uint8_t name_len;  /* 0x6 name length */
	uint8_t file_type; /* 0x7 EXT3_FT_* (rev 0 without filetype: high byte of name_len) */
	char name[];       /* 0x8 name, not NUL-terminated, padded to 4 bytes */
};
_Static_assert(sizeof(struct ext3_dir_entry_2) == 8, "ext3 dir entry header");

/* ---- htree (dir_index) directories. Block 0 of an indexed directory is a
 * dx_root: "." and ".." entries whose rec_len hides the index from
 * non-htree readers, the root info, then a count/limit header and the index
 * entries. Interior index blocks (dx_node) start with a fake empty entry
 * covering the whole block. ---- */

#define EXT3_DX_HASH_LEGACY 0
#define EXT3_DX_HASH_HALF_MD4 1
#define EXT3_DX_HASH_TEA 2
#define EXT3_DX_HASH_LEGACY_UNSIGNED 3
#define EXT3_DX_HASH_HALF_MD4_UNSIGNED 4
#define EXT3_DX_HASH_TEA_UNSIGNED 5
#define EXT3_DX_MAX_LEVELS 2 /* indirect_levels 0 or 1 in ext3 */

struct ext3_dx_root_info {
	uint32_t reserved_zero;  /* 0x0 must be 0 */
	uint8_t hash_version;    /* 0x4 EXT3_DX_HASH_* */
	uint8_t info_length;     /* 0x5 sizeof(struct ext3_dx_root_info) = 8 */
	uint8_t indirect_levels; /* 0x6 depth of the tree below the root (0 or 1) */
	uint8_t unused_flags;    /* 0x7 */
};
_Static_assert(sizeof(struct ext3_dx_root_info) == 8, "dx_root_info size");

/* Index entry: the first entry of each count/limit array has no hash (its
 * 4 bytes hold the count/limit header); the others map hash >= this to block. */
struct ext3_dx_entry {
	uint32_t hash;  /* 0x0 lowest hash in the child block (bit 0: collision continuation) */
	uint32_t block; /* 0x4 logical block of the child in the directory */
};
_Static_assert(sizeof(struct ext3_dx_entry) == 8, "dx_entry size");

struct ext3_dx_countlimit {
	uint16_t limit; /* 0x0 entries that fit in this block */
	uint16_t count; /* 0x2 entries in use (including the header slot) */
};
_Static_assert(sizeof(struct ext3_dx_countlimit) == 4, "dx_countlimit size");

struct ext3_dx_root {
	uint32_t dot_inode;          /* 0x00 "." entry: this directory */
	uint16_t dot_rec_len;        /* 0x04 12 */
	uint8_t dot_name_len;        /* 0x06 1 */
	uint8_t dot_file_type;       /* 0x07 EXT3_FT_DIR */
	char dot_name[4];            /* 0x08 ".\0\0\0" */
	uint32_t dotdot_inode;       /* 0x0C ".." entry: the parent */
	uint16_t dotdot_rec_len;     /* 0x10 block size - 12 (covers the index) */
	uint8_t dotdot_name_len;     /* 0x12 2 */
	uint8_t dotdot_file_type;    /* 0x13 EXT3_FT_DIR */
	char dotdot_name[4];         /* 0x14 "..\0\0" */
	struct ext3_dx_root_info info; /* 0x18 */
	struct ext3_dx_countlimit cl;  /* 0x20 limit/count of the entries below */
	uint32_t block0;             /* 0x24 child for hashes below entries[0].hash */
	struct ext3_dx_entry entries[]; /* 0x28 */
};
_Static_assert(sizeof(struct ext3_dx_root) == 0x28, "dx_root header size");

struct ext3_dx_node {
	uint32_t fake_inode;         /* 0x00 0 */
	uint16_t fake_rec_len;       /* 0x04 block size */
	uint8_t fake_name_len;       /* 0x06 0 */
	uint8_t fake_file_type;      /* 0x07 0 */
	struct ext3_dx_countlimit cl; /* 0x08 */
	uint32_t block0;             /* 0x0C child for hashes below entries[0].hash */
	struct ext3_dx_entry entries[]; /* 0x10 */
};
_Static_assert(sizeof(struct ext3_dx_node) == 0x10, "dx_node header size");

/* ---- extended attributes: one block referenced by i_file_acl (shared, with a
 * refcount), or in the inode body after i_extra_isize (256-byte inodes).
 * Entries grow from the start, values from the end; the entry list ends with
 * 4 zero bytes. ---- */

#define EXT3_XATTR_MAGIC 0xEA020000u
#define EXT3_XATTR_PAD 4
#define EXT3_XATTR_LEN(name_len) \
	((((unsigned)(name_len)) + 16 + EXT3_XATTR_PAD - 1) & ~(unsigned)(EXT3_XATTR_PAD - 1))
#define EXT3_XATTR_SIZE(size) \
	((((unsigned)(size)) + EXT3_XATTR_PAD - 1) & ~(unsigned)(EXT3_XATTR_PAD - 1))

/* e_name_index */
#define EXT3_XATTR_INDEX_USER 1
#define EXT3_XATTR_INDEX_POSIX_ACL_ACCESS 2
#define EXT3_XATTR_INDEX_POSIX_ACL_DEFAULT 3
#define EXT3_XATTR_INDEX_TRUSTED 4
#define EXT3_XATTR_INDEX_LUSTRE 5
#define EXT3_XATTR_INDEX_SECURITY 6

struct ext3_xattr_header {
	uint32_t h_magic;       /* 0x00 EXT3_XATTR_MAGIC */
	uint32_t h_refcount;    /* 0x04 inodes sharing this block */
	uint32_t h_blocks;      /* 0x08 blocks used (always 1) */
	uint32_t h_hash;        /* 0x0C hash of all entries (block sharing) */
	uint32_t h_checksum;    /* 0x10 ext4 metadata_csum; 0 */
	uint32_t h_reserved[3]; /* 0x14 */
};
_Static_assert(sizeof(struct ext3_xattr_header) == 32, "xattr header size");

/* In-inode attributes: this 4-byte header at 128 + i_extra_isize, then entries
 * whose e_value_offs count from the first entry. */
struct ext3_xattr_ibody_header {
	uint32_t h_magic; /* 0x0 EXT3_XATTR_MAGIC */
};

struct ext3_xattr_entry {
	uint8_t e_name_len;     /* 0x0 name length */
	uint8_t e_name_index;   /* 0x1 EXT3_XATTR_INDEX_* (name prefix) */
	uint16_t e_value_offs;  /* 0x2 value offset in the block (or ibody region) */
	uint32_t e_value_inum;  /* 0x4 value block/inode (always 0 in ext3) */
	uint32_t e_value_size;  /* 0x8 value length */
	uint32_t e_hash;        /* 0xC hash of name and value */
	char e_name[];          /* 0x10 name (not NUL-terminated), padded to 4 bytes */
};
_Static_assert(sizeof(struct ext3_xattr_entry) == 16, "xattr entry size");

#endif
