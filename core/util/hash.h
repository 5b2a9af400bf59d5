/* The tree's hashes, one copy each: FNV-1a (64- and 32-bit) for byte
 * strings and keys, the splitmix64 finalizer for 64-bit integers, and a
 * 32-bit mixer for pid or tid keys. Header only; none is cryptographic. */
#ifndef FR_CORE_HASH_H
#define FR_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FR_FNV_OFFSET 0xcbf29ce484222325ULL
#define FR_FNV_PRIME 0x100000001b3ULL
#define FR_FNV32_OFFSET 2166136261u
#define FR_FNV32_PRIME 16777619u

/* One FNV-1a step: `v` (a byte, or a separator wider than one) into `h`. */
static inline uint64_t fr_fnv1a_step(uint64_t h, uint64_t v)
{
	return (h ^ v) * FR_FNV_PRIME;
}

/* FNV-1a of `len` bytes, continuing from `h` (FR_FNV_OFFSET to start). */
static inline uint64_t fr_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = fr_fnv1a_step(h, p[i]);
	return h;
}

/* 32-bit FNV-1a of `len` bytes, continuing from `h` (FR_FNV32_OFFSET to
 * start). */
static inline uint32_t fr_fnv1a_32(uint32_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FR_FNV32_PRIME;
	return h;
}

/* The splitmix64 finalizer: every input bit affects every output bit. */
static inline uint64_t fr_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* A 32-bit integer hash (the "lowbias32" mixer) for the hash tables keyed
 * by pid or tid: every input bit affects every output bit, so table sizes
 * can be powers of two or not. */
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
