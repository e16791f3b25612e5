/* The peer filesystems on one image file (rp_peer.h): making, mounting,
 * unmounting them and making their caches cold, with the tools a user
 * would run (mkfs.ext3, losetup, mount, fuse2fs, nostall mount/umount).
 * Shared by bench repro --peers and bench fs --mount. */
#include "rp_peer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run argv with stdout+stderr captured (first bytes, trimmed) in out.
 * Returns the exit status, 127 when it could not be run. */
static int cmd_run(char *const argv[], char *out, size_t outlen)
{
	int p[2];
	if (pipe(p))
		return 127;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return 127;
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		close(p[1]);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "%s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	size_t have = 0;
	char sink[512];
	for (;;) {
		ssize_t n = have + 1 < outlen ? read(p[0], out + have, outlen - 1 - have) : read(p[0], sink, sizeof sink);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (have + 1 < outlen)
			have += (size_t)n;
	}
	close(p[0]);
	if (outlen)
		out[have] = 0;
	while (have && (out[have - 1] == '\n' || out[have - 1] == ' '))
		out[--have] = 0;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool have_tool(const char *name)
{
	char out[64];
	char *argv[] = { "sh", "-c", NULL, NULL };
	char script[128];
	snprintf(script, sizeof script, "command -v %s", name);
	argv[2] = script;
	return cmd_run(argv, out, sizeof out) == 0;
}

void rp_peer_why(const char *self, const char *system, char *why, size_t n)
{
	why[0] = 0;
	if (geteuid() != 0 && strcmp(system, "nostall-fuse")) {
		snprintf(why, n, "skipped: mounting needs root");
		return;
	}
	if (!strcmp(system, "nostall-fuse")) {
		char out[256];
		char *argv[] = { (char *)self, "mount", "--help", NULL };
		if (cmd_run(argv, out, sizeof out) != 0)
			snprintf(why, n, "skipped: `nostall mount` is not built (issue 11, wt-fuse)");
		else if (access("/dev/fuse", R_OK | W_OK))
			snprintf(why, n, "skipped: no /dev/fuse");
	} else if (!strcmp(system, "kernel-ext3")) {
		if (!have_tool("mkfs.ext3") || !have_tool("losetup"))
			snprintf(why, n, "skipped: mkfs.ext3 or losetup missing (e2fsprogs, mount)");
	} else if (!strcmp(system, "fuse2fs")) {
		if (!have_tool("fuse2fs") || !have_tool("mkfs.ext3"))
			snprintf(why, n, "skipped: fuse2fs missing (apt-get install fuse2fs)");
		else if (access("/dev/fuse", R_OK | W_OK))
			snprintf(why, n, "skipped: no /dev/fuse");
	} else {
		snprintf(why, n, "skipped: unknown system %s", system);
	}
}

/* /sys/block/loopN/loop/dio of /dev/loopN: 1, 0, or -1 (unreadable). */
static int loop_dio_state(const char *loop)
{
	const char *name = strrchr(loop, '/');
	char path[128], v[8] = "";
	snprintf(path, sizeof path, "/sys/block/%s/loop/dio", name ? name + 1 : loop);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	bool ok = fgets(v, sizeof v, f) != NULL;
	fclose(f);
	return !ok ? -1 : v[0] == '1' ? 1 : v[0] == '0' ? 0 : -1;
}

int rp_peer_daemon_pid(const struct rp_peer *p)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int found = 0;
	for (struct dirent *e; !found && (e = readdir(d));) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid())
			continue;
		char path[64], buf[4096];
		snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		/* NUL-separated: ... mount ... IMAGE DIR */
		const char *args[64];
		int na = 0;
		for (ssize_t i = 0; i < len && na < 64; i += (ssize_t)strlen(buf + i) + 1)
			args[na++] = buf + i;
		bool mount = false;
		for (int i = 1; i < na; i++)
			mount = mount || !strcmp(args[i], "mount");
		if (mount && na >= 4 && !strcmp(args[na - 1], p->dir) && !strcmp(args[na - 2], p->image))
			found = (int)pid;
	}
	closedir(d);
	return found;
}

unsigned long long rp_peer_hwm_kb(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = pid > 0 ? fopen(path, "r") : NULL;
	unsigned long long kb = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static int fail_cmd(const char *what, int st, const char *out, char *why, size_t n)
{
	snprintf(why, n, "skipped: %s failed (%d): %.100s", what, st, out);
	return -1;
}

/* The peers' mkfs: mkfs.ext3 as always, or mke2fs -t FS [-O FEATURES]
 * for --fs (the same type and features nostall mkfs gets). */
static int mkfs_ext3(struct rp_peer *p, char *why, size_t n)
{
	char out[256], nbuf[16];
	char *argv[16] = { "mkfs.ext3", "-q", "-F", "-b", "4096" };
	int k = 5;
	if (p->fs) {
		argv[0] = "mke2fs";
		argv[k++] = "-t";
		argv[k++] = (char *)p->fs;
	}
	if (p->features && *p->features) {
		argv[k++] = "-O";
		argv[k++] = (char *)p->features;
	}
	if (p->inodes) { /* -N before the image */
		snprintf(nbuf, sizeof nbuf, "%u", p->inodes);
		argv[k++] = "-N";
		argv[k++] = nbuf;
	}
	argv[k++] = p->image;
	argv[k] = NULL;
	int st = cmd_run(argv, out, sizeof out);
	return st ? fail_cmd(argv[0], st, out, why, n) : 0;
}

/* Mount what is on the image (no mkfs); kernel-ext3 sets up the loop. */
static int peer_attach(struct rp_peer *p, char *why, size_t n)
{
	char out[256], opts[320];
	int st;
	if (!strcmp(p->system, "kernel-ext3")) {
		char *la[] = { "losetup", "-f", "--show", p->image, NULL, NULL };
		if (p->loop_dio) {
			la[3] = "--direct-io=on";
			la[4] = p->image;
		}
		if ((st = cmd_run(la, p->loop, sizeof p->loop))) {
			snprintf(out, sizeof out, "%s", p->loop);
			p->loop[0] = 0;
			return fail_cmd("losetup", st, out, why, n);
		}
		if (p->loop_dio)
			p->dio = loop_dio_state(p->loop);
		const char *kfs = p->fs ? p->fs : "ext3";
		snprintf(opts, sizeof opts, "data=%s,barrier=1", p->mode);
		char *ma[] = { "mount", "-t", (char *)kfs, "-o", opts, p->loop, p->dir, NULL };
		if (!strcmp(kfs, "ext2")) { /* no journal: no data= or barrier= */
			ma[3] = p->loop;
			ma[4] = p->dir;
			ma[5] = NULL;
		}
		st = cmd_run(ma, out, sizeof out);
	} else if (!strcmp(p->system, "fuse2fs")) {
		char *ma[] = { "fuse2fs", p->image, p->dir, NULL };
		st = cmd_run(ma, out, sizeof out);
	} else {
		/* mode NULL: the library's default data mode (no data=); ext2 has
		 * none (data= is refused without a journal) */
		const char *mode = p->fs && !strcmp(p->fs, "ext2") ? NULL : p->mode;
		snprintf(opts, sizeof opts, "%s%s%s%s", mode ? "data=" : "", mode ? mode : "",
			 mode && p->opts ? "," : "", p->opts ? p->opts : "");
		char *ma[] = { (char *)p->self, "mount", "-o", opts, p->image, p->dir, NULL };
		if (!opts[0]) {
			ma[2] = p->image;
			ma[3] = p->dir;
			ma[4] = NULL;
		}
		st = cmd_run(ma, out, sizeof out);
	}
	if (st) {
		fail_cmd("mount", st, out, why, n);
		rp_peer_umount(p); /* the loop device set up before the failure */
		return -1;
	}
	p->mounted = true;
	return 0;
}

int rp_peer_mount(struct rp_peer *p, char *why, size_t n)
{
	if (strcmp(p->system, "nostall-fuse")) {
		if (mkfs_ext3(p, why, n))
			return -1;
	} else {
		char out[256], nbuf[16];
		char *ka[16] = { (char *)p->self, "mkfs", "-q" };
		int k = 3;
		if (p->fs) {
			ka[k++] = "-t";
			ka[k++] = (char *)p->fs;
		}
		if (p->features && *p->features) {
			ka[k++] = "-O";
			ka[k++] = (char *)p->features;
		}
		if (p->inodes) {
			snprintf(nbuf, sizeof nbuf, "%u", p->inodes);
			ka[k++] = "-N";
			ka[k++] = nbuf;
		}
		ka[k++] = p->image;
		ka[k] = NULL;
		int st = cmd_run(ka, out, sizeof out);
		if (st)
			return fail_cmd("nostall mkfs", st, out, why, n);
	}
	return peer_attach(p, why, n);
}

/* nostall-fuse: `nostall umount` waits for the daemon to finish with the
 * image (umount(8) returns while it still writes back), so the next
 * mount does not find it busy. */
void rp_peer_umount(struct rp_peer *p)
{
	char out[256];
	bool fuse = !strcmp(p->system, "nostall-fuse");
	if (fuse && p->track_hwm && p->mounted) {
		unsigned long long kb = rp_peer_hwm_kb(rp_peer_daemon_pid(p));
		if (kb > p->hwm_kb)
			p->hwm_kb = kb;
	}
	for (int i = 0; p->mounted && i < 20; i++) {
		char *ua[] = { "umount", p->dir, NULL };
		char *na[] = { (char *)p->self, "umount", p->dir, NULL };
		if (cmd_run(fuse ? na : ua, out, sizeof out) == 0)
			p->mounted = false;
		else
			usleep(250000); /* a killed load may still hold it */
	}
	if (p->loop[0]) {
		char *da[] = { "losetup", "-d", p->loop, NULL };
		cmd_run(da, out, sizeof out);
		p->loop[0] = 0;
	}
}

static int drop_host(void)
{
	sync();
	FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
	int rc = f && fputs("3", f) >= 0 ? 0 : -1;
	if (f && fclose(f))
		rc = -1;
	return rc;
}

int rp_peer_cold(struct rp_peer *p, char *why, size_t n)
{
	if (!strcmp(p->system, "nostall-fuse")) {
		rp_peer_umount(p);
		if (p->mounted) {
			snprintf(why, n, "failed: nostall umount %s did not finish", p->dir);
			return -1;
		}
		if (peer_attach(p, why, n))
			return -1;
	}
	/* nostall reads its image with O_DIRECT: the remount was enough */
	if (drop_host() && strcmp(p->system, "nostall-fuse")) {
		snprintf(why, n, "skipped: cannot drop the host's caches (/proc/sys/vm/drop_caches needs root)");
		return -1;
	}
	return 0;
}

int rp_peer_drop_host(char *why, size_t n)
{
	if (drop_host()) {
		snprintf(why, n, "skipped: cannot drop the host's caches (/proc/sys/vm/drop_caches needs root)");
		return -1;
	}
	return 0;
}
