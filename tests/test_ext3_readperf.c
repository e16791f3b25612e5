/* Sequential file reads that bypass the buffer cache (src/extfs/data/file_read.c,
 * docs/ext3-read-path.md "Sequential reads").
 *
 * Oracles: the host files written into a mke2fs image with debugfs (a 24 MiB
 * file through the double indirect block, a fragmented file, a sparse file),
 * and the buffer-cache path (ext3_inode_pread / file_readahead=0). Checks the
 * public semantics (sequential reads in many chunk sizes, random pread, short
 * reads at EOF), that the fast path is really taken (few large bios, no data
 * in the buffer cache), that a dirty cached block wins over the disk, that
 * I/O errors keep the short-count-then-error semantics (fault: device),
 * nostall_pread_sink (lent segments give pread's bytes; sink and read
 * errors), and concurrent readers.
 *
 * nostall-test: concurrent (readers on separate and shared handles)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"

#include "nostall/nostall.h"

#include "buf/buf.h"
#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define BIG_SIZE (24 * MIB + 123)
#define FRAG_SIZE (3 * MIB + 1000)
#define SPARSE_SIZE (20 * MIB)

static char tmpdir[256];
static char img[300];
static bool have_e2fs;

struct hostfile {
	const char *name;
	uint8_t *data;
	size_t len;
};
static struct hostfile files[3] = {{"big", NULL, 0}, {"frag", NULL, 0}, {"sparse", NULL, 0}};

static void fill_pattern(uint8_t *b, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

static int write_host(const char *name, const uint8_t *b, size_t len, bool sparse)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", tmpdir, name);
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	int rc = 0;
	if (sparse) { /* only the non-zero 4 KiB pieces: the rest stays a hole */
		for (size_t off = 0; off < len && !rc; off += 4096) {
			size_t n = len - off < 4096 ? len - off : 4096;
			bool zero = true;
			for (size_t i = 0; i < n && zero; i++)
				zero = b[off + i] == 0;
			if (!zero && pwrite(fd, b + off, n, (off_t)off) != (ssize_t)n)
				rc = -1;
		}
		if (!rc && ftruncate(fd, (off_t)len))
			rc = -1;
	} else if (write(fd, b, len) != (ssize_t)len) {
		rc = -1;
	}
	close(fd);
	return rc;
}

static int group_setup(void **state)
{
	(void)state;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "readperf"))
		return -1;
	have_e2fs = fsimg_run("command -v mke2fs >/dev/null && command -v debugfs >/dev/null") == 0;
	if (!have_e2fs)
		return 0;
	files[0].len = BIG_SIZE;
	files[1].len = FRAG_SIZE;
	files[2].len = SPARSE_SIZE;
	for (int i = 0; i < 3; i++) {
		files[i].data = calloc(1, files[i].len);
		if (!files[i].data)
			return -1;
	}
	fill_pattern(files[0].data, files[0].len, 1);
	fill_pattern(files[1].data, files[1].len, 2);
	/* sparse: data islands (some unaligned, one at the very end) in holes */
	static const size_t isl[][2] = {{0, 5000}, {1 * MIB + 5, 70000}, {9 * MIB, 3 * MIB},
					{17 * MIB - 3, 4100}, {SPARSE_SIZE - 4096, 4096}};
	for (size_t i = 0; i < sizeof isl / sizeof isl[0]; i++)
		fill_pattern(files[2].data + isl[i][0], isl[i][1], 10 + (unsigned)i);
	if (write_host("big", files[0].data, files[0].len, false) ||
	    write_host("frag", files[1].data, files[1].len, false) ||
	    write_host("sparse", files[2].data, files[2].len, true))
		return -1;
	uint8_t *small = malloc(64 * KIB);
	fill_pattern(small, 64 * KIB, 3);
	if (write_host("small", small, 64 * KIB, false))
		return -1;
	free(small);

	snprintf(img, sizeof img, "%s/perf.img", tmpdir);
	if (fsimg_mkfs(img, 4096, 96 * 1024, NULL))
		return -1;
	/* Fragmentation: 48 files of 64 KiB, every other one removed, then the
	 * 3 MiB file fills the gaps. */
	char cmdf[512];
	snprintf(cmdf, sizeof cmdf, "%s/cmds", tmpdir);
	FILE *c = fopen(cmdf, "w");
	if (!c)
		return -1;
	fprintf(c, "write %s/big big\n", tmpdir);
	for (int i = 0; i < 48; i++)
		fprintf(c, "write %s/small s%02d\n", tmpdir, i);
	for (int i = 0; i < 48; i += 2)
		fprintf(c, "rm s%02d\n", i);
	fprintf(c, "write %s/frag frag\n", tmpdir);
	fprintf(c, "write %s/sparse sparse\n", tmpdir);
	fclose(c);
	if (fsimg_run("debugfs -w -f '%s' '%s' >/dev/null 2>&1", cmdf, img))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++)
		free(files[i].data);
	fsimg_tmpdir_remove(tmpdir);
	return 0;
}

static void skip_msg(const char *m)
{
	print_message("[  SKIP    ] %s\n", m);
	skip();
}

#define NEED_E2FS()                                                    \
	do {                                                           \
		if (!have_e2fs)                                        \
			skip_msg("e2fsprogs (mke2fs, debugfs) not found"); \
	} while (0)

static struct nostall_fs *mount_opts(const char *spec, const char *opts)
{
	struct nostall_fs *fs = NULL;
	int rc = nostall_mount(spec, opts, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		fail_msg("mount %s (%s): %s", spec, opts ? opts : "", nostall_errmsg(rc));
	return fs;
}

/* Whole file with nostall_read in `chunk`-byte reads vs the host copy. */
static void read_all_cmp(struct nostall_fs *fs, const struct hostfile *h, size_t chunk)
{
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, h->name, 0, &f), 0);
	uint8_t *b = malloc(chunk);
	assert_non_null(b);
	size_t got = 0;
	for (;;) {
		ssize_t n = nostall_read(f, b, chunk);
		if (n < 0)
			fail_msg("%s chunk %zu at %zu: %s", h->name, chunk, got, nostall_errmsg((int)n));
		if (n == 0)
			break;
		assert_true(got + (size_t)n <= h->len);
		/* a read is short only at the end of the file */
		assert_true((size_t)n == chunk || got + (size_t)n == h->len);
		if (memcmp(b, h->data + got, (size_t)n))
			fail_msg("%s chunk %zu: data differs in [%zu, %zu)", h->name, chunk, got,
				 got + (size_t)n);
		got += (size_t)n;
	}
	assert_int_equal(got, h->len);
	assert_int_equal(nostall_read(f, b, chunk), 0);
	nostall_close(f);
	free(b);
}

/* The fragmented file really is fragmented (else the test proves less). */
static unsigned count_runs(struct nostall_fs *fs, const char *name, size_t len)
{
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, name, 0, &f), 0);
	unsigned runs = 0;
	uint64_t prev = 0;
	for (uint64_t l = 0; l < (len + 4095) / 4096; l++) {
		uint64_t p;
		assert_int_equal(nostall_bmap(f, l, &p), 0);
		if (p && p != prev + 1)
			runs++;
		prev = p;
	}
	nostall_close(f);
	return runs;
}

static void test_sequential_vs_host(void **state)
{
	(void)state;
	NEED_E2FS();
	static const char *const optv[] = {NULL, "file_readahead=64K", "file_readahead=64M",
					   "file_readahead=0"};
	static const size_t chunks[] = {4096, 70001, 1 * MIB, 9 * MIB + 1};
	for (size_t o = 0; o < sizeof optv / sizeof optv[0]; o++) {
		struct nostall_fs *fs = mount_opts(img, optv[o]);
		if (o == 0)
			assert_true(count_runs(fs, "frag", FRAG_SIZE) >= 10);
		for (int i = 0; i < 3; i++)
			for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
				read_all_cmp(fs, &files[i], chunks[c]);
		assert_int_equal(nostall_umount(fs), 0);
	}
	/* bad option values */
	struct nostall_fs *fs = NULL;
	assert_int_equal(nostall_mount(img, "file_readahead=1K", NOSTALL_MOUNT_RDONLY, &fs),
			 -EINVAL);
	assert_int_equal(nostall_mount(img, "file_readahead=1G", NOSTALL_MOUNT_RDONLY, &fs),
			 -EINVAL);
}

/* Random preads (and reads continuing them) vs the host, printing the seed. */
static void test_random_preads(void **state)
{
	(void)state;
	NEED_E2FS();
	unsigned seed = (unsigned)time(NULL);
	print_message("random preads: seed %u\n", seed);
	srand(seed);
	struct nostall_fs *fs = mount_opts(img, "cache=1M");
	uint8_t *b = malloc(7 * MIB);
	assert_non_null(b);
	for (int i = 0; i < 3; i++) {
		const struct hostfile *h = &files[i];
		struct nostall_file *f;
		assert_int_equal(nostall_open(fs, h->name, 0, &f), 0);
		for (int k = 0; k < 300; k++) {
			uint64_t off = (uint64_t)rand() % (h->len + 100);
			size_t len;
			switch (rand() % 4) {
			case 0: len = 1 + (size_t)rand() % 100; break;
			case 1: len = 1 + (size_t)rand() % (64 * KIB); break;
			case 2: len = 64 * KIB + (size_t)rand() % (2 * MIB); break;
			default: len = (size_t)rand() % (7 * MIB); break;
			}
			/* sometimes a run of sequential reads from there */
			int reps = rand() % 3 == 0 ? 1 + rand() % 6 : 1;
			for (int r = 0; r < reps; r++) {
				ssize_t n = nostall_pread(f, b, len, off);
				size_t want = off >= h->len ? 0 : (h->len - off < len ? h->len - off : len);
				if (n != (ssize_t)want)
					fail_msg("%s pread(%zu, %llu) = %zd, want %zu (seed %u)", h->name,
						 len, (unsigned long long)off, n, want, seed);
				if (want && memcmp(b, h->data + off, want))
					fail_msg("%s pread(%zu, %llu): data differs (seed %u)", h->name, len,
						 (unsigned long long)off, seed);
				off += want;
			}
		}
		assert_int_equal(nostall_pread(f, b, 10, UINT64_MAX - 3), 0);
		nostall_close(f);
	}
	free(b);
	assert_int_equal(nostall_umount(fs), 0);
}

/* Internal mount: the reader's and the cache's statistics. */
struct imount {
	struct dev *dev;
	struct ext3_fs *fs;
	struct ext3_inode *in; /* a reference from the inode cache */
};

/* spec NULL: the test image (file:img). */
static void imount_open(struct imount *m, const char *spec, const char *name)
{
	char own[400];
	if (!spec) {
		snprintf(own, sizeof own, "file:%s", img);
		spec = own;
	}
	assert_int_equal(dev_open(spec, &m->dev), 0);
	int rc = ext3_fs_mount(m->dev, NULL, 0, &m->fs);
	if (rc)
		fail_msg("ext3_fs_mount %s: %s", spec, err_last(rc));
	uint32_t ino;
	assert_int_equal(ext3_path_lookup(m->fs, name, true, &ino), 0);
	assert_int_equal(ext3_iget(m->fs, ino, &m->in), 0);
}

static void imount_close(struct imount *m)
{
	ext3_iput(m->in);
	ext3_fs_unmount(m->fs);
	dev_close(m->dev);
}

/* Read hf's file through r in 1 MiB preads to its end, comparing. */
static void scan_mib(struct ext3_fread *r, uint8_t *b, const struct hostfile *hf)
{
	uint64_t off = 0;
	ssize_t n;
	while ((n = ext3_fread_pread(r, b, MIB, off)) > 0) {
		assert_memory_equal(b, hf->data + off, (size_t)n);
		off += (uint64_t)n;
	}
	assert_int_equal(n, 0);
	assert_int_equal(off, hf->len);
}

static void test_fast_path_taken(void **state)
{
	(void)state;
	NEED_E2FS();
	struct imount m;
	imount_open(&m, NULL, "big");
	struct buf_stats b0, b1;
	buf_cache_stats(ext3_fs_cache(m.fs), &b0);
	struct ext3_fread *r;
	assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
	uint8_t *b = malloc(MIB);
	scan_mib(r, b, &files[0]);
	struct ext3_fread_stats st;
	ext3_fread_stats(r, &st);
	buf_cache_stats(ext3_fs_cache(m.fs), &b1);
	print_message("24 MiB in 1 MiB reads: %llu windows, %llu bios, window %zu, cache misses %llu, prefetches %llu, ahead_min %llu\n",
		      (unsigned long long)st.windows, (unsigned long long)st.bios, st.window,
		      (unsigned long long)(b1.misses - b0.misses), (unsigned long long)st.map_prefetches, (unsigned long long)st.ahead_min);
	assert_int_equal(st.direct_bytes, BIG_SIZE);
	assert_int_equal(st.slow_bytes, 0);
	assert_int_equal(st.fallbacks, 0);
	/* the allowance ramps up to twice file_readahead (the two windows'
	 * memory), in segments of a quarter of it (1 MiB) */
	assert_int_equal(st.window, 8 * MIB);
	assert_true(st.windows >= 24 && st.windows <= 30);
	/* runs end at leaf indirect blocks (4 MiB of data each) and segments */
	assert_true(st.bios <= 2 * st.windows);
	/* Refilled a segment at a time: after every read at full allowance at
	 * least 7 MiB were queued past it (two whole windows refilled only
	 * when the reader moved on left as little as one window, 4 MiB). */
	assert_true(st.ahead_samples > 0);
	assert_true(st.ahead_min >= 7 * MIB);
	/* the leaf pointer blocks past the ramp-up were started ahead of their
	 * mapping (24 MiB: seven pointer blocks), so the mapping read only the
	 * first ones itself */
	assert_true(st.map_prefetches >= 3);
	/* the data did not go through the cache: only the indirect blocks did,
	 * most of them read ahead (a miss is a synchronous read) */
	assert_true(b1.misses - b0.misses <= 4);
	/* past the ramp-up (segments under half of seg_max have buffers of
	 * their own) every segment was read into the ring's huge-page arena */
	print_message("%llu of %llu segments in the arena\n", (unsigned long long)st.huge_segs,
		      (unsigned long long)st.windows);
	assert_true(st.huge_segs > 0 && st.huge_segs + 6 >= st.windows);
	ext3_fread_destroy(r);

	/* a ring smaller than a huge page (256 KiB allowance: 8 x 64 KiB)
	 * keeps buffers of its own, and reads the same bytes */
	assert_int_equal(ext3_fread_create(m.fs, m.in, 256 * 1024, &r), 0);
	scan_mib(r, b, &files[0]);
	ext3_fread_stats(r, &st);
	assert_int_equal(st.direct_bytes, BIG_SIZE);
	assert_true(st.windows > 0);
	assert_int_equal(st.huge_segs, 0);
	ext3_fread_destroy(r);

	/* fast path off: everything through the cache */
	assert_int_equal(ext3_fread_create(m.fs, m.in, 0, &r), 0);
	assert_int_equal(ext3_fread_pread(r, b, MIB, 5 * MIB), (ssize_t)MIB);
	assert_memory_equal(b, files[0].data + 5 * MIB, MIB);
	ext3_fread_stats(r, &st);
	assert_int_equal(st.windows, 0);
	ext3_fread_destroy(r);

	/* small random reads go through the cache (and hit it the second time) */
	assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
	buf_cache_stats(ext3_fs_cache(m.fs), &b0);
	for (int k = 0; k < 2; k++)
		assert_int_equal(ext3_fread_pread(r, b, 100, 7 * MIB + 5), 100);
	assert_memory_equal(b, files[0].data + 7 * MIB + 5, 100);
	ext3_fread_stats(r, &st);
	buf_cache_stats(ext3_fs_cache(m.fs), &b1);
	assert_int_equal(st.windows, 0);
	assert_int_equal(st.slow_bytes, 200);
	assert_true(b1.hits > b0.hits);
	/* a read then closing with readahead in flight: destroy waits for it */
	assert_int_equal(ext3_fread_pread(r, b, MIB, 0), (ssize_t)MIB);
	assert_int_equal(ext3_fread_pread(r, b, MIB, MIB), (ssize_t)MIB);
	ext3_fread_destroy(r);

	/* the map cache: runs are those of bmap, across the leaf boundary */
	struct ext3_map_cache *mc = ext3_map_cache_new();
	assert_non_null(mc);
	uint64_t nblk = (BIG_SIZE + 4095) / 4096;
	for (uint64_t l = 0; l < nblk;) {
		uint64_t phys, cnt, p1;
		assert_int_equal(ext3_inode_map_run(m.fs, m.in, mc, l, nblk - l, &phys, &cnt), 0);
		assert_true(cnt >= 1);
		for (uint64_t k = 0; k < cnt; k += (cnt > 8 ? cnt / 8 : 1)) {
			assert_int_equal(ext3_inode_bmap(m.fs, m.in, l + k, &p1), 0);
			assert_int_equal(p1, phys + k);
		}
		l += cnt;
	}
	uint64_t phys, cnt;
	assert_int_equal(ext3_inode_map_run(m.fs, m.in, mc, 1ull << 40, 1, &phys, &cnt), -EFBIG);
	ext3_map_cache_free(mc);
	free(b);
	imount_close(&m);
}

/* A read of cached data never goes to the disk: a fresh reader's first
 * read at 0 of blocks the buffer cache holds takes the cache's path (the
 * kernel starts readahead at the first page it misses), where it used to
 * start a stream that read the whole first allowance from the disk and
 * threw it away for the cached copies. Past the cached part the stream
 * starts as before. */
static void test_cached_not_reread(void **state)
{
	(void)state;
	NEED_E2FS();
	struct imount m;
	imount_open(&m, NULL, "big");
	uint8_t *b = malloc(MIB);
	assert_non_null(b);
	/* warm the first 256 KiB through the buffer cache, a small read per
	 * block (a large one goes around the cache for whole blocks) */
	for (uint64_t o = 0; o < 256 * 1024; o += 4096)
		assert_int_equal(ext3_inode_pread(m.fs, m.in, b, 100, o + 7), 100);
	struct buf_stats b0, b1;
	buf_cache_stats(ext3_fs_cache(m.fs), &b0);
	struct ext3_fread *r;
	struct ext3_fread_stats st;
	for (int k = 0; k < 3; k++) { /* open, read, close: as cat does */
		assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
		assert_int_equal(ext3_fread_pread(r, b, 64 * 1024, 0), 64 * 1024);
		assert_memory_equal(b, files[0].data, 64 * 1024);
		assert_int_equal(ext3_fread_pread(r, b, 64 * 1024, 64 * 1024), 64 * 1024);
		assert_memory_equal(b, files[0].data + 64 * 1024, 64 * 1024);
		ext3_fread_stats(r, &st);
		assert_int_equal(st.windows, 0);
		assert_int_equal(st.direct_bytes, 0);
		assert_int_equal(st.slow_bytes, 128 * 1024);
		ext3_fread_destroy(r);
	}
	buf_cache_stats(ext3_fs_cache(m.fs), &b1);
	assert_int_equal(b1.misses, b0.misses);
	/* past the cached 256 KiB, continuing reads start a stream (reads
	 * cut at 128 KiB, so each is all cached or all not) */
	assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
	uint64_t off = 0;
	for (; off < 4 * MIB; off += 128 * 1024) {
		assert_int_equal(ext3_fread_pread(r, b, 128 * 1024, off), 128 * 1024);
		assert_memory_equal(b, files[0].data + off, 128 * 1024);
	}
	ext3_fread_stats(r, &st);
	/* (the buffer cache's own readahead may have cached a little more
	 * past the warmed blocks) */
	assert_true(st.slow_bytes >= 256 * 1024 && st.slow_bytes <= 512 * 1024);
	assert_int_equal(st.direct_bytes + st.slow_bytes, 4 * MIB);
	assert_true(st.windows > 0);
	ext3_fread_destroy(r);
	free(b);
	imount_close(&m);
}

/* Dirty data in the buffer cache wins over the disk. The fast path's rule
 * is per inode: the write path counts the inode's dirty data
 * (ext3_inode_dirty_data_add), so the test does what it will do. */
/* The mapping of a segment whose leaf pointer block is not cached yet is a
 * guess (the data right after the leaf, as a sequential write lays it out);
 * the fragmented file's leaf is followed by other files' blocks, so the
 * guess is wrong and must be caught before a byte of it is copied out. */
static void test_guess_checked(void **state)
{
	(void)state;
	NEED_E2FS();
	for (int k = 0; k < 2; k++) {
		struct imount m;
		imount_open(&m, NULL, k ? "big" : "frag");
		const struct hostfile *hf = &files[k ? 0 : 1];
		struct ext3_fread *r;
		assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
		uint8_t *b = malloc(MIB);
		scan_mib(r, b, hf);
		struct ext3_fread_stats st;
		ext3_fread_stats(r, &st);
		print_message("%s: %llu segments, %llu guessed, %llu wrong\n", hf->name,
			      (unsigned long long)st.windows, (unsigned long long)st.guesses,
			      (unsigned long long)st.guess_misses);
		assert_true(st.guesses >= 1);
		if (k == 0)
			assert_true(st.guess_misses >= 1); /* frag: caught and re-read */
		else
			assert_int_equal(st.guess_misses, 0); /* big: laid out sequentially */
		assert_int_equal(st.direct_bytes, hf->len);
		assert_int_equal(st.slow_bytes, 0);
		ext3_fread_destroy(r);
		free(b);
		imount_close(&m);
	}
}

static void test_dirty_cache_wins(void **state)
{
	(void)state;
	NEED_E2FS();
	struct imount m;
	imount_open(&m, NULL, "big");
	uint64_t phys;
	assert_int_equal(ext3_inode_bmap(m.fs, m.in, 100, &phys), 0);
	assert_true(phys > 0);
	struct buffer_head *bh = buf_get(ext3_fs_cache(m.fs), phys, NULL);
	assert_non_null(bh);
	buf_lock(bh);
	memset(buf_data(bh), 0xAB, 4096);
	buf_set_uptodate(bh);
	buf_mark_dirty(bh);
	buf_unlock(bh);
	ext3_inode_dirty_data_add(m.in, 1);

	struct ext3_fread *r;
	assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
	uint8_t *b = malloc(2 * MIB);
	assert_int_equal(ext3_fread_pread(r, b, 2 * MIB, 0), (ssize_t)(2 * MIB));
	assert_memory_equal(b, files[0].data, 100 * 4096);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(b[100 * 4096 + i], 0xAB);
	assert_memory_equal(b + 101 * 4096, files[0].data + 101 * 4096, 2 * MIB - 101 * 4096);
	struct ext3_fread_stats st;
	ext3_fread_stats(r, &st);
	assert_true(st.fallbacks >= 1);
	assert_int_equal(st.direct_bytes, 0);
	ext3_fread_destroy(r);

	/* undo (the test's own write never reached the disk) */
	buf_lock(bh);
	assert_true(buf_test_clear_dirty(bh));
	buf_clear_uptodate(bh);
	buf_unlock(bh);
	buf_put(bh);
	ext3_inode_dirty_data_add(m.in, -1);
	assert_int_equal(ext3_inode_dirty_data(m.in), 0);
	/* the fast path again (at 4 MiB: blocks the fallback's reads may have
	 * left in the buffer cache would take the cache's path) */
	assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
	assert_int_equal(ext3_fread_pread(r, b, 2 * MIB, 4 * MIB), (ssize_t)(2 * MIB));
	assert_memory_equal(b, files[0].data + 4 * MIB, 2 * MIB);
	ext3_fread_stats(r, &st);
	assert_int_equal(st.direct_bytes, 2 * MIB);
	ext3_fread_destroy(r);
	free(b);
	imount_close(&m);
}

/* Read errors: the short count up to the bad block, then the error; a
 * transient error is retried through the cache. */
static void test_read_errors(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_opts(img, NULL);
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "big", 0, &f), 0);
	uint64_t phys;
	const uint64_t bad = 3000; /* logical block: double indirect range */
	assert_int_equal(nostall_bmap(f, bad, &phys), 0);
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);
	uint8_t *b = malloc(MIB);
	for (int transient = 0; transient < 2; transient++) {
		for (int fast = 0; fast < 2; fast++) {
			char spec[600];
			snprintf(spec, sizeof spec, "fault:file:%s,op=read,sector=%llu-%llu%s", img,
				 (unsigned long long)(phys * 8 + 3), (unsigned long long)(phys * 8 + 3),
				 transient ? ",count=1" : "");
			fs = mount_opts(spec, fast ? NULL : "file_readahead=0");
			assert_int_equal(nostall_open(fs, "big", 0, &f), 0);
			uint64_t got = 0;
			ssize_t n;
			while ((n = nostall_read(f, b, MIB)) > 0) {
				assert_memory_equal(b, files[0].data + got, (size_t)n);
				got += (uint64_t)n;
			}
			if (transient) {
				assert_int_equal(n, 0);
				assert_int_equal(got, BIG_SIZE);
			} else {
				assert_int_equal(n, -EIO);
				assert_int_equal(got, bad * 4096);
				/* again: the same error, no data */
				assert_int_equal(nostall_read(f, b, MIB), -EIO);
				/* past it everything reads */
				assert_int_equal(nostall_pread(f, b, MIB, (bad + 1) * 4096), (ssize_t)MIB);
				assert_memory_equal(b, files[0].data + (bad + 1) * 4096, MIB);
			}
			nostall_close(f);
			assert_int_equal(nostall_umount(fs), 0);
		}
	}
	/* the window path met the error and gave the read to the cache */
	char spec[600];
	snprintf(spec, sizeof spec, "fault:file:%s,op=read,sector=%llu-%llu", img,
		 (unsigned long long)(phys * 8), (unsigned long long)(phys * 8));
	struct imount m;
	imount_open(&m, spec, "big");
	struct ext3_fread *r;
	assert_int_equal(ext3_fread_create(m.fs, m.in, 4 * MIB, &r), 0);
	uint64_t off = 0;
	ssize_t n;
	while ((n = ext3_fread_pread(r, b, MIB, off)) > 0)
		off += (uint64_t)n;
	assert_int_equal(n, -EIO);
	assert_int_equal(off, bad * 4096);
	struct ext3_fread_stats st;
	ext3_fread_stats(r, &st);
	assert_true(st.fallbacks >= 1);
	assert_true(st.direct_bytes >= 8 * MIB);
	ext3_fread_destroy(r);
	imount_close(&m);
	free(b);
}

/* nostall_pread_sink: the bytes a sink is given are exactly pread's, lent
 * from the reader's segments on the streaming path and from the caller's
 * buffer otherwise; a sink's error is the result, a read error never
 * reaches the sink, and the reader carries on correctly after both. */
struct sink_got {
	uint8_t *out;      /* the pieces, concatenated */
	size_t cap, len;
	int calls;
	int lent;          /* pieces outside the caller's buffer */
	const uint8_t *buf;
	size_t buf_len;
	int fail;          /* return this instead (negative) */
};

static int sink_take(void *arg, const struct iovec *iov, int iovcnt)
{
	struct sink_got *g = arg;
	g->calls++;
	for (int k = 0; k < iovcnt; k++) {
		const uint8_t *p = iov[k].iov_base;
		if (iov[k].iov_len && (p < g->buf || p + iov[k].iov_len > g->buf + g->buf_len))
			g->lent++;
		if (g->len + iov[k].iov_len > g->cap)
			return -EOVERFLOW;
		memcpy(g->out + g->len, p, iov[k].iov_len);
		g->len += iov[k].iov_len;
	}
	return g->fail;
}

static ssize_t sink_pread(struct nostall_file *f, struct sink_got *g, uint8_t *buf, size_t len,
			  uint64_t off)
{
	g->len = 0;
	g->calls = 0;
	g->lent = 0;
	g->buf = buf;
	g->buf_len = len;
	return nostall_pread_sink(f, buf, len, off, sink_take, g);
}

static void test_sink_reads(void **state)
{
	(void)state;
	NEED_E2FS();
	unsigned seed = (unsigned)time(NULL);
	print_message("sink reads: seed %u\n", seed);
	srand(seed);
	uint8_t *b = malloc(7 * MIB);
	struct sink_got g = { .out = malloc(7 * MIB), .cap = 7 * MIB };
	assert_non_null(b);
	assert_non_null(g.out);
	for (int ro = 0; ro < 2; ro++) {
		for (int ra = 0; ra < 2; ra++) {
			struct nostall_fs *fs = NULL;
			int rc = nostall_mount(img, ra ? "cache=1M" : "cache=1M,file_readahead=0",
					       ro ? NOSTALL_MOUNT_RDONLY : 0, &fs);
			if (rc)
				fail_msg("mount: %s", nostall_errmsg(rc));
			for (int i = 0; i < 3; i++) {
				const struct hostfile *h = &files[i];
				struct nostall_file *f;
				assert_int_equal(nostall_open(fs, h->name, 0, &f), 0);
				/* a stream of 1 MiB reads: lent from the segments */
				int lent = 0, reads = 0;
				for (uint64_t off = 0; off < h->len; off += MIB, reads++) {
					size_t want = h->len - off < MIB ? h->len - off : MIB;
					ssize_t n = sink_pread(f, &g, b, MIB, off);
					if (n != (ssize_t)want || g.calls != 1 || g.len != want ||
					    memcmp(g.out, h->data + off, want))
						fail_msg("%s sink stream at %llu: %zd (%d calls, %zu bytes), ro %d ra %d",
							 h->name, (unsigned long long)off, n, g.calls, g.len, ro, ra);
					lent += g.lent > 0;
				}
				print_message("%s ro %d ra %d: %d of %d stream reads lent\n", h->name, ro, ra,
					      lent, reads);
				if (!ra)
					assert_int_equal(lent, 0); /* no segments to lend */
				else if (i == 0)
					assert_true(lent >= reads - 2);
				/* random reads, some in sequential runs (few: the
				 * sanitizer builds run this too) */
				for (int k = 0; k < 40; k++) {
					uint64_t off = (uint64_t)rand() % (h->len + 100);
					size_t len;
					switch (rand() % 3) {
					case 0: len = 1 + (size_t)rand() % 100; break;
					case 1: len = 64 * KIB + (size_t)rand() % (2 * MIB); break;
					default: len = (size_t)rand() % (7 * MIB); break;
					}
					int reps = rand() % 3 == 0 ? 1 + rand() % 6 : 1;
					for (int r = 0; r < reps; r++) {
						ssize_t n = sink_pread(f, &g, b, len, off);
						size_t want = off >= h->len ? 0 : (h->len - off < len ? h->len - off : len);
						if (n != (ssize_t)want || g.calls != 1 || g.len != want ||
						    memcmp(g.out, h->data + off, want))
							fail_msg("%s sink pread(%zu, %llu) = %zd (%d calls, %zu bytes), ro %d ra %d (seed %u)",
								 h->name, len, (unsigned long long)off, n, g.calls,
								 g.len, ro, ra, seed);
						off += want;
					}
				}
				/* the sink's error is the result; the stream goes on after it */
				g.fail = -EPIPE;
				assert_int_equal(sink_pread(f, &g, b, MIB, 0), -EPIPE);
				assert_int_equal(g.calls, 1);
				g.fail = 0;
				assert_int_equal(sink_pread(f, &g, b, MIB, MIB), (ssize_t)MIB);
				assert_memory_equal(g.out, h->data + MIB, MIB);
				nostall_close(f);
			}
			assert_int_equal(nostall_umount(fs), 0);
		}
	}
	/* a read error: the sink is never called, the short count comes first */
	struct nostall_fs *fs = mount_opts(img, NULL);
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "big", 0, &f), 0);
	uint64_t phys;
	const uint64_t bad = 3000;
	assert_int_equal(nostall_bmap(f, bad, &phys), 0);
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);
	char spec[600];
	snprintf(spec, sizeof spec, "fault:file:%s,op=read,sector=%llu-%llu", img,
		 (unsigned long long)(phys * 8), (unsigned long long)(phys * 8));
	fs = mount_opts(spec, NULL);
	assert_int_equal(nostall_open(fs, "big", 0, &f), 0);
	uint64_t off = 0;
	ssize_t n;
	while ((n = sink_pread(f, &g, b, MIB, off)) > 0) {
		assert_int_equal(g.calls, 1);
		assert_memory_equal(g.out, files[0].data + off, (size_t)n);
		off += (uint64_t)n;
	}
	assert_int_equal(n, -EIO);
	assert_int_equal(g.calls, 0);
	assert_int_equal(off, bad * 4096);
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);
	free(g.out);
	free(b);
}

struct rd_arg {
	struct nostall_fs *fs;
	struct nostall_file *shared;
	int which;
	int errors;
};

static void *seq_reader(void *p)
{
	struct rd_arg *a = p;
	const struct hostfile *h = &files[a->which % 3];
	size_t chunk = a->which % 2 ? 70001 : MIB;
	struct nostall_file *f;
	if (nostall_open(a->fs, h->name, 0, &f)) {
		a->errors++;
		return NULL;
	}
	uint8_t *b = malloc(chunk);
	size_t got = 0;
	ssize_t n;
	while (b && (n = nostall_read(f, b, chunk)) > 0) {
		if (memcmp(b, h->data + got, (size_t)n))
			a->errors++;
		got += (size_t)n;
	}
	if (got != h->len)
		a->errors++;
	free(b);
	nostall_close(f);
	return NULL;
}

static void *shared_reader(void *p)
{
	struct rd_arg *a = p;
	const struct hostfile *h = &files[0];
	uint8_t *b = malloc(2 * MIB);
	struct sink_got g = { .out = malloc(2 * MIB), .cap = 2 * MIB };
	unsigned x = (unsigned)a->which * 7919u + 1;
	for (int k = 0; b && g.out && k < 60; k++) {
		x = x * 1103515245u + 12345u;
		uint64_t off = (x >> 4) % h->len;
		size_t len = k % 3 ? 1 + (x >> 8) % (2 * MIB) : 1 + (x >> 8) % 200;
		size_t want = h->len - off < len ? h->len - off : len;
		if (k % 2) { /* lent segments while others read the same handle */
			ssize_t n = sink_pread(a->shared, &g, b, len, off);
			if (n != (ssize_t)want || g.len != want || memcmp(g.out, h->data + off, want))
				a->errors++;
			continue;
		}
		ssize_t n = nostall_pread(a->shared, b, len, off);
		if (n != (ssize_t)want || memcmp(b, h->data + off, want))
			a->errors++;
	}
	free(g.out);
	free(b);
	return NULL;
}

static void test_concurrent_readers(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_opts(img, "cache=512K");
	struct nostall_file *shared;
	assert_int_equal(nostall_open(fs, "big", 0, &shared), 0);
	pthread_t t[6];
	struct rd_arg a[6];
	for (int i = 0; i < 6; i++) {
		a[i] = (struct rd_arg){fs, shared, i, 0};
		assert_int_equal(pthread_create(&t[i], NULL, i < 4 ? seq_reader : shared_reader, &a[i]),
				 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].errors, 0);
	}
	nostall_close(shared);
	assert_int_equal(nostall_umount(fs), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequential_vs_host),
		cmocka_unit_test(test_random_preads),
		cmocka_unit_test(test_fast_path_taken),
		cmocka_unit_test(test_guess_checked),
		cmocka_unit_test(test_cached_not_reread),
		cmocka_unit_test(test_dirty_cache_wins),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_sink_reads),
		cmocka_unit_test(test_concurrent_readers),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
