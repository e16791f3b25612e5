/* Private to src/blk. */
#ifndef NOSTALL_BLK_INTERNAL_H
#define NOSTALL_BLK_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

struct blk_ioc {
	atomic_int refs;
	uint64_t id;
	atomic_int ioprio_class;
	atomic_int level;
	/* Request allocation batching (protected by the lock of the queue that
	 * made it a batcher; a context batches on one queue at a time). */
	const void *batch_queue;
	int nr_batch_requests;
	uint64_t last_waited_ns;
};

#endif
