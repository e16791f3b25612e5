/* crashtest's crash states (crash.h, docs/crashtest.md "Crash states").
 *
 * The recording (dm-log-writes format, entries in completion order) is read
 * into memory. A FLUSH entry (an empty flush or a write with PREFLUSH),
 * logged when the flush completed, opens a flush epoch; it makes durable the
 * entries that had completed when it was *issued* (entries [0, issued), which
 * the log records; dm-log-writes' rule): a write that completed between the
 * flush's issue and its completion was in flight and stays optional. Epoch k
 * thus has a durable prefix D_k (the largest issue point of the flushes
 * completed by then) and in-flight writes: those from D_k on. A crash at
 * point c (entries [0, c) completed) in epoch k leaves on disk every write
 * before D_k, every FUA write since (durable at completion), and any subset
 * of the other writes since (a volatile cache may lose or reorder them;
 * applied in log order, as a cache keeps the latest data of a sector), or of
 * one of them only some 512-byte sectors (a torn write). Discards are
 * applied as zeroes (they carry no data).
 *
 * States: every epoch's end (the state each completed flush left, all
 * in-flight writes in) always, beyond the budget; the other crash points'
 * in-order prefixes up to half the budget (an even sample); then seeded
 * random subsets and torn writes, the rest of the budget; duplicates
 * are dropped (same epoch, point and surviving writes). Crash points sit
 * just before a write or flush, after the marks that follow the previous
 * one, so the oracle knows the most it can about the disk it gets.
 */
#include "crash.h"

#include "dev/dev.h"
#include "util/array.h"
#include "util/err.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#ifdef NOSTALL_TEST_HOOKS
bool crash_test_flush_covers_inflight;
#endif

struct lent {
	uint64_t sector;
	uint32_t nsect;
	uint32_t flags;
	size_t data;     /* offset in l->data (writes) */
	uint32_t epoch;  /* the epoch its position is in */
	uint64_t issued; /* a FLUSH entry: it covers entries [0, issued) */
};

struct epoch {
	uint64_t start;   /* its flush entry (0 for the first) */
	uint64_t end;     /* the next epoch's start, or the entry count */
	uint64_t durable; /* entries [0, durable) are durable in this epoch */
	uint64_t *w;      /* its in-flight writes: write entries in [durable, end), in order */
	size_t nw;
	size_t noptional; /* those that are not FUA */
};

struct lmark {
	size_t op;
	char kind;
	uint64_t index;
};

struct crash_log {
	struct lent *e;
	size_t n, ecap;
	uint8_t *data;
	size_t dlen, dcap;
	struct lmark *marks;
	size_t nmarks, mcap;
	uint64_t first_point; /* no crash state before this (the base image) */
	struct epoch *ep;
	size_t nep, epcap;
	uint8_t *img;         /* entries [0, applied) applied */
	uint64_t applied;
};

static int log_add_data(struct crash_log *l, const void *p, size_t len, size_t *off)
{
	if (l->dlen + len > l->dcap) {
		size_t cap = l->dcap ? l->dcap : (16u << 20);
		while (cap < l->dlen + len)
			cap *= 2;
		uint8_t *d = realloc(l->data, cap);
		if (!d)
			return -ENOMEM;
		l->data = d;
		l->dcap = cap;
	}
	memcpy(l->data + l->dlen, p, len);
	*off = l->dlen;
	l->dlen += len;
	return 0;
}

static int log_mark(struct crash_log *l, const struct dev_log_entry *e)
{
	char text[32];
	size_t n = e->data_len < sizeof text - 1 ? (size_t)e->data_len : sizeof text - 1;
	memcpy(text, e->data, n);
	text[n] = '\0';
	if (!strcmp(text, "base")) {
		l->first_point = e->index + 1;
		return 0;
	}
	if ((text[0] != 'o' && text[0] != 'd') || !text[1])
		return 0;
	if (array_grow(&l->marks, &l->mcap, l->nmarks, sizeof *l->marks, 256))
		return -ENOMEM;
	l->marks[l->nmarks++] = (struct lmark){ strtoull(text + 1, NULL, 10), text[0], e->index };
	return 0;
}

/* Entries and epochs. Marks are kept apart (they are not disk state). */
static int log_read(struct crash_log *l, const char *path)
{
	struct dev_log_reader *rd;
	int rc = dev_log_reader_open(path, &rd);
	if (rc)
		return rc;
	struct dev_log_entry e;
	while ((rc = dev_log_reader_next(rd, &e)) == 1) {
		if (array_grow(&l->e, &l->ecap, l->n, sizeof *l->e, 1024)) {
			rc = -ENOMEM;
			break;
		}
		struct lent *x = &l->e[l->n++];
		*x = (struct lent){ .sector = e.sector, .nsect = (uint32_t)e.nr_sectors, .flags = (uint32_t)e.flags,
				    .issued = e.issued };
		int erc = 0;
		if (e.flags & DEV_LOG_MARK) {
			x->nsect = 0;
			erc = log_mark(l, &e);
		} else if (e.nr_sectors && !(e.flags & DEV_LOG_DISCARD)) {
			erc = log_add_data(l, e.data, (size_t)e.data_len, &x->data);
		}
		if (erc) {
			rc = erc;
			break;
		}
	}
	dev_log_reader_close(rd);
	return rc < 0 ? rc : 0;
}

static bool is_write(const struct lent *x)
{
	return x->nsect && !(x->flags & DEV_LOG_MARK);
}

/* What a flush entry covers: [0, issued); the test hook restores the old,
 * too generous rule (everything logged before its completion). */
static uint64_t flush_covers(const struct lent *x, uint64_t i)
{
#ifdef NOSTALL_TEST_HOOKS
	if (crash_test_flush_covers_inflight)
		return i;
#endif
	return x->issued < i ? x->issued : i;
}

static int log_epochs(struct crash_log *l)
{
	uint64_t durable = 0;
	for (size_t i = 0; i <= l->n; i++) {
		bool open = i == 0 || (i < l->n && (l->e[i].flags & DEV_LOG_FLUSH) && !(l->e[i].flags & DEV_LOG_MARK));
		if (i == l->n || open) {
			if (l->nep)
				l->ep[l->nep - 1].end = i;
			if (i == l->n)
				break;
			if (array_grow(&l->ep, &l->epcap, l->nep, sizeof *l->ep, 64))
				return -ENOMEM;
			if (i) {
				uint64_t c = flush_covers(&l->e[i], i);
				if (c > durable)
					durable = c;
			}
			l->ep[l->nep++] = (struct epoch){ .start = i, .durable = durable };
		}
		l->e[i].epoch = (uint32_t)(l->nep - 1);
	}
	/* each epoch's in-flight writes: from its durable prefix to its end
	 * (those before its flush were in flight when the flush was issued) */
	for (size_t k = 0; k < l->nep; k++) {
		struct epoch *ep = &l->ep[k];
		for (uint64_t i = ep->durable; i < ep->end; i++) {
			if (!is_write(&l->e[i]))
				continue;
			size_t cap = ep->nw;
			if (!(cap & (cap - 1)) || !cap) {
				uint64_t *w = realloc(ep->w, (cap ? 2 * cap : 8) * sizeof *w);
				if (!w)
					return -ENOMEM;
				ep->w = w;
			}
			ep->w[ep->nw++] = i;
			if (!(l->e[i].flags & DEV_LOG_FUA))
				ep->noptional++;
		}
	}
	return 0;
}

int crash_log_load(const char *path, struct crash_log **out)
{
	struct crash_log *l = calloc(1, sizeof *l);
	if (!l)
		return -ENOMEM;
	l->img = calloc(1, CRASH_IMAGE_BYTES);
	int rc = l->img ? log_read(l, path) : -ENOMEM;
	if (!rc)
		rc = log_epochs(l);
	if (rc) {
		crash_log_destroy(l);
		return rc;
	}
	*out = l;
	return 0;
}

void crash_log_destroy(struct crash_log *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nep; i++)
		free(l->ep[i].w);
	free(l->ep);
	free(l->e);
	free(l->data);
	free(l->marks);
	free(l->img);
	free(l);
}

uint64_t crash_log_entries(const struct crash_log *l)
{
	return l->n;
}

size_t crash_log_nmarks(const struct crash_log *l)
{
	return l->nmarks;
}

void crash_log_mark(const struct crash_log *l, size_t i, size_t *op, char *kind, uint64_t *index)
{
	*op = l->marks[i].op;
	*kind = l->marks[i].kind;
	*index = l->marks[i].index;
}

size_t crash_log_nepochs(const struct crash_log *l)
{
	return l->nep;
}

/* ------------------------------------------------------------ generation */

/* Crash points: just before each write or flush past the base, and the end. */
static bool is_point(const struct crash_log *l, uint64_t c)
{
	if (c < l->first_point || c == 0)
		return false;
	return c == l->n || !(l->e[c].flags & DEV_LOG_MARK);
}

/* The epoch a crash at point c is in: the one whose flush completed last. */
static uint32_t point_epoch(const struct crash_log *l, uint64_t c)
{
	return l->e[c - 1].epoch;
}

/* Writes of epoch k before point c. */
static size_t writes_before(const struct epoch *ep, uint64_t c)
{
	size_t n = 0;
	while (n < ep->nw && ep->w[n] < c)
		n++;
	return n;
}

struct gen {
	struct crash_log *l;
	struct crash_state *s;
	size_t n, cap;
	uint64_t *seen;   /* hash set (0 = empty) */
	size_t nseen;     /* power of two */
	size_t used;
	uint64_t rng;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull + (v >> 29);
}

/* The state's identity: epoch, point and which writes survive (whole or
 * torn). true if new (and recorded). */
static bool gen_new(struct gen *g, const struct crash_state *s)
{
	const struct epoch *ep = &g->l->ep[s->epoch];
	size_t nb = writes_before(ep, s->point);
	uint64_t h = mix(mix(0xcbf29ce484222325ull, s->epoch), s->point);
	for (size_t i = 0; i < nb; i++) {
		bool on = !s->sel || (s->sel[i / 64] >> (i % 64) & 1) || (g->l->e[ep->w[i]].flags & DEV_LOG_FUA);
		h = mix(h, on ? i + 1 : 0);
	}
	h = mix(mix(h, (uint64_t)s->torn), s->torn >= 0 ? s->torn_seed : 0);
	if (!h)
		h = 1;
	if (2 * (g->used + 1) > g->nseen) {
		size_t nn = g->nseen ? 2 * g->nseen : 1024;
		uint64_t *t = calloc(nn, sizeof *t);
		if (!t)
			return false;
		for (size_t i = 0; i < g->nseen; i++) {
			if (!g->seen[i])
				continue;
			size_t k = g->seen[i] & (nn - 1);
			while (t[k])
				k = (k + 1) & (nn - 1);
			t[k] = g->seen[i];
		}
		free(g->seen);
		g->seen = t;
		g->nseen = nn;
	}
	size_t k = h & (g->nseen - 1);
	while (g->seen[k]) {
		if (g->seen[k] == h)
			return false;
		k = (k + 1) & (g->nseen - 1);
	}
	g->seen[k] = h;
	g->used++;
	return true;
}

static int gen_push(struct gen *g, struct crash_state *s)
{
	if (!gen_new(g, s)) {
		free(s->sel);
		return 0;
	}
	if (array_grow(&g->s, &g->cap, g->n, sizeof *g->s, 256)) {
		free(s->sel);
		return -ENOMEM;
	}
	g->s[g->n++] = *s;
	return 0;
}

/* The end of an epoch: the point just before the next flush's entry, or
 * the log's end. */
static bool is_epoch_end(const struct crash_log *l, uint64_t c)
{
	return c == l->n || (l->e[c].flags & DEV_LOG_FLUSH);
}

/* Every epoch's end (the state each completed flush left, whatever the
 * budget), then want of the other points' prefixes, an even sample (*added:
 * how many). */
static int gen_prefixes(struct gen *g, unsigned want, size_t *added)
{
	struct crash_log *l = g->l;
	for (uint64_t c = 1; c <= l->n; c++) {
		if (!is_point(l, c) || !is_epoch_end(l, c))
			continue;
		struct crash_state s = { .epoch = point_epoch(l, c), .point = c, .torn = -1, .how = 'e' };
		int rc = gen_push(g, &s);
		if (rc)
			return rc;
	}
	size_t room = want, nother = 0;
	*added = 0;
	for (uint64_t c = 1; c <= l->n; c++)
		nother += is_point(l, c) && !is_epoch_end(l, c);
	if (!room || !nother)
		return 0;
	size_t step = nother > room ? (nother + room - 1) / room : 1;
	size_t k = 0;
	for (uint64_t c = 1; c <= l->n && room; c++) {
		if (!is_point(l, c) || is_epoch_end(l, c) || k++ % step)
			continue;
		struct crash_state s = { .epoch = point_epoch(l, c), .point = c, .torn = -1, .how = 'p' };
		size_t before = g->n;
		int rc = gen_push(g, &s);
		if (rc)
			return rc;
		room -= g->n > before;
		*added += g->n > before;
	}
	return 0;
}

/* A random point of epoch k with at least one optional write before it. */
static uint64_t pick_point(struct gen *g, const struct epoch *ep)
{
	const struct crash_log *l = g->l;
	if (crash_rnd(&g->rng) % 2)
		return ep->end;
	for (int t = 0; t < 8; t++) {
		uint64_t c = ep->w[crash_rnd(&g->rng) % ep->nw] + 1;
		if (c <= ep->start)
			c = ep->start + 1; /* in flight at its flush's issue */
		while (c < ep->end && !is_point(l, c))
			c++;
		if (c <= ep->end && is_point(l, c))
			return c;
	}
	return ep->end;
}

static int gen_random(struct gen *g, unsigned want)
{
	struct crash_log *l = g->l;
	uint64_t total = 0;
	for (size_t k = 0; k < l->nep; k++)
		if (l->ep[k].end > l->first_point)
			total += l->ep[k].noptional;
	if (!total)
		return 0;
	for (unsigned tries = 0; g->n < want && tries < 20 * want; tries++) {
		/* an epoch, weighted by its optional writes */
		uint64_t r = crash_rnd(&g->rng) % total;
		size_t k = 0;
		for (;; k++) {
			if (l->ep[k].end <= l->first_point)
				continue;
			if (r < l->ep[k].noptional)
				break;
			r -= l->ep[k].noptional;
		}
		const struct epoch *ep = &l->ep[k];
		uint64_t c = pick_point(g, ep);
		if (!is_point(l, c) || point_epoch(l, c) != k)
			continue;
		size_t nb = writes_before(ep, c);
		struct crash_state s = { .epoch = (uint32_t)k, .point = c, .torn = -1, .how = 's', .nsel = (uint32_t)nb };
		s.sel = calloc(nb / 64 + 1, sizeof *s.sel);
		if (!s.sel)
			return -ENOMEM;
		/* a survival rate per state: 1/2, 1/8 or 7/8 */
		unsigned rate = (unsigned[]){ 4, 1, 7 }[crash_rnd(&g->rng) % 3];
		for (size_t i = 0; i < nb; i++)
			if (crash_rnd(&g->rng) % 8 < rate)
				s.sel[i / 64] |= 1ull << (i % 64);
		if (crash_rnd(&g->rng) % 4 == 0) {
			/* a torn write: one multi-sector optional write, partly */
			size_t i = (size_t)(crash_rnd(&g->rng) % nb);
			const struct lent *x = &l->e[ep->w[i]];
			if (x->nsect > 1 && !(x->flags & (DEV_LOG_FUA | DEV_LOG_DISCARD))) {
				s.torn = (int64_t)ep->w[i];
				s.torn_seed = crash_rnd(&g->rng) | 1;
				s.sel[i / 64] |= 1ull << (i % 64);
				s.how = 't';
			}
		}
		int rc = gen_push(g, &s);
		if (rc)
			return rc;
	}
	return 0;
}

static int state_cmp(const void *a, const void *b)
{
	const struct crash_state *x = a, *y = b;
	if (x->epoch != y->epoch)
		return x->epoch < y->epoch ? -1 : 1;
	return x->point < y->point ? -1 : x->point > y->point;
}

int crash_states_make(struct crash_log *l, unsigned budget, uint64_t seed, struct crash_state **out, size_t *n)
{
	struct gen g = { .l = l, .rng = seed };
	/* the epoch ends beyond the budget; half of it for the other
	 * prefixes, the rest for the random subsets */
	size_t others = 0;
	int rc = gen_prefixes(&g, budget / 2, &others);
	if (!rc)
		rc = gen_random(&g, (unsigned)(g.n + budget - others));
	free(g.seen);
	if (rc) {
		crash_states_free(g.s, g.n);
		return rc;
	}
	qsort(g.s, g.n, sizeof *g.s, state_cmp);
	*out = g.s;
	*n = g.n;
	return 0;
}

void crash_states_free(struct crash_state *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free(s[i].sel);
	free(s);
}

/* ------------------------------------------------------------ building */

void crash_log_rewind(struct crash_log *l)
{
	memset(l->img, 0, CRASH_IMAGE_BYTES);
	l->applied = 0;
}

static void img_apply(struct crash_log *l, const struct lent *x)
{
	uint64_t off = x->sector * DEV_SECTOR_SIZE, len = (uint64_t)x->nsect * DEV_SECTOR_SIZE;
	if (off >= CRASH_IMAGE_BYTES)
		return;
	if (len > CRASH_IMAGE_BYTES - off)
		len = CRASH_IMAGE_BYTES - off;
	if (x->flags & DEV_LOG_DISCARD)
		memset(l->img + off, 0, (size_t)len);
	else if (is_write(x))
		memcpy(l->img + off, l->data + x->data, (size_t)len);
}

/* Which sectors of a torn write survive: at least one, never all. */
static bool torn_keeps(uint64_t seed, uint32_t nsect, uint32_t i)
{
	uint64_t s = seed;
	uint64_t first_kept = crash_rnd(&s) % nsect, dropped = crash_rnd(&s) % nsect;
	if (dropped == first_kept)
		dropped = (dropped + 1) % nsect;
	if (i == first_kept)
		return true;
	if (i == dropped)
		return false;
	s = seed ^ (0x9e3779b97f4a7c15ull * (i + 1));
	return crash_rnd(&s) & 1;
}

/* Zeroes, the data of a discard (mem:'s largest command). */
static uint8_t zero_chunk[1u << 20];

/* A discard as zeroes, clipped to the image as img_apply does. */
static int write_zeroes(struct dev *dev, uint64_t sector, uint64_t nsect)
{
	const uint64_t img_sect = CRASH_IMAGE_BYTES / DEV_SECTOR_SIZE, chunk = sizeof zero_chunk / DEV_SECTOR_SIZE;
	if (sector >= img_sect)
		return 0;
	if (nsect > img_sect - sector)
		nsect = img_sect - sector;
	for (uint64_t k = 0; k < nsect; k += chunk) {
		int rc = dev_rw_sync(dev, DEV_OP_WRITE, sector + k, (uint32_t)(nsect - k < chunk ? nsect - k : chunk),
				     zero_chunk, 0);
		if (rc)
			return rc;
	}
	return 0;
}

int crash_state_build(struct crash_log *l, const struct crash_state *s, struct dev *dev)
{
	if (s->epoch >= l->nep)
		return err_set(-EINVAL, "crashtest: state of epoch %u, the log has %zu", s->epoch, l->nep);
	uint64_t durable = l->ep[s->epoch].durable;
	if (durable < l->applied)
		crash_log_rewind(l);
	for (; l->applied < durable; l->applied++)
		img_apply(l, &l->e[l->applied]);
	/* the durable image, 1 MiB at a time (mem:'s largest command) */
	const uint32_t chunk = 2048;
	for (uint64_t sec = 0; sec < CRASH_IMAGE_BYTES / DEV_SECTOR_SIZE; sec += chunk) {
		int rc = dev_rw_sync(dev, DEV_OP_WRITE, sec, chunk, l->img + sec * DEV_SECTOR_SIZE, 0);
		if (rc)
			return err_set(rc, "crashtest: writing a crash state: %s", err_last(rc));
	}
	const struct epoch *ep = &l->ep[s->epoch];
	size_t nb = writes_before(ep, s->point);
	for (size_t i = 0; i < nb; i++) {
		const struct lent *x = &l->e[ep->w[i]];
		bool on = !s->sel || (i < s->nsel && (s->sel[i / 64] >> (i % 64) & 1)) || (x->flags & DEV_LOG_FUA);
		if (!on)
			continue;
		uint8_t *d = l->data + x->data;
		int rc = 0;
		if (x->flags & DEV_LOG_DISCARD) {
			rc = write_zeroes(dev, x->sector, x->nsect); /* no data: never read l->data */
		} else if ((int64_t)ep->w[i] == s->torn) {
			for (uint32_t k = 0; k < x->nsect && !rc; k++)
				if (torn_keeps(s->torn_seed, x->nsect, k))
					rc = dev_rw_sync(dev, DEV_OP_WRITE, x->sector + k, 1, d + k * DEV_SECTOR_SIZE, 0);
		} else {
			rc = dev_rw_sync(dev, DEV_OP_WRITE, x->sector, x->nsect, d, 0);
		}
		if (rc)
			return err_set(rc, "crashtest: writing entry %" PRIu64 ": %s", ep->w[i], err_last(rc));
	}
	return 0;
}

/* ------------------------------------------------------------ text form */

int crash_state_format(const struct crash_state *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%c epoch=%u point=%" PRIu64 " torn=%" PRId64 ":%" PRIu64 " sel=", s->how,
			 s->epoch, s->point, s->torn, s->torn_seed);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	if (!s->sel)
		return snprintf(buf + n, len - (size_t)n, "all") < (int)(len - (size_t)n) ? 0 : -ENOSPC;
	for (uint32_t i = 0; i < s->nsel; i++) {
		if ((size_t)n + 2 >= len)
			return -ENOSPC;
		buf[n++] = (s->sel[i / 64] >> (i % 64) & 1) ? '1' : '0';
	}
	buf[n] = '\0';
	return 0;
}

int crash_state_parse(const char *text, struct crash_state *s)
{
	memset(s, 0, sizeof *s);
	char how;
	unsigned epoch;
	int pos = 0;
	if (sscanf(text, "%c epoch=%u point=%" SCNu64 " torn=%" SCNd64 ":%" SCNu64 " sel=%n", &how, &epoch, &s->point,
		   &s->torn, &s->torn_seed, &pos) != 5 || !pos)
		return err_set(-EINVAL, "crashtest: bad state '%s'", text);
	s->how = how;
	s->epoch = epoch;
	const char *b = text + pos;
	if (!strncmp(b, "all", 3))
		return 0;
	size_t nb = strspn(b, "01");
	s->sel = calloc(nb / 64 + 1, sizeof *s->sel);
	if (!s->sel)
		return -ENOMEM;
	s->nsel = (uint32_t)nb;
	for (size_t i = 0; i < nb; i++)
		if (b[i] == '1')
			s->sel[i / 64] |= 1ull << (i % 64);
	return 0;
}
