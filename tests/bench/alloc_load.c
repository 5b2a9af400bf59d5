/* An allocation-heavy load for tests/bench/alloc_overhead.sh: THREADS
 * threads (default 4) each replace a random one of 1,024 blocks of their
 * own as fast as they can for SECONDS (default 3): a free and a malloc of
 * a mixed size (80% 16-128 bytes, 15% up to 1 KiB, 5% up to 16 KiB) per
 * operation (with --small: 16 to 79 bytes, the interposition's fast path
 * nearly alone). Prints "ops/s N ops/cpu-s M best B": operations per second, per
 * second of the workers' CPU time, and per CPU second in a thread's best
 * round of 20 ms (the mean over the threads): the machine may be shared. With --drain, when libflightrec is loaded,
 * a thread reads the process's allocation ring every millisecond as the
 * recorder would (the samples are then written in full rather than
 * dropped on a full ring). Does not link libflightrec: run it with
 * LD_PRELOAD. With --rate N the threads do N operations a second in all,
 * paced, and "cpu-s/s" is the workers' CPU seconds a second: what a
 * fixed load costs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/alloc_reader.h"

#define SLOTS 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static volatile int stop;
static int small;      /* --small: 16 to 79 bytes only */
static double rate;    /* --rate N: N operations a second in all, paced */
static double start_s; /* the workers' start, CLOCK_MONOTONIC */
static unsigned long long total;
static double total_cpu, total_best;

static size_t pick_size(uint64_t r)
{
	unsigned pct = (unsigned)(r % 100);

	r >>= 8;
	if (small)
		return 16 + r % 64;
	if (pct < 80)
		return 16 + r % 113;
	if (pct < 95)
		return 128 + r % 897;
	return 1024 + r % (15 * 1024 + 1);
}

static void *worker(void *arg)
{
	void *slot[SLOTS] = {0};
	uint64_t x = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	unsigned long long n = 0, round_n = 0;
	struct timespec cpu;
	double round_t = 0, best = 0;

	while (!stop) {
		for (int i = 0; i < 1024; i++) {
			uint64_t r;
			unsigned s;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			r = x;
			s = (unsigned)(r >> 54) % SLOTS;
			free(slot[s]);
			slot[s] = malloc(pick_size(r));
			__asm__ volatile("" : : "r"(slot[s]) : "memory");
		}
		n += 1024;
		/* Paced: each thread its share of the rate, sleeping until
		 * its schedule when ahead of it. */
		if (rate > 0) {
			struct timespec now;
			double due, t;

			clock_gettime(CLOCK_MONOTONIC, &now);
			t = (double)now.tv_sec + now.tv_nsec / 1e9;
			due = start_s + (double)n / rate;
			if (due > t)
				usleep((useconds_t)((due - t) * 1e6));
		}
		/* Rounds of 20 ms of CPU: the best is the rate the least
		 * disturbed by the machine's other work. */
		if (n % (64 * 1024) == 0) {
			double t;

			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
			t = (double)cpu.tv_sec + cpu.tv_nsec / 1e9;
			if (t - round_t >= 0.02) {
				if (round_t > 0 && (double)(n - round_n) / (t - round_t) > best)
					best = (double)(n - round_n) / (t - round_t);
				round_t = t;
				round_n = n;
			}
		}
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	for (int i = 0; i < SLOTS; i++)
		free(slot[i]);
	pthread_mutex_lock(&lock);
	total += n;
	total_cpu += (double)cpu.tv_sec + cpu.tv_nsec / 1e9;
	total_best += best;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *drainer(void *arg)
{
	struct rd *rd = arg;
	struct rd_rec none[1];

	while (!stop) {
		rd_drain(rd, none, 0);
		usleep(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 4, drain = 0, a = 1;
	double seconds = 3;
	pthread_t t[64], d;
	struct rd rd;
	struct timespec t0, t1;
	double el;

	for (; a < argc && argv[a][0] == '-'; a++) {
		drain |= !strcmp(argv[a], "--drain");
		small |= !strcmp(argv[a], "--small");
		if (!strcmp(argv[a], "--rate") && a + 1 < argc)
			rate = atof(argv[++a]);
	}
	if (a < argc)
		threads = atoi(argv[a++]);
	if (a < argc)
		seconds = atof(argv[a++]);
	if (threads < 1 || threads > 64)
		threads = 4;
	if (drain && rd_open(&rd)) {
		/* No ring, or a recorder on the machine claimed it first (it
		 * may set another mean): the figures are not the library's. */
		fprintf(stderr, "not drained: %s\n", rd_registry() ? "another reader" : "no ring");
		drain = 0;
	}
	if (drain)
		pthread_create(&d, NULL, drainer, &rd);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	start_s = (double)t0.tv_sec + t0.tv_nsec / 1e9;
	rate /= threads;
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	usleep((useconds_t)(seconds * 1e6));
	stop = 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	el = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (drain) {
		pthread_join(d, NULL);
		fprintf(stderr, "sampled %llu dropped %llu\n", (unsigned long long)rd.h->sampled,
			(unsigned long long)rd.h->dropped_allocs);
	}
	/* Per CPU second of the workers too: the machine may be shared. */
	printf("ops/s %.0f ops/cpu-s %.0f best %.0f cpu-s/s %.4f\n", (double)total / el,
	       (double)total / total_cpu, total_best / threads, total_cpu / el);
	return 0;
}
