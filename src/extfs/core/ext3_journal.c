/* The internal journal of an ext3 image (inode 8): its block map, built
 * from a mounted filesystem, its replay and the superblock flags recovery
 * changes. Used by the mount (replay, the writable journal) and, through
 * recover.c, by `nostall recover` and the crash tests. The journal layer (src/jbd) knows nothing of ext3: ext3 finds
 * the journal's blocks through its own read path (mount checks, inode read,
 * indirect block map) and hands jbd a block-map callback; ext3 also owns the
 * superblock flags recovery changes (needs_recovery, the error state).
 *
 * For a replay the map is built from a read-only mount that is gone again
 * before recovery writes anything, so no cache ever holds a block recovery
 * changes. The superblock updates here go straight to the device (re-read
 * first: recovery may just have replayed the superblock's block); a mounted
 * filesystem writes its superblock itself (mount.c).
 *
 * Threads: none; synchronous device I/O.
 */
#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"

#include "dev/dev.h"
#include "util/crc32c.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ext3_journal {
	struct dev *dev;
	struct ext3_super_block sb; /* primary superblock as read at open (LE) */
	unsigned bs;
	uint32_t nblocks;
	uint64_t *map;              /* [nblocks]: logical journal block -> fs block */
};

/* The superblock's crc32c over its first 1020 bytes (metadata_csum). */
static uint32_t sb_csum(const struct ext3_super_block *sb)
{
	return crc32c(~0u, sb, sizeof *sb - 4);
}

static bool sb_csum_ok(const struct ext3_super_block *sb)
{
	if (!(le32_to_cpu(sb->s_feature_ro_compat) & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM))
		return true;
	uint32_t stored;
	memcpy(&stored, (const uint8_t *)sb + sizeof *sb - 4, 4);
	return le32_to_cpu(stored) == sb_csum(sb);
}

/* Re-read the primary; one whose checksum fails (a write of it torn by a
 * crash, one the journal does not restore) is refused: sb_write would
 * otherwise bless its mixed bytes with a fresh checksum. */
static int sb_read(struct ext3_journal *e)
{
	int rc = dev_rw_sync(e->dev, DEV_OP_READ, EXT3_SUPERBLOCK_OFFSET / DEV_SECTOR_SIZE,
			     sizeof e->sb / DEV_SECTOR_SIZE, &e->sb, 0);
	if (!rc && !sb_csum_ok(&e->sb))
		rc = err_set(-EBADMSG, "ext4: superblock checksum mismatch (0x%08x computed; run e2fsck)",
			     sb_csum(&e->sb));
	return rc;
}

static int sb_write(struct ext3_journal *e)
{
	/* Like e2fsck and the kernel, a superblock write records its time. */
	e->sb.s_wtime = cpu_to_le32((uint32_t)time(NULL));
	/* metadata_csum (ext4): the superblock's crc32c over its first 1020
	 * bytes, in its last four. */
	if (le32_to_cpu(e->sb.s_feature_ro_compat) & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM) {
		uint32_t c = cpu_to_le32(sb_csum(&e->sb));
		memcpy((uint8_t *)&e->sb + sizeof e->sb - 4, &c, 4);
	}
	/* Flushed before (the replayed blocks are durable before the flags
	 * say recovery is done) and FUA, as the mounted filesystem writes it
	 * (mount.c's super_write) and the kernel's ext4_commit_super: a
	 * superblock left half-written by a plain write's crash would fail its
	 * checksum, and the next recovery would refuse the filesystem. */
	return dev_rw_sync(e->dev, DEV_OP_WRITE, EXT3_SUPERBLOCK_OFFSET / DEV_SECTOR_SIZE,
			   sizeof e->sb / DEV_SECTOR_SIZE, &e->sb, DEV_IO_PREFLUSH | DEV_IO_FUA);
}

/* Map every block of inode 8 through the read path of a mounted fs (its
 * block map: indirect, or an extent tree on ext4). */
static int journal_map(struct ext3_journal *e, struct ext3_fs *fs)
{
	struct ext3_inode *in;
	struct ext3_map_cache *mc = NULL;
	int rc;
	e->bs = ext3_fs_block_size(fs);
	rc = ext3_iget(fs, EXT3_JOURNAL_INO, &in);
	if (rc < 0)
		return rc;
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	if ((a.mode & EXT3_S_IFMT) != EXT3_S_IFREG || !a.links || a.size < 2ull * e->bs ||
	    a.size / e->bs > UINT32_MAX) {
		rc = err_set(-EUCLEAN, "journal inode %u is not a valid journal (mode 0%o, size %llu)",
			     EXT3_JOURNAL_INO, a.mode, (unsigned long long)a.size);
		goto out;
	}
	e->nblocks = (uint32_t)(a.size / e->bs);
	e->map = calloc(e->nblocks, sizeof *e->map);
	if (!e->map) {
		rc = -ENOMEM;
		goto out;
	}
	mc = ext3_map_cache_new();
	if (!mc) {
		rc = err_set(-ENOMEM, "out of memory");
		goto out;
	}
	for (uint64_t l = 0; l < e->nblocks;) {
		uint64_t phys, count;
		rc = ext3_inode_map_run(fs, in, mc, l, e->nblocks - l, &phys, &count);
		if (rc < 0)
			goto out;
		if (!phys) {
			rc = err_set(-EUCLEAN, "ext3: journal inode has a hole at block %llu", (unsigned long long)l);
			goto out;
		}
		for (uint64_t k = 0; k < count; k++)
			e->map[l + k] = phys + k;
		l += count;
	}
out:
	ext3_map_cache_free(mc);
	ext3_iput(in);
	return rc;
}

/* The superblock's journal fields: an internal journal in inode 8. */
int ext3_journal_sb_check(const struct ext3_super_block *sb)
{
	if (le16_to_cpu(sb->s_magic) != EXT3_SUPER_MAGIC)
		return err_set(-EINVAL, "not an ext2/ext3 filesystem (bad superblock magic)");
	if (!(le32_to_cpu(sb->s_feature_compat) & EXT3_FEATURE_COMPAT_HAS_JOURNAL))
		return err_set(-EINVAL, "the filesystem has no journal (ext2)");
	uint32_t inum = le32_to_cpu(sb->s_journal_inum);
	if (inum != EXT3_JOURNAL_INO || le32_to_cpu(sb->s_journal_dev))
		return err_set(-EOPNOTSUPP, "external journals are not supported (journal inode %u, "
			       "device %u)", inum, le32_to_cpu(sb->s_journal_dev));
	return 0;
}

int ext3_journal_open_fs(struct ext3_fs *fs, struct ext3_journal **out)
{
	*out = NULL;
	struct ext3_journal *e = calloc(1, sizeof *e);
	if (!e)
		return err_set(-ENOMEM, "out of memory");
	e->dev = ext3_fs_dev(fs);
	e->sb = *ext3_fs_super(fs);
	int rc = ext3_journal_sb_check(&e->sb);
	if (!rc)
		rc = journal_map(e, fs);
	if (rc < 0) {
		ext3_journal_close(e);
		return rc;
	}
	*out = e;
	return 0;
}

void ext3_journal_close(struct ext3_journal *e)
{
	if (!e)
		return;
	free(e->map);
	free(e);
}

static int journal_bmap(void *ctx, uint32_t logical, uint64_t *physical)
{
	struct ext3_journal *e = ctx;
	if (logical >= e->nblocks)
		return -ENOENT;
	*physical = e->map[logical];
	return 0;
}

void ext3_journal_location(struct ext3_journal *e, struct jbd_location *loc)
{
	memset(loc, 0, sizeof *loc);
	loc->block_size = e->bs;
	loc->bmap = journal_bmap;
	loc->bmap_ctx = e;
	loc->nr_blocks = e->nblocks;
	/* The superblock's block (1 with 1 KiB blocks, else 0): replayed
	 * with FUA, never torn (jbd_location). */
	loc->fua_block_set = true;
	loc->fua_block = e->bs == EXT3_SUPERBLOCK_OFFSET ? 1 : 0;
}

void ext3_journal_config_features(const struct ext3_journal *e, struct jbd_config *cfg)
{
	if (le32_to_cpu(e->sb.s_feature_incompat) & EXT4_FEATURE_INCOMPAT_64BIT)
		cfg->journal_64bit = true;
	if (le32_to_cpu(e->sb.s_feature_ro_compat) & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM)
		cfg->csum_v3 = true;
}

bool ext3_journal_needs_recovery(const struct ext3_journal *e)
{
	return le32_to_cpu(e->sb.s_feature_incompat) & EXT3_FEATURE_INCOMPAT_RECOVER;
}

int ext3_journal_set_needs_recovery(struct ext3_journal *e, bool on)
{
	int rc = sb_read(e);
	if (rc < 0)
		return rc;
	uint32_t f = le32_to_cpu(e->sb.s_feature_incompat);
	f = on ? f | EXT3_FEATURE_INCOMPAT_RECOVER : f & ~(uint32_t)EXT3_FEATURE_INCOMPAT_RECOVER;
	e->sb.s_feature_incompat = cpu_to_le32(f);
	return sb_write(e);
}

int ext3_journal_mark_error(struct ext3_journal *e)
{
	int rc = sb_read(e);
	if (rc < 0)
		return rc;
	e->sb.s_state = cpu_to_le16(le16_to_cpu(e->sb.s_state) | EXT3_ERROR_FS);
	return sb_write(e);
}

void ext3_journal_set_super(struct ext3_journal *e, const struct ext3_super_block *sb)
{
	e->sb = *sb;
}

unsigned ext3_journal_block_size(const struct ext3_journal *e)
{
	return e->bs;
}

uint32_t ext3_journal_fs_blocks(const struct ext3_journal *e)
{
	return le32_to_cpu(e->sb.s_blocks_count);
}

int ext3_journal_replay(struct ext3_journal *e, unsigned flags, struct jbd_recovery_info *info, bool *did)
{
	struct jbd_recovery_info local;
	if (!info)
		info = &local;
	memset(info, 0, sizeof *info);
	if (did)
		*did = false;
	struct jbd_location loc;
	ext3_journal_location(e, &loc);
	int rc = jbd_journal_check_dev(e->dev, &loc, info);
	if (rc < 0 || (!info->needed && !ext3_journal_needs_recovery(e)))
		goto out;
	/* e2fsck runs its journal step whenever needs_recovery is set, even
	 * on an empty log (which then only moves s_sequence on by one). */
	rc = jbd_journal_recover_dev(e->dev, &loc, flags | JBD_RECOVER_RESET, info);
	if (rc == -EBADMSG && info->discarded) {
		/* A journal its checksums show corrupt, emptied as e2fsck does
		 * (JBD_RECOVER_DISCARD_BAD): the filesystem is no longer known
		 * valid, so the next check is a full one. */
		if (did)
			*did = true;
		int rc2 = sb_read(e);
		if (!rc2) {
			e->sb.s_state = cpu_to_le16(le16_to_cpu(e->sb.s_state) & ~EXT3_VALID_FS);
			uint32_t f = le32_to_cpu(e->sb.s_feature_incompat) & ~(uint32_t)EXT3_FEATURE_INCOMPAT_RECOVER;
			e->sb.s_feature_incompat = cpu_to_le32(f);
			rc2 = sb_write(e);
		}
		return rc2 < 0 ? rc2 : rc;
	}
	if (rc < 0 || (flags & JBD_RECOVER_DRY_RUN))
		goto out;
	if (did)
		*did = true;
	/* A journal error, or a log whose checksum failed before its end
	 * (jbd2 and e2fsck do the same): e2fsck must look at it. */
	if (info->sb_errno || info->failed)
		rc = ext3_journal_mark_error(e);
	if (rc == 0)
		rc = ext3_journal_set_needs_recovery(e, false);
out:
	return rc;
}

int ext3_journal_features(struct ext3_fs *fs, char *out, size_t len)
{
	out[0] = 0;
	struct ext3_journal *e;
	int rc = ext3_journal_open_fs(fs, &e);
	if (rc < 0)
		return rc;
	struct jbd_location loc;
	ext3_journal_location(e, &loc);
	struct jbd_recovery_info info;
	rc = jbd_journal_check_dev(e->dev, &loc, &info);
	if (!rc)
		jbd_features_format(info.compat, info.incompat, info.ro_compat, out, len);
	ext3_journal_close(e);
	return rc;
}
