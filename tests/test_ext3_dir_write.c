/* ext3 directory writing on images (src/extfs/dir/dir_write.c, dx_write.c):
 * mke2fs images mounted writable; oracles e2fsck -fn, debugfs htree_dump /
 * ls, and ext3_dir_lookup. Linear directories, htree directories under the
 * six hash variants, growth to a two-level index, hash collisions (the
 * continuation bit), 255-byte names, a debugfs-made directory extended,
 * corruption refused. The pure block operations: test_ext3_dirblock.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/dir/dir_int.h"
#include "extfs/format/ext3_format.h"
#include "extfs/core/write.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

/* mke2fs an ext3 image; extra: more mke2fs options; alg: the default
 * htree hash ("legacy", "half_md4", "tea"; mke2fs 1.47 takes it from
 * mke2fs.conf only, so debugfs sets it) or NULL. */
static void mkimg(char *img, size_t cap, const char *tag, unsigned bs, const char *extra,
		  const char *alg)
{
	snprintf(img, cap, "%s/%s_%u.img", tmpdir, tag, bs);
	fsimg_assert_mkfs(img, bs, strstr(tag, "full") ? 65536 : 32768, extra);
	if (alg) {
		char req[64];
		snprintf(req, sizeof req, "ssv def_hash_version %s", alg);
		assert_int_equal(fsimg_debugfs_w(img, req), 0);
	}
}

/* Writable, errors=continue (the corruption test goes on after one). */
static void wmount(const char *img, struct fsimg_mnt *w)
{
	fsimg_assert_mount(img, "errors=continue", EXT3_MOUNT_JOURNAL, w);
}

/* Lines of debugfs htree_dump DIR containing needle. */
static int htree_count(const char *img, const char *dir, const char *needle)
{
	return fsimg_count(needle, "debugfs -R 'htree_dump %s' '%s' 2>/dev/null", dir, img);
}

static struct jbd_handle *hstart(struct ext3_fs *fs)
{
	return fsimg_hstart(fs, ext3_credits_dirop(fs));
}

/* A new regular file named name in dir (links 1); returned referenced. */
static struct ext3_inode *mkfile(struct ext3_fs *fs, struct ext3_inode *dir, const char *name)
{
	struct ext3_inode *in;
	ext3_inode_wrlock(dir);
	struct jbd_handle *h = hstart(fs);
	int rc = ext3_new_inode(h, dir, EXT3_S_IFREG | 0644, 0, 0, &in);
	if (rc)
		fail_msg("new inode: %s", err_last(rc));
	in->a.links = 1;
	assert_int_equal(ext3_mark_inode_dirty(h, in), 0);
	rc = ext3_dir_add(h, dir, name, strlen(name), in->ino, in->a.mode);
	if (rc)
		fail_msg("add %s: %s", name, err_last(rc));
	ext3_inode_unlock(in);
	ext3_inode_unlock(dir);
	fsimg_hstop(h);
	return in;
}

/* A new directory named name in parent; returned referenced. */
static struct ext3_inode *mkdir_in(struct ext3_fs *fs, struct ext3_inode *parent, const char *name)
{
	struct ext3_inode *d;
	ext3_inode_wrlock(parent);
	struct jbd_handle *h = hstart(fs);
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
	ext3_inode_unlock(d);
	ext3_inode_unlock(parent);
	fsimg_hstop(h);
	return d;
}

/* Another name for in (links + 1). */
static int link_name(struct ext3_fs *fs, struct ext3_inode *dir, const char *name, size_t len,
		     struct ext3_inode *in)
{
	ext3_inode_wrlock(dir);
	ext3_inode_wrlock(in);
	struct jbd_handle *h = hstart(fs);
	int rc = ext3_dir_add(h, dir, name, len, in->ino, in->a.mode);
	if (rc == 0) {
		in->a.links++;
		rc = ext3_mark_inode_dirty(h, in);
	}
	ext3_inode_unlock(in);
	ext3_inode_unlock(dir);
	fsimg_hstop(h);
	return rc;
}

/* Remove a name of one of files[] (links - 1; never the last link here). */
static void unlink_name(struct ext3_fs *fs, struct ext3_inode *dir, const char *name, size_t len,
			struct ext3_inode **files, unsigned nfiles)
{
	ext3_inode_wrlock(dir);
	struct jbd_handle *h = hstart(fs);
	uint32_t ino = 0;
	int rc = ext3_dir_remove(h, dir, name, len, &ino);
	if (rc)
		fail_msg("remove %.*s: %s", (int)len, name, err_last(rc));
	struct ext3_inode *in = NULL;
	for (unsigned i = 0; i < nfiles; i++)
		if (files[i]->ino == ino)
			in = files[i];
	assert_non_null(in);
	assert_int_equal(ext3_inode_trywrlock(in), 0); /* under the handle: only tried (write.h) */
	assert_true(in->a.links > 1);
	in->a.links--;
	assert_int_equal(ext3_mark_inode_dirty(h, in), 0);
	ext3_inode_unlock(in);
	ext3_inode_unlock(dir);
	fsimg_hstop(h);
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
static void populate(struct fsimg_mnt *w, struct ext3_inode *dir, unsigned n, struct ext3_inode **files,
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
	static const unsigned sizes[] = {1024, 4096};
	for (unsigned si = 0; si < 2; si++) {
		char img[400];
		mkimg(img, sizeof img, "linear", sizes[si], "-O ^dir_index", NULL);
		struct fsimg_mnt w;
		wmount(img, &w);
		struct ext3_inode *d = mkdir_in(w.fs, w.root, "d");
		struct ext3_inode *files[3];
		populate(&w, d, 400, files, 3, "");
		assert_true(d->i_size > 4 * w.fs->g.block_size);
		assert_int_equal(inode_flags(d) & EXT3_INDEX_FL, 0);
		/* retarget a name to another file */
		char name[300];
		size_t len = pop_name(name, 1, 255);
		ext3_inode_wrlock(d);
		struct jbd_handle *h = hstart(w.fs);
		assert_int_equal(ext3_dir_retarget(h, d, name, len, files[2]->ino, files[2]->a.mode), 0);
		assert_int_equal(ext3_dir_retarget(h, d, "absent", 6, files[2]->ino, 0), -ENOENT);
		ext3_inode_unlock(d);
		assert_int_equal(ext3_inode_trywrlock(files[1]), 0); /* under the handle: only tried (write.h) */
		files[1]->a.links--;
		assert_int_equal(ext3_mark_inode_dirty(h, files[1]), 0);
		ext3_inode_unlock(files[1]);
		assert_int_equal(ext3_inode_trywrlock(files[2]), 0); /* under the handle: only tried (write.h) */
		files[2]->a.links++;
		assert_int_equal(ext3_mark_inode_dirty(h, files[2]), 0);
		ext3_inode_unlock(files[2]);
		fsimg_hstop(h);
		expect_lookup(w.fs, d, name, len, files[2]->ino);
		/* move a subdirectory from d to the root: ".." follows */
		struct ext3_inode *sub = mkdir_in(w.fs, d, "sub");
		bool empty = true;
		assert_int_equal(ext3_dir_is_empty(d, &empty), 0);
		assert_false(empty);
		ext3_inode_wrlock(w.root);
		ext3_inode_wrlock(d);
		ext3_inode_wrlock(sub);
		h = hstart(w.fs);
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
		ext3_inode_unlock(sub);
		ext3_inode_unlock(d);
		ext3_inode_unlock(w.root);
		fsimg_hstop(h);
		expect_lookup(w.fs, sub, "..", 2, EXT3_ROOT_INO);
		expect_lookup(w.fs, w.root, "moved", 5, sub->ino);
		ext3_iput(sub);
		put_all(files, 3);
		ext3_iput(d);
		fsimg_assert_umount(&w);
		fsimg_assert_clean(img);
		assert_int_equal(fsimg_count("moved", "debugfs -R 'ls -l /' '%s' 2>/dev/null", img), 1);
	}
}

/* ---- htree directories ---- */

/* One image: a directory made here, grown past one block (make_indexed),
 * populated; and a debugfs-made directory extended. */
static void htree_case(unsigned bs, const char *alg, bool unsigned_hash, unsigned n)
{
	char img[400], tag[64];
	snprintf(tag, sizeof tag, "htree_%s_%d", alg, unsigned_hash);
	mkimg(img, sizeof img, tag, bs, "", alg);
	/* a kernel-style directory with a few entries, made by debugfs */
	assert_int_equal(fsimg_debugfs_w(img, "mkdir old"), 0);
	assert_int_equal(fsimg_run("printf 'cd old\\nmknod p0 p\\nmknod p1 p\\nmknod p2 p\\nmknod p3 p\\n"
				   "mknod p4 p\\n' | debugfs -w -f - '%s' >/dev/null 2>&1", img), 0);
	if (unsigned_hash)
		assert_int_equal(fsimg_debugfs_w(img, "ssv flags 2"), 0);
	struct fsimg_mnt w;
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
	fsimg_assert_umount(&w);
	fsimg_assert_clean(img);
	char hv[32];
	snprintf(hv, sizeof hv, "Hash Version: %d",
		 strcmp(alg, "legacy") == 0 ? 0 : strcmp(alg, "half_md4") == 0 ? 1 : 2);
	assert_int_equal(htree_count(img, "/d", hv), 1);
	assert_int_equal(htree_count(img, "/d", "Indirect levels:"), 1);
	assert_int_equal(htree_count(img, "/old", "Indirect levels:"), 1);
}

static void test_img_htree_hashes(void **state)
{
	(void)state;
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
	char img[400];
	mkimg(img, sizeof img, "twolevel", 1024, "", "half_md4");
	struct fsimg_mnt w;
	wmount(img, &w);
	struct ext3_inode *d = mkdir_in(w.fs, w.root, "big");
	struct ext3_inode *files[5];
	populate(&w, d, 20000, files, 5, "");
	put_all(files, 5);
	ext3_iput(d);
	fsimg_assert_umount(&w);
	fsimg_assert_clean(img);
	assert_int_equal(htree_count(img, "/big", "Indirect levels: 1"), 1);
	/* more than one interior node: the root indexes several */
	assert_true(htree_count(img, "/big", "Entry #") > 200);
}

/* 255-byte names at 1 KiB until the two-level index is full: -ENOSPC
 * ("directory index full", the kernel's limit), the tree intact. */
static void test_img_index_full(void **state)
{
	(void)state;
	char img[400];
	/* A fixed hash seed: where the index fills depends on how the names
	 * hash (a random seed moved it from ~19500 to ~21500 names). */
	mkimg(img, sizeof img, "indexfull", 1024,
	      "-N 2048 -E hash_seed=01234567-89ab-cdef-0123-456789abcdef", "tea");
	struct fsimg_mnt w;
	wmount(img, &w);
	struct ext3_inode *d = mkdir_in(w.fs, w.root, "full");
	struct ext3_inode *files[4];
	char name[300];
	for (unsigned f = 0; f < 4; f++) {
		snprintf(name, sizeof name, "file%u", f);
		files[f] = mkfile(w.fs, w.root, name);
	}
	unsigned n = 0;
	int rc = 0;
	for (; n < 120000 && rc == 0; n++) {
		memset(name, 'a' + (int)(n % 26), 255);
		int tl = snprintf(name, 16, "%u_", n);
		name[tl] = 'x';
		rc = link_name(w.fs, d, name, 255, files[n % 4]);
	}
	n--; /* names added */
	printf("index full after %u 255-byte names (%llu blocks)\n", n,
	       (unsigned long long)(d->i_size / 1024));
	assert_int_equal(rc, -ENOSPC);
	assert_non_null(strstr(err_last(rc), "index full"));
	assert_true(n > 20000);
	for (unsigned i = 0; i < n; i += 97) {
		memset(name, 'a' + (int)(i % 26), 255);
		int tl = snprintf(name, 16, "%u_", i);
		name[tl] = 'x';
		expect_lookup(w.fs, d, name, 255, files[i % 4]->ino);
	}
	put_all(files, 4);
	ext3_iput(d);
	fsimg_assert_umount(&w);
	fsimg_assert_clean(img);
	assert_int_equal(htree_count(img, "/full", "Indirect levels: 1"), 1);
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

/* 94^3 distinct names: "col_" + three bytes of 33..126, with '/' (47)
 * replaced by 127 */
static void col_name(char *out, uint32_t idx)
{
	uint32_t c[3] = {33 + idx % 94, 33 + idx / 94 % 94, 33 + idx / 94 / 94};
	for (int i = 0; i < 3; i++)
		if (c[i] == '/')
			c[i] = 127;
	snprintf(out, 16, "col_%c%c%c", (char)c[0], (char)c[1], (char)c[2]);
}

/* Colliding legacy-hash names (the legacy hash has no seed, so the set
 * is fixed): pairs inserted side by side make leaf splits fall between
 * equal hashes, which sets the continuation bit in the index. */
static void test_img_collisions(void **state)
{
	(void)state;
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
		assert_string_not_equal(a, b);
		if (hn[i].hash == hn[i + 1].hash) {
			pairs[np++] = hn[i].idx;
			pairs[np++] = hn[i + 1].idx;
			i++;
		}
	}
	free(hn);
	printf("collisions: %u colliding names\n", np);
	assert_true(np >= 40);
	char img[400];
	mkimg(img, sizeof img, "collide", 1024, "", "legacy");
	struct fsimg_mnt w;
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
	fsimg_assert_umount(&w);
	free(pairs);
	fsimg_assert_clean(img);
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
	char img[400];
	mkimg(img, sizeof img, "corrupt", 1024, "-O ^dir_index", NULL);
	assert_int_equal(fsimg_debugfs_w(img, "mkdir bad"), 0);
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
	struct fsimg_mnt w;
	wmount(img, &w);
	uint32_t ino;
	assert_int_equal(ext3_path_lookup(w.fs, "/bad", true, &ino), 0);
	struct ext3_inode *d;
	assert_int_equal(ext3_iget(w.fs, ino, &d), 0);
	ext3_inode_wrlock(d);
	struct jbd_handle *h = hstart(w.fs);
	assert_int_equal(ext3_dir_add(h, d, "x", 1, EXT3_ROOT_INO, EXT3_S_IFDIR), -EUCLEAN);
	assert_int_equal(ext3_dir_set_parent(h, d, 11), -EUCLEAN);
	bool empty;
	assert_int_equal(ext3_dir_is_empty(d, &empty), -EUCLEAN);
	ext3_inode_unlock(d);
	fsimg_hstop(h);
	ext3_iput(d);
	fsimg_assert_umount(&w);
	f = fopen(img, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, blk * 1024, SEEK_SET), 0);
	assert_int_equal(fread(after, 1, 1024, f), 1024);
	fclose(f);
	assert_memory_equal(b, after, 1024);
	/* the error was recorded in the superblock */
	assert_int_equal(fsimg_count("with errors", "dumpe2fs -h '%s' 2>/dev/null", img), 1);
}

int main(void)
{
	int orc = oracles_check("test_ext3_dir_write", "mke2fs e2fsck debugfs dumpe2fs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "dirw"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_img_linear),
		cmocka_unit_test(test_img_htree_hashes),
		cmocka_unit_test(test_img_two_levels),
		cmocka_unit_test(test_img_index_full),
		cmocka_unit_test(test_img_collisions),
		cmocka_unit_test(test_img_corrupt),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
