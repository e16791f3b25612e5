/* ext3 inodes: reading and checking one from the inode table, the
 * accessors of the shared in-memory inode, data reads and SEEK_DATA/HOLE
 * through the block map (bmap.h), device numbers. See
 * docs/ext3-read-path.md, "Inodes"; the cache of inodes is icache.c. Public functions take in->lock as
 * reader (ext3.h, "inodes"); the _locked variants expect it held. */
#include "extfs/core/csum.h"
#include "extfs/core/ext3_int.h"
#include "extfs/inode/falloc.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

static uint16_t raw_le16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16_to_cpu(v);
}

static uint32_t raw_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32_to_cpu(v);
}

/* Seconds (signed 32 bits + 2 epoch bits from extra) and nanoseconds. */
static void inode_time(uint32_t t, const uint8_t *raw, unsigned extra_off, uint16_t extra_isize,
		       int64_t *sec, uint32_t *nsec)
{
	*sec = (int32_t)t;
	*nsec = 0;
	if (extra_off + 4 <= (unsigned)EXT3_GOOD_OLD_INODE_SIZE + extra_isize) {
		uint32_t x = raw_le32(raw + extra_off);
		*sec += (int64_t)(x & 3u) << 32;
		*nsec = x >> 2;
		if (*nsec > 999999999u)
			*nsec = 0;
	}
}

static bool attr_in_use(const struct ext3_inode_attr *a)
{
	return a->links > 0 && a->mode != 0;
}

/* ---- accessors (each under in->lock as reader) ---- */

uint32_t ext3_inode_ino(const struct ext3_inode *in) { return in->ino; }

void ext3_inode_attr_get(struct ext3_inode *in, struct ext3_inode_attr *out)
{
	ext3_inode_rdlock(in);
	*out = in->a;
	out->size = in->i_size;
	ext3_inode_unlock(in);
}

uint16_t ext3_inode_mode(struct ext3_inode *in)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	return a.mode;
}

uint64_t ext3_inode_size(struct ext3_inode *in)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	return a.size;
}

uint64_t ext3_inode_disksize(struct ext3_inode *in)
{
	ext3_inode_rdlock(in);
	uint64_t v = in->i_disksize;
	ext3_inode_unlock(in);
	return v;
}

bool ext3_inode_in_use(struct ext3_inode *in)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	return attr_in_use(&a);
}

uint64_t ext3_inode_dirty_data(const struct ext3_inode *in)
{
	return atomic_load(&in->dirty_data);
}

void ext3_inode_dirty_data_add(struct ext3_inode *in, int64_t delta)
{
	atomic_fetch_add(&in->dirty_data, (uint64_t)delta);
}

/* ---- reading an inode ---- */

/* uninit_bg / metadata_csum: an inode of a group flagged INODE_UNINIT, or
 * past the group's used part of the table (index >= inodes_per_group -
 * bg_itable_unused), was never written: lazy_itable_init leaves whatever
 * the device held there. As the kernel and e2fsck, it is a free inode and
 * its slot is never read. */
static bool inode_in_uninit_table(const struct ext3_fs *fs, uint32_t ino)
{
	if (!(fs->ro_compat & (EXT4_FEATURE_RO_COMPAT_GDT_CSUM | EXT4_FEATURE_RO_COMPAT_METADATA_CSUM)))
		return false;
	if (!fs->gd)
		return false;
	uint32_t g = ext3_geom_group_of_ino(&fs->g, ino);
	uint32_t idx = ext3_geom_ino_index(&fs->g, ino);
	const struct ext3_group_desc *d = &fs->gd[g];
	/* a writable mount changes both under the group's lock (ialloc.c,
	 * super_write.c); a slot claimed there is zeroed before it is read */
	uint16_t fl = __atomic_load_n(&d->bg_flags, __ATOMIC_RELAXED);
	uint16_t unused = __atomic_load_n(&d->bg_itable_unused, __ATOMIC_RELAXED);
	if (fl & EXT4_BG_INODE_UNINIT)
		return true;
	return unused <= fs->g.inodes_per_group && idx >= fs->g.inodes_per_group - unused;
}

uint64_t ext3_inode_attr_blocks512(const struct ext3_fs *fs, const struct ext3_inode_attr *a)
{
	uint64_t b = a->blocks | (uint64_t)a->blocks_hi << 32;
	if ((fs->ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE) && (a->flags & EXT4_HUGE_FILE_FL))
		b *= fs->g.block_size / 512;
	return b;
}

int ext3_inode_load(struct ext3_fs *fs, uint32_t ino, struct ext3_inode *out)
{
	if (ino == 0 || ino > fs->g.inodes_count)
		return err_set(-EINVAL, "ext3: inode %u out of range (1-%u)", ino, fs->g.inodes_count);
	memset(&out->a, 0, sizeof out->a);
	if (inode_in_uninit_table(fs, ino)) {
		memset(out->raw, 0, fs->g.inode_size);
	} else {
		uint64_t blk;
		unsigned off;
		ext3_fs_inode_loc(fs, ino, &blk, &off);
		struct buffer_head *bh;
		int rc = ext3_bread(fs, blk, "inode table", &bh);
		if (rc)
			return rc;
		memcpy(out->raw, (const uint8_t *)buf_data(bh) + off, fs->g.inode_size);
		buf_put(bh);
	}
	const uint8_t *raw = out->raw;
	/* metadata_csum: what the kernel's iget answers (EFSBADCRC). */
	if (!ext4_inode_csum_ok(fs, ino, raw))
		return err_set(-EBADMSG, "ext4: inode %u: checksum mismatch", ino);
	out->raw_size = (uint16_t)fs->g.inode_size;

	const struct ext3_disk_inode *di = (const struct ext3_disk_inode *)raw;
	out->a.ino = ino;
	out->a.mode = le16_to_cpu(di->i_mode);
	out->a.links = le16_to_cpu(di->i_links_count);
	out->a.uid = le16_to_cpu(di->i_uid) | (uint32_t)le16_to_cpu(di->i_uid_high) << 16;
	out->a.gid = le16_to_cpu(di->i_gid) | (uint32_t)le16_to_cpu(di->i_gid_high) << 16;
	out->i_size = le32_to_cpu(di->i_size);
	if ((out->a.mode & EXT3_S_IFMT) == EXT3_S_IFREG)
		out->i_size |= (uint64_t)le32_to_cpu(di->i_size_high) << 32;
	out->a.blocks = le32_to_cpu(di->i_blocks);
	/* huge_file: 48-bit i_blocks (the kernel ignores the high half
	 * without the feature). */
	if (fs->ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE)
		out->a.blocks_hi = raw_le16(raw + 0x74); /* osd2.l_i_blocks_high */
	out->a.flags = le32_to_cpu(di->i_flags);
	out->a.dtime = le32_to_cpu(di->i_dtime);
	out->a.generation = le32_to_cpu(di->i_generation);
	out->a.file_acl = le32_to_cpu(di->i_file_acl);
	for (int i = 0; i < EXT3_N_BLOCKS; i++)
		out->a.block[i] = le32_to_cpu(di->i_block[i]);
	if (fs->g.inode_size > EXT3_GOOD_OLD_INODE_SIZE) {
		out->a.extra_isize = raw_le16(raw + 0x80);
		if (out->a.extra_isize % 4 ||
		    EXT3_GOOD_OLD_INODE_SIZE + (unsigned)out->a.extra_isize > fs->g.inode_size)
			return err_set(-EUCLEAN, "ext3: inode %u: bad i_extra_isize %u (inode size %u)",
				       ino, out->a.extra_isize, fs->g.inode_size);
	}
	inode_time(le32_to_cpu(di->i_atime), raw, 0x8C, out->a.extra_isize, &out->a.atime,
		   &out->a.atime_ns);
	inode_time(le32_to_cpu(di->i_mtime), raw, 0x88, out->a.extra_isize, &out->a.mtime,
		   &out->a.mtime_ns);
	inode_time(le32_to_cpu(di->i_ctime), raw, 0x84, out->a.extra_isize, &out->a.ctime,
		   &out->a.ctime_ns);
	if (out->a.extra_isize >= 0x94 - 0x80) /* i_crtime (0x90..0x93) present */
		inode_time(raw_le32(raw + 0x90), raw, 0x94, out->a.extra_isize, &out->a.crtime,
			   &out->a.crtime_ns);

	out->i_disksize = out->i_size;
	out->a.size = out->i_size;
	if (!attr_in_use(&out->a))
		return 0;
	if (out->a.file_acl && (out->a.file_acl >= fs->g.blocks_count || out->a.file_acl < fs->g.first_data_block))
		return err_set(-EUCLEAN, "ext3: inode %u: xattr block %u outside the filesystem",
			       ino, out->a.file_acl);
	uint16_t type = out->a.mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFDIR) {
		if (out->i_size % fs->g.block_size)
			return err_set(-EUCLEAN, "ext3: inode %u: directory size %llu not a multiple "
				       "of the block size", ino, (unsigned long long)out->i_size);
	} else if (type == EXT3_S_IFLNK) {
		if (out->i_size == 0 || out->i_size >= fs->g.block_size)
			return err_set(-EUCLEAN, "ext3: inode %u: bad symlink length %llu", ino,
				       (unsigned long long)out->i_size);
		if (ext3_inode_fast_symlink_locked(fs, out) && out->i_size >= sizeof out->a.block)
			return err_set(-EUCLEAN, "ext3: inode %u: fast symlink of %llu bytes (at "
				       "most 59)", ino, (unsigned long long)out->i_size);
	} else if (type != EXT3_S_IFREG && type != EXT3_S_IFCHR && type != EXT3_S_IFBLK &&
		   type != EXT3_S_IFIFO && type != EXT3_S_IFSOCK) {
		return err_set(-EUCLEAN, "ext3: inode %u: bad file type 0%o", ino, type >> 12);
	}
	return 0;
}

bool ext3_inode_is_fast_symlink(struct ext3_fs *fs, struct ext3_inode *in)
{
	ext3_inode_rdlock(in);
	bool f = ext3_inode_fast_symlink_locked(fs, in);
	ext3_inode_unlock(in);
	return f;
}

bool ext3_inode_fast_symlink_locked(const struct ext3_fs *fs, const struct ext3_inode *in)
{
	if ((in->a.mode & EXT3_S_IFMT) != EXT3_S_IFLNK)
		return false;
	uint64_t ea = in->a.file_acl ? fs->g.block_size / 512 : 0;
	return ext3_inode_attr_blocks512(fs, &in->a) == ea;
}

void ext3_inode_rdev(const struct ext3_inode_attr *a, uint32_t *major, uint32_t *minor)
{
	if (a->block[0]) { /* old 16-bit encoding */
		uint32_t d = a->block[0];
		*major = (d >> 8) & 0xff;
		*minor = d & 0xff;
	} else { /* new 32-bit encoding */
		uint32_t d = a->block[1];
		*major = (d & 0xfff00) >> 8;
		*minor = (d & 0xff) | ((d >> 12) & 0xfff00);
	}
}

ssize_t ext3_inode_pread(struct ext3_fs *fs, struct ext3_inode *in, void *buf,
			 size_t len, uint64_t off)
{
	ext3_inode_rdlock(in);
	ssize_t n = ext3_inode_pread_locked(fs, in, buf, len, off);
	ext3_inode_unlock(in);
	return n;
}

ssize_t ext3_inode_pread_locked(struct ext3_fs *fs, const struct ext3_inode *in, void *buf,
				size_t len, uint64_t off)
{
	if (off >= in->i_size)
		return 0;
	if (len > in->i_size - off)
		len = (size_t)(in->i_size - off);
	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX & ~(size_t)(fs->g.block_size - 1);
	uint8_t *dst = buf;
	size_t done = 0;
	uint32_t bs = fs->g.block_size;
	while (done < len) {
		uint64_t pos = off + done;
		uint64_t lblk = pos / bs;
		unsigned boff = (unsigned)(pos % bs);
		size_t n = bs - boff;
		if (n > len - done)
			n = len - done;
		uint64_t phys;
		int rc = ext3_inode_bmap_locked(fs, in, lblk, &phys);
		if (rc)
			return done ? (ssize_t)done : rc;
		if (phys == 0) {
			memset(dst + done, 0, n);
		} else {
			struct buffer_head *bh;
			rc = ext3_bread(fs, phys, "data", &bh);
			if (rc)
				return done ? (ssize_t)done : rc;
			memcpy(dst + done, (const uint8_t *)buf_data(bh) + boff, n);
			buf_put(bh);
		}
		done += n;
	}
	return (ssize_t)done;
}

/* SEEK_DATA / SEEK_HOLE: runs of the block map, with a private map cache
 * (the inode's own belongs to sequential readers). A block is data when it
 * is allocated and written: ext3 allocates at write time (a dirty page
 * always has its block, written or converted from unwritten), so the map
 * is the whole answer, but for an unwritten extent (fallocate), which is
 * data where the page cache holds a page of it, as the kernel's
 * iomap_seek_data says (falloc.c). Missing pointer blocks skip their
 * whole span, so a sparse file of terabytes costs a few reads. */
int ext3_inode_seek(struct ext3_fs *fs, struct ext3_inode *in, uint64_t off, bool hole, uint64_t *out)
{
	uint64_t size = ext3_inode_size(in);
	if (off >= size)
		return err_set(-ENXIO, "ext3: inode %u: offset %llu at or past the end (%llu)", in->a.ino,
			       (unsigned long long)off, (unsigned long long)size);
	uint64_t bs = fs->g.block_size;
	uint64_t end = (size + bs - 1) / bs;
	struct ext3_map_cache *mc = ext3_map_cache_new();
	if (!mc)
		return err_set(-ENOMEM, "out of memory");
	int rc = 0;
	uint64_t b = off / bs;
	for (;;) {
		if (b >= end) {
			rc = hole ? 0 : err_set(-ENXIO, "ext3: inode %u: no data after %llu", in->a.ino,
						 (unsigned long long)off);
			*out = size;
			break;
		}
		uint64_t phys, count;
		rc = ext3_inode_map_run(fs, in, mc, b, end - b, &phys, &count);
		if (rc)
			break;
		bool data = phys != 0;
		if (!data) {
			/* an unwritten extent: data where the page cache
			 * holds it (count narrows to one answer's run) */
			rc = ext4_falloc_seek_run(in, b, count, &data, &count);
			if (rc)
				break;
		}
		if (data != hole) {
			*out = b * bs > off ? b * bs : off;
			if (*out > size)
				*out = size;
			break;
		}
		b += count ? count : 1;
	}
	ext3_map_cache_free(mc);
	return rc;
}
