/* Inode allocation (write.h, "inode allocation"; docs/write-alloc.md).
 *
 * Group choice as 2.6.30's ext3 (written from its semantics):
 * - directories, Orlov: a top-level directory (parent is the root or has
 *   the TOPDIR flag) goes to the group, from a random start, with the fewest
 *   directories among those with at least the average free inodes and free
 *   blocks; a subdirectory stays in or near the parent's group while that
 *   group is not crowded with directories and has enough room (at least the
 *   average less a quarter group of inodes and blocks); else any group with
 *   the average free inodes, else any with one;
 * - other inodes: the parent's group if it has free inodes and blocks, else
 *   a quadratic hash from it, else the next group with a free inode.
 * Counts are read racily (relaxed atomics) for the choice; the group's lock
 * makes the claim exact.
 *
 * The new inode is initialised in memory (mode, owner, times, a new
 * generation, inherited flags, i_extra_isize 28 with large inodes: the size
 * of 2.6.30 ext3's large-inode fields), put in the inode cache by ext3_iget
 * and written with ext3_mark_inode_dirty. Its inode-table block is not read
 * from disk when no other inode of the block is in use (itable_fresh).
 */
#include "extfs/core/uninit.h"
#include "extfs/core/write.h"
#include "extfs/inode/extent_write.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* 2.6.30 ext3's i_extra_isize for new inodes: its large fields (extra_isize,
 * pad, three time extras, crtime + extra, version_hi). */
#define NEW_EXTRA_ISIZE 28u

/* Flags a new inode inherits from its directory; regular files drop the
 * directory-only ones, other non-directories keep only these two. */
#define FL_INHERITED                                                                      \
	(EXT3_SECRM_FL | EXT3_UNRM_FL | EXT3_COMPR_FL | EXT3_SYNC_FL | EXT3_NODUMP_FL |  \
	 EXT3_NOATIME_FL | EXT3_JOURNAL_DATA_FL | EXT3_DIRSYNC_FL)
#define FL_OTHER_MASK (EXT3_NODUMP_FL | EXT3_NOATIME_FL)

/* Generation numbers: one counter per process from a time-based seed (the
 * kernel's s_next_generation starts random at mount). */
static atomic_uint_least32_t next_generation;

static uint32_t generation_new(void)
{
	uint32_t g = (uint32_t)atomic_load(&next_generation);
	if (!g) {
		uint32_t seed = (uint32_t)time(NULL) * 2654435761u ^ (uint32_t)getpid() << 16;
		seed |= 1;
		uint_least32_t zero = 0;
		atomic_compare_exchange_strong(&next_generation, &zero, seed);
	}
	return (uint32_t)atomic_fetch_add(&next_generation, 1);
}

static uint16_t load16(const uint16_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* ---- group choice ---- */

struct totals {
	uint64_t freei, freeb, ndirs;
};

static void totals_get(struct ext3_fs *fs, struct totals *t)
{
	ext3_sb_lock(fs);
	t->freei = fs->free_inodes;
	t->freeb = fs->free_blocks;
	ext3_sb_unlock(fs);
	t->ndirs = 0;
	for (uint32_t g = 0; g < fs->g.groups; g++)
		t->ndirs += load16(&fs->gd[g].bg_used_dirs_count);
}

/* Any group (from start) with at least min_free free inodes. */
static int64_t group_with_inodes(const struct ext3_fs *fs, uint32_t start, uint64_t min_free)
{
	for (uint32_t i = 0; i < fs->g.groups; i++) {
		uint32_t g = (start + i) % fs->g.groups;
		uint16_t fi = load16(&fs->gd[g].bg_free_inodes_count);
		if (fi && fi >= min_free)
			return g;
	}
	return -1;
}

/* ---- flex_bg (ext4): the choice works on flex groups, as the kernel's
 * find_group_orlov and find_group_other do when s_log_groups_per_flex is
 * set: a flex group's inodes are packed in its first groups, next to its
 * packed bitmaps and inode tables. ---- */

static uint32_t flex_size(const struct ext3_fs *fs)
{
	if (!(fs->incompat & EXT4_FEATURE_INCOMPAT_FLEX_BG) || fs->sb.s_log_groups_per_flex > 16)
		return 1;
	return 1u << fs->sb.s_log_groups_per_flex;
}

struct flex_stats {
	uint64_t freei, freeb, ndirs;
};

static void flex_stats_get(const struct ext3_fs *fs, uint32_t f, uint32_t fx, struct flex_stats *st)
{
	*st = (struct flex_stats){0};
	for (uint32_t g = f * fx; g < (f + 1) * fx && g < fs->g.groups; g++) {
		st->freei += load16(&fs->gd[g].bg_free_inodes_count);
		st->freeb += load16(&fs->gd[g].bg_free_blocks_count);
		st->ndirs += load16(&fs->gd[g].bg_used_dirs_count);
	}
}

/* The first group of flex group f with a free inode, or -1. */
static int64_t flex_first_free(const struct ext3_fs *fs, uint32_t f, uint32_t fx)
{
	for (uint32_t g = f * fx; g < (f + 1) * fx && g < fs->g.groups; g++)
		if (load16(&fs->gd[g].bg_free_inodes_count))
			return g;
	return -1;
}

/* Orlov over flex groups: a top-level directory to the flex group (from a
 * random start) with the fewest directories among those with the average
 * free inodes and blocks; a subdirectory to the parent's flex group or the
 * next one not crowded with directories and with room (the kernel's
 * max_dirs, min_inodes, min_clusters scaled by the flex size); then the
 * first group of it with a free inode. -1: the caller's fallback. */
static int64_t find_flex_orlov(struct ext3_fs *fs, struct ext3_inode *dir, uint32_t fx,
			       const struct totals *t)
{
	uint32_t nflex = (fs->g.groups + fx - 1) / fx, ipg = fs->g.inodes_per_group;
	uint32_t pflex = ext3_geom_group_of_ino(&fs->g, dir->ino) / fx;
	uint64_t avefreei = t->freei / nflex, avefreeb = t->freeb / nflex;
	struct flex_stats st;
	if (dir->ino == EXT3_ROOT_INO || (dir->a.flags & EXT3_TOPDIR_FL)) {
		uint32_t start = (generation_new() * 2654435761u >> 7) % nflex;
		int64_t best = -1;
		uint64_t best_ndir = UINT64_MAX;
		for (uint32_t i = 0; i < nflex; i++) {
			uint32_t f = (start + i) % nflex;
			flex_stats_get(fs, f, fx, &st);
			if (!st.freei || st.ndirs >= best_ndir || st.freei < avefreei || st.freeb < avefreeb)
				continue;
			best = f;
			best_ndir = st.ndirs;
		}
		return best >= 0 ? flex_first_free(fs, (uint32_t)best, fx) : -1;
	}
	uint64_t max_dirs = t->ndirs / nflex + (uint64_t)ipg * fx / 16;
	int64_t min_inodes = (int64_t)avefreei - (int64_t)ipg * fx / 4;
	int64_t min_blocks = (int64_t)avefreeb - (int64_t)fs->g.blocks_per_group * fx / 4;
	for (uint32_t i = 0; i < nflex; i++) {
		uint32_t f = (pflex + i) % nflex;
		flex_stats_get(fs, f, fx, &st);
		if (!st.freei || st.ndirs >= max_dirs || (int64_t)st.freei < min_inodes ||
		    (int64_t)st.freeb < min_blocks)
			continue;
		int64_t g = flex_first_free(fs, f, fx);
		if (g >= 0)
			return g;
	}
	return -1;
}

static int64_t find_group_orlov(struct ext3_fs *fs, struct ext3_inode *dir)
{
	uint32_t ngroups = fs->g.groups, ipg = fs->g.inodes_per_group;
	uint32_t parent = ext3_geom_group_of_ino(&fs->g, dir->ino);
	struct totals t;
	totals_get(fs, &t);
	uint64_t avefreei = t.freei / ngroups, avefreeb = t.freeb / ngroups;
	uint32_t fx = flex_size(fs);
	if (fx > 1) {
		int64_t g = find_flex_orlov(fs, dir, fx, &t);
		if (g >= 0)
			return g;
	} else if (dir->ino == EXT3_ROOT_INO || (dir->a.flags & EXT3_TOPDIR_FL)) {
		uint32_t start = (generation_new() * 2654435761u >> 7) % ngroups;
		int64_t best = -1;
		uint32_t best_ndir = ipg;
		for (uint32_t i = 0; i < ngroups; i++) {
			uint32_t g = (start + i) % ngroups;
			const struct ext3_group_desc *d = &fs->gd[g];
			uint16_t fi = load16(&d->bg_free_inodes_count);
			uint16_t nd = load16(&d->bg_used_dirs_count);
			if (!fi || nd >= best_ndir || fi < avefreei ||
			    load16(&d->bg_free_blocks_count) < avefreeb)
				continue;
			best = g;
			best_ndir = nd;
		}
		if (best >= 0)
			return best;
	} else {
		uint64_t max_dirs = t.ndirs / ngroups + ipg / 16;
		int64_t min_inodes = (int64_t)avefreei - ipg / 4;
		int64_t min_blocks = (int64_t)avefreeb - fs->g.blocks_per_group / 4;
		for (uint32_t i = 0; i < ngroups; i++) {
			uint32_t g = (parent + i) % ngroups;
			const struct ext3_group_desc *d = &fs->gd[g];
			uint16_t fi = load16(&d->bg_free_inodes_count);
			if (!fi || load16(&d->bg_used_dirs_count) >= max_dirs || fi < min_inodes ||
			    load16(&d->bg_free_blocks_count) < min_blocks)
				continue;
			return g;
		}
	}
	int64_t g = group_with_inodes(fs, parent, avefreei);
	return g >= 0 ? g : group_with_inodes(fs, parent, 1);
}

static int64_t find_group_other(struct ext3_fs *fs, struct ext3_inode *dir)
{
	uint32_t ngroups = fs->g.groups;
	uint32_t parent = ext3_geom_group_of_ino(&fs->g, dir->ino);
	const struct ext3_group_desc *d = &fs->gd[parent];
	uint32_t fx = flex_size(fs);
	if (fx > 1) {
		/* flex_bg: the first group of the parent's flex group with a
		 * free inode (the kernel packs inodes so) */
		int64_t g = flex_first_free(fs, parent / fx, fx);
		if (g >= 0)
			return g;
	}
	if (load16(&d->bg_free_inodes_count) && load16(&d->bg_free_blocks_count))
		return parent;
	/* A quadratic hash from the parent (spreads the inodes of
	 * directories whose group is full). */
	uint32_t g = (parent + dir->ino) % ngroups;
	for (uint32_t i = 1; i < ngroups; i <<= 1) {
		g = (g + i) % ngroups;
		d = &fs->gd[g];
		if (load16(&d->bg_free_inodes_count) && load16(&d->bg_free_blocks_count))
			return g;
	}
	return group_with_inodes(fs, (parent + 1) % ngroups, 1);
}

/* ---- the bitmap ---- */

/* The first clear bit of the nbits of bm, or nbits. Full 64-bit words are
 * skipped whole (a filling group's bitmap is mostly full: a bit at a time
 * was 15% of a create's CPU), then bytes, then the bit in the byte. */
static uint32_t first_zero_bit(const uint8_t *bm, uint32_t nbits)
{
	uint32_t byte = 0, nbytes = nbits / 8;
	for (uint64_t w; byte + 8 <= nbytes; byte += 8) {
		memcpy(&w, bm + byte, 8);
		if (w != UINT64_MAX)
			break;
	}
	while (byte < nbytes && bm[byte] == 0xff)
		byte++;
	uint32_t bit = byte * 8;
	while (bit < nbits && (bm[bit >> 3] & (1u << (bit & 7))))
		bit++;
	return bit < nbits ? bit : nbits;
}

/* Group g's inode bitmap with write access (group lock held). */
static int ibitmap_get(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g,
		       struct buffer_head **bh)
{
	if (!ext4_group_bitmap_uninit(fs, g, true))
		return ext3_journal_bread(h, fs, fs->gd[g].bg_inode_bitmap, "inode bitmap", false, bh);
	/* INODE_UNINIT (ext4): no bitmap on disk, every inode free; built
	 * here, written with the first claim (which clears the flag) */
	uint64_t blk = fs->gd[g].bg_inode_bitmap;
	if (blk >= fs->g.blocks_count)
		return ext3_fs_error(fs, "group %u: inode bitmap %llu past the end", g,
				     (unsigned long long)blk);
	int err = 0;
	*bh = buf_get(fs->cache, blk, &err);
	if (!*bh)
		return err_set(err ? err : -ENOMEM, "ext4: group %u: inode bitmap buffer", g);
	buf_lock(*bh);
	ext4_inode_bitmap_init(fs, buf_data(*bh));
	buf_set_uptodate(*bh);
	buf_unlock(*bh);
	int rc = ext3_journal_get_write_access(h, *bh);
	if (rc) {
		buf_put(*bh);
		*bh = NULL;
	}
	return rc;
}

/* ext4: the slot of inode ino came out of the never-initialised part of
 * its inode table (ext3_group_itable_use), which may hold anything
 * (lazy_itable_init): zero it under write access before the inode cache
 * reads it, so the new inode starts from nothing (its block is journaled
 * by ext3_mark_inode_dirty in the same handle anyway). */
static int itable_slot_zero(struct jbd_handle *h, struct ext3_fs *fs, uint32_t ino)
{
	uint64_t blk;
	unsigned off;
	ext3_fs_inode_loc(fs, ino, &blk, &off);
	struct buffer_head *bh;
	int rc = ext3_journal_bread(h, fs, blk, "inode table", false, &bh);
	if (rc)
		return rc;
	memset((uint8_t *)buf_data(bh) + off, 0, fs->g.inode_size);
	rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	return rc;
}

/* The inode-table block of the inode at bit (just claimed in bm, group g's
 * bitmap, group lock held), made up in memory when nothing in it can be in
 * use: 2.6.30 ext3's "in_mem" case of locating a new inode. When every
 * other bit of the block is clear in the current bitmap (the buffer we
 * allocate from, so it includes this transaction's claims), no slot of the
 * block holds a live inode and its disk contents do not matter: the block
 * is zeroed and marked uptodate instead of read. A block already uptodate
 * in the cache is used as it is (it may hold a just-freed inode whose slot
 * is journaled in this or the committing transaction); the buffer lock
 * orders this against a reader or readahead of the same block. Returns the
 * buffer with a reference (held until the new inode is written, so the
 * block is not reclaimed and read back meanwhile), or NULL: the block must
 * be read (or the buffer could not be had; the read path copes). */
static struct buffer_head *itable_fresh(struct ext3_fs *fs, uint32_t g, const uint8_t *bm,
					uint32_t bit)
{
	uint32_t ipb = fs->g.inodes_per_block, ipg = fs->g.inodes_per_group;
	uint32_t first = bit - bit % ipb;
	uint32_t end = ipg - first > ipb ? first + ipb : ipg;
	for (uint32_t b = first; b < end; b++)
		if (b != bit && (bm[b >> 3] & (1u << (b & 7))))
			return NULL;
	uint64_t blk;
	unsigned off;
	ext3_fs_inode_loc(fs, g * ipg + bit + 1, &blk, &off);
	if (blk >= fs->g.blocks_count)
		return NULL; /* corrupt descriptor: the read reports it */
	int err = 0;
	struct buffer_head *bh = buf_get(fs->cache, blk, &err);
	if (!bh)
		return NULL;
	buf_lock(bh);
	if (!buf_uptodate(bh)) {
		memset(buf_data(bh), 0, buf_size(bh));
		buf_set_uptodate(bh);
	}
	buf_unlock(bh);
	return bh;
}

/* Claim a free inode in group g: its number, 0 when the group is full, or
 * an error. *itable: the inode's table block when itable_fresh made it. */
static int64_t group_claim(struct jbd_handle *h, struct ext3_fs *fs, uint32_t g, bool is_dir,
			   struct buffer_head **itable)
{
	ext3_group_lock(fs, g);
	int64_t ret = 0;
	struct buffer_head *bh = NULL;
	if (!fs->gd[g].bg_free_inodes_count)
		goto out;
	int rc = ibitmap_get(h, fs, g, &bh);
	if (rc) {
		ret = rc;
		goto out;
	}
	uint8_t *bm = buf_data(bh);
	uint32_t ipg = fs->g.inodes_per_group, bit = first_zero_bit(bm, ipg);
	if (bit >= ipg) {
		ret = ext3_fs_error(fs, "group %u: inode bitmap full but %u inodes free in the "
				    "descriptor", g, fs->gd[g].bg_free_inodes_count);
		goto out;
	}
	uint32_t ino = g * ipg + bit + 1;
	if (ino < fs->first_ino) {
		ret = ext3_fs_error(fs, "group %u: inode bitmap marks reserved inode %u free", g, ino);
		goto out;
	}
	bm[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	/* ext4: the table's used part grows past the slot (before the flag
	 * goes: INODE_UNINIT means none of it is); the block bitmap of an
	 * INODE_UNINIT group is written now too, as the kernel does */
	bool fresh_slot = ext3_group_itable_use(fs, g, bit);
	ext3_group_bitmap_changed(fs, g, true, bm, bit, 1);
	rc = ext3_journal_dirty_metadata(h, bh);
	if (!rc)
		rc = ext3_block_bitmap_init_write(h, fs, g);
	if (!rc)
		rc = ext3_group_adjust(h, fs, g, 0, -1, is_dir ? 1 : 0);
	if (!rc)
		*itable = itable_fresh(fs, g, bm, bit);
	/* after itable_fresh, which spares the read of a block without a
	 * live inode (the slot's block is then in the cache) */
	if (!rc && fresh_slot)
		rc = itable_slot_zero(h, fs, ino);
	if (rc && *itable) {
		buf_put(*itable);
		*itable = NULL;
	}
	ret = rc ? rc : (int64_t)ino;
out:
	buf_put(bh);
	ext3_group_unlock(fs, g);
	return ret;
}

/* Clear inode ino's bit (it must be set) and count it free. */
static int ino_release(struct jbd_handle *h, struct ext3_fs *fs, uint32_t ino, bool is_dir)
{
	uint32_t g = ext3_geom_group_of_ino(&fs->g, ino);
	uint32_t bit = ext3_geom_ino_index(&fs->g, ino);
	ext3_group_lock(fs, g);
	struct buffer_head *bh;
	int rc = ibitmap_get(h, fs, g, &bh);
	if (!rc) {
		uint8_t *bm = buf_data(bh);
		if (!(bm[bit >> 3] & (1u << (bit & 7)))) {
			rc = ext3_fs_error(fs, "freeing free inode %u", ino);
		} else {
			bm[bit >> 3] &= (uint8_t)~(1u << (bit & 7));
			ext3_group_bitmap_changed(fs, g, true, bm, bit, 1);
			rc = ext3_journal_dirty_metadata(h, bh);
			if (!rc)
				rc = ext3_group_adjust(h, fs, g, 0, 1, is_dir ? -1 : 0);
		}
	}
	buf_put(bh);
	ext3_group_unlock(fs, g);
	return rc;
}

/* ---- the new inode ---- */

/* i_extra_isize of a new inode: ext3's 28; on ext4 (any ext4 feature)
 * the kernel's 32 (sizeof(struct ext4_inode) - 128: i_checksum_hi, the
 * time extras, i_crtime and its extra, i_version_hi, i_projid), at least
 * s_want_extra_isize and s_min_extra_isize with the extra_isize feature,
 * as far as the inode has room. */
static uint32_t new_extra_isize(const struct ext3_fs *fs)
{
	const uint32_t ext4_ro = EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE | EXT4_FEATURE_RO_COMPAT_METADATA_CSUM |
				 EXT4_FEATURE_RO_COMPAT_GDT_CSUM | EXT4_FEATURE_RO_COMPAT_HUGE_FILE |
				 EXT4_FEATURE_RO_COMPAT_DIR_NLINK;
	const uint32_t ext4_in = EXT4_FEATURE_INCOMPAT_EXTENTS | EXT4_FEATURE_INCOMPAT_64BIT |
				 EXT4_FEATURE_INCOMPAT_FLEX_BG;
	if (!(fs->ro_compat & ext4_ro) && !(fs->incompat & ext4_in))
		return NEW_EXTRA_ISIZE;
	uint32_t xi = 32;
	if (fs->ro_compat & EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE) {
		uint32_t want = le16_to_cpu(fs->sb.s_want_extra_isize);
		uint32_t min = le16_to_cpu(fs->sb.s_min_extra_isize);
		xi = want > xi ? want : xi;
		xi = min > xi ? min : xi;
		xi &= ~3u;
	}
	uint32_t room = fs->g.inode_size - EXT3_GOOD_OLD_INODE_SIZE;
	return xi <= room ? xi : NEW_EXTRA_ISIZE;
}

/* Fill in (held as writer) as a fresh inode. */
static void inode_init_new(struct ext3_inode *in, const struct ext3_inode *dir, uint16_t mode,
			   uint32_t uid, uint32_t gid)
{
	const struct ext3_fs *fs = in->fs;
	ext3_rsv_discard(in); /* a stale cached copy of a freed inode may have one */
	memset(&in->rsv, 0, sizeof in->rsv);
	ext3_inode_map_invalidate(in);
	struct ext3_inode_attr *a = &in->a;
	memset(a, 0, sizeof *a);
	a->ino = in->ino;
	a->mode = mode;
	a->uid = uid;
	a->gid = gid;
	uint32_t fl = dir->a.flags & FL_INHERITED;
	uint16_t type = mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFREG)
		fl &= ~(uint32_t)EXT3_DIRSYNC_FL;
	else if (type != EXT3_S_IFDIR)
		fl &= FL_OTHER_MASK;
	a->flags = fl;
	a->generation = generation_new();
	int64_t sec;
	uint32_t nsec;
	ext3_now(&sec, &nsec);
	a->atime = a->mtime = a->ctime = a->crtime = sec;
	uint32_t xi = new_extra_isize(fs);
	if (fs->g.inode_size >= EXT3_GOOD_OLD_INODE_SIZE + xi) {
		a->extra_isize = (uint16_t)xi;
		a->atime_ns = a->mtime_ns = a->ctime_ns = a->crtime_ns = nsec;
	}
	in->i_size = in->i_disksize = 0;
	ext4_ext_new_inode_init(in); /* extent-mapped on an extent filesystem */
	/* ext3_mark_inode_dirty encodes every field of a; nothing of the old
	 * inode (in-inode xattrs) survives. */
	memset(in->raw, 0, in->raw_size);
}

/* Numbers ext3_new_inode skips because their old in-memory inode is locked. */
#define CLAIM_TRIES 8u

int ext3_new_inode(struct jbd_handle *h, struct ext3_inode *dir, uint16_t mode, uint32_t uid,
		   uint32_t gid, struct ext3_inode **out)
{
	struct ext3_fs *fs = dir->fs;
	*out = NULL;
	if (!fs->group_locks)
		return err_set(-EROFS, "ext3: read-only mount");
	bool is_dir = (mode & EXT3_S_IFMT) == EXT3_S_IFDIR;
	ext3_sb_lock(fs);
	bool none = fs->free_inodes == 0;
	ext3_sb_unlock(fs);
	if (none)
		return err_set(-ENOSPC, "ext3: no free inodes");
	int64_t start = is_dir ? find_group_orlov(fs, dir) : find_group_other(fs, dir);
	if (start < 0)
		return err_set(-ENOSPC, "ext3: no free inodes");
	/* The new number's in-memory inode may still be known to another
	 * thread from a stale lookup of the number's previous life (freed,
	 * then reused here). That thread may hold its lock and be about to
	 * start a handle - to wait for the commit that our handle holds up.
	 * Waiting for the lock here, under the handle, would close that cycle
	 * (write.h: inode locks before the journal handle). So the lock is
	 * only tried, which cannot wait and so cannot close a cycle: a busy
	 * number stays claimed, so that the next claim picks another one, and
	 * is given back below. A lock we do get is that of an inode nobody
	 * can reach by name yet (no directory entry, and the bitmap said
	 * free): a later waiter blocks on us, never we on it. */
	struct ext3_inode *in = NULL;
	struct ext3_inode *busy[CLAIM_TRIES];
	uint32_t busy_ino[CLAIM_TRIES];
	unsigned nbusy = 0;
	int rc = 0;
	for (;;) {
		/* The chosen group, then every other one (another thread may
		 * have taken the last inode of the chosen one meanwhile). */
		int64_t ino = 0;
		struct buffer_head *itable = NULL;
		for (uint32_t i = 0; i < fs->g.groups && !ino; i++) {
			ino = group_claim(h, fs, (uint32_t)((start + i) % fs->g.groups), is_dir, &itable);
			if (ino < 0)
				break;
		}
		if (ino <= 0) {
			rc = ino < 0 ? (int)ino : err_set(-ENOSPC, "ext3: no free inodes");
			break;
		}
		rc = ext3_iget(fs, (uint32_t)ino, &in);
		if (rc) {
			in = NULL;
			buf_put(itable);
			(void)ino_release(h, fs, (uint32_t)ino, is_dir);
			break;
		}
		if (ext3_inode_trywrlock(in) == 0) {
			inode_init_new(in, dir, mode, uid, gid);
			rc = ext3_mark_inode_dirty(h, in);
			buf_put(itable);
			if (rc) {
				(void)ino_release(h, fs, (uint32_t)ino, is_dir);
				ext3_inode_unlock(in);
				ext3_iput(in);
				in = NULL;
			}
			break;
		}
		buf_put(itable);
		if (nbusy == CLAIM_TRIES) {
			(void)ino_release(h, fs, (uint32_t)ino, is_dir);
			ext3_iput(in);
			in = NULL;
			rc = err_set(-EAGAIN, "ext3: %u freshly freed inodes in a row still locked by stale users",
				     CLAIM_TRIES);
			break;
		}
		busy[nbusy] = in;
		busy_ino[nbusy++] = (uint32_t)ino;
		in = NULL;
	}
	for (unsigned k = 0; k < nbusy; k++) {
		(void)ino_release(h, fs, busy_ino[k], is_dir);
		ext3_iput(busy[k]);
	}
	if (rc)
		return rc;
	*out = in;
	return 0;
}

int ext3_free_inode(struct jbd_handle *h, struct ext3_inode *in)
{
	struct ext3_fs *fs = in->fs;
	if (!fs->group_locks)
		return err_set(-EROFS, "ext3: read-only mount");
	if (in->ino < fs->first_ino || in->ino > fs->g.inodes_count)
		return ext3_fs_error(fs, "freeing reserved or nonexistent inode %u", in->ino);
	bool is_dir = (in->a.mode & EXT3_S_IFMT) == EXT3_S_IFDIR;
	int64_t sec;
	uint32_t nsec;
	ext3_now(&sec, &nsec);
	in->a.dtime = (uint32_t)sec;
	int rc = ext3_mark_inode_dirty(h, in);
	if (!rc)
		rc = ino_release(h, fs, in->ino, is_dir);
	/* The number may be claimed again at once: the cached copy reads as
	 * free from now on (mode 0, in memory only; the disk keeps the mode as
	 * the kernel leaves it), so dropping a stale reference to it never
	 * frees the number a second time. */
	if (!rc)
		in->a.mode = 0;
	return rc;
}
