/* Three allocation sites, for the recorder's allocation and heap tests
 * (run with LD_PRELOAD=libflightrec.so):
 *
 *   site_small  64-byte blocks, allocated and freed;
 *   site_big    64 KiB blocks, allocated and freed; by bytes, small and
 *               big are 25% and 75% of what the two allocate;
 *   site_leak   4 KiB blocks (written, so they are resident), never
 *               freed: 48 MiB by the end.
 *
 * Runs for argv[1] seconds (default 10) at a steady pace, 100 steps a
 * second, each step allocating 256 KiB small and 768 KiB big (freed at
 * the step's end) and its share of the leak. Prints "ready" when it
 * starts, "done" when the work is over, then sleeps, its leak kept,
 * until killed (a heap profile "at the end" can be taken). Built -O2
 * without frame pointers: its stacks are unwound with CFI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEP_NS 10000000L
#define SMALL 64
#define BIG (64 << 10)
#define LEAK_BLOCK 4096
#define LEAK_BYTES (48L << 20)
#define SMALL_PER_STEP ((256 << 10) / SMALL)
#define BIG_PER_STEP ((768 << 10) / BIG)

static void *small_blocks[SMALL_PER_STEP];
static void *big_blocks[BIG_PER_STEP];
static void **leaked;

/* Each site writes its block, so that the compiler keeps the call. */
__attribute__((noinline)) static void *site_small(void)
{
	char *p = malloc(SMALL);

	if (p)
		p[0] = 1;
	return p;
}

__attribute__((noinline)) static void *site_big(void)
{
	char *p = malloc(BIG);

	if (p)
		p[0] = 1;
	return p;
}

__attribute__((noinline)) static void *site_leak(void)
{
	char *p = malloc(LEAK_BLOCK);

	if (p)
		memset(p, 0x5a, LEAK_BLOCK);
	return p;
}

static void step(void)
{
	for (int i = 0; i < SMALL_PER_STEP; i++)
		small_blocks[i] = site_small();
	for (int i = 0; i < BIG_PER_STEP; i++)
		big_blocks[i] = site_big();
	for (int i = 0; i < SMALL_PER_STEP; i++)
		free(small_blocks[i]);
	for (int i = 0; i < BIG_PER_STEP; i++)
		free(big_blocks[i]);
}

static void add_ns(struct timespec *t, long ns)
{
	t->tv_nsec += ns;
	while (t->tv_nsec >= 1000000000L) {
		t->tv_nsec -= 1000000000L;
		t->tv_sec++;
	}
}

int main(int argc, char **argv)
{
	long seconds = argc > 1 ? atol(argv[1]) : 10;
	long steps, leak_blocks = LEAK_BYTES / LEAK_BLOCK, leaked_n = 0;
	struct timespec next;

	if (seconds < 1)
		seconds = 1;
	steps = seconds * (1000000000L / STEP_NS);
	leaked = calloc((size_t)leak_blocks, sizeof(*leaked));
	if (!leaked)
		return 1;
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long s = 1; s <= steps; s++) {
		step();
		/* The leak grows in step with the time: s/steps of it. */
		while (leaked_n < leak_blocks * s / steps)
			leaked[leaked_n++] = site_leak();
		add_ns(&next, STEP_NS);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	printf("done\n");
	fflush(stdout);
	for (;;)
		pause();
}
