/* A program whose hot path goes through a PLT stub, for plt_stubs.sh.
 *
 *   plt_hot SECONDS
 *
 * Calls fr_plt_tiny, in the shared library libplt_tiny.so, in a loop for
 * SECONDS: each call passes through the stub fr_plt_tiny@plt of this
 * program's PLT, so a fair share of the samples land on it. Prints its pid
 * first. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int fr_plt_tiny(int x);

static volatile int sink;

int main(int argc, char **argv)
{
	struct timespec start, now;
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int x = 0;

	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 1000000; i++)
			x = fr_plt_tiny(x);
		sink = x;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
		 seconds);
	return 0;
}
