#include "hist.h"

#include <string.h>

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof *h);
	h->min = UINT64_MAX;
}

/* Bucket index: values below HIST_SUB map 1:1; above, the top HIST_SUB_BITS+1
 * significant bits select (exponent, sub-bucket). */
static unsigned bucket_of(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);
	unsigned shift = msb - HIST_SUB_BITS;
	unsigned sub = (unsigned)(v >> shift) & (HIST_SUB - 1);
	return (shift + 1) * HIST_SUB + sub;
}

/* Largest value that falls into bucket i. */
static uint64_t bucket_upper(unsigned i)
{
	if (i < HIST_SUB)
		return i;
	unsigned shift = i / HIST_SUB - 1;
	uint64_t sub = i % HIST_SUB;
	uint64_t lo = (HIST_SUB + sub) << shift;
	return lo + ((1ull << shift) - 1);
}

void hist_add(struct hist *h, uint64_t v)
{
	h->b[bucket_of(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	/* rank = ceil(q * count), at least 1 */
	double r = q * (double)h->count;
	uint64_t rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t u = bucket_upper(i);
			if (u > h->max)
				u = h->max;
			if (u < h->min)
				u = h->min;
			return u;
		}
	}
	return h->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
