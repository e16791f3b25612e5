/* Writable mounts without a journal (write.h, "No-journal mounts";
 * docs/ext2-nojournal.md): the stand-in handle the ext3_journal_* calls
 * take on such a mount (trans.c dispatches), the metadata writeback and the
 * no-journal fsync's metadata step.
 *
 * The kernel's ext4 without a journal changes a metadata buffer in place
 * and marks it dirty; its flusher writes it whenever, even while another
 * thread changes it (a torn block on disk until the next write). Here the
 * buffers are written only with the writers kept out: every stand-in
 * handle holds the mount's writers' lock shared from its outermost start
 * to its stop, and a metadata write-out (fsync, sync(2), the flusher at
 * the page flusher's period, the unmount) holds it exclusive while it
 * writes and waits, so a block goes to disk as some handle left it, never
 * halfway through a change
 * - the stand-in's stop is the "commit" of its changes, as jbd's is. The
 * lock prefers writers: a stream of handles cannot starve an fsync.
 *
 * Locking: the writers' lock sits where jbd's handle sits in write.h's
 * order (after the inode locks, before page and group locks). A write-out
 * is never started by a thread holding a stand-in (the lock is not
 * recursive): fsync and sync hold none, the stand-in's own sync stop
 * releases it first.
 */
#include "extfs/core/nojournal.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "jbd/jbd.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>


struct ext3_nj {
	pthread_rwlock_t writers;   /* shared: a stand-in handle; exclusive: a write-out */
	pthread_mutex_t lock;       /* stop, below */
	pthread_cond_t wake;
	bool stop;
	pthread_t flusher;
	bool flusher_up;
};

/* The calling thread's stand-in: its address is the handle callers carry
 * (never dereferenced outside this file); depth counts nested starts. */
struct nj_handle {
	struct ext3_fs *fs;
	int depth;
	bool sync;
};
static _Thread_local struct nj_handle tl_nj;

struct jbd_handle *ext3_nj_any(void)
{
	return (struct jbd_handle *)(void *)&tl_nj;
}

bool ext3_handle_nojournal(const struct jbd_handle *h)
{
	return h && h == (const struct jbd_handle *)(const void *)&tl_nj;
}

struct jbd_handle *ext3_nj_current(void)
{
	return tl_nj.depth > 0 ? ext3_nj_any() : NULL;
}

void ext3_nj_set_sync(void)
{
	tl_nj.sync = true;
}

int ext3_nj_start(struct ext3_fs *fs, struct jbd_handle **out)
{
	*out = NULL;
	if (!fs->writable || !fs->nj)
		return err_set(-EROFS, "ext3: read-only mount");
	if (atomic_load(&fs->ro_forced))
		return err_set(-EROFS, "ext3: filesystem is read-only after an error");
	if (tl_nj.depth > 0 && tl_nj.fs != fs)
		return err_set(-EINVAL, "ext3: a handle of another mount is open in this thread");
	if (tl_nj.depth++ == 0) {
		/* checked in test builds as jbd's handle is: the same place in
		 * write.h's order, the same waits (a write-out for the
		 * open stand-ins, as a commit for the open handles) */
		lockdep_acquire(&jbd_lockdep_handle, &tl_nj, 0);
		pthread_rwlock_rdlock(&fs->nj->writers);
		tl_nj.fs = fs;
		tl_nj.sync = false;
	}
	*out = ext3_nj_any();
	return 0;
}

int ext3_nj_stop(void)
{
	struct ext3_fs *fs = tl_nj.fs;
	if (tl_nj.depth <= 0 || --tl_nj.depth > 0)
		return 0;
	bool sync = tl_nj.sync;
	tl_nj.fs = NULL;
	tl_nj.sync = false;
	if (!fs)
		return 0;
	pthread_rwlock_unlock(&fs->nj->writers);
	lockdep_release(&tl_nj);
	/* dirsync, chattr +S: the change is on disk when the call returns */
	return sync ? ext3_fs_sync_metadata(fs) : 0;
}

/* File data goes around the buffer cache: a cached copy of a freed block
 * must never be written over its next user. Its dirty state goes, and a
 * write of it already under way is waited for (bforget). */
int ext3_nj_forget_block(uint64_t block)
{
	struct ext3_fs *fs = tl_nj.fs;
	if (!fs)
		return 0;
	struct buffer_head *bh = buf_get(fs->cache, block, NULL);
	if (!bh)
		return 0; /* not cached (or no memory to say so): nothing to drop */
	(void)buf_test_clear_dirty(bh);
	buf_wait(bh);
	buf_put(bh);
	return 0;
}

/* Every dirty buffer written and waited for, no handle open meanwhile. */
static int nj_writeout(struct ext3_fs *fs)
{
	struct ext3_nj *nj = fs->nj;
	/* a thread inside its own stand-in cannot wait for the writers */
	bool locked = nj && !(tl_nj.depth > 0 && tl_nj.fs == fs);
	if (locked)
		pthread_rwlock_wrlock(&nj->writers);
	int rc = buf_cache_writeout(fs->cache);
	if (locked)
		pthread_rwlock_unlock(&nj->writers);
	return rc;
}

int ext3_fs_sync_metadata(struct ext3_fs *fs)
{
	int rc = nj_writeout(fs);
	if (rc)
		rc = err_wrap(rc, "ext3: writing the metadata");
	if (fs->opts.jcfg.barrier) {
		struct bio flush = {.sector = 0, .size = 0, .data = NULL,
				    .rw = BLK_WRITE_SYNC | BLK_REQ_FLUSH};
		int frc = blk_submit_bio_wait(fs->q, &flush);
		if (frc < 0 && !rc)
			rc = err_wrap(frc, "ext3: flushing the device cache");
	}
	return rc;
}

/* The flusher: the dirty metadata at the period of the mount's page
 * flusher (dirty_writeback_centisecs=, default 5 s: the kernel's one
 * flusher writes dirty pages and buffers alike; 0: no periodic pass), with
 * no cache flush (the kernel's periodic writeback issues none either). A
 * write error stays in the cache's error and is reported by the next
 * fsync. */
static void *nj_flusher(void *arg)
{
	struct ext3_fs *fs = arg;
	struct ext3_nj *nj = fs->nj;
	uint64_t ms = fs->opts.page.writeback_interval_ms;
	pthread_mutex_lock(&nj->lock);
	while (!nj->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(ms / 1000);
		ts.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		int w = 0;
		while (!nj->stop && w != ETIMEDOUT)
			w = ms ? pthread_cond_timedwait(&nj->wake, &nj->lock, &ts)
			       : pthread_cond_wait(&nj->wake, &nj->lock);
		if (nj->stop)
			break;
		pthread_mutex_unlock(&nj->lock);
		(void)nj_writeout(fs);
		pthread_mutex_lock(&nj->lock);
	}
	pthread_mutex_unlock(&nj->lock);
	return NULL;
}

int ext3_nj_init(struct ext3_fs *fs)
{
	struct ext3_nj *nj = calloc(1, sizeof *nj);
	if (!nj)
		return err_set(-ENOMEM, "ext3: out of memory");
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&nj->writers, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&nj->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&nj->wake, &ca);
	pthread_condattr_destroy(&ca);
	fs->nj = nj;
	int rc = pthread_create(&nj->flusher, NULL, nj_flusher, fs);
	if (rc) {
		ext3_nj_shutdown(fs);
		return err_set(-rc, "ext3: starting the metadata flusher");
	}
	nj->flusher_up = true;
	return 0;
}

void ext3_nj_shutdown(struct ext3_fs *fs)
{
	struct ext3_nj *nj = fs->nj;
	if (!nj)
		return;
	if (nj->flusher_up) {
		pthread_mutex_lock(&nj->lock);
		nj->stop = true;
		pthread_cond_signal(&nj->wake);
		pthread_mutex_unlock(&nj->lock);
		pthread_join(nj->flusher, NULL);
	}
	pthread_cond_destroy(&nj->wake);
	pthread_mutex_destroy(&nj->lock);
	pthread_rwlock_destroy(&nj->writers);
	free(nj);
	fs->nj = NULL;
}
