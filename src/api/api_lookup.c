/* Public API: FUSE lookup counts (nostall_lookup_ref, nostall_forget). The
 * mount keeps a table ino -> count (32 bytes an entry). A linked inode's
 * entry holds no ext3 inode reference: the inode cache evicts it like any
 * other once nobody has it open (its bound, not the number of inodes the
 * kernel knows, sets the memory), and the next request by number reads it
 * again. An unlinked inode the kernel still knows must stay (on the orphan
 * list, readable by number through lref_live) until the kernel forgets it,
 * as the kernel's dentry keeps it: its entry then holds one reference
 * (`in`), taken over from the last ext3_iput (keep_unlinked, the inode
 * cache's keeper) or, for an inode already unlinked when its lookup is
 * counted, taken here (api_lookup_take). forget drops it with the entry.
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
	struct ext3_inode *in; /* the table's reference: unlinked inodes only, else NULL */
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

/* Caller holds lookup_lock. */
static struct api_lref *lref_find(struct nostall_fs *fs, uint64_t ino)
{
	if (!fs->nlref_buckets || ino > UINT32_MAX)
		return NULL;
	struct api_lref *e = fs->lref[bucket(fs, (uint32_t)ino)];
	while (e && e->ino != ino)
		e = e->next;
	return e;
}

/* in (referenced by the caller) is unlinked: its entry, if any, keeps it.
 * `ref` is a reference of the caller's to give; returns it when the entry
 * did not take it (none, or it holds one already). */
static struct ext3_inode *lref_pin(struct nostall_fs *fs, struct ext3_inode *in,
				   struct ext3_inode *ref)
{
	pthread_mutex_lock(&fs->lookup_lock);
	struct api_lref *e = lref_find(fs, ext3_inode_ino(in));
	if (e && !e->in) {
		e->in = ref;
		ref = NULL;
	}
	pthread_mutex_unlock(&fs->lookup_lock);
	return ref;
}

/* The inode cache's keeper (ext3_fs_set_unlinked_keeper): the last
 * reference of an unlinked inode, kept while the kernel still counts a
 * lookup on it. */
static bool keep_unlinked(void *arg, struct ext3_inode *in)
{
	return lref_pin(arg, in, in) == NULL;
}

void api_lookup_init(struct nostall_fs *fs)
{
	pthread_mutex_init(&fs->lookup_lock, NULL);
	if (fs->rw)
		ext3_fs_set_unlinked_keeper(fs->e, keep_unlinked, fs);
}

int api_lookup_take(struct nostall_fs *fs, struct ext3_inode *in)
{
	uint32_t ino = ext3_inode_ino(in);
	struct api_lref *fresh = malloc(sizeof *fresh);
	if (!fresh)
		return err_set(-ENOMEM, "out of memory");
	pthread_mutex_lock(&fs->lookup_lock);
	lref_grow(fs);
	struct api_lref *e = lref_find(fs, ino);
	if (e) {
		e->count++;
	} else if (fs->nlref_buckets) {
		size_t b = bucket(fs, ino);
		*fresh = (struct api_lref){ .ino = ino, .count = 1, .next = fs->lref[b] };
		fs->lref[b] = fresh;
		fs->nlref++;
		fresh = NULL;
	}
	bool nomem = !e && fresh;
	pthread_mutex_unlock(&fs->lookup_lock);
	free(fresh);
	if (nomem)
		return err_set(-ENOMEM, "out of memory");
	/* Already unlinked (a lookup by number of an inode the kernel still
	 * knows, or one that lost its last name since it was found): its last
	 * put may have come and gone before the entry existed, so the entry
	 * takes its reference now, while the caller's keeps the inode. An
	 * unlink after this point finds the entry (its last put offers the
	 * reference to keep_unlinked). */
	if (fs->rw && !ext3_inode_in_use(in) && ext3_inode_mode(in))
		ext3_iput(lref_pin(fs, in, ext3_igrab(in)));
	return 0;
}

/* After a successful get (rc 0): one lookup reference on in and its
 * attributes into st; the caller's reference is dropped either way. */
static int ref_and_fill(struct nostall_fs *fs, int rc, struct ext3_inode *in,
			struct nostall_stat *st)
{
	if (!rc)
		rc = api_lookup_take(fs, in);
	if (!rc && st)
		api_stat_fill(fs, in, st);
	ext3_iput(in);
	return rc;
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
	return ref_and_fill(fs, rc, in, st);
}

int nostall_lookup_ref_ino(struct nostall_fs *fs, uint64_t ino, struct nostall_stat *st)
{
	struct ext3_inode *in = NULL;
	int rc = api_inode_get(fs, ino, &in); /* before in is read */
	return ref_and_fill(fs, rc, in, st);
}

void nostall_lookup_refs_live(struct nostall_fs *fs, int on)
{
	atomic_store(&fs->lref_live, on != 0);
}

bool api_lookup_held(struct nostall_fs *fs, uint64_t ino)
{
	pthread_mutex_lock(&fs->lookup_lock);
	bool held = lref_find(fs, ino) != NULL;
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
	ext3_iput(drop); /* NULL for a linked inode's entry */
}

void api_lookup_drop_all(struct nostall_fs *fs)
{
	ext3_fs_set_unlinked_keeper(fs->e, NULL, NULL); /* unmount: unlinked inodes go now */
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
