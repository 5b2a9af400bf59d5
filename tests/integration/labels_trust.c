/* A program labelled with libflightrec whose labels change faster than
 * any sampling rate, for labels_trust.sh. Three threads burn CPU until
 * SIGUSR1:
 *
 *   churn     work units of ~50 us of CPU (each between 25 and 75 us,
 *             drawn at random, so that no period of the unit lines up
 *             with the sampling's), one under req=a, then three under
 *             req=b, the label set before each unit: ~20,000 changes a
 *             second, a 25/75 split of its CPU. A unit under req=a runs
 *             in trust_unit_a, one under req=b in trust_unit_b (both call
 *             the same trust_work), so a sample's stack says which label
 *             was in force.
 *   created   started with pthread_create by the thread `creator`, which
 *             labelled itself tenant=acme first and then waits for it;
 *             it sets no label itself and burns in trust_created_burn.
 *   reqid     a request of ~10 us of CPU at a time, each labelled
 *             req_id=<its number> (1, 2, ...): ~100,000 distinct values a
 *             second of its CPU (20,000 or more on a busy machine), none
 *             used twice.
 *
 * Prints "TID ROLE" for each thread (main's first), then "ready"; every
 * 100 ms "tick UNIX_NS REQ" (the number of the request reqid is on), so
 * that a window's samples can be checked against the requests of that
 * window. On SIGUSR1 the threads stop and it prints "done REQ CHANGES
 * CPU_NS" (the last request's number, the churning thread's label changes
 * and its CPU time) and exits.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flightrec/labels.h"

void trust_work(uint64_t n);
void trust_unit_a(uint64_t n);
void trust_unit_b(uint64_t n);
void trust_created_burn(void);

static volatile uint64_t sink;
static volatile int stop;
static volatile uint64_t req;
static uint64_t changes;
static int64_t churn_cpu;
static uint64_t per_us;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void trust_work(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void trust_unit_a(uint64_t n)
{
	trust_work(n);
}

__attribute__((noinline)) void trust_unit_b(uint64_t n)
{
	trust_work(n);
}

/* Iterations of trust_work per microsecond of CPU, measured once. */
static void calibrate(void)
{
	uint64_t n = 100000;
	int64_t t;

	for (;;) {
		t = now_ns(CLOCK_THREAD_CPUTIME_ID);
		trust_work(n);
		t = now_ns(CLOCK_THREAD_CPUTIME_ID) - t;
		if (t > 20000000)
			break;
		n *= 2;
	}
	per_us = n * 1000 / (uint64_t)t;
	if (!per_us)
		per_us = 1;
}

/* A unit's iterations: `avg` us of CPU on average, from avg/2 to 3avg/2. */
static uint64_t unit(uint64_t *rng, uint64_t avg)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return per_us * (avg / 2 + *rng % (avg + 1));
}

static void announce(const char *role)
{
	pthread_setname_np(pthread_self(), role);
	pthread_mutex_lock(&print_lock);
	printf("%d %s\n", gettid(), role);
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
}

static void *churn(void *arg)
{
	uint64_t rng = 0x243f6a8885a308d3ull;

	(void)arg;
	announce("churn");
	pthread_barrier_wait(&started);
	while (!stop) {
		fr_labels_set("req", "a");
		trust_unit_a(unit(&rng, 50));
		for (int i = 0; i < 3; i++) {
			fr_labels_set("req", "b");
			trust_unit_b(unit(&rng, 50));
		}
		changes += 4;
	}
	churn_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

__attribute__((noinline)) void trust_created_burn(void)
{
	while (!stop)
		trust_work(per_us * 1000);
}

static void *created(void *arg)
{
	(void)arg;
	announce("created");
	pthread_barrier_wait(&started);
	trust_created_burn();
	return NULL;
}

static void *creator(void *arg)
{
	pthread_t c;

	(void)arg;
	fr_labels_set("tenant", "acme");
	announce("creator");
	pthread_create(&c, NULL, created, NULL);
	pthread_barrier_wait(&started);
	pthread_join(c, NULL);
	return NULL;
}

static void *reqid(void *arg)
{
	uint64_t rng = 0x13198a2e03707344ull;
	char v[24];

	(void)arg;
	announce("reqid");
	pthread_barrier_wait(&started);
	while (!stop) {
		uint64_t r = req + 1;

		snprintf(v, sizeof(v), "%llu", (unsigned long long)r);
		fr_labels_set("req_id", v);
		req = r;
		trust_work(unit(&rng, 10));
	}
	return NULL;
}

int main(void)
{
	pthread_t th[3];
	sigset_t mask;
	struct timespec tick = {0, 100000000}, zero = {0, 0};

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	calibrate();
	/* main, churn, created, creator, reqid */
	pthread_barrier_init(&started, NULL, 5);
	printf("%d main\n", getpid());
	fflush(stdout);
	pthread_create(&th[0], NULL, churn, NULL);
	pthread_create(&th[1], NULL, creator, NULL);
	pthread_create(&th[2], NULL, reqid, NULL);
	pthread_barrier_wait(&started);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		siginfo_t si;

		if (sigtimedwait(&mask, &si, &zero) == SIGUSR1)
			break;
		printf("tick %lld %llu\n", (long long)now_ns(CLOCK_REALTIME),
		       (unsigned long long)req);
		fflush(stdout);
		nanosleep(&tick, NULL);
	}
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("done %llu %llu %lld\n", (unsigned long long)req, (unsigned long long)changes,
	       (long long)churn_cpu);
	return 0;
}
