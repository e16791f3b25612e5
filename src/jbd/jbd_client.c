/* Test client: journals raw metadata-like block updates through handles,
 * the way a filesystem would (get access, change, dirty, stop), with random
 * blocks, random handle sizes, random sync handles and revokes. Used by the
 * unit and crash tests and by `nostall bench jbd`.
 *
 * Every block written by transaction T gets contents that are a pure
 * function of (seed, T, block) (jbd_client_fill), so what a recovered image
 * must hold after transaction K is computable from the history alone
 * (jbd_client_expected).
 *
 * Threads: one client is used by one thread at a time.
 */
#include "jbd_int.h"

#include "../buf/buf.h"
#include "../util/clock.h"
#include "../util/array.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { H_WRITE = 1, H_REVOKE = 2 };

struct hent {
	uint32_t tid;
	uint8_t kind;
};

struct hvec {
	struct hent *v;
	size_t n, cap;
};

struct jbd_client {
	struct jbd_client_params p;
	uint64_t rng;
	uint32_t last_tid;
	bool any;
	struct hvec *hist; /* [nr_blocks] when tracking */
	unsigned bs;
	int max_credits;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static double rnd01(uint64_t *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

void jbd_client_fill(uint64_t seed, uint32_t tid, uint64_t b, unsigned magic_every, void *buf, unsigned size)
{
	uint64_t s = seed ^ ((uint64_t)tid * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);
	if (!s)
		s = 1;
	for (int i = 0; i < 4; i++)
		rnd(&s);
	uint64_t *w = buf;
	for (unsigned i = 0; i < size / 8; i++)
		w[i] = rnd(&s);
	/* Readable stamp: block and tid at bytes 4..15. */
	uint32_t stamp[3] = { (uint32_t)b, (uint32_t)(b >> 32), tid };
	memcpy((char *)buf + 4, stamp, sizeof stamp);
	if (magic_every && (b + tid) % magic_every == 0) {
		uint32_t m = cpu_to_be32(JBD_MAGIC_NUMBER);
		memcpy(buf, &m, 4);
	}
}

int jbd_client_create(const struct jbd_client_params *p, struct jbd_client **out)
{
	if (!p->j || !p->cache || !p->nr_blocks)
		return err_set(-EINVAL, "jbd client: journal, cache and a block range are required");
	struct jbd_client *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->p = *p;
	c->rng = p->seed ? p->seed : 0x2545f4914f6cdd1dull;
	c->bs = buf_cache_block_size(p->cache);
	struct jbd_stats st;
	jbd_journal_stats(p->j, &st);
	c->max_credits = (int)(st.maxlen / 4);
	if (!c->p.max_tx_blocks)
		c->p.max_tx_blocks = 16;
	if ((int)c->p.max_tx_blocks > c->max_credits - 1)
		c->p.max_tx_blocks = (unsigned)(c->max_credits - 1);
	if (p->track) {
		c->hist = calloc(p->nr_blocks, sizeof *c->hist);
		if (!c->hist) {
			free(c);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
}

void jbd_client_destroy(struct jbd_client *c)
{
	if (!c)
		return;
	if (c->hist) {
		for (uint64_t i = 0; i < c->p.nr_blocks; i++)
			free(c->hist[i].v);
		free(c->hist);
	}
	free(c);
}

static int record(struct jbd_client *c, uint64_t b, uint32_t tid, uint8_t kind)
{
	if (!c->hist)
		return 0;
	struct hvec *h = &c->hist[b - c->p.first_block];
	if (h->n && h->v[h->n - 1].tid == tid) {
		h->v[h->n - 1].kind = kind;
		return 0;
	}
	if (array_grow(&h->v, &h->cap, h->n, sizeof *h->v, 4))
		return -ENOMEM;
	h->v[h->n++] = (struct hent){ tid, kind };
	return 0;
}

int jbd_client_step(struct jbd_client *c, uint64_t *sync_ns)
{
	unsigned n = 1 + (unsigned)(rnd(&c->rng) % c->p.max_tx_blocks);
	bool sync = rnd01(&c->rng) < c->p.sync_prob;
	bool revoke = rnd01(&c->rng) < c->p.revoke_prob;
	if (sync_ns)
		*sync_ns = 0;
	struct jbd_handle *h;
	int rc = jbd_handle_start(c->p.j, (int)n, &h);
	if (rc < 0)
		return rc;
	uint32_t tid = jbd_handle_tid(h);
	for (unsigned i = 0; i < n && rc == 0; i++) {
		uint64_t b = c->p.first_block + rnd(&c->rng) % c->p.nr_blocks;
		int e = 0;
		struct buffer_head *bh = buf_get(c->p.cache, b, &e);
		if (!bh) {
			rc = e ? e : -ENOMEM;
			break;
		}
		/* The whole block is rewritten, so a buffer that is not cached
		 * needs no read: create access. */
		rc = buf_uptodate(bh) ? jbd_get_write_access(h, bh) : jbd_get_create_access(h, bh);
		if (rc == 0) {
			jbd_client_fill(c->p.seed, tid, b, c->p.magic_every, buf_data(bh), c->bs);
			buf_set_uptodate(bh);
			rc = jbd_dirty_metadata(h, bh);
		}
		buf_put(bh);
		if (rc == 0)
			rc = record(c, b, tid, H_WRITE);
	}
	if (rc == 0 && revoke) {
		uint64_t b = c->p.first_block + rnd(&c->rng) % c->p.nr_blocks;
		rc = jbd_revoke(h, b, NULL);
		if (rc == 0)
			rc = record(c, b, tid, H_REVOKE);
	}
	if (sync)
		jbd_handle_set_sync(h, true);
	uint64_t t0 = clock_now_ns();
	int src = jbd_handle_stop(h);
	if (sync && sync_ns)
		*sync_ns = clock_now_ns() - t0;
	c->last_tid = tid;
	c->any = true;
	return rc < 0 ? rc : src;
}

int jbd_client_expected(const struct jbd_client *c, uint32_t tid, uint64_t b, void *buf)
{
	if (!c->hist || b < c->p.first_block || b >= c->p.first_block + c->p.nr_blocks)
		return 0;
	const struct hvec *h = &c->hist[b - c->p.first_block];
	/* Last entry with entry.tid <= tid (entries are in tid order). */
	const struct hent *e = NULL;
	for (uint32_t i = h->n; i-- > 0;) {
		if (!jbd_tid_gt(h->v[i].tid, tid)) {
			e = &h->v[i];
			break;
		}
	}
	if (!e)
		return 0;
	if (e->kind == H_REVOKE)
		return -1;
	jbd_client_fill(c->p.seed, e->tid, b, c->p.magic_every, buf, c->bs);
	return 1;
}

uint32_t jbd_client_last_tid(const struct jbd_client *c)
{
	return c->last_tid;
}
