/* POSIX ACLs in the library (docs/api.md, "Credentials and POSIX ACLs"),
 * as Linux's fs/ext3/acl.c and fs/posix_acl.c give them:
 *   - acl.c: the VFS xattr format (version 2, what getfacl/setfacl and the
 *     xattr calls of the public API speak) and ext3's on-disk format
 *     (version 1, what is stored), and the mode rules written from their
 *     semantics (create with a default ACL, chmod, setting an access ACL);
 *   - acl_inode.c: an inode's ACLs read and set through the xattr
 *     layer, the permission check (generic_permission with the ACL and
 *     the caller's credentials, extfs/inode/cred.h), chmod's rewrite of
 *     the access ACL and the inheritance of a directory's default ACL. */
#ifndef NOSTALL_EXTFS_ACL_H
#define NOSTALL_EXTFS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "extfs/core/ext3_fsops.h"

enum {
	EXT3_ACL_USER_OBJ = 0x01,
	EXT3_ACL_USER = 0x02,
	EXT3_ACL_GROUP_OBJ = 0x04,
	EXT3_ACL_GROUP = 0x08,
	EXT3_ACL_MASK = 0x10,
	EXT3_ACL_OTHER = 0x20,
};
#define EXT3_ACL_UNDEFINED_ID 0xffffffffu

struct ext3_acl_entry {
	uint16_t tag, perm;
	uint32_t id; /* USER and GROUP entries, else EXT3_ACL_UNDEFINED_ID */
};
struct ext3_acl {
	size_t n;
	struct ext3_acl_entry e[];
};

/* Parse: -EINVAL (VFS) / -EUCLEAN (on disk) for a malformed value, -ENOMEM. */
int ext3_acl_from_vfs(const void *buf, size_t n, struct ext3_acl **out);
int ext3_acl_from_disk(const void *buf, size_t n, struct ext3_acl **out);
size_t ext3_acl_vfs_size(const struct ext3_acl *a);
void ext3_acl_to_vfs(const struct ext3_acl *a, void *buf);
size_t ext3_acl_disk_size(const struct ext3_acl *a);
void ext3_acl_to_disk(const struct ext3_acl *a, void *buf);
struct ext3_acl *ext3_acl_dup(const struct ext3_acl *a);
void ext3_acl_free(struct ext3_acl *a);
/* The kernel's rules for a valid ACL (-EINVAL otherwise). */
int ext3_acl_valid(const struct ext3_acl *a);
/* Permission bits the ACL gives the file (owner, mask or group, other)
 * into *mode (other bits kept); true when the ACL says no more than the
 * mode (only the three base entries): then it need not be stored. */
bool ext3_acl_mode_of(const struct ext3_acl *a, uint32_t *mode);
/* A new inode under a default ACL: the ACL (a copy of the default) and the
 * requested mode restrict each other; true when the result says more than
 * the mode (must be stored as the access ACL). */
bool ext3_acl_create_masq(struct ext3_acl *a, uint32_t *mode);
/* chmod: the owner, other and mask (or group, without a mask) entries take
 * the new mode's bits. */
void ext3_acl_chmod_masq(struct ext3_acl *a, uint32_t mode);

/* Is name one of the ACL xattrs (system.posix_acl_access, _default)? */
bool ext3_acl_xattr_name(const char *name);

/* ---- an inode's ACLs (acl_inode.c) ---- */

#define EXT3_ACL_ACCESS "system.posix_acl_access"
#define EXT3_ACL_DEFAULT "system.posix_acl_default"

/* The stored ACL of in (dflt: the default ACL); *out NULL when there is
 * none. -EUCLEAN for a malformed one. */
int ext3_acl_get(struct ext3_inode *in, bool dflt, struct ext3_acl **out);

/* May the current caller (ext3_cred_current) access in for mask (EXT3_MAY_*
 * bits)? 0, or -EACCES: the kernel's generic_permission, the access ACL
 * consulted for callers who are not the owner when the group bits are not
 * all 0, then CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH. Credentials marked
 * noperm (their caller checked) are always let through. */
#define EXT3_MAY_EXEC 1u
#define EXT3_MAY_WRITE 2u
#define EXT3_MAY_READ 4u
int ext3_permission(struct ext3_inode *in, unsigned mask);
/* ext3_permission(dir, EXT3_MAY_EXEC): the path walk's check
 * (ext3_acl_path_checks_on installs it on fs). */
int ext3_may_search(struct ext3_inode *dir);
void ext3_acl_path_checks_on(struct ext3_fs *fs);

/* After a chmod of in: the access ACL's owner, mask (or group) and other
 * entries take the new mode's bits (ext3_acl_chmod). No ACL: nothing. */
int ext3_acl_chmod(struct ext3_inode *in);

/* A new inode of *mode (type and permission bits) in dir: with a default
 * ACL in dir, the mode and a copy of it restrict each other and the
 * result becomes the new inode's access ACL (when it says more than the
 * mode), a new directory's default ACL too; out gets those (on-disk
 * values, for ext3_cred.xattrs). Without one, *mode loses umask's bits
 * (posix_acl_create: a default ACL replaces the umask). Symlinks get
 * nothing. ext3_acl_new_release frees out's values. */
struct ext3_acl_new {
	struct ext3_xattr_init x[2];
	unsigned n;
};
int ext3_acl_inherit(struct ext3_inode *dir, uint16_t *mode, uint32_t umask,
		     struct ext3_acl_new *out);
void ext3_acl_new_release(struct ext3_acl_new *n);

/* getxattr of an ACL (dflt: the default one) in the VFS format: the
 * length, -ENODATA when none, -ERANGE when size (not 0) is too small. */
ssize_t ext3_acl_xattr_get(struct ext3_inode *in, bool dflt, void *buf, size_t size);
/* setxattr (value in the VFS format) or, value NULL, removexattr of an ACL
 * (xflags: EXT3_XATTR_*): the owner or CAP_FOWNER only (-EPERM); a
 * symlink has none (-EOPNOTSUPP), a default ACL only a directory
 * (-EACCES); a malformed or invalid value -EINVAL. Setting the access ACL
 * sets the mode's permission bits from it (and drops setgid when the
 * caller is neither in the file's group nor holds CAP_FSETID); one the
 * mode says in full is removed rather than stored. */
int ext3_acl_xattr_set(struct ext3_inode *in, bool dflt, const void *value, size_t size,
		       unsigned xflags);

#endif
