/* Public API (include/nostall/nostall.h) over the ext3 read path.
 *
 * Locking: the mounted filesystem is immutable (read-only), so API calls take
 * no filesystem lock; the count of open handles is atomic; each file handle
 * has a mutex for its position and each directory iterator one for its batch
 * and position. A regular file's handle also owns a reader (ext3_fread: its
 * readahead windows, with their own mutex, taken after the position mutex). */
#include "nostall/nostall.h"

#include "dev/dev.h"
#include "ext3/ext3.h"
#include "ext3/uuid.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

struct nostall_fs {
	struct dev *dev;  /* owned when own_dev */
	bool own_dev;
	struct ext3_fs *e;
	atomic_int handles; /* open files and directory iterators */
	size_t file_readahead; /* max readahead window per open file, 0 = off */
};

struct nostall_file {
	struct nostall_fs *fs;
	pthread_mutex_t lock; /* protects pos */
	uint64_t pos;
	struct ext3_fread *rd; /* regular files: data reads with readahead */
	struct ext3_inode_mem in; /* immutable after open (rd points into it) */
};

#define DIR_BATCH 64
struct nostall_dir {
	struct nostall_fs *fs;
	pthread_mutex_t lock; /* protects everything below */
	uint64_t pos;         /* position of the next entry to return */
	struct nostall_dirent batch[DIR_BATCH];
	unsigned nbatch, at;
	bool eof;
	struct ext3_inode_mem in;
};

const char *nostall_errmsg(int rc) { return err_last(rc); }

/* ---- mount ---- */

int nostall_mount_dev(struct dev *dev, const char *opts, unsigned flags, struct nostall_fs **out)
{
	*out = NULL;
	if (!dev)
		return err_set(-EINVAL, "nostall_mount_dev: no device");
	struct ext3_mount_opts mo;
	ext3_mount_opts_init(&mo);
	int rc = ext3_mount_opts_parse(&mo, opts);
	if (!rc && !(flags & NOSTALL_MOUNT_RDONLY) && !mo.ro)
		rc = err_set(-EROFS, "nostall mounts read-only for now (pass NOSTALL_MOUNT_RDONLY "
			     "or -o ro)");
	struct nostall_fs *fs = NULL;
	if (!rc) {
		fs = calloc(1, sizeof *fs);
		if (!fs)
			rc = err_set(-ENOMEM, "out of memory");
	}
	if (!rc)
		rc = ext3_fs_mount(dev, &mo, 0, &fs->e);
	ext3_mount_opts_release(&mo);
	if (rc) {
		free(fs);
		return rc;
	}
	fs->dev = dev;
	fs->file_readahead = ext3_fs_opts(fs->e)->file_readahead;
	atomic_init(&fs->handles, 0);
	*out = fs;
	return 0;
}

/* "kind:..." for a known device kind, else a plain path. */
static bool spec_has_kind(const char *s)
{
	static const char *const kinds[] = {"file:", "mem:", "sim:", "log:", "fault:"};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strncmp(s, kinds[i], strlen(kinds[i])))
			return true;
	return false;
}

int nostall_mount(const char *image_or_spec, const char *opts, unsigned flags,
		  struct nostall_fs **out)
{
	*out = NULL;
	if (!image_or_spec || !*image_or_spec)
		return err_set(-EINVAL, "nostall_mount: empty image name");
	char *spec = NULL;
	if (spec_has_kind(image_or_spec))
		spec = strdup(image_or_spec);
	else if (asprintf(&spec, "file:%s", image_or_spec) < 0)
		spec = NULL;
	if (!spec)
		return err_set(-ENOMEM, "out of memory");
	struct dev *dev = NULL;
	int rc = dev_open(spec, &dev);
	free(spec);
	if (rc)
		return rc;
	rc = nostall_mount_dev(dev, opts, flags, out);
	if (rc) {
		dev_close(dev);
		return rc;
	}
	(*out)->own_dev = true;
	return 0;
}

int nostall_umount(struct nostall_fs *fs)
{
	if (!fs)
		return 0;
	int n = atomic_load(&fs->handles);
	if (n)
		return err_set(-EBUSY, "nostall_umount: %d handles still open", n);
	ext3_fs_unmount(fs->e);
	if (fs->own_dev)
		dev_close(fs->dev);
	free(fs);
	return 0;
}

/* ---- inodes ---- */

static int inode_get(struct nostall_fs *fs, uint64_t ino, struct ext3_inode_mem *in)
{
	if (ino == 0 || ino > ext3_fs_inodes_count(fs->e))
		return err_set(-EINVAL, "inode %llu out of range (1-%u)", (unsigned long long)ino,
			       ext3_fs_inodes_count(fs->e));
	int rc = ext3_inode_read(fs->e, (uint32_t)ino, in);
	if (rc)
		return rc;
	if (!ext3_inode_in_use(in))
		return err_set(-ENOENT, "inode %llu is not in use", (unsigned long long)ino);
	return 0;
}

/* struct ext3_inode_mem is large (a raw inode copy): keep it off small stacks. */
static struct ext3_inode_mem *inode_alloc(void)
{
	struct ext3_inode_mem *in = malloc(sizeof *in);
	if (!in)
		err_set(-ENOMEM, "out of memory");
	return in;
}

static int path_ino(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino)
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

static void stat_fill(struct nostall_fs *fs, const struct ext3_inode_mem *in,
		      struct nostall_stat *st)
{
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
	struct ext3_inode_mem *in = inode_alloc();
	if (!in)
		return -ENOMEM;
	int rc = inode_get(fs, ino, in);
	if (!rc)
		stat_fill(fs, in, st);
	free(in);
	return rc;
}

int nostall_stat(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_stat *st)
{
	uint64_t ino = 0;
	int rc = path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_stat_ino(fs, ino, st);
}

int nostall_lookup(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino)
{
	return path_ino(fs, path, flags, ino);
}

int nostall_lookup_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint64_t *ino)
{
	if (!name)
		return err_set(-EINVAL, "NULL name");
	struct ext3_inode_mem *in = inode_alloc();
	if (!in)
		return -ENOMEM;
	int rc = inode_get(fs, dir_ino, in);
	uint32_t i = 0;
	if (!rc)
		rc = ext3_dir_lookup(fs->e, in, name, strlen(name), &i, NULL);
	free(in);
	if (!rc)
		*ino = i;
	return rc;
}

/* ---- directories ---- */

static uint8_t dtype_of_ft(uint8_t ft)
{
	static const uint8_t map[8] = {NOSTALL_DT_UNKNOWN, NOSTALL_DT_REG, NOSTALL_DT_DIR,
				       NOSTALL_DT_CHR, NOSTALL_DT_BLK, NOSTALL_DT_FIFO,
				       NOSTALL_DT_SOCK, NOSTALL_DT_LNK};
	return ft < 8 ? map[ft] : NOSTALL_DT_UNKNOWN;
}

static void dirent_fill(struct nostall_dirent *d, const struct ext3_dirent_view *de,
			uint64_t next_pos)
{
	d->ino = de->inode;
	d->type = dtype_of_ft(de->file_type);
	d->name_len = de->name_len;
	memcpy(d->name, de->name, de->name_len);
	d->name[de->name_len] = '\0';
	d->next_pos = next_pos;
}

struct readdir_ctx {
	nostall_readdir_cb cb;
	void *ctx;
	struct nostall_dirent d;
};

static int readdir_cb(void *ctx, const struct ext3_dirent_view *de, uint64_t next_pos)
{
	struct readdir_ctx *r = ctx;
	dirent_fill(&r->d, de, next_pos);
	return r->cb(r->ctx, &r->d);
}

int nostall_readdir_ino(struct nostall_fs *fs, uint64_t dir_ino, nostall_readdir_cb cb, void *ctx)
{
	struct ext3_inode_mem *in = inode_alloc();
	struct readdir_ctx *r = malloc(sizeof *r);
	int rc = -ENOMEM;
	if (in && r) {
		rc = inode_get(fs, dir_ino, in);
		if (!rc) {
			r->cb = cb;
			r->ctx = ctx;
			uint64_t pos = 0;
			rc = ext3_dir_iterate(fs->e, in, &pos, readdir_cb, r);
		}
	} else {
		err_set(-ENOMEM, "out of memory");
	}
	free(in);
	free(r);
	return rc;
}

int nostall_readdir(struct nostall_fs *fs, const char *path, nostall_readdir_cb cb, void *ctx)
{
	uint64_t ino = 0;
	int rc = path_ino(fs, path, 0, &ino);
	return rc ? rc : nostall_readdir_ino(fs, ino, cb, ctx);
}

int nostall_opendir_ino(struct nostall_fs *fs, uint64_t dir_ino, struct nostall_dir **out)
{
	*out = NULL;
	struct nostall_dir *d = calloc(1, sizeof *d);
	if (!d)
		return err_set(-ENOMEM, "out of memory");
	int rc = inode_get(fs, dir_ino, &d->in);
	if (!rc && (d->in.mode & EXT3_S_IFMT) != EXT3_S_IFDIR)
		rc = err_set(-ENOTDIR, "inode %llu is not a directory", (unsigned long long)dir_ino);
	if (rc) {
		free(d);
		return rc;
	}
	d->fs = fs;
	pthread_mutex_init(&d->lock, NULL);
	atomic_fetch_add(&fs->handles, 1);
	*out = d;
	return 0;
}

int nostall_opendir(struct nostall_fs *fs, const char *path, struct nostall_dir **out)
{
	uint64_t ino = 0;
	*out = NULL;
	int rc = path_ino(fs, path, 0, &ino);
	return rc ? rc : nostall_opendir_ino(fs, ino, out);
}

static int batch_cb(void *ctx, const struct ext3_dirent_view *de, uint64_t next_pos)
{
	struct nostall_dir *d = ctx;
	dirent_fill(&d->batch[d->nbatch++], de, next_pos);
	return d->nbatch == DIR_BATCH ? 1 : 0;
}

int nostall_dir_next(struct nostall_dir *d, struct nostall_dirent *de)
{
	int rc = 0;
	pthread_mutex_lock(&d->lock);
	if (d->at == d->nbatch && !d->eof) {
		d->nbatch = d->at = 0;
		uint64_t pos = d->pos;
		rc = ext3_dir_iterate(d->fs->e, &d->in, &pos, batch_cb, d);
		if (rc == 0)
			d->eof = true;
		if (rc > 0)
			rc = 0;
	}
	if (rc == 0) {
		if (d->at < d->nbatch) {
			*de = d->batch[d->at++];
			d->pos = de->next_pos;
			rc = 1;
		}
	} else {
		/* Entries gathered before the error are still delivered next time;
		 * the error is returned now, the position stays. */
		if (d->nbatch) {
			*de = d->batch[d->at++];
			d->pos = de->next_pos;
			rc = 1;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

uint64_t nostall_dir_tell(struct nostall_dir *d)
{
	pthread_mutex_lock(&d->lock);
	uint64_t p = d->pos;
	pthread_mutex_unlock(&d->lock);
	return p;
}

int nostall_dir_seek(struct nostall_dir *d, uint64_t pos)
{
	pthread_mutex_lock(&d->lock);
	d->pos = pos;
	d->nbatch = d->at = 0;
	d->eof = false;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void nostall_closedir(struct nostall_dir *d)
{
	if (!d)
		return;
	atomic_fetch_sub(&d->fs->handles, 1);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* ---- files ---- */

int nostall_open_ino(struct nostall_fs *fs, uint64_t ino, unsigned flags, struct nostall_file **out)
{
	*out = NULL;
	if (flags & ~(unsigned)NOSTALL_O_NOFOLLOW)
		return err_set(-EROFS, "nostall_open: only reading is supported (flags 0x%x)", flags);
	struct nostall_file *f = calloc(1, sizeof *f);
	if (!f)
		return err_set(-ENOMEM, "out of memory");
	int rc = inode_get(fs, ino, &f->in);
	if (!rc) {
		uint16_t t = f->in.mode & EXT3_S_IFMT;
		if (t == EXT3_S_IFDIR)
			rc = err_set(-EISDIR, "inode %llu is a directory", (unsigned long long)ino);
		else if (t != EXT3_S_IFREG && t != EXT3_S_IFLNK)
			rc = err_set(-ENXIO, "inode %llu is a device, fifo or socket",
				     (unsigned long long)ino);
		else if (t == EXT3_S_IFREG)
			rc = ext3_fread_create(fs->e, &f->in, fs->file_readahead, &f->rd);
	}
	if (rc) {
		free(f);
		return rc;
	}
	f->fs = fs;
	pthread_mutex_init(&f->lock, NULL);
	atomic_fetch_add(&fs->handles, 1);
	*out = f;
	return 0;
}

int nostall_open(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_file **out)
{
	uint64_t ino = 0;
	*out = NULL;
	if (flags & ~(unsigned)NOSTALL_O_NOFOLLOW)
		return err_set(-EROFS, "nostall_open: only reading is supported (flags 0x%x)", flags);
	int rc = path_ino(fs, path, (flags & NOSTALL_O_NOFOLLOW) ? NOSTALL_NOFOLLOW : 0, &ino);
	return rc ? rc : nostall_open_ino(fs, ino, flags, out);
}

ssize_t nostall_pread(struct nostall_file *f, void *buf, size_t len, uint64_t off)
{
	if (len == 0)
		return 0;
	if ((f->in.mode & EXT3_S_IFMT) == EXT3_S_IFLNK) {
		char t[EXT3_MAX_BLOCK_SIZE];
		ssize_t n = ext3_symlink_read(f->fs->e, &f->in, t, sizeof t);
		if (n < 0)
			return n;
		if (off >= (uint64_t)n)
			return 0;
		size_t c = (size_t)n - (size_t)off;
		if (c > len)
			c = len;
		memcpy(buf, t + off, c);
		return (ssize_t)c;
	}
	if (f->rd)
		return ext3_fread_pread(f->rd, buf, len, off);
	return ext3_inode_pread(f->fs->e, &f->in, buf, len, off);
}

ssize_t nostall_read(struct nostall_file *f, void *buf, size_t len)
{
	pthread_mutex_lock(&f->lock);
	ssize_t n = nostall_pread(f, buf, len, f->pos);
	if (n > 0)
		f->pos += (uint64_t)n;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int64_t nostall_lseek(struct nostall_file *f, int64_t off, int whence)
{
	pthread_mutex_lock(&f->lock);
	int64_t base;
	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)f->pos; break;
	case SEEK_END: base = (int64_t)f->in.size; break;
	default:
		pthread_mutex_unlock(&f->lock);
		return err_set(-EINVAL, "lseek: bad whence %d", whence);
	}
	int64_t np;
	if (__builtin_add_overflow(base, off, &np) || np < 0) {
		pthread_mutex_unlock(&f->lock);
		return err_set(-EINVAL, "lseek: position out of range");
	}
	f->pos = (uint64_t)np;
	pthread_mutex_unlock(&f->lock);
	return np;
}

int nostall_fstat(struct nostall_file *f, struct nostall_stat *st)
{
	stat_fill(f->fs, &f->in, st);
	return 0;
}

void nostall_close(struct nostall_file *f)
{
	if (!f)
		return;
	ext3_fread_destroy(f->rd); /* waits for its readahead in flight */
	atomic_fetch_sub(&f->fs->handles, 1);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int nostall_bmap(struct nostall_file *f, uint64_t lblk, uint64_t *phys)
{
	*phys = 0;
	if ((f->in.mode & EXT3_S_IFMT) == EXT3_S_IFLNK && ext3_inode_is_fast_symlink(f->fs->e, &f->in))
		return 0;
	return ext3_inode_bmap(f->fs->e, &f->in, lblk, phys);
}

/* ---- symlinks ---- */

ssize_t nostall_readlink_ino(struct nostall_fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct ext3_inode_mem *in = inode_alloc();
	if (!in)
		return -ENOMEM;
	ssize_t rc = inode_get(fs, ino, in);
	if (!rc)
		rc = ext3_symlink_read(fs->e, in, buf, size);
	free(in);
	return rc;
}

ssize_t nostall_readlink(struct nostall_fs *fs, const char *path, char *buf, size_t size)
{
	uint64_t ino = 0;
	int rc = path_ino(fs, path, NOSTALL_NOFOLLOW, &ino);
	return rc ? rc : nostall_readlink_ino(fs, ino, buf, size);
}

/* ---- xattrs ---- */

ssize_t nostall_getxattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name, void *value,
			     size_t size)
{
	if (!name || !*name)
		return err_set(-EINVAL, "getxattr: empty name");
	struct ext3_inode_mem *in = inode_alloc();
	if (!in)
		return -ENOMEM;
	ssize_t rc = inode_get(fs, ino, in);
	if (!rc)
		rc = ext3_xattr_get(fs->e, in, name, value, size);
	free(in);
	return rc;
}

ssize_t nostall_listxattr_ino(struct nostall_fs *fs, uint64_t ino, char *list, size_t size)
{
	struct ext3_inode_mem *in = inode_alloc();
	if (!in)
		return -ENOMEM;
	ssize_t rc = inode_get(fs, ino, in);
	if (!rc)
		rc = ext3_xattr_list(fs->e, in, list, size);
	free(in);
	return rc;
}

ssize_t nostall_getxattr(struct nostall_fs *fs, const char *path, unsigned flags,
			 const char *name, void *value, size_t size)
{
	uint64_t ino = 0;
	int rc = path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_getxattr_ino(fs, ino, name, value, size);
}

ssize_t nostall_listxattr(struct nostall_fs *fs, const char *path, unsigned flags, char *list,
			  size_t size)
{
	uint64_t ino = 0;
	int rc = path_ino(fs, path, flags, &ino);
	return rc ? rc : nostall_listxattr_ino(fs, ino, list, size);
}

/* ---- filesystem-wide ---- */

int nostall_statfs(struct nostall_fs *fs, struct nostall_statfs *st)
{
	const struct ext3_super_block *sb = ext3_fs_super(fs->e);
	memset(st, 0, sizeof *st);
	uint64_t overhead = ext3_fs_overhead(fs->e);
	uint32_t bs = ext3_fs_block_size(fs->e);
	uint64_t blocks = ext3_fs_blocks_count(fs->e);
	st->block_size = bs;
	st->blocks = blocks > overhead ? blocks - overhead : 0;
	st->blocks_free = le32_to_cpu(sb->s_free_blocks_count);
	if (st->blocks_free > blocks)
		st->blocks_free = blocks;
	uint64_t r = le32_to_cpu(sb->s_r_blocks_count);
	st->blocks_avail = st->blocks_free > r ? st->blocks_free - r : 0;
	st->files = ext3_fs_inodes_count(fs->e);
	st->files_free = le32_to_cpu(sb->s_free_inodes_count);
	if (st->files_free > st->files)
		st->files_free = st->files;
	st->name_max = NOSTALL_NAME_MAX;
	memcpy(st->fsid, sb->s_uuid, 16);
	return 0;
}

const char *nostall_feature_name(int which, uint32_t bit)
{
	return ext3_feature_name(which, bit);
}

static void str_copy(char *dst, const char *src, size_t n)
{
	/* src is a fixed-size on-disk field that may lack a terminator. */
	size_t i = 0;
	for (; i < n && src[i]; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

int nostall_info(struct nostall_fs *fs, struct nostall_info *info)
{
	const struct ext3_super_block *sb = ext3_fs_super(fs->e);
	memset(info, 0, sizeof *info);
	str_copy(info->volume_name, sb->s_volume_name, sizeof sb->s_volume_name);
	ext3_uuid_format(sb->s_uuid, info->uuid);
	str_copy(info->last_mounted, sb->s_last_mounted, sizeof sb->s_last_mounted);
	info->rev_level = le32_to_cpu(sb->s_rev_level);
	info->minor_rev_level = le16_to_cpu(sb->s_minor_rev_level);
	info->block_size = ext3_fs_block_size(fs->e);
	info->blocks_count = ext3_fs_blocks_count(fs->e);
	info->r_blocks_count = le32_to_cpu(sb->s_r_blocks_count);
	info->free_blocks_count = le32_to_cpu(sb->s_free_blocks_count);
	info->inodes_count = ext3_fs_inodes_count(fs->e);
	info->free_inodes_count = le32_to_cpu(sb->s_free_inodes_count);
	info->first_data_block = le32_to_cpu(sb->s_first_data_block);
	info->blocks_per_group = le32_to_cpu(sb->s_blocks_per_group);
	info->inodes_per_group = le32_to_cpu(sb->s_inodes_per_group);
	info->groups = ext3_fs_groups(fs->e);
	info->desc_blocks = ext3_fs_desc_blocks(fs->e);
	info->inode_size = ext3_fs_inode_size(fs->e);
	bool dyn = info->rev_level >= EXT3_DYNAMIC_REV;
	info->reserved_gdt_blocks = dyn ? le16_to_cpu(sb->s_reserved_gdt_blocks) : 0;
	info->first_ino = dyn ? le32_to_cpu(sb->s_first_ino) : EXT3_GOOD_OLD_FIRST_INO;
	if (dyn) {
		info->feature_compat = le32_to_cpu(sb->s_feature_compat);
		info->feature_incompat = le32_to_cpu(sb->s_feature_incompat);
		info->feature_ro_compat = le32_to_cpu(sb->s_feature_ro_compat);
	}
	ext3_features_format(info->feature_compat, info->feature_incompat, info->feature_ro_compat,
			     info->features, sizeof info->features);
	info->state = le16_to_cpu(sb->s_state);
	info->errors = le16_to_cpu(sb->s_errors);
	info->mnt_count = le16_to_cpu(sb->s_mnt_count);
	info->max_mnt_count = (int16_t)le16_to_cpu(sb->s_max_mnt_count);
	info->mtime = le32_to_cpu(sb->s_mtime);
	info->wtime = le32_to_cpu(sb->s_wtime);
	info->lastcheck = le32_to_cpu(sb->s_lastcheck);
	info->mkfs_time = dyn ? le32_to_cpu(sb->s_mkfs_time) : 0;
	info->checkinterval = le32_to_cpu(sb->s_checkinterval);
	info->creator_os = le32_to_cpu(sb->s_creator_os);
	if (dyn) {
		info->journal_inum = le32_to_cpu(sb->s_journal_inum);
		info->journal_dev = le32_to_cpu(sb->s_journal_dev);
		memcpy(info->journal_uuid, sb->s_journal_uuid, 16);
		info->last_orphan = le32_to_cpu(sb->s_last_orphan);
		for (int i = 0; i < 4; i++)
			info->hash_seed[i] = le32_to_cpu(sb->s_hash_seed[i]);
		info->def_hash_version = sb->s_def_hash_version;
		info->flags = le32_to_cpu(sb->s_flags);
		info->default_mount_opts = le32_to_cpu(sb->s_default_mount_opts);
		info->min_extra_isize = le16_to_cpu(sb->s_min_extra_isize);
		info->want_extra_isize = le16_to_cpu(sb->s_want_extra_isize);
	}
	info->def_resuid = le16_to_cpu(sb->s_def_resuid);
	info->def_resgid = le16_to_cpu(sb->s_def_resgid);
	info->read_only = 1;
	info->needs_recovery = ext3_fs_needs_recovery(fs->e);
	info->unknown_ro_compat = ext3_fs_unknown_ro_compat(fs->e);
	info->unsigned_hash = ext3_fs_unsigned_hash(fs->e);
	info->superblock_block = ext3_fs_sb_block(fs->e);
	return 0;
}

int nostall_group_info(struct nostall_fs *fs, uint32_t g, struct nostall_group_info *gi)
{
	const struct ext3_group_desc *d = ext3_fs_group_desc(fs->e, g);
	if (!d)
		return err_set(-EINVAL, "group %u out of range (%u groups)", g, ext3_fs_groups(fs->e));
	memset(gi, 0, sizeof *gi);
	gi->group = g;
	ext3_fs_group_range(fs->e, g, &gi->first_block, &gi->last_block);
	gi->has_super = ext3_fs_group_has_super(fs->e, g);
	gi->block_bitmap = d->bg_block_bitmap;
	gi->inode_bitmap = d->bg_inode_bitmap;
	gi->inode_table = d->bg_inode_table;
	gi->free_blocks = d->bg_free_blocks_count;
	gi->free_inodes = d->bg_free_inodes_count;
	gi->used_dirs = d->bg_used_dirs_count;
	gi->flags = d->bg_flags;
	return 0;
}
