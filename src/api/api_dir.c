/* Public API: directories (include/nostall/nostall.h): readdir with a
 * callback, and iterators that deliver entries in batches of DIR_BATCH read
 * under the iterator's mutex. */
#include "api/api_int.h"

#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
	struct readdir_ctx *r = malloc(sizeof *r);
	if (!r)
		return err_set(-ENOMEM, "out of memory");
	struct ext3_inode *in;
	int rc = api_inode_get(fs, dir_ino, &in);
	if (!rc) {
		r->cb = cb;
		r->ctx = ctx;
		uint64_t pos = 0;
		/* cb runs with the directory's lock held as reader (ext3.h). */
		rc = ext3_dir_iterate(fs->e, in, &pos, readdir_cb, r);
		ext3_iput(in);
	}
	free(r);
	return rc;
}

int nostall_readdir(struct nostall_fs *fs, const char *path, nostall_readdir_cb cb, void *ctx)
{
	uint64_t ino = 0;
	int rc = api_path_ino(fs, path, 0, &ino);
	return rc ? rc : nostall_readdir_ino(fs, ino, cb, ctx);
}

int nostall_opendir_ino(struct nostall_fs *fs, uint64_t dir_ino, struct nostall_dir **out)
{
	*out = NULL;
	struct nostall_dir *d = calloc(1, sizeof *d);
	if (!d)
		return err_set(-ENOMEM, "out of memory");
	int rc = api_inode_get(fs, dir_ino, &d->in);
	if (!rc && (ext3_inode_mode(d->in) & EXT3_S_IFMT) != EXT3_S_IFDIR)
		rc = err_set(-ENOTDIR, "inode %llu is not a directory", (unsigned long long)dir_ino);
	if (!rc) {
		d->fs = fs;
		pthread_mutex_init(&d->lock, NULL);
		atomic_fetch_add(&fs->handles, 1);
		*out = d;
		return 0;
	}
	ext3_iput(d->in);
	free(d);
	return rc;
}

int nostall_opendir(struct nostall_fs *fs, const char *path, struct nostall_dir **out)
{
	uint64_t ino = 0;
	*out = NULL;
	int rc = api_path_ino(fs, path, 0, &ino);
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
		rc = ext3_dir_iterate(d->fs->e, d->in, &pos, batch_cb, d);
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
	ext3_iput(d->in);
	atomic_fetch_sub(&d->fs->handles, 1);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

