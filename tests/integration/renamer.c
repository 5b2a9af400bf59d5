/* A thread that burns CPU and renames itself every 100 ms, "A" then "B"
 * (prctl PR_SET_NAME, as pthread_setname_np does), for names_at_time.sh.
 *
 *   renamer SECONDS
 *
 * Prints "pid=PID tid=TID offset=NS" (CLOCK_REALTIME - CLOCK_MONOTONIC,
 * to turn the times below into the Unix times the ring holds) and then,
 * for each rename, the CLOCK_MONOTONIC time (ns, the clock perf stamps
 * records with) just before and just after the call and the new name:
 * "rename BEFORE_NS AFTER_NS NAME". The kernel stamps its COMM record
 * between the two. Runs on a second thread so the process's command name
 * (its main thread's) stays "renamer".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds;

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *work(void *arg)
{
	const int64_t period = 100 * 1000000;
	int64_t start = now_ns(CLOCK_MONOTONIC), next = start;
	volatile uint64_t x = 1;

	(void)arg;
	{
		/* The offset, bracketed by two monotonic reads. */
		int64_t m0 = now_ns(CLOCK_MONOTONIC), r = now_ns(CLOCK_REALTIME);
		int64_t m1 = now_ns(CLOCK_MONOTONIC);

		printf("pid=%d tid=%ld offset=%lld\n", getpid(), (long)syscall(SYS_gettid),
		       (long long)(r - (m0 + (m1 - m0) / 2)));
	}
	for (int i = 0; now_ns(CLOCK_MONOTONIC) - start < (int64_t)(seconds * 1e9); i++) {
		const char *name = i % 2 ? "B" : "A";
		int64_t before = now_ns(CLOCK_MONOTONIC), after;

		prctl(PR_SET_NAME, name, 0, 0, 0);
		after = now_ns(CLOCK_MONOTONIC);
		printf("rename %lld %lld %s\n", (long long)before, (long long)after, name);
		fflush(stdout);
		next += period;
		while (now_ns(CLOCK_MONOTONIC) < next)
			x = x * 6364136223846793005ull + 1;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	seconds = argc > 1 ? atof(argv[1]) : 4;
	if (pthread_create(&t, NULL, work, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	return 0;
}
