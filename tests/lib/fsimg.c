#include "fsimg.h"

#include "dev/dev.h"
#include "ext3/ext3.h"
#include "ext3/ext3_format.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

void fsimg_tmpdir_remove(const char *dir)
{
	if (!dir[0])
		return;
	if (getenv("NOSTALL_TEST_KEEP")) {
		printf("kept %s (NOSTALL_TEST_KEEP)\n", dir);
		return;
	}
	(void)fsimg_run("rm -rf '%s'", dir);
}

int fsimg_mkfs(const char *path, unsigned bs, unsigned kib, const char *extra)
{
	return fsimg_run("mke2fs -q -t ext3 -F -b %u %s '%s' %uk >/dev/null 2>&1", bs,
			 extra ? extra : "", path, kib);
}

int fsimg_fsck(const char *path, char *msg, size_t n)
{
	char sink[1];
	return fsimg_out(msg ? msg : sink, msg ? n : sizeof sink, "e2fsck -fn '%s' 2>&1", path);
}

int fsimg_mount(const char *path, const struct ext3_mount_opts *o, struct fsimg_mnt *m)
{
	memset(m, 0, sizeof *m);
	char spec[600];
	snprintf(spec, sizeof spec, "file:%s", path);
	int rc = dev_open(spec, &m->dev);
	if (rc)
		return rc;
	rc = ext3_fs_mount(m->dev, o, EXT3_MOUNT_JOURNAL, &m->fs);
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

int fsimg_umount(struct fsimg_mnt *m)
{
	ext3_iput(m->root);
	int rc = ext3_fs_unmount(m->fs);
	dev_close(m->dev);
	memset(m, 0, sizeof *m);
	return rc;
}
