/* Shared by the symbol tables of ELF files and of the kernel: searching
 * sorted addresses, ranking names. */
#ifndef FR_CORE_SEARCH_H
#define FR_CORE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* Number of entries of the sorted array a[0..n) that are <= x, i.e. the
 * index of the first one above it. Branch-free: a profile's addresses are
 * scattered and a mispredicted branch per level costs more than the
 * conditional move. */
static inline size_t fr_count_le(const uint64_t *a, size_t n, uint64_t x)
{
	const uint64_t *base = a;

	if (!n)
		return 0;
	while (n > 1) {
		size_t half = n / 2;

		base = base[half] <= x ? base + half : base;
		n -= half;
	}
	return (size_t)(base - a) + (*base <= x);
}

/* Leading underscores of a symbol name: of two names for one address,
 * the one with fewer is the one people call. */
static inline unsigned fr_leading_underscores(const char *s)
{
	unsigned n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

#endif
