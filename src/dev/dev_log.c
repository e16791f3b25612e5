/* log:OTHER,to=LOGFILE — passes I/O through to OTHER and records every
 * completed write, discard and flush (in completion order) and every mark, in
 * the on-disk format of Linux's dm-log-writes, so that xfstests' replay-log
 * reads our logs. Also the reader, replay and crash-point API of dev.h.
 *
 * Format (all fields little-endian; S = sectorsize, always 512 when we write):
 *   offset 0:       super (struct lw_super), rest of the S-byte block zero
 *   offset S:       entry 0: header block of S bytes (struct lw_entry, then
 *                   for a MARK its text, rest zero), then for a write the data,
 *                   nr_sectors * S bytes; discards, flushes and marks have no
 *                   data blocks
 *   ...             entry 1, 2, ... back to back
 * sector and nr_sectors count S-byte units. Readers trust the super's
 * nr_entries and ignore anything after that many entries, so a log cut short
 * by a crash is still readable; the writer rewrites the super after every
 * flush, FUA write and mark, every 64 entries, and at close.
 *
 * The flush's issue point (our extension, in the header block's padding).
 * A FLUSH entry (an empty flush, or a write with PREFLUSH) is logged when the
 * flush completes, but it covers only the writes that had completed when it
 * was issued (dm-log-writes' rule: the kernel target logs the flush at issue,
 * after the writes completed so far); a write that completes between the
 * issue and the completion was in flight and is not covered. So the writer
 * puts in the FLUSH entry's header block, at byte 48, the u64 LW_ISSUE_MAGIC
 * and at byte 56 the u64 `issued`: the number of entries logged when the
 * flush was submitted (entries [0, issued) are the ones it covers; issued <=
 * the entry's own index). Byte 32 (the first padding byte, the only one
 * replay-log checks) stays zero, so replay-log still reads our logs. A FLUSH
 * entry without the magic (a kernel log, or one nostall wrote before the
 * extension) reads as issued = its own index: everything before it covered.
 */
#include "dev/dev_impl.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define LW_MAGIC 0x6a736677736872ull
#define LW_VERSION 1u
#define LW_SECTOR 512u
#define LW_SUPER_EVERY 64u
/* "fsissued" little-endian: the FLUSH entry's issue point follows. */
#define LW_ISSUE_MAGIC 0x6465757373697366ull
#define LW_ISSUE_OFF 48u

/* On-disk super block (at byte 0 of the log). */
struct lw_super {
	uint64_t magic;      /*  0: LW_MAGIC */
	uint64_t version;    /*  8: 1 */
	uint64_t nr_entries; /* 16: entries that follow */
	uint32_t sectorsize; /* 24: S, the unit of sector/nr_sectors and of the layout */
	uint32_t pad;        /* 28: zero (implicit padding in the C original) */
};
_Static_assert(sizeof(struct lw_super) == 32, "lw_super is 32 bytes on disk");

/* On-disk entry header (at the start of each entry's S-byte header block). */
struct lw_entry {
	uint64_t sector;     /*  0: first S-byte sector written/discarded */
	uint64_t nr_sectors; /*  8: S-byte sectors of data (0 for flush/mark) */
	uint64_t flags;      /* 16: DEV_LOG_FLUSH 1 | FUA 2 | DISCARD 4 | MARK 8 */
	uint64_t data_len;   /* 24: bytes of mark text after the header (0 otherwise) */
};
_Static_assert(sizeof(struct lw_entry) == 32, "lw_entry is 32 bytes on disk");
_Static_assert(DEV_LOG_FLUSH == 1 && DEV_LOG_FUA == 2 && DEV_LOG_DISCARD == 4 && DEV_LOG_MARK == 8,
	       "dm-log-writes flag values");

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* 1 when all read, 0 at EOF before len (short), -errno on error. */
static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 1;
}

/* ---- writer ---- */

struct log_dev {
	struct dev dev; /* first */
	struct dev *inner;
	char *path;
	int fd;
	/* Protected by lock: the log file's tail, the entry count. */
	pthread_mutex_t lock;
	uint64_t nr_entries;
	uint64_t next_off;
	unsigned since_super;
};

struct log_io {
	struct dev_io io; /* what we submit to the inner device */
	struct dev_io *orig;
	struct log_dev *l;
	uint64_t issued;  /* a flush: entries logged when it was submitted */
};

static int write_super_locked(struct log_dev *l)
{
	unsigned char blk[LW_SECTOR] = { 0 };
	put_le64(blk + 0, LW_MAGIC);
	put_le64(blk + 8, LW_VERSION);
	put_le64(blk + 16, l->nr_entries);
	put_le32(blk + 24, LW_SECTOR);
	l->since_super = 0;
	return pwrite_all(l->fd, blk, sizeof(blk), 0);
}

/* Append one entry. Caller holds l->lock. A FLUSH entry carries its issue
 * point (issued, see the header). */
static int append_locked(struct log_dev *l, uint64_t sector, uint64_t nr, uint64_t flags, const void *data,
			 const char *text, uint64_t issued)
{
	unsigned char hdr[LW_SECTOR] = { 0 };
	size_t tlen = 0;
	if ((flags & DEV_LOG_FLUSH) && !(flags & DEV_LOG_MARK)) {
		put_le64(hdr + LW_ISSUE_OFF, LW_ISSUE_MAGIC);
		put_le64(hdr + LW_ISSUE_OFF + 8, issued);
	}
	if (text) {
		tlen = strlen(text);
		if (tlen > LW_SECTOR - sizeof(struct lw_entry) - 1)
			tlen = LW_SECTOR - sizeof(struct lw_entry) - 1; /* keep a NUL */
		memcpy(hdr + sizeof(struct lw_entry), text, tlen);
	}
	put_le64(hdr + 0, sector);
	put_le64(hdr + 8, nr);
	put_le64(hdr + 16, flags);
	put_le64(hdr + 24, tlen);
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)data, data ? nr * LW_SECTOR : 0 } };
	size_t total = sizeof(hdr) + iov[1].iov_len;
	int iovcnt = data ? 2 : 1;
	ssize_t n;
	do
		n = pwritev(l->fd, iov, iovcnt, (off_t)l->next_off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != total) {
		/* Short: finish it the slow way. */
		int rc = 0;
		if ((size_t)n < sizeof(hdr))
			rc = pwrite_all(l->fd, hdr + n, sizeof(hdr) - (size_t)n, l->next_off + (uint64_t)n);
		size_t dn = (size_t)n > sizeof(hdr) ? (size_t)n - sizeof(hdr) : 0;
		if (!rc && data)
			rc = pwrite_all(l->fd, (const char *)data + dn, iov[1].iov_len - dn,
					l->next_off + sizeof(hdr) + dn);
		if (rc)
			return rc;
	}
	l->next_off += total;
	l->nr_entries++;
	if ((flags & (DEV_LOG_FLUSH | DEV_LOG_FUA | DEV_LOG_MARK)) || ++l->since_super >= LW_SUPER_EVERY)
		return write_super_locked(l);
	return 0;
}

static void log_done(struct dev_io *io, int err)
{
	struct log_io *li = (struct log_io *)io;
	struct log_dev *l = li->l;
	struct dev_io *orig = li->orig;
	if (!err && orig->op != DEV_OP_READ) {
		uint64_t flags = 0, sector = orig->sector, nr = orig->nr_sectors;
		const void *data = NULL;
		switch (orig->op) {
		case DEV_OP_WRITE:
			if (orig->flags & DEV_IO_PREFLUSH)
				flags |= DEV_LOG_FLUSH;
			if (orig->flags & DEV_IO_FUA)
				flags |= DEV_LOG_FUA;
			data = orig->buf;
			break;
		case DEV_OP_FLUSH:
			flags = DEV_LOG_FLUSH;
			sector = nr = 0;
			break;
		case DEV_OP_DISCARD:
			flags = DEV_LOG_DISCARD;
			break;
		default:
			break;
		}
		pthread_mutex_lock(&l->lock);
		int rc = append_locked(l, sector, nr, flags, data, NULL, li->issued);
		pthread_mutex_unlock(&l->lock);
		if (rc)
			err = rc == -ENOSPC ? -ENOSPC : -EIO; /* not recorded: report it failed */
	}
	free(li);
	dev_complete(&l->dev, orig, err);
}

static int log_submit(struct dev *d, struct dev_io *io)
{
	struct log_dev *l = (struct log_dev *)d;
	struct log_io *li = malloc(sizeof(*li));
	if (!li)
		return -ENOMEM;
	li->io = (struct dev_io){ .op = io->op, .flags = io->flags, .sector = io->sector,
				  .nr_sectors = io->nr_sectors, .buf = io->buf, .done = log_done };
	li->orig = io;
	li->l = l;
	li->issued = 0;
	if (io->op == DEV_OP_FLUSH || (io->op == DEV_OP_WRITE && (io->flags & DEV_IO_PREFLUSH))) {
		/* what this flush covers: the writes logged (completed) so far */
		pthread_mutex_lock(&l->lock);
		li->issued = l->nr_entries;
		pthread_mutex_unlock(&l->lock);
	}
	int rc = dev_submit(l->inner, &li->io);
	if (rc)
		free(li);
	return rc;
}

static int log_mark(struct dev *d, const char *name)
{
	struct log_dev *l = (struct log_dev *)d;
	pthread_mutex_lock(&l->lock);
	int rc = append_locked(l, 0, 0, DEV_LOG_MARK, NULL, name, 0);
	pthread_mutex_unlock(&l->lock);
	if (rc)
		return err_set(rc, "log %s: cannot record mark '%s'", l->path, name);
	return dev_mark(l->inner, name);
}

static struct dev *log_inner(const struct dev *d)
{
	return ((const struct log_dev *)d)->inner;
}

static void log_close(struct dev *d)
{
	struct log_dev *l = (struct log_dev *)d;
	pthread_mutex_lock(&l->lock);
	write_super_locked(l);
	pthread_mutex_unlock(&l->lock);
	fsync(l->fd);
	close(l->fd);
	dev_close(l->inner);
	pthread_mutex_destroy(&l->lock);
	free(l->path);
	free(l);
}

static const struct dev_ops log_ops = {
	.kind = "log",
	.submit = log_submit,
	.mark = log_mark,
	.inner = log_inner,
	.close = log_close,
};

static int log_opt(void *ctx, const char *name, const char *value)
{
	char **to = ctx;
	if (strcmp(name, "to") != 0)
		return err_set(-EINVAL, "log: unknown option '%s'", name);
	if (!value || !*value)
		return err_set(-EINVAL, "log: to= needs a file name");
	free(*to);
	*to = strdup(value);
	return *to ? 0 : -ENOMEM;
}

const char *const dev_log_opt_names[] = { "to", NULL };

int dev_log_open(const char *args, struct dev **out)
{
	char *inner_spec, *optstr, *to = NULL;
	if (dev_split_spec(args, dev_log_opt_names, &inner_spec, &optstr))
		return err_set(-ENOMEM, "out of memory");
	int rc = opts_parse(optstr, log_opt, &to);
	free(optstr);
	if (!rc && !to)
		rc = err_set(-EINVAL, "log: missing to=LOGFILE (log:OTHER,to=LOGFILE)");
	if (rc)
		goto fail_spec;
	struct log_dev *l = calloc(1, sizeof(*l));
	if (!l) {
		rc = err_set(-ENOMEM, "out of memory");
		goto fail_spec;
	}
	l->path = to;
	to = NULL;
	/* The device first: a bad spec must not create, or truncate, the
	 * log file. */
	rc = dev_open(inner_spec, &l->inner);
	if (rc)
		goto fail_l;
	l->fd = open(l->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (l->fd < 0) {
		rc = err_set(-errno, "log: cannot create '%s': %s", l->path, strerror(errno));
		goto fail_open;
	}
	pthread_mutex_init(&l->lock, NULL);
	l->next_off = LW_SECTOR;
	rc = write_super_locked(l);
	if (rc) {
		rc = err_set(rc, "log: cannot write '%s': %s", l->path, strerror(-rc));
		goto fail_inner;
	}
	struct dev_geometry g;
	dev_geometry_get(l->inner, &g);
	rc = dev_init(&l->dev, &log_ops, &g);
	if (rc)
		goto fail_inner;
	free(inner_spec);
	*out = &l->dev;
	return 0;

fail_inner:
	pthread_mutex_destroy(&l->lock);
	close(l->fd);
fail_open:
	dev_close(l->inner);
fail_l:
	free(l->path);
	free(l);
fail_spec:
	free(to);
	free(inner_spec);
	return rc;
}

/* ---- reader ---- */

struct dev_log_reader {
	char *path;
	int fd;
	uint32_t ss;        /* sectorsize */
	uint64_t count;     /* from the super */
	uint64_t idx;       /* next entry */
	uint64_t off;       /* its byte offset */
	unsigned char *hdr; /* ss bytes */
	void *data;
	size_t data_cap;
};

int dev_log_reader_open(const char *logfile, struct dev_log_reader **out)
{
	*out = NULL;
	int fd = open(logfile, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "log reader: cannot open '%s': %s", logfile, strerror(errno));
	unsigned char sb[sizeof(struct lw_super)];
	int rc = pread_all(fd, sb, sizeof(sb), 0);
	if (rc <= 0) {
		close(fd);
		return err_set(rc ? rc : -EINVAL, "log reader: '%s' is too short for a log super block", logfile);
	}
	uint64_t magic = get_le64(sb), version = get_le64(sb + 8);
	uint32_t ss = get_le32(sb + 24);
	if (magic != LW_MAGIC) {
		close(fd);
		return err_set(-EINVAL, "log reader: '%s' is not a dm-log-writes log (magic 0x%" PRIx64 ")",
			       logfile, magic);
	}
	if (version != LW_VERSION) {
		close(fd);
		return err_set(-EINVAL, "log reader: '%s' has version %" PRIu64 ", want 1", logfile, version);
	}
	if (ss < 512 || ss > 65536 || (ss & (ss - 1))) {
		close(fd);
		return err_set(-EINVAL, "log reader: '%s' has a bad sector size %u", logfile, ss);
	}
	struct dev_log_reader *r = calloc(1, sizeof(*r));
	if (r)
		r->hdr = malloc(ss);
	if (r)
		r->path = strdup(logfile);
	if (!r || !r->hdr || !r->path) {
		if (r) {
			free(r->hdr);
			free(r->path);
		}
		free(r);
		close(fd);
		return err_set(-ENOMEM, "out of memory");
	}
	r->fd = fd;
	r->ss = ss;
	r->count = get_le64(sb + 16);
	r->idx = 0;
	r->off = ss;
	*out = r;
	return 0;
}

void dev_log_reader_close(struct dev_log_reader *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->hdr);
	free(r->data);
	free(r->path);
	free(r);
}

uint64_t dev_log_reader_count(const struct dev_log_reader *r)
{
	return r->count;
}

uint32_t dev_log_reader_sector_size(const struct dev_log_reader *r)
{
	return r->ss;
}

int dev_log_reader_rewind(struct dev_log_reader *r)
{
	r->idx = 0;
	r->off = r->ss;
	return 0;
}

static int reader_next(struct dev_log_reader *r, struct dev_log_entry *e, bool want_data)
{
	if (r->idx >= r->count)
		return 0;
	int rc = pread_all(r->fd, r->hdr, r->ss, r->off);
	if (rc <= 0)
		return err_set(rc ? rc : -EIO, "log %s: entry %" PRIu64 " of %" PRIu64 " is missing (truncated log)",
			       r->path, r->idx, r->count);
	uint64_t sector = get_le64(r->hdr), nr = get_le64(r->hdr + 8), flags = get_le64(r->hdr + 16),
		 dlen = get_le64(r->hdr + 24);
	if (!flags && !nr)
		return err_set(-EIO, "log %s: entry %" PRIu64 " is empty (corrupt log)", r->path, r->idx);
	if (flags & ~(uint64_t)0x1f)
		return err_set(-EIO, "log %s: entry %" PRIu64 " has unknown flags 0x%" PRIx64, r->path, r->idx,
			       flags);
	uint64_t unit = r->ss / DEV_SECTOR_SIZE;
	e->index = r->idx;
	e->sector = sector * unit;
	e->nr_sectors = nr * unit;
	e->flags = flags;
	e->issued = r->idx;
	e->data = NULL;
	e->data_len = 0;
	if ((flags & DEV_LOG_FLUSH) && !(flags & DEV_LOG_MARK) && get_le64(r->hdr + LW_ISSUE_OFF) == LW_ISSUE_MAGIC) {
		uint64_t issued = get_le64(r->hdr + LW_ISSUE_OFF + 8);
		if (issued > r->idx)
			return err_set(-EIO, "log %s: flush entry %" PRIu64 " issued after entry %" PRIu64 " (corrupt log)",
				       r->path, r->idx, issued);
		e->issued = issued;
	}
	uint64_t data_bytes = (flags & DEV_LOG_DISCARD) ? 0 : nr * r->ss;
	if (flags & DEV_LOG_MARK) {
		if (dlen > r->ss - sizeof(struct lw_entry))
			return err_set(-EIO, "log %s: mark entry %" PRIu64 " is too long", r->path, r->idx);
		e->data = r->hdr + sizeof(struct lw_entry);
		e->data_len = dlen;
	} else if (data_bytes && want_data) {
		if (data_bytes > (1ull << 30))
			return err_set(-EIO, "log %s: entry %" PRIu64 " is implausibly large", r->path, r->idx);
		if (data_bytes > r->data_cap) {
			void *p = realloc(r->data, data_bytes);
			if (!p)
				return err_set(-ENOMEM, "out of memory");
			r->data = p;
			r->data_cap = data_bytes;
		}
		rc = pread_all(r->fd, r->data, data_bytes, r->off + r->ss);
		if (rc <= 0)
			return err_set(rc ? rc : -EIO, "log %s: data of entry %" PRIu64 " is truncated", r->path,
				       r->idx);
		e->data = r->data;
		e->data_len = data_bytes;
	}
	r->off += r->ss + data_bytes;
	r->idx++;
	return 1;
}

int dev_log_reader_next(struct dev_log_reader *r, struct dev_log_entry *e)
{
	return reader_next(r, e, true);
}

int dev_log_replay(const char *logfile, uint64_t upto, struct dev *target)
{
	struct dev_log_reader *r;
	int rc = dev_log_reader_open(logfile, &r);
	if (rc)
		return rc;
	struct dev_log_entry e;
	while (r->idx < upto && (rc = reader_next(r, &e, true)) == 1) {
		if (e.flags & DEV_LOG_MARK) {
			char text[LW_SECTOR];
			size_t n = e.data_len < sizeof(text) - 1 ? (size_t)e.data_len : sizeof(text) - 1;
			memcpy(text, e.data, n);
			text[n] = '\0';
			rc = dev_mark(target, text);
		} else if (e.flags & DEV_LOG_DISCARD) {
			rc = dev_rw_sync(target, DEV_OP_DISCARD, e.sector, (uint32_t)e.nr_sectors, NULL, 0);
		} else if (e.nr_sectors) {
			unsigned f = 0;
			if (e.flags & DEV_LOG_FLUSH)
				f |= DEV_IO_PREFLUSH;
			if (e.flags & DEV_LOG_FUA)
				f |= DEV_IO_FUA;
			rc = dev_rw_sync(target, DEV_OP_WRITE, e.sector, (uint32_t)e.nr_sectors, (void *)e.data, f);
		} else if (e.flags & DEV_LOG_FLUSH) {
			rc = dev_flush_sync(target);
		}
		if (rc) {
			rc = err_set(rc, "log %s: replaying entry %" PRIu64 " onto %s: %s", logfile, e.index,
				     dev_spec(target), strerror(-rc));
			break;
		}
	}
	dev_log_reader_close(r);
	return rc < 0 ? rc : 0;
}

int dev_log_crash_points(const char *logfile, uint64_t **points, size_t *n)
{
	*points = NULL;
	*n = 0;
	struct dev_log_reader *r;
	int rc = dev_log_reader_open(logfile, &r);
	if (rc)
		return rc;
	size_t cap = 16, cnt = 0;
	uint64_t *p = malloc(cap * sizeof(*p));
	struct dev_log_entry e;
	while (p && (rc = reader_next(r, &e, false)) == 1) {
		if (!(e.flags & (DEV_LOG_FLUSH | DEV_LOG_FUA | DEV_LOG_MARK)))
			continue;
		if (cnt == cap) {
			uint64_t *q = realloc(p, 2 * cap * sizeof(*p));
			if (!q) {
				free(p);
				p = NULL;
				break;
			}
			p = q;
			cap *= 2;
		}
		p[cnt++] = e.index + 1;
	}
	if (!p) {
		dev_log_reader_close(r);
		return err_set(-ENOMEM, "out of memory");
	}
	if (rc < 0) {
		free(p);
		dev_log_reader_close(r);
		return rc;
	}
	if (cnt == 0 || p[cnt - 1] != r->count) {
		if (cnt == cap) {
			uint64_t *q = realloc(p, (cap + 1) * sizeof(*p));
			if (!q) {
				free(p);
				dev_log_reader_close(r);
				return err_set(-ENOMEM, "out of memory");
			}
			p = q;
		}
		p[cnt++] = r->count;
	}
	dev_log_reader_close(r);
	*points = p;
	*n = cnt;
	return 0;
}
