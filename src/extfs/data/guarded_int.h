/* Private to data=guarded's two files: guarded_ext.c (the per-inode extent
 * state and the mount's hash of it) and guarded.c (the mode's table and the
 * hooks it names, the logger thread, fsync, create/destroy). Nothing else
 * includes it: the rest of ext3 goes through the table (core/data_ops.h),
 * the tests through guarded.h. See docs/write-guarded.md.
 *
 * Locking: g->lock (struct ext3_guarded) is the one mount-wide mutex of the
 * state, a leaf: it protects the hash, every range array, the logger queue,
 * the flags marked g->lock and the statistics, and is never held across
 * I/O, a handle or another lock. Every guarded_ext_* and guarded_inode_*
 * function runs with it held; none of them blocks or takes a lock.
 */
#ifndef NOSTALL_EXT3_GUARDED_INT_H
#define NOSTALL_EXT3_GUARDED_INT_H

#include "extfs/data/guarded.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Buckets of the hash of per-inode states (by inode number) at first; it
 * doubles when the states outnumber twice its buckets (a create storm keeps
 * one state per file whose size is not logged yet: thousands). */
#define GUARD_BUCKETS 256u

struct gext {
	uint64_t start, end; /* pages [start, end) */
	int err;             /* 0 pending, < 0 failed */
};

struct ginode {
	uint32_t ino;
	struct ext3_inode *in;       /* valid until ext3_guarded_evict */
	struct ginode *hnext, *qnext;
	struct gext *ext;            /* sorted, disjoint; g->lock */
	size_t n, cap;
	bool hole_fill;              /* a hole was filled in this chunk (in->lock) */
	bool tail_pending;           /* truncated inside a block: its zeroed tail may
				      * not be on disk yet (g->lock) */
	bool orphaned;               /* on the orphan list for its extents (in->lock;
				      * written under g->lock too: the compiler may
				      * read it with queue_add's flags, TSan saw) */
	bool queued, busy, dying;    /* logger queue / being logged / evicting (g->lock) */
};

struct ext3_guarded {
	struct ext3_fs *fs;
	pthread_mutex_t lock;        /* leaf: hash, ranges, queue, flags, stats */
	pthread_cond_t cond;         /* queue work, busy cleared, queue empty */
	struct ginode **hash;        /* [nbuckets], a power of two */
	size_t nbuckets, nstates;
	struct ginode *qhead, *qtail;
	bool stop, running;
	struct ginode *logging;      /* the inode the logger works on, until its
				      * reference is put */
	ext3_guarded_log_hook_fn log_hook; /* tests: called under in->lock */
	void *log_hook_arg;
	pthread_t logger;
	struct ext3_guarded_stats st;
};

/* ---- extents (guarded_ext.c; g->lock held) ---- */

/* Page idx becomes pending (merged into a pending neighbour). Called by the
 * writer only (in->lock as writer): extents only appear under in->lock. 0 or
 * -ENOMEM. */
int guarded_ext_add(struct ginode *gi, uint64_t idx);
/* Pages [first, last] were written with err: remove (err 0) or fail the
 * extents they cover, whatever their state. Adds the pages met to *done /
 * *failed. */
void guarded_ext_complete(struct ginode *gi, uint64_t first, uint64_t last, int err, uint64_t *done,
			  uint64_t *failed);
/* Drop every extent at or past page idx. */
void guarded_ext_drop_from(struct ginode *gi, uint64_t idx);
/* The first extent's start page (the lowest the size must not pass yet);
 * UINT64_MAX with no extent or no state (gi NULL). */
uint64_t guarded_ext_low(const struct ginode *gi);
/* A failed extent starting below page `below`? (gi may be NULL.) */
bool guarded_ext_failed_below(const struct ginode *gi, uint64_t below);

/* ---- the per-inode states, by inode number (guarded_ext.c; g->lock held) ---- */

/* The state of inode number ino, or NULL. It may be a former inode's of the
 * same number: callers that care compare gi->in. */
struct ginode *guarded_inode_find(struct ext3_guarded *g, uint32_t ino);
/* The state of in, created (empty) when missing; NULL without memory. */
struct ginode *guarded_inode_get(struct ext3_guarded *g, struct ext3_inode *in);
/* Take gi out of the hash (the caller frees it). */
void guarded_inode_unhash(struct ext3_guarded *g, struct ginode *gi);

#endif
