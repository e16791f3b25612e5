/* Public API: the namespace calls by path and by inode number (mkdir,
 * mknod, symlink, link, unlink, rmdir, rename; include/nostall/nostall.h).
 * Each walks to the parent of the last name (api_parent_get, or
 * api_at_parent for the *_at forms), settles what Linux's VFS settles
 * before the filesystem is asked (".", "..", "/", the order of errors), and
 * hands the rest to ext3 (src/extfs/core/ext3_fsops.h), which locks and journals. */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <string.h>

/* ---- creating: regular files and nodes, directories, symlinks ---- */

enum mk_kind { MK_NODE, MK_DIR, MK_SYMLINK };
struct mk {
	enum mk_kind kind;
	uint32_t mode;
	uint64_t rdev;
	const char *target;
};

/* What the VFS refuses before walking the path. */
static int mk_check(struct mk *m)
{
	if (m->kind == MK_SYMLINK) {
		if (!m->target || !*m->target)
			return err_set(-ENOENT, "symlink: empty target");
		if (strlen(m->target) >= NOSTALL_PATH_MAX)
			return err_set(-ENAMETOOLONG, "symlink: target of %zu bytes", strlen(m->target));
		return 0;
	}
	if (m->kind == MK_DIR) {
		m->mode = EXT3_S_IFDIR | (m->mode & 01777); /* vfs_mkdir keeps rwx and sticky */
		return 0;
	}
	uint32_t t = m->mode & EXT3_S_IFMT;
	if (t == 0)
		t = EXT3_S_IFREG;
	if (t == EXT3_S_IFDIR)
		return err_set(-EPERM, "mknod: use mkdir for a directory");
	if (t != EXT3_S_IFREG && t != EXT3_S_IFIFO && t != EXT3_S_IFSOCK && t != EXT3_S_IFCHR &&
	    t != EXT3_S_IFBLK)
		return err_set(-EINVAL, "mknod: bad file type 0%o", t);
	m->mode = t | (m->mode & 07777);
	if (t != EXT3_S_IFCHR && t != EXT3_S_IFBLK)
		m->rdev = 0;
	return 0;
}

static int mk_in(struct nostall_fs *fs, struct api_parent *p, const struct mk *m,
		 struct ext3_inode **out)
{
	uint16_t mode = m->kind == MK_SYMLINK ? (uint16_t)(EXT3_S_IFLNK | 0777) : (uint16_t)m->mode;
	struct api_new n;
	int rc = api_new_begin(fs, p, &mode, &n);
	if (!rc) {
		switch (m->kind) {
		case MK_DIR: rc = ext3_mkdir(p->dir, p->name, p->len, mode, &n.cr, out); break;
		case MK_SYMLINK: rc = ext3_symlink(p->dir, p->name, p->len, m->target, &n.cr, out); break;
		case MK_NODE: rc = ext3_create(p->dir, p->name, p->len, mode, m->rdev, &n.cr, out); break;
		}
	}
	api_new_end(&n);
	return rc;
}

static const char *mk_what(const struct mk *m)
{
	return m->kind == MK_DIR ? "mkdir" : m->kind == MK_SYMLINK ? "symlink" : "mknod";
}

/* An existing last name, or a trailing slash on a non-directory: the
 * filename_create() answers. 0 when the name may be created. */
static int mk_name_check(struct nostall_fs *fs, struct api_parent *p, bool dir)
{
	if (p->kind != API_LAST_NAME)
		return err_set(-EEXIST, "%.*s: file exists", p->len ? (int)p->len : 1,
			       p->len ? p->name : "/");
	if (!p->slash || dir)
		return 0;
	struct ext3_inode *in;
	int rc = api_parent_lookup(fs, p, &in);
	if (rc)
		return rc;
	ext3_iput(in);
	return err_set(-EEXIST, "%.*s: file exists", (int)p->len, p->name);
}

static int mk_path(struct nostall_fs *fs, const char *path, struct mk *m)
{
	int rc = mk_check(m);
	struct api_parent p;
	if (!rc)
		rc = api_check_rw(fs, mk_what(m));
	if (!rc)
		rc = api_parent_get(fs, path, &p);
	if (rc)
		return rc;
	struct ext3_inode *in = NULL;
	rc = mk_name_check(fs, &p, m->kind == MK_DIR);
	if (!rc)
		rc = mk_in(fs, &p, m, &in);
	ext3_iput(in);
	api_parent_put(&p);
	return rc;
}

/* The *_at forms end alike: one lookup reference and the attributes. */
static int at_done(struct nostall_fs *fs, struct ext3_inode *in, struct nostall_stat *st)
{
	int rc = api_lookup_take(fs, in);
	if (!rc && st)
		api_stat_fill(fs, in, st);
	ext3_iput(in);
	return rc;
}

static int mk_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, struct mk *m,
		 struct nostall_stat *st)
{
	int rc = mk_check(m);
	struct api_parent p;
	if (!rc)
		rc = api_check_rw(fs, mk_what(m));
	if (!rc)
		rc = api_at_parent(fs, dir_ino, name, &p);
	if (rc)
		return rc;
	struct ext3_inode *in = NULL;
	rc = mk_name_check(fs, &p, true);
	if (!rc)
		rc = mk_in(fs, &p, m, &in);
	api_parent_put(&p);
	return rc ? rc : at_done(fs, in, st);
}

int nostall_mkdir(struct nostall_fs *fs, const char *path, uint32_t mode)
{
	return mk_path(fs, path, &(struct mk){ .kind = MK_DIR, .mode = mode });
}

int nostall_mknod(struct nostall_fs *fs, const char *path, uint32_t mode, uint64_t rdev)
{
	return mk_path(fs, path, &(struct mk){ .kind = MK_NODE, .mode = mode, .rdev = rdev });
}

int nostall_symlink(struct nostall_fs *fs, const char *target, const char *linkpath)
{
	return mk_path(fs, linkpath, &(struct mk){ .kind = MK_SYMLINK, .target = target });
}

int nostall_mkdir_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint32_t mode,
		     struct nostall_stat *st)
{
	return mk_at(fs, dir_ino, name, &(struct mk){ .kind = MK_DIR, .mode = mode }, st);
}

int nostall_mknod_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint32_t mode,
		     uint64_t rdev, struct nostall_stat *st)
{
	return mk_at(fs, dir_ino, name, &(struct mk){ .kind = MK_NODE, .mode = mode, .rdev = rdev },
		     st);
}

int nostall_symlink_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name,
		       const char *target, struct nostall_stat *st)
{
	return mk_at(fs, dir_ino, name, &(struct mk){ .kind = MK_SYMLINK, .target = target }, st);
}

/* ---- hard links ---- */

/* in gets a new name at p: EEXIST before EPERM, as do_linkat checks. */
static int link_in(struct nostall_fs *fs, struct ext3_inode *in, struct api_parent *p)
{
	int rc = mk_name_check(fs, p, false);
	if (rc)
		return rc;
	struct ext3_inode *old = NULL;
	rc = api_parent_lookup(fs, p, &old);
	ext3_iput(old);
	if (!rc)
		return err_set(-EEXIST, "%.*s: file exists", (int)p->len, p->name);
	if (rc != -ENOENT)
		return rc;
	if (api_type(in) == EXT3_S_IFDIR)
		return err_set(-EPERM, "link: inode %u is a directory", ext3_inode_ino(in));
	rc = api_may_change_names(fs, p->dir);
	return rc ? rc : ext3_link(in, p->dir, p->name, p->len);
}

int nostall_link(struct nostall_fs *fs, const char *oldpath, const char *newpath)
{
	int rc = api_check_rw(fs, "link");
	struct ext3_inode *in = NULL;
	if (!rc)
		rc = api_path_inode(fs, oldpath, NOSTALL_NOFOLLOW, &in);
	if (rc)
		return rc;
	struct api_parent p;
	rc = api_parent_get(fs, newpath, &p);
	if (!rc) {
		rc = link_in(fs, in, &p);
		api_parent_put(&p);
	}
	ext3_iput(in);
	return rc;
}

int nostall_link_at(struct nostall_fs *fs, uint64_t ino, uint64_t dir_ino, const char *name,
		    struct nostall_stat *st)
{
	int rc = api_check_rw(fs, "link");
	struct ext3_inode *in = NULL;
	if (!rc)
		rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	struct api_parent p;
	rc = api_at_parent(fs, dir_ino, name, &p);
	if (!rc) {
		rc = link_in(fs, in, &p);
		api_parent_put(&p);
	}
	if (rc) {
		ext3_iput(in);
		return rc;
	}
	return at_done(fs, in, st);
}

/* ---- removing ---- */

static int rm_in(struct nostall_fs *fs, struct api_parent *p, bool dir)
{
	static const char *const what[] = { "unlink", "rmdir" };
	switch (p->kind) {
	case API_LAST_ROOT:
		return dir ? err_set(-EBUSY, "rmdir: /: the root") :
			     err_set(-EISDIR, "unlink: /: a directory");
	case API_LAST_DOT:
		return dir ? err_set(-EINVAL, "rmdir: '.'") : err_set(-EISDIR, "unlink: '.'");
	case API_LAST_DOTDOT:
		return dir ? err_set(-ENOTEMPTY, "rmdir: '..'") : err_set(-EISDIR, "unlink: '..'");
	case API_LAST_NAME: break;
	}
	int rc;
	if (api_checks_on(fs)) { /* may_delete needs the victim (sticky directories) */
		struct ext3_inode *victim = NULL;
		rc = api_parent_lookup(fs, p, &victim);
		if (!rc)
			rc = api_may_delete(fs, p->dir, victim);
		ext3_iput(victim);
		if (rc && rc != -ENOENT)
			return rc;
	}
	rc = dir ? ext3_rmdir(p->dir, p->name, p->len) : ext3_unlink(p->dir, p->name, p->len);
	if (rc == -ENOENT)
		err_set(rc, "%s: %.*s: no such file or directory", what[dir], (int)p->len, p->name);
	return rc;
}

static int rm_path(struct nostall_fs *fs, const char *path, bool dir)
{
	int rc = api_check_rw(fs, dir ? "rmdir" : "unlink");
	struct api_parent p;
	if (!rc)
		rc = api_parent_get(fs, path, &p);
	if (rc)
		return rc;
	rc = rm_in(fs, &p, dir);
	api_parent_put(&p);
	return rc;
}

static int rm_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, bool dir)
{
	int rc = api_check_rw(fs, dir ? "rmdir" : "unlink");
	struct api_parent p;
	if (!rc)
		rc = api_at_parent(fs, dir_ino, name, &p);
	if (rc)
		return rc;
	rc = rm_in(fs, &p, dir);
	api_parent_put(&p);
	return rc;
}

int nostall_unlink(struct nostall_fs *fs, const char *path)
{
	return rm_path(fs, path, false);
}

int nostall_rmdir(struct nostall_fs *fs, const char *path)
{
	return rm_path(fs, path, true);
}

int nostall_unlink_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name)
{
	return rm_at(fs, dir_ino, name, false);
}

int nostall_rmdir_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name)
{
	return rm_at(fs, dir_ino, name, true);
}

/* ---- rename ---- */

static int rename_flags_check(unsigned flags)
{
	if ((flags & ~(NOSTALL_RENAME_NOREPLACE | NOSTALL_RENAME_EXCHANGE | NOSTALL_RENAME_WHITEOUT)) ||
	    ((flags & NOSTALL_RENAME_EXCHANGE) && (flags & (NOSTALL_RENAME_NOREPLACE | NOSTALL_RENAME_WHITEOUT))))
		return err_set(-EINVAL, "rename: bad flags 0x%x", flags);
	return 0;
}

/* do_renameat2's checks of the last components (kinds; the source's name
 * and existence before the target's name), then ext3. */
static int rename_in(struct nostall_fs *fs, struct api_parent *a, struct api_parent *b,
		     unsigned flags)
{
	if (a->kind != API_LAST_NAME)
		return err_set(-EBUSY, "rename: the source is '.', '..' or '/'");
	if (b->kind != API_LAST_NAME)
		return (flags & NOSTALL_RENAME_NOREPLACE) ?
			       err_set(-EEXIST, "rename: the target exists") :
			       err_set(-EBUSY, "rename: the target is '.', '..' or '/'");
	struct ext3_inode *src = NULL;
	int rc = api_parent_name_check(a);
	if (!rc)
		rc = api_parent_lookup(fs, a, &src);
	bool checks = api_checks_on(fs);
	if (!rc && checks)
		rc = api_may_delete(fs, a->dir, src);
	ext3_iput(src);
	if (!rc)
		rc = api_parent_name_check(b);
	struct ext3_inode *dst = NULL;
	if (!rc && checks && api_parent_lookup(fs, b, &dst) == 0) {
		rc = api_may_delete(fs, b->dir, dst);
		ext3_iput(dst);
	} else if (!rc && checks) {
		rc = api_may_change_names(fs, b->dir);
	}
	return rc ? rc : ext3_rename(a->dir, a->name, a->len, b->dir, b->name, b->len, flags);
}

/* One side of a rename: a path, or a directory number and a name. */
struct rn_side {
	const char *path;
	uint64_t dir;
	const char *name;
};

static int rn_side_get(struct nostall_fs *fs, const struct rn_side *x, struct api_parent *p)
{
	return x->path ? api_parent_walk(fs, x->path, true, p) : api_at_parent(fs, x->dir, x->name, p);
}

static int rename_sides(struct nostall_fs *fs, const struct rn_side *from, const struct rn_side *to,
			unsigned flags)
{
	int rc = rename_flags_check(flags);
	if (!rc)
		rc = api_check_rw(fs, "rename");
	if (!rc && (flags & NOSTALL_RENAME_WHITEOUT) && !api_capable(fs, NOSTALL_CAP_MKNOD))
		rc = err_set(-EPERM, "rename: a whiteout needs CAP_MKNOD");
	struct api_parent a, b;
	if (!rc)
		rc = rn_side_get(fs, from, &a);
	if (rc)
		return rc;
	rc = rn_side_get(fs, to, &b);
	if (!rc) {
		rc = rename_in(fs, &a, &b, flags);
		api_parent_put(&b);
	}
	api_parent_put(&a);
	return rc;
}

int nostall_rename(struct nostall_fs *fs, const char *from, const char *to, unsigned flags)
{
	if (!from || !to)
		return err_set(-EINVAL, "rename: NULL path");
	return rename_sides(fs, &(struct rn_side){ .path = from }, &(struct rn_side){ .path = to },
			    flags);
}

int nostall_rename_at(struct nostall_fs *fs, uint64_t olddir, const char *oldname, uint64_t newdir,
		      const char *newname, unsigned flags)
{
	return rename_sides(fs, &(struct rn_side){ .dir = olddir, .name = oldname },
			    &(struct rn_side){ .dir = newdir, .name = newname }, flags);
}
