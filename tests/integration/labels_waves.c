/* Many threads over a process's life, each with labels of its own, for
 * labels_waves.sh:
 *
 *   labels_waves WAVES THREADS BURN_US
 *
 * A thread "warmup" labels itself warmup=1 and burns CPU until SIGUSR1,
 * so that the test can wait for the recorder to have found the process.
 * Then WAVES waves of THREADS threads each, created by main (which has no
 * labels): a thread labels itself worker=<its index> (0 .. WAVES*THREADS-1),
 * waits until its whole wave is alive and labelled (a barrier: THREADS
 * alive at once), burns BURN_US of CPU in waves_burn (as many threads at
 * a time as there are CPUs, the others waiting for their turn), sleeps
 * 2 ms, burns again and exits; the next wave starts once the last thread
 * of this one is gone.
 *
 * Prints "TID ROLE" for main and the warm-up thread, then "ready"; after
 * SIGUSR1, "wave W" as each wave is all alive; at the end "TID INDEX" for
 * every worker and "done".
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flightrec/labels.h"

void waves_burn(int64_t ns);

static volatile uint64_t sink;
static volatile int started;
static pthread_barrier_t wave_alive;
/* As many burning at once as there are CPUs: 2,000 runnable threads would
 * leave the recorder's threads no CPU for seconds. */
static sem_t cpus;
static int *tids;
static int64_t burn_ns;

static int64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void waves_burn(int64_t ns)
{
	int64_t end = cpu_ns() + ns;

	while (cpu_ns() < end)
		for (int i = 0; i < 200; i++)
			sink += (uint64_t)i;
}

static void *warmup(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "warmup");
	fr_labels_set("warmup", "1");
	printf("%d warmup\n", gettid());
	fflush(stdout);
	while (!started)
		waves_burn(1000000);
	return NULL;
}

static void *worker(void *arg)
{
	const struct timespec nap = {0, 2000000};
	int index = (int)(intptr_t)arg;
	char v[16];

	tids[index] = gettid();
	snprintf(v, sizeof(v), "%d", index);
	if (fr_labels_set("worker", v) != 0)
		abort();
	pthread_barrier_wait(&wave_alive);
	sem_wait(&cpus);
	waves_burn(burn_ns);
	sem_post(&cpus);
	nanosleep(&nap, NULL);
	sem_wait(&cpus);
	waves_burn(burn_ns);
	sem_post(&cpus);
	return NULL;
}

int main(int argc, char **argv)
{
	int waves, n, sig;
	pthread_t w, *th;
	pthread_attr_t attr;
	sigset_t mask;

	if (argc != 4 || (waves = atoi(argv[1])) < 1 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: labels_waves WAVES THREADS BURN_US\n");
		return 2;
	}
	burn_ns = atoll(argv[3]) * 1000;
	tids = calloc((size_t)waves * (size_t)n, sizeof(*tids));
	th = calloc((size_t)n, sizeof(*th));
	if (!tids || !th)
		return 1;
	sem_init(&cpus, 0, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	printf("%d main\n", getpid());
	pthread_create(&w, NULL, warmup, NULL);
	printf("ready\n");
	fflush(stdout);
	sigwait(&mask, &sig);
	started = 1;
	pthread_join(w, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (int wave = 0; wave < waves; wave++) {
		pthread_barrier_init(&wave_alive, NULL, (unsigned)n + 1);
		for (int i = 0; i < n; i++) {
			int err = pthread_create(&th[i], &attr, worker,
						 (void *)(intptr_t)(wave * n + i));

			if (err) {
				fprintf(stderr, "labels_waves: thread %d of wave %d: %s\n", i, wave,
					strerror(err));
				return 1;
			}
		}
		pthread_barrier_wait(&wave_alive);
		printf("wave %d\n", wave);
		fflush(stdout);
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&wave_alive);
	}
	for (int i = 0; i < waves * n; i++)
		printf("%d %d\n", tids[i], i);
	printf("done\n");
	return 0;
}
