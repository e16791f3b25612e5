/* ext3 directories: entry parsing, linear iteration, htree (dir_index)
 * lookup and the three directory hashes (legacy, half-MD4, TEA; signed and
 * unsigned char variants). Written from the ext4 disk-layout documentation;
 * see docs/ext3-read-path.md, "Directories". */
#include "extfs/core/csum.h"
#include "extfs/dir/dir_int.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- hashes ---- */

static inline uint32_t rotl32(uint32_t x, unsigned s) { return (x << s) | (x >> (32 - s)); }

/* The legacy "dx_hack" hash. */
static uint32_t hash_legacy(const char *name, size_t len, bool uns)
{
	uint32_t h0 = 0x12a3fe2d, h1 = 0x37abe8f9;
	for (size_t i = 0; i < len; i++) {
		int c = uns ? (int)(unsigned char)name[i] : (int)(signed char)name[i];
		uint32_t h = h1 + (h0 ^ (uint32_t)(c * 7152373));
		if (h & 0x80000000u)
			h -= 0x7fffffffu;
		h1 = h0;
		h0 = h;
	}
	return h0 << 1;
}

/* Pack up to 4*n bytes of the name into n words, big-endian within each word
 * by shifting, padded with a length-derived pattern. */
static void hash_pack(const char *p, size_t len, uint32_t *out, int n, bool uns)
{
	uint32_t pad = (uint32_t)len | ((uint32_t)len << 8);
	pad |= pad << 16;
	uint32_t val = pad;
	if (len > (size_t)n * 4)
		len = (size_t)n * 4;
	for (size_t i = 0; i < len; i++) {
		int c = uns ? (int)(unsigned char)p[i] : (int)(signed char)p[i];
		val = (uint32_t)c + (val << 8);
		if (i % 4 == 3) {
			*out++ = val;
			val = pad;
			n--;
		}
	}
	if (--n >= 0)
		*out++ = val;
	while (--n >= 0)
		*out++ = pad;
}

#define MD4_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD4_G(x, y, z) (((x) & (y)) + (((x) ^ (y)) & (z)))
#define MD4_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD4_STEP(f, a, b, c, d, x, s) ((a) += f((b), (c), (d)) + (x), (a) = rotl32((a), (s)))

/* Three rounds of MD4 over 8 words (the "half" MD4 of the htree hash). */
static void half_md4(uint32_t buf[4], const uint32_t *in)
{
	const uint32_t k2 = 0x5A827999u, k3 = 0x6ED9EBA1u;
	uint32_t a = buf[0], b = buf[1], c = buf[2], d = buf[3];

	MD4_STEP(MD4_F, a, b, c, d, in[0], 3);
	MD4_STEP(MD4_F, d, a, b, c, in[1], 7);
	MD4_STEP(MD4_F, c, d, a, b, in[2], 11);
	MD4_STEP(MD4_F, b, c, d, a, in[3], 19);
	MD4_STEP(MD4_F, a, b, c, d, in[4], 3);
	MD4_STEP(MD4_F, d, a, b, c, in[5], 7);
	MD4_STEP(MD4_F, c, d, a, b, in[6], 11);
	MD4_STEP(MD4_F, b, c, d, a, in[7], 19);

	MD4_STEP(MD4_G, a, b, c, d, in[1] + k2, 3);
	MD4_STEP(MD4_G, d, a, b, c, in[3] + k2, 5);
	MD4_STEP(MD4_G, c, d, a, b, in[5] + k2, 9);
	MD4_STEP(MD4_G, b, c, d, a, in[7] + k2, 13);
	MD4_STEP(MD4_G, a, b, c, d, in[0] + k2, 3);
	MD4_STEP(MD4_G, d, a, b, c, in[2] + k2, 5);
	MD4_STEP(MD4_G, c, d, a, b, in[4] + k2, 9);
	MD4_STEP(MD4_G, b, c, d, a, in[6] + k2, 13);

	MD4_STEP(MD4_H, a, b, c, d, in[3] + k3, 3);
	MD4_STEP(MD4_H, d, a, b, c, in[7] + k3, 9);
	MD4_STEP(MD4_H, c, d, a, b, in[2] + k3, 11);
	MD4_STEP(MD4_H, b, c, d, a, in[6] + k3, 15);
	MD4_STEP(MD4_H, a, b, c, d, in[1] + k3, 3);
	MD4_STEP(MD4_H, d, a, b, c, in[5] + k3, 9);
	MD4_STEP(MD4_H, c, d, a, b, in[0] + k3, 11);
	MD4_STEP(MD4_H, b, c, d, a, in[4] + k3, 15);

	buf[0] += a;
	buf[1] += b;
	buf[2] += c;
	buf[3] += d;
}

/* 16 rounds of TEA keyed by in[4] over buf[0..1]. */
static void tea(uint32_t buf[4], const uint32_t *in)
{
	uint32_t sum = 0, b0 = buf[0], b1 = buf[1];
	for (int n = 0; n < 16; n++) {
		sum += 0x9E3779B9u;
		b0 += ((b1 << 4) + in[0]) ^ (b1 + sum) ^ ((b1 >> 5) + in[1]);
		b1 += ((b0 << 4) + in[2]) ^ (b0 + sum) ^ ((b0 >> 5) + in[3]);
	}
	buf[0] += b0;
	buf[1] += b1;
}

/* Feed the name to a round function `words` 32-bit words (4 * words bytes)
 * at a time; at least one round, even for an empty name. */
static void hash_rounds(const char *p, size_t left, bool uns, int words,
			void (*round)(uint32_t buf[4], const uint32_t *in), uint32_t buf[4],
			uint32_t *in)
{
	size_t chunk = (size_t)words * 4;
	for (;;) {
		hash_pack(p, left, in, words, uns);
		round(buf, in);
		if (left <= chunk)
			break;
		left -= chunk;
		p += chunk;
	}
}

int ext3_dx_hash(const char *name, size_t len, int version, const uint32_t seed[4],
		 uint32_t *hash, uint32_t *minor_hash)
{
	uint32_t buf[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
	if (seed && (seed[0] | seed[1] | seed[2] | seed[3]))
		memcpy(buf, seed, sizeof buf);
	uint32_t h = 0, minor = 0, in[8];
	bool uns = version >= EXT3_DX_HASH_LEGACY_UNSIGNED;
	switch (version) {
	case EXT3_DX_HASH_LEGACY:
	case EXT3_DX_HASH_LEGACY_UNSIGNED:
		h = hash_legacy(name, len, uns);
		break;
	case EXT3_DX_HASH_HALF_MD4:
	case EXT3_DX_HASH_HALF_MD4_UNSIGNED:
	case EXT3_DX_HASH_TEA:
	case EXT3_DX_HASH_TEA_UNSIGNED: {
		/* half-MD4 eats 32 bytes a round and yields buf[1..2], TEA 16 and buf[0..1] */
		int md4 = version == EXT3_DX_HASH_HALF_MD4 || version == EXT3_DX_HASH_HALF_MD4_UNSIGNED;
		hash_rounds(name, len, uns, md4 ? 8 : 4, md4 ? half_md4 : tea, buf, in);
		h = buf[md4];
		minor = buf[md4 + 1];
		break;
	}
	default:
		return err_set(-EINVAL, "ext3: unknown directory hash version %d", version);
	}
	h &= ~1u;
	if (h == (0x7fffffffu << 1)) /* reserved as the end-of-directory marker */
		h = (0x7fffffffu - 1) << 1;
	*hash = h;
	if (minor_hash)
		*minor_hash = minor;
	return 0;
}

/* ---- directory blocks ---- */

int ext3_dirblock_entry(const uint8_t *blk, unsigned bs, unsigned off, uint32_t max_ino,
			bool has_filetype, struct ext3_dirent_view *de)
{
	if (off > bs || bs - off < 8 || off % 4)
		return err_set(-EUCLEAN, "directory entry at offset %u: no room for a header "
			       "(block size %u)", off, bs);
	const struct ext3_dir_entry_2 *e = (const struct ext3_dir_entry_2 *)(blk + off);
	de->inode = le32_to_cpu(e->inode);
	de->rec_len = le16_to_cpu(e->rec_len);
	de->name_len = e->name_len;
	de->file_type = has_filetype ? e->file_type : 0;
	de->name = (const char *)e->name;
	if (de->rec_len < EXT3_DIR_REC_LEN(1))
		return err_set(-EUCLEAN, "directory entry at offset %u: rec_len %u too small", off,
			       de->rec_len);
	if (de->rec_len % 4)
		return err_set(-EUCLEAN, "directory entry at offset %u: rec_len %u not a multiple "
			       "of 4", off, de->rec_len);
	if (de->rec_len > bs - off)
		return err_set(-EUCLEAN, "directory entry at offset %u: rec_len %u overflows the "
			       "block (%u bytes)", off, de->rec_len, bs);
	if (de->rec_len < EXT3_DIR_REC_LEN(de->name_len))
		return err_set(-EUCLEAN, "directory entry at offset %u: rec_len %u too small for "
			       "a %u-byte name", off, de->rec_len, de->name_len);
	if (max_ino && de->inode > max_ino)
		return err_set(-EUCLEAN, "directory entry at offset %u: inode %u out of range "
			       "(max %u)", off, de->inode, max_ino);
	return 0;
}

/* Parse the entry at off of directory block lblk (its data b). */
static int dir_entry_at(struct ext3_fs *fs, const struct ext3_inode *dir, const uint8_t *b,
			unsigned off, uint64_t lblk, struct ext3_dirent_view *de)
{
	int rc = ext3_dirblock_entry(b, fs->g.block_size, off, fs->g.inodes_count,
				     fs->has_filetype, de);
	if (rc)
		return err_wrap(rc, "ext3: directory inode %u, block %llu", dir->a.ino,
				(unsigned long long)lblk);
	return 0;
}

int ext3_dir_iterate(struct ext3_fs *fs, struct ext3_inode *dir, uint64_t *pos,
		     ext3_dir_cb cb, void *ctx)
{
	ext3_inode_rdlock(dir);
	int rc = ext3_dir_iterate_locked(fs, dir, pos, cb, ctx);
	ext3_inode_unlock(dir);
	return rc;
}

int ext3_dir_iterate_locked(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t *pos,
			    ext3_dir_cb cb, void *ctx)
{
	uint64_t nblocks;
	int rc = ext3_dir_nblocks(fs, dir, &nblocks);
	if (rc)
		return rc;
	uint32_t bs = fs->g.block_size;
	uint64_t lblk = *pos / bs;
	unsigned start = (unsigned)(*pos % bs);
	for (; lblk < nblocks; lblk++, start = 0) {
		struct buffer_head *bh;
		rc = ext3_dir_bread(fs, dir, lblk, &bh);
		if (rc)
			return rc;
		const uint8_t *b = buf_data(bh);
		/* Entries are parsed from the block start so a position that is not
		 * an entry boundary resumes at the next entry. */
		unsigned off = 0;
		while (off < bs) {
			struct ext3_dirent_view de;
			rc = dir_entry_at(fs, dir, b, off, lblk, &de);
			if (rc) {
				buf_put(bh);
				*pos = lblk * bs + off;
				return rc;
			}
			unsigned next = off + de.rec_len;
			if (off >= start && de.inode && de.name_len) {
				uint64_t np = lblk * bs + next;
				rc = cb(ctx, &de, np);
				if (rc) {
					buf_put(bh);
					*pos = np;
					return rc;
				}
			}
			off = next;
		}
		buf_put(bh);
		*pos = (lblk + 1) * bs;
	}
	return 0;
}

/* ---- lookup ---- */

struct find_ctx {
	const char *name;
	size_t len;
	uint32_t ino;
	uint8_t type;
	uint64_t next_pos; /* position after the entry found */
};

static int find_cb(void *ctx, const struct ext3_dirent_view *de, uint64_t next_pos)
{
	struct find_ctx *f = ctx;
	if (de->name_len == f->len && memcmp(de->name, f->name, f->len) == 0) {
		f->ino = de->inode;
		f->next_pos = next_pos;
		f->type = de->file_type;
		return 1;
	}
	return 0;
}

static int dir_lookup_linear(struct ext3_fs *fs, const struct ext3_inode *dir,
			     struct find_ctx *f)
{
	uint64_t pos = 0;
	int rc = ext3_dir_iterate_locked(fs, dir, &pos, find_cb, f);
	if (rc == 1)
		return 0;
	if (rc < 0)
		return rc;
	return -ENOENT;
}

/* Search one leaf block for the name: 1 found, 0 not, < 0 error. */
static int dx_search_leaf(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t lblk,
			  struct find_ctx *f)
{
	struct buffer_head *bh;
	int rc = ext3_dir_bread(fs, dir, lblk, &bh);
	if (rc)
		return rc;
	const uint8_t *b = buf_data(bh);
	uint32_t bs = fs->g.block_size;
	for (unsigned off = 0; off < bs;) {
		struct ext3_dirent_view de;
		rc = dir_entry_at(fs, dir, b, off, lblk, &de);
		if (rc) {
			buf_put(bh);
			return rc;
		}
		if (de.inode && find_cb(f, &de, lblk * bs + off + de.rec_len)) {
			buf_put(bh);
			return 1;
		}
		off += de.rec_len;
	}
	buf_put(bh);
	return 0;
}

/* ---- walking the index in hash order (shared with dx_readdir.c) ---- */

/* Check and load the count/limit array at byte `off` of block `b`. */
static int dx_load(struct ext3_fs *fs, const struct ext3_inode *dir, struct buffer_head *bh,
		   unsigned off, uint64_t nblocks, uint64_t lblk, struct ext3_dx_level *lv)
{
	const uint8_t *b = buf_data(bh);
	int rc = ext3_dx_entries_check(b, off, fs->g.block_size, ext3_dx_tail_bytes(fs), nblocks);
	if (rc)
		return err_wrap(rc, "ext3: directory inode %u: htree block %llu", dir->a.ino,
				(unsigned long long)lblk);
	if (!buf_verified(bh)) {
		if (!ext4_dx_csum_ok(fs, dir->a.ino, dir->a.generation, b, off))
			return err_set(-EBADMSG, "ext4: directory inode %u: htree block %llu: checksum mismatch",
				       dir->a.ino, (unsigned long long)lblk);
		buf_set_verified(bh);
	}
	lv->count = ext3_dx_count(b, off);
	memcpy(lv->raw, b + off, (size_t)lv->count * sizeof(struct ext3_dx_entry));
	return 0;
}

static uint64_t dx_child(const struct ext3_dx_level *lv)
{
	return ext3_dx_block_at(lv->raw, 0, lv->at);
}

/* Load interior node `child` into level l, its entry chosen for h (or the
 * first when first). */
static int dx_node_load(struct ext3_fs *fs, const struct ext3_inode *dir, struct ext3_dx_walk *w,
			unsigned l, uint32_t h, bool first)
{
	uint64_t child = dx_child(&w->lv[l - 1]);
	struct buffer_head *bh;
	int rc = ext3_dir_bread(fs, dir, child, &bh);
	if (rc)
		return rc;
	const uint8_t *b = buf_data(bh);
	rc = ext3_dx_node_check(b, fs->g.block_size);
	if (rc)
		rc = err_wrap(rc, "ext3: directory inode %u: block %llu", dir->a.ino,
			      (unsigned long long)child);
	else
		rc = dx_load(fs, dir, bh, EXT3_DX_NODE_CL, w->nblocks, child, &w->lv[l]);
	buf_put(bh);
	if (!rc)
		w->lv[l].at = first ? 0 : ext3_dx_choose(w->lv[l].raw, 0, h);
	return rc;
}

int ext3_dx_walk_start(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t nblocks,
		       const char *name, size_t len, uint32_t h, struct ext3_dx_walk *w)
{
	struct buffer_head *bh;
	int rc = ext3_dir_bread(fs, dir, 0, &bh);
	if (rc)
		return rc;
	const uint8_t *b = buf_data(bh);
	rc = ext3_dx_root_check(b, &w->hv, &w->levels);
	if (rc) {
		buf_put(bh);
		return err_wrap(rc, "ext3: directory inode %u", dir->a.ino);
	}
	w->nblocks = nblocks;
	if (name)
		rc = ext3_dx_name_hash(fs, w->hv, name, len, &h);
	if (!rc)
		rc = dx_load(fs, dir, bh, EXT3_DX_ROOT_CL, nblocks, 0, &w->lv[0]);
	buf_put(bh);
	if (rc)
		return rc;
	w->hash = h;
	w->lv[0].at = ext3_dx_choose(w->lv[0].raw, 0, h);
	for (unsigned l = 1; l <= w->levels && !rc; l++)
		rc = dx_node_load(fs, dir, w, l, h, false);
	return rc;
}

uint64_t ext3_dx_walk_leaf(const struct ext3_dx_walk *w)
{
	return dx_child(&w->lv[w->levels]);
}

uint64_t ext3_dx_walk_next_hash(const struct ext3_dx_walk *w)
{
	for (int l = (int)w->levels; l >= 0; l--)
		if (w->lv[l].at + 1 < w->lv[l].count)
			return ext3_dx_hash_at(w->lv[l].raw, 0, w->lv[l].at + 1);
	return EXT3_DX_WALK_END;
}

int ext3_dx_walk_next(struct ext3_fs *fs, const struct ext3_inode *dir, struct ext3_dx_walk *w)
{
	int l = (int)w->levels;
	while (l >= 0 && w->lv[l].at + 1 >= w->lv[l].count)
		l--;
	if (l < 0)
		return 0;
	w->lv[l].at++;
	for (unsigned d = (unsigned)l + 1; d <= w->levels; d++) {
		int rc = dx_node_load(fs, dir, w, d, 0, true);
		if (rc)
			return rc;
	}
	return 1;
}

/* htree lookup: 0 found, -ENOENT absent, -EUCLEAN bad index (the caller falls
 * back to a linear scan), other errors as they come. */
static int dir_lookup_dx(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t nblocks,
			 struct find_ctx *f)
{
	struct ext3_dx_walk *w = malloc(sizeof *w);
	if (!w)
		return err_set(-ENOMEM, "ext3: out of memory for an htree lookup");
	int rc = ext3_dx_walk_start(fs, dir, nblocks, f->name, f->len, 0, w);
	/* Search the leaf, then continue while the next leaf starts with the
	 * same hash (collision bit set). Bounded by the entries of the index. */
	for (unsigned guard = 0; !rc; guard++) {
		if (guard > (unsigned)nblocks) {
			rc = err_set(-EUCLEAN, "ext3: directory inode %u: htree collision chain "
				     "too long", dir->a.ino);
			break;
		}
		rc = dx_search_leaf(fs, dir, ext3_dx_walk_leaf(w), f);
		if (rc) {
			rc = rc < 0 ? rc : 0;
			break;
		}
		uint64_t next_hash = ext3_dx_walk_next_hash(w);
		if (next_hash == EXT3_DX_WALK_END || (next_hash & ~1u) != w->hash ||
		    !(next_hash & 1u)) {
			rc = -ENOENT;
			break;
		}
		rc = ext3_dx_walk_next(fs, dir, w);
		if (rc == 1)
			rc = 0;
		else if (rc == 0)
			rc = -ENOENT;
	}
	free(w);
	return rc;
}

int ext3_dir_lookup(struct ext3_fs *fs, struct ext3_inode *dir, const char *name,
		    size_t len, uint32_t *ino, uint8_t *file_type)
{
	if (len == 0 || len > EXT3_NAME_LEN)
		return err_set(len ? -ENAMETOOLONG : -ENOENT, "ext3: bad name length %zu", len);
	ext3_inode_rdlock(dir);
	uint64_t lblk;
	int rc = ext3_dir_find_locked(fs, dir, name, len, &lblk, ino, file_type);
	ext3_inode_unlock(dir);
	return rc;
}

int ext3_dir_find_locked(struct ext3_fs *fs, const struct ext3_inode *dir, const char *name,
			 size_t len, uint64_t *lblk, uint32_t *ino, uint8_t *file_type)
{
	uint64_t nblocks;
	int rc = ext3_dir_nblocks(fs, dir, &nblocks);
	if (rc)
		return rc;
	struct find_ctx f = {.name = name, .len = len};
	rc = -EUCLEAN;
	bool dot = (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
	if (!dot && ext3_dir_is_dx(fs, dir) && nblocks > 1) {
		rc = dir_lookup_dx(fs, dir, nblocks, &f);
		/* A damaged index is not fatal: the leaves are ordinary directory
		 * blocks, so search them linearly like the kernel does. */
	}
	if (rc == -EUCLEAN)
		rc = dir_lookup_linear(fs, dir, &f);
	if (rc)
		return rc;
	*ino = f.ino;
	*lblk = (f.next_pos - 1) / fs->g.block_size;
	if (file_type)
		*file_type = f.type;
	return 0;
}
