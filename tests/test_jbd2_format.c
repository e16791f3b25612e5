/* jbd2's write format (issue 39; docs/journal.md, "The jbd2 write
 * format"): journals written with journal_64bit and journal_csum=v3, read
 * back raw (the layout the kernel and e2fsprogs expect, checked here
 * independently of nostall's recovery) and through nostall's recovery.
 *
 * round_trip_*: on a mem:5T device (1 KiB blocks: block numbers past 2^32
 * are logged), one transaction of 150 blocks (three descriptor blocks at
 * 1 KiB with 16-byte tags, blocks starting with the JBD magic among them,
 * half of them past 2^32), then one revoking a low and a high block and
 * writing one more. The crash image (the journal and those blocks, copied
 * before any checkpoint) has: the superblock's features and crc32c; 16-byte
 * (v3) or 12-byte (64bit alone) tags with t_blocknr_high; each tag's
 * crc32c(seed, be32 tid, the logged block); descriptor and revoke tails;
 * 8-byte revoke records; commit blocks with h_chksum[0] over the whole
 * block. nostall's recovery verifies every commit checksum, skips the
 * revoked copies and leaves every other block as written.
 * high_block_needs_64bit: a block past 2^32 in a journal without 64BIT
 * aborts the commit (-EOVERFLOW; never a truncated tag).
 * sb_checksum_refused: a v3 journal superblock whose checksum does not
 * hold is refused at load (-EBADMSG), as the kernel refuses it.
 * v2_becomes_v3: a journal with v2 checksums loads for writing and is
 * written with v3.
 * fs_features_ask: the filesystem's glue (ext3_journal_config_features):
 * ext4's 64bit asks for journal_64bit, metadata_csum for v3.
 */
#include "test_jbd_env.h"
#include "extfs/core/ext3.h"
#include "util/crc32c.h"

#include <inttypes.h>

#define HIGH ((uint64_t)1 << 32)
#define BIG_SPEC "mem:5T"
#define NLOW 100
#define NHIGH 50

static uint64_t blk_of(int i)
{
	return i < NLOW ? DATA0 + (uint64_t)i : HIGH + 7 + (uint64_t)(i - NLOW);
}

/* Copy the first 16 MiB (the journal) and the listed blocks to a new
 * device of the same size: the crash image before any checkpoint. */
static struct dev *snapshot_sparse(struct env *e, const uint64_t *extra, int n)
{
	struct dev *s;
	assert_int_equal(dev_open(BIG_SPEC, &s), 0);
	size_t len = 1024 * 1024;
	void *buf;
	assert_int_equal(posix_memalign(&buf, 4096, len), 0);
	for (uint64_t off = 0; off < (uint64_t)DEV_BLOCKS * BS; off += len) {
		assert_int_equal(dev_rw_sync(e->d, DEV_OP_READ, off / 512, (uint32_t)(len / 512), buf, 0), 0);
		assert_int_equal(dev_rw_sync(s, DEV_OP_WRITE, off / 512, (uint32_t)(len / 512), buf, 0), 0);
	}
	for (int i = 0; i < n; i++) {
		read_dev_block(e->d, extra[i], buf);
		assert_int_equal(dev_rw_sync(s, DEV_OP_WRITE, extra[i] * (BS / 512), BS / 512, buf, 0), 0);
	}
	free(buf);
	return s;
}

static uint32_t be32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32_to_cpu(v);
}

/* What the raw log showed. */
struct walk {
	int descriptors, tags, high_tags, escaped, commits, revoke_blocks, revoke_records;
	bool high_revoked;
};

/* Walk the log of snapshot s from s_start as jbd2 lays it out, checking
 * every checksum with the rules written out here (not nostall's code). */
static void walk_log(struct dev *s, bool v3, bool is64, struct walk *w)
{
	memset(w, 0, sizeof *w);
	uint8_t sbb[BS], b[BS], data[BS];
	read_dev_block(s, JSTART, sbb);
	const struct jbd_superblock *sb = (const void *)sbb;
	uint32_t inc = be32_to_cpu(sb->s_feature_incompat);
	assert_int_equal(inc & JBD_FEATURE_INCOMPAT_64BIT, is64 ? JBD_FEATURE_INCOMPAT_64BIT : 0);
	assert_int_equal(inc & JBD_FEATURE_INCOMPAT_CSUM_V3, v3 ? JBD_FEATURE_INCOMPAT_CSUM_V3 : 0);
	assert_int_equal(inc & JBD_FEATURE_INCOMPAT_CSUM_V2, 0);
	if (v3) {
		assert_int_equal(be32_to_cpu(sb->s_feature_compat) & JBD_FEATURE_COMPAT_CHECKSUM, 0);
		assert_int_equal(sb->s_checksum_type, JBD_CRC32C_CHKSUM);
		struct jbd_superblock z = *sb;
		z.s_checksum = 0;
		assert_int_equal(be32_to_cpu(sb->s_checksum), crc32c(~0u, &z, sizeof z));
	}
	uint32_t seed = crc32c(~0u, sb->s_uuid, 16);
	unsigned tag_bytes = v3 ? 16 : 8 + (is64 ? 4 : 0), tail = v3 ? 4 : 0;
	uint32_t first = be32_to_cpu(sb->s_first), last = be32_to_cpu(sb->s_maxlen);
	uint32_t jb = be32_to_cpu(sb->s_start), tid = be32_to_cpu(sb->s_sequence);
	assert_true(jb != 0);
#define NEXT(x) ((x) + 1 >= last ? first : (x) + 1)
	for (int guard = 0; guard < 4096; guard++) {
		read_dev_block(s, JSTART + jb, b);
		if (be32_at(b) != JBD_MAGIC_NUMBER || be32_at(b + 8) != tid)
			break;
		uint32_t type = be32_at(b + 4);
		if (type == JBD_DESCRIPTOR_BLOCK || type == JBD_REVOKE_BLOCK) {
			if (v3) {
				uint8_t z[BS];
				memcpy(z, b, BS);
				memset(z + BS - 4, 0, 4);
				assert_int_equal(be32_at(b + BS - 4), crc32c(seed, z, BS));
			}
		}
		if (type == JBD_DESCRIPTOR_BLOCK) {
			w->descriptors++;
			size_t off = 12;
			uint32_t lb = jb;
			for (;;) {
				assert_true(off + tag_bytes <= BS - tail);
				const uint8_t *t = b + off;
				uint64_t block = be32_at(t);
				uint32_t flags = v3 ? be32_at(t + 4) : (uint32_t)(t[6] << 8 | t[7]);
				if (is64)
					block |= (uint64_t)be32_at(t + 8) << 32;
				w->tags++;
				w->high_tags += block >= HIGH;
				lb = NEXT(lb);
				read_dev_block(s, JSTART + lb, data);
				if (v3) {
					uint32_t seq = cpu_to_be32(tid);
					uint32_t c = crc32c(crc32c(seed, &seq, 4), data, BS);
					assert_int_equal(be32_at(t + 12), c);
				}
				if (flags & JBD_FLAG_ESCAPE) {
					w->escaped++;
					assert_int_equal(be32_at(data), 0);
				}
				/* the logged copy is what the block holds: its index byte */
				int i = block >= HIGH ? (int)(block - HIGH - 7) + NLOW : (int)(block - DATA0);
				if (i >= 0 && i < NLOW + NHIGH)
					assert_int_equal(data[100], (uint8_t)(i + 1));
				off += tag_bytes + ((flags & JBD_FLAG_SAME_UUID) ? 0 : 16);
				if (flags & JBD_FLAG_LAST_TAG)
					break;
			}
			jb = NEXT(lb);
		} else if (type == JBD_REVOKE_BLOCK) {
			w->revoke_blocks++;
			uint32_t count = be32_at(b + 12), rec = is64 ? 8 : 4;
			assert_true(count <= BS - tail);
			for (uint32_t off = 16; off + rec <= count; off += rec) {
				uint64_t r = is64 ? (uint64_t)be32_at(b + off) << 32 | be32_at(b + off + 4) : be32_at(b + off);
				w->revoke_records++;
				if (r == HIGH + 7)
					w->high_revoked = true;
			}
			jb = NEXT(jb);
		} else if (type == JBD_COMMIT_BLOCK) {
			w->commits++;
			const struct jbd_commit_block *cb = (const void *)b;
			if (v3) {
				assert_int_equal(cb->h_chksum_type, 0);
				assert_int_equal(cb->h_chksum_size, 0);
				uint8_t z[BS];
				memcpy(z, b, BS);
				memset(z + offsetof(struct jbd_commit_block, h_chksum), 0, 4);
				assert_int_equal(be32_at(b + offsetof(struct jbd_commit_block, h_chksum)), crc32c(seed, z, BS));
			}
			tid++;
			jb = NEXT(jb);
		} else {
			break;
		}
	}
#undef NEXT
}

/* One block of index i: byte i + 1, the JBD magic first for i % 7 == 3. */
static void put_indexed(struct jbd_handle *h, struct env *e, int i)
{
	put_block(h, e, blk_of(i), i + 1, i % 7 == 3);
}

static void round_trip(const char *jopts, bool v3, bool is64)
{
	struct env e;
	char opts[200];
	snprintf(opts, sizeof opts, "commit=100,%s", jopts);
	env_open_spec(&e, BIG_SPEC, NULL, opts, JLEN);
	int n = is64 ? NLOW + NHIGH : NLOW;
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, n, &h), 0);
	for (int i = 0; i < n; i++)
		put_indexed(h, &e, i);
	jbd_handle_set_sync(h, true);
	assert_int_equal(jbd_handle_stop(h), 0);
	/* The second transaction: revoke a low block (and a high one), write
	 * block DATA0 + 200. */
	assert_int_equal(jbd_handle_start(e.j, 4, &h), 0);
	assert_int_equal(jbd_revoke(h, DATA0 + 5, NULL), 0);
	if (is64)
		assert_int_equal(jbd_revoke(h, HIGH + 7, NULL), 0);
	put_block(h, &e, DATA0 + 200, 0x77, false);
	jbd_handle_set_sync(h, true);
	assert_int_equal(jbd_handle_stop(h), 0);
	struct jbd_stats st = stats_of(&e);
	assert_int_equal(st.checkpoint_writes, 0); /* nothing home yet: the log decides */
	uint64_t extra[NLOW + NHIGH];
	for (int i = 0; i < n; i++)
		extra[i] = blk_of(i);
	struct dev *s = snapshot_sparse(&e, extra, n);

	struct walk w;
	walk_log(s, v3, is64, &w);
	/* at 1 KiB: 62 v3 tags or 82 12-byte tags per descriptor */
	assert_true(w.descriptors >= (v3 ? 3 : 2));
	assert_int_equal(w.tags, n + 1);
	assert_int_equal(w.high_tags, is64 ? NHIGH : 0);
	assert_true(w.escaped > 0);
	assert_int_equal(w.commits, 2);
	assert_int_equal(w.revoke_blocks, 1);
	assert_int_equal(w.revoke_records, is64 ? 2 : 1);
	assert_int_equal(w.high_revoked, is64);

	struct jbd_recovery_info info;
	recover_snapshot(&e, s, &info);
	assert_int_equal(info.transactions, 2);
	if (v3)
		assert_int_equal(info.checksums_verified, 2);
	assert_int_equal(info.revoked, is64 ? 2 : 1);
	assert_int_equal(info.bad_blocks, 0);
	uint8_t got[BS];
	for (int i = 0; i < n; i++) {
		read_dev_block(s, blk_of(i), got);
		if (i == 5 || i == NLOW) /* revoked: never written home */
			assert_int_equal(got[100], 0);
		else
			assert_int_equal(got[100], (uint8_t)(i + 1));
		if (i % 7 == 3 && i != 5 && i != NLOW)
			assert_int_equal(be32_at(got), JBD_MAGIC_NUMBER);
	}
	assert_int_equal(first_byte(s, DATA0 + 200), 0x77);
	dev_close(s);
	assert_int_equal(env_close(&e), 0);
}

static void test_round_trip_v3_64bit(void **state)
{
	(void)state;
	round_trip("journal_64bit,journal_csum=v3", true, true);
}

static void test_round_trip_64bit(void **state)
{
	(void)state;
	round_trip("journal_64bit", false, true);
}

static void test_round_trip_v3(void **state)
{
	(void)state;
	round_trip("journal_csum=v3", true, false);
}

static void test_round_trip_v3_async(void **state)
{
	(void)state;
	round_trip("journal_64bit,journal_csum=v3,journal_async_commit", true, true);
}

static void test_high_block_needs_64bit(void **state)
{
	(void)state;
	struct env e;
	env_open_spec(&e, BIG_SPEC, NULL, "commit=100,journal_csum=v3", JLEN);
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e.j, 1, &h), 0);
	put_block(h, &e, HIGH + 1, 9, false);
	jbd_handle_set_sync(h, true);
	assert_int_not_equal(jbd_handle_stop(h), 0);
	assert_true(jbd_journal_aborted(e.j));
	assert_int_equal(jbd_journal_errno(e.j), -EOVERFLOW);
	assert_int_not_equal(env_close(&e), 0);
}

static void test_sb_checksum_refused(void **state)
{
	(void)state;
	struct dev *d;
	assert_int_equal(dev_open("mem:16M", &d), 0);
	static const uint8_t uuid[16] = { 9, 8, 7 };
	struct jbd_stack_params p;
	jbd_stack_params_default(&p);
	p.loc = (struct jbd_location){ .block_size = BS, .first_block = JSTART, .nr_blocks = JLEN };
	p.create = true;
	p.uuid = uuid;
	assert_int_equal(jbd_config_parse(&p.cfg, "journal_csum=v3"), 0);
	struct jbd_stack *s;
	assert_int_equal(jbd_stack_open_dev(d, &p, &s), 0);
	assert_int_equal(jbd_stack_close(s), 0);
	/* v3 stays after the clean unmount; a load without the option keeps
	 * writing it. */
	p.create = false;
	jbd_config_default(&p.cfg);
	assert_int_equal(jbd_stack_open_dev(d, &p, &s), 0);
	assert_int_equal(jbd_stack_close(s), 0);
	uint8_t sbb[BS];
	read_dev_block(d, JSTART, sbb);
	struct jbd_superblock *sb = (void *)sbb;
	assert_true(be32_to_cpu(sb->s_feature_incompat) & JBD_FEATURE_INCOMPAT_CSUM_V3);
	/* journal_csum=v1 replaces v3 with the v1 checksum (the log is
	 * empty); the clean unmount then clears that as before. */
	assert_int_equal(jbd_config_parse(&p.cfg, "journal_csum=v1"), 0);
	assert_int_equal(jbd_stack_open_dev(d, &p, &s), 0);
	read_dev_block(d, JSTART, sbb);
	assert_int_equal(be32_to_cpu(sb->s_feature_incompat) & JBD_FEATURE_INCOMPAT_CSUM_V3, 0);
	assert_int_equal(be32_to_cpu(sb->s_feature_compat), JBD_FEATURE_COMPAT_CHECKSUM);
	assert_int_equal(jbd_stack_close(s), 0);
	/* Back to v3, then a superblock whose checksum fails. */
	jbd_config_default(&p.cfg);
	assert_int_equal(jbd_config_parse(&p.cfg, "journal_csum=v3"), 0);
	assert_int_equal(jbd_stack_open_dev(d, &p, &s), 0);
	assert_int_equal(jbd_stack_close(s), 0);
	read_dev_block(d, JSTART, sbb);
	sb->s_max_transaction ^= cpu_to_be32(1);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * (BS / 512), BS / 512, sbb, 0), 0);
	int rc = jbd_stack_open_dev(d, &p, &s);
	assert_int_equal(rc, -EBADMSG);
	assert_non_null(strstr(err_last(rc), "checksum"));
	/* journal_csum= takes v1 or v3 only. */
	assert_int_equal(jbd_config_parse(&p.cfg, "journal_csum=v2"), -EINVAL);
	dev_close(d);
}

/* A journal found with v2 checksums (a v2-era kernel's) is loaded for
 * writing and written with v3 from then on (the log is empty at load). */
static void test_v2_becomes_v3(void **state)
{
	(void)state;
	struct dev *d;
	assert_int_equal(dev_open("mem:16M", &d), 0);
	struct jbd_location loc = { .block_size = BS, .first_block = JSTART, .nr_blocks = JLEN };
	assert_int_equal(jbd_journal_create(d, &loc, NULL), 0);
	uint8_t sbb[BS];
	read_dev_block(d, JSTART, sbb);
	struct jbd_superblock *sb = (void *)sbb;
	sb->s_feature_incompat = cpu_to_be32(JBD_FEATURE_INCOMPAT_REVOKE | JBD_FEATURE_INCOMPAT_CSUM_V2);
	sb->s_checksum_type = JBD_CRC32C_CHKSUM;
	sb->s_checksum = 0;
	sb->s_checksum = cpu_to_be32(crc32c(~0u, sb, sizeof *sb));
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, JSTART * (BS / 512), BS / 512, sbb, 0), 0);
	struct jbd_stack_params p;
	jbd_stack_params_default(&p);
	p.loc = loc;
	struct jbd_stack *s;
	assert_int_equal(jbd_stack_open_dev(d, &p, &s), 0);
	read_dev_block(d, JSTART, sbb);
	assert_int_equal(be32_to_cpu(sb->s_feature_incompat),
			 JBD_FEATURE_INCOMPAT_REVOKE | JBD_FEATURE_INCOMPAT_CSUM_V3);
	struct jbd_superblock z = *sb;
	z.s_checksum = 0;
	assert_int_equal(be32_to_cpu(sb->s_checksum), crc32c(~0u, &z, sizeof z));
	assert_int_equal(jbd_stack_close(s), 0);
	dev_close(d);
}

/* The glue: an ext4 image with 64bit and metadata_csum asks its journal
 * for both (the kernel's ext4 at mount); an ext3 image asks for neither. */
static void features_asked(const char *mkfs, bool want64, bool wantv3)
{
	char path[] = "/tmp/nostall-jbd2-glue.XXXXXX", cmd[400], spec[64];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof cmd, "%s -q -F '%s' 32M >/dev/null 2>&1", mkfs, path);
	if (system(cmd) != 0) {
		unlink(path);
		printf("[  SKIP    ] %s: mke2fs not available\n", mkfs);
		fflush(stdout);
		skip();
	}
	snprintf(spec, sizeof spec, "file:%s", path);
	struct dev *d;
	assert_int_equal(dev_open(spec, &d), 0);
	struct ext3_journal *ej;
	int rc = ext3_journal_open(d, &ej);
	if (rc)
		fail_msg("%s: %s", mkfs, err_last(rc));
	struct jbd_config cfg;
	jbd_config_default(&cfg);
	ext3_journal_config_features(ej, &cfg);
	assert_int_equal(cfg.journal_64bit, want64);
	assert_int_equal(cfg.csum_v3, wantv3);
	ext3_journal_close(ej);
	dev_close(d);
	unlink(path);
}

static void test_fs_features_ask(void **state)
{
	(void)state;
	features_asked("mke2fs -t ext4 -b 4096 -O 64bit,metadata_csum", true, true);
	features_asked("mke2fs -t ext4 -b 4096 -O ^64bit,^metadata_csum", false, false);
	features_asked("mke2fs -t ext3 -b 1024", false, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_v3_64bit),
		cmocka_unit_test(test_round_trip_64bit),
		cmocka_unit_test(test_round_trip_v3),
		cmocka_unit_test(test_round_trip_v3_async),
		cmocka_unit_test(test_high_block_needs_64bit),
		cmocka_unit_test(test_sb_checksum_refused),
		cmocka_unit_test(test_v2_becomes_v3),
		cmocka_unit_test(test_fs_features_ask),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
