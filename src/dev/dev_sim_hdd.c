/* sim:hdd mechanics: fixed geometry (capacity, zones, cylinders), seek and
 * rotational positioning, the read segments of the drive's buffer. Pure
 * planning (hdd_plan) is kept apart from committing a plan (hdd_apply) so
 * that the SPTF pick can cost every queued job without moving the head.
 * Constants and their sources: docs/devices.md. Called with sim->lock held.
 */
#include "dev/dev_sim_impl.h"

#include <math.h>

void hdd_geom_init(struct hdd_geom *g, uint64_t capacity)
{
	/* Sectors per track follow the media rate: rate = spt * 512 / rev. */
	double rev_s = (double)HDD_REV_NS / 1e9;
	double spt_outer = HDD_OUTER_BPS * rev_s / DEV_SECTOR_SIZE;
	double spt_inner = HDD_INNER_BPS * rev_s / DEV_SECTOR_SIZE;
	g->capacity = capacity;
	g->zone_sectors = (capacity + HDD_ZONES - 1) / HDD_ZONES;
	uint64_t cyl = 0;
	for (unsigned k = 0; k < HDD_ZONES; k++) {
		struct hdd_zone *z = &g->zone[k];
		z->spt = (uint32_t)llround(spt_outer - (spt_outer - spt_inner) * k / (HDD_ZONES - 1));
		z->first_sector = (uint64_t)k * g->zone_sectors;
		z->first_cyl = cyl;
		uint64_t n = z->first_sector < capacity ? capacity - z->first_sector : 0;
		if (n > g->zone_sectors)
			n = g->zone_sectors;
		uint64_t spc = (uint64_t)z->spt * HDD_HEADS;
		cyl += (n + spc - 1) / spc;
	}
	g->ncyl = cyl ? cyl : 1;
}

static const struct hdd_zone *zone_of(const struct hdd_geom *g, uint64_t sector)
{
	uint64_t k = sector / g->zone_sectors;
	return &g->zone[k < HDD_ZONES ? k : HDD_ZONES - 1];
}

uint64_t hdd_cyl_of(const struct hdd_geom *g, uint64_t sector)
{
	const struct hdd_zone *z = zone_of(g, sector);
	return z->first_cyl + (sector - z->first_sector) / ((uint64_t)z->spt * HDD_HEADS);
}

double hdd_media_bps(const struct hdd_geom *g, uint64_t sector)
{
	return (double)zone_of(g, sector)->spt * DEV_SECTOR_SIZE * 1e9 / (double)HDD_REV_NS;
}

/* The platter angle (as a time offset within a revolution) at which sector
 * passes under the head. */
static uint64_t angle_of(const struct hdd_geom *g, uint64_t sector)
{
	const struct hdd_zone *z = zone_of(g, sector);
	uint64_t in_track = (sector - z->first_sector) % z->spt;
	return in_track * HDD_REV_NS / z->spt;
}

static uint64_t media_ns(const struct hdd_geom *g, uint64_t sector, uint64_t nr)
{
	return nr * HDD_REV_NS / zone_of(g, sector)->spt;
}

/* Time from `at` until `sector` comes under the head. */
static uint64_t rot_wait(const struct hdd_geom *g, uint64_t sector, uint64_t at)
{
	uint64_t now = at % HDD_REV_NS, target = angle_of(g, sector);
	return target >= now ? target - now : target + HDD_REV_NS - now;
}

uint64_t hdd_seek_ns(const struct hdd_geom *g, uint64_t dist)
{
	if (dist == 0)
		return 0;
	double x = (double)dist / (double)g->ncyl;
	if (x > 1)
		x = 1;
	return (uint64_t)(HDD_SEEK_MIN_NS + HDD_SEEK_SQRT_NS * sqrt(x) + HDD_SEEK_LIN_NS * x);
}

/* Where a segment's data ends at model time t (read-ahead of the live one). */
static uint64_t seg_pos(const struct sim_dev *s, int i, uint64_t t)
{
	const struct hdd_seg *sg = &s->seg[i];
	if (i != s->live_seg || t <= sg->t)
		return sg->pos;
	uint64_t cap = sg->consumed + HDD_SEG_RA_SECTORS;
	if (sg->pos >= cap)
		return sg->pos;
	uint64_t dt = t - sg->t;
	if (dt > NS_PER_SEC)
		return cap; /* long idle: full (and no overflow below) */
	uint64_t p = sg->pos + dt * zone_of(&s->geom, sg->pos)->spt / HDD_REV_NS;
	p = p < cap ? p : cap;
	return p < s->geom.capacity ? p : s->geom.capacity;
}

static int seg_find(const struct sim_dev *s, const struct sim_job *j, uint64_t t)
{
	for (unsigned i = 0; i < HDD_SEGS; i++) {
		const struct hdd_seg *sg = &s->seg[i];
		if (sg->used && (int)i != s->live_seg && j->sector >= sg->start &&
		    j->sector + j->nr <= seg_pos(s, (int)i, t))
			return (int)i;
	}
	return -1;
}

void hdd_plan(const struct sim_dev *s, const struct sim_job *j, uint64_t free_ns, struct hdd_plan *p)
{
	const struct hdd_geom *g = &s->geom;
	/* The command is decoded while the actuator finishes earlier work
	 * (NCQ); destages are the drive's own and need no decoding. */
	uint64_t decoded = j->arrive_ns + (j->io ? HDD_CMD_NS : 0);
	uint64_t bytes = (uint64_t)j->nr << DEV_SECTOR_SHIFT;
	uint64_t end = j->sector + j->nr;
	p->ready = free_ns > decoded ? free_ns : decoded;
	p->path = HDD_MEDIA;
	p->seek = p->rot = p->xfer = 0;
	if (j->op == DEV_OP_DISCARD)
		return;
	int live = s->live_seg;
	uint64_t head = s->head_cyl;
	if (live >= 0) {
		const struct hdd_seg *sg = &s->seg[live];
		uint64_t pos = seg_pos(s, live, p->ready);
		head = hdd_cyl_of(g, pos > sg->start ? pos - 1 : sg->start);
		if (j->op == DEV_OP_READ && j->sector >= sg->start && j->sector <= pos) {
			if (end <= pos) {
				p->path = HDD_SEG_HIT;
				p->xfer = sim_xfer_ns(bytes, HDD_BUS_BPS);
				return;
			}
			/* Partly buffered: the rest is read as the head gets
			 * there; at once while read-ahead is still running. */
			p->path = HDD_STREAM;
			if (pos >= sg->consumed + HDD_SEG_RA_SECTORS)
				p->rot = rot_wait(g, pos, p->ready);
			p->xfer = media_ns(g, pos, end - pos);
			return;
		}
	}
	if (j->op == DEV_OP_READ && seg_find(s, j, p->ready) >= 0) {
		p->path = HDD_SEG_HIT;
		p->xfer = sim_xfer_ns(bytes, HDD_BUS_BPS);
		return;
	}
	uint64_t cyl = hdd_cyl_of(g, j->sector);
	p->seek = hdd_seek_ns(g, cyl > head ? cyl - head : head - cyl);
	p->rot = rot_wait(g, j->sector, p->ready + p->seek);
	p->xfer = media_ns(g, j->sector, j->nr);
}

static void seg_freeze_live(struct sim_dev *s, uint64_t t)
{
	if (s->live_seg < 0)
		return;
	struct hdd_seg *sg = &s->seg[s->live_seg];
	sg->pos = seg_pos(s, s->live_seg, t);
	sg->t = t;
	s->head_cyl = hdd_cyl_of(&s->geom, sg->pos > sg->start ? sg->pos - 1 : sg->start);
	s->live_seg = -1;
}

void hdd_segs_invalidate(struct sim_dev *s, uint64_t sector, uint32_t nr)
{
	for (unsigned i = 0; i < HDD_SEGS; i++) {
		struct hdd_seg *sg = &s->seg[i];
		if (!sg->used || sector >= sg->pos + HDD_SEG_RA_SECTORS || sector + nr <= sg->start)
			continue;
		if ((int)i == s->live_seg)
			seg_freeze_live(s, sg->t);
		sg->used = 0;
	}
}

void hdd_apply(struct sim_dev *s, const struct sim_job *j, const struct hdd_plan *p, uint64_t end_ns)
{
	uint64_t end = j->sector + j->nr;
	if (j->op == DEV_OP_DISCARD)
		return;
	if (p->path == HDD_SEG_HIT) {
		/* From the buffer: the head goes on with whatever it does. */
		int i = s->live_seg;
		if (i < 0 || j->sector < s->seg[i].start || end > seg_pos(s, i, p->ready))
			i = seg_find(s, j, p->ready);
		if (i < 0)
			return;
		struct hdd_seg *sg = &s->seg[i];
		if (i == s->live_seg) {
			sg->pos = seg_pos(s, i, p->ready);
			sg->t = p->ready;
		}
		if (end > sg->consumed)
			sg->consumed = end;
		sg->used = ++s->seg_clock;
		return;
	}
	if (p->path == HDD_STREAM) {
		struct hdd_seg *sg = &s->seg[s->live_seg];
		sg->pos = end;
		sg->t = end_ns;
		sg->consumed = end;
		sg->used = ++s->seg_clock;
		return;
	}
	seg_freeze_live(s, p->ready);
	s->head_cyl = hdd_cyl_of(&s->geom, end - 1);
	if (j->op == DEV_OP_WRITE) {
		hdd_segs_invalidate(s, j->sector, j->nr);
		return;
	}
	/* A media read: fill the least recently used segment and read ahead. */
	unsigned v = 0;
	for (unsigned i = 1; i < HDD_SEGS; i++)
		if (s->seg[i].used < s->seg[v].used)
			v = i;
	s->seg[v] = (struct hdd_seg){ .start = j->sector, .pos = end, .consumed = end, .t = end_ns,
				      .used = ++s->seg_clock };
	s->live_seg = (int)v;
}
