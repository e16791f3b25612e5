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
 * - jbd2's 64BIT and v2/v3 checksums (jbd_format.h), as the kernel's
 *   recovery treats them: the journal superblock's checksum must hold; a
 *   descriptor or revoke block failing its tail checksum during SCAN makes
 *   the next commit block decide (a commit time that runs backwards: a
 *   stale block, the log ends there; otherwise the journal is corrupt and
 *   recovery fails); a commit block failing its checksum ends the log at
 *   that transaction (an error without ASYNC_COMMIT); a logged block
 *   failing its tag checksum is not written home, the rest of the replay
 *   goes on and recovery then answers -EBADMSG.
 *
 * Threads: none; everything is synchronous on the caller's thread.
 */
#include "jbd_int.h"

#include "../blk/blk.h"
#include "../dev/dev.h"
#include "../util/crc32.h"
#include "../util/crc32c.h"
#include "../util/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- superblock */

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
	if (incompat & JBD_FEATURE_INCOMPAT_REVOKE)
		ADD("revoke");
	uint32_t other = incompat & ~(JBD_FEATURE_INCOMPAT_REVOKE | JBD_FEATURE_INCOMPAT_64BIT |
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

/* The v2/v3 superblock checksum: crc32c (seed ~0) of the 1024 bytes with
 * s_checksum zero. */
uint32_t jbd_sb_csum(const struct jbd_superblock *sb)
{
	struct jbd_superblock copy = *sb;
	copy.s_checksum = 0;
	return crc32c(~0u, &copy, sizeof copy);
}

int jbd_sb_check(const struct jbd_superblock *sb, unsigned bs, uint32_t avail, bool recovery_only,
		 struct jbd_recovery_info *info)
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
		uint32_t known = recovery_only ? JBD_RECOVERY_INCOMPAT_FEATURES : JBD_KNOWN_INCOMPAT_FEATURES;
		if ((c & ~JBD_KNOWN_COMPAT_FEATURES) || (i & ~known) || (r & ~JBD_KNOWN_ROCOMPAT_FEATURES)) {
			char names[256];
			feature_names(c & ~JBD_KNOWN_COMPAT_FEATURES, i & ~known, r & ~JBD_KNOWN_ROCOMPAT_FEATURES,
				      names, sizeof names);
			return err_set(-EOPNOTSUPP, "jbd: unsupported journal features: %s", names);
		}
		uint32_t v23 = i & (JBD_FEATURE_INCOMPAT_CSUM_V2 | JBD_FEATURE_INCOMPAT_CSUM_V3);
		if (v23 == (JBD_FEATURE_INCOMPAT_CSUM_V2 | JBD_FEATURE_INCOMPAT_CSUM_V3))
			return err_set(-EUCLEAN, "jbd: journal claims both checksum v2 and v3");
		if (v23 && (c & JBD_FEATURE_COMPAT_CHECKSUM))
			return err_set(-EUCLEAN, "jbd: journal claims checksum v1 and v2/v3 at once");
		if (v23) {
			if (sb->s_checksum_type != JBD_CRC32C_CHKSUM)
				return err_set(-EUCLEAN, "jbd: journal checksum type %u (want crc32c, 4)",
					       sb->s_checksum_type);
			if (be32_to_cpu(sb->s_checksum) != jbd_sb_csum(sb))
				return err_set(-EBADMSG, "jbd: journal superblock checksum mismatch "
						       "(0x%08x stored, 0x%08x computed)",
					       be32_to_cpu(sb->s_checksum), jbd_sb_csum(sb));
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
		if (version == 2) {
			info->compat = be32_to_cpu(sb->s_feature_compat);
			info->incompat = be32_to_cpu(sb->s_feature_incompat);
			info->ro_compat = be32_to_cpu(sb->s_feature_ro_compat);
		}
	}
	return 0;
}

void jbd_features_format(uint32_t compat, uint32_t incompat, uint32_t ro_compat, char *out, size_t len)
{
	static const struct {
		int kind; /* 0 compat, 1 incompat, 2 ro_compat */
		uint32_t bit;
		const char *name;
	} names[] = {
		{ 0, JBD_FEATURE_COMPAT_CHECKSUM, "journal_checksum" },
		{ 1, JBD_FEATURE_INCOMPAT_REVOKE, "journal_incompat_revoke" },
		{ 1, JBD_FEATURE_INCOMPAT_64BIT, "journal_64bit" },
		{ 1, JBD_FEATURE_INCOMPAT_ASYNC_COMMIT, "journal_async_commit" },
		{ 1, JBD_FEATURE_INCOMPAT_CSUM_V2, "journal_checksum_v2" },
		{ 1, JBD_FEATURE_INCOMPAT_CSUM_V3, "journal_checksum_v3" },
		{ 1, JBD_FEATURE_INCOMPAT_FAST_COMMIT, "journal_fast_commit" },
	};
	uint32_t sets[3] = { compat, incompat, ro_compat };
	size_t n = 0;
	out[0] = 0;
	for (int k = 0; k < 3; k++)
		for (int b = 0; b < 32; b++) {
			uint32_t bit = 1u << b;
			if (!(sets[k] & bit))
				continue;
			const char *name = NULL;
			for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
				if (names[i].kind == k && names[i].bit == bit)
					name = names[i].name;
			char unk[32];
			if (!name) {
				snprintf(unk, sizeof unk, "FEATURE_%c%d", "CIR"[k], b);
				name = unk;
			}
			if (n < len)
				n += (size_t)snprintf(out + n, len - n, "%s%s", n ? " " : "", name);
		}
	if (!n)
		snprintf(out, len, "(none)");
}

int jbd_journal_check_dev(struct dev *dev, const struct jbd_location *loc, struct jbd_recovery_info *info)
{
	void *buf;
	if (posix_memalign(&buf, 4096, loc->block_size ? loc->block_size : 4096))
		return -ENOMEM;
	int rc = jbd_sb_read(dev, loc, buf);
	if (rc == 0) {
		memset(info, 0, sizeof *info);
		rc = jbd_sb_check(buf, loc->block_size, loc->nr_blocks, true, info);
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
	bool v23, v3, is64; /* CSUM_V2 or V3, CSUM_V3, INCOMPAT_64BIT */
	uint32_t seed;      /* v2/v3: crc32c(~0, s_uuid) */
	unsigned tag_bytes; /* one tag, without the uuid that may follow it */
	unsigned tags_end;  /* tags stop before this offset (the v2/v3 tail) */
	void *blk, *data;
};

static uint32_t wrap(const struct rctx *r, uint32_t b)
{
	while (b >= r->last)
		b -= r->last - r->first;
	return b;
}

static uint32_t be32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32_to_cpu(v);
}

static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* One tag at p (jbd_format.h): its filesystem block, flags and checksum. */
static void tag_read(const struct rctx *r, const uint8_t *p, uint64_t *block, uint32_t *flags, uint32_t *csum)
{
	*block = be32_at(p);
	if (r->is64)
		*block |= (uint64_t)be32_at(p + 8) << 32;
	if (r->v3) {
		*flags = be32_at(p + 4);
		*csum = be32_at(p + 12);
	} else {
		*csum = be16_at(p + 4);
		*flags = be16_at(p + 6);
	}
}

/* Number of tags in a descriptor block (the kernel/e2fsprogs rule). */
static uint32_t count_tags(const struct rctx *r, const uint8_t *blk)
{
	size_t off = sizeof(struct jbd_header);
	uint32_t n = 0;
	while (off + r->tag_bytes <= r->tags_end) {
		uint64_t b;
		uint32_t flags, csum;
		tag_read(r, blk + off, &b, &flags, &csum);
		n++;
		off += r->tag_bytes;
		if (!(flags & JBD_FLAG_SAME_UUID))
			off += JBD_TAG_UUID_SIZE;
		if (flags & JBD_FLAG_LAST_TAG)
			break;
	}
	return n;
}

/* The v2/v3 tail checksum of a descriptor or revoke block. */
static bool tail_csum_ok(const struct rctx *r, const uint8_t *blk)
{
	if (!r->v23)
		return true;
	uint32_t stored = be32_at(blk + r->bs - 4);
	uint32_t c = crc32c(r->seed, blk, r->bs - 4);
	static const uint8_t zero[4];
	c = crc32c(c, zero, 4);
	return c == stored;
}

/* The v2/v3 checksum of a commit block (h_chksum[0] taken as zero). */
static bool commit_csum_ok(const struct rctx *r, const uint8_t *blk)
{
	if (!r->v23)
		return true;
	size_t at = offsetof(struct jbd_commit_block, h_chksum);
	uint32_t stored = be32_at(blk + at);
	static const uint8_t zero[4];
	uint32_t c = crc32c(r->seed, blk, at);
	c = crc32c(c, zero, 4);
	c = crc32c(c, blk + at + 4, r->bs - at - 4);
	return c == stored;
}

/* The v2/v3 checksum of a logged block (as it is in the log, escaped). */
static bool tag_csum_ok(const struct rctx *r, uint32_t csum, const void *data, uint32_t tid)
{
	if (!r->v23)
		return true;
	uint32_t seq = cpu_to_be32(tid);
	uint32_t c = crc32c(crc32c(r->seed, &seq, 4), data, r->bs);
	return r->v3 ? csum == c : csum == (c & 0xffff);
}

static int scan_revoke_block(struct rctx *r, const uint8_t *blk, uint32_t tid)
{
	const struct jbd_revoke_header *h = (const void *)blk;
	uint32_t count = be32_to_cpu(h->r_count);
	unsigned rec = r->is64 ? 8 : 4;
	if (count > r->bs - (r->v23 ? 4 : 0) || count < sizeof *h)
		return err_set(-EUCLEAN, "jbd: revoke block of transaction %u has bad count %u", tid, count);
	for (uint32_t off = sizeof *h; off + rec <= count; off += rec) {
		uint64_t b = be32_at(blk + off);
		if (rec == 8)
			b = b << 32 | be32_at(blk + off + 4);
		size_t before = r->revoke.count;
		int rc = jbd_revoke_table_set(&r->revoke, b, tid);
		if (rc < 0)
			return rc;
		if (r->revoke.count != before)
			r->info->revoke_records++;
	}
	return 0;
}

/* Replay the blocks one descriptor describes. A logged block whose tag
 * checksum fails is not written and counted in *bad (the kernel goes on and
 * fails the recovery at the end). */
static int replay_descriptor(struct rctx *r, const uint8_t *desc, uint32_t desc_block, uint32_t tid, uint64_t *bad)
{
	size_t off = sizeof(struct jbd_header);
	uint32_t logb = desc_block;
	while (off + r->tag_bytes <= r->tags_end) {
		uint64_t target;
		uint32_t flags, csum;
		tag_read(r, desc + off, &target, &flags, &csum);
		off += r->tag_bytes;
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
			if (!tag_csum_ok(r, csum, r->data, tid)) {
				if (!*bad)
					err_set(-EBADMSG, "jbd: the logged copy of block %llu (transaction %u, log "
							  "block %u) fails its checksum",
						(unsigned long long)target, tid, logb);
				(*bad)++;
				goto next;
			}
			if (flags & JBD_FLAG_ESCAPE) {
				uint32_t magic = cpu_to_be32(JBD_MAGIC_NUMBER);
				memcpy(r->data, &magic, 4);
			}
			if (!r->dry) {
				rc = jbd_dev_block_write(r->m, target, r->data);
				if (rc < 0)
					return err_wrap(rc, "jbd: replaying block %llu (transaction %u)",
							(unsigned long long)target, tid);
			}
			r->info->replayed++;
		}
	next:
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
	uint64_t last_time; /* commit time of the last commit passed */
	bool bad;           /* a mismatch: the log ends at bad_tid */
	uint32_t bad_tid;
	bool check_time;    /* v2/v3: a descriptor or revoke block failed its
			     * checksum; the next commit block decides */
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

/* A commit block of tid in a v2/v3 journal (SCAN): 1 to go on, 0 when the
 * log ends at s->bad_tid, or a negative errno when the journal is corrupt
 * (a failed descriptor or revoke checksum in a transaction whose commit is
 * not older than the last one: the kernel refuses the journal). */
static int scan_commit_v23(struct rctx *r, struct scan_csum *s, uint32_t tid)
{
	const struct jbd_commit_block *cb = r->blk;
	uint64_t time = be64_to_cpu(cb->h_commit_sec);
	if (s->check_time) {
		if (time >= s->last_time)
			return err_set(-EBADMSG, "jbd: transaction %u fails its checksums (descriptor or "
						 "revoke block): the journal is corrupt",
				       tid);
		s->bad = true; /* a stale block: the log ends here */
		s->bad_tid = tid;
		return 0;
	}
	if (!commit_csum_ok(r, r->blk)) {
		if (time < s->last_time) {
			s->bad = true;
			s->bad_tid = tid;
			return 0;
		}
		if (!s->bad) {
			s->bad = true;
			s->bad_tid = tid;
		}
		if (!r->async) {
			r->info->failed = true;
			r->info->failed_commit = tid;
			return 0;
		}
		r->info->torn_commit = true;
	} else if (!s->bad) {
		r->info->checksums_verified++;
	}
	s->last_time = time;
	return 1;
}

static int do_pass(struct rctx *r, enum pass pass, uint32_t start, uint32_t start_tid)
{
	uint32_t b = start, tid = start_tid;
	uint64_t guard = 0, limit = (uint64_t)(r->last - r->first) * 2 + 2;
	struct scan_csum cs = { .crc = ~0u };
	bool scan_csum = pass == PASS_SCAN && r->csum;
	uint64_t bad_blocks = 0;
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
			if (!tail_csum_ok(r, r->blk)) {
				if (pass != PASS_SCAN)
					return err_set(-EBADMSG, "jbd: descriptor block %u of transaction %u fails "
								 "its checksum",
						       b, tid);
				cs.check_time = true;
			}
			uint32_t n = count_tags(r, r->blk);
			if (scan_csum && !cs.bad && !cs.check_time) {
				rc = csum_descriptor(r, b, n, &cs.crc);
				if (rc < 0)
					return rc;
			}
			if (pass == PASS_REPLAY) {
				rc = replay_descriptor(r, r->blk, b, tid, &bad_blocks);
				if (rc < 0)
					return rc;
			}
			b = wrap(r, b + 1 + n);
		} else if (type == JBD_COMMIT_BLOCK) {
			if (pass == PASS_SCAN && r->v23) {
				rc = scan_commit_v23(r, &cs, tid);
				if (rc < 0)
					return rc;
				if (rc == 0)
					break;
			} else if (scan_csum && !scan_commit_csum(r, &cs, tid)) {
				break;
			}
			tid++;
			b = wrap(r, b + 1);
		} else if (type == JBD_REVOKE_BLOCK) {
			if (pass == PASS_SCAN && !tail_csum_ok(r, r->blk))
				cs.check_time = true;
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
	if (bad_blocks) {
		r->info->bad_blocks = bad_blocks;
		return -EBADMSG; /* the message names the first (replay_descriptor) */
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
	r.tag_bytes = sizeof(struct jbd_block_tag);
	r.tags_end = r.bs;
	if (be32_to_cpu(sb->s_header.h_blocktype) == JBD_SUPERBLOCK_V2) {
		uint32_t inc = be32_to_cpu(sb->s_feature_incompat);
		r.csum = be32_to_cpu(sb->s_feature_compat) & JBD_FEATURE_COMPAT_CHECKSUM;
		r.async = inc & JBD_FEATURE_INCOMPAT_ASYNC_COMMIT;
		r.v3 = inc & JBD_FEATURE_INCOMPAT_CSUM_V3;
		r.v23 = r.v3 || (inc & JBD_FEATURE_INCOMPAT_CSUM_V2);
		r.is64 = inc & JBD_FEATURE_INCOMPAT_64BIT;
		/* jbd2's journal_tag_bytes */
		if (r.v3)
			r.tag_bytes = sizeof(struct jbd_block_tag3);
		else
			r.tag_bytes = 8 + (r.v23 ? 2 : 0) + (r.is64 ? 4 : 0);
		if (r.v23) {
			r.tags_end = r.bs - sizeof(struct jbd_block_tail);
			r.seed = crc32c(~0u, sb->s_uuid, sizeof sb->s_uuid);
		}
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
	/* What was replayed reaches the disk even when a logged block failed
	 * its checksum (the kernel syncs either way). */
	if ((!rc || (rc == -EBADMSG && info->bad_blocks)) && !r.dry && info->replayed) {
		int frc = jbd_map_flush(m);
		if (frc < 0)
			rc = frc;
	}
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
	rc = jbd_sb_check(buf, loc->block_size, loc->nr_blocks, true, info);
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
	bool discard = rc == -EBADMSG && (flags & JBD_RECOVER_DISCARD_BAD);
	if ((rc < 0 && !discard) || (flags & JBD_RECOVER_DRY_RUN) || !(flags & JBD_RECOVER_RESET))
		goto out;
	/* Like e2fsck: the log is empty now; the next transaction is end + 1
	 * (for a journal that was already clean: s_sequence + 1, the id the
	 * kernel would use next) and the recorded error has been reported to
	 * the caller. A corrupt journal is emptied with its sequence kept, as
	 * e2fsck does when its recovery fails. */
	int result = rc;
	sb->s_start = 0;
	if (!discard) {
		sb->s_sequence = cpu_to_be32(info->end_tid + 1);
		sb->s_errno = 0;
	}
	if (be32_to_cpu(sb->s_header.h_blocktype) == JBD_SUPERBLOCK_V2 &&
	    (be32_to_cpu(sb->s_feature_incompat) & (JBD_FEATURE_INCOMPAT_CSUM_V2 | JBD_FEATURE_INCOMPAT_CSUM_V3)))
		sb->s_checksum = cpu_to_be32(jbd_sb_csum(sb));
	rc = jbd_map_write(&m, 0, buf, BLK_WRITE_SYNC);
	if (!rc)
		rc = jbd_map_flush(&m);
	if (!rc && discard) {
		info->discarded = true;
		rc = result;
	}
out:
	jbd_map_free(&m);
	free(buf);
	return rc;
}
