/* The fake filesystem and environment of the page cache tests
 * (tests/test_page*.c): a mapping whose map op is the identity (page i is
 * block BASE + i) or a table (holes, allocation, freeing), over a device and
 * a block queue, with helpers that write and check tagged pages. Failures
 * are cmocka failures. */
#ifndef NOSTALL_TESTS_PAGEFS_H
#define NOSTALL_TESTS_PAGEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "page/page.h"

#define PS 4096u
#define BASE 100u      /* identity map: page i is block BASE + i */
#define MAX_IDX 1024u  /* table map size */
#define MAX_DONE 256

struct done_rec {
	uint64_t first, last;
	int err;
	pthread_t thread;
};

struct fakefs {
	pthread_mutex_t lock;
	bool table_mode;        /* else identity */
	uint64_t table[MAX_IDX]; /* 0: hole */
	uint64_t free_blocks[MAX_IDX];
	size_t nr_free;
	uint64_t next_block;
	int fail_create;        /* map(create) fails with this while set */
	unsigned map_calls;
	struct done_rec done[MAX_DONE];
	unsigned ndone;
};

extern const struct page_mapping_ops pfs_fs_ops;
/* The fs frees the blocks of pages from `first` on (after truncating them). */
void pfs_fs_free_from(struct fakefs *fs, uint64_t first);
void pfs_fs_init(struct fakefs *fs, bool table_mode);

struct env {
	struct dev *d;
	struct blk_queue *q;
	struct page_cache *pc;
	struct fakefs fs;
	struct page_mapping *m;
};

/* Defaults with a budget of `pages` pages and no flusher thread. */
struct page_params pfs_quiet_params(uint64_t pages);
/* Device `spec`, a noop queue, a cache (p, or pfs_quiet_params(256)), a mapping. */
void pfs_env_open(struct env *e, const char *spec, const struct page_params *p, bool table_mode);
void pfs_env_close(struct env *e);
/* Fill len bytes with a pattern of tag. */
void pfs_fill(void *p, size_t len, unsigned tag);
struct page_stats pfs_stats(struct env *e);
/* Block `block` as stored on the device. */
void pfs_dev_block(struct env *e, uint64_t block, void *buf);
/* Block `block` on the device holds pfs_fill(tag). */
void pfs_check_block(struct env *e, uint64_t block, unsigned tag);
/* Write / check whole pages [first, first + n), page i with tag + i. */
void pfs_write_pages(struct env *e, uint64_t first, uint64_t n, unsigned tag);
void pfs_check_pages(struct env *e, uint64_t first, uint64_t n, unsigned tag);

#endif
