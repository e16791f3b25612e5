/* nostall umount MOUNTPOINT and nostall sync MOUNTPOINT (docs/fuse.md).
 *
 * umount: `fusermount3 -u` and umount(8) return as soon as the kernel
 * mount is gone, while the daemon is still writing back and emptying the
 * journal. This command unmounts, then waits for the daemon's lock on the
 * image (flock, taken by the library's mount and let go at the end of its
 * unmount: src/extfs/super/mount.c, dev_lock) and reads the superblock: it returns 0 only when
 * the daemon is done and the image is clean (valid, no needs_recovery), so
 * a script can run e2fsck or copy the image right after it.
 *
 * sync: sync(2) and syncfs(2) do not reach a FUSE daemon; NOSTALL_IOC_SYNC
 * on the mount does what they would (nostall_sync: every file's data and a
 * journal commit). */
#include "fuse_int.h"

#include "../common/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] && p[3]) {
			*o++ = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
}

int nfuse_mountinfo_find(const char *mnt, char **fstype, char **source, char **devnum)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int rc = -ENOENT;
	/* id parent maj:min root mountpoint opts [optional...] - fstype source superopts;
	 * the last match wins (mounts stacked on one directory) */
	while (getline(&line, &cap, f) > 0) {
		char *save, *tok[5];
		int i = 0;
		for (char *t = strtok_r(line, " \n", &save); t && i < 5; t = strtok_r(NULL, " \n", &save))
			tok[i++] = t;
		if (i < 5)
			continue;
		unescape(tok[4]);
		if (strcmp(tok[4], mnt))
			continue;
		char *t;
		while ((t = strtok_r(NULL, " \n", &save)) && strcmp(t, "-"))
			;
		char *type = t ? strtok_r(NULL, " \n", &save) : NULL;
		char *src = type ? strtok_r(NULL, " \n", &save) : NULL;
		if (!src)
			continue;
		unescape(src);
		rc = 0;
		if (fstype) {
			free(*fstype);
			*fstype = strdup(type);
		}
		if (source) {
			free(*source);
			*source = strdup(src);
		}
		if (devnum) {
			free(*devnum);
			*devnum = strdup(tok[2]);
		}
	}
	free(line);
	fclose(f);
	return rc;
}

/* The unmount itself: umount2 as root, fusermount3 -u otherwise; EBUSY is
 * retried for up to 3 s, because it can be transient: a process that has
 * just closed its last file on the mount may still be exiting, and the
 * kernel sends RELEASE in the background after close(2). A mount that
 * stays busy (a shell's cwd) still fails, 3 s later. */
static int unmount_kernel_once(const char *mnt)
{
	if (geteuid() == 0) {
		if (umount2(mnt, UMOUNT_NOFOLLOW) == 0)
			return 0;
		return -errno;
	}
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-q", mnt, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EBUSY;
}

static int unmount_kernel(const char *mnt)
{
	int rc = unmount_kernel_once(mnt);
	for (int i = 0; rc == -EBUSY && i < 60; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		rc = unmount_kernel_once(mnt);
	}
	return rc;
}

/* The superblock says clean: s_state has EXT2_VALID_FS and incompat has no
 * RECOVER (the journal is empty). */
static int image_clean(const char *img)
{
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unsigned char sb[1024];
	ssize_t n = pread(fd, sb, sizeof sb, 1024);
	close(fd);
	if (n != (ssize_t)sizeof sb || (sb[56] | sb[57] << 8) != 0xEF53)
		return -EUCLEAN;
	unsigned state = (unsigned)(sb[58] | sb[59] << 8);
	unsigned incompat = (unsigned)sb[96] | (unsigned)sb[97] << 8;
	return (state & 1) && !(incompat & 0x4) ? 0 : -EUCLEAN;
}

int cmd_umount(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fputs("usage: nostall umount MOUNTPOINT\n"
		      "  unmounts a nostall FUSE mount and waits until the image is clean\n",
		      argc == 2 && !strcmp(argv[1], "-h") ? stdout : stderr);
		return argc == 2 && !strcmp(argv[1], "-h") ? 0 : 2;
	}
	char *mnt = realpath(argv[1], NULL);
	if (!mnt) {
		fprintf(stderr, "nostall umount: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	char *type = NULL, *src = NULL;
	int st = 1;
	if (nfuse_mountinfo_find(mnt, &type, &src, NULL) || strcmp(type, "fuse.nostall")) {
		fprintf(stderr, "nostall umount: %s: not a nostall mount\n", mnt);
		goto out;
	}
	/* fsname is the image's absolute path when the spec has a file */
	int lock_fd = src[0] == '/' ? open(src, O_RDONLY | O_CLOEXEC) : -1;
	int rc = unmount_kernel(mnt);
	if (rc) {
		fprintf(stderr, "nostall umount: %s: %s\n", mnt, strerror(-rc));
		if (lock_fd >= 0)
			close(lock_fd);
		goto out;
	}
	if (lock_fd < 0) {
		st = 0; /* no image file (mem:): nothing to wait for */
		goto out;
	}
	while (flock(lock_fd, LOCK_SH) < 0 && errno == EINTR)
		;
	close(lock_fd);
	rc = image_clean(src);
	if (rc)
		fprintf(stderr, "nostall umount: %s: the image was not left clean (the daemon's "
				"unmount failed; the next mount replays the journal)\n", src);
	st = rc ? 1 : 0;
out:
	free(type);
	free(src);
	free(mnt);
	return st;
}

int cmd_sync(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fputs("usage: nostall sync MOUNTPOINT\n"
		      "  commits the journal of a nostall FUSE mount and writes back all file data\n",
		      argc == 2 && !strcmp(argv[1], "-h") ? stdout : stderr);
		return argc == 2 && !strcmp(argv[1], "-h") ? 0 : 2;
	}
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "nostall sync: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	int rc = ioctl(fd, NOSTALL_IOC_SYNC);
	int e = errno;
	close(fd);
	if (rc < 0) {
		fprintf(stderr, "nostall sync: %s: %s\n", argv[1],
			e == ENOTTY ? "not a nostall mount" : strerror(e));
		return 1;
	}
	return 0;
}

int nfuse_info_mountpoint(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "nostall info: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	char mode[16] = { 0 };
	int rc = ioctl(fd, NOSTALL_IOC_DATA_MODE, mode);
	int e = errno;
	close(fd);
	if (rc < 0) {
		fprintf(stderr, "nostall info: %s: %s\n", dir, e == ENOTTY ? "not a nostall mount" : strerror(e));
		return 1;
	}
	mode[sizeof mode - 1] = 0;
	printf("%-26s %s\n", "Mount point:", dir);
	printf("%-26s %s\n", "Data mode:", mode);
	return 0;
}
