/* A C++ program with a known call structure, built -O2 -g without frame
 * pointers (and once more with them), for unwind_vs_perf.sh:
 *
 *   nofp_cxx [SECONDS [DELAY]]        (defaults 10 and 1)
 *
 * After sleeping DELAY seconds (so that a profiler attached to its pid sees
 * all of its work, and a recorder has built its unwind tables), main runs
 * rounds until SECONDS have passed; a round calls three phase functions,
 * each doing a fixed amount of work, so their shares of the CPU time are
 * fixed by construction whatever the machine's speed:
 *
 *   main -> phase_sort   -> std::sort with a lambda comparator; the
 *                           comparator and the key function it calls are
 *                           inlined into the std:: template instances
 *        -> phase_throw  -> parse_field (noinline) throws std::out_of_range
 *                           for one input in four; phase_throw catches it,
 *                           so part of the time is in libstdc++ and the
 *                           libgcc unwinder (also built without frame
 *                           pointers on Debian)
 *        -> phase_mix    -> mix_block (noinline) -> Mixer<N>::step, a
 *                           template whose small members are inlined
 *
 * At exit it prints "units=N cpu=S phase_sort=S phase_throw=S phase_mix=S":
 * the rounds done (the benchmarks' measure of throughput), its CPU seconds,
 * and the CPU seconds spent in each phase, measured around the calls: a
 * third reference, beside two profilers, for the phases' shares. */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <time.h>
#include <unistd.h>
#include <vector>

static volatile uint64_t sink;

static double now()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A key worth computing, so the comparator has work of its own to inline. */
static inline uint32_t sort_key(uint32_t v)
{
	v ^= v >> 13;
	v *= 0x5bd1e995u;
	return v ^ (v >> 15);
}

template <typename T> static inline void fill_random(std::vector<T> &v, uint64_t seed)
{
	for (auto &x : v) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = static_cast<T>(seed >> 33);
	}
}

__attribute__((noinline)) static void phase_sort()
{
	std::vector<uint32_t> v(10000);

	fill_random(v, 42);
	std::sort(v.begin(), v.end(),
		  [](uint32_t a, uint32_t b) { return sort_key(a) < sort_key(b); });
	sink += v[v.size() / 2];
}

/* Throws for one input in four: the error path a real parser takes. */
__attribute__((noinline)) static int parse_field(int i)
{
	if (i % 4 == 0)
		throw std::out_of_range("field " + std::to_string(i));
	return i * 3;
}

__attribute__((noinline)) static void phase_throw()
{
	uint64_t ok = 0, bad = 0;

	for (int i = 0; i < 1600; i++) {
		try {
			ok += static_cast<uint64_t>(parse_field(i));
		} catch (const std::out_of_range &e) {
			bad += e.what()[0];
		}
	}
	sink += ok + bad;
}

/* Small members g++ inlines at -O2: the frames `go tool pprof -lines`
 * shows as inlined under mix_block. */
template <int N> struct Mixer {
	uint64_t s[N];

	inline void rotate(int i)
	{
		s[i] = (s[i] << 7) | (s[i] >> 57);
	}
	inline void step(uint64_t x)
	{
		for (int i = 0; i < N; i++) {
			s[i] = s[i] * 0x9e3779b97f4a7c15ull + x;
			rotate(i);
		}
	}
};

__attribute__((noinline)) static uint64_t mix_block(uint64_t seed)
{
	Mixer<8> m;

	for (int i = 0; i < 8; i++)
		m.s[i] = seed + static_cast<uint64_t>(i);
	for (int r = 0; r < 80000; r++)
		m.step(static_cast<uint64_t>(r));
	return m.s[0] ^ m.s[7];
}

__attribute__((noinline)) static void phase_mix()
{
	sink += mix_block(sink);
}

static double thread_cpu()
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	double delay = argc > 2 ? atof(argv[2]) : 1;
	double spent[3] = {0, 0, 0};
	long n = 0;

	if (delay > 0)
		usleep(static_cast<useconds_t>(delay * 1e6));
	for (double end = now() + seconds; now() < end; n++) {
		double t0 = thread_cpu();
		phase_sort();
		double t1 = thread_cpu();
		phase_throw();
		double t2 = thread_cpu();
		phase_mix();
		spent[0] += t1 - t0;
		spent[1] += t2 - t1;
		spent[2] += thread_cpu() - t2;
	}
	printf("units=%ld cpu=%.6f phase_sort=%.6f phase_throw=%.6f phase_mix=%.6f\n", n,
	       thread_cpu(), spent[0], spent[1], spent[2]);
	return 0;
}
