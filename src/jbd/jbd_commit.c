/* The commit thread (kjournald) and the commit of one transaction.
 *
 * The thread sleeps until a commit is requested (sync handle, full
 * transaction, a handle that did not fit, force/flush) or the running
 * transaction's commit interval expires. Its I/O priority is the
 * journal_ioprio option (default BE/4; RT/4 is Arjan van de Ven's 2008
 * patch).
 *
 * A commit is a state machine of phases (enum jbd_commit_phase, jbd_int.h;
 * transaction states in capitals):
 *   LOCK         RUNNING -> LOCKED: no new handles; wait until the open
 *                ones stop;
 *   SWITCH       LOCKED -> FLUSH: the transaction becomes the committing one
 *                and a new running transaction may start; log space for
 *                the commit is reserved;
 *   DATA_SUBMIT  each filed jbd_inode's submit op (ordered data, plugged;
 *                jbd_inode.c);
 *   REVOKE       revoke blocks (jbd_revoke.c);
 *   METADATA     descriptor blocks with tags and the metadata copies
 *                (blocks starting with the JBD magic are escaped: the
 *                copy's first 4 bytes zeroed, tag flag ESCAPE), submitted;
 *   DATA_WAIT    each filed jbd_inode's wait op: the data is on disk before
 *                the commit block;
 *   LOG_WAIT     every log block done (the wait unplugs);
 *   (async)      with journal_async_commit the commit block, carrying the
 *                v1 checksum of every descriptor and copy, is submitted
 *                at the end of METADATA, plain, beside the data and log
 *                blocks still in flight (one device round trip for all);
 *                COMMIT_BLOCK then only flushes the cache (barrier=1):
 *                one flush per commit, and a commit block that reaches
 *                the disk before its blocks fails its checksum at
 *                recovery, which then ends the log there;
 *   COMMIT_BLOCK FLUSH -> COMMIT: with barrier=1 the commit block is a
 *                barrier (FLUSH + FUA; a returned fsync survives power
 *                loss), which the queue runs per its barrier_mode: under
 *                the era presets 2.6.30's ordered sequence (everything
 *                queued ahead, an async flood included, is drained first,
 *                then pre-flush, write, post-flush), under nostall's default
 *                one flush + FUA command (2.6.37+, no drain); with barrier=0
 *                (2009's default, which the era presets bring) plain;
 *   FINISH       COMMIT -> FINISHED: buffers move to this transaction's
 *                checkpoint list, inodes to the running transaction or off
 *                the lists, statistics, waiters woken.
 * Any runtime error goes to ABORT: the bios in flight are waited for and
 * the journal aborts (never an assert).
 * Write ops follow the era (docs/journal.md): a synchronous commit (a sync
 * handle waits for it) uses blk_queue_sync_batch_op(q) — WRITE under
 * 2.6.29, WRITE_SYNC (unplug per buffer) under 2.6.30-rc1, WRITE_SYNC_PLUG
 * (plugged, the wait unplugs) under 2.6.30 — and any other commit WRITE.
 * The commit block is WRITE_SYNC (sync_dirty_buffer), WRITE under 2.6.29.
 *
 * The log blocks are private memory copies, so nothing a new transaction
 * does to a buffer can reach the log of this one. With journal_shadow=wait
 * (the era presets) the commit runs as 2.6.30's fs/jbd did: the ordered
 * data is written and waited for first (DATA_SUBMIT, DATA_WAIT, then
 * REVOKE, METADATA, LOG_WAIT), and each metadata buffer is shadowed from
 * the moment its log copy is taken until that log write completes (the
 * bio's completion clears it and wakes j->wait_shadow); a handle asking
 * for write access to a shadowed buffer waits (jbd_trans.c). The copy
 * still protects the log; the wait is the 2009 latency, bounded by how
 * fast the log write gets through the queue at journal_ioprio (seed 010).
 *
 * Locking: j->lock around every shared field; never held across I/O or a
 * jbd_inode op.
 */
#include "jbd_int.h"

#include "../blk/blk.h"
#include "../buf/buf.h"
#include "../util/clock.h"
#include "../util/blockmem.h"
#include "../util/crc32.h"
#include "../util/crc32c.h"
#include "../util/stalltrace.h"
#include "../util/err.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ commit requests */

bool jbd__log_request_commit(struct jbd_journal *j, uint32_t tid, int reason)
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
	return true;
}

bool jbd__log_start_commit(struct jbd_journal *j, uint32_t tid, int reason)
{
	if (!jbd__log_request_commit(j, tid, reason))
		return false;
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

/* Blocks per bio of a log run (512 KiB at 4 KiB: the default
 * max_sectors_kb, so the queue does not split it). */
#define JBD_LOG_RUN_MAX 128

/* Bytes of a log area: a descriptor and the most tags it holds. */
static size_t log_area_bytes(const struct jbd_journal *j)
{
	int tags = j->tags_per_desc < 512 ? j->tags_per_desc : 512;
	return (size_t)(1 + tags) * j->bs;
}

/* A kept log area or a new one (NULL: no memory; the group then takes a
 * block at a time). j->lock not held. */
static void *log_area_get(struct jbd_journal *j)
{
	void *p = NULL;
	pthread_mutex_lock(&j->lock);
	if (j->nr_log_areas)
		p = j->log_areas[--j->nr_log_areas];
	pthread_mutex_unlock(&j->lock);
	if (!p) /* in huge pages: blockmem.h */
		p = blockmem_huge_alloc(log_area_bytes(j));
	return p;
}

/* j->lock held. */
static void log_area_put_locked(struct jbd_journal *j, void *p)
{
	if (p && j->nr_log_areas < JBD_LOG_AREAS)
		j->log_areas[j->nr_log_areas++] = p;
	else
		free(p);
}

void jbd__log_areas_free(struct jbd_journal *j)
{
	while (j->nr_log_areas)
		free(j->log_areas[--j->nr_log_areas]);
}

/* A log block owned by the commit (NULL: ENOMEM), zeroed if `zero`. Its
 * data is its own block (data NULL) or `data` in a log area (mem says
 * which; the block that owns the area gives it back at commit_free, also
 * when this fails). */
static struct jbd_logblk *blk_new_at(struct jbd_commit *c, void *data, enum jbd_logmem mem, bool zero)
{
	struct jbd_logblk *b = NULL;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct jbd_logblk **nb = realloc(c->blks, cap * sizeof *nb);
		if (!nb)
			goto fail;
		c->blks = nb;
		c->cap = cap;
	}
	b = calloc(1, sizeof *b);
	if (!b)
		goto fail;
	b->mem = mem;
	if (mem == JBD_LOGMEM_OWN) {
		/* 4 KiB blocks from blockmem (no posix_memalign slack per block). */
		if (c->j->bs >= 4096)
			data = blockmem_alloc(c->j->bs);
		else if (posix_memalign(&data, 4096, c->j->bs))
			data = NULL;
		if (!data) {
			free(b);
			return NULL;
		}
	}
	b->data = data;
	if (zero)
		memset(b->data, 0, c->j->bs);
	c->blks[c->n++] = b;
	return b;
fail:
	if (mem == JBD_LOGMEM_AREA)
		log_area_put_locked(c->j, data);
	return NULL;
}

static struct jbd_logblk *blk_new(struct jbd_commit *c)
{
	return blk_new_at(c, NULL, JBD_LOGMEM_OWN, true);
}

static void commit_free(struct jbd_commit *c)
{
	struct jbd_journal *j = c->j;
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < c->n; i++) {
		struct jbd_logblk *b = c->blks[i];
		if (b->mem == JBD_LOGMEM_AREA)
			log_area_put_locked(j, b->data);
		else if (b->mem == JBD_LOGMEM_OWN && j->bs >= 4096)
			blockmem_free(b->data, j->bs);
		else if (b->mem == JBD_LOGMEM_OWN)
			free(b->data);
		free(b);
	}
	pthread_mutex_unlock(&j->lock);
	free(c->blks);
}

/* The next free log block (j->lock held). Never runs into the tail: the
 * space rules reserve what a commit needs, so running out is a bug or a
 * revoke storm; either way the journal aborts instead of overwriting live
 * log. */
static int log_block(struct jbd_journal *j, uint32_t *out)
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

/* jbd_commit_blk_start in a log area (area NULL: its own block). */
static struct jbd_logblk *blk_start_at(struct jbd_commit *c, void *area, uint32_t type, uint32_t *jb, int *rc)
{
	struct jbd_logblk *b = area ? blk_new_at(c, area, JBD_LOGMEM_AREA, true) : blk_new(c);
	if (!b) {
		*rc = -ENOMEM;
		return NULL;
	}
	*rc = log_block(c->j, jb);
	if (*rc < 0)
		return NULL;
	struct jbd_header *h = b->data;
	h->h_magic = cpu_to_be32(JBD_MAGIC_NUMBER);
	h->h_blocktype = cpu_to_be32(type);
	h->h_sequence = cpu_to_be32(c->tid);
	return b;
}

struct jbd_logblk *jbd_commit_blk_start(struct jbd_commit *c, uint32_t type, uint32_t *jb, int *rc)
{
	return blk_start_at(c, NULL, type, jb, rc);
}

/* b and the n - 1 blocks after it in memory as one bio at journal block jb. */
static int commit_submit_n(struct jbd_commit *c, struct jbd_logblk *b, uint32_t jb, int n, unsigned rw)
{
	struct jbd_journal *j = c->j;
	b->bio.sector = j->map.phys[jb] * (j->bs / 512);
	b->bio.size = (uint32_t)n * j->bs;
	b->bio.data = b->data;
	b->bio.rw = rw;
	return blk_batch_submit(j->q, &c->batch, &b->bio);
}

int jbd_commit_submit(struct jbd_commit *c, struct jbd_logblk *b, uint32_t jb, unsigned rw)
{
	return commit_submit_n(c, b, jb, 1, rw);
}

/* Submit bs[0..n) (journal blocks jbs[0..n)) as one bio per run of blocks
 * consecutive both on the device and in memory, at most JBD_LOG_RUN_MAX
 * long (1 with an unplugging op): a descriptor group in its log area is usually one or a few runs,
 * instead of a bio per block merged (and bounce-copied) by the queue. */
static int commit_submit_runs(struct jbd_commit *c, struct jbd_logblk **bs, const uint32_t *jbs, int n, unsigned rw)
{
	struct jbd_journal *j = c->j;
	/* An op that unplugs per bio (2.6.30-rc1's WRITE_SYNC) is that era's
	 * one request per log buffer (the regression its preset shows): a
	 * bio per block then, as it submitted them. */
	int max = (rw & BLK_REQ_UNPLUG) ? 1 : JBD_LOG_RUN_MAX;
	int rc = 0;
	for (int i = 0; i < n && rc == 0;) {
		int k = 1;
		while (i + k < n && k < max && j->map.phys[jbs[i + k]] == j->map.phys[jbs[i]] + (uint64_t)k &&
		       bs[i + k]->data == (char *)bs[i]->data + (size_t)k * j->bs) {
			bs[i + k - 1]->run_next = bs[i + k];
			k++;
		}
		rc = commit_submit_n(c, bs[i], jbs[i], k, rw);
		i += k;
	}
	return rc;
}

/* A log block's bio completed (or was refused): its buffer is no longer
 * shadowed. Runs on the completing thread, no lock held; the jh stays
 * valid because the committing transaction owns it until FINISH, which
 * comes after every bio of the batch is done. */
static void commit_bio_done(struct bio *bio, int err, void *ctx)
{
	(void)err; /* the batch records it; the commit aborts at its wait */
	struct jbd_journal *j = ctx;
	struct jbd_logblk *first = (struct jbd_logblk *)((char *)bio - offsetof(struct jbd_logblk, bio));
	/* A run may start with its descriptor (never shadowed); shadow is
	 * set before the submit and cleared only here. */
	struct jbd_logblk *b = first;
	while (b && !b->shadow)
		b = b->run_next;
	if (!b)
		return;
	pthread_mutex_lock(&j->lock);
	for (; b; b = b->run_next) {
		if (b->shadow) {
			b->shadow->shadow = false;
			b->shadow = NULL;
		}
	}
	pthread_cond_broadcast(&j->wait_shadow);
	pthread_mutex_unlock(&j->lock);
}

/* Unshadow what a failed commit never submitted (ABORT, after the batch
 * is done). */
static void commit_unshadow_all(struct jbd_commit *c)
{
	pthread_mutex_lock(&c->j->lock);
	for (size_t i = 0; i < c->n; i++) {
		if (c->blks[i]->shadow) {
			c->blks[i]->shadow->shadow = false;
			c->blks[i]->shadow = NULL;
		}
	}
	pthread_cond_broadcast(&c->j->wait_shadow);
	pthread_mutex_unlock(&c->j->lock);
}

/* Record the error that sends the commit to ABORT. */
enum jbd_commit_phase jbd_commit_error(struct jbd_commit *c, int err, const char *what)
{
	c->err = err < 0 ? err : -EIO;
	c->failed = what;
	return JBD_CP_ABORT;
}

/* ---------------------------------------------------------- the phases */

static enum jbd_commit_phase phase_lock(struct jbd_commit *c)
{
	struct jbd_journal *j = c->j;
	pthread_mutex_lock(&j->lock);
	struct jbd_transaction *t = j->running;
	if (!t || j->aborted) {
		j->commit_requested = false;
		pthread_mutex_unlock(&j->lock);
		return JBD_CP_DONE;
	}
	jbd_transaction_set_state(t, JBD_T_LOCKED);
	while (t->updates && !j->aborted)
		pthread_cond_wait(&j->wait_updates, &j->lock);
	c->t = t;
	c->tid = t->tid;
	bool aborted = j->aborted;
	pthread_mutex_unlock(&j->lock);
	return aborted ? JBD_CP_DONE : JBD_CP_SWITCH;
}

static enum jbd_commit_phase phase_switch(struct jbd_commit *c)
{
	struct jbd_journal *j = c->j;
	struct jbd_transaction *t = c->t;
	pthread_mutex_lock(&j->lock);
	if (j->aborted) {
		/* Aborted since LOCK: the transaction stays as it is. */
		pthread_mutex_unlock(&j->lock);
		return JBD_CP_DONE;
	}
	jbd_transaction_set_state(t, JBD_T_FLUSH);
	j->committing = t;
	j->running = NULL;
	t->log_start = j->head;
	/* Only the running transaction's revoke table changes: this one is
	 * fixed from now on. */
	c->nrev = (int)t->revoke.count;
	int nrevblk = (c->nrev + j->revokes_per_block - 1) / j->revokes_per_block;
	j->reserved_committing = t->nbuffers + (t->nbuffers + j->tags_per_desc - 1) / j->tags_per_desc + nrevblk + 1;
	c->sync = t->sync;
	c->data_first = j->cfg.shadow_wait;
	c->csum = j->cfg.checksum; /* v1 only: the load cleared it under v3 */
	c->async = j->cfg.async_commit;
	c->crc = ~0u;
	/* New handles may start the next transaction now. */
	pthread_cond_broadcast(&j->wait_locked);
	/* The reserve may leave the log short: older transactions can go
	 * home while this one goes to the log (journal_checkpoint=early). */
	jbd__cp_kick(j);
	pthread_mutex_unlock(&j->lock);
	unsigned batch_op = blk_queue_sync_batch_op(j->q);
	c->write_op = c->sync ? batch_op : BLK_WRITE;
	c->commit_op = batch_op == BLK_WRITE ? BLK_WRITE : BLK_WRITE_SYNC;
	return JBD_CP_DATA_SUBMIT;
}

static unsigned commit_block_op(const struct jbd_commit *c)
{
	if (c->async)
		return c->commit_op;
	return c->commit_op | (c->j->cfg.barrier ? BLK_REQ_FLUSH | BLK_REQ_FUA : 0);
}

/* Build the commit block (FLUSH -> COMMIT) and submit it with `rw`. */
static int commit_block_submit(struct jbd_commit *c, unsigned rw)
{
	struct jbd_journal *j = c->j;
	pthread_mutex_lock(&j->lock);
	jbd_transaction_set_state(c->t, JBD_T_COMMIT);
	uint32_t cjb = 0;
	int rc = 0;
	struct jbd_logblk *cb = jbd_commit_blk_start(c, JBD_COMMIT_BLOCK, &cjb, &rc);
	pthread_mutex_unlock(&j->lock);
	if (!cb)
		return rc;
	struct jbd_commit_block *h = cb->data;
	if (c->csum) {
		h->h_chksum_type = JBD_CRC32_CHKSUM;
		h->h_chksum_size = JBD_CRC32_CHKSUM_SIZE;
		h->h_chksum[0] = cpu_to_be32(c->crc);
	}
	/* jbd2's recovery takes a checksum mismatch under an older commit
	 * time than the transaction before it for a stale block. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	h->h_commit_sec = cpu_to_be64((uint64_t)now.tv_sec);
	h->h_commit_nsec = cpu_to_be32((uint32_t)now.tv_nsec);
	/* v3: type and size stay 0; the whole block, h_chksum[0] zero. */
	if (j->v3)
		h->h_chksum[0] = cpu_to_be32(crc32c(j->csum_seed, cb->data, j->bs));
	return jbd_commit_submit(c, cb, cjb, rw);
}

/* The log copy of one buffer into b, with its tag at *off of d (j->lock
 * held). */
static void metadata_copy(struct jbd_commit *c, struct jbd_jh *jh, struct jbd_logblk *d, size_t *off,
			  struct jbd_logblk *b, int ntag)
{
	struct jbd_journal *j = c->j;
	/* A frozen copy was settled when taken; the buffer itself has no
	 * writer now (jbd_trans.c: a new owner gets a frozen copy first). */
	if (!jh->frozen)
		buf_csum_settle(jh->bh);
	const void *src = jh->frozen ? jh->frozen : buf_data(jh->bh);
	memcpy(b->data, src, j->bs);
	jh->copied = true;
	if (c->data_first) {
		/* BJ_Shadow until the log write completes (commit_bio_done). */
		jh->shadow = true;
		b->shadow = jh;
	}
	/* A committed copy (undo access) takes the frozen one at FINISH. */
	if (!jh->committed && !jh->committed_stale) {
		free(jh->frozen);
		jh->frozen = NULL;
	}
	uint32_t flags = ntag ? JBD_FLAG_SAME_UUID : 0;
	uint32_t first4;
	memcpy(&first4, b->data, 4);
	if (be32_to_cpu(first4) == JBD_MAGIC_NUMBER) {
		memset(b->data, 0, 4);
		flags |= JBD_FLAG_ESCAPE;
		c->escaped++;
	}
	/* The tag (jbd_format.h): the 8 classic bytes, t_blocknr_high with
	 * 64BIT; the v3 t_checksum is filled in when the group is final
	 * (tags_finish). */
	struct jbd_block_tag3 *tag = (void *)((char *)d->data + *off);
	tag->t_blocknr = cpu_to_be32((uint32_t)jh->blocknr);
	tag->t_flags = cpu_to_be32(flags);
	if (j->is64)
		tag->t_blocknr_high = cpu_to_be32((uint32_t)(jh->blocknr >> 32));
	*off += j->tag_bytes;
	if (!ntag) {
		memcpy((char *)d->data + *off, j->uuid, 16);
		*off += 16;
	}
}

void jbd_block_tail_set(const struct jbd_journal *j, void *blk)
{
	struct jbd_block_tail *tail = (void *)((char *)blk + j->bs - sizeof *tail);
	tail->t_checksum = 0;
	tail->t_checksum = cpu_to_be32(crc32c(j->csum_seed, blk, j->bs));
}

/* Offset of tag i in a descriptor block: the first tag is followed by the
 * journal uuid, the others carry SAME_UUID. */
static size_t tag_offset(const struct jbd_journal *j, int i)
{
	return sizeof(struct jbd_header) + (size_t)i * j->tag_bytes + (i ? JBD_TAG_UUID_SIZE : 0);
}

/* v3, once a descriptor group is final (its private copies, escaped as in
 * the log): each tag's crc32c(seed, be32 tid, the logged block), then the
 * descriptor's tail over the whole block with the tail zero (jbd2's
 * jbd2_block_tag_csum_set and jbd2_descriptor_block_csum_set). */
static void tags_finish(struct jbd_commit *c, struct jbd_logblk *const *blks, int ntag)
{
	const struct jbd_journal *j = c->j;
	if (!j->v3)
		return;
	char *d = blks[0]->data;
	uint32_t seq = cpu_to_be32(c->tid);
	uint32_t seed = crc32c(j->csum_seed, &seq, sizeof seq);
	for (int i = 0; i < ntag; i++) {
		struct jbd_block_tag3 *tag = (void *)(d + tag_offset(j, i));
		tag->t_checksum = cpu_to_be32(crc32c(seed, blks[i + 1]->data, j->bs));
	}
	jbd_block_tail_set(j, d);
}

/* Descriptor groups: filled under the lock (copies and log positions),
 * submitted outside it. Each group lives in one log area (descriptor, then
 * the copies, contiguous in memory), so the group goes out as one bio per
 * run of consecutive journal blocks (commit_submit_runs). */
static enum jbd_commit_phase phase_metadata(struct jbd_commit *c)
{
	struct jbd_journal *j = c->j;
	struct jbd_transaction *t = c->t;
	struct list_node *pos = t->buffers.next;
	int rc = 0;
	for (;;) {
		size_t first_idx = c->n;
		uint32_t jblocks[1 + 512];
		int ntag = 0;
		char *area = log_area_get(j);
		pthread_mutex_lock(&j->lock);
		/* skip buffers that were reserved but not dirtied */
		while (pos != &t->buffers && !list_entry(pos, struct jbd_jh, t_link)->dirty_t)
			pos = pos->next;
		if (pos == &t->buffers) {
			log_area_put_locked(j, area);
			pthread_mutex_unlock(&j->lock);
			break;
		}
		/* The descriptor owns the area from here (also on failure). */
		struct jbd_logblk *d = blk_start_at(c, area, JBD_DESCRIPTOR_BLOCK, &jblocks[0], &rc);
		size_t off = sizeof(struct jbd_header);
		struct jbd_block_tag *last = NULL;
		while (d && pos != &t->buffers && ntag < j->tags_per_desc && ntag < 512) {
			struct jbd_jh *jh = list_entry(pos, struct jbd_jh, t_link);
			pos = pos->next;
			if (!jh->dirty_t)
				continue;
			if (!j->is64 && jh->blocknr > UINT32_MAX) {
				/* The filesystem asks for journal_64bit when its
				 * blocks can be there; a tag would lose the high bits. */
				rc = -EOVERFLOW;
				break;
			}
			/* No zeroing: the copy fills the block. */
			struct jbd_logblk *b = area ? blk_new_at(c, area + (size_t)(ntag + 1) * j->bs, JBD_LOGMEM_IN_AREA, false)
						    : blk_new(c);
			if (!b) {
				rc = -ENOMEM;
				break;
			}
			rc = log_block(j, &jblocks[ntag + 1]);
			if (rc < 0)
				break;
			last = (void *)((char *)d->data + off);
			metadata_copy(c, jh, d, &off, b, ntag);
			ntag++;
			c->logged++;
		}
		if (last)
			last->t_flags = cpu_to_be32(be32_to_cpu(last->t_flags) | JBD_FLAG_LAST_TAG);
		pthread_mutex_unlock(&j->lock);
		if (rc < 0)
			break;
		c->descs++;
		tags_finish(c, c->blks + first_idx, ntag);
		/* The group is final (private copies): its part of the checksum,
		 * descriptor first, as recovery reads them. */
		for (int i = 0; c->csum && i <= ntag; i++)
			c->crc = crc32_be(c->crc, c->blks[first_idx + (size_t)i]->data, j->bs);
		rc = commit_submit_runs(c, c->blks + first_idx, jblocks, ntag + 1, c->write_op);
		if (rc < 0)
			break;
	}
	/* Async: the commit block joins the log (and the data) in flight. */
	if (rc == 0 && c->async)
		rc = commit_block_submit(c, commit_block_op(c));
	return rc < 0 ? jbd_commit_error(c, rc, "writing the log") : JBD_CP_DATA_WAIT;
}

/* Every log block must be done before the commit block goes out (async:
 * the commit block too, submitted with them at METADATA). */
static enum jbd_commit_phase phase_log_wait(struct jbd_commit *c)
{
	int rc = blk_batch_wait(c->j->q, &c->batch);
	return rc < 0 ? jbd_commit_error(c, rc, "writing the log") : JBD_CP_COMMIT_BLOCK;
}

static enum jbd_commit_phase phase_commit_block(struct jbd_commit *c)
{
	struct jbd_journal *j = c->j;
	int rc = 0;
	if (!c->async) {
		rc = commit_block_submit(c, commit_block_op(c));
		int w = blk_batch_wait(j->q, &c->batch);
		if (rc == 0)
			rc = w;
	} else if (j->cfg.barrier) {
		/* Async (the commit block went out at METADATA): log, commit
		 * block and the data before them are written; one flush makes
		 * them durable together. */
		rc = jbd_map_flush(&j->map);
		if (rc == 0) {
			pthread_mutex_lock(&j->lock);
			j->st.async_flushes++;
			pthread_mutex_unlock(&j->lock);
		}
	}
	return rc < 0 ? jbd_commit_error(c, rc, "writing the commit block") : JBD_CP_FINISH;
}

static enum jbd_commit_phase phase_finish(struct jbd_commit *c)
{
	struct jbd_journal *j = c->j;
	struct jbd_transaction *t = c->t;
	pthread_mutex_lock(&j->lock);
	struct list_node *n, *tmp;
	list_for_each_safe(n, tmp, &t->buffers)
		jbd__jh_commit_done(list_entry(n, struct jbd_jh, t_link), t);
	/* Forgotten in this transaction (freed blocks, usually revoked too):
	 * their older committed copies are not written home any more (the
	 * checkpoint waits for this commit rather than write them). */
	list_for_each_safe(n, tmp, &t->forget) {
		struct jbd_jh *jh = list_entry(n, struct jbd_jh, f_link);
		list_del(&jh->f_link);
		jh->forget_t = NULL;
		if (!jh->t && jh->cp_t)
			jbd__checkpoint_remove(jh);
		jbd__jh_maybe_free(jh);
	}
	jbd__inodes_finish(t);
	jbd_transaction_set_state(t, JBD_T_FINISHED);
	j->committing = NULL;
	j->reserved_committing = 0;
	j->commit_sequence = c->tid;
	if (j->commit_requested && !jbd_tid_gt(j->commit_request, c->tid))
		j->commit_requested = false;
	int reason = t->reason >= 0 && t->reason < JBD_COMMIT_REASONS ? t->reason : JBD_COMMIT_FORCE;
	if (list_empty(&t->cp))
		jbd__transaction_free(t);
	else
		list_add_tail(&j->checkpoint_list, &t->link);
	c->t = NULL;
	j->st.commits++;
	j->st.commits_by[reason]++;
	if (c->sync)
		j->st.sync_commits++;
	j->st.blocks_logged += c->logged;
	j->st.descriptor_blocks += c->descs;
	j->st.revoke_blocks += c->revblks;
	j->st.escaped += c->escaped;
	j->st.last_write_op = c->write_op;
	j->st.last_commit_op = commit_block_op(c);
	hist_add(&j->st.commit_ns, clock_now_ns() - c->t0);
	jbd__cp_kick(j);
	pthread_mutex_unlock(&j->lock);
	/* Woken after the unlock: a waiter woken under it (the fsync caller)
	 * would run only to block on j->lock, and be woken once more, on the
	 * other CPU by then (measured: ~25 us an fsync on a 2-vCPU VM). The
	 * journal outlives this: it stops this thread before it is freed. */
	pthread_cond_broadcast(&j->wait_commit);
	/* The tail may move: this transaction may have emptied older ones
	 * (lazily: jbd__cleanup_tail_lazy). */
	(void)jbd__cleanup_tail_lazy(j);
	return JBD_CP_DONE;
}

/* The transaction stays the committing one (the log keeps what recovery
 * needs); waiters are woken by the abort. */
static enum jbd_commit_phase phase_abort(struct jbd_commit *c)
{
	(void)blk_batch_wait(c->j->q, &c->batch);
	commit_unshadow_all(c);
	err_wrap(c->err, "jbd: commit of transaction %u: %s", c->tid, c->failed ? c->failed : "failed");
	jbd_journal_abort(c->j, c->err);
	return JBD_CP_DONE;
}

/* ------------------------------------------------------ the machine */

typedef enum jbd_commit_phase (*phase_fn)(struct jbd_commit *c);

static const phase_fn phase_fns[JBD_CP_PHASES] = {
	[JBD_CP_LOCK] = phase_lock,
	[JBD_CP_SWITCH] = phase_switch,
	[JBD_CP_DATA_SUBMIT] = jbd_commit_data_submit,
	[JBD_CP_REVOKE] = jbd_commit_write_revoke,
	[JBD_CP_METADATA] = phase_metadata,
	[JBD_CP_DATA_WAIT] = jbd_commit_data_wait,
	[JBD_CP_LOG_WAIT] = phase_log_wait,
	[JBD_CP_COMMIT_BLOCK] = phase_commit_block,
	[JBD_CP_FINISH] = phase_finish,
	[JBD_CP_ABORT] = phase_abort,
};

#define PH(p) (1u << (p))
/* Legal successors: the next phase; DONE from LOCK/SWITCH when there is
 * nothing to commit or the journal is already aborted; ABORT from every
 * phase that does I/O or allocates. */
static const unsigned phase_next[JBD_CP_PHASES] = {
	[JBD_CP_LOCK] = PH(JBD_CP_SWITCH) | PH(JBD_CP_DONE),
	[JBD_CP_SWITCH] = PH(JBD_CP_DATA_SUBMIT) | PH(JBD_CP_DONE),
	[JBD_CP_DATA_SUBMIT] = PH(JBD_CP_REVOKE) | PH(JBD_CP_ABORT),
	[JBD_CP_REVOKE] = PH(JBD_CP_METADATA) | PH(JBD_CP_ABORT),
	[JBD_CP_METADATA] = PH(JBD_CP_DATA_WAIT) | PH(JBD_CP_ABORT),
	[JBD_CP_DATA_WAIT] = PH(JBD_CP_LOG_WAIT) | PH(JBD_CP_ABORT),
	[JBD_CP_LOG_WAIT] = PH(JBD_CP_COMMIT_BLOCK) | PH(JBD_CP_ABORT),
	[JBD_CP_COMMIT_BLOCK] = PH(JBD_CP_FINISH) | PH(JBD_CP_ABORT),
	[JBD_CP_FINISH] = PH(JBD_CP_DONE),
	[JBD_CP_ABORT] = PH(JBD_CP_DONE),
};

/* fs/jbd's order (journal_shadow=wait): the data first, then the log.
 * Legal successors and the success successor of each reordered phase. */
static const unsigned phase_next_jbd[JBD_CP_PHASES] = {
	[JBD_CP_LOCK] = PH(JBD_CP_SWITCH) | PH(JBD_CP_DONE),
	[JBD_CP_SWITCH] = PH(JBD_CP_DATA_SUBMIT) | PH(JBD_CP_DONE),
	[JBD_CP_DATA_SUBMIT] = PH(JBD_CP_DATA_WAIT) | PH(JBD_CP_ABORT),
	[JBD_CP_DATA_WAIT] = PH(JBD_CP_REVOKE) | PH(JBD_CP_ABORT),
	[JBD_CP_REVOKE] = PH(JBD_CP_METADATA) | PH(JBD_CP_ABORT),
	[JBD_CP_METADATA] = PH(JBD_CP_LOG_WAIT) | PH(JBD_CP_ABORT),
	[JBD_CP_LOG_WAIT] = PH(JBD_CP_COMMIT_BLOCK) | PH(JBD_CP_ABORT),
	[JBD_CP_COMMIT_BLOCK] = PH(JBD_CP_FINISH) | PH(JBD_CP_ABORT),
	[JBD_CP_FINISH] = PH(JBD_CP_DONE),
	[JBD_CP_ABORT] = PH(JBD_CP_DONE),
};
static const enum jbd_commit_phase jbd_order_succ[JBD_CP_PHASES] = {
	[JBD_CP_DATA_SUBMIT] = JBD_CP_DATA_WAIT,
	[JBD_CP_DATA_WAIT] = JBD_CP_REVOKE,
	[JBD_CP_METADATA] = JBD_CP_LOG_WAIT,
};

/* The phase after `from` that returned `ret`: a success in a reordered
 * phase goes where fs/jbd's order says. */
static enum jbd_commit_phase phase_order(const struct jbd_commit *c, enum jbd_commit_phase from,
					 enum jbd_commit_phase ret)
{
	if (!c->data_first || ret == JBD_CP_ABORT || ret == JBD_CP_DONE || !jbd_order_succ[from])
		return ret;
	return jbd_order_succ[from];
}

const char *jbd_commit_phase_name(enum jbd_commit_phase p)
{
	static const char *names[JBD_CP_PHASES] = { "LOCK",     "SWITCH",   "DATA_SUBMIT",  "REVOKE",
						    "METADATA", "DATA_WAIT", "LOG_WAIT",   "COMMIT_BLOCK",
						    "FINISH",   "DONE",      "ABORT" };
	return (unsigned)p < JBD_CP_PHASES ? names[p] : "?";
}

/* An illegal transition is a bug in this file set, not a runtime
 * condition: stop at once rather than write a corrupt log. */
static void phase_check(const struct jbd_commit *c, enum jbd_commit_phase from, enum jbd_commit_phase to)
{
	const unsigned *next = c->data_first ? phase_next_jbd : phase_next;
	if ((unsigned)to < JBD_CP_PHASES && (next[from] & PH(to)))
		return;
	fprintf(stderr, "jbd: BUG: commit of transaction %u: illegal phase transition %s -> %s\n", c->tid,
		jbd_commit_phase_name(from), jbd_commit_phase_name(to));
	abort();
}

void jbd_commit_transaction(struct jbd_journal *j)
{
	struct jbd_commit c = { .j = j, .t0 = clock_now_ns() };
	blk_batch_init(&c.batch);
	c.batch.bio_done = commit_bio_done;
	c.batch.bio_done_ctx = j;
	enum jbd_commit_phase p = JBD_CP_LOCK;
	while (p != JBD_CP_DONE) {
		uint64_t p0 = stalltrace_t0(); /* phases of a millisecond or more */
		enum jbd_commit_phase next = phase_order(&c, p, phase_fns[p](&c));
		stalltrace_wait(jbd_commit_phase_name(p), p0, c.tid);
		phase_check(&c, p, next);
		p = next;
	}
	/* Every phase that submits waits before it moves on (ABORT too). */
	blk_batch_destroy(&c.batch);
	commit_free(&c);
}

/* ------------------------------------------------------- the thread */

static void *commit_thread_main(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-jbd-commit"); /* top, perf, gdb */
	struct jbd_journal *j = arg;
	blk_ioprio_set(j->cfg.ioprio_class, j->cfg.ioprio_level);
	pthread_mutex_lock(&j->lock);
	/* Idle: no transaction since the last wake-up at a tick (below). */
	bool idle = false;
	for (;;) {
		struct jbd_transaction *t = j->running;
		if (!j->aborted && t && j->commit_requested && jbd_tid_geq(j->commit_request, t->tid)) {
			pthread_mutex_unlock(&j->lock);
			jbd_commit_transaction(j);
			pthread_mutex_lock(&j->lock);
			idle = false;
			continue;
		}
		if (j->stopping)
			break;
		uint64_t now = clock_now_ns();
		if (!j->aborted && t && now >= t->expires_ns) {
			jbd__log_start_commit(j, t->tid, JBD_COMMIT_TIMER);
			continue;
		}
		/* With a transaction: its expiry. Without one: a tick one
		 * interval from now, before the expiry of any transaction
		 * created meanwhile (so that creating one need not wake this
		 * thread, jbd_trans.c); after a tick that found nothing, no
		 * deadline (an idle journal does not wake every interval). */
		uint64_t deadline = 0;
		if (!j->aborted && t) {
			deadline = t->expires_ns;
			idle = false;
		} else if (!j->aborted && !idle) {
			deadline = now + (uint64_t)j->cfg.commit_interval_ms * NS_PER_MS;
			idle = true;
		}
		j->thread_sleeping = true;
		j->thread_sleep_until = deadline;
		clock_cond_wait_until(&j->wait_thread, &j->lock, deadline);
		j->thread_sleeping = false;
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
