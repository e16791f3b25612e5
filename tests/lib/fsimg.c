#include "fsimg.h"
#include "oracles.h"
#include "testfs.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "extfs/core/ext3_int.h"
#include "extfs/core/write.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int status_of(int rc)
{
	return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int fsimg_run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return status_of(system(cmd));
}

int fsimg_out(char *out, size_t n, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	if (n)
		out[0] = '\0';
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t got = 0;
	char sink[4096];
	for (;;) { /* read it all: a writer must never block on a full pipe */
		size_t room = got + 1 < n ? n - 1 - got : 0;
		size_t r = fread(room ? out + got : sink, 1, room ? room : sizeof sink, p);
		if (r == 0)
			break;
		if (room)
			got += r;
	}
	if (n)
		out[got] = '\0';
	return status_of(pclose(p));
}

int fsimg_tmpdir(char *out, size_t n, const char *tag)
{
	snprintf(out, n, "/tmp/nostall_%s_XXXXXX", tag);
	if (!mkdtemp(out)) {
		int e = errno;
		fprintf(stderr, "mkdtemp %s: %s\n", out, strerror(e));
		return -e;
	}
	return 0;
}

int fsimg_main_begin(const char *test, const char *tag, const char *oracles, uint64_t *seed,
		     char *dir, size_t n)
{
	if (seed) {
		const char *s = getenv("NOSTALL_SEED");
		*seed = s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		printf("%s: seed %llu (rerun: NOSTALL_SEED=%llu)\n", test, (unsigned long long)*seed,
		       (unsigned long long)*seed);
	}
	if (fsimg_tmpdir(dir, n, tag) < 0)
		return 1;
	int orc = oracles_check(test, oracles);
	if (orc >= 0) {
		rmdir(dir);
		dir[0] = '\0';
	}
	return orc;
}

void fsimg_tmpdir_remove(const char *dir)
{
	if (!dir[0])
		return;
	if (getenv("NOSTALL_TEST_KEEP") || getenv("NOSTALL_KEEP")) {
		printf("kept %s (NOSTALL_TEST_KEEP)\n", dir);
		return;
	}
	(void)fsimg_run("rm -rf '%s'", dir);
}

int fsimg_mkfs(const char *path, unsigned bs, unsigned kib, const char *extra)
{
	/* the type and further options from the environment (testfs.h):
	 * unset, this is "mke2fs -q -t ext3 -F -b BS EXTRA" as always */
	const char *more = testfs_mkfs_opts();
	return fsimg_run("mke2fs -q -t %s -F -b %u %s%s%s '%s' %uk >/dev/null 2>&1", testfs_type(), bs,
			 extra ? extra : "", *more ? " " : "", more, path, kib);
}

int fsimg_fsck(const char *path, char *msg, size_t n)
{
	char sink[1];
	return fsimg_out(msg ? msg : sink, msg ? n : sizeof sink, "e2fsck -fn '%s' 2>&1", path);
}

/* Open the device spec, mount with flags, hold the root; on failure nothing is
 * left open and m is zeroed. */
static int mount_flags(const char *spec, const struct ext3_mount_opts *o, unsigned flags,
		       struct fsimg_mnt *m)
{
	memset(m, 0, sizeof *m);
	int rc = dev_open(spec, &m->dev);
	if (rc)
		return rc;
	rc = ext3_fs_mount(m->dev, o, flags, &m->fs);
	if (!rc)
		rc = ext3_iget(m->fs, EXT3_ROOT_INO, &m->root);
	if (rc) {
		if (m->fs)
			(void)ext3_fs_unmount(m->fs);
		dev_close(m->dev);
		memset(m, 0, sizeof *m);
	}
	return rc;
}

int fsimg_mount(const char *path, const struct ext3_mount_opts *o, struct fsimg_mnt *m)
{
	char spec[600];
	snprintf(spec, sizeof spec, "file:%s", path);
	return mount_flags(spec, o, EXT3_MOUNT_JOURNAL, m);
}

int fsimg_mount_spec(const char *spec, const char *opts, unsigned flags, struct fsimg_mnt *m)
{
	char ob[512];
	opts = testfs_mount_opts(opts, ob, sizeof ob); /* no data= without a journal */
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	int rc = opts ? ext3_mount_opts_parse(&o, opts) : 0;
	if (rc)
		memset(m, 0, sizeof *m);
	else
		rc = mount_flags(spec, &o, flags, m);
	ext3_mount_opts_release(&o);
	return rc;
}

int fsimg_mount_opts(const char *path, const char *opts, unsigned flags, struct fsimg_mnt *m)
{
	char spec[600];
	snprintf(spec, sizeof spec, "file:%s", path);
	return fsimg_mount_spec(spec, opts, flags, m);
}

int fsimg_umount(struct fsimg_mnt *m)
{
	ext3_iput(m->root);
	int rc = ext3_fs_unmount(m->fs);
	dev_close(m->dev);
	memset(m, 0, sizeof *m);
	return rc;
}

int fsimg_fsck_repair(const char *path, char *msg, size_t n)
{
	char sink[1];
	int rc = fsimg_out(msg ? msg : sink, msg ? n : sizeof sink, "e2fsck -fy '%s' 2>&1", path);
	return rc == 1 ? 0 : rc;
}

/* Run cmd; for each output line containing key: count it, and take the
 * number after it from the first such line into *num (if num). */
static int scan(const char *cmd, const char *key, long long *num)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof line, p)) {
		char *k = strstr(line, key);
		if (!k)
			continue;
		if (num && n == 0)
			*num = strtoll(k + strlen(key), NULL, 0);
		n++;
	}
	pclose(p);
	return n;
}

int fsimg_count(const char *needle, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return scan(cmd, needle, NULL);
}

long long fsimg_num(const char *key, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	long long v = -1;
	return scan(cmd, key, &v) > 0 ? v : -1;
}

int fsimg_debugfs_w(const char *path, const char *req)
{
	return fsimg_run("debugfs -w -R '%s' '%s' >/dev/null 2>&1", req, path);
}

int fsimg_fx_mkfs(struct fsimg_fx *x, const char *dir, const char *name, unsigned bs, unsigned kib,
		  const char *extra)
{
	memset(x, 0, sizeof *x);
	snprintf(x->img, sizeof x->img, "%s/%s.img", dir, name);
	unlink(x->img);
	return fsimg_mkfs(x->img, bs, kib, extra);
}

long long fsimg_dumpe2fs_num(const char *path, const char *key)
{
	return fsimg_num(key, "dumpe2fs -h '%s' 2>/dev/null", path);
}

uint64_t fsimg_gd_sum(const struct ext3_fs *fs, size_t off)
{
	uint64_t s = 0;
	for (uint32_t g = 0; g < fs->g.groups; g++) {
		uint16_t v;
		memcpy(&v, (const char *)&fs->gd[g] + off, sizeof v);
		s += v;
	}
	return s;
}

/* Stop h; the first error of the step or the stop. */
static int hstop(struct jbd_handle *h, int rc)
{
	int src = ext3_journal_stop(h);
	return rc ? rc : src;
}

int fsimg_new_inode(struct ext3_fs *fs, struct ext3_inode *dir, uint16_t mode,
		    struct ext3_inode **out)
{
	struct jbd_handle *h;
	ext3_inode_wrlock(dir); /* inode locks before the handle (write.h) */
	int rc = ext3_journal_start(fs, ext3_credits_dirop(fs), &h);
	if (rc) {
		ext3_inode_unlock(dir);
		return rc;
	}
	rc = ext3_new_inode(h, dir, mode, 0, 0, out);
	ext3_inode_unlock(dir);
	if (!rc)
		ext3_inode_unlock((*out));
	return hstop(h, rc);
}

int fsimg_free_inode(struct ext3_fs *fs, struct ext3_inode *in)
{
	struct jbd_handle *h;
	ext3_inode_wrlock(in); /* inode locks before the handle (write.h) */
	int rc = ext3_journal_start(fs, ext3_credits_dirop(fs), &h);
	if (!rc) {
		rc = ext3_free_inode(h, in);
		rc = hstop(h, rc);
	}
	ext3_inode_unlock(in);
	ext3_iput(in);
	return rc;
}

int fsimg_new_blocks(struct ext3_fs *fs, struct ext3_inode *in, uint64_t goal, uint32_t n,
		     uint64_t *first, uint32_t *count)
{
	struct jbd_handle *h;
	ext3_inode_wrlock(in); /* inode locks before the handle (write.h) */
	int rc = ext3_journal_start(fs, ext3_credits_data(fs, n), &h);
	if (!rc) {
		*count = n;
		rc = ext3_new_blocks(h, in, goal, count, first);
		rc = hstop(h, rc);
	}
	ext3_inode_unlock(in);
	return rc;
}

int fsimg_free_blocks(struct ext3_fs *fs, struct ext3_inode *in, uint64_t first, uint32_t n)
{
	struct jbd_handle *h;
	ext3_inode_wrlock(in); /* inode locks before the handle (write.h) */
	int rc = ext3_journal_start(fs, ext3_credits_data(fs, n), &h);
	if (!rc) {
		rc = ext3_free_blocks(h, in, first, n, false);
		rc = hstop(h, rc);
	}
	ext3_inode_unlock(in);
	return rc;
}
