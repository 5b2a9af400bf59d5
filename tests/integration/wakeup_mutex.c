/* A lock holder and a thread that waits for it, for wakeup_mutex.sh: the
 * `requests` thread takes a mutex for a moment every 200 us, while the
 * `holder` thread's holder_slow holds it for 4 ms at a time (sleeping
 * inside for half of it, then busy). Built -O2 without frame pointers, so
 * only CFI unwinding finds holder_slow on the waker's stack (it unlocks
 * the mutex: the wake is in pthread_mutex_unlock under it).
 *
 *   wakeup_mutex SECONDS   prints "pid=P" at the start and, at the end,
 *                          "lock_wait_ns=N": the time the requests thread
 *                          spent in pthread_mutex_lock calls that took at
 *                          least 1 ms.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Holds the lock for 4 ms: 2 ms asleep, 2 ms busy. */
__attribute__((noinline)) static void holder_slow(void)
{
	struct timespec half = {0, 2000000};
	uint64_t until;

	pthread_mutex_lock(&mu);
	nanosleep(&half, NULL);
	until = now_ns() + 2000000;
	while (now_ns() < until)
		sink++;
	pthread_mutex_unlock(&mu);
}

static void *holder(void *arg)
{
	struct timespec gap = {0, 1000000};

	pthread_setname_np(pthread_self(), "holder");
	while (!stop) {
		holder_slow();
		nanosleep(&gap, NULL);
	}
	return arg;
}

static uint64_t lock_wait_ns;

__attribute__((noinline)) static void request_once(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_mutex_lock(&mu);
	t1 = now_ns();
	if (t1 - t0 >= 1000000)
		lock_wait_ns += t1 - t0;
	sink++;
	pthread_mutex_unlock(&mu);
}

static void *requests(void *arg)
{
	struct timespec gap = {0, 200000};

	pthread_setname_np(pthread_self(), "requests");
	while (!stop) {
		request_once();
		nanosleep(&gap, NULL);
	}
	return arg;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	pthread_t h, r;

	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	pthread_create(&h, NULL, holder, NULL);
	pthread_create(&r, NULL, requests, NULL);
	usleep((useconds_t)(secs * 1e6));
	stop = 1;
	pthread_join(h, NULL);
	pthread_join(r, NULL);
	printf("lock_wait_ns=%llu\n", (unsigned long long)lock_wait_ns);
	return 0;
}
