/* sim:hdd|ssd|ssd-nq[,size=..][,capacity=..][,scale=..][,depth=..][,wcache=0|1]
 *     [,aging=MS][,file=PATH]
 *
 * Modelled devices. Data lives in a sparse store (RAM or file=); timing comes
 * from a discrete-event model run by one device thread per device, which
 * sleeps on the real monotonic clock until each modelled completion time
 * (model time x scale), then moves the data and calls dev_complete(). The
 * model and its constants are documented in docs/devices.md; the disk's
 * mechanics are in dev_sim_hdd.c, the shared state in dev_sim_impl.h.
 */
#include "dev/dev_sim_impl.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- ssd: a 2009 Intel X25-M (G2, 80 GB) ---- */
#define SSD_READ_NS (40 * NS_PER_US)                /* flash page read, per channel */
#define SSD_CMD_NS (12 * NS_PER_US)                 /* controller, per command (serial) */
#define SSD_LINK_BPS 250000000.0                    /* sequential read rate */
#define SSD_PROG_NS (96 * NS_PER_US)                /* program engine, per write */
#define SSD_PROG_BPS 73800000.0                     /* ... + bytes at this rate */
#define SSD_CHANNELS 10
#define SSD_DEPTH 32u
#define SSD_FLUSH_NS (50 * NS_PER_US)
#define SSD_CACHE_BYTES (32ull << 20)

/* ---- ssd-nq: a JMicron JMF602-era drive, no queuing ---- */
#define SSDNQ_READ_NS (100 * NS_PER_US)
#define SSDNQ_LINK_BPS 250000000.0
#define SSDNQ_WRITE_NS NS_PER_MS                    /* per started 128 KiB of a write */
#define SSDNQ_WRITE_UNIT (128u << 10)

#define SIM_MAX_HW_SECTORS 1024u                    /* 512 KiB */
#define SIM_DEFAULT_SIZE (64ull << 30)
#define SIM_MAX_DEPTH 256u

/* Model time now (under s->lock). Stands still while frozen. */
static uint64_t model_now(const struct sim_dev *s)
{
	if (s->frozen)
		return s->frozen_ns;
	uint64_t r = clock_now_ns();
	if (r <= s->t0_real)
		return 0;
	return (uint64_t)((double)(r - s->t0_real) / s->scale);
}

static uint64_t real_of(const struct sim_dev *s, uint64_t model_ns)
{
	return s->t0_real + (uint64_t)((double)model_ns * s->scale);
}

uint64_t sim_xfer_ns(uint64_t bytes, double bps)
{
	return (uint64_t)((double)bytes * 1e9 / bps);
}

/* ---- job bookkeeping (all under s->lock) ---- */

static void inservice_add(struct sim_dev *s, struct sim_job *j)
{
	struct list_node *pos;
	list_for_each(pos, &s->inservice) {
		struct sim_job *o = list_entry(pos, struct sim_job, node);
		if (o->end_ns > j->end_ns)
			break;
	}
	list_add_before(pos, &j->node);
}

/* New data for [sector, end) has landed in the write cache: the dirty copies
 * of those sectors still waiting to be destaged are stale. Like a drive that
 * overwrites a dirty cached sector in place, drop them from the queued
 * destages (trimming or splitting a destage that only partly overlaps) and
 * release their cache space; the caller queues the new data once. A destage
 * already on a server is writing the old copy and stays (the new data is
 * destaged after it, so the media ends up with the newest bytes). Timing
 * only: the store always holds the newest data, written when the host
 * command completed (finish_host), so no destage ever moves stale bytes and
 * a read returns the newest data. */
static void destage_replace(struct sim_dev *s, uint64_t sector, uint64_t end)
{
	struct list_node *pos, *tmp;
	list_for_each_safe(pos, tmp, &s->mediaq) {
		struct sim_job *t = list_entry(pos, struct sim_job, node);
		uint64_t t_end = t->sector + t->nr;
		if (t->io || t_end <= sector || t->sector >= end)
			continue;
		if (t->sector < sector && t_end > end) {
			/* The new data falls inside: split off the tail. If
			 * that fails, keep the stale copy (costs time only). */
			struct sim_job *tail = calloc(1, sizeof(*tail));
			if (!tail)
				continue;
			*tail = *t;
			tail->sector = end;
			tail->nr = (uint32_t)(t_end - end);
			list_add_before(t->node.next, &tail->node);
			s->destage_pending++;
			t->nr = (uint32_t)(sector - t->sector);
			s->cache_used -= (end - sector) << DEV_SECTOR_SHIFT;
			continue;
		}
		uint64_t lo = t->sector > sector ? t->sector : sector;
		uint64_t hi = t_end < end ? t_end : end;
		s->cache_used -= (hi - lo) << DEV_SECTOR_SHIFT;
		if (hi - lo == t->nr) {
			list_del(&t->node);
			free(t);
			s->destage_pending--;
		} else if (lo == t->sector) {
			t->sector = hi;
			t->nr = (uint32_t)(t_end - hi);
		} else {
			t->nr = (uint32_t)(lo - t->sector);
		}
	}
}

static void queue_destage(struct sim_dev *s, uint64_t sector, uint32_t nr, uint64_t now)
{
	destage_replace(s, sector, sector + nr);
	/* Merge with a queued destage that ends where this one starts. */
	if (!list_empty(&s->mediaq)) {
		struct sim_job *t = list_entry(s->mediaq.prev, struct sim_job, node);
		if (!t->io && t->sector + t->nr == sector && t->nr + nr <= 2048) {
			t->nr += nr;
			return;
		}
	}
	struct sim_job *j = calloc(1, sizeof(*j));
	if (!j)
		return; /* timing only: the data is already in the store */
	j->op = DEV_OP_WRITE;
	j->sector = sector;
	j->nr = nr;
	j->arrive_ns = now;
	j->server = -1;
	list_add_tail(&s->mediaq, &j->node);
	s->destage_pending++;
}

/* A host job passes admission (no barrier in the way). */
static void admit_one(struct sim_dev *s, struct sim_job *j, uint64_t now)
{
	uint64_t bytes = (uint64_t)j->nr << DEV_SECTOR_SHIFT;
	if (j->op == DEV_OP_WRITE && s->wcache && !(j->flags & DEV_IO_FUA) &&
	    s->cache_used + bytes <= s->cache_bytes) {
		double bps = s->model == SIM_HDD ? HDD_BUS_BPS : SSD_LINK_BPS;
		uint64_t start = s->bus_free_ns > j->arrive_ns ? s->bus_free_ns : j->arrive_ns;
		j->cached = true;
		j->start_ns = start;
		j->xfer_ns = sim_xfer_ns(bytes, bps);
		j->end_ns = start + (s->model == SIM_HDD ? HDD_CMD_NS : SSD_CMD_NS) + j->xfer_ns;
		if (s->model == SIM_HDD)
			hdd_segs_invalidate(s, j->sector, j->nr);
		s->bus_free_ns = j->end_ns;
		s->cache_used += bytes;
		s->host_cached++;
		inservice_add(s, j);
		return;
	}
	/* A write to the media (FUA, or no room in the cache) supersedes the
	 * dirty cached copies of its sectors too. */
	if (j->op == DEV_OP_WRITE)
		destage_replace(s, j->sector, j->sector + j->nr);
	list_add_tail(&s->mediaq, &j->node);
	s->host_media++;
}

/* Pick the next job from mediaq for a server free since free_ns. */
static struct sim_job *pick(struct sim_dev *s, uint64_t now)
{
	struct sim_job *first = list_entry(s->mediaq.next, struct sim_job, node);
	if (s->model != SIM_HDD)
		return first;
	/* Aging (a firmware parameter): nothing waits longer than aging_ns.
	 * Judged at the event time - when the head became free, or the
	 * oldest job arrived - not at this thread's wake-up: a host that
	 * wakes it late (model time runs 1/scale times faster than real, so
	 * 1 ms late is 100 ms at scale=0.01) must not turn SPTF into FIFO. */
	uint64_t at = s->srv_free_ns[0] > first->arrive_ns ? s->srv_free_ns[0] : first->arrive_ns;
	if (at > now)
		at = now;
	if (at > first->arrive_ns + s->aging_ns)
		return first;
	struct sim_job *best = NULL;
	uint64_t best_pos = UINT64_MAX;
	int n = 0;
	struct list_node *pos;
	list_for_each(pos, &s->mediaq) {
		if (n++ == HDD_SPTF_WINDOW)
			break;
		struct sim_job *j = list_entry(pos, struct sim_job, node);
		struct hdd_plan pl;
		hdd_plan(s, j, s->srv_free_ns[0], &pl);
		uint64_t p = (pl.ready - s->srv_free_ns[0]) + pl.seek + pl.rot;
		if (p < best_pos) {
			best_pos = p;
			best = j;
		}
	}
	return best;
}

/* X25-M: a read occupies its channel for the flash read, then the shared
 * controller and link; a write crosses the controller and link, then the
 * shared program engine (which sets the sustained write rate). */
static uint64_t ssd_serve(struct sim_dev *s, struct sim_job *j, uint64_t start, uint64_t bytes)
{
	uint64_t link_ns = SSD_CMD_NS + (j->op == DEV_OP_DISCARD ? 0 : sim_xfer_ns(bytes, SSD_LINK_BPS));
	if (!j->io)
		link_ns = 0; /* a destage: the data crossed the link already */
	uint64_t t = start + (j->op == DEV_OP_READ ? SSD_READ_NS : 0);
	uint64_t link = t > s->bus_free_ns ? t : s->bus_free_ns;
	j->rot_ns = link - t; /* waiting for the controller (not reported) */
	s->bus_free_ns = link + link_ns;
	j->xfer_ns = link_ns;
	if (j->op != DEV_OP_WRITE)
		return s->bus_free_ns;
	uint64_t prog = s->bus_free_ns > s->engine_free_ns ? s->bus_free_ns : s->engine_free_ns;
	s->engine_free_ns = prog + SSD_PROG_NS + sim_xfer_ns(bytes, SSD_PROG_BPS);
	return s->engine_free_ns;
}

static void start_on_server(struct sim_dev *s, struct sim_job *j, int srv, uint64_t now)
{
	/* Event time, not wake-up time: the server starts when it became free
	 * or when the job arrived, whichever is later (both <= now). */
	uint64_t start = s->srv_free_ns[srv] > j->arrive_ns ? s->srv_free_ns[srv] : j->arrive_ns;
	uint64_t bytes = (uint64_t)j->nr << DEV_SECTOR_SHIFT;
	uint64_t end;
	j->start_ns = start;
	switch (s->model) {
	case SIM_HDD: {
		/* The command overhead overlaps earlier work (plan.ready):
		 * queued sequential commands stream at the media rate. */
		struct hdd_plan pl;
		hdd_plan(s, j, s->srv_free_ns[srv], &pl);
		j->seek_ns = pl.seek;
		j->rot_ns = pl.rot;
		j->xfer_ns = pl.xfer;
		end = pl.ready + pl.seek + pl.rot + pl.xfer;
		hdd_apply(s, j, &pl, end);
		break;
	}
	case SIM_SSD:
		end = ssd_serve(s, j, start, bytes);
		break;
	case SIM_SSD_NQ:
	default:
		if (j->op == DEV_OP_WRITE) {
			uint64_t units = (bytes + SSDNQ_WRITE_UNIT - 1) / SSDNQ_WRITE_UNIT;
			j->xfer_ns = sim_xfer_ns(bytes, SSDNQ_LINK_BPS);
			end = start + units * SSDNQ_WRITE_NS + j->xfer_ns;
		} else if (j->op == DEV_OP_READ) {
			j->xfer_ns = sim_xfer_ns(bytes, SSDNQ_LINK_BPS);
			end = start + SSDNQ_READ_NS + j->xfer_ns;
		} else {
			end = start + SSDNQ_READ_NS;
		}
		break;
	}
	j->end_ns = end;
	j->server = srv;
	s->srv_busy[srv] = true;
	s->st.modelled_ns += end - start;
	s->st.seek_ns += j->seek_ns;
	s->st.rotate_ns += s->model == SIM_HDD ? j->rot_ns : 0;
	s->st.transfer_ns += j->xfer_ns;
	inservice_add(s, j);
}

static bool start_jobs(struct sim_dev *s, uint64_t now)
{
	bool any = false;
	while (!list_empty(&s->mediaq)) {
		int srv = -1;
		for (unsigned i = 0; i < s->nservers; i++)
			if (!s->srv_busy[i] && (srv < 0 || s->srv_free_ns[i] < s->srv_free_ns[srv]))
				srv = (int)i;
		if (srv < 0)
			break;
		struct sim_job *j = pick(s, now);
		list_del(&j->node);
		start_on_server(s, j, srv, now);
		any = true;
	}
	return any;
}

/* Admission and barrier (FLUSH / PREFLUSH) progress. */
static bool admit(struct sim_dev *s, uint64_t now)
{
	bool any = false;
	for (;;) {
		if (s->barrier) {
			if (s->bar_state == BAR_QUIET && s->host_media == 0 && s->host_cached == 0) {
				s->bar_state = BAR_DRAIN;
				any = true;
			}
			if (s->bar_state == BAR_DRAIN && s->destage_pending == 0) {
				struct sim_job *b = s->barrier;
				b->end_ns = now + (s->model == SIM_HDD ? HDD_FLUSH_NS : SSD_FLUSH_NS);
				s->st.modelled_ns += b->end_ns - now;
				s->bar_state = BAR_FLUSHING;
				inservice_add(s, b);
				any = true;
			}
			return any;
		}
		if (list_empty(&s->arrivals))
			return any;
		struct sim_job *j = list_entry(s->arrivals.next, struct sim_job, node);
		list_del(&j->node);
		any = true;
		if (j->op == DEV_OP_FLUSH || (j->op == DEV_OP_WRITE && (j->flags & DEV_IO_PREFLUSH))) {
			/* Non-queued command: waits for everything before it,
			 * then drains the cache; later commands wait for it. */
			s->barrier = j;
			s->bar_state = BAR_QUIET;
			j->start_ns = now;
			continue;
		}
		admit_one(s, j, now);
	}
}

static void finish_host(struct sim_dev *s, struct sim_job *j)
{
	struct dev_io *io = j->io;
	int err = 0;
	if (io->op != DEV_OP_FLUSH)
		err = dev_store_io(s->store, io);
	s->st.commands++;
	switch (io->op) {
	case DEV_OP_READ: s->st.reads++; break;
	case DEV_OP_WRITE: s->st.writes++; break;
	case DEV_OP_FLUSH: s->st.flushes++; break;
	case DEV_OP_DISCARD: s->st.discards++; break;
	}
	s->st.last_service_ns = j->end_ns - j->start_ns;
	s->st.last_arrive_ns = j->arrive_ns;
	s->st.last_end_ns = j->end_ns;
	s->st.last_wait_ns = j->start_ns > j->arrive_ns ? j->start_ns - j->arrive_ns : 0;
	s->st.last_seek_ns = j->seek_ns;
	s->st.last_rotate_ns = s->model == SIM_HDD ? j->rot_ns : 0;
	s->st.last_transfer_ns = j->xfer_ns;
	free(j);
	pthread_mutex_unlock(&s->lock);
	dev_complete(&s->dev, io, err);
	pthread_mutex_lock(&s->lock);
}

/* Handle the completion of inservice job j (already unlinked). */
static void complete_job(struct sim_dev *s, struct sim_job *j, uint64_t now)
{
	if (j->server >= 0) {
		s->srv_busy[j->server] = false;
		s->srv_free_ns[j->server] = j->end_ns;
	}
	if (j == s->barrier) {
		s->barrier = NULL;
		s->bar_state = BAR_NONE;
		if (j->op == DEV_OP_WRITE) {
			/* The preflush is done; the write itself goes on. */
			j->flags &= ~(unsigned)DEV_IO_PREFLUSH;
			uint64_t t = j->end_ns;
			j->arrive_ns = t;
			admit_one(s, j, t);
			return;
		}
		finish_host(s, j);
		return;
	}
	if (!j->io) {
		s->destage_pending--;
		s->st.destages++;
		s->cache_used -= (uint64_t)j->nr << DEV_SECTOR_SHIFT;
		free(j);
		return;
	}
	if (j->cached) {
		s->host_cached--;
		s->st.cached_writes++;
		s->st.modelled_ns += j->end_ns - j->start_ns;
		queue_destage(s, j->sector, j->nr, now);
		/* queue_destage may have merged: account the bytes per job. */
		finish_host(s, j);
		return;
	}
	s->host_media--;
	finish_host(s, j);
}

static void *sim_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-sim"); /* top, perf, gdb */
	struct sim_dev *s = arg;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t now = model_now(s);
		bool progress = false;
		if (!list_empty(&s->inservice)) {
			struct sim_job *j = list_entry(s->inservice.next, struct sim_job, node);
			if (j->end_ns <= now) {
				list_del(&j->node);
				complete_job(s, j, now);
				continue;
			}
		}
		progress |= admit(s, now);
		progress |= start_jobs(s, now);
		if (progress)
			continue;
		if (s->stopping && list_empty(&s->arrivals) && s->host_media == 0 && s->host_cached == 0 &&
		    !s->barrier)
			break;
		uint64_t deadline = 0;
		if (!list_empty(&s->inservice) && !s->frozen)
			deadline = real_of(s, list_entry(s->inservice.next, struct sim_job, node)->end_ns);
		clock_cond_wait_until(&s->cond, &s->lock, deadline);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int sim_submit(struct dev *d, struct dev_io *io)
{
	struct sim_dev *s = (struct sim_dev *)d;
	struct sim_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->io = io;
	j->op = io->op;
	j->flags = io->flags;
	j->sector = io->sector;
	j->nr = io->nr_sectors;
	j->server = -1;
	pthread_mutex_lock(&s->lock);
	j->arrive_ns = model_now(s);
	list_add_tail(&s->arrivals, &j->node);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void free_list(struct list_node *h)
{
	struct list_node *pos, *tmp;
	list_for_each_safe(pos, tmp, h) {
		list_del(pos);
		free(list_entry(pos, struct sim_job, node));
	}
}

static void sim_close(struct dev *d)
{
	struct sim_dev *s = (struct sim_dev *)d;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	/* Pending destages are timing only: the data is in the store. */
	free_list(&s->mediaq);
	free_list(&s->inservice);
	free_list(&s->arrivals);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	dev_store_destroy(s->store);
	free(s);
}

static const struct sim_dev *find_sim(const struct dev *d);

int dev_sim_stats(const struct dev *d, struct dev_sim_stats *out)
{
	const struct sim_dev *s = find_sim(d);
	if (!s)
		return err_set(-EINVAL, "device '%s' is not a sim: device", dev_spec(d));
	pthread_mutex_lock((pthread_mutex_t *)&s->lock);
	*out = s->st;
	pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
	return 0;
}

int dev_sim_freeze(struct dev *d, bool freeze)
{
	struct sim_dev *s = (struct sim_dev *)find_sim(d);
	if (!s)
		return err_set(-EINVAL, "device '%s' is not a sim: device", dev_spec(d));
	pthread_mutex_lock(&s->lock);
	if (freeze && !s->frozen) {
		s->frozen_ns = model_now(s);
		s->frozen = true;
	} else if (!freeze && s->frozen) {
		/* Model time goes on from where it stood. */
		s->t0_real = clock_now_ns() - (uint64_t)((double)s->frozen_ns * s->scale);
		s->frozen = false;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int dev_sim_media_bps(const struct dev *d, uint64_t sector, double *bps)
{
	const struct sim_dev *s = find_sim(d);
	if (!s)
		return err_set(-EINVAL, "device '%s' is not a sim: device", dev_spec(d));
	*bps = s->model == SIM_HDD ? hdd_media_bps(&s->geom, sector) : SSD_LINK_BPS;
	return 0;
}

uint64_t dev_sim_modelled_ns(const struct dev *d)
{
	struct dev_sim_stats st;
	if (dev_sim_stats(d, &st))
		return 0;
	return st.modelled_ns;
}

static int sim_lock(struct dev *d, enum dev_lock_mode mode)
{
	return dev_store_lock(((struct sim_dev *)d)->store, mode);
}

static const struct dev_ops sim_ops = {
	.kind = "sim",
	.submit = sim_submit,
	.close = sim_close,
	.lock = sim_lock,
};

static const struct sim_dev *find_sim(const struct dev *d)
{
	while (d && d->ops != &sim_ops)
		d = d->ops->inner ? d->ops->inner(d) : NULL;
	return (const struct sim_dev *)d;
}

/* ---- open ---- */

struct sim_opts {
	uint64_t size;
	uint64_t capacity; /* bytes; 0: the model's (and at least size) */
	double scale;
	uint64_t depth; /* 0: model default */
	int wcache;     /* -1: model default */
	uint64_t aging_ms;
	char *file;
};

static int sim_opt(void *ctx, const char *name, const char *value)
{
	struct sim_opts *o = ctx;
	if (!value)
		return err_set(-EINVAL, "sim: option '%s' needs a value", name);
	if (strcmp(name, "size") == 0) {
		if (opts_parse_size(value, &o->size) || o->size < 1024 * 1024 || o->size % DEV_SECTOR_SIZE)
			return err_set(-EINVAL, "sim: bad size '%s' (a multiple of 512, at least 1M)", value);
	} else if (strcmp(name, "scale") == 0) {
		if (opts_parse_double(value, &o->scale) || !(o->scale >= 1e-6) || o->scale > 1e6)
			return err_set(-EINVAL, "sim: bad scale '%s' (a factor > 0, e.g. 0.1)", value);
	} else if (strcmp(name, "depth") == 0) {
		if (opts_parse_u64(value, &o->depth) || o->depth < 1 || o->depth > SIM_MAX_DEPTH)
			return err_set(-EINVAL, "sim: bad depth '%s' (1..%u)", value, SIM_MAX_DEPTH);
	} else if (strcmp(name, "capacity") == 0) {
		if (opts_parse_size(value, &o->capacity) || o->capacity < 1024 * 1024 ||
		    o->capacity % DEV_SECTOR_SIZE)
			return err_set(-EINVAL, "sim: bad capacity '%s' (a multiple of 512, at least 1M)", value);
	} else if (strcmp(name, "aging") == 0) {
		if (opts_parse_u64(value, &o->aging_ms) || o->aging_ms < 1 || o->aging_ms > 60000)
			return err_set(-EINVAL, "sim: bad aging '%s' (milliseconds, 1..60000)", value);
	} else if (strcmp(name, "wcache") == 0) {
		bool b;
		if (opts_parse_bool(value, &b))
			return err_set(-EINVAL, "sim: bad wcache '%s' (use 0 or 1)", value);
		o->wcache = b;
	} else if (strcmp(name, "file") == 0) {
		if (!*value)
			return err_set(-EINVAL, "sim: empty file=");
		free(o->file);
		o->file = strdup(value);
		if (!o->file)
			return -ENOMEM;
	} else {
		return err_set(-EINVAL, "sim: unknown option '%s' (size, capacity, scale, depth, wcache, aging, file)", name);
	}
	return 0;
}

int dev_sim_open(const char *args, struct dev **out)
{
	const char *comma = strchr(args, ',');
	size_t mlen = comma ? (size_t)(comma - args) : strlen(args);
	enum sim_model model;
	if (mlen == 3 && memcmp(args, "hdd", 3) == 0)
		model = SIM_HDD;
	else if (mlen == 3 && memcmp(args, "ssd", 3) == 0)
		model = SIM_SSD;
	else if (mlen == 6 && memcmp(args, "ssd-nq", 6) == 0)
		model = SIM_SSD_NQ;
	else
		return err_set(-EINVAL, "sim: unknown model '%.*s' (use hdd, ssd or ssd-nq)", (int)mlen, args);
	struct sim_opts o = { .size = 0, .scale = 1.0, .depth = 0, .wcache = -1, .aging_ms = 0, .file = NULL };
	int rc = comma ? opts_parse(comma + 1, sim_opt, &o) : 0;
	uint64_t size = o.size ? o.size : SIM_DEFAULT_SIZE;
	if (!rc && o.capacity && model == SIM_HDD && size > o.capacity)
		rc = err_set(-EINVAL, "sim: size %llu exceeds capacity %llu (the disk holds the device)",
			     (unsigned long long)size, (unsigned long long)o.capacity);
	if (rc) {
		free(o.file);
		return rc;
	}
	struct sim_dev *s = calloc(1, sizeof(*s));
	if (!s) {
		free(o.file);
		return err_set(-ENOMEM, "out of memory");
	}
	if (o.file) {
		rc = dev_store_create_file(o.file, size, &s->store);
		free(o.file);
	} else {
		rc = dev_store_create(size, &s->store);
	}
	if (rc) {
		free(s);
		return rc;
	}
	s->model = model;
	s->scale = o.scale;
	/* 2009 SATA disks shipped with the write cache on; the X25-M keeps no
	 * user data in DRAM (docs/devices.md). */
	s->wcache = o.wcache >= 0 ? o.wcache : model == SIM_HDD;
	uint64_t cap = o.capacity ? o.capacity / DEV_SECTOR_SIZE : HDD_CAPACITY_SECTORS;
	hdd_geom_init(&s->geom, cap > size / DEV_SECTOR_SIZE ? cap : size / DEV_SECTOR_SIZE);
	s->aging_ns = o.aging_ms ? o.aging_ms * NS_PER_MS : HDD_AGING_NS;
	s->nservers = model == SIM_SSD ? SSD_CHANNELS : 1;
	s->cache_bytes = model == SIM_HDD ? HDD_CACHE_BYTES : SSD_CACHE_BYTES;
	s->live_seg = -1;
	list_init(&s->arrivals);
	list_init(&s->mediaq);
	list_init(&s->inservice);
	pthread_mutex_init(&s->lock, NULL);
	clock_cond_init(&s->cond);
	unsigned depth = model == SIM_HDD ? HDD_DEPTH : model == SIM_SSD ? SSD_DEPTH : 1;
	struct dev_geometry g = {
		.size_bytes = size,
		.rotational = model == SIM_HDD,
		.queue_depth = o.depth ? (unsigned)o.depth : depth,
		.max_hw_sectors = SIM_MAX_HW_SECTORS,
		.logical_block_size = 512,
		.has_write_cache = s->wcache,
	};
	rc = dev_init(&s->dev, &sim_ops, &g);
	if (rc)
		goto fail;
	s->t0_real = clock_now_ns();
	rc = pthread_create(&s->thread, NULL, sim_thread, s);
	if (rc) {
		dev_fini(&s->dev);
		rc = err_set(-rc, "sim: cannot start the device thread");
		goto fail;
	}
	*out = &s->dev;
	return 0;
fail:
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	dev_store_destroy(s->store);
	free(s);
	return rc;
}
