/* Request queue life cycle (create, drain and destroy), the era presets
 * (docs/block-layer.md, "presets and toggles") and stopping/starting
 * dispatch. Locking: see blk_internal.h.
 */
#include "blk.h"
#include "blk_internal.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ presets */

struct blk_preset {
	const char *name;
	bool sync_async_pools, noidle, ssd_plug, single_dispatch, async_ramp;
	bool wbt; /* writeback throttling at the device's default target */
	unsigned sync_batch_op;
	unsigned barrier_mode;
	bool era; /* a 2009 kernel: its mount defaults too (barrier=0) */
};

/* The eras run barriers as 2.6.30 did (drain + flushes; libata shipped
 * with FUA off). "nostall" is the default: 2.6.30's block layer with the
 * barriers of later kernels (flush + FUA, no drain) and writeback
 * throttling (wbt_lat_usec, Linux 4.10), which no 2009 kernel had. */
static const struct blk_preset presets[] = {
	{ "2.6.29", false, false, false, false, false, false, BLK_WRITE, BLK_BARRIER_DRAIN, true },
	{ "2.6.30-rc1", false, false, false, false, false, false, BLK_WRITE_SYNC, BLK_BARRIER_DRAIN, true },
	{ "2.6.30", true, true, true, true, false, false, BLK_WRITE_SYNC_PLUG, BLK_BARRIER_DRAIN, true },
	{ "nostall", true, true, true, true, false, true, BLK_WRITE_SYNC_PLUG, BLK_BARRIER_MODERN, false },
};
#define NR_PRESETS (sizeof presets / sizeof presets[0])

static const struct blk_preset *preset_find(const char *name)
{
	for (size_t i = 0; name && i < NR_PRESETS; i++)
		if (!strcmp(presets[i].name, name))
			return &presets[i];
	return NULL;
}

int blk_preset_check(const char *name)
{
	if (!preset_find(name))
		return err_set(-EINVAL, "preset: '%s' is unknown (2.6.29, 2.6.30-rc1, 2.6.30, nostall)",
			       name ? name : "");
	return 0;
}

bool blk_preset_is_era(const char *name)
{
	const struct blk_preset *p = preset_find(name);
	return p && p->era;
}

int blk_queue_preset_apply(struct blk_queue *q, const char *name)
{
	int rc = blk_preset_check(name);
	if (rc)
		return rc;
	const struct blk_preset *p = preset_find(name);
	pthread_mutex_lock(&q->lock);
	if (q->allocated && (bool)q->t.sync_async_pools != p->sync_async_pools) {
		pthread_mutex_unlock(&q->lock);
		return err_set(-EBUSY, "preset %s: cannot change the request pools while I/O is queued", p->name);
	}
	q->t.sync_async_pools = p->sync_async_pools;
	q->t.noidle = p->noidle;
	q->t.ssd_plug = p->ssd_plug;
	q->t.single_dispatch = p->single_dispatch;
	q->t.async_ramp = p->async_ramp;
	q->t.wbt_lat_usec = p->wbt ? blk_wbt_default_usec(q) : 0;
	blk_wbt_changed_locked(q);
	q->sync_batch_op = p->sync_batch_op;
	q->barrier_mode = p->barrier_mode;
	q->preset = p->name;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* ------------------------------------------------ queue life cycle */

/* Free a queue whose dispatcher is not running and whose elevator is gone. */
static void queue_free(struct blk_queue *q)
{
	blk_wbt_exit(q);
	pthread_cond_destroy(&q->switch_cond);
	pthread_cond_destroy(&q->idle_cond);
	pthread_cond_destroy(&q->kick);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

int blk_queue_create(struct dev *dev, const char *opts, struct blk_queue **out)
{
	struct blk_queue *q = calloc(1, sizeof *q);
	if (!q)
		return -ENOMEM;
	q->dev = dev;
	dev_geometry_get(dev, &q->geo);
	tunable_defaults(blk_queue_tunables, &q->t);
	uint64_t hw_kb = q->geo.max_hw_sectors / 2;
	if (hw_kb < 4)
		hw_kb = 4;
	if (q->t.max_sectors_kb > hw_kb)
		q->t.max_sectors_kb = hw_kb;
	q->sync_batch_op = BLK_WRITE_SYNC_PLUG;
	q->barrier_mode = BLK_BARRIER_MODERN;
	q->preset = "nostall";
	blk_wbt_init(q);
	q->t.wbt_lat_usec = blk_wbt_default_usec(q);
	list_init(&q->ord_list);
	pthread_mutex_init(&q->lock, NULL);
	clock_cond_init(&q->kick);
	pthread_cond_init(&q->idle_cond, NULL);
	pthread_cond_init(&q->switch_cond, NULL);
	for (int i = 0; i < 2; i++)
		list_init(&q->pool[i].waiters);
	for (unsigned i = 0; i < RQ_HASH_SIZE; i++) {
		list_init(&q->rq_hash_end[i]);
		list_init(&q->rq_hash_start[i]);
	}
	blk_stats_clear(&q->st);
	/* The default scheduler, as in 2.6.30. */
	const struct elv_ops *def = elv_find("cfq");
	int rc = def ? blk_elv_start(q, def) : err_set(-ENOENT, "scheduler cfq is not registered");
	if (rc < 0)
		goto fail_elv;
	rc = -pthread_create(&q->dispatcher, NULL, blk_dispatcher_main, q);
	if (rc < 0) {
		q->elv.ops->exit(&q->elv);
		goto fail_elv;
	}
	rc = blk_queue_set_opts(q, opts);
	if (rc < 0) {
		blk_queue_destroy(q);
		return rc;
	}
	*out = q;
	return 0;
fail_elv:
	queue_free(q);
	return rc;
}

void blk_queue_destroy(struct blk_queue *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	__atomic_store_n(&q->dying, true, __ATOMIC_RELEASE);
	q->draining = true;
	q->stopped = false;
	pthread_cond_broadcast(&q->wbt.cond); /* throttled submitters: go */
	blk_queue_unplug_locked(q, NULL);
	while (q->allocated)
		pthread_cond_wait(&q->idle_cond, &q->lock);
	pthread_cond_signal(&q->kick);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->dispatcher, NULL);
	if (q->elv.ops->exit)
		q->elv.ops->exit(&q->elv);
	queue_free(q);
}

struct dev *blk_queue_dev(const struct blk_queue *q)
{
	return q->dev;
}

/* ------------------------------------------------- stop and start */

void blk_queue_stop(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopped = true;
	pthread_mutex_unlock(&q->lock);
}

void blk_queue_start(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopped = false;
	pthread_cond_signal(&q->kick);
	pthread_mutex_unlock(&q->lock);
}
