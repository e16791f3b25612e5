/* ext3 namespace operations for the layer above (ext3_fsops.h, "names"):
 * create (regular files, device nodes, fifos, sockets), mkdir, symlink,
 * link, unlink, rmdir and rename. See docs/write-names.md.
 *
 * Every operation is one journal handle: the directory entries, the link
 * counts, the new inode and the orphan list change in one transaction, so a
 * crash leaves all of it or none.
 *
 * Locking (write.h's order): fs->rename_lock for a cross-directory rename,
 * then the directories involved as writers in inode-number order, then the
 * other inodes (victims, the inode linked) in inode-number order, then the
 * handle (all but the first of a set only tried, with a back-off: see
 * lockset_lock). The names are looked up first without locks (to learn which
 * inodes to lock), then again under the locks; if the answer changed in
 * between, everything is dropped and the operation starts over. An inode
 * allocated here is locked after the handle started: nobody else can see it
 * yet. Inodes are put only after the handle stopped and the locks went,
 * because the last put of an unlinked inode frees it (its own handle). */
#include "extfs/dir/dir_int.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/write.h"
#include "extfs/core/data_ops.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#define NAMEI_LINK_MAX 32000 /* EXT3_LINK_MAX */
#define NAMEI_SYMLINK_FAST 60 /* bytes in i_block; shorter targets live there */

static bool is_dir(uint16_t mode) { return (mode & EXT3_S_IFMT) == EXT3_S_IFDIR; }

/* dir_nlink (ext4): 65000 links (EXT4_LINK_MAX); an indexed directory
 * past it counts 1 ("many"), as the kernel's ext4_inc_count, instead of
 * -EMLINK. Without it ext3's 32000 and -EMLINK. */
#define NAMEI_LINK_MAX4 65000
static bool dir_nlink(const struct ext3_fs *fs) { return fs->ro_compat & EXT4_FEATURE_RO_COMPAT_DIR_NLINK; }
static unsigned link_max(const struct ext3_fs *fs) { return dir_nlink(fs) ? NAMEI_LINK_MAX4 : NAMEI_LINK_MAX; }
static bool dir_links_full(const struct ext3_inode *d)
{
	return !(dir_nlink(d->fs) && ext3_dir_is_dx(d->fs, d)) && d->a.links >= link_max(d->fs);
}

/* One link more (or less) for a directory gaining (losing) a subdirectory. */
static void dir_links(struct ext3_inode *d, int delta)
{
	if (delta > 0 || d->a.links > 2)
		d->a.links = (uint16_t)(d->a.links + delta);
	if (delta > 0 && dir_nlink(d->fs) && ext3_dir_is_dx(d->fs, d) &&
	    (d->a.links > NAMEI_LINK_MAX4 || d->a.links == 2))
		d->a.links = 1;
}

static void touch(int64_t *sec, uint32_t *ns) { ext3_now(sec, ns); }

/* 1 for ".", 2 for "..", else 0. */
static int name_dots(const char *name, size_t len)
{
	if (len == 1 && name[0] == '.')
		return 1;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return 2;
	return 0;
}

static int name_check(const char *name, size_t len)
{
	if (len == 0)
		return err_set(-ENOENT, "ext3: empty name");
	if (len > EXT3_NAME_LEN)
		return err_set(-ENAMETOOLONG, "ext3: name of %zu bytes (at most %d)", len,
			       EXT3_NAME_LEN);
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return err_set(-EINVAL, "ext3: name %.*s has a '/' or a NUL", (int)len, name);
	return 0;
}

/* A directory that can take a change (dir->lock held). */
static int dir_usable(const struct ext3_inode *dir)
{
	if (!is_dir(dir->a.mode))
		return err_set(-ENOTDIR, "ext3: inode %u is not a directory", dir->ino);
	if (dir->a.links == 0)
		return err_set(-ENOENT, "ext3: directory inode %u was removed", dir->ino);
	return 0;
}

/* Linux refuses to change an immutable inode or remove an append-only one. */
static int not_frozen(const struct ext3_inode *in, uint32_t flags)
{
	if (in && (in->a.flags & flags))
		return err_set(-EPERM, "ext3: inode %u is immutable or append-only", in->ino);
	return 0;
}

/* Look name up in dir (locked or not): *ino 0 when absent. */
static int lookup(struct ext3_inode *dir, const char *name, size_t len, bool locked,
		  uint32_t *ino)
{
	*ino = 0;
	uint64_t lblk;
	int rc = locked ? ext3_dir_find_locked(dir->fs, dir, name, len, &lblk, ino, NULL)
			: ext3_dir_lookup(dir->fs, dir, name, len, ino, NULL);
	if (rc == -ENOENT) {
		*ino = 0;
		return 0;
	}
	return rc;
}

/* dir can take a new entry called name: a live, changeable directory
 * without that name (dir->lock held for writing). */
static int dir_name_free(struct ext3_inode *dir, const char *name, size_t len)
{
	uint32_t ino;
	int rc = dir_usable(dir);
	if (!rc)
		rc = not_frozen(dir, EXT3_IMMUTABLE_FL);
	if (!rc)
		rc = lookup(dir, name, len, true, &ino);
	if (!rc && ino)
		rc = err_set(-EEXIST, "ext3: %.*s exists", (int)len, name);
	return rc;
}

/* Write the directory's times and the inode (a change of its entries). A
 * chattr +D (or +S) directory makes the change synchronous: the handle's
 * stop waits for its commit (2.6.30's IS_DIRSYNC). */
static int dir_changed(struct jbd_handle *h, struct ext3_inode *dir)
{
	if (dir->a.flags & (EXT3_DIRSYNC_FL | EXT3_SYNC_FL))
		ext3_handle_set_sync(h);
	touch(&dir->a.mtime, &dir->a.mtime_ns);
	dir->a.ctime = dir->a.mtime;
	dir->a.ctime_ns = dir->a.mtime_ns;
	return ext3_mark_inode_dirty(h, dir);
}

static int stop(struct jbd_handle *h, int rc)
{
	int src = ext3_journal_stop(h);
	return rc ? rc : src;
}

/* ---- lock sets: up to four inodes locked in write.h's order ---- */

struct lockset {
	struct ext3_inode *v[4];
	bool dir[4];
	unsigned n;
};

static void lockset_add(struct lockset *ls, struct ext3_inode *in)
{
	if (!in)
		return;
	for (unsigned i = 0; i < ls->n; i++)
		if (ls->v[i] == in)
			return;
	ls->dir[ls->n] = is_dir(ext3_inode_mode(in));
	ls->v[ls->n++] = in;
}

/* Directories first, each class by inode number (insertion sort). */
static void lockset_lock(struct lockset *ls)
{
	for (unsigned i = 1; i < ls->n; i++) {
		for (unsigned j = i; j > 0; j--) {
			bool swap = ls->dir[j] != ls->dir[j - 1] ? ls->dir[j]
								 : ls->v[j]->ino < ls->v[j - 1]->ino;
			if (!swap)
				break;
			struct ext3_inode *t = ls->v[j];
			bool td = ls->dir[j];
			ls->v[j] = ls->v[j - 1];
			ls->dir[j] = ls->dir[j - 1];
			ls->v[j - 1] = t;
			ls->dir[j - 1] = td;
		}
	}
	/* The first lock is waited for holding nothing; the others are only
	 * tried. A thread allocating an inode holds its directory and then
	 * locks the new inode, whose number may be lower than the directory's
	 * and may still be known to another thread from a stale lookup (the
	 * number was freed and reused): waiting for the others in order could
	 * then close a cycle. On a busy lock, let go of everything, wait for
	 * that one alone and start over. */
	for (;;) {
		ext3_inode_wrlock(ls->v[0]);
		unsigned i = 1;
		while (i < ls->n && ext3_inode_trywrlock(ls->v[i]) == 0)
			i++;
		if (i == ls->n)
			return;
		for (unsigned k = i; k > 0; k--)
			ext3_inode_unlock(ls->v[k - 1]);
		ext3_inode_wrlock(ls->v[i]);
		ext3_inode_unlock(ls->v[i]);
	}
}

static void lockset_unlock(struct lockset *ls)
{
	for (unsigned i = ls->n; i > 0; i--)
		ext3_inode_unlock(ls->v[i - 1]);
	ls->n = 0;
}

/* ---- creating inodes ---- */

/* What a new inode is to be. */
struct newspec {
	uint16_t mode;
	uint64_t rdev;          /* device nodes (glibc's dev_t encoding) */
	const char *target;     /* symlinks */
	size_t tlen;
};

/* Device number into i_block as ext3 writes it: the old 8:8 encoding in
 * i_block[0] when both fit, else the new 12:20 one in i_block[1]. */
static void set_rdev(struct ext3_inode *in, uint32_t maj, uint32_t min)
{
	if (maj < 256 && min < 256) {
		in->a.block[0] = maj << 8 | min;
		in->a.block[1] = 0;
	} else {
		in->a.block[0] = 0;
		in->a.block[1] = (min & 0xffu) | maj << 8 | (min & ~0xffu) << 12;
		in->a.block[2] = 0;
	}
}

static void set_size(struct ext3_inode *in, uint64_t size)
{
	in->i_size = in->i_disksize = in->a.size = size;
}

/* A symlink's target: in i_block when shorter than 60 bytes (i_blocks 0),
 * else in one data block. ext3 journals the data of everything but regular
 * files, so that block goes through the journal as metadata, in this
 * handle: the link is complete or absent after a crash. */
static int set_symlink(struct jbd_handle *h, struct ext3_inode *in, const char *target,
		       size_t len)
{
	if (len < NAMEI_SYMLINK_FAST) {
		in->a.flags &= ~(uint32_t)EXT4_EXTENTS_FL; /* the target, not a tree, in i_block */
		uint8_t raw[NAMEI_SYMLINK_FAST] = {0};
		memcpy(raw, target, len);
		for (int i = 0; i < EXT3_N_BLOCKS; i++) {
			uint32_t w;
			memcpy(&w, raw + 4 * i, 4);
			in->a.block[i] = le32_to_cpu(w); /* stored back little-endian */
		}
		set_size(in, len);
		return 0;
	}
	uint64_t phys;
	uint32_t count;
	bool is_new;
	int rc = ext3_get_blocks(h, in, 0, 1, true, &phys, &count, &is_new);
	if (rc)
		return rc;
	int err = 0;
	struct buffer_head *bh = buf_get(in->fs->cache, phys, &err);
	if (!bh)
		return err_set(err ? err : -ENOMEM, "ext3: symlink block %llu",
			       (unsigned long long)phys);
	rc = ext3_journal_get_create_access(h, bh);
	if (!rc) {
		buf_lock(bh);
		memset(buf_data(bh), 0, in->fs->g.block_size);
		memcpy(buf_data(bh), target, len);
		buf_set_uptodate(bh);
		buf_unlock(bh);
		rc = ext3_journal_dirty_metadata(h, bh);
	}
	buf_put(bh);
	set_size(in, len);
	return rc;
}

/* Fill in a just-allocated inode (locked as writer) as sp says. */
static int new_init(struct jbd_handle *h, struct ext3_inode *dir, struct ext3_inode *in,
		    const struct newspec *sp)
{
	switch (sp->mode & EXT3_S_IFMT) {
	case EXT3_S_IFDIR:
		in->a.links = 2;
		return ext3_dir_make(h, in, dir->ino);
	case EXT3_S_IFLNK:
		in->a.links = 1;
		return set_symlink(h, in, sp->target, sp->tlen);
	case EXT3_S_IFCHR:
	case EXT3_S_IFBLK:
		set_rdev(in, major(sp->rdev), minor(sp->rdev));
		break;
	default:
		break;
	}
	in->a.links = 1;
	return 0;
}

/* The common part of create, mkdir and symlink: one try. */
static int namei_new_once(struct ext3_inode *dir, const char *name, size_t len,
		     const struct newspec *sp, const struct ext3_cred *cr, struct ext3_inode **out)
{
	*out = NULL;
	int rc = name_check(name, len);
	if (rc)
		return rc;
	if (name_dots(name, len))
		return err_set(-EEXIST, "ext3: %.*s exists", (int)len, name);
	struct ext3_fs *fs = dir->fs;
	bool mkdir = is_dir(sp->mode);
	int credits = ext3_credits_dirop(fs);
	if (mkdir || (sp->target && sp->tlen >= NAMEI_SYMLINK_FAST))
		credits += ext3_credits_data(fs, 1);
	unsigned nx = cr && !sp->target ? cr->nxattrs : 0;
	credits += (int)nx * ext3_credits_xattr(fs);
	uint16_t type = sp->mode & EXT3_S_IFMT;
	for (unsigned i = 0; i < nx; i++)
		if (type != EXT3_S_IFREG && type != EXT3_S_IFDIR &&
		    !strncmp(cr->xattrs[i].name, "user.", 5)) /* as setxattr(2) refuses it */
			return err_set(-EPERM, "ext3: %s on a special file", cr->xattrs[i].name);
	ext3_inode_wrlock(dir);
	struct ext3_inode *in = NULL;
	struct jbd_handle *h = NULL;
	rc = dir_name_free(dir, name, len);
	if (!rc && mkdir && dir_links_full(dir))
		rc = err_set(-EMLINK, "ext3: directory inode %u has %u links", dir->ino,
			     dir->a.links);
	if (!rc)
		rc = ext3_journal_start(fs, credits, &h);
	if (rc)
		goto out;
	/* A setgid directory gives its group to new inodes, and its setgid bit
	 * to new directories (BSD group semantics). */
	uint16_t mode = sp->mode;
	uint32_t uid = cr ? cr->uid : 0, gid = cr ? cr->gid : 0;
	if (dir->a.mode & 02000) {
		gid = dir->a.gid;
		if (mkdir)
			mode |= 02000;
	}
	rc = ext3_new_inode(h, dir, mode, uid, gid, &in);
	if (rc)
		goto out_stop;
	rc = new_init(h, dir, in, sp);
	for (unsigned i = 0; i < nx && !rc; i++)
		rc = ext3_xattr_set(h, in, cr->xattrs[i].name, cr->xattrs[i].value,
				    cr->xattrs[i].size, 0);
	if (!rc)
		rc = ext3_mark_inode_dirty(h, in);
	if (!rc)
		rc = ext3_dir_add(h, dir, name, len, in->ino, mode);
	if (!rc && mkdir)
		dir_links(dir, +1);
	if (!rc)
		rc = dir_changed(h, dir);
	if (rc) {
		/* Undo: no links, the last put frees it (its blocks with it); on
		 * the orphan list meanwhile, so a crash does not leak it. */
		in->a.links = 0;
		(void)ext3_orphan_add(h, in);
		(void)ext3_mark_inode_dirty(h, in);
	}
	ext3_inode_unlock(in);
out_stop:
	rc = stop(h, rc);
out:
	ext3_inode_unlock(dir);
	if (rc)
		ext3_iput(in);
	else
		*out = in;
	return rc;
}

/* namei_new, tried again after a commit when blocks freed by an
 * uncommitted transaction may be what is missing (ext3_should_retry_alloc). */
static int namei_new(struct ext3_inode *dir, const char *name, size_t len,
		     const struct newspec *sp, const struct ext3_cred *cr, struct ext3_inode **out)
{
	int retries = 0, rc;
	do
		rc = namei_new_once(dir, name, len, sp, cr, out);
	while (rc == -ENOSPC && ext3_should_retry_alloc(dir->fs, &retries));
	return rc;
}

int ext3_create(struct ext3_inode *dir, const char *name, size_t len, uint16_t mode, uint64_t rdev,
		const struct ext3_cred *cr, struct ext3_inode **out)
{
	*out = NULL;
	uint16_t type = mode & EXT3_S_IFMT;
	if (type == 0)
		type = EXT3_S_IFREG;
	if (type != EXT3_S_IFREG && type != EXT3_S_IFIFO && type != EXT3_S_IFSOCK &&
	    type != EXT3_S_IFCHR && type != EXT3_S_IFBLK)
		return err_set(-EINVAL, "ext3: cannot create file type 0%o", type >> 12);
	if ((type == EXT3_S_IFCHR || type == EXT3_S_IFBLK) &&
	    (major(rdev) > 0xfffu || minor(rdev) > 0xfffffu))
		return err_set(-EINVAL, "ext3: device number %u:%u too large", major(rdev),
			       minor(rdev));
	struct newspec sp = {.mode = (uint16_t)(type | (mode & 07777)), .rdev = rdev};
	return namei_new(dir, name, len, &sp, cr, out);
}

int ext3_mkdir(struct ext3_inode *dir, const char *name, size_t len, uint16_t mode,
	       const struct ext3_cred *cr, struct ext3_inode **out)
{
	/* mkdir(2) keeps the permission bits and sticky; setgid comes from the
	 * parent only. */
	struct newspec sp = {.mode = (uint16_t)(EXT3_S_IFDIR | (mode & 01777))};
	return namei_new(dir, name, len, &sp, cr, out);
}

int ext3_symlink(struct ext3_inode *dir, const char *name, size_t len, const char *target,
		 const struct ext3_cred *cr, struct ext3_inode **out)
{
	*out = NULL;
	size_t tlen = strlen(target);
	if (tlen == 0)
		return err_set(-ENOENT, "ext3: empty symlink target");
	if (tlen >= ext3_fs_block_size(dir->fs))
		return err_set(-ENAMETOOLONG, "ext3: symlink target of %zu bytes (block size %u)",
			       tlen, ext3_fs_block_size(dir->fs));
	struct newspec sp = {.mode = EXT3_S_IFLNK | 0777, .target = target, .tlen = tlen};
	return namei_new(dir, name, len, &sp, cr, out);
}

/* ---- link ---- */

static int link_once(struct ext3_inode *in, struct ext3_inode *dir, const char *name, size_t len)
{
	int rc = name_check(name, len);
	if (rc)
		return rc;
	if (name_dots(name, len))
		return err_set(-EEXIST, "ext3: %.*s exists", (int)len, name);
	if (is_dir(ext3_inode_mode(in)))
		return err_set(-EPERM, "ext3: inode %u: hard link to a directory", in->ino);
	struct lockset ls = {0};
	lockset_add(&ls, dir);
	lockset_add(&ls, in);
	lockset_lock(&ls);
	struct jbd_handle *h = NULL;
	rc = dir_name_free(dir, name, len);
	if (!rc)
		rc = not_frozen(in, EXT3_IMMUTABLE_FL | EXT3_APPEND_FL);
	if (!rc && in->a.links == 0)
		rc = err_set(-ENOENT, "ext3: inode %u has no links left", in->ino);
	if (!rc && in->a.links >= link_max(in->fs))
		rc = err_set(-EMLINK, "ext3: inode %u has %u links", in->ino, in->a.links);
	if (!rc)
		rc = ext3_journal_start(dir->fs, ext3_credits_dirop(dir->fs), &h);
	if (!rc) {
		rc = ext3_dir_add(h, dir, name, len, in->ino, in->a.mode);
		if (!rc) {
			in->a.links++;
			touch(&in->a.ctime, &in->a.ctime_ns);
			rc = ext3_mark_inode_dirty(h, in);
		}
		if (!rc)
			rc = dir_changed(h, dir);
		rc = stop(h, rc);
	}
	lockset_unlock(&ls);
	return rc;
}

int ext3_link(struct ext3_inode *in, struct ext3_inode *dir, const char *name, size_t len)
{
	int retries = 0, rc;
	do
		rc = link_once(in, dir, name, len);
	while (rc == -ENOSPC && ext3_should_retry_alloc(dir->fs, &retries));
	return rc;
}

/* ---- unlink, rmdir ---- */

/* One link less for in (locked, in h); an inode left without links goes on
 * the orphan list until its last reference is put. */
static int drop_link(struct jbd_handle *h, struct ext3_inode *in, bool all)
{
	if (in->a.links == 0)
		return ext3_fs_error(in->fs, "inode %u: removing a name of an inode with no links",
				     in->ino);
	in->a.links = all ? 0 : in->a.links - 1;
	touch(&in->a.ctime, &in->a.ctime_ns);
	int rc = 0;
	if (in->a.links == 0)
		rc = ext3_orphan_add(h, in);
	if (!rc)
		rc = ext3_mark_inode_dirty(h, in);
	return rc;
}

/* An empty directory (locked) can go: -ENOTEMPTY otherwise. */
static int dir_must_be_empty(struct ext3_inode *d)
{
	bool empty = false;
	int rc = ext3_dir_is_empty(d, &empty);
	if (!rc && !empty)
		rc = err_set(-ENOTEMPTY, "ext3: directory inode %u is not empty", d->ino);
	return rc;
}

static int namei_remove(struct ext3_inode *dir, const char *name, size_t len, bool rmdir)
{
	int rc = name_check(name, len);
	if (rc)
		return rc;
	int dots = name_dots(name, len);
	if (dots && !rmdir)
		return err_set(-EISDIR, "ext3: unlink of %.*s", (int)len, name);
	if (dots)
		return err_set(dots == 1 ? -EINVAL : -ENOTEMPTY, "ext3: rmdir of %.*s", (int)len,
			       name);
	struct ext3_fs *fs = dir->fs;
	for (;;) {
		if (!is_dir(ext3_inode_mode(dir)))
			return err_set(-ENOTDIR, "ext3: inode %u is not a directory", dir->ino);
		uint32_t ino, again;
		rc = lookup(dir, name, len, false, &ino);
		if (!rc && !ino)
			rc = err_set(-ENOENT, "ext3: no %.*s in directory inode %u", (int)len, name,
				     dir->ino);
		struct ext3_inode *v = NULL;
		if (!rc)
			rc = ext3_iget(fs, ino, &v);
		if (rc)
			return rc;
		struct lockset ls = {0};
		lockset_add(&ls, dir);
		lockset_add(&ls, v);
		lockset_lock(&ls);
		rc = lookup(dir, name, len, true, &again);
		if (!rc && again != ino) { /* changed while unlocked: again */
			lockset_unlock(&ls);
			ext3_iput(v);
			continue;
		}
		bool vdir = is_dir(v->a.mode);
		struct jbd_handle *h = NULL;
		if (!rc)
			rc = dir_usable(dir);
		if (!rc && rmdir != vdir)
			rc = err_set(vdir ? -EISDIR : -ENOTDIR, "ext3: %.*s is %sa directory",
				     (int)len, name, vdir ? "" : "not ");
		if (!rc)
			rc = not_frozen(dir, EXT3_IMMUTABLE_FL | EXT3_APPEND_FL);
		if (!rc)
			rc = not_frozen(v, EXT3_IMMUTABLE_FL | EXT3_APPEND_FL);
		if (!rc && vdir)
			rc = dir_must_be_empty(v);
		if (!rc)
			rc = ext3_journal_start(fs, ext3_credits_dirop(fs), &h);
		if (!rc) {
			rc = ext3_dir_remove(h, dir, name, len, &again);
			if (!rc && vdir) {
				set_size(v, 0); /* the orphan cleanup truncates it all */
				if (dir->a.links > 2)
					dir->a.links--;
			}
			if (!rc)
				rc = drop_link(h, v, vdir);
			if (!rc)
				rc = dir_changed(h, dir);
			rc = stop(h, rc);
		}
		lockset_unlock(&ls);
		ext3_iput(v); /* the last put of an unlinked inode frees it */
		return rc;
	}
}

int ext3_unlink(struct ext3_inode *dir, const char *name, size_t len)
{
	return namei_remove(dir, name, len, false);
}

int ext3_rmdir(struct ext3_inode *dir, const char *name, size_t len)
{
	return namei_remove(dir, name, len, true);
}

/* ---- rename ---- */

/* Is dir `anc` the directory d or one of its ancestors? Walks ".." up to
 * the root. Called under fs->rename_lock, which every change of a
 * directory's parent holds, and without inode locks (it takes readers). */
static int is_ancestor(struct ext3_fs *fs, uint32_t anc, uint32_t d, bool *yes)
{
	*yes = false;
	uint32_t cur = d;
	for (uint32_t steps = 0;; steps++) {
		if (cur == anc) {
			*yes = true;
			return 0;
		}
		if (cur == EXT3_ROOT_INO)
			return 0;
		if (steps > fs->g.inodes_count)
			return ext3_fs_error(fs, "directory loop above inode %u", d);
		struct ext3_inode *in;
		int rc = ext3_iget(fs, cur, &in);
		if (rc)
			return rc;
		uint32_t parent = 0;
		rc = ext3_dir_lookup(fs, in, "..", 2, &parent, NULL);
		ext3_iput(in);
		if (rc)
			return rc;
		if (parent == cur)
			return 0;
		cur = parent;
	}
}

struct rn {
	struct ext3_inode *od, *nd;   /* old and new directory */
	const char *on, *nn;
	size_t ol, nl;
	bool exchange, cross, whiteout;
	uint32_t sino, tino;          /* as looked up (tino 0: no target) */
	struct ext3_inode *s, *t;     /* source, target (NULL) */
	struct ext3_inode *wh;        /* RENAME_WHITEOUT: the new whiteout inode */
	bool sdir, tdir;
};

static void rn_put(struct rn *r)
{
	ext3_iput(r->s);
	ext3_iput(r->t);
	r->s = r->t = NULL;
}

/* Without inode locks: look both names up, get the inodes, check the
 * types and (across directories) that no directory moves under itself.
 * *same: both names are one inode (POSIX: nothing to do). */
static int rn_prepare(struct rn *r, unsigned flags, bool *same)
{
	struct ext3_fs *fs = r->od->fs;
	*same = false;
	if (!is_dir(ext3_inode_mode(r->od)) || !is_dir(ext3_inode_mode(r->nd)))
		return err_set(-ENOTDIR, "ext3: rename: not a directory");
	int rc = lookup(r->od, r->on, r->ol, false, &r->sino);
	if (!rc && !r->sino)
		rc = err_set(-ENOENT, "ext3: rename: no %.*s", (int)r->ol, r->on);
	if (!rc)
		rc = lookup(r->nd, r->nn, r->nl, false, &r->tino);
	if (rc)
		return rc;
	if (r->exchange && !r->tino)
		return err_set(-ENOENT, "ext3: rename exchange: no %.*s", (int)r->nl, r->nn);
	if ((flags & EXT3_RENAME_NOREPLACE) && r->tino)
		return err_set(-EEXIST, "ext3: rename: %.*s exists", (int)r->nl, r->nn);
	if (r->sino == r->tino) {
		*same = true;
		return 0;
	}
	rc = ext3_iget(fs, r->sino, &r->s);
	if (!rc && r->tino)
		rc = ext3_iget(fs, r->tino, &r->t);
	if (rc)
		return rc;
	r->sdir = is_dir(ext3_inode_mode(r->s));
	r->tdir = r->t && is_dir(ext3_inode_mode(r->t));
	/* lock_rename()'s trap first (before the type checks, as the VFS
	 * does): the source above the new directory is -EINVAL; the target
	 * above the old directory is -ENOTEMPTY (-EINVAL for an exchange). */
	bool loop = false;
	if (r->cross && r->sdir)
		rc = is_ancestor(fs, r->sino, r->nd->ino, &loop);
	if (!rc && loop)
		return err_set(-EINVAL, "ext3: rename: a directory cannot move under itself");
	if (!rc && r->cross && r->tdir)
		rc = is_ancestor(fs, r->tino, r->od->ino, &loop);
	if (!rc && loop)
		return err_set(r->exchange ? -EINVAL : -ENOTEMPTY,
			       "ext3: rename: the target %.*s is above the source", (int)r->nl, r->nn);
	if (!rc && r->t && !r->exchange && r->sdir != r->tdir)
		rc = err_set(r->sdir ? -ENOTDIR : -EISDIR, "ext3: rename: %.*s is %sa directory",
			     (int)r->nl, r->nn, r->tdir ? "" : "not ");
	return rc;
}

/* Under the locks: the names still name the inodes of rn_prepare? */
static int rn_still(struct rn *r, bool *ok)
{
	uint32_t s, t;
	int rc = lookup(r->od, r->on, r->ol, true, &s);
	if (!rc)
		rc = lookup(r->nd, r->nn, r->nl, true, &t);
	*ok = !rc && s == r->sino && t == r->tino;
	return rc;
}

/* Under the locks, before the handle: what can refuse the rename. */
static int rn_check(struct rn *r)
{
	int rc = dir_usable(r->od);
	if (!rc)
		rc = dir_usable(r->nd);
	if (!rc)
		rc = not_frozen(r->od, EXT3_IMMUTABLE_FL | EXT3_APPEND_FL);
	if (!rc)
		rc = not_frozen(r->nd, EXT3_IMMUTABLE_FL | (r->t ? EXT3_APPEND_FL : 0));
	if (!rc)
		rc = not_frozen(r->s, EXT3_IMMUTABLE_FL | EXT3_APPEND_FL);
	if (!rc)
		rc = not_frozen(r->t, EXT3_IMMUTABLE_FL | EXT3_APPEND_FL);
	if (!rc && r->tdir && !r->exchange)
		rc = dir_must_be_empty(r->t);
	/* The parent that gains a subdirectory must have a link to spare. */
	struct ext3_inode *gains = NULL;
	if (r->cross && !r->exchange && r->sdir && !r->t)
		gains = r->nd;
	else if (r->cross && r->exchange && r->sdir != r->tdir)
		gains = r->sdir ? r->nd : r->od;
	if (!rc && gains && dir_links_full(gains))
		rc = err_set(-EMLINK, "ext3: directory inode %u has %u links", gains->ino,
			     gains->a.links);
	return rc;
}


/* RENAME_WHITEOUT: the inode the old name will name, a character device
 * 0:0 with mode 0 (overlayfs's whiteout), owned by the caller (the old
 * directory's group when it is setgid), as 4.x ext4's whiteout for rename.
 * Returned locked as writer with one link, in the caller's handle. The
 * lock is taken under that handle, against write.h's order: safe only
 * because ext3_new_inode merely tries it (a stale holder of the reused
 * number makes it pick another), so this thread never waits for an inode
 * lock while it holds the handle. */
static int rn_whiteout_new(struct jbd_handle *h, struct rn *r)
{
	struct ext3_cred cr;
	ext3_cred_thread_get(r->od->fs, &cr);
	uint32_t gid = (r->od->a.mode & 02000) ? r->od->a.gid : cr.gid;
	int rc = ext3_new_inode(h, r->od, EXT3_S_IFCHR, cr.uid, gid, &r->wh);
	if (rc)
		return rc;
	set_rdev(r->wh, 0, 0);
	r->wh->a.links = 1;
	return ext3_mark_inode_dirty(h, r->wh);
}

/* A plain rename (the target, if any, is replaced); with RENAME_WHITEOUT
 * the old name is kept and names the whiteout. */
static int rn_move(struct jbd_handle *h, struct rn *r)
{
	int rc = r->t ? ext3_dir_retarget(h, r->nd, r->nn, r->nl, r->sino, r->s->a.mode)
		      : ext3_dir_add(h, r->nd, r->nn, r->nl, r->sino, r->s->a.mode);
	uint32_t gone;
	if (!rc && r->whiteout)
		rc = ext3_dir_retarget(h, r->od, r->on, r->ol, r->wh->ino, r->wh->a.mode);
	else if (!rc)
		rc = ext3_dir_remove(h, r->od, r->on, r->ol, &gone);
	if (!rc && r->sdir) {
		if (r->cross)
			rc = ext3_dir_set_parent(h, r->s, r->nd->ino);
		dir_links(r->od, -1); /* s's ".." leaves od */
		if (!r->t)
			dir_links(r->nd, +1); /* ... and points at nd (t's did already) */
	}
	if (!rc && r->t) {
		if (r->tdir)
			set_size(r->t, 0);
		rc = drop_link(h, r->t, r->tdir);
	}
	return rc;
}

/* RENAME_EXCHANGE: swap the two entries. */
static int rn_exchange(struct jbd_handle *h, struct rn *r)
{
	int rc = ext3_dir_retarget(h, r->od, r->on, r->ol, r->tino, r->t->a.mode);
	if (!rc)
		rc = ext3_dir_retarget(h, r->nd, r->nn, r->nl, r->sino, r->s->a.mode);
	if (rc || !r->cross)
		return rc;
	if (r->sdir)
		rc = ext3_dir_set_parent(h, r->s, r->nd->ino);
	if (!rc && r->tdir)
		rc = ext3_dir_set_parent(h, r->t, r->od->ino);
	if (r->sdir != r->tdir) {
		dir_links(r->od, r->sdir ? -1 : +1);
		dir_links(r->nd, r->sdir ? +1 : -1);
	}
	if (!rc) {
		touch(&r->t->a.ctime, &r->t->a.ctime_ns);
		rc = ext3_mark_inode_dirty(h, r->t);
	}
	return rc;
}

/* The rename itself, under the locks, in one handle. */
static int rn_apply(struct rn *r)
{
	struct jbd_handle *h;
	int credits = ext3_credits_rename(r->od->fs);
	if (r->whiteout) /* the new inode: bitmap, group, superblock, table block */
		credits += ext3_credits_dirop(r->od->fs);
	int rc = ext3_journal_start(r->od->fs, credits, &h);
	if (rc)
		return rc;
	if (r->whiteout)
		rc = rn_whiteout_new(h, r);
	if (!rc)
		rc = r->exchange ? rn_exchange(h, r) : rn_move(h, r);
	if (rc && r->wh) {
		/* Undo: no links, the last put frees it; on the orphan list
		 * meanwhile, so a crash does not leak it. */
		r->wh->a.links = 0;
		(void)ext3_orphan_add(h, r->wh);
		(void)ext3_mark_inode_dirty(h, r->wh);
	}
	if (r->wh) {
		ext3_inode_unlock(r->wh);
		ext3_iput(r->wh);
		r->wh = NULL;
	}
	if (!rc) {
		touch(&r->s->a.ctime, &r->s->a.ctime_ns);
		rc = ext3_mark_inode_dirty(h, r->s);
	}
	if (!rc)
		rc = dir_changed(h, r->od);
	if (!rc && r->cross)
		rc = dir_changed(h, r->nd);
	return stop(h, rc);
}

int ext3_rename(struct ext3_inode *olddir, const char *oldname, size_t oldlen,
		struct ext3_inode *newdir, const char *newname, size_t newlen, unsigned flags)
{
	if ((flags & ~(EXT3_RENAME_NOREPLACE | EXT3_RENAME_EXCHANGE | EXT3_RENAME_WHITEOUT)) ||
	    ((flags & EXT3_RENAME_EXCHANGE) && (flags & (EXT3_RENAME_NOREPLACE | EXT3_RENAME_WHITEOUT))))
		return err_set(-EINVAL, "ext3: rename: bad flags 0x%x", flags);
	int rc = name_check(oldname, oldlen);
	if (!rc)
		rc = name_check(newname, newlen);
	if (rc)
		return rc;
	if (name_dots(oldname, oldlen) || name_dots(newname, newlen))
		return err_set(-EINVAL, "ext3: rename of \".\" or \"..\"");
	struct ext3_fs *fs = olddir->fs;
	struct rn r = {.od = olddir, .nd = newdir, .on = oldname, .nn = newname, .ol = oldlen,
		       .nl = newlen, .exchange = flags & EXT3_RENAME_EXCHANGE,
		       .whiteout = flags & EXT3_RENAME_WHITEOUT, .cross = olddir != newdir};
	for (;;) {
		if (r.cross) {
			lockdep_acquire(&ext3_lockdep_rename, &fs->rename_lock, 0);
			pthread_mutex_lock(&fs->rename_lock);
		}
		bool same, ok = false;
		rc = rn_prepare(&r, flags, &same);
		struct lockset ls = {0};
		if (!rc && !same) {
			lockset_add(&ls, r.od);
			lockset_add(&ls, r.nd);
			lockset_add(&ls, r.s);
			lockset_add(&ls, r.t);
			lockset_lock(&ls);
			rc = rn_still(&r, &ok);
		}
		if (!rc && !same && ok) {
			rc = rn_check(&r);
			if (!rc)
				rc = rn_apply(&r);
			/* 2.6.30: replacing a file in writeback/guarded mode starts the
			 * new file's data on its way (the replace-via-rename idiom):
			 * the mode's table says (replace_flush). */
			if (!rc && r.t && !r.exchange && (r.s->a.mode & EXT3_S_IFMT) == EXT3_S_IFREG &&
			    ext3_dops_replace_flush(r.s))
				(void)ext3_data_flush_start(r.s);
		}
		lockset_unlock(&ls);
		if (r.cross) {
			lockdep_release(&fs->rename_lock);
			pthread_mutex_unlock(&fs->rename_lock);
		}
		rn_put(&r);
		if (rc || same || ok)
			return rc;
	}
}
