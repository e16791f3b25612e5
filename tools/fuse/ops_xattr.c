/* FUSE xattr ops, and the ACL duties FUSE_CAP_POSIX_ACL leaves to the
 * daemon (docs/fuse.md, "POSIX ACLs"):
 *   - system.posix_acl_access/_default are stored in ext3's on-disk format
 *     (so the kernel's ext3 reads them) and given to the kernel in the VFS
 *     xattr format (acl.c converts);
 *   - setting an access ACL sets the mode's permission bits from it, and
 *     an ACL the mode says in full is not stored (ext3's rule); the setgid
 *     bit goes when the caller is neither in the file's group nor root;
 *   - chmod rewrites the access ACL's owner/mask/other entries;
 *   - a new inode under a directory with a default ACL gets it (masked by
 *     the mode asked for) as its access ACL, and directories also as their
 *     default ACL; without one the caller's umask applies (the kernel
 *     leaves the umask to us: FUSE_CAP_DONT_MASK). */
#include "../acl/acl.h"
#include "fuse_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"
#define XATTR_MAX 65536

struct nfuse_newacl {
	struct acl *access; /* NULL: the mode says it all */
	struct acl *dflt;   /* directories: the inherited default ACL */
	unsigned char *enc[2]; /* their ext3 encodings, once armed */
};

static bool is_acl(const char *name, bool *dflt)
{
	*dflt = !strcmp(name, ACL_DEFAULT);
	return *dflt || !strcmp(name, ACL_ACCESS);
}

/* The stored ACL of ino (ext3 format) parsed; *out NULL when there is none.
 * Every create and mkdir reads its directory's default ACL, which is
 * usually absent: a stack buffer serves the common sizes, so that no
 * allocation is made per request (a 64 KiB malloc + free per create made
 * the thread's malloc arena shrink and regrow: an mprotect and page faults
 * per create). A larger ACL is read again into a 64 KiB buffer. */
static int acl_read(struct nfuse *nf, uint64_t ino, const char *name, struct acl **out)
{
	*out = NULL;
	unsigned char small[512];
	ssize_t n = nostall_getxattr_ino(nf->fs, ino, name, small, sizeof small);
	if (n == -ENODATA)
		return 0;
	if (n >= 0)
		return acl_from_ext3(small, (size_t)n, out);
	if (n != -ERANGE)
		return (int)n;
	unsigned char *buf = malloc(XATTR_MAX);
	if (!buf)
		return -ENOMEM;
	n = nostall_getxattr_ino(nf->fs, ino, name, buf, XATTR_MAX);
	int rc = n == -ENODATA ? 0 : n < 0 ? (int)n : acl_from_ext3(buf, (size_t)n, out);
	free(buf);
	return rc;
}

static int acl_write(struct nfuse *nf, uint64_t ino, const char *name, const struct acl *a)
{
	size_t n = acl_ext3_size(a);
	unsigned char *buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	acl_to_ext3(a, buf);
	int rc = nostall_setxattr_ino(nf->fs, ino, name, buf, n, 0);
	free(buf);
	return rc;
}

/* ---- new inodes, chmod ---- */

void nfuse_acl_free(struct nfuse_newacl *acl)
{
	if (acl) {
		acl_free(acl->access);
		acl_free(acl->dflt);
		free(acl->enc[0]);
		free(acl->enc[1]);
		free(acl);
	}
}

int nfuse_acl_prepare(fuse_req_t req, uint64_t parent, uint32_t *mode, struct nfuse_newacl **out)
{
	struct nfuse *nf = nfuse_of(req);
	mode_t umask = fuse_req_ctx(req)->umask;
	*out = NULL;
	struct acl *dflt = NULL;
	if (nf->o.acl && !S_ISLNK(*mode)) {
		int rc = acl_read(nf, parent, ACL_DEFAULT, &dflt);
		if (rc)
			return rc;
	}
	if (!dflt) {
		*mode &= ~(uint32_t)umask;
		return 0;
	}
	struct nfuse_newacl *n = calloc(1, sizeof *n);
	struct acl *access = acl_dup(dflt);
	if (!n || !access) {
		free(n);
		acl_free(access);
		acl_free(dflt);
		return -ENOMEM;
	}
	if (acl_create_masq(access, mode))
		n->access = access;
	else
		acl_free(access);
	if (S_ISDIR(*mode))
		n->dflt = dflt;
	else
		acl_free(dflt);
	if (!n->access && !n->dflt) {
		free(n);
		return 0;
	}
	*out = n;
	return 0;
}

int nfuse_acl_arm(struct nfuse_newacl *acl)
{
	if (!acl)
		return nostall_cred_set_xattrs(NULL, 0);
	struct nostall_xattr_init x[2];
	unsigned n = 0;
	const struct acl *which[2] = { acl->access, acl->dflt };
	const char *names[2] = { ACL_ACCESS, ACL_DEFAULT };
	for (int k = 0; k < 2; k++) {
		if (!which[k])
			continue;
		size_t len = acl_ext3_size(which[k]);
		if (!acl->enc[k]) {
			acl->enc[k] = malloc(len);
			if (!acl->enc[k])
				return -ENOMEM;
			acl_to_ext3(which[k], acl->enc[k]);
		}
		x[n++] = (struct nostall_xattr_init){ names[k], acl->enc[k], len };
	}
	return nostall_cred_set_xattrs(x, n);
}

int nfuse_acl_chmod(struct nfuse *nf, uint64_t ino, uint32_t mode)
{
	if (S_ISLNK(mode))
		return 0;
	struct acl *a;
	int rc = acl_read(nf, ino, ACL_ACCESS, &a);
	if (rc || !a)
		return rc;
	acl_chmod_masq(a, mode);
	rc = acl_write(nf, ino, ACL_ACCESS, a);
	acl_free(a);
	return rc;
}

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

static int set_acl(fuse_req_t req, uint64_t ino, bool dflt, const void *value, size_t size)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	int rc = nostall_stat_ino(nf->fs, ino, &st);
	if (rc)
		return rc;
	if (S_ISLNK(st.mode))
		return -EOPNOTSUPP;
	if (dflt && !S_ISDIR(st.mode))
		return -EACCES;
	struct acl *a = NULL;
	rc = acl_from_vfs(value, size, &a);
	if (!rc)
		rc = acl_valid(a);
	if (rc)
		goto out;
	const char *name = dflt ? ACL_DEFAULT : ACL_ACCESS;
	if (dflt) {
		rc = acl_write(nf, ino, name, a);
		goto out;
	}
	uint32_t mode = st.mode;
	bool equiv = acl_mode_of(a, &mode);
	if ((mode & 02000) && !nfuse_in_group_or_root(req, st.gid))
		mode &= ~02000u;
	if (mode != st.mode) {
		struct nostall_setattr sa = { .valid = NOSTALL_SET_MODE, .mode = mode & 07777 };
		rc = nostall_setattr_ino(nf->fs, ino, &sa, NULL);
	}
	if (!rc && equiv) {
		rc = nostall_removexattr_ino(nf->fs, ino, name);
		if (rc == -ENODATA)
			rc = 0;
	} else if (!rc) {
		rc = acl_write(nf, ino, name, a);
	}
out:
	acl_free(a);
	return rc;
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct nfuse *nf = nfuse_of(req);
	bool dflt;
	int rc;
	/* the caller's credentials: an xattr block may be allocated, and only
	 * root may use the root-reserved blocks (the daemon runs as root) */
	nfuse_cred_from_req(req);
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		rc = -EINVAL;
	else if (is_acl(name, &dflt))
		rc = set_acl(req, nfuse_to_ext3(ino), dflt, value, size);
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
	bool dflt;
	if (is_acl(name, &dflt)) {
		struct acl *a;
		int rc = acl_read(nf, nfuse_to_ext3(ino), name, &a);
		if (!rc && !a)
			rc = -ENODATA;
		if (rc) {
			nfuse_reply_rc(req, rc);
			return;
		}
		size_t n = acl_vfs_size(a);
		unsigned char *buf = malloc(n);
		if (buf) {
			acl_to_vfs(a, buf);
			reply_sized(req, buf, n, size);
		} else {
			fuse_reply_err(req, ENOMEM);
		}
		free(buf);
		acl_free(a);
		return;
	}
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
