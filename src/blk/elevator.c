/* Elevator core of the block layer: finding schedulers in the registry,
 * starting one on a queue and switching it live, and the helpers the
 * schedulers share (elevator.h). Names no scheduler: they are found by name
 * in elv_registry[], which the scheduler layer defines.
 */
#include "elevator.h"
#include "blk_internal.h"
#include "../util/err.h"

#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- registry */

const struct elv_ops *elv_find(const char *name)
{
	for (size_t i = 0; elv_registry[i]; i++)
		if (strcmp(elv_registry[i]->name, name) == 0)
			return elv_registry[i];
	return NULL;
}

const struct elv_ops *const *elv_all(void)
{
	return elv_registry;
}

/* ---------------------------------------------- helpers for schedulers */

void elv_rq_sort_add(struct list_node *head, struct request *rq)
{
	struct list_node *pos;
	list_for_each(pos, head) {
		if (rq->sector < list_entry(pos, struct request, elv_sort)->sector)
			break;
	}
	list_add_before(pos, &rq->elv_sort);
}

void elv_rq_fifo_inherit(struct request *rq, struct request *next)
{
	if (!list_linked(&rq->elv_fifo) || !list_linked(&next->elv_fifo) ||
	    next->elv_deadline_ns >= rq->elv_deadline_ns)
		return;
	list_del(&rq->elv_fifo);
	list_add_before(next->elv_fifo.next, &rq->elv_fifo);
	rq->elv_deadline_ns = next->elv_deadline_ns;
}

void *elv_data_alloc(struct elevator *e, size_t size)
{
	void *data = calloc(1, size);
	if (data) {
		e->data = data;
		e->kick_ns = 0;
	}
	return data;
}

void elv_data_free(struct elevator *e)
{
	free(e->data);
	e->data = NULL;
}

/* ------------------------------------------------- start and switch */

int blk_elv_start(struct blk_queue *q, const struct elv_ops *ops)
{
	struct elevator *e = &q->elv;
	memset(e, 0, sizeof *e);
	e->ops = ops;
	e->rotational = q->geo.rotational;
	e->queuing = q->geo.queue_depth > 1;
	e->honour_noidle = q->t.noidle;
	e->single_dispatch = q->t.single_dispatch;
	e->async_ramp = q->t.async_ramp;
	e->now_ns = clock_now_ns();
	return ops->init ? ops->init(e) : 0;
}

/* Hold new submissions, drain every request through the old elevator
 * (force dispatch), then swap. */
int blk_queue_switch_elevator(struct blk_queue *q, const struct elv_ops *ops)
{
	pthread_mutex_lock(&q->lock);
	while (q->elv_switching)
		pthread_cond_wait(&q->switch_cond, &q->lock);
	if (q->elv.ops == ops) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	q->elv_switching = true;
	bool was_stopped = q->stopped;
	q->stopped = false;
	blk_queue_unplug_locked(q, NULL);
	while (q->allocated)
		pthread_cond_wait(&q->idle_cond, &q->lock);
	const struct elv_ops *old = q->elv.ops;
	struct elevator saved = q->elv;
	if (old->exit)
		old->exit(&q->elv);
	int rc = blk_elv_start(q, ops);
	if (rc < 0) {
		/* Keep the old scheduler running; failing that (out of memory
		 * twice), noop, whose state is one list head. */
		const struct elv_ops *noop = elv_find("noop");
		if (blk_elv_start(q, old) < 0 && noop)
			blk_elv_start(q, noop);
		rc = err_set(rc, "scheduler %s: initialisation failed", ops->name);
	} else {
		/* Idle statistics carry over across the switch. */
		q->elv.idle_ns = saved.idle_ns;
		q->elv.idle_count = saved.idle_count;
	}
	q->stopped = was_stopped;
	q->elv_switching = false;
	pthread_cond_broadcast(&q->switch_cond);
	pthread_cond_signal(&q->kick);
	pthread_mutex_unlock(&q->lock);
	return rc;
}
