/* ext3 mount options that reach the journal: an era preset brings 2009's
 * barrier=0 (ext3's default until 2.6.38) unless barrier= or nobarrier is
 * given, in whatever order; nostall's own default stays barrier=1. The
 * era presets also bring fs/jbd's commit (journal_shadow=wait) and their
 * default data mode (2.6.29 ordered, 2.6.30-rc1 and 2.6.30 writeback:
 * CONFIG_EXT3_DEFAULTS_TO_ORDERED=n), which data= and the superblock's
 * default mount options override. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dev/dev.h"
#include "extfs/core/ext3.h"
#include "extfs/format/ext3_format.h"
#include "extfs/mkfs/mkfs.h"
#include "util/endian.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool barrier_of(const char *opts)
{
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	int rc = ext3_mount_opts_parse(&o, opts);
	assert_int_equal(rc, 0);
	bool b = o.jcfg.barrier;
	ext3_mount_opts_release(&o);
	return b;
}

static void test_era_barrier_defaults(void **state)
{
	(void)state;
	assert_true(barrier_of(""));                       /* nostall's default */
	assert_true(barrier_of("preset=nostall"));
	assert_false(barrier_of("preset=2.6.30"));         /* 2009 ext3 */
	assert_false(barrier_of("preset=2.6.29"));
	assert_false(barrier_of("preset=2.6.30-rc1"));
	assert_true(barrier_of("preset=2.6.30,barrier=1")); /* explicit wins */
	assert_true(barrier_of("barrier=1,preset=2.6.30")); /* in any order */
	assert_false(barrier_of("nobarrier"));
	assert_false(barrier_of("preset=nostall,barrier=0"));
}

static bool fic_of(const char *opts)
{
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	int rc = ext3_mount_opts_parse(&o, opts);
	assert_int_equal(rc, 0);
	bool b = o.fsync_in_commit;
	ext3_mount_opts_release(&o);
	return b;
}

/* fsync's data in its commit: nostall's default; the era presets write it
 * from fsync as 2.6.30 did (the 2.6.30-rc1 regression needs that write). */
static void test_era_fsync_in_commit(void **state)
{
	(void)state;
	assert_true(fic_of(""));
	assert_true(fic_of("preset=nostall"));
	assert_false(fic_of("preset=2.6.29"));
	assert_false(fic_of("preset=2.6.30-rc1"));
	assert_false(fic_of("preset=2.6.30"));
	assert_true(fic_of("preset=2.6.30-rc1,fsync_in_commit=1")); /* explicit wins */
	assert_true(fic_of("fsync_in_commit=1,preset=2.6.30"));     /* in any order */
	assert_false(fic_of("fsync_in_commit=0"));
	struct ext3_mount_opts o;
	const char *bad[] = { "fsync_in_commit", "fsync_in_commit=2", "fsync_in_commit=yes" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ext3_mount_opts_init(&o);
		assert_int_equal(ext3_mount_opts_parse(&o, bad[i]), -EINVAL);
		assert_non_null(strstr(err_last(-EINVAL), "fsync_in_commit"));
		ext3_mount_opts_release(&o);
	}
}

static void test_era_shadow_defaults(void **state)
{
	(void)state;
	const char *on[] = { "preset=2.6.29", "preset=2.6.30-rc1", "preset=2.6.30",
			     "journal_shadow=wait", "preset=nostall,journal_shadow=wait" };
	const char *off[] = { "", "preset=nostall", "preset=2.6.30,journal_shadow=copy",
			      "journal_shadow=copy,preset=2.6.30" };
	for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
		struct ext3_mount_opts o;
		ext3_mount_opts_init(&o);
		assert_int_equal(ext3_mount_opts_parse(&o, on[i]), 0);
		assert_true(o.jcfg.shadow_wait);
		ext3_mount_opts_release(&o);
	}
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
		struct ext3_mount_opts o;
		ext3_mount_opts_init(&o);
		assert_int_equal(ext3_mount_opts_parse(&o, off[i]), 0);
		assert_false(o.jcfg.shadow_wait);
		ext3_mount_opts_release(&o);
	}
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	assert_int_equal(ext3_mount_opts_parse(&o, "journal_shadow=maybe"), -EINVAL);
	ext3_mount_opts_release(&o);
}

/* A fresh 32 MiB ext3 on a mem: device; jmode: the superblock's default
 * data mode bits (EXT3_DEFM_JMODE_*), 0 = none (mke2fs's default). */
static struct dev *fresh_fs(uint32_t jmode)
{
	struct dev *d;
	assert_int_equal(dev_open("mem:32M", &d), 0);
	struct ext3_mkfs_params p;
	memset(&p, 0, sizeof p);
	p.block_size = 1024;
	p.assume_zeroed = true;
	assert_int_equal(ext3_mkfs(d, &p), 0);
	if (jmode) {
		struct ext3_super_block sb;
		assert_int_equal(dev_rw_sync(d, DEV_OP_READ, 2, 2, &sb, 0), 0);
		sb.s_default_mount_opts = cpu_to_le32((le32_to_cpu(sb.s_default_mount_opts) & ~EXT3_DEFM_JMODE) | jmode);
		assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, 2, 2, &sb, 0), 0);
	}
	return d;
}

/* The data mode a read-write mount with `opts` runs in. */
static int mode_of(uint32_t jmode, const char *opts)
{
	struct dev *d = fresh_fs(jmode);
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	assert_int_equal(ext3_mount_opts_parse(&o, opts), 0);
	struct ext3_fs *fs = NULL;
	int rc = ext3_fs_mount(d, &o, EXT3_MOUNT_JOURNAL, &fs);
	ext3_mount_opts_release(&o);
	if (rc)
		fail_msg("mount -o %s: %s", opts, err_last(rc));
	int mode = ext3_fs_opts(fs)->data_mode;
	assert_int_equal(ext3_fs_unmount(fs), 0);
	dev_close(d);
	return mode;
}

static void test_era_data_mode(void **state)
{
	(void)state;
	assert_int_equal(ext3_era_data_mode("2.6.29"), EXT3_DATA_ORDERED);
	assert_int_equal(ext3_era_data_mode("2.6.30-rc1"), EXT3_DATA_WRITEBACK);
	assert_int_equal(ext3_era_data_mode("2.6.30"), EXT3_DATA_WRITEBACK);
	assert_int_equal(ext3_era_data_mode("nostall"), 0);
	assert_int_equal(ext3_era_data_mode(NULL), 0);
	/* the preset's default, where nothing else chooses */
	assert_int_equal(mode_of(0, "preset=2.6.30"), EXT3_DATA_WRITEBACK);
	assert_int_equal(mode_of(0, "preset=2.6.30-rc1"), EXT3_DATA_WRITEBACK);
	assert_int_equal(mode_of(0, "preset=2.6.29"), EXT3_DATA_ORDERED);
	/* the last preset counts, as for the queue */
	assert_int_equal(mode_of(0, "preset=2.6.29,preset=2.6.30"), EXT3_DATA_WRITEBACK);
	/* data= wins, in any order */
	assert_int_equal(mode_of(0, "preset=2.6.30,data=ordered"), EXT3_DATA_ORDERED);
	assert_int_equal(mode_of(0, "data=journal,preset=2.6.30"), EXT3_DATA_JOURNAL);
	/* so does the superblock's default (tune2fs -o journal_data_ordered) */
	assert_int_equal(mode_of(EXT3_DEFM_JMODE_ORDERED, "preset=2.6.30"), EXT3_DATA_ORDERED);
	assert_int_equal(mode_of(EXT3_DEFM_JMODE_WBACK, "preset=2.6.29"), EXT3_DATA_WRITEBACK);
	/* no era: the build's default, whatever it is */
	assert_int_equal(mode_of(0, ""), EXT3_DATA_MODE_DEFAULT);
	assert_int_equal(mode_of(0, "preset=nostall"), EXT3_DATA_MODE_DEFAULT);
}

/* The mount chooses the mode's ops table where it resolves the mode
 * (core/data_ops.h): its name is the mode's word, on read-write and
 * read-only mounts alike; a mode no table serves is refused. */
static void test_data_mode_table(void **state)
{
	(void)state;
	static const char *const words[] = {"journal", "ordered", "writeback", "guarded"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
		for (unsigned flags = 0; flags <= EXT3_MOUNT_JOURNAL; flags += EXT3_MOUNT_JOURNAL) {
			struct dev *d = fresh_fs(0);
			char opts[32];
			snprintf(opts, sizeof opts, "data=%s", words[i]);
			struct ext3_mount_opts o;
			ext3_mount_opts_init(&o);
			assert_int_equal(ext3_mount_opts_parse(&o, opts), 0);
			struct ext3_fs *fs = NULL;
			int rc = ext3_fs_mount(d, &o, flags, &fs);
			ext3_mount_opts_release(&o);
			if (rc)
				fail_msg("mount -o %s: %s", opts, err_last(rc));
			assert_string_equal(ext3_fs_data_mode(fs), words[i]);
			assert_string_equal(ext3_data_mode_name(ext3_fs_opts(fs)->data_mode), words[i]);
			assert_int_equal(ext3_fs_unmount(fs), 0);
			dev_close(d);
		}
	}
	struct dev *d = fresh_fs(0);
	struct ext3_mount_opts o;
	ext3_mount_opts_init(&o);
	o.data_mode = 99;
	struct ext3_fs *fs = NULL;
	assert_int_equal(ext3_fs_mount(d, &o, EXT3_MOUNT_JOURNAL, &fs), -EINVAL);
	assert_null(fs);
	ext3_mount_opts_release(&o);
	dev_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_era_barrier_defaults),
		cmocka_unit_test(test_era_shadow_defaults),
		cmocka_unit_test(test_era_fsync_in_commit),
		cmocka_unit_test(test_era_data_mode),
		cmocka_unit_test(test_data_mode_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
