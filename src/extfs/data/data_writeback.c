/* data=writeback (docs/write-data.md): file data goes to disk when the
 * page cache writes it, in no order with the journal; only 2.6.30's
 * replace safeguards start a file's writeback early (a writer's close
 * after a truncate to 0, a rename over a file: replace_flush). fsync may
 * still file the pages as ordered data of the commit it forces (one round
 * trip less than writing and waiting first), except with data_err=abort: a
 * data write error there would abort the journal, which this mode's data
 * errors never do. This file is the mode's table (core/data_ops.h). */
#include "extfs/data/data_modes.h"
#include "extfs/data/file_data.h"

static int writeback_fsync_in_commit(struct ext3_inode *in, uint32_t tid)
{
	if (in->fs->opts.data_err == EXT3_DATA_ERR_ABORT)
		return 0;
	return ext3_data_fsync_same_tid(in, tid);
}

const struct ext3_data_ops ext3_data_writeback_ops = {
	.name = "writeback",
	.replace_flush = true,
	.fsync_in_commit = writeback_fsync_in_commit,
};
