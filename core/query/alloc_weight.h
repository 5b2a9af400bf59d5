/* What one sampled allocation stands for. The library samples by bytes
 * (lib/flightrec/alloc_abi.h): a byte is sampled with probability 1/mean,
 * so a block of `size` bytes is sampled with p = 1 - exp(-size / mean),
 * and an unbiased estimate of what the sampled blocks stand for weighs
 * each by 1/p blocks and size/p bytes (Go's scaleHeapSample). A mean of 0
 * (every block recorded) or a size of 0 weighs one block of `size` bytes.
 * Shared by the profiles (core/query/profile_mem.c) and the timelines.
 */
#ifndef FR_CORE_ALLOC_WEIGHT_H
#define FR_CORE_ALLOC_WEIGHT_H

#include <math.h>
#include <stdint.h>

static inline void fr_alloc_scale(uint64_t size, uint32_t mean, double *objects, double *bytes)
{
	double p;

	if (!mean || !size) {
		*objects = 1;
		*bytes = (double)size;
		return;
	}
	/* -expm1(-x) is 1 - exp(-x) without the cancellation of a small x
	 * (64 bytes at a 512 KiB mean). */
	p = -expm1(-(double)size / (double)mean);
	*objects = 1 / p;
	*bytes = (double)size / p;
}

/* An estimate rounded to an integer, within +-2^62: a size the recorded
 * process made up (up to 2^64 - 1, summed over many records) cannot
 * overflow what pprof and the timelines add up. */
#define FR_ALLOC_VALUE_MAX 4611686018427387904.0 /* 2^62 */
static inline int64_t fr_alloc_round(double v)
{
	if (!(v > -FR_ALLOC_VALUE_MAX))
		return v < 0 ? -(int64_t)FR_ALLOC_VALUE_MAX : 0;
	if (v > FR_ALLOC_VALUE_MAX)
		return (int64_t)FR_ALLOC_VALUE_MAX;
	return (int64_t)llround(v);
}

#endif
