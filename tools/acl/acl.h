/* POSIX ACLs for the tools: the VFS xattr format (version 2) and ext3's
 * on-disk format (version 1), and the mode rules of the kernel's ACL code
 * written from their semantics (acl.c). Used by the FUSE daemon (every
 * ACL it is sent or asked for) and by `nostall get` / `put` (host trees). */
#ifndef NOSTALL_TOOLS_ACL_H
#define NOSTALL_TOOLS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	ACL_TAG_USER_OBJ = 0x01,
	ACL_TAG_USER = 0x02,
	ACL_TAG_GROUP_OBJ = 0x04,
	ACL_TAG_GROUP = 0x08,
	ACL_TAG_MASK = 0x10,
	ACL_TAG_OTHER = 0x20,
};
#define ACL_UNDEFINED_ID 0xffffffffu

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id; /* USER and GROUP entries, else ACL_UNDEFINED_ID */
};
struct acl {
	size_t n;
	struct acl_entry e[];
};

/* Parse: -EINVAL (VFS) / -EUCLEAN (on disk) for a malformed value, -ENOMEM. */
int acl_from_vfs(const void *buf, size_t n, struct acl **out);
int acl_from_ext3(const void *buf, size_t n, struct acl **out);
size_t acl_vfs_size(const struct acl *a);
void acl_to_vfs(const struct acl *a, void *buf);
size_t acl_ext3_size(const struct acl *a);
void acl_to_ext3(const struct acl *a, void *buf);
struct acl *acl_dup(const struct acl *a);
void acl_free(struct acl *a);
/* The kernel's rules for a valid ACL (-EINVAL otherwise). */
int acl_valid(const struct acl *a);
/* Permission bits the ACL gives the file (owner, mask or group, other)
 * into *mode (other bits kept); true when the ACL says no more than the
 * mode (only the three base entries): then it need not be stored. */
bool acl_mode_of(const struct acl *a, uint32_t *mode);
/* A new inode under a default ACL: the ACL (a copy of the default) and the
 * requested mode restrict each other; true when the result says more than
 * the mode (must be stored as the access ACL). */
bool acl_create_masq(struct acl *a, uint32_t *mode);
/* chmod: the owner, other and mask (or group, without a mask) entries take
 * the new mode's bits. */
void acl_chmod_masq(struct acl *a, uint32_t mode);

/* Is name one of the ACL xattrs (system.posix_acl_access, _default)? */
bool acl_xattr_name(const char *name);
/* One ACL value from one format to the other in a malloc'ed *out (to_ext3:
 * VFS -> ext3 on disk, checked with acl_valid; else on disk -> VFS).
 * Returns its length, or -EINVAL (VFS value) / -EUCLEAN (on-disk value)
 * for a malformed one, -ENOMEM. */
ssize_t acl_convert(const void *in, size_t n, bool to_ext3, void **out);

#endif
