/* Growing an array by doubling: the realloc block every table in the tree
 * wrote out, with the overflow checks written once. */
#ifndef FR_CORE_UTIL_GROW_H
#define FR_CORE_UTIL_GROW_H

#include <stddef.h>

/* Makes *p, an array with room for *cap elements of `elem` bytes, hold at
 * least `need`: the capacity doubles (from `first` when it is 0) until
 * `need` fits, at most `max` elements. Returns 0 with *p and *cap updated
 * (new elements uninitialised; nothing changes when `need` already fits),
 * or -ENOMEM when realloc fails or the size would pass `max` elements or
 * SIZE_MAX bytes, *p and *cap then unchanged (the caller still owns *p). */
int fr_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first, size_t max);

/* fr_grow for a typed array `arr` and a capacity of any unsigned integer
 * type at `capp`, bounded by that type's largest value. Evaluates to 0 or
 * -ENOMEM. */
#define FR_GROW(arr, capp, need, first)                                                        \
	__extension__({                                                                        \
		_Static_assert((__typeof__(*(capp)))-1 > 0, "FR_GROW: unsigned capacity");     \
		size_t fr_grow_cap_ = *(capp);                                                 \
		void *fr_grow_p_ = (arr);                                                      \
		int fr_grow_ret_ = fr_grow(&fr_grow_p_, &fr_grow_cap_, (need), sizeof(*(arr)), \
					   (first), (size_t)(__typeof__(*(capp)))-1);          \
		if (fr_grow_ret_ == 0) {                                                       \
			(arr) = fr_grow_p_;                                                    \
			*(capp) = (__typeof__(*(capp)))fr_grow_cap_;                           \
		}                                                                              \
		fr_grow_ret_;                                                                  \
	})

#endif
