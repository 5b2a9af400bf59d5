/* A workload whose waits are all long, for tests/bench/offcpu_long_waits.sh:
 * what the off-CPU recorder's user stack at each long wait costs the thread
 * that waited.
 *
 *   long_waits THREADS SECONDS [WAIT_US [DEPTH]]
 *
 * THREADS threads each go DEPTH calls deep (default 8; every level keeps
 * 256 bytes of locals, so the stack above the wait is about DEPTH x 300
 * bytes plus what libc and the thread's start put there) and then sleep
 * WAIT_US microseconds (default 1500, over the recorder's 1 ms min_wait)
 * in nanosleep, again and again, for SECONDS of wall time. Almost no work
 * between two waits: the CPU time the threads use is the system calls,
 * the wake-ups, and whatever a recorder makes the thread do on its way
 * back to user space (the eBPF mechanism's task work copies the user stack
 * there, in the thread's own system time).
 *
 * Prints "WAITS LONG WALL_S CPU_S UTIME_S STIME_S": the waits made, those
 * that lasted at least 1 ms by the thread's own clock, the wall time, and
 * the process's CPU time from getrusage (all its threads; the total is the
 * scheduler's exact runtime, the user/system split is the kernel's
 * tick-based apportioning of it, coarse).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double end_at;
static long wait_us = 1500;
static int depth = 8;

struct count {
	uint64_t waits, long_waits;
	char pad[48]; /* one cache line a thread */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void wait_loop(struct count *c)
{
	struct timespec ts = {wait_us / 1000000, (wait_us % 1000000) * 1000};

	for (;;) {
		double a = now(), b;

		if (a >= end_at)
			break;
		nanosleep(&ts, NULL);
		b = now();
		c->waits++;
		c->long_waits += b - a >= 0.001;
	}
}

/* DEPTH frames of stack with something in them above the wait. */
__attribute__((noinline)) static void descend(struct count *c, int level)
{
	volatile char locals[256];

	locals[0] = (char)level;
	locals[255] = (char)level;
	if (level <= 0)
		wait_loop(c);
	else
		descend(c, level - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	(void)locals[0];
}

static void *thread_main(void *arg)
{
	descend(arg, depth);
	return NULL;
}

int main(int argc, char **argv)
{
	struct count *counts;
	pthread_t *t;
	struct rusage ru;
	uint64_t waits = 0, longs = 0;
	double a, b, ut, st;
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: long_waits THREADS SECONDS [WAIT_US [DEPTH]]\n");
		return 2;
	}
	n = atoi(argv[1]);
	if (argc > 3)
		wait_us = atol(argv[3]);
	if (argc > 4)
		depth = atoi(argv[4]);
	if (n < 1 || n > 4096 || wait_us < 1 || depth < 0 || depth > 10000)
		return 2;
	counts = calloc((size_t)n, sizeof(*counts));
	t = calloc((size_t)n, sizeof(*t));
	if (!counts || !t)
		return 1;
	a = now();
	end_at = a + atof(argv[2]);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, thread_main, &counts[i]))
			return 1;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		waits += counts[i].waits;
		longs += counts[i].long_waits;
	}
	b = now();
	getrusage(RUSAGE_SELF, &ru);
	ut = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	st = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("%llu %llu %.6f %.6f %.6f %.6f\n", (unsigned long long)waits,
	       (unsigned long long)longs, b - a, ut + st, ut, st);
	return 0;
}
