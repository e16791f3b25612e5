/* The filesystem the write-path tests make, chosen in one place
 * (tests/cli/ext4_write_matrix.sh runs them over ext2 and the ext4 sets):
 *
 *   NOSTALL_TEST_FS          ext2, ext3 or ext4: mke2fs -t (default ext3)
 *   NOSTALL_TEST_MKFS_OPTS   more mke2fs options, after the test's own
 *                            (e.g. "-O ^metadata_csum,uninit_bg"; mke2fs
 *                            joins several -O lists)
 *   NOSTALL_TEST_BLOCK_SIZE  1024, 2048 or 4096: a test that runs several
 *                            block sizes runs only this one (the others
 *                            skip, saying so); one that runs a single block
 *                            size runs it anyway
 *
 * Unset, every test makes exactly the ext3 image it made before (the
 * default `make test`). The shell side is tests/lib/testfs.sh (the same
 * variables). The kernel oracles mount with testfs_kernel_type(). */
#ifndef NOSTALL_TESTS_TESTFS_H
#define NOSTALL_TESTS_TESTFS_H

#include <stdbool.h>
#include <stddef.h>

/* NOSTALL_TEST_FS, or "ext3" when unset or empty. */
const char *testfs_type(void);
/* NOSTALL_TEST_MKFS_OPTS, or "" when unset. */
const char *testfs_mkfs_opts(void);
/* "-t TYPE[ OPTS]" for a mke2fs command line, into buf (also returned). */
const char *testfs_mke2fs_args(char *buf, size_t n);
/* The kernel's filesystem type to mount the test's images with: the same
 * name (ext4's images with -t ext4, ext2's with -t ext2). */
const char *testfs_kernel_type(void);
/* Does the test run block size bs (NOSTALL_TEST_BLOCK_SIZE unset, or
 * equal)? */
bool testfs_bs_wanted(unsigned bs);
/* Is the filesystem the default (ext3, no extra options)? */
bool testfs_is_default(void);
/* Has the filesystem a journal (not ext2, no ^has_journal)? */
bool testfs_has_journal(void);
/* Mount options for the filesystem: opts itself, or without a journal
 * opts less its data= and data_err= options (the kernel's ext4 driver and
 * nostall refuse them there: "can't mount with data=, fs mounted w/o
 * journal"), so a test's data-mode runs all run the journal-less mount.
 * Returns opts or buf; NULL for NULL. */
const char *testfs_mount_opts(const char *opts, char *buf, size_t n);

#endif
