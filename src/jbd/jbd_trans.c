/* Handles and the running transaction: start/stop, write/create/undo
 * access (with frozen copies for the committing transaction and committed
 * copies for allocation bitmaps), dirty, forget, revoke, lock_updates.
 *
 * Buffer ownership (struct jbd_jh, one per journaled buffer):
 *   jh->t       the running or committing transaction that will log it;
 *   jh->next_t  the running transaction, when jh->t is committing: its
 *               changes go into the buffer, so the committing copy is
 *               frozen first (jh->frozen) unless the commit already took
 *               its log copy (jh->copied);
 *   jh->cp_t    the latest committed transaction that logged it, while the
 *               home block is not yet written (checkpoint list).
 * A handle changes buffer data only after get_write_access returned, with
 * no lock held; the commit thread reads buffer data only under j->lock and
 * only for buffers whose next owner has not been granted access without a
 * frozen copy, so the two never race.
 *
 * With journal_shadow=wait (2.6.30's fs/jbd) a buffer whose log copy the
 * committing transaction is writing (jh->shadow, BJ_Shadow) is not handed
 * to a new transaction until that write completes: the first access of the
 * running transaction sleeps on j->wait_shadow with no lock held, then
 * starts over. Later accesses of the same transaction (it already has the
 * buffer as next_t, through a frozen copy or an earlier wait) go through,
 * as in the kernel. The waiter holds its handle open meanwhile, which can
 * only delay the running transaction's commit, never the committing one's
 * log I/O, so there is no cycle.
 *
 * Locking: j->lock for all of the above; get_write_access takes the buffer
 * lock first (waiting for checkpoint I/O on it), then j->lock.
 */
#include "jbd_int.h"
#include "../util/stalltrace.h"

#include "../buf/buf.h"
#include "../util/clock.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

LOCKDEP_CLASS_DEFINE(jbd_lockdep_handle, "jbd handle", 0);

/* The calling thread's open handle (nested starts return it). */
static _Thread_local struct jbd_handle *tl_current;

struct jbd_handle *jbd_handle_current(void)
{
	return tl_current;
}

void jbd_handle_set_sync(struct jbd_handle *h, bool sync)
{
	h->sync = sync;
}

uint32_t jbd_handle_tid(const struct jbd_handle *h)
{
	return h->t ? h->t->tid : 0;
}

/* ------------------------------------------------------ space rules */

static int desc_blocks(const struct jbd_journal *j, int n)
{
	return n <= 0 ? 0 : (n + j->tags_per_desc - 1) / j->tags_per_desc;
}

static int revoke_blocks(const struct jbd_journal *j, const struct jbd_transaction *t)
{
	size_t n = t ? t->revoke.count : 0;
	return (int)((n + (size_t)j->revokes_per_block - 1) / (size_t)j->revokes_per_block);
}

int jbd__log_space_left(struct jbd_journal *j)
{
	int left = (int)j->free - j->reserved_committing - j->reserved_blocks;
	return left < 0 ? 0 : left;
}

/* Log blocks a running transaction may need at most: the kernel's rule
 * (room for a whole maximal transaction, so a transaction never has to
 * checkpoint half way), with its descriptor, revoke and commit blocks. */
int jbd__space_needed(struct jbd_journal *j)
{
	int n = j->max_transaction_buffers;
	return n + desc_blocks(j, n) + revoke_blocks(j, j->running) + 1;
}

/* ---------------------------------------------------- transactions */

static struct jbd_transaction *transaction_new(struct jbd_journal *j)
{
	struct jbd_transaction *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	if (jbd_revoke_table_init(&t->revoke, 256) < 0) {
		free(t);
		return NULL;
	}
	t->j = j;
	t->tid = j->transaction_sequence++;
	t->state = JBD_T_RUNNING;
	t->reason = -1;
	t->start_ns = clock_now_ns();
	t->expires_ns = t->start_ns + (uint64_t)j->cfg.commit_interval_ms * NS_PER_MS;
	list_init(&t->buffers);
	list_init(&t->forget);
	list_init(&t->cp);
	list_init(&t->inodes);
	list_init(&t->link);
	j->running = t;
	/* The commit thread arms its timer on the new transaction: woken for
	 * it only if asleep without a deadline or with a later one. After a
	 * commit it sleeps until one interval later (commit_thread_main),
	 * which is never after the expiry of a transaction created since:
	 * then it re-arms when it wakes, and the handle that creates the next
	 * transaction (every fsync loop's first write after its commit) does
	 * not wake another thread for nothing. */
	if (j->thread_sleeping && (!j->thread_sleep_until || j->thread_sleep_until > t->expires_ns))
		pthread_cond_signal(&j->wait_thread);
	return t;
}

/* Join (or create) the running transaction with `n` credits. */
static int start_this_handle(struct jbd_journal *j, struct jbd_handle *h, int n)
{
	if (n > j->max_transaction_buffers)
		return err_set(-ENOSPC, "jbd: a handle wants %d credits, a transaction holds at most %d", n,
			       j->max_transaction_buffers);
	pthread_mutex_lock(&j->lock);
	for (;;) {
		if (j->aborted) {
			pthread_mutex_unlock(&j->lock);
			return -EROFS;
		}
		struct jbd_transaction *t = j->running;
		if (!t) {
			t = transaction_new(j);
			if (!t) {
				pthread_mutex_unlock(&j->lock);
				return -ENOMEM;
			}
		}
		if (j->barrier_depth) {
			/* jbd_journal_lock_updates: wait for the unlock. */
			uint64_t w0 = stalltrace_t0();
			while (j->barrier_depth && !j->aborted)
				pthread_cond_wait(&j->wait_barrier, &j->lock);
			stalltrace_wait("handle: barrier", w0, 0);
			continue;
		}
		if (t->state == JBD_T_LOCKED) {
			j->st.handle_waits_locked++;
			/* t may be committed and freed while we wait: its tid now */
			uint32_t tid = t->tid;
			uint64_t w0 = stalltrace_t0();
			while (j->running == t && !j->aborted)
				pthread_cond_wait(&j->wait_locked, &j->lock);
			stalltrace_wait("handle: T_LOCKED", w0, tid);
			continue;
		}
		if (t->outstanding + n > j->max_transaction_buffers) {
			/* Does not fit: commit this one and join the next. */
			j->st.handle_waits_nofit++;
			uint32_t tid = t->tid; /* t may be freed while we wait */
			jbd__log_start_commit(j, tid, JBD_COMMIT_NOFIT);
			uint64_t w0 = stalltrace_t0();
			while (j->running == t && !j->aborted)
				pthread_cond_wait(&j->wait_locked, &j->lock);
			stalltrace_wait("handle: nofit", w0, tid);
			continue;
		}
		if (jbd__log_space_left(j) < jbd__space_needed(j)) {
			j->st.handle_waits_space++;
			uint64_t w0 = stalltrace_t0();
			stalltrace_mark("handle: log space wait begin", j->free);
			int rc = jbd__log_wait_for_space(j);
			stalltrace_wait("handle: log space", w0, j->free);
			if (rc < 0) {
				pthread_mutex_unlock(&j->lock);
				return rc;
			}
			continue;
		}
		t->updates++;
		t->outstanding += n;
		h->t = t;
		h->credits = n;
		j->st.handles++;
		break;
	}
	pthread_mutex_unlock(&j->lock);
	return 0;
}

int jbd_handle_start(struct jbd_journal *j, int credits, struct jbd_handle **out)
{
	struct jbd_handle *cur = tl_current;
	if (cur) {
		if (cur->j != j)
			return err_set(-EINVAL, "jbd: this thread already has a handle on another journal");
		cur->ref++;
		*out = cur;
		return 0;
	}
	if (credits < 0)
		return err_set(-EINVAL, "jbd: negative credits %d", credits);
	struct jbd_handle *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	h->j = j;
	h->ref = 1;
	h->trace_t0 = stalltrace_t0();
	lockdep_acquire(&jbd_lockdep_handle, h, 0);
	int rc = start_this_handle(j, h, credits);
	if (rc < 0) {
		lockdep_release(h);
		free(h);
		return rc;
	}
	tl_current = h;
	*out = h;
	return 0;
}

/* Leave the transaction (j->lock held); returns the tid. *wake: a commit
 * was requested, and the commit thread is to be woken once j->lock is
 * dropped (woken under it, it would only block on the lock). */
static uint32_t handle_leave(struct jbd_handle *h, bool *wake)
{
	struct jbd_journal *j = h->j;
	struct jbd_transaction *t = h->t;
	t->outstanding -= h->credits;
	h->credits = 0;
	if (--t->updates == 0)
		pthread_cond_broadcast(&j->wait_updates);
	int reason = -1;
	if (h->sync) {
		t->sync = true;
		reason = JBD_COMMIT_SYNC;
	} else if (t->outstanding >= j->max_transaction_buffers) {
		reason = JBD_COMMIT_FULL;
	} else if (clock_now_ns() >= t->expires_ns) {
		reason = JBD_COMMIT_TIMER;
	}
	*wake = reason >= 0 && jbd__log_request_commit(j, t->tid, reason);
	h->t = NULL;
	return t->tid;
}

int jbd_handle_stop(struct jbd_handle *h)
{
	if (!h)
		return -EINVAL;
	if (--h->ref > 0)
		return 0;
	lockdep_release(h);
	struct jbd_journal *j = h->j;
	uint64_t t0 = clock_now_ns();
	pthread_mutex_lock(&j->lock);
	int rc = 0;
	uint32_t tid = 0;
	bool had = h->t != NULL, wake = false;
	if (had)
		tid = handle_leave(h, &wake);
	stalltrace_wait("handle held (start..stop)", h->trace_t0, tid);
	if (j->aborted)
		rc = -EIO;
	pthread_mutex_unlock(&j->lock);
	if (wake)
		pthread_cond_signal(&j->wait_thread);
	if (had && h->sync && rc == 0) {
		rc = jbd_log_wait_commit(j, tid);
		pthread_mutex_lock(&j->lock);
		hist_add(&j->st.sync_stop_ns, clock_now_ns() - t0);
		pthread_mutex_unlock(&j->lock);
	}
	if (tl_current == h)
		tl_current = NULL;
	free(h);
	return rc;
}

int jbd_handle_extend(struct jbd_handle *h, int credits)
{
	struct jbd_journal *j = h->j;
	pthread_mutex_lock(&j->lock);
	int rc = 0;
	struct jbd_transaction *t = h->t;
	if (j->aborted)
		rc = -EROFS;
	else if (!t || t->state != JBD_T_RUNNING || t->outstanding + credits > j->max_transaction_buffers ||
		 jbd__log_space_left(j) < jbd__space_needed(j))
		rc = -EAGAIN;
	else {
		t->outstanding += credits;
		h->credits += credits;
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int jbd_handle_restart(struct jbd_handle *h, int credits)
{
	struct jbd_journal *j = h->j;
	if (h->ref != 1)
		return err_set(-EINVAL, "jbd: cannot restart a nested handle");
	pthread_mutex_lock(&j->lock);
	if (h->t) {
		uint32_t tid = h->t->tid;
		bool sync = h->sync;
		h->sync = false;
		bool wake_unused; /* the start below wakes the thread */
		handle_leave(h, &wake_unused);
		h->sync = sync;
		/* As journal_restart: the old transaction goes to commit. */
		jbd__log_start_commit(j, tid, JBD_COMMIT_NOFIT);
	}
	pthread_mutex_unlock(&j->lock);
	return start_this_handle(j, h, credits);
}

/* ------------------------------------------------------------ access */

static struct jbd_jh *jh_get(struct jbd_journal *j, struct buffer_head *bh)
{
	struct jbd_jh *jh = buf_private(bh);
	if (jh)
		return jh;
	jh = calloc(1, sizeof *jh);
	if (!jh)
		return NULL;
	jh->j = j;
	jh->bh = bh;
	jh->blocknr = buf_blocknr(bh);
	list_init(&jh->t_link);
	list_init(&jh->cp_link);
	list_init(&jh->f_link);
	buf_hold(bh);
	buf_set_private(bh, jh);
	/* From now on the buffer cache's writeback leaves it alone: only the
	 * checkpoint writes it home, and only committed contents. */
	buf_set_jbd(bh, true);
	return jh;
}

enum access { ACCESS_WRITE, ACCESS_CREATE, ACCESS_UNDO };

/* Sleep until bh's log write completes (or the journal aborts). The
 * caller's reference keeps bh; its journal head is looked up afresh each
 * time, since the commit may free it once unshadowed. */
static void shadow_wait(struct jbd_journal *j, struct buffer_head *bh)
{
	uint64_t t0 = clock_now_ns();
	pthread_mutex_lock(&j->lock);
	j->st.shadow_waits++;
	for (;;) {
		struct jbd_jh *jh = buf_private(bh);
		if (j->aborted || !jh || !jh->shadow)
			break;
		pthread_cond_wait(&j->wait_shadow, &j->lock);
	}
	stalltrace_wait("shadow wait", t0, 0);
	j->st.shadow_wait_ns += clock_now_ns() - t0;
	pthread_mutex_unlock(&j->lock);
}

static int do_get_access(struct jbd_handle *h, struct buffer_head *bh, enum access kind)
{
	struct jbd_journal *j = h->j;
	struct jbd_transaction *t = h->t;
	if (!t)
		return err_set(-EINVAL, "jbd: get_write_access on a stopped handle");
	if (buf_cache_of(bh) != j->cache)
		return err_set(-EINVAL, "jbd: buffer of another cache");
	int rc;
again:
	/* Wait for I/O on the buffer (a checkpoint write) to finish. */
	buf_lock(bh);
	pthread_mutex_lock(&j->lock);
	rc = 0;
	if (j->aborted) {
		rc = -EROFS;
		goto out;
	}
	struct jbd_jh *jh = jh_get(j, bh);
	if (!jh) {
		rc = -ENOMEM;
		goto out;
	}
	if (jh->shadow && jh->t != t && jh->next_t != t) {
		/* BJ_Shadow: the committing transaction is writing this
		 * buffer to the log; 2.6.30 could not copy it out now. */
		pthread_mutex_unlock(&j->lock);
		buf_unlock(bh);
		shadow_wait(j, bh);
		goto again;
	}
	/* A dirty-in-cache buffer now belongs to the journal: its changes
	 * reach the disk through the log. */
	(void)buf_test_clear_dirty(bh);
	if (jh->forget_t == t) {
		list_del(&jh->f_link);
		jh->forget_t = NULL;
	}
	if (jh->t == t) {
		/* already ours */
	} else if (!jh->t) {
		jh->t = t;
		jh->dirty_t = false;
		list_add_tail(&t->buffers, &jh->t_link);
	} else {
		/* jh->t is the committing transaction. */
		if (jh->next_t != t) {
			jh->next_t = t;
			jh->dirty_next = false;
		}
		/* Frozen: the commit still needs the contents for its log copy,
		 * or (undo access) the committed copy takes them when it ends. */
		bool undo = kind == ACCESS_UNDO || jh->committed || jh->committed_stale;
		if (!jh->frozen && ((jh->dirty_t && !jh->copied) || undo)) {
			jh->frozen = malloc(j->bs);
			if (!jh->frozen) {
				rc = -ENOMEM;
				goto out;
			}
			/* the committing contents with their checksum (the
			 * commit logs this copy; the buffer lock and j->lock
			 * exclude every writer) */
			buf_csum_settle(bh);
			memcpy(jh->frozen, buf_data(bh), j->bs);
			j->st.frozen_copies++;
		}
	}
	jbd__committed_apply(jh);
	if (kind == ACCESS_UNDO && !jh->committed) {
		/* Before this transaction changes it: what is committed (or
		 * committing) now. */
		jh->committed = malloc(j->bs);
		if (!jh->committed) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(jh->committed, buf_data(bh), j->bs);
		j->st.committed_copies++;
	}
	/* Journaling the block again cancels its revoke in this transaction
	 * (else recovery would skip this transaction's copy too). */
	if (t->revoke.count)
		jbd_revoke_table_remove(&t->revoke, jh->blocknr);
out:
	pthread_mutex_unlock(&j->lock);
	buf_unlock(bh);
	return rc;
}

int jbd_get_write_access(struct jbd_handle *h, struct buffer_head *bh)
{
	return do_get_access(h, bh, ACCESS_WRITE);
}

int jbd_get_create_access(struct jbd_handle *h, struct buffer_head *bh)
{
	int rc = do_get_access(h, bh, ACCESS_CREATE);
	/* The block gets new contents: a checksum deferred for the old ones
	 * must not run on them (the committing transaction, if it still
	 * logs the old contents, has its frozen copy, settled). */
	if (!rc)
		buf_csum_cancel(bh);
	return rc;
}

int jbd_get_undo_access(struct jbd_handle *h, struct buffer_head *bh)
{
	return do_get_access(h, bh, ACCESS_UNDO);
}

/* ------------------------------------------------- committed copies */

void jbd__committed_apply(struct jbd_jh *jh)
{
	if (!jh->committed_stale)
		return;
	free(jh->committed);
	jh->committed = jh->committed_next;
	jh->committed_next = NULL;
	jh->committed_stale = false;
}

/* Replace the committed copy by p (NULL: drop it), j->lock held. Readers
 * hold the buffer lock: if it is taken, the change waits for the next
 * holder that comes through the journal (jbd__committed_apply). */
static void committed_set(struct jbd_jh *jh, void *p)
{
	if (jh->committed_stale)
		free(jh->committed_next);
	jh->committed_next = p;
	jh->committed_stale = true;
	if (buf_trylock(jh->bh)) {
		jbd__committed_apply(jh);
		buf_unlock(jh->bh);
	}
}

const void *jbd_buffer_committed_data(struct buffer_head *bh)
{
	struct jbd_jh *jh = buf_private(bh);
	if (!jh)
		return NULL;
	pthread_mutex_lock(&jh->j->lock);
	jbd__committed_apply(jh);
	const void *p = jh->committed;
	pthread_mutex_unlock(&jh->j->lock);
	return p;
}

int jbd_buffer_committed_update(struct buffer_head *bh, void (*fn)(void *copy, void *arg), void *arg)
{
	struct jbd_jh *jh = buf_private(bh);
	if (!jh)
		return 0;
	pthread_mutex_lock(&jh->j->lock);
	jbd__committed_apply(jh);
	if (jh->committed)
		fn(jh->committed, arg);
	/* A replacement waiting for the buffer lock (ours): it is the copy
	 * from the moment the commit ends, so it gets the change too. */
	if (jh->committed_stale && jh->committed_next)
		fn(jh->committed_next, arg);
	pthread_mutex_unlock(&jh->j->lock);
	return 0;
}

/* The frozen and committed copies when jh->t's commit ends. */
static void copies_commit_done(struct jbd_jh *jh)
{
	if (jh->committed || jh->committed_stale) {
		if (!jh->next_t) {
			committed_set(jh, NULL); /* nobody needs it any more */
		} else if (jh->frozen) {
			/* The running transaction has it: its allocator now
			 * checks against what just committed. */
			committed_set(jh, jh->frozen);
			jh->frozen = NULL;
		}
		/* else: no frozen copy (the running transaction took plain
		 * write access before any undo access); the older committed
		 * copy stays, which only refuses more blocks. */
	}
	free(jh->frozen);
	jh->frozen = NULL;
}

void jbd__jh_commit_done(struct jbd_jh *jh, struct jbd_transaction *t)
{
	list_del(&jh->t_link);
	if (jh->dirty_t) {
		if (jh->cp_t)
			jbd__checkpoint_remove(jh);
		jh->cp_t = t;
		jh->jdirty = true;
		list_add_tail(&t->cp, &jh->cp_link);
	}
	copies_commit_done(jh);
	jh->dirty_t = false;
	jh->copied = false;
	jh->shadow = false; /* its log write is done: LOG_WAIT came first */
	jh->t = NULL;
	if (jh->next_t) {
		struct jbd_transaction *nt = jh->next_t;
		jh->t = nt;
		jh->dirty_t = jh->dirty_next;
		if (jh->dirty_t)
			nt->nbuffers++;
		list_add_tail(&nt->buffers, &jh->t_link);
		jh->next_t = NULL;
		jh->dirty_next = false;
	}
	jbd__jh_maybe_free(jh);
}

int jbd_dirty_metadata(struct jbd_handle *h, struct buffer_head *bh)
{
	struct jbd_journal *j = h->j;
	struct jbd_transaction *t = h->t;
	pthread_mutex_lock(&j->lock);
	int rc = 0;
	struct jbd_jh *jh = buf_private(bh);
	if (j->aborted)
		rc = -EROFS;
	else if (!t || !jh || (jh->t != t && jh->next_t != t))
		rc = err_set(-EINVAL, "jbd: block %llu dirtied without write access",
			     (unsigned long long)buf_blocknr(bh));
	else if (jh->t == t) {
		if (!jh->dirty_t) {
			if (h->credits <= 0)
				rc = err_set(-ENOSPC, "jbd: handle out of credits at block %llu",
					     (unsigned long long)jh->blocknr);
			else {
				h->credits--;
				jh->dirty_t = true;
				t->nbuffers++;
			}
		}
	} else if (!jh->dirty_next) {
		if (h->credits <= 0)
			rc = err_set(-ENOSPC, "jbd: handle out of credits at block %llu",
				     (unsigned long long)jh->blocknr);
		else {
			h->credits--;
			jh->dirty_next = true;
		}
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

/* j->lock and the buffer lock held. */
static void forget_locked(struct jbd_handle *h, struct jbd_jh *jh)
{
	struct jbd_transaction *t = h->t;
	if (jh->t == t || (jh->t && jh->next_t == t)) {
		/* A freed block has no allocation state left to protect. */
		committed_set(jh, NULL);
		jbd__committed_apply(jh);
	}
	if (jh->t == t) {
		if (jh->dirty_t) {
			h->credits++;
			t->nbuffers--;
		}
		list_del(&jh->t_link);
		jh->t = NULL;
		jh->dirty_t = false;
	} else if (jh->t && jh->next_t == t) {
		if (jh->dirty_next)
			h->credits++;
		jh->next_t = NULL;
		jh->dirty_next = false;
	}
	/* An older committed copy waits for checkpoint: once this
	 * transaction commits (with the revoke that usually comes with a
	 * forget), that home write must not happen any more. */
	if ((jh->cp_t || jh->t) && !jh->forget_t) {
		jh->forget_t = t;
		list_add_tail(&t->forget, &jh->f_link);
	}
	jbd__jh_maybe_free(jh);
}

int jbd_forget(struct jbd_handle *h, struct buffer_head *bh)
{
	struct jbd_journal *j = h->j;
	if (!h->t) {
		buf_forget(bh);
		return err_set(-EINVAL, "jbd: forget on a stopped handle");
	}
	buf_lock(bh);
	pthread_mutex_lock(&j->lock);
	/* The contents still mean what the pending checksum covers, and a
	 * committing transaction may still log them from the buffer. */
	buf_csum_settle(bh);
	struct jbd_jh *jh = buf_private(bh);
	if (jh)
		forget_locked(h, jh);
	pthread_mutex_unlock(&j->lock);
	buf_unlock(bh);
	buf_forget(bh);
	return 0;
}

int jbd_revoke(struct jbd_handle *h, uint64_t block, struct buffer_head *bh)
{
	struct jbd_journal *j = h->j;
	struct jbd_transaction *t = h->t;
	if (!t) {
		buf_forget(bh);
		return err_set(-EINVAL, "jbd: revoke on a stopped handle");
	}
	if (j->version < 2) {
		buf_forget(bh);
		return err_set(-EOPNOTSUPP, "jbd: a v1 journal has no revoke feature");
	}
	if (block > UINT32_MAX && !j->is64) {
		buf_forget(bh);
		return err_set(-ERANGE, "jbd: block %llu does not fit a 32-bit revoke record (the journal "
					"has no 64bit feature: journal_64bit)",
			       (unsigned long long)block);
	}
	pthread_mutex_lock(&j->lock);
	int rc = j->aborted ? -EROFS : jbd_revoke_table_set(&t->revoke, block, t->tid);
	pthread_mutex_unlock(&j->lock);
	if (!bh) {
		/* A cached, journaled copy of the block must be forgotten too. */
		int e = 0;
		bh = buf_get(j->cache, block, &e);
		if (bh && !buf_private(bh)) {
			buf_put(bh);
			bh = NULL;
		}
	}
	if (bh) {
		int frc = jbd_forget(h, bh);
		if (!rc)
			rc = frc;
	}
	return rc;
}

/* ------------------------------------------------------ lock_updates */

void jbd_journal_lock_updates(struct jbd_journal *j)
{
	pthread_t self = pthread_self();
	pthread_mutex_lock(&j->lock);
	if (j->barrier_depth && pthread_equal(j->barrier_owner, self)) {
		j->barrier_depth++;
		pthread_mutex_unlock(&j->lock);
		return;
	}
	while (j->barrier_depth)
		pthread_cond_wait(&j->wait_barrier, &j->lock);
	j->barrier_owner = self;
	j->barrier_depth = 1;
	j->st.lock_updates++;
	/* New handles wait from now on; the open ones run to their stop. */
	for (;;) {
		struct jbd_transaction *t = j->running;
		if (!t || !t->updates || j->aborted)
			break;
		pthread_cond_wait(&j->wait_updates, &j->lock);
	}
	pthread_mutex_unlock(&j->lock);
}

void jbd_journal_unlock_updates(struct jbd_journal *j)
{
	pthread_mutex_lock(&j->lock);
	if (!j->barrier_depth || !pthread_equal(j->barrier_owner, pthread_self())) {
		/* A programming error, not a runtime condition. */
		fprintf(stderr, "jbd: BUG: unlock_updates without lock_updates in this thread\n");
		abort();
	}
	if (--j->barrier_depth == 0)
		pthread_cond_broadcast(&j->wait_barrier);
	pthread_mutex_unlock(&j->lock);
}
