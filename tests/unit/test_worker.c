/* The deadline worker (core/util/worker.c): a call asleep past its
 * deadline is abandoned, so is one that burns its deadline's worth of
 * CPU; one the machine keeps from a CPU (here: at SCHED_IDLE on the CPU
 * of a busy thread) is waited for, since it waits for a CPU, not for a
 * file. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "core/util/time.h"
#include "core/util/worker.h"

#define DEADLINE_NS (100 * 1000 * 1000ll)

static volatile int hog_stop;

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return fr_ns_from_timespec(&ts);
}

/* Spins until the calling thread used `ns` of CPU. */
static void burn_cpu(int64_t ns)
{
	int64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < ns)
		;
}

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void call_sleep(void *arg)
{
	struct timespec ts = {.tv_nsec = 600 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL);
}

static void call_burn(void *arg)
{
	(void)arg;
	burn_cpu(800 * 1000 * 1000ll);
}

/* At SCHED_IDLE beside the hog on CPU 0: 3 ms of CPU take far longer
 * than the deadline in wall time. */
static void call_starved(void *arg)
{
	struct sched_param sp = {0};

	(void)arg;
	pin_cpu0();
	sched_setscheduler(0, SCHED_IDLE, &sp);
	burn_cpu(3 * 1000 * 1000ll);
}

static void drop(void *arg)
{
	(void)arg;
}

static void *hog(void *arg)
{
	(void)arg;
	pin_cpu0();
	while (!hog_stop)
		;
	return NULL;
}

/* Runs fn on a new worker; returns fr_worker_call's result, the wall
 * time it took in *took. */
static int run(void (*fn)(void *), int64_t *took)
{
	struct fr_worker *w = NULL;
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	int ret = fr_worker_call(&w, fn, drop, NULL, DEADLINE_NS);

	*took = now_ns(CLOCK_MONOTONIC) - t0;
	fr_worker_free(w);
	return ret;
}

int main(void)
{
	pthread_t h;
	int64_t took;
	int ret;

	ret = run(call_sleep, &took);
	CHECK(ret == -ETIMEDOUT, "a call asleep past its deadline returned %d", ret);
	CHECK(took < 500 * 1000 * 1000ll, "the sleeping call was waited for %lld ms",
	      (long long)(took / 1000000));

	ret = run(call_burn, &took);
	CHECK(ret == -ETIMEDOUT, "a call burning CPU past its deadline returned %d", ret);

	if (pthread_create(&h, NULL, hog, NULL) != 0)
		return 1;
	ret = run(call_starved, &took);
	hog_stop = 1;
	pthread_join(h, NULL);
	if (ret == 0 && took <= DEADLINE_NS) {
		fprintf(stderr,
			"SKIP: the starved call had its CPU within the deadline (%lld ms)\n",
			(long long)(took / 1000000));
		return failures ? 1 : 77;
	}
	CHECK(ret == 0, "a call kept from a CPU was abandoned (%d after %lld ms)", ret,
	      (long long)(took / 1000000));
	fprintf(stderr, "the starved call took %lld ms against a %lld ms deadline\n",
		(long long)(took / 1000000), (long long)(DEADLINE_NS / 1000000));
	return failures ? 1 : 0;
}
