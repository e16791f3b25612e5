/* The no-journal stand-in handle (nojournal.c), for trans.c only: the
 * ext3_journal_* calls dispatch to these when the handle is the stand-in
 * (write.h, "No-journal mounts"; docs/ext2-nojournal.md). */
#ifndef NOSTALL_EXTFS_CORE_NOJOURNAL_H
#define NOSTALL_EXTFS_CORE_NOJOURNAL_H

#include "extfs/core/write.h"

/* The mount's no-journal state (the writers' lock, the metadata flusher):
 * ext3_write_init / ext3_write_shutdown of a no-journal mount. */
int ext3_nj_init(struct ext3_fs *fs);
void ext3_nj_shutdown(struct ext3_fs *fs);
/* Start / stop the calling thread's stand-in (nested starts share it). */
int ext3_nj_start(struct ext3_fs *fs, struct jbd_handle **out);
int ext3_nj_stop(void);
/* The stand-in while this thread has one open, else NULL. */
struct jbd_handle *ext3_nj_current(void);
/* The stand-in's address, open or not (ext3_fs_error's superblock). */
struct jbd_handle *ext3_nj_any(void);
void ext3_nj_set_sync(void);
/* A freed metadata block: its cached copy is never written again. */
int ext3_nj_forget_block(uint64_t block);

#endif
