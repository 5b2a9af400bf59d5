/* A CPU-bound program with known functions, for profile checks.
 *
 *   burn SECONDS [THREADS [DELAY]]
 *
 * After sleeping DELAY seconds (so a profiler can attach first), each
 * thread spends about three quarters of its time in fr_burn_heavy and
 * one quarter in fr_burn_light (the same loop, run 3:1), until SECONDS
 * have passed. At exit it prints "pid=PID cpu_seconds=S" (its own CPU time)
 * on stdout. Built without inlining and with frame pointers so stacks
 * unwind through main. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

void fr_burn_heavy(void);
void fr_burn_light(void);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Each function has its own loop so that each is a leaf (flat time). */
#define SPIN(n)                                                                  \
	do {                                                                     \
		uint64_t x = (n);                                                \
		for (uint64_t i = 0; i < (n); i++)                               \
			x = x * 6364136223846793005ull + 1442695040888963407ull; \
		sink += x;                                                       \
	} while (0)

__attribute__((noinline)) void fr_burn_heavy(void)
{
	SPIN(3000000);
}

__attribute__((noinline)) void fr_burn_light(void)
{
	SPIN(1000000);
}

static double seconds;

static void *worker(void *arg)
{
	double end = now() + seconds;
	(void)arg;
	while (now() < end) {
		fr_burn_heavy();
		fr_burn_light();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t tid[64];

	if (argc < 2) {
		fprintf(stderr, "usage: burn SECONDS [THREADS]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	if (argc > 3) {
		double delay = atof(argv[3]);
		struct timespec ts = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};
		nanosleep(&ts, NULL);
	}
	if (threads < 1 || threads > 64)
		threads = 1;
	for (int i = 1; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, NULL);
	worker(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(tid[i], NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("pid=%d cpu_seconds=%.3f\n", (int)getpid(),
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6);
	return 0;
}
