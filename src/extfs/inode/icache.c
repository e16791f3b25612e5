/* The inode cache: one shared, reference-counted struct ext3_inode per
 * inode number (ext3.h, "inodes"; docs/ext3-read-path.md, "The inode
 * cache").
 *
 * A hash by inode number holds every cached inode; inodes whose last
 * reference was dropped also sit on an LRU list and are freed, oldest
 * first, when more than max_unused of them are cached. A miss inserts the
 * new inode (marked `freeing`: others wait) and reads it without the cache
 * lock.
 *
 * Writable mounts (docs/write-inode.md, "Eviction"): when the last
 * reference to an unlinked inode (links 0) goes, ext3_iput frees it
 * (ext3_evict_inode: truncate, xattrs, the inode, the orphan list) before
 * dropping it; an inode leaving the cache otherwise (the LRU bound, unmount)
 * first hands its data to ext3_data_evict. Meanwhile the inode stays in the
 * hash marked `freeing`, and ext3_iget of its number waits for the end, so
 * nobody reads the inode from disk while its last state is being written.
 * A miss is marked the same way while it is read: one reader per number,
 * and nobody writes the slot it reads (the writer would need the inode).
 * Whoever drops the last reference must not hold the inode's lock (the
 * unlinked check then assumes the inode lives, and the next unmount or
 * orphan cleanup frees it). A keeper (ext3_fs_set_unlinked_keeper: the
 * FUSE lookup counts) is offered that last reference of an unlinked inode
 * first, and may keep it.
 *
 * Locking: icache.lock (a mutex) protects the hash, the LRU and every
 * inode's refs / hnext / lru links / freeing; it is a leaf lock, never held
 * across I/O or while taking another lock (the unlinked check only tries the
 * inode lock). Each inode's fields have their own lock
 * (in->lock). Lookup counts for FUSE (nlookup / forget) are kept by the
 * layer above per inode number and hold no reference here while the inode
 * is linked (so an inode the kernel knows is evicted like any other once
 * unreferenced: memory is bounded by max_unused, not by the kernel's
 * dentries); the keeper takes over the last reference of an unlinked one.
 * An unreferenced inode also gives up its block-map cache (lru_push).
 */
#include "extfs/inode/inode_write.h"
#include "extfs/core/data_ops.h"
#include "extfs/inode/bmap.h"
#include "page/page.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The lock classes of src/extfs (ext3_int.h; order: write.h). Without
 * -DNOSTALL_LOCKDEP these are declarations only. */
LOCKDEP_CLASS_DEFINE(ext3_lockdep_rename, "ext3 rename_lock", 0);
LOCKDEP_CLASS_DEFINE(ext3_lockdep_dir_inode, "ext3 directory inode", LOCKDEP_NEST_ASCENDING);
LOCKDEP_CLASS_DEFINE(ext3_lockdep_inode, "ext3 inode", LOCKDEP_NEST_ASCENDING);
LOCKDEP_CLASS_DEFINE(ext3_lockdep_group, "ext3 group lock", LOCKDEP_NEST_ASCENDING);
LOCKDEP_CLASS_DEFINE(ext3_lockdep_sb, "ext3 sb_lock", 0);

/* Twice the unreferenced inodes kept, a power of two: the cache holds
 * about max_unused inodes plus those in use, so chains stay under one
 * entry on average (each hop is a cache miss: a longer chain cost a
 * microsecond per lookup beside an unlink's few). */
#define ICACHE_BUCKET_BITS 13u
#define ICACHE_BUCKETS (1u << ICACHE_BUCKET_BITS)
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
	pthread_cond_init(&c->freed, NULL);
	return 0;
}

static void inode_free(struct ext3_inode *in)
{
	pthread_rwlock_destroy(&in->lock);
	pthread_mutex_destroy(&in->map_lock);
	ext3_inode_map_drop(in);
	free(in);
}

void ext3_fs_set_unlinked_keeper(struct ext3_fs *fs,
				 bool (*keep)(void *arg, struct ext3_inode *in), void *arg)
{
	struct ext3_icache *c = &fs->icache;
	pthread_mutex_lock(&c->lock);
	c->keep = keep;
	c->keep_arg = keep ? arg : NULL;
	pthread_mutex_unlock(&c->lock);
}

void ext3_icache_set_max_unused(struct ext3_fs *fs, unsigned max_unused)
{
	struct ext3_icache *c = &fs->icache;
	pthread_mutex_lock(&c->lock);
	c->max_unused = max_unused ? max_unused : 1;
	pthread_mutex_unlock(&c->lock);
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
	pthread_cond_destroy(&c->freed);
	pthread_mutex_destroy(&c->lock);
}

static unsigned bucket(const struct ext3_icache *c, uint32_t ino)
{
	/* Fibonacci hashing, the product's high bits: the low bits alone
	 * would put inode numbers a multiple of the bucket count apart (the
	 * same slot in each group's inode table, 8192 inodes per group) into
	 * one chain. */
	(void)c;
	return (ino * 2654435761u) >> (32 - ICACHE_BUCKET_BITS);
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

/* Caller holds c->lock. Takes a reference to a cached inode, waiting while
 * it is being evicted. */
static struct ext3_inode *lookup_get(struct ext3_icache *c, uint32_t ino)
{
again:
	for (struct ext3_inode *in = c->hash[bucket(c, ino)]; in; in = in->hnext) {
		if (in->ino != ino)
			continue;
		if (in->freeing) {
			pthread_cond_wait(&c->freed, &c->lock);
			goto again;
		}
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
	pthread_mutex_unlock(&c->lock);
	if (in) {
		*out = in;
		return 0;
	}
	struct ext3_inode *fresh = calloc(1, sizeof *fresh + fs->g.inode_size);
	if (!fresh)
		return err_set(-ENOMEM, "ext3: out of memory for inode %u", ino);
	fresh->fs = fs;
	fresh->ino = ino;
	fresh->refs = 1;
	fresh->freeing = true; /* being read: ext3_iget of its number waits */
	pthread_rwlock_init(&fresh->lock, NULL);
	pthread_mutex_init(&fresh->map_lock, NULL);
	atomic_init(&fresh->dirty_data, 0);
	/* In the hash before it is read: nobody else reads the number from
	 * disk meanwhile, so nobody can create (ext3_new_inode) and write an
	 * inode of that number while we read its slot. */
	pthread_mutex_lock(&c->lock);
	in = lookup_get(c, ino); /* another thread may have got there meanwhile */
	if (in) {
		c->hits++;
	} else {
		c->misses++;
		unsigned b = bucket(c, ino);
		fresh->hnext = c->hash[b];
		c->hash[b] = fresh;
		c->cached++;
	}
	pthread_mutex_unlock(&c->lock);
	if (in) {
		inode_free(fresh);
		*out = in;
		return 0;
	}
	int rc = ext3_inode_load(fs, ino, fresh);
	pthread_mutex_lock(&c->lock);
	if (rc)
		hash_remove(c, fresh);
	fresh->freeing = false;
	pthread_cond_broadcast(&c->freed);
	pthread_mutex_unlock(&c->lock);
	if (rc) {
		inode_free(fresh);
		return rc;
	}
	*out = fresh;
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

struct ext3_inode *ext3_igrab_live(struct ext3_inode *in)
{
	struct ext3_icache *c = &in->fs->icache;
	pthread_mutex_lock(&c->lock);
	bool live = !in->freeing;
	if (live && in->refs++ == 0)
		lru_unlink(c, in);
	pthread_mutex_unlock(&c->lock);
	return live ? in : NULL;
}

/* Unlinked and in use (a free inode read by number has mode 0)? Caller
 * holds c->lock; only tries the inode lock (a holder means a live user). */
static bool inode_unlinked(struct ext3_inode *in)
{
	if (pthread_rwlock_tryrdlock(&in->lock))
		return false;
	bool dead = in->a.links == 0 && in->a.mode != 0;
	pthread_rwlock_unlock(&in->lock); /* a try under c->lock: nothing for lockdep */
	return dead;
}

/* The inode (in the hash, freeing, one reference: ours) has been evicted:
 * drop it from the hash and free it. */
static void evicted_drop(struct ext3_icache *c, struct ext3_inode *in)
{
	pthread_mutex_lock(&c->lock);
	hash_remove(c, in);
	in->freeing = false;
	in->refs = 0;
	pthread_cond_broadcast(&c->freed);
	pthread_mutex_unlock(&c->lock);
	inode_free(in);
}

/* Caller holds c->lock: in (unreferenced) becomes the LRU's youngest. Its
 * block-map cache goes (4 KiB; the next reader allocates it again): nobody
 * holds a reference, so nobody is under its map_lock. */
static void lru_push(struct ext3_icache *c, struct ext3_inode *in)
{
	ext3_inode_map_drop(in);
	in->lru_next = c->lru_head;
	in->lru_prev = NULL;
	if (c->lru_head)
		c->lru_head->lru_prev = in;
	else
		c->lru_tail = in;
	c->lru_head = in;
	c->unused++;
}

/* An LRU victim (freeing, our reference) whose data is still on its way -
 * dirty pages, or under data=guarded a size not logged yet - is spared:
 * evicting it would write that data and wait for it (ext3_data_evict), a
 * device round trip per file once a workload has made more than
 * max_unused small files. Its writeback is started instead and it goes
 * back to the LRU's young end; the dirty-data limit, not max_unused, then
 * bounds such inodes, as the kernel's inode reclaim passes over inodes
 * with dirty pages. Returns true when spared (our reference is dropped:
 * the inode is findable, unreferenced on the LRU unless someone took it
 * meanwhile). */
static bool victim_spare(struct ext3_icache *c, struct ext3_inode *v)
{
	ext3_inode_rdlock(v);
	bool dirty = v->a.links && v->mapping && page_mapping_nr_dirty(v->mapping) > 0;
	bool unsettled = v->a.links && !ext3_dops_settled(v);
	ext3_inode_unlock(v);
	if (!dirty && !unsettled)
		return false;
	if (dirty)
		(void)ext3_data_flush_start(v); /* errors: reported by the next fsync or eviction */
	/* Findable again, still with our reference: once unreferenced on the
	 * LRU another thread's put may evict and free it, so the requeue below
	 * must come first. */
	pthread_mutex_lock(&c->lock);
	v->freeing = false;
	v->refs = 1;
	c->evictions--; /* counted when it was picked */
	c->spared++;
	pthread_cond_broadcast(&c->freed);
	pthread_mutex_unlock(&c->lock);
	/* The logger skips an inode being evicted (its eviction logs the
	 * size): queue it again now that it stays - unless its writeback was
	 * just started, whose completion queues it (a requeue then only made
	 * the logger's own put spare the next dirty victim, and so on: the
	 * logger spun through every dirty inode until the flusher caught up). */
	if (unsettled && !dirty)
		ext3_dops_requeue(v);
	pthread_mutex_lock(&c->lock);
	if (--v->refs == 0)
		lru_push(c, v);
	pthread_mutex_unlock(&c->lock);
	return true;
}

/* Caller holds c->lock; in is unlinked and its last reference was just
 * dropped. Offers that reference to the keeper (ext3_fs_set_unlinked_keeper)
 * without the lock: true when the keeper took it, or someone took another
 * reference meanwhile (that one's put decides again), with c->lock
 * released; false with c->lock held and in still unreferenced. Links never
 * come back from 0 (ext3_link refuses), so in stays unlinked. */
static bool keep_offer(struct ext3_icache *c, struct ext3_inode *in)
{
	bool (*keep)(void *, struct ext3_inode *) = c->keep;
	void *arg = c->keep_arg;
	if (!keep)
		return false;
	in->refs = 1; /* findable meanwhile (not freeing): an iget just takes another */
	pthread_mutex_unlock(&c->lock);
	if (keep(arg, in))
		return true;
	pthread_mutex_lock(&c->lock);
	if (--in->refs > 0) {
		pthread_mutex_unlock(&c->lock);
		return true;
	}
	return false;
}

void ext3_iput(struct ext3_inode *in)
{
	if (!in)
		return;
	struct ext3_fs *fs = in->fs;
	struct ext3_icache *c = &fs->icache;
	struct ext3_inode *victims = NULL;
	pthread_mutex_lock(&c->lock);
	if (--in->refs > 0) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (fs->writable && inode_unlinked(in)) {
		if (keep_offer(c, in))
			return;
		in->refs = 1;
		in->freeing = true;
		pthread_mutex_unlock(&c->lock);
		(void)ext3_evict_inode(in); /* errors: reported; the next mount finishes */
		evicted_drop(c, in);
		return;
	}
	lru_push(c, in);
	/* Over the bound: evict the oldest unreferenced inodes. */
	while (c->unused > c->max_unused) {
		struct ext3_inode *v = c->lru_tail;
		lru_unlink(c, v);
		c->evictions++;
		if (fs->writable) { /* stays findable (freeing) until its data is out */
			v->refs = 1;
			v->freeing = true;
		} else {
			hash_remove(c, v);
		}
		v->lru_next = victims;
		victims = v;
	}
	pthread_mutex_unlock(&c->lock);
	while (victims) {
		struct ext3_inode *v = victims;
		victims = v->lru_next;
		v->lru_next = NULL;
		if (fs->writable) {
			if (victim_spare(c, v))
				continue;
			(void)ext3_evict_inode(v);
			evicted_drop(c, v);
		} else {
			inode_free(v);
		}
	}
}

void ext3_icache_evict_all(struct ext3_fs *fs)
{
	struct ext3_icache *c = &fs->icache;
	if (!c->hash)
		return;
	/* Unmount: single-threaded; every reference should be put. Unlinked
	 * inodes are freed, the others hand their data back. */
	for (unsigned b = 0; b < c->nbuckets; b++)
		for (struct ext3_inode *in = c->hash[b]; in; in = in->hnext)
			(void)ext3_evict_inode(in);
}

void ext3_icache_stats(struct ext3_fs *fs, struct ext3_icache_stats *out)
{
	struct ext3_icache *c = &fs->icache;
	pthread_mutex_lock(&c->lock);
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	out->spared = c->spared;
	out->cached = c->cached;
	out->unused = c->unused;
	pthread_mutex_unlock(&c->lock);
}
