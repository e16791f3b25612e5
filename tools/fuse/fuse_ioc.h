/* `nostall sync MOUNTPOINT`: an ioctl without data on any file or directory
 * of a nostall FUSE mount ('n' for nostall; restricted ioctls carry no
 * pointer). The daemon answers it with nostall_sync (docs/fuse.md). Own
 * header so that tools outside the daemon (bench repro's POSIX loads) can
 * ask for a whole-filesystem commit without libfuse's headers. */
#ifndef NOSTALL_TOOLS_FUSE_IOC_H
#define NOSTALL_TOOLS_FUSE_IOC_H

#include <sys/ioctl.h>

#define NOSTALL_IOC_SYNC ((unsigned)_IO('n', 0x53))
/* `nostall info MOUNTPOINT`: the data mode in use, NUL-terminated (a
 * fixed-size read: FUSE's restricted ioctls copy _IOC_SIZE bytes out). */
#define NOSTALL_IOC_DATA_MODE ((unsigned)_IOR('n', 0x4d, char[16]))

/* nostall info MOUNTPOINT (cmd_umount.c): 0, or 1 with a message. */
int nfuse_info_mountpoint(const char *dir);

#endif
