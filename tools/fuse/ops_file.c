/* FUSE ops on open files and directories, statfs and the ioctls (sync,
 * data mode, inode flags) (docs/fuse.md).
 *
 * Durability is ext3's, per call: close(2) sends no flush (FOPEN_NOFLUSH,
 * file_opened), as ext3 has none; with -o close_flush or the writeback
 * cache, flush (every close(2)) is ext3's release step and reports the
 * file's pending write error; release is the release step and closes the
 * handle; fsync/fdatasync commit this inode's transaction (and its data
 * in ordered mode) with nostall_fsync, never the whole filesystem; fsyncdir
 * commits the directory's. None of them answers ENOSYS: the kernel would
 * then skip every later call of that kind. The whole-filesystem commit is
 * `nostall sync` (NOSTALL_IOC_SYNC) and the periodic commit (commit=N). */
#include "fuse_int.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/statvfs.h>

/* ---- the handle table ---- */

void nfuse_handle_add(struct nfuse *nf, struct nfuse_fh *h)
{
	pthread_mutex_lock(&nf->hlock);
	h->next = nf->handles.next;
	h->prev = &nf->handles;
	h->next->prev = h;
	nf->handles.next = h;
	pthread_mutex_unlock(&nf->hlock);
}

void nfuse_handle_del(struct nfuse *nf, struct nfuse_fh *h)
{
	pthread_mutex_lock(&nf->hlock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	pthread_mutex_unlock(&nf->hlock);
}

/* A WRITE replies before its throttle and holds h->lock until the
 * throttle ends; the kernel may send RELEASE (or end the session) as soon
 * as the reply is in: wait for that WRITE before closing or freeing h (its
 * unlock wrote to freed memory, a libfuse request's mutex). */
static void handle_quiesce(struct nfuse_fh *h)
{
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->lock);
}

static void handle_free(struct nfuse_fh *h)
{
	handle_quiesce(h);
	if (h->f) {
		nostall_flush(h->f);
		nostall_close(h->f);
	}
	nostall_closedir(h->d);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void nfuse_handles_close_all(struct nfuse *nf)
{
	for (;;) {
		pthread_mutex_lock(&nf->hlock);
		struct nfuse_fh *h = nf->handles.next;
		if (h == &nf->handles) {
			pthread_mutex_unlock(&nf->hlock);
			return;
		}
		h->prev->next = h->next;
		h->next->prev = h->prev;
		pthread_mutex_unlock(&nf->hlock);
		handle_free(h);
	}
}

static struct nfuse_fh *fh_of(struct fuse_file_info *fi)
{
	return (struct nfuse_fh *)(uintptr_t)fi->fh;
}

static struct nfuse_fh *handle_new(struct nfuse *nf, struct nostall_file *f, struct nostall_dir *d)
{
	struct nfuse_fh *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->f = f;
	h->d = d;
	h->dir = d != NULL;
	pthread_mutex_init(&h->lock, NULL);
	nfuse_handle_add(nf, h);
	return h;
}

/* ---- files ---- */

/* open(2) flags to the library's. The kernel computes O_APPEND offsets
 * itself (under the inode lock, from its size), so the library writes at
 * the offset given (NOSTALL_PWRITE_AT); O_APPEND stays for the open's
 * append-only (chattr +a) check. With the writeback cache the kernel also
 * reads pages of files opened write-only: they are opened read-write here. */
static unsigned open_flags(struct nfuse *nf, int flags)
{
	flags &= ~(O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW);
	if (nf->o.writeback_cache && (flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return nostall_oflags_from_posix(flags);
}

static void file_opened(fuse_req_t req, struct nfuse *nf, struct nostall_file *f,
			struct fuse_file_info *fi, const struct nostall_stat *created)
{
	struct nfuse_fh *h = handle_new(nf, f, NULL);
	if (!h) {
		nostall_close(f);
		if (created)
			nostall_forget(nf->fs, created->ino, 1);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)h;
	/* The kernel's page cache stays valid across opens: nothing but this
	 * mount changes the image (docs/fuse.md, "Caching"). */
	fi->keep_cache = 1;
	/* No FLUSH on close(2) (FOPEN_NOFLUSH; the kernel ignores it with the
	 * writeback cache, whose close must send the dirty pages): ext3 has
	 * no flush method, its close(2) does nothing but drop the reference,
	 * and the last one is the release step, which RELEASE performs
	 * (nostall_close). A round trip per close saved (docs/fuse.md,
	 * "Performance notes"); -o close_flush brings FLUSH back, and with it
	 * a pending write error reported by close(2). */
	if (!nf->o.close_flush)
		fi->noflush = 1;
	int rc;
	if (created) {
		struct fuse_entry_param e;
		nfuse_entry_fill(nf, created, &e);
		rc = fuse_reply_create(req, &e, fi);
		if (rc < 0)
			nostall_forget(nf->fs, created->ino, 1);
	} else {
		rc = fuse_reply_open(req, fi);
	}
	if (rc < 0) { /* interrupted: the kernel will not release it */
		nfuse_handle_del(nf, h);
		handle_free(h);
	}
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_file *f;
	int rc = nostall_open_ino(nf->fs, nfuse_to_ext3(ino), open_flags(nf, fi->flags), &f);
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		file_opened(req, nf, f, fi, NULL);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct nfuse *nf = nfuse_of(req);
	uint64_t dir = nfuse_to_ext3(parent);
	uint32_t m = S_IFREG | (mode & 07777);
	int rc = nfuse_name_check(name);
	if (rc) {
		nfuse_reply_rc(req, rc);
		return;
	}
	unsigned fl = open_flags(nf, fi->flags) | NOSTALL_O_CREAT;
	struct nostall_stat st;
	struct nostall_file *f = NULL;
	nfuse_cred_from_req(req);
	/* The library applies the umask or inherits the default ACL, in the
	 * creating transaction; a file that exists already (made meanwhile
	 * through another handle) is opened as it is. */
	rc = nostall_create_at(nf->fs, dir, name, fl, m & 07777, &st, &f);
	nostall_cred_reset();
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		file_opened(req, nf, f, fi, &st);
}

/* A loop thread's read buffer, grown to the largest read (at most
 * max_pages, 1 MiB): no allocation per request; freed when the thread
 * ends (the key's destructor). */
struct rbuf {
	size_t size;
	char data[];
};
static pthread_key_t rbuf_key;
static pthread_once_t rbuf_once = PTHREAD_ONCE_INIT;

static void rbuf_key_make(void)
{
	pthread_key_create(&rbuf_key, free);
}

static char *rbuf_get(size_t size)
{
	pthread_once(&rbuf_once, rbuf_key_make);
	struct rbuf *b = pthread_getspecific(rbuf_key);
	if (b && b->size >= size)
		return b->data;
	struct rbuf *nb = malloc(sizeof *nb + size);
	if (!nb)
		return NULL;
	nb->size = size;
	pthread_setspecific(rbuf_key, nb);
	free(b);
	return nb->data;
}

/* A READ's reply goes straight from where the library holds the bytes
 * (nostall_pread_sink): a streaming read's data is written to /dev/fuse
 * out of the per-handle readahead segments, without first being copied
 * into the thread's buffer (docs/fuse.md, "Streaming reads"). */
struct read_reply {
	fuse_req_t req;
	bool sent;
};

static int read_reply_send(void *arg, const struct iovec *iov, int iovcnt)
{
	struct read_reply *rr = arg;
	rr->sent = true;
	/* A failed reply (the request was interrupted) is the kernel's to
	 * handle; the read itself succeeded. */
	(void)fuse_reply_iov(rr->req, iov, iovcnt);
	return 0;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char *buf = rbuf_get(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	struct read_reply rr = { .req = req };
	ssize_t n = nostall_pread_sink(fh_of(fi)->f, buf, size, (uint64_t)off, read_reply_send, &rr);
	if (n < 0 && !rr.sent)
		nfuse_reply_rc(req, (int)n);
}

/* Set-id bits on write: with HANDLE_KILLPRIV_V2 (killpriv.c) the kernel
 * flags the WRITE of a caller without CAP_FSETID and the daemon drops the
 * bits first (nfuse_setid_kill); without it the kernel drops them itself
 * with a SETATTR before the write. Either way the library is told to
 * leave them (NOSTALL_PWRITE_KEEP_SETID): bits still set belong to a
 * privileged writer and stay, as on ext3.
 *
 * The reply goes before the dirty-page throttle (docs/fuse.md, "Streaming
 * writes"): when the reply is sent the data is in the library's cache and
 * its blocks allocated (ENOSPC and EFBIG are reported as before), and the
 * wait for writeback over the dirty limit then overlaps the kernel's copy
 * of the writer's next write. The writer is still held back as before:
 * the handle's lock is held until the throttle ends, so its next WRITE -
 * read by another thread once the monitor has handed the reader role on
 * (after handoff_us, as for any slow request: an fsync beside the streamer
 * is not kept waiting) - waits for this throttle before writing more.
 * Without that gate a throttle longer than handoff_us let the streamer run
 * ahead on a second thread (fsync p99 beside it rose, docs/fuse.md). */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct nfuse *nf = nfuse_of(req);
	struct nfuse_fh *h = fh_of(fi);
	pthread_mutex_lock(&h->lock);
	/* the writer's credentials decide whether the root-reserved blocks may
	 * be allocated (ext3_has_free_blocks); the daemon itself runs as root */
	nfuse_cred_from_req(req);
	/* setuid/setgid: the kernel's business (it sends a SETATTR first),
	 * unless KILLPRIV_V2 hands it to us with the WRITE's flag (killpriv.c) */
	ssize_t n = 0;
	if (nf->killpriv_v2 && nfuse_write_kills_setid())
		n = nfuse_setid_kill(req, nfuse_to_ext3(ino));
	if (!n)
		n = nostall_pwrite_flags(h->f, buf, size, (uint64_t)off,
					 NOSTALL_PWRITE_NOTHROTTLE | NOSTALL_PWRITE_KEEP_SETID | NOSTALL_PWRITE_AT);
	nostall_cred_reset();
	if (n < 0)
		nfuse_reply_rc(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
	if (n > 0)
		nostall_throttle(nf->fs);
	pthread_mutex_unlock(&h->lock);
}

/* SEEK_DATA / SEEK_HOLE (the kernel answers the other whences itself):
 * without this op it would call every file all data, and cp, tar and
 * rsync would read the holes of sparse files as zeroes. The kernel asks
 * without writing back what it caches, so the answer is the library's view:
 * with the writeback cache that misses cached writes (and sizes: stress-ng
 * got ENXIO below the size it had written), so there ENOSYS makes the
 * kernel answer itself from then on (all data up to its size). Without it
 * writes reach the library before they return; only pages dirtied through
 * a shared mmap wait in the kernel until written back (docs/fuse.md). */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	if (nfuse_of(req)->o.writeback_cache) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	struct nfuse_fh *h = fh_of(fi);
	pthread_mutex_lock(&h->lock);
	int64_t r = nostall_lseek(h->f, off, whence);
	pthread_mutex_unlock(&h->lock);
	if (r < 0)
		nfuse_reply_rc(req, (int)r);
	else
		fuse_reply_lseek(req, r);
}

/* fallocate(2): the kernel passes the mode bits through (Linux's
 * FALLOC_FL_* values, the library's) after its own checks; it writes back
 * and drops its cached pages of a punched or zeroed range around the call
 * and updates its size for the modes that grow it. */
static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct nfuse_fh *h = fh_of(fi);
	pthread_mutex_lock(&h->lock);
	int rc = nostall_fallocate(h->f, mode, off, len);
	pthread_mutex_unlock(&h->lock);
	nfuse_reply_rc(req, rc);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	nfuse_reply_rc(req, nostall_flush(fh_of(fi)->f));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nfuse_fh *h = fh_of(fi);
	nfuse_handle_del(nfuse_of(req), h);
	handle_quiesce(h);
	nostall_close(h->f);
	h->f = NULL;
	handle_free(h);
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct nfuse_fh *h = fi ? fh_of(fi) : NULL;
	int rc = h && h->f ? nostall_fsync(h->f, datasync)
			   : nostall_fsync_ino(nfuse_of(req)->fs, nfuse_to_ext3(ino), datasync);
	nfuse_reply_rc(req, rc);
}

/* ---- directories ---- */

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_dir *d;
	int rc = nostall_opendir_ino(nf->fs, nfuse_to_ext3(ino), &d);
	if (rc) {
		nfuse_reply_rc(req, rc);
		return;
	}
	struct nfuse_fh *h = handle_new(nf, NULL, d);
	if (!h) {
		nostall_closedir(d);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)h;
	if (fuse_reply_open(req, fi) < 0) {
		nfuse_handle_del(nf, h);
		handle_free(h);
	}
}

/* readdir and readdirplus: entries from the cookie off on; an entry that
 * does not fit is read again next time (the iterator is put back). Plus:
 * every entry but "." and ".." takes one lookup reference, dropped again
 * when it does not fit. */
static void read_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, bool plus)
{
	struct nfuse *nf = nfuse_of(req);
	struct nfuse_fh *h = fh_of(fi);
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	int rc = 0;
	pthread_mutex_lock(&h->lock);
	if (nostall_dir_tell(h->d) != (uint64_t)off)
		rc = nostall_dir_seek(h->d, (uint64_t)off);
	struct nostall_dirent de;
	while (!rc) {
		uint64_t at = nostall_dir_tell(h->d);
		rc = nostall_dir_next(h->d, &de);
		if (rc <= 0)
			break;
		rc = 0;
		bool dots = !strcmp(de.name, ".") || !strcmp(de.name, "..");
		struct fuse_entry_param e = { 0 };
		struct nostall_stat st;
		size_t n;
		if (plus && !dots) {
			int r = nostall_lookup_ref_ino(nf->fs, de.ino, &st);
			if (r == -ENOENT)
				continue; /* gone since the entry was read */
			if (r) {
				rc = r;
				break;
			}
			nfuse_entry_fill(nf, &st, &e);
		} else {
			e.attr.st_ino = nfuse_to_fuse(de.ino);
			e.attr.st_mode = (mode_t)de.type << 12;
		}
		if (plus)
			n = fuse_add_direntry_plus(req, buf + used, size - used, de.name, &e,
						   (off_t)de.next_pos);
		else
			n = fuse_add_direntry(req, buf + used, size - used, de.name, &e.attr,
					      (off_t)de.next_pos);
		if (n > size - used) {
			if (plus && !dots)
				nostall_forget(nf->fs, st.ino, 1);
			rc = nostall_dir_seek(h->d, at);
			break;
		}
		used += n;
	}
	pthread_mutex_unlock(&h->lock);
	/* an error after some entries: give those; the next call reports it */
	if (rc < 0 && !used)
		nfuse_reply_rc(req, rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	read_dir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	read_dir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nfuse_fh *h = fh_of(fi);
	nfuse_handle_del(nfuse_of(req), h);
	handle_free(h);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	nfuse_reply_rc(req, nostall_fsync_ino(nfuse_of(req)->fs, nfuse_to_ext3(ino), datasync));
}

/* ---- filesystem-wide ---- */

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct nostall_statfs s;
	int rc = nostall_statfs(nfuse_of(req)->fs, &s);
	if (rc) {
		nfuse_reply_rc(req, rc);
		return;
	}
	struct statvfs v = { .f_bsize = s.block_size, .f_frsize = s.block_size,
			     .f_blocks = s.blocks, .f_bfree = s.blocks_free,
			     .f_bavail = s.blocks_avail, .f_files = s.files,
			     .f_ffree = s.files_free, .f_favail = s.files_free,
			     .f_namemax = s.name_max };
	memcpy(&v.f_fsid, s.fsid, sizeof v.f_fsid);
	fuse_reply_statfs(req, &v);
}

/* Both set ioctls' last step: the uid check again (root, or the owner for
 * flags other than immutable and append-only), then the change and the
 * reply. st: the inode's attributes before the change. */
static void flags_set_reply(fuse_req_t req, fuse_ino_t ino, const struct nostall_stat *st, uint32_t v)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	if (ctx->uid != 0 && (ctx->uid != st->uid || ((v ^ st->flags) & (NOSTALL_FL_IMMUTABLE | NOSTALL_FL_APPEND)))) {
		fuse_reply_err(req, EPERM);
		return;
	}
	int rc = nostall_setflags_ino(nfuse_of(req)->fs, nfuse_to_ext3(ino), v, NULL);
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

/* FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (lsattr, chattr): the kernel (5.13
 * and later) turns both into these ioctls through its fileattr calls, with
 * a 4-byte int, after its own checks (owner or CAP_FOWNER;
 * CAP_LINUX_IMMUTABLE for immutable and append-only), so the daemon only
 * checks ownership again. */
static void flags_ioctl(fuse_req_t req, fuse_ino_t ino, bool set, const void *in_buf,
			size_t in_bufsz, size_t out_bufsz)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	int rc = nostall_stat_ino(nf->fs, nfuse_to_ext3(ino), &st);
	if (rc) {
		nfuse_reply_rc(req, rc);
		return;
	}
	if (!set) {
		/* an int, as ext3 writes it: callers pass an int despite the
		 * long in _IOR (lsattr, chattr), and the kernel copies back what
		 * the reply holds */
		uint32_t v = st.flags & NOSTALL_FL_USER_VISIBLE;
		fuse_reply_ioctl(req, 0, &v, out_bufsz < sizeof v ? out_bufsz : sizeof v);
		return;
	}
	uint32_t v = 0;
	if (in_bufsz < sizeof v) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&v, in_buf, sizeof v);
	flags_set_reply(req, ino, &st, v);
}

/* FS_IOC_FSGETXATTR / FS_IOC_FSSETXATTR: the same flags in their xflags
 * form. The kernel reads the old flags this way before any set (so
 * FS_IOC_SETFLAGS needs it too); xfs_io's chattr sets them this way. */
static const struct {
	uint32_t x, fl;
} xflag_map[] = {
	{ FS_XFLAG_IMMUTABLE, NOSTALL_FL_IMMUTABLE }, { FS_XFLAG_APPEND, NOSTALL_FL_APPEND },
	{ FS_XFLAG_SYNC, NOSTALL_FL_SYNC },           { FS_XFLAG_NOATIME, NOSTALL_FL_NOATIME },
	{ FS_XFLAG_NODUMP, NOSTALL_FL_NODUMP },
};

static void xattr_ioctl(fuse_req_t req, fuse_ino_t ino, bool set, const void *in_buf,
			size_t in_bufsz, size_t out_bufsz)
{
	struct nfuse *nf = nfuse_of(req);
	struct nostall_stat st;
	int rc = nostall_stat_ino(nf->fs, nfuse_to_ext3(ino), &st);
	if (rc) {
		nfuse_reply_rc(req, rc);
		return;
	}
	size_t nmap = sizeof xflag_map / sizeof xflag_map[0];
	struct fsxattr fa = { 0 };
	if (!set) {
		for (size_t i = 0; i < nmap; i++)
			if (st.flags & xflag_map[i].fl)
				fa.fsx_xflags |= xflag_map[i].x;
		fuse_reply_ioctl(req, 0, &fa, out_bufsz < sizeof fa ? out_bufsz : sizeof fa);
		return;
	}
	if (in_bufsz < sizeof fa) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&fa, in_buf, sizeof fa);
	uint32_t fl = st.flags, known = 0;
	for (size_t i = 0; i < nmap; i++) {
		known |= xflag_map[i].x;
		fl = (fa.fsx_xflags & xflag_map[i].x) ? fl | xflag_map[i].fl : fl & ~xflag_map[i].fl;
	}
	if ((fa.fsx_xflags & ~known) || fa.fsx_projid) { /* no project quotas on ext3 */
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	flags_set_reply(req, ino, &st, fl);
}

/* NOSTALL_IOC_SYNC: what sync(2) would do if it reached a FUSE daemon.
 * NOSTALL_IOC_DATA_MODE: the data mode in use (nostall info MOUNTPOINT).
 * FS_IOC_GETFLAGS / FS_IOC_SETFLAGS and FS_IOC_FSGETXATTR /
 * FS_IOC_FSSETXATTR: the inode flags; FS_IOC_GETVERSION: its generation. */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	if (cmd == FS_IOC_GETFLAGS || cmd == FS_IOC32_GETFLAGS || cmd == FS_IOC_SETFLAGS ||
	    cmd == FS_IOC32_SETFLAGS) {
		flags_ioctl(req, ino, cmd == FS_IOC_SETFLAGS || cmd == FS_IOC32_SETFLAGS, in_buf,
			    in_bufsz, out_bufsz);
		return;
	}
	if (cmd == FS_IOC_GETVERSION || cmd == FS_IOC32_GETVERSION) { /* lsattr -v: i_generation */
		struct nostall_stat st;
		int rc = nostall_stat_ino(nfuse_of(req)->fs, nfuse_to_ext3(ino), &st);
		uint32_t v = st.generation; /* an int, as ext3 writes it (not the long _IOR says) */
		if (rc)
			nfuse_reply_rc(req, rc);
		else
			fuse_reply_ioctl(req, 0, &v, out_bufsz < sizeof v ? out_bufsz : sizeof v);
		return;
	}
	if (cmd == FS_IOC_FSGETXATTR || cmd == FS_IOC_FSSETXATTR) {
		xattr_ioctl(req, ino, cmd == FS_IOC_FSSETXATTR, in_buf, in_bufsz, out_bufsz);
		return;
	}
	if (cmd == NOSTALL_IOC_DATA_MODE) {
		struct nostall_info info;
		char mode[16] = { 0 };
		int rc = nostall_info(nfuse_of(req)->fs, &info);
		if (rc) {
			nfuse_reply_rc(req, rc);
			return;
		}
		snprintf(mode, sizeof mode, "%s", info.data_mode);
		fuse_reply_ioctl(req, 0, mode, out_bufsz < sizeof mode ? out_bufsz : sizeof mode);
		return;
	}
	if (cmd != NOSTALL_IOC_SYNC) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	int rc = nostall_sync(nfuse_of(req)->fs);
	if (rc)
		nfuse_reply_rc(req, rc);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

void nfuse_ops_file(struct fuse_lowlevel_ops *ops)
{
	ops->open = op_open;
	ops->create = op_create;
	ops->read = op_read;
	ops->write = op_write;
	ops->flush = op_flush;
	ops->release = op_release;
	ops->fsync = op_fsync;
	ops->opendir = op_opendir;
	ops->readdir = op_readdir;
	ops->readdirplus = op_readdirplus;
	ops->releasedir = op_releasedir;
	ops->fsyncdir = op_fsyncdir;
	ops->statfs = op_statfs;
	ops->ioctl = op_ioctl;
	ops->lseek = op_lseek;
	ops->fallocate = op_fallocate;
}
