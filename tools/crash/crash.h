/* nostall crashtest: the crash-consistency checker (docs/crashtest.md).
 *
 * One job = one (data mode, block size, workload, seed):
 *   job.c       builds a base image (mkfs, free space filled with a garbage
 *               pattern), records the workload through the library on
 *               log:mem: with a mark before every operation and after every
 *               fsync/sync return, then checks the crash states;
 *   workload.c  the nine workloads, written against a driver that performs
 *               each operation on the filesystem (or nothing, in a dry run)
 *               and records it in the model;
 *   model.c     the oracle: the operations as events, and an evaluator that
 *               replays them up to a crash point (what may be on disk, what
 *               must be);
 *   states.c    the recording read back: flush epochs, and the crash states
 *               (prefixes, random subsets of the in-flight writes, torn
 *               sector writes) as descriptors, built onto a mem: device;
 *   check.c     recovery (nostall's journal replay, orphans) and the checks,
 *               with e2fsck as the independent oracle on a sample;
 *   report.c    tables, JSON, kept states; main.c the command line and the
 *               worker processes.
 * Everything of one job runs in one (forked) process and one thread, apart
 * from the library's own threads.
 */
#ifndef NOSTALL_TOOLS_CRASH_H
#define NOSTALL_TOOLS_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct dev;
struct nostall_fs;

/* ------------------------------------------------------------ constants */

/* Every inode the workload creates has uid CRASH_UID_BASE + its object id
 * (the thread's credentials at creation), so a crash state's inode tells
 * which object it is, atomically with its creation. */
#define CRASH_UID_BASE 40000u
/* Object id of the garbage that fills the free space of the base image. */
#define CRASH_OBJ_GARBAGE 0xfffeu
#define CRASH_OBJ_MAX 0xfff0u
/* Image size: small (every state is a full copy) but room for every
 * workload; the aged workloads (fsx, fsstress: tens of thousands of
 * operations on a filesystem ~90 % full) get a bigger one. The size of the
 * current job's images (crash_wl_image_set): a job runs alone in its
 * process, so one variable serves every part of it. */
#define CRASH_IMAGE_BYTES_DEFAULT (8ull << 20)
#define CRASH_IMAGE_BYTES_AGED (32ull << 20)
extern uint64_t crash_image_bytes;
#define CRASH_IMAGE_BYTES crash_image_bytes

/* The data pattern: every 8-byte word (little-endian) a write puts at file
 * offset off says who wrote it: object id (16 bits, never 0), the object's
 * write number (16 bits), off / 8 (32 bits). Never zero, so a zero word is a
 * hole (or unwritten data), and a word from another file, another offset or
 * the garbage fill is recognisable. Workload offsets and sizes are multiples
 * of 8. */
static inline uint64_t crash_pat(unsigned obj, unsigned seq, uint64_t off)
{
	return (uint64_t)(obj & 0xffff) << 48 | (uint64_t)(seq & 0xffff) << 32 | (uint32_t)(off >> 3);
}

/* ------------------------------------------------------------ kinds */

enum crash_kind {
	CK_LOST_FSYNC,  /* (1) something a completed fsync/fsyncdir/sync persisted is missing */
	CK_STALE_DATA,  /* (2) a file byte that is neither data written to it nor zero */
	CK_TOO_LONG,    /* (3) a file longer than the data written to it */
	CK_RENAME,      /* (4) a renamed name points to neither file, or to a half-written one */
	CK_FSCK,        /* e2fsck -fn not clean after recovery (or a link count off) */
	CK_RECOVERY,    /* nostall's recovery differs from e2fsck's (or fails) */
	/* The kinds of the recovery and eio-loop workloads (wl_*.c,
	 * docs/crashtest-workloads.md); shown only when the run has them. */
	CK_REC_INTERRUPTED, /* an interrupted recovery, recovered again, differs from a clean one */
	CK_REC_IDEMPOTENT,  /* recovering a recovered image changes it */
	CK_REC_E2FSCK,      /* e2fsck's recovery of an interrupted recovery differs from nostall's */
	CK_EIO_EROFS,       /* after the journal aborted, a change succeeded (-EROFS not sticky) */
	CK_NR
};
extern const char *const crash_kind_names[CK_NR];
/* Kinds data=writeback is documented to allow (docs/write-data.md). */
bool crash_kind_allowed(const char *mode, enum crash_kind k);

enum crash_wl {
	WL_APPEND,
	WL_OVERWRITE,
	WL_CREATE,
	WL_RENAME_REPLACE,
	WL_TRUNCATE_WRITE,
	WL_DIRS,
	WL_LINKS,
	WL_HTREE,
	WL_RANDOM,
	WL_RECOVERY, /* wl_recovery.c: crashes during recovery (no model of their own) */
	WL_EIO_LOOP, /* wl_eio.c: write errors until the journal aborts */
	WL_CONCURRENT, /* wl_concurrent.c: three threads at once (not replayable) */
	WL_FSX,      /* wl_history.c: long seeded history on a few files, aged image */
	WL_FSSTRESS, /* wl_history.c: long seeded namespace + file history, aged image */
	WL_NR
};
extern const char *const crash_wl_names[WL_NR];
int crash_wl_parse(const char *name); /* -1 if unknown */
/* Does workload wl run on the aged image (job.c: filled to ~90 % and
 * fragmented before the "base" mark)? */
bool crash_wl_aged(enum crash_wl wl);
/* Set crash_image_bytes for a job of workload wl. */
void crash_wl_image_set(enum crash_wl wl);

/* ------------------------------------------------------------ model (model.c) */

enum crash_ev_type {
	EV_CREATE,    /* obj, path: a new regular file */
	EV_MKDIR,     /* obj, path */
	EV_WRITE,     /* obj, seq, off, len */
	EV_TRUNC,     /* obj, off = new size */
	EV_LINK,      /* obj, path = the new name */
	EV_UNLINK,    /* path */
	EV_RMDIR,     /* path */
	EV_RENAME,    /* path -> path2 */
	EV_FSYNC,     /* obj (file or directory; 0 = the root), len = 1 for fdatasync */
	EV_SYNC,
};

struct crash_ev {
	enum crash_ev_type t;
	uint32_t obj;
	uint32_t seq;
	uint64_t off, len;
	char *path, *path2;
};

struct crash_model; /* the events of one workload, and the objects */
struct crash_eval;  /* the model replayed up to a crash point */

int crash_model_create(struct crash_model **out);
void crash_model_destroy(struct crash_model *m);
size_t crash_model_nevents(const struct crash_model *m);
const struct crash_ev *crash_model_event(const struct crash_model *m, size_t i);
/* While recording (the workload's view, "now"): the object a path names, 0
 * if none; whether it is a directory. */
uint32_t crash_model_lookup(const struct crash_model *m, const char *path);
bool crash_model_is_dir(const struct crash_model *m, uint32_t obj);
uint64_t crash_model_size(const struct crash_model *m, uint32_t obj);
/* The paths bound now (for workloads choosing their arguments), in the
 * order they were first bound; *n receives the count. The array is the
 * model's; valid until the next event. */
const char *const *crash_model_paths(const struct crash_model *m, size_t *n);
/* Record an event; the model's "now" follows it. obj for CREATE/MKDIR is
 * assigned here (returned through *obj when not NULL). 0 or -errno (-ENOSPC
 * when the object ids or a file's write numbers run out, -EINVAL for an
 * event that does not fit the model: its message in err_last()). */
int crash_model_add(struct crash_model *m, struct crash_ev *ev, uint32_t *obj);

int crash_eval_create(const struct crash_model *m, struct crash_eval **out);
void crash_eval_destroy(struct crash_eval *e);
/* data=guarded: a size whose last word was a hole at some point since
 * that word was last persisted (so its zeros were the file's content then)
 * is a prefix of the file as it was, not "too long". Guarded's on-disk size
 * stops at the first block still waiting for its data, which may lie past
 * a hole (Chris Mason's rule moves it to the next pending extent's start
 * the same way), and a later write that fills the hole may be lost with
 * the crash. Ordered and journal move the size with each write's end, so
 * the stricter rule (a zero last word only after a truncate) stays for
 * them. */
void crash_eval_allow_hole_tail(struct crash_eval *e, bool on);
/* Apply event i: its start (done = false: the operation began; its effects
 * may be on disk) or, for FSYNC/SYNC, its return (done = true: what it
 * persisted must be on disk). Events must be applied in recording order. */
int crash_eval_apply(struct crash_eval *e, size_t i, bool done);

/* What the checks ask of the evaluator. Names are full paths ("/a/b"). */
struct crash_name_verdict {
	bool known;     /* the model has bound this path at some point */
	bool allowed;   /* the binding seen is one the crash may show */
	bool renamed;   /* a rename touched the path since it was last persisted */
	bool persisted; /* a completed fsync/fsyncdir/sync covered the path */
};
/* obj = the object found at path (0: absent). */
void crash_eval_name(const struct crash_eval *e, const char *path, uint32_t obj,
		     struct crash_name_verdict *v);
/* Call fn for every path the model knows (bound now or ever), with whether
 * it may be absent in a crash state. Stops at a non-zero return. */
int crash_eval_paths(const struct crash_eval *e, int (*fn)(void *ctx, const char *path), void *ctx);

struct crash_verdict;
/* A file's content check: the size bytes read from object obj (a regular
 * file). Marks the kinds found in v (with the first description of each). */
void crash_eval_file(const struct crash_eval *e, uint32_t obj, const uint8_t *data, uint64_t size,
		     struct crash_verdict *v);
bool crash_eval_obj_exists(const struct crash_eval *e, uint32_t obj); /* created by now */
bool crash_eval_obj_is_dir(const struct crash_eval *e, uint32_t obj);

/* A string -> uint32 map (model.c), for paths. */
struct crash_smap;
int crash_smap_create(struct crash_smap **out);
void crash_smap_destroy(struct crash_smap *s);
void crash_smap_clear(struct crash_smap *s);
/* 0, or -ENOMEM. Replaces an existing value. */
int crash_smap_put(struct crash_smap *s, const char *key, uint32_t val);
/* true and *val when present. */
bool crash_smap_get(const struct crash_smap *s, const char *key, uint32_t *val);
size_t crash_smap_count(const struct crash_smap *s);
/* The i-th key in insertion order (i < count), and its value. */
const char *crash_smap_key(const struct crash_smap *s, size_t i, uint32_t *val);

/* ------------------------------------------------------------ workload (workload.c) */

struct crash_wl_ctx {
	struct nostall_fs *fs; /* NULL: dry run (the model only) */
	struct dev *dev;       /* marks go here (NULL in a dry run) */
	struct crash_model *m;
	uint64_t rng;
	unsigned bs;
	size_t nops;           /* operations so far = the next op number */
	int err;               /* first failure (the workload stops) */
	char errmsg[256];
	/* The job's state budget (0: unknown, a dry run): the long histories
	 * (fsx, fsstress) scale their length with it. Their generator makes
	 * each operation the same whatever the length, so the full-length dry
	 * run of a replay starts with the recording's events. */
	unsigned budget;
};
/* Run workload wl (its ops, marks and model events). 0 or the first error. */
int crash_workload_run(struct crash_wl_ctx *w, enum crash_wl wl);
/* The model's view, for workloads choosing their next operation: path
 * bound now; its directory part bound (or it is in the root); no path
 * under dir. */
bool crash_wl_exists(struct crash_wl_ctx *w, const char *path);
bool crash_wl_parent_ok(struct crash_wl_ctx *w, const char *path);
bool crash_wl_dir_empty(struct crash_wl_ctx *w, const char *dir);
/* The concurrent workload (wl_concurrent.c); a dry run fails (-EINVAL). */
void crash_wl_concurrent(struct crash_wl_ctx *w);
uint64_t crash_rnd(uint64_t *s);
/* The long histories (wl_history.c), and the aging of their base image:
 * files in /aged until ~88 % full, every other one deleted (0 or -errno). */
int crash_age(struct nostall_fs *fs, unsigned bs, uint64_t seed);
void crash_wl_fsx(struct crash_wl_ctx *w);
void crash_wl_fsstress(struct crash_wl_ctx *w);
/* The driver's operations (workload.c) for workloads in other files: each
 * places its marks and its model event, then (fs != NULL) performs it; a
 * failure stops the workload (w->err, w->errmsg). crash_op_write returns
 * the write's number (its pattern's seq). */
uint32_t crash_op_create(struct crash_wl_ctx *w, const char *path);
void crash_op_mkdir(struct crash_wl_ctx *w, const char *path);
uint32_t crash_op_write(struct crash_wl_ctx *w, const char *path, uint64_t off, uint64_t len);
void crash_op_trunc(struct crash_wl_ctx *w, const char *path, uint64_t size);
void crash_op_link(struct crash_wl_ctx *w, const char *from, const char *to);
void crash_op_unlink(struct crash_wl_ctx *w, const char *path, bool dir);
void crash_op_rename(struct crash_wl_ctx *w, const char *from, const char *to);
void crash_op_fsync(struct crash_wl_ctx *w, const char *path, bool datasync);
void crash_op_sync(struct crash_wl_ctx *w);
/* Record a failure of the workload itself (a read-back that differs). */
void crash_op_fail(struct crash_wl_ctx *w, int rc, const char *what);

/* ------------------------------------------------------------ states (states.c) */

struct crash_log;  /* a recording in memory */
struct crash_state {
	uint32_t epoch;     /* index of its flush epoch */
	uint64_t point;     /* crash point: entries [0, point) happened */
	uint64_t *sel;      /* bitset over the epoch's in-flight writes (NULL: all up to point) */
	uint32_t nsel;      /* bits in sel */
	int64_t torn;       /* entry index of the torn write, -1 none */
	uint64_t torn_seed; /* which sectors of it survive */
	char how;           /* 'e' an epoch's end, 'p' another prefix, 's' subset, 't' torn */
};
#ifdef NOSTALL_TEST_HOOKS
/* Test builds only: a flush covers everything logged before its completion
 * (the old, too generous rule) instead of what had completed at its issue. */
extern bool crash_test_flush_covers_inflight;
#endif

int crash_log_load(const char *path, struct crash_log **out);
void crash_log_destroy(struct crash_log *l);
uint64_t crash_log_entries(const struct crash_log *l);
/* The marks in log order: op number, 'o' (start) or 'd' (return), index. */
size_t crash_log_nmarks(const struct crash_log *l);
void crash_log_mark(const struct crash_log *l, size_t i, size_t *op, char *kind, uint64_t *index);
size_t crash_log_nepochs(const struct crash_log *l);
/* Build distinct crash states (seeded), sorted by epoch and point: every
 * epoch's end (beyond the budget), other prefixes up to budget / 2, random
 * subsets and torn writes (the rest of the budget). */
int crash_states_make(struct crash_log *l, unsigned budget, uint64_t seed, struct crash_state **out,
		      size_t *n);
void crash_states_free(struct crash_state *s, size_t n);
/* Write the state's disk onto dev (a fresh mem: device of the image size).
 * States must come in the order crash_states_make gave them (the durable
 * image of each epoch is built incrementally); crash_log_rewind starts over. */
int crash_state_build(struct crash_log *l, const struct crash_state *s, struct dev *dev);
void crash_log_rewind(struct crash_log *l);
/* "p 1234" / "s 1234 3:0,5,9" / "t ..." and back (kept states). */
int crash_state_format(const struct crash_state *s, char *buf, size_t len);
int crash_state_parse(const char *text, struct crash_state *s);

/* ------------------------------------------------------------ checks (check.c) */

struct crash_check_cfg {
	const char *mode;  /* data mode */
	const char *opts;  /* the extra mount options of the recording ("" or NULL: none) */
	unsigned bs;
	bool e2fsck;       /* run the e2fsck oracle on this state */
	const char *tmpdir;
};
struct crash_verdict {
	bool bad[CK_NR];
	bool e2fsck_ran;
	bool orphans;          /* the replayed image had an orphan list */
	/* e2fsck's orphan cleanup differed from nostall's, the kernel's (a
	 * loop mount of the same crash state) did not: no violation, counted
	 * and described apart (kernel_why: the difference with e2fsck) */
	bool kernel_agrees;
	char why[CK_NR][240];
	char kernel_why[240];
};
/* Mark kind k in v with a description (the first one of each kind stays). */
void crash_verdict_add(struct crash_verdict *v, enum crash_kind k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Recover the state on dev (a mem: device holding it) and check it against
 * e. Errors of the tool itself (not of the filesystem) are returned. */
int crash_check_state(const struct crash_check_cfg *cfg, struct dev *dev, const struct crash_eval *e,
		      struct crash_verdict *v);
/* Is e2fsck on PATH? */
bool crash_have_e2fsck(void);
/* Run e2fsck OPT1 [OPT2] IMG, its output to OUT: its exit status or
 * -errno. */
int crash_e2fsck_run(const char *opt1, const char *opt2, const char *img, const char *out);
/* The first problem lines of e2fsck's output OUT, joined, into buf. */
void crash_e2fsck_summary(const char *out, char *buf, size_t len);
/* Is p[0, len) all zero? */
bool crash_all_zero(const uint8_t *p, size_t len);
/* Copy a device's contents to a (sparse) file. */
int crash_dev_save(struct dev *dev, const char *path);

/* ------------------------------------------------------------ jobs (job.c) */

/* Room for -o OPTS (docs/crashtest.md "Mount options"). */
#define CRASH_OPTS_MAX 128

/* --fs and --features: the mkfs type (ext2, ext3, ext4) and -O list of the
 * base image. */
#define CRASH_FS_MAX 8

struct crash_job {
	char mode[16];
	char opts[CRASH_OPTS_MAX]; /* extra mount options of the recording ("": none) */
	char fs[CRASH_FS_MAX];     /* mkfs type ("": ext3, the default) */
	char features[CRASH_OPTS_MAX]; /* mkfs -O list ("": the type's set) */
	unsigned bs;
	enum crash_wl wl;
	uint64_t seed;
	unsigned budget;       /* crash states wanted */
	unsigned fsck_every;   /* e2fsck on 1 in N states (0: never; 1: all) */
	const char *keep;      /* keep failing states here (NULL: no) */
	unsigned keep_max;     /* at most this many per job */
	const char *tmpdir;    /* scratch (the recording) */
	int progress_fd;       /* -1, or where "states done" messages go */
};

#define CRASH_WHY_MAX 3
struct crash_result {
	uint64_t states;
	uint64_t violating;     /* states with at least one violation */
	uint64_t by_kind[CK_NR];
	uint64_t e2fsck_states; /* states the e2fsck oracle checked */
	uint64_t orphan_states; /* states whose replayed image had orphans */
	uint64_t kernel_agrees; /* e2fsck's orphan cleanup differed, the kernel's agreed */
	uint64_t epoch_states;  /* states at an epoch's end (every one gets one) */
	uint64_t prefix_states; /* other in-order prefixes */
	uint64_t random_states; /* random subsets and torn writes */
	uint64_t entries;       /* log entries of the recording */
	uint64_t epochs;
	uint64_t ops;
	double seconds;
	int error;              /* the tool failed (not the filesystem): -errno */
	char errmsg[256];
	unsigned nwhy;
	char why[CRASH_WHY_MAX][400]; /* the first violations, described */
	bool why_bad[CRASH_WHY_MAX];  /* of a kind the mode does not allow */
	unsigned nkwhy;
	char kwhy[CRASH_WHY_MAX][400]; /* the first kernel_agrees states, described */
};

int crash_job_run(const struct crash_job *j, struct crash_result *r);
/* The r->why slot for a violating state's description: the next free one,
 * then (bad: a kind the mode does not allow) one holding an allowed-only
 * description; -1 when none is left. */
int crash_result_why_slot(struct crash_result *r, bool bad);
/* The base image of block size bs (mkfs, garbage fill) into img
 * (CRASH_IMAGE_BYTES). */
int crash_base_image(unsigned bs, uint8_t *img, struct crash_result *r);
/* Workloads with a job of their own (wl_*.c): recovery, eio-loop. */
bool crash_wl_own_job(enum crash_wl wl);
int crash_wl_job_run(const struct crash_job *j, struct crash_result *r);
struct crash_row;
/* Is kind k a column of this report: the six base kinds always, a
 * workload's own kinds when one of rows (of mode; NULL: all) runs it. */
bool crash_kind_shown(enum crash_kind k, const char *mode, const struct crash_row *rows, size_t n);
/* The options of the mount that records the workload:
 * "data=MODE,barrier=1[,OPTS]". */
void crash_record_opts(const char *mode, const char *opts, char *buf, size_t len);
/* "MODE[,OPTS]": how reports and kept states name a mode with its options. */
void crash_mode_label(const char *mode, const char *opts, char *buf, size_t len);
/* The filesystem the base images of this process are made as (a job runs
 * alone in its worker process, like crash_image_bytes): set by
 * crash_job_run and crash_replay from the job, by main before
 * crash_opts_try. NULL or "" type: ext3; NULL or "" features: the type's. */
void crash_fs_set(const char *type, const char *features);
/* Is (type, features) a set mkfs makes? 0, or -EINVAL with the message in
 * err_last(). */
int crash_fs_check(const char *type, const char *features);
/* Does that set have a journal? (ext2 and ^has_journal do not: their crash
 * states need a recovery of their own, not written yet.) */
bool crash_fs_journal(const char *type, const char *features);
/* " fs=TYPE[ features=LIST]" for job.txt and corpus lines, "" for the
 * default ext3 (lines read as before the option existed). */
void crash_fs_words(const struct crash_job *j, char *buf, size_t len);
/* Mount a fresh image of block size bs with the recording's options for
 * mode and opts, and unmount it: 0, or the mount's -errno (its message in
 * err_last()), so a refused combination fails before any job runs. */
int crash_opts_try(const char *mode, const char *opts, unsigned bs);
/* Re-check a kept state (DIR holds job.txt, state.txt, rec.log); with
 * events, list the workload's operations against the crash point.
 * 0 clean, 1 violations, or -errno. */
int crash_replay(const char *dir, bool events, FILE *out);

/* Progress messages over a pipe (fixed size, atomic writes). */
struct crash_msg {
	uint32_t type; /* 1 progress, 2 result */
	uint32_t job;
	uint64_t done;
};

/* ------------------------------------------------------------ report (report.c) */

struct crash_row {
	const struct crash_job *job;
	struct crash_result res;
};
/* opts: the run's extra mount options ("" or NULL: none), named in the
 * table's header and as the JSON's "options". */
void crash_report_table(FILE *out, const char *mode, const char *opts, const struct crash_row *rows, size_t n);
/* One JSON line: the rows of mode (NULL: all) summed, labelled label. */
void crash_report_json(FILE *out, const char *mode, const char *label, const char *workload, const char *opts,
		       const struct crash_row *rows, size_t n, double seconds);
/* Keep a failing state: DIR/<mode>-<bs>-<wl>-s<seed>-<k>/ with the log, the
 * state, the crash image, the verdict and a replay command. */
int crash_keep_state(const struct crash_job *j, const char *logpath, const struct crash_state *s,
		     struct dev *crash_dev, const struct crash_verdict *v, unsigned k);

#endif
