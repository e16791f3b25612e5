/* ext3 mkfs, layout half (see mkfs.h and docs/ext3-format.md, "mkfs layout").
 *
 * Two phases. ext3_mkfs_layout_compute() decides everything that can be
 * decided without I/O: block size, group count, inode table size, reserved
 * GDT blocks, journal size and where the initial data goes. All data blocks
 * (root directory, lost+found, the resize inode's double-indirect block, the
 * journal with its indirect blocks) are taken in this order from one cursor
 * starting after group 0's inode table, skipping the metadata of later
 * groups, so "every non-metadata block below alloc_end is in use" describes
 * the whole allocation and the bitmaps and free counts follow from it.
 *
 * mkfs_write.c (ext3_mkfs) writes what this computes. The group arithmetic
 * is geom.c's, shared with the mount checks and the allocators.
 */
#include "extfs/mkfs/mkfs.h"
#include "extfs/mkfs/mkfs_int.h"

#include "extfs/format/ext3_format.h"
#include "extfs/format/ext4_csum_calc.h"
#include "extfs/format/ext4_extent.h"
#include "extfs/format/features.h"
#include "jbd/jbd_format.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define MIB (1024ull * 1024)
#define MKFS_MIN_BLOCKS 2048u       /* smallest filesystem with a journal (like mke2fs) */
#define MKFS_MAX_JOURNAL 10240000u  /* like mke2fs */
#define MKFS_LPF_BYTES 16384u       /* lost+found is pre-sized to 16 KiB ... */
#define MKFS_MIN_LAST_GROUP_SLACK 50 /* a last group with fewer free blocks is dropped */

static uint64_t div_ceil(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Advance the allocation cursor over n free blocks; *first gets the first one.
 * Returns -ENOSPC when the filesystem ends first. */
int mkfs_cursor_take(const struct ext3_mkfs_layout *l, uint32_t *cursor, uint64_t n,
			    uint32_t *first)
{
	bool have_first = false;
	uint64_t c = *cursor;
	while (n) {
		if (c >= l->blocks_count)
			return -ENOSPC;
		uint32_t g = (uint32_t)((c - l->first_data_block) / l->blocks_per_group);
		uint64_t data0 = mkfs_data0(l, g);
		uint64_t end = (uint64_t)ext3_geom_group_first(&l->geo, g) + ext3_geom_group_blocks(&l->geo, g);
		if (c < data0)
			c = data0;
		if (c >= end)
			continue;
		if (!have_first) {
			*first = (uint32_t)c;
			have_first = true;
		}
		uint64_t take = end - c < n ? end - c : n;
		c += take;
		n -= take;
	}
	*cursor = (uint32_t)c;
	return 0;
}

int mkfs_extent_runs(const struct ext3_mkfs_layout *l, uint32_t cursor, uint64_t n,
		     struct mkfs_run *runs, uint32_t max)
{
	uint32_t k = 0;
	while (n) {
		uint32_t first = 0, c = cursor;
		/* one block first: where the next run starts (skips metadata) */
		if (mkfs_cursor_take(l, &c, 1, &first))
			return -ENOSPC;
		uint32_t g = (uint32_t)((first - l->first_data_block) / l->blocks_per_group);
		uint64_t end = ext3_geom_group_first(&l->geo, g) + ext3_geom_group_blocks(&l->geo, g);
		uint64_t len = end - first;
		if (len > n)
			len = n;
		if (len > EXT4_EXT_INIT_MAX_LEN)
			len = EXT4_EXT_INIT_MAX_LEN;
		if (k < max) {
			runs[k].start = first;
			runs[k].len = (uint32_t)len;
		}
		k++;
		cursor = first + (uint32_t)len;
		n -= len;
	}
	return (int)k;
}

/* Indirect blocks needed to map n data blocks (12 direct, then single,
 * double, triple indirect). */
static uint64_t mkfs_ind_blocks(uint64_t n, uint64_t apb)
{
	uint64_t ind = 0;
	if (n <= EXT3_NDIR_BLOCKS)
		return 0;
	n -= EXT3_NDIR_BLOCKS;
	ind += 1; /* IND */
	if (n <= apb)
		return ind;
	n -= apb;
	uint64_t d = n < apb * apb ? n : apb * apb;
	ind += 1 + div_ceil(d, apb); /* DIND + its INDs */
	if (n <= apb * apb)
		return ind;
	n -= apb * apb;
	ind += 1 + div_ceil(n, apb * apb) + div_ceil(n, apb); /* TIND + DINDs + INDs */
	return ind;
}

/* Journal size by filesystem size in blocks, as mke2fs chooses it. */
static uint32_t mkfs_default_journal(uint32_t blocks)
{
	/* {filesystem blocks below, journal blocks}, in KiB-block units of 1024 */
	static const uint32_t steps[][2] = {
		{32, 1024}, {256, 4096}, {512, 8192}, {4096, 16384},
		{8192, 32768}, {16384, 65536}, {32768, 131072},
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		if (blocks < steps[i][0] * 1024)
			return steps[i][1];
	return 262144;
}

static void mkfs_hash_seed(const uint8_t uuid[16], uint32_t seed[4])
{
	/* Deterministic function of the uuid (splitmix64 over its two halves),
	 * shaped as a version 4 uuid like the random seed mke2fs uses. */
	uint64_t a, b;
	memcpy(&a, uuid, 8);
	memcpy(&b, uuid + 8, 8);
	uint8_t out[16];
	uint64_t x = a ^ 0x6e6f7374616c6c21ull; /* "nostall!" */
	for (int i = 0; i < 2; i++) {
		x += 0x9e3779b97f4a7c15ull + (i ? b : 0);
		uint64_t z = x;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		for (int k = 0; k < 8; k++)
			out[i * 8 + k] = (uint8_t)(z >> (8 * k));
	}
	out[6] = (uint8_t)((out[6] & 0x0F) | 0x40);
	out[8] = (uint8_t)((out[8] & 0x3F) | 0x80);
	memcpy(seed, out, 16);
}

static int mkfs_random_uuid(uint8_t u[16])
{
	size_t got = 0;
	while (got < 16) {
		ssize_t r = getrandom(u + got, 16 - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return err_set(-errno, "mkfs: getrandom: %s", strerror(errno));
		}
		got += (size_t)r;
	}
	u[6] = (uint8_t)((u[6] & 0x0F) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3F) | 0x80);
	return 0;
}

/* The geometry of the layout so far (geom.c does the group arithmetic). */
static void layout_geom(struct ext3_mkfs_layout *l)
{
	struct ext3_geom *g = &l->geo;
	*g = (struct ext3_geom){
		.block_size = l->block_size,
		.blocks_count = l->blocks_count,
		.first_data_block = l->first_data_block,
		.blocks_per_group = l->blocks_per_group,
		.inodes_per_group = l->inodes_per_group,
		.inode_size = l->inode_size,
		.reserved_gdt_blocks = l->reserved_gdt_blocks,
		.desc_size = l->desc_size,
		.sparse_super = true,
	};
	ext3_geom_derive(g);
}

int ext3_mkfs_layout_compute(const struct ext3_mkfs_params *p, uint64_t dev_bytes,
			     struct ext3_mkfs_layout *l)
{
	memset(l, 0, sizeof *l);
	if (p->features_set) {
		memcpy(l->features, p->features, sizeof l->features);
	} else {
		for (int k = 0; k < 3; k++)
			l->features[k] = ext3_features_mkfs(k);
	}
	int frc = ext3_mkfs_features_check(l->features);
	if (frc)
		return frc;
	l->journal = l->features[0] & EXT3_FEATURE_COMPAT_HAS_JOURNAL;
	l->extents = l->features[1] & EXT4_FEATURE_INCOMPAT_EXTENTS;
	l->csum = l->features[2] & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM;
	l->flex_size = l->features[1] & EXT4_FEATURE_INCOMPAT_FLEX_BG ? 16 : 0;
	l->desc_size = l->features[1] & EXT4_FEATURE_INCOMPAT_64BIT ? EXT4_DESC_SIZE_64BIT : EXT3_DESC_SIZE;
	uint64_t size = p->size_bytes ? p->size_bytes : dev_bytes;
	if (p->size_bytes && p->size_bytes > dev_bytes)
		return err_set(-ENOSPC, "mkfs: size %llu bytes is larger than the device (%llu bytes)",
			       (unsigned long long)p->size_bytes, (unsigned long long)dev_bytes);

	uint32_t bs = p->block_size ? p->block_size : (size < 512 * MIB ? 1024 : 4096);
	if (bs != 1024 && bs != 2048 && bs != 4096)
		return err_set(-EINVAL, "mkfs: bad block size %u (use 1024, 2048 or 4096)", bs);
	uint32_t isz = p->inode_size ? p->inode_size : 256;
	if (isz != 128 && isz != 256)
		return err_set(-EINVAL, "mkfs: bad inode size %u (use 128 or 256)", isz);
	if (strlen(p->label) > 16)
		return err_set(-EINVAL, "mkfs: label '%s' is longer than 16 bytes", p->label);

	uint64_t blocks64 = size / bs;
	if (blocks64 > UINT32_MAX)
		return err_set(-EINVAL, "mkfs: %llu blocks of %u bytes is too large for ext3 (max %u blocks)",
			       (unsigned long long)blocks64, bs, UINT32_MAX);
	if (blocks64 < MKFS_MIN_BLOCKS)
		return err_set(-ENOSPC,
			       "mkfs: filesystem too small: %llu blocks of %u bytes; ext3 with a journal "
			       "needs at least %u blocks (%llu KiB)",
			       (unsigned long long)blocks64, bs, MKFS_MIN_BLOCKS,
			       (unsigned long long)MKFS_MIN_BLOCKS * bs / 1024);

	/* Inode ratio by size class, as mke2fs.conf's floppy/small/default/big/huge. */
	uint64_t ratio = size < 3 * MIB ? 8192
		       : size < 512 * MIB ? 4096
		       : size < (4ull << 40) ? 16384
		       : size < (16ull << 40) ? 32768 : 65536;
	uint64_t inodes = p->inodes ? p->inodes : blocks64 * bs / ratio;
	if (inodes < EXT3_FIRST_INO + 1)
		inodes = EXT3_FIRST_INO + 1;
	if (inodes > UINT32_MAX)
		return err_set(-EINVAL, "mkfs: %llu inodes is too many (max %u)",
			       (unsigned long long)inodes, UINT32_MAX);

	l->block_size = bs;
	l->log_block_size = bs == 1024 ? 0 : bs == 2048 ? 1 : 2;
	l->first_data_block = bs == 1024 ? 1 : 0;
	l->blocks_per_group = bs * 8;
	l->inode_size = isz;
	const uint32_t apb = bs / 4;
	const uint32_t dpb = bs / l->desc_size;
	const uint32_t ipb = bs / isz;
	uint32_t blocks = (uint32_t)blocks64;

	for (;;) {
		l->blocks_count = blocks;
		l->groups = (uint32_t)div_ceil(blocks - l->first_data_block, l->blocks_per_group);
		l->desc_blocks = (uint32_t)div_ceil(l->groups, dpb);
		/* Reserve GDT blocks for growth to 1024 times the size (capped at
		 * 2^32 blocks), at most one indirect block's worth. */
		uint64_t max_blocks = (uint64_t)blocks * 1024;
		if (max_blocks > UINT32_MAX)
			max_blocks = UINT32_MAX;
		uint64_t rsv_groups = div_ceil(max_blocks - l->first_data_block, l->blocks_per_group);
		uint64_t rsv = div_ceil(rsv_groups, dpb);
		rsv = rsv > l->desc_blocks ? rsv - l->desc_blocks : 0;
		l->reserved_gdt_blocks = (uint32_t)(rsv > apb ? apb : rsv);

		uint64_t ipg = div_ceil(inodes, l->groups);
		if (ipg < 16)
			ipg = 16; /* group 0 must hold the 11 reserved inodes */
		if (ipg > (uint64_t)bs * 8)
			return err_set(-EINVAL,
				       "mkfs: %llu inodes do not fit: at most %llu for %u groups of %u-byte "
				       "blocks (use a smaller -N or a larger size)",
				       (unsigned long long)inodes, (unsigned long long)bs * 8 * l->groups,
				       l->groups, bs);
		/* Fill whole inode-table blocks, then keep a multiple of 8. */
		uint64_t itb = div_ceil(ipg * isz, bs);
		ipg = (itb * ipb) & ~7ull;
		itb = div_ceil(ipg * isz, bs);
		l->inodes_per_group = (uint32_t)ipg;
		l->inode_table_blocks = (uint32_t)itb;
		uint64_t icount = ipg * l->groups;
		if (icount > UINT32_MAX)
			return err_set(-EINVAL, "mkfs: %llu inodes is too many (max %u)",
				       (unsigned long long)icount, UINT32_MAX);
		l->inodes_count = (uint32_t)icount;
		layout_geom(l);

		/* A last group too small for its own metadata plus some data is dropped. */
		uint32_t rem = (blocks - l->first_data_block) % l->blocks_per_group;
		uint32_t over = ext3_geom_group_meta(&l->geo, l->groups - 1);
		if (rem && l->groups == 1 && rem < over + MKFS_MIN_LAST_GROUP_SLACK)
			return err_set(-ENOSPC, "mkfs: filesystem too small (%u blocks) for its metadata",
				       blocks);
		if (rem && rem < over + MKFS_MIN_LAST_GROUP_SLACK) {
			blocks -= rem;
			continue;
		}
		break;
	}
	if (ext3_geom_group_meta(&l->geo, 0) + 1 >= ext3_geom_group_blocks(&l->geo, 0))
		return err_set(-ENOSPC, "mkfs: filesystem too small (%u blocks) for its metadata",
			       l->blocks_count);

	/* 5% reserved for root. When the last group was dropped, mke2fs keeps
	 * the ratio of the first computation (in floating point); do the same
	 * so the counts stay identical to its output. */
	uint64_t r_orig = blocks64 * 5 / 100;
	if (l->blocks_count == blocks64) {
		l->r_blocks_count = (uint32_t)r_orig;
	} else {
		double pct = 100.0 * (double)r_orig / (double)blocks64;
		l->r_blocks_count = (uint32_t)(pct * (double)l->blocks_count / 100.0);
	}

	uint32_t jb = p->journal_blocks ? p->journal_blocks : mkfs_default_journal(l->blocks_count);
	if (!l->journal)
		jb = 0;
	else if (jb < JBD_MIN_JOURNAL_BLOCKS || jb > MKFS_MAX_JOURNAL)
		return err_set(-EINVAL, "mkfs: journal size %u blocks out of range (%u..%u)", jb,
			       JBD_MIN_JOURNAL_BLOCKS, MKFS_MAX_JOURNAL);
	if (jb > l->blocks_count / 2)
		return err_set(-EINVAL,
			       "mkfs: journal of %u blocks too big for a %u-block filesystem (max %u)",
			       jb, l->blocks_count, l->blocks_count / 2);
	l->journal_blocks = jb;
	l->journal_ind_blocks = l->extents ? 0 : (uint32_t)mkfs_ind_blocks(jb, apb);

	uint32_t lpf = MKFS_LPF_BYTES / bs;
	if (lpf > EXT3_NDIR_BLOCKS)
		lpf = EXT3_NDIR_BLOCKS;
	l->lpf_blocks = lpf;

	/* Simulate the allocation order of ext3_mkfs(). */
	for (uint32_t g = 0; l->flex_size && g < l->groups; g += l->flex_size) {
		struct mkfs_gmeta gm;
		uint32_t last = g + l->flex_size - 1 < l->groups ? g + l->flex_size - 1 : l->groups - 1;
		if (mkfs_group_meta(l, last, &gm))
			return err_set(-ENOSPC, "mkfs: the metadata of flex group %u does not fit (%u blocks)",
				       g / l->flex_size, l->blocks_count);
	}
	uint32_t cursor = (uint32_t)mkfs_data0(l, 0);
	int rc = mkfs_cursor_take(l, &cursor, 1, &l->root_block);
	if (!rc)
		rc = mkfs_cursor_take(l, &cursor, lpf, &l->lpf_block);
	if (!rc)
		rc = mkfs_cursor_take(l, &cursor, 1, &l->resize_dind_block);
	if (!rc && jb && l->extents) {
		/* The journal's data, then (more than the inode's 4 extents) one
		 * leaf block after it: the runs do not depend on the leaf. */
		int n = mkfs_extent_runs(l, cursor, jb, NULL, 0);
		if (n < 0)
			rc = n;
		else if ((uint32_t)n > (bs - sizeof(struct ext4_extent_header) - 4) / sizeof(struct ext4_extent))
			return err_set(-EINVAL, "mkfs: a %u-block journal takes %d extents, more than one "
				       "leaf block holds", jb, n);
		l->journal_extents = n > 0 ? (uint32_t)n : 0;
		l->journal_ind_blocks = n > 4 ? 1 : 0;
	}
	if (!rc && jb)
		rc = mkfs_cursor_take(l, &cursor, (uint64_t)jb + l->journal_ind_blocks,
				      &l->journal_start);
	if (rc)
		return err_set(-ENOSPC, "mkfs: no room for a %u-block journal in %u blocks", jb,
			       l->blocks_count);
	l->alloc_end = cursor;
	/* Without flex_bg lost+found lies in group 0 (as mke2fs's); with
	 * flex_bg group 0's flex metadata may fill group 0 and it goes where
	 * the cursor is (its blocks map as up to 4 extents or 12 pointers). */
	if (!l->flex_size &&
	    l->lpf_block + lpf > ext3_geom_group_first(&l->geo, 0) + ext3_geom_group_blocks(&l->geo, 0))
		return err_set(-ENOSPC, "mkfs: filesystem too small (%u blocks)", l->blocks_count);

	if (l->flex_size) {
		uint64_t fr = 0;
		for (uint32_t g = 0; g < l->groups; g++)
			fr += mkfs_group_free_blocks(l, g);
		l->free_blocks = (uint32_t)fr;
	} else {
		uint64_t meta = 0;
		for (uint32_t g = 0; g < l->groups; g++)
			meta += ext3_geom_group_meta(&l->geo, g);
		uint64_t used = meta + 2 + lpf + (uint64_t)jb + l->journal_ind_blocks;
		l->free_blocks = (uint32_t)(l->blocks_count - l->first_data_block - used);
	}
	l->free_inodes = l->inodes_count - EXT3_FIRST_INO;

	if (p->uuid_set) {
		memcpy(l->uuid, p->uuid, 16);
	} else {
		rc = mkfs_random_uuid(l->uuid);
		if (rc)
			return rc;
	}
	mkfs_hash_seed(l->uuid, l->hash_seed);
	if (l->csum)
		l->csum_seed = ext4_csum_seed_of(l->uuid);
	int64_t t = p->time_set ? p->time : (int64_t)time(NULL);
	if (t < 0 || t > UINT32_MAX)
		return err_set(-EINVAL, "mkfs: time %lld out of range for ext3 (0..%u)", (long long)t,
			       UINT32_MAX);
	l->time = (uint32_t)t;
	return 0;
}

