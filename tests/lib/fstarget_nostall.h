/* The nostall target: the model-based tests run through the library's
 * public write API (include/nostall/nostall.h) on an ext3 image
 * (docs/testing-model.md).
 *
 * NOT BUILT YET: fstarget_nostall.c compiles only with
 * -DNOSTALL_HAVE_WRITE_API, which the build defines once the write path
 * implements the API (issue 8); these declarations are hidden until then. */
#ifndef TESTS_LIB_FSTARGET_NOSTALL_H
#define TESTS_LIB_FSTARGET_NOSTALL_H

#include "fsrun.h"

#ifdef NOSTALL_HAVE_WRITE_API

struct fst_nostall_cfg {
	const char *image;  /* image file (checked with e2fsck, kernel-mounted) */
	const char *spec;   /* device spec to mount (docs/devices.md); NULL = image */
	const char *opts;   /* mount options ("data=journal", ...), may be NULL */
	bool fsck;          /* e2fsck -fn the image at every checkpoint */
};
/* Mount the image read-write. The checkpoint unmounts, runs e2fsck -fn
 * (when cfg->fsck) and mounts again, so the compare that follows reads
 * back what was written. */
int fst_nostall_new(const struct fst_nostall_cfg *cfg, struct fs_target **out);

/* mke2fs -q -F -t ext3 -b block_size -I 256 image size (a new sparse file). */
int fst_nostall_mkfs(const char *image, unsigned block_size, uint64_t size_bytes);
/* The same with mke2fs -t type (NULL: ext3). */
int fst_nostall_mkfs_type(const char *image, const char *type, unsigned block_size,
			  uint64_t size_bytes);

/* A factory making a fresh image per target (for the driver and the
 * minimizer): mkfs of `image` with the parameters, then fst_nostall_new. */
struct fst_nostall_factory {
	char image[4096];
	unsigned block_size;
	uint64_t size_bytes;
	const char *opts;
	bool fsck;
	const char *fs_type; /* mke2fs -t and the kernel's mount -t; NULL: ext3 */
};
int fst_nostall_factory_create(void *ctx, struct fs_target **out); /* ctx: the struct above */

/* Unmount now (the target is then unusable until destroyed): 0 or -errno. */
int fst_nostall_unmount(struct fs_target *t);

/* As root: mount the image with the kernel (ext3, read-only, loop) on a
 * temporary directory and compare it with the runner's model: 0 same, 1
 * different (fsrun_msg), <0 could not mount. */
int fst_nostall_kernel_compare(struct fsrun *r, const char *image);
/* The same with the kernel's mount -t type (NULL: ext3). */
int fst_nostall_kernel_compare_type(struct fsrun *r, const char *image, const char *type);

#endif
#endif
