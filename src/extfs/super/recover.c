/* Journal recovery outside a mount: `nostall recover` and tests
 * (ext3_journal_open, ext3_journal_recover). Sits above mount.c: it mounts
 * the filesystem read-only (noload) for a moment to map the journal, then
 * replays with ext3_journal_replay once that mount is gone.
 *
 * Threads: none; synchronous device I/O.
 */
#include "extfs/core/ext3.h"

#include "dev/dev.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

int ext3_journal_open(struct dev *dev, struct ext3_journal **out)
{
	*out = NULL;
	struct ext3_super_block sb;
	int rc = dev_rw_sync(dev, DEV_OP_READ, EXT3_SUPERBLOCK_OFFSET / DEV_SECTOR_SIZE,
			     sizeof sb / DEV_SECTOR_SIZE, &sb, 0);
	if (rc < 0)
		return rc;
	rc = ext3_journal_sb_check(&sb);
	if (rc < 0)
		return rc;
	/* A short read-only mount without the journal, gone again before
	 * anything is written: no cache keeps a block recovery changes. */
	struct ext3_mount_opts mo;
	ext3_mount_opts_init(&mo);
	mo.noload = true;
	struct ext3_fs *fs;
	rc = ext3_fs_mount(dev, &mo, 0, &fs);
	if (rc < 0)
		return rc;
	rc = ext3_journal_open_fs(fs, out);
	ext3_fs_unmount(fs);
	if (!rc)
		ext3_journal_set_super(*out, &sb); /* as read at open, from the device */
	return rc;
}

int ext3_journal_recover(struct dev *dev, unsigned flags, struct jbd_recovery_info *info, bool *did)
{
	struct ext3_journal *e;
	int rc = ext3_journal_open(dev, &e);
	if (rc < 0) {
		if (did)
			*did = false;
		if (info)
			memset(info, 0, sizeof *info);
		return rc;
	}
	/* Outside a mount this is e2fsck's role: a journal its v2/v3 checksums
	 * show corrupt is emptied and the filesystem left for a full check
	 * (the mount, like the kernel's, fails instead). */
	rc = ext3_journal_replay(e, flags | JBD_RECOVER_DISCARD_BAD, info, did);
	ext3_journal_close(e);
	return rc;
}
