/* A 32-bit integer hash (the "lowbias32" mixer) for the hash tables keyed
 * by pid or tid: every input bit affects every output bit, so table sizes
 * can be powers of two or not. */
#ifndef FR_CORE_HASH_H
#define FR_CORE_HASH_H

#include <stdint.h>

static inline uint32_t fr_hash_u32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

#endif
