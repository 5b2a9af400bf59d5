/* A CPU-bound program whose binary the symbol cache tests delete or
 * replace while it runs (gone_binary.sh, debug_dirs.sh).
 *
 *   gone_hot SECONDS
 *
 * Spins in one function until SECONDS have passed, then prints "done" and
 * exits. Built twice: gone_hot_old spins in gone_old_hot, gone_hot_new
 * (-DGONE_NEW) in gone_new_hot, at the same place in an otherwise equal
 * program, so the two builds have different build ids, and a frame named
 * from the wrong one says so. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef GONE_NEW
#define HOT gone_new_hot
#else
#define HOT gone_old_hot
#endif

static volatile uint64_t sink;

void HOT(void);

__attribute__((noinline)) void HOT(void)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 3);

	while (now() < end)
		HOT();
	printf("done\n");
	return 0;
}
