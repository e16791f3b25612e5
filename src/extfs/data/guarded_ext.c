/* data=guarded's per-inode state (guarded_int.h; docs/write-guarded.md):
 * the extents of each inode and the mount-wide hash that finds them. The
 * hooks that create, complete and drop extents are in guarded.c.
 *
 * State per inode (struct ginode, found by inode number in a mount-wide
 * hash): the extents, a sorted array of page ranges [start, end), each
 * pending (err 0) or failed (err < 0). A range per run of adjacent
 * allocations keeps the array short (a streaming append is one range that
 * grows at its end and shrinks at its start); lookups are binary searches.
 * Done extents are removed, so the first range's start is the lowest page
 * the size must not pass yet:
 *
 *     i_disksize target = min(i_size, first range's start * block size)
 *
 * A completed run removes the extents it covers whatever their state (the
 * page's whole block was written); a failed run marks them failed.
 *
 * Locking: every function here runs with g->lock held, the mount's leaf
 * mutex; none blocks or takes a lock. A ginode pointer stays valid after
 * g->lock is dropped only while the caller holds in->lock or has marked it
 * busy (the logger): eviction (guarded.c) waits until it is not busy and
 * takes in->lock itself before it unhashes and frees it.
 */
#include "extfs/data/guarded_int.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- extents */

/* The first range whose end is past idx. */
static size_t ext_search(const struct ginode *gi, uint64_t idx)
{
	size_t lo = 0, hi = gi->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (gi->ext[mid].end <= idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool ext_reserve(struct ginode *gi, size_t extra)
{
	if (gi->n + extra <= gi->cap)
		return true;
	size_t cap = gi->cap ? gi->cap * 2 : 8;
	while (cap < gi->n + extra)
		cap *= 2;
	struct gext *v = realloc(gi->ext, cap * sizeof *v);
	if (!v)
		return false;
	gi->ext = v;
	gi->cap = cap;
	return true;
}

static void ext_insert_at(struct ginode *gi, size_t p, struct gext e)
{
	memmove(&gi->ext[p + 1], &gi->ext[p], (gi->n - p) * sizeof e);
	gi->ext[p] = e;
	gi->n++;
}

static void ext_remove(struct ginode *gi, size_t p, size_t count)
{
	memmove(&gi->ext[p], &gi->ext[p + count], (gi->n - p - count) * sizeof gi->ext[0]);
	gi->n -= count;
}

/* Page idx becomes pending (merged into a pending neighbour). 0 or
 * -ENOMEM. */
int guarded_ext_add(struct ginode *gi, uint64_t idx)
{
	size_t p = ext_search(gi, idx);
	if (p < gi->n && gi->ext[p].start <= idx)
		return 0; /* covered already */
	bool left = p > 0 && gi->ext[p - 1].end == idx && !gi->ext[p - 1].err;
	bool right = p < gi->n && gi->ext[p].start == idx + 1 && !gi->ext[p].err;
	if (left && right) {
		gi->ext[p - 1].end = gi->ext[p].end;
		ext_remove(gi, p, 1);
	} else if (left) {
		gi->ext[p - 1].end++;
	} else if (right) {
		gi->ext[p].start--;
	} else {
		if (!ext_reserve(gi, 1))
			return err_set(-ENOMEM, "ext3: out of memory for a guarded extent");
		ext_insert_at(gi, p, (struct gext){idx, idx + 1, 0});
	}
	return 0;
}

/* No range straddles idx afterwards (one slot reserved by the caller). */
static void ext_split_at(struct ginode *gi, uint64_t idx)
{
	size_t p = ext_search(gi, idx);
	if (p < gi->n && gi->ext[p].start < idx) {
		struct gext tail = gi->ext[p];
		tail.start = idx;
		gi->ext[p].end = idx;
		ext_insert_at(gi, p + 1, tail);
	}
}

/* Pages [first, last] were written with err: remove (err 0) or fail their
 * extents. Adds the pages met to *done / *failed. */
void guarded_ext_complete(struct ginode *gi, uint64_t first, uint64_t last, int err, uint64_t *done,
			  uint64_t *failed)
{
	uint64_t end = last + 1;
	size_t p = ext_search(gi, first);
	if (p == gi->n || gi->ext[p].start >= end)
		return;
	if (!ext_reserve(gi, 2)) {
		/* No memory to split: a success leaves them pending (the size
		 * only waits longer); a failure fails the whole ranges met. */
		for (; err && p < gi->n && gi->ext[p].start < end; p++)
			gi->ext[p].err = err;
		return;
	}
	ext_split_at(gi, first);
	ext_split_at(gi, end);
	p = ext_search(gi, first);
	size_t q = p;
	for (; q < gi->n && gi->ext[q].end <= end; q++) {
		uint64_t pages = gi->ext[q].end - gi->ext[q].start;
		if (err) {
			if (!gi->ext[q].err)
				*failed += pages;
			gi->ext[q].err = err;
		} else {
			*done += pages;
		}
	}
	if (!err)
		ext_remove(gi, p, q - p);
}

/* Drop every extent at or past page idx. */
void guarded_ext_drop_from(struct ginode *gi, uint64_t idx)
{
	size_t p = ext_search(gi, idx);
	if (p < gi->n && gi->ext[p].start < idx)
		gi->ext[p++].end = idx;
	gi->n = p;
}

uint64_t guarded_ext_low(const struct ginode *gi)
{
	return gi && gi->n ? gi->ext[0].start : UINT64_MAX;
}

/* A failed extent starting below page `below`? */
bool guarded_ext_failed_below(const struct ginode *gi, uint64_t below)
{
	for (size_t i = 0; gi && i < gi->n && gi->ext[i].start < below; i++)
		if (gi->ext[i].err)
			return true;
	return false;
}

/* ------------------------------------------------------------ inodes */

static struct ginode **bucket(struct ext3_guarded *g, uint32_t ino)
{
	/* Fibonacci hashing: the product's high bits (nbuckets is a power of
	 * two). Its low bits alone would chain inode numbers a multiple of
	 * nbuckets apart - the same slot of each group's inode table. */
	unsigned bits = (unsigned)__builtin_ctzll((unsigned long long)g->nbuckets);
	return &g->hash[bits ? (ino * 2654435761u) >> (32 - bits) : 0];
}

/* Double the buckets once the states outnumber twice them; best effort (no
 * memory: the chains grow). g->lock held. */
static void hash_grow(struct ext3_guarded *g)
{
	if (g->nstates <= 2 * g->nbuckets)
		return;
	size_t nb = g->nbuckets * 2;
	struct ginode **nh = calloc(nb, sizeof *nh);
	if (!nh)
		return;
	struct ginode **old = g->hash;
	size_t ob = g->nbuckets;
	g->hash = nh;
	g->nbuckets = nb;
	for (size_t b = 0; b < ob; b++)
		while (old[b]) {
			struct ginode *gi = old[b];
			old[b] = gi->hnext;
			struct ginode **pp = bucket(g, gi->ino);
			gi->hnext = *pp;
			*pp = gi;
		}
	free(old);
}

/* g->lock held. */
struct ginode *guarded_inode_find(struct ext3_guarded *g, uint32_t ino)
{
	struct ginode *gi = *bucket(g, ino);
	while (gi && gi->ino != ino)
		gi = gi->hnext;
	return gi;
}

/* g->lock held. */
struct ginode *guarded_inode_get(struct ext3_guarded *g, struct ext3_inode *in)
{
	struct ginode *gi = guarded_inode_find(g, in->ino);
	if (gi)
		return gi;
	gi = calloc(1, sizeof *gi);
	if (!gi)
		return NULL;
	gi->ino = in->ino;
	gi->in = in;
	gi->hnext = *bucket(g, in->ino);
	*bucket(g, in->ino) = gi;
	g->nstates++;
	hash_grow(g);
	return gi;
}

/* g->lock held. */
void guarded_inode_unhash(struct ext3_guarded *g, struct ginode *gi)
{
	struct ginode **pp = bucket(g, gi->ino);
	while (*pp && *pp != gi)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = gi->hnext;
		g->nstates--;
	}
}
