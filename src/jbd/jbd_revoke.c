/* Revoke tables (block -> transaction id) and the commit's REVOKE phase
 * (revoke blocks in the log).
 *
 * A revoke record tells recovery not to replay older logged copies of a
 * block (freed metadata that may be reused as data). Each transaction has
 * its own table: the running one collects jbd_revoke() calls and loses a
 * record when the block is journaled again in the same transaction
 * (cancellation: otherwise recovery would skip the new copy too, because a
 * record of transaction T also suppresses T's own copies). The commit
 * writes the table as revoke blocks: a header (magic, type 5, tid, r_count
 * = bytes used including the header) and 32-bit big-endian block numbers
 * (64-bit, high word first, with journal_64bit; under v3 checksums each
 * block ends in a crc32c tail that r_count leaves out), as many blocks as
 * needed. Recovery uses one table for the whole log,
 * keeping the newest tid per block.
 *
 * Locking: a transaction's table is protected by j->lock (jbd_int.h); the
 * committing transaction's table no longer changes (only the running
 * transaction's does). Recovery's table is private to the recovering
 * thread.
 */
#include "jbd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct jbd_revoke_table *t, uint64_t block)
{
	uint64_t h = block * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (t->nslots - 1);
}

int jbd_revoke_table_init(struct jbd_revoke_table *t, size_t nslots)
{
	size_t n = 16;
	while (n < nslots)
		n <<= 1;
	t->slots = calloc(n, sizeof *t->slots);
	if (!t->slots)
		return -ENOMEM;
	t->nslots = n;
	t->count = 0;
	return 0;
}

void jbd_revoke_table_free(struct jbd_revoke_table *t)
{
	if (!t->slots)
		return;
	for (size_t i = 0; i < t->nslots; i++) {
		struct jbd_revoke_rec *r = t->slots[i];
		while (r) {
			struct jbd_revoke_rec *n = r->next;
			free(r);
			r = n;
		}
	}
	free(t->slots);
	t->slots = NULL;
	t->count = 0;
}

struct jbd_revoke_rec *jbd_revoke_table_find(const struct jbd_revoke_table *t, uint64_t block)
{
	if (!t->slots)
		return NULL;
	for (struct jbd_revoke_rec *r = t->slots[slot_of(t, block)]; r; r = r->next)
		if (r->block == block)
			return r;
	return NULL;
}

int jbd_revoke_table_set(struct jbd_revoke_table *t, uint64_t block, uint32_t tid)
{
	struct jbd_revoke_rec *r = jbd_revoke_table_find(t, block);
	if (r) {
		if (jbd_tid_gt(tid, r->tid))
			r->tid = tid;
		return 0;
	}
	r = malloc(sizeof *r);
	if (!r)
		return -ENOMEM;
	size_t s = slot_of(t, block);
	r->block = block;
	r->tid = tid;
	r->next = t->slots[s];
	t->slots[s] = r;
	t->count++;
	return 0;
}

bool jbd_revoke_table_remove(struct jbd_revoke_table *t, uint64_t block)
{
	if (!t->slots)
		return false;
	struct jbd_revoke_rec **pp = &t->slots[slot_of(t, block)];
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->block == block) {
			struct jbd_revoke_rec *r = *pp;
			*pp = r->next;
			free(r);
			t->count--;
			return true;
		}
	}
	return false;
}

/* ------------------------------------------------ the REVOKE phase */

/* A new revoke block with its log position (j->lock held). */
static struct jbd_logblk *revoke_block_new(struct jbd_commit *c, uint32_t *jb, int *rc)
{
	struct jbd_logblk *b = jbd_commit_blk_start(c, JBD_REVOKE_BLOCK, jb, rc);
	if (!b)
		return NULL;
	struct jbd_revoke_header *rh = b->data;
	rh->r_count = cpu_to_be32((uint32_t)sizeof *rh);
	c->revblks++;
	return b;
}

/* Fill every revoke block under the lock (blocks and log positions), then
 * submit them outside it. */
enum jbd_commit_phase jbd_commit_write_revoke(struct jbd_commit *c)
{
	struct jbd_journal *j = c->j;
	if (!c->nrev)
		return JBD_CP_METADATA;
	size_t nblk = ((size_t)c->nrev + (size_t)j->revokes_per_block - 1) / (size_t)j->revokes_per_block;
	uint32_t *jbs = malloc(nblk * sizeof *jbs);
	if (!jbs)
		return jbd_commit_error(c, -ENOMEM, "writing the revoke blocks");
	int rc = 0;
	size_t first_idx = c->n, used = 0;
	struct jbd_logblk *rb = NULL;
	uint32_t roff = 0;
	const struct jbd_revoke_table *tab = &c->t->revoke;
	/* Records are 8 bytes with 64BIT; a v3 block ends in its tail. */
	unsigned rec = j->is64 ? 8 : 4, end = j->bs - j->tail_bytes;
	pthread_mutex_lock(&j->lock);
	for (size_t s = 0; s < tab->nslots && rc == 0; s++) {
		for (struct jbd_revoke_rec *r = tab->slots[s]; r && rc == 0; r = r->next) {
			if (!j->is64 && r->block > UINT32_MAX) {
				rc = -EOVERFLOW; /* needs journal_64bit (jbd_commit.c) */
				break;
			}
			if (!rb || roff + rec > end) {
				if (used == nblk) {
					rc = -EUCLEAN; /* more records than counted: a bug */
					break;
				}
				rb = revoke_block_new(c, &jbs[used], &rc);
				if (!rb)
					break;
				used++;
				roff = sizeof(struct jbd_revoke_header);
			}
			if (rec == 8) {
				uint32_t hi = cpu_to_be32((uint32_t)(r->block >> 32));
				memcpy((char *)rb->data + roff, &hi, 4);
				roff += 4;
			}
			uint32_t v = cpu_to_be32((uint32_t)r->block);
			memcpy((char *)rb->data + roff, &v, 4);
			roff += 4;
			((struct jbd_revoke_header *)rb->data)->r_count = cpu_to_be32(roff);
		}
	}
	pthread_mutex_unlock(&j->lock);
	for (size_t i = 0; i < used && rc == 0 && j->v3; i++)
		jbd_block_tail_set(j, c->blks[first_idx + i]->data);
	for (size_t i = 0; i < used && rc == 0; i++)
		rc = jbd_commit_submit(c, c->blks[first_idx + i], jbs[i], c->write_op);
	free(jbs);
	return rc < 0 ? jbd_commit_error(c, rc, "writing the revoke blocks") : JBD_CP_METADATA;
}
