/* ext3 directory blocks, the pure operations (src/extfs/dir/dirblock.c): insert
 * with rec_len splitting, removal by merging, leaf split by hash under all
 * six hash versions, the dx root built from a full first block, index entry
 * insertion, checked against a model and the format rules. The same
 * operations on images: tests/test_ext3_dir_write.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "extfs/dir/dir_int.h"
#include "extfs/format/ext3_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXBS 4096u

static const uint32_t seed0[4] = {0x11111111u, 0x22222222u, 0x33333333u, 0x44444444u};

/* ---- helpers ---- */

static void names_make(char *out, size_t cap, unsigned i, unsigned len)
{
	assert_true(len < cap && len >= 1);
	snprintf(out, cap, "n%u_", i);
	size_t l = strlen(out);
	for (; l < len; l++)
		out[l] = (char)('a' + (i * 7 + l) % 26);
	out[len] = '\0';
}

/* Every used entry of the block, in block order. */
struct seen {
	unsigned n;
	char name[MAXBS / 12][256];
	uint32_t ino[MAXBS / 12];
};

static void block_list(const uint8_t *b, unsigned bs, struct seen *s)
{
	assert_int_equal(ext3_dirblk_check(b, bs, 0, true), 0);
	s->n = 0;
	for (unsigned off = 0; off < bs;) {
		struct ext3_dirent_view de;
		assert_int_equal(ext3_dirblock_entry(b, bs, off, 0, true, &de), 0);
		if (de.inode) {
			memcpy(s->name[s->n], de.name, de.name_len);
			s->name[s->n][de.name_len] = '\0';
			s->ino[s->n++] = de.inode;
		}
		off += de.rec_len;
	}
}

static bool seen_has(const struct seen *s, const char *name, uint32_t ino)
{
	for (unsigned i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0 && (!ino || s->ino[i] == ino))
			return true;
	return false;
}

static uint32_t hash_of(const char *name, int version)
{
	uint32_t h;
	assert_int_equal(ext3_dx_hash(name, strlen(name), version, seed0, &h, NULL), 0);
	return h;
}

/* ---- insert / find / remove ---- */

static void test_block_insert_remove(void **state)
{
	(void)state;
	static const unsigned sizes[] = {1024, 4096};
	for (unsigned si = 0; si < 2; si++) {
		unsigned bs = sizes[si];
		uint8_t b[MAXBS];
		ext3_dirblk_dots(b, bs, 12, 2, true);
		unsigned dd;
		assert_int_equal(ext3_dirblk_dots_check(b, bs, &dd), 0);
		assert_int_equal(dd, 12);
		assert_int_equal(ext3_dirblk_live(b, bs, 2), 0);
		/* fill with 20-byte names (rec_len 28) until full */
		char nm[64];
		unsigned n = 0, off;
		while (ext3_dirblk_room(b, bs, 20, &off) == 0) {
			names_make(nm, sizeof nm, n, 20);
			ext3_dirblk_put(b, off, nm, 20, 100 + n, EXT3_FT_REG_FILE);
			n++;
		}
		/* 24 bytes of dots, then 28 per entry */
		assert_int_equal(n, (bs - 24) / 28);
		assert_int_equal(ext3_dirblk_live(b, bs, 2), n);
		struct seen *s = malloc(sizeof *s);
		block_list(b, bs, s);
		assert_int_equal(s->n, n + 2);
		for (unsigned i = 0; i < n; i++) {
			names_make(nm, sizeof nm, i, 20);
			assert_true(seen_has(s, nm, 100 + i));
		}
		/* remove the third entry: merged into the previous one */
		names_make(nm, sizeof nm, 2, 20);
		unsigned prev;
		assert_int_equal(ext3_dirblk_find(b, bs, nm, 20, &off, &prev), 0);
		assert_int_equal(off, 24 + 2 * 28);
		assert_int_equal(prev, 24 + 28);
		ext3_dirblk_del(b, off, prev);
		assert_int_equal(ext3_dirblk_find(b, bs, nm, 20, &off, &prev), -ENOENT);
		const struct ext3_dir_entry_2 *pe = (const struct ext3_dir_entry_2 *)(b + 24 + 28);
		assert_int_equal(le16_to_cpu(pe->rec_len), 56);
		/* a name of the same size goes back into that slack */
		assert_int_equal(ext3_dirblk_room(b, bs, 17, &off), 0);
		assert_int_equal(off, 24 + 28);
		ext3_dirblk_put(b, off, "seventeen_bytes_x", 17, 999, EXT3_FT_DIR);
		assert_int_equal(ext3_dirblk_find(b, bs, "seventeen_bytes_x", 17, &off, &prev), 0);
		assert_int_equal(off, 24 + 2 * 28);
		assert_int_equal(b[off + 7], EXT3_FT_DIR);
		/* a 255-byte name does not fit any more */
		assert_int_equal(ext3_dirblk_room(b, bs, 255, &off), -ENOSPC);
		block_list(b, bs, s);
		assert_int_equal(s->n, n + 2);
		free(s);

		/* a block without dots: removing its first entry zeroes the inode */
		ext3_dirblk_init(b, bs);
		assert_int_equal(ext3_dirblk_live(b, bs, 0), 0);
		assert_int_equal(ext3_dirblk_room(b, bs, 255, &off), 0);
		assert_int_equal(off, 0);
		ext3_dirblk_put(b, 0, "first", 5, 77, 0);
		assert_int_equal(ext3_dirblk_room(b, bs, 5, &off), 0);
		ext3_dirblk_put(b, off, "second", 6, 78, 0);
		assert_int_equal(ext3_dirblk_find(b, bs, "first", 5, &off, &prev), 0);
		assert_int_equal(off, 0);
		assert_int_equal(prev, UINT32_MAX);
		ext3_dirblk_del(b, off, prev);
		assert_int_equal(ext3_dirblk_live(b, bs, 0), 1);
		assert_int_equal(ext3_dirblk_check(b, bs, 0, true), 0);
		/* the unused leading entry is room again (its whole rec_len) */
		assert_int_equal(ext3_dirblk_room(b, bs, 3, &off), 0);
		assert_int_equal(off, 0);
	}
}

/* Random inserts and removals against a model. */
static void test_block_random(void **state)
{
	(void)state;
	unsigned seed = (unsigned)time(NULL);
	printf("test_block_random seed %u\n", seed);
	srand(seed);
	unsigned bs = 1024;
	uint8_t b[MAXBS];
	ext3_dirblk_dots(b, bs, 2, 2, true);
	struct model {
		char name[256];
		unsigned len;
		bool live;
	} *m = calloc(400, sizeof *m);
	struct seen *s = malloc(sizeof *s);
	unsigned nm = 0;
	for (int op = 0; op < 5000; op++) {
		if (rand() % 2 && nm < 400) {
			unsigned len = 1 + (unsigned)rand() % (rand() % 8 ? 30 : 255);
			char name[256];
			names_make(name, sizeof name, (unsigned)op, len < 8 ? 8 : len);
			len = (unsigned)strlen(name);
			unsigned off;
			if (ext3_dirblk_room(b, bs, len, &off) == 0) {
				ext3_dirblk_put(b, off, name, len, (uint32_t)op + 1, EXT3_FT_FIFO);
				memcpy(m[nm].name, name, len + 1);
				m[nm].len = len;
				m[nm++].live = true;
			}
		} else if (nm) {
			struct model *e = &m[(unsigned)rand() % nm];
			unsigned off, prev;
			int rc = ext3_dirblk_find(b, bs, e->name, e->len, &off, &prev);
			assert_int_equal(rc, e->live ? 0 : -ENOENT);
			if (rc == 0)
				ext3_dirblk_del(b, off, prev);
			e->live = false;
		}
		block_list(b, bs, s);
		unsigned live = 0;
		for (unsigned i = 0; i < nm; i++)
			if (m[i].live) {
				live++;
				assert_true(seen_has(s, m[i].name, 0));
			}
		assert_int_equal(s->n, live + 2);
	}
	free(s);
	free(m);
}

/* ---- leaf split ---- */

static void split_check(unsigned bs, int version, unsigned namelen, bool same)
{
	uint8_t b1[MAXBS], b2[MAXBS], orig[MAXBS];
	ext3_dirblk_init(b1, bs);
	char nm[300];
	unsigned n = 0, off;
	while (ext3_dirblk_room(b1, bs, namelen, &off) == 0) {
		names_make(nm, sizeof nm, same ? 0 : n, namelen);
		ext3_dirblk_put(b1, off, nm, namelen, 10 + n, EXT3_FT_REG_FILE);
		n++;
	}
	memcpy(orig, b1, bs);
	struct ext3_dx_hashfn hf = {version, seed0};
	uint32_t sh;
	assert_int_equal(ext3_dirblk_split(b1, b2, bs, &hf, &sh), 0);
	struct seen *s0 = malloc(sizeof *s0), *s1 = malloc(sizeof *s1), *s2 = malloc(sizeof *s2);
	block_list(orig, bs, s0);
	block_list(b1, bs, s1);
	block_list(b2, bs, s2);
	assert_int_equal(s1->n + s2->n, n);
	assert_true(s1->n >= 1 && s2->n >= 1);
	/* roughly half the bytes each */
	assert_true(s1->n * 2 + 2 >= s2->n && s2->n * 2 + 2 >= s1->n);
	uint32_t h2 = sh & ~1u, max1 = 0, prev2 = 0;
	for (unsigned i = 0; i < s1->n; i++) {
		assert_true(seen_has(s0, s1->name[i], s1->ino[i]));
		uint32_t h = hash_of(s1->name[i], version);
		assert_true(h <= h2);
		if (h > max1)
			max1 = h;
	}
	for (unsigned i = 0; i < s2->n; i++) {
		assert_true(seen_has(s0, s2->name[i], s2->ino[i]));
		uint32_t h = hash_of(s2->name[i], version);
		assert_true(h >= h2);
		assert_true(h >= prev2); /* moved in hash order */
		prev2 = h;
	}
	assert_int_equal(hash_of(s2->name[0], version), h2);
	/* the continuation bit says whether the split hash also ends b1 */
	assert_int_equal(sh & 1u, max1 == h2 ? 1u : 0u);
	if (same)
		assert_int_equal(sh & 1u, 1u);
	/* each half has room for a long name again */
	assert_int_equal(ext3_dirblk_room(b1, bs, 255, &off), 0);
	assert_int_equal(ext3_dirblk_room(b2, bs, 255, &off), 0);
	free(s0);
	free(s1);
	free(s2);
}

static void test_split_all_hashes(void **state)
{
	(void)state;
	for (int v = EXT3_DX_HASH_LEGACY; v <= EXT3_DX_HASH_TEA_UNSIGNED; v++) {
		split_check(1024, v, 13, false);
		split_check(4096, v, 13, false);
		split_check(1024, v, 255, false);
		split_check(4096, v, 100, false);
		split_check(1024, v, 9, true);
	}
	/* fewer than two used entries: nothing to split */
	uint8_t b1[MAXBS], b2[MAXBS];
	ext3_dirblk_init(b1, 1024);
	ext3_dirblk_put(b1, 0, "only", 4, 5, 1);
	struct ext3_dx_hashfn hf = {EXT3_DX_HASH_TEA, NULL};
	uint32_t sh;
	assert_int_equal(ext3_dirblk_split(b1, b2, 1024, &hf, &sh), -ENOSPC);
}

/* ---- dx root and index entries ---- */

static void test_dx_root_make(void **state)
{
	(void)state;
	static const unsigned sizes[] = {1024, 4096};
	for (unsigned si = 0; si < 2; si++) {
		unsigned bs = sizes[si];
		uint8_t root[MAXBS], leaf[MAXBS];
		ext3_dirblk_dots(root, bs, 40, 2, true);
		char nm[64];
		unsigned n = 0, off;
		while (ext3_dirblk_room(root, bs, 30, &off) == 0) {
			names_make(nm, sizeof nm, n, 30);
			ext3_dirblk_put(root, off, nm, 30, 50 + n, EXT3_FT_REG_FILE);
			n++;
		}
		assert_int_equal(ext3_dx_root_make(root, leaf, bs, EXT3_DX_HASH_HALF_MD4), 0);
		unsigned hv, levels;
		assert_int_equal(ext3_dx_root_check(root, &hv, &levels), 0);
		assert_int_equal(hv, EXT3_DX_HASH_HALF_MD4);
		assert_int_equal(levels, 0);
		assert_int_equal(ext3_dx_entries_check(root, EXT3_DX_ROOT_CL, bs, 0, 2), 0);
		assert_int_equal(ext3_dx_limit(root, EXT3_DX_ROOT_CL), (bs - 32) / 8);
		assert_int_equal(ext3_dx_count(root, EXT3_DX_ROOT_CL), 1);
		assert_int_equal(ext3_dx_block_at(root, EXT3_DX_ROOT_CL, 0), 1);
		/* the root still reads as a directory block with "." and ".." only */
		assert_int_equal(ext3_dirblk_check(root, bs, 0, true), 0);
		assert_int_equal(ext3_dirblk_live(root, bs, 0), 2);
		struct seen *s = malloc(sizeof *s);
		block_list(leaf, bs, s);
		assert_int_equal(s->n, n);
		for (unsigned i = 0; i < n; i++) {
			names_make(nm, sizeof nm, i, 30);
			assert_true(seen_has(s, nm, 50 + i));
		}
		free(s);
		/* index entries: insert after the chosen one, choose by hash */
		ext3_dx_insert(root, EXT3_DX_ROOT_CL, 0, 0x80000000u, 2);
		ext3_dx_insert(root, EXT3_DX_ROOT_CL, 0, 0x40000000u, 3);
		ext3_dx_insert(root, EXT3_DX_ROOT_CL, 2, 0xc0000001u, 4);
		assert_int_equal(ext3_dx_entries_check(root, EXT3_DX_ROOT_CL, bs, 0, 5), 0);
		assert_int_equal(ext3_dx_entries_check(root, EXT3_DX_ROOT_CL, bs, 0, 4), -EUCLEAN);
		assert_int_equal(ext3_dx_count(root, EXT3_DX_ROOT_CL), 4);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0x10), 0);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0x40000000u), 1);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0x9000000u), 0);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0xc0000000u), 2);
		assert_int_equal(ext3_dx_choose(root, EXT3_DX_ROOT_CL, 0xfffffffcu), 3);
		assert_int_equal(ext3_dx_block_at(root, EXT3_DX_ROOT_CL, 3), 4);
		assert_int_equal(ext3_dx_hash_at(root, EXT3_DX_ROOT_CL, 3), 0xc0000001u);
		/* an interior node */
		uint8_t node[MAXBS];
		ext3_dx_node_init(node, bs);
		assert_int_equal(ext3_dx_node_check(node, bs), 0);
		assert_int_equal(ext3_dirblk_check(node, bs, 0, true), 0);
		assert_int_equal(ext3_dirblk_live(node, bs, 0), 0);
		assert_int_equal(ext3_dx_limit(node, EXT3_DX_NODE_CL), (bs - 8) / 8);
		/* a first block that is not "." (12) + ".." cannot become a root */
		ext3_dirblk_init(root, bs);
		assert_int_equal(ext3_dx_root_make(root, leaf, bs, 1), -EINVAL);
	}
}

static void test_mode_to_ft(void **state)
{
	(void)state;
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFREG | 0644), EXT3_FT_REG_FILE);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFDIR | 0755), EXT3_FT_DIR);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFCHR), EXT3_FT_CHRDEV);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFBLK), EXT3_FT_BLKDEV);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFIFO), EXT3_FT_FIFO);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFSOCK), EXT3_FT_SOCK);
	assert_int_equal(ext3_mode_to_ft(EXT3_S_IFLNK | 0777), EXT3_FT_SYMLINK);
	assert_int_equal(ext3_mode_to_ft(0), EXT3_FT_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_insert_remove),
		cmocka_unit_test(test_block_random),
		cmocka_unit_test(test_split_all_hashes),
		cmocka_unit_test(test_dx_root_make),
		cmocka_unit_test(test_mode_to_ft),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
