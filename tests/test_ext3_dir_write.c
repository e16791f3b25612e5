/* ext3 directory writing (src/ext3/dirblock.c, dir_write.c, dx_write.c).
 *
 * Part 1, pure: the in-block operations on a block buffer (insert with
 * rec_len splitting, removal by merging, leaf split by hash under all six
 * hash versions, the dx root built from a full first block, index entry
 * insertion), checked against a model and the format rules.
 * Part 2, on images (mke2fs, mounted writable; oracles e2fsck -fn,
 * debugfs htree_dump / stat, and ext3_dir_lookup): linear directories,
 * htree directories under the six hash variants, growth to a two-level
 * index, hash collisions, 255-byte names, a debugfs-made directory
 * extended, corruption refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dev/dev.h"
#include "ext3/dir_int.h"
#include "ext3/ext3_format.h"
#include "ext3/write.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXBS 4096u

static const uint32_t seed0[4] = {0x11111111u, 0x22222222u, 0x33333333u, 0x44444444u};

/* ---- helpers ---- */

static void names_make(char *out, size_t cap, unsigned i, unsigned len)
{
	assert_true(len < cap && len >= 1);
	snprintf(out, cap, "n%u_", i);
	size_t l = strlen(out);
	for (; l < len; l++)
		out[l] = (char)('a' + (i * 7 + l) % 26);
	out[len] = '\0';
}

/* Every used entry of the block, in block order. */
struct seen {
	unsigned n;
	char name[MAXBS / 12][256];
	uint32_t ino[MAXBS / 12];
};

static void block_list(const uint8_t *b, unsigned bs, struct seen *s)
{
	assert_int_equal(ext3_dirblk_check(b, bs, 0, true), 0);
	s->n = 0;
	for (unsigned off = 0; off < bs;) {
		struct ext3_dirent_view de;
		assert_int_equal(ext3_dirblock_entry(b, bs, off, 0, true, &de), 0);
		if (de.inode) {
			memcpy(s->name[s->n], de.name, de.name_len);
			s->name[s->n][de.name_len] = '\0';
			s->ino[s->n++] = de.inode;
		}
		off += de.rec_len;
	}
}

static bool seen_has(const struct seen *s, const char *name, uint32_t ino)
{
	for (unsigned i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0 && (!ino || s->ino[i] == ino))
			return true;
	return false;
}

static uint32_t hash_of(const char *name, int version)
{
	uint32_t h;
	assert_int_equal(ext3_dx_hash(name, strlen(name), version, seed0, &h, NULL), 0);
	return h;
}

/* ---- insert / find / remove ---- */

static void test_block_insert_remove(void **state)
{
	(void)state;
	static const unsigned sizes[] = {1024, 4096};
	for (unsigned si = 0; si < 2; si++) {
		unsigned bs = sizes[si];
		uint8_t b[MAXBS];
		ext3_dirblk_dots(b, bs, 12, 2, true);
		unsigned dd;
		assert_int_equal(ext3_dirblk_dots_check(b, bs, &dd), 0);
		assert_int_equal(dd, 12);
		assert_int_equal(ext3_dirblk_live(b, bs, 2), 0);
		/* fill with 20-byte names (rec_len 28) until full */
		char nm[64];
		unsigned n = 0, off;
		while (ext3_dirblk_room(b, bs, 20, &off) == 0) {
			names_make(nm, sizeof nm, n, 20);
			ext3_dirblk_put(b, off, nm, 20, 100 + n, EXT3_FT_REG_FILE);
			n++;
		}
		/* 24 bytes of dots, then 28 per entry */
		assert_int_equal(n, (bs - 24) / 28);
		assert_int_equal(ext3_dirblk_live(b, bs, 2), n);
		struct seen *s = malloc(sizeof *s);
		block_list(b, bs, s);
		assert_int_equal(s->n, n + 2);
		for (unsigned i = 0; i < n; i++) {
			names_make(nm, sizeof nm, i, 20);
			assert_true(seen_has(s, nm, 100 + i));
		}
		/* remove the third entry: merged into the previous one */
		names_make(nm, sizeof nm, 2, 20);
		unsigned prev;
		assert_int_equal(ext3_dirblk_find(b, bs, nm, 20, &off, &prev), 0);
		assert_int_equal(off, 24 + 2 * 28);
		assert_int_equal(prev, 24 + 28);
		ext3_dirblk_del(b, off, prev);
		assert_int_equal(ext3_dirblk_find(b, bs, nm, 20, &off, &prev), -ENOENT);
		const struct ext3_dir_entry_2 *pe = (const struct ext3_dir_entry_2 *)(b + 24 + 28);
		assert_int_equal(le16_to_cpu(pe->rec_len), 56);
		/* a name of the same size goes back into that slack */
		assert_int_equal(ext3_dirblk_room(b, bs, 17, &off), 0);
		assert_int_equal(off, 24 + 28);
		ext3_dirblk_put(b, off, "seventeen_bytes_x", 17, 999, EXT3_FT_DIR);
		assert_int_equal(ext3_dirblk_find(b, bs, "seventeen_bytes_x", 17, &off, &prev), 0);
		assert_int_equal(off, 24 + 2 * 28);
		assert_int_equal(b[off + 7], EXT3_FT_DIR);
		/* a 255-byte name does not fit any more */
		assert_int_equal(ext3_dirblk_room(b, bs, 255, &off), -ENOSPC);
		block_list(b, bs, s);
		assert_int_equal(s->n, n + 2);
		free(s);

		/* a block without dots: removing its first entry zeroes the inode */
		ext3_dirblk_init(b, bs);
		assert_int_equal(ext3_dirblk_live(b, bs, 0), 0);
		assert_int_equal(ext3_dirblk_room(b, bs, 255, &off), 0);
		assert_int_equal(off, 0);
		ext3_dirblk_put(b, 0, "first", 5, 77, 0);
		assert_int_equal(ext3_dirblk_room(b, bs, 5, &off), 0);
		ext3_dirblk_put(b, off, "second", 6, 78, 0);
		assert_int_equal(ext3_dirblk_find(b, bs, "first", 5, &off, &prev), 0);
		assert_int_equal(off, 0);
		assert_int_equal(prev, UINT32_MAX);
		ext3_dirblk_del(b, off, prev);
		assert_int_equal(ext3_dirblk_live(b, bs, 0), 1);
		assert_int_equal(ext3_dirblk_check(b, bs, 0, true), 0);
		/* the unused leading entry is room again (its whole rec_len) */
		assert_int_equal(ext3_dirblk_room(b, bs, 3, &off), 0);
		assert_int_equal(off, 0);
	}
}

/* Random inserts and removals against a model. */
static void test_block_random(void **state)
{
	(void)state;
	unsigned seed = (unsigned)time(NULL);
	printf("test_block_random seed %u\n", seed);
	srand(seed);
	unsigned bs = 1024;
	uint8_t b[MAXBS];
	ext3_dirblk_dots(b, bs, 2, 2, true);
	struct model {
		char name[256];
		unsigned len;
		bool live;
	} *m = calloc(400, sizeof *m);
	struct seen *s = malloc(sizeof *s);
	unsigned nm = 0;
	for (int op = 0; op < 5000; op++) {
		if (rand() % 2 && nm < 400) {
			unsigned len = 1 + (unsigned)rand() % (rand() % 8 ? 30 : 255);
			char name[256];
			names_make(name, sizeof name, (unsigned)op, len < 8 ? 8 : len);
			len = (unsigned)strlen(name);
			unsigned off;
			if (ext3_dirblk_room(b, bs, len, &off) == 0) {
				ext3_dirblk_put(b, off, name, len, (uint32_t)op + 1, EXT3_FT_FIFO);
				memcpy(m[nm].name, name, len + 1);
				m[nm].len = len;
				m[nm++].live = true;
			}
		} else if (nm) {
			struct model *e = &m[(unsigned)rand() % nm];
			unsigned off, prev;
			int rc = ext3_dirblk_find(b, bs, e->name, e->len, &off, &prev);
			assert_int_equal(rc, e->live ? 0 : -ENOENT);
			if (rc == 0)
				ext3_dirblk_del(b, off, prev);
			e->live = false;
		}
		block_list(b, bs, s);
		unsigned live = 0;
		for (unsigned i = 0; i < nm; i++)
			if (m[i].live) {
				live++;
				assert_true(seen_has(s, m[i].name, 0));
			}
		assert_int_equal(s->n, live + 2);
	}
	free(s);
	free(m);
}

/* ---- leaf split ---- */

static void split_check(unsigned bs, int version, unsigned namelen, bool same)
{
	uint8_t b1[MAXBS], b2[MAXBS], orig[MAXBS];
	ext3_dirblk_init(b1, bs);
	char nm[300];
	unsigned n = 0, off;
	while (ext3_dirblk_room(b1, bs, namelen, &off) == 0) {
		names_make(nm, sizeof nm, same ? 0 : n, namelen);
		ext3_dirblk_put(b1, off, nm, namelen, 10 + n, EXT3_FT_REG_FILE);
		n++;
	}
	memcpy(orig, b1, bs);
	struct ext3_dx_hashfn hf = {version, seed0};
	uint32_t sh;
	assert_int_equal(ext3_dirblk_split(b1, b2, bs, &hf, &sh), 0);
	struct seen *s0 = malloc(sizeof *s0), *s1 = malloc(sizeof *s1), *s2 = malloc(sizeof *s2);
	block_list(orig, bs, s0);
	block_list(b1, bs, s1);
	block_list(b2, bs, s2);
	assert_int_equal(s1->n + s2->n, n);
	assert_true(s1->n >= 1 && s2->n >= 1);
	/* roughly half the bytes each */
	assert_true(s1->n * 2 + 2 >= s2->n && s2->n * 2 + 2 >= s1->n);
	uint32_t h2 = sh & ~1u, max1 = 0, prev2 = 0;
	for (unsigned i = 0; i < s1->n; i++) {
		assert_true(seen_has(s0, s1->name[i], s1->ino[i]));
		uint32_t h = hash_of(s1->name[i], version);
		assert_true(h <= h2);
		if (h > max1)
			max1 = h;
	}
	for (unsigned i = 0; i < s2->n; i++) {
		assert_true(seen_has(s0, s2->name[i], s2->ino[i]));
		uint32_t h = hash_of(s2->name[i], version);
		assert_true(h >= h2);
		assert_true(h >= prev2); /* moved in hash order */
		prev2 = h;
	}
	assert_int_equal(hash_of(s2->name[0], version), h2);
	/* the continuation bit says whether the split hash also ends b1 */
	assert_int_equal(sh & 1u, max1 == h2 ? 1u : 0u);
	if (same)
		assert_int_equal(sh & 1u, 1u);
	/* each half has room for a long name again */
	assert_int_equal(ext3_dirblk_room(b1, bs, 255, &off), 0);
	assert_int_equal(ext3_dirblk_room(b2, bs, 255, &off), 0);
	free(s0);
	free(s1);
	free(s2);
}

static void test_split_all_hashes(void **state)
{
	(void)state;
	for (int v = EXT3_DX_HASH_LEGACY; v <= EXT3_DX_HASH_TEA_UNSIGNED; v++) {
		split_check(1024, v, 13, false);
		split_check(4096, v, 13, false);
		split_check(1024, v, 255, false);
		split_check(4096, v, 100, false);
		split_check(1024, v, 9, true);
	}
	/* fewer than two used entries: nothing to split */
	uint8_t b1[MAXBS], b2[MAXBS];
	ext3_dirblk_init(b1, 1024);
	ext3_dirblk_put(b1, 0, "only", 4, 5, 1);
	struct ext3_dx_hashfn hf = {EXT3_DX_HASH_TEA, NULL};
	uint32_t sh;
	assert_int_equal(ext3_dirblk_split(b1, b2, 1024, &hf, &sh), -ENOSPC);
}

/* ---- dx root and index entries ---- */

static void test_dx_root_make(void **state)
{
	(void)state;
	static const unsigned sizes[] = {1024, 4096};
	for (unsigned si = 0; si < 2; si++) {
		unsigned bs = sizes[si];
		uint8_t root[MAXBS], leaf[MAXBS];
		ext3_dirblk_dots(root, bs, 40, 2, true);
		char nm[64];
		unsigned n = 0, off;
		while (ext3_dirblk_room(root, bs, 30, &off) == 0) {
			names_make(nm, sizeof nm, n, 30);
			ext3_dirblk_put(root, off, nm, 30, 50 + n, EXT3_FT_REG_FILE);
			n++;
		}
		assert_int_equal(ext3_dx_root_make(root, leaf, bs, EXT3_DX_HASH_HALF_MD4), 0);
		unsigned hv, levels;
		assert_int_equal(ext3_dx_root_check(root, &hv, &levels), 0);
		assert_int_equal(hv, EXT3_DX_HASH_HALF_MD4);
		assert_int_equal(levels, 0);
		assert_int_equal(ext3_dx_entries_check(root, EXT3_DX_ROOT_CL, bs, 2), 0);
		assert_int_equal(ext3_dx_limit(root, EXT3_DX_ROOT_CL), (bs - 32) / 8);
		assert_int_equal(ext3_dx_count(root, EXT3_DX_ROOT_CL), 1);
		assert_int_equal(ext3_dx_block_at(root, EXT3_DX_ROOT_CL, 0), 1);
		/* the root still reads as a directory block with "." and ".." only */
		assert_int_equal(ext3_dirblk_check(root, bs, 0, true), 0);
		assert_int_equal(ext3_dirblk_live(root, bs, 0), 2);
		struct seen *s = malloc(sizeof *s);
		block_list(leaf, bs, s);
		assert_int_equal(s->n, n);
		for (unsigned i = 0; i < n; i++) {
			names_make(nm, sizeof nm, i, 30);
			assert_true(seen_has(s, nm, 50 + i));
		}
		free(s);
		/* index entries: insert after the chosen one, choose by hash */
		ext3_dx_insert(root, EXT3_DX_ROOT_CL, 0, 0x80000000u, 2);
		ext3_dx_insert(root, EXT3_DX_ROOT_CL, 0, 0x40000000u, 3);
		ext3_dx_insert(root, EXT3_DX_ROOT_CL, 2, 0xc0000001u, 4);
		assert_int_equal(ext3_dx_entries_check(root, EXT3_DX_ROOT_CL, bs, 5), 0);
		assert_int_equal(ext3_dx_entries_check(root, EXT3_DX_ROOT_CL, bs, 4), -EUCLEAN);
		assert_int_equal(ext3_dx_count(root, EXT3_DX_ROOT_CL), 4);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0x10), 0);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0x40000000u), 1);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0x9000000u), 0);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0xc0000000u), 2);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0xfffffffcu), 3);
		assert_int_equal(ext3_dx_block_at(root, EXT3_DX_ROOT_CL, 3), 4);
		assert_int_equal(ext3_dx_hash_at(root, EXT3_DX_ROOT_CL, 3), 0xc0000001u);
		/* an interior node */
		uint8_t node[MAXBS];
		ext3_dx_node_init(node, bs);
		assert_int_equal(ext3_dx_node_check(node, bs), 0);
		assert_int_equal(ext3_dirblk_check(node, bs, 0, true), 0);
		assert_int_equal(ext3_dirblk_live(node, bs, 0), 0);
		assert_int_equal(ext3_dx_limit(node, EXT3_DX_NODE_CL), (bs - 8) / 8);
		/* a first block that is not "." (12) + ".." cannot become a root */
		ext3_dirblk_init(root, bs);
		assert_int_equal(ext3_dx_root_make(root, leaf, bs, 1), -EINVAL);
	}
}

static void test_mode_to_ft(void **state)
{
	(void)state;
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFREG | 0644), EXT3_FT_REG_FILE);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFDIR | 0755), EXT3_FT_DIR);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFCHR), EXT3_FT_CHRDEV);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFBLK), EXT3_FT_BLKDEV);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFIFO), EXT3_FT_FIFO);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFSOCK), EXT3_FT_SOCK);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFLNK | 0777), EXT3_FT_SYMLINK);
	assert_int_equal(ext3_mode_to_ft(0), EXT3_FT_UNKNOWN);
}

/* ==== part 2: on images ==== */

static char tmpdir[256];
static bool have_e2fs;

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Lines of the command's output containing needle. */
static unsigned cmd_count(const char *needle, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static unsigned cmd_count(const char *needle, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[4096];
	unsigned n = 0;
	while (fgets(line, sizeof line, p))
		if (strstr(line, needle))
			n++;
	pclose(p);
	return n;
}

static void fsck_clean(const char *img)
{
	int rc = run("e2fsck -fn '%s' >'%s/fsck.out' 2>&1", img, tmpdir);
	if (rc != 0) {
		(void)run("cat '%s/fsck.out'", tmpdir);
		fail_msg("e2fsck -fn %s: exit %d", img, rc);
	}
}

/* mke2fs an ext3 image; extra: more mke2fs options. */
static void mkimg(char *img, size_t cap, const char *tag, unsigned bs, const char *extra)
{
	snprintf(img, cap, "%s/%s_%u.img", tmpdir, tag, bs);
	assert_int_equal(run("mke2fs -q -t ext3 -F -b %u %s '%s' 32M >/dev/null 2>&1", bs, extra, img),
			 0);
}

struct wfs {
	struct dev *dev;
	struct ext3_fs *fs;
	struct ext3_inode *root;
};

static void wmount(const char *img, struct wfs *w)
{
	char spec[400];
	snprintf(spec, sizeof spec, "file:%s", img);
	assert_int_equal(dev_open(spec, &w->dev), 0);
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	o.errors = EXT3_ERRORS_CONTINUE;
	int rc = ext3_fs_mount(w->dev, &o, EXT3_MOUNT_JOURNAL, &w->fs);
	ext3_mount_opts_release(&o);
	if (rc)
		fail_msg("mount %s: %s", img, err_last(rc));
	assert_int_equal(ext3_iget(w->fs, EXT3_ROOT_INO, &w->root), 0);
}

static void wumount(struct wfs *w)
{
	ext3_iput(w->root);
	int rc = ext3_fs_unmount(w->fs);
	if (rc)
		fail_msg("unmount: %s", err_last(rc));
	dev_close(w->dev);
}

static struct jbd_handle *hstart(struct ext3_fs *fs)
{
	struct jbd_handle *h;
	int rc = ext3_journal_start(fs, ext3_credits_dirop(fs), &h);
	if (rc)
		fail_msg("journal start: %s", err_last(rc));
	return h;
}

static void hstop(struct jbd_handle *h) { assert_int_equal(ext3_journal_stop(h), 0); }

/* A new regular file named name in dir (links 1); returned referenced. */
static struct ext3_inode *mkfile(struct ext3_fs *fs, struct ext3_inode *dir, const char *name)
{
	struct jbd_handle *h = hstart(fs);
	pthread_rwlock_wrlock(&dir->lock);
	struct ext3_inode *in;
	int rc = ext3_new_inode(h, dir, EXT3_S_IFREG | 0644, 0, 0, &in);
	if (rc)
		fail_msg("new inode: %s", err_last(rc));
	in->a.links = 1;
	assert_int_equal(ext3_mark_inode_dirty(h, in), 0);
	rc = ext3_dir_add(h, dir, name, strlen(name), in->ino, in->a.mode);
	if (rc)
		fail_msg("add %s: %s", name, err_last(rc));
	pthread_rwlock_unlock(&in->lock);
	pthread_rwlock_unlock(&dir->lock);
	hstop(h);
	return in;
}

/* A new directory named name in parent; returned referenced. */
static struct ext3_inode *mkdir_in(struct ext3_fs *fs, struct ext3_inode *parent, const char *name)
{
	struct jbd_handle *h = hstart(fs);
	pthread_rwlock_wrlock(&parent->lock);
	struct ext3_inode *d;
	int rc = ext3_new_inode(h, parent, EXT3_S_IFDIR | 0755, 0, 0, &d);
	if (rc)
		fail_msg("new dir inode: %s", err_last(rc));
	assert_int_equal(ext3_dir_make(h, d, parent->ino), 0);
	assert_int_equal(d->i_size, fs->g.block_size);
	d->a.links = 2;
	assert_int_equal(ext3_mark_inode_dirty(h, d), 0);
	bool empty = false;
	assert_int_equal(ext3_dir_is_empty(d, &empty), 0);
	assert_true(empty);
	assert_int_equal(ext3_dir_add(h, parent, name, strlen(name), d->ino, d->a.mode), 0);
	parent->a.links++;
	assert_int_equal(ext3_mark_inode_dirty(h, parent), 0);
	pthread_rwlock_unlock(&d->lock);
	pthread_rwlock_unlock(&parent->lock);
	hstop(h);
	return d;
}

/* Another name for in (links + 1). */
static int link_name(struct ext3_fs *fs, struct ext3_inode *dir, const char *name, size_t len,
		     struct ext3_inode *in)
{
	struct jbd_handle *h = hstart(fs);
	pthread_rwlock_wrlock(&dir->lock);
	pthread_rwlock_wrlock(&in->lock);
	int rc = ext3_dir_add(h, dir, name, len, in->ino, in->a.mode);
	if (rc == 0) {
		in->a.links++;
		rc = ext3_mark_inode_dirty(h, in);
	}
	pthread_rwlock_unlock(&in->lock);
	pthread_rwlock_unlock(&dir->lock);
	hstop(h);
	return rc;
}

/* Remove a name of one of files[] (links - 1; never the last link here). */
static void unlink_name(struct ext3_fs *fs, struct ext3_inode *dir, const char *name, size_t len,
			struct ext3_inode **files, unsigned nfiles)
{
	struct jbd_handle *h = hstart(fs);
	pthread_rwlock_wrlock(&dir->lock);
	uint32_t ino = 0;
	int rc = ext3_dir_remove(h, dir, name, len, &ino);
	if (rc)
		fail_msg("remove %.*s: %s", (int)len, name, err_last(rc));
	struct ext3_inode *in = NULL;
	for (unsigned i = 0; i < nfiles; i++)
		if (files[i]->ino == ino)
			in = files[i];
	assert_non_null(in);
	pthread_rwlock_wrlock(&in->lock);
	assert_true(in->a.links > 1);
	in->a.links--;
	assert_int_equal(ext3_mark_inode_dirty(h, in), 0);
	pthread_rwlock_unlock(&in->lock);
	pthread_rwlock_unlock(&dir->lock);
	hstop(h);
}

static void expect_lookup(struct ext3_fs *fs, struct ext3_inode *dir, const char *name, size_t len,
			  uint32_t want)
{
	uint32_t ino = 0;
	int rc = ext3_dir_lookup(fs, dir, name, len, &ino, NULL);
	if (want == 0) {
		if (rc != -ENOENT)
			fail_msg("lookup of removed %.*s: %d", (int)len, name, rc);
		return;
	}
	if (rc || ino != want)
		fail_msg("lookup %.*s: rc %d ino %u, want %u", (int)len, name, rc, ino, want);
}

/* Name i of a population: varied lengths (1..255 with a few 255s), with
 * non-ASCII bytes so signed and unsigned hashing differ. */
static size_t pop_name(char *out, unsigned i, unsigned maxlen)
{
	unsigned len = 12 + (i * 37) % 40;
	if (i % 97 == 5)
		len = 255;
	if (len > maxlen)
		len = maxlen;
	int n = snprintf(out, 256, "e%u_\xc3\xa9\xe2\x82\xac_", i);
	for (unsigned l = (unsigned)n; l < len; l++)
		out[l] = (char)('A' + (i + l * 3) % 50);
	if ((unsigned)n > len)
		len = (unsigned)n;
	out[len] = '\0';
	return len;
}

/* Fill dir with n names spread over nfiles files, remove every third,
 * check lookups before and after. Leaves the files referenced in files[]. */
static void populate(struct wfs *w, struct ext3_inode *dir, unsigned n, struct ext3_inode **files,
		     unsigned nfiles, const char *prefix)
{
	char name[300];
	for (unsigned f = 0; f < nfiles; f++) {
		snprintf(name, sizeof name, "%sfile%u", prefix, f);
		files[f] = mkfile(w->fs, dir, name);
	}
	for (unsigned i = 0; i < n; i++) {
		size_t len = pop_name(name, i, 255);
		int rc = link_name(w->fs, dir, name, len, files[i % nfiles]);
		if (rc)
			fail_msg("add %u: %s", i, err_last(rc));
	}
	for (unsigned i = 0; i < n; i++) {
		size_t len = pop_name(name, i, 255);
		expect_lookup(w->fs, dir, name, len, files[i % nfiles]->ino);
	}
	for (unsigned i = 0; i < n; i += 3) {
		size_t len = pop_name(name, i, 255);
		unlink_name(w->fs, dir, name, len, files, nfiles);
	}
	for (unsigned i = 0; i < n; i++) {
		size_t len = pop_name(name, i, 255);
		expect_lookup(w->fs, dir, name, len, i % 3 ? files[i % nfiles]->ino : 0);
	}
	/* removed names can be added again (into the freed space) */
	for (unsigned i = 0; i < n; i += 30) {
		size_t len = pop_name(name, i, 255);
		assert_int_equal(link_name(w->fs, dir, name, len, files[i % nfiles]), 0);
		expect_lookup(w->fs, dir, name, len, files[i % nfiles]->ino);
	}
}

static void put_all(struct ext3_inode **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		ext3_iput(v[i]);
}

static uint32_t inode_flags(struct ext3_inode *in)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	return a.flags;
}

/* ---- linear directories (no dir_index) ---- */

static void test_img_linear(void **state)
{
	(void)state;
	if (!have_e2fs)
		skip();
	static const unsigned sizes[] = {1024, 4096};
	for (unsigned si = 0; si < 2; si++) {
		char img[400];
		mkimg(img, sizeof img, "linear", sizes[si], "-O ^dir_index");
		struct wfs w;
		wmount(img, &w);
		struct ext3_inode *d = mkdir_in(w.fs, w.root, "d");
		struct ext3_inode *files[3];
		populate(&w, d, 400, files, 3, "");
		assert_true(d->i_size > 4 * w.fs->g.block_size);
		assert_int_equal(inode_flags(d) & EXT3_INDEX_FL, 0);
		/* retarget a name to another file */
		char name[300];
		size_t len = pop_name(name, 1, 255);
		struct jbd_handle *h = hstart(w.fs);
		pthread_rwlock_wrlock(&d->lock);
		assert_int_equal(ext3_dir_retarget(h, d, name, len, files[2]->ino, files[2]->a.mode), 0);
		assert_int_equal(ext3_dir_retarget(h, d, "absent", 6, files[2]->ino, 0), -ENOENT);
		pthread_rwlock_unlock(&d->lock);
		pthread_rwlock_wrlock(&files[1]->lock);
		files[1]->a.links--;
		assert_int_equal(ext3_mark_inode_dirty(h, files[1]), 0);
		pthread_rwlock_unlock(&files[1]->lock);
		pthread_rwlock_wrlock(&files[2]->lock);
		files[2]->a.links++;
		assert_int_equal(ext3_mark_inode_dirty(h, files[2]), 0);
		pthread_rwlock_unlock(&files[2]->lock);
		hstop(h);
		expect_lookup(w.fs, d, name, len, files[2]->ino);
		/* move a subdirectory from d to the root: ".." follows */
		struct ext3_inode *sub = mkdir_in(w.fs, d, "sub");
		bool empty = true;
		assert_int_equal(ext3_dir_is_empty(d, &empty), 0);
		assert_false(empty);
		h = hstart(w.fs);
		pthread_rwlock_wrlock(&w.root->lock);
		pthread_rwlock_wrlock(&d->lock);
		pthread_rwlock_wrlock(&sub->lock);
		uint32_t ino;
		assert_int_equal(ext3_dir_remove(h, d, "sub", 3, &ino), 0);
		assert_int_equal(ino, sub->ino);
		assert_int_equal(ext3_dir_add(h, w.root, "moved", 5, sub->ino, sub->a.mode), 0);
		assert_int_equal(ext3_dir_set_parent(h, sub, w.root->ino), 0);
		d->a.links--;
		w.root->a.links++;
		assert_int_equal(ext3_mark_inode_dirty(h, d), 0);
		assert_int_equal(ext3_mark_inode_dirty(h, w.root), 0);
		/* errors: dots, bad lengths, absent names */
		assert_int_equal(ext3_dir_add(h, d, "..", 2, 5, 0), -EEXIST);
		assert_int_equal(ext3_dir_add(h, d, name, 256, 5, 0), -ENAMETOOLONG);
		assert_int_equal(ext3_dir_remove(h, d, ".", 1, &ino), -EINVAL);
		assert_int_equal(ext3_dir_remove(h, d, "sub", 3, &ino), -ENOENT);
		pthread_rwlock_unlock(&sub->lock);
		pthread_rwlock_unlock(&d->lock);
		pthread_rwlock_unlock(&w.root->lock);
		hstop(h);
		expect_lookup(w.fs, sub, "..", 2, EXT3_ROOT_INO);
		expect_lookup(w.fs, w.root, "moved", 5, sub->ino);
		ext3_iput(sub);
		put_all(files, 3);
		ext3_iput(d);
		wumount(&w);
		fsck_clean(img);
		assert_int_equal(cmd_count("moved", "debugfs -R 'ls -l /' '%s' 2>/dev/null", img), 1);
	}
}

/* ---- htree directories ---- */

/* One image: a directory made here, grown past one block (make_indexed),
 * populated; and a debugfs-made directory extended. */
static void htree_case(unsigned bs, const char *alg, bool unsigned_hash, unsigned n)
{
	char img[400], tag[64];
	snprintf(tag, sizeof tag, "htree_%s_%d", alg, unsigned_hash);
	char extra[128];
	snprintf(extra, sizeof extra, "-E hash_alg=%s", alg);
	mkimg(img, sizeof img, tag, bs, extra);
	/* a kernel-style directory with a few entries, made by debugfs */
	assert_int_equal(run("debugfs -w -R 'mkdir old' '%s' >/dev/null 2>&1", img), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(run("debugfs -w -R 'mknod old/p%d p' '%s' >/dev/null 2>&1", i, img), 0);
	if (unsigned_hash)
		assert_int_equal(run("debugfs -w -R 'ssv flags 2' '%s' >/dev/null 2>&1", img), 0);
	struct wfs w;
	wmount(img, &w);
	assert_int_equal(w.fs->unsigned_hash, unsigned_hash);
	struct ext3_inode *d = mkdir_in(w.fs, w.root, "d");
	struct ext3_inode *files[4];
	populate(&w, d, n, files, 4, "");
	assert_true(inode_flags(d) & EXT3_INDEX_FL);
	uint32_t old_ino;
	assert_int_equal(ext3_path_lookup(w.fs, "/old", true, &old_ino), 0);
	struct ext3_inode *old;
	assert_int_equal(ext3_iget(w.fs, old_ino, &old), 0);
	struct ext3_inode *ofiles[2];
	populate(&w, old, n / 4, ofiles, 2, "o");
	assert_true(inode_flags(old) & EXT3_INDEX_FL);
	/* the debugfs-made names survived the conversion to an index */
	for (int i = 0; i < 5; i++) {
		char pn[16];
		snprintf(pn, sizeof pn, "p%d", i);
		uint32_t pino;
		assert_int_equal(ext3_dir_lookup(w.fs, old, pn, 2, &pino, NULL), 0);
	}
	put_all(ofiles, 2);
	put_all(files, 4);
	ext3_iput(old);
	ext3_iput(d);
	wumount(&w);
	fsck_clean(img);
	assert_int_equal(cmd_count("Indirect levels:", "debugfs -R 'htree_dump /d' '%s' 2>/dev/null",
				   img), 1);
	assert_int_equal(cmd_count("Indirect levels:", "debugfs -R 'htree_dump /old' '%s' 2>/dev/null",
				   img), 1);
}

static void test_img_htree_hashes(void **state)
{
	(void)state;
	if (!have_e2fs)
		skip();
	static const char *algs[] = {"legacy", "half_md4", "tea"};
	for (int a = 0; a < 3; a++)
		for (int u = 0; u < 2; u++) {
			htree_case(1024, algs[a], u, 1200);
			htree_case(4096, algs[a], u, 1500);
		}
}

/* 20,000 names at 1 KiB: the index grows to two levels (and its interior
 * nodes split). */
static void test_img_two_levels(void **state)
{
	(void)state;
	if (!have_e2fs)
		skip();
	char img[400];
	mkimg(img, sizeof img, "twolevel", 1024, "-E hash_alg=half_md4");
	struct wfs w;
	wmount(img, &w);
	struct ext3_inode *d = mkdir_in(w.fs, w.root, "big");
	struct ext3_inode *files[5];
	populate(&w, d, 20000, files, 5, "");
	put_all(files, 5);
	ext3_iput(d);
	wumount(&w);
	fsck_clean(img);
	assert_int_equal(cmd_count("Indirect levels: 1",
				   "debugfs -R 'htree_dump /big' '%s' 2>/dev/null", img), 1);
	/* more than one interior node: the root indexes several */
	assert_true(cmd_count("Entry #", "debugfs -R 'htree_dump /big' '%s' 2>/dev/null", img) >
		    200);
}

/* ---- hash collisions ---- */

struct hname {
	uint32_t hash;
	uint32_t idx;
};

static int hname_cmp(const void *a, const void *b)
{
	const struct hname *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void col_name(char *out, uint32_t idx)
{
	snprintf(out, 16, "col_%c%c%c", 33 + (int)(idx % 94), 33 + (int)(idx / 94 % 94),
		 33 + (int)(idx / 94 / 94));
	for (char *p = out; *p; p++)
		if (*p == '/')
			*p = '_'; /* may repeat a name: skipped below by the dedup */
}

/* Colliding legacy-hash names (the legacy hash has no seed, so the set
 * is fixed): pairs inserted side by side make leaf splits fall between
 * equal hashes, which sets the continuation bit in the index. */
static void test_img_collisions(void **state)
{
	(void)state;
	if (!have_e2fs)
		skip();
	const uint32_t total = 94u * 94u * 94u;
	struct hname *hn = malloc(total * sizeof *hn);
	assert_non_null(hn);
	char nm[300];
	for (uint32_t i = 0; i < total; i++) {
		col_name(nm, i);
		hn[i].idx = i;
		assert_int_equal(ext3_dx_hash(nm, strlen(nm), EXT3_DX_HASH_LEGACY, NULL, &hn[i].hash,
					      NULL), 0);
	}
	qsort(hn, total, sizeof *hn, hname_cmp);
	uint32_t *pairs = malloc(2000 * sizeof *pairs);
	unsigned np = 0;
	for (uint32_t i = 0; i + 1 < total && np + 2 <= 2000; i++) {
		char a[16], b[16];
		col_name(a, hn[i].idx);
		col_name(b, hn[i + 1].idx);
		if (hn[i].hash == hn[i + 1].hash && strcmp(a, b) != 0) {
			pairs[np++] = hn[i].idx;
			pairs[np++] = hn[i + 1].idx;
			i++;
		}
	}
	free(hn);
	printf("collisions: %u colliding names\n", np);
	assert_true(np >= 40);
	char img[400];
	mkimg(img, sizeof img, "collide", 1024, "-E hash_alg=legacy");
	struct wfs w;
	wmount(img, &w);
	struct ext3_inode *d = mkdir_in(w.fs, w.root, "c");
	struct ext3_inode *f = mkfile(w.fs, w.root, "target");
	for (unsigned i = 0; i < np; i++) {
		col_name(nm, pairs[i]);
		assert_int_equal(link_name(w.fs, d, nm, strlen(nm), f), 0);
		/* and 255-byte names in between, to split often */
		if (i % 8 == 0) {
			memset(nm, 'a' + (int)(i % 26), 255);
			char tag[16];
			int tl = snprintf(tag, sizeof tag, "L%05u_", i % 100000u);
			memcpy(nm, tag, (size_t)tl);
			assert_int_equal(link_name(w.fs, d, nm, 255, f), 0);
		}
	}
	for (unsigned i = 0; i < np; i++) {
		col_name(nm, pairs[i]);
		expect_lookup(w.fs, d, nm, strlen(nm), f->ino);
	}
	/* remove one of each of the first pairs: the other stays visible */
	for (unsigned i = 0; i < 20; i += 2) {
		col_name(nm, pairs[i]);
		unlink_name(w.fs, d, nm, strlen(nm), &f, 1);
		expect_lookup(w.fs, d, nm, strlen(nm), 0);
		col_name(nm, pairs[i + 1]);
		expect_lookup(w.fs, d, nm, strlen(nm), f->ino);
	}
	ext3_iput(f);
	ext3_iput(d);
	wumount(&w);
	free(pairs);
	fsck_clean(img);
	/* index entries carrying the continuation bit (odd hashes) */
	char cmd[600];
	snprintf(cmd, sizeof cmd, "debugfs -R 'htree_dump /c' '%s' 2>/dev/null", img);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[1024];
	unsigned odd = 0, entries = 0;
	while (fgets(line, sizeof line, p)) {
		char *e = strstr(line, "Entry #");
		char *hs = e ? strstr(e, "Hash 0x") : NULL;
		if (!hs)
			continue;
		entries++;
		if (strtoul(hs + 7, NULL, 16) & 1u)
			odd++;
	}
	pclose(p);
	printf("collisions: %u index entries, %u with the continuation bit\n", entries, odd);
	assert_true(entries > 10);
	assert_true(odd >= 1);
}

/* ---- corruption is refused, never written over ---- */

static void test_img_corrupt(void **state)
{
	(void)state;
	if (!have_e2fs)
		skip();
	char img[400];
	mkimg(img, sizeof img, "corrupt", 1024, "-O ^dir_index");
	assert_int_equal(run("debugfs -w -R 'mkdir bad' '%s' >/dev/null 2>&1", img), 0);
	/* the directory's block: rec_len of ".." made 6 (below the minimum) */
	char out[64];
	snprintf(out, sizeof out, "%s", "");
	FILE *p;
	char cmd[600];
	snprintf(cmd, sizeof cmd, "debugfs -R 'bmap bad 0' '%s' 2>/dev/null", img);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof out, p));
	pclose(p);
	long blk = strtol(out, NULL, 10);
	assert_true(blk > 0);
	FILE *f = fopen(img, "r+b");
	assert_non_null(f);
	uint8_t b[1024], after[1024];
	assert_int_equal(fseek(f, blk * 1024, SEEK_SET), 0);
	assert_int_equal(fread(b, 1, 1024, f), 1024);
	b[12 + 4] = 6;
	b[12 + 5] = 0;
	assert_int_equal(fseek(f, blk * 1024, SEEK_SET), 0);
	assert_int_equal(fwrite(b, 1, 1024, f), 1024);
	fclose(f);
	struct wfs w;
	wmount(img, &w);
	uint32_t ino;
	assert_int_equal(ext3_path_lookup(w.fs, "/bad", true, &ino), 0);
	struct ext3_inode *d;
	assert_int_equal(ext3_iget(w.fs, ino, &d), 0);
	struct jbd_handle *h = hstart(w.fs);
	pthread_rwlock_wrlock(&d->lock);
	assert_int_equal(ext3_dir_add(h, d, "x", 1, EXT3_ROOT_INO, EXT3_S_IFDIR), -EUCLEAN);
	assert_int_equal(ext3_dir_set_parent(h, d, 11), -EUCLEAN);
	bool empty;
	assert_int_equal(ext3_dir_is_empty(d, &empty), -EUCLEAN);
	pthread_rwlock_unlock(&d->lock);
	hstop(h);
	ext3_iput(d);
	wumount(&w);
	f = fopen(img, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, blk * 1024, SEEK_SET), 0);
	assert_int_equal(fread(after, 1, 1024, f), 1024);
	fclose(f);
	assert_memory_equal(b, after, 1024);
	/* the error was recorded in the superblock */
	assert_int_equal(cmd_count("with errors", "dumpe2fs -h '%s' 2>/dev/null", img), 1);
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nostall_dirw_XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	have_e2fs = run("command -v mke2fs >/dev/null && command -v debugfs >/dev/null && "
			"command -v e2fsck >/dev/null") == 0;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	(void)run("rm -rf '%s'", tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_insert_remove),
		cmocka_unit_test(test_block_random),
		cmocka_unit_test(test_split_all_hashes),
		cmocka_unit_test(test_dx_root_make),
		cmocka_unit_test(test_mode_to_ft),
		cmocka_unit_test(test_img_linear),
		cmocka_unit_test(test_img_htree_hashes),
		cmocka_unit_test(test_img_two_levels),
		cmocka_unit_test(test_img_collisions),
		cmocka_unit_test(test_img_corrupt),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
