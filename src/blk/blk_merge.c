/* Merging (docs/block-layer.md, "merging"): a bio joins a queued request
 * that ends where it starts (back merge) or starts where it ends (front
 * merge), found through two hashes of the requests inside the elevator (by
 * end and by start sector). A request that grew may then touch its
 * neighbour, and the two become one if both are sync or both async. Never across
 * FLUSH/FUA, never past max_sectors_kb, and only where the elevator agrees
 * (cfq: never a sync bio into an async request, only within one cfq queue).
 * Everything here runs under q->lock (blk_internal.h).
 */
#include "blk.h"
#include "blk_internal.h"

/* Flags that make a request a barrier for merging. */
#define RQ_NOMERGE_FLAGS (BLK_REQ_FLUSH | BLK_REQ_FUA)

/* Which hash: requests by end sector (BY_END) or by start sector. */
enum { BY_START = 0, BY_END = 1 };

static unsigned hash_of(uint64_t sector)
{
	return (unsigned)((sector * 0x9E3779B97F4A7C15ull) >> (64 - RQ_HASH_BITS));
}

/* The bucket of `sector` in one hash, and the request of one of its nodes. */
static struct list_node *hash_bucket(struct blk_queue *q, int by_end, uint64_t sector)
{
	return by_end ? &q->rq_hash_end[hash_of(sector)] : &q->rq_hash_start[hash_of(sector)];
}

static struct request *hash_entry(struct list_node *n, int by_end)
{
	return by_end ? list_entry(n, struct request, hash_end) : list_entry(n, struct request, hash_start);
}

void blk_rq_hash_add(struct blk_queue *q, struct request *rq)
{
	list_add_tail(hash_bucket(q, BY_END, rq_end(rq)), &rq->hash_end);
	list_add_tail(hash_bucket(q, BY_START, rq->sector), &rq->hash_start);
}

void blk_rq_hash_del(struct request *rq)
{
	if (list_linked(&rq->hash_end))
		list_del(&rq->hash_end);
	if (list_linked(&rq->hash_start))
		list_del(&rq->hash_start);
}

static void rq_rehash(struct blk_queue *q, struct request *rq)
{
	blk_rq_hash_del(rq);
	blk_rq_hash_add(q, rq);
}

/* May a bio with flags rw from ioc join rq? Same direction, nothing with
 * cache-control flags, bounded size, and the elevator agrees. A sync bio may
 * join an async request here: as in 2.6.30, only CFQ's allow_merge forbids
 * that (its sync and async queues are separate); noop and deadline merge. */
static bool rq_merge_ok(struct blk_queue *q, struct request *rq, unsigned rw, struct blk_ioc *ioc,
			uint64_t add_sectors)
{
	if (!rq->in_elv)
		return false;
	if ((rq->flags & BLK_RW_WRITE) != (rw & BLK_RW_WRITE))
		return false;
	if ((rq->flags | rw) & RQ_NOMERGE_FLAGS)
		return false;
	if (rq->nr_sectors + add_sectors > q->t.max_sectors_kb * 2)
		return false;
	if (q->elv.ops->allow_merge && !q->elv.ops->allow_merge(&q->elv, rq, rw, ioc))
		return false;
	return true;
}

/* What is looking for a partner in a hash: a bio (self NULL) or a queued
 * request that grew (self). */
struct merge_seek {
	struct request *self;
	unsigned rw;
	struct blk_ioc *ioc;
	uint64_t sectors;
};

/* May the seeker join candidate c? A bio joins c. A request only pairs with
 * another request of the same sync-ness, and the lower of the two absorbs
 * the higher one (self is higher when found by end, lower by start). */
static bool seek_ok(struct blk_queue *q, const struct merge_seek *s, struct request *c, int by_end)
{
	if (!s->self)
		return rq_merge_ok(q, c, s->rw, s->ioc, s->sectors);
	if (c == s->self || rq_is_sync(c) != rq_is_sync(s->self))
		return false;
	if (by_end)
		return rq_merge_ok(q, c, s->rw, s->ioc, s->sectors);
	return rq_merge_ok(q, s->self, c->flags, c->ioc, c->nr_sectors);
}

/* The first queued request whose end (by_end) or start is `sector` and that
 * the seeker may join. Several may match (a read and a write, a sync and an
 * async one). */
static struct request *hash_find(struct blk_queue *q, int by_end, uint64_t sector, const struct merge_seek *s)
{
	struct list_node *n, *h = hash_bucket(q, by_end, sector);
	list_for_each(n, h) {
		struct request *rq = hash_entry(n, by_end);
		if ((by_end ? rq_end(rq) : rq->sector) == sector && seek_ok(q, s, rq, by_end))
			return rq;
	}
	return NULL;
}

/* Absorb `next` (which starts where rq ends) into rq. */
static void rq_merge_requests(struct blk_queue *q, struct request *rq, struct request *next)
{
	rq->biotail->bi_next = next->bio;
	rq->biotail = next->biotail;
	rq->nr_sectors += next->nr_sectors;
	if (next->alloc_ns < rq->alloc_ns)
		rq->alloc_ns = next->alloc_ns;
	next->bio = next->biotail = NULL;
	blk_rq_hash_del(next);
	next->in_elv = false;
	q->elv.ops->merge_requests(&q->elv, rq, next);
	q->queued--;
	rq_rehash(q, rq);
	q->st.merges_rq++;
	blk_rq_free(q, next);
}

/* rq grew at the back (front): it may now touch the request after (before)
 * it, and the lower of the two absorbs the other. */
static void attempt_merge(struct blk_queue *q, struct request *rq, bool back)
{
	struct merge_seek s = { .self = rq, .rw = rq->flags, .ioc = rq->ioc, .sectors = rq->nr_sectors };
	if (back) {
		struct request *next = hash_find(q, BY_START, rq_end(rq), &s);
		if (next)
			rq_merge_requests(q, rq, next);
	} else {
		struct request *prev = hash_find(q, BY_END, rq->sector, &s);
		if (prev)
			rq_merge_requests(q, prev, rq);
	}
}

/* Link bio into rq at the back or the front and tell the elevator. */
static void rq_add_bio(struct blk_queue *q, struct request *rq, struct bio *bio, bool back)
{
	if (back) {
		rq->biotail->bi_next = bio;
		rq->biotail = bio;
	} else {
		bio->bi_next = rq->bio;
		rq->bio = bio;
		rq->sector = bio->sector;
	}
	rq->nr_sectors += bio->size >> DEV_SECTOR_SHIFT;
	rq_rehash(q, rq);
	if (q->elv.ops->merged)
		q->elv.ops->merged(&q->elv, rq, back ? ELV_MERGE_BACK : ELV_MERGE_FRONT);
	if (back)
		q->st.merges_back++;
	else
		q->st.merges_front++;
	attempt_merge(q, rq, back);
}

bool blk_bio_try_merge(struct blk_queue *q, struct bio *bio, struct blk_ioc *ioc)
{
	uint64_t ns = bio->size >> DEV_SECTOR_SHIFT;
	if (!q->queued || (bio->rw & RQ_NOMERGE_FLAGS) || !ns)
		return false;
	struct merge_seek s = { .self = NULL, .rw = bio->rw, .ioc = ioc, .sectors = ns };
	struct request *rq = hash_find(q, BY_END, bio->sector, &s);
	if (rq) {
		rq_add_bio(q, rq, bio, true);
		return true;
	}
	rq = hash_find(q, BY_START, bio->sector + ns, &s);
	if (rq && (!q->elv.ops->allow_front_merge || q->elv.ops->allow_front_merge(&q->elv))) {
		rq_add_bio(q, rq, bio, false);
		return true;
	}
	return false;
}
