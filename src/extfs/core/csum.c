/* ext4 metadata checksums (csum.h). Written from the published ext4 disk
 * layout (Documentation/filesystems/ext4: "Checksums") and checked against
 * images mkfs.ext4 and the kernel make (tests/cli/ext4_extent_read.sh,
 * test_ext4_csum). */
#include "extfs/core/csum.h"
#include "extfs/core/ext3_int.h"
#include "extfs/format/ext4_csum_calc.h"
#include "extfs/format/ext4_extent.h"

#include "buf/buf.h"

#include "util/crc32c.h"
#include "util/endian.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

#define EXT4_CRC32C_CHKSUM 1 /* s_checksum_type */
#define SB_CSUM_OFF 0x3FC
#define INODE_CSUM_LO 0x7C   /* osd2.l_i_checksum_lo */
#define INODE_EXTRA 0x80     /* i_extra_isize */
#define INODE_CSUM_HI 0x82   /* i_checksum_hi, when i_extra_isize >= 4 */
#define GD_CSUM_OFF 0x1E     /* bg_checksum */

static uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

bool ext4_has_metadata_csum(const struct ext3_fs *fs)
{
	return fs->ro_compat & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM;
}

int ext4_csum_init(struct ext3_fs *fs)
{
	const uint8_t *sb = (const uint8_t *)&fs->sb;
	fs->csum_seed = 0;
	if (!ext4_has_metadata_csum(fs))
		return 0;
	if (fs->sb.s_checksum_type != EXT4_CRC32C_CHKSUM)
		return err_set(-EUCLEAN, "ext4: unknown metadata checksum type %u", fs->sb.s_checksum_type);
	uint32_t want = le32_at(sb + SB_CSUM_OFF), got = crc32c(~0u, sb, SB_CSUM_OFF);
	if (want != got)
		return err_set(-EBADMSG, "ext4: superblock checksum mismatch (0x%08x stored, 0x%08x computed)",
			       want, got);
	if (fs->incompat & EXT4_FEATURE_INCOMPAT_CSUM_SEED)
		fs->csum_seed = le32_at(sb + 0x270); /* s_checksum_seed */
	else
		fs->csum_seed = crc32c(~0u, fs->sb.s_uuid, sizeof fs->sb.s_uuid);
	return 0;
}

bool ext4_gd_csum_ok(const struct ext3_fs *fs, uint32_t g, const void *desc)
{
	const uint8_t *d = desc;
	uint16_t want = le16_at(d + GD_CSUM_OFF);
	uint32_t le_g = cpu_to_le32(g);
	static const uint8_t zero2[2];
	size_t size = fs->g.desc_size;
	if (ext4_has_metadata_csum(fs)) {
		uint32_t c = crc32c(fs->csum_seed, &le_g, 4);
		c = crc32c(c, d, GD_CSUM_OFF);
		c = crc32c(c, zero2, 2);
		c = crc32c(c, d + GD_CSUM_OFF + 2, size - GD_CSUM_OFF - 2);
		return want == (uint16_t)(c & 0xFFFF);
	}
	if (fs->ro_compat & EXT4_FEATURE_RO_COMPAT_GDT_CSUM) {
		uint16_t c = crc16(0xFFFF, fs->sb.s_uuid, sizeof fs->sb.s_uuid);
		c = crc16(c, &le_g, 4);
		c = crc16(c, d, GD_CSUM_OFF);
		if (size > GD_CSUM_OFF + 2)
			c = crc16(c, d + GD_CSUM_OFF + 2, size - GD_CSUM_OFF - 2);
		return want == c;
	}
	return true;
}

static uint32_t inode_seed(const struct ext3_fs *fs, uint32_t ino, uint32_t gen)
{
	uint32_t le_ino = cpu_to_le32(ino), le_gen = cpu_to_le32(gen);
	return crc32c(crc32c(fs->csum_seed, &le_ino, 4), &le_gen, 4);
}

bool ext4_inode_csum_ok(const struct ext3_fs *fs, uint32_t ino, const void *raw)
{
	if (!ext4_has_metadata_csum(fs))
		return true;
	const uint8_t *r = raw;
	size_t isz = fs->g.inode_size;
	size_t i = 0;
	while (i < isz && !r[i])
		i++;
	if (i == isz)
		return true; /* never used */
	static const uint8_t zero2[2];
	uint32_t c = inode_seed(fs, ino, le32_at(r + 0x64 /* i_generation */));
	c = crc32c(c, r, INODE_CSUM_LO);
	c = crc32c(c, zero2, 2);
	c = crc32c(c, r + INODE_CSUM_LO + 2, EXT3_GOOD_OLD_INODE_SIZE - INODE_CSUM_LO - 2);
	bool hi = false;
	if (isz > EXT3_GOOD_OLD_INODE_SIZE) {
		hi = le16_at(r + INODE_EXTRA) >= INODE_CSUM_HI + 2 - INODE_EXTRA;
		c = crc32c(c, r + EXT3_GOOD_OLD_INODE_SIZE, INODE_CSUM_HI - EXT3_GOOD_OLD_INODE_SIZE);
		size_t off = INODE_CSUM_HI;
		if (hi) {
			c = crc32c(c, zero2, 2);
			off += 2;
		}
		c = crc32c(c, r + off, isz - off);
	}
	uint32_t want = le16_at(r + INODE_CSUM_LO);
	if (hi)
		want |= (uint32_t)le16_at(r + INODE_CSUM_HI) << 16;
	else
		c &= 0xFFFF;
	return want == c;
}

bool ext4_extent_block_csum_ok(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, const void *block)
{
	if (!ext4_has_metadata_csum(fs))
		return true;
	const uint8_t *b = block;
	size_t tail = sizeof(struct ext4_extent_header) + (size_t)le16_at(b + 4) * sizeof(struct ext4_extent);
	if (tail + 4 > fs->g.block_size)
		return false;
	return le32_at(b + tail) == crc32c(inode_seed(fs, ino, gen), b, tail);
}

void ext4_extent_block_csum_update(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, void *block)
{
	if (ext4_has_metadata_csum(fs))
		ext4_extent_block_csum_set(fs->csum_seed, ino, gen, block);
}

bool ext4_dir_is_dx_block(const uint8_t *b, unsigned bs)
{
	unsigned rl = le16_at(b + 4);
	if (rl == bs)
		return true;
	return rl == 12 && le16_at(b + 12 + 4) == bs - 12;
}

bool ext4_dirblock_csum_ok(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, const void *block)
{
	if (!ext4_has_metadata_csum(fs))
		return true;
	const uint8_t *b = block;
	size_t bs = fs->g.block_size;
	const uint8_t *tail = b + bs - 12;
	/* struct ext4_dir_entry_tail: inode 0, rec_len 12, name_len 0, type 0xDE */
	if (le32_at(tail) != 0 || le16_at(tail + 4) != 12 || tail[6] != 0 || tail[7] != 0xDE)
		return false;
	return le32_at(tail + 8) == crc32c(inode_seed(fs, ino, gen), b, bs - 12);
}

bool ext4_dx_csum_ok(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, const void *block, unsigned count_off)
{
	if (!ext4_has_metadata_csum(fs))
		return true;
	const uint8_t *b = block;
	unsigned limit = le16_at(b + count_off), count = le16_at(b + count_off + 2);
	size_t tail = count_off + (size_t)limit * 8;
	if (tail + 8 > fs->g.block_size || count > limit)
		return false;
	uint32_t c = crc32c(inode_seed(fs, ino, gen), b, count_off + (size_t)count * 8);
	static const uint8_t zero4[4];
	c = crc32c(c, b + tail, 4); /* dt_reserved */
	c = crc32c(c, zero4, 4);    /* dt_checksum taken as zero */
	return le32_at(b + tail + 4) == c;
}

/* ---- verify side: xattr blocks and bitmaps (issue 38) ---- */

#define XATTR_CSUM_OFF 0x10     /* h_checksum in the xattr block header */
#define GD_BBITMAP_CSUM_LO 0x18 /* bg_block_bitmap_csum_lo */
#define GD_IBITMAP_CSUM_LO 0x1A /* bg_inode_bitmap_csum_lo */
#define GD_BBITMAP_CSUM_HI 0x38 /* bg_block_bitmap_csum_hi */
#define GD_IBITMAP_CSUM_HI 0x3A /* bg_inode_bitmap_csum_hi */

bool ext4_xattr_block_csum_ok(const struct ext3_fs *fs, uint64_t blk, const void *block)
{
	if (!ext4_has_metadata_csum(fs))
		return true;
	const uint8_t *b = block;
	size_t bs = fs->g.block_size;
	uint8_t le_blk[8];
	for (int i = 0; i < 8; i++)
		le_blk[i] = (uint8_t)(blk >> (8 * i));
	static const uint8_t zero4[4];
	uint32_t c = crc32c(fs->csum_seed, le_blk, 8);
	c = crc32c(c, b, XATTR_CSUM_OFF);
	c = crc32c(c, zero4, 4);
	c = crc32c(c, b + XATTR_CSUM_OFF + 4, bs - XATTR_CSUM_OFF - 4);
	return le32_at(b + XATTR_CSUM_OFF) == c;
}

bool ext4_bitmap_csum_ok(const struct ext3_fs *fs, const void *desc, bool inode_bitmap, const void *bitmap)
{
	if (!ext4_has_metadata_csum(fs))
		return true;
	const uint8_t *d = desc;
	/* s_clusters_per_group (0x24, ext3's s_frags_per_group): a block
	 * bitmap has a bit per cluster */
	uint32_t bits = inode_bitmap ? fs->g.inodes_per_group : le32_at((const uint8_t *)&fs->sb + 0x24);
	unsigned lo = inode_bitmap ? GD_IBITMAP_CSUM_LO : GD_BBITMAP_CSUM_LO;
	unsigned hi = inode_bitmap ? GD_IBITMAP_CSUM_HI : GD_BBITMAP_CSUM_HI;
	if ((size_t)bits / 8 > fs->g.block_size)
		return false;
	uint32_t c = crc32c(fs->csum_seed, bitmap, bits / 8);
	uint32_t want = le16_at(d + lo);
	if (fs->g.desc_size >= hi + 2u)
		want |= (uint32_t)le16_at(d + hi) << 16;
	else
		c &= 0xFFFF;
	return want == c;
}

/* ---- set side: the write path (issue 39) ----
 * The same formulas as the _ok functions above, storing instead of
 * comparing; the verify side is the test of each (a block set here must
 * pass its _ok, test_ext4_csum_write). */

bool ext4_has_group_desc_csum(const struct ext3_fs *fs)
{
	return fs->ro_compat & (EXT4_FEATURE_RO_COMPAT_METADATA_CSUM | EXT4_FEATURE_RO_COMPAT_GDT_CSUM);
}

unsigned ext4_dir_tail_bytes(const struct ext3_fs *fs)
{
	return ext4_has_metadata_csum(fs) ? 12 : 0;
}

void ext4_sb_csum_update(const struct ext3_fs *fs, void *sb)
{
	if (!ext4_has_metadata_csum(fs))
		return;
	uint8_t *s = sb;
	put_le32(s + SB_CSUM_OFF, crc32c(~0u, s, SB_CSUM_OFF));
}

void ext4_gd_csum_update(const struct ext3_fs *fs, uint32_t g, void *desc)
{
	if (!ext4_has_group_desc_csum(fs))
		return;
	uint8_t *d = desc;
	uint32_t le_g = cpu_to_le32(g);
	size_t size = fs->g.desc_size;
	put_le16(d + GD_CSUM_OFF, 0);
	if (ext4_has_metadata_csum(fs)) {
		uint32_t c = crc32c(fs->csum_seed, &le_g, 4);
		c = crc32c(c, d, size);
		put_le16(d + GD_CSUM_OFF, (uint16_t)(c & 0xFFFF));
		return;
	}
	uint16_t c = crc16(0xFFFF, fs->sb.s_uuid, sizeof fs->sb.s_uuid);
	c = crc16(c, &le_g, 4);
	c = crc16(c, d, GD_CSUM_OFF);
	if (size > GD_CSUM_OFF + 2)
		c = crc16(c, d + GD_CSUM_OFF + 2, size - GD_CSUM_OFF - 2);
	put_le16(d + GD_CSUM_OFF, c);
}

uint32_t ext4_bitmap_csum_of(const struct ext3_fs *fs, bool inode_bitmap, const void *bitmap)
{
	if (!ext4_has_metadata_csum(fs))
		return 0;
	uint32_t bits = inode_bitmap ? fs->g.inodes_per_group : le32_at((const uint8_t *)&fs->sb + 0x24);
	if ((size_t)bits / 8 > fs->g.block_size)
		bits = fs->g.block_size * 8;
	return crc32c(fs->csum_seed, bitmap, bits / 8);
}

bool ext4_bitmap_csum_flip(const struct ext3_fs *fs, bool inode_bitmap, uint32_t *csum, uint32_t bit,
			   uint32_t nbits)
{
	uint32_t bits = inode_bitmap ? fs->g.inodes_per_group : le32_at((const uint8_t *)&fs->sb + 0x24);
	if ((size_t)bits / 8 > fs->g.block_size)
		bits = fs->g.block_size * 8;
	size_t len = bits / 8;
	uint64_t end = (uint64_t)bit + nbits; /* bits [bit, end) */
	size_t b0 = bit / 8, b1 = (size_t)((end + 7) / 8); /* bytes [b0, b1) */
	uint8_t mask[256];
	if (!nbits || end > (uint64_t)len * 8 || b1 - b0 > sizeof mask)
		return false;
	memset(mask, 0xFF, b1 - b0);
	mask[0] &= (uint8_t)(0xFFu << (bit & 7));
	if (end & 7)
		mask[b1 - b0 - 1] &= (uint8_t)(0xFFu >> (8 - (end & 7)));
	*csum ^= crc32c_zeros(crc32c(0, mask, b1 - b0), len - b1);
	return true;
}

void ext4_gd_bitmap_csum_put(const struct ext3_fs *fs, void *desc, bool inode_bitmap, uint32_t csum)
{
	if (!ext4_has_metadata_csum(fs))
		return;
	uint8_t *d = desc;
	unsigned lo = inode_bitmap ? GD_IBITMAP_CSUM_LO : GD_BBITMAP_CSUM_LO;
	unsigned hi = inode_bitmap ? GD_IBITMAP_CSUM_HI : GD_BBITMAP_CSUM_HI;
	put_le16(d + lo, (uint16_t)csum);
	if (fs->g.desc_size >= hi + 2u)
		put_le16(d + hi, (uint16_t)(csum >> 16));
}

void ext4_inode_csum_update(const struct ext3_fs *fs, uint32_t ino, void *raw)
{
	if (!ext4_has_metadata_csum(fs))
		return;
	ext4_inode_csum_update_seeded(fs, inode_seed(fs, ino, le32_at((const uint8_t *)raw + 0x64)), raw);
}

uint32_t ext4_inode_csum_seed(const struct ext3_inode *in, uint32_t gen)
{
	_Atomic uint64_t *cache = &((struct ext3_inode *)in)->csum_seed;
	uint64_t v = atomic_load_explicit(cache, memory_order_relaxed);
	if (v && (uint32_t)(v >> 32) == gen)
		return (uint32_t)v;
	uint32_t seed = inode_seed(in->fs, in->ino, gen);
	atomic_store_explicit(cache, (uint64_t)gen << 32 | seed, memory_order_relaxed);
	return seed;
}

void ext4_inode_csum_update_seeded(const struct ext3_fs *fs, uint32_t seed, void *raw)
{
	if (!ext4_has_metadata_csum(fs))
		return;
	uint8_t *r = raw;
	size_t isz = fs->g.inode_size;
	bool hi = isz > EXT3_GOOD_OLD_INODE_SIZE && le16_at(r + INODE_EXTRA) >= INODE_CSUM_HI + 2 - INODE_EXTRA;
	put_le16(r + INODE_CSUM_LO, 0);
	if (hi)
		put_le16(r + INODE_CSUM_HI, 0);
	uint32_t c = crc32c(seed, r, isz);
	put_le16(r + INODE_CSUM_LO, (uint16_t)c);
	if (hi)
		put_le16(r + INODE_CSUM_HI, (uint16_t)(c >> 16));
}

void ext4_dirblock_csum_update(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, void *block)
{
	if (!ext4_has_metadata_csum(fs))
		return;
	size_t bs = fs->g.block_size;
	uint8_t *t = (uint8_t *)block + bs - 12;
	memset(t, 0, 12);
	put_le16(t + 4, 12);
	t[7] = 0xDE;
	put_le32(t + 8, crc32c(inode_seed(fs, ino, gen), block, bs - 12));
}

void ext4_dx_csum_update(const struct ext3_fs *fs, uint32_t ino, uint32_t gen, void *block, unsigned count_off)
{
	if (!ext4_has_metadata_csum(fs))
		return;
	uint8_t *b = block;
	unsigned limit = le16_at(b + count_off), count = le16_at(b + count_off + 2);
	size_t tail = count_off + (size_t)limit * 8;
	if (tail + 8 > fs->g.block_size || count > limit)
		return; /* not an index this code wrote: the read side reports it */
	memset(b + tail, 0, 8); /* dt_reserved, dt_checksum */
	uint32_t c = crc32c(inode_seed(fs, ino, gen), b, count_off + (size_t)count * 8);
	c = crc32c(c, b + tail, 8);
	put_le32(b + tail + 4, c);
}

void ext4_xattr_block_csum_update(const struct ext3_fs *fs, uint64_t blk, void *block)
{
	if (!ext4_has_metadata_csum(fs))
		return;
	uint8_t *b = block;
	uint8_t le_blk[8];
	for (int i = 0; i < 8; i++)
		le_blk[i] = (uint8_t)(blk >> (8 * i));
	put_le32(b + XATTR_CSUM_OFF, 0);
	uint32_t c = crc32c(fs->csum_seed, le_blk, 8);
	c = crc32c(c, b, fs->g.block_size);
	put_le32(b + XATTR_CSUM_OFF, c);
}

/* ---- deferred sums (buf_csum_defer, docs/ext4-csum.md) ----
 * The settle functions run on the commit thread or a freezing handle with
 * every writer of the block excluded (buf.h). They write only the sum's 4
 * bytes: lookups may read the rest of the block meanwhile. A block whose
 * shape no longer matches (it cannot: a new meaning goes through create
 * access, which cancels) is left alone rather than overwritten. */

static void dirleaf_settle(uint32_t seed, void *data, unsigned bs)
{
	uint8_t *b = data;
	const uint8_t *t = b + bs - 12;
	if (le32_at(t) != 0 || le16_at(t + 4) != 12 || t[7] != 0xDE)
		return;
	put_le32(b + bs - 4, crc32c(seed, b, bs - 12));
}

static void extent_settle(uint32_t seed, void *data, unsigned bs)
{
	uint8_t *b = data;
	size_t tail = 12 + (size_t)le16_at(b + 4) * 12;
	if (le16_at(b) != EXT4_EXT_MAGIC || tail + 4 > bs)
		return;
	put_le32(b + tail, crc32c(seed, b, tail));
}

/* Deferred to the journal's copy, or (no journal: nothing would settle
 * it) computed now by the same function. */
static void csum_defer(const struct ext3_fs *fs, struct buffer_head *bh, buf_csum_fn fn, uint32_t seed)
{
	if (fs->journal)
		buf_csum_defer(bh, fn, seed);
	else
		fn(seed, buf_data(bh), fs->g.block_size);
}

void ext4_dirblock_csum_defer(const struct ext3_inode *dir, struct buffer_head *bh)
{
	const struct ext3_fs *fs = dir->fs;
	if (!ext4_has_metadata_csum(fs))
		return;
	uint8_t *t = (uint8_t *)buf_data(bh) + fs->g.block_size - 12;
	memset(t, 0, 8);
	put_le16(t + 4, 12);
	t[7] = 0xDE;
	csum_defer(fs, bh, dirleaf_settle, ext4_inode_csum_seed(dir, dir->a.generation));
}

void ext4_extent_block_csum_defer(const struct ext3_inode *in, struct buffer_head *bh)
{
	if (ext4_has_metadata_csum(in->fs))
		csum_defer(in->fs, bh, extent_settle, ext4_inode_csum_seed(in, in->a.generation));
}

/* seed: the superblock's offset in its block */
static void sb_settle(uint32_t off, void *data, unsigned bs)
{
	if (off + 1024u > bs)
		return;
	uint8_t *s = (uint8_t *)data + off;
	put_le32(s + SB_CSUM_OFF, crc32c(~0u, s, SB_CSUM_OFF));
}

void ext4_sb_csum_defer(const struct ext3_fs *fs, struct buffer_head *bh, unsigned off)
{
	if (ext4_has_metadata_csum(fs))
		csum_defer(fs, bh, sb_settle, off);
}
