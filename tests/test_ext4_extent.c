/* ext4 extent tree lookup (src/extfs/inode/extent.c) on trees built here
 * block by block: depth 0 in the inode, depth 1 and 2 through tree blocks,
 * holes before, between and after extents, unwritten extents, 48-bit
 * physical blocks, and each corruption ext4_ext_check refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "extfs/format/ext4_extent.h"
#include "extfs/inode/extent.h"
#include "util/endian.h"

#include <errno.h>

#define BS 1024
#define NBLK 64

static uint8_t disk[NBLK][BS];
static int reads;

static int rd(void *ctx, uint64_t pblk, void *buf)
{
	(void)ctx;
	reads++;
	if (pblk >= NBLK)
		return -EIO;
	memcpy(buf, disk[pblk], BS);
	return 0;
}

static struct ext4_ext_source src = { .read = rd, .block_size = BS, .blocks_count = 1ull << 48, .ino = 12 };

static void hdr(void *p, unsigned n, unsigned max, unsigned depth)
{
	struct ext4_extent_header h = { cpu_to_le16(EXT4_EXT_MAGIC), cpu_to_le16((uint16_t)n),
					cpu_to_le16((uint16_t)max), cpu_to_le16((uint16_t)depth), 0 };
	memcpy(p, &h, sizeof h);
}

static void ext(void *node, unsigned i, uint32_t lblk, unsigned len, uint64_t pblk)
{
	struct ext4_extent e = { cpu_to_le32(lblk), cpu_to_le16((uint16_t)len), cpu_to_le16((uint16_t)(pblk >> 32)),
				 cpu_to_le32((uint32_t)pblk) };
	memcpy((uint8_t *)node + 12 + 12 * i, &e, 12);
}

static void idx(void *node, unsigned i, uint32_t lblk, uint64_t child)
{
	struct ext4_extent_idx x = { cpu_to_le32(lblk), cpu_to_le32((uint32_t)child),
				     cpu_to_le16((uint16_t)(child >> 32)), 0 };
	memcpy((uint8_t *)node + 12 + 12 * i, &x, 12);
}

static int look(const void *root, uint32_t lblk, struct ext4_ext_map *m)
{
	static uint8_t scratch[BS];
	return ext4_ext_lookup(&src, root, lblk, scratch, m);
}

static void test_depth0(void **state)
{
	(void)state;
	uint8_t root[60] = { 0 };
	hdr(root, 3, 4, 0);
	ext(root, 0, 10, 5, 1000);                      /* 10..14 -> 1000.. */
	ext(root, 1, 20, 32768, 5000);                  /* a full initialized extent */
	ext(root, 2, 40000, 32768 + 3, 0x123400000000ull); /* unwritten, 3 blocks, 48-bit start */
	struct ext4_ext_map m;
	assert_int_equal(look(root, 0, &m), 0); /* a hole before the first extent */
	assert_int_equal(m.pblk, 0);
	assert_int_equal(m.len, 10);
	assert_int_equal(look(root, 12, &m), 0);
	assert_int_equal(m.pblk, 1002);
	assert_int_equal(m.len, 3);
	assert_false(m.unwritten);
	assert_int_equal(look(root, 15, &m), 0); /* between */
	assert_int_equal(m.pblk, 0);
	assert_int_equal(m.len, 5);
	assert_int_equal(look(root, 20 + 32767, &m), 0);
	assert_int_equal(m.pblk, 5000 + 32767);
	assert_int_equal(m.len, 1);
	assert_int_equal(look(root, 40001, &m), 0);
	assert_true(m.unwritten);
	assert_int_equal(m.pblk, 0x123400000001ull);
	assert_int_equal(m.len, 2);
	assert_int_equal(look(root, 40003, &m), 0); /* after the last: to the end */
	assert_int_equal(m.pblk, 0);
	assert_int_equal(m.len, UINT32_MAX - 40003 + 1 > UINT32_MAX ? UINT32_MAX : UINT32_MAX - 40003 + 1);
	uint8_t empty[60] = { 0 };
	hdr(empty, 0, 4, 0);
	assert_int_equal(look(empty, 7, &m), 0);
	assert_int_equal(m.pblk, 0);
}

/* Depth 2: root -> index block 1 -> leaves 2 and 3. */
static void build_deep(uint8_t root[60])
{
	memset(disk, 0, sizeof disk);
	memset(root, 0, 60);
	hdr(root, 1, 4, 2);
	idx(root, 0, 0, 1);
	unsigned room = (BS - 12) / 12;
	hdr(disk[1], 2, room, 1);
	idx(disk[1], 0, 0, 2);
	idx(disk[1], 1, 1000, 3);
	hdr(disk[2], 2, room, 0);
	ext(disk[2], 0, 100, 10, 500);
	ext(disk[2], 1, 200, 10, 600);
	hdr(disk[3], 1, room, 0);
	ext(disk[3], 0, 1000, 100, 700);
}

static void test_deep(void **state)
{
	(void)state;
	uint8_t root[60];
	build_deep(root);
	struct ext4_ext_map m;
	reads = 0;
	assert_int_equal(look(root, 205, &m), 0);
	assert_int_equal(m.pblk, 605);
	assert_int_equal(m.len, 5);
	assert_int_equal(reads, 2);
	/* a hole at the end of a leaf reaches the next subtree's start */
	assert_int_equal(look(root, 300, &m), 0);
	assert_int_equal(m.pblk, 0);
	assert_int_equal(m.len, 700);
	assert_int_equal(look(root, 1050, &m), 0);
	assert_int_equal(m.pblk, 750);
	assert_int_equal(m.len, 50);
	assert_int_equal(look(root, 50, &m), 0);
	assert_int_equal(m.len, 50);
}

static void test_corrupt(void **state)
{
	(void)state;
	uint8_t root[60];
	struct ext4_ext_map m;
	build_deep(root);
	disk[2][0] ^= 1; /* magic */
	assert_int_equal(look(root, 205, &m), -EUCLEAN);
	build_deep(root);
	hdr(disk[2], 2, 1000, 0); /* eh_max past the room of a 1 KiB block */
	assert_int_equal(look(root, 205, &m), -EUCLEAN);
	build_deep(root);
	hdr(disk[3], 1, 84, 1); /* a leaf claiming depth 1 under a depth-1 index */
	assert_int_equal(look(root, 1050, &m), -EUCLEAN);
	build_deep(root);
	ext(disk[2], 1, 50, 10, 600); /* out of order */
	assert_int_equal(look(root, 205, &m), -EUCLEAN);
	build_deep(root);
	ext(disk[2], 1, 105, 10, 600); /* overlapping the one before */
	assert_int_equal(look(root, 107, &m), -EUCLEAN);
	build_deep(root);
	idx(disk[1], 1, 1000, 1ull << 49); /* index outside the filesystem */
	assert_int_equal(look(root, 1050, &m), -EUCLEAN);
	build_deep(root);
	ext(disk[3], 0, 1000, 0, 700); /* zero length */
	assert_int_equal(look(root, 1000, &m), -EUCLEAN);
	uint8_t r[60] = { 0 };
	hdr(r, 5, 4, 0); /* more entries than eh_max */
	assert_int_equal(look(r, 0, &m), -EUCLEAN);
	hdr(r, 1, 4, 6); /* depth past 5 */
	assert_int_equal(look(r, 0, &m), -EUCLEAN);
	build_deep(root);
	idx(root, 0, 0, 60); /* an I/O error reading a tree block is passed up */
	disk[60][0] = 0;
	assert_int_equal(look(root, 0, &m), -EUCLEAN); /* block 60 holds no header */
	idx(root, 0, 0, 63 + 1000);
	assert_int_equal(look(root, 0, &m), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_depth0),
		cmocka_unit_test(test_deep),
		cmocka_unit_test(test_corrupt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
