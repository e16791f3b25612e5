/* nostall recover: replay the ext3 journal of an image, like e2fsck does
 * before checking (`e2fsck -E journal_only`):
 *   - find the journal inode (8) through the ext3 read path
 *     (src/extfs/core/ext3_journal.c: mount checks, inode 8's block map);
 *   - SCAN, REVOKE, REPLAY (src/jbd/jbd_recovery.c), flush;
 *   - mark the journal empty (s_start 0, s_sequence = end + 1), then clear
 *     needs_recovery in the ext3 superblock; a journal that recorded an
 *     error (s_errno) marks the filesystem as having errors.
 *
 * usage: nostall recover [--device SPEC] [-o OPTS] IMAGE
 *   IMAGE          an image file (opened as file:IMAGE), or a device spec
 *   --device SPEC  the device spec to open instead of IMAGE (e.g. a fault:
 *                  or log: wrapper); IMAGE may then be omitted
 *   -o OPTS        dry_run (scan and report, write nothing), quiet,
 *                  orphans (then finish what the orphan list holds: a
 *                  read-write mount and its unmount, as a kernel mount or
 *                  `e2fsck -E journal_only` would; docs/cli.md)
 * Exit: 0 recovered or nothing to do, 1 failure, 2 usage.
 */
#include "../common/cmds.h"

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "jbd/jbd.h"
#include "util/err.h"
#include "util/opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char recover_usage[] =
	"usage: nostall recover [--device SPEC] [-o dry_run,quiet,orphans] IMAGE\n"
	"  replays the ext3 journal of IMAGE (a file, or a device spec such as mem:, sim:, log:);\n"
	"  orphans: then truncates and frees the inodes on the orphan list, as e2fsck -E journal_only\n";

struct ropts {
	bool dry_run, quiet, orphans;
};

static int ropt_cb(void *ctx, const char *name, const char *value)
{
	struct ropts *o = ctx;
	bool v = true;
	if (value && opts_parse_bool(value, &v) < 0)
		return err_set(-EINVAL, "bad value '%s' for %s", value, name);
	if (!strcmp(name, "dry_run"))
		o->dry_run = v;
	else if (!strcmp(name, "quiet"))
		o->quiet = v;
	else if (!strcmp(name, "orphans"))
		o->orphans = v;
	else
		return err_set(-EINVAL, "unknown option '%s' (known: dry_run, quiet, orphans)", name);
	return 0;
}

/* The orphan list's truncates and deletions: a read-write mount runs them
 * (ext3_orphan_cleanup, with the data mode the superblock or the build
 * defaults to), its unmount commits and checkpoints them. */
static int recover_orphans(struct dev *dev, const char *name, bool quiet)
{
	struct ext3_fs *fs;
	int rc = ext3_fs_mount(dev, NULL, EXT3_MOUNT_JOURNAL, &fs);
	if (rc < 0) {
		fprintf(stderr, "nostall recover: %s: mounting for the orphan cleanup: %s\n", name,
			err_last(rc));
		return rc;
	}
	rc = ext3_fs_unmount(fs);
	if (rc < 0)
		fprintf(stderr, "nostall recover: %s: unmount after the orphan cleanup: %s\n", name,
			err_last(rc));
	else if (!quiet)
		printf("%s: orphan list processed\n", name);
	return rc;
}

int cmd_recover(int argc, char **argv)
{
	const char *device = NULL, *opts = NULL;
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	optind = 1;
	int ch;
	while ((ch = getopt_long(argc, argv, "d:o:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': device = optarg; break;
		case 'o': opts = optarg; break;
		case 'h': fputs(recover_usage, stdout); return 0;
		default: fputs(recover_usage, stderr); return 2;
		}
	}
	struct ropts ro = { 0 };
	if (opts) {
		int rc = opts_parse(opts, ropt_cb, &ro);
		if (rc < 0) {
			fprintf(stderr, "nostall recover: -o %s: %s\n", opts, err_last(rc));
			return 2;
		}
	}
	const char *image = optind < argc ? argv[optind] : NULL;
	if (optind + (image ? 1 : 0) != argc || (!image && !device)) {
		fputs(recover_usage, stderr);
		return 2;
	}
	char spec[4096];
	if (device)
		snprintf(spec, sizeof spec, "%s", device);
	else if (dev_spec_has_kind(image))
		snprintf(spec, sizeof spec, "%s", image);
	else
		snprintf(spec, sizeof spec, "file:%s", image);
	const char *name = image ? image : device;

	struct dev *dev;
	int rc = dev_open(spec, &dev);
	if (rc < 0) {
		fprintf(stderr, "nostall recover: %s: %s\n", name, err_last(rc));
		return 1;
	}
	struct jbd_recovery_info info;
	bool did = false;
	/* Replaying writes: nobody else may have the image (a kernel mount's
	 * journal is live; docs/devices.md "Image locks"). */
	rc = dev_lock(dev, ro.dry_run ? DEV_LOCK_SHARED : DEV_LOCK_EXCL);
	if (!rc)
		rc = ext3_journal_recover(dev, ro.dry_run ? JBD_RECOVER_DRY_RUN : 0, &info, &did);
	if (rc < 0) {
		fprintf(stderr, "nostall recover: %s: %s\n", name, err_last(rc));
		goto out;
	}
	if (ro.orphans && !ro.dry_run) {
		rc = recover_orphans(dev, name, ro.quiet);
		if (rc < 0)
			goto out;
	}
	if (ro.quiet)
		goto out;
	if (!info.needed) {
		printf("%s: journal is clean (sequence %u)%s\n", name, info.start_tid,
		       did ? ", needs_recovery cleared" : "");
		goto out;
	}
	printf("%s: %s transactions %u..%u (%u committed): %llu blocks replayed, %llu revoked, "
	       "%llu revoke records\n",
	       name, ro.dry_run ? "would replay" : "replayed", info.start_tid, info.end_tid - 1, info.transactions,
	       (unsigned long long)info.replayed, (unsigned long long)info.revoked,
	       (unsigned long long)info.revoke_records);
	if (info.checksums_verified || info.torn_commit || info.failed)
		printf("%s: %u commit checksums verified%s\n", name, info.checksums_verified,
		       info.torn_commit ? "; the last commit was torn by the crash (async commit): not replayed" : "");
	if (info.failed)
		printf("%s: transaction %u failed its checksum and no crash explains it (the log is damaged): "
		       "replay stopped before it, the filesystem is marked as having errors\n",
		       name, info.failed_commit);
	if (info.sb_errno)
		printf("%s: the journal recorded error %d: the filesystem is marked as having errors\n", name,
		       info.sb_errno);
out:
	dev_close(dev);
	return rc < 0 ? 1 : 0;
}
