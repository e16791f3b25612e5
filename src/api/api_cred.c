/* Public API: who is asking (include/nostall/nostall.h, "Credentials";
 * docs/api.md). The credentials themselves are ext3's
 * (src/extfs/inode/cred.h: the thread's, else the mount's default); this
 * file converts the public struct, makes the checks the VFS makes before a
 * filesystem is asked (may_create, may_delete, may_open, access), and sets
 * up a new inode's owner, mode and inherited ACLs (api_new_begin). */
#include "api/api_int.h"

#include "extfs/inode/cred.h"
#include "extfs/xattr/acl.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* The public capability bits are the library's own (Linux's numbers): the
 * two lists cannot drift apart. */
_Static_assert(NOSTALL_CAP_CHOWN == 1ull << EXT3_CAP_CHOWN, "CAP_CHOWN");
_Static_assert(NOSTALL_CAP_DAC_OVERRIDE == 1ull << EXT3_CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE");
_Static_assert(NOSTALL_CAP_DAC_READ_SEARCH == 1ull << EXT3_CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH");
_Static_assert(NOSTALL_CAP_FOWNER == 1ull << EXT3_CAP_FOWNER, "CAP_FOWNER");
_Static_assert(NOSTALL_CAP_FSETID == 1ull << EXT3_CAP_FSETID, "CAP_FSETID");
_Static_assert(NOSTALL_CAP_LINUX_IMMUTABLE == 1ull << EXT3_CAP_LINUX_IMMUTABLE, "CAP_LINUX_IMMUTABLE");
_Static_assert(NOSTALL_CAP_SYS_RESOURCE == 1ull << EXT3_CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE");
_Static_assert(NOSTALL_CAP_MKNOD == 1ull << EXT3_CAP_MKNOD, "CAP_MKNOD");
_Static_assert(NOSTALL_CAP_ALL == EXT3_CAPS_ALL, "CAP_ALL");

/* ---- the public credentials ---- */

static int creds_from(const struct nostall_cred *c, struct ext3_creds *out)
{
	if (c->flags & ~NOSTALL_CRED_NOPERM)
		return err_set(-EINVAL, "credentials: unknown flags 0x%x", c->flags);
	memset(out, 0, sizeof *out);
	out->uid = c->uid;
	out->gid = c->gid;
	out->caps = c->caps & EXT3_CAPS_ALL;
	out->umask = c->umask & 0777;
	out->noperm = c->flags & NOSTALL_CRED_NOPERM;
	out->ngroups = c->groups ? (c->ngroups < EXT3_CRED_NGROUPS_MAX ? c->ngroups
								: EXT3_CRED_NGROUPS_MAX) : 0;
	if (out->ngroups)
		memcpy(out->groups, c->groups, out->ngroups * sizeof *c->groups);
	return 0;
}

int nostall_cred_use(const struct nostall_cred *c)
{
	if (!c) {
		ext3_cred_use(NULL);
		return 0;
	}
	struct ext3_creds e;
	int rc = creds_from(c, &e);
	if (!rc)
		ext3_cred_use(&e);
	return rc;
}

int nostall_cred_default(struct nostall_fs *fs, const struct nostall_cred *c)
{
	struct ext3_creds e;
	int rc = creds_from(c, &e);
	if (!rc)
		ext3_fs_cred_default_set(fs->e, &e);
	return rc;
}

void nostall_cred_umask(struct nostall_fs *fs, uint32_t umask)
{
	struct ext3_creds e = *ext3_fs_cred_default(fs->e);
	e.umask = umask & 0777;
	ext3_fs_cred_default_set(fs->e, &e);
}

void nostall_cred_self(struct nostall_cred *c, uint32_t *groups, unsigned max)
{
	struct ext3_creds e;
	ext3_creds_of_process(&e);
	unsigned n = e.ngroups < max ? e.ngroups : max;
	if (n)
		memcpy(groups, e.groups, n * sizeof *groups);
	*c = (struct nostall_cred){ .uid = e.uid, .gid = e.gid, .groups = n ? groups : NULL,
				    .ngroups = n, .caps = e.caps };
}

void nostall_cred_set(uint32_t uid, uint32_t gid, const uint32_t *groups, unsigned ngroups)
{
	ext3_cred_thread_set(uid, gid, groups, ngroups);
}

/* The xattrs new inodes of this thread get (nostall_cred_set_xattrs). The
 * strings and values stay the caller's; only the pointers are kept. */
static _Thread_local struct ext3_xattr_init tl_xattrs[NOSTALL_CREATE_XATTRS_MAX];
static _Thread_local unsigned tl_nxattrs;

int nostall_cred_set_xattrs(const struct nostall_xattr_init *x, unsigned n)
{
	if (n > NOSTALL_CREATE_XATTRS_MAX || (n && !x))
		return err_set(-EINVAL, "new-inode xattrs: %u given, at most %u", n,
			       NOSTALL_CREATE_XATTRS_MAX);
	for (unsigned i = 0; i < n; i++) {
		if (!x[i].name || (x[i].size && !x[i].value))
			return err_set(-EINVAL, "new-inode xattr %u: no name or no value", i);
		tl_xattrs[i] = (struct ext3_xattr_init){ x[i].name, x[i].value, x[i].size };
	}
	tl_nxattrs = n;
	return 0;
}

void nostall_cred_reset(void)
{
	ext3_cred_thread_reset();
	tl_nxattrs = 0;
}

/* ---- the VFS's checks ---- */

int api_may_change_names(struct nostall_fs *fs, struct ext3_inode *dir)
{
	return ext3_permission(dir, EXT3_MAY_WRITE | EXT3_MAY_EXEC);
}

bool api_checks_on(struct nostall_fs *fs)
{
	return !ext3_cred_current(fs->e)->noperm;
}

int api_may_delete(struct nostall_fs *fs, struct ext3_inode *dir, struct ext3_inode *victim)
{
	int rc = api_may_change_names(fs, dir);
	if (rc)
		return rc;
	const struct ext3_creds *c = ext3_cred_current(fs->e);
	struct ext3_inode_attr d, v;
	ext3_inode_attr_get(dir, &d);
	if (c->noperm || !(d.mode & 01000))
		return 0;
	/* check_sticky: in a sticky directory only the file's owner, the
	 * directory's owner or CAP_FOWNER */
	ext3_inode_attr_get(victim, &v);
	if (c->uid == v.uid || c->uid == d.uid || ext3_creds_capable(c, EXT3_CAP_FOWNER))
		return 0;
	return err_set(-EPERM, "inode %u: in sticky directory %u: not the owner (uid %u)", v.ino, d.ino,
		       c->uid);
}

int api_may_open(struct ext3_inode *in, unsigned flags, bool trunc)
{
	unsigned mask = 0;
	if (!(flags & NOSTALL_O_WRONLY))
		mask |= EXT3_MAY_READ;
	if ((flags & (NOSTALL_O_WRONLY | NOSTALL_O_RDWR)) || trunc)
		mask |= EXT3_MAY_WRITE;
	return ext3_permission(in, mask);
}

bool api_owner_or_capable(struct nostall_fs *fs, struct ext3_inode *in)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	const struct ext3_creds *c = ext3_cred_current(fs->e);
	return c->noperm || ext3_creds_owner(c, a.uid);
}

bool api_capable(struct nostall_fs *fs, uint64_t cap)
{
	const struct ext3_creds *c = ext3_cred_current(fs->e);
	return c->noperm || (c->caps & cap) == cap;
}

int api_may_chown(struct nostall_fs *fs, struct ext3_inode *in, uint32_t uid, uint32_t gid)
{
	const struct ext3_creds *c = ext3_cred_current(fs->e);
	if (c->noperm || ext3_creds_capable(c, EXT3_CAP_CHOWN))
		return 0;
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	/* chown_ok / chgrp_ok: the owner may "change" the owner to itself and
	 * the group to one of its own groups */
	bool uid_ok = uid == (uint32_t)-1 || (c->uid == a.uid && uid == a.uid);
	bool gid_ok = gid == (uint32_t)-1 ||
		      (c->uid == a.uid && (gid == a.gid || ext3_creds_in_group(c, gid)));
	if (uid_ok && gid_ok)
		return 0;
	return err_set(-EPERM, "inode %u: chown to %d:%d: not permitted (uid %u)", a.ino, (int)uid,
		       (int)gid, c->uid);
}

int api_kill_suid(struct nostall_fs *fs, struct ext3_inode *in)
{
	const struct ext3_creds *c = ext3_cred_current(fs->e);
	if (c->noperm)
		return 0;
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	uint16_t m = ext3_creds_kill_suid(c, a.mode, a.gid);
	if (m == a.mode)
		return 0;
	struct ext3_setattr sa = { .valid = EXT3_SET_MODE, .mode = (uint16_t)(m & 07777) };
	return ext3_setattr(in, &sa);
}

static int access_of(struct nostall_fs *fs, struct ext3_inode *in, int mode)
{
	if (mode & ~7)
		return err_set(-EINVAL, "access: bad mode 0%o", mode);
	if ((mode & 2) && !fs->rw) {
		uint16_t t = api_type(in);
		if (t == EXT3_S_IFREG || t == EXT3_S_IFDIR || t == EXT3_S_IFLNK)
			return err_set(-EROFS, "access: the filesystem is mounted read-only");
	}
	return mode ? ext3_permission(in, (unsigned)mode) : 0;
}

int nostall_access(struct nostall_fs *fs, const char *path, unsigned flags, int mode)
{
	struct ext3_inode *in;
	int rc = api_path_inode(fs, path, flags, &in);
	if (rc)
		return rc;
	rc = access_of(fs, in, mode);
	ext3_iput(in);
	return rc;
}

int nostall_access_ino(struct nostall_fs *fs, uint64_t ino, int mode)
{
	struct ext3_inode *in;
	int rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	rc = access_of(fs, in, mode);
	ext3_iput(in);
	return rc;
}

/* ---- new inodes ---- */

int api_new_begin(struct nostall_fs *fs, const struct api_parent *p, uint16_t *mode,
		  struct api_new *n)
{
	memset(n, 0, sizeof *n);
	/* search first (the lookup of the name needs it), then an existing
	 * name is -EEXIST before write permission is asked (may_create) */
	int rc = ext3_permission(p->dir, EXT3_MAY_EXEC);
	if (!rc)
		rc = api_may_change_names(fs, p->dir);
	else
		return rc;
	if (rc == -EACCES) {
		struct ext3_inode *in;
		if (api_parent_lookup(fs, p, &in) == 0) {
			ext3_iput(in);
			return err_set(-EEXIST, "%.*s: file exists", (int)p->len, p->name);
		}
		rc = err_set(-EACCES, "%.*s: cannot create in inode %u: permission denied",
			     (int)p->len, p->name, ext3_inode_ino(p->dir));
	}
	if (rc)
		return rc;
	uint16_t t = *mode & EXT3_S_IFMT;
	const struct ext3_creds *c = ext3_cred_current(fs->e);
	if ((t == EXT3_S_IFCHR || t == EXT3_S_IFBLK) && !c->noperm &&
	    !ext3_creds_capable(c, EXT3_CAP_MKNOD))
		return err_set(-EPERM, "mknod of a device: not permitted (uid %u)", c->uid);
	rc = ext3_acl_inherit(p->dir, mode, c->umask, &n->acl);
	if (rc)
		return rc;
	n->cr.uid = c->uid;
	n->cr.gid = c->gid;
	/* the inherited ACLs first: what the caller gives afterwards wins */
	for (unsigned i = 0; i < n->acl.n; i++)
		n->x[n->cr.nxattrs++] = n->acl.x[i];
	for (unsigned i = 0; i < tl_nxattrs; i++)
		n->x[n->cr.nxattrs++] = tl_xattrs[i];
	n->cr.xattrs = n->cr.nxattrs ? n->x : NULL;
	return 0;
}

void api_new_end(struct api_new *n)
{
	ext3_acl_new_release(&n->acl);
}
