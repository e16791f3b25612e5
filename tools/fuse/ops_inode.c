/* FUSE ops on inodes and names: lookup and forget (the library's lookup
 * counts), getattr/setattr, readlink, mknod/mkdir/symlink/link, unlink,
 * rmdir, rename (docs/fuse.md).
 *
 * Permission checks are the kernel's (default_permissions, and POSIX ACLs
 * when the kernel caches them): by the time a request arrives, search and
 * write permission on the directories, the sticky-directory rule, chown
 * and chmod rules and utimensat's rules have been applied. What the kernel
 * leaves to a filesystem is done here or in the library: names over 255
 * bytes (-ENAMETOOLONG), the owner of new inodes (the caller's fsuid/fsgid,
 * a setgid directory's group), the umask or a default ACL on new inodes,
 * and the access ACL's mask on chmod. */
#include "fuse_int.h"

#include <errno.h>
#include <string.h>

void nfuse_stat_to_host(const struct nostall_stat *in, struct stat *out)
{
	memset(out, 0, sizeof *out);
	/* st_ino is what stat(2) shows: the ext3 inode number (2 for the root),
	 * not the FUSE node id the root has (1). */
	out->st_ino = in->ino;
	out->st_mode = in->mode;
	out->st_nlink = in->nlink;
	out->st_uid = in->uid;
	out->st_gid = in->gid;
	out->st_size = (off_t)in->size;
	out->st_blocks = (blkcnt_t)in->blocks;
	out->st_blksize = (blksize_t)in->blksize;
	out->st_rdev = in->rdev;
	out->st_atim.tv_sec = in->atime.sec;
	out->st_atim.tv_nsec = in->atime.nsec;
	out->st_mtim.tv_sec = in->mtime.sec;
	out->st_mtim.tv_nsec = in->mtime.nsec;
	out->st_ctim.tv_sec = in->ctime.sec;
	out->st_ctim.tv_nsec = in->ctime.nsec;
}

void nfuse_entry_fill(struct nfuse *nf, const struct nostall_stat *st, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = nfuse_to_fuse(st->ino);
	e->generation = st->generation;
	nfuse_stat_to_host(st, &e->attr);
	e->attr_timeout = nf->o.attr_timeout;
	e->entry_timeout = nf->o.entry_timeout;
}

void nfuse_reply_entry_ref(fuse_req_t req, const struct nostall_stat *st)
{
	struct nfuse *nf = nfuse_of(req);
	struct fuse_entry_param e;
	nfuse_entry_fill(nf, st, &e);
	/* an interrupted request: the kernel never counted this lookup */
	if (fuse_reply_entry(req, &e) < 0)
		nostall_forget(nf->fs, st->ino, 1);
}

static void cred_from_req(fuse_req_t req, bool with_groups)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct nostall_cred cr = { .uid = c->uid, .gid = c->gid, .umask = c->umask,
				   .caps = c->uid == 0 ? NOSTALL_CAP_ALL : 0,
				   .flags = NOSTALL_CRED_NOPERM };
	if (nfuse_of(req)->o.fakeroot) {
		cr.uid = cr.gid = 0;
		cr.caps = NOSTALL_CAP_ALL;
	}
	/* Supplementary groups are not needed for most requests: the kernel
	 * checked permissions, and a new inode's group is the caller's fsgid
	 * or the setgid directory's. */
	gid_t g[NOSTALL_CRED_GROUPS_MAX];
	uint32_t groups[NOSTALL_CRED_GROUPS_MAX];
	if (with_groups && !nfuse_of(req)->o.fakeroot) {
		int n = fuse_req_getgroups(req, NOSTALL_CRED_GROUPS_MAX, g);
		for (int i = 0; i < n && i < (int)NOSTALL_CRED_GROUPS_MAX; i++)
			groups[cr.ngroups++] = (uint32_t)g[i];
		cr.groups = groups;
	}
	(void)nostall_cred_use(&cr);
}

void nfuse_cred_from_req(fuse_req_t req)
{
	cred_from_req(req, false);
}

void nfuse_cred_from_req_groups(fuse_req_t req)
{
	cred_from_req(req, true);
}

int nfuse_name_check(const char *name)
{
	return strlen(name) > NOSTALL_NAME_MAX ? -ENAMETOOLONG : 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	int rc = nfuse_name_check(name);
	if (!rc)
		rc = nostall_lookup_ref(nf->fs, nfuse_to_ext3(parent), name, &st);
	if (rc == -ENOENT) {
		/* a negative entry: names only change through this mount */
		struct fuse_entry_param e = { .ino = 0, .entry_timeout = nf->o.negative_timeout };
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		nfuse_reply_entry_ref(req, &st);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	nostall_forget(nfuse_of(req)->fs, nfuse_to_ext3(ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct nfuse *nf = nfuse_of(req);
	for (size_t i = 0; i < count; i++)
		nostall_forget(nf->fs, nfuse_to_ext3(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void reply_attr(fuse_req_t req, const struct nostall_stat *st)
{
	struct stat hs;
	nfuse_stat_to_host(st, &hs);
	fuse_reply_attr(req, &hs, nfuse_of(req)->o.attr_timeout);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	struct nfuse_fh *h = fi ? (struct nfuse_fh *)(uintptr_t)fi->fh : NULL;
	int rc = h && h->f ? nostall_fstat(h->f, &st) : nostall_stat_ino(nf->fs, nfuse_to_ext3(ino), &st);
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		reply_attr(req, &st);
}

int nfuse_setid_kill(fuse_req_t req, uint64_t ino)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	int rc = nostall_stat_ino(nf->fs, ino, &st);
	if (rc || !S_ISREG(st.mode) || !(st.mode & (S_ISUID | S_ISGID)))
		return rc;
	uint32_t m = st.mode & 07777;
	m &= ~(uint32_t)S_ISUID;
	if ((m & S_ISGID) && ((m & S_IXGRP) || !nfuse_in_group_or_root(req, st.gid)))
		m &= ~(uint32_t)S_ISGID;
	if (m == (st.mode & 07777))
		return 0;
	struct nostall_setattr sa = { .valid = NOSTALL_SET_MODE, .mode = m };
	return nostall_setattr_ino(nf->fs, ino, &sa, &st);
}

static void ts_of(const struct timespec *t, struct nostall_timespec *o)
{
	o->sec = t->tv_sec;
	o->nsec = (uint32_t)t->tv_nsec;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct nfuse *nf = nfuse_of(req);
	static const struct {
		int fuse;
		unsigned ns;
	} bits[] = {
		{ FUSE_SET_ATTR_MODE, NOSTALL_SET_MODE },   { FUSE_SET_ATTR_UID, NOSTALL_SET_UID },
		{ FUSE_SET_ATTR_GID, NOSTALL_SET_GID },     { FUSE_SET_ATTR_SIZE, NOSTALL_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, NOSTALL_SET_ATIME }, { FUSE_SET_ATTR_MTIME, NOSTALL_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, NOSTALL_SET_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, NOSTALL_SET_MTIME_NOW },
		{ FUSE_SET_ATTR_CTIME, NOSTALL_SET_CTIME },
	};
	struct nostall_setattr sa = { .mode = attr->st_mode & 07777, .uid = attr->st_uid,
				      .gid = attr->st_gid, .size = (uint64_t)attr->st_size };
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (to_set & bits[i].fuse)
			sa.valid |= bits[i].ns;
	if (sa.valid & NOSTALL_SET_ATIME_NOW)
		sa.valid &= ~NOSTALL_SET_ATIME;
	if (sa.valid & NOSTALL_SET_MTIME_NOW)
		sa.valid &= ~NOSTALL_SET_MTIME;
	ts_of(&attr->st_atim, &sa.atime);
	ts_of(&attr->st_mtim, &sa.mtime);
	ts_of(&attr->st_ctim, &sa.ctime);
	(void)fi; /* ftruncate and friends: the same change by number */
	uint64_t e3 = nfuse_to_ext3(ino);
	struct nostall_stat st;
	int rc = 0;
	/* KILLPRIV_V2: a truncate by a caller without CAP_FSETID comes with
	 * FATTR_KILL_SUIDGID (libfuse's FUSE_SET_ATTR_KILL_SUID bit). (chown
	 * drops the bits in the library; no flag comes with it.) */
	if (nf->killpriv_v2 && (to_set & FUSE_SET_ATTR_KILL_SUID) && !(sa.valid & NOSTALL_SET_MODE))
		rc = nfuse_setid_kill(req, e3);
	/* a chmod rewrites the access ACL in the library */
	if (!rc)
		rc = nostall_setattr_ino(nf->fs, e3, &sa, &st);
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		reply_attr(req, &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[NOSTALL_PATH_MAX + 1];
	ssize_t n = nostall_readlink_ino(nfuse_of(req)->fs, nfuse_to_ext3(ino), buf, sizeof buf - 1);
	if (n < 0) {
		nfuse_reply_rc(req, (int)n);
		return;
	}
	buf[n] = 0;
	fuse_reply_readlink(req, buf);
}

/* mknod, mkdir: the library applies the requester's umask or the
 * parent's default ACL (set in the creating transaction, as ext3 does). */
static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct nfuse *nf = nfuse_of(req);
	uint64_t dir = nfuse_to_ext3(parent);
	uint32_t m = mode;
	int rc = nfuse_name_check(name);
	if (rc) {
		nfuse_reply_rc(req, rc);
		return;
	}
	nfuse_cred_from_req(req);
	struct nostall_stat st;
	if (S_ISDIR(m))
		rc = nostall_mkdir_at(nf->fs, dir, name, m, &st);
	else
		rc = nostall_mknod_at(nf->fs, dir, name, m, rdev, &st);
	nostall_cred_reset();
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		nfuse_reply_entry_ref(req, &st);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_node(req, parent, name, mode, rdev);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), 0);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	int rc = nfuse_name_check(name);
	if (!rc) {
		nfuse_cred_from_req(req);
		rc = nostall_symlink_at(nf->fs, nfuse_to_ext3(parent), name, link, &st);
		nostall_cred_reset();
	}
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		nfuse_reply_entry_ref(req, &st);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	int rc = nfuse_name_check(newname);
	if (!rc) {
		nfuse_cred_from_req(req); /* a directory block may be allocated */
		rc = nostall_link_at(nf->fs, nfuse_to_ext3(ino), nfuse_to_ext3(newparent), newname, &st);
		nostall_cred_reset();
	}
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		nfuse_reply_entry_ref(req, &st);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int rc = nfuse_name_check(name);
	if (!rc)
		rc = nostall_unlink_at(nfuse_of(req)->fs, nfuse_to_ext3(parent), name);
	nfuse_reply_rc(req, rc);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int rc = nfuse_name_check(name);
	if (!rc)
		rc = nostall_rmdir_at(nfuse_of(req)->fs, nfuse_to_ext3(parent), name);
	nfuse_reply_rc(req, rc);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	int rc = nfuse_name_check(name);
	if (!rc)
		rc = nfuse_name_check(newname);
	/* RENAME_NOREPLACE (1), RENAME_EXCHANGE (2) and RENAME_WHITEOUT (4,
	 * overlayfs: the kernel has checked CAP_MKNOD) are the library's
	 * values; the whiteout is owned by the caller */
	if (!rc && (flags & ~(unsigned)(NOSTALL_RENAME_NOREPLACE | NOSTALL_RENAME_EXCHANGE |
					NOSTALL_RENAME_WHITEOUT)))
		rc = -EINVAL;
	if (!rc) {
		nfuse_cred_from_req(req); /* a directory block may be allocated */
		rc = nostall_rename_at(nfuse_of(req)->fs, nfuse_to_ext3(parent), name,
				       nfuse_to_ext3(newparent), newname, flags);
		nostall_cred_reset();
	}
	nfuse_reply_rc(req, rc);
}

void nfuse_ops_inode(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = op_lookup;
	ops->forget = op_forget;
	ops->forget_multi = op_forget_multi;
	ops->getattr = op_getattr;
	ops->setattr = op_setattr;
	ops->readlink = op_readlink;
	ops->mknod = op_mknod;
	ops->mkdir = op_mkdir;
	ops->symlink = op_symlink;
	ops->link = op_link;
	ops->unlink = op_unlink;
	ops->rmdir = op_rmdir;
	ops->rename = op_rename;
}
