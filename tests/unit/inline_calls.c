/* A program with a function inlined into another and one that is not, built
 * with -O2 -g: the subject of the source-line tests (test_symbols_lines.c,
 * tests/integration/attach_lines.sh).
 *
 *   inline_calls --lines   prints "LEAF_FIRST LEAF_LAST OUTER_FIRST
 *                          OUTER_LAST ADDR": the source lines of leaf_add
 *                          and outer_work, and outer_work's link-time
 *                          address
 *   inline_calls SECONDS   spins in outer_work (and so in leaf_add) that
 *                          long
 */
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const int leaf_first = __LINE__;
static inline __attribute__((always_inline)) unsigned leaf_add(volatile unsigned *v, unsigned x)
{
	*v = *v * 2654435761u + x;
	return *v >> 3;
}
static const int leaf_last = __LINE__;

unsigned outer_work(volatile unsigned *v, unsigned n);

static const int outer_first = __LINE__;
__attribute__((noinline)) unsigned outer_work(volatile unsigned *v, unsigned n)
{
	unsigned s = 0;

	for (unsigned i = 0; i < n; i++)
		s += leaf_add(v, i);
	return s;
}
static const int outer_last = __LINE__;

/* The load bias of the executable: its first object. */
static int first_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uintptr_t *)arg = info->dlpi_addr;
	return 1;
}

int main(int argc, char **argv)
{
	volatile unsigned v = 1;
	struct timespec t0, t;
	unsigned sink = 0;
	uintptr_t bias = 0;

	if (argc == 2 && strcmp(argv[1], "--lines") == 0) {
		dl_iterate_phdr(first_bias, &bias);
		printf("%d %d %d %d 0x%lx\n", leaf_first, leaf_last, outer_first, outer_last,
		       (unsigned long)((uintptr_t)&outer_work - bias));
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += outer_work(&v, 100000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (argc == 2 && t.tv_sec - t0.tv_sec < atoi(argv[1]));
	return sink == 42;
}
