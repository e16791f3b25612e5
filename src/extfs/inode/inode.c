/* ext3 inodes: reading and checking one from the inode table, the
 * accessors of the shared in-memory inode, the indirect block map, data
 * reads, device numbers. See docs/ext3-read-path.md, "Inodes" and "Block
 * map"; the cache of inodes is icache.c. Public functions take in->lock as
 * reader (ext3.h, "inodes"); the _locked variants expect it held. */
#include "extfs/core/ext3_int.h"

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

int ext3_inode_load(struct ext3_fs *fs, uint32_t ino, struct ext3_inode *out)
{
	if (ino == 0 || ino > fs->g.inodes_count)
		return err_set(-EINVAL, "ext3: inode %u out of range (1-%u)", ino, fs->g.inodes_count);
	uint64_t blk;
	unsigned off;
	ext3_fs_inode_loc(fs, ino, &blk, &off);
	struct buffer_head *bh;
	int rc = ext3_bread(fs, blk, "inode table", &bh);
	if (rc)
		return rc;
	const uint8_t *raw = (const uint8_t *)buf_data(bh) + off;
	memset(&out->a, 0, sizeof out->a);
	memcpy(out->raw, raw, fs->g.inode_size);
	buf_put(bh);
	raw = out->raw;
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
	uint32_t ea = in->a.file_acl ? fs->g.block_size / 512 : 0;
	return in->a.blocks == ea;
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

/* For logical >= EXT3_NDIR_BLOCKS: the tree that maps it (IND, DIND or
 * TIND: *levels 1..3, *root its block) and *l, the offset inside that
 * tree. -EFBIG past the triple indirect range. */
static int map_indirect_root(const struct ext3_inode *in, uint64_t apb, uint64_t logical,
			     uint64_t *l, uint32_t *root, int *levels)
{
	uint64_t off = logical - EXT3_NDIR_BLOCKS, span = apb;
	for (int lv = 1; lv <= 3; lv++, span *= apb) {
		if (off < span) {
			*root = in->a.block[EXT3_NDIR_BLOCKS + lv - 1];
			*levels = lv;
			*l = off;
			return 0;
		}
		off -= span;
	}
	return err_set(-EFBIG, "ext3: inode %u: logical block %llu beyond the triple indirect range",
		       in->a.ino, (unsigned long long)logical);
}

int ext3_inode_bmap(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
		    uint64_t *physical)
{
	ext3_inode_rdlock(in);
	int rc = ext3_inode_bmap_locked(fs, in, logical, physical);
	ext3_inode_unlock(in);
	return rc;
}

int ext3_inode_bmap_locked(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical,
			   uint64_t *physical)
{
	*physical = 0;
	uint64_t apb = fs->g.apb;
	uint32_t root = 0;
	int levels = 0;
	uint64_t l = logical;
	if (l < EXT3_NDIR_BLOCKS) {
		root = in->a.block[l];
		levels = 0;
	} else {
		int rc = map_indirect_root(in, apb, logical, &l, &root, &levels);
		if (rc)
			return rc;
	}
	uint32_t cur = root;
	for (int lv = levels; lv > 0; lv--) {
		if (cur == 0)
			return 0;
		uint64_t div = 1;
		for (int k = 1; k < lv; k++)
			div *= apb;
		struct buffer_head *bh;
		int rc = ext3_bread(fs, cur, "indirect", &bh);
		if (rc)
			return err_wrap(rc, "ext3: inode %u", in->a.ino);
		const uint32_t *ptr = buf_data(bh);
		cur = le32_to_cpu(ptr[(l / div) % apb]);
		buf_put(bh);
	}
	if (cur && (cur >= fs->g.blocks_count || cur < fs->g.first_data_block))
		return err_set(-EUCLEAN, "ext3: inode %u: logical block %llu maps to block %u "
			       "outside the filesystem (%u blocks)", in->a.ino,
			       (unsigned long long)logical, cur, fs->g.blocks_count);
	*physical = cur;
	return 0;
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

void ext3_map_cache_reset(struct ext3_map_cache *mc)
{
	mc->valid = false;
}

void ext3_inode_map_invalidate(struct ext3_inode *in)
{
	pthread_mutex_lock(&in->map_lock);
	if (in->map)
		ext3_map_cache_reset(in->map);
	pthread_mutex_unlock(&in->map_lock);
}

/* The inode's own map cache for a mapping of `logical`, allocated on the
 * first use past the direct blocks (which the inode maps itself); NULL when
 * not needed or out of memory (map_run_locked then copies the leaf on its
 * stack). Caller holds map_lock. */
static struct ext3_map_cache *inode_map(struct ext3_inode *in, uint64_t logical)
{
	if (!in->map && logical >= EXT3_NDIR_BLOCKS) {
		in->map = malloc(sizeof *in->map);
		if (in->map)
			ext3_map_cache_reset(in->map);
	}
	return in->map;
}

/* Is pointer p (non-zero) a block inside the filesystem? */
static bool map_ptr_ok(const struct ext3_fs *fs, uint32_t p)
{
	return p < fs->g.blocks_count && p >= fs->g.first_data_block;
}

/* Is pointer block `blk` cached and uptodate? If not, start reading it
 * without waiting. META, as 2.6.30 reads metadata: CFQ dispatches it before
 * the queue's data, which sorts before it by sector when it lies ahead of
 * the data already queued. */
static bool leaf_start(struct ext3_fs *fs, uint32_t blk)
{
	struct buffer_head *bh = buf_get(ext3_fs_cache(fs), blk, NULL);
	if (!bh)
		return false;
	bool ok = buf_uptodate(bh);
	if (!ok)
		buf_ll_rw_block(BLK_READ | BLK_REQ_META, 1, &bh);
	buf_put(bh);
	return ok;
}

int ext3_inode_map_prefetch(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			    uint64_t *next)
{
	uint64_t apb = fs->g.apb;
	*next = logical + 1;
	if (logical < EXT3_NDIR_BLOCKS) {
		*next = EXT3_NDIR_BLOCKS; /* mapped by the inode itself */
		return 0;
	}
	ext3_inode_rdlock(in);
	uint64_t l = 0;
	uint32_t cur = 0;
	int levels = 0;
	int rc = map_indirect_root(in, apb, logical, &l, &cur, &levels);
	if (!rc) {
		*next = logical - l % apb + apb; /* the leaf's span ends there */
		uint64_t span = 1;
		for (int k = 1; k < levels; k++)
			span *= apb;
		/* The levels above the leaf synchronously (one block per apb
		 * leaves, cached after the first), the leaf asynchronously. */
		for (int lv = levels; lv > 1 && cur && map_ptr_ok(fs, cur); lv--) {
			struct buffer_head *bh;
			rc = ext3_bread(fs, cur, "indirect", &bh);
			if (rc) {
				cur = 0;
				break;
			}
			cur = le32_to_cpu(((const uint32_t *)buf_data(bh))[(l / span) % apb]);
			span /= apb;
			buf_put(bh);
		}
		if (cur && map_ptr_ok(fs, cur))
			(void)leaf_start(fs, cur);
	}
	ext3_inode_unlock(in);
	return rc;
}

/* map_run with in->lock held as reader and mc owned by the caller. With
 * `guess` non-NULL a leaf pointer block that is not cached is not waited for:
 * its read is started and *guess set to its block number (return 1, *count
 * = the blocks up to the leaf's end, at most max). */
static int map_run_locked(struct ext3_fs *fs, const struct ext3_inode *in,
			  struct ext3_map_cache *mc, uint64_t logical, uint64_t max,
			  uint64_t *physical, uint64_t *count, uint32_t *guess);

int ext3_inode_map_run(struct ext3_fs *fs, struct ext3_inode *in,
		       struct ext3_map_cache *mc, uint64_t logical, uint64_t max,
		       uint64_t *physical, uint64_t *count)
{
	ext3_inode_rdlock(in);
	int rc;
	if (mc) {
		rc = map_run_locked(fs, in, mc, logical, max, physical, count, NULL);
	} else {
		pthread_mutex_lock(&in->map_lock);
		rc = map_run_locked(fs, in, inode_map(in, logical), logical, max, physical, count,
				    NULL);
		pthread_mutex_unlock(&in->map_lock);
	}
	ext3_inode_unlock(in);
	return rc;
}

/* Where the data of `logical` probably is, its leaf `leaf` not being in:
 * a file written sequentially continues right after the previous block
 * (prev: the caller's hint, else the map cache when it still holds the
 * previous leaf; 0 when unknown), skipping the leaf when the leaf sits there
 * (2.6.30's ext3 puts each leaf right before the data it maps; the ext4
 * driver mounting ext3 groups the leaves elsewhere). 0: no guess. Never the first block of a
 * group nor across a group's end (bitmaps and inode table come first). */
static uint64_t map_guess_at(const struct ext3_fs *fs, uint32_t leaf, uint64_t idx, uint32_t prev,
			     uint64_t *count)
{
	uint64_t p = (uint64_t)leaf + 1 + idx;
	/* The leaf right after the previous data (with the double and triple
	 * indirect blocks before it at their first leaf): the data follows
	 * the leaf. */
	if (prev)
		p = leaf > prev && leaf - prev <= 3 ? (uint64_t)leaf + 1 : (uint64_t)prev + 1;
	if (p <= fs->g.first_data_block || p >= fs->g.blocks_count)
		return 0;
	uint64_t g = (p - fs->g.first_data_block) / fs->g.blocks_per_group;
	uint64_t gfirst = fs->g.first_data_block + g * fs->g.blocks_per_group;
	uint64_t gend = gfirst + fs->g.blocks_per_group;
	if (gend > fs->g.blocks_count)
		gend = fs->g.blocks_count;
	if (p == gfirst)
		return 0;
	if (p + *count > gend)
		*count = gend - p;
	return p;
}

int ext3_inode_map_guess(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			 uint64_t max, uint64_t prev_hint, uint64_t *physical, uint64_t *count)
{
	ext3_inode_rdlock(in);
	pthread_mutex_lock(&in->map_lock);
	struct ext3_map_cache *mc = inode_map(in, logical);
	uint32_t prev = prev_hint < UINT32_MAX ? (uint32_t)prev_hint : 0;
	/* the caller's hint wins over the cache, which the checks of earlier
	 * segments move back */
	if (!prev && logical > EXT3_NDIR_BLOCKS && mc && mc->valid && logical - 1 >= mc->first &&
	    logical - 1 - mc->first < mc->n)
		prev = mc->ptr[logical - 1 - mc->first];
	else if (!prev && logical == EXT3_NDIR_BLOCKS)
		prev = in->a.block[EXT3_NDIR_BLOCKS - 1];
	uint32_t leaf = 0;
	int rc = map_run_locked(fs, in, mc, logical, max, physical, count, &leaf);
	if (rc == 1) {
		uint64_t idx = (logical - EXT3_NDIR_BLOCKS) % fs->g.apb;
		uint64_t p = map_guess_at(fs, leaf, idx, prev, count);
		if (p)
			*physical = p;
		else /* no guess: wait for the leaf */
			rc = map_run_locked(fs, in, mc, logical, max, physical, count, NULL);
	}
	pthread_mutex_unlock(&in->map_lock);
	ext3_inode_unlock(in);
	return rc;
}

static int map_run_locked(struct ext3_fs *fs, const struct ext3_inode *in,
			  struct ext3_map_cache *mc, uint64_t logical, uint64_t max,
			  uint64_t *physical, uint64_t *count, uint32_t *guess)
{
	*physical = 0;
	*count = 0;
	if (max == 0)
		return 0;
	uint64_t apb = fs->g.apb;
	const uint32_t *ptrs; /* the pointer array that maps `logical` */
	uint64_t first, n;    /* ... starting at logical block `first`, n pointers */
	uint32_t leafcopy[EXT3_MAX_BLOCK_SIZE / 4];
	if (logical < EXT3_NDIR_BLOCKS) {
		ptrs = in->a.block;
		first = 0;
		n = EXT3_NDIR_BLOCKS;
	} else if (mc && mc->valid && logical >= mc->first && logical - mc->first < mc->n) {
		ptrs = mc->ptr;
		first = mc->first;
		n = mc->n;
	} else {
		/* Walk down to the leaf as ext3_inode_bmap does (same errors). */
		uint64_t l = 0;
		uint32_t cur = 0;
		int levels = 0;
		int mrc = map_indirect_root(in, apb, logical, &l, &cur, &levels);
		if (mrc)
			return mrc;
		/* span: blocks mapped by the block `cur` at level lv. */
		uint64_t span = 1;
		for (int k = 0; k < levels; k++)
			span *= apb;
		for (int lv = levels; lv > 0; lv--) {
			if (cur == 0) { /* a missing pointer block: all of its span is a hole */
				uint64_t left = span - l % span;
				*count = left < max ? left : max;
				return 0;
			}
			if (lv == 1 && guess && map_ptr_ok(fs, cur) && !leaf_start(fs, cur)) {
				uint64_t left = apb - l % apb;
				*count = left < max ? left : max;
				*guess = cur;
				return 1;
			}
			struct buffer_head *bh;
			int rc = ext3_bread(fs, cur, "indirect", &bh);
			if (rc)
				return err_wrap(rc, "ext3: inode %u", in->a.ino);
			const uint32_t *p = buf_data(bh);
			span /= apb;
			if (lv > 1) {
				cur = le32_to_cpu(p[(l / span) % apb]);
			} else {
				uint32_t *dst = mc ? mc->ptr : leafcopy;
				for (uint64_t i = 0; i < apb; i++)
					dst[i] = le32_to_cpu(p[i]);
				if (mc) {
					mc->valid = true;
					mc->leaf_blk = cur;
					mc->first = logical - l % apb;
					mc->n = (uint32_t)apb;
				}
			}
			buf_put(bh);
		}
		ptrs = mc ? mc->ptr : leafcopy;
		first = logical - l % apb;
		n = apb;
	}
	uint64_t i = logical - first;
	uint32_t p0 = ptrs[i];
	if (p0 && !map_ptr_ok(fs, p0))
		return err_set(-EUCLEAN, "ext3: inode %u: logical block %llu maps to block %u "
			       "outside the filesystem (%u blocks)", in->a.ino,
			       (unsigned long long)logical, p0, fs->g.blocks_count);
	uint64_t c = 1;
	while (c < max && i + c < n) {
		uint32_t p = ptrs[i + c];
		if (p0 == 0 ? p != 0 : (p != p0 + c || !map_ptr_ok(fs, p)))
			break;
		c++;
	}
	*physical = p0;
	*count = c;
	return 0;
}

/* SEEK_DATA / SEEK_HOLE: runs of the block map, with a private map cache
 * (the inode's own belongs to sequential readers). A block is data when it
 * is allocated: ext3 allocates at write time (a dirty page always has its
 * block), so the map is the whole answer. Missing pointer blocks skip their
 * whole span, so a sparse file of terabytes costs a few reads. */
int ext3_inode_seek(struct ext3_fs *fs, struct ext3_inode *in, uint64_t off, bool hole, uint64_t *out)
{
	uint64_t size = ext3_inode_size(in);
	if (off >= size)
		return err_set(-ENXIO, "ext3: inode %u: offset %llu at or past the end (%llu)", in->a.ino,
			       (unsigned long long)off, (unsigned long long)size);
	uint64_t bs = fs->g.block_size;
	uint64_t end = (size + bs - 1) / bs;
	struct ext3_map_cache *mc = malloc(sizeof *mc);
	if (!mc)
		return err_set(-ENOMEM, "out of memory");
	ext3_map_cache_reset(mc);
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
		if ((phys == 0) == hole) {
			*out = b * bs > off ? b * bs : off;
			if (*out > size)
				*out = size;
			break;
		}
		b += count ? count : 1;
	}
	free(mc);
	return rc;
}
