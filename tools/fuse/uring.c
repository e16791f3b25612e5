/* FUSE over io_uring (docs/fuse.md, "io_uring"): the kernel's per-CPU
 * request queues, served by one thread per CPU.
 *
 * Why: through /dev/fuse a request may be read by a thread on any CPU and
 * its reply wakes the caller wherever the scheduler puts it. On this kind
 * of virtual machine an idle vCPU halts at once (no halt polling), so a
 * wake-up on the other CPU costs a trip through the hypervisor: a GETATTR
 * round trip (stat, attr_timeout=0) measured 43-53 us unpinned and 17-19
 * us with the caller and the daemon on one CPU, and a small-file create
 * waits for five round trips. Since Linux 6.14 (fuse module parameter
 * enable_uring) the kernel can queue each request on the queue of the CPU
 * its caller runs on; the daemon registers ring entries per queue with
 * io_uring commands on the /dev/fuse descriptor, gets requests as
 * completions and sends each reply together with the fetch of the next
 * request (COMMIT_AND_FETCH). Each queue's thread here is bound to its
 * CPU, so a request wakes a thread on the caller's own CPU; the reply's
 * wake-up may still move the caller to the other CPU, unless the threads
 * run SCHED_IDLE (-o uring_idle: a CPU running only those counts as idle
 * when the woken caller is placed). Opt-in (-o uring): streaming reads
 * lose a quarter on the rings (docs/fuse.md, "io_uring"). libfuse 3.14
 * has no io_uring support; the requests are handed to the loop
 * (cfg.serve: fuse_session_process_buf) as if read from /dev/fuse, and the
 * replies come back through the session's custom writev (killpriv.c),
 * which routes a reply to the ring entry its request came from
 * (nfuse_uring_reply).
 *
 * Wire format (include/uapi/linux/fuse.h, protocol 7.42): an entry
 * registers two buffers, a header area (struct uring_req_header below)
 * and a payload buffer at least max(max_write, max_pages pages) long. A
 * request arrives as fuse_in_header in in_out, the opcode's fixed
 * argument (the first argument, up to 128 bytes) in op_in and the other
 * arguments in the payload, payload_sz long. The payload buffer sits
 * NFUSE_URING_ROOM bytes into its allocation, so the header and the
 * fixed argument are copied in front of it and the request is contiguous
 * in /dev/fuse's layout without copying the payload. A reply is
 * fuse_out_header in in_out and everything after it in the payload.
 *
 * Forgets, interrupts and notifications still go through /dev/fuse (the
 * kernel's choice), as do all requests until every queue has an entry;
 * loop.c's threads keep serving those.
 *
 * Threads: each queue's thread owns its ring (IORING_SETUP_SINGLE_ISSUER)
 * and serves its entries' requests inline, one at a time, replying from
 * the same thread (every op of this daemon replies before returning). A
 * reply made by any other thread would find no entry of its own
 * (ent_cur is thread-local) and go to /dev/fuse, which the kernel would
 * refuse: the ops never do that. The threads end when the kernel cancels
 * their commands (unmount, abort) or when nfuse_uring_stop asks. */
#include "fuse_int.h"

#include <errno.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the protocol (uapi fuse.h 7.42; Debian 12's headers predate it) ---- */

#define URING_FLAGS2_OVER_IO_URING (1u << 9) /* FUSE_OVER_IO_URING = 1ULL << 41 */
#define URING_CMD_REGISTER 1
#define URING_CMD_COMMIT_AND_FETCH 2

struct uring_ent_in_out {
	uint64_t flags;        /* 0 */
	uint64_t commit_id;    /* 8: the request's unique, quoted in the commit */
	uint32_t payload_sz;   /* 16: bytes in the payload buffer */
	uint32_t padding;      /* 20 */
	uint64_t reserved;     /* 24 */
};
_Static_assert(sizeof(struct uring_ent_in_out) == 32, "fuse_uring_ent_in_out");

struct uring_req_header {
	char in_out[128];                 /* 0: fuse_in_header / fuse_out_header */
	char op_in[128];                  /* 128: the opcode's fixed argument */
	struct uring_ent_in_out ent;      /* 256 */
};
_Static_assert(sizeof(struct uring_req_header) == 288, "fuse_uring_req_header");

struct uring_cmd_req {
	uint64_t flags;        /* 0 */
	uint64_t commit_id;    /* 8 */
	uint16_t qid;          /* 16 */
	uint8_t padding[6];    /* 18 */
};
_Static_assert(sizeof(struct uring_cmd_req) == 24, "fuse_uring_cmd_req");

/* ---- the daemon's side ---- */

#define NFUSE_URING_DEPTH 2        /* entries per queue */
#define NFUSE_URING_HUGE (2u << 20) /* a transparent huge page */
#define NFUSE_URING_ROOM 4096      /* in front of the payload: header + fixed argument */
#define NFUSE_URING_MAX_QUEUES 1024

struct uring_q;

struct uring_ent {
	struct uring_q *q;
	struct uring_req_header hdr;
	char *map;                     /* the mapping: map_len bytes */
	size_t map_len;
	char *alloc;                   /* NFUSE_URING_ROOM + payload_len inside it, huge-page aligned */
	char *payload;                 /* alloc + NFUSE_URING_ROOM */
	uint64_t unique;               /* the request being served (0: none) */
	struct iovec iov[2];
};

struct uring_q {
	struct nfuse_uring *u;
	unsigned qid;
	pthread_t thread;
	bool started;
	struct io_uring ring;
	bool ring_ok;
	struct uring_ent ents[NFUSE_URING_DEPTH];
};

struct nfuse_uring {
	struct nfuse_uring_cfg cfg;
	int fd;
	size_t payload_len;
	bool idle;                     /* queue threads run SCHED_IDLE (-o uring_idle) */
	unsigned nq;
	volatile bool stop;            /* nfuse_uring_stop: leave at the next wake-up */
	struct uring_q *qs;
	uint64_t served;               /* requests served through the rings (atomic) */
};

static _Thread_local struct uring_ent *ent_cur;

/* The kernel's queue count: one per possible CPU (num_possible_cpus). */
static unsigned possible_cpus(void)
{
	unsigned n = 0;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	if (f) {
		unsigned a, b;
		char sep;
		while (fscanf(f, "%u", &a) == 1) {
			b = a;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
				if (fscanf(f, "%u", &b) != 1)
					break;
				if (fscanf(f, "%c", &sep) != 1)
					sep = 0;
			}
			n += b >= a ? b - a + 1 : 0;
			if (sep != ',')
				break;
		}
		fclose(f);
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_CONF);
		n = c > 0 ? (unsigned)c : 1;
	}
	return n;
}

static void cmd_prep(struct uring_ent *e, unsigned op)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->q->ring);
	/* the ring has twice the entries' count of SQEs and at most one SQE
	 * per entry is outstanding before a submit: never NULL */
	if (!sqe)
		return;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = e->q->u->fd;
	sqe->cmd_op = op;
	sqe->addr = (uint64_t)(uintptr_t)e->iov;
	sqe->len = 2;
	sqe->user_data = (uint64_t)(uintptr_t)e;
	struct uring_cmd_req *c = (struct uring_cmd_req *)sqe->cmd;
	c->qid = (uint16_t)e->q->qid;
	c->commit_id = op == URING_CMD_COMMIT_AND_FETCH ? e->unique : 0;
}

bool nfuse_uring_offered(const struct fuse_init_in *in, size_t len)
{
	return len >= offsetof(struct fuse_init_in, flags2) + sizeof in->flags2 && (in->flags & FUSE_INIT_EXT) &&
	       (in->flags2 & URING_FLAGS2_OVER_IO_URING);
}

void nfuse_uring_grant(struct fuse_init_out *out)
{
	out->flags |= FUSE_INIT_EXT;
	out->flags2 |= URING_FLAGS2_OVER_IO_URING;
}

/* A reply written by this thread: to its ring entry when it answers the
 * request the entry holds (1: sent, *res the bytes), else 0 (/dev/fuse's). */
int nfuse_uring_reply(const struct iovec *iov, int count, ssize_t *res)
{
	struct uring_ent *e = ent_cur;
	if (!e || count < 1 || iov[0].iov_len < sizeof(struct fuse_out_header))
		return 0;
	const struct fuse_out_header *oh = iov[0].iov_base;
	if (oh->unique != e->unique)
		return 0;
	size_t total = iov[0].iov_len, room = e->q->u->payload_len, at = 0;
	memcpy(e->hdr.in_out, oh, sizeof *oh);
	/* the rest of iov[0] (libfuse puts only the header there) and every
	 * later iovec go to the payload */
	const char *rest = (const char *)iov[0].iov_base + sizeof *oh;
	size_t rest_len = iov[0].iov_len - sizeof *oh;
	for (int i = 0; i < count; i++) {
		const char *p = i ? iov[i].iov_base : rest;
		size_t n = i ? iov[i].iov_len : rest_len;
		if (i)
			total += n;
		if (at + n > room) {
			/* larger than the kernel's own limit: cannot happen for a
			 * request it sent; answered as an error */
			struct fuse_out_header eh = { .len = sizeof eh, .error = -EIO, .unique = e->unique };
			memcpy(e->hdr.in_out, &eh, sizeof eh);
			at = 0;
			break;
		}
		memcpy(e->payload + at, p, n);
		at += n;
	}
	((struct fuse_out_header *)e->hdr.in_out)->len = (uint32_t)(sizeof *oh + at);
	e->hdr.ent.payload_sz = (uint32_t)at;
	cmd_prep(e, URING_CMD_COMMIT_AND_FETCH);
	io_uring_submit(&e->q->ring);
	e->unique = 0;
	ent_cur = NULL;
	*res = (ssize_t)total;
	return 1;
}

/* Answer the entry's request with an error (and fetch the next). */
static void ent_fail(struct uring_ent *e, int err)
{
	struct fuse_out_header oh = { .len = sizeof oh, .error = err, .unique = e->unique };
	struct iovec iov = { &oh, sizeof oh };
	ssize_t r;
	ent_cur = e;
	nfuse_uring_reply(&iov, 1, &r);
}

/* One request from the ring: rebuilt in /dev/fuse's layout in front of
 * the payload and handed to libfuse. */
static void ent_serve(struct uring_ent *e)
{
	struct nfuse_uring *u = e->q->u;
	struct fuse_in_header in;
	memcpy(&in, e->hdr.in_out, sizeof in);
	size_t psz = e->hdr.ent.payload_sz;
	e->unique = e->hdr.ent.commit_id;
	size_t fixed = in.len >= sizeof in + psz ? in.len - sizeof in - psz : SIZE_MAX;
	if (fixed > sizeof e->hdr.op_in || psz > u->payload_len) {
		/* a layout this code does not know: refused, the entry kept */
		ent_fail(e, -EPROTO);
		return;
	}
	char *start = e->payload - sizeof in - fixed;
	memcpy(start, &in, sizeof in);
	memcpy(start + sizeof in, e->hdr.op_in, fixed);
	struct fuse_buf buf = { .size = in.len, .mem = start };
	ent_cur = e;
	u->cfg.serve(u->cfg.arg, &buf);
	if (ent_cur == e) {
		/* no reply (an op that answers none): the entry must still be
		 * committed to come back */
		ent_fail(e, -ENOSYS);
	}
	__atomic_add_fetch(&u->served, 1, __ATOMIC_RELAXED);
}

static void *q_main(void *arg)
{
	struct uring_q *q = arg;
	struct nfuse_uring *u = q->u;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	/* bound to the queue's CPU: the kernel queues a caller's request on
	 * the queue of the CPU it runs on, so this wakes a thread there */
	(void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	/* uring_idle: a CPU running only SCHED_IDLE threads counts as idle
	 * when the scheduler places a woken task, so the caller our reply
	 * wakes stays on this CPU instead of waking the other (halted) one.
	 * The price: a CPU-bound task on this CPU starves the queue. */
	if (u->idle) {
		struct sched_param sp = { 0 };
		(void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	}
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_COOP_TASKRUN };
	if (io_uring_queue_init_params(2 * NFUSE_URING_DEPTH, &q->ring, &p) < 0) {
		p.flags = IORING_SETUP_SQE128;
		if (io_uring_queue_init_params(2 * NFUSE_URING_DEPTH, &q->ring, &p) < 0)
			return NULL;
	}
	q->ring_ok = true;
	for (unsigned i = 0; i < NFUSE_URING_DEPTH; i++)
		cmd_prep(&q->ents[i], URING_CMD_REGISTER);
	io_uring_submit(&q->ring);
	while (!u->stop) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_sec = 1 };
		int rc = io_uring_wait_cqe_timeout(&q->ring, &cqe, &ts);
		if (rc == -ETIME || rc == -EINTR)
			continue;
		if (rc < 0)
			break;
		struct uring_ent *e = (struct uring_ent *)(uintptr_t)cqe->user_data;
		int res = cqe->res;
		io_uring_cqe_seen(&q->ring, cqe);
		if (res < 0) {
			/* the connection is ending (ENOTCONN, ECANCELED) or the
			 * kernel turned the ring down: /dev/fuse serves all */
			if (res != -EINTR)
				break;
			continue;
		}
		ent_serve(e);
	}
	return NULL;
}

int nfuse_uring_start(const struct nfuse_uring_cfg *cfg, struct nfuse_uring **out)
{
	*out = NULL;
	struct nfuse_uring *u = calloc(1, sizeof *u);
	if (!u)
		return -ENOMEM;
	u->cfg = *cfg;
	u->fd = cfg->fd;
	u->idle = cfg->idle;
	u->payload_len = cfg->max_payload < 8192 ? 8192 : cfg->max_payload;
	u->nq = possible_cpus();
	if (u->nq > NFUSE_URING_MAX_QUEUES)
		u->nq = NFUSE_URING_MAX_QUEUES;
	u->qs = calloc(u->nq, sizeof *u->qs);
	if (!u->qs) {
		free(u);
		return -ENOMEM;
	}
	int rc = 0;
	for (unsigned qi = 0; qi < u->nq && !rc; qi++) {
		struct uring_q *q = &u->qs[qi];
		q->u = u;
		q->qid = qi;
		for (unsigned i = 0; i < NFUSE_URING_DEPTH; i++) {
			struct uring_ent *e = &q->ents[i];
			e->q = q;
			/* untouched pages cost no memory: a small request
			 * dirties only what it uses */
			size_t need = NFUSE_URING_ROOM + u->payload_len;
			size_t huge = (need + NFUSE_URING_HUGE - 1) / NFUSE_URING_HUGE * NFUSE_URING_HUGE;
			e->map_len = huge + NFUSE_URING_HUGE;
			e->map = mmap(NULL, e->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (e->map == MAP_FAILED) {
				e->map = NULL;
				rc = -ENOMEM;
				break;
			}
			/* On huge pages: the kernel pins the payload page by page
			 * for each copy in or out (a READ's reply is copied from
			 * here), and with 4 KiB pages that pinning cost about as
			 * much as the copy (docs/fuse.md, "io_uring"). */
			uintptr_t a = ((uintptr_t)e->map + NFUSE_URING_HUGE - 1) & ~(uintptr_t)(NFUSE_URING_HUGE - 1);
			e->alloc = (char *)a;
			(void)madvise(e->alloc, huge, MADV_HUGEPAGE);
			e->payload = e->alloc + NFUSE_URING_ROOM;
			e->iov[0] = (struct iovec){ &e->hdr, sizeof e->hdr };
			e->iov[1] = (struct iovec){ e->payload, u->payload_len };
		}
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (unsigned qi = 0; qi < u->nq && !rc; qi++) {
		struct uring_q *q = &u->qs[qi];
		if (pthread_create(&q->thread, NULL, q_main, q) == 0)
			q->started = true;
		else
			rc = -EAGAIN;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*out = u;
	return rc;
}

uint64_t nfuse_uring_served(const struct nfuse_uring *u)
{
	return u ? __atomic_load_n(&u->served, __ATOMIC_RELAXED) : 0;
}

void nfuse_uring_stop(struct nfuse_uring *u)
{
	if (!u)
		return;
	u->stop = true;
	for (unsigned qi = 0; qi < u->nq; qi++) {
		struct uring_q *q = &u->qs[qi];
		if (q->started)
			pthread_join(q->thread, NULL);
		if (q->ring_ok)
			io_uring_queue_exit(&q->ring);
		for (unsigned i = 0; i < NFUSE_URING_DEPTH; i++)
			if (q->ents[i].map)
				munmap(q->ents[i].map, q->ents[i].map_len);
	}
	free(u->qs);
	free(u);
}
