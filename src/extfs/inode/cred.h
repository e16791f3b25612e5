/* Who is asking: the caller's credentials as the kernel's VFS and ext3
 * consult them (docs/api.md, "Credentials"). One set is current for each
 * call: the calling thread's (ext3_cred_use: nostall_cred_use /
 * nostall_cred_set), else the mount's default (the mounting process's
 * credentials read at mount time, or root's with -o fakeroot).
 *
 * Readers: the permission checks (xattr/acl.c), set-id clearing (data
 * writes, truncate, chown, chmod), owner checks and the reserved blocks
 * (balloc.c). Capabilities are Linux's numbers (capability.h); a set is a
 * bit mask 1 << CAP_*. */
#ifndef NOSTALL_EXTFS_CRED_H
#define NOSTALL_EXTFS_CRED_H

#include "extfs/core/ext3_fsops.h"

#include <stdbool.h>
#include <stdint.h>

enum {
	EXT3_CAP_CHOWN = 0,
	EXT3_CAP_DAC_OVERRIDE = 1,
	EXT3_CAP_DAC_READ_SEARCH = 2,
	EXT3_CAP_FOWNER = 3,
	EXT3_CAP_FSETID = 4,
	EXT3_CAP_LINUX_IMMUTABLE = 9,
	EXT3_CAP_SYS_RESOURCE = 24,
	EXT3_CAP_MKNOD = 27,
};
#define EXT3_CAPS_ALL                                                                          \
	((1ull << EXT3_CAP_CHOWN) | (1ull << EXT3_CAP_DAC_OVERRIDE) |                          \
	 (1ull << EXT3_CAP_DAC_READ_SEARCH) | (1ull << EXT3_CAP_FOWNER) |                      \
	 (1ull << EXT3_CAP_FSETID) | (1ull << EXT3_CAP_LINUX_IMMUTABLE) |                      \
	 (1ull << EXT3_CAP_SYS_RESOURCE) | (1ull << EXT3_CAP_MKNOD))

/* struct ext3_creds is in ext3_fsops.h (the mount keeps a default). */

/* The calling process's credentials: euid, egid, its groups and its
 * effective capabilities (capget(2)). */
void ext3_creds_of_process(struct ext3_creds *c);
/* Root inside the image: uid 0, gid 0, every capability (-o fakeroot). */
void ext3_creds_root(struct ext3_creds *c);

/* This thread's credentials from now on (copied); NULL: the mount's
 * default again. */
void ext3_cred_use(const struct ext3_creds *c);
/* The mount's default (copied; the mount keeps it until unmount). */
void ext3_fs_cred_default_set(struct ext3_fs *fs, const struct ext3_creds *c);
/* The mount's default as it is now. */
const struct ext3_creds *ext3_fs_cred_default(const struct ext3_fs *fs);
/* The credentials in force for a call on fs (never NULL; valid until the
 * thread's next ext3_cred_use). */
const struct ext3_creds *ext3_cred_current(const struct ext3_fs *fs);

bool ext3_creds_capable(const struct ext3_creds *c, unsigned cap);
/* Is gid c's group or one of its supplementary groups? */
bool ext3_creds_in_group(const struct ext3_creds *c, uint32_t gid);
/* inode_owner_or_capable: the fsuid owns the inode, or CAP_FOWNER. */
bool ext3_creds_owner(const struct ext3_creds *c, uint32_t owner_uid);

/* The mode after a data change (write, truncate) by c: setuid goes, and
 * setgid when group execution is on (a plain setgid marks mandatory
 * locking) or when c is not in the file's group (file_gid), unless c
 * holds CAP_FSETID; regular files only (the kernel's should_remove_suid
 * with setattr_should_drop_sgid, Linux 6.x). */
uint16_t ext3_creds_kill_suid(const struct ext3_creds *c, uint16_t mode, uint32_t file_gid);

#endif
