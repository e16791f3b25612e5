/* metadata_csum under concurrent changes of the same blocks (issue 39 item
 * 2; docs/ext4-csum.md, "Concurrent changes of one block"): threads create,
 * write xattrs on, rename and remove files and directories, each in its own
 * directory, so that their inodes share inode-table blocks, their groups'
 * descriptors share a descriptor block and their allocations share bitmaps,
 * while commits capture those blocks. Each structure's checksum is computed
 * under its own lock before the buffer is dirtied; e2fsck -fn, which checks
 * every checksum, must find the image clean. mkfs.ext4 images with
 * metadata_csum (1 KiB and 4 KiB blocks) and with ^metadata_csum,uninit_bg
 * (crc16 descriptors), few inodes per group so that uninitialised groups
 * come into use during the run. Seeded (printed).
 *
 * nostall-test: concurrent (threads change inodes of one inode-table block
 * and descriptors of one descriptor block)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/ext3.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "util/err.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 4
#define OPS 1500

static char tmpdir[256];
static const struct ext3_cred cred = {.uid = 0, .gid = 0};

struct worker {
	struct ext3_fs *fs;
	struct ext3_inode *dir;
	unsigned seed;
	int bad;
	unsigned done;
	char what[256];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned s = w->seed;
	char n1[32], n2[32];
	for (int i = 0; i < OPS && !w->bad; i++) {
		s = s * 1103515245u + 12345u;
		unsigned k = (s >> 8) % 40, op = (s >> 20) % 6;
		snprintf(n1, sizeof n1, "e%02u", k);
		snprintf(n2, sizeof n2, "e%02u", (k + 7) % 40);
		struct ext3_inode *in = NULL;
		int rc;
		switch (op) {
		case 0:
			rc = ext3_create(w->dir, n1, strlen(n1), EXT3_S_IFREG | 0644, 0, &cred, &in);
			break;
		case 1:
			rc = ext3_mkdir(w->dir, n1, strlen(n1), 0755, &cred, &in);
			break;
		case 2:
			rc = ext3_unlink(w->dir, n1, strlen(n1));
			if (rc == -EISDIR)
				rc = ext3_rmdir(w->dir, n1, strlen(n1));
			break;
		case 3:
		case 5: {
			uint32_t ino;
			rc = ext3_dir_lookup(w->fs, w->dir, n1, strlen(n1), &ino, NULL);
			if (!rc)
				rc = ext3_iget(w->fs, ino, &in);
			if (!rc && op == 3) {
				char v[300];
				memset(v, 'a' + (int)k % 26, sizeof v);
				/* a small one in the inode, a big one in a block */
				rc = ext3_xattr_change(in, k % 2 ? "user.small" : "user.big", v,
						       k % 2 ? 8 : sizeof v, 0);
			} else if (!rc) {
				rc = ext3_link(in, w->dir, n2, strlen(n2));
			}
			break;
		}
		default:
			rc = ext3_rename(w->dir, n1, strlen(n1), w->dir, n2, strlen(n2), 0);
			break;
		}
		ext3_iput(in);
		w->done += rc == 0;
		/* what Linux answers in a directory only this thread changes */
		if (rc && rc != -ENOENT && rc != -EEXIST && rc != -ENOTEMPTY && rc != -EISDIR &&
		    rc != -ENOTDIR && rc != -EPERM) {
			w->bad = rc;
			snprintf(w->what, sizeof w->what, "op %u %s %s: %s", op, n1, n2, err_last(rc));
		}
	}
	return NULL;
}

static void round_on(const char *name, const char *opts, unsigned seed)
{
	char img[512];
	snprintf(img, sizeof img, "%s/%s.img", tmpdir, name);
	if (fsimg_run("mkfs.ext4 -q -F %s '%s' 32M >/dev/null 2>&1", opts, img))
		fail_msg("mkfs.ext4 %s", opts);
	struct fsimg_mnt m;
	fsimg_assert_mount(img, NULL, EXT3_MOUNT_JOURNAL, &m);
	struct worker w[THREADS];
	pthread_t t[THREADS];
	for (int k = 0; k < THREADS; k++) {
		char n[16];
		snprintf(n, sizeof n, "T%d", k);
		w[k] = (struct worker){.fs = m.fs, .seed = seed + (unsigned)k * 7919u};
		assert_int_equal(ext3_mkdir(m.root, n, strlen(n), 0755, &cred, &w[k].dir), 0);
	}
	for (int k = 0; k < THREADS; k++)
		assert_int_equal(pthread_create(&t[k], NULL, work, &w[k]), 0);
	for (int k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	unsigned done = 0;
	for (int k = 0; k < THREADS; k++) {
		ext3_iput(w[k].dir);
		if (w[k].bad)
			fail_msg("[%s] thread %d: %s", opts, k, w[k].what);
		done += w[k].done;
	}
	print_message("[%s] %u of %u operations succeeded\n", opts, done, THREADS * OPS);
	assert_true(done > THREADS * OPS / 4);
	assert_int_equal(fsimg_umount(&m), 0);
	char msg[8192];
	if (fsimg_fsck(img, msg, sizeof msg))
		fail_msg("[%s] e2fsck -fn:\n%s", opts, msg);
}

static void test_concurrent_csum(void **state)
{
	(void)state;
	unsigned seed = (unsigned)time(NULL);
	if (getenv("NOSTALL_SEED"))
		seed = (unsigned)strtoul(getenv("NOSTALL_SEED"), NULL, 0);
	print_message("seed %u (NOSTALL_SEED)\n", seed);
	round_on("c1k", "-b 1024 -N 256 -O ^extent,^64bit", seed);
	round_on("c4k", "-b 4096 -g 2048 -N 256 -O ^extent,^64bit", seed);
	round_on("g1k", "-b 1024 -N 256 -O ^extent,^64bit,^metadata_csum,uninit_bg", seed);
}

int main(void)
{
	int orc = oracles_check("test_ext4_csum_conc", "mkfs.ext4 e2fsck");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "e4csumc"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_csum),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
