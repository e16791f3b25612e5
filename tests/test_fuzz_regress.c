/* Replays every file in tests/fuzz-regress/ (inputs that once crashed or hung
 * the read or the write path, or interesting fuzz corpus units) through the
 * same walks as the libFuzzer targets fuzz/fuzz_mount.c (read-only) and
 * fuzz/fuzz_write.c (read-write: changes, unmount, a read-only walk of the
 * result): mount from a mem: device, info,
 * groups, bounded recursive readdir, stat, read, bmap, readlink, xattrs,
 * lookups. Each image may mount or not; nothing may crash (ASan/UBSan run
 * this under tests/run.sh asan) and umount must succeed. Also a few
 * hand-made corruptions of a valid image. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../fuzz/fuzz_write.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *regress_dir(void)
{
	static const char *const cands[] = { "tests/fuzz-regress", "../tests/fuzz-regress", "fuzz-regress" };
	for (size_t k = 0; k < sizeof cands / sizeof cands[0]; k++) {
		DIR *d = opendir(cands[k]);
		if (d) {
			closedir(d);
			return cands[k];
		}
	}
	return NULL;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			uint8_t *b = realloc(buf, cap);
			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	*len = n;
	return buf;
}

static void test_replay_regress_dir(void **state)
{
	(void)state;
	const char *dir = regress_dir();
	assert_non_null(dir);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	int files = 0, mounted = 0, wmounted = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strstr(de->d_name, ".md"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		size_t len = 0;
		uint8_t *img = slurp(path, &len);
		assert_non_null(img);
		printf("replay %s (%zu bytes)\n", de->d_name, len);
		mounted += fuzz_walk_image(img, len);
		wmounted += fuzz_write_image(img, len, NULL);
		free(img);
		files++;
	}
	closedir(d);
	printf("%d inputs replayed, %d mounted, %d mounted read-write\n", files, mounted, wmounted);
	assert_true(files > 0);
}

/* Edge sizes and blank images never crash. */
static void test_degenerate_inputs(void **state)
{
	(void)state;
	static uint8_t zero[70000];
	assert_int_equal(fuzz_walk_image(zero, 0), 0);
	assert_int_equal(fuzz_walk_image(zero, 1023), 0);
	assert_int_equal(fuzz_walk_image(zero, sizeof zero), 0);
	assert_int_equal(fuzz_write_image(zero, sizeof zero, NULL), 0);
	uint8_t *ff = malloc(70000);
	assert_non_null(ff);
	memset(ff, 0xff, 70000);
	assert_int_equal(fuzz_walk_image(ff, 70000), 0);
	/* a superblock magic and nothing else */
	memset(ff, 0, 70000);
	ff[1024 + 0x38] = 0x53;
	ff[1024 + 0x39] = 0xef;
	(void)fuzz_walk_image(ff, 70000);
	(void)fuzz_write_image(ff, 70000, NULL);
	free(ff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_regress_dir),
		cmocka_unit_test(test_degenerate_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
