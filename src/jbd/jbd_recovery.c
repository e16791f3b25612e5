/* Superblock checks and recovery (SCAN, REVOKE, REPLAY); the block I/O
 * they use is jbd_io.c.
 *
 * Written from the published jbd2 on-disk documentation and checked against
 * what e2fsck does to the same images (tests/cli/jbd_recover_e2fsck.sh):
 * - the log starts at s_start with transaction s_sequence; a block ends the
 *   log when it lacks the magic, carries another sequence, or has an unknown
 *   type; a commit block closes a transaction, so an uncommitted last
 *   transaction is ignored;
 * - a descriptor is followed by one log block per tag (tags are 8 bytes,
 *   plus the 16-byte uuid unless SAME_UUID; LAST_TAG ends the list);
 * - a revoke record of transaction R suppresses the replay of that block
 *   from every transaction T <= R (tids compared with wrap);
 * - after recovery the next transaction id is end + 1, so stale blocks of
 *   the uncommitted transaction `end` can never be taken for a new one;
 * - with the v1 checksum feature, SCAN reads every logged block and checks
 *   the commit block's CRC-32 over the transaction's descriptors and
 *   logged blocks (jbd_format.h). A mismatch ends the log at that
 *   transaction; it is an error (failed_commit) unless the journal is
 *   ASYNC_COMMIT and nothing committed follows (a commit torn by the
 *   crash), or the commit time runs backwards (a stale block).
 *
 * Threads: none; everything is synchronous on the caller's thread.
 */
#include "jbd_int.h"

#include "../blk/blk.h"
#include "../dev/dev.h"
#include "../util/crc32.h"
#include "../util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- superblock */

#define JBD_FEATURE_INCOMPAT_CSUM_V2 0x00000008u
#define JBD_FEATURE_INCOMPAT_CSUM_V3 0x00000010u
#define JBD_FEATURE_INCOMPAT_FAST_COMMIT 0x00000020u

static void feature_names(uint32_t compat, uint32_t incompat, uint32_t ro, char *out, size_t len)
{
	out[0] = 0;
	size_t n = 0;
#define ADD(s)                                                                         \
	do {                                                                           \
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s", n ? ", " : "", s); \
	} while (0)
	if (compat & JBD_FEATURE_COMPAT_CHECKSUM)
		ADD("checksum (v1)");
	if (compat & ~JBD_FEATURE_COMPAT_CHECKSUM) {
		char b[48];
		snprintf(b, sizeof b, "compat 0x%x", compat & ~JBD_FEATURE_COMPAT_CHECKSUM);
		ADD(b);
	}
	if (incompat & JBD_FEATURE_INCOMPAT_64BIT)
		ADD("64bit");
	if (incompat & JBD_FEATURE_INCOMPAT_ASYNC_COMMIT)
		ADD("async_commit");
	if (incompat & JBD_FEATURE_INCOMPAT_CSUM_V2)
		ADD("checksum v2");
	if (incompat & JBD_FEATURE_INCOMPAT_CSUM_V3)
		ADD("checksum v3");
	if (incompat & JBD_FEATURE_INCOMPAT_FAST_COMMIT)
		ADD("fast_commit");
	uint32_t other = incompat & ~(JBD_KNOWN_INCOMPAT_FEATURES | JBD_FEATURE_INCOMPAT_64BIT |
				      JBD_FEATURE_INCOMPAT_ASYNC_COMMIT | JBD_FEATURE_INCOMPAT_CSUM_V2 |
				      JBD_FEATURE_INCOMPAT_CSUM_V3 | JBD_FEATURE_INCOMPAT_FAST_COMMIT);
	if (other) {
		char b[48];
		snprintf(b, sizeof b, "incompat 0x%x", other);
		ADD(b);
	}
	if (ro) {
		char b[48];
		snprintf(b, sizeof b, "ro_compat 0x%x", ro);
		ADD(b);
	}
#undef ADD
}

int jbd_sb_check(const struct jbd_superblock *sb, unsigned bs, uint32_t avail, struct jbd_recovery_info *info)
{
	if (be32_to_cpu(sb->s_header.h_magic) != JBD_MAGIC_NUMBER)
		return err_set(-EINVAL, "jbd: no journal superblock (bad magic 0x%08x)",
			       be32_to_cpu(sb->s_header.h_magic));
	uint32_t type = be32_to_cpu(sb->s_header.h_blocktype);
	int version;
	if (type == JBD_SUPERBLOCK_V1)
		version = 1;
	else if (type == JBD_SUPERBLOCK_V2)
		version = 2;
	else
		return err_set(-EINVAL, "jbd: journal superblock has block type %u (want 3 or 4)", type);
	uint32_t sbs = be32_to_cpu(sb->s_blocksize), maxlen = be32_to_cpu(sb->s_maxlen),
		 first = be32_to_cpu(sb->s_first);
	if (sbs != bs)
		return err_set(-EINVAL, "jbd: journal block size %u differs from the filesystem's %u", sbs, bs);
	if (maxlen < 2 || (avail && maxlen > avail))
		return err_set(-EINVAL, "jbd: journal length %u blocks does not fit its %u blocks", maxlen, avail);
	if (first == 0 || first >= maxlen)
		return err_set(-EINVAL, "jbd: bad first log block %u (journal of %u blocks)", first, maxlen);
	uint32_t start = be32_to_cpu(sb->s_start);
	if (start && (start < first || start >= maxlen))
		return err_set(-EINVAL, "jbd: log start %u outside [%u, %u)", start, first, maxlen);
	if (version == 2) {
		uint32_t c = be32_to_cpu(sb->s_feature_compat), i = be32_to_cpu(sb->s_feature_incompat),
			 r = be32_to_cpu(sb->s_feature_ro_compat);
		if ((c & ~JBD_KNOWN_COMPAT_FEATURES) || (i & ~JBD_KNOWN_INCOMPAT_FEATURES) ||
		    (r & ~JBD_KNOWN_ROCOMPAT_FEATURES)) {
			char names[256];
			feature_names(c & ~JBD_KNOWN_COMPAT_FEATURES, i & ~JBD_KNOWN_INCOMPAT_FEATURES,
				      r & ~JBD_KNOWN_ROCOMPAT_FEATURES, names, sizeof names);
			return err_set(-EOPNOTSUPP, "jbd: unsupported journal features: %s", names);
		}
	}
	if (info) {
		info->sb_version = version;
		info->maxlen = maxlen;
		info->first = first;
		info->blocksize = sbs;
		info->start_tid = be32_to_cpu(sb->s_sequence);
		info->needed = start != 0;
		info->sb_errno = (int32_t)be32_to_cpu(sb->s_errno);
	}
	return 0;
}

int jbd_journal_check_dev(struct dev *dev, const struct jbd_location *loc, struct jbd_recovery_info *info)
{
	void *buf;
	if (posix_memalign(&buf, 4096, loc->block_size ? loc->block_size : 4096))
		return -ENOMEM;
	int rc = jbd_sb_read(dev, loc, buf);
	if (rc == 0) {
		memset(info, 0, sizeof *info);
		rc = jbd_sb_check(buf, loc->block_size, loc->nr_blocks, info);
	}
	free(buf);
	return rc;
}

/* ---------------------------------------------------------- recovery */

enum pass { PASS_SCAN, PASS_REVOKE, PASS_REPLAY };

struct rctx {
	struct jbd_map *m;
	uint32_t first, last;
	unsigned bs;
	struct jbd_revoke_table revoke;
	struct jbd_recovery_info *info;
	bool dry;
	bool csum, async; /* COMPAT_CHECKSUM, INCOMPAT_ASYNC_COMMIT */
	void *blk, *data;
};

static uint32_t wrap(const struct rctx *r, uint32_t b)
{
	while (b >= r->last)
		b -= r->last - r->first;
	return b;
}

/* Number of tags in a descriptor block (the kernel/e2fsprogs rule). */
static uint32_t count_tags(const struct rctx *r, const uint8_t *blk)
{
	size_t off = sizeof(struct jbd_header);
	uint32_t n = 0;
	while (off + sizeof(struct jbd_block_tag) <= r->bs) {
		const struct jbd_block_tag *tag = (const void *)(blk + off);
		uint32_t flags = be32_to_cpu(tag->t_flags);
		n++;
		off += sizeof *tag;
		if (!(flags & JBD_FLAG_SAME_UUID))
			off += JBD_TAG_UUID_SIZE;
		if (flags & JBD_FLAG_LAST_TAG)
			break;
	}
	return n;
}

static int scan_revoke_block(struct rctx *r, const uint8_t *blk, uint32_t tid)
{
	const struct jbd_revoke_header *h = (const void *)blk;
	uint32_t count = be32_to_cpu(h->r_count);
	if (count > r->bs || count < sizeof *h)
		return err_set(-EUCLEAN, "jbd: revoke block of transaction %u has bad count %u", tid, count);
	for (uint32_t off = sizeof *h; off + 4 <= count; off += 4) {
		uint32_t b;
		memcpy(&b, blk + off, 4);
		b = be32_to_cpu(b);
		size_t before = r->revoke.count;
		int rc = jbd_revoke_table_set(&r->revoke, b, tid);
		if (rc < 0)
			return rc;
		if (r->revoke.count != before)
			r->info->revoke_records++;
	}
	return 0;
}

static int replay_descriptor(struct rctx *r, const uint8_t *desc, uint32_t desc_block, uint32_t tid)
{
	size_t off = sizeof(struct jbd_header);
	uint32_t logb = desc_block;
	while (off + sizeof(struct jbd_block_tag) <= r->bs) {
		const struct jbd_block_tag *tag = (const void *)(desc + off);
		uint32_t flags = be32_to_cpu(tag->t_flags), target = be32_to_cpu(tag->t_blocknr);
		off += sizeof *tag;
		if (!(flags & JBD_FLAG_SAME_UUID))
			off += JBD_TAG_UUID_SIZE;
		logb = wrap(r, logb + 1);
		struct jbd_revoke_rec *rec = jbd_revoke_table_find(&r->revoke, target);
		if (rec && !jbd_tid_gt(tid, rec->tid)) {
			r->info->revoked++;
		} else {
			int rc = jbd_map_read(r->m, logb, r->data);
			if (rc < 0)
				return rc;
			if (flags & JBD_FLAG_ESCAPE) {
				uint32_t magic = cpu_to_be32(JBD_MAGIC_NUMBER);
				memcpy(r->data, &magic, 4);
			}
			if (!r->dry) {
				rc = jbd_dev_block_write(r->m, target, r->data);
				if (rc < 0)
					return err_wrap(rc, "jbd: replaying block %u (transaction %u)", target, tid);
			}
			r->info->replayed++;
		}
		if (flags & JBD_FLAG_LAST_TAG)
			break;
	}
	return 0;
}

/* The v1 checksum of a descriptor and the n blocks it describes, chained
 * onto *crc. */
static int csum_descriptor(struct rctx *r, uint32_t b, uint32_t n, uint32_t *crc)
{
	*crc = crc32_be(*crc, r->blk, r->bs);
	for (uint32_t i = 1; i <= n; i++) {
		int rc = jbd_map_read(r->m, wrap(r, b + i), r->data);
		if (rc < 0)
			return err_wrap(rc, "jbd: reading log block %u", wrap(r, b + i));
		*crc = crc32_be(*crc, r->data, r->bs);
	}
	return 0;
}

/* SCAN's checksum state. */
struct scan_csum {
	uint32_t crc;
	uint64_t last_time; /* commit time of the last good commit */
	bool bad;           /* a mismatch: the log ends at bad_tid */
	uint32_t bad_tid;
};

/* A commit block of tid under COMPAT_CHECKSUM (SCAN): true to go on
 * scanning, false when the log ends at s->bad_tid (s->bad set). */
static bool scan_commit_csum(struct rctx *r, struct scan_csum *s, uint32_t tid)
{
	const struct jbd_commit_block *cb = r->blk;
	if (s->bad) {
		/* A committed transaction after a torn one: not a crash's
		 * work but a damaged log. */
		r->info->failed = true;
		r->info->failed_commit = s->bad_tid;
		r->info->torn_commit = false;
		return false;
	}
	uint32_t found = be32_to_cpu(cb->h_chksum[0]);
	uint64_t time = be64_to_cpu(cb->h_commit_sec);
	bool ok = (found == s->crc && cb->h_chksum_type == JBD_CRC32_CHKSUM &&
		   cb->h_chksum_size == JBD_CRC32_CHKSUM_SIZE) ||
		  (cb->h_chksum_type == 0 && cb->h_chksum_size == 0 && found == 0);
	if (ok) {
		r->info->checksums_verified++;
		s->crc = ~0u;
		s->last_time = time;
		return true;
	}
	s->bad = true;
	s->bad_tid = tid;
	if (time < s->last_time)
		return false; /* older than the last commit: a stale block ends the log */
	if (!r->async) {
		r->info->failed = true;
		r->info->failed_commit = tid;
		return false;
	}
	/* Async: most likely the crash tore this commit; whether anything
	 * committed follows decides. */
	r->info->torn_commit = true;
	return true;
}

static int do_pass(struct rctx *r, enum pass pass, uint32_t start, uint32_t start_tid)
{
	uint32_t b = start, tid = start_tid;
	uint64_t guard = 0, limit = (uint64_t)(r->last - r->first) * 2 + 2;
	struct scan_csum cs = { .crc = ~0u };
	bool scan_csum = pass == PASS_SCAN && r->csum;
	for (;;) {
		if (pass != PASS_SCAN && !jbd_tid_gt(r->info->end_tid, tid))
			break;
		if (++guard > limit)
			break; /* a log that never ends: stop like a mismatch */
		int rc = jbd_map_read(r->m, b, r->blk);
		if (rc < 0)
			return err_wrap(rc, "jbd: reading log block %u", b);
		const struct jbd_header *h = r->blk;
		if (be32_to_cpu(h->h_magic) != JBD_MAGIC_NUMBER || be32_to_cpu(h->h_sequence) != tid)
			break;
		uint32_t type = be32_to_cpu(h->h_blocktype);
		if (type == JBD_DESCRIPTOR_BLOCK) {
			uint32_t n = count_tags(r, r->blk);
			if (scan_csum && !cs.bad) {
				rc = csum_descriptor(r, b, n, &cs.crc);
				if (rc < 0)
					return rc;
			}
			if (pass == PASS_REPLAY) {
				rc = replay_descriptor(r, r->blk, b, tid);
				if (rc < 0)
					return rc;
			}
			b = wrap(r, b + 1 + n);
		} else if (type == JBD_COMMIT_BLOCK) {
			if (scan_csum && !scan_commit_csum(r, &cs, tid))
				break;
			tid++;
			b = wrap(r, b + 1);
		} else if (type == JBD_REVOKE_BLOCK) {
			if (pass == PASS_REVOKE) {
				rc = scan_revoke_block(r, r->blk, tid);
				if (rc < 0)
					return rc;
			}
			b = wrap(r, b + 1);
		} else {
			break; /* unknown block type: the end of the log */
		}
	}
	if (pass == PASS_SCAN) {
		r->info->end_tid = cs.bad ? cs.bad_tid : tid;
		r->info->transactions = r->info->end_tid - start_tid;
	}
	return 0;
}

int jbd_recover_map(struct jbd_map *m, struct jbd_superblock *sb, unsigned flags, struct jbd_recovery_info *info)
{
	uint32_t start = be32_to_cpu(sb->s_start);
	info->end_tid = be32_to_cpu(sb->s_sequence);
	if (!start)
		return 0;
	struct rctx r = { .m = m, .first = be32_to_cpu(sb->s_first), .last = be32_to_cpu(sb->s_maxlen),
			  .bs = m->bs, .info = info, .dry = flags & JBD_RECOVER_DRY_RUN };
	if (be32_to_cpu(sb->s_header.h_blocktype) == JBD_SUPERBLOCK_V2) {
		r.csum = be32_to_cpu(sb->s_feature_compat) & JBD_FEATURE_COMPAT_CHECKSUM;
		r.async = be32_to_cpu(sb->s_feature_incompat) & JBD_FEATURE_INCOMPAT_ASYNC_COMMIT;
	}
	int rc = jbd_revoke_table_init(&r.revoke, 4096);
	if (rc < 0)
		return rc;
	if (posix_memalign(&r.blk, 4096, m->bs) || posix_memalign(&r.data, 4096, m->bs)) {
		free(r.blk);
		jbd_revoke_table_free(&r.revoke);
		return -ENOMEM;
	}
	rc = do_pass(&r, PASS_SCAN, start, info->start_tid);
	if (!rc)
		rc = do_pass(&r, PASS_REVOKE, start, info->start_tid);
	if (!rc)
		rc = do_pass(&r, PASS_REPLAY, start, info->start_tid);
	if (!rc && !r.dry && info->replayed)
		rc = jbd_map_flush(m);
	free(r.blk);
	free(r.data);
	jbd_revoke_table_free(&r.revoke);
	return rc;
}

#ifdef NOSTALL_TEST_HOOKS
/* TEST ONLY - a deliberately broken recovery for `nostall crashtest
 * --workload recovery` (tests/cli/crashtest_workloads.sh shows it is
 * caught): with NOSTALL_DEBUG_RECOVERY_RESET_EARLY=1 in the environment the
 * journal superblock is marked empty (s_start = 0) and flushed before the
 * log is replayed, so a crash during the replay loses the rest of it.
 * Compiled only with -DNOSTALL_TEST_HOOKS (build/nostall-testhooks): the
 * release library has neither the name nor the getenv. */
static int debug_reset_early(struct jbd_map *m, const void *sb, unsigned bs)
{
	const char *e = getenv("NOSTALL_DEBUG_RECOVERY_RESET_EARLY");
	if (!e || strcmp(e, "1"))
		return 0;
	struct jbd_superblock *copy;
	if (posix_memalign((void **)&copy, 4096, bs))
		return -ENOMEM;
	memcpy(copy, sb, bs);
	copy->s_start = 0;
	int rc = jbd_map_write(m, 0, copy, BLK_WRITE_SYNC);
	if (!rc)
		rc = jbd_map_flush(m);
	free(copy);
	return rc;
}
#endif

int jbd_journal_recover_dev(struct dev *dev, const struct jbd_location *loc, unsigned flags,
			    struct jbd_recovery_info *info)
{
	struct jbd_recovery_info local;
	if (!info)
		info = &local;
	memset(info, 0, sizeof *info);
	void *buf;
	if (posix_memalign(&buf, 4096, loc->block_size))
		return -ENOMEM;
	struct jbd_map m = { 0 };
	int rc = jbd_sb_read(dev, loc, buf);
	if (rc < 0)
		goto out;
	rc = jbd_sb_check(buf, loc->block_size, loc->nr_blocks, info);
	if (rc < 0)
		goto out;
	rc = jbd_map_build(&m, dev, NULL, loc, info->maxlen);
	if (rc < 0)
		goto out;
	struct jbd_superblock *sb = buf;
#ifdef NOSTALL_TEST_HOOKS
	if ((flags & JBD_RECOVER_RESET) && !(flags & JBD_RECOVER_DRY_RUN) && sb->s_start &&
	    (rc = debug_reset_early(&m, buf, loc->block_size)) < 0)
		goto out;
#endif
	rc = jbd_recover_map(&m, sb, flags, info);
	if (rc < 0 || (flags & JBD_RECOVER_DRY_RUN) || !(flags & JBD_RECOVER_RESET))
		goto out;
	/* Like e2fsck: the log is empty now; the next transaction is end + 1
	 * (for a journal that was already clean: s_sequence + 1, the id the
	 * kernel would use next) and the recorded error has been reported to
	 * the caller. */
	sb->s_start = 0;
	sb->s_sequence = cpu_to_be32(info->end_tid + 1);
	sb->s_errno = 0;
	rc = jbd_map_write(&m, 0, buf, BLK_WRITE_SYNC);
	if (!rc)
		rc = jbd_map_flush(&m);
out:
	jbd_map_free(&m);
	free(buf);
	return rc;
}
