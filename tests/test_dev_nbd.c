/* nbd: device against a real nbdkit (memory and file plugins, over a Unix
 * socket and over TCP on localhost): data, geometry, flush/FUA/trim on the
 * wire (nbdkit's log filter), read-only exports, depth, multi-conn, bad
 * specs, connection loss and the I/O timeout, a journal on nbd:, a short
 * write-path random run on nbd: checked by e2fsck, and write errors injected
 * by nbdkit's error filter. nbdkit missing fails the run unless
 * NOSTALL_ALLOW_SKIP=1 (tests/lib/oracles.c). NOSTALL_NBD_FSOPS=N sets the
 * random run's length (default 400); NOSTALL_SEED its seed (printed).
 * nostall-test: concurrent */
#include "test_jbd_env.h"

#include "lib/fsrun.h"
#include "lib/fstarget_nostall.h"
#include "lib/oracles.h"
#include "nostall/nostall.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char tmpdir[] = "/tmp/nostall-nbd-XXXXXX";
static uint64_t seed;

/* ---- nbdkit servers ---- */

struct srv {
	pid_t pid;
	bool tcp;
	int port;
	char sock[200];
	char spec[512]; /* "nbd:URI" */
};

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		fail_msg("free_port: %s", strerror(errno));
	close(fd);
	return ntohs(a.sin_port);
}

/* Servers started and not yet stopped: a failed assertion jumps out of
 * the test (its struct srv is gone), so the teardown kills them by pid. */
static pid_t live[8];

static void srv_register(pid_t pid, bool on)
{
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
		if (on && !live[i]) {
			live[i] = pid;
			return;
		}
		if (!on && live[i] == pid)
			live[i] = 0;
	}
	assert_false(on); /* more than 8 servers at once */
}

static void sun_set(struct sockaddr_un *a, const char *path)
{
	size_t n = strlen(path);
	assert_true(n < sizeof a->sun_path);
	memcpy(a->sun_path, path, n + 1);
}

/* Start `nbdkit -f --exit-with-parent` (Unix socket in tmpdir or TCP on a
 * free localhost port) with the NULL-terminated tail (filters, -r, plugin,
 * parameters) and wait until it listens: nbdkit writes its pidfile once it
 * accepts connections. A TCP port taken meanwhile by someone else makes
 * nbdkit exit: then another port is tried. */
static void srv_start(struct srv *s, bool tcp, const char *name, const char *const *tail)
{
	static atomic_int seq;
	memset(s, 0, sizeof *s);
	s->tcp = tcp;
	for (int attempt = 0; attempt < 5; attempt++) {
		int id = atomic_fetch_add(&seq, 1);
		char pidfile[256], port[16];
		snprintf(pidfile, sizeof pidfile, "%s/%s-%d.pid", tmpdir, name, id);
		const char *argv[48] = { "nbdkit", "-f", "--exit-with-parent", "-P", pidfile };
		int n = 5;
		if (tcp) {
			s->port = free_port();
			snprintf(port, sizeof port, "%d", s->port);
			argv[n++] = "-i";
			argv[n++] = "127.0.0.1";
			argv[n++] = "-p";
			argv[n++] = port;
			snprintf(s->spec, sizeof s->spec, "nbd:nbd://127.0.0.1:%d/", s->port);
		} else {
			snprintf(s->sock, sizeof s->sock, "%s/%s-%d.sock", tmpdir, name, id);
			argv[n++] = "-U";
			argv[n++] = s->sock;
			snprintf(s->spec, sizeof s->spec, "nbd:nbd+unix:///?socket=%s", s->sock);
		}
		for (size_t i = 0; tail[i] && n < 47; i++)
			argv[n++] = tail[i];
		argv[n] = NULL;
		int rc = posix_spawnp(&s->pid, "nbdkit", NULL, NULL, (char *const *)argv, environ);
		if (rc)
			fail_msg("posix_spawnp nbdkit: %s", strerror(rc));
		/* Generous: a loaded machine, ASan; this bounds a broken start only. */
		for (int i = 0; i < 3000; i++) {
			int st;
			if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
				s->pid = 0;
				break;
			}
			if (access(pidfile, F_OK) == 0) {
				srv_register(s->pid, true);
				return;
			}
			usleep(10000);
		}
		if (s->pid) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
			s->pid = 0;
		}
		if (!tcp)
			break;
	}
	fail_msg("nbdkit (%s) did not start", name);
}

static void srv_stop(struct srv *s)
{
	if (s->pid > 0) {
		srv_register(s->pid, false);
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
	if (s->sock[0])
		unlink(s->sock);
}

static int srv_teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
		if (live[i]) {
			kill(live[i], SIGKILL);
			waitpid(live[i], NULL, 0);
			live[i] = 0;
		}
	}
	return 0;
}

static void srv_kill(struct srv *s)
{
	assert_true(s->pid > 0);
	srv_register(s->pid, false);
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

static struct dev *open_ok(const char *spec)
{
	struct dev *d;
	int rc = dev_open(spec, &d);
	if (rc)
		fail_msg("dev_open(%s): %s", spec, err_last(rc));
	return d;
}

static void fill(void *buf, size_t len, unsigned v)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(v * 131u + i * 7u + (i >> 9));
}

static void tmp_path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", tmpdir, name);
}

static void make_sparse(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
}

/* ---- device tests ---- */

/* Write, read back, FUA|PREFLUSH on the last blocks, flush, discard (the
 * memory and file plugins zero it), out of range. */
static void roundtrip(struct dev *d, uint64_t size)
{
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	assert_int_equal(g.size_bytes, size);
	assert_true(g.has_write_cache);
	assert_int_equal(g.logical_block_size, 512);
	assert_true(g.max_hw_sectors >= 8);
	size_t len = 256 * 1024;
	char *w = malloc(len), *r = malloc(len);
	fill(w, len, 3);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 8, (uint32_t)(len / 512), w, 0), 0);
	memset(r, 0, len);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 8, (uint32_t)(len / 512), r, 0), 0);
	assert_memory_equal(w, r, len);
	uint64_t last = size / 512 - 8;
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, last, 8, w, DEV_IO_FUA | DEV_IO_PREFLUSH), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, last, 8, r, 0), 0);
	assert_memory_equal(w, r, 4096);
	assert_int_equal(dev_flush_sync(d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_DISCARD, 8, 64, NULL, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 8, 64, r, 0), 0);
	for (size_t i = 0; i < 64 * 512; i++)
		assert_int_equal(r[i], 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, size / 512, 8, r, 0), -ERANGE);
	free(w);
	free(r);
}

static void test_memory_unix(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, false, "mem", (const char *const[]){ "memory", "64M", NULL });
	struct dev *d = open_ok(s.spec);
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	assert_int_equal(g.queue_depth, 32);
	assert_false(g.rotational);
	assert_string_equal(dev_spec(d), s.spec);
	roundtrip(d, 64u << 20);
	dev_close(d);
	srv_stop(&s);
}

struct writer {
	struct dev *d;
	unsigned id;
	int err;
};

/* Each thread writes and reads back its own 1 MiB region, 64 KiB at a time. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char *b = malloc(65536), *r = malloc(65536);
	for (unsigned i = 0; i < 16 && !w->err; i++) {
		uint64_t sector = (uint64_t)w->id * 2048 + i * 128;
		fill(b, 65536, w->id * 100 + i);
		w->err = dev_rw_sync(w->d, DEV_OP_WRITE, sector, 128, b, i % 4 == 3 ? DEV_IO_FUA : 0);
		if (!w->err)
			w->err = dev_rw_sync(w->d, DEV_OP_READ, sector, 128, r, 0);
		if (!w->err && memcmp(b, r, 65536))
			w->err = -EILSEQ;
	}
	free(b);
	free(r);
	return NULL;
}

/* File plugin over TCP: data reaches the file; depth=. */
static void test_file_tcp(void **state)
{
	(void)state;
	char img[256], arg[300];
	tmp_path(img, sizeof img, "tcp.img");
	make_sparse(img, 16u << 20);
	snprintf(arg, sizeof arg, "file=%s", img);
	struct srv s;
	srv_start(&s, true, "tcp", (const char *const[]){ "file", arg, NULL });
	char spec[600];
	snprintf(spec, sizeof spec, "%s,depth=4", s.spec);
	struct dev *d = open_ok(spec);
	struct dev_geometry g;
	dev_geometry_get(d, &g);
	assert_int_equal(g.queue_depth, 4);
	roundtrip(d, 16u << 20);
	char w[4096], r[4096];
	fill(w, sizeof w, 9);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 1000, 8, w, DEV_IO_FUA), 0);
	dev_close(d);
	int fd = open(img, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, r, sizeof r, 1000 * 512), (ssize_t)sizeof r);
	close(fd);
	assert_memory_equal(w, r, sizeof r);
	srv_stop(&s);
}

/* Connections nbdkit's log filter saw: opened, and carrying writes. */
static void log_conns(const char *path, int *opened, int *writing)
{
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	char line[1024];
	bool wrote[64] = { false };
	*opened = *writing = 0;
	while (fgets(line, sizeof line, fp)) {
		const char *p = strstr(line, "connection=");
		if (!p)
			continue;
		int id = atoi(p + 11);
		if (strstr(p, " Connect "))
			(*opened)++;
		else if (strstr(p, " Write ") && id >= 0 && id < 64 && !wrote[id])
			wrote[id] = true, (*writing)++;
	}
	fclose(fp);
}

/* conns=4 on a server that says multi-conn is safe (the file plugin):
 * four connections, four threads, every connection carries writes. A
 * server that does not say so (multi-conn filter) gets one. */
static void test_multi_conn(void **state)
{
	(void)state;
	char img[256], arg[300], log[256], larg[300];
	tmp_path(img, sizeof img, "mc.img");
	make_sparse(img, 16u << 20);
	snprintf(arg, sizeof arg, "file=%s", img);
	tmp_path(log, sizeof log, "mc.log");
	snprintf(larg, sizeof larg, "logfile=%s", log);
	struct srv s;
	srv_start(&s, true, "mc", (const char *const[]){ "--filter=log", "file", arg, larg, NULL });
	char spec[600];
	snprintf(spec, sizeof spec, "%s,conns=4,depth=16", s.spec);
	struct dev *d = open_ok(spec);
	pthread_t t[4];
	struct writer wr[4];
	for (unsigned i = 0; i < 4; i++) {
		wr[i] = (struct writer){ .d = d, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, writer_main, &wr[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(wr[i].err, 0);
	}
	assert_int_equal(dev_flush_sync(d), 0);
	dev_close(d);
	srv_stop(&s);
	int opened, writing;
	log_conns(log, &opened, &writing);
	assert_int_equal(opened, 4);
	assert_int_equal(writing, 4);

	tmp_path(log, sizeof log, "mc1.log");
	snprintf(larg, sizeof larg, "logfile=%s", log);
	srv_start(&s, false, "mc1",
		  (const char *const[]){ "--filter=log", "--filter=multi-conn", "memory", "16M", larg,
					 "multi-conn-mode=disable", NULL });
	snprintf(spec, sizeof spec, "%s,conns=4", s.spec);
	d = open_ok(spec);
	roundtrip(d, 16u << 20);
	dev_close(d);
	srv_stop(&s);
	log_conns(log, &opened, &writing);
	assert_int_equal(opened, 1);
}

/* The commands nbdkit's log filter saw, one letter each: W (write), F
 * (write with the FUA flag), f (flush), T (trim), R (read). */
static void read_log(const char *path, char *out, size_t n)
{
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	char line[1024];
	size_t k = 0;
	while (fgets(line, sizeof line, fp) && k + 1 < n) {
		const char *p = strstr(line, "connection=");
		if (!p || !(p = strchr(p, ' ')) || p[1] == '.')
			continue;
		p++;
		if (!strncmp(p, "Write ", 6))
			out[k++] = strstr(p, "fua=1") ? 'F' : 'W';
		else if (!strncmp(p, "Flush ", 6))
			out[k++] = 'f';
		else if (!strncmp(p, "Trim ", 5))
			out[k++] = 'T';
		else if (!strncmp(p, "Read ", 5))
			out[k++] = 'R';
	}
	out[k] = 0;
	fclose(fp);
}

/* What goes on the wire for FLUSH, PREFLUSH, FUA and DISCARD, with and
 * without the server's FUA flag (nbdkit's fua filter hides it). */
static void flags_on_wire(bool hide_fua, const char *expect)
{
	char log[256], larg[300], wire[256];
	tmp_path(log, sizeof log, hide_fua ? "nofua.log" : "fua.log");
	snprintf(larg, sizeof larg, "logfile=%s", log);
	struct srv s;
	if (hide_fua)
		srv_start(&s, false, "nofua",
			  (const char *const[]){ "--filter=log", "--filter=fua", "memory", "16M", larg, NULL });
	else
		srv_start(&s, false, "fua", (const char *const[]){ "--filter=log", "memory", "16M", larg, NULL });
	struct dev *d = open_ok(s.spec);
	char b[4096];
	fill(b, sizeof b, 1);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, b, DEV_IO_FUA), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 8, 8, b, DEV_IO_PREFLUSH), 0);
	assert_int_equal(dev_flush_sync(d), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_DISCARD, 16, 8, NULL, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, b, 0), 0);
	dev_close(d);
	srv_stop(&s);
	read_log(log, wire, sizeof wire);
	assert_string_equal(wire, expect);
}

static void test_flush_fua_trim(void **state)
{
	(void)state;
	flags_on_wire(false, "FfWfTR");
	flags_on_wire(true, "WffWfTR"); /* FUA write = write + flush */
}

static void test_read_only(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, false, "ro", (const char *const[]){ "-r", "memory", "4M", NULL });
	struct dev *d = open_ok(s.spec);
	char b[4096] = { 0 };
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, b, 0), 0);
	int rc = dev_rw_sync(d, DEV_OP_WRITE, 0, 8, b, 0);
	assert_int_equal(rc, -EROFS);
	assert_non_null(strstr(err_last(rc), "read-only"));
	assert_int_equal(dev_rw_sync(d, DEV_OP_DISCARD, 0, 8, NULL, 0), -EROFS);
	dev_close(d);
	srv_stop(&s);

	/* An ext3 image exported read-only: a writing mount is refused, a
	 * read-only one works. */
	char img[256], arg[300];
	tmp_path(img, sizeof img, "ro.img");
	assert_int_equal(fst_nostall_mkfs(img, 4096, 32u << 20), 0);
	snprintf(arg, sizeof arg, "file=%s", img);
	srv_start(&s, false, "rofs", (const char *const[]){ "-r", "file", arg, NULL });
	struct nostall_fs *fs;
	rc = nostall_mount(s.spec, NULL, 0, &fs);
	assert_int_equal(rc, -EROFS);
	printf("read-write mount of a read-only export: %s\n", nostall_errmsg(rc));
	assert_non_null(strstr(nostall_errmsg(rc), "read-only"));
	rc = nostall_mount(s.spec, NULL, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		fail_msg("read-only mount: %s", nostall_errmsg(rc));
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "/lost+found", 0, &st), 0);
	assert_int_equal(nostall_umount(fs), 0);
	srv_stop(&s);
}

static void test_bad_specs(void **state)
{
	(void)state;
	struct dev *d;
	int rc = dev_open("nbd:", &d);
	assert_int_equal(rc, -EINVAL);
	rc = dev_open("nbd:,depth=2", &d);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err_last(rc), "missing URI"));
	rc = dev_open("nbd:nbd://127.0.0.1:1/,depth=0", &d);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err_last(rc), "depth"));
	rc = dev_open("nbd:nbd://127.0.0.1:1/,timeout=-1", &d);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err_last(rc), "timeout"));
	rc = dev_open("nbd:nbd://127.0.0.1:1/,conns=99", &d);
	assert_int_equal(rc, -EINVAL);
	char spec[512], sock[256];
	tmp_path(sock, sizeof sock, "none.sock");
	snprintf(spec, sizeof spec, "nbd:nbd+unix:///?socket=%s", sock);
	rc = dev_open(spec, &d);
	assert_true(rc < 0);
	assert_non_null(strstr(err_last(rc), "cannot connect"));
	rc = dev_open("nbd:http://example.com/", &d);
	assert_true(rc < 0);

	/* A server that accepts the connection but never speaks: the
	 * handshake is bounded by the timeout. */
	tmp_path(sock, sizeof sock, "silent.sock");
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	sun_set(&a, sock);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(lfd, 4), 0);
	snprintf(spec, sizeof spec, "nbd:nbd+unix:///?socket=%s,timeout=0.2", sock);
	rc = dev_open(spec, &d);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_non_null(strstr(err_last(rc), "timeout"));
	close(lfd);
	unlink(sock);
}

struct async_wait {
	pthread_mutex_t m;
	pthread_cond_t c;
	int done, ok, eio, other;
};

static void async_done(struct dev_io *io, int err)
{
	struct async_wait *w = io->priv;
	pthread_mutex_lock(&w->m);
	w->done++;
	if (!err)
		w->ok++;
	else if (err == -EIO)
		w->eio++;
	else
		w->other++;
	pthread_cond_broadcast(&w->c);
	pthread_mutex_unlock(&w->m);
}

/* Submit n writes of 4 KiB at once (all in flight together), wait for all. */
static void async_writes(struct dev *d, int n, struct async_wait *w, void (*between)(void *), void *arg)
{
	struct dev_io *io = calloc((size_t)n, sizeof *io);
	char *buf = malloc((size_t)n * 4096);
	fill(buf, (size_t)n * 4096, 5);
	memset(w, 0, sizeof *w);
	pthread_mutex_init(&w->m, NULL);
	pthread_cond_init(&w->c, NULL);
	for (int i = 0; i < n; i++) {
		io[i] = (struct dev_io){ .op = DEV_OP_WRITE, .sector = (uint64_t)i * 8, .nr_sectors = 8,
					 .buf = buf + (size_t)i * 4096, .done = async_done, .priv = w };
		assert_int_equal(dev_submit(d, &io[i]), 0);
	}
	if (between)
		between(arg);
	pthread_mutex_lock(&w->m);
	while (w->done < n)
		pthread_cond_wait(&w->c, &w->m);
	pthread_mutex_unlock(&w->m);
	pthread_cond_destroy(&w->c);
	pthread_mutex_destroy(&w->m);
	free(io);
	free(buf);
}

static void test_depth_in_flight(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, false, "depth", (const char *const[]){ "memory", "16M", NULL });
	char spec[600];
	snprintf(spec, sizeof spec, "%s,depth=64", s.spec);
	struct dev *d = open_ok(spec);
	struct async_wait w;
	async_writes(d, 64, &w, NULL, NULL);
	assert_int_equal(w.ok, 64);
	char r[4096], e[4096];
	char *all = malloc(64 * 4096);
	fill(all, 64 * 4096, 5);
	for (int i = 0; i < 64; i += 9) {
		assert_int_equal(dev_rw_sync(d, DEV_OP_READ, (uint64_t)i * 8, 8, r, 0), 0);
		memcpy(e, all + (size_t)i * 4096, 4096);
		assert_memory_equal(r, e, 4096);
	}
	free(all);
	dev_close(d);
	srv_stop(&s);
}

static void kill_server(void *arg)
{
	srv_kill(arg);
}

/* nbdkit killed with writes in flight (the delay filter holds them): each
 * fails with -EIO, later commands too, close does not hang. */
static void test_server_killed(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, false, "kill",
		  (const char *const[]){ "--filter=delay", "memory", "16M", "delay-write=30", NULL });
	char spec[600];
	snprintf(spec, sizeof spec, "%s,timeout=60", s.spec);
	struct dev *d = open_ok(spec);
	struct async_wait w;
	async_writes(d, 8, &w, kill_server, &s);
	assert_int_equal(w.eio, 8);
	char b[4096];
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, b, 0), -EIO);
	assert_int_equal(dev_flush_sync(d), -EIO);
	dev_close(d);
	srv_stop(&s);
}

/* A server that stops answering (the delay filter holds reads for a
 * minute): the read fails with -EIO once the timeout has passed, the device
 * stays failed, close returns. */
static void test_timeout(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, false, "stall", (const char *const[]){ "--filter=delay", "memory", "16M", "delay-read=60", NULL });
	char spec[600];
	snprintf(spec, sizeof spec, "%s,timeout=1.5", s.spec);
	struct dev *d = open_ok(spec);
	char b[4096];
	fill(b, sizeof b, 2);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, b, 0), 0);
	assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 0, 8, b, 0), -EIO);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 0, 8, b, 0), -EIO);
	dev_close(d);
	srv_stop(&s);
}

/* ---- journal on nbd: ---- */

static void test_journal(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, false, "jbd", (const char *const[]){ "memory", "16M", NULL });
	struct env e;
	env_open_spec(&e, s.spec, NULL, NULL, JLEN);
	uint64_t b[] = { DATA0, DATA0 + 5, DATA0 + 9 };
	write_tx(&e, b, 3, 0x22, true);
	struct dev *snap = snapshot(&e);
	assert_int_equal(first_byte(snap, DATA0), 0);
	struct jbd_recovery_info info;
	recover_snapshot(&e, snap, &info);
	assert_true(info.needed);
	assert_int_equal(info.replayed, 3);
	assert_int_equal(first_byte(snap, DATA0 + 9), 0x22);
	dev_close(snap);
	assert_int_equal(env_close(&e), 0);
	srv_stop(&s);
}

/* nbdkit's error filter fails every write once a file exists: the commit
 * fails with -EIO, the journal aborts, new handles get -EROFS. */
static void test_journal_write_error(void **state)
{
	(void)state;
	char errf[256], farg[300];
	tmp_path(errf, sizeof errf, "jbd-fail");
	unlink(errf);
	snprintf(farg, sizeof farg, "error-pwrite-file=%s", errf);
	struct srv s;
	srv_start(&s, false, "jbderr",
		  (const char *const[]){ "--filter=error", "memory", "16M", "error-pwrite-rate=100%", farg, NULL });
	struct env e;
	env_open_spec(&e, s.spec, NULL, NULL, JLEN);
	uint64_t b[] = { DATA0 };
	write_tx(&e, b, 1, 0x11, true);
	touch(errf);
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, 1, &h), 0);
	put_block(h, &e, DATA0 + 1, 0x77, false);
	jbd_handle_set_sync(h, true);
	assert_int_equal(jbd_handle_stop(h), -EIO);
	assert_true(jbd_journal_aborted(e.j));
	assert_int_equal(jbd_handle_start(e.j, 1, &h), -EROFS);
	assert_int_not_equal(env_close(&e), 0);
	unlink(errf);
	srv_stop(&s);
}

/* ---- the filesystem on nbd: ---- */

static int fsck_image(const char *img, bool fix)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "e2fsck -f%s '%s' >/dev/null 2>&1", fix ? "y" : "n", img);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct nbd_factory {
	char image[256];
	const char *spec;
};

/* A fresh image at the same path: the file plugin opens it per connection. */
static int nbd_factory_create(void *ctx, struct fs_target **out)
{
	struct nbd_factory *f = ctx;
	int rc = fst_nostall_mkfs(f->image, 4096, 128u << 20);
	if (rc)
		return rc;
	return fst_nostall_new(&(struct fst_nostall_cfg){ .image = f->image, .spec = f->spec,
							   .opts = "data=ordered", .fsck = true },
			       out);
}

static void test_fs_random(void **state)
{
	(void)state;
	struct nbd_factory nf;
	tmp_path(nf.image, sizeof nf.image, "random.img");
	assert_int_equal(fst_nostall_mkfs(nf.image, 4096, 128u << 20), 0);
	char arg[300];
	snprintf(arg, sizeof arg, "file=%s", nf.image);
	struct srv s;
	srv_start(&s, false, "random", (const char *const[]){ "file", arg, NULL });
	nf.spec = s.spec;
	struct fst_factory f = { nbd_factory_create, &nf };
	struct fsdrive_cfg c;
	struct fsdrive_result res;
	fsdrive_cfg_default(&c);
	fsdrive_cfg_env(&c);
	c.seed = seed;
	const char *n = getenv("NOSTALL_NBD_FSOPS");
	c.nops = n && *n ? (unsigned)strtoul(n, NULL, 0) : 400;
	c.check_every = 150;
	c.minimize = false;
	c.out = stdout;
	printf("nbd fs random: %u operations, seed %llu (rerun: NOSTALL_SEED=%llu)\n", c.nops,
	       (unsigned long long)seed, (unsigned long long)seed);
	assert_int_equal(fsdrive_random(&f, &c, &res), 0);
	if (res.failed)
		fail_msg("seed %llu: mismatch at operation %zu (script %s):\n%s", (unsigned long long)seed,
			 res.fail_index, res.script, res.msg);
	srv_stop(&s);
	assert_int_equal(fsck_image(nf.image, false), 0);
	unlink(nf.image);
}

static void put_file(struct nostall_fs *fs, const char *path, const char *text, int expect_fsync)
{
	struct nostall_file *f;
	int rc = nostall_create(fs, path, NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f);
	if (rc)
		fail_msg("create %s: %s", path, nostall_errmsg(rc));
	assert_int_equal(nostall_write(f, text, strlen(text)), (ssize_t)strlen(text));
	rc = nostall_fsync(f, 0);
	if (expect_fsync)
		assert_int_equal(rc, expect_fsync);
	else if (rc)
		fail_msg("fsync %s: %s", path, nostall_errmsg(rc));
	nostall_close(f);
}

/* Write errors injected under a mounted filesystem: fsync fails, the
 * journal aborts, -EROFS after, unmount returns; e2fsck then recovers the
 * committed state (the file fsync'ed before the errors). */
static void test_fs_write_errors(void **state)
{
	(void)state;
	char img[256], errf[256], farg[300], iarg[300];
	tmp_path(img, sizeof img, "err.img");
	tmp_path(errf, sizeof errf, "fs-fail");
	unlink(errf);
	assert_int_equal(fst_nostall_mkfs(img, 4096, 64u << 20), 0);
	snprintf(iarg, sizeof iarg, "file=%s", img);
	snprintf(farg, sizeof farg, "error-pwrite-file=%s", errf);
	struct srv s;
	srv_start(&s, false, "fserr",
		  (const char *const[]){ "--filter=error", "file", iarg, "error-pwrite-rate=100%", farg, NULL });
	struct nostall_fs *fs;
	int rc = nostall_mount(s.spec, "data=ordered", 0, &fs);
	if (rc)
		fail_msg("mount: %s", nostall_errmsg(rc));
	put_file(fs, "/kept", "committed before the errors\n", 0);
	touch(errf);
	put_file(fs, "/lost", "written while the server fails writes\n", -EIO);
	assert_int_equal(nostall_mkdir(fs, "/d", 0755), -EROFS);
	rc = nostall_umount(fs);
	assert_true(rc < 0);
	unlink(errf);
	srv_stop(&s);

	int fix = fsck_image(img, true);
	assert_true(fix == 0 || fix == 1);
	assert_int_equal(fsck_image(img, false), 0);
	rc = nostall_mount(img, NULL, NOSTALL_MOUNT_RDONLY, &fs);
	if (rc)
		fail_msg("mount after e2fsck: %s", nostall_errmsg(rc));
	struct nostall_file *f;
	assert_int_equal(nostall_open(fs, "/kept", NOSTALL_O_RDONLY, &f), 0);
	char buf[64] = { 0 };
	assert_int_equal(nostall_read(f, buf, sizeof buf), 28);
	assert_string_equal(buf, "committed before the errors\n");
	nostall_close(f);
	assert_int_equal(nostall_umount(fs), 0);
	unlink(img);
}

/* nbdkit killed under a mounted filesystem: the next fsync fails, nothing
 * hangs, and the image still checks clean after journal recovery. */
static void test_fs_server_killed(void **state)
{
	(void)state;
	char img[256], iarg[300];
	tmp_path(img, sizeof img, "kill.img");
	assert_int_equal(fst_nostall_mkfs(img, 4096, 64u << 20), 0);
	snprintf(iarg, sizeof iarg, "file=%s", img);
	struct srv s;
	srv_start(&s, true, "fskill", (const char *const[]){ "file", iarg, NULL });
	char spec[600];
	snprintf(spec, sizeof spec, "%s,timeout=5", s.spec);
	struct nostall_fs *fs;
	int rc = nostall_mount(spec, NULL, 0, &fs);
	if (rc)
		fail_msg("mount: %s", nostall_errmsg(rc));
	put_file(fs, "/a", "before\n", 0);
	srv_kill(&s);
	struct nostall_file *f;
	rc = nostall_create(fs, "/b", NOSTALL_O_WRONLY | NOSTALL_O_CREAT, 0644, &f);
	if (!rc) {
		assert_int_equal(nostall_write(f, "x", 1), 1);
		rc = nostall_fsync(f, 0);
		nostall_close(f);
	}
	assert_true(rc == -EIO || rc == -EROFS);
	assert_true(nostall_umount(fs) < 0);
	srv_stop(&s);
	int fix = fsck_image(img, true);
	assert_true(fix == 0 || fix == 1);
	assert_int_equal(fsck_image(img, false), 0);
	unlink(img);
}

static int teardown_dir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd);
}

int main(void)
{
	int oc = oracles_check("test_dev_nbd", "nbdkit e2fsck mke2fs");
	if (oc >= 0)
		return oc;
	signal(SIGPIPE, SIG_IGN);
	seed = fsdrive_seed();
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_memory_unix, srv_teardown),
		cmocka_unit_test_teardown(test_file_tcp, srv_teardown),
		cmocka_unit_test_teardown(test_multi_conn, srv_teardown),
		cmocka_unit_test_teardown(test_flush_fua_trim, srv_teardown),
		cmocka_unit_test_teardown(test_read_only, srv_teardown),
		cmocka_unit_test_teardown(test_bad_specs, srv_teardown),
		cmocka_unit_test_teardown(test_depth_in_flight, srv_teardown),
		cmocka_unit_test_teardown(test_server_killed, srv_teardown),
		cmocka_unit_test_teardown(test_timeout, srv_teardown),
		cmocka_unit_test_teardown(test_journal, srv_teardown),
		cmocka_unit_test_teardown(test_journal_write_error, srv_teardown),
		cmocka_unit_test_teardown(test_fs_random, srv_teardown),
		cmocka_unit_test_teardown(test_fs_write_errors, srv_teardown),
		cmocka_unit_test_teardown(test_fs_server_killed, srv_teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	teardown_dir();
	return rc;
}
