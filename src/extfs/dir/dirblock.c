/* Directory helpers shared by the read side (dir.c) and the write side
 * (dir_write.c, dx_write.c): the bounds of a directory's blocks, the htree
 * header checks, and the pure operations on one directory block in memory
 * (insert, find, remove, split by hash, building a dx root). Interfaces in
 * dir_int.h; design in docs/write-dirs.md. */
#include "extfs/core/csum.h"
#include "extfs/dir/dir_int.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- directory I/O bounds ---- */

/* No holes in ext3 directories, so size/bs <= data blocks <= i_blocks: this
 * bounds every walk by the allocated space even on a corrupt inode. */
int ext3_dir_nblocks(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t *n)
{
	if ((dir->a.mode & EXT3_S_IFMT) != EXT3_S_IFDIR)
		return err_set(-ENOTDIR, "ext3: inode %u is not a directory", dir->a.ino);
	uint64_t nb = dir->i_size / fs->g.block_size;
	uint64_t have = (uint64_t)dir->a.blocks * 512 / fs->g.block_size;
	if (nb > have || nb > fs->g.blocks_count)
		return err_set(-EUCLEAN, "ext3: directory inode %u: size %llu needs %llu blocks but "
			       "only %llu are allocated", dir->a.ino, (unsigned long long)dir->i_size,
			       (unsigned long long)nb, (unsigned long long)have);
	*n = nb;
	return 0;
}

int ext3_dir_bread(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t lblk,
		   struct buffer_head **out)
{
	uint64_t phys;
	*out = NULL;
	int rc = ext3_inode_bmap_locked(fs, dir, lblk, &phys);
	if (rc)
		return rc;
	if (phys == 0)
		return err_set(-EUCLEAN, "ext3: directory inode %u: hole at block %llu", dir->a.ino,
			       (unsigned long long)lblk);
	rc = ext3_bread(fs, phys, "directory", out);
	if (rc || !ext4_has_metadata_csum(fs))
		return rc;
	/* metadata_csum: a leaf's tail checksum here; an htree block's
	 * (dx_tail) where the index is loaded (dir.c, dx_load), as the kernel
	 * checks an index block only when the caller expects one. */
	const uint8_t *b = buf_data(*out);
	if (buf_verified(*out) || ext4_dir_is_dx_block(b, fs->g.block_size))
		return 0; /* checked since read (the write path keeps its tail right) */
	if (ext4_dirblock_csum_ok(fs, dir->a.ino, dir->a.generation, b)) {
		buf_set_verified(*out);
		return 0;
	}
	buf_put(*out);
	*out = NULL;
	return err_set(-EBADMSG, "ext4: directory inode %u: block %llu: checksum mismatch", dir->a.ino,
		       (unsigned long long)lblk);
}

/* ---- htree checks and hashing ---- */

bool ext3_dir_is_dx(const struct ext3_fs *fs, const struct ext3_inode *dir)
{
	return (fs->compat & EXT3_FEATURE_COMPAT_DIR_INDEX) && (dir->a.flags & EXT3_INDEX_FL);
}

int ext3_dx_name_hash(const struct ext3_fs *fs, unsigned root_hv, const char *name, size_t len,
		      uint32_t *hash)
{
	unsigned hv = root_hv + (fs->unsigned_hash ? 3u : 0u);
	return ext3_dx_hash(name, len, (int)hv, fs->hash_seed, hash, NULL);
}

int ext3_dx_root_check(const uint8_t *b, unsigned *hv, unsigned *levels)
{
	const struct ext3_dx_root *root = (const struct ext3_dx_root *)b;
	*hv = root->info.hash_version;
	*levels = root->info.indirect_levels;
	if (le16_to_cpu(root->dot_rec_len) != 12 || root->info.info_length != 8 ||
	    le32_to_cpu(root->info.reserved_zero) != 0 || *hv > EXT3_DX_HASH_TEA ||
	    *levels >= EXT3_DX_MAX_LEVELS)
		return err_set(-EUCLEAN, "bad htree root (hash %u, levels %u, info length %u)", *hv,
			       *levels, root->info.info_length);
	return 0;
}

int ext3_dx_node_check(const uint8_t *b, unsigned bs)
{
	const struct ext3_dx_node *node = (const struct ext3_dx_node *)b;
	if (le32_to_cpu(node->fake_inode) != 0 || le16_to_cpu(node->fake_rec_len) != bs)
		return err_set(-EUCLEAN, "htree node has no empty header entry");
	return 0;
}

unsigned ext3_dx_count(const uint8_t *b, unsigned off)
{
	struct ext3_dx_countlimit cl;
	memcpy(&cl, b + off, sizeof cl);
	return le16_to_cpu(cl.count);
}

unsigned ext3_dx_limit(const uint8_t *b, unsigned off)
{
	struct ext3_dx_countlimit cl;
	memcpy(&cl, b + off, sizeof cl);
	return le16_to_cpu(cl.limit);
}

uint32_t ext3_dx_hash_at(const uint8_t *b, unsigned off, unsigned i)
{
	uint32_t v;
	memcpy(&v, b + off + (size_t)i * sizeof(struct ext3_dx_entry), sizeof v);
	return i ? le32_to_cpu(v) : 0;
}

uint32_t ext3_dx_block_at(const uint8_t *b, unsigned off, unsigned i)
{
	uint32_t v;
	memcpy(&v, b + off + (size_t)i * sizeof(struct ext3_dx_entry) + 4, sizeof v);
	return le32_to_cpu(v) & 0x00ffffffu;
}

unsigned ext3_dx_tail_bytes(const struct ext3_fs *fs)
{
	return ext4_has_metadata_csum(fs) ? 8 : 0;
}

int ext3_dx_entries_check(const uint8_t *b, unsigned off, unsigned bs, unsigned tail, uint64_t nblocks)
{
	unsigned limit = ext3_dx_limit(b, off), count = ext3_dx_count(b, off);
	unsigned want = (bs - off - tail) / sizeof(struct ext3_dx_entry);
	if (limit != want || count == 0 || count > limit)
		return err_set(-EUCLEAN, "bad count/limit %u/%u (limit should be %u)", count, limit,
			       want);
	for (unsigned i = 0; i < count; i++) {
		uint32_t blk = ext3_dx_block_at(b, off, i);
		if (blk == 0 || blk >= nblocks)
			return err_set(-EUCLEAN, "entry %u points at block %u (directory has %llu)", i,
				       blk, (unsigned long long)nblocks);
		if (i > 1 && ext3_dx_hash_at(b, off, i) < ext3_dx_hash_at(b, off, i - 1))
			return err_set(-EUCLEAN, "hashes out of order");
	}
	return 0;
}

unsigned ext3_dx_choose(const uint8_t *b, unsigned off, uint32_t h)
{
	unsigned lo = 1, hi = ext3_dx_count(b, off); /* entries [1, count) carry hashes */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (ext3_dx_hash_at(b, off, mid) > h)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo - 1;
}

void ext3_dx_set_count(uint8_t *b, unsigned off, unsigned bs, unsigned count)
{
	struct ext3_dx_countlimit cl = {
		.limit = cpu_to_le16((uint16_t)((bs - off) / sizeof(struct ext3_dx_entry))),
		.count = cpu_to_le16((uint16_t)count),
	};
	memcpy(b + off, &cl, sizeof cl);
}

void ext3_dx_insert(uint8_t *b, unsigned off, unsigned at, uint32_t hash, uint32_t block)
{
	unsigned count = ext3_dx_count(b, off);
	const size_t es = sizeof(struct ext3_dx_entry);
	uint8_t *e = b + off + (size_t)(at + 1) * es;
	memmove(e + es, e, (size_t)(count - at - 1) * es);
	struct ext3_dx_entry ne = {.hash = cpu_to_le32(hash), .block = cpu_to_le32(block)};
	memcpy(e, &ne, es);
	struct ext3_dx_countlimit cl;
	memcpy(&cl, b + off, sizeof cl);
	cl.count = cpu_to_le16((uint16_t)(count + 1));
	memcpy(b + off, &cl, sizeof cl);
}

void ext3_dx_node_init(uint8_t *b, unsigned bs)
{
	memset(b, 0, bs);
	struct ext3_dx_node *node = (struct ext3_dx_node *)b;
	node->fake_rec_len = cpu_to_le16((uint16_t)bs);
	ext3_dx_set_count(b, EXT3_DX_NODE_CL, bs, 0);
}

/* The offset of the last entry of a checked block. */
static unsigned dirblk_last(const uint8_t *b, unsigned bs)
{
	unsigned off = 0, last = 0;
	while (off < bs) {
		const struct ext3_dir_entry_2 *e = (const struct ext3_dir_entry_2 *)(b + off);
		last = off;
		off += le16_to_cpu(e->rec_len);
	}
	return last;
}

static void dirblk_set_rec_len(uint8_t *b, unsigned off, unsigned rec_len)
{
	((struct ext3_dir_entry_2 *)(b + off))->rec_len = cpu_to_le16((uint16_t)rec_len);
}

static unsigned dirblk_rec_len(const uint8_t *b, unsigned off)
{
	return le16_to_cpu(((const struct ext3_dir_entry_2 *)(b + off))->rec_len);
}

int ext3_dx_root_make(uint8_t *root, uint8_t *leaf, unsigned bs, unsigned hv)
{
	unsigned dotdot = 0;
	if (hv > EXT3_DX_HASH_TEA || ext3_dirblk_dots_check(root, bs, &dotdot) || dotdot != 12)
		return err_set(-EINVAL, "block 0 is not \".\" (12 bytes) then \"..\"");
	unsigned start = dotdot + dirblk_rec_len(root, dotdot);
	if (start >= bs) {
		ext3_dirblk_init(leaf, bs);
	} else {
		memcpy(leaf, root + start, bs - start);
		unsigned last = dirblk_last(leaf, bs - start);
		dirblk_set_rec_len(leaf, last, dirblk_rec_len(leaf, last) + start);
	}
	memset(root + 24, 0, bs - 24);
	dirblk_set_rec_len(root, dotdot, bs - dotdot);
	struct ext3_dx_root *r = (struct ext3_dx_root *)root;
	r->info.hash_version = (uint8_t)hv;
	r->info.info_length = 8;
	ext3_dx_set_count(root, EXT3_DX_ROOT_CL, bs, 1);
	r->block0 = cpu_to_le32(1);
	return 0;
}

/* ---- pure in-block operations ---- */

uint8_t ext3_mode_to_ft(uint16_t mode)
{
	switch (mode & EXT3_S_IFMT) {
	case EXT3_S_IFREG: return EXT3_FT_REG_FILE;
	case EXT3_S_IFDIR: return EXT3_FT_DIR;
	case EXT3_S_IFCHR: return EXT3_FT_CHRDEV;
	case EXT3_S_IFBLK: return EXT3_FT_BLKDEV;
	case EXT3_S_IFIFO: return EXT3_FT_FIFO;
	case EXT3_S_IFSOCK: return EXT3_FT_SOCK;
	case EXT3_S_IFLNK: return EXT3_FT_SYMLINK;
	default: return EXT3_FT_UNKNOWN;
	}
}

int ext3_dirblk_check(const uint8_t *b, unsigned bs, uint32_t max_ino, bool has_filetype)
{
	for (unsigned off = 0; off < bs;) {
		struct ext3_dirent_view de;
		int rc = ext3_dirblock_entry(b, bs, off, max_ino, has_filetype, &de);
		if (rc)
			return rc;
		off += de.rec_len;
	}
	return 0;
}

int ext3_dirblk_room(const uint8_t *b, unsigned bs, size_t len, unsigned *off)
{
	unsigned need = EXT3_DIR_REC_LEN(len);
	for (unsigned o = 0; o < bs;) {
		const struct ext3_dir_entry_2 *e = (const struct ext3_dir_entry_2 *)(b + o);
		unsigned rl = le16_to_cpu(e->rec_len);
		unsigned used = e->inode ? EXT3_DIR_REC_LEN(e->name_len) : 0;
		if (rl - used >= need) {
			*off = o;
			return 0;
		}
		o += rl;
	}
	return -ENOSPC;
}

void ext3_dirblk_put(uint8_t *b, unsigned off, const char *name, size_t len, uint32_t ino,
		     uint8_t file_type)
{
	struct ext3_dir_entry_2 *e = (struct ext3_dir_entry_2 *)(b + off);
	unsigned rl = le16_to_cpu(e->rec_len);
	if (e->inode) {
		unsigned used = EXT3_DIR_REC_LEN(e->name_len);
		e->rec_len = cpu_to_le16((uint16_t)used);
		off += used;
		rl -= used;
		e = (struct ext3_dir_entry_2 *)(b + off);
		e->rec_len = cpu_to_le16((uint16_t)rl);
	}
	e->inode = cpu_to_le32(ino);
	e->name_len = (uint8_t)len;
	e->file_type = file_type;
	memcpy(e->name, name, len);
	/* zero the padding so the block carries no stale name bytes */
	memset(e->name + len, 0, EXT3_DIR_REC_LEN(len) - 8 - len);
}

int ext3_dirblk_find(const uint8_t *b, unsigned bs, const char *name, size_t len, unsigned *off,
		     unsigned *prev)
{
	unsigned p = UINT32_MAX;
	for (unsigned o = 0; o < bs;) {
		const struct ext3_dir_entry_2 *e = (const struct ext3_dir_entry_2 *)(b + o);
		if (e->inode && e->name_len == len && memcmp(e->name, name, len) == 0) {
			*off = o;
			*prev = p;
			return 0;
		}
		p = o;
		o += le16_to_cpu(e->rec_len);
	}
	return -ENOENT;
}

void ext3_dirblk_del(uint8_t *b, unsigned off, unsigned prev)
{
	struct ext3_dir_entry_2 *e = (struct ext3_dir_entry_2 *)(b + off);
	if (prev == UINT32_MAX)
		e->inode = 0;
	else
		dirblk_set_rec_len(b, prev, dirblk_rec_len(b, prev) + le16_to_cpu(e->rec_len));
}

void ext3_dirblk_init(uint8_t *b, unsigned bs)
{
	memset(b, 0, bs);
	dirblk_set_rec_len(b, 0, bs);
}

void ext3_dirblk_dots(uint8_t *b, unsigned bs, uint32_t self, uint32_t parent, bool has_filetype)
{
	memset(b, 0, bs);
	uint8_t ft = has_filetype ? EXT3_FT_DIR : 0;
	dirblk_set_rec_len(b, 0, 12);
	ext3_dirblk_put(b, 0, ".", 1, self, ft);
	dirblk_set_rec_len(b, 12, bs - 12);
	ext3_dirblk_put(b, 12, "..", 2, parent, ft);
}

int ext3_dirblk_dots_check(const uint8_t *b, unsigned bs, unsigned *dotdot)
{
	const struct ext3_dir_entry_2 *e = (const struct ext3_dir_entry_2 *)b;
	unsigned dd = le16_to_cpu(e->rec_len);
	const struct ext3_dir_entry_2 *e2 = (const struct ext3_dir_entry_2 *)(b + dd);
	if (e->name_len != 1 || e->name[0] != '.' || dd >= bs || e2->name_len != 2 ||
	    e2->name[0] != '.' || e2->name[1] != '.')
		return err_set(-EUCLEAN, "the block does not start with \".\" and \"..\"");
	*dotdot = dd;
	return 0;
}

unsigned ext3_dirblk_live(const uint8_t *b, unsigned bs, unsigned skip)
{
	unsigned n = 0, i = 0;
	for (unsigned o = 0; o < bs; i++) {
		const struct ext3_dir_entry_2 *e = (const struct ext3_dir_entry_2 *)(b + o);
		if (i >= skip && e->inode)
			n++;
		o += le16_to_cpu(e->rec_len);
	}
	return n;
}

/* ---- leaf split ---- */

struct split_ent {
	uint32_t hash;
	uint16_t off;  /* in the original block */
	uint16_t size; /* minimal record length */
};

static int split_by_hash(const void *a, const void *b)
{
	const struct split_ent *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int split_by_off(const void *a, const void *b)
{
	const struct split_ent *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Copy the entries of map[0..n) compactly into dst (dst may be the source
 * block when map is in offset order: every entry moves down or stays), the
 * last one stretched to the block end. */
static void split_pack(uint8_t *dst, const uint8_t *src, unsigned bs, const struct split_ent *map,
		       unsigned n)
{
	unsigned at = 0;
	for (unsigned i = 0; i < n; i++) {
		memmove(dst + at, src + map[i].off, map[i].size);
		dirblk_set_rec_len(dst, at, map[i].size);
		at += map[i].size;
	}
	unsigned last = at - map[n - 1].size;
	dirblk_set_rec_len(dst, last, bs - last);
	memset(dst + at, 0, bs - at);
}

int ext3_dirblk_split(uint8_t *b1, uint8_t *b2, unsigned bs, const struct ext3_dx_hashfn *hf,
		      uint32_t *split_hash)
{
	struct split_ent map[EXT3_MAX_BLOCK_SIZE / 12];
	unsigned n = 0, total = 0;
	for (unsigned o = 0; o < bs;) {
		const struct ext3_dir_entry_2 *e = (const struct ext3_dir_entry_2 *)(b1 + o);
		if (e->inode && e->name_len) {
			uint32_t h;
			int rc = ext3_dx_hash(e->name, e->name_len, hf->version, hf->seed, &h, NULL);
			if (rc)
				return rc;
			map[n] = (struct split_ent){h, (uint16_t)o,
						    (uint16_t)EXT3_DIR_REC_LEN(e->name_len)};
			total += map[n++].size;
		}
		o += le16_to_cpu(e->rec_len);
	}
	if (n < 2)
		return err_set(-ENOSPC, "directory leaf: %u used entries, nothing to split", n);
	qsort(map, n, sizeof map[0], split_by_hash);
	/* Move entries from the top of the hash order while the moved half
	 * stays under half the bytes (an entry counts when more than half of
	 * it would cross the middle); at least one moves and one stays. */
	unsigned moved = 0, split = n;
	while (split > 1 && moved + map[split - 1].size / 2u <= total / 2u) {
		moved += map[split - 1].size;
		split--;
	}
	if (split == n)
		split = n - 1;
	uint32_t h2 = map[split].hash;
	*split_hash = h2 | (map[split - 1].hash == h2 ? 1u : 0u);
	split_pack(b2, b1, bs, map + split, n - split);
	qsort(map, split, sizeof map[0], split_by_off);
	split_pack(b1, b1, bs, map, split);
	return 0;
}
