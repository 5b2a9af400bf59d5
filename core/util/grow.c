/* See grow.h. */
#include "core/util/grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int fr_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first, size_t max)
{
	size_t c = *cap ? *cap : (first ? first : 1);
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (c > max || (elem && c > SIZE_MAX / elem))
		return -ENOMEM;
	n = realloc(*p, c * elem);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}
