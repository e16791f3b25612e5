/* sim:hdd|ssd|ssd-nq[,size=..][,scale=..][,depth=..][,wcache=0|1][,file=PATH]
 *
 * Modelled devices. Data lives in a sparse store (RAM or file=); timing comes
 * from a discrete-event model run by one device thread per device, which
 * sleeps on the real monotonic clock until each modelled completion time
 * (model time x scale), then moves the data and calls dev_complete(). The
 * model and its constants are documented in docs/devices.md.
 *
 * Locking: sim->lock protects every field below "protected by lock"; it is
 * dropped around dev_complete() (done() may submit again).
 */
#include "dev/dev_impl.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/list.h"
#include "util/opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum sim_model { SIM_HDD, SIM_SSD, SIM_SSD_NQ };

/* ---- model constants (see docs/devices.md) ---- */
#define HDD_RPM 7200u
#define HDD_REV_NS (60ull * NS_PER_SEC / HDD_RPM)   /* 8.33 ms */
#define HDD_SPT 1600u                               /* sectors per track: ~98 MB/s */
#define HDD_HEADS 4u
#define HDD_SPC (HDD_SPT * HDD_HEADS)               /* sectors per cylinder */
#define HDD_SEEK_MIN_NS 800000.0                    /* a + ... for d >= 1 */
#define HDD_SEEK_SQRT_NS 11500000.0                 /* b * sqrt(d/ncyl) */
#define HDD_SEEK_LIN_NS 4700000.0                   /* c * (d/ncyl) */
#define HDD_CMD_NS (50 * NS_PER_US)                 /* controller overhead per command */
#define HDD_BUS_BPS 300000000.0                     /* SATA 3 Gb/s */
#define HDD_CACHE_BYTES (16ull << 20)
#define HDD_FLUSH_NS (100 * NS_PER_US)
#define HDD_AGING_NS (500 * NS_PER_MS)
#define HDD_SPTF_WINDOW 64                          /* queued jobs examined per pick */
#define HDD_DEPTH 31u

#define SSD_LAT_NS (100 * NS_PER_US)
#define SSD_LINK_BPS 250000000.0
#define SSD_CHANNELS 4
#define SSD_DEPTH 32u
#define SSD_FLUSH_NS (50 * NS_PER_US)
#define SSD_CACHE_BYTES (32ull << 20)

#define SSDNQ_WRITE_NS NS_PER_MS                    /* per started 128 KiB of a write */
#define SSDNQ_WRITE_UNIT (128u << 10)

#define SIM_MAX_HW_SECTORS 1024u                    /* 512 KiB */
#define SIM_DEFAULT_SIZE (64ull << 30)
#define SIM_MAX_DEPTH 256u
#define SIM_MAX_SERVERS 4

struct sim_job {
	struct list_node node;  /* arrivals, mediaq or inservice */
	struct dev_io *io;      /* NULL for a destage */
	enum dev_op op;
	unsigned flags;
	uint64_t sector;
	uint32_t nr;
	uint64_t arrive_ns;     /* model time */
	uint64_t start_ns, end_ns;
	int server;             /* index while on a server, -1 otherwise */
	bool cached;            /* host write completing from the write cache */
	uint64_t seek_ns, rot_ns, xfer_ns;
};

enum barrier_state { BAR_NONE, BAR_QUIET, BAR_DRAIN, BAR_FLUSHING };

struct sim_dev {
	struct dev dev; /* first */
	enum sim_model model;
	double scale;
	bool wcache;
	uint64_t t0_real;       /* real time of model time 0 */
	uint64_t ncyl;
	unsigned nservers;
	uint64_t cache_bytes;
	struct dev_store *store;
	pthread_t thread;
	pthread_cond_t cond;    /* new arrival, or stop */

	/* Protected by lock. */
	pthread_mutex_t lock;
	bool stopping;
	struct list_node arrivals;  /* host jobs, FIFO, not yet admitted */
	struct list_node mediaq;    /* jobs waiting for a server, arrival order */
	struct list_node inservice; /* jobs with an end time, sorted by end_ns */
	struct sim_job *barrier;    /* FLUSH or PREFLUSH write being handled */
	enum barrier_state bar_state;
	bool srv_busy[SIM_MAX_SERVERS];
	uint64_t srv_free_ns[SIM_MAX_SERVERS];
	unsigned host_media;        /* host jobs on mediaq or on a server */
	unsigned host_cached;       /* host writes in bus transfer */
	unsigned destage_pending;   /* destage jobs on mediaq or on a server */
	uint64_t cache_used;
	uint64_t bus_free_ns;       /* hdd bus / ssd link */
	uint64_t head_cyl;
	uint64_t ra_next;           /* sector after the last media read (UINT64_MAX: none) */
	uint64_t ra_end_ns;
	struct dev_sim_stats st;
};

static uint64_t model_now(const struct sim_dev *s)
{
	uint64_t r = clock_now_ns();
	if (r <= s->t0_real)
		return 0;
	return (uint64_t)((double)(r - s->t0_real) / s->scale);
}

static uint64_t real_of(const struct sim_dev *s, uint64_t model_ns)
{
	return s->t0_real + (uint64_t)((double)model_ns * s->scale);
}

static uint64_t xfer_ns(uint64_t bytes, double bps)
{
	return (uint64_t)((double)bytes * 1e9 / bps);
}

/* ---- hdd geometry ---- */

static uint64_t hdd_seek_ns(const struct sim_dev *s, uint64_t dist)
{
	if (dist == 0)
		return 0;
	double x = (double)dist / (double)s->ncyl;
	if (x > 1)
		x = 1;
	return (uint64_t)(HDD_SEEK_MIN_NS + HDD_SEEK_SQRT_NS * sqrt(x) + HDD_SEEK_LIN_NS * x);
}

/* Service components of job j on the actuator starting at `start`. Pure: does
 * not move the head. */
static void hdd_cost(const struct sim_dev *s, const struct sim_job *j, uint64_t start, uint64_t *seek,
		     uint64_t *rot, uint64_t *xfer)
{
	uint64_t full = (uint64_t)j->nr * HDD_REV_NS / HDD_SPT;
	if (j->op == DEV_OP_DISCARD) {
		*seek = *rot = *xfer = 0;
		return;
	}
	if (j->op == DEV_OP_READ && j->sector == s->ra_next) {
		/* Read-ahead: the drive kept reading after the previous read, the
		 * sectors that passed under the head since are in its buffer. */
		uint64_t ahead = start + HDD_CMD_NS > s->ra_end_ns ? start + HDD_CMD_NS - s->ra_end_ns : 0;
		*seek = *rot = 0;
		*xfer = full > ahead ? full - ahead : 0;
		return;
	}
	uint64_t cyl = j->sector / HDD_SPC;
	*seek = hdd_seek_ns(s, cyl > s->head_cyl ? cyl - s->head_cyl : s->head_cyl - cyl);
	uint64_t arrive = start + HDD_CMD_NS + *seek;
	uint64_t angle_now = arrive % HDD_REV_NS;
	uint64_t target = (j->sector % HDD_SPT) * HDD_REV_NS / HDD_SPT;
	*rot = target >= angle_now ? target - angle_now : target + HDD_REV_NS - angle_now;
	*xfer = full;
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

static void queue_destage(struct sim_dev *s, uint64_t sector, uint32_t nr, uint64_t now)
{
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
		j->xfer_ns = xfer_ns(bytes, bps);
		j->end_ns = start + (s->model == SIM_HDD ? HDD_CMD_NS : 0) + j->xfer_ns;
		s->bus_free_ns = j->end_ns;
		s->cache_used += bytes;
		s->host_cached++;
		inservice_add(s, j);
		return;
	}
	list_add_tail(&s->mediaq, &j->node);
	s->host_media++;
}

/* Pick the next job from mediaq for a server free since free_ns. */
static struct sim_job *pick(struct sim_dev *s, uint64_t now)
{
	struct sim_job *first = list_entry(s->mediaq.next, struct sim_job, node);
	if (s->model != SIM_HDD)
		return first;
	/* Aging: nothing waits longer than HDD_AGING_NS. */
	if (now > first->arrive_ns + HDD_AGING_NS)
		return first;
	struct sim_job *best = NULL;
	uint64_t best_pos = UINT64_MAX;
	int n = 0;
	struct list_node *pos;
	list_for_each(pos, &s->mediaq) {
		if (n++ == HDD_SPTF_WINDOW)
			break;
		struct sim_job *j = list_entry(pos, struct sim_job, node);
		uint64_t start = s->srv_free_ns[0] > j->arrive_ns ? s->srv_free_ns[0] : j->arrive_ns;
		uint64_t seek, rot, xf;
		hdd_cost(s, j, start, &seek, &rot, &xf);
		uint64_t p = (start - s->srv_free_ns[0]) + seek + rot;
		if (p < best_pos) {
			best_pos = p;
			best = j;
		}
	}
	return best;
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
	case SIM_HDD:
		hdd_cost(s, j, start, &j->seek_ns, &j->rot_ns, &j->xfer_ns);
		end = start + HDD_CMD_NS + j->seek_ns + j->rot_ns + j->xfer_ns;
		if (j->op != DEV_OP_DISCARD) {
			s->head_cyl = (j->sector + j->nr - 1) / HDD_SPC;
			s->ra_next = j->op == DEV_OP_READ ? j->sector + j->nr : UINT64_MAX;
			s->ra_end_ns = end;
		}
		break;
	case SIM_SSD: {
		/* Channel latency, then the shared link. */
		uint64_t ready = start + SSD_LAT_NS;
		uint64_t link = ready > s->bus_free_ns ? ready : s->bus_free_ns;
		j->xfer_ns = j->op == DEV_OP_DISCARD ? 0 : xfer_ns(bytes, SSD_LINK_BPS);
		end = link + j->xfer_ns;
		if (j->xfer_ns)
			s->bus_free_ns = end;
		j->rot_ns = link - ready; /* waiting for the link */
		break;
	}
	case SIM_SSD_NQ:
	default:
		if (j->op == DEV_OP_WRITE) {
			uint64_t units = (bytes + SSDNQ_WRITE_UNIT - 1) / SSDNQ_WRITE_UNIT;
			j->xfer_ns = xfer_ns(bytes, SSD_LINK_BPS);
			end = start + units * SSDNQ_WRITE_NS + j->xfer_ns;
		} else if (j->op == DEV_OP_READ) {
			j->xfer_ns = xfer_ns(bytes, SSD_LINK_BPS);
			end = start + SSD_LAT_NS + j->xfer_ns;
		} else {
			end = start + SSD_LAT_NS;
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
		if (!list_empty(&s->inservice))
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

uint64_t dev_sim_modelled_ns(const struct dev *d)
{
	struct dev_sim_stats st;
	if (dev_sim_stats(d, &st))
		return 0;
	return st.modelled_ns;
}

static const struct dev_ops sim_ops = {
	.kind = "sim",
	.submit = sim_submit,
	.close = sim_close,
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
	double scale;
	uint64_t depth; /* 0: model default */
	bool wcache;
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
	} else if (strcmp(name, "wcache") == 0) {
		if (opts_parse_bool(value, &o->wcache))
			return err_set(-EINVAL, "sim: bad wcache '%s' (use 0 or 1)", value);
	} else if (strcmp(name, "file") == 0) {
		if (!*value)
			return err_set(-EINVAL, "sim: empty file=");
		free(o->file);
		o->file = strdup(value);
		if (!o->file)
			return -ENOMEM;
	} else {
		return err_set(-EINVAL, "sim: unknown option '%s' (size, scale, depth, wcache, file)", name);
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
	struct sim_opts o = { .size = 0, .scale = 1.0, .depth = 0, .wcache = false, .file = NULL };
	int rc = comma ? opts_parse(comma + 1, sim_opt, &o) : 0;
	if (rc) {
		free(o.file);
		return rc;
	}
	struct sim_dev *s = calloc(1, sizeof(*s));
	if (!s) {
		free(o.file);
		return err_set(-ENOMEM, "out of memory");
	}
	uint64_t size = o.size ? o.size : SIM_DEFAULT_SIZE;
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
	s->wcache = o.wcache;
	s->ncyl = (size / DEV_SECTOR_SIZE + HDD_SPC - 1) / HDD_SPC;
	s->nservers = model == SIM_SSD ? SSD_CHANNELS : 1;
	s->cache_bytes = model == SIM_HDD ? HDD_CACHE_BYTES : SSD_CACHE_BYTES;
	s->ra_next = UINT64_MAX;
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
		.has_write_cache = o.wcache,
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
