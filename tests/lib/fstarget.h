/* Filesystem targets for the model-based tests (docs/testing-model.md).
 *
 * A target is anything that can run POSIX-like filesystem operations on a
 * tree of paths: the in-memory model (fsmodel.h), a host directory through
 * the kernel (fst_host_*), nostall through its library API
 * (fstarget_nostall.h), or a fault-injecting filter around another target.
 * The runner (fsrun.h) applies every generated operation to the model and to
 * one real target and compares the results, so every target implements the
 * same table with the same conventions:
 *
 * - Paths are absolute within the target ("/a/b"; "/" is the target's root).
 * - Results are >= 0 on success and a negative errno on failure.
 * - Flags use the host's values: open(2) O_* flags, FST_RENAME_* (the values
 *   of RENAME_NOREPLACE/RENAME_EXCHANGE), FST_XATTR_* (XATTR_CREATE /
 *   XATTR_REPLACE), and FST_NOFOLLOW for the l*-variants (lstat, lchown,
 *   lsetxattr, utimensat with AT_SYMLINK_NOFOLLOW).
 * - Handles returned by open are small integers private to the target.
 * - listxattr reports only the user.* and trusted.* namespaces (what the
 *   model knows), with the length of that filtered list.
 */
#ifndef TESTS_LIB_FSTARGET_H
#define TESTS_LIB_FSTARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FST_NOFOLLOW 0x1u
#define FST_RENAME_NOREPLACE 0x1u
#define FST_RENAME_EXCHANGE 0x2u
#define FST_XATTR_CREATE 0x1u
#define FST_XATTR_REPLACE 0x2u

/* fs_target.caps */
#define FST_CAP_NSEC 0x1u  /* stores nanoseconds of explicit times */
#define FST_CAP_MODEL 0x2u /* the model: times may be "unknown" (fst_stat.known) */

struct fst_time {
	int64_t sec;
	uint32_t nsec;
};

#define FST_ATIME_KNOWN 0x1u
#define FST_MTIME_KNOWN 0x2u

struct fst_stat {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t size;
	uint64_t rdev;  /* glibc makedev() encoding */
	struct fst_time atime, mtime;
	unsigned known; /* FST_*TIME_KNOWN: the model clears them once an operation
			 * may have changed the time in a way it does not track */
};

struct fst_dirent {
	uint64_t ino;
	unsigned char type; /* DT_* */
	char name[256];
};

/* A growable entry list (readdir output, "." and ".." included). */
struct fst_dirlist {
	struct fst_dirent *v;
	size_t n, cap;
};
int fst_dirlist_add(struct fst_dirlist *dl, uint64_t ino, unsigned char type, const char *name);
void fst_dirlist_sort(struct fst_dirlist *dl);
void fst_dirlist_free(struct fst_dirlist *dl);

/* Called per allocated byte range, ascending; nonzero stops the walk. */
typedef int (*fst_range_cb)(void *ctx, uint64_t off, uint64_t len);

struct fs_target;

struct fst_ops {
	int (*mkdir)(struct fs_target *t, const char *path, uint32_t mode);
	int (*mknod)(struct fs_target *t, const char *path, uint32_t mode, uint64_t rdev);
	int (*symlink)(struct fs_target *t, const char *target, const char *path);
	int (*link)(struct fs_target *t, const char *from, const char *to);
	int (*unlink)(struct fs_target *t, const char *path);
	int (*rmdir)(struct fs_target *t, const char *path);
	int (*rename)(struct fs_target *t, const char *from, const char *to, unsigned flags);
	int (*truncate)(struct fs_target *t, const char *path, uint64_t size);
	int (*chmod)(struct fs_target *t, const char *path, uint32_t mode);
	int (*chown)(struct fs_target *t, const char *path, unsigned flags, uint32_t uid, uint32_t gid);
	int (*utimens)(struct fs_target *t, const char *path, unsigned flags,
		       const struct fst_time ts[2]);
	int (*stat)(struct fs_target *t, const char *path, unsigned flags, struct fst_stat *st);
	ssize_t (*readlink)(struct fs_target *t, const char *path, char *buf, size_t size);
	/* Appends every entry ("." and ".." too) to *out. */
	int (*readdir)(struct fs_target *t, const char *path, struct fst_dirlist *out);
	int (*setxattr)(struct fs_target *t, const char *path, unsigned flags, const char *name,
			const void *value, size_t size, unsigned xflags);
	int (*removexattr)(struct fs_target *t, const char *path, unsigned flags, const char *name);
	ssize_t (*getxattr)(struct fs_target *t, const char *path, unsigned flags, const char *name,
			    void *buf, size_t size);
	ssize_t (*listxattr)(struct fs_target *t, const char *path, unsigned flags, char *buf,
			     size_t size);
	/* oflags: O_RDONLY/O_WRONLY/O_RDWR | O_CREAT O_EXCL O_TRUNC O_APPEND O_NOFOLLOW */
	int (*open)(struct fs_target *t, const char *path, int oflags, uint32_t mode);
	int (*close)(struct fs_target *t, int h);
	ssize_t (*read)(struct fs_target *t, int h, void *buf, size_t len);
	ssize_t (*write)(struct fs_target *t, int h, const void *buf, size_t len);
	ssize_t (*pread)(struct fs_target *t, int h, void *buf, size_t len, uint64_t off);
	ssize_t (*pwrite)(struct fs_target *t, int h, const void *buf, size_t len, uint64_t off);
	int (*ftruncate)(struct fs_target *t, int h, uint64_t size);
	int (*fsync)(struct fs_target *t, int h, int datasync);
	int (*fstat)(struct fs_target *t, int h, struct fst_stat *st);
	/* Optional (NULL: every byte counts as allocated): the allocated ranges
	 * of the regular file at path (SEEK_DATA/SEEK_HOLE, block maps). Bytes
	 * outside them read as zeroes. */
	int (*data_ranges)(struct fs_target *t, const char *path, fst_range_cb cb, void *ctx);
	/* Optional: make everything durable; an image target unmounts, checks
	 * the image (e2fsck -fn) and mounts it again. Called with no handle
	 * open. On failure msg says why. */
	int (*checkpoint)(struct fs_target *t, char *msg, size_t msglen);
	void (*destroy)(struct fs_target *t);
};

struct fs_target {
	const struct fst_ops *ops;
	const char *name; /* "model", "host", "nostall", ... for messages */
	unsigned caps;    /* FST_CAP_* */
	void *priv;
};

/* Destroy a target (NULL is a no-op). */
void fst_destroy(struct fs_target *t);

/* Creates targets for a fresh, empty tree (the driver and the minimizer
 * replay operations on many fresh targets). */
struct fst_factory {
	int (*create)(void *ctx, struct fs_target **out);
	void *ctx;
};

/* ---- host directory (POSIX syscalls) ---- */

/* A target rooted at the existing directory dir (not removed at destroy). */
int fst_host_new(const char *dir, struct fs_target **out);
/* A target rooted at a new mkdtemp() directory under $TMPDIR or /tmp,
 * removed with everything in it at destroy. */
int fst_host_new_tmp(struct fs_target **out);
/* The absolute host directory of a host target (NULL for other targets). */
const char *fst_host_dir(const struct fs_target *t);
/* Factory for fst_host_new_tmp targets (ctx unused). */
extern const struct fst_factory fst_host_tmp_factory;

/* ---- fault-injecting filter ----
 * Forwards every call to inner; the hook sees the operation name ("rmdir",
 * "pwrite", ...), the first path (NULL for handle calls) and the inner
 * result, and returns the result to report. The filter owns inner. */
typedef int64_t (*fst_filter_hook)(void *ctx, const char *op, const char *path, int64_t rc);
int fst_filter_new(struct fs_target *inner, fst_filter_hook hook, void *ctx,
		   struct fs_target **out);

/* ---- helpers ---- */

/* Allocation that cannot fail (test support: aborts with a message). */
void *fst_xcalloc(size_t n, size_t size);
void *fst_xrealloc(void *p, size_t size);
char *fst_xstrdup(const char *s);
char *fst_xstrndup(const char *s, size_t n);
void *fst_xmemdup(const void *p, size_t n);

/* "EINVAL" etc. for -errno (or "OK" for rc >= 0). */
const char *fst_errname(int64_t rc);

#endif
