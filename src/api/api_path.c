/* Public API, the write side's common part: the read-write check, host
 * open flags, and the parent walk that
 * every creating and removing call starts with (docs/api.md). */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int api_check_rw(struct nostall_fs *fs, const char *what)
{
	if (fs->rw)
		return 0;
	return err_set(-EROFS, "%s: the filesystem is mounted read-only", what);
}

unsigned nostall_oflags_from_posix(int oflags)
{
	unsigned f = 0;
	switch (oflags & O_ACCMODE) {
	case O_WRONLY: f |= NOSTALL_O_WRONLY; break;
	case O_RDWR: f |= NOSTALL_O_RDWR; break;
	default: break;
	}
	static const struct {
		int posix;
		unsigned ns;
	} map[] = {
		{ O_CREAT, NOSTALL_O_CREAT },       { O_EXCL, NOSTALL_O_EXCL },
		{ O_TRUNC, NOSTALL_O_TRUNC },       { O_APPEND, NOSTALL_O_APPEND },
		{ O_DIRECTORY, NOSTALL_O_DIRECTORY }, { O_NOFOLLOW, NOSTALL_O_NOFOLLOW },
		{ O_NOATIME, NOSTALL_O_NOATIME },
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (oflags & map[i].posix)
			f |= map[i].ns;
	/* O_SYNC includes the O_DSYNC bit on Linux */
	if ((oflags & O_SYNC) == O_SYNC)
		f |= NOSTALL_O_SYNC;
	else if (oflags & O_DSYNC)
		f |= NOSTALL_O_DSYNC;
	return f;
}

/* ---- the parent walk ---- */

static enum api_last last_kind(const char *name, size_t len)
{
	if (len == 1 && name[0] == '.')
		return API_LAST_DOT;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return API_LAST_DOTDOT;
	return API_LAST_NAME;
}


int api_parent_get(struct nostall_fs *fs, const char *path, struct api_parent *p)
{
	return api_parent_walk(fs, path, false, p);
}

int api_parent_walk(struct nostall_fs *fs, const char *path, bool late_len, struct api_parent *p)
{
	memset(p, 0, sizeof *p);
	if (!path)
		return err_set(-EINVAL, "NULL path");
	size_t plen = strlen(path);
	if (!plen)
		return err_set(-ENOENT, "empty path");
	if (plen >= NOSTALL_PATH_MAX)
		return err_set(-ENAMETOOLONG, "path of %zu bytes (at most %d)", plen,
			       NOSTALL_PATH_MAX - 1);
	size_t end = plen;
	while (end && path[end - 1] == '/')
		end--;
	p->slash = end < plen;
	size_t start = end;
	while (start && path[start - 1] != '/')
		start--;
	p->name = path + start;
	p->len = end - start;
	/* the directory part, resolved from the root (an empty one is the root) */
	char *dir = malloc(start + 2);
	if (!dir)
		return err_set(-ENOMEM, "out of memory");
	memcpy(dir, path, start);
	dir[start] = '\0';
	uint32_t ino;
	int rc = ext3_path_lookup(fs->e, start ? dir : "/", true, &ino);
	free(dir);
	if (!rc)
		rc = api_inode_get(fs, ino, &p->dir);
	if (rc)
		return rc;
	if (api_type(p->dir) != EXT3_S_IFDIR) {
		api_parent_put(p);
		return err_set(-ENOTDIR, "%.*s: not a directory", (int)start, path);
	}
	p->kind = end == 0 ? API_LAST_ROOT : last_kind(p->name, p->len);
	int rc2 = late_len ? 0 : api_parent_name_check(p);
	if (rc2)
		api_parent_put(p);
	return rc2;
}

int api_parent_name_check(const struct api_parent *p)
{
	if (p->len > NOSTALL_NAME_MAX)
		return err_set(-ENAMETOOLONG, "name of %zu bytes (at most %d)", p->len,
			       NOSTALL_NAME_MAX);
	return 0;
}

void api_parent_put(struct api_parent *p)
{
	ext3_iput(p->dir);
	p->dir = NULL;
}

int api_parent_lookup(struct nostall_fs *fs, const struct api_parent *p, struct ext3_inode **out)
{
	*out = NULL;
	if (p->kind == API_LAST_ROOT || p->kind == API_LAST_DOT) {
		*out = ext3_igrab(p->dir);
		return 0;
	}
	const char *name = p->kind == API_LAST_DOTDOT ? ".." : p->name;
	size_t len = p->kind == API_LAST_DOTDOT ? 2 : p->len;
	uint32_t ino = 0;
	int rc = ext3_dir_lookup(fs->e, p->dir, name, len, &ino, NULL);
	if (rc == -ENOENT)
		return err_set(-ENOENT, "%.*s: no such file or directory", (int)len, name);
	if (rc)
		return rc;
	struct ext3_inode *in;
	rc = ext3_iget(fs->e, ino, &in);
	if (rc)
		return rc;
	if (!ext3_inode_in_use(in)) {
		ext3_iput(in);
		return err_set(-EUCLEAN, "ext3: directory entry %.*s points at free inode %u", (int)len,
			       name, ino);
	}
	*out = in;
	return 0;
}

int api_at_parent(struct nostall_fs *fs, uint64_t dir_ino, const char *name,
		  struct api_parent *p)
{
	memset(p, 0, sizeof *p);
	if (!name || !*name || strchr(name, '/'))
		return err_set(-EINVAL, "bad name '%s' (empty or with '/')", name ? name : "(null)");
	p->name = name;
	p->len = strlen(name);
	p->kind = last_kind(name, p->len);
	if (p->len > NOSTALL_NAME_MAX)
		return err_set(-ENAMETOOLONG, "name of %zu bytes (at most %d)", p->len,
			       NOSTALL_NAME_MAX);
	int rc = api_inode_get(fs, dir_ino, &p->dir);
	if (rc)
		return rc;
	if (api_type(p->dir) != EXT3_S_IFDIR) {
		api_parent_put(p);
		return err_set(-ENOTDIR, "inode %llu is not a directory", (unsigned long long)dir_ino);
	}
	return 0;
}
