/* crashtest's oracle (crash.h, docs/crashtest.md "The oracle").
 *
 * Recording: the workload adds one event per operation; the model keeps
 * "now" (which path names which object, file sizes, each file's writes by
 * number) so that workloads can choose valid arguments without asking the
 * filesystem, which makes a dry run give the same events.
 *
 * Evaluation: a crash point lies after some events started and some syncs
 * returned. The evaluator applies them in order and keeps, per path, the
 * bindings a crash may show (the one the last covering sync persisted, and
 * every one set since; absence too while nothing persisted the path), and
 * per file:
 *   cur[w]    the write number + 1 now at word w (0: hole);
 *   floor[w]  the write number + 1 a completed fsync/sync guarantees at w: a
 *             crash shows that write or a later one covering w, never older
 *             data and never zero (a later truncate below w lifts it);
 *   was_hole[w] whether w was a hole at some point since it was last
 *             persisted (data=guarded's size may end on it: see
 *             crash_eval_allow_hole_tail);
 *   min_size  the size a completed sync guarantees, lowered by later
 *             truncates; max_size the largest size the file had;
 *   ztail     the sizes at which the file's last word may read zero (a
 *             truncate: a hole at its new size, or its zeroed block under
 *             any size up to the old one), i.e. not "too long".
 * Durability follows ext3's journal: fsync of a file persists its data,
 * size and names (its directories' names too: the inode's commit carries
 * them; of a name it had before, only that it left it); fdatasync its data
 * and size; fsync of a directory its entries and its own name; sync
 * everything.
 */
#include "crash.h"

#include "util/array.h"
#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ string map */

struct crash_smap {
	char **keys;     /* insertion order */
	uint32_t *vals;
	size_t n, cap;
	uint32_t *slot;  /* open addressing: index + 1, 0 empty */
	size_t nslot;    /* power of two, > 2n */
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

int crash_smap_create(struct crash_smap **out)
{
	*out = calloc(1, sizeof **out);
	return *out ? 0 : -ENOMEM;
}

void crash_smap_clear(struct crash_smap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->keys[i]);
	s->n = 0;
	if (s->slot)
		memset(s->slot, 0, s->nslot * sizeof *s->slot);
}

void crash_smap_destroy(struct crash_smap *s)
{
	if (!s)
		return;
	crash_smap_clear(s);
	free(s->keys);
	free(s->vals);
	free(s->slot);
	free(s);
}

static size_t smap_find(const struct crash_smap *s, const char *key)
{
	if (!s->nslot)
		return SIZE_MAX;
	size_t mask = s->nslot - 1;
	for (size_t i = str_hash(key) & mask;; i = (i + 1) & mask) {
		uint32_t v = s->slot[i];
		if (!v)
			return SIZE_MAX;
		if (!strcmp(s->keys[v - 1], key))
			return v - 1;
	}
}

static int smap_rehash(struct crash_smap *s, size_t nslot)
{
	uint32_t *slot = calloc(nslot, sizeof *slot);
	if (!slot)
		return -ENOMEM;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = str_hash(s->keys[k]) & (nslot - 1);
		while (slot[i])
			i = (i + 1) & (nslot - 1);
		slot[i] = (uint32_t)(k + 1);
	}
	free(s->slot);
	s->slot = slot;
	s->nslot = nslot;
	return 0;
}

int crash_smap_put(struct crash_smap *s, const char *key, uint32_t val)
{
	size_t k = smap_find(s, key);
	if (k != SIZE_MAX) {
		s->vals[k] = val;
		return 0;
	}
	if (2 * (s->n + 1) >= s->nslot && smap_rehash(s, s->nslot ? 2 * s->nslot : 64))
		return -ENOMEM;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		char **keys = realloc(s->keys, cap * sizeof *keys);
		if (!keys)
			return -ENOMEM;
		s->keys = keys;
		uint32_t *vals = realloc(s->vals, cap * sizeof *vals);
		if (!vals)
			return -ENOMEM;
		s->vals = vals;
		s->cap = cap;
	}
	char *dup = strdup(key);
	if (!dup)
		return -ENOMEM;
	s->keys[s->n] = dup;
	s->vals[s->n] = val;
	size_t i = str_hash(key) & (s->nslot - 1);
	while (s->slot[i])
		i = (i + 1) & (s->nslot - 1);
	s->slot[i] = (uint32_t)(++s->n);
	return 0;
}

bool crash_smap_get(const struct crash_smap *s, const char *key, uint32_t *val)
{
	size_t k = smap_find(s, key);
	if (k == SIZE_MAX)
		return false;
	if (val)
		*val = s->vals[k];
	return true;
}

size_t crash_smap_count(const struct crash_smap *s)
{
	return s->n;
}

const char *crash_smap_key(const struct crash_smap *s, size_t i, uint32_t *val)
{
	if (val)
		*val = s->vals[i];
	return s->keys[i];
}

/* ------------------------------------------------------------ recording */

struct wrange {
	uint64_t off, len;
};

struct mobj {
	bool used, dir;
	uint64_t size;          /* now */
	struct wrange *w;       /* by write number */
	size_t nw, wcap;
};

struct crash_model {
	struct crash_ev *ev;
	size_t nev, evcap;
	struct mobj *obj;       /* [0] unused */
	size_t nobj, objcap;
	struct crash_smap *names; /* path -> object now (0: unbound) */
	const char **bound;     /* the paths bound now, first-bound order */
	size_t nbound;
};

int crash_model_create(struct crash_model **out)
{
	struct crash_model *m = calloc(1, sizeof *m);
	if (!m || crash_smap_create(&m->names)) {
		free(m);
		return -ENOMEM;
	}
	m->obj = calloc(64, sizeof *m->obj);
	if (!m->obj) {
		crash_smap_destroy(m->names);
		free(m);
		return -ENOMEM;
	}
	m->objcap = 64;
	m->nobj = 1;
	*out = m;
	return 0;
}

void crash_model_destroy(struct crash_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nev; i++) {
		free(m->ev[i].path);
		free(m->ev[i].path2);
	}
	free(m->ev);
	for (size_t i = 0; i < m->nobj; i++)
		free(m->obj[i].w);
	free(m->obj);
	crash_smap_destroy(m->names);
	free(m->bound);
	free(m);
}

size_t crash_model_nevents(const struct crash_model *m)
{
	return m->nev;
}

const struct crash_ev *crash_model_event(const struct crash_model *m, size_t i)
{
	return &m->ev[i];
}

uint32_t crash_model_lookup(const struct crash_model *m, const char *path)
{
	uint32_t v = 0;
	crash_smap_get(m->names, path, &v);
	return v;
}

bool crash_model_is_dir(const struct crash_model *m, uint32_t obj)
{
	return obj && obj < m->nobj && m->obj[obj].dir;
}

uint64_t crash_model_size(const struct crash_model *m, uint32_t obj)
{
	return obj && obj < m->nobj ? m->obj[obj].size : 0;
}

const char *const *crash_model_paths(const struct crash_model *m, size_t *n)
{
	*n = m->nbound;
	return m->bound;
}

/* Bind path to obj (0: unbind) now. */
static int model_bind(struct crash_model *m, const char *path, uint32_t obj)
{
	uint32_t old = 0;
	bool had = crash_smap_get(m->names, path, &old);
	if (crash_smap_put(m->names, path, obj))
		return -ENOMEM;
	const char *key = m->names->keys[smap_find(m->names, path)]; /* the map's copy */
	if (obj && (!had || !old)) {
		size_t cap = m->nbound;
		const char **b = realloc(m->bound, (cap + 1) * sizeof *b);
		if (!b)
			return -ENOMEM;
		m->bound = b;
		m->bound[m->nbound++] = key;
	} else if (!obj && had && old) {
		for (size_t i = 0; i < m->nbound; i++)
			if (m->bound[i] == key) {
				memmove(&m->bound[i], &m->bound[i + 1], (m->nbound - i - 1) * sizeof *m->bound);
				m->nbound--;
				break;
			}
	}
	return 0;
}

static int model_new_obj(struct crash_model *m, bool dir, uint32_t *obj)
{
	if (m->nobj >= CRASH_OBJ_MAX)
		return err_set(-ENOSPC, "crashtest: more than %u objects", CRASH_OBJ_MAX);
	if (m->nobj == m->objcap) {
		struct mobj *o = realloc(m->obj, 2 * m->objcap * sizeof *o);
		if (!o)
			return -ENOMEM;
		memset(o + m->objcap, 0, m->objcap * sizeof *o);
		m->obj = o;
		m->objcap *= 2;
	}
	*obj = (uint32_t)m->nobj++;
	m->obj[*obj].used = true;
	m->obj[*obj].dir = dir;
	return 0;
}

int crash_model_add(struct crash_model *m, struct crash_ev *ev, uint32_t *objp)
{
	int rc = 0;
	struct mobj *o = ev->obj && ev->obj < m->nobj ? &m->obj[ev->obj] : NULL;
	switch (ev->t) {
	case EV_CREATE:
	case EV_MKDIR:
		if (crash_model_lookup(m, ev->path))
			return err_set(-EINVAL, "crashtest model: %s exists", ev->path);
		rc = model_new_obj(m, ev->t == EV_MKDIR, &ev->obj);
		if (!rc)
			rc = model_bind(m, ev->path, ev->obj);
		break;
	case EV_WRITE:
		if (!o || o->dir || (ev->off | ev->len) % 8 || !ev->len)
			return err_set(-EINVAL, "crashtest model: bad write of object %u", ev->obj);
		if (o->nw >= 0xffff)
			return err_set(-ENOSPC, "crashtest model: object %u has too many writes", ev->obj);
		if (array_grow(&o->w, &o->wcap, o->nw, sizeof *o->w, 16))
			return -ENOMEM;
		ev->seq = (uint32_t)o->nw;
		o->w[o->nw++] = (struct wrange){ ev->off, ev->len };
		if (ev->off + ev->len > o->size)
			o->size = ev->off + ev->len;
		break;
	case EV_TRUNC:
		if (!o || o->dir || ev->off % 8)
			return err_set(-EINVAL, "crashtest model: bad truncate of object %u", ev->obj);
		o->size = ev->off;
		break;
	case EV_LINK:
		if (!o || o->dir || crash_model_lookup(m, ev->path))
			return err_set(-EINVAL, "crashtest model: bad link %s", ev->path);
		rc = model_bind(m, ev->path, ev->obj);
		break;
	case EV_UNLINK:
	case EV_RMDIR:
		if (!crash_model_lookup(m, ev->path))
			return err_set(-EINVAL, "crashtest model: %s does not exist", ev->path);
		rc = model_bind(m, ev->path, 0);
		break;
	case EV_RENAME: {
		uint32_t src = crash_model_lookup(m, ev->path);
		if (!src || !strcmp(ev->path, ev->path2))
			return err_set(-EINVAL, "crashtest model: bad rename %s", ev->path);
		rc = model_bind(m, ev->path2, src);
		if (!rc)
			rc = model_bind(m, ev->path, 0);
		break;
	}
	case EV_FSYNC:
		if (ev->obj && !o)
			return err_set(-EINVAL, "crashtest model: fsync of unknown object %u", ev->obj);
		break;
	case EV_SYNC:
		break;
	}
	if (rc)
		return rc;
	if (array_grow(&m->ev, &m->evcap, m->nev, sizeof *m->ev, 64))
		return -ENOMEM;
	struct crash_ev c = *ev;
	c.path = ev->path ? strdup(ev->path) : NULL;
	c.path2 = ev->path2 ? strdup(ev->path2) : NULL;
	if ((ev->path && !c.path) || (ev->path2 && !c.path2)) {
		free(c.path);
		free(c.path2);
		return -ENOMEM;
	}
	m->ev[m->nev++] = c;
	if (objp)
		*objp = ev->obj;
	return 0;
}

/* ------------------------------------------------------------ evaluation */

struct ename {
	uint32_t cur;        /* object now (0 absent) */
	uint32_t persisted;  /* object the last covering sync persisted, +1 (0: never) */
	bool renamed;
	uint32_t *allowed;   /* objects a crash may show here (0 = absent) */
	size_t nallowed, cap;
};

struct eobj {
	bool exists, dir;
	uint32_t *cur, *floor; /* per 8-byte word, write number + 1 */
	uint8_t *was_hole;     /* per word: a hole at some point since it was last persisted */
	size_t words;          /* allocated length of the three */
	uint64_t size, min_size, max_size;
	struct wrange *ztail;  /* sizes [off, off + len] that may end in a zero word */
	size_t nztail, ztcap;
	uint32_t nstarted;     /* writes started */
};

struct crash_eval {
	const struct crash_model *m;
	bool hole_tail;         /* crash_eval_allow_hole_tail */
	struct crash_smap *idx; /* path -> index into names */
	struct ename *names;
	size_t nnames, ncap;
	struct eobj *obj;       /* m->nobj of them */
};

void crash_eval_allow_hole_tail(struct crash_eval *e, bool on)
{
	e->hole_tail = on;
}

int crash_eval_create(const struct crash_model *m, struct crash_eval **out)
{
	struct crash_eval *e = calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	e->m = m;
	e->obj = calloc(m->nobj, sizeof *e->obj);
	if (!e->obj || crash_smap_create(&e->idx)) {
		free(e->obj);
		free(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

void crash_eval_destroy(struct crash_eval *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nnames; i++)
		free(e->names[i].allowed);
	free(e->names);
	for (size_t i = 0; i < e->m->nobj; i++) {
		free(e->obj[i].cur);
		free(e->obj[i].floor);
		free(e->obj[i].was_hole);
		free(e->obj[i].ztail);
	}
	free(e->obj);
	crash_smap_destroy(e->idx);
	free(e);
}

static int allowed_add(struct ename *n, uint32_t v)
{
	for (size_t i = 0; i < n->nallowed; i++)
		if (n->allowed[i] == v)
			return 0;
	if (array_grow(&n->allowed, &n->cap, n->nallowed, sizeof *n->allowed, 4))
		return -ENOMEM;
	n->allowed[n->nallowed++] = v;
	return 0;
}

static struct ename *name_get(struct crash_eval *e, const char *path, bool create)
{
	uint32_t i;
	if (crash_smap_get(e->idx, path, &i))
		return &e->names[i];
	if (!create)
		return NULL;
	if (array_grow(&e->names, &e->ncap, e->nnames, sizeof *e->names, 64))
		return NULL;
	if (crash_smap_put(e->idx, path, (uint32_t)e->nnames))
		return NULL;
	struct ename *n = &e->names[e->nnames++];
	memset(n, 0, sizeof *n);
	if (allowed_add(n, 0)) /* nothing persisted it: it may be absent */
		return NULL;
	return n;
}

static int name_set(struct crash_eval *e, const char *path, uint32_t obj, bool renamed)
{
	struct ename *n = name_get(e, path, true);
	if (!n)
		return -ENOMEM;
	n->cur = obj;
	if (renamed)
		n->renamed = true;
	return allowed_add(n, obj);
}

static void name_persist(struct ename *n)
{
	n->persisted = n->cur + 1;
	n->allowed[0] = n->cur;
	n->nallowed = 1;
	n->renamed = false;
}

/* The removal of obj from n is persisted: obj may no longer show there;
 * every other binding allowed so far still may (what replaced obj - an
 * unlink's absence, a rename's new object - was added when it was set, and
 * the current binding is among them: the set never empties). */
static void name_unpersist_obj(struct ename *n, uint32_t obj)
{
	size_t k = 0;
	for (size_t i = 0; i < n->nallowed; i++)
		if (n->allowed[i] != obj)
			n->allowed[k++] = n->allowed[i];
	n->nallowed = k;
}

/* Persist path's ancestors ("/a/b/c": "/a/b", "/a"). */
static void persist_ancestors(struct crash_eval *e, const char *path)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", path);
	char *s;
	while ((s = strrchr(buf, '/')) && s != buf) {
		*s = '\0';
		struct ename *n = name_get(e, buf, false);
		if (n)
			name_persist(n);
	}
}

static int obj_grow(struct eobj *o, size_t words)
{
	if (words <= o->words)
		return 0;
	size_t nw = o->words ? o->words : 64;
	while (nw < words)
		nw *= 2;
	uint32_t *c = realloc(o->cur, nw * sizeof *c);
	if (!c)
		return -ENOMEM;
	o->cur = c;
	uint32_t *f = realloc(o->floor, nw * sizeof *f);
	if (!f)
		return -ENOMEM;
	o->floor = f;
	uint8_t *h = realloc(o->was_hole, nw);
	if (!h)
		return -ENOMEM;
	o->was_hole = h;
	memset(o->cur + o->words, 0, (nw - o->words) * sizeof *c);
	memset(o->floor + o->words, 0, (nw - o->words) * sizeof *f);
	memset(o->was_hole + o->words, 1, nw - o->words);
	o->words = nw;
	return 0;
}

static void obj_persist(struct eobj *o)
{
	size_t n = (size_t)(o->size / 8);
	if (n) {
		memcpy(o->floor, o->cur, n * sizeof *o->cur);
		for (size_t w = 0; w < n; w++)
			o->was_hole[w] = !o->cur[w];
	}
	if (o->words > n)
		memset(o->floor + n, 0, (o->words - n) * sizeof *o->floor);
	o->min_size = o->size;
}

static int apply_start(struct crash_eval *e, const struct crash_ev *ev)
{
	struct eobj *o = ev->obj ? &e->obj[ev->obj] : NULL;
	switch (ev->t) {
	case EV_CREATE:
	case EV_MKDIR:
		o->exists = true;
		o->dir = ev->t == EV_MKDIR;
		return name_set(e, ev->path, ev->obj, false);
	case EV_WRITE: {
		uint64_t end = ev->off + ev->len;
		if (obj_grow(o, (size_t)(end / 8)))
			return -ENOMEM;
		for (uint64_t w = ev->off / 8; w < end / 8; w++)
			o->cur[w] = ev->seq + 1;
		if (end > o->size)
			o->size = end;
		if (o->size > o->max_size)
			o->max_size = o->size;
		o->nstarted = ev->seq + 1;
		return 0;
	}
	case EV_TRUNC: {
		uint64_t t = ev->off;
		if (obj_grow(o, (size_t)(t / 8)))
			return -ENOMEM;
		for (size_t w = (size_t)(t / 8); w < o->words; w++) {
			o->cur[w] = 0;
			o->floor[w] = 0;
			o->was_hole[w] = 1;
		}
		if (t < o->min_size)
			o->min_size = t;
		/* zero tails a crash may show: a truncate down zeroes the block
		 * past t before its size is on disk (ordered data), so any size
		 * up to the old one; one up leaves a hole at t */
		uint64_t lo = t, hi = t > o->size ? t : o->size;
		if (t < o->size || (t && !o->cur[t / 8 - 1])) {
			if (array_grow(&o->ztail, &o->ztcap, o->nztail, sizeof *o->ztail, 4))
				return -ENOMEM;
			o->ztail[o->nztail++] = (struct wrange){ lo, hi - lo };
		}
		o->size = t;
		if (t > o->max_size)
			o->max_size = t;
		return 0;
	}
	case EV_LINK:
		return name_set(e, ev->path, ev->obj, false);
	case EV_UNLINK:
	case EV_RMDIR:
		return name_set(e, ev->path, 0, false);
	case EV_RENAME: {
		struct ename *src = name_get(e, ev->path, false);
		uint32_t obj = src ? src->cur : 0;
		int rc = name_set(e, ev->path2, obj, true);
		return rc ? rc : name_set(e, ev->path, 0, true);
	}
	case EV_FSYNC:
	case EV_SYNC:
		return 0;
	}
	return 0;
}

/* Is child a direct entry of dir ("/d" and "/d/x"; "" is the root)? */
static bool is_child(const char *dir, const char *child)
{
	size_t n = strlen(dir);
	return !strncmp(child, dir, n) && child[n] == '/' && child[n + 1] && !strchr(child + n + 1, '/');
}

static void apply_done(struct crash_eval *e, const struct crash_ev *ev)
{
	if (ev->t == EV_SYNC) {
		for (size_t i = 0; i < e->nnames; i++)
			name_persist(&e->names[i]);
		for (size_t i = 1; i < e->m->nobj; i++)
			if (e->obj[i].exists && !e->obj[i].dir)
				obj_persist(&e->obj[i]);
		return;
	}
	if (ev->t != EV_FSYNC)
		return;
	if (!ev->obj) {
		/* fsync of the root directory: its entries */
		for (size_t k = 0; k < e->nnames; k++)
			if (is_child("", crash_smap_key(e->idx, k, NULL)))
				name_persist(&e->names[k]);
		return;
	}
	struct eobj *o = &e->obj[ev->obj];
	if (!o->dir)
		obj_persist(o);
	if (ev->len)
		return; /* fdatasync: the data and size, not the names */
	for (size_t i = 0; i < e->nnames; i++) {
		struct ename *n = &e->names[i];
		if (n->cur != ev->obj && n->persisted != ev->obj + 1)
			continue;
		const char *path = crash_smap_key(e->idx, i, NULL);
		if (n->cur != ev->obj) {
			/* A name the object had: what its commit carries is the
			 * object leaving it, not what the name got afterwards
			 * (another object created there later may be in a later
			 * transaction). The crash may show anything since. */
			name_unpersist_obj(n, ev->obj);
			continue;
		}
		name_persist(n);
		persist_ancestors(e, path);
		if (!o->dir)
			continue;
		/* fsync of a directory: its entries */
		for (size_t k = 0; k < e->nnames; k++)
			if (is_child(path, crash_smap_key(e->idx, k, NULL)))
				name_persist(&e->names[k]);
	}
}

int crash_eval_apply(struct crash_eval *e, size_t i, bool done)
{
	const struct crash_ev *ev = &e->m->ev[i];
	if (done) {
		apply_done(e, ev);
		return 0;
	}
	return apply_start(e, ev);
}

void crash_eval_name(const struct crash_eval *e, const char *path, uint32_t obj, struct crash_name_verdict *v)
{
	memset(v, 0, sizeof *v);
	uint32_t i;
	if (!crash_smap_get(e->idx, path, &i))
		return;
	const struct ename *n = &e->names[i];
	v->known = true;
	v->renamed = n->renamed;
	v->persisted = n->persisted != 0;
	for (size_t k = 0; k < n->nallowed; k++)
		if (n->allowed[k] == obj)
			v->allowed = true;
}

int crash_eval_paths(const struct crash_eval *e, int (*fn)(void *ctx, const char *path), void *ctx)
{
	for (size_t i = 0; i < e->nnames; i++) {
		int rc = fn(ctx, crash_smap_key(e->idx, i, NULL));
		if (rc)
			return rc;
	}
	return 0;
}

bool crash_eval_obj_exists(const struct crash_eval *e, uint32_t obj)
{
	return obj && obj < e->m->nobj && e->obj[obj].exists;
}

bool crash_eval_obj_is_dir(const struct crash_eval *e, uint32_t obj)
{
	return crash_eval_obj_exists(e, obj) && e->obj[obj].dir;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* May word w (at word index i) of object obj hold this value as data? */
static bool word_is_data(const struct crash_model *m, const struct eobj *o, uint32_t obj, size_t i,
			 uint64_t w)
{
	uint32_t wobj = (uint32_t)(w >> 48), seq = (uint32_t)(w >> 32) & 0xffff;
	if (wobj != obj || (uint32_t)w != (uint32_t)i || seq >= o->nstarted)
		return false;
	const struct wrange *r = &m->obj[obj].w[seq];
	return (uint64_t)i * 8 >= r->off && (uint64_t)i * 8 < r->off + r->len;
}

static const char *word_owner(uint64_t w, char *buf, size_t len)
{
	uint32_t wobj = (uint32_t)(w >> 48);
	if (wobj == CRASH_OBJ_GARBAGE)
		snprintf(buf, len, "the garbage fill");
	else
		snprintf(buf, len, "object %u write %u offset %llu", wobj, (unsigned)(w >> 32) & 0xffff,
			 (unsigned long long)(uint32_t)w * 8);
	return buf;
}

void crash_eval_file(const struct crash_eval *e, uint32_t obj, const uint8_t *data, uint64_t size,
		     struct crash_verdict *v)
{
	const struct eobj *o = &e->obj[obj];
	char who[96];
	if (size < o->min_size)
		crash_verdict_add(v, CK_LOST_FSYNC, "object %u: size %llu < %llu persisted by an fsync/sync", obj,
				  (unsigned long long)size, (unsigned long long)o->min_size);
	if (size > o->max_size)
		crash_verdict_add(v, CK_TOO_LONG, "object %u: size %llu > %llu, the most ever written", obj,
				  (unsigned long long)size, (unsigned long long)o->max_size);
	size_t nw = (size_t)(size / 8);
	for (size_t i = 0; i < nw; i++) {
		uint64_t w = le64(data + 8 * i);
		uint32_t fl = i < o->words ? o->floor[i] : 0;
		if (!w) {
			if (fl)
				crash_verdict_add(v, CK_LOST_FSYNC,
						  "object %u: offset %llu reads zero, write %u was persisted", obj,
						  (unsigned long long)i * 8, fl - 1);
			continue;
		}
		if (!word_is_data(e->m, o, obj, i, w)) {
			crash_verdict_add(v, CK_STALE_DATA, "object %u: offset %llu holds %s (0x%016llx)", obj,
					  (unsigned long long)i * 8, word_owner(w, who, sizeof who),
					  (unsigned long long)w);
			continue;
		}
		uint32_t seq = (uint32_t)(w >> 32) & 0xffff;
		if (fl && seq + 1 < fl)
			crash_verdict_add(v, CK_LOST_FSYNC,
					  "object %u: offset %llu holds write %u, write %u was persisted", obj,
					  (unsigned long long)i * 8, seq, fl - 1);
	}
	if (size % 8) {
		/* a partial last word: its bytes must be zero or some write's */
		size_t i = nw, k = (size_t)(size % 8);
		bool zero = true, ok = false;
		for (size_t b = 0; b < k; b++)
			zero = zero && !data[8 * i + b];
		for (uint32_t s = 0; !zero && s < o->nstarted && !ok; s++) {
			uint64_t p = crash_pat(obj, s, (uint64_t)i * 8);
			ok = word_is_data(e->m, o, obj, i, p);
			for (size_t b = 0; ok && b < k; b++)
				ok = data[8 * i + b] == (uint8_t)(p >> (8 * b));
		}
		if (!zero && !ok)
			crash_verdict_add(v, CK_STALE_DATA, "object %u: the last %zu bytes are not its data", obj, k);
	}
	if (nw && !(size % 8) && !le64(data + 8 * (nw - 1))) {
		bool ok = (nw - 1 < o->words && o->floor[nw - 1]); /* reported as lost above */
		for (size_t k = 0; !ok && k < o->nztail; k++)
			ok = size >= o->ztail[k].off && size <= o->ztail[k].off + o->ztail[k].len;
		if (!ok && e->hole_tail)
			ok = nw - 1 >= o->words || o->was_hole[nw - 1];
		if (!ok)
			crash_verdict_add(v, CK_TOO_LONG,
					  "object %u: size %llu but its last word reads zero (data not on disk)", obj,
					  (unsigned long long)size);
	}
}
