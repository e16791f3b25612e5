/* ext3 path walk and symbolic links. Every walk is bounded: the remaining
 * path never exceeds EXT3_PATH_MAX bytes, each step consumes at least one
 * byte of it, and at most EXT3_SYMLOOP_MAX symlinks are expanded (-ELOOP). */
#include "extfs/core/ext3_int.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EXT3_PATH_MAX 4096
#define EXT3_SYMLOOP_MAX 40

static ssize_t symlink_read_locked(struct ext3_fs *fs, const struct ext3_inode *in, char *buf,
				   size_t size);

ssize_t ext3_symlink_read(struct ext3_fs *fs, struct ext3_inode *in, char *buf, size_t size)
{
	ext3_inode_rdlock(in);
	ssize_t n = symlink_read_locked(fs, in, buf, size);
	ext3_inode_unlock(in);
	return n;
}

static ssize_t symlink_read_locked(struct ext3_fs *fs, const struct ext3_inode *in, char *buf,
				   size_t size)
{
	if ((in->a.mode & EXT3_S_IFMT) != EXT3_S_IFLNK)
		return err_set(-EINVAL, "ext3: inode %u is not a symbolic link", in->a.ino);
	size_t len = (size_t)in->i_size; /* < block size, checked by ext3_inode_read */
	if (len == 0 || len >= fs->g.block_size)
		return err_set(-EUCLEAN, "ext3: inode %u: bad symlink length %zu", in->a.ino, len);
	size_t n = len < size ? len : size;
	if (ext3_inode_fast_symlink_locked(fs, in)) {
		if (len >= sizeof in->a.block)
			return err_set(-EUCLEAN, "ext3: inode %u: fast symlink of %zu bytes", in->a.ino,
				       len);
		memcpy(buf, in->raw + offsetof(struct ext3_disk_inode, i_block), n);
		return (ssize_t)n;
	}
	char tmp[EXT3_MAX_BLOCK_SIZE];
	ssize_t got = ext3_inode_pread_locked(fs, in, tmp, len, 0);
	if (got < 0)
		return got;
	if ((size_t)got != len)
		return err_set(-EUCLEAN, "ext3: inode %u: short symlink target", in->a.ino);
	uint64_t phys;
	int rc = ext3_inode_bmap_locked(fs, in, 0, &phys);
	if (rc)
		return rc;
	if (phys == 0)
		return err_set(-EUCLEAN, "ext3: inode %u: slow symlink without a data block", in->a.ino);
	memcpy(buf, tmp, n);
	return (ssize_t)n;
}

/* Get an inode that a directory entry points at (it must be in use),
 * dropping the one *cur held. */
static int path_inode(struct ext3_fs *fs, uint32_t ino, struct ext3_inode **cur)
{
	struct ext3_inode *in;
	int rc = ext3_iget(fs, ino, &in);
	if (rc)
		return rc;
	if (!ext3_inode_in_use(in)) {
		ext3_iput(in);
		return err_set(-EUCLEAN, "ext3: directory entry points at free inode %u", ino);
	}
	ext3_iput(*cur);
	*cur = in;
	return 0;
}

int ext3_path_lookup(struct ext3_fs *fs, const char *path, bool follow, uint32_t *ino)
{
	size_t plen = strlen(path);
	if (plen >= EXT3_PATH_MAX)
		return err_set(-ENAMETOOLONG, "path of %zu bytes (at most %d)", plen,
			       EXT3_PATH_MAX - 1);
	/* rest = what is left to walk; symlink targets are spliced in front. */
	char *rest = malloc(EXT3_PATH_MAX);
	struct ext3_inode *cur = NULL, *child = NULL;
	int rc = 0;
	if (!rest) {
		rc = err_set(-ENOMEM, "out of memory");
		goto out;
	}
	memcpy(rest, path, plen + 1);
	rc = path_inode(fs, EXT3_ROOT_INO, &cur);
	if (rc)
		goto out;
	unsigned links = 0;
	size_t at = 0;
	for (;;) {
		while (rest[at] == '/')
			at++;
		if (!rest[at])
			break;
		const char *comp = rest + at;
		size_t clen = strcspn(comp, "/");
		at += clen;
		size_t after = at;
		while (rest[after] == '/')
			after++;
		bool last = rest[after] == '\0';
		bool trailing_slash = last && after > at;
		/* a non-directory before the name counts first (as Linux walks) */
		if ((ext3_inode_mode(cur) & EXT3_S_IFMT) != EXT3_S_IFDIR) {
			rc = err_set(-ENOTDIR, "ext3: inode %u in the path is not a directory",
				     cur->ino);
			goto out;
		}
		if (clen > EXT3_NAME_LEN) {
			rc = err_set(-ENAMETOOLONG, "path component of %zu bytes (at most %d)", clen,
				     EXT3_NAME_LEN);
			goto out;
		}
		/* may_lookup: search permission on every directory passed */
		if (fs->may_search && (rc = fs->may_search(cur)))
			goto out;
		if (clen == 1 && comp[0] == '.')
			continue;
		uint32_t cino;
		rc = ext3_dir_lookup(fs, cur, comp, clen, &cino, NULL);
		if (rc) {
			if (rc == -ENOENT)
				err_set(-ENOENT, "%.*s: no such file or directory", (int)clen, comp);
			goto out;
		}
		rc = path_inode(fs, cino, &child);
		if (rc)
			goto out;
		uint16_t cmode = ext3_inode_mode(child);
		if ((cmode & EXT3_S_IFMT) == EXT3_S_IFLNK && (!last || follow || trailing_slash)) {
			if (++links > EXT3_SYMLOOP_MAX) {
				rc = err_set(-ELOOP, "too many levels of symbolic links (%d)",
					     EXT3_SYMLOOP_MAX);
				goto out;
			}
			char target[EXT3_MAX_BLOCK_SIZE];
			ssize_t tl = ext3_symlink_read(fs, child, target, sizeof target);
			if (tl < 0) {
				rc = (int)tl;
				goto out;
			}
			/* rest = target + what followed the link (which starts with
			 * '/' unless the link was the last component) */
			size_t remain = strlen(rest + at);
			if ((size_t)tl + remain >= EXT3_PATH_MAX) {
				rc = err_set(-ENAMETOOLONG, "path too long after expanding a symlink");
				goto out;
			}
			memmove(rest + tl, rest + at, remain + 1);
			memcpy(rest, target, (size_t)tl);
			at = 0;
			if (target[0] == '/') {
				rc = path_inode(fs, EXT3_ROOT_INO, &cur);
				if (rc)
					goto out;
			}
			continue;
		}
		if (trailing_slash && (cmode & EXT3_S_IFMT) != EXT3_S_IFDIR) {
			rc = err_set(-ENOTDIR, "%.*s: not a directory", (int)clen, comp);
			goto out;
		}
		struct ext3_inode *t = cur;
		cur = child;
		child = t;
	}
	*ino = cur->ino;
out:
	free(rest);
	ext3_iput(cur);
	ext3_iput(child);
	return rc;
}
