/* noop: one FIFO, no sorting, no idling (2.6.30 block/noop-iosched.c
 * semantics). Requests leave in the order they were added; a request merged
 * away (merge_requests) simply leaves the FIFO, and bio merges do not move a
 * request. Locking: the queue lock (elevator.h). */
#include "sched.h"

#include <errno.h>

struct noop_data {
	struct list_node fifo; /* requests by arrival, via rq->elv_fifo */
	unsigned queued;
};

static const struct tunable_desc noop_tunables[] = {
	{ .name = NULL },
};

static int noop_init(struct elevator *e)
{
	struct noop_data *nd = elv_data_alloc(e, sizeof *nd);
	if (!nd)
		return -ENOMEM;
	list_init(&nd->fifo);
	return 0;
}

static void noop_add_request(struct elevator *e, struct request *rq)
{
	struct noop_data *nd = e->data;
	list_add_tail(&nd->fifo, &rq->elv_fifo);
	nd->queued++;
}

static void noop_merge_requests(struct elevator *e, struct request *rq, struct request *next)
{
	struct noop_data *nd = e->data;
	(void)rq;
	list_del(&next->elv_fifo);
	nd->queued--;
}

static struct request *noop_dispatch(struct elevator *e, bool force)
{
	struct noop_data *nd = e->data;
	(void)force;
	struct list_node *n = list_first(&nd->fifo);
	if (!n)
		return NULL;
	list_del(n);
	nd->queued--;
	return list_entry(n, struct request, elv_fifo);
}

static bool noop_empty(struct elevator *e)
{
	struct noop_data *nd = e->data;
	return nd->queued == 0;
}

const struct elv_ops elv_noop_ops = {
	.name = "noop",
	.tunables = noop_tunables,
	.init = noop_init,
	.exit = elv_data_free,
	.add_request = noop_add_request,
	.merge_requests = noop_merge_requests,
	.dispatch = noop_dispatch,
	.empty = noop_empty,
};
