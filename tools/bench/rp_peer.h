/* The peer filesystems on one image file on the host disk, shared by
 * `bench repro --peers` (repro_peers.c) and `bench fs --mount`
 * (tools/bench/bench_fs_mount.c), which also opts in to a loop device with
 * direct I/O, mkfs -N, nostall's default data mode (mode NULL: no data=)
 * and the daemon's peak memory:
 *
 *   nostall-fuse  `nostall mount -o data=MODE[,OPTS] IMAGE DIR` (issue 11)
 *   kernel-ext3   mkfs.ext3, a loop device, mount -t ext3 -o data=MODE,barrier=1
 *   fuse2fs       e2fsprogs' FUSE ext2/3/4 driver on a mkfs.ext3 image
 *
 * Each mount makes a fresh filesystem on the image first. Every call that
 * cannot do its work says why in `why` ("skipped: ..."), for the report:
 * a peer that cannot run is reported, never silently dropped.
 */
#ifndef NOSTALL_TOOLS_RP_PEER_H
#define NOSTALL_TOOLS_RP_PEER_H

#include <stdbool.h>
#include <stddef.h>

struct rp_peer {
	const char *self;     /* the nostall binary (mkfs, mount, umount) */
	const char *system;   /* "nostall-fuse", "kernel-ext3", "fuse2fs" */
	const char *mode;     /* data mode ("default" for fuse2fs) */
	const char *opts;     /* nostall-fuse: more -o options (NULL: none) */
	char image[256];      /* the image file */
	char dir[256];        /* the mount point (exists) */
	char loop[64];        /* kernel-ext3: the loop device while set up */
	bool mounted;
	/* Opt-in (bench fs --mount; zero in bench repro, which keeps today's
	 * behaviour): */
	bool loop_dio;        /* kernel-ext3: `losetup --direct-io=on` */
	int dio;              /* ... what /sys/block/loopN/loop/dio said after it:
	                       * 1 on, 0 off (refused), -1 unknown */
	unsigned inodes;      /* mkfs -N (0: mkfs's default) */
	bool track_hwm;       /* nostall-fuse: read the daemon's VmHWM before
	                       * every unmount (remounts too) ... */
	unsigned long long hwm_kb; /* ... the largest seen (caller zeroes it) */
	/* --fs, --features (NULL: ext3 and mkfs.ext3 as before): every system
	 * gets a fresh filesystem of this type (mke2fs -t FS -O FEATURES, or
	 * `nostall mkfs -t FS -O FEATURES`); kernel-ext3 mounts it with the
	 * kernel's driver of that name (-t ext4 for ext4: the kernel's ext4 in
	 * the same data mode; ext2 without data= or barrier=, which a
	 * journal-less mount has no use for). */
	const char *fs, *features;
};

/* Why `system` cannot run here ("" when it can): root, tools, /dev/fuse. */
void rp_peer_why(const char *self, const char *system, char *why, size_t n);
/* Fresh filesystem on p->image, mounted on p->dir. 0, or -1 with why set
 * (anything set up before the failure is undone). */
int rp_peer_mount(struct rp_peer *p, char *why, size_t n);
/* Unmount (nostall-fuse: `nostall umount`, which waits for the daemon and
 * a clean image) and detach the loop device; retries while busy. */
void rp_peer_umount(struct rp_peer *p);
/* Make every cache of the mounted filesystem cold (what a cold read or
 * stat needs): nostall-fuse is unmounted and mounted again (the daemon's
 * page cache lives in the daemon, the host's drop_caches does not reach
 * it); then, for every system, sync and `echo 3 > /proc/sys/vm/drop_caches`
 * (the kernel's page cache of the mount and of the image file, dentries,
 * inodes). The drop needs root (nostall-fuse does without: its image is
 * read with O_DIRECT); 0, or -1 with why set. */
int rp_peer_cold(struct rp_peer *p, char *why, size_t n);
/* The host's caches only (sync, `echo 3 > /proc/sys/vm/drop_caches`), the
 * mount left as it is (nostall-fuse's daemon keeps its own cache): what a
 * user reading back in the same mount gets. Root; 0, or -1 with why set. */
int rp_peer_drop_host(char *why, size_t n);
/* nostall-fuse: the pid of the mounted daemon (a `nostall mount` process
 * whose arguments end with p->image and p->dir; both absolute), 0 when
 * none is found. */
int rp_peer_daemon_pid(const struct rp_peer *p);
/* VmHWM of a process in KiB (0 when unreadable). */
unsigned long long rp_peer_hwm_kb(int pid);

#endif
