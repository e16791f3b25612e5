/* POSIX/ext3 conformance checks for a mounted filesystem (issue 11, item 2).
 *
 * usage: conform DIR        (as root; DIR is an empty directory on the
 *                            filesystem under test)
 * Runs the same checks on any mount: tests/cli/fuse_conform.sh runs it on
 * the kernel's ext3 (a loop device: the reference, every check must pass
 * there) and on a nostall FUSE mount with its shipped defaults. Permission
 * cases switch credentials in a child (setgroups + setresgid + setresuid,
 * what setpriv does), so the kernel's checks for that user apply. Prints
 * "ok NAME" or "FAIL NAME: detail" per check and exits 1 if any failed.
 * Self-contained (libc only) so the script can build it with cc. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define U1 1001 /* an ordinary user (group 1001, member of 2001) */
#define U2 1002 /* another one (group 1002) */
#define G_SHARED 2001
#define G_OTHER 2002

static const char *root;
static int fails, checks;

static void check(const char *name, int ok, const char *fmt, ...)
{
	checks++;
	if (ok) {
		printf("ok   %s\n", name);
		return;
	}
	fails++;
	printf("FAIL %s: ", name);
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static char *P(const char *rel)
{
	static char buf[8][4096];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof buf[i], "%s/%s", root, rel);
	return buf[i];
}

/* Run fn(arg) as uid/gid (with U1's extra group when uid is U1); returns
 * what fn returned (an errno value, 0 = success). */
typedef int (*as_fn)(const void *arg);
static int as_user(uid_t uid, as_fn fn, const void *arg)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		gid_t groups[2] = { uid, G_SHARED };
		int ng = uid == U1 ? 2 : 1;
		if (setgroups((size_t)ng, groups) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(250);
		umask(022);
		_exit(fn(arg) & 0xff);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 251;
}

static int err(int rc)
{
	return rc < 0 ? errno : 0;
}

/* ---- operations run as a user ---- */

struct o {
	const char *p, *q;
	int flags;
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

static int do_open(const void *a)
{
	const struct o *o = a;
	int fd = open(o->p, o->flags, o->mode);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}
static int do_stat(const void *a)
{
	struct stat st;
	return err(stat(((const struct o *)a)->p, &st));
}
static int do_unlink(const void *a)
{
	return err(unlink(((const struct o *)a)->p));
}
static int do_rename(const void *a)
{
	const struct o *o = a;
	return err(rename(o->p, o->q));
}
static int do_chown(const void *a)
{
	const struct o *o = a;
	return err(chown(o->p, o->uid, o->gid));
}
static int do_chmod(const void *a)
{
	const struct o *o = a;
	return err(chmod(o->p, o->mode));
}
static int do_write(const void *a)
{
	const struct o *o = a;
	int fd = open(o->p, O_WRONLY | o->flags);
	if (fd < 0)
		return errno;
	int rc = write(fd, "x", 1) == 1 ? 0 : errno;
	close(fd);
	return rc;
}
static int do_utime_now(const void *a)
{
	return err(utimensat(AT_FDCWD, ((const struct o *)a)->p, NULL, 0));
}
static int do_utime_set(const void *a)
{
	struct timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };
	return err(utimensat(AT_FDCWD, ((const struct o *)a)->p, ts, 0));
}
static int do_mkfile(const void *a)
{
	return do_open(a);
}

static struct stat st_of(const char *p)
{
	struct stat st;
	memset(&st, 0, sizeof st);
	lstat(p, &st);
	return st;
}

static void mkfile(const char *p, mode_t mode, uid_t uid, gid_t gid)
{
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd >= 0) {
		if (write(fd, "data", 4) != 4)
			perror("write");
		close(fd);
	}
	if (chown(p, uid, gid) || chmod(p, mode))
		perror(p);
}

static void mkdir_as(const char *p, mode_t mode, uid_t uid, gid_t gid)
{
	mkdir(p, 0700);
	if (chown(p, uid, gid) || chmod(p, mode))
		perror(p);
}

/* ---- the checks ---- */

static void t_path_and_modes(void)
{
	mkdir_as(P("priv"), 0700, 0, 0);
	mkfile(P("priv/f"), 0644, 0, 0);
	struct o o = { .p = P("priv/f"), .flags = O_RDONLY };
	int r = as_user(U1, do_stat, &o);
	check("search permission on a path component", r == EACCES, "stat gave %d", r);
	mkfile(P("f640"), 0640, 0, 0);
	o = (struct o){ .p = P("f640"), .flags = O_RDONLY };
	r = as_user(U1, do_open, &o);
	check("open O_RDONLY without read permission", r == EACCES, "got %d", r);
	mkfile(P("f604"), 0604, 0, 0);
	o.p = P("f604");
	r = as_user(U1, do_open, &o);
	check("open O_RDONLY through the other bits", r == 0, "got %d", r);
	o.flags = O_WRONLY;
	r = as_user(U1, do_open, &o);
	check("open O_WRONLY without write permission", r == EACCES, "got %d", r);
	mkfile(P("g060"), 0060, 0, G_SHARED);
	o = (struct o){ .p = P("g060"), .flags = O_RDWR };
	r = as_user(U1, do_open, &o);
	check("open O_RDWR through a supplementary group", r == 0, "got %d", r);
	r = as_user(U2, do_open, &o);
	check("open O_RDWR outside the group", r == EACCES, "got %d", r);
	mkdir_as(P("ro_dir"), 0755, 0, 0);
	o = (struct o){ .p = P("ro_dir/new"), .flags = O_CREAT | O_WRONLY, .mode = 0644 };
	r = as_user(U1, do_mkfile, &o);
	check("create in a directory without write permission", r == EACCES, "got %d", r);
}

static void t_sticky(void)
{
	mkdir_as(P("sticky"), 01777, 0, 0);
	struct o o = { .p = P("sticky/u1"), .flags = O_CREAT | O_WRONLY, .mode = 0666 };
	int r = as_user(U1, do_mkfile, &o);
	check("create in a sticky directory", r == 0, "got %d", r);
	o = (struct o){ .p = P("sticky/u1") };
	r = as_user(U2, do_unlink, &o);
	check("sticky: another user cannot unlink", r == EPERM, "got %d", r);
	o = (struct o){ .p = P("sticky/u1"), .q = P("sticky/u2") };
	r = as_user(U2, do_rename, &o);
	check("sticky: another user cannot rename", r == EPERM, "got %d", r);
	mkdir_as(P("sticky2"), 01777, U2, U2);
	o = (struct o){ .p = P("sticky2/u1"), .flags = O_CREAT | O_WRONLY, .mode = 0666 };
	as_user(U1, do_mkfile, &o);
	o = (struct o){ .p = P("sticky2/u1") };
	r = as_user(U2, do_unlink, &o);
	check("sticky: the directory's owner may unlink", r == 0, "got %d", r);
	o = (struct o){ .p = P("sticky/u1") };
	r = as_user(U1, do_unlink, &o);
	check("sticky: the file's owner may unlink", r == 0, "got %d", r);
}

static void t_chown_chmod(void)
{
	mkfile(P("own"), 0644, U1, U1);
	struct o o = { .p = P("own"), .uid = U2, .gid = (gid_t)-1 };
	int r = as_user(U1, do_chown, &o);
	check("chown to another user needs privilege", r == EPERM, "got %d", r);
	o = (struct o){ .p = P("own"), .uid = (uid_t)-1, .gid = G_SHARED };
	r = as_user(U1, do_chown, &o);
	check("chgrp to a group of the owner", r == 0 && st_of(P("own")).st_gid == G_SHARED,
	      "got %d", r);
	o.gid = G_OTHER;
	r = as_user(U1, do_chown, &o);
	check("chgrp to a group the owner is not in", r == EPERM, "got %d", r);
	o = (struct o){ .p = P("own"), .mode = 0600 };
	r = as_user(U2, do_chmod, &o);
	check("chmod by a non-owner", r == EPERM, "got %d", r);
	mkfile(P("sgid_chmod"), 0644, U1, G_OTHER);
	o = (struct o){ .p = P("sgid_chmod"), .mode = 02755 };
	r = as_user(U1, do_chmod, &o);
	mode_t m = st_of(P("sgid_chmod")).st_mode & 07777;
	check("chmod g+s outside the file's group drops setgid", r == 0 && m == 0755,
	      "rc %d mode %o", r, m);
	mkfile(P("suid_chown"), 06755, U1, U1);
	if (chown(P("suid_chown"), U2, U2))
		perror("chown");
	m = st_of(P("suid_chown")).st_mode & 07777;
	check("chown clears setuid and setgid (group exec)", m == 0755, "mode %o", m);
}

static void t_setid_write(void)
{
	mkfile(P("suid_w"), 06777, U1, G_SHARED);
	struct o o = { .p = P("suid_w") };
	int r = as_user(U2, do_write, &o);
	mode_t m = st_of(P("suid_w")).st_mode & 07777;
	check("write by a non-owner clears setuid and setgid", r == 0 && m == 0777,
	      "rc %d mode %o", r, m);
	mkfile(P("suid_root"), 04755, U1, U1);
	r = do_write(&(struct o){ .p = P("suid_root") });
	m = st_of(P("suid_root")).st_mode & 07777;
	check("write by root (CAP_FSETID) keeps setuid", r == 0 && m == 04755, "rc %d mode %o", r, m);
	mkfile(P("suid_trunc"), 04777, U1, U1);
	o = (struct o){ .p = P("suid_trunc"), .flags = O_TRUNC };
	r = as_user(U2, do_write, &o);
	m = st_of(P("suid_trunc")).st_mode & 07777;
	check("O_TRUNC by a non-owner clears setuid", r == 0 && m == 0777, "rc %d mode %o", r, m);
	/* setgid without group exec (a mandatory-locking mark): a writer in
	 * the file's group leaves it, one outside it drops it (Linux 6.x's
	 * setattr_should_drop_sgid) */
	mkfile(P("sgid_nx_in"), 02666, U2, G_SHARED);
	r = as_user(U1, do_write, &(struct o){ .p = P("sgid_nx_in") });
	m = st_of(P("sgid_nx_in")).st_mode & 07777;
	check("write by a group member keeps setgid without group exec", r == 0 && m == 02666,
	      "rc %d mode %o", r, m);
	mkfile(P("sgid_nx_out"), 02666, U1, G_SHARED);
	r = as_user(U2, do_write, &(struct o){ .p = P("sgid_nx_out") });
	m = st_of(P("sgid_nx_out")).st_mode & 07777;
	check("write by a non-member drops setgid without group exec", r == 0 && m == 0666,
	      "rc %d mode %o", r, m);
	/* file capabilities go with any write, root's too (security.capability,
	 * VFS_CAP_REVISION_2: magic 0x02000000, CAP_NET_BIND_SERVICE permitted) */
	mkfile(P("cap"), 0755, U1, U1);
	const uint32_t cap[5] = { 0x02000000u, 1u << 10, 0, 0, 0 };
	r = err(setxattr(P("cap"), "security.capability", cap, sizeof cap, 0));
	ssize_t n = getxattr(P("cap"), "security.capability", NULL, 0);
	check("security.capability can be set", r == 0 && n == (ssize_t)sizeof cap, "rc %d size %zd", r, n);
	r = do_write(&(struct o){ .p = P("cap") });
	n = getxattr(P("cap"), "security.capability", NULL, 0);
	check("a write drops file capabilities", r == 0 && n < 0 && errno == ENODATA,
	      "rc %d size %zd errno %d", r, n, errno);
	r = err(setxattr(P("cap"), "security.capability", cap, sizeof cap, 0));
	r = r ? r : err(truncate(P("cap"), 1));
	n = getxattr(P("cap"), "security.capability", NULL, 0);
	check("a truncate drops file capabilities", r == 0 && n < 0 && errno == ENODATA,
	      "rc %d size %zd errno %d", r, n, errno);
	r = err(setxattr(P("cap"), "security.capability", cap, sizeof cap, 0));
	r = r ? r : err(chown(P("cap"), U2, U2));
	n = getxattr(P("cap"), "security.capability", NULL, 0);
	check("a chown drops file capabilities", r == 0 && n < 0 && errno == ENODATA,
	      "rc %d size %zd errno %d", r, n, errno);
}

static void t_utimens(void)
{
	mkfile(P("ut666"), 0666, U1, U1);
	struct o o = { .p = P("ut666") };
	int r = as_user(U2, do_utime_now, &o);
	check("utimensat UTIME_NOW with write access", r == 0, "got %d", r);
	r = as_user(U2, do_utime_set, &o);
	check("utimensat explicit times by a non-owner", r == EPERM, "got %d", r);
	mkfile(P("ut644"), 0644, U1, U1);
	o.p = P("ut644");
	r = as_user(U2, do_utime_now, &o);
	check("utimensat UTIME_NOW without write access", r == EACCES, "got %d", r);
	r = as_user(U1, do_utime_set, &o);
	check("utimensat explicit times by the owner", r == 0, "got %d", r);
	struct timespec ts[2] = { { 1234567890, 123456789 }, { 1234567891, 987654321 } };
	r = utimensat(AT_FDCWD, P("ut644"), ts, 0);
	struct stat st = st_of(P("ut644"));
	check("nanosecond timestamps", r == 0 && st.st_atim.tv_nsec == 123456789 &&
						  st.st_mtim.tv_nsec == 987654321 &&
						  st.st_mtim.tv_sec == 1234567891,
	      "atime.ns %ld mtime %ld.%ld", st.st_atim.tv_nsec, (long)st.st_mtim.tv_sec,
	      st.st_mtim.tv_nsec);
}

static void t_limits(void)
{
	mkfile(P("big"), 0644, 0, 0);
	int r = err(truncate(P("big"), (off_t)1 << 50));
	check("truncate past the maximum file size", r == EFBIG, "got %d", r);
	char name[300];
	memset(name, 'n', 256);
	name[256] = 0;
	int fd = open(P(name), O_CREAT | O_WRONLY, 0644);
	r = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	check("create a 256-byte name", r == ENAMETOOLONG, "got %d", r);
	struct stat st;
	r = err(stat(P(name), &st));
	check("lookup of a 256-byte name", r == ENAMETOOLONG, "got %d", r);
	r = err(mkdir(P(name), 0755));
	check("mkdir of a 256-byte name", r == ENAMETOOLONG, "got %d", r);
	name[255] = 0;
	fd = open(P(name), O_CREAT | O_WRONLY, 0644);
	check("create a 255-byte name", fd >= 0, "errno %d", errno);
	if (fd >= 0)
		close(fd);
	r = err(unlink(P(name)));
	check("unlink a 255-byte name", r == 0, "got %d", r);
}

static void t_rename_flags(void)
{
	mkfile(P("ra"), 0644, 0, 0);
	mkfile(P("rb"), 0600, 0, 0);
	ino_t ia = st_of(P("ra")).st_ino, ib = st_of(P("rb")).st_ino;
	int r = err(renameat2(AT_FDCWD, P("ra"), AT_FDCWD, P("rb"), RENAME_NOREPLACE));
	check("RENAME_NOREPLACE onto an existing name", r == EEXIST, "got %d", r);
	r = err(renameat2(AT_FDCWD, P("ra"), AT_FDCWD, P("rc"), RENAME_NOREPLACE));
	check("RENAME_NOREPLACE onto a new name", r == 0, "got %d", r);
	r = err(renameat2(AT_FDCWD, P("rc"), AT_FDCWD, P("rb"), RENAME_EXCHANGE));
	check("RENAME_EXCHANGE swaps", r == 0 && st_of(P("rb")).st_ino == ia &&
					 st_of(P("rc")).st_ino == ib,
	      "got %d", r);
	r = err(renameat2(AT_FDCWD, P("rc"), AT_FDCWD, P("nonexist"), RENAME_EXCHANGE));
	check("RENAME_EXCHANGE with a missing target", r == ENOENT, "got %d", r);
	mkdir(P("ne"), 0755);
	mkfile(P("ne/x"), 0644, 0, 0);
	mkdir(P("ne2"), 0755);
	r = err(rename(P("ne2"), P("ne")));
	check("rename a directory over a non-empty one", r == ENOTEMPTY || r == EEXIST, "got %d", r);
	r = err(rmdir(P("ne")));
	check("rmdir of a non-empty directory", r == ENOTEMPTY, "got %d", r);
	/* RENAME_WHITEOUT (overlayfs on this filesystem as its upper layer):
	 * the old name becomes a 0:0 character device with mode 0 */
	mkfile(P("wa"), 0644, 0, 0);
	ino_t iw = st_of(P("wa")).st_ino;
	r = err(renameat2(AT_FDCWD, P("wa"), AT_FDCWD, P("wb"), RENAME_WHITEOUT));
	struct stat wa = st_of(P("wa"));
	check("RENAME_WHITEOUT leaves a whiteout", r == 0 && S_ISCHR(wa.st_mode) && (wa.st_mode & 07777) == 0 &&
		      wa.st_rdev == 0 && st_of(P("wb")).st_ino == iw,
	      "got %d, mode %o rdev %llx", r, wa.st_mode, (unsigned long long)wa.st_rdev);
	r = err(renameat2(AT_FDCWD, P("wb"), AT_FDCWD, P("wa"), RENAME_WHITEOUT | RENAME_EXCHANGE));
	check("RENAME_WHITEOUT with RENAME_EXCHANGE", r == EINVAL, "got %d", r);
	unlink(P("wa"));
	unlink(P("wb"));
}

static void t_xattr(void)
{
	mkfile(P("xa"), 0644, 0, 0);
	int r = err(setxattr(P("xa"), "user.k", "v1", 2, XATTR_REPLACE));
	check("XATTR_REPLACE of a missing attribute", r == ENODATA, "got %d", r);
	r = err(setxattr(P("xa"), "user.k", "v1", 2, XATTR_CREATE));
	check("XATTR_CREATE of a new attribute", r == 0, "got %d", r);
	r = err(setxattr(P("xa"), "user.k", "v2", 2, XATTR_CREATE));
	check("XATTR_CREATE of an existing attribute", r == EEXIST, "got %d", r);
	r = err(setxattr(P("xa"), "user.k", "v22", 3, XATTR_REPLACE));
	char buf[16] = { 0 };
	ssize_t n = getxattr(P("xa"), "user.k", buf, sizeof buf);
	check("XATTR_REPLACE of an existing attribute", r == 0 && n == 3 && !memcmp(buf, "v22", 3),
	      "rc %d n %zd", r, n);
	n = getxattr(P("xa"), "user.k", buf, 1);
	check("getxattr into a small buffer", n < 0 && errno == ERANGE, "n %zd errno %d", n, errno);
	r = err(removexattr(P("xa"), "user.k"));
	check("removexattr", r == 0, "got %d", r);
	r = err(removexattr(P("xa"), "user.k"));
	check("removexattr of a missing attribute", r == ENODATA, "got %d", r);
	n = getxattr(P("xa"), "user.missing", buf, sizeof buf);
	check("getxattr of a missing attribute", n < 0 && errno == ENODATA, "errno %d", errno);
}

/* A VFS-format ACL (version 2): entries as {tag, perm, id}. */
static size_t acl_build(unsigned char *out, const unsigned (*e)[3], int n)
{
	uint32_t v = 2;
	memcpy(out, &v, 4);
	for (int i = 0; i < n; i++) {
		uint16_t tag = (uint16_t)e[i][0], perm = (uint16_t)e[i][1];
		uint32_t id = e[i][2];
		memcpy(out + 4 + 8 * i, &tag, 2);
		memcpy(out + 6 + 8 * i, &perm, 2);
		memcpy(out + 8 + 8 * i, &id, 4);
	}
	return 4 + 8 * (size_t)n;
}

/* The perm of the first entry with tag in a VFS-format ACL, or -1. */
static int acl_perm(const char *path, const char *name, unsigned tag)
{
	unsigned char buf[1024];
	ssize_t n = getxattr(path, name, buf, sizeof buf);
	for (ssize_t i = 4; i + 8 <= n; i += 8) {
		uint16_t t, p;
		memcpy(&t, buf + i, 2);
		memcpy(&p, buf + i + 2, 2);
		if (t == tag)
			return p;
	}
	return -1;
}

static void t_acl(void)
{
	const unsigned U = 0xffffffffu;
	/* owner rw, user U1 r, group -, mask r, other - */
	const unsigned acl[][3] = { { 1, 6, U }, { 2, 4, U1 }, { 4, 0, U }, { 0x10, 4, U },
				    { 0x20, 0, U } };
	unsigned char buf[256];
	size_t n = acl_build(buf, acl, 5);
	mkfile(P("acl_f"), 0600, 0, 0);
	int r = err(setxattr(P("acl_f"), "system.posix_acl_access", buf, n, 0));
	mode_t m = st_of(P("acl_f")).st_mode & 0777;
	check("set an access ACL: the mode follows it", r == 0 && m == 0640, "rc %d mode %o", r, m);
	struct o o = { .p = P("acl_f"), .flags = O_RDONLY };
	r = as_user(U1, do_open, &o);
	check("ACL grants the named user read", r == 0, "got %d", r);
	r = as_user(U2, do_open, &o);
	check("ACL: other users are refused", r == EACCES, "got %d", r);
	o.flags = O_WRONLY;
	r = as_user(U1, do_open, &o);
	check("ACL: the named user has no write", r == EACCES, "got %d", r);
	r = err(chmod(P("acl_f"), 0600));
	int mask = acl_perm(P("acl_f"), "system.posix_acl_access", 0x10);
	check("chmod rewrites the ACL mask", r == 0 && mask == 0, "rc %d mask %d", r, mask);
	o.flags = O_RDONLY;
	r = as_user(U1, do_open, &o);
	check("ACL after chmod g-r: the named user is refused", r == EACCES, "got %d", r);
	/* an ACL the mode says in full is not stored */
	const unsigned plain[][3] = { { 1, 7, U }, { 4, 5, U }, { 0x20, 1, U } };
	n = acl_build(buf, plain, 3);
	mkfile(P("acl_plain"), 0600, 0, 0);
	r = err(setxattr(P("acl_plain"), "system.posix_acl_access", buf, n, 0));
	m = st_of(P("acl_plain")).st_mode & 0777;
	ssize_t g = getxattr(P("acl_plain"), "system.posix_acl_access", buf, sizeof buf);
	check("a mode-equivalent ACL sets the mode only", r == 0 && m == 0751 &&
							  (g < 0 || g == 28),
	      "rc %d mode %o getxattr %zd", r, m, g);
	/* default ACL: inherited on create, umask ignored */
	mkdir(P("dacl"), 0755);
	const unsigned dfl[][3] = { { 1, 7, U }, { 2, 6, U1 }, { 4, 5, U }, { 0x10, 7, U },
				    { 0x20, 5, U } };
	n = acl_build(buf, dfl, 5);
	r = err(setxattr(P("dacl"), "system.posix_acl_default", buf, n, 0));
	check("set a default ACL on a directory", r == 0, "got %d", r);
	r = err(setxattr(P("acl_f"), "system.posix_acl_default", buf, n, 0));
	check("a default ACL on a file", r == EACCES, "got %d", r);
	mode_t old = umask(077);
	int fd = open(P("dacl/f"), O_CREAT | O_WRONLY, 0666);
	mkdir(P("dacl/d"), 0777);
	umask(old);
	if (fd >= 0)
		close(fd);
	m = st_of(P("dacl/f")).st_mode & 0777;
	int u1 = acl_perm(P("dacl/f"), "system.posix_acl_access", 2);
	mask = acl_perm(P("dacl/f"), "system.posix_acl_access", 0x10);
	check("a new file inherits the default ACL (umask ignored)",
	      m == 0664 && u1 == 6 && mask == 6, "mode %o user %d mask %d", m, u1, mask);
	m = st_of(P("dacl/d")).st_mode & 0777;
	int d = acl_perm(P("dacl/d"), "system.posix_acl_default", 2);
	check("a new directory inherits the default ACL as both", m == 0775 && d == 6,
	      "mode %o default user %d", m, d);
	o = (struct o){ .p = P("dacl/f"), .flags = O_RDWR };
	r = as_user(U1, do_open, &o);
	check("an inherited ACL is enforced", r == 0, "got %d", r);
	r = as_user(U2, do_open, &o);
	check("an inherited ACL refuses others write", r == EACCES, "got %d", r);
}

static void t_owners(void)
{
	mkdir_as(P("pub"), 0777, 0, 0);
	struct o o = { .p = P("pub/mine"), .flags = O_CREAT | O_WRONLY, .mode = 0644 };
	int r = as_user(U1, do_mkfile, &o);
	struct stat st = st_of(P("pub/mine"));
	check("a new file is owned by the caller", r == 0 && st.st_uid == U1 && st.st_gid == U1,
	      "rc %d %u:%u", r, st.st_uid, st.st_gid);
	check("umask applies without a default ACL", (st.st_mode & 0777) == 0644, "mode %o",
	      st.st_mode & 0777);
	mkdir_as(P("sgid"), 02777, 0, G_SHARED);
	o.p = P("sgid/f");
	r = as_user(U2, do_mkfile, &o);
	st = st_of(P("sgid/f"));
	check("a setgid directory passes on its group", r == 0 && st.st_gid == G_SHARED,
	      "rc %d gid %u", r, st.st_gid);
	if (mkdir(P("sgid/sub"), 0755))
		perror("mkdir");
	st = st_of(P("sgid/sub"));
	check("and its setgid bit to subdirectories", st.st_gid == G_SHARED &&
							   (st.st_mode & 02000),
	      "gid %u mode %o", st.st_gid, st.st_mode & 07777);
}

static void t_durability_calls(void)
{
	int fd = open(P("sync_f"), O_CREAT | O_RDWR, 0644);
	int ok = fd >= 0 && write(fd, "abc", 3) == 3 && fsync(fd) == 0 && fdatasync(fd) == 0;
	check("fsync and fdatasync", ok, "errno %d", errno);
	/* unlinked while open: still usable */
	ok = ok && unlink(P("sync_f")) == 0;
	struct stat st;
	ok = ok && fstat(fd, &st) == 0 && st.st_nlink == 0 && st.st_size == 3;
	ok = ok && pwrite(fd, "defg", 4, 3) == 4 && fstat(fd, &st) == 0 && st.st_size == 7 &&
	     fchmod(fd, 0600) == 0 && fsync(fd) == 0;
	check("an open file after its last unlink", ok, "errno %d", errno);
	if (fd >= 0)
		close(fd);
	int dfd = open(root, O_RDONLY | O_DIRECTORY);
	ok = dfd >= 0 && fsync(dfd) == 0;
	check("fsync of a directory", ok, "errno %d", errno);
	if (dfd >= 0)
		close(dfd);
}

/* ---- inode flags (chattr / lsattr: FS_IOC_GETFLAGS, FS_IOC_SETFLAGS) ---- */

static int flags_get(const char *p, int *fl)
{
	int fd = open(p, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return errno;
	int rc = ioctl(fd, FS_IOC_GETFLAGS, fl) ? errno : 0;
	close(fd);
	return rc;
}

static int flags_set(const char *p, int fl)
{
	int fd = open(p, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return errno;
	int rc = ioctl(fd, FS_IOC_SETFLAGS, &fl) ? errno : 0;
	close(fd);
	return rc;
}

/* chattr FLAG (added to the current flags) as o->uid's caller */
static int do_flag_add(const void *a)
{
	const struct o *o = a;
	int fl = 0, rc = flags_get(o->p, &fl);
	return rc ? rc : flags_set(o->p, fl | o->flags);
}

static int do_trunc(const void *a)
{
	return err(truncate(((const struct o *)a)->p, 0));
}

static int do_setxattr(const void *a)
{
	return err(setxattr(((const struct o *)a)->p, "user.k", "v", 1, 0));
}

static int do_link(const void *a)
{
	const struct o *o = a;
	return err(link(o->p, o->q));
}

static void t_inode_flags(void)
{
	mkdir_as(P("fl"), 0777, 0, 0);
	mkfile(P("fl/i"), 0666, 0, 0);
	int fl = -1;
	int r = flags_set(P("fl/i"), FS_IMMUTABLE_FL);
	int g = flags_get(P("fl/i"), &fl);
	check("chattr +i, lsattr shows it", !r && !g && (fl & FS_IMMUTABLE_FL), "set %d get %d flags %#x", r, g,
	      fl);
	int fd = open(P("fl/i"), O_RDONLY);
	struct fsxattr fx = { 0 };
	check("FS_IOC_FSGETXATTR shows immutable", fd >= 0 && !ioctl(fd, FS_IOC_FSGETXATTR, &fx) &&
		      (fx.fsx_xflags & FS_XFLAG_IMMUTABLE), "errno %d xflags %#x", errno, fx.fsx_xflags);
	/* lsattr -v: the generation, an int (whatever _IOR's long says) */
	int ver[2] = { 0, 0x5a5a5a5a };
	check("FS_IOC_GETVERSION gives an int", fd >= 0 && !ioctl(fd, FS_IOC_GETVERSION, &ver[0]) &&
		      ver[1] == 0x5a5a5a5a, "errno %d, next int %#x", errno, ver[1]);
	if (fd >= 0)
		close(fd);
	struct o o = { .p = P("fl/i"), .q = P("fl/i2"), .mode = 0600 };
	check("immutable: open for writing is EPERM (root too)", as_user(0, do_write, &o) == EPERM, "");
	check("immutable: truncate is EPERM", as_user(0, do_trunc, &o) == EPERM, "");
	check("immutable: unlink is EPERM", as_user(0, do_unlink, &o) == EPERM, "");
	check("immutable: rename is EPERM", as_user(0, do_rename, &o) == EPERM, "");
	check("immutable: link is EPERM", as_user(0, do_link, &o) == EPERM, "");
	check("immutable: chmod is EPERM", as_user(0, do_chmod, &o) == EPERM, "");
	check("immutable: touch is EPERM", as_user(0, do_utime_now, &o) == EPERM, "");
	check("immutable: setxattr is EPERM", as_user(0, do_setxattr, &o) == EPERM, "");
	o.flags = FS_NODUMP_FL;
	check("immutable: only root changes flags (U1: EPERM)", as_user(U1, do_flag_add, &o) == EPERM, "");
	r = flags_set(P("fl/i"), 0);
	check("chattr -i, then writes work", !r && as_user(0, do_write, &o) == 0, "set %d", r);

	/* a writer opened before chattr +i */
	fd = open(P("fl/i"), O_WRONLY);
	r = flags_set(P("fl/i"), FS_IMMUTABLE_FL);
	ssize_t n = fd >= 0 ? write(fd, "y", 1) : 0;
	check("immutable: a handle opened before cannot write", fd >= 0 && !r && n < 0 && errno == EPERM,
	      "fd %d set %d n %zd errno %d", fd, r, n, errno);
	if (fd >= 0)
		close(fd);
	flags_set(P("fl/i"), 0);

	mkfile(P("fl/a"), 0666, 0, 0);
	r = flags_set(P("fl/a"), FS_APPEND_FL);
	o = (struct o){ .p = P("fl/a"), .q = P("fl/a2") };
	check("append-only: open for writing without O_APPEND is EPERM", !r && as_user(0, do_write, &o) == EPERM,
	      "set %d", r);
	o.flags = O_APPEND;
	int w = as_user(0, do_write, &o);
	int w2 = as_user(0, do_write, &o);
	check("append-only: O_APPEND writes land at the end", !w && !w2 && st_of(P("fl/a")).st_size == 6,
	      "rc %d %d size %lld", w, w2, (long long)st_of(P("fl/a")).st_size);
	o.flags = O_APPEND | O_TRUNC;
	check("append-only: O_TRUNC is EPERM", as_user(0, do_write, &o) == EPERM, "");
	check("append-only: truncate is EPERM", as_user(0, do_trunc, &o) == EPERM, "");
	check("append-only: unlink is EPERM", as_user(0, do_unlink, &o) == EPERM, "");
	check("append-only: rename is EPERM", as_user(0, do_rename, &o) == EPERM, "");
	check("append-only: chmod is EPERM", as_user(0, do_chmod, &o) == EPERM, "");
	check("append-only: touch (times = now) works", as_user(0, do_utime_now, &o) == 0, "");
	check("append-only: setting explicit times is EPERM", as_user(0, do_utime_set, &o) == EPERM, "");
	flags_set(P("fl/a"), 0);

	/* flags on a directory, and who may change them */
	mkdir_as(P("fl/d"), 0777, 0, 0);
	mkfile(P("fl/d/f"), 0666, 0, 0);
	r = flags_set(P("fl/d"), FS_IMMUTABLE_FL);
	o = (struct o){ .p = P("fl/d/new"), .flags = O_CREAT | O_WRONLY, .mode = 0644 };
	check("immutable directory: create in it is EPERM", !r && as_user(0, do_open, &o) == EPERM, "set %d", r);
	o.p = P("fl/d/f");
	check("immutable directory: unlink in it is EPERM", as_user(0, do_unlink, &o) == EPERM, "");
	check("immutable directory: its files stay writable", as_user(0, do_write, &o) == 0, "");
	flags_set(P("fl/d"), FS_DIRSYNC_FL);
	g = flags_get(P("fl/d"), &fl);
	check("chattr +D on a directory", !g && (fl & FS_DIRSYNC_FL) && !(fl & FS_IMMUTABLE_FL), "flags %#x", fl);
	o = (struct o){ .p = P("fl/d/new"), .flags = O_CREAT | O_WRONLY, .mode = 0644 };
	check("dirsync directory: create works", as_user(0, do_open, &o) == 0, "");
	flags_set(P("fl/d"), 0);

	mkfile(P("fl/u"), 0644, U1, U1);
	o = (struct o){ .p = P("fl/u"), .flags = FS_NODUMP_FL | FS_NOATIME_FL };
	r = as_user(U1, do_flag_add, &o);
	g = flags_get(P("fl/u"), &fl);
	check("the owner sets nodump and noatime", !r && !g && (fl & FS_NODUMP_FL) && (fl & FS_NOATIME_FL),
	      "rc %d flags %#x", r, fl);
	o.flags = FS_APPEND_FL;
	check("the owner may not set append-only (CAP_LINUX_IMMUTABLE)", as_user(U1, do_flag_add, &o) == EPERM, "");
	o.flags = FS_NODUMP_FL;
	check("another user may not change flags", as_user(U2, do_flag_add, &o) == EPERM, "");
	o.flags = FS_SYNC_FL;
	w = as_user(U1, do_flag_add, &o);
	o.flags = 0;
	check("a sync (chattr +S) file takes writes", !w && as_user(U1, do_write, &o) == 0, "rc %d", w);
}

/* lseek SEEK_DATA / SEEK_HOLE on a sparse file (4 KiB blocks): what the
 * kernel's ext3 answers, block by block (cp, tar and rsync find holes so). */
static void t_seek_holes(void)
{
	int fd = open(P("sparse"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	int ok = fd >= 0 && pwrite(fd, "a", 1, 0) == 1 && pwrite(fd, "b", 1, 1 << 20) == 1 &&
		 pwrite(fd, "c", 1, 100 << 20) == 1 && ftruncate(fd, (100 << 20) + 20000) == 0;
	check("a sparse file", ok, "errno %d", errno);
	if (!ok) {
		if (fd >= 0)
			close(fd);
		return;
	}
	static const struct {
		off_t off;
		int whence;
		off_t want; /* -errno when negative */
	} q[] = {
		{ 0, SEEK_DATA, 0 },
		{ 0, SEEK_HOLE, 4096 },
		{ 4096, SEEK_DATA, 1 << 20 },
		{ (1 << 20) + 10, SEEK_HOLE, (1 << 20) + 4096 },
		{ (1 << 20) + 4096, SEEK_DATA, 100 << 20 },
		{ (100 << 20) + 4096, SEEK_DATA, -ENXIO },
		{ (100 << 20) + 4096, SEEK_HOLE, (100 << 20) + 4096 },
		{ (100 << 20) + 20000, SEEK_HOLE, -ENXIO },
	};
	for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
		off_t r = lseek(fd, q[i].off, q[i].whence);
		if (r < 0)
			r = -errno;
		char name[96];
		snprintf(name, sizeof name, "lseek(%lld, %s)", (long long)q[i].off,
			 q[i].whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE");
		check(name, r == q[i].want, "got %lld, want %lld", (long long)r, (long long)q[i].want);
	}
	close(fd);
	unlink(P("sparse"));
}

/* Fill the filesystem as U1, a write at a time, until it fails; returns
 * the errno (0 if it never did, which cannot happen on a bounded fs). */
static int do_fill(const void *a)
{
	const struct o *o = a;
	int fd = open(o->p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return errno;
	static char buf[1 << 20];
	memset(buf, 'r', sizeof buf);
	int e = 0;
	for (;;) {
		ssize_t n = write(fd, buf, sizeof buf);
		if (n < 0) {
			e = errno;
			break;
		}
	}
	close(fd);
	return e;
}

/* The root-reserved blocks (s_r_blocks_count, 5 % by mke2fs): an ordinary
 * user's writes stop with ENOSPC when only they are left, root's go on
 * (ext3_has_free_blocks). A FUSE daemon runs as root, so it must allocate
 * with the caller's credentials, not its own. Runs last: it fills the
 * filesystem, then frees what it wrote. */
static void t_reserved(void)
{
	mkdir_as(P("full"), 0777, 0, 0);
	struct o o = { .p = P("full/user") };
	int r = as_user(U1, do_fill, &o);
	struct statvfs sv;
	int sr = statvfs(root, &sv);
	check("an ordinary user's write stops at the reserved blocks with ENOSPC",
	      r == ENOSPC && sr == 0 && sv.f_bavail * sv.f_frsize < (1u << 20) &&
		      sv.f_bfree * sv.f_frsize > (1u << 20),
	      "rc %d, bavail %llu bfree %llu blocks", r, (unsigned long long)sv.f_bavail,
	      (unsigned long long)sv.f_bfree);
	int fd = open(P("full/root"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	static char buf[256 << 10];
	memset(buf, 'R', sizeof buf);
	ssize_t n = fd >= 0 ? write(fd, buf, sizeof buf) : -1;
	int ok = n == (ssize_t)sizeof buf && fsync(fd) == 0;
	check("root writes into the reserved blocks", ok, "n %zd errno %d", n, errno);
	if (fd >= 0)
		close(fd);
	unlink(P("full/user"));
	unlink(P("full/root"));
	rmdir(P("full"));
}

int main(int argc, char **argv)
{
	if (argc != 2 || geteuid() != 0) {
		fprintf(stderr, "usage (as root): conform DIR\n");
		return 2;
	}
	root = argv[1];
	umask(022);
	if (chmod(root, 0755))
		perror(root);
	t_path_and_modes();
	t_sticky();
	t_chown_chmod();
	t_setid_write();
	t_utimens();
	t_limits();
	t_rename_flags();
	t_xattr();
	t_acl();
	t_owners();
	t_durability_calls();
	t_inode_flags();
	t_seek_holes();
	t_reserved();
	printf("%d checks, %d failed\n", checks, fails);
	return fails ? 1 : 0;
}
