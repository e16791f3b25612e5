/* Hostile ext4 images (issue 38): images mkfs.ext4 makes from a small tree
 * (extent files, one with an index level; a directory; symlinks; xattrs),
 * in two layouts - Debian's default (64bit, flex_bg, metadata_csum) and
 * ^metadata_csum (so that changes reach the structural checks rather than
 * only the checksums) - get random bytes of their metadata area changed,
 * seeded, then are mounted read-only on a mem: copy and walked through the
 * public API (fuzz/fuzz_walk.h: every file read, every directory listed,
 * xattrs, links, bmap). Any result is allowed but a crash, a sanitizer
 * report or a hang. The unchanged images must walk clean, every entry.
 *
 * Oracles: mkfs.ext4 (e2fsprogs). Seeded (NOSTALL_SEED). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../fuzz/fuzz_walk.h"
#include "lib/fsimg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 400
#define IMG_KIB 3072

static char tmpdir[256];
static uint64_t seed;

static uint8_t *image_load(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	uint8_t *b = malloc((size_t)IMG_KIB << 10);
	assert_non_null(b);
	*size = fread(b, 1, (size_t)IMG_KIB << 10, f);
	fclose(f);
	assert_int_equal(*size, (size_t)IMG_KIB << 10);
	return b;
}

/* A tree for mkfs.ext4 -d: files, one of 60 separate 1 KiB pieces (more
 * extents than the inode holds: an index level), a directory of 80 names,
 * symlinks (fast and slow), an xattr. */
static void make_tree(const char *dir)
{
	assert_int_equal(fsimg_run("mkdir -p '%s/t/d' && cd '%s/t' && head -c 70000 /dev/zero | tr '\\0' a > big && "
				   "echo hi > small && ln -s small fast && ln -s $(printf 'y%%.0s' $(seq 1 100)) slow && "
				   "for i in $(seq 1 80); do echo $i > d/name_$i; done && "
				   "python3 -c \"import os; fd=os.open('frag', os.O_WRONLY|os.O_CREAT, 0o644); "
				   "[os.pwrite(fd, b'z'*1024, i*4096) for i in range(60)]; os.close(fd)\" && "
				   "setfattr -n user.k -v v small 2>/dev/null; true",
				   dir, dir),
			 0);
}

static void layout(const char *name, const char *opts)
{
	char img[512];
	snprintf(img, sizeof img, "%s/%s.img", tmpdir, name);
	assert_int_equal(fsimg_run("mkfs.ext4 -q -F -b 1024 %s -d '%s/t' '%s' %uk >/dev/null 2>&1", opts, tmpdir,
				   img, IMG_KIB),
			 0);
	size_t size;
	uint8_t *orig = image_load(img, &size);
	/* the unchanged image walks clean */
	struct fuzz_walk *w = calloc(1, sizeof *w);
	assert_non_null(w);
	struct dev *dev = NULL;
	assert_int_equal(fuzz_image_dev(orig, size, &dev), 0);
	assert_int_equal(nostall_mount_dev(dev, NULL, NOSTALL_MOUNT_RDONLY, &w->fs), 0);
	uint64_t frag_ino;
	assert_int_equal(nostall_lookup(w->fs, "/frag", 0, &frag_ino), 0);
	struct nostall_file *f;
	assert_int_equal(nostall_open_ino(w->fs, frag_ino, NOSTALL_O_RDONLY, &f), 0);
	char buf[16];
	assert_int_equal(nostall_pread(f, buf, 1, 59 * 4096), 1);
	assert_int_equal(buf[0], 'z');
	assert_int_equal(nostall_pread(f, buf, 1, 59 * 4096 - 1), 1);
	assert_int_equal(buf[0], 0); /* a hole */
	nostall_close(f);
	fuzz_walk_mounted(w);
	assert_true(w->entries >= 80);
	dev_close(dev);

	/* The metadata area: with flex_bg the bitmaps, inode tables, tree and
	 * directory blocks of a small image sit in its first part; changed
	 * data blocks are harmless. */
	size_t area = size / 3;
	/* and the blocks the walk depends on most: /frag's extent index
	 * block, /d's first directory block, the root's inode table block */
	long long hot[3];
	char out[4096];
	hot[0] = -1;
	if (fsimg_out(out, sizeof out, "debugfs -R 'stat /frag' '%s' 2>/dev/null", img) == 0) {
		char *p = strstr(out, "(ETB0):");
		if (p)
			hot[0] = atoll(p + 7);
	}
	hot[1] = fsimg_num("", "debugfs -R 'bmap /d 0' '%s' 2>/dev/null", img);
	hot[2] = fsimg_num("", "debugfs -R 'imap /' '%s' 2>/dev/null | sed -n 's/.*located at block \\([0-9]*\\),.*/\\1/p'",
			   img);
	print_message("%s: extent index block %lld, /d block %lld, root inode block %lld\n", name, hot[0], hot[1],
		      hot[2]);
	assert_true(hot[0] > 0 && hot[1] > 0 && hot[2] > 0);
	uint64_t s = seed ^ (uint64_t)strlen(name) * 0x9E3779B97F4A7C15ull;
	unsigned mounted = 0;
	uint8_t *img_b = malloc(size);
	assert_non_null(img_b);
	for (unsigned r = 0; r < ROUNDS; r++) {
		memcpy(img_b, orig, size);
		unsigned flips = 1 + (unsigned)(s % 8);
		for (unsigned k = 0; k < flips; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			size_t off = 1024 + (size_t)((s >> 20) % (area - 1024));
			if (r % 2) /* every other round: inside one of the hot blocks */
				off = (size_t)hot[(s >> 40) % 3] * 1024 + (size_t)((s >> 16) % 1024);
			img_b[off] ^= (uint8_t)(1u << ((s >> 8) & 7));
		}
		memset(w, 0, sizeof *w);
		if (fuzz_image_dev(img_b, size, &dev))
			continue;
		if (nostall_mount_dev(dev, NULL, NOSTALL_MOUNT_RDONLY, &w->fs) == 0) {
			mounted++;
			fuzz_walk_mounted(w);
		}
		dev_close(dev);
	}
	print_message("%s: %u of %u changed images mounted and were walked\n", name, mounted, ROUNDS);
	free(img_b);
	free(w);
	free(orig);
}

static void test_default(void **state)
{
	(void)state;
	layout("default", "");
}

static void test_no_csum(void **state)
{
	(void)state;
	layout("nocsum", "-O ^metadata_csum");
}

int main(void)
{
	int rc = fsimg_main_begin("test_ext4_hostile", "e4h", "mkfs.ext4", &seed, tmpdir, sizeof tmpdir);
	if (rc >= 0)
		return rc;
	make_tree(tmpdir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_no_csum),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
