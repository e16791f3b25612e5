/* Shared by the CFQ tests (test_sched_cfq.c: slices, classes, idling;
 * test_sched_cfq_dispatch.c: sector choice, FIFO, quantum, merges;
 * test_blk_cfq_ramp.c: the async_ramp depth): a CFQ
 * elevator driven directly on a fake clock, the test playing blk
 * (set_request, add_request, dispatch, in_driver, completed, put_request). */
#ifndef NOSTALL_TEST_SCHED_CFQ_ENV_H
#define NOSTALL_TEST_SCHED_CFQ_ENV_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "blk/sched/cfq.h"
#include "util/clock.h"

#define MS NS_PER_MS
#define T0 (1000 * NS_PER_SEC)
#define MAXRQ 160
#define MAXIOC 8

struct fx {
	struct elevator e;
	struct request rq[MAXRQ];
	int n;
	bool in_driver[MAXRQ];
	struct blk_ioc *ioc[MAXIOC];
	int nioc;
};

static struct fx F;

static inline struct fx *fx_new(bool rotational, bool queuing)
{
	struct fx *f = &F;
	memset(f, 0, sizeof *f);
	f->e.ops = &elv_cfq_ops;
	f->e.rotational = rotational;
	f->e.queuing = queuing;
	f->e.honour_noidle = true;
	f->e.single_dispatch = true;
	f->e.now_ns = T0;
	assert_int_equal(f->e.ops->init(&f->e), 0);
	return f;
}

static inline struct blk_ioc *mkioc(struct fx *f, int cls, int level)
{
	assert_true(f->nioc < MAXIOC);
	struct blk_ioc *ioc = blk_ioc_create(cls, level);
	assert_non_null(ioc);
	f->ioc[f->nioc++] = ioc;
	return ioc;
}

static inline void at(struct fx *f, uint64_t ms) { f->e.now_ns = T0 + ms * MS; }

static inline void set(struct fx *f, const char *name, const char *v)
{
	assert_int_equal(tunable_set(f->e.ops->tunables, f->e.data, name, v), 0);
}

static inline struct request *sub(struct fx *f, struct blk_ioc *ioc, uint64_t sector, unsigned flags)
{
	assert_true(f->n < MAXRQ);
	struct request *rq = &f->rq[f->n++];
	memset(rq, 0, sizeof *rq);
	rq->sector = sector;
	rq->nr_sectors = 8;
	rq->flags = flags & ~BLK_REQ_UNPLUG;
	rq->ioc = ioc;
	list_init(&rq->elv_fifo);
	list_init(&rq->elv_sort);
	rq->alloc_ns = rq->insert_ns = f->e.now_ns;
	assert_int_equal(f->e.ops->set_request(&f->e, rq), 0);
	f->e.ops->add_request(&f->e, rq);
	return rq;
}

static inline struct request *disp(struct fx *f)
{
	struct request *rq = f->e.ops->dispatch(&f->e, false);
	if (rq) {
		f->e.in_driver[rq_is_sync(rq)]++;
		f->in_driver[rq - f->rq] = true;
	}
	return rq;
}

static inline void done(struct fx *f, struct request *rq)
{
	assert_true(f->in_driver[rq - f->rq]);
	f->in_driver[rq - f->rq] = false;
	f->e.in_driver[rq_is_sync(rq)]--;
	f->e.ops->completed(&f->e, rq);
	f->e.ops->put_request(&f->e, rq);
}

/* Dispatch one request and complete it at once. */
static inline struct request *disp_done(struct fx *f)
{
	struct request *rq = disp(f);
	if (rq)
		done(f, rq);
	return rq;
}

/* Drain (force), check that nothing leaks, free. */
static inline void fx_free(struct fx *f)
{
	struct request *rq;
	for (int i = 0; i < f->n; i++)
		if (f->in_driver[i])
			done(f, &f->rq[i]);
	while ((rq = f->e.ops->dispatch(&f->e, true)) != NULL) {
		f->e.in_driver[rq_is_sync(rq)]++;
		f->in_driver[rq - f->rq] = true;
		done(f, rq);
	}
	assert_true(f->e.ops->empty(&f->e));
	assert_int_equal(f->e.in_driver[0] + f->e.in_driver[1], 0);
	f->e.ops->exit(&f->e);
	for (int i = 0; i < f->nioc; i++)
		blk_ioc_put(f->ioc[i]);
}

#endif
