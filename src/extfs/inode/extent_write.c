/* Changing an ext4 extent tree: the path down the tree, inserting with
 * splits and depth growth, converting between unwritten and initialized
 * (extent_write.h; docs/ext4-extents.md, "Writing"). Removal is in
 * extent_remove.c; both share the path and node helpers of
 * extent_path.h.
 *
 * Invariants every call keeps (the kernel's and e2fsck's): entries of a
 * node sorted and not overlapping; an index entry's key equal to the first
 * key of its child; no node but the root empty; every node's eh_depth one
 * below its parent's; every extent 1..32768 blocks (1..32767 unwritten)
 * inside the 32-bit logical space. A tree block's metadata_csum tail is set
 * after its last change and before it is dirtied in the handle.
 *
 * Locking: in->lock as writer and a running handle (extent_write.h). */
#include "extfs/inode/extent_path.h"

#include "extfs/core/csum.h"

#include "buf/buf.h"
#include "jbd/jbd.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* ---- nodes ---- */

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

unsigned xnode_entries(const uint8_t *node)
{
	return rd16(node + 2);
}

unsigned xnode_max(const uint8_t *node)
{
	return rd16(node + 4);
}

unsigned xnode_depth(const uint8_t *node)
{
	return rd16(node + 6);
}

void xnode_set_entries(uint8_t *node, unsigned n)
{
	wr16(node + 2, (uint16_t)n);
}

uint8_t *xnode_ent(uint8_t *node, unsigned i)
{
	return node + XENT + (size_t)i * XENT;
}

uint32_t xnode_key(const uint8_t *node, unsigned i)
{
	return rd32(node + XENT + (size_t)i * XENT);
}

void xnode_init(uint8_t *node, unsigned max, unsigned depth)
{
	wr16(node, EXT4_EXT_MAGIC);
	wr16(node + 2, 0);
	wr16(node + 4, (uint16_t)max);
	wr16(node + 6, (uint16_t)depth);
	wr32(node + 8, 0);
}

void xext_get(const uint8_t *e, struct xext *x)
{
	x->lblk = rd32(e);
	unsigned len = rd16(e + 4);
	x->unwritten = len > EXT4_EXT_INIT_MAX_LEN;
	x->len = x->unwritten ? len - EXT4_EXT_INIT_MAX_LEN : len;
	x->pblk = (uint64_t)rd16(e + 6) << 32 | rd32(e + 8);
}

void xext_set(uint8_t *e, const struct xext *x)
{
	wr32(e, x->lblk);
	wr16(e + 4, (uint16_t)(x->unwritten ? x->len + EXT4_EXT_INIT_MAX_LEN : x->len));
	wr16(e + 6, (uint16_t)(x->pblk >> 32));
	wr32(e + 8, (uint32_t)x->pblk);
}

uint64_t xidx_child(const uint8_t *e)
{
	return (uint64_t)rd16(e + 8) << 32 | rd32(e + 4);
}

static void xidx_set(uint8_t *e, uint32_t key, uint64_t child)
{
	wr32(e, key);
	wr32(e + 4, (uint32_t)child);
	wr16(e + 8, (uint16_t)(child >> 32));
	wr16(e + 10, 0);
}

unsigned xext_max_len(bool unwritten)
{
	return unwritten ? EXT4_EXT_UNWRITTEN_MAX_LEN : EXT4_EXT_INIT_MAX_LEN;
}

/* ---- the root and the path ---- */

static void root_load(struct xctx *c)
{
	for (int i = 0; i < EXT3_N_BLOCKS; i++) {
		uint32_t w = cpu_to_le32(c->in->a.block[i]); /* i_block holds LE bytes */
		memcpy(c->root + 4 * i, &w, 4);
	}
}

static void root_store(struct xctx *c)
{
	for (int i = 0; i < EXT3_N_BLOCKS; i++) {
		uint32_t w;
		memcpy(&w, c->root + 4 * i, 4);
		c->in->a.block[i] = le32_to_cpu(w);
	}
}

void xctx_init(struct xctx *c, struct jbd_handle *h, struct ext3_inode *in)
{
	memset(c, 0, sizeof *c);
	c->h = h;
	c->in = in;
	c->fs = in->fs;
	c->bs = ext3_fs_block_size(in->fs);
	c->units = c->bs / 512;
	c->cap = (c->bs - XENT) / XENT;
	root_load(c);
}

void xpath_release(struct xctx *c)
{
	for (int i = 0; i <= c->depth && i < XMAX_LEVELS; i++) {
		buf_put(c->lv[i].bh);
		c->lv[i].bh = NULL;
	}
	c->depth = 0;
}

int xctx_done(struct xctx *c, int rc)
{
	xpath_release(c);
	if (c->root_dirty && !c->caller_writes) {
		int mrc = ext3_mark_inode_dirty(c->h, c->in);
		if (!rc)
			rc = mrc;
	}
	return rc;
}

int xcorrupt(struct xctx *c, uint64_t blk, const char *what)
{
	if (blk)
		return ext3_fs_error(c->fs, "inode %u: extent tree block %llu: %s", c->in->ino,
				     (unsigned long long)blk, what);
	return ext3_fs_error(c->fs, "inode %u: extent tree root: %s", c->in->ino, what);
}

/* The header and entries of a node as the read side checks them (magic,
 * eh_max within the room, entries within eh_max, the depth the parent
 * implies, keys sorted): nothing is written over a node that fails. */
static int node_check(struct xctx *c, const uint8_t *node, unsigned room, int want_depth, uint64_t blk)
{
	if (rd16(node) != EXT4_EXT_MAGIC)
		return xcorrupt(c, blk, "bad magic");
	unsigned max = xnode_max(node), n = xnode_entries(node), depth = xnode_depth(node);
	if (max == 0 || max > room || n > max)
		return xcorrupt(c, blk, "entry counts out of range");
	if (depth > EXT4_EXT_MAX_DEPTH || (want_depth >= 0 && depth != (unsigned)want_depth))
		return xcorrupt(c, blk, "bad depth");
	if (blk && n == 0)
		return xcorrupt(c, blk, "an empty tree block");
	for (unsigned i = 1; i < n; i++)
		if (xnode_key(node, i) <= xnode_key(node, i - 1))
			return xcorrupt(c, blk, "entries out of order");
	return 0;
}

/* Last entry whose key is <= lblk, -1 when none. */
static int entry_find(const uint8_t *node, uint32_t lblk)
{
	int lo = 0, hi = (int)xnode_entries(node) - 1, ans = -1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (xnode_key(node, (unsigned)mid) <= lblk) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

int xpath_walk(struct xctx *c, uint32_t lblk)
{
	xpath_release(c);
	c->lv[0].node = c->root;
	c->lv[0].bh = NULL;
	c->lv[0].blk = 0;
	int rc = node_check(c, c->root, 4, -1, 0);
	if (rc)
		return rc;
	unsigned depth = xnode_depth(c->root);
	c->next = (uint64_t)1 << 32;
	for (unsigned l = 0;; l++) {
		uint8_t *node = c->lv[l].node;
		unsigned n = xnode_entries(node);
		int pos = entry_find(node, lblk);
		if ((unsigned)(pos + 1) < n && xnode_key(node, (unsigned)(pos + 1)) < c->next)
			c->next = xnode_key(node, (unsigned)(pos + 1));
		if (l == depth) {
			c->lv[l].pos = pos;
			return 0;
		}
		if (n == 0)
			return xcorrupt(c, c->lv[l].blk, "an empty index");
		if (pos < 0)
			pos = 0; /* before every key: the first subtree (its key moves) */
		c->lv[l].pos = pos;
		uint64_t child = xidx_child(xnode_ent(node, (unsigned)pos));
		if (child < c->fs->g.first_data_block || child >= ext3_fs_blocks_count(c->fs))
			return xcorrupt(c, c->lv[l].blk, "an index pointing outside the filesystem");
		struct buffer_head *bh;
		rc = ext3_bread(c->fs, child, "extent tree", &bh);
		if (rc)
			return err_wrap(rc, "ext4: inode %u: extent tree block %llu", c->in->ino,
					(unsigned long long)child);
		c->depth = (int)l + 1;
		c->lv[l + 1].bh = bh;
		c->lv[l + 1].node = buf_data(bh);
		c->lv[l + 1].blk = child;
		if (!buf_verified(bh)) {
			if (!ext4_extent_block_csum_ok(c->fs, c->in->ino, c->in->a.generation, buf_data(bh)))
				return xcorrupt(c, child, "checksum mismatch (metadata_csum)");
			buf_set_verified(bh);
		}
		rc = node_check(c, buf_data(bh), c->cap, (int)(depth - l - 1), child);
		if (rc)
			return rc;
	}
}

int xnode_begin(struct xctx *c, int l)
{
	ext3_inode_map_invalidate(c->in); /* the run cache (bmap_ext.c) */
	if (!c->lv[l].bh)
		return 0;
	return ext3_journal_get_write_access(c->h, c->lv[l].bh);
}

int xnode_end(struct xctx *c, int l)
{
	ext3_inode_map_invalidate(c->in);
	if (!c->lv[l].bh) {
		/* The root: into i_block at once, so an inode written by a
		 * truncate step's restart carries it (ext3_bmap_trunc_room). */
		root_store(c);
		c->root_dirty = true;
		return 0;
	}
	ext4_extent_block_csum_defer(c->in, c->lv[l].bh);
	return ext3_journal_dirty_metadata(c->h, c->lv[l].bh);
}

/* ---- tree blocks ---- */

int xblock_new(struct xctx *c, uint64_t goal, unsigned depth, struct buffer_head **out)
{
	*out = NULL;
	if (ext3_inode_blocks_now(c->in) + c->units > ext3_inode_blocks_max(c->fs))
		return err_set(-EFBIG, "ext4: inode %u: i_blocks would overflow", c->in->ino);
	uint32_t n = 1;
	uint64_t blk;
	int rc = ext3_new_blocks(c->h, c->in, goal, &n, &blk);
	if (rc)
		return rc;
	int err = 0;
	struct buffer_head *bh = buf_get(c->fs->cache, blk, &err);
	if (!bh) {
		(void)ext3_free_blocks(c->h, c->in, blk, 1, false);
		return err_set(err ? err : -ENOMEM, "ext4: extent tree block %llu", (unsigned long long)blk);
	}
	rc = ext3_journal_get_create_access(c->h, bh);
	if (rc) {
		buf_put(bh);
		(void)ext3_free_blocks(c->h, c->in, blk, 1, false);
		return rc;
	}
	buf_lock(bh);
	memset(buf_data(bh), 0, c->bs);
	xnode_init(buf_data(bh), c->cap, depth);
	buf_set_uptodate(bh);
	buf_unlock(bh);
	ext3_inode_blocks_add(c->in, (int64_t)c->units);
	c->root_dirty = true;
	*out = bh;
	return 0;
}

int xblock_free(struct xctx *c, uint64_t blk)
{
	int rc = ext3_free_blocks(c->h, c->in, blk, 1, true);
	if (rc)
		return rc;
	ext3_inode_blocks_add(c->in, -(int64_t)c->units);
	c->root_dirty = true;
	return 0;
}

static int block_dirty(struct xctx *c, struct buffer_head *bh)
{
	ext4_extent_block_csum_defer(c->in, bh);
	return ext3_journal_dirty_metadata(c->h, bh);
}

/* ---- keys ---- */

int xfix_keys(struct xctx *c, int l)
{
	while (l > 0) {
		int p = l - 1;
		unsigned ppos = (unsigned)c->lv[p].pos;
		uint32_t key = xnode_key(c->lv[l].node, 0);
		uint8_t *e = xnode_ent(c->lv[p].node, ppos);
		if (xnode_key(c->lv[p].node, ppos) == key)
			return 0;
		int rc = xnode_begin(c, p);
		if (rc)
			return rc;
		wr32(e, key);
		rc = xnode_end(c, p);
		if (rc || ppos != 0)
			return rc;
		l = p;
	}
	return 0;
}

/* ---- insert ---- */

/* The root's entries move to a new block; the root becomes an index of
 * one entry one level higher. The path gets that block as level 1 (the
 * old levels move down one). */
static int grow_root(struct xctx *c)
{
	unsigned depth = xnode_depth(c->root);
	if (depth >= EXT4_EXT_MAX_DEPTH)
		return err_set(-EFBIG, "ext4: inode %u: extent tree at its maximum depth", c->in->ino);
	struct buffer_head *bh;
	uint64_t goal = c->depth ? c->lv[1].blk : 0;
	int rc = xblock_new(c, goal, depth, &bh);
	if (rc)
		return rc;
	uint8_t *node = buf_data(bh);
	unsigned n = xnode_entries(c->root);
	memcpy(node + XENT, c->root + XENT, (size_t)n * XENT);
	xnode_set_entries(node, n);
	rc = block_dirty(c, bh);
	if (rc) {
		buf_put(bh);
		return rc;
	}
	uint64_t blk = buf_blocknr(bh);
	for (int l = c->depth; l >= 0; l--)
		c->lv[l + 1] = c->lv[l];
	c->lv[1].bh = bh;
	c->lv[1].node = node;
	c->lv[1].blk = blk;
	c->depth++;
	xnode_init(c->root, 4, depth + 1);
	xidx_set(xnode_ent(c->root, 0), n ? xnode_key(node, 0) : 0, blk);
	xnode_set_entries(c->root, 1);
	c->lv[0].node = c->root;
	c->lv[0].bh = NULL;
	c->lv[0].pos = 0;
	return xnode_end(c, 0);
}

static int insert_at(struct xctx *c, int l, unsigned pos, const uint8_t *entry);

/* Level l is full: half its entries (or none, when appending) move to a
 * new node; the entry goes to its side; the new node's index entry goes
 * into the parent. */
static int split_insert(struct xctx *c, int l, unsigned pos, const uint8_t *entry)
{
	uint8_t *node = c->lv[l].node;
	unsigned n = xnode_entries(node);
	unsigned m = pos == n ? n : n / 2; /* appending: the new node starts with the entry */
	struct buffer_head *bh;
	int rc = xblock_new(c, c->lv[l].blk, xnode_depth(node), &bh);
	if (rc)
		return rc;
	uint8_t *nn = buf_data(bh);
	uint64_t nblk = buf_blocknr(bh);
	rc = xnode_begin(c, l);
	if (rc) {
		buf_put(bh);
		return rc;
	}
	memcpy(nn + XENT, node + XENT + (size_t)m * XENT, (size_t)(n - m) * XENT);
	xnode_set_entries(nn, n - m);
	xnode_set_entries(node, m);
	uint8_t *dst = node;
	unsigned at = pos;
	if (pos > m || (pos == m && m == n)) { /* into the new node */
		dst = nn;
		at = pos - m;
	}
	unsigned dn = xnode_entries(dst);
	memmove(xnode_ent(dst, at + 1), xnode_ent(dst, at), (size_t)(dn - at) * XENT);
	memcpy(xnode_ent(dst, at), entry, XENT);
	xnode_set_entries(dst, dn + 1);
	rc = xnode_end(c, l);
	if (!rc)
		rc = block_dirty(c, bh);
	buf_put(bh);
	if (!rc && dst == node && at == 0)
		rc = xfix_keys(c, l);
	if (rc)
		return rc;
	uint8_t ie[XENT];
	xidx_set(ie, xnode_key(nn, 0), nblk);
	return insert_at(c, l - 1, (unsigned)c->lv[l - 1].pos + 1, ie);
}

/* Put a 12-byte entry at position pos of level l of the path, splitting
 * nodes up the path and growing the tree as needed. The path is stale
 * afterwards. */
static int insert_at(struct xctx *c, int l, unsigned pos, const uint8_t *entry)
{
	uint8_t *node = c->lv[l].node;
	unsigned n = xnode_entries(node);
	if (n < xnode_max(node)) {
		int rc = xnode_begin(c, l);
		if (rc)
			return rc;
		memmove(xnode_ent(node, pos + 1), xnode_ent(node, pos), (size_t)(n - pos) * XENT);
		memcpy(xnode_ent(node, pos), entry, XENT);
		xnode_set_entries(node, n + 1);
		rc = xnode_end(c, l);
		if (!rc && pos == 0)
			rc = xfix_keys(c, l);
		return rc;
	}
	if (l == 0) {
		int rc = grow_root(c);
		if (rc)
			return rc;
		return insert_at(c, 1, pos, entry); /* the old root's entries have room now */
	}
	return split_insert(c, l, pos, entry);
}

/* Merge leaf entry i with entry i + 1 when they continue each other
 * (logically and physically, same kind, within the length limit). */
static bool mergeable(const struct xext *a, const struct xext *b)
{
	return a->unwritten == b->unwritten && (uint64_t)a->lblk + a->len == b->lblk &&
	       a->pblk + a->len == b->pblk && a->len + b->len <= xext_max_len(a->unwritten);
}

int xleaf_merge(struct xctx *c, unsigned i)
{
	int l = c->depth;
	uint8_t *leaf = c->lv[l].node;
	unsigned n = xnode_entries(leaf);
	int rc = 0;
	for (int pass = 0; pass < 2 && !rc; pass++) {
		unsigned a = pass == 0 ? i : i - 1; /* with the right one, then the left */
		if ((pass == 1 && i == 0) || a + 1 >= n)
			continue;
		struct xext x, y;
		xext_get(xnode_ent(leaf, a), &x);
		xext_get(xnode_ent(leaf, a + 1), &y);
		if (!mergeable(&x, &y))
			continue;
		rc = xnode_begin(c, l);
		if (rc)
			return rc;
		x.len += y.len;
		xext_set(xnode_ent(leaf, a), &x);
		memmove(xnode_ent(leaf, a + 1), xnode_ent(leaf, a + 2), (size_t)(n - a - 2) * XENT);
		xnode_set_entries(leaf, --n);
		rc = xnode_end(c, l);
	}
	return rc;
}

/* One extent within the length limit into a hole. */
int xinsert_one(struct xctx *c, uint32_t lblk, uint64_t pblk, uint32_t len, bool unwritten)
{
	return xinsert(c, lblk, pblk, len, unwritten, true);
}

int xinsert(struct xctx *c, uint32_t lblk, uint64_t pblk, uint32_t len, bool unwritten, bool merge)
{
	int rc = xpath_walk(c, lblk);
	if (rc)
		return rc;
	int l = c->depth;
	uint8_t *leaf = c->lv[l].node;
	unsigned n = xnode_entries(leaf);
	int pos = c->lv[l].pos;
	struct xext nx = {lblk, len, pblk, unwritten}, left, right;
	bool has_left = pos >= 0, has_right = (unsigned)(pos + 1) < n;
	if (has_left) {
		xext_get(xnode_ent(leaf, (unsigned)pos), &left);
		if ((uint64_t)left.lblk + left.len > lblk)
			return err_set(-EEXIST, "ext4: inode %u: block %u already mapped", c->in->ino, lblk);
	}
	if ((uint64_t)lblk + len > c->next)
		return err_set(-EEXIST, "ext4: inode %u: blocks %u..%llu overlap a mapping", c->in->ino, lblk,
			       (unsigned long long)lblk + len - 1);
	if (has_right)
		xext_get(xnode_ent(leaf, (unsigned)pos + 1), &right);
	if (merge && has_left && mergeable(&left, &nx)) {
		rc = xnode_begin(c, l);
		if (rc)
			return rc;
		left.len += len;
		xext_set(xnode_ent(leaf, (unsigned)pos), &left);
		rc = xnode_end(c, l);
		return rc ? rc : xleaf_merge(c, (unsigned)pos);
	}
	if (merge && has_right && mergeable(&nx, &right)) {
		rc = xnode_begin(c, l);
		if (rc)
			return rc;
		right.lblk = lblk;
		right.pblk = pblk;
		right.len += len;
		xext_set(xnode_ent(leaf, (unsigned)pos + 1), &right);
		rc = xnode_end(c, l);
		if (!rc && pos + 1 == 0)
			rc = xfix_keys(c, l);
		return rc;
	}
	uint8_t e[XENT];
	xext_set(e, &nx);
	return insert_at(c, l, (unsigned)(pos + 1), e);
}

int xrestore(struct xctx *c, uint32_t key, uint64_t end, const struct xext *x)
{
	int rc = xpath_walk(c, key);
	if (rc)
		return rc;
	int l = c->depth, pos = c->lv[l].pos;
	if (pos < 0)
		return -ENOENT;
	uint8_t *leaf = c->lv[l].node;
	struct xext cur, prev;
	xext_get(xnode_ent(leaf, (unsigned)pos), &cur);
	if (cur.lblk != key || (uint64_t)cur.lblk + cur.len != end || c->next < (uint64_t)x->lblk + x->len)
		return -ENOENT; /* not as the cut left it */
	if (pos > 0) {
		xext_get(xnode_ent(leaf, (unsigned)pos - 1), &prev);
		if ((uint64_t)prev.lblk + prev.len > x->lblk)
			return -ENOENT;
	}
	rc = xnode_begin(c, l);
	if (rc)
		return rc;
	xext_set(xnode_ent(leaf, (unsigned)pos), x);
	rc = xnode_end(c, l);
	if (!rc && pos == 0)
		rc = xfix_keys(c, l);
	return rc;
}

/* ---- the contract ---- */

unsigned xroot_depth(const struct ext3_inode *in)
{
	unsigned d = in->a.block[1] >> 16; /* eh_depth: bytes 6..7 of the root */
	return d > EXT4_EXT_MAX_DEPTH ? EXT4_EXT_MAX_DEPTH : d;
}

int ext4_ext_credits(const struct ext3_fs *fs, const struct ext3_inode *in)
{
	(void)fs;
	unsigned d = xroot_depth(in);
	/* One insert: the d tree blocks on the path, a new block per level and
	 * one for a new level (d + 1), each new block's bitmap and descriptor,
	 * the inode and the superblock. A convert may insert twice. */
	return (int)(2 * (d + 3 * (d + 1) + 2));
}

static int ext_insert(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint64_t pblk, uint32_t len,
		      bool unwritten, bool caller_writes)
{
	if (len == 0)
		return 0;
	if ((uint64_t)lblk + len > (uint64_t)1 << 32)
		return err_set(-EFBIG, "ext4: inode %u: blocks past the 32-bit logical space", in->ino);
	if (pblk == 0 || pblk + len > ext3_fs_blocks_count(in->fs))
		return err_set(-EINVAL, "ext4: inode %u: mapping blocks outside the filesystem", in->ino);
	struct xctx c;
	xctx_init(&c, h, in);
	c.caller_writes = caller_writes;
	int rc = 0;
	unsigned max = xext_max_len(unwritten);
	while (len && !rc) {
		uint32_t n = len < max ? len : max;
		rc = xinsert_one(&c, lblk, pblk, n, unwritten);
		lblk += n;
		pblk += n;
		len -= n;
	}
	return xctx_done(&c, rc);
}

int ext4_ext_insert(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint64_t pblk, uint32_t len,
		    bool unwritten)
{
	return ext_insert(h, in, lblk, pblk, len, unwritten, false);
}

int ext4_ext_insert_nowrite(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint64_t pblk,
			    uint32_t len, bool unwritten)
{
	return ext_insert(h, in, lblk, pblk, len, unwritten, true);
}

static int ext_convert(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint32_t len, bool to_unwritten,
		       bool caller_writes)
{
	uint64_t cur = lblk, end = (uint64_t)lblk + len;
	if (end > (uint64_t)1 << 32)
		return err_set(-EFBIG, "ext4: inode %u: blocks past the 32-bit logical space", in->ino);
	struct xctx c;
	xctx_init(&c, h, in);
	c.caller_writes = caller_writes;
	int rc = 0;
	while (cur < end && !rc) {
		rc = xpath_walk(&c, (uint32_t)cur);
		if (rc)
			break;
		int l = c.depth, pos = c.lv[l].pos;
		uint8_t *leaf = c.lv[l].node;
		struct xext x;
		if (pos >= 0)
			xext_get(xnode_ent(leaf, (unsigned)pos), &x);
		if (pos < 0 || (uint64_t)x.lblk + x.len <= cur) { /* a hole */
			cur = c.next < end ? c.next : end;
			continue;
		}
		uint64_t xend = (uint64_t)x.lblk + x.len;
		if (x.unwritten == to_unwritten) {
			cur = xend < end ? xend : end;
			continue;
		}
		uint64_t a = cur, b = xend < end ? xend : end;
		if (to_unwritten && b - a > EXT4_EXT_UNWRITTEN_MAX_LEN)
			b = a + EXT4_EXT_UNWRITTEN_MAX_LEN;
		struct xext mid = {(uint32_t)a, (uint32_t)(b - a), x.pblk + (a - x.lblk), to_unwritten};
		rc = xnode_begin(&c, l);
		if (rc)
			break;
		if (a == x.lblk && b == xend) {
			/* The whole extent changes kind, then joins its neighbours. */
			xext_set(xnode_ent(leaf, (unsigned)pos), &mid);
			rc = xnode_end(&c, l);
			if (!rc)
				rc = xleaf_merge(&c, (unsigned)pos);
		} else if (a == x.lblk) {
			/* The head changes: the rest keeps the entry (its key
			 * moves), the head goes in before it. */
			struct xext rest = {(uint32_t)b, (uint32_t)(xend - b), x.pblk + (b - x.lblk), x.unwritten};
			xext_set(xnode_ent(leaf, (unsigned)pos), &rest);
			rc = xnode_end(&c, l);
			if (!rc && pos == 0)
				rc = xfix_keys(&c, l);
			if (rc)
				break;
			rc = xinsert_one(&c, mid.lblk, mid.pblk, mid.len, mid.unwritten);
			if (rc) /* (no tree block for the head: the extent as it was) */
				(void)xrestore(&c, rest.lblk, xend, &x);
		} else {
			/* The entry keeps its head; the changed part and (in the
			 * middle of the extent) the old-kind tail go in after. */
			struct xext head = x;
			head.len = (uint32_t)(a - x.lblk);
			xext_set(xnode_ent(leaf, (unsigned)pos), &head);
			rc = xnode_end(&c, l);
			if (rc)
				break;
			if (b < xend) {
				rc = xinsert(&c, (uint32_t)b, x.pblk + (b - x.lblk), (uint32_t)(xend - b), x.unwritten,
					     false);
				if (rc) { /* (no tree block for the tail: the extent as it was) */
					(void)xrestore(&c, x.lblk, a, &x);
					break;
				}
			}
			rc = xinsert_one(&c, mid.lblk, mid.pblk, mid.len, mid.unwritten);
			if (rc) {
				/* No tree block for the changed part: the head takes
				 * it back in its old kind (mapped, not converted). */
				struct xext back = head;
				back.len = (uint32_t)(b - x.lblk);
				(void)xrestore(&c, x.lblk, a, &back);
			}
		}
		cur = b;
	}
	return xctx_done(&c, rc);
}

int ext4_ext_convert(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint32_t len, bool to_unwritten)
{
	return ext_convert(h, in, lblk, len, to_unwritten, false);
}

int ext4_ext_convert_nowrite(struct jbd_handle *h, struct ext3_inode *in, uint32_t lblk, uint32_t len,
			     bool to_unwritten)
{
	return ext_convert(h, in, lblk, len, to_unwritten, true);
}

uint64_t ext4_ext_find_goal(struct ext3_inode *in, uint32_t lblk)
{
	if (in->rsv.last_phys && lblk == in->rsv.last_lblk + 1)
		return in->rsv.last_phys + 1;
	struct xctx c;
	xctx_init(&c, NULL, in);
	uint64_t goal = 0;
	if (xpath_walk(&c, lblk) == 0) {
		int l = c.depth, pos = c.lv[l].pos;
		uint8_t *leaf = c.lv[l].node;
		if (xnode_entries(leaf)) {
			/* As far from the nearest extent's physical start as lblk
			 * is from its logical one (ext4_ext_find_goal). */
			struct xext x;
			xext_get(xnode_ent(leaf, pos >= 0 ? (unsigned)pos : 0), &x);
			if (lblk >= x.lblk)
				goal = x.pblk + (lblk - x.lblk);
			else
				goal = x.pblk > x.lblk - lblk ? x.pblk - (x.lblk - lblk) : 0;
		} else if (l > 0) {
			goal = c.lv[l].blk; /* near the leaf */
		}
	}
	xpath_release(&c);
	if (goal >= ext3_fs_blocks_count(in->fs))
		goal = 0;
	return goal;
}

void ext4_ext_root_init(struct ext3_inode *in)
{
	uint8_t root[60] = {0};
	xnode_init(root, 4, 0);
	for (int i = 0; i < EXT3_N_BLOCKS; i++) {
		uint32_t w;
		memcpy(&w, root + 4 * i, 4);
		in->a.block[i] = le32_to_cpu(w);
	}
	in->a.flags |= EXT4_EXTENTS_FL;
}

void ext4_ext_new_inode_init(struct ext3_inode *in)
{
	uint16_t type = in->a.mode & EXT3_S_IFMT;
	if (!(le32_to_cpu(in->fs->sb.s_feature_incompat) & EXT4_FEATURE_INCOMPAT_EXTENTS))
		return;
	/* As the kernel's __ext4_new_inode: files, directories and symlinks
	 * (a fast symlink gives the flag back when its target goes inline). */
	if (type == EXT3_S_IFREG || type == EXT3_S_IFDIR || type == EXT3_S_IFLNK)
		ext4_ext_root_init(in);
}
