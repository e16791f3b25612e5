/* ext3 directories, the write side: adding, removing and retargeting
 * entries in linear directories (htree insertion is dx_write.c), new
 * directories, "..", emptiness. The semantics are 2.6.30 ext3's namei.c
 * (add_dirent_to_buf, ext3_add_entry, ext3_delete_entry, ext3_mkdir's first
 * block, empty_dir), written from their description in docs/write-dirs.md.
 *
 * Locking: the caller holds dir->lock as writer for every change (reader or
 * writer for ext3_dir_is_empty) and a journal handle; nothing here takes
 * the inode lock. Every block is checked before it is changed; a corrupt
 * one goes through ext3_fs_error and is never written over. */
#include "extfs/dir/dir_int.h"
#include "extfs/core/csum.h"
#include "extfs/core/write.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ext3_dir_corrupt(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t lblk, int rc)
{
	char msg[512]; /* err_last's buffer is rewritten by ext3_fs_error */
	snprintf(msg, sizeof msg, "%s", err_last(rc));
	if (lblk == UINT64_MAX)
		return ext3_fs_error(fs, "directory inode %u: %s", dir->ino, msg);
	return ext3_fs_error(fs, "directory inode %u, block %llu: %s", dir->ino,
			     (unsigned long long)lblk, msg);
}

/* The directory's block count; a bad one is corruption. */
static int dir_nblocks_w(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t *n)
{
	int rc = ext3_dir_nblocks(fs, dir, n);
	return rc == -EUCLEAN ? ext3_dir_corrupt(fs, dir, UINT64_MAX, rc) : rc;
}

unsigned ext3_dir_leaf_bytes(const struct ext3_fs *fs)
{
	return fs->g.block_size - ext4_dir_tail_bytes(fs);
}

/* Is b an htree block of dir (a root or an interior node)? */
static bool dir_block_is_index(const struct ext3_fs *fs, const struct ext3_inode *dir, const uint8_t *b)
{
	return ext3_dir_is_dx(fs, dir) && ext4_dir_is_dx_block(b, fs->g.block_size);
}

int ext3_dir_dirty(struct jbd_handle *h, const struct ext3_inode *dir, struct buffer_head *bh)
{
	struct ext3_fs *fs = dir->fs;
	uint8_t *b = buf_data(bh);
	if (!ext4_has_metadata_csum(fs)) {
	} else if (dir_block_is_index(fs, dir, b)) {
		/* a leaf's deferred sum must not land in an index (a leaf
		 * becomes the htree root in place) */
		buf_csum_cancel(bh);
		bool root = le16_to_cpu(((const struct ext3_dir_entry_2 *)b)->rec_len) == 12;
		ext4_dx_csum_update(fs, dir->ino, dir->a.generation, b,
				    root ? EXT3_DX_ROOT_CL : EXT3_DX_NODE_CL);
	} else {
		ext4_dirblock_csum_defer(dir, bh);
	}
	return ext3_journal_dirty_metadata(h, bh);
}

int ext3_dir_read_checked(struct ext3_fs *fs, const struct ext3_inode *dir, uint64_t lblk,
			  struct buffer_head **out)
{
	int rc = ext3_dir_bread(fs, dir, lblk, out);
	if (rc == 0) {
		/* a leaf's entries end where its tail starts (the read
		 * checked the tail); an index block's fake entries span it */
		const uint8_t *b = buf_data(*out);
		unsigned n = dir_block_is_index(fs, dir, b) ? fs->g.block_size : ext3_dir_leaf_bytes(fs);
		rc = ext3_dirblk_check(b, n, fs->g.inodes_count, fs->has_filetype);
		if (rc) {
			buf_put(*out);
			*out = NULL;
		}
	}
	return rc == -EUCLEAN ? ext3_dir_corrupt(fs, dir, lblk, rc) : rc;
}

int ext3_dir_append(struct jbd_handle *h, struct ext3_inode *dir, uint64_t *lblk,
		    struct buffer_head **out)
{
	struct ext3_fs *fs = dir->fs;
	uint32_t bs = fs->g.block_size;
	*out = NULL;
	/* i_size_high of a directory is i_dir_acl in ext3: 4 GiB at most */
	if (dir->i_size + bs > UINT32_MAX)
		return err_set(-ENOSPC, "ext3: directory inode %u is at its 4 GiB limit", dir->ino);
	uint64_t l = dir->i_size / bs, phys;
	uint32_t count;
	bool is_new;
	int rc = ext3_get_blocks(h, dir, l, 1, true, &phys, &count, &is_new);
	if (rc)
		return err_wrap(rc, "ext3: growing directory inode %u", dir->ino);
	/* The block is overwritten whole, so it is not read even when it was
	 * already mapped past i_size (left by a failed grow). */
	struct buffer_head *bh = buf_get(fs->cache, phys, &rc);
	if (!bh)
		return err_set(rc ? rc : -ENOMEM, "ext3: directory block %llu: no buffer",
			       (unsigned long long)phys);
	rc = is_new ? ext3_journal_get_create_access(h, bh) : ext3_journal_get_write_access(h, bh);
	if (rc) {
		buf_put(bh);
		return rc;
	}
	buf_lock(bh);
	memset(buf_data(bh), 0, bs);
	ext3_dirblk_init(buf_data(bh), ext3_dir_leaf_bytes(fs));
	buf_set_uptodate(bh);
	buf_unlock(bh);
	/* journaled as an empty block at once: whatever fails later, the
	 * directory's new size never exposes an unwritten block */
	rc = ext3_dir_dirty(h, dir, bh);
	if (rc) {
		buf_put(bh);
		return rc;
	}
	dir->i_size += bs;
	dir->i_disksize = dir->i_size;
	dir->a.size = dir->i_size;
	rc = ext3_mark_inode_dirty(h, dir);
	if (rc) {
		buf_put(bh);
		return rc;
	}
	*lblk = l;
	*out = bh;
	return 0;
}

int ext3_dir_put_entry(struct jbd_handle *h, struct ext3_inode *dir, struct buffer_head *bh,
		       unsigned off, const char *name, size_t len, uint32_t ino, uint8_t file_type)
{
	int rc = ext3_journal_get_write_access(h, bh);
	if (rc)
		return rc;
	ext3_dirblk_put(buf_data(bh), off, name, len, ino, file_type);
	return ext3_dir_dirty(h, dir, bh);
}

/* After a change: mtime = ctime = now, and the inode written. */
static int dir_touch(struct jbd_handle *h, struct ext3_inode *dir)
{
	int64_t sec;
	uint32_t nsec;
	ext3_now(&sec, &nsec);
	dir->a.mtime = dir->a.ctime = sec;
	dir->a.mtime_ns = dir->a.ctime_ns = nsec;
	/* ext3_update_dx_flag: no index without the feature */
	if (!(dir->fs->compat & EXT3_FEATURE_COMPAT_DIR_INDEX))
		dir->a.flags &= ~(uint32_t)EXT3_INDEX_FL;
	return ext3_mark_inode_dirty(h, dir);
}

static bool name_is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

static int name_check(const char *name, size_t len)
{
	if (len == 0 || len > EXT3_NAME_LEN)
		return err_set(len ? -ENAMETOOLONG : -EINVAL, "ext3: bad name length %zu", len);
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return err_set(-EINVAL, "ext3: a name may not hold '/' or NUL");
	return 0;
}

/* Can the one-block directory in b become indexed (kernel's
 * make_indexed_dir preconditions)? */
static bool dir_can_index(const struct ext3_fs *fs, const uint8_t *b)
{
	unsigned dotdot;
	return (fs->compat & EXT3_FEATURE_COMPAT_DIR_INDEX) &&
	       fs->def_hash_version <= EXT3_DX_HASH_TEA &&
	       ext3_dirblk_dots_check(b, fs->g.block_size, &dotdot) == 0 && dotdot == 12;
}

/* Linear insertion: the first block with room; a full single block on a
 * dir_index filesystem becomes an index; else a new block at the end. */
static int dir_add_linear(struct jbd_handle *h, struct ext3_inode *dir, const char *name,
			  size_t len, uint32_t ino, uint8_t ft)
{
	struct ext3_fs *fs = dir->fs;
	uint64_t nblocks;
	int rc = dir_nblocks_w(fs, dir, &nblocks);
	if (rc)
		return rc;
	struct buffer_head *bh;
	unsigned off;
	for (uint64_t lblk = 0; lblk < nblocks; lblk++) {
		rc = ext3_dir_read_checked(fs, dir, lblk, &bh);
		if (rc)
			return rc;
		if (ext3_dirblk_room(buf_data(bh), ext3_dir_leaf_bytes(fs), len, &off) == 0) {
			rc = ext3_dir_put_entry(h, dir, bh, off, name, len, ino, ft);
			buf_put(bh);
			return rc;
		}
		if (nblocks == 1 && dir_can_index(fs, buf_data(bh))) {
			rc = ext3_dx_make_indexed(h, dir, bh, name, len, ino, ft);
			buf_put(bh);
			return rc;
		}
		buf_put(bh);
	}
	uint64_t lblk;
	rc = ext3_dir_append(h, dir, &lblk, &bh);
	if (rc)
		return rc;
	rc = ext3_dir_put_entry(h, dir, bh, 0, name, len, ino, ft);
	buf_put(bh);
	return rc;
}

int ext3_dir_add(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		 uint32_t ino, uint16_t mode)
{
	struct ext3_fs *fs = dir->fs;
	int rc = name_check(name, len);
	if (rc)
		return rc;
	if (name_is_dot(name, len))
		return err_set(-EEXIST, "ext3: \"%.*s\" always exists", (int)len, name);
	if (ino == 0 || ino > fs->g.inodes_count)
		return err_set(-EINVAL, "ext3: inode %u out of range", ino);
	uint8_t ft = fs->has_filetype ? ext3_mode_to_ft(mode) : 0;
	if (ext3_dir_is_dx(fs, dir))
		rc = ext3_dx_add(h, dir, name, len, ino, ft);
	else
		rc = dir_add_linear(h, dir, name, len, ino, ft);
	if (rc)
		return rc;
	return dir_touch(h, dir);
}

/* The entry for name, under write access: its block (checked) and the
 * entry's place in it. */
static int dir_entry_for_write(struct jbd_handle *h, struct ext3_inode *dir, const char *name,
			       size_t len, struct buffer_head **out, unsigned *off, unsigned *prev)
{
	struct ext3_fs *fs = dir->fs;
	*out = NULL;
	int rc = name_check(name, len);
	if (rc)
		return rc;
	if (name_is_dot(name, len))
		return err_set(-EINVAL, "ext3: \"%.*s\" cannot be removed or retargeted", (int)len,
			       name);
	uint64_t lblk;
	uint32_t ino;
	rc = ext3_dir_find_locked(fs, dir, name, len, &lblk, &ino, NULL);
	if (rc == -EUCLEAN)
		return ext3_dir_corrupt(fs, dir, UINT64_MAX, rc);
	if (rc)
		return rc;
	rc = ext3_dir_read_checked(fs, dir, lblk, out);
	if (rc)
		return rc;
	if (ext3_dirblk_find(buf_data(*out), fs->g.block_size, name, len, off, prev))
		rc = err_set(-ENOENT, "ext3: directory inode %u: \"%.*s\" vanished", dir->ino,
			     (int)len, name);
	else
		rc = ext3_journal_get_write_access(h, *out);
	if (rc) {
		buf_put(*out);
		*out = NULL;
	}
	return rc;
}

/* The entry's block changed: journal it, release it, touch the directory. */
static int dir_entry_done(struct jbd_handle *h, struct ext3_inode *dir, struct buffer_head *bh)
{
	int rc = ext3_dir_dirty(h, dir, bh);
	buf_put(bh);
	return rc ? rc : dir_touch(h, dir);
}

int ext3_dir_remove(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		    uint32_t *ino)
{
	struct buffer_head *bh;
	unsigned off, prev;
	int rc = dir_entry_for_write(h, dir, name, len, &bh, &off, &prev);
	if (rc)
		return rc;
	uint8_t *b = buf_data(bh);
	*ino = le32_to_cpu(((const struct ext3_dir_entry_2 *)(b + off))->inode);
	ext3_dirblk_del(b, off, prev);
	return dir_entry_done(h, dir, bh);
}

int ext3_dir_retarget(struct jbd_handle *h, struct ext3_inode *dir, const char *name, size_t len,
		      uint32_t ino, uint16_t mode)
{
	struct ext3_fs *fs = dir->fs;
	if (ino == 0 || ino > fs->g.inodes_count)
		return err_set(-EINVAL, "ext3: inode %u out of range", ino);
	struct buffer_head *bh;
	unsigned off, prev;
	int rc = dir_entry_for_write(h, dir, name, len, &bh, &off, &prev);
	if (rc)
		return rc;
	struct ext3_dir_entry_2 *e = (struct ext3_dir_entry_2 *)((uint8_t *)buf_data(bh) + off);
	e->inode = cpu_to_le32(ino);
	e->file_type = fs->has_filetype ? ext3_mode_to_ft(mode) : 0;
	return dir_entry_done(h, dir, bh);
}

int ext3_dir_make(struct jbd_handle *h, struct ext3_inode *dir, uint32_t parent_ino)
{
	struct ext3_fs *fs = dir->fs;
	if (dir->i_size != 0)
		return err_set(-EEXIST, "ext3: inode %u already has directory blocks", dir->ino);
	uint64_t lblk;
	struct buffer_head *bh;
	int rc = ext3_dir_append(h, dir, &lblk, &bh);
	if (rc)
		return rc;
	ext3_dirblk_dots(buf_data(bh), ext3_dir_leaf_bytes(fs), dir->ino, parent_ino, fs->has_filetype);
	rc = ext3_dir_dirty(h, dir, bh);
	buf_put(bh);
	return rc;
}

int ext3_dir_set_parent(struct jbd_handle *h, struct ext3_inode *dir, uint32_t parent_ino)
{
	struct ext3_fs *fs = dir->fs;
	struct buffer_head *bh;
	int rc = ext3_dir_read_checked(fs, dir, 0, &bh);
	if (rc)
		return rc;
	unsigned dotdot;
	rc = ext3_dirblk_dots_check(buf_data(bh), fs->g.block_size, &dotdot);
	if (rc) {
		buf_put(bh);
		return ext3_dir_corrupt(fs, dir, 0, rc);
	}
	rc = ext3_journal_get_write_access(h, bh);
	if (rc == 0) {
		struct ext3_dir_entry_2 *e =
			(struct ext3_dir_entry_2 *)((uint8_t *)buf_data(bh) + dotdot);
		e->inode = cpu_to_le32(parent_ino);
		rc = ext3_dir_dirty(h, dir, bh);
	}
	buf_put(bh);
	return rc; /* the moved directory's ctime is the caller's (rename) */
}

int ext3_dir_is_empty(struct ext3_inode *dir, bool *empty)
{
	struct ext3_fs *fs = dir->fs;
	uint64_t nblocks;
	int rc = dir_nblocks_w(fs, dir, &nblocks);
	if (rc)
		return rc;
	*empty = true;
	for (uint64_t lblk = 0; lblk < nblocks && *empty; lblk++) {
		struct buffer_head *bh;
		rc = ext3_dir_read_checked(fs, dir, lblk, &bh);
		if (rc)
			return rc;
		const uint8_t *b = buf_data(bh);
		unsigned skip = 0;
		if (lblk == 0) {
			unsigned dotdot;
			rc = ext3_dirblk_dots_check(b, fs->g.block_size, &dotdot);
			skip = 2;
		}
		if (rc == 0 && ext3_dirblk_live(b, fs->g.block_size, skip))
			*empty = false;
		buf_put(bh);
		if (rc)
			return ext3_dir_corrupt(fs, dir, 0, rc);
	}
	return 0;
}
