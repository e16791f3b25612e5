/* The write path's acceptance test: long seeded runs of random POSIX
 * operations through the library's public API (tests/lib/fstarget_nostall.c)
 * against the model of Linux ext3 (tests/lib/fsmodel.c), for every data
 * mode (journal, ordered, writeback, guarded), on ext2 without a journal ("ext2"),
 * and block size (1 KiB, 4 KiB). Every
 * result and errno is compared; every NOSTALL_FSCHECK operations (default
 * 300) a checkpoint unmounts, runs e2fsck -fn on the image, mounts again
 * and compares the whole tree. As root the final image is also mounted by
 * the kernel (ext3 or ext2, read-only, loop) and must show the same tree.
 * docs/testing-model.md, docs/api.md.
 *
 * Environment: NOSTALL_SEED=N (the seed; printed either way), NOSTALL_FSOPS=N
 * (operations per combination, default 3000; 20000+ for a long run),
 * NOSTALL_FSCHECK=N, NOSTALL_FSWEIGHTS, NOSTALL_FSVERBOSE=1,
 * NOSTALL_FSREPLAY=FILE (replay a saved script on each combination),
 * NOSTALL_FSMINIMIZE=N (replays the minimizer may spend after a failure,
 * default 80; 0: none), NOSTALL_FSONLY=TEXT
 * (only the combinations whose "MODE-BLOCKSIZE" contains TEXT). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsrun.h"
#include "lib/fstarget_nostall.h"
#include "lib/testfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t seed;
static char tmpdir[] = "/tmp/fs_random-XXXXXX";

struct combo {
	const char *mode;
	unsigned bs;
};

/* As root: the kernel mounts the final image and must see the model's
 * tree. A kernel that cannot mount it here (no loop devices in a
 * container) is reported and skipped; any difference fails. */
struct end_ctx {
	struct fst_nostall_factory *nf;
	int compared, skipped;
};

static int kernel_end(void *ctx, struct fsrun *r, struct fs_target *t)
{
	struct end_ctx *e = ctx;
	int rc = fst_nostall_unmount(t);
	if (rc) {
		fprintf(stderr, "fs_random: final unmount failed: %s\n", fst_errname(rc));
		return 1;
	}
	rc = fst_nostall_kernel_compare_type(r, e->nf->image, e->nf->fs_type);
	if (rc < 0) {
		printf("fs_random: the kernel could not mount the image (no loop device?): "
		       "kernel compare skipped\n");
		e->skipped++;
		return 0;
	}
	e->compared += rc == 0;
	return rc;
}

static unsigned env_uint(const char *name, unsigned def)
{
	const char *s = getenv(name);
	return s && *s ? (unsigned)strtoul(s, NULL, 0) : def;
}

static void run_combo(const struct combo *cb)
{
	char opts[64];
	snprintf(opts, sizeof opts, "data=%s", cb->mode);
	/* "ext2": a journal-less image, mounted with no data= (refused there) */
	bool ext2 = !strcmp(cb->mode, "ext2");
	struct fst_nostall_factory nf = { .block_size = cb->bs, .size_bytes = 512ull << 20,
					  .opts = ext2 ? NULL : opts, .fsck = true,
					  .fs_type = ext2 ? "ext2" : NULL };
	snprintf(nf.image, sizeof nf.image, "%s/img-%s-%u", tmpdir, cb->mode, cb->bs);
	if (!testfs_bs_wanted(cb->bs)) {
		printf("fs_random: data=%s, %u-byte blocks: skipped (NOSTALL_TEST_BLOCK_SIZE)\n", cb->mode, cb->bs);
		return;
	}
	/* NOSTALL_TEST_FS without a journal (ext2): no data modes; one run per
	 * block size, mounted without data= (refused there) */
	if (!testfs_has_journal()) {
		if (strcmp(cb->mode, "guarded")) {
			printf("fs_random: data=%s, %u-byte blocks: skipped (%s has no journal: the guarded combination "
			       "runs it without data=)\n", cb->mode, cb->bs, testfs_type());
			return;
		}
		nf.opts = NULL;
	}
	const char *only = getenv("NOSTALL_FSONLY");
	if (only && *only && !strstr(nf.image + strlen(tmpdir), only)) {
		printf("fs_random: data=%s, %u-byte blocks: skipped (NOSTALL_FSONLY)\n", cb->mode, cb->bs);
		return;
	}
	struct fst_factory f = { fst_nostall_factory_create, &nf };
	printf("fs_random: data=%s, %u-byte blocks\n", cb->mode, cb->bs);
	fflush(stdout);

	const char *replay = getenv("NOSTALL_FSREPLAY");
	if (replay && *replay) {
		struct fsrun_cfg rc = { .owner = true, .holes = true };
		assert_int_equal(fsdrive_replay_file(&f, &rc, replay, stdout), 0);
		unlink(nf.image);
		return;
	}
	struct fsdrive_cfg c;
	struct fsdrive_result res;
	struct end_ctx end = { .nf = &nf };
	fsdrive_cfg_default(&c);
	fsdrive_cfg_env(&c);
	c.seed = seed;
	c.nops = env_uint("NOSTALL_FSOPS", 3000);
	c.check_every = env_uint("NOSTALL_FSCHECK", 300);
	/* each replay makes a fresh image: a smaller budget than the model's */
	c.minimize_budget = env_uint("NOSTALL_FSMINIMIZE", 80);
	c.minimize = c.minimize_budget != 0;
	c.out = stdout;
	if (geteuid() == 0) {
		c.at_end = kernel_end;
		c.at_end_ctx = &end;
	}
	assert_int_equal(fsdrive_random(&f, &c, &res), 0);
	if (res.failed)
		fail_msg("data=%s bs=%u seed %llu: mismatch at operation %zu (script %s):\n%s", cb->mode,
			 cb->bs, (unsigned long long)seed, res.fail_index, res.script, res.msg);
	if (geteuid() == 0)
		assert_int_equal(end.compared + end.skipped, 1);
	unlink(nf.image);
}

static const struct combo combos[] = {
	{ "journal", 1024 },   { "journal", 4096 },   { "ordered", 1024 },
	{ "ordered", 4096 },   { "writeback", 1024 }, { "writeback", 4096 },
	{ "guarded", 1024 },   { "guarded", 4096 },   { "ext2", 1024 },
	{ "ext2", 4096 },
};

static void test_combo(void **state)
{
	run_combo(*state);
}

int main(void)
{
	seed = fsdrive_seed();
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	printf("fs_random: seed %llu (rerun: NOSTALL_SEED=%llu)%s\n", (unsigned long long)seed,
	       (unsigned long long)seed, geteuid() ? "; not root: no kernel compare, no chown" : "");
	static const char *const names[] = { "journal_1k", "journal_4k", "ordered_1k",
					     "ordered_4k", "writeback_1k", "writeback_4k",
					     "guarded_1k", "guarded_4k", "ext2_1k", "ext2_4k" };
	struct CMUnitTest tests[sizeof combos / sizeof combos[0]];
	for (size_t i = 0; i < sizeof combos / sizeof combos[0]; i++)
		tests[i] = (struct CMUnitTest){ .name = names[i], .test_func = test_combo,
						.initial_state = (void *)&combos[i] };
	int rc = _cmocka_run_group_tests("test_fs_random", tests, sizeof tests / sizeof tests[0], NULL, NULL);
	rmdir(tmpdir);
	return rc;
}
