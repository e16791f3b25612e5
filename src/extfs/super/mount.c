/* ext3 mount and unmount (ext3.h; docs/ext3-read-path.md, "Mounting").
 *
 * A mount: options (already parsed, mount_opts.c) → block queue (with the
 * collected tunables) → superblock checks (super.c) → buffer cache →
 * descriptor table → root inode check → journal replay if needed → data
 * mode → with EXT3_MOUNT_JOURNAL the writable journal.
 *
 * Replay: a filesystem whose journal needs recovery has its journal
 * replayed, as the kernel's ext3 does even for a read-only mount (the device
 * is written); noload skips it and reads the image as it is. The mount that
 * noticed it is dropped first and made again afterwards, so no cache holds a
 * block the replay changed. Only for the primary superblock (sb= reads a
 * backup, as for a damaged primary).
 *
 * The writable journal: needs_recovery is set in the on-disk superblock
 * before the journal is loaded and cleared at unmount only after
 * jbd_journal_destroy emptied the log, so a crash in between always leaves
 * an image that the next mount (or e2fsck) replays. The superblock is
 * written through the queue (flush + FUA) from fs->sb; nothing reads the
 * superblock's block through the buffer cache, so no cached copy goes stale.
 *
 * The writable mount (EXT3_MOUNT_JOURNAL) then brings up the write side
 * (docs/write-inode.md, "Mount"): s_mnt_count and s_mtime written,
 * ext3_write_init, ext3_data_init, the orphan cleanup. Unmount takes it down
 * in reverse: sync, every cached inode evicted (unlinked ones freed),
 * ext3_data_shutdown, ext3_write_shutdown, then the journal. As 2.6.30's
 * ext3, s_state keeps VALID_FS while mounted (needs_recovery is what marks
 * a mounted or crashed filesystem); errors recorded meanwhile stay in it.
 *
 * Without a journal (ext2; docs/ext2-nojournal.md) the writable mount has
 * no journal to start: handles are core/nojournal.c's stand-in, s_state
 * loses VALID_FS while mounted (the kernel's warnings first, for an image
 * not clean, with errors or due a check) and gets the state read at mount
 * back at a good unmount, after the buffer cache is written and flushed;
 * the journal's options are refused as the kernel's ext4 refuses them.
 *
 * Threads: mount and unmount are single-threaded; after ext3_fs_mount
 * returns, everything in struct ext3_fs set here is read-only.
 */
#include "extfs/core/csum.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/data/data_modes.h"
#include "extfs/inode/cred.h"
#include "extfs/inode/inode_write.h"

#include "blk/blk.h"
#include "buf/buf.h"
#include "dev/dev.h"
#include "jbd/jbd_format.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const struct ext3_mount_opts *ext3_fs_opts(const struct ext3_fs *fs) { return &fs->opts; }
const char *ext3_fs_data_mode(const struct ext3_fs *fs) { return fs->dops->name; }
struct jbd_journal *ext3_fs_journal(struct ext3_fs *fs) { return fs->journal; }
uint64_t ext3_fs_overhead(const struct ext3_fs *fs) { return fs->overhead; }

int ext3_fs_journal_location(struct ext3_fs *fs, struct jbd_location *loc)
{
	if (!fs->jmap)
		return err_set(-ENOENT, "ext3: the journal is not loaded (read-only mount)");
	ext3_journal_location(fs->jmap, loc);
	return 0;
}

/* Write fs->sb (the primary) through the queue, flushed before and durable
 * after. */
static int super_write(struct ext3_fs *fs)
{
	fs->sb.s_wtime = cpu_to_le32((uint32_t)time(NULL));
	ext4_sb_csum_update(fs, &fs->sb);
	int rc = blk_rw(fs->q, BLK_WRITE_SYNC | BLK_REQ_FLUSH | BLK_REQ_FUA, EXT3_SUPERBLOCK_OFFSET,
			&fs->sb, EXT3_SUPERBLOCK_SIZE);
	if (rc)
		return err_wrap(rc, "ext3: writing the superblock");
	return 0;
}

static int super_set_recover(struct ext3_fs *fs, bool on)
{
	uint32_t f = le32_to_cpu(fs->sb.s_feature_incompat);
	f = on ? f | EXT3_FEATURE_INCOMPAT_RECOVER : f & ~(uint32_t)EXT3_FEATURE_INCOMPAT_RECOVER;
	fs->sb.s_feature_incompat = cpu_to_le32(f);
	return super_write(fs);
}

/* Does the journal support revoke records (a version 2 superblock; jbd
 * sets the feature itself)? -1 when the journal superblock cannot be read
 * (the read-only mount then does not care). */
static int journal_has_revoke(struct ext3_fs *fs)
{
	struct ext3_inode *in;
	uint64_t phys = 0;
	int rc = ext3_iget(fs, EXT3_JOURNAL_INO, &in);
	if (!rc) {
		rc = ext3_inode_bmap(fs, in, 0, &phys);
		ext3_iput(in);
	}
	if (rc || !phys)
		return -1;
	struct buffer_head *bh;
	if (ext3_bread(fs, phys, "journal superblock", &bh))
		return -1;
	const struct jbd_header *h = buf_data(bh);
	int r = -1;
	if (be32_to_cpu(h->h_magic) == JBD_MAGIC_NUMBER)
		r = be32_to_cpu(h->h_blocktype) == JBD_SUPERBLOCK_V2;
	buf_put(bh);
	return r;
}

/* The mode's ops table (core/data_ops.h): the one place that maps a data
 * mode to its behaviour. Everything else calls through fs->dops (or an
 * inode's own table: in->dops, the room for a per-inode choice such as
 * chattr +j, which nothing makes yet). */
static const struct ext3_data_ops *data_ops_choose(int mode)
{
	switch (mode) {
	case EXT3_DATA_JOURNAL: return &ext3_data_journal_ops;
	case EXT3_DATA_ORDERED: return &ext3_data_ordered_ops;
	case EXT3_DATA_WRITEBACK: return &ext3_data_writeback_ops;
	case EXT3_DATA_GUARDED: return &ext3_data_guarded_ops;
	default: return NULL;
	}
}

/* The data mode: the option, else the superblock's default, else the era
 * preset's (o->era_data_mode), else the build's; a mode other than journal
 * needs the revoke feature. Chooses the mode's ops table once, here. */
/* A filesystem without a journal (ext2): the kernel's ext4 refuses the
 * journal's options, and a data= other than the superblock's default
 * (ext4_has_journal_option, in the kernel's words), then has no data mode:
 * file data goes out as writeback's does, with its replace safeguards. */
static int data_mode_nojournal(struct ext3_fs *fs, const struct ext3_mount_opts *o)
{
	int def = 0;
	switch (le32_to_cpu(fs->sb.s_default_mount_opts) & EXT3_DEFM_JMODE) {
	case EXT3_DEFM_JMODE_DATA: def = EXT3_DATA_JOURNAL; break;
	case EXT3_DEFM_JMODE_ORDERED: def = EXT3_DATA_ORDERED; break;
	case EXT3_DEFM_JMODE_WBACK: def = EXT3_DATA_WRITEBACK; break;
	}
	const char *bad = NULL;
	char commit[48];
	if (o->jcfg.async_commit) {
		bad = "journal_async_commit";
	} else if (o->jcfg.checksum) {
		bad = "journal_checksum";
	} else if (o->jcfg.commit_interval_ms && o->jcfg.commit_interval_ms != 5000) {
		snprintf(commit, sizeof commit, "commit=%u", o->jcfg.commit_interval_ms / 1000);
		bad = commit;
	} else if (o->data_mode && o->data_mode != def) {
		bad = "data=";
	} else if (o->data_err == EXT3_DATA_ERR_ABORT) {
		bad = "data_err=abort";
	}
	if (bad)
		return err_set(-EINVAL, "can't mount with %s, fs mounted w/o journal", bad);
	fs->dops = &ext3_data_writeback_ops;
	fs->opts.data_mode = EXT3_DATA_WRITEBACK;
	return 0;
}

static int data_mode_resolve(struct ext3_fs *fs, const struct ext3_mount_opts *o, unsigned flags)
{
	if (!(fs->compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL))
		return data_mode_nojournal(fs, o);
	int mode = o->data_mode;
	if (!mode) {
		switch (le32_to_cpu(fs->sb.s_default_mount_opts) & EXT3_DEFM_JMODE) {
		case EXT3_DEFM_JMODE_DATA: mode = EXT3_DATA_JOURNAL; break;
		case EXT3_DEFM_JMODE_ORDERED: mode = EXT3_DATA_ORDERED; break;
		case EXT3_DEFM_JMODE_WBACK: mode = EXT3_DATA_WRITEBACK; break;
		default: mode = o->era_data_mode ? o->era_data_mode : EXT3_DATA_MODE_DEFAULT; break;
		}
	}
	if (mode != EXT3_DATA_JOURNAL && !o->noload && (fs->compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL)) {
		int rv = journal_has_revoke(fs);
		if (rv == 0 && o->data_mode)
			return err_set(-EINVAL, "mount option data=%s: the journal does not support "
				       "revoke (version 1 superblock); only data=journal",
				       ext3_data_mode_name(mode));
		if (rv == 0)
			mode = EXT3_DATA_JOURNAL;
	}
	/* ext4's rule, for ext3's two modes that order data before the
	 * commit: with the commit block written beside the log and one flush
	 * after both, nothing orders the data writes before it any more, so a
	 * crash could commit metadata over blocks never written (stale data in
	 * ordered, a size over unwritten blocks in guarded). */
	if (o->jcfg.async_commit && (mode == EXT3_DATA_ORDERED || mode == EXT3_DATA_GUARDED))
		return err_set(-EINVAL, "mount option journal_async_commit: not with data=%s (it cannot order data "
				       "before the commit; use data=journal or data=writeback)",
			       ext3_data_mode_name(mode));
	(void)flags;
	fs->dops = data_ops_choose(mode);
	if (!fs->dops)
		return err_set(-EINVAL, "ext3: unknown data mode %d", mode);
	fs->opts.data_mode = mode;
	return 0;
}

/* The root must be a directory in use, or nothing is reachable. */
static int root_check(struct ext3_fs *fs)
{
	struct ext3_inode *root;
	int rc = ext3_iget(fs, EXT3_ROOT_INO, &root);
	if (rc)
		return rc;
	struct ext3_inode_attr a;
	ext3_inode_attr_get(root, &a);
	ext3_iput(root);
	if (!a.links || !a.mode || (a.mode & EXT3_S_IFMT) != EXT3_S_IFDIR)
		return err_set(-EUCLEAN, "ext3: root inode is not a directory in use (mode 0%o, "
			       "%u links)", a.mode, a.links);
	return 0;
}

/* Tear down what mount_once built (no journal involved). */
static void fs_free(struct ext3_fs *fs)
{
	if (fs->cache)
		buf_cache_destroy(fs->cache);
	if (fs->q)
		blk_queue_destroy(fs->q);
	ext3_journal_close(fs->jmap);
	ext3_icache_destroy(fs);
	free(fs->gd);
	free(fs->bm_csum);
	free(fs->bm_csum_live);
	free(fs);
}

static int mount_once(struct dev *dev, const struct ext3_mount_opts *o, unsigned flags,
		      struct ext3_fs **out)
{
	*out = NULL;
	struct ext3_fs *fs = calloc(1, sizeof *fs);
	if (!fs)
		return err_set(-ENOMEM, "ext3: out of memory");
	fs->dev = dev;
	fs->want_writable = flags & EXT3_MOUNT_JOURNAL;
	fs->opts = *o;
	fs->opts.blk_opts = NULL;
	/* Calls from threads without credentials, until the API sets the
	 * mount's default: root's, unchecked (ext3's own callers, tests) */
	ext3_creds_root(&fs->cred_default);
	fs->cred_default.noperm = true;
	int rc = ext3_icache_init(fs);
	if (!rc)
		rc = blk_queue_create(dev, o->blk_opts, &fs->q);
	if (!rc)
		rc = ext3_super_load(fs, o->sb_block);
	if (rc)
		goto fail;
	struct buf_params bp;
	buf_params_default(&bp);
	/* jbd writes the metadata (checkpoints); without a journal the
	 * no-journal flusher does (core/nojournal.c), never the cache's own
	 * thread, which could catch a buffer halfway through a change. */
	bp.writeback_interval_ms = 0;
	if (o->cache_bytes)
		bp.max_bytes = o->cache_bytes;
	if (o->readahead_blocks >= 0)
		bp.readahead_blocks = (unsigned)o->readahead_blocks;
	rc = buf_cache_create(fs->q, fs->g.block_size, &bp, &fs->cache);
	if (rc) {
		rc = err_wrap(rc, "ext3: buffer cache");
		goto fail;
	}
	/* The superblock's block (checkpointed from the journal) is written
	 * FUA, as super_write writes the superblock: never torn. */
	buf_cache_set_fua_block(fs->cache, fs->g.block_size == EXT3_SUPERBLOCK_OFFSET ? 1 : 0);
	rc = ext3_gdt_load(fs);
	if (!rc)
		rc = root_check(fs);
	if (!rc && !fs->needs_recovery)
		rc = data_mode_resolve(fs, o, flags);
	if (rc)
		goto fail;
	fs->noload = o->noload;
	*out = fs;
	return 0;
fail:
	fs_free(fs);
	return rc;
}

/* Map the journal through *fs, drop the mount, replay (the device is
 * written directly; no cache is left to go stale). */
static int mount_replay(struct ext3_fs **fs)
{
	struct ext3_journal *e;
	int rc = ext3_journal_open_fs(*fs, &e);
	fs_free(*fs);
	*fs = NULL;
	if (rc < 0)
		return rc;
	rc = ext3_journal_replay(e, 0, NULL, NULL);
	ext3_journal_close(e);
	return rc;
}

/* EXT3_MOUNT_JOURNAL: map the journal, mark the filesystem as needing
 * recovery, load the journal. */
static int journal_start(struct ext3_fs *fs)
{
	int rc = ext3_journal_open_fs(fs, &fs->jmap);
	if (rc)
		return err_wrap(rc, "ext3: locating the journal");
	rc = super_set_recover(fs, true);
	if (rc)
		return rc;
	struct jbd_params jp = {.q = fs->q, .cache = fs->cache, .cfg = fs->opts.jcfg};
	/* data_err= is ext3's option (default ignore, as 2.6.30): an ordered
	 * data write error aborts the journal only with data_err=abort. */
	jp.cfg.data_err_ignore = fs->opts.data_err != EXT3_DATA_ERR_ABORT;
	ext3_journal_location(fs->jmap, &jp.loc);
	ext3_journal_config_features(fs->jmap, &jp.cfg); /* 64bit, metadata_csum: jbd2's format */
	rc = jbd_journal_load(&jp, &fs->journal);
	if (rc) {
		rc = err_wrap(rc, "ext3: loading the journal");
		(void)super_set_recover(fs, false);
	}
	return rc;
}

/* The write side of a journaled mount, last to first: every inode's data
 * written back, cached inodes evicted (unlinked ones freed), the page cache
 * and the allocator state gone. The journal is still loaded. */
static int write_stop(struct ext3_fs *fs, bool data_up)
{
	int rc = 0;
	if (data_up) {
		if (ext3_fs_writable(fs))
			rc = ext3_fs_sync(fs);
		ext3_icache_evict_all(fs);
		ext3_data_shutdown(fs);
	}
	ext3_write_shutdown(fs);
	fs->writable = false;
	return rc;
}

/* ext4_setup_super's warnings, on stderr in the kernel's words. */
static void mount_warnings(const struct ext3_fs *fs)
{
	const struct ext3_super_block *sb = &fs->sb;
	const char *w = NULL;
	int16_t max = (int16_t)le16_to_cpu(sb->s_max_mnt_count);
	uint32_t interval = le32_to_cpu(sb->s_checkinterval);
	if (!(fs->mount_state & EXT3_VALID_FS))
		w = "mounting unchecked fs";
	else if (fs->mount_state & EXT3_ERROR_FS)
		w = "mounting fs with errors";
	else if (max > 0 && le16_to_cpu(sb->s_mnt_count) >= (uint16_t)max)
		w = "maximal mount count reached";
	else if (interval && (int64_t)le32_to_cpu(sb->s_lastcheck) + interval <= (int64_t)time(NULL))
		w = "checktime reached";
	if (w)
		fprintf(stderr, "nostall: ext2: warning: %s, running e2fsck is recommended\n", w);
}

/* A writable mount without a journal (the kernel's ext4_setup_super with
 * no journal): the warnings, then s_state loses VALID_FS while mounted, in
 * the superblock write_start makes durable before anything else is
 * written; a clean unmount puts the state read here back. */
static void nojournal_state_start(struct ext3_fs *fs)
{
	fs->mount_state = le16_to_cpu(fs->sb.s_state);
	mount_warnings(fs);
	fs->sb.s_state = cpu_to_le16(fs->mount_state & ~EXT3_VALID_FS);
}

/* Writable bring-up after the journal is loaded: the superblock's mount
 * count and time (written now, before the write side reads its block), the
 * write side (counters, allocator, orphan list), the page cache, then the
 * orphans a crash left. As 2.6.30's ext3, s_state keeps VALID_FS while
 * mounted: needs_recovery marks an unclean fs (e2fsck replays and checks). */
static int write_start(struct ext3_fs *fs)
{
	if (fs->nojournal)
		nojournal_state_start(fs);
	if ((int16_t)le16_to_cpu(fs->sb.s_max_mnt_count) == 0)
		fs->sb.s_max_mnt_count = cpu_to_le16(20); /* EXT3_DFL_MAX_MNT_COUNT */
	fs->sb.s_mnt_count = cpu_to_le16((uint16_t)(le16_to_cpu(fs->sb.s_mnt_count) + 1));
	fs->sb.s_mtime = cpu_to_le32((uint32_t)time(NULL));
	int rc = super_write(fs);
	if (rc)
		return rc;
	fs->writable = true;
	rc = ext3_write_init(fs);
	if (rc) {
		fs->writable = false;
		return err_wrap(rc, "ext3: starting the write side");
	}
	rc = ext3_data_init(fs);
	if (rc) {
		write_stop(fs, false);
		return err_wrap(rc, "ext3: starting the page cache");
	}
	rc = ext3_orphan_cleanup(fs);
	if (rc) {
		write_stop(fs, true);
		return rc;
	}
	return 0;
}

/* Undo journal_start (+ the write side when it is up): destroy the journal
 * and, only when that emptied the log, clear needs_recovery. */
static int journal_stop(struct ext3_fs *fs)
{
	int rc = jbd_journal_destroy(fs->journal);
	fs->journal = NULL;
	int src = buf_cache_sync(fs->cache);
	if (!rc && src)
		rc = src;
	/* Only an emptied log may lose needs_recovery. */
	if (!rc)
		rc = super_set_recover(fs, false);
	return rc;
}

/* Unmount without a journal: the buffer cache written and flushed, then
 * the superblock with the state read at mount (errors recorded since kept)
 * unless the mount failed or went read-only after an error (the kernel
 * writes no clean state then). clean false: a failed mount, whose
 * superblock says unchecked until e2fsck. */
static int nojournal_stop(struct ext3_fs *fs, bool clean)
{
	int rc = buf_cache_sync(fs->cache);
	if (rc)
		rc = err_wrap(rc, "ext3: writing the metadata at unmount");
	uint16_t st = le16_to_cpu(fs->sb.s_state);
	if (!rc && clean && !atomic_load(&fs->ro_forced)) {
		fs->sb.s_state = cpu_to_le16(fs->mount_state | (st & EXT3_ERROR_FS));
		int src = super_write(fs);
		if (!rc)
			rc = src;
	}
	fs->nojournal = false;
	return rc;
}

int ext3_fs_mount(struct dev *dev, const struct ext3_mount_opts *o, unsigned flags,
		  struct ext3_fs **out)
{
	*out = NULL;
	struct ext3_mount_opts def;
	if (!o) {
		ext3_mount_opts_init(&def);
		o = &def;
	}
	if (flags & EXT3_MOUNT_JOURNAL) {
		const char *bad = o->ro ? "ro" : o->noload ? "noload" : o->sb_block ? "sb=" : NULL;
		if (bad)
			return err_set(-EINVAL, "mount option %s conflicts with a writable (journaled) "
				       "mount", bad);
	}
	/* Other users of the medium (dev_lock): a writable mount holds it
	 * exclusively, a read-only one shared - unless noload, which never
	 * writes and reads the image as it is, like debugfs -c. Replaying a
	 * journal writes, so a read-only mount that must replay takes it
	 * exclusively for that and goes back to shared after. Before any
	 * read: a kernel mount's superblock always says needs_recovery. */
	enum dev_lock_mode lk = (flags & EXT3_MOUNT_JOURNAL) ? DEV_LOCK_EXCL
				: o->noload ? DEV_LOCK_NONE : DEV_LOCK_SHARED;
	int rc = lk ? dev_lock(dev, lk) : 0;
	if (rc)
		return rc;
	struct ext3_fs *fs;
	rc = mount_once(dev, o, flags, &fs);
	if (rc)
		goto unlock;
	if (fs->needs_recovery && !o->noload && !o->sb_block) {
		if (lk != DEV_LOCK_EXCL && (rc = dev_lock(dev, DEV_LOCK_EXCL))) {
			fs_free(fs);
			rc = err_wrap(rc, "the journal needs recovery (mount with -o noload to read the image as "
					  "it is)");
			goto unlock;
		}
		rc = mount_replay(&fs);
		if (rc < 0) {
			rc = err_wrap(rc, "journal recovery failed (mount with -o noload to read the "
					  "image as it is)");
			goto unlock;
		}
		if (lk != DEV_LOCK_EXCL && (rc = dev_lock(dev, lk)))
			goto unlock;
		rc = mount_once(dev, o, flags, &fs);
		if (rc)
			goto unlock;
	} else if (fs->needs_recovery) {
		rc = data_mode_resolve(fs, o, flags);
		if (rc) {
			fs_free(fs);
			goto unlock;
		}
	}
	if ((flags & EXT3_MOUNT_JOURNAL) && fs->unknown_ro_compat) {
		/* as Linux: unknown ro_compat features refuse a writable mount
		 * before anything is written */
		rc = err_set(-EROFS, "ext3: %s (mount with -o ro)", fs->ro_reason);
		fs_free(fs);
		goto unlock;
	}
	if ((flags & EXT3_MOUNT_JOURNAL) && !(fs->compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL)) {
		fs->nojournal = true;
		rc = write_start(fs);
		if (rc)
			(void)nojournal_stop(fs, false);
	} else if (flags & EXT3_MOUNT_JOURNAL) {
		rc = journal_start(fs);
		if (!rc) {
			rc = write_start(fs);
			if (rc)
				(void)journal_stop(fs);
		}
		if (rc) {
			fs_free(fs);
			goto unlock;
		}
	}
	fs->dev_locked = lk != DEV_LOCK_NONE;
	*out = fs;
	return 0;
unlock:
	if (lk)
		(void)dev_lock(dev, DEV_LOCK_NONE);
	return rc;
}

int ext3_fs_unmount(struct ext3_fs *fs)
{
	if (!fs)
		return 0;
	int rc = 0;
	if (fs->journal) {
		if (fs->writable)
			rc = write_stop(fs, true);
		int jrc = journal_stop(fs);
		if (!rc)
			rc = jrc;
	} else if (fs->nojournal) {
		if (fs->writable)
			rc = write_stop(fs, true);
		int nrc = nojournal_stop(fs, rc == 0);
		if (!rc)
			rc = nrc;
	}
	struct dev *dev = fs->dev;
	bool locked = fs->dev_locked;
	fs_free(fs);
	/* Everything is written (or the unmount failed: the journal keeps
	 * it): the next user may have the medium. */
	if (locked)
		(void)dev_lock(dev, DEV_LOCK_NONE);
	return rc;
}
