/* Devices: the bottom of the stack.
 *
 * A device is opened from a spec string and then takes asynchronous I/O
 * commands (struct dev_io). Every device kind (file, mem, sim, log, fault)
 * implements the same ops table (dev_impl.h, private to src/dev); users only
 * see this header.
 *
 * Spec strings (see docs/devices.md; dev_spec_parse says what one is):
 *   file:PATH[,depth=N][,direct=0|1][,flush_every=SIZE][,inline_io=0|1]  file or block device, io_uring
 *   mem:SIZE                              RAM
 *   sim:hdd|ssd|ssd-nq[,size=..][,scale=..][,depth=..][,wcache=0|1][,file=PATH]
 *   log:OTHER,to=LOGFILE                  records writes/flushes/marks (dm-log-writes format)
 *   fault:OTHER,RULES                     injects errors
 *   nbd:URI[,depth=N][,timeout=S][,conns=N]  an NBD export (libnbd)
 * For the wrapping kinds (log, fault) OTHER is itself a spec. The wrapper's own
 * options are taken from the RIGHT end: trailing comma-separated items whose
 * name is one of the wrapper's option names are the wrapper's, stopping at the
 * first item that is not, or whose name was already taken (a repeated name), or
 * at an empty item (",,", an explicit separator, dropped); everything left of
 * that is OTHER. So "log:sim:hdd,scale=0.1,to=/tmp/x.log" wraps "sim:hdd,scale=0.1",
 * and "fault:fault:mem:1M,op=read,,op=write" nests two rules. file: splits its
 * PATH from its options the same way. Values cannot contain commas.
 *
 * Concurrency contract:
 * - dev_submit() may be called from any thread, concurrently, as long as no
 *   more than geometry.queue_depth commands are outstanding (the block layer
 *   enforces this; going beyond is -EBUSY, never a hang).
 * - io->done() is called exactly once per accepted command, from a device
 *   thread or (for synchronous kinds such as mem) from inside dev_submit()
 *   itself. Callers therefore must not hold, while calling dev_submit(), a
 *   lock that their done() callback takes.
 * - A command that fails completes with a negative errno in done()'s `err`
 *   (-EIO, -ENOSPC, ...); dev_submit() itself only fails (returning a negative
 *   errno, done() not called) for invalid commands: out of range, misaligned,
 *   too large, queue over depth, device closed.
 * - dev_close() waits for outstanding commands to complete first (every done()
 *   has returned); it must not be called from a done() callback.
 * - Validation failures of dev_submit: -ERANGE (beyond the end), -EINVAL
 *   (empty, larger than max_hw_sectors, not a multiple of logical_block_size,
 *   NULL buf, unknown op or flag), -EBUSY (queue_depth commands outstanding),
 *   -ESHUTDOWN (dev_close has begun), each with an err_set() message.
 */
#ifndef NOSTALL_DEV_H
#define NOSTALL_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEV_SECTOR_SHIFT 9
#define DEV_SECTOR_SIZE 512u

struct dev;

enum dev_op {
	DEV_OP_READ = 0,
	DEV_OP_WRITE = 1,
	DEV_OP_FLUSH = 2,   /* drain the volatile write cache; sector/len ignored */
	DEV_OP_DISCARD = 3, /* data may read back as zeroes or as old data */
};

/* Command flags. */
enum {
	DEV_IO_FUA = 1u << 0,      /* WRITE: on stable storage when done() is called */
	DEV_IO_PREFLUSH = 1u << 1, /* WRITE: flush the cache before writing */
	/* A hint: the submitter (the block queue) has nothing else queued or
	 * at the device. A device may then serve the command synchronously in
	 * dev_submit, done() included (file:, docs/devices.md "inline"). */
	DEV_IO_ALONE = 1u << 2,
	/* More commands follow at once (the block queue's dispatch pass): a
	 * device may hold this one back and start it with the next command
	 * without the flag or at dev_commit(), which the submitter must call.
	 * file: then makes one io_uring_enter (one doorbell of a virtio disk,
	 * a VM exit) for the batch instead of one per command. Devices without
	 * a commit op never see the flag (dev_submit clears it). */
	DEV_IO_MORE = 1u << 3,
};

struct dev_io {
	/* Filled by the submitter. */
	enum dev_op op;
	unsigned flags;
	uint64_t sector;     /* in 512-byte sectors */
	uint32_t nr_sectors; /* 0 for FLUSH */
	void *buf;           /* nr_sectors * 512 bytes; for O_DIRECT devices it is
			      * copied through an aligned bounce buffer if unaligned */
	void (*done)(struct dev_io *io, int err);
	void *priv;          /* for the submitter */
	/* Owned by the device while the command is outstanding. */
	void *dev_priv;
	struct dev_io *dev_next;
};

struct dev_geometry {
	uint64_t size_bytes;      /* multiple of 512 */
	bool rotational;
	unsigned queue_depth;     /* commands the device accepts at once; 1 = non-queuing */
	unsigned max_hw_sectors;  /* largest command, in sectors */
	unsigned logical_block_size; /* 512 or 4096 */
	bool has_write_cache;     /* FLUSH/FUA matter */
};

/* Open a device from its spec. On failure returns a negative errno and a
 * message in err_last() ("sim: unknown model 'floppy'"). */
int dev_open(const char *spec, struct dev **out);
/* True when s starts with a known device kind and a colon ("mem:64M",
 * "nbd://..."): callers that take "an image path or a spec" use it, so the
 * list of kinds lives here only. */
bool dev_spec_has_kind(const char *s);

/* What a spec is, read without opening anything (dev_spec_parse): the one
 * grammar and list of kinds is dev.c's, so callers ask here instead of
 * matching text ("sim:", "file:"). The public face is nostall_dev_spec_info
 * (include/nostall/nostall.h). */
enum dev_kind {
	DEV_KIND_PATH = 0, /* a bare path: callers open it as file:PATH */
	DEV_KIND_FILE,
	DEV_KIND_MEM,
	DEV_KIND_SIM,
	DEV_KIND_LOG,
	DEV_KIND_FAULT,
	DEV_KIND_NBD,
};
struct dev_spec_info {
	enum dev_kind kind;  /* the outermost kind */
	enum dev_kind base;  /* the kind under every log:/fault: wrapper */
	bool has_kind;       /* the spec starts with KIND: (else a bare path) */
	bool plain_file;     /* a bare path or file:PATH, unwrapped: a file that may
			      * be created with a size (nostall mkfs IMAGE SIZE) */
	bool simulated;      /* base is sim: (modelled timing) */
	bool in_memory;      /* base keeps the data in RAM only, gone at close
			      * (mem:, sim: without file=) */
	const char *file;    /* the file or block device the spec names (PATH of a
			      * bare path or file:PATH, sim:'s file=), under any
			      * wrappers: points INTO spec, file_len bytes, not
			      * NUL-terminated; NULL when none (mem:, nbd:) */
	size_t file_len;
};
/* 0, or -EINVAL with err_set() for a malformed spec (empty; a wrapper's
 * inner spec of no known kind or empty; "KIND:" without arguments). A
 * string of no known kind is a bare path (kind DEV_KIND_PATH). On failure
 * the fields read so far stay filled (kind, has_kind). The kinds' own
 * options are not checked: dev_open does that. */
int dev_spec_parse(const char *spec, struct dev_spec_info *out);
/* "file", "mem", "sim", "log", "fault", "nbd" ("file" for DEV_KIND_PATH). */
const char *dev_kind_name(enum dev_kind k);
/* Waits for outstanding commands, then frees. NULL is a no-op. */
void dev_close(struct dev *d);

void dev_geometry_get(const struct dev *d, struct dev_geometry *g);
/* The spec the device was opened with (for reports). */
const char *dev_spec(const struct dev *d);

/* Queue one command (see the contract above). */
int dev_submit(struct dev *d, struct dev_io *io);
/* Start every command held back by DEV_IO_MORE. */
void dev_commit(struct dev *d);

/* Synchronous helpers built on dev_submit (they wait for done()). dev_rw_sync
 * splits READ/WRITE larger than max_hw_sectors into several commands issued
 * one after the other (PREFLUSH on the first, FUA on each), retries while the
 * queue is full (-EBUSY), and returns the first error. For FLUSH, sector,
 * nr_sectors and buf are ignored. */
int dev_rw_sync(struct dev *d, enum dev_op op, uint64_t sector, uint32_t nr_sectors,
		void *buf, unsigned flags);
int dev_flush_sync(struct dev *d);

/* Guard the medium against other users while this device is open: a
 * filesystem that writes takes it exclusively (DEV_LOCK_EXCL), one that only
 * reads takes it shared (DEV_LOCK_SHARED), DEV_LOCK_NONE lets go. Never
 * waits. file: flock(2)s its file or block device - another process, or
 * another open of the same file in this one, holding a conflicting lock
 * gives -EBUSY - and an exclusive lock also refuses a medium the kernel has
 * mounted (a regular file through a loop device, or a block device it holds:
 * -EBUSY naming the mount), as e2fsck and mke2fs do. Wrappers (log:,
 * fault:) pass it to their inner device; in-memory kinds have nothing to
 * guard (0). A refused request leaves the device unlocked (flock(2) may drop
 * a held lock while converting it). Closing the device lets go too. */
enum dev_lock_mode { DEV_LOCK_NONE = 0, DEV_LOCK_SHARED, DEV_LOCK_EXCL };
int dev_lock(struct dev *d, enum dev_lock_mode mode);

/* Named marks ("fsync returned", "commit 17") placed by upper layers between
 * commands. Recorded by log: devices (passed down through wrappers), ignored by
 * the others. The mark is ordered after every command whose done() has already
 * been called and before every command submitted after dev_mark returns. */
int dev_mark(struct dev *d, const char *name);

/* ---- file: accounting (tests and reports) ---- */
struct dev_file_stats {
	uint64_t written;         /* bytes of writes completed */
	uint64_t unflushed;       /* of which no finished flush covers yet */
	uint64_t bg_flushes;      /* background flushes finished (flush_every=) */
	uint64_t inline_ios;      /* commands served in the submitter (inline_io=) */
	uint64_t enters;          /* io_uring submissions (one per batch: DEV_IO_MORE) */
};
/* Looks through log: and fault: wrappers; -EINVAL if there is no file: device. */
int dev_file_stats(const struct dev *d, struct dev_file_stats *out);
/* The path in the arguments of a file: spec (what follows "file:"), its
 * trailing options taken off by the same rule dev_open uses
 * ("/img,direct=0" -> "/img"). Caller frees; NULL on ENOMEM. */
char *dev_file_spec_path(const char *args);

/* ---- sim: accounting (for tests and reports; see docs/devices.md) ----
 * All times are modelled device time in ns, i.e. NOT multiplied by scale. */
struct dev_sim_stats {
	uint64_t commands;        /* host commands completed */
	uint64_t reads, writes, flushes, discards;
	uint64_t cached_writes;   /* writes completed from the write cache (wcache=1) */
	uint64_t destages;        /* media writes destaging the write cache */
	uint64_t modelled_ns;     /* sum of modelled service times of all media
				   * operations, cache transfers and flushes */
	uint64_t seek_ns, rotate_ns, transfer_ns; /* hdd components, summed */
	/* The last completed host command: */
	uint64_t last_service_ns; /* start of service to completion */
	uint64_t last_seek_ns, last_rotate_ns, last_transfer_ns;
	uint64_t last_wait_ns;    /* arrival to start of service (queueing) */
	uint64_t last_arrive_ns, last_end_ns; /* its arrival and completion (model clock) */
};
/* Looks through log: and fault: wrappers; -EINVAL if there is no sim: device. */
int dev_sim_stats(const struct dev *d, struct dev_sim_stats *out);
/* stats.modelled_ns, or 0 for a device that is not (or wraps no) sim:. */
uint64_t dev_sim_modelled_ns(const struct dev *d);
/* Freeze (true) or thaw (false) the model clock: while frozen nothing
 * completes and every command submitted arrives at the same model time, so a
 * test can queue a batch that the drive sees at once, whatever the host's
 * speed. Looks through wrappers; -EINVAL if there is no sim: device. */
int dev_sim_freeze(struct dev *d, bool freeze);
/* The configured media transfer rate at `sector` in bytes/s (hdd: its zone;
 * ssd, ssd-nq: the link). */
int dev_sim_media_bps(const struct dev *d, uint64_t sector, double *bps);

/* ---- fault: accounting ---- */
/* Commands failed so far by the outermost fault: device at or under d
 * (looking through log:), or 0. */
uint64_t dev_fault_injected(const struct dev *d);

/* ---- log: device reader (dm-log-writes format, see docs/devices.md) ---- */

enum {
	DEV_LOG_FLUSH = 1,
	DEV_LOG_FUA = 2,
	DEV_LOG_DISCARD = 4,
	DEV_LOG_MARK = 8,
};

struct dev_log_reader;

struct dev_log_entry {
	uint64_t index;      /* 0-based entry number */
	uint64_t sector;     /* in 512-byte sectors (as dm-log-writes records it) */
	uint64_t nr_sectors;
	uint64_t flags;      /* DEV_LOG_* */
	/* A FLUSH entry (empty flush or PREFLUSH write) covers entries
	 * [0, issued): those logged when it was issued (docs/devices.md "log:");
	 * = index for other entries and for logs that do not record it. */
	uint64_t issued;
	const void *data;    /* write payload (nr_sectors*512 bytes), or mark text; valid until next call */
	uint64_t data_len;
};

int dev_log_reader_open(const char *logfile, struct dev_log_reader **out);
void dev_log_reader_close(struct dev_log_reader *r);
uint64_t dev_log_reader_count(const struct dev_log_reader *r);
uint32_t dev_log_reader_sector_size(const struct dev_log_reader *r);
/* Next entry; returns 1 with *e filled, 0 at the end, negative errno on a
 * corrupt log. */
int dev_log_reader_next(struct dev_log_reader *r, struct dev_log_entry *e);
int dev_log_reader_rewind(struct dev_log_reader *r);

/* Replay entries [0, upto) onto `target` (writes and discards applied in
 * order, flushes passed on as FLUSH / PREFLUSH, FUA kept, marks passed on with
 * dev_mark). upto beyond the count (e.g. UINT64_MAX) replays everything.
 * Returns 0 or a negative errno. */
int dev_log_replay(const char *logfile, uint64_t upto, struct dev *target);
/* The crash points that respect flush ordering: index i is a valid prefix end
 * when a crash after entry i-1 is possible given that everything before the
 * last FLUSH entry in [0,i) is durable. Every prefix is valid for a volatile
 * write cache model; this returns the indices just after each FLUSH or FUA
 * entry and each MARK, in order, plus the total count, as a malloc'ed array. */
int dev_log_crash_points(const char *logfile, uint64_t **points, size_t *n);

#endif
