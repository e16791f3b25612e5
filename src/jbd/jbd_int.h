/* JBD internals shared by the src/jbd sources (not part of the API: jbd.h).
 *
 * Locking (one lock per journal, like j_state_lock + j_list_lock folded):
 *   j->lock protects every field of the journal marked [L], every
 *   transaction, every journal head (struct jbd_jh) and every jbd_inode's
 *   list fields. It is never held across I/O, a sleep on a buffer lock, or
 *   a filesystem callback (the jbd_inode ops).
 *   Lock order: buffer lock (buf_lock) -> j->lock; under j->lock only
 *   buf_trylock is used.
 *   j->checkpoint_mutex serialises checkpointing (taken without j->lock).
 *   j->sb_mutex serialises journal superblock writes.
 */
#ifndef NOSTALL_JBD_INT_H
#define NOSTALL_JBD_INT_H

#include "jbd.h"
#include "jbd_format.h"

#include "../blk/blk.h"
#include "../util/list.h"

#include <pthread.h>
#include <stdatomic.h>

/* Journal block -> device block map and synchronous I/O on it
 * (jbd_io.c). */
struct jbd_map {
	struct dev *dev;          /* synchronous I/O when q is NULL */
	struct blk_queue *q;      /* or through the block layer */
	unsigned bs;
	uint32_t nr;              /* mapped journal blocks */
	uint64_t *phys;           /* [nr] */
	bool fua_block_set;       /* jbd_location's: replay writes it FUA */
	uint64_t fua_block;
};

int jbd_map_build(struct jbd_map *m, struct dev *dev, struct blk_queue *q, const struct jbd_location *loc,
		  uint32_t need_blocks);
void jbd_map_free(struct jbd_map *m);
/* Read/write one journal block (logical) or one device block. */
int jbd_map_read(struct jbd_map *m, uint32_t jblock, void *buf);
int jbd_map_write(struct jbd_map *m, uint32_t jblock, const void *buf, unsigned rw);
int jbd_dev_block_read(struct jbd_map *m, uint64_t block, void *buf);
/* (jbd_location.fua_block: with FUA) */
int jbd_dev_block_write(struct jbd_map *m, uint64_t block, const void *buf);
int jbd_map_flush(struct jbd_map *m);
/* Read journal block 0 (the superblock) of loc through a one-block map. */
int jbd_sb_read(struct dev *dev, const struct jbd_location *loc, void *buf);

/* Validate a superblock buffer; fills the geometry fields of info. */
/* recovery_only: the features recovery reads (today the same as what a
 * writable load takes: jbd_format.h). A v2/v3 superblock's checksum must
 * hold (-EBADMSG, as the kernel refuses such a journal). */
int jbd_sb_check(const struct jbd_superblock *sb, unsigned bs, uint32_t avail, bool recovery_only,
		 struct jbd_recovery_info *info);
/* The v2/v3 superblock checksum of sb (what s_checksum must hold). */
uint32_t jbd_sb_csum(const struct jbd_superblock *sb);
/* SCAN/REVOKE/REPLAY over the map. */
int jbd_recover_map(struct jbd_map *m, struct jbd_superblock *sb, unsigned flags, struct jbd_recovery_info *info);

/* Transaction id order with wrap (the kernel's tid_gt / tid_geq). */
static inline bool jbd_tid_gt(uint32_t x, uint32_t y) { return (int32_t)(x - y) > 0; }
static inline bool jbd_tid_geq(uint32_t x, uint32_t y) { return (int32_t)(x - y) >= 0; }

/* ---- revoke tables: block -> tid (hash, open chaining) ---- */
struct jbd_revoke_rec {
	uint64_t block;
	uint32_t tid;
	struct jbd_revoke_rec *next;
};
struct jbd_revoke_table {
	struct jbd_revoke_rec **slots;
	size_t nslots, count;
};
int jbd_revoke_table_init(struct jbd_revoke_table *t, size_t nslots);
void jbd_revoke_table_free(struct jbd_revoke_table *t);
/* Insert or update (keeping the newer tid). */
int jbd_revoke_table_set(struct jbd_revoke_table *t, uint64_t block, uint32_t tid);
struct jbd_revoke_rec *jbd_revoke_table_find(const struct jbd_revoke_table *t, uint64_t block);
bool jbd_revoke_table_remove(struct jbd_revoke_table *t, uint64_t block);

/* ---- transactions ---- */
enum jbd_tstate {
	JBD_T_RUNNING = 0, /* handles join it */
	JBD_T_LOCKED,      /* no new handles; waiting for open ones to stop */
	JBD_T_FLUSH,       /* ordered data, revoke blocks, descriptors, copies */
	JBD_T_COMMIT,      /* commit block being written */
	JBD_T_FINISHED,    /* committed; on the checkpoint list until written home */
};
const char *jbd_tstate_name(enum jbd_tstate s);

struct jbd_transaction {
	uint32_t tid;
	enum jbd_tstate state;
	struct jbd_journal *j;
	int updates;              /* open handles */
	int outstanding;          /* credits reserved: used + held by open handles */
	uint64_t start_ns, expires_ns;
	bool sync;                /* a sync handle asked for this commit */
	uint64_t data_submit_ns;  /* commit: when its ordered data submit began */
	int reason;               /* why the commit started (jbd_commit_reason) */
	uint32_t log_start;       /* first log block (set at commit) */
	struct list_node buffers; /* jh->t_link: buffers this transaction owns */
	struct list_node forget;  /* jh->f_link: buffers forgotten in it */
	struct list_node cp;      /* jh->cp_link: committed buffers to write home */
	struct list_node inodes;  /* jbd_inode->link: ordered data to write first */
	struct jbd_revoke_table revoke;
	struct list_node link;    /* on j->checkpoint_list (oldest first) */
	int nbuffers;             /* dirtied buffers on `buffers` */
};

/* A handle (jbd_trans.c): used by its owner thread only; t and credits
 * change under j->lock. */
struct jbd_handle {
	struct jbd_journal *j;
	struct jbd_transaction *t;
	int credits;     /* still unused */
	int ref;         /* nesting depth in the owning thread */
	bool sync;
	uint64_t trace_t0; /* stalltrace.h: when it started (0: off) */
};

/* Journal head: the journal's state of one buffer (buf_private). */
struct jbd_jh {
	struct jbd_journal *j;
	struct buffer_head *bh;          /* the journal holds a reference */
	uint64_t blocknr;
	struct jbd_transaction *t;       /* owner: running or committing */
	struct jbd_transaction *next_t;  /* running wants it while t commits */
	struct jbd_transaction *cp_t;    /* checkpoint list it is on */
	struct jbd_transaction *forget_t;/* forgotten in this (running) transaction */
	struct list_node t_link, cp_link, f_link;
	void *frozen;                    /* t's contents, copied out for next_t */
	/* Undo access (jbd_get_undo_access): the contents as of the last
	 * (or committing) transaction, for the allocator. Replaced or dropped
	 * only by a thread holding the buffer lock (readers hold it); when the
	 * commit finds the buffer locked, the change waits in committed_next
	 * (committed_stale) for the next holder (jbd__committed_apply). */
	void *committed;
	void *committed_next;
	bool committed_stale;
	bool dirty_t;                    /* dirtied in t */
	bool dirty_next;                 /* dirtied in next_t */
	bool copied;                     /* the commit of t has taken its log copy */
	bool shadow;                     /* journal_shadow=wait: that log copy is being
					  * written (BJ_Shadow); cleared at its
					  * completion, which wakes j->wait_shadow */
	bool jdirty;                     /* committed, not yet written home */
};

/* Transition with a legality check (an illegal one is a bug: abort()). */
void jbd_transaction_set_state(struct jbd_transaction *t, enum jbd_tstate s);

/* Log areas kept per journal (a 64 MiB log's largest transaction fills 9). */
#define JBD_LOG_AREAS 16u

struct jbd_journal {
	/* constant after load */
	struct jbd_map map;
	struct buf_cache *cache;
	struct blk_queue *q;
	struct jbd_config cfg;
	unsigned bs;
	uint32_t first, last;          /* log area [first, last) */
	int max_transaction_buffers;   /* maxlen / 4 */
	int tags_per_desc;
	int revokes_per_block;
	int reserved_blocks;           /* slack kept free in the log */
	int version;                   /* superblock 1 or 2 */
	/* The jbd2 write format chosen at load (jbd_journal.c): 64-bit tags
	 * and revoke records, v3 checksums (csum_seed: crc32c of the uuid);
	 * tag_bytes is one tag without its uuid, tail_bytes the v3 tail of
	 * descriptor and revoke blocks (0 without v3). */
	bool is64, v3;
	uint32_t csum_seed;
	unsigned tag_bytes, tail_bytes;
	uint8_t uuid[16];
	void *sbbuf;                   /* block 0 as last written [sb_mutex] */
	bool inited;

	pthread_mutex_t lock;
	pthread_cond_t wait_locked;    /* running transaction left LOCKED */
	pthread_cond_t wait_updates;   /* a handle stopped */
	pthread_cond_t wait_commit;    /* a commit finished / commit thread state */
	pthread_cond_t wait_thread;    /* wakes the commit thread */
	pthread_cond_t wait_inode;     /* a jbd_inode's commit op returned */
	pthread_cond_t wait_barrier;   /* lock_updates released */
	pthread_cond_t wait_shadow;    /* a shadowed buffer's log write completed */
	pthread_cond_t wait_cp;        /* wakes the checkpoint thread */
	pthread_mutex_t checkpoint_mutex;
	pthread_mutex_t sb_mutex;

	/* [L] */
	struct jbd_transaction *running, *committing;
	struct list_node checkpoint_list;  /* committed transactions, oldest first */
	uint32_t transaction_sequence;     /* next tid to create */
	uint32_t commit_sequence;          /* last committed tid */
	uint32_t commit_request;           /* tid wanted committed */
	bool commit_requested;
	uint32_t head, tail, tail_sequence, free;
	int reserved_committing;           /* log blocks the commit still allocates */
	bool aborted;
	bool emptied;                /* destroy wrote s_start 0: the tail never moves again (j->lock + sb_mutex) */
	int err;
	bool stopping, thread_running;
	/* The commit thread's sleep: thread_sleep_until is its deadline while
	 * thread_sleeping (0: none). A new transaction wakes it only when that
	 * deadline would miss the transaction's expiry (jbd_trans.c). */
	bool thread_sleeping;
	uint64_t thread_sleep_until;
	/* jbd_journal_lock_updates: barrier_depth > 0 keeps new handles out;
	 * barrier_owner may nest. */
	int barrier_depth;
	pthread_t barrier_owner;
	struct jbd_stats st;
	pthread_t thread;
	/* [L] log areas kept for the next commit (jbd_commit.c): each one a
	 * descriptor group's blocks, contiguous so that a run of them is one
	 * bio; kept resident instead of faulting 16 MiB in per commit. */
	void *log_areas[JBD_LOG_AREAS];
	unsigned nr_log_areas;
	/* journal_checkpoint=early's thread (jbd_checkpoint.c): [L] but
	 * cp_thread itself (set before the thread runs). */
	pthread_t cp_thread;
	bool cp_running, cp_stop;
	uint64_t cp_kicks;             /* commits started or finished (each may call for a pass) */
};
/* Start / stop the checkpoint thread (no-op under journal_checkpoint=full). */
int jbd_cp_thread_start(struct jbd_journal *j);
void jbd_cp_thread_stop(struct jbd_journal *j);
/* A commit started (its log space is reserved) or finished: the
 * checkpoint thread may have work. [L] */
void jbd__cp_kick(struct jbd_journal *j);
/* Free the kept log areas (journal_free). */
void jbd__log_areas_free(struct jbd_journal *j);

/* A filesystem inode with ordered data (jbd_inode.c). It is on the list of
 * at most one transaction (t: running, or committing) and, while t commits,
 * may be wanted by the running one (next_t), which gets it when t
 * finishes (jbd2's jbd2_inode). All fields but ops/ctx are [L]. */
struct jbd_inode {
	struct jbd_journal *j;
	const struct jbd_inode_ops *ops;
	void *ctx;
	struct jbd_transaction *t, *next_t;
	struct list_node link;       /* on t->inodes */
	bool commit_running;         /* the commit thread is in an op: pinned */
	bool strict, next_strict;    /* t's / next_t's errors abort (jbd_inode_file_strict) */
	int err;                     /* data_err=ignore: first unreported error */
};

/* ---- the commit of one transaction (jbd_commit.c) ----
 * A state machine: each phase runs on the commit thread and returns the
 * next one; jbd_commit_transaction checks every transition (an illegal one
 * is a bug: abort()). A runtime error in a phase goes to ABORT, which
 * aborts the journal. The phases return the successor in the default
 * (jbd2) order below; with journal_shadow=wait the machine runs fs/jbd's
 * order instead: DATA_SUBMIT, DATA_WAIT, REVOKE, METADATA, LOG_WAIT. */
enum jbd_commit_phase {
	JBD_CP_LOCK = 0,      /* RUNNING -> LOCKED: no new handles, wait for the open ones */
	JBD_CP_SWITCH,        /* LOCKED -> FLUSH: the committing transaction; a new one may run */
	JBD_CP_DATA_SUBMIT,   /* ordered data: each filed inode's submit op */
	JBD_CP_REVOKE,        /* revoke blocks (jbd_revoke.c) */
	JBD_CP_METADATA,      /* descriptor blocks and the metadata copies */
	JBD_CP_DATA_WAIT,     /* ordered data: each filed inode's wait op */
	JBD_CP_LOG_WAIT,      /* every log block done */
	JBD_CP_COMMIT_BLOCK,  /* FLUSH -> COMMIT: the commit block (flush + FUA with barriers) */
	JBD_CP_FINISH,        /* COMMIT -> FINISHED: checkpoint lists, inode lists, stats */
	JBD_CP_DONE,
	JBD_CP_ABORT,         /* an error: wait for what was submitted, abort the journal */
	JBD_CP_PHASES
};
const char *jbd_commit_phase_name(enum jbd_commit_phase p);

/* One log block of the commit, in the commit's own memory. */
/* Where a log block's data lives (jbd_commit.c): its own block, or a
 * descriptor group's log area (the descriptor's block owns the area and
 * gives it back to the journal's pool when the commit is freed). */
enum jbd_logmem { JBD_LOGMEM_OWN = 0, JBD_LOGMEM_AREA, JBD_LOGMEM_IN_AREA };

struct jbd_logblk {
	struct bio bio;           /* the first block of a run carries the run's bio */
	void *data;
	struct jbd_jh *shadow;    /* journal_shadow=wait: the buffer this is the log
				   * copy of, shadowed until the bio completes */
	struct jbd_logblk *run_next; /* the next block written by the same bio */
	enum jbd_logmem mem;
};

struct jbd_commit {
	struct jbd_journal *j;
	struct jbd_transaction *t;
	uint32_t tid;
	bool sync;
	bool data_first;               /* journal_shadow=wait: fs/jbd's phase order */
	unsigned write_op, commit_op;  /* the era's ops (jbd_commit.c) */
	uint64_t t0;
	int nrev;                      /* revoke records (fixed at SWITCH) */
	struct blk_batch batch;
	struct jbd_logblk **blks;      /* each allocated on its own: bios in
					* flight must never move */
	size_t n, cap;
	int err;                       /* the error that sent it to ABORT */
	const char *failed;            /* what failed (for the message) */
	uint64_t logged, descs, escaped, revblks;
	bool csum;                     /* journal_checksum: v1 checksum in the commit block */
	bool async;                    /* journal_async_commit: commit block sent at METADATA, one flush after */
	uint32_t crc;                  /* v1 checksum so far: descriptors and copies in log order */
};
/* A new log block of the commit (j->lock held): zeroed, with the next free
 * log position in *jb and a header of `type` with the commit's tid. NULL
 * with *rc = -ENOMEM, or -ENOSPC instead of running into the tail. */
struct jbd_logblk *jbd_commit_blk_start(struct jbd_commit *c, uint32_t type, uint32_t *jb, int *rc);
/* v3: the crc32c tail of a descriptor or revoke block (the whole block,
 * the tail zero; j->v3 only). */
void jbd_block_tail_set(const struct jbd_journal *j, void *blk);
/* Submit b as journal block jb. */
int jbd_commit_submit(struct jbd_commit *c, struct jbd_logblk *b, uint32_t jb, unsigned rw);
/* Record the error that sends the commit to ABORT; returns ABORT. */
enum jbd_commit_phase jbd_commit_error(struct jbd_commit *c, int err, const char *what);
/* Phases implemented elsewhere. */
enum jbd_commit_phase jbd_commit_write_revoke(struct jbd_commit *c);  /* jbd_revoke.c */
enum jbd_commit_phase jbd_commit_data_submit(struct jbd_commit *c);   /* jbd_inode.c */
enum jbd_commit_phase jbd_commit_data_wait(struct jbd_commit *c);     /* jbd_inode.c */
/* FINISH's part for the inode list (j->lock held). */
void jbd__inodes_finish(struct jbd_transaction *t);
/* Detach every inode of t's list (destroy; j->lock held). */
void jbd__inodes_detach(struct jbd_transaction *t);

/* Commit thread and commit requests (jbd_commit.c). */
int jbd_commit_thread_start(struct jbd_journal *j);
void jbd_commit_thread_stop(struct jbd_journal *j);
/* Request a commit of tid (j->lock held); returns whether it is running.
 * _request does not wake the commit thread: the caller signals
 * j->wait_thread after dropping j->lock (a hot path: an fsync). */
bool jbd__log_start_commit(struct jbd_journal *j, uint32_t tid, int reason);
bool jbd__log_request_commit(struct jbd_journal *j, uint32_t tid, int reason);
void jbd_commit_transaction(struct jbd_journal *j);
/* FINISH's part for one buffer of the committed transaction (jbd_trans.c,
 * j->lock held): checkpoint list, frozen and committed copies, handover to
 * the running transaction. */
void jbd__jh_commit_done(struct jbd_jh *jh, struct jbd_transaction *t);
/* Apply a committed-copy change that waited for the buffer lock (buffer
 * lock and j->lock held). */
void jbd__committed_apply(struct jbd_jh *jh);

/* Checkpoint (jbd_checkpoint.c). */
/* Space for a new handle: called with j->lock held, may drop and retake it. */
int jbd__log_wait_for_space(struct jbd_journal *j);
/* Write back the oldest checkpoint transaction's buffers. */
int jbd_log_do_checkpoint(struct jbd_journal *j);
/* Recompute the tail from the checkpoint list, write the superblock if it
 * moved. Takes the locks it needs. */
int jbd_cleanup_tail(struct jbd_journal *j);
/* After a commit: the same, but only once a quarter of the log (a maximal
 * transaction) would come free, or the log runs short (jbd2's rule). A
 * tail record costs a cache flush and a FUA superblock write; moving it
 * after every commit doubled the device round trips of an fsync loop
 * whose commits each release the one before (the same few blocks
 * relogged). A crash replays from the older tail: more transactions, the
 * same result (revoke records cover what was freed since). */
int jbd__cleanup_tail_lazy(struct jbd_journal *j);
/* Free log blocks left for new transactions beyond reserves ([L]). */
int jbd__log_space_left(struct jbd_journal *j);
int jbd__space_needed(struct jbd_journal *j);
/* Remove jh from its checkpoint list; drops the transaction if empty. [L] */
void jbd__checkpoint_remove(struct jbd_jh *jh);

/* Journal (jbd_journal.c). */
int jbd_write_superblock(struct jbd_journal *j, uint32_t tail_seq, uint32_t start, int err, bool wait);
/* The same with j->sb_mutex already held. */
int jbd__write_sb(struct jbd_journal *j, uint32_t tail_seq, uint32_t start, int err);
void jbd__abort(struct jbd_journal *j, int err);   /* [L] held; wakes waiters */
/* Detach jh from its buffer if nothing references it any more. [L] */
void jbd__jh_maybe_free(struct jbd_jh *jh);
/* Free a finished transaction with nothing left to checkpoint. [L] */
void jbd__transaction_free(struct jbd_transaction *t);
/* Next log block after `b` in the circular area. */
static inline uint32_t jbd_log_next(const struct jbd_journal *j, uint32_t b)
{
	b++;
	return b >= j->last ? j->first : b;
}
/* Blocks from a to b going forward in the circular area. */
static inline uint32_t jbd_log_dist(const struct jbd_journal *j, uint32_t a, uint32_t b)
{
	return b >= a ? b - a : (j->last - a) + (b - j->first);
}

#endif
