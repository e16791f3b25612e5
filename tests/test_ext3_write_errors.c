/* ext3 writes: an error of a chunk's journal bookkeeping is the write's
 * result (src/extfs/data/file_write.c write_chunk_paged; issue 35). A short count
 * is only for a short copy: when filing the ordered data fails after the
 * bytes were copied, the write returns the error (2.6.30's
 * ext3_ordered_write_end), or the bytes of the earlier chunks that
 * completed (generic_perform_write's "written ? written : status"), and
 * i_size does not cover the failed chunk.
 *
 * Fault injection: this binary is linked with -Wl,--wrap=jbd_inode_create
 * -Wl,--wrap=jbd_inode_file (Makefile TEST_WRAP), so file_data.c's calls
 * come here first; fail_create / fail_file_at arm a failure. Nothing of
 * this is in the library. mke2fs, debugfs and e2fsck must be installed. */
#include "test_ext3_data_env.h"

#include "jbd/jbd.h"

int __real_jbd_inode_create(struct jbd_journal *j, const struct jbd_inode_ops *ops, void *ctx,
			    struct jbd_inode **out);
int __wrap_jbd_inode_create(struct jbd_journal *j, const struct jbd_inode_ops *ops, void *ctx,
			    struct jbd_inode **out);
int __real_jbd_inode_file(struct jbd_handle *h, struct jbd_inode *ji);
int __wrap_jbd_inode_file(struct jbd_handle *h, struct jbd_inode *ji);

static bool fail_create;  /* the next jbd_inode_create fails with -ENOMEM */
static int fail_file_at;  /* the fail_file_at-th jbd_inode_file from now fails (0: none) */
static int file_calls;

int __wrap_jbd_inode_create(struct jbd_journal *j, const struct jbd_inode_ops *ops, void *ctx,
			    struct jbd_inode **out)
{
	if (fail_create) {
		fail_create = false;
		return err_set(-ENOMEM, "test: injected jbd_inode_create failure");
	}
	return __real_jbd_inode_create(j, ops, ctx, out);
}

int __wrap_jbd_inode_file(struct jbd_handle *h, struct jbd_inode *ji)
{
	if (fail_file_at && ++file_calls == fail_file_at) {
		fail_file_at = 0;
		return err_set(-ENOMEM, "test: injected jbd_inode_file failure");
	}
	return __real_jbd_inode_file(h, ji);
}

/* data=ordered, one chunk: the copy succeeds, the filing fails with
 * ENOMEM: the write returns -ENOMEM (it returned the 8 KiB before the fix)
 * and the size stays 0; the next write works and e2fsck finds the image
 * clean. */
static void test_ordered_filing_enomem(void **state)
{
	(void)state;
	char img[300];
	tmpname(img, sizeof img, "enomem.img");
	mkimg(img, 1024, 16, 1);
	struct dev *d;
	struct ext3_fs *fs = mount_rw(img, "data=ordered,commit=60", &d);
	struct ext3_inode *in = get(fs, "/f1");
	uint8_t buf[8192];
	fill(buf, sizeof buf, 3);
	fail_create = true;
	ssize_t w = ext3_file_write(in, buf, sizeof buf, 0, 0, NULL);
	assert_false(fail_create); /* the hook was reached */
	if (w != -ENOMEM)
		fail_msg("write with its ordered filing failing: %zd, want %d (-ENOMEM)", w, -ENOMEM);
	assert_int_equal(in->i_size, 0);
	wr(in, buf, sizeof buf, 0);
	check_read(in, buf, sizeof buf, 0);
	ext3_iput(in);
	umount_ok(fs, d);
	fsck_clean(img);
}

/* data=ordered, a write of three chunks (64 blocks each at 1 KiB): the
 * second chunk's filing fails: the first chunk's 64 KiB are the result
 * (the write returned all 160 KiB before the fix) and the size is 64 KiB. */
static void test_ordered_filing_second_chunk(void **state)
{
	(void)state;
	char img[300];
	tmpname(img, sizeof img, "chunk2.img");
	mkimg(img, 1024, 16, 1);
	struct dev *d;
	struct ext3_fs *fs = mount_rw(img, "data=ordered,commit=60", &d);
	struct ext3_inode *in = get(fs, "/f1");
	size_t len = 160 * KIB;
	uint8_t *buf = malloc(len);
	assert_non_null(buf);
	fill(buf, len, 5);
	file_calls = 0;
	fail_file_at = 2;
	ssize_t w = ext3_file_write(in, buf, len, 0, 0, NULL);
	assert_int_equal(fail_file_at, 0); /* the hook was reached */
	if (w != (ssize_t)(64 * KIB))
		fail_msg("write with its second chunk's filing failing: %zd, want %llu", w, 64 * KIB);
	assert_int_equal(in->i_size, 64 * KIB);
	check_read(in, buf, 64 * KIB, 0);
	ext3_iput(in);
	umount_ok(fs, d);
	fsck_clean(img);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordered_filing_enomem),
		cmocka_unit_test(test_ordered_filing_second_chunk),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
