/* Public API: opening and closing files (include/nostall/nostall.h). A
 * handle holds a reference to the shared ext3 inode; regular files read
 * through an ext3_fread (per-handle readahead windows). On a read-write
 * mount a handle with write access is one of ext3's writers of the inode
 * (ext3_file_open / ext3_file_release). The I/O calls are in api_io.c. */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Internal open flags: open(2) rules (nostall_fd_open); the open created
 * the file (no access check: may_open is not asked for a new file). */
#define API_O_POSIX 0x80000000u
#define API_O_CREATED 0x40000000u

#define API_O_ALL                                                                                \
	(NOSTALL_O_NOFOLLOW | NOSTALL_O_WRONLY | NOSTALL_O_RDWR | NOSTALL_O_CREAT |              \
	 NOSTALL_O_EXCL | NOSTALL_O_TRUNC | NOSTALL_O_APPEND | NOSTALL_O_SYNC | NOSTALL_O_DSYNC | \
	 NOSTALL_O_DIRECTORY | NOSTALL_O_NOATIME | API_O_POSIX | API_O_CREATED)

/* Which handles a type allows (before anything is set up). */
static int file_type_check(struct ext3_inode *in, unsigned flags, bool trunc)
{
	uint16_t t = api_type(in);
	uint32_t ino = ext3_inode_ino(in);
	bool w = flags & (NOSTALL_O_WRONLY | NOSTALL_O_RDWR);
	if (t == EXT3_S_IFDIR) {
		if (w || (flags & NOSTALL_O_CREAT))
			return err_set(-EISDIR, "inode %u is a directory", ino);
		if (!(flags & (NOSTALL_O_DIRECTORY | API_O_POSIX)))
			return err_set(-EISDIR, "inode %u is a directory", ino);
		return 0;
	}
	if (flags & NOSTALL_O_DIRECTORY)
		return err_set(-ENOTDIR, "inode %u is not a directory", ino);
	if (t == EXT3_S_IFLNK) {
		if (w || trunc || (flags & NOSTALL_O_CREAT))
			return err_set(-ELOOP, "inode %u is a symbolic link", ino);
		return 0;
	}
	if (t != EXT3_S_IFREG)
		return err_set(-ENXIO, "inode %u is a device, fifo or socket", ino);
	return 0;
}

int api_file_new(struct nostall_fs *fs, struct ext3_inode *in, unsigned flags, bool trunc,
		 struct nostall_file **out)
{
	*out = NULL;
	bool w = flags & (NOSTALL_O_WRONLY | NOSTALL_O_RDWR);
	int rc = file_type_check(in, flags, trunc);
	if (!rc && (w || trunc))
		rc = api_check_rw(fs, "open for writing");
	if (!rc && !(flags & API_O_CREATED))
		rc = api_may_open(in, flags, trunc);
	/* may_open's rules for chattr +i / +a (after the type checks) */
	if (!rc && (w || trunc))
		rc = ext3_may_write(in, (flags & NOSTALL_O_APPEND) && !trunc);
	struct nostall_file *f = NULL;
	if (!rc && !(f = calloc(1, sizeof *f)))
		rc = err_set(-ENOMEM, "out of memory");
	if (rc) {
		ext3_iput(in);
		return rc;
	}
	f->fs = fs;
	f->in = in;
	f->mode = ext3_inode_mode(in);
	f->flags = flags & ~(API_O_POSIX | API_O_CREATED);
	f->can_read = !(flags & NOSTALL_O_WRONLY);
	f->can_write = w;
	if ((f->mode & EXT3_S_IFMT) == EXT3_S_IFREG) {
		rc = ext3_fread_create(fs->e, in, fs->file_readahead, &f->rd);
		if (!rc && w) {
			rc = ext3_file_open(in, EXT3_OPEN_WRITE | (trunc ? EXT3_OPEN_TRUNC : 0));
			f->writer = !rc;
		} else if (!rc && trunc) {
			rc = ext3_file_setsize(in, 0); /* O_RDONLY|O_TRUNC truncates too */
		}
		if (!rc && trunc)
			rc = api_kill_suid(fs, in);
	}
	if (rc) {
		if (f->writer)
			(void)ext3_file_release(in, EXT3_OPEN_WRITE);
		ext3_fread_destroy(f->rd);
		ext3_iput(in);
		free(f);
		return rc;
	}
	pthread_mutex_init(&f->lock, NULL);
	atomic_fetch_add(&fs->handles, 1);
	*out = f;
	return 0;
}

static int flags_check(unsigned flags)
{
	if (flags & ~(unsigned)API_O_ALL)
		return err_set(-EINVAL, "open: unknown flags 0x%x", flags & ~(unsigned)API_O_ALL);
	if ((flags & NOSTALL_O_WRONLY) && (flags & NOSTALL_O_RDWR))
		return err_set(-EINVAL, "open: both O_WRONLY and O_RDWR");
	return 0;
}

int nostall_open_ino(struct nostall_fs *fs, uint64_t ino, unsigned flags, struct nostall_file **out)
{
	*out = NULL;
	int rc = flags_check(flags);
	if (!rc && (flags & NOSTALL_O_CREAT))
		rc = err_set(-EINVAL, "nostall_open_ino: O_CREAT needs a name (nostall_create_at)");
	struct ext3_inode *in = NULL;
	if (!rc)
		rc = api_inode_get(fs, ino, &in);
	if (rc)
		return rc;
	bool trunc = (flags & NOSTALL_O_TRUNC) && api_type(in) == EXT3_S_IFREG;
	return api_file_new(fs, in, flags, trunc, out);
}

/* The last name at p: open it, following a symlink by rewriting *path
 * (returns 1 then), or create it. */
static int open_last(struct nostall_fs *fs, struct api_parent *p, char **path, unsigned flags,
		     uint32_t mode, struct nostall_file **out)
{
	bool excl = (flags & NOSTALL_O_EXCL) && (flags & NOSTALL_O_CREAT);
	if (p->kind != API_LAST_NAME && (flags & NOSTALL_O_CREAT))
		return err_set(-EISDIR, "%s: O_CREAT of a directory", p->kind == API_LAST_ROOT ? "/" :
				p->kind == API_LAST_DOT ? "." : "..");
	struct ext3_inode *in = NULL;
	/* the last name's lookup needs search permission on its directory */
	int rc = p->kind == API_LAST_NAME ? ext3_permission(p->dir, EXT3_MAY_EXEC) : 0;
	if (!rc)
		rc = api_parent_lookup(fs, p, &in);
	if (rc == -ENOENT && p->kind == API_LAST_NAME) {
		if (p->slash)
			return err_set(-EISDIR, "%.*s/: cannot create a file with a trailing slash",
				       (int)p->len, p->name);
		if ((rc = api_check_rw(fs, "create")))
			return rc;
		uint16_t m = (uint16_t)(EXT3_S_IFREG | (mode & 07777));
		struct api_new n;
		rc = api_new_begin(fs, p, &m, &n);
		if (!rc)
			rc = ext3_create(p->dir, p->name, p->len, m, 0, &n.cr, &in);
		api_new_end(&n);
		if (rc == -EEXIST && !excl)
			return 1; /* created by someone else meanwhile: look again */
		return rc ? rc : api_file_new(fs, in, flags | API_O_CREATED, false, out);
	}
	if (rc)
		return rc;
	uint16_t t = api_type(in);
	if (excl) {
		ext3_iput(in);
		return err_set(-EEXIST, "%.*s: file exists", (int)p->len, p->name);
	}
	if (t == EXT3_S_IFLNK && !(flags & NOSTALL_O_NOFOLLOW)) {
		char target[EXT3_MAX_BLOCK_SIZE];
		ssize_t n = ext3_symlink_read(fs->e, in, target, sizeof target - 1);
		ext3_iput(in);
		if (n < 0)
			return (int)n;
		/* the target replaces the last name: relative to the same directory */
		size_t pre = target[0] == '/' ? 0 : (size_t)(p->name - *path);
		char *np = malloc(pre + (size_t)n + 1);
		if (!np)
			return err_set(-ENOMEM, "out of memory");
		memcpy(np, *path, pre);
		memcpy(np + pre, target, (size_t)n);
		np[pre + (size_t)n] = '\0';
		free(*path);
		*path = np;
		return 1;
	}
	if (t == EXT3_S_IFLNK && (flags & API_O_POSIX)) {
		ext3_iput(in);
		return err_set(-ELOOP, "%.*s: a symbolic link (O_NOFOLLOW)", (int)p->len, p->name);
	}
	if (p->slash && t != EXT3_S_IFDIR) {
		ext3_iput(in);
		return err_set(-ENOTDIR, "%.*s: not a directory", (int)p->len, p->name);
	}
	return api_file_new(fs, in, flags, (flags & NOSTALL_O_TRUNC) && t == EXT3_S_IFREG, out);
}

/* O_CREAT: walk to the parent, then the last name; a final symlink is
 * followed by walking again to the parent of its target (at most
 * NOSTALL_SYMLOOP_MAX times). */
static int open_creat(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode,
		      struct nostall_file **out)
{
	char *cur = strdup(path);
	if (!cur)
		return err_set(-ENOMEM, "out of memory");
	int rc = 1;
	for (int links = 0; rc == 1; links++) {
		if (links > NOSTALL_SYMLOOP_MAX) {
			rc = err_set(-ELOOP, "too many levels of symbolic links (%d)", NOSTALL_SYMLOOP_MAX);
			break;
		}
		struct api_parent p;
		rc = api_parent_get(fs, cur, &p);
		if (rc)
			break;
		rc = open_last(fs, &p, &cur, flags, mode, out);
		api_parent_put(&p);
	}
	free(cur);
	return rc;
}

int api_open_path(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode,
		  bool posix, struct nostall_file **out)
{
	*out = NULL;
	if (posix)
		flags |= API_O_POSIX;
	int rc = flags_check(flags);
	if (rc)
		return rc;
	if (flags & NOSTALL_O_CREAT)
		return open_creat(fs, path, flags, mode, out);
	struct ext3_inode *in;
	rc = api_path_inode(fs, path, (flags & NOSTALL_O_NOFOLLOW) ? NOSTALL_NOFOLLOW : 0, &in);
	if (rc)
		return rc;
	uint16_t t = api_type(in);
	if (t == EXT3_S_IFLNK && posix) {
		ext3_iput(in);
		return err_set(-ELOOP, "%s: a symbolic link (O_NOFOLLOW)", path);
	}
	return api_file_new(fs, in, flags, (flags & NOSTALL_O_TRUNC) && t == EXT3_S_IFREG, out);
}

int nostall_open(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_file **out)
{
	return api_open_path(fs, path, flags, 0, false, out);
}

int nostall_create(struct nostall_fs *fs, const char *path, unsigned flags, uint32_t mode,
		   struct nostall_file **out)
{
	return api_open_path(fs, path, flags, mode, false, out);
}

/* nostall_create_at's usual name does not exist yet (a FUSE CREATE comes
 * after a negative LOOKUP, under the kernel's lock of the directory): create
 * it straight away, without the lookup open_last makes first - ext3_create
 * searches the directory under its lock anyway, so that is one directory
 * search (an htree walk and a leaf scan) less per file. 1: take the
 * ordinary path (open_last), because the name exists or because the refusal
 * is one that an existing name would have been spared (a read-only mount,
 * an immutable directory, ...). ENOSPC and EDQUOT stand: ext3_create found
 * the name absent under the lock before it allocated anything. */
static int create_first(struct nostall_fs *fs, struct api_parent *p, unsigned flags, uint32_t mode,
			struct nostall_file **out)
{
	if (p->kind != API_LAST_NAME || p->slash || api_check_rw(fs, "create"))
		return 1;
	uint16_t m = (uint16_t)(EXT3_S_IFREG | (mode & 07777));
	struct api_new n;
	struct ext3_inode *in = NULL;
	int rc = api_new_begin(fs, p, &m, &n);
	if (rc) {
		api_new_end(&n);
		return 1; /* the ordinary path gives the refusal in its order */
	}
	rc = ext3_create(p->dir, p->name, p->len, m, 0, &n.cr, &in);
	api_new_end(&n);
	if (!rc)
		return api_file_new(fs, in, flags | API_O_CREATED, false, out);
	if (rc == -ENOSPC || rc == -EDQUOT || (rc == -EEXIST && (flags & NOSTALL_O_EXCL)))
		return rc;
	return 1;
}

int nostall_create_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, unsigned flags,
		      uint32_t mode, struct nostall_stat *st, struct nostall_file **out)
{
	*out = NULL;
	int rc = flags_check(flags);
	struct api_parent p = { .kind = API_LAST_NAME };
	if (!rc)
		rc = api_at_parent(fs, dir_ino, name, &p);
	if (rc)
		return rc;
	char *none = NULL;
	rc = create_first(fs, &p, flags | NOSTALL_O_NOFOLLOW | NOSTALL_O_CREAT, mode, out);
	/* no symlink following here: an existing symlink is opened as itself */
	if (rc == 1)
		rc = open_last(fs, &p, &none, flags | NOSTALL_O_NOFOLLOW | NOSTALL_O_CREAT, mode, out);
	if (rc == 1) /* lost a race with a creator of the name: open what is there */
		rc = open_last(fs, &p, &none, (flags | NOSTALL_O_NOFOLLOW) & ~NOSTALL_O_CREAT, mode, out);
	api_parent_put(&p);
	if (rc)
		return rc;
	rc = api_lookup_take(fs, (*out)->in);
	if (rc) {
		nostall_close(*out);
		*out = NULL;
		return rc;
	}
	api_stat_fill(fs, (*out)->in, st);
	return 0;
}

void nostall_close(struct nostall_file *f)
{
	if (!f)
		return;
	if (f->writer)
		(void)ext3_file_release(f->in, EXT3_OPEN_WRITE); /* nostall_flush reports errors */
	ext3_fread_destroy(f->rd); /* waits for its readahead in flight */
	ext3_iput(f->in);
	atomic_fetch_sub(&f->fs->handles, 1);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int nostall_fstat(struct nostall_file *f, struct nostall_stat *st)
{
	api_stat_fill(f->fs, f->in, st);
	return 0;
}

int nostall_bmap(struct nostall_file *f, uint64_t lblk, uint64_t *phys)
{
	*phys = 0;
	if ((f->mode & EXT3_S_IFMT) == EXT3_S_IFLNK && ext3_inode_is_fast_symlink(f->fs->e, f->in))
		return 0;
	if ((f->mode & EXT3_S_IFMT) == EXT3_S_IFDIR)
		return err_set(-EISDIR, "bmap of a directory handle");
	return ext3_inode_bmap(f->fs->e, f->in, lblk, phys);
}
