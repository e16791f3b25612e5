/* In-memory model of a POSIX tree as Linux ext3 presents it to a root user
 * (docs/testing-model.md).
 *
 * The model is itself a target (fstarget.h): every operation returns what
 * the Linux VFS + ext3 return for it, errno included (path walk, symlink
 * following with the 40-link limit, rename's ancestor checks, setgid
 * directories, xattr namespaces and flags). It checks no permissions (the
 * caller is root, or the generator keeps owner access when it is not).
 *
 * Contents: regular files keep only the FSM_CHUNK-sized chunks ever written
 * (holes cost nothing, so multi-megabyte and far-sparse files are cheap);
 * a chunk stays until a truncate drops it, so the chunks are also the upper
 * bound of what a filesystem may have allocated ("holes stay holes").
 *
 * Times: the model knows atime/mtime only from utimens until an operation
 * that may change them (fst_stat.known says which are known).
 *
 * Not modelled: permissions, ENOSPC/EFBIG/EMLINK limits (the generator stays
 * below them), ctime, directory sizes, sticky-directory protections.
 */
#ifndef TESTS_LIB_FSMODEL_H
#define TESTS_LIB_FSMODEL_H

#include "fstarget.h"

#define FSM_CHUNK 4096u
#define FSM_NAME_MAX 255
#define FSM_SYMLOOP_MAX 40

struct fsmodel;

/* A model whose root directory has the given mode bits and owner; new
 * inodes get uid/gid (like the caller's fsuid/fsgid). */
struct fsmodel *fsm_new(uint32_t root_mode, uint32_t uid, uint32_t gid);
/* The model as a target; destroying the target frees the model. */
struct fs_target *fsm_target(struct fsmodel *m);
struct fsmodel *fsm_from_target(struct fs_target *t); /* NULL if not a model */
void fsm_set_cred(struct fsmodel *m, uint32_t uid, uint32_t gid);

/* What the generator asks about the current tree. */
struct fsm_info {
	uint64_t ino;
	uint32_t mode; /* S_IFMT | permission bits */
	uint32_t nlink;
	uint64_t size;
	size_t nentries;    /* directories: entries other than . and .. */
	size_t nxattrs;
	size_t xattr_bytes; /* space the xattrs take in an ext3 xattr block */
};
int fsm_query(struct fsmodel *m, const char *path, bool follow, struct fsm_info *out);
int fsm_query_handle(struct fsmodel *m, int h, struct fsm_info *out);
/* Name of the i-th entry of directory path (no . and ..), NULL past the end
 * or if path is not a directory. Valid until the next change. */
const char *fsm_entry_name(struct fsmodel *m, const char *path, size_t i);
/* Name of the i-th xattr of path (following a final symlink unless
 * nofollow), NULL past the end. */
const char *fsm_xattr_name(struct fsmodel *m, const char *path, bool nofollow, size_t i);
/* Bytes held in content chunks over all live inodes. */
uint64_t fsm_bytes(const struct fsmodel *m);
/* Does model inode ino still exist (linked or open)? */
bool fsm_ino_alive(const struct fsmodel *m, uint64_t ino);
/* Space one xattr takes in an ext3 xattr block (entry + name + value,
 * 4-byte aligned); a block also has a 32-byte header and 4-byte end mark. */
size_t fsm_xattr_cost(const char *name, size_t value_len);

/* ---- internal: shared by fsmodel.c and fsmodel_data.c ---- */
#ifdef FSMODEL_INTERNAL
#include <sys/stat.h>

struct fsm_chunk {
	uint64_t idx;  /* chunk number: bytes [idx * FSM_CHUNK, (idx + 1) * FSM_CHUNK) */
	uint8_t *data; /* FSM_CHUNK bytes; bytes at or past the file size are zero */
};
struct fsm_xattr {
	char *name;
	uint8_t *val;
	size_t len;
};
struct fsm_inode;
struct fsm_dent {
	char *name;
	struct fsm_inode *ip;
};
struct fsm_inode {
	uint64_t ino;
	uint32_t mode, uid, gid, nlink;
	unsigned opens;
	uint64_t size, rdev;
	struct fst_time atime, mtime;
	unsigned known; /* FST_*TIME_KNOWN */
	struct fsm_chunk *chunks; /* regular files: sorted by idx */
	size_t nchunks, chunks_cap;
	struct fsm_dent *ents;    /* directories: unsorted */
	size_t nents, ents_cap;
	struct fsm_inode *parent; /* directories: the one parent (root: itself) */
	char *target;             /* symlinks */
	struct fsm_xattr *xattrs;
	size_t nxattrs;
	struct fsm_inode *next, *prev; /* all live inodes */
};
struct fsm_handle {
	struct fsm_inode *ip;
	int oflags;
	uint64_t pos;
	bool used;
};
struct fsmodel {
	struct fs_target target; /* first: the target's priv is the model */
	struct fsm_inode *root;
	struct fsm_inode *all;   /* list of live inodes */
	uint64_t next_ino;
	struct fsm_handle *handles;
	size_t nhandles;
	uint32_t uid, gid;
	uint64_t bytes;
	bool quiet; /* a query walks: following symlinks touches no atime */
};

/* fsmodel_data.c: contents, attributes, xattrs and handle I/O */
void fsm_data_truncate(struct fsmodel *m, struct fsm_inode *ip, uint64_t size);
void fsm_inode_free_data(struct fsmodel *m, struct fsm_inode *ip);
size_t fsm_xattr_bytes(const struct fsm_inode *ip);
int fsm_op_truncate(struct fs_target *t, const char *path, uint64_t size);
int fsm_op_chmod(struct fs_target *t, const char *path, uint32_t mode);
int fsm_op_chown(struct fs_target *t, const char *path, unsigned flags, uint32_t uid, uint32_t gid);
int fsm_op_utimens(struct fs_target *t, const char *path, unsigned flags,
		   const struct fst_time ts[2]);
int fsm_op_stat(struct fs_target *t, const char *path, unsigned flags, struct fst_stat *st);
ssize_t fsm_op_readlink(struct fs_target *t, const char *path, char *buf, size_t size);
int fsm_op_readdir(struct fs_target *t, const char *path, struct fst_dirlist *out);
int fsm_op_setxattr(struct fs_target *t, const char *path, unsigned flags, const char *name,
		    const void *value, size_t size, unsigned xflags);
int fsm_op_removexattr(struct fs_target *t, const char *path, unsigned flags, const char *name);
ssize_t fsm_op_getxattr(struct fs_target *t, const char *path, unsigned flags, const char *name,
			void *buf, size_t size);
ssize_t fsm_op_listxattr(struct fs_target *t, const char *path, unsigned flags, char *buf,
			 size_t size);
ssize_t fsm_op_read(struct fs_target *t, int h, void *buf, size_t len);
ssize_t fsm_op_write(struct fs_target *t, int h, const void *buf, size_t len);
ssize_t fsm_op_pread(struct fs_target *t, int h, void *buf, size_t len, uint64_t off);
ssize_t fsm_op_pwrite(struct fs_target *t, int h, const void *buf, size_t len, uint64_t off);
int fsm_op_ftruncate(struct fs_target *t, int h, uint64_t size);
int fsm_op_fsync(struct fs_target *t, int h, int datasync);
int fsm_op_fstat(struct fs_target *t, int h, struct fst_stat *st);
int fsm_op_data_ranges(struct fs_target *t, const char *path, fst_range_cb cb, void *ctx);

/* fsmodel.c: path walk */
struct fsm_loc {
	struct fsm_inode *dir; /* parent directory; NULL when the path is the root */
	const char *name;      /* last component (not NUL-terminated), inside the walked path */
	size_t namelen;
	struct fsm_inode *ip;  /* the inode found, NULL if the name is absent */
};
/* Resolve path fully: parent, last component and (following a final
 * symlink if follow) the inode. A missing final name is not an error
 * (loc->ip == NULL). */
int fsm_walk(struct fsmodel *m, const char *path, bool follow, struct fsm_loc *loc);
/* The same, failing with -ENOENT when the final name is absent. */
int fsm_resolve(struct fsmodel *m, const char *path, bool follow, struct fsm_inode **out);
void fsm_inode_put(struct fsmodel *m, struct fsm_inode *ip); /* free if unlinked and closed */
struct fsm_handle *fsm_handle_get(struct fsmodel *m, int h);
#endif

#endif
