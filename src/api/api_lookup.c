/* Public API: FUSE lookup counts (nostall_lookup_ref, nostall_forget). The
 * mount keeps a table ino -> count; an entry holds one ext3 inode reference
 * while its count is non-zero, so an inode the kernel still knows stays in
 * memory (and, once unlinked, on the orphan list until forgotten).
 *
 * Locking: lookup_lock guards the table and is a leaf: references are
 * taken before it and dropped after it (a last ext3_iput of an unlinked
 * inode frees it, which runs journal handles). */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct api_lref {
	uint32_t ino;
	uint64_t count;
	struct ext3_inode *in; /* the table's reference */
	struct api_lref *next;
};

static size_t bucket(const struct nostall_fs *fs, uint32_t ino)
{
	return (ino * 2654435761u) % fs->nlref_buckets;
}

/* Double the buckets when the chains get long; best effort (a failed
 * allocation keeps the old table). Called with lookup_lock held. */
static void lref_grow(struct nostall_fs *fs)
{
	if (fs->nlref < 2 * fs->nlref_buckets)
		return;
	size_t n = fs->nlref_buckets ? 2 * fs->nlref_buckets : 64;
	struct api_lref **nb = calloc(n, sizeof *nb);
	if (!nb)
		return;
	size_t old = fs->nlref_buckets;
	struct api_lref **ob = fs->lref;
	fs->lref = nb;
	fs->nlref_buckets = n;
	for (size_t i = 0; i < old; i++)
		for (struct api_lref *e = ob[i], *next; e; e = next) {
			next = e->next;
			size_t b = bucket(fs, e->ino);
			e->next = nb[b];
			nb[b] = e;
		}
	free(ob);
}

int api_lookup_take(struct nostall_fs *fs, struct ext3_inode *in)
{
	uint32_t ino = ext3_inode_ino(in);
	struct api_lref *fresh = malloc(sizeof *fresh);
	if (!fresh)
		return err_set(-ENOMEM, "out of memory");
	fresh->in = ext3_igrab(in);
	pthread_mutex_lock(&fs->lookup_lock);
	lref_grow(fs);
	struct api_lref *e = NULL;
	if (fs->nlref_buckets)
		for (e = fs->lref[bucket(fs, ino)]; e && e->ino != ino; e = e->next)
			;
	if (e) {
		e->count++;
	} else if (fs->nlref_buckets) {
		size_t b = bucket(fs, ino);
		*fresh = (struct api_lref){ .ino = ino, .count = 1, .in = fresh->in, .next = fs->lref[b] };
		fs->lref[b] = fresh;
		fs->nlref++;
		fresh = NULL;
	}
	bool nomem = !e && fresh;
	pthread_mutex_unlock(&fs->lookup_lock);
	if (fresh) {
		ext3_iput(fresh->in);
		free(fresh);
	}
	return nomem ? err_set(-ENOMEM, "out of memory") : 0;
}

int nostall_lookup_ref(struct nostall_fs *fs, uint64_t dir_ino, const char *name,
		       struct nostall_stat *st)
{
	struct api_parent p;
	int rc = api_at_parent(fs, dir_ino, name, &p);
	if (rc)
		return rc;
	struct ext3_inode *in = NULL;
	rc = api_parent_lookup(fs, &p, &in);
	api_parent_put(&p);
	if (!rc)
		rc = api_lookup_take(fs, in);
	if (!rc && st)
		api_stat_fill(fs, in, st);
	ext3_iput(in);
	return rc;
}

int nostall_lookup_ref_ino(struct nostall_fs *fs, uint64_t ino, struct nostall_stat *st)
{
	struct ext3_inode *in = NULL;
	int rc = api_inode_get(fs, ino, &in);
	if (!rc)
		rc = api_lookup_take(fs, in);
	if (!rc && st)
		api_stat_fill(fs, in, st);
	ext3_iput(in);
	return rc;
}

void nostall_lookup_refs_live(struct nostall_fs *fs, int on)
{
	atomic_store(&fs->lref_live, on != 0);
}

bool api_lookup_held(struct nostall_fs *fs, uint64_t ino)
{
	bool held = false;
	pthread_mutex_lock(&fs->lookup_lock);
	if (fs->nlref_buckets && ino <= UINT32_MAX) {
		struct api_lref *e = fs->lref[bucket(fs, (uint32_t)ino)];
		while (e && e->ino != ino)
			e = e->next;
		held = e != NULL;
	}
	pthread_mutex_unlock(&fs->lookup_lock);
	return held;
}

void nostall_forget(struct nostall_fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct ext3_inode *drop = NULL;
	pthread_mutex_lock(&fs->lookup_lock);
	if (fs->nlref_buckets && ino <= UINT32_MAX) {
		struct api_lref **pp = &fs->lref[bucket(fs, (uint32_t)ino)];
		while (*pp && (*pp)->ino != ino)
			pp = &(*pp)->next;
		struct api_lref *e = *pp;
		if (e && e->count > nlookup) {
			e->count -= nlookup;
		} else if (e) {
			*pp = e->next;
			fs->nlref--;
			drop = e->in;
			free(e);
		}
	}
	pthread_mutex_unlock(&fs->lookup_lock);
	ext3_iput(drop);
}

void api_lookup_drop_all(struct nostall_fs *fs)
{
	pthread_mutex_lock(&fs->lookup_lock);
	struct api_lref **b = fs->lref;
	size_t n = fs->nlref_buckets;
	fs->lref = NULL;
	fs->nlref_buckets = fs->nlref = 0;
	pthread_mutex_unlock(&fs->lookup_lock);
	for (size_t i = 0; i < n; i++)
		for (struct api_lref *e = b[i], *next; e; e = next) {
			next = e->next;
			ext3_iput(e->in);
			free(e);
		}
	free(b);
}
