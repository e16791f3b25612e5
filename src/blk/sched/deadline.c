/* deadline: the 2.6.30 block/deadline-iosched.c policy, written from its
 * description (docs/schedulers.md).
 *
 * Per data direction (read, write) the requests sit on two lists: sorted by
 * sector (rq->elv_sort) and by arrival with an expiry time
 * (rq->elv_fifo, rq->elv_deadline_ns = insert + read_expire/write_expire).
 * Dispatch runs batches of up to fifo_batch requests in ascending sector
 * order in one direction. A new batch prefers reads, unless writes have been
 * passed over writes_starved times; it starts at the oldest request of its
 * direction when that one has expired (or when the sweep ran off the end or
 * the previous batch was in the other direction), otherwise it continues the
 * sweep. Directions are read/write, not sync/async.
 *
 * Sorted insertion and the FIFO hand-over on merges are the elevator core's
 * (elevator.h). Locking: the queue lock (elevator.h). */
#include "sched.h"
#include "../../util/clock.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

struct deadline_data {
	/* Tunables (sysfs names), see deadline_tunables. */
	uint64_t read_expire;    /* ms */
	uint64_t write_expire;   /* ms */
	uint64_t writes_starved; /* read batches that may pass waiting writes */
	uint64_t fifo_batch;     /* requests per batch */
	uint64_t front_merges;   /* bool */

	struct list_node sort[2]; /* [dir] by sector, via rq->elv_sort */
	struct list_node fifo[2]; /* [dir] by arrival, via rq->elv_fifo */
	struct request *next_rq[2]; /* sweep position per direction */
	unsigned batching;        /* requests dispatched in the current batch */
	unsigned starved;         /* read batches chosen while writes waited */
	uint64_t last_sector;     /* end of the last dispatched request */
	unsigned queued;
};

static const struct tunable_desc deadline_tunables[] = {
	{ "read_expire", TUNABLE_U64, 0, INT32_MAX, 500, offsetof(struct deadline_data, read_expire), "ms",
	  "a read is served at the latest this long after it was queued" },
	{ "write_expire", TUNABLE_U64, 0, INT32_MAX, 5000, offsetof(struct deadline_data, write_expire), "ms",
	  "a write is served at the latest this long after it was queued" },
	{ "writes_starved", TUNABLE_U64, 0, INT32_MAX, 2, offsetof(struct deadline_data, writes_starved), "",
	  "read batches that may be preferred over waiting writes" },
	{ "fifo_batch", TUNABLE_U64, 1, INT32_MAX, 16, offsetof(struct deadline_data, fifo_batch), "",
	  "requests dispatched in one sector-ordered batch" },
	{ "front_merges", TUNABLE_BOOL, 0, 1, 1, offsetof(struct deadline_data, front_merges), "",
	  "allow bios to merge at the front of queued requests" },
	{ .name = NULL },
};

static inline int rq_dir(const struct request *rq) { return rq_is_write(rq) ? 1 : 0; }

static uint64_t dl_expire_ns(const struct deadline_data *dd, int dir)
{
	return (dir ? dd->write_expire : dd->read_expire) * NS_PER_MS;
}

/* Insert into the sector-sorted list of its direction. */
static void dl_sort_add(struct deadline_data *dd, struct request *rq)
{
	elv_rq_sort_add(&dd->sort[rq_dir(rq)], rq);
}

/* The request after rq in sector order, or NULL. */
static struct request *dl_latter(struct deadline_data *dd, struct request *rq)
{
	struct list_node *n = rq->elv_sort.next;
	if (n == &dd->sort[rq_dir(rq)])
		return NULL;
	return list_entry(n, struct request, elv_sort);
}

static void dl_sort_del(struct deadline_data *dd, struct request *rq)
{
	int dir = rq_dir(rq);
	if (dd->next_rq[dir] == rq)
		dd->next_rq[dir] = dl_latter(dd, rq);
	list_del(&rq->elv_sort);
}

static void dl_remove(struct deadline_data *dd, struct request *rq)
{
	list_del(&rq->elv_fifo);
	dl_sort_del(dd, rq);
	dd->queued--;
}

static int deadline_init(struct elevator *e)
{
	struct deadline_data *dd = elv_data_alloc(e, sizeof *dd);
	if (!dd)
		return -ENOMEM;
	tunable_defaults(deadline_tunables, dd);
	for (int d = 0; d < 2; d++) {
		list_init(&dd->sort[d]);
		list_init(&dd->fifo[d]);
	}
	return 0;
}

static void deadline_add_request(struct elevator *e, struct request *rq)
{
	struct deadline_data *dd = e->data;
	int dir = rq_dir(rq);
	dl_sort_add(dd, rq);
	rq->elv_deadline_ns = e->now_ns + dl_expire_ns(dd, dir);
	list_add_tail(&dd->fifo[dir], &rq->elv_fifo);
	dd->queued++;
}

static bool deadline_allow_front_merge(struct elevator *e)
{
	struct deadline_data *dd = e->data;
	return dd->front_merges != 0;
}

/* A front merge lowered rq->sector: re-sort it. A back merge keeps the key. */
static void deadline_merged(struct elevator *e, struct request *rq, enum elv_merge type)
{
	struct deadline_data *dd = e->data;
	if (type != ELV_MERGE_FRONT)
		return;
	int dir = rq_dir(rq);
	bool was_next = dd->next_rq[dir] == rq;
	dl_sort_del(dd, rq);
	dl_sort_add(dd, rq);
	if (was_next)
		dd->next_rq[dir] = rq;
}

/* `next` joins rq: rq inherits the earlier deadline and, with it, next's
 * place in the FIFO; next leaves the scheduler. */
static void deadline_merge_requests(struct elevator *e, struct request *rq, struct request *next)
{
	struct deadline_data *dd = e->data;
	int dir = rq_dir(rq);
	elv_rq_fifo_inherit(rq, next);
	dl_remove(dd, next);
	/* Re-sort rq in case it absorbed a request in front of it (blk merges
	 * the higher request into the lower one, so normally it stays put). */
	bool was_next = dd->next_rq[dir] == rq;
	dl_sort_del(dd, rq);
	dl_sort_add(dd, rq);
	if (was_next)
		dd->next_rq[dir] = rq;
}

/* Has the oldest request of direction dir expired? */
static bool dl_fifo_expired(struct elevator *e, struct deadline_data *dd, int dir)
{
	struct list_node *n = list_first(&dd->fifo[dir]);
	return n && e->now_ns > list_entry(n, struct request, elv_fifo)->elv_deadline_ns;
}

static struct request *deadline_dispatch(struct elevator *e, bool force)
{
	struct deadline_data *dd = e->data;
	(void)force; /* deadline never holds requests back */
	bool reads = !list_empty(&dd->fifo[0]);
	bool writes = !list_empty(&dd->fifo[1]);
	struct request *rq = dd->next_rq[1] ? dd->next_rq[1] : dd->next_rq[0];
	int dir;

	if (!(rq && dd->batching < dd->fifo_batch)) {
		/* Start a new batch: pick the direction. */
		if (reads && !(writes && dd->starved++ >= dd->writes_starved)) {
			dir = 0;
		} else if (writes) {
			dd->starved = 0;
			dir = 1;
		} else {
			return NULL;
		}
		if (dl_fifo_expired(e, dd, dir) || !dd->next_rq[dir])
			rq = list_entry(list_first(&dd->fifo[dir]), struct request, elv_fifo);
		else
			rq = dd->next_rq[dir];
		dd->batching = 0;
	}
	dd->batching++;
	dir = rq_dir(rq);
	dd->next_rq[0] = dd->next_rq[1] = NULL;
	dd->next_rq[dir] = dl_latter(dd, rq);
	dd->last_sector = rq_end(rq);
	dl_remove(dd, rq);
	return rq;
}

static bool deadline_empty(struct elevator *e)
{
	struct deadline_data *dd = e->data;
	return dd->queued == 0;
}

const struct elv_ops elv_deadline_ops = {
	.name = "deadline",
	.tunables = deadline_tunables,
	.init = deadline_init,
	.exit = elv_data_free,
	.add_request = deadline_add_request,
	.allow_front_merge = deadline_allow_front_merge,
	.merged = deadline_merged,
	.merge_requests = deadline_merge_requests,
	.dispatch = deadline_dispatch,
	.empty = deadline_empty,
};
