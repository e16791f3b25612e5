/* I/O contexts: one per thread (like a task's io_context), carrying the I/O
 * priority and the request-allocation batching state.
 *
 * Lifetime: refcounted. The thread's own reference is dropped by a
 * pthread-key destructor at thread exit; requests in flight hold their own
 * reference, so a context outlives its thread while it has I/O queued.
 * The priority fields are atomics: the owner thread changes them while a
 * scheduler may read them under a queue lock.
 */
#include "blk.h"
#include "blk_internal.h"
#include "../util/err.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static atomic_uint_fast64_t ioc_next_id = 1;
static pthread_key_t ioc_key;
static pthread_once_t ioc_once = PTHREAD_ONCE_INIT;

static void ioc_thread_exit(void *p)
{
	blk_ioc_put(p);
}

static void ioc_key_init(void)
{
	pthread_key_create(&ioc_key, ioc_thread_exit);
}

static int ioc_check(int cls, int level)
{
	if (cls < BLK_IOPRIO_CLASS_NONE || cls > BLK_IOPRIO_CLASS_IDLE)
		return err_set(-EINVAL, "ioprio class %d is not RT, BE or IDLE", cls);
	if (level < 0 || level >= BLK_IOPRIO_LEVELS)
		return err_set(-EINVAL, "ioprio level %d is out of range [0..7]", level);
	return 0;
}

struct blk_ioc *blk_ioc_create(int ioprio_class, int level)
{
	if (ioc_check(ioprio_class, level))
		return NULL;
	struct blk_ioc *ioc = calloc(1, sizeof *ioc);
	if (!ioc)
		return NULL;
	atomic_init(&ioc->refs, 1);
	ioc->id = atomic_fetch_add(&ioc_next_id, 1);
	atomic_init(&ioc->ioprio_class, ioprio_class);
	atomic_init(&ioc->level, level);
	return ioc;
}

void blk_ioc_get(struct blk_ioc *ioc)
{
	atomic_fetch_add(&ioc->refs, 1);
}

int blk_ioc_refcount(const struct blk_ioc *ioc)
{
	return atomic_load(&((struct blk_ioc *)ioc)->refs);
}

void blk_ioc_put(struct blk_ioc *ioc)
{
	if (ioc && atomic_fetch_sub(&ioc->refs, 1) == 1)
		free(ioc);
}

struct blk_ioc *blk_ioc_current(void)
{
	pthread_once(&ioc_once, ioc_key_init);
	struct blk_ioc *ioc = pthread_getspecific(ioc_key);
	if (!ioc) {
		ioc = blk_ioc_create(BLK_IOPRIO_CLASS_NONE, 4);
		if (ioc)
			pthread_setspecific(ioc_key, ioc);
	}
	return ioc;
}

void blk_ioc_attach(struct blk_ioc *ioc)
{
	pthread_once(&ioc_once, ioc_key_init);
	struct blk_ioc *old = pthread_getspecific(ioc_key);
	blk_ioc_get(ioc);
	pthread_setspecific(ioc_key, ioc);
	blk_ioc_put(old);
}

int blk_ioprio_set(int ioprio_class, int level)
{
	int rc = ioc_check(ioprio_class, level);
	if (rc)
		return rc;
	struct blk_ioc *ioc = blk_ioc_current();
	if (!ioc)
		return -ENOMEM;
	atomic_store(&ioc->ioprio_class, ioprio_class);
	atomic_store(&ioc->level, level);
	return 0;
}

uint64_t blk_ioc_id(const struct blk_ioc *ioc) { return ioc->id; }

/* CLASS_NONE behaves as best-effort (the kernel derives the level from the
 * nice value; ours is the default level 4). */
int blk_ioc_class(const struct blk_ioc *ioc)
{
	int c = atomic_load(&ioc->ioprio_class);
	return c == BLK_IOPRIO_CLASS_NONE ? BLK_IOPRIO_CLASS_BE : c;
}

int blk_ioc_level(const struct blk_ioc *ioc) { return atomic_load(&ioc->level); }

const char *blk_ioprio_class_name(int c)
{
	switch (c) {
	case BLK_IOPRIO_CLASS_RT: return "RT";
	case BLK_IOPRIO_CLASS_BE: return "BE";
	case BLK_IOPRIO_CLASS_IDLE: return "IDLE";
	default: return "NONE";
	}
}

int blk_ioprio_parse(const char *s, int *ioprio_class, int *level)
{
	static const struct { const char *name; int cls; } names[] = {
		{ "rt", BLK_IOPRIO_CLASS_RT }, { "realtime", BLK_IOPRIO_CLASS_RT },
		{ "be", BLK_IOPRIO_CLASS_BE }, { "best-effort", BLK_IOPRIO_CLASS_BE },
		{ "idle", BLK_IOPRIO_CLASS_IDLE },
	};
	if (!s)
		return err_set(-EINVAL, "missing ioprio (use CLASS/LEVEL, e.g. RT/4)");
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	int cls = -1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i].name) == n && strncasecmp(s, names[i].name, n) == 0)
			cls = names[i].cls;
	if (cls < 0)
		return err_set(-EINVAL, "ioprio '%s': class must be RT, BE or IDLE", s);
	int lvl = cls == BLK_IOPRIO_CLASS_IDLE ? 7 : 4;
	if (slash) {
		const char *p = slash + 1;
		if (!isdigit((unsigned char)p[0]) || p[1] != '\0' || p[0] > '7')
			return err_set(-EINVAL, "ioprio '%s': level must be 0..7", s);
		lvl = p[0] - '0';
	}
	*ioprio_class = cls;
	*level = lvl;
	return 0;
}

const char *blk_rw_name(unsigned rw, char *buf, size_t len)
{
	static const struct { unsigned v; const char *n; } named[] = {
		{ BLK_READ, "READ" }, { BLK_READ_SYNC, "READ_SYNC" }, { BLK_WRITE, "WRITE" },
		{ BLK_WRITE_SYNC_PLUG, "WRITE_SYNC_PLUG" }, { BLK_WRITE_SYNC, "WRITE_SYNC" },
		{ BLK_WRITE_ODIRECT, "WRITE_ODIRECT" }, { BLK_SWRITE, "SWRITE" },
		{ BLK_SWRITE_SYNC_PLUG, "SWRITE_SYNC_PLUG" }, { BLK_SWRITE_SYNC, "SWRITE_SYNC" },
	};
	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
		if (named[i].v == rw) {
			snprintf(buf, len, "%s", named[i].n);
			return buf;
		}
	static const char *const bits[] = { "WRITE", "SYNC", "UNPLUG", "NOIDLE", "META", "FLUSH", "FUA", "SWRITE" };
	size_t off = 0;
	buf[0] = '\0';
	if (!(rw & BLK_RW_WRITE))
		off += (size_t)snprintf(buf, len, "READ");
	for (unsigned i = 0; i < 8 && off < len; i++)
		if (rw & (1u << i))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "|" : "", bits[i]);
	return buf;
}
