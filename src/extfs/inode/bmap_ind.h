/* The indirect block map's files (bmap_ind.c lookups and the ops table,
 * bmap_ind_alloc.c allocation, bmap_ind_trunc.c freeing): what they share.
 * Private to those three files and the unit tests; everything else goes
 * through bmap.h's dispatchers. */
#ifndef NOSTALL_EXT3_BMAP_IND_H
#define NOSTALL_EXT3_BMAP_IND_H

#include "extfs/inode/bmap.h"

/* Logical blocks an indirect-mapped file may have (the triple-indirect tree
 * and i_blocks bound). */
uint64_t ext3_ind_max_blocks(const struct ext3_fs *fs);
/* The path to logical block lblk: off[0] indexes i_block (0..14), off[1..]
 * the indirect blocks below; *depth 1..4. -EFBIG past ext3_ind_max_blocks. */
int ext3_ind_block_to_path(const struct ext3_fs *fs, uint32_t ino, uint64_t lblk, uint32_t off[4],
			   int *depth);
/* ops->get_blocks (bmap_ind_alloc.c). */
int ext3_ind_get_blocks(struct jbd_handle *h, struct ext3_inode *in, uint64_t lblk, uint32_t max,
			bool create, uint64_t *phys, uint32_t *count, bool *is_new);
/* ops->truncate (bmap_ind_trunc.c). */
int ext3_ind_truncate(struct ext3_bmap_trunc *t, uint64_t first);

#endif
