/* bench fs's file workloads as load phases, for `bench fs --mount`
 * (docs/bench-fs.md): the same operations as the library's bench fs
 * (tools/bench/bench_fs_load.c), as POSIX calls through a mount. Each phase is
 * one `nostall load DIR PHASE` so that the driver can make every cache
 * cold between phases (rp_peer_cold: a remount for nostall's FUSE daemon,
 * drop_caches for the kernel's caches), which a process inside the mount
 * cannot do:
 *
 *   stream-write  1 MiB writes of stream_bytes, fsync, close   write_mbps
 *   stream-read   read that file back in 1 MiB reads           read_mbps
 *   creates       `files` small files in `dirs` directories:
 *                 create+write+close, the last one fsynced,
 *                 then the whole filesystem synced             creates_per_s
 *   stats         stat each (sizes checked)                    stats_per_s
 *   unlinks       unlink each, then the filesystem synced      unlinks_per_s
 *
 * Each small file is 1 KiB (bench fs's creates_bytes) unless tester_write
 * (no meaning for these phases otherwise) gives its size, at most 1 MiB:
 * bench fs --mount's creates pass `--tester-write 4096` (issue 36's
 * creates), its manyfiles `--tester-write 100`. bench repro never runs
 * these phases.
 *
 * The directories are made before the creates' clock starts (bench fs
 * does the same). The last file's fsync is there for fuse2fs, whose
 * syncfs is a no-op (FUSE) and whose fsync flushes everything: every
 * system pays one fsync, and every system's creates end durable.
 */
#include "repro.h"

#include "util/clock.h"
#include "util/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1024u * 1024)
#define FILE_BYTES 1024u /* bench fs's creates_bytes */

static double rate(uint64_t n, uint64_t ns)
{
	return ns ? (double)n / ((double)ns / 1e9) : 0;
}

static int stream_write(struct rp_fs *fs, const struct rp_params *p, struct rp_out *o, char *buf)
{
	for (unsigned i = 0; i < CHUNK; i++)
		buf[i] = (char)('a' + i % 26);
	uint64_t t0 = clock_now_ns();
	struct rp_file *f;
	int rc = rp_open(fs, "stream", O_CREAT | O_WRONLY | O_TRUNC, &f);
	if (rc)
		return rc;
	for (uint64_t done = 0; !rc && done < p->stream_bytes;) {
		size_t len = p->stream_bytes - done < CHUNK ? (size_t)(p->stream_bytes - done) : CHUNK;
		ssize_t n = rp_write(f, buf, len);
		if (n < 0)
			rc = (int)n;
		else
			done += (uint64_t)n;
	}
	rc = rc ? rc : rp_fsync(f);
	int crc = rp_close(f);
	rc = rc ? rc : crc;
	if (!rc)
		rp_out_metric(o, "write_mbps", rate(p->stream_bytes, clock_now_ns() - t0) / RP_MiB, "MiB/s");
	return rc;
}

static int stream_read(struct rp_fs *fs, const struct rp_params *p, struct rp_out *o, char *buf)
{
	uint64_t t0 = clock_now_ns(), got = 0;
	struct rp_file *f;
	int rc = rp_open(fs, "stream", O_RDONLY, &f);
	if (rc)
		return rc;
	for (;;) {
		ssize_t n = rp_pread(f, buf, CHUNK, got);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		got += (uint64_t)n;
	}
	int crc = rp_close(f);
	rc = rc ? rc : crc;
	if (!rc && got != p->stream_bytes)
		rc = err_set(-EIO, "read back %llu bytes of %llu", (unsigned long long)got,
			     (unsigned long long)p->stream_bytes);
	if (!rc)
		rp_out_metric(o, "read_mbps", rate(got, clock_now_ns() - t0) / RP_MiB, "MiB/s");
	return rc;
}

static void file_path(char *path, size_t n, const struct rp_params *p, unsigned i)
{
	snprintf(path, n, "d%u/f%u", i % p->dirs, i);
}

static unsigned file_bytes(const struct rp_params *p)
{
	return p->tester_write && p->tester_write <= CHUNK ? (unsigned)p->tester_write : FILE_BYTES;
}

static int create_one(struct rp_fs *fs, const char *path, const char *buf, unsigned bytes, bool last)
{
	struct rp_file *f;
	int rc = rp_open(fs, path, O_CREAT | O_EXCL | O_WRONLY, &f);
	if (rc)
		return rc;
	ssize_t n = rp_write(f, buf, bytes);
	if (n >= 0 && (size_t)n != bytes)
		n = err_set(-EIO, "short write to %s: %zd of %u bytes", path, n, bytes);
	rc = n < 0 ? (int)n : last ? rp_fsync(f) : 0;
	int crc = rp_close(f);
	return rc ? rc : crc;
}

static int small_files(struct rp_fs *fs, enum rp_kind k, const struct rp_params *p, struct rp_out *o, char *buf)
{
	static const char *const metric[] = { "creates_per_s", "stats_per_s", "unlinks_per_s" };
	char path[48];
	int rc = 0;
	memset(buf, 'c', CHUNK);
	for (unsigned d = 0; k == RP_CREATES && d < p->dirs && !rc; d++) {
		snprintf(path, sizeof path, "d%u", d);
		rc = rp_mkdir(fs, path);
	}
	uint64_t t0 = clock_now_ns();
	for (unsigned i = 0; i < p->files && !rc; i++) {
		file_path(path, sizeof path, p, i);
		uint64_t size;
		if (k == RP_CREATES) {
			rc = create_one(fs, path, buf, file_bytes(p), i + 1 == p->files);
		} else if (k == RP_STATS) {
			rc = rp_stat(fs, path, &size);
			if (!rc && size != file_bytes(p))
				rc = err_set(-EIO, "stat %s: size %llu, want %u", path, (unsigned long long)size,
					     file_bytes(p));
		} else {
			rc = rp_unlink(fs, path);
		}
	}
	if (!rc && k != RP_STATS)
		rc = rp_syncfs(fs);
	if (!rc)
		rp_out_metric(o, metric[k - RP_CREATES], rate(p->files, clock_now_ns() - t0), "1/s");
	if (!rc)
		rp_out_metric(o, "files", p->files, "count");
	return rc;
}

int rp_files_run(struct rp_fs *fs, enum rp_kind k, const struct rp_params *p, struct rp_out *o)
{
	char *buf = malloc(CHUNK);
	if (!buf)
		return err_set(-ENOMEM, "out of memory");
	int rc;
	if (k == RP_STREAM_WRITE)
		rc = stream_write(fs, p, o, buf);
	else if (k == RP_STREAM_READ)
		rc = stream_read(fs, p, o, buf);
	else if (k >= RP_CREATES && k <= RP_UNLINKS)
		rc = small_files(fs, k, p, o, buf);
	else
		rc = err_set(-EINVAL, "%s is not a file phase", rp_kind_name(k));
	free(buf);
	return rc;
}
