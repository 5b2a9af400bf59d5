/* What a label change costs a program (docs/performance.md, "Application
 * labels"): libflightrec called through its shared library, warm (every
 * set seen before), one thread and four at once, in CPU time of the
 * calling thread (what the program pays, however busy the machine).
 *
 *   bench_labels [ITERATIONS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "flightrec/labels.h"

static long iters = 10000000;

static double now_s(void)
{
	struct timespec ts;

	/* CPU time of the thread: the machine may run other work too. */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ns per change of each kind, on the calling thread. */
static void run(double *set_ns, double *push_ns, double *apply_ns)
{
	static const char *const values[4] = {"/checkout", "/search", "/cart", "/login"};
	fr_labels_t a, b;
	double t;

	fr_labels_set("tenant", "42");
	for (int i = 0; i < 4; i++)
		fr_labels_set("endpoint", values[i]);
	t = now_s();
	for (long i = 0; i < iters; i++)
		fr_labels_set("endpoint", values[i & 3]);
	*set_ns = (now_s() - t) * 1e9 / (double)iters;

	t = now_s();
	for (long i = 0; i < iters / 2; i++) {
		fr_labels_t tok = fr_labels_push("phase", (i & 1) ? "a" : "b");

		fr_labels_pop(tok);
	}
	*push_ns = (now_s() - t) * 1e9 / (double)iters;

	a = fr_labels_capture();
	fr_labels_set("endpoint", "/other");
	b = fr_labels_capture();
	t = now_s();
	for (long i = 0; i < iters; i++)
		fr_labels_apply((i & 1) ? a : b);
	*apply_ns = (now_s() - t) * 1e9 / (double)iters;
	fr_labels_clear();
}

static void *thread_main(void *arg)
{
	double *r = arg;

	run(&r[0], &r[1], &r[2]);
	return NULL;
}

int main(int argc, char **argv)
{
	double r[4][3];
	pthread_t th[4];

	if (argc > 1)
		iters = atol(argv[1]);
	run(&r[0][0], &r[0][1], &r[0][2]);
	printf("1 thread:  set %.1f ns, push/pop %.1f ns per change, apply %.1f ns\n", r[0][0],
	       r[0][1], r[0][2]);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_main, r[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++)
		printf("4 threads, #%d: set %.1f ns, push/pop %.1f ns per change, apply %.1f ns\n",
		       i, r[i][0], r[i][1], r[i][2]);
	printf("dropped: %llu\n",
	       (unsigned long long)(fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_SETS) +
				    fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_KEYS)));
	return 0;
}
