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
	if (!ext3_inode_in_use(in) &&
	    !(atomic_load(&fs->lref_live) && ext3_inode_mode(in) && api_lookup_held(fs, ino))) {
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

int api_path_inode(struct nostall_fs *fs, const char *path, unsigned flags,
		   struct ext3_inode **out)
{
	uint64_t ino = 0;
	*out = NULL;
	int rc = api_path_ino(fs, path, flags, &ino);
	return rc ? rc : api_inode_get(fs, ino, out);
}

void api_stat_fill(struct nostall_fs *fs, struct ext3_inode *inode, struct nostall_stat *st)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(inode, &a);
	*st = (struct nostall_stat){
		.ino = a.ino, .mode = a.mode, .nlink = a.links, .uid = a.uid, .gid = a.gid,
		.size = a.size, .blocks = ext3_inode_attr_blocks512(fs->e, &a), .blksize = ext3_fs_block_size(fs->e),
		.atime = {a.atime, a.atime_ns}, .mtime = {a.mtime, a.mtime_ns},
		.ctime = {a.ctime, a.ctime_ns}, .crtime = {a.crtime, a.crtime_ns},
		.flags = a.flags, .generation = a.generation, .xattr_block = a.file_acl,
	};
	uint16_t type = a.mode & EXT3_S_IFMT;
	if (type == EXT3_S_IFCHR || type == EXT3_S_IFBLK) {
		ext3_inode_rdev(&a, &st->rdev_major, &st->rdev_minor);
		st->rdev = makedev(st->rdev_major, st->rdev_minor);
	}
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

/* ---- symlinks and xattrs: one inode, held for the call ---- */

enum inode_op_kind { OP_READLINK, OP_GETXATTR, OP_LISTXATTR };

static ssize_t inode_op(struct nostall_fs *fs, uint64_t ino, enum inode_op_kind kind,
			const char *name, void *buf, size_t size)
{
	struct ext3_inode *in;
	ssize_t rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	switch (kind) {
	case OP_READLINK: rc = ext3_symlink_read(fs->e, in, buf, size); break;
	case OP_GETXATTR:
		rc = api_xattr_ns_check(in, name, false);
		if (!rc && ext3_acl_xattr_name(name)) /* given in the VFS format */
			rc = ext3_acl_xattr_get(in, !strcmp(name, EXT3_ACL_DEFAULT), buf, size);
		else if (!rc)
			rc = ext3_xattr_get(fs->e, in, name, buf, size);
		break;
	case OP_LISTXATTR: rc = ext3_xattr_list(fs->e, in, buf, size); break;
	}
	ext3_iput(in);
	return rc;
}

ssize_t nostall_readlink_ino(struct nostall_fs *fs, uint64_t ino, char *buf, size_t size)
{
	return inode_op(fs, ino, OP_READLINK, NULL, buf, size);
}

ssize_t nostall_readlink(struct nostall_fs *fs, const char *path, char *buf, size_t size)
{
	uint64_t ino = 0;
	int rc = api_path_ino(fs, path, NOSTALL_NOFOLLOW, &ino);
	return rc ? rc : nostall_readlink_ino(fs, ino, buf, size);
}

ssize_t nostall_getxattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name, void *value,
			     size_t size)
{
	int rc = api_xattr_name_check(name, 0);
	return rc ? rc : inode_op(fs, ino, OP_GETXATTR, name, value, size);
}

ssize_t nostall_listxattr_ino(struct nostall_fs *fs, uint64_t ino, char *list, size_t size)
{
	return inode_op(fs, ino, OP_LISTXATTR, NULL, list, size);
}

ssize_t nostall_getxattr(struct nostall_fs *fs, const char *path, unsigned flags,
			 const char *name, void *value, size_t size)
{
	uint64_t ino = 0;
	int rc = api_xattr_name_check(name, 0);
	if (!rc)
		rc = api_path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_getxattr_ino(fs, ino, name, value, size);
}

ssize_t nostall_listxattr(struct nostall_fs *fs, const char *path, unsigned flags, char *list,
			  size_t size)
{
	uint64_t ino = 0;
	int rc = api_path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_listxattr_ino(fs, ino, list, size);
}
