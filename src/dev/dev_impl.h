/* Private to src/dev: the ops table every device kind implements, the common
 * struct dev header, and helpers shared by the kinds (spec splitting, the
 * sparse in-memory store used by mem: and sim:).
 *
 * Life of a command: dev_submit() (dev.c) validates it, checks the queue depth
 * and device state, counts it as outstanding and calls ops->submit(). The kind
 * later (or immediately) calls dev_complete(), which stops counting it against
 * the queue depth, calls io->done() and then lets dev_close() go on if it was
 * the last one. Kinds never call io->done() themselves.
 */
#ifndef NOSTALL_DEV_IMPL_H
#define NOSTALL_DEV_IMPL_H

#include "dev/dev.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct dev_ops {
	const char *kind; /* "mem", "file", ... */
	/* Start a command that dev.c has validated (range, alignment, size,
	 * depth). Return 0 when it was accepted: dev_complete() will be called
	 * exactly once for it (possibly before submit returns). Return a
	 * negative errno to refuse it: then dev_complete() must not be called. */
	int (*submit)(struct dev *d, struct dev_io *io);
	/* Optional: start the commands submit held back (DEV_IO_MORE). NULL:
	 * the kind starts every command in submit, and never sees the flag. */
	void (*commit)(struct dev *d);
	/* Optional: record a named mark (log:), or pass it to the inner device
	 * (wrappers). NULL means marks are ignored. */
	int (*mark)(struct dev *d, const char *name);
	/* Optional: the wrapped device (log:, fault:), for lookups through
	 * wrappers such as dev_sim_stats(). */
	struct dev *(*inner)(const struct dev *d);
	/* Optional: dev_lock for this kind (wrappers are walked through by
	 * dev_lock itself). NULL: nothing to guard. */
	int (*lock)(struct dev *d, enum dev_lock_mode mode);
	/* Free everything, including the container of *d. Called by dev_close()
	 * once no command is outstanding; dev.c has already torn down its own
	 * fields of struct dev. */
	void (*close)(struct dev *d);
};

/* Common header, embedded as the first member of every kind's struct. */
struct dev {
	const struct dev_ops *ops;
	struct dev_geometry geo;
	char *spec; /* set by dev_open() */

	/* Protected by lock. */
	pthread_mutex_t lock;
	pthread_cond_t idle_cond; /* signalled when active drops to 0 while closing */
	unsigned inflight;        /* accepted, done() not yet started: counts against depth */
	unsigned active;          /* accepted, done() not yet returned */
	bool closing;
};

/* Initialise the common header (ops, geometry, lock). Returns 0 or -errno. */
int dev_init(struct dev *d, const struct dev_ops *ops, const struct dev_geometry *g);
/* Undo dev_init() when a kind's open fails after calling it. */
void dev_fini(struct dev *d);
/* Finish a command accepted by ops->submit (see above). */
void dev_complete(struct dev *d, struct dev_io *io, int err);

/* The kinds' open functions: `args` is the spec after "kind:". On failure
 * they return a negative errno with err_set() called. */
int dev_mem_open(const char *args, struct dev **out);
int dev_file_open(const char *args, struct dev **out);
int dev_sim_open(const char *args, struct dev **out);
int dev_log_open(const char *args, struct dev **out);
int dev_fault_open(const char *args, struct dev **out);
int dev_nbd_open(const char *args, struct dev **out);

/* file: devices' dev_lock (dev_file_lock.c): flock(2) on fd (the device's
 * own open of path) in `mode`; an exclusive lock also checks that the kernel
 * has not mounted the medium (a block device is claimed with O_EXCL: the
 * claim's descriptor is *claim_fd, -1 when none, closed when the lock is
 * dropped or changed). */
int dev_file_lock(int fd, const char *path, bool is_bdev, enum dev_lock_mode mode, int *claim_fd);

/* file: devices' options (dev_file_opts.c). */
struct dev_file_opts {
	uint64_t depth;
	int direct; /* -1 unspecified */
	uint64_t size;
	uint64_t flush_every;
	int inline_io;
};
extern const char *const dev_file_opt_names[]; /* NULL-terminated */
/* The wrappers' own option names (their right-end rule, dev_split_spec). */
extern const char *const dev_log_opt_names[];
extern const char *const dev_fault_opt_names[];
/* Defaults, then the "name=value,..." string (NULL: none). 0 or -EINVAL
 * with err_set() naming the option. */
int dev_file_opts_parse(const char *optstr, struct dev_file_opts *o);
/* queue/<attr> of the disk holding `rdev` (a partition looks at its parent). */
bool dev_file_queue_attr(dev_t rdev, const char *attr, uint64_t *out);

/* Split "INNER,opt=v,opt=v" for a wrapper kind or a kind whose first field
 * may contain commas (file paths). Items are taken from the right end while
 * their name (the text before '=') is in `names` (NULL-terminated) and has not
 * been taken yet; the first item that fails either test, and everything left
 * of it, is the head. *head and *opts are malloc'ed ("" when empty); *opts is
 * the taken items in their original order, comma-separated. */
int dev_split_spec(const char *args, const char *const *names, char **head, char **opts);

/* ---- sparse store: data of mem: and sim: devices ----
 * Either RAM allocated in 64 KiB chunks on first write (reads of never
 * written chunks return zeroes), or a backing file accessed with pread/pwrite.
 * Thread-safe (internal lock); overlapping concurrent writes land in some
 * order, as on real hardware. */
struct dev_store;
int dev_store_create(uint64_t size_bytes, struct dev_store **out);
/* Backing file: created if missing, extended (sparse) to size_bytes if
 * shorter. */
int dev_store_create_file(const char *path, uint64_t size_bytes, struct dev_store **out);
void dev_store_destroy(struct dev_store *s);
/* dev_lock of a file-backed store (dev_file_lock on its file); 0 for RAM. */
int dev_store_lock(struct dev_store *s, enum dev_lock_mode mode);
int dev_store_read(struct dev_store *s, uint64_t off, void *buf, size_t len);
int dev_store_write(struct dev_store *s, uint64_t off, const void *buf, size_t len);
/* Zero the range (frees whole RAM chunks / punches holes in files). */
int dev_store_discard(struct dev_store *s, uint64_t off, uint64_t len);
/* Perform a READ/WRITE/DISCARD command's data transfer. */
int dev_store_io(struct dev_store *s, const struct dev_io *io);
/* Bytes of RAM allocated for data (0 for file-backed stores). */
uint64_t dev_store_allocated(struct dev_store *s);

#endif
