/* The filesystem model (tests/lib/fsmodel.h) against the real kernel: the
 * host target runs every operation on a mkdtemp() directory, so the model
 * must agree with Linux on every result and errno and on the whole tree at
 * every checkpoint. Also: the compare and the runner catch planted
 * differences, scripts round-trip, the minimizer shrinks a failure.
 *
 * Seeds: NOSTALL_SEED=N picks the random run's seed (printed either way);
 * NOSTALL_FSOPS=N the operation count. docs/testing-model.md. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsrun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static bool is_root(void)
{
	return geteuid() == 0;
}

static void note_root_skips(void)
{
	static bool said;
	if (!is_root() && !said) {
		printf("fsmodel: not root: chown, trusted.* xattrs and device nodes skipped\n");
		said = true;
	}
}

/* ---- scripted checks: the model's own result, then agreement ---- */

struct step {
	const char *line;
	int64_t want; /* the model's result (the host must agree too) */
};

static void run_steps(struct fsrun *r, const struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fsop op;
		char err[200];
		int prc = fsop_parse(s[i].line, &op, err, sizeof err);
		if (prc) {
			fail_msg("step %zu: cannot parse '%s': %s", i, s[i].line, err);
		}
		int rc = fsrun_apply(r, &op);
		if (rc)
			fail_msg("step %zu: %s: model and kernel disagree:\n%s", i, s[i].line, fsrun_msg(r));
		int64_t got = fsrun_last_result(r);
		if (op.kind == FSOP_OPEN && s[i].want == 0 && got >= 0)
			got = 0; /* a handle */
		if (got != s[i].want)
			fail_msg("step %zu: %s: model gave %lld (%s), want %lld (%s)", i, s[i].line,
				 (long long)fsrun_last_result(r), fst_errname(fsrun_last_result(r)),
				 (long long)s[i].want, fst_errname(s[i].want));
		fsop_free(&op);
	}
}

static struct fsrun *host_runner(struct fs_target **t)
{
	struct fsrun *r;
	assert_int_equal(fst_host_new_tmp(t), 0);
	assert_int_equal(fsrun_new(*t, &(struct fsrun_cfg){ .owner = true, .holes = true }, &r), 0);
	return r;
}

#define NSTEPS(a) (sizeof(a) / sizeof((a)[0]))

static void test_namespace_errnos(void **state)
{
	static const struct step steps[] = {
		{ "mkdir path=/a mode=0755", 0 },
		{ "mkdir path=/a mode=0755", -EEXIST },
		{ "mkdir path=/a/b mode=0700", 0 },
		{ "mkdir path=/x/y mode=0700", -ENOENT },
		{ "open slot=0 path=/a/f flags=RDWR|CREAT mode=0644", 0 },
		{ "mkdir path=/a/f/z mode=0700", -ENOTDIR },
		{ "rmdir path=/a", -ENOTEMPTY },
		{ "rmdir path=/a/f", -ENOTDIR },
		{ "unlink path=/a/b", -EISDIR },
		{ "rename path=/a path2=/a/b/c", -EINVAL },
		{ "rename path=/a/b path2=/a", -ENOTEMPTY },
		{ "rename path=/a/f path2=/a/b", -EISDIR },
		{ "rename path=/a/b path2=/a/f", -ENOTDIR },
		{ "rename path=/a/f path2=/a/b flags=NOREPLACE", -EEXIST },
		{ "rename path=/a/f path2=/a/nope flags=EXCHANGE", -ENOENT },
		{ "rename path=/a/f path2=/a/b flags=EXCHANGE", 0 },
		{ "stat path=/a/f", 0 },
		{ "rename path=/a/f path2=/a/b flags=EXCHANGE", 0 },
		{ "link path=/a/f path2=/a/g", 0 },
		{ "rename path=/a/f path2=/a/g", 0 }, /* two names of one inode: nothing */
		{ "stat path=/a/f", 0 },
		{ "link path=/a/b path2=/a/h", -EPERM },
		{ "link path=/a/f path2=/a/g", -EEXIST },
		{ "symlink path=/s path2=a/f", 0 },
		{ "symlink path=/loop path2=loop", 0 },
		{ "stat path=/loop", -ELOOP },
		{ "stat path=/loop nofollow=1", 0 },
		{ "readlink path=/a/f", -EINVAL },
		{ "symlink path=/e path2=", -ENOENT },
		{ "symlink path=/d path2=a/new", 0 },
		{ "open slot=1 path=/d flags=WRONLY|CREAT mode=0600", 0 }, /* creates a/new */
		{ "stat path=/a/new", 0 },
		{ "open slot=2 path=/d flags=WRONLY|CREAT|EXCL mode=0600", -EEXIST },
		{ "open slot=2 path=/s flags=RDONLY|NOFOLLOW", -ELOOP },
		{ "open slot=2 path=/a flags=RDWR", -EISDIR },
		{ "open slot=2 path=/s/x flags=RDONLY", -ENOTDIR },
		{ "truncate path=/a off=0", -EISDIR },
		{ "mknod path=/p mode=010644", 0 },
		{ "truncate path=/p off=0", -EINVAL },
		{ "rmdir path=/a/b", 0 },
		{ "readdir path=/a", 0 },
		{ "checkpoint", 0 },
	};
	struct fs_target *t;
	struct fsrun *r = host_runner(&t);
	run_steps(r, steps, NSTEPS(steps));
	/* names of 256 and 255 bytes */
	char line[600], name[257];
	memset(name, 'L', 256);
	name[256] = 0;
	snprintf(line, sizeof line, "mkdir path=/%s mode=0700", name);
	run_steps(r, &(struct step){ line, -ENAMETOOLONG }, 1);
	snprintf(line, sizeof line, "stat path=/a/%s/x", name);
	run_steps(r, &(struct step){ line, -ENAMETOOLONG }, 1);
	name[255] = 0;
	snprintf(line, sizeof line, "mkdir path=/%s mode=0700", name);
	run_steps(r, &(struct step){ line, 0 }, 1);
	run_steps(r, &(struct step){ "checkpoint", 0 }, 1);
	fsrun_free(r);
	fst_destroy(t);
}

static void test_xattr_and_io_errnos(void **state)
{
	static const struct step steps[] = {
		{ "open slot=0 path=/f flags=WRONLY|CREAT mode=0644", 0 },
		{ "setxattr path=/f name=user.a len=10 seed=3", 0 },
		{ "setxattr path=/f name=user.a len=10 seed=4 xflags=CREATE", -EEXIST },
		{ "setxattr path=/f name=user.b len=10 seed=4 xflags=REPLACE", -ENODATA },
		{ "getxattr path=/f name=user.b len=100", -ENODATA },
		{ "getxattr path=/f name=user.a len=0", 10 },
		{ "getxattr path=/f name=user.a len=5", -ERANGE },
		{ "getxattr path=/f name=user.a len=100", 10 },
		{ "setxattr path=/f name=bogus.a len=1 seed=1", -EOPNOTSUPP },
		{ "listxattr path=/f len=100", 7 },
		{ "removexattr path=/f name=user.b", -ENODATA },
		{ "removexattr path=/f name=user.a", 0 },
		{ "symlink path=/s path2=f", 0 },
		{ "setxattr path=/s name=user.a len=1 seed=1 nofollow=1", -EPERM },
		{ "getxattr path=/s name=user.a len=10 nofollow=1", -ENODATA },
		{ "setxattr path=/s name=user.a len=1 seed=1", 0 }, /* follows to /f */
		{ "read slot=0 len=10", -EBADF },
		{ "pwrite slot=0 off=1048576 len=10 seed=5", 10 },
		{ "ftruncate slot=0 off=5000", 0 },
		{ "open slot=1 path=/f flags=RDONLY", 0 },
		{ "ftruncate slot=1 off=0", -EINVAL },
		{ "write slot=1 len=1 seed=1", -EBADF },
		{ "pread slot=1 off=0 len=8192", 5000 },
		{ "unlink path=/f", 0 },
		{ "write slot=0 len=3000 seed=6", 3000 }, /* an unlinked file stays writable */
		{ "fstat slot=0", 0 },
		{ "pread slot=1 off=0 len=9000", 5000 },
		{ "stat path=/f", -ENOENT },
		{ "close slot=0", 0 },
		{ "close slot=1", 0 },
		{ "checkpoint", 0 },
	};
	struct fs_target *t;
	struct fsrun *r = host_runner(&t);
	run_steps(r, steps, NSTEPS(steps));
	fsrun_free(r);
	fst_destroy(t);
}

static void test_more_semantics(void **state)
{
	static const struct step steps[] = {
		/* setgid directories pass on the group, and the bit to subdirectories */
		{ "mkdir path=/g mode=02775", 0 },
		{ "mkdir path=/g/sub mode=0700", 0 },
		{ "stat path=/g/sub", 0 },
		{ "open slot=0 path=/g/f flags=WRONLY|CREAT mode=0640", 0 },
		{ "fstat slot=0", 0 },
		/* O_APPEND: pwrite goes to the end too, the position follows writes */
		{ "open slot=1 path=/a flags=RDWR|CREAT|APPEND mode=0644", 0 },
		{ "write slot=1 len=100 seed=1", 100 },
		{ "pwrite slot=1 off=0 len=10 seed=2", 10 },
		{ "fstat slot=1", 0 },
		{ "write slot=1 len=0 seed=3", 0 },
		{ "read slot=1 len=100", 10 }, /* from 100: the appended pwrite */
		{ "pread slot=1 off=90 len=100", 20 },
		/* a file renamed over an open one: the old stays readable until closed */
		{ "open slot=2 path=/b flags=RDWR|CREAT mode=0644", 0 },
		{ "pwrite slot=2 off=5000 len=7 seed=4", 7 },
		{ "rename path=/a path2=/b", 0 },
		{ "pread slot=2 off=4999 len=100", 8 },
		{ "fstat slot=2", 0 },
		{ "close slot=2", 0 },
		{ "stat path=/b", 0 },
		/* exchange of a directory and a file across parents: parent link counts */
		{ "mkdir path=/p1 mode=0755", 0 },
		{ "mkdir path=/p1/d mode=0755", 0 },
		{ "mkdir path=/p2 mode=0755", 0 },
		{ "mknod path=/p2/fifo mode=010600", 0 },
		{ "rename path=/p1/d path2=/p2/fifo flags=EXCHANGE", 0 },
		{ "stat path=/p1", 0 },
		{ "stat path=/p2", 0 },
		{ "readdir path=/p2/fifo", 0 },
		{ "rename path=/p2 path2=/p2/fifo/x", -EINVAL },
		{ "rename path=/p2/fifo path2=/p2 flags=EXCHANGE", -EINVAL },
		{ "rename path=/p2/fifo path2=/p1/d", -ENOTDIR },
		{ "rename path=/p1/d path2=/p2/fifo", -EISDIR },
		{ "mkdir path=/p2/fifo/e mode=0755", 0 },
		{ "rename path=/p1 path2=/p2/fifo/e", 0 }, /* over an empty directory */
		{ "stat path=/p2/fifo", 0 },
		{ "rmdir path=/p1", -ENOENT },
		/* utimens: explicit times read back until something changes them */
		{ "utimens path=/b atime=1000.5 mtime=2000.25", 0 },
		{ "stat path=/b", 0 },
		{ "symlink path=/sl path2=b", 0 },
		{ "utimens path=/sl nofollow=1 atime=300.0 mtime=400.0", 0 },
		{ "stat path=/sl nofollow=1", 0 },
		{ "stat path=/b", 0 },
		{ "close slot=0", 0 },
		{ "close slot=1", 0 },
		{ "checkpoint", 0 },
	};
	struct fs_target *t;
	struct fsrun *r = host_runner(&t);
	run_steps(r, steps, NSTEPS(steps));
	/* a chain of symlinks: 40 are followed, the 41st is ELOOP */
	char line[128];
	run_steps(r, &(struct step){ "symlink path=/l0 path2=b", 0 }, 1);
	for (int i = 1; i <= 40; i++) {
		snprintf(line, sizeof line, "symlink path=/l%d path2=l%d", i, i - 1);
		run_steps(r, &(struct step){ line, 0 }, 1);
	}
	run_steps(r, &(struct step){ "stat path=/l39", 0 }, 1);
	run_steps(r, &(struct step){ "stat path=/l40", -ELOOP }, 1);
	run_steps(r, &(struct step){ "open slot=0 path=/l40 flags=RDONLY", -ELOOP }, 1);
	if (is_root()) {
		static const struct step own[] = {
			{ "chown path=/g uid=1000 gid=4242", 0 },
			{ "mkdir path=/g/sub2 mode=0700", 0 },
			{ "stat path=/g/sub2", 0 },
			{ "chmod path=/b mode=06755", 0 },
			{ "chown path=/b uid=-1 gid=-1", 0 }, /* drops setuid and setgid */
			{ "stat path=/b", 0 },
			{ "chown path=/sl uid=5 gid=6 nofollow=1", 0 },
			{ "stat path=/sl nofollow=1", 0 },
			{ "checkpoint", 0 },
		};
		run_steps(r, own, NSTEPS(own));
	} else {
		printf("fsmodel: not root: chown steps skipped\n");
	}
	fsrun_free(r);
	fst_destroy(t);
}

/* ---- the model alone ---- */

static void test_model_sparse(void **state)
{
	struct fsmodel *m = fsm_new(0755, 0, 0);
	struct fs_target *t = fsm_target(m);
	uint8_t buf[8192], pat[100];
	int h = t->ops->open(t, "/f", O_RDWR | O_CREAT, 0644);
	assert_true(h >= 0);
	fsop_fill(7, pat, sizeof pat);
	assert_int_equal(t->ops->pwrite(t, h, pat, sizeof pat, 1ull << 30), sizeof pat);
	assert_int_equal(fsm_bytes(m), FSM_CHUNK); /* a 1 GiB file holding one chunk */
	assert_int_equal(t->ops->pread(t, h, buf, 200, (1ull << 30) - 100), 200);
	for (int i = 0; i < 100; i++)
		assert_int_equal(buf[i], 0);
	assert_memory_equal(buf + 100, pat, sizeof pat);
	assert_int_equal(t->ops->ftruncate(t, h, (1ull << 30) + 10), 0);
	assert_int_equal(t->ops->pread(t, h, buf, 100, 1ull << 30), 10);
	assert_int_equal(t->ops->ftruncate(t, h, (1ull << 30) + 50), 0);
	assert_int_equal(t->ops->pread(t, h, buf, 100, 1ull << 30), 50);
	assert_memory_equal(buf, pat, 10);
	for (int i = 10; i < 50; i++)
		assert_int_equal(buf[i], 0); /* truncated bytes come back as zeroes */
	assert_int_equal(t->ops->ftruncate(t, h, 3), 0);
	assert_int_equal(fsm_bytes(m), 0);
	struct fst_stat st;
	assert_int_equal(t->ops->fstat(t, h, &st), 0);
	uint64_t ino = st.ino;
	assert_int_equal(t->ops->unlink(t, "/f"), 0);
	assert_true(fsm_ino_alive(m, ino)); /* open: still there */
	assert_int_equal(t->ops->close(t, h), 0);
	assert_false(fsm_ino_alive(m, ino));
	fst_destroy(t);
}

/* ---- scripts ---- */

static void test_script_roundtrip(void **state)
{
	struct fs_target *t;
	struct fsrun *r = host_runner(&t);
	struct fsgen_cfg gc;
	fsgen_cfg_default(&gc);
	gc.root = is_root();
	struct fsgen *g = fsgen_new(&gc, 42);
	for (int i = 0; i < 600; i++) {
		struct fsop op, back;
		char a[16384], b[16384], err[200];
		fsgen_next(g, r, &op);
		FILE *f = fmemopen(a, sizeof a, "w");
		fsop_format(&op, f);
		fclose(f);
		assert_int_equal(fsop_parse(a, &back, err, sizeof err), 0);
		f = fmemopen(b, sizeof b, "w");
		fsop_format(&back, f);
		fclose(f);
		assert_string_equal(a, b);
		if (fsrun_apply(r, &op))
			fail_msg("op %d: %s", i, fsrun_msg(r));
		fsop_free(&op);
		fsop_free(&back);
	}
	struct fsop bad;
	char err[200];
	assert_int_equal(fsop_parse("frobnicate path=/x", &bad, err, sizeof err), -EINVAL);
	assert_int_equal(fsop_parse("mkdir path=/x mode", &bad, err, sizeof err), -EINVAL);
	assert_int_equal(fsop_parse("# comment", &bad, err, sizeof err), 1);
	fsgen_free(g);
	fsrun_free(r);
	fst_destroy(t);
}

/* ---- random runs against the kernel ---- */

/* At the end of a run: a copy of the target's tree (fst_copy_tree into a
 * second host directory) must match the model too. */
static int compare_copy(void *ctx, struct fsrun *r, struct fs_target *t)
{
	struct fs_target *copy;
	assert_int_equal(fst_host_new_tmp(&copy), 0);
	int rc = fst_copy_tree(t, copy, FST_COPY_TIMES);
	if (rc)
		fail_msg("copy: %s", fst_errname(rc));
	rc = fsrun_compare_with(r, copy);
	fst_destroy(copy);
	(*(int *)ctx)++;
	return rc;
}

static void random_run(uint64_t seed, unsigned nops)
{
	int ended = 0;
	struct fsdrive_cfg c;
	struct fsdrive_result res;
	note_root_skips();
	fsdrive_cfg_default(&c);
	fsdrive_cfg_env(&c);
	c.seed = seed;
	if (!getenv("NOSTALL_FSOPS"))
		c.nops = nops;
	c.out = stdout;
	c.at_end = compare_copy;
	c.at_end_ctx = &ended;
	assert_int_equal(fsdrive_random(&fst_host_tmp_factory, &c, &res), 0);
	if (res.failed)
		fail_msg("seed %llu: mismatch at operation %zu (script %s)", (unsigned long long)seed,
			 res.fail_index, res.script);
	assert_int_equal(ended, 1);
}

/* NOSTALL_FSREPLAY=FILE replays a saved script instead. */
static void test_random_fixed_seed(void **state)
{
	const char *replay = getenv("NOSTALL_FSREPLAY");
	if (replay && *replay) {
		struct fsrun_cfg rc = { .owner = true, .holes = true };
		assert_int_equal(fsdrive_replay_file(&fst_host_tmp_factory, &rc, replay, stdout), 0);
		return;
	}
	const char *s = getenv("NOSTALL_SEED");
	random_run(s && *s ? fsdrive_seed() : 1, 5000);
}

static void test_random_seed(void **state)
{
	random_run(fsdrive_seed(), 5000);
}

/* ---- the checks can fail ---- */

static const char *const setup_script[] = {
	"mkdir path=/d mode=0755",
	"open slot=0 path=/d/f flags=RDWR|CREAT mode=0644",
	"pwrite slot=0 off=0 len=5000 seed=7",
	"pwrite slot=0 off=1048576 len=100 seed=8",
	"close slot=0",
	"link path=/d/f path2=/g",
	"setxattr path=/d/f name=user.a len=10 seed=3",
	"symlink path=/s path2=d/f",
	"mknod path=/p mode=010600",
	"checkpoint",
};

static struct fsrun *planted_setup(struct fs_target **t, char *dir, size_t dirlen)
{
	struct fsrun *r = host_runner(t);
	for (size_t i = 0; i < NSTEPS(setup_script); i++) {
		struct fsop op;
		char err[200];
		assert_int_equal(fsop_parse(setup_script[i], &op, err, sizeof err), 0);
		if (fsrun_apply(r, &op))
			fail_msg("%s", fsrun_msg(r));
		fsop_free(&op);
	}
	snprintf(dir, dirlen, "%s", fst_host_dir(*t));
	return r;
}

static int sh(const char *fmt, const char *dir)
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd, fmt, dir, dir, dir);
	return system(cmd);
}

/* "NAME VALUE" set on DIR/d/f directly */
static int plant_xattr(const char *dir, const char *spec)
{
	char path[600], name[64];
	snprintf(path, sizeof path, "%s/d/f", dir);
	snprintf(name, sizeof name, "%.*s", (int)strcspn(spec, " "), spec);
	const char *v = spec + strcspn(spec, " ") + 1;
	return setxattr(path, name, v, strlen(v), 0);
}

static void test_compare_catches_plants(void **state)
{
	static const struct {
		const char *cmd; /* %s = the host directory */
		const char *expect;
	} plants[] = {
		{ "printf 'XYZ' | dd of=%s/d/f bs=1 seek=3999 conv=notrunc status=none", "content differs at byte 3999" },
		{ "chmod 0600 %s/d/f", "mode 0644 vs 0600" },
		{ "xattr user.b 1", "xattr user.b only in host" },
		{ "xattr user.a 0", "xattr user.a value differs" },
		{ "touch %s/d/extra", "entry 'extra' only in host" },
		{ "rm %s/g && cp %s/d/f %s/g", "nlink 2 vs 1" },
		{ "ln -sfn d/g %s/s", "symlink target" },
		{ "rm %s/p && touch %s/p", "type fifo vs file" },
		{ "truncate -s 2000000 %s/d/f", "size" },
		/* same bytes, but zeroes written into the hole: allocated where the model has none */
		{ "dd if=/dev/zero of=%s/d/f bs=4096 seek=100 count=1 conv=notrunc status=none", "where model has a hole" },
	};
	for (size_t i = 0; i < NSTEPS(plants); i++) {
		struct fs_target *t;
		char dir[512];
		struct fsrun *r = planted_setup(&t, dir, sizeof dir);
		assert_int_equal(fsrun_checkpoint(r), 0);
		if (!strncmp(plants[i].cmd, "xattr ", 6)) /* no setfattr(1) needed */
			assert_int_equal(plant_xattr(dir, plants[i].cmd + 6), 0);
		else
			assert_int_equal(sh(plants[i].cmd, dir), 0);
		if (fsrun_checkpoint(r) != 1)
			fail_msg("plant '%s' not caught", plants[i].cmd);
		if (!strstr(fsrun_msg(r), plants[i].expect))
			fail_msg("plant '%s': message lacks '%s':\n%s", plants[i].cmd, plants[i].expect,
				 fsrun_msg(r));
		fsrun_free(r);
		fst_destroy(t);
	}
}

/* Per-operation checks: a result the model does not expect is a mismatch. */
static void test_runner_catches_wrong_results(void **state)
{
	struct fs_target *t;
	char dir[512];
	struct fsrun *r = planted_setup(&t, dir, sizeof dir);
	struct fsop op;
	char err[200];
	assert_int_equal(sh("printf 'Y' | dd of=%s/d/f bs=1 seek=10 conv=notrunc status=none", dir), 0);
	assert_int_equal(fsop_parse("open slot=3 path=/d/f flags=RDONLY", &op, err, sizeof err), 0);
	assert_int_equal(fsrun_apply(r, &op), 0);
	fsop_free(&op);
	assert_int_equal(fsop_parse("pread slot=3 off=0 len=100", &op, err, sizeof err), 0);
	assert_int_equal(fsrun_apply(r, &op), 1);
	assert_non_null(strstr(fsrun_msg(r), "bytes differ at 10"));
	fsop_free(&op);
	assert_int_equal(sh("mkdir %s/q", dir), 0);
	assert_int_equal(fsop_parse("mkdir path=/q mode=0700", &op, err, sizeof err), 0);
	assert_int_equal(fsrun_apply(r, &op), 1);
	assert_non_null(strstr(fsrun_msg(r), "model -> 0 (OK), target -> -17 (EEXIST)"));
	fsop_free(&op);
	assert_int_equal(sh("chmod 0604 %s/g", dir), 0);
	assert_int_equal(fsop_parse("stat path=/d/f", &op, err, sizeof err), 0);
	assert_int_equal(fsrun_apply(r, &op), 1);
	assert_non_null(strstr(fsrun_msg(r), "mode: model 0100644, target 0100604"));
	fsop_free(&op);
	fsrun_free(r);
	fst_destroy(t);
}

/* A target that answers ENOTEMPTY with EEXIST: the random run must find
 * it, and the minimizer must shrink the script to a few operations. */
static int64_t wrong_rmdir(void *ctx, const char *op, const char *path, int64_t rc)
{
	return !strcmp(op, "rmdir") && rc == -ENOTEMPTY ? -EEXIST : rc;
}

static int faulty_create(void *ctx, struct fs_target **out)
{
	struct fs_target *in;
	int rc = fst_host_new_tmp(&in);
	return rc ? rc : fst_filter_new(in, wrong_rmdir, NULL, out);
}

static void test_minimizer(void **state)
{
	const struct fst_factory f = { .create = faulty_create };
	struct fsdrive_cfg c;
	struct fsdrive_result res;
	fsdrive_cfg_default(&c);
	c.seed = 7;
	c.nops = 3000;
	c.out = stdout;
	c.minimize_budget = 300;
	assert_int_equal(fsdrive_random(&f, &c, &res), 0);
	assert_int_equal(res.failed, 1);
	assert_non_null(strstr(res.msg, "ENOTEMPTY"));
	assert_true(res.nops_min >= 2);
	assert_true(res.nops_min <= 6); /* mkdir, a child, rmdir: a few at most */
	FILE *fp = fopen(res.script, "r");
	assert_non_null(fp);
	struct fsop *ops;
	size_t n, at;
	char err[200], msg[2048];
	assert_int_equal(fsop_script_read(fp, &ops, &n, err, sizeof err), 0);
	fclose(fp);
	assert_int_equal(n, res.nops_min);
	struct fsrun_cfg rc = { .owner = true };
	assert_int_equal(fsdrive_replay(&f, &rc, ops, n, &at, msg, sizeof msg), 1);
	assert_int_equal(fsdrive_replay(&fst_host_tmp_factory, &rc, ops, n, &at, msg, sizeof msg), 0);
	for (size_t i = 0; i < n; i++)
		fsop_free(&ops[i]);
	free(ops);
	unlink(res.script);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_namespace_errnos),
		cmocka_unit_test(test_xattr_and_io_errnos),
		cmocka_unit_test(test_more_semantics),
		cmocka_unit_test(test_model_sparse),
		cmocka_unit_test(test_script_roundtrip),
		cmocka_unit_test(test_compare_catches_plants),
		cmocka_unit_test(test_runner_catches_wrong_results),
		cmocka_unit_test(test_minimizer),
		cmocka_unit_test(test_random_fixed_seed),
		cmocka_unit_test(test_random_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
