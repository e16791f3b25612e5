/* Filesystem operations as data: what the generator makes, the runner
 * applies and a replay script holds, one per line (docs/testing-model.md).
 *
 * Line format: the kind, then key=value fields (only those the kind uses):
 *   open slot=2 path=/n3/n1 flags=RDWR|CREAT|APPEND mode=0644
 *   pwrite slot=2 off=1048576 len=70000 seed=0x5e1d
 *   rename path=/n1 path2=/n4/n2 flags=EXCHANGE
 *   setxattr path=/n2 name=user.x1 len=40 seed=9 xflags=CREATE nofollow=1
 * Strings are %XX-escaped outside printable ASCII and for '%' and ' '.
 * Write data and xattr values are not stored: they are the pattern
 * fsop_fill(seed) (seed 0 = zero bytes). Lines starting with '#' and blank
 * lines are ignored by the parser. */
#ifndef TESTS_LIB_FSOP_H
#define TESTS_LIB_FSOP_H

#include "fstarget.h"

#include <stdio.h>

enum fsop_kind {
	FSOP_MKDIR,
	FSOP_MKNOD,
	FSOP_SYMLINK,
	FSOP_LINK,
	FSOP_UNLINK,
	FSOP_RMDIR,
	FSOP_RENAME,
	FSOP_TRUNCATE,
	FSOP_CHMOD,
	FSOP_CHOWN,
	FSOP_UTIMENS,
	FSOP_SETXATTR,
	FSOP_REMOVEXATTR,
	FSOP_GETXATTR,
	FSOP_LISTXATTR,
	FSOP_STAT,
	FSOP_READDIR,
	FSOP_READLINK,
	FSOP_OPEN,
	FSOP_CLOSE,
	FSOP_READ,
	FSOP_WRITE,
	FSOP_PREAD,
	FSOP_PWRITE,
	FSOP_FTRUNCATE,
	FSOP_FSYNC,
	FSOP_FSTAT,
	FSOP_CHECKPOINT, /* close every slot, target checkpoint, full-tree compare */
	FSOP_NKINDS
};

struct fsop {
	enum fsop_kind kind;
	int slot;       /* handle slot (open: the slot it fills) */
	unsigned flags; /* open: O_* flags; rename: FST_RENAME_*; fsync: 1 = datasync */
	unsigned xflags; /* setxattr: FST_XATTR_* */
	bool nofollow;  /* stat, chown, utimens, *xattr: act on a final symlink itself */
	uint32_t mode, uid, gid;
	uint64_t off;   /* I/O offset; truncate/ftruncate: the new size */
	uint64_t len;   /* I/O length; setxattr value length; getxattr/listxattr buffer */
	uint64_t seed;  /* data pattern (0: zeroes) */
	uint64_t rdev;
	struct fst_time ts[2]; /* utimens: atime, mtime */
	char *path;
	char *path2;    /* rename/link: the new name; symlink: the link's target text */
	char *name;     /* xattr name */
};

const char *fsop_kind_name(enum fsop_kind k);
/* Kind from its name, -1 if unknown. */
int fsop_kind_parse(const char *name);

void fsop_free(struct fsop *op);
void fsop_copy(struct fsop *dst, const struct fsop *src);

/* One line (with '\n'). */
void fsop_format(const struct fsop *op, FILE *f);
/* Parse one line; 0 ok, 1 blank/comment, -EINVAL (message in err). */
int fsop_parse(const char *line, struct fsop *op, char *err, size_t errlen);

/* Write a whole script / read one (ops allocated, *n set). */
void fsop_script_write(const struct fsop *ops, size_t n, FILE *f);
int fsop_script_read(FILE *f, struct fsop **ops, size_t *n, char *err, size_t errlen);

/* The data pattern of seed at byte positions [0, len). */
void fsop_fill(uint64_t seed, uint8_t *buf, size_t len);

/* splitmix64: the generator's random numbers. */
uint64_t fsop_rand(uint64_t *state);

#endif
