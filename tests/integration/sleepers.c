/* Many threads each sleeping 1 ms in a loop: a storm of off-CPU waits
 * just over the eBPF mechanism's min_wait, each a long wait with its
 * stacks, for offcpu_drops.sh. Each thread labels itself role=sleeper
 * (libflightrec), so each wait comes with a labels record too.
 *
 *   sleepers THREADS SECONDS
 *
 * main labels itself role=main, prints "ready" and sleeps 10 ms at a time
 * until SIGUSR1 (so the recorder can find the process's labels first);
 * then the threads sleep for SECONDS. Prints "pid=PID threads=N waits=W"
 * at the end: the threads it started and the sleeps they made.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flightrec/labels.h"
#include <unistd.h>

static struct timespec deadline;
static unsigned long long waits_total;

static int past(const struct timespec *now)
{
	return now->tv_sec > deadline.tv_sec ||
	       (now->tv_sec == deadline.tv_sec && now->tv_nsec >= deadline.tv_nsec);
}

static void *sleeper(void *arg)
{
	struct timespec ms = {0, 1000000}, now;
	unsigned long long n = 0;

	(void)arg;
	fr_labels_set("role", "sleeper");
	do {
		nanosleep(&ms, NULL);
		n++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!past(&now));
	__atomic_add_fetch(&waits_total, n, __ATOMIC_RELAXED);
	return NULL;
}

/* Labelled, then off the CPU 10 ms at a time until SIGUSR1. */
static void wait_go(void)
{
	struct timespec tick = {0, 10000000};
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	fr_labels_set("role", "main");
	printf("ready\n");
	fflush(stdout);
	while (sigtimedwait(&set, NULL, &tick) < 0)
		;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t *t;
	int n, secs, started = 0;

	if (argc != 3 || (n = atoi(argv[1])) <= 0 || (secs = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: sleepers THREADS SECONDS\n");
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	wait_go();
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += secs;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (int i = 0; i < n; i++) {
		int ret = pthread_create(&t[i], &attr, sleeper, NULL);

		if (ret) {
			fprintf(stderr, "sleepers: thread %d: %s\n", i, strerror(ret));
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	printf("pid=%d threads=%d waits=%llu\n", (int)getpid(), started, waits_total);
	free(t);
	return started == n ? 0 : 1;
}
