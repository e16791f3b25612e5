/* ext3 mkfs, writing half (see mkfs.h and docs/ext3-format.md, "mkfs layout").
 *
 * ext3_mkfs() computes the layout (mkfs_layout.c), then writes: zeroes
 * where needed (device not known to be zeroed), directory blocks, the journal (superblock + indirect blocks), the
 * resize inode's blocks, group 0's first inode-table blocks, every group's
 * bitmaps, the backup superblocks + GDTs and the primary GDT; flush; the
 * primary superblock; flush. Nothing here depends on the clock or on random
 * numbers when uuid and time are given, so the image is reproducible.
 */
#include "extfs/mkfs/mkfs.h"
#include "extfs/mkfs/mkfs_int.h"
#include "extfs/format/features.h"

#include "extfs/format/ext3_format.h"
#include "extfs/format/ext4_csum_calc.h"
#include "extfs/format/ext4_extent.h"
#include "dev/dev.h"
#include "jbd/jbd_format.h"
#include "util/blockmem.h"
#include "util/crc32c.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024)
#define EXT4_BG_INODE_ZEROED 0x0004 /* bg_flags: the inode table is zeroed */

struct mkfs_ctx {
	struct dev *dev;
	const struct ext3_mkfs_params *p;
	const struct ext3_mkfs_layout *l;
	uint32_t bs;
	uint32_t apb;
	uint32_t chunk_blocks; /* blocks per write command */
	uint8_t *zero;         /* chunk_blocks zeroed blocks */
	uint32_t cursor;       /* allocation cursor */
	uint64_t written;      /* blocks written (statistics) */
};

static int mkfs_write_raw(struct mkfs_ctx *c, uint64_t blk, uint64_t n, const uint8_t *buf)
{
	uint32_t spb = c->bs / DEV_SECTOR_SIZE;
	while (n) {
		uint32_t k = n < c->chunk_blocks ? (uint32_t)n : c->chunk_blocks;
		int rc = dev_rw_sync(c->dev, DEV_OP_WRITE, blk * spb, k * spb, (void *)buf, 0);
		if (rc < 0)
			return err_set(rc, "mkfs: write of %u blocks at block %llu failed: %s", k,
				       (unsigned long long)blk, strerror(-rc));
		c->written += k;
		blk += k;
		n -= k;
		buf += (size_t)k * c->bs;
	}
	return 0;
}

static bool mkfs_is_zero(const uint8_t *b, size_t len)
{
	const uint64_t *w = (const uint64_t *)(const void *)b;
	for (size_t i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* Write n blocks from buf; on a zeroed device all-zero blocks are skipped. */
static int mkfs_write(struct mkfs_ctx *c, uint64_t blk, uint64_t n, const void *vbuf)
{
	const uint8_t *buf = vbuf;
	if (!c->p->assume_zeroed)
		return mkfs_write_raw(c, blk, n, buf);
	uint64_t i = 0;
	while (i < n) {
		while (i < n && mkfs_is_zero(buf + i * c->bs, c->bs))
			i++;
		uint64_t j = i;
		while (j < n && !mkfs_is_zero(buf + j * c->bs, c->bs))
			j++;
		if (j > i) {
			int rc = mkfs_write_raw(c, blk + i, j - i, buf + i * c->bs);
			if (rc)
				return rc;
		}
		i = j;
	}
	return 0;
}

/* Make n blocks read as zeroes (nothing to do on a zeroed device). */
static int mkfs_zero(struct mkfs_ctx *c, uint64_t blk, uint64_t n)
{
	if (c->p->assume_zeroed)
		return 0;
	while (n) {
		uint32_t k = n < c->chunk_blocks ? (uint32_t)n : c->chunk_blocks;
		int rc = mkfs_write_raw(c, blk, k, c->zero);
		if (rc)
			return rc;
		blk += k;
		n -= k;
	}
	return 0;
}

static void mkfs_progress(struct mkfs_ctx *c, const char *phase, uint64_t done, uint64_t total)
{
	if (c->p->progress)
		c->p->progress(c->p->progress_ctx, phase, done, total);
}

static uint32_t mkfs_alloc(struct mkfs_ctx *c)
{
	uint32_t b = 0;
	/* Cannot fail: the layout computation made the same allocations. */
	if (mkfs_cursor_take(c->l, &c->cursor, 1, &b))
		return 0;
	return b;
}

/* Maps a file's blocks in logical order, allocating each indirect block just
 * before the first block it maps (TIND, DIND, IND, data), and writes each
 * indirect block when the next one at its level starts or at the end. */
struct mkfs_map {
	uint32_t i_block[EXT3_N_BLOCKS]; /* little-endian */
	uint32_t *buf[3];                /* level 0 = IND, 1 = DIND, 2 = TIND */
	uint32_t blk[3];
	bool dirty[3];
};

static int mkfs_map_flush(struct mkfs_ctx *c, struct mkfs_map *m, int level)
{
	if (!m->dirty[level])
		return 0;
	m->dirty[level] = false;
	return mkfs_write(c, m->blk[level], 1, m->buf[level]);
}

/* Allocate logical block n (called for n = 0, 1, 2, ... in order). */
static int mkfs_map_next(struct mkfs_ctx *c, struct mkfs_map *m, uint64_t n, uint32_t *phys)
{
	const uint64_t apb = c->apb;
	if (n < EXT3_NDIR_BLOCKS) {
		*phys = mkfs_alloc(c);
		m->i_block[n] = cpu_to_le32(*phys);
		return 0;
	}
	n -= EXT3_NDIR_BLOCKS;
	int depth = 1;
	if (n >= apb) {
		n -= apb;
		depth = 2;
		if (n >= apb * apb) {
			n -= apb * apb;
			depth = 3;
		}
	}
	uint64_t span[3] = { apb, apb * apb, apb * apb * apb };
	for (int lv = depth - 1; lv >= 0; lv--) {
		if (n % span[lv])
			continue;
		int rc = mkfs_map_flush(c, m, lv);
		if (rc)
			return rc;
		m->blk[lv] = mkfs_alloc(c);
		memset(m->buf[lv], 0, c->bs);
		m->dirty[lv] = true;
		if (lv == depth - 1)
			m->i_block[EXT3_NDIR_BLOCKS + depth - 1] = cpu_to_le32(m->blk[lv]);
		else
			m->buf[lv + 1][(n / span[lv]) % apb] = cpu_to_le32(m->blk[lv]);
	}
	*phys = mkfs_alloc(c);
	m->buf[0][n % apb] = cpu_to_le32(*phys);
	return 0;
}

static void mkfs_inode_times(struct ext3_disk_inode *in, uint32_t t)
{
	in->i_atime = in->i_ctime = in->i_mtime = cpu_to_le32(t);
}

static void mkfs_dirent(uint8_t *at, uint32_t ino, uint16_t rec_len, const char *name, uint8_t ft)
{
	struct ext3_dir_entry_2 de = {
		.inode = cpu_to_le32(ino),
		.rec_len = cpu_to_le16(rec_len),
		.name_len = (uint8_t)strlen(name),
		.file_type = ft,
	};
	memcpy(at, &de, sizeof de);
	memcpy(at + sizeof de, name, strlen(name));
}

static void mkfs_fill_super(const struct ext3_mkfs_layout *l, const struct ext3_mkfs_params *p,
			    const uint32_t jnl_blocks[17], uint32_t group, struct ext3_super_block *sb)
{
	memset(sb, 0, sizeof *sb);
	sb->s_inodes_count = cpu_to_le32(l->inodes_count);
	sb->s_blocks_count = cpu_to_le32(l->blocks_count);
	sb->s_r_blocks_count = cpu_to_le32(l->r_blocks_count);
	sb->s_free_blocks_count = cpu_to_le32(l->free_blocks);
	sb->s_free_inodes_count = cpu_to_le32(l->free_inodes);
	sb->s_first_data_block = cpu_to_le32(l->first_data_block);
	sb->s_log_block_size = cpu_to_le32(l->log_block_size);
	sb->s_log_frag_size = cpu_to_le32(l->log_block_size);
	sb->s_blocks_per_group = cpu_to_le32(l->blocks_per_group);
	sb->s_frags_per_group = cpu_to_le32(l->blocks_per_group);
	sb->s_inodes_per_group = cpu_to_le32(l->inodes_per_group);
	sb->s_wtime = cpu_to_le32(l->time);
	sb->s_max_mnt_count = cpu_to_le16(0xFFFF); /* -1: no mount-count checks */
	sb->s_magic = cpu_to_le16(EXT3_SUPER_MAGIC);
	/* Backups say "not clean" (like mke2fs): a check that has to fall back
	 * on one will not trust it blindly. */
	sb->s_state = cpu_to_le16(group == 0 ? EXT3_VALID_FS : 0);
	sb->s_errors = cpu_to_le16(EXT3_ERRORS_CONTINUE);
	sb->s_lastcheck = cpu_to_le32(l->time);
	sb->s_creator_os = cpu_to_le32(EXT3_OS_LINUX);
	sb->s_rev_level = cpu_to_le32(EXT3_DYNAMIC_REV);
	sb->s_first_ino = cpu_to_le32(EXT3_FIRST_INO);
	sb->s_inode_size = cpu_to_le16((uint16_t)l->inode_size);
	sb->s_block_group_nr = cpu_to_le16((uint16_t)group);
	/* The table's mkfs column (format/features.h; mkfs_features_check). */
	sb->s_feature_compat = cpu_to_le32(l->features[EXT3_FEATURE_KIND_COMPAT]);
	sb->s_feature_incompat = cpu_to_le32(l->features[EXT3_FEATURE_KIND_INCOMPAT]);
	sb->s_feature_ro_compat = cpu_to_le32(l->features[EXT3_FEATURE_KIND_RO_COMPAT]);
	memcpy(sb->s_uuid, l->uuid, 16);
	memcpy(sb->s_volume_name, p->label, strnlen(p->label, sizeof sb->s_volume_name));
	sb->s_reserved_gdt_blocks = cpu_to_le16((uint16_t)l->reserved_gdt_blocks);
	sb->s_journal_inum = cpu_to_le32(l->journal ? EXT3_JOURNAL_INO : 0);
	memcpy(sb->s_hash_seed, l->hash_seed, 16); /* stored as raw uuid bytes */
	sb->s_def_hash_version = EXT3_DX_HASH_HALF_MD4;
	sb->s_jnl_backup_type = l->journal ? EXT3_JNL_BACKUP_BLOCKS : 0;
	sb->s_mkfs_time = cpu_to_le32(l->time);
	for (int i = 0; i < 17; i++)
		sb->s_jnl_blocks[i] = jnl_blocks[i]; /* already little-endian */
	if (l->inode_size > EXT3_GOOD_OLD_INODE_SIZE) {
		sb->s_min_extra_isize = cpu_to_le16(EXT3_INODE_EXTRA_ISIZE);
		sb->s_want_extra_isize = cpu_to_le16(EXT3_INODE_EXTRA_ISIZE);
	}
	/* The dx hash of names with high-bit bytes depends on char signedness;
	 * like mke2fs on x86 we record "signed". */
	sb->s_flags = cpu_to_le32(EXT3_FLAGS_SIGNED_HASH);
	if (l->flex_size)
		sb->s_log_groups_per_flex = 4; /* 16 groups */
	if (l->desc_size != EXT3_DESC_SIZE)
		sb->s_desc_size = cpu_to_le16((uint16_t)l->desc_size);
	if (l->csum) {
		sb->s_checksum_type = 1; /* crc32c */
		ext4_sb_csum_set(sb);
	}
}

static void mkfs_fill_gdt(const struct ext3_mkfs_layout *l, uint8_t *gdt)
{
	for (uint32_t g = 0; g < l->groups; g++) {
		struct ext3_group_desc gd[1];
		struct mkfs_gmeta gm = { 0 };
		mkfs_group_meta(l, g, &gm); /* cannot fail: the layout checked it */
		memset(gd, 0, sizeof gd);
		gd->bg_block_bitmap = cpu_to_le32((uint32_t)gm.block_bitmap);
		gd->bg_inode_bitmap = cpu_to_le32((uint32_t)gm.inode_bitmap);
		gd->bg_inode_table = cpu_to_le32((uint32_t)gm.inode_table);
		gd->bg_free_blocks_count = cpu_to_le16((uint16_t)mkfs_group_free_blocks(l, g));
		uint32_t ifree = l->inodes_per_group - (g == 0 ? EXT3_FIRST_INO : 0);
		gd->bg_free_inodes_count = cpu_to_le16((uint16_t)ifree);
		gd->bg_used_dirs_count = cpu_to_le16(g == 0 ? 2 : 0);
		/* Every group fully initialised (no BLOCK_UNINIT / INODE_UNINIT);
		 * the inode tables are zeroed (written, or a zeroed device). */
		if (l->csum)
			gd->bg_flags = cpu_to_le16(EXT4_BG_INODE_ZEROED);
		memcpy(gdt + (size_t)g * l->desc_size, gd, sizeof gd);
	}
}

/* metadata_csum: the bitmap checksums of every group, then each
 * descriptor's own checksum (which covers them). */
static void mkfs_gdt_csums(const struct ext3_mkfs_layout *l, uint8_t *gdt, uint8_t *bbm, uint8_t *ibm)
{
	for (uint32_t g = 0; g < l->groups; g++) {
		uint8_t *d = gdt + (size_t)g * l->desc_size;
		mkfs_group_bitmaps(l, g, bbm, ibm);
		uint32_t bc = ext4_bitmap_csum(l->csum_seed, bbm, l->blocks_per_group / 8);
		uint32_t ic = ext4_bitmap_csum(l->csum_seed, ibm, l->inodes_per_group / 8);
		struct ext3_group_desc gd;
		memcpy(&gd, d, sizeof gd);
		/* bg_reserved[1] is bg_block_bitmap_csum_lo (0x18) and
		 * bg_inode_bitmap_csum_lo (0x1A) */
		gd.bg_reserved[1] = cpu_to_le32((bc & 0xFFFF) | (ic & 0xFFFF) << 16);
		memcpy(d, &gd, sizeof gd);
		if (l->desc_size >= EXT4_DESC_SIZE_64BIT) {
			struct ext4_group_desc_hi hi;
			memcpy(&hi, d + EXT3_DESC_SIZE, sizeof hi);
			hi.bg_block_bitmap_csum_hi = cpu_to_le16((uint16_t)(bc >> 16));
			hi.bg_inode_bitmap_csum_hi = cpu_to_le16((uint16_t)(ic >> 16));
			memcpy(d + EXT3_DESC_SIZE, &hi, sizeof hi);
		}
		ext4_gd_csum_set(l->csum_seed, g, d, l->desc_size);
	}
}

/* An in-inode extent tree (i_block, 60 bytes) mapping blocks blk[0..n)
 * (at most 12, in at most 4 runs of consecutive blocks: mkfs's small
 * directories). */
static void mkfs_extent_inline(uint32_t i_block[EXT3_N_BLOCKS], const uint32_t *blk, uint32_t n)
{
	struct ext4_extent_header h = {
		.eh_magic = cpu_to_le16(EXT4_EXT_MAGIC),
		.eh_max = cpu_to_le16(4),
	};
	memset(i_block, 0, EXT3_N_BLOCKS * 4);
	uint16_t k = 0;
	for (uint32_t i = 0; i < n && k < 4;) {
		uint32_t j = i + 1;
		while (j < n && blk[j] == blk[j - 1] + 1)
			j++;
		struct ext4_extent e = {
			.ee_block = cpu_to_le32(i),
			.ee_len = cpu_to_le16((uint16_t)(j - i)),
			.ee_start_lo = cpu_to_le32(blk[i]),
		};
		memcpy((uint8_t *)i_block + sizeof h + k * sizeof e, &e, sizeof e);
		k++;
		i = j;
	}
	h.eh_entries = cpu_to_le16(k);
	memcpy(i_block, &h, sizeof h);
}

/* Directory block image finished: the checksum tail (metadata_csum). */
static void mkfs_dir_tail(const struct mkfs_ctx *c, uint32_t ino, uint8_t *blk)
{
	if (c->l->csum)
		ext4_dirblock_tail_set(c->l->csum_seed, ino, 0, blk, c->bs);
}

/* The journal's superblock (JBD v2, revoke). With metadata_csum it also
 * carries jbd2's 64bit and csum_v3 features and its checksum (crc32c, seed
 * ~0, over the 1024 bytes with s_checksum zero; stored big-endian), the
 * journal format the kernel writes on such a filesystem. */
static void mkfs_jbd_super(const struct mkfs_ctx *c, uint8_t *blk)
{
	const struct ext3_mkfs_layout *l = c->l;
	memset(blk, 0, c->bs);
	struct jbd_superblock *js = (struct jbd_superblock *)(void *)blk;
	js->s_header.h_magic = cpu_to_be32(JBD_MAGIC_NUMBER);
	js->s_header.h_blocktype = cpu_to_be32(JBD_SUPERBLOCK_V2);
	js->s_blocksize = cpu_to_be32(c->bs);
	js->s_maxlen = cpu_to_be32(l->journal_blocks);
	js->s_first = cpu_to_be32(1);
	js->s_sequence = cpu_to_be32(1);
	uint32_t inc = JBD_FEATURE_INCOMPAT_REVOKE;
	if (l->csum)
		inc |= JBD_FEATURE_INCOMPAT_64BIT | JBD_FEATURE_INCOMPAT_CSUM_V3;
	js->s_feature_incompat = cpu_to_be32(inc);
	memcpy(js->s_uuid, l->uuid, 16);
	js->s_nr_users = cpu_to_be32(1);
	if (l->csum) {
		js->s_checksum_type = JBD_CRC32C_CHKSUM;
		js->s_checksum = cpu_to_be32(crc32c(~0u, js, sizeof *js));
	}
}

/* The journal as extents: its data from the cursor in runs (layout's
 * journal_extents), in the inode when they fit in 4, else in one leaf block
 * allocated after the data, the inode holding one index entry. */
static int mkfs_write_journal_extents(struct mkfs_ctx *c, uint8_t *blk, struct ext3_disk_inode *jino)
{
	const struct ext3_mkfs_layout *l = c->l;
	uint32_t bs = c->bs, n = l->journal_extents;
	struct mkfs_run *runs = calloc(n ? n : 1, sizeof *runs);
	if (!runs)
		return -ENOMEM;
	int got = mkfs_extent_runs(l, c->cursor, l->journal_blocks, runs, n);
	int rc = 0;
	if (got != (int)n || runs[0].start != l->journal_start) {
		rc = err_set(-EIO, "mkfs: internal error: journal extents differ from the layout");
		goto out;
	}
	mkfs_jbd_super(c, blk);
	rc = mkfs_write(c, l->journal_start, 1, blk);
	if (rc)
		goto out;
	uint32_t first = 0;
	rc = mkfs_cursor_take(l, &c->cursor, l->journal_blocks, &first);
	uint32_t leaf = 0;
	if (!rc && n > 4)
		rc = mkfs_cursor_take(l, &c->cursor, 1, &leaf);
	if (!rc && c->cursor != l->alloc_end)
		rc = err_set(-EIO, "mkfs: internal error: allocation ended at %u, expected %u", c->cursor,
			     l->alloc_end);
	if (rc)
		goto out;

	/* The extents, in the inode (4 at most) or the leaf. */
	uint8_t *ents = n > 4 ? blk : (uint8_t *)jino->i_block;
	uint16_t max = n > 4 ? (uint16_t)((bs - sizeof(struct ext4_extent_header) - 4) /
					  sizeof(struct ext4_extent)) : 4;
	memset(blk, 0, bs);
	struct ext4_extent_header h = {
		.eh_magic = cpu_to_le16(EXT4_EXT_MAGIC),
		.eh_entries = cpu_to_le16((uint16_t)n),
		.eh_max = cpu_to_le16(max),
	};
	memcpy(ents, &h, sizeof h);
	uint32_t lblk = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct ext4_extent e = {
			.ee_block = cpu_to_le32(lblk),
			.ee_len = cpu_to_le16((uint16_t)runs[i].len),
			.ee_start_lo = cpu_to_le32(runs[i].start),
		};
		memcpy(ents + sizeof h + i * sizeof e, &e, sizeof e);
		lblk += runs[i].len;
	}
	if (n > 4) {
		if (l->csum)
			ext4_extent_block_csum_set(l->csum_seed, EXT3_JOURNAL_INO, 0, blk);
		rc = mkfs_write(c, leaf, 1, blk);
		if (rc)
			goto out;
		struct ext4_extent_header root = {
			.eh_magic = cpu_to_le16(EXT4_EXT_MAGIC),
			.eh_entries = cpu_to_le16(1),
			.eh_max = cpu_to_le16(4),
			.eh_depth = cpu_to_le16(1),
		};
		struct ext4_extent_idx ix = { .ei_leaf_lo = cpu_to_le32(leaf) };
		memcpy(jino->i_block, &root, sizeof root);
		memcpy((uint8_t *)jino->i_block + sizeof root, &ix, sizeof ix);
	}
	mkfs_progress(c, "journal", l->journal_blocks, l->journal_blocks);

	uint64_t jsize = (uint64_t)l->journal_blocks * bs;
	jino->i_mode = cpu_to_le16(EXT3_S_IFREG | 0600);
	jino->i_size = cpu_to_le32((uint32_t)jsize);
	jino->i_size_high = cpu_to_le32((uint32_t)(jsize >> 32));
	jino->i_links_count = cpu_to_le16(1);
	jino->i_flags = cpu_to_le32(EXT4_EXTENTS_FL);
	jino->i_blocks = cpu_to_le32((l->journal_blocks + l->journal_ind_blocks) * (bs / 512));
	mkfs_inode_times(jino, l->time);
out:
	free(runs);
	return rc;
}

/* Directory blocks, journal, resize inode blocks; fills the inode images. */
static int mkfs_write_data(struct mkfs_ctx *c, uint8_t *blk, struct ext3_disk_inode *jino,
			   struct ext3_disk_inode *rino, uint32_t lpf_blk[EXT3_NDIR_BLOCKS])
{
	const struct ext3_mkfs_layout *l = c->l;
	uint32_t bs = c->bs;
	int rc;

	/* Root directory: ".", "..", "lost+found". */
	uint32_t root = mkfs_alloc(c);
	memset(blk, 0, bs);
	mkfs_dirent(blk, EXT3_ROOT_INO, 12, ".", EXT3_FT_DIR);
	mkfs_dirent(blk + 12, EXT3_ROOT_INO, 12, "..", EXT3_FT_DIR);
	uint32_t tail = l->csum ? 12 : 0;
	mkfs_dirent(blk + 24, EXT3_FIRST_INO, (uint16_t)(bs - 24 - tail), "lost+found", EXT3_FT_DIR);
	mkfs_dir_tail(c, EXT3_ROOT_INO, blk);
	if (root != l->root_block)
		return err_set(-EIO, "mkfs: internal error: root block %u != %u", root, l->root_block);
	rc = mkfs_write(c, root, 1, blk);
	if (rc)
		return rc;

	/* lost+found: ".", ".." then empty blocks. */
	for (uint32_t i = 0; i < l->lpf_blocks; i++) {
		lpf_blk[i] = mkfs_alloc(c);
		memset(blk, 0, bs);
		if (i == 0) {
			mkfs_dirent(blk, EXT3_FIRST_INO, 12, ".", EXT3_FT_DIR);
			mkfs_dirent(blk + 12, EXT3_ROOT_INO, (uint16_t)(bs - 12 - tail), "..", EXT3_FT_DIR);
		} else {
			mkfs_dirent(blk, 0, (uint16_t)(bs - tail), "", EXT3_FT_UNKNOWN);
		}
		mkfs_dir_tail(c, EXT3_FIRST_INO, blk);
		rc = mkfs_write(c, lpf_blk[i], 1, blk);
		if (rc)
			return rc;
	}

	/* Resize inode: a double-indirect block whose slot (desc_blocks + i) %
	 * apb points at reserved GDT block i of group 0; each of those is an
	 * indirect block listing the same block in every backup group. With no
	 * reserved GDT blocks the double-indirect block is empty (like mke2fs). */
	memset(rino, 0, sizeof *rino);
	{
		uint32_t dind = mkfs_alloc(c);
		if (dind != l->resize_dind_block)
			return err_set(-EIO, "mkfs: internal error: dind %u != %u", dind,
				       l->resize_dind_block);
		uint32_t nbackups = 0;
		for (uint32_t g = 1; g < l->groups; g++)
			nbackups += ext3_group_has_super(g);
		uint32_t *dbuf = (uint32_t *)(void *)blk;
		memset(blk, 0, bs);
		for (uint32_t i = 0; i < l->reserved_gdt_blocks; i++)
			dbuf[(l->desc_blocks + i) % c->apb] =
				cpu_to_le32(l->first_data_block + 1 + l->desc_blocks + i);
		rc = mkfs_write(c, dind, 1, blk);
		if (rc)
			return rc;
		for (uint32_t i = 0; i < l->reserved_gdt_blocks; i++) {
			uint32_t pblk = l->first_data_block + 1 + l->desc_blocks + i;
			memset(blk, 0, bs);
			uint32_t k = 0;
			for (uint32_t g = 1; g < l->groups; g++)
				if (ext3_group_has_super(g))
					dbuf[k++] = cpu_to_le32(pblk + g * l->blocks_per_group);
			rc = mkfs_write(c, pblk, 1, blk);
			if (rc)
				return rc;
		}
		uint64_t size = ((uint64_t)c->apb * c->apb + c->apb + EXT3_NDIR_BLOCKS) * bs;
		uint64_t nblk = 1 + (uint64_t)l->reserved_gdt_blocks * (1 + nbackups);
		rino->i_mode = cpu_to_le16(EXT3_S_IFREG | 0600);
		rino->i_size = cpu_to_le32((uint32_t)size);
		rino->i_size_high = cpu_to_le32((uint32_t)(size >> 32));
		rino->i_links_count = cpu_to_le16(1);
		rino->i_blocks = cpu_to_le32((uint32_t)(nblk * (bs / 512)));
		rino->i_block[EXT3_DIND_BLOCK] = cpu_to_le32(dind);
		mkfs_inode_times(rino, l->time);
	}

	memset(jino, 0, sizeof *jino);
	if (!l->journal) {
		if (c->cursor != l->alloc_end)
			return err_set(-EIO, "mkfs: internal error: allocation ended at %u, expected %u",
				       c->cursor, l->alloc_end);
		return 0;
	}
	if (l->extents)
		return mkfs_write_journal_extents(c, blk, jino);

	/* Journal: zero it as a whole first (non-zeroed devices), then the
	 * JBD superblock and the indirect blocks. */
	struct mkfs_map m;
	memset(&m, 0, sizeof m);
	uint8_t *ibufs = calloc(3, bs);
	if (!ibufs)
		return -ENOMEM;
	for (int i = 0; i < 3; i++)
		m.buf[i] = (uint32_t *)(void *)(ibufs + (size_t)i * bs);
	for (uint64_t n = 0; n < l->journal_blocks; n++) {
		uint32_t phys;
		rc = mkfs_map_next(c, &m, n, &phys);
		if (rc)
			break;
		if (n == 0) {
			if (phys != l->journal_start) {
				rc = err_set(-EIO, "mkfs: internal error: journal at %u != %u", phys,
					     l->journal_start);
				break;
			}
			mkfs_jbd_super(c, blk);
			rc = mkfs_write(c, phys, 1, blk);
			if (rc)
				break;
		}
		if ((n & 0xFFFF) == 0)
			mkfs_progress(c, "journal", n, l->journal_blocks);
	}
	for (int lv = 0; lv < 3 && !rc; lv++)
		rc = mkfs_map_flush(c, &m, lv);
	free(ibufs);
	if (rc)
		return rc;
	if (c->cursor != l->alloc_end)
		return err_set(-EIO, "mkfs: internal error: allocation ended at %u, expected %u",
			       c->cursor, l->alloc_end);
	mkfs_progress(c, "journal", l->journal_blocks, l->journal_blocks);

	uint64_t jsize = (uint64_t)l->journal_blocks * bs;
	jino->i_mode = cpu_to_le16(EXT3_S_IFREG | 0600);
	jino->i_size = cpu_to_le32((uint32_t)jsize);
	jino->i_size_high = cpu_to_le32((uint32_t)(jsize >> 32));
	jino->i_links_count = cpu_to_le16(1);
	jino->i_blocks = cpu_to_le32((l->journal_blocks + l->journal_ind_blocks) * (bs / 512));
	memcpy(jino->i_block, m.i_block, sizeof m.i_block);
	mkfs_inode_times(jino, l->time);
	return 0;
}

/* Group 0's inode-table blocks holding inodes 1..11. */
static int mkfs_write_inodes(struct mkfs_ctx *c, const struct ext3_disk_inode *jino,
			     const struct ext3_disk_inode *rino, const uint32_t lpf_blk[EXT3_NDIR_BLOCKS])
{
	const struct ext3_mkfs_layout *l = c->l;
	uint32_t bs = c->bs, isz = l->inode_size;
	uint32_t nblk = (uint32_t)(((uint64_t)EXT3_FIRST_INO * isz + bs - 1) / bs);
	uint8_t *buf = calloc(nblk, bs);
	if (!buf)
		return -ENOMEM;

	struct ext3_disk_inode bad = { 0 }, root = { 0 }, lpf = { 0 };
	mkfs_inode_times(&bad, l->time); /* the (empty) bad blocks inode, like mke2fs */

	root.i_mode = cpu_to_le16(EXT3_S_IFDIR | 0755);
	root.i_uid = cpu_to_le16((uint16_t)c->p->root_uid);
	root.i_uid_high = cpu_to_le16((uint16_t)(c->p->root_uid >> 16));
	root.i_gid = cpu_to_le16((uint16_t)c->p->root_gid);
	root.i_gid_high = cpu_to_le16((uint16_t)(c->p->root_gid >> 16));
	root.i_size = cpu_to_le32(bs);
	root.i_links_count = cpu_to_le16(3); /* ".", "..", lost+found's ".." */
	root.i_blocks = cpu_to_le32(bs / 512);
	if (l->extents) {
		root.i_flags = cpu_to_le32(EXT4_EXTENTS_FL);
		mkfs_extent_inline(root.i_block, &l->root_block, 1);
	} else {
		root.i_block[0] = cpu_to_le32(l->root_block);
	}
	mkfs_inode_times(&root, l->time);

	lpf.i_mode = cpu_to_le16(EXT3_S_IFDIR | 0700);
	lpf.i_size = cpu_to_le32(l->lpf_blocks * bs);
	lpf.i_links_count = cpu_to_le16(2);
	lpf.i_blocks = cpu_to_le32(l->lpf_blocks * (bs / 512));
	if (l->extents) {
		lpf.i_flags = cpu_to_le32(EXT4_EXTENTS_FL);
		mkfs_extent_inline(lpf.i_block, lpf_blk, l->lpf_blocks);
	} else {
		for (uint32_t i = 0; i < l->lpf_blocks; i++)
			lpf.i_block[i] = cpu_to_le32(lpf_blk[i]);
	}
	mkfs_inode_times(&lpf, l->time);

	const struct {
		uint32_t ino;
		const struct ext3_disk_inode *in;
	} list[] = {
		{ EXT3_BAD_INO, &bad },
		{ EXT3_ROOT_INO, &root },
		{ EXT3_RESIZE_INO, rino },
		{ EXT3_JOURNAL_INO, jino },
		{ EXT3_FIRST_INO, &lpf },
	};
	for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
		if (list[i].ino == EXT3_JOURNAL_INO && !l->journal)
			continue;
		uint8_t *at = buf + (size_t)(list[i].ino - 1) * isz;
		memcpy(at, list[i].in, sizeof *list[i].in);
		if (isz > EXT3_GOOD_OLD_INODE_SIZE && (list[i].ino != EXT3_BAD_INO || l->csum)) {
			struct ext3_disk_inode_large big;
			memcpy(&big, at, sizeof big);
			big.i_extra_isize = cpu_to_le16(EXT3_INODE_EXTRA_ISIZE);
			big.i_crtime = cpu_to_le32(l->time);
			memcpy(at, &big, sizeof big);
		}
	}
	if (l->csum)
		for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
			uint8_t *at = buf + (size_t)(list[i].ino - 1) * isz;
			if (!mkfs_is_zero(at, isz))
				ext4_inode_csum_set(l->csum_seed, list[i].ino, at, isz);
		}
	struct mkfs_gmeta gm0 = { 0 };
	mkfs_group_meta(l, 0, &gm0);
	uint64_t itable = gm0.inode_table;
	int rc = mkfs_write(c, itable, nblk, buf);
	free(buf);
	return rc;
}

/* Every feature mkfs sets must be one nostall mounts read-write, and the
 * layout written here must be the one those features describe: the ones
 * this file writes the structures of (the journal, the resize inode's
 * reserved GDT blocks, sparse superblock backups, directory entries with
 * file types). The table and this file change together. */
static int mkfs_features_check(void)
{
	static const uint32_t written[3] = {
		EXT3_FEATURE_COMPAT_HAS_JOURNAL | EXT3_FEATURE_COMPAT_EXT_ATTR |
			EXT3_FEATURE_COMPAT_RESIZE_INODE | EXT3_FEATURE_COMPAT_DIR_INDEX,
		EXT3_FEATURE_INCOMPAT_FILETYPE,
		EXT3_FEATURE_RO_COMPAT_SPARSE_SUPER | EXT3_FEATURE_RO_COMPAT_LARGE_FILE,
	};
	const struct ext3_feature *f;
	for (size_t i = 0; (f = ext3_feature_at(i)); i++)
		if (f->mkfs && f->support != EXT3_FEATURE_RW)
			return err_set(-EINVAL, "mkfs: feature %s would make a filesystem nostall mounts %s",
				       f->name, ext3_feature_support_name(f->support));
	for (int k = 0; k < 3; k++)
		if (ext3_features_mkfs(k) != written[k])
			return err_set(-EINVAL, "mkfs: the feature table's %s set 0x%x is not the layout "
				       "mkfs writes (0x%x)", ext3_feature_kind_name(k),
				       ext3_features_mkfs(k), written[k]);
	return 0;
}

int ext3_mkfs_with_layout(struct dev *dev, const struct ext3_mkfs_params *p,
			  struct ext3_mkfs_layout *layout_out)
{
	int rc = mkfs_features_check();
	if (rc)
		return rc;
	struct dev_geometry geo;
	dev_geometry_get(dev, &geo);
	struct ext3_mkfs_layout lay;
	rc = ext3_mkfs_layout_compute(p, geo.size_bytes, &lay);
	if (rc)
		return rc;
	const struct ext3_mkfs_layout *l = &lay;

	struct mkfs_ctx c = {
		.dev = dev,
		.p = p,
		.l = l,
		.bs = l->block_size,
		.apb = l->block_size / 4,
	};
	uint64_t max_bytes = geo.max_hw_sectors ? (uint64_t)geo.max_hw_sectors * DEV_SECTOR_SIZE : MIB;
	if (max_bytes > MIB)
		max_bytes = MIB;
	c.chunk_blocks = (uint32_t)(max_bytes / c.bs);
	if (!c.chunk_blocks)
		return err_set(-EINVAL, "mkfs: device takes at most %llu bytes per command, less than a block",
			       (unsigned long long)max_bytes);
	c.cursor = (uint32_t)mkfs_data0(l, 0);

	uint32_t bs = c.bs;
	size_t gdt_bytes = (size_t)l->desc_blocks * bs;
	uint8_t *blk = calloc(1, bs);
	uint8_t *bitmap = calloc(1, bs);
	uint8_t *ibitmap = calloc(1, bs);
	uint8_t *sbblk = calloc(1, bs);
	uint8_t *gdt = calloc(1, gdt_bytes);
	/* Aligned (an O_DIRECT device would bounce-copy every zeroing write,
	 * into fresh memory each time) and reused for every chunk. */
	c.zero = p->assume_zeroed ? NULL : blockmem_huge_alloc((size_t)c.chunk_blocks * bs);
	if (c.zero)
		memset(c.zero, 0, (size_t)c.chunk_blocks * bs);
	struct ext3_disk_inode jino, rino;
	uint32_t lpf_blk[EXT3_NDIR_BLOCKS] = { 0 };
	if (!blk || !bitmap || !ibitmap || !sbblk || !gdt || (!p->assume_zeroed && !c.zero)) {
		rc = -ENOMEM;
		goto out;
	}

	/* 1. Zero what must read as zeroes: inode tables, backup reserved GDT
	 *    blocks, the allocated data area (journal). */
	if (!p->assume_zeroed) {
		for (uint32_t g = 0; g < l->groups && !rc; g++) {
			uint32_t start = ext3_geom_group_first(&l->geo, g);
			if (g && ext3_group_has_super(g))
				rc = mkfs_zero(&c, start + 1 + l->desc_blocks, l->reserved_gdt_blocks);
			struct mkfs_gmeta gm = { 0 };
			mkfs_group_meta(l, g, &gm);
			if (!rc)
				rc = mkfs_zero(&c, gm.inode_table, l->inode_table_blocks);
			if ((g & 15) == 0)
				mkfs_progress(&c, "inode tables", g, l->groups);
		}
		if (!rc)
			mkfs_progress(&c, "inode tables", l->groups, l->groups);
		if (!rc)
			rc = mkfs_zero(&c, l->root_block, l->alloc_end - l->root_block);
		if (rc)
			goto out;
	}

	/* 2. Directories, resize inode, journal; then group 0's inodes. */
	rc = mkfs_write_data(&c, blk, &jino, &rino, lpf_blk);
	if (rc)
		goto out;
	rc = mkfs_write_inodes(&c, &jino, &rino, lpf_blk);
	if (rc)
		goto out;

	/* 3. Per group: bitmaps, backup superblock + GDT. */
	uint32_t jnl_blocks[17];
	memcpy(jnl_blocks, jino.i_block, sizeof jino.i_block);
	jnl_blocks[15] = jino.i_size_high;
	jnl_blocks[16] = jino.i_size;
	mkfs_fill_gdt(l, gdt);
	if (l->csum)
		mkfs_gdt_csums(l, gdt, bitmap, ibitmap);
	for (uint32_t g = 0; g < l->groups; g++) {
		uint32_t start = ext3_geom_group_first(&l->geo, g);
		struct mkfs_gmeta gm = { 0 };
		mkfs_group_meta(l, g, &gm);

		mkfs_group_bitmaps(l, g, bitmap, ibitmap);
		rc = mkfs_write_raw(&c, gm.block_bitmap, 1, bitmap);
		if (rc)
			goto out;
		rc = mkfs_write(&c, gm.inode_bitmap, 1, ibitmap);
		if (rc)
			goto out;

		if (ext3_group_has_super(g)) {
			rc = mkfs_write(&c, start + 1, l->desc_blocks, gdt);
			if (rc)
				goto out;
			if (g) {
				memset(sbblk, 0, bs);
				mkfs_fill_super(l, p, jnl_blocks, g, (struct ext3_super_block *)(void *)sbblk);
				rc = mkfs_write(&c, start, 1, sbblk);
				if (rc)
					goto out;
			}
		}
		if ((g & 63) == 0)
			mkfs_progress(&c, "group tables", g, l->groups);
	}
	mkfs_progress(&c, "group tables", l->groups, l->groups);

	/* 4. Flush, then the primary superblock, then flush again: a crash
	 *    during mkfs never leaves a valid-looking half-made filesystem. */
	rc = dev_flush_sync(dev);
	if (rc)
		goto flush_fail;
	memset(sbblk, 0, bs);
	{
		uint32_t off = bs == 1024 ? 0 : EXT3_SUPERBLOCK_OFFSET;
		mkfs_fill_super(l, p, jnl_blocks, 0, (struct ext3_super_block *)(void *)(sbblk + off));
		rc = mkfs_write_raw(&c, EXT3_SUPERBLOCK_OFFSET / bs, 1, sbblk);
		if (rc)
			goto out;
	}
	rc = dev_flush_sync(dev);
	if (rc)
		goto flush_fail;
	if (layout_out)
		*layout_out = lay;
	goto out;
flush_fail:
	rc = err_set(rc, "mkfs: flush failed: %s", strerror(-rc));
out:
	free(blk);
	free(bitmap);
	free(ibitmap);
	free(sbblk);
	free(gdt);
	free(c.zero);
	return rc;
}

int ext3_mkfs(struct dev *dev, const struct ext3_mkfs_params *p)
{
	return ext3_mkfs_with_layout(dev, p, NULL);
}
