/* A label storm, for labels_storm.sh and tests/bench/priority_share.sh:
 *
 *   labels_storm THREADS VALUES [SPREAD]
 *
 * THREADS threads, always runnable, each cycling its label storm=<value>
 * through VALUES values, one change every ~20 us of CPU (storm_burn):
 * with SPREAD (default 1) each thread's values are its own (thread * VALUES
 * + i: THREADS * VALUES distinct sets), with 0 all threads share the same
 * VALUES. A thread "warmup" labels itself warmup=1 and burns first, so
 * that a test can wait for the recorder to have found the process (a
 * look-up on a machine already loaded may time out); the storm starts on
 * SIGUSR1. Prints "ready" once every thread exists, "storm" when they
 * start, and runs until killed.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "flightrec/labels.h"

void storm_burn(void);

static volatile uint64_t sink;
static int values, spread;
static pthread_barrier_t started;
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

__attribute__((noinline)) void storm_burn(void)
{
	for (int i = 0; i < 20000; i++)
		sink += (uint64_t)i * 2654435761u;
}

static void *storm(void *arg)
{
	long index = (long)(intptr_t)arg;
	char v[32];

	pthread_barrier_wait(&started);
	while (!go)
		usleep(10000);
	for (long i = 0;; i = (i + 1) % values) {
		snprintf(v, sizeof(v), "%ld", spread ? index * values + i : i);
		fr_labels_set("storm", v);
		storm_burn();
	}
	return NULL;
}

static void *warmup(void *arg)
{
	(void)arg;
	fr_labels_set("warmup", "1");
	pthread_barrier_wait(&started);
	for (;;)
		storm_burn();
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 0;
	pthread_attr_t a;
	pthread_t t;

	values = argc > 2 ? atoi(argv[2]) : 0;
	spread = argc > 3 ? atoi(argv[3]) : 1;
	if (threads < 1 || threads > 10000 || values < 1) {
		fprintf(stderr, "usage: labels_storm THREADS VALUES [SPREAD]\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	pthread_barrier_init(&started, NULL, (unsigned)threads + 2);
	if (pthread_create(&t, &a, warmup, NULL) != 0)
		return 1;
	for (long i = 0; i < threads; i++)
		if (pthread_create(&t, &a, storm, (void *)(intptr_t)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	pthread_barrier_wait(&started);
	printf("ready\n");
	fflush(stdout);
	while (!go)
		pause();
	printf("storm\n");
	fflush(stdout);
	for (;;)
		pause();
}
