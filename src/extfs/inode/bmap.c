/* The block-map dispatchers (bmap.h): each picks the inode's map kind and
 * calls its table: the indirect map (bmap_ind*.c), or for an extent-mapped
 * inode (EXT4_EXTENTS_FL on a filesystem with the extent feature) the
 * extent tree's (bmap_ext.c, extent_write.c, extent_remove.c). Also the map-kind independent parts: the
 * map cache's life, the truncate step's room in the handle. */
#include "extfs/inode/bmap.h"

#include "jbd/jbd.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>

/* ---- choosing the table ---- */

const struct ext3_bmap_ops *ext3_bmap_ops_of(const struct ext3_inode *in)
{
	/* The flag alone does not make an extent inode: ext3 ignores it, and
	 * so did nostall before this table (hostile images set it). */
	if ((in->a.flags & EXT4_EXTENTS_FL) &&
	    (le32_to_cpu(in->fs->sb.s_feature_incompat) & EXT4_FEATURE_INCOMPAT_EXTENTS))
		return &ext3_bmap_ext_ops;
	return &ext3_bmap_ind_ops;
}

/* ---- the dispatchers ---- */

static bool fs_has_extents(const struct ext3_fs *fs)
{
	return le32_to_cpu(fs->sb.s_feature_incompat) & EXT4_FEATURE_INCOMPAT_EXTENTS;
}

uint64_t ext3_max_blocks(const struct ext3_fs *fs)
{
	/* Per filesystem: the larger of the maps its files may have (an
	 * indirect file on an extent filesystem stops at its own bound with
	 * -EFBIG from its get_blocks; truncate asks per inode). */
	uint64_t ind = ext3_bmap_ind_ops.max_blocks(fs);
	if (!fs_has_extents(fs))
		return ind;
	uint64_t ext = ext3_bmap_ext_ops.max_blocks(fs);
	return ext > ind ? ext : ind;
}

uint64_t ext3_bmap_credits(const struct ext3_fs *fs, uint64_t n)
{
	/* Per filesystem, as ext3_max_blocks: on an extent filesystem the
	 * larger of its two maps' (the extent map also extends the handle by
	 * the inode's own figure before each insert). */
	uint64_t ind = ext3_bmap_ind_ops.map_credits(fs, n);
	if (!fs_has_extents(fs))
		return ind;
	uint64_t ext = ext3_bmap_ext_ops.map_credits(fs, n);
	return ext > ind ? ext : ind;
}

int ext3_inode_bmap(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
		    uint64_t *physical)
{
	ext3_inode_rdlock(in);
	int rc = ext3_bmap_ops_of(in)->map_block(fs, in, logical, physical);
	ext3_inode_unlock(in);
	return rc;
}

int ext3_inode_bmap_locked(struct ext3_fs *fs, const struct ext3_inode *in, uint64_t logical,
			   uint64_t *physical)
{
	return ext3_bmap_ops_of(in)->map_block(fs, in, logical, physical);
}

int ext3_inode_map_run(struct ext3_fs *fs, struct ext3_inode *in, struct ext3_map_cache *mc,
		       uint64_t logical, uint64_t max, uint64_t *physical, uint64_t *count)
{
	ext3_inode_rdlock(in);
	int rc = ext3_bmap_ops_of(in)->map_run(fs, in, mc, logical, max, physical, count);
	ext3_inode_unlock(in);
	return rc;
}

int ext3_inode_map_guess(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			 uint64_t max, uint64_t prev_hint, uint64_t *physical, uint64_t *count)
{
	ext3_inode_rdlock(in);
	int rc = ext3_bmap_ops_of(in)->map_guess(fs, in, logical, max, prev_hint, physical, count);
	ext3_inode_unlock(in);
	return rc;
}

int ext3_inode_map_prefetch(struct ext3_fs *fs, struct ext3_inode *in, uint64_t logical,
			    uint64_t *next)
{
	ext3_inode_rdlock(in);
	int rc = ext3_bmap_ops_of(in)->map_prefetch(fs, in, logical, next);
	ext3_inode_unlock(in);
	return rc;
}

int ext3_get_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk, uint32_t max,
		    bool create, uint64_t *phys, uint32_t *count, bool *is_new)
{
	return ext3_bmap_ops_of(in)->get_blocks(h, in, lblk, max, create, phys, count, is_new);
}

int ext3_bmap_truncate(struct ext3_bmap_trunc *t, uint64_t first)
{
	return ext3_bmap_ops_of(t->in)->truncate(t, first);
}

/* ---- the map cache ---- */

struct ext3_map_cache *ext3_map_cache_new(void)
{
	struct ext3_map_cache *mc = malloc(sizeof *mc);
	if (mc)
		mc->valid = false;
	return mc;
}

void ext3_map_cache_free(struct ext3_map_cache *mc)
{
	free(mc);
}

void ext3_inode_map_invalidate(struct ext3_inode *in)
{
	pthread_mutex_lock(&in->map_lock);
	if (in->map)
		in->map->valid = false;
	pthread_mutex_unlock(&in->map_lock);
}

void ext3_inode_map_drop(struct ext3_inode *in)
{
	free(in->map);
	in->map = NULL;
}

/* ---- truncate steps ---- */

int ext3_bmap_trunc_room(struct ext3_bmap_trunc *t)
{
	if (t->budget >= EXT3_BMAP_TRUNC_STEP_CREDITS)
		return 0;
	if (ext3_handle_extend(t->h, t->credits) == 0) {
		t->budget += t->credits;
		return 0;
	}
	/* The transaction ends here: the inode (i_blocks, the map) with it. */
	int rc = ext3_mark_inode_dirty(t->h, t->in);
	if (rc)
		return rc;
	rc = ext3_handle_restart(t->h, t->credits);
	if (rc)
		return err_wrap(rc, "ext3: inode %u: restarting the truncate", t->in->ino);
	t->budget = t->credits;
	return 0;
}
