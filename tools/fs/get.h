/* nostall get: state shared by the tree walk (get.c) and the writing of
 * data and attributes on the host (get_host.c). */
#ifndef NOSTALL_TOOLS_FS_GET_H
#define NOSTALL_TOOLS_FS_GET_H

#include "common.h"

struct hl_entry { /* hard-link map: fs inode -> path of its first copy */
	uint64_t ino;
	char *relpath; /* relative to the top of the copy (top_fd) */
};

/* Directories nested deeper than this are refused (-ELOOP). */
#define GET_MAX_DEPTH 2048

struct get_ctx {
	const struct cli_args *a;
	struct nostall_fs *fs;
	bool root;          /* euid 0: owners and device nodes */
	bool tty;           /* progress on stderr */
	int top_fd;         /* parent directory of the copy's top */
	char *buf;          /* CLI_IO_CHUNK bytes */
	uint32_t bsize;
	struct hl_entry *hl;
	size_t nhl, caphl;
	/* counters */
	uint64_t files, dirs, links, specials, bytes, hardlinks;
	uint64_t skipped_dev, xattr_fail, owner_fail;
	int ret;            /* exit status: 1 once anything failed */
	bool warned_xattr_ns[4];
	/* inode numbers of the directories being copied, by depth: a corrupt
	 * image's name pointing back up the tree is refused, not copied again
	 * at every level */
	uint64_t anc[GET_MAX_DEPTH + 1];
};

/* "nostall get: PATH: WHAT: reason" (cli_error()), and the copy fails
 * (g->ret = 1). Returns rc. */
int get_error(struct get_ctx *g, const char *path, const char *what, int rc, bool fs_side);

/* Copy the contents of the open image file f (stat st) to host fd, holes
 * preserved; progress on stderr for large files. 0 or a negative errno
 * (reported). */
int get_data_copy(struct get_ctx *g, struct nostall_file *f, const struct nostall_stat *st, int fd,
		  const char *path);

/* Owner (as root), mode (not for symlinks), xattrs and times of st onto the
 * host entry dirfd/name. Failures are reported and counted. */
void get_attrs_set(struct get_ctx *g, int dirfd, const char *name, const struct nostall_stat *st,
		   const char *path);

#endif
