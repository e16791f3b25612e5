/* dev_lock for file: devices (see dev.h): flock(2) between nostall's own
 * users of an image, and a check that the kernel has not mounted it.
 *
 * Why both: two writers of one image each keep their own idea of its
 * metadata, and whichever writes last destroys the other's work (seen: a
 * `nostall put` into an image a nostall daemon had mounted succeeded, and
 * the daemon's unmount then wrote its own bitmaps and directory over it;
 * the same against a kernel loop mount, where the read side also replayed
 * the kernel's live journal). flock covers nostall against nostall (and any
 * other program that flocks, as util-linux's tools can), but the kernel
 * takes no flock on a loop device's backing file, so an exclusive lock also
 * looks for a loop device backed by the same file that is mounted in this
 * mount namespace, as e2fsprogs' ext2fs_check_if_mounted does; a block
 * device is claimed with O_EXCL, which the kernel refuses (EBUSY) while the
 * device is mounted or claimed by another exclusive opener.
 */
#include "dev/dev_impl.h"

#include "util/err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read a small sysfs/procfs file into buf (NUL-terminated, trailing
 * newline removed). 0 or -1. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *fp = fopen(path, "re");
	if (!fp)
		return -1;
	bool ok = fgets(buf, (int)len, fp) != NULL;
	fclose(fp);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The mount point of the filesystem whose source is device maj:min in this
 * mount namespace, into mnt; true if there is one. */
static bool mounted_at(const char *majmin, char *mnt, size_t len)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	if (!fp)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof line, fp)) {
		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ..." */
		char dev[32], point[2048];
		if (sscanf(line, "%*s %*s %31s %*s %2047s", dev, point) == 2 && !strcmp(dev, majmin)) {
			snprintf(mnt, len, "%s", point);
			found = true;
		}
	}
	fclose(fp);
	return found;
}

/* A mounted loop device whose backing file is the file st describes: its
 * name into loop and its mount point into mnt; true if there is one. */
static bool loop_mounted(const struct stat *st, char *loop, size_t llen, char *mnt, size_t mlen)
{
	DIR *dir = opendir("/sys/block");
	if (!dir)
		return false;
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(dir))) {
		if (strncmp(de->d_name, "loop", 4))
			continue;
		char p[512], back[4096], majmin[32];
		snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", de->d_name);
		if (read_line(p, back, sizeof back))
			continue; /* not attached */
		struct stat bst;
		if (stat(back, &bst) || bst.st_dev != st->st_dev || bst.st_ino != st->st_ino)
			continue; /* another file (or deleted: " (deleted)" does not stat) */
		snprintf(p, sizeof p, "/sys/block/%s/dev", de->d_name);
		if (read_line(p, majmin, sizeof majmin) || !mounted_at(majmin, mnt, mlen))
			continue; /* attached, not mounted: e2fsck lets it be */
		snprintf(loop, llen, "/dev/%s", de->d_name);
		found = true;
	}
	closedir(dir);
	return found;
}

static void claim_drop(int *claim_fd)
{
	if (*claim_fd >= 0) {
		close(*claim_fd);
		*claim_fd = -1;
	}
}

int dev_file_lock(int fd, const char *path, bool is_bdev, enum dev_lock_mode mode, int *claim_fd)
{
	if (mode == DEV_LOCK_NONE) {
		claim_drop(claim_fd);
		(void)flock(fd, LOCK_UN);
		return 0;
	}
	int op = (mode == DEV_LOCK_EXCL ? LOCK_EX : LOCK_SH) | LOCK_NB;
	int rc;
	while ((rc = flock(fd, op)) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		if (errno == EWOULDBLOCK)
			return err_set(-EBUSY, "%s: in use by another nostall mount (or a program holding its lock)",
				       path);
		return err_set(-errno, "%s: flock: %s", path, strerror(errno));
	}
	if (mode != DEV_LOCK_EXCL) {
		claim_drop(claim_fd);
		return 0;
	}
	if (is_bdev) {
		if (*claim_fd >= 0)
			return 0;
		int c = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (c < 0) {
			int e = errno;
			(void)flock(fd, LOCK_UN);
			if (e == EBUSY)
				return err_set(-EBUSY, "%s: in use by the kernel (mounted, or held by another exclusive opener)",
					       path);
			return err_set(-e, "%s: cannot claim the device: %s", path, strerror(e));
		}
		*claim_fd = c;
		return 0;
	}
	struct stat st;
	char loop[300], mnt[2048];
	if (fstat(fd, &st) == 0 && loop_mounted(&st, loop, sizeof loop, mnt, sizeof mnt)) {
		(void)flock(fd, LOCK_UN);
		return err_set(-EBUSY, "%s: mounted by the kernel through %s on %s", path, loop, mnt);
	}
	return 0;
}
