/* Readdir positions that survive inserts (issue 8; docs/write-dirs.md,
 * "Readdir cookies and leaf splits"), through the public iterator
 * (nostall_opendir / dir_next / dir_tell / dir_seek):
 *
 * - an indexed directory read while names are inserted (leaf splits, index
 *   growth): every name present for the whole walk comes exactly once, no
 *   name twice; positions are hash cookies; tell/seek on the same iterator
 *   and a fresh iterator seeking to a position resume exactly;
 * - the same with a thread inserting while another reads (TSan);
 * - legacy-hash collisions (equal hashes, leaf splits between them) with
 *   the second name of each pair inserted during the walk;
 * - a one-block linear directory that becomes indexed in mid-walk;
 * - a linear directory keeps byte offsets.
 * 1 KiB and 4 KiB blocks; e2fsck -fn after each. Seeded (printed).
 *
 * nostall-test: concurrent (a reader and an inserting thread)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "nostall/nostall.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HASH_COOKIE (1ull << 62)
#define MAXN 12000

static char tmpdir[256];
static unsigned seed;

/* A test image: mke2fs'd at block size bs; alg sets the default htree hash
 * (NULL: mke2fs's). */
static void mkimg(char *img, size_t n, const char *tag, unsigned bs, const char *alg)
{
	snprintf(img, n, "%s/%s-%u.img", tmpdir, tag, bs);
	if (fsimg_mkfs(img, bs, 32768, "-N 2048"))
		fail_msg("mke2fs %s", img);
	if (alg && fsimg_run("debugfs -w -R 'ssv def_hash_version %s' '%s' >/dev/null 2>&1", alg,
			     img))
		fail_msg("debugfs ssv def_hash_version %s", alg);
}

/* ---- names and what the walk saw ---- */

#define NHASH 32768u /* > MAXN: open addressing */

struct names {
	unsigned *slot; /* name index + 1 by hash of the name, 0 empty */
	char **v;      /* name i */
	unsigned n;
	unsigned *seen; /* times name i was returned */
	unsigned dots;  /* "." and ".." */
	bool *initial;  /* present from the start */
};

static void names_init(struct names *s)
{
	memset(s, 0, sizeof *s);
	s->v = calloc(MAXN, sizeof *s->v);
	s->seen = calloc(MAXN, sizeof *s->seen);
	s->initial = calloc(MAXN, sizeof *s->initial);
	s->slot = calloc(NHASH, sizeof *s->slot);
	assert_true(s->v && s->seen && s->initial && s->slot);
}

static void names_free(struct names *s)
{
	for (unsigned i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->seen);
	free(s->initial);
	free(s->slot);
}

static unsigned name_hash(const char *nm)
{
	unsigned h = 2166136261u;
	for (; *nm; nm++)
		h = (h ^ (unsigned char)*nm) * 16777619u;
	return h % NHASH;
}

/* Name i: long enough that a leaf holds few (many splits). */
static void name_of(char *out, size_t n, const char *tag, unsigned i)
{
	snprintf(out, n, "%s_%06u_%08x_padding_to_make_leaves_fill_up", tag, i,
		 (unsigned)(i * 2654435761u ^ seed));
}

/* Add name i (a hard link to /t) to dir; returns its index. */
static unsigned names_add(struct nostall_fs *fs, struct names *s, const char *dir, const char *nm,
			  bool initial)
{
	assert_true(s->n < MAXN);
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, nm);
	int rc = nostall_link(fs, "/t", path);
	if (rc)
		fail_msg("link %s: %s", path, nostall_errmsg(rc));
	s->v[s->n] = strdup(nm);
	s->initial[s->n] = initial;
	unsigned h = name_hash(nm);
	while (s->slot[h])
		h = (h + 1) % NHASH;
	s->slot[h] = s->n + 1;
	return s->n++;
}

static int names_find(const struct names *s, const char *nm)
{
	for (unsigned h = name_hash(nm); s->slot[h]; h = (h + 1) % NHASH)
		if (strcmp(s->v[s->slot[h] - 1], nm) == 0)
			return (int)s->slot[h] - 1;
	return -1;
}

/* Count one returned entry: never twice, never unknown. */
static void names_saw(struct names *s, const struct nostall_dirent *de)
{
	if (!strcmp(de->name, ".") || !strcmp(de->name, "..")) {
		s->dots++;
		return;
	}
	int i = names_find(s, de->name);
	if (i < 0)
		fail_msg("readdir returned %s, never created", de->name);
	if (++s->seen[i] > 1)
		fail_msg("readdir returned %s twice (seed %u)", de->name, seed);
}

/* Every name present from the start came exactly once. */
static void names_check(const struct names *s)
{
	assert_int_equal(s->dots, 2);
	for (unsigned i = 0; i < s->n; i++)
		if (s->initial[i] && s->seen[i] != 1)
			fail_msg("%s returned %u times (seed %u)", s->v[i], s->seen[i], seed);
}

/* A full walk now sees exactly the names. */
static void full_walk(struct nostall_fs *fs, const char *dir, const struct names *s)
{
	struct names w = *s;
	w.seen = calloc(MAXN, sizeof *w.seen);
	w.dots = 0;
	struct nostall_dir *d;
	assert_int_equal(nostall_opendir(fs, dir, &d), 0);
	struct nostall_dirent de;
	int rc;
	unsigned n = 0;
	while ((rc = nostall_dir_next(d, &de)) == 1) {
		names_saw(&w, &de);
		n++;
	}
	assert_int_equal(rc, 0);
	nostall_closedir(d);
	assert_int_equal(n, s->n + 2);
	for (unsigned i = 0; i < s->n; i++)
		assert_int_equal(w.seen[i], 1);
	free(w.seen);
}

/* ---- one walk with inserts between entries ---- */

/* How the walk moves on: plain next, tell + seek on the same iterator, or
 * a fresh iterator seeking to the position. */
static struct nostall_dir *walk_step(struct nostall_fs *fs, const char *dir,
				     struct nostall_dir *d, unsigned k)
{
	uint64_t pos = nostall_dir_tell(d);
	if (k % 5 == 1) {
		assert_int_equal(nostall_dir_seek(d, pos), 0);
	} else if (k % 11 == 3) {
		nostall_closedir(d);
		assert_int_equal(nostall_opendir(fs, dir, &d), 0);
		assert_int_equal(nostall_dir_seek(d, pos), 0);
	}
	return d;
}

/* Walk dir; after every `every` entries call insert(fs, s, ctx). */
static void walk_inserting(struct nostall_fs *fs, const char *dir, struct names *s, unsigned every,
			   void (*insert)(struct nostall_fs *, struct names *, void *), void *ctx,
			   bool hash_cookies)
{
	struct nostall_dir *d;
	assert_int_equal(nostall_opendir(fs, dir, &d), 0);
	struct nostall_dirent de;
	int rc;
	unsigned k = 0;
	while ((rc = nostall_dir_next(d, &de)) == 1) {
		names_saw(s, &de);
		if (hash_cookies && !(de.next_pos & HASH_COOKIE))
			fail_msg("%s: position %#llx is not a hash cookie", de.name,
				 (unsigned long long)de.next_pos);
		k++;
		if (k % every == 0)
			insert(fs, s, ctx);
		d = walk_step(fs, dir, d, k);
	}
	assert_int_equal(rc, 0);
	nostall_closedir(d);
	names_check(s);
}

struct batch {
	const char *dir, *tag;
	unsigned per, next, max; /* max: names at most (0: no bound) */
};

static void insert_batch(struct nostall_fs *fs, struct names *s, void *ctx)
{
	struct batch *b = ctx;
	char nm[256];
	for (unsigned i = 0; i < b->per && (!b->max || b->next < b->max); i++) {
		name_of(nm, sizeof nm, b->tag, b->next++);
		names_add(fs, s, b->dir, nm, false);
	}
}

static struct nostall_fs *setup(const char *img, const char *dir, struct names *s, unsigned n0)
{
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	int fd = nostall_fd_open(fs, "/t", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_mkdir(fs, dir, 0755), 0);
	names_init(s);
	char nm[256];
	for (unsigned i = 0; i < n0; i++) {
		name_of(nm, sizeof nm, "init", i);
		names_add(fs, s, dir, nm, true);
	}
	return fs;
}

static void splits_case(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "splits", bs, NULL);
	struct names s;
	unsigned n0 = bs == 1024 ? 600 : 1500;
	struct nostall_fs *fs = setup(img, "/d", &s, n0);
	/* 6 new names every 4 entries, up to 3 times as many as there were:
	 * leaves split ahead of and behind the position */
	struct batch b = {.dir = "/d", .tag = "new", .per = 6, .max = 3 * n0};
	walk_inserting(fs, "/d", &s, 4, insert_batch, &b, true);
	full_walk(fs, "/d", &s);
	assert_int_equal(nostall_umount(fs), 0);
	fsimg_assert_clean(img);
	names_free(&s);
}

static void test_splits_1k(void **state)
{
	splits_case(1024);
}

static void test_splits_4k(void **state)
{
	splits_case(4096);
}

/* ---- a reader and an inserting thread ---- */

struct inserter {
	struct nostall_fs *fs;
	struct names *s; /* only the inserter adds; the reader reads after join */
	pthread_mutex_t *lock;
	atomic_bool stop;
	atomic_uint done;
};

static void *inserter_main(void *arg)
{
	struct inserter *in = arg;
	char nm[256];
	for (unsigned i = 0; i < 3000 && !atomic_load(&in->stop); i++) {
		name_of(nm, sizeof nm, "thr", i);
		pthread_mutex_lock(in->lock);
		names_add(in->fs, in->s, "/d", nm, false);
		pthread_mutex_unlock(in->lock);
		atomic_fetch_add(&in->done, 1);
	}
	return NULL;
}

static void threaded_case(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "thread", bs, NULL);
	struct names s;
	struct nostall_fs *fs = setup(img, "/d", &s, 800);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct inserter in = {.fs = fs, .s = &s, .lock = &lock};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, inserter_main, &in), 0);
	struct nostall_dir *d;
	assert_int_equal(nostall_opendir(fs, "/d", &d), 0);
	struct nostall_dirent de;
	int rc;
	unsigned k = 0;
	while ((rc = nostall_dir_next(d, &de)) == 1) {
		pthread_mutex_lock(&lock);
		names_saw(&s, &de);
		pthread_mutex_unlock(&lock);
		/* let the inserter keep ahead: it must split leaves mid-walk */
		k++;
		while (atomic_load(&in.done) < 3000 && atomic_load(&in.done) < 3 * k)
			sched_yield();
		d = walk_step(fs, "/d", d, k);
	}
	assert_int_equal(rc, 0);
	nostall_closedir(d);
	atomic_store(&in.stop, true);
	pthread_join(t, NULL);
	names_check(&s);
	print_message("bs %u: %u names read while %u were inserted\n", bs, k,
		      atomic_load(&in.done));
	full_walk(fs, "/d", &s);
	assert_int_equal(nostall_umount(fs), 0);
	fsimg_assert_clean(img);
	names_free(&s);
}

static void test_threaded_1k(void **state)
{
	threaded_case(1024);
}

static void test_threaded_4k(void **state)
{
	threaded_case(4096);
}

/* ---- legacy-hash collisions ---- */

/* "col_" + three bytes of 33..126 ('/' replaced by 127): 94^3 names. */
static void col_name(char *out, uint32_t idx)
{
	uint32_t c[3] = {33 + idx % 94, 33 + idx / 94 % 94, 33 + idx / 94 / 94};
	for (int i = 0; i < 3; i++)
		if (c[i] == '/')
			c[i] = 127;
	snprintf(out, 16, "col_%c%c%c", (char)c[0], (char)c[1], (char)c[2]);
}

struct hn {
	uint32_t hash, idx;
};

static int hn_cmp(const void *a, const void *b)
{
	const struct hn *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Up to max pairs of names with equal legacy hashes (unsigned chars: the
 * names are ASCII, both variants agree). */
static unsigned col_pairs(uint32_t *pairs, unsigned max)
{
	const uint32_t total = 94u * 94u * 94u;
	struct hn *v = malloc(total * sizeof *v);
	assert_non_null(v);
	char nm[16];
	for (uint32_t i = 0; i < total; i++) {
		col_name(nm, i);
		v[i].idx = i;
		assert_int_equal(ext3_dx_hash(nm, strlen(nm), EXT3_DX_HASH_LEGACY, NULL, &v[i].hash, NULL),
				 0);
	}
	qsort(v, total, sizeof *v, hn_cmp);
	unsigned np = 0;
	for (uint32_t i = 0; i + 1 < total && np < max; i++) {
		if (v[i].hash == v[i + 1].hash) {
			pairs[2 * np] = v[i].idx;
			pairs[2 * np + 1] = v[i + 1].idx;
			np++;
			i++;
		}
	}
	free(v);
	return np;
}

struct colins {
	const uint32_t *pairs;
	unsigned np, next;
};

/* The second name of the next pairs: it joins its twin's hash run. */
static void insert_twins(struct nostall_fs *fs, struct names *s, void *ctx)
{
	struct colins *c = ctx;
	char nm[16];
	for (unsigned k = 0; k < 3 && c->next < c->np; k++, c->next++) {
		col_name(nm, c->pairs[2 * c->next + 1]);
		names_add(fs, s, "/c", nm, false);
	}
}

static void test_collisions(void **state)
{
	uint32_t *pairs = malloc(2 * 400 * sizeof *pairs);
	unsigned np = col_pairs(pairs, 400);
	print_message("%u legacy-hash collision pairs\n", np);
	assert_true(np >= 100);
	char img[300];
	mkimg(img, sizeof img, "collide", 1024, "legacy");
	struct names s;
	struct nostall_fs *fs = setup(img, "/c", &s, 0);
	char nm[16];
	/* the first half of the pairs whole, then the first names of the rest */
	for (unsigned i = 0; i < np; i++) {
		col_name(nm, pairs[2 * i]);
		names_add(fs, &s, "/c", nm, true);
		if (i < np / 2) {
			col_name(nm, pairs[2 * i + 1]);
			names_add(fs, &s, "/c", nm, true);
		}
	}
	struct colins c = {.pairs = pairs, .np = np, .next = np / 2};
	walk_inserting(fs, "/c", &s, 2, insert_twins, &c, true);
	full_walk(fs, "/c", &s);
	assert_int_equal(nostall_umount(fs), 0);
	fsimg_assert_clean(img);
	names_free(&s);
	free(pairs);
}

/* ---- linear directories ---- */

static void convert_case(unsigned bs)
{
	char img[300];
	mkimg(img, sizeof img, "convert", bs, NULL);
	struct names s;
	struct nostall_fs *fs = setup(img, "/l", &s, 8);
	struct nostall_dir *d;
	assert_int_equal(nostall_opendir(fs, "/l", &d), 0);
	struct nostall_dirent de;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(nostall_dir_next(d, &de), 1);
		names_saw(&s, &de);
		/* one block, linear: byte offsets inside it */
		assert_true(de.next_pos > 0 && de.next_pos <= bs);
	}
	/* enough names to outgrow the block: it becomes indexed */
	struct batch b = {.dir = "/l", .tag = "grow", .per = bs / 16};
	insert_batch(fs, &s, &b);
	/* drop what the iterator read ahead: it reads the directory again */
	assert_int_equal(nostall_dir_seek(d, nostall_dir_tell(d)), 0);
	int rc;
	bool hashed = false;
	while ((rc = nostall_dir_next(d, &de)) == 1) {
		names_saw(&s, &de);
		hashed |= (de.next_pos & HASH_COOKIE) != 0;
	}
	assert_int_equal(rc, 0);
	assert_true(hashed);
	nostall_closedir(d);
	names_check(&s);
	full_walk(fs, "/l", &s);
	assert_int_equal(nostall_umount(fs), 0);
	fsimg_assert_clean(img);
	names_free(&s);
}

static void test_convert_1k(void **state)
{
	convert_case(1024);
}

static void test_convert_4k(void **state)
{
	convert_case(4096);
}

/* A linear directory (no dir_index) keeps byte offsets, also when read
 * while it grows. */
static void test_linear_offsets(void **state)
{
	char img[300];
	snprintf(img, sizeof img, "%s/linear.img", tmpdir);
	if (fsimg_mkfs(img, 1024, 32768, "-N 2048 -O ^dir_index"))
		fail_msg("mke2fs %s", img);
	struct names s;
	struct nostall_fs *fs = setup(img, "/d", &s, 300);
	struct nostall_dir *d;
	assert_int_equal(nostall_opendir(fs, "/d", &d), 0);
	struct nostall_dirent de;
	int rc;
	uint64_t last = 0;
	unsigned k = 0;
	struct batch b = {.dir = "/d", .tag = "lin", .per = 3};
	while ((rc = nostall_dir_next(d, &de)) == 1) {
		names_saw(&s, &de);
		assert_false(de.next_pos & HASH_COOKIE);
		assert_true(de.next_pos > last); /* block order: offsets grow */
		last = de.next_pos;
		if (++k % 10 == 0)
			insert_batch(fs, &s, &b);
		d = walk_step(fs, "/d", d, k);
	}
	assert_int_equal(rc, 0);
	nostall_closedir(d);
	names_check(&s);
	full_walk(fs, "/d", &s);
	assert_int_equal(nostall_umount(fs), 0);
	fsimg_assert_clean(img);
	names_free(&s);
}

int main(void)
{
	seed = getenv("NOSTALL_SEED") ? (unsigned)strtoul(getenv("NOSTALL_SEED"), NULL, 0)
				      : (unsigned)time(NULL);
	printf("seed %u (NOSTALL_SEED)\n", seed);
	int orc = oracles_check("test_fs_readdir", "mke2fs e2fsck debugfs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "readdir"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_splits_1k),    cmocka_unit_test(test_splits_4k),
		cmocka_unit_test(test_threaded_1k),  cmocka_unit_test(test_threaded_4k),
		cmocka_unit_test(test_collisions),   cmocka_unit_test(test_convert_1k),
		cmocka_unit_test(test_convert_4k),   cmocka_unit_test(test_linear_offsets),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
