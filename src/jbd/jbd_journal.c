/* Journal lifetime: options, create, load (with recovery), the journal
 * superblock, abort, statistics, destroy.
 *
 * The superblock is the only place the log's tail lives on disk: s_start is
 * the first block recovery must read and s_sequence the transaction it must
 * find there. While loaded, s_start is never 0 (a crash must replay); the
 * clean unmount writes s_start 0 after everything was checkpointed. The
 * superblock is rewritten when the tail moves (jbd_checkpoint.c), at load,
 * at unmount and on abort (s_errno). Writes are WRITE_SYNC, plus FUA with
 * barriers, and waited for.
 *
 * Locking: see jbd_int.h. jbd__write_sb requires j->sb_mutex.
 */
#include "jbd_int.h"

#include "../blk/blk.h"
#include "../buf/buf.h"
#include "../dev/dev.h"
#include "../util/clock.h"
#include "../util/crc32c.h"
#include "../util/err.h"
#include "../util/opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ options */

void jbd_config_default(struct jbd_config *c)
{
	c->commit_interval_ms = 5000;
	c->barrier = true;
	c->barrier_set = false;
	c->ioprio_class = BLK_IOPRIO_CLASS_BE;
	c->ioprio_level = 4;
	c->data_err_ignore = false;
	c->shadow_wait = false;
	c->ordered_txn = false;
	c->shadow_set = false;
	c->checkpoint_full = false;
	c->checkpoint_set = false;
	c->checksum = false;
	c->async_commit = false;
	c->journal_64bit = false;
	c->csum_v3 = false;
	c->csum_v1_set = false;
}

int jbd_config_set(struct jbd_config *c, const char *name, const char *value)
{
	if (!strcmp(name, "commit")) {
		double s;
		if (!value || opts_parse_double(value, &s) < 0 || s < 0 || s > 86400)
			return err_set(-EINVAL, "jbd: commit=%s: want seconds in [0, 86400] (0 = default 5)",
				       value ? value : "");
		c->commit_interval_ms = s == 0 ? 5000 : (unsigned)(s * 1000 + 0.5);
		if (!c->commit_interval_ms)
			c->commit_interval_ms = 1;
		return 0;
	}
	if (!strcmp(name, "barrier")) {
		bool v = true;
		if (value && opts_parse_bool(value, &v) < 0)
			return err_set(-EINVAL, "jbd: barrier=%s: want 0 or 1", value);
		c->barrier = v;
		c->barrier_set = true;
		return 0;
	}
	if (!strcmp(name, "nobarrier") && !value) {
		c->barrier = false;
		c->barrier_set = true;
		return 0;
	}
	if (!strcmp(name, "journal_ioprio")) {
		int cls, lvl;
		if (!value || blk_ioprio_parse(value, &cls, &lvl) < 0)
			return err_set(-EINVAL, "jbd: journal_ioprio=%s: want CLASS/LEVEL (RT/4, BE/4, IDLE)",
				       value ? value : "");
		c->ioprio_class = cls;
		c->ioprio_level = lvl;
		return 0;
	}
	if (!strcmp(name, "journal_shadow")) {
		if (value && !strcmp(value, "wait"))
			c->shadow_wait = true;
		else if (value && !strcmp(value, "copy"))
			c->shadow_wait = false;
		else
			return err_set(-EINVAL, "jbd: journal_shadow=%s: want wait or copy", value ? value : "");
		c->shadow_set = true;
		return 0;
	}
	if (!strcmp(name, "journal_checkpoint")) {
		if (value && !strcmp(value, "full"))
			c->checkpoint_full = true;
		else if (value && !strcmp(value, "early"))
			c->checkpoint_full = false;
		else
			return err_set(-EINVAL, "jbd: journal_checkpoint=%s: want early or full", value ? value : "");
		c->checkpoint_set = true;
		return 0;
	}
	if (!strcmp(name, "data_err")) {
		if (value && !strcmp(value, "ignore"))
			c->data_err_ignore = true;
		else if (value && !strcmp(value, "abort"))
			c->data_err_ignore = false;
		else
			return err_set(-EINVAL, "jbd: data_err=%s: want ignore or abort", value ? value : "");
		return 0;
	}
	/* ext4's names; the value-less forms only. */
	if (!value && !strcmp(name, "journal_checksum")) {
		c->checksum = true;
		return 0;
	}
	if (!value && !strcmp(name, "nojournal_checksum")) {
		c->checksum = false;
		c->async_commit = false;
		return 0;
	}
	if (!value && !strcmp(name, "journal_async_commit")) {
		c->checksum = true;
		c->async_commit = true;
		return 0;
	}
	/* nostall's names for what ext4 asks from its features (jbd.h). */
	if (!value && !strcmp(name, "journal_64bit")) {
		c->journal_64bit = true;
		return 0;
	}
	if (!strcmp(name, "journal_csum")) {
		if (value && !strcmp(value, "v3")) {
			c->csum_v3 = true;
			c->csum_v1_set = false;
		} else if (value && !strcmp(value, "v1")) {
			c->checksum = true;
			c->csum_v3 = false;
			c->csum_v1_set = true;
		} else {
			return err_set(-EINVAL, "jbd: journal_csum=%s: want v1 or v3", value ? value : "");
		}
		return 0;
	}
	return -ENOENT;
}

static int config_cb(void *ctx, const char *name, const char *value)
{
	int rc = jbd_config_set(ctx, name, value);
	if (rc == -ENOENT)
		return err_set(-EINVAL, "jbd: unknown journal option '%s' (known: commit=, barrier=, journal_ioprio=, journal_shadow=, journal_checkpoint=, data_err=, journal_checksum, journal_async_commit, journal_64bit, journal_csum=)",
			       name);
	return rc;
}

int jbd_config_parse(struct jbd_config *c, const char *opts)
{
	if (!opts || !*opts)
		return 0;
	return opts_parse(opts, config_cb, c);
}

void jbd_config_era_defaults(struct jbd_config *c, const char *preset)
{
	if (!preset || !blk_preset_is_era(preset))
		return;
	if (!c->barrier_set)
		c->barrier = false;
	/* fs/jbd waited on BJ_Shadow buffers in every 2009 kernel (and until
	 * ext3 left the tree); nostall's own default copies instead. */
	if (!c->shadow_set)
		c->shadow_wait = true;
	/* fs/jbd's per-transaction data lists (journal_submit_data_buffers
	 * and t_locked_list in every 2009 kernel; ext4's jbd2 waited on the
	 * whole mapping instead). */
	c->ordered_txn = true;
	/* 2.6.30 checkpointed only when a handle found the log full. */
	if (!c->checkpoint_set)
		c->checkpoint_full = true;
}

void jbd_config_era_defaults_opts(struct jbd_config *c, const char *queue_opts)
{
	char last[32];
	if (blk_opts_preset(queue_opts, last, sizeof last))
		jbd_config_era_defaults(c, last);
}

/* ------------------------------------------------------------ create */

int jbd_journal_create(struct dev *dev, const struct jbd_location *loc, const uint8_t uuid[16])
{
	if (loc->nr_blocks < JBD_MIN_JOURNAL_BLOCKS)
		return err_set(-EINVAL, "jbd: a journal needs at least %u blocks (got %u)", JBD_MIN_JOURNAL_BLOCKS,
			       loc->nr_blocks);
	struct jbd_map m;
	int rc = jbd_map_build(&m, dev, NULL, loc, loc->nr_blocks);
	if (rc < 0)
		return rc;
	void *buf;
	if (posix_memalign(&buf, 4096, m.bs)) {
		jbd_map_free(&m);
		return -ENOMEM;
	}
	memset(buf, 0, m.bs);
	struct jbd_superblock *sb = buf;
	sb->s_header.h_magic = cpu_to_be32(JBD_MAGIC_NUMBER);
	sb->s_header.h_blocktype = cpu_to_be32(JBD_SUPERBLOCK_V2);
	sb->s_blocksize = cpu_to_be32(m.bs);
	sb->s_maxlen = cpu_to_be32(loc->nr_blocks);
	sb->s_first = cpu_to_be32(1);
	sb->s_sequence = cpu_to_be32(1);
	sb->s_feature_incompat = cpu_to_be32(JBD_FEATURE_INCOMPAT_REVOKE);
	if (uuid)
		memcpy(sb->s_uuid, uuid, 16);
	sb->s_nr_users = cpu_to_be32(1);
	rc = jbd_map_write(&m, 0, buf, BLK_WRITE_SYNC);
	if (!rc)
		rc = jbd_map_flush(&m);
	free(buf);
	jbd_map_free(&m);
	return rc;
}

/* --------------------------------------------------------- superblock */

/* Set or clear COMPAT_CHECKSUM and INCOMPAT_ASYNC_COMMIT (v2 superblock;
 * only while the log is empty: a transaction already in the log was
 * written under the old setting). */
static void journal_sb_set_csum_features(struct jbd_superblock *sb, bool checksum, bool async_commit)
{
	uint32_t c = be32_to_cpu(sb->s_feature_compat), i = be32_to_cpu(sb->s_feature_incompat);
	c &= ~(uint32_t)JBD_FEATURE_COMPAT_CHECKSUM;
	i &= ~(uint32_t)JBD_FEATURE_INCOMPAT_ASYNC_COMMIT;
	if (checksum)
		c |= JBD_FEATURE_COMPAT_CHECKSUM;
	if (async_commit)
		i |= JBD_FEATURE_INCOMPAT_ASYNC_COMMIT;
	sb->s_feature_compat = cpu_to_be32(c);
	sb->s_feature_incompat = cpu_to_be32(i);
}

/* The jbd2 format this mount writes (j->version 2, the log empty: after
 * recovery), as the kernel's ext4 sets it with jbd2_journal_set_features
 * and clear_features at mount: 64BIT when asked or already set (never
 * cleared); v3 when asked, or when the journal had v2/v3 and the v1
 * checksum was not asked for by name; the v1 checksum only without v3;
 * ASYNC_COMMIT as asked. j->cfg.checksum then means the v1 checksum. */
static void journal_sb_choose_format(struct jbd_journal *j, struct jbd_superblock *sb)
{
	uint32_t i = be32_to_cpu(sb->s_feature_incompat);
	bool had_v23 = i & (JBD_FEATURE_INCOMPAT_CSUM_V2 | JBD_FEATURE_INCOMPAT_CSUM_V3);
	j->v3 = j->cfg.csum_v3 || (had_v23 && !j->cfg.csum_v1_set);
	j->is64 = j->cfg.journal_64bit || (i & JBD_FEATURE_INCOMPAT_64BIT);
	j->cfg.checksum = j->cfg.checksum && !j->v3;
	journal_sb_set_csum_features(sb, j->cfg.checksum, j->cfg.async_commit);
	i = be32_to_cpu(sb->s_feature_incompat);
	i &= ~(uint32_t)(JBD_FEATURE_INCOMPAT_CSUM_V2 | JBD_FEATURE_INCOMPAT_CSUM_V3);
	if (j->v3) {
		i |= JBD_FEATURE_INCOMPAT_CSUM_V3;
		sb->s_checksum_type = JBD_CRC32C_CHKSUM;
	}
	if (j->is64)
		i |= JBD_FEATURE_INCOMPAT_64BIT;
	sb->s_feature_incompat = cpu_to_be32(i);
}

/* j->sb_mutex held. A v2/v3 superblock gets its checksum (the kernel's
 * jbd2_superblock_csum_set before every write). */
int jbd__write_sb(struct jbd_journal *j, uint32_t tail_seq, uint32_t start, int err)
{
	struct jbd_superblock *sb = j->sbbuf;
	sb->s_sequence = cpu_to_be32(tail_seq);
	sb->s_start = cpu_to_be32(start);
	sb->s_errno = cpu_to_be32((uint32_t)err);
	if (j->version == 2 &&
	    (be32_to_cpu(sb->s_feature_incompat) & (JBD_FEATURE_INCOMPAT_CSUM_V2 | JBD_FEATURE_INCOMPAT_CSUM_V3)))
		sb->s_checksum = cpu_to_be32(jbd_sb_csum(sb));
	unsigned rw = BLK_WRITE_SYNC | (j->cfg.barrier ? BLK_REQ_FUA : 0);
	int rc = jbd_map_write(&j->map, 0, j->sbbuf, rw);
	pthread_mutex_lock(&j->lock);
	j->st.sb_writes++;
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int jbd_write_superblock(struct jbd_journal *j, uint32_t tail_seq, uint32_t start, int err, bool wait)
{
	(void)wait; /* always synchronous */
	pthread_mutex_lock(&j->sb_mutex);
	int rc = jbd__write_sb(j, tail_seq, start, err);
	pthread_mutex_unlock(&j->sb_mutex);
	return rc;
}

/* -------------------------------------------------------------- abort */

void jbd__abort(struct jbd_journal *j, int err)
{
	if (j->aborted)
		return;
	j->aborted = true;
	j->err = err < 0 ? err : -EIO;
	pthread_cond_broadcast(&j->wait_locked);
	pthread_cond_broadcast(&j->wait_updates);
	pthread_cond_broadcast(&j->wait_commit);
	pthread_cond_broadcast(&j->wait_thread);
	pthread_cond_broadcast(&j->wait_shadow);
}

void jbd_journal_abort(struct jbd_journal *j, int err)
{
	pthread_mutex_lock(&j->lock);
	bool first = !j->aborted;
	jbd__abort(j, err);
	uint32_t tail = j->tail, seq = j->tail_sequence;
	int e = j->err;
	pthread_mutex_unlock(&j->lock);
	if (!first)
		return;
	/* Record the error where recovery (e2fsck, the next mount) sees it.
	 * Best effort: the device may be what failed. The log is left as it
	 * is, so the committed transactions are still replayed. */
	pthread_mutex_lock(&j->sb_mutex);
	(void)jbd__write_sb(j, seq, tail, e);
	pthread_mutex_unlock(&j->sb_mutex);
}

bool jbd_journal_aborted(struct jbd_journal *j)
{
	pthread_mutex_lock(&j->lock);
	bool a = j->aborted;
	pthread_mutex_unlock(&j->lock);
	return a;
}

int jbd_journal_errno(struct jbd_journal *j)
{
	pthread_mutex_lock(&j->lock);
	int e = j->aborted ? j->err : 0;
	pthread_mutex_unlock(&j->lock);
	return e;
}

/* ---------------------------------------------------------- jh and t */

void jbd__jh_maybe_free(struct jbd_jh *jh)
{
	if (jh->t || jh->next_t || jh->cp_t || jh->forget_t)
		return;
	struct buffer_head *bh = jh->bh;
	free(jh->frozen);
	free(jh->committed);
	free(jh->committed_next);
	buf_set_private(bh, NULL);
	buf_set_jbd(bh, false);
	free(jh);
	buf_put(bh);
}

void jbd__transaction_free(struct jbd_transaction *t)
{
	jbd_revoke_table_free(&t->revoke);
	free(t);
}

const char *jbd_tstate_name(enum jbd_tstate s)
{
	static const char *names[] = { "RUNNING", "LOCKED", "FLUSH", "COMMIT", "FINISHED" };
	return (unsigned)s < 5 ? names[s] : "?";
}

void jbd_transaction_set_state(struct jbd_transaction *t, enum jbd_tstate s)
{
	/* The only legal path is RUNNING -> LOCKED -> FLUSH -> COMMIT ->
	 * FINISHED. Anything else is a bug in this file set, not a runtime
	 * condition: stop at once rather than write a corrupt log. */
	if ((int)s != (int)t->state + 1) {
		fprintf(stderr, "jbd: BUG: transaction %u: illegal state transition %s -> %s\n", t->tid,
			jbd_tstate_name(t->state), jbd_tstate_name(s));
		abort();
	}
	t->state = s;
}

/* Free a journal's memory and synchronisation objects (they exist once
 * `inited` is set); no thread may still use it. */
static void journal_free(struct jbd_journal *j)
{
	if (j->inited) {
		pthread_mutex_destroy(&j->lock);
		pthread_mutex_destroy(&j->checkpoint_mutex);
		pthread_mutex_destroy(&j->sb_mutex);
		pthread_cond_destroy(&j->wait_locked);
		pthread_cond_destroy(&j->wait_updates);
		pthread_cond_destroy(&j->wait_commit);
		pthread_cond_destroy(&j->wait_thread);
		pthread_cond_destroy(&j->wait_inode);
		pthread_cond_destroy(&j->wait_barrier);
		pthread_cond_destroy(&j->wait_shadow);
		pthread_cond_destroy(&j->wait_cp);
	}
	jbd__log_areas_free(j);
	jbd_map_free(&j->map);
	free(j->sbbuf);
	free(j);
}

/* --------------------------------------------------------------- load */

int jbd_journal_load(const struct jbd_params *p, struct jbd_journal **out)
{
	if (!p->q || !p->cache)
		return err_set(-EINVAL, "jbd: load needs a queue and a buffer cache");
	if (buf_cache_block_size(p->cache) != p->loc.block_size)
		return err_set(-EINVAL, "jbd: cache block size %u differs from the journal's %u",
			       buf_cache_block_size(p->cache), p->loc.block_size);
	struct jbd_journal *j = calloc(1, sizeof *j);
	if (!j)
		return -ENOMEM;
	j->cache = p->cache;
	j->q = p->q;
	j->cfg = p->cfg;
	if (!j->cfg.commit_interval_ms)
		j->cfg.commit_interval_ms = 5000;
	j->bs = p->loc.block_size;
	struct dev *dev = blk_queue_dev(p->q);
	int rc;
	if (posix_memalign(&j->sbbuf, 4096, j->bs)) {
		free(j);
		return -ENOMEM;
	}
	/* The superblock first (one mapped block), then the whole map. */
	rc = jbd_map_build(&j->map, dev, p->q, &p->loc, 1);
	if (rc == 0)
		rc = jbd_map_read(&j->map, 0, j->sbbuf);
	jbd_map_free(&j->map);
	struct jbd_recovery_info info = { 0 };
	if (rc == 0)
		rc = jbd_sb_check(j->sbbuf, j->bs, p->loc.nr_blocks, false, &info);
	if (rc == 0)
		rc = jbd_map_build(&j->map, dev, p->q, &p->loc, info.maxlen);
	if (rc < 0)
		goto fail;
	struct jbd_superblock *sb = j->sbbuf;
	if (info.needed) {
		if (p->no_recovery) {
			rc = err_set(-EUCLEAN, "jbd: the journal needs recovery");
			goto fail;
		}
		rc = jbd_recover_map(&j->map, sb, 0, &info);
		if (rc < 0)
			goto fail;
		/* Nothing read before recovery may stay cached. */
		buf_cache_drop_clean(p->cache);
		j->transaction_sequence = info.end_tid + 1;
	} else {
		j->transaction_sequence = info.start_tid + 1;
	}
	j->version = info.sb_version;
	if (j->version == 2) {
		memcpy(j->uuid, sb->s_uuid, 16);
		/* What ext3 does at mount for ordered/writeback data: the log may
		 * carry revoke blocks from now on. */
		sb->s_feature_incompat = cpu_to_be32(be32_to_cpu(sb->s_feature_incompat) | JBD_FEATURE_INCOMPAT_REVOKE);
		/* The log is empty here: the format follows this mount's
		 * options (as jbd2 sets and clears features at each mount),
		 * before the first commit that relies on it. */
		journal_sb_choose_format(j, sb);
	} else if (j->cfg.checksum || j->cfg.csum_v3 || j->cfg.journal_64bit) {
		rc = err_set(-EINVAL, "jbd: journal_checksum, journal_async_commit, journal_csum= and journal_64bit "
				      "need a v2 journal superblock (this journal is v1, which has no feature fields)");
		goto fail;
	}
	j->csum_seed = crc32c(~0u, j->uuid, sizeof j->uuid);
	/* jbd2's journal_tag_bytes (v2 is never written: it becomes v3). */
	j->tag_bytes = j->v3 ? sizeof(struct jbd_block_tag3) : sizeof(struct jbd_block_tag) + (j->is64 ? 4 : 0);
	j->tail_bytes = j->v3 ? sizeof(struct jbd_block_tail) : 0;
	j->first = info.first;
	j->last = info.maxlen;
	j->max_transaction_buffers = (int)(info.maxlen / 4);
	/* The first tag carries the uuid; the tags stop before the tail. */
	j->tags_per_desc = (int)((j->bs - sizeof(struct jbd_header) - JBD_TAG_UUID_SIZE - j->tail_bytes) /
				 j->tag_bytes);
	j->revokes_per_block =
		(int)((j->bs - sizeof(struct jbd_revoke_header) - j->tail_bytes) / (j->is64 ? 8u : 4u));
	j->reserved_blocks = info.maxlen / 32 < 32 ? info.maxlen / 32 : 32;
	j->commit_sequence = j->transaction_sequence - 1;
	/* Reset the log: empty, starting at s_first with the next tid. */
	j->head = j->tail = j->first;
	j->tail_sequence = j->transaction_sequence;
	j->free = j->last - j->first;
	j->st.maxlen = info.maxlen;
	j->st.first = info.first;
	hist_init(&j->st.commit_ns);
	hist_init(&j->st.sync_stop_ns);
	list_init(&j->checkpoint_list);
	pthread_mutex_init(&j->lock, NULL);
	pthread_mutex_init(&j->checkpoint_mutex, NULL);
	pthread_mutex_init(&j->sb_mutex, NULL);
	clock_cond_init(&j->wait_locked);
	clock_cond_init(&j->wait_updates);
	clock_cond_init(&j->wait_commit);
	clock_cond_init(&j->wait_thread);
	clock_cond_init(&j->wait_inode);
	clock_cond_init(&j->wait_barrier);
	clock_cond_init(&j->wait_shadow);
	clock_cond_init(&j->wait_cp);
	j->inited = true;
	/* s_start non-zero from now on: a crash replays what commits. */
	rc = jbd_write_superblock(j, j->tail_sequence, j->tail, 0, true);
	if (rc < 0) {
		rc = err_wrap(rc, "jbd: writing the journal superblock");
		goto fail;
	}
	rc = jbd_cp_thread_start(j);
	if (rc < 0)
		goto fail;
	rc = jbd_commit_thread_start(j);
	if (rc < 0) {
		jbd_cp_thread_stop(j);
		goto fail;
	}
	*out = j;
	return 0;
fail:
	journal_free(j);
	return rc;
}

/* ------------------------------------------------------------ destroy */

enum rel_kind { REL_T, REL_FORGET, REL_CP };

/* Detach every jh of one list; a jh still on another list stays until
 * that list is released too. */
static void release_list(struct list_node *head, enum rel_kind kind)
{
	struct list_node *n, *tmp;
	list_for_each_safe(n, tmp, head) {
		struct jbd_jh *jh;
		list_del(n);
		if (kind == REL_T) {
			jh = list_entry(n, struct jbd_jh, t_link);
			jh->t = jh->next_t = NULL;
		} else if (kind == REL_FORGET) {
			jh = list_entry(n, struct jbd_jh, f_link);
			jh->forget_t = NULL;
		} else {
			jh = list_entry(n, struct jbd_jh, cp_link);
			jh->cp_t = NULL;
			jh->jdirty = false;
		}
		jbd__jh_maybe_free(jh);
	}
}

static void release_transaction(struct jbd_transaction *t)
{
	if (!t)
		return;
	release_list(&t->buffers, REL_T);
	release_list(&t->forget, REL_FORGET);
	release_list(&t->cp, REL_CP);
	jbd__inodes_detach(t);
	jbd__transaction_free(t);
}

int jbd_journal_destroy(struct jbd_journal *j)
{
	if (!j)
		return 0;
	int rc = 0;
	/* No background pass beside the final flush and the release below. */
	jbd_cp_thread_stop(j);
	if (!jbd_journal_aborted(j)) {
		rc = jbd_journal_flush(j);
		if (rc == 0 && !jbd_journal_aborted(j)) {
			/* Clean: nothing to replay; the next mount starts after the
			 * last id used (the kernel's ++j_transaction_sequence). */
			/* Under sb_mutex, and marked emptied: a tail update still in
			 * flight (the commit thread's checkpoint after its last
			 * commit) would otherwise rewrite s_start from j->head after
			 * this write - a clean image whose journal says "replay me"
			 * (found by nostall crashtest). */
			pthread_mutex_lock(&j->sb_mutex);
			pthread_mutex_lock(&j->lock);
			j->tail = 0;
			j->tail_sequence = ++j->transaction_sequence;
			j->emptied = true;
			uint32_t seq = j->tail_sequence;
			pthread_mutex_unlock(&j->lock);
			/* An empty log needs no checksum rules: clearing them keeps
			 * the image mountable by a 2.6.30 ext3, which refuses
			 * INCOMPAT_ASYNC_COMMIT. 64BIT and CSUM_V3 stay, as the
			 * kernel leaves them (the filesystem asks for them at
			 * every mount). */
			if (j->version == 2)
				journal_sb_set_csum_features(j->sbbuf, false, false);
			rc = jbd__write_sb(j, seq, 0, 0);
			pthread_mutex_unlock(&j->sb_mutex);
			if (rc == 0)
				rc = jbd_map_flush(&j->map);
		}
	}
	jbd_commit_thread_stop(j);
	pthread_mutex_lock(&j->lock);
	if (j->aborted)
		rc = j->err;
	/* Everything still attached is dropped; after an abort the log keeps
	 * what recovery needs. Lists are detached one by one so a jh on
	 * several lists is freed only when the last one lets go. */
	struct jbd_transaction *run = j->running, *com = j->committing;
	j->running = j->committing = NULL;
	struct list_node *n, *tmp;
	list_for_each_safe(n, tmp, &j->checkpoint_list) {
		struct jbd_transaction *t = list_entry(n, struct jbd_transaction, link);
		list_del(n);
		release_transaction(t);
	}
	release_transaction(com);
	release_transaction(run);
	pthread_mutex_unlock(&j->lock);
	journal_free(j);
	return rc;
}

/* -------------------------------------------------------------- stats */

void jbd_journal_stats(struct jbd_journal *j, struct jbd_stats *out)
{
	pthread_mutex_lock(&j->lock);
	*out = j->st;
	out->head = j->head;
	out->tail = j->tail;
	out->free = j->free;
	out->tail_sequence = j->tail_sequence;
	out->transaction_sequence = j->transaction_sequence;
	out->commit_sequence = j->commit_sequence;
	pthread_mutex_unlock(&j->lock);
}

uint32_t jbd_journal_running_tid(struct jbd_journal *j)
{
	pthread_mutex_lock(&j->lock);
	uint32_t tid = j->running ? j->running->tid : j->transaction_sequence;
	pthread_mutex_unlock(&j->lock);
	return tid;
}
