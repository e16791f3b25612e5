/* The page cache tests' fake filesystem and environment: pagefs.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pagefs.h"

#include "blk/blk.h"
#include "dev/dev.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------ a fake fs */

static int fs_map(void *ctx, uint64_t index, bool create, uint64_t *phys, bool *is_new)
{
	struct fakefs *fs = ctx;
	pthread_mutex_lock(&fs->lock);
	fs->map_calls++;
	int rc = 0;
	*is_new = false;
	if (!fs->table_mode) {
		*phys = BASE + index;
	} else if (index >= MAX_IDX) {
		rc = -EFBIG;
	} else if (fs->table[index]) {
		*phys = fs->table[index];
	} else if (!create) {
		*phys = PAGE_NO_BLOCK;
	} else if (fs->fail_create) {
		rc = fs->fail_create;
	} else {
		fs->table[index] = fs->nr_free ? fs->free_blocks[--fs->nr_free] : fs->next_block++;
		*phys = fs->table[index];
		*is_new = true;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

static void fs_io_done(void *ctx, uint64_t first, uint64_t last, int err)
{
	struct fakefs *fs = ctx;
	pthread_mutex_lock(&fs->lock);
	if (fs->ndone < MAX_DONE)
		fs->done[fs->ndone++] = (struct done_rec){ first, last, err, pthread_self() };
	pthread_mutex_unlock(&fs->lock);
}

/* The fs frees the blocks of pages from `first` on (after truncating them). */
void pfs_fs_free_from(struct fakefs *fs, uint64_t first)
{
	pthread_mutex_lock(&fs->lock);
	for (uint64_t i = first; i < MAX_IDX; i++)
		if (fs->table[i]) {
			fs->free_blocks[fs->nr_free++] = fs->table[i];
			fs->table[i] = 0;
		}
	pthread_mutex_unlock(&fs->lock);
}

const struct page_mapping_ops pfs_fs_ops = { fs_map, fs_io_done };

void pfs_fs_init(struct fakefs *fs, bool table_mode)
{
	memset(fs, 0, sizeof *fs);
	pthread_mutex_init(&fs->lock, NULL);
	fs->table_mode = table_mode;
	fs->next_block = 2000;
}

/* ------------------------------------------------------------------ env */

struct page_params pfs_quiet_params(uint64_t pages)
{
	struct page_params p;
	page_params_default(&p);
	p.cache_bytes = pages * PS;
	p.writeback_interval_ms = 0; /* no flusher thread unless a test wants one */
	return p;
}

void pfs_env_open(struct env *e, const char *spec, const struct page_params *p, bool table_mode)
{
	memset(e, 0, sizeof *e);
	int rc = dev_open(spec, &e->d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	rc = blk_queue_create(e->d, "scheduler=noop", &e->q);
	if (rc)
		fail_msg("blk_queue_create: %s", err_last(rc));
	struct page_params qp = pfs_quiet_params(256);
	rc = page_cache_create(e->q, PS, p ? p : &qp, &e->pc);
	if (rc)
		fail_msg("page_cache_create: %s", err_last(rc));
	pfs_fs_init(&e->fs, table_mode);
	rc = page_mapping_create(e->pc, &pfs_fs_ops, &e->fs, &e->m);
	assert_int_equal(rc, 0);
}

void pfs_env_close(struct env *e)
{
	page_mapping_destroy(e->m);
	page_cache_destroy(e->pc);
	blk_queue_destroy(e->q);
	dev_close(e->d);
	pthread_mutex_destroy(&e->fs.lock);
}

void pfs_fill(void *p, size_t len, unsigned tag)
{
	unsigned char *c = p;
	for (size_t i = 0; i < len; i++)
		c[i] = (unsigned char)(tag * 31 + i * 7 + (i >> 8));
}

struct page_stats pfs_stats(struct env *e)
{
	struct page_stats s;
	page_cache_stats(e->pc, &s);
	return s;
}

/* Block `block` as stored on the device. */
void pfs_dev_block(struct env *e, uint64_t block, void *buf)
{
	assert_int_equal(blk_rw(e->q, BLK_READ, block * PS, buf, PS), 0);
}

void pfs_check_block(struct env *e, uint64_t block, unsigned tag)
{
	static unsigned char buf[PS], want[PS];
	pfs_dev_block(e, block, buf);
	pfs_fill(want, PS, tag);
	assert_memory_equal(buf, want, PS);
}

void pfs_write_pages(struct env *e, uint64_t first, uint64_t n, unsigned tag)
{
	static unsigned char buf[PS];
	for (uint64_t i = first; i < first + n; i++) {
		pfs_fill(buf, PS, tag + (unsigned)i);
		assert_int_equal(page_mapping_write(e->m, i * PS, buf, PS, i * PS), PS);
	}
}

void pfs_check_pages(struct env *e, uint64_t first, uint64_t n, unsigned tag)
{
	static unsigned char buf[PS], want[PS];
	for (uint64_t i = first; i < first + n; i++) {
		pfs_fill(want, PS, tag + (unsigned)i);
		assert_int_equal(page_mapping_read(e->m, i * PS, buf, PS, UINT64_MAX), PS);
		assert_memory_equal(buf, want, PS);
	}
}
