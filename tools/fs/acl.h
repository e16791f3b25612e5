/* POSIX ACLs: the ext3 on-disk form (system.posix_acl_access/_default
 * values in an image) and the xattr form the Linux VFS takes (lsetxattr).
 * A command that writes ACLs into an image will need the reverse
 * conversion; it belongs here. */
#ifndef NOSTALL_TOOLS_FS_ACL_H
#define NOSTALL_TOOLS_FS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Is name one of the ACL xattrs (system.posix_acl_access, _default)? */
bool acl_xattr_name(const char *name);

/* Convert an ext3 on-disk ACL of n bytes (version 1; 4-byte entries for
 * USER_OBJ, GROUP_OBJ, MASK, OTHER, 8-byte ones for USER and GROUP) to the
 * xattr form (version 2, every entry 8 bytes). out must hold 2 * n bytes
 * (4-byte entries double, the header does not grow). Returns the
 * converted length or -EINVAL for a malformed ACL. */
ssize_t acl_ext3_to_xattr(const unsigned char *in, size_t n, unsigned char *out);

#endif
