/* Checkpointing: writing committed buffers home so their log space can be
 * reused, and moving the log tail in the journal superblock.
 *
 * Each committed transaction that still has buffers not written home sits
 * on j->checkpoint_list (oldest first) with those buffers on its cp list. A
 * buffer is only on the list of the latest committed transaction that
 * logged it. The tail is the log start of the oldest such transaction (or
 * of the committing one, or the head when nothing is left); blocks before
 * it are free. A checkpoint writes the oldest transaction's buffers in
 * batches of JBD_CP_BATCH with WRITE, sorted by block, each run of
 * consecutive blocks as one bio (cp_submit_runs), waits (the wait
 * unplugs), and, if a
 * buffer belongs to a newer running/committing transaction, first forces
 * that commit (its home copy may only hold committed data). The same for a
 * buffer freed (jbd_forget) by a newer transaction: its old copy must not
 * be written home once the block may be reused, nor leave the log before
 * the freeing commits; that commit drops it from the list unwritten.
 *
 * The tail moves only after the home writes are durable (a cache flush
 * with barriers) and the superblock saying so is written; only then is the
 * log space handed out again.
 *
 * Locking: j->checkpoint_mutex serialises checkpoints; j->sb_mutex
 * serialises tail moves; j->lock as everywhere. Buffers are locked with
 * buf_trylock under j->lock (a locked buffer is waited for after dropping
 * it).
 */
#include "jbd_int.h"
#include "../util/stalltrace.h"

#include "../blk/blk.h"
#include "../buf/buf.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>

/* Buffers submitted before one wait. 2.6.30's log_do_checkpoint flushed
 * 64-buffer batches without waiting between them and waited once at the
 * end; waiting per 64 buffers (256 KiB) made data=journal's checkpoint of a
 * streamed file one device round trip per 256 KiB (issue 8: the writer
 * waited for log space 70-90 % of the time; 1024 gave +20-100 % in
 * alternating A/B runs on file:, docs/bench-fs.md). */
#define JBD_CP_BATCH 1024

static int cp_cmp_block(const void *a, const void *b)
{
	uint64_t x = buf_blocknr(*(struct buffer_head *const *)a), y = buf_blocknr(*(struct buffer_head *const *)b);
	return x < y ? -1 : x > y;
}

/* Submit a batch of locked buffers in block order, each run of
 * consecutive blocks as one write (buf_write_run: one bio per up to
 * BUF_RUN_MAX blocks instead of one per buffer; issue 8). The order of
 * home writes among themselves does not matter: all of them are waited
 * for (and flushed) before the tail moves. Returns the first error. */
static int cp_submit_runs(struct buffer_head **batch, int nb)
{
	if (nb > 1)
		qsort(batch, (size_t)nb, sizeof *batch, cp_cmp_block);
	int rc = 0;
	for (int i = 0; i < nb;) {
		int k = 1;
		while (i + k < nb && buf_blocknr(batch[i + k]) == buf_blocknr(batch[i]) + (uint64_t)k)
			k++;
		int s = buf_write_run(k, batch + i, BLK_WRITE);
		if (s < 0 && !rc)
			rc = s;
		i += k;
	}
	return rc;
}

/* Write home a batch of locked, held buffers of transaction ttid's cp
 * list and wait; then those still that transaction's committed copy
 * leave the list. j->lock held on entry and return (dropped meanwhile).
 * Returns -EIO if a write failed (nothing leaves the list then). */
static int cp_write_batch(struct jbd_journal *j, struct buffer_head **batch, int nb, uint32_t ttid)
{
	int rc = 0;
	pthread_mutex_unlock(&j->lock);
	/* Locked buffers: nobody can get write access until written. */
	if (cp_submit_runs(batch, nb) < 0)
		rc = -EIO;
	for (int i = 0; i < nb; i++) {
		buf_wait(batch[i]);
		if (buf_write_io_error(batch[i]) && !rc)
			rc = -EIO;
	}
	pthread_mutex_lock(&j->lock);
	j->st.checkpoint_writes += (uint64_t)nb;
	for (int i = 0; i < nb; i++) {
		struct jbd_jh *jh = buf_private(batch[i]);
		/* Still this transaction's committed copy? (It may have
		 * been re-logged meanwhile and moved on.) */
		if (!rc && jh && jh->cp_t && jh->cp_t->tid == ttid && !jh->t && !jh->forget_t) {
			jbd__checkpoint_remove(jh);
			jbd__jh_maybe_free(jh);
		}
		pthread_mutex_unlock(&j->lock);
		buf_put(batch[i]);
		pthread_mutex_lock(&j->lock);
	}
	return rc;
}

/* The end of a checkpoint pass (j->lock dropped): a failed home write
 * aborts the journal (the tail must not pass it); otherwise the tail
 * moves over what the pass emptied. */
static int cp_end(struct jbd_journal *j, int rc)
{
	if (rc < 0) {
		err_wrap(rc, "jbd: checkpoint write");
		jbd_journal_abort(j, rc);
		return rc;
	}
	return jbd_cleanup_tail(j);
}

void jbd__checkpoint_remove(struct jbd_jh *jh)
{
	struct jbd_transaction *t = jh->cp_t;
	if (!t)
		return;
	list_del(&jh->cp_link);
	jh->cp_t = NULL;
	jh->jdirty = false;
	if (list_empty(&t->cp) && t->state == JBD_T_FINISHED) {
		/* Nothing left to write home: the transaction leaves the log
		 * (the tail moves at the next jbd_cleanup_tail). */
		list_del(&t->link);
		jbd__transaction_free(t);
	}
}

int jbd_log_do_checkpoint(struct jbd_journal *j)
{
	struct buffer_head *batch[JBD_CP_BATCH];
	int rc = 0;
	pthread_mutex_lock(&j->lock);
	j->st.checkpoints++;
	for (;;) {
		if (j->aborted) {
			rc = -EIO;
			break;
		}
		struct list_node *first = list_first(&j->checkpoint_list);
		if (!first)
			break;
		struct jbd_transaction *t = list_entry(first, struct jbd_transaction, link);
		uint32_t ttid = t->tid;
		int nb = 0;
		bool retry = false;
		struct list_node *n, *tmp;
		list_for_each_safe(n, tmp, &t->cp) {
			struct jbd_jh *jh = list_entry(n, struct jbd_jh, cp_link);
			struct jbd_transaction *newer = jh->t ? jh->t : jh->forget_t;
			if ((newer || buf_locked(jh->bh)) && nb) {
				/* Write what is collected first: never wait for
				 * anything while holding buffer locks. */
				break;
			}
			if (newer) {
				/* A newer transaction owns it (commit that one first;
				 * the buffer then moves to its checkpoint list) or
				 * freed it (that commit takes it off this list). */
				uint32_t tid = newer->tid;
				if (newer == j->running)
					jbd__log_start_commit(j, tid, JBD_COMMIT_FORCE);
				pthread_mutex_unlock(&j->lock);
				(void)jbd_log_wait_commit(j, tid);
				pthread_mutex_lock(&j->lock);
				retry = true;
				break;
			}
			if (!buf_trylock(jh->bh)) {
				struct buffer_head *bh = jh->bh;
				buf_hold(bh);
				pthread_mutex_unlock(&j->lock);
				buf_wait(bh);
				buf_put(bh);
				pthread_mutex_lock(&j->lock);
				retry = true;
				break;
			}
			buf_hold(jh->bh);
			batch[nb++] = jh->bh;
			if (nb == JBD_CP_BATCH)
				break;
		}
		if (!retry && nb == 0) {
			/* Everything is written (e.g. all forgotten). */
			if (list_first(&j->checkpoint_list) == first && list_empty(&t->cp)) {
				list_del(&t->link);
				jbd__transaction_free(t);
			}
			continue;
		}
		rc = cp_write_batch(j, batch, nb, ttid);
		if (rc < 0)
			break;
		/* One transaction (or one batch of it) per call is enough for
		 * the caller to re-check the space; continue only while the
		 * oldest transaction is the same. */
		first = list_first(&j->checkpoint_list);
		if (!first || list_entry(first, struct jbd_transaction, link)->tid != ttid)
			break;
	}
	pthread_mutex_unlock(&j->lock);
	return cp_end(j, rc);
}

/* ------------------------------------------- journal_checkpoint=early */

/* Log blocks the checkpoint should free ahead of need: what keeps three
 * maximal transactions' room free (0: enough room now). A handle waits
 * once less than one is left; a pass (one transaction's home writes, the
 * flush, the superblock) takes about as long as a streaming writer takes
 * to fill a transaction, so a pass started with one transaction of lead
 * ended after the writer had run out of room: a 1 GiB data=journal stream
 * waited 32-38 times for space and left the device idle while it did. With
 * two transactions of lead: 13-17 waits, 52-57 flushes instead of 69 (a
 * pass frees more at once) and the stream 5-20 % faster (docs/journal.md).
 * The lead stays below the log: a transaction is at most a quarter of it. [L] */
#define EARLY_LEAD 3
static uint32_t early_want(struct jbd_journal *j)
{
	int low = EARLY_LEAD * jbd__space_needed(j), left = jbd__log_space_left(j);
	if (left >= low || list_empty(&j->checkpoint_list))
		return 0;
	return (uint32_t)(low - left);
}

/* The log span of checkpoint transaction t (to the next one's start, the
 * committing one's, or the head). [L] */
static uint32_t cp_span(struct jbd_journal *j, struct jbd_transaction *t)
{
	uint32_t end = j->head;
	if (t->link.next != &j->checkpoint_list)
		end = list_entry(t->link.next, struct jbd_transaction, link)->log_start;
	else if (j->committing)
		end = j->committing->log_start;
	return jbd_log_dist(j, t->log_start, end);
}

/* One background pass (checkpoint_mutex held): the checkpoint
 * transactions, oldest first, until those passed span `want` log blocks;
 * each one's buffers that no newer transaction owns or freed and nobody
 * has locked are written home in batches (cp_write_batch) and leave its
 * list. Unlike jbd_log_do_checkpoint it never forces or waits for a
 * commit: a buffer a newer transaction owns leaves the list when that
 * transaction commits, which the writer triggers anyway. The tail moves
 * afterwards as always (jbd_cleanup_tail: flush, then the superblock). */
static int cp_early_pass(struct jbd_journal *j, uint32_t want)
{
	struct buffer_head *batch[JBD_CP_BATCH];
	int rc = 0;
	uint32_t covered = 0;
	pthread_mutex_lock(&j->lock);
	j->st.early_checkpoints++;
	struct list_node *first = list_first(&j->checkpoint_list);
	uint32_t tid = first ? list_entry(first, struct jbd_transaction, link)->tid : 0;
	bool counted = false; /* tid's span is in covered */
	while (first && !j->aborted && !j->cp_stop) {
		/* Transactions leave the list while the lock is dropped: find
		 * the one at or after `tid` again. */
		struct jbd_transaction *t = NULL;
		struct list_node *n;
		list_for_each(n, &j->checkpoint_list) {
			struct jbd_transaction *x = list_entry(n, struct jbd_transaction, link);
			if (jbd_tid_geq(x->tid, tid)) {
				t = x;
				break;
			}
		}
		if (!t)
			break;
		if (!counted || t->tid != tid) {
			/* A new transaction: go on only while the ones before
			 * fall short; its span counts now, as it may be freed
			 * by its last write. */
			if (covered >= want)
				break;
			covered += cp_span(j, t);
			counted = true;
		}
		tid = t->tid;
		int nb = 0;
		list_for_each(n, &t->cp) {
			struct jbd_jh *jh = list_entry(n, struct jbd_jh, cp_link);
			if (jh->t || jh->forget_t || !buf_trylock(jh->bh))
				continue;
			buf_hold(jh->bh);
			batch[nb++] = jh->bh;
			if (nb == JBD_CP_BATCH)
				break;
		}
		if (nb == 0) {
			/* Nothing (more) this pass may write: the next one. */
			tid++;
			counted = false;
			continue;
		}
		rc = cp_write_batch(j, batch, nb, tid);
		j->st.early_checkpoint_writes += (uint64_t)nb;
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&j->lock);
	return cp_end(j, rc);
}

/* One pass per commit start or end that leaves less than early_want's room:
 * the writer then finds the log space ready instead of writing the
 * oldest transaction home itself. */
static void *cp_thread_main(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-jbd-cp"); /* top, perf, gdb */
	struct jbd_journal *j = arg;
	blk_ioprio_set(j->cfg.ioprio_class, j->cfg.ioprio_level);
	pthread_mutex_lock(&j->lock);
	/* Not j->cp_kicks: kicks may have come before this thread ran, and
	 * the first look must count them. */
	uint64_t seen = UINT64_MAX;
	while (!j->cp_stop) {
		uint32_t want = j->aborted ? 0 : early_want(j);
		if (!want || seen == j->cp_kicks) {
			seen = j->cp_kicks;
			/* (A kick that comes while a pass runs is not lost: the
			 * count differs when the pass returns.) */
			while (!j->cp_stop && seen == j->cp_kicks)
				pthread_cond_wait(&j->wait_cp, &j->lock);
			continue;
		}
		seen = j->cp_kicks;
		pthread_mutex_unlock(&j->lock);
		pthread_mutex_lock(&j->checkpoint_mutex);
		(void)cp_early_pass(j, want);
		pthread_mutex_unlock(&j->checkpoint_mutex);
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

void jbd__cp_kick(struct jbd_journal *j)
{
	j->cp_kicks++;
	/* Woken only with work to do: it would look at early_want and sleep
	 * again, a thread wake-up per commit (per fsync) for nothing. A kick
	 * while it runs a pass is still seen (the count moved). */
	if (j->cp_running && !j->aborted && early_want(j))
		pthread_cond_signal(&j->wait_cp);
}

int jbd_cp_thread_start(struct jbd_journal *j)
{
	if (j->cfg.checkpoint_full)
		return 0;
	j->cp_running = true;
	int rc = pthread_create(&j->cp_thread, NULL, cp_thread_main, j);
	if (rc) {
		j->cp_running = false;
		return err_set(-rc, "jbd: cannot start the checkpoint thread");
	}
	return 0;
}

void jbd_cp_thread_stop(struct jbd_journal *j)
{
	pthread_mutex_lock(&j->lock);
	bool running = j->cp_running;
	j->cp_stop = true;
	j->cp_running = false;
	pthread_cond_broadcast(&j->wait_cp);
	pthread_mutex_unlock(&j->lock);
	if (running)
		pthread_join(j->cp_thread, NULL);
}

/* min_freed: move the tail only if that many log blocks come free (or
 * the log is short of room); 0: whenever it can move. */
static int cleanup_tail(struct jbd_journal *j, uint32_t min_freed)
{
	pthread_mutex_lock(&j->sb_mutex);
	pthread_mutex_lock(&j->lock);
	if (j->aborted || j->emptied) {
		bool aborted = j->aborted;
		pthread_mutex_unlock(&j->lock);
		pthread_mutex_unlock(&j->sb_mutex);
		return aborted ? -EIO : 0;
	}
	uint32_t tail, seq;
	struct list_node *first = list_first(&j->checkpoint_list);
	if (first) {
		struct jbd_transaction *t = list_entry(first, struct jbd_transaction, link);
		tail = t->log_start;
		seq = t->tid;
	} else if (j->committing) {
		tail = j->committing->log_start;
		seq = j->committing->tid;
	} else {
		tail = j->head;
		seq = j->running ? j->running->tid : j->transaction_sequence;
	}
	if (tail == j->tail && seq == j->tail_sequence) {
		pthread_mutex_unlock(&j->lock);
		pthread_mutex_unlock(&j->sb_mutex);
		return 0;
	}
	uint32_t freed = jbd_log_dist(j, j->tail, tail);
	if (min_freed && freed < min_freed && jbd__log_space_left(j) >= 2 * jbd__space_needed(j)) {
		pthread_mutex_unlock(&j->lock);
		pthread_mutex_unlock(&j->sb_mutex);
		return 0;
	}
	pthread_mutex_unlock(&j->lock);
	int rc = 0;
	/* Home writes before the tail record: with barriers, make them
	 * durable first (2009's jbd did not; a power cut could then lose a
	 * checkpointed block whose log copy was already released). */
	if (j->cfg.barrier && freed)
		rc = jbd_map_flush(&j->map);
	if (rc == 0)
		rc = jbd__write_sb(j, seq, tail, 0);
	pthread_mutex_lock(&j->lock);
	if (rc == 0) {
		j->tail = tail;
		j->tail_sequence = seq;
		j->free += freed;
		if (freed)
			j->st.tail_advances++;
		pthread_cond_broadcast(&j->wait_commit);
	}
	pthread_mutex_unlock(&j->lock);
	pthread_mutex_unlock(&j->sb_mutex);
	if (rc < 0) {
		err_wrap(rc, "jbd: writing the journal superblock");
		jbd_journal_abort(j, rc);
	}
	return rc;
}

int jbd_cleanup_tail(struct jbd_journal *j)
{
	return cleanup_tail(j, 0);
}

int jbd__cleanup_tail_lazy(struct jbd_journal *j)
{
	return cleanup_tail(j, (uint32_t)j->max_transaction_buffers);
}

int jbd__log_wait_for_space(struct jbd_journal *j)
{
	while (!j->aborted && jbd__log_space_left(j) < jbd__space_needed(j)) {
		if (!list_empty(&j->checkpoint_list)) {
			pthread_mutex_unlock(&j->lock);
			pthread_mutex_lock(&j->checkpoint_mutex);
			pthread_mutex_lock(&j->lock);
			bool still = jbd__log_space_left(j) < jbd__space_needed(j);
			pthread_mutex_unlock(&j->lock);
			if (still) {
				uint64_t w0 = stalltrace_t0();
				(void)jbd_log_do_checkpoint(j);
				stalltrace_wait("log space: do_checkpoint", w0, 0);
			}
			pthread_mutex_unlock(&j->checkpoint_mutex);
			pthread_mutex_lock(&j->lock);
		} else if (j->committing) {
			uint32_t tid = j->committing->tid;
			uint64_t w0 = stalltrace_t0();
			while (!j->aborted && j->committing && j->committing->tid == tid)
				pthread_cond_wait(&j->wait_commit, &j->lock);
			stalltrace_wait("log space: wait commit", w0, tid);
		} else {
			/* Only the tail record can be behind: move it. */
			uint32_t free_before = j->free;
			pthread_mutex_unlock(&j->lock);
			(void)jbd_cleanup_tail(j);
			pthread_mutex_lock(&j->lock);
			if (j->free == free_before && jbd__log_space_left(j) < jbd__space_needed(j)) {
				pthread_mutex_unlock(&j->lock);
				err_set(-ENOSPC, "jbd: journal too small (%u blocks) for a transaction of %d",
					j->last - j->first, j->max_transaction_buffers);
				jbd_journal_abort(j, -ENOSPC);
				pthread_mutex_lock(&j->lock);
				return -ENOSPC;
			}
		}
	}
	return j->aborted ? -EROFS : 0;
}

int jbd_journal_checkpoint(struct jbd_journal *j)
{
	int rc = 0;
	pthread_mutex_lock(&j->checkpoint_mutex);
	for (;;) {
		pthread_mutex_lock(&j->lock);
		bool more = !list_empty(&j->checkpoint_list) && !j->aborted;
		pthread_mutex_unlock(&j->lock);
		if (!more)
			break;
		rc = jbd_log_do_checkpoint(j);
		if (rc < 0)
			break;
	}
	pthread_mutex_unlock(&j->checkpoint_mutex);
	if (rc == 0)
		rc = jbd_cleanup_tail(j);
	return jbd_journal_aborted(j) ? jbd_journal_errno(j) : rc;
}

int jbd_journal_flush(struct jbd_journal *j)
{
	int rc = jbd_journal_force_commit(j);
	if (rc < 0)
		return rc;
	return jbd_journal_checkpoint(j);
}
