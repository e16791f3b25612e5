/* The inode cache: one shared, reference-counted struct ext3_inode per
 * inode number (ext3.h, "inodes"; docs/ext3-read-path.md, "The inode
 * cache").
 *
 * A hash by inode number holds every cached inode; inodes whose last
 * reference was dropped also sit on an LRU list and are freed, oldest
 * first, when more than max_unused of them are cached. A miss reads the
 * inode without the cache lock and inserts it afterwards; if another thread
 * inserted the same inode meanwhile, its copy wins and ours is freed.
 *
 * Locking: icache.lock (a mutex) protects the hash, the LRU and every
 * inode's refs / hnext / lru links; it is a leaf lock, never held across I/O
 * or while taking another lock. Each inode's fields have their own lock
 * (in->lock). Lookup counts for FUSE (nlookup / forget) are kept by the
 * layer above per inode number; it holds one reference here while its count
 * is non-zero.
 */
#include "ext3/ext3_int.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ICACHE_BUCKETS 1024u
#define ICACHE_MAX_UNUSED 4096u /* unreferenced inodes kept */

int ext3_icache_init(struct ext3_fs *fs)
{
	struct ext3_icache *c = &fs->icache;
	c->hash = calloc(ICACHE_BUCKETS, sizeof *c->hash);
	if (!c->hash)
		return err_set(-ENOMEM, "ext3: out of memory for the inode cache");
	c->nbuckets = ICACHE_BUCKETS;
	c->max_unused = ICACHE_MAX_UNUSED;
	pthread_mutex_init(&c->lock, NULL);
	return 0;
}

static void inode_free(struct ext3_inode *in)
{
	pthread_rwlock_destroy(&in->lock);
	pthread_mutex_destroy(&in->map_lock);
	free(in);
}

void ext3_icache_destroy(struct ext3_fs *fs)
{
	struct ext3_icache *c = &fs->icache;
	if (!c->hash)
		return;
	for (unsigned b = 0; b < c->nbuckets; b++) {
		while (c->hash[b]) {
			struct ext3_inode *in = c->hash[b];
			c->hash[b] = in->hnext;
			inode_free(in);
		}
	}
	free(c->hash);
	c->hash = NULL;
	pthread_mutex_destroy(&c->lock);
}

static unsigned bucket(const struct ext3_icache *c, uint32_t ino)
{
	return (ino * 2654435761u) % c->nbuckets;
}

/* Caller holds c->lock. */
static void lru_unlink(struct ext3_icache *c, struct ext3_inode *in)
{
	if (in->lru_prev)
		in->lru_prev->lru_next = in->lru_next;
	else
		c->lru_head = in->lru_next;
	if (in->lru_next)
		in->lru_next->lru_prev = in->lru_prev;
	else
		c->lru_tail = in->lru_prev;
	in->lru_prev = in->lru_next = NULL;
	c->unused--;
}

/* Caller holds c->lock. Takes a reference to a cached inode. */
static struct ext3_inode *lookup_get(struct ext3_icache *c, uint32_t ino)
{
	for (struct ext3_inode *in = c->hash[bucket(c, ino)]; in; in = in->hnext) {
		if (in->ino != ino)
			continue;
		if (in->refs++ == 0)
			lru_unlink(c, in);
		return in;
	}
	return NULL;
}

/* Caller holds c->lock: remove from the hash (the inode is unreferenced). */
static void hash_remove(struct ext3_icache *c, struct ext3_inode *in)
{
	struct ext3_inode **pp = &c->hash[bucket(c, in->ino)];
	while (*pp != in)
		pp = &(*pp)->hnext;
	*pp = in->hnext;
	c->cached--;
}

int ext3_iget(struct ext3_fs *fs, uint32_t ino, struct ext3_inode **out)
{
	*out = NULL;
	if (ino == 0 || ino > fs->g.inodes_count)
		return err_set(-EINVAL, "ext3: inode %u out of range (1-%u)", ino, fs->g.inodes_count);
	struct ext3_icache *c = &fs->icache;
	pthread_mutex_lock(&c->lock);
	struct ext3_inode *in = lookup_get(c, ino);
	if (in)
		c->hits++;
	else
		c->misses++;
	pthread_mutex_unlock(&c->lock);
	if (in) {
		*out = in;
		return 0;
	}
	struct ext3_inode *fresh = calloc(1, sizeof *fresh + fs->g.inode_size);
	if (!fresh)
		return err_set(-ENOMEM, "ext3: out of memory for inode %u", ino);
	int rc = ext3_inode_load(fs, ino, fresh);
	if (rc) {
		free(fresh);
		return rc;
	}
	fresh->fs = fs;
	fresh->ino = ino;
	fresh->refs = 1;
	pthread_rwlock_init(&fresh->lock, NULL);
	pthread_mutex_init(&fresh->map_lock, NULL);
	atomic_init(&fresh->dirty_data, 0);
	pthread_mutex_lock(&c->lock);
	in = lookup_get(c, ino); /* another thread may have read it meanwhile */
	if (!in) {
		unsigned b = bucket(c, ino);
		fresh->hnext = c->hash[b];
		c->hash[b] = fresh;
		c->cached++;
		in = fresh;
		fresh = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (fresh)
		inode_free(fresh);
	*out = in;
	return 0;
}

struct ext3_inode *ext3_igrab(struct ext3_inode *in)
{
	struct ext3_icache *c = &in->fs->icache;
	pthread_mutex_lock(&c->lock);
	in->refs++;
	pthread_mutex_unlock(&c->lock);
	return in;
}

void ext3_iput(struct ext3_inode *in)
{
	if (!in)
		return;
	struct ext3_icache *c = &in->fs->icache;
	struct ext3_inode *victims = NULL;
	pthread_mutex_lock(&c->lock);
	if (--in->refs == 0) {
		in->lru_next = c->lru_head;
		in->lru_prev = NULL;
		if (c->lru_head)
			c->lru_head->lru_prev = in;
		else
			c->lru_tail = in;
		c->lru_head = in;
		c->unused++;
		/* Over the bound: evict the oldest unreferenced inodes. */
		while (c->unused > c->max_unused) {
			struct ext3_inode *v = c->lru_tail;
			lru_unlink(c, v);
			hash_remove(c, v);
			c->evictions++;
			v->hnext = victims;
			victims = v;
		}
	}
	pthread_mutex_unlock(&c->lock);
	while (victims) {
		struct ext3_inode *v = victims;
		victims = v->hnext;
		inode_free(v);
	}
}

void ext3_icache_stats(struct ext3_fs *fs, struct ext3_icache_stats *out)
{
	struct ext3_icache *c = &fs->icache;
	pthread_mutex_lock(&c->lock);
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	out->cached = c->cached;
	out->unused = c->unused;
	pthread_mutex_unlock(&c->lock);
}
