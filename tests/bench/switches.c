/* A context-switch-heavy workload for tests/bench/offcpu_cost.sh: what
 * recording every context switch costs the program that switches.
 *
 *   switches pingpong SECONDS
 *	two threads bounce one byte through a pair of pipes; each round trip
 *	is two blocking reads, so two waits and four context switches (more
 *	than 100,000 switches a second on one core);
 *   switches work SECONDS [ITERS]
 *	pingpong with real work between switches: each side computes ITERS
 *	steps of a dependent multiply-add chain (default 9000, about 8 us on
 *	a 2 vCPU VM) per message before passing it on, so one CPU switches
 *	about 100,000 times a second and spends about 80% of its time
 *	computing: the rate issue 12's cost goal is stated at, with the work
 *	a real program does between its waits;
 *   switches pool SECONDS [THREADS]
 *	a producer hands small tasks one at a time to a pool of THREADS
 *	(default 8) workers through a mutex and condition variable; each
 *	task is a few microseconds of arithmetic, so the workers spend their
 *	lives in short waits on the condition variable (futex).
 *
 * Runs for SECONDS of wall time and prints "OPS WALL_S CPU_S": the work
 * done (round trips or tasks), the wall time it took and the CPU time of
 * all its threads (getrusage). Work per second and work per CPU-second are
 * the two figures a recorder's cost slows down.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- pingpong ----------------------------------------------------------- */

static int ab[2], ba[2];
static long work_iters; /* steps computed per message (0: plain pingpong) */

/* A fixed amount of arithmetic (not a fixed time): a recorder that slows
 * the machine down makes it take longer, as it would a real program. */
__attribute__((noinline)) static uint64_t compute(uint64_t x, long iters)
{
	for (long i = 0; i < iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) static void *pong(void *arg)
{
	uint64_t x = 2;
	char c;

	(void)arg;
	while (read(ab[0], &c, 1) == 1) {
		x = compute(x, work_iters);
		if (write(ba[1], &c, 1) != 1)
			break;
	}
	sink += x;
	return NULL;
}

static uint64_t pingpong(double secs)
{
	pthread_t t;
	uint64_t n = 0, x = 1;
	double end = now() + secs;
	char c = 'x';

	if (pipe(ab) || pipe(ba) || pthread_create(&t, NULL, pong, NULL))
		exit(1);
	for (;;) {
		/* Checking the clock every 256 trips keeps it out of the cost. */
		if ((n & 255) == 0 && now() >= end)
			break;
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			exit(1);
		x = compute(x, work_iters);
		n++;
	}
	sink += x;
	close(ab[1]);
	pthread_join(t, NULL);
	return n;
}

/* ---- pool --------------------------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t have_task = PTHREAD_COND_INITIALIZER, have_room = PTHREAD_COND_INITIALIZER;
static uint64_t queued, done;

__attribute__((noinline)) static uint64_t task(uint64_t x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg;

	pthread_mutex_lock(&mu);
	for (;;) {
		while (!queued && !stop)
			pthread_cond_wait(&have_task, &mu);
		if (!queued)
			break;
		queued--;
		pthread_cond_signal(&have_room);
		pthread_mutex_unlock(&mu);
		x = task(x);
		pthread_mutex_lock(&mu);
		done++;
	}
	pthread_mutex_unlock(&mu);
	sink += x;
	return NULL;
}

static uint64_t pool(double secs, int nthreads)
{
	pthread_t t[64];
	double end = now() + secs;
	uint64_t n = 0;

	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)))
			exit(1);
	/* At most two tasks queued: the workers wait often, and briefly. */
	for (;;) {
		if ((n & 255) == 0 && now() >= end)
			break;
		pthread_mutex_lock(&mu);
		while (queued >= 2)
			pthread_cond_wait(&have_room, &mu);
		queued++;
		pthread_cond_signal(&have_task);
		pthread_mutex_unlock(&mu);
		n++;
	}
	pthread_mutex_lock(&mu);
	stop = 1;
	pthread_cond_broadcast(&have_task);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	return done;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	double secs, a, b;
	uint64_t ops;

	if (argc < 3) {
		fprintf(stderr, "usage: switches pingpong|work|pool SECONDS [ITERS|THREADS]\n");
		return 2;
	}
	secs = atof(argv[2]);
	a = now();
	if (!strcmp(argv[1], "pingpong")) {
		ops = pingpong(secs);
	} else if (!strcmp(argv[1], "work")) {
		work_iters = argc > 3 ? atol(argv[3]) : 9000;
		if (work_iters < 0)
			return 2;
		ops = pingpong(secs);
	} else if (!strcmp(argv[1], "pool")) {
		int n = argc > 3 ? atoi(argv[3]) : 8;

		if (n < 1 || n > 64)
			return 2;
		ops = pool(secs, n);
	} else {
		return 2;
	}
	b = now();
	getrusage(RUSAGE_SELF, &ru);
	printf("%llu %.6f %.6f\n", (unsigned long long)ops, b - a,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6);
	return 0;
}
