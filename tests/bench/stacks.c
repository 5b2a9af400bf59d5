/* A CPU-bound program with thousands of distinct call stacks, for storage
 * benchmarks (tests/bench/storage.sh).
 *
 *   stacks SECONDS [THREADS [PATHS]]
 *
 * Each thread repeatedly picks one of PATHS call paths (default 4096) at
 * random and walks it: a recursion 5 to 40 calls deep through eight
 * functions, the next function at each level chosen by a PRNG seeded with
 * the path number, so a path always produces the same stack. The deepest
 * call spins for a few tens of microseconds, so samples land on every path
 * and (at 999 Hz) each distinct stack is seen a few times in a chunk.
 * Built without inlining and with frame pointers, like burn. At exit it
 * prints "pid=PID cpu_seconds=S stacks=PATHS" on stdout. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct walk {
	uint64_t rng;
	int left;
};

static volatile uint64_t sink;
static double seconds;
static uint32_t npaths = 4096;

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void leaf(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

void fr_stacks_f0(struct walk *w);
void fr_stacks_f1(struct walk *w);
void fr_stacks_f2(struct walk *w);
void fr_stacks_f3(struct walk *w);
void fr_stacks_f4(struct walk *w);
void fr_stacks_f5(struct walk *w);
void fr_stacks_f6(struct walk *w);
void fr_stacks_f7(struct walk *w);

/* Each function has its own eight call sites, so the return addresses in a
 * stack depend on the whole path. The store after the call keeps the call
 * from becoming a jump (no frame). */
#define STEP(n)                                                       \
	__attribute__((noinline)) void fr_stacks_f##n(struct walk *w) \
	{                                                             \
		if (--w->left <= 0) {                                 \
			leaf();                                       \
		} else {                                              \
			switch (next(&w->rng) & 7) {                  \
			case 0: fr_stacks_f0(w); break;               \
			case 1: fr_stacks_f1(w); break;               \
			case 2: fr_stacks_f2(w); break;               \
			case 3: fr_stacks_f3(w); break;               \
			case 4: fr_stacks_f4(w); break;               \
			case 5: fr_stacks_f5(w); break;               \
			case 6: fr_stacks_f6(w); break;               \
			default: fr_stacks_f7(w); break;              \
			}                                             \
		}                                                     \
		sink += (uint64_t)w->left;                            \
	}

STEP(0)
STEP(1)
STEP(2)
STEP(3)
STEP(4)
STEP(5)
STEP(6)
STEP(7)

static void *worker(void *arg)
{
	uint64_t pick = (uint64_t)(uintptr_t)arg * 7919 + 1;
	double end = now() + seconds;
	unsigned n = 0;

	/* Reading the clock every 64 walks keeps it out of the profile. */
	while ((n++ & 63) || now() < end) {
		uint64_t path = next(&pick) % npaths;
		struct walk w = {.rng = path * 0x2545f4914f6cdd1dull};

		w.left = 5 + (int)(next(&w.rng) % 36);
		fr_stacks_f0(&w);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t tid[64];
	struct rusage ru;

	if (argc < 2) {
		fprintf(stderr, "usage: stacks SECONDS [THREADS [PATHS]]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	if (argc > 3 && atoi(argv[3]) > 0)
		npaths = (uint32_t)atoi(argv[3]);
	if (threads < 1 || threads > 64)
		threads = 1;
	for (int i = 1; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)i);
	worker(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(tid[i], NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("pid=%d cpu_seconds=%.3f stacks=%u\n", (int)getpid(),
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6,
	       npaths);
	return 0;
}
