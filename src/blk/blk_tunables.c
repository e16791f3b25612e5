/* Queue tunables (docs/block-layer.md, "tunables"): the table of numeric
 * ones, the string-valued scheduler / preset / sync_batch_op / barrier_mode, blk_queue_set
 * and blk_queue_get by name, option strings and their validation without a
 * queue. Locking: see blk_internal.h.
 */
#include "blk.h"
#include "blk_internal.h"
#include "../util/err.h"
#include "../util/opts.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

/* max_sectors_kb's maximum depends on the device; checked in blk_queue_set. */
const struct tunable_desc blk_queue_tunables[] = {
	{ "nr_requests", TUNABLE_U64, 4, 65536, 128, offsetof(struct blk_tunables, nr_requests), "",
	  "requests per pool (congestion at 7/8, hard cap 3/2)" },
	{ "max_sectors_kb", TUNABLE_U64, 4, 1u << 20, 512, offsetof(struct blk_tunables, max_sectors_kb), "KiB",
	  "largest request (4 KiB .. device maximum)" },
	{ "unplug_thresh", TUNABLE_U64, 1, 1024, 4, offsetof(struct blk_tunables, unplug_thresh), "",
	  "pending requests that unplug a plugged queue" },
	{ "unplug_delay_ms", TUNABLE_U64, 1, 1000, 3, offsetof(struct blk_tunables, unplug_delay_ms), "ms",
	  "plug timer" },
	{ "sync_async_pools", TUNABLE_BOOL, 0, 1, 1, offsetof(struct blk_tunables, sync_async_pools), "",
	  "request pools split sync/async (1, 2.6.30) or read/write (0, 2.6.29)" },
	{ "noidle", TUNABLE_BOOL, 0, 1, 1, offsetof(struct blk_tunables, noidle), "",
	  "schedulers honour NOIDLE: no idling after WRITE_SYNC_PLUG (1, 2.6.30)" },
	{ "ssd_plug", TUNABLE_BOOL, 0, 1, 1, offsetof(struct blk_tunables, ssd_plug), "",
	  "plug non-rotational devices unless they queue (1, 2.6.30) or never (0)" },
	{ "single_dispatch", TUNABLE_BOOL, 0, 1, 1, offsetof(struct blk_tunables, single_dispatch), "",
	  "cfq: quantum caps a queue's requests in the drive, 4x when alone (1, 2.6.30) or only while others wait (0, 2.6.29)" },
	{ "async_ramp", TUNABLE_BOOL, 0, 1, 0, offsetof(struct blk_tunables, async_ramp), "",
	  "cfq: after a sync completion an async queue keeps 1 request in the drive, 1 more per slice_sync (1, 2.6.32 low_latency; 0, 2.6.30)" },
	{ "wbt_lat_usec", TUNABLE_U64, 0, BLK_WBT_MAX_USEC, 0, offsetof(struct blk_tunables, wbt_lat_usec), "us",
	  "writeback throttling: sync latency target at the device, 0 = off (nostall preset: 75000 rotational, 2000 else)" },
	{ NULL, 0, 0, 0, 0, 0, NULL, NULL },
};

static int batch_op_parse(const char *v, unsigned *op)
{
	if (v && !strcasecmp(v, "WRITE"))
		*op = BLK_WRITE;
	else if (v && !strcasecmp(v, "WRITE_SYNC"))
		*op = BLK_WRITE_SYNC;
	else if (v && !strcasecmp(v, "WRITE_SYNC_PLUG"))
		*op = BLK_WRITE_SYNC_PLUG;
	else
		return err_set(-EINVAL, "sync_batch_op: '%s' is not WRITE, WRITE_SYNC or WRITE_SYNC_PLUG",
			       v ? v : "");
	return 0;
}

static const char *const barrier_mode_names[] = { "modern", "drain", "drain_fua" };

static int barrier_mode_parse(const char *v, unsigned *mode)
{
	for (unsigned i = 0; v && i < 3; i++) {
		if (!strcasecmp(v, barrier_mode_names[i])) {
			*mode = i;
			return 0;
		}
	}
	return err_set(-EINVAL, "barrier_mode: '%s' is not modern, drain or drain_fua", v ? v : "");
}

static int scheduler_lookup(const char *v, const struct elv_ops **ops)
{
	*ops = v ? elv_find(v) : NULL;
	if (!*ops)
		return err_set(-EINVAL, "scheduler: '%s' is unknown (noop, deadline, cfq)", v ? v : "");
	return 0;
}

int blk_queue_set(struct blk_queue *q, const char *name, const char *value)
{
	if (!strcmp(name, "scheduler")) {
		const struct elv_ops *ops;
		int rc = scheduler_lookup(value, &ops);
		return rc ? rc : blk_queue_switch_elevator(q, ops);
	}
	if (!strcmp(name, "preset"))
		return blk_queue_preset_apply(q, value);
	if (!strcmp(name, "sync_batch_op")) {
		unsigned op;
		int rc = batch_op_parse(value, &op);
		if (rc)
			return rc;
		pthread_mutex_lock(&q->lock);
		q->sync_batch_op = op;
		q->preset = "custom";
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	if (!strcmp(name, "barrier_mode")) {
		unsigned mode;
		int rc = barrier_mode_parse(value, &mode);
		if (rc)
			return rc;
		pthread_mutex_lock(&q->lock);
		q->barrier_mode = mode;
		q->preset = "custom";
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	const struct tunable_desc *d = tunable_find(blk_queue_tunables, name);
	if (d) {
		uint64_t v;
		int rc = tunable_check(d, value, &v);
		if (rc)
			return rc;
		pthread_mutex_lock(&q->lock);
		if (d->offset == offsetof(struct blk_tunables, max_sectors_kb) && v > q->geo.max_hw_sectors / 2) {
			pthread_mutex_unlock(&q->lock);
			return err_set(-ERANGE, "tunable 'max_sectors_kb': %" PRIu64 " is above the device maximum %u KiB",
				       v, q->geo.max_hw_sectors / 2);
		}
		if (d->offset == offsetof(struct blk_tunables, sync_async_pools) && q->allocated &&
		    v != q->t.sync_async_pools) {
			pthread_mutex_unlock(&q->lock);
			return err_set(-EBUSY, "sync_async_pools: cannot change the request pools while I/O is queued");
		}
		tunable_set(blk_queue_tunables, &q->t, name, value);
		if (d->offset == offsetof(struct blk_tunables, nr_requests))
			blk_pools_reevaluate(q);
		if (d->offset == offsetof(struct blk_tunables, wbt_lat_usec))
			blk_wbt_changed_locked(q);
		if (d->offset == offsetof(struct blk_tunables, sync_async_pools) ||
		    d->offset == offsetof(struct blk_tunables, noidle) ||
		    d->offset == offsetof(struct blk_tunables, ssd_plug) ||
		    d->offset == offsetof(struct blk_tunables, single_dispatch) ||
		    d->offset == offsetof(struct blk_tunables, async_ramp))
			q->preset = "custom";
		q->elv.honour_noidle = q->t.noidle;
		q->elv.single_dispatch = q->t.single_dispatch;
		q->elv.async_ramp = q->t.async_ramp;
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	pthread_mutex_lock(&q->lock);
	int rc;
	if (tunable_find(q->elv.ops->tunables, name))
		rc = tunable_set(q->elv.ops->tunables, q->elv.data, name, value);
	else
		rc = err_set(-ENOENT, "unknown tunable '%s' (not a queue tunable nor one of scheduler %s)", name,
			     q->elv.ops->name);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int blk_queue_get(struct blk_queue *q, const char *name, char *buf, size_t len)
{
	int rc = 0;
	pthread_mutex_lock(&q->lock);
	uint64_t v;
	if (!strcmp(name, "scheduler")) {
		snprintf(buf, len, "%s", q->elv.ops->name);
	} else if (!strcmp(name, "preset")) {
		snprintf(buf, len, "%s", q->preset);
	} else if (!strcmp(name, "sync_batch_op")) {
		blk_rw_name(q->sync_batch_op, buf, len);
	} else if (!strcmp(name, "barrier_mode")) {
		snprintf(buf, len, "%s", barrier_mode_names[q->barrier_mode % 3]);
	} else if (!tunable_get(blk_queue_tunables, &q->t, name, &v) ||
		   !tunable_get(q->elv.ops->tunables, q->elv.data, name, &v)) {
		snprintf(buf, len, "%" PRIu64, v);
	} else {
		rc = err_set(-ENOENT, "unknown tunable '%s'", name);
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void blk_queue_print_tunables(struct blk_queue *q, FILE *out)
{
	char op[64];
	pthread_mutex_lock(&q->lock);
	fprintf(out, "%-20s %10s\n%-20s %10s\n%-20s %10s\n%-20s %10s\n", "preset", q->preset, "scheduler",
		q->elv.ops->name, "sync_batch_op", blk_rw_name(q->sync_batch_op, op, sizeof op), "barrier_mode",
		barrier_mode_names[q->barrier_mode % 3]);
	tunable_print(blk_queue_tunables, &q->t, "", out);
	tunable_print(q->elv.ops->tunables, q->elv.data, "", out);
	pthread_mutex_unlock(&q->lock);
}

struct opts_pass {
	struct blk_queue *q;
	int pass; /* 0: scheduler, 1: preset, 2: the rest */
};

static int apply_opt(void *ctx, const char *name, const char *value)
{
	struct opts_pass *p = ctx;
	int pass = !strcmp(name, "scheduler") ? 0 : !strcmp(name, "preset") ? 1 : 2;
	if (pass != p->pass)
		return 0;
	return blk_queue_set(p->q, name, value);
}

int blk_queue_set_opts(struct blk_queue *q, const char *opts)
{
	struct opts_pass p = { .q = q };
	for (p.pass = 0; p.pass < 3; p.pass++) {
		int rc = opts_parse(opts, apply_opt, &p);
		if (rc)
			return rc;
	}
	return 0;
}

static int validate_opt(void *ctx, const char *name, const char *value)
{
	(void)ctx;
	uint64_t v;
	if (!strcmp(name, "scheduler")) {
		const struct elv_ops *ops;
		return scheduler_lookup(value, &ops);
	}
	if (!strcmp(name, "preset"))
		return blk_preset_check(value);
	if (!strcmp(name, "sync_batch_op")) {
		unsigned op;
		return batch_op_parse(value, &op);
	}
	if (!strcmp(name, "barrier_mode")) {
		unsigned mode;
		return barrier_mode_parse(value, &mode);
	}
	const struct tunable_desc *d = tunable_find(blk_queue_tunables, name);
	if (d)
		return tunable_check(d, value, &v);
	for (const struct elv_ops *const *e = elv_all(); *e; e++) {
		d = tunable_find((*e)->tunables, name);
		if (d)
			return tunable_check(d, value, &v);
	}
	return err_set(-ENOENT, "unknown tunable '%s'", name);
}

int blk_opts_validate(const char *opts)
{
	return opts_parse(opts, validate_opt, NULL);
}

struct preset_find {
	char *name;
	size_t len;
	bool found;
};

static int preset_cb(void *ctx, const char *name, const char *value)
{
	struct preset_find *f = ctx;
	if (!strcmp(name, "preset") && value) {
		snprintf(f->name, f->len, "%s", value);
		f->found = true;
	}
	return 0;
}

bool blk_opts_preset(const char *opts, char *name, size_t len)
{
	struct preset_find f = { .name = name, .len = len };
	if (opts && *opts && len)
		(void)opts_parse(opts, preset_cb, &f);
	return f.found;
}

unsigned blk_queue_sync_batch_op(struct blk_queue *q)
{
	pthread_mutex_lock(&q->lock);
	unsigned op = q->sync_batch_op;
	pthread_mutex_unlock(&q->lock);
	return op;
}
