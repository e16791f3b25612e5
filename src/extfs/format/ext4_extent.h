/* ext4 extent tree on disk (docs/ext4-extents.md; the kernel's
 * Documentation/filesystems/ext4/dynamic.rst, "The Extent Tree").
 *
 * An inode with EXT4_EXTENTS_FL keeps, in its 60-byte i_block, a header and
 * up to four 12-byte entries. At depth 0 the entries are extents (leaves);
 * above, index entries that point at a block holding the next level: again
 * a header, then (block_size - 12) / 12 entries, then (metadata_csum) a
 * 4-byte tail with the crc32c of the block. Entries are sorted by logical
 * block; an extent maps up to 32768 blocks (initialized) or 32767
 * (unwritten: ee_len above 32768, read as zeros). All fields little-endian,
 * offsets in the comments, sizes pinned below. */
#ifndef NOSTALL_EXT4_EXTENT_H
#define NOSTALL_EXT4_EXTENT_H

#include <stddef.h>
#include <stdint.h>

/* EXT4_EXTENTS_FL (i_flags 0x80000: i_block holds an extent tree): ext3_format.h. */
#define EXT4_EXT_MAGIC 0xF30A
#define EXT4_EXT_MAX_DEPTH 5
#define EXT4_EXT_INIT_MAX_LEN 32768u     /* ee_len of an initialized extent: 1..32768 */
#define EXT4_EXT_UNWRITTEN_MAX_LEN 32767u /* ee_len - 32768 of an unwritten one: 1..32767 */

struct ext4_extent_header {
	uint16_t eh_magic;      /* 0x0 EXT4_EXT_MAGIC */
	uint16_t eh_entries;    /* 0x2 valid entries following */
	uint16_t eh_max;        /* 0x4 room for entries */
	uint16_t eh_depth;      /* 0x6 0: entries are extents; else index entries */
	uint32_t eh_generation; /* 0x8 unused by the kernel */
};
_Static_assert(sizeof(struct ext4_extent_header) == 12, "extent header size");

/* An index entry: the subtree covering logical blocks from ei_block on. */
struct ext4_extent_idx {
	uint32_t ei_block;   /* 0x0 first logical block the subtree covers */
	uint32_t ei_leaf_lo; /* 0x4 block of the next level, low 32 bits */
	uint16_t ei_leaf_hi; /* 0x8 high 16 bits */
	uint16_t ei_unused;  /* 0xA */
};
_Static_assert(sizeof(struct ext4_extent_idx) == 12, "extent index size");

/* A leaf entry: ee_len blocks from ee_block, on disk from ee_start. */
struct ext4_extent {
	uint32_t ee_block;    /* 0x0 first logical block */
	uint16_t ee_len;      /* 0x4 length; > 32768: unwritten, length ee_len - 32768 */
	uint16_t ee_start_hi; /* 0x6 physical start, high 16 bits */
	uint32_t ee_start_lo; /* 0x8 physical start, low 32 bits */
};
_Static_assert(sizeof(struct ext4_extent) == 12, "extent size");
_Static_assert(offsetof(struct ext4_extent, ee_start_lo) == 8, "ee_start_lo");

/* After eh_max entries of a tree block (metadata_csum): crc32c over the
 * filesystem's seed, the inode number and generation, and the block up to
 * here. */
struct ext4_extent_tail {
	uint32_t et_checksum; /* 0x0 */
};
_Static_assert(sizeof(struct ext4_extent_tail) == 4, "extent tail size");

#endif
