/* One directory with 100,000 files at 1 KiB blocks, through the public API
 * (issue 8: "Creating 100,000 files in one directory works at 1 KiB blocks
 * (two-level htree), and lookups, deletes and e2fsck -fn stay correct").
 *
 * The names are created in a shuffled order (seeded: the seed is printed,
 * NOSTALL_SEED=N reruns it), so leaf and index splits happen all over the
 * hash space. Then: every name is looked up (and an absent one per
 * thousand), readdir sees each exactly once, the index has two levels
 * (debugfs htree_dump: "Indirect levels: 1", an independent reader of the
 * on-disk format), unmount, e2fsck -fn clean; remount, half the names are
 * deleted (every other one), the rest are looked up again and the deleted
 * ones are -ENOENT, new names fill the freed room, e2fsck -fn clean, and a
 * final read-only mount checks the whole set once more.
 *
 * Runtime: about 100k x (create + 2 lookups + stat) plus 50k unlinks, a
 * few seconds in release, longer under ASan; nothing asserts on time.
 * nostall-test: slow (runs in make test; NOSTALL_BIGDIR_N=N changes the
 * count for quick experiments — below ~20,000 the index has one level). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_N 100000u

static char tmpdir[256];
static uint64_t seed;
static unsigned nfiles;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Name of file i: varied lengths (8..40 bytes) so entries differ in size. */
static void name_of(char *out, size_t n, unsigned i, unsigned gen)
{
	static const char pad[] = "-padding-padding-padding-padding";
	snprintf(out, n, "f%u.%u%.*s", i, gen, (int)(i % 29), pad);
}

/* What the directory should hold: gen[i] = generation of name i, 0 if none. */
struct set {
	unsigned n;
	uint8_t *gen;
	uint32_t *ino;
	unsigned present;
};

struct rd_ctx {
	const struct set *s;
	uint8_t *seen;
	unsigned count, bad;
	char first_bad[300];
};

static int rd_cb(void *ctx, const struct nostall_dirent *de)
{
	struct rd_ctx *c = ctx;
	if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
		return 0;
	unsigned i, g;
	char want[128];
	bool ok = sscanf(de->name, "f%u.%u", &i, &g) == 2 && i < c->s->n && c->s->gen[i] == g;
	if (ok) {
		name_of(want, sizeof want, i, g);
		ok = !strcmp(want, de->name) && !c->seen[i] && de->ino == c->s->ino[i] &&
		     de->type == NOSTALL_DT_REG;
	}
	if (!ok) {
		if (!c->bad++)
			snprintf(c->first_bad, sizeof c->first_bad, "%s (ino %llu)", de->name,
				 (unsigned long long)de->ino);
		return 0;
	}
	c->seen[i] = 1;
	c->count++;
	return 0;
}

/* Every present name is found with its inode, absent ones are -ENOENT,
 * readdir lists each present name once. */
static void check_set(struct nostall_fs *fs, uint64_t dir, const struct set *s)
{
	char name[128];
	for (unsigned i = 0; i < s->n; i++) {
		uint64_t ino = 0;
		unsigned g = s->gen[i] ? s->gen[i] : 1;
		name_of(name, sizeof name, i, g);
		int rc = nostall_lookup_at(fs, dir, name, &ino);
		if (s->gen[i]) {
			if (rc || ino != s->ino[i])
				fail_msg("lookup %s: %d ino %llu, want ino %u", name, rc,
					 (unsigned long long)ino, s->ino[i]);
		} else if (rc != -ENOENT) {
			fail_msg("lookup of deleted %s: %d (ino %llu), want -ENOENT", name, rc,
				 (unsigned long long)ino);
		}
	}
	struct rd_ctx c = { .s = s, .seen = calloc(s->n, 1) };
	assert_non_null(c.seen);
	assert_int_equal(nostall_readdir_ino(fs, dir, rd_cb, &c), 0);
	free(c.seen);
	if (c.bad)
		fail_msg("readdir: %u unexpected entries, the first %s", c.bad, c.first_bad);
	assert_int_equal(c.count, s->present);
}

/* "Indirect levels" of the directory's dx_root, by debugfs (-1: none). */
static int index_levels(const char *img, const char *dir)
{
	return (int)fsimg_num("Indirect levels:", "debugfs -R 'htree_dump %s' '%s' 2>/dev/null", dir,
			      img);
}

static void test_bigdir(void **state)
{
	char img[300];
	snprintf(img, sizeof img, "%s/bigdir.img", tmpdir);
	unsigned n = nfiles;
	char extra[32];
	snprintf(extra, sizeof extra, "-N %u", n + n / 2 + 1000);
	fsimg_assert_mkfs(img, 1024, 96 * 1024 + n / 4, extra);
	struct set s = { .n = n, .gen = calloc(n, 1), .ino = calloc(n, sizeof(uint32_t)) };
	unsigned *order = malloc(n * sizeof *order);
	assert_true(s.gen && s.ino && order);
	uint64_t rs = seed;
	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(rnd(&rs) % (i + 1));
		unsigned t = order[i];
		order[i] = order[j];
		order[j] = t;
	}

	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	assert_int_equal(nostall_mkdir(fs, "/big", 0755), 0);
	uint64_t dir;
	assert_int_equal(nostall_lookup(fs, "/big", 0, &dir), 0);
	char name[128];
	double t0 = now_s();
	for (unsigned k = 0; k < n; k++) {
		unsigned i = order[k];
		struct nostall_stat st;
		name_of(name, sizeof name, i, 1);
		int rc = nostall_mknod_at(fs, dir, name, S_IFREG | 0644, 0, &st);
		if (rc)
			fail_msg("create %s (#%u): %s", name, k, nostall_errmsg(rc));
		nostall_forget(fs, st.ino, 1);
		s.gen[i] = 1;
		s.ino[i] = (uint32_t)st.ino;
		s.present++;
		/* now and then: a fresh name is found, an absent one is not */
		if (k % 997 == 0) {
			uint64_t ino;
			assert_int_equal(nostall_lookup_at(fs, dir, name, &ino), 0);
			assert_int_equal(ino, st.ino);
			name_of(name, sizeof name, i, 2);
			assert_int_equal(nostall_lookup_at(fs, dir, name, &ino), -ENOENT);
		}
	}
	double t1 = now_s();
	check_set(fs, dir, &s);
	double t2 = now_s();
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/big", 0, &st), 0);
	assert_true(st.flags & 0x1000); /* EXT3_INDEX_FL */
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	int levels = index_levels(img, "/big");
	if (n >= DEFAULT_N && levels != 1)
		fail_msg("the index has %d indirect levels after %u creates, want 1 (two levels)", levels,
			 n);
	printf("bigdir: %u creates %.2f s, lookups + readdir %.2f s, dir %llu KiB, index levels %d\n",
	       n, t1 - t0, t2 - t1, (unsigned long long)st.size / 1024, levels + 1);

	/* delete every other name; new names into the room they leave */
	fs = fsimg_api_mount(img, NULL, 0);
	check_set(fs, dir, &s);
	double t3 = now_s();
	for (unsigned k = 0; k < n; k++) {
		unsigned i = order[k];
		if (i % 2)
			continue;
		name_of(name, sizeof name, i, 1);
		int rc = nostall_unlink_at(fs, dir, name);
		if (rc)
			fail_msg("unlink %s: %s", name, nostall_errmsg(rc));
		s.gen[i] = 0;
		s.present--;
	}
	double t4 = now_s();
	check_set(fs, dir, &s);
	for (unsigned i = 0; i < n; i += 10) {
		name_of(name, sizeof name, i, 3);
		int rc = nostall_mknod_at(fs, dir, name, S_IFREG | 0600, 0, &st);
		if (rc)
			fail_msg("create %s after the deletes: %s", name, nostall_errmsg(rc));
		nostall_forget(fs, st.ino, 1);
		s.gen[i] = 3;
		s.ino[i] = (uint32_t)st.ino;
		s.present++;
	}
	check_set(fs, dir, &s);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	printf("bigdir: %u unlinks %.2f s\n", n / 2, t4 - t3);

	fs = fsimg_api_mount(img, NULL, NOSTALL_MOUNT_RDONLY);
	check_set(fs, dir, &s);
	struct nostall_statfs sf;
	assert_int_equal(nostall_statfs(fs, &sf), 0);
	assert_int_equal(sf.files - sf.files_free, 11 + 1 + s.present);
	fsimg_api_umount(fs);
	free(order);
	free(s.gen);
	free(s.ino);
	unlink(img);
}

int main(void)
{
	const char *e = getenv("NOSTALL_SEED");
	seed = e && *e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	e = getenv("NOSTALL_BIGDIR_N");
	nfiles = e && *e ? (unsigned)strtoul(e, NULL, 0) : DEFAULT_N;
	printf("test_fs_bigdir: seed %llu (rerun: NOSTALL_SEED=%llu), %u files\n",
	       (unsigned long long)seed, (unsigned long long)seed, nfiles);
	int orc = oracles_check("test_fs_bigdir", "mke2fs e2fsck debugfs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "bigdir"))
		return 1;
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_bigdir) };
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
