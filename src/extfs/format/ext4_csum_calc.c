/* ext4 metadata_csum set side (ext4_csum_calc.h). The formulas are the
 * ones extfs/core/csum.c verifies; test_mkfs and tests/cli/mkfs_types.sh
 * check the results with e2fsck and the kernel. */
#include "extfs/format/ext4_csum_calc.h"

#include "util/crc32c.h"
#include "util/endian.h"

#include <string.h>

#define SB_CSUM_OFF 0x3FC
#define GD_CSUM_OFF 0x1E
#define INODE_CSUM_LO 0x7C
#define INODE_EXTRA 0x80
#define INODE_CSUM_HI 0x82
#define GOOD_OLD_INODE 128

static uint32_t obj_seed(uint32_t seed, uint32_t ino, uint32_t gen)
{
	uint8_t b[4];
	put_le32(b, ino);
	seed = crc32c(seed, b, 4);
	put_le32(b, gen);
	return crc32c(seed, b, 4);
}

uint32_t ext4_csum_seed_of(const uint8_t uuid[16])
{
	return crc32c(~0u, uuid, 16);
}

void ext4_sb_csum_set(void *sb)
{
	uint8_t *s = sb;
	put_le32(s + SB_CSUM_OFF, crc32c(~0u, s, SB_CSUM_OFF));
}

void ext4_gd_csum_set(uint32_t seed, uint32_t g, void *desc, size_t desc_size)
{
	uint8_t *d = desc, le_g[4];
	put_le16(d + GD_CSUM_OFF, 0);
	put_le32(le_g, g);
	uint32_t c = crc32c(seed, le_g, 4);
	c = crc32c(c, d, desc_size);
	put_le16(d + GD_CSUM_OFF, (uint16_t)(c & 0xFFFF));
}

uint32_t ext4_bitmap_csum(uint32_t seed, const void *bm, size_t len)
{
	return crc32c(seed, bm, len);
}

void ext4_inode_csum_set(uint32_t seed, uint32_t ino, void *raw, size_t isz)
{
	uint8_t *r = raw;
	int hi = isz > GOOD_OLD_INODE && (r[INODE_EXTRA] | r[INODE_EXTRA + 1] << 8) >= 4;
	put_le16(r + INODE_CSUM_LO, 0);
	if (hi)
		put_le16(r + INODE_CSUM_HI, 0);
	uint32_t c = crc32c(obj_seed(seed, ino, get_le32(r + 0x64)), r, isz);
	put_le16(r + INODE_CSUM_LO, (uint16_t)c);
	if (hi)
		put_le16(r + INODE_CSUM_HI, (uint16_t)(c >> 16));
}

void ext4_dirblock_tail_set(uint32_t seed, uint32_t ino, uint32_t gen, void *block, size_t bs)
{
	uint8_t *t = (uint8_t *)block + bs - 12;
	memset(t, 0, 12);
	put_le16(t + 4, 12);
	t[7] = 0xDE;
	put_le32(t + 8, crc32c(obj_seed(seed, ino, gen), block, bs - 12));
}

void ext4_extent_block_csum_set(uint32_t seed, uint32_t ino, uint32_t gen, void *block)
{
	uint8_t *b = block;
	size_t tail = 12 + (size_t)(b[4] | b[5] << 8) * 12;
	put_le32(b + tail, crc32c(obj_seed(seed, ino, gen), b, tail));
}
