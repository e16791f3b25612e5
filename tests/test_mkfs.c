/* ext3 mkfs: layout computation, the written image read back through the
 * device (superblock, group descriptors, bitmaps, backups, inodes,
 * directories, journal superblock), byte reproducibility, and the
 * non-zeroed-device path. The e2fsck/dumpe2fs/kernel checks are in
 * tests/cli/mkfs_e2fsck.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "extfs/format/ext3_format.h"
#include "extfs/mkfs/mkfs.h"
#include "jbd/jbd_format.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024ull * 1024)

static const char test_uuid[] = "01234567-89ab-cdef-0123-456789abcdef";

static void params_init(struct ext3_mkfs_params *p, unsigned bs, unsigned isz)
{
	memset(p, 0, sizeof *p);
	p->block_size = bs;
	p->inode_size = isz;
	assert_int_equal(ext3_uuid_parse(test_uuid, p->uuid), 0);
	p->uuid_set = true;
	p->time = 1000000000;
	p->time_set = true;
	p->assume_zeroed = true;
	snprintf(p->label, sizeof p->label, "nostall");
}

/* Whole device contents, for inspection. */
static uint8_t *dev_read_all(struct dev *d, uint64_t bytes)
{
	uint8_t *buf = malloc(bytes);
	assert_non_null(buf);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, (uint32_t)(bytes / DEV_SECTOR_SIZE), buf, 0), 0);
	return buf;
}

static struct dev *mem_dev(uint64_t bytes)
{
	char spec[64];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)bytes);
	struct dev *d = NULL;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	return d;
}

static void test_group_has_super(void **state)
{
	(void)state;
	const uint32_t yes[] = { 0, 1, 3, 5, 7, 9, 25, 27, 49, 81, 125, 243, 343, 625, 729, 2187, 2401 };
	const uint32_t no[] = { 2, 4, 6, 8, 10, 11, 15, 21, 35, 45, 63, 75, 100, 245, 2186 };
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		assert_true(ext3_group_has_super(yes[i]));
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		assert_false(ext3_group_has_super(no[i]));
}

static void test_uuid_parse(void **state)
{
	(void)state;
	uint8_t u[16];
	char s[37];
	assert_int_equal(ext3_uuid_parse(test_uuid, u), 0);
	assert_int_equal(u[0], 0x01);
	assert_int_equal(u[15], 0xef);
	ext3_uuid_format(u, s);
	assert_string_equal(s, test_uuid);
	assert_int_equal(ext3_uuid_parse("01234567-89ab-cdef-0123-456789abcdeg", u), -EINVAL);
	assert_int_equal(ext3_uuid_parse("0123456789ab-cdef-0123-456789abcdef", u), -EINVAL);
	assert_int_equal(ext3_uuid_parse("", u), -EINVAL);
	assert_non_null(strstr(err_last(-EINVAL), "uuid"));
}

/* Values cross-checked against mke2fs 1.47 -t ext3 with the same size. */
static void test_layout_like_mke2fs(void **state)
{
	(void)state;
	struct ext3_mkfs_params p;
	struct ext3_mkfs_layout l;

	params_init(&p, 0, 0);
	assert_int_equal(ext3_mkfs_layout_compute(&p, 8 * MIB, &l), 0);
	assert_int_equal(l.block_size, 1024);
	assert_int_equal(l.blocks_count, 8192);
	assert_int_equal(l.groups, 1);
	assert_int_equal(l.inodes_count, 2048);
	assert_int_equal(l.inode_table_blocks, 512);
	assert_int_equal(l.reserved_gdt_blocks, 31);
	assert_int_equal(l.r_blocks_count, 409);
	assert_int_equal(l.journal_blocks, 1024);
	assert_int_equal(l.root_block, 548);
	assert_int_equal(l.lpf_block, 549);
	assert_int_equal(l.lpf_blocks, 12);
	assert_int_equal(l.resize_dind_block, 561);
	assert_int_equal(l.journal_start, 562);
	assert_int_equal(l.alloc_end, 1591);
	assert_int_equal(l.free_blocks, 6601);
	assert_int_equal(l.free_inodes, 2037);

	params_init(&p, 1024, 256);
	assert_int_equal(ext3_mkfs_layout_compute(&p, 64 * MIB, &l), 0);
	assert_int_equal(l.groups, 8);
	assert_int_equal(l.reserved_gdt_blocks, 255);
	assert_int_equal(l.inodes_count, 16384);
	assert_int_equal(l.journal_blocks, 4096);
	assert_int_equal(l.journal_start, 786);

	params_init(&p, 0, 0);
	assert_int_equal(ext3_mkfs_layout_compute(&p, 1024 * MIB, &l), 0);
	assert_int_equal(l.block_size, 4096);
	assert_int_equal(l.inodes_count, 65536);
	assert_int_equal(l.reserved_gdt_blocks, 63);
	assert_int_equal(l.journal_blocks, 8192);
	assert_int_equal(l.free_blocks, 249500);

	params_init(&p, 1024, 256);
	assert_int_equal(ext3_mkfs_layout_compute(&p, 16384 * MIB, &l), 0);
	assert_int_equal(l.groups, 2048);
	assert_int_equal(l.desc_blocks, 64);
	assert_int_equal(l.reserved_gdt_blocks, 256);
	assert_int_equal(l.journal_blocks, 131072);

	params_init(&p, 4096, 128);
	assert_int_equal(ext3_mkfs_layout_compute(&p, 8 * MIB, &l), 0);
	assert_int_equal(l.reserved_gdt_blocks, 0); /* resize inode with an empty DIND */
	assert_int_equal(l.inodes_per_group, 2048);

	/* A tiny last group is dropped, like mke2fs does. */
	params_init(&p, 1024, 256);
	assert_int_equal(ext3_mkfs_layout_compute(&p, 8356 * 1024, &l), 0);
	assert_int_equal(l.blocks_count, 8193);
	assert_int_equal(l.groups, 1);

	/* -N and -J */
	params_init(&p, 4096, 256);
	p.inodes = 100;
	p.journal_blocks = 2000;
	assert_int_equal(ext3_mkfs_layout_compute(&p, 64 * MIB, &l), 0);
	assert_int_equal(l.inodes_per_group, 112); /* 7 inode-table blocks, full */
	assert_int_equal(l.journal_blocks, 2000);
	assert_int_equal(l.journal_ind_blocks, 1 + 1 + 1); /* IND, DIND + one IND */
}

static void expect_layout_error(struct ext3_mkfs_params *p, uint64_t bytes, int err, const char *part)
{
	struct ext3_mkfs_layout l;
	err_clear();
	int rc = ext3_mkfs_layout_compute(p, bytes, &l);
	if (rc != err)
		fail_msg("layout(%llu) = %d, want %d (%s)", (unsigned long long)bytes, rc, err,
			 err_last(rc));
	if (!strstr(err_last(rc), part))
		fail_msg("message '%s' lacks '%s'", err_last(rc), part);
}

static void test_layout_errors(void **state)
{
	(void)state;
	struct ext3_mkfs_params p;
	params_init(&p, 512, 0);
	expect_layout_error(&p, 64 * MIB, -EINVAL, "block size");
	params_init(&p, 0, 512);
	expect_layout_error(&p, 64 * MIB, -EINVAL, "inode size");
	params_init(&p, 0, 0);
	expect_layout_error(&p, 1 * MIB, -ENOSPC, "too small");
	params_init(&p, 4096, 0);
	expect_layout_error(&p, 4 * MIB, -ENOSPC, "too small");
	params_init(&p, 1024, 0);
	p.inodes = 100000;
	expect_layout_error(&p, 8 * MIB, -EINVAL, "inodes");
	params_init(&p, 1024, 0);
	p.journal_blocks = 5000;
	expect_layout_error(&p, 8 * MIB, -EINVAL, "journal");
	params_init(&p, 1024, 0);
	p.journal_blocks = 100;
	expect_layout_error(&p, 8 * MIB, -EINVAL, "journal");
	params_init(&p, 1024, 0);
	p.size_bytes = 16 * MIB;
	expect_layout_error(&p, 8 * MIB, -ENOSPC, "larger than the device");
	params_init(&p, 1024, 0);
	p.time = -5;
	expect_layout_error(&p, 8 * MIB, -EINVAL, "time");
}

static int popcount_range(const uint8_t *bm, uint32_t from, uint32_t to)
{
	int n = 0;
	for (uint32_t i = from; i < to; i++)
		n += (bm[i >> 3] >> (i & 7)) & 1;
	return n;
}

/* Read an image back and check it is self-consistent. */
static void check_image(const uint8_t *img, uint64_t bytes, const struct ext3_mkfs_layout *l,
			const struct ext3_mkfs_params *p)
{
	const uint32_t bs = l->block_size;
	const struct ext3_super_block *sb = (const void *)(img + EXT3_SUPERBLOCK_OFFSET);
	assert_true((uint64_t)l->blocks_count * bs <= bytes);
	assert_int_equal(le16_to_cpu(sb->s_magic), EXT3_SUPER_MAGIC);
	assert_int_equal(le32_to_cpu(sb->s_rev_level), EXT3_DYNAMIC_REV);
	assert_int_equal(le32_to_cpu(sb->s_blocks_count), l->blocks_count);
	assert_int_equal(le32_to_cpu(sb->s_inodes_count), l->inodes_count);
	assert_int_equal(1024u << le32_to_cpu(sb->s_log_block_size), bs);
	assert_int_equal(le32_to_cpu(sb->s_first_data_block), bs == 1024 ? 1 : 0);
	assert_int_equal(le16_to_cpu(sb->s_inode_size), l->inode_size);
	assert_int_equal(le32_to_cpu(sb->s_first_ino), 11);
	assert_int_equal(le16_to_cpu(sb->s_state), EXT3_VALID_FS);
	assert_int_equal(le32_to_cpu(sb->s_journal_inum), 8);
	assert_int_equal(le32_to_cpu(sb->s_feature_compat),
			 EXT3_FEATURE_COMPAT_HAS_JOURNAL | EXT3_FEATURE_COMPAT_EXT_ATTR |
				 EXT3_FEATURE_COMPAT_RESIZE_INODE | EXT3_FEATURE_COMPAT_DIR_INDEX);
	assert_int_equal(le32_to_cpu(sb->s_feature_incompat), EXT3_FEATURE_INCOMPAT_FILETYPE);
	assert_int_equal(le32_to_cpu(sb->s_feature_ro_compat),
			 EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER | EXT3_FEATURE_RO_COMPAT_LARGE_FILE);
	assert_int_equal(sb->s_def_hash_version, EXT3_DX_HASH_HALF_MD4);
	assert_int_equal(le32_to_cpu(sb->s_default_mount_opts), 0);
	assert_int_equal(le32_to_cpu(sb->s_mkfs_time), (uint32_t)p->time);
	assert_int_equal(le32_to_cpu(sb->s_wtime), (uint32_t)p->time);
	assert_memory_equal(sb->s_uuid, p->uuid, 16);
	assert_memory_equal(sb->s_volume_name, p->label, strlen(p->label));
	assert_int_equal(le16_to_cpu(sb->s_min_extra_isize), l->inode_size == 256 ? 32 : 0);
	static const uint8_t zero16[16];
	assert_memory_not_equal(sb->s_hash_seed, zero16, 16);

	const uint32_t groups = l->groups;
	const uint32_t bpg = le32_to_cpu(sb->s_blocks_per_group);
	const uint32_t ipg = le32_to_cpu(sb->s_inodes_per_group);
	const uint32_t first = le32_to_cpu(sb->s_first_data_block);
	const uint32_t gdt_blk = first + 1;
	const struct ext3_group_desc *gd = (const void *)(img + (size_t)gdt_blk * bs);
	uint64_t free_b = 0, free_i = 0, dirs = 0;
	for (uint32_t g = 0; g < groups; g++) {
		uint32_t start = first + g * bpg;
		uint32_t nb = g + 1 < groups ? bpg : l->blocks_count - start;
		uint32_t bb = le32_to_cpu(gd[g].bg_block_bitmap);
		uint32_t ib = le32_to_cpu(gd[g].bg_inode_bitmap);
		uint32_t it = le32_to_cpu(gd[g].bg_inode_table);
		assert_true(bb >= start && bb < start + nb);
		assert_int_equal(ib, bb + 1);
		assert_int_equal(it, bb + 2);
		const uint8_t *bbm = img + (size_t)bb * bs;
		const uint8_t *ibm = img + (size_t)ib * bs;
		/* free counts agree with the bitmaps */
		assert_int_equal(nb - popcount_range(bbm, 0, nb), le16_to_cpu(gd[g].bg_free_blocks_count));
		assert_int_equal(ipg - popcount_range(ibm, 0, ipg), le16_to_cpu(gd[g].bg_free_inodes_count));
		/* padding at the ends of the bitmaps is set */
		assert_int_equal(popcount_range(bbm, nb, bs * 8), bs * 8 - nb);
		assert_int_equal(popcount_range(ibm, ipg, bs * 8), bs * 8 - ipg);
		/* the group's own metadata is marked in use */
		assert_int_equal(popcount_range(bbm, bb - start, it + l->inode_table_blocks - start),
				 it + l->inode_table_blocks - bb);
		free_b += le16_to_cpu(gd[g].bg_free_blocks_count);
		free_i += le16_to_cpu(gd[g].bg_free_inodes_count);
		dirs += le16_to_cpu(gd[g].bg_used_dirs_count);
		if (ext3_group_has_super(g)) {
			assert_int_equal(bb, start + 1 + l->desc_blocks + l->reserved_gdt_blocks);
			assert_int_equal(popcount_range(bbm, 0, bb - start), bb - start);
		} else {
			assert_int_equal(bb, start);
		}
		if (g && ext3_group_has_super(g)) {
			const struct ext3_super_block *bsb = (const void *)(img + (size_t)start * bs);
			assert_int_equal(le16_to_cpu(bsb->s_magic), EXT3_SUPER_MAGIC);
			assert_int_equal(le16_to_cpu(bsb->s_block_group_nr), g);
			assert_int_equal(le32_to_cpu(bsb->s_blocks_count), l->blocks_count);
			assert_memory_equal(img + (size_t)(start + 1) * bs, gd,
					    (size_t)l->desc_blocks * bs);
		}
	}
	assert_int_equal(free_b, le32_to_cpu(sb->s_free_blocks_count));
	assert_int_equal(free_i, le32_to_cpu(sb->s_free_inodes_count));
	assert_int_equal(free_b, l->free_blocks);
	assert_int_equal(free_i, l->inodes_count - 11);
	assert_int_equal(dirs, 2);

	/* inodes */
	const uint8_t *itab = img + (size_t)le32_to_cpu(gd[0].bg_inode_table) * bs;
#define INODE(n) ((const struct ext3_disk_inode *)(const void *)(itab + (size_t)((n)-1) * l->inode_size))
	const struct ext3_disk_inode *root = INODE(EXT3_ROOT_INO);
	assert_int_equal(le16_to_cpu(root->i_mode), EXT3_S_IFDIR | 0755);
	assert_int_equal(le16_to_cpu(root->i_links_count), 3);
	assert_int_equal(le16_to_cpu(root->i_uid) | (uint32_t)le16_to_cpu(root->i_uid_high) << 16,
			 p->root_uid);
	assert_int_equal(le16_to_cpu(root->i_gid) | (uint32_t)le16_to_cpu(root->i_gid_high) << 16,
			 p->root_gid);
	assert_int_equal(le32_to_cpu(root->i_block[0]), l->root_block);
	if (l->inode_size == 256) {
		const struct ext3_disk_inode_large *big = (const void *)root;
		assert_int_equal(le16_to_cpu(big->i_extra_isize), 32);
		assert_int_equal(le32_to_cpu(big->i_crtime), (uint32_t)p->time);
	}
	const struct ext3_disk_inode *lpf = INODE(EXT3_FIRST_INO);
	assert_int_equal(le16_to_cpu(lpf->i_mode), EXT3_S_IFDIR | 0700);
	assert_int_equal(le32_to_cpu(lpf->i_size), l->lpf_blocks * bs);
	assert_int_equal(le32_to_cpu(lpf->i_size), bs == 1024 ? 12288 : 16384);
	const struct ext3_disk_inode *rsz = INODE(EXT3_RESIZE_INO);
	assert_int_equal(le32_to_cpu(rsz->i_block[EXT3_DIND_BLOCK]), l->resize_dind_block);
	const struct ext3_disk_inode *jin = INODE(EXT3_JOURNAL_INO);
	assert_int_equal(le32_to_cpu(jin->i_size), l->journal_blocks * bs);
	assert_int_equal(le32_to_cpu(jin->i_blocks),
			 (l->journal_blocks + l->journal_ind_blocks) * (bs / 512));
	assert_int_equal(le32_to_cpu(jin->i_block[0]), l->journal_start);
	assert_memory_equal(sb->s_jnl_blocks, jin->i_block, sizeof jin->i_block);
	assert_int_equal(sb->s_jnl_blocks[16], jin->i_size);

	/* root directory block */
	const uint8_t *rd = img + (size_t)l->root_block * bs;
	const struct ext3_dir_entry_2 *de = (const void *)rd;
	assert_int_equal(le32_to_cpu(de->inode), 2);
	assert_int_equal(le16_to_cpu(de->rec_len), 12);
	assert_memory_equal(de->name, ".", 1);
	de = (const void *)(rd + 12);
	assert_int_equal(le32_to_cpu(de->inode), 2);
	assert_memory_equal(de->name, "..", 2);
	de = (const void *)(rd + 24);
	assert_int_equal(le32_to_cpu(de->inode), 11);
	assert_int_equal(de->name_len, 10);
	assert_int_equal(de->file_type, EXT3_FT_DIR);
	assert_memory_equal(de->name, "lost+found", 10);
	assert_int_equal(le16_to_cpu(de->rec_len), bs - 24);

	/* journal superblock, big-endian */
	const struct jbd_superblock *js = (const void *)(img + (size_t)l->journal_start * bs);
	assert_int_equal(be32_to_cpu(js->s_header.h_magic), JBD_MAGIC_NUMBER);
	assert_int_equal(be32_to_cpu(js->s_header.h_blocktype), JBD_SUPERBLOCK_V2);
	assert_int_equal(be32_to_cpu(js->s_blocksize), bs);
	assert_int_equal(be32_to_cpu(js->s_maxlen), l->journal_blocks);
	assert_int_equal(be32_to_cpu(js->s_first), 1);
	assert_int_equal(be32_to_cpu(js->s_sequence), 1);
	assert_int_equal(be32_to_cpu(js->s_start), 0);
	assert_int_equal(be32_to_cpu(js->s_feature_incompat), JBD_FEATURE_INCOMPAT_REVOKE);
	assert_int_equal(be32_to_cpu(js->s_nr_users), 1);
	assert_memory_equal(js->s_uuid, p->uuid, 16);
#undef INODE
}

static void run_mem_case(unsigned bs, unsigned isz, uint64_t bytes)
{
	struct ext3_mkfs_params p;
	params_init(&p, bs, isz);
	p.root_uid = 70000;
	p.root_gid = 1234;
	struct dev *d = mem_dev(bytes);
	struct ext3_mkfs_layout l;
	int rc = ext3_mkfs_with_layout(d, &p, &l);
	if (rc)
		fail_msg("mkfs: %s", err_last(rc));
	uint8_t *img = dev_read_all(d, bytes);
	check_image(img, bytes, &l, &p);
	free(img);
	dev_close(d);
}

static void test_mkfs_mem_images(void **state)
{
	(void)state;
	const unsigned bss[] = { 1024, 2048, 4096 };
	for (int i = 0; i < 3; i++) {
		run_mem_case(bss[i], 128, 8 * MIB);
		run_mem_case(bss[i], 256, 8 * MIB);
		run_mem_case(bss[i], 256, 80 * MIB + 3584); /* not block aligned */
	}
}

static void test_mkfs_reproducible(void **state)
{
	(void)state;
	const uint64_t bytes = 40 * MIB;
	uint8_t *img[2];
	for (int i = 0; i < 2; i++) {
		struct ext3_mkfs_params p;
		params_init(&p, 1024, 256);
		struct dev *d = mem_dev(bytes);
		assert_int_equal(ext3_mkfs(d, &p), 0);
		img[i] = dev_read_all(d, bytes);
		dev_close(d);
	}
	assert_memory_equal(img[0], img[1], bytes);
	free(img[0]);
	free(img[1]);

	/* Without -U/-T two images differ (uuid). */
	struct ext3_mkfs_layout l1, l2;
	struct ext3_mkfs_params p;
	params_init(&p, 1024, 256);
	p.uuid_set = false;
	assert_int_equal(ext3_mkfs_layout_compute(&p, bytes, &l1), 0);
	assert_int_equal(ext3_mkfs_layout_compute(&p, bytes, &l2), 0);
	assert_memory_not_equal(l1.uuid, l2.uuid, 16);
}

/* On a device full of garbage (assume_zeroed false) every block in use must
 * come out exactly as on a zeroed device. */
static void test_mkfs_over_garbage(void **state)
{
	(void)state;
	const uint64_t bytes = 24 * MIB;
	struct ext3_mkfs_params p;
	params_init(&p, 2048, 256);
	struct dev *clean = mem_dev(bytes);
	struct ext3_mkfs_layout l;
	assert_int_equal(ext3_mkfs_with_layout(clean, &p, &l), 0);
	uint8_t *want = dev_read_all(clean, bytes);
	dev_close(clean);

	struct dev *dirty = mem_dev(bytes);
	uint8_t *junk = malloc(MIB);
	assert_non_null(junk);
	for (size_t i = 0; i < MIB; i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	for (uint64_t off = 0; off < bytes; off += MIB)
		assert_int_equal(dev_rw_sync(dirty, DEV_OP_WRITE, off / 512, MIB / 512, junk, 0), 0);
	free(junk);
	p.assume_zeroed = false;
	assert_int_equal(ext3_mkfs(dirty, &p), 0);
	uint8_t *got = dev_read_all(dirty, bytes);
	dev_close(dirty);

	const uint32_t bs = l.block_size;
	/* superblock area, then every block the bitmaps mark in use */
	assert_memory_equal(got + 1024, want + 1024, 1024);
	const struct ext3_group_desc *gd = (const void *)(want + (size_t)(l.first_data_block + 1) * bs);
	uint64_t used = 0;
	for (uint32_t g = 0; g < l.groups; g++) {
		uint32_t start = l.first_data_block + g * l.blocks_per_group;
		uint32_t nb = g + 1 < l.groups ? l.blocks_per_group : l.blocks_count - start;
		const uint8_t *bm = want + (size_t)le32_to_cpu(gd[g].bg_block_bitmap) * bs;
		for (uint32_t i = 0; i < nb; i++) {
			if (!((bm[i >> 3] >> (i & 7)) & 1))
				continue;
			size_t off = (size_t)(start + i) * bs;
			if (memcmp(got + off, want + off, bs))
				fail_msg("block %u differs on a dirty device", start + i);
			used++;
		}
	}
	assert_int_equal(used, l.blocks_count - l.first_data_block - l.free_blocks);
	free(want);
	free(got);
}

/* Through a file: device onto a temporary sparse file. */
static void test_mkfs_file_dev(void **state)
{
	(void)state;
	char path[] = "/tmp/nostall-test-mkfs-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const uint64_t bytes = 32 * MIB;
	assert_int_equal(ftruncate(fd, (off_t)bytes), 0);
	close(fd);
	char spec[128];
	snprintf(spec, sizeof spec, "file:%s", path);
	struct dev *d = NULL;
	int rc = dev_open(spec, &d);
	if (rc) {
		unlink(path);
		fail_msg("dev_open: %s", err_last(rc));
	}
	struct ext3_mkfs_params p;
	params_init(&p, 4096, 256);
	struct ext3_mkfs_layout l;
	rc = ext3_mkfs_with_layout(d, &p, &l);
	if (rc) {
		dev_close(d);
		unlink(path);
		fail_msg("mkfs: %s", err_last(rc));
	}
	uint8_t *img = dev_read_all(d, bytes);
	dev_close(d);
	unlink(path);
	check_image(img, bytes, &l, &p);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_has_super),
		cmocka_unit_test(test_uuid_parse),
		cmocka_unit_test(test_layout_like_mke2fs),
		cmocka_unit_test(test_layout_errors),
		cmocka_unit_test(test_mkfs_mem_images),
		cmocka_unit_test(test_mkfs_reproducible),
		cmocka_unit_test(test_mkfs_over_garbage),
		cmocka_unit_test(test_mkfs_file_dev),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
