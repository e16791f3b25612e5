/* ext3 orphan list and the freeing of unlinked inodes (write.h, "inodes";
 * docs/write-inode.md, "Orphans").
 *
 * On disk the list starts at the superblock's s_last_orphan and goes on
 * through each orphan's i_dtime (the next orphan's number, 0 at the end).
 * In memory fs->orphans holds the same inodes in the same order, linked by
 * orphan_next and back by orphan_prev (a deletion from the middle does not
 * walk the list, which guarded mode's one entry per growing file makes
 * long); an orphan's on-disk i_dtime is always written from its
 * in-memory successor (inode_write.c), so the two never disagree. New
 * orphans go at the head; a deletion from the middle rewrites the
 * predecessor's i_dtime (without its inode lock: only that field, under
 * fs->orphan_lock), a deletion of the head rewrites s_last_orphan.
 *
 * Locking: fs->orphan_lock protects fs->orphans, every orphan_next/_prev and the
 * orphans' on-disk i_dtime. It is taken after the inode lock and the
 * journal handle, before group locks and fs->sb_lock; an inode's on_orphan
 * changes under its own lock (writer) and fs->orphan_lock, so either one
 * lets a thread read it.
 */
#include "extfs/inode/inode_write.h"
#include "extfs/core/uninit.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t orphan_head_ino(const struct ext3_fs *fs)
{
	return fs->orphans ? fs->orphans->ino : 0;
}

/* s_last_orphan = the in-memory head. Caller holds fs->orphan_lock. */
static int orphan_head_write(struct jbd_handle *h, struct ext3_fs *fs)
{
	pthread_mutex_lock(&fs->sb_lock);
	fs->sb.s_last_orphan = cpu_to_le32(orphan_head_ino(fs));
	pthread_mutex_unlock(&fs->sb_lock);
	return ext3_super_dirty(h, fs);
}

int ext3_orphan_add(struct jbd_handle *h, struct ext3_inode *in)
{
	struct ext3_fs *fs = in->fs;
	pthread_mutex_lock(&fs->orphan_lock);
	if (in->on_orphan) {
		pthread_mutex_unlock(&fs->orphan_lock);
		return 0;
	}
	in->orphan_next = fs->orphans;
	in->orphan_prev = NULL;
	if (fs->orphans)
		fs->orphans->orphan_prev = in;
	fs->orphans = in;
	in->on_orphan = true;
	int rc = ext3_inode_write_raw(h, in, true);
	if (!rc)
		rc = orphan_head_write(h, fs);
	if (rc) { /* the journal is aborted: keep memory as it was */
		fs->orphans = in->orphan_next;
		if (fs->orphans)
			fs->orphans->orphan_prev = NULL;
		in->orphan_next = NULL;
		in->on_orphan = false;
	}
	pthread_mutex_unlock(&fs->orphan_lock);
	return rc;
}

/* Take in out of the in-memory list. Caller holds fs->orphan_lock. */
static void orphan_unlink(struct ext3_fs *fs, struct ext3_inode *in)
{
	if (in->orphan_prev)
		in->orphan_prev->orphan_next = in->orphan_next;
	else if (fs->orphans == in)
		fs->orphans = in->orphan_next;
	if (in->orphan_next)
		in->orphan_next->orphan_prev = in->orphan_prev;
}

int ext3_orphan_del(struct jbd_handle *h, struct ext3_inode *in)
{
	struct ext3_fs *fs = in->fs;
	pthread_mutex_lock(&fs->orphan_lock);
	if (!in->on_orphan) {
		pthread_mutex_unlock(&fs->orphan_lock);
		return 0;
	}
	struct ext3_inode *prev = in->orphan_prev;
	int rc = 0;
	if (prev ? prev->orphan_next != in : fs->orphans != in) { /* a bug, keep going */
		rc = err_set(-EUCLEAN, "ext3: inode %u marked orphan but not on the list", in->ino);
	} else {
		orphan_unlink(fs, in);
		rc = prev ? ext3_inode_write_orphan_next(h, prev) : orphan_head_write(h, fs);
	}
	in->orphan_next = in->orphan_prev = NULL;
	in->on_orphan = false;
	in->a.dtime = 0;
	if (!rc)
		rc = ext3_inode_write_raw(h, in, true);
	pthread_mutex_unlock(&fs->orphan_lock);
	return rc;
}

/* Off the in-memory list only (the on-disk one keeps it). Caller holds
 * fs->orphan_lock. */
static void orphan_forget_locked(struct ext3_fs *fs, struct ext3_inode *in)
{
	if (in->on_orphan)
		orphan_unlink(fs, in);
	in->orphan_next = in->orphan_prev = NULL;
	in->on_orphan = false;
}

void ext3_orphan_forget(struct ext3_inode *in)
{
	struct ext3_fs *fs = in->fs;
	pthread_mutex_lock(&fs->orphan_lock);
	orphan_forget_locked(fs, in);
	pthread_mutex_unlock(&fs->orphan_lock);
}

int ext3_inode_bitmap_test(struct ext3_fs *fs, uint32_t ino, bool *in_use)
{
	*in_use = false;
	if (ino == 0 || ino > fs->g.inodes_count)
		return err_set(-EUCLEAN, "ext3: inode %u out of range", ino);
	uint32_t g = ext3_geom_group_of_ino(&fs->g, ino);
	uint32_t idx = ext3_geom_ino_index(&fs->g, ino);
	struct buffer_head *bh;
	int rc = ext3_bread(fs, fs->gd[g].bg_inode_bitmap, "inode bitmap", &bh);
	if (rc)
		return rc;
	const uint8_t *bits = buf_data(bh);
	/* The allocator changes the bitmap under the group lock. */
	pthread_mutex_lock(&fs->group_locks[g]);
	/* INODE_UNINIT (ext4): the bitmap on disk means nothing, no inode of
	 * the group is in use */
	*in_use = !ext4_group_bitmap_uninit(fs, g, true) && ((bits[idx / 8] >> (idx % 8)) & 1);
	pthread_mutex_unlock(&fs->group_locks[g]);
	buf_put(bh);
	return 0;
}

/* ---- freeing an unlinked inode ---- */

/* Credits for the last transaction of a deletion: the xattr block's
 * release, the orphan list (inode, predecessor, superblock), the inode's
 * bitmap and descriptor. */
static int evict_credits(struct ext3_fs *fs)
{
	return ext3_credits_xattr(fs) + 6;
}

int ext3_evict_inode(struct ext3_inode *in)
{
	struct ext3_fs *fs = in->fs;
	pthread_rwlock_wrlock(&in->lock);
	ext3_rsv_discard(in); /* leaving the cache: its window would stay reserved */
	/* Dead: unlinked here, so on the in-memory orphan list (every unlink
	 * and the mount's orphan cleanup put it there). An inode read from
	 * disk with no links is a stale number (a deleted inode looked up by
	 * number): it owns nothing; its number may be being claimed again by
	 * ext3_new_inode right now (the bitmap then says used), so freeing it
	 * would free the new inode's number and, through the stale block map,
	 * blocks that belong to others. */
	bool dead = in->a.links == 0 && in->a.mode != 0 && in->on_orphan;
	int rc = 0;
	if (dead && ext3_fs_writable(fs)) {
		bool used = false;
		rc = ext3_inode_bitmap_test(fs, in->ino, &used);
		if (!rc && !used) { /* unlinked here, yet free: a corrupt bitmap */
			dead = false;
			rc = ext3_fs_error(fs, "inode %u: unlinked but already free in the inode bitmap",
					   in->ino);
		}
	}
	if (!dead || rc || !ext3_fs_writable(fs)) {
		/* Live, or read-only now, or an error (an unlinked inode then
		 * stays on the on-disk orphan list for the next mount). */
		pthread_rwlock_unlock(&in->lock);
		if (in->mapping || in->jinode)
			ext3_data_evict(in);
		/* The struct is about to go: it must not stay on the in-memory
		 * list (the next orphan_add would link to freed memory). */
		pthread_rwlock_wrlock(&in->lock);
		ext3_orphan_forget(in);
		pthread_rwlock_unlock(&in->lock);
		return rc;
	}
	rc = ext3_truncate(in, 0);
	pthread_rwlock_unlock(&in->lock);
	if (in->mapping || in->jinode)
		ext3_data_evict(in);
	pthread_rwlock_wrlock(&in->lock);
	if (!rc) {
		struct jbd_handle *h;
		rc = ext3_journal_start(fs, evict_credits(fs), &h);
		if (!rc) {
			if (in->a.file_acl)
				rc = ext3_xattr_drop(h, in);
			if (!rc)
				rc = ext3_orphan_del(h, in);
			if (!rc)
				rc = ext3_free_inode(h, in);
			int src = ext3_journal_stop(h);
			if (!rc)
				rc = src;
		}
	}
	if (rc && in->on_orphan) /* the struct is about to go */
		ext3_orphan_forget(in);
	pthread_rwlock_unlock(&in->lock);
	return rc;
}

/* ---- cleanup at mount ---- */

/* Read the on-disk chain into the in-memory list (each inode referenced),
 * checking every link: a number out of range, an inode not in use, or one
 * met twice ends the walk with ext3_fs_error (the valid prefix is still
 * processed). */
static int chain_load(struct ext3_fs *fs, unsigned *n)
{
	uint32_t ino = le32_to_cpu(fs->sb.s_last_orphan);
	struct ext3_inode *last = NULL; /* the list's tail: mount starts it empty */
	int rc = 0;
	while (ino && !rc) {
		if (*n >= fs->g.inodes_count || ino < fs->first_ino || ino > fs->g.inodes_count)
			return ext3_fs_error(fs, "orphan list: bad inode number %u", ino);
		bool used;
		rc = ext3_inode_bitmap_test(fs, ino, &used);
		if (rc)
			return rc;
		if (!used)
			return ext3_fs_error(fs, "orphan list: inode %u is not in use", ino);
		struct ext3_inode *in;
		rc = ext3_iget(fs, ino, &in);
		if (rc)
			return ext3_fs_error(fs, "orphan list: inode %u unreadable", ino);
		if (in->a.mode == 0) {
			/* A deleted inode (all zero, say) whose bitmap bit is
			 * set: nothing to truncate or free, and nothing to
			 * follow. Linux's ext4_orphan_get refuses it the same
			 * way (-ESTALE, "couldn't read orphan inode") and
			 * keeps the prefix. */
			ext3_iput(in);
			return ext3_fs_error(fs, "orphan list: inode %u is deleted (mode 0)", ino);
		}
		pthread_mutex_lock(&fs->orphan_lock);
		bool loop = in->on_orphan;
		if (!loop) {
			in->on_orphan = true;
			in->orphan_next = NULL;
			in->orphan_prev = last;
			if (last)
				last->orphan_next = in;
			else
				fs->orphans = in;
			last = in;
			(*n)++;
		}
		pthread_mutex_unlock(&fs->orphan_lock);
		uint32_t next = in->a.dtime;
		if (loop) {
			ext3_iput(in);
			return ext3_fs_error(fs, "orphan list: loop at inode %u", ino);
		}
		ino = next;
	}
	return rc;
}

int ext3_orphan_cleanup(struct ext3_fs *fs)
{
	if (!le32_to_cpu(fs->sb.s_last_orphan) || !ext3_fs_writable(fs))
		return 0;
	if (le16_to_cpu(fs->sb.s_state) & EXT3_ERROR_FS) {
		/* As the kernel: a filesystem with errors is left to e2fsck. */
		struct jbd_handle *h;
		int rc = ext3_journal_start(fs, 1, &h);
		if (rc)
			return rc;
		pthread_mutex_lock(&fs->orphan_lock);
		rc = orphan_head_write(h, fs);
		pthread_mutex_unlock(&fs->orphan_lock);
		int src = ext3_journal_stop(h);
		return rc ? rc : src;
	}
	unsigned n = 0;
	/* -EUCLEAN: reported (ext3_fs_error); the valid prefix is processed. */
	int lrc = chain_load(fs, &n);
	/* Process from the head: each one leaves the list (truncated ones in
	 * ext3_truncate, unlinked ones in their eviction at ext3_iput, which
	 * drops them from memory even when it fails). */
	int rc = 0;
	while (fs->orphans) {
		struct ext3_inode *in = fs->orphans;
		pthread_rwlock_wrlock(&in->lock);
		bool live = in->a.links != 0;
		int r = live ? ext3_truncate(in, in->i_disksize) : 0;
		pthread_rwlock_unlock(&in->lock);
		if (live && in->on_orphan) /* an error: give up on it in memory */
			ext3_orphan_forget(in);
		uint32_t ino = in->ino;
		ext3_iput(in); /* an unlinked one: evicted here, and off the list */
		/* Still at the head (its eviction did not run, or failed
		 * without dropping it): the loop must end all the same. It
		 * leaves the in-memory list; the on-disk one keeps it for the
		 * next mount. Compared by number: the struct may be gone. */
		pthread_mutex_lock(&fs->orphan_lock);
		struct ext3_inode *head = fs->orphans;
		bool stuck = head && head->ino == ino;
		if (stuck)
			orphan_forget_locked(fs, head);
		pthread_mutex_unlock(&fs->orphan_lock);
		if (stuck && !r)
			r = ext3_fs_error(fs, "orphan list: inode %u stayed on the list after its cleanup", ino);
		if (r && !rc)
			rc = r;
	}
	if (rc)
		return err_wrap(rc, "ext3: orphan cleanup");
	return lrc && lrc != -EUCLEAN ? lrc : 0;
}
