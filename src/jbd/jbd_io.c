/* Log-block I/O: the journal block -> device block map, reading and
 * writing one journal block (or one device block, for replay) through it,
 * and cache flushes. Used by recovery, the superblock writer and journal
 * creation; the commit writes its log blocks itself (batched bios) with the
 * same map.
 *
 * Two paths: with a queue (a loaded journal) every block goes through the
 * block layer (blk_rw, waited for: READ_SYNC, or the caller's write op);
 * without one (create, recovery on its own) through dev_rw_sync, with
 * BLK_REQ_FUA / BLK_REQ_FLUSH turned into the device's FUA / preflush.
 *
 * Threads: any; the map is read-only after jbd_map_build.
 */
#include "jbd_int.h"

#include "../blk/blk.h"
#include "../dev/dev.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the map */

int jbd_map_build(struct jbd_map *m, struct dev *dev, struct blk_queue *q, const struct jbd_location *loc,
		  uint32_t need_blocks)
{
	memset(m, 0, sizeof *m);
	m->dev = dev;
	m->q = q;
	m->bs = loc->block_size;
	m->fua_block_set = loc->fua_block_set;
	m->fua_block = loc->fua_block;
	if (m->bs != 1024 && m->bs != 2048 && m->bs != 4096)
		return err_set(-EINVAL, "jbd: unsupported block size %u", m->bs);
	if (!loc->bmap && loc->nr_blocks && need_blocks > loc->nr_blocks)
		return err_set(-EINVAL, "jbd: journal claims %u blocks but its area has %u", need_blocks,
			       loc->nr_blocks);
	if (loc->bmap && loc->nr_blocks && need_blocks > loc->nr_blocks)
		return err_set(-EINVAL, "jbd: journal claims %u blocks but its inode maps %u", need_blocks,
			       loc->nr_blocks);
	m->phys = malloc((size_t)(need_blocks ? need_blocks : 1) * sizeof *m->phys);
	if (!m->phys)
		return -ENOMEM;
	struct dev_geometry g;
	dev_geometry_get(dev, &g);
	uint64_t dev_blocks = g.size_bytes / m->bs;
	for (uint32_t i = 0; i < need_blocks; i++) {
		uint64_t p;
		if (loc->bmap) {
			int rc = loc->bmap(loc->bmap_ctx, i, &p);
			if (rc < 0) {
				free(m->phys);
				m->phys = NULL;
				return err_wrap(rc, "jbd: journal block %u is not mapped", i);
			}
		} else {
			p = loc->first_block + i;
		}
		if (p >= dev_blocks) {
			free(m->phys);
			m->phys = NULL;
			return err_set(-ERANGE, "jbd: journal block %u maps to block %llu beyond the device (%llu blocks)",
				       i, (unsigned long long)p, (unsigned long long)dev_blocks);
		}
		m->phys[i] = p;
	}
	m->nr = need_blocks;
	return 0;
}

void jbd_map_free(struct jbd_map *m)
{
	free(m->phys);
	m->phys = NULL;
	m->nr = 0;
}

static int dev_block_io(struct jbd_map *m, uint64_t block, void *buf, bool write, unsigned rw)
{
	if (m->q) {
		if (!write)
			rw = BLK_READ_SYNC;
		return blk_rw(m->q, rw, block * m->bs, buf, m->bs);
	}
	unsigned flags = 0;
	if (write && (rw & BLK_REQ_FUA))
		flags |= DEV_IO_FUA;
	if (write && (rw & BLK_REQ_FLUSH))
		flags |= DEV_IO_PREFLUSH;
	return dev_rw_sync(m->dev, write ? DEV_OP_WRITE : DEV_OP_READ, block * (m->bs / DEV_SECTOR_SIZE),
			   m->bs / DEV_SECTOR_SIZE, buf, flags);
}

int jbd_map_read(struct jbd_map *m, uint32_t jblock, void *buf)
{
	if (jblock >= m->nr)
		return err_set(-ERANGE, "jbd: journal block %u beyond the journal (%u)", jblock, m->nr);
	return dev_block_io(m, m->phys[jblock], buf, false, 0);
}

int jbd_map_write(struct jbd_map *m, uint32_t jblock, const void *buf, unsigned rw)
{
	if (jblock >= m->nr)
		return err_set(-ERANGE, "jbd: journal block %u beyond the journal (%u)", jblock, m->nr);
	return dev_block_io(m, m->phys[jblock], (void *)buf, true, rw);
}

int jbd_dev_block_read(struct jbd_map *m, uint64_t block, void *buf)
{
	return dev_block_io(m, block, buf, false, 0);
}

int jbd_dev_block_write(struct jbd_map *m, uint64_t block, const void *buf)
{
	unsigned rw = BLK_WRITE;
	if (m->fua_block_set && block == m->fua_block)
		rw |= BLK_REQ_FUA; /* jbd_location.fua_block: the fs superblock's */
	return dev_block_io(m, block, (void *)buf, true, rw);
}

int jbd_map_flush(struct jbd_map *m)
{
	if (m->q) {
		struct bio bio = { .size = 0, .rw = BLK_WRITE_SYNC | BLK_REQ_FLUSH };
		return blk_submit_bio_wait(m->q, &bio);
	}
	return dev_flush_sync(m->dev);
}

/* ------------------------------------------------------- superblock */

/* Journal block 0 through a one-block map (no queue: dev_rw_sync). */
int jbd_sb_read(struct dev *dev, const struct jbd_location *loc, void *buf)
{
	struct jbd_map m0;
	int rc = jbd_map_build(&m0, dev, NULL, loc, 1);
	if (rc < 0)
		return rc;
	rc = jbd_map_read(&m0, 0, buf);
	jbd_map_free(&m0);
	return rc;
}
