/* Private to the sim: device (dev_sim.c: event engine, barriers, open;
 * dev_sim_hdd.c: the disk's geometry, positioning and read segments). The
 * model and the source of each constant are in docs/devices.md.
 *
 * Locking: sim->lock protects every field below "protected by lock"; it is
 * dropped around dev_complete() (done() may submit again). Every function in
 * dev_sim_hdd.c is called with the lock held.
 */
#ifndef NOSTALL_DEV_SIM_IMPL_H
#define NOSTALL_DEV_SIM_IMPL_H

#include "dev/dev_impl.h"
#include "util/clock.h"
#include "util/list.h"

#include <stdbool.h>
#include <stdint.h>

enum sim_model { SIM_HDD, SIM_SSD, SIM_SSD_NQ };

/* ---- hdd: a 2009 500 GB 7200 rpm SATA drive with NCQ ---- */
#define HDD_RPM 7200u
#define HDD_REV_NS (60ull * NS_PER_SEC / HDD_RPM)   /* 8.33 ms */
#define HDD_CAPACITY_SECTORS 976773168ull           /* 500 GB (IDEMA LBA count) */
#define HDD_HEADS 2u                                /* one platter, 500 GB */
#define HDD_ZONES 16u                               /* equal LBA ranges */
#define HDD_OUTER_BPS 125000000.0                   /* zone 0 media rate */
#define HDD_INNER_BPS 62500000.0                    /* last zone: half */
#define HDD_SEEK_MIN_NS 800000.0                    /* a + ... for d >= 1 */
#define HDD_SEEK_SQRT_NS 11500000.0                 /* b * sqrt(d/ncyl) */
#define HDD_SEEK_LIN_NS 4700000.0                   /* c * (d/ncyl) */
#define HDD_CMD_NS (50 * NS_PER_US)                 /* command decode, overlapped */
#define HDD_BUS_BPS 300000000.0                     /* SATA 3 Gb/s */
#define HDD_CACHE_BYTES (16ull << 20)               /* write cache */
#define HDD_SEGS 16u                                /* read segments */
#define HDD_SEG_RA_SECTORS 512u                     /* read-ahead per segment: 256 KiB */
#define HDD_FLUSH_NS (100 * NS_PER_US)
#define HDD_AGING_NS (500 * NS_PER_MS)              /* firmware starvation limit */
#define HDD_SPTF_WINDOW 64                          /* queued jobs examined per pick */
#define HDD_DEPTH 31u

#define SIM_MAX_SERVERS 10

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

struct hdd_zone {
	uint64_t first_sector, first_cyl;
	uint32_t spt;           /* sectors per track */
};

/* A read segment of the drive's buffer: sectors [start, pos) are held. The
 * live segment (at most one) is the one the head is still reading ahead
 * into: pos grows with time from (pos, t) at the media rate, up to
 * consumed + HDD_SEG_RA_SECTORS. Others are frozen. */
struct hdd_seg {
	uint64_t start, pos, consumed;
	uint64_t t;             /* model time at which pos was exact */
	uint64_t used;          /* LRU stamp; 0 = empty */
};

struct hdd_geom {
	uint64_t capacity;      /* sectors */
	uint64_t zone_sectors;
	uint64_t ncyl;
	struct hdd_zone zone[HDD_ZONES];
};

/* How a job would be served if started on a server free since `free_ns`
 * (pure; dev_sim_hdd.c). */
enum hdd_path { HDD_MEDIA, HDD_SEG_HIT, HDD_STREAM };
struct hdd_plan {
	enum hdd_path path;
	uint64_t ready;         /* command decoded and server free */
	uint64_t seek, rot, xfer;
};

enum barrier_state { BAR_NONE, BAR_QUIET, BAR_DRAIN, BAR_FLUSHING };

struct sim_dev {
	struct dev dev; /* first */
	enum sim_model model;
	double scale;
	bool wcache;
	unsigned nservers;
	uint64_t cache_bytes;
	uint64_t aging_ns;
	struct hdd_geom geom;
	struct dev_store *store;
	pthread_t thread;
	pthread_cond_t cond;    /* new arrival, thaw, or stop */

	/* Protected by lock. */
	pthread_mutex_t lock;
	uint64_t t0_real;       /* real time of model time 0 */
	bool frozen;            /* dev_sim_freeze: model time stands at frozen_ns */
	uint64_t frozen_ns;
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
	uint64_t bus_free_ns;       /* hdd bus / ssd controller and link */
	uint64_t engine_free_ns;    /* ssd program engine */
	uint64_t head_cyl;
	struct hdd_seg seg[HDD_SEGS];
	int live_seg;               /* index, or -1 */
	uint64_t seg_clock;         /* LRU stamps */
	struct dev_sim_stats st;
};

uint64_t sim_xfer_ns(uint64_t bytes, double bps);

/* dev_sim_hdd.c */
void hdd_geom_init(struct hdd_geom *g, uint64_t capacity_sectors);
uint64_t hdd_seek_ns(const struct hdd_geom *g, uint64_t dist_cyl);
uint64_t hdd_cyl_of(const struct hdd_geom *g, uint64_t sector);
double hdd_media_bps(const struct hdd_geom *g, uint64_t sector);
void hdd_plan(const struct sim_dev *s, const struct sim_job *j, uint64_t free_ns, struct hdd_plan *p);
/* Commit plan p for j (head position, read segments). */
void hdd_apply(struct sim_dev *s, const struct sim_job *j, const struct hdd_plan *p, uint64_t end);
/* Drop read segments that overlap a write being admitted. */
void hdd_segs_invalidate(struct sim_dev *s, uint64_t sector, uint32_t nr);

#endif
