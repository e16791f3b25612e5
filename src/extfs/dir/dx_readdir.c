/* Readdir with positions that survive concurrent inserts
 * (ext3_dir_iterate_stable, ext3.h; docs/write-dirs.md, "Readdir cookies
 * and leaf splits").
 *
 * A linear directory is read in block order with byte offsets: inserts only
 * fill slack or append blocks, so an entry never moves. An indexed one is
 * read in hash order, as the kernel's ext3_dx_readdir does: a leaf split
 * moves entries between blocks but never changes a hash, so a position in
 * hash order stays valid whatever splits. Cookies:
 *
 *   0                      the start (and any byte offset: the directory was
 *                          linear when the position was taken)
 *   HASH | 1, HASH | 2     after "." and after ".."
 *   HASH | (G + 1) << 8 | k  group G, its first k entries (in name order)
 *                          returned
 *
 * where HASH = EXT3_DIR_COOKIE_HASH and the group G = major hash >> 1 (31
 * bits) << 22 | minor hash >> 10 (22 bits). Entries are returned by (G,
 * name). Names of one major hash are in one leaf or in a run of leaves
 * chained by the continuation bit, so a group is read whole before any of
 * it is returned. Resuming inside a group skips its first k names, or, when
 * the caller passes the name returned last, every name up to it (exact even
 * if a name joined the group meanwhile). k saturates at 255 (a group that
 * large needs 53-bit hash collisions).
 *
 * Locking: the caller holds dir->lock as reader for the call (ext3.h). */
#include "extfs/dir/dir_int.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COOKIE_HASH EXT3_DIR_COOKIE_HASH
#define COOKIE_DOT (COOKIE_HASH | 1u)
#define COOKIE_DOTDOT (COOKIE_HASH | 2u)
#define GROUPS (1ull << 53)
#define ORD_MAX 255u

static uint64_t group_of(uint32_t major, uint32_t minor)
{
	return (uint64_t)(major >> 1) << 22 | minor >> 10;
}

static uint64_t cookie(uint64_t g, unsigned k)
{
	return COOKIE_HASH | (g + 1) << 8 | (k > ORD_MAX ? ORD_MAX : k);
}

/* One entry read from a leaf. */
struct dxr_ent {
	uint64_t g;
	uint32_t major;
	uint32_t ino;
	uint8_t ft, len;
	char name[EXT3_NAME_LEN];
};

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al > bl) - (al < bl);
}

static int ent_cmp(const void *pa, const void *pb)
{
	const struct dxr_ent *a = pa, *b = pb;
	if (a->g != b->g)
		return a->g < b->g ? -1 : 1;
	return name_cmp(a->name, a->len, b->name, b->len);
}

struct dxr {
	struct ext3_fs *fs;
	const struct ext3_inode *dir;
	int hashver;          /* the root's version, signed/unsigned rule applied */
	uint64_t g0;          /* resume group */
	unsigned k0;          /* names of g0 already returned */
	const char *after;    /* ... or the last of them (k0 > 0 only) */
	size_t after_len;
	struct dxr_ent *v;    /* read, not yet returned (sorted before use) */
	size_t n, cap;
	uint64_t *pos;
	ext3_dir_cb cb;
	void *ctx;
};

/* Read leaf lblk's used entries of groups >= g0 into r->v. */
static int dxr_read_leaf(struct dxr *r, uint64_t lblk)
{
	struct ext3_fs *fs = r->fs;
	uint32_t bs = fs->g.block_size;
	struct buffer_head *bh;
	int rc = ext3_dir_bread(fs, r->dir, lblk, &bh);
	if (rc)
		return rc;
	const uint8_t *b = buf_data(bh);
	for (unsigned off = 0; off < bs && !rc;) {
		struct ext3_dirent_view de;
		rc = ext3_dirblock_entry(b, bs, off, fs->g.inodes_count, fs->has_filetype, &de);
		if (rc) {
			rc = err_wrap(rc, "ext3: directory inode %u, block %llu", r->dir->ino,
				      (unsigned long long)lblk);
			break;
		}
		off += de.rec_len;
		if (!de.inode || !de.name_len)
			continue;
		uint32_t major, minor;
		rc = ext3_dx_hash(de.name, de.name_len, r->hashver, fs->hash_seed, &major, &minor);
		uint64_t g = group_of(major, minor);
		if (rc || g < r->g0)
			continue;
		if (r->n == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 64;
			struct dxr_ent *v = realloc(r->v, cap * sizeof *v);
			if (!v) {
				rc = err_set(-ENOMEM, "ext3: out of memory for a directory read");
				break;
			}
			r->v = v;
			r->cap = cap;
		}
		struct dxr_ent *e = &r->v[r->n++];
		*e = (struct dxr_ent){.g = g, .major = major, .ino = de.inode, .ft = de.file_type,
				      .len = de.name_len};
		memcpy(e->name, de.name, de.name_len);
	}
	buf_put(bh);
	return rc;
}

/* Already returned before the resume point? (entry i of its group) */
static bool dxr_done_before(const struct dxr *r, const struct dxr_ent *e, unsigned i)
{
	if (e->g != r->g0 || r->k0 == 0)
		return false;
	if (r->after)
		return name_cmp(e->name, e->len, r->after, r->after_len) <= 0;
	return i < r->k0;
}

/* Return the first `ready` entries of r->v (whole groups, sorted) through
 * cb; 0, or cb's stop value with *pos set. */
static int dxr_deliver(struct dxr *r, size_t ready)
{
	size_t i = 0;
	int rc = 0;
	while (i < ready && !rc) {
		size_t end = i + 1;
		while (end < ready && r->v[end].g == r->v[i].g)
			end++;
		for (size_t j = i; j < end && !rc; j++) {
			const struct dxr_ent *e = &r->v[j];
			unsigned idx = (unsigned)(j - i);
			if (dxr_done_before(r, e, idx))
				continue;
			uint64_t next = j + 1 < end ? cookie(e->g, idx + 1) : cookie(e->g + 1, 0);
			struct ext3_dirent_view de = {.inode = e->ino, .rec_len = 0,
						      .name_len = e->len, .file_type = e->ft,
						      .name = e->name};
			*r->pos = next;
			rc = r->cb(r->ctx, &de, next);
		}
		i = end;
	}
	if (ready && r->n > ready) /* memmove(NULL, ...) is undefined even for 0 bytes */
		memmove(r->v, r->v + ready, (r->n - ready) * sizeof *r->v);
	r->n -= ready;
	return rc;
}

/* "." and ".." from the root block, unless *pos is past them. */
static int dxr_dots(struct dxr *r)
{
	if (*r->pos >= COOKIE_DOTDOT)
		return 0;
	struct ext3_fs *fs = r->fs;
	struct buffer_head *bh;
	int rc = ext3_dir_bread(fs, r->dir, 0, &bh);
	if (rc)
		return rc;
	const uint8_t *b = buf_data(bh);
	unsigned off = 0;
	for (uint64_t c = COOKIE_DOT; c <= COOKIE_DOTDOT && !rc; c++) {
		struct ext3_dirent_view de;
		rc = ext3_dirblock_entry(b, fs->g.block_size, off, fs->g.inodes_count,
					 fs->has_filetype, &de);
		if (rc) {
			rc = err_wrap(rc, "ext3: directory inode %u, block 0", r->dir->ino);
			break;
		}
		off += de.rec_len;
		if (*r->pos >= c)
			continue;
		*r->pos = c;
		rc = r->cb(r->ctx, &de, c);
	}
	buf_put(bh);
	return rc;
}

static int dxr_run(struct dxr *r, uint64_t nblocks)
{
	struct ext3_dx_walk *w = malloc(sizeof *w);
	if (!w)
		return err_set(-ENOMEM, "ext3: out of memory for a directory read");
	int rc = ext3_dx_walk_start(r->fs, r->dir, nblocks, NULL, 0, (uint32_t)(r->g0 >> 22) << 1,
				    w);
	r->hashver = (int)w->hv + (r->fs->unsigned_hash ? 3 : 0);
	if (!rc)
		rc = dxr_dots(r);
	for (uint64_t guard = 0; !rc; guard++) {
		if (guard > nblocks) {
			rc = err_set(-EUCLEAN, "ext3: directory inode %u: htree loops", r->dir->ino);
			break;
		}
		rc = dxr_read_leaf(r, ext3_dx_walk_leaf(w));
		if (rc)
			break;
		if (r->n > 1) /* qsort(NULL, 0) is undefined */
			qsort(r->v, r->n, sizeof *r->v, ent_cmp);
		/* A name of the next leaf's first hash may still be here when the
		 * next leaf continues it (collision bit): that group waits. */
		uint64_t next = ext3_dx_walk_next_hash(w);
		size_t ready = r->n;
		if (next != EXT3_DX_WALK_END && (next & 1u))
			while (ready && r->v[ready - 1].major >= (uint32_t)(next & ~1ull))
				ready--;
		rc = dxr_deliver(r, ready);
		if (rc)
			break;
		rc = ext3_dx_walk_next(r->fs, r->dir, w);
		if (rc == 0) {
			rc = r->n ? dxr_deliver(r, r->n) : 0;
			if (!rc)
				*r->pos = cookie(GROUPS, 0);
			break;
		}
		if (rc == 1)
			rc = 0;
	}
	free(w);
	return rc;
}

int ext3_dir_iterate_stable(struct ext3_fs *fs, struct ext3_inode *dir, uint64_t *pos,
			    const char *after, size_t after_len, ext3_dir_cb cb, void *ctx)
{
	ext3_inode_rdlock(dir);
	uint64_t nblocks;
	int rc = ext3_dir_nblocks(fs, dir, &nblocks);
	if (rc == 0 && !(ext3_dir_is_dx(fs, dir) && nblocks > 1)) {
		/* Linear (a hash cookie left from an index that is gone: start
		 * over, as the kernel does with a bad index). */
		if (*pos & COOKIE_HASH)
			*pos = 0;
		rc = ext3_dir_iterate_locked(fs, dir, pos, cb, ctx);
	} else if (rc == 0) {
		struct dxr r = {.fs = fs, .dir = dir, .pos = pos, .cb = cb, .ctx = ctx};
		/* A byte offset: the linear read of a damaged index goes on
		 * there (else the index was added since: start over in hash
		 * order). */
		uint64_t linear = *pos & COOKIE_HASH ? 0 : *pos;
		if (!(*pos & COOKIE_HASH)) /* the start, or left from the linear form */
			*pos = 0;
		if (*pos > COOKIE_DOTDOT) {
			r.g0 = ((*pos & ~COOKIE_HASH) >> 8) - 1;
			r.k0 = (unsigned)(*pos & 0xffu);
			if (r.k0 && after && after_len) {
				r.after = after;
				r.after_len = after_len;
			}
		}
		bool fresh = *pos == 0;
		if (r.g0 < GROUPS)
			rc = dxr_run(&r, nblocks);
		free(r.v);
		/* A damaged index is not fatal: a read from the start goes
		 * through the leaves linearly, like the kernel's readdir, and
		 * so does the next call, from the byte offset it returned
		 * (restarting at 0 returned the first entries forever). */
		if (rc == -EUCLEAN && fresh && *pos == 0) {
			*pos = linear;
			rc = ext3_dir_iterate_locked(fs, dir, pos, cb, ctx);
		}
	}
	ext3_inode_unlock(dir);
	return rc;
}
