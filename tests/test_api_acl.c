/* POSIX ACLs and caller credentials through the public API alone
 * (include/nostall/nostall.h, "Credentials"; docs/api.md): a file whose
 * ACL denies a user is refused to that user with -EACCES, a named-user or
 * named-group entry grants, the mask limits them, chmod rewrites the mask,
 * and a new inode in a directory with a default ACL inherits it (the
 * umask ignored). Also the checks around them: owner-only ACL changes,
 * names in a directory the caller may not write, CAP_MKNOD, set-id
 * clearing per the writer's CAP_FSETID. The image comes from the test
 * library's mkfs; every filesystem call is the public API's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/fstarget_nostall.h"

#include "nostall/nostall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256], img[300];

#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"

/* Tags of the VFS xattr format (version 2, 8-byte entries). */
enum { USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 0x10, OTHER = 0x20 };
struct ent {
	unsigned tag, perm, id;
};

static size_t acl_encode(const struct ent *e, size_t n, unsigned char *out)
{
	out[0] = 2, out[1] = out[2] = out[3] = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = out + 4 + 8 * i;
		uint32_t id = (e[i].tag == USER || e[i].tag == GROUP) ? e[i].id : 0xffffffffu;
		p[0] = (unsigned char)e[i].tag, p[1] = 0;
		p[2] = (unsigned char)e[i].perm, p[3] = 0;
		p[4] = (unsigned char)id, p[5] = (unsigned char)(id >> 8);
		p[6] = (unsigned char)(id >> 16), p[7] = (unsigned char)(id >> 24);
	}
	return 4 + 8 * n;
}

/* The perm of the entry with tag (and id for USER/GROUP) in path's ACL,
 * -1 when absent. */
static int acl_perm(struct nostall_fs *fs, const char *path, const char *name, unsigned tag,
		    unsigned id)
{
	unsigned char buf[512];
	ssize_t n = nostall_getxattr(fs, path, 0, name, buf, sizeof buf);
	if (n < 4)
		return -1;
	for (ssize_t at = 4; at + 8 <= n; at += 8) {
		const unsigned char *p = buf + at;
		unsigned eid = p[4] | p[5] << 8 | p[6] << 16 | (unsigned)p[7] << 24;
		if (p[0] == tag && ((tag != USER && tag != GROUP) || eid == id))
			return p[2];
	}
	return -1;
}

static void as_user(uint32_t uid, uint32_t gid, const uint32_t *groups, unsigned n)
{
	struct nostall_cred c = { .uid = uid, .gid = gid, .groups = groups, .ngroups = n };
	assert_int_equal(nostall_cred_use(&c), 0);
}

static void as_root(void)
{
	struct nostall_cred c = { .caps = NOSTALL_CAP_ALL, .umask = 022 };
	assert_int_equal(nostall_cred_use(&c), 0);
}

static int try_open(struct nostall_fs *fs, const char *path, unsigned flags)
{
	struct nostall_file *f;
	int rc = nostall_open(fs, path, flags, &f);
	if (!rc)
		nostall_close(f);
	return rc;
}

static void mkfile(struct nostall_fs *fs, const char *path, uint32_t mode)
{
	struct nostall_file *f;
	assert_int_equal(nostall_create(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT | NOSTALL_O_EXCL,
					mode, &f), 0);
	assert_int_equal(nostall_write(f, "data", 4), 4);
	nostall_close(f);
}

static uint32_t mode_of(struct nostall_fs *fs, const char *path)
{
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, path, 0, &st), 0);
	return st.mode & 07777;
}

static int setup(void **state)
{
	snprintf(img, sizeof img, "%s/acl.img", tmpdir);
	nostall_cred_use(NULL); /* a failed test may have left its own */
	return fst_nostall_mkfs(img, 1024, 8u << 20) ? -1 : 0;
}

static int teardown(void **state)
{
	unlink(img);
	return 0;
}

static struct nostall_fs *mount_img(void)
{
	struct nostall_fs *fs;
	assert_int_equal(nostall_mount(img, NULL, 0, &fs), 0);
	return fs;
}

/* The access ACL: a user it does not name is refused, a named user and a
 * named group are let in, the mask limits them; chmod rewrites the mask. */
static void test_access_acl(void **state)
{
	struct nostall_fs *fs = mount_img();
	as_root();
	mkfile(fs, "/f", 0640);
	const struct ent acl[] = { { USER_OBJ, 6, 0 }, { USER, 6, 1001 }, { GROUP_OBJ, 4, 0 },
				   { GROUP, 4, 500 }, { MASK, 6, 0 },   { OTHER, 0, 0 } };
	unsigned char v[64];
	size_t n = acl_encode(acl, 6, v);
	assert_int_equal(nostall_setxattr(fs, "/f", 0, ACL_ACCESS, v, n, 0), 0);
	assert_int_equal(mode_of(fs, "/f"), 0660); /* the group bits are the mask */
	/* read back in the same format */
	assert_int_equal(nostall_getxattr(fs, "/f", 0, ACL_ACCESS, NULL, 0), (ssize_t)n);
	assert_int_equal(acl_perm(fs, "/f", ACL_ACCESS, USER, 1001), 6);

	as_user(1002, 1002, NULL, 0); /* named nowhere: other, --- */
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_RDONLY), -EACCES);
	assert_int_equal(nostall_access(fs, "/f", 0, 4), -EACCES);
	assert_int_equal(nostall_access(fs, "/f", 0, 0), 0);
	as_user(1001, 1001, NULL, 0); /* the named user: rw */
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_RDWR), 0);
	const uint32_t g500[] = { 500 };
	as_user(1003, 1003, g500, 1); /* the named group: r */
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_RDONLY), 0);
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_WRONLY), -EACCES);
	assert_int_equal(nostall_access(fs, "/f", 0, 2), -EACCES);

	/* chmod: the mask takes the group bits; it limits the named user */
	as_root();
	assert_int_equal(nostall_chmod(fs, "/f", 0, 0640), 0);
	assert_int_equal(acl_perm(fs, "/f", ACL_ACCESS, MASK, 0), 4);
	assert_int_equal(acl_perm(fs, "/f", ACL_ACCESS, USER, 1001), 6); /* the entry stays */
	as_user(1001, 1001, NULL, 0);
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_RDONLY), 0);
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_RDWR), -EACCES);
	as_root();
	assert_int_equal(nostall_chmod(fs, "/f", 0, 0600), 0);
	as_user(1001, 1001, NULL, 0);
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_RDONLY), -EACCES);

	/* only the owner (or CAP_FOWNER) changes an ACL */
	assert_int_equal(nostall_setxattr(fs, "/f", 0, ACL_ACCESS, v, n, 0), -EPERM);
	/* root gets through anyway (CAP_DAC_OVERRIDE) */
	as_root();
	assert_int_equal(try_open(fs, "/f", NOSTALL_O_RDWR), 0);
	/* an ACL the mode says in full is not stored */
	const struct ent plain[] = { { USER_OBJ, 7, 0 }, { GROUP_OBJ, 5, 0 }, { OTHER, 4, 0 } };
	n = acl_encode(plain, 3, v);
	assert_int_equal(nostall_setxattr(fs, "/f", 0, ACL_ACCESS, v, n, 0), 0);
	assert_int_equal(mode_of(fs, "/f"), 0754);
	assert_int_equal(nostall_getxattr(fs, "/f", 0, ACL_ACCESS, v, sizeof v), -ENODATA);
	/* malformed: -EINVAL */
	v[0] = 9;
	assert_int_equal(nostall_setxattr(fs, "/f", 0, ACL_ACCESS, v, n, 0), -EINVAL);
	assert_int_equal(nostall_cred_use(NULL), 0);
	assert_int_equal(nostall_umount(fs), 0);
}

/* A directory's default ACL: new files get it as their access ACL masked
 * by the mode asked for (no umask), new directories as both. */
static void test_default_acl(void **state)
{
	struct nostall_fs *fs = mount_img();
	as_root();
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), 0);
	const struct ent dflt[] = { { USER_OBJ, 7, 0 }, { USER, 7, 1001 }, { GROUP_OBJ, 5, 0 },
				    { MASK, 7, 0 },     { OTHER, 0, 0 } };
	unsigned char v[64];
	size_t n = acl_encode(dflt, 5, v);
	assert_int_equal(nostall_setxattr(fs, "/d", 0, ACL_DEFAULT, v, n, 0), 0);
	/* a default ACL only on a directory */
	mkfile(fs, "/plain", 0666);
	assert_int_equal(mode_of(fs, "/plain"), 0644); /* no default ACL: the umask */
	assert_int_equal(nostall_setxattr(fs, "/plain", 0, ACL_DEFAULT, v, n, 0), -EACCES);

	mkfile(fs, "/d/new", 0666);
	assert_int_equal(mode_of(fs, "/d/new"), 0660); /* umask 022 ignored; other from the ACL */
	assert_int_equal(acl_perm(fs, "/d/new", ACL_ACCESS, USER, 1001), 7);
	assert_int_equal(acl_perm(fs, "/d/new", ACL_ACCESS, MASK, 0), 6);
	assert_int_equal(nostall_getxattr(fs, "/d/new", 0, ACL_DEFAULT, NULL, 0), -ENODATA);
	assert_int_equal(nostall_mkdir(fs, "/d/sub", 0777), 0);
	assert_int_equal(mode_of(fs, "/d/sub"), 0770);
	assert_int_equal(acl_perm(fs, "/d/sub", ACL_DEFAULT, USER, 1001), 7);
	assert_int_equal(acl_perm(fs, "/d/sub", ACL_ACCESS, USER, 1001), 7);
	/* and on down */
	assert_int_equal(nostall_mknod(fs, "/d/sub/fifo", S_IFIFO | 0640, 0), 0);
	assert_int_equal(acl_perm(fs, "/d/sub/fifo", ACL_ACCESS, MASK, 0), 4);
	assert_int_equal(nostall_symlink(fs, "new", "/d/link"), 0); /* symlinks get none */
	assert_int_equal(nostall_getxattr(fs, "/d/link", NOSTALL_NOFOLLOW, ACL_ACCESS, NULL, 0),
			 -ENODATA);

	/* the inherited entry lets the named user in (rw under the mask) */
	as_user(1001, 1001, NULL, 0);
	assert_int_equal(try_open(fs, "/d/new", NOSTALL_O_RDWR), 0);
	as_user(1002, 1002, NULL, 0);
	assert_int_equal(try_open(fs, "/d/new", NOSTALL_O_RDONLY), -EACCES);
	/* and creating in /d: the named user may (rwx), another may not */
	assert_int_equal(nostall_mkdir(fs, "/d/sub/x", 0755), -EACCES);
	assert_int_equal(nostall_mkdir(fs, "/d/sub", 0755), -EEXIST); /* EEXIST first */
	as_user(1001, 1001, NULL, 0);
	mkfile(fs, "/d/sub/mine", 0600);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/d/sub/mine", 0, &st), 0);
	assert_int_equal(st.uid, 1001);
	assert_int_equal(nostall_cred_use(NULL), 0);
	assert_int_equal(nostall_umount(fs), 0);
}

/* The checks without ACLs: names in a directory, device nodes, owners,
 * set-id bits by the writer's capabilities. */
static void test_mode_checks(void **state)
{
	struct nostall_fs *fs = mount_img();
	as_root();
	assert_int_equal(nostall_mkdir(fs, "/pub", 01777), 0);
	assert_int_equal(mode_of(fs, "/pub"), 01755); /* the caller's umask */
	assert_int_equal(nostall_chmod(fs, "/pub", 0, 01777), 0);
	mkfile(fs, "/pub/rootfile", 0644);
	as_user(1001, 1001, NULL, 0);
	assert_int_equal(try_open(fs, "/pub/rootfile", NOSTALL_O_RDONLY), 0);
	assert_int_equal(try_open(fs, "/pub/rootfile", NOSTALL_O_WRONLY), -EACCES);
	assert_int_equal(nostall_mkdir(fs, "/nope", 0755), -EACCES); /* / is 0755 root */
	assert_int_equal(nostall_unlink(fs, "/pub/rootfile"), -EPERM); /* sticky */
	assert_int_equal(nostall_chmod(fs, "/pub/rootfile", 0, 0666), -EPERM);
	assert_int_equal(nostall_chown(fs, "/pub/rootfile", 0, 1001, (uint32_t)-1), -EPERM);
	assert_int_equal(nostall_mknod(fs, "/pub/dev", S_IFCHR | 0600, 0x0103), -EPERM);
	assert_int_equal(nostall_mknod(fs, "/pub/fifo", S_IFIFO | 0600, 0), 0);
	as_root();
	mkfile(fs, "/pub/s", 0755);
	assert_int_equal(nostall_chown(fs, "/pub/s", 0, 1001, 0), 0); /* the user's, group 0 */
	as_user(1001, 1001, NULL, 0);
	assert_int_equal(nostall_chmod(fs, "/pub/s", 0, 06755), 0);
	assert_int_equal(mode_of(fs, "/pub/s"), 04755); /* not in group 0: setgid dropped */
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "/pub/s", NOSTALL_O_WRONLY, &f), 0);
	assert_int_equal(nostall_pwrite(f, "x", 1, 0), 1);
	assert_int_equal(mode_of(fs, "/pub/s"), 0755); /* no CAP_FSETID: setuid dropped */
	nostall_close(f);
	assert_int_equal(nostall_chmod(fs, "/pub/s", 0, 04755), 0);
	assert_int_equal(nostall_truncate(fs, "/pub/s", 0), 0);
	assert_int_equal(mode_of(fs, "/pub/s"), 0755); /* truncate: the same */
	assert_int_equal(nostall_chmod(fs, "/pub/s", 0, 04755), 0);
	assert_int_equal(nostall_open(fs, "/pub/s", NOSTALL_O_WRONLY, &f), 0);
	assert_int_equal(nostall_ftruncate(f, 1), 0);
	assert_int_equal(mode_of(fs, "/pub/s"), 0755); /* ftruncate */
	nostall_close(f);
	assert_int_equal(nostall_chmod(fs, "/pub/s", 0, 04755), 0);
	assert_int_equal(try_open(fs, "/pub/s", NOSTALL_O_WRONLY | NOSTALL_O_TRUNC), 0);
	assert_int_equal(mode_of(fs, "/pub/s"), 0755); /* O_TRUNC */
	assert_int_equal(nostall_unlink(fs, "/pub/s"), 0);
	/* with CAP_FSETID (root) a write keeps them */
	as_root();
	mkfile(fs, "/pub/r", 0755);
	assert_int_equal(nostall_chmod(fs, "/pub/r", 0, 06755), 0);
	assert_int_equal(nostall_open(fs, "/pub/r", NOSTALL_O_WRONLY, &f), 0);
	assert_int_equal(nostall_pwrite(f, "x", 1, 0), 1);
	nostall_close(f);
	assert_int_equal(mode_of(fs, "/pub/r"), 06755);
	/* chown drops them for everyone */
	assert_int_equal(nostall_chown(fs, "/pub/r", 0, 5, 5), 0);
	assert_int_equal(mode_of(fs, "/pub/r"), 0755);
	/* search permission on every directory a path passes, ACLs included */
	assert_int_equal(nostall_mkdir(fs, "/closed", 0700), 0);
	mkfile(fs, "/closed/f", 0644);
	as_user(1001, 1001, NULL, 0);
	assert_int_equal(try_open(fs, "/closed/f", NOSTALL_O_RDONLY), -EACCES);
	struct nostall_stat sst;
	assert_int_equal(nostall_stat(fs, "/closed/f", 0, &sst), -EACCES);
	assert_int_equal(nostall_create(fs, "/closed/f", NOSTALL_O_RDONLY | NOSTALL_O_CREAT, 0644, &f),
			 -EACCES);
	assert_int_equal(nostall_mkdir(fs, "/closed/f", 0755), -EACCES); /* not -EEXIST */
	as_root();
	const struct ent x1001[] = { { USER_OBJ, 7, 0 }, { USER, 1, 1001 }, { GROUP_OBJ, 0, 0 },
				     { MASK, 1, 0 },     { OTHER, 0, 0 } };
	unsigned char v[64];
	assert_int_equal(nostall_setxattr(fs, "/closed", 0, ACL_ACCESS, v, acl_encode(x1001, 5, v), 0),
			 0);
	as_user(1001, 1001, NULL, 0);
	assert_int_equal(try_open(fs, "/closed/f", NOSTALL_O_RDONLY), 0);
	struct nostall_dir *dir;
	assert_int_equal(nostall_opendir(fs, "/closed", &dir), -EACCES); /* x without r */
	as_user(1002, 1002, NULL, 0);
	assert_int_equal(try_open(fs, "/closed/f", NOSTALL_O_RDONLY), -EACCES);
	as_root();
	assert_int_equal(nostall_opendir(fs, "/closed", &dir), 0);
	nostall_closedir(dir);
	/* NOPERM credentials: the caller made the checks */
	struct nostall_cred trusted = { .uid = 1001, .gid = 1001, .flags = NOSTALL_CRED_NOPERM };
	assert_int_equal(nostall_cred_use(&trusted), 0);
	assert_int_equal(nostall_mkdir(fs, "/trusted", 0755), 0);
	trusted.flags = 0x80;
	assert_int_equal(nostall_cred_use(&trusted), -EINVAL);
	assert_int_equal(nostall_cred_use(NULL), 0);
	assert_int_equal(nostall_umount(fs), 0);
}

/* -o fakeroot: the mount's default caller is root, whoever mounts. */
static void test_fakeroot(void **state)
{
	struct nostall_fs *fs;
	assert_int_equal(nostall_mount(img, "fakeroot", 0, &fs), 0);
	/* the mount's default, changed: an ordinary user */
	struct nostall_cred user = { .uid = 1001, .gid = 1001 };
	assert_int_equal(nostall_cred_default(fs, &user), 0);
	assert_int_equal(nostall_mkdir(fs, "/byuser", 0755), -EACCES);
	assert_int_equal(nostall_umount(fs), 0);
	assert_int_equal(nostall_mount(img, "fakeroot", 0, &fs), 0);
	assert_int_equal(nostall_mknod(fs, "/null", S_IFCHR | 0666, 0x0103), 0);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/null", 0, &st), 0);
	assert_int_equal(st.uid, 0);
	assert_int_equal(st.gid, 0);
	assert_int_equal(nostall_umount(fs), 0);
	assert_int_equal(nostall_mount(img, "fakeroot=1", 0, &fs), -EINVAL);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/nostall_acl_XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(tmpdir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_access_acl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_acl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fakeroot, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(tmpdir);
	return rc;
}
