/* The data modes' operations tables (core/data_ops.h), one per mode, each
 * defined beside its mode's code in this room. For the one place that
 * chooses among them when it resolves the mode at mount (super/mount.c);
 * everything else calls through the table it was given (ext3_dops). */
#ifndef NOSTALL_EXTFS_DATA_DATA_MODES_H
#define NOSTALL_EXTFS_DATA_DATA_MODES_H

#include "extfs/core/data_ops.h"

extern const struct ext3_data_ops ext3_data_journal_ops;   /* data_journal.c */
extern const struct ext3_data_ops ext3_data_ordered_ops;   /* data_ordered.c */
extern const struct ext3_data_ops ext3_data_writeback_ops; /* data_writeback.c */
extern const struct ext3_data_ops ext3_data_guarded_ops;   /* guarded.c */

#endif
