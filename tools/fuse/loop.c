/* The daemon's session loop (docs/fuse.md, "Threads"): leader/followers
 * with a stall hand-off, instead of libfuse's multi-threaded loop.
 *
 * Why: libfuse's loop keeps several threads blocked in read(2) on
 * /dev/fuse; the kernel wakes one waiter per request in turn, so
 * consecutive requests of one client land on different threads (a
 * context switch and cold caches each). One thread serving everything is
 * about twice as fast for cold reads and small-file creates (measured),
 * but an fsync (milliseconds of commit) or a read waiting for the disk
 * would then stall every other process's requests.
 *
 * So one thread at a time, the leader, reads requests and serves them
 * itself while they are quick. It gives up the reader role (a follower
 * is woken, or a thread started, up to the threads= limit) when
 *   - the request is one that waits for the disk by design (the sync
 *     IOCTL; FSYNC and FSYNCDIR when another request is already waiting,
 *     see request_limit): before serving it, or
 *   - its request has run for handoff_us (default 1 ms; READ 20 times
 *     that, see request_limit): the monitor thread, woken by a timerfd,
 *     sees the leader still busy with that request and hands the role on.
 *     The timer is armed only when none is pending (timer_at): a request
 *     due later than the pending expiry is seen when the monitor wakes,
 *     which re-arms for it. Arming per request cost a timerfd_settime
 *     (and a timer reprogramming, a VM exit on a virtual machine) on
 *     every request; now it costs at most one monitor wake-up per
 *     handoff_us while requests stream.
 * A thread that lost the role finishes its request and then waits as a
 * follower (or takes the role again if nobody holds it).
 *
 * Locking: lp->lock guards every field below it in struct nloop (the
 * leader's request start, the role, the thread table). It is a leaf: no
 * library call and no FUSE request is made under it. Threads other than
 * the caller's block all signals, so SIGINT/SIGTERM reach the thread
 * waiting in nfuse_loop_run (libfuse's handlers end the session there).
 * Exit: the session ends (unmount: the read fails with ENODEV; a signal);
 * the reader, blocked in read(2), is cancelled (cancellation is enabled
 * only around the read), the followers are woken, all are joined. */
#include "fuse_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h> /* opcodes (struct fuse_in_header) */
#include <poll.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define NLOOP_MAX_THREADS 256

struct nloop {
	struct fuse_session *se;
	unsigned max_threads;
	uint64_t handoff_ns;
	uint64_t spin_ns;             /* retry reads this long before blocking (receive) */
	int tfd;                      /* the monitor's timer, -1 with one thread */
	sem_t finished;               /* posted when the session ends */

	pthread_mutex_t lock;
	pthread_cond_t followers;     /* idle threads wait for the reader role */
	bool reader_taken;            /* a thread holds the reader role */
	uint64_t leader_seq;          /* bumped each time the role is taken */
	bool leader_busy;             /* the leader is serving a request */
	uint64_t busy_due;            /* ... and hands the role on at (CLOCK_MONOTONIC ns) */
	uint64_t timer_at;            /* the monitor's timer expires then; 0: not armed */
	unsigned idle;                /* threads waiting in `followers` */
	unsigned nthreads;
	pthread_t threads[NLOOP_MAX_THREADS];
	bool exiting;
	int error;                    /* a read error that ended the loop */
	void (*after_init)(void *);   /* run once after INIT's reply (reset to NULL then) */
	void *after_init_arg;
	const bool *uring_granted;    /* INIT's reply granted FUSE over io_uring (killpriv.c) */
	size_t uring_payload;         /* the ring entries' payload size */
	bool uring_idle;
	struct nfuse_uring *uring;    /* started after INIT when granted (uring.c) */
	uint64_t handoffs;            /* (stats) role given up mid-request */

	/* NOSTALL_FUSE_STATS=FILE: per-opcode count, time and hand-offs written
	 * to FILE when the session ends (measuring requests per operation) */
	const char *stats_path;
	struct {
		uint64_t n, ns, max_ns;
	} ops[64];
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void stats_add(struct nloop *lp, uint32_t op, uint64_t ns)
{
	op = op < 64 ? op : 63;
	__atomic_add_fetch(&lp->ops[op].n, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&lp->ops[op].ns, ns, __ATOMIC_RELAXED);
	uint64_t m = __atomic_load_n(&lp->ops[op].max_ns, __ATOMIC_RELAXED);
	while (ns > m && !__atomic_compare_exchange_n(&lp->ops[op].max_ns, &m, ns, false,
						      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void stats_write(const struct nloop *lp, unsigned nthreads)
{
	FILE *f = fopen(lp->stats_path, "a");
	if (!f)
		return;
	fprintf(f, "threads %u handoffs %llu leaders %llu\n", nthreads,
		(unsigned long long)lp->handoffs, (unsigned long long)lp->leader_seq);
	fprintf(f, "uring %llu\n", (unsigned long long)nfuse_uring_served(lp->uring));
	for (unsigned i = 0; i < 64; i++)
		if (lp->ops[i].n)
			fprintf(f, "op %u n %llu avg_us %.1f max_us %.1f\n", i,
				(unsigned long long)lp->ops[i].n,
				(double)lp->ops[i].ns / (double)lp->ops[i].n / 1e3,
				(double)lp->ops[i].max_ns / 1e3);
	fclose(f);
}

static void *worker_main(void *arg);

/* The request this thread serves (nfuse_loop_request). */
static _Thread_local const struct fuse_in_header *cur_request;

const struct fuse_in_header *nfuse_loop_request(void)
{
	return cur_request;
}

/* A request that came through a ring (uring.c), served as the loop serves
 * its own: nfuse_loop_request and the per-opcode statistics see it. */
static void ring_serve(void *arg, const struct fuse_buf *buf)
{
	struct nloop *lp = arg;
	uint64_t s0 = lp->stats_path ? now_ns() : 0;
	cur_request = buf->mem;
	fuse_session_process_buf(lp->se, buf);
	cur_request = NULL;
	if (s0)
		stats_add(lp, ((const struct fuse_in_header *)buf->mem)->opcode, now_ns() - s0);
}

/* A new worker, created with every signal blocked (it inherits the mask).
 * Under lp->lock. */
static void worker_spawn(struct nloop *lp)
{
	if (lp->nthreads >= lp->max_threads || lp->exiting)
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&lp->threads[lp->nthreads], NULL, worker_main, lp) == 0)
		lp->nthreads++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The leader gives up the reader role: a follower takes it, or a new
 * thread, or (all busy, at the limit) the first thread to finish. Under
 * lp->lock. */
static void role_release(struct nloop *lp)
{
	lp->reader_taken = false;
	lp->leader_busy = false;
	if (lp->idle)
		pthread_cond_signal(&lp->followers);
	else
		worker_spawn(lp);
}

/* Under lp->lock (timer_at follows the timer). */
static void timer_arm(struct nloop *lp, uint64_t at_ns)
{
	lp->timer_at = at_ns;
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(at_ns / 1000000000u),
						.tv_nsec = (long)(at_ns % 1000000000u) } };
	timerfd_settime(lp->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* A request is waiting in /dev/fuse (one poll, no wait). */
static bool request_pending(const struct nloop *lp)
{
	struct pollfd pfd = { .fd = fuse_session_fd(lp->se), .events = POLLIN };
	return poll(&pfd, 1, 0) > 0;
}

/* How long the leader may serve this request before the role goes on:
 * 0 for requests that wait for the disk by design (the role goes first);
 * an FSYNC or FSYNCDIR with no other request waiting is served like any
 * request (the monitor hands the role on after handoff_us): one client's
 * open/write/fsync/close loop then keeps one thread, which catches its
 * next request awake, instead of paying two cross-CPU wake-ups per fsync
 * (the follower's, then its read's): 0.46 vs 0.50-0.54 ms an iteration
 * (docs/fuse.md, "Threads");
 * READ gets NLOOP_READ_FACTOR times the limit, because the next READs are
 * usually the same reader's readahead, which a second thread would serve
 * out of order (measured: 1 ms for reads halved a cold sequential read). */
#define NLOOP_READ_FACTOR 20
static uint64_t request_limit(const struct nloop *lp, const struct fuse_buf *buf)
{
	if (buf->flags & FUSE_BUF_IS_FD || buf->size < sizeof(struct fuse_in_header))
		return lp->handoff_ns;
	uint32_t op = ((const struct fuse_in_header *)buf->mem)->opcode;
	if (op == FUSE_FSYNC || op == FUSE_FSYNCDIR)
		return request_pending(lp) ? 0 : lp->handoff_ns;
	if (op == FUSE_IOCTL)
		return 0;
	return op == FUSE_READ ? lp->handoff_ns * NLOOP_READ_FACTOR : lp->handoff_ns;
}

static void session_ended(struct nloop *lp, int err)
{
	pthread_mutex_lock(&lp->lock);
	if (err < 0 && !lp->error)
		lp->error = err;
	lp->exiting = true;
	pthread_cond_broadcast(&lp->followers);
	pthread_mutex_unlock(&lp->lock);
	fuse_session_exit(lp->se);
	sem_post(&lp->finished);
}

static void buf_free(void *arg)
{
	free(((struct fuse_buf *)arg)->mem);
}

/* The next request. /dev/fuse is non-blocking (nfuse_loop_run): a
 * request already waiting - the usual case while a client streams calls,
 * whose next request is often queued while the reply to its last one is
 * being written - costs one read(2), not a poll(2) and then a read (one
 * syscall less per request: 6 per small-file create).
 *
 * With spin, a read that finds nothing is retried for up to spin_ns
 * before the thread blocks in poll(2): the next request of a client doing
 * a sequence of calls (create: getattr of the directory, lookup, create,
 * getxattr, write, release) usually arrives within tens of microseconds of
 * the reply, and catching it awake saves the sleep and the cross-CPU
 * wake-up, which costs more than the request on a virtual machine
 * (docs/fuse.md, "Threads"). Each try is followed by a yield: the client
 * the reply woke is often queued on this very CPU, and must run to send
 * that request. Cancellation (the session's end) is enabled only while
 * blocked in poll. */
static int receive(struct nloop *lp, struct fuse_buf *buf, bool spin)
{
	uint64_t end = 0;
	for (;;) {
		int res = fuse_session_receive_buf(lp->se, buf);
		if (res != -EAGAIN)
			return res;
		if (spin) {
			uint64_t t = now_ns();
			if (!end)
				end = t + lp->spin_ns;
			if (t < end) {
				sched_yield();
				continue;
			}
		}
		struct pollfd pfd = { .fd = fuse_session_fd(lp->se), .events = POLLIN };
		int old;
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
		(void)poll(&pfd, 1, -1);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		if (fuse_session_exited(lp->se))
			return 0;
	}
}

/* Serve requests as the leader until the role is lost (0) or the session
 * ends (1). */
static int lead(struct nloop *lp, struct fuse_buf *buf, uint64_t seq)
{
	/* Spin only once this thread has replied to something: a thread
	 * that has just taken the role over from one serving an fsync would
	 * poll for a request its client cannot send before the fsync's reply,
	 * and on two CPUs the poll takes the one the commit needs. */
	bool replied = false;
	for (;;) {
		/* with the rings up only forgets and interrupts come this way:
		 * nobody waits for a reply to them, no spin */
		int res = receive(lp, buf, lp->spin_ns && replied &&
				  !__atomic_load_n(&lp->uring, __ATOMIC_ACQUIRE));
		if (res == -EINTR)
			continue;
		if (res <= 0 || fuse_session_exited(lp->se)) {
			session_ended(lp, res);
			return 1;
		}
		uint64_t limit = lp->tfd >= 0 ? request_limit(lp, buf) : 0;
		uint64_t due = limit ? now_ns() + limit : 0;
		pthread_mutex_lock(&lp->lock);
		if (lp->tfd >= 0 && !limit) {
			role_release(lp);
		} else {
			lp->leader_busy = true;
			lp->busy_due = due;
			/* a pending expiry before due: the monitor re-arms then */
			if (due && !lp->timer_at)
				timer_arm(lp, due);
		}
		pthread_mutex_unlock(&lp->lock);
		uint64_t s0 = lp->stats_path ? now_ns() : 0;
		uint32_t op = buf->size >= sizeof(struct fuse_in_header)
				      ? ((const struct fuse_in_header *)buf->mem)->opcode : 0;
		cur_request = op ? buf->mem : NULL;
		fuse_session_process_buf(lp->se, buf);
		cur_request = NULL;
		replied = true;
		if (lp->stats_path)
			stats_add(lp, op, now_ns() - s0);
		/* INIT is the session's first request, served before any other
		 * is read: only this thread can be here then */
		if (op == FUSE_INIT && lp->after_init) {
			lp->after_init(lp->after_init_arg);
			lp->after_init = NULL;
		}
		if (op == FUSE_INIT && lp->uring_granted && *lp->uring_granted && !lp->uring) {
			struct nfuse_uring *u;
			struct nfuse_uring_cfg uc = { .fd = fuse_session_fd(lp->se),
						      .max_payload = lp->uring_payload,
						      .idle = lp->uring_idle, .serve = ring_serve,
						      .arg = lp };
			int urc = nfuse_uring_start(&uc, &u);
			if (urc < 0)
				fprintf(stderr, "nostall mount: io_uring queues: %s; /dev/fuse serves every "
						"request\n", strerror(-urc));
			__atomic_store_n(&lp->uring, u, __ATOMIC_RELEASE);
		}
		pthread_mutex_lock(&lp->lock);
		bool still = lp->reader_taken && lp->leader_seq == seq && !lp->exiting;
		if (still)
			lp->leader_busy = false;
		pthread_mutex_unlock(&lp->lock);
		if (!still)
			return 0;
	}
}

static void *worker_main(void *arg)
{
	struct nloop *lp = arg;
	struct fuse_buf buf = { 0 };
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_cleanup_push(buf_free, &buf);
	for (;;) {
		pthread_mutex_lock(&lp->lock);
		while (lp->reader_taken && !lp->exiting) {
			lp->idle++;
			pthread_cond_wait(&lp->followers, &lp->lock);
			lp->idle--;
		}
		if (lp->exiting) {
			pthread_mutex_unlock(&lp->lock);
			break;
		}
		lp->reader_taken = true;
		uint64_t seq = ++lp->leader_seq;
		pthread_mutex_unlock(&lp->lock);
		if (lead(lp, &buf, seq))
			break;
	}
	pthread_cleanup_pop(1);
	return NULL;
}

/* The monitor: when the leader's request has run for handoff_ns, the role
 * goes on. The timer is re-armed by the leader at each request, so it
 * fires only after a quiet or a slow spell. */
static void *monitor_main(void *arg)
{
	struct nloop *lp = arg;
	for (;;) {
		uint64_t n;
		if (read(lp->tfd, &n, sizeof n) < 0 && errno != EINTR && errno != EAGAIN)
			break;
		pthread_mutex_lock(&lp->lock);
		if (lp->exiting) {
			pthread_mutex_unlock(&lp->lock);
			break;
		}
		lp->timer_at = 0; /* expired */
		if (lp->reader_taken && lp->leader_busy && lp->busy_due) {
			if (now_ns() >= lp->busy_due) {
				lp->handoffs++;
				role_release(lp);
			} else {
				timer_arm(lp, lp->busy_due); /* a newer request than the timer's */
			}
		}
		pthread_mutex_unlock(&lp->lock);
	}
	return NULL;
}

int nfuse_loop_run(struct fuse_session *se, const struct nfuse_loop_cfg *cfg)
{
	struct nloop *lp = calloc(1, sizeof *lp);
	if (!lp)
		return -ENOMEM;
	lp->se = se;
	lp->max_threads = cfg->max_threads < 1 ? 1
			  : cfg->max_threads > NLOOP_MAX_THREADS ? NLOOP_MAX_THREADS : cfg->max_threads;
	lp->handoff_ns = (uint64_t)cfg->handoff_us * 1000u;
	lp->spin_ns = (uint64_t)cfg->spin_us * 1000u;
	lp->tfd = -1;
	lp->after_init = cfg->after_init;
	lp->after_init_arg = cfg->arg;
	lp->uring_granted = cfg->uring_granted;
	lp->uring_payload = cfg->uring_payload;
	lp->uring_idle = cfg->uring_idle;
	lp->stats_path = getenv("NOSTALL_FUSE_STATS");
	/* reads that find no request return EAGAIN (receive) */
	int fd = fuse_session_fd(se), fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		free(lp);
		return -errno;
	}
	pthread_mutex_init(&lp->lock, NULL);
	pthread_cond_init(&lp->followers, NULL);
	sem_init(&lp->finished, 0, 0);
	int rc = 0;
	pthread_t monitor;
	bool have_monitor = false;
	if (lp->max_threads > 1) {
		lp->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (lp->tfd < 0) {
			rc = -errno;
			goto out;
		}
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		have_monitor = pthread_create(&monitor, NULL, monitor_main, lp) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!have_monitor) {
			rc = -EAGAIN;
			goto out;
		}
	}
	pthread_mutex_lock(&lp->lock);
	worker_spawn(lp);
	bool started = lp->nthreads > 0;
	pthread_mutex_unlock(&lp->lock);
	if (!started) {
		rc = -EAGAIN;
		session_ended(lp, rc);
	}
	/* a signal interrupts sem_wait; libfuse's handler has ended the session */
	while (!fuse_session_exited(se))
		sem_wait(&lp->finished);
	pthread_mutex_lock(&lp->lock);
	lp->exiting = true;
	pthread_cond_broadcast(&lp->followers);
	unsigned n = lp->nthreads;
	if (have_monitor)
		timer_arm(lp, 1); /* in the past: the monitor wakes and sees exiting */
	pthread_mutex_unlock(&lp->lock);
	/* The reader may be blocked in read(2): cancel every worker; one
	 * serving a request has cancellation disabled and ends by itself. The
	 * table does not grow any more (exiting). */
	for (unsigned i = 0; i < n; i++)
		pthread_cancel(lp->threads[i]);
	for (unsigned i = 0; i < n; i++)
		pthread_join(lp->threads[i], NULL);
	if (have_monitor)
		pthread_join(monitor, NULL);
	rc = lp->error;
	if (lp->stats_path)
		stats_write(lp, n);
	/* the queues' threads see the connection end (their commands are
	 * cancelled) or, after a signal, the stop flag within a second */
	nfuse_uring_stop(lp->uring);
	lp->uring = NULL;
out:
	if (lp->tfd >= 0)
		close(lp->tfd);
	sem_destroy(&lp->finished);
	pthread_cond_destroy(&lp->followers);
	pthread_mutex_destroy(&lp->lock);
	free(lp);
	return rc;
}
