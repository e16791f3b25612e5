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
	if (!rc) /* opendir is an open for reading */
		rc = ext3_permission(d->in, EXT3_MAY_READ);
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

/* ---- iterators: hash cookies for indexed directories (ext3.h,
 *      ext3_dir_iterate_stable); byte offsets for linear ones ---- */

static bool seen_has(const struct nostall_dir *d, const char *name, size_t len)
{
	for (size_t i = 0; i < d->seen_len; i += 1 + (size_t)d->seen[i])
		if (d->seen[i] == len && memcmp(d->seen + i + 1, name, len) == 0)
			return true;
	return false;
}

static void seen_drop(struct nostall_dir *d)
{
	free(d->seen);
	d->seen = NULL;
	d->seen_len = d->seen_cap = 0;
	d->seen_off = false;
}

/* Record a name returned at a linear position inside the first block. */
static void seen_note(struct nostall_dir *d, const struct nostall_dirent *de)
{
	if (d->seen_off || (de->next_pos & EXT3_DIR_COOKIE_HASH))
		return;
	if (de->next_pos > ext3_fs_block_size(d->fs->e)) {
		seen_drop(d);
		d->seen_off = true;
		return;
	}
	if (d->seen_len + 1 + de->name_len > d->seen_cap) {
		size_t cap = d->seen_cap ? 2 * d->seen_cap : 1024;
		uint8_t *p = realloc(d->seen, cap);
		if (!p) { /* without the record a conversion may repeat names */
			seen_drop(d);
			d->seen_off = true;
			return;
		}
		d->seen = p;
		d->seen_cap = cap;
	}
	d->seen[d->seen_len] = (uint8_t)de->name_len;
	memcpy(d->seen + d->seen_len + 1, de->name, de->name_len);
	d->seen_len += 1 + (size_t)de->name_len;
}

static int batch_cb(void *ctx, const struct ext3_dirent_view *de, uint64_t next_pos)
{
	struct nostall_dir *d = ctx;
	/* Hash order after the linear form: skip what was returned then. */
	if ((next_pos & EXT3_DIR_COOKIE_HASH) && d->seen_len && seen_has(d, de->name, de->name_len))
		return 0;
	dirent_fill(&d->batch[d->nbatch++], de, next_pos);
	return d->nbatch == DIR_BATCH ? 1 : 0;
}

/* Deliver batch entry d->at. */
static void dir_take(struct nostall_dir *d, struct nostall_dirent *de)
{
	*de = d->batch[d->at++];
	d->pos = de->next_pos;
	memcpy(d->last, de->name, de->name_len);
	d->last_len = de->name_len;
	d->last_pos = de->next_pos;
	d->has_last = true;
	seen_note(d, de);
}

int nostall_dir_next(struct nostall_dir *d, struct nostall_dirent *de)
{
	int rc = 0;
	pthread_mutex_lock(&d->lock);
	if (d->at == d->nbatch && !d->eof) {
		d->nbatch = d->at = 0;
		uint64_t pos = d->pos;
		bool after = d->has_last && d->last_pos == pos;
		rc = ext3_dir_iterate_stable(d->fs->e, d->in, &pos, after ? d->last : NULL,
					     after ? d->last_len : 0, batch_cb, d);
		if (rc == 0)
			d->eof = true;
		if (rc > 0)
			rc = 0;
	}
	if (rc == 0) {
		if (d->at < d->nbatch) {
			dir_take(d, de);
			rc = 1;
		}
	} else if (d->nbatch) {
		/* Entries gathered before the error are still delivered next time;
		 * the error is returned now, the position stays. */
		dir_take(d, de);
		rc = 1;
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
	/* Another position: what was seen before it is unknown. */
	if (pos != d->pos) {
		seen_drop(d);
		if (pos)
			d->seen_off = true;
	}
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
	free(d->seen);
	free(d);
}

