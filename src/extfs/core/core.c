/* The ext3 core: block reads through the buffer cache with the
 * filesystem's bounds check, and inode locations. Everything else in
 * src/extfs sits on top of this and geom.c; this file calls nothing in
 * src/extfs (see docs/ext3-read-path.md, "Files"). */
#include "extfs/core/ext3_int.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>

int ext3_bread(struct ext3_fs *fs, uint64_t blk, const char *what, struct buffer_head **out)
{
	*out = NULL;
	if (blk >= fs->g.blocks_count || (blk == 0 && fs->g.first_data_block == 1))
		return err_set(-EUCLEAN, "ext3: %s block %llu outside the filesystem (%u blocks)",
			       what ? what : "metadata", (unsigned long long)blk, fs->g.blocks_count);
	int rc = buf_read(fs->cache, blk, out);
	if (rc < 0) {
		*out = NULL;
		return err_wrap(rc, "ext3: reading %s block %llu", what ? what : "metadata",
				(unsigned long long)blk);
	}
	return 0;
}

void ext3_fs_inode_loc(const struct ext3_fs *fs, uint32_t ino, uint64_t *blk, unsigned *off)
{
	uint32_t g = ext3_geom_group_of_ino(&fs->g, ino);
	uint32_t idx = ext3_geom_ino_index(&fs->g, ino);
	*blk = (uint64_t)fs->gd[g].bg_inode_table + idx / fs->g.inodes_per_block;
	*off = (idx % fs->g.inodes_per_block) * fs->g.inode_size;
}
