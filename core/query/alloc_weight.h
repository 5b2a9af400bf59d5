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

#endif
