/* cfq: temporary placeholder (FIFO like noop) until the real CFQ lands. */
#include "elevator.h"

static int ph_init(struct elevator *e) { return elv_noop_ops.init(e); }
static void ph_exit(struct elevator *e) { elv_noop_ops.exit(e); }
static void ph_add(struct elevator *e, struct request *rq) { elv_noop_ops.add_request(e, rq); }
static void ph_merge(struct elevator *e, struct request *rq, struct request *next)
{
	elv_noop_ops.merge_requests(e, rq, next);
}
static struct request *ph_dispatch(struct elevator *e, bool force) { return elv_noop_ops.dispatch(e, force); }
static bool ph_empty(struct elevator *e) { return elv_noop_ops.empty(e); }

const struct elv_ops elv_cfq_ops = {
	.name = "cfq",
	.tunables = NULL,
	.init = ph_init,
	.exit = ph_exit,
	.add_request = ph_add,
	.merge_requests = ph_merge,
	.dispatch = ph_dispatch,
	.empty = ph_empty,
};
