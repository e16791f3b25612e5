/* The image walk shared by the fuzz target (fuzz/fuzz_mount.c) and the
 * regression replay test (tests/test_fuzz_regress.c). Header-only so that
 * both builds compile it with their own flags. */
#ifndef NOSTALL_FUZZ_WALK_H
#define NOSTALL_FUZZ_WALK_H

#include "nostall/nostall.h"
#include "dev/dev.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FUZZ_MAX_IMAGE (16u << 20)
#define FUZZ_MAX_ENTRIES 400
#define FUZZ_MAX_DEPTH 12

struct fuzz_walk {
	struct nostall_fs *fs;
	unsigned entries;
	char buf[8192];
};

static void fuzz_visit_ino(struct fuzz_walk *w, uint64_t ino, int depth);

static int fuzz_dir_cb(void *ctx, const struct nostall_dirent *de)
{
	struct fuzz_walk *w = ctx;
	(void)de;
	return ++w->entries > FUZZ_MAX_ENTRIES ? 1 : 0;
}

static void fuzz_file(struct fuzz_walk *w, uint64_t ino, const struct nostall_stat *st)
{
	struct nostall_file *f = NULL;
	if (nostall_open_ino(w->fs, ino, NOSTALL_O_RDONLY, &f))
		return;
	(void)nostall_read(f, w->buf, sizeof w->buf);
	(void)nostall_read(f, w->buf, 100);
	if (st->size > 1)
		(void)nostall_pread(f, w->buf, sizeof w->buf, st->size - 1 - (st->size / 3));
	(void)nostall_pread(f, w->buf, 16, st->size);
	(void)nostall_pread(f, w->buf, 16, UINT64_MAX - 8);
	(void)nostall_lseek(f, -1, 2);
	(void)nostall_lseek(f, INT64_MAX, 1);
	uint64_t phys;
	uint32_t bs = st->blksize ? st->blksize : 1024;
	(void)nostall_bmap(f, 0, &phys);
	(void)nostall_bmap(f, 12, &phys);
	(void)nostall_bmap(f, 12 + bs / 4, &phys);
	(void)nostall_bmap(f, 12 + bs / 4 + (uint64_t)(bs / 4) * (bs / 4), &phys);
	(void)nostall_bmap(f, st->size / bs, &phys);
	(void)nostall_bmap(f, UINT64_MAX, &phys);
	struct nostall_stat fst;
	(void)nostall_fstat(f, &fst);
	nostall_close(f);
}

static void fuzz_xattrs(struct fuzz_walk *w, uint64_t ino)
{
	char list[1024];
	ssize_t n = nostall_listxattr_ino(w->fs, ino, list, sizeof list);
	if (n <= 0)
		return;
	(void)nostall_listxattr_ino(w->fs, ino, NULL, 0);
	(void)nostall_listxattr_ino(w->fs, ino, list, 1);
	for (char *p = list; p < list + n; p += strlen(p) + 1) {
		if (!memchr(p, 0, (size_t)(list + n - p)))
			break;
		(void)nostall_getxattr_ino(w->fs, ino, p, NULL, 0);
		(void)nostall_getxattr_ino(w->fs, ino, p, w->buf, sizeof w->buf);
		(void)nostall_getxattr_ino(w->fs, ino, p, w->buf, 1);
	}
	(void)nostall_getxattr_ino(w->fs, ino, "user.none", w->buf, sizeof w->buf);
}

static void fuzz_visit_ino(struct fuzz_walk *w, uint64_t ino, int depth)
{
	struct nostall_stat st;
	if (w->entries > FUZZ_MAX_ENTRIES || depth > FUZZ_MAX_DEPTH)
		return;
	if (nostall_stat_ino(w->fs, ino, &st))
		return;
	fuzz_xattrs(w, ino);
	if (S_ISREG(st.mode)) {
		fuzz_file(w, ino, &st);
	} else if (S_ISLNK(st.mode)) {
		(void)nostall_readlink_ino(w->fs, ino, w->buf, sizeof w->buf);
		(void)nostall_readlink_ino(w->fs, ino, w->buf, 3);
	} else if (S_ISDIR(st.mode)) {
		(void)nostall_readdir_ino(w->fs, ino, fuzz_dir_cb, w);
		struct nostall_dir *d = NULL;
		if (nostall_opendir_ino(w->fs, ino, &d))
			return;
		struct nostall_dirent de;
		uint64_t seen = 0, mid = 0;
		while (w->entries <= FUZZ_MAX_ENTRIES && nostall_dir_next(d, &de) == 1) {
			w->entries++;
			if (seen++ == 1)
				mid = nostall_dir_tell(d);
			uint64_t child;
			(void)nostall_lookup_at(w->fs, ino, de.name, &child);
			if (strcmp(de.name, ".") && strcmp(de.name, ".."))
				fuzz_visit_ino(w, de.ino, depth + 1);
		}
		(void)nostall_dir_seek(d, mid);
		(void)nostall_dir_next(d, &de);
		(void)nostall_dir_seek(d, 12345);
		(void)nostall_dir_next(d, &de);
		nostall_closedir(d);
	}
}

/* A mem: device holding data[0..size) (rounded up to whole sectors). */
static inline int fuzz_image_dev(const uint8_t *data, size_t size, struct dev **out)
{
	if (size < 1024 || size > FUZZ_MAX_IMAGE)
		return -1;
	size_t dsize = (size + 511) & ~(size_t)511;
	char spec[64];
	snprintf(spec, sizeof spec, "mem:%zu", dsize);
	struct dev *dev = NULL;
	if (dev_open(spec, &dev))
		return -1;
	uint8_t *img = calloc(1, dsize);
	if (!img) {
		dev_close(dev);
		return -1;
	}
	memcpy(img, data, size);
	/* in max_hw_sectors pieces (dev_rw_sync splits too) */
	int rc = dev_rw_sync(dev, DEV_OP_WRITE, 0, (uint32_t)(dsize / 512), img, 0);
	free(img);
	if (rc) {
		dev_close(dev);
		return -1;
	}
	*out = dev;
	return 0;
}

/* Walk the mount w->fs (read-only), then unmount it: with nothing open
 * that must succeed. */
static inline void fuzz_walk_mounted(struct fuzz_walk *w)
{
	struct nostall_info in;
	struct nostall_statfs sf;
	(void)nostall_statfs(w->fs, &sf);
	if (nostall_info(w->fs, &in) == 0) {
		uint32_t ng = in.groups < 64 ? in.groups : 64;
		for (uint32_t g = 0; g < ng; g++) {
			struct nostall_group_info gi;
			(void)nostall_group_info(w->fs, g, &gi);
		}
		(void)nostall_stat_ino(w->fs, in.inodes_count, &(struct nostall_stat){ 0 });
		(void)nostall_stat_ino(w->fs, (uint64_t)in.inodes_count + 1, &(struct nostall_stat){ 0 });
	}
	fuzz_visit_ino(w, NOSTALL_ROOT_INO, 0);
	static const char *const paths[] = { "/", "/a/../b", "lost+found/..", "/x/", "/l", "/l/",
					     "/d/l/..", "////", "/./.", "/lost+found/../lost+found/" };
	for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
		struct nostall_stat st;
		uint64_t ino;
		(void)nostall_stat(w->fs, paths[k], 0, &st);
		(void)nostall_stat(w->fs, paths[k], NOSTALL_NOFOLLOW, &st);
		(void)nostall_lookup(w->fs, paths[k], 0, &ino);
	}
	(void)nostall_stat_ino(w->fs, 0, &(struct nostall_stat){ 0 });
	(void)nostall_stat_ino(w->fs, 1, &(struct nostall_stat){ 0 });
	(void)nostall_stat_ino(w->fs, 8, &(struct nostall_stat){ 0 });
	if (nostall_umount(w->fs)) {
		fprintf(stderr, "fuzz: umount failed with nothing open\n");
		abort();
	}
}

/* Mount data[0..size) and walk it. Returns 1 if it mounted, 0 if not. */
static inline int fuzz_walk_image(const uint8_t *data, size_t size)
{
	struct dev *dev = NULL;
	if (fuzz_image_dev(data, size, &dev))
		return 0;
	struct fuzz_walk *w = calloc(1, sizeof *w);
	if (!w) {
		dev_close(dev);
		return 0;
	}
	int mounted = 0;
	if (nostall_mount_dev(dev, "cache=2M", NOSTALL_MOUNT_RDONLY, &w->fs) == 0) {
		mounted = 1;
		fuzz_walk_mounted(w);
	}
	free(w);
	dev_close(dev);
	return mounted;
}

#endif
