/* data=ordered (docs/write-data.md): every handle that dirties an inode's
 * pages files its jbd_inode in the transaction (write_order), so the commit
 * writes ALL the inode's dirty pages and waits for them before its commit
 * block - 2.6.30's ordered mode, the fsync stall. fsync files the pages in
 * the commit it forces while the inode's last transaction still runs. The
 * machinery (the jbd_inode ops, fsync's filed handle) is file_data.c's,
 * shared with data=guarded; this file is the mode's table
 * (core/data_ops.h). */
#include "extfs/data/data_modes.h"
#include "extfs/data/file_data.h"

const struct ext3_data_ops ext3_data_ordered_ops = {
	.name = "ordered",
	.write_order = ext3_data_file_ordered,
	.fsync_in_commit = ext3_data_fsync_same_tid,
};
