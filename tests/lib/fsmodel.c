/* In-memory POSIX tree model: inodes, path walk, namespace operations and
 * open/close (fsmodel.h). Contents, attributes and xattrs: fsmodel_data.c.
 *
 * Error precedence follows the Linux VFS (fs/namei.c) with ext3 below it:
 * the parent walk first (ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG from the
 * lookup of an over-long component), then the last component, then the
 * operation's own checks. */
#define FSMODEL_INTERNAL
#include "fsmodel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- inodes and directories ---- */

static struct fsm_inode *inode_new(struct fsmodel *m, uint32_t mode)
{
	struct fsm_inode *ip = fst_xcalloc(1, sizeof *ip);
	ip->ino = m->next_ino++;
	ip->mode = mode;
	ip->uid = m->uid;
	ip->gid = m->gid;
	ip->next = m->all;
	if (m->all)
		m->all->prev = ip;
	m->all = ip;
	return ip;
}

void fsm_inode_put(struct fsmodel *m, struct fsm_inode *ip)
{
	if (!ip || ip->nlink || ip->opens || ip == m->root)
		return;
	if (ip->prev)
		ip->prev->next = ip->next;
	else
		m->all = ip->next;
	if (ip->next)
		ip->next->prev = ip->prev;
	fsm_inode_free_data(m, ip);
	free(ip);
}

static int dir_index(const struct fsm_inode *d, const char *name, size_t len)
{
	for (size_t i = 0; i < d->nents; i++)
		if (strlen(d->ents[i].name) == len && !memcmp(d->ents[i].name, name, len))
			return (int)i;
	return -1;
}

static int dir_index_of(const struct fsm_inode *d, const struct fsm_inode *ip, const char *name,
			size_t len)
{
	int i = dir_index(d, name, len);
	return (i >= 0 && d->ents[i].ip == ip) ? i : -1;
}

static void dir_add(struct fsm_inode *d, const char *name, size_t len, struct fsm_inode *ip)
{
	if (d->nents == d->ents_cap) {
		d->ents_cap = d->ents_cap ? 2 * d->ents_cap : 8;
		d->ents = fst_xrealloc(d->ents, d->ents_cap * sizeof *d->ents);
	}
	d->ents[d->nents].name = fst_xstrndup(name, len);
	d->ents[d->nents].ip = ip;
	d->nents++;
	d->known &= ~FST_MTIME_KNOWN;
}

static void dir_remove(struct fsm_inode *d, size_t i)
{
	free(d->ents[i].name);
	d->ents[i] = d->ents[--d->nents];
	d->known &= ~FST_MTIME_KNOWN;
}

/* ---- path walk ---- */

static int lookup_comp(struct fsm_inode *dir, const char *name, size_t len, struct fsm_inode **out)
{
	if (len > FSM_NAME_MAX)
		return -ENAMETOOLONG; /* ext3_lookup refuses before searching */
	if (len == 1 && name[0] == '.') {
		*out = dir;
		return 0;
	}
	if (len == 2 && name[0] == '.' && name[1] == '.') {
		*out = dir->parent;
		return 0;
	}
	int i = dir_index(dir, name, len);
	*out = i >= 0 ? dir->ents[i].ip : NULL;
	return 0;
}

static int walk_full(struct fsmodel *m, struct fsm_inode *start, const char *path, bool follow,
		     int *links, struct fsm_loc *loc);

/* Following a link reads it: Linux touches its atime (pick_link). */
static void link_followed(struct fsmodel *m, struct fsm_inode *link)
{
	if (!m->quiet)
		link->known &= ~FST_ATIME_KNOWN;
}

/* Every component but the last; loc gets the parent and the last name (or
 * dir NULL and ip = the start directory for "/"). Intermediate symlinks
 * are followed relative to the directory holding them. */
static int walk_parent(struct fsmodel *m, struct fsm_inode *start, const char *path, int *links,
		       struct fsm_loc *loc)
{
	if (!*path)
		return -ENOENT;
	if (strlen(path) >= 4096)
		return -ENAMETOOLONG;
	struct fsm_inode *cur = path[0] == '/' ? m->root : start;
	const char *p = path;
	memset(loc, 0, sizeof *loc);
	while (*p == '/')
		p++;
	if (!*p) {
		loc->ip = cur;
		loc->name = p;
		return 0;
	}
	for (;;) {
		const char *e = p;
		while (*e && *e != '/')
			e++;
		const char *q = e;
		while (*q == '/')
			q++;
		if (!S_ISDIR(cur->mode))
			return -ENOTDIR;
		if (!*q) {
			loc->dir = cur;
			loc->name = p;
			loc->namelen = (size_t)(e - p);
			return 0;
		}
		struct fsm_inode *child;
		int rc = lookup_comp(cur, p, (size_t)(e - p), &child);
		if (rc)
			return rc;
		if (!child)
			return -ENOENT;
		if (S_ISLNK(child->mode)) {
			struct fsm_loc sub;
			link_followed(m, child);
			if (++*links > FSM_SYMLOOP_MAX)
				return -ELOOP;
			rc = walk_full(m, cur, child->target, true, links, &sub);
			if (rc)
				return rc;
			if (!sub.ip)
				return -ENOENT;
			child = sub.ip;
		}
		cur = child;
		p = q;
	}
}

static int walk_full(struct fsmodel *m, struct fsm_inode *start, const char *path, bool follow,
		     int *links, struct fsm_loc *loc)
{
	for (;;) {
		int rc = walk_parent(m, start, path, links, loc);
		if (rc || !loc->dir)
			return rc;
		rc = lookup_comp(loc->dir, loc->name, loc->namelen, &loc->ip);
		if (rc || !follow || !loc->ip || !S_ISLNK(loc->ip->mode))
			return rc;
		link_followed(m, loc->ip);
		if (++*links > FSM_SYMLOOP_MAX)
			return -ELOOP;
		start = loc->dir;
		path = loc->ip->target;
	}
}

int fsm_walk(struct fsmodel *m, const char *path, bool follow, struct fsm_loc *loc)
{
	int links = 0;
	return walk_full(m, m->root, path, follow, &links, loc);
}

int fsm_resolve(struct fsmodel *m, const char *path, bool follow, struct fsm_inode **out)
{
	struct fsm_loc loc;
	int rc = fsm_walk(m, path, follow, &loc);
	if (rc)
		return rc;
	if (!loc.ip)
		return -ENOENT;
	*out = loc.ip;
	return 0;
}

/* Parent walk plus lookup of the last name, no following: what the
 * creating and removing calls start with (filename_create, do_unlinkat). */
static int walk_last(struct fsmodel *m, const char *path, struct fsm_loc *loc)
{
	return fsm_walk(m, path, false, loc);
}

static struct fsmodel *model_of(struct fs_target *t)
{
	return t->priv;
}

/* A new inode linked at loc (absent name in an existing directory), with
 * the owner rules of inode_init_owner: a setgid directory passes on its
 * group, and its setgid bit to subdirectories. */
static struct fsm_inode *create_at(struct fsmodel *m, struct fsm_loc *loc, uint32_t mode)
{
	struct fsm_inode *ip = inode_new(m, mode);
	if (loc->dir->mode & S_ISGID) {
		ip->gid = loc->dir->gid;
		if (S_ISDIR(mode))
			ip->mode |= S_ISGID;
	}
	dir_add(loc->dir, loc->name, loc->namelen, ip);
	if (S_ISDIR(mode)) {
		ip->nlink = 2;
		ip->parent = loc->dir;
		loc->dir->nlink++;
	} else {
		ip->nlink = 1;
	}
	return ip;
}

/* ---- namespace operations ---- */

static int op_mkdir(struct fs_target *t, const char *path, uint32_t mode)
{
	struct fsmodel *m = model_of(t);
	struct fsm_loc loc;
	int rc = walk_last(m, path, &loc);
	if (rc)
		return rc;
	if (!loc.dir || loc.ip)
		return -EEXIST;
	create_at(m, &loc, S_IFDIR | (mode & 01777)); /* vfs_mkdir keeps rwx and sticky */
	return 0;
}

static int op_mknod(struct fs_target *t, const char *path, uint32_t mode, uint64_t rdev)
{
	struct fsmodel *m = model_of(t);
	struct fsm_loc loc;
	uint32_t type = mode & S_IFMT;
	if (type == 0)
		type = S_IFREG;
	if (type == S_IFDIR)
		return -EPERM;
	int rc = walk_last(m, path, &loc);
	if (rc)
		return rc;
	if (!loc.dir || loc.ip)
		return -EEXIST;
	struct fsm_inode *ip = create_at(m, &loc, type | (mode & 07777));
	if (S_ISCHR(type) || S_ISBLK(type))
		ip->rdev = rdev;
	return 0;
}

static int op_symlink(struct fs_target *t, const char *target, const char *path)
{
	struct fsmodel *m = model_of(t);
	struct fsm_loc loc;
	if (!*target)
		return -ENOENT; /* getname("") */
	if (strlen(target) >= 4096)
		return -ENAMETOOLONG;
	int rc = walk_last(m, path, &loc);
	if (rc)
		return rc;
	if (!loc.dir || loc.ip)
		return -EEXIST;
	struct fsm_inode *ip = create_at(m, &loc, S_IFLNK | 0777);
	ip->target = fst_xstrdup(target);
	ip->size = strlen(target);
	return 0;
}

static int op_link(struct fs_target *t, const char *from, const char *to)
{
	struct fsmodel *m = model_of(t);
	struct fsm_inode *ip;
	struct fsm_loc loc;
	int rc = fsm_resolve(m, from, false, &ip);
	if (rc)
		return rc;
	rc = walk_last(m, to, &loc);
	if (rc)
		return rc;
	if (!loc.dir || loc.ip)
		return -EEXIST;
	if (S_ISDIR(ip->mode))
		return -EPERM;
	dir_add(loc.dir, loc.name, loc.namelen, ip);
	ip->nlink++;
	return 0;
}

static int op_unlink(struct fs_target *t, const char *path)
{
	struct fsmodel *m = model_of(t);
	struct fsm_loc loc;
	int rc = walk_last(m, path, &loc);
	if (rc)
		return rc;
	if (!loc.dir)
		return -EISDIR;
	if (!loc.ip)
		return -ENOENT;
	if (S_ISDIR(loc.ip->mode))
		return -EISDIR;
	dir_remove(loc.dir, (size_t)dir_index_of(loc.dir, loc.ip, loc.name, loc.namelen));
	loc.ip->nlink--;
	fsm_inode_put(m, loc.ip);
	return 0;
}

/* A directory leaving the tree: no links, its own parent (so ancestor
 * walks stop), freed once no handle holds it. */
static void dir_detach(struct fsm_inode *parent, struct fsm_inode *d)
{
	d->nlink = 0;
	d->parent = d;
	parent->nlink--;
}

static int op_rmdir(struct fs_target *t, const char *path)
{
	struct fsmodel *m = model_of(t);
	struct fsm_loc loc;
	int rc = walk_last(m, path, &loc);
	if (rc)
		return rc;
	if (!loc.dir)
		return -EBUSY;
	if (!loc.ip)
		return -ENOENT;
	if (!S_ISDIR(loc.ip->mode))
		return -ENOTDIR;
	if (loc.ip->nents)
		return -ENOTEMPTY;
	dir_remove(loc.dir, (size_t)dir_index_of(loc.dir, loc.ip, loc.name, loc.namelen));
	dir_detach(loc.dir, loc.ip);
	fsm_inode_put(m, loc.ip);
	return 0;
}

/* lock_rename()'s trap: when one parent is an ancestor of the other, the
 * child of the ancestor on the way down to the other; NULL otherwise. */
static struct fsm_inode *rename_trap(struct fsm_inode *p1, struct fsm_inode *p2)
{
	if (p1 == p2)
		return NULL;
	for (struct fsm_inode *c = p1; c->parent != c; c = c->parent)
		if (c->parent == p2)
			return c;
	for (struct fsm_inode *c = p2; c->parent != c; c = c->parent)
		if (c->parent == p1)
			return c;
	return NULL;
}

static void rename_exchange(struct fsm_loc *a, struct fsm_loc *b)
{
	int ai = dir_index_of(a->dir, a->ip, a->name, a->namelen);
	int bi = dir_index_of(b->dir, b->ip, b->name, b->namelen);
	a->dir->ents[ai].ip = b->ip;
	b->dir->ents[bi].ip = a->ip;
	a->dir->known &= ~FST_MTIME_KNOWN;
	b->dir->known &= ~FST_MTIME_KNOWN;
	if (a->dir == b->dir)
		return;
	bool adir = S_ISDIR(a->ip->mode), bdir = S_ISDIR(b->ip->mode);
	if (adir)
		a->ip->parent = b->dir;
	if (bdir)
		b->ip->parent = a->dir;
	if (adir && !bdir) {
		a->dir->nlink--;
		b->dir->nlink++;
	} else if (bdir && !adir) {
		b->dir->nlink--;
		a->dir->nlink++;
	}
}

static void rename_move(struct fsmodel *m, struct fsm_loc *a, struct fsm_loc *b)
{
	struct fsm_inode *victim = b->ip;
	int ai = dir_index_of(a->dir, a->ip, a->name, a->namelen);
	if (victim) {
		int bi = dir_index_of(b->dir, victim, b->name, b->namelen);
		b->dir->ents[bi].ip = a->ip;
		b->dir->known &= ~FST_MTIME_KNOWN;
		if (S_ISDIR(victim->mode))
			dir_detach(b->dir, victim);
		else
			victim->nlink--;
	} else {
		dir_add(b->dir, b->name, b->namelen, a->ip);
	}
	dir_remove(a->dir, (size_t)ai);
	if (S_ISDIR(a->ip->mode) && a->dir != b->dir) {
		a->dir->nlink--;
		b->dir->nlink++;
		a->ip->parent = b->dir;
	}
	fsm_inode_put(m, victim);
}

static int op_rename(struct fs_target *t, const char *from, const char *to, unsigned flags)
{
	struct fsmodel *m = model_of(t);
	struct fsm_loc a, b;
	int links = 0;
	if ((flags & ~(FST_RENAME_NOREPLACE | FST_RENAME_EXCHANGE)) ||
	    flags == (FST_RENAME_NOREPLACE | FST_RENAME_EXCHANGE))
		return -EINVAL;
	/* both parents, then both last components (do_renameat2) */
	int rc = walk_parent(m, m->root, from, &links, &a);
	if (rc)
		return rc;
	links = 0;
	rc = walk_parent(m, m->root, to, &links, &b);
	if (rc)
		return rc;
	if (!a.dir || !b.dir)
		return -EBUSY;
	rc = lookup_comp(a.dir, a.name, a.namelen, &a.ip);
	if (rc)
		return rc;
	if (!a.ip)
		return -ENOENT;
	rc = lookup_comp(b.dir, b.name, b.namelen, &b.ip);
	if (rc)
		return rc;
	if ((flags & FST_RENAME_NOREPLACE) && b.ip)
		return -EEXIST;
	if ((flags & FST_RENAME_EXCHANGE) && !b.ip)
		return -ENOENT;
	struct fsm_inode *trap = rename_trap(a.dir, b.dir);
	if (a.ip == trap)
		return -EINVAL; /* a directory into its own subtree */
	if (b.ip && b.ip == trap)
		return (flags & FST_RENAME_EXCHANGE) ? -EINVAL : -ENOTEMPTY;
	if (a.ip == b.ip)
		return 0; /* two links of one inode: nothing happens */
	a.ip->known &= ~FST_MTIME_KNOWN;
	if (flags & FST_RENAME_EXCHANGE) {
		b.ip->known &= ~FST_MTIME_KNOWN;
		rename_exchange(&a, &b);
		return 0;
	}
	if (b.ip) {
		bool adir = S_ISDIR(a.ip->mode), bdir = S_ISDIR(b.ip->mode);
		if (adir && !bdir)
			return -ENOTDIR;
		if (!adir && bdir)
			return -EISDIR;
		if (bdir && b.ip->nents)
			return -ENOTEMPTY;
	}
	rename_move(m, &a, &b);
	return 0;
}

/* ---- open/close ---- */

static int handle_new(struct fsmodel *m, struct fsm_inode *ip, int oflags)
{
	size_t h = 0;
	while (h < m->nhandles && m->handles[h].used)
		h++;
	if (h == m->nhandles) {
		m->nhandles = m->nhandles ? 2 * m->nhandles : 16;
		m->handles = fst_xrealloc(m->handles, m->nhandles * sizeof *m->handles);
		memset(m->handles + h, 0, (m->nhandles - h) * sizeof *m->handles);
	}
	m->handles[h] = (struct fsm_handle){ .ip = ip, .oflags = oflags, .used = true };
	ip->opens++;
	return (int)h;
}

struct fsm_handle *fsm_handle_get(struct fsmodel *m, int h)
{
	if (h < 0 || (size_t)h >= m->nhandles || !m->handles[h].used)
		return NULL;
	return &m->handles[h];
}

/* path_openat: a final symlink is followed (also with O_CREAT, which then
 * creates the file the link names) unless O_NOFOLLOW (ELOOP) or
 * O_CREAT|O_EXCL (EEXIST). */
static int op_open(struct fs_target *t, const char *path, int oflags, uint32_t mode)
{
	struct fsmodel *m = model_of(t);
	struct fsm_inode *start = m->root, *ip;
	struct fsm_loc loc;
	bool created = false;
	int links = 0, acc = oflags & O_ACCMODE;
	bool creat = oflags & O_CREAT, excl = creat && (oflags & O_EXCL);
	for (;;) {
		int rc = walk_parent(m, start, path, &links, &loc);
		if (rc)
			return rc;
		if (!loc.dir) {
			ip = loc.ip;
			break;
		}
		rc = lookup_comp(loc.dir, loc.name, loc.namelen, &ip);
		if (rc)
			return rc;
		if (ip && S_ISLNK(ip->mode)) {
			if (excl)
				return -EEXIST;
			if (oflags & O_NOFOLLOW)
				return -ELOOP;
			link_followed(m, ip);
			if (++links > FSM_SYMLOOP_MAX)
				return -ELOOP;
			start = loc.dir;
			path = ip->target;
			continue;
		}
		if (ip && excl)
			return -EEXIST;
		if (!ip) {
			if (!creat)
				return -ENOENT;
			ip = create_at(m, &loc, S_IFREG | (mode & 07777));
			created = true;
		}
		break;
	}
	if (S_ISDIR(ip->mode) && (creat || acc != O_RDONLY))
		return -EISDIR;
	if ((oflags & O_TRUNC) && !created && S_ISREG(ip->mode)) {
		fsm_data_truncate(m, ip, 0);
		ip->known &= ~FST_MTIME_KNOWN;
	}
	return handle_new(m, ip, oflags);
}

static int op_close(struct fs_target *t, int h)
{
	struct fsmodel *m = model_of(t);
	struct fsm_handle *fh = fsm_handle_get(m, h);
	if (!fh)
		return -EBADF;
	struct fsm_inode *ip = fh->ip;
	fh->used = false;
	ip->opens--;
	fsm_inode_put(m, ip);
	return 0;
}

/* ---- model lifetime and queries ---- */

static void op_destroy(struct fs_target *t)
{
	struct fsmodel *m = model_of(t);
	while (m->all) {
		struct fsm_inode *ip = m->all;
		m->all = ip->next;
		fsm_inode_free_data(m, ip);
		free(ip);
	}
	free(m->handles);
	free(m);
}

static const struct fst_ops fsm_ops = {
	.mkdir = op_mkdir,
	.mknod = op_mknod,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.truncate = fsm_op_truncate,
	.chmod = fsm_op_chmod,
	.chown = fsm_op_chown,
	.utimens = fsm_op_utimens,
	.stat = fsm_op_stat,
	.readlink = fsm_op_readlink,
	.readdir = fsm_op_readdir,
	.setxattr = fsm_op_setxattr,
	.removexattr = fsm_op_removexattr,
	.getxattr = fsm_op_getxattr,
	.listxattr = fsm_op_listxattr,
	.open = op_open,
	.close = op_close,
	.read = fsm_op_read,
	.write = fsm_op_write,
	.pread = fsm_op_pread,
	.pwrite = fsm_op_pwrite,
	.ftruncate = fsm_op_ftruncate,
	.fsync = fsm_op_fsync,
	.fstat = fsm_op_fstat,
	.data_ranges = fsm_op_data_ranges,
	.checkpoint = NULL,
	.destroy = op_destroy,
};

struct fsmodel *fsm_new(uint32_t root_mode, uint32_t uid, uint32_t gid)
{
	struct fsmodel *m = fst_xcalloc(1, sizeof *m);
	m->target = (struct fs_target){ .ops = &fsm_ops, .name = "model", .caps = FST_CAP_NSEC | FST_CAP_MODEL, .priv = m };
	m->next_ino = 2; /* like ext3's root */
	m->uid = uid;
	m->gid = gid;
	m->root = inode_new(m, S_IFDIR | (root_mode & 07777));
	m->root->nlink = 2;
	m->root->parent = m->root;
	return m;
}

struct fs_target *fsm_target(struct fsmodel *m)
{
	return &m->target;
}

struct fsmodel *fsm_from_target(struct fs_target *t)
{
	return t && t->ops == &fsm_ops ? t->priv : NULL;
}

void fsm_set_cred(struct fsmodel *m, uint32_t uid, uint32_t gid)
{
	m->uid = uid;
	m->gid = gid;
}

static void info_fill(const struct fsm_inode *ip, struct fsm_info *out)
{
	*out = (struct fsm_info){ .ino = ip->ino, .mode = ip->mode, .nlink = ip->nlink,
				  .size = ip->size, .nentries = ip->nents, .nxattrs = ip->nxattrs,
				  .xattr_bytes = fsm_xattr_bytes(ip) };
}

/* Resolve for a query: no atime effects. */
static int quiet_resolve(struct fsmodel *m, const char *path, bool follow, struct fsm_inode **ip)
{
	m->quiet = true;
	int rc = fsm_resolve(m, path, follow, ip);
	m->quiet = false;
	return rc;
}

int fsm_query(struct fsmodel *m, const char *path, bool follow, struct fsm_info *out)
{
	struct fsm_inode *ip;
	int rc = quiet_resolve(m, path, follow, &ip);
	if (rc)
		return rc;
	info_fill(ip, out);
	return 0;
}

int fsm_query_handle(struct fsmodel *m, int h, struct fsm_info *out)
{
	struct fsm_handle *fh = fsm_handle_get(m, h);
	if (!fh)
		return -EBADF;
	info_fill(fh->ip, out);
	return 0;
}

const char *fsm_entry_name(struct fsmodel *m, const char *path, size_t i)
{
	struct fsm_inode *ip;
	if (quiet_resolve(m, path, true, &ip) || !S_ISDIR(ip->mode) || i >= ip->nents)
		return NULL;
	return ip->ents[i].name;
}

const char *fsm_xattr_name(struct fsmodel *m, const char *path, bool nofollow, size_t i)
{
	struct fsm_inode *ip;
	if (quiet_resolve(m, path, !nofollow, &ip) || i >= ip->nxattrs)
		return NULL;
	return ip->xattrs[i].name;
}

uint64_t fsm_bytes(const struct fsmodel *m)
{
	return m->bytes;
}

bool fsm_ino_alive(const struct fsmodel *m, uint64_t ino)
{
	for (const struct fsm_inode *ip = m->all; ip; ip = ip->next)
		if (ip->ino == ino)
			return true;
	return false;
}
