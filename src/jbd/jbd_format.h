/* JBD (ext3 journal) on-disk format (docs/ext3-format.md, "Journal").
 *
 * Unlike the filesystem, the journal is BIG-endian. Every journal metadata
 * block starts with struct jbd_header; the journal superblock lives in block 0
 * of the journal (the first block of inode 8 for an internal journal).
 *
 * Written from the published jbd2 disk-layout documentation. Of the jbd2
 * extensions nostall writes the v1 commit checksum with asynchronous
 * commit (mount options journal_checksum / journal_async_commit,
 * docs/journal.md "Asynchronous commit"), 64-bit block numbers and v3
 * checksums (journal_64bit, journal_csum=v3: docs/journal.md "The jbd2
 * write format"); it reads v2 checksums too. Fast commits are listed only
 * where they occupy bytes that must stay zero.
 *
 * A transaction on disk:
 *   descriptor block (tags) + the logged blocks it describes [repeat]
 *   revoke blocks (optional)
 *   commit block
 * Recovery runs three passes over the log from s_start: SCAN (find the last
 * committed transaction), REVOKE (collect revoked blocks), REPLAY (write the
 * logged blocks home unless revoked by the same or a later transaction).
 */
#ifndef NOSTALL_JBD_FORMAT_H
#define NOSTALL_JBD_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "util/endian.h"

/* Byte order: util/endian.h. */

#define JBD_MAGIC_NUMBER 0xC03B3998u
#define JBD_MIN_JOURNAL_BLOCKS 1024

/* h_blocktype */
#define JBD_DESCRIPTOR_BLOCK 1
#define JBD_COMMIT_BLOCK 2
#define JBD_SUPERBLOCK_V1 3
#define JBD_SUPERBLOCK_V2 4
#define JBD_REVOKE_BLOCK 5

/* Features (superblock v2 only; v1 has none). */
/* jbd2 v1 checksum: each commit block carries a CRC-32 (util/crc32.h, MSB
 * first, seed ~0) of the transaction's descriptor blocks and logged blocks
 * in log order (revoke blocks are not covered); recovery compares it. */
#define JBD_FEATURE_COMPAT_CHECKSUM 0x00000001
#define JBD_FEATURE_INCOMPAT_REVOKE 0x00000001      /* revoke blocks may appear in the log */
#define JBD_FEATURE_INCOMPAT_64BIT 0x00000002       /* jbd2: 64-bit block numbers (tags carry
						     * t_blocknr_high, revoke records are 8 bytes) */
/* jbd2: the commit block may reach the disk before the blocks it closes
 * (one flush after all of them instead of one before the commit block);
 * a commit whose checksum does not match ends the log (not an error). */
#define JBD_FEATURE_INCOMPAT_ASYNC_COMMIT 0x00000004
/* jbd2 v2/v3 checksums (crc32c, seeded with the crc32c of s_uuid): the
 * superblock (s_checksum), each descriptor and revoke block (a 4-byte tail),
 * each commit block (h_chksum[0]) and each logged block (its tag: 16 bits in
 * v2, 32 in v3, whose tags are always 16 bytes). Never both, never with
 * COMPAT_CHECKSUM. */
#define JBD_FEATURE_INCOMPAT_CSUM_V2 0x00000008
#define JBD_FEATURE_INCOMPAT_CSUM_V3 0x00000010
#define JBD_FEATURE_INCOMPAT_FAST_COMMIT 0x00000020 /* fast-commit area after the log (refused) */
#define JBD_KNOWN_COMPAT_FEATURES JBD_FEATURE_COMPAT_CHECKSUM
/* What a writable load takes (a v2 journal is written as v3 from then on:
 * the log is empty at load). */
#define JBD_KNOWN_INCOMPAT_FEATURES \
	(JBD_FEATURE_INCOMPAT_REVOKE | JBD_FEATURE_INCOMPAT_ASYNC_COMMIT | JBD_FEATURE_INCOMPAT_64BIT | \
	 JBD_FEATURE_INCOMPAT_CSUM_V2 | JBD_FEATURE_INCOMPAT_CSUM_V3)
#define JBD_KNOWN_ROCOMPAT_FEATURES 0u
/* What recovery reads: the same. */
#define JBD_RECOVERY_INCOMPAT_FEATURES JBD_KNOWN_INCOMPAT_FEATURES

/* Common header of every journal metadata block. */
struct jbd_header {
	uint32_t h_magic;     /* 0x0 JBD_MAGIC_NUMBER */
	uint32_t h_blocktype; /* 0x4 JBD_*_BLOCK / JBD_SUPERBLOCK_V* */
	uint32_t h_sequence;  /* 0x8 transaction id this block belongs to */
};
_Static_assert(sizeof(struct jbd_header) == 12, "jbd header size");

/* ---- journal superblock: the first 1024 bytes of journal block 0 ---- */

#define JBD_USERS_MAX 48
#define JBD_USERS_SIZE (JBD_USERS_MAX * 16)

struct jbd_superblock {
	struct jbd_header s_header;   /* 0x000 type JBD_SUPERBLOCK_V1 or V2, sequence 0 */
	/* static information describing the journal */
	uint32_t s_blocksize;         /* 0x00C journal block size (= filesystem block size) */
	uint32_t s_maxlen;            /* 0x010 total blocks in the journal */
	uint32_t s_first;             /* 0x014 first block of log information (1) */
	/* dynamic information describing the current state of the log */
	uint32_t s_sequence;          /* 0x018 first commit id expected in the log */
	uint32_t s_start;             /* 0x01C block of the log start; 0 = clean, nothing to replay */
	uint32_t s_errno;             /* 0x020 error recorded by an aborted journal (negative errno) */
	/* superblock v2 only */
	uint32_t s_feature_compat;    /* 0x024 JBD_FEATURE_COMPAT_* */
	uint32_t s_feature_incompat;  /* 0x028 JBD_FEATURE_INCOMPAT_* */
	uint32_t s_feature_ro_compat; /* 0x02C none defined */
	uint8_t s_uuid[16];           /* 0x030 journal uuid (the filesystem uuid for an internal journal) */
	uint32_t s_nr_users;          /* 0x040 filesystems sharing the journal (1 when internal) */
	uint32_t s_dynsuper;          /* 0x044 block of a dynamic superblock copy (unused) */
	uint32_t s_max_transaction;   /* 0x048 limit of journal blocks per transaction (0 = none) */
	uint32_t s_max_trans_data;    /* 0x04C limit of data blocks per transaction (0 = none) */
	uint8_t s_checksum_type;      /* 0x050 jbd2 v2/v3: JBD_CRC32C_CHKSUM */
	uint8_t s_padding2[3];        /* 0x051 */
	uint32_t s_num_fc_blks;       /* 0x054 jbd2 fast-commit blocks (unused here) */
	uint32_t s_head;              /* 0x058 jbd2 log head (informational) */
	uint32_t s_padding[40];       /* 0x05C */
	uint32_t s_checksum;          /* 0x0FC jbd2 v2/v3: crc32c of these 1024 bytes with this
				       * field zero, seed ~0 */
	uint8_t s_users[JBD_USERS_SIZE]; /* 0x100 uuids of the sharing filesystems (external journals;
					  * zero for an internal journal) */
};
_Static_assert(sizeof(struct jbd_superblock) == 1024, "jbd superblock size");
_Static_assert(offsetof(struct jbd_superblock, s_uuid) == 0x30, "jbd s_uuid");
_Static_assert(offsetof(struct jbd_superblock, s_nr_users) == 0x40, "jbd s_nr_users");
_Static_assert(offsetof(struct jbd_superblock, s_users) == 0x100, "jbd s_users");
_Static_assert(offsetof(struct jbd_superblock, s_checksum) == 0xFC, "jbd s_checksum");

/* ---- descriptor block: header, then tags until LAST_TAG; each tag is
 * followed by the 16-byte journal uuid unless it carries SAME_UUID (the first
 * tag of a block always carries the uuid). The logged blocks follow the
 * descriptor in tag order. ---- */

/* t_flags */
#define JBD_FLAG_ESCAPE 1    /* the logged copy had its first 4 bytes (the magic) zeroed */
#define JBD_FLAG_SAME_UUID 2 /* no uuid follows this tag */
#define JBD_FLAG_DELETED 4   /* (unused) */
#define JBD_FLAG_LAST_TAG 8  /* last tag of this descriptor */

struct jbd_block_tag {
	uint32_t t_blocknr; /* 0x0 filesystem block the logged copy belongs to */
	uint32_t t_flags;   /* 0x4 JBD_FLAG_* (jbd2 without checksums: the same bytes as
			     * be16 checksum at 0x4 + be16 flags at 0x6) */
};
_Static_assert(sizeof(struct jbd_block_tag) == 8, "jbd block tag size");
#define JBD_TAG_UUID_SIZE 16

/* jbd2 tags. Without v3: be32 t_blocknr, be16 t_checksum (v2: the low 16
 * bits of the block's crc32c), be16 t_flags, then be32 t_blocknr_high with
 * 64BIT; the tag is 8 bytes, +2 with v2 (the historical layout keeps the
 * checksum field and adds two bytes), +4 with 64BIT. With v3 every tag is
 * struct jbd_block_tag3. Descriptor blocks of v2/v3 end in a
 * struct jbd_block_tail (the tags stop before it). */
struct jbd_block_tag3 {
	uint32_t t_blocknr;      /* 0x0 */
	uint32_t t_flags;        /* 0x4 JBD_FLAG_* */
	uint32_t t_blocknr_high; /* 0x8 with 64BIT, else unused */
	uint32_t t_checksum;     /* 0xC crc32c(seed, be32 tid, the logged block) */
};
_Static_assert(sizeof(struct jbd_block_tag3) == 16, "jbd2 tag3 size");

struct jbd_block_tail {
	uint32_t t_checksum; /* 0x0 crc32c(seed, the block with this field zero) */
};
_Static_assert(sizeof(struct jbd_block_tail) == 4, "jbd2 block tail size");

/* ---- revoke block: header, byte count, then big-endian block numbers ---- */

struct jbd_revoke_header {
	struct jbd_header r_header; /* 0x0 type JBD_REVOKE_BLOCK */
	uint32_t r_count;           /* 0xC bytes used in this block, including this header */
	uint32_t r_blocks[];        /* 0x10 revoked filesystem blocks (4 bytes each; 8 with
				     * 64BIT; v2/v3 blocks end in a struct jbd_block_tail,
				     * which r_count leaves out) */
};
_Static_assert(sizeof(struct jbd_revoke_header) == 16, "jbd revoke header size");

/* ---- commit block: the header marks the transaction committed. jbd2
 * appends checksum and commit-time fields: with COMPAT_CHECKSUM the v1
 * checksum (type JBD_CRC32_CHKSUM, size 4, h_chksum[0]); with v2/v3 type
 * and size 0 and h_chksum[0] the crc32c (seed: crc32c of s_uuid) of the
 * whole block with h_chksum[0] zero; else zero. ---- */

#define JBD_CRC32_CHKSUM 1      /* h_chksum_type of a v1 checksum */
#define JBD_CRC32_CHKSUM_SIZE 4 /* its h_chksum_size */
#define JBD_CRC32C_CHKSUM 4     /* s_checksum_type of a v2/v3 journal */

struct jbd_commit_block {
	struct jbd_header h_header; /* 0x00 type JBD_COMMIT_BLOCK */
	uint8_t h_chksum_type;      /* 0x0C JBD_CRC32_CHKSUM with COMPAT_CHECKSUM, else 0 */
	uint8_t h_chksum_size;      /* 0x0D JBD_CRC32_CHKSUM_SIZE, else 0 */
	uint8_t h_padding[2];       /* 0x0E */
	uint32_t h_chksum[8];       /* 0x10 [0]: the v1 checksum (big-endian), else 0 */
	uint64_t h_commit_sec;      /* 0x30 commit time, seconds (informational) */
	uint32_t h_commit_nsec;     /* 0x38 commit time, nanoseconds */
	uint32_t h_pad2;            /* 0x3C (structure padding, not an on-disk field) */
};
_Static_assert(offsetof(struct jbd_commit_block, h_commit_sec) == 0x30, "jbd commit time");
_Static_assert(sizeof(struct jbd_commit_block) == 0x40, "jbd commit block size");

#endif
