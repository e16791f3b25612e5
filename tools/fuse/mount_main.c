/* nostall mount [-f] [-o OPTS] IMAGE|DEVICE-SPEC MOUNTPOINT (docs/fuse.md).
 *
 * Order of work, so that bad input writes nothing and the caller gets one
 * line: options are split (unknown ones fail in nostall_mount's parser
 * before any I/O), the mount point is checked (exists, a directory, not
 * already a mount point), the library mounts the image (it locks it: flock,
 * exclusive for a writable mount, so a second daemon, a CLI command or a
 * kernel mount of it is refused, and `nostall umount` waits on that lock;
 * journal replay when needed), the kernel mount is
 * made, and only when the kernel's INIT has been answered does the parent
 * return 0: the mount is then usable. Without -f the work runs in a child
 * (forked before any thread exists) that reports through a pipe.
 *
 * Teardown, on unmount (umount, fusermount3 -u, nostall umount) or
 * SIGTERM/SIGINT/SIGHUP: the session loop ends, the kernel mount is
 * detached, handles the kernel did not release are closed, and
 * nostall_umount writes everything back, empties the journal and marks the
 * image clean, and lets go of the lock; then the daemon exits. */
#include "fuse_int.h"

#include <linux/fuse.h> /* INIT's request (-o uring) */

#include "../common/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

static const char mount_usage[] =
	"usage: nostall mount [-f] [-o OPTS] IMAGE|DEVICE-SPEC MOUNTPOINT\n"
	"  mounts an ext3 image through FUSE; -f stays in the foreground\n"
	"  OPTS: library options (data=, commit=, cache=, ro, ...), allow_other,\n"
	"  writeback_cache, noacl, attr_timeout=, entry_timeout=, threads= (docs/fuse.md)\n";

/* Until INIT is answered, errors go to the caller (stderr, or the pipe to
 * the waiting parent); afterwards to stderr in the foreground, syslog in
 * the background. */
static int report_fd = 2;
static bool to_syslog;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (to_syslog) {
		syslog(LOG_ERR, "%s", msg);
		return;
	}
	dprintf(report_fd, "nostall mount: %s\n", msg);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct nfuse *nf = userdata;
	/* docs/fuse.md, "Capabilities", has the reason for each. */
	unsigned want = FUSE_CAP_ASYNC_READ | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_READDIRPLUS |
			FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_IOCTL_DIR | FUSE_CAP_CACHE_SYMLINKS |
			FUSE_CAP_ASYNC_DIO | FUSE_CAP_DONT_MASK;
	if (nf->o.acl)
		want |= FUSE_CAP_POSIX_ACL;
	if (nf->o.writeback_cache)
		want |= FUSE_CAP_WRITEBACK_CACHE;
	conn->want |= want & conn->capable;
	conn->want &= ~(unsigned)(FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_ATOMIC_O_TRUNC |
				  FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE);
	if (!(conn->want & FUSE_CAP_POSIX_ACL))
		nf->o.acl = false;
	if (nf->o.writeback_cache && !(conn->want & FUSE_CAP_WRITEBACK_CACHE))
		nf->o.writeback_cache = false;
	conn->max_write = 1u << 20;
	conn->max_read = 0;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->time_gran = 1;
	/* -o uring: INIT's request (served now) says whether the kernel
	 * offers it; a notice, not an error (/dev/fuse serves instead) */
	const struct fuse_in_header *in = nfuse_loop_request();
	bool no_uring = nf->o.uring && !(in && in->len >= sizeof *in &&
					 nfuse_uring_offered((const void *)(in + 1), in->len - sizeof *in));
	static const char no_uring_msg[] = "uring: the kernel does not offer FUSE over io_uring (Linux 6.14+, "
					   "fuse module parameter enable_uring); /dev/fuse serves every request";
	if (nf->ready_fd >= 0) {
		/* the parent returns now; this process leaves the terminal.
		 * After "O", notices for the caller's stderr. */
		if (write(nf->ready_fd, "O", 1) != 1)
			syslog(LOG_ERR, "nostall mount: cannot tell the parent the mount is ready");
		else if (no_uring)
			dprintf(nf->ready_fd, "nostall mount: %s\n", no_uring_msg);
		close(nf->ready_fd);
		nf->ready_fd = -1;
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		to_syslog = true;
	} else if (no_uring) {
		say("%s", no_uring_msg);
	}
}

struct mount_args {
	const char *spec, *mnt;
	char *mnt_abs;
	const char *opts;
	bool foreground;
};

/* The mount's readahead (-o readahead=): the kernel gives a FUSE mount
 * 128 KiB, and INIT's reply can only lower that, so a sequential reader's
 * READs come 128 KiB at a time, one or two in flight. The bdi's
 * read_ahead_kb in sysfs raises it; it takes effect for files opened from
 * then on, and INIT's reply would clamp a value written before it
 * (hence after_init). Writing it needs root: an ordinary user's mount
 * keeps the kernel's value, reported only when readahead= was given. */
struct ra_ctx {
	const char *mnt;
	uint64_t bytes;
	bool report;
};

static void read_ahead_apply(void *arg)
{
	const struct ra_ctx *c = arg;
	if (!c->bytes)
		return;
	char *dev = NULL;
	int rc = nfuse_mountinfo_find(c->mnt, NULL, NULL, &dev);
	if (!rc && !dev)
		rc = -ENOMEM;
	char path[128] = "its device number in /proc/self/mountinfo";
	if (!rc) {
		snprintf(path, sizeof path, "/sys/class/bdi/%s/read_ahead_kb", dev);
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || dprintf(fd, "%llu\n", (unsigned long long)(c->bytes >> 10)) < 0)
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	if (rc && c->report)
		say("readahead: cannot set the mount's readahead (%s): %s; the kernel's stays", path,
		    strerror(-rc));
	free(dev);
}

static int session_run(struct nfuse *nf, const struct mount_args *a)
{
	struct fuse_lowlevel_ops ops = { .init = op_init };
	nfuse_ops_inode(&ops);
	nfuse_ops_file(&ops);
	nfuse_ops_xattr(&ops);
	char *argv[] = { "nostall", "-o", nf->o.fuse, "-d", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(nf->o.debug ? 4 : 3, argv);
	nf->se = fuse_session_new(&args, &ops, sizeof ops, nf);
	fuse_opt_free_args(&args); /* libfuse may have copied argv */
	if (!nf->se) {
		say("cannot start the FUSE session (options %s)", nf->o.fuse);
		return -EINVAL;
	}
	int rc = -EIO;
	if (fuse_set_signal_handlers(nf->se) < 0) {
		say("cannot install the signal handlers");
		goto out;
	}
	if (fuse_session_mount(nf->se, a->mnt_abs) < 0) {
		say("cannot mount on %s (is /dev/fuse usable? allow_other needs "
		    "user_allow_other in /etc/fuse.conf for non-root users)", a->mnt_abs);
		goto out_sig;
	}
	rc = nfuse_killpriv_setup(nf);
	if (rc < 0) { /* only ENOMEM: then the session never saw a request */
		say("cannot set up the session's device I/O: %s", strerror(-rc));
		fuse_session_unmount(nf->se);
		goto out_sig;
	}
	rc = -EIO;
	if (!a->foreground && chdir("/") < 0)
		say("chdir /: %s", strerror(errno));
	struct ra_ctx ra = { .mnt = a->mnt_abs, .bytes = nf->o.read_ahead,
			     .report = nf->o.read_ahead_set };
	struct nfuse_loop_cfg lc = { .max_threads = nf->o.threads, .handoff_us = nf->o.handoff_us,
				     .spin_us = nf->o.spin_us, .after_init = read_ahead_apply,
				     .arg = &ra, .uring_granted = &nf->uring, .uring_payload = 1u << 20,
				     .uring_idle = nf->o.uring_idle };
	int lrc = nfuse_loop_run(nf->se, &lc);
	rc = lrc < 0 ? lrc : 0;
	if (lrc < 0)
		say("session loop: %s", strerror(-lrc));
	fuse_session_unmount(nf->se);
out_sig:
	fuse_remove_signal_handlers(nf->se);
out:
	nfuse_handles_close_all(nf);
	fuse_session_destroy(nf->se);
	nf->se = NULL;
	return rc;
}

/* The daemon proper: everything after the checks. ready_fd: the parent's
 * pipe (daemon mode) or -1. Returns the exit status. */
static int daemon_run(const struct mount_args *a, int ready_fd)
{
	/* glibc serves blocks of 128 KiB and more (and, with posix_memalign,
	 * anything whose size plus alignment passes its adaptive threshold)
	 * by mmap and gives them back by munmap: the page cache's 512 KiB
	 * writeback buffers beyond its small pool cost an mmap, page faults on
	 * first touch and a munmap with a TLB shoot-down to every CPU the
	 * daemon's threads ran on, several times per small file written back.
	 * Kept in the heap instead (docs/fuse.md, "Performance notes"); free
	 * space at a heap's top is given back past 8 MiB.
	 *
	 * One arena (the main one, grown by brk with 1 MiB of slack): a
	 * thread's own arena grows page by page, one mprotect (a VMA split and
	 * merge) per page it passes, and the daemon's memory grows with every
	 * inode the kernel holds a lookup on: about one mprotect per file
	 * created (strace -c, issue 36). Each thread's tcache still serves the
	 * small blocks without the arena's lock. */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_TOP_PAD, 1 << 20);
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
	struct nfuse nf = { .ready_fd = ready_fd };
	pthread_mutex_init(&nf.hlock, NULL);
	nf.handles.next = nf.handles.prev = &nf.handles;
	char *img = nfuse_spec_image(a->spec);
	int rc = nfuse_opts_parse(a->opts, geteuid() == 0, img ? img : a->spec, &nf.o);
	free(img);
	if (rc) {
		say("%s", nostall_errmsg(rc));
		return 2;
	}
	/* The library locks the image (flock: exclusive when writable; a
	 * second daemon, a CLI command or a kernel mount is refused) until
	 * its unmount has left it clean: `nostall umount` waits on that lock. */
	rc = nostall_mount(a->spec, nf.o.lib, nf.o.mount_flags, &nf.fs);
	if (rc)
		say("%s: %s", a->spec, nostall_errmsg(rc));
	else
		nostall_lookup_refs_live(nf.fs, 1); /* fstat & co. after unlink */
	if (!rc) {
		/* requests without their own credentials (nfuse_cred_from_req):
		 * the kernel checked them; the daemon's own capabilities, or
		 * root's with -o fakeroot (docs/fuse.md, "Credentials") */
		uint32_t groups[NOSTALL_CRED_GROUPS_MAX];
		struct nostall_cred cr;
		nostall_cred_self(&cr, groups, NOSTALL_CRED_GROUPS_MAX);
		if (nf.o.fakeroot)
			cr = (struct nostall_cred){ .caps = NOSTALL_CAP_ALL };
		cr.flags = NOSTALL_CRED_NOPERM;
		rc = nostall_cred_default(nf.fs, &cr);
	}
	if (!rc) {
		rc = session_run(&nf, a);
		int urc = nostall_umount(nf.fs);
		if (urc) {
			say("unmounting %s: %s (the next mount replays the journal)", a->spec,
			    nostall_errmsg(urc));
			rc = urc;
		}
	}
	nfuse_opts_free(&nf.o);
	pthread_mutex_destroy(&nf.hlock);
	return rc ? 1 : 0;
}

/* Already a mount point: the same device as its parent's and not the root
 * of one? /proc/self/mountinfo is the authority. */
static int mountpoint_check(const char *mnt, char **abs_out)
{
	struct stat st;
	if (stat(mnt, &st) < 0) {
		int e = errno;
		say("mount point %s: %s", mnt, e == ENOENT ? "does not exist" : strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		say("mount point %s: not a directory", mnt);
		return -ENOTDIR;
	}
	char *abs = realpath(mnt, NULL);
	if (!abs) {
		int e = errno;
		say("mount point %s: %s", mnt, strerror(e));
		return -e;
	}
	if (nfuse_mountinfo_find(abs, NULL, NULL, NULL) == 0) {
		say("mount point %s: busy (already a mount point)", abs);
		free(abs);
		return -EBUSY;
	}
	*abs_out = abs;
	return 0;
}

static int parse_args(int argc, char **argv, struct mount_args *a, char **opts_buf)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t olen = 0;
	optind = 1;
	int ch;
	while ((ch = getopt_long(argc, argv, "fo:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f': a->foreground = true; break;
		case 'o': {
			/* several -o are joined */
			size_t n = strlen(optarg);
			char *b = realloc(*opts_buf, olen + n + 2);
			if (!b)
				return 1;
			if (olen)
				b[olen++] = ',';
			memcpy(b + olen, optarg, n + 1);
			olen += n;
			*opts_buf = b;
			break;
		}
		case 'h': fputs(mount_usage, stdout); return 0;
		default: fputs(mount_usage, stderr); return 2;
		}
	}
	if (argc - optind != 2) {
		fputs(mount_usage, stderr);
		return 2;
	}
	a->spec = argv[optind];
	a->mnt = argv[optind + 1];
	a->opts = *opts_buf;
	return -1;
}

int cmd_mount(int argc, char **argv)
{
	struct mount_args a = { 0 };
	char *opts = NULL;
	int st = parse_args(argc, argv, &a, &opts);
	if (st >= 0) {
		free(opts);
		return st;
	}
	/* options first: an unknown kernel/daemon option never reaches the image */
	struct nfuse_opts probe;
	int rc = nfuse_opts_parse(a.opts, geteuid() == 0, "x", &probe);
	if (rc) {
		say("%s", nostall_errmsg(rc));
		free(opts);
		return 2;
	}
	nfuse_opts_free(&probe);
	if (mountpoint_check(a.mnt, &a.mnt_abs)) {
		free(opts);
		return 1;
	}
	if (a.foreground) {
		st = daemon_run(&a, -1);
		goto out;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		say("pipe: %s", strerror(errno));
		st = 1;
		goto out;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		say("fork: %s", strerror(errno));
		st = 1;
		goto out;
	}
	if (pid == 0) {
		close(pfd[0]);
		setsid();
		report_fd = pfd[1];
		openlog("nostall", LOG_PID, LOG_DAEMON);
		st = daemon_run(&a, pfd[1]);
		free(a.mnt_abs);
		free(opts);
		_exit(st);
	}
	close(pfd[1]);
	/* "O" = mounted and answering, then any notices until the child
	 * closes the pipe (right after INIT); anything else is the child's
	 * error message */
	char buf[2048];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(pfd[0], buf + n, sizeof buf - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	close(pfd[0]);
	buf[n] = 0;
	if (n && buf[0] == 'O') {
		if (buf[1])
			fputs(buf + 1, stderr);
		st = 0;
	} else {
		if (n)
			fputs(buf, stderr);
		else
			fprintf(stderr, "nostall mount: the daemon exited before the mount was ready\n");
		st = 1;
	}
out:
	free(a.mnt_abs);
	free(opts);
	return st;
}
