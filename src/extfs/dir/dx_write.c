/* ext3 htree (dir_index) directories, the write side: insertion by hash,
 * leaf splits, index node splits, growing the index to its second level,
 * and turning a full one-block directory into an indexed one. The
 * semantics are 2.6.30 ext3's (dx_probe, ext3_dx_add_entry, do_split,
 * make_indexed_dir), written from their description in docs/write-dirs.md.
 *
 * Every change is computed in memory first where it can fail (the leaf
 * split), blocks are allocated next, and only then are the journaled
 * buffers changed; an allocation that fails half way leaves a valid tree
 * (an index split with no leaf split yet, or an unused empty block at the
 * end of a linear directory). Removal never touches the index (the kernel
 * does not merge leaves). Locking as dir_write.c. */
#include "extfs/dir/dir_int.h"
#include "extfs/core/csum.h"
#include "extfs/core/write.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One index level on the way down: the block, where its count/limit array
 * is, and the entry chosen. */
struct dx_frame {
	struct buffer_head *bh;
	uint64_t lblk;
	unsigned off;
	unsigned at;
};

struct dx_path {
	struct dx_frame f[EXT3_DX_MAX_LEVELS];
	unsigned nframes; /* frames holding a buffer */
	unsigned levels;  /* indirect_levels: f[levels] points at the leaf */
	unsigned hv;      /* the root's hash version (0..2) */
	uint32_t hash;    /* the name's */
};

static void dx_path_put(struct dx_path *p)
{
	for (unsigned i = 0; i < p->nframes; i++)
		buf_put(p->f[i].bh);
	p->nframes = 0;
}

/* Read and check one index block into frame l and choose the entry for
 * p->hash. */
static int dx_frame_load(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t nblocks,
			 struct dx_path *p, unsigned l, uint64_t lblk)
{
	struct dx_frame *fr = &p->f[l];
	int rc = ext3_dir_bread(fs, dir, lblk, &fr->bh);
	if (rc)
		return rc == -EUCLEAN ? ext3_dir_corrupt(fs, dir, lblk, rc) : rc;
	p->nframes = l + 1;
	fr->lblk = lblk;
	fr->off = l ? EXT3_DX_NODE_CL : EXT3_DX_ROOT_CL;
	const uint8_t *b = buf_data(fr->bh);
	uint32_t bs = fs->g.block_size;
	if (l == 0) {
		rc = ext3_dx_root_check(b, &p->hv, &p->levels);
	} else {
		rc = ext3_dx_node_check(b, bs);
	}
	if (rc == 0)
		rc = ext3_dx_entries_check(b, fr->off, bs, ext3_dx_tail_bytes(fs), nblocks);
	if (rc)
		return ext3_dir_corrupt(fs, dir, lblk, rc);
	/* metadata_csum: as the kernel's dx_probe (EFSBADCRC) */
	if (buf_verified(fr->bh))
		return 0;
	if (!ext4_dx_csum_ok(fs, dir->ino, dir->a.generation, b, fr->off))
		return err_set(-EBADMSG, "ext4: directory inode %u: block %llu: index checksum mismatch",
			       dir->ino, (unsigned long long)lblk);
	buf_set_verified(fr->bh);
	return 0;
}

/* Walk from the root to the index entry of the leaf for name (dx_probe).
 * Index damage is corruption here: the write side does not fall back to
 * a linear insertion the index would not find. */
static int dx_probe(struct ext3_fs *fs, const struct ext3_inode *dir, const char *name,
		    size_t len, uint64_t nblocks, struct dx_path *p)
{
	memset(p, 0, sizeof *p);
	int rc = dx_frame_load(fs, dir, nblocks, p, 0, 0);
	if (rc == 0)
		rc = ext3_dx_name_hash(fs, p->hv, name, len, &p->hash);
	for (unsigned l = 0; rc == 0; l++) {
		struct dx_frame *fr = &p->f[l];
		fr->at = ext3_dx_choose(buf_data(fr->bh), fr->off, p->hash);
		if (l == p->levels)
			return 0;
		rc = dx_frame_load(fs, dir, nblocks, p, l + 1,
				   ext3_dx_block_at(buf_data(fr->bh), fr->off, fr->at));
	}
	dx_path_put(p);
	return rc;
}

/* A leaf split computed in memory: the new contents of the leaf (b1) and
 * of the new leaf (b2), the index hash of b2 (with the continuation bit)
 * and where the new name goes. */
struct dx_split {
	uint8_t *b1, *b2;
	uint32_t hash2;
	bool to_new;
	unsigned off;
};

/* s->b1 holds a copy of the full leaf. */
static int dx_split_prepare(struct ext3_fs *fs, unsigned hv, uint32_t hash, size_t len,
			    struct dx_split *s)
{
	uint32_t bs = ext3_dir_leaf_bytes(fs); /* the leaves' entries, tail excluded */
	struct ext3_dx_hashfn hf = {(int)hv + (fs->unsigned_hash ? 3 : 0), fs->hash_seed};
	int rc = ext3_dirblk_split(s->b1, s->b2, bs, &hf, &s->hash2);
	if (rc)
		return rc;
	/* like do_split: names hashing at or above the split go to the new leaf */
	s->to_new = hash >= (s->hash2 & ~1u);
	if (ext3_dirblk_room(s->to_new ? s->b2 : s->b1, bs, len, &s->off))
		return err_set(-ENOSPC, "ext3: directory leaf split left no room for a %zu-byte "
			       "name", len);
	return 0;
}

/* Write a prepared split: the leaf, the new leaf (appended, under access),
 * the new name, and the index entry (hash2 -> new leaf) after fr->at. */
static int dx_split_commit(struct jbd_handle *h, struct ext3_inode *dir, const struct dx_split *s,
			   struct buffer_head *leaf, struct buffer_head *nleaf, uint64_t nlblk,
			   struct dx_frame *fr, const char *name, size_t len, uint32_t ino,
			   uint8_t ft)
{
	uint32_t bs = dir->fs->g.block_size;
	int rc = ext3_journal_get_write_access(h, leaf);
	if (rc == 0)
		rc = ext3_journal_get_write_access(h, fr->bh);
	if (rc)
		return rc;
	memcpy(buf_data(leaf), s->b1, bs);
	memcpy(buf_data(nleaf), s->b2, bs);
	ext3_dirblk_put(buf_data(s->to_new ? nleaf : leaf), s->off, name, len, ino, ft);
	ext3_dx_insert(buf_data(fr->bh), fr->off, fr->at, s->hash2, (uint32_t)nlblk);
	rc = ext3_dir_dirty(h, dir, leaf);
	if (rc == 0)
		rc = ext3_dir_dirty(h, dir, nleaf);
	if (rc == 0)
		rc = ext3_dir_dirty(h, dir, fr->bh);
	return rc;
}

/* The index node above the leaf is full: grow the tree to two levels (the
 * root's entries move to a new node) or split the node (its upper half to a
 * new node, indexed in the root). p then points at the node with room. */
static int dx_grow_index(struct jbd_handle *h, struct ext3_inode *dir, struct dx_path *p)
{
	uint32_t bs = dir->fs->g.block_size;
	/* count/limit arrays end before metadata_csum's dx_tail */
	uint32_t lim_bs = bs - ext3_dx_tail_bytes(dir->fs);
	const size_t es = sizeof(struct ext3_dx_entry);
	uint64_t nb;
	struct buffer_head *nbh;
	int rc = ext3_dir_append(h, dir, &nb, &nbh);
	if (rc)
		return rc;
	uint8_t *node = buf_data(nbh);
	ext3_dx_node_init(node, bs);
	ext3_dx_set_count(node, EXT3_DX_NODE_CL, lim_bs, 0);
	struct dx_frame *r = &p->f[0];
	rc = ext3_journal_get_write_access(h, r->bh);
	if (rc) {
		buf_put(nbh);
		return rc;
	}
	uint8_t *rb = buf_data(r->bh);
	if (p->levels == 0) {
		unsigned count = ext3_dx_count(rb, EXT3_DX_ROOT_CL);
		memcpy(node + EXT3_DX_NODE_CL, rb + EXT3_DX_ROOT_CL, count * es);
		ext3_dx_set_count(node, EXT3_DX_NODE_CL, lim_bs, count);
		ext3_dx_set_count(rb, EXT3_DX_ROOT_CL, lim_bs, 1);
		struct ext3_dx_root *root = (struct ext3_dx_root *)rb;
		root->block0 = cpu_to_le32((uint32_t)nb);
		root->info.indirect_levels = 1;
		p->f[1] = (struct dx_frame){nbh, nb, EXT3_DX_NODE_CL, r->at};
		r->at = 0;
		p->levels = 1;
		p->nframes = 2;
		rc = ext3_dir_dirty(h, dir, nbh);
		return rc ? rc : ext3_dir_dirty(h, dir, r->bh);
	}
	struct dx_frame *n = &p->f[1];
	rc = ext3_journal_get_write_access(h, n->bh);
	if (rc) {
		buf_put(nbh);
		return rc;
	}
	uint8_t *nd = buf_data(n->bh);
	unsigned count = ext3_dx_count(nd, EXT3_DX_NODE_CL), c1 = count / 2;
	uint32_t hash2 = ext3_dx_hash_at(nd, EXT3_DX_NODE_CL, c1);
	memcpy(node + EXT3_DX_NODE_CL, nd + EXT3_DX_NODE_CL + c1 * es, (count - c1) * es);
	ext3_dx_set_count(node, EXT3_DX_NODE_CL, lim_bs, count - c1);
	ext3_dx_set_count(nd, EXT3_DX_NODE_CL, lim_bs, c1);
	ext3_dx_insert(rb, EXT3_DX_ROOT_CL, r->at, hash2, (uint32_t)nb);
	rc = ext3_dir_dirty(h, dir, nbh);
	if (rc == 0)
		rc = ext3_dir_dirty(h, dir, n->bh);
	if (rc == 0)
		rc = ext3_dir_dirty(h, dir, r->bh);
	if (n->at >= c1) { /* the leaf's entry moved to the new node */
		buf_put(n->bh);
		*n = (struct dx_frame){nbh, nb, EXT3_DX_NODE_CL, n->at - c1};
		r->at++;
	} else {
		buf_put(nbh);
	}
	return rc;
}

int ext3_dx_add(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		uint32_t ino, uint8_t ft)
{
	struct ext3_fs *fs = dir->fs;
	uint32_t bs = fs->g.block_size;
	uint64_t nblocks;
	int rc = ext3_dir_nblocks(fs, dir, &nblocks);
	if (rc)
		return rc == -EUCLEAN ? ext3_dir_corrupt(fs, dir, UINT64_MAX, rc) : rc;
	struct dx_path p;
	rc = dx_probe(fs, dir, name, len, nblocks, &p);
	if (rc)
		return rc;
	struct dx_frame *fr = &p.f[p.levels];
	struct buffer_head *leaf = NULL, *nleaf = NULL;
	uint8_t *mem = NULL;
	rc = ext3_dir_read_checked(fs, dir, ext3_dx_block_at(buf_data(fr->bh), fr->off, fr->at),
				   &leaf);
	if (rc)
		goto out;
	unsigned off;
	if (ext3_dirblk_room(buf_data(leaf), ext3_dir_leaf_bytes(fs), len, &off) == 0) {
		rc = ext3_dir_put_entry(h, dir, leaf, off, name, len, ino, ft);
		goto out;
	}
	/* The leaf is full: split it (compute first, nothing changed yet). */
	mem = calloc(2, (size_t)bs);
	if (!mem) {
		rc = err_set(-ENOMEM, "ext3: directory split buffers");
		goto out;
	}
	struct dx_split s = {.b1 = mem, .b2 = mem + bs};
	memcpy(s.b1, buf_data(leaf), bs);
	rc = dx_split_prepare(fs, p.hv, p.hash, len, &s);
	if (rc)
		goto out;
	if (ext3_dx_count(buf_data(fr->bh), fr->off) == ext3_dx_limit(buf_data(fr->bh), fr->off)) {
		if (p.levels + 1 == EXT3_DX_MAX_LEVELS &&
		    ext3_dx_count(buf_data(p.f[0].bh), EXT3_DX_ROOT_CL) ==
			    ext3_dx_limit(buf_data(p.f[0].bh), EXT3_DX_ROOT_CL)) {
			rc = err_set(-ENOSPC, "ext3: directory inode %u: directory index full",
				     dir->ino);
			goto out;
		}
		rc = dx_grow_index(h, dir, &p);
		if (rc)
			goto out;
		fr = &p.f[p.levels];
	}
	uint64_t nlblk;
	rc = ext3_dir_append(h, dir, &nlblk, &nleaf);
	if (rc == 0)
		rc = dx_split_commit(h, dir, &s, leaf, nleaf, nlblk, fr, name, len, ino, ft);
out:
	free(mem);
	buf_put(nleaf);
	buf_put(leaf);
	dx_path_put(&p);
	return rc;
}

int ext3_dx_make_indexed(struct jbd_handle *h, struct ext3_inode *dir,
			 struct buffer_head *root_bh, const char *name, size_t len, uint32_t ino,
			 uint8_t ft)
{
	struct ext3_fs *fs = dir->fs;
	uint32_t bs = fs->g.block_size;
	unsigned hv = fs->def_hash_version;
	uint8_t *mem = calloc(3, (size_t)bs);
	if (!mem)
		return err_set(-ENOMEM, "ext3: directory index buffers");
	unsigned ls = ext3_dir_leaf_bytes(fs);
	struct buffer_head *l1 = NULL, *l2 = NULL;
	uint8_t *root = mem;
	struct dx_split s = {.b1 = mem + bs, .b2 = mem + 2 * (size_t)bs};
	memcpy(root, buf_data(root_bh), bs);
	uint32_t hash;
	/* built over the leaf's bytes (its entries end at the tail), then
	 * made a root of the whole block: ".." spans it, the limit leaves
	 * room for metadata_csum's dx_tail */
	int rc = ext3_dx_root_make(root, s.b1, ls, hv);
	if (rc == 0 && ls != bs) {
		((struct ext3_dir_entry_2 *)(root + 12))->rec_len = cpu_to_le16((uint16_t)(bs - 12));
		memset(root + ls, 0, bs - ls);
		ext3_dx_set_count(root, EXT3_DX_ROOT_CL, bs - ext3_dx_tail_bytes(fs), 1);
	}
	if (rc == 0)
		rc = ext3_dx_name_hash(fs, hv, name, len, &hash);
	if (rc == 0)
		rc = dx_split_prepare(fs, hv, hash, len, &s);
	if (rc)
		goto out;
	ext3_dx_insert(root, EXT3_DX_ROOT_CL, 0, s.hash2, 2);
	uint64_t b1, b2;
	rc = ext3_dir_append(h, dir, &b1, &l1);
	if (rc == 0)
		rc = ext3_dir_append(h, dir, &b2, &l2);
	if (rc)
		goto out;
	if (b1 != 1 || b2 != 2) {
		rc = ext3_dir_corrupt(fs, dir, UINT64_MAX,
				      err_set(-EUCLEAN, "new index leaves at blocks %llu, %llu",
					      (unsigned long long)b1, (unsigned long long)b2));
		goto out;
	}
	rc = ext3_journal_get_write_access(h, root_bh);
	if (rc)
		goto out;
	memcpy(buf_data(root_bh), root, bs);
	memcpy(buf_data(l1), s.b1, bs);
	memcpy(buf_data(l2), s.b2, bs);
	ext3_dirblk_put(buf_data(s.to_new ? l2 : l1), s.off, name, len, ino, ft);
	dir->a.flags |= EXT3_INDEX_FL;
	rc = ext3_dir_dirty(h, dir, root_bh);
	if (rc == 0)
		rc = ext3_dir_dirty(h, dir, l1);
	if (rc == 0)
		rc = ext3_dir_dirty(h, dir, l2);
	if (rc == 0)
		rc = ext3_mark_inode_dirty(h, dir);
out:
	buf_put(l1);
	buf_put(l2);
	free(mem);
	return rc;
}
