/* Growing an array (core/util/grow.h): doubling from the first capacity,
 * nothing done when the need fits, and -ENOMEM with the array untouched
 * when the capacity type or the byte size would overflow. */
#include "core/util/grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit/check.h"

static void test_doubling(void)
{
	uint32_t *v = NULL, cap = 0;

	CHECK(FR_GROW(v, &cap, 1, 8) == 0 && v && cap == 8, "first: cap %u", cap);
	for (uint32_t i = 0; i < 8; i++)
		v[i] = i;
	CHECK(FR_GROW(v, &cap, 8, 8) == 0 && cap == 8, "a need that fits grew to %u", cap);
	CHECK(FR_GROW(v, &cap, 9, 8) == 0 && cap == 16, "9 of 8: cap %u", cap);
	CHECK(FR_GROW(v, &cap, 100, 8) == 0 && cap == 128, "100 of 16: cap %u", cap);
	for (uint32_t i = 0; i < 8; i++)
		CHECK(v[i] == i, "element %u lost in the move", i);
	free(v);
}

/* A uint8_t capacity stops at 255 elements: 256 would wrap it to 0. */
static void test_capacity_type(void)
{
	char *v = NULL;
	uint8_t cap = 0;

	CHECK(FR_GROW(v, &cap, 100, 16) == 0 && cap == 128, "cap %u", cap);
	char *before = v;
	CHECK(FR_GROW(v, &cap, 129, 16) == -ENOMEM, "uint8_t capacity past 255");
	CHECK(v == before && cap == 128, "a failed grow changed the array");
	free(v);
}

/* Byte sizes past SIZE_MAX fail before realloc sees them. */
static void test_overflow(void)
{
	void *p = NULL;
	size_t cap = 0;

	CHECK(fr_grow(&p, &cap, SIZE_MAX / 8 + 2, 16, 1, SIZE_MAX) == -ENOMEM && !p && cap == 0,
	      "elements x size past SIZE_MAX");
	CHECK(fr_grow(&p, &cap, SIZE_MAX, 1, 1, SIZE_MAX) == -ENOMEM && !p && cap == 0,
	      "doubling past SIZE_MAX");
	CHECK(fr_grow(&p, &cap, 5, 4, 0, SIZE_MAX) == 0 && p && cap == 8, "first 0: cap %zu", cap);
	CHECK(fr_grow(&p, &cap, 9, 4, 1, 8) == -ENOMEM && cap == 8, "past max");
	free(p);
}

int main(void)
{
	test_doubling();
	test_capacity_type();
	test_overflow();
	return failures != 0;
}
