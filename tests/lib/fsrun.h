/* Model-based filesystem testing: the runner, the tree compare, the seeded
 * generator and the driver with replay and minimizer
 * (docs/testing-model.md).
 *
 *   fsrun_*      applies one operation to the model and to a target and
 *                compares results, errno, returned bytes, attributes and
 *                inode identity (hard links).
 *   fst_compare_tree / fst_copy_tree
 *                walk two targets (names, types, content, size, mode, owner,
 *                nlink, symlink targets, xattrs, hard-link structure).
 *   fsgen_*      the seeded random operation generator.
 *   fsdrive_*    a whole run: generate, apply, checkpoint every N operations;
 *                on a mismatch print the seed, the operation index and a
 *                replay script, and shrink it by delta debugging.
 */
#ifndef TESTS_LIB_FSRUN_H
#define TESTS_LIB_FSRUN_H

#include "fsmodel.h"
#include "fsop.h"

#include <stdio.h>

#define FSRUN_SLOTS 8

/* ---- tree compare ---- */

struct fst_cmp_opts {
	bool owner;       /* compare uid/gid */
	bool times;       /* compare atime/mtime where a's stat says they are known */
	bool nsec;        /* ... to the nanosecond */
	bool holes;       /* b's allocated ranges must lie inside a's (a: the model) */
	unsigned max_diffs; /* differences reported before stopping (0: 20) */
};
/* 0 equal, 1 different (msg lists the differences, one per line), <0 error. */
int fst_compare_tree(struct fs_target *a, struct fs_target *b, const struct fst_cmp_opts *o,
		     char *msg, size_t msglen);
/* Copy src's tree (contents, modes, owners, xattrs, symlinks, hard links,
 * fifos/devices, and with FST_COPY_TIMES atime/mtime) into dst's root. */
#define FST_COPY_TIMES 0x1u
int fst_copy_tree(struct fs_target *src, struct fs_target *dst, unsigned flags);

/* ---- runner ---- */

struct fsrun_cfg {
	bool owner;    /* compare uid/gid (always true is fine: creds are the process's) */
	bool holes;    /* check "holes stay holes" at checkpoints */
	FILE *log;     /* each operation and both results, or NULL */
};
struct fsrun;
/* A runner over target t (not owned): a fresh model copied from t's tree. */
int fsrun_new(struct fs_target *t, const struct fsrun_cfg *cfg, struct fsrun **out);
void fsrun_free(struct fsrun *r);
/* Apply op to both: 0 agree (or skipped), 1 mismatch (fsrun_msg says how). */
int fsrun_apply(struct fsrun *r, const struct fsop *op);
/* Close every slot, checkpoint the target, compare the trees (0/1). */
int fsrun_checkpoint(struct fsrun *r);
/* Compare the model with another target (a kernel mount of the image): 0/1. */
int fsrun_compare_with(struct fsrun *r, struct fs_target *other);
const char *fsrun_msg(const struct fsrun *r);
struct fsmodel *fsrun_model(struct fsrun *r);
/* The model's result of the last applied operation (an errno check for
 * hand-written scripts); INT64_MIN if it was skipped. */
int64_t fsrun_last_result(const struct fsrun *r);
bool fsrun_slot_open(const struct fsrun *r, int slot);
const char *fsrun_slot_path(const struct fsrun *r, int slot); /* path it was opened by */
int fsrun_slot_handle(const struct fsrun *r, int slot); /* the model's handle */
int fsrun_slot_flags(const struct fsrun *r, int slot);  /* its open flags */

/* ---- generator ---- */

struct fsgen_cfg {
	unsigned weight[FSOP_NKINDS]; /* relative frequency per kind (checkpoint: unused) */
	bool root;             /* chown, trusted.* xattrs, device nodes; else keep owner access */
	unsigned max_depth;    /* directory nesting (default 6) */
	unsigned names;        /* name pool size n0..n{names-1} (default 10) */
	uint64_t max_write;    /* largest single write (default 3 MiB) */
	uint64_t max_off;      /* "far beyond EOF" offsets up to here (default 64 MiB) */
	uint64_t max_bytes;    /* bound on the model's content chunks (default 48 MiB) */
	size_t xattr_budget;   /* bytes per inode in the ext3 xattr block formula (default 900) */
	unsigned symlink_max;  /* longest symlink target (default 900) */
};
void fsgen_cfg_default(struct fsgen_cfg *c);
/* "write=10,rename=0,..." sets weights; -EINVAL for an unknown name. */
int fsgen_cfg_weights(struct fsgen_cfg *c, const char *spec);

struct fsgen;
struct fsgen *fsgen_new(const struct fsgen_cfg *c, uint64_t seed);
void fsgen_free(struct fsgen *g);
/* The next operation for the current state of r's model and slots. */
void fsgen_next(struct fsgen *g, struct fsrun *r, struct fsop *op);

/* ---- driver ---- */

struct fsdrive_cfg {
	uint64_t seed;
	unsigned nops;
	unsigned check_every;  /* a checkpoint operation every N operations (0: none) */
	struct fsgen_cfg gen;
	struct fsrun_cfg run;
	bool minimize;         /* shrink a failing script */
	unsigned minimize_budget; /* replays the minimizer may spend (default 400) */
	const char *script_dir; /* where the failing script is saved (default $TMPDIR or /tmp) */
	FILE *out;             /* reports (default stderr) */
	/* Called after the final checkpoint agreed, before the target goes
	 * (e.g. unmount, then compare a kernel mount with fsrun_compare_with);
	 * nonzero is a failure, reported with fsrun_msg(r). */
	int (*at_end)(void *ctx, struct fsrun *r, struct fs_target *t);
	void *at_end_ctx;
};
void fsdrive_cfg_default(struct fsdrive_cfg *c);
/* The seed: NOSTALL_SEED from the environment if set, else from the clock. */
uint64_t fsdrive_seed(void);
/* Apply the environment: NOSTALL_SEED, NOSTALL_FSOPS (count),
 * NOSTALL_FSWEIGHTS (weights spec), NOSTALL_FSVERBOSE=1 (log to out). */
void fsdrive_cfg_env(struct fsdrive_cfg *c);

struct fsdrive_result {
	int failed;        /* 0 passed, 1 mismatch */
	size_t fail_index; /* operation index of the mismatch */
	char msg[4096];
	size_t nops_min;   /* length of the minimized script (0 if not minimized) */
	char script[512];  /* file holding the (minimized) failing script */
};
/* Generate and apply cfg->nops operations on a fresh target from f. 0 ran
 * (res->failed tells), <0 setup error. On a mismatch it prints the seed,
 * the index, the message and the script (minimized if asked). */
int fsdrive_random(const struct fst_factory *f, const struct fsdrive_cfg *cfg,
		   struct fsdrive_result *res);
/* Replay ops on a fresh target, then a final checkpoint. 0 passed, 1
 * mismatch (*fail_index, msg), <0 error. */
int fsdrive_replay(const struct fst_factory *f, const struct fsrun_cfg *rc, const struct fsop *ops,
		   size_t n, size_t *fail_index, char *msg, size_t msglen);
/* Load a script file and replay it (reports to out): 0 passed, 1 mismatch,
 * <0 error (unreadable or bad script). */
int fsdrive_replay_file(const struct fst_factory *f, const struct fsrun_cfg *rc, const char *path,
			FILE *out);
/* Delta debugging: shrink ops (which fail on replay) to a short failing
 * list; *n is updated, ops reordered in place (removed ones freed). */
int fsdrive_minimize(const struct fst_factory *f, const struct fsrun_cfg *rc, struct fsop *ops,
		     size_t *n, unsigned budget);

/* ---- internal: a uint64 -> uint64 map (inode identities) ---- */
struct fsmap {
	uint64_t *k, *v; /* key 0 = empty */
	size_t n, cap;
};
void fsmap_put(struct fsmap *m, uint64_t k, uint64_t v);
bool fsmap_get(const struct fsmap *m, uint64_t k, uint64_t *v);
void fsmap_free(struct fsmap *m);

#endif
