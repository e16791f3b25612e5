/* JBD for a writing filesystem: undo access for allocation bitmaps
 * (committed copies), freed blocks never written home stale (forget while
 * an older transaction still has the block in the log or on a checkpoint
 * list), and lock_updates / unlock_updates.
 * nostall-test: concurrent
 *
 * The environment (test_jbd_env.h) is test_jbd.c's: a mem: device, queue,
 * buffer cache and journal in a contiguous block range.
 */
#include "test_jbd_env.h"

/* The committed copy as an allocator would read it: under the buffer
 * lock; -1 when there is none, else its byte 0. */
static int committed_byte0(struct buffer_head *bh)
{
	buf_lock(bh);
	const unsigned char *p = jbd_buffer_committed_data(bh);
	int v = p ? p[0] : -1;
	buf_unlock(bh);
	return v;
}

/* Undo access on a "bitmap": the committed copy keeps the bits the running
 * transaction freed until it commits; a second undo access in the same
 * transaction keeps the first copy; the commit drops it. */
static void test_undo_access(void **state)
{
	(void)state;
	struct held x;
	held_open(&x, "commit=100");
	struct env *e = &x.e;
	const uint64_t bm = DATA0 + 100;
	struct jbd_handle *h;
	/* T1: every bit of byte 0 allocated, committed. */
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	put_block(h, e, bm, 0xFF, false);
	jbd_handle_set_sync(h, true);
	assert_int_equal(jbd_handle_stop(h), 0);
	int err = 0;
	struct buffer_head *bh = buf_get(e->c, bm, &err);
	assert_non_null(bh);
	assert_int_equal(committed_byte0(bh), -1); /* no undo access yet */
	/* T2 frees bit 0. */
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	assert_int_equal(jbd_get_undo_access(h, bh), 0);
	assert_int_equal(committed_byte0(bh), 0xFF);
	((unsigned char *)buf_data(bh))[0] = 0xFE;
	assert_int_equal(jbd_dirty_metadata(h, bh), 0);
	assert_int_equal(jbd_handle_stop(h), 0);
	/* Block 0 is free in the bitmap but not in the committed copy: an
	 * allocator must not reuse it yet. */
	assert_int_equal(committed_byte0(bh), 0xFF);
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	assert_int_equal(jbd_get_undo_access(h, bh), 0);
	assert_int_equal(committed_byte0(bh), 0xFF);
	assert_int_equal(jbd_handle_stop(h), 0);
	struct jbd_stats st;
	jbd_journal_stats(e->j, &st);
	assert_int_equal(st.committed_copies, 1);
	assert_int_equal(jbd_journal_force_commit(e->j), 0);
	assert_int_equal(committed_byte0(bh), -1); /* committed: dropped */

	/* T3 frees bit 1 and commits slowly (held in its data submit);
	 * meanwhile T4 takes undo access: it sees T2's bitmap as committed
	 * (T3 may still be lost), then T3's once T3 committed. */
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	assert_int_equal(jbd_get_undo_access(h, bh), 0);
	assert_int_equal(committed_byte0(bh), 0xFE);
	((unsigned char *)buf_data(bh))[0] = 0xFC;
	assert_int_equal(jbd_dirty_metadata(h, bh), 0);
	assert_int_equal(jbd_inode_file(h, x.ji), 0);
	assert_int_equal(jbd_handle_stop(h), 0);
	held_commit_start(&x);
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	assert_int_equal(jbd_get_undo_access(h, bh), 0);
	assert_int_equal(committed_byte0(bh), 0xFE);
	held_commit_end(&x);
	assert_int_equal(committed_byte0(bh), 0xFC);
	((unsigned char *)buf_data(bh))[0] = 0xF8;
	assert_int_equal(jbd_dirty_metadata(h, bh), 0);
	assert_int_equal(jbd_handle_stop(h), 0);
	assert_int_equal(committed_byte0(bh), 0xFC);
	assert_int_equal(jbd_journal_force_commit(e->j), 0);
	assert_int_equal(committed_byte0(bh), -1);
	buf_put(bh);
	/* What recovery sees is the last commit. */
	struct dev *s = snapshot(e);
	struct jbd_recovery_info info;
	recover_snapshot(e, s, &info);
	unsigned char blk[BS];
	read_dev_block(s, bm, blk);
	assert_int_equal(blk[0], 0xF8);
	dev_close(s);
	held_close(&x, 0);
}

static void write_dev_fill(struct dev *d, uint64_t b, int v)
{
	unsigned char buf[BS];
	memset(buf, v, BS);
	assert_int_equal(dev_rw_sync(d, DEV_OP_WRITE, b * (BS / 512), BS / 512, buf, 0), 0);
}

/* Free block x in the running transaction (forget, or revoke + forget as
 * ext3 does for metadata). */
static void free_block(struct env *e, uint64_t x, bool revoke)
{
	struct jbd_handle *h;
	assert_int_equal(jbd_handle_start(e->j, 1, &h), 0);
	int err = 0;
	struct buffer_head *bh = buf_get(e->c, x, &err);
	assert_non_null(bh);
	if (revoke)
		assert_int_equal(jbd_revoke(h, x, bh), 0);
	else
		assert_int_equal(jbd_forget(h, bh), 0);
	assert_int_equal(jbd_handle_stop(h), 0);
}

/* After the freeing commit the buffer is clean and no journal list has it. */
static void assert_released(struct env *e, uint64_t x)
{
	int err = 0;
	struct buffer_head *bh = buf_get(e->c, x, &err);
	assert_non_null(bh);
	assert_null(buf_private(bh));
	assert_false(buf_jbd(bh));
	assert_false(buf_dirty(bh));
	buf_put(bh);
}

/* A block dirtied in tx N-1 (committed, on its checkpoint list) is freed in
 * tx N and reused as plain data written straight to the device; a
 * checkpoint before N commits must not write N-1's copy over it. */
static void test_forget_no_stale_write(void **state)
{
	(void)state;
	for (int revoke = 0; revoke < 2; revoke++) {
		struct env e;
		env_open(&e, NULL, "commit=100");
		const uint64_t x = DATA0 + 7, y = DATA0 + 8;
		uint64_t b[] = { x, y };
		write_tx(&e, b, 2, 0x11, true);
		free_block(&e, x, revoke);
		write_dev_fill(e.d, x, 0x99);
		assert_int_equal(jbd_journal_checkpoint(e.j), 0);
		assert_int_equal(first_byte(e.d, x), 0x99);
		assert_int_equal(first_byte(e.d, y), 0x11); /* the rest went home */
		assert_released(&e, x);
		struct jbd_stats st;
		jbd_journal_stats(e.j, &st);
		assert_int_equal(st.tail, st.head); /* nothing left in the log */
		assert_int_equal(jbd_journal_flush(e.j), 0);
		assert_int_equal(first_byte(e.d, x), 0x99);
		assert_int_equal(env_close(&e), 0);
	}
}

/* The same with N-1 still committing when N frees the block (the kernel's
 * BH_Freed case): N-1 logs it, files it for checkpoint, and the checkpoint
 * still never writes it home. */
static void test_forget_while_committing(void **state)
{
	(void)state;
	struct held x;
	held_open(&x, "commit=100");
	struct env *e = &x.e;
	const uint64_t y = DATA0 + 9;
	write_filed(e, y, 0x22, x.ji);
	held_commit_start(&x);
	free_block(e, y, true);
	held_commit_end(&x);
	/* N-1 committed with y: a crash now replays 0x22 (N not committed). */
	struct dev *s = snapshot(e);
	struct jbd_recovery_info info;
	recover_snapshot(e, s, &info);
	assert_int_equal(first_byte(s, y), 0x22);
	dev_close(s);
	write_dev_fill(e->d, y, 0x99);
	assert_int_equal(jbd_journal_checkpoint(e->j), 0);
	assert_int_equal(first_byte(e->d, y), 0x99);
	assert_released(e, y);
	/* And after N committed, recovery does not bring 0x22 back. */
	s = snapshot(e);
	recover_snapshot(e, s, &info);
	assert_int_equal(first_byte(s, y), 0x99);
	dev_close(s);
	held_close(&x, 0);
}

/* ------------------------------------------------------ lock_updates */

struct updater {
	struct jbd_journal *j;
	pthread_mutex_t m;
	int started, stop_called, rc;
	unsigned hold_ms;
};

static void updater_set(struct updater *u, int *field, int v)
{
	pthread_mutex_lock(&u->m);
	*field = v;
	pthread_mutex_unlock(&u->m);
}

static int updater_get(struct updater *u, const int *field)
{
	pthread_mutex_lock(&u->m);
	int v = *field;
	pthread_mutex_unlock(&u->m);
	return v;
}

/* Start a handle, keep it hold_ms, stop it. */
static void *updater_main(void *arg)
{
	struct updater *u = arg;
	struct jbd_handle *h;
	int rc = jbd_handle_start(u->j, 1, &h);
	updater_set(u, &u->started, 1);
	if (rc == 0) {
		clock_sleep_ns((uint64_t)u->hold_ms * NS_PER_MS);
		updater_set(u, &u->stop_called, 1);
		rc = jbd_handle_stop(h);
	}
	updater_set(u, &u->rc, rc);
	return NULL;
}

static void test_lock_updates(void **state)
{
	(void)state;
	struct env e;
	env_open(&e, NULL, "commit=100");
	struct updater a = { .j = e.j, .hold_ms = 50 }, b = { .j = e.j };
	pthread_mutex_init(&a.m, NULL);
	pthread_mutex_init(&b.m, NULL);
	pthread_t ta, tb;
	pthread_create(&ta, NULL, updater_main, &a);
	while (!updater_get(&a, &a.started))
		clock_sleep_ns(NS_PER_MS);
	/* Waits for A's open handle to stop. */
	jbd_journal_lock_updates(e.j);
	assert_int_equal(updater_get(&a, &a.stop_called), 1);
	jbd_journal_lock_updates(e.j); /* nested */
	/* Commits go on while updates are locked. */
	assert_int_equal(jbd_journal_force_commit(e.j), 0);
	pthread_create(&tb, NULL, updater_main, &b);
	clock_sleep_ns(50 * NS_PER_MS); /* time for a wrong start to return */
	assert_int_equal(updater_get(&b, &b.started), 0);
	jbd_journal_unlock_updates(e.j);
	clock_sleep_ns(50 * NS_PER_MS);
	assert_int_equal(updater_get(&b, &b.started), 0); /* still locked once */
	jbd_journal_unlock_updates(e.j);
	pthread_join(tb, NULL);
	pthread_join(ta, NULL);
	assert_int_equal(b.started, 1);
	assert_int_equal(a.rc, 0);
	assert_int_equal(b.rc, 0);
	struct jbd_stats st;
	jbd_journal_stats(e.j, &st);
	assert_int_equal(st.lock_updates, 1);
	pthread_mutex_destroy(&a.m);
	pthread_mutex_destroy(&b.m);
	assert_int_equal(env_close(&e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_undo_access),
		cmocka_unit_test(test_forget_no_stale_write),
		cmocka_unit_test(test_forget_while_committing),
		cmocka_unit_test(test_lock_updates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
