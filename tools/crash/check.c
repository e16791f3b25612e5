/* crashtest: recovering a crash state and checking it (crash.h,
 * docs/crashtest.md "Recovery and checks").
 *
 * 1. nostall's journal replay (ext3_journal_recover, what `nostall recover`
 *    and a mount do first);
 * 2. when the replayed image has an orphan list, a read-write nostall mount
 *    and unmount (the orphan cleanup a mount does), with the recording's
 *    extra mount options (-o);
 * 3. a read-only nostall mount: the tree is walked (every name, its inode's
 *    owner = the model object, type, size, link count) and checked against
 *    the model: names (lost_fsync, rename), every file's data (stale_data,
 *    lost_fsync, too_long), link counts (fsck);
 * 4. on the states the e2fsck oracle is asked for: `e2fsck -y -E
 *    journal_only` on a copy of the crash state must give nostall's replay
 *    block for block (the superblock's write time and lifetime-written
 *    counter masked), or, when orphans were cleaned (e2fsck cleans them in
 *    that step too, nostall's mount does), the same tree, data and free
 *    counts; and `e2fsck -fn` must pass on nostall's recovered image.
 */
#include "crash.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "jbd/jbd.h"
#include "nostall/nostall.h"
#include "util/array.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *const crash_kind_names[CK_NR] = {
	"lost_fsync", "stale_data", "too_long", "rename", "fsck", "recovery_mismatch",
	"recovery_interrupted", "recovery_idempotent", "recovery_e2fsck", "eio_erofs",
};

bool crash_kind_allowed(const char *mode, enum crash_kind k)
{
	return !strcmp(mode, "writeback") && (k == CK_STALE_DATA || k == CK_TOO_LONG);
}

void crash_verdict_add(struct crash_verdict *v, enum crash_kind k, const char *fmt, ...)
{
	if (v->bad[k])
		return;
	v->bad[k] = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->why[k], sizeof v->why[k], fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ images */

#define CHUNK (1u << 20)

bool crash_all_zero(const uint8_t *p, size_t len)
{
	static const uint8_t zero[4096];
	for (size_t off = 0; off < len; off += sizeof zero) {
		size_t n = len - off < sizeof zero ? len - off : sizeof zero;
		if (memcmp(p + off, zero, n))
			return false;
	}
	return true;
}

int crash_dev_save(struct dev *dev, const char *path)
{
	static uint8_t buf[CHUNK];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(-errno, "crashtest: cannot create %s: %s", path, strerror(errno));
	int rc = ftruncate(fd, (off_t)CRASH_IMAGE_BYTES) ? -errno : 0;
	for (uint64_t off = 0; !rc && off < CRASH_IMAGE_BYTES; off += CHUNK) {
		rc = dev_rw_sync(dev, DEV_OP_READ, off / DEV_SECTOR_SIZE, CHUNK / DEV_SECTOR_SIZE, buf, 0);
		if (!rc && !crash_all_zero(buf, CHUNK) && pwrite(fd, buf, CHUNK, (off_t)off) != (ssize_t)CHUNK)
			rc = -EIO;
	}
	close(fd);
	return rc ? err_set(rc, "crashtest: saving an image to %s failed", path) : 0;
}

static int dev_read_all(struct dev *dev, uint8_t *img)
{
	for (uint64_t off = 0; off < CRASH_IMAGE_BYTES; off += CHUNK) {
		int rc = dev_rw_sync(dev, DEV_OP_READ, off / DEV_SECTOR_SIZE, CHUNK / DEV_SECTOR_SIZE, img + off, 0);
		if (rc)
			return rc;
	}
	return 0;
}

static int file_read_all(const char *path, uint8_t *img)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t done = 0;
	while (done < CRASH_IMAGE_BYTES) {
		ssize_t n = pread(fd, img + done, CRASH_IMAGE_BYTES - done, (off_t)done);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		done += (size_t)n;
	}
	close(fd);
	if (done < CRASH_IMAGE_BYTES)
		memset(img + done, 0, CRASH_IMAGE_BYTES - done);
	return 0;
}

static int mem_dev_from(const uint8_t *img, struct dev **out)
{
	char spec[32];
	snprintf(spec, sizeof spec, "mem:%llu", (unsigned long long)CRASH_IMAGE_BYTES);
	int rc = dev_open(spec, out);
	for (uint64_t off = 0; !rc && off < CRASH_IMAGE_BYTES; off += CHUNK)
		rc = dev_rw_sync(*out, DEV_OP_WRITE, off / DEV_SECTOR_SIZE, CHUNK / DEV_SECTOR_SIZE, (void *)(img + off),
				 0);
	return rc;
}

/* ------------------------------------------------------------ e2fsck */

bool crash_have_e2fsck(void)
{
	const char *path = getenv("PATH");
	char buf[1024];
	for (const char *p = path ? path : "/usr/sbin:/sbin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		snprintf(buf, sizeof buf, "%.*s/e2fsck", (int)n, p);
		if (n && !access(buf, X_OK))
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

int crash_e2fsck_run(const char *opt1, const char *opt2, const char *img, const char *out)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	char *argv[6];
	int k = 0;
	argv[k++] = "e2fsck";
	argv[k++] = (char *)opt1;
	if (opt2)
		argv[k++] = (char *)opt2;
	argv[k++] = (char *)img;
	argv[k] = NULL;
	pid_t pid;
	int rc = posix_spawnp(&pid, "e2fsck", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return err_set(-rc, "crashtest: cannot run e2fsck: %s", strerror(rc));
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

void crash_e2fsck_summary(const char *out, char *buf, size_t len)
{
	FILE *f = fopen(out, "r");
	buf[0] = '\0';
	if (!f)
		return;
	char line[256];
	size_t n = 0;
	while (fgets(line, sizeof line, f) && n + 2 < len) {
		if (!strncmp(line, "Pass ", 5) || !strncmp(line, "e2fsck ", 7) || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " | " : "", line);
		if (n >= len)
			break;
	}
	fclose(f);
}

static bool out_contains(const char *out, const char *needle)
{
	FILE *f = fopen(out, "r");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* ------------------------------------------------------------ the tree */

struct tent {
	char *path;
	uint64_t ino, size, blocks, hash;
	uint32_t mode, nlink, obj; /* obj: UINT32_MAX when the owner is not ours */
	bool renamed;
};

struct tree {
	struct tent *e;
	size_t n, cap;
	uint8_t *buf; /* file contents */
	size_t bufcap;
};

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].path);
	free(t->e);
	free(t->buf);
	memset(t, 0, sizeof *t);
}

struct dirents {
	struct nostall_dirent *d;
	size_t n, cap;
};

static int collect(void *ctx, const struct nostall_dirent *de)
{
	struct dirents *ds = ctx;
	if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
		return 0;
	if (array_grow(&ds->d, &ds->cap, ds->n, sizeof *ds->d, 16))
		return -ENOMEM;
	ds->d[ds->n++] = *de;
	return 0;
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int read_file(struct nostall_fs *fs, struct tree *t, uint64_t ino, uint64_t size)
{
	if (size > (64u << 20))
		return err_set(-EFBIG, "crashtest: inode %llu claims %llu bytes", (unsigned long long)ino,
			       (unsigned long long)size);
	if (size + 8 > t->bufcap) {
		uint8_t *b = realloc(t->buf, (size_t)size + 8);
		if (!b)
			return -ENOMEM;
		t->buf = b;
		t->bufcap = (size_t)size + 8;
	}
	struct nostall_file *f;
	int rc = nostall_open_ino(fs, ino, NOSTALL_O_RDONLY, &f);
	if (rc)
		return rc;
	uint64_t done = 0;
	while (done < size) {
		ssize_t n = nostall_pread(f, t->buf + done, (size_t)(size - done), done);
		if (n <= 0) {
			rc = n < 0 ? (int)n : -EIO;
			break;
		}
		done += (uint64_t)n;
	}
	nostall_close(f);
	return rc;
}

/* Every name under dir (lost+found aside); with hash, the files' data hashed. */
static int walk(struct nostall_fs *fs, uint64_t dir, const char *prefix, struct tree *t, int depth, bool hash)
{
	if (depth > 16)
		return err_set(-ELOOP, "crashtest: directory tree too deep at %s", prefix);
	struct dirents ds = { 0 };
	int rc = nostall_readdir_ino(fs, dir, collect, &ds);
	for (size_t i = 0; !rc && i < ds.n; i++) {
		char path[600];
		snprintf(path, sizeof path, "%s/%s", prefix, ds.d[i].name);
		/* the aged image's files (wl_history.c): before the test */
		if (!strcmp(path, "/lost+found") || !strcmp(path, "/aged"))
			continue;
		struct nostall_stat st;
		rc = nostall_stat_ino(fs, ds.d[i].ino, &st);
		if (rc)
			break;
		if (array_grow(&t->e, &t->cap, t->n, sizeof *t->e, 64)) {
			rc = -ENOMEM;
			break;
		}
		struct tent *e = &t->e[t->n];
		*e = (struct tent){ .path = strdup(path), .ino = st.ino, .size = st.size, .blocks = st.blocks,
				    .mode = st.mode, .nlink = st.nlink };
		if (!e->path) {
			rc = -ENOMEM;
			break;
		}
		t->n++;
		e->obj = st.uid > CRASH_UID_BASE && st.uid - CRASH_UID_BASE < CRASH_OBJ_MAX ? st.uid - CRASH_UID_BASE
											   : UINT32_MAX;
		if ((st.mode & S_IFMT) == S_IFDIR)
			rc = walk(fs, st.ino, path, t, depth + 1, hash);
		else if (hash && (st.mode & S_IFMT) == S_IFREG && !(rc = read_file(fs, t, st.ino, st.size)))
			t->e[t->n - 1].hash = fnv(t->buf, (size_t)st.size);
	}
	free(ds.d);
	return rc;
}

/* ------------------------------------------------------------ checks */

struct pctx {
	const struct crash_eval *e;
	struct crash_smap *present; /* path -> tree index + 1 */
	struct crash_verdict *v;
};

static int check_missing(void *ctx, const char *path)
{
	struct pctx *p = ctx;
	if (crash_smap_get(p->present, path, NULL))
		return 0;
	struct crash_name_verdict nv;
	crash_eval_name(p->e, path, 0, &nv);
	if (!nv.allowed)
		crash_verdict_add(p->v, nv.renamed ? CK_RENAME : CK_LOST_FSYNC, "%s is missing%s", path,
				  nv.renamed ? " after a rename" : " (persisted)");
	return 0;
}

/* Names, then each file's data once, then link counts. */
static int check_tree(struct nostall_fs *fs, const struct crash_eval *e, struct tree *t, struct crash_verdict *v)
{
	struct crash_smap *present;
	if (crash_smap_create(&present))
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; !rc && i < t->n; i++) {
		struct tent *x = &t->e[i];
		rc = crash_smap_put(present, x->path, (uint32_t)i + 1);
		bool dir = (x->mode & S_IFMT) == S_IFDIR;
		if (x->obj == UINT32_MAX || !crash_eval_obj_exists(e, x->obj)) {
			crash_verdict_add(v, CK_FSCK, "%s is inode %llu, which the workload did not create (uid)", x->path,
					  (unsigned long long)x->ino);
			continue;
		}
		if (dir != crash_eval_obj_is_dir(e, x->obj)) {
			crash_verdict_add(v, CK_FSCK, "%s: object %u has the wrong type", x->path, x->obj);
			continue;
		}
		struct crash_name_verdict nv;
		crash_eval_name(e, x->path, x->obj, &nv);
		x->renamed = nv.renamed;
		if (!nv.known)
			crash_verdict_add(v, CK_LOST_FSYNC, "%s: a name the workload never made (object %u)", x->path,
					  x->obj);
		else if (!nv.allowed)
			crash_verdict_add(v, nv.renamed ? CK_RENAME : CK_LOST_FSYNC,
					  "%s is object %u, not one the crash may show%s", x->path, x->obj,
					  nv.renamed ? " (rename)" : "");
	}
	struct pctx p = { e, present, v };
	if (!rc)
		rc = crash_eval_paths(e, check_missing, &p);
	/* data and link counts, once per inode */
	for (size_t i = 0; !rc && i < t->n; i++) {
		struct tent *x = &t->e[i];
		if ((x->mode & S_IFMT) != S_IFREG || x->obj == UINT32_MAX || !crash_eval_obj_exists(e, x->obj) ||
		    crash_eval_obj_is_dir(e, x->obj))
			continue;
		bool first = true, renamed = x->renamed;
		uint32_t names = 0;
		for (size_t k = 0; k < t->n; k++) {
			if (t->e[k].ino != x->ino)
				continue;
			first = first && k >= i;
			renamed = renamed || t->e[k].renamed;
			names++;
		}
		if (!first)
			continue;
		if (names != x->nlink)
			crash_verdict_add(v, CK_FSCK, "%s: inode %llu has link count %u but %u names", x->path,
					  (unsigned long long)x->ino, x->nlink, names);
		rc = read_file(fs, t, x->ino, x->size);
		if (rc)
			break;
		uint64_t h = fnv(t->buf, (size_t)x->size);
		for (size_t k = i; k < t->n; k++)
			if (t->e[k].ino == x->ino)
				t->e[k].hash = h;
		struct crash_verdict fv;
		memset(&fv, 0, sizeof fv);
		crash_eval_file(e, x->obj, t->buf, x->size, &fv);
		if (renamed && fv.bad[CK_LOST_FSYNC])
			crash_verdict_add(v, CK_RENAME, "%s (renamed): %s", x->path, fv.why[CK_LOST_FSYNC]);
		for (int k = 0; k < CK_NR; k++)
			if (fv.bad[k])
				crash_verdict_add(v, (enum crash_kind)k, "%s: %s", x->path, fv.why[k]);
	}
	crash_smap_destroy(present);
	return rc;
}

static int mount_walk(struct dev *dev, struct tree *t, struct nostall_statfs *sf, struct nostall_fs **keep)
{
	struct nostall_fs *fs;
	int rc = nostall_mount_dev(dev, NULL, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		return rc;
	rc = walk(fs, NOSTALL_ROOT_INO, "", t, 0, !keep);
	if (!rc && sf)
		rc = nostall_statfs(fs, sf);
	if (keep && !rc) {
		*keep = fs;
		return 0;
	}
	int urc = nostall_umount(fs);
	return rc ? rc : urc;
}

static uint32_t sb_last_orphan(struct dev *dev, int *rc)
{
	uint8_t sb[1024];
	*rc = dev_rw_sync(dev, DEV_OP_READ, 2, 2, sb, 0);
	return *rc ? 0 : (uint32_t)sb[0xe8] | (uint32_t)sb[0xe9] << 8 | (uint32_t)sb[0xea] << 16 |
				 (uint32_t)sb[0xeb] << 24;
}

/* Block-for-block, the superblock's s_wtime and s_kbytes_written masked,
 * and with them s_checksum (metadata_csum: the crc32c over the superblock
 * covers the two masked fields; zero on both sides without the feature).
 * The rest is the same on every type: e2fsck replays jbd2 (ext4) journals
 * as it replays ext3's, and nostall's replay reads both. */
static void compare_images(const uint8_t *a, const uint8_t *b, unsigned bs, struct crash_verdict *v)
{
	static const struct { size_t off, len; } mask[] = { { 1024 + 0x30, 4 }, { 1024 + 0x178, 8 },
							    { 1024 + 0x3fc, 4 } };
	for (size_t off = 0; off < CRASH_IMAGE_BYTES; off += bs) {
		if (!memcmp(a + off, b + off, bs))
			continue;
		bool same = false;
		if (off <= 1024 && off + bs >= 2048) {
			uint8_t x[4096], y[4096];
			memcpy(x, a + off, bs);
			memcpy(y, b + off, bs);
			for (size_t k = 0; k < sizeof mask / sizeof mask[0]; k++) {
				memset(x + mask[k].off - off, 0, mask[k].len);
				memset(y + mask[k].off - off, 0, mask[k].len);
			}
			same = !memcmp(x, y, bs);
		}
		if (same)
			continue;
		size_t first = 0;
		while (a[off + first] == b[off + first])
			first++;
		crash_verdict_add(v, CK_RECOVERY, "e2fsck -E journal_only and nostall's replay differ in block %zu "
				  "(byte %zu of it)", off / bs, first);
		return;
	}
}

/* The same tree, data and free counts (orphans were cleaned on both sides);
 * who recovered b: "e2fsck" or "the kernel". */
static void compare_trees(const struct tree *a, const struct nostall_statfs *sa, const struct tree *b,
			  const struct nostall_statfs *sb, const char *who, struct crash_verdict *v)
{
	if (a->n != b->n) {
		crash_verdict_add(v, CK_RECOVERY, "after orphan cleanup nostall has %zu names, %s %zu", a->n, who,
				  b->n);
		return;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct tent *x = &a->e[i], *y = &b->e[i];
		if (strcmp(x->path, y->path) || x->ino != y->ino || x->size != y->size || x->blocks != y->blocks ||
		    x->nlink != y->nlink || x->hash != y->hash || x->mode != y->mode) {
			crash_verdict_add(v, CK_RECOVERY, "after orphan cleanup %s differs: nostall ino %llu size %llu "
					  "blocks %llu, %s %s ino %llu size %llu blocks %llu",
					  x->path, (unsigned long long)x->ino, (unsigned long long)x->size,
					  (unsigned long long)x->blocks, who, y->path, (unsigned long long)y->ino,
					  (unsigned long long)y->size, (unsigned long long)y->blocks);
			return;
		}
	}
	if (sa->blocks_free != sb->blocks_free || sa->files_free != sb->files_free)
		crash_verdict_add(v, CK_RECOVERY, "after orphan cleanup nostall has %llu free blocks %llu free inodes, "
				  "%s %llu and %llu", (unsigned long long)sa->blocks_free,
				  (unsigned long long)sa->files_free, who, (unsigned long long)sb->blocks_free,
				  (unsigned long long)sb->files_free);
}

/* ------------------------------------------------------------ the kernel */

/* The kernel as the tie-breaker of an orphan cleanup where e2fsck and
 * nostall differ (docs/crashtest.md "The kernel as tie-breaker"): e2fsck
 * 1.47's orphan truncate can keep a split extent leaf, or give up on the
 * inode with its i_blocks left; semantics are the kernel's. Only as root
 * (loop mounts), and not with NOSTALL_CRASH_NO_KERNEL set (non-empty). */
static bool kernel_available(void)
{
	const char *no = getenv("NOSTALL_CRASH_NO_KERNEL");
	return (!no || !*no) && geteuid() == 0;
}

/* Run argv (PATH searched), its output to out: its exit status or -errno. */
static int run_cmd(char *const argv[], const char *out)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -rc;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The kernel's recovery of the crash state in img (a file): a read-write
 * loop mount (the kernel's ext4 replays the journal and cleans the orphan
 * list) and its unmount (-o loop detaches the loop device). 0, or < 0 when
 * the kernel did not recover it (the mount or unmount failed). A loop
 * device just released can refuse a mount for a moment (EBUSY, see
 * tests/lib/kmount.sh): retried. */
static int kernel_recover(const struct crash_check_cfg *cfg, const char *img)
{
	char mnt[400], out[400];
	snprintf(mnt, sizeof mnt, "%s/kmnt", cfg->tmpdir);
	snprintf(out, sizeof out, "%s/kernel.out", cfg->tmpdir);
	if (mkdir(mnt, 0755) && errno != EEXIST)
		return -errno;
	char *mount_argv[] = { "mount", "-t", "ext4", "-o", "loop", (char *)img, mnt, NULL };
	char *umount_argv[] = { "umount", mnt, NULL };
	int rc;
	for (int i = 0;; i++) {
		rc = run_cmd(mount_argv, out);
		if (rc == 0)
			break;
		if (i >= 20 || !out_contains(out, "busy"))
			return rc < 0 ? rc : -EIO;
		usleep(250000);
	}
	rc = run_cmd(umount_argv, out);
	if (rc) {
		/* never leave it mounted: a lazy unmount detaches it */
		char *lazy_argv[] = { "umount", "-l", mnt, NULL };
		run_cmd(lazy_argv, out);
	}
	return rc == 0 ? 0 : rc < 0 ? rc : -EIO;
}

/* Remove what the kernel's recovery leaves in tmpdir (the scratch
 * directory's owner removes only the files it knows). */
static void kernel_cleanup(const struct crash_check_cfg *cfg)
{
	const char *names[] = { "kernel.img", "kernel.out" };
	char p[400];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", cfg->tmpdir, names[i]);
		unlink(p);
	}
	snprintf(p, sizeof p, "%s/kmnt", cfg->tmpdir);
	rmdir(p);
}

/* A copy of a file (kept sparse: the crash images are). */
static int file_copy(const char *from, const char *to, uint8_t *buf)
{
	int rc = file_read_all(from, buf);
	if (rc)
		return rc;
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = ftruncate(fd, (off_t)CRASH_IMAGE_BYTES) ? -errno : 0;
	for (uint64_t off = 0; !rc && off < CRASH_IMAGE_BYTES; off += CHUNK)
		if (!crash_all_zero(buf + off, CHUNK) && pwrite(fd, buf + off, CHUNK, (off_t)off) != (ssize_t)CHUNK)
			rc = -EIO;
	close(fd);
	return rc;
}

/* e2fsck's orphan cleanup differed from nostall's (v's recovery_mismatch):
 * does the kernel's, on kimg (a copy of the crash state), give nostall's
 * tree, data and free counts (compare_trees, the same fields)? Then the
 * mismatch is no violation: v->kernel_agrees, the e2fsck difference kept in
 * v->kernel_why. Otherwise (or when the kernel cannot say) v is left as it
 * is. img: a CRASH_IMAGE_BYTES buffer. */
static void kernel_tie_break(const struct crash_check_cfg *cfg, const char *kimg, uint8_t *img,
			     const struct tree *t, const struct nostall_statfs *sf, struct crash_verdict *v)
{
	if (kernel_recover(cfg, kimg) || file_read_all(kimg, img))
		return;
	struct dev *d = NULL;
	struct tree tk = { 0 };
	struct nostall_statfs sk;
	struct crash_verdict kv;
	memset(&kv, 0, sizeof kv);
	int rc = mem_dev_from(img, &d);
	if (!rc)
		rc = mount_walk(d, &tk, &sk, NULL);
	if (!rc)
		compare_trees(t, sf, &tk, &sk, "the kernel", &kv);
	if (!rc && !kv.bad[CK_RECOVERY]) {
		v->bad[CK_RECOVERY] = false;
		v->kernel_agrees = true;
		snprintf(v->kernel_why, sizeof v->kernel_why, "%s", v->why[CK_RECOVERY]);
		v->why[CK_RECOVERY][0] = '\0';
	}
	tree_free(&tk);
	if (d)
		dev_close(d);
}

/* The e2fsck oracle: crash.img holds the crash state, replay the image
 * after nostall's journal replay; dev holds nostall's full recovery. */
static int oracle(const struct crash_check_cfg *cfg, struct dev *dev, const uint8_t *replay, const struct tree *t,
		  const struct nostall_statfs *sf, bool orphans, struct crash_verdict *v)
{
	static uint8_t *img;
	static uint64_t img_len; /* the image size can change between jobs */
	if (img_len != CRASH_IMAGE_BYTES) {
		free(img);
		img_len = (img = malloc(CRASH_IMAGE_BYTES)) ? CRASH_IMAGE_BYTES : 0;
	}
	if (!img)
		return -ENOMEM;
	char crash[400], out[400], mine[400], kimg[400];
	snprintf(crash, sizeof crash, "%s/crash.img", cfg->tmpdir);
	snprintf(out, sizeof out, "%s/e2fsck.out", cfg->tmpdir);
	snprintf(mine, sizeof mine, "%s/nostall.img", cfg->tmpdir);
	snprintf(kimg, sizeof kimg, "%s/kernel.img", cfg->tmpdir);
	char sum[200];
	/* e2fsck recovers crash.img in place: the kernel gets a copy */
	bool kernel = orphans && kernel_available() && !file_copy(crash, kimg, img);
	int rc = crash_e2fsck_run("-y", "-Ejournal_only", crash, out);
	if (rc < 0)
		return rc;
	if (rc != 0 && rc != 1) {
		crash_e2fsck_summary(out, sum, sizeof sum);
		crash_verdict_add(v, CK_RECOVERY, "e2fsck -E journal_only exit %d: %s", rc, sum);
	} else if (out_contains(out, "flag is clear, but journal has data")) {
		/* e2fsck then checks (and stamps) the whole filesystem */
		crash_verdict_add(v, CK_RECOVERY, "the journal superblock says the log is not empty (s_start != 0) "
				  "while needs_recovery is clear; e2fsck -E journal_only replays it and runs a full check");
	} else if ((rc = file_read_all(crash, img)) < 0) {
		return err_set(rc, "crashtest: reading %s back", crash);
	} else if (!orphans) {
		compare_images(replay, img, cfg->bs, v);
	} else {
		struct dev *d;
		struct tree te = { 0 };
		struct nostall_statfs se;
		rc = mem_dev_from(img, &d);
		if (!rc) {
			rc = mount_walk(d, &te, &se, NULL);
			if (rc)
				crash_verdict_add(v, CK_RECOVERY, "e2fsck's recovered image does not mount: %s",
						  nostall_errmsg(rc));
			else
				compare_trees(t, sf, &te, &se, "e2fsck", v);
		}
		tree_free(&te);
		dev_close(d);
		if (rc && !v->bad[CK_RECOVERY])
			return rc;
		if (!rc && v->bad[CK_RECOVERY] && kernel)
			kernel_tie_break(cfg, kimg, img, t, sf, v);
	}
	if (kernel)
		kernel_cleanup(cfg);
	rc = crash_dev_save(dev, mine);
	if (rc)
		return rc;
	rc = crash_e2fsck_run("-fn", NULL, mine, out);
	if (rc < 0)
		return rc;
	if (rc) {
		crash_e2fsck_summary(out, sum, sizeof sum);
		crash_verdict_add(v, CK_FSCK, "e2fsck -fn exit %d after recovery: %s", rc, sum);
	}
	v->e2fsck_ran = true;
	return 0;
}

int crash_check_state(const struct crash_check_cfg *cfg, struct dev *dev, const struct crash_eval *e,
		      struct crash_verdict *v)
{
	static uint8_t *replay;
	static uint64_t replay_len;
	memset(v, 0, sizeof *v);
	char crash[400];
	snprintf(crash, sizeof crash, "%s/crash.img", cfg->tmpdir);
	int rc = 0;
	if (cfg->e2fsck && (rc = crash_dev_save(dev, crash)))
		return rc;
	struct jbd_recovery_info info;
	rc = ext3_journal_recover(dev, 0, &info, NULL);
	if (rc) {
		char msg[160], out[400], sum[100] = "";
		snprintf(msg, sizeof msg, "%s", err_last(rc));
		int erc = -1;
		if (cfg->e2fsck) {
			snprintf(out, sizeof out, "%s/e2fsck.out", cfg->tmpdir);
			erc = crash_e2fsck_run("-y", "-Ejournal_only", crash, out);
			crash_e2fsck_summary(out, sum, sizeof sum);
			v->e2fsck_ran = true;
		}
		crash_verdict_add(v, CK_RECOVERY, "nostall's journal replay failed: %s%s%.*d%s%s", msg,
				  erc < 0 ? "" : "; e2fsck -E journal_only exit ", erc < 0 ? 0 : 1, erc < 0 ? 0 : erc,
				  *sum ? ": " : "", sum);
		return 0;
	}
	if (cfg->e2fsck) {
		if (replay_len != CRASH_IMAGE_BYTES) {
			free(replay);
			replay_len = (replay = malloc(CRASH_IMAGE_BYTES)) ? CRASH_IMAGE_BYTES : 0;
		}
		if (!replay)
			return -ENOMEM;
		if ((rc = dev_read_all(dev, replay)))
			return rc;
	}
	v->orphans = sb_last_orphan(dev, &rc) != 0;
	if (rc)
		return rc;
	if (v->orphans) {
		/* The mount after a crash is made with the options of the one
		 * that crashed (one fstab line), so the cleanup's commits take
		 * the same journal path (e.g. journal_async_commit's); the
		 * replay above needs none of them (it reads the journal
		 * superblock's features). */
		char opts[48 + CRASH_OPTS_MAX];
		snprintf(opts, sizeof opts, "data=%s%s%s", cfg->mode, cfg->opts && *cfg->opts ? "," : "",
			 cfg->opts ? cfg->opts : "");
		struct nostall_fs *fs;
		rc = nostall_mount_dev(dev, opts, 0, &fs);
		if (!rc)
			rc = nostall_umount(fs);
		if (rc) {
			crash_verdict_add(v, CK_RECOVERY, "nostall's orphan cleanup (a read-write mount) failed: %s",
					  nostall_errmsg(rc));
			return 0;
		}
	}
	struct tree t = { 0 };
	struct nostall_statfs sf;
	struct nostall_fs *fs = NULL;
	rc = mount_walk(dev, &t, &sf, &fs);
	if (rc) {
		crash_verdict_add(v, CK_RECOVERY, "the recovered image does not mount or read: %s", nostall_errmsg(rc));
		tree_free(&t);
		return 0;
	}
	rc = check_tree(fs, e, &t, v);
	int urc = nostall_umount(fs);
	if (!rc && urc)
		rc = urc;
	if (rc) {
		crash_verdict_add(v, CK_FSCK, "reading the recovered image failed: %s", nostall_errmsg(rc));
		rc = 0;
	}
	if (cfg->e2fsck)
		rc = oracle(cfg, dev, replay, &t, &sf, v->orphans, v);
	tree_free(&t);
	return rc;
}
