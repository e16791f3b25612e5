/* Revoke tables (block -> transaction id) and the revoke operations of a
 * handle.
 *
 * A revoke record tells recovery not to replay older logged copies of a
 * block (freed metadata that may be reused as data). Each transaction has
 * its own table: the running one collects jbd_revoke() calls and loses a
 * record when the block is journaled again in the same transaction
 * (cancellation: otherwise recovery would skip the new copy too, because a
 * record of transaction T also suppresses T's own copies). The commit
 * writes the table as revoke blocks. Recovery uses one table for the whole
 * log, keeping the newest tid per block.
 *
 * Locking: a transaction's table is protected by j->lock (jbd_int.h);
 * recovery's table is private to the recovering thread.
 */
#include "jbd_int.h"

#include <errno.h>
#include <stdlib.h>

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
