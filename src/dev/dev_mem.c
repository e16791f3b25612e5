/* mem:SIZE — a RAM disk that completes every command inside dev_submit().
 * Also home of the sparse store shared with sim:. */
#include "dev/dev_impl.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- sparse store ---- */

#define CHUNK_SHIFT 16u                 /* 64 KiB data chunks */
#define CHUNK_SIZE (1u << CHUNK_SHIFT)
#define L1_SHIFT 14u                    /* 16384 chunks = 1 GiB per second-level table */
#define L1_ENTRIES (1u << L1_SHIFT)

struct dev_store {
	uint64_t size;
	int fd;                /* >= 0: file-backed */
	char *path;            /* the backing file (dev_store_lock's messages) */
	pthread_mutex_t lock;  /* protects the tables and chunk contents (RAM) */
	unsigned char ***top;  /* top[i][j] = chunk (i*L1_ENTRIES + j) or NULL */
	size_t ntop;
	uint64_t allocated;
};

static int store_alloc(uint64_t size, int fd, struct dev_store **out)
{
	struct dev_store *s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(-ENOMEM, "out of memory");
	s->size = size;
	s->fd = fd;
	if (fd < 0) {
		uint64_t chunks = (size + CHUNK_SIZE - 1) >> CHUNK_SHIFT;
		s->ntop = (size_t)((chunks + L1_ENTRIES - 1) >> L1_SHIFT);
		s->top = calloc(s->ntop ? s->ntop : 1, sizeof(*s->top));
		if (!s->top) {
			free(s);
			return err_set(-ENOMEM, "out of memory for a %llu-byte store",
				       (unsigned long long)size);
		}
	}
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

int dev_store_create(uint64_t size_bytes, struct dev_store **out)
{
	return store_alloc(size_bytes, -1, out);
}

int dev_store_create_file(const char *path, uint64_t size_bytes, struct dev_store **out)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(-errno, "cannot open backing file '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(-EINVAL, "backing file '%s' is not a regular file", path);
	}
	if ((uint64_t)st.st_size < size_bytes && ftruncate(fd, (off_t)size_bytes) < 0) {
		int e = errno;
		close(fd);
		return err_set(-e, "cannot extend backing file '%s': %s", path, strerror(e));
	}
	int rc = store_alloc(size_bytes, fd, out);
	if (rc) {
		close(fd);
		return rc;
	}
	(*out)->path = strdup(path); /* NULL: messages say "backing file" */
	return 0;
}

int dev_store_lock(struct dev_store *s, enum dev_lock_mode mode)
{
	int claim = -1; /* never a block device */
	return s->fd >= 0 ? dev_file_lock(s->fd, s->path ? s->path : "backing file", false, mode, &claim) : 0;
}

void dev_store_destroy(struct dev_store *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	for (size_t i = 0; i < s->ntop; i++) {
		if (!s->top[i])
			continue;
		for (size_t j = 0; j < L1_ENTRIES; j++)
			free(s->top[i][j]);
		free(s->top[i]);
	}
	free(s->top);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Chunk for `idx`; allocated (zeroed) when `create`. Caller holds s->lock. */
static unsigned char *chunk_get(struct dev_store *s, uint64_t idx, bool create)
{
	size_t t = (size_t)(idx >> L1_SHIFT), j = (size_t)(idx & (L1_ENTRIES - 1));
	if (!s->top[t]) {
		if (!create)
			return NULL;
		s->top[t] = calloc(L1_ENTRIES, sizeof(**s->top));
		if (!s->top[t])
			return NULL;
	}
	if (!s->top[t][j] && create) {
		s->top[t][j] = calloc(1, CHUNK_SIZE);
		if (s->top[t][j])
			s->allocated += CHUNK_SIZE;
	}
	return s->top[t][j];
}

static int file_rw(int fd, bool write, uint64_t off, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			if (write)
				return -EIO;
			memset(p, 0, len); /* beyond EOF of a sparse backing file */
			return 0;
		}
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int dev_store_read(struct dev_store *s, uint64_t off, void *buf, size_t len)
{
	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (s->fd >= 0)
		return file_rw(s->fd, false, off, buf, len);
	unsigned char *p = buf;
	pthread_mutex_lock(&s->lock);
	while (len) {
		size_t in = (size_t)(off & (CHUNK_SIZE - 1));
		size_t n = CHUNK_SIZE - in < len ? CHUNK_SIZE - in : len;
		unsigned char *c = chunk_get(s, off >> CHUNK_SHIFT, false);
		if (c)
			memcpy(p, c + in, n);
		else
			memset(p, 0, n);
		p += n;
		off += n;
		len -= n;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int dev_store_write(struct dev_store *s, uint64_t off, const void *buf, size_t len)
{
	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (s->fd >= 0)
		return file_rw(s->fd, true, off, (void *)buf, len);
	const unsigned char *p = buf;
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	while (len) {
		size_t in = (size_t)(off & (CHUNK_SIZE - 1));
		size_t n = CHUNK_SIZE - in < len ? CHUNK_SIZE - in : len;
		unsigned char *c = chunk_get(s, off >> CHUNK_SHIFT, true);
		if (!c) {
			rc = -ENOMEM;
			break;
		}
		memcpy(c + in, p, n);
		p += n;
		off += n;
		len -= n;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int dev_store_discard(struct dev_store *s, uint64_t off, uint64_t len)
{
	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (s->fd >= 0) {
		if (fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
			return 0;
		/* No hole punching: write zeroes. */
		static const unsigned char zero[CHUNK_SIZE];
		while (len) {
			size_t n = len < CHUNK_SIZE ? (size_t)len : CHUNK_SIZE;
			int rc = file_rw(s->fd, true, off, (void *)zero, n);
			if (rc)
				return rc;
			off += n;
			len -= n;
		}
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	while (len) {
		uint64_t idx = off >> CHUNK_SHIFT;
		size_t in = (size_t)(off & (CHUNK_SIZE - 1));
		size_t n = CHUNK_SIZE - in < len ? CHUNK_SIZE - in : (size_t)len;
		size_t t = (size_t)(idx >> L1_SHIFT), j = (size_t)(idx & (L1_ENTRIES - 1));
		unsigned char *c = s->top[t] ? s->top[t][j] : NULL;
		if (c && n == CHUNK_SIZE) {
			free(c);
			s->top[t][j] = NULL;
			s->allocated -= CHUNK_SIZE;
		} else if (c) {
			memset(c + in, 0, n);
		}
		off += n;
		len -= n;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int dev_store_io(struct dev_store *s, const struct dev_io *io)
{
	uint64_t off = io->sector << DEV_SECTOR_SHIFT;
	size_t len = (size_t)io->nr_sectors << DEV_SECTOR_SHIFT;
	switch (io->op) {
	case DEV_OP_READ:
		return dev_store_read(s, off, io->buf, len);
	case DEV_OP_WRITE:
		return dev_store_write(s, off, io->buf, len);
	case DEV_OP_DISCARD:
		return dev_store_discard(s, off, len);
	default:
		return 0;
	}
}

uint64_t dev_store_allocated(struct dev_store *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t a = s->allocated;
	pthread_mutex_unlock(&s->lock);
	return a;
}

/* ---- mem: device ---- */

struct mem_dev {
	struct dev dev; /* first */
	struct dev_store *store;
};

static int mem_submit(struct dev *d, struct dev_io *io)
{
	struct mem_dev *m = (struct mem_dev *)d;
	int rc = dev_store_io(m->store, io);
	dev_complete(d, io, rc);
	return 0;
}

static void mem_close(struct dev *d)
{
	struct mem_dev *m = (struct mem_dev *)d;
	dev_store_destroy(m->store);
	free(m);
}

static const struct dev_ops mem_ops = {
	.kind = "mem",
	.submit = mem_submit,
	.close = mem_close,
};

int dev_mem_open(const char *args, struct dev **out)
{
	uint64_t size;
	if (strchr(args, ','))
		return err_set(-EINVAL, "mem: takes only a size (mem:SIZE), got '%s'", args);
	int rc = opts_parse_size(args, &size);
	if (rc)
		return err_set(rc, "mem: bad size '%s' (use e.g. 64M, 16G)", args);
	if (size < DEV_SECTOR_SIZE || size % DEV_SECTOR_SIZE)
		return err_set(-EINVAL, "mem: size '%s' must be a positive multiple of 512 bytes", args);
	struct mem_dev *m = calloc(1, sizeof(*m));
	if (!m)
		return err_set(-ENOMEM, "out of memory");
	rc = dev_store_create(size, &m->store);
	if (rc) {
		free(m);
		return rc;
	}
	struct dev_geometry g = {
		.size_bytes = size,
		.rotational = false,
		.queue_depth = 32,
		.max_hw_sectors = 2048,
		.logical_block_size = 512,
		.has_write_cache = false,
	};
	rc = dev_init(&m->dev, &mem_ops, &g);
	if (rc) {
		dev_store_destroy(m->store);
		free(m);
		return rc;
	}
	*out = &m->dev;
	return 0;
}
