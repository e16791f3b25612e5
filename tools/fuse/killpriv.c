/* FUSE_HANDLE_KILLPRIV_V2 through libfuse 3.14 (docs/fuse.md, "Requests
 * per operation").
 *
 * Why: without it the kernel asks the daemon for security.capability
 * (a GETXATTR round trip) before every write(2), because a FUSE
 * superblock never gets SB_NOSEC and so no inode is ever marked as having
 * no privileges to drop. With KILLPRIV_V2 the kernel sets SB_NOSEC (one
 * GETXATTR per inode until its attributes change again) and leaves the
 * dropping of setuid/setgid to the server: a WRITE or a truncating
 * SETATTR from a caller without CAP_FSETID carries a flag, and chown is
 * the server's own business (the library drops the bits on chown, as ext3
 * does). Capabilities stay the kernel's: it still removes
 * security.capability itself (a REMOVEXATTR) when an inode has one.
 *
 * libfuse 3.14 neither asks for the flag nor passes the WRITE's flags on,
 * so the session's device I/O goes through fuse_session_custom_io: plain
 * read(2) and writev(2), except that the reply to INIT (written by the
 * thread serving it, whose request nfuse_loop_request shows) gets the flag
 * when the kernel offered it. The WRITE's flags are read from the raw
 * request the same way (nfuse_write_kills_setid). */
#include "fuse_int.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static ssize_t kp_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	return read(fd, buf, len);
}

static ssize_t kp_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct nfuse *nf = userdata;
	ssize_t sent;
	if (nfuse_uring_reply(iov, count, &sent))
		return sent;
	const struct fuse_in_header *in = nfuse_loop_request();
	if (in && in->opcode == FUSE_INIT && count >= 2 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t) &&
	    in->len >= sizeof *in + offsetof(struct fuse_init_in, flags) + sizeof(uint32_t)) {
		const struct fuse_out_header *out = iov[0].iov_base;
		const struct fuse_init_in *ii = (const void *)(in + 1);
		struct fuse_init_out *io = iov[1].iov_base;
		if (out->unique == in->unique && !out->error && (ii->flags & FUSE_HANDLE_KILLPRIV_V2)) {
			io->flags |= FUSE_HANDLE_KILLPRIV_V2;
			nf->killpriv_v2 = true;
		}
		/* flags2 is in the reply libfuse 3.14 writes (protocol 7.36+) */
		/* not offered: op_init has told the caller */
		if (out->unique == in->unique && !out->error && nf->o.uring &&
		    iov[1].iov_len >= offsetof(struct fuse_init_out, flags2) + sizeof io->flags2 &&
		    nfuse_uring_offered(ii, in->len - sizeof *in)) {
			nfuse_uring_grant(io);
			nf->uring = true;
		}
	}
	return writev(fd, iov, count);
}

int nfuse_killpriv_setup(struct nfuse *nf)
{
	static const struct fuse_custom_io io = { .read = kp_read, .writev = kp_writev };
	return fuse_session_custom_io(nf->se, &io, fuse_session_fd(nf->se));
}

bool nfuse_write_kills_setid(void)
{
	const struct fuse_in_header *in = nfuse_loop_request();
	if (!in || in->opcode != FUSE_WRITE || in->len < sizeof *in + sizeof(struct fuse_write_in))
		return false;
	const struct fuse_write_in *w = (const void *)(in + 1);
	return (w->write_flags & FUSE_WRITE_KILL_SUIDGID) != 0;
}
