/* Ordered data: per-inode lists on transactions (jbd2's jbd2_inode and
 * jbd2_journal_file_inode), for data=ordered and data=guarded.
 *
 * The filesystem creates one jbd_inode per inode that has data to order
 * (jbd_inode_create: allocated by the journal, opaque) and files it in the
 * running transaction from a handle whenever the handle's metadata change
 * must not commit before that inode's data is on disk (a block allocated
 * under dirty data, an extended size). The commit thread, after the
 * transaction is locked, calls every filed inode's submit op (start
 * writing, plugged: the op does not wait), writes revoke and metadata
 * blocks, then calls every inode's wait op before the commit block.
 *
 * An inode is on the list of at most one transaction (ji->t). Filed again
 * while ji->t commits, it is remembered for the running transaction
 * (ji->next_t) and moves onto that one's list when the commit finishes, so
 * its data is written for both commits. While the commit thread runs one
 * of its ops the inode is pinned (commit_running): jbd_inode_release waits
 * for that, so an evicted inode is never called back afterwards.
 *
 * Errors: an op's error aborts the journal (the commit does not write its
 * commit block), unless the journal was loaded with data_err=ignore: then
 * the error is kept in the jbd_inode (jbd_inode_error reports it once,
 * like a mapping's AS_EIO) and counted in jbd_stats.data_errors, and the
 * commit goes on. A strict filing (jbd_inode_file_strict) makes that
 * transaction's errors for the inode abort whatever data_err says: its
 * handle logged something (a size) that must never commit over failed
 * data. Strictness belongs to the transaction: ji->strict to ji->t,
 * ji->next_strict to ji->next_t.
 *
 * Locking: the list fields are [L] (j->lock); ops run without any journal
 * lock, on the commit thread.
 */
#include "jbd_int.h"

#include "../util/clock.h"
#include "../util/err.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int jbd_inode_create(struct jbd_journal *j, const struct jbd_inode_ops *ops, void *ctx, struct jbd_inode **out)
{
	if (!j || !ops || !ops->submit || !ops->wait)
		return err_set(-EINVAL, "jbd: an ordered-data inode needs a journal and submit and wait ops");
	struct jbd_inode *ji = calloc(1, sizeof *ji);
	if (!ji)
		return -ENOMEM;
	ji->j = j;
	ji->ops = ops;
	ji->ctx = ctx;
	list_init(&ji->link);
	*out = ji;
	return 0;
}

static int inode_file(struct jbd_handle *h, struct jbd_inode *ji, bool strict)
{
	struct jbd_journal *j = ji->j;
	if (!h || h->j != j)
		return err_set(-EINVAL, "jbd: inode filed through a handle of another journal");
	int rc = 0;
	pthread_mutex_lock(&j->lock);
	struct jbd_transaction *t = h->t;
	if (j->aborted) {
		rc = -EROFS;
	} else if (!t) {
		rc = err_set(-EINVAL, "jbd: inode filed through a stopped handle");
	} else if (ji->t == t) {
		ji->strict |= strict; /* already filed */
	} else if (ji->next_t == t) {
		ji->next_strict |= strict;
	} else if (ji->t) {
		/* ji->t is committing: this transaction gets it after that. */
		ji->next_t = t;
		ji->next_strict = strict;
	} else {
		ji->t = t;
		ji->strict = strict;
		list_add_tail(&t->inodes, &ji->link);
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int jbd_inode_file(struct jbd_handle *h, struct jbd_inode *ji)
{
	return inode_file(h, ji, false);
}

int jbd_inode_file_strict(struct jbd_handle *h, struct jbd_inode *ji)
{
	return inode_file(h, ji, true);
}

bool jbd_inode_committing(struct jbd_inode *ji)
{
	if (!ji)
		return false;
	struct jbd_journal *j = ji->j;
	pthread_mutex_lock(&j->lock);
	bool c = ji->t && ji->t != j->running;
	pthread_mutex_unlock(&j->lock);
	return c;
}

int jbd_inode_release(struct jbd_inode *ji)
{
	if (!ji)
		return 0;
	struct jbd_journal *j = ji->j;
	pthread_mutex_lock(&j->lock);
	while (ji->commit_running)
		pthread_cond_wait(&j->wait_inode, &j->lock);
	if (ji->t)
		list_del(&ji->link);
	ji->t = ji->next_t = NULL;
	int err = ji->err;
	pthread_mutex_unlock(&j->lock);
	free(ji);
	return err;
}

int jbd_inode_error(struct jbd_inode *ji)
{
	pthread_mutex_lock(&ji->j->lock);
	int err = ji->err;
	ji->err = 0;
	pthread_mutex_unlock(&ji->j->lock);
	return err;
}

unsigned jbd_commit_data_op(struct jbd_journal *j, uint32_t tid)
{
	pthread_mutex_lock(&j->lock);
	bool sync = j->committing && j->committing->tid == tid && j->committing->sync;
	pthread_mutex_unlock(&j->lock);
	return sync ? blk_queue_sync_batch_op(j->q) : BLK_WRITE;
}

uint64_t jbd_commit_data_dirtied_by(struct jbd_journal *j, uint32_t tid)
{
	pthread_mutex_lock(&j->lock);
	uint64_t by = UINT64_MAX;
	if (j->cfg.ordered_txn && j->committing && j->committing->tid == tid && j->committing->data_submit_ns)
		by = j->committing->data_submit_ns;
	pthread_mutex_unlock(&j->lock);
	return by;
}

/* ------------------------------------------------ commit phases */

#ifdef NOSTALL_TEST_HOOKS
/* TEST ONLY - a deliberately broken build for `nostall crashtest` (its test
 * shows the checker catches it, docs/crashtest.md): with the environment
 * variable NOSTALL_DEBUG_SKIP_ORDERED=1 the commit skips the ordered-data
 * submit and wait, so data=ordered commits metadata before its data is on
 * disk (stale data after a crash). Read once per process. Compiled only
 * with -DNOSTALL_TEST_HOOKS (build/nostall-testhooks, the asan and tsan
 * variants): the release library has neither the variable's name nor the
 * getenv (jbd.h's inline stub returns false), so no process linking it
 * can lose ordering through its environment (issue 35). */
bool jbd_debug_skip_ordered(void)
{
	static atomic_int v = -1;
	int x = atomic_load_explicit(&v, memory_order_relaxed);
	if (x < 0) {
		const char *e = getenv("NOSTALL_DEBUG_SKIP_ORDERED");
		x = e && !strcmp(e, "1");
		atomic_store_explicit(&v, x, memory_order_relaxed);
	}
	return x;
}
#endif

/* Run one op of every inode on the committing transaction's list. The
 * lock is dropped around each op; the inode being called is pinned, so its
 * list link stays valid (others may leave the list meanwhile: release). */
static int inodes_run(struct jbd_commit *c, bool submit)
{
	struct jbd_journal *j = c->j;
	struct jbd_transaction *t = c->t;
	int rc = 0;
	if (jbd_debug_skip_ordered())
		return 0;
	pthread_mutex_lock(&j->lock);
	bool ignore = j->cfg.data_err_ignore;
	struct list_node *n = t->inodes.next;
	while (n != &t->inodes) {
		struct jbd_inode *ji = list_entry(n, struct jbd_inode, link);
		ji->commit_running = true;
		pthread_mutex_unlock(&j->lock);
		int e = submit ? ji->ops->submit(ji->ctx, c->tid) : ji->ops->wait(ji->ctx, c->tid);
		pthread_mutex_lock(&j->lock);
		ji->commit_running = false;
		pthread_cond_broadcast(&j->wait_inode);
		if (submit)
			j->st.data_inodes++;
		if (e < 0 && (!ignore || ji->strict)) {
			rc = e;
			break;
		}
		if (e < 0) {
			if (!ji->err)
				ji->err = e;
			j->st.data_errors++;
		}
		n = ji->link.next;
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

enum jbd_commit_phase jbd_commit_data_submit(struct jbd_commit *c)
{
	/* The handles are done (LOCK): what is dirty now is this transaction's
	 * data; what becomes dirty from here on is the next one's
	 * (jbd_commit_data_dirtied_by). */
	pthread_mutex_lock(&c->j->lock);
	c->t->data_submit_ns = clock_now_ns();
	pthread_mutex_unlock(&c->j->lock);
	int rc = inodes_run(c, true);
	return rc < 0 ? jbd_commit_error(c, rc, "submitting ordered data") : JBD_CP_REVOKE;
}

enum jbd_commit_phase jbd_commit_data_wait(struct jbd_commit *c)
{
	int rc = inodes_run(c, false);
	return rc < 0 ? jbd_commit_error(c, rc, "waiting for ordered data") : JBD_CP_LOG_WAIT;
}

void jbd__inodes_finish(struct jbd_transaction *t)
{
	struct list_node *n, *tmp;
	list_for_each_safe(n, tmp, &t->inodes) {
		struct jbd_inode *ji = list_entry(n, struct jbd_inode, link);
		list_del(&ji->link);
		ji->t = ji->next_t;
		ji->strict = ji->next_strict;
		ji->next_t = NULL;
		ji->next_strict = false;
		if (ji->t)
			list_add_tail(&ji->t->inodes, &ji->link);
	}
}

void jbd__inodes_detach(struct jbd_transaction *t)
{
	struct list_node *n, *tmp;
	list_for_each_safe(n, tmp, &t->inodes) {
		struct jbd_inode *ji = list_entry(n, struct jbd_inode, link);
		list_del(&ji->link);
		ji->t = ji->next_t = NULL;
		ji->strict = ji->next_strict = false;
	}
}
