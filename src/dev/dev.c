/* Device front end: spec dispatch, command validation, queue-depth and
 * outstanding-command accounting, synchronous helpers. */
#include "dev/dev_impl.h"
#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- common header ---- */

int dev_init(struct dev *d, const struct dev_ops *ops, const struct dev_geometry *g)
{
	d->ops = ops;
	d->geo = *g;
	d->spec = NULL;
	d->inflight = 0;
	d->active = 0;
	d->closing = false;
	int rc = pthread_mutex_init(&d->lock, NULL);
	if (rc)
		return err_set(-rc, "%s: cannot create lock", ops->kind);
	rc = clock_cond_init(&d->idle_cond);
	if (rc) {
		pthread_mutex_destroy(&d->lock);
		return err_set(rc, "%s: cannot create condition variable", ops->kind);
	}
	return 0;
}

void dev_fini(struct dev *d)
{
	pthread_cond_destroy(&d->idle_cond);
	pthread_mutex_destroy(&d->lock);
	free(d->spec);
	d->spec = NULL;
}

void dev_complete(struct dev *d, struct dev_io *io, int err)
{
	pthread_mutex_lock(&d->lock);
	d->inflight--;
	pthread_mutex_unlock(&d->lock);

	io->done(io, err);

	pthread_mutex_lock(&d->lock);
	if (--d->active == 0 && d->closing)
		pthread_cond_broadcast(&d->idle_cond);
	pthread_mutex_unlock(&d->lock);
}

/* ---- spec parsing ---- */

static bool name_in(const char *item, size_t len, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		if (strlen(names[i]) == len && memcmp(names[i], item, len) == 0)
			return true;
	return false;
}

int dev_split_spec(const char *args, const char *const *names, char **head, char **opts)
{
	size_t len = strlen(args);
	size_t cut = len;      /* args[cut..] is the taken part, starting with ',' if non-empty */
	size_t head_end;       /* args[..head_end) is the head */
	/* Names taken so far, to stop at a repeated one. */
	const char *taken[32];
	size_t taken_len[32];
	size_t ntaken = 0;

	for (;;) {
		head_end = cut;
		size_t start = cut;
		while (start > 0 && args[start - 1] != ',')
			start--;
		if (start == 0)
			break; /* the first field always belongs to the head */
		const char *item = args + start;
		size_t ilen = cut - start;
		if (ilen == 0) {
			/* ",," is an explicit boundary: drop it and stop. */
			head_end = start - 1;
			break;
		}
		const char *eq = memchr(item, '=', ilen);
		size_t nlen = eq ? (size_t)(eq - item) : ilen;
		if (!name_in(item, nlen, names))
			break;
		bool dup = false;
		for (size_t i = 0; i < ntaken; i++)
			if (taken_len[i] == nlen && memcmp(taken[i], item, nlen) == 0)
				dup = true;
		if (dup || ntaken == 32)
			break;
		taken[ntaken] = item;
		taken_len[ntaken++] = nlen;
		cut = start - 1; /* the comma before the item */
	}
	*head = strndup(args, head_end);
	*opts = strdup(cut < len ? args + cut + 1 : "");
	if (!*head || !*opts) {
		free(*head);
		free(*opts);
		*head = *opts = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The one list of kinds: every spec is read against it (dev_open,
 * dev_spec_parse, dev_spec_has_kind). wrap_names: the wrapper's own option
 * names (log:, fault:), NULL for the kinds that wrap nothing. */
struct kind_entry {
	const char *name;
	enum dev_kind kind;
	int (*open)(const char *args, struct dev **out);
	const char *const *wrap_names;
};

static const struct kind_entry kinds[] = {
	{ "file", DEV_KIND_FILE, dev_file_open, NULL },
	{ "mem", DEV_KIND_MEM, dev_mem_open, NULL },
	{ "sim", DEV_KIND_SIM, dev_sim_open, NULL },
	{ "log", DEV_KIND_LOG, dev_log_open, dev_log_opt_names },
	{ "fault", DEV_KIND_FAULT, dev_fault_open, dev_fault_opt_names },
	{ "nbd", DEV_KIND_NBD, dev_nbd_open, NULL },
};
#define NR_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* The kind named by the word before s's first colon (all of s without
 * one: "mem" is the kind mem, missing its arguments), or NULL; *klen = the
 * word's length. */
static const struct kind_entry *kind_of(const char *s, size_t *klen)
{
	const char *colon = strchr(s, ':');
	*klen = colon ? (size_t)(colon - s) : strlen(s);
	for (size_t i = 0; i < NR_KINDS; i++)
		if (strlen(kinds[i].name) == *klen && memcmp(kinds[i].name, s, *klen) == 0)
			return &kinds[i];
	return NULL;
}

bool dev_spec_has_kind(const char *s)
{
	size_t klen;
	return s && strchr(s, ':') && kind_of(s, &klen);
}

const char *dev_kind_name(enum dev_kind k)
{
	for (size_t i = 0; i < NR_KINDS; i++)
		if (kinds[i].kind == k)
			return kinds[i].name;
	return "file"; /* DEV_KIND_PATH: a bare path is opened as file:PATH */
}

/* The last "file=" item of a sim: spec's options (args = "MODEL,k=v,..."),
 * as an offset and length into args; false when there is none. */
static bool sim_file_opt(const char *args, size_t *off, size_t *len)
{
	bool found = false;
	for (const char *p = strchr(args, ','); p; p = strchr(p, ',')) {
		p++;
		size_t n = strcspn(p, ",");
		if (n > 5 && !strncmp(p, "file=", 5)) {
			*off = (size_t)(p + 5 - args);
			*len = n - 5;
			found = true;
		}
		p += n;
	}
	return found;
}

/* Walk the spec at spec[off, off+len) (a wrapper's inner spec is a prefix
 * of its arguments, so every level is a span of the caller's string) down
 * to its base kind, filling what each level says. */
static int spec_walk(const char *spec, size_t off, size_t len, unsigned depth, struct dev_spec_info *out)
{
	char *s = strndup(spec + off, len);
	if (!s)
		return err_set(-ENOMEM, "out of memory");
	int rc = 0;
	size_t klen;
	const struct kind_entry *k = kind_of(s, &klen);
	if (!*s)
		rc = err_set(-EINVAL, "device spec '%s': empty inner spec", spec);
	else if (!k)
		rc = err_set(-EINVAL, "device spec '%s': unknown kind '%.*s' (use file, mem, sim, log, fault or nbd)",
			     spec, (int)klen, s);
	else if (!s[klen] || !s[klen + 1])
		rc = err_set(-EINVAL, "device spec '%s': missing arguments after '%s:'", spec, k->name);
	else if (depth > 16)
		rc = err_set(-EINVAL, "device spec '%s': wrappers nested too deep", spec);
	if (rc) {
		free(s);
		return rc;
	}
	const char *args = s + klen + 1;
	size_t aoff = off + klen + 1; /* args' offset in spec */
	out->base = k->kind;
	if (k->wrap_names || k->kind == DEV_KIND_FILE) {
		char *head, *opts;
		rc = dev_split_spec(args, k->wrap_names ? k->wrap_names : dev_file_opt_names, &head, &opts);
		if (rc)
			rc = err_set(rc, "out of memory");
		else if (k->wrap_names)
			rc = spec_walk(spec, aoff, strlen(head), depth + 1, out);
		else if (*head) {
			out->file = spec + aoff;
			out->file_len = strlen(head);
			out->plain_file = depth == 0;
		}
		free(head);
		free(opts);
	} else if (k->kind == DEV_KIND_SIM) {
		size_t foff = 0, flen = 0;
		out->simulated = true;
		out->in_memory = !sim_file_opt(args, &foff, &flen);
		if (!out->in_memory) {
			out->file = spec + aoff + foff;
			out->file_len = flen;
		}
	} else if (k->kind == DEV_KIND_MEM) {
		out->in_memory = true;
	}
	free(s);
	return rc;
}

int dev_spec_parse(const char *spec, struct dev_spec_info *out)
{
	memset(out, 0, sizeof *out);
	if (!spec || !*spec)
		return err_set(-EINVAL, "empty device spec (use file:, mem:, sim:, log:, fault: or nbd:)");
	size_t klen;
	const struct kind_entry *k = strchr(spec, ':') ? kind_of(spec, &klen) : NULL;
	if (!k) {
		/* a bare path: callers open it as file:PATH */
		out->kind = out->base = DEV_KIND_PATH;
		out->plain_file = true;
		out->file = spec;
		out->file_len = strlen(spec);
		return 0;
	}
	out->kind = k->kind;
	out->has_kind = true;
	return spec_walk(spec, 0, strlen(spec), 0, out);
}

int dev_open(const char *spec, struct dev **out)
{
	*out = NULL;
	if (!spec || !*spec)
		return err_set(-EINVAL, "empty device spec (use file:, mem:, sim:, log:, fault: or nbd:)");
	size_t klen;
	const struct kind_entry *k = kind_of(spec, &klen);
	if (k) {
		if (!spec[klen] || !spec[klen + 1])
			return err_set(-EINVAL, "device spec '%s': missing arguments after '%s:'", spec, k->name);
		struct dev *d = NULL;
		int rc = k->open(spec + klen + 1, &d);
		if (rc)
			return rc;
		d->spec = strdup(spec);
		if (!d->spec) {
			dev_close(d);
			return err_set(-ENOMEM, "out of memory");
		}
		*out = d;
		return 0;
	}
	return err_set(-EINVAL, "device spec '%s': unknown kind '%.*s' (use file, mem, sim, log, fault or nbd)",
		       spec, (int)klen, spec);
}

void dev_close(struct dev *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->closing = true;
	while (d->active)
		pthread_cond_wait(&d->idle_cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
	dev_fini(d);
	d->ops->close(d);
}

void dev_geometry_get(const struct dev *d, struct dev_geometry *g)
{
	*g = d->geo;
}

const char *dev_spec(const struct dev *d)
{
	return d->spec ? d->spec : "";
}

/* ---- commands ---- */

static const char *op_name(enum dev_op op)
{
	switch (op) {
	case DEV_OP_READ: return "read";
	case DEV_OP_WRITE: return "write";
	case DEV_OP_FLUSH: return "flush";
	case DEV_OP_DISCARD: return "discard";
	}
	return "?";
}

static int validate(const struct dev *d, const struct dev_io *io)
{
	const struct dev_geometry *g = &d->geo;
	const char *spec = dev_spec(d);
	if (!io->done)
		return err_set(-EINVAL, "%s: command without a done() callback", spec);
	if (io->flags & ~(unsigned)(DEV_IO_FUA | DEV_IO_PREFLUSH | DEV_IO_ALONE | DEV_IO_MORE))
		return err_set(-EINVAL, "%s: unknown command flags 0x%x", spec, io->flags);
	switch (io->op) {
	case DEV_OP_FLUSH:
		return 0;
	case DEV_OP_READ:
	case DEV_OP_WRITE:
		if (!io->buf)
			return err_set(-EINVAL, "%s: %s without a buffer", spec, op_name(io->op));
		if (io->nr_sectors > g->max_hw_sectors)
			return err_set(-EINVAL, "%s: %s of %u sectors exceeds max_hw_sectors %u", spec,
				       op_name(io->op), io->nr_sectors, g->max_hw_sectors);
		break;
	case DEV_OP_DISCARD:
		break;
	default:
		return err_set(-EINVAL, "%s: unknown op %d", spec, (int)io->op);
	}
	if (io->nr_sectors == 0)
		return err_set(-EINVAL, "%s: %s of 0 sectors", spec, op_name(io->op));
	uint64_t dev_sectors = g->size_bytes >> DEV_SECTOR_SHIFT;
	if (io->sector >= dev_sectors || io->nr_sectors > dev_sectors - io->sector)
		return err_set(-ERANGE, "%s: %s of sectors %llu+%u is beyond the end (%llu sectors)", spec,
			       op_name(io->op), (unsigned long long)io->sector, io->nr_sectors,
			       (unsigned long long)dev_sectors);
	uint32_t lbs = g->logical_block_size >> DEV_SECTOR_SHIFT;
	if (lbs > 1 && (io->sector % lbs || io->nr_sectors % lbs))
		return err_set(-EINVAL, "%s: %s of sectors %llu+%u is not aligned to %u-byte blocks", spec,
			       op_name(io->op), (unsigned long long)io->sector, io->nr_sectors,
			       g->logical_block_size);
	return 0;
}

int dev_submit(struct dev *d, struct dev_io *io)
{
	int rc = validate(d, io);
	if (rc)
		return rc;
	pthread_mutex_lock(&d->lock);
	if (d->closing) {
		pthread_mutex_unlock(&d->lock);
		return err_set(-ESHUTDOWN, "%s: device is closing", dev_spec(d));
	}
	if (d->inflight >= d->geo.queue_depth) {
		pthread_mutex_unlock(&d->lock);
		return err_set(-EBUSY, "%s: queue full (depth %u)", dev_spec(d), d->geo.queue_depth);
	}
	d->inflight++;
	d->active++;
	pthread_mutex_unlock(&d->lock);

	if (!d->ops->commit)
		io->flags &= ~(unsigned)DEV_IO_MORE; /* nobody would start it */
	rc = d->ops->submit(d, io);
	if (rc) {
		pthread_mutex_lock(&d->lock);
		d->inflight--;
		if (--d->active == 0 && d->closing)
			pthread_cond_broadcast(&d->idle_cond);
		pthread_mutex_unlock(&d->lock);
	}
	return rc;
}

void dev_commit(struct dev *d)
{
	if (d->ops->commit)
		d->ops->commit(d);
}

struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
};

static void sync_done(struct dev_io *io, int err)
{
	struct sync_wait *w = io->priv;
	pthread_mutex_lock(&w->lock);
	w->err = err;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* One command, waiting for it; retries while the queue is full. */
static int sync_one(struct dev *d, enum dev_op op, uint64_t sector, uint32_t nr, void *buf,
		    unsigned flags)
{
	struct sync_wait w = { .done = false, .err = 0 };
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	struct dev_io io = {
		.op = op, .flags = flags, .sector = sector, .nr_sectors = nr, .buf = buf,
		.done = sync_done, .priv = &w,
	};
	int rc;
	while ((rc = dev_submit(d, &io)) == -EBUSY)
		clock_sleep_ns(50 * NS_PER_US);
	if (rc == 0) {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		rc = w.err;
	}
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return rc;
}

int dev_rw_sync(struct dev *d, enum dev_op op, uint64_t sector, uint32_t nr_sectors, void *buf,
		unsigned flags)
{
	if (op == DEV_OP_FLUSH)
		return sync_one(d, op, 0, 0, NULL, flags);
	if (nr_sectors == 0)
		return -EINVAL;
	/* Larger than one command: split (DISCARD is never split). */
	uint32_t max = op == DEV_OP_DISCARD ? nr_sectors : d->geo.max_hw_sectors;
	uint32_t lbs = d->geo.logical_block_size >> DEV_SECTOR_SHIFT;
	if (lbs > 1)
		max -= max % lbs;
	if (max == 0)
		return -EINVAL;
	uint32_t done = 0;
	while (done < nr_sectors) {
		uint32_t n = nr_sectors - done < max ? nr_sectors - done : max;
		unsigned f = flags;
		if (done)
			f &= ~(unsigned)DEV_IO_PREFLUSH; /* only before the first piece */
		void *p = buf ? (char *)buf + ((size_t)done << DEV_SECTOR_SHIFT) : NULL;
		int rc = sync_one(d, op, sector + done, n, p, f);
		if (rc)
			return rc;
		done += n;
	}
	return 0;
}

int dev_flush_sync(struct dev *d)
{
	return sync_one(d, DEV_OP_FLUSH, 0, 0, NULL, 0);
}

int dev_lock(struct dev *d, enum dev_lock_mode mode)
{
	if (!d)
		return 0;
	/* Down through wrappers to the first kind that guards something. */
	while (!d->ops->lock && d->ops->inner) {
		struct dev *in = d->ops->inner(d);
		if (!in)
			break;
		d = in;
	}
	return d->ops->lock ? d->ops->lock(d, mode) : 0;
}

int dev_mark(struct dev *d, const char *name)
{
	if (!name)
		return -EINVAL;
	if (!d->ops->mark)
		return 0;
	return d->ops->mark(d, name);
}
