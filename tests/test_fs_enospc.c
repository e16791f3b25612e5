/* Running out of things, through the public API (include/nostall/nostall.h),
 * issue 8's "Every failure path returns the errno a Linux user expects":
 *
 * - blocks: files are written until -ENOSPC (as root: free ~ 0 then); every
 *   byte a write reported is read back; a file is deleted and in
 *   the SAME mount (the blocks were freed by the running transaction, which
 *   must commit before they can be reused: ext3_should_retry_alloc) a new
 *   write of that size succeeds; unmount, e2fsck -fn clean, remount, the
 *   contents again, delete half, write again, e2fsck clean. 1 KiB and 4 KiB
 *   blocks, data=ordered / journal / writeback.
 * - inodes: an image with few inodes: creat, mkdir, symlink, mknod until
 *   -ENOSPC; a delete lets a create succeed in the same mount; e2fsck clean.
 * - EFBIG at the indirect-map limit (ext3_max_size: the triple-indirect
 *   tree, bounded by the 32-bit i_blocks), computed here from the formula;
 *   the write straddling it is short, as generic_write_checks makes it.
 * - ENAMETOOLONG: 256-byte names (create, mkdir, link, rename, symlink) and
 *   symlink targets of a block or more.
 * - EMLINK: EXT3_LINK_MAX = 32000: mkdir in a directory with 31998
 *   subdirectories (its link count is 32000), link() to a file with 32000
 *   links, rename of a directory into the full one.
 * Every image is checked with e2fsck -fn after unmount. Deterministic (no
 * random choices). mke2fs and e2fsck must be installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KIB 1024ull
#define CHUNK (64u * 1024u)
#define MAXFILES 512

static char tmpdir[256];

static void img_path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", tmpdir, name);
}

/* The byte at offset off of file number id. */
static uint8_t pat(unsigned id, uint64_t off)
{
	uint64_t x = (off / 8) * 0x9e3779b97f4a7c15ull + id * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off % 8)));
}

static void pat_fill(uint8_t *b, size_t n, unsigned id, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(id, off + i);
}

/* Write file id at path until `limit` bytes or -ENOSPC. Returns the bytes
 * written; *enospc tells whether space ran out (then a further write of the
 * same file must fail with -ENOSPC: nothing was left). */
static uint64_t write_until(struct nostall_fs *fs, const char *path, unsigned id, uint64_t limit,
			    bool *enospc)
{
	static uint8_t buf[CHUNK];
	int fd = nostall_fd_open(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_APPEND, 0644);
	*enospc = false;
	if (fd == -ENOSPC) { /* no inode or no directory block left */
		*enospc = true;
		return 0;
	}
	if (fd < 0)
		fail_msg("open %s: %s", path, nostall_errmsg(fd));
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	uint64_t off = st.size, done = 0;
	while (done < limit) {
		size_t n = limit - done < CHUNK ? (size_t)(limit - done) : CHUNK;
		pat_fill(buf, n, id, off);
		ssize_t w = nostall_fd_write(fs, fd, buf, n);
		if (w == -ENOSPC) {
			*enospc = true;
			break;
		}
		if (w <= 0)
			fail_msg("write %s at %llu: %s", path, (unsigned long long)off,
				 nostall_errmsg((int)w));
		off += (uint64_t)w;
		done += (uint64_t)w;
		if ((size_t)w < n) { /* short: space ran out; the next one fails */
			pat_fill(buf, n, id, off);
			w = nostall_fd_write(fs, fd, buf, n);
			if (w != -ENOSPC)
				fail_msg("write %s after a short write: %zd, not -ENOSPC", path, w);
			*enospc = true;
			break;
		}
	}
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	assert_int_equal(st.size, off);
	int rc = nostall_fd_close(fs, fd);
	if (rc)
		fail_msg("close %s: %s", path, nostall_errmsg(rc));
	return done;
}

static void check_file(struct nostall_fs *fs, const char *path, unsigned id, uint64_t size)
{
	static uint8_t buf[CHUNK], want[CHUNK];
	int fd = nostall_fd_open(fs, path, NOSTALL_O_RDONLY, 0);
	if (fd < 0)
		fail_msg("open %s: %s", path, nostall_errmsg(fd));
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	if (st.size != size)
		fail_msg("%s: size %llu, want %llu", path, (unsigned long long)st.size,
			 (unsigned long long)size);
	for (uint64_t off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		ssize_t r = nostall_fd_pread(fs, fd, buf, n, off);
		assert_int_equal(r, (ssize_t)n);
		pat_fill(want, n, id, off);
		if (memcmp(buf, want, n))
			fail_msg("%s: wrong data in [%llu, +%zu)", path, (unsigned long long)off, n);
	}
	assert_int_equal(nostall_fd_close(fs, fd), 0);
}

/* ------------------------------------------------------------ blocks */

struct files {
	unsigned n;
	uint64_t size[MAXFILES];
	bool gone[MAXFILES];
};

static void fname(char *out, size_t n, unsigned i)
{
	snprintf(out, n, "/d%u/f%u", i % 4, i);
}

/* New files of up to `each` bytes until -ENOSPC. */
static void fill(struct nostall_fs *fs, struct files *f, uint64_t each)
{
	for (;;) {
		assert_true(f->n < MAXFILES);
		char p[64];
		fname(p, sizeof p, f->n);
		bool full;
		f->size[f->n] = write_until(fs, p, f->n, each, &full);
		f->n++;
		if (full)
			return;
	}
}

static void check_all(struct nostall_fs *fs, const struct files *f)
{
	char p[64];
	for (unsigned i = 0; i < f->n; i++) {
		fname(p, sizeof p, i);
		if (f->gone[i]) {
			struct nostall_stat st;
			assert_int_equal(nostall_stat(fs, p, 0, &st), -ENOENT);
		} else if (f->size[i] || nostall_stat(fs, p, 0, &(struct nostall_stat){ 0 }) == 0) {
			check_file(fs, p, i, f->size[i]);
		}
	}
}

/* Delete file i (it must exist) and return its size. */
static uint64_t del(struct nostall_fs *fs, struct files *f, unsigned i)
{
	char p[64];
	fname(p, sizeof p, i);
	int rc = nostall_unlink(fs, p);
	if (rc)
		fail_msg("unlink %s: %s", p, nostall_errmsg(rc));
	f->gone[i] = true;
	return f->size[i];
}

static void blocks_case(unsigned bs, const char *mode)
{
	char img[300], opts[64];
	img_path(img, sizeof img, "blocks.img");
	unsigned kib = bs == 1024 ? 8192 : 16384;
	fsimg_assert_mkfs(img, bs, kib, "-m 5");
	snprintf(opts, sizeof opts, "data=%s", mode);
	static struct files f;
	memset(&f, 0, sizeof f);

	struct nostall_fs *fs = fsimg_api_mount(img, opts, 0);
	for (int d = 0; d < 4; d++) {
		char p[16];
		snprintf(p, sizeof p, "/d%d", d);
		assert_int_equal(nostall_mkdir(fs, p, 0755), 0);
	}
	/* As root: every block, the reserved ones too (reserved_case has an
	 * ordinary user stop at them). */
	nostall_cred_set(0, 0, NULL, 0);
	struct nostall_statfs sf;
	fill(fs, &f, 700 * KIB);
	assert_true(f.n > 4);
	assert_int_equal(nostall_statfs(fs, &sf), 0);
	if (sf.blocks_free > 4)
		fail_msg("ENOSPC with %llu blocks free", (unsigned long long)sf.blocks_free);
	/* nothing fits anywhere now: a new directory, a new slow symlink */
	assert_int_equal(nostall_mkdir(fs, "/d0/newdir", 0755), -ENOSPC);
	char target[600];
	memset(target, 'x', sizeof target - 1);
	target[sizeof target - 1] = 0;
	assert_int_equal(nostall_symlink(fs, target, "/d1/slow"), -ENOSPC);
	check_all(fs, &f);

	/* Free a whole file and write that much at once, in the same mount:
	 * the freed blocks belong to the running transaction. */
	unsigned victim = 1; /* a full-size file of the user's */
	assert_true(f.size[victim] >= 600 * KIB);
	uint64_t freed = del(fs, &f, victim);
	assert_true(f.n < MAXFILES);
	char p[64];
	fname(p, sizeof p, f.n);
	bool full;
	uint64_t got = write_until(fs, p, f.n, freed / 2, &full);
	if (full || got != freed / 2)
		fail_msg("bs %u data=%s: after freeing %llu bytes, a write of %llu got %llu (ENOSPC %d)",
			 bs, mode, (unsigned long long)freed, (unsigned long long)(freed / 2),
			 (unsigned long long)got, full);
	f.size[f.n++] = got;
	check_all(fs, &f);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);

	/* Again after a remount: delete every other file, then refill. */
	fs = fsimg_api_mount(img, opts, 0);
	check_all(fs, &f);
	uint64_t total = 0;
	for (unsigned i = 0; i < f.n; i += 2)
		if (!f.gone[i])
			total += del(fs, &f, i);
	assert_true(total > 0);
	unsigned before = f.n;
	fill(fs, &f, 700 * KIB);
	uint64_t again = 0;
	for (unsigned i = before; i < f.n; i++)
		again += f.size[i];
	/* all but the indirect blocks and a few partial blocks come back */
	if (again < total - total / 16)
		fail_msg("bs %u data=%s: freed %llu bytes, refilled only %llu", bs, mode,
			 (unsigned long long)total, (unsigned long long)again);
	check_all(fs, &f);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	fs = fsimg_api_mount(img, "ro", 0);
	check_all(fs, &f);
	fsimg_api_umount(fs);
	nostall_cred_reset();
	unlink(img);
}

/* ---------------------------------------------------- reserved blocks */

/* Free blocks now (statfs). */
static uint64_t blocks_free(struct nostall_fs *fs)
{
	struct nostall_statfs sf;
	assert_int_equal(nostall_statfs(fs, &sf), 0);
	return sf.blocks_free;
}

/* Reserved blocks (-m 5): an ordinary user's writes stop with -ENOSPC when
 * only the reserved blocks are left; s_def_resuid, a member of s_def_resgid
 * and root go on into them (2.6.30's ext3_has_free_blocks). */
static void reserved_case(unsigned bs)
{
	char img[300];
	img_path(img, sizeof img, "reserved.img");
	fsimg_assert_mkfs(img, bs, bs == 1024 ? 8192 : 16384, "-m 5");
	assert_int_equal(fsimg_run("tune2fs -u 1234 -g 2000 '%s' >/dev/null 2>&1", img), 0);
	static struct files f;
	memset(&f, 0, sizeof f);
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_info info;
	assert_int_equal(nostall_info(fs, &info), 0);
	uint64_t rsv = info.r_blocks_count;
	assert_true(rsv > 16);
	for (int d = 0; d < 4; d++) {
		char p[16];
		snprintf(p, sizeof p, "/d%d", d);
		assert_int_equal(nostall_mkdir(fs, p, 0777), 0);
	}
	/* uid 1000 (group 100, also in 3000): stops at the reserve, exactly */
	const uint32_t other[] = {3000};
	nostall_cred_set(1000, 100, other, 1);
	fill(fs, &f, 700 * KIB);
	assert_true(f.n > 4);
	uint64_t left = blocks_free(fs);
	if (left != rsv)
		fail_msg("bs %u: an ordinary user stopped with %llu blocks free, %llu reserved", bs,
			 (unsigned long long)left, (unsigned long long)rsv);
	struct nostall_statfs sf;
	assert_int_equal(nostall_statfs(fs, &sf), 0);
	assert_int_equal(sf.blocks_avail, 0);
	assert_int_equal(nostall_mkdir(fs, "/d0/newdir", 0755), -ENOSPC);
	char p[64];
	bool full;
	/* s_def_resuid and a member of s_def_resgid may take reserved blocks */
	nostall_cred_set(1234, 100, NULL, 0);
	fname(p, sizeof p, f.n);
	f.size[f.n] = write_until(fs, p, f.n, 8 * bs, &full);
	assert_false(full);
	f.n++;
	const uint32_t res[] = {3000, 2000};
	nostall_cred_set(1001, 100, res, 2);
	fname(p, sizeof p, f.n);
	f.size[f.n] = write_until(fs, p, f.n, 8 * bs, &full);
	assert_false(full);
	f.n++;
	assert_true(blocks_free(fs) < rsv);
	/* the ordinary user still cannot */
	nostall_cred_set(1000, 100, other, 1);
	fname(p, sizeof p, f.n);
	assert_int_equal(write_until(fs, p, f.n, bs, &full), 0);
	assert_true(full);
	f.n++;
	/* root fills the rest */
	nostall_cred_set(0, 0, NULL, 0);
	uint64_t before = blocks_free(fs);
	unsigned first_root = f.n;
	fill(fs, &f, 700 * KIB);
	uint64_t got = 0;
	for (unsigned i = first_root; i < f.n; i++)
		got += f.size[i];
	if (got < (before - before / 8) * bs || blocks_free(fs) > 4)
		fail_msg("bs %u: root wrote %llu bytes of %llu free blocks, %llu left", bs,
			 (unsigned long long)got, (unsigned long long)before,
			 (unsigned long long)blocks_free(fs));
	check_all(fs, &f);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	/* after a remount, an unprivileged user's write fails at once, and
	 * works again once root deleted enough to free more than the reserve */
	fs = fsimg_api_mount(img, NULL, 0);
	nostall_cred_set(1000, 100, NULL, 0);
	fname(p, sizeof p, f.n);
	assert_int_equal(write_until(fs, p, f.n, bs, &full), 0);
	assert_true(full);
	f.n++;
	nostall_cred_set(0, 0, NULL, 0);
	for (unsigned i = 0; i < f.n && blocks_free(fs) < rsv + 16; i++)
		if (f.size[i] && !f.gone[i])
			del(fs, &f, i);
	assert_true(blocks_free(fs) >= rsv + 16);
	nostall_cred_set(1000, 100, NULL, 0);
	fname(p, sizeof p, f.n);
	f.size[f.n] = write_until(fs, p, f.n, 4 * bs, &full);
	assert_false(full);
	f.n++;
	check_all(fs, &f);
	nostall_cred_reset();
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	unlink(img);
}

static void test_reserved_1k(void **state)
{
	reserved_case(1024);
}

static void test_reserved_4k(void **state)
{
	reserved_case(4096);
}

static void test_blocks_1k_ordered(void **state)
{
	blocks_case(1024, "ordered");
}

static void test_blocks_4k_ordered(void **state)
{
	blocks_case(4096, "ordered");
}

static void test_blocks_1k_journal(void **state)
{
	blocks_case(1024, "journal");
}

static void test_blocks_4k_writeback(void **state)
{
	blocks_case(4096, "writeback");
}

/* ------------------------------------------------------------ inodes */

static void inodes_case(unsigned bs)
{
	char img[300];
	img_path(img, sizeof img, "inodes.img");
	fsimg_assert_mkfs(img, bs, 8192, "-N 64");
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	struct nostall_statfs sf;
	assert_int_equal(nostall_statfs(fs, &sf), 0);
	assert_true(sf.files_free > 8 && sf.files_free < 200);
	unsigned n = 0;
	char p[64];
	int rc;
	for (;; n++) {
		assert_true(n < 1000);
		snprintf(p, sizeof p, "/f%u", n);
		/* vary the kind of inode: file, directory, symlink, fifo */
		switch (n % 4) {
		case 0: {
			int fd = nostall_fd_open(fs, p, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
			rc = fd < 0 ? fd : 0;
			if (fd >= 0) {
				assert_int_equal(nostall_fd_write(fs, fd, p, strlen(p)), (ssize_t)strlen(p));
				assert_int_equal(nostall_fd_close(fs, fd), 0);
			}
			break;
		}
		case 1:
			rc = nostall_mkdir(fs, p, 0755);
			break;
		case 2:
			rc = nostall_symlink(fs, "target", p);
			break;
		default:
			rc = nostall_mknod(fs, p, S_IFIFO | 0644, 0);
			break;
		}
		if (rc == -ENOSPC)
			break;
		if (rc)
			fail_msg("create %s: %s", p, nostall_errmsg(rc));
	}
	assert_int_equal(nostall_statfs(fs, &sf), 0);
	assert_int_equal(sf.files_free, 0);
	/* every kind fails the same way, and nothing was left behind */
	assert_int_equal(nostall_mkdir(fs, "/x1", 0755), -ENOSPC);
	assert_int_equal(nostall_symlink(fs, "t", "/x2"), -ENOSPC);
	assert_int_equal(nostall_mknod(fs, "/x3", S_IFIFO | 0600, 0), -ENOSPC);
	assert_int_equal(nostall_fd_open(fs, "/x4", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0600), -ENOSPC);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/x1", 0, &st), -ENOENT);
	assert_int_equal(nostall_stat(fs, "/x4", 0, &st), -ENOENT);
	/* links need no inode */
	assert_int_equal(nostall_link(fs, "/f0", "/f0.link"), 0);
	/* free two (a file and a directory) in this mount: creates work again */
	assert_int_equal(nostall_unlink(fs, "/f0"), 0);
	assert_int_equal(nostall_unlink(fs, "/f0.link"), 0);
	assert_int_equal(nostall_rmdir(fs, "/f1"), 0);
	assert_int_equal(nostall_mkdir(fs, "/x1", 0755), 0);
	int fd = nostall_fd_open(fs, "/x4", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_write(fs, fd, "abc", 3), 3);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_symlink(fs, "t", "/x2"), -ENOSPC);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);

	fs = fsimg_api_mount(img, NULL, 0);
	assert_int_equal(nostall_stat(fs, "/x4", 0, &st), 0);
	assert_int_equal(st.size, 3);
	assert_int_equal(nostall_stat(fs, "/x1", 0, &st), 0);
	assert_true(S_ISDIR(st.mode));
	for (unsigned i = 2; i < n; i++) {
		snprintf(p, sizeof p, "/f%u", i);
		assert_int_equal(nostall_stat(fs, p, NOSTALL_NOFOLLOW, &st), 0);
	}
	/* after a remount too: delete, create */
	assert_int_equal(nostall_unlink(fs, "/f2"), 0);
	assert_int_equal(nostall_symlink(fs, "t", "/x2"), 0);
	assert_int_equal(nostall_mknod(fs, "/x3", S_IFIFO | 0600, 0), -ENOSPC);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	unlink(img);
}

static void test_inodes_1k(void **state)
{
	inodes_case(1024);
}

static void test_inodes_4k(void **state)
{
	inodes_case(4096);
}

/* ------------------------------------------------------------ EFBIG */

/* ext3_max_size: the triple-indirect tree, and i_blocks (32 bits of
 * 512-byte units) must count the data plus every indirect block. ext2 has
 * the same limit (the kernel's ext4_max_bitmap_size without huge_file).
 * On ext4 (tests/lib/testfs.h; both of the matrix's sets have extent and
 * huge_file) new files are extent-mapped: ext4_max_size, 2^32 - 1 blocks
 * (the 32-bit logical block of an extent). */
static uint64_t max_size(unsigned bs)
{
	if (!strcmp(testfs_type(), "ext4") && !strstr(testfs_mkfs_opts(), "^extent"))
		return (0xffffffffull) * bs;
	uint64_t apb = bs / 4;
	uint64_t tree = 12 + apb + apb * apb + apb * apb * apb;
	uint64_t meta = 1 + (1 + apb) + (1 + apb + apb * apb);
	uint64_t limit = 0xffffffffull / (bs / 512) - meta;
	return (tree < limit ? tree : limit) * bs;
}

static void efbig_case(unsigned bs, const char *mode)
{
	char img[300], opts[64];
	img_path(img, sizeof img, "efbig.img");
	fsimg_assert_mkfs(img, bs, 8192, "");
	snprintf(opts, sizeof opts, "data=%s", mode);
	uint64_t max = max_size(bs);
	struct nostall_fs *fs = fsimg_api_mount(img, opts, 0);
	int fd = nostall_fd_open(fs, "/big", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_pwrite(fs, fd, "a", 1, max), -EFBIG);
	assert_int_equal(nostall_fd_pwrite(fs, fd, "a", 1, max + 12345), -EFBIG);
	assert_int_equal(nostall_fd_ftruncate(fs, fd, max + 1), -EFBIG);
	assert_int_equal(nostall_truncate(fs, "/big", max + 1), -EFBIG);
	struct nostall_stat st;
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	assert_int_equal(st.size, 0);
	/* the last byte is writable; a write across the limit is cut to it */
	assert_int_equal(nostall_fd_pwrite(fs, fd, "0123456789", 10, max - 4), 4);
	assert_int_equal(nostall_fd_pwrite(fs, fd, "Z", 1, max - 1), 1);
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	assert_int_equal(st.size, max);
	/* data, a triple-indirect chain: 1 data block + 3 indirect; an
	 * extent file: 1 data block (one extent in the inode's root) */
	bool extents = max_size(bs) == 0xffffffffull * bs;
	assert_int_equal(st.blocks, (extents ? 1 : 4) * (bs / 512));
	char b[8] = { 0 };
	assert_int_equal(nostall_fd_pread(fs, fd, b, 8, max - 6), 6);
	assert_memory_equal(b, "\0\0" "012Z", 6);
	/* appending at the limit: EFBIG, the size stays */
	int afd = nostall_fd_open(fs, "/big", NOSTALL_O_WRONLY | NOSTALL_O_APPEND, 0);
	assert_true(afd >= 0);
	assert_int_equal(nostall_fd_write(fs, afd, "b", 1), -EFBIG);
	assert_int_equal(nostall_fd_close(fs, afd), 0);
	assert_int_equal(nostall_fd_ftruncate(fs, fd, max), 0);
	assert_int_equal(nostall_fd_fstat(fs, fd, &st), 0);
	assert_int_equal(st.size, max);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	/* a sparse file at exactly the limit (truncate up only) */
	fd = nostall_fd_open(fs, "/sparse", NOSTALL_O_RDWR | NOSTALL_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_ftruncate(fs, fd, max), 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	fs = fsimg_api_mount(img, opts, 0);
	assert_int_equal(nostall_stat(fs, "/big", 0, &st), 0);
	assert_int_equal(st.size, max);
	assert_int_equal(nostall_stat(fs, "/sparse", 0, &st), 0);
	assert_int_equal(st.size, max);
	assert_int_equal(st.blocks, 0);
	/* and shrinking frees the indirect chain */
	assert_int_equal(nostall_truncate(fs, "/big", 1), 0);
	assert_int_equal(nostall_stat(fs, "/big", 0, &st), 0);
	assert_int_equal(st.blocks, 0);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	unlink(img);
}

static void test_efbig_1k(void **state)
{
	efbig_case(1024, "ordered");
}

static void test_efbig_4k(void **state)
{
	efbig_case(4096, "journal");
}

/* ------------------------------------------------------------ ENAMETOOLONG */

static void nametoolong_case(unsigned bs)
{
	char img[300];
	img_path(img, sizeof img, "names.img");
	fsimg_assert_mkfs(img, bs, 16384, "");
	struct nostall_fs *fs = fsimg_api_mount(img, NULL, 0);
	char n256[300], p255[300], target[5000];
	n256[0] = p255[0] = '/';
	memset(n256 + 1, 'b', 256);
	n256[257] = 0;
	memset(p255 + 1, 'a', 255);
	p255[256] = 0;

	int fd = nostall_fd_open(fs, p255, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(nostall_fd_close(fs, fd), 0);
	assert_int_equal(nostall_fd_open(fs, n256, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644),
			 -ENAMETOOLONG);
	assert_int_equal(nostall_mkdir(fs, n256, 0755), -ENAMETOOLONG);
	assert_int_equal(nostall_mknod(fs, n256, S_IFIFO | 0644, 0), -ENAMETOOLONG);
	assert_int_equal(nostall_symlink(fs, "t", n256), -ENAMETOOLONG);
	assert_int_equal(nostall_link(fs, p255, n256), -ENAMETOOLONG);
	assert_int_equal(nostall_rename(fs, p255, n256, 0), -ENAMETOOLONG);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, n256, 0, &st), -ENAMETOOLONG);
	assert_int_equal(nostall_unlink(fs, n256), -ENAMETOOLONG);
	/* inode-number calls too */
	assert_int_equal(nostall_mkdir_at(fs, NOSTALL_ROOT_INO, n256 + 1, 0755, &st), -ENAMETOOLONG);
	/* a symlink target: up to block size - 1 bytes (ext3_symlink) */
	memset(target, 't', sizeof target);
	target[bs - 1] = 0;
	assert_int_equal(nostall_symlink(fs, target, "/longest"), 0);
	target[bs - 1] = 't';
	target[bs] = 0;
	assert_int_equal(nostall_symlink(fs, target, "/toolong"), -ENAMETOOLONG);
	assert_int_equal(nostall_stat(fs, "/toolong", NOSTALL_NOFOLLOW, &st), -ENOENT);
	/* the 255-byte name works everywhere */
	assert_int_equal(nostall_rename(fs, p255, "/short", 0), 0);
	assert_int_equal(nostall_mkdir(fs, p255, 0755), 0);
	assert_int_equal(nostall_stat(fs, "/longest", NOSTALL_NOFOLLOW, &st), 0);
	assert_int_equal(st.size, bs - 1);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	unlink(img);
}

static void test_nametoolong_1k(void **state)
{
	nametoolong_case(1024);
}

static void test_nametoolong_4k(void **state)
{
	nametoolong_case(4096);
}

/* ------------------------------------------------------------ EMLINK */

#define LINK_MAX_EXT3 32000u

static void emlink_case(unsigned bs)
{
	/* EXT3_LINK_MAX. The kernel's ext4 driver (ext4, and ext2 as nostall
	 * writes it) allows 65,000 links and with dir_nlink no limit for
	 * subdirectories: other expectations, not this test's (testfs.h) */
	if (strcmp(testfs_type(), "ext3")) {
		print_message("[  SKIP    ] EMLINK at 32,000 links is ext3's; %s has the ext4 driver's limits\n",
			      testfs_type());
		skip();
	}
	char img[300];
	img_path(img, sizeof img, "emlink.img");
	/* 32,000 directories need 32,000 inodes and blocks */
	fsimg_assert_mkfs(img, bs, bs == 1024 ? 65536 : 262144, "-N 40000");
	struct nostall_fs *fs = fsimg_api_mount(img, "data=writeback", 0);
	assert_int_equal(nostall_mkdir(fs, "/full", 0755), 0);
	assert_int_equal(nostall_mkdir(fs, "/other", 0755), 0);
	assert_int_equal(nostall_mkdir(fs, "/other/mover", 0755), 0);
	uint64_t full;
	assert_int_equal(nostall_lookup(fs, "/full", 0, &full), 0);
	struct nostall_stat st;
	char name[48];
	for (unsigned i = 0; i < LINK_MAX_EXT3 - 2; i++) {
		snprintf(name, sizeof name, "s%u", i);
		int rc = nostall_mkdir_at(fs, full, name, 0755, &st);
		if (rc)
			fail_msg("mkdir /full/%s: %s", name, nostall_errmsg(rc));
		nostall_forget(fs, st.ino, 1);
	}
	assert_int_equal(nostall_stat(fs, "/full", 0, &st), 0);
	assert_int_equal(st.nlink, LINK_MAX_EXT3);
	assert_int_equal(nostall_mkdir(fs, "/full/one-more", 0755), -EMLINK);
	assert_int_equal(nostall_rename(fs, "/other/mover", "/full/mover", 0), -EMLINK);
	/* files need no link of the parent */
	assert_int_equal(nostall_mknod(fs, "/full/file", S_IFREG | 0644, 0), 0);
	assert_int_equal(nostall_rename(fs, "/full/s0", "/full/s0-renamed", 0), 0);
	/* a file with 32,000 names */
	for (unsigned i = 1; i < LINK_MAX_EXT3; i++) {
		snprintf(name, sizeof name, "/other/l%u", i);
		int rc = nostall_link(fs, "/full/file", name);
		if (rc)
			fail_msg("link %s (link count %u): %s", name, i, nostall_errmsg(rc));
	}
	assert_int_equal(nostall_stat(fs, "/full/file", 0, &st), 0);
	assert_int_equal(st.nlink, LINK_MAX_EXT3);
	assert_int_equal(nostall_link(fs, "/full/file", "/other/too-many"), -EMLINK);
	assert_int_equal(nostall_stat(fs, "/other/too-many", 0, &st), -ENOENT);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);

	/* one subdirectory less: the mkdir works, and then not again */
	fs = fsimg_api_mount(img, NULL, 0);
	assert_int_equal(nostall_rmdir(fs, "/full/s1"), 0);
	assert_int_equal(nostall_unlink(fs, "/other/l1"), 0);
	assert_int_equal(nostall_rename(fs, "/other/mover", "/full/mover", 0), 0);
	assert_int_equal(nostall_mkdir(fs, "/full/one-more", 0755), -EMLINK);
	assert_int_equal(nostall_link(fs, "/full/file", "/other/again"), 0);
	assert_int_equal(nostall_link(fs, "/full/file", "/other/too-many"), -EMLINK);
	assert_int_equal(nostall_stat(fs, "/full", 0, &st), 0);
	assert_int_equal(st.nlink, LINK_MAX_EXT3);
	fsimg_api_umount(fs);
	fsimg_assert_clean(img);
	unlink(img);
}

static void test_emlink_1k(void **state)
{
	emlink_case(1024);
}

static void test_emlink_4k(void **state)
{
	emlink_case(4096);
}

int main(void)
{
	int orc = oracles_check("test_fs_enospc", "mke2fs e2fsck tune2fs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "enospc"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_1k_ordered), cmocka_unit_test(test_blocks_4k_ordered),
		cmocka_unit_test(test_blocks_1k_journal), cmocka_unit_test(test_blocks_4k_writeback),
		cmocka_unit_test(test_inodes_1k),         cmocka_unit_test(test_inodes_4k),
		cmocka_unit_test(test_efbig_1k),          cmocka_unit_test(test_efbig_4k),
		cmocka_unit_test(test_nametoolong_1k),    cmocka_unit_test(test_nametoolong_4k),
		cmocka_unit_test(test_emlink_1k),         cmocka_unit_test(test_emlink_4k),
		cmocka_unit_test(test_reserved_1k),       cmocka_unit_test(test_reserved_4k),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
