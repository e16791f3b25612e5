/* fault:OTHER[,op=..][,sector=A[-B]][,err=eio|enospc|short][,after=N][,count=N]
 *            [,prob=P][,seed=S]
 *
 * Passes commands to OTHER, except those chosen by its one rule, which fail:
 * a command matches when its op is in op= and (if sector= is given) its range
 * overlaps [A, B] (flushes have no range: they never match a sector= rule);
 * the first `after` matching commands pass; after that each matching command
 * fails with probability `prob` (a seeded generator: reproducible), until
 * `count` have failed (0 = no limit). Failed commands complete through done()
 * with -EIO / -ENOSPC; err=short transfers the first half of the command
 * (rounded down to whole logical blocks) on OTHER, then completes with -EIO.
 * Several rules: nest fault: devices (see docs/devices.md).
 */
#include "dev/dev_impl.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum fault_err { FE_EIO, FE_ENOSPC, FE_SHORT };

struct fault_rule {
	unsigned ops;       /* bit per enum dev_op */
	bool has_range;
	uint64_t lo, hi;    /* inclusive, 512-byte sectors */
	enum fault_err err;
	uint64_t after, count;
	double prob;
	uint64_t seed;
};

struct fault_dev {
	struct dev dev; /* first */
	struct dev *inner;
	struct fault_rule rule;
	/* Protected by lock. */
	pthread_mutex_t lock;
	uint64_t matched, injected;
	uint64_t rng;
};

struct fault_io {
	struct dev_io io;
	struct dev_io *orig;
	struct fault_dev *f;
	int force_err; /* 0: pass the inner result; else complete with it */
};

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool decide_locked(struct fault_dev *f, const struct dev_io *io)
{
	const struct fault_rule *r = &f->rule;
	if (!(r->ops & (1u << io->op)))
		return false;
	if (r->has_range) {
		if (io->op == DEV_OP_FLUSH)
			return false;
		uint64_t end = io->sector + io->nr_sectors - 1;
		if (end < r->lo || io->sector > r->hi)
			return false;
	}
	if (++f->matched <= r->after)
		return false;
	if (r->count && f->injected >= r->count)
		return false;
	if (r->prob < 1.0 && (double)(rng_next(&f->rng) >> 11) * 0x1.0p-53 >= r->prob)
		return false;
	f->injected++;
	return true;
}

static void fault_done(struct dev_io *io, int err)
{
	struct fault_io *fi = (struct fault_io *)io;
	struct fault_dev *f = fi->f;
	struct dev_io *orig = fi->orig;
	if (fi->force_err)
		err = fi->force_err;
	free(fi);
	dev_complete(&f->dev, orig, err);
}

static int fault_submit(struct dev *d, struct dev_io *io)
{
	struct fault_dev *f = (struct fault_dev *)d;
	pthread_mutex_lock(&f->lock);
	bool fail = decide_locked(f, io);
	pthread_mutex_unlock(&f->lock);
	uint32_t nr = io->nr_sectors;
	if (fail) {
		if (f->rule.err != FE_SHORT || (io->op != DEV_OP_READ && io->op != DEV_OP_WRITE)) {
			dev_complete(d, io, f->rule.err == FE_ENOSPC ? -ENOSPC : -EIO);
			return 0;
		}
		uint32_t lbs = f->dev.geo.logical_block_size >> DEV_SECTOR_SHIFT;
		nr = io->nr_sectors / 2;
		nr -= nr % (lbs ? lbs : 1);
		if (nr == 0) {
			dev_complete(d, io, -EIO);
			return 0;
		}
	}
	struct fault_io *fi = malloc(sizeof(*fi));
	if (!fi)
		return -ENOMEM;
	fi->io = (struct dev_io){ .op = io->op, .flags = io->flags, .sector = io->sector, .nr_sectors = nr,
				  .buf = io->buf, .done = fault_done };
	fi->orig = io;
	fi->f = f;
	fi->force_err = fail ? -EIO : 0;
	int rc = dev_submit(f->inner, &fi->io);
	if (rc)
		free(fi);
	return rc;
}

static int fault_mark(struct dev *d, const char *name)
{
	return dev_mark(((struct fault_dev *)d)->inner, name);
}

static struct dev *fault_inner(const struct dev *d)
{
	return ((const struct fault_dev *)d)->inner;
}

static void fault_close(struct dev *d)
{
	struct fault_dev *f = (struct fault_dev *)d;
	dev_close(f->inner);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static const struct dev_ops fault_ops = {
	.kind = "fault",
	.submit = fault_submit,
	.mark = fault_mark,
	.inner = fault_inner,
	.close = fault_close,
};

uint64_t dev_fault_injected(const struct dev *d)
{
	while (d && d->ops != &fault_ops)
		d = d->ops->inner ? d->ops->inner(d) : NULL;
	if (!d)
		return 0;
	struct fault_dev *f = (struct fault_dev *)d;
	pthread_mutex_lock(&f->lock);
	uint64_t n = f->injected;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* ---- open ---- */

static int parse_ops(const char *v, unsigned *ops)
{
	*ops = 0;
	const char *p = v;
	while (*p) {
		size_t n = strcspn(p, "|");
		if (n == 4 && memcmp(p, "read", 4) == 0)
			*ops |= 1u << DEV_OP_READ;
		else if (n == 5 && memcmp(p, "write", 5) == 0)
			*ops |= 1u << DEV_OP_WRITE;
		else if (n == 5 && memcmp(p, "flush", 5) == 0)
			*ops |= 1u << DEV_OP_FLUSH;
		else if (n == 7 && memcmp(p, "discard", 7) == 0)
			*ops |= 1u << DEV_OP_DISCARD;
		else if (n == 2 && memcmp(p, "rw", 2) == 0)
			*ops |= 1u << DEV_OP_READ | 1u << DEV_OP_WRITE;
		else if (n == 3 && memcmp(p, "any", 3) == 0)
			*ops |= 0xfu;
		else
			return err_set(-EINVAL, "fault: bad op '%s' (read, write, flush, discard, rw, any; "
						"join with '|')", v);
		p += n;
		if (*p == '|')
			p++;
	}
	if (!*ops)
		return err_set(-EINVAL, "fault: empty op=");
	return 0;
}

static int fault_opt(void *ctx, const char *name, const char *value)
{
	struct fault_rule *r = ctx;
	if (!value)
		return err_set(-EINVAL, "fault: option '%s' needs a value", name);
	if (strcmp(name, "op") == 0)
		return parse_ops(value, &r->ops);
	if (strcmp(name, "sector") == 0) {
		char *dash = strchr(value, '-');
		char a[32], *b = NULL;
		size_t alen = dash ? (size_t)(dash - value) : strlen(value);
		if (alen >= sizeof(a))
			return err_set(-EINVAL, "fault: bad sector range '%s'", value);
		memcpy(a, value, alen);
		a[alen] = '\0';
		if (dash)
			b = dash + 1;
		if (opts_parse_u64(a, &r->lo) || (b && opts_parse_u64(b, &r->hi)))
			return err_set(-EINVAL, "fault: bad sector range '%s' (A or A-B, inclusive)", value);
		if (!b)
			r->hi = r->lo;
		if (r->hi < r->lo)
			return err_set(-EINVAL, "fault: bad sector range '%s' (end before start)", value);
		r->has_range = true;
		return 0;
	}
	if (strcmp(name, "err") == 0) {
		if (strcmp(value, "eio") == 0)
			r->err = FE_EIO;
		else if (strcmp(value, "enospc") == 0)
			r->err = FE_ENOSPC;
		else if (strcmp(value, "short") == 0)
			r->err = FE_SHORT;
		else
			return err_set(-EINVAL, "fault: bad err '%s' (eio, enospc, short)", value);
		return 0;
	}
	if (strcmp(name, "after") == 0) {
		if (opts_parse_u64(value, &r->after))
			return err_set(-EINVAL, "fault: bad after '%s'", value);
		return 0;
	}
	if (strcmp(name, "count") == 0) {
		if (opts_parse_u64(value, &r->count))
			return err_set(-EINVAL, "fault: bad count '%s' (0 = unlimited)", value);
		return 0;
	}
	if (strcmp(name, "prob") == 0) {
		if (opts_parse_double(value, &r->prob) || !(r->prob >= 0.0 && r->prob <= 1.0))
			return err_set(-EINVAL, "fault: bad prob '%s' (0..1)", value);
		return 0;
	}
	if (strcmp(name, "seed") == 0) {
		if (opts_parse_u64(value, &r->seed))
			return err_set(-EINVAL, "fault: bad seed '%s'", value);
		return 0;
	}
	return err_set(-EINVAL, "fault: unknown option '%s' (op, sector, err, after, count, prob, seed)", name);
}

const char *const dev_fault_opt_names[] = { "op", "sector", "err", "after", "count", "prob", "seed", NULL };

int dev_fault_open(const char *args, struct dev **out)
{
	char *inner_spec, *optstr;
	if (dev_split_spec(args, dev_fault_opt_names, &inner_spec, &optstr))
		return err_set(-ENOMEM, "out of memory");
	struct fault_rule rule = { .ops = 0xfu, .err = FE_EIO, .prob = 1.0, .seed = 1 };
	int rc = opts_parse(optstr, fault_opt, &rule);
	free(optstr);
	if (rc) {
		free(inner_spec);
		return rc;
	}
	struct fault_dev *f = calloc(1, sizeof(*f));
	if (!f) {
		free(inner_spec);
		return err_set(-ENOMEM, "out of memory");
	}
	rc = dev_open(inner_spec, &f->inner);
	free(inner_spec);
	if (rc) {
		free(f);
		return rc;
	}
	f->rule = rule;
	f->rng = rule.seed;
	pthread_mutex_init(&f->lock, NULL);
	struct dev_geometry g;
	dev_geometry_get(f->inner, &g);
	rc = dev_init(&f->dev, &fault_ops, &g);
	if (rc) {
		pthread_mutex_destroy(&f->lock);
		dev_close(f->inner);
		free(f);
		return rc;
	}
	*out = &f->dev;
	return 0;
}
