/* fsx — a model-based file-system exerciser (docs/exerciser.md).
 *
 * Random operations (writes at random offsets, reads, truncates, mmap reads
 * and writes, fsync, create/open/close, unlink, link, rename with
 * renameat2 flags, mkdir/rmdir) run on a directory of a mounted filesystem
 * through plain POSIX calls, and on an in-memory model of what that
 * directory must hold. After every operation its result (return value or
 * errno) and the state it touched are compared with the model; every
 * `check_every` operations (and at the end) the whole tree is: names in each
 * directory, type, size, link count, which names share an inode, and every
 * byte of every file, also of files only reachable through an open
 * descriptor. A mismatch stops the run; the operation log is then minimized
 * by delta debugging (fsx_main.c) into a short replay script.
 *
 * The namespace is a fixed pool of names so that operations collide often:
 * directories d0..d(D-1) in the work root, regular-file names f0..f(F-1) in
 * the root and in each directory. File names only ever hold regular files
 * and directory names only directories, which keeps the expected errno of
 * every call unambiguous (docs/exerciser.md lists the rules).
 */
#ifndef NOSTALL_FSX_H
#define NOSTALL_FSX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FSX_DIRS 3
#define FSX_FILES 6
/* Paths: index 0..DIRS-1 are the directories, then the root's files, then
 * each directory's files. */
#define FSX_NPATHS (FSX_DIRS + FSX_FILES * (1 + FSX_DIRS))
#define FSX_SLOTS 3
#define FSX_MAXINO 64

enum fsx_kind {
	OP_WRITE,    /* target off len tag */
	OP_READ,     /* target off len */
	OP_MAPWRITE, /* target off len tag flag(msync) */
	OP_MAPREAD,  /* target off len */
	OP_TRUNC,    /* target off(=new size) */
	OP_FSYNC,    /* target flag(datasync) */
	OP_CREATE,   /* a (file path): open(O_CREAT|O_EXCL), close */
	OP_OPEN,     /* slot a (file path) flag(O_CREAT) */
	OP_CLOSE,    /* slot */
	OP_UNLINK,   /* a (file path) */
	OP_LINK,     /* a b (file paths) */
	OP_RENAME,   /* a b (both file paths or both directories) flag(0|NOREPLACE|EXCHANGE) */
	OP_MKDIR,    /* a (directory) */
	OP_RMDIR,    /* a (directory) */
	OP_BADWRITE, /* self-test: a write the model does not see (must be detected) */
	OP_NKINDS
};

/* Data operations act on one file (a target); the rest on names. */
static inline bool fsx_is_data_op(enum fsx_kind k)
{
	return k == OP_WRITE || k == OP_READ || k == OP_MAPWRITE || k == OP_MAPREAD || k == OP_TRUNC ||
	       k == OP_FSYNC || k == OP_BADWRITE;
}

/* A target of a data operation: a path (opened and closed around the call)
 * or an open descriptor slot. */
struct fsx_target {
	bool slot;
	int idx; /* path index or slot number */
};

struct fsx_op {
	enum fsx_kind kind;
	struct fsx_target t; /* data operations */
	int slot;            /* OP_OPEN, OP_CLOSE */
	int a, b;            /* path indices */
	uint64_t off, len;
	uint32_t tag;        /* data pattern of writes */
	int flag;
};

struct fsx_cfg {
	const char *dir;     /* work root: created, emptied between runs */
	uint64_t max_size;   /* largest file size generated */
	uint64_t max_io;     /* largest write/read length */
	unsigned check_every; /* full check period (1 = after every op) */
	bool no_mmap, no_rename2;
	bool verbose;
};

/* ---- model (fsx_model.c) ---- */

struct fsx_inode {
	bool used, dir;
	uint32_t nlink;  /* names (files); directories: 2 */
	uint32_t refs;   /* open slots */
	uint8_t *data;
	uint64_t size, cap;
};

struct fsx_model {
	struct fsx_inode ino[FSX_MAXINO];
	int path_ino[FSX_NPATHS]; /* -1: no such name */
	int slot_ino[FSX_SLOTS];  /* -1: closed */
};

void model_init(struct fsx_model *m);
void model_free(struct fsx_model *m);
/* The expected outcome of op: 0 or a positive errno; on 0 the model is
 * changed as the call changes the filesystem. BADWRITE returns what a write
 * would and changes nothing. */
int model_apply(struct fsx_model *m, const struct fsx_op *op);
/* The inode a target refers to, -1 for none. */
int model_target_ino(const struct fsx_model *m, const struct fsx_target *t);
int model_parent(int path);  /* directory path index, -1 for the root */
bool model_is_dir_path(int path);
const char *model_path_name(int path); /* "d1/f3" */
int model_path_lookup(const char *name); /* -1 if not in the pool */
/* Number of names in directory `dir` (-1: the root) in the model. */
unsigned model_dir_entries(const struct fsx_model *m, int dir);

/* The byte a write with `tag` puts at file offset `off`. */
static inline uint8_t fsx_pattern(uint32_t tag, uint64_t off)
{
	uint64_t x = off * 0x9E3779B97F4A7C15ull + (uint64_t)tag * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

/* ---- ops as text (fsx_gen.c) ---- */

/* One line, no newline: "write p:d1/f3 4096 100 tag=7". */
void op_format(const struct fsx_op *op, char *buf, size_t len);
/* Parse a line of op_format; -1 on a malformed line. */
int op_parse(const char *line, struct fsx_op *op);

struct fsx_rng {
	uint64_t s;
};
uint64_t rng_next(struct fsx_rng *r);
uint64_t rng_below(struct fsx_rng *r, uint64_t n); /* 0..n-1, n > 0 */
/* A random op fitting the model's state (mostly valid, some expected
 * failures). */
void op_generate(struct fsx_rng *r, const struct fsx_model *m, const struct fsx_cfg *cfg,
		 struct fsx_op *op);

/* ---- execution and checks (fsx_exec.c) ---- */

struct fsx_state {
	const struct fsx_cfg *cfg;
	struct fsx_model m;
	int fd[FSX_SLOTS];
	char root[4096]; /* cfg->dir + "/fsx.work" */
	char msg[1024];  /* the mismatch */
	uint8_t *buf;    /* reads: max_size + max_io bytes */
	uint8_t *wbuf;   /* write patterns: max_io bytes */
	uint64_t nops;   /* operations executed since state_start */
	uint64_t ok[OP_NKINDS], err[OP_NKINDS]; /* succeeded / failed as the model said */
};

/* Fresh work root (removed and recreated), empty model. 0 or -1 (msg). */
int state_start(struct fsx_state *s, const struct fsx_cfg *cfg);
/* Close the slots and free the model. */
void state_end(struct fsx_state *s);
/* Run one op on the filesystem and the model and check its result and what
 * it touched: 0, or -1 with s->msg set. */
int state_exec(struct fsx_state *s, const struct fsx_op *op);
/* Compare the whole tree and every open slot with the model. */
int state_check_all(struct fsx_state *s);

#endif
