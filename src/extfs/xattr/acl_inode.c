/* An inode's POSIX ACLs (acl.h): read and set through the xattr layer in
 * ext3's on-disk format, the permission check with the caller's
 * credentials, chmod's rewrite and the inheritance of default ACLs.
 * Written from the semantics of Linux's generic_permission,
 * posix_acl_permission, posix_acl_create and posix_acl_chmod. No ACL is
 * cached: the permission check reads one only for a caller who is not the
 * owner of an inode whose group bits are not all 0 (where the kernel
 * consults it too), and only when the inode has attributes at all. */
#include "extfs/xattr/acl.h"

#include "extfs/core/ext3_int.h"
#include "extfs/inode/cred.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Most ACLs are a few entries: read them into the stack, a larger one
 * again into a 64 KiB buffer. */
#define ACL_SMALL 512
#define ACL_MAX 65536

int ext3_acl_get(struct ext3_inode *in, bool dflt, struct ext3_acl **out)
{
	*out = NULL;
	const char *name = dflt ? EXT3_ACL_DEFAULT : EXT3_ACL_ACCESS;
	unsigned char small[ACL_SMALL];
	ssize_t n = ext3_xattr_get(in->fs, in, name, small, sizeof small);
	if (n == -ENODATA)
		return 0;
	if (n >= 0)
		return ext3_acl_from_disk(small, (size_t)n, out);
	if (n != -ERANGE)
		return (int)n;
	unsigned char *buf = malloc(ACL_MAX);
	if (!buf)
		return err_set(-ENOMEM, "out of memory");
	n = ext3_xattr_get(in->fs, in, name, buf, ACL_MAX);
	int rc = n == -ENODATA ? 0 : n < 0 ? (int)n : ext3_acl_from_disk(buf, (size_t)n, out);
	free(buf);
	return rc;
}

static int acl_put(struct ext3_inode *in, bool dflt, const struct ext3_acl *a, unsigned xflags)
{
	size_t n = ext3_acl_disk_size(a);
	unsigned char *buf = malloc(n);
	if (!buf)
		return err_set(-ENOMEM, "out of memory");
	ext3_acl_to_disk(a, buf);
	int rc = ext3_xattr_change(in, dflt ? EXT3_ACL_DEFAULT : EXT3_ACL_ACCESS, buf, n, xflags);
	free(buf);
	return rc;
}

/* ---- the permission check ---- */

/* posix_acl_permission: the entry that names the caller decides, a named
 * or group entry limited by the mask. */
static int acl_permission(const struct ext3_acl *a, const struct ext3_inode_attr *at,
			  const struct ext3_creds *c, unsigned want)
{
	bool found = false;
	const struct ext3_acl_entry *hit = NULL, *mask = NULL;
	for (size_t i = 0; i < a->n; i++) {
		const struct ext3_acl_entry *e = &a->e[i];
		if (e->tag == EXT3_ACL_MASK)
			mask = e;
	}
	for (size_t i = 0; i < a->n && !hit; i++) {
		const struct ext3_acl_entry *e = &a->e[i];
		switch (e->tag) {
		case EXT3_ACL_USER_OBJ:
			if (c->uid == at->uid)
				return (e->perm & want) == want ? 0 : -EACCES;
			break;
		case EXT3_ACL_USER:
			if (c->uid == e->id)
				hit = e;
			break;
		case EXT3_ACL_GROUP_OBJ:
		case EXT3_ACL_GROUP:
			if (ext3_creds_in_group(c, e->tag == EXT3_ACL_GROUP ? e->id : at->gid)) {
				found = true;
				if ((e->perm & want) == want)
					hit = e;
			}
			break;
		case EXT3_ACL_OTHER:
			if (found)
				return -EACCES;
			return (e->perm & want) == want ? 0 : -EACCES;
		default:
			break;
		}
	}
	if (!hit)
		return found ? -EACCES : -EUCLEAN;
	unsigned perm = hit->perm & (mask ? mask->perm : 7u);
	return (perm & want) == want ? 0 : -EACCES;
}

/* acl_permission_check: the owner's bits, the ACL, the group's or others'. */
static int mode_permission(struct ext3_inode *in, const struct ext3_inode_attr *at,
			   const struct ext3_creds *c, unsigned mask)
{
	unsigned mode = at->mode;
	if (c->uid == at->uid)
		return (mask & ~(mode >> 6) & 7) ? -EACCES : 0;
	if ((mode & 0070) && (at->file_acl || at->extra_isize)) {
		struct ext3_acl *a;
		int rc = ext3_acl_get(in, false, &a);
		if (rc)
			return rc;
		if (a) {
			rc = acl_permission(a, at, c, mask);
			ext3_acl_free(a);
			return rc;
		}
	}
	if ((mask & (mode ^ (mode >> 3))) && ext3_creds_in_group(c, at->gid))
		mode >>= 3;
	return (mask & ~mode & 7) ? -EACCES : 0;
}

int ext3_permission(struct ext3_inode *in, unsigned mask)
{
	const struct ext3_creds *c = ext3_cred_current(in->fs);
	if (c->noperm)
		return 0;
	/* A capability that grants whatever the bits say: not worth reading
	 * the inode's attributes or its ACL for (the kernel's order, bits
	 * first, gives the same answer). Every path component comes here. */
	if (ext3_creds_capable(c, EXT3_CAP_DAC_OVERRIDE)) {
		if (!(mask & EXT3_MAY_EXEC))
			return 0;
		uint16_t m = ext3_inode_mode(in);
		if ((m & EXT3_S_IFMT) == EXT3_S_IFDIR || (m & 0111))
			return 0;
	}
	struct ext3_inode_attr at;
	ext3_inode_attr_get(in, &at);
	bool dir = (at.mode & EXT3_S_IFMT) == EXT3_S_IFDIR;
	int rc = mode_permission(in, &at, c, mask);
	if (rc != -EACCES)
		return rc;
	bool read_search = ext3_creds_capable(c, EXT3_CAP_DAC_READ_SEARCH);
	if (dir && !(mask & EXT3_MAY_WRITE) && read_search)
		return 0;
	if (!dir && mask == EXT3_MAY_READ && read_search)
		return 0;
	return err_set(-EACCES, "inode %u: permission denied (uid %u)", at.ino, c->uid);
}

int ext3_may_search(struct ext3_inode *dir)
{
	return ext3_permission(dir, EXT3_MAY_EXEC);
}

void ext3_acl_path_checks_on(struct ext3_fs *fs)
{
	fs->may_search = ext3_may_search;
}

/* ---- chmod ---- */

int ext3_acl_chmod(struct ext3_inode *in)
{
	uint16_t mode = ext3_inode_mode(in);
	if ((mode & EXT3_S_IFMT) == EXT3_S_IFLNK)
		return 0;
	struct ext3_acl *a;
	int rc = ext3_acl_get(in, false, &a);
	if (rc || !a)
		return rc;
	ext3_acl_chmod_masq(a, mode);
	rc = acl_put(in, false, a, 0);
	ext3_acl_free(a);
	return rc;
}

/* ---- new inodes ---- */

static int new_add(struct ext3_acl_new *out, const char *name, const struct ext3_acl *a)
{
	size_t n = ext3_acl_disk_size(a);
	void *buf = malloc(n);
	if (!buf)
		return err_set(-ENOMEM, "out of memory");
	ext3_acl_to_disk(a, buf);
	out->x[out->n++] = (struct ext3_xattr_init){ name, buf, n };
	return 0;
}

void ext3_acl_new_release(struct ext3_acl_new *n)
{
	for (unsigned i = 0; i < n->n; i++)
		free((void *)n->x[i].value);
	n->n = 0;
}

int ext3_acl_inherit(struct ext3_inode *dir, uint16_t *mode, uint32_t umask,
		     struct ext3_acl_new *out)
{
	out->n = 0;
	if ((*mode & EXT3_S_IFMT) == EXT3_S_IFLNK)
		return 0;
	struct ext3_acl *dflt = NULL;
	int rc = ext3_acl_get(dir, true, &dflt);
	if (rc)
		return rc;
	if (!dflt) {
		*mode &= (uint16_t)~(umask & 0777);
		return 0;
	}
	struct ext3_acl *access = ext3_acl_dup(dflt);
	if (!access) {
		ext3_acl_free(dflt);
		return err_set(-ENOMEM, "out of memory");
	}
	uint32_t m = *mode;
	if (ext3_acl_create_masq(access, &m))
		rc = new_add(out, EXT3_ACL_ACCESS, access);
	*mode = (uint16_t)m;
	if (!rc && (*mode & EXT3_S_IFMT) == EXT3_S_IFDIR)
		rc = new_add(out, EXT3_ACL_DEFAULT, dflt);
	ext3_acl_free(access);
	ext3_acl_free(dflt);
	if (rc)
		ext3_acl_new_release(out);
	return rc;
}

/* ---- the xattr interface ---- */

ssize_t ext3_acl_xattr_get(struct ext3_inode *in, bool dflt, void *buf, size_t size)
{
	struct ext3_acl *a;
	int rc = ext3_acl_get(in, dflt, &a);
	if (rc)
		return rc;
	if (!a)
		return err_set(-ENODATA, "no attribute %s", dflt ? EXT3_ACL_DEFAULT : EXT3_ACL_ACCESS);
	size_t n = ext3_acl_vfs_size(a);
	ssize_t ret = (ssize_t)n;
	if (size && n > size)
		ret = err_set(-ERANGE, "xattr value of %zu bytes, buffer %zu", n, size);
	else if (size)
		ext3_acl_to_vfs(a, buf);
	ext3_acl_free(a);
	return ret;
}

int ext3_acl_xattr_set(struct ext3_inode *in, bool dflt, const void *value, size_t size,
		       unsigned xflags)
{
	const char *name = dflt ? EXT3_ACL_DEFAULT : EXT3_ACL_ACCESS;
	struct ext3_inode_attr at;
	ext3_inode_attr_get(in, &at);
	uint16_t type = at.mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFLNK)
		return err_set(-EOPNOTSUPP, "%s: a symbolic link has no ACLs", name);
	const struct ext3_creds *c = ext3_cred_current(in->fs);
	if (!c->noperm && !ext3_creds_owner(c, at.uid))
		return err_set(-EPERM, "inode %u: %s: not the owner", at.ino, name);
	if (dflt && type != EXT3_S_IFDIR)
		return value ? err_set(-EACCES, "inode %u: a default ACL on a non-directory", at.ino) : 0;
	if (!value)
		return ext3_xattr_change(in, name, NULL, 0, xflags);
	struct ext3_acl *a = NULL;
	int rc = ext3_acl_from_vfs(value, size, &a);
	if (!rc)
		rc = ext3_acl_valid(a);
	if (rc) {
		ext3_acl_free(a);
		return err_set(rc, "inode %u: %s: not a valid ACL", at.ino, name);
	}
	bool equiv = false;
	if (!dflt) {
		uint32_t mode = at.mode;
		equiv = ext3_acl_mode_of(a, &mode);
		if ((mode & 02000) && !ext3_creds_in_group(c, at.gid) &&
		    !ext3_creds_capable(c, EXT3_CAP_FSETID))
			mode &= ~02000u;
		if (mode != at.mode) {
			struct ext3_setattr sa = { .valid = EXT3_SET_MODE, .mode = (uint16_t)(mode & 07777) };
			rc = ext3_setattr(in, &sa);
		}
	}
	if (!rc && equiv) {
		rc = ext3_xattr_change(in, name, NULL, 0, xflags & EXT3_XATTR_REPLACE);
		if (rc == -ENODATA && !(xflags & EXT3_XATTR_REPLACE))
			rc = 0;
	} else if (!rc) {
		rc = acl_put(in, dflt, a, xflags);
	}
	ext3_acl_free(a);
	return rc;
}
