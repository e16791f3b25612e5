/* crashtest: the workloads with a job of their own (docs/crashtest-workloads.md).
 *
 *   wl_common.c  dispatch from crash_job_run, report columns, nostall's
 *                recovery of an image, a filesystem's contents, e2fsck;
 *   wl_recovery.c  `recovery`: crash states of other workloads, their
 *                recovery recorded and crashed at every write;
 *   wl_eio.c     `eio-loop`: a fault: device fails writes (and reads) from
 *                a random point on; the journal aborts; recover and check.
 */
#ifndef NOSTALL_TOOLS_CRASH_WL_H
#define NOSTALL_TOOLS_CRASH_WL_H

#include "crash.h"

int wl_recovery_run(const struct crash_job *j, struct crash_result *r);
int wl_eio_run(const struct crash_job *j, struct crash_result *r);

double wl_now(void);
uint64_t wl_mix(uint64_t a, uint64_t b, uint64_t c);
int wl_set_err(struct crash_result *r, int rc, const char *what);
/* The watchdog's heartbeat (wl_count beats too): a job without one for
 * 20 s reports a hang and ends. */
void wl_beat(void);
/* Count one checked state (what: how to name it) with its verdict in r. */
void wl_count(struct crash_result *r, const struct crash_job *j, const struct crash_verdict *v, const char *what);

/* Images of CRASH_IMAGE_BYTES. */
int wl_dev_new(struct dev **out); /* a fresh mem: device */
int wl_dev_read(struct dev *d, uint8_t *img);
int wl_dev_write(struct dev *d, const uint8_t *img, bool skip_zero);
int wl_img_save(const uint8_t *img, const char *path);
int wl_img_load(const char *path, uint8_t *img);

/* Open spec (a log: or fault: device over mem:), write the base image
 * through it (1 MiB writes and a flush: *ncmds commands), mark "base", and
 * with mode mount it with the recording's options (data=MODE,barrier=1,OPTS). */
int wl_record_open(const char *spec, const uint8_t *base, const char *mode, const char *opts, struct dev **dev,
		   struct nostall_fs **fs, unsigned *ncmds);

/* nostall's recovery, what check.c does: the journal replay, then, when it
 * left an orphan list, a read-write mount (data=MODE,OPTS) and unmount.
 * 0, or the failure (described in why). */
int wl_recover(struct dev *dev, const char *mode, const char *opts, bool *orphans, char *why, size_t len);

/* A filesystem's contents as the checker compares them: every name
 * (sorted per directory), its inode number, type, owner, size, blocks,
 * links and data hash, and the free counts. */
struct wl_tent {
	char *path;
	uint64_t ino, size, blocks, hash;
	uint32_t mode, nlink, uid;
};
struct wl_tree {
	struct wl_tent *e;
	size_t n, cap;
	uint64_t blocks_free, files_free;
};
int wl_tree_read(struct dev *dev, struct wl_tree *t); /* a read-only mount */
void wl_tree_free(struct wl_tree *t);
/* true (and why) when they differ. */
bool wl_tree_diff(const struct wl_tree *a, const struct wl_tree *b, char *why, size_t len);

/* e2fsck OPT1 [OPT2] IMG > OUT: its exit status (or -errno); sum: its
 * first problem lines. */
int wl_e2fsck(const char *opt1, const char *opt2, const char *img, const char *out, char *sum, size_t len);

#endif
