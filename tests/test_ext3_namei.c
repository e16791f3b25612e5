/* ext3 names, attributes and extended attributes on a writable mount
 * (src/extfs/core/ext3_fsops.h: namei.c, attr.c, xattr_write.c).
 *
 * Oracles: e2fsck -fn after every unmount (clean), debugfs (ls -l, stat,
 * ea_list / ea_get; ea_set and set_inode_field to prepare cases), and the
 * read path after a remount. Images: mke2fs, 1 KiB and 4 KiB blocks, 128-
 * and 256-byte inodes. The concurrent namespace test is
 * test_ext3_namei_conc.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fsimg.h"
#include "lib/oracles.h"

#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/ext3_int.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static char tmpdir[256];

struct geo {
	unsigned bs, isz;
};
static const struct geo geos[] = {{1024, 128}, {1024, 256}, {4096, 128}, {4096, 256}};
#define NGEOS (sizeof geos / sizeof geos[0])

static const struct ext3_cred cred = { .uid = 1000, .gid = 100 };

/* ---- helpers ---- */

/* A test's image and its mount (fs and root: m's, named short). */
struct fx {
	char img[300];
	struct geo g;
	struct fsimg_mnt m;
	struct ext3_fs *fs;
	struct ext3_inode *root;
};

/* flags: EXT3_MOUNT_JOURNAL (writable) or 0 (the read path). */
static void fx_mount_flags(struct fx *f, unsigned flags)
{
	fsimg_assert_mount(f->img, NULL, flags, &f->m);
	f->fs = f->m.fs;
	f->root = f->m.root;
}

static void fx_mount(struct fx *f) { fx_mount_flags(f, EXT3_MOUNT_JOURNAL); }

static void fx_mkfs(struct fx *f, struct geo g, const char *tag)
{
	memset(f, 0, sizeof *f);
	f->g = g;
	snprintf(f->img, sizeof f->img, "%s/%s-%u-%u.img", tmpdir, tag, g.bs, g.isz);
	char extra[64];
	snprintf(extra, sizeof extra, "-I %u -N 256", g.isz);
	fsimg_assert_mkfs(f->img, g.bs, 16384, extra);
}

static void fx_open(struct fx *f, struct geo g, const char *tag)
{
	fx_mkfs(f, g, tag);
	fx_mount(f);
}

/* Unmount without the e2fsck check. */
static void fx_unmount(struct fx *f)
{
	fsimg_assert_umount(&f->m);
	f->fs = NULL;
	f->root = NULL;
}

/* Unmount and require e2fsck -fn to find nothing. */
static void fx_umount(struct fx *f)
{
	fx_unmount(f);
	fsimg_assert_clean(f->img);
}

/* debugfs's output for req (a static buffer). */
static const char *dbg(const struct fx *f, const char *req)
{
	static char buf[65536];
	(void)fsimg_out(buf, sizeof buf, "debugfs -R '%s' '%s' 2>/dev/null", req, f->img);
	return buf;
}

static void dbg_has(const struct fx *f, const char *req, const char *needle)
{
	const char *o = dbg(f, req);
	if (!strstr(o, needle))
		fail_msg("debugfs %s on %s: no \"%s\" in:\n%s", req, f->img, needle, o);
}

static uint32_t ino_of(struct ext3_inode *dir, const char *name)
{
	uint32_t ino = 0;
	int rc = ext3_dir_lookup(dir->fs, dir, name, strlen(name), &ino, NULL);
	return rc ? 0 : ino;
}

static struct ext3_inode *get(struct fx *f, struct ext3_inode *dir, const char *name)
{
	uint32_t ino = ino_of(dir, name);
	if (!ino)
		fail_msg("no %s", name);
	struct ext3_inode *in;
	assert_int_equal(ext3_iget(f->fs, ino, &in), 0);
	return in;
}

static struct ext3_inode_attr attr(struct ext3_inode *in)
{
	struct ext3_inode_attr a;
	ext3_inode_attr_get(in, &a);
	return a;
}

static void mk(struct ext3_inode *dir, const char *name, uint16_t mode)
{
	struct ext3_inode *in = NULL;
	int rc = (mode & EXT3_S_IFMT) == EXT3_S_IFDIR
			 ? ext3_mkdir(dir, name, strlen(name), mode & 07777, &cred, &in)
			 : ext3_create(dir, name, strlen(name), mode, 0, &cred, &in);
	if (rc)
		fail_msg("create %s: %s", name, err_last(rc));
	ext3_iput(in);
}

#define N(s) (s), strlen(s)

/* ---- create, mkdir, symlink, device nodes ---- */

static void test_create_kinds(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi++) {
		struct fx f;
		fx_open(&f, geos[gi], "kinds");
		struct ext3_inode *in;
		assert_int_equal(ext3_create(f.root, N("reg"), EXT3_S_IFREG | 0640, 0, &cred, &in), 0);
		struct ext3_inode_attr a = attr(in);
		assert_int_equal(a.mode, EXT3_S_IFREG | 0640);
		assert_int_equal(a.links, 1);
		assert_int_equal(a.uid, 1000);
		assert_int_equal(a.gid, 100);
		assert_int_equal(a.size, 0);
		ext3_iput(in);
		mk(f.root, "fifo", EXT3_S_IFIFO | 0600);
		mk(f.root, "sock", EXT3_S_IFSOCK | 0600);
		assert_int_equal(ext3_create(f.root, N("chr"), EXT3_S_IFCHR | 0600, makedev(8, 1), &cred,
					     &in), 0);
		a = attr(in);
		assert_int_equal(a.block[0], 0x0801);
		assert_int_equal(a.block[1], 0);
		ext3_iput(in);
		assert_int_equal(ext3_create(f.root, N("blk"), EXT3_S_IFBLK | 0600, makedev(300, 70000),
					     &cred, &in), 0);
		a = attr(in);
		uint32_t maj, min;
		ext3_inode_rdev(&a, &maj, &min);
		assert_int_equal(maj, 300);
		assert_int_equal(min, 70000);
		assert_int_equal(a.block[0], 0);
		ext3_iput(in);
		uint16_t root_links = attr(f.root).links;
		assert_int_equal(ext3_mkdir(f.root, N("dir"), 0755, &cred, &in), 0);
		a = attr(in);
		assert_int_equal(a.mode, EXT3_S_IFDIR | 0755);
		assert_int_equal(a.links, 2);
		assert_int_equal(a.size, f.g.bs);
		assert_int_equal(attr(f.root).links, root_links + 1);
		assert_int_equal(ino_of(in, ".."), EXT3_ROOT_INO);
		assert_int_equal(ino_of(in, "."), ext3_inode_ino(in));
		ext3_iput(in);
		/* 59 bytes: fast; 60: slow; block size - 1: the longest. */
		char t[8192];
		memset(t, 'x', sizeof t);
		t[59] = '\0';
		assert_int_equal(ext3_symlink(f.root, N("fast"), t, &cred, &in), 0);
		assert_true(ext3_inode_is_fast_symlink(f.fs, in));
		assert_int_equal(attr(in).blocks, 0);
		char rd[4096];
		assert_int_equal(ext3_symlink_read(f.fs, in, rd, sizeof rd), 59);
		assert_memory_equal(rd, t, 59);
		ext3_iput(in);
		t[59] = 'y';
		t[60] = '\0';
		assert_int_equal(ext3_symlink(f.root, N("slow"), t, &cred, &in), 0);
		assert_false(ext3_inode_is_fast_symlink(f.fs, in));
		assert_int_equal(attr(in).blocks, f.g.bs / 512);
		ext3_iput(in);
		t[60] = 'x';
		t[f.g.bs - 1] = '\0';
		assert_int_equal(ext3_symlink(f.root, N("longest"), t, &cred, &in), 0);
		ext3_iput(in);
		t[f.g.bs - 1] = 'x';
		t[f.g.bs] = '\0';
		assert_int_equal(ext3_symlink(f.root, N("toolong"), t, &cred, &in), -ENAMETOOLONG);
		/* A setgid directory: its group for new inodes, setgid for new
		 * directories. */
		struct ext3_setattr sa = {.valid = EXT3_SET_MODE | EXT3_SET_GID, .mode = 02775,
					  .gid = 555};
		struct ext3_inode *d = get(&f, f.root, "dir");
		assert_int_equal(ext3_setattr(d, &sa), 0);
		assert_int_equal(ext3_mkdir(d, N("sub"), 0700, &cred, &in), 0);
		assert_int_equal(attr(in).gid, 555);
		assert_int_equal(attr(in).mode, EXT3_S_IFDIR | 02700);
		ext3_iput(in);
		assert_int_equal(ext3_create(d, N("file"), 0644, 0, &cred, &in), 0);
		assert_int_equal(attr(in).gid, 555);
		assert_int_equal(attr(in).mode, EXT3_S_IFREG | 0644);
		ext3_iput(in);
		ext3_iput(d);
		fx_umount(&f);

		dbg_has(&f, "ls -l /", "fifo");
		dbg_has(&f, "stat /chr", "Type: character special");
		dbg_has(&f, "stat /chr", "Device major/minor number: 08:01");
		dbg_has(&f, "stat /blk", "Type: block special");
		dbg_has(&f, "stat /sock", "Type: socket");
		dbg_has(&f, "stat /fifo", "Type: FIFO");
		dbg_has(&f, "stat /fast", "Fast link dest: \"xxxxxxxxxx");
		dbg_has(&f, "stat /dir", "Links: 3");
		dbg_has(&f, "stat /dir/sub", "Mode:  02700");
		char want[64];
		snprintf(want, sizeof want, "Size: %u", f.g.bs - 1);
		dbg_has(&f, "stat /longest", want);
		/* The read path (a read-only mount) sees the slow target. */
		fx_mount_flags(&f, 0);
		uint32_t ino;
		assert_int_equal(ext3_path_lookup(f.fs, "/slow", false, &ino), 0);
		assert_int_equal(ext3_iget(f.fs, ino, &in), 0);
		assert_int_equal(ext3_symlink_read(f.fs, in, rd, sizeof rd), 60);
		assert_int_equal(rd[59], 'y');
		ext3_iput(in);
		assert_int_equal(ext3_path_lookup(f.fs, "/blk", false, &ino), 0);
		fx_unmount(&f);
	}
}

/* ---- name errors ---- */

static void test_name_errors(void **state)
{
	(void)state;
	struct fx f;
	fx_open(&f, geos[0], "errs");
	struct ext3_inode *in = NULL;
	mk(f.root, "d", EXT3_S_IFDIR | 0755);
	mk(f.root, "file", EXT3_S_IFREG | 0644);
	struct ext3_inode *d = get(&f, f.root, "d");
	struct ext3_inode *file = get(&f, f.root, "file");
	mk(d, "inner", EXT3_S_IFREG | 0644);
	char longname[300];
	memset(longname, 'n', sizeof longname);
	assert_int_equal(ext3_mkdir(f.root, N("d"), 0755, &cred, &in), -EEXIST);
	assert_int_equal(ext3_create(f.root, N("file"), 0644, 0, &cred, &in), -EEXIST);
	assert_int_equal(ext3_mkdir(f.root, N("."), 0755, &cred, &in), -EEXIST);
	assert_int_equal(ext3_mkdir(f.root, N(".."), 0755, &cred, &in), -EEXIST);
	assert_int_equal(ext3_create(f.root, N("a/b"), 0644, 0, &cred, &in), -EINVAL);
	assert_int_equal(ext3_create(f.root, longname, 256, 0644, 0, &cred, &in), -ENAMETOOLONG);
	assert_int_equal(ext3_create(f.root, longname, 255, 0644, 0, &cred, &in), 0);
	ext3_iput(in);
	assert_int_equal(ext3_create(f.root, "", 0, 0644, 0, &cred, &in), -ENOENT);
	assert_int_equal(ext3_create(f.root, N("dirtype"), EXT3_S_IFDIR | 0644, 0, &cred, &in),
			 -EINVAL);
	assert_int_equal(ext3_create(file, N("x"), 0644, 0, &cred, &in), -ENOTDIR);
	assert_int_equal(ext3_mkdir(file, N("x"), 0755, &cred, &in), -ENOTDIR);
	assert_int_equal(ext3_rmdir(f.root, N(".")), -EINVAL);
	assert_int_equal(ext3_rmdir(f.root, N("..")), -ENOTEMPTY);
	assert_int_equal(ext3_unlink(f.root, N(".")), -EISDIR);
	assert_int_equal(ext3_unlink(f.root, N("d")), -EISDIR);
	assert_int_equal(ext3_rmdir(f.root, N("file")), -ENOTDIR);
	assert_int_equal(ext3_rmdir(f.root, N("d")), -ENOTEMPTY);
	assert_int_equal(ext3_unlink(f.root, N("missing")), -ENOENT);
	assert_int_equal(ext3_rmdir(f.root, N("missing")), -ENOENT);
	assert_int_equal(ext3_unlink(file, N("x")), -ENOTDIR);
	assert_int_equal(ext3_link(d, f.root, N("dlink")), -EPERM);
	assert_int_equal(ext3_link(file, f.root, N("d")), -EEXIST);
	assert_int_equal(ext3_link(file, f.root, N(".")), -EEXIST);
	assert_int_equal(ext3_symlink(f.root, N("s"), "", &cred, &in), -ENOENT);
	/* A removed directory takes no new names. */
	assert_int_equal(ext3_unlink(d, N("inner")), 0);
	assert_int_equal(ext3_rmdir(f.root, N("d")), 0);
	assert_int_equal(ext3_create(d, N("late"), 0644, 0, &cred, &in), -ENOENT);
	assert_int_equal(attr(d).links, 0);
	ext3_iput(d);
	ext3_iput(file);
	/* Nothing of the failed calls is left. */
	assert_int_equal(ino_of(f.root, "x"), 0);
	assert_int_equal(ino_of(f.root, "dirtype"), 0);
	fx_umount(&f);
	dbg_has(&f, "ls /", "file");
}

/* ---- link, unlink, orphans ---- */

static void test_link_unlink(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi += 3) {
		struct fx f;
		fx_open(&f, geos[gi], "link");
		mk(f.root, "a", EXT3_S_IFREG | 0644);
		mk(f.root, "sub", EXT3_S_IFDIR | 0755);
		struct ext3_inode *sub = get(&f, f.root, "sub");
		struct ext3_inode *a = get(&f, f.root, "a");
		uint32_t ino = ext3_inode_ino(a);
		assert_int_equal(ext3_link(a, f.root, N("b")), 0);
		assert_int_equal(ext3_link(a, sub, N("c")), 0);
		assert_int_equal(attr(a).links, 3);
		assert_int_equal(ino_of(sub, "c"), ino);
		assert_int_equal(ext3_unlink(f.root, N("a")), 0);
		assert_int_equal(ext3_unlink(sub, N("c")), 0);
		assert_int_equal(attr(a).links, 1);
		assert_false(a->on_orphan);
		/* The last name goes while a reference is held: an orphan until
		 * the put. */
		assert_int_equal(ext3_unlink(f.root, N("b")), 0);
		assert_int_equal(attr(a).links, 0);
		assert_true(a->on_orphan);
		assert_int_equal(le32_to_cpu(ext3_fs_super(f.fs)->s_last_orphan), ino);
		assert_int_equal(ext3_link(a, f.root, N("again")), -ENOENT);
		ext3_iput(a);
		assert_int_equal(le32_to_cpu(ext3_fs_super(f.fs)->s_last_orphan), 0);
		/* rmdir: links of the parent. */
		uint16_t rl = attr(f.root).links;
		assert_int_equal(ext3_rmdir(f.root, N("sub")), 0);
		assert_int_equal(attr(f.root).links, rl - 1);
		assert_int_equal(attr(sub).links, 0);
		ext3_iput(sub);
		fx_umount(&f);
		char req[64];
		snprintf(req, sizeof req, "testi <%u>", ino);
		dbg_has(&f, req, "is not in use");
		const char *ls = dbg(&f, "ls /");
		assert_null(strstr(ls, "sub"));
		assert_null(strstr(ls, " b "));
	}
}

/* ---- link count limits (EMLINK) ---- */

static void test_emlink(void **state)
{
	(void)state;
	struct fx f;
	fx_mkfs(&f, geos[1], "emlink");
	assert_int_equal(fsimg_run("debugfs -w -R 'mkdir full' '%s' >/dev/null 2>&1 && "
			     "debugfs -w -R 'mkdir other' '%s' >/dev/null 2>&1 && "
			     "debugfs -w -R 'mkdir other/mover' '%s' >/dev/null 2>&1 && "
			     "debugfs -w -R 'write /dev/null f' '%s' >/dev/null 2>&1 && "
			     "debugfs -w -R 'sif f links_count 31999' '%s' >/dev/null 2>&1 && "
			     "debugfs -w -R 'sif full links_count 32000' '%s' >/dev/null 2>&1",
			     f.img, f.img, f.img, f.img, f.img, f.img), 0);
	fx_mount(&f);
	struct ext3_inode *file = get(&f, f.root, "f");
	struct ext3_inode *full = get(&f, f.root, "full");
	struct ext3_inode *other = get(&f, f.root, "other");
	struct ext3_inode *in = NULL;
	assert_int_equal(ext3_link(file, f.root, N("g")), 0);
	assert_int_equal(attr(file).links, 32000);
	assert_int_equal(ext3_link(file, f.root, N("h")), -EMLINK);
	assert_int_equal(ext3_mkdir(full, N("x"), 0755, &cred, &in), -EMLINK);
	assert_int_equal(ext3_rename(other, N("mover"), full, N("mover"), 0), -EMLINK);
	/* Files still go into a full directory. */
	assert_int_equal(ext3_create(full, N("plain"), 0644, 0, &cred, &in), 0);
	ext3_iput(in);
	assert_int_equal(ext3_unlink(full, N("plain")), 0);
	assert_int_equal(ext3_unlink(f.root, N("g")), 0);
	ext3_iput(file);
	ext3_iput(full);
	ext3_iput(other);
	fx_unmount(&f);
	assert_int_equal(fsimg_run("debugfs -w -R 'sif f links_count 1' '%s' >/dev/null 2>&1 && "
			     "debugfs -w -R 'sif full links_count 2' '%s' >/dev/null 2>&1 && "
			     "e2fsck -fn '%s' >/dev/null 2>&1", f.img, f.img, f.img), 0);
}

/* ---- immutable and append-only inodes ---- */

static void test_frozen(void **state)
{
	(void)state;
	struct fx f;
	fx_mkfs(&f, geos[1], "frozen");
	assert_int_equal(fsimg_run("cd '%s' && for c in 'mkdir app' 'write /dev/null imm' "
			     "'write /dev/null app/old' 'sif imm flags 0x10' 'sif app flags 0x20'; "
			     "do debugfs -w -R \"$c\" '%s' >/dev/null 2>&1 || exit 1; done",
			     tmpdir, f.img), 0);
	fx_mount(&f);
	struct ext3_inode *imm = get(&f, f.root, "imm"), *app = get(&f, f.root, "app");
	struct ext3_inode *in = NULL;
	struct ext3_setattr sa = {.valid = EXT3_SET_MODE, .mode = 0600};
	assert_int_equal(ext3_setattr(imm, &sa), -EPERM);
	assert_int_equal(ext3_xattr_change(imm, "user.x", "1", 1, 0), -EPERM);
	assert_int_equal(ext3_unlink(f.root, N("imm")), -EPERM);
	assert_int_equal(ext3_link(imm, f.root, N("imm2")), -EPERM);
	assert_int_equal(ext3_rename(f.root, N("imm"), f.root, N("imm3"), 0), -EPERM);
	/* An append-only directory takes new names but gives none up. */
	assert_int_equal(ext3_create(app, N("new"), 0644, 0, &cred, &in), 0);
	ext3_iput(in);
	assert_int_equal(ext3_unlink(app, N("old")), -EPERM);
	assert_int_equal(ext3_rename(app, N("new"), f.root, N("out"), 0), -EPERM);
	assert_int_equal(ino_of(app, "old") != 0, true);
	ext3_iput(imm);
	ext3_iput(app);
	fx_umount(&f);
	dbg_has(&f, "ls /app", "new");
}

/* ---- rename ---- */

static void test_rename(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi++) {
		struct fx f;
		fx_open(&f, geos[gi], "rename");
		struct ext3_inode *r = f.root;
		mk(r, "a", EXT3_S_IFDIR | 0755);
		mk(r, "b", EXT3_S_IFDIR | 0755);
		struct ext3_inode *a = get(&f, r, "a"), *b = get(&f, r, "b");
		mk(a, "f1", EXT3_S_IFREG | 0644);
		mk(a, "f2", EXT3_S_IFREG | 0644);
		mk(a, "d1", EXT3_S_IFDIR | 0755);
		mk(b, "empty", EXT3_S_IFDIR | 0755);
		mk(b, "full", EXT3_S_IFDIR | 0755);
		struct ext3_inode *full = get(&f, b, "full");
		mk(full, "x", EXT3_S_IFREG | 0644);
		uint32_t f1 = ino_of(a, "f1"), d1 = ino_of(a, "d1");

		/* In one directory, then across. */
		assert_int_equal(ext3_rename(a, N("f1"), a, N("g1"), 0), 0);
		assert_int_equal(ino_of(a, "g1"), f1);
		assert_int_equal(ino_of(a, "f1"), 0);
		assert_int_equal(ext3_rename(a, N("g1"), b, N("f1"), 0), 0);
		assert_int_equal(ino_of(b, "f1"), f1);
		/* Over an existing file that is still referenced: it becomes an
		 * orphan, freed at the put. */
		struct ext3_inode *victim = get(&f, a, "f2");
		assert_int_equal(ext3_rename(b, N("f1"), a, N("f2"), 0), 0);
		assert_int_equal(ino_of(a, "f2"), f1);
		assert_int_equal(attr(victim).links, 0);
		assert_true(victim->on_orphan);
		ext3_iput(victim);
		/* Type mismatches, non-empty target, missing source, flags. */
		assert_int_equal(ext3_rename(a, N("f2"), b, N("empty"), 0), -EISDIR);
		assert_int_equal(ext3_rename(a, N("d1"), a, N("f2"), 0), -ENOTDIR);
		assert_int_equal(ext3_rename(a, N("d1"), b, N("full"), 0), -ENOTEMPTY);
		assert_int_equal(ext3_rename(a, N("nope"), b, N("x"), 0), -ENOENT);
		assert_int_equal(ext3_rename(a, N("f2"), b, N("full"), EXT3_RENAME_NOREPLACE), -EEXIST);
		assert_int_equal(ext3_rename(a, N("f2"), b, N("nope"), EXT3_RENAME_EXCHANGE), -ENOENT);
		assert_int_equal(ext3_rename(a, N("f2"), b, N("z"), 3), -EINVAL);
		assert_int_equal(ext3_rename(a, N("."), b, N("z"), 0), -EINVAL);
		assert_int_equal(ext3_rename(a, N("f2"), b, N(".."), 0), -EINVAL);
		/* A directory under itself. */
		struct ext3_inode *d1i = get(&f, a, "d1");
		assert_int_equal(ext3_rename(r, N("a"), d1i, N("a"), 0), -EINVAL);
		assert_int_equal(ext3_rename(r, N("a"), a, N("a2"), 0), -EINVAL);
		/* Same inode under two names: nothing happens. */
		struct ext3_inode *f2i = get(&f, a, "f2");
		assert_int_equal(ext3_link(f2i, a, N("hard")), 0);
		ext3_iput(f2i);
		assert_int_equal(ext3_rename(a, N("f2"), a, N("hard"), 0), 0);
		assert_int_equal(ino_of(a, "f2"), f1);
		assert_int_equal(ino_of(a, "hard"), f1);
		assert_int_equal(ext3_rename(a, N("f2"), a, N("f2"), 0), 0);
		/* A directory move: ".." and both parents' link counts. */
		uint16_t al = attr(a).links, bl = attr(b).links;
		assert_int_equal(ext3_rename(a, N("d1"), b, N("d1"), 0), 0);
		assert_int_equal(ino_of(d1i, ".."), ext3_inode_ino(b));
		assert_int_equal(attr(a).links, al - 1);
		assert_int_equal(attr(b).links, bl + 1);
		/* ... over an empty directory (freed; b loses its link). */
		struct ext3_inode *emp = get(&f, b, "empty");
		assert_int_equal(ext3_rename(b, N("d1"), b, N("empty"), 0), 0);
		assert_int_equal(ino_of(b, "empty"), d1);
		assert_int_equal(attr(b).links, bl);
		assert_int_equal(attr(emp).links, 0);
		ext3_iput(emp);
		/* Exchange a file and a directory across directories. */
		al = attr(a).links;
		bl = attr(b).links;
		assert_int_equal(ext3_rename(a, N("f2"), b, N("empty"), EXT3_RENAME_EXCHANGE), 0);
		assert_int_equal(ino_of(a, "f2"), d1);
		assert_int_equal(ino_of(b, "empty"), f1);
		assert_int_equal(ino_of(d1i, ".."), ext3_inode_ino(a));
		assert_int_equal(attr(a).links, al + 1);
		assert_int_equal(attr(b).links, bl - 1);
		/* Exchange two directories: links unchanged, ".." swapped. */
		al = attr(a).links;
		assert_int_equal(ext3_rename(a, N("f2"), b, N("full"), EXT3_RENAME_EXCHANGE), 0);
		assert_int_equal(ino_of(d1i, ".."), ext3_inode_ino(b));
		assert_int_equal(ino_of(full, ".."), ext3_inode_ino(a));
		assert_int_equal(attr(a).links, al);
		/* Exchange with itself through a directory move into a child. */
		assert_int_equal(ext3_rename(r, N("a"), full, N("x"), EXT3_RENAME_EXCHANGE), -EINVAL);
		ext3_iput(d1i);
		ext3_iput(full);
		ext3_iput(a);
		ext3_iput(b);
		fx_umount(&f);
		dbg_has(&f, "ls /a", "f2");
		dbg_has(&f, "ls /b", "empty");
		dbg_has(&f, "stat /a/hard", "Links: 2");
		dbg_has(&f, "ls /a/f2", "x");
	}
}

/* ---- setattr ---- */

static void test_setattr(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi += 3) {
		struct fx f;
		fx_open(&f, geos[gi], "setattr");
		mk(f.root, "f", EXT3_S_IFREG | 06755);
		mk(f.root, "g", EXT3_S_IFREG | 02645);
		mk(f.root, "d", EXT3_S_IFDIR | 06755);
		struct ext3_inode *fi = get(&f, f.root, "f"), *gi_ = get(&f, f.root, "g"),
				  *di = get(&f, f.root, "d");
		assert_int_equal(attr(fi).mode, EXT3_S_IFREG | 06755);
		/* mkdir drops setuid/setgid (Linux); chmod sets them. */
		assert_int_equal(attr(di).mode, EXT3_S_IFDIR | 0755);
		struct ext3_setattr sm = {.valid = EXT3_SET_MODE, .mode = 06755};
		assert_int_equal(ext3_setattr(di, &sm), 0);
		struct ext3_setattr sa = {.valid = EXT3_SET_UID | EXT3_SET_GID, .uid = 42,
					  .gid = (uint32_t)-1};
		assert_int_equal(ext3_setattr(fi, &sa), 0);
		assert_int_equal(attr(fi).uid, 42);
		assert_int_equal(attr(fi).gid, 100);
		assert_int_equal(attr(fi).mode, EXT3_S_IFREG | 0755); /* both bits gone */
		assert_int_equal(ext3_setattr(gi_, &sa), 0);
		assert_int_equal(attr(gi_).mode, EXT3_S_IFREG | 02645); /* no group exec: kept */
		assert_int_equal(ext3_setattr(di, &sa), 0);
		assert_int_equal(attr(di).mode, EXT3_S_IFDIR | 06755); /* directories keep them */
		sa = (struct ext3_setattr){.valid = EXT3_SET_MODE, .mode = 0170600};
		assert_int_equal(ext3_setattr(fi, &sa), 0);
		assert_int_equal(attr(fi).mode, EXT3_S_IFREG | 0600);
		sa = (struct ext3_setattr){.valid = EXT3_SET_SIZE, .size = 5};
		assert_int_equal(ext3_setattr(di, &sa), -EISDIR);
		assert_int_equal(ext3_setattr(fi, &sa), 0);
		assert_int_equal(attr(fi).size, 5);
		assert_true(attr(fi).mtime > 1500000000); /* truncate sets mtime */
		sa = (struct ext3_setattr){.valid = EXT3_SET_ATIME | EXT3_SET_MTIME | EXT3_SET_CTIME,
					   .atime = 1000000000, .mtime = 1100000000,
					   .ctime = 1200000000, .mtime_ns = 5000};
		assert_int_equal(ext3_setattr(fi, &sa), 0);
		struct ext3_inode_attr at = attr(fi);
		assert_int_equal(at.atime, 1000000000);
		assert_int_equal(at.mtime, 1100000000);
		assert_int_equal(at.ctime, 1200000000);
		/* ctime moves to now without EXT3_SET_CTIME. */
		sa = (struct ext3_setattr){.valid = EXT3_SET_MODE, .mode = 0644};
		assert_int_equal(ext3_setattr(gi_, &sa), 0);
		assert_true(attr(gi_).ctime > 1500000000);
		ext3_iput(fi);
		ext3_iput(gi_);
		ext3_iput(di);
		fx_umount(&f);
		dbg_has(&f, "stat /f", "User:    42   Group:   100");
		dbg_has(&f, "stat /f", "Mode:  0600");
		dbg_has(&f, "stat /f", "Size: 5");
		dbg_has(&f, "stat /f", "atime: 0x3b9aca00");
		dbg_has(&f, "stat /f", "mtime: 0x4190ab00");
		dbg_has(&f, "stat /d", "Mode:  06755");
	}
}

/* ---- extended attributes ---- */

static ssize_t xget(struct fx *f, struct ext3_inode *in, const char *name, char *buf, size_t n)
{
	return ext3_xattr_get(f->fs, in, name, buf, n);
}

static void test_xattr(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi++) {
		struct fx f;
		fx_open(&f, geos[gi], "xattr");
		mk(f.root, "f", EXT3_S_IFREG | 0644);
		mk(f.root, "g", EXT3_S_IFREG | 0644);
		struct ext3_inode *in = get(&f, f.root, "f");
		char buf[8192];
		bool big = f.g.isz > 128;
		assert_int_equal(ext3_xattr_change(in, "user.small", "hello", 5, 0), 0);
		assert_int_equal(xget(&f, in, "user.small", buf, sizeof buf), 5);
		assert_memory_equal(buf, "hello", 5);
		/* 256-byte inodes hold it in the body; 128-byte ones need the block. */
		assert_int_equal(attr(in).file_acl != 0, !big);
		assert_int_equal(attr(in).blocks, big ? 0 : f.g.bs / 512);
		assert_int_equal(ext3_xattr_change(in, "user.small", "x", 1, EXT3_XATTR_CREATE), -EEXIST);
		assert_int_equal(ext3_xattr_change(in, "user.none", "x", 1, EXT3_XATTR_REPLACE),
				 -ENODATA);
		assert_int_equal(ext3_xattr_change(in, "user.none", NULL, 0, 0), -ENODATA);
		assert_int_equal(ext3_xattr_change(in, "bogus.x", "x", 1, 0), -EOPNOTSUPP);
		assert_int_equal(ext3_xattr_change(in, "user.", "x", 1, 0), -EINVAL);
		char longname[300];
		memset(longname, 'a', sizeof longname);
		memcpy(longname, "user.", 5);
		longname[256] = '\0';
		assert_int_equal(ext3_xattr_change(in, longname, "x", 1, 0), -ERANGE);
		memset(buf, 'v', sizeof buf);
		assert_int_equal(ext3_xattr_change(in, "user.huge", buf, f.g.bs, 0), -ENOSPC);
		/* Namespaces, an empty value, a value that needs the block. */
		assert_int_equal(ext3_xattr_change(in, "trusted.t", "tv", 2, 0), 0);
		assert_int_equal(ext3_xattr_change(in, "security.selinux", "ctx", 3, 0), 0);
		/* An ext3 ACL (on-disk format: version 1, short entries). */
		static const char acl[] = "\x01\0\0\0\x01\0\x06\0\x04\0\x04\0\x20\0\x04\0";
		assert_int_equal(ext3_xattr_change(in, "system.posix_acl_access", acl, 16, 0), 0);
		/* A name with bytes >= 0x80: ext3 hashes them as signed chars. */
		assert_int_equal(ext3_xattr_change(in, "user.\xc3\xa9t\xc3\xa9", "summer", 6, 0), 0);
		assert_int_equal(ext3_xattr_change(in, "user.empty", "", 0, 0), 0);
		assert_int_equal(xget(&f, in, "user.empty", buf, sizeof buf), 0);
		memset(buf, 'B', 300);
		assert_int_equal(ext3_xattr_change(in, "user.big", buf, 300, 0), 0);
		assert_int_not_equal(attr(in).file_acl, 0);
		assert_int_equal(ext3_xattr_change(in, "user.small", "replaced", 8,
						   EXT3_XATTR_REPLACE), 0);
		/* Many names: sorted in the block, e2fsck checks the hashes. */
		for (int i = 0; i < 12; i++) {
			char n[32], v[32];
			snprintf(n, sizeof n, "user.k%02d", 11 - i);
			snprintf(v, sizeof v, "value-%d", i);
			assert_int_equal(ext3_xattr_change(in, n, v, strlen(v), 0), 0);
		}
		assert_int_equal(xget(&f, in, "user.small", buf, sizeof buf), 8);
		assert_memory_equal(buf, "replaced", 8);
		/* A value that outgrows the inode body moves to the block. */
		memset(buf, 'M', 100);
		assert_int_equal(ext3_xattr_change(in, "user.small", buf, 100, 0), 0);
		memset(buf, 0, 100);
		assert_int_equal(xget(&f, in, "user.small", buf, sizeof buf), 100);
		assert_int_equal(buf[99], 'M');
		assert_int_equal(ext3_xattr_change(in, "user.small", "replaced", 8, 0), 0);
		ext3_iput(in);
		/* A fast symlink with an xattr block stays a fast symlink. */
		assert_int_equal(ext3_symlink(f.root, N("ln"), "target", &cred, &in), 0);
		memset(buf, 'L', 150);
		assert_int_equal(ext3_xattr_change(in, "user.l", buf, 150, 0), 0);
		assert_true(ext3_inode_is_fast_symlink(f.fs, in));
		assert_int_equal(ext3_symlink_read(f.fs, in, buf, sizeof buf), 6);
		ext3_iput(in);
		/* A removed file's block is freed with it (e2fsck counts). */
		mk(f.root, "gone", EXT3_S_IFREG | 0644);
		in = get(&f, f.root, "gone");
		assert_int_equal(ext3_xattr_change(in, "trusted.big", buf, 150, 0), 0);
		ext3_iput(in);
		assert_int_equal(ext3_unlink(f.root, N("gone")), 0);
		/* An attribute set by debugfs is changed here; the last removal
		 * frees the block. */
		in = get(&f, f.root, "g");
		assert_int_equal(ext3_xattr_change(in, "user.only", "1", 1, 0), 0);
		assert_int_equal(ext3_xattr_change(in, "user.only", NULL, 0, 0), 0);
		assert_int_equal(attr(in).file_acl, 0);
		assert_int_equal(attr(in).blocks, 0);
		ext3_iput(in);
		fx_umount(&f);
		dbg_has(&f, "ea_list /f", "user.small (8) = \"replaced\"");
		dbg_has(&f, "ea_list /f", "trusted.t (2) = \"tv\"");
		dbg_has(&f, "ea_list /f", "security.selinux (3) = \"ctx\"");
		dbg_has(&f, "ea_get /f user.k03", "value-8");
		dbg_has(&f, "ea_list /f", "user.big (300)");
		assert_null(strstr(dbg(&f, "ea_list /g"), "user.only"));
		assert_int_equal(fsimg_debugfs_w(f.img, "ea_set /g user.dbg fromdebugfs"), 0);
		fx_mount(&f);
		in = get(&f, f.root, "g");
		assert_int_equal(xget(&f, in, "user.dbg", buf, sizeof buf), 11);
		assert_int_equal(ext3_xattr_change(in, "user.dbg", "changed", 7, EXT3_XATTR_REPLACE), 0);
		assert_int_equal(ext3_xattr_change(in, "user.more", "m", 1, 0), 0);
		ext3_iput(in);
		in = get(&f, f.root, "f");
		for (int i = 0; i < 12; i++) {
			char n[32];
			snprintf(n, sizeof n, "user.k%02d", i);
			assert_int_equal(ext3_xattr_change(in, n, NULL, 0, 0), 0);
		}
		ext3_iput(in);
		fx_umount(&f);
		dbg_has(&f, "ea_get /g user.dbg", "changed");
		dbg_has(&f, "ea_list /g", "user.more (1)");
		assert_null(strstr(dbg(&f, "ea_list /f"), "user.k05"));
	}
}

/* A block shared by two inodes (h_refcount 2) is copied on write. */
static void test_xattr_shared(void **state)
{
	(void)state;
	for (size_t gi = 0; gi < NGEOS; gi += 2) {
		struct fx f;
		fx_open(&f, geos[gi], "xshared");
		mk(f.root, "a", EXT3_S_IFREG | 0644);
		mk(f.root, "b", EXT3_S_IFREG | 0644);
		mk(f.root, "c", EXT3_S_IFREG | 0644);
		struct ext3_inode *in = get(&f, f.root, "a");
		char v[200];
		memset(v, 's', sizeof v);
		assert_int_equal(ext3_xattr_change(in, "user.shared", v, sizeof v, 0), 0);
		uint32_t blk = attr(in).file_acl;
		assert_int_not_equal(blk, 0);
		ext3_iput(in);
		fx_umount(&f);
		/* Make b and c share a's block: i_file_acl, i_blocks, h_refcount 3. */
		assert_int_equal(fsimg_run("for i in b c; do debugfs -w -R \"sif $i file_acl %u\" '%s' && "
				     "debugfs -w -R \"sif $i blocks %u\" '%s'; done >/dev/null 2>&1 && "
				     "printf '\\003' | dd of='%s' bs=1 seek=%llu conv=notrunc "
				     "status=none",
				     blk, f.img, f.g.bs / 512, f.img, f.img,
				     (unsigned long long)blk * f.g.bs + 4), 0);
		fsimg_assert_clean(f.img);
		fx_mount(&f);
		in = get(&f, f.root, "b");
		assert_int_equal(ext3_xattr_change(in, "user.mine", "b", 1, 0), 0);
		uint32_t nb = attr(in).file_acl;
		assert_int_not_equal(nb, 0);
		assert_int_not_equal(nb, blk);
		ext3_iput(in);
		in = get(&f, f.root, "a");
		char buf[256];
		assert_int_equal(ext3_xattr_get(f.fs, in, "user.mine", buf, sizeof buf), -ENODATA);
		assert_int_equal(ext3_xattr_get(f.fs, in, "user.shared", buf, sizeof buf), 200);
		assert_int_equal(attr(in).file_acl, blk);
		ext3_iput(in);
		/* a goes (its reference with it: refcount 1); c, the last user,
		 * then changes the block in place. */
		assert_int_equal(ext3_unlink(f.root, N("a")), 0);
		in = get(&f, f.root, "c");
		assert_int_equal(ext3_xattr_change(in, "user.c", "cc", 2, 0), 0);
		assert_int_equal(attr(in).file_acl, blk);
		assert_int_equal(attr(in).blocks, f.g.bs / 512);
		ext3_iput(in);
		fx_umount(&f);
		dbg_has(&f, "ea_list /c", "user.c (2) = \"cc\"");
		dbg_has(&f, "ea_list /c", "user.shared (200)");
		char req[64];
		snprintf(req, sizeof req, "bd %u", blk);
		/* Refcount back to 1 (little-endian at offset 4). */
		dbg_has(&f, req, "0000  0000 02ea 0100 0000");
		dbg_has(&f, "ea_list /b", "user.shared (200)");
		dbg_has(&f, "ea_list /b", "user.mine (1) = \"b\"");
	}
}

int main(void)
{
	int orc = oracles_check("test_ext3_namei", "mke2fs e2fsck debugfs");
	if (orc >= 0)
		return orc;
	if (fsimg_tmpdir(tmpdir, sizeof tmpdir, "ext3_namei"))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_kinds),
		cmocka_unit_test(test_name_errors),
		cmocka_unit_test(test_link_unlink),
		cmocka_unit_test(test_emlink),
		cmocka_unit_test(test_frozen),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_setattr),
		cmocka_unit_test(test_xattr),
		cmocka_unit_test(test_xattr_shared),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fsimg_tmpdir_remove(tmpdir);
	return rc;
}
