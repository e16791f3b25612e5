/* Private to src/api: the handle structs and helpers shared by api_mount.c,
 * api_inode.c, api_dir.c, api_file.c and api_info.c.
 *
 * Locking: a mounted filesystem has no API-level lock; the count of open
 * handles is atomic. Inodes are ext3's shared, reference-counted inodes
 * (ext3_iget / ext3_iput) with their own locks (ext3.h, "inodes"): a handle
 * holds one reference for its lifetime. Each file handle has a mutex for
 * its position, each directory iterator one for its batch and position; a
 * regular file's handle also owns a reader (ext3_fread: readahead windows,
 * with their own mutex, taken after the position mutex, before the inode's
 * lock). FUSE lookup counts (nlookup / forget) will live here, per inode
 * number, each non-zero count holding one ext3 reference. */
#ifndef NOSTALL_API_INT_H
#define NOSTALL_API_INT_H

#include "nostall/nostall.h"

#include "ext3/ext3.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct nostall_fs {
	struct dev *dev;  /* owned when own_dev */
	bool own_dev;
	struct ext3_fs *e;
	atomic_int handles; /* open files and directory iterators */
	size_t file_readahead; /* max readahead window per open file, 0 = off */
};

struct nostall_file {
	struct nostall_fs *fs;
	pthread_mutex_t lock; /* protects pos */
	uint64_t pos;
	struct ext3_inode *in; /* a reference */
	uint16_t mode;         /* file type and permissions at open */
	struct ext3_fread *rd; /* regular files: data reads with readahead */
};

#define DIR_BATCH 64
struct nostall_dir {
	struct nostall_fs *fs;
	pthread_mutex_t lock; /* protects everything below */
	uint64_t pos;         /* position of the next entry to return */
	struct nostall_dirent batch[DIR_BATCH];
	unsigned nbatch, at;
	bool eof;
	struct ext3_inode *in; /* a reference */
};

/* Get inode ino with a reference; it must be in use (-ENOENT otherwise),
 * -EINVAL out of range. */
int api_inode_get(struct nostall_fs *fs, uint64_t ino, struct ext3_inode **out);
/* Resolve a path (flags: NOSTALL_NOFOLLOW). */
int api_path_ino(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino);
void api_stat_fill(struct nostall_fs *fs, struct ext3_inode *in, struct nostall_stat *st);

#endif
