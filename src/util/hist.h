/* Latency histogram (log-linear buckets, HdrHistogram-like).
 *
 * Values are nanoseconds. Buckets are exact below 1 us resolution... more
 * precisely: each power of two is split into HIST_SUB linear sub-buckets, so
 * the relative error of a reported percentile is at most 1/HIST_SUB (~3%).
 * Not thread-safe: the owner locks (blk keeps them under the queue lock).
 */
#ifndef NOSTALL_UTIL_HIST_H
#define NOSTALL_UTIL_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t sum;
	uint64_t min, max;
	uint64_t b[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t v);
/* Merge src into dst. */
void hist_merge(struct hist *dst, const struct hist *src);
/* Value at quantile q in [0,1] (upper bound of its bucket, clamped to max);
 * 0 when empty. */
uint64_t hist_quantile(const struct hist *h, double q);
double hist_mean(const struct hist *h);

#endif
