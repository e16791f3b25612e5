/* The write-path walk shared by the fuzz target fuzz/fuzz_write.c and the
 * regression replay (tests/test_fuzz_regress.c): mount a mutated image
 * read-write (journal recovery and orphan cleanup run first), then change
 * what it holds through the inode-number API - appends, writes into holes
 * and past the indirect limits, truncates, xattrs set and removed, entries
 * created in every directory met (htree ones grow and split), renames across
 * directories and over targets, links, unlinks of open files, rmdir - then
 * sync, unmount and mount again read-only to walk the result. Every call may
 * fail; none may crash, hang, leak or trip a sanitizer, and a corrupt
 * structure must come back as an error (the read-only walk of fuzz_walk.h
 * covers the read side).
 *
 * The image's last byte picks the data mode, so the fuzzer reaches all
 * four. errors=continue keeps the mount writable after the first corruption
 * is met (errors=panic from the superblock would abort the process, by
 * design), so the writes after it are exercised too. Header-only: both
 * builds compile it with their own flags. */
#ifndef NOSTALL_FUZZ_WRITE_H
#define NOSTALL_FUZZ_WRITE_H

#include "fuzz_walk.h"

#define FUZZ_W_MAX_TARGETS 48

struct fuzz_target {
	uint64_t dir, ino;
	uint32_t mode;
	uint64_t size;
	char name[64]; /* short names only: the walk renames and links them */
};

struct fuzz_wr {
	struct nostall_fs *fs;
	unsigned n, entries;
	unsigned ok; /* calls that succeeded (a walk that changes nothing tests nothing) */
	struct fuzz_target t[FUZZ_W_MAX_TARGETS];
	char buf[8192];
};

/* Count a call's success (>= 0). */
#define FZ(w, call) ((void)((call) >= 0 ? (w)->ok++ : 0))

/* Collect up to FUZZ_W_MAX_TARGETS entries breadth-first-ish (a bounded
 * recursion, as the read walk). */
static void fuzz_w_collect(struct fuzz_wr *w, uint64_t dir, int depth)
{
	if (depth > 4 || w->n >= FUZZ_W_MAX_TARGETS)
		return;
	struct nostall_dir *d = NULL;
	if (nostall_opendir_ino(w->fs, dir, &d))
		return;
	struct nostall_dirent de;
	uint64_t subdirs[8];
	unsigned nsub = 0;
	while (w->n < FUZZ_W_MAX_TARGETS && ++w->entries < FUZZ_MAX_ENTRIES && nostall_dir_next(d, &de) == 1) {
		if (!strcmp(de.name, ".") || !strcmp(de.name, "..") || de.name_len >= sizeof w->t[0].name)
			continue;
		struct nostall_stat st;
		if (nostall_stat_ino(w->fs, de.ino, &st))
			continue;
		struct fuzz_target *t = &w->t[w->n++];
		t->dir = dir;
		t->ino = de.ino;
		t->mode = st.mode;
		t->size = st.size;
		memcpy(t->name, de.name, de.name_len + 1u); /* fits: checked above */
		if (S_ISDIR(st.mode) && nsub < 8)
			subdirs[nsub++] = de.ino;
	}
	nostall_closedir(d);
	for (unsigned k = 0; k < nsub; k++)
		fuzz_w_collect(w, subdirs[k], depth + 1);
}

static void fuzz_w_file(struct fuzz_wr *w, struct fuzz_target *t, unsigned k)
{
	struct nostall_file *f = NULL;
	if (nostall_open_ino(w->fs, t->ino, NOSTALL_O_RDWR, &f))
		return;
	memset(w->buf, 'a' + (int)(k % 26), sizeof w->buf);
	uint32_t bs = 1024;
	struct nostall_stat st;
	if (nostall_fstat(f, &st) == 0 && st.blksize)
		bs = st.blksize;
	FZ(w, nostall_pwrite(f, w->buf, 100, 0));                  /* overwrite */
	FZ(w, nostall_pwrite(f, w->buf, 3000, t->size));            /* append */
	FZ(w, nostall_pwrite(f, w->buf, 10, (uint64_t)(12 + bs / 4) * bs + 7)); /* double indirect */
	FZ(w, nostall_pwrite(f, w->buf, 10, (uint64_t)bs * 40));    /* into a hole, single indirect */
	FZ(w, nostall_read(f, w->buf, sizeof w->buf));
	if (k % 3 == 0)
		FZ(w, nostall_fsync(f, (int)(k % 2)));
	FZ(w, nostall_ftruncate(f, t->size / 2));
	FZ(w, nostall_pwrite(f, w->buf, 5000, t->size / 2 + 1));
	if (k % 4 == 1)
		FZ(w, nostall_ftruncate(f, 0));
	FZ(w, nostall_setxattr_ino(w->fs, t->ino, "user.fz", "v", 1, 0));
	FZ(w, nostall_setxattr_ino(w->fs, t->ino, "trusted.fzbig", w->buf, 600, 0));
	nostall_close(f);
}

static void fuzz_w_xattrs(struct fuzz_wr *w, uint64_t ino)
{
	char list[512];
	ssize_t n = nostall_listxattr_ino(w->fs, ino, list, sizeof list);
	if (n > 0 && memchr(list, 0, (size_t)n)) {
		FZ(w, nostall_removexattr_ino(w->fs, ino, list));
		FZ(w, nostall_setxattr_ino(w->fs, ino, "user.fz2", "x", 1, NOSTALL_XATTR_REPLACE));
	}
	FZ(w, nostall_setxattr_ino(w->fs, ino, "user.fz3", "abcdef", 6, NOSTALL_XATTR_CREATE));
}

static void fuzz_w_dir(struct fuzz_wr *w, struct fuzz_target *t, unsigned k)
{
	struct nostall_stat st;
	char name[96];
	/* enough entries to fill a block and split an htree leaf */
	unsigned many = k < 4 ? 40 : 6;
	for (unsigned i = 0; i < many; i++) {
		snprintf(name, sizeof name, "fz-entry-with-a-longer-name-%u-%u", k, i);
		struct nostall_file *f = NULL;
		if (nostall_create_at(w->fs, t->ino, name, NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644, &st, &f) == 0) {
			FZ(w, nostall_pwrite(f, w->buf, 1 + i * 37, 0));
			if (i % 5 == 0) { /* unlinked while open: the close frees it */
				FZ(w, nostall_unlink_at(w->fs, t->ino, name));
				FZ(w, nostall_pwrite(f, w->buf, 2000, 100));
			}
			nostall_close(f);
			nostall_forget(w->fs, st.ino, 1);
		}
	}
	if (nostall_mkdir_at(w->fs, t->ino, "fzd", 0755, &st) == 0) {
		uint64_t sub = st.ino;
		nostall_forget(w->fs, sub, 1);
		if (nostall_symlink_at(w->fs, sub, "sl", "../a/fairly/long/target/that/is/not/fast/because/it/is/long/"
				       "enough/to/need/a/block/of/its/own", &st) == 0)
			nostall_forget(w->fs, st.ino, 1);
		if (nostall_mknod_at(w->fs, sub, "fifo", S_IFIFO | 0600, 0, &st) == 0)
			nostall_forget(w->fs, st.ino, 1);
		snprintf(name, sizeof name, "fz-entry-with-a-longer-name-%u-1", k);
		FZ(w, nostall_rename_at(w->fs, t->ino, name, sub, "moved", 0));
		FZ(w, nostall_rmdir_at(w->fs, t->ino, "fzd")); /* not empty */
	}
	fuzz_w_xattrs(w, t->ino);
	struct nostall_setattr sa = {.valid = NOSTALL_SET_MODE | NOSTALL_SET_MTIME_NOW, .mode = S_IFDIR | 0750};
	FZ(w, nostall_setattr_ino(w->fs, t->ino, &sa, NULL));
}

/* Changes between collected entries: renames over, across, links,
 * exchanges, unlinks and rmdirs. */
static void fuzz_w_namespace(struct fuzz_wr *w)
{
	for (unsigned k = 0; k + 1 < w->n; k += 2) {
		struct fuzz_target *a = &w->t[k], *b = &w->t[k + 1];
		struct nostall_stat st;
		switch (k % 8) {
		case 0:
			FZ(w, nostall_rename_at(w->fs, a->dir, a->name, b->dir, b->name, 0));
			break;
		case 2:
			FZ(w, nostall_rename_at(w->fs, a->dir, a->name, b->dir, b->name, NOSTALL_RENAME_EXCHANGE));
			break;
		case 4:
			if (nostall_link_at(w->fs, a->ino, b->dir, "fz-link", &st) == 0)
				nostall_forget(w->fs, st.ino, 1);
			FZ(w, nostall_unlink_at(w->fs, a->dir, a->name));
			break;
		default:
			if (S_ISDIR(a->mode))
				FZ(w, nostall_rmdir_at(w->fs, a->dir, a->name));
			else
				FZ(w, nostall_unlink_at(w->fs, a->dir, a->name));
			FZ(w, nostall_rename_at(w->fs, b->dir, b->name, NOSTALL_ROOT_INO, "fz-top", 0));
			break;
		}
	}
}

/* Mount data[0..size) read-write, change it, unmount, walk the result.
 * Returns 1 if the read-write mount succeeded; *ok (may be NULL) gets the
 * number of calls that succeeded. */
static inline int fuzz_write_image(const uint8_t *data, size_t size, unsigned *ok)
{
	if (ok)
		*ok = 0;
	struct dev *dev = NULL;
	if (fuzz_image_dev(data, size, &dev))
		return 0;
	static const char *const modes[] = {"data=ordered", "data=writeback", "data=journal", "data=guarded"};
	char opts[128];
	snprintf(opts, sizeof opts, "cache=2M,errors=continue,%s", modes[data[size - 1] % 4]);
	/* A journal-less image (ext2: s_feature_compat at 1024 + 0x5c lacks
	 * has_journal) refuses data= read-write, as the kernel does: it is
	 * written without one (docs/ext2-nojournal.md). */
	if (size > 1024 + 0x60 && !(data[1024 + 0x5c] & 0x4))
		snprintf(opts, sizeof opts, "cache=2M,errors=continue");
	struct fuzz_wr *w = calloc(1, sizeof *w);
	if (!w) {
		dev_close(dev);
		return 0;
	}
	int mounted = 0;
	if (nostall_mount_dev(dev, opts, 0, &w->fs) == 0) {
		mounted = 1;
		fuzz_w_collect(w, NOSTALL_ROOT_INO, 0);
		struct fuzz_target root = {.dir = NOSTALL_ROOT_INO, .ino = NOSTALL_ROOT_INO, .mode = S_IFDIR};
		fuzz_w_dir(w, &root, 0);
		for (unsigned k = 0; k < w->n; k++) {
			if (S_ISREG(w->t[k].mode))
				fuzz_w_file(w, &w->t[k], k + 1);
			else if (S_ISDIR(w->t[k].mode))
				fuzz_w_dir(w, &w->t[k], k + 1);
			else
				fuzz_w_xattrs(w, w->t[k].ino);
		}
		fuzz_w_namespace(w);
		FZ(w, nostall_sync(w->fs));
		/* May fail (an aborted journal): it must still release it all. */
		(void)nostall_umount(w->fs);
		w->fs = NULL;
		if (ok)
			*ok = w->ok;
		/* What the writes left must be as safe to read as any image. */
		struct fuzz_walk *r = calloc(1, sizeof *r);
		if (r) {
			if (nostall_mount_dev(dev, "cache=2M", NOSTALL_MOUNT_RDONLY, &r->fs) == 0)
				fuzz_walk_mounted(r);
			free(r);
		}
	}
	free(w);
	dev_close(dev);
	return mounted;
}

#endif
