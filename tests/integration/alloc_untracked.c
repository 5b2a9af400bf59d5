/* A program that keeps more sampled blocks live than libflightrec can
 * track, then frees them all, for alloc_untracked.sh (run with
 * LD_PRELOAD=libflightrec.so and a mean that samples every block).
 *
 *   alloc_untracked BLOCKS GOFILE
 *
 * prints "ready", spins until GOFILE exists (the recorder finds a process
 * by its samples, and asks its ring for the session's mean at a drain
 * after), spends the countdown drawn with the mean of before, then
 * allocates BLOCKS blocks of 64 bytes at untracked_leak
 * (500 every 20 ms, into a ring of 64 MiB: FLIGHTREC_ALLOC_RING), keeps them a second, frees every one of them, prints
 * "freed" and sleeps until killed. The library tracks at most 49,152 live
 * sampled blocks (lib/alloc_addrs.c) and the recorder follows at most
 * 32,768 of a process (recorder/sampling/allocs.c): the frees of the
 * blocks past either are never matched, and the heap profile must say
 * that it holds blocks that are gone. Built like alloc_sites (-O2, no frame pointers). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *untracked_leak(size_t n);

__attribute__((noinline)) void *untracked_leak(size_t n)
{
	void *p = malloc(n);

	/* Keeps the call from being a tail call. */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[1]) : 0;
	void **blocks = n > 0 ? calloc((size_t)n, sizeof(*blocks)) : NULL;

	if (!blocks) {
		fprintf(stderr, "usage: alloc_untracked BLOCKS GOFILE\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	while (access(argv[2], F_OK) != 0) {
		clock_t t = clock();

		while (clock() - t < CLOCKS_PER_SEC / 200)
			;
		usleep(5000);
	}
	/* The countdown to this thread's next sample was drawn at its first
	 * allocation, with the mean of then (512 KiB): 8 MiB spends it. */
	free(untracked_leak(8 << 20));
	for (long i = 0; i < n; i++) {
		blocks[i] = untracked_leak(64);
		if (i % 500 == 499)
			usleep(20000);
	}
	sleep(1);
	for (long i = 0; i < n; i++)
		free(blocks[i]);
	printf("freed\n");
	fflush(stdout);
	for (;;)
		pause();
}
