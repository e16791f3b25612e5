/* nostall bench fs: filesystem workloads through the library API
 * (include/nostall/nostall.h), each beside a floor measured on the raw
 * device in the same run (docs/bench-fs.md).
 *
 * bench_fs.c holds the front-end, the device and mount of each run and the
 * output; bench_fs_load.c the workloads and the raw-device floors.
 */
#ifndef NOSTALL_TOOLS_BENCH_FS_H
#define NOSTALL_TOOLS_BENCH_FS_H

#include <nostall/nostall.h>

#include "dev/dev.h"
#include "extfs/mkfs/mkfs.h"


#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FSB_MiB (1024ull * 1024)
#define FSB_MAX_FIELDS 18

/* fsync-under-stream's cache unless -o gives one: a 2009 desktop's page
 * cache (about 1 GiB of 2 GiB RAM; the cache's dirty limit is 20 % of it,
 * as 2.6.30's dirty_ratio: ~200 MiB dirty), the budget bench repro gives
 * sim: devices. With the mount's own default (64 MiB, ~13 MiB dirty) a
 * host that absorbs GB/s sees no ordered stall, and on sim:hdd the
 * streamer, throttled to the disk, keeps every mode's fsync behind its
 * writes: the workload would measure nothing of the article.
 * docs/bench-fs.md. */
#define FSB_FUS_CACHE "1G"

/* What a run measures, scaled to the device (fsb_sizes_pick). */
struct fsb_sizes {
	unsigned jens_n;          /* open/append/fsync/close iterations */
	uint64_t stream_bytes;    /* the streamed file */
	unsigned creates_n;       /* small files */
	unsigned creates_dirs;    /* spread over this many directories */
	unsigned creates_bytes;   /* each file's size */
	unsigned fus_idle;        /* fsyncs measured without the streamer */
	double fus_seconds;       /* fsync-under-stream measurement time */
	uint64_t fus_file_bytes;  /* the streamer wraps inside a file this big */
	uint64_t fs_bytes;        /* filesystem size made by mkfs */
	unsigned reps;            /* stream and jens: alternating fs/raw repetitions */
	/* --mount only: */
	uint64_t readback_bytes;  /* readback: written + fsynced, read back */
	unsigned many_files;      /* manyfiles: this many small files ... */
	unsigned many_dirs;       /* ... in this many directories ... */
	unsigned many_bytes;      /* ... of this many bytes */
};

struct fsb {
	const char *spec;         /* device spec of every run */
	const char *user_opts;    /* -o as given (may be NULL) */
	bool json, quick, sim;
	bool mount, peers;        /* --mount, --peers (bench_fs_mount.c) */
	bool host_cache;          /* --host-cache: also the kernel through the host's cache */
	uint64_t dev_bytes;
	uint64_t cache_bytes;     /* the mount's cache= (default 64 MiB) */
	bool user_cache;          /* -o gave cache= (fsync-under-stream keeps it) */
	double seconds;           /* --seconds: fsync-under-stream time (0 = the size's default) */
	unsigned reps;            /* --reps: stream and jens repetitions (0 = the size's default) */
	struct fsb_sizes sz;
	/* --fs (one of its list at a time) and --features: the mkfs type and
	 * -O edits of every filesystem made (NULL: ext3, the type's set);
	 * fs_given: --fs or --features was given (the output names the
	 * filesystem then; without, it is what it was before the option). */
	const char *fs, *fs_features;
	bool fs_given;
};

/* One figure; NAN prints as n/a (null in JSON). A json_only figure (a
 * spread) is left out of the table. */
struct fsb_field {
	const char *name;
	double value;
	int decimals;
	bool json_only;
};

struct fsb_run {
	const char *workload;
	const char *config;       /* data mode */
	struct fsb_field f[FSB_MAX_FIELDS];
	int nf;
	char note[256];           /* printed under the table (counts, sizes) */
	char extra[256];          /* this run's own line under it, after the notes */
};

void fsb_field(struct fsb_run *r, const char *name, double v, int decimals);
void fsb_field_json(struct fsb_run *r, const char *name, double v, int decimals);

/* A run's device and mounted filesystem: fresh mkfs, then mounted with
 * data=MODE plus the user's -o. The device is opened per run and closed by
 * fsb_env_close, so raw floors can use it after the unmount. */
struct fsb_env {
	struct fsb *b;
	struct dev *dev;
	struct nostall_fs *fs;
	char opts[512];
};
int fsb_env_open(struct fsb *b, const char *mode, struct fsb_env *e);
/* fsb_env_open in two steps: the device only (raw floors can run before
 * any filesystem is made), then a fresh mkfs + mount (again after each
 * fsb_env_unmount, for repetitions). */
int fsb_env_dev_open(struct fsb *b, const char *mode, struct fsb_env *e);
int fsb_env_fresh(struct fsb_env *e);
/* The mkfs every bench filesystem gets (fsb_env_fresh; the data=journal
 * floor reads its journal's place from the same layout): 4 KiB blocks, of
 * b->fs's type with b->fs_features (checked by the front-end first). */
struct ext3_mkfs_params fsb_mkfs_params(const struct fsb *b);
/* Has b->fs (with b->fs_features) a journal? Without (ext2), runs mount
 * without data=. */
bool fsb_fs_journal(const struct fsb *b);
/* Unmount and mount again (the library's caches start cold). */
int fsb_env_remount(struct fsb_env *e);
/* Unmount (if mounted). Returns rc if already an error, else the unmount's. */
int fsb_env_unmount(struct fsb_env *e, int rc);
void fsb_env_close(struct fsb_env *e);

/* A zero-filled file of `bytes` under /tmp (path written to `path`), for a
 * file: device; the caller removes it. */
int fsb_tmpdev_make(char *path, size_t pathlen, uint64_t bytes);

/* Progress on stderr (overwritten in place). */
void fsb_progress(const struct fsb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The workloads, in the order bench fs runs and prints them; readback and
 * manyfiles run with --mount only. */
enum fsb_workload { FSB_JENS, FSB_STREAM, FSB_CREATES, FSB_FUS, FSB_READBACK, FSB_MANYFILES, FSB_NWORKLOADS };
const char *fsb_workload_name(enum fsb_workload w);

/* bench fs --mount [--peers] (bench_fs_mount.c): the selected workloads
 * (indexed by enum fsb_workload) through a FUSE mount of nostall on the
 * image file, and with peers on the kernel's ext3 and fuse2fs; b->sz is
 * picked. Returns the exit status. */
int fsb_mount_run(struct fsb *b, const bool *selected, const char *image);

/* ---- workloads (bench_fs_load.c): each fills r, 0 or a negative errno */
int fsb_jens(struct fsb *b, const char *mode, struct fsb_run *r);
int fsb_stream(struct fsb *b, const char *mode, struct fsb_run *r);
int fsb_creates(struct fsb *b, const char *mode, struct fsb_run *r);
/* creates for several mkfs types at once (b->fs each in turn, restored):
 * r[ntypes], the repetitions alternating between the types (at most 3). */
int fsb_creates_types(struct fsb *b, const char *mode, const char *const *types, int ntypes,
		      struct fsb_run *r);
int fsb_fsync_under_stream(struct fsb *b, const char *mode, struct fsb_run *r);

/* Peak resident set (VmHWM) in bytes since the last fsb_rss_reset, 0 if
 * /proc is unavailable; the reset uses /proc/self/clear_refs ("5"). */
void fsb_rss_reset(void);
uint64_t fsb_rss_peak(void);

/* ---- raw floors (bench_fs_raw.c): elapsed ns, or a negative errno */
/* Sequential transfer of `bytes` from `sector` (DEV_OP_READ or
 * DEV_OP_WRITE), 16 commands in flight; a write ends with a cache flush. */
int64_t fsb_raw_seq(struct dev *d, enum dev_op op, uint64_t sector, uint64_t bytes);
/* data=journal's floor: `bytes` written into the log (log_sector, wrapping
 * in log_bytes) and home (from home_sector), one flush per `txn` bytes. */
int64_t fsb_raw_journal(struct dev *d, uint64_t log_sector, uint64_t log_bytes, uint64_t home_sector,
			uint64_t bytes, uint64_t txn);
/* n round trips of a 4 KiB write then a cache flush, alternating between
 * two regions of the first `span` bytes. */
int64_t fsb_raw_roundtrips(struct dev *d, unsigned n, uint64_t span);

#endif
