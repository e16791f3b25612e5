/* ext3 inode writing: the in-memory inode encoded into its inode-table slot
 * under the journal, and the block map with allocation (write.h, "inodes";
 * docs/write-inode.md).
 *
 * Encoding: in->raw is the source of truth for every byte we do not model
 * (in-inode xattrs past i_extra_isize, osd fields, i_dir_acl of
 * directories, fragment fields). ext3_mark_inode_dirty encodes the decoded
 * fields into raw, then copies all of raw into the inode-table block.
 *
 * Locking: the caller holds in->lock as writer. The one field another
 * thread may change meanwhile is the on-disk i_dtime of an inode on the
 * orphan list: it is the next orphan's number, taken from the in-memory
 * list (in->orphan_next, fs->orphan_lock), and orphan.c rewrites a
 * predecessor's copy without its inode lock. So an orphan inode is encoded
 * and copied under fs->orphan_lock (ext3_inode_write_raw's `orphan_locked`
 * says the caller has it); in->a.dtime is not touched by other threads. The block map cache is reset under map_lock whenever the map
 * changes.
 */
#include "extfs/inode/inode_write.h"
#include "extfs/core/csum.h"
#include "extfs/core/data_ops.h"

#include "buf/buf.h"
#include "util/endian.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* ---- encoding ---- */

/* Seconds as the 32-bit field plus, when the extra word at extra_off is in
 * the inode's used extra space, 2 epoch bits and the nanoseconds. */
static void encode_time(uint8_t *raw, unsigned off, unsigned extra_off, uint16_t extra_isize,
			int64_t sec, uint32_t nsec)
{
	put_le32(raw + off, (uint32_t)sec);
	if (extra_off + 4 <= (unsigned)EXT3_GOOD_OLD_INODE_SIZE + extra_isize) {
		/* The epoch counts how far sec is beyond the signed 32-bit value
		 * (the reader adds (x & 3) << 32 to (int32_t)t). */
		int64_t epoch = (sec - (int64_t)(int32_t)(uint32_t)sec) >> 32;
		put_le32(raw + extra_off, ((uint32_t)epoch & 3u) | (nsec << 2));
	}
}

/* in->a (+ i_disksize) into in->raw. */
static void inode_encode(const struct ext3_fs *fs, struct ext3_inode *in)
{
	uint8_t *raw = in->raw;
	const struct ext3_inode_attr *a = &in->a;
	put_le16(raw + 0x00, a->mode);
	put_le16(raw + 0x02, (uint16_t)a->uid);
	put_le32(raw + 0x04, (uint32_t)in->i_disksize);
	/* An orphan's i_dtime is the next inode of the on-disk orphan chain,
	 * which follows the in-memory list (orphan.c). */
	if (in->on_orphan)
		put_le32(raw + 0x14, in->orphan_next ? in->orphan_next->ino : 0);
	else
		put_le32(raw + 0x14, a->dtime);
	put_le16(raw + 0x18, (uint16_t)a->gid);
	put_le16(raw + 0x1A, a->links);
	put_le32(raw + 0x1C, a->blocks);
	/* huge_file: osd2.l_i_blocks_high (the kernel writes it whenever the
	 * feature is on; without it the field is reserved and kept as read) */
	if (fs->ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE)
		put_le16(raw + 0x74, a->blocks_hi);
	put_le32(raw + 0x20, a->flags);
	for (int i = 0; i < EXT3_N_BLOCKS; i++)
		put_le32(raw + 0x28 + 4 * i, a->block[i]);
	put_le32(raw + 0x64, a->generation);
	put_le32(raw + 0x68, a->file_acl);
	/* i_size_high: only regular files (directories keep i_dir_acl as read). */
	if ((a->mode & EXT3_S_IFMT) == EXT3_S_IFREG)
		put_le32(raw + 0x6C, (uint32_t)(in->i_disksize >> 32));
	put_le16(raw + 0x78, (uint16_t)(a->uid >> 16));
	put_le16(raw + 0x7A, (uint16_t)(a->gid >> 16));
	uint16_t xi = 0;
	if (fs->g.inode_size > EXT3_GOOD_OLD_INODE_SIZE) {
		xi = a->extra_isize;
		put_le16(raw + 0x80, xi);
	}
	encode_time(raw, 0x08, 0x8C, xi, a->atime, a->atime_ns);
	encode_time(raw, 0x0C, 0x84, xi, a->ctime, a->ctime_ns);
	encode_time(raw, 0x10, 0x88, xi, a->mtime, a->mtime_ns);
	if (xi >= 0x94 - 0x80)
		encode_time(raw, 0x90, 0x94, xi, a->crtime, a->crtime_ns);
}

/* The first time a file passes 2 GiB, the large_file ro_compat feature is
 * set (journaled). */
static int large_file_note(struct jbd_handle *h, struct ext3_fs *fs, const struct ext3_inode *in)
{
	if ((in->a.mode & EXT3_S_IFMT) != EXT3_S_IFREG || in->i_disksize <= 0x7fffffffull)
		return 0;
	ext3_sb_lock(fs);
	uint32_t ro = le32_to_cpu(fs->sb.s_feature_ro_compat);
	bool need = !(ro & EXT3_FEATURE_RO_COMPAT_LARGE_FILE);
	if (need) {
		fs->sb.s_feature_ro_compat = cpu_to_le32(ro | EXT3_FEATURE_RO_COMPAT_LARGE_FILE);
		/* Old superblocks (rev 0) have no feature fields: make it dynamic. */
		if (le32_to_cpu(fs->sb.s_rev_level) == EXT3_GOOD_OLD_REV) {
			fs->sb.s_rev_level = cpu_to_le32(EXT3_DYNAMIC_REV);
			fs->sb.s_first_ino = cpu_to_le32(EXT3_GOOD_OLD_FIRST_INO);
			fs->sb.s_inode_size = cpu_to_le16(EXT3_GOOD_OLD_INODE_SIZE);
		}
	}
	ext3_sb_unlock(fs);
	return need ? ext3_super_dirty(h, fs) : 0;
}

/* The inode-table block holding in, with write access in h; *slot = the
 * inode's bytes in it. */
static int itable_access(struct jbd_handle *h, struct ext3_inode *in, struct buffer_head **out,
			 uint8_t **slot)
{
	uint64_t blk;
	unsigned off;
	ext3_fs_inode_loc(in->fs, in->ino, &blk, &off);
	struct buffer_head *bh;
	int rc = ext3_bread(in->fs, blk, "inode table", &bh);
	if (rc)
		return err_wrap(rc, "ext3: writing inode %u", in->ino);
	rc = ext3_journal_get_write_access(h, bh);
	if (rc) {
		buf_put(bh);
		return rc;
	}
	*out = bh;
	*slot = (uint8_t *)buf_data(bh) + off;
	return 0;
}

int ext3_inode_write_raw(struct jbd_handle *h, struct ext3_inode *in, bool orphan_locked)
{
	struct ext3_fs *fs = in->fs;
	struct buffer_head *bh;
	uint8_t *slot;
	int rc = itable_access(h, in, &bh, &slot);
	if (rc)
		return rc;
	/* Orphans: i_dtime may be rewritten by orphan.c meanwhile. */
	bool lock = in->on_orphan && !orphan_locked;
	if (lock)
		pthread_mutex_lock(&fs->orphan_lock);
	inode_encode(fs, in);
	memcpy(slot, in->raw, fs->g.inode_size);
	/* metadata_csum: computed on the slot under the locks that cover all
	 * of its bytes (in->lock, and orphan_lock for an orphan's i_dtime) */
	ext4_inode_csum_update_seeded(fs, ext4_inode_csum_seed(in, in->a.generation), slot);
	if (lock)
		pthread_mutex_unlock(&fs->orphan_lock);
	rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	return rc;
}

int ext3_inode_write_orphan_next(struct jbd_handle *h, struct ext3_inode *in)
{
	struct buffer_head *bh;
	uint8_t *slot;
	int rc = itable_access(h, in, &bh, &slot);
	if (rc)
		return rc;
	put_le32(in->raw + 0x14, in->orphan_next ? in->orphan_next->ino : 0);
	memcpy(slot + 0x14, in->raw + 0x14, 4);
	/* the owner writes the slot under orphan_lock too while the inode is
	 * an orphan, so the checksum covers the whole slot as it is */
	ext4_inode_csum_update_seeded(in->fs, ext4_inode_csum_seed(in, get_le32(slot + 0x64)), slot);
	rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	return rc;
}

int ext3_mark_inode_dirty(struct jbd_handle *h, struct ext3_inode *in)
{
	int rc = large_file_note(h, in->fs, in);
	if (!rc)
		rc = ext3_inode_write_raw(h, in, false);
	if (!rc) /* fsync commits this transaction (file_data.c) */
		ext3_inode_note_tid(h, in, false);
	return rc;
}

uint64_t ext3_inode_blocks_max(const struct ext3_fs *fs)
{
	return fs->ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE ? (1ull << 48) - 1 : 0xffffffffull;
}

uint64_t ext3_inode_blocks_now(const struct ext3_inode *in)
{
	return in->a.blocks | (uint64_t)in->a.blocks_hi << 32;
}

void ext3_inode_blocks_add(struct ext3_inode *in, int64_t sectors)
{
	struct ext3_inode_attr *a = &in->a;
	uint64_t b = a->blocks | (uint64_t)a->blocks_hi << 32;
	/* HUGE_FILE_FL (the kernel's, past 2^48 sectors): counted in blocks */
	if ((in->fs->ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE) && (a->flags & EXT4_HUGE_FILE_FL))
		sectors /= (int64_t)(in->fs->g.block_size / 512);
	if (sectors < 0)
		b = b > (uint64_t)-sectors ? b - (uint64_t)-sectors : 0;
	else
		b += (uint64_t)sectors;
	a->blocks = (uint32_t)b;
	a->blocks_hi = (uint16_t)(b >> 32);
}

/* Is the file's data journaled (its data blocks are metadata to jbd)? */
bool ext3_inode_data_is_meta(const struct ext3_inode *in)
{
	uint16_t t = in->a.mode & EXT3_S_IFMT;
	if (t == EXT3_S_IFDIR || t == EXT3_S_IFLNK)
		return true;
	return ext3_dops_journal_data(in) || (in->a.flags & EXT3_JOURNAL_DATA_FL);
}
