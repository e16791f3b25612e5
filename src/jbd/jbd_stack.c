/* Mount-style assembly of the journal's I/O stack: device -> block queue ->
 * buffer cache -> journal, in one place for the journal's own users that
 * are not a filesystem (the unit tests, the crash tests, `nostall bench
 * jbd`). A filesystem mount builds the same stack around its superblock.
 *
 * Open order: device (unless given), queue (queue_opts, then the preset if
 * any; an era preset also brings 2009's mount default barrier=0 unless the
 * journal options name barrier), cache (the journal's block size; no writeback thread unless asked:
 * the journal alone decides when its buffers go home), optionally a fresh
 * journal superblock, then jbd_journal_load (recovery if needed, commit
 * thread). Close reverses it: the journal's clean unmount, a cache sync,
 * the queue drained, the device closed if the stack opened it.
 *
 * Threads: open and close on one thread; the parts are then used as their
 * own modules say.
 */
#include "jbd.h"

#include "../blk/blk.h"
#include "../buf/buf.h"
#include "../dev/dev.h"
#include "../util/err.h"
#include "../util/opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jbd_stack {
	struct dev *dev;
	bool own_dev;
	struct blk_queue *q;
	struct buf_cache *cache;
	struct jbd_journal *j;
};

void jbd_stack_params_default(struct jbd_stack_params *p)
{
	memset(p, 0, sizeof *p);
	jbd_config_default(&p->cfg);
}

/* The era mount defaults follow the preset the queue was given (options,
 * then queue_preset), as a mount with preset=2.6.30 gets 2009's barrier=0. */
static void stack_era_defaults(const struct jbd_stack_params *p, struct jbd_config *cfg)
{
	jbd_config_era_defaults_opts(cfg, p->queue_opts);
	if (p->queue_preset)
		jbd_config_era_defaults(cfg, p->queue_preset);
}

static int stack_build(struct jbd_stack *s, const struct jbd_stack_params *p)
{
	int rc = blk_queue_create(s->dev, p->queue_opts, &s->q);
	if (rc < 0)
		return err_wrap(rc, "jbd stack: queue options '%s'", p->queue_opts ? p->queue_opts : "");
	if (p->queue_preset) {
		char po[80];
		snprintf(po, sizeof po, "preset=%s", p->queue_preset);
		rc = blk_queue_set_opts(s->q, po);
		if (rc < 0)
			return err_wrap(rc, "jbd stack: %s", po);
	}
	struct buf_params bp;
	buf_params_default(&bp);
	if (!p->writeback)
		bp.writeback_interval_ms = 0;
	rc = buf_cache_create(s->q, p->loc.block_size, &bp, &s->cache);
	if (rc < 0)
		return err_wrap(rc, "jbd stack: buffer cache");
	if (p->create) {
		rc = jbd_journal_create(s->dev, &p->loc, p->uuid);
		if (rc < 0)
			return err_wrap(rc, "jbd stack: creating the journal");
	}
	struct jbd_params jp = { .q = s->q, .cache = s->cache, .loc = p->loc, .cfg = p->cfg,
				 .no_recovery = p->no_recovery };
	stack_era_defaults(p, &jp.cfg);
	rc = jbd_journal_load(&jp, &s->j);
	if (rc < 0)
		return err_wrap(rc, "jbd stack: loading the journal");
	return 0;
}

/* Cache, queue, and the device if owned; then the stack. */
static void stack_free(struct jbd_stack *s)
{
	if (s->cache)
		buf_cache_destroy(s->cache);
	if (s->q)
		blk_queue_destroy(s->q);
	if (s->own_dev)
		dev_close(s->dev);
	free(s);
}

int jbd_stack_open_dev(struct dev *dev, const struct jbd_stack_params *p, struct jbd_stack **out)
{
	struct jbd_stack *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->dev = dev;
	int rc = stack_build(s, p);
	if (rc < 0) {
		/* No journal: nothing is dirty, and a teardown without I/O
		 * keeps the failure's message. */
		stack_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int jbd_stack_open(const char *dev_spec, const struct jbd_stack_params *p, struct jbd_stack **out)
{
	struct dev *dev;
	int rc = dev_open(dev_spec, &dev);
	if (rc < 0)
		return err_wrap(rc, "jbd stack: device %s", dev_spec);
	rc = jbd_stack_open_dev(dev, p, out);
	if (rc < 0) {
		dev_close(dev);
		return rc;
	}
	(*out)->own_dev = true;
	return 0;
}

int jbd_stack_close(struct jbd_stack *s)
{
	if (!s)
		return 0;
	int rc = 0;
	if (s->j)
		rc = jbd_journal_destroy(s->j);
	if (s->cache) {
		int src = buf_cache_sync(s->cache);
		if (rc == 0)
			rc = src;
	}
	stack_free(s);
	return rc;
}

struct dev *jbd_stack_dev(const struct jbd_stack *s)
{
	return s->dev;
}

struct blk_queue *jbd_stack_queue(const struct jbd_stack *s)
{
	return s->q;
}

struct buf_cache *jbd_stack_cache(const struct jbd_stack *s)
{
	return s->cache;
}

struct jbd_journal *jbd_stack_journal(const struct jbd_stack *s)
{
	return s->j;
}
