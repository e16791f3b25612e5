/* nbd:URI[,depth=N][,timeout=SECONDS][,conns=N] — a Network Block Device
 * export (nbdkit, qemu-nbd, ...) reached through libnbd's asynchronous API.
 *
 * Threads and locks:
 * - Submitters issue the first stage of a command themselves (nbd_aio_*),
 *   holding conn->lock, which every call on the connection's libnbd handle
 *   takes (so the loop thread can shut the socket down without racing a
 *   submitter that is sending on it). Order: conn->lock -> libnbd's handle
 *   lock -> conn->done_lock.
 * - One event-loop thread per connection polls the socket in the direction
 *   libnbd asks for plus an eventfd (wake-ups), feeds nbd_aio_notify_*, and
 *   runs each command's state machine: preflush -> data (or trim pieces) ->
 *   FUA flush when the server has no FUA flag -> dev_complete(). It is the
 *   only thread that completes commands that reached the wire.
 * - libnbd's completion callback runs with the handle lock held (libnbd
 *   calls on the same handle would deadlock there), usually in the loop
 *   thread but in a submitter when a send finds the connection dead: it only
 *   queues the command on conn->done for the loop thread.
 * - Timeout: every command on the wire has a deadline (issue time + timeout);
 *   they sit on conn->wire in issue order, so the head has the earliest. The
 *   loop polls until that deadline, or a quarter timeout when nothing is on
 *   the wire (so submitters need not wake it to arm a deadline: no extra
 *   context switch per command). When a deadline passes, the loop thread
 *   shuts the socket down: libnbd then sees the
 *   connection die and fails every outstanding command through its callback
 *   (ENOTCONN), which becomes -EIO here. A command is only ever completed
 *   from libnbd's answer, so nothing the server did not acknowledge is
 *   reported as done, and no buffer is released while libnbd may touch it.
 * - After a connection dies or times out the device is broken: every later
 *   command completes with -EIO (no reconnection: the journal above aborts on
 *   the first error anyway).
 */
#include "dev/dev_impl.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/list.h"
#include "util/opts.h"

#include <errno.h>
#include <inttypes.h>
#include <libnbd.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define NBD_DEFAULT_DEPTH 32u
#define NBD_MAX_DEPTH 1024u
#define NBD_DEFAULT_TIMEOUT_S 30.0
#define NBD_MAX_CONNS 16u
#define NBD_MAX_BYTES (1u << 20)   /* largest READ/WRITE we send */
#define NBD_TRIM_PIECE (1ull << 30) /* NBD lengths are 32-bit: trim in pieces */
#define NBD_IDLE_SLICES 4u /* the loop wakes at least this often per timeout */

enum nbd_stage { NS_PREFLUSH, NS_DATA, NS_FUA, NS_FLUSH, NS_TRIM };

struct nbd_conn;

struct nbd_cmd {
	struct dev_io *io;
	struct nbd_conn *conn;
	enum nbd_stage stage;
	uint64_t off, len;   /* bytes */
	uint64_t trimmed;    /* NS_TRIM: bytes done before the piece on the wire */
	uint64_t piece;      /* NS_TRIM: length of that piece */
	/* Protected by conn->lock: */
	uint64_t deadline_ns;
	struct list_node wire_node; /* on conn->wire while a stage is on the wire */
	/* Written by the completion callback, read by the loop thread after
	 * it took the command off conn->done (done_lock orders them). */
	int reply_errno;
	struct nbd_cmd *next; /* free list (nd->free_lock) or conn->done (done_lock) */
};

struct nbd_conn {
	struct nbd_dev *nd;
	struct nbd_handle *h;
	pthread_t thread;
	bool thread_started;      /* for close; set before any command exists */
	int evfd;
	pthread_mutex_t lock;     /* every libnbd call on h; wire; timed_out */
	struct list_node wire;    /* commands on the wire, oldest deadline first */
	bool timed_out;
	pthread_mutex_t done_lock; /* done list and stop */
	struct nbd_cmd *done_head, *done_tail;
	bool stop;
};

struct nbd_dev {
	struct dev dev; /* first */
	char *uri;
	uint64_t timeout_ns;
	bool can_flush, can_fua, can_trim, read_only;
	atomic_bool broken;      /* a connection died or timed out */
	atomic_bool fua_noted;   /* "FUA is write + flush" was said */
	atomic_bool lost_noted;  /* "connection lost" was said */
	atomic_uint next_conn;   /* round robin over conns */
	unsigned nconns;
	struct nbd_conn *conns;
	pthread_mutex_t free_lock;
	struct nbd_cmd *cmds, *free_cmds;
};

/* The one translation point of libnbd's errors (a server's NBD error, a
 * local send/receive failure, ENOTCONN for a dead connection) into the
 * stack's: -ENOSPC stays (a full thin volume), everything else is -EIO. A
 * trim the server cannot do is no error: discarded data may read back old. */
static int nbd_errno_translate(int nbd_errno, enum nbd_stage stage)
{
	if (nbd_errno == 0)
		return 0;
	if (stage == NS_TRIM && (nbd_errno == ENOTSUP || nbd_errno == EOPNOTSUPP || nbd_errno == EINVAL))
		return 0;
	return nbd_errno == ENOSPC ? -ENOSPC : -EIO;
}

static void conn_wake(struct nbd_conn *c)
{
	uint64_t one = 1;
	ssize_t n = write(c->evfd, &one, sizeof one);
	(void)n; /* EAGAIN: the counter is already non-zero, a wake-up is pending */
}

static void nbd_note_lost(struct nbd_dev *nd, const char *why)
{
	atomic_store(&nd->broken, true);
	if (!atomic_exchange(&nd->lost_noted, true))
		fprintf(stderr, "nostall: nbd: %s: %s: every further I/O fails with EIO\n", nd->uri, why);
}

/* The connection whose event loop runs on this thread (NULL elsewhere). */
static _Thread_local struct nbd_conn *nbd_loop_self;

/* libnbd's completion callback (handle lock held): hand the command to the
 * loop thread. Returning 1 retires the command inside libnbd. */
static int nbd_cmd_reply(void *user_data, int *error)
{
	struct nbd_cmd *cmd = user_data;
	struct nbd_conn *c = cmd->conn;
	cmd->reply_errno = *error;
	cmd->next = NULL;
	pthread_mutex_lock(&c->done_lock);
	if (c->done_tail)
		c->done_tail->next = cmd;
	else
		c->done_head = cmd;
	c->done_tail = cmd;
	pthread_mutex_unlock(&c->done_lock);
	if (nbd_loop_self != c)
		conn_wake(c);
	return 1;
}

/* Put cmd's current stage on the wire. Returns 0, or a negative errno when
 * libnbd refused it (then no callback will come for it). */
static int nbd_stage_issue(struct nbd_dev *nd, struct nbd_cmd *cmd)
{
	struct nbd_conn *c = cmd->conn;
	nbd_completion_callback cb = { .callback = nbd_cmd_reply, .user_data = cmd };
	struct dev_io *io = cmd->io;
	if (atomic_load(&nd->broken))
		return err_set(-EIO, "nbd: %s: the connection was lost", nd->uri);
	pthread_mutex_lock(&c->lock);
	cmd->deadline_ns = clock_now_ns() + nd->timeout_ns;
	list_add_tail(&c->wire, &cmd->wire_node); /* before the call: the callback may come inside it */
	int64_t cookie = -1;
	switch (cmd->stage) {
	case NS_PREFLUSH:
	case NS_FUA:
	case NS_FLUSH:
		cookie = nbd_aio_flush(c->h, cb, 0);
		break;
	case NS_DATA:
		if (io->op == DEV_OP_READ)
			cookie = nbd_aio_pread(c->h, io->buf, cmd->len, cmd->off, cb, 0);
		else
			cookie = nbd_aio_pwrite(c->h, io->buf, cmd->len, cmd->off, cb,
						(io->flags & DEV_IO_FUA) && nd->can_fua ? LIBNBD_CMD_FLAG_FUA : 0);
		break;
	case NS_TRIM:
		cmd->piece = cmd->len - cmd->trimmed < NBD_TRIM_PIECE ? cmd->len - cmd->trimmed : NBD_TRIM_PIECE;
		cookie = nbd_aio_trim(c->h, cmd->piece, cmd->off + cmd->trimmed, cb, 0);
		break;
	}
	int rc = 0;
	if (cookie < 0) {
		list_del(&cmd->wire_node);
		rc = err_set(nbd_errno_translate(nbd_get_errno() ? nbd_get_errno() : EIO, NS_DATA),
			     "nbd: %s: %s", nd->uri, nbd_get_error() ? nbd_get_error() : "command refused");
		if (nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h))
			nbd_note_lost(nd, "connection lost");
	} else if (nbd_aio_get_direction(c->h) & LIBNBD_AIO_DIRECTION_WRITE) {
		conn_wake(c); /* the request is partly sent: the loop must poll for POLLOUT */
	}
	/* No wake-up otherwise, even for the first command on the wire: an
	 * idle loop polls at most NBD_IDLE_SLICES times per timeout, so it
	 * sees the new deadline long before it passes. */
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void nbd_cmd_finish(struct nbd_dev *nd, struct nbd_cmd *cmd, int err)
{
	struct dev_io *io = cmd->io;
	cmd->io = NULL;
	pthread_mutex_lock(&nd->free_lock);
	cmd->next = nd->free_cmds;
	nd->free_cmds = cmd;
	pthread_mutex_unlock(&nd->free_lock);
	dev_complete(&nd->dev, io, err);
}

/* Issue the current stage, or complete the command if that fails. */
static void nbd_stage_issue_or_finish(struct nbd_dev *nd, struct nbd_cmd *cmd)
{
	int rc = nbd_stage_issue(nd, cmd);
	if (rc)
		nbd_cmd_finish(nd, cmd, rc);
}

static void nbd_note_fua(struct nbd_dev *nd)
{
	if (!atomic_exchange(&nd->fua_noted, true))
		fprintf(stderr, "nostall: nbd: %s: the server offers no FUA flag: FUA writes are write + flush\n",
			nd->uri);
}

/* Loop thread: cmd's stage got its reply. */
static void nbd_cmd_advance(struct nbd_dev *nd, struct nbd_cmd *cmd)
{
	int err = nbd_errno_translate(cmd->reply_errno, cmd->stage);
	if (cmd->reply_errno == ENOTCONN || cmd->reply_errno == ESHUTDOWN)
		nbd_note_lost(nd, "connection lost");
	if (err) {
		nbd_cmd_finish(nd, cmd, err);
		return;
	}
	switch (cmd->stage) {
	case NS_PREFLUSH:
		cmd->stage = NS_DATA;
		break;
	case NS_DATA:
		if (cmd->io->op == DEV_OP_WRITE && (cmd->io->flags & DEV_IO_FUA) && !nd->can_fua &&
		    nd->can_flush) {
			nbd_note_fua(nd);
			cmd->stage = NS_FUA;
			break;
		}
		nbd_cmd_finish(nd, cmd, 0);
		return;
	case NS_TRIM:
		cmd->trimmed += cmd->piece;
		if (cmd->trimmed < cmd->len)
			break;
		nbd_cmd_finish(nd, cmd, 0);
		return;
	case NS_FUA:
	case NS_FLUSH:
		nbd_cmd_finish(nd, cmd, 0);
		return;
	}
	nbd_stage_issue_or_finish(nd, cmd);
}

/* Take the replied commands off the wire list and act on them. Returns
 * whether the thread was asked to stop. */
static bool nbd_conn_drain(struct nbd_conn *c)
{
	pthread_mutex_lock(&c->done_lock);
	struct nbd_cmd *list = c->done_head;
	c->done_head = c->done_tail = NULL;
	bool stop = c->stop;
	pthread_mutex_unlock(&c->done_lock);
	while (list) {
		struct nbd_cmd *cmd = list;
		list = cmd->next;
		pthread_mutex_lock(&c->lock);
		list_del(&cmd->wire_node);
		pthread_mutex_unlock(&c->lock);
		nbd_cmd_advance(c->nd, cmd);
	}
	return stop;
}

/* Called with c->lock held after poll: a command overdue shuts the socket
 * down, so that libnbd fails everything outstanding (see the top). */
static void nbd_conn_check_timeout(struct nbd_conn *c)
{
	struct list_node *first = list_first(&c->wire);
	if (!first || c->timed_out)
		return;
	struct nbd_cmd *cmd = list_entry(first, struct nbd_cmd, wire_node);
	if (clock_now_ns() < cmd->deadline_ns)
		return;
	c->timed_out = true;
	char why[96];
	snprintf(why, sizeof why, "no reply within the %.3g s timeout", (double)c->nd->timeout_ns / 1e9);
	nbd_note_lost(c->nd, why);
	int fd = nbd_aio_get_fd(c->h);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
}

static void *nbd_loop_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "nst-nbd"); /* top, perf, gdb */
	struct nbd_conn *c = arg;
	nbd_loop_self = c;
	for (;;) {
		if (nbd_conn_drain(c))
			return NULL;
		struct pollfd pfd[2] = { { .fd = -1 }, { .fd = c->evfd, .events = POLLIN } };
		int timeout_ms = -1;
		pthread_mutex_lock(&c->lock);
		unsigned dir = nbd_aio_get_direction(c->h);
		int fd = nbd_aio_get_fd(c->h);
		if (fd >= 0 && dir) {
			pfd[0].fd = fd;
			pfd[0].events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
						(dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0));
		}
		struct list_node *first = list_first(&c->wire);
		if (!c->timed_out) {
			uint64_t now = clock_now_ns(), dl = now + c->nd->timeout_ns / NBD_IDLE_SLICES;
			if (first && list_entry(first, struct nbd_cmd, wire_node)->deadline_ns < dl)
				dl = list_entry(first, struct nbd_cmd, wire_node)->deadline_ns;
			timeout_ms = dl <= now ? 0 : (int)((dl - now + NS_PER_MS - 1) / NS_PER_MS);
		}
		pthread_mutex_unlock(&c->lock);
		int n = poll(pfd, 2, timeout_ms);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "nostall: nbd: %s: poll: %s\n", c->nd->uri, strerror(errno));
			abort(); /* commands would hang otherwise */
		}
		if (n > 0 && (pfd[1].revents & POLLIN)) {
			uint64_t v;
			ssize_t r = read(c->evfd, &v, sizeof v);
			(void)r;
		}
		pthread_mutex_lock(&c->lock);
		short ev = n > 0 ? pfd[0].revents : 0;
		int rc = 0;
		if ((ev & (POLLIN | POLLHUP | POLLERR)) && (dir & LIBNBD_AIO_DIRECTION_READ))
			rc = nbd_aio_notify_read(c->h);
		else if ((ev & (POLLOUT | POLLHUP | POLLERR)) && (dir & LIBNBD_AIO_DIRECTION_WRITE))
			rc = nbd_aio_notify_write(c->h);
		if ((rc < 0 || ev) && (nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h)))
			nbd_note_lost(c->nd, rc < 0 && nbd_get_error() ? nbd_get_error() : "connection lost");
		nbd_conn_check_timeout(c);
		pthread_mutex_unlock(&c->lock);
	}
}

static int nbd_submit(struct dev *d, struct dev_io *io)
{
	struct nbd_dev *nd = (struct nbd_dev *)d;
	if (nd->read_only && (io->op == DEV_OP_WRITE || io->op == DEV_OP_DISCARD))
		return err_set(-EROFS, "nbd: %s: the export is read-only: writes are refused", nd->uri);
	if ((io->op == DEV_OP_FLUSH && !nd->can_flush) || (io->op == DEV_OP_DISCARD && !nd->can_trim)) {
		/* No cache to drain / nothing to do: discarded data may read back old. */
		dev_complete(d, io, 0);
		return 0;
	}
	pthread_mutex_lock(&nd->free_lock);
	struct nbd_cmd *cmd = nd->free_cmds;
	if (cmd)
		nd->free_cmds = cmd->next;
	pthread_mutex_unlock(&nd->free_lock);
	if (!cmd)
		return err_set(-EBUSY, "nbd: %s: no command slot", nd->uri); /* dev.c enforces the depth */
	cmd->io = io;
	cmd->conn = &nd->conns[atomic_fetch_add(&nd->next_conn, 1) % nd->nconns];
	cmd->off = io->sector << DEV_SECTOR_SHIFT;
	cmd->len = (uint64_t)io->nr_sectors << DEV_SECTOR_SHIFT;
	cmd->trimmed = cmd->piece = 0;
	switch (io->op) {
	case DEV_OP_FLUSH:
		cmd->stage = NS_FLUSH;
		break;
	case DEV_OP_DISCARD:
		cmd->stage = NS_TRIM;
		break;
	case DEV_OP_WRITE:
		cmd->stage = (io->flags & DEV_IO_PREFLUSH) && nd->can_flush ? NS_PREFLUSH : NS_DATA;
		break;
	case DEV_OP_READ:
		cmd->stage = NS_DATA;
		break;
	}
	/* A refused first stage (dead connection) is a failed command: done()
	 * runs from inside dev_submit, which the contract allows. */
	nbd_stage_issue_or_finish(nd, cmd);
	return 0;
}

/* ---- open and close ---- */

static void nbd_conn_disconnect(struct nbd_dev *nd, struct nbd_conn *c)
{
	if (!c->h)
		return;
	/* Say goodbye (NBD_CMD_DISC) when the connection is healthy, bounded
	 * by the timeout; nbd_shutdown() could wait for ever on a stuck server. */
	if (!atomic_load(&nd->broken) && nbd_aio_is_ready(c->h) && nbd_aio_disconnect(c->h, 0) == 0) {
		uint64_t deadline = clock_now_ns() + nd->timeout_ns;
		while (!nbd_aio_is_closed(c->h) && !nbd_aio_is_dead(c->h)) {
			uint64_t now = clock_now_ns();
			if (now >= deadline || nbd_poll(c->h, (int)((deadline - now) / NS_PER_MS) + 1) < 0)
				break;
		}
	}
	nbd_close(c->h);
	c->h = NULL;
}

static void nbd_conns_free(struct nbd_dev *nd)
{
	for (unsigned i = 0; i < nd->nconns; i++) {
		struct nbd_conn *c = &nd->conns[i];
		if (c->thread_started) {
			pthread_mutex_lock(&c->done_lock);
			c->stop = true;
			pthread_mutex_unlock(&c->done_lock);
			conn_wake(c);
			pthread_join(c->thread, NULL);
		}
		nbd_conn_disconnect(nd, c);
		if (c->evfd >= 0)
			close(c->evfd);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->done_lock);
	}
	free(nd->conns);
	free(nd->cmds);
	pthread_mutex_destroy(&nd->free_lock);
	free(nd->uri);
	free(nd);
}

static void nbd_dev_close(struct dev *d)
{
	nbd_conns_free((struct nbd_dev *)d);
}

static const struct dev_ops nbd_ops = {
	.kind = "nbd",
	.submit = nbd_submit,
	.close = nbd_dev_close,
};

struct nbd_opts {
	uint64_t depth, conns;
	double timeout_s;
};

static int nbd_opt(void *ctx, const char *name, const char *value)
{
	struct nbd_opts *o = ctx;
	if (!value)
		return err_set(-EINVAL, "nbd: option '%s' needs a value", name);
	if (strcmp(name, "depth") == 0) {
		if (opts_parse_u64(value, &o->depth) || o->depth < 1 || o->depth > NBD_MAX_DEPTH)
			return err_set(-EINVAL, "nbd: bad depth '%s' (1..%u)", value, NBD_MAX_DEPTH);
	} else if (strcmp(name, "conns") == 0) {
		if (opts_parse_u64(value, &o->conns) || o->conns < 1 || o->conns > NBD_MAX_CONNS)
			return err_set(-EINVAL, "nbd: bad conns '%s' (1..%u)", value, NBD_MAX_CONNS);
	} else if (strcmp(name, "timeout") == 0) {
		if (opts_parse_double(value, &o->timeout_s) || !(o->timeout_s >= 0.001) || o->timeout_s > 86400)
			return err_set(-EINVAL, "nbd: bad timeout '%s' (seconds, 0.001..86400)", value);
	} else {
		return err_set(-EINVAL, "nbd: unknown option '%s'", name);
	}
	return 0;
}

/* Connect c->h to the URI, waiting at most the timeout for the handshake. */
static int nbd_conn_connect(struct nbd_dev *nd, struct nbd_conn *c)
{
	c->h = nbd_create();
	if (!c->h)
		return err_set(-ENOMEM, "nbd: cannot create a libnbd handle: %s", nbd_get_error());
	if (nbd_aio_connect_uri(c->h, nd->uri) < 0)
		return err_set(-EIO, "nbd: cannot connect to '%s': %s", nd->uri, nbd_get_error());
	uint64_t deadline = clock_now_ns() + nd->timeout_ns;
	while (!nbd_aio_is_ready(c->h)) {
		if (nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h))
			return err_set(-EIO, "nbd: cannot connect to '%s': %s", nd->uri,
				       nbd_get_error() ? nbd_get_error() : "connection closed");
		uint64_t now = clock_now_ns();
		if (now >= deadline)
			return err_set(-ETIMEDOUT, "nbd: '%s': no handshake within the %.3g s timeout", nd->uri,
				       (double)nd->timeout_ns / 1e9);
		if (nbd_poll(c->h, (int)((deadline - now + NS_PER_MS - 1) / NS_PER_MS)) < 0)
			return err_set(-EIO, "nbd: cannot connect to '%s': %s", nd->uri, nbd_get_error());
	}
	return 0;
}

/* Geometry and capabilities from the first connection. */
static int nbd_probe(struct nbd_dev *nd, unsigned depth, struct dev_geometry *g)
{
	struct nbd_handle *h = nd->conns[0].h;
	int64_t size = nbd_get_size(h), bmin = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM),
		bmax = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
	if (size < 0 || bmin < 0 || bmax < 0)
		return err_set(-EIO, "nbd: '%s': %s", nd->uri, nbd_get_error());
	if (bmin > 4096)
		return err_set(-EINVAL, "nbd: '%s': the server's minimum block size %" PRId64 " is above 4096",
			       nd->uri, bmin);
	nd->read_only = nbd_is_read_only(h) == 1;
	nd->can_flush = nbd_can_flush(h) == 1;
	nd->can_fua = nbd_can_fua(h) == 1;
	nd->can_trim = nbd_can_trim(h) == 1;
	*g = (struct dev_geometry){
		.rotational = nbd_is_rotational(h) == 1,
		.queue_depth = depth,
		.logical_block_size = bmin > 512 ? 4096 : 512,
		.has_write_cache = nd->can_flush,
	};
	uint64_t maxb = bmax > 0 && (uint64_t)bmax < NBD_MAX_BYTES ? (uint64_t)bmax : NBD_MAX_BYTES;
	maxb -= maxb % g->logical_block_size;
	if (maxb < g->logical_block_size)
		return err_set(-EINVAL, "nbd: '%s': the server's maximum block size %" PRId64 " is too small",
			       nd->uri, bmax);
	g->max_hw_sectors = (unsigned)(maxb >> DEV_SECTOR_SHIFT);
	g->size_bytes = (uint64_t)size & ~(uint64_t)(g->logical_block_size - 1);
	if (g->size_bytes == 0)
		return err_set(-EINVAL, "nbd: '%s': the export is empty", nd->uri);
	return 0;
}

/* Init the connection structs (no connection yet): nbd_conns_free works
 * from here on. */
static int nbd_conns_alloc(struct nbd_dev *nd, unsigned n, unsigned depth)
{
	pthread_mutex_init(&nd->free_lock, NULL);
	nd->conns = calloc(n, sizeof *nd->conns);
	nd->cmds = calloc(depth, sizeof *nd->cmds);
	if (!nd->conns || !nd->cmds)
		return err_set(-ENOMEM, "out of memory");
	nd->nconns = n;
	for (unsigned i = 0; i < n; i++)
		nd->conns[i].evfd = -1;
	for (unsigned i = 0; i < n; i++) {
		struct nbd_conn *c = &nd->conns[i];
		c->nd = nd;
		list_init(&c->wire);
		pthread_mutex_init(&c->lock, NULL);
		pthread_mutex_init(&c->done_lock, NULL);
		c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (c->evfd < 0)
			return err_set(-errno, "nbd: eventfd: %s", strerror(errno));
	}
	for (unsigned i = 0; i < depth; i++) {
		list_init(&nd->cmds[i].wire_node);
		nd->cmds[i].next = nd->free_cmds;
		nd->free_cmds = &nd->cmds[i];
	}
	return 0;
}

/* Connect every connection (the first one says whether more are safe). */
static int nbd_connect_all(struct nbd_dev *nd, unsigned want, unsigned depth, struct dev_geometry *g)
{
	int rc = nbd_conn_connect(nd, &nd->conns[0]);
	if (!rc)
		rc = nbd_probe(nd, depth, g);
	if (rc)
		return rc;
	if (want > 1 && nbd_can_multi_conn(nd->conns[0].h) != 1) {
		fprintf(stderr, "nostall: nbd: %s: the server does not say multi-conn is safe: one connection\n",
			nd->uri);
		want = 1;
	}
	for (unsigned i = 1; i < want; i++) {
		rc = nbd_conn_connect(nd, &nd->conns[i]);
		if (rc)
			return rc;
		if (nbd_get_size(nd->conns[i].h) != nbd_get_size(nd->conns[0].h))
			return err_set(-EIO, "nbd: '%s': connections disagree on the size", nd->uri);
	}
	for (unsigned i = want; i < nd->nconns; i++) {
		close(nd->conns[i].evfd);
		nd->conns[i].evfd = -1;
		pthread_mutex_destroy(&nd->conns[i].lock);
		pthread_mutex_destroy(&nd->conns[i].done_lock);
	}
	nd->nconns = want;
	return 0;
}

int dev_nbd_open(const char *args, struct dev **out)
{
	static const char *const names[] = { "depth", "timeout", "conns", NULL };
	char *uri, *optstr;
	if (dev_split_spec(args, names, &uri, &optstr))
		return err_set(-ENOMEM, "out of memory");
	struct nbd_opts o = { .depth = NBD_DEFAULT_DEPTH, .conns = 1, .timeout_s = NBD_DEFAULT_TIMEOUT_S };
	int rc = opts_parse(optstr, nbd_opt, &o);
	free(optstr);
	if (rc) {
		free(uri);
		return rc;
	}
	if (!*uri) {
		free(uri);
		return err_set(-EINVAL, "nbd: missing URI (nbd:nbd://HOST[:PORT]/EXPORT or "
				       "nbd:nbd+unix:///EXPORT?socket=PATH)");
	}
	struct nbd_dev *nd = calloc(1, sizeof *nd);
	if (!nd) {
		free(uri);
		return err_set(-ENOMEM, "out of memory");
	}
	nd->uri = uri;
	nd->timeout_ns = (uint64_t)(o.timeout_s * 1e9);
	struct dev_geometry g;
	rc = nbd_conns_alloc(nd, (unsigned)o.conns, (unsigned)o.depth);
	if (!rc)
		rc = nbd_connect_all(nd, (unsigned)o.conns, (unsigned)o.depth, &g);
	if (!rc)
		rc = dev_init(&nd->dev, &nbd_ops, &g);
	if (rc) {
		nbd_conns_free(nd);
		return rc;
	}
	for (unsigned i = 0; i < nd->nconns; i++) {
		struct nbd_conn *c = &nd->conns[i];
		rc = pthread_create(&c->thread, NULL, nbd_loop_thread, c);
		if (rc) {
			rc = err_set(-rc, "nbd: cannot start the event-loop thread");
			dev_fini(&nd->dev);
			nbd_conns_free(nd);
			return rc;
		}
		c->thread_started = true;
	}
	*out = &nd->dev;
	return 0;
}
