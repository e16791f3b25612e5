/* Public API: inodes by number or path: stat, lookup, readlink, xattrs
 * (include/nostall/nostall.h). Each call holds an ext3 inode reference for
 * its duration only. */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

int api_inode_get(struct nostall_fs *fs, uint64_t ino, struct ext3_inode **out)
{
	*out = NULL;
	if (ino == 0 || ino > ext3_fs_inodes_count(fs->e))
		return err_set(-EINVAL, "inode %llu out of range (1-%u)", (unsigned long long)ino,
			       ext3_fs_inodes_count(fs->e));
	struct ext3_inode *in;
	int rc = ext3_iget(fs->e, (uint32_t)ino, &in);
	if (rc)
		return rc;
	if (!ext3_inode_in_use(in)) {
		ext3_iput(in);
		return err_set(-ENOENT, "inode %llu is not in use", (unsigned long long)ino);
	}
	*out = in;
	return 0;
}

int api_path_ino(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino)
{
	if (!path)
		return err_set(-EINVAL, "NULL path");
	uint32_t i;
	int rc = ext3_path_lookup(fs->e, path, !(flags & NOSTALL_NOFOLLOW), &i);
	if (rc)
		return rc;
	*ino = i;
	return 0;
}

void api_stat_fill(struct nostall_fs *fs, struct ext3_inode *inode, struct nostall_stat *st)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(inode, &a);
	const struct ext3_inode_attr *in = &a;
	memset(st, 0, sizeof *st);
	st->ino = in->ino;
	st->mode = in->mode;
	st->nlink = in->links;
	st->uid = in->uid;
	st->gid = in->gid;
	st->size = in->size;
	st->blocks = in->blocks;
	st->blksize = ext3_fs_block_size(fs->e);
	uint16_t type = in->mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFCHR || type == EXT3_S_IFBLK) {
		ext3_inode_rdev(in, &st->rdev_major, &st->rdev_minor);
		st->rdev = makedev(st->rdev_major, st->rdev_minor);
	}
	st->atime = (struct nostall_timespec){in->atime, in->atime_ns};
	st->mtime = (struct nostall_timespec){in->mtime, in->mtime_ns};
	st->ctime = (struct nostall_timespec){in->ctime, in->ctime_ns};
	st->crtime = (struct nostall_timespec){in->crtime, in->crtime_ns};
	st->flags = in->flags;
	st->generation = in->generation;
	st->xattr_block = in->file_acl;
}

int nostall_stat_ino(struct nostall_fs *fs, uint64_t ino, struct nostall_stat *st)
{
	struct ext3_inode *in;
	int rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	api_stat_fill(fs, in, st);
	ext3_iput(in);
	return 0;
}

int nostall_stat(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_stat *st)
{
	uint64_t ino = 0;
	int rc = api_path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_stat_ino(fs, ino, st);
}

int nostall_lookup(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino)
{
	return api_path_ino(fs, path, flags, ino);
}

int nostall_lookup_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint64_t *ino)
{
	if (!name)
		return err_set(-EINVAL, "NULL name");
	struct ext3_inode *in;
	int rc = api_inode_get(fs, dir_ino, &in);
	if (rc)
		return rc;
	uint32_t i = 0;
	rc = ext3_dir_lookup(fs->e, in, name, strlen(name), &i, NULL);
	ext3_iput(in);
	if (!rc)
		*ino = i;
	return rc;
}

/* ---- symlinks ---- */

ssize_t nostall_readlink_ino(struct nostall_fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct ext3_inode *in;
	ssize_t rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	rc = ext3_symlink_read(fs->e, in, buf, size);
	ext3_iput(in);
	return rc;
}

ssize_t nostall_readlink(struct nostall_fs *fs, const char *path, char *buf, size_t size)
{
	uint64_t ino = 0;
	int rc = api_path_ino(fs, path, NOSTALL_NOFOLLOW, &ino);
	return rc ? rc : nostall_readlink_ino(fs, ino, buf, size);
}

/* ---- xattrs ---- */

ssize_t nostall_getxattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name, void *value,
			     size_t size)
{
	if (!name || !*name)
		return err_set(-EINVAL, "getxattr: empty name");
	struct ext3_inode *in;
	ssize_t rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	rc = ext3_xattr_get(fs->e, in, name, value, size);
	ext3_iput(in);
	return rc;
}

ssize_t nostall_listxattr_ino(struct nostall_fs *fs, uint64_t ino, char *list, size_t size)
{
	struct ext3_inode *in;
	ssize_t rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	rc = ext3_xattr_list(fs->e, in, list, size);
	ext3_iput(in);
	return rc;
}

ssize_t nostall_getxattr(struct nostall_fs *fs, const char *path, unsigned flags,
			 const char *name, void *value, size_t size)
{
	uint64_t ino = 0;
	int rc = api_path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_getxattr_ino(fs, ino, name, value, size);
}

ssize_t nostall_listxattr(struct nostall_fs *fs, const char *path, unsigned flags, char *list,
			  size_t size)
{
	uint64_t ino = 0;
	int rc = api_path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_listxattr_ino(fs, ino, list, size);
}
