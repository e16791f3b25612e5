/* The internal journal of an ext3 image: a minimal, self-contained lookup of
 * inode 8's blocks (superblock -> group descriptor -> inode -> direct and
 * indirect blocks), for `nostall recover` and the crash tests. It does not
 * depend on the ext3 read path (src/ext3/ext3.h); a mounted filesystem gives
 * the journal its own bmap callback instead.
 *
 * Threads: none; synchronous reads with dev_rw_sync.
 */
#include "jbd_int.h"

#include "../dev/dev.h"
#include "../ext3/ext3_format.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct jbd_ext3_journal {
	struct dev *dev;
	struct ext3_super_block sb;
	unsigned bs;
	uint32_t nblocks;
	uint64_t *map; /* [nblocks] */
};

static int read_bytes(struct dev *d, uint64_t off, void *buf, uint32_t len)
{
	/* off and len are multiples of 512 here */
	return dev_rw_sync(d, DEV_OP_READ, off / DEV_SECTOR_SIZE, len / DEV_SECTOR_SIZE, buf, 0);
}

static int read_block(struct jbd_ext3_journal *e, uint64_t b, void *buf)
{
	if (b >= le32_to_cpu(e->sb.s_blocks_count))
		return err_set(-EUCLEAN, "ext3: journal inode points to block %llu beyond the filesystem",
			       (unsigned long long)b);
	return read_bytes(e->dev, b * e->bs, buf, e->bs);
}

/* Map logical blocks [*next, ...) under an indirect block of `depth` levels
 * (1 = single). Stops at nblocks. */
static int walk(struct jbd_ext3_journal *e, uint32_t blk, int depth, uint32_t *next)
{
	uint32_t apb = e->bs / 4;
	if (!blk)
		return err_set(-EUCLEAN, "ext3: journal inode has a hole at block %u", *next);
	uint32_t *ind = malloc(e->bs);
	if (!ind)
		return -ENOMEM;
	int rc = read_block(e, blk, ind);
	for (uint32_t i = 0; !rc && i < apb && *next < e->nblocks; i++) {
		uint32_t p = le32_to_cpu(ind[i]);
		if (depth == 1) {
			if (!p)
				rc = err_set(-EUCLEAN, "ext3: journal inode has a hole at block %u", *next);
			else
				e->map[(*next)++] = p;
		} else {
			rc = walk(e, p, depth - 1, next);
		}
	}
	free(ind);
	return rc;
}

int jbd_ext3_journal_open(struct dev *dev, struct jbd_ext3_journal **out)
{
	struct jbd_ext3_journal *e = calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	e->dev = dev;
	int rc = read_bytes(dev, EXT3_SUPERBLOCK_OFFSET, &e->sb, sizeof e->sb);
	if (rc < 0)
		goto fail;
	struct ext3_super_block *sb = &e->sb;
	if (le16_to_cpu(sb->s_magic) != EXT3_SUPER_MAGIC) {
		rc = err_set(-EINVAL, "not an ext2/ext3 filesystem (bad superblock magic)");
		goto fail;
	}
	if (!(le32_to_cpu(sb->s_feature_compat) & EXT3_FEATURE_COMPAT_HAS_JOURNAL)) {
		rc = err_set(-EINVAL, "the filesystem has no journal (ext2)");
		goto fail;
	}
	uint32_t inum = le32_to_cpu(sb->s_journal_inum);
	if (inum != EXT3_JOURNAL_INO || le32_to_cpu(sb->s_journal_dev)) {
		rc = err_set(-EOPNOTSUPP, "external journals are not supported (journal inode %u, device %u)", inum,
			     le32_to_cpu(sb->s_journal_dev));
		goto fail;
	}
	uint32_t log = le32_to_cpu(sb->s_log_block_size);
	if (log > 2) {
		rc = err_set(-EINVAL, "unsupported block size %u", 1024u << (log > 20 ? 20 : log));
		goto fail;
	}
	e->bs = 1024u << log;
	uint32_t ipg = le32_to_cpu(sb->s_inodes_per_group);
	unsigned isz = le32_to_cpu(sb->s_rev_level) >= EXT3_DYNAMIC_REV ? le16_to_cpu(sb->s_inode_size)
									 : EXT3_GOOD_OLD_INODE_SIZE;
	if (!ipg || isz < EXT3_GOOD_OLD_INODE_SIZE || isz > e->bs) {
		rc = err_set(-EINVAL, "bad superblock (inodes per group %u, inode size %u)", ipg, isz);
		goto fail;
	}
	uint32_t group = (inum - 1) / ipg, index = (inum - 1) % ipg;
	uint64_t gdt = le32_to_cpu(sb->s_first_data_block) + 1;
	uint64_t dblock = gdt + (uint64_t)group * EXT3_DESC_SIZE / e->bs;
	uint8_t *buf = malloc(e->bs);
	if (!buf) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = read_block(e, dblock, buf);
	if (rc < 0) {
		free(buf);
		goto fail;
	}
	struct ext3_group_desc gd;
	memcpy(&gd, buf + (group * EXT3_DESC_SIZE) % e->bs, sizeof gd);
	uint64_t iblock = le32_to_cpu(gd.bg_inode_table) + (uint64_t)index * isz / e->bs;
	rc = read_block(e, iblock, buf);
	if (rc < 0) {
		free(buf);
		goto fail;
	}
	struct ext3_inode ino;
	memcpy(&ino, buf + ((uint64_t)index * isz) % e->bs, sizeof ino);
	free(buf);
	uint64_t size = le32_to_cpu(ino.i_size) | ((uint64_t)le32_to_cpu(ino.i_size_high) << 32);
	if ((le16_to_cpu(ino.i_mode) & EXT3_S_IFMT) != EXT3_S_IFREG || size < 2ull * e->bs ||
	    size / e->bs > UINT32_MAX) {
		rc = err_set(-EUCLEAN, "journal inode %u is not a valid journal (mode 0%o, size %llu)", inum,
			     le16_to_cpu(ino.i_mode), (unsigned long long)size);
		goto fail;
	}
	if (le32_to_cpu(ino.i_flags) & 0x80000u /* EXT4_EXTENTS_FL */) {
		rc = err_set(-EOPNOTSUPP, "journal inode uses extents (ext4)");
		goto fail;
	}
	e->nblocks = (uint32_t)(size / e->bs);
	e->map = calloc(e->nblocks, sizeof *e->map);
	if (!e->map) {
		rc = -ENOMEM;
		goto fail;
	}
	uint32_t next = 0;
	for (int i = 0; i < EXT3_NDIR_BLOCKS && next < e->nblocks; i++) {
		uint32_t p = le32_to_cpu(ino.i_block[i]);
		if (!p) {
			rc = err_set(-EUCLEAN, "ext3: journal inode has a hole at block %u", next);
			goto fail;
		}
		e->map[next++] = p;
	}
	for (int d = 1; d <= 3 && next < e->nblocks && rc == 0; d++)
		rc = walk(e, le32_to_cpu(ino.i_block[EXT3_IND_BLOCK + d - 1]), d, &next);
	if (rc < 0)
		goto fail;
	*out = e;
	return 0;
fail:
	free(e->map);
	free(e);
	return rc;
}

void jbd_ext3_journal_close(struct jbd_ext3_journal *e)
{
	if (!e)
		return;
	free(e->map);
	free(e);
}

static int ext3_bmap(void *ctx, uint32_t logical, uint64_t *physical)
{
	struct jbd_ext3_journal *e = ctx;
	if (logical >= e->nblocks)
		return -ENOENT;
	*physical = e->map[logical];
	return 0;
}

void jbd_ext3_journal_location(struct jbd_ext3_journal *e, struct jbd_location *loc)
{
	memset(loc, 0, sizeof *loc);
	loc->block_size = e->bs;
	loc->bmap = ext3_bmap;
	loc->bmap_ctx = e;
	loc->nr_blocks = e->nblocks;
}

bool jbd_ext3_needs_recovery(const struct jbd_ext3_journal *e)
{
	return le32_to_cpu(e->sb.s_feature_incompat) & EXT3_FEATURE_INCOMPAT_RECOVER;
}

static int write_sb(struct jbd_ext3_journal *e)
{
	/* Like e2fsck and the kernel, a superblock write records its time. */
	e->sb.s_wtime = cpu_to_le32((uint32_t)time(NULL));
	int rc = dev_rw_sync(e->dev, DEV_OP_WRITE, EXT3_SUPERBLOCK_OFFSET / DEV_SECTOR_SIZE,
			     sizeof e->sb / DEV_SECTOR_SIZE, &e->sb, 0);
	if (!rc)
		rc = dev_flush_sync(e->dev);
	return rc;
}

int jbd_ext3_set_needs_recovery(struct jbd_ext3_journal *e, bool on)
{
	/* Re-read first: recovery may just have replayed the superblock block. */
	int rc = read_bytes(e->dev, EXT3_SUPERBLOCK_OFFSET, &e->sb, sizeof e->sb);
	if (rc < 0)
		return rc;
	uint32_t f = le32_to_cpu(e->sb.s_feature_incompat);
	f = on ? f | EXT3_FEATURE_INCOMPAT_RECOVER : f & ~(uint32_t)EXT3_FEATURE_INCOMPAT_RECOVER;
	e->sb.s_feature_incompat = cpu_to_le32(f);
	return write_sb(e);
}

int jbd_ext3_mark_error(struct jbd_ext3_journal *e)
{
	int rc = read_bytes(e->dev, EXT3_SUPERBLOCK_OFFSET, &e->sb, sizeof e->sb);
	if (rc < 0)
		return rc;
	e->sb.s_state = cpu_to_le16(le16_to_cpu(e->sb.s_state) | EXT3_ERROR_FS);
	return write_sb(e);
}

unsigned jbd_ext3_block_size(const struct jbd_ext3_journal *e)
{
	return e->bs;
}

uint32_t jbd_ext3_blocks_count(const struct jbd_ext3_journal *e)
{
	return le32_to_cpu(e->sb.s_blocks_count);
}

int jbd_ext3_recover(struct dev *dev, unsigned flags, struct jbd_recovery_info *info, bool *did)
{
	struct jbd_recovery_info local;
	if (!info)
		info = &local;
	memset(info, 0, sizeof *info);
	if (did)
		*did = false;
	struct jbd_ext3_journal *e;
	int rc = jbd_ext3_journal_open(dev, &e);
	if (rc < 0)
		return rc;
	struct jbd_location loc;
	jbd_ext3_journal_location(e, &loc);
	rc = jbd_journal_check_dev(dev, &loc, info);
	if (rc < 0 || (!info->needed && !jbd_ext3_needs_recovery(e)))
		goto out;
	/* e2fsck runs its journal step whenever needs_recovery is set, even
	 * on an empty log (which then only moves s_sequence on by one). */
	rc = jbd_journal_recover_dev(dev, &loc, flags | JBD_RECOVER_RESET, info);
	if (rc < 0 || (flags & JBD_RECOVER_DRY_RUN))
		goto out;
	if (did)
		*did = true;
	if (info->sb_errno)
		rc = jbd_ext3_mark_error(e);
	if (rc == 0)
		rc = jbd_ext3_set_needs_recovery(e, false);
out:
	jbd_ext3_journal_close(e);
	return rc;
}
