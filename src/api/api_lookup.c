/* Public API: FUSE lookup counts (nostall_lookup_ref, nostall_forget). The
 * mount keeps a table ino -> count (about 21 bytes an entry). A linked
 * inode's entry holds no ext3 inode reference: the inode cache evicts it like any
 * other once nobody has it open (its bound, not the number of inodes the
 * kernel knows, sets the memory), and the next request by number reads it
 * again. An unlinked inode the kernel still knows must stay (on the orphan
 * list, readable by number through lref_live) until the kernel forgets it,
 * as the kernel's dentry keeps it: its entry then holds one reference
 * (a pin), taken over from the last ext3_iput (keep_unlinked, the inode
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

/* The table: open addressing with linear probing, 16 bytes a slot, at most
 * 7/8 full (about 21 bytes an inode); ino 0 = empty. An entry whose inode
 * is unlinked holds a reference, kept beside it in a small chained hash of
 * pins (unlinked inodes the kernel still knows are few). */
struct api_lref {
	uint32_t ino;
	bool pinned;    /* its reference is in pins */
	uint64_t count;
};

struct api_lpin {
	uint32_t ino;
	struct ext3_inode *in; /* the table's reference */
	struct api_lpin *next;
};

#define LREF_MIN 1024u
#define LPIN_BUCKETS 64u

/* Fibonacci hashing: the top bits of ino * 2^32/phi, which spreads runs of
 * consecutive numbers over the table. */
static size_t home(const struct nostall_fs *fs, uint32_t ino)
{
	unsigned bits = (unsigned)__builtin_ctzl(fs->nlref_slots);
	return (size_t)((uint32_t)(ino * 2654435769u) >> (32 - bits));
}

/* Caller holds lookup_lock: the slot of ino, or NULL. */
static struct api_lref *lref_find(struct nostall_fs *fs, uint64_t ino)
{
	if (!fs->nlref_slots || ino == 0 || ino > UINT32_MAX)
		return NULL;
	size_t mask = fs->nlref_slots - 1;
	for (size_t i = home(fs, (uint32_t)ino);; i = (i + 1) & mask) {
		if (fs->lref[i].ino == ino)
			return &fs->lref[i];
		if (fs->lref[i].ino == 0)
			return NULL;
	}
}

/* Caller holds lookup_lock: the empty slot where ino goes (not present). */
static struct api_lref *lref_hole(struct nostall_fs *fs, uint32_t ino)
{
	size_t mask = fs->nlref_slots - 1, i = home(fs, ino);
	while (fs->lref[i].ino)
		i = (i + 1) & mask;
	return &fs->lref[i];
}

/* Room for one more entry: doubles the table past 7/8. Caller holds
 * lookup_lock. -ENOMEM only when full and no bigger table can be had. */
static int lref_room(struct nostall_fs *fs)
{
	size_t n = fs->nlref_slots;
	if (n && (fs->nlref + 1) * 8 <= n * 7)
		return 0;
	size_t nn = n ? 2 * n : LREF_MIN;
	struct api_lref *nt = calloc(nn, sizeof *nt);
	if (!nt)
		return fs->nlref + 1 < n ? 0 : -ENOMEM; /* fuller, but still a hole */
	struct api_lref *old = fs->lref;
	fs->lref = nt;
	fs->nlref_slots = nn;
	for (size_t i = 0; i < n; i++)
		if (old[i].ino)
			*lref_hole(fs, old[i].ino) = old[i];
	free(old);
	return 0;
}

/* Caller holds lookup_lock: empty slot e, moving back the entries of its
 * probe run that would no longer be found (backward-shift deletion). */
static void lref_remove(struct nostall_fs *fs, struct api_lref *e)
{
	size_t mask = fs->nlref_slots - 1, i = (size_t)(e - fs->lref), j = i;
	for (;;) {
		j = (j + 1) & mask;
		uint32_t ino = fs->lref[j].ino;
		if (!ino)
			break;
		size_t k = home(fs, ino);
		/* stays when its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		fs->lref[i] = fs->lref[j];
		i = j;
	}
	fs->lref[i] = (struct api_lref){0};
	fs->nlref--;
}

/* Caller holds lookup_lock: take ino's pin out of the pins (NULL: none). */
static struct ext3_inode *lpin_take(struct nostall_fs *fs, uint32_t ino)
{
	if (!fs->lpins)
		return NULL;
	for (struct api_lpin **pp = &fs->lpins[ino % LPIN_BUCKETS]; *pp; pp = &(*pp)->next)
		if ((*pp)->ino == ino) {
			struct api_lpin *p = *pp;
			struct ext3_inode *in = p->in;
			*pp = p->next;
			free(p);
			return in;
		}
	return NULL;
}

/* in (referenced by the caller) is unlinked: its entry, if any, keeps it.
 * `ref` is a reference of the caller's to give; returns it when the entry
 * did not take it (none, it holds one already, or no memory for the pin:
 * the inode then goes at its last put, as if forgotten). */
static struct ext3_inode *lref_pin(struct nostall_fs *fs, struct ext3_inode *in,
				   struct ext3_inode *ref)
{
	uint32_t ino = ext3_inode_ino(in);
	struct api_lpin *p = malloc(sizeof *p);
	pthread_mutex_lock(&fs->lookup_lock);
	struct api_lref *e = lref_find(fs, ino);
	if (e && !e->pinned && p && !fs->lpins)
		fs->lpins = calloc(LPIN_BUCKETS, sizeof *fs->lpins);
	if (e && !e->pinned && p && fs->lpins) {
		*p = (struct api_lpin){ .ino = ino, .in = ref, .next = fs->lpins[ino % LPIN_BUCKETS] };
		fs->lpins[ino % LPIN_BUCKETS] = p;
		e->pinned = true;
		ref = NULL;
		p = NULL;
	}
	pthread_mutex_unlock(&fs->lookup_lock);
	free(p);
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
	pthread_mutex_lock(&fs->lookup_lock);
	struct api_lref *e = lref_find(fs, ino);
	int rc = 0;
	if (e) {
		e->count++;
	} else if (!(rc = lref_room(fs))) {
		*lref_hole(fs, ino) = (struct api_lref){ .ino = ino, .count = 1 };
		fs->nlref++;
	}
	pthread_mutex_unlock(&fs->lookup_lock);
	if (rc)
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
	struct api_lref *e = lref_find(fs, ino);
	if (e && e->count > nlookup) {
		e->count -= nlookup;
	} else if (e) {
		if (e->pinned)
			drop = lpin_take(fs, e->ino);
		lref_remove(fs, e);
	}
	pthread_mutex_unlock(&fs->lookup_lock);
	ext3_iput(drop); /* NULL for a linked inode's entry */
}

void api_lookup_drop_all(struct nostall_fs *fs)
{
	ext3_fs_set_unlinked_keeper(fs->e, NULL, NULL); /* unmount: unlinked inodes go now */
	pthread_mutex_lock(&fs->lookup_lock);
	struct api_lpin **pins = fs->lpins;
	free(fs->lref);
	fs->lref = NULL;
	fs->lpins = NULL;
	fs->nlref_slots = fs->nlref = 0;
	pthread_mutex_unlock(&fs->lookup_lock);
	for (size_t b = 0; pins && b < LPIN_BUCKETS; b++)
		for (struct api_lpin *p = pins[b], *next; p; p = next) {
			next = p->next;
			ext3_iput(p->in);
			free(p);
		}
	free(pins);
}
