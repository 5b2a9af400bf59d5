/* A program built the way Debian builds its packages (-O2, no frame
 * pointers), for unwind_nofp.sh: its CPU goes to a chain
 *
 *   main -> outer_a -> sort_phase -> qsort (libc) -> ... -> cmp
 *
 * that only CFI unwinding can walk, since neither this program nor libc
 * keeps frame pointers.
 *
 *   nofp_sort SECONDS
 *
 * Prints its pid first. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline, noclone)) static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	/* Some work per comparison, so that cmp is a hot leaf too. */
	for (int i = 0; i < 8; i++) {
		x = x * 2654435761u + 1;
		y = y * 2654435761u + 1;
	}
	return x < y ? -1 : x > y;
}

__attribute__((noinline, noclone)) static void sort_phase(unsigned *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (unsigned)random();
	qsort(v, n, sizeof(*v), cmp);
	sink += v[n / 2];
}

__attribute__((noinline, noclone)) static void outer_a(unsigned *v, size_t n)
{
	sort_phase(v, n);
	sink++;
}

int main(int argc, char **argv)
{
	struct timespec start, now;
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	size_t n = 20000;
	unsigned *v = malloc(n * sizeof(*v));

	if (!v)
		return 1;
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		outer_a(v, n);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
		 seconds);
	free(v);
	return 0;
}
