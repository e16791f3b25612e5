/* ext3 read path, extended attributes: region parsing (pure), and in-inode
 * and block attributes of the debugfs-populated image.
 *
 * nostall-test: concurrent (every mount runs the block queue's dispatcher thread)
 */
#include "test_ext3_read_env.h"

/* ---- xattr region parsing (pure) ---- */

struct xa_seen {
	int n;
	char names[4][64];
};

static int xa_cb(void *ctx, const char *prefix, const char *name, size_t name_len,
		 const uint8_t *value, size_t value_len)
{
	struct xa_seen *s = ctx;
	(void)value;
	(void)value_len;
	if (s->n < 4)
		snprintf(s->names[s->n], 64, "%s%.*s", prefix, (int)name_len, name);
	s->n++;
	return 0;
}

static void test_xattr_region_parse(void **state)
{
	(void)state;
	uint8_t r[128] = {0};
	struct ext3_xattr_entry e = {3, EXT3_XATTR_INDEX_USER, cpu_to_le16(100), 0, cpu_to_le32(5), 0};
	memcpy(r, &e, sizeof e);
	memcpy(r + 16, "foo", 3);
	memcpy(r + 100, "hello", 5);
	struct xa_seen s = {0};
	assert_int_equal(ext3_xattr_region_walk(r, r, r + sizeof r, "t", xa_cb, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "user.foo");
	/* value past the end */
	e.e_value_size = cpu_to_le32(100);
	memcpy(r, &e, sizeof e);
	assert_int_equal(ext3_xattr_region_walk(r, r, r + sizeof r, "t", xa_cb, &s), -EUCLEAN);
	/* name overflowing the region */
	e.e_value_size = cpu_to_le32(5);
	e.e_name_len = 200;
	memcpy(r, &e, sizeof e);
	assert_int_equal(ext3_xattr_region_walk(r, r, r + sizeof r, "t", xa_cb, &s), -EUCLEAN);
}

static void test_xattrs(void **state)
{
	(void)state;
	NEED_E2FS();
	struct nostall_fs *fs = mount_ok(img_main);
	char v[4000];
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", v, sizeof v), 5);
	assert_memory_equal(v, "hello", 5);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", NULL, 0), 5);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.small", v, 2), -ERANGE);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "trusted.t1", v, sizeof v), 13);
	assert_memory_equal(v, "trusted-value", 13);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.nope", v, sizeof v), -ENODATA);
	/* no namespace prefix: the VFS finds no handler (Linux's EOPNOTSUPP) */
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "small", v, sizeof v), -EOPNOTSUPP);
	/* the 700-byte value lives in the xattr block */
	size_t blen;
	char host[512];
	snprintf(host, sizeof host, "%s/bigval", tmpdir);
	uint8_t *big = read_host(host, &blen);
	assert_int_equal(nostall_getxattr(fs, "f2", 0, "user.big", v, sizeof v), (ssize_t)blen);
	assert_memory_equal(v, big, blen);
	free(big);
	struct nostall_stat st;
	assert_int_equal(nostall_stat(fs, "f2", 0, &st), 0);
	assert_int_equal(st.xattr_block, debugfs_num(img_main, "f2", "File ACL: "));
	assert_true(st.xattr_block != 0);
	char list[512];
	ssize_t n = nostall_listxattr(fs, "f2", 0, list, sizeof list);
	assert_true(n > 0);
	assert_int_equal(nostall_listxattr(fs, "f2", 0, NULL, 0), n);
	assert_int_equal(nostall_listxattr(fs, "f2", 0, list, 5), -ERANGE);
	int found = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1)
		found += !strcmp(list + i, "user.small") + !strcmp(list + i, "trusted.t1") +
			 !strcmp(list + i, "user.big");
	assert_int_equal(found, 3);
	assert_int_equal(nostall_getxattr(fs, "dir", 0, "user.dirattr", v, sizeof v), 4);
	assert_int_equal(nostall_listxattr(fs, "f1", 0, list, sizeof list), 0);
	/* via a symlink: follows unless NOFOLLOW */
	assert_int_equal(nostall_getxattr(fs, "dir/up", 0, "user.small", v, sizeof v), 5);
	assert_int_equal(nostall_getxattr(fs, "dir/up", NOSTALL_NOFOLLOW, "user.small", v, sizeof v),
			 -ENODATA);
	assert_int_equal(nostall_umount(fs), 0);
}

static int group_setup(void **state)
{
	(void)state;
	return ext3_read_env_setup(IMG_MAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xattr_region_parse),
		cmocka_unit_test(test_xattrs),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
