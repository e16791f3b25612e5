/* Public API: placeholder stubs (the read path lands next). */
#include "nostall/nostall.h"
#include "util/err.h"
#include <errno.h>
#include <string.h>

const char *nostall_errmsg(int rc)
{ return err_last(rc); }

int nostall_mount(const char *image_or_spec, const char *opts, unsigned flags, struct nostall_fs **out)
{ return -ENOSYS; }

int nostall_mount_dev(struct dev *dev, const char *opts, unsigned flags, struct nostall_fs **out)
{ return -ENOSYS; }

int nostall_umount(struct nostall_fs *fs)
{ return -ENOSYS; }

int nostall_stat(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_stat *st)
{ return -ENOSYS; }

int nostall_stat_ino(struct nostall_fs *fs, uint64_t ino, struct nostall_stat *st)
{ return -ENOSYS; }

int nostall_lookup(struct nostall_fs *fs, const char *path, unsigned flags, uint64_t *ino)
{ return -ENOSYS; }

int nostall_lookup_at(struct nostall_fs *fs, uint64_t dir_ino, const char *name, uint64_t *ino)
{ return -ENOSYS; }

int nostall_readdir(struct nostall_fs *fs, const char *path, nostall_readdir_cb cb, void *ctx)
{ return -ENOSYS; }

int nostall_readdir_ino(struct nostall_fs *fs, uint64_t dir_ino, nostall_readdir_cb cb, void *ctx)
{ return -ENOSYS; }

int nostall_opendir(struct nostall_fs *fs, const char *path, struct nostall_dir **out)
{ return -ENOSYS; }

int nostall_opendir_ino(struct nostall_fs *fs, uint64_t dir_ino, struct nostall_dir **out)
{ return -ENOSYS; }

int nostall_dir_next(struct nostall_dir *d, struct nostall_dirent *de)
{ return -ENOSYS; }

uint64_t nostall_dir_tell(struct nostall_dir *d)
{ return 0; }

int nostall_dir_seek(struct nostall_dir *d, uint64_t pos)
{ return -ENOSYS; }

void nostall_closedir(struct nostall_dir *d)
{ }

int nostall_open(struct nostall_fs *fs, const char *path, unsigned flags, struct nostall_file **out)
{ return -ENOSYS; }

int nostall_open_ino(struct nostall_fs *fs, uint64_t ino, unsigned flags, struct nostall_file **out)
{ return -ENOSYS; }

ssize_t nostall_read(struct nostall_file *f, void *buf, size_t len)
{ return -ENOSYS; }

ssize_t nostall_pread(struct nostall_file *f, void *buf, size_t len, uint64_t off)
{ return -ENOSYS; }

int64_t nostall_lseek(struct nostall_file *f, int64_t off, int whence)
{ return -ENOSYS; }

int nostall_fstat(struct nostall_file *f, struct nostall_stat *st)
{ return -ENOSYS; }

void nostall_close(struct nostall_file *f)
{ }

int nostall_bmap(struct nostall_file *f, uint64_t lblk, uint64_t *phys)
{ return -ENOSYS; }

ssize_t nostall_readlink(struct nostall_fs *fs, const char *path, char *buf, size_t size)
{ return -ENOSYS; }

ssize_t nostall_readlink_ino(struct nostall_fs *fs, uint64_t ino, char *buf, size_t size)
{ return -ENOSYS; }

ssize_t nostall_getxattr(struct nostall_fs *fs, const char *path, unsigned flags, const char *name, void *value, size_t size)
{ return -ENOSYS; }

ssize_t nostall_listxattr(struct nostall_fs *fs, const char *path, unsigned flags, char *list, size_t size)
{ return -ENOSYS; }

ssize_t nostall_getxattr_ino(struct nostall_fs *fs, uint64_t ino, const char *name, void *value, size_t size)
{ return -ENOSYS; }

ssize_t nostall_listxattr_ino(struct nostall_fs *fs, uint64_t ino, char *list, size_t size)
{ return -ENOSYS; }

int nostall_statfs(struct nostall_fs *fs, struct nostall_statfs *st)
{ return -ENOSYS; }

int nostall_info(struct nostall_fs *fs, struct nostall_info *info)
{ return -ENOSYS; }

int nostall_group_info(struct nostall_fs *fs, uint32_t g, struct nostall_group_info *gi)
{ return -ENOSYS; }

const char *nostall_feature_name(int which, uint32_t bit)
{ return NULL; }
