/* nostall-test: concurrent (the lock-order checker, util/lockdep.h; also run under TSan)
 *
 * The lock-order checker (src/util/lockdep.c; docs/write-testing.md):
 *  - two classes taken A then B, later B then A: the cycle is reported
 *    (a test callback stands in for the abort), naming both chains;
 *    same-class nesting in ascending order passes, descending is reported;
 *  - the real library under the checker: a write (inode lock, then the
 *    handle) and then an inode lock waited for under a handle (library
 *    internals) is reported; creating and writing files (ext3_new_inode
 *    locks the new inode under the create's handle) and a rename with a
 *    whiteout are not (issue 35: they waited for the lock under the handle
 *    and were reported before ext3_new_inode only tried it).
 *
 * Built with the test hooks (Makefile: test_lockdep links HOOKS_LIB, with
 * -DNOSTALL_LOCKDEP). mke2fs, debugfs and e2fsck must be installed. */
#include "test_ext3_data_env.h"

#include "extfs/core/write.h"
#include "jbd/jbd.h"
#include "util/lockdep.h"

#ifndef NOSTALL_LOCKDEP
#error "test_lockdep is built with -DNOSTALL_LOCKDEP (Makefile HOOKS_DEFS)"
#endif

static int reports;
static char last[4096];

static void on_report(const char *text, void *arg)
{
	(void)arg;
	reports++;
	snprintf(last, sizeof last, "%s", text);
}

static int test_setup(void **state)
{
	(void)state;
	reports = 0;
	last[0] = '\0';
	lockdep_reset();
	lockdep_set_report(on_report, NULL);
	return 0;
}

static int test_teardown(void **state)
{
	(void)state;
	lockdep_set_report(NULL, NULL);
	lockdep_reset();
	return 0;
}

LOCKDEP_CLASS_DEFINE(class_a, "test A", 0);
LOCKDEP_CLASS_DEFINE(class_b, "test B", 0);
LOCKDEP_CLASS_DEFINE(class_n, "test nested", LOCKDEP_NEST_ASCENDING);

/* A then B, then (another step) B then A: reported, with both chains. */
static void test_cycle_reported(void **state)
{
	(void)state;
	int a = 0, b = 0; /* the locks' identities */
	lockdep_acquire(&class_a, &a, 0);
	lockdep_acquire(&class_b, &b, 0);
	lockdep_release(&b);
	lockdep_release(&a);
	assert_int_equal(reports, 0);
	assert_int_equal(lockdep_held_count(), 0);
	lockdep_acquire(&class_b, &b, 0);
	lockdep_acquire(&class_a, &a, 0);
	lockdep_release(&a);
	lockdep_release(&b);
	assert_int_equal(reports, 1);
	print_message("%s", last);
	assert_non_null(strstr(last, "lock-order inversion"));
	assert_non_null(strstr(last, "new: test B -> test A"));
	assert_non_null(strstr(last, "test A -> test B   (recorded holding: test A(0))"));
	/* The order seen first stays fine. */
	lockdep_acquire(&class_a, &a, 0);
	lockdep_acquire(&class_b, &b, 0);
	lockdep_release(&b);
	lockdep_release(&a);
	assert_int_equal(reports, 1);
}

/* Same class: ascending order keys nest, descending and equal do not; a
 * trylock records no order. */
static void test_same_class(void **state)
{
	(void)state;
	int x = 0, y = 0;
	lockdep_acquire(&class_n, &x, 5);
	lockdep_acquire(&class_n, &y, 9);
	lockdep_release(&y);
	lockdep_release(&x);
	assert_int_equal(reports, 0);
	lockdep_acquire(&class_n, &y, 9);
	lockdep_acquire_try(&class_n, &x, 5);
	lockdep_release(&x);
	assert_int_equal(reports, 0);
	lockdep_acquire(&class_n, &x, 5);
	lockdep_release(&x);
	lockdep_release(&y);
	assert_int_equal(reports, 1);
	assert_non_null(strstr(last, "ascending order only"));
	int p = 0, q = 0;
	lockdep_acquire(&class_a, &p, 0);
	lockdep_acquire(&class_a, &q, 0);
	lockdep_release(&q);
	lockdep_release(&p);
	assert_int_equal(reports, 2);
	assert_int_equal(lockdep_held_count(), 0);
}

static struct ext3_fs *lib_mount(const char *name, struct dev **d)
{
	char img[300];
	tmpname(img, sizeof img, name);
	mkimg(img, 1024, 16, 2);
	return mount_rw(img, "data=ordered,commit=60", d);
}

/* The library's own order, then an inode lock waited for under a handle:
 * reported. */
static void test_library_inversion(void **state)
{
	(void)state;
	struct dev *d;
	struct ext3_fs *fs = lib_mount("inv.img", &d);
	struct ext3_inode *f1 = get(fs, "/f1"), *f2 = get(fs, "/f2");
	char buf[100] = "x";
	wr(f1, buf, sizeof buf, 0); /* inode lock -> handle */
	assert_int_equal(reports, 0);
	struct jbd_handle *h;
	assert_int_equal(ext3_journal_start(fs, 1, &h), 0);
	ext3_inode_wrlock(f2); /* handle -> inode: the inversion */
	ext3_inode_unlock(f2);
	assert_int_equal(ext3_journal_stop(h), 0);
	print_message("%s", last);
	assert_int_equal(reports, 1);
	assert_non_null(strstr(last, "new: jbd handle -> ext3 inode"));
	assert_non_null(strstr(last, "ext3 inode -> jbd handle"));
	ext3_iput(f1);
	ext3_iput(f2);
	umount_ok(fs, d);
}

/* Creating, writing, renaming with a whiteout, removing: no report (the
 * new inode is only tried under the handle). */
static void test_library_clean(void **state)
{
	(void)state;
	struct dev *d;
	struct ext3_fs *fs = lib_mount("clean.img", &d);
	struct ext3_inode *root;
	assert_int_equal(ext3_iget(fs, EXT3_ROOT_INO, &root), 0);
	struct ext3_cred cr = {.uid = 0, .gid = 0};
	char buf[3000];
	fill((uint8_t *)buf, sizeof buf, 1);
	struct ext3_inode *sub;
	assert_int_equal(ext3_mkdir(root, "sub", 3, 0755, &cr, &sub), 0);
	for (int i = 0; i < 20; i++) {
		char name[32];
		int n = snprintf(name, sizeof name, "n%d", i);
		struct ext3_inode *in;
		assert_int_equal(ext3_create(i % 2 ? sub : root, name, (size_t)n, 0100644, 0, &cr, &in), 0);
		wr(in, buf, sizeof buf, 0);
		ext3_iput(in);
	}
	assert_int_equal(ext3_rename(root, "n0", 2, sub, "m0", 2, EXT3_RENAME_WHITEOUT), 0);
	assert_int_equal(ext3_unlink(root, "n2", 2), 0);
	assert_int_equal(ext3_unlink(sub, "n1", 2), 0);
	assert_int_equal(ext3_fs_sync(fs), 0);
	if (reports)
		fail_msg("lockdep reported %d time(s); last:\n%s", reports, last);
	ext3_iput(sub);
	ext3_iput(root);
	umount_ok(fs, d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cycle_reported, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_same_class, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_library_inversion, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_library_clean, test_setup, test_teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
