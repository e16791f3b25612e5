/* The commit thread (kjournald) and the commit of one transaction.
 *
 * The thread sleeps until a commit is requested (sync handle, full
 * transaction, a handle that did not fit, force/flush) or the running
 * transaction's commit interval expires. Its I/O priority is the
 * journal_ioprio option (default BE/4; RT/4 is Arjan van de Ven's 2008
 * patch).
 *
 * A commit, in order (transaction states in capitals):
 *   LOCKED   no new handles; wait until the open ones stop;
 *   FLUSH    the transaction becomes the committing one and a new running
 *            transaction may start; the filesystem's data-flush hook runs
 *            (data=ordered); descriptor blocks with tags and the metadata
 *            copies (blocks starting with the JBD magic are escaped: the
 *            copy's first 4 bytes zeroed, tag flag ESCAPE), then revoke
 *            blocks, are submitted; then waited for (the wait unplugs);
 *   COMMIT   the commit block: with barrier=1 a cache flush first and FUA
 *            (a returned fsync survives power loss), with barrier=0 plain;
 *   FINISHED buffers move to this transaction's checkpoint list.
 * Write ops follow the era (docs/journal.md): a synchronous commit (a sync
 * handle waits for it) uses blk_queue_sync_batch_op(q) — WRITE under
 * 2.6.29, WRITE_SYNC (unplug per buffer) under 2.6.30-rc1, WRITE_SYNC_PLUG
 * (plugged, the wait unplugs) under 2.6.30 — and any other commit WRITE.
 * The commit block is WRITE_SYNC (sync_dirty_buffer), WRITE under 2.6.29.
 *
 * Any I/O error aborts the journal (never an assert). The log blocks are
 * private memory copies, so nothing a new transaction does to a buffer can
 * reach the log of this one.
 *
 * Locking: j->lock around every shared field; never held across I/O or the
 * data-flush hook.
 */
#include "jbd_int.h"

#include "../blk/blk.h"
#include "../buf/buf.h"
#include "../util/clock.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ commit requests */

bool jbd__log_start_commit(struct jbd_journal *j, uint32_t tid, int reason)
{
	struct jbd_transaction *t = j->running;
	if (!t || t->tid != tid)
		return false;
	if (!j->commit_requested || jbd_tid_gt(tid, j->commit_request)) {
		j->commit_request = tid;
		j->commit_requested = true;
	}
	if (t->reason < 0)
		t->reason = reason;
	pthread_cond_signal(&j->wait_thread);
	return true;
}

bool jbd_log_start_commit(struct jbd_journal *j, uint32_t tid)
{
	pthread_mutex_lock(&j->lock);
	bool r = jbd__log_start_commit(j, tid, JBD_COMMIT_FORCE);
	pthread_mutex_unlock(&j->lock);
	return r;
}

int jbd_log_wait_commit(struct jbd_journal *j, uint32_t tid)
{
	pthread_mutex_lock(&j->lock);
	while (!j->aborted && jbd_tid_gt(tid, j->commit_sequence))
		pthread_cond_wait(&j->wait_commit, &j->lock);
	int rc = jbd_tid_geq(j->commit_sequence, tid) ? 0 : -EIO;
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int jbd_journal_force_commit(struct jbd_journal *j)
{
	pthread_mutex_lock(&j->lock);
	uint32_t tid;
	if (j->running) {
		tid = j->running->tid;
		jbd__log_start_commit(j, tid, JBD_COMMIT_FORCE);
	} else if (j->committing) {
		tid = j->committing->tid;
	} else {
		int rc = j->aborted ? -EIO : 0;
		pthread_mutex_unlock(&j->lock);
		return rc;
	}
	pthread_mutex_unlock(&j->lock);
	return jbd_log_wait_commit(j, tid);
}

/* ------------------------------------------------------------ the I/O */

struct logblk {
	struct bio bio;
	void *data;
};

struct commit_io {
	struct jbd_journal *j;
	struct blk_batch batch;
	struct logblk **blks; /* each block allocated on its own: bios in
			       * flight must never move */
	size_t n, cap;
	int err;
};

static struct logblk *cio_add(struct commit_io *c)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct logblk **nb = realloc(c->blks, cap * sizeof *nb);
		if (!nb)
			return NULL;
		c->blks = nb;
		c->cap = cap;
	}
	struct logblk *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	if (posix_memalign(&b->data, 4096, c->j->bs)) {
		free(b);
		return NULL;
	}
	memset(b->data, 0, c->j->bs);
	c->blks[c->n++] = b;
	return b;
}

static void cio_free(struct commit_io *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->blks[i]->data);
		free(c->blks[i]);
	}
	free(c->blks);
}

/* Next free log block (j->lock held). Never runs into the tail: the space
 * rules reserve what a commit needs, so running out is a bug or a revoke
 * storm; either way the journal aborts instead of overwriting live log. */
static int next_log_block(struct jbd_journal *j, uint32_t *out)
{
	if (j->free == 0)
		return -ENOSPC;
	*out = j->head;
	j->head = jbd_log_next(j, j->head);
	if (j->head == j->first)
		j->st.wraps++;
	j->free--;
	if (j->reserved_committing > 0)
		j->reserved_committing--;
	return 0;
}

/* Submit block b at journal block jb. */
static int submit_log_block(struct commit_io *c, struct logblk *b, uint32_t jb, unsigned rw)
{
	struct jbd_journal *j = c->j;
	b->bio.sector = j->map.phys[jb] * (j->bs / 512);
	b->bio.size = j->bs;
	b->bio.data = b->data;
	b->bio.rw = rw;
	return blk_batch_submit(j->q, &c->batch, &b->bio);
}

static void commit_fail(struct jbd_journal *j, int err, const char *what)
{
	err_set(err, "jbd: commit: %s failed", what);
	jbd_journal_abort(j, err);
}

/* ---------------------------------------------------------- the commit */

void jbd_commit_transaction(struct jbd_journal *j)
{
	uint64_t t0 = clock_now_ns();
	pthread_mutex_lock(&j->lock);
	struct jbd_transaction *t = j->running;
	if (!t || j->aborted) {
		j->commit_requested = false;
		pthread_mutex_unlock(&j->lock);
		return;
	}
	jbd_transaction_set_state(t, JBD_T_LOCKED);
	while (t->updates && !j->aborted)
		pthread_cond_wait(&j->wait_updates, &j->lock);
	if (j->aborted) {
		pthread_mutex_unlock(&j->lock);
		return;
	}
	jbd_transaction_set_state(t, JBD_T_FLUSH);
	j->committing = t;
	j->running = NULL;
	t->log_start = j->head;
	int nrev = (int)t->revoke.count;
	int nrevblk = (nrev + j->revokes_per_block - 1) / j->revokes_per_block;
	j->reserved_committing = t->nbuffers + (t->nbuffers + j->tags_per_desc - 1) / j->tags_per_desc + nrevblk + 1;
	/* New handles may start the next transaction now. */
	pthread_cond_broadcast(&j->wait_locked);
	int (*flush_fn)(void *, uint32_t) = j->data_flush;
	void *flush_ctx = j->data_flush_ctx;
	bool sync = t->sync;
	uint32_t tid = t->tid;
	pthread_mutex_unlock(&j->lock);

	unsigned batch_op = blk_queue_sync_batch_op(j->q);
	unsigned write_op = sync ? batch_op : BLK_WRITE;
	unsigned commit_op = batch_op == BLK_WRITE ? BLK_WRITE : BLK_WRITE_SYNC;

	if (flush_fn) {
		int rc = flush_fn(flush_ctx, tid);
		if (rc < 0) {
			commit_fail(j, rc, "ordered data flush");
			return;
		}
	}

	struct commit_io c = { .j = j };
	blk_batch_init(&c.batch);
	int rc = 0;
	uint64_t logged = 0, descs = 0, escaped = 0, revblks = 0;

	/* Descriptor groups: fill under the lock (copies and log positions),
	 * submit outside it. */
	struct list_node *pos = t->buffers.next;
	for (;;) {
		size_t first_idx = c.n;
		uint32_t jblocks[1 + 512];
		int ntag = 0;
		pthread_mutex_lock(&j->lock);
		/* skip buffers that were reserved but not dirtied */
		while (pos != &t->buffers && !list_entry(pos, struct jbd_jh, t_link)->dirty_t)
			pos = pos->next;
		if (pos == &t->buffers) {
			pthread_mutex_unlock(&j->lock);
			break;
		}
		struct logblk *d = cio_add(&c);
		if (!d || next_log_block(j, &jblocks[0]) < 0) {
			pthread_mutex_unlock(&j->lock);
			rc = d ? -ENOSPC : -ENOMEM;
			break;
		}
		struct jbd_header *h = d->data;
		h->h_magic = cpu_to_be32(JBD_MAGIC_NUMBER);
		h->h_blocktype = cpu_to_be32(JBD_DESCRIPTOR_BLOCK);
		h->h_sequence = cpu_to_be32(tid);
		size_t off = sizeof *h;
		struct jbd_block_tag *last = NULL;
		while (pos != &t->buffers && ntag < j->tags_per_desc && ntag < 512) {
			struct jbd_jh *jh = list_entry(pos, struct jbd_jh, t_link);
			pos = pos->next;
			if (!jh->dirty_t)
				continue;
			struct logblk *b = cio_add(&c);
			if (!b) {
				rc = -ENOMEM;
				break;
			}
			if (next_log_block(j, &jblocks[ntag + 1]) < 0) {
				rc = -ENOSPC;
				break;
			}
			const void *src = jh->frozen ? jh->frozen : buf_data(jh->bh);
			memcpy(b->data, src, j->bs);
			jh->copied = true;
			free(jh->frozen);
			jh->frozen = NULL;
			uint32_t flags = ntag ? JBD_FLAG_SAME_UUID : 0;
			uint32_t first4;
			memcpy(&first4, b->data, 4);
			if (be32_to_cpu(first4) == JBD_MAGIC_NUMBER) {
				memset(b->data, 0, 4);
				flags |= JBD_FLAG_ESCAPE;
				escaped++;
			}
			struct jbd_block_tag *tag = (void *)((char *)d->data + off);
			tag->t_blocknr = cpu_to_be32((uint32_t)jh->blocknr);
			tag->t_flags = cpu_to_be32(flags);
			off += sizeof *tag;
			if (!ntag) {
				memcpy((char *)d->data + off, j->uuid, 16);
				off += 16;
			}
			last = tag;
			ntag++;
			logged++;
		}
		if (last)
			last->t_flags = cpu_to_be32(be32_to_cpu(last->t_flags) | JBD_FLAG_LAST_TAG);
		pthread_mutex_unlock(&j->lock);
		if (rc < 0)
			break;
		descs++;
		for (int i = 0; i <= ntag && rc == 0; i++)
			rc = submit_log_block(&c, c.blks[first_idx + (size_t)i], jblocks[i], write_op);
		if (rc < 0)
			break;
	}

	/* Revoke blocks: the table is stable (only the running transaction's
	 * table changes). */
	if (rc == 0 && nrev) {
		pthread_mutex_lock(&j->lock);
		struct logblk *rb = NULL;
		size_t rb_idx = 0, roff = 0;
		uint32_t rjb = 0;
		for (size_t s = 0; s < t->revoke.nslots && rc == 0; s++) {
			for (struct jbd_revoke_rec *r = t->revoke.slots[s]; r && rc == 0; r = r->next) {
				if (!rb || roff + 4 > j->bs) {
					if (rb) {
						struct jbd_revoke_header *rh = c.blks[rb_idx]->data;
						rh->r_count = cpu_to_be32((uint32_t)roff);
						pthread_mutex_unlock(&j->lock);
						rc = submit_log_block(&c, c.blks[rb_idx], rjb, write_op);
						pthread_mutex_lock(&j->lock);
						if (rc < 0)
							break;
					}
					rb = cio_add(&c);
					if (!rb) {
						rc = -ENOMEM;
						break;
					}
					rb_idx = c.n - 1;
					if (next_log_block(j, &rjb) < 0) {
						rc = -ENOSPC;
						break;
					}
					struct jbd_revoke_header *rh = rb->data;
					rh->r_header.h_magic = cpu_to_be32(JBD_MAGIC_NUMBER);
					rh->r_header.h_blocktype = cpu_to_be32(JBD_REVOKE_BLOCK);
					rh->r_header.h_sequence = cpu_to_be32(tid);
					roff = sizeof *rh;
					revblks++;
				}
				uint32_t v = cpu_to_be32((uint32_t)r->block);
				memcpy((char *)c.blks[rb_idx]->data + roff, &v, 4);
				roff += 4;
			}
		}
		pthread_mutex_unlock(&j->lock);
		if (rc == 0 && rb) {
			struct jbd_revoke_header *rh = c.blks[rb_idx]->data;
			rh->r_count = cpu_to_be32((uint32_t)roff);
			rc = submit_log_block(&c, c.blks[rb_idx], rjb, write_op);
		}
	}

	/* Every log block must be done before the commit block goes out. */
	int werr = blk_batch_wait(j->q, &c.batch);
	if (rc == 0)
		rc = werr;
	if (rc < 0) {
		blk_batch_destroy(&c.batch);
		cio_free(&c);
		commit_fail(j, rc, "writing the log");
		return;
	}

	pthread_mutex_lock(&j->lock);
	jbd_transaction_set_state(t, JBD_T_COMMIT);
	uint32_t cjb = 0;
	struct logblk *cb = cio_add(&c);
	if (!cb)
		rc = -ENOMEM;
	else
		rc = next_log_block(j, &cjb);
	pthread_mutex_unlock(&j->lock);
	if (rc == 0) {
		struct jbd_commit_block *ch = cb->data;
		ch->h_header.h_magic = cpu_to_be32(JBD_MAGIC_NUMBER);
		ch->h_header.h_blocktype = cpu_to_be32(JBD_COMMIT_BLOCK);
		ch->h_header.h_sequence = cpu_to_be32(tid);
		unsigned rw = commit_op | (j->cfg.barrier ? BLK_REQ_FLUSH | BLK_REQ_FUA : 0);
		rc = submit_log_block(&c, cb, cjb, rw);
		int w = blk_batch_wait(j->q, &c.batch);
		if (rc == 0)
			rc = w;
	}
	blk_batch_destroy(&c.batch);
	cio_free(&c);
	if (rc < 0) {
		commit_fail(j, rc, "writing the commit block");
		return;
	}
	/* FINISHED: file the buffers for checkpoint. */
	pthread_mutex_lock(&j->lock);
	struct list_node *n, *tmp;
	list_for_each_safe(n, tmp, &t->buffers) {
		struct jbd_jh *jh = list_entry(n, struct jbd_jh, t_link);
		list_del(&jh->t_link);
		if (jh->dirty_t) {
			if (jh->cp_t)
				jbd__checkpoint_remove(jh);
			jh->cp_t = t;
			jh->jdirty = true;
			list_add_tail(&t->cp, &jh->cp_link);
		}
		free(jh->frozen);
		jh->frozen = NULL;
		jh->dirty_t = false;
		jh->copied = false;
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
	/* Forgotten in this transaction (freed blocks, usually revoked too):
	 * their older committed copies are not written home any more. */
	list_for_each_safe(n, tmp, &t->forget) {
		struct jbd_jh *jh = list_entry(n, struct jbd_jh, f_link);
		list_del(&jh->f_link);
		jh->forget_t = NULL;
		if (!jh->t && jh->cp_t)
			jbd__checkpoint_remove(jh);
		jbd__jh_maybe_free(jh);
	}
	jbd_transaction_set_state(t, JBD_T_FINISHED);
	j->committing = NULL;
	j->reserved_committing = 0;
	j->commit_sequence = tid;
	if (j->commit_requested && !jbd_tid_gt(j->commit_request, tid))
		j->commit_requested = false;
	int reason = t->reason >= 0 && t->reason < JBD_COMMIT_REASONS ? t->reason : JBD_COMMIT_FORCE;
	if (list_empty(&t->cp))
		jbd__transaction_free(t);
	else
		list_add_tail(&j->checkpoint_list, &t->link);
	j->st.commits++;
	j->st.commits_by[reason]++;
	if (sync)
		j->st.sync_commits++;
	j->st.blocks_logged += logged;
	j->st.descriptor_blocks += descs;
	j->st.revoke_blocks += revblks;
	j->st.escaped += escaped;
	j->st.last_write_op = write_op;
	j->st.last_commit_op = commit_op | (j->cfg.barrier ? BLK_REQ_FLUSH | BLK_REQ_FUA : 0);
	hist_add(&j->st.commit_ns, clock_now_ns() - t0);
	pthread_cond_broadcast(&j->wait_commit);
	pthread_mutex_unlock(&j->lock);
	/* The tail may move: this transaction may have emptied older ones. */
	(void)jbd_cleanup_tail(j);
}

/* ------------------------------------------------------- the thread */

static void *commit_thread_main(void *arg)
{
	struct jbd_journal *j = arg;
	blk_ioprio_set(j->cfg.ioprio_class, j->cfg.ioprio_level);
	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct jbd_transaction *t = j->running;
		if (!j->aborted && t && j->commit_requested && jbd_tid_geq(j->commit_request, t->tid)) {
			pthread_mutex_unlock(&j->lock);
			jbd_commit_transaction(j);
			pthread_mutex_lock(&j->lock);
			continue;
		}
		if (j->stopping)
			break;
		if (!j->aborted && t && clock_now_ns() >= t->expires_ns) {
			jbd__log_start_commit(j, t->tid, JBD_COMMIT_TIMER);
			continue;
		}
		uint64_t deadline = !j->aborted && t ? t->expires_ns : 0;
		clock_cond_wait_until(&j->wait_thread, &j->lock, deadline);
	}
	j->thread_running = false;
	pthread_cond_broadcast(&j->wait_commit);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

int jbd_commit_thread_start(struct jbd_journal *j)
{
	j->thread_running = true;
	int rc = pthread_create(&j->thread, NULL, commit_thread_main, j);
	if (rc) {
		j->thread_running = false;
		return err_set(-rc, "jbd: cannot start the commit thread");
	}
	return 0;
}

void jbd_commit_thread_stop(struct jbd_journal *j)
{
	pthread_mutex_lock(&j->lock);
	j->stopping = true;
	pthread_cond_broadcast(&j->wait_thread);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->thread, NULL);
}
