/* The FUSE daemon behind `nostall mount` (docs/fuse.md): libfuse3's
 * low-level API over the public library (include/nostall/nostall.h).
 *
 * Files (one seam each):
 *   mount_main.c   cmd_mount: arguments, daemonizing, the session and its
 *                  teardown (unmount flushes, empties the journal)
 *   mount_opts.c   the -o option split: library / FUSE mount / daemon
 *   ops_inode.c    lookup, forget, getattr, setattr, namespace changes
 *   ops_file.c     open/create/read/write/flush/release/fsync, directories,
 *                  statfs, the sync ioctl
 *   ops_xattr.c    xattrs and POSIX ACLs (VFS <-> ext3 on-disk format,
 *                  chmod's mask update, default ACL inheritance)
 *   cmd_umount.c   nostall umount / nostall sync
 *
 * Inode numbers: FUSE's are ext3's, except FUSE_ROOT_ID (1) which is ext3's
 * root (2); ext3 inode 1 (bad blocks) is never visible.
 *
 * Threads: the session loop is multi-threaded; every op runs on a loop
 * thread and calls the library, which has no filesystem-wide lock. The
 * daemon's own state is the table of open handles (nf->hlock, a leaf lock:
 * no library call is made under it) and per-directory-handle mutexes
 * (readdir's seek+read pairs). Credentials are thread-local in the library
 * (nostall_cred_set): each op that creates an inode sets them first. */
#ifndef NOSTALL_TOOLS_FUSE_INT_H
#define NOSTALL_TOOLS_FUSE_INT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "nostall/nostall.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "fuse_ioc.h" /* NOSTALL_IOC_SYNC */

/* The mount's readahead unless -o readahead= says otherwise: docs/fuse.md,
 * "Capabilities" (the kernel's default for a FUSE mount is 128 KiB). */
#define NFUSE_READ_AHEAD_DEFAULT (4u << 20)
/* The library's file_readahead= under the daemon unless given (mount_opts.c). */
#define NFUSE_FILE_READAHEAD_DEFAULT "4M"

/* What -o decided (mount_opts.c). */
struct nfuse_opts {
	char *lib;              /* options for nostall_mount ("" = defaults) */
	char *fuse;             /* options for the kernel mount (fuse_session_new -o) */
	unsigned mount_flags;   /* NOSTALL_MOUNT_RDONLY */
	bool ro;
	bool writeback_cache;   /* FUSE_CAP_WRITEBACK_CACHE (docs/fuse.md: the rules) */
	bool acl;               /* FUSE_CAP_POSIX_ACL (default on; noacl turns it off) */
	bool allow_other;
	bool debug;
	bool close_flush;       /* close(2) sends FLUSH (off: FOPEN_NOFLUSH, ops_file.c) */
	bool fakeroot;          /* every requester is root inside the image (no
				 * default_permissions; docs/fuse.md "Credentials") */
	double attr_timeout, entry_timeout, negative_timeout;
	unsigned threads;       /* the session loop's thread limit */
	unsigned handoff_us;    /* a request running this long hands the reader role on (loop.c) */
	unsigned spin_us;       /* the reader retries its read this long before blocking (loop.c) */
	bool uring;             /* take FUSE over io_uring when the kernel offers it (-o uring, uring.c) */
	bool uring_idle;        /* its queue threads run SCHED_IDLE (uring.c) */
	uint64_t read_ahead;    /* the mount's readahead in bytes, set after INIT
				 * (mount_main.c); 0 leaves the kernel's */
	bool read_ahead_set;    /* given with -o: a refusal is reported */
};

/* Split OPTS (may be NULL). Returns 0 or a negative errno with the message
 * in nostall_errmsg(); owner_root: the caller is root (allow_other by
 * default). fsname goes into the kernel mount's source field. */
int nfuse_opts_parse(const char *opts, bool owner_root, const char *fsname,
		     struct nfuse_opts *o);
void nfuse_opts_free(struct nfuse_opts *o);

/* An open file or directory (fi->fh). */
struct nfuse_fh {
	struct nfuse_fh *prev, *next; /* nf->handles, under nf->hlock */
	bool dir;
	struct nostall_file *f;
	struct nostall_dir *d;
	pthread_mutex_t lock;         /* directories: a seek + reads is one step;
				       * files: one WRITE at a time, its
				       * throttle included (op_write) */
};

struct nfuse {
	struct nostall_fs *fs;
	struct fuse_session *se;
	struct nfuse_opts o;
	int ready_fd;                 /* daemon mode: report "mounted" here at INIT, -1 after */
	pthread_mutex_t hlock;
	struct nfuse_fh handles;      /* list head (circular) */
	bool killpriv_v2;             /* INIT granted FUSE_HANDLE_KILLPRIV_V2 (set before other requests) */
	bool uring;                   /* INIT granted FUSE over io_uring (uring.c) */
};

static inline struct nfuse *nfuse_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}
static inline uint64_t nfuse_to_ext3(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? NOSTALL_ROOT_INO : (uint64_t)ino;
}
static inline fuse_ino_t nfuse_to_fuse(uint64_t ino)
{
	return ino == NOSTALL_ROOT_INO ? FUSE_ROOT_ID : (fuse_ino_t)ino;
}

/* Reply with a library result: rc is a negative errno. */
static inline void nfuse_reply_rc(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

void nfuse_stat_to_host(const struct nostall_stat *in, struct stat *out);
/* Fill e from st with the mount's timeouts. */
void nfuse_entry_fill(struct nfuse *nf, const struct nostall_stat *st, struct fuse_entry_param *e);
/* Reply to a request that took one lookup reference (lookup, mknod, ...);
 * the reference is dropped again when the kernel did not get the reply. */
void nfuse_reply_entry_ref(fuse_req_t req, const struct nostall_stat *st);
/* The requester's credentials for this thread's library calls
 * (nostall_cred_use; docs/fuse.md, "Credentials"): its uid, gid and umask,
 * every capability for uid 0 and none for others (the kernel does not send
 * them), NOSTALL_CRED_NOPERM (the kernel checked access:
 * default_permissions); with -o fakeroot root's, whoever asks. _groups
 * reads the supplementary groups too (a /proc read): where the library
 * decides on group membership (the setgid bit after an ACL change). Undo
 * with nostall_cred_reset(). */
void nfuse_cred_from_req(fuse_req_t req);
void nfuse_cred_from_req_groups(fuse_req_t req);
/* -ENAMETOOLONG for a name over 255 bytes (the kernel's FUSE layer lets
 * names of up to 1024 bytes through). */
int nfuse_name_check(const char *name);

/* Handles (ops_file.c). */
void nfuse_handle_add(struct nfuse *nf, struct nfuse_fh *h);
void nfuse_handle_del(struct nfuse *nf, struct nfuse_fh *h);
/* Close every handle left (teardown after a signal: the kernel did not
 * release them). */
void nfuse_handles_close_all(struct nfuse *nf);

/* The session loop (loop.c): leader/followers, up to max_threads, the
 * reader role handed on when a request has run handoff_us or waits for the
 * disk by design. after_init (may be NULL) runs once, on the thread that
 * served INIT, after the reply went out: what the kernel sets from INIT's
 * reply (the mount's readahead) can be changed from then on. Returns when
 * the session ends: 0, or the negative errno of the read that ended it. */
struct nfuse_loop_cfg {
	unsigned max_threads, handoff_us, spin_us;
	void (*after_init)(void *arg);
	void *arg;
	const bool *uring_granted;  /* set by INIT's reply: start the io_uring queues (uring.c) */
	size_t uring_payload;       /* their payload buffers (the mount's max_write) */
	bool uring_idle;            /* their threads run SCHED_IDLE (-o uring_idle) */
};
int nfuse_loop_run(struct fuse_session *se, const struct nfuse_loop_cfg *cfg);
struct fuse_in_header;
/* The raw request (header, then its arguments) the calling thread is
 * serving, NULL outside a request: for the fields libfuse 3.14 does not
 * pass on (fuse_write_in.write_flags). */
const struct fuse_in_header *nfuse_loop_request(void);

/* FUSE over io_uring (uring.c, docs/fuse.md "io_uring"): INIT's reply
 * takes it when the kernel offers it and -o uring (the default) allows;
 * the loop then starts one queue thread per CPU. */
struct nfuse_uring;
struct fuse_init_in;
struct fuse_init_out;
struct iovec;
bool nfuse_uring_offered(const struct fuse_init_in *in, size_t len);
void nfuse_uring_grant(struct fuse_init_out *out);
int nfuse_uring_reply(const struct iovec *iov, int count, ssize_t *res);
struct nfuse_uring_cfg {
	int fd;                     /* the session's /dev/fuse descriptor */
	size_t max_payload;         /* at least the kernel's (max_write, max_pages) */
	bool idle;                  /* queue threads SCHED_IDLE (-o uring_idle) */
	/* serves one request rebuilt in /dev/fuse's layout, on a queue thread */
	void (*serve)(void *arg, const struct fuse_buf *buf);
	void *arg;
};
/* Start the queue threads; *out is set (and stoppable) even on a partial
 * failure, which /dev/fuse then covers. */
int nfuse_uring_start(const struct nfuse_uring_cfg *cfg, struct nfuse_uring **out);
uint64_t nfuse_uring_served(const struct nfuse_uring *u);
void nfuse_uring_stop(struct nfuse_uring *u);

/* FUSE_HANDLE_KILLPRIV_V2 (killpriv.c, docs/fuse.md "Requests per
 * operation"): after fuse_session_mount, route the session's device I/O
 * through a reader/writer that adds the flag to the INIT reply when the
 * kernel offers it (libfuse 3.14 cannot ask for it). nf->killpriv_v2 says
 * whether it did; the ops then clear setuid/setgid where the kernel asks
 * (nfuse_write_kills_setid, FUSE_SET_ATTR_KILL_SUID on SETATTR). */
int nfuse_killpriv_setup(struct nfuse *nf);
/* Is the caller in group gid (fsgid or supplementary: a /proc read) or
 * root? (ops_xattr.c) */
bool nfuse_in_group_or_root(fuse_req_t req, uint32_t gid);
/* KILLPRIV_V2: drop what a write or truncate by this caller (one without
 * CAP_FSETID: the kernel flagged the request) drops on Linux 6.x:
 * setuid; setgid with group exec, and without it when the caller is
 * outside the file's group (setattr_should_drop_sgid). 0 or -errno.
 * (ops_inode.c) */
int nfuse_setid_kill(fuse_req_t req, uint64_t ino);
/* This WRITE asks the server to drop setuid/setgid (FUSE_WRITE_KILL_SUIDGID:
 * a writer without CAP_FSETID under KILLPRIV_V2). */
bool nfuse_write_kills_setid(void);

/* The op tables, filled by each file (mount_main.c assembles them). */
void nfuse_ops_inode(struct fuse_lowlevel_ops *ops);
void nfuse_ops_file(struct fuse_lowlevel_ops *ops);
void nfuse_ops_xattr(struct fuse_lowlevel_ops *ops);

/* The image file a spec names (file:PATH, PATH, sim:...,file=PATH), made
 * absolute, or NULL (mem:, no file). Caller frees. The library's mount
 * holds an flock on it (dev_lock), which nostall umount waits on. */
char *nfuse_spec_image(const char *spec);

/* The mount on directory mnt (absolute, canonical) in /proc/self/mountinfo:
 * 0 and its type, source and device number "MAJOR:MINOR" (malloc'd, each
 * when asked for), or -ENOENT. */
int nfuse_mountinfo_find(const char *mnt, char **fstype, char **source, char **devnum);

#endif
