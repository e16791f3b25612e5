/* FUSE xattr ops. With FUSE_CAP_POSIX_ACL the kernel leaves the ACL
 * duties to the daemon (docs/fuse.md, "POSIX ACLs"); the library does them
 * all (include/nostall/nostall.h, "extended attributes"): it takes and
 * gives system.posix_acl_access/_default in the VFS xattr format the
 * kernel uses and stores them in ext3's on-disk format; setting an access
 * ACL sets the mode's permission bits from it (the setgid bit goes when
 * the requester is neither in the file's group nor root); chmod rewrites
 * the access ACL; a new inode inherits its directory's default ACL, else
 * the requester's umask applies (FUSE_CAP_DONT_MASK). */
#include "fuse_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

/* ---- the ops ---- */

bool nfuse_in_group_or_root(fuse_req_t req, uint32_t gid)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	if (c->uid == 0 || c->gid == gid)
		return true;
	gid_t groups[256];
	int n = fuse_req_getgroups(req, 256, groups);
	for (int i = 0; i < n && i < 256; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct nfuse *nf = nfuse_of(req);
	int rc;
	/* the requester's credentials: an xattr block may be allocated, and
	 * only root may use the root-reserved blocks (the daemon runs as
	 * root); its groups decide the setgid bit after an ACL change */
	nfuse_cred_from_req_groups(req);
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		rc = -EINVAL;
	else
		rc = nostall_setxattr_ino(nf->fs, nfuse_to_ext3(ino), name, value, size,
					  (flags & XATTR_CREATE ? NOSTALL_XATTR_CREATE : 0) |
					  (flags & XATTR_REPLACE ? NOSTALL_XATTR_REPLACE : 0));
	nostall_cred_reset();
	nfuse_reply_rc(req, rc);
}

/* Reply with a value or list of n bytes in buf, by the getxattr rules:
 * size 0 asks for the length, a smaller buffer is ERANGE. */
static void reply_sized(fuse_req_t req, const void *buf, size_t n, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, n);
	else if (n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, n);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct nfuse *nf = nfuse_of(req);
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = nostall_getxattr_ino(nf->fs, nfuse_to_ext3(ino), name, buf, size);
	if (n < 0)
		nfuse_reply_rc(req, (int)n);
	else
		reply_sized(req, buf, (size_t)n, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct nfuse *nf = nfuse_of(req);
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = nostall_listxattr_ino(nf->fs, nfuse_to_ext3(ino), buf, size);
	if (n < 0)
		nfuse_reply_rc(req, (int)n);
	else
		reply_sized(req, buf, (size_t)n, size);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	nfuse_reply_rc(req, nostall_removexattr_ino(nfuse_of(req)->fs, nfuse_to_ext3(ino), name));
}

void nfuse_ops_xattr(struct fuse_lowlevel_ops *ops)
{
	ops->setxattr = op_setxattr;
	ops->getxattr = op_getxattr;
	ops->listxattr = op_listxattr;
	ops->removexattr = op_removexattr;
}
